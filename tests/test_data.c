/* SPDX-License-Identifier: MIT */
/*
 * Data pools (docs/design.md, "Data pools"): preemptive reclaim by debt,
 * the movers' reserve, partial grants, the restart recipe's
 * srsv_space_load_used(), leaving the error state, and the log tree's
 * rule in the fallback chain.  Deterministic: manual mode, the preemptive
 * flusher run by srsv_ctx_run_pending(), the scripted engine of
 * engine_sim.c.  White-box where a rule is only visible inside
 * (need_preemptive_reclaim()).
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <string.h>

#include "engine_sim.h"
#include "internal.h"
#include "preempt.h"

#define KiB ESIM_KIB
#define MiB ESIM_MIB
#define DATA (64 * MiB)
#define META (64 * MiB)
/* Manual mode with the preemptive flusher on: it runs when asked. */
#define MANUAL (SRSV_CTX_MANUAL | SRSV_CTX_MANUAL_WAIT)

static uint64_t esim_preempt_calls(struct esim *sim,
				   enum srsv_flush_state state)
{
	uint64_t n;

	pthread_mutex_lock(&sim->lock);
	n = sim->preempt_calls[state];
	pthread_mutex_unlock(&sim->lock);
	return n;
}

static struct srsv_space_stats esim_stats(struct srsv_space *s)
{
	struct srsv_space_stats st;

	ck_assert_int_eq(srsv_space_get_stats(s, &st), 0);
	return st;
}

static struct esim *make(unsigned flags, uint64_t mover)
{
	struct esim *sim = esim_new();
	struct srsv_config cfg;

	esim_config_init(sim, &cfg, flags);
	cfg.pool_bytes[SRSV_POOL_DATA] = DATA;
	cfg.pool_bytes[SRSV_POOL_METADATA] = META;
	cfg.pool_bytes[SRSV_POOL_SYSTEM] = 4 * MiB;
	cfg.mover_reserve_bytes[SRSV_POOL_DATA] = mover;
	ck_assert_int_eq(esim_ctx_create(sim, &cfg), 0);
	return sim;
}

/* @used bytes written, @dead of them pinned (a log store's dead records). */
static void write_and_kill(struct srsv_space *d, uint64_t used, uint64_t dead)
{
	ck_assert_int_eq(srsv_space_reserve(d, used, SRSV_FLUSH_DATA, 0), 0);
	ck_assert_int_eq(srsv_space_alloc(d, used), 0);
	ck_assert_int_eq(srsv_space_commit_used(d, used), 0);
	if (dead)
		ck_assert_int_eq(srsv_space_pin(d, dead), 0);
}

/*
 * Below the threshold the data pool is left alone; once the debt (pinned)
 * reaches three quarters of the room not used, the next data reservation
 * queues the
 * preemptive flusher, which asks for COMMIT_TRANS on the data pool
 * (for_preempt) and unpins until the debt is under the threshold again.
 * With SRSV_CTX_NO_DATA_PREEMPT (btrfs's data behaviour) nothing runs.
 */
