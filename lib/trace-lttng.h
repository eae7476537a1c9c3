/* SPDX-License-Identifier: MIT */
/*
 * The tracing-enabled side of lib/trace.h: each srsv__trace_*() function
 * fires one tracepoint of provider "spacersv" (tracepoints/spacersv_tp.h).
 * Included by lib/trace.h only, after struct srsv__dump and the trace enums
 * are defined, when the library is built with -Dtracing=enabled.
 *
 * Cost when no session records the event: one load of the tracepoint's
 * state word and a predicted branch (lttng_ust_tracepoint_enabled());
 * everything else -- the pointer chasing below (s->ctx, s->kind), the
 * space dump (every counter and the standard rsvs, filled only then), the
 * probe call -- happens only while a session records that event.  What the
 * wrappers cannot save is what the caller computes for their arguments (a
 * clock read for wait_ns, for instance): callers keep those cheap.
 */
#ifndef SRSV_TRACE_LTTNG_H
#define SRSV_TRACE_LTTNG_H

#ifndef SRSV_TRACE_H
#error "include trace.h, not trace-lttng.h"
#endif

#include <stdint.h>

#include "internal.h"
#include "spacersv_tp.h"

/* The ctx of a pool as a trace identifier (0 for NULL, refused input). */
static inline uint64_t srsv__tp_ctx(const struct srsv_space *s)
{
	return s ? (uint64_t)(uintptr_t)s->ctx : 0;
}

/* The kind of a pool (-1, printed as a number, for NULL). */
static inline int srsv__tp_pool(const struct srsv_space *s)
{
	return s ? s->kind : -1;
}

/*
 * Each wrapper is split in two: the inline part tests the tracepoint's
 * state and nothing else; the call itself is a separate noinline function.
 * Inlined whole, the probe call's register pressure made the compiler save
 * five callee-saved registers in the prologue of every caller, on the
 * fast path too (seen in srsv__may_use_add() with gcc 12 -O2); split, the
 * disabled cost is the load and the branch.  Not "cold": with the callee
 * cold, gcc 12 -O2 moved the blocks that follow the tracepoint in the
 * caller into .text.unlikely as well, so that the disabled path of
 * srsv_space_release() jumped there and back on every call (8-10 % of a
 * 9 ns reserve+release pair, bench/run-tracing-cost.sh); caa_unlikely()
 * in lttng_ust_tracepoint_enabled() already keeps the call off the
 * straight line.  "unused": a file that fires only some events compiles
 * the other copies away without a warning.
 */
#define SRSV__TP_COLD static __attribute__((noinline, unused))

SRSV__TP_COLD void srsv__tp_reserve(const struct srsv_space *s, uint64_t bytes,
				    int mode, unsigned flags, int ret)
{
	lttng_ust_do_tracepoint(spacersv, reserve, srsv__tp_ctx(s),
				srsv__tp_pool(s), bytes, mode, flags, ret);
}

static inline void srsv__trace_reserve(const struct srsv_space *s,
				       uint64_t bytes, int mode,
				       unsigned flags, int ret)
{
	if (lttng_ust_tracepoint_enabled(spacersv, reserve))
		srsv__tp_reserve(s, bytes, mode, flags, ret);
}

SRSV__TP_COLD void srsv__tp_ticket_add(const struct srsv_space *s,
				       uint64_t bytes, int mode, bool priority)
{
	lttng_ust_do_tracepoint(spacersv, ticket_add, srsv__tp_ctx(s),
				srsv__tp_pool(s), bytes, mode,
				priority ? 1 : 0);
}

static inline void srsv__trace_ticket_add(const struct srsv_space *s,
					  uint64_t bytes, int mode,
					  bool priority)
{
	if (lttng_ust_tracepoint_enabled(spacersv, ticket_add))
		srsv__tp_ticket_add(s, bytes, mode, priority);
}

SRSV__TP_COLD void srsv__tp_ticket_end(const struct srsv_space *s,
				       uint64_t bytes, int mode, int error,
				       uint64_t wait_ns)
{
	lttng_ust_do_tracepoint(spacersv, ticket_end, srsv__tp_ctx(s),
				srsv__tp_pool(s), bytes, mode, error, wait_ns);
}

