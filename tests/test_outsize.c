/* SPDX-License-Identifier: MIT */
/*
 * Output structs that carry their size (docs/api.md, "output structs"):
 * every struct the library fills for the caller is filled through a
 * *_sized() call whose macro passes the caller's sizeof.  For each of
 * them: a size below the first layout is -EINVAL with not a byte written;
 * an older caller's size (the first layout, which ends before the
 * struct's tail padding) gets exactly that prefix, the same bytes a
 * full-size call writes there, and nothing past it; a newer caller's
 * larger struct gets the library's whole struct and nothing past it; the
 * macro fills the whole struct and says so in its size member.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <check.h>

#include <libspacersv/spacersv.h>

#define KIB (UINT64_C(1) << 10)
#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)
#define ZONE (256 * MIB)

#define OUT_MIN(type, last) (offsetof(type, last) + sizeof(((type *)0)->last))
#define CANARY 0x5a
#define ROOM 1024

typedef int (*fill_fn)(void *arg, void *out, size_t size);

static size_t size_at(const unsigned char *buf, size_t off)
{
	size_t sz;

	memcpy(&sz, buf + off, sizeof(sz));
	return sz;
}

static void all_canary(const unsigned char *buf, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		ck_assert_msg(buf[i] == CANARY, "byte %zu written", i);
}

/*
 * The size rules for one call: @full is the library's sizeof (the one the
 * tests are built with), @min the end of its first layout, @off where its
 * size member is.
 */
static void check_sized(const char *what, fill_fn fn, void *arg, size_t full,
			size_t min, size_t off)
{
	unsigned char ref[ROOM], buf[ROOM];

	ck_assert_msg(full + 64 <= ROOM, "%s: room", what);
	ck_assert_uint_le(min, full);

	/* Too small: refused, nothing written. */
	memset(buf, CANARY, sizeof(buf));
	ck_assert_int_eq(fn(arg, buf, min - 1), -EINVAL);
	ck_assert_int_eq(fn(arg, buf, 0), -EINVAL);
	all_canary(buf, 0, sizeof(buf));

	/* The header's size: the whole struct. */
	memset(ref, CANARY, sizeof(ref));
	ck_assert_int_eq(fn(arg, ref, full), 0);
	ck_assert_uint_eq(size_at(ref, off), full);
	all_canary(ref, full, sizeof(ref));

	/* An older caller's first layout: that prefix, nothing past it. */
	memset(buf, CANARY, sizeof(buf));
	ck_assert_int_eq(fn(arg, buf, min), 0);
	ck_assert_msg(size_at(buf, off) == min, "%s: size %zu, not %zu", what,
		      size_at(buf, off), min);
	all_canary(buf, min, sizeof(buf));
	ck_assert_int_eq(memcmp(buf, ref, off), 0);
	ck_assert_int_eq(memcmp(buf + off + sizeof(size_t),
				ref + off + sizeof(size_t),
				min - off - sizeof(size_t)), 0);

	/* A newer caller's larger struct: the library's, nothing more. */
	memset(buf, CANARY, sizeof(buf));
	ck_assert_int_eq(fn(arg, buf, full + 64), 0);
	ck_assert_uint_eq(size_at(buf, off), full);
	all_canary(buf, full, sizeof(buf));
	ck_assert_int_eq(memcmp(buf, ref, full), 0);
}

/* ---- a plain ctx with a block-group table, a quota and an rsv ---- */

struct fixture {
	struct srsv_ctx *ctx;
	struct srsv_space *md;
	struct srsv_quota *quota;
	struct srsv_rsv rsv;
};

