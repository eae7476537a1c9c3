/* SPDX-License-Identifier: MIT */
/*
 * Pacing: writers slowed smoothly before the pool fills, never stopped.
 *
 * WHY
 *
 * Tickets are a hard stop: a writer runs at full speed until the pool is
 * full, then waits for a flusher, all writers at once.  Preemptive flushing
 * (preempt.c) starts the flusher early, but nothing slows a writer that
 * outruns it: when the writers ask for more than reclaim can give back,
 * the pool still fills and the sawtooth comes back, only later.  Engines
 * therefore wrote their own dirty throttle beside the library (the stall
 * benchmark and spacefs did), each with its own measure of "too full".
 *
 * Linux solved the same problem for dirty pages with the IO-less
 * balance_dirty_pages() (mm/page-writeback.c, Fengguang Wu, 2011): no
 * dirtier writes back itself; above a "freerun" point each one sleeps so
 * that together they dirty pages at pos_ratio x dirty_ratelimit, where
 * pos_ratio is a cubic of the distance to a setpoint (2 at freerun, 1 at
 * the setpoint, 0 at the limit) and dirty_ratelimit tracks the measured
 * write bandwidth.  RocksDB's WriteController (db/write_controller.cc)
 * does it with a token bucket whose "delayed write rate" SetupDelay()
 * (db/column_family.cc) multiplies by 0.8 while compaction debt grows and
 * by 1.25 while it shrinks; the bucket refills every millisecond, so its
 * delays come in 1 ms slices, and the rate has to be found by trial.
 *
 * WHAT WE DO
 *
 * Pacing is Linux's law on the pool's reclaimable space: fill = (may_use
 * less the global reserve, plus pinned) / the room those can take (the
 * pool less what is used, reserved, read-only and the global reserve,
 * plus the overcommit allowance).  Below freerun (srsv_config's
 * pace_start_pct) nothing happens.  Above it, a reservation is delayed so
 * that the pool's writers together are admitted at
 *
 *	rate = reclaim bandwidth x pos_ratio(fill)
 *
 * pos_ratio being Linux's cubic, 2 at freerun, 1 at the setpoint halfway
 * to full, 0 at full.  The reclaim bandwidth is measured, not tuned: over
 * windows of 10 ms, bytes charged minus the growth of reclaimable space
 * is what reclaim gave back; averaged with weight 1/4 (Linux's write
 * bandwidth estimate has the same weight).  Below the setpoint a window
 * may raise the estimate but not lower it: there reclaim is not the
 * bottleneck, and what it gave back measures the writers' demand, not
 * what it can do (Linux measures the device while writeback runs; we only
 * see what reclaim returned, and an estimate that followed the demand
 * down would hold the writers at whatever rate they happened to have).
 * As in Linux's __wb_update_bandwidth(), quiet periods do not count: a
 * window longer than two (no paced writer came: the writers were idle,
 * and reclaim ran dry somewhere in it) only restarts the measurement, and
 * a window that ends with reclaim idle (nothing under writeback, no
 * flusher queued or running) may raise the estimate but not lower it.
 * (RocksDB's delayed write rate likewise adapts only while there is
 * debt.)  At the setpoint the writers are admitted exactly as fast as reclaim
 * frees; past it slower, before it faster, so the fill settles at the
 * setpoint, whatever the error of the estimate (pos_ratio is the feedback
 * that RocksDB's 0.8/1.25 steps approximate, applied continuously).
 *
 * HOW IT JOINS THE TICKETS AND THE PREEMPTIVE FLUSHER
 *
 * - The delay comes after the charge: a paced reservation has its bytes
 *   (granted in the strict FIFO order of every reservation, tickets
 *   included) and then pays its delay holding them.  Nobody can overtake
 *   it while it sleeps, and a pool that does fill still queues tickets
 *   exactly as without pacing: pacing only adds delay before that point.
 * - The delays are slots of one pool-wide clock (next_ns): each paced
 *   reservation books bytes / rate on it, behind the slots booked before
 *   it, so N writers together get the rate, not N times it, in the order
 *   they were charged; a late wake-up of one thread does not shift the
 *   others.  Idle time is banked for at most 1 ms: slots that late
 *   wake-ups of a loaded machine missed can still be used (without it the
 *   writers fell short of the rate and the estimate followed them down),
 *   but after a quiet spell the clock restarts 1 ms before the present.
 * - While writers are paced, each preemptive flush asks for at least the
 *   bytes held past the freerun point (srsv__pace_excess()), not only
 *   upstream's quarter; with no writeback in flight a DELALLOC asks for
 *   all the dirty data, and a commit is worth it once pinned space alone
 *   is more than the excess (preempt.c): the flusher works on what holds
 *   the writers back, and keeps the device busy while they wait.
 * - A paced writer's sleep is a wait, as a ticket is.  The first sleep
 *   since the fill was below freerun raises the preemptive clamp
 *   (srsv__maybe_clamp_preempt(): a call up, from the reservation path to
 *   the flusher's policy, under the pool lock), so that preemptive
 *   flushing starts earlier and the next burst is paced less; and every
 *   sleep restarts the clamp's quiet period (srsv__pace_sleeps()).  With
 *   pacing on, tickets seldom queue, and without this the clamp never
 *   learnt (the stall benchmark's bursts: clamp 1 throughout, paced p99
 *   0.9 ms; with it clamp 7-8 and 16-56 µs in five runs).
 * - The preemptive flusher is kicked by the same reservation before the
 *   writer sleeps (srsv__maybe_queue_preempt() runs first), and a sleeping
 *   writer re-reads the fill every millisecond: once flushing brings it
 *   below freerun the delay ends at once (counted as "eased").  The
 *   faster flushing reclaims, the higher the measured bandwidth and the
 *   shorter every delay.
 * - Pacing works only while preemptive flushing is on
 *   (srsv_ctx_set_preempt(), SRSV_CTX_NO_PREEMPT): without it nothing
 *   reclaims before the tickets, and pacing would slow writers that
 *   nothing catches up with (measured on spacefs: randwrite with pacing
 *   and preemptive flushing off fell from 36.5 to 9.3 MiB/s).
 * - A reservation granted through a ticket already waited: it is not
 *   paced again.  Only FLUSH_ALL and FLUSH_ALL_STEAL are paced: NO_FLUSH,
 *   LIMIT and EVICT callers may hold a transaction (btrfs uses those modes
 *   exactly there), and nothing called from a flush callback sleeps here.
 *   The asynchronous ticket API (srsv_ticket_reserve()) is not paced.
 * - One delay is at most pace_max_delay_ns (10 ms by default; Linux caps
 *   a pause at 200 ms, HZ / 5): pacing smooths, the tickets stop.
 * - One delay is at least 50 µs (SRSV__PACE_QUANTUM_NS, Linux's default
 *   timer slack), or pace_max_delay_ns if that is shorter (else no delay
 *   would ever be slept): a shorter one is not slept, its slot stays booked, and
 *   the delays add up on the clock until a reservation finds its slot
 *   that far away and sleeps for all of them.  The rate holds and a
 *   writer is at most one quantum early; the pauses are fewer, each
 *   bounded.  (Measured on the stall benchmark, writers' timer slack at
 *   1 ns: the paced p99 went from 505 µs, spread 300-710, to 194 µs,
 *   spread 193-194: fewer wake-ups for a loaded machine to serve late.)
 *   Longer pauses, Linux's way (a task sleeps 10 ms or more every
 *   nr_dirtied_pause pages), raise the p99 here: measured with quanta of
 *   0.2 to 8 ms, 286 µs to 3.1 ms (docs/results-stall.md), because a
 *   pool that its writers cross in 12 ms swings past full between long
 *   pauses.  The library leaves the caller's timer slack alone.
 *
 * NOWAIT
 *
 * A NOWAIT reservation never sleeps here.  It is admitted as it would be
 * without pacing, and its slot is still booked on the clock: the pool's
 * rate holds, and the paced writers behind it absorb its delay.  It is
 * counted (stat_nowait, and the delay it was spared in stat_nowait_ns) and
 * traced, so an event loop that outruns reclaim is visible.  (Linux's
 * BDP_ASYNC returns -EAGAIN instead; for a reservation that fits, failing
 * would turn a soft limit into a hard one for exactly the callers that
 * cannot wait to retry.)
 *
 * COST
 *
 * Off (the default) it costs one load of s->pace on the reservation path.
 * On, every charge adds to one shared counter and every paced
 * reservation reads the clock.
 *
 * DATA POOLS (srsv_config::data_pace_start_pct)
 *
 * A data pool is paced by the same clock, curve and slots, with three
 * differences that follow from data reservations being exact (writing a
 * record back does not free its space; only the engine's cleaning,
 * compaction or commit does):
 * - the fill is the debt (pinned, and what the engine reports with
 *   srsv_space_set_reclaimable()) over the room it competes for (the
 *   pool less what is used, reserved and in flight): with no debt there
 *   is nothing reclaim could catch up on, and no pacing;
 * - the bandwidth is the rate at which bytes become free (unpins and
 *   frees), not charges less what is held;
 * - hysteresis after a bulk unpin: one commit that frees a large share of
 *   the pool must not start a sawtooth (writers flat out until the pool
 *   is full again, then all stopped: ZFS's throttle after a txg sync,
 *   openzfs #12868).  A 10 ms window counts for at most twice the
 *   estimate, and a paced episode ends only when the fill falls below
 *   half of freerun: between the two the writers run at twice the
 *   reclaim rate, and come back to full speed gradually.
 * FLUSH_DATA reservations are paced; a mover's (SRSV_RESERVE_MOVER)
 * never is.
 *
 * LAYER
 *
 * Pacing sits above the engine-callback wrapper and below preemption,
 * which reads what pacing holds back (srsv__pace_excess()).  One call goes
 * up, and it is the algorithm's, not an accident of where code was put:
 * the first paced sleep of an episode raises the preemptive clamp
 * (srsv__maybe_clamp_preempt(), below), as a ticket that starts the async
 * flusher does.  Pacing and preemption are one feedback loop; design.md
 * section 23 names this call, and so does preempt.c.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blockrsv.h"
#include "counters.h"
#include "gate.h"
#include "pace.h"
#include "preempt.h"
#include "trace.h"

/* Bandwidth sampling window and longest sleep between looks at the fill. */
#define SRSV__PACE_WINDOW_NS (10ull * 1000 * 1000)
#define SRSV__PACE_CHUNK_NS (1000ull * 1000)
#define SRSV__PACE_DEFAULT_MAX_NS (10ull * 1000 * 1000)
#define SRSV__PACE_BANK_NS (1000ull * 1000)
/*
 * The shortest delay slept: Linux's default timer slack.  A shorter sleep
 * takes about the slack anyway (it doubled the delays of a 25 µs slot),
 * and every sleep is a wake-up a loaded machine may serve late.
 */
