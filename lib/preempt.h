/* SPDX-License-Identifier: MIT */
/*
 * Preemptive flushing and the clamp (preempt.c).
 */
#ifndef SRSV_PREEMPT_H
#define SRSV_PREEMPT_H

#include "counters.h"
#include "internal.h"

/* need_preemptive_reclaim(); lock-free reads, call with or without lock. */
bool srsv__need_preemptive_reclaim(struct srsv_space *s);
/* Queue the preemptive worker if need_preemptive_reclaim() says so. */
void srsv__queue_preempt_if_needed(struct srsv_space *s, uint64_t bytes,
				   int mode);

/*
 * After a successful metadata reservation: queue preemptive flushing if
 * needed.  Inline so that the reservation fast path of a pool with room
 * pays four loads here, not a chain of calls: a busy or disabled worker,
 * or reservations under the floor, answer "no" at once.  @may_use is what
 * the caller's charge left: with writers on several CPUs the admission
 * word's cache line has often moved on by now, and reloading it would
 * cost a second transfer per reservation.
 */
static inline void srsv__maybe_queue_preempt(struct srsv_space *s,
					     uint64_t bytes, int mode,
					     uint64_t may_use)
{
	struct srsv_ctx *ctx = s->ctx;

	if (srsv__ld(&ctx->preempt_busy) || !srsv__ld(&ctx->preempt_enabled))
		return;
	if (may_use + srsv__space_counter(s, SRSV__PINNED) <=
	    srsv__ld(&s->preempt_floor))
		return;
	srsv__queue_preempt_if_needed(s, bytes, mode);
}

/*
 * The same for a data pool (s->data_preempt): its debt is what is pinned
 * and what the engine reports (srsv_space_set_reclaimable()), not its
 * reservations, which are exact.  Inline: on a data pool's fast path, the
 * same four loads as the metadata test.
 */
static inline void srsv__maybe_queue_data_preempt(struct srsv_space *s,
						  uint64_t bytes, int mode)
{
	struct srsv_ctx *ctx = s->ctx;

	if (srsv__ld(&ctx->preempt_busy) || !srsv__ld(&ctx->preempt_enabled))
		return;
	if (srsv__reported_sum(s) + srsv__space_counter(s, SRSV__PINNED) <=
	    srsv__ld(&s->preempt_floor))
		return;
	srsv__queue_preempt_if_needed(s, bytes, mode);
}

/* maybe_clamp_preempt(): a ticket started async flushing, or a paced
 * writer slept; pool lock held. */
void srsv__maybe_clamp_preempt(struct srsv_space *s);
/* The clamp comes down one step per this long without a wait (preempt.c,
 * THE CLAMP). */
#define SRSV__CLAMP_QUIET_NS (1000ull * 1000 * 1000)
/* The preempt worker's job for pool @s (no lock held). */
void srsv__preempt_reclaim(struct srsv_space *s);
/* The preempt worker's choice of state and bytes; pool lock held. */
int srsv__preempt_choose(struct srsv_space *s, uint64_t *to_reclaim);

#endif /* SRSV_PREEMPT_H */
