/* SPDX-License-Identifier: MIT */
/*
 * Pool statistics (srsv_space_get_stats()): ticket waits per mode, the
 * stalled time, the flush states' work and their -EOPNOTSUPP disabling,
 * refused calls, and the sized output struct.  Manual mode: the async walk
 * runs inline in srsv_ctx_run_pending(), so every figure is deterministic
 * except durations, which are only compared with each other (never with a
 * clock: no timing assertions).
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <libspacersv/spacersv.h>

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define TOTAL MiB

/* The engine of these tests: COMMIT_TRANS unpins everything pinned,
 * DELAYED_ITEMS does nothing (0), every other state is unknown to it. */
struct engine {
	unsigned calls[SRSV_STATE_COUNT];
	uint64_t pinned;
	struct timespec commit_sleep;
};

static int flush_cb(struct srsv_space *space, enum srsv_flush_state state,
		    uint64_t bytes, bool for_preempt, void *user)
{
	struct engine *e = user;

	(void)bytes; (void)for_preempt;
	e->calls[state]++;
	if (state == SRSV_STATE_DELAYED_ITEMS)
		return 0;
	if (state != SRSV_STATE_COMMIT_TRANS)
		return -EOPNOTSUPP;
	nanosleep(&e->commit_sleep, NULL);
	if (e->pinned) {
		ck_assert_int_eq(srsv_space_unpin(space, e->pinned), 0);
		e->pinned = 0;
	}
	return 0;
}

static struct srsv_ctx *make_ctx(struct engine *e)
{
	struct srsv_config cfg;
	struct srsv_ctx *ctx = NULL;

	ck_assert_int_eq(srsv_config_init(&cfg), 0);
	cfg.flags = SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT;
	cfg.flush = flush_cb;
	cfg.user = e;
	cfg.pool_bytes[SRSV_POOL_DATA] = TOTAL;
	cfg.pool_bytes[SRSV_POOL_METADATA] = TOTAL;
	cfg.pool_bytes[SRSV_POOL_SYSTEM] = TOTAL;
	cfg.unallocated_bytes = 0;	/* no overcommit: exact arithmetic */
	ck_assert_int_eq(srsv_ctx_create(&cfg, &ctx), 0);
	return ctx;
}

