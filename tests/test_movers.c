/* SPDX-License-Identifier: MIT */
/*
 * The movers' reserve and the engine's reports where they meet races and
 * careless callers, through the public API only: every case here was a
 * defect found by reading the code cold or by an engine written from the
 * docs alone, and fails on the library before its fix.
 *
 * - A refill of the movers' reserve goes through admission: a lock-free
 *   writer that takes the bytes an unpin just freed cannot push a data
 *   pool past its total (threads, bounded).
 * - A mover waiting as a ticket is served from its own reserve when a
 *   refill puts bytes there; space added through the block-group table,
 *   a zone reset and read-only bytes given back refill the reserve first,
 *   as unpin, free and grow do; so does a release.
 * - An over-release cannot eat the movers' reserve; nor can an alloc.
 * - A partial grant for a mover takes the rest from the pool.
 * - A manual-mode waiter on a MIXED pool runs the walk that serves it,
 *   whichever worker it was queued for.
 * - srsv_space_set_reclaimable(): the sum never wraps (huge figures, and
 *   two setters of one state racing).
 * - A copy of a queued ticket is refused, and the queue stays whole.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <libspacersv/spacersv.h>

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define MANUAL (SRSV_CTX_MANUAL | SRSV_CTX_MANUAL_WAIT | SRSV_CTX_NO_PREEMPT)

static struct srsv_space_info snap(struct srsv_space *s)
{
	struct srsv_space_info i;

	ck_assert_int_eq(srsv_space_snapshot(s, &i, NULL, 0, NULL), 0);
	return i;
}

static uint64_t accounted(const struct srsv_space_info *i)
{
	return i->used + i->reserved + i->pinned + i->may_use + i->readonly +
	       i->zone_unusable;
}

static struct srsv_ctx *make(unsigned flags, uint64_t mover,
			     srsv_flush_fn flush)
{
	struct srsv_config cfg;
	struct srsv_ctx *c = NULL;

	ck_assert_int_eq(srsv_config_init(&cfg), 0);
	cfg.flags = flags;
	cfg.flush = flush;
	cfg.pool_bytes[SRSV_POOL_DATA] = 64 * MiB;
	cfg.pool_bytes[SRSV_POOL_METADATA] = 64 * MiB;
	cfg.pool_bytes[SRSV_POOL_SYSTEM] = 4 * MiB;
	cfg.mover_reserve_bytes[SRSV_POOL_DATA] = mover;
	ck_assert_int_eq(srsv_ctx_create(&cfg, &c), 0);
	return c;
}

/* Fill @s with @bytes of used space. */
static void fill(struct srsv_space *s, uint64_t bytes)
{
	ck_assert_int_eq(srsv_space_reserve(s, bytes, SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_space_alloc(s, bytes), 0);
	ck_assert_int_eq(srsv_space_commit_used(s, bytes), 0);
}

/* ---- the refill and lock-free writers ---- */

static struct srsv_space *race_pool;
static int race_stop, race_got;

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

static void *grabber(void *arg)
{
	(void)arg;
	while (!LOAD(race_stop)) {
		if (srsv_space_reserve(race_pool, 4 * KiB, SRSV_NO_FLUSH, 0))
			continue;
		__atomic_store_n(&race_got, 1, __ATOMIC_RELEASE);
		while (__atomic_load_n(&race_got, __ATOMIC_ACQUIRE) &&
		       !LOAD(race_stop))
			;	/* the main thread checks, then releases */
	}
	return NULL;
}

START_TEST(test_refill_never_overcommits)
{
	struct srsv_ctx *c = make(MANUAL, 4 * MiB, NULL);
	struct timespec t0, now;
	pthread_t th;
	long rounds = 0, seen = 0;

	race_pool = srsv_ctx_space(c, SRSV_POOL_DATA);
	STORE(race_stop, 0);
	STORE(race_got, 0);
	/* 60 MiB used, the reserve's 4 MiB: nothing free. */
	fill(race_pool, 60 * MiB);
	ck_assert_int_eq(pthread_create(&th, NULL, grabber, NULL), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* The mover cycles its reserve while the writer spins on the bytes
	 * each unpin frees for an instant before the refill takes them. */
	for (;; rounds++) {
		ck_assert_int_eq(srsv_space_reserve(race_pool, MiB,
						    SRSV_NO_FLUSH,
						    SRSV_RESERVE_MOVER), 0);
		ck_assert_int_eq(srsv_space_alloc(race_pool, MiB), 0);
		ck_assert_int_eq(srsv_space_commit_used(race_pool, MiB), 0);
		ck_assert_int_eq(srsv_space_pin(race_pool, MiB), 0);
		ck_assert_int_eq(srsv_space_unpin(race_pool, MiB), 0);
		if (__atomic_load_n(&race_got, __ATOMIC_ACQUIRE)) {
			struct srsv_space_info i = snap(race_pool);

			ck_assert_msg(accounted(&i) <= i.total,
				      "round %ld: %" PRIu64 " accounted in a "
				      "%" PRIu64 "-byte data pool", rounds,
				      accounted(&i), i.total);
			seen++;
			/* The writer's grant ate into the refill: the
			 * release below refills the reserve. */
			ck_assert_int_eq(srsv_space_release(race_pool, 4 * KiB),
					 0);
			__atomic_store_n(&race_got, 0, __ATOMIC_RELEASE);
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec >= 2 || rounds > 2000000)
			break;
	}
	STORE(race_stop, 1);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	if (__atomic_load_n(&race_got, __ATOMIC_ACQUIRE))
		ck_assert_int_eq(srsv_space_release(race_pool, 4 * KiB), 0);
	/* At rest: the reserve whole again, the pool exactly full. */
	{
		struct srsv_space_info i = snap(race_pool);

		ck_assert_uint_eq(i.mover_rsv_reserved, 4 * MiB);
		ck_assert_uint_eq(i.may_use, 4 * MiB);
		ck_assert_uint_eq(accounted(&i), i.total);
	}
	srsv_ctx_destroy(c);
}
END_TEST

/* ---- a waiting mover and the refills ---- */

static int grows;

static int grow_once(struct srsv_space *s, enum srsv_flush_state st,
		     uint64_t bytes, bool preempt, void *user)
{
	(void)bytes;
	(void)preempt;
	(void)user;
	if (st != SRSV_STATE_ALLOC_CHUNK_FORCE || grows++)
		return -ENOSPC;
	/* The engine allocates a chunk of 2 MiB. */
	return srsv_space_grow(s, 2 * MiB);
}

START_TEST(test_waiting_mover_served_from_reserve)
{
	struct srsv_ctx *c = make(MANUAL, 4 * MiB, grow_once);
	struct srsv_space *d = srsv_ctx_space(c, SRSV_POOL_DATA);
	struct srsv_space_info i;

	grows = 0;
	fill(d, 60 * MiB);
	/* The cleaner holds its whole reserve and wants 2 MiB more. */
	ck_assert_int_eq(srsv_space_reserve(d, 4 * MiB, SRSV_NO_FLUSH,
					    SRSV_RESERVE_MOVER), 0);
	ck_assert_int_eq(srsv_space_reserve(d, 2 * MiB, SRSV_FLUSH_DATA,
					    SRSV_RESERVE_MOVER), 0);
	/* The new chunk refilled the reserve, which served the waiter. */
	i = snap(d);
	ck_assert_int_eq(grows, 1);
	ck_assert_uint_eq(i.total, 66 * MiB);
	ck_assert_uint_eq(i.mover_rsv_reserved, 0);
	ck_assert_uint_eq(i.may_use, 6 * MiB);
	ck_assert_uint_eq(i.nr_priority_tickets, 0);
	srsv_ctx_destroy(c);
}
END_TEST

START_TEST(test_bgroup_add_refills_movers_first)
{
	struct srsv_config cfg;
	struct srsv_bgroup_config bc;
	struct srsv_ctx *c = NULL;
	struct srsv_space *d;
	struct srsv_ticket t;
	struct srsv_space_info i;

	ck_assert_int_eq(srsv_config_init(&cfg), 0);
	cfg.flags = MANUAL;
	cfg.pool_bytes[SRSV_POOL_DATA] = 64 * MiB;
	cfg.pool_bytes[SRSV_POOL_METADATA] = 64 * MiB;
	cfg.pool_bytes[SRSV_POOL_SYSTEM] = 4 * MiB;
	cfg.unallocated_bytes = 1024 * MiB;
	cfg.mover_reserve_bytes[SRSV_POOL_DATA] = 4 * MiB;
	ck_assert_int_eq(srsv_ctx_create(&cfg, &c), 0);
	ck_assert_int_eq(srsv_bgroup_config_init(&bc), 0);
	ck_assert_int_eq(srsv_bgroups_init(c, &bc), 0);
	d = srsv_ctx_space(c, SRSV_POOL_DATA);
	ck_assert_int_eq(srsv_space_reserve(d, 60 * MiB, SRSV_FLUSH_DATA, 0),
			 0);
	ck_assert_int_eq(srsv_space_reserve(d, 4 * MiB, SRSV_NO_FLUSH,
					    SRSV_RESERVE_MOVER), 0);
	ck_assert_int_eq(srsv_ticket_reserve(d, &t, 4 * MiB, SRSV_FLUSH_DATA,
					     0), -EINPROGRESS);
	/* 8 MiB come back as a block group: 4 to the reserve, then the
	 * writer's 4. */
	ck_assert_int_eq(srsv_bgroup_add(c, SRSV_POOL_DATA, 0, 8 * MiB), 0);
	i = snap(d);
	ck_assert_uint_eq(i.mover_rsv_reserved, 4 * MiB);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), 0);
	ck_assert_uint_eq(snap(d).may_use, 72 * MiB);
	srsv_ctx_destroy(c);
}
END_TEST

