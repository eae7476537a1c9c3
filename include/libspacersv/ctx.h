/* SPDX-License-Identifier: MIT */
/**
 * @file ctx.h
 * The reservation domain: configuration, creation, shutdown, manual reclaim
 * and the engine-wide figures the flushing heuristics read.
 * Include <libspacersv/spacersv.h> rather than this file.
 */
#ifndef LIBSPACERSV_CTX_H
#define LIBSPACERSV_CTX_H

#include <libspacersv/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Flags for srsv_config::flags. */
enum srsv_ctx_flags {
	/**
	 * Manual reclaim: the library starts no thread.  Reclaim work that a
	 * worker would do (async ticket flushing, preemptive flushing) is
	 * recorded and run when the engine calls srsv_ctx_run_pending().  A
	 * blocking wait (srsv_space_reserve(), srsv_ticket_wait(), ...) runs
	 * the walk that serves its ticket in its own thread, as a priority
	 * ticket always flushes in its caller's, unless another thread is
	 * running srsv_ctx_run_pending() (it then waits for that thread, and
	 * looks again every millisecond): a single-threaded engine never
	 * waits for a thread that does not exist.  Deterministic tests use
	 * this mode.
	 */
	SRSV_CTX_MANUAL = 1u << 0,
	/** One MIXED pool serves data and metadata (btrfs --mixed). */
	SRSV_CTX_MIXED = 1u << 1,
	/** Start with preemptive flushing off (see srsv_ctx_set_preempt()). */
	SRSV_CTX_NO_PREEMPT = 1u << 2,
	/** Zoned device: overcommit is aligned down to srsv_config::zone_bytes
	 *  and the async metadata walk ends with RESET_ZONES. */
	SRSV_CTX_ZONED = 1u << 3,
	/** Keep the preemptive clamp at 1 (or srsv_config::fixed_clamp)
	 *  instead of adapting it (to compare the adaptive clamp with a fixed
	 *  threshold; adaptive is the default). */
	SRSV_CTX_FIXED_CLAMP = 1u << 4,
	/**
	 * With ::SRSV_CTX_MANUAL: a blocking wait does not run the reclaim
	 * itself; it waits until another thread calls srsv_ctx_run_pending()
	 * (or for ever, if none does).  For deterministic tests of waiters:
	 * a test holds threads queued, cancels them, times them out or shuts
	 * the ctx down under them, and decides when the walk runs.
	 */
	SRSV_CTX_MANUAL_WAIT = 1u << 5,
	/**
	 * btrfs's data behaviour: no preemptive flushing and no pacing for
	 * data pools (only tickets reclaim there, as in btrfs, whose data
	 * side leans on the kernel's background writeback instead).  By
	 * default the library flushes a data pool preemptively when its
	 * reclaimable debt (pinned bytes and what the engine reports,
	 * srsv_space_set_reclaimable()) nears its room (docs/design.md,
	 * "Data pools").
	 */
	SRSV_CTX_NO_DATA_PREEMPT = 1u << 6
};

/** Maximum length of an overriding flush-state array. */
#define SRSV_MAX_STATES 16

/** A flush-state array: the states a flusher walks, in order. */
struct srsv_state_array {
	unsigned nr;				/**< 0 = keep the default */
	enum srsv_flush_state states[SRSV_MAX_STATES];	/**< the walk */
};

/**
 * Configuration of a ctx.  Fill with srsv_config_init(), then set what you
 * need.  The struct carries its own size so that fields can be added
 * without breaking callers built against an older header.
 */
