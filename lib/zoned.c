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
 * THE HINT (seed 004, upstream 02444f2ac26e "btrfs: zoned: optimize hint
 * byte for zoned allocator")
 *
 * The zoned extent allocator used to walk every block group of the pool
 * from the start, checking each for room.  On a large SMR disk that is tens
 * of thousands of groups, nearly all full, for every extent: a sequential
 * writer fell from 220 MiB/s to 30 MiB/s after 500 minutes.  The fix walks
 * the active list instead, which never holds a full group, and takes the
 * first group of the right kind with room.  The walk holds only the
 * active-list lock and reads each write pointer without the group lock:
 * while a group is on the list its room only shrinks, so a stale read can
 * only make the hint too optimistic, and the allocation itself checks again
 * under the group lock.  The data-relocation and tree-log kinds have a
 * dedicated group each (btrfs's data_reloc_bg and treelog_bg): relocated
 * extents and log writes stay sequential in their own zone.
 *
 * LOCKING
 *
 * Three levels, always taken in this order: the ctx's zoned lock (the
 * active list, the group table, token counts, dedicated groups), then one
 * group's lock (its counters and flags), then the pool lock (through the
 * core's srsv__space_update()).  The core never takes the first two.  The
 * flags "active" and "open" (on the active list) are written with both the
 * zoned and the group lock held, so either lock is enough to read them.
 * alloc_offset and the group counters are AO_t words written under the
 * group lock, so the hint and the flushers' pre-checks may read them
 * without it.  Engine callbacks (zone_reset, zone_relocate) run with no
 * lock held; the group is marked busy meanwhile so that no one activates
 * it and no other flusher picks it.
 *
 * Groups are never removed before the ctx is destroyed, so a pointer to a
 * group stays valid, and the per-pool group lists are append-only.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "trace.h"

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

/* Kinds with a dedicated group (btrfs's data_reloc_bg, treelog_bg). */
static bool kind_dedicated(int kind)
{
	return kind == SRSV_ZONE_DATA_RELOC || kind == SRSV_ZONE_TREELOG;
}

struct srsv_zone_group {
	/* Immutable after srsv_zone_group_add(). */
	struct srsv__zoned *z;
	struct srsv_space *space;
	uint64_t start, length, capacity;
	int kind;

	/* Protected by z->lock. */
	struct srsv__list active_node;		/* on z->active while open */
	struct srsv_zone_group *pool_next;	/* z->pool_head list */

	/* Written with z->lock and lock held; read under either. */
	bool active;		/* holds a token */
	bool open;		/* on the active list: active, not full */

	struct srsv__lock lock;
	/* Written under lock; readable lock-free (hint, pre-checks). */
	volatile AO_t alloc_offset;	/* write pointer, relative to start */
	volatile AO_t used;		/* written and referenced */
	volatile AO_t reserved;		/* allocated, not yet written */
	volatile AO_t zone_unusable;	/* freed below wp + length - capacity */
	/* Protected by lock. */
	bool busy;		/* a flusher resets or relocates it */
};

struct srsv__zoned {
	struct srsv_ctx *ctx;
	struct srsv_zoned_config cfg;

	struct srsv__lock lock;
	/* Everything below is protected by lock. */
	struct srsv__list active;	/* open groups, activation order */
	struct srsv_zone_group **groups; /* every group, sorted by start */
	size_t nr_groups, groups_alloc;
	/* Per pool, every group in registration order (append-only). */
	struct srsv_zone_group *pool_head[SRSV_POOL_COUNT];
	struct srsv_zone_group *pool_tail[SRSV_POOL_COUNT];
	unsigned active_count;
	unsigned active_by_class[CLASS_COUNT];
	unsigned active_by_kind[SRSV_ZONE_KIND_COUNT];
	unsigned open_count;
	struct srsv_zone_group *dedicated[SRSV_ZONE_KIND_COUNT];
	uint64_t hints, hint_looked;

	/* Statistics, lock-free. */
	volatile AO_t resets, relocations;
};

/* ---- helpers ---- */

static struct srsv__zoned *zoned_of(struct srsv_ctx *ctx)
{
	/* Pairs with the release CAS in srsv_zoned_init(). */
	return ctx ? __atomic_load_n(&ctx->zoned, __ATOMIC_ACQUIRE) : NULL;
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
	return g->length - g->capacity;
}

/* Tokens of @class still held back for it: reserved minus its active. */
static unsigned reserved_left(const struct srsv__zoned *z, int class)
{
	unsigned reserved = 0;

	if (class == CLASS_METADATA)
		reserved = z->cfg.reserved_metadata;
	else if (class == CLASS_SYSTEM)
		reserved = z->cfg.reserved_system;
	return reserved > z->active_by_class[class] ?
	       reserved - z->active_by_class[class] : 0;
}

/* Tokens not in use, UINT_MAX without a device limit (for the trace). */
static unsigned tokens_left(const struct srsv__zoned *z)
{
	if (!z->cfg.max_active_zones)
		return UINT32_MAX;
	return z->cfg.max_active_zones - z->active_count;
}

/* May a group of @class take a token?  Zoned lock held. */
static bool may_take_token(const struct srsv__zoned *z, int class)
{
	unsigned held_back = 0;

	srsv__assert_held(&((struct srsv__zoned *)z)->lock);
	if (!z->cfg.max_active_zones)
		return true;
	/* Every class may use the free tokens and its own reserved ones,
	 * never another class's. */
	for (int c = 0; c < CLASS_COUNT; c++)
		if (c != class)
			held_back += reserved_left(z, c);
	return tokens_left(z) > held_back;
}

/* Take @g off the active list.  Zoned and group locks held. */
static void close_locked(struct srsv__zoned *z, struct srsv_zone_group *g)
{
	srsv__assert_held(&z->lock);
	srsv__assert_held(&g->lock);
	if (!g->open)
		return;
	srsv__list_del_init(&g->active_node);
	g->open = false;
	z->open_count--;
	if (z->dedicated[g->kind] == g)
		z->dedicated[g->kind] = NULL;
}

/* Give back @g's token.  Zoned and group locks held; @g is closed. */
static void release_token_locked(struct srsv__zoned *z,
				 struct srsv_zone_group *g, uint64_t wasted)
{
	srsv__assert_held(&z->lock);
	srsv__assert_held(&g->lock);
	g->active = false;
	z->active_count--;
	z->active_by_class[kind_class[g->kind]]--;
	z->active_by_kind[g->kind]--;
	srsv__trace_zone_finish(g->start, g->kind, wasted);
}

/*
 * Bring the list and the token in line with the write pointer: a full
 * group leaves the list at once (the hint must never see it) and gives
 * its token back when its last allocation is written (the zone is then
 * full on the device, no longer active).  Zoned and group locks held.
 */
static void settle_locked(struct srsv__zoned *z, struct srsv_zone_group *g)
{
	bool full = srsv__ld(&g->alloc_offset) == g->capacity;

	if (!full)
		return;
	close_locked(z, g);
	if (g->active && !srsv__ld(&g->reserved))
		release_token_locked(z, g, 0);
}

/* settle_locked() from a caller that holds no lock. */
static void settle(struct srsv_zone_group *g)
{
	srsv__lock(&g->z->lock);
	srsv__lock(&g->lock);
	settle_locked(g->z, g);
	srsv__unlock(&g->lock);
	srsv__unlock(&g->z->lock);
}

/*
 * Move @bytes between two locked pool counters, adding before subtracting
 * so that a lock-free reader of "claimed" never sees them as free.  Pool
 * lock held.  -EINVAL and nothing changed if @from holds less.
 */
static int pool_move(struct srsv_space *s, enum srsv__counter from,
		     enum srsv__counter to, uint64_t bytes)
{
	int ret;

	srsv__assert_held(&s->lock);
	if (srsv__space_counter(s, from) < bytes)
		return -EINVAL;
	ret = srsv__space_update(s, to, (int64_t)bytes);
	if (ret)
		return ret;
	ret = srsv__space_update(s, from, -(int64_t)bytes);
	if (ret)
		srsv__space_update(s, to, -(int64_t)bytes);
	return ret;
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

SRSV__EXPORT int srsv_zoned_init(struct srsv_ctx *ctx,
				 const struct srsv_zoned_config *cfg)
{
	struct srsv__zoned *z, *expected = NULL;
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
	ret = srsv__lock_init(&z->lock);
	if (ret) {
		free(z);
		return ret;
	}
	z->ctx = ctx;
	z->cfg = *cfg;
	z->cfg.size = sizeof(z->cfg);
	srsv__list_init(&z->active);

	/* Release: the flushers read ctx->zoned without a lock. */
	if (!__atomic_compare_exchange_n(&ctx->zoned, &expected, z, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		srsv__lock_destroy(&z->lock);
		free(z);
		return -EALREADY;
	}
	return 0;
}

void srsv__zoned_ctx_destroy(struct srsv_ctx *ctx)
{
	struct srsv__zoned *z = ctx ? ctx->zoned : NULL;

	if (!z)
		return;
	for (size_t i = 0; i < z->nr_groups; i++) {
		srsv__lock_destroy(&z->groups[i]->lock);
		free(z->groups[i]);
	}
	free(z->groups);
	srsv__lock_destroy(&z->lock);
	free(z);
	ctx->zoned = NULL;
}

SRSV__EXPORT const char *srsv_zone_kind_name(int kind)
{
	if (kind < 0 || kind >= SRSV_ZONE_KIND_COUNT)
		return "unknown";
	return kind_names[kind];
}

/* ---- groups ---- */

/* Index of the first group whose start is >= @start.  Zoned lock held. */
static size_t lower_bound(const struct srsv__zoned *z, uint64_t start)
{
	size_t lo = 0, hi = z->nr_groups;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (z->groups[mid]->start < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Does [start, start + length) overlap a registered group?  The table is
 * sorted and never overlaps, so only the two neighbours can. */
static bool overlaps(const struct srsv__zoned *z, uint64_t start,
		     uint64_t length, size_t pos)
{
	if (pos < z->nr_groups && z->groups[pos]->start < start + length)
		return true;
	if (pos > 0) {
		const struct srsv_zone_group *prev = z->groups[pos - 1];

		if (prev->start + prev->length > start)
			return true;
	}
	return false;
}

/* Grow the pool by a new group.  Zoned lock held. */
static int pool_add_group(struct srsv_space *s, uint64_t length,
			  uint64_t tail)
{
	int ret = 0;

	srsv__lock(&s->lock);
	if (srsv__space_counter(s, SRSV__TOTAL) + length > SRSV_MAX_BYTES) {
		ret = -EINVAL;
		goto out;
	}
	/* The unwritable tail is claimed before the total grows, so a
	 * lock-free admission never sees it as free. */
	if (tail) {
		ret = srsv__space_update(s, SRSV__ZONE_UNUSABLE, (int64_t)tail);
		if (ret)
			goto out;
	}
	ret = srsv__space_update(s, SRSV__TOTAL, (int64_t)length);
	if (ret) {
		if (tail)
			srsv__space_update(s, SRSV__ZONE_UNUSABLE,
					   -(int64_t)tail);
		goto out;
	}
	/* New capacity: btrfs_add_bg_to_space_info() clears full. */
	srsv__st(&s->full, 0);
	srsv__try_grant_tickets(s);
out:
	srsv__unlock(&s->lock);
	return ret;
}

SRSV__EXPORT int srsv_zone_group_add(struct srsv_ctx *ctx,
				     enum srsv_zone_kind kind, uint64_t start,
				     uint64_t length, uint64_t capacity,
				     struct srsv_zone_group **out)
{
	struct srsv__zoned *z = zoned_of(ctx);
	struct srsv_zone_group *g;
	struct srsv_space *s;
	size_t pos;
	int pool, ret;

	if (!z || (unsigned)kind >= SRSV_ZONE_KIND_COUNT)
		return -EINVAL;
	if (!length || !capacity || capacity > length ||
	    length > SRSV_MAX_BYTES || start > UINT64_MAX - length)
		return -EINVAL;
	s = srsv_ctx_space(ctx, kind_pool[kind]);
	if (!s)
		return -EINVAL;
	pool = s->kind;

	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	ret = srsv__lock_init(&g->lock);
	if (ret) {
		free(g);
		return ret;
	}
	g->z = z;
	g->space = s;
	g->start = start;
	g->length = length;
	g->capacity = capacity;
	g->kind = kind;
	srsv__list_init(&g->active_node);
	srsv__st(&g->zone_unusable, length - capacity);

	srsv__lock(&z->lock);
	pos = lower_bound(z, start);
	if (overlaps(z, start, length, pos)) {
		ret = -EINVAL;
		goto fail;
	}
	if (z->nr_groups == z->groups_alloc) {
		/* Doubling keeps registering a whole device O(n). */
		size_t n = z->groups_alloc ? 2 * z->groups_alloc : 64;
		struct srsv_zone_group **grown =
			realloc(z->groups, n * sizeof(*grown));

		if (!grown) {
			ret = -ENOMEM;
			goto fail;
		}
		z->groups = grown;
		z->groups_alloc = n;
	}
	ret = pool_add_group(s, length, length - capacity);
	if (ret)
		goto fail;
	memmove(&z->groups[pos + 1], &z->groups[pos],
		(z->nr_groups - pos) * sizeof(*z->groups));
	z->groups[pos] = g;
	z->nr_groups++;
	if (z->pool_tail[pool])
		z->pool_tail[pool]->pool_next = g;
	else
		z->pool_head[pool] = g;
	z->pool_tail[pool] = g;
	srsv__unlock(&z->lock);
	if (out)
		*out = g;
	return 0;
fail:
	srsv__unlock(&z->lock);
	srsv__lock_destroy(&g->lock);
	free(g);
	return ret;
}

SRSV__EXPORT int srsv_zone_group_activate(struct srsv_zone_group *g)
{
	struct srsv__zoned *z;
	int class, ret = 0;

	if (!g)
		return -EINVAL;
	z = g->z;
	class = kind_class[g->kind];
	srsv__lock(&z->lock);
	srsv__lock(&g->lock);
	if (g->busy) {
		ret = -EBUSY;
	} else if (srsv__ld(&g->alloc_offset) == g->capacity) {
		/* btrfs refuses to activate a full zone: reset it first. */
		ret = -ENOSPC;
	} else if (g->active) {
		ret = 0;
	} else if (!may_take_token(z, class)) {
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
	srsv__unlock(&g->lock);
	srsv__trace_zone_activate(g->start, g->kind, ret, tokens_left(z));
	srsv__unlock(&z->lock);
	return ret;
}

/* Finish @g.  Zoned and group locks held. */
static int finish_locked(struct srsv__zoned *z, struct srsv_zone_group *g)
{
	uint64_t wasted;
	int ret;

	srsv__assert_held(&z->lock);
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
		srsv__lock(&g->space->lock);
		ret = srsv__space_update(g->space, SRSV__ZONE_UNUSABLE,
					 (int64_t)wasted);
		srsv__unlock(&g->space->lock);
		if (ret)
			return ret;
		srsv__st(&g->zone_unusable,
			 srsv__ld(&g->zone_unusable) + wasted);
		srsv__st(&g->alloc_offset, g->capacity);
	}
	close_locked(z, g);
	release_token_locked(z, g, wasted);
	return 0;
}

SRSV__EXPORT int srsv_zone_group_finish(struct srsv_zone_group *g)
{
	int ret;

	if (!g)
		return -EINVAL;
	srsv__lock(&g->z->lock);
	srsv__lock(&g->lock);
	ret = finish_locked(g->z, g);
	srsv__unlock(&g->lock);
	srsv__unlock(&g->z->lock);
	return ret;
}

/*
 * A concurrent writer can allocate in the chosen group between the choice
 * and the finish; each retry means the group just went into use again.
 * After this many the caller is better told -EBUSY than kept spinning.
 */
#define FINISH_ONE_TRIES 4

SRSV__EXPORT int srsv_zoned_finish_one(struct srsv_ctx *ctx,
				       struct srsv_zone_group **finished)
{
	struct srsv__zoned *z = zoned_of(ctx);
	int ret = -ENOENT;

	if (!z)
		return -EINVAL;
	srsv__lock(&z->lock);
	for (int tries = 0; tries < FINISH_ONE_TRIES; tries++) {
		struct srsv_zone_group *best = NULL;
		uint64_t best_room = UINT64_MAX;
		bool saw_busy = false;

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
				saw_busy = true;
				continue;
			}
			if (room < best_room) {
				best = g;
				best_room = room;
			}
		}
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
		if (ret != -EBUSY)
			break;
	}
	srsv__unlock(&z->lock);
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
	s = srsv_ctx_space(ctx, kind_pool[kind]);
	if (!s)
		return -EINVAL;

	srsv__lock(&z->lock);
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
			/* No group lock: the room only shrinks while the
			 * group is on the list, and this is just a hint. */
			if (g->kind == (int)kind && g->space == s &&
			    group_room(g) >= bytes) {
				chosen = g;
				break;
			}
		}
		if (chosen && kind_dedicated(kind))
			z->dedicated[kind] = chosen;
	}
	z->hints++;
	z->hint_looked += looked;
	srsv__unlock(&z->lock);
	srsv__trace_zone_hint(kind, s->kind, bytes,
			      chosen ? chosen->start : UINT64_MAX, looked);
	if (!chosen)
		return -ENOSPC;
	*out = chosen;
	return 0;
}

SRSV__EXPORT int srsv_zone_group_alloc(struct srsv_zone_group *g,
				       uint64_t bytes, uint64_t *logical)
{
	uint64_t off;
	bool full = false;
	int ret = 0;

	if (!g || bad_bytes(bytes))
		return -EINVAL;
	srsv__lock(&g->lock);
	off = srsv__ld(&g->alloc_offset);
	if (!g->open || g->capacity - off < bytes) {
		ret = -ENOSPC;
	} else {
		srsv__st(&g->alloc_offset, off + bytes);
		srsv__st(&g->reserved, srsv__ld(&g->reserved) + bytes);
		full = off + bytes == g->capacity;
		if (logical)
			*logical = g->start + off;
	}
	srsv__unlock(&g->lock);
	/* The list lock ranks above the group lock: re-take both. */
	if (full)
		settle(g);
	return ret;
}

SRSV__EXPORT int srsv_zone_group_written(struct srsv_zone_group *g,
					 uint64_t bytes)
{
	uint64_t reserved;
	bool token_due;

	if (!g || bad_bytes(bytes))
		return -EINVAL;
	srsv__lock(&g->lock);
	reserved = srsv__ld(&g->reserved);
	if (reserved < bytes) {
		srsv__unlock(&g->lock);
		return -EINVAL;
	}
	srsv__st(&g->used, srsv__ld(&g->used) + bytes);
	srsv__st(&g->reserved, reserved - bytes);
	token_due = reserved == bytes && g->active &&
		    srsv__ld(&g->alloc_offset) == g->capacity;
	srsv__unlock(&g->lock);
	if (token_due)
		settle(g);
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
	bool token_due;
	int ret;

	if (!g || bad_bytes(bytes))
		return -EINVAL;
	srsv__lock(&g->lock);
	have = srsv__ld(from);
	if (have < bytes) {
		srsv__unlock(&g->lock);
		return -EINVAL;
	}
	srsv__lock(&g->space->lock);
	ret = pool_move(g->space, pool_from, SRSV__ZONE_UNUSABLE, bytes);
	srsv__unlock(&g->space->lock);
	if (ret) {
		srsv__unlock(&g->lock);
		return ret;
	}
	srsv__st(&g->zone_unusable, srsv__ld(&g->zone_unusable) + bytes);
	srsv__st(from, have - bytes);
	token_due = from == &g->reserved && have == bytes && g->active &&
		    srsv__ld(&g->alloc_offset) == g->capacity;
	srsv__unlock(&g->lock);
	if (token_due)
		settle(g);
	return 0;
}

SRSV__EXPORT int srsv_zone_group_abandon(struct srsv_zone_group *g,
					 uint64_t bytes)
{
	return g ? to_unusable(g, &g->reserved, SRSV__RESERVED, bytes) :
		   -EINVAL;
}

SRSV__EXPORT int srsv_zone_group_free(struct srsv_zone_group *g,
				      uint64_t bytes)
{
	return g ? to_unusable(g, &g->used, SRSV__USED, bytes) : -EINVAL;
}

SRSV__EXPORT int srsv_zone_group_info(struct srsv_zone_group *g,
				      struct srsv_zone_group_info *info)
{
	if (!g || !info)
		return -EINVAL;
	srsv__lock(&g->z->lock);
	srsv__lock(&g->lock);
	info->start = g->start;
	info->length = g->length;
	info->capacity = g->capacity;
	info->alloc_offset = srsv__ld(&g->alloc_offset);
	info->used = srsv__ld(&g->used);
	info->reserved = srsv__ld(&g->reserved);
	info->zone_unusable = srsv__ld(&g->zone_unusable);
	info->kind = g->kind;
	info->pool = g->space->kind;
	info->active = g->active;
	info->open = g->open;
	info->busy = g->busy;
	info->dedicated = g->z->dedicated[g->kind] == g;
	srsv__unlock(&g->lock);
	srsv__unlock(&g->z->lock);
	return 0;
}

SRSV__EXPORT uint64_t srsv_zone_group_room(const struct srsv_zone_group *g)
{
	return group_room(g);
}

SRSV__EXPORT int srsv_zoned_get_info(struct srsv_ctx *ctx,
				     struct srsv_zoned_info *info)
{
	struct srsv__zoned *z = zoned_of(ctx);

	if (!z || !info)
		return -EINVAL;
	memset(info, 0, sizeof(*info));
	srsv__lock(&z->lock);
	info->max_active_zones = z->cfg.max_active_zones;
	info->active = z->active_count;
	for (int k = 0; k < SRSV_ZONE_KIND_COUNT; k++)
		info->active_by_kind[k] = z->active_by_kind[k];
	info->reserved_metadata_left = reserved_left(z, CLASS_METADATA);
	info->reserved_system_left = reserved_left(z, CLASS_SYSTEM);
	info->open = z->open_count;
	info->nr_groups = z->nr_groups;
	info->hints = z->hints;
	info->hint_groups_looked = z->hint_looked;
	srsv__unlock(&z->lock);
	info->resets = srsv__ld(&z->resets);
	info->relocations = srsv__ld(&z->relocations);
	return 0;
}

/* ---- RESET_ZONES and RECLAIM_ZONES ---- */

/* Every byte freed, nothing outstanding: the zone can be reset.  Group
 * lock held (or a lock-free pre-check). */
static bool resettable(const struct srsv_zone_group *g)
{
	return !g->active && !srsv__ld(&g->used) && !srsv__ld(&g->reserved) &&
	       srsv__ld(&g->zone_unusable) == g->length;
}

/* Relocating the live rest pays off: freed bytes reach the threshold. */
static bool sparse(const struct srsv__zoned *z, const struct srsv_zone_group *g)
{
	uint64_t freed = srsv__ld(&g->zone_unusable) - group_tail(g);
	unsigned pct = z->cfg.reclaim_threshold_pct;
	/* capacity * pct / 100 without overflowing 64 bits. */
	uint64_t threshold = g->capacity / 100 * pct +
			     g->capacity % 100 * pct / 100;

	return !g->active && srsv__ld(&g->alloc_offset) == g->capacity &&
	       !srsv__ld(&g->reserved) && srsv__ld(&g->used) &&
	       freed >= threshold;
}

/* Call an engine zone callback with no lock held. */
static int call_zone_fn(struct srsv__zoned *z, srsv_zone_fn fn,
			struct srsv_zone_group *g)
{
	int ret;

	if (!fn)
		return 0;
	srsv__enter_callback();
	ret = fn(g, srsv_ctx_user(z->ctx));
	srsv__leave_callback();
	return ret;
}

/*
 * Reset a group this thread marked busy: the engine resets the zone, then
 * the group is empty again and its capacity returns to the pool, which
 * grants the tickets that now fit.  Returns the bytes given back.
 */
static uint64_t reset_claimed(struct srsv__zoned *z, struct srsv_zone_group *g)
{
	struct srsv_space *s = g->space;
	uint64_t freed = 0;
	int ret = call_zone_fn(z, z->cfg.zone_reset, g);

	srsv__lock(&g->lock);
	if (!ret && resettable(g)) {
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

/* Mark @g busy if @pred still holds under its lock.  Zoned lock held. */
static bool claim_if(const struct srsv__zoned *z, struct srsv_zone_group *g,
		     bool (*pred)(const struct srsv__zoned *,
				  const struct srsv_zone_group *))
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

static bool resettable_pred(const struct srsv__zoned *z,
			    const struct srsv_zone_group *g)
{
	(void)z;
	return resettable(g);
}

/* RESET_ZONES: reset every fully unusable, unused group of @s. */
static uint64_t reset_zones(struct srsv__zoned *z, struct srsv_space *s)
{
	struct srsv_zone_group *g, *cursor = NULL;
	uint64_t freed = 0;

	for (;;) {
		srsv__lock(&z->lock);
		g = cursor ? cursor->pool_next : z->pool_head[s->kind];
		/* Lock-free pre-check first: most groups are live. */
		for (; g; g = g->pool_next)
			if (resettable(g) && claim_if(z, g, resettable_pred))
				break;
		srsv__unlock(&z->lock);
		if (!g)
			break;
		freed += reset_claimed(z, g);
		cursor = g;
	}
	return freed;
}

/*
 * RECLAIM_ZONES: relocate the live data of at most
 * SRSV_ZONED_RECLAIM_BATCH sparse groups of @s, the sparsest first (btrfs
 * sorts its reclaim list by used bytes: least to move, most to gain), and
 * reset those the relocation emptied.
 */
static uint64_t reclaim_zones(struct srsv__zoned *z, struct srsv_space *s)
{
	struct srsv_zone_group *batch[SRSV_ZONED_RECLAIM_BATCH];
	unsigned nr = 0;
	uint64_t freed = 0;

	if (!z->cfg.zone_relocate)
		return 0;
	srsv__lock(&z->lock);
	for (struct srsv_zone_group *g = z->pool_head[s->kind]; g;
	     g = g->pool_next) {
		uint64_t used = srsv__ld(&g->used);
		unsigned i;

		if (!sparse(z, g))
			continue;
		if (nr == SRSV_ZONED_RECLAIM_BATCH &&
		    used >= srsv__ld(&batch[nr - 1]->used))
			continue;
		/* Insertion into a batch kept sorted by used bytes; the
		 * lock-free reads only choose, claim_if() decides. */
		if (nr < SRSV_ZONED_RECLAIM_BATCH)
			nr++;
		for (i = nr - 1; i > 0 && srsv__ld(&batch[i - 1]->used) > used;
		     i--)
			batch[i] = batch[i - 1];
		batch[i] = g;
	}
	for (unsigned i = 0; i < nr; i++)
		if (!claim_if(z, batch[i], sparse))
			batch[i] = NULL;
	srsv__unlock(&z->lock);

	for (unsigned i = 0; i < nr; i++) {
		struct srsv_zone_group *g = batch[i];
		bool reset;

		if (!g)
			continue;
		if (!call_zone_fn(z, z->cfg.zone_relocate, g))
			AO_fetch_and_add1(&z->relocations);
		/* Keep it busy if the relocation emptied it: reset it now. */
		srsv__lock(&g->lock);
		reset = resettable(g);
		if (!reset)
			g->busy = false;
		srsv__unlock(&g->lock);
		if (reset)
			freed += reset_claimed(z, g);
	}
	return freed;
}

uint64_t srsv__zoned_flush(struct srsv_space *s, int state)
{
	struct srsv__zoned *z = s ? zoned_of(s->ctx) : NULL;

	if (!z)
		return 0;
	if (state == SRSV_STATE_RESET_ZONES)
		return reset_zones(z, s);
	if (state == SRSV_STATE_RECLAIM_ZONES)
		return reclaim_zones(z, s);
	return 0;
}
