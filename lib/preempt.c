/* SPDX-License-Identifier: MIT */
/*
 * Preemptive flushing and the adaptive clamp (btrfs 5.11, "Improve
 * preemptive ENOSPC flushing", in its current upstream form).
 *
 * WHY FLUSH BEFORE ANYONE WAITS
 *
 * With tickets alone, nothing is flushed until a writer cannot reserve.
 * Writers then run up to the limit, all stop while the flusher works, run
 * again: a sawtooth (the series measured 13.4 MiB/s; flushing early in the
 * background gave 18.0 MiB/s).  So after every successful metadata
 * reservation the reserve path asks need_preemptive_reclaim(); when it says
 * yes and the preemptive worker is idle, the worker is queued.  The worker
 * loops while the answer stays yes, each time flushing a quarter of
 * whichever pool holds the most reclaimable space: dirty data (DELALLOC)
 * when its metadata outweighs the other reservations combined, else pinned
 * space (COMMIT_TRANS) when it outweighs the deferred work and the pool
 * would run out of room before a commit could help
 * (preempt_commit_worth_it()), else deferred items or deferred references.
 *
 * THE CLAMP
 *
 * The threshold is "reclaimable >= free space >> clamp", clamp in 1..8: at
 * 1 we start when reclaimable space reaches half the free space, at 8 at
 * 1/256 of it.  A workload that outruns the preemptive flusher is noticed
 * when a normal ticket has to start async flushing while dirty data is
 * still growing faster than it is written (ordered < delalloc): the clamp
 * goes up (maybe_clamp_preempt()).  When the async flusher has granted
 * every ticket it hands over to the preemptive flusher, which builds the
 * headroom the ticket walk (reclaiming just the tickets' bytes) never does.
 *
 * What the clamp buys is headroom when a burst starts: between bursts the
 * flusher brings reclaimable space down to free >> clamp, so a burst of
 * more than half the free space fits at clamp 2 or 3 and queues tickets
 * at clamp 1.  It must therefore stay up between the bursts.  It comes
 * down one step after a preemptive run that needed only one loop while
 * no ticket is queued: we were early enough (upstream's rule, which at a
 * high clamp seldom fires: a run reclaims a quarter per loop against a
 * threshold of free >> clamp).  And, beyond upstream, after a run that
 * ends a quiet period, SRSV__CLAMP_QUIET_NS in which no ticket was queued,
 * no paced writer slept (pace.c) and the clamp did not move: without it
 * one ticket episode left a steady workload at clamp 2-3 for good,
 * flushing 3.7 times as often.  An earlier version lowered it after any
 * run during which no ticket was queued instead; between two bursts that
 * is every run, so each burst raised the clamp and the gap after it
 * lowered it again (the stall benchmark's bursts of 70% of the free
 * space every 20 ms: clamp mean 2.0, 73 steps up and 73 down in 3 s, p99
 * 0.66x clamp 1's where clamp 8 and the quiet period give under 0.01x).  A
 * second is long against the gaps between the bursts the clamp was
 * raised for and short against a workload's phases.  Lowering is a
 * probe: if the looser clamp lets the next burst queue tickets, the
 * clamp goes up again, at most one ticket episode per quiet period.
 *
 * NOT SPINNING
 *
 * Flushing cannot help a pool that is plainly full or mostly held by the
 * global reserve (bugzilla 212185, preemptive flushing burned CPU on
 * nearly full file systems): need_preemptive_reclaim() says no above 90%
 * used, when the global reserve covers what is flushable, and when tickets
 * are queued (the async flusher owns the pool).  On top of upstream, a run
 * is capped at SRSV__PREEMPT_MAX_LOOPS loops, each flush is judged by its
 * own pool (dirty bytes written back, bytes unpinned, deferred reserves
 * drained), and a run in which no flush achieved anything backs off
 * before the next one is queued.
 *
 * LAYER
 *
 * Preemption sits above pacing and the engine-callback wrapper, below the
 * flush walks (which hand a pool over to it once every ticket is served)
 * and the reserve path (which queues it).  It runs as the preempt
 * worker's job (ctx.c gives it).  Pacing calls up into it once, by
 * design: a paced writer's first sleep raises the clamp
 * (srsv__maybe_clamp_preempt(), from pace.c; design.md section 23).
 */
