/* SPDX-License-Identifier: MIT */
/*
 * Block reservations (btrfs's block-rsv.c).
 *
 * An rsv keeps a target @size and holds @reserved bytes of its pool's
 * may_use, so a subsystem can draw small amounts without touching the pool
 * (and without its shared admission word).  Releasing shrinks the size and
 * lets what is held above it spill: a deferred-items rsv tops up the global
 * reserve, any other rsv tops up the delayed-refs rsv (both only within the
 * same pool and up to their free room), and the rest returns to the pool,
 * where it grants waiting tickets.
 *
 * The global reserve is the emergency supply: sized by the engine, filled
 * unconditionally (it may overcommit the pool, as btrfs's), drawn from by
 * the use_block_rsv fallback chain and stolen from by FLUSH_ALL_STEAL and
 * FLUSH_EVICT tickets that would otherwise fail, as long as it keeps 10% of
 * its size.
 *
 * Locking: pool lock, then rsv lock.  An rsv's reserved and size are
 * atomic words: srsv_rsv_use() takes no lock, and the preemptive heuristic
 * reads the standard rsvs on the reservation fast path.
 *
 * Layer: the engine-facing API, above the reserve path (an rsv is filled
 * by srsv_space_reserve()).  The primitives on an rsv's words are
 * blockrsv.h's, shared with the tickets layer, where the global reserve
 * is refilled by returning space and stolen from by failing tickets
 * (tickets.c), as in upstream's space-info.c.
 */
#include <string.h>

#include "blockrsv.h"
#include "counters.h"
#include "gate.h"
#include "space.h"
#include "stats.h"
#include "tickets.h"
#include "trace.h"

#define R(rsv) srsv__rsv_of(rsv)

static bool rsv_valid(const struct srsv_rsv *rsv)
{
	return rsv && R(rsv)->magic == SRSV__RSV_MAGIC && R(rsv)->space;
}

static struct srsv_ctx *rsv_ctx(const struct srsv_rsv *rsv)
{
	return R(rsv)->space->ctx;
}

/* Count and trace a refused rsv call (stats.c); returns -EINVAL. */
static int rsv_refused(const struct srsv_rsv *rsv, uint64_t bytes)
{
	return srsv__refused(R(rsv)->space, SRSV_REFUSED_RSV_ARGS, bytes);
}

int srsv__rsv_init(struct srsv_rsv *rsv, struct srsv_space *s, int type)
{
	int ret;

	memset(rsv, 0, sizeof(*rsv));
	ret = -pthread_mutex_init(&R(rsv)->lock, NULL);
	if (ret)
		return ret;
	R(rsv)->space = s;
	R(rsv)->type = type;
	R(rsv)->magic = SRSV__RSV_MAGIC;
	return 0;
}

void srsv__rsv_teardown(struct srsv_rsv *rsv)
{
	pthread_mutex_destroy(&R(rsv)->lock);
	R(rsv)->magic = 0;
}

/* btrfs_block_rsv_add_bytes(); rsv lock held. */
static void add_bytes_locked(struct srsv_rsv *rsv, uint64_t bytes,
			     bool update_size)
{
	if (update_size)
		srsv__rsv_set_size(rsv, srsv__rsv_size(rsv) + bytes);
	srsv__rsv_res_add(rsv, bytes);
}

/*
 * Credit freshly reserved pool bytes to @rsv.  NOWAIT callers only try the
 * lock; when it is busy the bytes go back to the pool and the answer is
 * -EAGAIN.
 */
static int credit(struct srsv_rsv *rsv, uint64_t bytes, bool update_size,
		  unsigned flags)
{
	if (flags & SRSV_RESERVE_NOWAIT) {
		if (!srsv__rsv_trylock(rsv)) {
			srsv__space_release_nowait(R(rsv)->space, bytes);
			return srsv__nowait_refused(R(rsv)->space,
						    SRSV_NOWAIT_LOCK);
		}
	} else {
		srsv__rsv_lock(rsv);
	}
	add_bytes_locked(rsv, bytes, update_size);
	srsv__rsv_unlock(rsv);
	return 0;
}

