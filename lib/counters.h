/* SPDX-License-Identifier: MIT */
/*
 * Pool counters and admission (counters.c): the one helper per counter
 * kind, the lock-free charge of may_use, and the overcommit allowance.
 */
#ifndef SRSV_COUNTERS_H
#define SRSV_COUNTERS_H

#include "internal.h"
#include "trace.h"

const char *srsv__counter_name(int counter);

/* A pool's structure, counters at 0 but @total; no pacing, no caches. */
int srsv__space_create(struct srsv_ctx *ctx, int kind, uint64_t total,
		       struct srsv_space **out);
void srsv__space_destroy(struct srsv_space *s);

/*
 * The one helper for locked counters: asserts the pool lock, refuses a
 * change that would underflow (or overflow) with -EINVAL and no change,
 * keeps "claimed" in step, traces (counter, old, diff).
 */
int srsv__space_update(struct srsv_space *s, enum srsv__counter c,
		       int64_t diff);
/*
 * Move @bytes between two locked counters, adding to @to before
 * subtracting from @from (a lock-free reader of "claimed" never sees them
 * as free); -EINVAL and nothing changed if @from holds less.  Pool lock.
 */
int srsv__space_move(struct srsv_space *s, enum srsv__counter from,
		     enum srsv__counter to, uint64_t bytes);
/*
 * Subtract @bytes from may_use, or all it holds if less (after an
 * undetected over-release); the bytes subtracted.  The caches' drain.
 */
uint64_t srsv__may_use_sub_clamped(struct srsv_space *s, uint64_t bytes);

/*
 * may_use, lock-free: add, or subtract refusing underflow with -EINVAL
 * (counters.c, "HOW A RELEASE REFUSES UNDERFLOW").  Inline: every release
 * of the fast path is one of these.  srsv__may_use_sub_held() is the
 * callers' subtraction (a release, an alloc): the movers' reserve is part
 * of may_use that no caller holds, so one that would reach into it is an
 * over-release too.  Its figure is read before may_use: a refill adds to
 * may_use first, so the floor never counts bytes may_use does not; a
 * refusal looks again (a mover may have taken bytes from the reserve and
 * released them between the two loads).  The library's own subtractions
 * (a reserve trimmed, a group's bytes) use srsv__may_use_sub(), no floor.
 */
static inline void srsv__may_use_add(struct srsv_space *s, uint64_t bytes)
{
	AO_t old = AO_fetch_and_add_full(&s->may_use, (AO_t)bytes);

	srsv__trace_counter(s, SRSV__MAY_USE, old, (int64_t)bytes);
}

static inline int srsv__may_use_sub_above(struct srsv_space *s,
					  uint64_t bytes, AO_t floor)
{
	AO_t old = AO_load_acquire(&s->may_use), seen;

	for (int looks = 0;; old = seen) {
		if (__builtin_expect(old < bytes || old - bytes < floor, 0)) {
			if (!floor || old < bytes || ++looks > 3)
				return -EINVAL;	/* more than the pool lent */
			floor = AO_load_acquire(&s->mover_reserved);
			seen = AO_load_acquire(&s->may_use);
			continue;
		}
		seen = AO_fetch_compare_and_swap_full(&s->may_use, old,
						      old - bytes);
		if (seen == old)
			break;
	}
	srsv__trace_counter(s, SRSV__MAY_USE, old, -(int64_t)bytes);
	return 0;
}

static inline int srsv__may_use_sub(struct srsv_space *s, uint64_t bytes)
{
	return srsv__may_use_sub_above(s, bytes, 0);
}

static inline int srsv__may_use_sub_held(struct srsv_space *s, uint64_t bytes)
{
	return srsv__may_use_sub_above(s, bytes,
				       AO_load_acquire(&s->mover_reserved));
}

/*
 * Charge @bytes to may_use if they fit under the overcommit rules of
 * @mode (btrfs: used + bytes <= total || can_overcommit(bytes, mode)).
 * Lock-free (CAS); true when charged, and then *@after (if not NULL) is
 * the may_use our compare-and-swap left: callers that look at may_use
 * again need not reload the contended word.  A charge taken back after
 * its swap (a concurrent move into claimed) calls the pool's undone hook,
 * which serves the queue without blocking (set by ctx.c to the tickets
 * layer's grant; never under the pool lock, where it cannot happen).
 */
bool srsv__space_try_charge(struct srsv_space *s, uint64_t bytes, int mode,
			    uint64_t *after);
/* A @mode for srsv__space_try_charge(): plain fit, no overcommit. */
#define SRSV__CHARGE_NO_OVERCOMMIT (-1)
/* A @mode for srsv__space_try_charge(): used without may_use <= total. */
#define SRSV__CHARGE_EMERGENCY (-2)

/*
 * Every change of a pool's total, under its lock, is bracketed by these:
 * cap_seq odd before the change's first counter store, even after its
 * last, so that a lock-free admission that read the old total and saw
 * claimed come back to its old value (a set_readonly then a shrink by the
 * same bytes) knows the total moved (tests/formal/may_use.pml, CAPACITY).
 */
static inline void srsv__capacity_begin(struct srsv_space *s)
{
	srsv__assert_held(&s->lock);
	AO_store_release(&s->cap_seq, AO_load(&s->cap_seq) + 1);
}

static inline void srsv__capacity_end(struct srsv_space *s)
{
	srsv__assert_held(&s->lock);
	AO_store_release(&s->cap_seq, AO_load(&s->cap_seq) + 1);
}

/* The most bytes a charge in @mode would admit now (the pool lock held:
 * exact).  srsv_space_reserve_partial()'s measure. */
uint64_t srsv__space_room(const struct srsv_space *s, int mode);

/*
 * What an engine reports it could free (srsv_space_set_reclaimable())
 * counts toward a pool's running sum for at most this much per state, so
 * that the sum of every state stays below SRSV_MAX_BYTES even while
 * setters' differences are in flight.
 */
#define SRSV__REPORTED_PART (SRSV_MAX_BYTES / (2 * SRSV_STATE_COUNT))

/*
 * The running sum of what the engine reported, lock-free.  Two setters of
 * one state swap its figure, then add their differences to the sum, in
 * either order: for a moment the sum may be below zero (a wrap) or above
 * the truth; it is read as 0 in the first case and is exact once the
 * setters return (the differences telescope).
 */
static inline uint64_t srsv__reported_sum(const struct srsv_space *s)
{
	uint64_t sum = srsv__ld(&s->reported_sum);

	return sum >> 63 ? 0 : srsv__min(sum, SRSV_MAX_BYTES);
}

/* calc_available_free_space(s, mode) */
uint64_t srsv__available_free_space(const struct srsv_space *s, int mode);

#endif /* SRSV_COUNTERS_H */