#include "blockrsv.h"
#include "callback.h"
#include "counters.h"
#include "pace.h"
#include "preempt.h"
#include "trace.h"
#include "workers.h"

#define SRSV__CLAMP_MAX 8
/*
 * Each loop reclaims a quarter of the largest pool, so 32 loops shrink it
 * to (3/4)^32 = 0.01% of its size: a run needing more is being outpaced by
 * the writers, and ending it lets the next reservation re-evaluate (and
 * re-queue us) with fresh figures rather than flushing blind.
 */
#define SRSV__PREEMPT_MAX_LOOPS 32
/* Back-off after a fruitless run: 10 ms doubling to 1 s.  The cost of a
 * run is a few callback calls, so this bounds a hopeless pool to ~100
 * fruitless calls per second at most, instead of one run per reservation. */
#define SRSV__PREEMPT_BACKOFF_MIN_NS (10ull * 1000 * 1000)
#define SRSV__PREEMPT_BACKOFF_MAX_NS (1000ull * 1000 * 1000)

/* The floor under which preemptive flushing is pointless (its rule is in
 * counters.c, which keeps it as a word for the reservation fast path). */
static uint64_t preempt_floor(const struct srsv_space *s)
{
	return srsv__ld(&s->preempt_floor);
}

static uint64_t reclaimable(const struct srsv_space *s, uint64_t global)
{
	const struct srsv_ctx *ctx = s->ctx;
	uint64_t ordered = srsv__ld(&ctx->ordered_bytes) >> 1;
	uint64_t delalloc = srsv__ld(&ctx->delalloc_bytes);
	uint64_t may_use = srsv__space_counter(s, SRSV__MAY_USE);
	uint64_t used = srsv__space_counter(s, SRSV__PINNED);

	/*
	 * More ordered than dirty bytes (cut in half: we must be truly maxed
	 * out on ordered) means direct I/O, or writeback keeping up:
	 * flushing delalloc early gains nothing, so only the reserves we can
	 * flush directly count.  Otherwise everything reserved but the global
	 * reserve is flushable.
	 */
	if (ordered >= delalloc)
		used += srsv__std_reserved_in(s, SRSV_RSV_DELREFS) +
			srsv__std_reserved_in(s, SRSV_RSV_DELOPS);
	else if (may_use > global)
		used += may_use - global;
	return used;
}

/*
 * DATA POOLS
 *
 * btrfs flushes only metadata preemptively: its data side leans on the
 * kernel, whose background writeback starts at dirty_background_ratio and
 * whose balance_dirty_pages() paces writers long before a data ticket
 * waits.  An engine in userspace has neither, and its data debt (a log
 * store's dead records, an LSM tree's compaction garbage, a copy-on-write
 * engine's pinned extents) is freed only by its own work, which tickets
 * alone start when a writer already waits: the sawtooth again, on the
 * data pool (a log store written from the docs stalled 40-51% of its
 * run).  So a data pool is flushed preemptively too, by the same worker,
 * clamp, back-off, statistics and trace events, with a rule of its own
 * for what is reclaimable, since a data reservation is exact and writing
 * it back frees nothing:
 *
 * - the debt is what is pinned plus what the engine says it could free
 *   (srsv_space_set_reclaimable(), per flush state);
 * - the room is what is not used: the pool, with the unallocated space
 *   it can still grow into, less its used, reserved, read-only and
 *   zone-unusable bytes (reservations, pinned and free space: what the
 *   debt competes with);
 * - flushing starts when the debt reaches three quarters of the room
 *   >> (clamp - 1) (three quarters at clamp 1), above the floor, while no ticket waits (the async data
 *   walk owns the pool then), and asks for the state that frees the
 *   most: COMMIT_TRANS for the pinned bytes and what the engine reported
 *   for it, or another state the engine reported more for; a quarter of
 *   it per loop, as for metadata.
 *
 * A data ticket that has to start the async flusher raises the clamp
 * whatever the dirty data does (the metadata rule's condition is about
 * dirty data outgrowing writeback, which does not apply here).
 * SRSV_CTX_NO_DATA_PREEMPT keeps btrfs's data behaviour.
 */
static bool need_metadata_preempt(struct srsv_space *s);
static int metadata_choose(struct srsv_space *s, uint64_t *to_reclaim);

