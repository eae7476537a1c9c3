/* SPDX-License-Identifier: MIT */
/*
 * The delalloc helper: quota, data space and metadata for a buffered write,
 * in one call (btrfs's btrfs_delalloc_reserve_space() and
 * btrfs_delalloc_reserve_metadata(), delalloc-space.c).
 *
 * HOW A BUFFERED WRITE RESERVES
 *
 * In upstream's order (btrfs_delalloc_reserve_space(): data space, data
 * qgroup, then btrfs_delalloc_reserve_metadata(): metadata qgroup,
 * metadata space), so that a write short of both space and quota fails
 * with -ENOSPC, as on btrfs:
 *
 * 1. Data space: may_use in the DATA (or MIXED) pool.
 * 2. Quota: DATA for the bytes and META_PREALLOC for the metadata, in one
 *    admission so that a NOWAIT write try-locks the quota once and a
 *    flushing one runs at most one quota flush.  Upstream takes the two
 *    qgroup kinds one after the other with nothing between them; one
 *    admission fails in the same cases with the same error.
 * 3. Metadata: one extent item's worth per extent the write may create,
 *    ceil(N / delalloc_max_extent_bytes) * delalloc_extent_meta_bytes
 *    (calc_inode_reservations), added to the ctx's DELALLOC rsv.
 *
 * A failing step undoes the earlier ones in reverse order.  The undo is
 * exact: the metadata is never released through the rsv's spill rules
 * (which could move it into another rsv) and the quota is given back with
 * its lock-free release, so after a failure every pool, rsv and quota holds
 * what it held before the call.
 *
 * The modes map onto the pool flush modes through mode_table below
 * (btrfs_delalloc_reserve_metadata()'s choice of flush).  LIMIT is for a caller that holds
 * a transaction (btrfs: current->journal_info set): metadata FLUSH_LIMIT,
 * whose priority states are cheap and never commit; data NO_FLUSH (btrfs
 * flushes data there only for its free-space inode); quota without a flush,
 * since the quota flush commits and the commit would wait for the caller's
 * own transaction (section 9, item 9).
 *
 * NOWAIT uses NO_FLUSH with the NOWAIT flag, not FLUSH_DATA: a NOWAIT write
 * must not pass queued tickets (FLUSH_DATA may, by btrfs's rule), and
 * NO_FLUSH is what btrfs's nowait path uses (btrfs's noflush).  Any
 * -ENOSPC or -EDQUOT in NOWAIT mode becomes -EAGAIN: the caller's answer to
 * "no room right now" is to retry in a context that may wait (the nowait direct-I/O series: an
 * error there made fio fail writes that a blocking retry would have done).
 * Its undo gives data back with srsv__space_release_nowait(), which never
 * takes the pool lock when it is busy.
 *
 * HOW A RESERVATION ENDS
 *
 * srsv_delalloc_finish() is all or nothing up to its point of no return.
 * Its steps that can fail on a consistent ctx come first, each undone if a
 * later one fails:
 *
 * 1. the metadata leaves the shared DELALLOC rsv (srsv__rsv_take(): size
 *    and reserved together, under one lock; another user may have drained
 *    or shrunk the rsv: -ENOSPC / -EINVAL, nothing changed);
 * 2. the quota moves, all kinds at once (srsv__quota_finish(): -EINVAL if
 *    the tenant holds less than the resv says); on failure step 1 is put
 *    back (srsv__rsv_put_back()).
 *
 * Then the pool transitions: metadata and data may_use -> reserved -> used
 * and the unused metadata back to the pool.  They cannot fail while the
 * caller holds what the resv says (may_use includes it); they cannot be
 * undone either, so they come last.  If one fails all the same, the
 * counters were wrong before the call: the others still run and the first
 * error is returned.
 *
 * srsv_delalloc_release() cannot refuse: a cancelled write must give back
 * everything.  When the rsv no longer holds our share (drained or shrunk by
 * another user), it drops what is left of our part of the rsv's size; the
 * rsv then returns what it holds above its size, so no may_use is stranded.
 *
 * Layer: above the whole API (it reserves quota, data and metadata
 * through the calls an engine would make), below ctx.c only.
 */
