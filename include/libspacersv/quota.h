/* SPDX-License-Identifier: MIT */
/**
 * @file quota.h
 * Per-tenant quotas (btrfs's qgroups): a limit on what one tenant may hold
 * in data and metadata reservations plus the data it has written.
 * Include <libspacersv/spacersv.h> rather than this file.
 *
 * A tenant's charge is
 *
 *     used + reserved[DATA] + reserved[META_PREALLOC] + reserved[META_PERTRANS]
 *
 * and a reservation of @c bytes is granted when charge + bytes <= limit.
 * The three reservation kinds follow btrfs:
 *
 * - DATA: data a buffered write will write.  When it reaches disk it
 *   becomes @c used (srsv_quota_charge_used()); a delete frees used bytes
 *   (srsv_quota_free_used()).
 * - META_PREALLOC: metadata reserved ahead of a write.  When the write
 *   reaches disk the metadata is really used by the running transaction:
 *   srsv_quota_convert() turns it into META_PERTRANS.
 * - META_PERTRANS: metadata of the running transaction, freed all at once
 *   when it commits (srsv_quota_commit()).
 *
 * When a tenant hits its limit, the reservation calls the engine's quota
 * flush callback (srsv_config::quota_flush, which typically commits the
 * transaction and so frees META_PERTRANS) and retries once.  Only one
 * quota flush runs at a time in a ctx: a tenant that hits its limit while
 * a flush is running waits for that flush to end and retries instead of
 * starting its own.  If the flush it waited for was another tenant's and
 * it is still over its limit, it then gets a flush of its own (waiting for
 * the running flushes to end first) and retries once more: a reservation
 * runs the callback at most once and retries at most twice.  Waits end
 * early when the ctx is shut down or put in an error state.
 *
 * A quota reservation takes no space: srsv_quota_reserve() charges the
 * tenant and moves no pool counter.  srsv_delalloc_reserve() (delalloc.h)
 * takes data space, quota and metadata for a buffered write, undoing the
 * earlier steps when a later one fails.  Which comes first, quota or
 * space, is stated once, in docs/quota.md, "Order of quota and space".
 */
#ifndef LIBSPACERSV_QUOTA_H
#define LIBSPACERSV_QUOTA_H

#include <libspacersv/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Kinds of quota reservation, as btrfs's qgroup reservation types. */
enum srsv_quota_kind {
	/** Data to be written; becomes used when written. */
	SRSV_QUOTA_DATA = 0,
	/** Metadata reserved ahead of a write (btrfs META_PREALLOC). */
	SRSV_QUOTA_META_PREALLOC = 1,
	/** Metadata of the running transaction, freed at commit (btrfs
	 *  META_PERTRANS). */
	SRSV_QUOTA_META_PERTRANS = 2,
	SRSV_QUOTA_KIND_COUNT = 3
};

/**
 * Flags of srsv_quota_reserve(), besides ::SRSV_RESERVE_NOWAIT.  They start
 * at bit 16 so that they never collide with ::srsv_reserve_flags.
 */
enum srsv_quota_flags {
	/**
	 * Do not flush: past the limit return -EDQUOT at once, without
	 * calling the quota flush callback or waiting for a running flush
	 * (btrfs's noflush).  The quota lock may still be taken.
	 */
	SRSV_QUOTA_NOFLUSH = 1u << 16
};

/** A limit meaning "no limit" (the charge is still tracked). */
#define SRSV_QUOTA_NO_LIMIT UINT64_MAX

/**
 * Create the quota of tenant @p id in @p ctx.
 * @param ctx the ctx
 * @param id the tenant's identifier (any value; unique within the ctx)
 * @param limit the limit in bytes (at most ::SRSV_MAX_BYTES), or
 *        ::SRSV_QUOTA_NO_LIMIT
 * @param[out] out the new quota
 * @retval 0 success
 * @retval -EINVAL NULL argument, or a limit above ::SRSV_MAX_BYTES that is
 *         not ::SRSV_QUOTA_NO_LIMIT
 * @retval -EEXIST the ctx already has a quota with this @p id
 * @retval -ENOMEM out of memory
 * @note Thread-safe; takes the ctx's quota table lock and looks for
 *       duplicates linearly (creation is rare).  The quota lives until
 *       srsv_quota_destroy() or srsv_ctx_destroy().
 */
SRSV_MUST_CHECK int srsv_quota_create(struct srsv_ctx *ctx, uint64_t id, uint64_t limit,
		      struct srsv_quota **out);

/**
 * Remove a tenant's quota and free it.
 * @param quota the quota
 * @retval 0 success
 * @retval -EINVAL NULL quota
 * @retval -EBUSY the tenant still holds reservations (of any kind); nothing
 *         changed
 * @note Thread-safe against calls on other quotas; nobody may use
 *       @p quota concurrently or afterwards.  Used bytes do not keep a
 *       quota alive (btrfs removes qgroups whatever they account).
 */
SRSV_MUST_CHECK int srsv_quota_destroy(struct srsv_quota *quota);

