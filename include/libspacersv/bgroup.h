/* SPDX-License-Identifier: MIT */
/**
 * @file bgroup.h
 * Block groups (chunks) for every pool: growth by whole chunks, unused
 * chunks returned at the commit that emptied them, reclaim of underused
 * chunks, and btrfs's statfs.  Include <libspacersv/spacersv.h> rather than
 * this file.
 *
 * A block group (btrfs's struct btrfs_block_group) is a range of the device
 * that belongs to one pool.  The engine registers the groups it creates
 * (srsv_bgroup_add(): the pool grows by the group, unallocated device space
 * shrinks by it), and reports what lives in each (srsv_bgroup_alloc() and
 * srsv_bgroup_free(), the group halves of btrfs_update_block_group(); the
 * pool halves stay srsv_space_alloc(), srsv_space_pin(), ...).  The library
 * decides what goes back:
 *
 * - A group whose last byte was freed returns to unallocated at the commit
 *   that makes the freed bytes reusable, reported by srsv_ctx_commit_done()
 *   (btrfs_delete_unused_bgs()).
 * - Underused groups become reclaim candidates by btrfs's rules: the fixed
 *   bg_reclaim_threshold, the dynamic threshold
 *   (calc_dynamic_reclaim_threshold(): the further unallocated space is
 *   below ten data chunks, the fuller a group may be and still be moved),
 *   periodic sweeps with reclaim marks (do_reclaim_sweep(): only a group
 *   that saw no allocation for a whole sweep), and urgent reclaim when less
 *   than a data chunk is unallocated.  The engine relocates them in its
 *   flush callback for ::SRSV_STATE_RECLAIM_CHUNKS, taking each with
 *   srsv_bgroup_reclaim_take().  The library asks for it before a ticket
 *   fails while its pool is full: the async metadata and data walks and a
 *   FLUSH_EVICT ticket (FLUSH_LIMIT only if the priority array holds
 *   COMMIT_TRANS) run RECLAIM_CHUNKS for the other pools, then a commit,
 *   then walk again, at most four rounds.  NO_FLUSH and NOWAIT never do.
 *
 * Groups are named by their address (btrfs's bytenr): a group that went
 * back to unallocated is gone, and an address no group covers is -ENOENT.
 *
 * Zone groups (<libspacersv/zoned.h>) are block groups too: they live in
 * the same table (a chunk may not overlap a zone, nor a zone a chunk), the
 * queries see them, and the calls below work on them with zoned meaning,
 * as stated per call: a zone is written at its write pointer only, bytes
 * freed in it become zone_unusable (the library does the pool half too),
 * and an emptied zone is reset in its pool by RESET_ZONES, never returned
 * to unallocated.  Chunks and zones share each pool's candidate lists
 * (btrfs's unused_bgs and reclaim_bgs), the reclaim threshold of
 * struct srsv_bgroup_config and one statistics block: a zone becomes a
 * reclaim candidate when it is finished and the bytes freed below its
 * write pointer reach the fixed threshold of its capacity
 * (__btrfs_add_free_space_zoned()), and RECLAIM_ZONES relocates it;
 * srsv_bgroup_reclaim_take() hands out chunks only.  A candidate is
 * skipped while it has pinned or outstanding bytes, and one emptied since
 * goes to the unused list instead (btrfs_reclaim_block_group()).  A zoned
 * ctx has a table from srsv_zoned_init() on; the
 * calls other than the queries still need srsv_bgroups_init().
 *
 * Locking: one lock per ctx for the group table, taken before any pool
 * lock.  None of these calls may be made with an engine lock held that the
 * engine's flush callback also takes.
 */
#ifndef LIBSPACERSV_BGROUP_H
#define LIBSPACERSV_BGROUP_H

#include <libspacersv/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Most groups in reclaim at once (taken with srsv_bgroup_reclaim_take()
 * and not yet done).  btrfs bounds a reclaim pass the same way (its zoned
 * reclaim takes 5 block groups a pass): a ticket waiting behind a long
 * relocation is better served by several short passes.
 */
#define SRSV_BGROUP_RECLAIM_BATCH 5

/**
 * Unallocated space reclaim aims for, in data chunks (btrfs's
 * BTRFS_UNALLOC_BLOCK_GROUP_TARGET, used by calc_unalloc_target()).
 */
#define SRSV_BGROUP_UNALLOC_TARGET 10