START_TEST(test_data_preempt_by_debt)
{
	struct esim *sim = make(MANUAL, 0);
	struct srsv_space *d = esim_space(sim, SRSV_POOL_DATA);
	struct srsv_space_info info;

	esim_on(sim, SRSV_STATE_COMMIT_TRANS, ESIM_UNPIN, 4 * MiB);
	/* 40 MiB used, 8 pinned: the room not used is 24 MiB, the debt
	 * under three quarters of it (clamp 1). */
	write_and_kill(d, 48 * MiB, 8 * MiB);
	ck_assert(!srsv__need_preemptive_reclaim(d));
	ck_assert_int_eq(srsv_space_reserve(d, 4 * KiB, SRSV_FLUSH_DATA, 0), 0);
	ck_assert_int_eq(srsv_ctx_run_pending(sim->ctx), 0);
	/* 40 pinned of a 56 MiB room: under three quarters still (42). */
	ck_assert_int_eq(srsv_space_pin(d, 32 * MiB), 0);
	ck_assert(!srsv__need_preemptive_reclaim(d));
	/* 48 pinned of the whole 64 MiB: three quarters. */
	ck_assert_int_eq(srsv_space_pin(d, 8 * MiB), 0);
	ck_assert(srsv__need_preemptive_reclaim(d));
	ck_assert_int_eq(srsv_space_reserve(d, 4 * KiB, SRSV_FLUSH_DATA, 0), 0);
	ck_assert_int_gt(srsv_ctx_run_pending(sim->ctx), 0);
	ck_assert_uint_gt(esim_preempt_calls(sim, SRSV_STATE_COMMIT_TRANS), 0);
	info = esim_snap(d);
	ck_assert_uint_eq(info.preempt_runs, 1);
	ck_assert_uint_lt(info.pinned, 48 * MiB);
	ck_assert(!srsv__need_preemptive_reclaim(d));
	ck_assert_uint_eq(info.nr_tickets, 0);
	esim_free(sim);

	/* btrfs's data behaviour: the same debt runs nothing. */
	sim = make(MANUAL | SRSV_CTX_NO_DATA_PREEMPT, 0);
	d = esim_space(sim, SRSV_POOL_DATA);
	esim_on(sim, SRSV_STATE_COMMIT_TRANS, ESIM_UNPIN, 4 * MiB);
	write_and_kill(d, 48 * MiB, 48 * MiB);
	ck_assert(!srsv__need_preemptive_reclaim(d));
	ck_assert_int_eq(srsv_space_reserve(d, 4 * KiB, SRSV_FLUSH_DATA, 0), 0);
	ck_assert_int_eq(srsv_ctx_run_pending(sim->ctx), 0);
	ck_assert_uint_eq(esim_total_calls(sim), 0);
	esim_free(sim);
}
END_TEST

/*
 * The room counts the unallocated space the pool can still grow into
 * (btrfs's need_preemptive_reclaim() counts calc_available_free_space()
 * for metadata): a pool that grows in chunks is not full of debt while
 * the device has room.  spacefs's data pool, which grows so, committed
 * preemptively four times in 10 s of fio randwrite without this.
 */
START_TEST(test_data_preempt_counts_unallocated)
{
	struct esim *sim = esim_setup(MANUAL, 64 * MiB, 64 * MiB, 64 * MiB);
	struct srsv_space *d = esim_space(sim, SRSV_POOL_DATA);

	/* 48 MiB pinned: three quarters of the pool, not of the 128 MiB it
	 * can become. */
	write_and_kill(d, 48 * MiB, 48 * MiB);
	ck_assert(!srsv__need_preemptive_reclaim(d));
	/* The device full: now it is. */
	ck_assert_int_eq(srsv_ctx_set_unallocated(sim->ctx, 0), 0);
	ck_assert(srsv__need_preemptive_reclaim(d));
	esim_free(sim);
}
END_TEST

/*
 * What the engine reports counts as debt, and the state it reports the
 * most for is the one asked for: 30 MiB reclaimable by RUN_DELAYED_IPUTS
 * (objects deleted, not yet purged) against 2 MiB pinned.
 */
