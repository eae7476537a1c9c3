/* SPDX-License-Identifier: MIT */
/*
 * Block groups (lib/bgroup.c): unused groups return at their commit and not
 * before; the dynamic reclaim threshold against upstream's formula; sweeps
 * with reclaim marks, urgent reclaim, the fixed threshold; reclaim
 * take/done; a metadata ticket served by reclaiming data chunks; statfs on
 * a table of states; and the two fidelity fixes that came with it (unpin
 * refills the global reserve first; delalloc takes data space before
 * quota).  All in manual mode: every flush runs inline, deterministic.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include <check.h>

#include <libspacersv/spacersv.h>

#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

/* ---- helpers ---- */

static struct srsv_ctx *make_ctx_full(uint64_t device, uint64_t chunk,
				      srsv_flush_fn flush, void *user,
				      unsigned flags, uint64_t global)
{
	struct srsv_config cfg;
	struct srsv_ctx *ctx = NULL;

	ck_assert_int_eq(srsv_config_init(&cfg), 0);
	cfg.flags = SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT | flags;
	cfg.flush = flush;
	cfg.user = user;
	for (int i = 0; i < SRSV_POOL_COUNT; i++)
		cfg.pool_bytes[i] = 0;
	cfg.unallocated_bytes = device;
	cfg.device_bytes = device;
	cfg.data_chunk_bytes = chunk;
	cfg.global_rsv_bytes = global;
	ck_assert_int_eq(srsv_ctx_create(&cfg, &ctx), 0);
	return ctx;
}

static void bg_init(struct srsv_ctx *ctx, bool dynamic, bool periodic,
		    unsigned fixed)
{
	struct srsv_bgroup_config bc;

	ck_assert_int_eq(srsv_bgroup_config_init(&bc), 0);
	bc.dynamic_reclaim = dynamic;
	bc.periodic_reclaim = periodic;
	bc.reclaim_threshold_pct = fixed;
	ck_assert_int_eq(srsv_bgroups_init(ctx, &bc), 0);
}

static struct srsv_ctx *make_ctx(uint64_t device, uint64_t chunk)
{
	struct srsv_ctx *ctx = make_ctx_full(device, chunk, NULL, NULL, 0, 0);

	bg_init(ctx, true, true, 0);
	return ctx;
}

static struct srsv_space_info snap(struct srsv_ctx *ctx, int pool)
{
	struct srsv_space_info info;

	ck_assert_int_eq(srsv_space_snapshot(srsv_ctx_space(ctx, pool), &info,
					     NULL, 0, NULL), 0);
	return info;
}

static struct srsv_bgroup_info gi(struct srsv_ctx *ctx, uint64_t addr)
{
	struct srsv_bgroup_info info;

	ck_assert_int_eq(srsv_bgroup_get(ctx, addr, &info), 0);
	return info;
}

static struct srsv_bgroup_stats bstats(struct srsv_ctx *ctx)
{
	struct srsv_bgroup_stats st;

	ck_assert_int_eq(srsv_bgroup_stats(ctx, &st), 0);
	return st;
}

/* Pool-level used bytes (reserve, alloc, commit). */
static void pool_use(struct srsv_ctx *ctx, int pool, uint64_t bytes)
{
	struct srsv_space *s = srsv_ctx_space(ctx, pool);

	ck_assert_int_eq(srsv_space_reserve(s, bytes, SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_space_alloc(s, bytes), 0);
	ck_assert_int_eq(srsv_space_commit_used(s, bytes), 0);
}

/* ---- groups in and out ---- */

START_TEST(test_add_takes_unallocated)
{
	struct srsv_ctx *ctx = make_ctx(10 * GIB, GIB);
	struct srsv_bgroup_info info;

	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, 0, GIB), 0);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_METADATA, GIB,
					 256 * MIB), 0);
	ck_assert_uint_eq(srsv_ctx_unallocated(ctx),
			  10 * GIB - GIB - 256 * MIB);
	ck_assert_uint_eq(snap(ctx, SRSV_POOL_DATA).total, GIB);
	ck_assert_uint_eq(snap(ctx, SRSV_POOL_METADATA).total, 256 * MIB);
	info = gi(ctx, GIB + 5);
	ck_assert_uint_eq(info.start, GIB);
	ck_assert_int_eq(info.pool, SRSV_POOL_METADATA);
	/* Walk the table. */
	ck_assert_int_eq(srsv_bgroup_next(ctx, 0, &info), 0);
	ck_assert_uint_eq(info.start, 0);
	ck_assert_int_eq(srsv_bgroup_next(ctx, 1, &info), 0);
	ck_assert_uint_eq(info.start, GIB);
	ck_assert_int_eq(srsv_bgroup_next(ctx, GIB + 256 * MIB, &info),
			 -ENOENT);
	ck_assert_uint_eq(bstats(ctx).nr_groups, 2);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* A DUP metadata profile takes twice its length of device space. */
START_TEST(test_add_raid_factor)
{
	struct srsv_config cfg;
	struct srsv_ctx *ctx = NULL;

	ck_assert_int_eq(srsv_config_init(&cfg), 0);
	cfg.flags = SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT;
	cfg.unallocated_bytes = GIB;
	cfg.metadata_raid_factor = 2;
	ck_assert_int_eq(srsv_ctx_create(&cfg, &ctx), 0);
	bg_init(ctx, true, true, 0);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_METADATA, 0,
					 256 * MIB), 0);
	ck_assert_uint_eq(srsv_ctx_unallocated(ctx), GIB - 512 * MIB);
	/* 2 * 300 MiB > 512 MiB left: refused, nothing changed. */
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_METADATA, GIB,
					 300 * MIB), -ENOSPC);
	ck_assert_uint_eq(srsv_ctx_unallocated(ctx), GIB - 512 * MIB);
	ck_assert_uint_eq(bstats(ctx).nr_groups, 1);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* An emptied group returns at the commit that frees its bytes, not
 * before, and not at the commit of an earlier transaction. */
START_TEST(test_unused_returns_at_commit)
{
	struct srsv_ctx *ctx = make_ctx(10 * GIB, GIB);

	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA,
						 (uint64_t)i * GIB, GIB), 0);
	ck_assert_uint_eq(srsv_ctx_unallocated(ctx), 7 * GIB);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, GIB, 100 * MIB),
			 0);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA,
					   GIB + 100 * MIB, 50 * MIB), 0);
	/* Freed in transaction 2. */
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, GIB, 100 * MIB,
					  2), 0);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA,
					  GIB + 100 * MIB, 50 * MIB, 2), 0);
	ck_assert(gi(ctx, GIB).unused);
	ck_assert_uint_eq(gi(ctx, GIB).pinned, 150 * MIB);
	/* Not before its commit: transaction 1's commit leaves it. */
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 1), 0);
	ck_assert_int_eq(gi(ctx, GIB).length, GIB);
	ck_assert_uint_eq(srsv_ctx_unallocated(ctx), 7 * GIB);
	/* At it: gone, its space unallocated again. */
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 2), 1);
	ck_assert_int_eq(srsv_bgroup_get(ctx, GIB, &(struct srsv_bgroup_info){0}),
			 -ENOENT);
	ck_assert_uint_eq(srsv_ctx_unallocated(ctx), 8 * GIB);
	ck_assert_uint_eq(snap(ctx, SRSV_POOL_DATA).total, 2 * GIB);
	ck_assert_uint_eq(bstats(ctx).returned, 1);
	/* Groups never used are not "emptied": they stay. */
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 3), 0);
	ck_assert_uint_eq(bstats(ctx).nr_groups, 2);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* Freed with transid 0: reusable at once, returns at the next commit. */
START_TEST(test_free_unpinned)
{
	struct srsv_ctx *ctx = make_ctx(10 * GIB, GIB);

	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, 0, GIB), 0);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, GIB, GIB), 0);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, 0, MIB), 0);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, 0, MIB, 0), 0);
	ck_assert_uint_eq(gi(ctx, 0).pinned, 0);
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 1), 1);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* The last group of a pool stays (btrfs keeps the profile); remove() may
 * still return it. */
