/* SPDX-License-Identifier: MIT */
/**
 * @file zoned.h
 * Zoned devices (SMR disks, ZNS SSDs): zone groups, the active-zone limit
 * and the allocator hint.  Include <libspacersv/spacersv.h> rather than
 * this file.
 *
 * A zone group (btrfs's zoned block group) is a range of the device that is
 * written sequentially from its start: the write pointer (@c alloc_offset)
 * only moves forward, up to the group's @c capacity (which may be less than
 * its @c length, the remainder is never writable).  Space freed below the
 * write pointer cannot be rewritten; it is "zone unusable" until the whole
 * group is reset.  Each group feeds one pool: data and data-relocation
 * groups the DATA pool, metadata and tree-log groups the METADATA pool,
 * system groups the SYSTEM pool (the MIXED pool for data and metadata in a
 * MIXED ctx).
 *
 * The lifecycle of a group, as the engine drives it:
 *
 *     add --> activate --> alloc ... alloc --> (full) --> written --> token back
 *                 |          |                               \
 *                 |          +--> finish (rest unusable) ------+--> reset (flush
 *                 +-- -EBUSY: finish_one, retry                     state RESET_ZONES)
 *
 * - srsv_zone_group_add() registers a group; the pool grows by its length.
 * - srsv_zone_group_activate() takes one of the device's active-zone tokens
 *   and puts the group on the active list, where srsv_zone_hint() finds it.
 * - srsv_zone_group_alloc() advances the write pointer.  This is the
 *   group-level half of an allocation: the pool-level half (may_use ->
 *   reserved) stays the engine's srsv_space_alloc() call, exactly as on a
 *   conventional device.  srsv_zone_group_written() is the group-level half
 *   of srsv_space_commit_used().
 * - Freeing (srsv_zone_group_free(), srsv_zone_group_abandon()) exists only
 *   on zoned devices (the bytes become zone_unusable, not free), so these
 *   two update both the group and the pool: the engine must NOT also call
 *   srsv_space_free_reserved() / srsv_space_pin() for those bytes.
 *
 * A group leaves the active list as soon as its write pointer reaches its
 * capacity, so the hint never walks full groups (upstream 02444f2ac26e: walking every
 * full group made sequential writes to an SMR disk fall from 220 MiB/s to
 * 30 MiB/s).  It keeps its active-zone token until the last allocation in
 * it is written (btrfs's btrfs_zone_finish_endio(): a zone stops being
 * active on the device when its last write lands, not when it is handed
 * out).
 */
#ifndef LIBSPACERSV_ZONED_H
#define LIBSPACERSV_ZONED_H

#include <libspacersv/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** One zone group.  Opaque; lives as long as its ctx. */
struct srsv_zone_group;

/** What a zone group holds (btrfs's block group flags and dedicated
 *  groups). */
enum srsv_zone_kind {
	/** File data; DATA (or MIXED) pool. */
	SRSV_ZONE_DATA = 0,
	/** Metadata; METADATA (or MIXED) pool. */
	SRSV_ZONE_METADATA = 1,
	/** The structures that describe the pools; SYSTEM pool. */
	SRSV_ZONE_SYSTEM = 2,
	/** Data moved by relocation (btrfs's data_reloc_bg): kept apart so
	 *  that relocated extents are written sequentially; DATA pool. */
	SRSV_ZONE_DATA_RELOC = 3,
	/** The fsync log (btrfs's treelog_bg): kept apart so that log
	 *  writes do not interleave with metadata; METADATA pool. */
	SRSV_ZONE_TREELOG = 4,
	SRSV_ZONE_KIND_COUNT = 5
};

/**
 * Most sparse groups one RECLAIM_ZONES pass relocates.  btrfs caps each
 * reclaim pass at 5 block groups: an unbounded sweep relocated every
 * candidate in one go and held the flusher long enough to trigger hung-task
 * warnings; a ticket waiting behind it is better served by several short
 * passes.  A pass also stops as soon as the bytes it gave back (groups the
 * relocation emptied and that were reset) reach what the flush asked for.
 */
