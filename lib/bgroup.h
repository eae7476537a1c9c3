/* SPDX-License-Identifier: MIT */
/*
 * Block groups (bgroup.c): what the rest of the library calls.  Module
 * private; see bgroup.c for the design.
 */
#ifndef SRSV_BGROUP_H
#define SRSV_BGROUP_H

#include "internal.h"

/* Free the ctx's group table (srsv_ctx_destroy()). */
void srsv__bgroups_ctx_destroy(struct srsv_ctx *ctx);

/*
 * RECLAIM_CHUNKS for pool @s, before the engine is called: sweep the other
 * pools with the urgent rule so that what holds unallocated space hostage
 * becomes a candidate.  Returns the number of candidates (any pool): 0
 * means the engine is not called.  No lock held.
 */
unsigned srsv__bgroup_reclaim_prepare(struct srsv_space *s);

/* After the RECLAIM_CHUNKS callback: end the reclaims it left taken. */
void srsv__bgroup_reclaim_finish(struct srsv_ctx *ctx);

/* The ctx has a group table (lock-free). */
bool srsv__bgroups_enabled(struct srsv_ctx *ctx);

/*
 * btrfs's calc_pct_ratio(): 100 * @x / @y, losing low bits rather than
 * overflowing; 0 when @y is 0.
 */
uint64_t srsv__calc_pct_ratio(uint64_t x, uint64_t y);

#endif /* SRSV_BGROUP_H */