#define SRSV__PACE_QUANTUM_NS (50ull * 1000)
/* A longer window is a quiet period: it restarts the measurement. */
#define SRSV__PACE_QUIET_NS (2 * SRSV__PACE_WINDOW_NS)

volatile AO_t srsv__pace_clock;
volatile AO_t srsv__pace_sleep;

static uint64_t pace_now(void)
{
	srsv__pace_clock_fn fn = (srsv__pace_clock_fn)AO_load(&srsv__pace_clock);

	return fn ? fn() : srsv__now_ns();
}

static void pace_sleep(uint64_t ns)
{
	srsv__pace_sleep_fn fn = (srsv__pace_sleep_fn)AO_load(&srsv__pace_sleep);
	struct timespec ts = {
		.tv_sec = (time_t)(ns / 1000000000ull),
		.tv_nsec = (long)(ns % 1000000000ull),
	};

	if (fn)
		fn(ns);
	else
		nanosleep(&ts, NULL);
}

int srsv__pace_create(struct srsv_space *s)
{
	const struct srsv_config *cfg = &s->ctx->cfg;
	unsigned pct = s->is_metadata ? cfg->pace_start_pct :
		       s->data_preempt ? cfg->data_pace_start_pct : 0;
	struct srsv__pace *p;

	if (!pct)
		return 0;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->data = !s->is_metadata;
	p->freerun_pm = (uint64_t)pct * 10;
	p->setpoint_pm = (p->freerun_pm + 1000) / 2;
	p->max_delay_ns = cfg->pace_max_delay_ns ? cfg->pace_max_delay_ns :
			  SRSV__PACE_DEFAULT_MAX_NS;
	s->pace = p;
	return 0;
}

