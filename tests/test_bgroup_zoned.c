/* SPDX-License-Identifier: MIT */
/*
 * One group model: zone groups are block groups that carry zoned state,
 * in the ctx's one group table (lib/bgroup.c, lib/zoned.c).  A zone group
 * and a chunk in one table: overlaps refused both ways with nothing
 * changed, iteration and stats see both, statfs counts both (and does not
 * count zone_unusable as available); the block-group calls on a zone
 * group with zoned semantics (sequential alloc at the write pointer,
 * freed bytes below it become zone_unusable, at once or at the commit;
 * an emptied zone group is reset by RESET_ZONES in its pool, not returned
 * by the commit); and a threaded run of table walks against zone
 * allocation and registration, for TSan.
 *
 * Deterministic tests use a manual-mode ctx; the threaded test does a
 * fixed amount of work, never a duration.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include <check.h>

#include <libspacersv/spacersv.h>

#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)
#define ZONE (256 * MIB)
#define DEVICE (8 * GIB)

struct log {
	unsigned resets;
	unsigned relocations;
};

static int on_reset(struct srsv_zone_group *g, void *user)
{
	struct log *l = user;

	(void)g;
	__atomic_fetch_add(&l->resets, 1, __ATOMIC_RELAXED);
	return 0;
}

static int on_relocate(struct srsv_zone_group *g, void *user)
{
	struct log *l = user;

	(void)g;
	__atomic_fetch_add(&l->relocations, 1, __ATOMIC_RELAXED);
	return -EIO;	/* leave it: the test looks at the candidate only */
}

static int no_flush(struct srsv_space *space, enum srsv_flush_state state,
		    uint64_t bytes, bool for_preempt, void *user)
{
	(void)space; (void)state; (void)bytes; (void)for_preempt; (void)user;
	return -EOPNOTSUPP;
}

/* A manual zoned ctx with empty pools and @unalloc of unallocated space,
 * zoned (with @l's callbacks) and, if @chunks, with a configured table. */
static struct srsv_ctx *make_ctx(struct log *l, bool chunks, unsigned flags)
{
	struct srsv_zoned_config zc;
	struct srsv_config cfg;
	struct srsv_ctx *ctx = NULL;

	ck_assert_int_eq(srsv_config_init(&cfg), 0);
	cfg.flags = SRSV_CTX_MANUAL | SRSV_CTX_ZONED | SRSV_CTX_NO_PREEMPT |
		    flags;
	cfg.flush = no_flush;
	cfg.user = l;
	cfg.zone_bytes = ZONE;
	for (int i = 0; i < SRSV_POOL_COUNT; i++)
		cfg.pool_bytes[i] = 0;
	cfg.unallocated_bytes = 4 * GIB;
	cfg.device_bytes = DEVICE;
	cfg.data_chunk_bytes = ZONE;
	ck_assert_int_eq(srsv_ctx_create(&cfg, &ctx), 0);
	ck_assert_int_eq(srsv_zoned_config_init(&zc), 0);
	zc.zone_reset = on_reset;
	zc.zone_relocate = l ? on_relocate : NULL;
	ck_assert_int_eq(srsv_zoned_init(ctx, &zc), 0);
	if (chunks) {
		struct srsv_bgroup_config bc;

		ck_assert_int_eq(srsv_bgroup_config_init(&bc), 0);
		bc.periodic_reclaim = false;
		bc.dynamic_reclaim = false;
		/* The table's one threshold, which zones use too. */
		bc.reclaim_threshold_pct = 75;
		ck_assert_int_eq(srsv_bgroups_init(ctx, &bc), 0);
		ck_assert_int_eq(srsv_bgroups_init(ctx, &bc), -EALREADY);
	}
	return ctx;
}

static struct srsv_zone_group *zadd(struct srsv_ctx *ctx, int kind,
				    uint64_t start, uint64_t length,
				    uint64_t capacity)
{
	struct srsv_zone_group *g = NULL;

	ck_assert_int_eq(srsv_zone_group_add(ctx, kind, start, length,
					     capacity, &g), 0);
	ck_assert_ptr_nonnull(g);
	return g;
}

static struct srsv_space_info snap(struct srsv_ctx *ctx, int pool)
{
	struct srsv_space_info info;

	ck_assert_int_eq(srsv_space_snapshot(srsv_ctx_space(ctx, pool), &info,
					     NULL, 0, NULL), 0);
	return info;
}

