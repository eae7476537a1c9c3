/* SPDX-License-Identifier: MIT */
/*
 * Zoned devices: the zone flavour of a block group, the active-zone
 * limit, the allocator hint, and the RESET_ZONES / RECLAIM_ZONES passes.
 *
 * Layer: the zone flavour, right above block groups (bgroup.c) and below
 * the engine-callback wrapper, which runs the passes before it calls the
 * engine.  A zone group is the one block group of bgroup.c (struct
 * srsv__bg, embedded first in struct srsv_zone_group) with its zone
 * fields in use: its counters, pinned buckets, free path, candidate
 * lists, claim and reset are bgroup.c's, under the group lock.  What only
 * zones have lives here: the active list and its tokens, the dedicated
 * groups, the hint, and the passes that call the engine's zone callbacks.
 * bgroup.c reaches the active list only through this flavour's one
 * operation, filled() (struct srsv__bg_flavour).
 *
 * HOW ZONED ALLOCATION WORKS
 *
 * A zone is written sequentially: its write pointer, alloc_offset, only
 * moves forward up to the group's capacity; bytes freed below it cannot
 * be reused and become zone_unusable until the whole group is reset.
 * Devices limit how many zones may be open for writing at once (ZNS
 * max_active_zones).  A group takes an active-zone token when it is
 * activated and returns it when it is finished or when its last write
 * lands after the write pointer reached the capacity
 * (btrfs_zone_finish_endio()).  Tokens are held back for metadata and
 * system groups (btrfs's reserved_active_zones: one metadata and one
 * tree-log group, and one system group, doubled for DUP), so that a data
 * writer opening zone after zone cannot leave the engine unable to write
 * the metadata that describes its data.
 *
 * THE HINT (upstream 02444f2ac26e "btrfs: zoned: optimize hint byte for
 * zoned allocator")
 *
 * The zoned extent allocator used to walk every block group of the pool
 * from the start, checking each for room.  On a large SMR disk that is tens
 * of thousands of groups, nearly all full, for every extent: a sequential
 * writer fell from 220 MiB/s to 30 MiB/s after 500 minutes.  The fix walks
 * the active list instead, which never holds a full group, and takes the
 * first group of the right kind with room.  The walk holds only the list
 * lock and reads each write pointer without the group lock: while a group
 * is on the list its room only shrinks, so a stale read can only make the
 * hint too optimistic, and the allocation itself checks again under the
 * group lock.  The data-relocation and tree-log kinds have a dedicated
 * group each (btrfs's data_reloc_bg and treelog_bg): relocated extents and
 * log writes stay sequential in their own zone.
 *
 * THE PASSES
 *
 * Nothing may walk every group of the device while the allocator waits.
 * Like btrfs's unused_bgs and reclaim_bgs, a zone is put on its pool's
 * candidate list when it becomes one (bgroup.c, srsv__bg_queue(): by a
 * free, an abandon, a finish, the return of its token or a commit), and a
 * pass looks only there.  Each pass is bounded (DESIGN: every flush pass is
 * bounded): RESET_ZONES resets at most SRSV_ZONED_RESET_BATCH zones and
 * RECLAIM_ZONES relocates at most SRSV_ZONED_RECLAIM_BATCH, the least used
 * first, and both stop once the bytes given back reach what the flush
 * asked for.  RESET_ZONES runs in the priority (FLUSH_LIMIT) walk, in a
 * caller that may hold a transaction: one device command per reset, and no
 * more than the waiters need.
 *
 * LOCKING (bgroup.c has the whole order)
 *
 * - A zone's group lock protects its counters and flags (bgroup.c's one
 *   rule).  "active" and "open" are written with the group lock and the
 *   list lock held, so either is enough to read them.
 * - The list lock (z->list_lock) protects the active list, the token
 *   counts, the dedicated groups and the hint statistics.  It is a leaf
 *   under a group lock: no thread holding it waits for another lock, so
 *   the hint, which takes nothing else, never waits behind a group lock,
 *   a pool lock, a table walk or an engine callback (btrfs's
 *   zone_active_bgs_lock is a spinlock for the same reason).
 *   srsv_zoned_finish_one() chooses under it and finishes under the group
 *   lock, re-checking the choice.
 * - Engine callbacks (zone_reset, zone_relocate) run with no lock held;
 *   the zone is busy meanwhile, so no one activates it and no other pass
 *   picks it.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "bgroup.h"
#include "gate.h"
#include "stats.h"
#include "trace.h"
#include "zoned.h"

/* Token classes: who may take which active-zone tokens. */
enum zone_class {
	CLASS_DATA = 0,		/* data, data-reloc: unreserved tokens only */
	CLASS_METADATA = 1,	/* metadata, tree-log */
	CLASS_SYSTEM = 2,	/* system */
	CLASS_COUNT = 3
};

