/* SPDX-License-Identifier: MIT */
/*
 * The reserve path and reservation tickets (btrfs's __reserve_bytes and
 * handle_reserve_ticket).
 *
 * HOW A RESERVATION IS MADE
 *
 * 1. Queue-jumping rule.  FLUSH_ALL, FLUSH_ALL_STEAL and NO_FLUSH must not
 *    pass any queued ticket ("we don't want NO_FLUSH allocations to jump
 *    everybody"); FLUSH_LIMIT, FLUSH_EVICT, FLUSH_DATA,
 *    FLUSH_FREE_SPACE_INODE and FLUSH_EMERGENCY only respect priority
 *    tickets.  (FLUSH_DATA passing queued data tickets is btrfs's rule too:
 *    its is_normal_flushing() covers ALL and ALL_STEAL only.)
 * 2. Fast path.  No ticket to respect and the bytes fit (plainly, or within
 *    the overcommit allowance for metadata): charge may_use with a
 *    compare-and-swap.  No lock is taken, so reserve+release with room costs
 *    two atomic operations, like a bare bounded counter.
 * 3. Under the pool lock the same check is made again (the lock-free view
 *    may have double-counted bytes moving between counters), then
 *    FLUSH_EMERGENCY may take anything that physically fits, ignoring other
 *    reservations, NO_FLUSH and EMERGENCY fail with -ENOSPC, and the other
 *    modes queue a ticket: normal modes (ALL, ALL_STEAL, DATA) on the FIFO
 *    served by the async worker, which they wake if it is idle (raising the
 *    preemptive clamp: preemptive flushing did not keep up); priority modes
 *    (LIMIT, EVICT, FREE_SPACE_INODE) on the priority FIFO, flushing their
 *    own state array in the caller's thread.
 * 4. A successful metadata reservation queues the preemptive flusher when
 *    need_preemptive_reclaim() says so and it is not already busy.
 * 5. A ticket ends exactly once, under the pool lock: granted (bytes = 0),
 *    failed, timed out or cancelled.  A timeout or cancellation removes the
 *    ticket under the lock, so a grant is never lost: either the grant came
 *    first and the caller holds the bytes, or the ticket left the queue and
 *    nothing was charged (btrfs's -EINTR rule, and the granted-and-errored
 *    race it once had).
 *
 * NOWAIT never takes a sleeping lock: the fast path is lock-free, the
 * locked re-check is try-locked, and anything that would need a ticket is
 * -EAGAIN.
 *
 * Layer: the engine-facing API, above the walks, preemption, pacing and
 * tickets.  An asynchronous ticket's queueing is reported through the
 * hooks it carries (struct srsv__ticket_ops), not by calling async.c,
 * which sits above this file.
 */
#include <string.h>

#include "cache.h"
#include "counters.h"
#include "flush.h"
#include "gate.h"
#include "pace.h"
#include "preempt.h"
#include "reserve.h"
#include "stats.h"
#include "tickets.h"
#include "trace.h"
#include "workers.h"

static inline struct srsv__ticket *ticket_impl(struct srsv_ticket *t)
{
	return (struct srsv__ticket *)(void *)t;
}

/* Modes a pool kind takes (btrfs asserts the same split). */
static bool mode_valid_for(const struct srsv_space *s, int mode)
{
	switch (mode) {
	case SRSV_NO_FLUSH:
		return true;
	case SRSV_FLUSH_DATA:
	case SRSV_FLUSH_FREE_SPACE_INODE:
		return s->is_data;
	case SRSV_FLUSH_LIMIT:
	case SRSV_FLUSH_EVICT:
	case SRSV_FLUSH_ALL:
	case SRSV_FLUSH_ALL_STEAL:
	case SRSV_FLUSH_EMERGENCY:
		return !s->is_data || s->is_metadata;
	default:
		return false;
	}
}

static bool can_ticket(int mode)
{
	return mode != SRSV_NO_FLUSH && mode != SRSV_FLUSH_EMERGENCY;
}

