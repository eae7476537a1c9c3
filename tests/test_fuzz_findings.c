/* SPDX-License-Identifier: MIT */
/*
 * Disagreements between the library and the reference model
 * (tests/model.c) that the API fuzzer (tests/fuzz/fuzz_api.c) found and
 * that are the library's to fix, each reduced to a few public calls.  One
 * executable, one meson test per case (CK_RUN_CASE), each in the suite
 * 'pending' until the library does what it asserts, then 'unit'; the
 * fuzzer steers away from each meanwhile (its KB_* switches name the
 * case).  Fixed and in 'unit': clamp_system, clamp_no_data_preempt,
 * reclaimable_wrap, manual_wait_mixed.  Open: reclaim_tie_pools.
 *
 *   clamp_system       a SYSTEM pool's FLUSH_ALL ticket that starts the
 *                      async flusher raises the pool's preemptive clamp
 *                      although dirty data does not outgrow writeback
 *                      (the library raises it for every pool that is not
 *                      metadata, meaning data pools; SYSTEM is neither)
 *   clamp_no_data_preempt  the same for a DATA pool's FLUSH_DATA ticket on
 *                      a ctx with SRSV_CTX_NO_DATA_PREEMPT: btrfs's data
 *                      behaviour, with no preemptive flushing of data
 *                      whose clamp a data ticket would tighten
 *   reclaimable_wrap   srsv_space_set_reclaimable() figures whose sum
 *                      passes 2^64 (four states at SRSV_MAX_BYTES, each
 *                      one allowed) wrap srsv_space_info::reclaimable,
 *                      and the debt preemptive flushing and pacing read,
 *                      to a small number; the model saturates the sum,
 *                      as the library's other sums do (srsv__sat_add())
 *   manual_wait_mixed  in manual mode a blocking wait runs the walk that
 *                      serves its ticket (ctx.h, SRSV_CTX_MANUAL); on a
 *                      MIXED pool a FLUSH_DATA waiter runs only the async
 *                      data work, while the walk pending for the pool's
 *                      one queue is the metadata one a FLUSH_ALL ticket
 *                      started (and the other way round): the waiter
 *                      waits for ever in a single-threaded engine
 *   reclaim_tie_pools  srsv_bgroup_reclaim_take() among candidates with
 *                      the same used bytes takes the one of the lowest
 *                      pool kind (the library keeps a candidate list per
 *                      pool and walks them in kind order), where btrfs's
 *                      one reclaim list, sorted stably by used bytes,
 *                      gives the one marked first
 *
 * Manual mode, no flush callback, the public API only.  Only
 * manual_wait_mixed waits, in a thread of its own, under a deadline
 * (then srsv_ctx_shutdown() ends the wait); Check runs each case in a
 * child process.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <libspacersv/spacersv.h>

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)

#define MANUAL (SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT)

static struct srsv_ctx *make(unsigned flags)
{
	struct srsv_config cfg;
	struct srsv_ctx *ctx = NULL;

	srsv_config_init(&cfg);
	cfg.flags = flags;
	cfg.pool_bytes[SRSV_POOL_DATA] = 8 * MiB;
	cfg.pool_bytes[SRSV_POOL_METADATA] = 8 * MiB;
	cfg.pool_bytes[SRSV_POOL_SYSTEM] = 4 * MiB;
	ck_assert_int_eq(srsv_ctx_create(&cfg, &ctx), 0);
	return ctx;
}

static struct srsv_space_info snap(struct srsv_space *s)
{
	struct srsv_space_info info;

	ck_assert_int_eq(srsv_space_snapshot(s, &info, NULL, 0, NULL), 0);
	return info;
}

/*
 * Fill @s, queue a normal ticket of @mode (it starts the async flusher:
 * "flushing" goes up), and return the clamp it left.  No delalloc or
 * ordered bytes were reported: writeback keeps up.
 */
static unsigned clamp_after_ticket(struct srsv_space *s, uint64_t size,
				   enum srsv_flush mode)
{
	struct srsv_ticket t;
	struct srsv_space_info info;

	ck_assert_int_eq(srsv_space_reserve(s, size, SRSV_NO_FLUSH, 0), 0);
	ck_assert_uint_eq(snap(s).clamp, 1);
	ck_assert_int_eq(srsv_ticket_reserve(s, &t, 64 * KiB, mode, 0),
			 -EINPROGRESS);
	info = snap(s);
	ck_assert(info.flushing);
	ck_assert_int_eq(srsv_ticket_cancel(&t), 0);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -ECANCELED);
	return info.clamp;
}

/*
 * btrfs's maybe_clamp_preempt() raises the clamp only while ordered <
 * delalloc; the library's data rule (a data pool's debt is the engine's
 * own work) is for data pools.  A SYSTEM pool is not one.
 */
