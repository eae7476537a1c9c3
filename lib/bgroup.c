/* SPDX-License-Identifier: MIT */
/*
 * Block groups for every pool: chunks in, chunks out, reclaim, statfs.
 *
 * WHY (the "df says free, ENOSPC" complaint)
 *
 * A pool grows by chunks carved from unallocated device space.  If chunks
 * only ever go one way, the pool that grew first keeps the device: write
 * one large file until ENOSPC, delete it, and the DATA pool still owns
 * every chunk, empty, while the METADATA pool cannot grow by one and the
 * next small files fail, with df reporting 99% free.  btrfs fixed this in
 * three steps, which this file follows:
 *
 * 1. btrfs_delete_unused_bgs() (block-group.c): a block group whose used
 *    bytes drop to 0 is put on the unused list (btrfs_mark_bg_unused()
 *    from btrfs_update_block_group()), and deleted after the transaction
 *    that emptied it has committed, when its freed extents are no longer
 *    referenced by the last committed state.  Its space is unallocated
 *    again.  The last block group of a profile is kept.
 * 2. Reclaim (btrfs_reclaim_bgs_work(), space-info.c): block groups that
 *    are not empty but underused are relocated (their live extents copied
 *    elsewhere), after which they are empty and go as in 1.  Which groups:
 *    the fixed bg_reclaim_threshold (a free that takes a group from at
 *    least the threshold to below it marks it, should_reclaim_block_group());
 *    or, with dynamic_reclaim, calc_dynamic_reclaim_threshold(): the
 *    threshold rises from 0 to 100 as unallocated space falls below
 *    calc_unalloc_target() (10 data chunks), and is 0 while the pool has
 *    less than a data chunk of unused room (relocating into nothing is
 *    pointless).  With periodic_reclaim, candidates are picked by
 *    do_reclaim_sweep(), run at a commit once a data chunk's worth of the
 *    pool was freed since the last sweep (btrfs 6.11's
 *    btrfs_space_info_update_reclaimable() also subtracted allocations;
 *    upstream's later rework of the readiness rule stopped tracking them,
 *    and so do we), or once a reclaimed group of the pool went back (the
 *    last sweep made progress): a group is taken only if it is under the threshold and
 *    survived a previous sweep without an allocation (its reclaim_mark;
 *    the allocator fills holes well, so a group being written to is left
 *    alone), except in urgent reclaim (is_reclaim_urgent(): less than a
 *    data chunk unallocated), where a second pass takes fresh groups too.
 * 3. btrfs_statfs() (super.c) reports f_bavail 0 when metadata is full and
 *    cannot grow, and subtracts the global reserve (see srsv_ctx_statfs()).
 *
 * THE DIVISION OF LABOUR
 *
 * Only the engine knows its extents, so it reports them: which group an
 * extent went into (srsv_bgroup_alloc()), which it left and in which
 * transaction (srsv_bgroup_free()), which transaction committed
 * (srsv_ctx_commit_done()).  The library keeps, per group, the used bytes
 * and the bytes pinned per open transaction (at most two are open: the
 * committing one and the running one, so two tagged buckets), and decides:
 * which groups return and when, which groups are reclaim candidates, and
 * when the engine must relocate (the RECLAIM_CHUNKS flush state).  The
 * relocation itself is the engine's: srsv_bgroup_reclaim_take() makes the
 * group read-only (btrfs_inc_block_group_ro(): its free bytes become the
 * pool's readonly bytes, so no reservation counts on space that is about
 * to vanish, and no allocation lands there) and the engine moves the live
 * extents out.
 *
 * WHEN RELOCATION RUNS
 *
 * Upstream relocates in the background: btrfs_mark_bg_to_reclaim() queues
 * the candidates, and btrfs_reclaim_bgs_work() relocates them in a worker
 * (btrfs_relocate_chunk()) that no reservation ticket waits for (only the
 * zoned RECLAIM_ZONES flush state waits for it).  A ticket whose flush
 * walk ends first fails with -ENOSPC.  We deviate.  Here the engine does
 * the moving, and the library can only ask it from a flush walk: a walk
 * that is about to fail its tickets while its pool is full (the async
 * metadata walk, the async data walk, a FLUSH_EVICT ticket's walk; any
 * walk whose state array may commit) first runs RECLAIM_CHUNKS over the
 * other pools with the urgent sweep (srsv__bgroup_reclaim_prepare()), then
 * a commit: the groups the relocation emptied return, unallocated grows,
 * and the walk starts again (flush.c, try_rescue()), at most four rounds
 * per walk.  Engines that want upstream's background relocation as well
 * call srsv_bgroup_reclaim_take() after their commits.
 *
 * Such rounds run at once (the data and metadata flushers, priority walks
 * in callers' threads), so a round is named: the groups its callback
 * takes on the thread the library called it on belong to it, and when the
 * callback returns the library ends those left taken, no others (not
 * another round's, not a background relocation's, which stay taken until
 * srsv_bgroup_reclaim_done()).
 *
 * POOL COUNTERS
 *
 * A group's bytes are part of its pool's total from srsv_bgroup_add() on.
 * Returning a group shrinks the pool by its length.  That must never
 * overcommit the pool: the group's bytes that are not yet readonly must be
 * free, and are claimed first through may_use with a compare-and-swap
 * (the same admission as srsv_space_set_readonly(), ordered with lock-free
 * reservations), then total and readonly drop, then may_use.  If they are
 * not free (reservations hold the pool's free space) the group stays and
 * is tried again at the next commit.
 *
 * ONE TABLE FOR CHUNKS AND ZONES
 *
 * The table is the ctx's one group table.  A zone group (zoned.c) is a
 * block group carrying zoned state (struct srsv__bg's zone pointer): it is
 * inserted here by srsv_zone_group_add() through srsv__bgroup_insert(), so
 * overlaps are refused whichever kind came first, and get/next/stats see
 * it.  A zoned ctx gets the table at srsv_zoned_init(), unconfigured;
 * srsv_bgroups_init() configures it (the chunk calls need that, the
 * queries do not).  On a zone the calls defer to zoned.c (alloc at the
 * write pointer, frees to zone_unusable); the chunk rules (return at the
 * commit, sweeps, take, find_free, remove) skip zones: their candidates
 * come from zone_unusable and they are reset in place, not returned.
 *
 * LOCKING AND COST
 *
 * One lock per ctx (bgs->lock) protects the table and every conventional
 * group; it ranks above a zone group's lock (zoned.c) and the pool locks,
 * and no holder of either calls in here.  The
 * extent calls (alloc, free, get) are a binary search; commit, the sweeps
 * and take walk the table: O(groups), a few thousand on a large device
 * (1 GiB chunks), never on the reservation path.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "bgroup.h"
#include "blockrsv.h"
#include "cache.h"
#include "counters.h"
#include "stats.h"
#include "tickets.h"
#include "trace.h"

/*
 * The RECLAIM_CHUNKS round this thread is in (0: none).  The engine takes
 * groups from inside the callback, on the thread that runs it; a round
 * ends only the groups it took, so that two rounds at once (the data and
 * metadata flushers, priority walks in callers' threads) or a relocation
 * the engine runs in the background do not end each other's groups.
 */
