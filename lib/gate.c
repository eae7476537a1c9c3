/* SPDX-License-Identifier: MIT */
/*
 * The shutdown gate: who is inside the library on a ctx.
 *
 * Layer: the shutdown gate, above the layout, below the workers and every
 * path that may wait.  srsv_ctx_shutdown() (ctx.c) raises ctx->closing,
 * fails the tickets, stops the workers and then waits until no thread is
 * inside a slow path (ctx->active == 0); only then may srsv_ctx_destroy()
 * free the ctx.  A path that may wait or touch the ctx after a wait enters
 * the gate first (srsv__ctx_enter(), which refuses once closing) and
 * leaves it last.  A public call that waits inside another public call of
 * the same ctx (srsv_rsv_add() around srsv_space_reserve(), a quota flush
 * inside srsv_delalloc_reserve()) keeps the count until the outermost call
 * ends (srsv__outer_begin()), so that shutdown cannot free what it still
 * touches.
 */
#include "gate.h"

bool srsv__ctx_enter(struct srsv_ctx *ctx)
{
	AO_fetch_and_add1_full(&ctx->active);
	/* A parent's ctx in a child of fork() has no flushers: nothing that
	 * waits may start (ctx.c, forked_copy()). */
	if (srsv__ld(&ctx->closing) ||
	    ctx->fork_gen != srsv__ld(&srsv__fork_gen)) {
		srsv__ctx_leave(ctx);
		return false;
	}
	return true;
}

void srsv__ctx_leave(struct srsv_ctx *ctx)
{
	AO_fetch_and_sub1_full(&ctx->active);
}

/*
 * See srsv__outer_begin() in gate.h.  The outermost wrapper's ctx owns
 * the deferral: a callback run inside it (priority flushing, a quota
 * flush) may call wrappers of another ctx, whose waits cannot wait anyway
 * (-EDEADLK) and leave at once.
 */
static __thread unsigned outer_depth;
static __thread struct srsv_ctx *outer_ctx;
static __thread unsigned deferred_leaves;

void srsv__outer_begin(struct srsv_ctx *ctx)
{
	if (!outer_depth++)
		outer_ctx = ctx;
}

void srsv__outer_end(void)
{
	if (--outer_depth)
		return;
	for (; deferred_leaves; deferred_leaves--)
		srsv__ctx_leave(outer_ctx);
	outer_ctx = NULL;
}

void srsv__ctx_leave_waited(struct srsv_ctx *ctx)
{
	if (outer_depth && ctx == outer_ctx)
		deferred_leaves++;
	else
		srsv__ctx_leave(ctx);
}

