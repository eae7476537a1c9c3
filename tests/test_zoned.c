/* SPDX-License-Identifier: MIT */
/*
 * Zoned devices (upstream 02444f2ac26e): zone groups, the active-zone limit with
 * reserved tokens, finish and finish-one, the allocator hint on hand-built
 * layouts, free-below-write-pointer accounting against the pool snapshot,
 * RESET_ZONES granting a queued ticket, both passes bounded by their batch
 * and stopping at the wanted bytes, passes that look only at candidates,
 * the zone-aligned overcommit, hints racing activations and finishes, and
 * the allocator path (hint, activate, alloc) going on while a pool lock is
 * held elsewhere or a pass waits in an engine callback.
 *
 * White-box (links the static library): two tests hold a pool lock from
 * another thread and run flush passes directly (srsv__zoned_flush()).
 * Deterministic tests use a manual-mode ctx; the threaded tests use real
 * threads, a fixed amount of work and flags, never a duration: the only
 * time limit is a generous deadline that turns a regression (a deadlock)
 * into a failure instead of a hang.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include <libspacersv/spacersv.h>

#include "internal.h"	/* struct srsv_space (its lock) */
#include "zoned.h"	/* srsv__zoned_flush */

#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)
#define ZONE (256 * MIB)

/* ---- helpers ---- */

struct flush_log {
	unsigned calls[SRSV_STATE_COUNT];
};

static int count_flush(struct srsv_space *space, enum srsv_flush_state state,
		       uint64_t bytes, bool for_preempt, void *user)
{
	struct flush_log *log = user;

	(void)space; (void)bytes; (void)for_preempt;
	if (log && state < SRSV_STATE_COUNT)
		__atomic_fetch_add(&log->calls[state], 1, __ATOMIC_RELAXED);
	return -EOPNOTSUPP;
}

static struct srsv_ctx *make_ctx_cfg(struct srsv_config *cfg)
{
	struct srsv_ctx *ctx = NULL;

	ck_assert_int_eq(srsv_ctx_create(cfg, &ctx), 0);
	ck_assert_ptr_nonnull(ctx);
	return ctx;
}

/* A manual, zoned ctx with empty pools: zone groups provide the space. */
static struct srsv_ctx *make_ctx(unsigned extra_flags, void *user)
{
	struct srsv_config cfg;

	ck_assert_int_eq(srsv_config_init(&cfg), 0);
	cfg.flags = SRSV_CTX_MANUAL | SRSV_CTX_ZONED | SRSV_CTX_NO_PREEMPT |
		    extra_flags;
	cfg.flush = count_flush;
	cfg.user = user;
	cfg.zone_bytes = ZONE;
	return make_ctx_cfg(&cfg);
}

static void zoned_init(struct srsv_ctx *ctx, unsigned max_active,
		       srsv_zone_fn reset, srsv_zone_fn relocate)
{
	struct srsv_zoned_config zc;

	ck_assert_int_eq(srsv_zoned_config_init(&zc), 0);
	zc.max_active_zones = max_active;
	zc.zone_reset = reset;
	zc.zone_relocate = relocate;
	ck_assert_int_eq(srsv_zoned_init(ctx, &zc), 0);
}

static struct srsv_zone_group *add(struct srsv_ctx *ctx, int kind,
				   uint64_t start, uint64_t length,
				   uint64_t capacity)
{
	struct srsv_zone_group *g = NULL;

	ck_assert_int_eq(srsv_zone_group_add(ctx, kind, start, length,
					     capacity, &g), 0);
	ck_assert_ptr_nonnull(g);
	return g;
}

static struct srsv_zone_group_info ginfo(struct srsv_zone_group *g)
{
	struct srsv_zone_group_info info;

	ck_assert_int_eq(srsv_zone_group_info(g, &info), 0);
	return info;
}

static struct srsv_zoned_info zinfo(struct srsv_ctx *ctx)
{
	struct srsv_zoned_info info;

	ck_assert_int_eq(srsv_zoned_get_info(ctx, &info), 0);
	return info;
}

static struct srsv_space_info snap(struct srsv_ctx *ctx, int pool)
{
	struct srsv_space_info info;

	ck_assert_int_eq(srsv_space_snapshot(srsv_ctx_space(ctx, pool), &info,
					     NULL, 0, NULL), 0);
	return info;
}

static uint64_t accounted(const struct srsv_space_info *i)
{
	return i->used + i->reserved + i->pinned + i->readonly +
	       i->zone_unusable + i->may_use;
}

/* The counters bad input must not touch. */
static void ck_same_space(const struct srsv_space_info *a,
			  const struct srsv_space_info *b)
{
	ck_assert_uint_eq(a->total, b->total);
	ck_assert_uint_eq(a->used, b->used);
	ck_assert_uint_eq(a->reserved, b->reserved);
	ck_assert_uint_eq(a->may_use, b->may_use);
	ck_assert_uint_eq(a->zone_unusable, b->zone_unusable);
}

static void ck_same_group(const struct srsv_zone_group_info *a,
			  const struct srsv_zone_group_info *b)
{
	ck_assert_uint_eq(a->alloc_offset, b->alloc_offset);
	ck_assert_uint_eq(a->used, b->used);
	ck_assert_uint_eq(a->reserved, b->reserved);
	ck_assert_uint_eq(a->zone_unusable, b->zone_unusable);
	ck_assert_int_eq(a->active, b->active);
	ck_assert_int_eq(a->open, b->open);
}