/* Fill @s: all of it used, @pinned bytes of that pinned, nothing free. */
static void fill(struct srsv_space *s, struct engine *e, uint64_t pinned)
{
	ck_assert_int_eq(srsv_space_reserve(s, TOTAL, SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_space_alloc(s, TOTAL), 0);
	ck_assert_int_eq(srsv_space_commit_used(s, TOTAL), 0);
	if (pinned)
		ck_assert_int_eq(srsv_space_pin(s, pinned), 0);
	e->pinned = pinned;
}

static struct srsv_space_stats stats(struct srsv_space *s)
{
	struct srsv_space_stats st;

	memset(&st, 0xa5, sizeof(st));
	ck_assert_int_eq(srsv_space_get_stats(s, &st), 0);
	ck_assert_uint_eq(st.size, sizeof(st));
	return st;
}

static unsigned bucket_of(uint64_t wait_ns)
{
	uint64_t us = wait_ns / 1000;
	unsigned b = 0;

	while (us >= 2 && b < SRSV_WAIT_BUCKETS - 1) {
		us >>= 1;
		b++;
	}
	return b;
}

static void run(struct srsv_ctx *ctx)
{
	for (int i = 0; i < 16 && srsv_ctx_run_pending(ctx) > 0; i++)
		;
}

/* A ticket's wait lands in its mode's figures; a commit serving it gets
 * the writers' time; the stalled time stops with the last ticket. */
START_TEST(test_wait_and_state_stats)
{
	struct engine e = { .commit_sleep = { 0, 2000000 } };
	struct srsv_ctx *ctx = make_ctx(&e);
	struct srsv_space *s = srsv_ctx_space(ctx, SRSV_POOL_METADATA);
	struct srsv_space_stats a, b, c;
	const struct srsv_state_stats *commit;
	struct srsv_ticket t;
	uint64_t hist = 0;

	a = stats(s);
	ck_assert_int_eq(a.kind, SRSV_POOL_METADATA);
	ck_assert_uint_eq(a.stalled_ns, 0);
	for (int m = 0; m < SRSV_STATS_MODES; m++)
		ck_assert_uint_eq(a.modes[m].tickets, 0);

	fill(s, &e, 512 * KiB);
	ck_assert_int_eq(srsv_ticket_reserve(s, &t, 256 * KiB, SRSV_FLUSH_ALL,
					     0), -EINPROGRESS);
	/* A stall in progress counts up to the snapshot. */
	a = stats(s);
	b = stats(s);
	ck_assert_uint_ge(b.stalled_ns, a.stalled_ns);
	ck_assert_uint_gt(b.now_ns, a.now_ns - 1);
	run(ctx);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), 0);

	b = stats(s);
	c = stats(s);
	/* Stall over: the figure no longer moves. */
	ck_assert_uint_eq(b.stalled_ns, c.stalled_ns);
	ck_assert_uint_ge(b.stalled_ns, a.stalled_ns);

	ck_assert_uint_eq(b.modes[SRSV_FLUSH_ALL].tickets, 1);
	ck_assert_uint_eq(b.modes[SRSV_FLUSH_ALL].failed, 0);
	ck_assert_uint_gt(b.modes[SRSV_FLUSH_ALL].wait_ns, 0);
	ck_assert_uint_eq(b.modes[SRSV_FLUSH_ALL].max_wait_ns,
			  b.modes[SRSV_FLUSH_ALL].wait_ns);
	for (int i = 0; i < SRSV_WAIT_BUCKETS; i++)
		hist += b.modes[SRSV_FLUSH_ALL].hist[i];
	ck_assert_uint_eq(hist, 1);
	ck_assert_uint_eq(b.modes[SRSV_FLUSH_ALL]
			  .hist[bucket_of(b.modes[SRSV_FLUSH_ALL].wait_ns)], 1);
	/* The stall is the ticket's wait (one ticket): it starts at the
	 * ticket's queueing and ends when the ticket leaves the queue, just
	 * before the wait is measured; it holds the commit's 2 ms sleep. */
	ck_assert_uint_le(b.stalled_ns, b.modes[SRSV_FLUSH_ALL].wait_ns);
	ck_assert_uint_ge(b.stalled_ns, 2000000);

	commit = &b.states[SRSV_STATE_COMMIT_TRANS];
	ck_assert_uint_eq(commit->calls, 1);
	ck_assert_uint_eq(commit->preempt_calls, 0);
	ck_assert_uint_eq(commit->calls, e.calls[SRSV_STATE_COMMIT_TRANS]);
	ck_assert_uint_gt(commit->time_ns, 0);
	/* One ticket queued during the commit: its time is the writers'. */
	ck_assert_uint_eq(commit->waited_ns, commit->time_ns);
	/* The commit slept 2 ms before its unpin granted the ticket:
	 * nanosleep() never sleeps less, so both figures hold it (a lower
	 * bound only: no timing assertion). */
	ck_assert_uint_ge(commit->time_ns, 2000000);
	ck_assert_uint_ge(b.modes[SRSV_FLUSH_ALL].wait_ns, 2000000);
	/* 512 KiB unpinned: 256 KiB left free, 256 KiB granted. */
	ck_assert_uint_eq(commit->bytes_freed, 512 * KiB);
	ck_assert_uint_eq(commit->unsupported, 0);
	ck_assert(!commit->disabled);
	/* DELAYED_ITEMS answered 0: called, freed nothing, not disabled. */
	ck_assert_uint_eq(b.states[SRSV_STATE_DELAYED_ITEMS].calls, 1);
	ck_assert_uint_eq(b.states[SRSV_STATE_DELAYED_ITEMS].bytes_freed, 0);
	ck_assert(!b.states[SRSV_STATE_DELAYED_ITEMS].disabled);
	/* The snapshot agrees on the calls. */
	{
		struct srsv_space_info info;

		ck_assert_int_eq(srsv_space_snapshot(s, &info, NULL, 0, NULL),
				 0);
		for (int st = 1; st < SRSV_SPACE_INFO_STATES; st++)
			ck_assert_uint_eq(info.flushes[st], b.states[st].calls);
	}
	srsv_ctx_destroy(ctx);
}
END_TEST

