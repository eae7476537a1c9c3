#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the hand-made seeds of the API fuzzer's corpus.

    tests/fuzz/make-seeds.py [--out DIR] [--list]

Each seed is a program in fuzz_api.c's input language: a setup (the ctx's
configuration and the engine's script), then ops.  This file speaks that
language through a few encoders that mirror the harness's readers (rd8,
rd_size, rd_pool, rd_mode, rd_flags, ...); the op bytes come from the op
table of fuzz_api.c itself, so that they follow the table's weights.  A
change of the harness's decoding must be mirrored here, and the seeds
written again: `meson test fuzz-corpus` replays them (an input that no
longer reaches its calls still passes, so check the new ones with
FUZZ_TRACE=1 fuzz_replay FILE, which prints each op).

The seeds written here (--list prints them) reach the pool calls added
after the corpus was first built: the movers' reserve (creation, refill
on unpin / free_reserved / clear_readonly / grow, movers passing queued
writers, a data mover's priority ticket and its forced growth),
srsv_space_reserve_partial() (all of its steps), srsv_ctx_clear_error()
and error_failures, srsv_space_set_reclaimable() and
srsv_space_load_used(), and a TREELOG rsv's fallback chain.
"""
import argparse
import os
import re
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

KIB = 1 << 10
MIB = 1 << 20

# enum srsv_pool, enum srsv_flush, flags (include/libspacersv/*.h)
DATA, METADATA, SYSTEM, MIXED, NULL_POOL = 0, 1, 2, 3, 4
NO_FLUSH, LIMIT, EVICT, FLUSH_DATA, FSI, ALL, ALL_STEAL, EMERGENCY = range(8)
NOWAIT, MOVER = 1, 2

# enum srsv_flush_state
(ITEMS_NR, ITEMS, REFS_NR, REFS, DELALLOC, DELALLOC_WAIT, DELALLOC_FULL,
 ALLOC_CHUNK, ALLOC_CHUNK_FORCE, IPUTS, COMMIT, RESET_ZONES, RECLAIM_ZONES,
 RECLAIM_CHUNKS) = range(1, 15)
STATE_COUNT = 15

# fuzz_api.c enum engine_op
(EO_NOP, EO_UNPIN, EO_RELEASE, EO_GROW, EO_FREE_RESERVED, EO_REENTER_NOFLUSH,
 EO_REENTER_FLUSH, EO_RSV_RELEASE, EO_QUOTA_COMMIT, EO_SET_ERROR, EO_NESTED,
 EO_BG_ADD, EO_BG_COMMIT, EO_BG_RELOCATE) = range(14)

# rsv types (rsv.h) and the harness's rsv indices
RSV_TREELOG, RSV_TEMP = 6, 8
RSV_GLOBAL_IDX = 0
USER_RSV0 = 9			# SRSV_RSV_TYPE_COUNT: the first caller-owned rsv


def op_bytes():
    """The byte that picks each op: the start of its range in the table."""
    src = open(os.path.join(HERE, 'fuzz_api.c')).read()
    enum = re.search(r'enum \{\s*(OP_RESERVE,.*?OP_COUNT)\s*\};', src, re.S)
    names = [n.strip() for n in re.sub(r'/\*.*?\*/', '', enum.group(1),
                                       flags=re.S).split(',')]
    names = [n for n in names if n and n != 'OP_COUNT']
    weights = dict(re.findall(r'\[(OP_\w+)\] = \{ "[^"]*", (\d+) \}', src))
    at, start = 0, {}
    for n in names:
        start[n] = at
        at += int(weights[n])
    if at > 256:
        sys.exit('make-seeds: the op weights pass 256')
    return start


OPS = op_bytes()


def u8(v):
    return bytes([v & 0xff])


def size(v):
    """rd_size(): the shortest encoding of @v bytes."""
    if v % (4 * KIB) == 0 and 1 <= v // (4 * KIB) <= 64:
        return bytes([0x00, v // (4 * KIB) - 1])
    if v % (64 * KIB) == 0 and 1 <= v // (64 * KIB) <= 64:
        return bytes([0x60, v // (64 * KIB) - 1])
    if v % MIB == 0 and 1 <= v // MIB <= 16:
        return bytes([0xa0, v // MIB - 1])
    if 1 <= v <= 256:
        return bytes([0x80, v - 1])
    return bytes([0xe0]) + struct.pack('>Q', v)


def flags_byte(f):
    """rd_flags() on a ctx set up with movers (setup flag 0x20)."""
    return {0: 2, NOWAIT: 0, MOVER: 1, MOVER | NOWAIT: 4}[f]


def mode_byte(m):
    return bytes([m])


class Seed:
    def __init__(self, setup_flags, pools, unallocated_mib, global_64k=0,
                 movers=(0, 0, 0, 0), script=None, quota_flush=False):
        """pools: MiB of DATA, METADATA, SYSTEM (x256 KiB units of 1 MiB)
        and MIXED; movers: the movers' reserve of each, in 512 KiB."""
        b = bytearray()
        b += u8(setup_flags)
        b += u8(1 if quota_flush else 0)
        for k in range(4):
            n = 8 if k == SYSTEM else 64
            units = pools[k] * 4		# 256 KiB units
            if units >= n:
                sys.exit('make-seeds: pool %d too large' % k)
            b += u8(units + n * movers[k])
        b += u8(unallocated_mib)
        b += u8(1)			# metadata raid factor
        b += u8(global_64k)		# global rsv, in 64 KiB
        b += u8(0)			# zone bytes: 1 MiB
        b += u8(0) + u8(0)		# no bad DATA pool, no data chunk size
        b += u8(0) * 4			# default state arrays
        script = script or {}
        for st in range(1, STATE_COUNT):
            op, arg, ret = script.get(st, (EO_NOP, 4 * KIB, 0))
            b += u8(op)
            if op == EO_SET_ERROR:
                b += u8(0xff)		# really set it (else NOP)
            b += size(arg)
            b += u8({0: 0, -95: 3, -28: 4, -5: 5}[ret])
        b += u8(1) + u8(1)		# quota flush and zone reset return 0
        self.b = b

    def op(self, name, *args):
        self.b += u8(OPS[name])
        for a in args:
            self.b += a
        return self

    # the ops, as the harness reads them
    def reserve(self, pool, mode, nbytes, flags=0):
        return self.op('OP_RESERVE', u8(pool), mode_byte(mode), size(nbytes),
                       u8(flags_byte(flags)))

    def ticket(self, slot, pool, mode, nbytes, flags=0):
        return self.op('OP_TICKET', u8(slot), u8(pool), mode_byte(mode),
                       size(nbytes), u8(flags_byte(flags)))

    def wait(self, slot):
        return self.op('OP_WAIT', u8(slot))

    def wait0(self, slot):
        return self.op('OP_WAIT0', u8(slot))

    def run(self):
        return self.op('OP_RUN')

    def release(self, pool, nbytes):
        return self.op('OP_RELEASE', u8(pool), u8(0xff), size(nbytes))

    def transition(self, which, pool, nbytes):
        """0 alloc, 1 free_reserved, 2 commit_used, 3 pin, 4 unpin,
        5 grow, 6 shrink, 7 clear_readonly."""
        return self.op('OP_TRANSITION', u8(which), u8(pool), u8(0xff),
                       size(nbytes))

    def readonly(self, pool, nbytes, force=False):
        return self.op('OP_READONLY', u8(pool), size(nbytes),
                       u8(1 if force else 0))

    def set_error(self):
        return self.op('OP_ERROR', u8(0), u8(0xff))

    def clear_error(self):
        return self.op('OP_CLEAR_ERROR')

    def set_reclaimable(self, pool, state, nbytes):
        if nbytes == 0:
            return self.op('OP_SET_RECLAIMABLE', u8(pool), u8(state + 1),
                           u8(0))
        return self.op('OP_SET_RECLAIMABLE', u8(pool), u8(state + 1), u8(32),
                       size(nbytes))

    def load_used(self, pool, nbytes):
        return self.op('OP_LOAD_USED', u8(pool), size(nbytes))

    def partial(self, pool, mode, lo, hi, flags=0):
        """max = min + extra (hi > lo), or max = min (hi == lo)."""
        if hi == lo:
            return self.op('OP_RESERVE_PARTIAL', u8(pool), mode_byte(mode),
                           u8(224), size(lo), u8(flags_byte(flags)))
        return self.op('OP_RESERVE_PARTIAL', u8(pool), mode_byte(mode), u8(0),
                       size(lo), size(hi - lo), u8(flags_byte(flags)))

    def rsv_init(self, user, pool, rtype):
        return self.op('OP_RSV_INIT', u8(user), u8(pool), u8(rtype))

    def rsv_fallback(self, idx, nbytes):
        return self.op('OP_RSV_FALLBACK', u8(idx), size(nbytes))

    def resize_global(self, units_64k):
        return self.op('OP_GLOBAL', u8(0), u8(units_64k))