void srsv__pace_free(struct srsv_space *s)
{
	free(s->pace);
	s->pace = NULL;
}

/*
 * A data pool's debt (pinned and what the engine reported) over the room
 * it competes for: the pool less what is used, reserved, read-only, zone
 * unusable and reserved for writers in flight (may_use, the movers'
 * reserve excepted).  A data reservation is exact, so only the debt is
 * reclaimable: with no debt there is nothing to pace for, and as the
 * free space runs out under a debt the fill goes to 1000.  (Counting the
 * movers' reserve as taken helped the log store at 70% live, but paced
 * its bulk unpins 21-31% of the writers' time against 0.3%, at 5-14% of
 * its throughput: docs/results-logstore.md.)
 */
static uint64_t data_fill_pm(struct srsv_space *s, uint64_t *held)
{
	/* With the unallocated space the pool can still grow into, as the
	 * preemptive flusher counts it (preempt.c). */
	uint64_t total = srsv__sat_add(srsv__space_counter(s, SRSV__TOTAL),
				       srsv__ld(&s->ctx->unallocated));
	uint64_t pinned = srsv__space_counter(s, SRSV__PINNED);
	uint64_t claimed = srsv__ld(&s->claimed);
	uint64_t may_use = srsv__may_use_settled(s);
	uint64_t mover = srsv__min(srsv__ld(&s->mover_reserved), may_use);
	uint64_t debt = pinned + srsv__reported_sum(s);
	uint64_t taken = claimed - srsv__min(pinned, claimed) + may_use - mover;
	uint64_t room = total > taken ? total - taken : 0;

	*held = debt;
	if (!room)
		return debt ? 2000 : 0;
	return (uint64_t)((double)debt * 1000 / (double)room);
}

