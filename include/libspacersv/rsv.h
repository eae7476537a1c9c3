/* SPDX-License-Identifier: MIT */
/**
 * @file rsv.h
 * Block reservations (btrfs's block_rsv): a named amount of may_use a
 * subsystem keeps at hand and draws from without touching the pool.
 * Include <libspacersv/spacersv.h> rather than this file.
 *
 * An rsv has a target @c size and what it actually holds, @c reserved.
 * Everything it holds is counted in its pool's may_use.  It is "full" when
 * reserved >= size.
 */
#ifndef LIBSPACERSV_RSV_H
#define LIBSPACERSV_RSV_H

#include <libspacersv/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Kinds of block reservation, as btrfs. */
enum srsv_rsv_type {
	SRSV_RSV_GLOBAL = 0,	/**< the emergency reserve; engine-sized */
	SRSV_RSV_DELALLOC = 1,	/**< metadata for dirty data */
	SRSV_RSV_TRANS = 2,	/**< a transaction's own reservation */
	SRSV_RSV_CHUNK = 3,	/**< pool growth bookkeeping */
	SRSV_RSV_DELOPS = 4,	/**< deferred metadata updates (delayed items) */
	SRSV_RSV_DELREFS = 5,	/**< deferred reference updates */
	SRSV_RSV_TREELOG = 6,	/**< the fsync log */
	SRSV_RSV_EMPTY = 7,	/**< always empty: forces the fallback chain */
	SRSV_RSV_TEMP = 8,	/**< short-lived, caller-owned */
	SRSV_RSV_TYPE_COUNT = 9
};

/** Number of 64-bit words of an rsv's private storage. */
#define SRSV_RSV_WORDS 16

/**
 * A block reservation.  Callers may embed it (stack, heap or their own
 * structs); initialise with srsv_rsv_init() and tear down with
 * srsv_rsv_destroy().  Its storage is private (as a ticket's): read it with
 * srsv_rsv_get_info().  Its size, not its layout, is part of the ABI.
 */
struct srsv_rsv {
	/** private */
	union {
		uint64_t words[SRSV_RSV_WORDS];
		void *align_ptr;
		long double align_ld;
	} priv;
};

/**
 * Initialise a caller-owned rsv bound to @p space.
 * @param rsv the rsv
 * @param space its pool
 * @param type ::srsv_rsv_type (not GLOBAL: the ctx owns that one)
 * @retval 0 success
 * @retval -EINVAL NULL argument or bad type
 * @note Not thread-safe for @p rsv (nobody else may use it yet).
 */
SRSV_MUST_CHECK int srsv_rsv_init(struct srsv_rsv *rsv, struct srsv_space *space,
		  enum srsv_rsv_type type);

/**
 * Release everything the rsv holds (with the same spill rules as
 * srsv_rsv_release()) and tear it down.
 * @param rsv the rsv (caller-owned; NULL or a standard rsv of the ctx is
 *        refused)
 * @retval 0 success
 * @retval -EINVAL NULL, uninitialised, or a standard rsv of the ctx
 * @note Nobody may use @p rsv concurrently or afterwards.
 */
SRSV_MUST_CHECK int srsv_rsv_destroy(struct srsv_rsv *rsv);

/**
 * Reserve @p bytes from the pool, then grow the rsv by them (size and
 * reserved).
 * @param rsv the rsv
 * @param bytes how much (0 is a no-op)
 * @param mode flush mode for the pool reservation
 * @param flags ::srsv_reserve_flags
 * @retval 0 success
 * @retval negative as srsv_space_reserve(); the rsv is unchanged
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_rsv_add(struct srsv_rsv *rsv, uint64_t bytes, enum srsv_flush mode,
		 unsigned flags);

/**
 * Make the rsv hold at least @p min_reserved, reserving only what is
 * missing; the size is unchanged.
 * @param rsv the rsv
 * @param min_reserved what it should hold
 * @param mode flush mode
 * @param flags ::srsv_reserve_flags
 * @retval 0 success (also when it already held enough)
 * @retval -EINVAL an unknown mode or flag, or too many bytes, even when
 *         it already held enough (counted as refused); nothing changed
 * @retval negative as srsv_space_reserve(); the rsv is unchanged
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_rsv_refill(struct srsv_rsv *rsv, uint64_t min_reserved,
		    enum srsv_flush mode, unsigned flags);

/**
 * Consume @p bytes of what the rsv holds (they stay in may_use, now owned
 * by the caller's allocation; follow with srsv_space_alloc()).
 * @param rsv the rsv
 * @param bytes how much
 * @retval 0 success
 * @retval -ENOSPC the rsv holds less than @p bytes (unchanged)
 * @retval -EINVAL NULL or uninitialised rsv
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_rsv_use(struct srsv_rsv *rsv, uint64_t bytes);

/**
 * Move @p bytes from @p src to @p dst (same pool): use from src, add to
 * dst, growing dst's size too when @p update_size.
 * @param src from
 * @param dst to
 * @param bytes how much
 * @param update_size grow dst->size as well
 * @retval 0 success
 * @retval -ENOSPC src holds less (nothing changed)
 * @retval -EINVAL NULL, same rsv, or different pools
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_rsv_migrate(struct srsv_rsv *src, struct srsv_rsv *dst,
		     uint64_t bytes, bool update_size);

/**
 * Check that the rsv holds at least @p min_percent of its size.
 * @param rsv the rsv
 * @param min_percent 0..100
 * @retval 0 it does
 * @retval -ENOSPC it does not
 * @retval -EINVAL NULL rsv or percent above 100
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_rsv_check(struct srsv_rsv *rsv, unsigned min_percent);

/** Pass as @c bytes to srsv_rsv_release() to release the whole size. */
#define SRSV_RSV_ALL UINT64_MAX