struct srsv_config {
	/** sizeof(struct srsv_config) as the caller knows it (set by
	 *  srsv_config_init()). */
	size_t size;
	/** ::srsv_ctx_flags */
	unsigned flags;
	/** The engine's flush callback; may be NULL (nothing can be flushed:
	 *  waiting tickets fail after the commit cycles). */
	srsv_flush_fn flush;
	/** Passed to every callback. */
	void *user;
	/** Initial total bytes of each pool (index ::srsv_pool).  Ignored for
	 *  MIXED unless ::SRSV_CTX_MIXED, and for DATA/METADATA if it is set. */
	uint64_t pool_bytes[SRSV_POOL_COUNT];
	/** Device space not yet given to any pool: what metadata overcommit
	 *  may count on.  Updatable with srsv_ctx_set_unallocated(). */
	uint64_t unallocated_bytes;
	/** Total writable device bytes (btrfs's total_rw_bytes), for the data
	 *  chunk allowance (10%).  0: pools + unallocated at creation. */
	uint64_t device_bytes;
	/** Size of a data chunk (default 1 GiB): metadata overcommit leaves
	 *  min(this, 10% of device, 1 GiB) of unallocated space for data. */
	uint64_t data_chunk_bytes;
	/** Replication factor of the metadata/system profile (1 single,
	 *  2 DUP/RAID1, up to 4 for RAID1C4; default 1): unallocated space
	 *  counts 1/factor.  Above 4: -EINVAL. */
	unsigned metadata_raid_factor;
	/** Metadata cost of inserting one item (default 256 KiB: a 16 KiB
	 *  node on each of 8 levels, times 2 for COW, as btrfs).  The unit of
	 *  "one item's worth". */
	uint64_t item_bytes;
	/** Zone size for ::SRSV_CTX_ZONED (default 256 MiB). */
	uint64_t zone_bytes;
	/** Initial size of the global reservation (in METADATA/MIXED), filled
	 *  at creation even if it overcommits the pool.  0: none. */
	uint64_t global_rsv_bytes;
	/** Override of the async metadata walk (default: btrfs's enum order
	 *  DELAYED_ITEMS_NR .. COMMIT_TRANS, + RESET_ZONES when zoned). */
	struct srsv_state_array async_metadata_states;
	/** Override of the async data walk (default DELALLOC_FULL,
	 *  RUN_DELAYED_IPUTS, COMMIT_TRANS, RECLAIM_ZONES, RESET_ZONES,
	 *  ALLOC_CHUNK_FORCE). */
	struct srsv_state_array async_data_states;
	/** Override of the FLUSH_LIMIT priority walk (default
	 *  DELAYED_ITEMS_NR, DELAYED_ITEMS, RESET_ZONES, ALLOC_CHUNK). */
	struct srsv_state_array priority_states;
	/** Override of the FLUSH_EVICT priority walk (default DELAYED_ITEMS_NR
	 *  to DELALLOC_FULL, ALLOC_CHUNK, COMMIT_TRANS, RESET_ZONES). */
	struct srsv_state_array evict_states;
	/** Per-extent metadata cost for srsv_delalloc_reserve() (default
	 *  item_bytes). */
	uint64_t delalloc_extent_meta_bytes;
	/** Largest extent a delalloc write creates (default 128 MiB, btrfs's
	 *  BTRFS_MAX_EXTENT_SIZE): a write of N bytes costs
	 *  ceil(N / this) extents. */
	uint64_t delalloc_max_extent_bytes;
	/** Quota flush callback (NULL: a tenant over its limit gets -EDQUOT
	 *  at once). */
	srsv_quota_flush_fn quota_flush;
	/** Per-CPU reservation caches: requests up to this many bytes are
	 *  served from a per-CPU credit, refilled from the pool in batches of
	 *  this size while the pool is far from full (at least 4 batches per
	 *  CPU left free), so that writers on several CPUs stop contending
	 *  for one word.  A pool engages its caches the first time two CPUs
	 *  race on its admission word; until then they cost nothing.  Up to
	 *  2 batches per CPU may sit unused in the caches; they go back to
	 *  the pool before anything fails or waits for lack of space, and
	 *  snapshots do not count them.  A cached release, or allocation,
	 *  cannot tell an over-release from a lawful one unless it exceeds
	 *  the pool's whole may_use.  0 (default): no caches.  At most
	 *  1 GiB (above: srsv_ctx_create() fails with -EINVAL). */
	uint64_t cpu_cache_bytes;
	/** Called first thing in every thread the library starts (the async
	 *  metadata and data flushers "srsv-flush-md" and "srsv-flush-data",
	 *  the preemptive flusher "srsv-preempt", the async-ticket timer
	 *  "srsv-timer"), in that thread, with its name and
	 *  srsv_config::user: set CPU affinity, scheduling or the signal
	 *  mask there.  Library threads are named with pthread_setname_np()
	 *  and start with every signal blocked.  NULL (default): nothing.
	 *  Added after cpu_cache_bytes: a caller built against an older
	 *  header has no such field and gets none. */
	void (*thread_start)(const char *name, void *user);
	/** Pacing of FLUSH_ALL / FLUSH_ALL_STEAL reservations in the metadata
	 *  (or mixed) pool, after Linux's balance_dirty_pages(): once the
	 *  pool's reclaimable space (may_use less the global rsv, plus
	 *  pinned) passes this percentage of the room it may take, each such
	 *  reservation is delayed after its bytes are charged, so that the
	 *  writers together are admitted at the measured reclaim bandwidth
	 *  times Linux's pos_ratio (2 here, 1 halfway to full, 0 at full).
	 *  NOWAIT reservations never sleep: they are admitted and their
	 *  delay is booked for the writers behind them.  Only while
	 *  preemptive flushing is on.  0 (default): off;
	 *  1..99; above: srsv_ctx_create() fails with -EINVAL.  See
	 *  docs/design.md, "Pacing". */
	unsigned pace_start_pct;
	/** Longest single pacing delay (0: 10 ms; at most 1 s, above:
	 *  -EINVAL). */
	uint64_t pace_max_delay_ns;
	/** The clamp ::SRSV_CTX_FIXED_CLAMP holds, 1..8 (0: 1; above 8:
	 *  -EINVAL). */
	unsigned fixed_clamp;
	/** Pacing of the data pool's FLUSH_DATA reservations, as
	 *  pace_start_pct does for metadata: from this percentage of the
	 *  room its reclaimable debt (in-flight reservations, pinned bytes,
	 *  what the engine reports) may take.  0 (default): off; 1..99
	 *  (above: -EINVAL).  Ignored with ::SRSV_CTX_NO_DATA_PREEMPT,
	 *  which turns data pacing off with the data preemption. */
	unsigned data_pace_start_pct;
	/** The movers' reserve of each pool (::srsv_pool), for
	 *  ::SRSV_RESERVE_MOVER reservations: kept charged to may_use and
	 *  refilled first when space comes back (an unpin, a free, a
	 *  release, growth, a block group added, a zone reset, read-only
	 *  bytes cleared), with what is still free.  One reserve for every
	 *  mover of the pool.  0 (default): none.  At most the pool's free
	 *  space at creation is taken at once (a reserve as large as the
	 *  pool leaves writers nothing); the rest as space comes back. */
	uint64_t mover_reserve_bytes[SRSV_POOL_COUNT];
};

