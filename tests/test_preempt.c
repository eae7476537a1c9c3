/* SPDX-License-Identifier: MIT */
/*
 * Preemptive flushing and the clamp ("Improve preemptive ENOSPC flushing", btrfs 5.11).
 *
 * White-box: links the static library to call need_preemptive_reclaim()
 * and the preempt worker's choice directly on counter states built through
 * the public API, and to pin the clamp.  Everything runs in manual mode, so
 * the preemptive worker only runs inside srsv_ctx_run_pending().
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "callback.h"
#include "internal.h"
#include "preempt.h"
#include "engine_sim.h"

#define MiB ESIM_MIB
#define GiB ESIM_GIB

/* One row of the table: a pool state and what the heuristic must say. */
struct row {
	const char *why;		/* the rule the row exercises */
	uint64_t used, pinned, reserved, readonly;
	uint64_t plain;			/* may_use not held by any rsv */
	uint64_t global, delops, delrefs, trans;
	uint64_t delalloc, ordered;
	uint64_t unallocated;
	unsigned clamp;
	uint64_t reclaim_size;		/* as if tickets were queued */
	bool need;			/* need_preemptive_reclaim() */
	int state;			/* preempt_choose(), 0: not checked */
	uint64_t to_reclaim;		/* with state */
};

/*
 * The pool is 1 GiB of metadata.  Its preemptive floor is 1/32 of it,
 * 32 MiB; 90% of it is 921.6 MiB.  Sizes are MiB.
 */
#define TOTAL GiB

static const struct row rows[] = {
	{ .why = "empty pool: nothing to flush (floor)",
	  .need = false },
	{ .why = "below the 32 MiB floor of a 1 GiB pool",
	  .plain = 30 * MiB, .delalloc = 1, .need = false },
	{ .why = "just above the floor, but far from the half-free threshold",
	  .plain = 40 * MiB, .delalloc = 1, .need = false },
	{ .why = "delalloc-heavy: 600 MiB reclaimable >= 1 GiB free >> 1",
	  .plain = 600 * MiB, .delalloc = 1, .need = true,
	  .state = SRSV_STATE_DELALLOC, .to_reclaim = 600 * MiB },
	{ .why = "500 MiB: below 1 GiB >> 1 minus nothing",
	  .plain = 500 * MiB, .delalloc = 1, .need = false },
	{ .why = "clamp 2 halves the threshold: 300 MiB >= 1 GiB >> 2",
	  .plain = 300 * MiB, .delalloc = 1, .clamp = 2, .need = true,
	  .state = SRSV_STATE_DELALLOC, .to_reclaim = 300 * MiB },
	{ .why = "same 300 MiB at clamp 1 is not enough",
	  .plain = 300 * MiB, .delalloc = 1, .clamp = 1, .need = false },
	{ .why = "clamp 8: 5 MiB of delalloc >= 1 GiB >> 8 but under the floor",
	  .plain = 5 * MiB, .delalloc = 1, .clamp = 8, .need = false },
	{ .why = "clamp 8 above the floor: 40 MiB >= 4 MiB",
	  .plain = 40 * MiB, .delalloc = 1, .clamp = 8, .need = true,
	  .state = SRSV_STATE_DELALLOC, .to_reclaim = 40 * MiB },
	{ .why = "pinned 300 MiB is under half of the 624 MiB free: no "
		 "commit yet, the deferred refs go first",
	  .used = 400 * MiB, .pinned = 300 * MiB, .delops = 10 * MiB,
	  .delrefs = 10 * MiB, .need = true,
	  .state = SRSV_STATE_DELAYED_REFS_NR, .to_reclaim = 10 * MiB },
	{ .why = "pinned-heavy: pinned >= half the free space and no room "
		 "left (624 MiB free, 320 + 20 + 284 taken): commit",
	  .used = 400 * MiB, .pinned = 320 * MiB, .delops = 10 * MiB,
	  .delrefs = 10 * MiB, .plain = 284 * MiB, .need = true,
	  .state = SRSV_STATE_COMMIT_TRANS, .to_reclaim = 320 * MiB },
	{ .why = "pinned outweighs delalloc: commit, not writeback "
		 "(pinned counts among the other pools; no room left)",
	  .used = 100 * MiB, .pinned = 500 * MiB, .plain = 424 * MiB,
	  .delalloc = 1, .need = true,
	  .state = SRSV_STATE_COMMIT_TRANS, .to_reclaim = 500 * MiB },
	{ .why = "pinned below half the free space does not count against "
		 "delalloc: writeback",
	  .used = 100 * MiB, .pinned = 350 * MiB, .plain = 300 * MiB,
	  .delalloc = 1, .need = true,
	  .state = SRSV_STATE_DELALLOC, .to_reclaim = 300 * MiB },
	{ .why = "delalloc outweighs pinned and the reserves: writeback",
	  .used = 100 * MiB, .pinned = 100 * MiB, .plain = 400 * MiB,
	  .delalloc = 1, .need = true,
	  .state = SRSV_STATE_DELALLOC, .to_reclaim = 400 * MiB },
	{ .why = "direct I/O: ordered/2 >= delalloc counts only the "
		 "delayed rsvs, so 600 MiB of plain reservations do not count",
	  .plain = 600 * MiB, .delalloc = 10 * MiB, .ordered = 100 * MiB,
	  .need = false },
	{ .why = "ordered exactly 2x delalloc still counts as direct I/O",
	  .plain = 600 * MiB, .delalloc = 50 * MiB, .ordered = 100 * MiB,
	  .need = false },
	{ .why = "ordered just under 2x delalloc: buffered, flush",
	  .plain = 600 * MiB, .delalloc = 50 * MiB,
	  .ordered = 100 * MiB - 2, .need = true,
	  .state = SRSV_STATE_DELALLOC, .to_reclaim = 600 * MiB },
	{ .why = "writeback in flight (ordered > 0): refs go first, more "
		 "writeback would free nothing sooner",
	  .plain = 500 * MiB, .delrefs = 100 * MiB, .delalloc = 10 * MiB,
	  .ordered = 4 * MiB, .need = true,
	  .state = SRSV_STATE_DELAYED_REFS_NR, .to_reclaim = 100 * MiB },
	{ .why = "the same with nothing in flight: writeback",
	  .plain = 500 * MiB, .delrefs = 100 * MiB, .delalloc = 10 * MiB,
	  .need = true, .state = SRSV_STATE_DELALLOC, .to_reclaim = 500 * MiB },
	{ .why = "delayed items dominate (clamp 2): run delayed items",
	  .pinned = 50 * MiB, .used = 50 * MiB, .delops = 200 * MiB,
	  .delrefs = 100 * MiB, .clamp = 2, .need = true,
	  .state = SRSV_STATE_DELAYED_ITEMS_NR, .to_reclaim = 200 * MiB },
	{ .why = "delayed items alone at clamp 1: 350 MiB < 512 MiB",
	  .pinned = 50 * MiB, .used = 50 * MiB, .delops = 200 * MiB,
	  .delrefs = 100 * MiB, .clamp = 1, .need = false },
	{ .why = "delayed refs dominate (clamp 2): run delayed refs",
	  .pinned = 50 * MiB, .used = 50 * MiB, .delops = 100 * MiB,
	  .delrefs = 200 * MiB, .clamp = 2, .need = true,
	  .state = SRSV_STATE_DELAYED_REFS_NR, .to_reclaim = 200 * MiB },
	{ .why = "the trans rsv counts against delalloc in the choice",
	  .plain = 300 * MiB, .trans = 310 * MiB, .delalloc = 1, .clamp = 1,
	  .need = true, .state = SRSV_STATE_DELAYED_REFS_NR, .to_reclaim = 0 },
	{ .why = "tickets queued: the async flusher owns the pool",
	  .plain = 600 * MiB, .delalloc = 1, .reclaim_size = 4096,
	  .need = false },
	{ .why = "plainly full: used+reserved >= 90%",
	  .used = 900 * MiB, .reserved = 30 * MiB, .plain = 60 * MiB,
	  .delalloc = 1, .clamp = 8, .need = false },
	{ .why = "the global rsv counts toward the 90% cutoff",
	  .used = 850 * MiB, .global = 80 * MiB, .plain = 60 * MiB,
	  .delalloc = 1, .clamp = 8, .need = false },
	{ .why = "without the global rsv the same pool is not plainly full",
	  .used = 850 * MiB, .plain = 140 * MiB, .delalloc = 1, .clamp = 2,
	  .need = true, .state = SRSV_STATE_DELALLOC, .to_reclaim = 140 * MiB },
	{ .why = "mostly global rsv (bugzilla 212185): flushable <= floor",
	  .global = 500 * MiB, .plain = 20 * MiB, .delalloc = 1, .clamp = 8,
	  .need = false },
	{ .why = "all of it global rsv: nothing flushable",
	  .global = 600 * MiB, .delalloc = 1, .clamp = 8, .need = false },
	{ .why = "overcommit room raises the threshold: 550 MiB < "
		 "(1 GiB + (9 GiB >> 6)) >> 1",
	  .plain = 550 * MiB, .delalloc = 1, .unallocated = 10 * GiB,
	  .need = false },
	{ .why = "overcommit room: 600 MiB >= 584 MiB",
	  .plain = 600 * MiB, .delalloc = 1, .unallocated = 10 * GiB,
	  .need = true, .state = SRSV_STATE_DELALLOC, .to_reclaim = 600 * MiB },
	{ .why = "readonly space shrinks the free part of the threshold",
	  .readonly = 400 * MiB, .plain = 320 * MiB, .delalloc = 1,
	  .need = true, .state = SRSV_STATE_DELALLOC, .to_reclaim = 320 * MiB },
};