static inline void srsv__trace_ticket_end(const struct srsv_space *s,
					  uint64_t bytes, int mode, int error,
					  uint64_t wait_ns)
{
	if (lttng_ust_tracepoint_enabled(spacersv, ticket_end))
		srsv__tp_ticket_end(s, bytes, mode, error, wait_ns);
}

SRSV__TP_COLD void srsv__tp_pace(const struct srsv_space *s, uint64_t bytes,
				 uint64_t delay_ns, uint64_t slept_ns,
				 uint64_t bw, uint64_t fill_pm, bool nowait)
{
	lttng_ust_do_tracepoint(spacersv, pace, srsv__tp_ctx(s),
				srsv__tp_pool(s), bytes, delay_ns, slept_ns,
				bw, fill_pm, nowait ? 1 : 0);
}

static inline void srsv__trace_pace(const struct srsv_space *s,
				    uint64_t bytes, uint64_t delay_ns,
				    uint64_t slept_ns, uint64_t bw,
				    uint64_t fill_pm, bool nowait)
{
	if (lttng_ust_tracepoint_enabled(spacersv, pace))
		srsv__tp_pace(s, bytes, delay_ns, slept_ns, bw, fill_pm,
			      nowait);
}

SRSV__TP_COLD void srsv__tp_trigger_flush(const struct srsv_space *s,
					  uint64_t bytes, int mode, int reason)
{
	lttng_ust_do_tracepoint(spacersv, trigger_flush, srsv__tp_ctx(s),
				srsv__tp_pool(s), bytes, mode, reason);
}

static inline void srsv__trace_trigger_flush(const struct srsv_space *s,
					     uint64_t bytes, int mode,
					     int reason)
{
	if (lttng_ust_tracepoint_enabled(spacersv, trigger_flush))
		srsv__tp_trigger_flush(s, bytes, mode, reason);
}

SRSV__TP_COLD void srsv__tp_flush_space(const struct srsv_space *s, int state,
					uint64_t bytes, int ret,
					bool for_preempt, uint64_t duration_ns,
					bool called)
{
	lttng_ust_do_tracepoint(spacersv, flush_space, srsv__tp_ctx(s),
				srsv__tp_pool(s), state, bytes, ret,
				for_preempt ? 1 : 0, duration_ns, called ? 1 : 0);
}

static inline void srsv__trace_flush_space(const struct srsv_space *s,
					   int state, uint64_t bytes, int ret,
					   bool for_preempt,
					   uint64_t duration_ns, bool called)
{
	if (lttng_ust_tracepoint_enabled(spacersv, flush_space))
		srsv__tp_flush_space(s, state, bytes, ret, for_preempt,
				     duration_ns, called);
}

SRSV__TP_COLD void srsv__tp_refused(const struct srsv_space *s, int kind,
				    uint64_t bytes)
{
	lttng_ust_do_tracepoint(spacersv, refused, srsv__tp_ctx(s),
				srsv__tp_pool(s), kind, bytes);
}

static inline void srsv__trace_refused(const struct srsv_space *s, int kind,
				       uint64_t bytes)
{
	if (lttng_ust_tracepoint_enabled(spacersv, refused))
		srsv__tp_refused(s, kind, bytes);
}

/*
 * Counter events are sampled: every reservation and release changes
 * may_use, and one event per change made counter events three quarters of
 * a trace (2.5 M events in 2 s of four writers), more than a production
 * process can leave on.  A pool traces each counter at most once per
 * SRSV__TRACE_COUNTER_NS, the first change after a quiet interval at
 * once: the event carries the value last traced (old) and the change
 * since (diff), so each counter's events still chain (old == the previous
 * new_value) and a plot of them is the counter sampled at 1 kHz.  A
 * change that comes within the interval of a traced one shows in the
 * next event of that counter; the dump events carry every counter as it
 * is.  The interval is claimed by a compare-and-swap, so one thread at a
 * time emits a pool's counter.
 */