START_TEST(test_data_preempt_reported_state)
{
	struct esim *sim = make(MANUAL, 0);
	struct srsv_space *d = esim_space(sim, SRSV_POOL_DATA);
	uint64_t to;

	write_and_kill(d, 32 * MiB, 2 * MiB);
	ck_assert(!srsv__need_preemptive_reclaim(d));
	ck_assert_int_eq(srsv_space_set_reclaimable(d,
			 SRSV_STATE_RUN_DELAYED_IPUTS, 30 * MiB), 0);
	ck_assert(srsv__need_preemptive_reclaim(d));
	ck_assert_int_eq(srsv__preempt_choose(d, &to),
			 SRSV_STATE_RUN_DELAYED_IPUTS);
	ck_assert_uint_eq(to, 30 * MiB);
	ck_assert_uint_eq(esim_snap(d).reclaimable, 30 * MiB);
	/* Reporting queued the flusher: it asks for that state. */
	ck_assert_int_gt(srsv_ctx_run_pending(sim->ctx), 0);
	ck_assert_uint_gt(esim_preempt_calls(sim, SRSV_STATE_RUN_DELAYED_IPUTS),
			  0);
	/* A store, not an add; bad input refused and counted. */
	ck_assert_int_eq(srsv_space_set_reclaimable(d,
			 SRSV_STATE_RUN_DELAYED_IPUTS, 0), 0);
	ck_assert_uint_eq(esim_snap(d).reclaimable, 0);
	ck_assert_int_eq(srsv_space_set_reclaimable(d, 0, MiB), -EINVAL);
	ck_assert_int_eq(srsv_space_set_reclaimable(d, SRSV_STATE_COUNT, MiB),
			 -EINVAL);
	ck_assert_int_eq(srsv_space_set_reclaimable(NULL, 1, MiB), -EINVAL);
	ck_assert_uint_eq(esim_stats(d).refused[SRSV_REFUSED_POOL_ARGS], 2);
	esim_free(sim);
}
END_TEST

/*
 * The movers' reserve: charged at creation, hidden from writers and from
 * statfs's available figure, served to a mover without a lock even with
 * writers queued, refilled from an unpin before any ticket sees it.
 */
START_TEST(test_mover_reserve)
{
	struct esim *sim = make(MANUAL, 4 * MiB);
	struct srsv_space *d = esim_space(sim, SRSV_POOL_DATA);
	struct srsv_space_info info;
	struct srsv_ticket t;
	struct srsv_statfs st;

	info = esim_snap(d);
	ck_assert_uint_eq(info.mover_rsv_size, 4 * MiB);
	ck_assert_uint_eq(info.mover_rsv_reserved, 4 * MiB);
	ck_assert_uint_eq(info.may_use, 4 * MiB);
	ck_assert_int_eq(srsv_ctx_statfs(sim->ctx, &st), 0);
	ck_assert_uint_le(st.avail, DATA - 4 * MiB);
	/* Writers take the rest, then queue. */
	write_and_kill(d, DATA - 4 * MiB, 8 * MiB);
	ck_assert_int_eq(srsv_ticket_reserve(d, &t, 64 * KiB, SRSV_FLUSH_DATA,
					     0), -EINPROGRESS);
	/* A mover is served from its reserve, passing the writer. */
	ck_assert_int_eq(srsv_space_reserve(d, 3 * MiB, SRSV_NO_FLUSH,
					    SRSV_RESERVE_MOVER), 0);
	ck_assert_uint_eq(esim_snap(d).mover_rsv_reserved, 1 * MiB);
	/* The cleaning frees 8 MiB: 3 refill the reserve first. */
	ck_assert_int_eq(srsv_space_unpin(d, 8 * MiB), 0);
	info = esim_snap(d);
	ck_assert_uint_eq(info.mover_rsv_reserved, 4 * MiB);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), 0);
	/* An unpin the reserve takes whole grants nobody. */
	ck_assert_int_eq(srsv_space_release(d, 64 * KiB), 0);
	ck_assert_int_eq(srsv_space_reserve(d, 2 * MiB, SRSV_NO_FLUSH,
					    SRSV_RESERVE_MOVER), 0);
	write_and_kill(d, 5 * MiB, 0);		/* full again */
	ck_assert_int_eq(srsv_ticket_reserve(d, &t, 64 * KiB, SRSV_FLUSH_DATA,
					     0), -EINPROGRESS);
	ck_assert_int_eq(srsv_space_pin(d, MiB), 0);
	ck_assert_int_eq(srsv_space_unpin(d, MiB), 0);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -EINPROGRESS);
	ck_assert_uint_eq(esim_snap(d).mover_rsv_reserved, 3 * MiB);
	ck_assert_int_eq(srsv_ticket_cancel(&t), 0);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -ECANCELED);
	esim_free(sim);
}
END_TEST