static void add_bytes(struct srsv_rsv *rsv, uint64_t bytes, bool update_size)
{
	credit(rsv, bytes, update_size, 0);
}

/* btrfs_block_rsv_use_bytes(): lock-free. */
static int use_bytes(struct srsv_rsv *rsv, uint64_t bytes)
{
	return srsv__rsv_res_sub(rsv, bytes) ? 0 : -ENOSPC;
}

/*
 * Used by the delalloc helper to end a reservation: a use and a release
 * done as two locked calls could fail half-way (another user of a shared
 * rsv shrinks its size in between) and strand the bytes.  Reserved and
 * size drop together, so whatever the rsv held above its size before, it
 * holds after: nothing spills.
 */
int srsv__rsv_take(struct srsv_rsv *rsv, uint64_t bytes)
{
	int ret = 0;

	srsv__rsv_lock(rsv);
	if (srsv__rsv_size(rsv) < bytes)
		ret = -EINVAL;
	else if (!srsv__rsv_res_sub(rsv, bytes))
		ret = -ENOSPC;
	else
		srsv__rsv_set_size(rsv, srsv__rsv_size(rsv) - bytes);
	srsv__rsv_unlock(rsv);
	srsv__trace_rsv(rsv, SRSV__RSV_USE, bytes, ret);
	return ret;
}

void srsv__rsv_put_back(struct srsv_rsv *rsv, uint64_t bytes)
{
	add_bytes(rsv, bytes, true);
	srsv__trace_rsv(rsv, SRSV__RSV_ADD, bytes, 0);
}

SRSV__EXPORT int srsv_rsv_init(struct srsv_rsv *rsv, struct srsv_space *space,
			       enum srsv_rsv_type type)
{
	if (!rsv || !space || type == SRSV_RSV_GLOBAL || (int)type < 0 ||
	    type >= SRSV_RSV_TYPE_COUNT)
		return -EINVAL;
	return srsv__rsv_init(rsv, space, type);
}

SRSV__EXPORT int srsv_rsv_destroy(struct srsv_rsv *rsv)
{
	int ret;

	if (!rsv_valid(rsv))
		return -EINVAL;
	if (srsv__rsv_is_std(rsv))
		return rsv_refused(rsv, 0);
	ret = srsv_rsv_release(rsv, SRSV_RSV_ALL, NULL);
	if (ret)
		return ret;
	srsv__rsv_teardown(rsv);
	return 0;
}

SRSV__EXPORT int srsv_rsv_add(struct srsv_rsv *rsv, uint64_t bytes,
			      enum srsv_flush mode, unsigned flags)
{
	int ret;

	if (!rsv_valid(rsv))
		return -EINVAL;
	if (bytes > SRSV_MAX_BYTES)
		return rsv_refused(rsv, bytes);
	if (!bytes)
		return 0;
	/* Keeps a wait's shutdown count while we credit (internal.h). */
	srsv__outer_begin(R(rsv)->space->ctx);
	ret = srsv_space_reserve(R(rsv)->space, bytes, mode, flags);
	if (!ret)
		ret = credit(rsv, bytes, true, flags);
	srsv__trace_rsv(rsv, SRSV__RSV_ADD, bytes, ret);
	srsv__outer_end();
	return ret;
}

SRSV__EXPORT int srsv_rsv_refill(struct srsv_rsv *rsv, uint64_t min_reserved,
				 enum srsv_flush mode, unsigned flags)
{
	uint64_t missing = 0, reserved;
	int ret;