static void ck_same_space(const struct srsv_space_info *a,
			  const struct srsv_space_info *b)
{
	ck_assert_uint_eq(a->total, b->total);
	ck_assert_uint_eq(a->used, b->used);
	ck_assert_uint_eq(a->reserved, b->reserved);
	ck_assert_uint_eq(a->pinned, b->pinned);
	ck_assert_uint_eq(a->may_use, b->may_use);
	ck_assert_uint_eq(a->zone_unusable, b->zone_unusable);
}

static struct srsv_zone_group_info zinfo(struct srsv_zone_group *g)
{
	struct srsv_zone_group_info info;

	ck_assert_int_eq(srsv_zone_group_info(g, &info), 0);
	return info;
}

static struct srsv_bgroup_info bginfo(struct srsv_ctx *ctx, uint64_t addr)
{
	struct srsv_bgroup_info info;

	ck_assert_int_eq(srsv_bgroup_get(ctx, addr, &info), 0);
	return info;
}

static uint64_t nr_groups(struct srsv_ctx *ctx)
{
	struct srsv_bgroup_stats st;

	ck_assert_int_eq(srsv_bgroup_stats(ctx, &st), 0);
	return st.nr_groups;
}

static struct srsv_statfs statfs_of(struct srsv_ctx *ctx)
{
	struct srsv_statfs st;

	ck_assert_int_eq(srsv_ctx_statfs(ctx, &st), 0);
	return st;
}

/* The pool half of an engine's write of @bytes (reserve, alloc, used). */
static void pool_write(struct srsv_ctx *ctx, int pool, uint64_t bytes)
{
	struct srsv_space *s = srsv_ctx_space(ctx, pool);

	ck_assert_int_eq(srsv_space_reserve(s, bytes, SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_space_alloc(s, bytes), 0);
	ck_assert_int_eq(srsv_space_commit_used(s, bytes), 0);
}

/* ---- one table ---- */

START_TEST(test_zoned_ctx_has_a_table)
{
	struct srsv_ctx *ctx = make_ctx(NULL, false, 0);
	struct srsv_bgroup_info info;

	/* The queries see zone groups without srsv_bgroups_init(). */
	ck_assert_int_eq(srsv_bgroup_next(ctx, 0, &info), -ENOENT);
	zadd(ctx, SRSV_ZONE_DATA, 0, ZONE, ZONE);
	ck_assert_int_eq(srsv_bgroup_next(ctx, 0, &info), 0);
	ck_assert_uint_eq(info.start, 0);
	ck_assert_uint_eq(info.length, ZONE);
	ck_assert_int_eq(info.pool, SRSV_POOL_DATA);
	ck_assert_uint_eq(nr_groups(ctx), 1);
	/* The chunk calls still need srsv_bgroups_init(). */
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, GIB, ZONE),
			 -EINVAL);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, 0, MIB),
			 -EINVAL);
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 1), -EINVAL);
	srsv_ctx_destroy(ctx);
}
END_TEST

START_TEST(test_overlap_refused_both_ways)
{
	struct srsv_ctx *ctx = make_ctx(NULL, true, 0);
	struct srsv_space_info d0, m0, d1, m1;
	struct srsv_statfs f0, f1;
	struct srsv_zone_group *g = NULL;

	zadd(ctx, SRSV_ZONE_DATA, 0, ZONE, ZONE);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, GIB, ZONE), 0);
	d0 = snap(ctx, SRSV_POOL_DATA);
	m0 = snap(ctx, SRSV_POOL_METADATA);
	f0 = statfs_of(ctx);

	/* A chunk over the zone group, at its start, inside, across its
	 * end; a zone over the chunk, the same ways; for every pool. */
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, 0, ZONE),
			 -EINVAL);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_METADATA, MIB, MIB),
			 -EINVAL);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_METADATA,
					 ZONE - MIB, ZONE), -EINVAL);
	ck_assert_int_eq(srsv_zone_group_add(ctx, SRSV_ZONE_DATA, GIB, ZONE,
					     ZONE, &g), -EINVAL);
	ck_assert_int_eq(srsv_zone_group_add(ctx, SRSV_ZONE_METADATA,
					     GIB - MIB, ZONE, ZONE, &g),
			 -EINVAL);
	ck_assert_int_eq(srsv_zone_group_add(ctx, SRSV_ZONE_METADATA,
					     GIB + ZONE - MIB, ZONE, ZONE,
					     &g), -EINVAL);
	ck_assert_ptr_null(g);

	/* Nothing changed: pools, unallocated (statfs), the table. */
	d1 = snap(ctx, SRSV_POOL_DATA);
	m1 = snap(ctx, SRSV_POOL_METADATA);
	ck_same_space(&d0, &d1);
	ck_same_space(&m0, &m1);
	f1 = statfs_of(ctx);
	ck_assert_uint_eq(f0.avail, f1.avail);
	ck_assert_uint_eq(f0.free, f1.free);
	ck_assert_uint_eq(nr_groups(ctx), 2);

	/* Adjacent is fine both ways. */
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_METADATA, ZONE, ZONE),
			 0);
	zadd(ctx, SRSV_ZONE_METADATA, GIB + ZONE, ZONE, ZONE);
	ck_assert_uint_eq(nr_groups(ctx), 4);
	srsv_ctx_destroy(ctx);
}
END_TEST

