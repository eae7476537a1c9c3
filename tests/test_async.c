/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous tickets and their completion queues (async.h), the
 * library's threads (names, the thread_start hook, signal masks), fork()
 * and the SRSV_FLUSH_MAY_WAIT mode.
 *
 * Deterministic tests run in manual mode: the flush callback is the
 * engine's only source of frees, and the test frees space itself with
 * srsv_space_release() to make a grant happen at a known moment.  Threaded
 * tests bound every wait (poll() with WAIT_MS) and never assert on timing.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libspacersv/spacersv.h>

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define MANUAL (SRSV_CTX_MANUAL | SRSV_CTX_MANUAL_WAIT | SRSV_CTX_NO_PREEMPT)
#define POOL (1 * MiB)
/* Hang detector, never a timing assertion. */
#define WAIT_MS 10000

/* A flush callback that frees nothing; counts calls per state. */
static atomic_uint flush_calls[SRSV_STATE_COUNT];

static int flush_nothing(struct srsv_space *space,
			 enum srsv_flush_state state, uint64_t bytes,
			 bool for_preempt, void *user)
{
	(void)space; (void)bytes; (void)for_preempt; (void)user;
	atomic_fetch_add(&flush_calls[state], 1);
	if (state == SRSV_STATE_ALLOC_CHUNK ||
	    state == SRSV_STATE_ALLOC_CHUNK_FORCE)
		return -ENOSPC;
	return 0;
}

static struct srsv_ctx *make_ctx(unsigned flags, srsv_flush_fn fn)
{
	struct srsv_config cfg;
	struct srsv_ctx *ctx;

	srsv_config_init(&cfg);
	cfg.flags = flags;
	cfg.flush = fn;
	cfg.pool_bytes[SRSV_POOL_DATA] = POOL;
	cfg.pool_bytes[SRSV_POOL_METADATA] = POOL;
	cfg.pool_bytes[SRSV_POOL_SYSTEM] = POOL;
	cfg.unallocated_bytes = 0;
	ck_assert_int_eq(srsv_ctx_create(&cfg, &ctx), 0);
	for (int i = 0; i < SRSV_STATE_COUNT; i++)
		atomic_store(&flush_calls[i], 0);
	return ctx;
}

static struct srsv_space *meta(struct srsv_ctx *ctx)
{
	return srsv_ctx_space(ctx, SRSV_POOL_METADATA);
}

static uint64_t may_use(struct srsv_space *s)
{
	struct srsv_space_info info;

	ck_assert_int_eq(srsv_space_snapshot(s, &info, NULL, 0, NULL), 0);
	return info.may_use;
}

/* Is the fd readable within @ms? */
static bool readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r;

	do {
		r = poll(&p, 1, ms);
	} while (r < 0 && errno == EINTR);
	return r == 1 && (p.revents & POLLIN);
}

static void fill(struct srsv_space *s, uint64_t bytes)
{
	ck_assert_int_eq(srsv_space_reserve(s, bytes, SRSV_NO_FLUSH, 0), 0);
}

static int queue_async(struct srsv_async *q, struct srsv_space *s,
		       struct srsv_ticket *t, uint64_t bytes, uint64_t timeout)
{
	return srsv_ticket_reserve_async(q, s, t, bytes, SRSV_FLUSH_ALL, 0,
					 timeout, NULL, NULL);
}

/* Reap exactly one ticket and return its result. */
static int reap_one(struct srsv_async *q, struct srsv_ticket *want)
{
	struct srsv_ticket *got[4];
	int n = srsv_async_reap(q, got, 4);

	ck_assert_int_eq(n, 1);
	ck_assert_ptr_eq(got[0], want);
	return srsv_ticket_wait(got[0], 0);
}