#include <string.h>

#include "async.h"
#include "delalloc.h"
#include "gate.h"
#include "quota.h"
#include "reserve.h"
#include "rsv.h"
#include "space.h"
#include "stats.h"
#include "trace.h"

#define DELALLOC_MAGIC 0x64616c6cu	/* "dall" */
/* Ended (released, finished, failed completion): holds nothing, keeps its
 * ctx, so that a second end is counted as a refusal on the ctx's pool. */
#define DELALLOC_ENDED_MAGIC 0x64616e64u	/* "dand" */

/*
 * The fallible steps, in order (fault injection names them): those of
 * srsv_delalloc_reserve(), then those of finish and release.
 */
enum delalloc_step {
	STEP_DATA = 0,
	STEP_QUOTA = 1,
	STEP_META = 2,
	STEP_FINISH_RSV = 3,
	STEP_FINISH_QUOTA = 4,
	STEP_RELEASE_RSV = 5
};

/*
 * White-box tests only (internal.h): when set, called before each step
 * with the step number; a non-zero return (a negative errno) is taken as
 * that step's failure.  Hidden symbol, reachable only by linking the
 * static library.  Read with AO_load() because every reservation reads it
 * while tests run threads; tests set it while no delalloc call runs.
 */
volatile AO_t srsv__delalloc_fault;

static int inject(int step)
{
	uintptr_t hook = (uintptr_t)AO_load(&srsv__delalloc_fault);
	srsv__delalloc_fault_fn fault = (srsv__delalloc_fault_fn)hook;

	return fault ? fault(step) : 0;
}

/* How each mode reserves. */
static const struct {
	enum srsv_flush data_mode;	/* for the DATA pool */
	enum srsv_flush meta_mode;	/* for the DELALLOC rsv */
	unsigned space_flags;		/* ::srsv_reserve_flags */
	unsigned quota_flags;		/* for the quota */
} mode_table[SRSV_DELALLOC_MODE_COUNT] = {
	/* Flush and wait: data through the async data flusher, metadata
	 * through the async metadata flusher (btrfs's FLUSH_ALL for delalloc
	 * without a transaction held). */
	[SRSV_DELALLOC_NORMAL] = {
		SRSV_FLUSH_DATA, SRSV_FLUSH_ALL, 0, 0
	},
	/* Never flush or wait, but locks may be taken. */
	[SRSV_DELALLOC_NOFLUSH] = {
		SRSV_NO_FLUSH, SRSV_NO_FLUSH, 0, SRSV_QUOTA_NOFLUSH
	},
	/* Never block at all. */
	[SRSV_DELALLOC_NOWAIT] = {
		SRSV_NO_FLUSH, SRSV_NO_FLUSH, SRSV_RESERVE_NOWAIT,
		SRSV_RESERVE_NOWAIT
	},
	/* The caller holds a transaction: cheap metadata flushing only,
	 * nothing that commits (see the essay). */
	[SRSV_DELALLOC_LIMIT] = {
		SRSV_NO_FLUSH, SRSV_FLUSH_LIMIT, 0, SRSV_QUOTA_NOFLUSH
	},
};

SRSV__EXPORT int srsv_delalloc_meta_cost(const struct srsv_ctx *ctx,
					 uint64_t bytes, uint64_t *extents,
					 uint64_t *meta_bytes)
{
	uint64_t per_extent, max_extent, n;

	if (!ctx || !meta_bytes || bytes > SRSV_MAX_BYTES)
		return -EINVAL;
	/* Both non-zero: srsv_ctx_create() fills the defaults. */
	per_extent = ctx->cfg.delalloc_extent_meta_bytes;
	max_extent = ctx->cfg.delalloc_max_extent_bytes;
	n = bytes / max_extent + (bytes % max_extent != 0);
	if (n > SRSV_MAX_BYTES / per_extent)
		return -EINVAL;
	if (extents)
		*extents = n;
	*meta_bytes = n * per_extent;
	return 0;
}

static struct srsv_space *data_space(struct srsv_ctx *ctx)
{
	return srsv__ctx_space(ctx, SRSV_POOL_DATA);
}

