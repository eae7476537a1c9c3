/* SPDX-License-Identifier: MIT */
/*
 * Tickets and granting (btrfs's btrfs_try_granting_tickets(),
 * remove_ticket(), btrfs_return_free_space() and
 * steal_from_global_rsv(), all of space-info.c).
 *
 * Layer: tickets and granting, above the pool counters, the workers and
 * the per-CPU caches, below block groups, the flush walks and every API
 * call.  Whatever gives space back (a release, an unpin, a grown pool, a
 * relocated group) ends here, so that queued tickets are served in one
 * place and one order: priority tickets first with NO_FLUSH's overcommit,
 * then normal tickets with FLUSH_ALL's, strict FIFO within each queue
 * (docs/design.md section 4).  A ticket ends exactly once, under the pool
 * lock; a ticket without a waiter (an asynchronous one) is handed to its
 * owner through the hooks it carries (struct srsv__ticket_ops), never by
 * a call up to async.c.
 *
 * The global reserve's two moments at this layer are upstream's: space
 * that comes back refills it before any ticket sees the bytes
 * (btrfs_return_free_space()), and a ticket about to fail may take what
 * it wants from it, keeping 10% (steal_from_global_rsv()).
 */
#include <stdlib.h>

#include "blockrsv.h"
#include "cache.h"
#include "counters.h"
#include "stats.h"
#include "tickets.h"
#include "trace.h"
#include "workers.h"

/* btrfs keeps 10% of the global reserve out of reach of stealing. */
#define SRSV__GLOBAL_STEAL_KEEP_PERCENT 10

/*
 * Tickets in flight.  srsv_ticket_reserve() on a ticket that is still
 * queued would relink a node that is on a list, and the next walk of the
 * queue (a snapshot, a grant) would spin for ever; on an asynchronous
 * ticket posted and not yet reaped, it would cut the completion queue.  So
 * the ticket API refuses a ticket in flight with -EBUSY.  The caller's
 * ticket need not be initialised (space.h), so the library cannot read it
 * to tell: it keeps the addresses of its tickets in flight instead, in
 * stripes hashed by address, each a small array under its own lock (a
 * leaf: taken under a pool lock, never the other way).  In flight is the
 * documented lifetime: from queueing until srsv_ticket_wait() returns its
 * end (a blocking ticket) or srsv_async_reap() hands it back (an
 * asynchronous one), so that neither a grant, a failure nor a NOWAIT
 * release's grant ever touches the registry.  A queued ticket of the
 * ticket API is one insertion and one removal; srsv_space_reserve()'s own
 * tickets live on its stack and are not registered.
 */
#define INFLIGHT_STRIPES 64

static struct inflight_stripe {
	struct srsv__lock lock;
	struct inflight {		/* under lock */
		const void *ticket;
		const struct srsv_ctx *ctx;
	} *e;
	size_t nr, alloc;
} inflight[INFLIGHT_STRIPES] = {
	[0 ... INFLIGHT_STRIPES - 1] = { .lock = { PTHREAD_MUTEX_INITIALIZER, 0 } }
};

static struct inflight_stripe *stripe_of(const void *t)
{
	uintptr_t a = (uintptr_t)t;

	return &inflight[(a >> 6 ^ a >> 12) % INFLIGHT_STRIPES];
}

int srsv__inflight_add(struct srsv__ticket *t)
{
	struct inflight_stripe *st = stripe_of(t);
	int ret = 0;

	srsv__lock(&st->lock);
	if (st->nr == st->alloc) {
		size_t n = st->alloc ? 2 * st->alloc : 8;
		struct inflight *grown = realloc(st->e, n * sizeof(*grown));

		if (!grown)
			ret = -ENOMEM;
		else {
			st->e = grown;
			st->alloc = n;
		}
	}
	if (!ret) {
		st->e[st->nr++] = (struct inflight){ t, t->space->ctx };
		t->tracked = true;
	}
	srsv__unlock(&st->lock);
	return ret;
}

void srsv__inflight_del(struct srsv__ticket *t)
{
	struct inflight_stripe *st = stripe_of(t);

	if (!t->tracked)
		return;
	t->tracked = false;
	srsv__lock(&st->lock);
	for (size_t i = 0; i < st->nr; i++) {
		if (st->e[i].ticket == t) {
			st->e[i] = st->e[--st->nr];
			break;
		}
	}
	srsv__unlock(&st->lock);
}

void srsv__inflight_forget(const struct srsv_ctx *ctx)
{
	for (unsigned k = 0; k < INFLIGHT_STRIPES; k++) {
		struct inflight_stripe *st = &inflight[k];

		srsv__lock(&st->lock);
		for (size_t i = 0; i < st->nr;) {
			if (st->e[i].ctx == ctx)
				st->e[i] = st->e[--st->nr];
			else
				i++;
		}
		srsv__unlock(&st->lock);
	}
}