START_TEST(test_iteration_and_statfs_see_both)
{
	struct srsv_ctx *ctx = make_ctx(NULL, true, 0);
	struct srsv_bgroup_info info;
	struct srsv_statfs f0, f1;
	struct srsv_space_info d;
	struct srsv_bgroup_stats st;
	const uint64_t cap = ZONE - 16 * MIB;
	struct srsv_zone_group *g;
	uint64_t from = 0;
	unsigned seen = 0, zones = 0;

	f0 = statfs_of(ctx);
	/* Only unallocated so far: 4 GiB. */
	ck_assert_uint_eq(f0.avail, 4 * GIB);
	ck_assert_uint_eq(f0.total, DEVICE);

	g = zadd(ctx, SRSV_ZONE_DATA, 0, ZONE, cap);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, GIB, ZONE), 0);
	zadd(ctx, SRSV_ZONE_METADATA, 2 * GIB, ZONE, ZONE);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_METADATA, 3 * GIB,
					 ZONE), 0);

	/* Address order, chunks and zones alike. */
	while (srsv_bgroup_next(ctx, from, &info) == 0) {
		ck_assert_uint_eq(info.start, (uint64_t)seen * GIB);
		ck_assert_uint_eq(info.length, ZONE);
		ck_assert_int_eq(info.pool, seen < 2 ? SRSV_POOL_DATA :
				 SRSV_POOL_METADATA);
		zones += seen % 2 == 0;
		seen++;
		from = info.start + info.length;
	}
	ck_assert_uint_eq(seen, 4);
	ck_assert_uint_eq(zones, 2);
	ck_assert_int_eq(srsv_bgroup_stats(ctx, &st), 0);
	ck_assert_uint_eq(st.nr_groups, 4);
	ck_assert_uint_eq(st.added, 4);
	/* srsv_zoned_get_info() counts the zone groups only. */
	{
		struct srsv_zoned_info zi;

		ck_assert_int_eq(srsv_zoned_get_info(ctx, &zi), 0);
		ck_assert_uint_eq(zi.nr_groups, 2);
	}

	/* statfs: the chunks took 2 zones' worth of unallocated, the zone
	 * groups none; data avail = both data groups' free bytes, less the
	 * zone's unwritable tail. */
	d = snap(ctx, SRSV_POOL_DATA);
	ck_assert_uint_eq(d.total, 2 * ZONE);
	ck_assert_uint_eq(d.zone_unusable, ZONE - cap);
	f1 = statfs_of(ctx);
	ck_assert_uint_eq(f1.avail, 4 * GIB - 2 * ZONE + ZONE + cap);
	ck_assert_uint_eq(f1.metadata_free, 2 * ZONE);

	/* Written and freed below the write pointer: gone from avail. */
	ck_assert_int_eq(srsv_zone_group_activate(g), 0);
	pool_write(ctx, SRSV_POOL_DATA, 32 * MIB);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, 0, 32 * MIB),
			 0);
	ck_assert_uint_eq(statfs_of(ctx).avail, f1.avail - 32 * MIB);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, 0, 32 * MIB,
					  0), 0);
	ck_assert_uint_eq(statfs_of(ctx).avail, f1.avail - 32 * MIB);
	ck_assert_uint_eq(snap(ctx, SRSV_POOL_DATA).used, 0);
	ck_assert_uint_eq(snap(ctx, SRSV_POOL_DATA).zone_unusable,
			  ZONE - cap + 32 * MIB);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* ---- block-group calls on a zone group ---- */

