/* SPDX-License-Identifier: MIT */
/*
 * Block groups (bgroup.c): the one group model, chunks and zones.  Module
 * private; bgroup.c has the design, zoned.c the zone flavour's own state
 * (activation, the active list, the hint, the RESET_ZONES and
 * RECLAIM_ZONES passes).
 */
#ifndef SRSV_BGROUP_H
#define SRSV_BGROUP_H

#include "counters.h"
#include "internal.h"

struct srsv__bgroups;
struct srsv__bg;

/* The candidate lists of a pool (btrfs's unused_bgs and reclaim_bgs). */
enum srsv__bg_list {
	SRSV__BG_UNUSED = 0,	/* emptied: returned (chunk) or reset (zone) */
	SRSV__BG_RECLAIM = 1,	/* underused: relocate its live rest */
	SRSV__BG_LISTS = 2
};

/*
 * The zone flavour's operations: what bgroup.c cannot do itself because
 * it belongs to the active list one layer up (zoned.c fills it, as
 * liburcu's flavours fill struct rcu_flavor_struct).  NULL for a chunk.
 */
struct srsv__bg_flavour {
	/* The write pointer reached the capacity, or the last outstanding
	 * write of a full group landed: leave the active list and, with
	 * nothing outstanding, give the active-zone token back.  Group lock
	 * held. */
	void (*filled)(struct srsv__bg *g);
	/* An engine relocates this flavour's groups: queue reclaim
	 * candidates (else no pass would take them). */
	bool relocates;
};

/*
 * One block group: a range of the device that feeds one pool, a chunk
 * (flavour NULL) or a zone (a zone flavour; zoned.c's struct
 * srsv_zone_group embeds this first, so freeing it frees the zone).
 *
 * The lock rule, one for both flavours: every field below that changes
 * is written under the group's lock; the words are AO_t so that the hint,
 * statfs and the choice of candidates may read them without it.  The
 * list nodes and on[] are under the table's list lock.  "active" and
 * "open" are written with the group lock and zoned.c's list lock held,
 * so either is enough to read them.
 */
struct srsv__bg {
	/* Immutable after insertion. */
	uint64_t start, length;
	uint64_t capacity;		/* writable bytes (a chunk: length) */
	struct srsv_space *space;
	struct srsv__bgroups *bgs;
	const struct srsv__bg_flavour *flavour;

	struct srsv__lock lock;
	volatile AO_t used;		/* live bytes */
	volatile AO_t reserved;		/* zone: allocated, not written */
	volatile AO_t zone_unusable;	/* zone: freed below the write
					 * pointer, + length - capacity */
	volatile AO_t alloc_offset;	/* zone: the write pointer */
	uint64_t pinned[2];		/* freed, per transaction bucket */
	uint64_t pinned_trans[2];	/* the bucket's transaction */
	uint64_t ro_bytes;		/* chunk: in the pool's readonly */
	uint64_t moving;		/* bytes a relocation moves */
	uint64_t taken_round;		/* the RECLAIM_CHUNKS round that
					 * took it; 0: none */
	unsigned reclaim_mark;		/* chunk: sweeps since an alloc */
	bool readonly;			/* chunk: taken, or relocated */
	bool busy;			/* in reclaim, or being reset */
	bool active, open;		/* zone: token held; on the list */

	struct srsv__list node[SRSV__BG_LISTS];
	bool on[SRSV__BG_LISTS];
};

static inline uint64_t srsv__bg_pinned(const struct srsv__bg *g)
{
	return g->pinned[0] + g->pinned[1];
}

static inline bool srsv__bg_full(const struct srsv__bg *g)
{
	return srsv__ld(&g->alloc_offset) == g->capacity;
}

/* A config struct of @size bytes whose first @known this library knows:
 * large enough, and every byte past them 0. */
bool srsv__cfg_known(const void *cfg, size_t known, size_t size);

/* Free the ctx's group table and every group in it (srsv_ctx_destroy(),
 * after srsv__zoned_ctx_destroy()). */
void srsv__bgroups_ctx_destroy(struct srsv_ctx *ctx);

/*
 * The ctx's group table, created (with srsv_bgroup_config_init()'s
 * defaults, not yet configured by srsv_bgroups_init()) if it has none;
 * @zoned_pct, if not 0, becomes its threshold while it is unconfigured
 * (srsv_zoned_init()).  NULL: out of memory.  Thread-safe.
 */
struct srsv__bgroups *srsv__bgroups_table(struct srsv_ctx *ctx,
					  unsigned zoned_pct);

/*
 * Set up @g (start, length, capacity, space and flavour set), put it into
 * the table and grow its pool.  A chunk draws length * factor from
 * unallocated; a zone does not (the engine registers the device's zones)
 * and claims its unwritable length - capacity as zone_unusable before
 * the total grows.  -EINVAL: overlap, pool over SRSV_MAX_BYTES; -ENOSPC:
 * unallocated too small; -ENOMEM.  Nothing changed (and @g's lock
 * destroyed) on error.  Takes the table lock, then the pool lock.
 */