def use_and_pin(s, pool, nbytes):
    """Reserve, allocate, reference and free @nbytes (pinned)."""
    s.reserve(pool, NO_FLUSH, nbytes)
    s.transition(0, pool, nbytes)
    s.transition(2, pool, nbytes)
    s.transition(3, pool, nbytes)
    return s


def seeds():
    out = {}
    MOV = 0x20

    # The movers' reserve of a data pool: filled at creation, served to
    # movers past a queued writer, a data mover's priority ticket forcing
    # growth (the engine grows by 1 MiB), refilled by unpin,
    # free_reserved, clear_readonly and grow before tickets.
    s = Seed(MOV, pools=(8, 8, 1, 0), unallocated_mib=64,
             movers=(2, 1, 0, 0),
             script={ALLOC_CHUNK_FORCE: (EO_GROW, MIB, 0),
                     COMMIT: (EO_UNPIN, 16 * MIB, 0)})
    use_and_pin(s, DATA, 4 * MIB)
    s.reserve(DATA, FLUSH_DATA, 3 * MIB)
    s.ticket(0, DATA, FLUSH_DATA, 2 * MIB)		# a writer queues
    s.reserve(DATA, FLUSH_DATA, 512 * KIB, MOVER)	# from the reserve
    s.reserve(DATA, NO_FLUSH, 512 * KIB, MOVER)
    s.reserve(DATA, FLUSH_DATA, MIB, MOVER)		# priority ticket: grow
    s.transition(4, DATA, MIB)				# unpin: refill first
    s.transition(4, DATA, 3 * MIB)			# then the writer
    s.wait0(0)
    s.reserve(DATA, FLUSH_DATA, MIB, MOVER | NOWAIT)	# empties it
    s.readonly(DATA, 256 * KIB)
    s.transition(7, DATA, 256 * KIB)			# clear_readonly
    s.reserve(DATA, NO_FLUSH, 512 * KIB)
    s.transition(0, DATA, 512 * KIB)
    s.transition(1, DATA, 512 * KIB)			# free_reserved
    s.transition(5, DATA, 2 * MIB)			# grow: the rest
    s.release(DATA, MIB)
    s.run()
    out['seed-movers-data'] = s

    # Metadata movers: a FLUSH_ALL_STEAL mover queues with the priority
    # tickets (ahead of a LIMIT one, past a normal one), walks the
    # priority array and steals from the global reserve; then unpins
    # refill the global reserve first, the movers' reserve second, and
    # only what is left reaches the tickets.
    s = Seed(MOV, pools=(4, 8, 1, 0), unallocated_mib=0, global_64k=8,
             movers=(0, 2, 0, 0),
             script={COMMIT: (EO_UNPIN, 64 * KIB, 0)})
    use_and_pin(s, METADATA, 2 * MIB)
    s.reserve(METADATA, ALL, 4 * MIB + 512 * KIB)	# full
    s.ticket(1, METADATA, ALL, MIB)			# normal: flusher
    s.reserve(METADATA, ALL, 512 * KIB, MOVER)		# from the reserve
    s.reserve(METADATA, ALL, 512 * KIB, MOVER)
    s.ticket(2, METADATA, ALL_STEAL, 256 * KIB, MOVER)	# priority ticket
    s.ticket(3, METADATA, LIMIT, 128 * KIB)
    s.wait(2)						# walk, then steal
    s.transition(0, METADATA, 256 * KIB)		# held bytes allocated
    s.transition(1, METADATA, 256 * KIB)		# freed: movers only
    s.transition(4, METADATA, 768 * KIB)		# global, movers
    s.transition(4, METADATA, 256 * KIB)		# movers
    s.transition(4, METADATA, MIB)			# movers, tickets
    s.wait(3)
    s.run()
    s.wait0(1)
    out['seed-movers-metadata'] = s

    # Movers pass a queued writer, not a priority ticket: from the
    # reserve, then from the pool (NOWAIT: granted, not -EAGAIN), a
    # partial grant of what there is room for past the writer, and a
    # partial grant from a reserve that holds exactly the minimum.
    s = Seed(MOV, pools=(8, 8, 1, 0), unallocated_mib=64,
             movers=(2, 0, 0, 0))
    s.reserve(DATA, NO_FLUSH, 5 * MIB)			# 2 MiB free
    s.ticket(11, DATA, FLUSH_DATA, 4 * MIB)		# a writer queues
    s.reserve(DATA, FLUSH_DATA, MIB, MOVER)		# the reserve
    s.reserve(DATA, NO_FLUSH, 512 * KIB, MOVER | NOWAIT)	# passes
    s.partial(DATA, FLUSH_DATA, 256 * KIB, 4 * MIB, MOVER)	# the rest
    s.ticket(12, DATA, FSI, 64 * KIB)			# priority ticket
    s.reserve(DATA, NO_FLUSH, 64 * KIB, MOVER | NOWAIT)	# respects it
    s.op('OP_CANCEL', u8(12))
    s.transition(5, DATA, MIB)				# grow: reserve full
    s.transition(5, DATA, 8 * MIB)			# the writer, room
    s.partial(DATA, FLUSH_DATA, MIB, MIB, MOVER)	# exactly min
    # The same past a FLUSH_ALL writer, which a FLUSH_ALL reservation
    # would respect: the overcommit room.
    s.reserve(METADATA, NO_FLUSH, 8 * MIB)
    s.ticket(13, METADATA, ALL, 16 * MIB)
    s.partial(METADATA, ALL, 64 * KIB, 4 * MIB, MOVER)
    out['seed-movers-pass'] = s

    # Partial grants: the mover's reserve within [min, max], max at once,
    # what there is room for (data, then metadata with overcommit), the
    # reservation of min when less than min is left (NOWAIT: -EAGAIN),
    # bad arguments (min 0, min > max).
    s = Seed(MOV, pools=(8, 8, 1, 0), unallocated_mib=128,
             movers=(2, 0, 0, 0),
             script={COMMIT: (EO_UNPIN, 16 * MIB, 0)})
    s.partial(DATA, FLUSH_DATA, 256 * KIB, 768 * KIB, MOVER)
    s.partial(DATA, FLUSH_DATA, MIB, 2 * MIB)
    s.partial(DATA, FLUSH_DATA, MIB, 6 * MIB)		# room: 5 MiB
    s.partial(DATA, FLUSH_DATA, 512 * KIB, 512 * KIB, NOWAIT)
    s.partial(DATA, FLUSH_DATA, 256 * KIB, 512 * KIB, MOVER)
    s.partial(METADATA, ALL, 4 * MIB, 16 * MIB)		# overcommit
    s.partial(METADATA, NO_FLUSH, MIB, 16 * MIB)
    s.partial(METADATA, EMERGENCY, MIB, 8 * MIB)
    s.ticket(4, METADATA, ALL, 4 * MIB)
    s.partial(METADATA, LIMIT, 64 * KIB, 128 * KIB)	# passes normal
    s.partial(METADATA, ALL, 64 * KIB, 128 * KIB, NOWAIT)
    s.partial(METADATA, ALL, 64 * KIB, 128 * KIB, MOVER)
    s.op('OP_RESERVE_PARTIAL', u8(DATA), mode_byte(FLUSH_DATA), u8(240),
         size(MIB), size(64 * KIB), u8(2))		# max < min
    s.op('OP_RESERVE_PARTIAL', u8(DATA), mode_byte(FLUSH_DATA), u8(224),
         u8(0xc0), u8(2))				# min 0
    s.run()
    out['seed-partial'] = s

    # The error state and the way out: tickets failed with the error and
    # reservations refused with it count as error_failures; after
    # clear_error, tickets queue again; a TREELOG rsv's fallback ends after
    # NO_FLUSH while a TEMP rsv borrows from the global reserve.
    s = Seed(MOV, pools=(4, 8, 1, 0), unallocated_mib=0, global_64k=8,
             movers=(1, 0, 0, 0))
    s.reserve(DATA, FLUSH_DATA, 3 * MIB)
    s.reserve(DATA, FLUSH_DATA, 512 * KIB, MOVER)
    s.ticket(5, DATA, FLUSH_DATA, MIB)
    s.ticket(6, METADATA, ALL, 16 * MIB)		# impossible: -ENOSPC
    s.reserve(METADATA, NO_FLUSH, 7 * MIB + 512 * KIB)
    s.ticket(7, METADATA, EVICT, 256 * KIB)
    s.set_error()
    s.wait0(5)
    s.wait0(7)
    s.ticket(8, DATA, FLUSH_DATA, MIB)			# refused: error
    s.reserve(DATA, FLUSH_DATA, 128 * KIB, MOVER)	# reserve: served
    s.clear_error()
    s.ticket(9, DATA, FLUSH_DATA, MIB)
    s.rsv_init(0, METADATA, RSV_TREELOG)
    s.rsv_init(1, METADATA, RSV_TEMP)
    s.rsv_fallback(USER_RSV0, 64 * KIB)			# -ENOSPC
    s.rsv_fallback(USER_RSV0 + 1, 64 * KIB)		# global pays
    s.run()
    s.clear_error()
    out['seed-error-treelog'] = s

    # The engine's figures and a restart: set_reclaimable stores per
    # state (bad states and sizes refused), load_used counts live bytes
    # if they fit (else -ENOSPC).
    s = Seed(0x10, pools=(8, 8, 1, 0), unallocated_mib=32)
    s.set_reclaimable(DATA, COMMIT, 2 * MIB)
    s.set_reclaimable(DATA, IPUTS, MIB)
    s.set_reclaimable(DATA, COMMIT, 512 * KIB)
    s.set_reclaimable(DATA, 0, MIB)
    s.set_reclaimable(METADATA, RECLAIM_CHUNKS, 4 * KIB)
    s.set_reclaimable(DATA, IPUTS, 0)
    s.op('OP_SET_RECLAIMABLE', u8(DATA), u8(COMMIT + 1), u8(32), u8(0xc4))
    s.load_used(DATA, 6 * MIB)
    s.load_used(DATA, 4 * MIB)				# -ENOSPC
    s.load_used(METADATA, 8 * MIB)
    s.load_used(METADATA, 256 * KIB)			# no overcommit
    s.load_used(NULL_POOL, MIB)
    s.op('OP_LOAD_USED', u8(DATA), u8(0xc0))		# 0 bytes
    s.transition(3, DATA, 2 * MIB)
    s.ticket(10, DATA, FLUSH_DATA, 4 * MIB)		# clamp: 0x10 rule
    s.run()
    out['seed-reclaimable-load'] = s
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', default=os.path.join(HERE, 'corpus'))
    ap.add_argument('--list', action='store_true')
    args = ap.parse_args()
    for name, s in seeds().items():
        if args.list:
            print(name, len(s.b))
            continue
        with open(os.path.join(args.out, name), 'wb') as f:
            f.write(bytes(s.b))
    return 0


if __name__ == '__main__':
    sys.exit(main())