static struct srsv_space *meta_space(struct srsv_ctx *ctx)
{
	return srsv__ctx_space(ctx, SRSV_POOL_METADATA);
}

/* Count and trace a refused delalloc call on @ctx's DATA (or MIXED) pool
 * (stats.c); returns -EINVAL. */
static int delalloc_refused(struct srsv_ctx *ctx, uint64_t bytes)
{
	return srsv__refused(data_space(ctx), SRSV_REFUSED_DELALLOC, bytes);
}

/* A resv refused as not held: counted when it is one that ended. */
static int not_held(const struct srsv_delalloc_resv *resv)
{
	if (resv && resv->magic == DELALLOC_ENDED_MAGIC && resv->ctx)
		return delalloc_refused(resv->ctx, 0);
	return -EINVAL;
}

/* @resv holds nothing any more. */
static void end_resv(struct srsv_delalloc_resv *resv, struct srsv_ctx *ctx)
{
	memset(resv, 0, sizeof(*resv));
	resv->ctx = ctx;
	resv->magic = DELALLOC_ENDED_MAGIC;
}

/* What a reservation that took its steps holds (@magic: done or pending). */
static void record(struct srsv_delalloc_resv *resv, struct srsv_quota *quota,
		   uint64_t bytes, uint64_t meta, uint64_t extents,
		   const uint64_t *quota_bytes, uint32_t magic)
{
	resv->bytes = bytes;
	resv->data_bytes = bytes;
	resv->meta_bytes = meta;
	resv->extents = extents;
	resv->quota = quota;
	resv->quota_data_bytes = quota_bytes[SRSV_QUOTA_DATA];
	resv->quota_meta_bytes = quota_bytes[SRSV_QUOTA_META_PREALLOC];
	resv->magic = magic;
}

static int delalloc_reserve(struct srsv_ctx *ctx, struct srsv_quota *quota,
			    uint64_t bytes, enum srsv_delalloc_mode mode,
			    struct srsv_delalloc_resv *resv)
{
	uint64_t quota_bytes[SRSV_QUOTA_KIND_COUNT] = { 0 };
	struct srsv_space *data;
	struct srsv_rsv *rsv;
	uint64_t extents = 0, meta = 0;
	bool nowait;
	int ret;

	if (!ctx || !resv)
		return -EINVAL;
	if ((int)mode < 0 || (int)mode >= SRSV_DELALLOC_MODE_COUNT ||
	    (quota && srsv_quota_ctx(quota) != ctx))
		return delalloc_refused(ctx, bytes);
	/* -EINVAL only: a write too large for its metadata to be counted. */
	if (srsv_delalloc_meta_cost(ctx, bytes, &extents, &meta))
		return delalloc_refused(ctx, bytes);
	memset(resv, 0, sizeof(*resv));
	resv->ctx = ctx;
	if (!bytes) {
		/* A zero-length write needs nothing: an empty reservation. */
		resv->quota = quota;
		resv->magic = DELALLOC_MAGIC;
		return 0;
	}
	nowait = mode == SRSV_DELALLOC_NOWAIT;
	/* Every ctx has both (ctx.c). */
	data = data_space(ctx);
	rsv = srsv_ctx_rsv(ctx, SRSV_RSV_DELALLOC);

	/*
	 * NOWAIT fails fast.  With tickets queued that its NO_FLUSH
	 * reservations may not pass, on either pool, the answer can only be
	 * -EAGAIN: give it before charging the quota and the data pool only
	 * to undo both.  Five contended read-modify-writes fewer, and a call
	 * that answers sooner is less exposed to being preempted halfway,
	 * which is what the tail of NOWAIT latency is made of (bench/nowait).
	 * A ticket that leaves meanwhile makes this -EAGAIN early, never
	 * wrong: the caller retries where it may wait.
	 */
	if (nowait && (srsv__pending_for(data, SRSV_NO_FLUSH) ||
		       srsv__pending_for(meta_space(ctx), SRSV_NO_FLUSH))) {
		ret = srsv__nowait_refused(data, SRSV_NOWAIT_SPACE);
		/* The refusal a trace shows, as the data reservation's. */
		srsv__trace_reserve(data, bytes, mode_table[mode].data_mode,
				    mode_table[mode].space_flags, ret);
		goto fail;
	}