START_TEST(test_bgroup_calls_zoned_semantics)
{
	struct log l = { 0 };
	struct srsv_ctx *ctx = make_ctx(&l, true, 0);
	struct srsv_space_info d0, d1;
	struct srsv_zone_group_info z0, z1;
	struct srsv_bgroup_info bi;
	struct srsv_zone_group *g;
	uint64_t start;

	g = zadd(ctx, SRSV_ZONE_DATA, 0, ZONE, ZONE);
	/* Not active: no room for an allocation (as srsv_zone_group_alloc). */
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, 0, MIB),
			 -ENOSPC);
	ck_assert_int_eq(srsv_zone_group_activate(g), 0);
	pool_write(ctx, SRSV_POOL_DATA, 64 * MIB);
	d0 = snap(ctx, SRSV_POOL_DATA);
	z0 = zinfo(g);
	/* Bad input, nothing changed: not at the write pointer, another
	 * pool, across the end, more than used, transid 0 reuse. */
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, MIB, MIB),
			 -EINVAL);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_METADATA, 0, MIB),
			 -EINVAL);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, 0, ZONE + 1),
			 -EINVAL);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, 0, MIB, 0),
			 -EINVAL);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, 0, MIB, 3),
			 -EINVAL);
	ck_assert_int_eq(srsv_bgroup_remove(ctx, SRSV_POOL_DATA, 0), -EINVAL);
	d1 = snap(ctx, SRSV_POOL_DATA);
	ck_same_space(&d0, &d1);
	z1 = zinfo(g);
	ck_assert_uint_eq(z0.alloc_offset, z1.alloc_offset);
	ck_assert_uint_eq(z0.used, z1.used);

	/* Sequential: at the write pointer, twice. */
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, 0, 32 * MIB),
			 0);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, 32 * MIB,
					   32 * MIB), 0);
	z1 = zinfo(g);
	ck_assert_uint_eq(z1.alloc_offset, 64 * MIB);
	ck_assert_uint_eq(z1.used, 64 * MIB);
	ck_assert_uint_eq(z1.reserved, 0);
	bi = bginfo(ctx, 10 * MIB);
	ck_assert_uint_eq(bi.start, 0);
	ck_assert_uint_eq(bi.used, 64 * MIB);
	ck_assert(!bi.readonly && !bi.unused && !bi.candidate);
	/* A simple allocator's find_free never offers a zone. */
	ck_assert_int_eq(srsv_bgroup_find_free(ctx, SRSV_POOL_DATA, MIB,
					       &start), -ENOSPC);

	/* Freed in transaction 3: pinned in the group, the pool keeps them
	 * used until the commit, then zone_unusable (not free). */
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, 0, 16 * MIB, 3),
			 0);
	/* Another transaction in the same bucket is refused. */
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, 0, MIB, 5),
			 -EINVAL);
	bi = bginfo(ctx, 0);
	ck_assert_uint_eq(bi.used, 48 * MIB);
	ck_assert_uint_eq(bi.pinned, 16 * MIB);
	ck_assert_uint_eq(snap(ctx, SRSV_POOL_DATA).used, 64 * MIB);
	ck_assert_uint_eq(snap(ctx, SRSV_POOL_DATA).zone_unusable, 0);
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 2), 0);
	ck_assert_uint_eq(bginfo(ctx, 0).pinned, 16 * MIB);
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 3), 0);
	bi = bginfo(ctx, 0);
	ck_assert_uint_eq(bi.pinned, 0);
	d1 = snap(ctx, SRSV_POOL_DATA);
	ck_assert_uint_eq(d1.used, 48 * MIB);
	ck_assert_uint_eq(d1.zone_unusable, 16 * MIB);
	ck_assert_uint_eq(zinfo(g).zone_unusable, 16 * MIB);
	/* Freed at once (transid 0): zone_unusable now. */
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, 0, 8 * MIB, 0),
			 0);
	ck_assert_uint_eq(snap(ctx, SRSV_POOL_DATA).zone_unusable, 24 * MIB);
	ck_assert_uint_eq(zinfo(g).used, 40 * MIB);
	srsv_ctx_destroy(ctx);
}
END_TEST

/*
 * An emptied zone group is not returned by the commit (a chunk beside it
 * is): RESET_ZONES resets it in its pool, as btrfs_reset_unused_block_groups().
 */