#define SRSV_ZONED_RECLAIM_BATCH 5

/**
 * Most groups one RESET_ZONES pass resets.  A pass also stops as soon as
 * the bytes it gave back reach what the flush asked for (one zone usually
 * covers a ticket), so this bounds only large or unnamed targets.
 * RESET_ZONES is part of the priority walk, i.e. it runs in a reserving
 * thread that may hold a transaction, and each reset is one device command
 * (e.g. BLKRESETZONE): 8 of them give back 8 zones, 2 GiB with 256 MiB
 * zones, twice the largest data chunk btrfs allocates at once (1 GiB), and
 * a larger queue of tickets is served by the next pass of the walk.
 */
#define SRSV_ZONED_RESET_BATCH 8

/**
 * An engine callback for one zone group (reset or relocate).
 *
 * Called by the thread running the flush state (a library worker, a thread
 * flushing for its priority ticket, or srsv_ctx_run_pending() in manual
 * mode) with no library lock held, before the engine's srsv_flush_fn for
 * the same state.  The group is marked busy meanwhile: it cannot be
 * activated, and no other flusher picks it.
 *
 * @param group the group
 * @param user srsv_config::user of the ctx
 * @return 0 on success; a negative errno leaves the group as it was (it is
 *         tried again by a later pass)
 */
typedef int (*srsv_zone_fn)(struct srsv_zone_group *group, void *user);

/**
 * Zoned configuration.  Fill with srsv_zoned_config_init(), then set what
 * you need.  Carries its own size, as srsv_config.
 */
struct srsv_zoned_config {
	/** sizeof(struct srsv_zoned_config) as the caller knows it. */
	size_t size;
	/** The device's limit on active zones (btrfs's max_active_zones);
	 *  0: unlimited (SMR disks).  When set it must be larger than
	 *  reserved_metadata + reserved_system, so that data can have at
	 *  least one active group. */
	unsigned max_active_zones;
	/** Tokens held back for metadata and tree-log groups (btrfs's
	 *  reserved_active_zones: 2 for SINGLE metadata, one metadata and one
	 *  tree-log group; 4 for DUP, which writes each to two zones).
	 *  Default 2. */
	unsigned reserved_metadata;
	/** Tokens held back for system groups (1 for SINGLE, 2 for DUP).
	 *  Default 1. */
	unsigned reserved_system;
	/** Deprecated: the threshold is the group table's one
	 *  (srsv_bgroup_config::reclaim_threshold_pct).  Still accepted:
	 *  srsv_zoned_init() sets the table's threshold to it while
	 *  srsv_bgroups_init() has not configured the table.  A finished
	 *  group whose freed bytes reach that percentage of its capacity is
	 *  a RECLAIM_ZONES candidate (btrfs's BTRFS_DEFAULT_ZONED_RECLAIM_THRESH,
	 *  default 75: the live quarter is cheap to move and frees three
	 *  quarters of a zone).  1..100. */
	unsigned reclaim_threshold_pct;
	/** RESET_ZONES: reset the zone on the device (e.g. BLKRESETZONE);
	 *  NULL: nothing to do on the device, the accounting is reset
	 *  anyway. */
	srsv_zone_fn zone_reset;
	/** RECLAIM_ZONES: move the group's live data elsewhere (allocate with
	 *  ::SRSV_ZONE_DATA_RELOC, then srsv_zone_group_free() the old
	 *  extents); NULL: RECLAIM_ZONES relocates nothing. */
	srsv_zone_fn zone_relocate;
};

/**
 * Fill @p cfg with defaults (no active-zone limit, 2 metadata and 1 system
 * reserved token, the deprecated reclaim threshold 75%, no callbacks) and
 * set cfg->size.
 * @param cfg the config
 * @retval 0 success
 * @retval -EINVAL cfg is NULL
 * @note Thread-safe (touches only @p cfg).
 */