START_TEST(test_release_refills_movers_first)
{
	struct srsv_ctx *c = make(MANUAL, 1 * MiB, NULL);
	struct srsv_space *d = srsv_ctx_space(c, SRSV_POOL_DATA);
	struct srsv_space_info i;

	/* The cleaner takes its reserve and gives back what it did not
	 * copy; writers then take everything else. */
	ck_assert_int_eq(srsv_space_reserve(d, MiB, SRSV_NO_FLUSH,
					    SRSV_RESERVE_MOVER), 0);
	ck_assert_uint_eq(snap(d).mover_rsv_reserved, 0);
	ck_assert_int_eq(srsv_space_release(d, 512 * KiB), 0);
	ck_assert_uint_eq(snap(d).mover_rsv_reserved, 512 * KiB);
	ck_assert_int_eq(srsv_space_release(d, 512 * KiB), 0);
	fill(d, 63 * MiB);
	i = snap(d);
	ck_assert_uint_eq(i.mover_rsv_reserved, MiB);
	ck_assert_uint_eq(accounted(&i), i.total);
	/* So the cleaner still has room inside a callback. */
	ck_assert_int_eq(srsv_space_reserve(d, MiB, SRSV_NO_FLUSH,
					    SRSV_RESERVE_MOVER), 0);
	ck_assert_int_eq(srsv_space_reserve(d, 4 * KiB, SRSV_NO_FLUSH, 0),
			 -ENOSPC);
	srsv_ctx_destroy(c);
}
END_TEST

