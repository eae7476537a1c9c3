/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous tickets: waiting for space without a thread.
 *
 * WHY
 *
 * An engine built on an event loop (io_uring, epoll, libuv) serves
 * thousands of writes from one thread.  A write whose NOWAIT reservation
 * says -EAGAIN has two choices without this file: poll its ticket
 * (srsv_ticket_wait() with timeout 0, at what period?) or hand the write
 * to a thread that blocks.  The second is what io_uring does with btrfs
 * before and after IOCB_NOWAIT support (io-wq; Stefan Roesch's series
 * "btrfs: enable nowait async buffered writes", Linux 6.1, only avoids
 * the punt when nothing would block): a thread per waiting write, its stack,
 * two context switches per write, and a latency tail made of the
 * scheduler's decisions.  No file system offers a pollable reservation
 * queue; the kernel's answer for pollable waits in general is the eventfd
 * behind an fd the loop already watches (io_uring's own
 * IORING_REGISTER_EVENTFD, aio's IOCB_FLAG_RESFD).
 *
 * WHAT
 *
 * An asynchronous ticket is a ticket like any other: it is queued on the
 * same FIFO (normal modes) or priority FIFO (priority modes) of its pool,
 * granted by srsv__try_grant_tickets() in the same order, flushed for by
 * the same workers, failed by the same commit-cycle rule, shutdown and
 * srsv_ctx_set_error().  The only difference is its end: instead of
 * signalling a waiter's condition variable, srsv__ticket_end() posts it to
 * its completion queue.  So strict FIFO between asynchronous and blocking
 * waiters holds by construction, not by a second mechanism.
 *
 * WHERE THE FD LIVES: one eventfd per completion queue
 *
 * A queue is created by the caller, normally one per event-loop thread,
 * and any number of tickets of any pool of its ctx complete on it.  The
 * choices the issue offered, weighed:
 * - per ticket: an fd per waiting write (two system calls to create and
 *   close, a POLL_ADD each, the process's fd limit as a cap on waiting
 *   writes), and readiness that says nothing a list could not say;
 * - per pool: a loop that reserves in two pools (data and metadata, as
 *   srsv_delalloc_reserve() does) would watch two fds, and two loops
 *   sharing one pool would steal each other's completions;
 * - per ctx: the same theft between loop threads;
 * - per queue (chosen): one fd per loop, watched once (a multishot
 *   IORING_OP_POLL_ADD, one epoll registration), and a completion list
 *   only that loop reaps, in completion order.  A ctx with one loop has
 *   one queue: the per-ctx design is the special case.
 * The fd is made readable only by the push that finds the list empty, so
 * a burst of N grants costs one write(2) on the eventfd, not N; the reap
 * reads it (clears readiness) before it takes the list, so a ticket that
 * ends during the reap makes it readable again and nothing is lost.
 *
 * THE CALLBACK
 *
 * A ticket may carry a callback.  It runs in srsv_async_reap(), in the
 * reaping thread (the loop's), with no library lock held, after the
 * library let go of the ticket: it may free the ticket or reserve again.
 * Running it where the ticket ends would put user code under the pool
 * lock (the grant happens inside a release or a flush callback of some
 * other thread), which the issue rules out and which would make every
 * release in the engine a place where arbitrary code runs.
 *
 * TIMEOUTS AND PRIORITY FLUSHING WITHOUT A WAITER
 *
 * A blocking waiter enforces its own deadline (a timed condition wait)
 * and, for a priority mode, runs the flush states in its own thread.  An
 * asynchronous ticket has no thread, so:
 * - deadlines: one timer thread per ctx ("srsv-timer", started with the
 *   first queue) sleeps until the earliest deadline of any queued
 *   asynchronous ticket and removes the expired ones under the pool lock,
 *   ending them with -ETIMEDOUT exactly as a waiter's timeout does (then
 *   trying to grant the tickets behind them).  One thread however many
 *   tickets wait; in manual mode srsv_ctx_run_pending() expires them.
 * - priority walks: the pool's async worker (the one that serves normal
 *   tickets) runs the priority state array for each asynchronous priority
 *   ticket, before its normal walk, as the blocking caller would have.
 *   While a walk runs on a ticket the ticket is held: if it ends meanwhile
 *   (granted, cancelled, shut down) it is posted when the walk lets go,
 *   so the owner never frees memory the walk still reads.
 *
 * LIFETIME
 *
 * The caller owns the ticket memory from srsv_ticket_reserve_async() until
 * srsv_async_reap() returns it.  Posting is the library's last touch: the
 * push is a compare-and-swap on the queue's list head, after which the
 * reaper may reuse the ticket.  Shutdown ends every ticket (-ESHUTDOWN),
 * which posts them all: a loop sees its fd readable and reaps.
 *
 * LAYER
 *
 * Above the reserve path (an asynchronous ticket is queued by
 * srsv__ticket_start()) and the walks (its priority walk), below the
 * delalloc helper.  The lower layers reach an asynchronous ticket only
 * through the hooks it carries (async_ops below: the tickets layer posts
 * its end, the reserve path reports it queued); its priority walks run
 * as part of the async workers' job, which ctx.c composes.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "async.h"