	/* 1. Data space. */
	ret = inject(STEP_DATA);
	if (!ret)
		ret = srsv_space_reserve(data, bytes, mode_table[mode].data_mode,
					 mode_table[mode].space_flags);
	if (ret)
		goto fail;

	/* 2. Quota: DATA and META_PREALLOC together. */
	if (quota) {
		quota_bytes[SRSV_QUOTA_DATA] = bytes;
		quota_bytes[SRSV_QUOTA_META_PREALLOC] = meta;
		ret = inject(STEP_QUOTA);
		if (!ret)
			ret = srsv__quota_reserve_kinds(quota, quota_bytes,
						mode_table[mode].quota_flags);
		if (ret)
			goto undo_data;
	}

	/* 3. Metadata into the DELALLOC rsv (meta > 0: bytes > 0 and the
	 * per-extent cost is never 0). */
	ret = inject(STEP_META);
	if (!ret)
		ret = srsv_rsv_add(rsv, meta, mode_table[mode].meta_mode,
				   mode_table[mode].space_flags);
	if (ret)
		goto undo_quota;

	record(resv, quota, bytes, meta, extents, quota_bytes, DELALLOC_MAGIC);
	return 0;

undo_quota:
	if (quota) {
		/* Lock-free: never blocks, even for NOWAIT.  Cannot fail: we
		 * hold these quota bytes. */
		srsv__discard(srsv_quota_release(quota, SRSV_QUOTA_DATA,
						 bytes));
		srsv__discard(srsv_quota_release(quota,
						 SRSV_QUOTA_META_PREALLOC,
						 meta));
	}
undo_data:
	/* Cannot fail: we hold these bytes of may_use. */
	if (nowait)
		srsv__space_release_nowait(data, bytes);
	else
		srsv__discard(srsv_space_release(data, bytes));
fail:
	if (nowait && (ret == -ENOSPC || ret == -EDQUOT))
		ret = srsv__nowait_refused(data, ret == -EDQUOT ?
					   SRSV_NOWAIT_QUOTA :
					   SRSV_NOWAIT_SPACE);
	memset(resv, 0, sizeof(*resv));
	return ret;
}

SRSV__EXPORT int srsv_delalloc_reserve(struct srsv_ctx *ctx,
				       struct srsv_quota *quota,
				       uint64_t bytes,
				       enum srsv_delalloc_mode mode,
				       struct srsv_delalloc_resv *resv)
{
	int ret;

	/* A wait in one step keeps its shutdown count through the later
	 * steps and their undo (internal.h). */
	srsv__outer_begin(ctx);
	ret = delalloc_reserve(ctx, quota, bytes, mode, resv);
	srsv__outer_end();
	return ret;
}

static bool resv_ok(const struct srsv_delalloc_resv *resv)
{
	return resv && resv->magic == DELALLOC_MAGIC && resv->ctx;
}

/*
 * Drop what is left of our @bytes of the rsv's size, when srsv__rsv_take()
 * refused because another user drained or shrank the shared rsv: the rsv
 * returns what it then holds above its size (with the spill rules of
 * srsv_rsv_release()).  srsv_rsv_release() refuses, changing nothing, only
 * when the size shrank below what we read: read it again.  As in a
 * compare-and-swap loop, a round repeats only because another user shrank
 * the size in between, that is, made progress.
 */
static int rsv_drop_remaining(struct srsv_rsv *rsv, uint64_t bytes)
{
	struct srsv_rsv_info info;
	int ret;

	do {
		ret = srsv_rsv_get_info(rsv, &info);
		if (ret)
			return ret;
		ret = srsv_rsv_release(rsv, srsv__min(bytes, info.size), NULL);
	} while (ret == -EINVAL);
	return ret;
}

/* Keep the first error. */
static void first_error(int *ret, int r)
{
	if (!*ret)
		*ret = r;
}