/* What each kind feeds, who may take its tokens, its name. */
static const struct {
	int pool;
	int class;
	const char *name;
} kinds[SRSV_ZONE_KIND_COUNT] = {
	[SRSV_ZONE_DATA] = { SRSV_POOL_DATA, CLASS_DATA, "data" },
	[SRSV_ZONE_METADATA] = { SRSV_POOL_METADATA, CLASS_METADATA,
				 "metadata" },
	[SRSV_ZONE_SYSTEM] = { SRSV_POOL_SYSTEM, CLASS_SYSTEM, "system" },
	[SRSV_ZONE_DATA_RELOC] = { SRSV_POOL_DATA, CLASS_DATA, "data-reloc" },
	[SRSV_ZONE_TREELOG] = { SRSV_POOL_METADATA, CLASS_METADATA,
				"treelog" },
};

/*
 * srsv_zoned_finish_one() chooses under the list lock and finishes under
 * the group lock; a writer can allocate in the chosen group (or another
 * thread finish it) in between, and each retry means that just happened.
 * After this many the caller is better told -EBUSY than kept spinning.
 */
#define FINISH_ONE_TRIES 4

/* Kinds with a dedicated group (btrfs's data_reloc_bg, treelog_bg). */
static bool kind_dedicated(int kind)
{
	return kind == SRSV_ZONE_DATA_RELOC || kind == SRSV_ZONE_TREELOG;
}

struct srsv_zone_group {
	struct srsv__bg bg;		/* first: bgroup.c frees it */
	/* Immutable after srsv_zone_group_add(). */
	struct srsv__zoned *z;
	int kind;
	/* Protected by z->list_lock. */
	struct srsv__list active_node;	/* on z->active while open */
};

struct srsv__zoned {
	struct srsv_ctx *ctx;
	struct srsv_zoned_config cfg;		/* immutable */
	struct srsv__bg_flavour flavour;	/* immutable */
	volatile AO_t nr_groups;		/* zones registered */

	struct srsv__lock list_lock;		/* leaf */
	/* Protected by list_lock. */
	struct srsv__list active;	/* open groups, activation order */
	unsigned active_count;
	unsigned active_by_class[CLASS_COUNT];
	unsigned active_by_kind[SRSV_ZONE_KIND_COUNT];
	unsigned open_count;
	struct srsv_zone_group *dedicated[SRSV_ZONE_KIND_COUNT];
	uint64_t hints, hint_looked;
};

/* ctx->zoned is published once by a compare-and-swap (AO_t, as quota.c's
 * ctx->quotas) and read lock-free by the flushers. */
_Static_assert(sizeof(struct srsv__zoned *) == sizeof(AO_t),
	       "ctx->zoned is accessed as an AO_t");

/* ---- helpers ---- */

static volatile AO_t *zoned_slot(struct srsv_ctx *ctx)
{
	return (volatile AO_t *)(void *)&ctx->zoned;
}

static struct srsv__zoned *zoned_of(struct srsv_ctx *ctx)
{
	/* Acquire: pairs with the CAS in srsv_zoned_init(). */
	return ctx ? (struct srsv__zoned *)(uintptr_t)
		     AO_load_acquire(zoned_slot(ctx)) : NULL;
}

static struct srsv_zone_group *zone_of(struct srsv__bg *bg)
{
	return srsv__container_of(bg, struct srsv_zone_group, bg);
}

static bool bad_bytes(uint64_t bytes)
{
	return bytes == 0 || bytes > SRSV_MAX_BYTES;
}

static uint64_t group_room(const struct srsv_zone_group *g)
{
	return g->bg.capacity - srsv__ld(&g->bg.alloc_offset);
}

/* Tokens of @class still held back for it: reserved minus its active.
 * List lock held. */
