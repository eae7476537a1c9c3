/* SPDX-License-Identifier: MIT */
/*
 * The reserve path's internal side (reserve.c), for async.c and
 * delalloc.c.
 */
#ifndef SRSV_RESERVE_H
#define SRSV_RESERVE_H

#include "internal.h"

/* What srsv_ticket_reserve_async() hands to the reserve path. */
struct srsv__async_args {
	const struct srsv__ticket_ops *ops;	/* the ticket's hooks */
	struct srsv_async *q;
	srsv_async_fn fn;
	void *arg;
	uint64_t deadline_ns;		/* monotonic; UINT64_MAX: none */
	bool no_queue;			/* a timeout of 0: never queue */
};

/*
 * srsv_ticket_reserve() with asynchronous completion when @async is not
 * NULL: 0 granted at once, -EINPROGRESS queued, negative failed.
 */
int srsv__ticket_start(struct srsv_space *s, struct srsv__ticket *t,
		       uint64_t bytes, int mode, unsigned flags,
		       const struct srsv__async_args *async);

/* Flags the reserve path adds to a caller's (validated) flags. */
#define SRSV__RESERVE_TRACKED (1u << 30)	/* a ticket of the ticket API */
#define SRSV__RESERVE_NO_QUEUE (1u << 31)	/* timeout 0: never queue */

/* Is @ticket in flight (tickets.c)?  -EBUSY yes, 0 no, -EAGAIN a NOWAIT
 * caller met the registry busy.  The ticket memory is not read. */
int srsv__ticket_in_flight(const void *ticket, unsigned flags);

/* A ticket srsv__ticket_start() did not queue (granted or failed at once,
 * @ret): make srsv_ticket_wait() and srsv_ticket_cancel() report it. */
void srsv__ticket_finished_at_once(struct srsv_space *s,
				   struct srsv__ticket *t, int ret);

/* ::SRSV_FLUSH_MAY_WAIT resolved for pool @s. */
static inline int srsv__may_wait_mode(const struct srsv_space *s)
{
	return s->is_data && !s->is_metadata ? SRSV_FLUSH_DATA :
					       SRSV_FLUSH_ALL;
}

#endif /* SRSV_RESERVE_H */
