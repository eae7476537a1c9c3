/* SPDX-License-Identifier: MIT */
/*
 * Zoned devices: zone groups, the active-zone limit, the allocator hint,
 * and the RESET_ZONES / RECLAIM_ZONES flush states.
 *
 * HOW ZONED ALLOCATION WORKS
 *
 * A zone is written sequentially: a zone group (btrfs's zoned block group)
 * has a write pointer, alloc_offset, that only moves forward up to the
 * group's capacity.  Every allocation in a group is "the next bytes at the
 * write pointer"; bytes freed below it cannot be reused and become
 * zone_unusable until the whole group is reset.  For the pools this means
 * one more way for space to be claimed but not usable, which the core
 * already counts (srsv_space::counters[SRSV__ZONE_UNUSABLE], part of
 * "claimed"); this file keeps that counter in step with the groups.
 *
 * Devices limit how many zones may be open for writing at once (ZNS
 * max_active_zones).  A group takes an active-zone token when it is
 * activated and returns it when it is finished or when its last write
 * lands after the write pointer reached the capacity.  Tokens are held
 * back for metadata and system groups (btrfs's reserved_active_zones: one
 * metadata and one tree-log group, and one system group, doubled for DUP),
 * so that a data writer opening zone after zone cannot leave the engine
 * unable to write the metadata that describes its data.
 *
 * THE HINT (upstream 02444f2ac26e "btrfs: zoned: optimize hint
 * byte for zoned allocator")
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
 * RESET AND RECLAIM CANDIDATES
 *
 * The same lesson applies to the flush states: nothing may walk every
 * group of the device while the allocator waits.  Like btrfs's unused_bgs
 * and reclaim_bgs, a group is put on a per-pool candidate list at the
 * moment it becomes one: on the "unused" list when its last live byte is
 * freed (fully zone_unusable, inactive: RESET_ZONES resets it), on the
 * "reclaim" list when its freed bytes reach the reclaim threshold
 * (RECLAIM_ZONES relocates its live rest).  The transitions that can make
 * a group a candidate are free, abandon, finish and the return of its
 * token, all under the group lock.  A pass takes candidates off a list and
 * re-checks each under its group lock, so a stale entry (a group reset or
 * reused since it was queued) costs one look and is dropped.  A candidate
 * a pass takes but does not finish with is queued again at the end.
 *
 * Each pass is bounded (DESIGN: every flush pass is bounded): RESET_ZONES
 * resets at most SRSV_ZONED_RESET_BATCH groups and RECLAIM_ZONES relocates
 * at most SRSV_ZONED_RECLAIM_BATCH, and both stop as soon as the bytes
 * given back reach what the flush asked for.  RESET_ZONES runs in the
 * priority (FLUSH_LIMIT) walk, i.e. in a caller that may hold a
 * transaction: one device command per reset, and no more than the waiters
 * need.
 *
 * ONE MODEL WITH THE CHUNKS
 *
 * A zone group is a block group (struct srsv__bg, bgroup.h) that carries
 * zoned state: the block group is embedded in it, and lives in the ctx's
 * one group table beside the conventional chunks.  What is common is kept
 * once, in bgroup.c: the table, the lookup, the overlap check (a zone over
 * a chunk or a chunk over a zone is refused), pool growth, the used and
 * pinned bytes.  What is truly zoned is here: activation and the active
 * list, the hint, the write pointer, finish, reset and the zoned
 * candidates.  The block-group calls reach a zone through the
 * srsv__zone_bg_*() functions below, with btrfs's zoned meaning: alloc at
 * the write pointer only; freed bytes below it become zone_unusable (at
 * once, or at the commit of their transaction, __btrfs_add_free_space_zoned());
 * an emptied zone is reset in place by RESET_ZONES, as
 * btrfs_reset_unused_block_groups() does, never returned to unallocated
 * (zones are registered by the engine, not drawn from unallocated space).
 *
 * LOCKING
 *
 * Five locks, in this order where they nest:
 *
 *   table lock  ->  group lock  ->  pool lock
 *   table lock  ->  pool lock          (registration)
 *   group lock  ->  list lock          (leaf)
 *   group lock  ->  reclaim lock       (leaf)
 *
 * - The table lock is the ctx's block-group table lock (bgroup.c).  It
 *   protects the sorted table of chunks and zones that registration checks
 *   for overlaps; the block-group calls take it, then a zone's group lock.
 *   The zoned allocation path (hint, activate, alloc, written, free,
 *   abandon, finish) and the RESET_ZONES / RECLAIM_ZONES passes never take
 *   it, so a commit walking the table does not stall a zone writer.
 *   nr_groups (zone groups) is an AO_t for readers.
 * - The list lock (z->list_lock) protects the active list, the token
 *   counts, the dedicated groups and the hint statistics.  It is a leaf:
 *   no thread holding it ever waits for another lock, so the hint, which
 *   takes nothing else, never waits behind a group lock, a pool lock or an
 *   engine callback (btrfs's zone_active_bgs_lock is a spinlock for the
 *   same reason).  srsv_zoned_finish_one() chooses under it and finishes
 *   under the group lock, re-checking the choice.
 * - The reclaim lock (z->reclaim_lock) protects the candidate lists; a
 *   leaf too, held for O(1) work (RECLAIM_ZONES takes its list private to
 *   walk it, see reclaim_zones()).
 * - A group's lock protects its counters and flags.  The flags "active"
 *   and "open" (on the active list) are written with both the group and
 *   the list lock held, so either lock is enough to read them.
 *   alloc_offset and the group counters are AO_t words written under the
 *   group lock, so the hint and finish-one's choice may read them without.
 * - The pool lock is the core's srsv_space::lock, taken through
 *   srsv__space_update(); the core never calls into this file with it held.
 *
 * Engine callbacks (zone_reset, zone_relocate) run with no lock held; the
 * group is marked busy meanwhile so that no one activates it and no other
 * flusher picks it.
 *
 * Zone groups are never removed before the ctx is destroyed (the group
 * table frees them, after this file's state), so a pointer to a group
 * stays valid.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "bgroup.h"
#include "counters.h"
#include "gate.h"
#include "stats.h"
#include "tickets.h"
#include "trace.h"
#include "zoned.h"

/* Token classes: who may take which active-zone tokens. */
enum zone_class {
	CLASS_DATA = 0,		/* data, data-reloc: unreserved tokens only */
	CLASS_METADATA = 1,	/* metadata, tree-log */
	CLASS_SYSTEM = 2,	/* system */
	CLASS_COUNT = 3
};

