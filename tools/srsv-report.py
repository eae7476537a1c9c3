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
    marked;
  - NOWAIT reservations and their refusals (reserve events with the NOWAIT
    flag, per pool and mode; pace events of NOWAIT reservations that pacing
    let through), quota reservations and their refusals per tenant and
    kind (quota events: -EDQUOT, -EAGAIN), quota flushes, and the calls
    refused for bad input (refused events).

With --plot FILE.png it also plots the pool counters (from counter events;
a counter whose events do not all chain, because the library samples them
or the tracer dropped some, is drawn from its events and the space dumps,
marked "sampled") and the preemptive clamp (from done_preemptive_reclaim /
fail_all_tickets dumps) over time, with matplotlib.

The trace is read by decoding its CTF files directly (--backend ctf, the
default): one struct.unpack_from() per event, and the counter events, the
busiest by far, only counted unless --plot or a selection needs them.  A
trace this reader cannot decode (floating-point or variant fields, another
event header) is read with the `babeltrace2` program's text output instead
(--backend text), or with babeltrace2's Python bindings (--backend bt2).
On Debian: apt-get install python3-matplotlib for --plot, babeltrace2 or
python3-bt2 for the other readers, and run this script with
/usr/bin/python3 (a python3 from pyenv or a venv does not see Debian's
python3-bt2 and python3-matplotlib).

The functions load_events(), analyse() and format_report() are also used by
the trace test suite (tests/trace/check_trace.py).
"""

import argparse
import errno
import mmap
import os
import re
import shutil
import struct
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
    (its ring buffer was full: the consumer did not keep up), and the
    events the reader was asked to count rather than build (load_events()'s
    @skip): how many of each name (skipped), the pools they were about
    (skipped_pools: (ctx, pool) pairs) and the time of the first and last
    (skipped_span, ns; None when there were none)."""
    discarded = 0

    def __init__(self, *args):
        super().__init__(*args)
        self.skipped = Counter()
        self.skipped_pools = set()
        self.skipped_span = (None, None)

    def note_skipped(self, name, ts, pool=None):
        """Count one event that is not built."""
        self.skipped[name] += 1
        if pool is not None:
            self.skipped_pools.add(pool)
        first, last = self.skipped_span
        self.skipped_span = (ts if first is None or ts < first else first,
                             ts if last is None or ts > last else last)

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


def load_events_bt2(path, skip=()):
    """Read every spacersv event of the trace(s) under @path with bt2;
    those named in @skip are only counted (EventList)."""
    import bt2

    rules = _skip_rules(skip)
    always = frozenset(n for n, r in rules.items() if r is None)
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
            if rec['name'] in always:
                payload = ev.payload_field
                pool = None
                if payload is not None and 'ctx' in payload and \
                        'pool' in payload:
                    pool = (int(payload['ctx']),
                            _bt2_converter(payload['pool'])(payload['pool']))
                events.note_skipped(rec['name'], rec['ts'], pool)
                continue
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
            if rules and _counted(rules, rec):
                events.note_skipped(rec['name'], rec['ts'], (
                    rec['ctx'], rec['pool']) if 'pool' in rec else None)
                continue
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


# The pool of a line's event, without parsing the rest of it.
_TEXT_POOL_RE = re.compile(r'\bctx = (0[xX][0-9a-fA-F]+|\d+), '
                           r'pool = \( "([^"]*)" ')


def load_events_text(path, babeltrace='babeltrace2', skip=()):
    """Read the trace with the babeltrace2 program and parse its text, as
    babeltrace2 writes it; events named in @skip are only counted."""
    import tempfile

    exe = shutil.which(babeltrace)
    if not exe:
        raise TraceError('%s not found (apt-get install babeltrace2)'
                         % babeltrace)
    rules = _skip_rules(skip)
    needles = tuple(' %s:%s: ' % (PROVIDER, n) for n, r in rules.items()
                    if r is None)
    events = EventList()
    warnings = []
    with tempfile.TemporaryFile(mode='w+') as err:
        proc = subprocess.Popen([exe, '--clock-seconds', '--no-delta', path],
                                stdout=subprocess.PIPE, stderr=err,
                                universal_newlines=True)
        try:
            for line in proc.stdout:
                line = line.rstrip('\n')
                if line.startswith('WARNING'):
                    warnings.append(line)
                    continue
                if needles and any(nd in line for nd in needles):
                    m = _LINE_RE.match(line)
                    if m and m.group(3) == PROVIDER:
                        sec, frac, _, name, rest = m.groups()
                        ts = int(sec) * 1000000000 + \
                            int((frac + '000000000')[:9])
                        pm = _TEXT_POOL_RE.search(rest)
                        events.note_skipped(name, ts, (
                            int(pm.group(1), 0), pm.group(2)) if pm else None)
                        continue
                rec = parse_text_line(line)
                if rec is None:
                    continue
                if rules and _counted(rules, rec):
                    events.note_skipped(rec['name'], rec['ts'], (
                        rec['ctx'], rec['pool']) if 'pool' in rec else None)
                    continue
                events.append(rec)
        finally:
            proc.stdout.close()
            rc = proc.wait()
        err.seek(0)
        stderr = err.read()
    if rc != 0:
        raise TraceError('babeltrace2 could not read %s: %s'
                         % (path, stderr.strip()))
    # "WARNING: Tracer discarded 12 events between [...] and [...]"
    for m in _DISCARDED_RE.finditer('\n'.join(warnings) + '\n' + stderr):
        events.add_discarded(int(m.group(1)))
    return events


# --------------------------------------------------------------------------
# Reading the trace files directly (CTF 1.8, as LTTng-UST 2.13 writes them)
# --------------------------------------------------------------------------
#
# babeltrace2 formats every event as text (or the bt2 bindings build an
# object per field) and this script then parses it back: on a 2.46 M-event
# trace that was most of a 98 s run.  The reader below decodes the binary
# stream files itself, with one struct.unpack_from() per event, and does not
# even build the events the caller does not want (the `counter` events, 73%
# of a busy trace, when the report does not plot them): they are counted.
#
# It handles what LTTng-UST writes: a packetized (or plain) TSDL metadata
# file, little- or big-endian byte-aligned integers and enumerations,
# strings, arrays and sequences in payloads, the compact and large event
# headers, one clock.  Anything else (floating point, bit fields or
# variants in payloads, another header layout) raises CtfUnsupported, and
# load_events() falls back to babeltrace2.