/* A failed ticket counts as failed; a cancelled one too. */
START_TEST(test_failed_tickets)
{
	struct engine e = { .commit_sleep = { 0, 0 } };
	struct srsv_ctx *ctx = make_ctx(&e);
	struct srsv_space *s = srsv_ctx_space(ctx, SRSV_POOL_METADATA);
	struct srsv_space_stats st;
	struct srsv_ticket t;

	fill(s, &e, 0);
	ck_assert_int_eq(srsv_ticket_reserve(s, &t, 64 * KiB, SRSV_FLUSH_ALL,
					     0), -EINPROGRESS);
	ck_assert_int_eq(srsv_ticket_cancel(&t), 0);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -ECANCELED);
	ck_assert_int_eq(srsv_ticket_reserve(s, &t, 64 * KiB, SRSV_FLUSH_LIMIT,
					     0), -EINPROGRESS);
	ck_assert_int_eq(srsv_ticket_wait(&t, UINT64_MAX), -ENOSPC);
	st = stats(s);
	ck_assert_uint_eq(st.modes[SRSV_FLUSH_ALL].tickets, 1);
	ck_assert_uint_eq(st.modes[SRSV_FLUSH_ALL].failed, 1);
	ck_assert_uint_eq(st.modes[SRSV_FLUSH_LIMIT].tickets, 1);
	ck_assert_uint_eq(st.modes[SRSV_FLUSH_LIMIT].failed, 1);
	ck_assert_uint_eq(st.modes[SRSV_NO_FLUSH].tickets, 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* A state that said -EOPNOTSUPP is not called again until re-enabled. */
START_TEST(test_unsupported_disables)
{
	struct engine e = { .commit_sleep = { 0, 0 } };
	struct srsv_ctx *ctx = make_ctx(&e);
	struct srsv_space *s = srsv_ctx_space(ctx, SRSV_POOL_METADATA);
	struct srsv_space *d = srsv_ctx_space(ctx, SRSV_POOL_DATA);
	const int nr = SRSV_STATE_DELAYED_ITEMS_NR;
	struct srsv_space_stats st;
	struct srsv_ticket t;

	fill(s, &e, 128 * KiB);
	ck_assert_int_eq(srsv_ticket_reserve(s, &t, 64 * KiB, SRSV_FLUSH_ALL,
					     0), -EINPROGRESS);
	run(ctx);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), 0);
	st = stats(s);
	ck_assert_uint_eq(e.calls[nr], 1);
	ck_assert_uint_eq(st.states[nr].calls, 1);
	ck_assert_uint_eq(st.states[nr].unsupported, 1);
	ck_assert(st.states[nr].disabled);
	ck_assert_uint_eq(st.states[nr].skipped, 0);
	/* Another pool is not concerned. */
	ck_assert(!stats(d).states[nr].disabled);

	/* Second walk: skipped, the walk still reaches COMMIT_TRANS. */
	ck_assert_int_eq(srsv_space_pin(s, 128 * KiB), 0);
	e.pinned = 128 * KiB;
	ck_assert_int_eq(srsv_ticket_reserve(s, &t, 128 * KiB, SRSV_FLUSH_ALL,
					     0), -EINPROGRESS);
	run(ctx);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), 0);
	st = stats(s);
	ck_assert_uint_eq(e.calls[nr], 1);
	ck_assert_uint_eq(st.states[nr].calls, 1);
	ck_assert_uint_eq(st.states[nr].skipped, 1);
	ck_assert_uint_eq(st.states[SRSV_STATE_COMMIT_TRANS].calls, 2);

	/* Re-enabled: called again (and disabled again by its answer). */
	ck_assert_int_eq(srsv_space_enable_state(s, nr), 0);
	ck_assert(!stats(s).states[nr].disabled);
	ck_assert_int_eq(srsv_space_enable_state(s, nr), 0);	/* idempotent */
	ck_assert_int_eq(srsv_space_pin(s, 128 * KiB), 0);
	e.pinned = 128 * KiB;
	ck_assert_int_eq(srsv_ticket_reserve(s, &t, 128 * KiB, SRSV_FLUSH_ALL,
					     0), -EINPROGRESS);
	run(ctx);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), 0);
	ck_assert_uint_eq(e.calls[nr], 2);
	st = stats(s);
	ck_assert(st.states[nr].disabled);
	ck_assert(st.states[SRSV_STATE_DELAYED_REFS_NR].disabled);
	/* 0: every state. */
	ck_assert_int_eq(srsv_space_enable_state(s, 0), 0);
	st = stats(s);
	for (int i = 0; i < SRSV_STATS_STATES; i++)
		ck_assert(!st.states[i].disabled);

	/* Bad input: -EINVAL and nothing changed. */
	ck_assert_int_eq(srsv_space_enable_state(NULL, nr), -EINVAL);
	ck_assert_int_eq(srsv_space_enable_state(s, -1), -EINVAL);
	ck_assert_int_eq(srsv_space_enable_state(s, SRSV_STATE_COUNT), -EINVAL);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* ALLOC_CHUNK disabled still marks the pool full every time it is asked. */