static uint64_t data_debt(const struct srsv_space *s)
{
	return srsv__space_counter(s, SRSV__PINNED) + srsv__reported_sum(s);
}

static bool need_data_preempt(struct srsv_space *s)
{
	uint64_t debt = data_debt(s), total, committed, room;

	if (debt <= preempt_floor(s) || srsv__ld(&s->reclaim_size))
		return false;
	/* The pool can still grow into unallocated space (ALLOC_CHUNK), as
	 * need_preemptive_reclaim() counts calc_available_free_space() for
	 * metadata: a pool that grows in chunks is not "full" of debt. */
	total = srsv__sat_add(srsv__space_counter(s, SRSV__TOTAL),
			      srsv__ld(&s->ctx->unallocated));
	committed = srsv__space_counter(s, SRSV__USED) +
		    srsv__space_counter(s, SRSV__RESERVED) +
		    srsv__space_counter(s, SRSV__READONLY) +
		    srsv__space_counter(s, SRSV__ZONE_UNUSABLE);
	room = total > committed ? total - committed : 0;
	/*
	 * From three quarters of the room at clamp 1, halving as the clamp
	 * rises.  A data reservation is exact: cleaning early buys only
	 * headroom, and what is cleaned later is deader (the log store's
	 * bench: half the room cost 3% of its throughput and 13% more
	 * bytes moved than a cleaner of its own; three quarters neither,
	 * the stall still 0.3-0.5%: docs/results-logstore.md).  A data
	 * ticket raises the clamp when this starts too late.
	 */
	return debt >= (room / 4 * 3) >> (srsv__ld(&s->clamp) - 1) &&
	       !srsv__ld(&s->ctx->closing);
}

/* The data pool's state that frees the most, and how much. */
static int data_choose(struct srsv_space *s, uint64_t *to_reclaim)
{
	int best = SRSV_STATE_COMMIT_TRANS;
	uint64_t most = srsv__space_counter(s, SRSV__PINNED) +
			srsv__ld(&s->reported[SRSV_STATE_COMMIT_TRANS]);

	for (int st = 1; st < SRSV_STATE_COUNT; st++) {
		uint64_t r = srsv__ld(&s->reported[st]);

		if (st != SRSV_STATE_COMMIT_TRANS && r > most) {
			most = r;
			best = st;
		}
	}
	*to_reclaim = most;
	return best;
}

bool srsv__need_preemptive_reclaim(struct srsv_space *s)
{
	if (!s->is_metadata)
		return s->data_preempt && need_data_preempt(s);
	return need_metadata_preempt(s);
}

static bool need_metadata_preempt(struct srsv_space *s)
{
	struct srsv_ctx *ctx = s->ctx;
	uint64_t used = srsv__space_counter(s, SRSV__MAY_USE) +
			srsv__space_counter(s, SRSV__PINNED);
	uint64_t global, total, bytes_used, reserved, thresh, committed;

	/*
	 * The conditions are upstream's; the order is ours: the floor test
	 * comes first because it is what answers "no" on the reservation
	 * fast path of a pool with room.  used <= floor implies
	 * used - global <= floor, so three loads suffice there.
	 */
	if (used <= preempt_floor(s))
		return false;
	global = srsv__std_reserved_in(s, SRSV_RSV_GLOBAL);
	/* What could be flushed belongs to the global reserve. */
	if (global >= used)
		return false;
	if (used - global <= preempt_floor(s))
		return false;
	/* Tickets are queued: do not compete with the async flusher. */
	if (srsv__ld(&s->reclaim_size))
		return false;
	total = srsv__space_counter(s, SRSV__TOTAL);
	bytes_used = srsv__space_counter(s, SRSV__USED);
	reserved = srsv__space_counter(s, SRSV__RESERVED);
	/* Plainly full (90%): flushing would only slow us down. */
	if (bytes_used + reserved + global >= srsv__mult_perc(total, 90))
		return false;
	/*
	 * Start when reclaimable space exceeds the clamped free space (what
	 * is free for reservations, plus what overcommit may add).  Not
	 * "used >= (total + avail) / 2": with half the pool in bytes_used and
	 * nothing available that would flush constantly.
	 */
	thresh = srsv__available_free_space(s, SRSV_FLUSH_ALL);
	committed = bytes_used + reserved + global +
		    srsv__space_counter(s, SRSV__READONLY);
	if (committed < total)
		thresh += total - committed;
	thresh >>= srsv__ld(&s->clamp);
	return reclaimable(s, global) >= thresh && !srsv__ld(&ctx->closing);
}