START_TEST(test_last_group_kept)
{
	struct srsv_ctx *ctx = make_ctx(10 * GIB, GIB);

	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, 0, GIB), 0);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, 0, MIB), 0);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, 0, MIB, 1), 0);
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 1), 0);
	ck_assert_uint_eq(bstats(ctx).nr_groups, 1);
	ck_assert_int_eq(srsv_bgroup_remove(ctx, SRSV_POOL_DATA, 0), 0);
	ck_assert_uint_eq(bstats(ctx).nr_groups, 0);
	ck_assert_uint_eq(srsv_ctx_unallocated(ctx), 10 * GIB);
	ck_assert_uint_eq(snap(ctx, SRSV_POOL_DATA).total, 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* Reservations that hold the pool's free space keep the group (no
 * overcommit); it returns at a later commit once they are gone. */
START_TEST(test_reserved_space_keeps_group)
{
	struct srsv_ctx *ctx = make_ctx(10 * GIB, GIB);
	struct srsv_space *data = srsv_ctx_space(ctx, SRSV_POOL_DATA);

	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, 0, GIB), 0);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, GIB, GIB), 0);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, GIB, MIB), 0);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, GIB, MIB, 1),
			 0);
	ck_assert_int_eq(srsv_space_reserve(data, GIB + MIB, SRSV_NO_FLUSH, 0),
			 0);
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 1), 0);
	ck_assert_int_eq(srsv_bgroup_remove(ctx, SRSV_POOL_DATA, GIB),
			 -ENOSPC);
	ck_assert_uint_eq(snap(ctx, SRSV_POOL_DATA).total, 2 * GIB);
	ck_assert_int_eq(srsv_space_release(data, GIB + MIB), 0);
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 2), 1);
	ck_assert_uint_eq(snap(ctx, SRSV_POOL_DATA).total, GIB);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* ---- thresholds ---- */

/* Upstream's calc_dynamic_reclaim_threshold(), written out again. */
static int upstream_dynamic(uint64_t unalloc, uint64_t chunk, uint64_t alloc,
			    uint64_t used)
{
	uint64_t target = 10 * chunk;
	uint64_t want = target > unalloc ? target - unalloc : 0;

	if (alloc - used < chunk)
		return 0;
	return (int)(want * 100 / target);
}

START_TEST(test_dynamic_threshold_table)
{
	static const struct {
		uint64_t unalloc;	/* MiB */
		uint64_t unused;	/* MiB of the pool not used */
		int want;
	} table[] = {
		{ 0, 1024, 100 },	/* nothing unallocated: 100 */
		{ 0, 63, 0 },		/* no room to move into: 0 */
		{ 32, 64, 95 },
		{ 64, 640, 90 },	/* one chunk: 90 */
		{ 320, 640, 50 },
		{ 576, 64, 10 },
		{ 639, 640, 0 },	/* 99.8% of target: 0 */
		{ 640, 640, 0 },	/* at the target: 0 */
		{ 2048, 640, 0 },
	};
	const uint64_t chunk = 64 * MIB;

	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		uint64_t alloc = 2 * GIB, used = alloc - table[i].unused * MIB;
		struct srsv_ctx *ctx = make_ctx(4 * GIB, chunk);
		int got;

		ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, 0, alloc),
				 0);
		pool_use(ctx, SRSV_POOL_DATA, used);
		ck_assert_int_eq(srsv_ctx_set_unallocated(ctx,
				 table[i].unalloc * MIB), 0);
		got = srsv_bgroup_reclaim_threshold(ctx, SRSV_POOL_DATA);
		ck_assert_int_eq(got, table[i].want);
		ck_assert_int_eq(got, upstream_dynamic(table[i].unalloc * MIB,
						       chunk, alloc, used));
		srsv_ctx_destroy(ctx);
	}
}
END_TEST

START_TEST(test_fixed_threshold)
{
	struct srsv_ctx *ctx = make_ctx_full(10 * GIB, GIB, NULL, NULL, 0, 0);

	bg_init(ctx, false, false, 50);
	ck_assert_int_eq(srsv_bgroup_reclaim_threshold(ctx, SRSV_POOL_DATA), 50);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, 0, GIB), 0);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, GIB, GIB), 0);
	/* 60% -> 40%: crosses the threshold, a candidate. */
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, 0,
					   GIB / 10 * 6), 0);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, 0,
					  GIB / 10 * 2, 1), 0);
	ck_assert(gi(ctx, 0).candidate);
	/* 30% -> 20%: was below already (likely new), not a candidate. */
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, GIB,
					   GIB / 10 * 3), 0);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, GIB, GIB / 10,
					  1), 0);
	ck_assert(!gi(ctx, GIB).candidate);
	ck_assert_uint_eq(bstats(ctx).marked, 1);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* Periodic sweeps: a group under the threshold is taken only once it
 * survived a sweep without an allocation. */
START_TEST(test_sweep_reclaim_marks)
{
	const uint64_t chunk = 64 * MIB;
	struct srsv_ctx *ctx = make_ctx(4 * GIB, chunk);

	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, 0, GIB), 0);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, GIB, GIB), 0);
	/* Threshold 50%: half the 640 MiB target unallocated. */
	ck_assert_int_eq(srsv_ctx_set_unallocated(ctx, 320 * MIB), 0);
	ck_assert_int_eq(srsv_bgroup_reclaim_threshold(ctx, SRSV_POOL_DATA), 50);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, 0, 100 * MIB),
			 0);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, GIB, 900 * MIB),
			 0);
	/* Not a chunk's worth freed yet: no sweep. */
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, GIB, 32 * MIB, 1),
			 0);
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 1), 0);
	ck_assert_uint_eq(bstats(ctx).sweeps, 0);
	/* A chunk's worth: the first sweep only marks. */
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, GIB, 32 * MIB, 2),
			 0);
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 2), 0);
	ck_assert_uint_eq(bstats(ctx).sweeps, 1);
	ck_assert(!gi(ctx, 0).candidate);
	ck_assert_uint_eq(gi(ctx, 0).reclaim_mark, 1);
	/* Second sweep: the stale, sparse group is taken, the full one not. */
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, GIB, 64 * MIB, 3),
			 0);
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 3), 0);
	ck_assert_uint_eq(bstats(ctx).sweeps, 2);
	ck_assert(gi(ctx, 0).candidate);
	ck_assert(!gi(ctx, GIB).candidate);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* An allocation makes a group fresh again: the next sweep passes it. */
START_TEST(test_alloc_resets_mark)
{
	struct srsv_ctx *ctx = make_ctx(4 * GIB, 64 * MIB);

	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, 0, GIB), 0);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, GIB, GIB), 0);
	ck_assert_int_eq(srsv_ctx_set_unallocated(ctx, 320 * MIB), 0);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, 0, 100 * MIB),
			 0);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, GIB, 900 * MIB),
			 0);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, GIB, 64 * MIB, 1),
			 0);
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 1), 0);
	ck_assert_uint_eq(gi(ctx, 0).reclaim_mark, 1);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, 100 * MIB, MIB),
			 0);
	ck_assert_uint_eq(gi(ctx, 0).reclaim_mark, 0);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, GIB, 128 * MIB,
					  2), 0);
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 2), 0);
	ck_assert(!gi(ctx, 0).candidate);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* Urgent (less than a data chunk unallocated): the first sweep takes a
 * fresh group too; not urgent, the same group waits for a second sweep. */
START_TEST(test_urgent_takes_fresh)
{
	for (int urgent = 0; urgent < 2; urgent++) {
		struct srsv_ctx *ctx = make_ctx(4 * GIB, 64 * MIB);

		ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, 0, GIB),
				 0);
		ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, GIB, GIB),
				 0);
		ck_assert_int_eq(srsv_ctx_set_unallocated(ctx, urgent ?
					32 * MIB : 320 * MIB), 0);
		ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, 0,
						   164 * MIB), 0);
		ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, GIB,
						   GIB), 0);
		ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, 0,
						  64 * MIB, 1), 0);
		ck_assert_int_eq(srsv_ctx_commit_done(ctx, 1), 0);
		ck_assert_int_eq(gi(ctx, 0).candidate, urgent);
		ck_assert(!gi(ctx, GIB).candidate);
		srsv_ctx_destroy(ctx);
	}
}
END_TEST

/* ---- reclaim take / done ---- */

