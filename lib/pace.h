/* SPDX-License-Identifier: MIT */
/*
 * Pacing (pace.c): the pool's pacing state, and what the reserve path,
 * the preemptive flusher and the statistics call.
 */
#ifndef SRSV_PACE_H
#define SRSV_PACE_H

#include "internal.h"

/* A pool's pacing state; allocated only when the ctx paces (pace.c). */
struct srsv__pace {
	/* Fill (per mille of the room) where pacing starts; > 0. */
	uint64_t freerun_pm;
	uint64_t setpoint_pm;		/* (freerun + 1000) / 2 */
	uint64_t max_delay_ns;		/* longest single delay */

	/* The slot clock: when the next paced reservation may return. */
	volatile AO_t next_ns;
	/* Reclaim bandwidth estimate (bytes/s); sampled by one thread at a
	 * time (sampling), over windows of SRSV__PACE_WINDOW_NS. */
	volatile AO_t sampling;
	uint64_t mark_ns, mark_charged, mark_held;
	volatile AO_t bw;
	/* Writers slept since the fill last fell below freerun: the first
	 * sleep of such an episode raises the clamp (see the essay). */
	volatile AO_t episode;

	/* Statistics (lock-free, monotonic except max). */
	volatile AO_t stat_paced;	/* reservations that slept */
	volatile AO_t stat_delay_ns;	/* total time slept */
	volatile AO_t stat_max_delay_ns;	/* longest single delay */
	volatile AO_t stat_eased;	/* delays cut short: fill fell */
	volatile AO_t stat_nowait;	/* NOWAIT admitted instead of slept */
	volatile AO_t stat_nowait_ns;	/* the delay they would have slept */
	volatile AO_t stat_quiet;	/* windows skipped as quiet periods */
	volatile AO_t stat_short;	/* delays under the quantum, not slept */
};

/* The pacing counters, for tests and (later) the snapshot. */
struct srsv__pace_stats {
	uint64_t paced, delay_ns, max_delay_ns, eased, nowait, nowait_ns;
	uint64_t quiet;			/* windows skipped as quiet */
	uint64_t short_delays;		/* under the quantum: not slept */
	uint64_t bw;			/* reclaim bandwidth estimate, B/s */
	uint64_t fill_pm;		/* reclaimable / room, per mille */
};

/* Allocate @s's pacing state if the ctx's config asks for it. */
int srsv__pace_create(struct srsv_space *s);
void srsv__pace_free(struct srsv_space *s);

/*
 * A reservation of @bytes in @mode (with @flags) was charged without
 * waiting on a ticket: delay the caller as the pool's pacing says, or,
 * for NOWAIT, book the delay on the slot clock without sleeping.  No lock
 * held.  Returns the time slept.
 */
uint64_t srsv__pace(struct srsv_space *s, uint64_t bytes, int mode,
		    unsigned flags);

/*
 * Reclaimable bytes held past the freerun point (0 below it, or when the
 * pool is not paced): what the preemptive flusher should reclaim at least,
 * so that the writers it holds back run free again.  Lock-free reads.
 */
uint64_t srsv__pace_excess(struct srsv_space *s);

void srsv__pace_get_stats(struct srsv_space *s, struct srsv__pace_stats *st);

/* Paced reservations that slept so far (0 when the pool is not paced):
 * the clamp's quiet period (preempt.c) restarts on them as on tickets. */
static inline uint64_t srsv__pace_sleeps(const struct srsv_space *s)
{
	return s->pace ? srsv__ld(&s->pace->stat_paced) : 0;
}

/*
 * White-box tests: a clock and a sleep to use instead of CLOCK_MONOTONIC
 * and nanosleep, stored as words (AO_load()).  Set them while no paced
 * reservation runs; 0 restores the real ones.
 */
typedef uint64_t (*srsv__pace_clock_fn)(void);
typedef void (*srsv__pace_sleep_fn)(uint64_t ns);
extern volatile AO_t srsv__pace_clock;
extern volatile AO_t srsv__pace_sleep;

#endif /* SRSV_PACE_H */