START_TEST(test_emptied_zone_reset_not_returned)
{
	struct log l = { 0 };
	struct srsv_ctx *ctx = make_ctx(&l, true, 0);
	struct srsv_space *ds = srsv_ctx_space(ctx, SRSV_POOL_DATA);
	struct srsv_zone_group *g;
	struct srsv_bgroup_info bi;
	struct srsv_space_info d;
	struct srsv_ticket t;
	uint64_t avail0;

	g = zadd(ctx, SRSV_ZONE_DATA, 0, ZONE, ZONE);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, GIB, ZONE), 0);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, 2 * GIB, ZONE),
			 0);
	avail0 = statfs_of(ctx).avail;

	/* Fill the zone, and a chunk; free both in transaction 1. */
	ck_assert_int_eq(srsv_zone_group_activate(g), 0);
	pool_write(ctx, SRSV_POOL_DATA, ZONE + MIB);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, 0, ZONE), 0);
	ck_assert(!zinfo(g).active);	/* full and written: token back */
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, GIB, MIB), 0);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, 0, ZONE, 1), 0);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, GIB, MIB, 1),
			 0);
	ck_assert_int_eq(srsv_space_pin(ds, MIB), 0);
	ck_assert(!bginfo(ctx, 0).unused);	/* pinned: not yet */
	ck_assert_int_eq(srsv_space_unpin(ds, MIB), 0);
	/* The chunk returns; the zone stays, empty, queued for reset. */
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 1), 1);
	ck_assert_int_eq(srsv_bgroup_get(ctx, GIB, &bi), -ENOENT);
	bi = bginfo(ctx, 0);
	ck_assert(bi.unused);
	ck_assert_uint_eq(bi.used + bi.pinned, 0);
	d = snap(ctx, SRSV_POOL_DATA);
	ck_assert_uint_eq(d.total, 2 * ZONE);
	ck_assert_uint_eq(d.zone_unusable, ZONE);
	ck_assert_uint_eq(d.used, 0);
	ck_assert_uint_eq(statfs_of(ctx).avail, avail0 - ZONE);
	ck_assert_uint_eq(l.resets, 0);

	/* A data ticket that does not fit: RESET_ZONES resets the zone. */
	ck_assert_int_eq(srsv_space_reserve(ds, ZONE, SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_ticket_reserve(ds, &t, 128 * MIB,
					     SRSV_FLUSH_DATA, 0), -EINPROGRESS);
	ck_assert_int_ge(srsv_ctx_run_pending(ctx), 1);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), 0);
	ck_assert_uint_eq(l.resets, 1);
	bi = bginfo(ctx, 0);
	ck_assert(!bi.unused);
	ck_assert_uint_eq(zinfo(g).alloc_offset, 0);
	ck_assert_uint_eq(snap(ctx, SRSV_POOL_DATA).zone_unusable, 0);
	ck_assert_int_eq(srsv_space_release(ds, ZONE + 128 * MIB), 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* Zoned reclaim candidates come from zone_unusable: a finished zone that
 * freed 75% of its capacity is one (RECLAIM_ZONES), whatever the chunk
 * sweep's threshold on used bytes; the chunk calls never take it. */
START_TEST(test_zone_candidate_from_unusable)
{
	struct log l = { 0 };
	struct srsv_ctx *ctx = make_ctx(&l, true, 0);
	struct srsv_bgroup_info bi;
	struct srsv_zone_group *g;

	g = zadd(ctx, SRSV_ZONE_DATA, 0, ZONE, ZONE);
	ck_assert_int_eq(srsv_zone_group_activate(g), 0);
	pool_write(ctx, SRSV_POOL_DATA, ZONE);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, 0, ZONE), 0);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, 0,
					  ZONE / 2, 1), 0);
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 1), 0);
	ck_assert(!bginfo(ctx, 0).candidate);	/* 50% < 75% */
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, 0,
					  ZONE / 4, 2), 0);
	ck_assert(!bginfo(ctx, 0).candidate);	/* pinned: not yet */
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 2), 0);
	bi = bginfo(ctx, 0);
	ck_assert(bi.candidate);
	ck_assert(!bi.unused);
	ck_assert_int_eq(srsv_bgroup_reclaim_take(ctx, &bi), -ENOENT);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* ---- threads: table walks against zone allocation and registration ---- */