/** Block group configuration.  Fill with srsv_bgroup_config_init(). */
struct srsv_bgroup_config {
	/** sizeof(struct srsv_bgroup_config) as the caller knows it. */
	size_t size;
	/** btrfs's bg_reclaim_threshold: a group whose used bytes drop
	 *  below this percentage of its length (having been at or above it)
	 *  becomes a reclaim candidate.  0 (default, as btrfs on
	 *  conventional devices): off.  0..100.  Ignored for chunks while
	 *  @c dynamic_reclaim is on.  The one threshold of the table: zones
	 *  use it (always the fixed value) on the bytes freed below their
	 *  write pointers; on a zoned ctx it is srsv_zoned_config's
	 *  deprecated reclaim_threshold_pct (75) until this call sets it. */
	unsigned reclaim_threshold_pct;
	/** btrfs's dynamic_reclaim: the threshold follows
	 *  calc_dynamic_reclaim_threshold() (default on). */
	bool dynamic_reclaim;
	/** btrfs's periodic_reclaim: candidates are chosen by a sweep at
	 *  commit (srsv_ctx_commit_done()) once a data chunk's worth of the
	 *  pool became reclaimable, instead of when a free crosses the
	 *  threshold (default on). */
	bool periodic_reclaim;
	/** Raw device bytes per data byte (the data profile's factor: 1
	 *  SINGLE, 2 DUP/RAID1, ...; default 1, at most 4).  Metadata and
	 *  system groups use srsv_config::metadata_raid_factor. */
	unsigned data_raid_factor;
};

/**
 * Fill @p cfg with defaults (fixed threshold off, dynamic and periodic
 * reclaim on, data factor 1) and set cfg->size.
 * @param cfg the config
 * @retval 0 success
 * @retval -EINVAL cfg is NULL
 * @note Thread-safe (touches only @p cfg).
 */
int srsv_bgroup_config_init(struct srsv_bgroup_config *cfg);

/**
 * Give @p ctx a block group table.  Call it once, before any other
 * srsv_bgroup_* call (they return -EINVAL on a ctx without one).  The
 * pools keep the bytes they were created with; those are in no group and
 * never returned.  A zoned ctx already has a table for its zone groups
 * (srsv_bgroup_get(), _next() and _stats() work on it): this configures
 * that table for chunks.
 * @param ctx the ctx
 * @param cfg configuration; copied
 * @retval 0 success
 * @retval -EINVAL NULL argument, cfg->size too small, or larger with
 *         non-zero bytes this library does not know, a threshold above
 *         100, a data factor of 0 or above 4
 * @retval -EALREADY the ctx's table is already configured (nothing
 *         changed)
 * @retval -ENOMEM out of memory
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_bgroups_init(struct srsv_ctx *ctx,
		      const struct srsv_bgroup_config *cfg);

/**
 * A new group of @p length bytes at [@p start, @p start + @p length) joins
 * @p pool: unallocated shrinks by length * factor (the raw bytes of the
 * pool's profile), then the pool's total grows by @p length, its "full"
 * mark is cleared and waiting tickets that now fit are granted.  The group
 * starts empty.  The engine must not also call srsv_space_grow() or
 * srsv_ctx_set_unallocated() for it.
 * @param ctx a ctx with a group table
 * @param pool ::srsv_pool (DATA and METADATA name the MIXED pool in a
 *        MIXED ctx)
 * @param start first byte (device address)
 * @param length bytes (> 0)
 * @retval 0 success
 * @retval -ENOSPC less than length * factor is unallocated (nothing
 *         changed)
 * @retval -EINVAL NULL or table-less ctx, no such pool, 0 length, a range
 *         that wraps or overlaps a group, a pool above ::SRSV_MAX_BYTES
 * @retval -ENOMEM out of memory
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_bgroup_add(struct srsv_ctx *ctx, enum srsv_pool pool, uint64_t start,
		    uint64_t length);

/**
 * The engine placed @p bytes at @p bytenr (an extent it allocated): the
 * group's used bytes grow, its reclaim mark drops to 0 (a group that is
 * being written to is not stale).  The group half of an allocation; the
 * pool half stays srsv_space_alloc() / srsv_space_commit_used().
 * @param ctx a ctx with a group table
 * @param pool the pool the engine believes the extent is in
 * @param bytenr first byte of the extent
 * @param bytes its length (> 0)
 * @retval 0 success
 * @retval -ENOENT no group covers @p bytenr
 * @retval -EINVAL bad argument, a group of another pool, an extent that
 *         leaves the group, or more than the group's free bytes
 * @retval -EROFS the group is taken for reclaim (read-only)
 * @retval -ENOSPC a zone group that is not active or has less room
 * @note Thread-safe.  Nothing changed on error.  On a zone group
 *       @p bytenr must be its write pointer (else -EINVAL); the bytes are
 *       allocated and written at once (srsv_zone_group_alloc() and
 *       srsv_zone_group_written() in one).
 */