int srsv_zoned_config_init(struct srsv_zoned_config *cfg);

/**
 * Make @p ctx zoned: set up the zone group table and the active list.
 * Afterwards RESET_ZONES and RECLAIM_ZONES act on the ctx's zone groups
 * before the engine's flush callback is called for them.  The ctx gets
 * its group table (<libspacersv/bgroup.h>) here; its reclaim threshold is
 * cfg->reclaim_threshold_pct until srsv_bgroups_init() configures it.
 * @param ctx a ctx created with ::SRSV_CTX_ZONED
 * @param cfg configuration; copied
 * @retval 0 success
 * @retval -EINVAL NULL argument, cfg->size too small or larger than this
 *         library knows with non-zero unknown bytes, a ctx without
 *         ::SRSV_CTX_ZONED, a reclaim threshold outside 1..100, or an
 *         active-zone limit not larger than the reserved tokens
 * @retval -EALREADY the ctx is already zoned (nothing changed)
 * @retval -ENOMEM out of memory
 * @note Thread-safe.  Call it before any other zoned function; they return
 *       -EINVAL on a ctx that is not zoned.
 */
SRSV_MUST_CHECK int srsv_zoned_init(struct srsv_ctx *ctx, const struct srsv_zoned_config *cfg);

/**
 * Register a zone group, empty (write pointer 0), inactive, in the ctx's
 * group table (<libspacersv/bgroup.h>: srsv_bgroup_get() and
 * srsv_bgroup_next() see it; the block-group calls work on it with zoned
 * meaning).  Unlike srsv_bgroup_add(), unallocated space is not touched.  Its pool
 * grows by @p length (zone_unusable first by @p length - @p capacity, then
 * total, so that a lock-free reader never sees the unwritable tail as
 * free), the pool is no longer "full", and waiting tickets that now fit
 * are granted.
 * @param ctx a zoned ctx
 * @param kind ::srsv_zone_kind
 * @param start first byte (device address); unique
 * @param length bytes of the zone(s)
 * @param capacity writable bytes, 0 < capacity <= length
 * @param[out] out the group; may be NULL
 * @retval 0 success
 * @retval -EINVAL NULL or non-zoned ctx, unknown kind, zero length or
 *         capacity, capacity > length, a range that wraps or overlaps
 *         another group (a zone group or a srsv_bgroup_add() chunk: they
 *         share the ctx's one group table), a pool that would exceed ::SRSV_MAX_BYTES, or a
 *         kind whose pool the ctx lacks (nothing changed)
 * @retval -ENOMEM out of memory (nothing changed)
 * @note Thread-safe.  Takes the group-table lock and, under it, the pool
 *       lock; neither is held by the hint, activation, allocation or
 *       srsv_zone_group_written(), which therefore never wait for it.
 */
SRSV_MUST_CHECK int srsv_zone_group_add(struct srsv_ctx *ctx, enum srsv_zone_kind kind,
			uint64_t start, uint64_t length, uint64_t capacity,
			struct srsv_zone_group **out);

