/* SPDX-License-Identifier: MIT */
/*
 * The delalloc helper: quota, data space and metadata for a buffered write,
 * in one call (btrfs's btrfs_delalloc_reserve_space() and
 * btrfs_delalloc_reserve_metadata(), delalloc-space.c).
 *
 * HOW A BUFFERED WRITE RESERVES
 *
 * 1. Quota first (seed 000: "qgroup meta prealloc first, then the space
 *    reservation; if that fails, free the qgroup prealloc"): DATA for the
 *    bytes and META_PREALLOC for the metadata, in one admission so that a
 *    NOWAIT write try-locks the quota once and a flushing one flushes once.
 * 2. Data space: may_use in the DATA (or MIXED) pool.
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
 * The modes map onto the pool flush modes through mode_table below.
 * NOWAIT uses NO_FLUSH with the NOWAIT flag, not FLUSH_DATA: a NOWAIT write
 * must not pass queued tickets (FLUSH_DATA may, by btrfs's rule), and
 * NO_FLUSH is what btrfs's nowait path uses (seed 000's noflush).  Any
 * -ENOSPC or -EDQUOT in NOWAIT mode becomes -EAGAIN: the caller's answer to
 * "no room right now" is to retry in a context that may wait (seed 000: an
 * error there made fio fail writes that a blocking retry would have done).
 * Its undo gives data back with srsv__space_release_nowait(), which never
 * takes the pool lock when it is busy.
 */
#include <string.h>

#include "internal.h"
#include "trace.h"

#define DELALLOC_MAGIC 0x64616c6cu	/* "dall" */

/* The steps of a reservation, in order (fault injection names them). */
enum delalloc_step {
	STEP_QUOTA = 0,
	STEP_DATA = 1,
	STEP_META = 2
};

/*
 * White-box tests only: when set, called before each step with the step
 * number; a non-zero return (a negative errno) is taken as that step's
 * failure, after the earlier steps succeeded.  Hidden symbol, reachable
 * only by linking the static library.  Not thread-safe: set it while no
 * reservation runs.
 */
int (*srsv__delalloc_fault)(int step);

static int inject(int step)
{
	int (*fault)(int) = srsv__delalloc_fault;

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
};

SRSV__EXPORT int srsv_delalloc_meta_cost(const struct srsv_ctx *ctx,
					 uint64_t bytes, uint64_t *extents,
					 uint64_t *meta_bytes)
{
	uint64_t per_extent, max_extent, n;

	if (!ctx || !meta_bytes || bytes > SRSV_MAX_BYTES)
		return -EINVAL;
	/* The ctx fills these defaults; fall back to them all the same. */
	per_extent = ctx->cfg.delalloc_extent_meta_bytes ?
		     ctx->cfg.delalloc_extent_meta_bytes : ctx->cfg.item_bytes;
	max_extent = ctx->cfg.delalloc_max_extent_bytes ?
		     ctx->cfg.delalloc_max_extent_bytes : SZ_128M;
	n = bytes / max_extent + (bytes % max_extent != 0);
	if (per_extent && n > SRSV_MAX_BYTES / per_extent)
		return -EINVAL;
	if (extents)
		*extents = n;
	*meta_bytes = n * per_extent;
	return 0;
}

static struct srsv_space *data_space(struct srsv_ctx *ctx)
{
	return srsv_ctx_space(ctx, SRSV_POOL_DATA);
}

static struct srsv_space *meta_space(struct srsv_ctx *ctx)
{
	return srsv_ctx_space(ctx, SRSV_POOL_METADATA);
}

SRSV__EXPORT int srsv_delalloc_reserve(struct srsv_ctx *ctx,
				       struct srsv_quota *quota,
				       uint64_t bytes,
				       enum srsv_delalloc_mode mode,
				       struct srsv_delalloc_resv *resv)
{
	uint64_t quota_bytes[SRSV_QUOTA_KIND_COUNT] = { 0 };
	struct srsv_space *data;
	struct srsv_rsv *rsv;
	uint64_t extents = 0, meta = 0;
	bool nowait;
	int ret;

	if (!ctx || !resv || (int)mode < 0 ||
	    (int)mode >= SRSV_DELALLOC_MODE_COUNT)
		return -EINVAL;
	if (quota && srsv_quota_ctx(quota) != ctx)
		return -EINVAL;
	ret = srsv_delalloc_meta_cost(ctx, bytes, &extents, &meta);
	if (ret)
		return ret;
	memset(resv, 0, sizeof(*resv));
	resv->ctx = ctx;
	if (!bytes) {
		/* A zero-length write needs nothing: an empty reservation. */
		resv->quota = quota;
		resv->magic = DELALLOC_MAGIC;
		return 0;
	}
	nowait = mode == SRSV_DELALLOC_NOWAIT;
	data = data_space(ctx);
	rsv = srsv_ctx_rsv(ctx, SRSV_RSV_DELALLOC);
	if (!data || !rsv)
		return -EINVAL;

	/* 1. Quota: DATA and META_PREALLOC together. */
	if (quota) {
		quota_bytes[SRSV_QUOTA_DATA] = bytes;
		quota_bytes[SRSV_QUOTA_META_PREALLOC] = meta;
		ret = inject(STEP_QUOTA);
		if (!ret)
			ret = srsv__quota_reserve_kinds(quota, quota_bytes,
						mode_table[mode].quota_flags);
		if (ret)
			goto fail;
	}