static unsigned reserved_left(struct srsv__zoned *z, int class)
{
	unsigned reserved = 0;

	srsv__assert_held(&z->list_lock);
	if (class == CLASS_METADATA)
		reserved = z->cfg.reserved_metadata;
	else if (class == CLASS_SYSTEM)
		reserved = z->cfg.reserved_system;
	return reserved > z->active_by_class[class] ?
	       reserved - z->active_by_class[class] : 0;
}

/* Tokens not in use; UINT_MAX ("no limit", the trace's view) without a
 * device limit.  List lock held. */
static unsigned tokens_left(struct srsv__zoned *z)
{
	srsv__assert_held(&z->list_lock);
	if (!z->cfg.max_active_zones)
		return UINT_MAX;
	return z->cfg.max_active_zones - z->active_count;
}

/* May a group of @class take a token?  List lock held. */
static bool may_take_token(struct srsv__zoned *z, int class)
{
	unsigned held_back = 0;

	srsv__assert_held(&z->list_lock);
	if (!z->cfg.max_active_zones)
		return true;
	/* Every class may use the free tokens and its own reserved ones,
	 * never another class's. */
	for (int c = 0; c < CLASS_COUNT; c++)
		if (c != class)
			held_back += reserved_left(z, c);
	return tokens_left(z) > held_back;
}

/* Take @g off the active list.  Group and list locks held. */
static void close_locked(struct srsv__zoned *z, struct srsv_zone_group *g)
{
	srsv__assert_held(&g->bg.lock);
	srsv__assert_held(&z->list_lock);
	if (!g->bg.open)
		return;
	srsv__list_del_init(&g->active_node);
	g->bg.open = false;
	z->open_count--;
	if (z->dedicated[g->kind] == g)
		z->dedicated[g->kind] = NULL;
}

/* Close @g (if it is not yet) and give back its token; it may now be a
 * candidate.  Group lock held, not the list lock. */
static void give_back_token(struct srsv__zoned *z, struct srsv_zone_group *g,
			    uint64_t wasted)
{
	srsv__assert_held(&g->bg.lock);
	srsv__lock(&z->list_lock);
	close_locked(z, g);
	g->bg.active = false;
	z->active_count--;
	z->active_by_class[kinds[g->kind].class]--;
	z->active_by_kind[g->kind]--;
	srsv__unlock(&z->list_lock);
	srsv__trace_zone_finish(g->bg.start, g->kind, wasted);
	srsv__bg_queue(&g->bg);
}

/*
 * The flavour's operation (bgroup.h): full, so off the active list at
 * once (the hint never sees it); its token comes back when nothing is
 * outstanding (the last write landed).  Group lock held.
 */
static void zone_filled(struct srsv__bg *bg)
{
	struct srsv_zone_group *g = zone_of(bg);

	srsv__lock(&g->z->list_lock);
	close_locked(g->z, g);
	srsv__unlock(&g->z->list_lock);
	if (bg->active && !srsv__ld(&bg->reserved))
		give_back_token(g->z, g, 0);
}

/* ---- configuration and teardown ---- */

SRSV__EXPORT int srsv_zoned_config_init(struct srsv_zoned_config *cfg)
{
	if (!cfg)
		return -EINVAL;
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	/* btrfs's reserved_active_zones for SINGLE profiles: a metadata and
	 * a tree-log group, and a system group. */
	cfg->reserved_metadata = 2;
	cfg->reserved_system = 1;
	/* BTRFS_DEFAULT_ZONED_RECLAIM_THRESH, for the group table. */
	cfg->reclaim_threshold_pct = 75;
	return 0;
}

static void zoned_free(struct srsv__zoned *z)
{
	srsv__lock_destroy(&z->list_lock);
	free(z);
}