	if (!rsv_valid(rsv))
		return -EINVAL;
	if (min_reserved > SRSV_MAX_BYTES)
		return rsv_refused(rsv, min_reserved);
	if (flags & SRSV_RESERVE_NOWAIT) {
		if (!srsv__rsv_trylock(rsv))
			return srsv__nowait_refused(R(rsv)->space,
						    SRSV_NOWAIT_LOCK);
	} else {
		srsv__rsv_lock(rsv);
	}
	/* Once: a lock-free use may lower it between two reads. */
	reserved = srsv__rsv_reserved(rsv);
	if (reserved < min_reserved)
		missing = min_reserved - reserved;
	srsv__rsv_unlock(rsv);
	if (!missing)
		return 0;
	/* Keeps a wait's shutdown count while we credit (internal.h). */
	srsv__outer_begin(R(rsv)->space->ctx);
	ret = srsv_space_reserve(R(rsv)->space, missing, mode, flags);
	if (!ret)
		ret = credit(rsv, missing, false, flags);
	srsv__trace_rsv(rsv, SRSV__RSV_REFILL, missing, ret);
	srsv__outer_end();
	return ret;
}

SRSV__EXPORT int srsv_rsv_use(struct srsv_rsv *rsv, uint64_t bytes)
{
	int ret;

	if (!rsv_valid(rsv))
		return -EINVAL;
	if (bytes > SRSV_MAX_BYTES)
		return rsv_refused(rsv, bytes);
	ret = use_bytes(rsv, bytes);
	srsv__trace_rsv(rsv, SRSV__RSV_USE, bytes, ret);
	return ret;
}

SRSV__EXPORT int srsv_rsv_migrate(struct srsv_rsv *src, struct srsv_rsv *dst,
				  uint64_t bytes, bool update_size)
{
	int ret;

	if (!rsv_valid(src) || !rsv_valid(dst))
		return -EINVAL;
	if (src == dst || R(src)->space != R(dst)->space ||
	    bytes > SRSV_MAX_BYTES)
		return rsv_refused(src, bytes);
	ret = use_bytes(src, bytes);
	if (!ret)
		add_bytes(dst, bytes, update_size);
	srsv__trace_rsv(src, SRSV__RSV_MIGRATE, bytes, ret);
	return ret;
}

SRSV__EXPORT int srsv_rsv_check(struct srsv_rsv *rsv, unsigned min_percent)
{
	int ret = -ENOSPC;

	if (!rsv_valid(rsv))
		return -EINVAL;
	if (min_percent > 100)
		return rsv_refused(rsv, min_percent);
	srsv__rsv_lock(rsv);
	if (srsv__rsv_reserved(rsv) >= srsv__mult_perc(srsv__rsv_size(rsv), min_percent))
		ret = 0;
	srsv__rsv_unlock(rsv);
	return ret;
}

/* Where released excess goes (btrfs_block_rsv_release()). */
static struct srsv_rsv *spill_target(struct srsv_rsv *rsv)
{
	struct srsv_ctx *ctx = rsv_ctx(rsv);
	struct srsv_rsv *global = &ctx->std_rsv[SRSV_RSV_GLOBAL];
	struct srsv_rsv *delrefs = &ctx->std_rsv[SRSV_RSV_DELREFS];
	struct srsv_rsv *target = NULL;

	if (R(rsv)->type == SRSV_RSV_DELOPS) {
		target = ctx->std_rsv_ready[SRSV_RSV_GLOBAL] ? global : NULL;
	} else if (rsv != global && ctx->std_rsv_ready[SRSV_RSV_DELREFS] &&
		   rsv != delrefs) {
		/* The full test is repeated under its lock when spilling. */
		target = delrefs;
	}
	if (target && R(target)->space != R(rsv)->space)
		target = NULL;
	return target;
}