#include "flush.h"
#include "reserve.h"
#include "stats.h"
#include "tickets.h"
#include "trace.h"
#include "workers.h"

struct srsv_async {
	struct srsv_ctx *ctx;
	int efd;
	/* Ended tickets, newest first (Treiber stack through node.next). */
	volatile AO_t head;
	/* Reaper-owned: taken off head, oldest first, not yet returned. */
	struct srsv__ticket *local;
	/* Tickets queued or posted and not yet reaped. */
	volatile AO_t attached;
};

/* The ctx's timer (not in manual mode); under ctx->lock to create. */
struct srsv__async_ctx {
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* CLOCK_MONOTONIC */
	bool kicked;			/* a deadline may have moved earlier */
	bool stop;
	uint64_t next;			/* the deadline the timer sleeps to */
	bool started;
	pthread_t thread;
	struct srsv__thread start;
};

static struct srsv__ticket *ticket_impl(struct srsv_ticket *t)
{
	return (struct srsv__ticket *)(void *)t;
}

/* ---- posting (pool lock held) ---- */

/* Ticket @t ended (state DONE, not held); pool lock held.  The last
 * touch of @t: its owner may reap and free it at once.  The tickets
 * layer's hook (struct srsv__ticket_ops). */
static void async_post(struct srsv__ticket *t)
{
	struct srsv_async *q = t->async;
	static const uint64_t one = 1;
	AO_t old;

	do {
		old = AO_load(&q->head);
		t->node.next = (struct srsv__list *)(void *)old;
	} while (!AO_compare_and_swap_full(&q->head, old, (AO_t)t));
	/*
	 * @t may be reaped from here on.  Only the push onto an empty list
	 * makes the fd readable; a write to an eventfd never blocks (it
	 * could only fail at a count of 2^64 - 2).
	 */
	if (!old && write(q->efd, &one, sizeof(one)) < 0) {
		/* Not reachable with a non-blocking eventfd; nothing to do. */
	}
}

/*
 * A ticket with @deadline was queued: wake the timer only if it sleeps
 * past it, so N tickets queued with later deadlines cost no wake-up (and
 * no scan of the queues) each.
 */
static void timer_kick(struct srsv_ctx *ctx, uint64_t deadline)
{
	struct srsv__async_ctx *a = ctx->async;

	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	if (deadline < a->next) {
		a->next = deadline;
		a->kicked = true;
		pthread_cond_signal(&a->cond);
	}
	pthread_mutex_unlock(&a->lock);
}

static enum srsv__work pool_worker(const struct srsv_space *s)
{
	return s->is_data && !s->is_metadata ? SRSV__WORK_ASYNC_DATA :
					       SRSV__WORK_ASYNC_METADATA;
}

