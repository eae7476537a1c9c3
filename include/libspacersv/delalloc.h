/* SPDX-License-Identifier: MIT */
/**
 * @file delalloc.h
 * The delalloc helper: everything a buffered write must reserve before it
 * dirties its pages, in one call, with btrfs's order and the NOWAIT
 * contract.  Include <libspacersv/spacersv.h> rather than this file.
 *
 * For a write of N bytes, srsv_delalloc_reserve() takes, in upstream's
 * order (btrfs_delalloc_reserve_space(); docs/quota.md, "Order of quota
 * and space", says why and what srsv_delalloc_reserve_async() does):
 *
 * 1. data space: N bytes of may_use in the DATA pool;
 * 2. quota (when a tenant is given): DATA N and META_PREALLOC M, together
 *    (one admission: it fails exactly when one of the two would);
 * 3. metadata: M = ceil(N / srsv_config::delalloc_max_extent_bytes) *
 *    srsv_config::delalloc_extent_meta_bytes bytes into the ctx's DELALLOC
 *    block reservation (btrfs's calc_inode_reservations: one extent item's
 *    worth per extent the write may create).
 *
 * If a step fails, what the earlier steps took is given back, in reverse
 * order, and the pools and the quota are exactly as before the call.
 *
 * The result is a caller-owned struct srsv_delalloc_resv that says what is
 * held.  It ends with exactly one of:
 * - srsv_delalloc_release(): the write was cancelled, everything goes back;
 * - srsv_delalloc_finish(): the write reached disk: data may_use ->
 *   reserved -> used, metadata taken from the rsv and used (the unused
 *   part returned), quota META_PREALLOC -> META_PERTRANS and DATA -> used.
 *
 * The helper does not report dirty bytes to the flushing heuristics: the
 * engine calls srsv_ctx_account_delalloc() when it dirties and writes back
 * pages, as btrfs does from its extent-state code.
 */
#ifndef LIBSPACERSV_DELALLOC_H
#define LIBSPACERSV_DELALLOC_H

#include <libspacersv/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** How far srsv_delalloc_reserve() may go to find room. */
enum srsv_delalloc_mode {
	/**
	 * May flush and wait: quota flush and one retry, data FLUSH_DATA,
	 * metadata FLUSH_ALL.  Fails with -EDQUOT or -ENOSPC.
	 */
	SRSV_DELALLOC_NORMAL = 0,
	/**
	 * Never flushes, never waits (btrfs's noflush): quota
	 * without flush, data and metadata NO_FLUSH.  May take locks.  Fails
	 * with -EDQUOT or -ENOSPC at once.
	 */
	SRSV_DELALLOC_NOFLUSH = 1,
	/**
	 * Never blocks (IOCB_NOWAIT): locks are only
	 * try-locked, no ticket is queued, no flush runs, nothing is
	 * allocated.  Whenever the answer would need one of those, and
	 * whenever the others would fail with -ENOSPC or -EDQUOT, it fails
	 * with -EAGAIN, so the caller retries in a blocking context.  Never
	 * -ENOSPC, never -EDQUOT.
	 */
	SRSV_DELALLOC_NOWAIT = 2,
	/**
	 * For a caller that holds a transaction (btrfs: current->journal_info
	 * set, research section 6): metadata FLUSH_LIMIT (a priority ticket
	 * whose cheap flush states run in the calling thread and never
	 * commit), data NO_FLUSH, quota without flush (nothing may commit:
	 * the commit would wait for the caller's own transaction).  Fails
	 * with -EDQUOT or -ENOSPC; may call the space flush callback in the
	 * calling thread, never the quota flush callback.
	 */
	SRSV_DELALLOC_LIMIT = 3,
	SRSV_DELALLOC_MODE_COUNT = 4
};

/**
 * What a delalloc reservation holds.  Caller-owned (stack, or embedded in
 * the engine's write request).  Fields marked read-only may be read after a
 * successful srsv_delalloc_reserve(); the private ones must not be touched.
 * Lifetime: from srsv_delalloc_reserve() until its ctx is destroyed.  An
 * ended resv still names its ctx (a second release or finish is counted as
 * a refusal there), so no call may be made on any resv of a destroyed ctx;
 * zero it (or reserve again) to reuse the storage.
 */