/* Normal tickets, served by the async worker; the others are priority. */
static bool is_async_mode(int mode)
{
	return mode == SRSV_FLUSH_ALL || mode == SRSV_FLUSH_ALL_STEAL ||
	       mode == SRSV_FLUSH_DATA;
}

/*
 * The mode whose queue-jumping rule a reservation follows: its own, or,
 * for a mover (SRSV_RESERVE_MOVER), that of the priority modes: a mover
 * passes queued normal tickets, never priority ones.
 */
static inline int respected(int mode, unsigned flags)
{
	return __builtin_expect(flags & SRSV_RESERVE_MOVER, 0) ?
	       SRSV_FLUSH_LIMIT : mode;
}

/* After a charge of @bytes (may_use is now @after): the preemptive
 * flusher may be due (preempt.h).  Never blocks. */
static inline void after_charge(struct srsv_space *s, uint64_t bytes,
				int mode, uint64_t after)
{
	if (s->is_metadata)
		srsv__maybe_queue_preempt(s, bytes, mode, after);
	else if (s->data_preempt)
		srsv__maybe_queue_data_preempt(s, bytes, mode);
}

/* A mover's bytes from the pool's movers' reserve: already in may_use,
 * they change hands with one compare-and-swap.  True when taken. */
static bool mover_take(struct srsv_space *s, uint64_t bytes)
{
	return srsv__ao_sub_checked(&s->mover_reserved, bytes);
}

/*
 * One admission attempt: steps 1-3 of the essay minus the ticket.  Charge
 * @bytes if the rules of @mode (and @flags) allow; *@after as for
 * try_charge.
 */
static bool try_reserve(struct srsv_space *s, uint64_t bytes, int mode,
			unsigned flags, uint64_t *after)
{
	if (!srsv__pending_for(s, respected(mode, flags)) &&
	    srsv__space_try_charge(s, bytes, mode, after))
		return true;
	/*
	 * "Things are dire": FLUSH_EMERGENCY takes anything that physically
	 * fits, whatever is queued or reserved.
	 */
	return mode == SRSV_FLUSH_EMERGENCY &&
	       srsv__space_try_charge(s, bytes, SRSV__CHARGE_EMERGENCY, after);
}

static int check_args(const struct srsv_space *s, uint64_t bytes, int mode,
		      unsigned flags)
{
	if (!s || bytes == 0 || bytes > SRSV_MAX_BYTES)
		return -EINVAL;
	if (mode < 0 || mode >= SRSV_FLUSH_MODE_COUNT ||
	    (flags & ~(unsigned)(SRSV_RESERVE_NOWAIT | SRSV_RESERVE_MOVER)))
		return -EINVAL;
	if (!mode_valid_for(s, mode))
		return -EINVAL;
	return 0;
}

/*
 * A request no flushing can satisfy: larger than the pool could ever
 * become (its total plus all unallocated space).  Fail it at once instead
 * of letting it block the FIFO until the commit cycles give up.
 */
static bool impossible(const struct srsv_space *s, uint64_t bytes)
{
	uint64_t room = srsv__space_counter(s, SRSV__TOTAL) +
			srsv__ld(&s->ctx->unallocated);

	return bytes > room;
}

/*
 * Queue @t for @bytes; pool lock held.  Returns 0 if the grant attempt
 * right after queueing (the other half of the no-lost-wake-up protocol)
 * already granted it.
 */
