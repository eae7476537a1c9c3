/* SPDX-License-Identifier: MIT */
/*
 * Recording the pool statistics (stats.c): what the reserve, ticket and
 * flush paths call.  The figures live in struct srsv__stats (internal.h);
 * srsv_space_get_stats() (space.c) reports them.
 */
#ifndef SRSV_STATS_H
#define SRSV_STATS_H

#include "internal.h"

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

/*
 * A NOWAIT call answers -EAGAIN for @reason (enum srsv_nowait_reason):
 * remember it for srsv_nowait_reason() and count it against @s (when not
 * NULL).  Returns -EAGAIN (return it).  Never blocks.
 */
int srsv__nowait_refused(struct srsv_space *s, int reason);

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