	/* 2. Data space. */
	ret = inject(STEP_DATA);
	if (!ret)
		ret = srsv_space_reserve(data, bytes, mode_table[mode].data_mode,
					 mode_table[mode].space_flags);
	if (ret)
		goto undo_quota;

	/* 3. Metadata into the DELALLOC rsv. */
	if (meta) {
		ret = inject(STEP_META);
		if (!ret)
			ret = srsv_rsv_add(rsv, meta,
					   mode_table[mode].meta_mode,
					   mode_table[mode].space_flags);
		if (ret)
			goto undo_data;
	}

	resv->bytes = bytes;
	resv->data_bytes = bytes;
	resv->meta_bytes = meta;
	resv->extents = extents;
	resv->quota = quota;
	resv->quota_data_bytes = quota_bytes[SRSV_QUOTA_DATA];
	resv->quota_meta_bytes = quota_bytes[SRSV_QUOTA_META_PREALLOC];
	resv->magic = DELALLOC_MAGIC;
	return 0;

undo_data:
	/* Cannot fail: we hold these bytes of may_use. */
	if (nowait)
		srsv__space_release_nowait(data, bytes);
	else
		srsv_space_release(data, bytes);
undo_quota:
	if (quota) {
		/* Lock-free: never blocks, even for NOWAIT. */
		srsv_quota_release(quota, SRSV_QUOTA_DATA, bytes);
		srsv_quota_release(quota, SRSV_QUOTA_META_PREALLOC, meta);
	}
fail:
	if (nowait && (ret == -ENOSPC || ret == -EDQUOT))
		ret = -EAGAIN;
	memset(resv, 0, sizeof(*resv));
	return ret;
}

static bool resv_ok(const struct srsv_delalloc_resv *resv)
{
	return resv && resv->magic == DELALLOC_MAGIC && resv->ctx;
}

/*
 * Take @bytes back out of the DELALLOC rsv exactly as srsv_rsv_add() put
 * them in: use them (reserved -= bytes), then shrink the size by as much.
 * The bytes stay in may_use, owned by the caller.  Using before shrinking
 * leaves no excess above the size, so nothing spills into another rsv.
 */
static int rsv_take(struct srsv_rsv *rsv, uint64_t bytes)
{
	int ret;

	if (!bytes)
		return 0;
	ret = srsv_rsv_use(rsv, bytes);
	if (ret)
		return ret;
	return srsv_rsv_release(rsv, bytes, NULL);
}

SRSV__EXPORT int srsv_delalloc_release(struct srsv_delalloc_resv *resv)
{
	struct srsv_ctx *ctx;
	struct srsv_rsv *rsv;
	int ret = 0;

	if (!resv_ok(resv))
		return -EINVAL;
	ctx = resv->ctx;
	rsv = srsv_ctx_rsv(ctx, SRSV_RSV_DELALLOC);

	/* Reverse order of srsv_delalloc_reserve(): metadata, data, quota. */
	if (resv->meta_bytes) {
		ret = rsv_take(rsv, resv->meta_bytes);
		if (!ret) {
			ret = srsv_space_release(meta_space(ctx),
						 resv->meta_bytes);
		} else if (ret == -ENOSPC) {
			/*
			 * Somebody else used our share of the shared rsv: all
			 * we can still do is drop its size, returning what it
			 * holds above that (btrfs's release).
			 */
			ret = srsv_rsv_release(rsv, resv->meta_bytes, NULL);
		}
	}
	if (resv->data_bytes) {
		int r = srsv_space_release(data_space(ctx), resv->data_bytes);

		ret = ret ? ret : r;
	}
	if (resv->quota) {
		int r1 = srsv_quota_release(resv->quota, SRSV_QUOTA_DATA,
					    resv->quota_data_bytes);
		int r2 = srsv_quota_release(resv->quota,
					    SRSV_QUOTA_META_PREALLOC,
					    resv->quota_meta_bytes);

		ret = ret ? ret : (r1 ? r1 : r2);
	}
	memset(resv, 0, sizeof(*resv));
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
		return -EINVAL;
	meta = resv->meta_bytes;
	if (meta_used == SRSV_DELALLOC_META_ALL)
		meta_used = meta;
	if (meta_used > meta)
		return -EINVAL;
	ctx = resv->ctx;
	rsv = srsv_ctx_rsv(ctx, SRSV_RSV_DELALLOC);

	/*
	 * The one step that can fail on a healthy ctx goes first, so that
	 * its failure changes nothing: the rsv may have been drained by
	 * another user.  The rest cannot fail while the caller holds what
	 * resv says.
	 */
	ret = rsv_take(rsv, meta);
	if (ret)
		return ret;
	ret = alloc_and_use(meta_space(ctx), meta_used);
	if (!ret && meta > meta_used)
		ret = srsv_space_release(meta_space(ctx), meta - meta_used);
	if (!ret)
		ret = alloc_and_use(data_space(ctx), resv->data_bytes);
	if (!ret && resv->quota) {
		/*
		 * The quota follows the metadata (the reservation charged the
		 * tenant exactly the metadata bytes): what was used becomes
		 * the transaction's, the rest is given back.
		 */
		uint64_t q_used = meta_used;

		ret = srsv_quota_convert(resv->quota, q_used);
		if (!ret)
			ret = srsv_quota_release(resv->quota,
						 SRSV_QUOTA_META_PREALLOC,
						 resv->quota_meta_bytes - q_used);
		if (!ret)
			ret = srsv_quota_charge_used(resv->quota,
						     resv->quota_data_bytes);
	}
	memset(resv, 0, sizeof(*resv));
	return ret;
}