SRSV__EXPORT int srsv_zoned_init(struct srsv_ctx *ctx,
				 const struct srsv_zoned_config *cfg)
{
	struct srsv__zoned *z;
	uint64_t reserved;
	int ret;

	if (!ctx || !cfg || !srsv__cfg_known(cfg, sizeof(*cfg), cfg->size))
		return -EINVAL;
	if (!(ctx->cfg.flags & SRSV_CTX_ZONED))
		return -EINVAL;
	if (cfg->reclaim_threshold_pct < 1 || cfg->reclaim_threshold_pct > 100)
		return -EINVAL;
	reserved = (uint64_t)cfg->reserved_metadata + cfg->reserved_system;
	/* With a limit, data needs at least one token of its own, or it
	 * could never write (btrfs refuses devices below its minimum). */
	if (cfg->max_active_zones && cfg->max_active_zones <= reserved)
		return -EINVAL;

	z = calloc(1, sizeof(*z));
	if (!z)
		return -ENOMEM;
	ret = srsv__lock_init(&z->list_lock);
	if (ret) {
		free(z);
		return ret;
	}
	z->ctx = ctx;
	z->cfg = *cfg;
	z->cfg.size = sizeof(z->cfg);
	z->flavour.filled = zone_filled;
	z->flavour.relocates = cfg->zone_relocate != NULL;
	srsv__list_init(&z->active);

	/* The zones go into the ctx's group table, whose fixed threshold
	 * is the zoned default until srsv_bgroups_init() configures it. */
	if (!srsv__bgroups_table(ctx, cfg->reclaim_threshold_pct)) {
		zoned_free(z);
		return -ENOMEM;
	}
	/* Full barrier (release included): the flushers read ctx->zoned
	 * without a lock. */
	if (!AO_compare_and_swap_full(zoned_slot(ctx), 0,
				      (AO_t)(uintptr_t)z)) {
		zoned_free(z);
		return -EALREADY;
	}
	return 0;
}

void srsv__zoned_ctx_destroy(struct srsv_ctx *ctx)
{
	struct srsv__zoned *z = zoned_of(ctx);

	/* The zones are freed with the group table (bgroup.c), after. */
	if (!z)
		return;
	zoned_free(z);
	AO_store(zoned_slot(ctx), 0);
}

SRSV__EXPORT const char *srsv_zone_kind_name(int kind)
{
	if (kind < 0 || kind >= SRSV_ZONE_KIND_COUNT)
		return "unknown";
	return kinds[kind].name;
}

/* ---- groups ---- */

SRSV__EXPORT int srsv_zone_group_add(struct srsv_ctx *ctx,
				     enum srsv_zone_kind kind, uint64_t start,
				     uint64_t length, uint64_t capacity,
				     struct srsv_zone_group **out)
{
	struct srsv__zoned *z = zoned_of(ctx);
	struct srsv_zone_group *g;
	struct srsv_space *s;
	int ret;

	if (!z || (unsigned)kind >= SRSV_ZONE_KIND_COUNT)
		return -EINVAL;
	if (!length || !capacity || capacity > length ||
	    length > SRSV_MAX_BYTES || start > UINT64_MAX - length)
		return -EINVAL;
	s = srsv__ctx_space(ctx, kinds[kind].pool);
	if (!s)
		return -EINVAL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->z = z;
	g->kind = kind;
	g->bg.start = start;
	g->bg.length = length;
	g->bg.capacity = capacity;
	g->bg.space = s;
	g->bg.flavour = &z->flavour;
	srsv__list_init(&g->active_node);
	/* One table for chunks and zones: an overlap with either is
	 * refused there, and the pool grows under its lock. */
	ret = srsv__bgroup_insert(ctx, &g->bg);
	if (ret) {
		free(g);
		return ret;
	}
	AO_fetch_and_add1(&z->nr_groups);
	if (out)
		*out = g;
	return 0;
}

SRSV__EXPORT int srsv_zone_group_activate(struct srsv_zone_group *g)
{
	struct srsv__zoned *z;
	unsigned left;
	int class, ret = 0;

	if (!g)
		return -EINVAL;
	z = g->z;
	class = kinds[g->kind].class;
	srsv__lock(&g->bg.lock);
	if (g->bg.busy)
		ret = -EBUSY;
	else if (srsv__bg_full(&g->bg))
		/* btrfs refuses to activate a full zone: reset it first. */
		ret = -ENOSPC;
	srsv__lock(&z->list_lock);
	if (!ret && !g->bg.active) {
		if (!may_take_token(z, class)) {
			ret = -EBUSY;
		} else {
			g->bg.active = true;
			g->bg.open = true;
			srsv__list_add_tail(&g->active_node, &z->active);
			z->open_count++;
			z->active_count++;
			z->active_by_class[class]++;
			z->active_by_kind[g->kind]++;
			if (kind_dedicated(g->kind) && !z->dedicated[g->kind])
				z->dedicated[g->kind] = g;
		}
	}
	left = tokens_left(z);
	srsv__unlock(&z->list_lock);
	srsv__unlock(&g->bg.lock);
	srsv__trace_zone_activate(g->bg.start, g->kind, ret, left);
	return ret;
}