static const int kind_pool[SRSV_ZONE_KIND_COUNT] = {
	[SRSV_ZONE_DATA] = SRSV_POOL_DATA,
	[SRSV_ZONE_METADATA] = SRSV_POOL_METADATA,
	[SRSV_ZONE_SYSTEM] = SRSV_POOL_SYSTEM,
	[SRSV_ZONE_DATA_RELOC] = SRSV_POOL_DATA,
	[SRSV_ZONE_TREELOG] = SRSV_POOL_METADATA,
};

static const int kind_class[SRSV_ZONE_KIND_COUNT] = {
	[SRSV_ZONE_DATA] = CLASS_DATA,
	[SRSV_ZONE_METADATA] = CLASS_METADATA,
	[SRSV_ZONE_SYSTEM] = CLASS_SYSTEM,
	[SRSV_ZONE_DATA_RELOC] = CLASS_DATA,
	[SRSV_ZONE_TREELOG] = CLASS_METADATA,
};

static const char *const kind_names[SRSV_ZONE_KIND_COUNT] = {
	[SRSV_ZONE_DATA] = "data",
	[SRSV_ZONE_METADATA] = "metadata",
	[SRSV_ZONE_SYSTEM] = "system",
	[SRSV_ZONE_DATA_RELOC] = "data-reloc",
	[SRSV_ZONE_TREELOG] = "treelog",
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
	/*
	 * The block group this zone group is: its range, pool, used and
	 * pinned bytes, in the ctx's one group table (bgroup.h).  bg.used
	 * and bg.pinned of a zone group are written under lock (below).
	 */
	struct srsv__bg bg;

	/* Immutable after srsv_zone_group_add(). */
	struct srsv__zoned *z;
	uint64_t capacity;
	int kind;

	/* Protected by z->list_lock. */
	struct srsv__list active_node;		/* on z->active while open */

	/* Protected by z->reclaim_lock. */
	struct srsv__list unused_node;		/* on z->unused[pool] */
	struct srsv__list reclaim_node;		/* on z->reclaim[pool], or
						   on a pass's private list */
	bool on_unused, on_reclaim;

	/* Written with lock and z->list_lock held; read under either. */
	bool active;		/* holds a token */
	bool open;		/* on the active list: active, not full */

	struct srsv__lock lock;
	/* Written under lock; readable lock-free (hint, pre-checks). */
	volatile AO_t alloc_offset;	/* write pointer, relative to start */
	volatile AO_t reserved;		/* allocated, not yet written */
	volatile AO_t zone_unusable;	/* freed below wp + length - capacity */
	/* Protected by lock. */
	bool busy;		/* a flusher resets or relocates it */
};

struct srsv__zoned {
	struct srsv_ctx *ctx;
	struct srsv_zoned_config cfg;		/* immutable */

	/* Zone groups registered (they live in the ctx's group table,
	 * bgroup.c). */
	volatile AO_t nr_groups;

	struct srsv__lock list_lock;		/* leaf */
	/* Protected by list_lock. */
	struct srsv__list active;	/* open groups, activation order */
	unsigned active_count;
	unsigned active_by_class[CLASS_COUNT];
	unsigned active_by_kind[SRSV_ZONE_KIND_COUNT];
	unsigned open_count;
	struct srsv_zone_group *dedicated[SRSV_ZONE_KIND_COUNT];
	uint64_t hints, hint_looked;

