/* SPDX-License-Identifier: MIT */
/*
 * Block groups for every pool, chunks and zones: one model.
 *
 * Layer: block groups, above the tickets layer (a group going back grants
 * tickets) and below the zone flavour (zoned.c), the engine-callback
 * wrapper and the flush walks.  bgroup.c never calls zoned.c: what it
 * needs of the active list it calls through the flavour's operations
 * (struct srsv__bg_flavour, bgroup.h), which zoned.c fills.
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
 * 2. Reclaim (btrfs_reclaim_bgs_work()): block groups that are not empty
 *    but underused are put on the reclaim list (btrfs_mark_bg_to_reclaim())
 *    and relocated, after which they are empty and go as in 1.  Which
 *    groups: the fixed bg_reclaim_threshold (a free that takes a group from
 *    at least the threshold to below it marks it,
 *    should_reclaim_block_group()); or, with dynamic_reclaim,
 *    calc_dynamic_reclaim_threshold(): the threshold rises from 0 to 100
 *    as unallocated space falls below calc_unalloc_target() (10 data
 *    chunks), and is 0 while the pool has less than a data chunk of unused
 *    room (relocating into nothing is pointless).  With periodic_reclaim,
 *    candidates are picked by do_reclaim_sweep(), run at a commit once a
 *    data chunk's worth of the pool was freed since the last sweep (btrfs
 *    6.11's btrfs_space_info_update_reclaimable() also subtracted
 *    allocations; upstream's later rework stopped tracking them, and so do
 *    we), or once a reclaimed group of the pool went back: a group is taken
 *    only if it is under the threshold and survived a previous sweep
 *    without an allocation (its reclaim_mark; the allocator fills holes
 *    well, so a group being written to is left alone), except in urgent
 *    reclaim (is_reclaim_urgent(): less than a data chunk unallocated),
 *    where a second pass takes fresh groups too.
 * 3. btrfs_statfs() (super.c) reports f_bavail 0 when metadata is full and
 *    cannot grow, and subtracts the global reserve (srsv_ctx_statfs()).
 *
 * ZONES ARE A FLAVOUR OF THE ONE GROUP
 *
 * btrfs has one struct btrfs_block_group with zoned fields, one unused
 * list and one reclaim list.  So here: one struct srsv__bg, whose zone
 * fields (capacity, write pointer, reserved, zone_unusable, active, open)
 * a chunk simply leaves at their neutral values, in one table per ctx
 * (so a chunk over a zone, or a zone over a chunk, is refused), with one
 * pinned-bucket implementation, one free path (srsv__bg_release()), one
 * pair of candidate lists per pool and flavour, one choice of reclaim
 * candidates (srsv__bg_choose(): the least used first, btrfs's
 * reclaim_bgs_cmp()), one claim with upstream's skip rules
 * (srsv__bg_claim()), one threshold setting and one statistics block.
 * Zoned mode changes what upstream changes:
 *
 * - where freed bytes go: below a zone's write pointer they cannot be
 *   rewritten, so they become zone_unusable (__btrfs_add_free_space_zoned())
 *   in the group and the pool, at once or at their transaction's commit;
 * - which rule marks a candidate: a zone is unused when every byte is
 *   zone_unusable, and a reclaim candidate when it is finished and its
 *   freed bytes reach the fixed threshold of its capacity (upstream reads
 *   bg_reclaim_threshold there, never the dynamic one: the dynamic rule
 *   follows unallocated space, which zones are not drawn from);
 * - what becomes of an emptied group: a chunk goes back to unallocated at
 *   the commit, a zone is reset in its pool by RESET_ZONES (zones are the
 *   device's, registered by the engine; btrfs_delete_unused_bgs() deletes
 *   a zoned group and resets its zones by discard, which has no
 *   counterpart here);
 * - who relocates: the engine takes chunks inside RECLAIM_CHUNKS
 *   (srsv_bgroup_reclaim_take(), read-only as btrfs_inc_block_group_ro()),
 *   and RECLAIM_ZONES calls the engine's zone_relocate for each zone it
 *   claimed, then resets the emptied ones in place.  Both pick from the
 *   same lists by the same order and skip rules; the two flush states stay
 *   because the two callbacks are the engine's two contracts (an engine
 *   moving extents between chunks sees a read-only group it may take;
 *   a zoned engine gets a zone to empty and never sees it read-only).
 *
 * Why fields and not a table of operations for the whole group: the
 * counters, the buckets, the lists and the claim are the same code for
 * both flavours once a chunk's zone fields are neutral, and a table with
 * alloc, free, commit and info behind pointers would keep two
 * implementations of each, the duplication this model removes.  What is
 * left to the flavour is what belongs to the active list one layer up,
 * one operation (filled) and one property (relocates); bgroup.c calls it
 * through the pointer, so the layers stay a stack.
 *
 * THE DIVISION OF LABOUR
 *
 * Only the engine knows its extents, so it reports them: which group an
 * extent went into (srsv_bgroup_alloc()), which it left and in which
 * transaction (srsv_bgroup_free()), which transaction committed
 * (srsv_ctx_commit_done()).  The library keeps, per group, the used bytes
 * and the bytes pinned per open transaction (at most two are open: the
 * committing one and the running one, so two tagged buckets), and decides
 * which groups return and when, which are candidates, and when the engine
 * must relocate.
 *
 * WHEN RELOCATION RUNS
 *
 * Upstream relocates in the background: btrfs_reclaim_bgs_work() runs in
 * a worker no ticket waits for (only the zoned RECLAIM_ZONES flush state
 * waits for it), and a ticket whose walk ends first fails with -ENOSPC.
 * Here only the engine can move extents, and the library can ask it only
 * from a flush walk: a walk about to fail its tickets while its pool is
 * full first runs RECLAIM_CHUNKS over the other pools with the urgent
 * sweep (srsv__bgroup_reclaim_prepare()), then a commit, and walks again
 * (flush.c, try_rescue()).  Such rounds run at once (two flushers,
 * priority walks), so a round is named: the groups its callback takes on
 * the thread the library called it on belong to it, and when the callback
 * returns the library ends those left taken, no others.  Engines that
 * want background relocation as well call srsv_bgroup_reclaim_take()
 * after their commits.
 *
 * POOL COUNTERS
 *
 * A group's bytes are part of its pool's total from insertion on.
 * Returning a chunk shrinks the pool by its length; that must never
 * overcommit the pool, so the chunk's bytes that are not yet readonly are
 * claimed through may_use first with a compare-and-swap (the admission of
 * srsv_space_set_readonly(), ordered with lock-free reservations), then
 * total and readonly drop, then may_use.  If they are not free the group
 * stays and is tried at the next commit (traced as skip_unused).
 *
 * LOCKS (one rule for both flavours), in the order they nest:
 *
 *   table lock  ->  group lock  ->  pool lock
 *   group lock  ->  zoned.c's active-list lock   (leaf)
 *   any of them ->  list lock                    (leaf)
 *
 * - The table lock (bgs->lock) protects the sorted table, the per-pool
 *   group counts, the committed transaction, the reclaim rounds and the
 *   periodic-reclaim readiness.  Every call that names a group by address
 *   takes it; the zoned allocation path (hint, activate, alloc, written,
 *   free and abandon through a group pointer) and the RESET_ZONES /
 *   RECLAIM_ZONES passes never do, so a commit walking the table does not
 *   stall a zone writer.  Groups leave the table only under it, and zones
 *   never leave it before the ctx is destroyed, so a zone pointer stays
 *   valid.
 * - A group's lock protects every field of the group that changes
 *   (counters, pinned buckets, flags); the counters are AO_t words so
 *   that the hint, the choice of candidates and statfs may read them
 *   without it.
 * - The list lock (bgs->list_lock) protects the candidate lists and each
 *   group's on[] marks.  A chunk's list entries change only under the
 *   table lock as well (every chunk call holds it), so a table-lock
 *   holder may walk the chunk lists without the list lock.
 * - The statistics are AO_t counters, lock-free.
 *
 * Cost: the extent calls are a binary search; the commit, the sweeps and
 * find_free walk the table, O(groups), a few thousand on a large device,
 * never on the reservation path; the passes look only at the candidates.
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

/* The RECLAIM_CHUNKS round this thread is in (0: none). */
static _Thread_local uint64_t cur_round;