START_TEST(test_take_relocate_done)
{
	struct srsv_ctx *ctx = make_ctx_full(10 * GIB, GIB, NULL, NULL, 0, 0);
	struct srsv_bgroup_info t;
	uint64_t start;

	bg_init(ctx, false, false, 50);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA,
						 (uint64_t)i * GIB, GIB), 0);
	/* Groups 0 and 1 become candidates: 0 with 100 MiB, 1 with 300. */
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, 0, 600 * MIB),
			 0);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, 0, 500 * MIB,
					  1), 0);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, GIB, 600 * MIB),
			 0);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, GIB, 300 * MIB,
					  1), 0);
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 1), 0);
	/* The least used first; its free bytes become readonly. */
	ck_assert_int_eq(srsv_bgroup_reclaim_take(ctx, &t), 0);
	ck_assert_uint_eq(t.start, 0);
	ck_assert(t.readonly);
	ck_assert_uint_eq(snap(ctx, SRSV_POOL_DATA).readonly, GIB - 100 * MIB);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, 0, MIB),
			 -EROFS);
	ck_assert_int_eq(srsv_bgroup_find_free(ctx, SRSV_POOL_DATA, 800 * MIB,
					       &start), 0);
	ck_assert_uint_eq(start, 2 * GIB);
	/* Not moved yet: done(0) refuses. */
	ck_assert_int_eq(srsv_bgroup_reclaim_done(ctx, 0, 0), -EBUSY);
	/* Move it: new copy in group 2, old one freed in transaction 2. */
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, start,
					   100 * MIB), 0);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, 0, 100 * MIB,
					  2), 0);
	ck_assert_int_eq(srsv_bgroup_reclaim_done(ctx, 0, 0), 0);
	ck_assert_int_eq(srsv_bgroup_reclaim_done(ctx, 0, 0), -EINVAL);
	/* The second candidate fails to move: writable again. */
	ck_assert_int_eq(srsv_bgroup_reclaim_take(ctx, &t), 0);
	ck_assert_uint_eq(t.start, GIB);
	ck_assert_int_eq(srsv_bgroup_reclaim_done(ctx, GIB, -EIO), 0);
	ck_assert(!gi(ctx, GIB).readonly);
	ck_assert_int_eq(srsv_bgroup_reclaim_take(ctx, &t), -ENOENT);
	ck_assert_uint_eq(snap(ctx, SRSV_POOL_DATA).readonly, GIB - 100 * MIB);
	/* Its commit returns the relocated group; readonly back to 0. */
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 2), 1);
	ck_assert_uint_eq(snap(ctx, SRSV_POOL_DATA).readonly, 0);
	ck_assert_uint_eq(snap(ctx, SRSV_POOL_DATA).total, 2 * GIB);
	ck_assert_uint_eq(srsv_ctx_unallocated(ctx), 8 * GIB);
	ck_assert_uint_eq(bstats(ctx).reclaimed, 1);
	ck_assert_uint_eq(bstats(ctx).reclaim_failed, 1);
	/* Only the relocation that ended with 0 counts its bytes. */
	ck_assert_uint_eq(bstats(ctx).reclaimed_bytes, 100 * MIB);
	srsv_ctx_destroy(ctx);
}
END_TEST

START_TEST(test_take_batch_bound)
{
	struct srsv_ctx *ctx = make_ctx_full(20 * GIB, GIB, NULL, NULL, 0, 0);
	struct srsv_bgroup_info t;

	bg_init(ctx, false, false, 50);
	for (int i = 0; i < 8; i++) {
		uint64_t at = (uint64_t)i * GIB;

		ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, at, GIB),
				 0);
		ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, at,
						   600 * MIB), 0);
		ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, at,
						  200 * MIB, 1), 0);
	}
	/* Pinned bytes keep a group out of reclaim (upstream's skip
	 * rule): commit them first. */
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 1), 0);
	for (int i = 0; i < SRSV_BGROUP_RECLAIM_BATCH; i++)
		ck_assert_int_eq(srsv_bgroup_reclaim_take(ctx, &t), 0);
	ck_assert_int_eq(srsv_bgroup_reclaim_take(ctx, &t), -EBUSY);
	ck_assert_int_eq(srsv_bgroup_reclaim_done(ctx, t.start, -EAGAIN), 0);
	ck_assert_int_eq(srsv_bgroup_reclaim_take(ctx, &t), 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

/*
 * btrfs_reclaim_block_group()'s skip rules on the one reclaim path: a
 * candidate with pinned bytes is skipped (and dropped), one emptied since
 * it was marked goes to the unused list instead, and the bytes a finished
 * relocation moved are counted.
 */
START_TEST(test_take_skip_rules_and_bytes)
{
	struct srsv_ctx *ctx = make_ctx_full(20 * GIB, GIB, NULL, NULL, 0, 0);
	struct srsv_bgroup_stats st0, st1;
	struct srsv_bgroup_info t;

	bg_init(ctx, false, false, 50);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA,
						 (uint64_t)i * GIB, GIB), 0);
		ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA,
						   (uint64_t)i * GIB,
						   600 * MIB), 0);
	}
	/* 0: below 50% with its freed bytes pinned; 1: below 50%, nothing
	 * pinned; 2: below 50%, then emptied. */
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, 0, 200 * MIB,
					  1), 0);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, GIB, 300 * MIB,
					  0), 0);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, 2 * GIB,
					  200 * MIB, 0), 0);
	ck_assert(gi(ctx, 2 * GIB).candidate);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, 2 * GIB,
					  400 * MIB, 0), 0);
	ck_assert(gi(ctx, 0).candidate);
	ck_assert(gi(ctx, GIB).candidate);
	st0 = bstats(ctx);
	ck_assert_uint_eq(st0.marked, 3);
	/* 1 is taken (2 went to the unused list when it emptied, 1 is less
	 * used than 0); then 0 is skipped for its pinned bytes. */
	ck_assert_int_eq(srsv_bgroup_reclaim_take(ctx, &t), 0);
	ck_assert_uint_eq(t.start, GIB);
	ck_assert_int_eq(srsv_bgroup_reclaim_take(ctx, &t), -ENOENT);
	ck_assert(!gi(ctx, 0).candidate);
	ck_assert(!gi(ctx, 2 * GIB).candidate);
	ck_assert(gi(ctx, 2 * GIB).unused);
	st1 = bstats(ctx);
	/* Three entries, then the one left. */
	ck_assert_uint_eq(st1.candidates_looked - st0.candidates_looked, 4);
	/* Moved: 300 MiB, counted once the reclaim ends with 0. */
	ck_assert_uint_eq(st1.reclaimed_bytes, 0);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, 3 * GIB,
					   300 * MIB), 0);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, GIB, 300 * MIB,
					  2), 0);
	ck_assert_int_eq(srsv_bgroup_reclaim_done(ctx, GIB, 0), 0);
	st1 = bstats(ctx);
	ck_assert_uint_eq(st1.reclaimed, 1);
	ck_assert_uint_eq(st1.reclaimed_bytes, 300 * MIB);
	/* The emptied group goes back at the first commit, the relocated
	 * one at the commit that frees its old copies. */
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 1), 1);
	ck_assert_int_eq(srsv_bgroup_get(ctx, 2 * GIB, &t), -ENOENT);
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 2), 1);
	ck_assert_int_eq(srsv_bgroup_get(ctx, GIB, &t), -ENOENT);
	ck_assert_uint_eq(gi(ctx, 0).used, 400 * MIB);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* ---- a metadata ticket served by reclaiming data chunks ---- */

#define SIM_CHUNK (64 * MIB)
#define SIM_META (16 * MIB)

struct sim {
	struct srsv_ctx *ctx;
	uint64_t trans;
	uint64_t pinned_data;
	unsigned calls[SRSV_STATE_COUNT];
	bool relocate;		/* implements RECLAIM_CHUNKS */
	bool no_table;		/* the ctx has no group table */
	bool handoff;		/* RECLAIM_CHUNKS leaves groups taken */
	uint64_t next_meta;	/* address of the next metadata chunk */
	/* handoff: per round, one group taken by a relocation worker
	 * thread and one on the callback's own thread, both left taken. */
	uint64_t worker_taken[8], own_taken[8];
	unsigned nr_worker, nr_own;
};

struct handoff_arg {
	struct srsv_ctx *ctx;
	struct srsv_bgroup_info info;
	int ret;
};

