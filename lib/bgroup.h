/* SPDX-License-Identifier: MIT */
/*
 * Block groups (bgroup.c): the ctx's one group table, and what the rest of
 * the library calls.  Module private; see bgroup.c for the design and
 * zoned.c for the zoned state a group may carry.
 */
#ifndef SRSV_BGROUP_H
#define SRSV_BGROUP_H

#include "internal.h"

struct srsv__bgroups;

/*
 * One block group: a range of the device that feeds one pool.  A zone
 * group (zoned.c) is a block group that carries zoned state: @zone points
 * at it (the srsv__bg is embedded in it), NULL for a conventional chunk.
 *
 * Immutable after insertion: start, length, space, zone.
 * used: a conventional group's is written under the table lock, a zone
 * group's under its group lock (zoned.c); an AO_t so that either side may
 * read it without the other's lock.
 * pinned, pinned_trans: under the table lock (a zone group's also under
 * its group lock, so either lock is enough to read them).
 * The rest: conventional groups only, under the table lock.
 */
struct srsv__bg {
	uint64_t start, length;
	struct srsv_space *space;
	struct srsv_zone_group *zone;
	volatile AO_t used;		/* live bytes */
	uint64_t pinned[2];		/* freed, per transaction bucket */
	uint64_t pinned_trans[2];	/* the bucket's transaction */
	uint64_t ro_bytes;		/* in the pool's readonly for us */
	unsigned reclaim_mark;
	bool readonly;			/* taken for reclaim, or relocated */
	bool taken;			/* reclaim in progress */
	uint64_t taken_round;		/* the RECLAIM_CHUNKS round that took
					 * it; 0: taken outside one */
	bool unused;			/* emptied by a free or a reclaim */
	bool candidate;			/* marked for reclaim */
};

static inline uint64_t srsv__bg_pinned(const struct srsv__bg *g)
{
	return g->pinned[0] + g->pinned[1];
}

/* Free the ctx's group table and every group in it (srsv_ctx_destroy(),
 * after srsv__zoned_ctx_destroy()). */
void srsv__bgroups_ctx_destroy(struct srsv_ctx *ctx);

/*
 * The ctx's group table, created (with srsv_bgroup_config_init()'s
 * defaults, not yet configured by srsv_bgroups_init()) if it has none.
 * NULL: out of memory.  Thread-safe.
 */
struct srsv__bgroups *srsv__bgroups_table(struct srsv_ctx *ctx);

/*
 * Put @g (start, length, space and zone set) into the table and grow its
 * pool.  A conventional chunk draws length * factor from unallocated; a
 * zone group does not (the engine registers the device's zones) and claims
 * @tail (its unwritable length - capacity) as zone_unusable before the
 * total grows.  -EINVAL: overlap, pool over SRSV_MAX_BYTES; -ENOSPC:
 * unallocated too small; -ENOMEM.  Nothing changed on error.  Takes the
 * table lock, then the pool lock.
 */
int srsv__bgroup_insert(struct srsv_ctx *ctx, struct srsv__bg *g,
			uint64_t tail);

/* ---- zoned.c, for zone groups in the table (table lock held) ---- */

/* srsv_bgroup_alloc() on a zone group: at its write pointer only. */
int srsv__zone_bg_alloc(struct srsv_zone_group *zg, uint64_t bytenr,
			uint64_t bytes);
/* srsv_bgroup_free() on a zone group: @transid 0 at once to
 * zone_unusable (group and pool), else pinned in bucket @transid & 1 until
 * srsv__zone_bg_commit(). */
int srsv__zone_bg_free(struct srsv_zone_group *zg, uint64_t bytes,
		       uint64_t transid);
/* Transaction @transid committed: the zone group's pinned bytes of it
 * become zone_unusable (group and pool). */
void srsv__zone_bg_commit(struct srsv_zone_group *zg, uint64_t transid);
/* srsv_bgroup_get() / _next() of a zone group. */
void srsv__zone_bg_info(struct srsv_zone_group *zg,
			struct srsv_bgroup_info *info);
/* Free a zone group (teardown). */
void srsv__zone_group_destroy(struct srsv_zone_group *zg);

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

/*
 * btrfs's calc_pct_ratio(): 100 * @x / @y, losing low bits rather than
 * overflowing; 0 when @y is 0.
 */
uint64_t srsv__calc_pct_ratio(uint64_t x, uint64_t y);

#endif /* SRSV_BGROUP_H */