static void reserve_nf(struct srsv_space *s, uint64_t bytes)
{
	if (bytes)
		ck_assert_int_eq(srsv_space_reserve(s, bytes, SRSV_NO_FLUSH, 0), 0);
}

static void add_rsv(struct srsv_ctx *ctx, int type, uint64_t bytes)
{
	if (bytes)
		ck_assert_int_eq(srsv_rsv_add(srsv_ctx_rsv(ctx, type), bytes,
					      SRSV_NO_FLUSH, 0), 0);
}

/* Build the row's state in a fresh manual ctx (no preemptive worker). */
static struct esim *build(const struct row *r, struct srsv_space **out)
{
	struct esim *sim = esim_setup(SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT, 0,
				      TOTAL, r->unallocated);
	struct srsv_space *s = esim_space(sim, SRSV_POOL_METADATA);
	struct srsv_ctx *ctx = sim->ctx;

	/* Referenced space (used + pinned), then allocated-only space. */
	reserve_nf(s, r->used + r->pinned + r->reserved);
	if (r->used + r->pinned + r->reserved) {
		ck_assert_int_eq(srsv_space_alloc(s, r->used + r->pinned +
						  r->reserved), 0);
	}
	if (r->used + r->pinned)
		ck_assert_int_eq(srsv_space_commit_used(s, r->used + r->pinned),
				 0);
	if (r->pinned)
		ck_assert_int_eq(srsv_space_pin(s, r->pinned), 0);
	if (r->readonly)
		ck_assert_int_eq(srsv_space_set_readonly(s, r->readonly, false),
				 0);
	if (r->global)
		ck_assert_int_eq(srsv_ctx_resize_global_rsv(ctx, r->global), 0);
	add_rsv(ctx, SRSV_RSV_DELOPS, r->delops);
	add_rsv(ctx, SRSV_RSV_DELREFS, r->delrefs);
	add_rsv(ctx, SRSV_RSV_TRANS, r->trans);
	reserve_nf(s, r->plain);
	ck_assert_int_eq(srsv_ctx_account_delalloc(ctx, (int64_t)r->delalloc,
						   (int64_t)r->ordered), 0);
	srsv__st(&s->clamp, r->clamp ? r->clamp : 1);
	srsv__st(&s->reclaim_size, r->reclaim_size);
	*out = s;
	return sim;
}

static void teardown_row(struct esim *sim, struct srsv_space *s)
{
	srsv__st(&s->reclaim_size, 0);
	esim_free(sim);
}