void srsv__queue_preempt_if_needed(struct srsv_space *s, uint64_t bytes,
				   int mode)
{
	struct srsv_ctx *ctx = s->ctx;
	uint64_t until;

	if (!srsv__need_preemptive_reclaim(s))
		return;
	until = srsv__ld(&ctx->preempt_backoff_until);
	if (until && srsv__now_ns() < until)
		return;
	if (!AO_compare_and_swap_full(&ctx->preempt_busy, 0, 1))
		return;
	srsv__trace_trigger_flush(s, bytes, mode, SRSV__REASON_PREEMPT);
	srsv__worker_kick(ctx, SRSV__WORK_PREEMPT, s->kind);
}

void srsv__maybe_clamp_preempt(struct srsv_space *s)
{
	const struct srsv_ctx *ctx = s->ctx;
	uint64_t clamp = srsv__ld(&s->clamp);

	srsv__assert_held(&s->lock);
	if (ctx->cfg.flags & SRSV_CTX_FIXED_CLAMP)
		return;
	/*
	 * Heavy on ordered I/O: clamping would not help, writeback keeps up.
	 * Dirty data outgrowing writeback is what the clamp is for, because
	 * writing delalloc does not free space 1:1 the way delayed items do.
	 * A data pool flushed preemptively by its debt (s->data_preempt)
	 * has that debt freed by the engine's own work: a data ticket that
	 * has to wait says that work started too late.  Every other pool
	 * (metadata, system, and data with SRSV_CTX_NO_DATA_PREEMPT) takes
	 * btrfs's rule.
	 */
	if ((s->data_preempt ||
	     srsv__ld(&ctx->ordered_bytes) < srsv__ld(&ctx->delalloc_bytes)) &&
	    clamp < SRSV__CLAMP_MAX) {
		srsv__st(&s->clamp, clamp + 1);
		s->stat_clamp_raised++;
	}
}

/*
 * At the end of a preemptive run of @loops loops: lower the clamp one step
 * if the run needed one loop, or if it ends a quiet period (THE CLAMP,
 * above), and no ticket is queued.  A wait (ticket queued, paced writer
 * slept) since the last look restarts the quiet period from now: the run
 * is the first to see it.  Pool lock held.
 */
static void maybe_unclamp_preempt(struct srsv_space *s, unsigned loops)
{
	uint64_t now = srsv__now_ns();
	uint64_t clamp = srsv__ld(&s->clamp);
	uint64_t waits = s->stat_queued + srsv__pace_sleeps(s);
	bool quiet;

	srsv__assert_held(&s->lock);
	quiet = s->clamp_waits == waits && s->clamp_quiet_ns &&
		now - s->clamp_quiet_ns >= SRSV__CLAMP_QUIET_NS;
	if (s->clamp_waits != waits || !s->clamp_quiet_ns) {
		s->clamp_waits = waits;
		s->clamp_quiet_ns = now;
	}
	if (clamp <= 1 || (s->ctx->cfg.flags & SRSV_CTX_FIXED_CLAMP) ||
	    srsv__ld(&s->reclaim_size) || (loops != 1 && !quiet))
		return;
	srsv__st(&s->clamp, clamp - 1);
	s->stat_clamp_lowered++;
	s->clamp_quiet_ns = now;
}

/*
 * How fast is space being pinned?  Sampled by the preempt worker at the
 * start of every loop, over windows of at least PIN_RATE_WINDOW_NS (shorter
 * ones measure the scheduler, not the workload), from the bytes ever
 * pinned (pinned + unpinned so far: it only grows).  Weight 1/4, like the
 * dirty-throttle bandwidth estimate in Linux's writeback.  Pool lock held.
 */
#define PIN_RATE_WINDOW_NS (10ull * 1000 * 1000)

