/* SPDX-License-Identifier: MIT */
/*
 * Refused calls beyond the pool transitions (enum srsv_refusal 10..17):
 * rsv, quota, delalloc, block-group, zone-group and asynchronous calls.
 * Each refused call returns -EINVAL, counts once in refused[] of the pool
 * it was about, and changes nothing else: every other counter and
 * statistic of every pool, and the figures of the object it was called
 * on, are the same after it.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <check.h>

#include <libspacersv/spacersv.h>

#define KIB (UINT64_C(1) << 10)
#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)
#define ZONE (256 * MIB)

#define NPOOLS 3	/* DATA, METADATA, SYSTEM */

struct view {
	struct srsv_space_info info[NPOOLS];
	struct srsv_space_stats st[NPOOLS];
};

static void look(struct srsv_ctx *ctx, struct view *v)
{
	memset(v, 0, sizeof(*v));
	for (int p = 0; p < NPOOLS; p++) {
		struct srsv_space *s = srsv_ctx_space(ctx, p);

		ck_assert_int_eq(srsv_space_snapshot(s, &v->info[p], NULL, 0,
						     NULL), 0);
		ck_assert_int_eq(srsv_space_get_stats(s, &v->st[p]), 0);
		v->st[p].now_ns = 0;
	}
}

/*
 * @call was refused: refused[@kind] of pool @pool went up by one, and
 * nothing else of any pool moved.
 */
static void expect_one(struct srsv_ctx *ctx, const struct view *before,
		       int pool, int kind, const char *what)
{
	struct view after;

	look(ctx, &after);
	for (int p = 0; p < NPOOLS; p++) {
		uint64_t want = before->st[p].refused[kind] + (p == pool);

		ck_assert_msg(after.st[p].refused[kind] == want,
			      "%s: pool %d refused[%d] %llu, want %llu", what,
			      p, kind,
			      (unsigned long long)after.st[p].refused[kind],
			      (unsigned long long)want);
		after.st[p].refused[kind] = before->st[p].refused[kind];
		ck_assert_msg(!memcmp(&after.st[p], &before->st[p],
				      sizeof(after.st[p])),
			      "%s: pool %d statistics changed", what, p);
		ck_assert_msg(!memcmp(&after.info[p], &before->info[p],
				      sizeof(after.info[p])),
			      "%s: pool %d counters changed", what, p);
	}
}

static struct srsv_ctx *plain_ctx(void)
{
	struct srsv_bgroup_config bc;
	struct srsv_config cfg;
	struct srsv_ctx *ctx = NULL;

	ck_assert_int_eq(srsv_config_init(&cfg), 0);
	cfg.flags = SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT;
	for (int i = 0; i < SRSV_POOL_COUNT; i++)
		cfg.pool_bytes[i] = 0;
	cfg.unallocated_bytes = 8 * GIB;
	cfg.device_bytes = 8 * GIB;
	cfg.data_chunk_bytes = GIB;
	ck_assert_int_eq(srsv_ctx_create(&cfg, &ctx), 0);
	ck_assert_int_eq(srsv_bgroup_config_init(&bc), 0);
	bc.dynamic_reclaim = false;
	bc.periodic_reclaim = false;
	ck_assert_int_eq(srsv_bgroups_init(ctx, &bc), 0);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, 0, GIB), 0);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_METADATA, GIB,
					 256 * MIB), 0);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_SYSTEM,
					 GIB + 256 * MIB, 32 * MIB), 0);
	return ctx;
}