/* Ticket @t stays queued; pool lock held.  The tickets layer's hook. */
static void async_queued(struct srsv_space *s, struct srsv__ticket *t)
{
	srsv__assert_held(&s->lock);
	t->async_hold = false;
	/* Lock order: pool lock, then the timer's own mutex. */
	if (t->deadline_ns != UINT64_MAX)
		timer_kick(s->ctx, t->deadline_ns);
	if (t->priority) {
		t->async_walk = true;
		srsv__worker_kick(s->ctx, pool_worker(s), s->kind);
	}
}

/* The hooks an asynchronous ticket carries (internal.h). */
static const struct srsv__ticket_ops async_ops = {
	.queued = async_queued,
	.post = async_post,
};

/* ---- priority walks (a worker, no lock held) ---- */

static struct srsv__ticket *next_walk(struct srsv_space *s)
{
	struct srsv__list *n;

	for (n = s->priority_tickets.next; n != &s->priority_tickets;
	     n = n->next) {
		struct srsv__ticket *t = srsv__container_of(n,
					struct srsv__ticket, node);

		if (t->async && t->async_walk)
			return t;
	}
	return NULL;
}

int srsv__async_walks(struct srsv_space *s)
{
	struct srsv__ticket *t;
	int ran = 0;

	srsv__lock(&s->lock);
	while ((t = next_walk(s))) {
		struct timespec ts, *deadline = NULL;

		t->async_walk = false;
		t->async_hold = true;
		if (t->deadline_ns != UINT64_MAX) {
			ts.tv_sec = (time_t)(t->deadline_ns / 1000000000u);
			ts.tv_nsec = (long)(t->deadline_ns % 1000000000u);
			deadline = &ts;
		}
		srsv__unlock(&s->lock);
		srsv__priority_reclaim(s, t, deadline);
		srsv__lock(&s->lock);
		t->async_hold = false;
		if (AO_load(&t->state) == SRSV__TICKET_DONE)
			async_post(t);
		ran++;
	}
	srsv__unlock(&s->lock);
	return ran;
}

/* ---- timeouts ---- */

/* Expire @s's due tickets; *@next = earliest remaining deadline. */
static int expire_pool(struct srsv_space *s, uint64_t *next)
{
	struct srsv__list *heads[2] = { &s->priority_tickets, &s->tickets };
	uint64_t now;
	int n = 0;

	srsv__lock(&s->lock);
	now = srsv__now_ns();
	for (int i = 0; i < 2; i++) {
		struct srsv__list *p = heads[i]->next;

		while (p != heads[i]) {
			struct srsv__ticket *t = srsv__container_of(p,
						struct srsv__ticket, node);

			p = p->next;
			if (!t->async || t->deadline_ns == UINT64_MAX)
				continue;
			if (t->deadline_ns > now) {
				*next = srsv__min(*next, t->deadline_ns);
				continue;
			}
			srsv__ticket_remove(s, t);
			srsv__ticket_end(s, t, -ETIMEDOUT);
			n++;
		}
	}
	/* Large tickets leaving may let smaller ones behind them in. */
	if (n)
		srsv__try_grant_tickets(s);
	srsv__unlock(&s->lock);
	return n;
}

static int expire_all(struct srsv_ctx *ctx, uint64_t *next)
{
	int n = 0;

	*next = UINT64_MAX;
	for (int i = 0; i < SRSV_POOL_COUNT; i++)
		if (ctx->spaces[i])
			n += expire_pool(ctx->spaces[i], next);
	return n;
}

int srsv__async_expire(struct srsv_ctx *ctx)
{
	uint64_t next;

	return expire_all(ctx, &next);
}