#define SRSV__TRACE_COUNTER_NS (1000ull * 1000)

SRSV__TP_COLD void srsv__tp_counter(const struct srsv_space *s, int counter,
				    uint64_t old, int64_t diff)
{
	struct srsv_space *w = (struct srsv_space *)(uintptr_t)s;
	uint64_t now = srsv__now_ns(), cur, last;
	AO_t next = AO_load(&w->trace_next[counter]);

	(void)old; (void)diff;
	if (now < (uint64_t)next ||
	    !AO_compare_and_swap_full(&w->trace_next[counter], next,
				      (AO_t)(now + SRSV__TRACE_COUNTER_NS)))
		return;
	cur = counter == SRSV__MAY_USE ? srsv__may_use_settled(s) :
	      srsv__ld(&s->counters[counter]);
	last = srsv__ld(&w->trace_last[counter]);
	srsv__st(&w->trace_last[counter], cur);
	lttng_ust_do_tracepoint(spacersv, counter, srsv__tp_ctx(s),
				srsv__tp_pool(s), counter, last,
				(int64_t)(cur - last));
}

static inline void srsv__trace_counter(const struct srsv_space *s,
				       int counter, uint64_t old, int64_t diff)
{
	if (lttng_ust_tracepoint_enabled(spacersv, counter))
		srsv__tp_counter(s, counter, old, diff);
}

/*
 * The dump is filled only when a session records the event: reading every
 * counter and the standard rsvs is the costly part.
 */
SRSV__TP_COLD void srsv__tp_dump(const struct srsv_space *s, int which)
{
	struct srsv__dump d;

	srsv__dump_fill(s, &d);
	if (which == SRSV__DUMP_DONE_PREEMPTIVE_RECLAIM)
		lttng_ust_do_tracepoint(spacersv, done_preemptive_reclaim,
					srsv__tp_ctx(s), srsv__tp_pool(s), &d);
	else
		lttng_ust_do_tracepoint(spacersv, fail_all_tickets,
					srsv__tp_ctx(s), srsv__tp_pool(s), &d);
}

/*
 * Dump the pool's state as event @which (enum srsv__dump_kind).  Call with
 * the pool lock held (srsv__dump_fill() needs it).
 */
static inline void srsv__trace_dump(const struct srsv_space *s, int which)
{
	switch (which) {
	case SRSV__DUMP_DONE_PREEMPTIVE_RECLAIM:
		if (lttng_ust_tracepoint_enabled(spacersv,
						 done_preemptive_reclaim))
			srsv__tp_dump(s, which);
		break;
	case SRSV__DUMP_FAIL_ALL_TICKETS:
		if (lttng_ust_tracepoint_enabled(spacersv, fail_all_tickets))
			srsv__tp_dump(s, which);
		break;
	default:
		break;
	}
}

/*
 * rsv->space and rsv->type are set once by srsv_rsv_init() and never
 * change, so they are read without the rsv lock.  size and reserved are not
 * recorded: they change under the rsv lock, which the callers may not hold.
 */
SRSV__TP_COLD void srsv__tp_rsv(const struct srsv_rsv *rsv, int op,
				uint64_t bytes, int ret)
{
	lttng_ust_do_tracepoint(spacersv, rsv,
				rsv ? srsv__tp_ctx(srsv__rsv_of(rsv)->space) : 0,
				rsv ? srsv__tp_pool(srsv__rsv_of(rsv)->space) : -1,
				(uint64_t)(uintptr_t)rsv, rsv ? srsv__rsv_of(rsv)->type : -1,
				op, bytes, ret);
}

static inline void srsv__trace_rsv(const struct srsv_rsv *rsv, int op,
				   uint64_t bytes, int ret)
{
	if (lttng_ust_tracepoint_enabled(spacersv, rsv))
		srsv__tp_rsv(rsv, op, bytes, ret);
}

SRSV__TP_COLD void srsv__tp_quota(uint64_t id, int op, int kind,
				  uint64_t bytes, int ret)
{
	lttng_ust_do_tracepoint(spacersv, quota, id, op, kind, bytes, ret);
}