START_TEST(test_fd_readable_exactly_on_completion)
{
	struct srsv_ctx *ctx = make_ctx(MANUAL, flush_nothing);
	struct srsv_space *md = meta(ctx);
	struct srsv_async *q;
	struct srsv_ticket t;
	struct srsv_ticket *got[2];

	ck_assert_int_eq(srsv_async_create(ctx, &q), 0);
	fill(md, POOL);
	ck_assert_int_eq(queue_async(q, md, &t, 64 * KiB, UINT64_MAX),
			 -EINPROGRESS);
	ck_assert(!readable(srsv_async_fd(q), 0));
	ck_assert_int_eq(srsv_async_reap(q, got, 2), 0);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -EINPROGRESS);
	/* Not enough yet. */
	ck_assert_int_eq(srsv_space_release(md, 32 * KiB), 0);
	ck_assert(!readable(srsv_async_fd(q), 0));
	/* Now it fits: granted inside the release, fd readable. */
	ck_assert_int_eq(srsv_space_release(md, 32 * KiB), 0);
	ck_assert(readable(srsv_async_fd(q), 0));
	ck_assert_uint_eq(may_use(md), POOL);
	ck_assert_int_eq(reap_one(q, &t), 0);
	ck_assert(!readable(srsv_async_fd(q), 0));
	ck_assert_int_eq(srsv_async_reap(q, got, 2), 0);
	/* Reaped: a plain finished ticket, cancel says so. */
	ck_assert_int_eq(srsv_ticket_cancel(&t), -EALREADY);
	ck_assert_int_eq(srsv_ticket_wait(&t, UINT64_MAX), 0);
	ck_assert_int_eq(srsv_space_release(md, POOL), 0);
	ck_assert_int_eq(srsv_async_destroy(q), 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

START_TEST(test_granted_at_once_posts_nothing)
{
	struct srsv_ctx *ctx = make_ctx(MANUAL, flush_nothing);
	struct srsv_space *md = meta(ctx);
	struct srsv_async *q;
	struct srsv_ticket t;

	ck_assert_int_eq(srsv_async_create(ctx, &q), 0);
	ck_assert_int_eq(queue_async(q, md, &t, 64 * KiB, UINT64_MAX), 0);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), 0);
	ck_assert(!readable(srsv_async_fd(q), 0));
	ck_assert_int_eq(srsv_async_reap(q, NULL, 0), 0);
	ck_assert_uint_eq(may_use(md), 64 * KiB);
	/* Too large for the pool ever: -ENOSPC at once, nothing posted. */
	ck_assert_int_eq(queue_async(q, md, &t, 2 * POOL, UINT64_MAX),
			 -ENOSPC);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -ENOSPC);
	ck_assert(!readable(srsv_async_fd(q), 0));
	ck_assert_int_eq(srsv_async_destroy(q), 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* Blocking-style tickets and async ones share one FIFO. */
START_TEST(test_fifo_across_async_and_blocking)
{
	struct srsv_ctx *ctx = make_ctx(MANUAL, flush_nothing);
	struct srsv_space *md = meta(ctx);
	struct srsv_async *q;
	struct srsv_ticket a, b, c, d;
	struct srsv_ticket_info ti[4];
	struct srsv_space_info info;
	size_t nr;

	ck_assert_int_eq(srsv_async_create(ctx, &q), 0);
	fill(md, POOL);
	ck_assert_int_eq(srsv_ticket_reserve(md, &a, 16 * KiB,
					     SRSV_FLUSH_ALL, 0), -EINPROGRESS);
	ck_assert_int_eq(queue_async(q, md, &b, 64 * KiB, UINT64_MAX),
			 -EINPROGRESS);
	ck_assert_int_eq(srsv_ticket_reserve(md, &c, 16 * KiB,
					     SRSV_FLUSH_ALL, 0), -EINPROGRESS);
	ck_assert_int_eq(queue_async(q, md, &d, 16 * KiB, UINT64_MAX),
			 -EINPROGRESS);
	ck_assert_int_eq(srsv_space_snapshot(md, &info, ti, 4, &nr), 0);
	ck_assert_uint_eq(nr, 4);
	ck_assert_uint_eq(ti[1].bytes, 64 * KiB);

	/* 32 KiB: a (16) goes, b (64) does not fit, c and d wait behind b
	 * although they would fit. */
	ck_assert_int_eq(srsv_space_release(md, 32 * KiB), 0);
	ck_assert_int_eq(srsv_ticket_wait(&a, 0), 0);
	ck_assert_int_eq(srsv_ticket_wait(&c, 0), -EINPROGRESS);
	ck_assert(!readable(srsv_async_fd(q), 0));
	/* 48 more: b (64 of 16 + 48) is granted, then c and d wait. */
	ck_assert_int_eq(srsv_space_release(md, 48 * KiB), 0);
	ck_assert(readable(srsv_async_fd(q), 0));
	ck_assert_int_eq(reap_one(q, &b), 0);
	ck_assert_int_eq(srsv_ticket_wait(&c, 0), -EINPROGRESS);
	/* 32: c then d, in order. */
	ck_assert_int_eq(srsv_space_release(md, 32 * KiB), 0);
	ck_assert_int_eq(srsv_ticket_wait(&c, UINT64_MAX), 0);
	ck_assert_int_eq(reap_one(q, &d), 0);
	ck_assert_uint_eq(may_use(md), POOL);
	ck_assert_int_eq(srsv_async_destroy(q), 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* The same with real blocking waiters: threads in srsv_space_reserve(). */
struct blocker {
	struct srsv_space *s;
	uint64_t bytes;
	atomic_int ret;
	atomic_bool done;
	pthread_t th;
};

static void *blocker_main(void *arg)
{
	struct blocker *b = arg;

	atomic_store(&b->ret, srsv_space_reserve(b->s, b->bytes,
						 SRSV_FLUSH_ALL, 0));
	atomic_store(&b->done, true);
	return NULL;
}

static void wait_queued(struct srsv_space *s, unsigned nr)
{
	for (int i = 0; i < WAIT_MS; i++) {
		struct srsv_space_info info;

		ck_assert_int_eq(srsv_space_snapshot(s, &info, NULL, 0, NULL),
				 0);
		if (info.nr_tickets == nr)
			return;
		usleep(1000);
	}
	ck_abort_msg("tickets never queued");
}

static bool wait_done(struct blocker *b)
{
	for (int i = 0; i < WAIT_MS; i++) {
		if (atomic_load(&b->done))
			return true;
		usleep(1000);
	}
	return false;
}

START_TEST(test_fifo_with_blocked_threads)
{
	struct srsv_ctx *ctx = make_ctx(MANUAL, flush_nothing);
	struct srsv_space *md = meta(ctx);
	struct blocker a = { .s = md, .bytes = 64 * KiB };
	struct blocker c = { .s = md, .bytes = 16 * KiB };
	struct srsv_async *q;
	struct srsv_ticket b;

	ck_assert_int_eq(srsv_async_create(ctx, &q), 0);
	fill(md, POOL);
	ck_assert_int_eq(pthread_create(&a.th, NULL, blocker_main, &a), 0);
	wait_queued(md, 1);
	ck_assert_int_eq(queue_async(q, md, &b, 16 * KiB, UINT64_MAX),
			 -EINPROGRESS);
	ck_assert_int_eq(pthread_create(&c.th, NULL, blocker_main, &c), 0);
	wait_queued(md, 3);
	/* 32 KiB free: the async ticket and the second thread would fit,
	 * but the blocked head comes first. */
	ck_assert_int_eq(srsv_space_release(md, 32 * KiB), 0);
	ck_assert(!readable(srsv_async_fd(q), 0));
	ck_assert(!atomic_load(&a.done) && !atomic_load(&c.done));
	/* 40 more: the head (64) goes, then the async ticket (16) cannot. */
	ck_assert_int_eq(srsv_space_release(md, 40 * KiB), 0);
	ck_assert(wait_done(&a));
	ck_assert_int_eq(atomic_load(&a.ret), 0);
	ck_assert(!readable(srsv_async_fd(q), 0));
	/* 8 (16 free): the async ticket, not the thread behind it. */
	ck_assert_int_eq(srsv_space_release(md, 8 * KiB), 0);
	ck_assert(readable(srsv_async_fd(q), WAIT_MS));
	ck_assert_int_eq(reap_one(q, &b), 0);
	ck_assert(!atomic_load(&c.done));
	ck_assert_int_eq(srsv_space_release(md, 16 * KiB), 0);
	ck_assert(wait_done(&c));
	ck_assert_int_eq(atomic_load(&c.ret), 0);
	pthread_join(a.th, NULL);
	pthread_join(c.th, NULL);
	ck_assert_uint_eq(may_use(md), POOL);
	ck_assert_int_eq(srsv_async_destroy(q), 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* A queued async ticket holds back NO_FLUSH and normal reservations,
 * and priority tickets pass it, as for a blocking one. */
START_TEST(test_priority_rules_hold)
{
	struct srsv_ctx *ctx = make_ctx(MANUAL, flush_nothing);
	struct srsv_space *md = meta(ctx);
	struct srsv_async *q;
	struct srsv_ticket a, p;

	ck_assert_int_eq(srsv_async_create(ctx, &q), 0);
	fill(md, POOL - 32 * KiB);
	ck_assert_int_eq(queue_async(q, md, &a, 64 * KiB, UINT64_MAX),
			 -EINPROGRESS);
	/* 32 KiB are free, but NO_FLUSH must not jump the queue. */
	ck_assert_int_eq(srsv_space_reserve(md, 4 * KiB, SRSV_NO_FLUSH, 0),
			 -ENOSPC);
	ck_assert_int_eq(srsv_space_reserve(md, 4 * KiB, SRSV_FLUSH_ALL,
					    SRSV_RESERVE_NOWAIT), -EAGAIN);
	/* A priority reservation only respects priority tickets. */
	ck_assert_int_eq(srsv_ticket_reserve(md, &p, 16 * KiB,
					     SRSV_FLUSH_LIMIT, 0), 0);
	ck_assert_int_eq(srsv_space_release(md, 16 * KiB), 0);
	ck_assert_int_eq(srsv_async_cancel(q, &a), 0);
	ck_assert_int_eq(reap_one(q, &a), -ECANCELED);
	ck_assert_uint_eq(may_use(md), POOL - 32 * KiB);
	ck_assert_int_eq(srsv_async_destroy(q), 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

START_TEST(test_cancel_async)
{
	struct srsv_ctx *ctx = make_ctx(MANUAL, flush_nothing);
	struct srsv_space *md = meta(ctx);
	struct srsv_async *q;
	struct srsv_ticket big, small;

	ck_assert_int_eq(srsv_async_create(ctx, &q), 0);
	fill(md, POOL - 32 * KiB);
	ck_assert_int_eq(queue_async(q, md, &big, 64 * KiB, UINT64_MAX),
			 -EINPROGRESS);
	ck_assert_int_eq(queue_async(q, md, &small, 16 * KiB, UINT64_MAX),
			 -EINPROGRESS);
	ck_assert_int_eq(srsv_async_destroy(q), -EBUSY);
	/* Cancelling the head lets the small one in behind it. */
	ck_assert_int_eq(srsv_ticket_cancel(&big), 0);
	ck_assert(readable(srsv_async_fd(q), 0));
	{
		struct srsv_ticket *got[4];

		ck_assert_int_eq(srsv_async_reap(q, got, 4), 2);
		ck_assert_ptr_eq(got[0], &big);
		ck_assert_ptr_eq(got[1], &small);
		ck_assert_int_eq(srsv_ticket_wait(&big, 0), -ECANCELED);
		ck_assert_int_eq(srsv_ticket_wait(&small, 0), 0);
	}
	ck_assert_uint_eq(may_use(md), POOL - 16 * KiB);
	/* Cancelling an ended ticket changes nothing. */
	ck_assert_int_eq(srsv_ticket_cancel(&big), -EALREADY);
	ck_assert_int_eq(srsv_async_cancel(q, &small), -EALREADY);
	ck_assert_uint_eq(may_use(md), POOL - 16 * KiB);
	ck_assert_int_eq(srsv_async_destroy(q), 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

START_TEST(test_timeout_manual)
{
	struct srsv_ctx *ctx = make_ctx(MANUAL, flush_nothing);
	struct srsv_space *md = meta(ctx);
	struct srsv_async *q;
	struct srsv_ticket t, u;
	const struct timespec ms2 = { 0, 2000000 };

	ck_assert_int_eq(srsv_async_create(ctx, &q), 0);
	fill(md, POOL - 32 * KiB);
	ck_assert_int_eq(queue_async(q, md, &t, 64 * KiB, 1000000),
			 -EINPROGRESS);
	ck_assert_int_eq(queue_async(q, md, &u, 16 * KiB, UINT64_MAX),
			 -EINPROGRESS);
	nanosleep(&ms2, NULL);
	ck_assert(!readable(srsv_async_fd(q), 0));
	/* Manual mode: srsv_ctx_run_pending() expires it. */
	ck_assert_int_ge(srsv_ctx_run_pending(ctx), 1);
	ck_assert(readable(srsv_async_fd(q), 0));
	{
		struct srsv_ticket *got[4];

		ck_assert_int_eq(srsv_async_reap(q, got, 4), 2);
		ck_assert_ptr_eq(got[0], &t);
		ck_assert_int_eq(srsv_ticket_wait(&t, 0), -ETIMEDOUT);
		/* The small one behind was granted when the head left. */
		ck_assert_ptr_eq(got[1], &u);
		ck_assert_int_eq(srsv_ticket_wait(&u, 0), 0);
	}
	ck_assert_uint_eq(may_use(md), POOL - 16 * KiB);
	ck_assert_int_eq(srsv_async_destroy(q), 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* The timer thread expires an async ticket; the loop only polls. */
START_TEST(test_timeout_threaded)
{
	struct srsv_ctx *ctx = make_ctx(SRSV_CTX_NO_PREEMPT, flush_nothing);
	struct srsv_space *md = meta(ctx);
	struct srsv_async *q;
	struct srsv_ticket t, never;

	ck_assert_int_eq(srsv_async_create(ctx, &q), 0);
	fill(md, POOL);
	ck_assert_int_eq(queue_async(q, md, &never, 8 * KiB, UINT64_MAX),
			 -EINPROGRESS);
	ck_assert_int_eq(srsv_ticket_reserve_async(q, md, &t, 8 * KiB,
				SRSV_FLUSH_ALL, 0, 20 * 1000000ull, NULL,
				NULL), -EINPROGRESS);
	/* The flusher fails tickets after its commit cycles, so either may
	 * end first; the timed one ends with -ETIMEDOUT or -ENOSPC. */
	for (int seen = 0; seen < 2;) {
		struct srsv_ticket *got[2];
		int n;

		ck_assert(readable(srsv_async_fd(q), WAIT_MS));
		n = srsv_async_reap(q, got, 2);
		for (int i = 0; i < n; i++) {
			int r = srsv_ticket_wait(got[i], 0);

			ck_assert_msg(r == -ETIMEDOUT || r == -ENOSPC,
				      "ticket ended with %d", r);
		}
		seen += n;
	}
	ck_assert_uint_eq(may_use(md), POOL);
	ck_assert_int_eq(srsv_async_destroy(q), 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* A flush callback that never returns until told: keeps tickets queued. */
static atomic_bool gate_open;

static int flush_gate(struct srsv_space *space, enum srsv_flush_state state,
		      uint64_t bytes, bool for_preempt, void *user)
{
	const struct timespec ms1 = { 0, 1000000 };

	(void)space; (void)state; (void)bytes; (void)for_preempt; (void)user;
	while (!atomic_load(&gate_open))
		nanosleep(&ms1, NULL);
	return state == SRSV_STATE_ALLOC_CHUNK ||
	       state == SRSV_STATE_ALLOC_CHUNK_FORCE ? -ENOSPC : 0;
}

static void *open_gate_later(void *arg)
{
	const struct timespec ms20 = { 0, 20000000 };

	(void)arg;
	nanosleep(&ms20, NULL);
	atomic_store(&gate_open, true);
	return NULL;
}

/* An earlier deadline queued after a later one wakes the timer; the
 * flusher is held in the gate, so only the timer can end a ticket. */
START_TEST(test_timeout_earlier_deadline)
{
	struct srsv_ctx *ctx;
	struct srsv_space *md;
	struct srsv_async *q;
	struct srsv_ticket late, early;

	atomic_store(&gate_open, false);
	ctx = make_ctx(SRSV_CTX_NO_PREEMPT, flush_gate);
	md = meta(ctx);
	ck_assert_int_eq(srsv_async_create(ctx, &q), 0);
	fill(md, POOL);
	ck_assert_int_eq(srsv_ticket_reserve_async(q, md, &late, 4 * KiB,
				SRSV_FLUSH_ALL, 0, 60ull * 1000000000u, NULL,
				NULL), -EINPROGRESS);
	ck_assert_int_eq(srsv_ticket_reserve_async(q, md, &early, 4 * KiB,
				SRSV_FLUSH_ALL, 0, 2 * 1000000ull, NULL, NULL),
			 -EINPROGRESS);
	ck_assert(readable(srsv_async_fd(q), WAIT_MS));
	ck_assert_int_eq(reap_one(q, &early), -ETIMEDOUT);
	ck_assert_int_eq(srsv_ticket_wait(&late, 0), -EINPROGRESS);
	ck_assert_int_eq(srsv_async_cancel(q, &late), 0);
	ck_assert_int_eq(reap_one(q, &late), -ECANCELED);
	ck_assert_uint_eq(may_use(md), POOL);
	atomic_store(&gate_open, true);
	ck_assert_int_eq(srsv_async_destroy(q), 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

START_TEST(test_timeout_during_flush)
{
	struct srsv_ctx *ctx;
	struct srsv_space *md;
	struct srsv_async *q;
	struct srsv_ticket t;
	pthread_t th;

	atomic_store(&gate_open, false);
	ctx = make_ctx(SRSV_CTX_NO_PREEMPT, flush_gate);
	md = meta(ctx);
	ck_assert_int_eq(srsv_async_create(ctx, &q), 0);
	fill(md, POOL);
	/* The worker is stuck in the callback: only the timer can end it. */
	ck_assert_int_eq(srsv_ticket_reserve_async(q, md, &t, 8 * KiB,
				SRSV_FLUSH_ALL, 0, 5 * 1000000ull, NULL,
				NULL), -EINPROGRESS);
	ck_assert(readable(srsv_async_fd(q), WAIT_MS));
	ck_assert_int_eq(reap_one(q, &t), -ETIMEDOUT);
	ck_assert_uint_eq(may_use(md), POOL);
	ck_assert_int_eq(pthread_create(&th, NULL, open_gate_later, NULL), 0);
	ck_assert_int_eq(srsv_async_destroy(q), 0);
	srsv_ctx_destroy(ctx);
	pthread_join(th, NULL);
}
END_TEST

START_TEST(test_shutdown_completes_all)
{
	struct srsv_ctx *ctx;
	struct srsv_space *md, *data;
	struct srsv_async *q1, *q2;
	struct srsv_ticket t[6];
	struct srsv_ticket *got[8];
	pthread_t th;
	int n;

	atomic_store(&gate_open, false);
	ctx = make_ctx(SRSV_CTX_NO_PREEMPT, flush_gate);
	md = meta(ctx);
	data = srsv_ctx_space(ctx, SRSV_POOL_DATA);
	ck_assert_int_eq(srsv_async_create(ctx, &q1), 0);
	ck_assert_int_eq(srsv_async_create(ctx, &q2), 0);
	fill(md, POOL);
	ck_assert_int_eq(srsv_space_reserve(data, POOL, SRSV_NO_FLUSH, 0), 0);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(queue_async(q1, md, &t[i], 4 * KiB,
					     UINT64_MAX), -EINPROGRESS);
		ck_assert_int_eq(srsv_ticket_reserve_async(q2, data, &t[3 + i],
					4 * KiB, SRSV_FLUSH_MAY_WAIT, 0,
					UINT64_MAX, NULL, NULL),
				 -EINPROGRESS);
	}
	ck_assert(!readable(srsv_async_fd(q1), 0));
	/* Shutdown waits for the workers, stuck in the gate: open it soon. */
	ck_assert_int_eq(pthread_create(&th, NULL, open_gate_later, NULL), 0);
	ck_assert_int_eq(srsv_ctx_shutdown(ctx), 0);
	pthread_join(th, NULL);
	ck_assert(readable(srsv_async_fd(q1), 0));
	ck_assert(readable(srsv_async_fd(q2), 0));
	n = srsv_async_reap(q1, got, 8);
	ck_assert_int_eq(n, 3);
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(srsv_ticket_wait(got[i], 0), -ESHUTDOWN);
	/* Room for one at a time: the fd stays readable for the rest. */
	for (int i = 0; i < 3; i++) {
		ck_assert(readable(srsv_async_fd(q2), 0));
		ck_assert_int_eq(srsv_async_reap(q2, got, 1), 1);
		ck_assert_int_eq(srsv_ticket_wait(got[0], 0), -ESHUTDOWN);
	}
	ck_assert(!readable(srsv_async_fd(q2), 0));
	ck_assert_uint_eq(may_use(md), POOL);
	/* After shutdown: nothing new waits, no new queue. */
	ck_assert_int_eq(queue_async(q1, md, &t[0], 4 * KiB, UINT64_MAX),
			 -ESHUTDOWN);
	ck_assert_int_eq(srsv_async_create(ctx, &q2) == 0 ? 0 : -1, -1);
	ck_assert_int_eq(srsv_async_destroy(q1), 0);
	ck_assert_int_eq(srsv_async_destroy(q2), 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* srsv_ctx_set_error() ends queued async tickets with its error. */
START_TEST(test_set_error_posts)
{
	struct srsv_ctx *ctx = make_ctx(MANUAL, flush_nothing);
	struct srsv_space *md = meta(ctx);
	struct srsv_async *q;
	struct srsv_ticket t;

	ck_assert_int_eq(srsv_async_create(ctx, &q), 0);
	fill(md, POOL);
	ck_assert_int_eq(queue_async(q, md, &t, 4 * KiB, UINT64_MAX),
			 -EINPROGRESS);
	ck_assert_int_eq(srsv_ctx_set_error(ctx, -EIO), 0);
	ck_assert(readable(srsv_async_fd(q), 0));
	ck_assert_int_eq(reap_one(q, &t), -EIO);
	/* Reservations that would wait now fail at once, nothing posted. */
	ck_assert_int_eq(queue_async(q, md, &t, 4 * KiB, UINT64_MAX), -EIO);
	ck_assert(!readable(srsv_async_fd(q), 0));
	ck_assert_uint_eq(may_use(md), POOL);
	ck_assert_int_eq(srsv_async_destroy(q), 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* The callback runs in the reaping thread, no library lock held: it can
 * reserve (even flushing modes) and release. */
struct cb_state {
	pthread_t thread;
	int calls, last;
	struct srsv_space *s;
	int reserve_ret;
};

static void cb(struct srsv_ticket *t, int result, void *arg)
{
	struct cb_state *st = arg;

	(void)t;
	ck_assert(pthread_equal(st->thread, pthread_self()));
	st->calls++;
	st->last = result;
	/* A flushing reservation that fits: no -EDEADLK, no deadlock. */
	st->reserve_ret = srsv_space_reserve(st->s, 4 * KiB, SRSV_FLUSH_ALL,
					     0);
	if (!st->reserve_ret)
		ck_assert_int_eq(srsv_space_release(st->s, 4 * KiB), 0);
	if (!result)
		ck_assert_int_eq(srsv_space_release(st->s, 16 * KiB), 0);
}

START_TEST(test_callback_in_reaper)
{
	struct srsv_ctx *ctx = make_ctx(MANUAL, flush_nothing);
	struct srsv_space *md = meta(ctx);
	struct srsv_async *q;
	struct srsv_ticket t;
	struct cb_state st = { .thread = pthread_self(), .s = md };

	ck_assert_int_eq(srsv_async_create(ctx, &q), 0);
	fill(md, POOL);
	ck_assert_int_eq(srsv_ticket_reserve_async(q, md, &t, 16 * KiB,
				SRSV_FLUSH_ALL, 0, UINT64_MAX, cb, &st),
			 -EINPROGRESS);
	ck_assert_int_eq(srsv_space_release(md, 32 * KiB), 0);
	ck_assert_int_eq(st.calls, 0);	/* not at the grant */
	ck_assert_int_eq(srsv_async_reap(q, NULL, 0), 1);
	ck_assert_int_eq(st.calls, 1);
	ck_assert_int_eq(st.last, 0);
	ck_assert_int_eq(st.reserve_ret, 0);
	ck_assert_uint_eq(may_use(md), POOL - 32 * KiB);
	ck_assert_int_eq(srsv_async_destroy(q), 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* FLUSH_LIMIT: the priority walk a blocking caller runs is run by the
 * pool's async worker (here srsv_ctx_run_pending()). */
static int flush_free_at_alloc(struct srsv_space *space,
			       enum srsv_flush_state state, uint64_t bytes,
			       bool for_preempt, void *user)
{
	(void)bytes; (void)for_preempt; (void)user;
	atomic_fetch_add(&flush_calls[state], 1);
	if (state == SRSV_STATE_ALLOC_CHUNK &&
	    atomic_load(&flush_calls[state]) == 1) {
		return srsv_space_grow(space, 32 * KiB);
	}
	return 0;
}

START_TEST(test_priority_async_walk)
{
	struct srsv_ctx *ctx = make_ctx(MANUAL, flush_free_at_alloc);
	struct srsv_space *md = meta(ctx);
	struct srsv_async *q;
	struct srsv_ticket t, n;
	struct srsv_ticket *got[2];

	ck_assert_int_eq(srsv_async_create(ctx, &q), 0);
	fill(md, POOL);
	ck_assert_int_eq(queue_async(q, md, &n, 32 * KiB, UINT64_MAX),
			 -EINPROGRESS);
	/* A deadline far away: the walk carries it, never reaches it. */
	ck_assert_int_eq(srsv_ticket_reserve_async(q, md, &t, 32 * KiB,
				SRSV_FLUSH_LIMIT, 0, 3600ull * 1000000000u,
				NULL, NULL), -EINPROGRESS);
	ck_assert_uint_eq(atomic_load(&flush_calls[SRSV_STATE_ALLOC_CHUNK]),
			  0);
	ck_assert_int_ge(srsv_ctx_run_pending(ctx), 1);
	/* The priority walk ran (DELAYED_ITEMS_NR .. ALLOC_CHUNK) first and
	 * its ticket got the grown room before the normal one. */
	ck_assert_uint_ge(atomic_load(&flush_calls[SRSV_STATE_ALLOC_CHUNK]),
			  1);
	/* Then the normal ticket's own walk freed nothing more: it failed
	 * after its commit cycles, in the same srsv_ctx_run_pending(). */
	ck_assert_int_eq(srsv_async_reap(q, got, 2), 2);
	ck_assert_ptr_eq(got[0], &t);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), 0);
	ck_assert_ptr_eq(got[1], &n);
	ck_assert_int_eq(srsv_ticket_wait(&n, 0), -ENOSPC);
	ck_assert_uint_eq(may_use(md), POOL + 32 * KiB);
	ck_assert_int_eq(srsv_async_destroy(q), 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

START_TEST(test_may_wait_mode)
{
	struct srsv_ctx *ctx = make_ctx(MANUAL, flush_nothing);
	struct srsv_space *md = meta(ctx);
	struct srsv_space *data = srsv_ctx_space(ctx, SRSV_POOL_DATA);
	struct srsv_space *sys = srsv_ctx_space(ctx, SRSV_POOL_SYSTEM);
	struct srsv_space *pools[3] = { data, md, sys };
	const int want[3] = { SRSV_FLUSH_DATA, SRSV_FLUSH_ALL,
			      SRSV_FLUSH_ALL };

	ck_assert_str_eq(srsv_flush_name(SRSV_FLUSH_MAY_WAIT),
			 "FLUSH_MAY_WAIT");
	for (int i = 0; i < 3; i++) {
		struct srsv_ticket t;
		struct srsv_ticket_info ti;
		struct srsv_space_info info;
		size_t nr;

		/* Fits: plain success, whatever the pool kind. */
		ck_assert_int_eq(srsv_space_reserve(pools[i], 4 * KiB,
					SRSV_FLUSH_MAY_WAIT, 0), 0);
		ck_assert_int_eq(srsv_space_release(pools[i], 4 * KiB), 0);
		fill(pools[i], POOL);
		ck_assert_int_eq(srsv_ticket_reserve(pools[i], &t, 4 * KiB,
					SRSV_FLUSH_MAY_WAIT, 0), -EINPROGRESS);
		ck_assert_int_eq(srsv_space_snapshot(pools[i], &info, &ti, 1,
						     &nr), 0);
		ck_assert_uint_eq(nr, 1);
		ck_assert_int_eq(ti.mode, want[i]);
		ck_assert(!ti.priority);
		ck_assert_int_eq(srsv_ticket_cancel(&t), 0);
		ck_assert_int_eq(srsv_ticket_wait(&t, UINT64_MAX), -ECANCELED);
		/* NOWAIT with it: -EAGAIN, never blocks. */
		ck_assert_int_eq(srsv_space_reserve(pools[i], 4 * KiB,
					SRSV_FLUSH_MAY_WAIT,
					SRSV_RESERVE_NOWAIT), -EAGAIN);
		ck_assert_int_eq(srsv_space_reserve_timeout(pools[i], 4 * KiB,
					SRSV_FLUSH_MAY_WAIT, 0, 1000000),
				 -ETIMEDOUT);
		ck_assert_int_eq(srsv_space_release(pools[i], POOL), 0);
	}
	/* Still refused: values that are no mode at all. */
	ck_assert_int_eq(srsv_space_reserve(md, 4 * KiB,
				(enum srsv_flush)(SRSV_FLUSH_MAY_WAIT + 1), 0),
			 -EINVAL);
	srsv_ctx_destroy(ctx);
}
END_TEST

/*
 * A ticket in flight is refused with -EBUSY and left as it is, by both
 * ticket APIs: queued, posted and not yet reaped (asynchronous), ended
 * and not yet waited for (blocking).  Before the fix the second start
 * relinked a queued node and the next snapshot spun for ever holding
 * the pool lock; Check's timeout bounds this test if that comes back.
 */
static atomic_int cb_calls;

static void count_cb(struct srsv_ticket *ticket, int result, void *arg)
{
	(void)ticket; (void)result; (void)arg;
	atomic_fetch_add(&cb_calls, 1);
}

START_TEST(test_ticket_in_flight_refused)
{
	struct srsv_ctx *ctx = make_ctx(MANUAL, flush_nothing);
	struct srsv_space *md = meta(ctx);
	struct srsv_space_info info;
	struct srsv_async *q;
	struct srsv_ticket t, b;

	ck_assert_int_eq(srsv_async_create(ctx, &q), 0);
	fill(md, POOL);
	/* Asynchronous, queued: neither API may start it again. */
	ck_assert_int_eq(queue_async(q, md, &t, 64 * KiB, UINT64_MAX),
			 -EINPROGRESS);
	ck_assert_int_eq(queue_async(q, md, &t, 64 * KiB, UINT64_MAX), -EBUSY);
	ck_assert_int_eq(srsv_ticket_reserve(md, &t, 64 * KiB, SRSV_FLUSH_ALL,
					     0), -EBUSY);
	ck_assert_int_eq(srsv_ticket_reserve(md, &t, 64 * KiB, SRSV_FLUSH_ALL,
					     SRSV_RESERVE_NOWAIT), -EBUSY);
	ck_assert_int_eq(srsv_space_snapshot(md, &info, NULL, 0, NULL), 0);
	ck_assert_uint_eq(info.nr_tickets, 1);
	ck_assert_uint_eq(info.reclaim_size, 64 * KiB);
	/* Posted (granted), not reaped: still the queue's. */
	ck_assert_int_eq(srsv_space_release(md, 64 * KiB), 0);
	ck_assert_int_eq(queue_async(q, md, &t, 4 * KiB, UINT64_MAX), -EBUSY);
	ck_assert_int_eq(reap_one(q, &t), 0);
	/* Reaped: the caller's again. */
	ck_assert_int_eq(srsv_space_release(md, 64 * KiB), 0);
	ck_assert_int_eq(queue_async(q, md, &t, 64 * KiB, UINT64_MAX), 0);

	/* Blocking (the pool is full again), queued; then ended by a
	 * cancel and not waited for. */
	ck_assert_int_eq(srsv_ticket_reserve(md, &b, 64 * KiB, SRSV_FLUSH_ALL,
					     0), -EINPROGRESS);
	ck_assert_int_eq(srsv_ticket_reserve(md, &b, 64 * KiB, SRSV_FLUSH_ALL,
					     0), -EBUSY);
	ck_assert_int_eq(queue_async(q, md, &b, 64 * KiB, UINT64_MAX), -EBUSY);
	ck_assert_int_eq(srsv_ticket_cancel(&b), 0);
	ck_assert_int_eq(srsv_ticket_reserve(md, &b, 64 * KiB, SRSV_FLUSH_ALL,
					     0), -EBUSY);
	ck_assert_int_eq(srsv_ticket_wait(&b, UINT64_MAX), -ECANCELED);
	/* Its end known: it may start again. */
	ck_assert_int_eq(srsv_ticket_reserve(md, &b, 64 * KiB, SRSV_FLUSH_ALL,
					     0), -EINPROGRESS);
	ck_assert_int_eq(srsv_ticket_cancel(&b), 0);
	ck_assert_int_eq(srsv_ticket_wait(&b, 0), -ECANCELED);
	ck_assert_int_eq(srsv_space_snapshot(md, &info, NULL, 0, NULL), 0);
	ck_assert_uint_eq(info.nr_tickets, 0);
	ck_assert_uint_eq(info.may_use, POOL);
	ck_assert_int_eq(srsv_async_destroy(q), 0);
	ck_assert_int_eq(srsv_ctx_destroy(ctx), 0);
}
END_TEST

/*
 * A timeout of 0 means one thing in both calls: never wait and never
 * queue.  0 when the bytes can be had at once; -ETIMEDOUT when they would
 * have to be waited for, whether a flusher runs meanwhile or not (before,
 * the blocking call queued a ticket and took it back, and a walk that ran
 * in between failed it with -ENOSPC; the asynchronous call refused 0 as
 * bad input).  No ticket is queued or ended, no callback is called.
 */
static void timeout_zero_rounds(unsigned flags)
{
	struct srsv_ctx *ctx = make_ctx(flags, flush_nothing);
	struct srsv_space *md = meta(ctx);
	struct srsv_space_info before, info;
	struct srsv_async *q;
	struct srsv_ticket t;

	ck_assert_int_eq(srsv_async_create(ctx, &q), 0);
	atomic_store(&cb_calls, 0);
	for (int i = 0; i < 20; i++) {
		/* It fits: 0 from both, nothing posted. */
		ck_assert_int_eq(srsv_space_reserve_timeout(md, 4 * KiB,
				SRSV_FLUSH_ALL, 0, 0), 0);
		ck_assert_int_eq(srsv_ticket_reserve_async(q, md, &t, 4 * KiB,
				SRSV_FLUSH_ALL, 0, 0, count_cb, NULL), 0);
		ck_assert_int_eq(srsv_space_release(md, 8 * KiB), 0);
		/* It would wait: -ETIMEDOUT from both. */
		fill(md, POOL);
		ck_assert_int_eq(srsv_space_snapshot(md, &before, NULL, 0,
						     NULL), 0);
		ck_assert_int_eq(srsv_space_reserve_timeout(md, 4 * KiB,
				SRSV_FLUSH_ALL, 0, 0), -ETIMEDOUT);
		ck_assert_int_eq(srsv_ticket_reserve_async(q, md, &t, 4 * KiB,
				SRSV_FLUSH_ALL, 0, 0, count_cb, NULL),
				 -ETIMEDOUT);
		ck_assert_int_eq(srsv_space_snapshot(md, &info, NULL, 0, NULL),
				 0);
		ck_assert_uint_eq(info.nr_tickets, 0);
		ck_assert_uint_eq(info.may_use, POOL);
		ck_assert_uint_eq(info.tickets_failed, before.tickets_failed);
		ck_assert_uint_eq(info.tickets_granted, before.tickets_granted);
		ck_assert_int_eq(srsv_space_release(md, POOL), 0);
	}
	ck_assert_int_eq(srsv_async_reap(q, NULL, 0), 0);
	ck_assert_int_eq(atomic_load(&cb_calls), 0);
	ck_assert_int_eq(srsv_async_destroy(q), 0);
	ck_assert_int_eq(srsv_ctx_destroy(ctx), 0);
}

START_TEST(test_timeout_zero_one_meaning)
{
	timeout_zero_rounds(MANUAL);
	/* With the library's flushers running. */
	timeout_zero_rounds(0);
}
END_TEST

START_TEST(test_bad_input)
{
	struct srsv_ctx *ctx = make_ctx(MANUAL, flush_nothing);
	struct srsv_ctx *other = make_ctx(MANUAL, flush_nothing);
	struct srsv_space *md = meta(ctx);
	struct srsv_async *q, *q2, *qo;
	struct srsv_ticket t, u, done;
	struct srsv_ticket *got[1];

	ck_assert_int_eq(srsv_async_create(NULL, &q), -EINVAL);
	ck_assert_int_eq(srsv_async_create(ctx, NULL), -EINVAL);
	ck_assert_int_eq(srsv_async_create(ctx, &q), 0);
	ck_assert_int_eq(srsv_async_create(ctx, &q2), 0);
	ck_assert_int_eq(srsv_async_create(other, &qo), 0);
	ck_assert_int_eq(srsv_async_fd(NULL), -EINVAL);
	ck_assert_int_ge(srsv_async_fd(q), 0);
	fill(md, POOL);

	/* Arguments, each refused with nothing queued or charged. */
	ck_assert_int_eq(srsv_ticket_reserve_async(NULL, md, &t, 4 * KiB,
				SRSV_FLUSH_ALL, 0, UINT64_MAX, NULL, NULL),
			 -EINVAL);
	ck_assert_int_eq(srsv_ticket_reserve_async(q, NULL, &t, 4 * KiB,
				SRSV_FLUSH_ALL, 0, UINT64_MAX, NULL, NULL),
			 -EINVAL);
	ck_assert_int_eq(srsv_ticket_reserve_async(q, md, NULL, 4 * KiB,
				SRSV_FLUSH_ALL, 0, UINT64_MAX, NULL, NULL),
			 -EINVAL);
	/* A pool of another ctx. */
	ck_assert_int_eq(srsv_ticket_reserve_async(qo, md, &t, 4 * KiB,
				SRSV_FLUSH_ALL, 0, UINT64_MAX, NULL, NULL),
			 -EINVAL);
	ck_assert_int_eq(srsv_ticket_reserve_async(q, md, &t, 4 * KiB,
				SRSV_FLUSH_ALL, SRSV_RESERVE_NOWAIT,
				UINT64_MAX, NULL, NULL), -EINVAL);
	ck_assert_int_eq(srsv_ticket_reserve_async(q, md, &t, 0,
				SRSV_FLUSH_ALL, 0, UINT64_MAX, NULL, NULL),
			 -EINVAL);
	ck_assert_int_eq(srsv_ticket_reserve_async(q, md, &t, 4 * KiB,
				SRSV_FLUSH_DATA, 0, UINT64_MAX, NULL, NULL),
			 -EINVAL);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -EINVAL);
	{
		struct srsv_space_info info;

		ck_assert_int_eq(srsv_space_snapshot(md, &info, NULL, 0,
						     NULL), 0);
		ck_assert_uint_eq(info.nr_tickets, 0);
		ck_assert_uint_eq(info.may_use, POOL);
	}

	ck_assert_int_eq(queue_async(q, md, &u, 4 * KiB, UINT64_MAX),
			 -EINPROGRESS);
	/* Sleeping on a ticket its queue owns: refused. */
	ck_assert_int_eq(srsv_ticket_wait(&u, 1000), -EINVAL);
	ck_assert_int_eq(srsv_ticket_wait(&u, UINT64_MAX), -EINVAL);
	/* Cancel through another queue (of this ctx or another one). */
	ck_assert_int_eq(srsv_async_cancel(q2, &u), -EINVAL);
	ck_assert_int_eq(srsv_async_cancel(qo, &u), -EINVAL);
	ck_assert_int_eq(srsv_async_cancel(NULL, &u), -EINVAL);
	ck_assert_int_eq(srsv_async_cancel(q, NULL), -EINVAL);
	ck_assert_int_eq(srsv_ticket_wait(&u, 0), -EINPROGRESS);
	/* A blocking-style ticket is no queue's. */
	ck_assert_int_eq(srsv_ticket_reserve(md, &done, 4 * KiB,
					     SRSV_FLUSH_ALL, 0), -EINPROGRESS);
	ck_assert_int_eq(srsv_async_cancel(q, &done), -EINVAL);
	ck_assert_int_eq(srsv_ticket_cancel(&done), 0);
	ck_assert_int_eq(srsv_ticket_wait(&done, UINT64_MAX), -ECANCELED);
	/* A finished ticket. */
	ck_assert_int_eq(srsv_async_cancel(q, &done), -EALREADY);

	ck_assert_int_eq(srsv_async_reap(NULL, got, 1), -EINVAL);
	ck_assert_int_eq(srsv_async_reap(q, NULL, 1), -EINVAL);
	ck_assert_int_eq(srsv_async_destroy(q), -EBUSY);
	ck_assert_int_eq(srsv_async_cancel(q, &u), 0);
	ck_assert_int_eq(srsv_async_cancel(q, &u), -EALREADY);
	ck_assert_int_eq(reap_one(q, &u), -ECANCELED);
	ck_assert_int_eq(srsv_async_cancel(q, &u), -EALREADY);
	ck_assert_uint_eq(may_use(md), POOL);
	ck_assert_int_eq(srsv_async_destroy(NULL), 0);
	ck_assert_int_eq(srsv_async_destroy(q), 0);
	ck_assert_int_eq(srsv_async_destroy(q2), 0);
	ck_assert_int_eq(srsv_async_destroy(qo), 0);
	srsv_ctx_destroy(other);
	srsv_ctx_destroy(ctx);
}
END_TEST

/*
 * No byte lost: a loop thread keeps async tickets queued and reaps them,
 * a granter releases what the loop holds, a canceller cancels at random.
 * Every grant is released exactly once; at the end may_use is what the
 * test itself holds.  Bounded by an operation count.
 */
#define RACE_TICKETS 32
#define RACE_ROUNDS 3000

struct race {
	struct srsv_ctx *ctx;
	struct srsv_space *md;
	struct srsv_async *q;
	struct srsv_ticket t[RACE_TICKETS];
	atomic_bool queued[RACE_TICKETS];
	/* Held by the loop while it (re)starts a ticket, by the canceller
	 * while it cancels one: the test's own rule for ticket memory. */
	pthread_mutex_t slot[RACE_TICKETS];
	atomic_bool stop;
	atomic_uint_fast64_t held;	/* granted to the loop, not released */
	uint64_t granted, failed;
};

static void *race_canceller(void *arg)
{
	struct race *r = arg;
	unsigned seed = 7;

	while (!atomic_load(&r->stop)) {
		unsigned i = (unsigned)rand_r(&seed) % RACE_TICKETS;

		pthread_mutex_lock(&r->slot[i]);
		if (atomic_load(&r->queued[i]))
			srsv_ticket_cancel(&r->t[i]);
		pthread_mutex_unlock(&r->slot[i]);
		sched_yield();
	}
	return NULL;
}

static void *race_releaser(void *arg)
{
	struct race *r = arg;

	while (!atomic_load(&r->stop)) {
		uint64_t h = atomic_load(&r->held);

		if (h >= 8 * KiB &&
		    atomic_compare_exchange_weak(&r->held, &h, h - 8 * KiB))
			ck_assert_int_eq(srsv_space_release(r->md, 8 * KiB),
					 0);
		else
			sched_yield();
	}
	return NULL;
}

START_TEST(test_race_grants_cancels)
{
	static struct race r;
	pthread_t th[2];
	unsigned rounds = 0;
	int inflight = 0;

	memset(&r, 0, sizeof(r));
	for (int i = 0; i < RACE_TICKETS; i++)
		pthread_mutex_init(&r.slot[i], NULL);
	r.ctx = make_ctx(SRSV_CTX_NO_PREEMPT, flush_nothing);
	r.md = meta(r.ctx);
	ck_assert_int_eq(srsv_async_create(r.ctx, &r.q), 0);
	fill(r.md, POOL - 64 * KiB);
	ck_assert_int_eq(pthread_create(&th[0], NULL, race_canceller, &r), 0);
	ck_assert_int_eq(pthread_create(&th[1], NULL, race_releaser, &r), 0);
	for (int i = 0; i < RACE_TICKETS; i++) {
		int ret;

		pthread_mutex_lock(&r.slot[i]);
		ret = queue_async(r.q, r.md, &r.t[i], 8 * KiB,
				  (uint64_t)(i % 4 + 1) * 1000000);
		atomic_store(&r.queued[i], ret == -EINPROGRESS);
		pthread_mutex_unlock(&r.slot[i]);
		if (ret == -EINPROGRESS) {
			inflight++;
			continue;
		}
		ck_assert_int_eq(ret, 0);
		r.granted++;
		atomic_fetch_add(&r.held, 8 * KiB);
		i--;	/* the slot is free again: queue another */
	}
	while (rounds < RACE_ROUNDS) {
		struct srsv_ticket *got[RACE_TICKETS];
		int n;

		if (!readable(srsv_async_fd(r.q), WAIT_MS))
			ck_abort_msg("no completion within %d ms", WAIT_MS);
		n = srsv_async_reap(r.q, got, RACE_TICKETS);
		for (int k = 0; k < n; k++) {
			unsigned i = (unsigned)(got[k] - r.t);
			int res = srsv_ticket_wait(got[k], 0);

			ck_assert_uint_lt(i, RACE_TICKETS);
			if (res == 0) {
				r.granted++;
				atomic_fetch_add(&r.held, 8 * KiB);
			} else {
				ck_assert_msg(res == -ECANCELED ||
					      res == -ETIMEDOUT ||
					      res == -ENOSPC, "result %d", res);
				r.failed++;
			}
			rounds++;
			/* Queue it again (the canceller may cancel any). */
			pthread_mutex_lock(&r.slot[i]);
			for (;;) {
				int ret = queue_async(r.q, r.md, &r.t[i],
						8 * KiB,
						(uint64_t)(i % 4 + 1) * 1000000);

				if (ret == -EINPROGRESS)
					break;
				ck_assert_int_eq(ret, 0);
				r.granted++;
				atomic_fetch_add(&r.held, 8 * KiB);
			}
			pthread_mutex_unlock(&r.slot[i]);
		}
	}
	/* Drain: cancel everything queued, reap until all are back. */
	for (int i = 0; i < RACE_TICKETS; i++) {
		pthread_mutex_lock(&r.slot[i]);
		srsv_ticket_cancel(&r.t[i]);
		pthread_mutex_unlock(&r.slot[i]);
	}
	while (inflight > 0) {
		struct srsv_ticket *got[RACE_TICKETS];
		int n;

		ck_assert(readable(srsv_async_fd(r.q), WAIT_MS));
		n = srsv_async_reap(r.q, got, RACE_TICKETS);
		for (int k = 0; k < n; k++) {
			if (srsv_ticket_wait(got[k], 0) == 0) {
				r.granted++;
				atomic_fetch_add(&r.held, 8 * KiB);
			}
			pthread_mutex_lock(&r.slot[got[k] - r.t]);
			atomic_store(&r.queued[got[k] - r.t], false);
			pthread_mutex_unlock(&r.slot[got[k] - r.t]);
		}
		inflight -= n;
	}
	atomic_store(&r.stop, true);
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	ck_assert_uint_eq(may_use(r.md),
			  POOL - 64 * KiB + atomic_load(&r.held));
	ck_assert_int_eq(srsv_space_release(r.md, atomic_load(&r.held)), 0);
	ck_assert_uint_eq(may_use(r.md), POOL - 64 * KiB);
	ck_assert_uint_gt(r.granted, 0);
	ck_assert_int_eq(srsv_async_destroy(r.q), 0);
	srsv_ctx_destroy(r.ctx);
}
END_TEST

/* The delalloc form: quota and data held, metadata waits on the queue. */
START_TEST(test_delalloc_async)
{
	struct srsv_ctx *ctx = make_ctx(MANUAL, flush_nothing);
	struct srsv_space *md = meta(ctx);
	struct srsv_space *data = srsv_ctx_space(ctx, SRSV_POOL_DATA);
	struct srsv_quota *quota;
	struct srsv_quota_info qi;
	struct srsv_delalloc_resv resv, r2;
	struct srsv_async *q;
	struct srsv_ticket t;
	uint64_t cost;

	ck_assert_int_eq(srsv_async_create(ctx, &q), 0);
	ck_assert_int_eq(srsv_quota_create(ctx, 1, SRSV_QUOTA_NO_LIMIT,
					   &quota), 0);
	ck_assert_int_eq(srsv_delalloc_meta_cost(ctx, 4 * KiB, NULL, &cost),
			 0);
	/* Room: reserved at once, nothing posted. */
	ck_assert_int_eq(srsv_delalloc_reserve_async(q, quota, 4 * KiB, &t,
						     &resv), 0);
	ck_assert_int_eq(srsv_delalloc_release(&resv), 0);
	ck_assert(!readable(srsv_async_fd(q), 0));

	fill(md, POOL);
	ck_assert_int_eq(srsv_delalloc_reserve_async(q, quota, 4 * KiB, &t,
						     &resv), -EINPROGRESS);
	ck_assert_uint_eq(may_use(data), 4 * KiB);
	ck_assert_int_eq(srsv_quota_snapshot(quota, &qi), 0);
	ck_assert_uint_eq(qi.reserved[SRSV_QUOTA_DATA], 4 * KiB);
	/* Pending: not releasable, not completable before the reap. */
	ck_assert_int_eq(srsv_delalloc_release(&resv), -EINVAL);
	ck_assert_int_eq(srsv_delalloc_complete(&resv, &t), -EINVAL);
	ck_assert_int_eq(srsv_delalloc_complete(NULL, &t), -EINVAL);
	ck_assert_int_eq(srsv_space_release(md, cost), 0);
	ck_assert_int_eq(srsv_delalloc_complete(&resv, &t), -EINVAL);
	ck_assert_int_eq(reap_one(q, &t), 0);
	ck_assert_int_eq(srsv_delalloc_complete(&resv, &t), 0);
	ck_assert_uint_eq(resv.meta_bytes, cost);
	/* Complete once only. */
	ck_assert_int_eq(srsv_delalloc_complete(&resv, &t), -EINVAL);
	ck_assert_int_eq(srsv_delalloc_finish(&resv, SRSV_DELALLOC_META_ALL),
			 0);

	/* A cancelled one gives quota and data back. */
	ck_assert_int_eq(srsv_delalloc_reserve_async(q, quota, 4 * KiB, &t,
						     &r2), -EINPROGRESS);
	ck_assert_int_eq(srsv_async_cancel(q, &t), 0);
	ck_assert_int_eq(reap_one(q, &t), -ECANCELED);
	ck_assert_int_eq(srsv_delalloc_complete(&r2, &t), -ECANCELED);
	ck_assert_uint_eq(may_use(data), 0);
	ck_assert_int_eq(srsv_quota_snapshot(quota, &qi), 0);
	ck_assert_uint_eq(qi.reserved[SRSV_QUOTA_DATA], 0);
	ck_assert_uint_eq(qi.reserved[SRSV_QUOTA_META_PREALLOC], 0);

	/* Data cannot be had at once: -EAGAIN, nothing held (4 KiB of the
	 * data pool are the finished write's). */
	fill(data, POOL - 4 * KiB);
	ck_assert_int_eq(srsv_delalloc_reserve_async(q, quota, 4 * KiB, &t,
						     &r2), -EAGAIN);
	ck_assert_uint_eq(may_use(data), POOL - 4 * KiB);
	ck_assert_int_eq(srsv_quota_snapshot(quota, &qi), 0);
	ck_assert_uint_eq(qi.reserved[SRSV_QUOTA_DATA], 0);
	ck_assert_int_eq(srsv_delalloc_reserve_async(NULL, quota, 4 * KiB, &t,
						     &r2), -EINVAL);
	ck_assert_int_eq(srsv_delalloc_reserve_async(q, quota, 0, &t, &r2),
			 -EINVAL);
	ck_assert_int_eq(srsv_async_destroy(q), 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

/* ---- threads: names, the hook, signal masks ---- */

static pthread_mutex_t hook_lock = PTHREAD_MUTEX_INITIALIZER;
static char hook_names[8][16];
static char hook_real[8][16];
static int hook_calls;
static int hook_unblocked;	/* hooks that found a signal not blocked */
static void *hook_user;

static void thread_hook(const char *name, void *user)
{
	sigset_t set;
	char real[16] = "";

	pthread_getname_np(pthread_self(), real, sizeof(real));
	pthread_sigmask(SIG_BLOCK, NULL, &set);
	pthread_mutex_lock(&hook_lock);
	if (hook_calls < 8) {
		snprintf(hook_names[hook_calls], 16, "%s", name);
		snprintf(hook_real[hook_calls], 16, "%s", real);
	}
	if (!sigismember(&set, SIGINT) || !sigismember(&set, SIGTERM))
		hook_unblocked++;
	hook_user = user;
	hook_calls++;
	pthread_mutex_unlock(&hook_lock);
}

static bool has_name(const char *n)
{
	for (int i = 0; i < hook_calls && i < 8; i++)
		if (!strcmp(hook_names[i], n) && !strcmp(hook_real[i], n))
			return true;
	return false;
}

START_TEST(test_thread_hook_and_names)
{
	struct srsv_config cfg;
	struct srsv_ctx *ctx;
	struct srsv_async *q;
	int marker;

	srsv_config_init(&cfg);
	cfg.flush = flush_nothing;
	cfg.user = &marker;
	cfg.thread_start = thread_hook;
	cfg.pool_bytes[SRSV_POOL_METADATA] = POOL;
	ck_assert_int_eq(srsv_ctx_create(&cfg, &ctx), 0);
	ck_assert_int_eq(srsv_async_create(ctx, &q), 0);
	/* Each thread runs the hook before it does anything else. */
	for (int i = 0; i < WAIT_MS; i++) {
		int n;

		pthread_mutex_lock(&hook_lock);
		n = hook_calls;
		pthread_mutex_unlock(&hook_lock);
		if (n >= 4)
			break;
		usleep(1000);
	}
	ck_assert_int_eq(srsv_async_destroy(q), 0);
	srsv_ctx_destroy(ctx);
	pthread_mutex_lock(&hook_lock);
	/* At least the four threads of today (a new one must be named too). */
	ck_assert_int_ge(hook_calls, 4);
	ck_assert(has_name("srsv-flush-md"));
	ck_assert(has_name("srsv-flush-data"));
	ck_assert(has_name("srsv-preempt"));
	ck_assert(has_name("srsv-timer"));
	ck_assert_int_eq(hook_unblocked, 0);
	ck_assert_ptr_eq(hook_user, &marker);
	pthread_mutex_unlock(&hook_lock);
}
END_TEST

/* A caller built before thread_start: its config ends at cpu_cache_bytes;
 * what follows in memory is not read. */
START_TEST(test_config_without_hook_field)
{
	union {
		struct srsv_config cfg;
		unsigned char raw[sizeof(struct srsv_config) + 64];
	} u;
	size_t old = offsetof(struct srsv_config, thread_start);
	struct srsv_ctx *ctx;

	memset(&u, 0xa5, sizeof(u));
	ck_assert_int_eq(srsv_config_init_sized(&u.cfg, old), 0);
	ck_assert_uint_eq(u.cfg.size, old);
	/* init wrote only the old layout: the garbage after it is intact */
	ck_assert_uint_eq(u.raw[old], 0xa5);
	u.cfg.flags = SRSV_CTX_NO_PREEMPT;
	u.cfg.pool_bytes[SRSV_POOL_METADATA] = POOL;
	pthread_mutex_lock(&hook_lock);
	hook_calls = 0;
	pthread_mutex_unlock(&hook_lock);
	ck_assert_int_eq(srsv_ctx_create(&u.cfg, &ctx), 0);
	srsv_ctx_destroy(ctx);
	pthread_mutex_lock(&hook_lock);
	ck_assert_int_eq(hook_calls, 0);
	pthread_mutex_unlock(&hook_lock);
	/* A full-size config gets the field zeroed by init. */
	ck_assert_int_eq(srsv_config_init(&u.cfg), 0);
	ck_assert_ptr_null(u.cfg.thread_start);
}
END_TEST

/* ---- fork() ---- */

static int child_body(struct srsv_ctx *parent)
{
	struct srsv_space *md = meta(parent);
	struct srsv_ctx *mine;
	struct srsv_config cfg;
	struct srsv_async *q;

	/* The parent's ctx: nothing that waits, no shutdown, no queue. */
	if (srsv_space_reserve(md, 64 * KiB, SRSV_FLUSH_ALL, 0) != -ESHUTDOWN)
		return 10;
	if (srsv_ctx_shutdown(parent) != -ECHILD)
		return 11;
	if (srsv_async_create(parent, &q) != -ESHUTDOWN)
		return 12;
	/* Destroy frees the copy without joining or locking. */
	srsv_ctx_destroy(parent);
	/* A ctx of its own works as anywhere (manual: no thread, as TSan
	 * does not follow threads started after a multi-threaded fork). */
	srsv_config_init(&cfg);
	cfg.flags = SRSV_CTX_MANUAL;
	cfg.pool_bytes[SRSV_POOL_METADATA] = POOL;
	if (srsv_ctx_create(&cfg, &mine))
		return 13;
	if (srsv_space_reserve(meta(mine), 4 * KiB, SRSV_FLUSH_ALL, 0) ||
	    srsv_space_release(meta(mine), 4 * KiB))
		return 14;
	srsv_ctx_destroy(mine);
	return 0;
}

START_TEST(test_fork_child)
{
	struct srsv_ctx *ctx = make_ctx(SRSV_CTX_NO_PREEMPT, flush_nothing);
	struct srsv_space *md = meta(ctx);
	struct srsv_async *q;
	int status = -1;
	pid_t pid;

	ck_assert_int_eq(srsv_async_create(ctx, &q), 0);
	fill(md, POOL);
	/* Let the threads the ctx and the queue just started finish their
	 * start-up before the fork.  Once in CI, under clang 14's ASan, the
	 * child never exited; the likely cause (not confirmed) is a thread
	 * starting up inside ASan's allocator at the fork, whose lock the
	 * child then waits for in its first malloc or free.  The
	 * library takes none of the parent ctx's locks in a child (it sees
	 * the fork generation its atfork handler bumps). */
	usleep(100 * 1000);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(child_body(ctx));
	for (int i = 0; i < WAIT_MS; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		usleep(1000);
	}
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child status %d", status);
	/* The parent's ctx is untouched by the child. */
	ck_assert_uint_eq(may_use(md), POOL);
	ck_assert_int_eq(srsv_space_release(md, POOL), 0);
	ck_assert_int_eq(srsv_space_reserve(md, 4 * KiB, SRSV_FLUSH_ALL, 0),
			 0);
	ck_assert_int_eq(srsv_async_destroy(q), 0);
	srsv_ctx_destroy(ctx);
}
END_TEST

static Suite *async_suite(void)
{
	Suite *s = suite_create("async");
	TCase *c = tcase_create("async");

	tcase_set_timeout(c, 60);
	tcase_add_test(c, test_fd_readable_exactly_on_completion);
	tcase_add_test(c, test_granted_at_once_posts_nothing);
	tcase_add_test(c, test_fifo_across_async_and_blocking);
	tcase_add_test(c, test_fifo_with_blocked_threads);
	tcase_add_test(c, test_priority_rules_hold);
	tcase_add_test(c, test_cancel_async);
	tcase_add_test(c, test_timeout_manual);
	tcase_add_test(c, test_timeout_threaded);
	tcase_add_test(c, test_timeout_during_flush);
	tcase_add_test(c, test_timeout_earlier_deadline);
	tcase_add_test(c, test_shutdown_completes_all);
	tcase_add_test(c, test_callback_in_reaper);
	tcase_add_test(c, test_set_error_posts);
	tcase_add_test(c, test_priority_async_walk);
	tcase_add_test(c, test_may_wait_mode);
	tcase_add_test(c, test_bad_input);
	tcase_add_test(c, test_ticket_in_flight_refused);
	tcase_add_test(c, test_timeout_zero_one_meaning);
	tcase_add_test(c, test_race_grants_cancels);
	tcase_add_test(c, test_delalloc_async);
	suite_add_tcase(s, c);
	c = tcase_create("threads");
	tcase_add_test(c, test_thread_hook_and_names);
	tcase_add_test(c, test_config_without_hook_field);
	tcase_add_test(c, test_fork_child);
	suite_add_tcase(s, c);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(async_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