static _Thread_local uint64_t cur_round;

/* First size of the group table (doubling from there). */
#define TABLE_FIRST 64
/* btrfs_statfs(): metadata counts as exhausted below this much free
 * room above the global reserve (observed deltas were ~2 MiB). */
#define STATFS_META_THRESH (UINT64_C(4) << 20)

struct srsv__bgroups {
	struct srsv_ctx *ctx;
	/* Defaults until srsv_bgroups_init() configures the table (under
	 * lock, then configured is set with release); immutable from then. */
	struct srsv_bgroup_config cfg;
	volatile AO_t configured;
	struct srsv__lock lock;
	/* Protected by lock. */
	struct srsv__bg **groups;		/* sorted by start */
	size_t nr, alloc;
	uint64_t committed;
	unsigned taken;
	uint64_t rounds;			/* RECLAIM_CHUNKS rounds begun */
	uint64_t reclaimable[SRSV_POOL_COUNT];	/* freed since a sweep */
	bool ready[SRSV_POOL_COUNT];
	struct srsv_bgroup_stats st;
};

_Static_assert(sizeof(struct srsv__bgroups *) == sizeof(AO_t),
	       "ctx->bgroups is accessed as an AO_t");

static volatile AO_t *slot(struct srsv_ctx *ctx)
{
	return (volatile AO_t *)(void *)&ctx->bgroups;
}

static struct srsv__bgroups *bgs_of(struct srsv_ctx *ctx)
{
	return ctx ? (struct srsv__bgroups *)(uintptr_t)
		     AO_load_acquire(slot(ctx)) : NULL;
}

/* The table if srsv_bgroups_init() configured it: the chunk calls need
 * that; the queries need only a table (a zoned ctx has one). */
static struct srsv__bgroups *cfg_of(struct srsv_ctx *ctx)
{
	struct srsv__bgroups *bgs = bgs_of(ctx);

	return bgs && AO_load_acquire(&bgs->configured) ? bgs : NULL;
}

bool srsv__bgroups_enabled(struct srsv_ctx *ctx)
{
	return cfg_of(ctx) != NULL;
}

static bool bad_bytes(uint64_t bytes)
{
	return bytes == 0 || bytes > SRSV_MAX_BYTES;
}

/* Raw device bytes per byte of @s (its profile's factor). */
static unsigned factor_of(const struct srsv__bgroups *bgs,
			  const struct srsv_space *s)
{
	return s->is_data ? bgs->cfg.data_raid_factor :
			    bgs->ctx->cfg.metadata_raid_factor;
}

#define bg_pinned srsv__bg_pinned

static uint64_t bg_used(const struct srsv__bg *g)
{
	return srsv__ld(&g->used);
}

static uint64_t bg_room(const struct srsv__bg *g)
{
	return g->length - bg_used(g) - bg_pinned(g);
}

/* The pool a caller names, or NULL. */
static struct srsv_space *pool_space(struct srsv_ctx *ctx, int pool)
{
	if ((unsigned)pool >= SRSV_POOL_COUNT)
		return NULL;
	return srsv__ctx_space(ctx, pool);
}

/* Count and trace a refused block-group call on @s (stats.c, NULL: not
 * counted); returns -EINVAL. */
static int bg_refused(struct srsv_space *s, uint64_t bytes)
{
	return srsv__refused(s, SRSV_REFUSED_BGROUP, bytes);
}

/* ---- configuration ---- */

SRSV__EXPORT int srsv_bgroup_config_init(struct srsv_bgroup_config *cfg)
{
	if (!cfg)
		return -EINVAL;
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->dynamic_reclaim = true;
	cfg->periodic_reclaim = true;
	cfg->data_raid_factor = 1;
	return 0;
}

static bool tail_is_zero(const struct srsv_bgroup_config *cfg)
{
	const unsigned char *p = (const unsigned char *)cfg;

	for (size_t i = sizeof(*cfg); i < cfg->size; i++)
		if (p[i])
			return false;
	return true;
}

static struct srsv__bgroups *table_new(struct srsv_ctx *ctx)
{
	struct srsv__bgroups *bgs = calloc(1, sizeof(*bgs));

	if (!bgs)
		return NULL;
	if (srsv__lock_init(&bgs->lock)) {
		free(bgs);
		return NULL;
	}
	bgs->ctx = ctx;
	srsv_bgroup_config_init(&bgs->cfg);
	return bgs;
}

static void table_free(struct srsv__bgroups *bgs)
{
	srsv__lock_destroy(&bgs->lock);
	free(bgs);
}