/**
 * Fill the first @p size bytes of @p cfg with defaults and set cfg->size
 * to @p size (or to the library's sizeof(struct srsv_config), if smaller:
 * the fields it does not know must stay 0).  Called by srsv_config_init(),
 * which passes sizeof(*cfg) as the caller's header knows it, so a program
 * built against an older header never gets more written than it has.
 * @param cfg the config to initialise
 * @param size sizeof(struct srsv_config) as the caller knows it
 * @retval 0 success
 * @retval -EINVAL cfg is NULL, or @p size is smaller than the first
 *         layout (up to item_bytes)
 * @note Thread-safe (touches only @p cfg).
 */
int srsv_config_init_sized(struct srsv_config *cfg, size_t size);

/**
 * Fill @p cfg with defaults and set cfg->size.  A macro over
 * srsv_config_init_sized(); the function of this name serves programs
 * built against headers older than srsv_config_init_sized() and fills only
 * their layout (up to, not including, cpu_cache_bytes).
 * @param cfg the config to initialise
 * @retval 0 success
 * @retval -EINVAL cfg is NULL
 * @note Thread-safe (touches only @p cfg).
 */
int srsv_config_init(struct srsv_config *cfg);
/** srsv_config_init() for the caller's layout of struct srsv_config. */
#define srsv_config_init(cfg) \
	srsv_config_init_sized((cfg), sizeof(*(cfg)))