static void *timer_main(void *arg)
{
	struct srsv_ctx *ctx = arg;
	struct srsv__async_ctx *a = ctx->async;
	uint64_t next;

	pthread_mutex_lock(&a->lock);
	while (!a->stop) {
		if (!a->kicked) {
			struct timespec ts;

			ts.tv_sec = (time_t)(a->next / 1000000000u);
			ts.tv_nsec = (long)(a->next % 1000000000u);
			if (a->next == UINT64_MAX)
				pthread_cond_wait(&a->cond, &a->lock);
			else
				pthread_cond_timedwait(&a->cond, &a->lock,
						       &ts);
			if (a->stop)
				break;
		}
		a->kicked = false;
		/*
		 * Awake: until the scan is done, any new deadline kicks
		 * (next "none"); a kick during the scan leaves kicked set,
		 * and the loop scans again before it sleeps.
		 */
		a->next = UINT64_MAX;
		/* Never a pool lock under ours (srsv__async_queued()). */
		pthread_mutex_unlock(&a->lock);
		expire_all(ctx, &next);
		pthread_mutex_lock(&a->lock);
		if (!a->kicked)
			a->next = next;
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

/* The ctx's async state, created with the first queue; ctx->lock held. */
static int async_ctx_get(struct srsv_ctx *ctx)
{
	struct srsv__async_ctx *a;
	int ret;

	if (ctx->async)
		return 0;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	ret = srsv__cond_init(&a->cond);
	if (ret) {
		free(a);
		return ret;
	}
	pthread_mutex_init(&a->lock, NULL);
	a->next = UINT64_MAX;
	ctx->async = a;
	if (ctx->cfg.flags & SRSV_CTX_MANUAL)
		return 0;
	a->start = (struct srsv__thread){
		.name = "srsv-timer", .fn = timer_main, .arg = ctx,
		.hook = ctx->cfg.thread_start, .user = ctx->cfg.user,
	};
	ret = srsv__thread_create(&a->thread, &a->start);
	if (ret) {
		ctx->async = NULL;
		pthread_cond_destroy(&a->cond);
		pthread_mutex_destroy(&a->lock);
		free(a);
		return ret;
	}
	a->started = true;
	return 0;
}

void srsv__async_stop(struct srsv_ctx *ctx)
{
	struct srsv__async_ctx *a = ctx->async;

	if (!a || !a->started)
		return;
	pthread_mutex_lock(&a->lock);
	a->stop = true;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
	pthread_join(a->thread, NULL);
	a->started = false;
}

void srsv__async_ctx_destroy(struct srsv_ctx *ctx)
{
	struct srsv__async_ctx *a = ctx->async;

	if (!a)
		return;
	pthread_cond_destroy(&a->cond);
	pthread_mutex_destroy(&a->lock);
	free(a);
	ctx->async = NULL;
}

struct srsv_ctx *srsv__async_queue_ctx(const struct srsv_async *q)
{
	return q->ctx;
}

bool srsv__ticket_posted(struct srsv_ticket *ticket)
{
	return ticket_impl(ticket)->async != NULL;
}

/* ---- the API ---- */

SRSV__EXPORT int srsv_async_create(struct srsv_ctx *ctx,
				   struct srsv_async **out)
{
	struct srsv_async *q;
	int ret;

	if (!ctx || !out)
		return -EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->ctx = ctx;
	q->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (q->efd < 0) {
		ret = -errno;
		free(q);
		return ret;
	}
	srsv__lock(&ctx->lock);
	if (ctx->shut_down || srsv__ld(&ctx->closing) ||
	    ctx->fork_gen != srsv__ld(&srsv__fork_gen))
		ret = -ESHUTDOWN;
	else
		ret = async_ctx_get(ctx);
	srsv__unlock(&ctx->lock);
	if (ret) {
		close(q->efd);
		free(q);
		return ret;
	}
	*out = q;
	return 0;
}

SRSV__EXPORT int srsv_async_fd(const struct srsv_async *q)
{
	return q ? q->efd : -EINVAL;
}

SRSV__EXPORT int srsv_ticket_reserve_async(struct srsv_async *q,
					   struct srsv_space *s,
					   struct srsv_ticket *ticket,
					   uint64_t bytes, enum srsv_flush mode,
					   unsigned flags, uint64_t timeout_ns,
					   srsv_async_fn fn, void *arg)
{
	struct srsv__ticket *t = ticket_impl(ticket);
	struct srsv__async_args a = { &async_ops, q, fn, arg, UINT64_MAX,
				      !timeout_ns };
	int ret;

	if (!q || !s || !ticket)
		return -EINVAL;
	if (s->ctx != q->ctx || flags)
		return srsv__refused(s, SRSV_REFUSED_ASYNC, bytes);
	/* A ticket in flight is left as it is (tickets.c). */
	ret = srsv__ticket_in_flight(ticket, flags);
	if (ret)
		return ret;
	if (timeout_ns && timeout_ns != UINT64_MAX) {
		uint64_t now = srsv__now_ns();

		a.deadline_ns = timeout_ns > UINT64_MAX - 1 - now ?
				UINT64_MAX - 1 : now + timeout_ns;
	}
	/* Counted before it can be posted (and reaped). */
	AO_fetch_and_add1(&q->attached);
	ret = srsv__ticket_start(s, t, bytes, (int)mode, flags, &a);
	if (ret != -EINPROGRESS) {
		AO_fetch_and_sub1(&q->attached);
		srsv__ticket_finished_at_once(s, t, ret);
	}
	return ret;
}

SRSV__EXPORT int srsv_async_reap(struct srsv_async *q,
				 struct srsv_ticket **done, unsigned max)
{
	struct srsv__ticket *batch, *rev = NULL;
	uint64_t count;
	int n = 0;

	if (!q || (!done && max))
		return -EINVAL;
	/* Clear readiness first: a post after this makes the fd readable. */
	if (read(q->efd, &count, sizeof(count)) < 0) {
		/* -EAGAIN: not readable; harmless either way. */
	}
	batch = (struct srsv__ticket *)(void *)AO_load_acquire(&q->head);
	if (batch)
		batch = (struct srsv__ticket *)(void *)
			srsv__ao_take_all(&q->head);
	/* Newest first: reverse, then append to what an earlier reap left. */
	while (batch) {
		struct srsv__ticket *next = (struct srsv__ticket *)(void *)
					    batch->node.next;

		batch->node.next = (struct srsv__list *)(void *)rev;
		rev = batch;
		batch = next;
	}
	if (!q->local) {
		q->local = rev;
	} else {
		struct srsv__ticket *last = q->local;

		while (last->node.next)
			last = (struct srsv__ticket *)(void *)last->node.next;
		last->node.next = (struct srsv__list *)(void *)rev;
	}

	while (q->local && (!done || (unsigned)n < max)) {
		struct srsv__ticket *t = q->local;
		srsv_async_fn fn = t->async_fn;
		void *arg = t->async_arg;

		q->local = (struct srsv__ticket *)(void *)t->node.next;
		/* Finished, no longer the queue's: a plain ended ticket. */
		srsv__list_init(&t->node);
		srsv__inflight_del(t);
		t->async = NULL;
		t->async_fn = NULL;
		t->async_arg = NULL;
		AO_fetch_and_sub1(&q->attached);
		if (done)
			done[n] = (struct srsv_ticket *)(void *)t;
		n++;
		if (fn)
			fn((struct srsv_ticket *)(void *)t, t->error, arg);
	}
	/* Left over for lack of room: keep the fd readable for them. */
	if (q->local) {
		static const uint64_t one = 1;

		if (write(q->efd, &one, sizeof(one)) < 0) {
			/* Cannot fail on a non-blocking eventfd below 2^64. */
		}
	}
	return n;
}

SRSV__EXPORT int srsv_async_cancel(struct srsv_async *q,
				  struct srsv_ticket *ticket)
{
	struct srsv__ticket *t = ticket_impl(ticket);
	AO_t state;

	if (!q || !ticket || t->magic != SRSV__TICKET_MAGIC)
		return -EINVAL;
	state = AO_load_acquire(&t->state);
	if (state == SRSV__TICKET_IDLE)
		return -EINVAL;
	if (t->async != q)
		return state == SRSV__TICKET_DONE ? -EALREADY : -EINVAL;
	return srsv_ticket_cancel(ticket);
}

SRSV__EXPORT int srsv_async_destroy(struct srsv_async *q)
{
	if (!q)
		return 0;
	if (AO_load_acquire(&q->attached))
		return -EBUSY;
	close(q->efd);
	free(q);
	return 0;
}