START_TEST(test_need_table)
{
	const struct row *r = &rows[_i];
	struct srsv_space *s;
	struct esim *sim = build(r, &s);
	bool need = srsv__need_preemptive_reclaim(s);

	ck_assert_msg(need == r->need, "row %d (%s): need=%d, expected %d",
		      _i, r->why, need, r->need);
	if (r->state) {
		uint64_t to_reclaim = 0;
		int state;

		srsv__lock(&s->lock);
		state = srsv__preempt_choose(s, &to_reclaim);
		srsv__unlock(&s->lock);
		ck_assert_msg(state == r->state,
			      "row %d (%s): chose %s, expected %s", _i, r->why,
			      srsv_state_name(state), srsv_state_name(r->state));
		ck_assert_msg(to_reclaim == r->to_reclaim,
			      "row %d (%s): to_reclaim %" PRIu64 ", expected %"
			      PRIu64, _i, r->why, to_reclaim, r->to_reclaim);
	}
	teardown_row(sim, s);
}
END_TEST

/*
 * A manual ctx with preemptive flushing on, and a 1 GiB metadata pool in
 * the delalloc-heavy state of the table (need = true at clamp 1).
 */
static struct esim *preempt_sim(struct srsv_space **out, uint64_t plain)
{
	struct esim *sim = esim_setup(SRSV_CTX_MANUAL, 0, TOTAL, 0);
	struct srsv_space *s = esim_space(sim, SRSV_POOL_METADATA);

	if (plain)
		reserve_nf(s, plain);
	esim_hold(sim, SRSV_POOL_METADATA, plain);
	ck_assert_int_eq(srsv_ctx_account_delalloc(sim->ctx, 64 * MiB, 0), 0);
	*out = s;
	return sim;
}

START_TEST(test_preempt_queued_from_fast_path_once)
{
	struct srsv_space *s;
	struct esim *sim = preempt_sim(&s, 600 * MiB);
	struct srsv_space_info info;

	/* Two reservations with room: the first queues the worker, the
	 * second sees it busy. */
	reserve_nf(s, 1 * MiB);
	reserve_nf(s, 1 * MiB);
	esim_hold(sim, SRSV_POOL_METADATA, 2 * MiB);
	ck_assert_int_eq(srsv_ctx_run_pending(sim->ctx), 1);
	info = esim_snap(s);
	ck_assert_uint_eq(info.preempt_runs, 1);
	/* Nothing flushable was freed (NOP engine) but the call was made. */
	ck_assert_uint_ge(esim_calls(sim, SRSV_STATE_DELALLOC), 1);
	esim_free(sim);
}
END_TEST

START_TEST(test_preempt_loop_flushes_quarter_until_done)
{
	struct srsv_space *s;
	struct esim *sim = preempt_sim(&s, 600 * MiB);
	struct esim_action a = { .state = SRSV_STATE_DELALLOC, .pool = ESIM_ANY,
				 .preempt = 1, .op = ESIM_RELEASE,
				 .arg = 100 * MiB };
	enum srsv_flush_state states[64];
	struct esim_call c;
	size_t n;

	esim_add(sim, &a);
	reserve_nf(s, 1 * MiB);		/* queues the preemptive worker */
	esim_hold(sim, SRSV_POOL_METADATA, 1 * MiB);
	ck_assert_int_eq(srsv_ctx_run_pending(sim->ctx), 1);
	/*
	 * 601 MiB reclaimable against a 512 MiB threshold: one DELALLOC
	 * flush of a quarter of the 601 MiB frees 100 MiB, then 501 < 512
	 * and the run ends after one loop.
	 */
	n = esim_log_states(sim, ESIM_ANY, false, states, 64);
	ck_assert_uint_eq(n, 1);
	ck_assert(esim_log_get(sim, 0, &c));
	ck_assert(c.for_preempt);
	ck_assert_int_eq(c.state, SRSV_STATE_DELALLOC);
	ck_assert_uint_eq(c.bytes, 601 * MiB / 4);
	ck_assert(!srsv__need_preemptive_reclaim(s));
	esim_free(sim);
}
END_TEST

START_TEST(test_no_preempt_when_disabled_at_runtime)
{
	struct srsv_space *s;
	struct esim *sim = preempt_sim(&s, 600 * MiB);

	ck_assert_int_eq(srsv_ctx_set_preempt(sim->ctx, false), 0);
	reserve_nf(s, 1 * MiB);
	ck_assert_int_eq(srsv_ctx_run_pending(sim->ctx), 0);
	ck_assert_int_eq(srsv_ctx_set_preempt(sim->ctx, true), 0);
	reserve_nf(s, 1 * MiB);
	ck_assert_int_eq(srsv_ctx_run_pending(sim->ctx), 1);
	esim_free(sim);
}
END_TEST

START_TEST(test_no_preempt_config_flag)
{
	struct esim *sim = esim_setup(SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT, 0,
				      TOTAL, 0);
	struct srsv_space *s = esim_space(sim, SRSV_POOL_METADATA);

	ck_assert_int_eq(srsv_ctx_account_delalloc(sim->ctx, 64 * MiB, 0), 0);
	reserve_nf(s, 600 * MiB);
	reserve_nf(s, 1 * MiB);
	ck_assert(srsv__need_preemptive_reclaim(s));
	ck_assert_int_eq(srsv_ctx_run_pending(sim->ctx), 0);
	ck_assert_uint_eq(esim_snap(s).preempt_runs, 0);
	esim_free(sim);
}
END_TEST

START_TEST(test_no_preempt_while_tickets_queued)
{
	struct srsv_space *s;
	struct esim *sim = preempt_sim(&s, 600 * MiB);
	struct srsv_ticket t;

	/* Fill the pool so that a FLUSH_ALL ticket queues (preemptive
	 * flushing off meanwhile, so that the fill queues no run). */
	ck_assert_int_eq(srsv_ctx_set_preempt(sim->ctx, false), 0);
	reserve_nf(s, TOTAL - 601 * MiB);
	ck_assert_int_eq(srsv_ticket_reserve(s, &t, 2 * MiB, SRSV_FLUSH_ALL, 0),
			 -EINPROGRESS);
	ck_assert_int_eq(srsv_ctx_set_preempt(sim->ctx, true), 0);
	/* A reservation that may pass normal tickets succeeds... */
	ck_assert_int_eq(srsv_space_reserve(s, 4096, SRSV_FLUSH_LIMIT, 0), 0);
	/* ...but no preemptive run is queued: only the async walk. */
	ck_assert(!srsv__need_preemptive_reclaim(s));
	ck_assert_uint_eq(srsv__ld(&sim->ctx->preempt_busy), 0);
	srsv_ticket_cancel(&t);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -ECANCELED);
	esim_free(sim);
}
END_TEST

