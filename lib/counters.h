/* SPDX-License-Identifier: MIT */
/*
 * Pool counters and admission (counters.c): the one helper per counter
 * kind, the lock-free charge of may_use, and the overcommit allowance.
 */
#ifndef SRSV_COUNTERS_H
#define SRSV_COUNTERS_H

#include "internal.h"

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
/* may_use, lock-free: refuse underflow with -EINVAL; trace. */
int srsv__may_use_sub(struct srsv_space *s, uint64_t bytes);
/*
 * Subtract @bytes from may_use, or all it holds if less (after an
 * undetected over-release); the bytes subtracted.  The caches' drain.
 */
uint64_t srsv__may_use_sub_clamped(struct srsv_space *s, uint64_t bytes);
void srsv__may_use_add(struct srsv_space *s, uint64_t bytes);

/*
 * Charge @bytes to may_use if they fit under the overcommit rules of
 * @mode (btrfs: used + bytes <= total || can_overcommit(bytes, mode)).
 * Lock-free (CAS); true when charged, and then *@after (if not NULL) is
 * the may_use our compare-and-swap left: callers that look at may_use
 * again need not reload the contended word.  *@undid is set (never
 * cleared) when a charge was taken back after its swap (a concurrent move
 * into claimed): the caller must then serve queued tickets
 * (srsv__maybe_grant()).  Under the pool lock that cannot happen, and
 * @undid may be NULL.
 */
bool srsv__space_try_charge(struct srsv_space *s, uint64_t bytes, int mode,
			    uint64_t *after, bool *undid);
/* A @mode for srsv__space_try_charge(): plain fit, no overcommit. */
#define SRSV__CHARGE_NO_OVERCOMMIT (-1)
/* A @mode for srsv__space_try_charge(): used without may_use <= total. */
#define SRSV__CHARGE_EMERGENCY (-2)

/* calc_available_free_space(s, mode) */
uint64_t srsv__available_free_space(const struct srsv_space *s, int mode);

#endif /* SRSV_COUNTERS_H */
