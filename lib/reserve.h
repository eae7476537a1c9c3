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
};

/*
 * srsv_ticket_reserve() with asynchronous completion when @async is not
 * NULL: 0 granted at once, -EINPROGRESS queued, negative failed.
 */
int srsv__ticket_start(struct srsv_space *s, struct srsv__ticket *t,
		       uint64_t bytes, int mode, unsigned flags,
		       const struct srsv__async_args *async);

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
