/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous tickets and their completion queues (async.c), for the
 * files above it: delalloc.c and ctx.c (the workers' jobs, manual mode,
 * shutdown, destroy).
 */
#ifndef SRSV_ASYNC_H
#define SRSV_ASYNC_H

#include "internal.h"

/* The ctx of a completion queue. */
struct srsv_ctx *srsv__async_queue_ctx(const struct srsv_async *q);
/* Is @ticket an asynchronous ticket not yet reaped (queued or posted)? */
bool srsv__ticket_posted(struct srsv_ticket *ticket);
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