/*
 * Reclaimable bytes held (*@held) and the room they may take; the fill
 * in per mille (above 1000 when overcommitted).  Lock-free reads.  The
 * admission word is read raw: credit in the per-CPU caches was charged,
 * so it counts as held for the bandwidth arithmetic.
 */
static uint64_t metadata_fill_pm(struct srsv_space *s, uint64_t *held)
{
	uint64_t total = srsv__space_counter(s, SRSV__TOTAL);
	uint64_t pinned = srsv__space_counter(s, SRSV__PINNED);
	uint64_t claimed = srsv__ld(&s->claimed);
	uint64_t may_use = srsv__may_use_settled(s);
	uint64_t global = srsv__std_reserved_in(s, SRSV_RSV_GLOBAL);
	uint64_t committed = (claimed > pinned ? claimed - pinned : 0) +
			     srsv__min(global, may_use);
	uint64_t room = total > committed ? total - committed : 0;
	uint64_t h = may_use - srsv__min(global, may_use) + pinned;

	room += srsv__available_free_space(s, SRSV_FLUSH_ALL);
	*held = h;
	if (!room)
		return h ? 2000 : 0;
	return (uint64_t)((double)h * 1000 / (double)room);
}

static uint64_t fill_pm(struct srsv_space *s, uint64_t *held)
{
	if (s->pace->data)
		return data_fill_pm(s, held);
	return metadata_fill_pm(s, held);
}

