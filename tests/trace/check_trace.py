#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check the trace that run-trace.sh recorded around trace_scenarios.

usage: check_trace.py --report tools/srsv-report.py --scenarios OUT TRACE

OUT is what trace_scenarios printed (SCENARIO / SNAPSHOT lines, PID).
The trace is read with tools/srsv-report.py's loader, through the
babeltrace2 text fallback and, when the bt2 bindings are importable,
through bt2 as well (both readings must be identical).  Then each scenario's
events are checked; every check prints "ok" or "not ok" and the script
exits 1 if any failed.
"""

import argparse
import errno
import importlib.util
import os
import subprocess
import sys
import tempfile

MIB = 1 << 20

failures = []


def check(cond, what):
    print('%s - %s' % ('ok' if cond else 'not ok', what))
    if not cond:
        failures.append(what)
    return cond


def load_report_module(path):
    # Do not write tools/__pycache__ into the source tree.
    sys.dont_write_bytecode = True
    spec = importlib.util.spec_from_file_location('srsv_report', path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def parse_scenarios(path):
    """{'PID': pid, 'SCENARIO': {name: {k: v}}, 'SNAPSHOT': {name: {...}}}"""
    out = {'PID': None, 'SCENARIO': {}, 'SNAPSHOT': {}, 'DONE': False}
    with open(path) as f:
        for line in f:
            words = line.split()
            if not words:
                continue
            if words[0] == 'PID':
                out['PID'] = int(words[1])
            elif words[0] == 'DONE':
                out['DONE'] = True
            elif words[0] in ('SCENARIO', 'SNAPSHOT'):
                kv = {}
                for w in words[2:]:
                    k, v = w.split('=', 1)
                    try:
                        kv[k] = int(v, 0)
                    except ValueError:
                        kv[k] = v
                out[words[0]][words[1]] = kv
    return out


def of(events, ctx, name=None, **fields):
    """Events of ctx (and name), whose fields equal @fields."""
    res = []
    for e in events:
        if e.get('ctx') != ctx:
            continue
        if name is not None and e['name'] != name:
            continue
        if all(e.get(k) == v for k, v in fields.items()):
            res.append(e)
    return res


def check_common(events, pid):
    check(len(events) > 0, 'the trace holds spacersv events')
    check(all(e.get('vpid') == pid for e in events),
          'every event carries the vpid context of the scenario process')
    # Manual mode: the library starts no thread, everything runs in main().
    check(all(e.get('vtid') == pid for e in events),
          'every event carries the vtid context (main thread)')
    enum_fields = ('pool', 'mode', 'state', 'reason', 'counter', 'op',
                   'type', 'kind')
    bad = [(e['name'], f, e[f]) for e in events for f in enum_fields
           if f in e and not isinstance(e[f], str)]
    check(not bad, 'every enum field is printed by name %s' % (bad[:3],))
    # Each counter's events chain: old == previous new_value.  The
    # scenarios are single-threaded, so the trace order is the change
    # order.
    last = {}
    broken = []
    for e in events:
        if e['name'] != 'counter':
            continue
        key = (e['ctx'], e['pool'], e['counter'])
        if e['new_value'] != (e['old'] + e['diff']) % (1 << 64):
            broken.append(('new_value', e))
        if key in last and last[key] != e['old']:
            broken.append(('chain', e))
        last[key] = e['new_value']
    check(not broken, 'counter events chain (old == previous new_value) %s'
          % (broken[:2],))
    # A pool's total is traced at its creation (old 0): a plot shows the
    # total of a pool that never grows.
    first_total = {}
    for e in events:
        if e['name'] == 'counter' and e['counter'] == 'total':
            first_total.setdefault((e['ctx'], e['pool']), e['old'])
    pools = {(e['ctx'], e['pool']) for e in events
             if e['name'] == 'counter'}
    check(pools and all(first_total.get(p) == 0 for p in pools),
          'every pool\'s total is traced from 0 at its creation (%d pools)'
          % len(pools))
    return last


def check_burst(events, sc):
    """20000 pairs: a reserve event each, may_use sampled per ms."""
    ctx = sc['ctx']
    print('# burst: ctx %#x' % ctx)
    res = of(events, ctx, 'reserve')
    check(len(res) == 20000, 'burst: one reserve event per reservation '
          '(%d)' % len(res))
    mu = [e for e in events if e['name'] == 'counter' and
          e.get('ctx') == ctx and e['counter'] == 'may_use']
    if res:
        span_ms = (res[-1]['ts'] - res[0]['ts']) / 1e6
        check(1 <= len(mu) <= span_ms + 2,
              'burst: may_use counter events sampled, at most one per '
              'millisecond (%d events in %.1f ms)' % (len(mu), span_ms))


def check_granted(events, sc):
    ctx, b = sc['ctx'], sc['bytes']
    print('# granted: ctx %#x' % ctx)
    adds = of(events, ctx, 'ticket_add', bytes=b)
    ends = of(events, ctx, 'ticket_end', bytes=b)
    check(len(adds) == 1 and adds[0]['mode'] == 'FLUSH_ALL'
          and adds[0]['pool'] == 'metadata' and adds[0]['priority'] == 0,
          'granted: one ticket_add (metadata, FLUSH_ALL, normal queue)')
    check(len(ends) == 1, 'granted: one ticket_end')
    if adds and ends:
        e = ends[0]
        check(e['error'] == 0, 'granted: ticket_end error 0 (got %s)'
              % e['error'])
        check(e['wait_ns'] > 0, 'granted: wait_ns > 0 (got %d)'
              % e['wait_ns'])
        check(e['mode'] == 'FLUSH_ALL', 'granted: ticket_end mode')
        check(adds[0]['ts'] <= e['ts'], 'granted: add before end')
    trig = of(events, ctx, 'trigger_flush', reason='enospc')
    check(len(trig) >= 1 and trig[0]['mode'] == 'FLUSH_ALL',
          'granted: trigger_flush(enospc, FLUSH_ALL)')
    fl = of(events, ctx, 'flush_space')
    check(len(fl) >= 1 and all(f['for_preempt'] == 0 for f in fl),
          'granted: flush_space by the ticket flusher (for_preempt=0)')
    check(fl and all('duration_ns' in f and f['called'] == 1 for f in fl),
          'granted: flush_space carries duration_ns and called=1')
    check(not of(events, ctx, 'flush_space', for_preempt=1),
          'granted: no preemptive flush (NO_PREEMPT ctx)')
    fill = of(events, ctx, 'reserve', bytes=64 * MIB, mode='NO_FLUSH')
    check(len(fill) == 1 and fill[0]['ret'] == 0,
          'granted: the NO_FLUSH fill is traced by reserve (ret 0)')


def check_refused(events, sc):
    ctx = sc['ctx']
    print('# refused: ctx %#x' % ctx)
    ref = [(e['pool'], e['kind'], e['bytes'])
           for e in of(events, ctx, 'refused')]
    check(ref == [('metadata', 'release', 2 * MIB),
                  ('metadata', 'pin', 4096),
                  ('metadata', 'rsv_release', 128 * 1024),
                  ('data', 'quota_release', 4096)],
          'refused: one event per refused call, kind and bytes (%s)' % ref)


def check_timeout(events, sc):
    ctx, b = sc['ctx'], sc['bytes']
    print('# timeout: ctx %#x' % ctx)
    adds = of(events, ctx, 'ticket_add', bytes=b)
    ends = of(events, ctx, 'ticket_end', bytes=b)
    check(len(adds) == 1, 'timeout: one ticket_add')
    check(len(ends) == 1 and ends[0]['error'] == -errno.ETIMEDOUT,
          'timeout: ticket_end error -ETIMEDOUT (got %s)'
          % [e['error'] for e in ends])
    if ends:
        # The deadline (5 ms) starts after the ticket was queued, so the
        # recorded wait cannot be shorter: this checks the unit (ns).
        check(ends[0]['wait_ns'] >= 5 * 1000 * 1000,
              'timeout: wait_ns >= the 5 ms timeout (got %d)'
              % ends[0]['wait_ns'])
    check(not of(events, ctx, 'flush_space'),
          'timeout: no flush ran (the pending flush was never run)')


DUMP_KEYS = ('total', 'used', 'pinned', 'reserved', 'may_use', 'readonly',
             'zone_unusable', 'reclaim_size', 'clamp', 'global_reserved',
             'trans_reserved', 'delayed_refs_reserved', 'delayed_reserved',
             'unallocated', 'delalloc', 'ordered')


def check_preempt(events, sc, snap):
    ctx = sc['ctx']
    print('# preempt: ctx %#x' % ctx)
    trig = of(events, ctx, 'trigger_flush', reason='preempt')
    check(len(trig) >= 1, 'preempt: trigger_flush(reason=preempt)')
    pf = of(events, ctx, 'flush_space', for_preempt=1)
    check(len(pf) >= 1, 'preempt: flush_space with for_preempt=1')
    # Reservations tied up in dirty data (delalloc > ordered, no block
    # rsvs): btrfs's preemptive flusher picks delalloc writeback.
    check(pf and all(f['state'] == 'DELALLOC' for f in pf),
          'preempt: the preemptive flushes are DELALLOC (%s)'
          % sorted({f['state'] for f in pf}))
    check(not of(events, ctx, 'flush_space', for_preempt=0),
          'preempt: no ticket flusher ran')
    dumps = of(events, ctx, 'done_preemptive_reclaim')
    check(len(dumps) == 1, 'preempt: one done_preemptive_reclaim (got %d)'
          % len(dumps))
    if not dumps:
        return
    d = dumps[0]
    check(d['pool'] == 'metadata', 'preempt: dump of the metadata pool')
    if pf:
        check(d['ts'] >= pf[-1]['ts'],
              'preempt: done_preemptive_reclaim after the last flush')
    diff = {k: (d[k], snap[k]) for k in DUMP_KEYS if d[k] != snap[k]}
    check(not diff, 'preempt: the dump equals the snapshot taken after '
          'the run (differences: %s)' % diff)


def check_fail_all(events, sc, snap):
    ctx, b = sc['ctx'], sc['bytes']
    print('# fail_all: ctx %#x' % ctx)
    check(len(of(events, ctx, 'ticket_add', bytes=b)) == 1,
          'fail_all: one ticket_add')
    fl = of(events, ctx, 'flush_space', for_preempt=0)
    check(len(fl) >= 1, 'fail_all: the ticket flusher called flush_space')
    dumps = of(events, ctx, 'fail_all_tickets')
    ends = of(events, ctx, 'ticket_end', bytes=b)
    check(len(dumps) >= 1, 'fail_all: fail_all_tickets dump')
    check(len(ends) == 1 and ends[0]['error'] == -errno.ENOSPC,
          'fail_all: ticket_end error -ENOSPC (got %s)'
          % [e['error'] for e in ends])
    if dumps and ends:
        d = dumps[-1]
        check(d['ts'] <= ends[0]['ts'],
              'fail_all: the dump is recorded before the ticket fails')
        # As btrfs, the dump shows the state the tickets fail in: the
        # ticket is still counted in reclaim_size.
        check(d['reclaim_size'] == b, 'fail_all: dump reclaim_size is the '
              'failing ticket (%d)' % d['reclaim_size'])
        for k in ('total', 'used', 'may_use', 'pinned', 'reserved'):
            check(d[k] == snap[k], 'fail_all: dump %s %d == snapshot %d'
                  % (k, d[k], snap[k]))


def check_rsv(events, sc):
    ctx, addr = sc['ctx'], sc['rsv']
    print('# rsv: ctx %#x rsv %#x' % (ctx, addr))
    evs = [e for e in of(events, ctx, 'rsv') if e['rsv'] == addr]
    ops = [(e['op'], e['bytes'], e['ret']) for e in evs]
    check(evs and all(e['type'] == 'temp' and e['pool'] == 'metadata'
                      for e in evs),
          'rsv: events of the temp rsv in the metadata pool')

    def index(op, b, ret):
        return ops.index((op, b, ret)) if (op, b, ret) in ops else -1

    i_add = index('add', 2 * MIB, 0)
    i_use = index('use', MIB, 0)
    i_rel = next((i for i, o in enumerate(ops) if o[0] == 'release'), -1)
    check(0 <= i_add < i_use < i_rel,
          'rsv: add(2 MiB), use(1 MiB), release traced in order %s' % ops)
    if index('use', 4 * MIB, -errno.ENOSPC) < 0:
        print('# note: the refused use (-ENOSPC) is not traced')


def check_quota(events, sc):
    qid = sc['id']
    print('# quota: id %d' % qid)
    evs = [(e['op'], e['kind'], e['bytes'], e['ret']) for e in events
           if e['name'] == 'quota' and e['id'] == qid]
    want = [('reserve', 'data', MIB, 0),
            ('reserve', 'data', 2 * MIB, -errno.EDQUOT),
            ('release', 'data', MIB // 2, 0),
            ('used', 'data', MIB // 2, 0),
            ('release', 'used', MIB // 2, 0)]
    pos = 0
    for ev in evs:
        if pos < len(want) and ev == want[pos]:
            pos += 1
    check(pos == len(want), 'quota: reserve ok, reserve -EDQUOT, release, '
          'charge used, free used, in order (%s)' % evs)


def check_nowait(events, sc, mod):
    """The reserve events of the NOWAIT scenario, and what the report
    makes of them."""
    ctx, b = sc['ctx'], sc['bytes']
    print('# nowait: ctx %#x' % ctx)
    res = [(e['flags'], e['bytes'], e['ret'])
           for e in of(events, ctx, 'reserve', pool='metadata')]
    want = [(1, b, 0), (0, 63 * b, 0), (1, b, -errno.EAGAIN),
            (1, b, -errno.EAGAIN), (0, b, -errno.ENOSPC)]
    check(res == want, 'nowait: reserve events carry the NOWAIT flag and '
          'the answers (%s)' % res)
    rep = mod.analyse(mod.select(events, ctx=ctx))
    got = {k: dict(v) for k, v in rep['nowait'].items()}
    check(got == {('metadata', 'NO_FLUSH'): {'granted': 1, '-EAGAIN': 2}},
          'report: NOWAIT summary counts 1 granted, 2 refused, and not '
          'the calls without the flag (%s)' % got)
    check(rep['nowait_refused_bytes'][('metadata', 'NO_FLUSH')] == 2 * b,
          'report: NOWAIT refused bytes (%d)'
          % rep['nowait_refused_bytes'][('metadata', 'NO_FLUSH')])
    text = '\n'.join(mod.format_refusals(rep))
    row = [ln for ln in text.splitlines()
           if ln.split()[:2] == ['metadata', 'NO_FLUSH']]
    check(len(row) == 1 and row[0].split()[2:7] ==
          ['3', '1', '2', '0', '66.7%'],
          'report: the NOWAIT row reads calls 3, granted 1, -EAGAIN 2, '
          'other 0, 66.7%% refused (%s)' % row)


def check_quota_report(events, sc, mod):
    """The quota refusals as the report summarises them."""
    qid = sc['id']
    rep = mod.analyse(events)
    got = dict(rep['quota'].get((qid, 'data'), {}))
    check(got == {'granted': 1, '-EDQUOT': 1, '-EAGAIN': 1},
          'report: quota summary of tenant %d: 1 granted, 1 -EDQUOT, '
          '1 -EAGAIN (NOWAIT) (%s)' % (qid, got))
    check(rep['quota_refused_bytes'][(qid, 'data')] == 4 * MIB,
          'report: quota refused bytes (%d)'
          % rep['quota_refused_bytes'][(qid, 'data')])
    text = '\n'.join(mod.format_refusals(rep))
    row = [ln for ln in text.splitlines()
           if ln.split()[:2] == [str(qid), 'data']]
    check(len(row) == 1 and row[0].split()[2:8] ==
          ['3', '1', '1', '1', '0', '66.7%'],
          'report: the quota row reads calls 3, granted 1, -EDQUOT 1, '
          '-EAGAIN 1, other 0, 66.7%% refused (%s)' % row)


def check_zoned(events, sc):
    g1, g2 = sc['g1'], sc['g2']
    print('# zoned: groups %#x %#x' % (g1, g2))
    act = [e for e in events if e['name'] == 'zone_activate']
    for g in (g1, g2):
        check(any(e['start'] == g and e['ret'] == 0 and e['kind'] == 'data'
                  for e in act), 'zoned: zone_activate(%#x) ok' % g)
    hints = [e for e in events if e['name'] == 'zone_hint'
             and e['bytes'] == sc['bytes']]
    check(len(hints) == 1, 'zoned: one zone_hint for %d bytes' % sc['bytes'])
    if hints:
        h = hints[0]
        check(h['kind'] == 'data' and h['pool'] == 'data',
              'zoned: hint kind and pool are data')
        check(h['chosen'] == g2, 'zoned: hint chose the group with room '
              '(%#x, want %#x)' % (h['chosen'], g2))
        check(h['looked'] == 2, 'zoned: hint looked at 2 active groups '
              '(got %d)' % h['looked'])
    fin = [e for e in events if e['name'] == 'zone_finish']
    check(any(e['start'] == g1 and e['wasted'] == sc['wasted'] for e in fin),
          'zoned: zone_finish(%#x) wasted %d (%s)'
          % (g1, sc['wasted'], [(e['start'], e['wasted']) for e in fin]))


def check_bgroup(events, sc):
    a, b, c = sc['a'], sc['b'], sc['c']
    print('# bgroup: chunks %#x %#x %#x' % (a, b, c))

    def starts(name):
        return [e['start'] for e in events
                if e['name'] == name and e['start'] in (a, b, c)]
    check(starts('add_reclaim_block_group') == [a],
          'bgroup: add_reclaim_block_group for A only (%s)'
          % starts('add_reclaim_block_group'))
    rec = [e for e in events if e['name'] == 'reclaim_block_group'
           and e['start'] == a]
    check(len(rec) == 1 and rec[0]['used'] == sc['moved']
          and rec[0]['pool'] == 'data' and rec[0]['length'] == 1 << 30,
          'bgroup: reclaim_block_group(A) with %d bytes to move (%s)'
          % (sc['moved'], rec))
    check(starts('add_unused_block_group') == [a, b, c],
          'bgroup: add_unused_block_group for A, B, C in order (%s)'
          % starts('add_unused_block_group'))
    check(starts('skip_unused_block_group') == [c],
          'bgroup: skip_unused_block_group for C (pinned) (%s)'
          % starts('skip_unused_block_group'))
    check(starts('remove_block_group') == [a, b],
          'bgroup: remove_block_group for A and B (%s)'
          % starts('remove_block_group'))
    order = [e['name'] for e in events if e['name'].endswith('block_group')
             and e.get('start') == a]
    check(order == ['add_reclaim_block_group', 'reclaim_block_group',
                    'add_unused_block_group', 'remove_block_group'],
          'bgroup: A\'s events in the order of its life (%s)' % order)


def check_report_tool(report_path, mod, events, trace):
    print('# tools/srsv-report.py')
    rep = mod.analyse(events)
    check(rep['outcomes'].get('granted', 0) >= 1
          and rep['outcomes'].get('-ETIMEDOUT', 0) >= 1
          and rep['outcomes'].get('-ENOSPC', 0) >= 1,
          'report: outcomes count granted, -ETIMEDOUT, -ENOSPC (%s)'
          % dict(rep['outcomes']))
    check(rep['flushes'].get(('DELALLOC', 'preempt'), 0) >= 1,
          'report: DELALLOC flushes from the preemptive source')
    check(sum(rep['wait_hist']['FLUSH_ALL'].values()) ==
          len([e for e in events if e['name'] == 'ticket_end'
               and e['mode'] == 'FLUSH_ALL']),
          'report: the FLUSH_ALL histogram counts every FLUSH_ALL ticket')
    text = mod.format_report(rep)
    check('FLUSH_ALL' in text and 'DELALLOC' in text,
          'report: text names modes and states')
    # Why: the granted scenario's ticket waited behind the flush states
    # the async walk ran while it was queued.
    granted = [e['ctx'] for e in events if e['name'] == 'ticket_end'
               and e['error'] == 0]
    why = rep['why'].get((granted[0], 'metadata')) if granted else None
    check(why is not None and why['stalled_ns'] > 0 and why['waited'],
          'report: the granted ticket\'s stall and the states it waited '
          'behind (%s)' % (dict(why['waited']) if why else None))
    check('Why writers waited' in text and 'mostly behind' in text
          and 'timeline' in text,
          'report: text says why writers waited, with a timeline')
    # The command line, end to end, with the interpreter running us.
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, report_path, trace]
        png = os.path.join(tmp, 'plot.png')
        if have_module('matplotlib'):
            cmd += ['--plot', png]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE,
                              universal_newlines=True)
        check(proc.returncode == 0 and 'Ticket waits' in proc.stdout,
              'report: command line exits 0 (%d) %s'
              % (proc.returncode, proc.stderr.strip()[-200:]))
        bad = subprocess.run([sys.executable, report_path, trace,
                              '--pool', 'nosuch'], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE,
                             universal_newlines=True)
        check(bad.returncode == 2 and 'nosuch' in bad.stderr,
              'report: --pool nosuch is an error (%d)' % bad.returncode)
        if '--plot' in cmd:
            ok = False
            if os.path.exists(png):
                with open(png, 'rb') as f:
                    ok = f.read(8) == b'\x89PNG\r\n\x1a\n'
            check(ok, 'report: --plot wrote a PNG')
        else:
            print('# matplotlib not importable: --plot not exercised')


def check_lean(mod, trace, events):
    """Counting the counter events instead of building them (what the
    report does without --plot) changes no figure of the report, with
    every reader."""
    full = mod.format_report(mod.analyse(events))
    backends = ['ctf', 'text'] + (['bt2'] if mod.have_bt2() else [])
    for backend in backends:
        lean, _ = mod.load_events(trace, backend, skip=mod.LEAN_SKIP)
        n = sum(1 for e in events if e['name'] == 'counter')
        check(n > 0 and lean.skipped['counter'] == n and
              not any(e['name'] == 'counter' for e in lean),
              'lean %s reader: %d counter events counted, none built'
              % (backend, lean.skipped['counter']))
        text = mod.format_report(mod.analyse(lean))
        check(text == full, 'lean %s reader: the same report as with every '
              'event built' % backend)


def have_module(name):
    return importlib.util.find_spec(name) is not None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", action="version",
                    version="%(prog)s (libspacersv)")
    ap.add_argument('--report', required=True)
    ap.add_argument('--scenarios', required=True)
    ap.add_argument('--scenario-checks-only', action='store_true',
                    help='skip the bt2 comparison and the report tool '
                    '(the harness self-test)')
    ap.add_argument('trace')
    args = ap.parse_args()

    mod = load_report_module(args.report)
    sc = parse_scenarios(args.scenarios)
    check(sc['DONE'] and sc['PID'] is not None,
          'the scenario program ran to the end')
    if sc['PID'] is None:
        return 1

    events, _ = mod.load_events(args.trace, 'text')
    check(events.discarded == 0, 'the tracer discarded no event (%d)'
          % events.discarded)
    if not args.scenario_checks_only:
        ev_ctf, _ = mod.load_events(args.trace, 'ctf')
        check(ev_ctf == events and ev_ctf.discarded == events.discarded,
              'the CTF reader and the babeltrace2 text fallback read the '
              'same events (%d and %d)' % (len(ev_ctf), len(events)))
        check_lean(mod, args.trace, events)
    if args.scenario_checks_only:
        pass
    elif mod.have_bt2():
        ev_bt2, _ = mod.load_events(args.trace, 'bt2')
        check(ev_bt2 == events,
              'bt2 and the babeltrace2 text fallback read the same events')
    else:
        print('# bt2 not importable by %s: text reader only'
              % sys.executable)
    # No filtering by process: run-trace.sh tracks the scenario process
    # only, so every event must be its own (check_common checks it).

    check_common(events, sc['PID'])
    S, P = sc['SCENARIO'], sc['SNAPSHOT']
    for name in ('granted', 'burst', 'refused', 'timeout', 'preempt',
                 'fail_all', 'rsv', 'nowait'):
        check(name in S, 'scenario %s ran' % name)
    if 'granted' in S:
        check_granted(events, S['granted'])
    if 'burst' in S:
        check_burst(events, S['burst'])
    if 'refused' in S:
        check_refused(events, S['refused'])
    if 'timeout' in S:
        check_timeout(events, S['timeout'])
    if 'preempt' in S and 'preempt' in P:
        check_preempt(events, S['preempt'], P['preempt'])
    if 'fail_all' in S and 'fail_all' in P:
        check_fail_all(events, S['fail_all'], P['fail_all'])
    if 'rsv' in S:
        check_rsv(events, S['rsv'])
    if 'nowait' in S and not args.scenario_checks_only:
        check_nowait(events, S['nowait'], mod)
    check('bgroup' in S, 'scenario bgroup ran')
    if 'bgroup' in S:
        check_bgroup(events, S['bgroup'])
    if 'quota' in S:
        check_quota(events, S['quota'])
        if not args.scenario_checks_only:
            check_quota_report(events, S['quota'], mod)
    else:
        print('# quota scenario not built (no quota API yet)')
    if 'zoned' in S:
        check_zoned(events, S['zoned'])
    else:
        print('# zoned scenario not built (no zoned API yet)')
    if not args.scenario_checks_only:
        check_report_tool(args.report, mod, events, args.trace)

    if failures:
        print('%d check(s) failed' % len(failures))
        return 1
    print('all checks passed')
    return 0


if __name__ == '__main__':
    sys.exit(main())