static int queue_ticket(struct srsv_space *s, struct srsv__ticket *t,
			uint64_t bytes, int mode, unsigned flags)
{
	/* A mover waits with the priority tickets, ahead of the writers. */
	bool priority = !is_async_mode(mode) || (flags & SRSV_RESERVE_MOVER);
	int ret;

	/* An asynchronous ticket has no waiter to signal. */
	if (!t->ops) {
		ret = srsv__cond_init(&t->cond);
		if (ret)
			return ret;
		t->cond_ready = true;
	}
	t->bytes = bytes;
	t->priority = priority;
	t->mover = flags & SRSV_RESERVE_MOVER;
	t->steal = mode == SRSV_FLUSH_ALL_STEAL || mode == SRSV_FLUSH_EVICT;
	t->start_ns = srsv__now_ns();
	AO_store(&t->state, SRSV__TICKET_QUEUED);
	srsv__list_add_tail(&t->node, priority ? &s->priority_tickets :
			    &s->tickets);
	srsv__st(&s->reclaim_size, srsv__ld(&s->reclaim_size) + bytes);
	if (!AO_fetch_and_add_full(&s->waiting, priority ? (AO_t)1 << 32 : 1))
		srsv__stats_stall_begin(s, t->start_ns);	/* the first */
	s->stat_queued++;
	srsv__trace_ticket_add(s, bytes, mode, priority);

	/* A lock-free release may have missed our increment of waiting. */
	srsv__try_grant_tickets(s);
	if (AO_load(&t->state) == SRSV__TICKET_DONE) {
		/* Granted at once: an asynchronous one is not posted. */
		if (t->cond_ready)
			pthread_cond_destroy(&t->cond);
		t->cond_ready = false;
		return t->error;
	}
	if (t->ops)
		t->ops->queued(s, t);

	if (!priority && !s->flush) {
		/*
		 * We were forced to queue: preemptive flushing did not keep
		 * up.  Clamp down its threshold before waking the flusher.
		 */
		srsv__maybe_clamp_preempt(s);
		s->flush = true;
		srsv__trace_trigger_flush(s, bytes, mode, SRSV__REASON_ENOSPC);
		srsv__queue_async_reclaim(s, bytes, mode);
	}
	return -EINPROGRESS;
}

/*
 * Everything after a failed fast path.  Kept out of line so that the fast
 * path (reserve_fast()) sets up no stack frame for it.
 */