/**
 * Create a ctx and, unless ::SRSV_CTX_MANUAL, its worker threads (async
 * metadata, async data, preemptive).
 *
 * @param cfg configuration; copied, the caller may free it afterwards
 * @param[out] out the new ctx
 * @retval 0 success
 * @retval -EINVAL NULL argument, cfg->size too small or too large for the
 *         fields it claims, unknown flag, a state array too long or naming
 *         an unknown state, pool sizes whose sum overflows,
 *         cpu_cache_bytes above 1 GiB, pace_start_pct or
 *         data_pace_start_pct above 99, pace_max_delay_ns above 1 s,
 *         fixed_clamp above 8, or a mover_reserve_bytes above
 *         ::SRSV_MAX_BYTES
 * @retval -ENOMEM out of memory
 * @retval -EAGAIN a worker thread could not be started
 * @note Thread-safe.  On failure nothing is left allocated.
 */
SRSV_MUST_CHECK int srsv_ctx_create(const struct srsv_config *cfg, struct srsv_ctx **out);

/**
 * Stop the ctx: every waiting ticket ends with -ESHUTDOWN, new reservations
 * that would wait fail with -ESHUTDOWN, the workers finish their current
 * callback and exit.  Returns when every thread that was waiting inside the
 * library has left it.  The counters stay readable (srsv_space_snapshot())
 * until srsv_ctx_destroy().
 *
 * @param ctx the ctx
 * @retval 0 success (also when already shut down)
 * @retval -EINVAL ctx is NULL
 * @retval -EDEADLK called from a flush callback
 * @retval -ECHILD called in a child of fork() on its parent's ctx (see
 *         srsv_ctx_destroy())
 * @note Thread-safe.  Must not be called from a flush callback.
 */
int srsv_ctx_shutdown(struct srsv_ctx *ctx);

/**
 * Shut down (if not done yet) and free the ctx, its pools, the standard
 * reservations and the quota and zone tables.  NULL is a no-op.
 *
 * @param ctx the ctx
 * @retval 0 freed (or @p ctx was NULL)
 * @retval -EDEADLK called from a flush callback (the callback's caller
 *         still uses the ctx): nothing was freed or stopped, as
 *         srsv_ctx_shutdown() refuses there
 * @note Only threads waiting inside srsv_space_reserve(),
 * srsv_space_reserve_timeout(), srsv_rsv_add(), srsv_rsv_refill(),
 * srsv_delalloc_reserve() or srsv_quota_reserve() may still be using the
 * ctx (they return -ESHUTDOWN and touch nothing after); no other call may
 * race with destroy, srsv_ticket_wait() included (shut down first, let the
 * waits return).  Objects embedded by the caller (srsv_rsv, srsv_ticket)
 * must not be used after.
 * @note fork(): a child inherits a copy of every ctx without its threads,
 * and with whatever locks other threads of the parent held at the fork.
 * The only use a child may make of a ctx its parent created is
 * srsv_ctx_destroy(), which then frees the copy's memory without joining,
 * locking or waiting (the parent's ctx is untouched); a child creates its
 * own ctx for its own reservations.  The library enforces what it can:
 * in the child, srsv_ctx_shutdown() of a parent's ctx returns -ECHILD and
 * every reservation that would queue or wait returns -ESHUTDOWN at once
 * instead of waiting for flushers that do not exist.  Other calls on it
 * are undefined (a lock held at the fork would never be released).
 */
int srsv_ctx_destroy(struct srsv_ctx *ctx);

/**
 * The pool of a kind.  In a MIXED ctx, DATA and METADATA return the MIXED
 * pool; in a non-MIXED ctx, MIXED returns NULL.
 * @param ctx the ctx
 * @param kind which pool
 * @return the pool, or NULL on bad arguments
 * @note Thread-safe; the pointer lives as long as the ctx.
 */
