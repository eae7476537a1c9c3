/* SPDX-License-Identifier: MIT */
/*
 * Rescue before failing (lib/flush.c, try_rescue()): every walk that may
 * commit and is about to fail while its pool is full first relocates
 * underused chunks of the other pools (RECLAIM_CHUNKS) and commits, at
 * most four rounds per walk.  Deterministic, in manual mode: the async
 * walks run in srsv_ctx_run_pending(), a priority ticket's walk in
 * srsv_ticket_wait(), both in this thread.
 *
 * - a FLUSH_EVICT (priority) metadata ticket served by reclaiming data
 *   chunks; FLUSH_LIMIT only when its array may commit;
 * - a FLUSH_DATA ticket served by reclaiming underused metadata chunks;
 * - NO_FLUSH and NOWAIT requests that do not trigger it (no callback);
 * - an engine whose relocations all fail: bounded rounds, -ENOSPC, and
 *   every counter back where it was.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <check.h>

#include <libspacersv/spacersv.h>

#define MIB (UINT64_C(1) << 20)

/* What the engine does with RECLAIM_CHUNKS. */
enum relocate {
	RELOCATE_MOVE,		/* moves the live extents, as spacefs does */
	RELOCATE_FAIL,		/* takes each group, fails to move it */
	RELOCATE_NONE,		/* -EOPNOTSUPP */
};

struct sim {
	struct srsv_ctx *ctx;
	uint64_t trans;
	uint64_t pinned[SRSV_POOL_COUNT];
	unsigned calls[SRSV_STATE_COUNT];
	enum relocate relocate;
	uint64_t chunk[SRSV_POOL_COUNT];	/* chunk size per pool */
	uint64_t next;				/* next chunk address */
};

static unsigned all_calls(const struct sim *sim)
{
	unsigned n = 0;

	for (int i = 0; i < SRSV_STATE_COUNT; i++)
		n += sim->calls[i];
	return n;
}