static __attribute__((noinline)) int
reserve_slow(struct srsv_space *s, struct srsv__ticket *t, uint64_t bytes,
	     int mode, unsigned flags, const struct srsv__async_args *async)
{
	struct srsv_ctx *ctx = s->ctx;
	uint64_t after = 0;
	bool entered;
	int ret;

	if (flags & SRSV_RESERVE_NOWAIT) {
		/*
		 * Only a try-lock: any contention is an answer of -EAGAIN.
		 * Not even that when tickets this mode respects are queued:
		 * the answer can only be -EAGAIN, and our unlock could have
		 * to wake a flusher waiting for the lock (a system call).
		 */
		int why = SRSV_NOWAIT_SPACE;

		if (!srsv__pending_for(s, respected(mode, flags))) {
			why = SRSV_NOWAIT_LOCK;
			if (srsv__trylock(&s->lock)) {
				/* Credit in motion is another thread's
				 * progress: not waited for, -EAGAIN. */
				if (srsv__cache_try_block(s)) {
					why = try_reserve(s, bytes, mode,
							  flags, &after) ? 0 :
					      SRSV_NOWAIT_SPACE;
					srsv__cache_unblock(s);
				}
				srsv__unlock(&s->lock);
			}
		}
		ret = why ? srsv__nowait_refused(s, why) : 0;
		srsv__trace_reserve(s, bytes, mode, flags, ret);
		/* Queueing the preemptive worker never blocks (CAS + sem_post). */
		if (!ret)
			after_charge(s, bytes, mode, after);
		return ret;
	}
	if (impossible(s, bytes)) {
		srsv__trace_reserve(s, bytes, mode, flags, -ENOSPC);
		return -ENOSPC;
	}
	/*
	 * Shut down, like the error state, refuses only what would wait: the
	 * locked re-check below, with the caches' credit back in may_use,
	 * decides first, so that the answer is the same whatever the caches
	 * and the timing.  A parent's ctx in a child of fork() is not
	 * touched at all: a lock another parent thread held at the fork is
	 * held for ever here (ctx.c, forked_copy()).
	 */
	entered = srsv__ctx_enter(ctx);
	if (!entered && ctx->fork_gen != srsv__ld(&srsv__fork_gen))
		return -ESHUTDOWN;

	srsv__lock(&s->lock);
	/* No credit may hide in the caches while we decide (cache.c). */
	srsv__cache_block(s);
	if (try_reserve(s, bytes, mode, flags, &after)) {
		ret = 0;
	} else if (!can_ticket(mode)) {
		ret = -ENOSPC;
	} else if (srsv__in_callback()) {
		/* A flusher waiting for itself would never wake. */
		ret = -EDEADLK;
	} else if (!entered || srsv__ld(&ctx->closing)) {
		ret = -ESHUTDOWN;
	} else if (srsv__ld(&ctx->error)) {
		ret = (int)(int64_t)srsv__ld(&ctx->error);
		s->stat_error_failures++;
	} else if (flags & SRSV__RESERVE_NO_QUEUE) {
		/* A timeout of 0: it would have to wait. */
		ret = -ETIMEDOUT;
	} else {
		memset(t, 0, sizeof(*t));
		srsv__list_init(&t->node);
		t->magic = SRSV__TICKET_MAGIC;
		t->space = s;
		t->mode = mode;
		t->orig_bytes = bytes;
		t->deadline_ns = UINT64_MAX;
		if (async) {
			t->ops = async->ops;
			t->async = async->q;
			t->async_fn = async->fn;
			t->async_arg = async->arg;
			t->deadline_ns = async->deadline_ns;
			/* Not posted before it is queued (queue_ticket). */
			t->async_hold = true;
		}
		/* The ticket API's tickets are looked up by address. */
		ret = flags & SRSV__RESERVE_TRACKED ? srsv__inflight_add(t) : 0;
		if (!ret)
			ret = queue_ticket(s, t, bytes, mode, flags);
		if (ret != -EINPROGRESS)
			srsv__inflight_del(t);
		/* Granted while queueing: what the grant left. */
		if (!ret)
			after = srsv__ld(&s->may_use);
	}
	/* A queued ticket keeps the caches closed from here on. */
	srsv__cache_unblock(s);
	if (ret == 0)
		after_charge(s, bytes, mode, after);
	srsv__unlock(&s->lock);
	if (entered)
		srsv__ctx_leave(ctx);
	srsv__trace_reserve(s, bytes, mode, flags, ret);
	return ret;
}

/*
 * The fast path through the per-CPU caches (cache.c); true when reserved.
 * Out of line: the exact path pays one load for the caches' existence.
 */
static __attribute__((noinline)) bool reserve_cached(struct srsv_space *s,
						     uint64_t bytes, int mode,
						     unsigned flags)
{
	uint64_t after;
	bool gave_back, ok;

	ok = !srsv__pending_for(s, respected(mode, flags)) &&
	     srsv__cache_take(s, bytes, &after, &gave_back);
	if (ok && gave_back)
		srsv__maybe_grant(s, flags & SRSV_RESERVE_NOWAIT);
	if (!ok)
		return false;
	srsv__trace_reserve(s, bytes, mode, flags, 0);
	/* Served from credit (after 0): may_use did not move. */
	if (after)
		after_charge(s, bytes, mode, after);
	return true;
}

/* ::SRSV_FLUSH_MAY_WAIT as the mode it stands for in pool @s; resolved
 * once, where a reservation enters, so that every later step (validation,
 * the fast and slow paths, pacing) sees the same mode. */
static inline int resolve_mode(const struct srsv_space *s, int mode)
{
	if (__builtin_expect(mode == SRSV_FLUSH_MAY_WAIT, 0) && s)
		return srsv__may_wait_mode(s);
	return mode;
}

/* A mover's fast path: its reserve first (it never runs dry on writers),
 * then the pool with the priority modes' queue rule.  Out of line: the
 * writers' fast path pays one test of the flag for it. */
