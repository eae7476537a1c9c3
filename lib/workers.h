/* SPDX-License-Identifier: MIT */
/*
 * The worker threads (workers.c): a generic service running the jobs
 * ctx.c gives it.
 */
#ifndef SRSV_WORKERS_H
#define SRSV_WORKERS_H

#include "internal.h"

/* Mark pool kind @kind pending for worker @w and wake it (never blocks). */
void srsv__worker_kick(struct srsv_ctx *ctx, enum srsv__work w, int kind);
/* Start a thread per worker running @jobs[w] (none in manual mode); 0 or
 * -EAGAIN (every started thread stopped again). */
int srsv__workers_start(struct srsv_ctx *ctx,
			const srsv__job_fn jobs[SRSV__WORK_COUNT]);
void srsv__workers_stop(struct srsv_ctx *ctx);
/* Run worker @w's job for every pool kind pending, in the caller's
 * thread; returns the pools it ran for. */
int srsv__worker_run_pending(struct srsv_ctx *ctx, enum srsv__work w);

#endif /* SRSV_WORKERS_H */