static void fx_init(struct fixture *fx)
{
	struct srsv_bgroup_config bc;
	struct srsv_config cfg;

	memset(fx, 0, sizeof(*fx));
	ck_assert_int_eq(srsv_config_init(&cfg), 0);
	cfg.flags = SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT;
	for (int i = 0; i < SRSV_POOL_COUNT; i++)
		cfg.pool_bytes[i] = 0;
	cfg.unallocated_bytes = 10 * GIB;
	cfg.device_bytes = 10 * GIB;
	cfg.data_chunk_bytes = GIB;
	cfg.global_rsv_bytes = 0;
	ck_assert_int_eq(srsv_ctx_create(&cfg, &fx->ctx), 0);
	ck_assert_int_eq(srsv_bgroup_config_init(&bc), 0);
	bc.dynamic_reclaim = false;
	bc.periodic_reclaim = false;
	bc.reclaim_threshold_pct = 50;
	ck_assert_int_eq(srsv_bgroups_init(fx->ctx, &bc), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(srsv_bgroup_add(fx->ctx, SRSV_POOL_DATA,
						 (uint64_t)i * GIB, GIB), 0);
	ck_assert_int_eq(srsv_bgroup_add(fx->ctx, SRSV_POOL_METADATA,
					 3 * GIB, 256 * MIB), 0);
	fx->md = srsv_ctx_space(fx->ctx, SRSV_POOL_METADATA);
	ck_assert_int_eq(srsv_quota_create(fx->ctx, 7, 10 * MIB, &fx->quota),
			 0);
	ck_assert_int_eq(srsv_quota_reserve(fx->quota, SRSV_QUOTA_DATA, MIB,
					    0), 0);
	ck_assert_int_eq(srsv_rsv_init(&fx->rsv, fx->md, SRSV_RSV_TEMP), 0);
	ck_assert_int_eq(srsv_rsv_add(&fx->rsv, 64 * KIB, SRSV_NO_FLUSH, 0),
			 0);
}

static void fx_fini(struct fixture *fx)
{
	ck_assert_int_eq(srsv_rsv_destroy(&fx->rsv), 0);
	ck_assert_int_eq(srsv_quota_release(fx->quota, SRSV_QUOTA_DATA, MIB),
			 0);
	srsv_ctx_destroy(fx->ctx);
}

static int w_space(void *a, void *out, size_t size)
{
	return srsv_space_snapshot_sized(((struct fixture *)a)->md, out, NULL,
					 0, NULL, size, 0);
}

static int w_quota(void *a, void *out, size_t size)
{
	return srsv_quota_snapshot_sized(((struct fixture *)a)->quota, out,
					 size);
}

static int w_rsv(void *a, void *out, size_t size)
{
	return srsv_rsv_get_info_sized(&((struct fixture *)a)->rsv, out, size);
}

static int w_bg_get(void *a, void *out, size_t size)
{
	return srsv_bgroup_get_sized(((struct fixture *)a)->ctx, GIB + 5, out,
				     size);
}

static int w_bg_next(void *a, void *out, size_t size)
{
	return srsv_bgroup_next_sized(((struct fixture *)a)->ctx, 1, out,
				      size);
}

static int w_bg_stats(void *a, void *out, size_t size)
{
	return srsv_bgroup_stats_sized(((struct fixture *)a)->ctx, out, size);
}

static int w_statfs(void *a, void *out, size_t size)
{
	return srsv_ctx_statfs_sized(((struct fixture *)a)->ctx, out, size);
}

START_TEST(test_sized_plain)
{
	struct fixture fx;

	fx_init(&fx);
	check_sized("space_info", w_space, &fx, sizeof(struct srsv_space_info),
		    OUT_MIN(struct srsv_space_info, tickets_failed),
		    offsetof(struct srsv_space_info, size));
	check_sized("quota_info", w_quota, &fx, sizeof(struct srsv_quota_info),
		    OUT_MIN(struct srsv_quota_info, edquot),
		    offsetof(struct srsv_quota_info, size));
	check_sized("rsv_info", w_rsv, &fx, sizeof(struct srsv_rsv_info),
		    OUT_MIN(struct srsv_rsv_info, failfast),
		    offsetof(struct srsv_rsv_info, info_size));
	check_sized("bgroup_get", w_bg_get, &fx,
		    sizeof(struct srsv_bgroup_info),
		    OUT_MIN(struct srsv_bgroup_info, candidate),
		    offsetof(struct srsv_bgroup_info, size));
	check_sized("bgroup_next", w_bg_next, &fx,
		    sizeof(struct srsv_bgroup_info),
		    OUT_MIN(struct srsv_bgroup_info, candidate),
		    offsetof(struct srsv_bgroup_info, size));
	check_sized("bgroup_stats", w_bg_stats, &fx,
		    sizeof(struct srsv_bgroup_stats),
		    OUT_MIN(struct srsv_bgroup_stats, committed),
		    offsetof(struct srsv_bgroup_stats, size));
	check_sized("statfs", w_statfs, &fx, sizeof(struct srsv_statfs),
		    OUT_MIN(struct srsv_statfs, metadata_full),
		    offsetof(struct srsv_statfs, size));
	fx_fini(&fx);
}
END_TEST

/* The macros pass the header's sizeof: the whole struct, and its figures. */
START_TEST(test_macros)
{
	struct fixture fx;
	struct srsv_space_info si;
	struct srsv_quota_info qi;
	struct srsv_rsv_info ri;
	struct srsv_bgroup_info bi;
	struct srsv_bgroup_stats bs;
	struct srsv_statfs sf;
	struct srsv_space_stats st;

	fx_init(&fx);
	ck_assert_int_eq(srsv_space_snapshot(fx.md, &si, NULL, 0, NULL), 0);
	ck_assert_uint_eq(si.size, sizeof(si));
	ck_assert_uint_eq(si.total, 256 * MIB);
	ck_assert_uint_eq(si.may_use, 64 * KIB);
	ck_assert_int_eq(srsv_quota_snapshot(fx.quota, &qi), 0);
	ck_assert_uint_eq(qi.size, sizeof(qi));
	ck_assert_uint_eq(qi.id, 7);
	ck_assert_uint_eq(qi.reserved[SRSV_QUOTA_DATA], MIB);
	ck_assert_int_eq(srsv_rsv_get_info(&fx.rsv, &ri), 0);
	ck_assert_uint_eq(ri.info_size, sizeof(ri));
	ck_assert_uint_eq(ri.size, 64 * KIB);
	ck_assert_uint_eq(ri.reserved, 64 * KIB);
	ck_assert_int_eq(srsv_bgroup_get(fx.ctx, GIB + 5, &bi), 0);
	ck_assert_uint_eq(bi.size, sizeof(bi));
	ck_assert_uint_eq(bi.start, GIB);
	ck_assert_int_eq(srsv_bgroup_next(fx.ctx, GIB + 1, &bi), 0);
	ck_assert_uint_eq(bi.start, 2 * GIB);
	ck_assert_int_eq(srsv_bgroup_stats(fx.ctx, &bs), 0);
	ck_assert_uint_eq(bs.size, sizeof(bs));
	ck_assert_uint_eq(bs.nr_groups, 4);
	ck_assert_int_eq(srsv_ctx_statfs(fx.ctx, &sf), 0);
	ck_assert_uint_eq(sf.size, sizeof(sf));
	ck_assert_uint_eq(sf.total, 10 * GIB);
	ck_assert_int_eq(srsv_space_get_stats(fx.md, &st), 0);
	ck_assert_uint_eq(st.size, sizeof(st));
	/* -ENOENT writes nothing either. */
	memset(&bi, CANARY, sizeof(bi));
	ck_assert_int_eq(srsv_bgroup_get(fx.ctx, 9 * GIB, &bi), -ENOENT);
	ck_assert_int_eq(srsv_bgroup_next(fx.ctx, 9 * GIB, &bi), -ENOENT);
	all_canary((const unsigned char *)&bi, 0, sizeof(bi));
	fx_fini(&fx);
}
END_TEST

/* Queued tickets are ticket_size bytes apart, each filled up to it. */
START_TEST(test_ticket_stride)
{
	struct fixture fx;
	struct srsv_ticket t[2];
	struct srsv_space_info si;
	struct {
		struct srsv_ticket_info ti;
		unsigned char pad[16];
	} wide[3];
	struct srsv_ticket_info narrow[2];
	size_t tmin = OUT_MIN(struct srsv_ticket_info, priority);
	size_t nr = 0;
	unsigned char *raw = (unsigned char *)wide;

	fx_init(&fx);
	/* Fill the pool, no room to overcommit into; two FLUSH_ALL tickets
	 * queue (manual: no worker serves them). */
	ck_assert_int_eq(srsv_ctx_set_unallocated(fx.ctx, 0), 0);
	ck_assert_int_eq(srsv_space_reserve(fx.md, 256 * MIB - 64 * KIB,
					    SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_ticket_reserve(fx.md, &t[0], 10 * KIB,
					     SRSV_FLUSH_ALL, 0), -EINPROGRESS);
	ck_assert_int_eq(srsv_ticket_reserve(fx.md, &t[1], 20 * KIB,
					     SRSV_FLUSH_ALL, 0), -EINPROGRESS);

	/* Too small an element: refused, nothing written. */
	memset(wide, CANARY, sizeof(wide));
	memset(&si, CANARY, sizeof(si));
	ck_assert_int_eq(srsv_space_snapshot_sized(fx.md, &si, &wide[0].ti, 3,
						   &nr, sizeof(si), tmin - 1),
			 -EINVAL);
	all_canary(raw, 0, sizeof(wide));
	all_canary((const unsigned char *)&si, 0, sizeof(si));
	ck_assert_uint_eq(nr, 0);

	/* A newer caller's wider element: the stride is its size. */
	ck_assert_int_eq(srsv_space_snapshot_sized(fx.md, &si, &wide[0].ti, 3,
						   &nr, sizeof(si),
						   sizeof(wide[0])), 0);
	ck_assert_uint_eq(nr, 2);
	ck_assert_uint_eq(wide[0].ti.bytes, 10 * KIB);
	ck_assert_uint_eq(wide[1].ti.bytes, 20 * KIB);
	ck_assert_int_eq(wide[1].ti.mode, SRSV_FLUSH_ALL);
	for (int i = 0; i < 2; i++)
		all_canary((const unsigned char *)&wide[i],
			   sizeof(struct srsv_ticket_info), sizeof(wide[i]));
	all_canary((const unsigned char *)&wide[2], 0, sizeof(wide[2]));

	/* An older caller's first layout: packed at tmin, not a byte more. */
	memset(wide, CANARY, sizeof(wide));
	ck_assert_int_eq(srsv_space_snapshot_sized(fx.md, &si, &wide[0].ti, 2,
						   &nr, sizeof(si), tmin), 0);
	for (int i = 0; i < 2; i++) {
		struct srsv_ticket_info got;

		memcpy(&got, raw + i * tmin, tmin);
		ck_assert_uint_eq(got.bytes, (uint64_t)(i + 1) * 10 * KIB);
		ck_assert(!got.priority);
	}
	all_canary(raw, 2 * tmin, sizeof(wide));

	/* The macro: the header's layout. */
	ck_assert_int_eq(srsv_space_snapshot(fx.md, &si, narrow, 2, &nr), 0);
	ck_assert_uint_eq(narrow[1].bytes, 20 * KIB);
	ck_assert_uint_eq(si.nr_tickets, 2);

	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(srsv_ticket_cancel(&t[i]), 0);
		ck_assert_int_eq(srsv_ticket_wait(&t[i], 0), -ECANCELED);
	}
	ck_assert_int_eq(srsv_space_release(fx.md, 256 * MIB - 64 * KIB), 0);
	fx_fini(&fx);
}
END_TEST

/* A refused reclaim_take takes nothing. */
START_TEST(test_reclaim_take_sized)
{
	struct fixture fx;
	struct srsv_space_info si;
	struct srsv_space *data;
	unsigned char buf[sizeof(struct srsv_bgroup_info) + 32];
	size_t min = OUT_MIN(struct srsv_bgroup_info, candidate);
	struct srsv_bgroup_info got;

	fx_init(&fx);
	data = srsv_ctx_space(fx.ctx, SRSV_POOL_DATA);
	/* Group 0 a candidate: 100 MiB live after its commit. */
	ck_assert_int_eq(srsv_bgroup_alloc(fx.ctx, SRSV_POOL_DATA, 0,
					   600 * MIB), 0);
	ck_assert_int_eq(srsv_bgroup_free(fx.ctx, SRSV_POOL_DATA, 0,
					  500 * MIB, 1), 0);
	ck_assert_int_eq(srsv_ctx_commit_done(fx.ctx, 1), 0);

	memset(buf, CANARY, sizeof(buf));
	ck_assert_int_eq(srsv_bgroup_reclaim_take_sized(fx.ctx, (void *)buf,
							min - 1), -EINVAL);
	all_canary(buf, 0, sizeof(buf));
	ck_assert_int_eq(srsv_space_snapshot(data, &si, NULL, 0, NULL), 0);
	ck_assert_uint_eq(si.readonly, 0);
	ck_assert_int_eq(srsv_bgroup_get(fx.ctx, 0, &got), 0);
	ck_assert(!got.readonly);

	/* The first layout: taken, the prefix filled. */
	ck_assert_int_eq(srsv_bgroup_reclaim_take_sized(fx.ctx, (void *)buf,
							min), 0);
	memcpy(&got, buf, min);
	ck_assert_uint_eq(got.size, min);
	ck_assert_uint_eq(got.start, 0);
	ck_assert(got.readonly);
	all_canary(buf, min, sizeof(buf));
	ck_assert_int_eq(srsv_bgroup_reclaim_done(fx.ctx, 0, -EIO), 0);
	fx_fini(&fx);
}
END_TEST

/* ---- zoned ---- */

static int no_flush(struct srsv_space *space, enum srsv_flush_state state,
		    uint64_t bytes, bool for_preempt, void *user)
{
	(void)space; (void)state; (void)bytes; (void)for_preempt; (void)user;
	return -EOPNOTSUPP;
}

static int w_zg(void *a, void *out, size_t size)
{
	return srsv_zone_group_info_sized(a, out, size);
}

static int w_zoned(void *a, void *out, size_t size)
{
	return srsv_zoned_get_info_sized(a, out, size);
}

START_TEST(test_sized_zoned)
{
	struct srsv_zoned_config zc;
	struct srsv_config cfg;
	struct srsv_ctx *ctx = NULL;
	struct srsv_zone_group *g = NULL;
	struct srsv_zone_group_info gi;
	struct srsv_zoned_info zi;

	ck_assert_int_eq(srsv_config_init(&cfg), 0);
	cfg.flags = SRSV_CTX_MANUAL | SRSV_CTX_ZONED | SRSV_CTX_NO_PREEMPT;
	cfg.flush = no_flush;
	cfg.zone_bytes = ZONE;
	for (int i = 0; i < SRSV_POOL_COUNT; i++)
		cfg.pool_bytes[i] = 0;
	cfg.unallocated_bytes = 4 * GIB;
	cfg.device_bytes = 4 * GIB;
	cfg.data_chunk_bytes = ZONE;
	ck_assert_int_eq(srsv_ctx_create(&cfg, &ctx), 0);
	ck_assert_int_eq(srsv_zoned_config_init(&zc), 0);
	ck_assert_int_eq(srsv_zoned_init(ctx, &zc), 0);
	ck_assert_int_eq(srsv_zone_group_add(ctx, SRSV_ZONE_DATA, 0, ZONE,
					     ZONE, &g), 0);

	check_sized("zone_group_info", w_zg, g,
		    sizeof(struct srsv_zone_group_info),
		    OUT_MIN(struct srsv_zone_group_info, dedicated),
		    offsetof(struct srsv_zone_group_info, size));
	check_sized("zoned_info", w_zoned, ctx, sizeof(struct srsv_zoned_info),
		    OUT_MIN(struct srsv_zoned_info, flush_groups_looked),
		    offsetof(struct srsv_zoned_info, size));
	ck_assert_int_eq(srsv_zone_group_info(g, &gi), 0);
	ck_assert_uint_eq(gi.size, sizeof(gi));
	ck_assert_uint_eq(gi.length, ZONE);
	ck_assert_int_eq(srsv_zoned_get_info(ctx, &zi), 0);
	ck_assert_uint_eq(zi.size, sizeof(zi));
	ck_assert_uint_eq(zi.nr_groups, 1);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* ---- debug ---- */

static int w_locks(void *a, void *out, size_t size)
{
	(void)a;
	return srsv_debug_lock_stats_sized(out, size);
}

START_TEST(test_sized_lock_stats)
{
	struct srsv_lock_stats ls;
	int ret = srsv_debug_lock_stats(&ls);

	if (ret == -ENOTSUP) {
		/* Built without debug_locks: refused whatever the size. */
		ck_assert_int_eq(srsv_debug_lock_stats_sized(&ls, 0), -ENOTSUP);
		return;
	}
	ck_assert_int_eq(ret, 0);
	ck_assert_uint_eq(ls.size, sizeof(ls));
	/* No lock is taken between the calls: the figures stay put. */
	check_sized("lock_stats", w_locks, NULL, sizeof(struct srsv_lock_stats),
		    OUT_MIN(struct srsv_lock_stats, waits),
		    offsetof(struct srsv_lock_stats, size));
}
END_TEST

static Suite *outsize_suite(void)
{
	Suite *s = suite_create("outsize");
	TCase *tc = tcase_create("sized");

	tcase_add_test(tc, test_sized_plain);
	tcase_add_test(tc, test_macros);
	tcase_add_test(tc, test_ticket_stride);
	tcase_add_test(tc, test_reclaim_take_sized);
	tcase_add_test(tc, test_sized_zoned);
	tcase_add_test(tc, test_sized_lock_stats);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(outsize_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
