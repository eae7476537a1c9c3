#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""srsv-report: summarise an LTTng trace of libspacersv (provider spacersv).

Reads a trace directory (as written by `lttng create --output=DIR`) and
prints:

  - the ticket wait histogram per flush mode (log2 buckets of wait_ns, from
    ticket_end events), with the outcome of the tickets of each mode;
  - flush_space calls per state and source (preempt: the preemptive flusher,
    ticket: a flusher serving queued tickets), with how many the engine
    skipped (-EOPNOTSUPP) or failed, and the bytes asked for;
  - ticket outcomes per error (granted, -ENOSPC, -ETIMEDOUT, ...);
  - trigger_flush per reason, and the last space dump of each pool;
  - why writers waited: per pool, the share of the trace during which a
    ticket was queued, the flush states their time went to (each
    flush_space's duration_ns times the tickets queued when it began, as
    srsv_space_get_stats()'s waited_ns), and a timeline with the waits
    marked.

With --plot FILE.png it also plots the pool counters (from counter events)
and the preemptive clamp (from done_preemptive_reclaim / fail_all_tickets
dumps) over time, with matplotlib.

The trace is read by parsing the text output of the `babeltrace2` program
when it is installed (about twice as fast as the Python bindings, which
build an object per field), otherwise with babeltrace2's Python bindings
(bt2); --backend picks one.
On Debian: apt-get install babeltrace2 python3-bt2 python3-matplotlib, and
run this script with /usr/bin/python3 (a python3 from pyenv or a venv does
not see Debian's python3-bt2 and python3-matplotlib; without bt2 the text
fallback is used, without matplotlib --plot fails).

The functions load_events(), analyse() and format_report() are also used by
the trace test suite (tests/trace/check_trace.py).
"""

import argparse
import errno
import os
import re
import shutil
import subprocess
import sys
from collections import Counter, defaultdict

# The project version: tools/meson.build fills it in when it installs the
# script; run from the source tree, the script reads it from meson.build.
VERSION = '@VERSION@'


def tool_version():
    """The libspacersv version this script belongs to."""
    if not VERSION.startswith('@'):
        return VERSION
    top = os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir)
    try:
        with open(os.path.join(top, 'meson.build'), encoding='utf-8') as f:
            return re.search(r"\bversion: '([^']+)'", f.read()).group(1)
    except (OSError, AttributeError):
        return 'unknown'


PROVIDER = 'spacersv'

# Pool kinds (enum srsv_pool), as the trace names them.
POOLS = ('data', 'metadata', 'system', 'mixed')

# Counters in the order they are plotted (enum srsv__counter).
COUNTERS = ('total', 'used', 'reserved', 'pinned', 'readonly',
            'zone_unusable', 'may_use')


# --------------------------------------------------------------------------
# Reading a trace
# --------------------------------------------------------------------------

class TraceError(Exception):
    """The trace could not be read."""


class EventList(list):
    """A list of events that also counts the events the tracer discarded
    (its ring buffer was full: the consumer did not keep up)."""
    discarded = 0

    def add_discarded(self, count):
        # None: the tracer could not count.  A huge count is a wrapped
        # counter difference (babeltrace2 2.0.4 reported 2^64 - 112463
        # once on a trace that overflowed constantly): at least one.
        if count is None or count >= 1 << 62:
            count = 1
        self.discarded += count


def _bt2_value(field):
    """Convert any bt2 field to plain Python: enumerations to their label."""
    if hasattr(field, 'labels'):
        labels = list(field.labels)
        if len(labels) == 1:
            return labels[0]
        if not labels:
            return int(field)
        return tuple(labels)
    if hasattr(field, 'items'):
        return {k: _bt2_value(v) for k, v in field.items()}
    if isinstance(field, str) or hasattr(field, 'startswith'):
        return str(field)
    if hasattr(field, '__len__') and hasattr(field, '__getitem__'):
        return [_bt2_value(v) for v in field]
    try:
        return int(field)
    except TypeError:
        return float(field)


def _bt2_converter(field):
    """A fast converter for the fields of one field class.

    Asking a bt2 enumeration field for its labels walks its class's
    mappings every time; mapping the integer through a table built once
    per event class is several times faster on large traces.
    """
    import bt2

    cls = field.cls
    if isinstance(cls, bt2._EnumerationFieldClassConst):
        table = {}
        for label, mapping in cls.items():
            for r in mapping.ranges:
                if r.upper - r.lower > 4096:
                    return _bt2_value       # huge ranges: ask bt2
                for v in range(r.lower, r.upper + 1):
                    table.setdefault(v, []).append(label)
        table = {v: (ls[0] if len(ls) == 1 else tuple(ls))
                 for v, ls in table.items()}

        def enum(f, table=table):
            v = int(f)
            return table.get(v, v)
        return enum
    if isinstance(cls, bt2._IntegerFieldClassConst):
        return int
    return _bt2_value


def load_events_bt2(path):
    """Read every spacersv event of the trace(s) under @path with bt2."""
    import bt2

    events = EventList()
    # event class (its native address: one per stream class, so channels
    # with different contexts get their own) -> per scope, the list of
    # (field name, converter)
    specs = {}
    try:
        it = bt2.TraceCollectionMessageIterator(path)
        for msg in it:
            if type(msg) is bt2._DiscardedEventsMessageConst:
                events.add_discarded(msg.count)
                continue
            if type(msg) is not bt2._EventMessageConst:
                continue
            ev = msg.event
            name = ev.name
            if not name.startswith(PROVIDER + ':'):
                continue
            rec = {'name': name[len(PROVIDER) + 1:],
                   'ts': msg.default_clock_snapshot.ns_from_origin}
            scopes = (ev.common_context_field, ev.specific_context_field,
                      ev.payload_field)
            spec = specs.get(ev.cls.addr)
            if spec is None:
                spec = specs[ev.cls.addr] = [
                    [(k, _bt2_converter(v)) for k, v in scope.items()]
                    if scope is not None else None for scope in scopes]
            for scope, fields in zip(scopes, spec):
                if scope is None:
                    continue
                for (k, conv), v in zip(fields, scope.values()):
                    rec[k] = conv(v)
            events.append(rec)
    except TraceError:
        raise
    except Exception as e:  # bt2 raises several private types
        raise TraceError('bt2 could not read %s: %s' % (path, e))
    return events


# Text output: "[1795983755.161631923] host spacersv:reserve: { ... }, ..."
_LINE_RE = re.compile(r'^\[(\d+)\.(\d+)\] (?:\S+ )?([\w.-]+):([\w.-]+): (.*)$')
_TOKEN_RE = re.compile(r'''
    \s*(?:
      (?P<str>"(?:[^"\\]|\\.)*")
    | (?P<num>-?0[xX][0-9a-fA-F]+|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)
    | (?P<unknown><unknown>)
    | (?P<name>[A-Za-z_][\w.]*)
    | (?P<punct>[{}()\[\]=:,])
    )''', re.X)


def _tokenize(text):
    pos = 0
    out = []
    while pos < len(text):
        if text[pos].isspace():
            pos += 1
            continue
        m = _TOKEN_RE.match(text, pos)
        if not m or m.end() == pos:
            raise TraceError('cannot parse babeltrace2 output near %r'
                             % text[pos:pos + 40])
        kind = m.lastgroup
        val = m.group(kind)
        if kind == 'str':
            val = bytes(val[1:-1], 'utf-8').decode('unicode_escape')
        elif kind == 'num':
            if val.lower().lstrip('-').startswith('0x'):
                val = int(val, 16)
            elif re.search(r'[.eE]', val):
                val = float(val)
            else:
                val = int(val)
        out.append((kind, val))
        pos = m.end()
    return out


class _Parser:
    """babeltrace2's pretty text syntax: structs, enums, arrays, scalars."""

    def __init__(self, tokens):
        self.t = tokens
        self.i = 0

    def peek(self):
        return self.t[self.i] if self.i < len(self.t) else (None, None)

    def take(self, punct=None):
        tok = self.peek()
        if tok[0] is None:
            raise TraceError('unexpected end of babeltrace2 line')
        if punct is not None and tok != ('punct', punct):
            raise TraceError('expected %r, got %r' % (punct, tok[1]))
        self.i += 1
        return tok

    def value(self):
        kind, val = self.peek()
        if (kind, val) == ('punct', '{'):
            return self.struct()
        if (kind, val) == ('punct', '('):
            return self.enum()
        if (kind, val) == ('punct', '['):
            return self.array()
        self.take()
        return val

    def struct(self):
        self.take('{')
        out = {}
        while self.peek() != ('punct', '}'):
            kind, name = self.take()
            if kind != 'name':
                raise TraceError('expected a field name, got %r' % (name,))
            self.take('=')
            out[name] = self.value()
            if self.peek() == ('punct', ','):
                self.take()
        self.take('}')
        return out

    def enum(self):
        # ( "label" : container = N ) | ( <unknown> : container = N )
        # | ( { "a", "b" } : container = N )
        self.take('(')
        labels = []
        if self.peek() == ('punct', '{'):
            self.take()
            while self.peek() != ('punct', '}'):
                labels.append(self.take()[1])
                if self.peek() == ('punct', ','):
                    self.take()
            self.take('}')
        else:
            kind, val = self.take()
            if kind == 'str':
                labels.append(val)
        self.take(':')
        self.take()                     # "container"
        self.take('=')
        number = self.take()[1]
        self.take(')')
        if len(labels) == 1:
            return labels[0]
        if not labels:
            return number
        return tuple(labels)

    def array(self):
        # [ [0] = v, [1] = v ]
        self.take('[')
        out = []
        while self.peek() != ('punct', ']'):
            self.take('[')
            self.take()
            self.take(']')
            self.take('=')
            out.append(self.value())
            if self.peek() == ('punct', ','):
                self.take()
        self.take(']')
        return out


# One "name = value" of a flat structure (all of spacersv's fields): an
# enumeration, a string or a number.  Lines with nested structures or arrays
# go through the general parser.
_FLAT_FIELD_RE = re.compile(r'''
    (\w+)\ =\ (?:
      \(\ "((?:[^"\\]|\\.)*)"\ :\ container\ =\ (-?\w+)\ \)
    | \(\ <unknown>\ :\ container\ =\ (-?\w+)\ \)
    | "((?:[^"\\]|\\.)*)"
    | (-?[\w.+-]+)
    )(?:,\ |\ \})''', re.X)


def _number(text):
    if text.lstrip('-')[:2] in ('0x', '0X'):
        return int(text, 16)
    try:
        return int(text)
    except ValueError:
        return float(text)


def _parse_flat(rest):
    """Parse "{ a = 1 }, { b = ( "x" : container = 2 ) }" quickly, or
    return None when the text is not flat."""
    if '[' in rest or '{ {' in rest or '( {' in rest:
        return None
    rec = {}
    equals = 0
    for m in _FLAT_FIELD_RE.finditer(rest):
        name, label, _, unknown, string, number = m.groups()
        if label is not None:
            rec[name] = label
            equals += 2                 # "name = ( ... container = N )"
        elif unknown is not None:
            rec[name] = _number(unknown)
            equals += 2
        elif string is not None:
            rec[name] = bytes(string, 'utf-8').decode('unicode_escape')
            equals += 1 + string.count(' = ')
        else:
            rec[name] = _number(number)
            equals += 1
    # Every "=" must belong to a recognised field, else parse in full.
    if not rec or rest.count(' = ') != equals:
        return None
    return rec


def parse_text_line(line):
    """One line of `babeltrace2 --clock-seconds --no-delta` output, or None
    for a line of another provider."""
    m = _LINE_RE.match(line)
    if not m:
        if line.strip():
            raise TraceError('unexpected babeltrace2 line: %r' % line[:80])
        return None
    sec, frac, prov, name, rest = m.groups()
    if prov != PROVIDER:
        return None
    ts = int(sec) * 1000000000 + int((frac + '000000000')[:9])
    flat = _parse_flat(rest)
    if flat is not None:
        flat.pop('cpu_id', None)
        flat['name'] = name
        flat['ts'] = ts
        return flat
    rec = {'name': name, 'ts': ts}
    p = _Parser(_tokenize(rest))
    while p.peek()[0] is not None:
        scope = p.struct()
        rec.update(scope)
        if p.peek() == ('punct', ','):
            p.take()
    # The packet context's cpu_id is not an event field (bt2 does not
    # report it either).
    rec.pop('cpu_id', None)
    return rec


_DISCARDED_RE = re.compile(r'discarded (\d+) events?')


def load_events_text(path, babeltrace='babeltrace2'):
    """Read the trace with the babeltrace2 program and parse its text."""
    exe = shutil.which(babeltrace)
    if not exe:
        raise TraceError('%s not found (apt-get install babeltrace2)'
                         % babeltrace)
    proc = subprocess.run([exe, '--clock-seconds', '--no-delta', path],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True)
    if proc.returncode != 0:
        raise TraceError('babeltrace2 could not read %s: %s'
                         % (path, proc.stderr.strip()))
    events = EventList()
    for line in proc.stdout.splitlines():
        if line.startswith('WARNING'):
            continue
        rec = parse_text_line(line)
        if rec is not None:
            events.append(rec)
    # "WARNING: Tracer discarded 12 events between [...] and [...]"
    for m in _DISCARDED_RE.finditer(proc.stdout + proc.stderr):
        events.add_discarded(int(m.group(1)))
    return events


def have_bt2():
    try:
        import bt2  # noqa: F401
        return True
    except ImportError:
        return False


def load_events(path, backend='auto'):
    """Return (events, backend): every spacersv event, sorted by time.

    An event is a dict: 'name' (without the provider), 'ts' (ns since the
    epoch), the context fields (vpid, vtid, when recorded) and the payload;
    enumerations are their label (str), or the number for a value outside
    the mapping.
    """
    if not os.path.isdir(path):
        raise TraceError('%s is not a directory' % path)
    if backend == 'auto':
        backend = 'text' if shutil.which('babeltrace2') else 'bt2'
    if backend == 'bt2':
        events = load_events_bt2(path)
    elif backend == 'text':
        events = load_events_text(path)
    else:
        raise ValueError('unknown backend %r' % backend)
    # Stable: events of one thread keep their order.
    events.sort(key=lambda e: e['ts'])
    return events, backend


def select(events, ctx=None, pool=None, pid=None):
    """Keep the events of one ctx (int), pool (name) and/or process."""
    out = EventList()
    out.discarded = getattr(events, 'discarded', 0)
    for e in events:
        if ctx is not None and e.get('ctx') != ctx:
            continue
        if pool is not None and e.get('pool') != pool:
            continue
        if pid is not None and e.get('vpid') != pid:
            continue
        out.append(e)
    return out


# --------------------------------------------------------------------------
# Analysis
# --------------------------------------------------------------------------

def errno_name(err):
    """0 -> 'granted', -28 -> '-ENOSPC'."""
    if err == 0:
        return 'granted'
    if isinstance(err, int) and -err in errno.errorcode:
        return '-' + errno.errorcode[-err]
    return str(err)


def log2_bucket(ns):
    """Bucket k holds [2^k, 2^(k+1)) ns; 0 ns is bucket -1."""
    if ns <= 0:
        return -1
    return int(ns).bit_length() - 1


def fmt_ns(ns):
    if ns < 1000:
        return '%dns' % ns
    for unit, div in (('us', 1e3), ('ms', 1e6), ('s', 1e9)):
        if ns < div * 1000 or unit == 's':
            v = ns / div
            return ('%.0f%s' if v >= 100 else '%.3g%s') % (v, unit)
    return '%dns' % ns


def fmt_bytes(b):
    for unit in ('B', 'KiB', 'MiB', 'GiB', 'TiB'):
        if abs(b) < 1024 or unit == 'TiB':
            return ('%d%s' % (b, unit)) if unit == 'B' else \
                ('%.1f%s' % (b, unit))
        b /= 1024.0
    return str(b)


def analyse(events):
    """Reduce events to the report's figures (a dict of plain values)."""
    rep = {
        'events': Counter(e['name'] for e in events),
        'discarded': getattr(events, 'discarded', 0),
        'first_ts': events[0]['ts'] if events else 0,
        'last_ts': events[-1]['ts'] if events else 0,
        'pools': Counter(),
        # mode -> {bucket: count}
        'wait_hist': defaultdict(Counter),
        # mode -> {outcome: count}
        'mode_outcomes': defaultdict(Counter),
        # mode -> [sum_ns, max_ns, n]
        'wait_stats': defaultdict(lambda: [0, 0, 0]),
        'outcomes': Counter(),
        # (state, source) -> calls; (state, source) -> failed calls
        'flushes': Counter(),
        'flush_errors': Counter(),
        'flush_skipped': Counter(),
        'flush_unsupported': Counter(),
        'flush_bytes': Counter(),
        'triggers': Counter(),
        'dumps': Counter(),
        'last_dump': {},
        # (state, source) -> summed / longest flush_space.duration_ns
        'flush_ns': Counter(),
        'flush_max_ns': Counter(),
        'has_duration': False,
    }
    # Tickets queued per pool over time, from ticket_add / ticket_end:
    # (ctx, pool) -> [(ts, queued after the change)].
    queue = defaultdict(list)
    flushes = []
    for e in events:
        name = e['name']
        if name in ('ticket_add', 'ticket_end'):
            hist = queue[(e['ctx'], e['pool'])]
            n = hist[-1][1] if hist else 0
            hist.append((e['ts'], max(n + (1 if name == 'ticket_add'
                                             else -1), 0)))
        elif name == 'flush_space':
            flushes.append(e)
        if 'ctx' in e and 'pool' in e:
            rep['pools'][(e['ctx'], e['pool'])] += 1
        if name == 'ticket_end':
            mode = e['mode']
            wait = e['wait_ns']
            rep['wait_hist'][mode][log2_bucket(wait)] += 1
            outcome = errno_name(e['error'])
            rep['mode_outcomes'][mode][outcome] += 1
            rep['outcomes'][outcome] += 1
            st = rep['wait_stats'][mode]
            st[0] += wait
            st[1] = max(st[1], wait)
            st[2] += 1
        elif name == 'flush_space':
            key = (e['state'], 'preempt' if e['for_preempt'] else 'ticket')
            rep['flushes'][key] += 1
            rep['flush_bytes'][key] += e['bytes']
            if 'duration_ns' in e:
                rep['has_duration'] = True
                rep['flush_ns'][key] += e['duration_ns']
                rep['flush_max_ns'][key] = max(rep['flush_max_ns'][key],
                                               e['duration_ns'])
            # skipped: not called (disabled after an earlier
            # -EOPNOTSUPP); unsupported: the engine answered -EOPNOTSUPP.
            # Traces without "called" count both as skipped.
            if not e.get('called', 1):
                rep['flush_skipped'][key] += 1
            elif e['ret'] == -errno.EOPNOTSUPP:
                if 'called' in e:
                    rep['flush_unsupported'][key] += 1
                else:
                    rep['flush_skipped'][key] += 1
            elif e['ret'] != 0:
                rep['flush_errors'][key] += 1
        elif name == 'trigger_flush':
            rep['triggers'][(e['reason'], e['mode'])] += 1
        elif name in ('done_preemptive_reclaim', 'fail_all_tickets'):
            rep['dumps'][name] += 1
            rep['last_dump'][(e['ctx'], e['pool'])] = e
    rep['why'] = analyse_why(rep, queue, flushes)
    return rep


TIMELINE_WIDTH = 60
# One letter per flush state on the timeline.
STATE_LETTERS = {
    'DELAYED_ITEMS_NR': 'i', 'DELAYED_ITEMS': 'I', 'DELAYED_REFS_NR': 'r',
    'DELAYED_REFS': 'R', 'DELALLOC': 'd', 'DELALLOC_WAIT': 'w',
    'DELALLOC_FULL': 'D', 'ALLOC_CHUNK': 'a', 'ALLOC_CHUNK_FORCE': 'A',
    'RUN_DELAYED_IPUTS': 'P', 'COMMIT_TRANS': 'C', 'RESET_ZONES': 'z',
    'RECLAIM_ZONES': 'Z'}


def _queued_at(hist, times, ts):
    """Tickets queued just before @ts, from a pool's queue history."""
    import bisect
    i = bisect.bisect_left(times, ts)
    return hist[i - 1][1] if i else 0


def analyse_why(rep, queue, flushes):
    """Per pool: stall intervals (a ticket queued), the writers' time behind
    each flush state (duration x tickets queued at its start), and a
    timeline of both.  Needs flush_space.duration_ns for the states."""
    t0, t1 = rep['first_ts'], rep['last_ts']
    span = max(t1 - t0, 1)
    width = TIMELINE_WIDTH
    why = {}
    times = {k: [ts for ts, _ in h] for k, h in queue.items()}
    pools = set(queue) | {(f['ctx'], f['pool']) for f in flushes}
    for key in pools:
        hist = queue.get(key, [])
        stalls, start = [], None
        for ts, n in hist:
            if n and start is None:
                start = ts
            elif not n and start is not None:
                stalls.append((start, ts))
                start = None
        if start is not None:
            stalls.append((start, t1))
        bins = [0.0] * width
        for a, b in stalls:
            for i in range(int((a - t0) * width // span),
                           min(int((b - t0) * width // span), width - 1) + 1):
                lo = t0 + i * span / width
                hi = lo + span / width
                bins[i] += max(0.0, min(b, hi) - max(a, lo))
        why[key] = {
            'stalled_ns': sum(b - a for a, b in stalls),
            'stalls': stalls,
            'stall_bins': [min(x * width / span, 1.0) for x in bins],
            'waited': Counter(),
            'state_bins': [Counter() for _ in range(width)],
        }
    for f in flushes:
        key = (f['ctx'], f['pool'])
        dur = f.get('duration_ns', 0)
        start = f['ts'] - dur
        n = _queued_at(queue.get(key, []), times.get(key, []), start)
        if not n or not dur:
            continue
        w = why[key]
        w['waited'][f['state']] += dur * n
        i = min(int((start - t0) * width // span), width - 1)
        j = min(int((f['ts'] - t0) * width // span), width - 1)
        for b in range(max(i, 0), j + 1):
            w['state_bins'][b][f['state']] += dur * n / (j - i + 1)
    return why


def _state_order(state):
    order = ('DELAYED_ITEMS_NR', 'DELAYED_ITEMS', 'DELAYED_REFS_NR',
             'DELAYED_REFS', 'DELALLOC', 'DELALLOC_WAIT', 'DELALLOC_FULL',
             'ALLOC_CHUNK', 'ALLOC_CHUNK_FORCE', 'RUN_DELAYED_IPUTS',
             'COMMIT_TRANS', 'RESET_ZONES', 'RECLAIM_ZONES')
    return order.index(state) if state in order else 100 + hash(state) % 100


def format_report(rep, width=40):
    """The report as text."""
    out = []
    span = (rep['last_ts'] - rep['first_ts']) / 1e9
    nev = sum(rep['events'].values())
    out.append('libspacersv trace report: %d events over %.3f s' %
               (nev, span))
    if rep['pools']:
        out.append('pools: ' + ', '.join(
            '%s@%#x' % (pool, ctx) for (ctx, pool) in sorted(
                rep['pools'], key=lambda k: (k[0], str(k[1])))))
    out.append('events: ' + ', '.join(
        '%s=%d' % kv for kv in sorted(rep['events'].items())))
    if rep['discarded']:
        out.append('WARNING: the tracer discarded %d events (ring buffer '
                   'full): counts below are low; record with larger '
                   'sub-buffers (docs/tracing.md)' % rep['discarded'])

    out.append('')
    out.append('Ticket waits per flush mode (ticket_end.wait_ns, log2 '
               'buckets)')
    if not rep['wait_hist']:
        out.append('  (no ticket ended)')
    for mode in sorted(rep['wait_hist'], key=str):
        hist = rep['wait_hist'][mode]
        total, mx, n = rep['wait_stats'][mode]
        outcomes = ', '.join('%s %d' % kv for kv in
                             sorted(rep['mode_outcomes'][mode].items()))
        out.append('  %s: %d tickets (%s), mean %s, max %s' %
                   (mode, n, outcomes, fmt_ns(total // max(n, 1)),
                    fmt_ns(mx)))
        peak = max(hist.values())
        lo_b, hi_b = min(hist), max(hist)
        for b in range(lo_b, hi_b + 1):
            c = hist.get(b, 0)
            if b < 0:
                rng = '0'
            else:
                rng = '[%s, %s)' % (fmt_ns(1 << b), fmt_ns(1 << (b + 1)))
            bar = '#' * (int(round(c * width / peak)) if c else 0)
            out.append('    %-20s %7d %s' % (rng, c, bar))

    out.append('')
    out.append('Ticket outcomes')
    if not rep['outcomes']:
        out.append('  (none)')
    for outcome, c in sorted(rep['outcomes'].items(),
                             key=lambda kv: (kv[0] != 'granted', kv[0])):
        out.append('  %-14s %7d' % (outcome, c))

    out.append('')
    out.append('flush_space per state and source')
    if not rep['flushes']:
        out.append('  (none)')
    else:
        # skipped: not called, the engine said -EOPNOTSUPP for it before;
        # unsupp: it said -EOPNOTSUPP now; failed: any other error
        # (-ENOSPC from ALLOC_CHUNK marks the pool full).
        # time: summed flush_space.duration_ns (n/a in traces of
        # libraries that did not record it).
        out.append('  %-20s %-8s %7s %7s %7s %7s %12s %9s %9s' %
                   ('state', 'source', 'calls', 'skipped', 'unsupp',
                    'failed', 'asked', 'time', 'max'))
        for (state, src) in sorted(rep['flushes'], key=lambda k: (
                _state_order(k[0]), k[1])):
            key = (state, src)
            out.append('  %-20s %-8s %7d %7d %7d %7d %12s %9s %9s' %
                       (state, src, rep['flushes'][key],
                        rep['flush_skipped'][key],
                        rep['flush_unsupported'][key],
                        rep['flush_errors'][key],
                        fmt_bytes(rep['flush_bytes'][key]),
                        fmt_ns(rep['flush_ns'][key])
                        if rep['has_duration'] else 'n/a',
                        fmt_ns(rep['flush_max_ns'][key])
                        if rep['has_duration'] else 'n/a'))

    out.append('')
    out.append('trigger_flush per reason')
    if not rep['triggers']:
        out.append('  (none)')
    for (reason, mode), c in sorted(rep['triggers'].items(), key=str):
        out.append('  %-8s %-22s %7d' % (reason, mode, c))

    out.extend(format_why(rep))

    if rep['last_dump']:
        out.append('')
        out.append('Last space dump per pool')
        for (ctx, pool), d in sorted(rep['last_dump'].items(), key=str):
            out.append('  %s@%#x (%s): total %s used %s pinned %s '
                       'reserved %s may_use %s reclaim %s clamp %d' %
                       (pool, ctx, d['name'], fmt_bytes(d['total']),
                        fmt_bytes(d['used']), fmt_bytes(d['pinned']),
                        fmt_bytes(d['reserved']), fmt_bytes(d['may_use']),
                        fmt_bytes(d['reclaim_size']), d['clamp']))
    return '\n'.join(out) + '\n'


def why_line(rep, key):
    """"metadata: writers waited 31% of the trace, mostly behind
    COMMIT_TRANS (64% of their time in flush states)": the line an engine
    prints from srsv_space_get_stats(), from a trace."""
    w = rep['why'][key]
    span = max(rep['last_ts'] - rep['first_ts'], 1)
    line = '%s: writers waited %.0f%% of the trace (%s of %s)' % (
        key[1], 100.0 * w['stalled_ns'] / span, fmt_ns(w['stalled_ns']),
        fmt_ns(span))
    total = sum(w['waited'].values())
    if total:
        state, ns = w['waited'].most_common(1)[0]
        line += ', mostly behind %s (%.0f%% of their time in flush ' \
                'states)' % (state, 100.0 * ns / total)
    return line


def format_why(rep):
    out = ['', 'Why writers waited (tickets queued; writers\' time behind '
           'each flush state = its duration x the tickets queued)']
    keys = sorted((k for k, w in rep['why'].items() if w['stalls']),
                  key=lambda k: (k[0], str(k[1])))
    if not keys:
        out.append('  (no ticket waited)')
        return out
    several_ctx = len({c for c, _ in keys}) > 1
    for key in keys:
        w = rep['why'][key]
        out.append('  ' + why_line(rep, key) +
                   (' [ctx %#x]' % key[0] if several_ctx else ''))
        total = sum(w['waited'].values())
        if not rep['has_duration']:
            out.append('    (flush_space has no duration_ns in this trace: '
                       'states not attributed)')
        for state, ns in sorted(w['waited'].items(),
                                key=lambda kv: -kv[1]):
            if ns * 1000 < total:
                continue	# under 0.1%
            out.append('    %-20s %9s writer-time %5.1f%%' %
                       (state, fmt_ns(ns), 100.0 * ns / total))
        marks = ' .:+#'
        stall = ''.join(marks[min(int(x * 4 + 0.999), 4)] if x else ' '
                        for x in w['stall_bins'])
        states = ''.join(
            STATE_LETTERS.get(c.most_common(1)[0][0], '?') if c else ' '
            for c in w['state_bins'])
        out.append('    timeline   |%s| %s' % (stall, fmt_ns(
            rep['last_ts'] - rep['first_ts'])))
        out.append('    behind     |%s|' % states)
    used = sorted({STATE_LETTERS.get(c.most_common(1)[0][0], '?') + '=' +
                   c.most_common(1)[0][0]
                   for key in keys for c in rep['why'][key]['state_bins']
                   if c})
    out.append('  timeline: one column per %.3g s; waits marked . : + # '
               '(up to 25/50/75/100%% of the column with a ticket queued)'
               % ((rep['last_ts'] - rep['first_ts']) / 1e9 /
                  TIMELINE_WIDTH))
    if used:
        out.append('  behind: the state the writers\' time went to in that '
                   'column: ' + ', '.join(used))
    return out


# --------------------------------------------------------------------------
# Plot
# --------------------------------------------------------------------------

# One colour per counter, the same in every pool's panel.
COUNTER_COLOURS = {'total': 'black', 'used': 'tab:blue',
                   'reserved': 'tab:orange', 'pinned': 'tab:green',
                   'readonly': 'tab:gray', 'zone_unusable': 'tab:brown',
                   'may_use': 'tab:red'}


def plot(events, out_png, title=None, rep=None):
    """One panel per pool with its counters (steps, MiB) over time and the
    time tickets waited shaded, its title saying why they waited; a last
    panel with the clamp of each pool (from the space dumps).  Pools whose
    counters are all 0 (a pool of size 0) get no panel."""
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError:
        raise TraceError('--plot needs matplotlib '
                         '(apt-get install python3-matplotlib)')
    t0 = events[0]['ts'] if events else 0
    end = (events[-1]['ts'] - t0) / 1e9 if events else 0

    series = defaultdict(lambda: ([], []))
    clamp = defaultdict(lambda: ([], []))
    for e in events:
        if e['name'] == 'counter':
            xs, ys = series[(e['ctx'], e['pool'], e['counter'])]
            if not xs and not (e['counter'] == 'total' and e['old'] == 0):
                # Every change is an event, so the counter held "old"
                # from the first event of the trace to its first change
                # (a total from 0 is the pool's creation: it starts there).
                xs.append(0.0)
                ys.append(e['old'] / 2**20)
            xs.append((e['ts'] - t0) / 1e9)
            ys.append(e['new_value'] / 2**20)
        elif e['name'] in ('done_preemptive_reclaim', 'fail_all_tickets'):
            xs, ys = clamp[(e['ctx'], e['pool'])]
            xs.append((e['ts'] - t0) / 1e9)
            ys.append(e['clamp'])
    # A pool of size 0 (no counter ever above 0) has nothing to show.
    live = {(c, p) for (c, p, _), (xs, ys) in series.items() if any(ys)}
    pools = sorted(live | set(clamp), key=lambda k: (k[0], str(k[1])))
    several_ctx = len({c for c, _ in pools}) > 1

    def name(ctx, pool):
        return ('%s@%#x' % (pool, ctx)) if several_ctx else str(pool)

    if rep is None:
        rep = analyse(events)
    nrows = max(len(pools), 1) + 1
    fig, axes = plt.subplots(nrows, 1, sharex=True,
                             figsize=(12, 2.8 * nrows + 0.6),
                             gridspec_kw={'height_ratios':
                                          [3] * (nrows - 1) + [1.5]})
    order = {c: i for i, c in enumerate(COUNTERS)}
    for ax, (ctx, pool) in zip(axes, pools):
        for counter in sorted({k[2] for k in series
                               if k[:2] == (ctx, pool)},
                              key=lambda c: order.get(c, 99)):
            xs, ys = series[(ctx, pool, counter)]
            # may_use changes on every reservation: drawn under the
            # others, thinner, so that it does not hide them.
            busy = counter == 'may_use'
            ax.step(xs + [end], ys + [ys[-1]], where='post',
                    label=counter, linewidth=0.6 if busy else 1.4,
                    alpha=0.7 if busy else 1.0, zorder=1 if busy else 2,
                    color=COUNTER_COLOURS.get(counter))
        why = rep['why'].get((ctx, pool))
        if why and why['stalls']:
            for i, (a, b) in enumerate(why['stalls']):
                ax.axvspan((a - t0) / 1e9, (b - t0) / 1e9, color='tab:red',
                           alpha=0.12, linewidth=0, zorder=0,
                           label='tickets waiting' if i == 0 else None)
            ax.set_title(why_line(rep, (ctx, pool)), fontsize='medium',
                         loc='left')
        ax.set_ylabel('%s (MiB)' % name(ctx, pool))
        ax.set_ylim(bottom=0)
        if ax.has_data():
            # Outside the axes: a legend inside covers the lines.
            ax.legend(fontsize='small', loc='upper left',
                      bbox_to_anchor=(1.005, 1.0), borderaxespad=0)
        ax.grid(True, alpha=0.3)
    fig.suptitle(title or 'libspacersv pool counters, waits (shaded) and '
                 'clamp')
    ax = axes[-1]
    for (ctx, pool), (xs, ys) in sorted(clamp.items(), key=str):
        # Markers only when there are few dumps to show.
        ax.step(xs + [end], ys + [ys[-1]], where='post',
                marker='o' if len(xs) <= 50 else None, markersize=3,
                label='%s clamp' % name(ctx, pool))
    ax.set_ylabel('clamp')
    # The clamp is an integer, 1..8.
    ax.set_ylim(0.5, 8.5)
    ax.set_yticks(range(1, 9))
    ax.set_xlabel('seconds since first event')
    if clamp:
        ax.legend(fontsize='small', loc='upper left',
                  bbox_to_anchor=(1.005, 1.0), borderaxespad=0)
    else:
        ax.text(0.5, 0.5, 'no space dump recorded', ha='center',
                va='center', transform=ax.transAxes)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(out_png, dpi=100)
    plt.close(fig)


# --------------------------------------------------------------------------

def missing_imports(args):
    """Why the run cannot go ahead with this Python, or None."""
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return ('--plot needs matplotlib (Debian: python3-matplotlib, '
                    'with /usr/bin/python3)')
    if args.backend == 'bt2' and not have_bt2():
        return ('--backend bt2 needs the bt2 module (Debian: python3-bt2, '
                'with /usr/bin/python3)')
    if args.backend != 'bt2' and not have_bt2() and \
            not shutil.which('babeltrace2'):
        return ('reading a trace needs python3-bt2 or the babeltrace2 '
                'program (Debian: babeltrace2)')
    return None


def _int_auto(s):
    return int(s, 0)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description='Summarise a libspacersv LTTng trace.')
    ap.add_argument('--version', action='version',
                    version='%(prog)s (libspacersv) ' + tool_version())
    ap.add_argument('trace', help='trace directory (lttng create --output)')
    ap.add_argument('--backend', choices=('auto', 'bt2', 'text'),
                    default='auto',
                    help='trace reader (default: the babeltrace2 text '
                    'output if the program is installed, the faster one; '
                    'else bt2)')
    ap.add_argument('--ctx', type=_int_auto,
                    help='only this ctx (address, e.g. 0x55d0c3a2b2a0)')
    ap.add_argument('--pool', help='only this pool (data, metadata, ...)')
    ap.add_argument('--pid', type=int, help='only this process (vpid)')
    ap.add_argument('--plot', metavar='FILE.png',
                    help='plot counters and clamp over time')
    args = ap.parse_args(argv)
    if args.pool is not None and args.pool not in POOLS:
        print('srsv-report: --pool %s: no such pool (one of %s)'
              % (args.pool, ', '.join(POOLS)), file=sys.stderr)
        return 2

    # What the run will need, before the trace is read.
    missing = missing_imports(args)
    if missing:
        print('srsv-report: %s' % missing, file=sys.stderr)
        return 1
    try:
        events, backend = load_events(args.trace, args.backend)
        present = sorted({str(e['pool']) for e in events if 'pool' in e})
        events = select(events, args.ctx, args.pool, args.pid)
        if args.pool is not None and not any(
                e.get('pool') == args.pool for e in events):
            raise TraceError('no event of pool %s%s (pools in the trace: '
                             '%s)' % (args.pool,
                                      ' in the selection' if args.ctx
                                      is not None or args.pid is not None
                                      else '', ', '.join(present) or
                                      'none'))
        rep = analyse(events)
        sys.stdout.write(format_report(rep))
        if args.plot:
            plot(events, args.plot, rep=rep)
            print('plot written to %s' % args.plot)
    except TraceError as e:
        print('srsv-report: %s' % e, file=sys.stderr)
        return 2
    if backend == 'bt2':
        print('(read with the bt2 Python bindings)', file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())