/* Finish @g (btrfs_zone_finish()).  Group lock held. */
static int finish_locked(struct srsv__zoned *z, struct srsv_zone_group *g)
{
	uint64_t wasted;
	int ret;

	srsv__assert_held(&g->bg.lock);
	if (g->bg.busy)
		return -EBUSY;
	if (!g->bg.active)
		return -EALREADY;
	/* Unwritten allocations would be cut off by the new write pointer
	 * (btrfs waits for them; we let the caller retry). */
	if (srsv__ld(&g->bg.reserved))
		return -EBUSY;
	wasted = group_room(g);
	if (wasted) {
		srsv__lock(&g->bg.space->lock);
		ret = srsv__space_update(g->bg.space, SRSV__ZONE_UNUSABLE,
					 (int64_t)wasted);
		srsv__unlock(&g->bg.space->lock);
		if (ret)
			return ret;
		srsv__st(&g->bg.zone_unusable,
			 srsv__ld(&g->bg.zone_unusable) + wasted);
		/* Room 0 from here: a hint that still finds the group on
		 * the list skips it, an allocation fails. */
		srsv__st(&g->bg.alloc_offset, g->bg.capacity);
	}
	/* Finishing an empty or mostly freed group makes a candidate. */
	give_back_token(z, g, wasted);
	return 0;
}

SRSV__EXPORT int srsv_zone_group_finish(struct srsv_zone_group *g)
{
	int ret;

	if (!g)
		return -EINVAL;
	srsv__lock(&g->bg.lock);
	ret = finish_locked(g->z, g);
	srsv__unlock(&g->bg.lock);
	return ret;
}

/* The active data group finish-one should take, or NULL (@saw_busy: some
 * were skipped for outstanding allocations).  List lock held. */
static struct srsv_zone_group *cheapest_to_finish(struct srsv__zoned *z,
						  bool *saw_busy)
{
	struct srsv_zone_group *best = NULL;
	uint64_t best_room = UINT64_MAX;

	srsv__assert_held(&z->list_lock);
	*saw_busy = false;
	for (struct srsv__list *n = z->active.next; n != &z->active;
	     n = n->next) {
		struct srsv_zone_group *g = srsv__container_of(n,
				struct srsv_zone_group, active_node);
		uint64_t room = group_room(g);

		if (g->kind != SRSV_ZONE_DATA)
			continue;
		/* An empty group would waste a whole zone. */
		if (!srsv__ld(&g->bg.alloc_offset))
			continue;
		if (srsv__ld(&g->bg.reserved)) {
			*saw_busy = true;
			continue;
		}
		if (room < best_room) {
			best = g;
			best_room = room;
		}
	}
	return best;
}

SRSV__EXPORT int srsv_zoned_finish_one(struct srsv_ctx *ctx,
				       struct srsv_zone_group **finished)
{
	struct srsv__zoned *z = zoned_of(ctx);
	int ret = -ENOENT;

	if (!z)
		return -EINVAL;
	for (int tries = 0; tries < FINISH_ONE_TRIES; tries++) {
		struct srsv_zone_group *best;
		bool saw_busy;

		/* Choose under the list lock (a leaf: the group lock cannot
		 * be taken under it), finish under the group lock, where
		 * finish_locked() checks the choice again. */
		srsv__lock(&z->list_lock);
		best = cheapest_to_finish(z, &saw_busy);
		srsv__unlock(&z->list_lock);
		if (!best) {
			ret = saw_busy ? -EBUSY : -ENOENT;
			break;
		}
		srsv__lock(&best->bg.lock);
		ret = finish_locked(z, best);
		srsv__unlock(&best->bg.lock);
		if (!ret) {
			if (finished)
				*finished = best;
			break;
		}
		/* -EBUSY: a writer allocated in it since the choice;
		 * -EALREADY: another thread finished it, or its last write
		 * landed.  Either way choose again. */
		if (ret != -EBUSY && ret != -EALREADY)
			break;
		ret = -EBUSY;
	}
	return ret;
}