class CtfUnsupported(TraceError):
    """The trace uses a CTF feature this reader does not decode."""


_TSDL_TOKEN = re.compile(r'''
    (?P<ws>\s+|/\*.*?\*/|//[^\n]*)
  | (?P<str>"(?:[^"\\]|\\.)*")
  | (?P<num>-?(?:0[xX][0-9a-fA-F]+|\d+))
  | (?P<id>[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*)
  | (?P<op>:=|\.\.\.|[{}\[\]()<>;,=:+-])
''', re.X | re.S)


def _tsdl_tokens(text):
    out = []
    pos = 0
    while pos < len(text):
        m = _TSDL_TOKEN.match(text, pos)
        if not m:
            raise CtfUnsupported('TSDL: cannot parse near %r'
                                 % text[pos:pos + 40])
        pos = m.end()
        kind = m.lastgroup
        if kind == 'ws':
            continue
        val = m.group(kind)
        if kind == 'num':
            val = int(val, 0)
        elif kind == 'str':
            val = bytes(val[1:-1], 'utf-8').decode('unicode_escape')
        out.append((kind, val))
    return out


class _Int:
    """An integer (or, with labels, an enumeration) field type."""

    def __init__(self, size, align, signed, order, base=10, clock=None):
        self.size, self.align, self.signed = size, align, signed
        self.order, self.base, self.clock = order, base, clock
        self.labels = None          # enum: [(lo, hi, label)]

    def enum_table(self):
        """value -> label (a tuple for several), for small ranges."""
        table = {}
        for lo, hi, label in self.labels:
            if hi - lo > 4096:
                raise CtfUnsupported('enumeration range too large')
            for v in range(lo, hi + 1):
                table.setdefault(v, []).append(label)
        return {v: (ls[0] if len(ls) == 1 else tuple(ls))
                for v, ls in table.items()}

    def fmt(self):
        """struct format of a byte-aligned integer, or None."""
        if self.size not in (8, 16, 32, 64) or self.align % 8:
            return None
        c = {8: 'b', 16: 'h', 32: 'i', 64: 'q'}[self.size]
        return c if self.signed else c.upper()


class _Str:
    align = 8


class _Array:
    def __init__(self, elem, length):
        self.elem, self.length = elem, length      # length: int or field
        self.align = elem.align


class _Struct:
    def __init__(self, fields, align=8):
        self.fields = fields        # [(name, type)]
        self.align = max([align] + [t.align for _, t in fields])


class _Variant:
    def __init__(self, tag, options):
        self.tag, self.options = tag, options
        self.align = 8


class _TsdlParser:
    """The subset of TSDL that LTTng-UST writes."""

    def __init__(self, text):
        # Integers without a byte_order take the trace's, which the trace
        # block declares after the first type aliases.
        m = re.search(r'\btrace\s*\{[^}]*?\bbyte_order\s*=\s*(\w+)', text)
        self.t = _tsdl_tokens(text)
        self.i = 0
        self.aliases = {}
        self.structs = {}
        self.byte_order = 'be' if m and m.group(1) in ('be', 'network') \
            else 'le'
        self.trace = {}
        self.clocks = {}
        self.streams = {}
        self.events = []

    def peek(self, k=0):
        j = self.i + k
        return self.t[j] if j < len(self.t) else (None, None)

    def take(self, val=None):
        tok = self.peek()
        if tok[0] is None or (val is not None and tok[1] != val):
            raise CtfUnsupported('TSDL: expected %r, got %r' % (val, tok[1]))
        self.i += 1
        return tok[1]

    def parse(self):
        while self.peek()[0] is not None:
            kw = self.peek()[1]
            if kw == 'typealias':
                self.take()
                typ = self.type_spec()
                self.take(':=')
                name = self.alias_name()
                self.take(';')
                self.aliases[name] = typ
            elif kw == 'struct' and self.peek(1)[0] == 'id' and \
                    self.peek(2)[1] == '{':
                self.type_spec()
                self.take(';')
            elif kw in ('trace', 'env', 'clock', 'stream', 'event',
                        'callsite'):
                self.take()
                block = self.block()
                self.take(';')
                if kw == 'trace':
                    self.trace = block
                elif kw == 'clock':
                    self.clocks[block.get('name')] = block
                elif kw == 'stream':
                    self.streams[block.get('id', 0)] = block
                elif kw == 'event':
                    self.events.append(block)
            else:
                raise CtfUnsupported('TSDL: unexpected %r' % (kw,))

    def alias_name(self):
        words = []
        while self.peek()[0] == 'id':
            words.append(self.take())
        return ' '.join(words)

    def block(self):
        """{ key = value; key := type; ... } as a dict."""
        self.take('{')
        out = {}
        while self.peek()[1] != '}':
            key = self.take()
            if self.peek()[1] == ':=':
                self.take()
                out[key] = self.type_spec()
                self.take(';')
                continue
            self.take('=')
            if self.peek()[0] in ('num', 'str'):
                val = self.take()
            elif self.peek()[1] == '-':
                self.take()
                val = -self.take()
            else:
                # An identifier: "clock.monotonic.value" is one token.
                val = self.take()
            self.take(';')
            out[key] = val
        self.take('}')
        return out

    def attrs(self):
        """{ size = 32; align = 8; ... } of integer / floating_point."""
        self.take('{')
        out = {}
        while self.peek()[1] != '}':
            key = self.take()
            self.take('=')
            if self.peek()[1] == '-':
                self.take()
                val = -self.take()
            else:
                val = self.take()
            self.take(';')
            out[key] = val
        self.take('}')
        return out

    def type_spec(self):
        kind, val = self.peek()
        if val == 'integer':
            self.take()
            a = self.attrs()
            signed = a.get('signed', 0) in (1, 'true', 'TRUE')
            order = a.get('byte_order', self.byte_order)
            order = {'le': 'le', 'be': 'be', 'network': 'be',
                     'native': self.byte_order}.get(order, self.byte_order)
            base = a.get('base', 10)
            clock = a.get('map')
            return _Int(a['size'], a.get('align', 8), signed, order,
                        base, clock)
        if val == 'floating_point':
            raise CtfUnsupported('floating point fields')
        if val == 'string':
            self.take()
            if self.peek()[1] == '{':
                self.attrs()
            return _Str()
        if val == 'enum':
            self.take()
            if self.peek()[0] == 'id' and self.peek()[1] != ':':
                self.take()             # enum name
            self.take(':')
            base = self.type_spec()
            if not isinstance(base, _Int):
                raise CtfUnsupported('enum over a non-integer')
            typ = _Int(base.size, base.align, base.signed, base.order,
                       base.base, base.clock)
            typ.labels = []
            self.take('{')
            nxt = 0
            while self.peek()[1] != '}':
                label = self.take()
                lo = hi = nxt
                if self.peek()[1] == '=':
                    self.take()
                    lo = hi = self.signed_num()
                    if self.peek()[1] == '...':
                        self.take()
                        hi = self.signed_num()
                typ.labels.append((lo, hi, label))
                nxt = hi + 1
                if self.peek()[1] == ',':
                    self.take()
            self.take('}')
            return typ
        if val == 'struct':
            self.take()
            name = None
            if self.peek()[0] == 'id':
                name = self.take()
            if self.peek()[1] != '{':
                if name not in self.structs:
                    raise CtfUnsupported('unknown struct %s' % name)
                return self.structs[name]
            fields = self.fields()
            align = 8
            if self.peek()[1] == 'align':
                self.take()
                self.take('(')
                align = self.take() * 8
                self.take(')')
            typ = _Struct(fields, align)
            if name:
                self.structs[name] = typ
            return typ
        if val == 'variant':
            self.take()
            if self.peek()[0] == 'id':
                self.take()
            self.take('<')
            tag = self.take()
            self.take('>')
            return _Variant(tag, self.fields())
        if kind == 'id':
            # The longest run of identifiers that names a type alias
            # ("unsigned long"); the identifier after it is a field's name.
            words = []
            while self.peek(len(words))[0] == 'id':
                words.append(self.peek(len(words))[1])
            for k in range(len(words), 0, -1):
                name = ' '.join(words[:k])
                if name in self.aliases:
                    self.i += k
                    return self.aliases[name]
            raise CtfUnsupported('unknown type %r' % ' '.join(words))
        raise CtfUnsupported('TSDL: unexpected %r' % (val,))

    def signed_num(self):
        if self.peek()[1] == '-':
            self.take()
            return -self.take()
        return self.take()

    def fields(self):
        self.take('{')
        out = []
        while self.peek()[1] != '}':
            typ = self.type_spec()
            name = self.take()
            while self.peek()[1] == '[':
                self.take()
                length = self.take()
                self.take(']')
                typ = _Array(typ, length)
            self.take(';')
            out.append((name, typ))
        self.take('}')
        return out