/* First size of the group table (doubling from there). */
#define TABLE_FIRST 64
/* btrfs_statfs(): metadata counts as exhausted below this much free
 * room above the global reserve (observed deltas were ~2 MiB). */
#define STATFS_META_THRESH (UINT64_C(4) << 20)

/* The statistics block, in struct srsv_bgroup_stats's order. */
enum {
	ST_ADDED, ST_RETURNED, ST_RECLAIMED, ST_RECLAIM_FAILED, ST_SWEEPS,
	ST_MARKED, ST_RECLAIMED_BYTES, ST_RESETS, ST_LOOKED, ST_COUNT
};

struct srsv__bgroups {
	struct srsv_ctx *ctx;
	/* Defaults until srsv_bgroups_init() configures the table (under
	 * lock, then configured is set with release); immutable from then. */
	struct srsv_bgroup_config cfg;
	volatile AO_t configured;
	/* The fixed threshold (cfg.reclaim_threshold_pct), for the zone
	 * paths that do not take the table lock. */
	volatile AO_t fixed_pct;
	struct srsv__lock lock;
	/* Protected by lock. */
	struct srsv__bg **groups;		/* sorted by start */
	size_t nr, alloc;
	size_t nr_in[SRSV_POOL_COUNT];
	uint64_t committed;
	unsigned taken;
	uint64_t rounds;			/* RECLAIM_CHUNKS rounds begun */
	uint64_t reclaimable[SRSV_POOL_COUNT];	/* freed since a sweep */
	bool ready[SRSV_POOL_COUNT];

	struct srsv__lock list_lock;		/* leaf */
	/* Protected by list_lock: [zone?][pool][list]. */
	struct srsv__list lists[2][SRSV_POOL_COUNT][SRSV__BG_LISTS];