SRSV__EXPORT int srsv_rsv_release(struct srsv_rsv *rsv, uint64_t bytes,
				  uint64_t *released)
{
	struct srsv_rsv *target;
	uint64_t excess = 0, spilled = 0;

	if (!rsv_valid(rsv))
		return -EINVAL;
	srsv__rsv_lock(rsv);
	if (bytes == SRSV_RSV_ALL) {
		bytes = srsv__rsv_size(rsv);
	} else if (bytes > srsv__rsv_size(rsv)) {
		srsv__rsv_unlock(rsv);
		return srsv__refused(R(rsv)->space, SRSV_REFUSED_RSV_RELEASE,
				     bytes);
	}
	srsv__rsv_set_size(rsv, srsv__rsv_size(rsv) - bytes);
	excess = srsv__rsv_res_trim(rsv, srsv__rsv_size(rsv));
	srsv__rsv_unlock(rsv);
	if (released)
		*released = excess;
	srsv__trace_rsv(rsv, SRSV__RSV_RELEASE, excess, 0);
	if (!excess)
		return 0;

	target = spill_target(rsv);
	if (target) {
		uint64_t size, reserved;

		srsv__rsv_lock(target);
		/*
		 * Read the room once.  A lock-free use may lower reserved
		 * meanwhile: the room we computed is then smaller than the
		 * real one, never larger, and we spill at most @excess.  Read
		 * a second time for the result (srsv__min() once evaluated its
		 * arguments twice), a use in between made the room larger
		 * than @excess, and the target was credited with bytes no
		 * may_use stood behind.
		 */
		size = srsv__rsv_size(target);
		reserved = srsv__rsv_reserved(target);
		if (size > reserved) {
			spilled = srsv__min(excess, size - reserved);
			add_bytes_locked(target, spilled, false);
		}
		srsv__rsv_unlock(target);
		if (spilled)
			srsv__trace_rsv(target, SRSV__RSV_SPILL, spilled, 0);
	}
	/* Cannot fail: the rsv held these bytes of may_use. */
	if (excess > spilled)
		srsv__discard(srsv_space_release(R(rsv)->space,
						 excess - spilled));
	return 0;
}

/*
 * Refill the global reserve to its size or give back its excess
 * (btrfs_update_global_block_rsv()); pool lock held.
 */
static void global_settle(struct srsv_ctx *ctx, struct srsv_space *s)
{
	struct srsv_rsv *global = &ctx->std_rsv[SRSV_RSV_GLOBAL];
	uint64_t delta;

	srsv__assert_held(&s->lock);
	srsv__rsv_lock(global);
	if (srsv__rsv_reserved(global) < srsv__rsv_size(global)) {
		/* Unconditional: the global reserve may overcommit.  A
		 * concurrent use only takes more of what we add. */
		delta = srsv__rsv_size(global) - srsv__rsv_reserved(global);
		srsv__may_use_add(s, delta);
		srsv__rsv_res_add(global, delta);
	} else {
		delta = srsv__rsv_res_trim(global, srsv__rsv_size(global));
		if (delta) {
			srsv__may_use_sub(s, delta);
			srsv__try_grant_tickets(s);
		}
	}
	/* A reserve as large as the pool: the pool must grow. */
	if (srsv__rsv_size(global) >= srsv__space_counter(s, SRSV__TOTAL))
		s->force_alloc = true;
	srsv__rsv_unlock(global);
}

SRSV__EXPORT int srsv_ctx_resize_global_rsv(struct srsv_ctx *ctx,
					    uint64_t bytes)
{
	struct srsv_rsv *global;
	struct srsv_space *s;

	if (!ctx || !ctx->std_rsv_ready[SRSV_RSV_GLOBAL])
		return -EINVAL;
	if (bytes > SRSV_MAX_BYTES)
		return rsv_refused(&ctx->std_rsv[SRSV_RSV_GLOBAL], bytes);
	global = &ctx->std_rsv[SRSV_RSV_GLOBAL];
	s = R(global)->space;
	srsv__lock(&s->lock);
	srsv__rsv_lock(global);
	srsv__rsv_set_size(global, bytes);
	srsv__rsv_unlock(global);
	global_settle(ctx, s);
	srsv__unlock(&s->lock);
	srsv__trace_rsv(global, SRSV__RSV_RESIZE_GLOBAL, bytes, 0);
	return 0;
}

SRSV__EXPORT int srsv_rsv_use_fallback(struct srsv_rsv *rsv, uint64_t bytes,
				       struct srsv_rsv **used_rsv)
{
	struct srsv_ctx *ctx;
	struct srsv_rsv *global, *paid = rsv;
	bool global_updated = false, failfast;
	uint64_t size;
	int ret;