/**
 * Activate a group (btrfs_zone_activate()): take an active-zone token and
 * append the group to the active list.
 *
 * With a device limit, tokens are shared out by class.  Data and
 * data-relocation groups may take only unreserved tokens; metadata and
 * tree-log groups may also take the tokens reserved for metadata but not
 * yet used by an active metadata group; system groups likewise with the
 * system tokens.  So a data writer that opens zone after zone can never
 * leave the file system unable to write its metadata.
 *
 * @param group the group
 * @retval 0 the group is active (also when it already was)
 * @retval -EBUSY no token this group's class may take: every token is in
 *         use, or (data) only reserved tokens are left.  The device is
 *         busy, not full: finish a group (srsv_zoned_finish_one()) or wait
 *         for writes to land, then retry.  Also returned while a flusher
 *         resets or relocates the group.
 * @retval -ENOSPC the group is full (write pointer at capacity): it must
 *         be reset before it can be activated again
 * @retval -EINVAL NULL group
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_zone_group_activate(struct srsv_zone_group *group);

/**
 * Finish an active group (btrfs_zone_finish()): the write pointer moves to
 * the capacity, the unwritten rest becomes zone_unusable (in the group and
 * the pool), the group leaves the active list and returns its token.
 * @param group the group
 * @retval 0 finished
 * @retval -EBUSY allocations in it are not written yet (finishing would
 *         cut them off; btrfs waits for them), or a flusher owns it
 * @retval -EALREADY the group is not active (nothing changed)
 * @retval -EINVAL NULL group
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_zone_group_finish(struct srsv_zone_group *group);

/**
 * Finish the active DATA group with the least room left (btrfs's
 * btrfs_zone_finish_one_bg(), ZenFS's FinishCheapestIOZone()): it wastes
 * the fewest bytes to free a token.  Groups with outstanding (unwritten)
 * allocations and empty groups (finishing one would waste a whole zone for
 * nothing) are skipped.
 * @param ctx a zoned ctx
 * @param[out] finished the group that was finished; may be NULL
 * @retval 0 a group was finished
 * @retval -EBUSY every candidate has outstanding allocations: retry after
 *         they are written
 * @retval -ENOENT no active data group could be finished
 * @retval -EINVAL NULL or non-zoned ctx
 * @note Thread-safe, but the choice and the finish are not one atomic
 *       step: the choice is made under the active-list lock, the finish
 *       under the chosen group's lock, and a writer that holds a hint may
 *       allocate in the group in between (srsv_zone_group_alloc() takes
 *       only the group lock), or another thread finish it.  The finish
 *       checks again under the group lock; if the group has gained an
 *       unwritten allocation or is no longer active, another group is
 *       chosen (a few times, then -EBUSY).
 */
SRSV_MUST_CHECK int srsv_zoned_finish_one(struct srsv_ctx *ctx,
			  struct srsv_zone_group **finished);

/**
 * The allocator hint (upstream 02444f2ac26e, btrfs's prepare_allocation_zoned()):
 * the group an allocation of @p bytes of @p kind should try first.
 *
 * For DATA_RELOC and TREELOG the ctx's dedicated group of that kind is
 * returned when it has room.  Otherwise the active list is walked in
 * activation order and the first group of @p kind (hence of its pool)
 * with capacity - alloc_offset >= @p bytes is returned; for DATA_RELOC and
 * TREELOG it becomes the dedicated group.  Full groups are never on the
 * list, so the walk is bounded by the number of active groups, not by the
 * size of the device.
 *
 * The room is read without the group's lock: it only shrinks while the
 * group is on the list, so the answer can only be stale in the safe
 * direction, and srsv_zone_group_alloc() checks again.
 *
 * @param ctx a zoned ctx
 * @param kind ::srsv_zone_kind
 * @param bytes size of the allocation
 * @param[out] out the group
 * @retval 0 @p out is set
 * @retval -ENOSPC no active group of that kind has room: activate one
 * @retval -EINVAL NULL argument, non-zoned ctx, unknown kind, 0 bytes or
 *         more than ::SRSV_MAX_BYTES
 * @note Thread-safe; takes only the active-list lock, a leaf lock that no
 *       thread holds while it waits for another lock or runs a callback,
 *       so the hint never waits for a group lock, a pool lock, a group
 *       registration or a RESET_ZONES / RECLAIM_ZONES pass.
 */
SRSV_MUST_CHECK int srsv_zone_hint(struct srsv_ctx *ctx, enum srsv_zone_kind kind,
		   uint64_t bytes, struct srsv_zone_group **out);