static void *handoff_worker(void *arg)
{
	struct handoff_arg *h = arg;

	h->ret = srsv_bgroup_reclaim_take(h->ctx, &h->info);
	return NULL;
}

/* RECLAIM_CHUNKS of an engine that relocates in a worker thread: the
 * worker takes a group (and would move it later); the callback takes one
 * more itself and leaves it. */
static void sim_handoff(struct sim *sim)
{
	struct handoff_arg h = { .ctx = sim->ctx };
	struct srsv_bgroup_info own;
	pthread_t th;

	ck_assert_int_eq(pthread_create(&th, NULL, handoff_worker, &h), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	if (h.ret == 0 && sim->nr_worker < 8)
		sim->worker_taken[sim->nr_worker++] = h.info.start;
	if (srsv_bgroup_reclaim_take(sim->ctx, &own) == 0 && sim->nr_own < 8)
		sim->own_taken[sim->nr_own++] = own.start;
}

static void sim_relocate(struct sim *sim)
{
	struct srsv_space *data = srsv_ctx_space(sim->ctx, SRSV_POOL_DATA);
	struct srsv_bgroup_info t;

	while (srsv_bgroup_reclaim_take(sim->ctx, &t) == 0) {
		uint64_t to;
		int ret = t.used ? srsv_bgroup_find_free(sim->ctx, t.pool,
							 t.used, &to) : 0;

		if (!ret && t.used) {
			ck_assert_int_eq(srsv_bgroup_alloc(sim->ctx, t.pool, to,
							   t.used), 0);
			ck_assert_int_eq(srsv_space_reserve(data, t.used,
						SRSV_NO_FLUSH, 0), 0);
			ck_assert_int_eq(srsv_space_alloc(data, t.used), 0);
			ck_assert_int_eq(srsv_space_commit_used(data, t.used),
					 0);
			ck_assert_int_eq(srsv_bgroup_free(sim->ctx, t.pool,
					 t.start, t.used, sim->trans), 0);
			ck_assert_int_eq(srsv_space_pin(data, t.used), 0);
			sim->pinned_data += t.used;
		}
		ck_assert_int_eq(srsv_bgroup_reclaim_done(sim->ctx, t.start,
							  ret), 0);
	}
}

static int sim_flush(struct srsv_space *space, enum srsv_flush_state state,
		     uint64_t bytes, bool for_preempt, void *user)
{
	struct sim *sim = user;

	(void)bytes; (void)for_preempt;
	sim->calls[state]++;
	switch (state) {
	case SRSV_STATE_COMMIT_TRANS:
		if (sim->pinned_data)
			ck_assert_int_eq(srsv_space_unpin(srsv_ctx_space(
				sim->ctx, SRSV_POOL_DATA), sim->pinned_data), 0);
		sim->pinned_data = 0;
		ck_assert_int_ge(srsv_ctx_commit_done(sim->ctx, sim->trans),
				 sim->no_table ? -EINVAL : 0);
		sim->trans++;
		return 0;
	case SRSV_STATE_ALLOC_CHUNK:
	case SRSV_STATE_ALLOC_CHUNK_FORCE:
		if (srsv_space_kind(space) != SRSV_POOL_METADATA)
			return -ENOSPC;
		if (srsv_bgroup_add(sim->ctx, SRSV_POOL_METADATA,
				    sim->next_meta, SIM_META))
			return -ENOSPC;
		sim->next_meta += SIM_META;
		return 0;
	case SRSV_STATE_RECLAIM_CHUNKS:
		if (sim->handoff) {
			sim_handoff(sim);
			return 0;
		}
		if (!sim->relocate)
			return -EOPNOTSUPP;
		sim_relocate(sim);
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

/*
 * The device is all allocated: one metadata chunk, full (its SIM_META
 * reserved NO_FLUSH; the caller releases it), and fifteen data chunks at
 * 10% each.  Returns the metadata pool.
 */
static struct srsv_space *sim_full_device(struct sim *sim)
{
	const uint64_t meta_base = 15 * SIM_CHUNK;
	struct srsv_space *meta;

	sim->next_meta = meta_base + SIM_META;
	sim->ctx = make_ctx_full(SIM_META + 15 * SIM_CHUNK, SIM_CHUNK,
				 sim_flush, sim, 0, 0);
	bg_init(sim->ctx, true, true, 0);
	meta = srsv_ctx_space(sim->ctx, SRSV_POOL_METADATA);
	for (int i = 0; i < 15; i++) {
		uint64_t at = (uint64_t)i * SIM_CHUNK;

		ck_assert_int_eq(srsv_bgroup_add(sim->ctx, SRSV_POOL_DATA, at,
						 SIM_CHUNK), 0);
		ck_assert_int_eq(srsv_bgroup_alloc(sim->ctx, SRSV_POOL_DATA, at,
						   SIM_CHUNK / 10), 0);
	}
	pool_use(sim->ctx, SRSV_POOL_DATA, 15 * (SIM_CHUNK / 10));
	ck_assert_int_eq(srsv_bgroup_add(sim->ctx, SRSV_POOL_METADATA,
					 meta_base, SIM_META), 0);
	ck_assert_uint_eq(srsv_ctx_unallocated(sim->ctx), 0);
	ck_assert_int_eq(srsv_space_reserve(meta, SIM_META, SRSV_NO_FLUSH, 0),
			 0);
	return meta;
}

/*
 * On sim_full_device(), a metadata reservation cannot overcommit (nothing
 * unallocated) or grow the pool; before failing it relocates data chunks,
 * commits, and is served from the space that came back.
 */
static void run_meta_ticket(bool relocate, int want)
{
	struct sim sim = { .trans = 1, .relocate = relocate };
	struct srsv_space *meta;
	struct srsv_ticket t;
	int ret;

	meta = sim_full_device(&sim);

	ret = srsv_ticket_reserve(meta, &t, MIB, SRSV_FLUSH_ALL, 0);
	ck_assert_int_eq(ret, -EINPROGRESS);
	while (srsv_ctx_run_pending(sim.ctx) > 0)
		;
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), want);
	/* Candidates exist either way: the engine is asked. */
	ck_assert_uint_gt(sim.calls[SRSV_STATE_RECLAIM_CHUNKS], 0);
	if (relocate) {
		struct srsv_space_info di = snap(sim.ctx, SRSV_POOL_DATA);

		ck_assert_uint_gt(bstats(sim.ctx).returned, 0);
		ck_assert_uint_gt(srsv_ctx_unallocated(sim.ctx) +
				  snap(sim.ctx, SRSV_POOL_METADATA).total,
				  SIM_META);
		/* No data byte lost: the moved copies are still used. */
		ck_assert_uint_eq(di.used, 15 * (SIM_CHUNK / 10));
		ck_assert_uint_eq(di.readonly, 0);
		ck_assert_int_eq(srsv_space_release(meta, MIB), 0);
	}
	ck_assert_int_eq(srsv_space_release(meta, SIM_META), 0);
	srsv_ctx_destroy(sim.ctx);
}

START_TEST(test_meta_ticket_served_by_data_reclaim)
{
	run_meta_ticket(true, 0);
}
END_TEST

/* The same ctx whose engine cannot relocate: the ticket fails, and the
 * engine is asked (it has candidates) but relocates nothing. */
START_TEST(test_meta_ticket_fails_without_relocation)
{
	run_meta_ticket(false, -ENOSPC);
}
END_TEST

/*
 * A RECLAIM_CHUNKS round ends only what its callback took on its own
 * thread: a group a relocation worker took stays taken (read-only, out of
 * srsv_bgroup_alloc()'s reach) through every later round until the engine
 * says srsv_bgroup_reclaim_done(), as two rounds at once (the data and
 * metadata flushers, priority walks) must not end each other's groups.
 */
START_TEST(test_round_ends_only_its_own_groups)
{
	struct sim sim = { .trans = 1, .handoff = true };
	struct srsv_space *meta;
	struct srsv_bgroup_info gi;
	struct srsv_ticket t;

	meta = sim_full_device(&sim);
	ck_assert_int_eq(srsv_ticket_reserve(meta, &t, MIB, SRSV_FLUSH_ALL, 0),
			 -EINPROGRESS);
	while (srsv_ctx_run_pending(sim.ctx) > 0)
		;
	/* Nothing was moved: the ticket fails after its rescue rounds. */
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -ENOSPC);
	ck_assert_uint_gt(sim.nr_worker, 0);
	ck_assert_uint_gt(sim.nr_own, 0);
	/* The callback's own groups were ended (-EAGAIN: still used), the
	 * last round's at least; an ended group may be a candidate again
	 * and go to the worker in a later round. */
	for (unsigned i = 0, ended = 0; i < sim.nr_own; i++) {
		bool rehanded = false;

		for (unsigned j = 0; j < sim.nr_worker; j++)
			rehanded |= sim.worker_taken[j] == sim.own_taken[i];
		if (rehanded)
			continue;
		ck_assert_int_eq(srsv_bgroup_get(sim.ctx, sim.own_taken[i], &gi),
				 0);
		ck_assert(!gi.readonly);
		ck_assert_int_eq(srsv_bgroup_reclaim_done(sim.ctx,
				 sim.own_taken[i], -EIO), -EINVAL);
		ended++;
		if (i == sim.nr_own - 1)
			ck_assert_uint_gt(ended, 0);
	}
	/* The worker's are still taken, whatever rounds ran after them. */
	for (unsigned i = 0; i < sim.nr_worker; i++) {
		ck_assert_int_eq(srsv_bgroup_get(sim.ctx, sim.worker_taken[i],
						 &gi), 0);
		ck_assert(gi.readonly);
		ck_assert_int_eq(srsv_bgroup_alloc(sim.ctx, SRSV_POOL_DATA,
				 sim.worker_taken[i] + SIM_CHUNK / 2, 4096),
				 -EROFS);
		ck_assert_int_eq(srsv_bgroup_reclaim_done(sim.ctx,
				 sim.worker_taken[i], -EIO), 0);
		ck_assert_int_eq(srsv_bgroup_get(sim.ctx, sim.worker_taken[i],
						 &gi), 0);
		ck_assert(!gi.readonly);
	}
	ck_assert_uint_eq(snap(sim.ctx, SRSV_POOL_DATA).readonly, 0);
	ck_assert_int_eq(srsv_space_release(meta, SIM_META), 0);
	srsv_ctx_destroy(sim.ctx);
}
END_TEST