uint64_t srsv__pace_excess(struct srsv_space *s)
{
	const struct srsv__pace *p = s->pace;
	uint64_t held, fill, start;

	if (!p)
		return 0;
	fill = fill_pm(s, &held);
	if (fill <= p->freerun_pm)
		return 0;
	/* held x freerun / fill: what held would be at the freerun point. */
	start = (uint64_t)((double)held * (double)p->freerun_pm / (double)fill);
	return held - start;
}

/* Linux's pos_ratio (the global cubic), on the fill in per mille. */
static double pos_ratio(const struct srsv__pace *p, uint64_t fill)
{
	double x, pos;

	if (fill >= 1000)
		return 0;
	x = ((double)p->setpoint_pm - (double)fill) /
	    (double)(1000 - p->setpoint_pm);
	pos = 1 + x * x * x;
	return pos < 0 ? 0 : pos > 2 ? 2 : pos;
}

/*
 * Is reclaim at work: writeback in flight (ordered bytes), the preemptive
 * flusher queued or running, or tickets queued (the async flusher runs)?
 * Lock-free reads.
 */
static bool reclaim_active(const struct srsv_space *s)
{
	const struct srsv_ctx *ctx = s->ctx;

	return srsv__ld(&ctx->ordered_bytes) || srsv__ld(&ctx->preempt_busy) ||
	       srsv__ld(&s->reclaim_size);
}

/*
 * Once per window, by one thread: what reclaim gave back since the last
 * sample is what was charged less what reclaimable space grew by.  As
 * Linux's __wb_update_bandwidth(), a window is only taken when enough
 * time has passed, and quiet periods are skipped: a window more than
 * SRSV__PACE_QUIET_NS long (no paced writer came for that long: the
 * writers were idle, and reclaim ran out of work somewhere in it) only
 * restarts the measurement.  A window that ends with reclaim idle may
 * raise the estimate but not lower it, as one below the setpoint: what
 * it gave back measured how much there was to reclaim, not how fast
 * reclaim can go.  (Before these two rules, bursty writers, 20 ms on and
 * 20 ms off, had their windows straddle the idle phases and the estimate
 * fell to a tenth of the device's rate: 12.7 k writes/s against 24-29 k
 * without pacing, on the stall benchmark.)
 */