/**
 * Advance the write pointer of an active group by @p bytes (the group half
 * of an allocation; the engine moves the pool's may_use to reserved with
 * srsv_space_alloc()).  The group's outstanding allocations grow by
 * @p bytes.  When the write pointer reaches the capacity the group leaves
 * the active list.
 * @param group the group
 * @param bytes size of the allocation
 * @param[out] logical where it starts on the device (start + old write
 *        pointer); may be NULL
 * @retval 0 allocated
 * @retval -ENOSPC the group is not active, or has less than @p bytes of
 *         room (another writer took it since the hint): ask the hint again
 * @retval -EINVAL NULL group, 0 bytes or more than ::SRSV_MAX_BYTES
 * @note Thread-safe; takes the group lock (and, when the group becomes
 *       full, the active-list lock).
 */
SRSV_MUST_CHECK int srsv_zone_group_alloc(struct srsv_zone_group *group, uint64_t bytes,
			  uint64_t *logical);

/**
 * @p bytes of the group's outstanding allocations are written and
 * referenced: group reserved -> used (the group half of
 * srsv_space_commit_used()).  When a full group has no outstanding
 * allocations left, it returns its active-zone token.
 * @param group the group
 * @param bytes how much
 * @retval 0 success
 * @retval -EINVAL NULL group, 0 bytes, or more than the group has
 *         outstanding (nothing changed)
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_zone_group_written(struct srsv_zone_group *group, uint64_t bytes);

/**
 * An allocation in the group was abandoned before it was written: the
 * bytes are below the write pointer, so they become zone_unusable (group:
 * reserved -> zone_unusable; pool: zone_unusable += @p bytes, then
 * reserved -= @p bytes).  Replaces srsv_space_free_reserved() for them.
 * @param group the group
 * @param bytes how much
 * @retval 0 success
 * @retval -EINVAL NULL group, 0 bytes, or more than the group or its pool
 *         has reserved (nothing changed)
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_zone_group_abandon(struct srsv_zone_group *group, uint64_t bytes);

/**
 * Referenced bytes in the group were freed (deleted or overwritten and no
 * longer needed by any committed state): they are below the write pointer,
 * so they become zone_unusable (group: used -> zone_unusable; pool:
 * zone_unusable += @p bytes, then used -= @p bytes, adding before
 * subtracting so that lock-free readers never see the bytes as free).
 * An engine that pins freed bytes until its commit calls this at the
 * commit, instead of srsv_space_pin() / srsv_space_unpin().
 * @param group the group
 * @param bytes how much
 * @retval 0 success
 * @retval -EINVAL NULL group, 0 bytes, or more than the group or its pool
 *         has used (nothing changed)
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_zone_group_free(struct srsv_zone_group *group, uint64_t bytes);

/** A zone group, from srsv_zone_group_info(). */
struct srsv_zone_group_info {
	/** bytes the library filled (set by srsv_zone_group_info_sized(): see docs/api.md,
	 *  "output structs") */
	size_t size;
	uint64_t start;		/**< first byte */
	uint64_t length;	/**< bytes */
	uint64_t capacity;	/**< writable bytes */
	uint64_t alloc_offset;	/**< write pointer, relative to start */
	uint64_t used;		/**< written and referenced */
	uint64_t reserved;	/**< allocated, not yet written */
	uint64_t zone_unusable;	/**< freed below the write pointer, plus
				     length - capacity */
	int kind;		/**< ::srsv_zone_kind */
	int pool;		/**< ::srsv_pool it feeds */
	bool active;		/**< holds an active-zone token */
	bool open;		/**< on the active list (active, not full) */
	bool busy;		/**< a flusher resets or relocates it */
	bool dedicated;		/**< the ctx's dedicated reloc/tree-log group */
};