/* Without candidates (or without a group table) the engine never sees
 * RECLAIM_CHUNKS. */
START_TEST(test_reclaim_chunks_not_called_without_candidates)
{
	struct sim sim = { .trans = 1, .relocate = true, .no_table = true };
	struct srsv_ticket t;
	struct srsv_space *meta;

	sim.ctx = make_ctx_full(0, SIM_CHUNK, sim_flush, &sim, 0, 0);
	meta = srsv_ctx_space(sim.ctx, SRSV_POOL_METADATA);
	ck_assert_int_eq(srsv_space_grow(meta, SIM_META), 0);
	ck_assert_int_eq(srsv_space_reserve(meta, SIM_META, SRSV_NO_FLUSH, 0),
			 0);
	ck_assert_int_eq(srsv_ticket_reserve(meta, &t, MIB, SRSV_FLUSH_ALL, 0),
			 -EINPROGRESS);
	while (srsv_ctx_run_pending(sim.ctx) > 0)
		;
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -ENOSPC);
	ck_assert_uint_eq(sim.calls[SRSV_STATE_RECLAIM_CHUNKS], 0);
	ck_assert_str_eq(srsv_state_name(SRSV_STATE_RECLAIM_CHUNKS),
			 "RECLAIM_CHUNKS");
	/* With a table but no group: still never asked. */
	bg_init(sim.ctx, true, true, 0);
	sim.no_table = false;
	ck_assert_int_eq(srsv_ticket_reserve(meta, &t, MIB, SRSV_FLUSH_ALL, 0),
			 -EINPROGRESS);
	while (srsv_ctx_run_pending(sim.ctx) > 0)
		;
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -ENOSPC);
	ck_assert_uint_eq(sim.calls[SRSV_STATE_RECLAIM_CHUNKS], 0);
	ck_assert_int_eq(srsv_space_release(meta, SIM_META), 0);
	srsv_ctx_destroy(sim.ctx);
}
END_TEST

/* ---- statfs ---- */

/*
 * Sizes at the limit: a 2^62-byte metadata group at factor 4 needs 2^64
 * raw bytes, which no device has (-ENOSPC, nothing changed; the product
 * must not wrap to 0), and statfs of a 2^62-byte metadata pool at factor 4
 * neither wraps its raw figures.
 */