struct srsv_delalloc_resv {
	/** read-only: the write size */
	uint64_t bytes;
	/** read-only: bytes of may_use held in the DATA pool */
	uint64_t data_bytes;
	/** read-only: bytes held in the ctx's DELALLOC rsv */
	uint64_t meta_bytes;
	/** read-only: number of extents the metadata was sized for */
	uint64_t extents;
	/** read-only: the tenant charged, or NULL */
	struct srsv_quota *quota;
	/** read-only: quota DATA reserved */
	uint64_t quota_data_bytes;
	/** read-only: quota META_PREALLOC reserved */
	uint64_t quota_meta_bytes;
	/** private: the ctx */
	struct srsv_ctx *ctx;
	/** private: set while the reservation is held */
	uint32_t magic;
};

/**
 * Reserve data space, quota and metadata for a buffered write of @p bytes.
 *
 * The steps and their order are those of the file's description (btrfs's
 * order; docs/quota.md, "Order of quota and space").
 *
 * @param ctx the ctx
 * @param quota the tenant to charge, or NULL for none
 * @param bytes the write size (0 reserves nothing and succeeds; at most
 *        ::SRSV_MAX_BYTES)
 * @param mode ::srsv_delalloc_mode
 * @param[out] resv filled on success; on failure it holds nothing
 * @retval 0 reserved; end it with srsv_delalloc_release() or
 *         srsv_delalloc_finish()
 * @retval -EDQUOT the tenant is over its limit (NORMAL, NOFLUSH, LIMIT)
 * @retval -ENOSPC no data or metadata space (NORMAL, NOFLUSH, LIMIT)
 * @retval -EAGAIN NOWAIT and the reservation cannot be made without
 *         blocking, or it would fail with -ENOSPC/-EDQUOT
 * @retval -EINVAL NULL ctx or resv, unknown mode, a quota of another ctx,
 *         a size above ::SRSV_MAX_BYTES or whose metadata cost overflows
 * @retval -EDEADLK called from a flush callback (space or quota) in NORMAL
 *         or LIMIT mode, and a step would have to flush or wait: the
 *         tenant is over its limit (NORMAL), or a pool reservation does not
 *         fit at once (NORMAL: data or metadata; LIMIT: metadata).  What
 *         fits at once succeeds from a callback too.
 * @retval -ESHUTDOWN, the error of srsv_ctx_set_error(): a step would have
 *         to flush or wait (as srsv_space_reserve() and
 *         srsv_quota_reserve())
 * @note Thread-safe.  With ::SRSV_DELALLOC_NOWAIT it never blocks.  On
 *       failure the pools and the quota are exactly as before (no spill
 *       into other rsvs).
 */
SRSV_MUST_CHECK int srsv_delalloc_reserve(struct srsv_ctx *ctx, struct srsv_quota *quota,
			  uint64_t bytes, enum srsv_delalloc_mode mode,
			  struct srsv_delalloc_resv *resv);

/**
 * The write was cancelled: give back everything @p resv holds (metadata,
 * then quota, then data: the reverse of srsv_delalloc_reserve()) and mark
 * it empty.  Always ends @p resv.
 *
 * The DELALLOC rsv is shared: if another user drained it (used the bytes
 * @p resv accounts for) or shrank its size, the metadata cannot be taken
 * back as such; what is left of this reservation's part of the rsv's size
 * is dropped instead and the rsv returns what it then holds above its size
 * (as srsv_rsv_release()).  Either way no byte stays stranded in may_use.
 *
 * @param resv a reservation from srsv_delalloc_reserve()
 * @retval 0 success
 * @retval -EINVAL NULL, never reserved, or already ended (nothing
 *         changed); or a pool or the tenant held less than @p resv says
 *         (the counters were wrong before the call): every other step was
 *         still done and @p resv is ended
 * @note Thread-safe against other reservations; one resv is not to be
 *       ended by two threads at once.  Never sleeps on the quota; the
 *       DELALLOC rsv and the pools are updated with their ordinary locks.
 */
SRSV_MUST_CHECK int srsv_delalloc_release(struct srsv_delalloc_resv *resv);

/** For srsv_delalloc_finish(): all the reserved metadata was used. */
#define SRSV_DELALLOC_META_ALL UINT64_MAX