static void sample_pin_rate(struct srsv_space *s)
{
	uint64_t now = srsv__now_ns();
	uint64_t mark = srsv__space_counter(s, SRSV__PINNED) + s->stat_unpinned;
	uint64_t dt = now - s->pin_mark_ns, rate;

	srsv__assert_held(&s->lock);
	if (!s->pin_mark_ns || mark < s->pin_mark) {
		s->pin_mark = mark;
		s->pin_mark_ns = now;
		return;
	}
	if (dt < PIN_RATE_WINDOW_NS)
		return;
	rate = (uint64_t)((double)(mark - s->pin_mark) * 1e9 / (double)dt);
	s->pin_rate = (3 * s->pin_rate + rate) / 4;
	s->pin_mark = mark;
	s->pin_mark_ns = now;
}

/*
 * How many commit durations ahead the commit rule looks: the room must
 * outlast the commit itself (pinning goes on while it runs; nothing is
 * freed before its end), the wait for the worker's next look (a run's
 * other flushes come first; a DELALLOC pass sleeps a jiffy) and the error
 * of two averages.
 */
#define COMMIT_HORIZON 4

/*
 * A commit is the dearest flush (it writes out the whole transaction) and
 * the only one that frees pinned space.  Upstream commits whenever pinned
 * space outweighs the deferred-work reserves: at a high clamp a commit
 * every few tens of milliseconds (the series' 7% direct-I/O regression,
 * "more commits").  Ours commits when the answer to 1 is yes and to 2
 * or 3 is yes.  Pool lock held.
 *
 * 1. Is pinned space large: at least half the free space, where it alone
 *    would trigger preemptive flushing at the loosest clamp?
 *
 * 2. Would the pool run out before a commit could help?  Pinned space
 *    saturates: once a transaction has copied every block it touches, it
 *    pins nothing more, and a commit then frees space that the next
 *    transaction pins again within moments.  Committing is worth it when
 *    the room left (free space nobody has reserved or pinned) would be
 *    used up by the measured pinning rate within COMMIT_HORIZON measured
 *    commit durations, or is gone already.  Until a commit has been timed
 *    there is no horizon: the pool commits when the room is gone (where a
 *    ticket would queue next), and that commit is timed.
 *
 * 3. While writers are paced (pace.c), is pinned space what holds them
 *    back: more than the fill is past the freerun point, and no
 *    writeback in flight (ordered bytes) that will free space without
 *    a commit?  Pacing keeps the room from running out (writers wait
 *    instead), so question 2 would never say yes while it works.  A
 *    commit takes the device from the writeback it would wait behind:
 *    on the stall benchmark's buffered writers (device saturated,
 *    writeback nearly always in flight) committing for pacing every
 *    150 ms held the paced pool at 0.95x the WriteBufferManager's
 *    throughput; with the writeback test it commits about half as often
 *    and matches it.  Its overload bursts, with the device often idle,
 *    need these commits: without any, 0.75x.
 *
 * On the stall benchmark (docs/results-stall.md) question 2 took the
 * preemptive commits from ~6/s to ~0 once pinned space saturated, while a
 * tree larger than the pool, whose pinned space keeps growing, still gets
 * its commits in time.
 */
static bool preempt_commit_worth_it(struct srsv_space *s, uint64_t global)
{
	uint64_t total = srsv__space_counter(s, SRSV__TOTAL);
	uint64_t committed = srsv__space_counter(s, SRSV__USED) +
			     srsv__space_counter(s, SRSV__RESERVED) +
			     srsv__space_counter(s, SRSV__READONLY) + global;
	uint64_t free = srsv__available_free_space(s, SRSV_FLUSH_ALL);
	uint64_t pinned = srsv__space_counter(s, SRSV__PINNED);
	uint64_t may_use = srsv__space_counter(s, SRSV__MAY_USE);
	uint64_t taken, room, excess;
	double need;

	if (committed < total)
		free += total - committed;
	if (pinned < free >> 1)
		return false;
	/*
	 * Paced writers are the pool running out, slowed down: the room
	 * never runs out, the writers wait instead.  When the pinned bytes
	 * alone are more than the fill is past the freerun point, a commit
	 * ends the pacing (measured on the stall benchmark's overload
	 * bursts: without this, pinned space held half the room for a whole
	 * transaction interval and the writers ran at 0.57x the unpaced
	 * throughput; with it 0.77x).  Not while writeback is in flight:
	 * it frees space without a commit (question 3 above).
	 */
	excess = srsv__pace_excess(s);
	if (excess && pinned >= excess && !srsv__ld(&s->ctx->ordered_bytes))
		return true;
	taken = pinned + (may_use > global ? may_use - global : 0);
	room = free > taken ? free - taken : 0;
	need = (double)s->pin_rate * (double)s->commit_ns * COMMIT_HORIZON / 1e9;
	return (double)room <= need;
}

