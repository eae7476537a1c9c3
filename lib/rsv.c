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
 */
#include <string.h>

#include "internal.h"
#include "rsv_priv.h"
#include "trace.h"

#define SRSV__RSV_MAGIC 0x72737621u	/* "rsv!" */
#define R(rsv) srsv__rsv_of(rsv)
/* btrfs keeps 10% of the global reserve out of reach of stealing. */
#define SRSV__GLOBAL_STEAL_KEEP_PERCENT 10

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

static bool is_std(const struct srsv_rsv *rsv)
{
	struct srsv_ctx *ctx = rsv_ctx(rsv);

	return R(rsv)->type >= 0 && R(rsv)->type < SRSV_RSV_TYPE_COUNT &&
	       rsv == &ctx->std_rsv[R(rsv)->type];
}

/*
 * An rsv's reserved is an atomic word: srsv_rsv_use(), the hot call, is a
 * compare-and-swap and takes no lock; every other change of it is atomic
 * too, under the rsv lock where the size must be read consistently.  The
 * size only changes under the lock but is read lock-free (the preemptive
 * heuristic reads the standard rsvs on the reservation fast path).
 * "full" is derived: reserved >= size.
 */
_Static_assert(sizeof(((struct srsv__rsv *)0)->reserved) == sizeof(AO_t),
	       "rsv counters are atomic words");

static volatile AO_t *res_word(const struct srsv_rsv *rsv)
{
	return (volatile AO_t *)(uintptr_t)&R(rsv)->reserved;
}

static volatile AO_t *size_word(const struct srsv_rsv *rsv)
{
	return (volatile AO_t *)(uintptr_t)&R(rsv)->size;
}

static uint64_t rsv_reserved(const struct srsv_rsv *rsv)
{
	return (uint64_t)AO_load_acquire(res_word(rsv));
}

static uint64_t rsv_size(const struct srsv_rsv *rsv)
{
	return (uint64_t)AO_load_acquire(size_word(rsv));
}

/* Rsv lock held. */
static void rsv_set_size(struct srsv_rsv *rsv, uint64_t size)
{
	AO_store_release(size_word(rsv), (AO_t)size);
}

/* Bytes that left a standard rsv: the preemptive flusher's progress. */
static void drained(struct srsv_rsv *rsv, uint64_t bytes)
{
	if (bytes && is_std(rsv))
		AO_fetch_and_add(&rsv_ctx(rsv)->std_rsv_drained[R(rsv)->type],
				 (AO_t)bytes);
}

static void res_add(struct srsv_rsv *rsv, uint64_t bytes)
{
	AO_fetch_and_add_full(res_word(rsv), (AO_t)bytes);
}

/* Take @bytes if held; false and unchanged otherwise. */
static bool res_sub(struct srsv_rsv *rsv, uint64_t bytes)
{
	if (!srsv__ao_sub_checked(res_word(rsv), bytes))
		return false;
	drained(rsv, bytes);
	return true;
}

/* Cut reserved down to @limit; returns what was cut. */
static uint64_t res_trim(struct srsv_rsv *rsv, uint64_t limit)
{
	AO_t old;

	do {
		old = AO_load(res_word(rsv));
		if (old <= limit)
			return 0;
	} while (!AO_compare_and_swap_full(res_word(rsv), old, (AO_t)limit));
	drained(rsv, old - limit);
	return old - limit;
}

uint64_t srsv__std_rsv_reserved(struct srsv_ctx *ctx, int type)
{
	return ctx->std_rsv_ready[type] ? rsv_reserved(&ctx->std_rsv[type]) : 0;
}

uint64_t srsv__std_rsv_size(struct srsv_ctx *ctx, int type)
{
	return ctx->std_rsv_ready[type] ? rsv_size(&ctx->std_rsv[type]) : 0;
}