START_TEST(test_no_preempt_above_90_percent)
{
	struct esim *sim = esim_setup(SRSV_CTX_MANUAL, 0, TOTAL, 0);
	struct srsv_space *s = esim_space(sim, SRSV_POOL_METADATA);

	/* No delalloc yet: filling the pool queues no run. */
	reserve_nf(s, 930 * MiB);
	ck_assert_int_eq(srsv_space_alloc(s, 930 * MiB), 0);
	ck_assert_int_eq(srsv_space_commit_used(s, 930 * MiB), 0);
	ck_assert_int_eq(srsv_ctx_run_pending(sim->ctx), 0);
	ck_assert_int_eq(srsv_ctx_account_delalloc(sim->ctx, 64 * MiB, 0), 0);
	srsv__st(&s->clamp, 8);
	reserve_nf(s, 60 * MiB);
	ck_assert(!srsv__need_preemptive_reclaim(s));
	ck_assert_int_eq(srsv_ctx_run_pending(sim->ctx), 0);
	ck_assert_uint_eq(esim_total_calls(sim), 0);
	esim_free(sim);
}
END_TEST

START_TEST(test_bounded_loops_when_nothing_frees)
{
	struct srsv_space *s;
	struct esim *sim = preempt_sim(&s, 600 * MiB);
	uint64_t calls;

	/* The engine flushes nothing: need stays true for ever. */
	reserve_nf(s, 1 * MiB);
	ck_assert_int_eq(srsv_ctx_run_pending(sim->ctx), 1);
	/* Two fruitless loops (nothing written back) end the run. */
	calls = esim_total_calls(sim);
	ck_assert_uint_eq(calls, 2);
	/* A fruitless run backs off: the next reservation does not queue. */
	reserve_nf(s, 1 * MiB);
	ck_assert_int_eq(srsv_ctx_run_pending(sim->ctx), 0);
	ck_assert_uint_eq(esim_total_calls(sim), calls);
	/* After the back-off (10 ms), it is tried again. */
	esim_sleep_ms(15);
	reserve_nf(s, 1 * MiB);
	ck_assert_int_eq(srsv_ctx_run_pending(sim->ctx), 1);
	ck_assert_uint_gt(esim_total_calls(sim), calls);
	esim_free(sim);
}
END_TEST

/* DELALLOC: write back 1 MiB of dirty data (progress), free nothing. */
static int writeback_only(struct esim *esim, struct srsv_space *space,
			  enum srsv_flush_state state, uint64_t bytes,
			  void *arg)
{
	(void)esim; (void)state; (void)bytes; (void)arg;
	return srsv_ctx_account_delalloc(srsv_space_ctx(space),
					 -(int64_t)MiB, 0);
}

START_TEST(test_no_backoff_after_run_that_helped)
{
	struct srsv_space *s;
	struct esim *sim = preempt_sim(&s, 600 * MiB);
	struct esim_action a = { .state = SRSV_STATE_DELALLOC, .pool = ESIM_ANY,
				 .preempt = 1, .op = ESIM_CALL,
				 .fn = writeback_only, .times = 1 };
	uint64_t calls;

	/* The first flush writes dirty data back, the next two find
	 * nothing to start (everything is under writeback): the run ends
	 * on two fruitless flushes, but it helped. */
	esim_add(sim, &a);
	reserve_nf(s, 1 * MiB);
	ck_assert_int_eq(srsv_ctx_run_pending(sim->ctx), 1);
	calls = esim_total_calls(sim);
	ck_assert_uint_eq(calls, 3);
	ck_assert_uint_eq(srsv__ld(&sim->ctx->preempt_backoff_ns), 0);
	/* No back-off: the next reservation queues a run at once. */
	reserve_nf(s, 1 * MiB);
	ck_assert_int_eq(srsv_ctx_run_pending(sim->ctx), 1);
	ck_assert_uint_gt(esim_total_calls(sim), calls);
	/* That run achieved nothing at all: now it backs off. */
	ck_assert_uint_gt(srsv__ld(&sim->ctx->preempt_backoff_ns), 0);
	calls = esim_total_calls(sim);
	reserve_nf(s, 1 * MiB);
	ck_assert_int_eq(srsv_ctx_run_pending(sim->ctx), 0);
	ck_assert_uint_eq(esim_total_calls(sim), calls);
	esim_free(sim);
}
END_TEST

/* Queue a FLUSH_ALL ticket on a full pool and let it fail. */
static void ticket_round(struct esim *sim, struct srsv_space *s)
{
	struct srsv_ticket t;

	ck_assert_int_eq(srsv_ticket_reserve(s, &t, 64 * MiB, SRSV_FLUSH_ALL, 0),
			 -EINPROGRESS);
	esim_run_all(sim, 16);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -ENOSPC);
}

START_TEST(test_clamp_raised_by_tickets_bounded)
{
	struct esim *sim = esim_setup(SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT, 0,
				      TOTAL, 0);
	struct srsv_space *s = esim_space(sim, SRSV_POOL_METADATA);

	/* Dirty data outgrows writeback: ordered < delalloc. */
	ck_assert_int_eq(srsv_ctx_account_delalloc(sim->ctx, 64 * MiB, 0), 0);
	reserve_nf(s, TOTAL);
	ck_assert_uint_eq(esim_snap(s).clamp, 1);
	for (unsigned i = 2; i <= 8; i++) {
		ticket_round(sim, s);
		ck_assert_uint_eq(esim_snap(s).clamp, i);
	}
	/* Bounded at 8. */
	ticket_round(sim, s);
	ck_assert_uint_eq(esim_snap(s).clamp, 8);
	/* The statistics count the seven steps up, not the one at 8. */
	{
		struct srsv_space_stats st;

		ck_assert_int_eq(srsv_space_get_stats(s, &st), 0);
		ck_assert_uint_eq(st.clamp_raised, 7);
		ck_assert_uint_eq(st.clamp_lowered, 0);
	}
	esim_free(sim);
}
END_TEST