/* ---- over-releases ---- */

START_TEST(test_over_release_spares_movers_reserve)
{
	struct srsv_ctx *c = make(MANUAL, 256 * KiB, NULL);
	struct srsv_space *d = srsv_ctx_space(c, SRSV_POOL_DATA);
	struct srsv_space_stats st;
	struct srsv_space_info i;

	ck_assert_int_eq(srsv_space_reserve(d, 4 * KiB, SRSV_NO_FLUSH, 0), 0);
	/* A double release: the pool lent 4 KiB to writers. */
	ck_assert_int_eq(srsv_space_release(d, 8 * KiB), -EINVAL);
	ck_assert_int_eq(srsv_space_alloc(d, 8 * KiB), -EINVAL);
	i = snap(d);
	ck_assert_uint_eq(i.may_use, 260 * KiB);
	ck_assert_uint_eq(i.mover_rsv_reserved, 256 * KiB);
	ck_assert_int_eq(srsv_space_get_stats(d, &st), 0);
	ck_assert_uint_ge(st.refused[SRSV_REFUSED_RELEASE], 1);
	/* The writer's lawful release, then the mover's whole reserve. */
	ck_assert_int_eq(srsv_space_release(d, 4 * KiB), 0);
	ck_assert_int_eq(srsv_space_reserve(d, 256 * KiB, SRSV_NO_FLUSH,
					    SRSV_RESERVE_MOVER), 0);
	ck_assert_int_eq(srsv_space_release(d, 256 * KiB), 0);
	i = snap(d);
	ck_assert_uint_eq(i.may_use, 256 * KiB);
	ck_assert_uint_eq(i.mover_rsv_reserved, 256 * KiB);
	srsv_ctx_destroy(c);
}
END_TEST