static void sample_bw(struct srsv_space *s, struct srsv__pace *p,
		      uint64_t now, uint64_t held, uint64_t fill)
{
	AO_t mark = AO_load_acquire(&p->sampling);
	uint64_t reclaimed, dt, bw, rate;
	double freed;

	/* sampling holds the last sample's time, or 1 while one runs. */
	if (mark == 1 || now - (uint64_t)mark < SRSV__PACE_WINDOW_NS ||
	    !AO_compare_and_swap_full(&p->sampling, mark, 1))
		return;
	/*
	 * What reclaim gave back, as a running mark: for metadata, bytes
	 * charged less what is held (reclaim frees what was charged); for
	 * a data pool, whose reservations are exact and become used, the
	 * bytes that became free (a cleaner's or a commit's).
	 */
	reclaimed = p->data ? srsv__ld(&s->stat_freed) :
		    srsv__ld(&s->charged) - held;
	dt = now - p->mark_ns;
	if (p->mark_ns && dt <= SRSV__PACE_QUIET_NS) {
		freed = (double)(int64_t)(reclaimed - p->mark_reclaimed);
		rate = freed > 0 ? (uint64_t)(freed * 1e9 / (double)dt) : 0;
		bw = srsv__ld(&p->bw);
		/*
		 * Hysteresis for a data pool: one commit or cleaning pass
		 * that frees much at once (a bulk unpin) is not a reclaim
		 * rate; taught as one, the estimate would let the writers
		 * run flat out, fill the pool again and queue tickets: the
		 * sawtooth of ZFS's throttle after a txg sync (openzfs
		 * #12868).  A window counts for at most twice the estimate,
		 * so the estimate rises by at most a quarter per window.
		 */
		if (p->data && bw && rate > 2 * bw)
			rate = 2 * bw;
		/*
		 * Below the setpoint reclaim is not the bottleneck: what it
		 * gave back measures the demand, not what it can do, so it
		 * may raise the estimate but not lower it.  (Linux measures
		 * the device's write bandwidth while writeback runs; we can
		 * only see what reclaim returned.)  Likewise when reclaim
		 * has nothing in flight at the window's end.
		 */
		if (!bw)
			bw = rate;
		else if (rate > bw ||
			 (fill >= p->setpoint_pm && reclaim_active(s)))
			bw = (3 * bw + rate) / 4;
		srsv__st(&p->bw, bw);
	} else if (p->mark_ns) {
		AO_fetch_and_add1(&p->stat_quiet);
	}
	p->mark_ns = now;
	p->mark_reclaimed = reclaimed;
	/* Never 1 (busy) nor 0 is a valid later time on this clock. */
	AO_store_release(&p->sampling, (AO_t)(now > 1 ? now : 2));
}

static void stat_max(volatile AO_t *w, uint64_t v)
{
	AO_t old;

	do {
		old = AO_load(w);
		if ((uint64_t)old >= v)
			return;
	} while (!AO_compare_and_swap_full(w, old, (AO_t)v));
}

/* Book @cost_ns on the slot clock; the delay until our slot starts. */
static uint64_t book_slot(struct srsv__pace *p, uint64_t now, uint64_t cost)
{
	AO_t old, next;
	uint64_t base;

	do {
		old = AO_load(&p->next_ns);
		/* Up to SRSV__PACE_BANK_NS of slots missed by late wake-ups
		 * may still be used (see "The slot clock" above). */
		base = srsv__max((uint64_t)old, now - SRSV__PACE_BANK_NS);
		/* A collapsed estimate must not book the far future: the
		 * clock never runs more than one longest delay ahead. */
		next = (AO_t)srsv__min(base + cost, now + p->max_delay_ns);
	} while (!AO_compare_and_swap_full(&p->next_ns, old, next));
	return base > now ? srsv__min(base - now, p->max_delay_ns) : 0;
}