START_TEST(test_clamp_once_per_flush_start)
{
	struct esim *sim = esim_setup(SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT, 0,
				      TOTAL, 0);
	struct srsv_space *s = esim_space(sim, SRSV_POOL_METADATA);
	struct srsv_ticket t1, t2;

	ck_assert_int_eq(srsv_ctx_account_delalloc(sim->ctx, 64 * MiB, 0), 0);
	reserve_nf(s, TOTAL);
	ck_assert_int_eq(srsv_ticket_reserve(s, &t1, MiB, SRSV_FLUSH_ALL, 0),
			 -EINPROGRESS);
	/* The second ticket finds the flusher already started. */
	ck_assert_int_eq(srsv_ticket_reserve(s, &t2, MiB, SRSV_FLUSH_ALL, 0),
			 -EINPROGRESS);
	ck_assert_uint_eq(esim_snap(s).clamp, 2);
	esim_run_all(sim, 16);
	ck_assert_int_eq(srsv_ticket_wait(&t1, 0), -ENOSPC);
	ck_assert_int_eq(srsv_ticket_wait(&t2, 0), -ENOSPC);
	esim_free(sim);
}
END_TEST

START_TEST(test_clamp_not_raised_when_ordered_keeps_up)
{
	struct esim *sim = esim_setup(SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT, 0,
				      TOTAL, 0);
	struct srsv_space *s = esim_space(sim, SRSV_POOL_METADATA);

	ck_assert_int_eq(srsv_ctx_account_delalloc(sim->ctx, 64 * MiB,
						   64 * MiB), 0);
	reserve_nf(s, TOTAL);
	ticket_round(sim, s);
	ck_assert_uint_eq(esim_snap(s).clamp, 1);
	esim_free(sim);
}
END_TEST

START_TEST(test_clamp_fixed_flag)
{
	struct esim *sim = esim_setup(SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT |
				      SRSV_CTX_FIXED_CLAMP, 0, TOTAL, 0);
	struct srsv_space *s = esim_space(sim, SRSV_POOL_METADATA);

	ck_assert_int_eq(srsv_ctx_account_delalloc(sim->ctx, 64 * MiB, 0), 0);
	reserve_nf(s, TOTAL);
	ticket_round(sim, s);
	ticket_round(sim, s);
	ck_assert_uint_eq(esim_snap(s).clamp, 1);
	esim_free(sim);
}
END_TEST

START_TEST(test_clamp_lowered_after_one_loop_bounded)
{
	struct srsv_space *s;
	struct esim *sim = preempt_sim(&s, 300 * MiB);
	struct esim_action a = { .state = SRSV_STATE_DELALLOC, .pool = ESIM_ANY,
				 .preempt = 1, .op = ESIM_RELEASE,
				 .arg = 200 * MiB };

	esim_add(sim, &a);
	for (unsigned clamp = 3; clamp > 1; clamp--) {
		/* 300 MiB >= 1 GiB >> clamp (256 MiB at 2 and 3). */
		srsv__st(&s->clamp, clamp);
		reserve_nf(s, 1 * MiB);
		esim_hold(sim, SRSV_POOL_METADATA, 1 * MiB);
		ck_assert(srsv__need_preemptive_reclaim(s));
		ck_assert_int_eq(srsv_ctx_run_pending(sim->ctx), 1);
		/* One loop freed enough (one DELALLOC of a quarter, 200 MiB
		 * released): the clamp comes down by one. */
		ck_assert_uint_eq(esim_snap(s).clamp, clamp - 1);
		/* Refill what the engine gave back for the next round. */
		reserve_nf(s, 200 * MiB);
		esim_hold(sim, SRSV_POOL_METADATA, 200 * MiB);
	}
	/* Two steps down, counted. */
	{
		struct srsv_space_stats st;

		ck_assert_int_eq(srsv_space_get_stats(s, &st), 0);
		ck_assert_uint_eq(st.clamp_lowered, 2);
		ck_assert_uint_eq(st.clamp_raised, 0);
	}
	/* At 1 it stays 1: 301 MiB < 512 MiB, no run at all; force one
	 * loop through a white-box run and check the bound. */
	srsv__st(&s->clamp, 1);
	reserve_nf(s, 300 * MiB);
	esim_hold(sim, SRSV_POOL_METADATA, 300 * MiB);
	ck_assert(srsv__need_preemptive_reclaim(s));
	srsv__st(&sim->ctx->preempt_busy, 1);
	srsv__preempt_reclaim(s);
	ck_assert_uint_eq(esim_snap(s).clamp, 1);
	{
		struct srsv_space_stats st;

		ck_assert_int_eq(srsv_space_get_stats(s, &st), 0);
		ck_assert_uint_eq(st.clamp_lowered, 2);
	}
	esim_free(sim);
}
END_TEST

/*
 * The quiet period, white-box: move the start of the clamp's quiet period
 * @ns into the past, as if that long had passed without a wait.
 */
static void age_quiet(struct srsv_space *s, uint64_t ns)
{
	srsv__lock(&s->lock);
	ck_assert_uint_gt(s->clamp_quiet_ns, 0);
	s->clamp_quiet_ns -= ns;
	srsv__unlock(&s->lock);
}

/* DELALLOC: write back 1 MiB of dirty data, giving back 150 MiB. */
static int writeback_150(struct esim *esim, struct srsv_space *space,
			 enum srsv_flush_state state, uint64_t bytes,
			 void *arg)
{
	(void)esim; (void)state; (void)bytes; (void)arg;
	ck_assert_int_eq(srsv_ctx_account_delalloc(srsv_space_ctx(space),
						   -(int64_t)MiB, 0), 0);
	return srsv_space_release(space, 150 * MiB);
}

/* A preemptive run of several loops from 600 MiB reclaimable (at clamp 2
 * or 3: 600 -> 450 -> 300 -> 150 MiB), refilled for the next one; returns
 * the clamp after it. */
static unsigned multi_loop_run(struct esim *sim, struct srsv_space *s)
{
	unsigned clamp;

	ck_assert(srsv__need_preemptive_reclaim(s));
	ck_assert_int_eq(srsv_ctx_run_pending(sim->ctx), 1);
	ck_assert_uint_gt(esim_calls(sim, SRSV_STATE_DELALLOC), 1);
	clamp = esim_snap(s).clamp;
	esim_log_clear(sim);
	reserve_nf(s, 450 * MiB);	/* queues the next run */
	return clamp;
}

