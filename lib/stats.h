/* SPDX-License-Identifier: MIT */
/*
 * The pool statistics' private side (lib/stats.c): what each pool keeps
 * for srsv_space_get_stats(), and the hooks the reserve and flush paths
 * call.  Included by lib/internal.h only, for struct srsv_space's field.
 */
#ifndef SRSV_STATS_H
#define SRSV_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <atomic_ops.h>

#include <libspacersv/spacersv.h>

_Static_assert(SRSV_FLUSH_MODE_COUNT <= SRSV_STATS_MODES,
	       "srsv_space_stats::modes too small");
_Static_assert(SRSV_STATE_COUNT <= SRSV_STATS_STATES,
	       "srsv_space_stats::states too small");
_Static_assert(SRSV_REFUSED_COUNT <= SRSV_STATS_REFUSALS,
	       "srsv_space_stats::refused too small");
_Static_assert(SRSV_STATE_COUNT <= 64, "srsv__stats::disabled is 64 bits");

/* One flush state's figures (calls and preempt_calls are stat_flushes[]). */
struct srsv__state_stats {
	uint64_t time_ns, waited_ns, bytes_freed, unsupported, skipped;
};

struct srsv__stats {
	/* Under the pool lock. */
	struct srsv_wait_stats modes[SRSV_FLUSH_MODE_COUNT];
	struct srsv__state_stats states[SRSV_STATE_COUNT];
	uint64_t stalled_ns;		/* closed stalls */
	uint64_t stall_start_ns;	/* the open one's start, if tickets wait */
	/* Written under the pool lock, read lock-free around a flush. */
	volatile AO_t grant_bytes;	/* monotonic: bytes granted to tickets */
	/* Lock-free: a refusal may come from the lock-free release path. */
	volatile AO_t refused[SRSV_REFUSED_COUNT];
	/* Bit s: state s said -EOPNOTSUPP and is not called any more. */
	volatile AO_t disabled;
};

/*
 * Output structs (docs/api.md, "output structs"): the caller passes its
 * sizeof; the library refuses a size below the struct's first layout,
 * which ends at member @last (checked before the call does anything), and
 * copies at most the caller's size of its own whole struct @all, whose
 * member @sz says how many bytes were filled.
 */
#define SRSV__OUT_MIN(type, last) \
	(offsetof(type, last) + sizeof(((type *)0)->last))
#define SRSV__OUT_COPY(dst, all, sz, size) do {				\
	size_t n_ = (size) < sizeof(all) ? (size) : sizeof(all);	\
	(all).sz = n_;							\
	memcpy((dst), &(all), n_);					\
} while (0)

struct srsv_space;

/* A ticket of @mode ended with @error after @wait_ns; pool lock held. */
void srsv__stats_ticket_end(struct srsv_space *s, int mode, int error,
			    uint64_t wait_ns);
/* The first ticket was queued at @now_ns / the last one left; pool lock. */
void srsv__stats_stall_begin(struct srsv_space *s, uint64_t now_ns);
void srsv__stats_stall_end(struct srsv_space *s);

/* Count and trace a refused call of @kind (enum srsv_refusal).  Cold. */
void srsv__refuse(struct srsv_space *s, int kind, uint64_t bytes);

/* srsv__refuse() when @s is not NULL; returns -EINVAL (return it). */
int srsv__refused(struct srsv_space *s, int kind, uint64_t bytes);

/* Has @state been disabled for @s (it said -EOPNOTSUPP)?  Lock-free. */
bool srsv__state_disabled(const struct srsv_space *s, int state);

/* What srsv__flush_space() measured of one state's run. */
struct srsv__flush_sample {
	int state;
	bool for_preempt;
	bool called;			/* false: skipped, disabled */
	bool unsupported;		/* the callback said -EOPNOTSUPP */
	bool disable;			/* and the state is to be skipped */
	uint64_t ns;			/* duration of the run */
	uint64_t queued;		/* tickets queued when it began */
	int64_t freed;			/* free space growth + grants */
};

/* Account @f; pool lock held. */
void srsv__stats_flush(struct srsv_space *s, const struct srsv__flush_sample *f);

#endif /* SRSV_STATS_H */