SRSV__EXPORT int srsv_zone_hint(struct srsv_ctx *ctx, enum srsv_zone_kind kind,
				uint64_t bytes, struct srsv_zone_group **out)
{
	struct srsv__zoned *z = zoned_of(ctx);
	struct srsv_zone_group *chosen = NULL;
	struct srsv_space *s;
	unsigned looked = 0;

	if (!z || !out || (unsigned)kind >= SRSV_ZONE_KIND_COUNT ||
	    bad_bytes(bytes))
		return -EINVAL;
	s = srsv__ctx_space(ctx, kinds[kind].pool);
	if (!s)
		return -EINVAL;

	srsv__lock(&z->list_lock);
	if (kind_dedicated(kind) && z->dedicated[kind]) {
		looked++;
		if (group_room(z->dedicated[kind]) >= bytes)
			chosen = z->dedicated[kind];
	}
	if (!chosen) {
		for (struct srsv__list *n = z->active.next; n != &z->active;
		     n = n->next) {
			struct srsv_zone_group *g = srsv__container_of(n,
					struct srsv_zone_group, active_node);

			looked++;
			/* The kind decides the pool.  No group lock: the
			 * room only shrinks while the group is on the list,
			 * and this is just a hint. */
			if (g->kind == (int)kind && group_room(g) >= bytes) {
				chosen = g;
				break;
			}
		}
		if (chosen && kind_dedicated(kind))
			z->dedicated[kind] = chosen;
	}
	z->hints++;
	z->hint_looked += looked;
	srsv__unlock(&z->list_lock);
	srsv__trace_zone_hint(kind, s->kind, bytes,
			      chosen ? chosen->bg.start : UINT64_MAX, looked);
	if (!chosen)
		return -ENOSPC;
	*out = chosen;
	return 0;
}

/* ---- the zone's halves of an allocation, through a group pointer ---- */

/* Count and trace a refused zone-group call on @g's pool (stats.c);
 * returns -EINVAL. */
static int zone_refused(struct srsv_zone_group *g, uint64_t bytes)
{
	return srsv__refused(g->bg.space, SRSV_REFUSED_ZONE, bytes);
}

SRSV__EXPORT int srsv_zone_group_alloc(struct srsv_zone_group *g,
				       uint64_t bytes, uint64_t *logical)
{
	uint64_t off;
	int ret;

	if (!g)
		return -EINVAL;
	if (bad_bytes(bytes))
		return zone_refused(g, bytes);
	/* Outstanding until written: a full zone keeps its token. */
	srsv__lock(&g->bg.lock);
	ret = srsv__bg_advance(&g->bg, bytes, false, &off);
	srsv__unlock(&g->bg.lock);
	if (!ret && logical)
		*logical = g->bg.start + off;
	return ret;
}

SRSV__EXPORT int srsv_zone_group_written(struct srsv_zone_group *g,
					 uint64_t bytes)
{
	uint64_t reserved;
	int ret = 0;

	if (!g)
		return -EINVAL;
	if (bad_bytes(bytes))
		return zone_refused(g, bytes);
	srsv__lock(&g->bg.lock);
	reserved = srsv__ld(&g->bg.reserved);
	if (reserved < bytes) {
		ret = -EINVAL;
	} else {
		srsv__st(&g->bg.used, srsv__ld(&g->bg.used) + bytes);
		srsv__st(&g->bg.reserved, reserved - bytes);
		/* The last write into a full zone landed. */
		if (reserved == bytes && srsv__bg_full(&g->bg))
			zone_filled(&g->bg);
	}
	srsv__unlock(&g->bg.lock);
	return ret ? zone_refused(g, bytes) : 0;
}

/* Bytes below the write pointer leave @from (reserved: abandoned; used:
 * freed) for zone_unusable, through bgroup.c's one free path. */
static int to_unusable(struct srsv_zone_group *g, enum srsv__counter from,
		       uint64_t bytes)
{
	int ret;

	if (!g)
		return -EINVAL;
	srsv__lock(&g->bg.lock);
	ret = srsv__bg_release(&g->bg, from, bytes, 0);
	if (!ret && from == SRSV__RESERVED && !srsv__ld(&g->bg.reserved) &&
	    srsv__bg_full(&g->bg))
		zone_filled(&g->bg);
	srsv__unlock(&g->bg.lock);
	return ret == -EINVAL ? zone_refused(g, bytes) : ret;
}