START_TEST(test_rsv)
{
	struct srsv_ctx *ctx = plain_ctx();
	struct srsv_space *md = srsv_ctx_space(ctx, SRSV_POOL_METADATA);
	struct srsv_rsv rsv, other;
	struct srsv_rsv_info ri0, ri1;
	struct view v;

	ck_assert_int_eq(srsv_rsv_init(&rsv, md, SRSV_RSV_TEMP), 0);
	ck_assert_int_eq(srsv_rsv_init(&other, srsv_ctx_space(ctx,
				       SRSV_POOL_SYSTEM), SRSV_RSV_TEMP), 0);
	ck_assert_int_eq(srsv_rsv_add(&rsv, 64 * KIB, SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_rsv_get_info(&rsv, &ri0), 0);

	look(ctx, &v);
	ck_assert_int_eq(srsv_rsv_release(&rsv, 128 * KIB, NULL), -EINVAL);
	expect_one(ctx, &v, SRSV_POOL_METADATA, SRSV_REFUSED_RSV_RELEASE,
		   "rsv_release");
	look(ctx, &v);
	ck_assert_int_eq(srsv_rsv_check(&rsv, 101), -EINVAL);
	expect_one(ctx, &v, SRSV_POOL_METADATA, SRSV_REFUSED_RSV_ARGS,
		   "rsv_check");
	look(ctx, &v);
	ck_assert_int_eq(srsv_rsv_migrate(&rsv, &other, KIB, false), -EINVAL);
	expect_one(ctx, &v, SRSV_POOL_METADATA, SRSV_REFUSED_RSV_ARGS,
		   "rsv_migrate across pools");
	look(ctx, &v);
	ck_assert_int_eq(srsv_rsv_destroy(srsv_ctx_rsv(ctx, SRSV_RSV_TRANS)),
			 -EINVAL);
	expect_one(ctx, &v, SRSV_POOL_METADATA, SRSV_REFUSED_RSV_ARGS,
		   "destroy a standard rsv");
	look(ctx, &v);
	ck_assert_int_eq(srsv_rsv_add(&rsv, SRSV_MAX_BYTES + 1, SRSV_NO_FLUSH,
				      0), -EINVAL);
	expect_one(ctx, &v, SRSV_POOL_METADATA, SRSV_REFUSED_RSV_ARGS,
		   "rsv_add");
	ck_assert_int_eq(srsv_rsv_get_info(&rsv, &ri1), 0);
	ck_assert_int_eq(memcmp(&ri0, &ri1, sizeof(ri0)), 0);

	/* Nowhere to count: -EINVAL, nothing counted. */
	look(ctx, &v);
	ck_assert_int_eq(srsv_rsv_check(NULL, 101), -EINVAL);
	expect_one(ctx, &v, -1, SRSV_REFUSED_RSV_ARGS, "NULL rsv");

	ck_assert_int_eq(srsv_rsv_destroy(&rsv), 0);
	ck_assert_int_eq(srsv_rsv_destroy(&other), 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

START_TEST(test_quota)
{
	struct srsv_ctx *ctx = plain_ctx();
	struct srsv_quota *q = NULL;
	struct srsv_quota_info qi0, qi1;
	struct view v;

	ck_assert_int_eq(srsv_quota_create(ctx, 1, 10 * MIB, &q), 0);
	ck_assert_int_eq(srsv_quota_reserve(q, SRSV_QUOTA_DATA, MIB, 0), 0);
	ck_assert_int_eq(srsv_quota_reserve(q, SRSV_QUOTA_META_PREALLOC, MIB,
					    0), 0);
	ck_assert_int_eq(srsv_quota_snapshot(q, &qi0), 0);

	look(ctx, &v);
	ck_assert_int_eq(srsv_quota_release(q, SRSV_QUOTA_DATA, 2 * MIB),
			 -EINVAL);
	expect_one(ctx, &v, SRSV_POOL_DATA, SRSV_REFUSED_QUOTA_RELEASE,
		   "quota_release data");
	look(ctx, &v);
	ck_assert_int_eq(srsv_quota_convert(q, 2 * MIB), -EINVAL);
	expect_one(ctx, &v, SRSV_POOL_METADATA, SRSV_REFUSED_QUOTA_RELEASE,
		   "quota_convert");
	look(ctx, &v);
	ck_assert_int_eq(srsv_quota_free_used(q, KIB), -EINVAL);
	expect_one(ctx, &v, SRSV_POOL_DATA, SRSV_REFUSED_QUOTA_RELEASE,
		   "quota_free_used");
	look(ctx, &v);
	ck_assert_int_eq(srsv_quota_charge_used(q, 2 * MIB), -EINVAL);
	expect_one(ctx, &v, SRSV_POOL_DATA, SRSV_REFUSED_QUOTA_RELEASE,
		   "quota_charge_used");
	look(ctx, &v);
	ck_assert_int_eq(srsv_quota_reserve(q, SRSV_QUOTA_META_PERTRANS,
					    SRSV_MAX_BYTES + 1, 0), -EINVAL);
	expect_one(ctx, &v, SRSV_POOL_METADATA, SRSV_REFUSED_QUOTA_ARGS,
		   "quota_reserve too many bytes");
	look(ctx, &v);
	ck_assert_int_eq(srsv_quota_reserve(q, SRSV_QUOTA_DATA, KIB, 1u << 30),
			 -EINVAL);
	expect_one(ctx, &v, SRSV_POOL_METADATA, SRSV_REFUSED_QUOTA_ARGS,
		   "quota_reserve unknown flag");
	look(ctx, &v);
	ck_assert_int_eq(srsv_quota_set_limit(q, SRSV_MAX_BYTES + 1), -EINVAL);
	expect_one(ctx, &v, SRSV_POOL_DATA, SRSV_REFUSED_QUOTA_ARGS,
		   "quota_set_limit");
	ck_assert_int_eq(srsv_quota_snapshot(q, &qi1), 0);
	ck_assert_int_eq(memcmp(&qi0, &qi1, sizeof(qi0)), 0);

	ck_assert_int_eq(srsv_quota_release(q, SRSV_QUOTA_DATA, MIB), 0);
	ck_assert_int_eq(srsv_quota_release(q, SRSV_QUOTA_META_PREALLOC, MIB),
			 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

START_TEST(test_delalloc)
{
	struct srsv_ctx *ctx = plain_ctx();
	struct srsv_delalloc_resv resv, copy;
	struct view v;

	ck_assert_int_eq(srsv_delalloc_reserve(ctx, NULL, 64 * KIB,
					       SRSV_DELALLOC_NOFLUSH, &resv),
			 0);
	look(ctx, &v);
	ck_assert_int_eq(srsv_delalloc_finish(&resv, resv.meta_bytes + 1),
			 -EINVAL);
	expect_one(ctx, &v, SRSV_POOL_DATA, SRSV_REFUSED_DELALLOC,
		   "delalloc_finish more metadata than held");
	look(ctx, &v);
	ck_assert_int_eq(srsv_delalloc_reserve(ctx, NULL, KIB,
					       (enum srsv_delalloc_mode)77,
					       &copy), -EINVAL);
	expect_one(ctx, &v, SRSV_POOL_DATA, SRSV_REFUSED_DELALLOC,
		   "delalloc_reserve unknown mode");
	look(ctx, &v);
	ck_assert_int_eq(srsv_delalloc_reserve(ctx, NULL, SRSV_MAX_BYTES + 1,
					       SRSV_DELALLOC_NOFLUSH, &copy),
			 -EINVAL);
	expect_one(ctx, &v, SRSV_POOL_DATA, SRSV_REFUSED_DELALLOC,
		   "delalloc_reserve too large");

	/* Released once; the second release and a finish are refused. */
	ck_assert_int_eq(srsv_delalloc_release(&resv), 0);
	ck_assert_uint_eq(resv.data_bytes, 0);
	look(ctx, &v);
	ck_assert_int_eq(srsv_delalloc_release(&resv), -EINVAL);
	expect_one(ctx, &v, SRSV_POOL_DATA, SRSV_REFUSED_DELALLOC,
		   "delalloc_release twice");
	look(ctx, &v);
	ck_assert_int_eq(srsv_delalloc_finish(&resv, 0), -EINVAL);
	expect_one(ctx, &v, SRSV_POOL_DATA, SRSV_REFUSED_DELALLOC,
		   "delalloc_finish after release");
	/* A never-reserved (zeroed) resv has no ctx: not counted. */
	memset(&copy, 0, sizeof(copy));
	look(ctx, &v);
	ck_assert_int_eq(srsv_delalloc_release(&copy), -EINVAL);
	expect_one(ctx, &v, -1, SRSV_REFUSED_DELALLOC, "zeroed resv");
	srsv_ctx_destroy(ctx);
}
END_TEST

START_TEST(test_bgroup)
{
	struct srsv_ctx *ctx = plain_ctx();
	struct view v;

	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, 0, MIB), 0);
	look(ctx, &v);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, 0, 2 * MIB, 0),
			 -EINVAL);
	expect_one(ctx, &v, SRSV_POOL_DATA, SRSV_REFUSED_BGROUP,
		   "bgroup_free more than used");
	look(ctx, &v);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, GIB - MIB,
					   2 * MIB), -EINVAL);
	expect_one(ctx, &v, SRSV_POOL_DATA, SRSV_REFUSED_BGROUP,
		   "bgroup_alloc across the group's end");
	look(ctx, &v);
	ck_assert_int_eq(srsv_bgroup_remove(ctx, SRSV_POOL_METADATA, 0),
			 -EINVAL);
	expect_one(ctx, &v, SRSV_POOL_METADATA, SRSV_REFUSED_BGROUP,
		   "bgroup_remove of another pool's group");
	look(ctx, &v);
	ck_assert_int_eq(srsv_bgroup_reclaim_done(ctx, GIB, 0), -EINVAL);
	expect_one(ctx, &v, SRSV_POOL_METADATA, SRSV_REFUSED_BGROUP,
		   "bgroup_reclaim_done of a group not taken");
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, 0, MIB, 0), 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