/**
 * Shrink the rsv's size by @p bytes.  What it then holds above its size
 * spills: to the global rsv for DELOPS rsvs, otherwise to the delayed-refs
 * rsv (when it is not full), each up to its free room and only within the
 * same pool; the rest returns to the pool and grants waiting tickets.
 * @param rsv the rsv
 * @param bytes how much of the size to drop, or ::SRSV_RSV_ALL
 * @param[out] released bytes that left the rsv (spilled or returned); may
 *        be NULL
 * @retval 0 success
 * @retval -EINVAL NULL rsv, or @p bytes larger than the size (unchanged)
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_rsv_release(struct srsv_rsv *rsv, uint64_t bytes,
		     uint64_t *released);

/**
 * The use_block_rsv fallback chain for allocating @p bytes of metadata:
 * use the rsv; for the global rsv, refill it to its size and retry; reserve
 * NO_FLUSH from the pool; take from the global rsv when it shares the pool;
 * reserve FLUSH_EMERGENCY.  Stops early on a failfast rsv.
 * @param rsv the rsv
 * @param bytes how much
 * @param[out] used_rsv which rsv (or @p rsv for a pool reservation) paid;
 *        may be NULL
 * @retval 0 success: @p bytes are in may_use, owned by the caller
 * @retval -ENOSPC every step failed
 * @retval -EINVAL NULL rsv or 0 bytes
 * @note Thread-safe; never waits.
 */
SRSV_MUST_CHECK int srsv_rsv_use_fallback(struct srsv_rsv *rsv, uint64_t bytes,
			  struct srsv_rsv **used_rsv);

/**
 * Make use fail at once (no fallback) when @p failfast.
 * @param rsv the rsv
 * @param failfast fail at once
 * @retval 0 success
 * @retval -EINVAL NULL or uninitialised rsv
 * @note Thread-safe.
 */
int srsv_rsv_set_failfast(struct srsv_rsv *rsv, bool failfast);

/** Snapshot of an rsv. */
struct srsv_rsv_info {
	/** bytes the library filled (set by srsv_rsv_get_info_sized(): see
	 *  docs/api.md, "output structs"; not @c size, which is the rsv's
	 *  own, btrfs's block_rsv->size) */
	size_t info_size;
	uint64_t size;		/**< target */
	uint64_t reserved;	/**< held */
	int type;		/**< ::srsv_rsv_type */
	bool full;		/**< reserved >= size */
	bool failfast;		/**< no fallback */
};

/**
 * Read an rsv consistently.  Called through the srsv_rsv_get_info()
 * macro, which passes the caller's sizeof (docs/api.md, "output
 * structs").
 * @param rsv the rsv
 * @param[out] info where to write
 * @param size sizeof(struct srsv_rsv_info) as the caller knows it
 * @retval 0 success
 * @retval -EINVAL NULL argument, uninitialised rsv, or @p size smaller
 *         than the first layout (nothing written)
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_rsv_get_info_sized(struct srsv_rsv *rsv,
					    struct srsv_rsv_info *info,
					    size_t size);
/** srsv_rsv_get_info_sized() with the caller's sizeof. */
#define srsv_rsv_get_info(rsv, info) \
	srsv_rsv_get_info_sized((rsv), (info), sizeof(struct srsv_rsv_info))

/**
 * A standard reservation of the ctx: GLOBAL, TRANS, DELOPS (delayed items),
 * DELREFS (delayed refs) or DELALLOC, all bound to the METADATA (or MIXED)
 * pool.
 * @param ctx the ctx
 * @param type which one
 * @return the rsv, or NULL for NULL ctx or another type
 * @note Thread-safe; lives as long as the ctx.
 */
struct srsv_rsv *srsv_ctx_rsv(struct srsv_ctx *ctx, enum srsv_rsv_type type);

/**
 * Set the size of the global reservation and bring what it holds to that
 * size: growing reserves from the pool unconditionally (the global rsv may
 * overcommit, as btrfs's), shrinking returns the excess and grants
 * tickets.  When the size reaches the pool's total, the pool is marked
 * force_alloc.
 * @param ctx the ctx
 * @param bytes the new size
 * @retval 0 success
 * @retval -EINVAL NULL ctx
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_ctx_resize_global_rsv(struct srsv_ctx *ctx, uint64_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* LIBSPACERSV_RSV_H */