static struct esim *quiet_sim(struct srsv_space **s, unsigned flags,
			      unsigned clamp)
{
	struct esim *sim = esim_setup(SRSV_CTX_MANUAL | flags, 0, TOTAL, 0);
	struct esim_action a = { .state = SRSV_STATE_DELALLOC, .pool = ESIM_ANY,
				 .preempt = 1, .op = ESIM_CALL,
				 .fn = writeback_150 };

	*s = esim_space(sim, SRSV_POOL_METADATA);
	ck_assert_int_eq(srsv_ctx_account_delalloc(sim->ctx, 64 * MiB, 0), 0);
	esim_add(sim, &a);
	srsv__st(&(*s)->clamp, clamp);
	reserve_nf(*s, 600 * MiB);
	return sim;
}

START_TEST(test_clamp_kept_within_quiet_period)
{
	struct srsv_space *s;
	struct esim *sim = quiet_sim(&s, 0, 3);
	struct srsv_space_stats st;

	/* Runs of several loops, no ticket queued: before the quiet
	 * period the clamp came down after each (and between two bursts
	 * it was back at 1).  Now it stays until a quiet period passed. */
	ck_assert_uint_eq(multi_loop_run(sim, s), 3);
	ck_assert_uint_eq(multi_loop_run(sim, s), 3);
	age_quiet(s, SRSV__CLAMP_QUIET_NS / 2);
	ck_assert_uint_eq(multi_loop_run(sim, s), 3);
	ck_assert_int_eq(srsv_space_get_stats(s, &st), 0);
	ck_assert_uint_eq(st.clamp_lowered, 0);
	esim_free(sim);
}
END_TEST

START_TEST(test_clamp_lowered_one_step_per_quiet_period)
{
	struct srsv_space *s;
	struct esim *sim = quiet_sim(&s, 0, 3);
	struct srsv_space_stats st;

	ck_assert_uint_eq(multi_loop_run(sim, s), 3);	/* starts the period */
	age_quiet(s, SRSV__CLAMP_QUIET_NS);
	ck_assert_uint_eq(multi_loop_run(sim, s), 2);
	/* The step restarted the period: not another one at once. */
	ck_assert_uint_eq(multi_loop_run(sim, s), 2);
	age_quiet(s, SRSV__CLAMP_QUIET_NS);
	ck_assert_uint_eq(multi_loop_run(sim, s), 1);
	/* Bounded at 1 (at clamp 1 the 600 MiB are over half of 1 GiB,
	 * and one loop takes them under). */
	age_quiet(s, SRSV__CLAMP_QUIET_NS);
	ck_assert_int_eq(srsv_ctx_run_pending(sim->ctx), 1);
	ck_assert_uint_eq(esim_snap(s).clamp, 1);
	ck_assert_int_eq(srsv_space_get_stats(s, &st), 0);
	ck_assert_uint_eq(st.clamp_lowered, 2);
	ck_assert_uint_eq(st.clamp_raised, 0);
	esim_free(sim);
}
END_TEST

START_TEST(test_clamp_fixed_never_lowered)
{
	struct srsv_space *s;
	struct esim *sim = quiet_sim(&s, SRSV_CTX_FIXED_CLAMP, 3);

	ck_assert_uint_eq(multi_loop_run(sim, s), 3);
	age_quiet(s, 10 * SRSV__CLAMP_QUIET_NS);
	ck_assert_uint_eq(multi_loop_run(sim, s), 3);
	esim_free(sim);
}
END_TEST

/* DELALLOC: write back 1 MiB of dirty data, giving back 30 MiB; with
 * @arg, a ticket was queued meanwhile (white-box: the tickets-queued
 * counter, as srsv_ticket_reserve() bumps it). */
static int writeback_30(struct esim *esim, struct srsv_space *space,
			enum srsv_flush_state state, uint64_t bytes, void *arg)
{
	(void)esim; (void)state; (void)bytes;
	if (arg) {
		srsv__lock(&space->lock);
		space->stat_queued++;
		srsv__unlock(&space->lock);
	}
	ck_assert_int_eq(srsv_ctx_account_delalloc(srsv_space_ctx(space),
						   -(int64_t)MiB, 0), 0);
	return srsv_space_release(space, 30 * MiB);
}

START_TEST(test_clamp_kept_when_tickets_queued_during_run)
{
	struct srsv_space *s;
	struct esim *sim = preempt_sim(&s, 600 * MiB);
	struct esim_action a = { .state = SRSV_STATE_DELALLOC, .pool = ESIM_ANY,
				 .preempt = 1, .op = ESIM_CALL,
				 .fn = writeback_30, .fn_arg = (void *)1 };

	esim_add(sim, &a);
	srsv__st(&s->clamp, 2);
	reserve_nf(s, 1 * MiB);
	esim_hold(sim, SRSV_POOL_METADATA, 1 * MiB);
	ck_assert_int_eq(srsv_ctx_run_pending(sim->ctx), 1);
	ck_assert_uint_gt(esim_total_calls(sim), 1);
	/* Tickets had to queue while we flushed: not early enough. */
	ck_assert_uint_eq(esim_snap(s).clamp, 2);
	esim_free(sim);
}
END_TEST

START_TEST(test_clamp_quiet_period_restarts_on_ticket)
{
	struct srsv_space *s;
	struct esim *sim = preempt_sim(&s, 600 * MiB);
	struct esim_action a = { .state = SRSV_STATE_DELALLOC, .pool = ESIM_ANY,
				 .preempt = 1, .op = ESIM_CALL,
				 .fn = writeback_30, .fn_arg = (void *)1,
				 .times = 1 };
	struct esim_action b = { .state = SRSV_STATE_DELALLOC, .pool = ESIM_ANY,
				 .preempt = 1, .op = ESIM_CALL,
				 .fn = writeback_30 };
	uint64_t before;

	srsv__st(&s->clamp, 2);
	/* A first run starts the quiet period; a long quiet follows. */
	esim_add(sim, &b);
	reserve_nf(s, 1 * MiB);
	esim_hold(sim, SRSV_POOL_METADATA, 1 * MiB);
	ck_assert_int_eq(srsv_ctx_run_pending(sim->ctx), 1);
	ck_assert_uint_eq(esim_snap(s).clamp, 2);
	age_quiet(s, 2 * SRSV__CLAMP_QUIET_NS);
	/* But a ticket was queued while the next run flushed: it was not
	 * early enough, the clamp stays and the period starts again. */
	esim_clear_actions(sim);
	esim_add(sim, &a);
	esim_add(sim, &b);
	before = srsv__now_ns();
	reserve_nf(s, 100 * MiB);
	esim_hold(sim, SRSV_POOL_METADATA, 100 * MiB);
	ck_assert_int_eq(srsv_ctx_run_pending(sim->ctx), 1);
	ck_assert_uint_eq(esim_snap(s).clamp, 2);
	ck_assert_uint_ge(s->clamp_quiet_ns, before);
	/* A quiet period after it: now the clamp comes down. */
	age_quiet(s, SRSV__CLAMP_QUIET_NS);
	reserve_nf(s, 100 * MiB);
	esim_hold(sim, SRSV_POOL_METADATA, 100 * MiB);
	ck_assert_int_eq(srsv_ctx_run_pending(sim->ctx), 1);
	ck_assert_uint_eq(esim_snap(s).clamp, 1);
	esim_free(sim);
}
END_TEST