/* Partial grants: all of max, what there is above min, or min's rules. */
START_TEST(test_partial_grants)
{
	struct esim *sim = make(MANUAL, 2 * MiB);
	struct srsv_space *d = esim_space(sim, SRSV_POOL_DATA);
	uint64_t got = 1;

	ck_assert_int_eq(srsv_space_reserve_partial(d, MiB, 8 * MiB,
			 SRSV_FLUSH_DATA, 0, &got), 0);
	ck_assert_uint_eq(got, 8 * MiB);
	/* 64 - 2 (movers) - 8 = 54 MiB left: 54 of up to 60. */
	ck_assert_int_eq(srsv_space_reserve_partial(d, MiB, 60 * MiB,
			 SRSV_FLUSH_DATA, 0, &got), 0);
	ck_assert_uint_eq(got, 54 * MiB);
	/* Nothing left: min's rules, NO_FLUSH fails at once. */
	ck_assert_int_eq(srsv_space_reserve_partial(d, MiB, 8 * MiB,
			 SRSV_NO_FLUSH, 0, &got), -ENOSPC);
	ck_assert_uint_eq(got, 0);
	/* A mover gets what its reserve has, above its min. */
	ck_assert_int_eq(srsv_space_reserve_partial(d, MiB, 8 * MiB,
			 SRSV_NO_FLUSH, SRSV_RESERVE_MOVER, &got), 0);
	ck_assert_uint_eq(got, 2 * MiB);
	ck_assert_uint_eq(esim_snap(d).may_use, DATA);
	/* Bad input: refused, counted, nothing changed. */
	ck_assert_int_eq(srsv_space_reserve_partial(d, 0, MiB,
			 SRSV_FLUSH_DATA, 0, &got), -EINVAL);
	ck_assert_int_eq(srsv_space_reserve_partial(d, 2 * MiB, MiB,
			 SRSV_FLUSH_DATA, 0, &got), -EINVAL);
	ck_assert_int_eq(srsv_space_reserve_partial(d, MiB, 2 * MiB,
			 SRSV_FLUSH_DATA, 0, NULL), -EINVAL);
	ck_assert_int_eq(srsv_space_reserve_partial(d, MiB, 2 * MiB,
			 SRSV_FLUSH_ALL, 0, &got), -EINVAL);
	ck_assert_uint_eq(esim_snap(d).may_use, DATA);
	ck_assert_int_eq(srsv_space_release(d, DATA), 0);
	esim_free(sim);
}
END_TEST

/* The restart recipe: what is on disk is loaded as used, what the last
 * commit will free is pinned; nothing is reserved. */
START_TEST(test_load_used)
{
	struct esim *sim = make(MANUAL, 0);
	struct srsv_space *d = esim_space(sim, SRSV_POOL_DATA);
	struct srsv_space_info before;

	ck_assert_int_eq(srsv_space_load_used(d, 48 * MiB), 0);
	ck_assert_int_eq(srsv_space_pin(d, 8 * MiB), 0);
	ESIM_ASSERT_COUNTERS(d, DATA, 40 * MiB, 8 * MiB, 0, 0, 0);
	before = esim_snap(d);
	ck_assert_int_eq(srsv_space_load_used(d, 17 * MiB), -ENOSPC);
	ck_assert_int_eq(srsv_space_load_used(d, 0), -EINVAL);
	ck_assert_int_eq(srsv_space_load_used(NULL, MiB), -EINVAL);
	{
		struct srsv_space_info after = esim_snap(d);

		ESIM_ASSERT_SAME_INFO(&before, &after);
	}
	ck_assert_int_eq(srsv_space_load_used(d, 16 * MiB), 0);
	ck_assert_uint_eq(esim_snap(d).used, 56 * MiB);
	esim_free(sim);
}
END_TEST