/* The engine's full allocation of @bytes in @g: pool and group halves. */
static void engine_write(struct srsv_ctx *ctx, struct srsv_zone_group *g,
			 int pool, uint64_t bytes)
{
	struct srsv_space *s = srsv_ctx_space(ctx, pool);

	ck_assert_int_eq(srsv_space_reserve(s, bytes, SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_zone_group_alloc(g, bytes, NULL), 0);
	ck_assert_int_eq(srsv_space_alloc(s, bytes), 0);
	ck_assert_int_eq(srsv_zone_group_written(g, bytes), 0);
	ck_assert_int_eq(srsv_space_commit_used(s, bytes), 0);
}

/* ---- bad input ---- */

START_TEST(test_bad_input)
{
	struct srsv_ctx *ctx = make_ctx(0, NULL), *plain;
	struct srsv_zoned_config zc;
	struct srsv_config cfg;
	struct srsv_zone_group *g, *out = NULL;
	struct srsv_zone_group_info gi0, gi1;
	struct srsv_space_info s0, s1;
	struct srsv_zoned_info z0, z1;

	/* Not zoned yet: every zoned call refuses the ctx. */
	ck_assert_int_eq(srsv_zone_group_add(ctx, SRSV_ZONE_DATA, 0, ZONE,
					     ZONE, NULL), -EINVAL);
	ck_assert_int_eq(srsv_zone_hint(ctx, SRSV_ZONE_DATA, MIB, &out),
			 -EINVAL);
	ck_assert_int_eq(srsv_zoned_finish_one(ctx, NULL), -EINVAL);
	ck_assert_int_eq(srsv_zoned_get_info(ctx, &z0), -EINVAL);

	ck_assert_int_eq(srsv_zoned_config_init(NULL), -EINVAL);
	ck_assert_int_eq(srsv_zoned_config_init(&zc), 0);
	ck_assert_int_eq(srsv_zoned_init(NULL, &zc), -EINVAL);
	ck_assert_int_eq(srsv_zoned_init(ctx, NULL), -EINVAL);
	zc.size = sizeof(zc) - 1;
	ck_assert_int_eq(srsv_zoned_init(ctx, &zc), -EINVAL);
	zc.size = sizeof(zc);
	zc.reclaim_threshold_pct = 0;
	ck_assert_int_eq(srsv_zoned_init(ctx, &zc), -EINVAL);
	zc.reclaim_threshold_pct = 101;
	ck_assert_int_eq(srsv_zoned_init(ctx, &zc), -EINVAL);
	zc.reclaim_threshold_pct = 75;
	/* 3 tokens reserved (2 + 1): a limit of 3 leaves data nothing. */
	zc.max_active_zones = 3;
	ck_assert_int_eq(srsv_zoned_init(ctx, &zc), -EINVAL);

	/* A ctx without SRSV_CTX_ZONED cannot be made zoned. */
	ck_assert_int_eq(srsv_config_init(&cfg), 0);
	cfg.flags = SRSV_CTX_MANUAL;
	plain = make_ctx_cfg(&cfg);
	zc.max_active_zones = 0;
	ck_assert_int_eq(srsv_zoned_init(plain, &zc), -EINVAL);
	srsv_ctx_destroy(plain);

	zoned_init(ctx, 8, NULL, NULL);
	ck_assert_int_eq(srsv_zoned_init(ctx, &zc), -EALREADY);

	g = add(ctx, SRSV_ZONE_DATA, 10 * ZONE, ZONE, ZONE);
	s0 = snap(ctx, SRSV_POOL_DATA);
	z0 = zinfo(ctx);

	/* Groups: NULL, unknown kind, zero sizes, capacity > length,
	 * overlaps on either side and exact, a range that wraps. */
	ck_assert_int_eq(srsv_zone_group_add(NULL, SRSV_ZONE_DATA, 0, ZONE,
					     ZONE, NULL), -EINVAL);
	ck_assert_int_eq(srsv_zone_group_add(ctx, SRSV_ZONE_KIND_COUNT, 0,
					     ZONE, ZONE, NULL), -EINVAL);
	ck_assert_int_eq(srsv_zone_group_add(ctx, (enum srsv_zone_kind)-1, 0,
					     ZONE, ZONE, NULL), -EINVAL);
	ck_assert_int_eq(srsv_zone_group_add(ctx, SRSV_ZONE_DATA, 0, 0, 0,
					     NULL), -EINVAL);
	ck_assert_int_eq(srsv_zone_group_add(ctx, SRSV_ZONE_DATA, 0, ZONE, 0,
					     NULL), -EINVAL);
	ck_assert_int_eq(srsv_zone_group_add(ctx, SRSV_ZONE_DATA, 0, ZONE,
					     ZONE + 1, NULL), -EINVAL);
	ck_assert_int_eq(srsv_zone_group_add(ctx, SRSV_ZONE_DATA, 10 * ZONE,
					     ZONE, ZONE, NULL), -EINVAL);
	ck_assert_int_eq(srsv_zone_group_add(ctx, SRSV_ZONE_DATA,
					     10 * ZONE - MIB, ZONE, ZONE,
					     NULL), -EINVAL);
	ck_assert_int_eq(srsv_zone_group_add(ctx, SRSV_ZONE_DATA,
					     11 * ZONE - MIB, ZONE, ZONE,
					     NULL), -EINVAL);
	ck_assert_int_eq(srsv_zone_group_add(ctx, SRSV_ZONE_DATA, 9 * ZONE,
					     4 * ZONE, 4 * ZONE, NULL),
			 -EINVAL);
	ck_assert_int_eq(srsv_zone_group_add(ctx, SRSV_ZONE_DATA,
					     UINT64_MAX - MIB, ZONE, ZONE,
					     NULL), -EINVAL);
	s1 = snap(ctx, SRSV_POOL_DATA);
	ck_same_space(&s0, &s1);
	z1 = zinfo(ctx);
	ck_assert_uint_eq(z1.nr_groups, z0.nr_groups);

	/* Adjacent groups are fine (the range is half-open). */
	add(ctx, SRSV_ZONE_DATA, 11 * ZONE, ZONE, ZONE);
	add(ctx, SRSV_ZONE_DATA, 9 * ZONE, ZONE, ZONE);

	/* Hint. */
	ck_assert_int_eq(srsv_zone_hint(NULL, SRSV_ZONE_DATA, MIB, &out),
			 -EINVAL);
	ck_assert_int_eq(srsv_zone_hint(ctx, SRSV_ZONE_DATA, MIB, NULL),
			 -EINVAL);
	ck_assert_int_eq(srsv_zone_hint(ctx, SRSV_ZONE_DATA, 0, &out),
			 -EINVAL);
	ck_assert_int_eq(srsv_zone_hint(ctx, SRSV_ZONE_DATA,
					SRSV_MAX_BYTES + 1, &out), -EINVAL);
	ck_assert_int_eq(srsv_zone_hint(ctx, SRSV_ZONE_KIND_COUNT, MIB, &out),
			 -EINVAL);
	ck_assert_ptr_null(out);

	/* Per-group calls. */
	ck_assert_int_eq(srsv_zone_group_activate(NULL), -EINVAL);
	ck_assert_int_eq(srsv_zone_group_finish(NULL), -EINVAL);
	ck_assert_int_eq(srsv_zone_group_alloc(NULL, MIB, NULL), -EINVAL);
	ck_assert_int_eq(srsv_zone_group_written(NULL, MIB), -EINVAL);
	ck_assert_int_eq(srsv_zone_group_free(NULL, MIB), -EINVAL);
	ck_assert_int_eq(srsv_zone_group_abandon(NULL, MIB), -EINVAL);
	ck_assert_int_eq(srsv_zone_group_info(NULL, &gi0), -EINVAL);
	ck_assert_int_eq(srsv_zone_group_info(g, NULL), -EINVAL);
	ck_assert_int_eq(srsv_zoned_get_info(ctx, NULL), -EINVAL);

	ck_assert_int_eq(srsv_zone_group_activate(g), 0);
	ck_assert_int_eq(srsv_zone_group_alloc(g, 4 * MIB, NULL), 0);
	ck_assert_int_eq(srsv_zone_group_written(g, MIB), 0);
	s0 = snap(ctx, SRSV_POOL_DATA);
	gi0 = ginfo(g);
	ck_assert_int_eq(srsv_zone_group_alloc(g, 0, NULL), -EINVAL);
	ck_assert_int_eq(srsv_zone_group_alloc(g, SRSV_MAX_BYTES + 1, NULL),
			 -EINVAL);
	ck_assert_int_eq(srsv_zone_group_alloc(g, ZONE, NULL), -ENOSPC);
	ck_assert_int_eq(srsv_zone_group_written(g, 0), -EINVAL);
	ck_assert_int_eq(srsv_zone_group_written(g, 3 * MIB + 1), -EINVAL);
	ck_assert_int_eq(srsv_zone_group_free(g, MIB + 1), -EINVAL);
	ck_assert_int_eq(srsv_zone_group_abandon(g, 3 * MIB + 1), -EINVAL);
	/* Group fine, pool out of step (the engine never moved the pool's
	 * bytes): refused, nothing changed in either. */
	ck_assert_int_eq(srsv_zone_group_free(g, MIB), -EINVAL);
	ck_assert_int_eq(srsv_zone_group_abandon(g, MIB), -EINVAL);
	gi1 = ginfo(g);
	ck_same_group(&gi0, &gi1);
	s1 = snap(ctx, SRSV_POOL_DATA);
	ck_same_space(&s0, &s1);

	ck_assert_str_eq(srsv_zone_kind_name(SRSV_ZONE_TREELOG), "treelog");
	ck_assert_str_eq(srsv_zone_kind_name(SRSV_ZONE_KIND_COUNT), "unknown");
	ck_assert_str_eq(srsv_zone_kind_name(-1), "unknown");
	srsv_ctx_destroy(ctx);
}
END_TEST

/* ---- groups and pools ---- */

START_TEST(test_add_grows_pool)
{
	struct srsv_ctx *ctx = make_ctx(0, NULL);
	struct srsv_space_info d0, d1, m1, y1;
	struct srsv_zone_group_info gi;
	struct srsv_zone_group *g;

	zoned_init(ctx, 0, NULL, NULL);
	d0 = snap(ctx, SRSV_POOL_DATA);
	/* A ZNS-like zone: 256 MiB long, 200 MiB writable. */
	g = add(ctx, SRSV_ZONE_DATA, 0, ZONE, 200 * MIB);
	add(ctx, SRSV_ZONE_DATA_RELOC, ZONE, ZONE, ZONE);
	add(ctx, SRSV_ZONE_METADATA, 2 * ZONE, ZONE, ZONE);
	add(ctx, SRSV_ZONE_TREELOG, 3 * ZONE, ZONE, ZONE);
	add(ctx, SRSV_ZONE_SYSTEM, 4 * ZONE, ZONE, ZONE - MIB);
	d1 = snap(ctx, SRSV_POOL_DATA);
	m1 = snap(ctx, SRSV_POOL_METADATA);
	y1 = snap(ctx, SRSV_POOL_SYSTEM);
	ck_assert_uint_eq(d1.total - d0.total, 2 * ZONE);
	ck_assert_uint_eq(d1.zone_unusable - d0.zone_unusable, 56 * MIB);
	ck_assert_uint_eq(m1.total, 2 * ZONE);
	ck_assert_uint_eq(m1.zone_unusable, 0);
	ck_assert_uint_eq(y1.total, ZONE);
	ck_assert_uint_eq(y1.zone_unusable, MIB);

	gi = ginfo(g);
	ck_assert_uint_eq(gi.start, 0);
	ck_assert_uint_eq(gi.length, ZONE);
	ck_assert_uint_eq(gi.capacity, 200 * MIB);
	ck_assert_uint_eq(gi.alloc_offset, 0);
	ck_assert_uint_eq(gi.zone_unusable, 56 * MIB);
	ck_assert_int_eq(gi.kind, SRSV_ZONE_DATA);
	ck_assert_int_eq(gi.pool, SRSV_POOL_DATA);
	ck_assert(!gi.active && !gi.open && !gi.busy);
	ck_assert_uint_eq(zinfo(ctx).nr_groups, 5);
	ck_assert_uint_eq(srsv_zone_group_room(g), 200 * MIB);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* ---- the hint ---- */

START_TEST(test_hint_layout)
{
	struct srsv_ctx *ctx = make_ctx(0, NULL);
	struct srsv_zone_group *m1, *d1, *d2, *d3, *s1, *out;
	uint64_t logical;

	zoned_init(ctx, 0, NULL, NULL);
	m1 = add(ctx, SRSV_ZONE_METADATA, 0, ZONE, ZONE);
	d1 = add(ctx, SRSV_ZONE_DATA, ZONE, ZONE, ZONE);
	d2 = add(ctx, SRSV_ZONE_DATA, 2 * ZONE, ZONE, ZONE);
	s1 = add(ctx, SRSV_ZONE_SYSTEM, 3 * ZONE, ZONE, ZONE);
	d3 = add(ctx, SRSV_ZONE_DATA, 4 * ZONE, ZONE, ZONE);

	/* Nothing active: no hint, although every group has room. */
	ck_assert_int_eq(srsv_zone_hint(ctx, SRSV_ZONE_DATA, MIB, &out),
			 -ENOSPC);

	ck_assert_int_eq(srsv_zone_group_activate(m1), 0);
	ck_assert_int_eq(srsv_zone_group_activate(d1), 0);
	ck_assert_int_eq(srsv_zone_group_activate(d2), 0);
	ck_assert_int_eq(srsv_zone_group_activate(s1), 0);

	/* The metadata group comes first on the list: data skips it. */
	ck_assert_int_eq(srsv_zone_hint(ctx, SRSV_ZONE_DATA, MIB, &out), 0);
	ck_assert_ptr_eq(out, d1);
	ck_assert_int_eq(srsv_zone_hint(ctx, SRSV_ZONE_METADATA, MIB, &out),
			 0);
	ck_assert_ptr_eq(out, m1);
	ck_assert_int_eq(srsv_zone_hint(ctx, SRSV_ZONE_SYSTEM, MIB, &out), 0);
	ck_assert_ptr_eq(out, s1);
	/* No tree-log or reloc group: metadata/data groups do not serve. */
	ck_assert_int_eq(srsv_zone_hint(ctx, SRSV_ZONE_TREELOG, MIB, &out),
			 -ENOSPC);
	ck_assert_int_eq(srsv_zone_hint(ctx, SRSV_ZONE_DATA_RELOC, MIB, &out),
			 -ENOSPC);

	/* Leave exactly 4 MiB in d1: a request of exactly the room fits,
	 * one byte more goes to d2. */
	ck_assert_int_eq(srsv_zone_group_alloc(d1, ZONE - 4 * MIB, &logical),
			 0);
	ck_assert_uint_eq(logical, ZONE);
	ck_assert_int_eq(srsv_zone_hint(ctx, SRSV_ZONE_DATA, 4 * MIB, &out),
			 0);
	ck_assert_ptr_eq(out, d1);
	ck_assert_int_eq(srsv_zone_hint(ctx, SRSV_ZONE_DATA, 4 * MIB + 1,
					&out), 0);
	ck_assert_ptr_eq(out, d2);
	/* Allocations follow the write pointer. */
	ck_assert_int_eq(srsv_zone_group_alloc(d1, MIB, &logical), 0);
	ck_assert_uint_eq(logical, 2 * ZONE - 4 * MIB);

	/* Room in the inactive d3 does not count. */
	ck_assert_int_eq(srsv_zone_group_alloc(d2, ZONE - MIB, NULL), 0);
	ck_assert_int_eq(srsv_zone_hint(ctx, SRSV_ZONE_DATA, 8 * MIB, &out),
			 -ENOSPC);
	/* An inactive group refuses allocations. */
	ck_assert_int_eq(srsv_zone_group_alloc(d3, MIB, NULL), -ENOSPC);
	ck_assert_int_eq(srsv_zone_group_activate(d3), 0);
	ck_assert_int_eq(srsv_zone_hint(ctx, SRSV_ZONE_DATA, 8 * MIB, &out),
			 0);
	ck_assert_ptr_eq(out, d3);
	srsv_ctx_destroy(ctx);
}
END_TEST

START_TEST(test_hint_mixed_pool)
{
	struct srsv_ctx *ctx = make_ctx(SRSV_CTX_MIXED, NULL);
	struct srsv_zone_group *m, *d, *out;
	struct srsv_space_info mx;

	zoned_init(ctx, 0, NULL, NULL);
	m = add(ctx, SRSV_ZONE_METADATA, 0, ZONE, ZONE);
	d = add(ctx, SRSV_ZONE_DATA, ZONE, ZONE, ZONE);
	ck_assert_int_eq(ginfo(m).pool, SRSV_POOL_MIXED);
	ck_assert_int_eq(ginfo(d).pool, SRSV_POOL_MIXED);
	mx = snap(ctx, SRSV_POOL_MIXED);
	ck_assert_uint_ge(mx.total, 2 * ZONE);
	ck_assert_int_eq(srsv_zone_group_activate(m), 0);
	ck_assert_int_eq(srsv_zone_group_activate(d), 0);
	/* Same pool, different kinds: each kind gets its own group. */
	ck_assert_int_eq(srsv_zone_hint(ctx, SRSV_ZONE_DATA, MIB, &out), 0);
	ck_assert_ptr_eq(out, d);
	ck_assert_int_eq(srsv_zone_hint(ctx, SRSV_ZONE_METADATA, MIB, &out),
			 0);
	ck_assert_ptr_eq(out, m);
	srsv_ctx_destroy(ctx);
}
END_TEST

START_TEST(test_hint_dedicated)
{
	struct srsv_ctx *ctx = make_ctx(0, NULL);
	struct srsv_zone_group *ra, *rb, *d, *m, *t, *out;

	zoned_init(ctx, 0, NULL, NULL);
	ra = add(ctx, SRSV_ZONE_DATA_RELOC, 0, ZONE, ZONE);
	rb = add(ctx, SRSV_ZONE_DATA_RELOC, ZONE, ZONE, ZONE);
	d = add(ctx, SRSV_ZONE_DATA, 2 * ZONE, ZONE, ZONE);
	m = add(ctx, SRSV_ZONE_METADATA, 3 * ZONE, ZONE, ZONE);
	t = add(ctx, SRSV_ZONE_TREELOG, 4 * ZONE, ZONE, ZONE);

	ck_assert_int_eq(srsv_zone_group_activate(ra), 0);
	ck_assert_int_eq(srsv_zone_group_activate(rb), 0);
	ck_assert_int_eq(srsv_zone_group_activate(d), 0);
	/* The first reloc group activated becomes the dedicated one. */
	ck_assert(ginfo(ra).dedicated);
	ck_assert(!ginfo(rb).dedicated);

	/* Data never lands in a reloc group, nor reloc in a data group. */
	ck_assert_int_eq(srsv_zone_hint(ctx, SRSV_ZONE_DATA, MIB, &out), 0);
	ck_assert_ptr_eq(out, d);
	ck_assert_int_eq(srsv_zone_group_alloc(ra, ZONE - 4 * MIB, NULL), 0);

	/* The dedicated group is too small: the walk picks rb, which becomes
	 * the dedicated group ... */
	ck_assert_int_eq(srsv_zone_hint(ctx, SRSV_ZONE_DATA_RELOC, 8 * MIB,
					&out), 0);
	ck_assert_ptr_eq(out, rb);
	ck_assert(ginfo(rb).dedicated);
	ck_assert(!ginfo(ra).dedicated);
	/* ... and is preferred even though ra, earlier on the list, has
	 * room for this one. */
	ck_assert_int_eq(srsv_zone_hint(ctx, SRSV_ZONE_DATA_RELOC, MIB, &out),
			 0);
	ck_assert_ptr_eq(out, rb);
	/* When the dedicated group fills, it is dropped and the walk finds
	 * ra again. */
	ck_assert_int_eq(srsv_zone_group_alloc(rb, ZONE, NULL), 0);
	ck_assert(!ginfo(rb).dedicated);
	ck_assert(!ginfo(rb).open);
	ck_assert_int_eq(srsv_zone_hint(ctx, SRSV_ZONE_DATA_RELOC, MIB, &out),
			 0);
	ck_assert_ptr_eq(out, ra);
	ck_assert(ginfo(ra).dedicated);

	/* Tree-log: metadata allocations never use the tree-log group. */
	ck_assert_int_eq(srsv_zone_group_activate(t), 0);
	ck_assert_int_eq(srsv_zone_hint(ctx, SRSV_ZONE_METADATA, MIB, &out),
			 -ENOSPC);
	ck_assert_int_eq(srsv_zone_group_activate(m), 0);
	ck_assert_int_eq(srsv_zone_hint(ctx, SRSV_ZONE_METADATA, MIB, &out),
			 0);
	ck_assert_ptr_eq(out, m);
	ck_assert_int_eq(srsv_zone_hint(ctx, SRSV_ZONE_TREELOG, MIB, &out), 0);
	ck_assert_ptr_eq(out, t);
	ck_assert(ginfo(t).dedicated);
	/* A finished dedicated group is dropped too. */
	ck_assert_int_eq(srsv_zone_group_finish(t), 0);
	ck_assert(!ginfo(t).dedicated);
	ck_assert_int_eq(srsv_zone_hint(ctx, SRSV_ZONE_TREELOG, MIB, &out),
			 -ENOSPC);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* The hint never walks full groups: fill a long run of groups, then look
 * at how many groups one hint examined. */
START_TEST(test_hint_skips_full_groups)
{
	struct srsv_ctx *ctx = make_ctx(0, NULL);
	struct srsv_zone_group *g[64], *out;
	struct srsv_zoned_info before, after;

	zoned_init(ctx, 0, NULL, NULL);
	for (int i = 0; i < 64; i++)
		g[i] = add(ctx, SRSV_ZONE_DATA, (uint64_t)i * ZONE, ZONE, ZONE);
	for (int i = 0; i < 63; i++) {
		ck_assert_int_eq(srsv_zone_group_activate(g[i]), 0);
		ck_assert_int_eq(srsv_zone_group_alloc(g[i], ZONE, NULL), 0);
		ck_assert(!ginfo(g[i]).open);
	}
	ck_assert_int_eq(srsv_zone_group_activate(g[63]), 0);
	ck_assert_uint_eq(zinfo(ctx).open, 1);
	before = zinfo(ctx);
	ck_assert_int_eq(srsv_zone_hint(ctx, SRSV_ZONE_DATA, MIB, &out), 0);
	ck_assert_ptr_eq(out, g[63]);
	after = zinfo(ctx);
	ck_assert_uint_eq(after.hints - before.hints, 1);
	ck_assert_uint_eq(after.hint_groups_looked - before.hint_groups_looked,
			  1);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* ---- activation limits, finish ---- */

START_TEST(test_activation_limits)
{
	struct srsv_ctx *ctx = make_ctx(0, NULL);
	struct srsv_zone_group *d[6], *m[3], *t1, *s[2];
	struct srsv_zoned_info zi;
	uint64_t at = 0;

	/* 6 tokens: 2 held back for metadata, 1 for system: data gets 3. */
	zoned_init(ctx, 6, NULL, NULL);
	for (int i = 0; i < 6; i++, at += ZONE)
		d[i] = add(ctx, SRSV_ZONE_DATA, at, ZONE, ZONE);
	for (int i = 0; i < 3; i++, at += ZONE)
		m[i] = add(ctx, SRSV_ZONE_METADATA, at, ZONE, ZONE);
	t1 = add(ctx, SRSV_ZONE_TREELOG, at, ZONE, ZONE);
	at += ZONE;
	for (int i = 0; i < 2; i++, at += ZONE)
		s[i] = add(ctx, SRSV_ZONE_SYSTEM, at, ZONE, ZONE);

	zi = zinfo(ctx);
	ck_assert_uint_eq(zi.reserved_metadata_left, 2);
	ck_assert_uint_eq(zi.reserved_system_left, 1);

	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(srsv_zone_group_activate(d[i]), 0);
	/* Three tokens left, all reserved: data is refused ... */
	ck_assert_int_eq(srsv_zone_group_activate(d[3]), -EBUSY);
	ck_assert(!ginfo(d[3]).active);
	/* ... activating an active group again is fine and takes nothing. */
	ck_assert_int_eq(srsv_zone_group_activate(d[0]), 0);
	ck_assert_uint_eq(zinfo(ctx).active, 3);
	/* Metadata and tree-log take the metadata tokens. */
	ck_assert_int_eq(srsv_zone_group_activate(m[0]), 0);
	ck_assert_int_eq(srsv_zone_group_activate(t1), 0);
	zi = zinfo(ctx);
	ck_assert_uint_eq(zi.reserved_metadata_left, 0);
	/* The last token is the system one: metadata may not take it. */
	ck_assert_int_eq(srsv_zone_group_activate(m[1]), -EBUSY);
	ck_assert_int_eq(srsv_zone_group_activate(s[0]), 0);
	ck_assert_int_eq(srsv_zone_group_activate(s[1]), -EBUSY);
	zi = zinfo(ctx);
	ck_assert_uint_eq(zi.active, 6);
	ck_assert_uint_eq(zi.active_by_kind[SRSV_ZONE_DATA], 3);
	ck_assert_uint_eq(zi.active_by_kind[SRSV_ZONE_METADATA], 1);
	ck_assert_uint_eq(zi.active_by_kind[SRSV_ZONE_TREELOG], 1);
	ck_assert_uint_eq(zi.active_by_kind[SRSV_ZONE_SYSTEM], 1);
	ck_assert_uint_eq(zi.open, 6);

	/* Finishing a data group gives a token data may take. */
	ck_assert_int_eq(srsv_zone_group_finish(d[0]), 0);
	ck_assert_int_eq(srsv_zone_group_activate(d[3]), 0);
	/* Finishing a metadata group gives back a reserved token: data may
	 * not take it, metadata may. */
	ck_assert_int_eq(srsv_zone_group_finish(m[0]), 0);
	ck_assert_uint_eq(zinfo(ctx).reserved_metadata_left, 1);
	ck_assert_int_eq(srsv_zone_group_activate(d[4]), -EBUSY);
	ck_assert_int_eq(srsv_zone_group_activate(m[1]), 0);
	/* Finishing two data groups: metadata may also use free tokens
	 * beyond its reservation. */
	ck_assert_int_eq(srsv_zone_group_finish(d[1]), 0);
	ck_assert_int_eq(srsv_zone_group_finish(d[2]), 0);
	ck_assert_int_eq(srsv_zone_group_activate(m[2]), 0);
	ck_assert_int_eq(srsv_zone_group_activate(d[4]), 0);
	ck_assert_int_eq(srsv_zone_group_activate(d[5]), -EBUSY);
	zi = zinfo(ctx);
	ck_assert_uint_eq(zi.active, 6);
	ck_assert_uint_eq(zi.active_by_kind[SRSV_ZONE_METADATA], 2);
	srsv_ctx_destroy(ctx);
}
END_TEST

START_TEST(test_finish_sequences)
{
	struct srsv_ctx *ctx = make_ctx(0, NULL);
	struct srsv_zone_group *a, *b;
	struct srsv_zone_group_info gi;
	struct srsv_space_info s0, s1;

	zoned_init(ctx, 4, NULL, NULL);	/* data: 1 token */
	a = add(ctx, SRSV_ZONE_DATA, 0, ZONE, 200 * MIB);
	b = add(ctx, SRSV_ZONE_DATA, ZONE, ZONE, ZONE);

	ck_assert_int_eq(srsv_zone_group_finish(a), -EALREADY);
	ck_assert_int_eq(srsv_zone_group_activate(a), 0);
	ck_assert_int_eq(srsv_zone_group_activate(b), -EBUSY);
	engine_write(ctx, a, SRSV_POOL_DATA, 10 * MIB);
	ck_assert_int_eq(srsv_zone_group_alloc(a, MIB, NULL), 0);
	/* An unwritten allocation blocks the finish. */
	ck_assert_int_eq(srsv_zone_group_finish(a), -EBUSY);
	ck_assert_int_eq(srsv_zone_group_written(a, MIB), 0);

	s0 = snap(ctx, SRSV_POOL_DATA);
	ck_assert_int_eq(srsv_zone_group_finish(a), 0);
	s1 = snap(ctx, SRSV_POOL_DATA);
	gi = ginfo(a);
	/* The unwritten 189 MiB are unusable, in the group and the pool. */
	ck_assert_uint_eq(gi.alloc_offset, gi.capacity);
	ck_assert_uint_eq(gi.zone_unusable, 56 * MIB + 189 * MIB);
	ck_assert_uint_eq(s1.zone_unusable - s0.zone_unusable, 189 * MIB);
	ck_assert_uint_eq(s1.total, s0.total);
	ck_assert(!gi.active && !gi.open);
	ck_assert_int_eq(srsv_zone_group_finish(a), -EALREADY);
	/* Full: cannot be activated until reset. */
	ck_assert_int_eq(srsv_zone_group_activate(a), -ENOSPC);
	/* Its token went back. */
	ck_assert_int_eq(srsv_zone_group_activate(b), 0);

	/* Filling b by allocation closes it at once but keeps the token
	 * until the last allocation is written. */
	ck_assert_int_eq(srsv_zone_group_alloc(b, ZONE - MIB, NULL), 0);
	ck_assert_int_eq(srsv_zone_group_alloc(b, MIB, NULL), 0);
	gi = ginfo(b);
	ck_assert(gi.active && !gi.open);
	ck_assert_uint_eq(zinfo(ctx).active, 1);
	ck_assert_uint_eq(zinfo(ctx).open, 0);
	ck_assert_int_eq(srsv_zone_group_finish(b), -EBUSY);
	ck_assert_int_eq(srsv_zone_group_written(b, ZONE - MIB), 0);
	ck_assert(ginfo(b).active);
	ck_assert_int_eq(srsv_zone_group_abandon(b, MIB), -EINVAL); /* pool */
	ck_assert_int_eq(srsv_zone_group_written(b, MIB), 0);
	gi = ginfo(b);
	ck_assert(!gi.active && !gi.open);
	ck_assert_uint_eq(gi.zone_unusable, 0);	/* nothing was wasted */
	ck_assert_uint_eq(zinfo(ctx).active, 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

START_TEST(test_finish_one)
{
	struct srsv_ctx *ctx = make_ctx(0, NULL);
	struct srsv_zone_group *d[4], *m, *out = NULL;
	uint64_t at = 0;

	zoned_init(ctx, 0, NULL, NULL);
	for (int i = 0; i < 4; i++, at += ZONE)
		d[i] = add(ctx, SRSV_ZONE_DATA, at, ZONE, ZONE);
	m = add(ctx, SRSV_ZONE_METADATA, at, ZONE, ZONE);

	ck_assert_int_eq(srsv_zoned_finish_one(ctx, &out), -ENOENT);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(srsv_zone_group_activate(d[i]), 0);
	ck_assert_int_eq(srsv_zone_group_activate(m), 0);
	/* All empty: finishing one would waste a whole zone. */
	ck_assert_int_eq(srsv_zoned_finish_one(ctx, &out), -ENOENT);

	/* Rooms: d0 100 MiB, d1 20 MiB (unwritten allocation), d2 60 MiB,
	 * d3 empty; the metadata group has the least room of all. */
	ck_assert_int_eq(srsv_zone_group_alloc(d[0], ZONE - 100 * MIB, NULL),
			 0);
	ck_assert_int_eq(srsv_zone_group_written(d[0], ZONE - 100 * MIB), 0);
	ck_assert_int_eq(srsv_zone_group_alloc(d[1], ZONE - 20 * MIB, NULL),
			 0);
	ck_assert_int_eq(srsv_zone_group_alloc(d[2], ZONE - 60 * MIB, NULL),
			 0);
	ck_assert_int_eq(srsv_zone_group_written(d[2], ZONE - 60 * MIB), 0);
	ck_assert_int_eq(srsv_zone_group_alloc(m, ZONE - MIB, NULL), 0);
	ck_assert_int_eq(srsv_zone_group_written(m, ZONE - MIB), 0);

	ck_assert_int_eq(srsv_zoned_finish_one(ctx, &out), 0);
	ck_assert_ptr_eq(out, d[2]);
	ck_assert(!ginfo(d[2]).active);
	ck_assert_int_eq(srsv_zoned_finish_one(ctx, &out), 0);
	ck_assert_ptr_eq(out, d[0]);
	/* Only d1 (busy) and d3 (empty) are left. */
	ck_assert_int_eq(srsv_zoned_finish_one(ctx, &out), -EBUSY);
	ck_assert_int_eq(srsv_zone_group_written(d[1], ZONE - 20 * MIB), 0);
	ck_assert_int_eq(srsv_zoned_finish_one(ctx, NULL), 0);
	ck_assert(!ginfo(d[1]).active);
	ck_assert(ginfo(d[3]).active);
	ck_assert(ginfo(m).active);
	ck_assert_int_eq(srsv_zoned_finish_one(ctx, &out), -ENOENT);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* ---- accounting ---- */

START_TEST(test_free_accounting)
{
	struct srsv_ctx *ctx = make_ctx(0, NULL);
	struct srsv_space *s = srsv_ctx_space(ctx, SRSV_POOL_DATA);
	struct srsv_zone_group *g, *h;
	struct srsv_zone_group_info gi, hi;
	struct srsv_space_info s0, s1;

	zoned_init(ctx, 0, NULL, NULL);
	g = add(ctx, SRSV_ZONE_DATA, 0, ZONE, 240 * MIB);
	h = add(ctx, SRSV_ZONE_DATA, ZONE, ZONE, ZONE);
	ck_assert_int_eq(srsv_zone_group_activate(g), 0);
	ck_assert_int_eq(srsv_zone_group_activate(h), 0);
	engine_write(ctx, g, SRSV_POOL_DATA, 100 * MIB);
	engine_write(ctx, h, SRSV_POOL_DATA, 50 * MIB);

	/* An allocation the engine then abandons. */
	ck_assert_int_eq(srsv_space_reserve(s, 8 * MIB, SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_zone_group_alloc(g, 8 * MIB, NULL), 0);
	ck_assert_int_eq(srsv_space_alloc(s, 8 * MIB), 0);

	s0 = snap(ctx, SRSV_POOL_DATA);
	ck_assert_int_eq(srsv_zone_group_free(g, 30 * MIB), 0);
	s1 = snap(ctx, SRSV_POOL_DATA);
	gi = ginfo(g);
	ck_assert_uint_eq(gi.used, 70 * MIB);
	ck_assert_uint_eq(gi.zone_unusable, 16 * MIB + 30 * MIB);
	ck_assert_uint_eq(gi.alloc_offset, 108 * MIB);	/* never moves back */
	ck_assert_uint_eq(s0.used - s1.used, 30 * MIB);
	ck_assert_uint_eq(s1.zone_unusable - s0.zone_unusable, 30 * MIB);
	ck_assert_uint_eq(accounted(&s1), accounted(&s0));
	ck_assert_uint_eq(s1.total, s0.total);

	ck_assert_int_eq(srsv_zone_group_abandon(g, 8 * MIB), 0);
	s1 = snap(ctx, SRSV_POOL_DATA);
	gi = ginfo(g);
	ck_assert_uint_eq(gi.reserved, 0);
	ck_assert_uint_eq(gi.zone_unusable, 16 * MIB + 38 * MIB);
	ck_assert_uint_eq(s0.reserved - s1.reserved, 8 * MIB);
	ck_assert_uint_eq(accounted(&s1), accounted(&s0));

	/* The pool equals the sum of its groups. */
	hi = ginfo(h);
	ck_assert_uint_eq(s1.used, gi.used + hi.used);
	ck_assert_uint_eq(s1.reserved, gi.reserved + hi.reserved);
	ck_assert_uint_eq(s1.zone_unusable,
			  gi.zone_unusable + hi.zone_unusable);
	ck_assert_uint_eq(s1.total, gi.length + hi.length);

	/* Freed space is not free: a reservation of what would be free
	 * without zone_unusable fails. */
	ck_assert_int_eq(srsv_space_reserve(s, s1.total - s1.used - s1.may_use,
					    SRSV_NO_FLUSH, 0), -ENOSPC);
	ck_assert_int_eq(srsv_space_reserve(s, s1.total - accounted(&s1),
					    SRSV_NO_FLUSH, 0), 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* ---- RESET_ZONES ---- */

struct reset_log {
	struct flush_log flush;
	unsigned resets;
	unsigned relocations;
	struct srsv_zone_group *last;
	bool saw_busy;
	int fail;		/* return this from zone_reset */
	bool move_live;		/* relocate frees everything */
	struct srsv_zone_group *relocated[16];
};

static int on_reset(struct srsv_zone_group *g, void *user)
{
	struct reset_log *log = user;
	struct srsv_zone_group_info gi;

	/* No library lock is held: this call would self-deadlock if one
	 * were. */
	ck_assert_int_eq(srsv_zone_group_info(g, &gi), 0);
	log->saw_busy = gi.busy;
	log->last = g;
	log->resets++;
	return log->fail;
}

START_TEST(test_reset_grants_ticket)
{
	struct reset_log log = { 0 };
	struct srsv_ctx *ctx = make_ctx(0, &log);
	struct srsv_space *ms = srsv_ctx_space(ctx, SRSV_POOL_METADATA);
	struct srsv_zone_group *g1, *g2, *dg;
	struct srsv_zone_group_info gi, dgi0, dgi1;
	struct srsv_space_info s0, s1;
	struct srsv_ticket t;

	ck_assert_int_eq(srsv_ctx_set_unallocated(ctx, 0), 0);
	zoned_init(ctx, 0, on_reset, NULL);
	g1 = add(ctx, SRSV_ZONE_METADATA, 0, ZONE, ZONE);
	g2 = add(ctx, SRSV_ZONE_METADATA, ZONE, ZONE, ZONE);
	dg = add(ctx, SRSV_ZONE_DATA, 2 * ZONE, ZONE, ZONE);

	/* g1: written in full, then everything in it freed. */
	ck_assert_int_eq(srsv_zone_group_activate(g1), 0);
	engine_write(ctx, g1, SRSV_POOL_METADATA, ZONE);
	ck_assert_int_eq(srsv_zone_group_free(g1, ZONE), 0);
	gi = ginfo(g1);
	ck_assert_uint_eq(gi.zone_unusable, gi.length);
	ck_assert(!gi.active);
	/* The same for a data group: a metadata flush must not touch it. */
	ck_assert_int_eq(srsv_zone_group_activate(dg), 0);
	engine_write(ctx, dg, SRSV_POOL_DATA, ZONE);
	ck_assert_int_eq(srsv_zone_group_free(dg, ZONE), 0);
	dgi0 = ginfo(dg);

	/* Fill what is left of the metadata pool; then a ticket waits. */
	s0 = snap(ctx, SRSV_POOL_METADATA);
	ck_assert_uint_eq(s0.zone_unusable, ZONE);
	ck_assert_uint_gt(s0.total, accounted(&s0));
	ck_assert_int_eq(srsv_space_reserve(ms, s0.total - accounted(&s0),
					    SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_ticket_reserve(ms, &t, 128 * MIB,
					     SRSV_FLUSH_ALL, 0), -EINPROGRESS);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -EINPROGRESS);
	ck_assert_uint_eq(log.resets, 0);

	ck_assert_int_ge(srsv_ctx_run_pending(ctx), 1);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), 0);
	ck_assert_uint_eq(log.resets, 1);
	ck_assert_ptr_eq(log.last, g1);
	ck_assert(log.saw_busy);
	ck_assert_uint_ge(log.flush.calls[SRSV_STATE_RESET_ZONES], 1);

	s1 = snap(ctx, SRSV_POOL_METADATA);
	ck_assert_uint_eq(s1.zone_unusable, 0);
	ck_assert_uint_eq(s1.total, s0.total);
	ck_assert_uint_eq(s1.tickets_granted - s0.tickets_granted, 1);
	gi = ginfo(g1);
	ck_assert_uint_eq(gi.alloc_offset, 0);
	ck_assert_uint_eq(gi.zone_unusable, 0);
	ck_assert(!gi.busy);
	ck_assert_uint_eq(zinfo(ctx).resets, 1);
	/* The reset group is empty and can be activated again. */
	ck_assert_int_eq(srsv_zone_group_activate(g1), 0);
	dgi1 = ginfo(dg);
	ck_same_group(&dgi0, &dgi1);
	(void)g2;
	srsv_ctx_destroy(ctx);
}
END_TEST

START_TEST(test_reset_callback_failure)
{
	struct reset_log log = { .fail = -EIO };
	struct srsv_ctx *ctx = make_ctx(0, &log);
	struct srsv_space *ms = srsv_ctx_space(ctx, SRSV_POOL_METADATA);
	struct srsv_zone_group *g1;
	struct srsv_space_info s0, s1;
	struct srsv_ticket t;

	ck_assert_int_eq(srsv_ctx_set_unallocated(ctx, 0), 0);
	zoned_init(ctx, 0, on_reset, NULL);
	g1 = add(ctx, SRSV_ZONE_METADATA, 0, ZONE, ZONE);
	add(ctx, SRSV_ZONE_METADATA, ZONE, ZONE, ZONE);
	ck_assert_int_eq(srsv_zone_group_activate(g1), 0);
	engine_write(ctx, g1, SRSV_POOL_METADATA, ZONE);
	ck_assert_int_eq(srsv_zone_group_free(g1, ZONE), 0);
	s0 = snap(ctx, SRSV_POOL_METADATA);
	ck_assert_int_eq(srsv_space_reserve(ms, s0.total - accounted(&s0),
					    SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_ticket_reserve(ms, &t, 128 * MIB,
					     SRSV_FLUSH_ALL, 0), -EINPROGRESS);
	srsv_ctx_run_pending(ctx);
	/* The device refused every reset: nothing came back, the ticket
	 * failed once the walk gave up. */
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -ENOSPC);
	ck_assert_uint_ge(log.resets, 1);
	s1 = snap(ctx, SRSV_POOL_METADATA);
	ck_assert_uint_eq(s1.zone_unusable, ZONE);
	ck_assert_uint_eq(ginfo(g1).alloc_offset, ZONE);
	ck_assert(!ginfo(g1).busy);
	ck_assert_uint_eq(zinfo(ctx).resets, 0);
	/* The group is still a candidate: once the device accepts, the
	 * next pass resets it. */
	log.fail = 0;
	ck_assert_uint_eq(srsv__zoned_flush(ms, SRSV_STATE_RESET_ZONES, 0),
			  ZONE);
	ck_assert_uint_eq(ginfo(g1).alloc_offset, 0);
	ck_assert_uint_eq(zinfo(ctx).resets, 1);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* ---- RECLAIM_ZONES ---- */

static int on_relocate(struct srsv_zone_group *g, void *user)
{
	struct reset_log *log = user;
	struct srsv_zone_group_info gi;

	ck_assert_int_eq(srsv_zone_group_info(g, &gi), 0);
	ck_assert(gi.busy);
	if (log->relocations < 16)
		log->relocated[log->relocations] = g;
	log->relocations++;
	if (log->fail)
		return log->fail;	/* moved nothing */
	/* Move the live data away (a real engine writes it to a reloc
	 * group first) and free it here. */
	return srsv_zone_group_free(g, gi.used);
}

/* Relocations counted at each RECLAIM_ZONES flush callback, which runs
 * right after the library's pass for that state. */
struct pass_log {
	struct reset_log log;		/* first: on_reset/on_relocate use it */
	unsigned passes;
	unsigned at_pass[32];		/* resets or relocations so far */
};

static int log_passes(struct srsv_space *space, enum srsv_flush_state state,
		      uint64_t bytes, bool for_preempt, void *user)
{
	struct pass_log *pl = user;

	(void)space; (void)bytes; (void)for_preempt;
	if (pl->passes < 32 && state == SRSV_STATE_RESET_ZONES)
		pl->at_pass[pl->passes++] = pl->log.resets;
	if (pl->passes < 32 && state == SRSV_STATE_RECLAIM_ZONES)
		pl->at_pass[pl->passes++] = pl->log.relocations;
	return -EOPNOTSUPP;
}

/* Work done by pass @i of @pl. */
static unsigned pass_work(const struct pass_log *pl, unsigned i)
{
	return pl->at_pass[i] - (i ? pl->at_pass[i - 1] : 0);
}

START_TEST(test_reclaim_batch)
{
	struct pass_log pl = { 0 };
	struct srsv_config cfg;
	struct srsv_ctx *ctx;
	struct srsv_space *ds;
	struct srsv_zone_group *g[8];
	struct srsv_space_info s0, s1;
	struct srsv_ticket t;
	/* Live MiB per group: 7 sparse (<= 25% of 256 MiB), one dense. */
	const uint64_t live[8] = { 60, 10, 50, 200, 20, 40, 30, 5 };

	ck_assert_int_eq(srsv_config_init(&cfg), 0);
	cfg.flags = SRSV_CTX_MANUAL | SRSV_CTX_ZONED | SRSV_CTX_NO_PREEMPT;
	cfg.flush = log_passes;
	cfg.user = &pl;
	cfg.zone_bytes = ZONE;
	/* Only the zone states, so that the pass is the whole walk. */
	cfg.async_data_states.nr = 1;
	cfg.async_data_states.states[0] = SRSV_STATE_RECLAIM_ZONES;
	ctx = make_ctx_cfg(&cfg);
	ds = srsv_ctx_space(ctx, SRSV_POOL_DATA);
	zoned_init(ctx, 0, NULL, on_relocate);
	for (int i = 0; i < 8; i++) {
		g[i] = add(ctx, SRSV_ZONE_DATA, (uint64_t)i * ZONE, ZONE, ZONE);
		ck_assert_int_eq(srsv_zone_group_activate(g[i]), 0);
		engine_write(ctx, g[i], SRSV_POOL_DATA, ZONE);
		ck_assert_int_eq(srsv_zone_group_free(g[i],
						      ZONE - live[i] * MIB), 0);
	}
	ck_assert_int_eq(srsv_space_set_full(ds, true), 0);
	s0 = snap(ctx, SRSV_POOL_DATA);
	ck_assert_uint_eq(accounted(&s0), s0.total);

	/* Six zones wanted, 7 candidates: the pass stops at the batch. */
	ck_assert_int_eq(srsv_ticket_reserve(ds, &t, 6 * ZONE,
					     SRSV_FLUSH_DATA, 0), -EINPROGRESS);
	ck_assert_int_ge(srsv_ctx_run_pending(ctx), 1);
	ck_assert_uint_ge(pl.passes, 1);
	ck_assert_uint_eq(pass_work(&pl, 0), SRSV_ZONED_RECLAIM_BATCH);
	for (unsigned i = 1; i < pl.passes; i++)
		ck_assert_uint_le(pass_work(&pl, i), SRSV_ZONED_RECLAIM_BATCH);
	/* One pass: the 5 sparsest, least live data first; the dense group
	 * and the two next-sparsest were left alone. */
	ck_assert_uint_eq(pl.log.relocations, SRSV_ZONED_RECLAIM_BATCH);
	ck_assert_ptr_eq(pl.log.relocated[0], g[7]);
	ck_assert_ptr_eq(pl.log.relocated[1], g[1]);
	ck_assert_ptr_eq(pl.log.relocated[2], g[4]);
	ck_assert_ptr_eq(pl.log.relocated[3], g[6]);
	ck_assert_ptr_eq(pl.log.relocated[4], g[5]);
	ck_assert_uint_eq(zinfo(ctx).relocations, 5);
	ck_assert_uint_eq(zinfo(ctx).resets, 5);
	ck_assert_uint_eq(ginfo(g[7]).alloc_offset, 0);
	ck_assert_uint_eq(ginfo(g[2]).used, 50 * MIB);
	ck_assert_uint_eq(ginfo(g[0]).used, 60 * MIB);
	ck_assert_uint_eq(ginfo(g[3]).used, 200 * MIB);
	/* Five zones came back, not six: the walk gave up on the ticket. */
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -ENOSPC);

	/* Fill the five zones; then one zone wanted: one relocation, the
	 * sparsest left (g2), and g0 stays as it is. */
	s1 = snap(ctx, SRSV_POOL_DATA);
	ck_assert_uint_eq(s1.total - accounted(&s1), 5 * ZONE);
	ck_assert_int_eq(srsv_space_reserve(ds, 5 * ZONE, SRSV_NO_FLUSH, 0),
			 0);
	ck_assert_int_eq(srsv_ticket_reserve(ds, &t, ZONE, SRSV_FLUSH_DATA, 0),
			 -EINPROGRESS);
	ck_assert_int_ge(srsv_ctx_run_pending(ctx), 1);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), 0);
	ck_assert_uint_eq(pl.log.relocations, SRSV_ZONED_RECLAIM_BATCH + 1);
	ck_assert_ptr_eq(pl.log.relocated[5], g[2]);
	ck_assert_uint_eq(ginfo(g[2]).alloc_offset, 0);
	ck_assert_uint_eq(ginfo(g[0]).used, 60 * MIB);
	ck_assert_uint_eq(ginfo(g[0]).alloc_offset, ZONE);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* A relocation that fails leaves the group a candidate for the next. */
START_TEST(test_reclaim_callback_failure)
{
	struct reset_log log = { .fail = -EIO };
	struct srsv_ctx *ctx = make_ctx(0, &log);
	struct srsv_space *ds = srsv_ctx_space(ctx, SRSV_POOL_DATA);
	struct srsv_zone_group *g;

	zoned_init(ctx, 0, NULL, on_relocate);
	g = add(ctx, SRSV_ZONE_DATA, 0, ZONE, ZONE);
	ck_assert_int_eq(srsv_zone_group_activate(g), 0);
	engine_write(ctx, g, SRSV_POOL_DATA, ZONE);
	ck_assert_int_eq(srsv_zone_group_free(g, ZONE - 10 * MIB), 0);

	ck_assert_uint_eq(srsv__zoned_flush(ds, SRSV_STATE_RECLAIM_ZONES, 0),
			  0);
	ck_assert_uint_eq(log.relocations, 1);
	ck_assert_uint_eq(zinfo(ctx).relocations, 0);
	ck_assert(!ginfo(g).busy);
	ck_assert_uint_eq(ginfo(g).used, 10 * MIB);

	log.fail = 0;
	ck_assert_uint_eq(srsv__zoned_flush(ds, SRSV_STATE_RECLAIM_ZONES, 0),
			  ZONE);
	ck_assert_uint_eq(log.relocations, 2);
	ck_assert_uint_eq(zinfo(ctx).relocations, 1);
	ck_assert_uint_eq(zinfo(ctx).resets, 1);
	ck_assert_uint_eq(ginfo(g).alloc_offset, 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* RESET_ZONES stops at the bytes wanted, and at the batch. */
START_TEST(test_reset_batch_and_wanted)
{
	enum { NR = SRSV_ZONED_RESET_BATCH + 3 };
	struct pass_log pl = { 0 };
	struct srsv_config cfg;
	struct srsv_ctx *ctx;
	struct srsv_space *ms;
	struct srsv_zone_group *g[NR], *spare;
	struct srsv_space_info s0;
	struct srsv_ticket t;
	unsigned resets;

	ck_assert_int_eq(srsv_config_init(&cfg), 0);
	cfg.flags = SRSV_CTX_MANUAL | SRSV_CTX_ZONED | SRSV_CTX_NO_PREEMPT;
	cfg.flush = log_passes;
	cfg.user = &pl;
	cfg.zone_bytes = ZONE;
	cfg.async_metadata_states.nr = 1;
	cfg.async_metadata_states.states[0] = SRSV_STATE_RESET_ZONES;
	ctx = make_ctx_cfg(&cfg);
	ms = srsv_ctx_space(ctx, SRSV_POOL_METADATA);
	ck_assert_int_eq(srsv_ctx_set_unallocated(ctx, 0), 0);
	zoned_init(ctx, 0, on_reset, NULL);
	/* NR groups written in full and freed: every one can be reset. */
	for (int i = 0; i < NR; i++) {
		g[i] = add(ctx, SRSV_ZONE_METADATA, (uint64_t)i * ZONE, ZONE,
			   ZONE);
		ck_assert_int_eq(srsv_zone_group_activate(g[i]), 0);
		engine_write(ctx, g[i], SRSV_POOL_METADATA, ZONE);
		ck_assert_int_eq(srsv_zone_group_free(g[i], ZONE), 0);
	}
	/* One empty group, all of it reserved: the pool is full. */
	spare = add(ctx, SRSV_ZONE_METADATA, (uint64_t)NR * ZONE, ZONE, ZONE);
	(void)spare;
	s0 = snap(ctx, SRSV_POOL_METADATA);
	ck_assert_uint_eq(s0.zone_unusable, NR * ZONE);
	ck_assert_int_eq(srsv_space_reserve(ms, s0.total - accounted(&s0),
					    SRSV_NO_FLUSH, 0), 0);

	/* 128 MiB wanted: one reset is enough, and the only one. */
	ck_assert_int_eq(srsv_ticket_reserve(ms, &t, 128 * MIB,
					     SRSV_FLUSH_ALL, 0), -EINPROGRESS);
	ck_assert_int_ge(srsv_ctx_run_pending(ctx), 1);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), 0);
	ck_assert_uint_eq(pl.passes, 1);
	ck_assert_uint_eq(pl.log.resets, 1);
	ck_assert_uint_eq(zinfo(ctx).resets, 1);
	ck_assert_ptr_eq(pl.log.last, g[0]);	/* queue order */
	ck_assert_uint_eq(ginfo(g[1]).alloc_offset, ZONE);
	ck_assert_uint_eq(snap(ctx, SRSV_POOL_METADATA).zone_unusable,
			  (NR - 1) * ZONE);

	/* NR - 1 zones wanted (128 MiB are free): every group must be reset,
	 * but one pass resets at most the batch; the walk's next pass does
	 * the rest. */
	ck_assert_int_eq(srsv_ticket_reserve(ms, &t, (NR - 1) * ZONE,
					     SRSV_FLUSH_ALL, 0), -EINPROGRESS);
	ck_assert_int_ge(srsv_ctx_run_pending(ctx), 1);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), 0);
	ck_assert_uint_ge(pl.passes, 3);
	ck_assert_uint_eq(pass_work(&pl, 1), SRSV_ZONED_RESET_BATCH);
	resets = pass_work(&pl, 1);
	for (unsigned i = 2; i < pl.passes; i++) {
		ck_assert_uint_le(pass_work(&pl, i), SRSV_ZONED_RESET_BATCH);
		resets += pass_work(&pl, i);
	}
	ck_assert_uint_eq(resets, NR - 1);
	ck_assert_uint_eq(zinfo(ctx).resets, NR);
	ck_assert_uint_eq(snap(ctx, SRSV_POOL_METADATA).zone_unusable, 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* ---- passes look only at candidates (M1: no walk over the device) ---- */

START_TEST(test_flush_looks_at_candidates_only)
{
	enum { DENSE = 200 };
	struct reset_log log = { 0 };
	struct srsv_ctx *ctx = make_ctx(0, &log);
	struct srsv_space *ds = srsv_ctx_space(ctx, SRSV_POOL_DATA);
	struct srsv_zone_group *a, *b, *c, *d, *e;
	struct srsv_zoned_info z0, z1;
	uint64_t at = 0;

	zoned_init(ctx, 0, on_reset, on_relocate);
	/* A device of full, dense groups: no candidates among them. */
	for (int i = 0; i < DENSE; i++, at += ZONE) {
		struct srsv_zone_group *g = add(ctx, SRSV_ZONE_DATA, at, ZONE,
						ZONE);

		ck_assert_int_eq(srsv_zone_group_activate(g), 0);
		engine_write(ctx, g, SRSV_POOL_DATA, ZONE);
	}
	/* One candidate through each transition that can make one. */
	a = add(ctx, SRSV_ZONE_DATA, at, ZONE, ZONE);		/* free */
	ck_assert_int_eq(srsv_zone_group_activate(a), 0);
	engine_write(ctx, a, SRSV_POOL_DATA, ZONE);
	ck_assert_int_eq(srsv_zone_group_free(a, ZONE), 0);
	at += ZONE;
	b = add(ctx, SRSV_ZONE_DATA, at, ZONE, ZONE);		/* finish */
	ck_assert_int_eq(srsv_zone_group_activate(b), 0);
	ck_assert_int_eq(srsv_zone_group_finish(b), 0);
	at += ZONE;
	c = add(ctx, SRSV_ZONE_DATA, at, ZONE, ZONE);		/* abandon */
	ck_assert_int_eq(srsv_zone_group_activate(c), 0);
	ck_assert_int_eq(srsv_space_reserve(ds, ZONE, SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_zone_group_alloc(c, ZONE, NULL), 0);
	ck_assert_int_eq(srsv_space_alloc(ds, ZONE), 0);
	ck_assert_int_eq(srsv_zone_group_abandon(c, ZONE), 0);
	at += ZONE;
	/* d: freed while active, then filled: sparse when its last write
	 * lands (61 MiB live). */
	d = add(ctx, SRSV_ZONE_DATA, at, ZONE, ZONE);
	ck_assert_int_eq(srsv_zone_group_activate(d), 0);
	engine_write(ctx, d, SRSV_POOL_DATA, 200 * MIB);
	ck_assert_int_eq(srsv_zone_group_free(d, 195 * MIB), 0);
	engine_write(ctx, d, SRSV_POOL_DATA, 56 * MIB);
	at += ZONE;
	/* e: full, then freed down to 20 MiB live: sparse by the free. */
	e = add(ctx, SRSV_ZONE_DATA, at, ZONE, ZONE);
	ck_assert_int_eq(srsv_zone_group_activate(e), 0);
	engine_write(ctx, e, SRSV_POOL_DATA, ZONE);
	ck_assert_int_eq(srsv_zone_group_free(e, ZONE - 20 * MIB), 0);

	z0 = zinfo(ctx);
	ck_assert_uint_eq(z0.nr_groups, DENSE + 5);
	/* RESET_ZONES (no target: a batch) finds exactly a, b, c. */
	ck_assert_uint_eq(srsv__zoned_flush(ds, SRSV_STATE_RESET_ZONES, 0),
			  3 * ZONE);
	z1 = zinfo(ctx);
	ck_assert_uint_eq(z1.resets - z0.resets, 3);
	ck_assert_uint_eq(z1.flush_groups_looked - z0.flush_groups_looked, 3);
	ck_assert_uint_eq(ginfo(a).alloc_offset, 0);
	ck_assert_uint_eq(ginfo(b).alloc_offset, 0);
	ck_assert_uint_eq(ginfo(c).alloc_offset, 0);

	/* RECLAIM_ZONES finds exactly d and e, sparsest first. */
	z0 = z1;
	ck_assert_uint_eq(srsv__zoned_flush(ds, SRSV_STATE_RECLAIM_ZONES, 0),
			  2 * ZONE);
	z1 = zinfo(ctx);
	ck_assert_uint_eq(z1.relocations - z0.relocations, 2);
	ck_assert_uint_eq(z1.flush_groups_looked - z0.flush_groups_looked, 2);
	ck_assert_ptr_eq(log.relocated[0], e);
	ck_assert_ptr_eq(log.relocated[1], d);

	/* Nothing left: both passes look at nothing. */
	z0 = z1;
	ck_assert_uint_eq(srsv__zoned_flush(ds, SRSV_STATE_RESET_ZONES, 0), 0);
	ck_assert_uint_eq(srsv__zoned_flush(ds, SRSV_STATE_RECLAIM_ZONES, 0),
			  0);
	z1 = zinfo(ctx);
	ck_assert_uint_eq(z1.flush_groups_looked, z0.flush_groups_looked);
	ck_assert_uint_eq(snap(ctx, SRSV_POOL_DATA).zone_unusable, 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* ---- one model: chunks and zones on the same lists, one statistics block ---- */

static struct srsv_bgroup_stats bstats(struct srsv_ctx *ctx)
{
	struct srsv_bgroup_stats st;

	ck_assert_int_eq(srsv_bgroup_stats(ctx, &st), 0);
	return st;
}

/*
 * A chunk and a zone of the DATA pool become reclaim candidates by their
 * flavours' rules; srsv_bgroup_reclaim_take() hands out the chunk only,
 * RECLAIM_ZONES relocates the zone only (the least used first, skipping
 * one with outstanding pinned bytes), and both relocations land in the one
 * statistics block with their bytes, mirrored in srsv_zoned_get_info().
 */
START_TEST(test_one_model_both_flavours)
{
	struct reset_log log = { 0 };
	struct srsv_ctx *ctx = make_ctx(0, &log);
	struct srsv_space *ds = srsv_ctx_space(ctx, SRSV_POOL_DATA);
	struct srsv_bgroup_config bc;
	struct srsv_zone_group *a, *b, *c;
	struct srsv_bgroup_info t;
	struct srsv_bgroup_stats st;
	struct srsv_zoned_info zi;

	zoned_init(ctx, 0, on_reset, on_relocate);
	ck_assert_int_eq(srsv_bgroup_config_init(&bc), 0);
	bc.dynamic_reclaim = false;
	bc.periodic_reclaim = false;
	bc.reclaim_threshold_pct = 75;
	ck_assert_int_eq(srsv_bgroups_init(ctx, &bc), 0);
	ck_assert_int_eq(srsv_ctx_set_unallocated(ctx, 4 * GIB), 0);
	/* The chunk: 200 of 256 MiB freed, below 75% used. */
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, 4 * GIB, ZONE),
			 0);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, 4 * GIB, ZONE),
			 0);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, 4 * GIB,
					  200 * MIB, 0), 0);
	/* Zones a (20 MiB live) and b (40 MiB live): 75% of the capacity
	 * freed below the write pointer; c has its frees still pinned. */
	a = add(ctx, SRSV_ZONE_DATA, 0, ZONE, ZONE);
	b = add(ctx, SRSV_ZONE_DATA, ZONE, ZONE, ZONE);
	c = add(ctx, SRSV_ZONE_DATA, 2 * ZONE, ZONE, ZONE);
	ck_assert_int_eq(srsv_zone_group_activate(a), 0);
	ck_assert_int_eq(srsv_zone_group_activate(b), 0);
	ck_assert_int_eq(srsv_zone_group_activate(c), 0);
	engine_write(ctx, a, SRSV_POOL_DATA, ZONE);
	engine_write(ctx, b, SRSV_POOL_DATA, ZONE);
	engine_write(ctx, c, SRSV_POOL_DATA, ZONE);
	ck_assert_int_eq(srsv_zone_group_free(b, ZONE - 40 * MIB), 0);
	ck_assert_int_eq(srsv_zone_group_free(a, ZONE - 20 * MIB), 0);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, 2 * ZONE,
					  ZONE - 10 * MIB, 1), 0);
	ck_assert(ginfo(a).zone_unusable == ZONE - 20 * MIB);
	ck_assert_int_eq(srsv_bgroup_get(ctx, 0, &t), 0);
	ck_assert(t.candidate);
	ck_assert_int_eq(srsv_bgroup_get(ctx, ZONE, &t), 0);
	ck_assert(t.candidate);
	ck_assert_int_eq(srsv_bgroup_get(ctx, 2 * ZONE, &t), 0);
	ck_assert(!t.candidate);		/* pinned, not unusable yet */
	ck_assert_int_eq(srsv_bgroup_get(ctx, 4 * GIB, &t), 0);
	ck_assert(t.candidate);
	ck_assert_uint_eq(bstats(ctx).marked, 3);

	/* The engine's take: the chunk, never a zone. */
	ck_assert_int_eq(srsv_bgroup_reclaim_take(ctx, &t), 0);
	ck_assert_uint_eq(t.start, 4 * GIB);
	ck_assert(t.readonly);
	ck_assert_int_eq(srsv_bgroup_reclaim_take(ctx, &t), -ENOENT);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, 4 * GIB,
					  ZONE - 200 * MIB, 2), 0);
	ck_assert_int_eq(srsv_bgroup_reclaim_done(ctx, 4 * GIB, 0), 0);

	/* RECLAIM_ZONES: the zones, a (least used) first; the chunk's
	 * entries are not its. */
	ck_assert_uint_eq(srsv__zoned_flush(ds, SRSV_STATE_RECLAIM_ZONES, 0),
			  2 * ZONE);
	ck_assert_uint_eq(log.relocations, 2);
	ck_assert_ptr_eq(log.relocated[0], a);
	ck_assert_ptr_eq(log.relocated[1], b);
	ck_assert_uint_eq(ginfo(a).alloc_offset, 0);
	/* c: its commit makes it a candidate (pinned bytes kept it out). */
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 1), 0);
	ck_assert_int_eq(srsv_bgroup_get(ctx, 2 * ZONE, &t), 0);
	ck_assert(t.candidate);
	ck_assert_uint_eq(srsv__zoned_flush(ds, SRSV_STATE_RECLAIM_ZONES, 0),
			  ZONE);
	st = bstats(ctx);
	ck_assert_uint_eq(st.reclaimed, 4);
	ck_assert_uint_eq(st.reclaim_failed, 0);
	ck_assert_uint_eq(st.reclaimed_bytes, 56 * MIB + 20 * MIB + 40 * MIB +
					      10 * MIB);
	ck_assert_uint_eq(st.resets, 3);
	zi = zinfo(ctx);
	ck_assert_uint_eq(zi.resets, st.resets);
	ck_assert_uint_eq(zi.relocations, st.reclaimed);
	ck_assert_uint_eq(zi.flush_groups_looked, st.candidates_looked);
	/* The chunk goes back at the commit that frees its old copies. */
	ck_assert_int_eq(srsv_ctx_commit_done(ctx, 2), 1);
	ck_assert_int_eq(srsv_bgroup_get(ctx, 4 * GIB, &t), -ENOENT);
	ck_assert_uint_eq(snap(ctx, SRSV_POOL_DATA).zone_unusable, 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* ---- the allocator path never waits for a pool lock or a pass ---- */

/*
 * A deadline far beyond any legitimate wait: it only turns a regression
 * (a thread that waits for a lock the test holds) into a failure instead
 * of a hang.  Nothing is asserted about how long anything took.
 */
#define DEADLOCK_NS (UINT64_C(20) * 1000000000)

static void deadline_in(struct timespec *ts, uint64_t ns)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += (time_t)(ns / 1000000000);
	ts->tv_nsec += (long)(ns % 1000000000);
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

/* A flag with a condition, waited for with the deadlock deadline. */
struct flag {
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	bool set;
};

static void flag_init(struct flag *f)
{
	pthread_condattr_t attr;

	ck_assert_int_eq(pthread_mutex_init(&f->mutex, NULL), 0);
	ck_assert_int_eq(pthread_condattr_init(&attr), 0);
	ck_assert_int_eq(pthread_condattr_setclock(&attr, CLOCK_MONOTONIC), 0);
	ck_assert_int_eq(pthread_cond_init(&f->cond, &attr), 0);
	pthread_condattr_destroy(&attr);
	f->set = false;
}

static void flag_destroy(struct flag *f)
{
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->mutex);
}

