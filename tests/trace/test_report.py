#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Unit tests of tools/srsv-report.py that need no tracer.

usage: test_report.py tools/srsv-report.py

The events are babeltrace2 text lines written here, read through the
report's own line parser, so that each figure the report prints can be
predicted exactly:

- the NOWAIT summary (reserve events with the NOWAIT flag: calls, granted,
  -EAGAIN, other answers, bytes refused), the NOWAIT reservations pacing
  let through, the quota summary (quota events, op reserve, per tenant and
  kind; quota flushes), the calls refused for bad input;
- counted events (load_events()'s skip, LEAN_SKIP): the event counts, the
  pools and the time span of the report do not change when counter events
  and the reserve events without the NOWAIT flag are counted instead of
  built;
- sparse counter events: a counter whose events all chain, even recorded
  out of order by several threads, is drawn exactly; one with events
  missing (sampled), or with none but the space dumps, is drawn from
  samples and said to be.

Exit status 0 when every test passed (unittest).
"""
import importlib.util
import sys
import unittest

MIB = 1 << 20
CTX = 0x55d0c3a2b2a0
BASE = 1796308591


def load(path):
    sys.dont_write_bytecode = True
    spec = importlib.util.spec_from_file_location('srsv_report', path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def enum(label, value):
    return '( "%s" : container = %d )' % (label, value)


POOLS = {'data': 0, 'metadata': 1, 'system': 2}
MODES = {'NO_FLUSH': 0, 'FLUSH_DATA': 3, 'FLUSH_ALL': 5}
COUNTERS = {'total': 0, 'used': 1, 'may_use': 6}


def line(us, name, fields, ctx=True):
    """One line of `babeltrace2 --clock-seconds --no-delta` output, @us
    microseconds into the trace."""
    ns = us * 1000
    head = '[%d.%09d] host spacersv:%s: { cpu_id = 0 }, ' \
        '{ vpid = 42, vtid = 43 }, { ' % (BASE + ns // 10**9, ns % 10**9,
                                          name)
    if ctx:
        fields = [('ctx', '0x%X' % CTX)] + fields
    return head + ', '.join('%s = %s' % kv for kv in fields) + ' }'


def reserve(us, pool, mode, nbytes, flags, ret):
    return line(us, 'reserve', [
        ('pool', enum(pool, POOLS[pool])), ('bytes', nbytes),
        ('mode', enum(mode, MODES[mode])), ('flags', '0x%X' % flags),
        ('ret', ret)])


def quota(us, qid, op, kind, nbytes, ret):
    ops = {'reserve': 0, 'release': 1, 'flush': 4}
    kinds = {'none': -2, 'data': 0, 'meta_prealloc': 1}
    return line(us, 'quota', [
        ('id', qid), ('op', enum(op, ops[op])),
        ('kind', enum(kind, kinds[kind])), ('bytes', nbytes), ('ret', ret)],
        ctx=False)


def counter(us, pool, name, old, diff):
    return line(us, 'counter', [
        ('pool', enum(pool, POOLS[pool])),
        ('counter', enum(name, COUNTERS[name])), ('old', old),
        ('diff', diff), ('new_value', old + diff)])


def dump(us, pool, **values):
    fields = [('pool', enum(pool, POOLS[pool]))]
    for k in ('total', 'used', 'pinned', 'reserved', 'may_use', 'readonly',
              'zone_unusable', 'reclaim_size', 'clamp', 'global_reserved',
              'trans_reserved', 'delayed_refs_reserved', 'delayed_reserved',
              'unallocated', 'delalloc', 'ordered'):
        fields.append((k, values.get(k, 0)))
    return line(us, 'done_preemptive_reclaim', fields)


class ReportTest(unittest.TestCase):
    mod = None

    def events(self, lines):
        ev = self.mod.EventList(self.mod.parse_text_line(ln) for ln in lines)
        ev.sort(key=lambda e: e['ts'])
        return ev

    def test_lines_parse(self):
        e = self.mod.parse_text_line(reserve(5, 'metadata', 'NO_FLUSH',
                                             4096, 1, -11))
        self.assertEqual(e['name'], 'reserve')
        self.assertEqual(e['ts'], BASE * 10**9 + 5000)
        self.assertEqual((e['ctx'], e['pool'], e['mode'], e['flags'],
                          e['ret']), (CTX, 'metadata', 'NO_FLUSH', 1, -11))

    def test_nowait_summary(self):
        ev = self.events([
            reserve(1, 'metadata', 'NO_FLUSH', MIB, 1, 0),
            reserve(2, 'metadata', 'NO_FLUSH', MIB, 1, -11),
            reserve(3, 'metadata', 'NO_FLUSH', 2 * MIB, 1, -11),
            reserve(4, 'metadata', 'NO_FLUSH', MIB, 1, -22),
            # Not NOWAIT: not in the summary.
            reserve(5, 'metadata', 'NO_FLUSH', MIB, 0, -28),
            reserve(6, 'data', 'NO_FLUSH', 4096, 1, 0),
            line(7, 'pace', [('pool', enum('metadata', 1)),
                             ('bytes', 4096), ('delay_ns', 1500),
                             ('slept_ns', 0), ('bw', 1), ('fill_pm', 900),
                             ('nowait', 1)]),
            line(8, 'pace', [('pool', enum('metadata', 1)),
                             ('bytes', 4096), ('delay_ns', 9999),
                             ('slept_ns', 9999), ('bw', 1),
                             ('fill_pm', 900), ('nowait', 0)]),
        ])
        rep = self.mod.analyse(ev)
        md = dict(rep['nowait'][('metadata', 'NO_FLUSH')])
        self.assertEqual(md, {'granted': 1, '-EAGAIN': 2, '-EINVAL': 1})
        self.assertEqual(dict(rep['nowait'][('data', 'NO_FLUSH')]),
                         {'granted': 1})
        self.assertEqual(len(rep['nowait']), 2)
        self.assertEqual(
            rep['nowait_refused_bytes'][('metadata', 'NO_FLUSH')], 4 * MIB)
        self.assertEqual(rep['nowait_paced']['metadata'], [1, 1500])
        text = self.mod.format_report(rep)
        rows = {tuple(ln.split()[:2]): ln.split()[2:] for ln in
                text.splitlines() if ln.startswith('  metadata  NO_FLUSH')
                or ln.startswith('  data      NO_FLUSH')}
        self.assertEqual(rows[('metadata', 'NO_FLUSH')],
                         ['4', '1', '2', '1', '75.0%', '4.0MiB'])
        self.assertEqual(rows[('data', 'NO_FLUSH')],
                         ['1', '1', '0', '0', '0.0%', '0B'])
        self.assertIn('other answers: -EINVAL 1', text)
        self.assertIn('metadata: 1 NOWAIT reservation(s) past pacing', text)
        self.assertIn('1.5us of delay', text)

    def test_quota_summary(self):
        ev = self.events([
            quota(1, 7, 'reserve', 'data', MIB, 0),
            quota(2, 7, 'reserve', 'data', 3 * MIB, -122),
            quota(3, 7, 'reserve', 'meta_prealloc', 65536, -122),
            quota(4, 7, 'reserve', 'data', MIB, -11),
            quota(5, 7, 'flush', 'none', 0, 0),
            quota(6, 7, 'flush', 'none', 0, -5),
            quota(7, 9, 'reserve', 'data', 4096, 0),
            quota(8, 9, 'release', 'data', 4096, 0),
        ])
        rep = self.mod.analyse(ev)
        self.assertEqual(dict(rep['quota'][(7, 'data')]),
                         {'granted': 1, '-EDQUOT': 1, '-EAGAIN': 1})
        self.assertEqual(dict(rep['quota'][(7, 'meta_prealloc')]),
                         {'-EDQUOT': 1})
        self.assertEqual(dict(rep['quota'][(9, 'data')]), {'granted': 1})
        self.assertEqual(rep['quota_refused_bytes'][(7, 'data')], 4 * MIB)
        self.assertEqual(dict(rep['quota_flushes'][7]),
                         {'ok': 1, '-EIO': 1})
        text = self.mod.format_report(rep)
        rows = [ln.split() for ln in text.splitlines()
                if ln.startswith('  7 ') or ln.startswith('  9 ')]
        self.assertIn(['7', 'data', '3', '1', '1', '1', '0', '66.7%',
                       '4.0MiB'], rows)
        self.assertIn(['7', 'meta_prealloc', '1', '0', '1', '0', '0',
                       '100.0%', '64.0KiB'], rows)
        self.assertIn(['9', 'data', '1', '1', '0', '0', '0', '0.0%', '0B'],
                      rows)
        self.assertIn('quota flushes of tenant 7: 2 (-EIO 1, ok 1)', text)

    def test_refused_and_empty(self):
        ev = self.events([
            line(1, 'refused', [('pool', enum('metadata', 1)),
                                ('kind', enum('release', 0)),
                                ('bytes', 2 * MIB)]),
            line(2, 'refused', [('pool', enum('metadata', 1)),
                                ('kind', enum('release', 0)),
                                ('bytes', MIB)]),
        ])
        text = self.mod.format_report(self.mod.analyse(ev))
        self.assertIn('  release          metadata        2       3.0MiB',
                      text)
        # Nothing NOWAIT, nothing quota: said, not left out.
        sect = text.split('NOWAIT reservations')[1].splitlines()
        self.assertEqual(sect[1], '  (none)')
        sect = text.split('Quota reservations')[1].splitlines()
        self.assertEqual(sect[1], '  (none)')

    def test_counted_events_change_nothing(self):
        lines = [counter(0, 'system', 'total', 0, 8 * MIB),
                 counter(1, 'metadata', 'total', 0, 64 * MIB),
                 reserve(2, 'metadata', 'FLUSH_ALL', MIB, 0, 0),
                 counter(3, 'metadata', 'may_use', 0, MIB),
                 reserve(4, 'metadata', 'NO_FLUSH', MIB, 1, -11),
                 counter(9, 'metadata', 'may_use', MIB, -MIB)]
        full = self.events(lines)
        # What the report counts rather than builds: every counter event
        # and the reserve events without the NOWAIT flag.
        rules = self.mod._skip_rules(self.mod.LEAN_SKIP)
        lean = self.mod.EventList()
        for e in full:
            if self.mod._counted(rules, e):
                lean.note_skipped(e['name'], e['ts'], (e['ctx'], e['pool']))
            else:
                lean.append(e)
        self.assertEqual([(e['name'], e['flags']) for e in lean],
                         [('reserve', 1)])
        a = self.mod.format_report(self.mod.analyse(full))
        b = self.mod.format_report(self.mod.analyse(lean))
        self.assertEqual(a, b)
        self.assertIn('over 0.000 s', a)
        self.assertIn('counter=4', a)
        self.assertIn('reserve=2', a)
        self.assertIn('system@%#x' % CTX, b)
        rep = self.mod.analyse(lean)
        self.assertEqual(rep['last_ts'] - rep['first_ts'], 9000)

    def test_counters_complete_even_out_of_order(self):
        # Two threads change may_use lock-free; their events come out in
        # another order than their changes (1 MiB then 2 MiB were taken;
        # the second was recorded first).
        ev = self.events([
            counter(1, 'metadata', 'total', 0, 64 * MIB),
            counter(2, 'metadata', 'may_use', MIB, 2 * MIB),
            counter(3, 'metadata', 'may_use', 0, MIB),
            counter(4, 'metadata', 'may_use', 3 * MIB, -3 * MIB),
        ])
        series, sparse = self.mod.counter_series(ev, ev[0]['ts'])
        self.assertEqual(sparse, set())
        xs, ys = series[(CTX, 'metadata', 'may_use')]
        # Exact: held the first event's old value from the start.
        self.assertEqual(ys, [1, 3, 1, 0])
        self.assertEqual(xs[0], 0.0)

    def test_counters_sampled(self):
        # may_use sampled (the changes between its events are missing);
        # pinned has no event at all, but the dumps show it.
        ev = self.events([
            counter(1, 'metadata', 'total', 0, 64 * MIB),
            counter(2, 'metadata', 'may_use', 0, MIB),
            counter(5, 'metadata', 'may_use', 5 * MIB, MIB),
            dump(6, 'metadata', total=64 * MIB, may_use=4 * MIB,
                 pinned=2 * MIB),
            counter(8, 'metadata', 'may_use', 9 * MIB, -MIB),
            dump(9, 'metadata', total=64 * MIB, may_use=8 * MIB,
                 pinned=MIB),
        ])
        t0 = ev[0]['ts']
        series, sparse = self.mod.counter_series(ev, t0)
        self.assertEqual(sparse, {(CTX, 'metadata', 'may_use'),
                                  (CTX, 'metadata', 'pinned')})
        xs, ys = series[(CTX, 'metadata', 'may_use')]
        # Samples in time order: events' new values and the dumps'.
        self.assertEqual(ys, [1, 6, 4, 8, 8])
        self.assertEqual(xs, [0.000001, 0.000004, 0.000005, 0.000007,
                              0.000008])
        self.assertEqual(series[(CTX, 'metadata', 'pinned')][1], [2, 1])
        # total chains (a single event from 0): exact.
        self.assertEqual(series[(CTX, 'metadata', 'total')][1], [64])
        # readonly is 0 in every dump and has no event: not drawn.
        self.assertNotIn((CTX, 'metadata', 'readonly'), series)
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return
        import os
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            png = os.path.join(tmp, 'p.png')
            sampled = self.mod.plot(ev, png)
            self.assertTrue(os.path.getsize(png) > 0)
        self.assertEqual(sampled, [(CTX, 'metadata', 'may_use'),
                                   (CTX, 'metadata', 'pinned')])


def main():
    if len(sys.argv) < 2:
        print(__doc__.splitlines()[2], file=sys.stderr)
        return 2
    ReportTest.mod = load(sys.argv.pop(1))
    prog = unittest.main(exit=False, verbosity=2)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == '__main__':
    sys.exit(main())