SRSV__EXPORT int srsv_delalloc_release(struct srsv_delalloc_resv *resv)
{
	struct srsv_ctx *ctx;
	struct srsv_rsv *rsv;
	int ret = 0, r;

	if (!resv_ok(resv))
		return not_held(resv);
	ctx = resv->ctx;
	rsv = srsv_ctx_rsv(ctx, SRSV_RSV_DELALLOC);

	/* Reverse order of srsv_delalloc_reserve(): metadata, quota, data.
	 * Every step runs whatever the others did. */
	if (resv->meta_bytes) {
		r = inject(STEP_RELEASE_RSV);
		if (!r)
			r = srsv__rsv_take(rsv, resv->meta_bytes);
		if (!r)
			r = srsv_space_release(meta_space(ctx),
					       resv->meta_bytes);
		else
			r = rsv_drop_remaining(rsv, resv->meta_bytes);
		first_error(&ret, r);
	}
	if (resv->quota) {
		/* Lock-free: never sleeps on the quota. */
		first_error(&ret, srsv_quota_release(resv->quota,
						     SRSV_QUOTA_DATA,
						     resv->quota_data_bytes));
		first_error(&ret, srsv_quota_release(resv->quota,
						     SRSV_QUOTA_META_PREALLOC,
						     resv->quota_meta_bytes));
	}
	if (resv->data_bytes)
		first_error(&ret, srsv_space_release(data_space(ctx),
						     resv->data_bytes));
	end_resv(resv, ctx);
	return ret;
}

/* may_use -> reserved -> used for @bytes of @s. */
static int alloc_and_use(struct srsv_space *s, uint64_t bytes)
{
	int ret;

	if (!bytes)
		return 0;
	ret = srsv_space_alloc(s, bytes);
	if (!ret)
		ret = srsv_space_commit_used(s, bytes);
	return ret;
}

SRSV__EXPORT int srsv_delalloc_finish(struct srsv_delalloc_resv *resv,
				      uint64_t meta_used)
{
	struct srsv_ctx *ctx;
	struct srsv_rsv *rsv;
	uint64_t meta;
	int ret;

	if (!resv_ok(resv))
		return not_held(resv);
	meta = resv->meta_bytes;
	if (meta_used == SRSV_DELALLOC_META_ALL)
		meta_used = meta;
	if (meta_used > meta)
		return delalloc_refused(resv->ctx, meta_used);
	ctx = resv->ctx;
	rsv = srsv_ctx_rsv(ctx, SRSV_RSV_DELALLOC);

	/* 1. The metadata out of the shared rsv (see the essay). */
	if (meta) {
		ret = inject(STEP_FINISH_RSV);
		if (!ret)
			ret = srsv__rsv_take(rsv, meta);
		if (ret)
			return ret;
	}
	/*
	 * 2. The quota follows the metadata (the reservation charged the
	 * tenant exactly the metadata bytes): what was used becomes the
	 * transaction's, the rest is given back; the data becomes used.
	 */
	if (resv->quota) {
		ret = inject(STEP_FINISH_QUOTA);
		if (!ret)
			ret = srsv__quota_finish(resv->quota,
						 resv->quota_data_bytes,
						 resv->quota_meta_bytes,
						 meta_used);
		if (ret) {
			if (meta)
				srsv__rsv_put_back(rsv, meta);
			return ret;
		}
	}

	/* 3. No return: the pool transitions (cannot fail, see the essay). */
	ret = alloc_and_use(meta_space(ctx), meta_used);
	if (meta > meta_used)
		first_error(&ret, srsv_space_release(meta_space(ctx),
						     meta - meta_used));
	first_error(&ret, alloc_and_use(data_space(ctx), resv->data_bytes));
	end_resv(resv, ctx);
	return ret;
}

/*
 * The event-loop form (async.h): NOWAIT first; when only the metadata
 * does not fit, quota and data are taken NOWAIT and the metadata waits as
 * an asynchronous FLUSH_ALL ticket.  Quota and data are the small and
 * rarely contended steps (the DATA pool has no overcommit, and its tickets
 * are another pool's business); metadata is where a write engine runs out
 * (btrfs's ENOSPC flushing).  A pending resv has its own magic: release
 * and finish refuse it until srsv_delalloc_complete().
 */
#define DELALLOC_PENDING_MAGIC 0x64617077u	/* "dapw" */