/* ---- partial grants for movers ---- */

START_TEST(test_partial_mover_takes_pool_too)
{
	struct srsv_ctx *c = make(MANUAL, 64 * KiB, NULL);
	struct srsv_space *d = srsv_ctx_space(c, SRSV_POOL_DATA);
	uint64_t got = 0;

	fill(d, 63 * MiB);
	/* 64 KiB in the reserve, 960 KiB free in the pool. */
	ck_assert_int_eq(srsv_space_reserve_partial(d, 10 * KiB, 500 * KiB,
						    SRSV_NO_FLUSH,
						    SRSV_RESERVE_MOVER, &got),
			 0);
	ck_assert_uint_eq(got, 500 * KiB);
	ck_assert_uint_eq(snap(d).mover_rsv_reserved, 0);
	ck_assert_int_eq(srsv_space_release(d, got), 0);
	/* More than there is: all of it, reserve and pool. */
	ck_assert_int_eq(srsv_space_reserve_partial(d, 10 * KiB, 4 * MiB,
						    SRSV_NO_FLUSH,
						    SRSV_RESERVE_MOVER, &got),
			 0);
	ck_assert_uint_eq(got, MiB);
	ck_assert_int_eq(srsv_space_release(d, got), 0);
	/* Less than @min in both together: the reserve's bytes go back. */
	fill(d, 960 * KiB);
	ck_assert_int_eq(srsv_space_reserve_partial(d, 128 * KiB, 256 * KiB,
						    SRSV_NO_FLUSH,
						    SRSV_RESERVE_MOVER, &got),
			 -ENOSPC);
	ck_assert_uint_eq(got, 0);
	ck_assert_uint_eq(snap(d).mover_rsv_reserved, 64 * KiB);
	srsv_ctx_destroy(c);
}
END_TEST

/* ---- manual mode, MIXED pool ---- */

static int mixed_commits;

static int commit_unpins(struct srsv_space *s, enum srsv_flush_state st,
			 uint64_t bytes, bool preempt, void *user)
{
	(void)bytes;
	(void)preempt;
	(void)user;
	if (st == SRSV_STATE_COMMIT_TRANS) {
		uint64_t pinned = snap(s).pinned;

		mixed_commits++;
		if (pinned)
			ck_assert_int_eq(srsv_space_unpin(s, pinned), 0);
	}
	return 0;
}