def _field_name(name):
    # CTF 1.8: a leading underscore protects a name from the keywords and
    # is not part of it (babeltrace2 drops it too).
    return name[1:] if name.startswith('_') else name


def _read_metadata(path):
    with open(path, 'rb') as f:
        data = f.read()
    if data[:4] in (b'\x57\x1d\xd1\x75', b'\x75\xd1\x1d\x57'):
        order = '<' if data[:4] == b'\x57\x1d\xd1\x75' else '>'
        text, pos = [], 0
        while pos + 37 <= len(data):
            content, size = struct.unpack_from(order + 'II', data, pos + 24)
            if size == 0:
                break
            text.append(data[pos + 37:pos + content // 8])
            pos += size // 8
        data = b''.join(text)
    return data.decode('utf-8', 'replace')


class _Decoder:
    """Generic (slow) decoding of one type at a byte offset; used for the
    packet header and context and for events with strings or sequences."""

    def __init__(self, base):
        self.base = base            # packet start, for alignment

    def value(self, typ, data, pos, scope):
        if isinstance(typ, _Int):
            a = typ.align // 8
            if a > 1:
                pos += (-(pos - self.base)) % a
            fmt = typ.fmt()
            if fmt is None:
                raise CtfUnsupported('%d-bit integer field' % typ.size)
            (v,) = struct.unpack_from(('<' if typ.order == 'le' else '>')
                                      + fmt, data, pos)
            pos += typ.size // 8
            if typ.labels is not None:
                table = getattr(typ, '_table', None)
                if table is None:
                    table = typ._table = typ.enum_table()
                v = table.get(v, v)
            return v, pos
        if isinstance(typ, _Str):
            end = data.find(b'\0', pos)
            if end < 0:
                raise TraceError('unterminated string in a CTF packet')
            return data[pos:end].decode('utf-8', 'replace'), end + 1
        if isinstance(typ, _Array):
            n = typ.length
            if not isinstance(n, int):
                n = scope.get(_field_name(n.split('.')[-1]))
                if not isinstance(n, int):
                    raise CtfUnsupported('sequence length %r' % typ.length)
            out = []
            for _ in range(n):
                v, pos = self.value(typ.elem, data, pos, scope)
                out.append(v)
            return out, pos
        if isinstance(typ, _Struct):
            a = typ.align // 8
            if a > 1:
                pos += (-(pos - self.base)) % a
            out = {}
            for name, t in typ.fields:
                out[_field_name(name)], pos = self.value(t, data, pos, out)
            return out, pos
        raise CtfUnsupported('variant field')


# What the stream reader does with an event class (_EventClass.kind).
_EV_OTHER = 0       # another provider's event: stepped over
_EV_BUILD = 1       # built into an event dict
_EV_COUNT = 2       # counted, with its pool, not built
_EV_SLOW = 3        # strings or sequences: decoded field by field
_EV_UNLESS = 4      # counted, unless a field has a bit of a mask: built


def _skip_rules(skip):
    """load_events()'s @skip as {name: None (always counted) or (field,
    mask) (counted unless field & mask)}."""
    rules = {}
    for item in skip:
        if isinstance(item, str):
            rules[item] = None
        else:
            name, field, mask = item
            rules[name] = (field, mask)
    return rules


def _counted(rules, rec):
    """Whether the built event @rec is one @rules count instead."""
    if rec['name'] not in rules:
        return False
    rule = rules[rec['name']]
    return rule is None or not (rec.get(rule[0], 0) & rule[1])


class _EventClass:
    """How to step over, count or build one event class's records."""

    def __init__(self, ev, stream_ctx, count_only):
        prov, _, short = ev['name'].partition(':')
        self.name = short
        mine = prov == PROVIDER
        self.fields = []            # (name, type): stream context + payload
        raw = []
        for scope in (stream_ctx, ev.get('context'), ev.get('fields')):
            if scope is None:
                continue
            if not isinstance(scope, _Struct):
                raise CtfUnsupported('non-struct scope')
            raw.extend(scope.fields)
            self.fields.extend((_field_name(n), t) for n, t in scope.fields)
        self.struct = _Struct(raw)
        self.size = 0
        self.unpack = None
        self.extra = None
        fmts = []
        for _, t in self.fields:
            f = t.fmt() if isinstance(t, _Int) and t.align <= 8 else None
            if f is None:
                fmts = None
                break
            fmts.append((t.order, f))
        fixed = fmts is not None and len({o for o, _ in fmts}) <= 1
        self.hot = None
        names = [n for n, _ in self.fields]
        if fixed:
            order = '<' if not fmts or fmts[0][0] == 'le' else '>'
            st = struct.Struct(order + ''.join(f for _, f in fmts))
            self.size = st.size
            self.unpack = st.unpack_from
            names = [n for n, _ in self.fields]
            if order == '<' and 'ctx' in names and 'pool' in names:
                # The large event header and the whole event in one
                # unpack, for the class most events belong to (_read_stream).
                self.hot = (struct.Struct('<HI' + ''.join(
                    f for _, f in fmts)).unpack_from, 6 + st.size,
                    2 + names.index('ctx'), 2 + names.index('pool'))
        if not fixed:
            self.kind = _EV_SLOW
        elif not mine:
            self.kind = _EV_OTHER
        elif short in count_only and count_only[short] is None:
            self.kind = _EV_COUNT
            self.extra = self._pool_peek(order, fmts)
        elif short in count_only and count_only[short][0] in names and \
                'ctx' in names and 'pool' in names:
            field, mask = count_only[short]
            self.kind = _EV_UNLESS
            t = self.fields[names.index('pool')][1]
            seen = set()
            self.extra = (self._builder(), names.index(field), mask,
                          names.index('ctx'), names.index('pool'),
                          seen.add, seen,
                          t.enum_table() if t.labels is not None else {})
        else:
            self.kind = _EV_BUILD
            self.extra = self._builder()
        self.mine = mine
        self.count_rules = count_only

    def _pool_peek(self, order, fmts):
        """(unpack of just (ctx, pool), the pool's enum table, add to the
        pairs seen, the pairs seen), or None when the event has no pool."""
        names = [n for n, _ in self.fields]
        if 'ctx' not in names or 'pool' not in names:
            return None
        fmt, picked = order, []
        for (name, t), (_, f) in zip(self.fields, fmts):
            if name in ('ctx', 'pool'):
                fmt += f
                picked.append(name)
            else:
                fmt += '%dx' % struct.calcsize(f)
        if picked != ['ctx', 'pool']:
            return None
        t = self.fields[names.index('pool')][1]
        table = t.enum_table() if t.labels is not None else {}
        # The (ctx, pool number) pairs seen (its add method, and itself),
        # turned into pools at the end.
        seen = set()
        return struct.Struct(fmt).unpack_from, table, seen.add, seen

    def _builder(self):
        """A function (values, ts) -> event dict, generated for speed."""
        env = {}
        items = ["'name': %r" % self.name, "'ts': ts"]
        for k, (name, t) in enumerate(self.fields):
            if isinstance(t, _Int) and t.labels is not None:
                env['E%d' % k] = t.enum_table()
                items.append("%r: E%d.get(v[%d], v[%d])" % (name, k, k, k))
            else:
                items.append('%r: v[%d]' % (name, k))
        src = 'def build(v, ts):\n    return {%s}\n' % ', '.join(items)
        exec(src, env)
        return env['build']


def _ctf_traces(path):
    """Directories under @path that hold a CTF trace (a metadata file)."""
    out = []
    for root, dirs, files in os.walk(path):
        dirs.sort()
        if 'metadata' in files:
            out.append(root)
    return out


def load_events_ctf(path, skip=()):
    """Read every spacersv event of the CTF trace(s) under @path.  Events
    @skip names are counted (events.skipped), with their pools
    (events.skipped_pools) and the time of the first and last
    (events.skipped_span), not built (load_events())."""
    traces = _ctf_traces(path)
    if not traces:
        raise TraceError('no CTF trace (no metadata file) under %s' % path)
    events = EventList()
    events.skipped = Counter()
    events.skipped_pools = set()
    span = [None, None]
    for tdir in traces:
        _load_ctf_trace(tdir, events, _skip_rules(skip), span)
    events.skipped_span = tuple(span)
    return events


def _load_ctf_trace(tdir, events, skip, span):
    meta = _TsdlParser(_read_metadata(os.path.join(tdir, 'metadata')))
    meta.parse()
    if len(meta.clocks) > 1:
        raise CtfUnsupported('several clocks')
    clock = next(iter(meta.clocks.values()), {})
    freq = clock.get('freq', 1000000000)
    offset_ns = clock.get('offset_s', 0) * 1000000000
    off = clock.get('offset', 0)
    if freq == 1000000000:
        offset_ns += off
    else:
        offset_ns += off * 1000000000 // freq
    classes = {}
    for ev in meta.events:
        sid = ev.get('stream_id', 0)
        if sid not in meta.streams:
            raise CtfUnsupported('event of an unknown stream')
        classes.setdefault(sid, {})[ev['id']] = ev
    compiled = {}
    for name in sorted(os.listdir(tdir)):
        fpath = os.path.join(tdir, name)
        if name == 'metadata' or name.startswith('.') or \
                not os.path.isfile(fpath):
            continue
        if os.path.getsize(fpath) == 0:
            continue
        # Mapped, not read: the page cache is the only copy.
        with open(fpath, 'rb') as f, \
                mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            _read_stream(data, meta, classes, compiled, events, skip, span,
                         freq, offset_ns)


def _compile_stream(sc, evs, skip):
    """(large header?, {event id: (kind, size, unpack, extra, class)})."""
    hdr = sc.get('event.header')
    if not isinstance(hdr, _Struct) or not hdr.fields or \
            hdr.fields[0][0] != 'id' or \
            not isinstance(hdr.fields[0][1], _Int):
        raise CtfUnsupported('event header layout')
    idt = hdr.fields[0][1]
    if idt.order != 'le' or idt.size not in (5, 16):
        raise CtfUnsupported('event header with a %d-bit id' % idt.size)
    sctx = sc.get('event.context')
    # Indexed by event id (LTTng numbers them from 0 per channel).
    out = [None] * (max(evs, default=-1) + 1)
    for eid, ev in evs.items():
        if eid < 0 or eid > 65535:
            raise CtfUnsupported('event id %d' % eid)
        c = _EventClass(ev, sctx, skip)
        out[eid] = (c.kind, c.size, c.unpack, c.extra, c)
    # The counted classes with a pool can take the one-unpack path (large
    # headers only): {event id: (unpack of header and fields, size, index
    # of ctx, of pool, add to the pools seen, index of the field that
    # makes an event built (-1: none), its mask, the builder)}.
    hots = {}
    if idt.size == 16:
        for eid, ev in enumerate(out):
            if not ev or ev[4].hot is None:
                continue
            unpack, size, ci, pi = ev[4].hot
            if ev[0] == _EV_COUNT and ev[3] is not None:
                hots[eid] = (unpack, size, ci, pi, ev[3][2], -1, 0, None)
            elif ev[0] == _EV_UNLESS:
                x = ev[3]
                hots[eid] = (unpack, size, ci, pi, x[5], 2 + x[1], x[2],
                             x[0])
    return idt.size == 16, out, hots


def _read_stream(data, meta, classes, compiled, events, skip, span, freq,
                 offset_ns):
    pkt_header = meta.trace.get('packet.header')
    last_discarded = None
    last_seq = None
    append = events.append
    counted = {}            # stream id -> per event id, events counted
    first_raw = last_raw = None
    hdr_large = struct.Struct('<HI').unpack_from
    hdr_compact = struct.Struct('<I').unpack_from
    hdr_ext = struct.Struct('<IQ').unpack_from
    one_ghz = freq == 1000000000
    pos = 0
    n = len(data)
    while pos < n:
        dec = _Decoder(pos)
        p = pos
        hdr = {}
        if pkt_header is not None:
            hdr, p = dec.value(pkt_header, data, p, {})
            if hdr.get('magic', 0xc1fc1fc1) != 0xc1fc1fc1:
                raise TraceError('bad CTF packet magic')
        sid = hdr.get('stream_id', 0)
        sc = meta.streams.get(sid)
        if sc is None:
            raise CtfUnsupported('unknown stream id %d' % sid)
        pctx = {}
        if 'packet.context' in sc:
            pctx, p = dec.value(sc['packet.context'], data, p, {})
        size = pctx.get('packet_size', (n - pos) * 8) // 8
        end = pos + pctx.get('content_size', size * 8) // 8
        if size <= 0 or end > n or end < p:
            raise TraceError('truncated CTF packet')
        # events_discarded counts, per stream, the events the ring buffer
        # had no room for so far; packet_seq_num skips lost packets.
        d = pctx.get('events_discarded')
        if d is not None:
            if d > (last_discarded or 0):
                events.add_discarded(d - (last_discarded or 0))
            last_discarded = d
        seq = pctx.get('packet_seq_num')
        if seq is not None:
            if last_seq is not None and seq > last_seq + 1:
                events.add_discarded(None)
            last_seq = seq
        ts = pctx.get('timestamp_begin', 0)
        if sid not in compiled:
            compiled[sid] = _compile_stream(sc, classes.get(sid, {}), skip)
        large, ecls, hots = compiled[sid]
        counts = counted.get(sid)
        if counts is None:
            counts = counted[sid] = [0] * len(ecls)
        hot_count = 0
        hot_ctx = hot_pool = None
        if hots:
            # The counted class most events so far belonged to (counter,
            # or reserve once counter events are sampled).
            hot_id = max(hots, key=lambda i: (counts[i], -i))
            (hot_unpack, hot_size, hot_ci, hot_pi, hot_add, hot_fi,
             hot_mask, hot_build) = hots[hot_id]
            hot_end = min(end, n - hot_size + 1)
        else:
            hot_id, hot_end = -1, 0
        while p < end:
            # LTTng's large header: a 16-bit id and 32 bits of the clock,
            # or 65535 and a 32-bit id and the whole clock; the compact
            # one: a 5-bit id and 27 bits, or 31 and the same extension.
            # A shortened clock value wrapped when it is below the last
            # one's low bits (CTF 1.8, section 8).
            if large:
                if p < hot_end:
                    # Counted events are most of a busy trace: header and
                    # fields of one of the commonest class come in one
                    # unpack.
                    v = hot_unpack(data, p)
                    eid, low = v[0], v[1]
                    if eid == hot_id:
                        if low >= (ts & 0xffffffff):
                            ts = (ts & ~0xffffffff) | low
                        else:
                            ts = ((ts | 0xffffffff) + 1) | low
                        p += hot_size
                        if hot_fi >= 0 and v[hot_fi] & hot_mask:
                            # One the report looks at (NOWAIT): built.
                            append(hot_build(v[2:], offset_ns + ts
                                             if one_ghz else offset_ns +
                                             ts * 1000000000 // freq))
                            continue
                        hot_count += 1
                        # Its pool, when it is not the last one's.
                        if v[hot_pi] != hot_pool or v[hot_ci] != hot_ctx:
                            hot_ctx, hot_pool = v[hot_ci], v[hot_pi]
                            hot_add((hot_ctx, hot_pool))
                        if first_raw is None:
                            first_raw = ts
                        last_raw = ts
                        continue
                else:
                    eid, low = hdr_large(data, p)
                if eid != 65535:
                    p += 6
                    if low >= (ts & 0xffffffff):
                        ts = (ts & ~0xffffffff) | low
                    else:
                        ts = ((ts | 0xffffffff) + 1) | low
                else:
                    eid, ts = hdr_ext(data, p + 2)
                    p += 14
            else:
                (w,) = hdr_compact(data, p)
                eid = w & 31
                if eid != 31:
                    low = w >> 5
                    p += 4
                    if low >= (ts & 0x7ffffff):
                        ts = (ts & ~0x7ffffff) | low
                    else:
                        ts = ((ts | 0x7ffffff) + 1) | low
                else:
                    eid, ts = hdr_ext(data, p + 1)
                    p += 13
            try:
                kind, esize, unpack, extra, c = ecls[eid]
            except (IndexError, TypeError):
                raise TraceError('event id %d is not in the metadata' % eid)
            if kind == _EV_BUILD:
                append(extra(unpack(data, p),
                             offset_ns + ts if one_ghz else
                             offset_ns + ts * 1000000000 // freq))
                p += esize
            elif kind == _EV_COUNT:
                counts[eid] += 1
                if extra is not None:
                    extra[2](extra[0](data, p))
                if first_raw is None:
                    first_raw = ts
                last_raw = ts
                p += esize
            elif kind == _EV_UNLESS:
                v = unpack(data, p)
                p += esize
                if v[extra[1]] & extra[2]:
                    append(extra[0](v, offset_ns + ts if one_ghz else
                                    offset_ns + ts * 1000000000 // freq))
                else:
                    counts[eid] += 1
                    extra[5]((v[extra[3]], v[extra[4]]))
                    if first_raw is None:
                        first_raw = ts
                    last_raw = ts
            elif kind == _EV_OTHER:
                p += esize
            else:
                rec, p = dec.value(c.struct, data, p, {})
                if not c.mine:
                    continue
                t = offset_ns + (ts if one_ghz else ts * 1000000000 // freq)
                rec['name'] = c.name
                if _counted(c.count_rules, rec):
                    events.skipped[c.name] += 1
                    if 'ctx' in rec and 'pool' in rec:
                        events.skipped_pools.add((rec['ctx'], rec['pool']))
                    if first_raw is None:
                        first_raw = ts
                    last_raw = ts
                else:
                    rec['ts'] = t
                    append(rec)
        if hot_count:
            counts[hot_id] += hot_count
        if p != end:
            raise TraceError('CTF packet: events overrun its content')
        pos += size
    for sid, counts in counted.items():
        for eid, k in enumerate(counts):
            if k:
                events.skipped[compiled[sid][1][eid][4].name] += k
    # The pools of the counted events, with their enumeration labels.
    for _, ecls, _ in compiled.values():
        for kind, _, _, extra, _ in filter(None, ecls):
            if kind == _EV_COUNT and extra is not None:
                table, seen = extra[1], extra[3]
            elif kind == _EV_UNLESS:
                table, seen = extra[7], extra[6]
            else:
                continue
            events.skipped_pools.update(
                (ctx, table.get(pool, pool)) for ctx, pool in seen)
    if first_raw is not None:
        for raw, i in ((first_raw, 0), (last_raw, 1)):
            t = offset_ns + (raw if one_ghz else raw * 1000000000 // freq)
            if span[i] is None or (t < span[i] if i == 0 else t > span[i]):
                span[i] = t


def have_bt2():
    try:
        import bt2  # noqa: F401
        return True
    except ImportError:
        return False


def load_events(path, backend='auto', skip=()):
    """Return (events, backend): every spacersv event, sorted by time.

    An event is a dict: 'name' (without the provider), 'ts' (ns since the
    epoch), the context fields (vpid, vtid, when recorded) and the payload;
    enumerations are their label (str), or the number for a value outside
    the mapping.  Events named in @skip are counted instead of returned
    (EventList.skipped, skipped_pools, skipped_span); an item (name, field,
    mask) of @skip counts the events of that name unless field & mask is
    not 0 (('reserve', 'flags', RESERVE_NOWAIT): all but the NOWAIT ones).

    Backends: 'ctf' decodes the trace files itself (the fastest); 'text'
    parses the output of the babeltrace2 program; 'bt2' uses babeltrace2's
    Python bindings; 'auto' is 'ctf', or, for a trace it cannot decode,
    'text' when babeltrace2 is installed and 'bt2' otherwise.
    """
    if not os.path.isdir(path):
        raise TraceError('%s is not a directory' % path)
    events = None
    if backend in ('auto', 'ctf'):
        try:
            events = load_events_ctf(path, skip)
            backend = 'ctf'
        except CtfUnsupported as e:
            if backend == 'ctf':
                raise
            if shutil.which('babeltrace2'):
                backend = 'text'
            elif have_bt2():
                backend = 'bt2'
            else:
                raise TraceError('%s; reading this trace needs the '
                                 'babeltrace2 program or python3-bt2' % e)
            print('srsv-report: %s; reading the trace with %s'
                  % (e, 'babeltrace2' if backend == 'text' else 'bt2'),
                  file=sys.stderr)
    if events is not None:
        pass
    elif backend == 'bt2':
        events = load_events_bt2(path, skip)
    elif backend == 'text':
        events = load_events_text(path, skip=skip)
    else:
        raise ValueError('unknown backend %r' % backend)
    # Stable: events of one thread keep their order.
    events.sort(key=lambda e: e['ts'])
    return events, backend


def select(events, ctx=None, pool=None, pid=None):
    """Keep the events of one ctx (int), pool (name) and/or process."""
    out = EventList()
    out.discarded = getattr(events, 'discarded', 0)
    # Counted events cannot be selected: load_events() builds them all
    # when a selection is asked for (main()).
    out.skipped = getattr(events, 'skipped', Counter())
    out.skipped_pools = getattr(events, 'skipped_pools', set())
    out.skipped_span = getattr(events, 'skipped_span', (None, None))
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

# srsv_reserve_flags: SRSV_RESERVE_NOWAIT (reserve.flags).
RESERVE_NOWAIT = 0x1

# What the text report does not need to see one by one, only counted with
# its pool and time (load_events()'s skip): the counter events (every
# change of a pool counter: the busiest by far) and the reserve events but
# the NOWAIT ones (one per reservation; the report summarises only the
# NOWAIT answers).
LEAN_SKIP = ('counter', ('reserve', 'flags', RESERVE_NOWAIT))


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
    skipped = getattr(events, 'skipped', None) or Counter()
    span = [e['ts'] for e in (events[:1] + events[-1:])]
    span += [t for t in getattr(events, 'skipped_span', ()) if t is not None]
    rep = {
        # Built and counted events alike (load_events()'s skip).
        'events': Counter(e['name'] for e in events) + skipped,
        'discarded': getattr(events, 'discarded', 0),
        'first_ts': min(span) if span else 0,
        'last_ts': max(span) if span else 0,
        # (ctx, pool) -> events (counted events add their pools only)
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
        # NOWAIT reservations (reserve events with the NOWAIT flag):
        # (pool, mode) -> {answer: count}; (pool, mode) -> bytes refused
        'nowait': defaultdict(Counter),
        'nowait_refused_bytes': Counter(),
        # NOWAIT reservations pacing would have delayed (pace, nowait=1):
        # pool -> [count, summed delay_ns they did not sleep]
        'nowait_paced': defaultdict(lambda: [0, 0]),
        # Quota reservations (quota events, op reserve), per tenant and
        # kind: (id, kind) -> {answer: count}; bytes refused
        'quota': defaultdict(Counter),
        'quota_refused_bytes': Counter(),
        # Quota flushes per tenant: id -> {answer: count}
        'quota_flushes': defaultdict(Counter),
        # Calls refused for bad input (refused events): (kind, pool) ->
        # [count, bytes]
        'refused': defaultdict(lambda: [0, 0]),
    }
    for key in getattr(events, 'skipped_pools', ()):
        rep['pools'][key] += 0
    # Tickets queued per pool over time, from ticket_add / ticket_end:
    # (ctx, pool) -> [(ts, queued after the change)].
    queue = defaultdict(list)
    flushes = []
    # The busiest figures, as locals (one dict lookup fewer each).
    pools = rep['pools']
    n_flushes, flush_bytes = rep['flushes'], rep['flush_bytes']
    flush_ns, flush_max_ns = rep['flush_ns'], rep['flush_max_ns']
    for e in events:
        name = e['name']
        if name in ('ticket_add', 'ticket_end'):
            hist = queue[(e['ctx'], e['pool'])]
            n = hist[-1][1] if hist else 0
            hist.append((e['ts'], max(n + (1 if name == 'ticket_add'
                                             else -1), 0)))
        if 'pool' in e and 'ctx' in e:
            pools[(e['ctx'], e['pool'])] += 1
        if name == 'flush_space':
            flushes.append(e)
            key = (e['state'], 'preempt' if e['for_preempt'] else 'ticket')
            n_flushes[key] += 1
            flush_bytes[key] += e['bytes']
            if 'duration_ns' in e:
                rep['has_duration'] = True
                d = e['duration_ns']
                flush_ns[key] += d
                if d > flush_max_ns[key]:
                    flush_max_ns[key] = d
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
        elif name == 'ticket_end':
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
        elif name == 'trigger_flush':
            rep['triggers'][(e['reason'], e['mode'])] += 1
        elif name == 'reserve':
            if e['flags'] & RESERVE_NOWAIT:
                key = (e['pool'], e['mode'])
                rep['nowait'][key][errno_name(e['ret'])] += 1
                if e['ret'] != 0:
                    rep['nowait_refused_bytes'][key] += e['bytes']
        elif name == 'pace':
            if e.get('nowait'):
                st = rep['nowait_paced'][e['pool']]
                st[0] += 1
                st[1] += e['delay_ns']
        elif name == 'quota':
            if e['op'] == 'reserve':
                key = (e['id'], e['kind'])
                rep['quota'][key][errno_name(e['ret'])] += 1
                if e['ret'] != 0:
                    rep['quota_refused_bytes'][key] += e['bytes']
            elif e['op'] == 'flush':
                rep['quota_flushes'][e['id']][
                    'ok' if e['ret'] == 0 else errno_name(e['ret'])] += 1
        elif name == 'refused':
            st = rep['refused'][(e['kind'], e['pool'])]
            st[0] += 1
            st[1] += e['bytes']
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
    'RECLAIM_ZONES': 'Z', 'RECLAIM_CHUNKS': 'c'}


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
             'COMMIT_TRANS', 'RESET_ZONES', 'RECLAIM_ZONES', 'RECLAIM_CHUNKS')
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
    out.extend(format_refusals(rep))

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


def _answers_row(answers, columns):
    """calls, then the count of each answer in @columns, then the others."""
    calls = sum(answers.values())
    cells = [answers.get(c, 0) for c in columns]
    other = calls - sum(cells)
    return calls, cells, other


def format_refusals(rep):
    """NOWAIT and quota refusals, and the calls refused for bad input."""
    out = ['', 'NOWAIT reservations and their refusals (reserve events with '
           'the NOWAIT flag)']
    if not rep['nowait'] and not rep['nowait_paced']:
        out.append('  (none)')
    if rep['nowait']:
        out.append('  %-9s %-22s %8s %8s %8s %8s %8s %12s' %
                   ('pool', 'mode', 'calls', 'granted', '-EAGAIN', 'other',
                    'refused', 'bytes'))
        for key in sorted(rep['nowait'], key=str):
            calls, (granted, again), other = _answers_row(
                rep['nowait'][key], ('granted', '-EAGAIN'))
            out.append('  %-9s %-22s %8d %8d %8d %8d %7.1f%% %12s' %
                       (key[0], key[1], calls, granted, again, other,
                        100.0 * (calls - granted) / max(calls, 1),
                        fmt_bytes(rep['nowait_refused_bytes'][key])))
        others = Counter()
        for answers in rep['nowait'].values():
            others.update({a: c for a, c in answers.items()
                           if a not in ('granted', '-EAGAIN')})
        if others:
            out.append('  other answers: ' + ', '.join(
                '%s %d' % kv for kv in sorted(others.items())))
        out.append('  bytes: what the refused calls asked for; refused: '
                   'calls not granted')
    for pool in sorted(rep['nowait_paced'], key=str):
        n, ns = rep['nowait_paced'][pool]
        out.append('  %s: %d NOWAIT reservation(s) past pacing\'s freerun '
                   'point went through without the %s of delay a blocking '
                   'one would have slept' % (pool, n, fmt_ns(ns)))

    out.append('')
    out.append('Quota reservations and their refusals (quota events, op '
               'reserve: one per kind reserved)')
    if not rep['quota']:
        out.append('  (none)')
    else:
        out.append('  %-10s %-14s %8s %8s %8s %8s %8s %8s %12s' %
                   ('tenant', 'kind', 'calls', 'granted', '-EDQUOT',
                    '-EAGAIN', 'other', 'refused', 'bytes'))
        for key in sorted(rep['quota'], key=str):
            calls, (granted, dquot, again), other = _answers_row(
                rep['quota'][key], ('granted', '-EDQUOT', '-EAGAIN'))
            out.append('  %-10s %-14s %8d %8d %8d %8d %8d %7.1f%% %12s' %
                       (key[0], key[1], calls, granted, dquot, again, other,
                        100.0 * (calls - granted) / max(calls, 1),
                        fmt_bytes(rep['quota_refused_bytes'][key])))
    for qid in sorted(rep['quota_flushes'], key=str):
        answers = rep['quota_flushes'][qid]
        out.append('  quota flushes of tenant %s: %d (%s)' % (
            qid, sum(answers.values()), ', '.join(
                '%s %d' % kv for kv in sorted(answers.items()))))

    out.append('')
    out.append('Calls refused for bad input (refused events)')
    if not rep['refused']:
        out.append('  (none)')
    for (kind, pool), (n, b) in sorted(rep['refused'].items(), key=str):
        out.append('  %-16s %-9s %7d %12s' % (kind, pool, n, fmt_bytes(b)))
    return out


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


# The pool counters a space dump carries (done_preemptive_reclaim,
# fail_all_tickets), by counter name.
DUMP_COUNTERS = ('total', 'used', 'reserved', 'pinned', 'readonly',
                 'zone_unusable', 'may_use')


def counter_series(events, t0):
    """Each pool counter over time, for the plot: {(ctx, pool, counter):
    (seconds since t0, MiB)}, and the set of those drawn from samples.

    A counter whose events chain (each one starts from the value another
    one ended at, but the first) is exact: every change is there, and it
    held its first event's old value since the start of the trace.  When
    they do not (the library emits only some of them, or the tracer dropped
    some), or there are none at all, the counter is known at its events and
    at the space dumps only: the plot joins those samples as steps (each
    value holds until the next sample) and says so.
    """
    changes = defaultdict(list)          # key -> counter events
    dumps = defaultdict(list)            # (ctx, pool) -> dumps
    for e in events:
        if e['name'] == 'counter':
            changes[(e['ctx'], e['pool'], e['counter'])].append(e)
        elif e['name'] in ('done_preemptive_reclaim', 'fail_all_tickets'):
            dumps[(e['ctx'], e['pool'])].append(e)
    series, sparse = {}, set()
    for key, evs in changes.items():
        # Complete when every value a change started from is the value
        # another change ended at, but for the first: threads that change
        # may_use lock-free record their events in an order a little
        # different from that of their changes, so the test does not
        # depend on the order.
        unmatched = Counter(e['old'] for e in evs)
        unmatched.subtract(e['new_value'] for e in evs)
        if sum(v for v in unmatched.values() if v > 0) <= 1:
            xs, ys = [], []
            first = evs[0]
            if not (key[2] == 'total' and first['old'] == 0):
                # A total from 0 is the pool's creation: it starts there.
                xs.append(0.0)
                ys.append(first['old'] / 2**20)
            for e in evs:
                xs.append((e['ts'] - t0) / 1e9)
                ys.append(e['new_value'] / 2**20)
            series[key] = (xs, ys)
        else:
            sparse.add(key)
    # Sampled counters, and those with no event at all: their events and
    # the dumps, in time order.
    # A counter that never changed has no event (but its total, traced at
    # the pool's creation): one the dumps show non-zero is sampled.
    for (ctx, pool), ds in dumps.items():
        for counter in DUMP_COUNTERS:
            key = (ctx, pool, counter)
            if key not in changes and any(d[counter] for d in ds):
                sparse.add(key)
    for key in sparse:
        samples = [(e['ts'], e['new_value']) for e in changes.get(key, ())]
        samples += [(d['ts'], d[key[2]]) for d in dumps.get(key[:2], ())]
        samples.sort()
        series[key] = ([(t - t0) / 1e9 for t, _ in samples],
                       [v / 2**20 for _, v in samples])
    return series, sparse


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

    series, sparse = counter_series(events, t0)
    clamp = defaultdict(lambda: ([], []))
    for e in events:
        if e['name'] in ('done_preemptive_reclaim', 'fail_all_tickets'):
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
            sampled = (ctx, pool, counter) in sparse
            ax.step(xs + [end], ys + [ys[-1]], where='post',
                    label=counter + (' (sampled)' if sampled else ''),
                    linewidth=0.6 if busy else 1.4,
                    alpha=0.7 if busy else 1.0, zorder=1 if busy else 2,
                    color=COUNTER_COLOURS.get(counter),
                    marker='.' if sampled and len(xs) <= 200 else None,
                    markersize=3)
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
    # The sampled counters of the pools drawn.
    return sorted((k for k in sparse if k[:2] in set(pools) and
                   any(series.get(k, ((), ()))[1])), key=str)


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
    if args.backend == 'text' and not shutil.which('babeltrace2'):
        return ('--backend text needs the babeltrace2 program (Debian: '
                'babeltrace2)')
    return None


def _int_auto(s):
    return int(s, 0)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description='Summarise a libspacersv LTTng trace.')
    ap.add_argument('--version', action='version',
                    version='%(prog)s (libspacersv) ' + tool_version())
    ap.add_argument('trace', help='trace directory (lttng create --output)')
    ap.add_argument('--backend', choices=('auto', 'ctf', 'text', 'bt2'),
                    default='auto',
                    help='trace reader: ctf decodes the trace files '
                    'itself (the fastest), text parses the output of the '
                    'babeltrace2 program, bt2 uses its Python bindings '
                    '(default auto: ctf, or for a trace it cannot decode, '
                    'text if babeltrace2 is installed, else bt2)')
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
        # A selection must see every event; the plot needs the counters.
        lean = not args.plot and args.ctx is None and args.pool is None \
            and args.pid is None
        events, backend = load_events(args.trace, args.backend,
                                      skip=LEAN_SKIP if lean else ())
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
            sampled = plot(events, args.plot, rep=rep)
            print('plot written to %s' % args.plot)
            if sampled:
                print('plot: %d counter(s) drawn from samples (their counter '
                      'events do not chain: the library sampled them or the '
                      'tracer dropped some; space dumps added): %s' % (
                          len(sampled), ', '.join(
                              '%s %s' % (k[1], k[2]) for k in sampled)))
    except TraceError as e:
        print('srsv-report: %s' % e, file=sys.stderr)
        return 2
    if backend == 'bt2':
        print('(read with the bt2 Python bindings)', file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())