int srsv__inflight_has(const void *t, bool nowait)
{
	struct inflight_stripe *st = stripe_of(t);
	int found = 0;

	if (nowait) {
		if (!srsv__trylock(&st->lock))
			return -EAGAIN;
	} else {
		srsv__lock(&st->lock);
	}
	for (size_t i = 0; i < st->nr && !found; i++)
		found = st->e[i].ticket == t;
	srsv__unlock(&st->lock);
	return found;
}

void srsv__ticket_remove(struct srsv_space *s, struct srsv__ticket *t)
{
	srsv__assert_held(&s->lock);
	if (srsv__list_empty(&t->node))
		return;
	srsv__list_del_init(&t->node);
	srsv__st(&s->reclaim_size, srsv__ld(&s->reclaim_size) - t->bytes);
	if (AO_fetch_and_add_full(&s->waiting,
				  (AO_t)0 - (t->priority ? (AO_t)1 << 32 : 1)) ==
	    (t->priority ? (AO_t)1 << 32 : 1))
		srsv__stats_stall_end(s);	/* the last one left */
}

void srsv__ticket_end(struct srsv_space *s, struct srsv__ticket *t, int error)
{
	uint64_t wait_ns = srsv__now_ns() - t->start_ns;

	srsv__assert_held(&s->lock);
	t->error = error;
	if (error)
		s->stat_failed++;
	else
		s->stat_granted++;
	if (error && error == (int)(int64_t)srsv__ld(&s->ctx->error))
		s->stat_error_failures++;
	srsv__stats_ticket_end(s, t->mode, error, wait_ns);
	srsv__trace_ticket_end(s, t->orig_bytes, t->mode, error, wait_ns);
	if (t->ops) {
		/* No waiter: post it through its owner's hook (async.c),
		 * unless its queueing or priority walk is still going on. */
		AO_store_release(&t->state, SRSV__TICKET_DONE);
		if (!t->async_hold)
			t->ops->post(t);
		return;
	}
	/*
	 * Signal before publishing DONE: the waiter re-checks the state under
	 * the lock we hold, and once DONE is visible (lock-free, in
	 * ticket_wait) nobody touches the condition variable any more, so the
	 * owner may destroy it without the lock.
	 */
	pthread_cond_signal(&t->cond);
	AO_store_release(&t->state, SRSV__TICKET_DONE);
}

/*
 * btrfs_try_granting_tickets(): priority tickets first, with NO_FLUSH
 * overcommit, then normal tickets with FLUSH_ALL overcommit; within each
 * queue strict FIFO, stopping at the first ticket that does not fit (a
 * smaller ticket behind it waits: fairness over utilisation).
 */
void srsv__try_grant_tickets(struct srsv_space *s)
{
	struct srsv__list *heads[2] = { &s->priority_tickets, &s->tickets };
	const int modes[2] = { SRSV_NO_FLUSH, SRSV_FLUSH_ALL };

	srsv__assert_held(&s->lock);
	/* The caches' credit belongs to the tickets (cache.c). */
	if (s->cache && (!srsv__list_empty(heads[0]) ||
			 !srsv__list_empty(heads[1])))
		srsv__cache_drain(s);
	for (int i = 0; i < 2; i++) {
		while (!srsv__list_empty(heads[i])) {
			struct srsv__ticket *t = srsv__ticket_first(heads[i]);

			/* A mover's bytes come from its reserve first, where
			 * a refill may just have put them. */
			if (!(t->mover &&
			      srsv__ao_sub_checked(&s->mover_reserved,
						   t->bytes)) &&
			    !srsv__space_try_charge(s, t->bytes, modes[i], NULL))
				break;
			srsv__ticket_remove(s, t);
			srsv__st(&s->stats.grant_bytes,
				 srsv__ld(&s->stats.grant_bytes) + t->bytes);
			t->bytes = 0;
			s->tickets_id++;
			srsv__ticket_end(s, t, 0);
		}
	}
}

void srsv__grant_waiting(struct srsv_space *s, bool nowait)
{
	if (nowait) {
		if (!srsv__trylock(&s->lock)) {
			/* Never block: let the pool's worker grant. */
			srsv__worker_kick(s->ctx, s->is_data && !s->is_metadata ?
					  SRSV__WORK_ASYNC_DATA :
					  SRSV__WORK_ASYNC_METADATA, s->kind);
			return;
		}
	} else {
		srsv__lock(&s->lock);
	}
	srsv__try_grant_tickets(s);
	srsv__unlock(&s->lock);
}

void srsv__maybe_grant_nowait(struct srsv_space *s)
{
	srsv__maybe_grant(s, true);
}

void srsv__grant_metadata_tickets(struct srsv_ctx *ctx)
{
	for (int i = 0; i < SRSV_POOL_COUNT; i++) {
		struct srsv_space *s = ctx->spaces[i];

		if (!s || s->is_data)
			continue;
		srsv__lock(&s->lock);
		srsv__try_grant_tickets(s);
		srsv__unlock(&s->lock);
	}
}

void srsv__fail_all_tickets(struct srsv_space *s, int error)
{
	struct srsv__list *heads[2] = { &s->priority_tickets, &s->tickets };

	srsv__assert_held(&s->lock);
	for (int i = 0; i < 2; i++) {
		while (!srsv__list_empty(heads[i])) {
			struct srsv__ticket *t = srsv__ticket_first(heads[i]);

			srsv__ticket_remove(s, t);
			srsv__ticket_end(s, t, error);
		}
	}
}