int srsv__bgroup_insert(struct srsv_ctx *ctx, struct srsv__bg *g);

/*
 * Advance a zone's write pointer by @bytes, which become its reserved
 * (allocated) or, @written, its used bytes; *@off: where they start.
 * -ENOSPC: not open, or less room.  Group lock held (not asserted: the
 * zoned allocator's hot path, bench/zoned).
 */
static inline int srsv__bg_advance(struct srsv__bg *g, uint64_t bytes,
				   bool written, uint64_t *off)
{
	volatile AO_t *to = written ? &g->used : &g->reserved;

	*off = srsv__ld(&g->alloc_offset);
	if (!g->open || g->capacity - *off < bytes)
		return -ENOSPC;
	srsv__st(&g->alloc_offset, *off + bytes);
	srsv__st(to, srsv__ld(to) + bytes);
	if (*off + bytes == g->capacity)
		g->flavour->filled(g);
	return 0;
}

/*
 * The one free path: @bytes leave @from (SRSV__USED: live bytes;
 * SRSV__RESERVED: a zone's unwritten allocations) in transaction
 * @transid, pinned in the group until its commit, or released now (0).
 * Released bytes of a zone are below its write pointer: zone_unusable in
 * the group and the pool.  Then the group's candidacy is updated.
 * -EINVAL: more than the group has.  Group lock held.
 */
int srsv__bg_release(struct srsv__bg *g, enum srsv__counter from,
		     uint64_t bytes, uint64_t transid);

/* Put @g on the candidate list its flavour's rules now put it on.
 * Group lock held. */
void srsv__bg_queue(struct srsv__bg *g);

/* A zone with every byte freed and nothing outstanding: to be reset.
 * Group lock held. */
bool srsv__bg_resettable(const struct srsv__bg *g);

/* Take the first zone off @s's unused list (NULL: none); the caller
 * re-checks it under its lock. */
struct srsv__bg *srsv__bg_pop_unused(struct srsv_space *s);

/*
 * The reclaim choice for both flavours: up to @max groups of @flavour
 * (NULL: chunks) from the reclaim list of @s (NULL: every pool), the
 * least used first, taken off the list; entries no longer candidates are
 * dropped.  Returns how many.
 */
unsigned srsv__bg_choose(struct srsv__bgroups *bgs, struct srsv_space *s,
			 const struct srsv__bg_flavour *flavour,
			 struct srsv__bg **batch, unsigned max);

/*
 * Claim @g for a reclaim or a reset (busy), under the skip rules of
 * btrfs_reclaim_block_group(): not if busy, read-only, pinned or
 * reserved, nor if it stopped being a candidate; an emptied group goes
 * to the unused list instead.  @reset: claim an emptied zone for a reset.
 * Group lock held.
 */
bool srsv__bg_claim(struct srsv__bg *g, bool reset);

/* A relocation of @g ended with @result (0: moved); counted and traced. */
void srsv__bg_reclaim_counted(struct srsv__bg *g, int result);

/*
 * Reset a claimed, emptied zone: write pointer 0, its capacity back to
 * the pool, tickets granted; returns the bytes given back (0: it was not
 * resettable, or the pool refused).  Clears busy.  Group lock held.
 */
uint64_t srsv__bg_reset(struct srsv__bg *g);

/* The statistics of the one block: zone resets, relocations, candidates
 * looked at, for srsv_zoned_get_info()'s deprecated mirrors. */
void srsv__bg_zone_stats(struct srsv__bgroups *bgs, uint64_t *resets,
			 uint64_t *reclaimed, uint64_t *looked);

/*
 * RECLAIM_CHUNKS for pool @s, before the engine is called: sweep the other
 * pools with the urgent rule so that what holds unallocated space hostage
 * becomes a candidate.  Returns the number of candidates (any pool): 0
 * means the engine is not called.  With candidates, a round begins on
 * this thread: the groups srsv_bgroup_reclaim_take() hands out on it until
 * srsv__bgroup_reclaim_finish(ctx, *prev) belong to the round (rounds run
 * at once in several threads: the flushers of two pools, priority walks).
 * No lock held.
 */
unsigned srsv__bgroup_reclaim_prepare(struct srsv_space *s, uint64_t *prev);

/* After the RECLAIM_CHUNKS callback: end the reclaims this thread's round
 * left taken (not those of other rounds, nor groups the engine took
 * outside a round), and restore @prev as the thread's round. */
void srsv__bgroup_reclaim_finish(struct srsv_ctx *ctx, uint64_t prev);

/* srsv_bgroups_init() configured the ctx's table (lock-free). */
bool srsv__bgroups_enabled(struct srsv_ctx *ctx);

#endif /* SRSV_BGROUP_H */