struct srsv_space *srsv__metadata_space(struct srsv_ctx *ctx)
{
	return ctx->spaces[SRSV_POOL_MIXED] ? ctx->spaces[SRSV_POOL_MIXED] :
					      ctx->spaces[SRSV_POOL_METADATA];
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

static void rsv_lock(struct srsv_rsv *rsv)
{
	pthread_mutex_lock(&R(rsv)->lock);
	srsv__lock_note(true);
}

/* NOWAIT callers: never sleeps. */
static bool rsv_trylock(struct srsv_rsv *rsv)
{
	bool ok = srsv__mutex_trylock_spin(&R(rsv)->lock);

	if (ok)
		srsv__lock_note(false);
	else
		srsv__lock_note_busy();
	return ok;
}

static void rsv_unlock(struct srsv_rsv *rsv)
{
	pthread_mutex_unlock(&R(rsv)->lock);
}

/* btrfs_block_rsv_add_bytes(); rsv lock held. */
static void add_bytes_locked(struct srsv_rsv *rsv, uint64_t bytes,
			     bool update_size)
{
	if (update_size)
		rsv_set_size(rsv, rsv_size(rsv) + bytes);
	res_add(rsv, bytes);
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
		if (!rsv_trylock(rsv)) {
			srsv__space_release_nowait(R(rsv)->space, bytes);
			return -EAGAIN;
		}
	} else {
		rsv_lock(rsv);
	}
	add_bytes_locked(rsv, bytes, update_size);
	rsv_unlock(rsv);
	return 0;
}

static void add_bytes(struct srsv_rsv *rsv, uint64_t bytes, bool update_size)
{
	credit(rsv, bytes, update_size, 0);
}

/* btrfs_block_rsv_use_bytes(): lock-free. */
static int use_bytes(struct srsv_rsv *rsv, uint64_t bytes)
{
	return res_sub(rsv, bytes) ? 0 : -ENOSPC;
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

	rsv_lock(rsv);
	if (rsv_size(rsv) < bytes)
		ret = -EINVAL;
	else if (!res_sub(rsv, bytes))
		ret = -ENOSPC;
	else
		rsv_set_size(rsv, rsv_size(rsv) - bytes);
	rsv_unlock(rsv);
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
	if (is_std(rsv))
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
		if (!rsv_trylock(rsv))
			return -EAGAIN;
	} else {
		rsv_lock(rsv);
	}
	/* Once: a lock-free use may lower it between two reads. */
	reserved = rsv_reserved(rsv);
	if (reserved < min_reserved)
		missing = min_reserved - reserved;
	rsv_unlock(rsv);
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
	rsv_lock(rsv);
	if (rsv_reserved(rsv) >= srsv__mult_perc(rsv_size(rsv), min_percent))
		ret = 0;
	rsv_unlock(rsv);
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
	rsv_lock(rsv);
	if (bytes == SRSV_RSV_ALL) {
		bytes = rsv_size(rsv);
	} else if (bytes > rsv_size(rsv)) {
		rsv_unlock(rsv);
		return srsv__refused(R(rsv)->space, SRSV_REFUSED_RSV_RELEASE,
				     bytes);
	}
	rsv_set_size(rsv, rsv_size(rsv) - bytes);
	excess = res_trim(rsv, rsv_size(rsv));
	rsv_unlock(rsv);
	if (released)
		*released = excess;
	srsv__trace_rsv(rsv, SRSV__RSV_RELEASE, excess, 0);
	if (!excess)
		return 0;

	target = spill_target(rsv);
	if (target) {
		uint64_t size, reserved;

		rsv_lock(target);
		/*
		 * Read the room once.  A lock-free use may lower reserved
		 * meanwhile: the room we computed is then smaller than the
		 * real one, never larger, and we spill at most @excess.  Read
		 * a second time for the result (srsv__min() once evaluated its
		 * arguments twice), a use in between made the room larger
		 * than @excess, and the target was credited with bytes no
		 * may_use stood behind.
		 */
		size = rsv_size(target);
		reserved = rsv_reserved(target);
		if (size > reserved) {
			spilled = srsv__min(excess, size - reserved);
			add_bytes_locked(target, spilled, false);
		}
		rsv_unlock(target);
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
	rsv_lock(global);
	if (rsv_reserved(global) < rsv_size(global)) {
		/* Unconditional: the global reserve may overcommit.  A
		 * concurrent use only takes more of what we add. */
		delta = rsv_size(global) - rsv_reserved(global);
		srsv__may_use_add(s, delta);
		res_add(global, delta);
	} else {
		delta = res_trim(global, rsv_size(global));
		if (delta) {
			srsv__may_use_sub(s, delta);
			srsv__try_grant_tickets(s);
		}
	}
	/* A reserve as large as the pool: the pool must grow. */
	if (rsv_size(global) >= srsv__space_counter(s, SRSV__TOTAL))
		s->force_alloc = true;
	rsv_unlock(global);
}