SRSV__EXPORT int srsv_delalloc_reserve_async(struct srsv_async *q,
					     struct srsv_quota *quota,
					     uint64_t bytes,
					     struct srsv_ticket *ticket,
					     struct srsv_delalloc_resv *resv)
{
	const unsigned nowait = SRSV_RESERVE_NOWAIT;
	uint64_t quota_bytes[SRSV_QUOTA_KIND_COUNT] = { 0 };
	struct srsv_ctx *ctx = q ? srsv__async_queue_ctx(q) : NULL;
	uint64_t extents = 0, meta = 0;
	struct srsv_space *data;
	int ret;

	if (!ctx || !ticket || !resv || !bytes)
		return -EINVAL;
	ret = srsv_delalloc_reserve(ctx, quota, bytes, SRSV_DELALLOC_NOWAIT,
				    resv);
	if (ret != -EAGAIN)
		return ret;
	ret = srsv_delalloc_meta_cost(ctx, bytes, &extents, &meta);
	if (ret)
		return ret;
	/* The order of srsv_delalloc_reserve(): data space, quota, then
	 * metadata (docs/quota.md). */
	data = data_space(ctx);
	ret = srsv_space_reserve(data, bytes, SRSV_NO_FLUSH, nowait);
	if (ret)
		return -EAGAIN;
	if (quota) {
		quota_bytes[SRSV_QUOTA_DATA] = bytes;
		quota_bytes[SRSV_QUOTA_META_PREALLOC] = meta;
		ret = srsv__quota_reserve_kinds(quota, quota_bytes, nowait);
		if (ret) {
			ret = -EAGAIN;
			goto undo_data;
		}
	}
	ret = srsv_ticket_reserve_async(q, meta_space(ctx), ticket, meta,
					SRSV_FLUSH_ALL, 0, UINT64_MAX, NULL,
					NULL);
	if (ret && ret != -EINPROGRESS)
		goto undo_quota;
	resv->ctx = ctx;
	record(resv, quota, bytes, meta, extents, quota_bytes,
	       DELALLOC_PENDING_MAGIC);
	if (ret == -EINPROGRESS)
		return ret;
	/* Granted at once after all (room appeared since the NOWAIT try). */
	return srsv_delalloc_complete(resv, ticket);

undo_quota:
	/* Cannot fail: we hold these quota bytes. */
	if (quota) {
		srsv__discard(srsv_quota_release(quota, SRSV_QUOTA_DATA,
						 bytes));
		srsv__discard(srsv_quota_release(quota,
						 SRSV_QUOTA_META_PREALLOC,
						 meta));
	}
undo_data:
	srsv__space_release_nowait(data, bytes);
	memset(resv, 0, sizeof(*resv));
	return ret;
}

SRSV__EXPORT int srsv_delalloc_complete(struct srsv_delalloc_resv *resv,
					struct srsv_ticket *ticket)
{
	int ret;

	if (!resv || !ticket)
		return -EINVAL;
	if (resv->magic != DELALLOC_PENDING_MAGIC)
		return not_held(resv);
	ret = srsv_ticket_wait(ticket, 0);
	/* Still queued, or still on its queue (reap it first). */
	if (ret == -EINPROGRESS || ret == -EINVAL ||
	    srsv__ticket_posted(ticket))
		return delalloc_refused(resv->ctx, resv->meta_bytes);
	if (!ret) {
		/* The granted metadata joins the DELALLOC rsv, as
		 * srsv_rsv_add() credits it. */
		srsv__rsv_put_back(srsv_ctx_rsv(resv->ctx, SRSV_RSV_DELALLOC),
				   resv->meta_bytes);
		resv->magic = DELALLOC_MAGIC;
		return 0;
	}
	/* Cannot fail: the pending resv holds these bytes. */
	srsv__discard(srsv_space_release(data_space(resv->ctx),
					 resv->data_bytes));
	if (resv->quota) {
		srsv__discard(srsv_quota_release(resv->quota, SRSV_QUOTA_DATA,
						 resv->quota_data_bytes));
		srsv__discard(srsv_quota_release(resv->quota,
						 SRSV_QUOTA_META_PREALLOC,
						 resv->quota_meta_bytes));
	}
	end_resv(resv, resv->ctx);
	return ret;
}