/**
 * Find the quota of tenant @p id.
 * @param ctx the ctx
 * @param id the tenant
 * @param[out] out the quota
 * @retval 0 found
 * @retval -ENOENT no quota with this id
 * @retval -EINVAL NULL argument
 * @note Thread-safe; the pointer is valid until the quota is destroyed.
 */
SRSV_MUST_CHECK int srsv_quota_lookup(struct srsv_ctx *ctx, uint64_t id,
		      struct srsv_quota **out);

/**
 * Change the limit.  Lowering it below the current charge is allowed: new
 * reservations then fail until enough is freed (btrfs does the same).
 * @param quota the quota
 * @param limit new limit (at most ::SRSV_MAX_BYTES) or ::SRSV_QUOTA_NO_LIMIT
 * @retval 0 success
 * @retval -EINVAL NULL quota or a bad limit (nothing changed)
 * @note Thread-safe; takes the quota lock.
 */
int srsv_quota_set_limit(struct srsv_quota *quota, uint64_t limit);

/**
 * Reserve @p bytes of kind @p kind for the tenant.
 *
 * Past the limit: with ::SRSV_RESERVE_NOWAIT, -EAGAIN; with
 * ::SRSV_QUOTA_NOFLUSH or without a quota flush callback, -EDQUOT; else the
 * quota flush runs (or the caller waits for the one already running) and
 * the reservation is retried once; if the flush waited for was another
 * tenant's and the retry fails, the caller gets a flush of its own tenant
 * (at most one callback call per reservation) and retries once more.
 *
 * @param quota the tenant
 * @param kind ::srsv_quota_kind
 * @param bytes how much (0 is a no-op; at most ::SRSV_MAX_BYTES)
 * @param flags ::SRSV_RESERVE_NOWAIT, ::SRSV_QUOTA_NOFLUSH
 * @retval 0 reserved
 * @retval -EDQUOT over the limit (after the flushes and retries, unless
 *         NOFLUSH), or the quota flush callback of this call failed (no
 *         retry then); never with NOWAIT
 * @retval -EAGAIN NOWAIT and the answer needs the quota lock (held by
 *         another thread) or is "over the limit"
 * @retval -EINVAL NULL quota, unknown kind or flag, bytes above
 *         ::SRSV_MAX_BYTES (nothing changed)
 * @retval -EDEADLK the reservation would have to flush and the caller is a
 *         flush callback (space or quota): it would wait on itself
 * @retval -ESHUTDOWN the reservation would have to flush and the ctx is
 *         shut down, or it was shut down while the caller waited for
 *         another thread's quota flush (srsv_ctx_shutdown() wakes such
 *         waiters within about 10 ms)
 * @retval <0 the error of srsv_ctx_set_error(): the reservation would have
 *         to flush or wait and the ctx is in an error state (as
 *         srsv_space_reserve())
 * @note Thread-safe.  With ::SRSV_RESERVE_NOWAIT it never blocks: the
 *       quota lock is only try-locked, nothing flushes, nothing waits.  The
 *       flush callback is called in this thread with no library lock held,
 *       under the rules of every flush callback (spacersv.h): it may call
 *       back with non-flushing calls (srsv_quota_commit(), releases, pool
 *       transitions, NO_FLUSH or NOWAIT reservations); a flushing
 *       reservation that would wait gets -EDEADLK, and so does
 *       srsv_ctx_shutdown().  srsv_ctx_shutdown() from another thread
 *       waits for a running quota flush to return.
 */
SRSV_MUST_CHECK int srsv_quota_reserve(struct srsv_quota *quota, enum srsv_quota_kind kind,
		       uint64_t bytes, unsigned flags);

/**
 * Give back @p bytes of a reservation of kind @p kind (the write was
 * cancelled, or a META_PERTRANS reservation of a transaction that did not
 * need it).
 * @param quota the tenant
 * @param kind ::srsv_quota_kind
 * @param bytes how much (0 is a no-op)
 * @retval 0 success
 * @retval -EINVAL NULL quota, unknown kind, or more than is reserved of
 *         that kind (nothing changed)
 * @note Thread-safe, lock-free: never blocks, so NOWAIT callers may undo
 *       with it and flush callbacks may call it.
 */
SRSV_MUST_CHECK int srsv_quota_release(struct srsv_quota *quota, enum srsv_quota_kind kind,
		       uint64_t bytes);

/**
 * The reserved metadata is now used by the running transaction:
 * META_PREALLOC -> META_PERTRANS (btrfs's qgroup_convert_reserved_meta).
 * The charge does not change.
 * @param quota the tenant
 * @param bytes how much (0 is a no-op)
 * @retval 0 success
 * @retval -EINVAL NULL quota, or more than META_PREALLOC holds (nothing
 *         changed)
 * @note Thread-safe; takes the quota lock (may sleep).
 */
SRSV_MUST_CHECK int srsv_quota_convert(struct srsv_quota *quota, uint64_t bytes);

