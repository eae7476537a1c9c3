/* SPDX-License-Identifier: MIT */
/*
 * Pool statistics: why, and for how long, writers waited.
 *
 * WHAT AN ENGINE CAN ASK WITHOUT A TRACE SESSION
 *
 * The snapshot's counters (srsv_space_snapshot()) say how full a pool is
 * and how many tickets ended; they cannot say how long the waits were or
 * what the flushers did meanwhile.  btrfs answers that with tracepoints
 * (the ticket wait time in btrfs_reserve_ticket's trace, commit
 * "btrfs: add a trace point for reserve tickets", and flush_space's) and
 * nothing in the kernel keeps totals, so a user needs a tracing session
 * running before the stall.  An embedded library can afford to keep the
 * totals, as the kernel's block layer keeps per-queue wait histograms
 * (blk-stat.c, and the log2 buckets of BPF's biolatency): a ticket's end
 * and a flush step already take the pool lock, and adding a few words
 * there costs nothing on the lock-free fast path, which never queues.
 *
 * - Per flush mode, the waits of the tickets that ended: count, failures,
 *   sum, maximum, and a log2 histogram in microseconds.
 * - Per pool, the stalled time: how long at least one ticket was queued.
 *   Two snapshots a second apart give "writers waited 31% of the last
 *   second".
 * - Per flush state: calls, time inside the callback, the bytes it made
 *   available, -EOPNOTSUPP answers, and "waited_ns", each call's duration
 *   times the tickets queued when it began.  The per-mode wait sums are
 *   the same unit (ticket-nanoseconds), so the states' shares of waited_ns
 *   say which states the writers' time went to: "mostly behind
 *   COMMIT_TRANS".
 * - A state the callback answered -EOPNOTSUPP is not called again for the
 *   pool until the engine re-enables it (srsv_space_enable_state()): the
 *   callback contract already says such states are skipped, and a walk of
 *   nine unimplemented states per step is the engine's time for nothing.
 * - Refused calls (a release of bytes the pool never lent, a pin of bytes
 *   not used: btrfs WARNs and clamps in btrfs_space_info_update_*, the
 *   library refuses): a counter per kind, and the trace event "refused".
 *
 * The output struct carries its size, as srsv_config does: fields are
 * added at its end, and a program built against an older header gets only
 * the layout it knows.
 *
 * Layer: recording the statistics, above tracing, below the counters and
 * everything that counts.  srsv_space_get_stats(), which also reports
 * pacing's figures, is the pool API's (space.c).
 */
#include <string.h>

#include "stats.h"
#include "trace.h"

static unsigned wait_bucket(uint64_t wait_ns)
{
	uint64_t us = wait_ns / 1000;
	unsigned b;

	if (us < 2)
		return 0;
	b = 63u - (unsigned)__builtin_clzll(us);
	return b < SRSV_WAIT_BUCKETS ? b : SRSV_WAIT_BUCKETS - 1;
}

void srsv__stats_ticket_end(struct srsv_space *s, int mode, int error,
			    uint64_t wait_ns)
{
	struct srsv_wait_stats *w;

	srsv__assert_held(&s->lock);
	if (mode < 0 || mode >= SRSV_FLUSH_MODE_COUNT)
		return;
	w = &s->stats.modes[mode];
	w->tickets++;
	if (error)
		w->failed++;
	w->wait_ns += wait_ns;
	if (wait_ns > w->max_wait_ns)
		w->max_wait_ns = wait_ns;
	w->hist[wait_bucket(wait_ns)]++;
}

void srsv__stats_stall_begin(struct srsv_space *s, uint64_t now_ns)
{
	srsv__assert_held(&s->lock);
	s->stats.stall_start_ns = now_ns;
}

void srsv__stats_stall_end(struct srsv_space *s)
{
	uint64_t now = srsv__now_ns();

	srsv__assert_held(&s->lock);
	if (now > s->stats.stall_start_ns)
		s->stats.stalled_ns += now - s->stats.stall_start_ns;
}

__attribute__((cold)) void srsv__refuse(struct srsv_space *s, int kind,
					uint64_t bytes)
{
	if (kind < 0 || kind >= SRSV_REFUSED_COUNT)
		return;
	AO_fetch_and_add1_full(&s->stats.refused[kind]);
	srsv__trace_refused(s, kind, bytes);
}

int srsv__refused(struct srsv_space *s, int kind, uint64_t bytes)
{
	if (s)
		srsv__refuse(s, kind, bytes);
	return -EINVAL;
}

/* The calling thread's last NOWAIT refusal (srsv_nowait_reason()). */
static __thread int nowait_why;

int srsv__nowait_refused(struct srsv_space *s, int reason)
{
	nowait_why = reason;
	if (s)
		AO_fetch_and_add1(&s->stats.nowait[reason]);
	return -EAGAIN;
}

SRSV__EXPORT int srsv_nowait_reason(void)
{
	return nowait_why;
}

bool srsv__state_disabled(const struct srsv_space *s, int state)
{
	return (AO_load((volatile AO_t *)&s->stats.disabled) >> state) & 1;
}

static void set_disabled(struct srsv_space *s, int state)
{
	AO_t old;

	do {
		old = AO_load(&s->stats.disabled);
	} while (!AO_compare_and_swap_full(&s->stats.disabled, old,
					   old | (AO_t)1 << state));
}

void srsv__stats_flush(struct srsv_space *s, const struct srsv__flush_sample *f)
{
	struct srsv__state_stats *st = &s->stats.states[f->state];

	srsv__assert_held(&s->lock);
	if (!f->called) {
		st->skipped++;
		return;
	}
	s->stat_flushes[f->state]++;
	if (f->for_preempt)
		s->stat_preempt_flushes[f->state]++;
	st->time_ns += f->ns;
	st->waited_ns += f->ns * f->queued;
	if (f->freed > 0)
		st->bytes_freed += (uint64_t)f->freed;
	if (f->unsupported)
		st->unsupported++;
	if (f->disable)
		set_disabled(s, f->state);
}

SRSV__EXPORT int srsv_space_enable_state(struct srsv_space *s, int state)
{
	AO_t old, mask;

	if (!s || state < 0 || state >= SRSV_STATE_COUNT)
		return -EINVAL;
	mask = state ? (AO_t)1 << state : ~(AO_t)0;
	do {
		old = AO_load(&s->stats.disabled);
	} while (!AO_compare_and_swap_full(&s->stats.disabled, old,
					   old & ~mask));
	return 0;
}