SRSV_MUST_CHECK int srsv_bgroup_alloc(struct srsv_ctx *ctx, enum srsv_pool pool,
		      uint64_t bytenr, uint64_t bytes);

/**
 * The engine freed @p bytes at @p bytenr in transaction @p transid: the
 * group's used bytes drop; the bytes stay pinned in the group until
 * srsv_ctx_commit_done() reports that transaction's commit (0: reusable at
 * once).  When the group's used bytes reach 0 it is marked unused and
 * returns at that commit.  With the fixed threshold (periodic reclaim off)
 * a free that takes the group below it makes the group a candidate.
 * @param ctx a ctx with a group table
 * @param pool the pool the engine believes the extent is in
 * @param bytenr first byte of the extent
 * @param bytes its length (> 0)
 * @param transid the running transaction (0: not pinned)
 * @retval 0 success
 * @retval -ENOENT no group covers @p bytenr
 * @retval -EINVAL bad argument, a group of another pool, an extent that
 *         leaves the group, more than its used bytes, a transaction
 *         already reported committed, or one whose parity (odd or even)
 *         another uncommitted transaction with bytes pinned in the group
 *         has (a group keeps two transactions' pinned bytes: the
 *         committing one and the running one, which are consecutive)
 * @note Thread-safe.  Nothing changed on error.  On a zone group the
 *       bytes are below the write pointer: with @p transid 0 they become
 *       zone_unusable at once, in the group and the pool (as
 *       srsv_zone_group_free()); else the pool keeps them as used until
 *       srsv_ctx_commit_done() moves them to zone_unusable.  The engine
 *       must not srsv_space_pin() / srsv_space_unpin() them.
 */
SRSV_MUST_CHECK int srsv_bgroup_free(struct srsv_ctx *ctx, enum srsv_pool pool,
		     uint64_t bytenr, uint64_t bytes, uint64_t transid);

/**
 * Transaction @p transid committed, and the engine has unpinned its pool
 * bytes (srsv_space_unpin()).  Group bytes pinned in transactions up to
 * @p transid become free; every group whose used and pinned bytes are now
 * 0 and that was emptied by a free (not a new group) returns to
 * unallocated, as btrfs_delete_unused_bgs() does after the commit: the
 * pool's total shrinks by its length, unallocated grows by its raw bytes,
 * every pool's "full" mark is cleared and metadata tickets that may now
 * overcommit are granted.  A group stays (and is tried at the next commit)
 * when it is the last group of its pool (btrfs keeps it: the profile would
 * be lost), or when reservations hold the pool's free space.  Then, with
 * periodic reclaim, pools that became ready are swept for candidates.
 * Zone groups: their bytes pinned up to @p transid become zone_unusable
 * (group and pool); an emptied zone is not returned but left for
 * RESET_ZONES, which resets it in place (btrfs_reset_unused_block_groups()).
 * @param ctx a ctx with a group table
 * @param transid the committed transaction; above every one reported
 *        before
 * @return the number of groups returned (>= 0)
 * @retval -EINVAL NULL or table-less ctx, @p transid 0 or not above the
 *         last one reported (nothing changed)
 * @note Thread-safe; call it from the COMMIT_TRANS callback or wherever
 *       the engine commits, with no engine lock the flush callback takes.
 *       O(groups).
 */
SRSV_MUST_CHECK int srsv_ctx_commit_done(struct srsv_ctx *ctx, uint64_t transid);

/**
 * Return one empty group to unallocated now (as srsv_ctx_commit_done()
 * would, the last group of a pool included).
 * @param ctx a ctx with a group table
 * @param pool its pool
 * @param start the group's first byte
 * @retval 0 returned
 * @retval -ENOENT no group covers @p start
 * @retval -EINVAL bad argument, @p start inside (not at the start of) a
 *         group, a group of another pool, or a zone group
 * @retval -EBUSY the group still holds used or pinned bytes, or is taken
 *         for reclaim
 * @retval -ENOSPC reservations hold the pool's free space: the pool cannot
 *         shrink by the group now
 * @note Thread-safe.  Nothing changed on error.
 */