	volatile AO_t st[ST_COUNT];
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

static void count(struct srsv__bgroups *bgs, int stat, uint64_t n)
{
	AO_fetch_and_add(&bgs->st[stat], (AO_t)n);
}

/* Raw device bytes per byte of @s (its profile's factor). */
static unsigned factor_of(const struct srsv__bgroups *bgs,
			  const struct srsv_space *s)
{
	return s->is_data ? bgs->cfg.data_raid_factor :
			    bgs->ctx->cfg.metadata_raid_factor;
}

static uint64_t bg_used(const struct srsv__bg *g)
{
	return srsv__ld(&g->used);
}

/* Bytes an allocation may still get: below a zone's capacity, past its
 * write pointer; in a chunk, what is neither used nor pinned. */
static uint64_t bg_room(const struct srsv__bg *g)
{
	if (g->flavour)
		return g->capacity - srsv__ld(&g->alloc_offset);
	return g->length - bg_used(g) - srsv__bg_pinned(g);
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

static void trace_bg(int event, const struct srsv__bg *g)
{
	srsv__trace_block_group(event, g->start, g->space->kind, g->length,
				bg_used(g), srsv__ld(&g->zone_unusable));
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

bool srsv__cfg_known(const void *cfg, size_t known, size_t size)
{
	const unsigned char *p = cfg;

	/* A caller built against a newer header may pass a larger struct:
	 * fine as long as every field this library does not know is 0. */
	if (size < known)
		return false;
	for (size_t i = known; i < size; i++)
		if (p[i])
			return false;
	return true;
}

static void table_free(struct srsv__bgroups *bgs)
{
	srsv__lock_destroy(&bgs->list_lock);
	srsv__lock_destroy(&bgs->lock);
	free(bgs);
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
	if (srsv__lock_init(&bgs->list_lock)) {
		srsv__lock_destroy(&bgs->lock);
		free(bgs);
		return NULL;
	}
	for (int f = 0; f < 2; f++)
		for (int k = 0; k < SRSV_POOL_COUNT; k++)
			for (int l = 0; l < SRSV__BG_LISTS; l++)
				srsv__list_init(&bgs->lists[f][k][l]);
	bgs->ctx = ctx;
	srsv_bgroup_config_init(&bgs->cfg);
	return bgs;
}

struct srsv__bgroups *srsv__bgroups_table(struct srsv_ctx *ctx,
					  unsigned zoned_pct)
{
	struct srsv__bgroups *bgs = bgs_of(ctx);

	if (!bgs) {
		bgs = table_new(ctx);
		if (!bgs)
			return NULL;
		/* Full barrier: readers find the table lock-free. */
		if (!AO_compare_and_swap_full(slot(ctx), 0,
					      (AO_t)(uintptr_t)bgs)) {
			table_free(bgs);
			bgs = bgs_of(ctx);
		}
	}
	if (zoned_pct) {
		srsv__lock(&bgs->lock);
		if (!AO_load(&bgs->configured)) {
			bgs->cfg.reclaim_threshold_pct = zoned_pct;
			srsv__st(&bgs->fixed_pct, zoned_pct);
		}
		srsv__unlock(&bgs->lock);
	}
	return bgs;
}

SRSV__EXPORT int srsv_bgroups_init(struct srsv_ctx *ctx,
				   const struct srsv_bgroup_config *cfg)
{
	struct srsv__bgroups *bgs;
	int ret = 0;

	if (!ctx || !cfg || !srsv__cfg_known(cfg, sizeof(*cfg), cfg->size))
		return -EINVAL;
	if (cfg->reclaim_threshold_pct > 100 || !cfg->data_raid_factor ||
	    cfg->data_raid_factor > 4)
		return -EINVAL;
	/* A zoned ctx already has its table (its zones are in it). */
	bgs = srsv__bgroups_table(ctx, 0);
	if (!bgs)
		return -ENOMEM;
	srsv__lock(&bgs->lock);
	if (AO_load(&bgs->configured)) {
		ret = -EALREADY;
	} else {
		bgs->cfg = *cfg;
		bgs->cfg.size = sizeof(bgs->cfg);
		srsv__st(&bgs->fixed_pct, cfg->reclaim_threshold_pct);
		AO_store_release(&bgs->configured, 1);
	}
	srsv__unlock(&bgs->lock);
	return ret;
}

static void bg_destroy(struct srsv__bg *g)
{
	srsv__lock_destroy(&g->lock);
	free(g);
}

void srsv__bgroups_ctx_destroy(struct srsv_ctx *ctx)
{
	struct srsv__bgroups *bgs = bgs_of(ctx);

	if (!bgs)
		return;
	for (size_t i = 0; i < bgs->nr; i++)
		bg_destroy(bgs->groups[i]);
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

/* ---- candidates: the rules of each flavour, the lists ---- */

/* calc_effective_data_chunk_size(). */
static uint64_t data_chunk(const struct srsv__bgroups *bgs)
{
	return bgs->ctx->data_chunk_allowance;
}

/* btrfs's calc_pct_ratio(): 100 * @x / @y, losing low bits rather than
 * overflowing; 0 when @y is 0. */
static uint64_t calc_pct_ratio(uint64_t x, uint64_t y)
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
	return (unsigned)calc_pct_ratio(want, target);
}

/* btrfs_calc_reclaim_threshold(). */
static unsigned reclaim_threshold(const struct srsv__bgroups *bgs,
				  const struct srsv_space *s)
{
	if (bgs->cfg.dynamic_reclaim)
		return dynamic_threshold(bgs, s);
	return (unsigned)srsv__ld(&bgs->fixed_pct);
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

/* A zone with every byte freed and nothing outstanding: to be reset. */
bool srsv__bg_resettable(const struct srsv__bg *g)
{
	return !g->active && !bg_used(g) && !srsv__ld(&g->reserved) &&
	       !srsv__bg_pinned(g) && srsv__ld(&g->zone_unusable) == g->length;
}

/*
 * A zone worth relocating (__btrfs_add_free_space_zoned()): finished,
 * nothing outstanding or pinned, and the bytes freed below its write
 * pointer reach the fixed threshold of its capacity (0: off).  Lock-free
 * for the choice; @g's lock held to decide.
 */
static bool zone_sparse(const struct srsv__bg *g, bool locked)
{
	unsigned pct = (unsigned)srsv__ld(&g->bgs->fixed_pct);
	uint64_t freed = srsv__ld(&g->zone_unusable) -
			 (g->length - g->capacity);

	return pct && (!locked || (!g->active && !srsv__bg_pinned(g))) &&
	       srsv__bg_full(g) && !srsv__ld(&g->reserved) && bg_used(g) &&
	       freed >= srsv__mult_perc(g->capacity, pct);
}

/* A chunk still under the threshold, or empty (the claim then sends it
 * to the unused list).  Table lock held. */
static bool chunk_candidate(const struct srsv__bg *g)
{
	return !g->readonly && !g->on[SRSV__BG_UNUSED] &&
	       (!bg_used(g) || bg_used(g) <
		srsv__mult_perc(g->length,
				reclaim_threshold(g->bgs, g->space)));
}

static struct srsv__list *list_of(const struct srsv__bg *g, int which)
{
	return &g->bgs->lists[g->flavour != NULL][g->space->kind][which];
}

/* Put @g on list @which (btrfs_mark_bg_unused(), _to_reclaim()). */
static void mark(struct srsv__bg *g, int which)
{
	struct srsv__bgroups *bgs = g->bgs;
	bool added = false;

	srsv__lock(&bgs->list_lock);
	if (!g->on[which]) {
		srsv__list_add_tail(&g->node[which], list_of(g, which));
		g->on[which] = true;
		added = true;
	}
	srsv__unlock(&bgs->list_lock);
	if (!added)
		return;
	if (which == SRSV__BG_RECLAIM)
		count(bgs, ST_MARKED, 1);
	trace_bg(which == SRSV__BG_UNUSED ? SRSV__TRACE_BG_ADD_UNUSED :
		 SRSV__TRACE_BG_ADD_RECLAIM, g);
}

static void unmark(struct srsv__bg *g, int which)
{
	srsv__lock(&g->bgs->list_lock);
	if (g->on[which]) {
		srsv__list_del_init(&g->node[which]);
		g->on[which] = false;
	}
	srsv__unlock(&g->bgs->list_lock);
}

void srsv__bg_queue(struct srsv__bg *g)
{
	bool unused;

	srsv__assert_held(&g->lock);
	/* A busy zone is queued by its pass when it lets go. */
	if (!g->flavour || g->busy)
		return;
	/* A zone on the reclaim list that became resettable stays there
	 * too (a pass drops it when it finds it no longer sparse). */
	unused = srsv__bg_resettable(g);
	if (unused)
		mark(g, SRSV__BG_UNUSED);
	/* Without a relocating engine no pass would take it. */
	else if (g->flavour->relocates && zone_sparse(g, true))
		mark(g, SRSV__BG_RECLAIM);
}

/* should_reclaim_block_group(): this free took @g from at least the
 * threshold to below it (a group that was below already is likely new). */
static bool should_reclaim(const struct srsv__bg *g, uint64_t freed)
{
	unsigned pct = reclaim_threshold(g->bgs, g->space);
	uint64_t thresh = srsv__mult_perc(g->length, pct);

	return pct && bg_used(g) + freed >= thresh && bg_used(g) < thresh;
}

/*
 * do_reclaim_sweep() over the chunks of @s: a chunk under the threshold
 * that survived a sweep without an allocation becomes a candidate; every
 * chunk's mark goes up.  Urgent: if no stale chunk qualified, a second
 * pass (by now every mark is at least 1) takes fresh ones too.  Zones
 * have their own rule.  Table lock held.
 */
static void sweep(struct srsv__bgroups *bgs, struct srsv_space *s)
{
	unsigned pct = reclaim_threshold(bgs, s);
	bool urgent = srsv__ld(&bgs->ctx->unallocated) < data_chunk(bgs);
	bool will_reclaim = false;

	srsv__assert_held(&bgs->lock);
	count(bgs, ST_SWEEPS, 1);
again:
	for (size_t i = 0; i < bgs->nr; i++) {
		struct srsv__bg *g = bgs->groups[i];

		/* Emptied chunks return at the commit anyway. */
		if (g->space != s || g->flavour || g->readonly ||
		    g->on[SRSV__BG_UNUSED])
			continue;
		srsv__lock(&g->lock);
		if (bg_used(g) < srsv__mult_perc(g->length, pct) &&
		    g->reclaim_mark) {
			will_reclaim = true;
			mark(g, SRSV__BG_RECLAIM);
		}
		if (g->reclaim_mark < UINT_MAX)
			g->reclaim_mark++;
		srsv__unlock(&g->lock);
	}
	if (!will_reclaim && urgent) {
		urgent = false;
		goto again;
	}
}

/* Not inlined into reclaim_take (a batch of one): gcc's -O3 then warns
 * about batch[1], on a path max = 1 never takes. */
__attribute__((noinline))
unsigned srsv__bg_choose(struct srsv__bgroups *bgs, struct srsv_space *s,
			 const struct srsv__bg_flavour *flavour,
			 struct srsv__bg **batch, unsigned max)
{
	int zone = flavour != NULL;
	struct srsv__list drop, *n, *next;
	unsigned nr = 0;
	uint64_t looked = 0;

	srsv__list_init(&drop);
	srsv__lock(&bgs->list_lock);
	for (int k = 0; k < SRSV_POOL_COUNT; k++) {
		struct srsv__list *h = &bgs->lists[zone][k][SRSV__BG_RECLAIM];

		if (s && s->kind != k)
			continue;
		for (n = h->next; n != h; n = next) {
			struct srsv__bg *g = srsv__container_of(n,
					struct srsv__bg, node[SRSV__BG_RECLAIM]);
			uint64_t used = bg_used(g);
			unsigned i;

			next = n->next;
			looked++;
			if (zone ? !zone_sparse(g, false) :
				   !chunk_candidate(g)) {
				/* A zone is re-queued under its lock below
				 * (still marked meanwhile: nobody relinks
				 * it); a chunk just leaves. */
				srsv__list_del_init(n);
				if (zone)
					srsv__list_add_tail(n, &drop);
				else
					g->on[SRSV__BG_RECLAIM] = false;
				continue;
			}
			if (nr == max && used >= bg_used(batch[nr - 1]))
				continue;
			/* Insertion, kept sorted by used bytes (ties: queue
			 * order, as list_sort() is stable). */
			if (nr < max)
				nr++;
			for (i = nr - 1; i > 0 && bg_used(batch[i - 1]) > used;
			     i--)
				batch[i] = batch[i - 1];
			batch[i] = g;
		}
	}
	for (unsigned i = 0; i < nr; i++) {
		srsv__list_del_init(&batch[i]->node[SRSV__BG_RECLAIM]);
		batch[i]->on[SRSV__BG_RECLAIM] = false;
	}
	srsv__unlock(&bgs->list_lock);
	count(bgs, ST_LOOKED, looked);
	while (!srsv__list_empty(&drop)) {
		struct srsv__bg *g = srsv__container_of(drop.next,
				struct srsv__bg, node[SRSV__BG_RECLAIM]);

		srsv__list_del_init(&g->node[SRSV__BG_RECLAIM]);
		srsv__lock(&g->lock);
		srsv__lock(&bgs->list_lock);
		g->on[SRSV__BG_RECLAIM] = false;
		srsv__unlock(&bgs->list_lock);
		srsv__bg_queue(g);
		srsv__unlock(&g->lock);
	}
	return nr;
}

struct srsv__bg *srsv__bg_pop_unused(struct srsv_space *s)
{
	struct srsv__bgroups *bgs = bgs_of(s->ctx);
	struct srsv__list *h;
	struct srsv__bg *g = NULL;

	if (!bgs)
		return NULL;
	h = &bgs->lists[1][s->kind][SRSV__BG_UNUSED];
	srsv__lock(&bgs->list_lock);
	if (!srsv__list_empty(h)) {
		g = srsv__container_of(h->next, struct srsv__bg,
				       node[SRSV__BG_UNUSED]);
		srsv__list_del_init(&g->node[SRSV__BG_UNUSED]);
		g->on[SRSV__BG_UNUSED] = false;
	}
	srsv__unlock(&bgs->list_lock);
	if (g)
		count(bgs, ST_LOOKED, 1);
	return g;
}

/* ---- pool counters ---- */

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

/*
 * Grow @g's pool by @g.  Table lock held: it ranks above the pool lock,
 * and nothing on the reservation or zoned allocation path takes it.
 */
static int pool_grow(struct srsv__bgroups *bgs, struct srsv__bg *g)
{
	struct srsv_space *s = g->space;
	struct srsv_ctx *ctx = bgs->ctx;
	uint64_t tail = g->length - g->capacity;
	int ret = 0;

	srsv__assert_held(&bgs->lock);
	srsv__lock(&s->lock);
	if (srsv__space_counter(s, SRSV__TOTAL) + g->length > SRSV_MAX_BYTES) {
		ret = -EINVAL;
	} else if (g->flavour) {
		/* A zone: the unwritable tail is claimed before the total
		 * grows, so a lock-free admission never sees it as free. */
		srsv__capacity_begin(s);
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
		srsv__capacity_end(s);
	} else if (g->length > UINT64_MAX / factor_of(bgs, s) ||
		   !srsv__ao_sub_checked(&ctx->unallocated,
					 g->length * factor_of(bgs, s))) {
		/* length <= 2^62 and factor <= 4: 2^64 raw bytes would wrap,
		 * and no device has them. */
		ret = -ENOSPC;
	} else {
		/* Unallocated first, then the pool: overcommit never counts
		 * the chunk twice. */
		srsv__capacity_begin(s);
		srsv__space_update(s, SRSV__TOTAL, (int64_t)g->length);
		srsv__capacity_end(s);
	}
	if (!ret) {
		/* New capacity: btrfs_add_bg_to_space_info() clears full;
		 * the reserves are refilled before the tickets are offered
		 * it, as for any space that comes back. */
		srsv__st(&s->full, 0);
		if (srsv__reserves_refill(s, g->length - tail, false))
			srsv__try_grant_tickets(s);
	}
	srsv__unlock(&s->lock);
	return ret;
}

/*
 * Shrink the pool by chunk @g and give its raw bytes back to unallocated
 * (btrfs_remove_block_group()).  -ENOSPC, nothing changed, when the part
 * of the group that is not readonly yet is not free.  Table lock held;
 * @g is freed.
 */
static int give_back(struct srsv__bgroups *bgs, struct srsv__bg *g)
{
	struct srsv_space *s = g->space;
	uint64_t rest = g->length - g->ro_bytes;
	struct srsv_ctx *ctx = bgs->ctx;
	size_t pos = 0;

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
	srsv__capacity_begin(s);
	srsv__space_update(s, SRSV__TOTAL, -(int64_t)g->length);
	if (g->ro_bytes)
		srsv__space_update(s, SRSV__READONLY, -(int64_t)g->ro_bytes);
	if (rest)
		srsv__may_use_sub(s, rest);
	srsv__capacity_end(s);
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
	trace_bg(SRSV__TRACE_BG_REMOVE, g);
	unmark(g, SRSV__BG_UNUSED);
	unmark(g, SRSV__BG_RECLAIM);
	lookup(bgs, g->start, &pos);
	memmove(&bgs->groups[pos], &bgs->groups[pos + 1],
		(bgs->nr - pos - 1) * sizeof(*bgs->groups));
	bgs->nr--;
	bgs->nr_in[s->kind]--;
	count(bgs, ST_RETURNED, 1);
	bg_destroy(g);
	return 0;
}

/* ---- groups in ---- */

int srsv__bgroup_insert(struct srsv_ctx *ctx, struct srsv__bg *g)
{
	struct srsv__bgroups *bgs = srsv__bgroups_table(ctx, 0);
	uint64_t start = g->start, length = g->length;
	size_t pos;
	int ret;

	if (!bgs)
		return -ENOMEM;
	ret = srsv__lock_init(&g->lock);
	if (ret)
		return ret;
	g->bgs = bgs;
	srsv__st(&g->zone_unusable, length - g->capacity);
	for (int l = 0; l < SRSV__BG_LISTS; l++)
		srsv__list_init(&g->node[l]);
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
	ret = pool_grow(bgs, g);
	if (ret)
		goto out;
	memmove(&bgs->groups[pos + 1], &bgs->groups[pos],
		(bgs->nr - pos) * sizeof(*bgs->groups));
	bgs->groups[pos] = g;
	bgs->nr++;
	bgs->nr_in[g->space->kind]++;
	count(bgs, ST_ADDED, 1);
out:
	srsv__unlock(&bgs->lock);
	if (ret)
		srsv__lock_destroy(&g->lock);
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
	g->length = g->capacity = length;
	g->space = s;
	ret = srsv__bgroup_insert(ctx, g);
	if (ret)
		free(g);
	return ret;
}

/* ---- extents: the one alloc and free ---- */

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
	if (ret)
		goto out;
	srsv__lock(&g->lock);
	if (g->flavour) {
		/* At the write pointer and nowhere else; the engine reports
		 * an extent it placed and referenced (srsv_zone_group_alloc()
		 * and _written() in one). */
		uint64_t off = srsv__ld(&g->alloc_offset);

		ret = bytenr != g->start + off ? -EINVAL :
		      srsv__bg_advance(g, bytes, true, &off);
	} else if (g->readonly) {
		ret = -EROFS;
	} else if (bytes > bg_room(g)) {
		ret = -EINVAL;
	} else {
		srsv__st(&g->used, bg_used(g) + bytes);
		g->reclaim_mark = 0;
		unmark(g, SRSV__BG_UNUSED);
	}
	srsv__unlock(&g->lock);
out:
	srsv__unlock(&bgs->lock);
	if (ret == -EINVAL)
		bg_refused(pool_space(ctx, pool), bytes);
	return ret;
}

/* A chunk's candidacy after a free of @bytes.  Table and group locks
 * held. */
static void chunk_freed(struct srsv__bg *g, uint64_t bytes)
{
	struct srsv__bgroups *bgs = g->bgs;

	if (bgs->cfg.periodic_reclaim) {
		int kind = g->space->kind;

		/* btrfs_space_info_update_reclaimable(): a data chunk's
		 * worth freed makes the pool worth a sweep. */
		bgs->reclaimable[kind] += bytes;
		if (bgs->reclaimable[kind] >= data_chunk(bgs))
			bgs->ready[kind] = true;
	}
	if (!bg_used(g))
		mark(g, SRSV__BG_UNUSED);
	else if (!bgs->cfg.periodic_reclaim && !g->readonly &&
		 should_reclaim(g, bytes))
		mark(g, SRSV__BG_RECLAIM);
}

int srsv__bg_release(struct srsv__bg *g, enum srsv__counter from,
		     uint64_t bytes, uint64_t transid)
{
	volatile AO_t *word = from == SRSV__USED ? &g->used : &g->reserved;
	uint64_t have = srsv__ld(word);

	srsv__assert_held(&g->lock);
	if (bad_bytes(bytes) || have < bytes)
		return -EINVAL;
	if (!transid && g->flavour) {
		/* Below the write pointer: zone_unusable grows before @from
		 * drops (the move adds first), in the pool and the group. */
		int ret;

		srsv__lock(&g->space->lock);
		ret = srsv__space_move(g->space, from, SRSV__ZONE_UNUSABLE,
				       bytes);
		srsv__unlock(&g->space->lock);
		if (ret)
			return ret;
		srsv__st(&g->zone_unusable,
			 srsv__ld(&g->zone_unusable) + bytes);
	}
	srsv__st(word, have - bytes);
	if (transid) {
		/* Still referenced by the last committed state: pinned in
		 * the group until that transaction commits (a zone's pool
		 * keeps them as used meanwhile). */
		g->pinned[transid & 1] += bytes;
		g->pinned_trans[transid & 1] = transid;
	}
	if (g->flavour)
		srsv__bg_queue(g);
	else
		chunk_freed(g, bytes);
	return 0;
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
	srsv__lock(&g->lock);
	if (transid && (transid <= bgs->committed ||
			(g->pinned[b] && g->pinned_trans[b] != transid)))
		ret = -EINVAL;
	else
		ret = srsv__bg_release(g, SRSV__USED, bytes, transid);
	srsv__unlock(&g->lock);
out:
	srsv__unlock(&bgs->lock);
	if (ret == -EINVAL)
		bg_refused(pool_space(ctx, pool), bytes);
	return ret;
}

/* ---- the commit: unpin, give emptied chunks back, sweep ---- */

/*
 * Transaction @transid committed: @g's bytes pinned up to it leave the
 * group.  A zone's become zone_unusable (pool: used -> zone_unusable,
 * refused only if the pool lost used bytes behind our back: then they
 * stay pinned); a read-only chunk's stay out of reach
 * (unpin_extent_range() adds them to bytes_readonly).  Group lock held.
 */
static void unpin(struct srsv__bg *g, uint64_t transid)
{
	uint64_t freed = 0;
	bool done[2] = { false, false };

	srsv__assert_held(&g->lock);
	for (int b = 0; b < 2; b++) {
		if (g->pinned[b] && g->pinned_trans[b] <= transid) {
			freed += g->pinned[b];
			done[b] = true;
		}
	}
	if (!freed)
		return;
	srsv__lock(&g->space->lock);
	if (g->flavour) {
		if (srsv__space_move(g->space, SRSV__USED,
				     SRSV__ZONE_UNUSABLE, freed)) {
			srsv__unlock(&g->space->lock);
			return;
		}
		srsv__st(&g->zone_unusable,
			 srsv__ld(&g->zone_unusable) + freed);
	} else if (g->readonly && pool_make_ro(g->space, freed)) {
		g->ro_bytes += freed;
	}
	srsv__unlock(&g->space->lock);
	for (int b = 0; b < 2; b++)
		if (done[b])
			g->pinned[b] = 0;
	srsv__bg_queue(g);
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
	for (size_t i = 0; i < bgs->nr; i++) {
		srsv__lock(&bgs->groups[i]->lock);
		unpin(bgs->groups[i], transid);
		srsv__unlock(&bgs->groups[i]->lock);
	}
	/* btrfs_delete_unused_bgs() over the chunks' unused lists (the
	 * zones' are RESET_ZONES's).  Chunk lists change only under the
	 * table lock, held. */
	for (int k = 0; k < SRSV_POOL_COUNT; k++) {
		struct srsv__list *h = &bgs->lists[0][k][SRSV__BG_UNUSED];
		struct srsv__list *n, *next;

		for (n = h->next; n != h; n = next) {
			struct srsv__bg *g = srsv__container_of(n,
					struct srsv__bg, node[SRSV__BG_UNUSED]);

			next = n->next;
			/* Pinned, in reclaim, or the last of its pool (its
			 * profile would be lost): it stays, tried again at
			 * the next commit. */
			if (srsv__bg_pinned(g) || g->busy ||
			    bgs->nr_in[k] <= 1 || give_back(bgs, g))
				trace_bg(SRSV__TRACE_BG_SKIP_UNUSED, g);
			else
				returned++;
		}
	}
	if (bgs->cfg.periodic_reclaim) {
		for (int k = 0; k < SRSV_POOL_COUNT; k++) {
			/* btrfs_should_periodic_reclaim(): once per
			 * readiness. */
			if (!ctx->spaces[k] || !bgs->ready[k])
				continue;
			bgs->ready[k] = false;
			bgs->reclaimable[k] = 0;
			sweep(bgs, ctx->spaces[k]);
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
	int ret = 0;

	if (!bgs)
		return -EINVAL;
	s = pool_space(ctx, pool);
	if (!s)
		return -EINVAL;
	srsv__lock(&bgs->lock);
	g = lookup(bgs, start, NULL);
	if (!g)
		ret = -ENOENT;
	else if (g->start != start || g->space != s || g->flavour)
		ret = -EINVAL;
	if (!ret) {
		srsv__lock(&g->lock);
		if (bg_used(g) || srsv__bg_pinned(g) || g->busy)
			ret = -EBUSY;
		srsv__unlock(&g->lock);
	}
	if (!ret)
		ret = give_back(bgs, g);
	srsv__unlock(&bgs->lock);
	if (ret == -EINVAL)
		return bg_refused(s, start);
	if (!ret)
		srsv__grant_metadata_tickets(ctx);
	return ret;
}

/* ---- reclaim: the one claim, counted and traced ---- */

bool srsv__bg_claim(struct srsv__bg *g, bool reset)
{
	struct srsv_space *s = g->space;
	uint64_t room;

	srsv__assert_held(&g->lock);
	if (reset) {
		if (g->busy || !srsv__bg_resettable(g))
			return false;
		g->busy = true;
		return true;
	}
	/* btrfs_reclaim_block_group(): new allocations, outstanding ones,
	 * pinned bytes or another reclaim: not now. */
	if (g->busy || g->readonly || srsv__bg_pinned(g) ||
	    srsv__ld(&g->reserved))
		return false;
	/* Emptied since it was queued: the unused list frees it for less. */
	if (!bg_used(g)) {
		if (g->flavour)
			srsv__bg_queue(g);
		else
			mark(g, SRSV__BG_UNUSED);
		return false;
	}
	/* No longer worth it (filled again since). */
	if (g->flavour ? !zone_sparse(g, true) : !chunk_candidate(g))
		return false;
	if (!g->flavour) {
		/* btrfs_inc_block_group_ro(): its free bytes become the
		 * pool's readonly bytes, or (reservations hold them) not
		 * now, a later sweep may mark it again. */
		room = bg_room(g);
		srsv__lock(&s->lock);
		if (!pool_make_ro(s, room)) {
			srsv__unlock(&s->lock);
			return false;
		}
		srsv__unlock(&s->lock);
		g->ro_bytes = room;
		g->readonly = true;
	}
	g->busy = true;
	/* Upstream counts used + reserved as the bytes a relocation moves. */
	g->moving = bg_used(g) + srsv__ld(&g->reserved);
	trace_bg(SRSV__TRACE_BG_RECLAIM, g);
	return true;
}

void srsv__bg_reclaim_counted(struct srsv__bg *g, int result)
{
	if (result) {
		count(g->bgs, ST_RECLAIM_FAILED, 1);
		return;
	}
	count(g->bgs, ST_RECLAIMED, 1);
	count(g->bgs, ST_RECLAIMED_BYTES, g->moving);
}

uint64_t srsv__bg_reset(struct srsv__bg *g)
{
	struct srsv_space *s = g->space;
	uint64_t freed = 0;

	srsv__assert_held(&g->lock);
	if (srsv__bg_resettable(g)) {
		srsv__lock(&s->lock);
		if (!srsv__space_update(s, SRSV__ZONE_UNUSABLE,
					-(int64_t)g->capacity)) {
			srsv__st(&g->alloc_offset, 0);
			srsv__st(&g->zone_unusable, g->length - g->capacity);
			freed = g->capacity;
			if (srsv__reserves_refill(s, freed, false))
				srsv__try_grant_tickets(s);
		}
		srsv__unlock(&s->lock);
	}
	g->busy = false;
	if (freed)
		count(g->bgs, ST_RESETS, 1);
	return freed;
}

void srsv__bg_zone_stats(struct srsv__bgroups *bgs, uint64_t *resets,
			 uint64_t *reclaimed, uint64_t *looked)
{
	*resets = srsv__ld(&bgs->st[ST_RESETS]);
	*reclaimed = srsv__ld(&bgs->st[ST_RECLAIMED]);
	*looked = srsv__ld(&bgs->st[ST_LOOKED]);
}

/* ---- chunk reclaim: the engine's side ---- */

/* A group's state for the caller.  Table lock held. */
static void fill_info(struct srsv__bg *g, struct srsv_bgroup_info *info)
{
	memset(info, 0, sizeof(*info));
	srsv__lock(&g->lock);
	info->start = g->start;
	info->length = g->length;
	info->used = bg_used(g);
	info->pinned = srsv__bg_pinned(g);
	info->pool = g->space->kind;
	info->reclaim_mark = g->reclaim_mark;
	info->readonly = g->readonly;
	srsv__lock(&g->bgs->list_lock);
	/* A zone's unused: every byte unusable, RESET_ZONES resets it. */
	info->unused = g->flavour ? srsv__bg_resettable(g) :
				    g->on[SRSV__BG_UNUSED];
	info->candidate = g->on[SRSV__BG_RECLAIM];
	srsv__unlock(&g->bgs->list_lock);
	srsv__unlock(&g->lock);
}

/* The first layout of struct srsv_bgroup_info (0.1.0). */
#define BG_INFO_MIN SRSV__OUT_MIN(struct srsv_bgroup_info, candidate)

SRSV__EXPORT int srsv_bgroup_reclaim_take_sized(struct srsv_ctx *ctx,
						struct srsv_bgroup_info *out,
						size_t size)
{
	struct srsv__bgroups *bgs = cfg_of(ctx);
	struct srsv_bgroup_info all;
	struct srsv__bg *g = NULL;
	int ret = -ENOENT;

	if (!bgs || !out || size < BG_INFO_MIN)
		return -EINVAL;
	srsv__lock(&bgs->lock);
	if (bgs->taken >= SRSV_BGROUP_RECLAIM_BATCH)
		ret = -EBUSY;
	while (ret == -ENOENT && srsv__bg_choose(bgs, NULL, NULL, &g, 1)) {
		bool claimed;

		srsv__lock(&g->lock);
		claimed = srsv__bg_claim(g, false);
		if (claimed)
			g->taken_round = cur_round;
		srsv__unlock(&g->lock);
		if (!claimed)
			continue;
		bgs->taken++;
		fill_info(g, &all);
		ret = 0;
	}
	srsv__unlock(&bgs->lock);
	if (!ret)
		SRSV__OUT_COPY(out, all, size, size);
	return ret;
}

/* End the reclaim of taken chunk @g.  Table lock held. */
static void reclaim_end(struct srsv__bgroups *bgs, struct srsv__bg *g,
			int result)
{
	srsv__lock(&g->lock);
	g->busy = false;
	srsv__bg_reclaim_counted(g, result);
	if (result) {
		/* btrfs_dec_block_group_ro(). */
		srsv__lock(&g->space->lock);
		if (!srsv__space_update(g->space, SRSV__READONLY,
					-(int64_t)g->ro_bytes) &&
		    srsv__reserves_refill(g->space, g->ro_bytes, false))
			srsv__try_grant_tickets(g->space);
		srsv__unlock(&g->space->lock);
		g->ro_bytes = 0;
		g->readonly = false;
	} else {
		/* Relocated: read-only until the commit returns it. */
		mark(g, SRSV__BG_UNUSED);
	}
	srsv__unlock(&g->lock);
	bgs->taken--;
}

SRSV__EXPORT int srsv_bgroup_reclaim_done(struct srsv_ctx *ctx, uint64_t start,
					  int result)
{
	struct srsv__bgroups *bgs = cfg_of(ctx);
	struct srsv__bg *g;
	int ret = 0;

	if (!bgs)
		return -EINVAL;
	srsv__lock(&bgs->lock);
	g = lookup(bgs, start, NULL);
	if (result > 0)
		ret = -EINVAL;
	else if (!g)
		ret = -ENOENT;
	else if (g->start != start || g->flavour || !g->busy)
		ret = -EINVAL;
	else if (!result && bg_used(g))
		ret = -EBUSY;
	else
		reclaim_end(bgs, g, result);
	srsv__unlock(&bgs->lock);
	if (ret == -EINVAL)
		return bg_refused(g ? g->space : NULL, start);
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
		struct srsv__list *h = &bgs->lists[0][k][SRSV__BG_RECLAIM];

		if (other && other != s)
			sweep(bgs, other);
		for (struct srsv__list *n = h->next; n != h; n = n->next)
			candidates++;
	}
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

		if (!g->flavour && g->busy && g->taken_round == round)
			reclaim_end(bgs, g, bg_used(g) ? -EAGAIN : 0);
	}
	srsv__unlock(&bgs->lock);
}

/* ---- queries ---- */

/* The group covering @addr, or (@next) the first starting at or after
 * it, for the caller. */
static int query(struct srsv_ctx *ctx, uint64_t addr, bool next,
		 struct srsv_bgroup_info *out, size_t size)
{
	struct srsv__bgroups *bgs = bgs_of(ctx);
	struct srsv_bgroup_info all;
	struct srsv__bg *g;
	size_t pos;

	if (!bgs || !out || size < BG_INFO_MIN)
		return -EINVAL;
	srsv__lock(&bgs->lock);
	if (!next) {
		g = lookup(bgs, addr, NULL);
	} else {
		/* The first group with start >= addr. */
		pos = addr ? upper_bound(bgs, addr - 1) : 0;
		g = pos < bgs->nr ? bgs->groups[pos] : NULL;
	}
	if (g)
		fill_info(g, &all);
	srsv__unlock(&bgs->lock);
	if (!g)
		return -ENOENT;
	SRSV__OUT_COPY(out, all, size, size);
	return 0;
}

SRSV__EXPORT int srsv_bgroup_get_sized(struct srsv_ctx *ctx, uint64_t bytenr,
				       struct srsv_bgroup_info *out,
				       size_t size)
{
	return query(ctx, bytenr, false, out, size);
}

SRSV__EXPORT int srsv_bgroup_next_sized(struct srsv_ctx *ctx, uint64_t from,
					struct srsv_bgroup_info *out,
					size_t size)
{
	return query(ctx, from, true, out, size);
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
	for (size_t i = 0; i < bgs->nr && ret; i++) {
		struct srsv__bg *g = bgs->groups[i];

		/* Zones are written at their write pointer: the zoned
		 * allocator's hint finds them (srsv_zone_hint()). */
		if (g->space != s || g->flavour)
			continue;
		srsv__lock(&g->lock);
		if (!g->readonly && bg_room(g) >= bytes) {
			*start = g->start;
			ret = 0;
		}
		srsv__unlock(&g->lock);
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
	memset(&all, 0, sizeof(all));
	srsv__lock(&bgs->lock);
	all.nr_groups = bgs->nr;
	all.committed = bgs->committed;
	srsv__unlock(&bgs->lock);
	all.added = srsv__ld(&bgs->st[ST_ADDED]);
	all.returned = srsv__ld(&bgs->st[ST_RETURNED]);
	all.reclaimed = srsv__ld(&bgs->st[ST_RECLAIMED]);
	all.reclaim_failed = srsv__ld(&bgs->st[ST_RECLAIM_FAILED]);
	all.sweeps = srsv__ld(&bgs->st[ST_SWEEPS]);
	all.marked = srsv__ld(&bgs->st[ST_MARKED]);
	all.reclaimed_bytes = srsv__ld(&bgs->st[ST_RECLAIMED_BYTES]);
	all.resets = srsv__ld(&bgs->st[ST_RESETS]);
	all.candidates_looked = srsv__ld(&bgs->st[ST_LOOKED]);
	SRSV__OUT_COPY(stats, all, size, size);
	return 0;
}

/* ---- statfs (btrfs_statfs()) ---- */

/* @a * @b, or UINT64_MAX if that does not fit. */
static uint64_t sat_mul(uint64_t a, uint64_t b)
{
	return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
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
		 * less what zones freed below their write pointers: no
		 * write gets those bytes before a reset. */
		if (s->is_data) {
			uint64_t busy = srsv__sat_add(srsv__sat_add(u, ro), zu);

			/* The movers' reserve is not for writers. */
			busy = srsv__sat_add(busy, s->mover_size);
			free_data += total > busy ? total - busy : 0;
			used_data += u;
		} else {
			if (k == SRSV_POOL_METADATA && total > u)
				free_meta = sat_mul(total - u, meta_factor);
			used_meta = srsv__sat_add(used_meta, u);
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
	used = srsv__sat_add(used_data,
		srsv__sat_add(sat_mul(used_meta / data_factor, meta_factor),
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