START_TEST(test_clamp_system)
{
	struct srsv_ctx *ctx = make(MANUAL);
	struct srsv_space *sys = srsv_ctx_space(ctx, SRSV_POOL_SYSTEM);

	ck_assert_uint_eq(clamp_after_ticket(sys, 4 * MiB, SRSV_FLUSH_ALL), 1);
	ck_assert_int_eq(srsv_ctx_destroy(ctx), 0);
}
END_TEST

/*
 * ctx.h: SRSV_CTX_NO_DATA_PREEMPT is btrfs's data behaviour (no
 * preemptive flushing of data pools): a data ticket then raises the clamp
 * under btrfs's rule only.  The same ticket without the flag does raise
 * it (the library's data rule), which this case checks too.
 */
START_TEST(test_clamp_no_data_preempt)
{
	struct srsv_ctx *ctx = make(MANUAL | SRSV_CTX_NO_DATA_PREEMPT);
	struct srsv_space *d = srsv_ctx_space(ctx, SRSV_POOL_DATA);

	ck_assert_uint_eq(clamp_after_ticket(d, 8 * MiB, SRSV_FLUSH_DATA), 1);
	ck_assert_int_eq(srsv_ctx_destroy(ctx), 0);

	ctx = make(MANUAL);
	d = srsv_ctx_space(ctx, SRSV_POOL_DATA);
	ck_assert_uint_eq(clamp_after_ticket(d, 8 * MiB, SRSV_FLUSH_DATA), 2);
	ck_assert_int_eq(srsv_ctx_destroy(ctx), 0);
}
END_TEST

/* Four states at the most one may report: 2^64, past any u64. */
START_TEST(test_reclaimable_wrap)
{
	struct srsv_ctx *ctx = make(MANUAL);
	struct srsv_space *d = srsv_ctx_space(ctx, SRSV_POOL_DATA);
	static const int states[] = {
		SRSV_STATE_DELALLOC_FULL, SRSV_STATE_RUN_DELAYED_IPUTS,
		SRSV_STATE_COMMIT_TRANS, SRSV_STATE_RECLAIM_ZONES,
	};

	for (unsigned i = 0; i < 3; i++)
		ck_assert_int_eq(srsv_space_set_reclaimable(d, states[i],
							    SRSV_MAX_BYTES), 0);
	ck_assert_uint_eq(snap(d).reclaimable, 3 * SRSV_MAX_BYTES);
	ck_assert_int_eq(srsv_space_set_reclaimable(d, states[3],
						    SRSV_MAX_BYTES), 0);
	ck_assert_uint_eq(snap(d).reclaimable, UINT64_MAX);
	/* Back under 2^64: the exact sum again. */
	ck_assert_int_eq(srsv_space_set_reclaimable(d, states[0], 0), 0);
	ck_assert_uint_eq(snap(d).reclaimable, 3 * SRSV_MAX_BYTES);
	ck_assert_int_eq(srsv_ctx_destroy(ctx), 0);
}
END_TEST

struct waiter {
	struct srsv_space *space;
	enum srsv_flush mode;
	int ret;
	atomic_bool done;
};

static void *wait_main(void *arg)
{
	struct waiter *w = arg;

	w->ret = srsv_space_reserve(w->space, 64 * KiB, w->mode, 0);
	atomic_store(&w->done, true);
	return NULL;
}

/* Does a blocking reservation of @mode return within 5 s while a normal
 * ticket of @first is queued on the full MIXED pool? */
static void check_mixed_wait(enum srsv_flush first, enum srsv_flush mode)
{
	struct srsv_config cfg;
	struct srsv_ctx *ctx = NULL;
	struct srsv_space *mix;
	struct srsv_ticket t;
	struct waiter w = { .mode = mode, .ret = 1 };
	pthread_t th;
	bool in_time = false;

	srsv_config_init(&cfg);
	cfg.flags = MANUAL | SRSV_CTX_MIXED;
	cfg.pool_bytes[SRSV_POOL_MIXED] = 8 * MiB;
	cfg.pool_bytes[SRSV_POOL_SYSTEM] = 4 * MiB;
	ck_assert_int_eq(srsv_ctx_create(&cfg, &ctx), 0);
	mix = srsv_ctx_space(ctx, SRSV_POOL_MIXED);
	w.space = mix;
	ck_assert_int_eq(srsv_space_reserve(mix, 8 * MiB, SRSV_NO_FLUSH, 0), 0);
	/* Starts the pool's flusher: the walk of @first's kind is pending. */
	ck_assert_int_eq(srsv_ticket_reserve(mix, &t, 64 * KiB, first, 0),
			 -EINPROGRESS);
	ck_assert_int_eq(pthread_create(&th, NULL, wait_main, &w), 0);
	for (int i = 0; i < 500 && !in_time; i++) {
		struct timespec ms10 = { 0, 10 * 1000 * 1000 };

		nanosleep(&ms10, NULL);
		in_time = atomic_load(&w.done);
	}
	/* Ends the wait if it still hangs. */
	ck_assert_int_eq(srsv_ctx_shutdown(ctx), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_msg(in_time, "a %s wait behind a %s ticket never returned "
		      "(it ended with %d at shutdown)", srsv_flush_name(mode),
		      srsv_flush_name(first), w.ret);
	/* The walk (no flush callback: nothing to free) failed both. */
	ck_assert_int_eq(w.ret, -ENOSPC);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -ENOSPC);
	ck_assert_int_eq(srsv_ctx_destroy(ctx), 0);
}