static __attribute__((noinline)) bool
reserve_fast_mover(struct srsv_space *s, uint64_t bytes, int mode,
		   unsigned flags)
{
	uint64_t after = 0;

	if (!mover_take(s, bytes)) {
		if (!try_reserve(s, bytes, mode, flags, &after))
			return false;
		after_charge(s, bytes, mode, after);
	}
	srsv__trace_reserve(s, bytes, mode, flags, 0);
	return true;
}

/* Validate, then the lock-free fast path; true when reserved.  @mode is
 * resolved (resolve_mode()). */
static inline bool reserve_fast(struct srsv_space *s, uint64_t bytes, int mode,
				unsigned flags, int *ret)
{
	uint64_t after;

	*ret = check_args(s, bytes, mode, flags);
	if (__builtin_expect(*ret != 0, 0)) {
		if (s)
			srsv__refuse(s, SRSV_REFUSED_ARGS, bytes);
		return true;
	}
	if (__builtin_expect(flags & SRSV_RESERVE_MOVER, 0))
		return reserve_fast_mover(s, bytes, mode, flags);
	if (srsv__cache_engaged(s, bytes) &&
	    reserve_cached(s, bytes, mode, flags))
		return true;
	if (!try_reserve(s, bytes, mode, flags, &after))
		return false;
	srsv__trace_reserve(s, bytes, mode, flags, 0);
	after_charge(s, bytes, mode, after);
	return true;
}

int srsv__ticket_start(struct srsv_space *s, struct srsv__ticket *t,
		       uint64_t bytes, int mode, unsigned flags,
		       const struct srsv__async_args *async)
{
	int ret;

	mode = resolve_mode(s, mode);
	if (reserve_fast(s, bytes, mode, flags, &ret))
		return ret;
	flags |= SRSV__RESERVE_TRACKED;
	if (async && async->no_queue)
		flags |= SRSV__RESERVE_NO_QUEUE;
	return reserve_slow(s, t, bytes, mode, flags, async);
}

int srsv__ticket_in_flight(const void *ticket, unsigned flags)
{
	int busy = srsv__inflight_has(ticket, flags & SRSV_RESERVE_NOWAIT);

	if (busy < 0)
		return srsv__nowait_refused(NULL, SRSV_NOWAIT_LOCK);
	return busy ? -EBUSY : 0;
}

/* A waiter in manual mode looks for reclaim to run this often. */
#define MANUAL_SLICE_NS (1000ull * 1000)

