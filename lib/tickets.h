/* SPDX-License-Identifier: MIT */
/*
 * Tickets and granting (tickets.c): ending and removing a ticket, serving
 * the queues, and the global reserve's refill and steal.
 */
#ifndef SRSV_TICKETS_H
#define SRSV_TICKETS_H

#include "internal.h"

enum srsv__ticket_state {
	SRSV__TICKET_IDLE = 0,
	SRSV__TICKET_QUEUED = 1,
	SRSV__TICKET_DONE = 2
};

#define SRSV__TICKET_MAGIC 0x7469636bu	/* "tick" */

/* The internal view of struct srsv_ticket. */
struct srsv__ticket {
	struct srsv__list node;		/* on a queue while QUEUED */
	struct srsv_space *space;
	uint64_t bytes;			/* still wanted; 0 once granted */
	uint64_t orig_bytes;
	uint64_t start_ns;
	pthread_cond_t cond;		/* signalled when it ends */
	int error;
	int mode;
	uint32_t magic;
	volatile AO_t state;		/* enum srsv__ticket_state */
	bool steal;			/* may take from the global rsv */
	bool priority;			/* on priority_tickets */
	bool cond_ready;		/* cond initialised */
	bool tracked;			/* in the in-flight registry */
	bool mover;			/* SRSV_RESERVE_MOVER: its reserve first */
	/* Asynchronous tickets (async.c); ops NULL for a blocking one. */
	bool async_hold;		/* do not post yet (queueing, walking) */
	bool async_walk;		/* priority walk to run by a worker */
	const struct srsv__ticket_ops *ops;
	struct srsv_async *async;	/* completion queue */
	srsv_async_fn async_fn;
	void *async_arg;
	uint64_t deadline_ns;		/* monotonic; UINT64_MAX: none */
};

_Static_assert(sizeof(struct srsv__ticket) <= sizeof(struct srsv_ticket),
	       "struct srsv_ticket too small");

/*
 * A ticket whose end has no waiter (an asynchronous ticket) carries the
 * hooks of the layer that owns it (async.c fills them, as liburcu's
 * flavours fill struct rcu_flavor_struct): the tickets layer calls them
 * under the pool lock instead of calling up.
 */
struct srsv__ticket_ops {
	/* Stays queued after the grant attempt that follows queueing. */
	void (*queued)(struct srsv_space *s, struct srsv__ticket *t);
	/* Ended (state DONE) and not held: the last touch of the ticket. */
	void (*post)(struct srsv__ticket *t);
};

static inline struct srsv__ticket *srsv__ticket_first(struct srsv__list *h)
{
	return srsv__container_of(h->next, struct srsv__ticket, node);
}

/*
 * The registry of tickets in flight (tickets.c): a ticket of the ticket
 * API (srsv_ticket_reserve(), srsv_ticket_reserve_async()) is in it from
 * its queueing until it leaves its queue (blocking) or is reaped
 * (asynchronous).  Looked up by address: a caller's ticket need not be
 * initialised, so its memory is never read to decide.
 * srsv__inflight_add(): pool lock held; 0 or -ENOMEM (nothing added).
 * srsv__inflight_has(): 1 in flight, 0 not, -EAGAIN (@nowait: the
 * registry's lock was busy).
 */
int srsv__inflight_add(struct srsv__ticket *t);
void srsv__inflight_del(struct srsv__ticket *t);
int srsv__inflight_has(const void *ticket, bool nowait);
/* srsv_ctx_destroy(): the ctx's tickets leave the registry (those nobody
 * waited for after the shutdown ended them), without reading them. */
void srsv__inflight_forget(const struct srsv_ctx *ctx);

/* Remove a queued ticket (reclaim_size, waiting); pool lock held. */
void srsv__ticket_remove(struct srsv_space *s, struct srsv__ticket *t);
/* End a ticket with @error (0: granted), trace, wake or post; pool lock
 * held. */
void srsv__ticket_end(struct srsv_space *s, struct srsv__ticket *t, int error);
/* Grant queued tickets that fit, in FIFO order; pool lock held. */
void srsv__try_grant_tickets(struct srsv_space *s);
/* srsv__maybe_grant() when tickets wait: lock (or try-lock) and grant. */
void srsv__grant_waiting(struct srsv_space *s, bool nowait);
/*
 * After a free that happened without the lock: grant if tickets wait.
 * With @nowait the lock is only try-locked; if it is busy the pool's async
 * worker is kicked to grant instead (never blocks).  Inline: on the fast
 * path of every release it is one load.
 */
static inline void srsv__maybe_grant(struct srsv_space *s, bool nowait)
{
	/*
	 * Our caller's compare-and-swap on may_use was a full barrier; it
	 * pairs with the full barrier of the queueing thread's increment of
	 * waiting (internal.h), so a plain acquire load suffices here.
	 */
	if (AO_load_acquire(&s->waiting))
		srsv__grant_waiting(s, nowait);
}
/* srsv__maybe_grant(@s, true): the pool's undone hook (counters.c). */
void srsv__maybe_grant_nowait(struct srsv_space *s);
/* More unallocated space: grant the metadata (and system, mixed) pools'
 * tickets that may overcommit into it now.  Takes each pool lock. */
void srsv__grant_metadata_tickets(struct srsv_ctx *ctx);
/* Fail every queued ticket with @error; pool lock held. */
void srsv__fail_all_tickets(struct srsv_space *s, int error);
/*
 * btrfs_return_free_space(): @bytes of @s just became free (unpin); the
 * global reserve, if it lives in @s and is below its size, takes them
 * first.  Returns the bytes it took.  Pool lock held.
 */
uint64_t srsv__global_rsv_refill(struct srsv_space *s, uint64_t bytes);
/*
 * Space came back to @s (an unpin when @unpinned, another free, growth,
 * a block group added, a zone reset, read-only bytes cleared): the
 * reserves are refilled before any ticket sees the bytes, the global
 * reserve on an unpin (btrfs_return_free_space()), then the movers'
 * reserve.  True when the tickets are to be offered what came back: some
 * bytes are left after the refills ("if (len)"), or the movers' reserve
 * grew while a mover waits (try_grant_tickets() serves it from there).
 * Pool lock held.
 */
bool srsv__reserves_refill(struct srsv_space *s, uint64_t bytes,
			   bool unpinned);
/*
 * A release of @bytes of @s just succeeded: refill the movers' reserve
 * from them if it is below its size, lock-free (btrfs's block-rsv release
 * refills the global reserve the same way).  A charge like any other, so
 * it takes only what is still free; the bytes it kept.
 */
uint64_t srsv__mover_refill_released(struct srsv_space *s, uint64_t bytes);
/*
 * @bytes already in may_use go into the movers' reserve, up to its size;
 * what does not fit leaves may_use.  The bytes kept.  Lock-free.
 */
uint64_t srsv__mover_reserve_put(struct srsv_space *s, uint64_t bytes);
/* steal_from_global_rsv(): grant @t from the global reserve if it may
 * steal and the reserve keeps 10%; pool lock held. */
bool srsv__steal_from_global_rsv(struct srsv_space *s, struct srsv__ticket *t);

#endif /* SRSV_TICKETS_H */