SRSV__EXPORT int srsv_zone_group_abandon(struct srsv_zone_group *g,
					 uint64_t bytes)
{
	return to_unusable(g, SRSV__RESERVED, bytes);
}

SRSV__EXPORT int srsv_zone_group_free(struct srsv_zone_group *g,
				      uint64_t bytes)
{
	return to_unusable(g, SRSV__USED, bytes);
}

/* ---- queries ---- */

SRSV__EXPORT int srsv_zone_group_info_sized(struct srsv_zone_group *g,
					    struct srsv_zone_group_info *out,
					    size_t size)
{
	struct srsv_zone_group_info all = { 0 }, *info = &all;

	if (!g || !out ||
	    size < SRSV__OUT_MIN(struct srsv_zone_group_info, dedicated))
		return -EINVAL;
	srsv__lock(&g->bg.lock);
	info->start = g->bg.start;
	info->length = g->bg.length;
	info->capacity = g->bg.capacity;
	info->alloc_offset = srsv__ld(&g->bg.alloc_offset);
	info->used = srsv__ld(&g->bg.used);
	info->reserved = srsv__ld(&g->bg.reserved);
	info->zone_unusable = srsv__ld(&g->bg.zone_unusable);
	info->kind = g->kind;
	info->pool = g->bg.space->kind;
	info->active = g->bg.active;
	info->open = g->bg.open;
	info->busy = g->bg.busy;
	srsv__lock(&g->z->list_lock);
	info->dedicated = g->z->dedicated[g->kind] == g;
	srsv__unlock(&g->z->list_lock);
	srsv__unlock(&g->bg.lock);
	SRSV__OUT_COPY(out, all, size, size);
	return 0;
}

SRSV__EXPORT uint64_t srsv_zone_group_room(const struct srsv_zone_group *g)
{
	return group_room(g);
}

SRSV__EXPORT int srsv_zoned_get_info_sized(struct srsv_ctx *ctx,
					   struct srsv_zoned_info *out,
					   size_t size)
{
	struct srsv__zoned *z = zoned_of(ctx);
	struct srsv_zoned_info all, *info = &all;

	if (!z || !out ||
	    size < SRSV__OUT_MIN(struct srsv_zoned_info, flush_groups_looked))
		return -EINVAL;
	memset(info, 0, sizeof(*info));
	srsv__lock(&z->list_lock);
	info->max_active_zones = z->cfg.max_active_zones;
	info->active = z->active_count;
	for (int k = 0; k < SRSV_ZONE_KIND_COUNT; k++)
		info->active_by_kind[k] = z->active_by_kind[k];
	info->reserved_metadata_left = reserved_left(z, CLASS_METADATA);
	info->reserved_system_left = reserved_left(z, CLASS_SYSTEM);
	info->open = z->open_count;
	info->hints = z->hints;
	info->hint_groups_looked = z->hint_looked;
	srsv__unlock(&z->list_lock);
	info->nr_groups = srsv__ld(&z->nr_groups);
	/* Deprecated mirrors of the group table's one statistics block. */
	srsv__bg_zone_stats(ctx->bgroups, &info->resets, &info->relocations,
			    &info->flush_groups_looked);
	SRSV__OUT_COPY(out, all, size, size);
	return 0;
}

/* ---- RESET_ZONES and RECLAIM_ZONES ---- */

/* Call an engine zone callback with no lock held. */
static int call_zone_fn(struct srsv__zoned *z, srsv_zone_fn fn,
			struct srsv_zone_group *g)
{
	int ret;

	if (!fn)
		return 0;
	srsv__enter_callback();
	ret = fn(g, z->ctx->cfg.user);
	srsv__leave_callback();
	return ret;
}

/*
 * Reset a zone this thread claimed: the engine resets it on the device,
 * then bgroup.c gives its capacity back to the pool and grants the
 * tickets that now fit.  Returns the bytes given back; 0 (the engine or
 * the accounting refused) leaves it not busy and not queued: the caller
 * queues it again.
 */
static uint64_t reset_claimed(struct srsv__zoned *z, struct srsv_zone_group *g)
{
	int ret = call_zone_fn(z, z->cfg.zone_reset, g);
	uint64_t freed;

	srsv__lock(&g->bg.lock);
	if (ret) {
		g->bg.busy = false;
		freed = 0;
	} else {
		freed = srsv__bg_reset(&g->bg);
	}
	srsv__unlock(&g->bg.lock);
	return freed;
}