START_TEST(test_async_walk_hands_over_to_preempt)
{
	struct srsv_space *s;
	struct esim *sim = preempt_sim(&s, 0);
	struct esim_action a = { .state = SRSV_STATE_DELAYED_ITEMS_NR,
				 .pool = ESIM_ANY, .op = ESIM_RELEASE,
				 .arg = 10 * MiB, .times = 1 };
	struct srsv_ticket t;

	/* Fill the pool with preemptive flushing off, then queue. */
	ck_assert_int_eq(srsv_ctx_set_preempt(sim->ctx, false), 0);
	reserve_nf(s, TOTAL - MiB);
	esim_hold(sim, SRSV_POOL_METADATA, TOTAL - MiB);
	ck_assert_int_eq(srsv_ctx_set_preempt(sim->ctx, true), 0);
	ck_assert_int_eq(srsv_ticket_reserve(s, &t, 2 * MiB, SRSV_FLUSH_ALL, 0),
			 -EINPROGRESS);
	esim_add(sim, &a);
	/* The walk's first state grants the ticket; the pool is still far
	 * above the preemptive threshold, so the walk hands over: the same
	 * run_pending runs the async walk, then the preemptive run. */
	ck_assert_int_eq(srsv_ctx_run_pending(sim->ctx), 2);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), 0);
	ck_assert_uint_eq(esim_snap(s).preempt_runs, 1);
	ck_assert_uint_ge(esim_snap(s).preempt_flushes[SRSV_STATE_DELALLOC], 1);
	esim_free(sim);
}
END_TEST

START_TEST(test_floor_scales_with_pool)
{
	/* A 64 MiB pool: floor 2 MiB, not upstream's 128 MiB. */
	struct esim *sim = esim_setup(SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT, 0,
				      64 * MiB, 0);
	struct srsv_space *s = esim_space(sim, SRSV_POOL_METADATA);

	ck_assert_int_eq(srsv_ctx_account_delalloc(sim->ctx, MiB, 0), 0);
	reserve_nf(s, 40 * MiB);
	/* 40 MiB >= 64 MiB >> 1: flush, although 40 MiB < 128 MiB. */
	ck_assert(srsv__need_preemptive_reclaim(s));
	esim_free(sim);
}
END_TEST

/*
 * The preemptive commit rule (preempt_commit_worth_it): pinned space must
 * be at least half the free space and, once a commit has been timed, the
 * room left must be about to run out at the measured pinning rate.
 *
 * The pool of the "pinned-heavy" row: 1 GiB, 400 MiB used, 320 MiB
 * pinned, 10 + 10 MiB of deferred reserves.  Free space is 624 MiB, of
 * which 340 MiB are pinned or reserved: 284 MiB of room.  The horizon is
 * 4 commit durations.
 */
static struct esim *commit_rule_sim(struct srsv_space **out, uint64_t plain)
{
	struct row r = { .used = 400 * MiB, .pinned = 320 * MiB,
			 .delops = 10 * MiB, .delrefs = 10 * MiB,
			 .plain = plain };

	return build(&r, out);
}

static int choose_with(struct srsv_space *s, uint64_t commit_ns,
		       uint64_t pin_rate)
{
	uint64_t to_reclaim;
	int state;

	srsv__lock(&s->lock);
	s->commit_ns = commit_ns;
	s->pin_rate = pin_rate;
	state = srsv__preempt_choose(s, &to_reclaim);
	srsv__unlock(&s->lock);
	return state;
}

START_TEST(test_commit_rule_predicts_exhaustion)
{
	struct srsv_space *s;
	struct esim *sim = commit_rule_sim(&s, 0);
	const uint64_t ms10 = 10ull * 1000 * 1000;

	ck_assert(srsv__need_preemptive_reclaim(s));
	/* No commit timed yet, so no horizon: 284 MiB of room, no commit,
	 * however fast space is being pinned. */
	ck_assert_int_eq(choose_with(s, 0, 0), SRSV_STATE_DELAYED_REFS_NR);
	ck_assert_int_eq(choose_with(s, 0, 64ull << 30),
			 SRSV_STATE_DELAYED_REFS_NR);
	/* Pinned space saturated (nothing pinned lately): 284 MiB of room
	 * lasts for ever, so the deferred refs go instead of a commit. */
	ck_assert_int_eq(choose_with(s, ms10, 0), SRSV_STATE_DELAYED_REFS_NR);
	/* 8 GiB/s for 4 x 10 ms = 328 MiB > 284 MiB: commit now. */
	ck_assert_int_eq(choose_with(s, ms10, 8ull << 30),
			 SRSV_STATE_COMMIT_TRANS);
	/* 6 GiB/s: 246 MiB in the horizon, the room outlasts it. */
	ck_assert_int_eq(choose_with(s, ms10, 6ull << 30),
			 SRSV_STATE_DELAYED_REFS_NR);
	/* A dearer commit (20 ms) looks twice as far: 492 MiB, commit. */
	ck_assert_int_eq(choose_with(s, 2 * ms10, 6ull << 30),
			 SRSV_STATE_COMMIT_TRANS);
	teardown_row(sim, s);
}
END_TEST

START_TEST(test_commit_rule_room_gone)
{
	struct srsv_space *s;
	/* The other 284 MiB reserved: no room at all. */
	struct esim *sim = commit_rule_sim(&s, 284 * MiB);

	ck_assert(srsv__need_preemptive_reclaim(s));
	/* Even with nothing pinned lately, a pool with no room left and
	 * pinned space its largest part commits before anyone waits. */
	ck_assert_int_eq(choose_with(s, 10ull * 1000 * 1000, 0),
			 SRSV_STATE_COMMIT_TRANS);
	teardown_row(sim, s);
}
END_TEST