START_TEST(test_manual_mixed_waiter_runs_walk)
{
	struct srsv_config cfg;
	struct srsv_ctx *c = NULL;
	struct srsv_space *m;
	struct srsv_ticket t;
	int order = _i;

	ck_assert_int_eq(srsv_config_init(&cfg), 0);
	cfg.flags = SRSV_CTX_MANUAL | SRSV_CTX_MIXED | SRSV_CTX_NO_PREEMPT;
	cfg.flush = commit_unpins;
	cfg.pool_bytes[SRSV_POOL_MIXED] = 64 * MiB;
	cfg.pool_bytes[SRSV_POOL_SYSTEM] = 4 * MiB;
	ck_assert_int_eq(srsv_ctx_create(&cfg, &c), 0);
	m = srsv_ctx_space(c, SRSV_POOL_MIXED);
	mixed_commits = 0;
	ck_assert_int_eq(srsv_space_reserve(m, 64 * MiB, SRSV_FLUSH_DATA, 0),
			 0);
	ck_assert_int_eq(srsv_space_alloc(m, 64 * MiB), 0);
	ck_assert_int_eq(srsv_space_commit_used(m, 64 * MiB), 0);
	ck_assert_int_eq(srsv_space_pin(m, 32 * MiB), 0);
	/* A polled ticket queues the walk of its mode's worker; then a
	 * blocking reserve of the other mode waits in this thread. */
	ck_assert_int_eq(srsv_ticket_reserve(m, &t, MiB, order ?
					     SRSV_FLUSH_DATA : SRSV_FLUSH_ALL,
					     0), -EINPROGRESS);
	ck_assert_int_eq(srsv_space_reserve_timeout(m, MiB, order ?
						    SRSV_FLUSH_ALL :
						    SRSV_FLUSH_DATA, 0,
						    5000ull * 1000 * 1000), 0);
	ck_assert_int_ge(mixed_commits, 1);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), 0);
	srsv_ctx_destroy(c);
}
END_TEST

/* ---- the engine's reports ---- */

START_TEST(test_reclaimable_huge_never_wraps)
{
	struct srsv_ctx *c = make(SRSV_CTX_MANUAL | SRSV_CTX_MANUAL_WAIT, 0,
				  NULL);
	struct srsv_space *d = srsv_ctx_space(c, SRSV_POOL_DATA);
	static const enum srsv_flush_state states[] = {
		SRSV_STATE_COMMIT_TRANS, SRSV_STATE_RUN_DELAYED_IPUTS,
		SRSV_STATE_DELALLOC, SRSV_STATE_DELALLOC_FULL,
		SRSV_STATE_DELAYED_ITEMS,
	};

	for (unsigned k = 0; k < sizeof(states) / sizeof(states[0]); k++) {
		ck_assert_int_eq(srsv_space_set_reclaimable(d, states[k],
							    SRSV_MAX_BYTES),
				 0);
		/* A sum that saturates, never one that wrapped. */
		ck_assert_uint_ge(snap(d).reclaimable, SRSV_MAX_BYTES);
	}
	ck_assert_uint_eq(snap(d).reclaimable, UINT64_MAX);
	for (unsigned k = 0; k < sizeof(states) / sizeof(states[0]); k++)
		ck_assert_int_eq(srsv_space_set_reclaimable(d, states[k], 0),
				 0);
	ck_assert_uint_eq(snap(d).reclaimable, 0);
	/* The debt the pacing and the flusher see came back to 0 too: a
	 * reservation of the whole pool is not paced nor refused. */
	ck_assert_int_eq(srsv_space_reserve(d, 64 * MiB, SRSV_NO_FLUSH, 0), 0);
	srsv_ctx_destroy(c);
}
END_TEST

static struct srsv_space *rec_pool;
static int rec_stop;

static void *setter(void *arg)
{
	uint64_t v = (uintptr_t)arg;

	while (!LOAD(rec_stop))
		ck_assert_int_eq(srsv_space_set_reclaimable(rec_pool,
				SRSV_STATE_COMMIT_TRANS, v), 0);
	return NULL;
}

