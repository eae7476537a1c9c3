/* SPDX-License-Identifier: MIT */
/*
 * Block reservations, the global reserve, stealing and the use_block_rsv
 * fallback chain (btrfs's block-rsv.c).  Manual mode, no
 * preemptive flushing: every effect is the rsv's own.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <string.h>

#include <libspacersv/spacersv.h>

#include "engine_sim.h"
#include "blockrsv.h"	/* the rsv lock, for the NOWAIT test */

#define KiB ESIM_KIB
#define MiB ESIM_MIB

#define MANUAL (SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT)
#define META (8 * MiB)

static struct esim *sim;
static struct srsv_space *meta, *data;
static struct srsv_ctx *ctx;

static void setup(void)
{
	sim = esim_setup(MANUAL, 8 * MiB, META, 0);
	ctx = sim->ctx;
	meta = esim_space(sim, SRSV_POOL_METADATA);
	data = esim_space(sim, SRSV_POOL_DATA);
}

static void teardown(void)
{
	esim_free(sim);
	sim = NULL;
}

static struct srsv_rsv_info info_of(struct srsv_rsv *rsv)
{
	struct srsv_rsv_info info;

	ck_assert_int_eq(srsv_rsv_get_info(rsv, &info), 0);
	return info;
}

#define ASSERT_RSV(rsv, sz, res, is_full)				\
	do {								\
		struct srsv_rsv_info i_ = info_of(rsv);			\
		ck_assert_msg(i_.size == (sz) && i_.reserved == (res) &&	\
			      i_.full == (is_full),			\
			      "rsv size %" PRIu64 " reserved %" PRIu64	\
			      " full %d, expected %" PRIu64 " %" PRIu64	\
			      " %d", i_.size, i_.reserved, i_.full,	\
			      (uint64_t)(sz), (uint64_t)(res), (is_full)); \
	} while (0)

static uint64_t may_use(struct srsv_space *s)
{
	return esim_snap(s).may_use;
}

START_TEST(test_add_use_release)
{
	struct srsv_rsv rsv;
	uint64_t released = 1;

	ck_assert_int_eq(srsv_rsv_init(&rsv, meta, SRSV_RSV_TEMP), 0);
	ASSERT_RSV(&rsv, 0, 0, true);
	ck_assert_int_eq(srsv_rsv_add(&rsv, 1 * MiB, SRSV_NO_FLUSH, 0), 0);
	ASSERT_RSV(&rsv, MiB, MiB, true);
	ck_assert_uint_eq(may_use(meta), MiB);
	/* Use draws from the rsv; the bytes stay in may_use (the caller's
	 * allocation now owns them). */
	ck_assert_int_eq(srsv_rsv_use(&rsv, 256 * KiB), 0);
	ASSERT_RSV(&rsv, MiB, 768 * KiB, false);
	ck_assert_uint_eq(may_use(meta), MiB);
	/* More than it holds: -ENOSPC, unchanged. */
	ck_assert_int_eq(srsv_rsv_use(&rsv, 769 * KiB), -ENOSPC);
	ASSERT_RSV(&rsv, MiB, 768 * KiB, false);
	/* Release the size: what it holds above the new size returns. */
	ck_assert_int_eq(srsv_rsv_release(&rsv, 512 * KiB, &released), 0);
	ck_assert_uint_eq(released, 256 * KiB);
	ASSERT_RSV(&rsv, 512 * KiB, 512 * KiB, true);
	ck_assert_uint_eq(may_use(meta), MiB - 256 * KiB);
	/* The caller's used 256 KiB go back separately. */
	ck_assert_int_eq(srsv_space_release(meta, 256 * KiB), 0);
	ck_assert_int_eq(srsv_rsv_destroy(&rsv), 0);
	ck_assert_uint_eq(may_use(meta), 0);
}
END_TEST