struct srsv__bgroups *srsv__bgroups_table(struct srsv_ctx *ctx)
{
	struct srsv__bgroups *bgs = bgs_of(ctx);

	if (bgs)
		return bgs;
	bgs = table_new(ctx);
	if (!bgs)
		return NULL;
	/* Full barrier: readers find the table lock-free. */
	if (!AO_compare_and_swap_full(slot(ctx), 0, (AO_t)(uintptr_t)bgs)) {
		table_free(bgs);
		bgs = bgs_of(ctx);
	}
	return bgs;
}

SRSV__EXPORT int srsv_bgroups_init(struct srsv_ctx *ctx,
				   const struct srsv_bgroup_config *cfg)
{
	struct srsv__bgroups *bgs;
	int ret = 0;

	if (!ctx || !cfg || cfg->size < sizeof(*cfg) || !tail_is_zero(cfg))
		return -EINVAL;
	if (cfg->reclaim_threshold_pct > 100 || !cfg->data_raid_factor ||
	    cfg->data_raid_factor > 4)
		return -EINVAL;
	/* A zoned ctx already has its table (its zone groups are in it):
	 * configure that one. */
	bgs = srsv__bgroups_table(ctx);
	if (!bgs)
		return -ENOMEM;
	srsv__lock(&bgs->lock);
	if (AO_load(&bgs->configured)) {
		ret = -EALREADY;
	} else {
		bgs->cfg = *cfg;
		bgs->cfg.size = sizeof(bgs->cfg);
		AO_store_release(&bgs->configured, 1);
	}
	srsv__unlock(&bgs->lock);
	return ret;
}

void srsv__bgroups_ctx_destroy(struct srsv_ctx *ctx)
{
	struct srsv__bgroups *bgs = bgs_of(ctx);

	if (!bgs)
		return;
	for (size_t i = 0; i < bgs->nr; i++) {
		if (bgs->groups[i]->zone)
			srsv__zone_group_destroy(bgs->groups[i]->zone);
		else
			free(bgs->groups[i]);
	}
	free(bgs->groups);
	AO_store(slot(ctx), 0);
	table_free(bgs);
}

/* ---- the table ---- */