SRSV_MUST_CHECK int srsv_bgroup_remove(struct srsv_ctx *ctx, enum srsv_pool pool,
		       uint64_t start);

/** A group, from srsv_bgroup_get() and friends. */
struct srsv_bgroup_info {
	/** bytes the library filled (set by srsv_bgroup_get_sized() and friends: see docs/api.md,
	 *  "output structs") */
	size_t size;
	uint64_t start;		/**< first byte */
	uint64_t length;	/**< bytes */
	uint64_t used;		/**< live bytes the engine reported */
	uint64_t pinned;	/**< freed, reusable after their commit */
	int pool;		/**< ::srsv_pool of the pool it feeds */
	unsigned reclaim_mark;	/**< sweeps since its last allocation */
	bool readonly;		/**< taken for reclaim (never a zone) */
	bool unused;		/**< emptied: returns at a commit (a zone:
				     every byte unusable, RESET_ZONES resets it) */
	bool candidate;		/**< marked for reclaim, not taken yet (a
				     zone: a RECLAIM_ZONES candidate) */
};

/**
 * The group covering @p bytenr.  Called through the srsv_bgroup_get()
 * macro, which passes the caller's sizeof (docs/api.md, "output
 * structs"), as are srsv_bgroup_next() and srsv_bgroup_reclaim_take().
 * @param ctx a ctx with a group table
 * @param bytenr any byte of it
 * @param[out] info its state
 * @param size sizeof(struct srsv_bgroup_info) as the caller knows it
 * @retval 0 success
 * @retval -ENOENT no group covers @p bytenr
 * @retval -EINVAL NULL argument, table-less ctx, or @p size smaller than
 *         the first layout (nothing written)
 * @note Thread-safe.  Chunks and zone groups alike.
 */
SRSV_MUST_CHECK int srsv_bgroup_get_sized(struct srsv_ctx *ctx, uint64_t bytenr,
					  struct srsv_bgroup_info *info,
					  size_t size);
/** srsv_bgroup_get_sized() with the caller's sizeof. */
#define srsv_bgroup_get(ctx, bytenr, info) \
	srsv_bgroup_get_sized((ctx), (bytenr), (info), \
			      sizeof(struct srsv_bgroup_info))

/**
 * The first group that starts at or after @p from, to walk the table:
 * start with 0, continue with info.start + info.length.
 * @param ctx a ctx with a group table
 * @param from address
 * @param[out] info its state
 * @param size sizeof(struct srsv_bgroup_info) as the caller knows it
 * @retval 0 success
 * @retval -ENOENT no group starts at or after @p from
 * @retval -EINVAL NULL argument, table-less ctx, or @p size smaller than
 *         the first layout (nothing written)
 * @note Thread-safe; the table may change between calls.
 */
SRSV_MUST_CHECK int srsv_bgroup_next_sized(struct srsv_ctx *ctx, uint64_t from,
					   struct srsv_bgroup_info *info,
					   size_t size);
/** srsv_bgroup_next_sized() with the caller's sizeof. */
#define srsv_bgroup_next(ctx, from, info) \
	srsv_bgroup_next_sized((ctx), (from), (info), \
			       sizeof(struct srsv_bgroup_info))

/**
 * The lowest-addressed writable group of @p pool with at least @p bytes
 * neither used nor pinned: where a simple allocator puts its next extent
 * (filling low groups first leaves high ones to empty and return).
 * @param ctx a ctx with a group table
 * @param pool ::srsv_pool
 * @param bytes room needed (> 0)
 * @param[out] start the group's first byte
 * @retval 0 success
 * @retval -ENOSPC no such group
 * @retval -EINVAL bad argument or table-less ctx
 * @note Thread-safe.  O(groups).  Zone groups are never offered (they are
 *       written at their write pointer: srsv_zone_hint() finds them).
 */
SRSV_MUST_CHECK int srsv_bgroup_find_free(struct srsv_ctx *ctx, enum srsv_pool pool,
			  uint64_t bytes, uint64_t *start);