/* Pool-level used bytes (reserve, alloc, commit). */
static void pool_use(struct srsv_ctx *ctx, int pool, uint64_t bytes)
{
	struct srsv_space *s = srsv_ctx_space(ctx, pool);

	ck_assert_int_eq(srsv_space_reserve(s, bytes, SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_space_alloc(s, bytes), 0);
	ck_assert_int_eq(srsv_space_commit_used(s, bytes), 0);
}

/* A chunk of @pool at the next address, @used bytes of it live. */
static uint64_t add_chunk(struct sim *sim, int pool, uint64_t used)
{
	uint64_t at = sim->next;

	ck_assert_int_eq(srsv_bgroup_add(sim->ctx, pool, at, sim->chunk[pool]),
			 0);
	sim->next += sim->chunk[pool];
	if (used) {
		ck_assert_int_eq(srsv_bgroup_alloc(sim->ctx, pool, at, used), 0);
		pool_use(sim->ctx, pool, used);
	}
	return at;
}

static void sim_relocate(struct sim *sim)
{
	struct srsv_bgroup_info t;

	while (srsv_bgroup_reclaim_take(sim->ctx, &t) == 0) {
		struct srsv_space *s = srsv_ctx_space(sim->ctx, t.pool);
		uint64_t to;
		int ret = -ENOSPC;

		if (sim->relocate == RELOCATE_MOVE)
			ret = t.used ? srsv_bgroup_find_free(sim->ctx, t.pool,
							     t.used, &to) : 0;
		if (!ret && t.used) {
			ck_assert_int_eq(srsv_bgroup_alloc(sim->ctx, t.pool, to,
							   t.used), 0);
			pool_use(sim->ctx, t.pool, t.used);
			ck_assert_int_eq(srsv_bgroup_free(sim->ctx, t.pool,
					 t.start, t.used, sim->trans), 0);
			ck_assert_int_eq(srsv_space_pin(s, t.used), 0);
			sim->pinned[t.pool] += t.used;
		}
		ck_assert_int_eq(srsv_bgroup_reclaim_done(sim->ctx, t.start,
							  ret), 0);
	}
}

static int sim_flush(struct srsv_space *space, enum srsv_flush_state state,
		     uint64_t bytes, bool for_preempt, void *user)
{
	struct sim *sim = user;
	int pool = srsv_space_kind(space);

	(void)bytes; (void)for_preempt;
	sim->calls[state]++;
	switch (state) {
	case SRSV_STATE_COMMIT_TRANS:
		for (int k = 0; k < SRSV_POOL_COUNT; k++) {
			if (!sim->pinned[k])
				continue;
			ck_assert_int_eq(srsv_space_unpin(srsv_ctx_space(
				sim->ctx, k), sim->pinned[k]), 0);
			sim->pinned[k] = 0;
		}
		ck_assert_int_ge(srsv_ctx_commit_done(sim->ctx, sim->trans), 0);
		sim->trans++;
		return 0;
	case SRSV_STATE_ALLOC_CHUNK:
	case SRSV_STATE_ALLOC_CHUNK_FORCE:
		if (!sim->chunk[pool] ||
		    srsv_bgroup_add(sim->ctx, pool, sim->next, sim->chunk[pool]))
			return -ENOSPC;
		sim->next += sim->chunk[pool];
		return 0;
	case SRSV_STATE_RECLAIM_CHUNKS:
		if (sim->relocate == RELOCATE_NONE)
			return -EOPNOTSUPP;
		sim_relocate(sim);
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

static void sim_ctx(struct sim *sim, uint64_t device, uint64_t data_chunk,
		    bool limit_commits)
{
	struct srsv_bgroup_config bc;
	struct srsv_config cfg;

	ck_assert_int_eq(srsv_config_init(&cfg), 0);
	cfg.flags = SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT;
	cfg.flush = sim_flush;
	cfg.user = sim;
	for (int i = 0; i < SRSV_POOL_COUNT; i++)
		cfg.pool_bytes[i] = 0;
	cfg.unallocated_bytes = device;
	cfg.device_bytes = device;
	cfg.data_chunk_bytes = data_chunk;
	if (limit_commits) {
		/* An engine whose FLUSH_LIMIT callers never hold a
		 * transaction open: its priority array may commit. */
		static const enum srsv_flush_state limit[] = {
			SRSV_STATE_DELAYED_ITEMS_NR, SRSV_STATE_ALLOC_CHUNK,
			SRSV_STATE_COMMIT_TRANS,
		};

		memcpy(cfg.priority_states.states, limit, sizeof(limit));
		cfg.priority_states.nr = 3;
	}
	ck_assert_int_eq(srsv_ctx_create(&cfg, &sim->ctx), 0);
	ck_assert_int_eq(srsv_bgroup_config_init(&bc), 0);
	ck_assert_int_eq(srsv_bgroups_init(sim->ctx, &bc), 0);
}

static struct srsv_space_info snap(struct srsv_ctx *ctx, int pool)
{
	struct srsv_space_info info;

	ck_assert_int_eq(srsv_space_snapshot(srsv_ctx_space(ctx, pool), &info,
					     NULL, 0, NULL), 0);
	return info;
}

static struct srsv_bgroup_stats bstats(struct srsv_ctx *ctx)
{
	struct srsv_bgroup_stats st;

	ck_assert_int_eq(srsv_bgroup_stats(ctx, &st), 0);
	return st;
}

/* No group is read-only or taken; @n groups in all. */
static void groups_writable(struct srsv_ctx *ctx, size_t n)
{
	struct srsv_bgroup_info gi;
	uint64_t from = 0;
	size_t seen = 0;

	while (srsv_bgroup_next(ctx, from, &gi) == 0) {
		ck_assert(!gi.readonly);
		from = gi.start + gi.length;
		seen++;
	}
	ck_assert_uint_eq(seen, n);
}

/* Counters that must come back exactly after a failed rescue. */
static void same_counters(const struct srsv_space_info *a,
			  const struct srsv_space_info *b)
{
	ck_assert_uint_eq(a->total, b->total);
	ck_assert_uint_eq(a->used, b->used);
	ck_assert_uint_eq(a->pinned, b->pinned);
	ck_assert_uint_eq(a->reserved, b->reserved);
	ck_assert_uint_eq(a->may_use, b->may_use);
	ck_assert_uint_eq(a->readonly, b->readonly);
	ck_assert_uint_eq(a->reclaim_size, b->reclaim_size);
}

/*
 * Metadata full, the device all allocated: one 16 MiB metadata chunk, all
 * reserved, and fifteen 64 MiB data chunks at 10% each (the state the
 * "df says free, ENOSPC" report starts from).
 */
#define DCHUNK (64 * MIB)
#define MCHUNK (16 * MIB)

static void meta_full_setup(struct sim *sim, enum relocate relocate,
			    bool limit_commits)
{
	memset(sim, 0, sizeof(*sim));
	sim->trans = 1;
	sim->relocate = relocate;
	sim->chunk[SRSV_POOL_METADATA] = MCHUNK;
	sim_ctx(sim, MCHUNK + 15 * DCHUNK, DCHUNK, limit_commits);
	sim->chunk[SRSV_POOL_DATA] = DCHUNK;
	for (int i = 0; i < 15; i++)
		add_chunk(sim, SRSV_POOL_DATA, DCHUNK / 10);
	sim->chunk[SRSV_POOL_DATA] = 0;		/* data does not grow */
	add_chunk(sim, SRSV_POOL_METADATA, 0);
	ck_assert_uint_eq(srsv_ctx_unallocated(sim->ctx), 0);
	ck_assert_int_eq(srsv_space_reserve(srsv_ctx_space(sim->ctx,
				SRSV_POOL_METADATA), MCHUNK, SRSV_NO_FLUSH, 0), 0);
}

/* A priority ticket of @mode for 1 MiB of metadata, walked in this
 * thread. */
static int priority_ticket(struct sim *sim, enum srsv_flush mode)
{
	struct srsv_space *meta = srsv_ctx_space(sim->ctx, SRSV_POOL_METADATA);
	struct srsv_ticket t;

	ck_assert_int_eq(srsv_ticket_reserve(meta, &t, MIB, mode, 0),
			 -EINPROGRESS);
	return srsv_ticket_wait(&t, UINT64_MAX);
}

static void served_by_data_reclaim(struct sim *sim)
{
	struct srsv_space_info di = snap(sim->ctx, SRSV_POOL_DATA);
	struct srsv_space *meta = srsv_ctx_space(sim->ctx, SRSV_POOL_METADATA);

	ck_assert_uint_eq(sim->calls[SRSV_STATE_RECLAIM_CHUNKS], 1);
	ck_assert_uint_gt(bstats(sim->ctx).returned, 0);
	/* Device space came back: the metadata pool grew into it or
	 * overcommits into it. */
	ck_assert_uint_gt(srsv_ctx_unallocated(sim->ctx) +
			  snap(sim->ctx, SRSV_POOL_METADATA).total, MCHUNK);
	/* No data byte lost: the moved copies are still used. */
	ck_assert_uint_eq(di.used, 15 * (DCHUNK / 10));
	ck_assert_uint_eq(di.readonly, 0);
	ck_assert_uint_eq(di.pinned, 0);
	ck_assert_int_eq(srsv_space_release(meta, MIB + MCHUNK), 0);
	ck_assert_uint_eq(snap(sim->ctx, SRSV_POOL_METADATA).may_use, 0);
}

/* FLUSH_EVICT: its array commits; after it, data chunks are relocated and
 * returned, the walk runs again and its ALLOC_CHUNK grows metadata. */
START_TEST(test_evict_served_by_data_reclaim)
{
	struct sim sim;

	meta_full_setup(&sim, RELOCATE_MOVE, false);
	ck_assert_int_eq(priority_ticket(&sim, SRSV_FLUSH_EVICT), 0);
	/* Its walk ran once (ALLOC_CHUNK failed: full) before the round. */
	ck_assert_uint_ge(sim.calls[SRSV_STATE_ALLOC_CHUNK], 1);
	ck_assert_uint_ge(sim.calls[SRSV_STATE_COMMIT_TRANS], 2);
	served_by_data_reclaim(&sim);
	srsv_ctx_destroy(sim.ctx);
}
END_TEST

/* FLUSH_LIMIT with btrfs's priority array: its caller may hold a
 * transaction open, so nothing that commits runs; it fails, and nothing
 * moved. */
START_TEST(test_limit_not_rescued)
{
	struct sim sim;
	struct srsv_space_info mb, db, ma, da;

	meta_full_setup(&sim, RELOCATE_MOVE, false);
	mb = snap(sim.ctx, SRSV_POOL_METADATA);
	db = snap(sim.ctx, SRSV_POOL_DATA);
	ck_assert_int_eq(priority_ticket(&sim, SRSV_FLUSH_LIMIT), -ENOSPC);
	ck_assert_uint_eq(sim.calls[SRSV_STATE_ALLOC_CHUNK], 1);
	ck_assert_uint_eq(sim.calls[SRSV_STATE_RECLAIM_CHUNKS], 0);
	ck_assert_uint_eq(sim.calls[SRSV_STATE_COMMIT_TRANS], 0);
	ck_assert_uint_eq(bstats(sim.ctx).returned, 0);
	ma = snap(sim.ctx, SRSV_POOL_METADATA);
	da = snap(sim.ctx, SRSV_POOL_DATA);
	same_counters(&mb, &ma);
	same_counters(&db, &da);
	groups_writable(sim.ctx, 16);
	srsv_ctx_destroy(sim.ctx);
}
END_TEST

/* The same ticket on an engine whose priority array may commit: served
 * as the evict ticket is. */
START_TEST(test_limit_rescued_when_array_commits)
{
	struct sim sim;

	meta_full_setup(&sim, RELOCATE_MOVE, true);
	ck_assert_int_eq(priority_ticket(&sim, SRSV_FLUSH_LIMIT), 0);
	served_by_data_reclaim(&sim);
	srsv_ctx_destroy(sim.ctx);
}
END_TEST

/* The asynchronous form of a priority ticket (async.h) walks the same
 * code in srsv_ctx_run_pending(). */
static void async_done(struct srsv_ticket *t, int result, void *arg)
{
	(void)t;
	*(int *)arg = result;
}

START_TEST(test_async_evict_served_by_data_reclaim)
{
	struct sim sim;
	struct srsv_space *meta;
	struct srsv_async *q;
	struct srsv_ticket t;
	int result = 1;

	meta_full_setup(&sim, RELOCATE_MOVE, false);
	meta = srsv_ctx_space(sim.ctx, SRSV_POOL_METADATA);
	ck_assert_int_eq(srsv_async_create(sim.ctx, &q), 0);
	ck_assert_int_eq(srsv_ticket_reserve_async(q, meta, &t, MIB,
			 SRSV_FLUSH_EVICT, 0, UINT64_MAX, async_done, &result),
			 -EINPROGRESS);
	while (srsv_ctx_run_pending(sim.ctx) > 0)
		;
	ck_assert_int_eq(srsv_async_reap(q, NULL, 0), 1);
	ck_assert_int_eq(result, 0);
	served_by_data_reclaim(&sim);
	ck_assert_int_eq(srsv_async_destroy(q), 0);
	srsv_ctx_destroy(sim.ctx);
}
END_TEST

/*
 * The symmetric case: data full, every chunk allocated, four metadata
 * chunks barely used.  A data ticket's async walk forces growth (no room),
 * walks its array, and before failing relocates metadata chunks into one
 * of them; the emptied ones come back and the data pool grows.
 */
#define SCHUNK (16 * MIB)

START_TEST(test_data_served_by_meta_reclaim)
{
	struct sim sim = { .trans = 1, .relocate = RELOCATE_MOVE };
	struct srsv_space *data;
	struct srsv_space_info mi;
	struct srsv_ticket t;

	sim.chunk[SRSV_POOL_METADATA] = SCHUNK;
	sim.chunk[SRSV_POOL_DATA] = SCHUNK;
	sim_ctx(&sim, 6 * SCHUNK, SCHUNK, false);
	data = srsv_ctx_space(sim.ctx, SRSV_POOL_DATA);
	for (int i = 0; i < 4; i++)
		add_chunk(&sim, SRSV_POOL_METADATA, MIB);
	add_chunk(&sim, SRSV_POOL_DATA, 0);
	add_chunk(&sim, SRSV_POOL_DATA, 0);
	ck_assert_uint_eq(srsv_ctx_unallocated(sim.ctx), 0);
	ck_assert_int_eq(srsv_space_reserve(data, 2 * SCHUNK, SRSV_NO_FLUSH, 0),
			 0);

	ck_assert_int_eq(srsv_ticket_reserve(data, &t, 8 * MIB, SRSV_FLUSH_DATA,
					     0), -EINPROGRESS);
	while (srsv_ctx_run_pending(sim.ctx) > 0)
		;
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), 0);
	ck_assert_uint_eq(sim.calls[SRSV_STATE_RECLAIM_CHUNKS], 1);
	ck_assert_uint_gt(bstats(sim.ctx).returned, 0);
	ck_assert_uint_gt(snap(sim.ctx, SRSV_POOL_DATA).total, 2 * SCHUNK);
	mi = snap(sim.ctx, SRSV_POOL_METADATA);
	/* No metadata byte lost, none left read-only or pinned. */
	ck_assert_uint_eq(mi.used, 4 * MIB);
	ck_assert_uint_eq(mi.readonly, 0);
	ck_assert_uint_eq(mi.pinned, 0);
	ck_assert_uint_lt(mi.total, 4 * SCHUNK);
	ck_assert_int_eq(srsv_space_release(data, 2 * SCHUNK + 8 * MIB), 0);
	srsv_ctx_destroy(sim.ctx);
}
END_TEST

/*
 * NO_FLUSH never flushes and NOWAIT never waits or calls back: neither
 * triggers chunk reclaim, whatever the candidates, and nothing changes.
 */
START_TEST(test_noflush_nowait_no_rescue)
{
	struct sim sim;
	struct srsv_space *meta, *data;
	struct srsv_space_info mb, db, ma, da;
	struct srsv_ticket t;
	uint64_t unalloc;

	meta_full_setup(&sim, RELOCATE_MOVE, false);
	meta = srsv_ctx_space(sim.ctx, SRSV_POOL_METADATA);
	data = srsv_ctx_space(sim.ctx, SRSV_POOL_DATA);
	/* Data full too: its requests would need a walk as well. */
	ck_assert_int_eq(srsv_space_reserve(data, 15 * DCHUNK -
			 15 * (DCHUNK / 10), SRSV_NO_FLUSH, 0), 0);
	mb = snap(sim.ctx, SRSV_POOL_METADATA);
	db = snap(sim.ctx, SRSV_POOL_DATA);
	unalloc = srsv_ctx_unallocated(sim.ctx);

	ck_assert_int_eq(srsv_space_reserve(meta, MIB, SRSV_NO_FLUSH, 0),
			 -ENOSPC);
	ck_assert_int_eq(srsv_space_reserve(data, MIB, SRSV_NO_FLUSH, 0),
			 -ENOSPC);
	for (int m = SRSV_FLUSH_LIMIT; m <= SRSV_FLUSH_ALL_STEAL; m++) {
		struct srsv_space *s = m == SRSV_FLUSH_DATA ||
				       m == SRSV_FLUSH_FREE_SPACE_INODE ?
				       data : meta;

		ck_assert_int_eq(srsv_space_reserve(s, MIB, m,
				 SRSV_RESERVE_NOWAIT), -EAGAIN);
		ck_assert_int_eq(srsv_ticket_reserve(s, &t, MIB, m,
				 SRSV_RESERVE_NOWAIT), -EAGAIN);
	}
	/* EMERGENCY never waits: granted if it physically fits. */
	if (srsv_space_reserve(meta, MIB, SRSV_FLUSH_EMERGENCY, 0) == 0)
		ck_assert_int_eq(srsv_space_release(meta, MIB), 0);
	/* Nothing queued, no walk pending, no callback. */
	ck_assert_int_eq(srsv_ctx_run_pending(sim.ctx), 0);
	ck_assert_uint_eq(all_calls(&sim), 0);
	ck_assert_uint_eq(bstats(sim.ctx).marked, 0);
	ma = snap(sim.ctx, SRSV_POOL_METADATA);
	da = snap(sim.ctx, SRSV_POOL_DATA);
	same_counters(&mb, &ma);
	same_counters(&db, &da);
	ck_assert_uint_eq(srsv_ctx_unallocated(sim.ctx), unalloc);
	groups_writable(sim.ctx, 16);
	srsv_ctx_destroy(sim.ctx);
}
END_TEST

/*
 * An engine that takes every candidate and fails to move it: each round
 * calls it once, the walk stops after four, the ticket fails with
 * -ENOSPC, and every counter is where it was.  For each kind of walk.
 */
static void bounded(enum srsv_flush mode)
{
	struct sim sim;
	struct srsv_space *meta;
	struct srsv_space_info mb, db, ma, da;
	struct srsv_bgroup_stats st;
	struct srsv_ticket t;
	int ret;

	meta_full_setup(&sim, RELOCATE_FAIL, false);
	meta = srsv_ctx_space(sim.ctx, SRSV_POOL_METADATA);
	mb = snap(sim.ctx, SRSV_POOL_METADATA);
	db = snap(sim.ctx, SRSV_POOL_DATA);
	ck_assert_int_eq(srsv_ticket_reserve(meta, &t, MIB, mode, 0),
			 -EINPROGRESS);
	if (mode == SRSV_FLUSH_ALL) {
		while (srsv_ctx_run_pending(sim.ctx) > 0)
			;
		ret = srsv_ticket_wait(&t, 0);
	} else {
		ret = srsv_ticket_wait(&t, UINT64_MAX);
	}
	ck_assert_int_eq(ret, -ENOSPC);
	ck_assert_uint_eq(sim.calls[SRSV_STATE_RECLAIM_CHUNKS], 4);
	st = bstats(sim.ctx);
	ck_assert_uint_gt(st.reclaim_failed, 0);
	ck_assert_uint_eq(st.reclaimed, 0);
	ck_assert_uint_eq(st.returned, 0);
	ma = snap(sim.ctx, SRSV_POOL_METADATA);
	da = snap(sim.ctx, SRSV_POOL_DATA);
	same_counters(&mb, &ma);
	same_counters(&db, &da);
	ck_assert_uint_eq(srsv_ctx_unallocated(sim.ctx), 0);
	groups_writable(sim.ctx, 16);
	ck_assert_int_eq(srsv_space_release(meta, MCHUNK), 0);
	srsv_ctx_destroy(sim.ctx);
}

START_TEST(test_bounded_async_metadata)
{
	bounded(SRSV_FLUSH_ALL);
}
END_TEST

START_TEST(test_bounded_evict)
{
	bounded(SRSV_FLUSH_EVICT);
}
END_TEST

/* The data walk's rounds are bounded the same way. */
START_TEST(test_bounded_data)
{
	struct sim sim = { .trans = 1, .relocate = RELOCATE_FAIL };
	struct srsv_space *data;
	struct srsv_space_info mb, db, ma, da;
	struct srsv_ticket t;

	sim.chunk[SRSV_POOL_METADATA] = SCHUNK;
	sim.chunk[SRSV_POOL_DATA] = SCHUNK;
	sim_ctx(&sim, 6 * SCHUNK, SCHUNK, false);
	data = srsv_ctx_space(sim.ctx, SRSV_POOL_DATA);
	for (int i = 0; i < 4; i++)
		add_chunk(&sim, SRSV_POOL_METADATA, MIB);
	add_chunk(&sim, SRSV_POOL_DATA, 0);
	add_chunk(&sim, SRSV_POOL_DATA, 0);
	ck_assert_int_eq(srsv_space_reserve(data, 2 * SCHUNK, SRSV_NO_FLUSH, 0),
			 0);
	mb = snap(sim.ctx, SRSV_POOL_METADATA);
	db = snap(sim.ctx, SRSV_POOL_DATA);
	ck_assert_int_eq(srsv_ticket_reserve(data, &t, 8 * MIB, SRSV_FLUSH_DATA,
					     0), -EINPROGRESS);
	while (srsv_ctx_run_pending(sim.ctx) > 0)
		;
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -ENOSPC);
	ck_assert_uint_eq(sim.calls[SRSV_STATE_RECLAIM_CHUNKS], 4);
	ma = snap(sim.ctx, SRSV_POOL_METADATA);
	da = snap(sim.ctx, SRSV_POOL_DATA);
	same_counters(&mb, &ma);
	same_counters(&db, &da);
	ck_assert_uint_eq(srsv_ctx_unallocated(sim.ctx), 0);
	groups_writable(sim.ctx, 6);
	ck_assert_int_eq(srsv_space_release(data, 2 * SCHUNK), 0);
	srsv_ctx_destroy(sim.ctx);
}
END_TEST