int srsv__preempt_choose(struct srsv_space *s, uint64_t *to_reclaim)
{
	if (!s->is_metadata)
		return data_choose(s, to_reclaim);
	return metadata_choose(s, to_reclaim);
}

static int metadata_choose(struct srsv_space *s, uint64_t *to_reclaim)
{
	uint64_t global = srsv__std_reserved_in(s, SRSV_RSV_GLOBAL);
	uint64_t delayed = srsv__std_reserved_in(s, SRSV_RSV_DELOPS);
	uint64_t delayed_refs = srsv__std_reserved_in(s, SRSV_RSV_DELREFS);
	uint64_t trans = srsv__std_reserved_in(s, SRSV_RSV_TRANS);
	uint64_t may_use = srsv__space_counter(s, SRSV__MAY_USE);
	uint64_t pinned = srsv__space_counter(s, SRSV__PINNED);
	uint64_t block_rsv_size = global + delayed + delayed_refs + trans;
	uint64_t delalloc_size = 0;
	bool commit = preempt_commit_worth_it(s, global);

	/*
	 * There is no exact figure for the metadata reserved for dirty data:
	 * it is what may_use holds beyond the block reserves.  (Not the dirty
	 * byte count: one large extent of data needs little metadata.)
	 */
	if (block_rsv_size < may_use)
		delalloc_size = may_use - block_rsv_size;
	/* The global reserve is not ours to flush. */
	block_rsv_size -= global;
	/*
	 * Writing back more dirty data frees nothing sooner while earlier
	 * writeback is still in flight: the new pages queue behind it, while
	 * deferred refs and items free their reservations the moment they
	 * run.  So while writeback is in flight (ordered bytes), dirty data
	 * counts only when nothing else can be flushed.  (Found with the
	 * stall benchmark: repeated DELALLOC picks let deferred refs pile up
	 * until tickets queued.)
	 */
	if (srsv__ld(&s->ctx->ordered_bytes) &&
	    (block_rsv_size || (commit && pinned)))
		delalloc_size = 0;
	/*
	 * Flushing dirty data early hurts allocation patterns, so only do it
	 * when it outweighs all the other pools together.  Upstream leaves
	 * pinned space out of "the other pools" and so never commits while
	 * dirty data outweighs the deferred-work reserves, even when pinned
	 * space is the bulk of what could be reclaimed; the series' stated
	 * rule is "flush whichever pool has the highest usage", and a small
	 * pool full of pinned bytes otherwise flushes dirty data for ever
	 * while only a commit would help.  So pinned counts here, when a
	 * commit is worth it at all.
	 */
	if (delalloc_size > block_rsv_size + (commit ? pinned : 0)) {
		*to_reclaim = delalloc_size;
		return SRSV_STATE_DELALLOC;
	}
	/* Mostly pinned: commit (nobody waits, so no ticket-size logic). */
	if (commit && pinned > delayed + delayed_refs) {
		*to_reclaim = pinned;
		return SRSV_STATE_COMMIT_TRANS;
	}
	if (delayed > delayed_refs) {
		*to_reclaim = delayed;
		return SRSV_STATE_DELAYED_ITEMS_NR;
	}
	*to_reclaim = delayed_refs;
	return SRSV_STATE_DELAYED_REFS_NR;
}

/*
 * A monotonic measure of what flushing @state has achieved so far: dirty
 * bytes written back, bytes unpinned by commits, bytes that left the
 * deferred-work reserves.  Pool lock held.
 */
