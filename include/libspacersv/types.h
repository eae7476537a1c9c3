/* SPDX-License-Identifier: MIT */
/**
 * @file types.h
 * Enumerations, forward declarations and callback types shared by every
 * libspacersv header.  Include <libspacersv/spacersv.h> rather than this file.
 */
#ifndef LIBSPACERSV_TYPES_H
#define LIBSPACERSV_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Marks a call whose result the caller must look at: an ignored error there
 * loses accounting (a refused release, a reservation that did not happen).
 * GCC and clang warn (-Wunused-result) when it is dropped; other compilers
 * see nothing.  Define SRSV_MUST_CHECK (empty) before including the header
 * to switch the warnings off.
 */
#ifndef SRSV_MUST_CHECK
#if defined(__GNUC__) || defined(__clang__)
#define SRSV_MUST_CHECK __attribute__((warn_unused_result))
#else
#define SRSV_MUST_CHECK
#endif
#endif

/** One reservation domain (btrfs's fs_info).  Opaque. */
struct srsv_ctx;
/** One pool of space (btrfs's space_info).  Opaque. */
struct srsv_space;
/** A per-tenant quota group (btrfs's qgroup).  Opaque. */
struct srsv_quota;
/** A completion queue for asynchronous tickets (async.h). */
struct srsv_async;
/** A reservation ticket (space.h). */
struct srsv_ticket;

/**
 * Pool kinds.  A ctx created with ::SRSV_CTX_MIXED has one MIXED pool that
 * serves both data and metadata; asking for DATA or METADATA returns it.
 */
enum srsv_pool {
	SRSV_POOL_DATA = 0,	/**< file contents; never overcommits */
	SRSV_POOL_METADATA = 1,	/**< trees, indexes, logs; may overcommit */
	SRSV_POOL_SYSTEM = 2,	/**< the structures that describe the pools */
	SRSV_POOL_MIXED = 3,	/**< data and metadata in one pool (small devices) */
	SRSV_POOL_COUNT = 4
};

/**
 * Reservation flush modes, in btrfs's order.  The mode says how far a
 * reservation that does not fit may go to make room.
 */
enum srsv_flush {
	/** Never flush, never wait, never jump queued tickets: -ENOSPC. */
	SRSV_NO_FLUSH = 0,
	/** Priority ticket; the caller flushes the short priority state array
	 *  (cheap states only: it may hold a transaction). */
	SRSV_FLUSH_LIMIT = 1,
	/** Priority ticket; the caller flushes the evict state array; may steal
	 *  from the global reservation. */
	SRSV_FLUSH_EVICT = 2,
	/** Data pools: normal ticket served by the async data worker. */
	SRSV_FLUSH_DATA = 3,
	/** Data pools: priority ticket, the caller forces pool growth. */
	SRSV_FLUSH_FREE_SPACE_INODE = 4,
	/** Metadata pools: normal ticket served by the async metadata worker. */
	SRSV_FLUSH_ALL = 5,
	/** As FLUSH_ALL, and the ticket may steal from the global reservation
	 *  before it fails. */
	SRSV_FLUSH_ALL_STEAL = 6,
	/** Last resort of srsv_rsv_use_fallback(): granted whenever the bytes
	 *  physically fit, ignoring outstanding reservations.  Never waits. */
	SRSV_FLUSH_EMERGENCY = 7,
	/** The number of btrfs's modes above (not a mode). */
	SRSV_FLUSH_MODE_COUNT = 8,
	/**
	 * Not a btrfs mode: "may wait, whatever the pool", for callers that
	 * do not want to know which mode a pool kind takes.  Resolved on
	 * entry to ::SRSV_FLUSH_DATA on a DATA pool and to ::SRSV_FLUSH_ALL
	 * on METADATA, SYSTEM and MIXED pools (a normal ticket served by the
	 * pool's async worker); tickets and traces show the resolved mode.
	 */
	SRSV_FLUSH_MAY_WAIT = 32
};

/**
 * Reservation flags, OR-ed into the @c flags argument of reserve calls.
 */