START_TEST(test_factor_limits)
{
	struct srsv_config cfg;
	struct srsv_ctx *ctx = NULL;
	struct srsv_statfs st;
	struct srsv_space *meta;

	ck_assert_int_eq(srsv_config_init(&cfg), 0);
	cfg.flags = SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT;
	for (int i = 0; i < SRSV_POOL_COUNT; i++)
		cfg.pool_bytes[i] = 0;
	cfg.unallocated_bytes = SRSV_MAX_BYTES;
	cfg.metadata_raid_factor = 4;
	ck_assert_int_eq(srsv_ctx_create(&cfg, &ctx), 0);
	bg_init(ctx, true, true, 0);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_METADATA, 0,
					 SRSV_MAX_BYTES), -ENOSPC);
	ck_assert_uint_eq(srsv_ctx_unallocated(ctx), SRSV_MAX_BYTES);
	ck_assert_uint_eq(bstats(ctx).nr_groups, 0);
	meta = srsv_ctx_space(ctx, SRSV_POOL_METADATA);
	ck_assert_int_eq(srsv_space_grow(meta, SRSV_MAX_BYTES), 0);
	ck_assert_int_eq(srsv_ctx_statfs(ctx, &st), 0);
	ck_assert_uint_eq(st.metadata_free, UINT64_MAX);	/* 2^64 raw */
	ck_assert_uint_eq(st.total, SRSV_MAX_BYTES);
	ck_assert_uint_eq(st.free, SRSV_MAX_BYTES);
	ck_assert_uint_eq(st.avail, SRSV_MAX_BYTES);
	/* Every metadata byte used: 2^64 raw used bytes, none free. */
	ck_assert_int_eq(srsv_space_reserve(meta, SRSV_MAX_BYTES,
					    SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_space_alloc(meta, SRSV_MAX_BYTES), 0);
	ck_assert_int_eq(srsv_space_commit_used(meta, SRSV_MAX_BYTES), 0);
	ck_assert_int_eq(srsv_ctx_statfs(ctx, &st), 0);
	ck_assert_uint_eq(st.free, 0);
	ck_assert_uint_eq(st.metadata_free, 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

START_TEST(test_statfs_table)
{
	static const struct {
		const char *name;
		unsigned meta_factor;
		uint64_t data_total, data_used, data_ro;	/* MiB */
		uint64_t meta_total, meta_used, unalloc, global;
		bool meta_full;
		uint64_t want_free, want_avail;
	} table[] = {
		/* 10 GiB device. */
		{ "plain", 1, 2048, 1024, 0, 1024, 100, 7168, 16, false,
		  10240 - 1124 - 16, 1024 + 7168 },
		{ "metadata full, reserve does not fit", 1, 2048, 1024, 0,
		  118, 100, 7168 - 0 + 906, 16, true,
		  10240 - 1124 - 16, 0 },
		{ "metadata full, room left", 1, 2048, 1024, 0, 1024, 100, 7168,
		  16, true, 10240 - 1124 - 16, 1024 + 7168 },
		{ "metadata can grow", 1, 2048, 1024, 0, 118, 100, 8074, 16,
		  false, 10240 - 1124 - 16, 1024 + 8074 },
		{ "readonly", 1, 2048, 1024, 256, 1024, 100, 7168, 16, false,
		  10240 - 1124 - 16, 768 + 7168 },
		{ "DUP metadata", 2, 2048, 1024, 0, 512, 100, 7168, 16, false,
		  10240 - 1224 - 16, 1024 + 7168 },
		{ "no reserve", 1, 2048, 1024, 0, 1024, 100, 7168, 0, false,
		  10240 - 1124, 1024 + 7168 },
	};

	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		struct srsv_config cfg;
		struct srsv_ctx *ctx = NULL;
		struct srsv_statfs st;

		ck_assert_int_eq(srsv_config_init(&cfg), 0);
		cfg.flags = SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT;
		cfg.pool_bytes[SRSV_POOL_DATA] = table[i].data_total * MIB;
		cfg.pool_bytes[SRSV_POOL_METADATA] = table[i].meta_total * MIB;
		cfg.pool_bytes[SRSV_POOL_SYSTEM] = 0;
		cfg.unallocated_bytes = table[i].unalloc * MIB;
		cfg.device_bytes = 10 * GIB;
		cfg.metadata_raid_factor = table[i].meta_factor;
		cfg.global_rsv_bytes = table[i].global * MIB;
		ck_assert_int_eq(srsv_ctx_create(&cfg, &ctx), 0);
		pool_use(ctx, SRSV_POOL_DATA, table[i].data_used * MIB);
		pool_use(ctx, SRSV_POOL_METADATA, table[i].meta_used * MIB);
		if (table[i].data_ro)
			ck_assert_int_eq(srsv_space_set_readonly(
				srsv_ctx_space(ctx, SRSV_POOL_DATA),
				table[i].data_ro * MIB, false), 0);
		ck_assert_int_eq(srsv_space_set_full(srsv_ctx_space(ctx,
				 SRSV_POOL_METADATA), table[i].meta_full), 0);
		ck_assert_int_eq(srsv_ctx_statfs(ctx, &st), 0);
		ck_assert_msg(st.total == 10 * GIB, "%s", table[i].name);
		ck_assert_msg(st.free == table[i].want_free * MIB,
			      "%s: free %llu", table[i].name,
			      (unsigned long long)(st.free / MIB));
		ck_assert_msg(st.avail == table[i].want_avail * MIB,
			      "%s: avail %llu", table[i].name,
			      (unsigned long long)(st.avail / MIB));
		ck_assert_uint_eq(st.global_rsv_size, table[i].global * MIB);
		ck_assert_int_eq(st.metadata_full, table[i].meta_full);
		srsv_ctx_destroy(ctx);
	}
}
END_TEST

/* MIXED: metadata lives in the data pool, f_bavail is never zeroed for
 * it; the data factor of the group table divides everything. */
START_TEST(test_statfs_mixed_and_factor)
{
	struct srsv_config cfg;
	struct srsv_ctx *ctx = NULL;
	struct srsv_bgroup_config bc;
	struct srsv_statfs st;

	ck_assert_int_eq(srsv_config_init(&cfg), 0);
	cfg.flags = SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT | SRSV_CTX_MIXED;
	cfg.pool_bytes[SRSV_POOL_MIXED] = 0;
	cfg.pool_bytes[SRSV_POOL_SYSTEM] = 0;
	cfg.unallocated_bytes = 4 * GIB;
	cfg.device_bytes = 4 * GIB;
	ck_assert_int_eq(srsv_ctx_create(&cfg, &ctx), 0);
	ck_assert_int_eq(srsv_bgroup_config_init(&bc), 0);
	bc.data_raid_factor = 2;
	ck_assert_int_eq(srsv_bgroups_init(ctx, &bc), 0);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, 0, GIB), 0);
	ck_assert_uint_eq(srsv_ctx_unallocated(ctx), 2 * GIB);
	pool_use(ctx, SRSV_POOL_MIXED, 256 * MIB);
	ck_assert_int_eq(srsv_space_set_full(srsv_ctx_space(ctx,
			 SRSV_POOL_MIXED), true), 0);
	ck_assert_int_eq(srsv_ctx_statfs(ctx, &st), 0);
	ck_assert_uint_eq(st.total, 2 * GIB);
	ck_assert_uint_eq(st.free, 2 * GIB - 256 * MIB);
	ck_assert_uint_eq(st.avail, (GIB - 256 * MIB) + GIB);
	ck_assert_uint_eq(st.metadata_free, 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* ---- unpin refills the global reserve before granting tickets ---- */

START_TEST(test_unpin_refills_global_first)
{
	struct srsv_ctx *ctx = make_ctx_full(0, GIB, NULL, NULL, 0, 4 * MIB);
	struct srsv_space *meta = srsv_ctx_space(ctx, SRSV_POOL_METADATA);
	struct srsv_rsv *global = srsv_ctx_rsv(ctx, SRSV_RSV_GLOBAL);
	struct srsv_rsv_info ri;
	struct srsv_ticket t;

	/* A 16 MiB pool: the reserve's 4 MiB, 12 MiB used. */
	ck_assert_int_eq(srsv_space_grow(meta, 16 * MIB), 0);
	pool_use(ctx, SRSV_POOL_METADATA, 12 * MIB);
	/* The reserve is drawn on: 4 MiB used out of it. */
	ck_assert_int_eq(srsv_rsv_use(global, 4 * MIB), 0);
	ck_assert_int_eq(srsv_space_alloc(meta, 4 * MIB), 0);
	ck_assert_int_eq(srsv_space_commit_used(meta, 4 * MIB), 0);
	ck_assert_int_eq(srsv_rsv_get_info(global, &ri), 0);
	ck_assert_uint_eq(ri.reserved, 0);
	/* A ticket waits for 2 MiB. */
	ck_assert_int_eq(srsv_ticket_reserve(meta, &t, 2 * MIB, SRSV_FLUSH_ALL,
					     0), -EINPROGRESS);
	/* 3 MiB come free: all to the reserve, the ticket still waits. */
	ck_assert_int_eq(srsv_space_pin(meta, 8 * MIB), 0);
	ck_assert_int_eq(srsv_space_unpin(meta, 3 * MIB), 0);
	ck_assert_int_eq(srsv_rsv_get_info(global, &ri), 0);
	ck_assert_uint_eq(ri.reserved, 3 * MIB);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -EINPROGRESS);
	/* 5 more: 1 tops the reserve up, the ticket gets its 2. */
	ck_assert_int_eq(srsv_space_unpin(meta, 5 * MIB), 0);
	ck_assert_int_eq(srsv_rsv_get_info(global, &ri), 0);
	ck_assert_uint_eq(ri.reserved, 4 * MIB);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), 0);
	ck_assert_uint_eq(snap(ctx, SRSV_POOL_METADATA).may_use, 6 * MIB);
	ck_assert_int_eq(srsv_space_release(meta, 2 * MIB), 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* ---- delalloc: data space before quota (ENOSPC wins over EDQUOT) ---- */

static int quota_flush_count;

static int count_quota_flush(struct srsv_quota *q, void *user)
{
	(void)q; (void)user;
	quota_flush_count++;
	return 0;
}

START_TEST(test_delalloc_enospc_before_edquot)
{
	struct srsv_config cfg;
	struct srsv_ctx *ctx = NULL;
	struct srsv_delalloc_resv r;
	struct srsv_quota *q;
	struct srsv_quota_info qi;
	struct srsv_space_info before;

	ck_assert_int_eq(srsv_config_init(&cfg), 0);
	cfg.flags = SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT;
	cfg.pool_bytes[SRSV_POOL_DATA] = 4 * MIB;
	cfg.pool_bytes[SRSV_POOL_METADATA] = 64 * MIB;
	cfg.unallocated_bytes = 0;
	cfg.quota_flush = count_quota_flush;
	ck_assert_int_eq(srsv_ctx_create(&cfg, &ctx), 0);
	ck_assert_int_eq(srsv_quota_create(ctx, 1, MIB, &q), 0);
	before = snap(ctx, SRSV_POOL_DATA);
	quota_flush_count = 0;
	/* Short of both: -ENOSPC, the quota never asked. */
	for (int mode = SRSV_DELALLOC_NOFLUSH; mode <= SRSV_DELALLOC_LIMIT;
	     mode += 2) {
		ck_assert_int_eq(srsv_delalloc_reserve(ctx, q, 8 * MIB,
				 (enum srsv_delalloc_mode)mode, &r), -ENOSPC);
		ck_assert_int_eq(srsv_quota_snapshot(q, &qi), 0);
		ck_assert_uint_eq(qi.reserved[SRSV_QUOTA_DATA], 0);
	}
	/* Short of quota only: -EDQUOT, the data space given back. */
	ck_assert_int_eq(srsv_delalloc_reserve(ctx, q, 2 * MIB,
			 SRSV_DELALLOC_NOFLUSH, &r), -EDQUOT);
	ck_assert_uint_eq(snap(ctx, SRSV_POOL_DATA).may_use, before.may_use);
	ck_assert_int_eq(quota_flush_count, 0);
	/* Both fine: data, quota and metadata held. */
	ck_assert_int_eq(srsv_delalloc_reserve(ctx, q, 512 * 1024,
			 SRSV_DELALLOC_NOFLUSH, &r), 0);
	ck_assert_uint_eq(snap(ctx, SRSV_POOL_DATA).may_use, 512 * 1024);
	ck_assert_int_eq(srsv_delalloc_release(&r), 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* ---- bad input: a clear errno, nothing changed ---- */

struct world {
	struct srsv_space_info data, meta;
	uint64_t unallocated;
	struct srsv_bgroup_stats st;
	struct srsv_bgroup_info g0, g1;
};

static struct world world_of(struct srsv_ctx *ctx)
{
	struct world w;

	memset(&w, 0, sizeof(w));
	w.data = snap(ctx, SRSV_POOL_DATA);
	w.meta = snap(ctx, SRSV_POOL_METADATA);
	w.unallocated = srsv_ctx_unallocated(ctx);
	w.st = bstats(ctx);
	w.g0 = gi(ctx, 0);
	w.g1 = gi(ctx, GIB);
	return w;
}

static void ck_same_world(const struct world *a, const struct world *b)
{
	ck_assert_uint_eq(a->data.total, b->data.total);
	ck_assert_uint_eq(a->data.readonly, b->data.readonly);
	ck_assert_uint_eq(a->data.may_use, b->data.may_use);
	ck_assert_uint_eq(a->meta.total, b->meta.total);
	ck_assert_uint_eq(a->unallocated, b->unallocated);
	ck_assert_int_eq(memcmp(&a->st, &b->st, sizeof(a->st)), 0);
	ck_assert_int_eq(memcmp(&a->g0, &b->g0, sizeof(a->g0)), 0);
	ck_assert_int_eq(memcmp(&a->g1, &b->g1, sizeof(a->g1)), 0);
}

START_TEST(test_bad_input)
{
	struct srsv_ctx *ctx = make_ctx(10 * GIB, GIB);
	struct srsv_ctx *plain = make_ctx_full(GIB, GIB, NULL, NULL, 0, 0);
	struct srsv_bgroup_config bc;
	struct srsv_bgroup_info info;
	struct srsv_statfs st;
	struct world w0, w1;
	uint64_t start;

	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, 0, GIB), 0);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_METADATA, GIB, GIB),
			 0);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, 0, MIB), 0);
	w0 = world_of(ctx);

	/* Configuration. */
	ck_assert_int_eq(srsv_bgroup_config_init(NULL), -EINVAL);
	ck_assert_int_eq(srsv_bgroup_config_init(&bc), 0);
	ck_assert_int_eq(srsv_bgroups_init(ctx, &bc), -EALREADY);
	ck_assert_int_eq(srsv_bgroups_init(NULL, &bc), -EINVAL);
	ck_assert_int_eq(srsv_bgroups_init(plain, NULL), -EINVAL);
	bc.reclaim_threshold_pct = 101;
	ck_assert_int_eq(srsv_bgroups_init(plain, &bc), -EINVAL);
	bc.reclaim_threshold_pct = 0;
	bc.data_raid_factor = 0;
	ck_assert_int_eq(srsv_bgroups_init(plain, &bc), -EINVAL);
	bc.data_raid_factor = 5;
	ck_assert_int_eq(srsv_bgroups_init(plain, &bc), -EINVAL);
	bc.data_raid_factor = 1;
	bc.size = sizeof(bc) - 1;
	ck_assert_int_eq(srsv_bgroups_init(plain, &bc), -EINVAL);
	/* A ctx without a table. */
	ck_assert_int_eq(srsv_bgroup_add(plain, SRSV_POOL_DATA, 0, MIB),
			 -EINVAL);
	ck_assert_int_eq(srsv_bgroup_alloc(plain, SRSV_POOL_DATA, 0, MIB),
			 -EINVAL);
	ck_assert_int_eq(srsv_bgroup_free(plain, SRSV_POOL_DATA, 0, MIB, 1),
			 -EINVAL);
	ck_assert_int_eq(srsv_ctx_commit_done(plain, 1), -EINVAL);
	ck_assert_int_eq(srsv_bgroup_remove(plain, SRSV_POOL_DATA, 0), -EINVAL);
	ck_assert_int_eq(srsv_bgroup_get(plain, 0, &info), -EINVAL);
	ck_assert_int_eq(srsv_bgroup_next(plain, 0, &info), -EINVAL);
	ck_assert_int_eq(srsv_bgroup_find_free(plain, SRSV_POOL_DATA, 1,
					       &start), -EINVAL);
	ck_assert_int_eq(srsv_bgroup_reclaim_take(plain, &info), -EINVAL);
	ck_assert_int_eq(srsv_bgroup_reclaim_done(plain, 0, 0), -EINVAL);
	ck_assert_int_eq(srsv_bgroup_stats(plain, NULL), -EINVAL);
	ck_assert_int_eq(srsv_bgroup_reclaim_threshold(plain, SRSV_POOL_DATA),
			 -EINVAL);
	ck_assert_int_eq(srsv_ctx_statfs(NULL, &st), -EINVAL);
	ck_assert_int_eq(srsv_ctx_statfs(ctx, NULL), -EINVAL);

	/* Overlapping, empty, wrapping groups; no such pool; no room. */
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, GIB / 2, GIB),
			 -EINVAL);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, GIB - 1, 2),
			 -EINVAL);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, 2 * GIB - 1, 2),
			 -EINVAL);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, 4 * GIB, 0),
			 -EINVAL);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, UINT64_MAX - 10,
					 20), -EINVAL);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_MIXED, 4 * GIB, GIB),
			 -EINVAL);
	ck_assert_int_eq(srsv_bgroup_add(ctx, (enum srsv_pool)9, 4 * GIB, GIB),
			 -EINVAL);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, 4 * GIB,
					 9 * GIB), -ENOSPC);
	w1 = world_of(ctx);
	ck_same_world(&w0, &w1);

	/* Unknown group, a group of another pool, an extent that leaves
	 * its group, more than is used or free, a committed transaction. */
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, 5 * GIB, MIB),
			 -ENOENT);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, 5 * GIB, MIB, 1),
			 -ENOENT);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_METADATA, 0, MIB),
			 -EINVAL);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_METADATA, 0, MIB, 1),
			 -EINVAL);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, GIB - MIB,
					   2 * MIB), -EINVAL);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, 0, GIB), -EINVAL);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, 0, 0), -EINVAL);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, 0, 2 * MIB, 1),
			 -EINVAL);
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 5), 0);
	w0 = world_of(ctx);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, 0, MIB, 5),
			 -EINVAL);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, 0, MIB / 2, 6),
			 0);
	/* A third open transaction in the same bucket. */
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, 0, MIB / 4, 8),
			 -EINVAL);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, 0, MIB / 2),
			 0);
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 6), 0);
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 6), -EINVAL);
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 0), -EINVAL);
	w0 = world_of(ctx);

	/* Removing: still used, unknown, inside a group, another pool. */
	ck_assert_int_eq(srsv_bgroup_remove(ctx, SRSV_POOL_DATA, 0), -EBUSY);
	ck_assert_int_eq(srsv_bgroup_remove(ctx, SRSV_POOL_DATA, 7 * GIB),
			 -ENOENT);
	ck_assert_int_eq(srsv_bgroup_remove(ctx, SRSV_POOL_DATA, MIB), -EINVAL);
	ck_assert_int_eq(srsv_bgroup_remove(ctx, SRSV_POOL_DATA, GIB), -EINVAL);
	ck_assert_int_eq(srsv_bgroup_remove(ctx, (enum srsv_pool)-1, GIB),
			 -EINVAL);
	/* Reclaim: nothing taken, nothing to take, bad result. */
	ck_assert_int_eq(srsv_bgroup_reclaim_take(ctx, NULL), -EINVAL);
	ck_assert_int_eq(srsv_bgroup_reclaim_take(ctx, &info), -ENOENT);
	ck_assert_int_eq(srsv_bgroup_reclaim_done(ctx, 0, 0), -EINVAL);
	ck_assert_int_eq(srsv_bgroup_reclaim_done(ctx, 0, 1), -EINVAL);
	ck_assert_int_eq(srsv_bgroup_reclaim_done(ctx, 9 * GIB, 0), -ENOENT);
	ck_assert_int_eq(srsv_bgroup_reclaim_done(ctx, MIB, -EIO), -EINVAL);
	/* Queries. */
	ck_assert_int_eq(srsv_bgroup_get(ctx, 3 * GIB, &info), -ENOENT);
	ck_assert_int_eq(srsv_bgroup_get(ctx, 0, NULL), -EINVAL);
	ck_assert_int_eq(srsv_bgroup_next(ctx, 0, NULL), -EINVAL);
	ck_assert_int_eq(srsv_bgroup_find_free(ctx, SRSV_POOL_DATA, 0, &start),
			 -EINVAL);
	ck_assert_int_eq(srsv_bgroup_find_free(ctx, SRSV_POOL_DATA, 1, NULL),
			 -EINVAL);
	ck_assert_int_eq(srsv_bgroup_find_free(ctx, SRSV_POOL_DATA, GIB,
					       &start), -ENOSPC);
	ck_assert_int_eq(srsv_bgroup_reclaim_threshold(ctx, (enum srsv_pool)7),
			 -EINVAL);
	w1 = world_of(ctx);
	ck_same_world(&w0, &w1);
	srsv_ctx_destroy(plain);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* ---- real threads: extents in and out while commits return groups ---- */