/**
 * The write reached disk.  Data: may_use -> reserved -> used
 * (srsv_space_alloc() + srsv_space_commit_used()).  Metadata: @p meta_used
 * bytes are taken from the DELALLOC rsv and allocated and used the same
 * way; the rest of the reservation goes back to the pool.  Quota:
 * META_PREALLOC -> META_PERTRANS (freed at the next commit), DATA -> used.
 *
 * All or nothing: the steps that can fail (taking the metadata out of the
 * shared DELALLOC rsv, moving the tenant's quota) run first and are undone
 * if a later one fails; the pool transitions, which cannot fail while the
 * caller holds what @p resv says, run last.  After a failure @p resv still
 * holds everything: retry, or end it with srsv_delalloc_release().
 *
 * @param resv a reservation from srsv_delalloc_reserve()
 * @param meta_used metadata the write really used, at most
 *        resv->meta_bytes, or ::SRSV_DELALLOC_META_ALL
 * @retval 0 success; @p resv is empty
 * @retval -EINVAL NULL, never reserved, already ended, or @p meta_used
 *         above what was reserved; the DELALLOC rsv's size is smaller than
 *         @p resv says (another user shrank it); or the tenant holds less
 *         quota than @p resv says (another user released it).  Nothing
 *         changed.
 * @retval -ENOSPC the DELALLOC rsv holds less than @p resv says (another
 *         user drained it); nothing changed
 * @note Thread-safe against other reservations; may sleep on locks.  If a
 *       pool transition fails all the same (its counters were wrong before
 *       the call), the other transitions are still made, -EINVAL is
 *       returned and @p resv is ended.
 */
SRSV_MUST_CHECK int srsv_delalloc_finish(struct srsv_delalloc_resv *resv, uint64_t meta_used);

/**
 * The metadata cost srsv_delalloc_reserve() would reserve for @p bytes.
 * @param ctx the ctx
 * @param bytes the write size
 * @param[out] extents number of extents; may be NULL
 * @param[out] meta_bytes metadata bytes
 * @retval 0 success
 * @retval -EINVAL NULL ctx or meta_bytes, or overflow
 * @note Thread-safe, lock-free.
 */
SRSV_MUST_CHECK int srsv_delalloc_meta_cost(const struct srsv_ctx *ctx, uint64_t bytes,
			    uint64_t *extents, uint64_t *meta_bytes);

/**
 * srsv_delalloc_reserve() for an event loop: as ::SRSV_DELALLOC_NOWAIT,
 * except that when the metadata is what cannot be had at once, it queues
 * @p ticket for it on completion queue @p q (async.h) instead of failing,
 * holding the quota and the data meanwhile.  The metadata then waits in
 * the metadata pool's FIFO like any FLUSH_ALL reservation.
 * @param q completion queue (its ctx is the write's)
 * @param quota the tenant, or NULL
 * @param bytes the write size (> 0)
 * @param ticket caller-owned, alive until reaped from @p q
 * @param[out] resv the reservation (pending while -EINPROGRESS)
 * @retval 0 reserved at once: @p resv holds everything, nothing is posted
 * @retval -EINPROGRESS the metadata ticket is queued; once
 *         srsv_async_reap() returned @p ticket, call
 *         srsv_delalloc_complete()
 * @retval -EAGAIN the data or the quota cannot be had without blocking
 *         (the caller retries where it may wait); nothing is held
 * @retval -EINVAL NULL argument, 0 bytes, a quota of another ctx, or as
 *         srsv_delalloc_reserve()
 * @retval -ENOSPC, -ESHUTDOWN, the error of srsv_ctx_set_error(): the
 *         metadata could not be queued; nothing is held
 * @note Thread-safe; never waits for space or flushing (locks only
 *       try-locked for quota and data; the metadata pool lock for the
 *       instant of queueing).
 */
SRSV_MUST_CHECK int srsv_delalloc_reserve_async(struct srsv_async *q,
				struct srsv_quota *quota, uint64_t bytes,
				struct srsv_ticket *ticket,
				struct srsv_delalloc_resv *resv);

/**
 * Finish a reservation srsv_delalloc_reserve_async() left pending, after
 * its ticket was reaped.
 * @param resv the pending reservation
 * @param ticket its ticket, reaped
 * @retval 0 the metadata was granted: @p resv holds everything, end it
 *         with srsv_delalloc_release() or srsv_delalloc_finish()
 * @retval -EINVAL NULL, @p resv not pending, or @p ticket not reaped yet
 *         (nothing changed)
 * @retval negative the ticket's error (-ETIMEDOUT, -ECANCELED, -ENOSPC,
 *         -ESHUTDOWN, ...): quota and data were given back, @p resv holds
 *         nothing
 * @note Thread-safe against other reservations; may take the DELALLOC
 *       rsv's and the pools' locks (short, never waits for space).
 */
SRSV_MUST_CHECK int srsv_delalloc_complete(struct srsv_delalloc_resv *resv,
			   struct srsv_ticket *ticket);

#ifdef __cplusplus
}
#endif

#endif /* LIBSPACERSV_DELALLOC_H */