	if (!rsv_valid(rsv))
		return -EINVAL;
	if (bytes == 0 || bytes > SRSV_MAX_BYTES)
		return rsv_refused(rsv, bytes);
	ctx = rsv_ctx(rsv);
	global = &ctx->std_rsv[SRSV_RSV_GLOBAL];
	srsv__rsv_lock(rsv);
	size = srsv__rsv_size(rsv);
	failfast = R(rsv)->failfast;
	srsv__rsv_unlock(rsv);
	if (size == 0)
		goto try_reserve;
again:
	ret = use_bytes(rsv, bytes);
	srsv__trace_rsv(rsv, SRSV__RSV_FALLBACK_USE, bytes, ret);
	if (!ret)
		goto out;
	if (failfast)
		return ret;
	if (rsv == global && !global_updated) {
		global_updated = true;
		srsv__lock(&R(rsv)->space->lock);
		global_settle(ctx, R(rsv)->space);
		srsv__unlock(&R(rsv)->space->lock);
		srsv__trace_rsv(rsv, SRSV__RSV_FALLBACK_GLOBAL_REFILL, bytes, 0);
		goto again;
	}
try_reserve:
	ret = srsv_space_reserve(R(rsv)->space, bytes, SRSV_NO_FLUSH, 0);
	srsv__trace_rsv(rsv, SRSV__RSV_FALLBACK_NO_FLUSH, bytes, ret);
	if (!ret)
		goto out;
	/* The pool is short: borrow from the global reserve if it is ours. */
	if (rsv != global && ctx->std_rsv_ready[SRSV_RSV_GLOBAL] &&
	    R(global)->space == R(rsv)->space) {
		ret = use_bytes(global, bytes);
		srsv__trace_rsv(global, SRSV__RSV_FALLBACK_FROM_GLOBAL, bytes, ret);
		if (!ret) {
			paid = global;
			goto out;
		}
	}
	/*
	 * All hope is lost, but reservations are pessimistic: if the bytes
	 * physically fit, take them rather than fail the engine's operation.
	 * (A data pool has no emergency mode: btrfs's chain is metadata's.)
	 */
	if (R(rsv)->space->is_data && !R(rsv)->space->is_metadata)
		return -ENOSPC;
	ret = srsv_space_reserve(R(rsv)->space, bytes, SRSV_FLUSH_EMERGENCY, 0);
	srsv__trace_rsv(rsv, SRSV__RSV_FALLBACK_EMERGENCY, bytes, ret);
	if (ret)
		return ret;
out:
	if (used_rsv)
		*used_rsv = paid;
	return 0;
}

SRSV__EXPORT int srsv_rsv_set_failfast(struct srsv_rsv *rsv, bool failfast)
{
	if (!rsv_valid(rsv))
		return -EINVAL;
	srsv__rsv_lock(rsv);
	R(rsv)->failfast = failfast;
	srsv__rsv_unlock(rsv);
	return 0;
}

SRSV__EXPORT int srsv_rsv_get_info_sized(struct srsv_rsv *rsv,
					 struct srsv_rsv_info *out,
					 size_t size)
{
	struct srsv_rsv_info all = { 0 }, *info = &all;

	if (!rsv_valid(rsv) || !out ||
	    size < SRSV__OUT_MIN(struct srsv_rsv_info, failfast))
		return -EINVAL;
	srsv__rsv_lock(rsv);
	info->size = srsv__rsv_size(rsv);
	info->reserved = srsv__rsv_reserved(rsv);
	info->type = R(rsv)->type;
	info->full = info->reserved >= info->size;
	info->failfast = R(rsv)->failfast;
	srsv__rsv_unlock(rsv);
	SRSV__OUT_COPY(out, all, info_size, size);
	return 0;
}

SRSV__EXPORT struct srsv_rsv *srsv_ctx_rsv(struct srsv_ctx *ctx,
					   enum srsv_rsv_type type)
{
	if (!ctx || (int)type < 0 || type >= SRSV_RSV_TYPE_COUNT ||
	    !ctx->std_rsv_ready[type])
		return NULL;
	return &ctx->std_rsv[type];
}