#define THR_N 4
#define THR_ROUNDS 2000
#define THR_GROUP (4 * MIB)

struct thr {
	struct srsv_ctx *ctx;
	unsigned id;
	volatile int *stop;
	uint64_t *trans;	/* current transaction, read under trans_lock */
	pthread_mutex_t *trans_lock;
	uint64_t held;		/* bytes this thread still has placed */
};

static void *thr_main(void *arg)
{
	struct thr *t = arg;
	uint64_t at[64], bytes[64];
	unsigned nr = 0;

	for (unsigned r = 0; r < THR_ROUNDS; r++) {
		uint64_t start;

		if (nr < 64 && (r % 3 != 2 || !nr)) {
			uint64_t b = (uint64_t)(1 + (r + t->id) % 16) * 4096;

			if (srsv_bgroup_find_free(t->ctx, SRSV_POOL_DATA, b,
						  &start) ||
			    srsv_bgroup_alloc(t->ctx, SRSV_POOL_DATA, start, b))
				continue;	/* raced: someone took it */
			at[nr] = start;
			bytes[nr++] = b;
			t->held += b;
		} else {
			uint64_t trans;

			nr--;
			pthread_mutex_lock(t->trans_lock);
			trans = *t->trans;
			ck_assert_int_eq(srsv_bgroup_free(t->ctx, SRSV_POOL_DATA,
					 at[nr], bytes[nr], trans), 0);
			pthread_mutex_unlock(t->trans_lock);
			t->held -= bytes[nr];
		}
	}
	while (nr--) {
		pthread_mutex_lock(t->trans_lock);
		ck_assert_int_eq(srsv_bgroup_free(t->ctx, SRSV_POOL_DATA, at[nr],
						  bytes[nr], *t->trans), 0);
		pthread_mutex_unlock(t->trans_lock);
		t->held -= bytes[nr];
	}
	return NULL;
}

