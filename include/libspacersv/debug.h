/* SPDX-License-Identifier: MIT */
/**
 * @file debug.h
 * Lock accounting for tests that prove the NOWAIT contract.  Available when
 * the library is built with -Ddebug_locks=true; otherwise every call returns
 * -ENOTSUP.  Include <libspacersv/spacersv.h> rather than this file.
 */
#ifndef LIBSPACERSV_DEBUG_H
#define LIBSPACERSV_DEBUG_H

#include <libspacersv/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What the calling thread did with library locks since the last reset. */
struct srsv_lock_stats {
	/** bytes the library filled (set by srsv_debug_lock_stats_sized(): see docs/api.md,
	 *  "output structs") */
	size_t size;
	uint64_t acquisitions;		/**< locks taken (any way) */
	uint64_t blocking_acquisitions;	/**< taken by a call that may sleep */
	uint64_t trylock_failures;	/**< try-locks that found it held */
	uint64_t waits;			/**< condition waits (sleeps) */
};

/**
 * Read the calling thread's lock statistics.  Called through the
 * srsv_debug_lock_stats() macro, which passes the caller's sizeof
 * (docs/api.md, "output structs").
 * @param[out] stats where to write
 * @param size sizeof(struct srsv_lock_stats) as the caller knows it
 * @retval 0 success
 * @retval -EINVAL stats is NULL, or @p size smaller than the first layout
 *         (nothing written)
 * @retval -ENOTSUP the library was built without debug_locks
 * @note Thread-safe (per-thread data).
 */
SRSV_MUST_CHECK int srsv_debug_lock_stats_sized(struct srsv_lock_stats *stats,
						size_t size);
/** srsv_debug_lock_stats_sized() with the caller's sizeof. */
#define srsv_debug_lock_stats(stats) \
	srsv_debug_lock_stats_sized((stats), sizeof(struct srsv_lock_stats))

/**
 * Zero the calling thread's lock statistics.
 * @retval 0 success
 * @retval -ENOTSUP the library was built without debug_locks
 */
int srsv_debug_lock_stats_reset(void);

#ifdef __cplusplus
}
#endif

#endif /* LIBSPACERSV_DEBUG_H */