START_TEST(test_async)
{
	struct srsv_ctx *ctx = plain_ctx(), *other = plain_ctx();
	struct srsv_space *md = srsv_ctx_space(ctx, SRSV_POOL_METADATA);
	struct srsv_async *q = NULL;
	struct srsv_ticket t;
	struct view v;

	ck_assert_int_eq(srsv_async_create(ctx, &q), 0);
	look(ctx, &v);
	ck_assert_int_eq(srsv_ticket_reserve_async(q, md, &t, 4 * KIB,
						   SRSV_FLUSH_ALL,
						   SRSV_RESERVE_NOWAIT,
						   UINT64_MAX, NULL, NULL),
			 -EINVAL);
	expect_one(ctx, &v, SRSV_POOL_METADATA, SRSV_REFUSED_ASYNC,
		   "reserve_async NOWAIT");
	/* A pool of another ctx: counted on that pool. */
	look(other, &v);
	ck_assert_int_eq(srsv_ticket_reserve_async(q, srsv_ctx_space(other,
						   SRSV_POOL_METADATA), &t,
						   4 * KIB, SRSV_FLUSH_ALL, 0,
						   UINT64_MAX, NULL, NULL),
			 -EINVAL);
	expect_one(other, &v, SRSV_POOL_METADATA, SRSV_REFUSED_ASYNC,
		   "reserve_async another ctx's pool");
	ck_assert_int_eq(srsv_async_destroy(q), 0);
	srsv_ctx_destroy(other);
	srsv_ctx_destroy(ctx);
}
END_TEST