static int ticket_wait(struct srsv__ticket *t, uint64_t timeout_ns)
{
	struct srsv_space *s;
	struct srsv_ctx *ctx;
	struct timespec deadline_ts, *deadline = NULL;

	/* A ticket that ended at once (bad input included) has no pool. */
	if (AO_load_acquire(&t->state) == SRSV__TICKET_DONE)
		goto done;
	s = t->space;
	ctx = s->ctx;
	if (timeout_ns != UINT64_MAX) {
		srsv__deadline(&deadline_ts, timeout_ns);
		deadline = &deadline_ts;
	}
	/*
	 * Counted even while closing: shutdown ends our ticket and then waits
	 * for us to leave the pool before the ctx can be freed.
	 */
	AO_fetch_and_add1_full(&ctx->active);
	srsv__lock(&s->lock);
	if (timeout_ns == 0 && AO_load(&t->state) != SRSV__TICKET_DONE) {
		srsv__unlock(&s->lock);
		srsv__ctx_leave(ctx);
		return -EINPROGRESS;
	}
	if (t->priority && AO_load(&t->state) == SRSV__TICKET_QUEUED) {
		srsv__unlock(&s->lock);
		srsv__priority_reclaim(s, t, deadline);
		srsv__lock(&s->lock);
	}
	while (AO_load(&t->state) == SRSV__TICKET_QUEUED) {
		const struct timespec *until = deadline;
		struct timespec slice;

		/*
		 * Manual mode has no library thread: the walk that serves a
		 * normal ticket runs in the waiter's own thread when nobody
		 * else is running the pending work (srsv_ctx_run_pending()),
		 * as a priority ticket's flushing always does.  Else the
		 * waiter looks again every MANUAL_SLICE_NS: the engine's
		 * thread may have run the pending work just before our
		 * ticket's walk was queued.
		 */
		if ((ctx->cfg.flags & (SRSV_CTX_MANUAL | SRSV_CTX_MANUAL_WAIT)) ==
		    SRSV_CTX_MANUAL) {
			if (srsv__trylock(&ctx->manual_lock)) {
				/* The walk was queued for the mode of the
				 * ticket that started it: on a MIXED pool
				 * not necessarily ours.  Ours first. */
				bool data = t->mode == SRSV_FLUSH_DATA;
				int ran;

				srsv__unlock(&s->lock);
				ran = srsv__worker_run_pending(ctx, data ?
					SRSV__WORK_ASYNC_DATA :
					SRSV__WORK_ASYNC_METADATA);
				if (!ran)
					ran = srsv__worker_run_pending(ctx,
						data ? SRSV__WORK_ASYNC_METADATA :
						SRSV__WORK_ASYNC_DATA);
				srsv__unlock(&ctx->manual_lock);
				srsv__lock(&s->lock);
				if (ran)
					continue;
			}
			srsv__deadline(&slice, MANUAL_SLICE_NS);
			if (!deadline || slice.tv_sec < deadline->tv_sec ||
			    (slice.tv_sec == deadline->tv_sec &&
			     slice.tv_nsec < deadline->tv_nsec))
				until = &slice;
		}
		if (srsv__cond_wait(&s->lock, &t->cond, until) == ETIMEDOUT &&
		    until == deadline &&
		    AO_load(&t->state) == SRSV__TICKET_QUEUED) {
			srsv__ticket_remove(s, t);
			srsv__ticket_end(s, t, -ETIMEDOUT);
			/* A large head ticket leaving may let smaller ones in. */
			srsv__try_grant_tickets(s);
		}
	}
	srsv__unlock(&s->lock);
	srsv__ctx_leave(ctx);
done:
	if (t->cond_ready) {
		/* DONE is published after the last signal: see ticket_end. */
		pthread_cond_destroy(&t->cond);
		t->cond_ready = false;
	}
	/* Its end is known to the owner: out of flight (tickets.c). */
	srsv__inflight_del(t);
	return t->error;
}

void srsv__ticket_finished_at_once(struct srsv_space *s,
				   struct srsv__ticket *t, int ret)
{
	/* Make wait/cancel report it. */
	memset(t, 0, sizeof(*t));
	srsv__list_init(&t->node);
	t->magic = SRSV__TICKET_MAGIC;
	t->space = s;
	t->error = ret;
	AO_store_release(&t->state, SRSV__TICKET_DONE);
}

SRSV__EXPORT int srsv_ticket_reserve(struct srsv_space *s,
				     struct srsv_ticket *ticket, uint64_t bytes,
				     enum srsv_flush mode, unsigned flags)
{
	struct srsv__ticket *t = ticket_impl(ticket);
	int ret;

	if (!ticket)
		return -EINVAL;
	/* A ticket in flight is left as it is (tickets.c). */
	ret = srsv__ticket_in_flight(ticket, flags);
	if (ret)
		return ret;
	ret = srsv__ticket_start(s, t, bytes, (int)mode, flags, NULL);
	if (ret != -EINPROGRESS)
		srsv__ticket_finished_at_once(s, t, ret);
	return ret;
}

/*
 * A ticket in flight lives at the address it was reserved at: the pool's
 * queue links it there and the registry knows it by it.  A copy of one
 * (an array of tickets resized, a struct assigned) still says QUEUED, but
 * its links point at the original's neighbours: cancelling or waiting on
 * it would corrupt the queue.  True for such a copy.
 */
static bool ticket_moved(struct srsv__ticket *t)
{
	return AO_load_acquire(&t->state) == SRSV__TICKET_QUEUED &&
	       srsv__inflight_has(t, false) == 0;
}