/**
 * Take the next reclaim candidate, the least used first (btrfs sorts its
 * reclaim list by used bytes: least to move, most to gain): it becomes
 * read-only (its free bytes become the pool's readonly bytes, and
 * srsv_bgroup_alloc() refuses it, as btrfs_inc_block_group_ro()).  The
 * engine then moves its live extents elsewhere (srsv_bgroup_alloc() in
 * another group, srsv_bgroup_free() here, and the pool transitions) and
 * calls srsv_bgroup_reclaim_done().
 *
 * Candidates come from the rules in the file comment; when the library
 * calls the flush callback with ::SRSV_STATE_RECLAIM_CHUNKS there is at
 * least one.  As btrfs_reclaim_block_group(), a candidate with pinned
 * bytes is skipped (commit first), and one emptied since it was marked is
 * not taken but returned at the next commit.  Zone groups are never taken
 * (RECLAIM_ZONES relocates them).
 * @param ctx a ctx with a group table
 * @param[out] info the group taken
 * @param size sizeof(struct srsv_bgroup_info) as the caller knows it
 * @retval 0 taken
 * @retval -ENOENT no candidate
 * @retval -EBUSY ::SRSV_BGROUP_RECLAIM_BATCH groups are taken and not done
 * @retval -EINVAL NULL argument, table-less ctx, or @p size smaller than
 *         the first layout (nothing taken, nothing written)
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_bgroup_reclaim_take_sized(struct srsv_ctx *ctx,
						   struct srsv_bgroup_info *info,
						   size_t size);
/** srsv_bgroup_reclaim_take_sized() with the caller's sizeof. */
#define srsv_bgroup_reclaim_take(ctx, info) \
	srsv_bgroup_reclaim_take_sized((ctx), (info), \
				       sizeof(struct srsv_bgroup_info))

/**
 * End the reclaim of a group taken with srsv_bgroup_reclaim_take().
 * @p result 0: its live data moved out; the group keeps no used bytes and
 * stays read-only until the commit that frees its pinned bytes returns it.
 * A negative @p result: the relocation failed; the group is writable again
 * (btrfs_dec_block_group_ro()) and may be a candidate again later.
 * After a RECLAIM_CHUNKS callback, the library ends the groups the
 * callback took (on the thread the library called it on) and left taken:
 * with 0 if they are empty, -EAGAIN otherwise.  Groups taken anywhere
 * else (another thread, outside the callback) stay taken until this call,
 * whatever other RECLAIM_CHUNKS rounds run meanwhile.
 * @param ctx a ctx with a group table
 * @param start the group's first byte
 * @param result 0 or a negative errno
 * @retval 0 success
 * @retval -ENOENT no group covers @p start
 * @retval -EINVAL bad argument, a positive @p result, @p start inside (not
 *         at the start of) a group, or a group that is not taken
 * @retval -EBUSY @p result 0 but the group still holds used bytes
 * @note Thread-safe.  Nothing changed on error.
 */
SRSV_MUST_CHECK int srsv_bgroup_reclaim_done(struct srsv_ctx *ctx, uint64_t start, int result);

/**
 * The reclaim threshold of @p pool now: btrfs_calc_reclaim_threshold(),
 * i.e. calc_dynamic_reclaim_threshold() with dynamic reclaim (100 * want /
 * target, where target is ::SRSV_BGROUP_UNALLOC_TARGET data chunks and
 * want what unallocated space lacks of it; 0 while the pool has less than
 * a data chunk unused), else the fixed threshold.  A group whose used
 * bytes are below this percentage of its length may be reclaimed.
 * @param ctx a ctx with a group table
 * @param pool ::srsv_pool
 * @return the percentage, 0..100
 * @retval -EINVAL NULL or table-less ctx, no such pool
 * @note Thread-safe, lock-free (a snapshot of moving figures).
 */
SRSV_MUST_CHECK int srsv_bgroup_reclaim_threshold(struct srsv_ctx *ctx, enum srsv_pool pool);