/*
 * Charge at most @want bytes that just came back to @s for a reserve; the
 * bytes charged.  The bytes left claimed (or the total grew) before this
 * runs, and the lock-free writers do not take the pool lock: one of them
 * may have charged some of them in between.  So the refill goes through
 * admission like any charge (under the lock no charge is ever taken back)
 * and takes what is still free; a data pool never overcommits for it.  A
 * metadata pool's refill is btrfs's: the global reserve is refilled even
 * when overcommitted, the overcommit allowance being a soft limit there.
 */
static uint64_t refill_charge(struct srsv_space *s, uint64_t want,
			      bool overcommit)
{
	if (overcommit && !s->is_data) {
		srsv__may_use_add(s, want);
		return want;
	}
	for (int tries = 0; want && tries < 4; tries++) {
		uint64_t room = srsv__space_room(s, SRSV__CHARGE_NO_OVERCOMMIT);
		uint64_t add = srsv__min(want, room);

		if (!add)
			break;
		if (srsv__space_try_charge(s, add, SRSV__CHARGE_NO_OVERCOMMIT,
					   NULL))
			return add;
	}
	return 0;
}

bool srsv__reserves_refill(struct srsv_space *s, uint64_t bytes,
			   bool unpinned)
{
	uint64_t took = unpinned ? srsv__global_rsv_refill(s, bytes) : 0;
	uint64_t want, add;

	srsv__assert_held(&s->lock);
	/* Then the movers' reserve, from whatever came back. */
	want = s->mover_size - srsv__min(s->mover_size,
					 srsv__ld(&s->mover_reserved));
	add = refill_charge(s, srsv__min(want, bytes - took), false);
	if (add)
		AO_fetch_and_add_full(&s->mover_reserved, (AO_t)add);
	return took + add < bytes ||
	       (add && !srsv__list_empty(&s->priority_tickets));
}

uint64_t srsv__mover_reserve_put(struct srsv_space *s, uint64_t bytes)
{
	AO_t held;
	uint64_t keep;

	/* Up to the reserve's size: refills and give-backs may race. */
	do {
		held = AO_load_acquire(&s->mover_reserved);
		keep = srsv__min(bytes, s->mover_size -
					srsv__min(s->mover_size, held));
	} while (keep && !AO_compare_and_swap_full(&s->mover_reserved, held,
						   held + keep));
	if (keep < bytes)
		(void)srsv__may_use_sub(s, bytes - keep); /* ours: never refused */
	return keep;
}

uint64_t srsv__mover_refill_released(struct srsv_space *s, uint64_t bytes)
{
	AO_t held = AO_load_acquire(&s->mover_reserved);
	uint64_t add;

	if (held >= s->mover_size)
		return 0;
	add = srsv__min(bytes, s->mover_size - held);
	if (!srsv__space_try_charge(s, add, SRSV__CHARGE_NO_OVERCOMMIT, NULL))
		return 0;
	return srsv__mover_reserve_put(s, add);
}

uint64_t srsv__global_rsv_refill(struct srsv_space *s, uint64_t bytes)
{
	struct srsv_rsv *global = srsv__global_rsv_in(s);
	uint64_t size, reserved, add = 0;

	srsv__assert_held(&s->lock);
	if (!global)
		return 0;
	srsv__rsv_lock(global);
	size = srsv__rsv_size(global);
	reserved = srsv__rsv_reserved(global);
	if (reserved < size) {
		add = refill_charge(s, srsv__min(bytes, size - reserved), true);
		srsv__rsv_res_add(global, add);
	}
	srsv__rsv_unlock(global);
	if (add)
		srsv__trace_rsv(global, SRSV__RSV_REFILL, add, 0);
	return add;
}

bool srsv__steal_from_global_rsv(struct srsv_space *s, struct srsv__ticket *t)
{
	struct srsv_rsv *global = srsv__global_rsv_in(s);
	uint64_t keep;
	AO_t old;

	srsv__assert_held(&s->lock);
	if (!t->steal || !global)
		return false;
	srsv__rsv_lock(global);
	keep = srsv__mult_perc(srsv__rsv_size(global),
			       SRSV__GLOBAL_STEAL_KEEP_PERCENT);
	/* The bytes change hands inside may_use: no counter moves. */
	do {
		old = AO_load(srsv__rsv_res_word(global));
		if (old < keep + t->bytes) {
			srsv__rsv_unlock(global);
			return false;
		}
	} while (!AO_compare_and_swap_full(srsv__rsv_res_word(global), old,
					   old - (AO_t)t->bytes));
	srsv__rsv_drained(global, t->bytes);
	srsv__rsv_unlock(global);
	srsv__trace_rsv(global, SRSV__RSV_STEAL, t->bytes, 0);
	srsv__ticket_remove(s, t);
	t->bytes = 0;
	s->tickets_id++;
	srsv__ticket_end(s, t, 0);
	return true;
}