enum srsv_reserve_flags {
	/**
	 * Never block: no sleeping lock (try-lock only), no ticket, no flush,
	 * no allocation.  Any answer that would need one of those is -EAGAIN,
	 * never -ENOSPC or -EDQUOT, so the caller can retry in blocking mode.
	 */
	SRSV_RESERVE_NOWAIT = 1u << 0,
	/**
	 * A mover's reservation: the output of the engine's cleaning,
	 * compaction or relocation, which frees more than it takes.  Served
	 * first from the pool's movers' reserve (srsv_config::
	 * mover_reserve_bytes: bytes the library keeps charged to may_use for
	 * movers, refilled before any ticket is granted when space comes
	 * back, a release included, hidden from ordinary reservations and from srsv_ctx_statfs()'s
	 * available figure); beyond it from the pool, passing queued normal
	 * tickets (a mover never waits behind the writers it cleans for;
	 * priority tickets still come first), and, where the mode would wait,
	 * as a priority ticket.  From a flush callback use ::SRSV_NO_FLUSH:
	 * the reserve serves it without waiting.
	 */
	SRSV_RESERVE_MOVER = 1u << 1
};

/**
 * Why a NOWAIT call answered -EAGAIN (srsv_nowait_reason()).  The answer
 * stays -EAGAIN, btrfs's NOWAIT contract; the reason tells the caller
 * what the blocking retry would do.
 */
enum srsv_nowait_reason {
	/** no NOWAIT refusal yet in this thread */
	SRSV_NOWAIT_NONE = 0,
	/** a lock was busy, or another thread's per-CPU credit was in
	 *  motion: a retry soon may succeed without waiting */
	SRSV_NOWAIT_LOCK = 1,
	/** the pool would have to queue a ticket or flush (tickets wait, or
	 *  the bytes do not fit): the blocking retry waits for reclaim, or
	 *  fails at once with -ENOSPC for a request larger than the pool
	 *  could ever become (btrfs's NOWAIT contract: -EAGAIN, never
	 *  -ENOSPC, from a NOWAIT call) */
	SRSV_NOWAIT_SPACE = 2,
	/** a tenant is over its quota: the blocking retry would flush the
	 *  quota, and fail with -EDQUOT if that frees too little */
	SRSV_NOWAIT_QUOTA = 3,
	SRSV_NOWAIT_REASON_COUNT
};

/**
 * Flush states: what the engine is asked to do to give space back.  The
 * values match btrfs's enum.  The engine implements the states it has
 * (returning -EOPNOTSUPP for the others, which are then skipped).
 */
enum srsv_flush_state {
	/** Run a bounded number of deferred metadata updates (the engine's
	 *  equivalent of delayed inode items). */
	SRSV_STATE_DELAYED_ITEMS_NR = 1,
	/** Run all deferred metadata updates. */
	SRSV_STATE_DELAYED_ITEMS = 2,
	/** Run a bounded number of deferred reference-count updates. */
	SRSV_STATE_DELAYED_REFS_NR = 3,
	/** Run all deferred reference-count updates. */
	SRSV_STATE_DELAYED_REFS = 4,
	/** Start writeback of about @c bytes of dirty (delalloc) data. */
	SRSV_STATE_DELALLOC = 5,
	/** Write back dirty data and wait for it to reach disk. */
	SRSV_STATE_DELALLOC_WAIT = 6,
	/** Write back all dirty data and wait. */
	SRSV_STATE_DELALLOC_FULL = 7,
	/** Grow the pool from unallocated device space if that helps
	 *  (srsv_space_grow()); -ENOSPC marks the pool full. */
	SRSV_STATE_ALLOC_CHUNK = 8,
	/** Grow the pool even if the engine's policy would rather not. */
	SRSV_STATE_ALLOC_CHUNK_FORCE = 9,
	/** Run deferred object deletions (btrfs's delayed iputs). */
	SRSV_STATE_RUN_DELAYED_IPUTS = 10,
	/** Commit / checkpoint: pinned space becomes free
	 *  (srsv_space_unpin()). */
	SRSV_STATE_COMMIT_TRANS = 11,
	/** Zoned: reset zones whose space is all unusable. */
	SRSV_STATE_RESET_ZONES = 12,
	/** Zoned: relocate live data out of sparse zones (bounded batch). */
	SRSV_STATE_RECLAIM_ZONES = 13,
	/** Block groups (bgroup.h): relocate the live data of the groups
	 *  srsv_bgroup_reclaim_take() hands out (copy each live extent to
	 *  another group of its pool, free the old copy), then end each with
	 *  srsv_bgroup_reclaim_done(); the emptied groups return to
	 *  unallocated at the commit that frees the old copies.  Called only
	 *  when candidates exist, by a walk that may commit and is about to
	 *  fail while its pool is full (then a COMMIT_TRANS follows; at most
	 *  four such rounds per walk). */
	SRSV_STATE_RECLAIM_CHUNKS = 14,
	SRSV_STATE_COUNT = 15
};