/**
 * The transaction committed: free every tenant's META_PERTRANS.
 * @param ctx the ctx
 * @param[out] freed total bytes freed; may be NULL
 * @retval 0 success (also when the ctx has no quota)
 * @retval -EINVAL NULL ctx
 * @note Thread-safe; takes the quota table lock (may sleep), not the
 *       quota locks.  May be called from the quota flush callback and from
 *       space flush callbacks (COMMIT_TRANS).
 */
SRSV_MUST_CHECK int srsv_quota_commit(struct srsv_ctx *ctx, uint64_t *freed);

/**
 * Free one tenant's META_PERTRANS (a per-tenant transaction committed).
 * @param quota the tenant
 * @param[out] freed bytes freed; may be NULL
 * @retval 0 success
 * @retval -EINVAL NULL quota
 * @note Thread-safe, lock-free.
 */
SRSV_MUST_CHECK int srsv_quota_commit_one(struct srsv_quota *quota, uint64_t *freed);

/**
 * Reserved data was written: DATA reserved -> used.  The charge does not
 * change.
 * @param quota the tenant
 * @param bytes how much (0 is a no-op)
 * @retval 0 success
 * @retval -EINVAL NULL quota, or more than DATA holds (nothing changed)
 * @note Thread-safe; takes the quota lock (may sleep).
 */
SRSV_MUST_CHECK int srsv_quota_charge_used(struct srsv_quota *quota, uint64_t bytes);

/**
 * Written data was deleted: used -= bytes.
 * @param quota the tenant
 * @param bytes how much (0 is a no-op)
 * @retval 0 success
 * @retval -EINVAL NULL quota, or more than used (nothing changed)
 * @note Thread-safe, lock-free.
 */
SRSV_MUST_CHECK int srsv_quota_free_used(struct srsv_quota *quota, uint64_t bytes);

/** A tenant's figures, from srsv_quota_snapshot(). */
struct srsv_quota_info {
	/** bytes the library filled (set by srsv_quota_snapshot_sized(): see docs/api.md,
	 *  "output structs") */
	size_t size;
	uint64_t id;		/**< the tenant */
	uint64_t limit;		/**< limit, or ::SRSV_QUOTA_NO_LIMIT */
	/** reserved bytes per ::srsv_quota_kind */
	uint64_t reserved[SRSV_QUOTA_KIND_COUNT];
	uint64_t used;		/**< written bytes charged to the tenant */
	/** used + every reserved kind: what the limit is compared with */
	uint64_t charged;
	uint64_t flushes;	/**< quota flushes this tenant started */
	/** times it waited for a quota flush run by another thread (its
	 *  own tenant's or another's) */
	uint64_t flush_waits;
	uint64_t edquot;	/**< reservations refused past the limit
				 *   (-EDQUOT, or -EAGAIN for NOWAIT) */
	/** NOWAIT reservations answered -EAGAIN because the tenant was over
	 *  its limit (::SRSV_NOWAIT_QUOTA; also counted in @c edquot) */
	uint64_t nowait_refused;
};

/**
 * Read a tenant's figures consistently (under its lock).
 *
 * Every snapshot satisfies
 *
 *     charged >= used + reserved[DATA] + reserved[META_PREALLOC]
 *                + reserved[META_PERTRANS]
 *
 * with equality when no lock-free decrease (srsv_quota_release(),
 * srsv_quota_commit_one() / srsv_quota_commit(), srsv_quota_free_used())
 * runs concurrently: such a decrease lowers its own figure before
 * @c charged, and the snapshot may see it between the two.  @c charged is
 * at most @c limit unless the limit was lowered below it.
 *
 * Called through the srsv_quota_snapshot() macro, which passes the
 * caller's sizeof (docs/api.md, "output structs").
 *
 * @param quota the tenant
 * @param[out] info where to write
 * @param size sizeof(struct srsv_quota_info) as the caller knows it
 * @retval 0 success
 * @retval -EINVAL NULL argument, or @p size smaller than the first layout
 *         (nothing written)
 * @note Thread-safe; takes the quota lock (may sleep).
 */
SRSV_MUST_CHECK int srsv_quota_snapshot_sized(struct srsv_quota *quota,
					      struct srsv_quota_info *info,
					      size_t size);
/** srsv_quota_snapshot_sized() with the caller's sizeof. */
#define srsv_quota_snapshot(quota, info) \
	srsv_quota_snapshot_sized((quota), (info), \
				  sizeof(struct srsv_quota_info))

/**
 * The tenant id of a quota.
 * @param quota the quota
 * @return its id, 0 for NULL
 * @note Thread-safe.
 */
uint64_t srsv_quota_id(const struct srsv_quota *quota);

/**
 * The ctx a quota belongs to.
 * @param quota the quota
 * @return its ctx, NULL for NULL
 * @note Thread-safe.
 */
struct srsv_ctx *srsv_quota_ctx(const struct srsv_quota *quota);

/**
 * Name of a quota kind.
 * @param kind ::srsv_quota_kind
 * @return "data", "meta_prealloc", "meta_pertrans", "unknown" otherwise
 *         (a static string)
 * @note Thread-safe.
 */
const char *srsv_quota_kind_name(int kind);

#ifdef __cplusplus
}
#endif

#endif /* LIBSPACERSV_QUOTA_H */