/**
 * Read a group consistently (under its lock).  Called through the
 * srsv_zone_group_info() macro, which passes the caller's sizeof
 * (docs/api.md, "output structs").
 * @param group the group
 * @param[out] info where to write
 * @param size sizeof(struct srsv_zone_group_info) as the caller knows it
 * @retval 0 success
 * @retval -EINVAL NULL argument, or @p size smaller than the first layout
 *         (nothing written)
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_zone_group_info_sized(struct srsv_zone_group *group,
					       struct srsv_zone_group_info *info,
					       size_t size);
/** srsv_zone_group_info_sized() with the caller's sizeof. */
#define srsv_zone_group_info(group, info) \
	srsv_zone_group_info_sized((group), (info), \
				   sizeof(struct srsv_zone_group_info))

/**
 * Room left in the group (capacity - alloc_offset), read lock-free: a
 * hint, as srsv_zone_hint()'s.
 * @param group the group (must not be NULL)
 * @return bytes
 * @note Thread-safe, lock-free.
 */
uint64_t srsv_zone_group_room(const struct srsv_zone_group *group);

/** The zoned state of a ctx, from srsv_zoned_get_info(). */
struct srsv_zoned_info {
	/** bytes the library filled (set by srsv_zoned_get_info_sized(): see docs/api.md,
	 *  "output structs") */
	size_t size;
	unsigned max_active_zones;	/**< 0: unlimited */
	unsigned active;		/**< tokens in use */
	unsigned active_by_kind[SRSV_ZONE_KIND_COUNT]; /**< of which, by kind */
	unsigned reserved_metadata_left; /**< metadata tokens still held back */
	unsigned reserved_system_left;	/**< system tokens still held back */
	unsigned open;			/**< groups on the active list */
	uint64_t nr_groups;		/**< groups registered */
	uint64_t hints;			/**< srsv_zone_hint() calls */
	uint64_t hint_groups_looked;	/**< groups those calls examined */
	/** Deprecated, srsv_bgroup_stats::resets: zones reset. */
	uint64_t resets;
	/** Deprecated, srsv_bgroup_stats::reclaimed: relocations that
	 *  ended with 0 (zone_relocate calls that succeeded, and chunks
	 *  whose reclaim ended with 0 in a ctx that has both). */
	uint64_t relocations;
	/** Deprecated, srsv_bgroup_stats::candidates_looked: candidates
	 *  the passes (and chunk reclaim) examined.  They look only at the
	 *  groups queued as candidates (fully freed, or sparse) when they
	 *  became so, never at every group of the pool. */
	uint64_t flush_groups_looked;
};

/**
 * Read the zoned state of a ctx.  The token and active-list figures
 * (max_active_zones .. open, hints, hint_groups_looked) are consistent
 * with each other (read under the active-list lock); the other counters
 * are read separately.
 * Called through the srsv_zoned_get_info() macro, which passes the
 * caller's sizeof (docs/api.md, "output structs").
 * @param ctx a zoned ctx
 * @param[out] info where to write
 * @param size sizeof(struct srsv_zoned_info) as the caller knows it
 * @retval 0 success
 * @retval -EINVAL NULL argument, non-zoned ctx, or @p size smaller than
 *         the first layout (nothing written)
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_zoned_get_info_sized(struct srsv_ctx *ctx,
					      struct srsv_zoned_info *info,
					      size_t size);
/** srsv_zoned_get_info_sized() with the caller's sizeof. */
#define srsv_zoned_get_info(ctx, info) \
	srsv_zoned_get_info_sized((ctx), (info), \
				  sizeof(struct srsv_zoned_info))

/**
 * Name of a zone kind.
 * @param kind ::srsv_zone_kind
 * @return "data", "metadata", "system", "data-reloc", "treelog", "unknown"
 *         otherwise (a static string)
 * @note Thread-safe.
 */
const char *srsv_zone_kind_name(int kind);

#ifdef __cplusplus
}
#endif

#endif /* LIBSPACERSV_ZONED_H */