START_TEST(test_release_more_than_size_refused)
{
	struct srsv_rsv rsv;

	ck_assert_int_eq(srsv_rsv_init(&rsv, meta, SRSV_RSV_TEMP), 0);
	ck_assert_int_eq(srsv_rsv_add(&rsv, MiB, SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_rsv_release(&rsv, MiB + 1, NULL), -EINVAL);
	ASSERT_RSV(&rsv, MiB, MiB, true);
	ck_assert_uint_eq(may_use(meta), MiB);
	/* "Everything" */
	ck_assert_int_eq(srsv_rsv_release(&rsv, SRSV_RSV_ALL, NULL), 0);
	ASSERT_RSV(&rsv, 0, 0, true);
	ck_assert_uint_eq(may_use(meta), 0);
	ck_assert_int_eq(srsv_rsv_destroy(&rsv), 0);
}
END_TEST

START_TEST(test_add_fails_unchanged)
{
	struct srsv_rsv rsv;

	ck_assert_int_eq(srsv_rsv_init(&rsv, meta, SRSV_RSV_TEMP), 0);
	ck_assert_int_eq(srsv_rsv_add(&rsv, META + 1, SRSV_NO_FLUSH, 0),
			 -ENOSPC);
	ASSERT_RSV(&rsv, 0, 0, true);
	ck_assert_uint_eq(may_use(meta), 0);
	ck_assert_int_eq(srsv_rsv_add(&rsv, 0, SRSV_NO_FLUSH, 0), 0);
	ASSERT_RSV(&rsv, 0, 0, true);
	ck_assert_int_eq(srsv_rsv_destroy(&rsv), 0);
}
END_TEST

START_TEST(test_refill)
{
	struct srsv_rsv rsv;

	ck_assert_int_eq(srsv_rsv_init(&rsv, meta, SRSV_RSV_TEMP), 0);
	/* Refill reserves only what is missing and leaves the size. */
	ck_assert_int_eq(srsv_rsv_refill(&rsv, MiB, SRSV_NO_FLUSH, 0), 0);
	ASSERT_RSV(&rsv, 0, MiB, true);
	ck_assert_uint_eq(may_use(meta), MiB);
	ck_assert_int_eq(srsv_rsv_use(&rsv, 300 * KiB), 0);
	ck_assert_int_eq(srsv_rsv_refill(&rsv, MiB, SRSV_NO_FLUSH, 0), 0);
	ASSERT_RSV(&rsv, 0, MiB, true);
	ck_assert_uint_eq(may_use(meta), MiB + 300 * KiB);
	/* Already full: nothing reserved. */
	ck_assert_int_eq(srsv_rsv_refill(&rsv, 512 * KiB, SRSV_NO_FLUSH, 0), 0);
	ck_assert_uint_eq(may_use(meta), MiB + 300 * KiB);
	/* Missing more than the pool has: -ENOSPC, unchanged. */
	ck_assert_int_eq(srsv_rsv_refill(&rsv, META + MiB, SRSV_NO_FLUSH, 0),
			 -ENOSPC);
	ASSERT_RSV(&rsv, 0, MiB, true);
	ck_assert_int_eq(srsv_space_release(meta, 300 * KiB), 0);
	ck_assert_int_eq(srsv_rsv_destroy(&rsv), 0);
	ck_assert_uint_eq(may_use(meta), 0);
}
END_TEST

START_TEST(test_migrate)
{
	struct srsv_rsv a, b, d;

	ck_assert_int_eq(srsv_rsv_init(&a, meta, SRSV_RSV_TEMP), 0);
	ck_assert_int_eq(srsv_rsv_init(&b, meta, SRSV_RSV_TEMP), 0);
	ck_assert_int_eq(srsv_rsv_init(&d, data, SRSV_RSV_TEMP), 0);
	ck_assert_int_eq(srsv_rsv_add(&a, MiB, SRSV_NO_FLUSH, 0), 0);
	/* Moves held bytes; with update_size the size follows. */
	ck_assert_int_eq(srsv_rsv_migrate(&a, &b, 256 * KiB, true), 0);
	ASSERT_RSV(&a, MiB, 768 * KiB, false);
	ASSERT_RSV(&b, 256 * KiB, 256 * KiB, true);
	/* Without it, the bytes fill dst towards its size. */
	ck_assert_int_eq(srsv_rsv_migrate(&a, &b, 128 * KiB, false), 0);
	ASSERT_RSV(&b, 256 * KiB, 384 * KiB, true);
	/* More than held: -ENOSPC, nothing moved. */
	ck_assert_int_eq(srsv_rsv_migrate(&a, &b, MiB, true), -ENOSPC);
	ASSERT_RSV(&a, MiB, 640 * KiB, false);
	ASSERT_RSV(&b, 256 * KiB, 384 * KiB, true);
	/* Across pools or onto itself: -EINVAL. */
	ck_assert_int_eq(srsv_rsv_migrate(&a, &d, 1, true), -EINVAL);
	ck_assert_int_eq(srsv_rsv_migrate(&a, &a, 1, true), -EINVAL);
	ck_assert_uint_eq(may_use(meta), MiB);
	ck_assert_int_eq(srsv_rsv_destroy(&a), 0);
	ck_assert_int_eq(srsv_rsv_destroy(&b), 0);
	ck_assert_int_eq(srsv_rsv_destroy(&d), 0);
	ck_assert_uint_eq(may_use(meta), 0);
}
END_TEST

START_TEST(test_check)
{
	struct srsv_rsv rsv;

	ck_assert_int_eq(srsv_rsv_init(&rsv, meta, SRSV_RSV_TEMP), 0);
	ck_assert_int_eq(srsv_rsv_add(&rsv, MiB, SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_rsv_use(&rsv, 600 * KiB), 0);
	/* 424 KiB of 1 MiB = 41.4% */
	ck_assert_int_eq(srsv_rsv_check(&rsv, 41), 0);
	ck_assert_int_eq(srsv_rsv_check(&rsv, 42), -ENOSPC);
	ck_assert_int_eq(srsv_rsv_check(&rsv, 101), -EINVAL);
	ck_assert_int_eq(srsv_space_release(meta, 600 * KiB), 0);
	ck_assert_int_eq(srsv_rsv_destroy(&rsv), 0);
}
END_TEST

START_TEST(test_release_spills_to_delayed_refs)
{
	struct srsv_rsv rsv;
	struct srsv_rsv *delrefs = srsv_ctx_rsv(ctx, SRSV_RSV_DELREFS);

	/* The delayed-refs rsv wants 256 KiB more than it holds. */
	ck_assert_int_eq(srsv_rsv_add(delrefs, 256 * KiB, SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_rsv_use(delrefs, 256 * KiB), 0);
	ck_assert_int_eq(srsv_space_release(meta, 256 * KiB), 0);
	ASSERT_RSV(delrefs, 256 * KiB, 0, false);

	ck_assert_int_eq(srsv_rsv_init(&rsv, meta, SRSV_RSV_TRANS), 0);
	ck_assert_int_eq(srsv_rsv_add(&rsv, MiB, SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_rsv_release(&rsv, SRSV_RSV_ALL, NULL), 0);
	/* 256 KiB spilled into the delayed refs rsv, the rest went back. */
	ASSERT_RSV(delrefs, 256 * KiB, 256 * KiB, true);
	ck_assert_uint_eq(may_use(meta), 256 * KiB);
	ck_assert_int_eq(srsv_rsv_destroy(&rsv), 0);
	ck_assert_int_eq(srsv_rsv_release(delrefs, SRSV_RSV_ALL, NULL), 0);
	ck_assert_uint_eq(may_use(meta), 0);
}
END_TEST

START_TEST(test_release_delops_spills_to_global)
{
	struct srsv_rsv rsv;
	struct srsv_rsv *global = srsv_ctx_rsv(ctx, SRSV_RSV_GLOBAL);

	ck_assert_int_eq(srsv_ctx_resize_global_rsv(ctx, MiB), 0);
	ASSERT_RSV(global, MiB, MiB, true);
	ck_assert_int_eq(srsv_rsv_use(global, 512 * KiB), 0);
	ck_assert_int_eq(srsv_space_release(meta, 512 * KiB), 0);

	ck_assert_int_eq(srsv_rsv_init(&rsv, meta, SRSV_RSV_DELOPS), 0);
	ck_assert_int_eq(srsv_rsv_add(&rsv, 2 * MiB, SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_rsv_release(&rsv, 2 * MiB, NULL), 0);
	ASSERT_RSV(global, MiB, MiB, true);
	ck_assert_uint_eq(may_use(meta), MiB);
	ck_assert_int_eq(srsv_rsv_destroy(&rsv), 0);
}
END_TEST

START_TEST(test_release_no_spill_target_other_pool)
{
	struct srsv_rsv rsv;
	struct srsv_rsv *delrefs = srsv_ctx_rsv(ctx, SRSV_RSV_DELREFS);

	ck_assert_int_eq(srsv_rsv_add(delrefs, 256 * KiB, SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_rsv_use(delrefs, 256 * KiB), 0);
	ck_assert_int_eq(srsv_space_release(meta, 256 * KiB), 0);
	/* A data rsv never spills into the metadata delayed refs rsv. */
	ck_assert_int_eq(srsv_rsv_init(&rsv, data, SRSV_RSV_TEMP), 0);
	ck_assert_int_eq(srsv_rsv_add(&rsv, MiB, SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_rsv_release(&rsv, SRSV_RSV_ALL, NULL), 0);
	ASSERT_RSV(delrefs, 256 * KiB, 0, false);
	ck_assert_uint_eq(may_use(data), 0);
	ck_assert_int_eq(srsv_rsv_destroy(&rsv), 0);
	ck_assert_int_eq(srsv_rsv_release(delrefs, SRSV_RSV_ALL, NULL), 0);
}
END_TEST

/*
 * A release spills into the delayed-refs rsv while another thread draws
 * from it lock-free (srsv_rsv_use(), and a migrate out of it, take no lock).
 * The spill must read the room once: it once read it twice (srsv__min()
 * evaluated its arguments twice), a draw between the reads made the second
 * one larger than what was released, and the rsv was credited with bytes no
 * may_use stood behind (seen as may_use below the sum of its owners in the
 * model-based stress under TSan).  The window is a few instructions, so this
 * is bounded in time rather than deterministic: the releaser releases a
 * little more than the room it sees, so that most spills take the arm whose
 * result was re-read, and the drawer draws without pause.  It caught the
 * bug in most runs of a few hundred milliseconds on two cores.
 */
#define RACE_ROOM (64 * KiB)
#define RACE_DRAW (4 * KiB)
#define RACE_ROUNDS 40
#define RACE_ROUND_MS 25

struct spill_race {
	struct srsv_rsv rsv;		/* the releaser's */
	struct srsv_rsv *delrefs;
	uint64_t drawn;			/* the drawer's books */
	uint64_t releases;
	int stop;
};

static void *spill_releaser(void *arg)
{
	struct spill_race *r = arg;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		struct srsv_rsv_info di;
		uint64_t bytes;

		if (srsv_rsv_get_info(r->delrefs, &di))
			break;
		bytes = di.size - di.reserved + RACE_DRAW / 2;
		if (srsv_rsv_add(&r->rsv, bytes, SRSV_NO_FLUSH, 0) == 0 &&
		    srsv_rsv_release(&r->rsv, SRSV_RSV_ALL, NULL) == 0)
			r->releases++;
	}
	return NULL;
}

static void *spill_drawer(void *arg)
{
	struct spill_race *r = arg;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		if (srsv_rsv_use(r->delrefs, RACE_DRAW) == 0)
			r->drawn += RACE_DRAW;
		/* Give back in batches, so that the pool never fills. */
		if (r->drawn >= MiB && srsv_space_release(meta, r->drawn) == 0)
			r->drawn = 0;
	}
	return NULL;
}

START_TEST(test_release_spill_races_lockfree_use)
{
	struct spill_race r = { 0 };

	r.delrefs = srsv_ctx_rsv(ctx, SRSV_RSV_DELREFS);
	ck_assert_int_eq(srsv_rsv_init(&r.rsv, meta, SRSV_RSV_TEMP), 0);
	/* Room in the delayed-refs rsv: its size, without the bytes (we hold
	 * them). */
	ck_assert_int_eq(srsv_rsv_add(r.delrefs, RACE_ROOM, SRSV_NO_FLUSH, 0),
			 0);
	ck_assert_int_eq(srsv_rsv_use(r.delrefs, RACE_ROOM), 0);
	for (int round = 0; round < RACE_ROUNDS; round++) {
		pthread_t releaser, drawer;
		uint64_t owners;

		__atomic_store_n(&r.stop, 0, __ATOMIC_RELEASE);
		ck_assert_int_eq(pthread_create(&releaser, NULL, spill_releaser,
						&r), 0);
		ck_assert_int_eq(pthread_create(&drawer, NULL, spill_drawer,
						&r), 0);
		esim_sleep_ms(RACE_ROUND_MS);
		__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
		ck_assert_int_eq(pthread_join(releaser, NULL), 0);
		ck_assert_int_eq(pthread_join(drawer, NULL), 0);
		/* Every byte of may_use has an owner. */
		owners = RACE_ROOM + r.drawn + info_of(r.delrefs).reserved +
			 info_of(&r.rsv).reserved;
		ck_assert_msg(may_use(meta) == owners,
			      "round %d: may_use %" PRIu64 " != owners %" PRIu64
			      " (delayed refs %" PRIu64 " of %" PRIu64
			      ", drawn %" PRIu64 ", %" PRIu64 " releases)",
			      round, may_use(meta), owners,
			      info_of(r.delrefs).reserved, info_of(r.delrefs).size,
			      r.drawn, r.releases);
	}
	ck_assert_uint_gt(r.releases, 0);
	ck_assert_int_eq(srsv_rsv_destroy(&r.rsv), 0);
	if (r.drawn)
		ck_assert_int_eq(srsv_space_release(meta, r.drawn), 0);
	ck_assert_int_eq(srsv_rsv_release(r.delrefs, SRSV_RSV_ALL, NULL), 0);
	ck_assert_int_eq(srsv_space_release(meta, RACE_ROOM), 0);
	ck_assert_uint_eq(may_use(meta), 0);
}
END_TEST

START_TEST(test_global_resize_grants_tickets)
{
	struct srsv_ticket t;

	ck_assert_int_eq(srsv_ctx_resize_global_rsv(ctx, 4 * MiB), 0);
	ck_assert_uint_eq(may_use(meta), 4 * MiB);
	ck_assert_int_eq(srsv_space_reserve(meta, 4 * MiB, SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_ticket_reserve(meta, &t, MiB, SRSV_FLUSH_ALL, 0),
			 -EINPROGRESS);
	/* Shrinking the global reserve returns its excess and grants. */
	ck_assert_int_eq(srsv_ctx_resize_global_rsv(ctx, 2 * MiB), 0);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), 0);
	ck_assert_uint_eq(may_use(meta), 7 * MiB);
	ASSERT_RSV(srsv_ctx_rsv(ctx, SRSV_RSV_GLOBAL), 2 * MiB, 2 * MiB, true);
	ck_assert(!esim_snap(meta).force_alloc);
	/* A reserve as large as the pool forces growth. */
	ck_assert_int_eq(srsv_ctx_resize_global_rsv(ctx, META), 0);
	ck_assert(esim_snap(meta).force_alloc);
}
END_TEST

/* Fill the pool, queue a ticket of @mode, let the walk fail it or steal. */
static int steal_round(int mode, uint64_t global_size, uint64_t global_held,
		       uint64_t ticket)
{
	struct srsv_rsv *global = srsv_ctx_rsv(ctx, SRSV_RSV_GLOBAL);
	struct srsv_space_info before;
	struct srsv_ticket t;
	int ret;

	ck_assert_int_eq(srsv_ctx_resize_global_rsv(ctx, global_size), 0);
	if (global_held < global_size) {
		ck_assert_int_eq(srsv_rsv_use(global, global_size - global_held),
				 0);
	}
	before = esim_snap(meta);
	ck_assert_int_eq(srsv_space_reserve(meta, META - before.may_use,
					    SRSV_NO_FLUSH, 0), 0);
	before = esim_snap(meta);
	ret = srsv_ticket_reserve(meta, &t, ticket, (enum srsv_flush)mode, 0);
	ck_assert_int_eq(ret, -EINPROGRESS);
	esim_run_all(sim, 16);
	ret = srsv_ticket_wait(&t, UINT64_MAX);
	/* Stealing moves bytes inside may_use: the counter is unchanged
	 * by the grant itself. */
	if (ret == 0)
		ck_assert_uint_eq(may_use(meta), before.may_use);
	return ret;
}

START_TEST(test_steal_allowed_all_steal)
{
	/* 4 MiB global holding 4 MiB keeps 10% (409.6 KiB) after 1 MiB. */
	ck_assert_int_eq(steal_round(SRSV_FLUSH_ALL_STEAL, 4 * MiB, 4 * MiB, MiB),
			 0);
	ASSERT_RSV(srsv_ctx_rsv(ctx, SRSV_RSV_GLOBAL), 4 * MiB, 3 * MiB, false);
}
END_TEST

START_TEST(test_steal_allowed_evict)
{
	ck_assert_int_eq(steal_round(SRSV_FLUSH_EVICT, 4 * MiB, 4 * MiB, MiB), 0);
	ASSERT_RSV(srsv_ctx_rsv(ctx, SRSV_RSV_GLOBAL), 4 * MiB, 3 * MiB, false);
}
END_TEST

START_TEST(test_steal_refused_plain_all)
{
	ck_assert_int_eq(steal_round(SRSV_FLUSH_ALL, 4 * MiB, 4 * MiB, MiB),
			 -ENOSPC);
	ASSERT_RSV(srsv_ctx_rsv(ctx, SRSV_RSV_GLOBAL), 4 * MiB, 4 * MiB, true);
}
END_TEST

START_TEST(test_steal_refused_below_ten_percent)
{
	/* Holding 1.3 MiB of 4 MiB: 1 MiB + 409.6 KiB does not fit. */
	ck_assert_int_eq(steal_round(SRSV_FLUSH_ALL_STEAL, 4 * MiB,
				     MiB + 300 * KiB, MiB), -ENOSPC);
	ASSERT_RSV(srsv_ctx_rsv(ctx, SRSV_RSV_GLOBAL), 4 * MiB,
		   MiB + 300 * KiB, false);
}
END_TEST

START_TEST(test_steal_exactly_ten_percent_left)
{
	/* 10% of 5 MiB is 512 KiB: holding 1.5 MiB lets 1 MiB go. */
	ck_assert_int_eq(steal_round(SRSV_FLUSH_ALL_STEAL, 5 * MiB,
				     MiB + 512 * KiB, MiB), 0);
}
END_TEST

START_TEST(test_fallback_chain_steps)
{
	struct srsv_rsv rsv, *paid = NULL;
	struct srsv_rsv *global = srsv_ctx_rsv(ctx, SRSV_RSV_GLOBAL);

	ck_assert_int_eq(srsv_rsv_init(&rsv, meta, SRSV_RSV_TEMP), 0);
	ck_assert_int_eq(srsv_ctx_resize_global_rsv(ctx, 2 * MiB), 0);
	ck_assert_int_eq(srsv_rsv_add(&rsv, MiB, SRSV_NO_FLUSH, 0), 0);
	/* Step 1: the rsv pays. */
	ck_assert_int_eq(srsv_rsv_use_fallback(&rsv, 512 * KiB, &paid), 0);
	ck_assert_ptr_eq(paid, &rsv);
	ASSERT_RSV(&rsv, MiB, 512 * KiB, false);
	/* Step 3: the rsv is short, the pool has room: NO_FLUSH reserve. */
	ck_assert_int_eq(srsv_rsv_use_fallback(&rsv, MiB, &paid), 0);
	ck_assert_ptr_eq(paid, &rsv);
	ck_assert_uint_eq(may_use(meta), 2 * MiB + MiB + MiB);
	/* Step 4: the pool is full: the global reserve pays. */
	ck_assert_int_eq(srsv_space_reserve(meta, META - may_use(meta),
					    SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_rsv_use_fallback(&rsv, MiB, &paid), 0);
	ck_assert_ptr_eq(paid, global);
	ASSERT_RSV(global, 2 * MiB, MiB, false);
	/* Step 5: global too low; the bytes still physically fit if
	 * reservations are ignored (nothing is used): emergency. */
	ck_assert_int_eq(srsv_rsv_use_fallback(&rsv, 2 * MiB, &paid), 0);
	ck_assert_ptr_eq(paid, &rsv);
	ck_assert_uint_eq(may_use(meta), META + 2 * MiB);
	/* Failfast stops after step 1. */
	ck_assert_int_eq(srsv_rsv_set_failfast(&rsv, true), 0);
	ck_assert_int_eq(srsv_rsv_use_fallback(&rsv, MiB, &paid), -ENOSPC);
	ck_assert_int_eq(srsv_rsv_set_failfast(&rsv, false), 0);
	ck_assert_int_eq(srsv_rsv_destroy(&rsv), 0);
}
END_TEST

START_TEST(test_fallback_emergency_fails_when_used)
{
	struct srsv_rsv rsv;

	ck_assert_int_eq(srsv_rsv_init(&rsv, meta, SRSV_RSV_TEMP), 0);
	/* The whole pool is really used: nothing can be forced. */
	ck_assert_int_eq(srsv_space_reserve(meta, META, SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_space_alloc(meta, META), 0);
	ck_assert_int_eq(srsv_space_commit_used(meta, META), 0);
	ck_assert_int_eq(srsv_rsv_use_fallback(&rsv, KiB, NULL), -ENOSPC);
	ck_assert_uint_eq(may_use(meta), 0);
	ck_assert_int_eq(srsv_rsv_destroy(&rsv), 0);
}
END_TEST

START_TEST(test_fallback_global_refills_itself)
{
	struct srsv_rsv *global = srsv_ctx_rsv(ctx, SRSV_RSV_GLOBAL), *paid;

	ck_assert_int_eq(srsv_ctx_resize_global_rsv(ctx, MiB), 0);
	ck_assert_int_eq(srsv_rsv_use(global, MiB), 0);
	/* The global rsv is empty: step 2 refills it to its size, retries. */
	ck_assert_int_eq(srsv_rsv_use_fallback(global, 512 * KiB, &paid), 0);
	ck_assert_ptr_eq(paid, global);
	ASSERT_RSV(global, MiB, 512 * KiB, false);
	ck_assert_uint_eq(may_use(meta), 2 * MiB);
}
END_TEST

START_TEST(test_bad_input)
{
	struct srsv_rsv rsv, other;
	struct srsv_space_info before = esim_snap(meta), after;

	memset(&other, 0, sizeof(other));
	ck_assert_int_eq(srsv_rsv_init(NULL, meta, SRSV_RSV_TEMP), -EINVAL);
	ck_assert_int_eq(srsv_rsv_init(&rsv, NULL, SRSV_RSV_TEMP), -EINVAL);
	ck_assert_int_eq(srsv_rsv_init(&rsv, meta, SRSV_RSV_GLOBAL), -EINVAL);
	ck_assert_int_eq(srsv_rsv_init(&rsv, meta, (enum srsv_rsv_type)99),
			 -EINVAL);
	ck_assert_int_eq(srsv_rsv_add(NULL, 1, SRSV_NO_FLUSH, 0), -EINVAL);
	ck_assert_int_eq(srsv_rsv_add(&other, 1, SRSV_NO_FLUSH, 0), -EINVAL);
	ck_assert_int_eq(srsv_rsv_use(NULL, 1), -EINVAL);
	ck_assert_int_eq(srsv_rsv_release(NULL, 1, NULL), -EINVAL);
	ck_assert_int_eq(srsv_rsv_refill(NULL, 1, SRSV_NO_FLUSH, 0), -EINVAL);
	ck_assert_int_eq(srsv_rsv_migrate(NULL, &other, 1, true), -EINVAL);
	ck_assert_int_eq(srsv_rsv_check(NULL, 1), -EINVAL);
	ck_assert_int_eq(srsv_rsv_use_fallback(NULL, 1, NULL), -EINVAL);
	ck_assert_int_eq(srsv_rsv_get_info(NULL, NULL), -EINVAL);
	ck_assert_int_eq(srsv_rsv_set_failfast(NULL, true), -EINVAL);
	ck_assert_int_eq(srsv_rsv_destroy(NULL), -EINVAL);
	ck_assert_ptr_null(srsv_ctx_rsv(NULL, SRSV_RSV_GLOBAL));
	ck_assert_ptr_null(srsv_ctx_rsv(ctx, SRSV_RSV_TREELOG));
	ck_assert_int_eq(srsv_ctx_resize_global_rsv(NULL, 1), -EINVAL);
	/* The ctx owns its standard rsvs. */
	ck_assert_int_eq(srsv_rsv_destroy(srsv_ctx_rsv(ctx, SRSV_RSV_TRANS)),
			 -EINVAL);

	ck_assert_int_eq(srsv_rsv_init(&rsv, meta, SRSV_RSV_TEMP), 0);
	/* Negative-looking sizes (u64 wrap). */
	ck_assert_int_eq(srsv_rsv_add(&rsv, (uint64_t)-4096, SRSV_NO_FLUSH, 0),
			 -EINVAL);
	ck_assert_int_eq(srsv_rsv_use(&rsv, (uint64_t)-1), -EINVAL);
	ck_assert_int_eq(srsv_rsv_refill(&rsv, (uint64_t)-4096, SRSV_NO_FLUSH, 0),
			 -EINVAL);
	ck_assert_int_eq(srsv_rsv_use_fallback(&rsv, (uint64_t)-4096, NULL),
			 -EINVAL);
	ck_assert_int_eq(srsv_ctx_resize_global_rsv(ctx, (uint64_t)-4096),
			 -EINVAL);
	ck_assert_int_eq(srsv_rsv_release(&rsv, (uint64_t)-4096, NULL), -EINVAL);
	/* Unknown mode. */
	ck_assert_int_eq(srsv_rsv_add(&rsv, 4096, (enum srsv_flush)42, 0),
			 -EINVAL);
	ASSERT_RSV(&rsv, 0, 0, true);
	after = esim_snap(meta);
	ESIM_ASSERT_SAME_INFO(&before, &after);
	ck_assert_int_eq(srsv_rsv_destroy(&rsv), 0);
	/* Destroyed: refused. */
	ck_assert_int_eq(srsv_rsv_use(&rsv, 1), -EINVAL);
}
END_TEST

START_TEST(test_nowait_add_busy_lock)
{
	struct srsv_rsv rsv;

	ck_assert_int_eq(srsv_rsv_init(&rsv, meta, SRSV_RSV_TEMP), 0);
	/* Another thread holds the rsv lock: NOWAIT answers -EAGAIN and
	 * gives the pool bytes back. */
	pthread_mutex_lock(&srsv__rsv_of(&rsv)->lock);
	ck_assert_int_eq(srsv_rsv_add(&rsv, MiB, SRSV_NO_FLUSH,
				      SRSV_RESERVE_NOWAIT), -EAGAIN);
	pthread_mutex_unlock(&srsv__rsv_of(&rsv)->lock);
	ck_assert_uint_eq(may_use(meta), 0);
	ASSERT_RSV(&rsv, 0, 0, true);
	/* A full pool is -EAGAIN too, never -ENOSPC. */
	ck_assert_int_eq(srsv_rsv_add(&rsv, META + 1, SRSV_NO_FLUSH,
				      SRSV_RESERVE_NOWAIT), -EAGAIN);
	ck_assert_int_eq(srsv_rsv_destroy(&rsv), 0);
}
END_TEST

static Suite *rsv_suite(void)
{
	Suite *s = suite_create("rsv");
	TCase *tc = tcase_create("ops");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_add_use_release);
	tcase_add_test(tc, test_release_more_than_size_refused);
	tcase_add_test(tc, test_add_fails_unchanged);
	tcase_add_test(tc, test_refill);
	tcase_add_test(tc, test_migrate);
	tcase_add_test(tc, test_check);
	tcase_add_test(tc, test_release_spills_to_delayed_refs);
	tcase_add_test(tc, test_release_delops_spills_to_global);
	tcase_add_test(tc, test_release_no_spill_target_other_pool);
	tcase_add_test(tc, test_release_spill_races_lockfree_use);
	tcase_add_test(tc, test_bad_input);
	tcase_add_test(tc, test_nowait_add_busy_lock);
	suite_add_tcase(s, tc);

	tc = tcase_create("global");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_global_resize_grants_tickets);
	tcase_add_test(tc, test_steal_allowed_all_steal);
	tcase_add_test(tc, test_steal_allowed_evict);
	tcase_add_test(tc, test_steal_refused_plain_all);
	tcase_add_test(tc, test_steal_refused_below_ten_percent);
	tcase_add_test(tc, test_steal_exactly_ten_percent_left);
	tcase_add_test(tc, test_fallback_chain_steps);
	tcase_add_test(tc, test_fallback_emergency_fails_when_used);
	tcase_add_test(tc, test_fallback_global_refills_itself);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(rsv_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