/**
 * The engine's flush callback.
 *
 * Called by a library worker thread (async and preemptive flushing) or by a
 * thread waiting on a priority ticket (FLUSH_LIMIT, FLUSH_EVICT,
 * FLUSH_FREE_SPACE_INODE), or inline by srsv_ctx_run_pending() in manual
 * mode.  No library lock is held.  The callback reports what it freed
 * through the transition functions (srsv_space_release(), srsv_space_unpin(),
 * srsv_space_grow(), srsv_rsv_release(), ...).  It may reserve with
 * ::SRSV_NO_FLUSH or ::SRSV_RESERVE_NOWAIT; a flushing reservation from inside
 * a callback fails with -EDEADLK instead of waiting on itself.
 *
 * @param space       the pool being reclaimed
 * @param state       what to do
 * @param bytes       how much the library would like back (a hint), in
 *                    bytes of @p space: what its queued tickets lack
 *                    (async and priority walks; the metadata walk adds
 *                    any shortfall of overcommit), or a quarter of the
 *                    reclaimable figure for preemptive calls.  So for
 *                    the DELALLOC* states called on a METADATA pool it
 *                    is metadata bytes to free, not dirty data bytes to
 *                    write: an engine converts with its own ratio (btrfs
 *                    turns it into a number of items, shrink_delalloc()).
 *                    For ALLOC_CHUNK* it is the room wanted in the pool,
 *                    for COMMIT_TRANS the bytes the tickets wait for (a
 *                    commit frees what it frees), for DELAYED_* and
 *                    RUN_DELAYED_IPUTS metadata bytes, for RESET_ZONES and
 *                    RECLAIM_ZONES bytes of the pool being reclaimed.
 * @param for_preempt true when called by the preemptive flusher (no one is
 *                    waiting yet: keep it cheap)
 * @param user        srsv_config::user
 * @return 0 when done (even if nothing could be freed); -EOPNOTSUPP when the
 * engine has no such state; -ENOSPC from ALLOC_CHUNK* marks the pool full;
 * any other negative errno is traced and the walk goes on (use
 * srsv_ctx_set_error() for fatal errors).
 */
typedef int (*srsv_flush_fn)(struct srsv_space *space,
			     enum srsv_flush_state state, uint64_t bytes,
			     bool for_preempt, void *user);

/**
 * The engine's quota flush callback: called when a tenant hits its limit,
 * to turn per-transaction quota reservations into free quota (btrfs commits
 * the transaction and flushes delalloc).  One flusher at a time per ctx;
 * the reservation is retried afterwards, and a tenant still over its limit
 * after another tenant's flush gets one flush of its own (at most one call
 * and two retries per reservation).  Called in the reserving
 * thread, no library lock held.
 * @param quota the tenant that hit its limit
 * @param user srsv_config::user
 * @return 0 or a negative errno (the reservation then fails with -EDQUOT)
 */
typedef int (*srsv_quota_flush_fn)(struct srsv_quota *quota, void *user);

#ifdef __cplusplus
}
#endif

#endif /* LIBSPACERSV_TYPES_H */