struct srsv_space *srsv_ctx_space(struct srsv_ctx *ctx, enum srsv_pool kind);

/**
 * Set the device space not yet given to any pool (overcommit counts on it).
 * Growing it grants waiting metadata tickets that now fit.
 * @param ctx the ctx
 * @param bytes new value
 * @retval 0 success
 * @retval -EINVAL ctx is NULL
 * @note Thread-safe; may be called from flush callbacks.
 */
SRSV_MUST_CHECK int srsv_ctx_set_unallocated(struct srsv_ctx *ctx, uint64_t bytes);

/**
 * Read the unallocated device space.
 * @param ctx the ctx
 * @return bytes; 0 when @p ctx is NULL
 * @note Thread-safe, lock-free.
 */
uint64_t srsv_ctx_unallocated(const struct srsv_ctx *ctx);

/**
 * Report the engine's dirty-data figures: @p delalloc_delta bytes of dirty
 * data not yet under writeback, @p ordered_delta bytes under writeback
 * (btrfs's delalloc_bytes and ordered_bytes).  Preemptive flushing and the
 * clamp read them.
 * @param ctx the ctx
 * @param delalloc_delta change of the delalloc byte count
 * @param ordered_delta change of the ordered byte count
 * @retval 0 success
 * @retval -EINVAL NULL ctx, or a change that would take a count below 0
 *         (nothing changed)
 * @note Thread-safe, lock-free, never blocks.
 */
SRSV_MUST_CHECK int srsv_ctx_account_delalloc(struct srsv_ctx *ctx, int64_t delalloc_delta,
			      int64_t ordered_delta);

/**
 * Switch preemptive flushing on or off at run time (it is on by default
 * unless ::SRSV_CTX_NO_PREEMPT).
 * @param ctx the ctx
 * @param enabled new setting
 * @retval 0 success
 * @retval -EINVAL ctx is NULL
 * @note Thread-safe.
 */
int srsv_ctx_set_preempt(struct srsv_ctx *ctx, bool enabled);

/**
 * Put the ctx in an error state (btrfs's transaction abort): every queued
 * ticket ends with @p error, and reservations that would have to wait fail
 * with it at once.  Fast-path reservations that fit still succeed so that
 * cleanup can proceed.
 * @param ctx the ctx
 * @param error a negative errno
 * @retval 0 success
 * @retval -EINVAL NULL ctx, @p error not negative, or -EINPROGRESS (which
 *         every reserve call uses for "queued")
 * @note Thread-safe; may be called from flush callbacks.
 */
int srsv_ctx_set_error(struct srsv_ctx *ctx, int error);

/**
 * Leave the error state once the engine has recovered (RocksDB's
 * DB::Resume()): reservations may wait again.  What failed on the error
 * stays failed; srsv_space_stats::error_failures counts them per pool.
 * @param ctx the ctx
 * @retval 0 success (also when there was no error)
 * @retval -EINVAL NULL ctx
 * @retval -ESHUTDOWN the ctx is shut down: it stays so
 * @note Thread-safe; may be called from flush callbacks.
 */
int srsv_ctx_clear_error(struct srsv_ctx *ctx);

/**
 * Manual mode: run the reclaim work recorded since the last call (async
 * metadata and data flushing for pools with queued tickets, then one
 * preemptive run if one was triggered), inline, in the calling thread.
 * Flush callbacks are called from this thread.
 * @param ctx the ctx
 * @return the number of work items run (0: nothing was pending)
 * @retval -EINVAL ctx is NULL or not in manual mode
 * @retval -EDEADLK called from a flush callback
 * @note Thread-safe; concurrent callers serialise.
 */
int srsv_ctx_run_pending(struct srsv_ctx *ctx);

/**
 * The user pointer from the config.
 * @param ctx the ctx
 * @return cfg.user as given to srsv_ctx_create(); NULL when @p ctx is NULL
 * @note Thread-safe.
 */
void *srsv_ctx_user(const struct srsv_ctx *ctx);

#ifdef __cplusplus
}
#endif

#endif /* LIBSPACERSV_CTX_H */