static int no_flush(struct srsv_space *space, enum srsv_flush_state state,
		    uint64_t bytes, bool for_preempt, void *user)
{
	(void)space; (void)state; (void)bytes; (void)for_preempt; (void)user;
	return -EOPNOTSUPP;
}

START_TEST(test_zone)
{
	struct srsv_zoned_config zc;
	struct srsv_config cfg;
	struct srsv_ctx *ctx = NULL;
	struct srsv_zone_group *g = NULL;
	struct srsv_zone_group_info gi0, gi1;
	uint64_t logical;
	struct view v;

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
	ck_assert_int_eq(srsv_zone_group_activate(g), 0);
	ck_assert_int_eq(srsv_zone_group_alloc(g, MIB, &logical), 0);
	ck_assert_int_eq(srsv_zone_group_info(g, &gi0), 0);

	look(ctx, &v);
	ck_assert_int_eq(srsv_zone_group_written(g, 2 * MIB), -EINVAL);
	expect_one(ctx, &v, SRSV_POOL_DATA, SRSV_REFUSED_ZONE,
		   "zone_group_written more than reserved");
	look(ctx, &v);
	ck_assert_int_eq(srsv_zone_group_free(g, KIB), -EINVAL);
	expect_one(ctx, &v, SRSV_POOL_DATA, SRSV_REFUSED_ZONE,
		   "zone_group_free more than used");
	look(ctx, &v);
	ck_assert_int_eq(srsv_zone_group_abandon(g, 2 * MIB), -EINVAL);
	expect_one(ctx, &v, SRSV_POOL_DATA, SRSV_REFUSED_ZONE,
		   "zone_group_abandon more than reserved");
	look(ctx, &v);
	ck_assert_int_eq(srsv_zone_group_alloc(g, 0, &logical), -EINVAL);
	expect_one(ctx, &v, SRSV_POOL_DATA, SRSV_REFUSED_ZONE,
		   "zone_group_alloc 0 bytes");
	ck_assert_int_eq(srsv_zone_group_info(g, &gi1), 0);
	ck_assert_int_eq(memcmp(&gi0, &gi1, sizeof(gi0)), 0);
	ck_assert_int_eq(srsv_zone_group_written(g, MIB), 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

static Suite *refusals_suite(void)
{
	Suite *s = suite_create("refusals");
	TCase *tc = tcase_create("kinds");

	tcase_add_test(tc, test_rsv);
	tcase_add_test(tc, test_quota);
	tcase_add_test(tc, test_delalloc);
	tcase_add_test(tc, test_bgroup);
	tcase_add_test(tc, test_async);
	tcase_add_test(tc, test_zone);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(refusals_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