#define THREAD_ZONES 48
#define WALKS 200

struct race {
	struct srsv_ctx *ctx;
	struct srsv_zone_group *groups[THREAD_ZONES];
	volatile int failed;
};

static void *zone_writer(void *arg)
{
	struct race *r = arg;

	for (unsigned i = 0; i < THREAD_ZONES / 2; i++) {
		struct srsv_zone_group *g = r->groups[i];

		if (srsv_zone_group_activate(g))
			r->failed = 1;
		for (unsigned k = 0; k < 16; k++) {
			struct srsv_zone_group *h = NULL;
			uint64_t logical;

			if (srsv_zone_hint(r->ctx, SRSV_ZONE_DATA, 16 * MIB,
					   &h) ||
			    srsv_zone_group_alloc(h, 16 * MIB, &logical) ||
			    srsv_zone_group_written(h, 16 * MIB))
				r->failed = 1;
			if (k % 2 && srsv_bgroup_free(r->ctx, SRSV_POOL_DATA,
						      logical, 8 * MIB, 0))
				r->failed = 1;
		}
	}
	return NULL;
}

static void *zone_adder(void *arg)
{
	struct race *r = arg;

	for (unsigned i = THREAD_ZONES / 2; i < THREAD_ZONES; i++)
		if (srsv_zone_group_add(r->ctx, SRSV_ZONE_DATA,
					(uint64_t)i * ZONE, ZONE, ZONE,
					&r->groups[i]))
			r->failed = 1;
	return NULL;
}

static void *walker(void *arg)
{
	struct race *r = arg;

	for (unsigned w = 0; w < WALKS; w++) {
		struct srsv_bgroup_info info;
		uint64_t from = 0, prev_end = 0;

		while (srsv_bgroup_next(r->ctx, from, &info) == 0) {
			if (info.start < prev_end ||
			    info.used + info.pinned > info.length)
				r->failed = 1;
			prev_end = from = info.start + info.length;
		}
	}
	return NULL;
}

START_TEST(test_threads_walk_while_zones_change)
{
	struct race r = { 0 };
	struct srsv_space *ds;
	pthread_t t[3];

	r.ctx = make_ctx(NULL, true, 0);
	ds = srsv_ctx_space(r.ctx, SRSV_POOL_DATA);
	for (unsigned i = 0; i < THREAD_ZONES / 2; i++)
		r.groups[i] = zadd(r.ctx, SRSV_ZONE_DATA, (uint64_t)i * ZONE,
				   ZONE, ZONE);
	ck_assert_int_eq(srsv_space_reserve(ds, THREAD_ZONES / 2 * ZONE,
					    SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_space_alloc(ds, THREAD_ZONES / 2 * ZONE), 0);
	ck_assert_int_eq(srsv_space_commit_used(ds, THREAD_ZONES / 2 * ZONE),
			 0);
	ck_assert_int_eq(pthread_create(&t[0], NULL, zone_writer, &r), 0);
	ck_assert_int_eq(pthread_create(&t[1], NULL, zone_adder, &r), 0);
	ck_assert_int_eq(pthread_create(&t[2], NULL, walker, &r), 0);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	ck_assert(!r.failed);
	ck_assert_uint_eq(nr_groups(r.ctx), THREAD_ZONES);
	/* Every written zone: full; half of each write freed. */
	ck_assert_uint_eq(snap(r.ctx, SRSV_POOL_DATA).zone_unusable,
			  THREAD_ZONES / 2 * 8 * 8 * MIB);
	srsv_ctx_destroy(r.ctx);
}
END_TEST

static Suite *bgroup_zoned_suite(void)
{
	Suite *s = suite_create("bgroup_zoned");
	TCase *tc = tcase_create("table");

	tcase_add_test(tc, test_zoned_ctx_has_a_table);
	tcase_add_test(tc, test_overlap_refused_both_ways);
	tcase_add_test(tc, test_iteration_and_statfs_see_both);
	suite_add_tcase(s, tc);
	tc = tcase_create("zoned");
	tcase_add_test(tc, test_bgroup_calls_zoned_semantics);
	tcase_add_test(tc, test_emptied_zone_reset_not_returned);
	tcase_add_test(tc, test_zone_candidate_from_unusable);
	suite_add_tcase(s, tc);
	tc = tcase_create("threads");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_threads_walk_while_zones_change);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(bgroup_zoned_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