static inline void srsv__trace_quota(uint64_t id, int op, int kind,
				     uint64_t bytes, int ret)
{
	if (lttng_ust_tracepoint_enabled(spacersv, quota))
		srsv__tp_quota(id, op, kind, bytes, ret);
}

SRSV__TP_COLD void srsv__tp_zone_activate(uint64_t start, int kind, int ret,
					  unsigned active_left)
{
	lttng_ust_do_tracepoint(spacersv, zone_activate, start, kind, ret,
				active_left);
}

static inline void srsv__trace_zone_activate(uint64_t start, int kind,
					     int ret, unsigned active_left)
{
	if (lttng_ust_tracepoint_enabled(spacersv, zone_activate))
		srsv__tp_zone_activate(start, kind, ret, active_left);
}

SRSV__TP_COLD void srsv__tp_zone_finish(uint64_t start, int kind,
					uint64_t wasted)
{
	lttng_ust_do_tracepoint(spacersv, zone_finish, start, kind, wasted);
}

static inline void srsv__trace_zone_finish(uint64_t start, int kind,
					   uint64_t wasted)
{
	if (lttng_ust_tracepoint_enabled(spacersv, zone_finish))
		srsv__tp_zone_finish(start, kind, wasted);
}

SRSV__TP_COLD void srsv__tp_zone_hint(int kind, int pool, uint64_t bytes,
				      uint64_t chosen, unsigned looked)
{
	lttng_ust_do_tracepoint(spacersv, zone_hint, kind, pool, bytes, chosen,
				looked);
}

static inline void srsv__trace_zone_hint(int kind, int pool, uint64_t bytes,
					 uint64_t chosen, unsigned looked)
{
	if (lttng_ust_tracepoint_enabled(spacersv, zone_hint))
		srsv__tp_zone_hint(kind, pool, bytes, chosen, looked);
}

SRSV__TP_COLD void srsv__tp_block_group(int event, uint64_t start, int pool,
					uint64_t length, uint64_t used,
					uint64_t zone_unusable)
{
#define SRSV__TP_BG(name) \
	lttng_ust_do_tracepoint(spacersv, name, start, pool, length, used, \
				zone_unusable)
	switch (event) {
	case SRSV__TRACE_BG_ADD_UNUSED: SRSV__TP_BG(add_unused_block_group); break;
	case SRSV__TRACE_BG_ADD_RECLAIM: SRSV__TP_BG(add_reclaim_block_group); break;
	case SRSV__TRACE_BG_RECLAIM: SRSV__TP_BG(reclaim_block_group); break;
	case SRSV__TRACE_BG_SKIP_UNUSED: SRSV__TP_BG(skip_unused_block_group); break;
	default: SRSV__TP_BG(remove_block_group); break;
	}
#undef SRSV__TP_BG
}

/* One load and a branch per event when no session records it. */
static inline void srsv__trace_block_group(int event, uint64_t start,
					   int pool, uint64_t length,
					   uint64_t used,
					   uint64_t zone_unusable)
{
	bool on;

	switch (event) {
	case SRSV__TRACE_BG_ADD_UNUSED:
		on = lttng_ust_tracepoint_enabled(spacersv,
						  add_unused_block_group);
		break;
	case SRSV__TRACE_BG_ADD_RECLAIM:
		on = lttng_ust_tracepoint_enabled(spacersv,
						  add_reclaim_block_group);
		break;
	case SRSV__TRACE_BG_RECLAIM:
		on = lttng_ust_tracepoint_enabled(spacersv,
						  reclaim_block_group);
		break;
	case SRSV__TRACE_BG_SKIP_UNUSED:
		on = lttng_ust_tracepoint_enabled(spacersv,
						  skip_unused_block_group);
		break;
	default:
		on = lttng_ust_tracepoint_enabled(spacersv,
						  remove_block_group);
		break;
	}
	if (on)
		srsv__tp_block_group(event, start, pool, length, used,
				     zone_unusable);
}

#undef SRSV__TP_COLD

#endif /* SRSV_TRACE_LTTNG_H */
