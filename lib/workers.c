/* SPDX-License-Identifier: MIT */
/*
 * The worker threads, as a generic service (liburcu's workqueue is the
 * model): a worker per kind of work (async metadata tickets, async data
 * tickets, preemptive flushing), woken by a semaphore post that never
 * blocks, running the job its owner gave it for each pool kind marked
 * pending.
 *
 * Layer: the workers, above the shutdown gate, below everything that
 * queues work.  A worker knows nothing of what it runs: ctx.c hands each
 * one its job at creation (srsv__workers_start()), the flush walks and the
 * preemptive flusher, so that no call runs from here up to them.  In
 * manual mode (SRSV_CTX_MANUAL) no thread starts; srsv_ctx_run_pending()
 * runs the pending jobs in the engine's thread (srsv__worker_run_pending()).
 */
#include "workers.h"

void srsv__worker_kick(struct srsv_ctx *ctx, enum srsv__work w, int kind)
{
	struct srsv__worker *worker = &ctx->workers[w];

	srsv__ao_set_bits(&worker->pending, (AO_t)1 << kind);
	/* sem_post never blocks: safe on the NOWAIT path. */
	if (worker->started)
		sem_post(&worker->wake);
}

int srsv__worker_run_pending(struct srsv_ctx *ctx, enum srsv__work w)
{
	struct srsv__worker *worker = &ctx->workers[w];
	AO_t bits = (AO_t)srsv__ao_take_all(&worker->pending);
	int ran = 0;

	for (int kind = 0; kind < SRSV_POOL_COUNT; kind++) {
		struct srsv_space *s = ctx->spaces[kind];

		if (!(bits & ((AO_t)1 << kind)) || !s)
			continue;
		ran++;
		worker->job(s);
	}
	return ran;
}

static void *worker_main(void *arg)
{
	struct srsv__worker *worker = arg;
	struct srsv_ctx *ctx = worker->ctx;

	for (;;) {
		while (sem_wait(&worker->wake) != 0 && errno == EINTR)
			;
		if (srsv__ld(&ctx->stop_workers))
			break;
		srsv__worker_run_pending(ctx, worker->id);
	}
	return NULL;
}

int srsv__workers_start(struct srsv_ctx *ctx,
			const srsv__job_fn jobs[SRSV__WORK_COUNT])
{
	static const char *const names[SRSV__WORK_COUNT] = {
		[SRSV__WORK_ASYNC_METADATA] = "srsv-flush-md",
		[SRSV__WORK_ASYNC_DATA] = "srsv-flush-data",
		[SRSV__WORK_PREEMPT] = "srsv-preempt",
	};

	for (int i = 0; i < SRSV__WORK_COUNT; i++) {
		struct srsv__worker *w = &ctx->workers[i];

		w->ctx = ctx;
		w->id = (enum srsv__work)i;
		w->job = jobs[i];
		if (ctx->cfg.flags & SRSV_CTX_MANUAL)
			continue;
		if (sem_init(&w->wake, 0, 0))
			goto fail;
		w->start = (struct srsv__thread){
			.name = names[i], .fn = worker_main, .arg = w,
			.hook = ctx->cfg.thread_start, .user = ctx->cfg.user,
		};
		if (srsv__thread_create(&w->thread, &w->start)) {
			sem_destroy(&w->wake);
			goto fail;
		}
		w->started = true;
	}
	return 0;
fail:
	srsv__workers_stop(ctx);
	return -EAGAIN;
}

void srsv__workers_stop(struct srsv_ctx *ctx)
{
	srsv__st(&ctx->stop_workers, 1);
	for (int i = 0; i < SRSV__WORK_COUNT; i++) {
		struct srsv__worker *w = &ctx->workers[i];

		if (!w->started)
			continue;
		sem_post(&w->wake);
		pthread_join(w->thread, NULL);
		sem_destroy(&w->wake);
		w->started = false;
	}
}