	struct srsv__lock reclaim_lock;		/* leaf */
	/* Protected by reclaim_lock: candidates per pool, queue order. */
	struct srsv__list unused[SRSV_POOL_COUNT];
	struct srsv__list reclaim[SRSV_POOL_COUNT];
	uint64_t flush_looked;

	/* Statistics, lock-free. */
	volatile AO_t resets, relocations;
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

static bool bad_bytes(uint64_t bytes)
{
	return bytes == 0 || bytes > SRSV_MAX_BYTES;
}

static uint64_t group_room(const struct srsv_zone_group *g)
{
	return g->capacity - srsv__ld(&g->alloc_offset);
}

/* The unwritable tail: zone_unusable of a group that nothing freed yet. */
static uint64_t group_tail(const struct srsv_zone_group *g)
{
	return g->bg.length - g->capacity;
}

static bool group_full(const struct srsv_zone_group *g)
{
	return srsv__ld(&g->alloc_offset) == g->capacity;
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
	srsv__assert_held(&g->lock);
	srsv__assert_held(&z->list_lock);
	if (!g->open)
		return;
	srsv__list_del_init(&g->active_node);
	g->open = false;
	z->open_count--;
	if (z->dedicated[g->kind] == g)
		z->dedicated[g->kind] = NULL;
}

/* Close @g (if it is not yet) and give back its token.  Group lock held,
 * not the list lock. */
static void give_back_token(struct srsv__zoned *z, struct srsv_zone_group *g,
			    uint64_t wasted)
{
	srsv__assert_held(&g->lock);
	srsv__lock(&z->list_lock);
	close_locked(z, g);
	g->active = false;
	z->active_count--;
	z->active_by_class[kind_class[g->kind]]--;
	z->active_by_kind[g->kind]--;
	srsv__unlock(&z->list_lock);
	srsv__trace_zone_finish(g->bg.start, g->kind, wasted);
}

/* Every byte freed, nothing outstanding: the zone can be reset.  Group
 * lock held. */
static bool resettable(const struct srsv__zoned *z, struct srsv_zone_group *g)
{
	(void)z;
	srsv__assert_held(&g->lock);
	return !g->active && !srsv__ld(&g->bg.used) &&
	       !srsv__ld(&g->reserved) && !srsv__bg_pinned(&g->bg) &&
	       srsv__ld(&g->zone_unusable) == g->bg.length;
}

/* Relocating the live rest pays off: a finished group whose freed bytes
 * reach the threshold share of its capacity.  Group lock held. */
static bool sparse(const struct srsv__zoned *z, struct srsv_zone_group *g)
{
	uint64_t freed = srsv__ld(&g->zone_unusable) - group_tail(g);

	srsv__assert_held(&g->lock);
	return !g->active && group_full(g) && !srsv__ld(&g->reserved) &&
	       srsv__ld(&g->bg.used) &&
	       freed >= srsv__mult_perc(g->capacity,
					z->cfg.reclaim_threshold_pct);
}

/*
 * Put @g on the candidate list it now belongs to, if it is not there yet.
 * Called under the group lock by every transition that can make a group a
 * candidate, and by passes for groups they took but did not finish with.
 * A busy group is skipped: its flusher calls this when it lets go.
 */
static void queue_candidate(struct srsv__zoned *z, struct srsv_zone_group *g)
{
	int pool = g->bg.space->kind;
	bool unused, reclaim;

	srsv__assert_held(&g->lock);
	if (g->busy)
		return;
	unused = resettable(z, g);
	/* Without a relocate callback RECLAIM_ZONES does nothing: do not
	 * queue what no pass would ever take. */
	reclaim = !unused && z->cfg.zone_relocate && sparse(z, g);
	if (!unused && !reclaim)
		return;
	srsv__lock(&z->reclaim_lock);
	/* A group on the reclaim list that became resettable stays there
	 * too (the list may be a pass's private one just now); the reclaim
	 * pass drops it when it finds it no longer sparse. */
	if (unused && !g->on_unused) {
		srsv__list_add_tail(&g->unused_node, &z->unused[pool]);
		g->on_unused = true;
	}
	if (reclaim && !g->on_reclaim) {
		srsv__list_add_tail(&g->reclaim_node, &z->reclaim[pool]);
		g->on_reclaim = true;
	}
	srsv__unlock(&z->reclaim_lock);
}

/* queue_candidate() for a caller that holds no lock. */
static void requeue(struct srsv__zoned *z, struct srsv_zone_group *g)
{
	srsv__lock(&g->lock);
	queue_candidate(z, g);
	srsv__unlock(&g->lock);
}

/* Move every entry of @from to the front of @to; @from becomes empty. */
static void list_splice_front(struct srsv__list *from, struct srsv__list *to)
{
	if (srsv__list_empty(from))
		return;
	from->next->prev = to;
	from->prev->next = to->next;
	to->next->prev = from->prev;
	to->next = from->next;
	srsv__list_init(from);
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
	/* btrfs's default bg_reclaim_threshold. */
	cfg->reclaim_threshold_pct = 75;
	return 0;
}

/* A caller built against a newer header may pass a larger struct: fine as
 * long as every field this library does not know is zero. */
static bool tail_is_zero(const struct srsv_zoned_config *cfg)
{
	const unsigned char *p = (const unsigned char *)cfg;

	for (size_t i = sizeof(*cfg); i < cfg->size; i++)
		if (p[i])
			return false;
	return true;
}

static void zoned_free(struct srsv__zoned *z)
{
	srsv__lock_destroy(&z->reclaim_lock);
	srsv__lock_destroy(&z->list_lock);
	free(z);
}

SRSV__EXPORT int srsv_zoned_init(struct srsv_ctx *ctx,
				 const struct srsv_zoned_config *cfg)
{
	struct srsv__zoned *z;
	uint64_t reserved;
	int ret;

	if (!ctx || !cfg || cfg->size < sizeof(*cfg) || !tail_is_zero(cfg))
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
	if (ret)
		goto fail_list;
	ret = srsv__lock_init(&z->reclaim_lock);
	if (ret)
		goto fail_reclaim;
	z->ctx = ctx;
	z->cfg = *cfg;
	z->cfg.size = sizeof(z->cfg);
	srsv__list_init(&z->active);
	for (int p = 0; p < SRSV_POOL_COUNT; p++) {
		srsv__list_init(&z->unused[p]);
		srsv__list_init(&z->reclaim[p]);
	}

	/* The zone groups go into the ctx's group table: created last, so
	 * that a failure above leaves nothing behind. */
	if (!srsv__bgroups_table(ctx)) {
		ret = -ENOMEM;
		goto fail_table;
	}
	/* Full barrier (release included): the flushers read ctx->zoned
	 * without a lock. */
	if (!AO_compare_and_swap_full(zoned_slot(ctx), 0,
				      (AO_t)(uintptr_t)z)) {
		zoned_free(z);
		return -EALREADY;
	}
	return 0;

fail_table:
	srsv__lock_destroy(&z->reclaim_lock);
fail_reclaim:
	srsv__lock_destroy(&z->list_lock);
fail_list:
	free(z);
	return ret;
}

void srsv__zoned_ctx_destroy(struct srsv_ctx *ctx)
{
	struct srsv__zoned *z = zoned_of(ctx);

	/* The groups are freed with the group table (bgroup.c), after. */
	if (!z)
		return;
	zoned_free(z);
	AO_store(zoned_slot(ctx), 0);
}

SRSV__EXPORT const char *srsv_zone_kind_name(int kind)
{
	if (kind < 0 || kind >= SRSV_ZONE_KIND_COUNT)
		return "unknown";
	return kind_names[kind];
}

/* ---- groups ---- */

void srsv__zone_group_destroy(struct srsv_zone_group *g)
{
	srsv__lock_destroy(&g->lock);
	free(g);
}

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
	s = srsv__ctx_space(ctx, kind_pool[kind]);
	if (!s)
		return -EINVAL;

	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	ret = srsv__lock_init(&g->lock);
	if (ret) {
		free(g);
		return ret;
	}
	g->z = z;
	g->bg.space = s;
	g->bg.start = start;
	g->bg.length = length;
	g->bg.zone = g;
	g->capacity = capacity;
	g->kind = kind;
	srsv__list_init(&g->active_node);
	srsv__list_init(&g->unused_node);
	srsv__list_init(&g->reclaim_node);
	srsv__st(&g->zone_unusable, length - capacity);