/* An engine without RECLAIM_CHUNKS: one call, then the state is off for
 * the pool; the evict ticket fails as before block groups. */
START_TEST(test_no_relocation_one_call)
{
	struct sim sim;

	meta_full_setup(&sim, RELOCATE_NONE, false);
	ck_assert_int_eq(priority_ticket(&sim, SRSV_FLUSH_EVICT), -ENOSPC);
	ck_assert_uint_eq(sim.calls[SRSV_STATE_RECLAIM_CHUNKS], 1);
	ck_assert_int_eq(priority_ticket(&sim, SRSV_FLUSH_EVICT), -ENOSPC);
	ck_assert_uint_eq(sim.calls[SRSV_STATE_RECLAIM_CHUNKS], 1);
	groups_writable(sim.ctx, 16);
	ck_assert_int_eq(srsv_space_release(srsv_ctx_space(sim.ctx,
				SRSV_POOL_METADATA), MCHUNK), 0);
	srsv_ctx_destroy(sim.ctx);
}
END_TEST

/* A ctx in an error state fails its evict ticket with the error, without
 * relocating anything. */
START_TEST(test_error_no_rescue)
{
	struct sim sim;

	struct srsv_ticket t;

	meta_full_setup(&sim, RELOCATE_MOVE, false);
	ck_assert_int_eq(srsv_ticket_reserve(srsv_ctx_space(sim.ctx,
			 SRSV_POOL_METADATA), &t, MIB, SRSV_FLUSH_EVICT, 0),
			 -EINPROGRESS);
	ck_assert_int_eq(srsv_ctx_set_error(sim.ctx, -EIO), 0);
	ck_assert_int_eq(srsv_ticket_wait(&t, UINT64_MAX), -EIO);
	ck_assert_uint_eq(sim.calls[SRSV_STATE_RECLAIM_CHUNKS], 0);
	srsv_ctx_destroy(sim.ctx);
}
END_TEST

static Suite *rescue_suite(void)
{
	Suite *s = suite_create("bgroup_rescue");
	TCase *served = tcase_create("served");
	TCase *refused = tcase_create("not_rescued");
	TCase *bound = tcase_create("bounded");

	tcase_add_test(served, test_evict_served_by_data_reclaim);
	tcase_add_test(served, test_limit_rescued_when_array_commits);
	tcase_add_test(served, test_async_evict_served_by_data_reclaim);
	tcase_add_test(served, test_data_served_by_meta_reclaim);
	tcase_add_test(refused, test_limit_not_rescued);
	tcase_add_test(refused, test_noflush_nowait_no_rescue);
	tcase_add_test(refused, test_error_no_rescue);
	tcase_add_test(bound, test_bounded_async_metadata);
	tcase_add_test(bound, test_bounded_evict);
	tcase_add_test(bound, test_bounded_data);
	tcase_add_test(bound, test_no_relocation_one_call);
	suite_add_tcase(s, served);
	suite_add_tcase(s, refused);
	suite_add_tcase(s, bound);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(rescue_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