START_TEST(test_manual_wait_mixed)
{
	check_mixed_wait(SRSV_FLUSH_DATA, SRSV_FLUSH_ALL);
	check_mixed_wait(SRSV_FLUSH_ALL, SRSV_FLUSH_DATA);
}
END_TEST

/*
 * Two groups of 4 MiB, METADATA then DATA, each 3 MiB used, freed down to
 * 1 MiB in that order (each crosses the 50% threshold and is marked):
 * btrfs_mark_bg_to_reclaim() queues them on one list in that order, and
 * list_sort() by used bytes is stable, so the METADATA group comes first.
 */
START_TEST(test_reclaim_tie_pools)
{
	struct srsv_config cfg;
	struct srsv_bgroup_config bcfg;
	struct srsv_bgroup_info info;
	struct srsv_ctx *ctx = NULL;
	const uint64_t md = 0, data = 8 * MiB;

	srsv_config_init(&cfg);
	cfg.flags = MANUAL;
	cfg.unallocated_bytes = 64 * MiB;
	ck_assert_int_eq(srsv_ctx_create(&cfg, &ctx), 0);
	ck_assert_int_eq(srsv_bgroup_config_init(&bcfg), 0);
	bcfg.reclaim_threshold_pct = 50;
	bcfg.dynamic_reclaim = false;
	bcfg.periodic_reclaim = false;
	ck_assert_int_eq(srsv_bgroups_init(ctx, &bcfg), 0);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_METADATA, md,
					 4 * MiB), 0);
	ck_assert_int_eq(srsv_bgroup_add(ctx, SRSV_POOL_DATA, data, 4 * MiB),
			 0);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_METADATA, md,
					   3 * MiB), 0);
	ck_assert_int_eq(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, data,
					   3 * MiB), 0);
	/* Not pinned (transaction 0): candidates at once. */
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_METADATA, md,
					  2 * MiB, 0), 0);
	ck_assert_int_eq(srsv_bgroup_free(ctx, SRSV_POOL_DATA, data,
					  2 * MiB, 0), 0);
	ck_assert_int_eq(srsv_bgroup_get(ctx, md, &info), 0);
	ck_assert(info.candidate);
	ck_assert_int_eq(srsv_bgroup_get(ctx, data, &info), 0);
	ck_assert(info.candidate);
	ck_assert_int_eq(srsv_bgroup_reclaim_take(ctx, &info), 0);
	ck_assert_uint_eq(info.used, MiB);
	ck_assert_msg(info.start == md, "took the group at %llu, not the "
		      "METADATA one marked first", (unsigned long long)info.start);
	ck_assert_int_eq(srsv_bgroup_reclaim_done(ctx, info.start, -EIO), 0);
	ck_assert_int_eq(srsv_ctx_destroy(ctx), 0);
}
END_TEST

static Suite *findings_suite(void)
{
	Suite *s = suite_create("fuzz_findings");
	TCase *sys = tcase_create("clamp_system");
	TCase *ndp = tcase_create("clamp_no_data_preempt");
	TCase *wrap = tcase_create("reclaimable_wrap");
	TCase *mixed = tcase_create("manual_wait_mixed");
	TCase *tie = tcase_create("reclaim_tie_pools");

	tcase_add_test(sys, test_clamp_system);
	tcase_add_test(ndp, test_clamp_no_data_preempt);
	tcase_add_test(wrap, test_reclaimable_wrap);
	tcase_add_test(mixed, test_manual_wait_mixed);
	tcase_add_test(tie, test_reclaim_tie_pools);
	suite_add_tcase(s, sys);
	suite_add_tcase(s, ndp);
	suite_add_tcase(s, wrap);
	suite_add_tcase(s, mixed);
	suite_add_tcase(s, tie);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(findings_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