/** Block group statistics, from srsv_bgroup_stats(). */
struct srsv_bgroup_stats {
	/** bytes the library filled (set by srsv_bgroup_stats_sized(): see docs/api.md,
	 *  "output structs") */
	size_t size;
	uint64_t nr_groups;	/**< groups now */
	uint64_t added;		/**< groups ever added */
	uint64_t returned;	/**< groups returned to unallocated */
	uint64_t reclaimed;	/**< relocations ended with 0 (chunks taken
				     and done, zones zone_relocate moved) */
	uint64_t reclaim_failed;/**< relocations ended with an error */
	uint64_t sweeps;	/**< reclaim sweeps run */
	uint64_t marked;	/**< groups a sweep or a free made candidates */
	uint64_t committed;	/**< last transaction reported committed */
	/* Since 0.1.0's block-group merge (the one statistics block of
	 * chunks and zones); a caller built before it gets the fields
	 * above only. */
	/** Bytes relocated by reclaims that ended with 0: the used (and
	 *  reserved) bytes of each group when it was claimed, as upstream's
	 *  reclaim_bytes. */
	uint64_t reclaimed_bytes;
	/** Zones reset by RESET_ZONES (or after a RECLAIM_ZONES
	 *  relocation emptied them). */
	uint64_t resets;
	/** Candidates the reclaim choices and the RESET_ZONES and
	 *  RECLAIM_ZONES passes looked at: they look only at the groups
	 *  queued on the candidate lists, never at every group. */
	uint64_t candidates_looked;
};

/**
 * Statistics of the group table.  Called through the srsv_bgroup_stats()
 * macro, which passes the caller's sizeof (docs/api.md, "output
 * structs").
 * @param ctx a ctx with a group table
 * @param[out] stats the figures
 * @param size sizeof(struct srsv_bgroup_stats) as the caller knows it
 * @retval 0 success
 * @retval -EINVAL NULL argument, table-less ctx, or @p size smaller than
 *         the first layout (nothing written)
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_bgroup_stats_sized(struct srsv_ctx *ctx,
					    struct srsv_bgroup_stats *stats,
					    size_t size);
/** srsv_bgroup_stats_sized() with the caller's sizeof. */
#define srsv_bgroup_stats(ctx, stats) \
	srsv_bgroup_stats_sized((ctx), (stats), \
				sizeof(struct srsv_bgroup_stats))

/**
 * What df should say, computed as btrfs_statfs() computes it, in bytes
 * (divide by the engine's block size for struct statvfs).
 */
struct srsv_statfs {
	/** bytes the library filled (set by srsv_ctx_statfs_sized(): see docs/api.md,
	 *  "output structs") */
	size_t size;
	/** f_blocks: srsv_config::device_bytes / data factor. */
	uint64_t total;
	/** f_bfree: total minus every pool's used bytes (raw: times its
	 *  factor, then / data factor), minus the global reserve's size. */
	uint64_t free;
	/** f_bavail: free bytes in data chunks (total - used - readonly)
	 *  plus unallocated / data factor; 0 when the metadata pool is full
	 *  (cannot grow) and its free bytes less 4 MiB are below the global
	 *  reserve: df does not promise what no write can get. */
	uint64_t avail;
	/** Raw free bytes of the metadata pool (btrfs's total_free_meta);
	 *  0 in a MIXED ctx. */
	uint64_t metadata_free;
	/** The global reserve's size. */
	uint64_t global_rsv_size;
	/** The metadata pool cannot grow. */
	bool metadata_full;
};

/**
 * btrfs_statfs() for the ctx.  What it models: the DATA (or MIXED) pool
 * feeds f_bavail, with its read-only bytes (groups in reclaim, btrfs's
 * btrfs_account_ro_block_groups_free_space()) left out and unallocated
 * space counted at the data factor (btrfs_calc_avail_data_space() for one
 * device, without its 1 MiB per-device reservation); "used" is referenced
 * bytes only (btrfs's disk_used), so reservations and pinned bytes still
 * count as free, as in df on btrfs.  Works with or without a group table
 * (the factors then are the data factor 1 and metadata_raid_factor).
 * Called through the srsv_ctx_statfs() macro, which passes the caller's
 * sizeof (docs/api.md, "output structs").
 * @param ctx the ctx
 * @param[out] st the figures
 * @param size sizeof(struct srsv_statfs) as the caller knows it
 * @retval 0 success
 * @retval -EINVAL NULL argument, or @p size smaller than the first layout
 *         (nothing written)
 * @note Thread-safe; takes each pool lock in turn (the figures are not one
 *       atomic snapshot of the whole ctx).
 */
SRSV_MUST_CHECK int srsv_ctx_statfs_sized(struct srsv_ctx *ctx,
					  struct srsv_statfs *st, size_t size);
/** srsv_ctx_statfs_sized() with the caller's sizeof. */
#define srsv_ctx_statfs(ctx, st) \
	srsv_ctx_statfs_sized((ctx), (st), sizeof(struct srsv_statfs))

#ifdef __cplusplus
}
#endif

#endif /* LIBSPACERSV_BGROUP_H */
