/* SPDX-License-Identifier: MIT */
/*
 * Module header of async.c (asynchronous tickets and their completion
 * queues) for the files that call into it: reserve.c (queueing, ending),
 * flush.c (the priority walks of asynchronous tickets), ctx.c (manual
 * mode, shutdown, destroy).
 */
#ifndef SRSV_ASYNC_H
#define SRSV_ASYNC_H

#include "internal.h"

/* What srsv_ticket_reserve_async() hands to the reserve path. */
struct srsv__async_args {
	struct srsv_async *q;
	srsv_async_fn fn;
	void *arg;
	uint64_t deadline_ns;		/* monotonic; UINT64_MAX: none */
};

/* ---- reserve.c, for async.c ---- */
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

/* ---- async.c ---- */
/* The ctx of a completion queue. */
struct srsv_ctx *srsv__async_queue_ctx(const struct srsv_async *q);
/* Is @ticket an asynchronous ticket not yet reaped (queued or posted)? */
bool srsv__ticket_posted(struct srsv_ticket *ticket);
/* Asynchronous ticket @t ended (state DONE, not held); pool lock held.
 * The last touch of @t: its owner may reap and free it at once. */
void srsv__async_post(struct srsv__ticket *t);
/* Asynchronous ticket @t stays queued; pool lock held. */
void srsv__async_queued(struct srsv_space *s, struct srsv__ticket *t);
/* Run the priority walks of @s's asynchronous priority tickets (the pool's
 * async worker, or srsv_ctx_run_pending()); no lock held. */
int srsv__async_walks(struct srsv_space *s);
/* Expire the timed-out asynchronous tickets of every pool; the number
 * expired.  Manual mode's part of srsv_ctx_run_pending(). */
int srsv__async_expire(struct srsv_ctx *ctx);
/* Shutdown: stop the timer thread (tickets were ended before). */
void srsv__async_stop(struct srsv_ctx *ctx);
/* Destroy: free the ctx's async state (after srsv__async_stop()). */
void srsv__async_ctx_destroy(struct srsv_ctx *ctx);

#endif /* SRSV_ASYNC_H */
