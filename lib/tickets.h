/* SPDX-License-Identifier: MIT */
/*
 * Tickets and granting (tickets.c): ending and removing a ticket, serving
 * the queues, and the global reserve's refill and steal.
 */
#ifndef SRSV_TICKETS_H
#define SRSV_TICKETS_H

#include "internal.h"

static inline struct srsv__ticket *srsv__ticket_first(struct srsv__list *h)
{
	return srsv__container_of(h->next, struct srsv__ticket, node);
}

/* Remove a queued ticket (reclaim_size, waiting); pool lock held. */
void srsv__ticket_remove(struct srsv_space *s, struct srsv__ticket *t);
/* End a ticket with @error (0: granted), trace, wake or post; pool lock
 * held. */
void srsv__ticket_end(struct srsv_space *s, struct srsv__ticket *t, int error);
/* Grant queued tickets that fit, in FIFO order; pool lock held. */
void srsv__try_grant_tickets(struct srsv_space *s);
/*
 * After a free that happened without the lock: grant if tickets wait.
 * With @nowait the lock is only try-locked; if it is busy the pool's async
 * worker is kicked to grant instead (never blocks).
 */
void srsv__maybe_grant(struct srsv_space *s, bool nowait);
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
/* steal_from_global_rsv(): grant @t from the global reserve if it may
 * steal and the reserve keeps 10%; pool lock held. */
bool srsv__steal_from_global_rsv(struct srsv_space *s, struct srsv__ticket *t);

#endif /* SRSV_TICKETS_H */