SRSV__EXPORT int srsv_ticket_wait(struct srsv_ticket *ticket,
				  uint64_t timeout_ns)
{
	struct srsv__ticket *t = ticket_impl(ticket);

	if (!ticket || t->magic != SRSV__TICKET_MAGIC ||
	    AO_load_acquire(&t->state) == SRSV__TICKET_IDLE ||
	    ticket_moved(t))
		return -EINVAL;
	/* Nobody may sleep on a ticket its completion queue owns. */
	if (t->async && timeout_ns)
		return -EINVAL;
	return ticket_wait(t, timeout_ns);
}

SRSV__EXPORT int srsv_ticket_cancel(struct srsv_ticket *ticket)
{
	struct srsv__ticket *t = ticket_impl(ticket);
	struct srsv_space *s;
	int ret = -EALREADY;

	if (!ticket || t->magic != SRSV__TICKET_MAGIC ||
	    AO_load_acquire(&t->state) == SRSV__TICKET_IDLE ||
	    ticket_moved(t))
		return -EINVAL;
	s = t->space;
	if (!s)
		return -EALREADY;
	srsv__lock(&s->lock);
	if (AO_load(&t->state) == SRSV__TICKET_QUEUED) {
		srsv__ticket_remove(s, t);
		srsv__ticket_end(s, t, -ECANCELED);
		/* A large head ticket leaving may let smaller ones in. */
		srsv__try_grant_tickets(s);
		ret = 0;
	}
	srsv__unlock(&s->lock);
	return ret;
}

/* The blocking path; @mode is resolved (resolve_mode()). */
static __attribute__((noinline)) int
reserve_blocking(struct srsv_space *s, uint64_t bytes, int mode,
		 unsigned flags, uint64_t timeout_ns)
{
	struct srsv_ctx *ctx = s->ctx;
	struct srsv__ticket t;
	int ret;

	/* NOWAIT never queues a ticket (nor touches the shared counter). */
	if (flags & SRSV_RESERVE_NOWAIT) {
		ret = reserve_slow(s, &t, bytes, mode, flags, NULL);
		/* Books its slot, never sleeps (pace.c). */
		if (!ret && s->pace)
			srsv__pace(s, bytes, mode, flags);
		return ret;
	}
	/*
	 * Counted from before queueing until ticket_wait() is done: the
	 * slow path stops counting itself once the ticket is queued, and
	 * shutdown must not see no one inside (and let the ctx be freed)
	 * while we are between the two.
	 */
	AO_fetch_and_add1_full(&ctx->active);
	/* A timeout of 0 never queues: -ETIMEDOUT where it would wait. */
	ret = reserve_slow(s, &t, bytes, mode,
			   timeout_ns ? flags : flags | SRSV__RESERVE_NO_QUEUE,
			   NULL);
	if (ret != -EINPROGRESS) {
		srsv__ctx_leave_waited(ctx);
		/* Charged without a ticket: paced like the fast path. */
		if (!ret && s->pace)
			srsv__pace(s, bytes, mode, timeout_ns ? flags :
				   flags | SRSV_RESERVE_NOWAIT);
		return ret;
	}
	ret = ticket_wait(&t, timeout_ns);
	srsv__ctx_leave_waited(ctx);
	return ret;
}

SRSV__EXPORT int srsv_space_reserve(struct srsv_space *s, uint64_t bytes,
				    enum srsv_flush mode, unsigned flags)
{
	int m = resolve_mode(s, (int)mode);
	int ret;

	if (reserve_fast(s, bytes, m, flags, &ret)) {
		if (!ret && __builtin_expect(s->pace != NULL, 0))
			srsv__pace(s, bytes, m, flags);
		return ret;
	}
	return reserve_blocking(s, bytes, m, flags, UINT64_MAX);
}

