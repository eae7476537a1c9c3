/* SPDX-License-Identifier: MIT */
/*
 * The engine's callback: one flush state at a time (btrfs's flush_space()).
 *
 * Layer: the engine-callback wrapper, above block groups (whose zone
 * reset and reclaim, and chunk relocation rounds, it runs around the
 * call), below preemption, pacing and the flush walks, which choose the
 * state.  srsv__flush_space() calls the engine with no lock held and
 * marks the thread as inside a callback (so that a reservation from the
 * callback that would wait for itself gets -EDEADLK), then records what
 * the state achieved: the statistics of the state (stats.c), the trace
 * event, the ALLOC_CHUNK rules (an allocation that cannot grow the pool
 * marks it full, btrfs_chunk_alloc()'s -ENOSPC), and what a commit costs
 * (srsv_space::commit_ns, which the preemptive commit rule reads).
 */
#include "bgroup.h"
#include "callback.h"
#include "stats.h"
#include "trace.h"
#include "zoned.h"

/* States the library implements before calling the engine (zoned.c). */
static bool library_state(const struct srsv_ctx *ctx, int state)
{
	return (ctx->cfg.flags & SRSV_CTX_ZONED) &&
	       (state == SRSV_STATE_RESET_ZONES ||
		state == SRSV_STATE_RECLAIM_ZONES);
}

/* The pool's free space, signed: overcommit and forced readonly can make
 * the accounted bytes exceed the total. */
static int64_t free_space(const struct srsv_space *s)
{
	return (int64_t)srsv__space_counter(s, SRSV__TOTAL) -
	       (int64_t)srsv__space_used(s, true);
}

int srsv__flush_space(struct srsv_space *s, uint64_t bytes, int state,
		      bool for_preempt)
{
	struct srsv_ctx *ctx = s->ctx;
	uint64_t total_before = srsv__space_counter(s, SRSV__TOTAL);
	uint64_t zoned = 0, unpinned = 0, waiting, granted, start, commit_ns = 0;
	uint64_t round = 0;
	struct srsv__flush_sample f = {
		.state = state,
		.for_preempt = for_preempt,
		.called = ctx->cfg.flush && !srsv__state_disabled(s, state),
	};
	int64_t free_before;
	int ret = -EOPNOTSUPP;

	/* What the stats measure (stats.c): cheap reads, no lock. */
	waiting = srsv__ld(&s->waiting);
	f.queued = (waiting & 0xffffffffu) + (waiting >> 32);
	granted = srsv__ld(&s->stats.grant_bytes);
	free_before = free_space(s);
	start = srsv__now_ns();
	if (state == SRSV_STATE_RESET_ZONES || state == SRSV_STATE_RECLAIM_ZONES)
		zoned = srsv__zoned_flush(s, state, bytes);
	/* RECLAIM_CHUNKS: the engine is called only with candidates to take
	 * (bgroup.c); without any the state is a no-op (-EOPNOTSUPP). */
	if (state == SRSV_STATE_RECLAIM_CHUNKS && f.called)
		f.called = srsv__bgroup_reclaim_prepare(s, &round) != 0;
	if (f.called) {
		if (state == SRSV_STATE_COMMIT_TRANS) {
			srsv__lock(&s->lock);
			unpinned = s->stat_unpinned;
			srsv__unlock(&s->lock);
			commit_ns = srsv__now_ns();
		}
		srsv__enter_callback();
		ret = ctx->cfg.flush(s, (enum srsv_flush_state)state, bytes,
				     for_preempt, ctx->cfg.user);
		if (state == SRSV_STATE_COMMIT_TRANS)
			commit_ns = srsv__now_ns() - commit_ns;
		srsv__leave_callback();
		/* Counted; disabled unless the library implements the state
		 * itself (zone reset and reclaim on a zoned ctx), where the
		 * callback is the engine's hook after the library's pass. */
		f.unsupported = ret == -EOPNOTSUPP;
		f.disable = f.unsupported && !library_state(ctx, state);
		if (state == SRSV_STATE_RECLAIM_CHUNKS)
			srsv__bgroup_reclaim_finish(ctx, round);
	}
	/* The library did the state's work itself (zone reset/reclaim). */
	if (ret == -EOPNOTSUPP && zoned)
		ret = 0;
	if (state == SRSV_STATE_ALLOC_CHUNK ||
	    state == SRSV_STATE_ALLOC_CHUNK_FORCE) {
		bool grew = srsv__space_counter(s, SRSV__TOTAL) != total_before;

		/*
		 * btrfs_chunk_alloc() marks the space_info full on ENOSPC; an
		 * engine without chunk allocation, or a forced allocation that
		 * added nothing (whatever it returned: an engine failing with
		 * -EIO for ever must not keep the data walk forcing growth for
		 * ever), means the same: the pool cannot grow.
		 */
		if (ret == -ENOSPC || ret == -EOPNOTSUPP ||
		    (state == SRSV_STATE_ALLOC_CHUNK_FORCE && !grew))
			srsv__st(&s->full, 1);
		/* "ENOSPC from it counts as 0": not an error of the flush. */
		if (ret == -ENOSPC)
			ret = 0;
	}
	f.ns = srsv__now_ns() - start;
	f.freed = free_space(s) - free_before +
		  (int64_t)(srsv__ld(&s->stats.grant_bytes) - granted);
	srsv__lock(&s->lock);
	/* What a commit costs, when it committed something (an empty one is
	 * cheap and says nothing): the preemptive commit rule's horizon. */
	if (state == SRSV_STATE_COMMIT_TRANS && ret == 0 && f.called &&
	    s->stat_unpinned != unpinned)
		s->commit_ns = s->commit_ns ? (3 * s->commit_ns + commit_ns) / 4 :
			       commit_ns;
	srsv__stats_flush(s, &f);
	srsv__unlock(&s->lock);
	srsv__trace_flush_space(s, state, bytes, ret, for_preempt, f.ns,
				f.called);
	return ret;
}