START_TEST(test_threads)
{
	struct srsv_ctx *ctx = make_ctx(64 * GIB, 64 * MIB);
	pthread_mutex_t trans_lock = PTHREAD_MUTEX_INITIALIZER;
	struct thr t[THR_N];
	pthread_t tid[THR_N];
	volatile int stop = 0;
	uint64_t trans = 1, from = 0, used = 0;
	struct srsv_bgroup_info info;
	int returned = 0;

	for (int i = 0; i < 32; i++)
		ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA,
						 (uint64_t)i * THR_GROUP,
						 THR_GROUP), 0);
	for (unsigned i = 0; i < THR_N; i++) {
		t[i] = (struct thr){ .ctx = ctx, .id = i, .stop = &stop,
				     .trans = &trans,
				     .trans_lock = &trans_lock };
		ck_assert_int_eq(pthread_create(&tid[i], NULL, thr_main, &t[i]),
				 0);
	}
	/* The committer: transactions end while the threads work. */
	for (int c = 0; c < 200; c++) {
		struct srsv_statfs st;
		uint64_t done;
		int ret;

		pthread_mutex_lock(&trans_lock);
		done = trans++;
		pthread_mutex_unlock(&trans_lock);
		ret = srsv_ctx_commit_done(ctx, done);
		ck_assert_int_ge(ret, 0);
		returned += ret;
		ck_assert_int_eq(srsv_ctx_statfs(ctx, &st), 0);
	}
	for (unsigned i = 0; i < THR_N; i++)
		ck_assert_int_eq(pthread_join(tid[i], NULL), 0);
	ck_assert_int_ge(srsv_ctx_commit_done(ctx, trans), 0);
	/* Nothing lost: every group is empty, and every group that went is
	 * back in unallocated. */
	while (!srsv_bgroup_next(ctx, from, &info)) {
		used += info.used + info.pinned;
		from = info.start + info.length;
	}
	ck_assert_uint_eq(used, 0);
	for (unsigned i = 0; i < THR_N; i++)
		ck_assert_uint_eq(t[i].held, 0);
	ck_assert_uint_eq(srsv_ctx_unallocated(ctx) +
			  snap(ctx, SRSV_POOL_DATA).total, 64 * GIB);
	ck_assert_uint_eq(snap(ctx, SRSV_POOL_DATA).total,
			  bstats(ctx).nr_groups * THR_GROUP);
	(void)returned;
	srsv_ctx_destroy(ctx);
}
END_TEST

static Suite *bgroup_suite(void)
{
	Suite *s = suite_create("bgroup");
	TCase *groups = tcase_create("groups");
	TCase *rules = tcase_create("rules");
	TCase *reclaim = tcase_create("reclaim");
	TCase *statfs = tcase_create("statfs");
	TCase *fidelity = tcase_create("fidelity");
	TCase *bad = tcase_create("bad_input");
	TCase *threads = tcase_create("threads");

	tcase_add_test(groups, test_add_takes_unallocated);
	tcase_add_test(groups, test_add_raid_factor);
	tcase_add_test(groups, test_unused_returns_at_commit);
	tcase_add_test(groups, test_free_unpinned);
	tcase_add_test(groups, test_last_group_kept);
	tcase_add_test(groups, test_reserved_space_keeps_group);
	tcase_add_test(rules, test_dynamic_threshold_table);
	tcase_add_test(rules, test_fixed_threshold);
	tcase_add_test(rules, test_sweep_reclaim_marks);
	tcase_add_test(rules, test_alloc_resets_mark);
	tcase_add_test(rules, test_urgent_takes_fresh);
	tcase_add_test(reclaim, test_take_relocate_done);
	tcase_add_test(reclaim, test_take_batch_bound);
	tcase_add_test(reclaim, test_take_skip_rules_and_bytes);
	tcase_add_test(reclaim, test_meta_ticket_served_by_data_reclaim);
	tcase_add_test(reclaim, test_meta_ticket_fails_without_relocation);
	tcase_add_test(reclaim, test_reclaim_chunks_not_called_without_candidates);
	tcase_add_test(reclaim, test_round_ends_only_its_own_groups);
	tcase_add_test(statfs, test_statfs_table);
	tcase_add_test(statfs, test_statfs_mixed_and_factor);
	tcase_add_test(statfs, test_factor_limits);
	tcase_add_test(fidelity, test_unpin_refills_global_first);
	tcase_add_test(fidelity, test_delalloc_enospc_before_edquot);
	tcase_add_test(bad, test_bad_input);
	tcase_add_test(threads, test_threads);
	suite_add_tcase(s, groups);
	suite_add_tcase(s, rules);
	suite_add_tcase(s, reclaim);
	suite_add_tcase(s, statfs);
	suite_add_tcase(s, fidelity);
	suite_add_tcase(s, bad);
	suite_add_tcase(s, threads);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(bgroup_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