static uint64_t progress_mark(struct srsv_space *s, int state)
{
	struct srsv_ctx *ctx = s->ctx;

	/* A data pool's flushes are judged by what became free. */
	if (!s->is_metadata)
		return srsv__ld(&s->stat_freed);
	switch (state) {
	case SRSV_STATE_DELALLOC:
		return srsv__ld(&ctx->delalloc_cleaned);
	case SRSV_STATE_COMMIT_TRANS:
		return s->stat_unpinned;
	case SRSV_STATE_DELAYED_ITEMS_NR:
		return srsv__ld(&ctx->std_rsv_drained[SRSV_RSV_DELOPS]);
	default:
		return srsv__ld(&ctx->std_rsv_drained[SRSV_RSV_DELREFS]);
	}
}

/* Two loops in a row that achieved nothing end a run. */
#define SRSV__PREEMPT_MAX_FRUITLESS 2

void srsv__preempt_reclaim(struct srsv_space *s)
{
	struct srsv_ctx *ctx = s->ctx;
	unsigned loops = 0, progress = 0, fruitless = 0;
	uint64_t backoff;

	srsv__lock(&s->lock);
	s->stat_preempt_runs++;
	while (loops < SRSV__PREEMPT_MAX_LOOPS &&
	       fruitless < SRSV__PREEMPT_MAX_FRUITLESS &&
	       srsv__ld(&ctx->preempt_enabled)) {
		uint64_t tickets_id = s->tickets_id;
		uint64_t to_reclaim, mark, excess;
		int state;

		if (!srsv__need_preemptive_reclaim(s))
			break;
		loops++;
		sample_pin_rate(s);
		state = srsv__preempt_choose(s, &to_reclaim);
		mark = progress_mark(s, state);
		srsv__unlock(&s->lock);
		/*
		 * A portion, not everything; never less than one item.  While
		 * writers are paced, at least what holds them back, and all
		 * the dirty data when no writeback is in flight: reclaim is
		 * idle while writers wait, and writing back early no longer
		 * spares anyone (Linux starts background writeback of all it
		 * can when it throttles a task).  Measured on the stall
		 * benchmark's overload workload, the device 42% -> 52% busy,
		 * pacing 0.78x -> 0.92x clamp 1's throughput.
		 */
		excess = srsv__pace_excess(s);
		if (!excess || state != SRSV_STATE_DELALLOC ||
		    srsv__ld(&ctx->ordered_bytes))
			to_reclaim >>= 2;
		to_reclaim = srsv__max(to_reclaim, excess);
		if (!to_reclaim)
			to_reclaim = ctx->cfg.item_bytes;
		srsv__flush_space(s, to_reclaim, state, true);
		srsv__lock(&s->lock);
		/*
		 * Judge the flush by its own pool (writers keep reserving
		 * meanwhile, so the totals would hide it): a commit that
		 * unpinned nothing or a writeback that wrote nothing did not
		 * help, and repeating it at once would only burn CPU.
		 */
		if (progress_mark(s, state) != mark ||
		    s->tickets_id != tickets_id) {
			progress++;
			fruitless = 0;
		} else {
			fruitless++;
		}
	}
	if (loops)
		maybe_unclamp_preempt(s, loops);
	srsv__trace_dump(s, SRSV__DUMP_DONE_PREEMPTIVE_RECLAIM);
	srsv__unlock(&s->lock);

	/*
	 * A run in which no flush achieved anything backs off before the
	 * next one may be queued; a run that helped clears the back-off,
	 * even when it ended on fruitless flushes.  (Runs that help end
	 * that way all the time: the dirty pages are all under writeback
	 * and the next DELALLOC finds nothing to start.  Backing those off,
	 * doubling, held the preemptive flusher idle for up to a second
	 * while writers paced on a full pool: measured on the stall
	 * benchmark's abusive workload, the device 22% busy.)
	 */
	backoff = srsv__ld(&ctx->preempt_backoff_ns);
	if (!progress && fruitless >= SRSV__PREEMPT_MAX_FRUITLESS) {
		backoff = backoff ? srsv__min(backoff * 2,
					      SRSV__PREEMPT_BACKOFF_MAX_NS) :
				    SRSV__PREEMPT_BACKOFF_MIN_NS;
		srsv__st(&ctx->preempt_backoff_ns, backoff);
		srsv__st(&ctx->preempt_backoff_until, srsv__now_ns() + backoff);
	} else if (progress && backoff) {
		srsv__st(&ctx->preempt_backoff_ns, 0);
		srsv__st(&ctx->preempt_backoff_until, 0);
	}
	AO_store_release(&ctx->preempt_busy, 0);
}