static void flag_set(struct flag *f)
{
	pthread_mutex_lock(&f->mutex);
	f->set = true;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->mutex);
}

/* Wait for @f until the deadlock deadline; returns whether it is set. */
static bool flag_wait(struct flag *f)
{
	struct timespec ts;
	bool set;

	deadline_in(&ts, DEADLOCK_NS);
	pthread_mutex_lock(&f->mutex);
	while (!f->set &&
	       pthread_cond_timedwait(&f->cond, &f->mutex, &ts) == 0)
		;
	set = f->set;
	pthread_mutex_unlock(&f->mutex);
	return set;
}

/* Is thread @tid of this process asleep (blocked, e.g. on a mutex)? */
static bool thread_sleeping(pid_t tid)
{
	char path[64], buf[512], *p;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* "tid (comm) S ...": the state follows the last ')'. */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

/* Wait (bounded) until thread @tid sleeps. */
static bool wait_sleeping(pid_t tid)
{
	const struct timespec tick = { 0, 1000000 };	/* 1 ms polls */
	struct timespec end, now;

	deadline_in(&end, DEADLOCK_NS);
	for (;;) {
		if (thread_sleeping(tid))
			return true;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec ||
		    (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
			return false;
		nanosleep(&tick, NULL);
	}
}

struct pool_held {
	struct srsv_ctx *ctx;
	struct srsv_zone_group *open, *idle, *added;
	volatile pid_t adder_tid;	/* set before the add */
	int add_ret;
	struct flag adder_started, allocator_done;
	int hint_ret, activate_ret, alloc_ret, written_ret;
	struct srsv_zone_group *hinted;
};

/* Registers a group: must wait for the pool lock the test holds. */
static void *adder(void *arg)
{
	struct pool_held *h = arg;

	h->adder_tid = (pid_t)syscall(SYS_gettid);
	flag_set(&h->adder_started);
	h->add_ret = srsv_zone_group_add(h->ctx, SRSV_ZONE_DATA, 8 * ZONE,
					 ZONE, ZONE, &h->added);
	return NULL;
}

/* The allocator path: must not need the pool lock. */
static void *allocator(void *arg)
{
	struct pool_held *h = arg;

	h->hint_ret = srsv_zone_hint(h->ctx, SRSV_ZONE_DATA, MIB, &h->hinted);
	h->activate_ret = srsv_zone_group_activate(h->idle);
	/* Fill the open group: it leaves the active list (list lock). */
	h->alloc_ret = srsv_zone_group_alloc(h->open, ZONE, NULL);
	h->written_ret = srsv_zone_group_written(h->open, ZONE);
	flag_set(&h->allocator_done);
	return NULL;
}

/*
 * M3: a registration waiting for a pool lock must not hold up the hint.
 * The test holds the data pool's lock, a thread registers a group (and
 * blocks on that lock), then another thread runs hint, activate, alloc and
 * written; they must all complete while the test still holds the lock.
 */
START_TEST(test_hint_while_pool_locked)
{
	struct pool_held h = { 0 };
	struct srsv_space *ds;
	pthread_t add_th, alloc_th;
	bool done_while_held;
	uint64_t total0;

	h.ctx = make_ctx(0, NULL);
	ds = srsv_ctx_space(h.ctx, SRSV_POOL_DATA);
	zoned_init(h.ctx, 0, NULL, NULL);
	h.open = add(h.ctx, SRSV_ZONE_DATA, 0, ZONE, ZONE);
	h.idle = add(h.ctx, SRSV_ZONE_DATA, ZONE, ZONE, ZONE);
	ck_assert_int_eq(srsv_zone_group_activate(h.open), 0);
	total0 = snap(h.ctx, SRSV_POOL_DATA).total;
	flag_init(&h.adder_started);
	flag_init(&h.allocator_done);

	srsv__lock(&ds->lock);
	ck_assert_int_eq(pthread_create(&add_th, NULL, adder, &h), 0);
	ck_assert(flag_wait(&h.adder_started));
	/* The adder sleeps: it waits for the pool lock. */
	ck_assert(wait_sleeping(h.adder_tid));
	ck_assert_int_eq(pthread_create(&alloc_th, NULL, allocator, &h), 0);
	done_while_held = flag_wait(&h.allocator_done);
	srsv__unlock(&ds->lock);
	pthread_join(alloc_th, NULL);
	pthread_join(add_th, NULL);

	ck_assert_msg(done_while_held,
		      "the allocator path waited for a pool lock");
	ck_assert_int_eq(h.hint_ret, 0);
	ck_assert_ptr_eq(h.hinted, h.open);
	ck_assert_int_eq(h.activate_ret, 0);
	ck_assert_int_eq(h.alloc_ret, 0);
	ck_assert_int_eq(h.written_ret, 0);
	ck_assert(!ginfo(h.open).open && !ginfo(h.open).active);
	ck_assert(ginfo(h.idle).open);
	ck_assert_int_eq(h.add_ret, 0);
	ck_assert_ptr_nonnull(h.added);
	ck_assert_uint_eq(snap(h.ctx, SRSV_POOL_DATA).total - total0, ZONE);
	ck_assert_uint_eq(zinfo(h.ctx).nr_groups, 3);
	flag_destroy(&h.adder_started);
	flag_destroy(&h.allocator_done);
	srsv_ctx_destroy(h.ctx);
}
END_TEST

struct parked {
	struct flush_log flush;		/* first: count_flush's view */
	struct srsv_space *ds;
	struct srsv_zone_group *first;	/* the group the pass parks on */
	struct flag in_callback, release;
	bool timed_out;
	unsigned calls;			/* atomic */
	uint64_t freed;			/* by the parked pass */
};

/* zone_reset: the first call parks until the test releases it. */
static int park_reset(struct srsv_zone_group *g, void *user)
{
	struct parked *p = user;

	if (__atomic_fetch_add(&p->calls, 1, __ATOMIC_RELAXED))
		return 0;
	p->first = g;
	flag_set(&p->in_callback);
	p->timed_out = !flag_wait(&p->release);
	return 0;
}

static void *parked_pass(void *arg)
{
	struct parked *p = arg;

	/* One byte wanted: this pass resets one group, the parked one. */
	p->freed = srsv__zoned_flush(p->ds, SRSV_STATE_RESET_ZONES, 1);
	return NULL;
}

/*
 * M1: a RESET_ZONES pass waiting in the engine's zone_reset holds nothing
 * the allocator or another pass needs: hint, activate, alloc to full,
 * written, finish, finish-one, a registration and a second pass all
 * complete while it is parked, and the second pass does not take the
 * parked (busy) group.
 */
START_TEST(test_pass_does_not_hold_up_allocator)
{
	struct parked p = { 0 };
	struct srsv_ctx *ctx = make_ctx(0, &p);
	struct srsv_zone_group *r1, *r2, *open, *idle, *part, *got, *other;
	struct srsv_zoned_info zi;
	pthread_t th;
	bool parked;

	p.ds = srsv_ctx_space(ctx, SRSV_POOL_DATA);
	flag_init(&p.in_callback);
	flag_init(&p.release);
	zoned_init(ctx, 0, park_reset, NULL);
	r1 = add(ctx, SRSV_ZONE_DATA, 0, ZONE, ZONE);
	r2 = add(ctx, SRSV_ZONE_DATA, ZONE, ZONE, ZONE);
	for (int i = 0; i < 2; i++) {
		struct srsv_zone_group *r = i ? r2 : r1;

		ck_assert_int_eq(srsv_zone_group_activate(r), 0);
		engine_write(ctx, r, SRSV_POOL_DATA, ZONE);
		ck_assert_int_eq(srsv_zone_group_free(r, ZONE), 0);
	}
	open = add(ctx, SRSV_ZONE_DATA, 2 * ZONE, ZONE, ZONE);
	idle = add(ctx, SRSV_ZONE_DATA, 3 * ZONE, ZONE, ZONE);
	part = add(ctx, SRSV_ZONE_DATA, 4 * ZONE, ZONE, ZONE);
	other = add(ctx, SRSV_ZONE_DATA, 5 * ZONE, ZONE, ZONE);
	ck_assert_int_eq(srsv_zone_group_activate(open), 0);
	ck_assert_int_eq(srsv_zone_group_activate(part), 0);
	ck_assert_int_eq(srsv_zone_group_activate(other), 0);
	engine_write(ctx, part, SRSV_POOL_DATA, 10 * MIB);
	engine_write(ctx, other, SRSV_POOL_DATA, 20 * MIB);

	ck_assert_int_eq(pthread_create(&th, NULL, parked_pass, &p), 0);
	parked = flag_wait(&p.in_callback);
	if (parked) {
		ck_assert_ptr_eq(p.first, r1);		/* queue order */
		ck_assert(ginfo(r1).busy);
		/* The allocator path. */
		ck_assert_int_eq(srsv_zone_hint(ctx, SRSV_ZONE_DATA, MIB, &got),
				 0);
		ck_assert_ptr_eq(got, open);
		ck_assert_int_eq(srsv_zone_group_activate(idle), 0);
		ck_assert_int_eq(srsv_zone_group_alloc(open, ZONE, NULL), 0);
		ck_assert_int_eq(srsv_zone_group_written(open, ZONE), 0);
		ck_assert_int_eq(srsv_zone_group_finish(part), 0);
		ck_assert_int_eq(srsv_zoned_finish_one(ctx, &got), 0);
		ck_assert_ptr_eq(got, other);
		add(ctx, SRSV_ZONE_DATA, 6 * ZONE, ZONE, ZONE);
		/* A busy group cannot be activated. */
		ck_assert_int_eq(srsv_zone_group_activate(r1), -EBUSY);
		/* A second pass resets r2, not the parked r1. */
		ck_assert_uint_eq(srsv__zoned_flush(p.ds,
						    SRSV_STATE_RESET_ZONES, 0),
				  ZONE);
		ck_assert_uint_eq(ginfo(r2).alloc_offset, 0);
		ck_assert_uint_eq(ginfo(r1).alloc_offset, ZONE);
		zi = zinfo(ctx);
		ck_assert_uint_eq(zi.resets, 1);
	}
	flag_set(&p.release);
	pthread_join(th, NULL);
	ck_assert_msg(parked, "the pass never reached its callback");
	ck_assert_msg(!p.timed_out,
		      "the test's calls waited for the parked pass");
	ck_assert_uint_eq(p.freed, ZONE);
	ck_assert_uint_eq(ginfo(r1).alloc_offset, 0);
	ck_assert(!ginfo(r1).busy);
	ck_assert_uint_eq(zinfo(ctx).resets, 2);
	flag_destroy(&p.in_callback);
	flag_destroy(&p.release);
	srsv_ctx_destroy(ctx);
}
END_TEST

struct two_passes {
	struct srsv_ctx *ctx;
	struct srsv_space *ds;
	struct srsv_zone_group *open, *hinted;
	volatile pid_t tid[2];
	struct flag started[2], hinter_done;
	uint64_t freed[2];
	int hint_ret;
};

struct pass_arg {
	struct two_passes *tp;
	int i;
};

static void *reset_pass(void *arg)
{
	struct pass_arg *a = arg;
	struct two_passes *tp = a->tp;

	tp->tid[a->i] = (pid_t)syscall(SYS_gettid);
	flag_set(&tp->started[a->i]);
	tp->freed[a->i] = srsv__zoned_flush(tp->ds, SRSV_STATE_RESET_ZONES, 1);
	return NULL;
}

static void *hinter(void *arg)
{
	struct two_passes *tp = arg;

	tp->hint_ret = srsv_zone_hint(tp->ctx, SRSV_ZONE_DATA, MIB,
				      &tp->hinted);
	flag_set(&tp->hinter_done);
	return NULL;
}

/*
 * M1: passes that wait (here for a pool lock the test holds, as they
 * would behind any slow pool-lock holder) must not hold up the hint.  The
 * first pass takes a candidate and blocks giving its capacity back; the
 * second must not block on that group while holding anything the hint
 * needs (a walk over every group under the hint's lock did).
 */
START_TEST(test_waiting_passes_do_not_hold_up_hint)
{
	struct two_passes tp = { 0 };
	struct pass_arg args[2] = { { &tp, 0 }, { &tp, 1 } };
	struct srsv_zone_group *r[2];
	pthread_t pass_th[2], hint_th;
	bool done_while_held;

	tp.ctx = make_ctx(0, NULL);
	tp.ds = srsv_ctx_space(tp.ctx, SRSV_POOL_DATA);
	zoned_init(tp.ctx, 0, NULL, NULL);
	for (int i = 0; i < 2; i++) {
		r[i] = add(tp.ctx, SRSV_ZONE_DATA, (uint64_t)i * ZONE, ZONE,
			   ZONE);
		ck_assert_int_eq(srsv_zone_group_activate(r[i]), 0);
		engine_write(tp.ctx, r[i], SRSV_POOL_DATA, ZONE);
		ck_assert_int_eq(srsv_zone_group_free(r[i], ZONE), 0);
	}
	tp.open = add(tp.ctx, SRSV_ZONE_DATA, 2 * ZONE, ZONE, ZONE);
	ck_assert_int_eq(srsv_zone_group_activate(tp.open), 0);
	for (int i = 0; i < 2; i++)
		flag_init(&tp.started[i]);
	flag_init(&tp.hinter_done);

	srsv__lock(&tp.ds->lock);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(pthread_create(&pass_th[i], NULL, reset_pass,
						&args[i]), 0);
		ck_assert(flag_wait(&tp.started[i]));
		/* Asleep: blocked inside the pass. */
		ck_assert(wait_sleeping(tp.tid[i]));
	}
	ck_assert_int_eq(pthread_create(&hint_th, NULL, hinter, &tp), 0);
	done_while_held = flag_wait(&tp.hinter_done);
	srsv__unlock(&tp.ds->lock);
	pthread_join(hint_th, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(pass_th[i], NULL);

	ck_assert_msg(done_while_held, "the hint waited for a flush pass");
	ck_assert_int_eq(tp.hint_ret, 0);
	ck_assert_ptr_eq(tp.hinted, tp.open);
	/* Each pass reset one group: they did not take the same one. */
	ck_assert_uint_eq(tp.freed[0], ZONE);
	ck_assert_uint_eq(tp.freed[1], ZONE);
	ck_assert_uint_eq(zinfo(tp.ctx).resets, 2);
	for (int i = 0; i < 2; i++) {
		ck_assert_uint_eq(ginfo(r[i]).alloc_offset, 0);
		flag_destroy(&tp.started[i]);
	}
	flag_destroy(&tp.hinter_done);
	srsv_ctx_destroy(tp.ctx);
}
END_TEST

/* ---- overcommit aligned to the zone size (core, checked here) ---- */

static int overcommit_300(bool zoned)
{
	struct srsv_config cfg;
	struct srsv_ctx *ctx;
	struct srsv_space *ms;
	struct srsv_space_info s0;
	int ret;

	ck_assert_int_eq(srsv_config_init(&cfg), 0);
	cfg.flags = SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT |
		    (zoned ? SRSV_CTX_ZONED : 0);
	cfg.zone_bytes = ZONE;
	cfg.pool_bytes[SRSV_POOL_DATA] = GIB;
	cfg.pool_bytes[SRSV_POOL_METADATA] = GIB;
	cfg.device_bytes = 100 * GIB;
	/* A data chunk is one zone on zoned devices: same allowance both
	 * ways.  After the 256 MiB left for it, 768 MiB; NO_FLUSH may use
	 * half: 384 MiB unaligned, 256 MiB aligned down to the zone. */
	cfg.data_chunk_bytes = ZONE;
	cfg.unallocated_bytes = ZONE + 768 * MIB;
	ctx = make_ctx_cfg(&cfg);
	ms = srsv_ctx_space(ctx, SRSV_POOL_METADATA);
	s0 = snap(ctx, SRSV_POOL_METADATA);
	ck_assert_int_eq(srsv_space_reserve(ms, s0.total - accounted(&s0),
					    SRSV_NO_FLUSH, 0), 0);
	/* 200 MiB fits both ways (control). */
	ck_assert_int_eq(srsv_space_reserve(ms, 200 * MIB, SRSV_NO_FLUSH, 0),
			 0);
	ck_assert_int_eq(srsv_space_release(ms, 200 * MIB), 0);
	ret = srsv_space_reserve(ms, 300 * MIB, SRSV_NO_FLUSH, 0);
	srsv_ctx_destroy(ctx);
	return ret;
}

START_TEST(test_overcommit_zone_aligned)
{
	ck_assert_int_eq(overcommit_300(false), 0);
	ck_assert_int_eq(overcommit_300(true), -ENOSPC);
}
END_TEST

/* ---- hints racing activations and finishes ---- */

#define RACE_GROUPS 96
#define RACE_META 8
#define RACE_UNIT (64 * 1024)
#define RACE_ZONE (4 * MIB)
#define RACE_UNITS_PER_ZONE (RACE_ZONE / RACE_UNIT)
#define RACE_HINTS 20000

struct race {
	struct srsv_ctx *ctx;
	struct srsv_zone_group *data[RACE_GROUPS];
	struct srsv_zone_group *meta[RACE_META];
	unsigned next_data;		/* atomic: next group to activate */
	unsigned char *claimed;		/* one byte per unit, atomic */
	uint64_t allocated;		/* atomic */
	unsigned bad;			/* atomic: a check that failed */
	unsigned allocators_left;	/* atomic */
};

static bool is_data_group(struct race *r, struct srsv_zone_group *g)
{
	for (int i = 0; i < RACE_GROUPS; i++)
		if (r->data[i] == g)
			return true;
	return false;
}

static void race_fail(struct race *r)
{
	__atomic_fetch_add(&r->bad, 1, __ATOMIC_RELAXED);
}

/* Allocate 64 KiB units until every data group was used. */
static void *race_allocator(void *arg)
{
	struct race *r = arg;

	for (;;) {
		struct srsv_zone_group *g;
		uint64_t logical;
		unsigned i;
		int ret = srsv_zone_hint(r->ctx, SRSV_ZONE_DATA, RACE_UNIT, &g);

		if (!ret) {
			ret = srsv_zone_group_alloc(g, RACE_UNIT, &logical);
			if (ret == -ENOSPC)
				continue;	/* raced: ask again */
			if (ret || logical % RACE_UNIT ||
			    logical / RACE_UNIT >= RACE_GROUPS *
			    RACE_UNITS_PER_ZONE) {
				race_fail(r);
				break;
			}
			/* Every unit is handed out once. */
			if (__atomic_exchange_n(&r->claimed[logical / RACE_UNIT],
						1, __ATOMIC_RELAXED))
				race_fail(r);
			__atomic_fetch_add(&r->allocated, RACE_UNIT,
					   __ATOMIC_RELAXED);
			if (srsv_zone_group_written(g, RACE_UNIT))
				race_fail(r);
			continue;
		}
		if (ret != -ENOSPC) {
			race_fail(r);
			break;
		}
		i = __atomic_fetch_add(&r->next_data, 1, __ATOMIC_RELAXED);
		if (i >= RACE_GROUPS)
			break;
		/* Make room for it if the device is at its limit. */
		while ((ret = srsv_zone_group_activate(r->data[i])) == -EBUSY) {
			/* -EBUSY / -ENOENT: another racer's turn. */
			(void)!srsv_zoned_finish_one(r->ctx, NULL);
			sched_yield();
		}
		if (ret)
			race_fail(r);
	}
	__atomic_fetch_sub(&r->allocators_left, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Look up hints for data and metadata and check what comes back. */
static void *race_hinter(void *arg)
{
	struct race *r = arg;

	for (int n = 0; n < RACE_HINTS; n++) {
		struct srsv_zone_group *g;
		struct srsv_zone_group_info gi;
		int kind = n % 2 ? SRSV_ZONE_DATA : SRSV_ZONE_METADATA;
		int ret = srsv_zone_hint(r->ctx, kind, RACE_UNIT, &g);

		if (ret == -ENOSPC)
			continue;
		if (ret || srsv_zone_group_info(g, &gi) || gi.kind != kind) {
			race_fail(r);
			continue;
		}
		if (kind == SRSV_ZONE_DATA && !is_data_group(r, g))
			race_fail(r);
	}
	return NULL;
}

/* Activate and finish metadata groups, and finish data groups early. */
static void *race_churn(void *arg)
{
	struct race *r = arg;
	unsigned n = 0;

	while (__atomic_load_n(&r->allocators_left, __ATOMIC_ACQUIRE)) {
		struct srsv_zone_group *m = r->meta[n++ % RACE_META];
		int ret = srsv_zone_group_activate(m);

		if (ret && ret != -EBUSY && ret != -ENOSPC)
			race_fail(r);
		if (!ret && srsv_zone_group_alloc(m, RACE_UNIT, NULL) == 0 &&
		    srsv_zone_group_written(m, RACE_UNIT))
			race_fail(r);
		ret = srsv_zone_group_finish(m);
		if (ret && ret != -EALREADY && ret != -EBUSY)
			race_fail(r);
		if (n % 4 == 0) {
			ret = srsv_zoned_finish_one(r->ctx, NULL);
			if (ret && ret != -ENOENT && ret != -EBUSY)
				race_fail(r);
		}
		sched_yield();
	}
	return NULL;
}

START_TEST(test_concurrent_hints)
{
	enum { ALLOCATORS = 2, HINTERS = 2 };
	struct race *r = calloc(1, sizeof(*r));
	pthread_t alloc_th[ALLOCATORS], hint_th[HINTERS], churn_th;
	struct srsv_space_info ds, ms;
	struct srsv_zoned_info zi;
	uint64_t sum_used = 0, sum_unusable = 0, sum_munusable = 0;
	unsigned active = 0, open = 0;

	ck_assert_ptr_nonnull(r);
	r->claimed = calloc(RACE_GROUPS * RACE_UNITS_PER_ZONE, 1);
	ck_assert_ptr_nonnull(r->claimed);
	r->ctx = make_ctx(0, NULL);
	/* 3 reserved tokens: data gets 3 of 6, so activations collide with
	 * the limit all the time. */
	zoned_init(r->ctx, 6, NULL, NULL);
	for (int i = 0; i < RACE_GROUPS; i++)
		r->data[i] = add(r->ctx, SRSV_ZONE_DATA,
				 (uint64_t)i * RACE_ZONE, RACE_ZONE, RACE_ZONE);
	for (int i = 0; i < RACE_META; i++)
		r->meta[i] = add(r->ctx, SRSV_ZONE_METADATA,
				 (uint64_t)(RACE_GROUPS + i) * RACE_ZONE,
				 RACE_ZONE, RACE_ZONE);
	r->allocators_left = ALLOCATORS;

	for (int i = 0; i < ALLOCATORS; i++)
		ck_assert_int_eq(pthread_create(&alloc_th[i], NULL,
						race_allocator, r), 0);
	for (int i = 0; i < HINTERS; i++)
		ck_assert_int_eq(pthread_create(&hint_th[i], NULL, race_hinter,
						r), 0);
	ck_assert_int_eq(pthread_create(&churn_th, NULL, race_churn, r), 0);
	for (int i = 0; i < ALLOCATORS; i++)
		pthread_join(alloc_th[i], NULL);
	for (int i = 0; i < HINTERS; i++)
		pthread_join(hint_th[i], NULL);
	pthread_join(churn_th, NULL);

	ck_assert_uint_eq(r->bad, 0);
	ck_assert_uint_gt(r->allocated, 0);
	/* Every byte below a write pointer was handed out once or wasted by
	 * a finish; the pool's zone_unusable is the groups' sum. */
	for (int i = 0; i < RACE_GROUPS; i++) {
		struct srsv_zone_group_info gi = ginfo(r->data[i]);

		ck_assert_uint_eq(gi.reserved, 0);
		ck_assert_uint_eq(gi.used + gi.zone_unusable,
				  gi.alloc_offset);
		sum_used += gi.used;
		sum_unusable += gi.zone_unusable;
		active += gi.active;
		open += gi.open;
	}
	for (int i = 0; i < RACE_META; i++) {
		struct srsv_zone_group_info gi = ginfo(r->meta[i]);

		sum_munusable += gi.zone_unusable;
		active += gi.active;
		open += gi.open;
	}
	ck_assert_uint_eq(sum_used, r->allocated);
	ds = snap(r->ctx, SRSV_POOL_DATA);
	ms = snap(r->ctx, SRSV_POOL_METADATA);
	ck_assert_uint_eq(ds.zone_unusable, sum_unusable);
	ck_assert_uint_eq(ms.zone_unusable, sum_munusable);
	zi = zinfo(r->ctx);
	ck_assert_uint_eq(zi.active, active);
	ck_assert_uint_eq(zi.open, open);
	ck_assert_uint_le(zi.active, 6);
	srsv_ctx_destroy(r->ctx);
	free(r->claimed);
	free(r);
}
END_TEST

/* ---- passes racing writers, frees and finishes ---- */

#define CHURN_GROUPS 24
/* Allocations per writer: two writers write 375 MiB into a 96 MiB pool,
 * so the passes must give space back for them to finish. */
#define CHURN_UNITS 3000
/* Attempts per writer before it reports no progress: far above what the
 * test needs, it only bounds a livelock. */
#define CHURN_TRIES (1000 * CHURN_UNITS)

struct churn {
	struct srsv_ctx *ctx;
	struct srsv_space *ds;
	struct srsv_zone_group *g[CHURN_GROUPS];
	unsigned next;			/* atomic: next group to activate */
	unsigned writers_left;		/* atomic */
	unsigned bad;			/* atomic */
};

static void churn_fail(struct churn *c)
{
	__atomic_fetch_add(&c->bad, 1, __ATOMIC_RELAXED);
}

/* Relocation: free what is live (a concurrent free may beat it: then the
 * amount is stale and the free refuses, which a pass must cope with). */
static int churn_relocate(struct srsv_zone_group *g, void *user)
{
	struct srsv_zone_group_info gi;

	(void)user;
	if (srsv_zone_group_info(g, &gi) || !gi.busy)
		return -EIO;
	return gi.used ? srsv_zone_group_free(g, gi.used) : 0;
}

/* Write units and free nine in ten of them at once: groups fill, leave
 * the list and become reset or reclaim candidates while passes run. */
static void *churn_writer(void *arg)
{
	struct churn *c = arg;
	unsigned n = 0;

	for (unsigned tries = 0; n < CHURN_UNITS; tries++) {
		struct srsv_zone_group *g;
		int ret;

		if (tries == CHURN_TRIES) {
			churn_fail(c);
			break;
		}
		ret = srsv_zone_hint(c->ctx, SRSV_ZONE_DATA, RACE_UNIT, &g);

		if (ret == -ENOSPC) {
			unsigned i = __atomic_fetch_add(&c->next, 1,
							__ATOMIC_RELAXED);

			ret = srsv_zone_group_activate(c->g[i % CHURN_GROUPS]);
			if (ret && ret != -EBUSY && ret != -ENOSPC)
				churn_fail(c);
			if (ret)
				sched_yield();
			continue;
		}
		if (ret) {
			churn_fail(c);
			break;
		}
		if (srsv_space_reserve(c->ds, RACE_UNIT, SRSV_NO_FLUSH, 0)) {
			sched_yield();		/* passes give space back */
			continue;
		}
		if (srsv_zone_group_alloc(g, RACE_UNIT, NULL)) {
			if (srsv_space_release(c->ds, RACE_UNIT))
				churn_fail(c);
			continue;
		}
		if (srsv_space_alloc(c->ds, RACE_UNIT) ||
		    srsv_zone_group_written(g, RACE_UNIT) ||
		    srsv_space_commit_used(c->ds, RACE_UNIT))
			churn_fail(c);
		/* -EINVAL: a relocation freed this group's live bytes. */
		if (n++ % 10) {
			ret = srsv_zone_group_free(g, RACE_UNIT);
			if (ret && ret != -EINVAL)
				churn_fail(c);
		}
	}
	__atomic_fetch_sub(&c->writers_left, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *churn_flusher(void *arg)
{
	struct churn *c = arg;
	uint64_t k = 0;

	while (__atomic_load_n(&c->writers_left, __ATOMIC_ACQUIRE)) {
		/* Targets of 0 (a batch), one unit and a few zones. */
		srsv__zoned_flush(c->ds, SRSV_STATE_RESET_ZONES,
				  (k % 3) * RACE_ZONE / 2);
		srsv__zoned_flush(c->ds, SRSV_STATE_RECLAIM_ZONES,
				  (k % 2) * RACE_UNIT);
		k++;
		sched_yield();
	}
	return NULL;
}

static void *churn_finisher(void *arg)
{
	struct churn *c = arg;

	while (__atomic_load_n(&c->writers_left, __ATOMIC_ACQUIRE)) {
		int ret = srsv_zoned_finish_one(c->ctx, NULL);

		if (ret && ret != -ENOENT && ret != -EBUSY)
			churn_fail(c);
		sched_yield();
	}
	return NULL;
}

START_TEST(test_concurrent_passes)
{
	enum { WRITERS = 2, FLUSHERS = 2 };
	struct churn *c = calloc(1, sizeof(*c));
	pthread_t w[WRITERS], f[FLUSHERS], fin;
	struct srsv_zoned_config zc;
	struct srsv_space_info ds;
	uint64_t sum_used = 0, sum_unusable = 0, got;
	unsigned active = 0, open = 0, drains = 0;

	ck_assert_ptr_nonnull(c);
	c->ctx = make_ctx(0, NULL);
	c->ds = srsv_ctx_space(c->ctx, SRSV_POOL_DATA);
	ck_assert_int_eq(srsv_zoned_config_init(&zc), 0);
	zc.max_active_zones = 6;
	zc.zone_relocate = churn_relocate;
	ck_assert_int_eq(srsv_zoned_init(c->ctx, &zc), 0);
	for (int i = 0; i < CHURN_GROUPS; i++)
		c->g[i] = add(c->ctx, SRSV_ZONE_DATA, (uint64_t)i * RACE_ZONE,
			      RACE_ZONE, RACE_ZONE);
	c->writers_left = WRITERS;
	for (int i = 0; i < WRITERS; i++)
		ck_assert_int_eq(pthread_create(&w[i], NULL, churn_writer, c),
				 0);
	for (int i = 0; i < FLUSHERS; i++)
		ck_assert_int_eq(pthread_create(&f[i], NULL, churn_flusher, c),
				 0);
	ck_assert_int_eq(pthread_create(&fin, NULL, churn_finisher, c), 0);
	for (int i = 0; i < WRITERS; i++)
		pthread_join(w[i], NULL);
	for (int i = 0; i < FLUSHERS; i++)
		pthread_join(f[i], NULL);
	pthread_join(fin, NULL);
	ck_assert_uint_eq(c->bad, 0);
	ck_assert_uint_gt(zinfo(c->ctx).resets, 0);

	/* Drain: every candidate must still be on a list (none lost in a
	 * race), so passes reset all of them.  Each pass gives back at
	 * least a zone, so this ends. */
	do {
		got = srsv__zoned_flush(c->ds, SRSV_STATE_RECLAIM_ZONES, 0);
		got += srsv__zoned_flush(c->ds, SRSV_STATE_RESET_ZONES, 0);
		ck_assert_uint_le(++drains, CHURN_GROUPS + 1);
	} while (got);
	for (int i = 0; i < CHURN_GROUPS; i++) {
		struct srsv_zone_group_info gi = ginfo(c->g[i]);
		bool full = gi.alloc_offset == gi.capacity;

		ck_assert(!gi.busy);
		ck_assert_uint_eq(gi.reserved, 0);
		ck_assert_uint_eq(gi.used + gi.zone_unusable, gi.alloc_offset);
		/* Not active and full: it was sparse or empty, so the drain
		 * relocated and reset it. */
		ck_assert_msg(gi.active || !full,
			      "group %d: a candidate was lost", i);
		sum_used += gi.used;
		sum_unusable += gi.zone_unusable;
		active += gi.active;
		open += gi.open;
	}
	ds = snap(c->ctx, SRSV_POOL_DATA);
	ck_assert_uint_eq(ds.used, sum_used);
	ck_assert_uint_eq(ds.zone_unusable, sum_unusable);
	ck_assert_uint_eq(ds.reserved, 0);
	ck_assert_uint_eq(zinfo(c->ctx).active, active);
	ck_assert_uint_eq(zinfo(c->ctx).open, open);
	srsv_ctx_destroy(c->ctx);
	free(c);
}
END_TEST

static Suite *zoned_suite(void)
{
	Suite *s = suite_create("zoned");
	TCase *tc = tcase_create("zoned");

	tcase_add_test(tc, test_bad_input);
	tcase_add_test(tc, test_add_grows_pool);
	tcase_add_test(tc, test_hint_layout);
	tcase_add_test(tc, test_hint_mixed_pool);
	tcase_add_test(tc, test_hint_dedicated);
	tcase_add_test(tc, test_hint_skips_full_groups);
	tcase_add_test(tc, test_activation_limits);
	tcase_add_test(tc, test_finish_sequences);
	tcase_add_test(tc, test_finish_one);
	tcase_add_test(tc, test_free_accounting);
	tcase_add_test(tc, test_reset_grants_ticket);
	tcase_add_test(tc, test_reset_callback_failure);
	tcase_add_test(tc, test_reclaim_batch);
	tcase_add_test(tc, test_reclaim_callback_failure);
	tcase_add_test(tc, test_reset_batch_and_wanted);
	tcase_add_test(tc, test_flush_looks_at_candidates_only);
	tcase_add_test(tc, test_one_model_both_flavours);
	tcase_add_test(tc, test_hint_while_pool_locked);
	tcase_add_test(tc, test_pass_does_not_hold_up_allocator);
	tcase_add_test(tc, test_waiting_passes_do_not_hold_up_hint);
	tcase_add_test(tc, test_overcommit_zone_aligned);
	tcase_add_test(tc, test_concurrent_hints);
	tcase_add_test(tc, test_concurrent_passes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(zoned_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