uint64_t srsv__global_rsv_refill(struct srsv_space *s, uint64_t bytes)
{
	struct srsv_ctx *ctx = s->ctx;
	struct srsv_rsv *global = &ctx->std_rsv[SRSV_RSV_GLOBAL];
	uint64_t size, reserved, add = 0;

	srsv__assert_held(&s->lock);
	if (!ctx->std_rsv_ready[SRSV_RSV_GLOBAL] || R(global)->space != s)
		return 0;
	rsv_lock(global);
	size = rsv_size(global);
	reserved = rsv_reserved(global);
	if (reserved < size) {
		/* The freed bytes were claimed (pinned) a moment ago, so
		 * charging them to may_use cannot overcommit the pool. */
		add = srsv__min(bytes, size - reserved);
		srsv__may_use_add(s, add);
		res_add(global, add);
	}
	rsv_unlock(global);
	if (add)
		srsv__trace_rsv(global, SRSV__RSV_REFILL, add, 0);
	return add;
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
	rsv_lock(global);
	rsv_set_size(global, bytes);
	rsv_unlock(global);
	global_settle(ctx, s);
	srsv__unlock(&s->lock);
	srsv__trace_rsv(global, SRSV__RSV_RESIZE_GLOBAL, bytes, 0);
	return 0;
}

bool srsv__steal_from_global_rsv(struct srsv_space *s, struct srsv__ticket *t)
{
	struct srsv_ctx *ctx = s->ctx;
	struct srsv_rsv *global = &ctx->std_rsv[SRSV_RSV_GLOBAL];
	uint64_t keep;
	AO_t old;

	srsv__assert_held(&s->lock);
	if (!t->steal || !ctx->std_rsv_ready[SRSV_RSV_GLOBAL] ||
	    R(global)->space != s)
		return false;
	rsv_lock(global);
	keep = srsv__mult_perc(rsv_size(global), SRSV__GLOBAL_STEAL_KEEP_PERCENT);
	/* The bytes change hands inside may_use: no counter moves. */
	do {
		old = AO_load(res_word(global));
		if (old < keep + t->bytes) {
			rsv_unlock(global);
			return false;
		}
	} while (!AO_compare_and_swap_full(res_word(global), old,
					   old - (AO_t)t->bytes));
	drained(global, t->bytes);
	rsv_unlock(global);
	srsv__trace_rsv(global, SRSV__RSV_STEAL, t->bytes, 0);
	srsv__ticket_remove(s, t);
	t->bytes = 0;
	s->tickets_id++;
	srsv__ticket_end(s, t, 0);
	return true;
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
	rsv_lock(rsv);
	size = rsv_size(rsv);
	failfast = R(rsv)->failfast;
	rsv_unlock(rsv);
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
	rsv_lock(rsv);
	R(rsv)->failfast = failfast;
	rsv_unlock(rsv);
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
	rsv_lock(rsv);
	info->size = rsv_size(rsv);
	info->reserved = rsv_reserved(rsv);
	info->type = R(rsv)->type;
	info->full = info->reserved >= info->size;
	info->failfast = R(rsv)->failfast;
	rsv_unlock(rsv);
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