/* Index of the first group whose start is > @addr.  Lock held. */
static size_t upper_bound(struct srsv__bgroups *bgs, uint64_t addr)
{
	size_t lo = 0, hi = bgs->nr;

	srsv__assert_held(&bgs->lock);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (bgs->groups[mid]->start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The group covering @addr, or NULL; *@pos its index.  Lock held. */
static struct srsv__bg *lookup(struct srsv__bgroups *bgs, uint64_t addr,
			       size_t *pos)
{
	size_t i = upper_bound(bgs, addr);
	struct srsv__bg *g;

	if (!i)
		return NULL;
	g = bgs->groups[i - 1];
	if (addr - g->start >= g->length)
		return NULL;
	if (pos)
		*pos = i - 1;
	return g;
}

/*
 * The group an extent call names: -ENOENT no group at @bytenr, -EINVAL a
 * group of another pool or an extent that leaves it.  Lock held.
 */
static int resolve(struct srsv__bgroups *bgs, int pool, uint64_t bytenr,
		   uint64_t bytes, struct srsv__bg **out)
{
	struct srsv_space *s = pool_space(bgs->ctx, pool);
	struct srsv__bg *g;

	if (!s || bad_bytes(bytes))
		return -EINVAL;
	g = lookup(bgs, bytenr, NULL);
	if (!g)
		return -ENOENT;
	if (g->space != s || bytes > g->length - (bytenr - g->start))
		return -EINVAL;
	*out = g;
	return 0;
}

/* A group's state for the caller.  Table lock held (a zone group's is
 * read under its group lock, zoned.c). */
static void fill_info(const struct srsv__bg *g, struct srsv_bgroup_info *info)
{
	if (g->zone) {
		srsv__zone_bg_info(g->zone, info);
		return;
	}
	memset(info, 0, sizeof(*info));
	info->start = g->start;
	info->length = g->length;
	info->used = bg_used(g);
	info->pinned = bg_pinned(g);
	info->pool = g->space->kind;
	info->reclaim_mark = g->reclaim_mark;
	info->readonly = g->readonly;
	info->unused = g->unused;
	info->candidate = g->candidate;
}

/*
 * Grow @g's pool by @g.  Table lock held: it ranks above the pool lock,
 * and nothing on the reservation or zoned allocation path takes it.
 */
static int pool_grow(struct srsv__bgroups *bgs, struct srsv__bg *g,
		     uint64_t tail)
{
	struct srsv_space *s = g->space;
	struct srsv_ctx *ctx = bgs->ctx;
	int ret = 0;

	srsv__assert_held(&bgs->lock);
	srsv__lock(&s->lock);
	if (srsv__space_counter(s, SRSV__TOTAL) + g->length > SRSV_MAX_BYTES) {
		ret = -EINVAL;
	} else if (g->zone) {
		/* A zone: the unwritable tail is claimed before the total
		 * grows, so a lock-free admission never sees it as free. */
		if (tail)
			ret = srsv__space_update(s, SRSV__ZONE_UNUSABLE,
						 (int64_t)tail);
		if (!ret) {
			ret = srsv__space_update(s, SRSV__TOTAL,
						 (int64_t)g->length);
			if (ret && tail)
				srsv__space_update(s, SRSV__ZONE_UNUSABLE,
						   -(int64_t)tail);
		}
	} else if (g->length > UINT64_MAX / factor_of(bgs, s) ||
		   !srsv__ao_sub_checked(&ctx->unallocated,
					 g->length * factor_of(bgs, s))) {
		/* length <= 2^62 and factor <= 4: 2^64 raw bytes would wrap,
		 * and no device has them. */
		ret = -ENOSPC;
	} else {
		/* Unallocated first, then the pool: overcommit never counts
		 * the chunk twice. */
		srsv__space_update(s, SRSV__TOTAL, (int64_t)g->length);
	}
	if (!ret) {
		/* New capacity: btrfs_add_bg_to_space_info() clears full. */
		srsv__st(&s->full, 0);
		srsv__try_grant_tickets(s);
	}
	srsv__unlock(&s->lock);
	return ret;
}

int srsv__bgroup_insert(struct srsv_ctx *ctx, struct srsv__bg *g,
			uint64_t tail)
{
	struct srsv__bgroups *bgs = srsv__bgroups_table(ctx);
	uint64_t start = g->start, length = g->length;
	size_t pos;
	int ret = 0;

	if (!bgs)
		return -ENOMEM;
	srsv__lock(&bgs->lock);
	pos = upper_bound(bgs, start);
	/* Sorted and disjoint: only the neighbours can overlap, whatever
	 * they are (chunk or zone). */
	if ((pos < bgs->nr && bgs->groups[pos]->start < start + length) ||
	    (pos > 0 && bgs->groups[pos - 1]->start +
			bgs->groups[pos - 1]->length > start)) {
		ret = -EINVAL;
		goto out;
	}
	if (bgs->nr == bgs->alloc) {
		size_t n = bgs->alloc ? 2 * bgs->alloc : TABLE_FIRST;
		struct srsv__bg **grown = realloc(bgs->groups,
						  n * sizeof(*grown));

		if (!grown) {
			ret = -ENOMEM;
			goto out;
		}
		bgs->groups = grown;
		bgs->alloc = n;
	}
	ret = pool_grow(bgs, g, tail);
	if (ret)
		goto out;
	memmove(&bgs->groups[pos + 1], &bgs->groups[pos],
		(bgs->nr - pos) * sizeof(*bgs->groups));
	bgs->groups[pos] = g;
	bgs->nr++;
	bgs->st.added++;
out:
	srsv__unlock(&bgs->lock);
	return ret;
}

SRSV__EXPORT int srsv_bgroup_add(struct srsv_ctx *ctx, enum srsv_pool pool,
				 uint64_t start, uint64_t length)
{
	struct srsv__bgroups *bgs = cfg_of(ctx);
	struct srsv_space *s;
	struct srsv__bg *g;
	int ret;

	if (!bgs)
		return -EINVAL;
	s = pool_space(ctx, pool);
	if (!s || bad_bytes(length) || start > UINT64_MAX - length)
		return -EINVAL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->start = start;
	g->length = length;
	g->space = s;
	ret = srsv__bgroup_insert(ctx, g, 0);
	if (ret)
		free(g);
	return ret;
}

/* ---- reclaim thresholds (space-info.c) ---- */

uint64_t srsv__calc_pct_ratio(uint64_t x, uint64_t y)
{
	if (!y)
		return 0;
	/* btrfs: on overflow of 100 * x, drop 10 bits of both and retry. */
	while (x > UINT64_MAX / 100) {
		x >>= 10;
		y >>= 10;
		if (!y)
			y = 1;
	}
	return x * 100 / y;
}

/* calc_effective_data_chunk_size(). */
static uint64_t data_chunk(const struct srsv__bgroups *bgs)
{
	return bgs->ctx->data_chunk_allowance;
}

/* calc_dynamic_reclaim_threshold() for @s. */
static unsigned dynamic_threshold(const struct srsv__bgroups *bgs,
				  const struct srsv_space *s)
{
	uint64_t unalloc = srsv__ld(&bgs->ctx->unallocated);
	uint64_t target = SRSV_BGROUP_UNALLOC_TARGET * data_chunk(bgs);
	uint64_t alloc = srsv__space_counter(s, SRSV__TOTAL);
	uint64_t used = srsv__space_used(s, false);
	uint64_t unused = alloc > used ? alloc - used : 0;
	uint64_t want = target > unalloc ? target - unalloc : 0;

	/* No room to relocate into: it would not work anyway. */
	if (unused < data_chunk(bgs))
		return 0;
	return (unsigned)srsv__calc_pct_ratio(want, target);
}

/* btrfs_calc_reclaim_threshold(). */
static unsigned reclaim_threshold(const struct srsv__bgroups *bgs,
				  const struct srsv_space *s)
{
	if (bgs->cfg.dynamic_reclaim)
		return dynamic_threshold(bgs, s);
	return bgs->cfg.reclaim_threshold_pct;
}

SRSV__EXPORT int srsv_bgroup_reclaim_threshold(struct srsv_ctx *ctx,
					       enum srsv_pool pool)
{
	struct srsv__bgroups *bgs = cfg_of(ctx);
	struct srsv_space *s = bgs ? pool_space(ctx, pool) : NULL;

	if (!s)
		return -EINVAL;
	return (int)reclaim_threshold(bgs, s);
}

/* is_reclaim_urgent(). */
static bool reclaim_urgent(const struct srsv__bgroups *bgs)
{
	return srsv__ld(&bgs->ctx->unallocated) < data_chunk(bgs);
}

/* should_reclaim_block_group(): this free took @g from at least the
 * threshold to below it (a group that was below already is likely new). */
static bool should_reclaim(const struct srsv__bgroups *bgs,
			   const struct srsv__bg *g, uint64_t freed)
{
	unsigned pct = reclaim_threshold(bgs, g->space);
	uint64_t thresh = srsv__mult_perc(g->length, pct);

	if (!pct)
		return false;
	return bg_used(g) + freed >= thresh && bg_used(g) < thresh;
}

static void mark_candidate(struct srsv__bgroups *bgs, struct srsv__bg *g)
{
	if (!g->candidate) {
		g->candidate = true;
		bgs->st.marked++;
	}
}

/*
 * do_reclaim_sweep() over the groups of @s: a group under the threshold
 * that survived a sweep without an allocation becomes a candidate; every
 * group's mark goes up.  Urgent: if no stale group qualified, a second
 * pass (by now every mark is at least 1) takes fresh ones too.  Returns
 * the groups marked.  Lock held.
 */
static unsigned sweep(struct srsv__bgroups *bgs, struct srsv_space *s)
{
	unsigned pct = reclaim_threshold(bgs, s), marked = 0;
	bool urgent = reclaim_urgent(bgs), will_reclaim = false;

	srsv__assert_held(&bgs->lock);
	bgs->st.sweeps++;
again:
	for (size_t i = 0; i < bgs->nr; i++) {
		struct srsv__bg *g = bgs->groups[i];

		/* Emptied groups return at the commit anyway.  Zone
		 * groups have their own candidates (zoned.c: freed bytes
		 * below the write pointer, not used bytes). */
		if (g->space != s || g->zone || g->readonly || g->unused)
			continue;
		if (bg_used(g) < srsv__mult_perc(g->length, pct) &&
		    g->reclaim_mark) {
			will_reclaim = true;
			if (!g->candidate)
				marked++;
			mark_candidate(bgs, g);
		}
		if (g->reclaim_mark < UINT_MAX)
			g->reclaim_mark++;
	}
	if (!will_reclaim && urgent) {
		urgent = false;
		goto again;
	}
	return marked;
}

/* ---- extents ---- */

SRSV__EXPORT int srsv_bgroup_alloc(struct srsv_ctx *ctx, enum srsv_pool pool,
				   uint64_t bytenr, uint64_t bytes)
{
	struct srsv__bgroups *bgs = cfg_of(ctx);
	struct srsv__bg *g;
	int ret;

	if (!bgs)
		return -EINVAL;
	srsv__lock(&bgs->lock);
	ret = resolve(bgs, pool, bytenr, bytes, &g);
	if (!ret && g->zone)
		ret = srsv__zone_bg_alloc(g->zone, bytenr, bytes);
	else if (!ret && g->readonly)
		ret = -EROFS;
	else if (!ret && bytes > bg_room(g))
		ret = -EINVAL;
	else if (!ret) {
		srsv__st(&g->used, bg_used(g) + bytes);
		g->reclaim_mark = 0;
		g->unused = false;
	}
	srsv__unlock(&bgs->lock);
	if (ret == -EINVAL)
		bg_refused(pool_space(ctx, pool), bytes);
	return ret;
}

SRSV__EXPORT int srsv_bgroup_free(struct srsv_ctx *ctx, enum srsv_pool pool,
				  uint64_t bytenr, uint64_t bytes,
				  uint64_t transid)
{
	struct srsv__bgroups *bgs = cfg_of(ctx);
	struct srsv__bg *g;
	unsigned b = transid & 1;
	int ret;

	if (!bgs)
		return -EINVAL;
	srsv__lock(&bgs->lock);
	ret = resolve(bgs, pool, bytenr, bytes, &g);
	if (ret)
		goto out;
	if (transid && (transid <= bgs->committed ||
			(g->pinned[b] && g->pinned_trans[b] != transid))) {
		ret = -EINVAL;
		goto out;
	}
	if (g->zone) {
		/* Freed below the write pointer: zone_unusable, at once or
		 * at the commit (zoned.c). */
		ret = srsv__zone_bg_free(g->zone, bytes, transid);
		goto out;
	}
	if (bytes > bg_used(g)) {
		ret = -EINVAL;
		goto out;
	}
	srsv__st(&g->used, bg_used(g) - bytes);
	if (transid) {
		g->pinned[b] += bytes;
		g->pinned_trans[b] = transid;
	}
	if (bgs->cfg.periodic_reclaim) {
		int kind = g->space->kind;

		/* btrfs_space_info_update_reclaimable(): a data chunk's
		 * worth freed makes the pool worth a sweep. */
		bgs->reclaimable[kind] += bytes;
		if (bgs->reclaimable[kind] >= data_chunk(bgs))
			bgs->ready[kind] = true;
	}
	if (!bg_used(g))
		g->unused = true;
	else if (!bgs->cfg.periodic_reclaim && !g->readonly &&
		 should_reclaim(bgs, g, bytes))
		mark_candidate(bgs, g);
out:
	srsv__unlock(&bgs->lock);
	if (ret == -EINVAL)
		bg_refused(pool_space(ctx, pool), bytes);
	return ret;
}

/* ---- giving groups back ---- */

/*
 * Make @bytes of @s's free space readonly for a group (charge through
 * may_use, then move: ordered with lock-free reservations).  False, and
 * nothing changed, if they are not free.  Pool lock held.
 */
static bool pool_make_ro(struct srsv_space *s, uint64_t bytes)
{
	bool ok = true;

	srsv__assert_held(&s->lock);
	if (!bytes)
		return true;
	srsv__cache_block(s);
	if (!srsv__space_try_charge(s, bytes, SRSV__CHARGE_NO_OVERCOMMIT,
				    NULL)) {
		ok = false;
	} else {
		srsv__space_update(s, SRSV__READONLY, (int64_t)bytes);
		srsv__may_use_sub(s, bytes);
	}
	srsv__cache_unblock(s);
	return ok;
}

/* Make a group's readonly bytes free again; grants tickets. */
static void pool_clear_ro(struct srsv_space *s, uint64_t bytes)
{
	if (!bytes)
		return;
	srsv__lock(&s->lock);
	srsv__space_update(s, SRSV__READONLY, -(int64_t)bytes);
	srsv__try_grant_tickets(s);
	srsv__unlock(&s->lock);
}

static size_t pool_groups(struct srsv__bgroups *bgs,
			  const struct srsv_space *s)
{
	size_t n = 0;

	for (size_t i = 0; i < bgs->nr; i++)
		n += bgs->groups[i]->space == s;
	return n;
}

/*
 * Shrink the pool by group @pos and give its raw bytes back to
 * unallocated.  -ENOSPC, nothing changed, when the part of the group that
 * is not readonly yet is not free.  Lock held.
 */
static int give_back(struct srsv__bgroups *bgs, size_t pos)
{
	struct srsv__bg *g = bgs->groups[pos];
	struct srsv_space *s = g->space;
	uint64_t rest = g->length - g->ro_bytes;
	struct srsv_ctx *ctx = bgs->ctx;

	srsv__assert_held(&bgs->lock);
	srsv__lock(&s->lock);
	srsv__cache_block(s);
	if (rest && !srsv__space_try_charge(s, rest,
					    SRSV__CHARGE_NO_OVERCOMMIT, NULL)) {
		srsv__cache_unblock(s);
		srsv__unlock(&s->lock);
		return -ENOSPC;
	}
	/* Charged: total, then readonly, then may_use drop; a lock-free
	 * reader may see the pool fuller than it is, never emptier. */
	srsv__space_update(s, SRSV__TOTAL, -(int64_t)g->length);
	if (g->ro_bytes)
		srsv__space_update(s, SRSV__READONLY, -(int64_t)g->ro_bytes);
	if (rest)
		srsv__may_use_sub(s, rest);
	srsv__cache_unblock(s);
	srsv__unlock(&s->lock);
	AO_fetch_and_add(&ctx->unallocated, (AO_t)(g->length *
						   factor_of(bgs, s)));
	/* New device space: every pool may grow again
	 * (btrfs_clear_space_info_full()). */
	for (int i = 0; i < SRSV_POOL_COUNT; i++)
		if (ctx->spaces[i])
			srsv__st(&ctx->spaces[i]->full, 0);
	/* A reclaimed group that went back: the pool's periodic reclaim
	 * made progress and may sweep again. */
	if (g->readonly && bgs->cfg.periodic_reclaim)
		bgs->ready[s->kind] = true;
	memmove(&bgs->groups[pos], &bgs->groups[pos + 1],
		(bgs->nr - pos - 1) * sizeof(*bgs->groups));
	bgs->nr--;
	bgs->st.returned++;
	free(g);
	return 0;
}

SRSV__EXPORT int srsv_ctx_commit_done(struct srsv_ctx *ctx, uint64_t transid)
{
	struct srsv__bgroups *bgs = cfg_of(ctx);
	int returned = 0;

	if (!bgs || !transid)
		return -EINVAL;
	srsv__lock(&bgs->lock);
	if (transid <= bgs->committed) {
		srsv__unlock(&bgs->lock);
		return -EINVAL;
	}
	bgs->committed = transid;
	bgs->st.committed = transid;
	for (size_t i = 0; i < bgs->nr; i++) {
		struct srsv__bg *g = bgs->groups[i];
		uint64_t freed = 0;

		if (g->zone) {
			srsv__zone_bg_commit(g->zone, transid);
			continue;
		}
		for (int b = 0; b < 2; b++) {
			if (g->pinned[b] && g->pinned_trans[b] <= transid) {
				freed += g->pinned[b];
				g->pinned[b] = 0;
			}
		}
		/* Unpinned bytes of a read-only group stay out of reach
		 * (unpin_extent_range() adds them to bytes_readonly). */
		if (freed && g->readonly) {
			srsv__lock(&g->space->lock);
			if (pool_make_ro(g->space, freed))
				g->ro_bytes += freed;
			srsv__unlock(&g->space->lock);
		}
	}
	for (size_t i = 0; i < bgs->nr;) {
		struct srsv__bg *g = bgs->groups[i];

		/* An emptied zone group is not returned: RESET_ZONES
		 * resets it in its pool (zoned.c). */
		if (!g->zone && g->unused && !bg_used(g) && !bg_pinned(g) &&
		    !g->taken &&
		    pool_groups(bgs, g->space) > 1 && !give_back(bgs, i)) {
			returned++;
			continue;	/* the next group moved to i */
		}
		i++;
	}
	if (bgs->cfg.periodic_reclaim) {
		for (int k = 0; k < SRSV_POOL_COUNT; k++) {
			struct srsv_space *s = ctx->spaces[k];

			/* btrfs_should_periodic_reclaim(): once per
			 * readiness. */
			if (!s || !bgs->ready[k])
				continue;
			bgs->ready[k] = false;
			bgs->reclaimable[k] = 0;
			sweep(bgs, s);
		}
	}
	srsv__unlock(&bgs->lock);
	if (returned)
		srsv__grant_metadata_tickets(ctx);
	return returned;
}

SRSV__EXPORT int srsv_bgroup_remove(struct srsv_ctx *ctx, enum srsv_pool pool,
				    uint64_t start)
{
	struct srsv__bgroups *bgs = cfg_of(ctx);
	struct srsv_space *s;
	struct srsv__bg *g;
	size_t pos;
	int ret;

	if (!bgs)
		return -EINVAL;
	s = pool_space(ctx, pool);
	if (!s)
		return -EINVAL;
	srsv__lock(&bgs->lock);
	g = lookup(bgs, start, &pos);
	if (!g)
		ret = -ENOENT;
	else if (g->start != start || g->space != s || g->zone)
		ret = -EINVAL;
	else if (bg_used(g) || bg_pinned(g) || g->taken)
		ret = -EBUSY;
	else
		ret = give_back(bgs, pos);
	srsv__unlock(&bgs->lock);
	if (ret == -EINVAL)
		return bg_refused(s, start);
	if (!ret)
		srsv__grant_metadata_tickets(ctx);
	return ret;
}

/* ---- reclaim ---- */

/* Is @g still worth taking: under the threshold now, or empty. */
static bool still_candidate(const struct srsv__bgroups *bgs,
			    const struct srsv__bg *g)
{
	return !g->readonly && !g->unused &&
	       (!bg_used(g) || bg_used(g) < srsv__mult_perc(g->length,
					reclaim_threshold(bgs, g->space)));
}

/* The first layout of struct srsv_bgroup_info (0.1.0). */
#define BG_INFO_MIN SRSV__OUT_MIN(struct srsv_bgroup_info, candidate)

SRSV__EXPORT int srsv_bgroup_reclaim_take_sized(struct srsv_ctx *ctx,
						struct srsv_bgroup_info *out,
						size_t size)
{
	struct srsv__bgroups *bgs = cfg_of(ctx);
	struct srsv_bgroup_info all;
	int ret = -ENOENT;

	if (!bgs || !out || size < BG_INFO_MIN)
		return -EINVAL;
	srsv__lock(&bgs->lock);
	if (bgs->taken >= SRSV_BGROUP_RECLAIM_BATCH) {
		ret = -EBUSY;
		goto out;
	}
	for (;;) {
		struct srsv__bg *best = NULL;
		bool ro;

		for (size_t i = 0; i < bgs->nr; i++) {
			struct srsv__bg *g = bgs->groups[i];

			if (!g->candidate)
				continue;
			if (!still_candidate(bgs, g)) {
				g->candidate = false;
				continue;
			}
			if (!best || bg_used(g) < bg_used(best))
				best = g;
		}
		if (!best)
			break;
		best->candidate = false;
		srsv__lock(&best->space->lock);
		ro = pool_make_ro(best->space, bg_room(best));
		srsv__unlock(&best->space->lock);
		/* Reservations hold its free bytes (btrfs_inc_block_group_ro()
		 * fails with -ENOSPC): skip it, a later sweep may mark it. */
		if (!ro)
			continue;
		best->ro_bytes = bg_room(best);
		best->readonly = true;
		best->taken = true;
		best->taken_round = cur_round;
		bgs->taken++;
		fill_info(best, &all);
		ret = 0;
		break;
	}
out:
	srsv__unlock(&bgs->lock);
	if (!ret)
		SRSV__OUT_COPY(out, all, size, size);
	return ret;
}

/* End the reclaim of taken group @g.  Lock held. */
static void reclaim_end(struct srsv__bgroups *bgs, struct srsv__bg *g,
			int result)
{
	g->taken = false;
	bgs->taken--;
	if (!result) {
		/* Relocated: read-only until the commit returns it. */
		g->unused = true;
		bgs->st.reclaimed++;
		return;
	}
	pool_clear_ro(g->space, g->ro_bytes);
	g->ro_bytes = 0;
	g->readonly = false;
	bgs->st.reclaim_failed++;
}

SRSV__EXPORT int srsv_bgroup_reclaim_done(struct srsv_ctx *ctx, uint64_t start,
					  int result)
{
	struct srsv__bgroups *bgs = cfg_of(ctx);
	struct srsv__bg *g;
	struct srsv_space *s = NULL;
	int ret = 0;

	if (!bgs)
		return -EINVAL;
	srsv__lock(&bgs->lock);
	g = lookup(bgs, start, NULL);
	if (g)
		s = g->space;
	if (result > 0)
		ret = -EINVAL;
	else if (!g)
		ret = -ENOENT;
	else if (g->start != start || !g->taken)
		ret = -EINVAL;
	else if (!result && bg_used(g))
		ret = -EBUSY;
	else
		reclaim_end(bgs, g, result);
	srsv__unlock(&bgs->lock);
	if (ret == -EINVAL)
		return bg_refused(s, start);
	return ret;
}

unsigned srsv__bgroup_reclaim_prepare(struct srsv_space *s, uint64_t *prev)
{
	struct srsv__bgroups *bgs = cfg_of(s->ctx);
	unsigned candidates = 0;

	*prev = cur_round;
	if (!bgs)
		return 0;
	srsv__lock(&bgs->lock);
	for (int k = 0; k < SRSV_POOL_COUNT; k++) {
		struct srsv_space *other = s->ctx->spaces[k];

		if (other && other != s)
			sweep(bgs, other);
	}
	for (size_t i = 0; i < bgs->nr; i++)
		candidates += bgs->groups[i]->candidate;
	if (candidates)
		cur_round = ++bgs->rounds;
	srsv__unlock(&bgs->lock);
	return candidates;
}

void srsv__bgroup_reclaim_finish(struct srsv_ctx *ctx, uint64_t prev)
{
	struct srsv__bgroups *bgs = cfg_of(ctx);
	uint64_t round = cur_round;

	cur_round = prev;
	if (!bgs || !round)
		return;
	srsv__lock(&bgs->lock);
	for (size_t i = 0; i < bgs->nr && bgs->taken; i++) {
		struct srsv__bg *g = bgs->groups[i];

		if (g->taken && g->taken_round == round)
			reclaim_end(bgs, g, bg_used(g) ? -EAGAIN : 0);
	}
	srsv__unlock(&bgs->lock);
}

/* ---- queries ---- */

SRSV__EXPORT int srsv_bgroup_get_sized(struct srsv_ctx *ctx, uint64_t bytenr,
				       struct srsv_bgroup_info *out,
				       size_t size)
{
	struct srsv__bgroups *bgs = bgs_of(ctx);
	struct srsv_bgroup_info all;
	struct srsv__bg *g;

	if (!bgs || !out || size < BG_INFO_MIN)
		return -EINVAL;
	srsv__lock(&bgs->lock);
	g = lookup(bgs, bytenr, NULL);
	if (g)
		fill_info(g, &all);
	srsv__unlock(&bgs->lock);
	if (!g)
		return -ENOENT;
	SRSV__OUT_COPY(out, all, size, size);
	return 0;
}

SRSV__EXPORT int srsv_bgroup_next_sized(struct srsv_ctx *ctx, uint64_t from,
					struct srsv_bgroup_info *out,
					size_t size)
{
	struct srsv__bgroups *bgs = bgs_of(ctx);
	struct srsv_bgroup_info all;
	size_t pos;
	int ret = -ENOENT;

	if (!bgs || !out || size < BG_INFO_MIN)
		return -EINVAL;
	srsv__lock(&bgs->lock);
	/* First group with start >= from. */
	pos = from ? upper_bound(bgs, from - 1) : 0;
	if (pos < bgs->nr) {
		fill_info(bgs->groups[pos], &all);
		ret = 0;
	}
	srsv__unlock(&bgs->lock);
	if (!ret)
		SRSV__OUT_COPY(out, all, size, size);
	return ret;
}

SRSV__EXPORT int srsv_bgroup_find_free(struct srsv_ctx *ctx,
				       enum srsv_pool pool, uint64_t bytes,
				       uint64_t *start)
{
	struct srsv__bgroups *bgs = cfg_of(ctx);
	struct srsv_space *s = bgs ? pool_space(ctx, pool) : NULL;
	int ret = -ENOSPC;

	if (!s || !start || bad_bytes(bytes))
		return -EINVAL;
	srsv__lock(&bgs->lock);
	for (size_t i = 0; i < bgs->nr; i++) {
		struct srsv__bg *g = bgs->groups[i];

		/* Zone groups are written at their write pointer: the
		 * zoned allocator's hint finds them (srsv_zone_hint()). */
		if (g->space == s && !g->zone && !g->readonly &&
		    bg_room(g) >= bytes) {
			*start = g->start;
			ret = 0;
			break;
		}
	}
	srsv__unlock(&bgs->lock);
	return ret;
}

SRSV__EXPORT int srsv_bgroup_stats_sized(struct srsv_ctx *ctx,
					 struct srsv_bgroup_stats *stats,
					 size_t size)
{
	struct srsv__bgroups *bgs = bgs_of(ctx);
	struct srsv_bgroup_stats all;

	if (!bgs || !stats ||
	    size < SRSV__OUT_MIN(struct srsv_bgroup_stats, committed))
		return -EINVAL;
	srsv__lock(&bgs->lock);
	all = bgs->st;
	all.nr_groups = bgs->nr;
	srsv__unlock(&bgs->lock);
	SRSV__OUT_COPY(stats, all, size, size);
	return 0;
}

/* ---- statfs (btrfs_statfs()) ---- */

/* @a * @b, or UINT64_MAX if that does not fit. */
static uint64_t sat_mul(uint64_t a, uint64_t b)
{
	return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

SRSV__EXPORT int srsv_ctx_statfs_sized(struct srsv_ctx *ctx,
				       struct srsv_statfs *out, size_t size)
{
	struct srsv_statfs all, *st = &all;
	struct srsv__bgroups *bgs = cfg_of(ctx);
	unsigned data_factor = bgs ? bgs->cfg.data_raid_factor : 1;
	unsigned meta_factor;
	uint64_t free_data = 0, free_meta = 0, used_data = 0, used_meta = 0;
	uint64_t used, global = 0;
	struct srsv_space *meta;
	bool mixed, meta_full = false;

	if (!ctx || !out ||
	    size < SRSV__OUT_MIN(struct srsv_statfs, metadata_full))
		return -EINVAL;
	meta_factor = ctx->cfg.metadata_raid_factor;
	mixed = ctx->spaces[SRSV_POOL_MIXED] != NULL;
	/*
	 * btrfs_statfs() sums raw bytes (each pool's times its factor) and
	 * divides by the data factor.  At most one pool is data (DATA or
	 * MIXED), so its bytes are counted in data units directly, and only
	 * the metadata and system pools are scaled: no product of a pool's
	 * bytes (up to 2^62) and a factor (up to 4) can wrap.
	 */
	for (int k = 0; k < SRSV_POOL_COUNT; k++) {
		struct srsv_space *s = ctx->spaces[k];
		uint64_t total, u, ro, zu;

		if (!s)
			continue;
		srsv__lock(&s->lock);
		total = srsv__space_counter(s, SRSV__TOTAL);
		u = srsv__space_counter(s, SRSV__USED);
		ro = srsv__space_counter(s, SRSV__READONLY);
		zu = srsv__space_counter(s, SRSV__ZONE_UNUSABLE);
		srsv__unlock(&s->lock);
		/* disk_total - disk_used, less the free bytes of read-only
		 * groups (btrfs_account_ro_block_groups_free_space()), and
		 * less what zone groups freed below their write pointers:
		 * no write gets those bytes before a reset. */
		if (s->is_data) {
			uint64_t busy = sat_add(sat_add(u, ro), zu);

			free_data += total > busy ? total - busy : 0;
			used_data += u;
		} else {
			if (k == SRSV_POOL_METADATA && total > u)
				free_meta = sat_mul(total - u, meta_factor);
			used_meta = sat_add(used_meta, u);
		}
	}
	if (ctx->std_rsv_ready[SRSV_RSV_GLOBAL])
		global = srsv__std_rsv_size(ctx, SRSV_RSV_GLOBAL);
	meta = srsv__metadata_space(ctx);
	if (meta)
		meta_full = srsv__ld(&meta->full) != 0;

	memset(st, 0, sizeof(*st));
	st->total = ctx->cfg.device_bytes / data_factor;
	/* floor((used_data * df + used_meta * mf) / df), saturated: past
	 * 2^64 it is above any total anyway. */
	used = sat_add(used_data,
		       sat_add(sat_mul(used_meta / data_factor, meta_factor),
			       used_meta % data_factor * meta_factor /
			       data_factor));
	st->free = st->total > used ? st->total - used : 0;
	/* The global reserve counts as used (it is in logical bytes). */
	st->free = st->free > global ? st->free - global : 0;
	st->avail = free_data + srsv__ld(&ctx->unallocated) / data_factor;
	/* No metadata chunk can be allocated and the global reserve does
	 * not fit in what is left: nothing can be written. */
	if (!mixed && meta_full &&
	    (free_meta < STATFS_META_THRESH ||
	     free_meta - STATFS_META_THRESH < global))
		st->avail = 0;
	st->metadata_free = mixed ? 0 : free_meta;
	st->global_rsv_size = global;
	st->metadata_full = meta_full;
	SRSV__OUT_COPY(out, all, size, size);
	return 0;
}