/* srsv__bg_queue() for a caller that holds no lock. */
static void requeue(struct srsv_zone_group *g)
{
	srsv__lock(&g->bg.lock);
	srsv__bg_queue(&g->bg);
	srsv__unlock(&g->bg.lock);
}

/* Enough given back?  A flush of 0 bytes names no target: the batch
 * alone bounds the pass. */
static bool enough(uint64_t freed, uint64_t wanted)
{
	return wanted && freed >= wanted;
}

/*
 * RESET_ZONES: reset fully unusable zones of @s from its unused list, in
 * the order they became so, until @wanted bytes are back or
 * SRSV_ZONED_RESET_BATCH were taken.
 */
static uint64_t reset_zones(struct srsv__zoned *z, struct srsv_space *s,
			    uint64_t wanted)
{
	struct srsv_zone_group *failed[SRSV_ZONED_RESET_BATCH];
	unsigned nr_failed = 0;
	uint64_t freed = 0;

	for (unsigned taken = 0; taken < SRSV_ZONED_RESET_BATCH &&
	     !enough(freed, wanted); taken++) {
		struct srsv__bg *bg = srsv__bg_pop_unused(s);
		struct srsv_zone_group *g;
		uint64_t got;
		bool claimed;

		if (!bg)
			break;
		g = zone_of(bg);
		srsv__lock(&bg->lock);
		claimed = srsv__bg_claim(bg, true);
		/* Stale (reset since it was queued) or another pass's:
		 * queue it again if it still is a candidate. */
		if (!claimed)
			srsv__bg_queue(bg);
		srsv__unlock(&bg->lock);
		if (!claimed)
			continue;
		got = reset_claimed(z, g);
		if (got)
			freed += got;
		else
			failed[nr_failed++] = g;
	}
	/* Queued again only now, so that this pass does not retry a zone
	 * the device just refused. */
	for (unsigned i = 0; i < nr_failed; i++)
		requeue(failed[i]);
	return freed;
}

/*
 * RECLAIM_ZONES: relocate the live data of at most
 * SRSV_ZONED_RECLAIM_BATCH sparse zones of @s, the least used first
 * (bgroup.c's one choice and claim), and reset those the relocation
 * emptied, until @wanted bytes are back.
 */
static uint64_t reclaim_zones(struct srsv__zoned *z, struct srsv_space *s,
			      uint64_t wanted)
{
	struct srsv__bg *batch[SRSV_ZONED_RECLAIM_BATCH];
	unsigned nr;
	uint64_t freed = 0;

	if (!z->cfg.zone_relocate)
		return 0;
	nr = srsv__bg_choose(s->ctx->bgroups, s, &z->flavour, batch,
			     SRSV_ZONED_RECLAIM_BATCH);
	for (unsigned i = 0; i < nr; i++) {
		struct srsv_zone_group *g = zone_of(batch[i]);
		uint64_t got = 0;
		bool claimed, emptied;
		int ret;

		srsv__lock(&g->bg.lock);
		claimed = !enough(freed, wanted) &&
			  srsv__bg_claim(&g->bg, false);
		srsv__unlock(&g->bg.lock);
		if (!claimed) {
			requeue(g);
			continue;
		}
		ret = call_zone_fn(z, z->cfg.zone_relocate, g);
		srsv__lock(&g->bg.lock);
		srsv__bg_reclaim_counted(&g->bg, ret);
		/* Emptied: reset it now (still busy), else let it go. */
		emptied = srsv__bg_resettable(&g->bg);
		if (!emptied) {
			g->bg.busy = false;
			srsv__bg_queue(&g->bg);
		}
		srsv__unlock(&g->bg.lock);
		if (emptied)
			got = reset_claimed(z, g);
		if (got)
			freed += got;
		else if (emptied)
			requeue(g);
	}
	return freed;
}

uint64_t srsv__zoned_flush(struct srsv_space *s, int state, uint64_t bytes)
{
	struct srsv__zoned *z = s ? zoned_of(s->ctx) : NULL;

	if (!z)
		return 0;
	if (state == SRSV_STATE_RESET_ZONES)
		return reset_zones(z, s, bytes);
	if (state == SRSV_STATE_RECLAIM_ZONES)
		return reclaim_zones(z, s, bytes);
	return 0;
}
