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
 * of the fast path is one of these.
 */
static inline void srsv__may_use_add(struct srsv_space *s, uint64_t bytes)
{
	AO_t old = AO_fetch_and_add_full(&s->may_use, (AO_t)bytes);

	srsv__trace_counter(s, SRSV__MAY_USE, old, (int64_t)bytes);
}

static inline int srsv__may_use_sub(struct srsv_space *s, uint64_t bytes)
{
	AO_t old = AO_load_acquire(&s->may_use), seen;

	for (;; old = seen) {
		if (old < bytes)
			return -EINVAL;	/* more than the pool lent */
		seen = AO_fetch_compare_and_swap_full(&s->may_use, old,
						      old - bytes);
		if (seen == old)
			break;
	}
	srsv__trace_counter(s, SRSV__MAY_USE, old, -(int64_t)bytes);
	return 0;
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

/* calc_available_free_space(s, mode) */
uint64_t srsv__available_free_space(const struct srsv_space *s, int mode);

#endif /* SRSV_COUNTERS_H */