uint64_t srsv__pace(struct srsv_space *s, uint64_t bytes, int mode,
		    unsigned flags)
{
	struct srsv__pace *p = s->pace;
	struct srsv_ctx *ctx = s->ctx;
	uint64_t now, held, fill, bw, cost, delay, until, t, slept;
	double rate;
	bool eased = false;

	/* Writers of their pool's normal modes; never a mover, which
	 * frees more than it takes. */
	if ((mode != SRSV_FLUSH_ALL && mode != SRSV_FLUSH_ALL_STEAL &&
	     mode != SRSV_FLUSH_DATA) || (flags & SRSV_RESERVE_MOVER))
		return 0;
	/* Without preemptive flushing nothing reclaims before the tickets:
	 * pacing would only slow writers that nobody catches up with. */
	if (srsv__in_callback() || !srsv__ld(&ctx->preempt_enabled))
		return 0;
	now = pace_now();
	fill = fill_pm(s, &held);
	sample_bw(s, p, now, held, fill);
	/*
	 * Below freerun the writers run free, but for a data pool in an
	 * episode (its writers slept since the fill was last this low) only
	 * below half of freerun: in between they are admitted at twice the
	 * reclaim rate (pos_ratio's cap), so that a bulk unpin, which drops
	 * the fill at once, brings them back to full speed gradually instead
	 * of letting them refill the pool flat out (the hysteresis of DATA
	 * POOLS above).
	 */
	if (fill < p->freerun_pm &&
	    (!p->data || !AO_load(&p->episode) || fill < p->freerun_pm / 2)) {
		if (AO_load(&p->episode))
			AO_store(&p->episode, 0);
		return 0;
	}
	bw = srsv__ld(&p->bw);
	if (!bw)
		return 0;	/* nothing measured yet: tickets protect */
	rate = (double)bw * pos_ratio(p, fill);
	cost = rate > 0 ? (uint64_t)((double)bytes * 1e9 / rate) :
	       p->max_delay_ns;
	cost = srsv__min(cost, p->max_delay_ns);
	delay = book_slot(p, now, cost);
	if (flags & SRSV_RESERVE_NOWAIT) {
		AO_fetch_and_add1(&p->stat_nowait);
		AO_fetch_and_add(&p->stat_nowait_ns, (AO_t)delay);
		srsv__trace_pace(s, bytes, delay, 0, bw, fill, true);
		return 0;
	}
	/*
	 * A delay shorter than the quantum is not slept: the slot stays
	 * booked, so the next reservation waits behind it and the rate
	 * holds; this writer is at most a quantum early.  Small delays add
	 * up on the clock until one reservation finds its slot a quantum or
	 * more away and sleeps for all of them (balance_dirty_pages()
	 * likewise lets a task dirty nr_dirtied_pause pages between pauses).
	 */
	if (delay < srsv__min(SRSV__PACE_QUANTUM_NS, p->max_delay_ns)) {
		if (delay)
			AO_fetch_and_add1(&p->stat_short);
		return 0;
	}
	/*
	 * The first sleep since the fill was last below freerun: preemptive
	 * flushing did not keep up, as when a ticket starts the async
	 * flusher, so the clamp goes up the same way.
	 */
	if (!AO_load(&p->episode) &&
	    AO_compare_and_swap_full(&p->episode, 0, 1)) {
		srsv__lock(&s->lock);
		srsv__maybe_clamp_preempt(s);
		srsv__unlock(&s->lock);
	}
	/* Counted while asleep: shutdown waits for us (and wakes us). */
	if (!srsv__ctx_enter(ctx))
		return 0;
	until = now + delay;
	for (t = now; t < until;) {
		uint64_t f;

		pace_sleep(srsv__min(until - t, SRSV__PACE_CHUNK_NS));
		t = pace_now();
		if (srsv__ld(&ctx->closing))
			break;
		f = fill_pm(s, &held);
		if (f < p->freerun_pm) {
			eased = true;
			break;
		}
	}
	srsv__ctx_leave_waited(ctx);
	slept = t - now;
	AO_fetch_and_add1(&p->stat_paced);
	AO_fetch_and_add(&p->stat_delay_ns, (AO_t)slept);
	stat_max(&p->stat_max_delay_ns, slept);
	if (eased)
		AO_fetch_and_add1(&p->stat_eased);
	srsv__trace_pace(s, bytes, delay, slept, bw, fill, false);
	return slept;
}

void srsv__pace_get_stats(struct srsv_space *s, struct srsv__pace_stats *st)
{
	struct srsv__pace *p = s->pace;
	uint64_t held;

	memset(st, 0, sizeof(*st));
	if (!p)
		return;
	st->paced = srsv__ld(&p->stat_paced);
	st->delay_ns = srsv__ld(&p->stat_delay_ns);
	st->max_delay_ns = srsv__ld(&p->stat_max_delay_ns);
	st->eased = srsv__ld(&p->stat_eased);
	st->nowait = srsv__ld(&p->stat_nowait);
	st->nowait_ns = srsv__ld(&p->stat_nowait_ns);
	st->quiet = srsv__ld(&p->stat_quiet);
	st->short_delays = srsv__ld(&p->stat_short);
	st->bw = srsv__ld(&p->bw);
	st->fill_pm = fill_pm(s, &held);
}