/* The error state and the way out of it (RocksDB's DB::Resume()). */
START_TEST(test_clear_error)
{
	struct esim *sim = make(MANUAL | SRSV_CTX_NO_PREEMPT, 0);
	struct srsv_space *d = esim_space(sim, SRSV_POOL_DATA);
	struct srsv_ticket t;

	write_and_kill(d, DATA, 0);
	ck_assert_int_eq(srsv_ticket_reserve(d, &t, MiB, SRSV_FLUSH_DATA, 0),
			 -EINPROGRESS);
	ck_assert_int_eq(srsv_ctx_set_error(sim->ctx, -EIO), 0);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -EIO);
	ck_assert_int_eq(srsv_ticket_reserve(d, &t, MiB, SRSV_FLUSH_DATA, 0),
			 -EIO);
	ck_assert_uint_eq(esim_stats(d).error_failures, 2);
	/* Recovered: waiting is possible again. */
	ck_assert_int_eq(srsv_ctx_clear_error(sim->ctx), 0);
	ck_assert_int_eq(srsv_ticket_reserve(d, &t, MiB, SRSV_FLUSH_DATA, 0),
			 -EINPROGRESS);
	ck_assert_int_eq(srsv_ticket_cancel(&t), 0);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -ECANCELED);
	ck_assert_uint_eq(esim_stats(d).error_failures, 2);
	ck_assert_int_eq(srsv_ctx_clear_error(NULL), -EINVAL);
	ck_assert_int_eq(srsv_ctx_shutdown(sim->ctx), 0);
	ck_assert_int_eq(srsv_ctx_clear_error(sim->ctx), -ESHUTDOWN);
	esim_free(sim);
}
END_TEST

/*
 * The log tree's rule (upstream 40f2b11c1b7c): with the pool full, a
 * TREELOG rsv's fallback fails after its NO_FLUSH try, never touching
 * the global reserve or the emergency path, while another rsv of the same
 * pool still borrows from the global reserve.
 */
START_TEST(test_treelog_never_global)
{
	struct esim *sim = esim_new();
	struct srsv_config cfg;
	struct srsv_space *md;
	struct srsv_rsv log, temp, *used = NULL;
	struct srsv_rsv_info g;

	esim_config_init(sim, &cfg, MANUAL | SRSV_CTX_NO_PREEMPT);
	cfg.pool_bytes[SRSV_POOL_DATA] = DATA;
	cfg.pool_bytes[SRSV_POOL_METADATA] = META;
	cfg.pool_bytes[SRSV_POOL_SYSTEM] = 4 * MiB;
	cfg.global_rsv_bytes = 8 * MiB;
	ck_assert_int_eq(esim_ctx_create(sim, &cfg), 0);
	md = esim_space(sim, SRSV_POOL_METADATA);
	ck_assert_int_eq(srsv_space_reserve(md, META - 8 * MiB, SRSV_NO_FLUSH,
					    0), 0);
	ck_assert_int_eq(srsv_rsv_init(&log, md, SRSV_RSV_TREELOG), 0);
	ck_assert_int_eq(srsv_rsv_init(&temp, md, SRSV_RSV_TEMP), 0);
	ck_assert_int_eq(srsv_rsv_use_fallback(&log, 64 * KiB, &used),
			 -ENOSPC);
	ck_assert_int_eq(srsv_rsv_get_info(srsv_ctx_rsv(sim->ctx,
					   SRSV_RSV_GLOBAL), &g), 0);
	ck_assert_uint_eq(g.reserved, 8 * MiB);
	ck_assert_int_eq(srsv_rsv_use_fallback(&temp, 64 * KiB, &used), 0);
	ck_assert_ptr_eq(used, srsv_ctx_rsv(sim->ctx, SRSV_RSV_GLOBAL));
	ck_assert_int_eq(srsv_rsv_destroy(&log), 0);
	ck_assert_int_eq(srsv_rsv_destroy(&temp), 0);
	esim_free(sim);
}
END_TEST

static Suite *data_suite(void)
{
	Suite *s = suite_create("data");
	TCase *tc = tcase_create("data");

	tcase_add_test(tc, test_data_preempt_by_debt);
	tcase_add_test(tc, test_data_preempt_counts_unallocated);
	tcase_add_test(tc, test_data_preempt_reported_state);
	tcase_add_test(tc, test_mover_reserve);
	tcase_add_test(tc, test_partial_grants);
	tcase_add_test(tc, test_load_used);
	tcase_add_test(tc, test_clear_error);
	tcase_add_test(tc, test_treelog_never_global);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(data_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