START_TEST(test_disabled_alloc_chunk_still_full)
{
	struct engine e = { .commit_sleep = { 0, 0 } };
	struct srsv_ctx *ctx = make_ctx(&e);
	struct srsv_space *d = srsv_ctx_space(ctx, SRSV_POOL_DATA);
	struct srsv_space_info info;
	struct srsv_space_stats st;
	struct srsv_ticket t;

	ck_assert_int_eq(srsv_space_reserve(d, TOTAL, SRSV_NO_FLUSH, 0), 0);
	for (int round = 0; round < 2; round++) {
		ck_assert_int_eq(srsv_space_set_full(d, false), 0);
		ck_assert_int_eq(srsv_ticket_reserve(d, &t, 64 * KiB,
						     SRSV_FLUSH_DATA, 0),
				 -EINPROGRESS);
		run(ctx);
		ck_assert_int_eq(srsv_ticket_wait(&t, 0), -ENOSPC);
		ck_assert_int_eq(srsv_space_snapshot(d, &info, NULL, 0, NULL),
				 0);
		ck_assert(info.full);
	}
	st = stats(d);
	ck_assert_uint_eq(e.calls[SRSV_STATE_ALLOC_CHUNK_FORCE], 1);
	ck_assert_uint_eq(st.states[SRSV_STATE_ALLOC_CHUNK_FORCE].calls, 1);
	ck_assert_uint_ge(st.states[SRSV_STATE_ALLOC_CHUNK_FORCE].skipped, 1);
	ck_assert_uint_eq(st.modes[SRSV_FLUSH_DATA].failed, 2);
	ck_assert_int_eq(srsv_space_release(d, TOTAL), 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* Each kind of refused call is counted, and nothing changes. */
START_TEST(test_refusals)
{
	struct engine e = { .commit_sleep = { 0, 0 } };
	struct srsv_ctx *ctx = make_ctx(&e);
	struct srsv_space *s = srsv_ctx_space(ctx, SRSV_POOL_METADATA);
	struct srsv_space *d = srsv_ctx_space(ctx, SRSV_POOL_DATA);
	struct srsv_space_info before, after;
	struct srsv_space_stats st;

	ck_assert_int_eq(srsv_space_reserve(s, 64 * KiB, SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_space_snapshot(s, &before, NULL, 0, NULL), 0);
	ck_assert_int_eq(srsv_space_release(s, 128 * KiB), -EINVAL);
	ck_assert_int_eq(srsv_space_alloc(s, 128 * KiB), -EINVAL);
	ck_assert_int_eq(srsv_space_free_reserved(s, KiB), -EINVAL);
	ck_assert_int_eq(srsv_space_commit_used(s, KiB), -EINVAL);
	ck_assert_int_eq(srsv_space_commit_used(s, KiB), -EINVAL);
	ck_assert_int_eq(srsv_space_pin(s, KiB), -EINVAL);
	ck_assert_int_eq(srsv_space_unpin(s, KiB), -EINVAL);
	ck_assert_int_eq(srsv_space_shrink(s, KiB), -EINVAL);
	ck_assert_int_eq(srsv_space_clear_readonly(s, KiB), -EINVAL);
	ck_assert_int_eq(srsv_space_grow(s, SRSV_MAX_BYTES), -EINVAL);
	ck_assert_int_eq(srsv_space_reserve(s, 0, SRSV_NO_FLUSH, 0), -EINVAL);
	ck_assert_int_eq(srsv_space_reserve(s, KiB, SRSV_FLUSH_DATA, 0),
			 -EINVAL);
	ck_assert_int_eq(srsv_space_pin(s, 0), -EINVAL);
	ck_assert_int_eq(srsv_space_snapshot(s, &after, NULL, 0, NULL), 0);
	ck_assert_uint_eq(after.may_use, before.may_use);
	ck_assert_uint_eq(after.used, before.used);
	ck_assert_uint_eq(after.total, before.total);

	st = stats(s);
	ck_assert_uint_eq(st.refused[SRSV_REFUSED_RELEASE], 1);
	ck_assert_uint_eq(st.refused[SRSV_REFUSED_ALLOC], 1);
	ck_assert_uint_eq(st.refused[SRSV_REFUSED_FREE_RESERVED], 1);
	ck_assert_uint_eq(st.refused[SRSV_REFUSED_COMMIT_USED], 2);
	ck_assert_uint_eq(st.refused[SRSV_REFUSED_PIN], 1);
	ck_assert_uint_eq(st.refused[SRSV_REFUSED_UNPIN], 1);
	ck_assert_uint_eq(st.refused[SRSV_REFUSED_SHRINK], 1);
	ck_assert_uint_eq(st.refused[SRSV_REFUSED_CLEAR_READONLY], 1);
	ck_assert_uint_eq(st.refused[SRSV_REFUSED_GROW], 1);
	ck_assert_uint_eq(st.refused[SRSV_REFUSED_ARGS], 3);
	/* Per pool. */
	st = stats(d);
	for (int k = 0; k < SRSV_STATS_REFUSALS; k++)
		ck_assert_uint_eq(st.refused[k], 0);
	/* A NULL pool has nowhere to count: still -EINVAL. */
	ck_assert_int_eq(srsv_space_release(NULL, KiB), -EINVAL);
	ck_assert_int_eq(srsv_space_release(s, 64 * KiB), 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* The sized struct: an older, shorter layout gets only its bytes. */
START_TEST(test_sized)
{
	struct engine e = { .commit_sleep = { 0, 0 } };
	struct srsv_ctx *ctx = make_ctx(&e);
	struct srsv_space *s = srsv_ctx_space(ctx, SRSV_POOL_METADATA);
	size_t min = offsetof(struct srsv_space_stats, refused) +
		     sizeof(((struct srsv_space_stats *)0)->refused);
	struct {
		struct srsv_space_stats st;
		unsigned char canary[64];
	} big;
	unsigned char *raw = (unsigned char *)&big;

	ck_assert_int_eq(srsv_space_get_stats_sized(NULL, &big.st,
						    sizeof(big.st)), -EINVAL);
	ck_assert_int_eq(srsv_space_get_stats_sized(s, NULL, sizeof(big.st)),
			 -EINVAL);
	memset(&big, 0x5a, sizeof(big));
	ck_assert_int_eq(srsv_space_get_stats_sized(s, &big.st, min - 1),
			 -EINVAL);
	for (size_t i = 0; i < sizeof(big); i++)
		ck_assert_uint_eq(raw[i], 0x5a);	/* nothing written */

	/* The first layout: filled, not a byte more. */
	ck_assert_int_eq(srsv_space_get_stats_sized(s, &big.st, min), 0);
	ck_assert_uint_eq(big.st.size, min);
	ck_assert_int_eq(big.st.kind, SRSV_POOL_METADATA);
	for (size_t i = min; i < sizeof(big); i++)
		ck_assert_uint_eq(raw[i], 0x5a);

	/* A newer caller's larger layout: the library fills what it knows. */
	memset(&big, 0x5a, sizeof(big));
	ck_assert_int_eq(srsv_space_get_stats_sized(s, &big.st, sizeof(big)),
			 0);
	ck_assert_uint_eq(big.st.size, sizeof(big.st));
	for (size_t i = sizeof(big.st); i < sizeof(big); i++)
		ck_assert_uint_eq(raw[i], 0x5a);
	srsv_ctx_destroy(ctx);
}
END_TEST

static Suite *stats_suite(void)
{
	Suite *s = suite_create("stats");
	TCase *tc = tcase_create("stats");

	tcase_add_test(tc, test_wait_and_state_stats);
	tcase_add_test(tc, test_failed_tickets);
	tcase_add_test(tc, test_unsupported_disables);
	tcase_add_test(tc, test_disabled_alloc_chunk_still_full);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_sized);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(stats_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