START_TEST(test_reclaimable_racing_setters)
{
	struct srsv_ctx *c = make(SRSV_CTX_MANUAL | SRSV_CTX_MANUAL_WAIT |
				  SRSV_CTX_NO_DATA_PREEMPT, 0, NULL);
	pthread_t a, b;
	struct timespec t0, now;
	long n = 0;

	rec_pool = srsv_ctx_space(c, SRSV_POOL_DATA);
	STORE(rec_stop, 0);
	ck_assert_int_eq(pthread_create(&a, NULL, setter,
					(void *)(uintptr_t)(8 * MiB)), 0);
	ck_assert_int_eq(pthread_create(&b, NULL, setter, (void *)0), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		/* One state's figure, 0 or 8 MiB: never more. */
		ck_assert_uint_le(snap(rec_pool).reclaimable, 8 * MiB);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (++n < 2000000 && now.tv_sec - t0.tv_sec < 1);
	STORE(rec_stop, 1);
	ck_assert_int_eq(pthread_join(a, NULL), 0);
	ck_assert_int_eq(pthread_join(b, NULL), 0);
	ck_assert_int_eq(srsv_space_set_reclaimable(rec_pool,
				SRSV_STATE_COMMIT_TRANS, 3 * MiB), 0);
	ck_assert_uint_eq(snap(rec_pool).reclaimable, 3 * MiB);
	srsv_ctx_destroy(c);
}
END_TEST

/* ---- a copy of a queued ticket ---- */

START_TEST(test_ticket_copy_refused)
{
	struct srsv_ctx *c = make(MANUAL, 0, NULL);
	struct srsv_space *d = srsv_ctx_space(c, SRSV_POOL_DATA);
	struct srsv_ticket t, copy;
	struct srsv_space_info i;

	fill(d, 63 * MiB);
	ck_assert_int_eq(srsv_ticket_reserve(d, &t, 2 * MiB, SRSV_FLUSH_DATA,
					     0), -EINPROGRESS);
	/* An array of tickets resized with realloc() moves them. */
	memcpy(&copy, &t, sizeof(t));
	ck_assert_int_eq(srsv_ticket_cancel(&copy), -EINVAL);
	ck_assert_int_eq(srsv_ticket_wait(&copy, 0), -EINVAL);
	i = snap(d);
	ck_assert_uint_eq(i.nr_tickets, 1);
	/* The original is intact: cancelled once, then ended. */
	ck_assert_int_eq(srsv_ticket_cancel(&t), 0);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -ECANCELED);
	i = snap(d);
	ck_assert_uint_eq(i.nr_tickets, 0);
	ck_assert_uint_eq(i.nr_priority_tickets, 0);
	/* And the pool serves what fits. */
	ck_assert_int_eq(srsv_space_reserve(d, 512 * KiB, SRSV_NO_FLUSH, 0), 0);
	srsv_ctx_destroy(c);
}
END_TEST

static Suite *movers_suite(void)
{
	Suite *s = suite_create("movers");
	TCase *det = tcase_create("deterministic");
	TCase *thr = tcase_create("threads");

	tcase_add_test(det, test_waiting_mover_served_from_reserve);
	tcase_add_test(det, test_bgroup_add_refills_movers_first);
	tcase_add_test(det, test_release_refills_movers_first);
	tcase_add_test(det, test_over_release_spares_movers_reserve);
	tcase_add_test(det, test_partial_mover_takes_pool_too);
	tcase_add_loop_test(det, test_manual_mixed_waiter_runs_walk, 0, 2);
	tcase_add_test(det, test_reclaimable_huge_never_wraps);
	tcase_add_test(det, test_ticket_copy_refused);
	tcase_set_timeout(det, 30);
	tcase_add_test(thr, test_refill_never_overcommits);
	tcase_add_test(thr, test_reclaimable_racing_setters);
	tcase_set_timeout(thr, 60);
	suite_add_tcase(s, det);
	suite_add_tcase(s, thr);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(movers_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