	/* One table for chunks and zones: an overlap with either is
	 * refused there, and the pool grows under its lock. */
	ret = srsv__bgroup_insert(ctx, &g->bg, length - capacity);
	if (ret) {
		srsv__zone_group_destroy(g);
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
	class = kind_class[g->kind];
	srsv__lock(&g->lock);
	if (g->busy)
		ret = -EBUSY;
	else if (group_full(g))
		/* btrfs refuses to activate a full zone: reset it first. */
		ret = -ENOSPC;
	srsv__lock(&z->list_lock);
	if (!ret && !g->active) {
		if (!may_take_token(z, class)) {
			ret = -EBUSY;
		} else {
			g->active = true;
			g->open = true;
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
	srsv__unlock(&g->lock);
	srsv__trace_zone_activate(g->bg.start, g->kind, ret, left);
	return ret;
}

/* Finish @g.  Group lock held (not the list lock). */
static int finish_locked(struct srsv__zoned *z, struct srsv_zone_group *g)
{
	uint64_t wasted;
	int ret;

	srsv__assert_held(&g->lock);
	if (g->busy)
		return -EBUSY;
	if (!g->active)
		return -EALREADY;
	/* Unwritten allocations would be cut off by the new write pointer
	 * (btrfs waits for them; we let the caller retry). */
	if (srsv__ld(&g->reserved))
		return -EBUSY;
	wasted = group_room(g);
	if (wasted) {
		srsv__lock(&g->bg.space->lock);
		ret = srsv__space_update(g->bg.space, SRSV__ZONE_UNUSABLE,
					 (int64_t)wasted);
		srsv__unlock(&g->bg.space->lock);
		if (ret)
			return ret;
		srsv__st(&g->zone_unusable,
			 srsv__ld(&g->zone_unusable) + wasted);
		/* Room 0 from here: a hint that still finds the group on
		 * the list skips it, an allocation fails. */
		srsv__st(&g->alloc_offset, g->capacity);
	}
	give_back_token(z, g, wasted);
	/* Finishing an empty or mostly freed group makes a candidate. */
	queue_candidate(z, g);
	return 0;
}

SRSV__EXPORT int srsv_zone_group_finish(struct srsv_zone_group *g)
{
	int ret;

	if (!g)
		return -EINVAL;
	srsv__lock(&g->lock);
	ret = finish_locked(g->z, g);
	srsv__unlock(&g->lock);
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
		if (!srsv__ld(&g->alloc_offset))
			continue;
		if (srsv__ld(&g->reserved)) {
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
		srsv__lock(&best->lock);
		ret = finish_locked(z, best);
		srsv__unlock(&best->lock);
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
	s = srsv__ctx_space(ctx, kind_pool[kind]);
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
	int ret = 0;

	if (!g)
		return -EINVAL;
	if (bad_bytes(bytes))
		return zone_refused(g, bytes);
	srsv__lock(&g->lock);
	off = srsv__ld(&g->alloc_offset);
	if (!g->open || g->capacity - off < bytes) {
		ret = -ENOSPC;
	} else {
		srsv__st(&g->alloc_offset, off + bytes);
		srsv__st(&g->reserved, srsv__ld(&g->reserved) + bytes);
		if (logical)
			*logical = g->bg.start + off;
		/* Full: off the list at once, so that the hint never sees
		 * it.  The token stays until the last write lands. */
		if (off + bytes == g->capacity) {
			srsv__lock(&g->z->list_lock);
			close_locked(g->z, g);
			srsv__unlock(&g->z->list_lock);
		}
	}
	srsv__unlock(&g->lock);
	return ret;
}

SRSV__EXPORT int srsv_zone_group_written(struct srsv_zone_group *g,
					 uint64_t bytes)
{
	uint64_t reserved;

	if (!g)
		return -EINVAL;
	if (bad_bytes(bytes))
		return zone_refused(g, bytes);
	srsv__lock(&g->lock);
	reserved = srsv__ld(&g->reserved);
	if (reserved < bytes) {
		srsv__unlock(&g->lock);
		return zone_refused(g, bytes);
	}
	srsv__st(&g->bg.used, srsv__ld(&g->bg.used) + bytes);
	srsv__st(&g->reserved, reserved - bytes);
	/* The last write into a full zone landed: it is no longer active
	 * on the device (btrfs_zone_finish_endio()). */
	if (reserved == bytes && g->active && group_full(g)) {
		give_back_token(g->z, g, 0);
		queue_candidate(g->z, g);
	}
	srsv__unlock(&g->lock);
	return 0;
}

/*
 * Bytes below the write pointer leave @from (the group's used or reserved
 * and the pool's counter @pool_from) for zone_unusable in both.
 */
static int to_unusable(struct srsv_zone_group *g, volatile AO_t *from,
		       enum srsv__counter pool_from, uint64_t bytes)
{
	uint64_t have;
	int ret;

	if (bad_bytes(bytes))
		return -EINVAL;
	srsv__lock(&g->lock);
	have = srsv__ld(from);
	if (have < bytes) {
		srsv__unlock(&g->lock);
		return -EINVAL;
	}
	srsv__lock(&g->bg.space->lock);
	ret = srsv__space_move(g->bg.space, pool_from, SRSV__ZONE_UNUSABLE,
			       bytes);
	srsv__unlock(&g->bg.space->lock);
	if (ret) {
		srsv__unlock(&g->lock);
		return ret;
	}
	srsv__st(&g->zone_unusable, srsv__ld(&g->zone_unusable) + bytes);
	srsv__st(from, have - bytes);
	if (from == &g->reserved && have == bytes && g->active &&
	    group_full(g))
		give_back_token(g->z, g, 0);
	queue_candidate(g->z, g);
	srsv__unlock(&g->lock);
	return 0;
}

SRSV__EXPORT int srsv_zone_group_abandon(struct srsv_zone_group *g,
					 uint64_t bytes)
{
	int ret;

	if (!g)
		return -EINVAL;
	ret = to_unusable(g, &g->reserved, SRSV__RESERVED, bytes);
	return ret == -EINVAL ? zone_refused(g, bytes) : ret;
}

SRSV__EXPORT int srsv_zone_group_free(struct srsv_zone_group *g,
				      uint64_t bytes)
{
	int ret;

	if (!g)
		return -EINVAL;
	ret = to_unusable(g, &g->bg.used, SRSV__USED, bytes);
	return ret == -EINVAL ? zone_refused(g, bytes) : ret;
}

/* ---- the block-group calls on a zone group (bgroup.c, table lock held) ---- */

int srsv__zone_bg_alloc(struct srsv_zone_group *g, uint64_t bytenr,
			uint64_t bytes)
{
	uint64_t off;
	int ret = 0;

	srsv__lock(&g->lock);
	off = srsv__ld(&g->alloc_offset);
	/* A zone is written at its write pointer and nowhere else. */
	if (bytenr != g->bg.start + off) {
		ret = -EINVAL;
	} else if (!g->open || g->capacity - off < bytes) {
		ret = -ENOSPC;
	} else {
		/* srsv_zone_group_alloc() and _written() in one: the engine
		 * reports an extent it placed and referenced. */
		srsv__st(&g->alloc_offset, off + bytes);
		srsv__st(&g->bg.used, srsv__ld(&g->bg.used) + bytes);
		if (off + bytes == g->capacity) {
			srsv__lock(&g->z->list_lock);
			close_locked(g->z, g);
			srsv__unlock(&g->z->list_lock);
			if (g->active && !srsv__ld(&g->reserved)) {
				give_back_token(g->z, g, 0);
				queue_candidate(g->z, g);
			}
		}
	}
	srsv__unlock(&g->lock);
	return ret;
}

int srsv__zone_bg_free(struct srsv_zone_group *g, uint64_t bytes,
		       uint64_t transid)
{
	unsigned b = transid & 1;
	uint64_t used;

	/* Freed now: below the write pointer, zone_unusable at once. */
	if (!transid)
		return to_unusable(g, &g->bg.used, SRSV__USED, bytes);
	/* Freed in transaction @transid: still referenced by the last
	 * committed state, so the pool keeps them as used (the engine does
	 * not pin them) until the commit moves them to zone_unusable. */
	srsv__lock(&g->lock);
	used = srsv__ld(&g->bg.used);
	if (used < bytes) {
		srsv__unlock(&g->lock);
		return -EINVAL;
	}
	srsv__st(&g->bg.used, used - bytes);
	g->bg.pinned[b] += bytes;
	g->bg.pinned_trans[b] = transid;
	srsv__unlock(&g->lock);
	return 0;
}

void srsv__zone_bg_commit(struct srsv_zone_group *g, uint64_t transid)
{
	uint64_t freed = 0;
	bool done[2] = { false, false };

	srsv__lock(&g->lock);
	for (int b = 0; b < 2; b++) {
		if (g->bg.pinned[b] && g->bg.pinned_trans[b] <= transid) {
			freed += g->bg.pinned[b];
			done[b] = true;
		}
	}
	if (freed) {
		int ret;

		/* Zone_unusable grows before used drops (the move adds
		 * first): a lock-free reader never sees them free. */
		srsv__lock(&g->bg.space->lock);
		ret = srsv__space_move(g->bg.space, SRSV__USED,
				       SRSV__ZONE_UNUSABLE, freed);
		srsv__unlock(&g->bg.space->lock);
		/* Refused only if the pool lost used bytes behind our back:
		 * keep them pinned rather than lose them. */
		if (!ret) {
			srsv__st(&g->zone_unusable,
				 srsv__ld(&g->zone_unusable) + freed);
			for (int b = 0; b < 2; b++)
				if (done[b])
					g->bg.pinned[b] = 0;
			/* Emptied: RESET_ZONES resets it; sparse: a
			 * RECLAIM_ZONES candidate. */
			queue_candidate(g->z, g);
		}
	}
	srsv__unlock(&g->lock);
}

void srsv__zone_bg_info(struct srsv_zone_group *g,
			struct srsv_bgroup_info *info)
{
	struct srsv__zoned *z = g->z;

	memset(info, 0, sizeof(*info));
	srsv__lock(&g->lock);
	info->start = g->bg.start;
	info->length = g->bg.length;
	info->used = srsv__ld(&g->bg.used);
	info->pinned = srsv__bg_pinned(&g->bg);
	info->pool = g->bg.space->kind;
	/* Zoned meaning: empty (every byte zone_unusable), to be reset by
	 * RESET_ZONES; a candidate of RECLAIM_ZONES. */
	info->unused = resettable(z, g);
	srsv__lock(&z->reclaim_lock);
	info->candidate = g->on_reclaim;
	srsv__unlock(&z->reclaim_lock);
	srsv__unlock(&g->lock);
}

SRSV__EXPORT int srsv_zone_group_info_sized(struct srsv_zone_group *g,
					    struct srsv_zone_group_info *out,
					    size_t size)
{
	struct srsv_zone_group_info all = { 0 }, *info = &all;

	if (!g || !out ||
	    size < SRSV__OUT_MIN(struct srsv_zone_group_info, dedicated))
		return -EINVAL;
	srsv__lock(&g->lock);
	info->start = g->bg.start;
	info->length = g->bg.length;
	info->capacity = g->capacity;
	info->alloc_offset = srsv__ld(&g->alloc_offset);
	info->used = srsv__ld(&g->bg.used);
	info->reserved = srsv__ld(&g->reserved);
	info->zone_unusable = srsv__ld(&g->zone_unusable);
	info->kind = g->kind;
	info->pool = g->bg.space->kind;
	info->active = g->active;
	info->open = g->open;
	info->busy = g->busy;
	srsv__lock(&g->z->list_lock);
	info->dedicated = g->z->dedicated[g->kind] == g;
	srsv__unlock(&g->z->list_lock);
	srsv__unlock(&g->lock);
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
	srsv__lock(&z->reclaim_lock);
	info->flush_groups_looked = z->flush_looked;
	srsv__unlock(&z->reclaim_lock);
	info->nr_groups = srsv__ld(&z->nr_groups);
	info->resets = srsv__ld(&z->resets);
	info->relocations = srsv__ld(&z->relocations);
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

/* Mark @g busy if @pred still holds under its lock. */
static bool claim_if(struct srsv__zoned *z, struct srsv_zone_group *g,
		     bool (*pred)(const struct srsv__zoned *,
				  struct srsv_zone_group *))
{
	bool claimed = false;

	srsv__lock(&g->lock);
	if (!g->busy && pred(z, g)) {
		g->busy = true;
		claimed = true;
	}
	srsv__unlock(&g->lock);
	return claimed;
}

/*
 * Reset a group this thread marked busy: the engine resets the zone, then
 * the group is empty again and its capacity returns to the pool, which
 * grants the tickets that now fit.  Returns the bytes given back; 0 (the
 * engine or the accounting refused) leaves the group as it was, not busy
 * and not queued: the caller queues it again.
 */
static uint64_t reset_claimed(struct srsv__zoned *z, struct srsv_zone_group *g)
{
	struct srsv_space *s = g->bg.space;
	uint64_t freed = 0;
	int ret = call_zone_fn(z, z->cfg.zone_reset, g);

	srsv__lock(&g->lock);
	if (!ret && resettable(z, g)) {
		srsv__lock(&s->lock);
		ret = srsv__space_update(s, SRSV__ZONE_UNUSABLE,
					 -(int64_t)g->capacity);
		if (!ret) {
			srsv__st(&g->alloc_offset, 0);
			srsv__st(&g->zone_unusable, group_tail(g));
			freed = g->capacity;
			srsv__try_grant_tickets(s);
		}
		srsv__unlock(&s->lock);
	}
	g->busy = false;
	srsv__unlock(&g->lock);
	if (freed)
		AO_fetch_and_add1(&z->resets);
	return freed;
}

/* Enough given back?  A flush of 0 bytes names no target: the batch
 * alone bounds the pass. */
static bool enough(uint64_t freed, uint64_t wanted)
{
	return wanted && freed >= wanted;
}

/*
 * RESET_ZONES: reset fully unusable, unused groups of @s from its unused
 * list, in the order they became so, until @wanted bytes are back or
 * SRSV_ZONED_RESET_BATCH groups were taken.
 */
static uint64_t reset_zones(struct srsv__zoned *z, struct srsv_space *s,
			    uint64_t wanted)
{
	struct srsv_zone_group *failed[SRSV_ZONED_RESET_BATCH];
	struct srsv__list *head = &z->unused[s->kind];
	unsigned nr_failed = 0;
	uint64_t freed = 0;

	for (unsigned taken = 0; taken < SRSV_ZONED_RESET_BATCH &&
	     !enough(freed, wanted); taken++) {
		struct srsv_zone_group *g = NULL;
		uint64_t got;

		srsv__lock(&z->reclaim_lock);
		if (!srsv__list_empty(head)) {
			g = srsv__container_of(head->next,
					       struct srsv_zone_group,
					       unused_node);
			srsv__list_del_init(&g->unused_node);
			g->on_unused = false;
			z->flush_looked++;
		}
		srsv__unlock(&z->reclaim_lock);
		if (!g)
			break;
		/* Stale (reset since it was queued) or another flusher's:
		 * queue it again if it still is a candidate. */
		if (!claim_if(z, g, resettable)) {
			requeue(z, g);
			continue;
		}
		got = reset_claimed(z, g);
		if (got)
			freed += got;
		else
			failed[nr_failed++] = g;
	}
	/* Queued again only now, so that this pass does not retry a zone
	 * the device just refused. */
	for (unsigned i = 0; i < nr_failed; i++)
		requeue(z, failed[i]);
	return freed;
}

/*
 * Lock-free pre-check of sparse() for the choice: a group on the reclaim
 * list is finished (inactive, full, nothing outstanding), so only used
 * and zone_unusable move, and claim_if() decides under the lock.
 */
static bool looks_sparse(const struct srsv__zoned *z,
			 const struct srsv_zone_group *g)
{
	uint64_t freed = srsv__ld(&g->zone_unusable) - group_tail(g);

	return group_full(g) && !srsv__ld(&g->reserved) &&
	       srsv__ld(&g->bg.used) &&
	       freed >= srsv__mult_perc(g->capacity,
					z->cfg.reclaim_threshold_pct);
}

/*
 * RECLAIM_ZONES: relocate the live data of at most
 * SRSV_ZONED_RECLAIM_BATCH sparse groups of @s, the sparsest first (btrfs
 * sorts its reclaim list by used bytes: least to move, most to gain), and
 * reset those the relocation emptied, until @wanted bytes are back.
 *
 * The choice needs a look at every candidate.  So that the free path,
 * which queues candidates, never waits for that walk, the pass takes the
 * whole list private under the reclaim lock (O(1)), walks it with no lock
 * (nobody else touches an entry whose on_reclaim is set, and a concurrent
 * pass finds the shared list empty and does nothing), and gives back what
 * it did not choose, in front of what was queued meanwhile.  Entries that
 * are no longer sparse (emptied, or reset and reused) are dropped then.
 */
static uint64_t reclaim_zones(struct srsv__zoned *z, struct srsv_space *s,
			      uint64_t wanted)
{
	struct srsv_zone_group *batch[SRSV_ZONED_RECLAIM_BATCH];
	struct srsv__list mine, drop, *n, *next;
	unsigned nr = 0;
	uint64_t looked = 0, freed = 0;

	if (!z->cfg.zone_relocate)
		return 0;
	srsv__list_init(&mine);
	srsv__list_init(&drop);
	srsv__lock(&z->reclaim_lock);
	list_splice_front(&z->reclaim[s->kind], &mine);
	srsv__unlock(&z->reclaim_lock);

	for (n = mine.next; n != &mine; n = next) {
		struct srsv_zone_group *g = srsv__container_of(n,
				struct srsv_zone_group, reclaim_node);
		uint64_t used = srsv__ld(&g->bg.used);
		unsigned i;

		next = n->next;
		looked++;
		if (!looks_sparse(z, g)) {
			srsv__list_del_init(n);
			srsv__list_add_tail(n, &drop);
			continue;
		}
		if (nr == SRSV_ZONED_RECLAIM_BATCH &&
		    used >= srsv__ld(&batch[nr - 1]->bg.used))
			continue;
		/* Insertion into a batch kept sorted by used bytes (ties:
		 * queue order); a group pushed out of a full batch just
		 * stays on the private list. */
		if (nr < SRSV_ZONED_RECLAIM_BATCH)
			nr++;
		for (i = nr - 1;
		     i > 0 && srsv__ld(&batch[i - 1]->bg.used) > used; i--)
			batch[i] = batch[i - 1];
		batch[i] = g;
	}
	/* The chosen leave the list (unlinked before on_reclaim drops, so
	 * that no one relinks a node still being unlinked); the rest go
	 * back to the front. */
	for (unsigned i = 0; i < nr; i++)
		srsv__list_del_init(&batch[i]->reclaim_node);
	srsv__lock(&z->reclaim_lock);
	for (unsigned i = 0; i < nr; i++)
		batch[i]->on_reclaim = false;
	list_splice_front(&mine, &z->reclaim[s->kind]);
	z->flush_looked += looked;
	srsv__unlock(&z->reclaim_lock);
	/* Dropped entries: off the list under the group lock, so that the
	 * group is queued again at once if it is a candidate of any kind
	 * (queue_candidate() skipped it while on_reclaim was set). */
	while (!srsv__list_empty(&drop)) {
		struct srsv_zone_group *g = srsv__container_of(drop.next,
				struct srsv_zone_group, reclaim_node);

		srsv__list_del_init(&g->reclaim_node);
		srsv__lock(&g->lock);
		srsv__lock(&z->reclaim_lock);
		g->on_reclaim = false;
		srsv__unlock(&z->reclaim_lock);
		queue_candidate(z, g);
		srsv__unlock(&g->lock);
	}

	for (unsigned i = 0; i < nr; i++) {
		struct srsv_zone_group *g = batch[i];
		uint64_t got;
		bool emptied;

		if (enough(freed, wanted) || !claim_if(z, g, sparse)) {
			requeue(z, g);
			continue;
		}
		if (!call_zone_fn(z, z->cfg.zone_relocate, g))
			AO_fetch_and_add1(&z->relocations);
		/* Keep it busy if the relocation emptied it: reset it now. */
		srsv__lock(&g->lock);
		emptied = resettable(z, g);
		if (!emptied) {
			g->busy = false;
			queue_candidate(z, g);
		}
		srsv__unlock(&g->lock);
		if (!emptied)
			continue;
		got = reset_claimed(z, g);
		if (got)
			freed += got;
		else
			requeue(z, g);
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