START_TEST(test_commit_rule_small_pinned_never_commits)
{
	struct srsv_space *s;
	struct row r = { .used = 400 * MiB, .pinned = 300 * MiB,
			 .delops = 10 * MiB, .delrefs = 10 * MiB };
	struct esim *sim = build(&r, &s);

	/* 300 MiB < 624 / 2: however fast space is pinned, no commit. */
	ck_assert_int_eq(choose_with(s, 10ull * 1000 * 1000, 64ull << 30),
			 SRSV_STATE_DELAYED_REFS_NR);
	teardown_row(sim, s);
}
END_TEST

/* COMMIT_TRANS that takes 5 ms and unpins everything. */
static void script_slow_commit(struct esim *sim)
{
	ck_assert_int_ge(esim_on(sim, SRSV_STATE_COMMIT_TRANS, ESIM_SLEEP_MS,
				 5), 0);
	ck_assert_int_ge(esim_on(sim, SRSV_STATE_COMMIT_TRANS, ESIM_UNPIN,
				 ESIM_ALL), 0);
}

/*
 * The measurements: a commit that unpinned something is timed; one that
 * unpinned nothing is not; the preempt worker samples the pinning rate
 * over windows of at least 10 ms.
 */
START_TEST(test_commit_rule_measures)
{
	struct srsv_space *s;
	/* 1 MiB of room, taken below: the first run commits although no
	 * commit was timed. */
	struct esim *sim = commit_rule_sim(&s, 283 * MiB);
	uint64_t commit_ns, rate;

	script_slow_commit(sim);
	ck_assert_int_eq(srsv_ctx_set_preempt(sim->ctx, true), 0);
	srsv__lock(&s->lock);
	ck_assert_uint_eq(s->commit_ns, 0);
	ck_assert_uint_eq(s->pin_mark_ns, 0);
	srsv__unlock(&s->lock);
	/* The first run commits (the room is gone) and starts the
	 * pinning-rate window. */
	reserve_nf(s, MiB);
	esim_hold(sim, SRSV_POOL_METADATA, MiB);
	ck_assert_int_eq(srsv_ctx_run_pending(sim->ctx), 1);
	ck_assert_uint_ge(esim_calls(sim, SRSV_STATE_COMMIT_TRANS), 1);
	srsv__lock(&s->lock);
	commit_ns = s->commit_ns;
	ck_assert_uint_ne(s->pin_mark_ns, 0);
	srsv__unlock(&s->lock);
	ck_assert_uint_ge(commit_ns, 5ull * 1000 * 1000);
	ck_assert_uint_eq(esim_snap(s).pinned, 0);

	/* An empty commit (nothing pinned) leaves the estimate alone. */
	ck_assert_int_eq(srsv__flush_space(s, 0, SRSV_STATE_COMMIT_TRANS,
					   false), 0);
	srsv__lock(&s->lock);
	ck_assert_uint_eq(s->commit_ns, commit_ns);
	srsv__unlock(&s->lock);

	/* Pin 400 MiB over >= 20 ms: the next run measures a rate of at
	 * most 400 MiB / 20 ms, averaged in with weight 1/4. */
	esim_sleep_ms(20);
	ck_assert_int_eq(srsv_space_pin(s, 400 * MiB), 0);
	/* 420 MiB reclaimable against 1 GiB >> 2: a run (400 MiB pinned
	 * is under half of the 1 GiB now free: no commit). */
	srsv__st(&s->clamp, 2);
	reserve_nf(s, MiB);
	esim_hold(sim, SRSV_POOL_METADATA, MiB);
	ck_assert_int_eq(srsv_ctx_run_pending(sim->ctx), 1);
	srsv__lock(&s->lock);
	rate = s->pin_rate;
	srsv__unlock(&s->lock);
	ck_assert_uint_gt(rate, 0);
	ck_assert_uint_le(rate, 400 * MiB * 50 / 4);
	teardown_row(sim, s);
}
END_TEST

static Suite *preempt_suite(void)
{
	Suite *s = suite_create("preempt");
	TCase *tc = tcase_create("need");

	tcase_add_loop_test(tc, test_need_table, 0,
			    (int)(sizeof(rows) / sizeof(rows[0])));
	tcase_add_test(tc, test_floor_scales_with_pool);
	suite_add_tcase(s, tc);

	tc = tcase_create("worker");
	tcase_add_test(tc, test_preempt_queued_from_fast_path_once);
	tcase_add_test(tc, test_preempt_loop_flushes_quarter_until_done);
	tcase_add_test(tc, test_no_preempt_when_disabled_at_runtime);
	tcase_add_test(tc, test_no_preempt_config_flag);
	tcase_add_test(tc, test_no_preempt_while_tickets_queued);
	tcase_add_test(tc, test_no_preempt_above_90_percent);
	tcase_add_test(tc, test_bounded_loops_when_nothing_frees);
	suite_add_tcase(s, tc);

	tc = tcase_create("commit");
	tcase_add_test(tc, test_commit_rule_predicts_exhaustion);
	tcase_add_test(tc, test_commit_rule_room_gone);
	tcase_add_test(tc, test_commit_rule_small_pinned_never_commits);
	tcase_add_test(tc, test_commit_rule_measures);
	suite_add_tcase(s, tc);

	tc = tcase_create("clamp");
	tcase_add_test(tc, test_clamp_raised_by_tickets_bounded);
	tcase_add_test(tc, test_clamp_once_per_flush_start);
	tcase_add_test(tc, test_clamp_not_raised_when_ordered_keeps_up);
	tcase_add_test(tc, test_clamp_fixed_flag);
	tcase_add_test(tc, test_clamp_lowered_after_one_loop_bounded);
	tcase_add_test(tc, test_clamp_kept_when_tickets_queued_during_run);
	tcase_add_test(tc, test_clamp_kept_within_quiet_period);
	tcase_add_test(tc, test_clamp_lowered_one_step_per_quiet_period);
	tcase_add_test(tc, test_clamp_fixed_never_lowered);
	tcase_add_test(tc, test_clamp_quiet_period_restarts_on_ticket);
	tcase_add_test(tc, test_no_backoff_after_run_that_helped);
	tcase_add_test(tc, test_async_walk_hands_over_to_preempt);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(preempt_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