SRSV__EXPORT int srsv_space_reserve_timeout(struct srsv_space *s,
					    uint64_t bytes,
					    enum srsv_flush mode,
					    unsigned flags, uint64_t timeout_ns)
{
	int m = resolve_mode(s, (int)mode);
	int ret;

	if (reserve_fast(s, bytes, m, flags, &ret)) {
		/* "Do not wait at all" is never paced to sleep either. */
		if (!ret && __builtin_expect(s->pace != NULL, 0))
			srsv__pace(s, bytes, m, timeout_ns ? flags :
				   flags | SRSV_RESERVE_NOWAIT);
		return ret;
	}
	return reserve_blocking(s, bytes, m, flags, timeout_ns);
}

/*
 * What a partial grant can have of the pool at once: between @lo and @hi
 * bytes, without passing a ticket the mode respects, charged; 0 if less
 * than @lo.  *@after as for try_charge.  Never waits; with NOWAIT it only
 * tries the pool lock.
 */
static uint64_t partial_from_pool(struct srsv_space *s, uint64_t lo,
				  uint64_t hi, int m, unsigned flags,
				  uint64_t *after)
{
	uint64_t take = 0;

	if (try_reserve(s, hi, m, flags, after))
		return hi;
	if (flags & SRSV_RESERVE_NOWAIT) {
		if (!srsv__trylock(&s->lock))
			return 0;
	} else {
		srsv__lock(&s->lock);
	}
	/* Exact under the lock, with the caches' credit back in may_use. */
	if (flags & SRSV_RESERVE_NOWAIT ? srsv__cache_try_block(s) :
	    (srsv__cache_block(s), true)) {
		if (!srsv__pending_for(s, respected(m, flags))) {
			take = srsv__min(hi, srsv__space_room(s, m));
			if (take < lo ||
			    !srsv__space_try_charge(s, take, m, after))
				take = 0;
		}
		srsv__cache_unblock(s);
	}
	srsv__unlock(&s->lock);
	return take;
}

/*
 * A partial grant (bcachefs's BCH_DISK_RESERVATION_PARTIAL, XFS's GREEDY
 * zoned reservations): what can be had at once, between @min and @max,
 * without passing a ticket the mode respects; else a reservation of
 * @min, which may wait.  A mover takes from its reserve first, and the
 * rest from the pool.
 */
SRSV__EXPORT int srsv_space_reserve_partial(struct srsv_space *s,
					    uint64_t min, uint64_t max,
					    enum srsv_flush mode,
					    unsigned flags, uint64_t *got)
{
	int m = resolve_mode(s, (int)mode), ret;
	uint64_t take = 0, pool = 0, after = 0;
	AO_t held;

	if (got)
		*got = 0;
	if (!s || !got)
		return -EINVAL;
	if (!min || min > max || max > SRSV_MAX_BYTES)
		return srsv__refused(s, SRSV_REFUSED_POOL_ARGS, max);
	if (check_args(s, min, m, flags))
		return srsv__refused(s, SRSV_REFUSED_ARGS, min);
	if (flags & SRSV_RESERVE_MOVER) {
		do {
			held = AO_load(&s->mover_reserved);
			take = srsv__min((uint64_t)held, max);
		} while (take &&
			 !AO_compare_and_swap_full(&s->mover_reserved, held,
						   held - (AO_t)take));
	}
	if (take < max)
		pool = partial_from_pool(s, take >= min ? 1 : min - take,
					 max - take, m, flags, &after);
	if (take + pool < min) {
		/* Back, up to its size (it may have been refilled). */
		if (take)
			srsv__mover_reserve_put(s, take);
		ret = srsv_space_reserve(s, min, (enum srsv_flush)m, flags);
		if (!ret)
			*got = min;
		return ret;
	}
	if (pool)
		after_charge(s, pool, m, after);
	take += pool;
	srsv__trace_reserve(s, take, m, flags, 0);
	if (__builtin_expect(s->pace != NULL, 0))
		srsv__pace(s, take, m, flags);
	*got = take;
	return 0;
}
