/* SPDX-License-Identifier: MIT */
/*
 * Core rules of the reservation machinery, one test per rule.
 *
 * Deterministic tests run in manual mode (SRSV_CTX_MANUAL, no preemptive
 * flushing): tickets are started with srsv_ticket_reserve(), looked at with
 * srsv_ticket_wait(t, 0), and the async reclaim work runs inline when the
 * test calls srsv_ctx_run_pending().  The flush callback is the scripted
 * engine of engine_sim.c, which frees only through the transition
 * functions.  Tests that need real threads (cancel from another thread,
 * shutdown with waiters, callbacks re-entering the library, the whole loop)
 * bound every wait and never assert on timing.
 *
 * Expected behaviour is btrfs's (fs/btrfs/space-info.c) as written in the public headers' doxygen.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libspacersv/spacersv.h>

#include "engine_sim.h"

#define KiB ESIM_KIB
#define MiB ESIM_MIB
#define GiB ESIM_GIB

/* The small pools of the deterministic tests: every figure is a whole
 * number of KiB so that the arithmetic in the assertions reads easily. */
#define META_TOTAL (1 * MiB)
#define DATA_TOTAL (1 * MiB)

/* Hang detector for waits on other threads: generous, never a timing
 * assertion (Check's own per-test timeout is 60 s). */
#define WAIT_MS 10000

/* Manual mode without preemptive flushing: nothing runs unless asked. */
#define MANUAL (SRSV_CTX_MANUAL | SRSV_CTX_MANUAL_WAIT | SRSV_CTX_NO_PREEMPT)

/* Bound on srsv_ctx_run_pending() rounds; a walk is one work item. */
#define RUN_ROUNDS 64

static struct esim *manual_sim(uint64_t unallocated)
{
	return esim_setup(MANUAL, DATA_TOTAL, META_TOTAL, unallocated);
}

static void reserve_ok(struct srsv_space *s, uint64_t bytes, int mode)
{
	int ret = srsv_space_reserve(s, bytes, (enum srsv_flush)mode, 0);

	ck_assert_msg(ret == 0, "reserve %" PRIu64 " %s: %d", bytes,
		      srsv_flush_name(mode), ret);
}

/* Start a ticket that must queue. */
static void queue(struct srsv_space *s, struct srsv_ticket *t, uint64_t bytes,
		  int mode)
{
	int ret = srsv_ticket_reserve(s, t, bytes, (enum srsv_flush)mode, 0);

	ck_assert_msg(ret == -EINPROGRESS, "ticket %" PRIu64 " %s: %d, "
		      "expected -EINPROGRESS", bytes, srsv_flush_name(mode),
		      ret);
}

static int peek(struct srsv_ticket *t)
{
	return srsv_ticket_wait(t, 0);
}

/* Finish a ticket that may still be queued (cancel, then collect). */
static int finish(struct srsv_ticket *t)
{
	srsv_ticket_cancel(t);
	return srsv_ticket_wait(t, UINT64_MAX);
}

static void assert_states(struct esim *sim, int pool,
			  const enum srsv_flush_state *want, size_t nr)
{
	enum srsv_flush_state got[ESIM_LOG_MAX];
	size_t n = esim_log_states(sim, pool, true, got, ESIM_LOG_MAX);
	char buf[4096];
	size_t i;

	for (i = 0; i < nr && i < n; i++)
		if (got[i] != want[i])
			break;
	ck_assert_msg(n == nr && i == nr,
		      "call %zu: got %s, want %s (got %zu calls, want %zu): %s",
		      i, i < n ? srsv_state_name(got[i]) : "(none)",
		      i < nr ? srsv_state_name(want[i]) : "(none)", n, nr,
		      esim_log_format(sim, buf, sizeof(buf)));
}

/* The default walks, spelled out from btrfs (not from the library). */
static const enum srsv_flush_state md_first_cycle[] = {
	SRSV_STATE_DELAYED_ITEMS_NR, SRSV_STATE_DELAYED_ITEMS,
	SRSV_STATE_DELAYED_REFS_NR, SRSV_STATE_DELAYED_REFS,
	SRSV_STATE_DELALLOC, SRSV_STATE_DELALLOC_WAIT,
	/* DELALLOC_FULL skipped while commit_cycles == 0 */
	SRSV_STATE_ALLOC_CHUNK,
	/* ALLOC_CHUNK_FORCE skipped while commit_cycles == 0 */
	SRSV_STATE_RUN_DELAYED_IPUTS, SRSV_STATE_COMMIT_TRANS,
};

static const enum srsv_flush_state md_full_cycle[] = {
	SRSV_STATE_DELAYED_ITEMS_NR, SRSV_STATE_DELAYED_ITEMS,
	SRSV_STATE_DELAYED_REFS_NR, SRSV_STATE_DELAYED_REFS,
	SRSV_STATE_DELALLOC, SRSV_STATE_DELALLOC_WAIT,
	SRSV_STATE_DELALLOC_FULL, SRSV_STATE_ALLOC_CHUNK,
	SRSV_STATE_ALLOC_CHUNK_FORCE, SRSV_STATE_RUN_DELAYED_IPUTS,
	SRSV_STATE_COMMIT_TRANS,
};

#define NR(a) (sizeof(a) / sizeof((a)[0]))

/* Append @src to @dst at *@n. */
static void cat(enum srsv_flush_state *dst, size_t *n,
		const enum srsv_flush_state *src, size_t nr)
{
	memcpy(dst + *n, src, nr * sizeof(*src));
	*n += nr;
}

/* The metadata walk that gives up: first cycle, then two full ones
 * ("commit_cycles > 2"), then maybe_fail_all_tickets(). */
static size_t md_failing_walk(enum srsv_flush_state *out)
{
	size_t n = 0;

	cat(out, &n, md_first_cycle, NR(md_first_cycle));
	cat(out, &n, md_full_cycle, NR(md_full_cycle));
	cat(out, &n, md_full_cycle, NR(md_full_cycle));
	return n;
}

/* ------------------------------------------------------------------ */
/* Queueing and granting order */

/* FIFO: a small ticket that would fit waits behind a large head ticket. */
START_TEST(test_fifo_small_waits_behind_large)
{
	struct esim *sim = manual_sim(0);
	struct srsv_space *md = esim_space(sim, SRSV_POOL_METADATA);
	struct srsv_ticket big, small;

	reserve_ok(md, 900 * KiB, SRSV_NO_FLUSH);
	queue(md, &big, 512 * KiB, SRSV_FLUSH_ALL);
	/* 900 + 64 <= 1024: fits, but must not pass the queued ticket. */
	queue(md, &small, 64 * KiB, SRSV_FLUSH_ALL);

	/* 224 KiB free: enough for the small one, not for the head. */
	ck_assert_int_eq(srsv_space_release(md, 100 * KiB), 0);
	ck_assert_int_eq(peek(&big), -EINPROGRESS);
	ck_assert_int_eq(peek(&small), -EINPROGRESS);
	ESIM_ASSERT_COUNTERS(md, META_TOTAL, 0, 0, 0, 800 * KiB, 0);

	/* 624 KiB free: the head, then the small one behind it. */
	ck_assert_int_eq(srsv_space_release(md, 400 * KiB), 0);
	ck_assert_int_eq(peek(&big), 0);
	ck_assert_int_eq(peek(&small), 0);
	ESIM_ASSERT_COUNTERS(md, META_TOTAL, 0, 0, 0, 976 * KiB, 0);
	ck_assert_uint_eq(esim_snap(md).tickets_granted, 2);
	ck_assert_uint_eq(esim_snap(md).reclaim_size, 0);
	esim_free(sim);
}
END_TEST

/* Priority tickets (FLUSH_LIMIT) pass normal ones (FLUSH_ALL). */
START_TEST(test_priority_passes_normal)
{
	struct esim *sim = manual_sim(0);
	struct srsv_space *md = esim_space(sim, SRSV_POOL_METADATA);
	struct srsv_ticket normal, prio, fits;

	reserve_ok(md, 1000 * KiB, SRSV_NO_FLUSH);
	queue(md, &normal, 100 * KiB, SRSV_FLUSH_ALL);

	/* Fast path: LIMIT only respects priority tickets, and 16 KiB fit. */
	ck_assert_int_eq(srsv_ticket_reserve(md, &fits, 16 * KiB,
					     SRSV_FLUSH_LIMIT, 0), 0);
	ck_assert_int_eq(peek(&fits), 0);
	ESIM_ASSERT_COUNTERS(md, META_TOTAL, 0, 0, 0, 1016 * KiB, 0);

	/* Both queued, the normal one first; 150 KiB come free: the
	 * priority ticket is granted, the older normal one (which alone
	 * would fit) is not. */
	queue(md, &prio, 100 * KiB, SRSV_FLUSH_LIMIT);
	ck_assert_int_eq(srsv_space_release(md, 142 * KiB), 0);
	ck_assert_int_eq(peek(&prio), 0);
	ck_assert_int_eq(peek(&normal), -EINPROGRESS);
	ESIM_ASSERT_COUNTERS(md, META_TOTAL, 0, 0, 0, 974 * KiB, 0);

	ck_assert_int_eq(srsv_space_release(md, 100 * KiB), 0);
	ck_assert_int_eq(peek(&normal), 0);
	esim_free(sim);
}
END_TEST


/*
 * The queue-jumping rule: NO_FLUSH (like ALL and ALL_STEAL) sees both
 * queues; LIMIT, EVICT and EMERGENCY see only the priority queue; FLUSH_DATA
 * too (btrfs's is_normal_flushing() covers ALL and ALL_STEAL only).
 */
START_TEST(test_noflush_never_jumps_queue)
{
	struct esim *sim = manual_sim(0);
	struct srsv_space *md = esim_space(sim, SRSV_POOL_METADATA);
	struct srsv_space *data = esim_space(sim, SRSV_POOL_DATA);
	struct srsv_space_info before, after;
	struct srsv_ticket head, prio, all, dhead, t;

	reserve_ok(md, 900 * KiB, SRSV_NO_FLUSH);
	queue(md, &head, 512 * KiB, SRSV_FLUSH_ALL);
	before = esim_snap(md);

	/* 64 KiB fit, but a normal ticket is queued. */
	ck_assert_int_eq(srsv_space_reserve(md, 64 * KiB, SRSV_NO_FLUSH, 0),
			 -ENOSPC);
	after = esim_snap(md);
	ESIM_ASSERT_SAME_INFO(&before, &after);
	/* FLUSH_ALL queues behind it too. */
	queue(md, &all, 8 * KiB, SRSV_FLUSH_ALL);
	ck_assert_int_eq(finish(&all), -ECANCELED);

	/* LIMIT and EMERGENCY pass normal tickets. */
	reserve_ok(md, 16 * KiB, SRSV_FLUSH_LIMIT);
	reserve_ok(md, 16 * KiB, SRSV_FLUSH_EMERGENCY);
	ESIM_ASSERT_COUNTERS(md, META_TOTAL, 0, 0, 0, 932 * KiB, 0);

	/* A queued priority ticket stops LIMIT and NO_FLUSH alike. */
	queue(md, &prio, 200 * KiB, SRSV_FLUSH_LIMIT);
	ck_assert_int_eq(srsv_space_reserve(md, 8 * KiB, SRSV_NO_FLUSH, 0),
			 -ENOSPC);
	queue(md, &t, 8 * KiB, SRSV_FLUSH_LIMIT);
	ck_assert_int_eq(finish(&t), -ECANCELED);
	ck_assert_int_eq(finish(&prio), -ECANCELED);
	ck_assert_int_eq(finish(&head), -ECANCELED);
	ESIM_ASSERT_COUNTERS(md, META_TOTAL, 0, 0, 0, 932 * KiB, 0);

	/* Data: FLUSH_DATA passes a queued data ticket, NO_FLUSH does not. */
	reserve_ok(data, 900 * KiB, SRSV_NO_FLUSH);
	queue(data, &dhead, 512 * KiB, SRSV_FLUSH_DATA);
	ck_assert_int_eq(srsv_space_reserve(data, 64 * KiB, SRSV_NO_FLUSH, 0),
			 -ENOSPC);
	reserve_ok(data, 64 * KiB, SRSV_FLUSH_DATA);
	ESIM_ASSERT_COUNTERS(data, DATA_TOTAL, 0, 0, 0, 964 * KiB, 0);
	ck_assert_int_eq(finish(&dhead), -ECANCELED);
	ck_assert_uint_eq(esim_total_calls(sim), 0);
	esim_free(sim);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Overcommit arithmetic */

/*
 * calc_available_free_space(), by hand:
 *   avail = unallocated / metadata_raid_factor
 *   allowance = min(data_chunk_bytes, 10% of device_bytes, 1 GiB)
 *   avail = avail <= allowance ? 0 : avail - allowance
 *   FLUSH_ALL, FLUSH_ALL_STEAL: avail >> 6; every other mode: avail >> 1
 * and can_overcommit is strict: used + bytes < total + avail.
 */
struct oc_row {
	const char *what;
	uint64_t unallocated;
	uint64_t device_bytes;
	uint64_t data_chunk_bytes;	/* 0: default (1 GiB) */
	unsigned raid_factor;		/* 0: default (1) */
	uint64_t avail_all;		/* >> 6 */
	uint64_t avail_other;		/* >> 1 */
};

static const struct oc_row oc_rows[] = {
	{ "no unallocated space", 0, 100 * GiB, 256 * MiB, 1, 0, 0 },
	{ "unallocated below 10% of the device", 64 * MiB, 1 * GiB, 0, 1,
	  0, 0 },
	{ "unallocated equal to the allowance", 256 * MiB, 100 * GiB,
	  256 * MiB, 1, 0, 0 },
	{ "allowance = data chunk (256M)", 2 * GiB, 100 * GiB, 256 * MiB, 1,
	  28 * MiB, 896 * MiB },
	{ "raid factor 2 halves unallocated", 2 * GiB, 100 * GiB, 256 * MiB,
	  2, 12 * MiB, 384 * MiB },
	{ "allowance = 10% of a 10G device = default chunk", 2 * GiB,
	  10 * GiB, 0, 1, 16 * MiB, 512 * MiB },
	{ "allowance = 10% of a 5G device (512M)", 2 * GiB, 5 * GiB, 0, 1,
	  24 * MiB, 768 * MiB },
	{ "allowance capped at 1G (2G chunks)", 4 * GiB, 100 * GiB, 2 * GiB, 1,
	  48 * MiB, 1536 * MiB },
	{ "64 bytes above the allowance", 256 * MiB + 64, 100 * GiB,
	  256 * MiB, 1, 1, 32 },
};

static const int oc_modes[] = {
	SRSV_NO_FLUSH, SRSV_FLUSH_LIMIT, SRSV_FLUSH_EVICT, SRSV_FLUSH_ALL,
	SRSV_FLUSH_ALL_STEAL,
};

static bool oc_granted(struct srsv_space *s, uint64_t bytes, int mode)
{
	struct srsv_ticket t;
	int ret = srsv_ticket_reserve(s, &t, bytes, (enum srsv_flush)mode, 0);

	if (ret == 0) {
		ck_assert_int_eq(srsv_space_release(s, bytes), 0);
		return true;
	}
	if (mode == SRSV_NO_FLUSH) {
		ck_assert_int_eq(ret, -ENOSPC);
	} else {
		ck_assert_msg(ret == -EINPROGRESS, "%s: %d",
			      srsv_flush_name(mode), ret);
		ck_assert_int_eq(finish(&t), -ECANCELED);
	}
	return false;
}

START_TEST(test_overcommit_table)
{
	const struct oc_row *r = &oc_rows[_i];
	struct esim *sim = esim_new();
	struct srsv_config cfg;
	struct srsv_space *md;

	esim_config_init(sim, &cfg, MANUAL);
	cfg.pool_bytes[SRSV_POOL_DATA] = DATA_TOTAL;
	cfg.pool_bytes[SRSV_POOL_METADATA] = META_TOTAL;
	cfg.pool_bytes[SRSV_POOL_SYSTEM] = 4 * MiB;
	cfg.unallocated_bytes = r->unallocated;
	cfg.device_bytes = r->device_bytes;
	if (r->data_chunk_bytes)
		cfg.data_chunk_bytes = r->data_chunk_bytes;
	if (r->raid_factor)
		cfg.metadata_raid_factor = r->raid_factor;
	ck_assert_int_eq(esim_ctx_create(sim, &cfg), 0);
	md = esim_space(sim, SRSV_POOL_METADATA);

	/* Plain fit is "<=": the whole pool can be reserved. */
	reserve_ok(md, META_TOTAL, SRSV_NO_FLUSH);

	for (size_t m = 0; m < NR(oc_modes); m++) {
		int mode = oc_modes[m];
		bool all = mode == SRSV_FLUSH_ALL ||
			   mode == SRSV_FLUSH_ALL_STEAL;
		uint64_t avail = all ? r->avail_all : r->avail_other;

		/* used + (avail - 1) < total + avail: granted. */
		if (avail >= 2)
			ck_assert_msg(oc_granted(md, avail - 1, mode),
				      "%s, %s: %" PRIu64 " refused", r->what,
				      srsv_flush_name(mode), avail - 1);
		/* used + avail < total + avail is false: refused. */
		ck_assert_msg(!oc_granted(md, avail ? avail : 1, mode),
			      "%s, %s: %" PRIu64 " granted", r->what,
			      srsv_flush_name(mode), avail ? avail : 1);
		ESIM_ASSERT_COUNTERS(md, META_TOTAL, 0, 0, 0, META_TOTAL, 0);
	}
	ck_assert_uint_eq(esim_total_calls(sim), 0);
	esim_free(sim);
}
END_TEST

/* Data and mixed pools never overcommit, however much is unallocated. */
START_TEST(test_data_never_overcommits)
{
	struct esim *sim = manual_sim(64 * GiB);
	struct srsv_space *data = esim_space(sim, SRSV_POOL_DATA);
	struct srsv_space *md = esim_space(sim, SRSV_POOL_METADATA);
	struct srsv_ticket t;
	struct srsv_config cfg;
	struct esim *mix;

	reserve_ok(data, DATA_TOTAL, SRSV_NO_FLUSH);
	ck_assert_int_eq(srsv_space_reserve(data, 1, SRSV_NO_FLUSH, 0),
			 -ENOSPC);
	queue(data, &t, 1, SRSV_FLUSH_DATA);
	ck_assert_int_eq(finish(&t), -ECANCELED);
	/* The metadata pool of the same ctx does overcommit. */
	reserve_ok(md, META_TOTAL + 4 * KiB, SRSV_NO_FLUSH);
	esim_free(sim);

	mix = esim_new();
	esim_config_init(mix, &cfg, MANUAL | SRSV_CTX_MIXED);
	cfg.pool_bytes[SRSV_POOL_MIXED] = 2 * MiB;
	cfg.pool_bytes[SRSV_POOL_SYSTEM] = 4 * MiB;
	cfg.unallocated_bytes = 64 * GiB;
	ck_assert_int_eq(esim_ctx_create(mix, &cfg), 0);
	ck_assert_ptr_eq(esim_space(mix, SRSV_POOL_DATA),
			 esim_space(mix, SRSV_POOL_MIXED));
	ck_assert_ptr_eq(esim_space(mix, SRSV_POOL_METADATA),
			 esim_space(mix, SRSV_POOL_MIXED));
	reserve_ok(esim_space(mix, SRSV_POOL_MIXED), 2 * MiB, SRSV_NO_FLUSH);
	ck_assert_int_eq(srsv_space_reserve(esim_space(mix, SRSV_POOL_MIXED),
					    1, SRSV_NO_FLUSH, 0), -ENOSPC);
	esim_free(mix);
}
END_TEST

/* FLUSH_EMERGENCY: granted whenever the bytes physically fit, ignoring
 * may_use (used - may_use + bytes <= total); never waits. */
START_TEST(test_emergency_ignores_may_use)
{
	struct esim *sim = manual_sim(0);
	struct srsv_space *md = esim_space(sim, SRSV_POOL_METADATA);
	struct srsv_ticket t;

	reserve_ok(md, 600 * KiB, SRSV_NO_FLUSH);
	ck_assert_int_eq(srsv_space_alloc(md, 600 * KiB), 0);
	ck_assert_int_eq(srsv_space_commit_used(md, 600 * KiB), 0);
	reserve_ok(md, 424 * KiB, SRSV_NO_FLUSH);	/* pool now full */
	ck_assert_int_eq(srsv_space_reserve(md, 1, SRSV_NO_FLUSH, 0),
			 -ENOSPC);
	/* 600 used + 424 = total: fits physically. */
	ck_assert_int_eq(srsv_ticket_reserve(md, &t, 424 * KiB,
					     SRSV_FLUSH_EMERGENCY, 0), 0);
	ESIM_ASSERT_COUNTERS(md, META_TOTAL, 600 * KiB, 0, 0, 848 * KiB, 0);
	/* 600 + 425 > total: refused at once, no ticket. */
	ck_assert_int_eq(srsv_space_reserve(md, 425 * KiB,
					    SRSV_FLUSH_EMERGENCY, 0), -ENOSPC);
	ck_assert_uint_eq(esim_snap(md).nr_tickets +
			  esim_snap(md).nr_priority_tickets, 0);
	esim_free(sim);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Flush-state arrays */

/*
 * Async metadata: DELAYED_ITEMS_NR .. COMMIT_TRANS, DELALLOC_FULL and
 * ALLOC_CHUNK_FORCE skipped on the first cycle, two more full cycles, then
 * maybe_fail_all_tickets() fails the ticket with -ENOSPC.
 */
START_TEST(test_async_metadata_walk)
{
	struct esim *sim = manual_sim(0);
	struct srsv_space *md = esim_space(sim, SRSV_POOL_METADATA);
	enum srsv_flush_state want[64];
	size_t n = md_failing_walk(want);
	struct srsv_space_info info;
	struct esim_call c;
	struct srsv_ticket t;

	reserve_ok(md, META_TOTAL, SRSV_NO_FLUSH);
	queue(md, &t, 64 * KiB, SRSV_FLUSH_ALL);
	ck_assert_uint_eq(esim_total_calls(sim), 0);	/* manual: nothing yet */
	ck_assert_int_gt(esim_run_all(sim, RUN_ROUNDS), 0);

	assert_states(sim, SRSV_POOL_METADATA, want, n);
	ck_assert_int_eq(peek(&t), -ENOSPC);
	/* The hint is btrfs_calc_reclaim_metadata_size(): the ticket. */
	ck_assert(esim_log_get(sim, 0, &c));
	ck_assert_uint_eq(c.bytes, 64 * KiB);
	ck_assert(!c.for_preempt);
	ck_assert(pthread_equal(c.thread, pthread_self()));

	info = esim_snap(md);
	ck_assert_uint_eq(info.tickets_failed, 1);
	ck_assert_uint_eq(info.nr_tickets, 0);
	ck_assert_uint_eq(info.reclaim_size, 0);
	ck_assert(!info.flushing);
	ck_assert_uint_eq(info.may_use, META_TOTAL);
	ck_assert_uint_ge(info.async_runs, 1);
	/* The library's per-state statistics agree with the engine. */
	for (int s = 1; s < SRSV_SPACE_INFO_STATES; s++)
		ck_assert_msg(info.flushes[s] ==
			      esim_calls(sim, (enum srsv_flush_state)s),
			      "%s: %" PRIu64 " vs %" PRIu64, srsv_state_name(s),
			      info.flushes[s],
			      esim_calls(sim, (enum srsv_flush_state)s));
	/* Nothing more to do. */
	ck_assert_int_eq(srsv_ctx_run_pending(sim->ctx), 0);
	esim_free(sim);
}
END_TEST

/* Zoned: the async metadata walk ends with RESET_ZONES (btrfs's
 * final_state), in every cycle. */
START_TEST(test_async_metadata_walk_zoned)
{
	struct esim *sim = esim_setup(MANUAL | SRSV_CTX_ZONED, DATA_TOTAL,
				      META_TOTAL, 0);
	struct srsv_space *md = esim_space(sim, SRSV_POOL_METADATA);
	enum srsv_flush_state want[64];
	struct srsv_ticket t;
	size_t n = 0;

	cat(want, &n, md_first_cycle, NR(md_first_cycle));
	want[n++] = SRSV_STATE_RESET_ZONES;
	for (int c = 0; c < 2; c++) {
		cat(want, &n, md_full_cycle, NR(md_full_cycle));
		want[n++] = SRSV_STATE_RESET_ZONES;
	}
	reserve_ok(md, META_TOTAL, SRSV_NO_FLUSH);
	queue(md, &t, 64 * KiB, SRSV_FLUSH_ALL);
	ck_assert_int_gt(esim_run_all(sim, RUN_ROUNDS), 0);
	assert_states(sim, SRSV_POOL_METADATA, want, n);
	ck_assert_int_eq(peek(&t), -ENOSPC);
	esim_free(sim);
}
END_TEST

/* Async data, pool not full: ALLOC_CHUNK_FORCE while it grows, then the
 * data array, then the ticket fails. */
START_TEST(test_async_data_walk_grows_first)
{
	static const enum srsv_flush_state want[] = {
		SRSV_STATE_ALLOC_CHUNK_FORCE,	/* +64K */
		SRSV_STATE_ALLOC_CHUNK_FORCE,	/* +64K */
		SRSV_STATE_ALLOC_CHUNK_FORCE,	/* -ENOSPC: full */
		SRSV_STATE_DELALLOC_FULL, SRSV_STATE_RUN_DELAYED_IPUTS,
		SRSV_STATE_COMMIT_TRANS, SRSV_STATE_RECLAIM_ZONES,
		SRSV_STATE_RESET_ZONES, SRSV_STATE_ALLOC_CHUNK_FORCE,
	};
	struct esim *sim = manual_sim(128 * KiB);
	struct srsv_space *data = esim_space(sim, SRSV_POOL_DATA);
	struct srsv_ticket t;
	struct srsv_space_info info;

	esim_on(sim, SRSV_STATE_ALLOC_CHUNK_FORCE, ESIM_GROW, 64 * KiB);
	reserve_ok(data, DATA_TOTAL, SRSV_NO_FLUSH);
	queue(data, &t, 256 * KiB, SRSV_FLUSH_DATA);
	ck_assert_int_gt(esim_run_all(sim, RUN_ROUNDS), 0);

	assert_states(sim, SRSV_POOL_DATA, want, NR(want));
	ck_assert_int_eq(peek(&t), -ENOSPC);
	info = esim_snap(data);
	ck_assert(info.full);
	ck_assert_uint_eq(info.total, DATA_TOTAL + 128 * KiB);
	ck_assert_uint_eq(info.unallocated, 0);
	ck_assert_uint_eq(info.may_use, DATA_TOTAL);
	esim_free(sim);
}
END_TEST

/* Async data, pool already full: the data array only. */
START_TEST(test_async_data_walk_full)
{
	static const enum srsv_flush_state want[] = {
		SRSV_STATE_DELALLOC_FULL, SRSV_STATE_RUN_DELAYED_IPUTS,
		SRSV_STATE_COMMIT_TRANS, SRSV_STATE_RECLAIM_ZONES,
		SRSV_STATE_RESET_ZONES, SRSV_STATE_ALLOC_CHUNK_FORCE,
	};
	struct esim *sim = manual_sim(0);
	struct srsv_space *data = esim_space(sim, SRSV_POOL_DATA);
	struct srsv_ticket t;

	ck_assert_int_eq(srsv_space_set_full(data, true), 0);
	reserve_ok(data, DATA_TOTAL, SRSV_NO_FLUSH);
	queue(data, &t, 64 * KiB, SRSV_FLUSH_DATA);
	ck_assert_int_gt(esim_run_all(sim, RUN_ROUNDS), 0);
	assert_states(sim, SRSV_POOL_DATA, want, NR(want));
	ck_assert_int_eq(peek(&t), -ENOSPC);
	esim_free(sim);
}
END_TEST

/* The data walk grants on COMMIT_TRANS: it stops there. */
START_TEST(test_async_data_walk_commit_grants)
{
	static const enum srsv_flush_state want[] = {
		SRSV_STATE_DELALLOC_FULL, SRSV_STATE_RUN_DELAYED_IPUTS,
		SRSV_STATE_COMMIT_TRANS,
	};
	struct esim *sim = manual_sim(0);
	struct srsv_space *data = esim_space(sim, SRSV_POOL_DATA);
	struct srsv_ticket t;

	ck_assert_int_eq(srsv_space_set_full(data, true), 0);
	reserve_ok(data, DATA_TOTAL, SRSV_NO_FLUSH);
	ck_assert_int_eq(srsv_space_alloc(data, 256 * KiB), 0);
	ck_assert_int_eq(srsv_space_commit_used(data, 256 * KiB), 0);
	ck_assert_int_eq(srsv_space_pin(data, 256 * KiB), 0);
	esim_on(sim, SRSV_STATE_COMMIT_TRANS, ESIM_UNPIN, ESIM_ALL);
	queue(data, &t, 64 * KiB, SRSV_FLUSH_DATA);
	ck_assert_int_gt(esim_run_all(sim, RUN_ROUNDS), 0);
	assert_states(sim, SRSV_POOL_DATA, want, NR(want));
	ck_assert_int_eq(peek(&t), 0);
	ESIM_ASSERT_COUNTERS(data, DATA_TOTAL, 0, 0, 0, 832 * KiB, 0);
	esim_free(sim);
}
END_TEST

/*
 * Manual mode without SRSV_CTX_MANUAL_WAIT: a blocking reservation in the
 * only thread runs the walk that serves it itself (no library thread would
 * ever run it): granted once the commit unpins, in the caller's thread;
 * and a walk that frees nothing fails it with -ENOSPC instead of hanging.
 * Check's per-test timeout bounds the test if it ever hangs again.
 */
/*
 * btrfs_return_free_space(): space that comes back refills the global
 * reserve first, and tickets are offered a grant only with what is left
 * ("if (len) btrfs_try_granting_tickets()").  A (80 MiB, ALL_STEAL) and
 * B (16 MiB, ALL: it fits as soon as A is out of the way, but FIFO) wait
 * on a full 1 GiB metadata pool whose engine frees nothing; the commit
 * cycles end with A stealing 80 MiB from the 100 MiB global reserve.  The
 * engine then unpins 64 MiB: all of it refills the reserve (20 -> 84
 * MiB), so B is not granted by it; the walk fails B with -ENOSPC, as
 * upstream does (FLUSH_ALL may not steal).  Before the fix the unpin
 * granted B.
 */
struct unpin_after {
	struct srsv_ticket *a;
	bool done;
	int ret;
};

static int unpin_once_a_stole(struct esim *sim, struct srsv_space *space,
			      enum srsv_flush_state state, uint64_t bytes,
			      void *arg)
{
	struct unpin_after *u = arg;

	(void)sim; (void)state; (void)bytes;
	if (u->done || srsv_ticket_wait(u->a, 0) != 0)
		return 0;
	u->done = true;
	u->ret = srsv_space_unpin(space, 64 * MiB);
	return 0;
}

START_TEST(test_unpin_refill_takes_all_no_grant)
{
	struct esim *sim = esim_new();
	struct srsv_config cfg;
	struct srsv_space *md;
	struct srsv_ticket a, b;
	struct unpin_after u = { .a = &a };
	struct esim_action call = {
		.state = SRSV_STATE_COMMIT_TRANS, .pool = ESIM_ANY,
		.preempt = -1, .op = ESIM_CALL, .fn = unpin_once_a_stole,
		.fn_arg = &u,
	};
	struct srsv_rsv_info g;

	esim_config_init(sim, &cfg, MANUAL);
	cfg.pool_bytes[SRSV_POOL_DATA] = 64 * MiB;
	cfg.pool_bytes[SRSV_POOL_METADATA] = 1024 * MiB;
	cfg.pool_bytes[SRSV_POOL_SYSTEM] = 4 * MiB;
	cfg.global_rsv_bytes = 100 * MiB;
	ck_assert_int_eq(esim_ctx_create(sim, &cfg), 0);
	md = esim_space(sim, SRSV_POOL_METADATA);
	/* used 700 MiB, pinned 64 MiB, 128 MiB held: 32 MiB free. */
	reserve_ok(md, 764 * MiB, SRSV_NO_FLUSH);
	ck_assert_int_eq(srsv_space_alloc(md, 764 * MiB), 0);
	ck_assert_int_eq(srsv_space_commit_used(md, 764 * MiB), 0);
	ck_assert_int_eq(srsv_space_pin(md, 64 * MiB), 0);
	reserve_ok(md, 128 * MiB, SRSV_NO_FLUSH);
	esim_add(sim, &call);
	queue(md, &a, 80 * MiB, SRSV_FLUSH_ALL_STEAL);
	queue(md, &b, 16 * MiB, SRSV_FLUSH_ALL);
	ck_assert_int_gt(esim_run_all(sim, RUN_ROUNDS), 0);
	ck_assert_int_eq(peek(&a), 0);
	ck_assert(u.done);
	ck_assert_int_eq(u.ret, 0);
	ck_assert_int_eq(peek(&b), -ENOSPC);
	ck_assert_int_eq(srsv_rsv_get_info(srsv_ctx_rsv(sim->ctx,
							SRSV_RSV_GLOBAL), &g),
			 0);
	ck_assert_uint_eq(g.reserved, 84 * MiB);
	ESIM_ASSERT_COUNTERS(md, 1024 * MiB, 700 * MiB, 0, 0,
			     128 * MiB + 80 * MiB + 84 * MiB, 0);
	esim_free(sim);
}
END_TEST

START_TEST(test_manual_blocking_runs_its_walk)
{
	struct esim *sim = esim_setup(SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT,
				      DATA_TOTAL, META_TOTAL, 0);
	struct srsv_space *data = esim_space(sim, SRSV_POOL_DATA);
	struct srsv_space *md = esim_space(sim, SRSV_POOL_METADATA);
	struct esim_call c;

	ck_assert_int_eq(srsv_space_set_full(data, true), 0);
	reserve_ok(data, DATA_TOTAL, SRSV_NO_FLUSH);
	ck_assert_int_eq(srsv_space_alloc(data, 256 * KiB), 0);
	ck_assert_int_eq(srsv_space_commit_used(data, 256 * KiB), 0);
	ck_assert_int_eq(srsv_space_pin(data, 256 * KiB), 0);
	esim_on(sim, SRSV_STATE_COMMIT_TRANS, ESIM_UNPIN, ESIM_ALL);
	/* Full: the reservation queues, runs the data walk, commits. */
	ck_assert_int_eq(srsv_space_reserve(data, 64 * KiB, SRSV_FLUSH_DATA, 0),
			 0);
	ck_assert_uint_gt(esim_calls(sim, SRSV_STATE_COMMIT_TRANS), 0);
	ck_assert(esim_log_get(sim, 0, &c));
	ck_assert(pthread_equal(c.thread, pthread_self()));
	/* Nothing was left for srsv_ctx_run_pending(). */
	ck_assert_int_eq(srsv_ctx_run_pending(sim->ctx), 0);

	/* Metadata full, nothing to free: the walk fails the ticket. */
	reserve_ok(md, META_TOTAL, SRSV_NO_FLUSH);
	ck_assert_int_eq(srsv_space_reserve(md, 64 * KiB, SRSV_FLUSH_ALL, 0),
			 -ENOSPC);
	ck_assert_uint_eq(esim_snap(md).nr_tickets, 0);
	esim_free(sim);
}
END_TEST

/* FLUSH_LIMIT: the priority array, once, in the waiting thread. */
START_TEST(test_priority_limit_walk)
{
	static const enum srsv_flush_state want[] = {
		SRSV_STATE_DELAYED_ITEMS_NR, SRSV_STATE_DELAYED_ITEMS,
		SRSV_STATE_RESET_ZONES, SRSV_STATE_ALLOC_CHUNK,
	};
	struct esim *sim = manual_sim(0);
	struct srsv_space *md = esim_space(sim, SRSV_POOL_METADATA);
	struct srsv_ticket t;
	struct esim_call c;

	reserve_ok(md, META_TOTAL, SRSV_NO_FLUSH);
	queue(md, &t, 64 * KiB, SRSV_FLUSH_LIMIT);
	ck_assert_uint_eq(esim_total_calls(sim), 0);
	ck_assert_int_eq(srsv_ticket_wait(&t, UINT64_MAX), -ENOSPC);
	assert_states(sim, SRSV_POOL_METADATA, want, NR(want));
	ck_assert(esim_log_get(sim, 0, &c));
	ck_assert(pthread_equal(c.thread, pthread_self()));
	ck_assert_uint_eq(c.bytes, 64 * KiB);
	/* No async work was queued for a priority ticket. */
	ck_assert_int_eq(srsv_ctx_run_pending(sim->ctx), 0);

	/* Blocking call: same walk. */
	esim_log_clear(sim);
	ck_assert_int_eq(srsv_space_reserve(md, 64 * KiB, SRSV_FLUSH_LIMIT,
					    0), -ENOSPC);
	assert_states(sim, SRSV_POOL_METADATA, want, NR(want));
	ESIM_ASSERT_COUNTERS(md, META_TOTAL, 0, 0, 0, META_TOTAL, 0);
	esim_free(sim);
}
END_TEST

/* FLUSH_EVICT: the evict array, once, then -ENOSPC (no global rsv). */
START_TEST(test_evict_walk)
{
	static const enum srsv_flush_state want[] = {
		SRSV_STATE_DELAYED_ITEMS_NR, SRSV_STATE_DELAYED_ITEMS,
		SRSV_STATE_DELAYED_REFS_NR, SRSV_STATE_DELAYED_REFS,
		SRSV_STATE_DELALLOC, SRSV_STATE_DELALLOC_WAIT,
		SRSV_STATE_DELALLOC_FULL, SRSV_STATE_ALLOC_CHUNK,
		SRSV_STATE_COMMIT_TRANS, SRSV_STATE_RESET_ZONES,
	};
	struct esim *sim = manual_sim(0);
	struct srsv_space *md = esim_space(sim, SRSV_POOL_METADATA);

	reserve_ok(md, META_TOTAL, SRSV_NO_FLUSH);
	ck_assert_int_eq(srsv_space_reserve(md, 64 * KiB, SRSV_FLUSH_EVICT,
					    0), -ENOSPC);
	assert_states(sim, SRSV_POOL_METADATA, want, NR(want));
	esim_free(sim);
}
END_TEST

/* An evict walk that frees enough on COMMIT_TRANS stops right there. */
START_TEST(test_evict_walk_stops_on_grant)
{
	static const enum srsv_flush_state want[] = {
		SRSV_STATE_DELAYED_ITEMS_NR, SRSV_STATE_DELAYED_ITEMS,
		SRSV_STATE_DELAYED_REFS_NR, SRSV_STATE_DELAYED_REFS,
		SRSV_STATE_DELALLOC, SRSV_STATE_DELALLOC_WAIT,
		SRSV_STATE_DELALLOC_FULL, SRSV_STATE_ALLOC_CHUNK,
		SRSV_STATE_COMMIT_TRANS,
	};
	struct esim *sim = manual_sim(0);
	struct srsv_space *md = esim_space(sim, SRSV_POOL_METADATA);

	reserve_ok(md, META_TOTAL, SRSV_NO_FLUSH);
	ck_assert_int_eq(srsv_space_alloc(md, 128 * KiB), 0);
	ck_assert_int_eq(srsv_space_commit_used(md, 128 * KiB), 0);
	ck_assert_int_eq(srsv_space_pin(md, 128 * KiB), 0);
	esim_on(sim, SRSV_STATE_COMMIT_TRANS, ESIM_UNPIN, ESIM_ALL);
	reserve_ok(md, 64 * KiB, SRSV_FLUSH_EVICT);
	assert_states(sim, SRSV_POOL_METADATA, want, NR(want));
	ESIM_ASSERT_COUNTERS(md, META_TOTAL, 0, 0, 0, 960 * KiB, 0);
	esim_free(sim);
}
END_TEST

/* FLUSH_FREE_SPACE_INODE (data, priority): force growth until full. */
START_TEST(test_free_space_inode_walk)
{
	static const enum srsv_flush_state want[] = {
		SRSV_STATE_ALLOC_CHUNK_FORCE,	/* +32K, not enough */
		SRSV_STATE_ALLOC_CHUNK_FORCE,	/* -ENOSPC: full */
	};
	struct esim *sim = manual_sim(32 * KiB);
	struct srsv_space *data = esim_space(sim, SRSV_POOL_DATA);

	esim_on(sim, SRSV_STATE_ALLOC_CHUNK_FORCE, ESIM_GROW, 32 * KiB);
	reserve_ok(data, DATA_TOTAL, SRSV_NO_FLUSH);
	ck_assert_int_eq(srsv_space_reserve(data, 64 * KiB,
					    SRSV_FLUSH_FREE_SPACE_INODE, 0),
			 -ENOSPC);
	assert_states(sim, SRSV_POOL_DATA, want, NR(want));
	ck_assert(esim_snap(data).full);

	/* Growth that suffices grants it. */
	esim_log_clear(sim);
	ck_assert_int_eq(srsv_space_set_full(data, false), 0);
	ck_assert_int_eq(srsv_ctx_set_unallocated(sim->ctx, 64 * KiB), 0);
	esim_clear_actions(sim);
	esim_on(sim, SRSV_STATE_ALLOC_CHUNK_FORCE, ESIM_GROW, 64 * KiB);
	reserve_ok(data, 64 * KiB, SRSV_FLUSH_FREE_SPACE_INODE);
	ck_assert_uint_eq(esim_calls(sim, SRSV_STATE_ALLOC_CHUNK_FORCE), 1);
	ESIM_ASSERT_COUNTERS(data, DATA_TOTAL + 96 * KiB, 0, 0, 0,
			     DATA_TOTAL + 64 * KiB, 0);
	esim_free(sim);
}
END_TEST

/* Progress (a grant in the middle of the walk) restarts it at
 * DELAYED_ITEMS_NR. */
START_TEST(test_progress_restarts_walk)
{
	static const enum srsv_flush_state head[] = {
		SRSV_STATE_DELAYED_ITEMS_NR, SRSV_STATE_DELAYED_ITEMS,
		SRSV_STATE_DELAYED_REFS_NR,	/* frees 64K: small granted */
	};
	struct esim *sim = manual_sim(0);
	struct srsv_space *md = esim_space(sim, SRSV_POOL_METADATA);
	struct esim_action a = {
		.state = SRSV_STATE_DELAYED_REFS_NR, .pool = ESIM_ANY,
		.preempt = -1, .op = ESIM_RELEASE, .arg = 64 * KiB, .times = 1,
	};
	enum srsv_flush_state want[64];
	struct srsv_ticket small, big;
	size_t n = 0;

	reserve_ok(md, META_TOTAL - 64 * KiB, SRSV_NO_FLUSH);
	reserve_ok(md, 64 * KiB, SRSV_NO_FLUSH);
	esim_hold(sim, SRSV_POOL_METADATA, 64 * KiB);
	esim_add(sim, &a);
	queue(md, &small, 64 * KiB, SRSV_FLUSH_ALL);
	queue(md, &big, 512 * KiB, SRSV_FLUSH_ALL);
	ck_assert_int_gt(esim_run_all(sim, RUN_ROUNDS), 0);

	cat(want, &n, head, NR(head));
	n += md_failing_walk(want + n);
	assert_states(sim, SRSV_POOL_METADATA, want, n);
	ck_assert_int_eq(peek(&small), 0);
	ck_assert_int_eq(peek(&big), -ENOSPC);
	ck_assert_uint_eq(esim_held(sim, SRSV_POOL_METADATA), 0);
	ESIM_ASSERT_COUNTERS(md, META_TOTAL, 0, 0, 0, META_TOTAL, 0);
	esim_free(sim);
}
END_TEST

/* Progress also gives back a commit cycle: a grant during the second
 * cycle makes the restarted walk skip DELALLOC_FULL and
 * ALLOC_CHUNK_FORCE again. */
START_TEST(test_progress_decrements_commit_cycles)
{
	static const enum srsv_flush_state second_until_grant[] = {
		SRSV_STATE_DELAYED_ITEMS_NR, SRSV_STATE_DELAYED_ITEMS,
		SRSV_STATE_DELAYED_REFS_NR, SRSV_STATE_DELAYED_REFS,
		SRSV_STATE_DELALLOC, SRSV_STATE_DELALLOC_WAIT,
		SRSV_STATE_DELALLOC_FULL,	/* frees 64K */
	};
	struct esim *sim = manual_sim(0);
	struct srsv_space *md = esim_space(sim, SRSV_POOL_METADATA);
	enum srsv_flush_state want[96];
	struct srsv_ticket small, big;
	size_t n = 0;

	reserve_ok(md, META_TOTAL - 64 * KiB, SRSV_NO_FLUSH);
	reserve_ok(md, 64 * KiB, SRSV_NO_FLUSH);
	esim_hold(sim, SRSV_POOL_METADATA, 64 * KiB);
	/* DELALLOC_FULL only happens from the second cycle on. */
	esim_on(sim, SRSV_STATE_DELALLOC_FULL, ESIM_RELEASE, 64 * KiB);
	queue(md, &small, 64 * KiB, SRSV_FLUSH_ALL);
	queue(md, &big, 512 * KiB, SRSV_FLUSH_ALL);
	ck_assert_int_gt(esim_run_all(sim, RUN_ROUNDS), 0);

	cat(want, &n, md_first_cycle, NR(md_first_cycle));
	cat(want, &n, second_until_grant, NR(second_until_grant));
	/* commit_cycles 1 -> 0: the first-cycle skips apply again. */
	n += md_failing_walk(want + n);
	assert_states(sim, SRSV_POOL_METADATA, want, n);
	ck_assert_int_eq(peek(&small), 0);
	ck_assert_int_eq(peek(&big), -ENOSPC);
	esim_free(sim);
}
END_TEST

/* After the commit cycles the head ticket fails, and a smaller ticket
 * behind it that now fits is granted (maybe_fail_all_tickets). */
START_TEST(test_fail_after_commit_cycles)
{
	struct esim *sim = manual_sim(0);
	struct srsv_space *md = esim_space(sim, SRSV_POOL_METADATA);
	enum srsv_flush_state want[64];
	size_t n = md_failing_walk(want);
	struct srsv_ticket big, small;
	struct srsv_space_info info;

	reserve_ok(md, META_TOTAL - 100 * KiB, SRSV_NO_FLUSH);
	queue(md, &big, 512 * KiB, SRSV_FLUSH_ALL);
	queue(md, &small, 64 * KiB, SRSV_FLUSH_ALL);
	ck_assert_int_gt(esim_run_all(sim, RUN_ROUNDS), 0);

	ck_assert_int_eq(peek(&big), -ENOSPC);
	ck_assert_int_eq(peek(&small), 0);
	/* Three walks (first cycle + two full ones) before giving up;
	 * after the grant the walker may look once more, no further. */
	ck_assert_uint_ge(esim_log_len(sim), n);
	ck_assert_uint_le(esim_log_len(sim), n + 1);
	ck_assert_uint_eq(esim_calls(sim, SRSV_STATE_COMMIT_TRANS), 3);
	info = esim_snap(md);
	ck_assert_uint_eq(info.tickets_failed, 1);
	ck_assert_uint_eq(info.tickets_granted, 1);
	ck_assert_uint_eq(info.may_use, META_TOTAL - 36 * KiB);
	esim_free(sim);
}
END_TEST

/* A FLUSH_ALL_STEAL ticket takes from the global rsv instead of failing;
 * a FLUSH_ALL ticket before it fails. */
START_TEST(test_steal_from_global_after_cycles)
{
	struct esim *sim = esim_new();
	struct srsv_config cfg;
	struct srsv_space *md;
	struct srsv_ticket plain, steal;
	struct srsv_space_info info;

	esim_config_init(sim, &cfg, MANUAL);
	cfg.pool_bytes[SRSV_POOL_DATA] = DATA_TOTAL;
	cfg.pool_bytes[SRSV_POOL_METADATA] = META_TOTAL;
	cfg.pool_bytes[SRSV_POOL_SYSTEM] = 4 * MiB;
	cfg.global_rsv_bytes = 256 * KiB;
	ck_assert_int_eq(esim_ctx_create(sim, &cfg), 0);
	md = esim_space(sim, SRSV_POOL_METADATA);
	info = esim_snap(md);
	ck_assert_uint_eq(info.global_rsv_reserved, 256 * KiB);
	ck_assert_uint_eq(info.may_use, 256 * KiB);

	reserve_ok(md, META_TOTAL - 256 * KiB, SRSV_NO_FLUSH);
	queue(md, &plain, 64 * KiB, SRSV_FLUSH_ALL);
	queue(md, &steal, 64 * KiB, SRSV_FLUSH_ALL_STEAL);
	ck_assert_int_gt(esim_run_all(sim, RUN_ROUNDS), 0);
	ck_assert_int_eq(peek(&plain), -ENOSPC);
	ck_assert_int_eq(peek(&steal), 0);
	/* The bytes moved from the global rsv: may_use unchanged. */
	info = esim_snap(md);
	ck_assert_uint_eq(info.global_rsv_reserved, 192 * KiB);
	ck_assert_uint_eq(info.may_use, META_TOTAL);
	esim_free(sim);
}
END_TEST

/* Overriding arrays replace the defaults. */
START_TEST(test_state_array_overrides)
{
	struct esim *sim = esim_new();
	struct srsv_config cfg;
	struct srsv_space *md, *data;
	struct srsv_ticket t;
	static const enum srsv_flush_state md_want[] = {
		SRSV_STATE_DELAYED_REFS, SRSV_STATE_COMMIT_TRANS,
		SRSV_STATE_DELAYED_REFS, SRSV_STATE_COMMIT_TRANS,
		SRSV_STATE_DELAYED_REFS, SRSV_STATE_COMMIT_TRANS,
	};
	static const enum srsv_flush_state data_want[] = {
		SRSV_STATE_RUN_DELAYED_IPUTS, SRSV_STATE_DELALLOC,
	};
	static const enum srsv_flush_state prio_want[] = {
		SRSV_STATE_COMMIT_TRANS,
	};
	static const enum srsv_flush_state evict_want[] = {
		SRSV_STATE_DELALLOC, SRSV_STATE_DELAYED_ITEMS,
	};

	esim_config_init(sim, &cfg, MANUAL);
	cfg.pool_bytes[SRSV_POOL_DATA] = DATA_TOTAL;
	cfg.pool_bytes[SRSV_POOL_METADATA] = META_TOTAL;
	cfg.pool_bytes[SRSV_POOL_SYSTEM] = 4 * MiB;
	cfg.async_metadata_states = (struct srsv_state_array){
		.nr = 2,
		.states = { SRSV_STATE_DELAYED_REFS, SRSV_STATE_COMMIT_TRANS },
	};
	cfg.async_data_states = (struct srsv_state_array){
		.nr = 2,
		.states = { SRSV_STATE_RUN_DELAYED_IPUTS, SRSV_STATE_DELALLOC },
	};
	cfg.priority_states = (struct srsv_state_array){
		.nr = 1, .states = { SRSV_STATE_COMMIT_TRANS },
	};
	cfg.evict_states = (struct srsv_state_array){
		.nr = 2,
		.states = { SRSV_STATE_DELALLOC, SRSV_STATE_DELAYED_ITEMS },
	};
	ck_assert_int_eq(esim_ctx_create(sim, &cfg), 0);
	md = esim_space(sim, SRSV_POOL_METADATA);
	data = esim_space(sim, SRSV_POOL_DATA);
	reserve_ok(md, META_TOTAL, SRSV_NO_FLUSH);
	reserve_ok(data, DATA_TOTAL, SRSV_NO_FLUSH);
	/* The config was copied: changing ours afterwards changes nothing. */
	cfg.priority_states.nr = 0;

	queue(md, &t, 64 * KiB, SRSV_FLUSH_ALL);
	ck_assert_int_gt(esim_run_all(sim, RUN_ROUNDS), 0);
	ck_assert_int_eq(peek(&t), -ENOSPC);
	assert_states(sim, SRSV_POOL_METADATA, md_want, NR(md_want));

	esim_log_clear(sim);
	ck_assert_int_eq(srsv_space_set_full(data, true), 0);
	queue(data, &t, 64 * KiB, SRSV_FLUSH_DATA);
	ck_assert_int_gt(esim_run_all(sim, RUN_ROUNDS), 0);
	ck_assert_int_eq(peek(&t), -ENOSPC);
	assert_states(sim, SRSV_POOL_DATA, data_want, NR(data_want));

	esim_log_clear(sim);
	ck_assert_int_eq(srsv_space_reserve(md, 64 * KiB, SRSV_FLUSH_LIMIT,
					    0), -ENOSPC);
	assert_states(sim, SRSV_POOL_METADATA, prio_want, NR(prio_want));

	esim_log_clear(sim);
	ck_assert_int_eq(srsv_space_reserve(md, 64 * KiB, SRSV_FLUSH_EVICT,
					    0), -ENOSPC);
	assert_states(sim, SRSV_POOL_METADATA, evict_want, NR(evict_want));
	esim_free(sim);
}
END_TEST

/* States the engine does not implement are skipped, the walk goes on;
 * ALLOC_CHUNK answering -EOPNOTSUPP marks the pool full. */
START_TEST(test_unsupported_states_skipped)
{
	struct esim *sim = manual_sim(0);
	struct srsv_space *md = esim_space(sim, SRSV_POOL_METADATA);
	struct srsv_ticket t;

	for (int s = 1; s < SRSV_STATE_COUNT; s++)
		if (s != SRSV_STATE_COMMIT_TRANS)
			esim_set_unsupported(sim, (enum srsv_flush_state)s,
					     true);
	esim_on_error(sim, SRSV_STATE_DELAYED_ITEMS, -EIO);
	reserve_ok(md, META_TOTAL, SRSV_NO_FLUSH);
	ck_assert_int_eq(srsv_space_alloc(md, 64 * KiB), 0);
	ck_assert_int_eq(srsv_space_commit_used(md, 64 * KiB), 0);
	ck_assert_int_eq(srsv_space_pin(md, 64 * KiB), 0);
	esim_on(sim, SRSV_STATE_COMMIT_TRANS, ESIM_UNPIN, ESIM_ALL);
	ck_assert(!esim_snap(md).full);
	queue(md, &t, 64 * KiB, SRSV_FLUSH_ALL);
	ck_assert_int_gt(esim_run_all(sim, RUN_ROUNDS), 0);
	/* Errors and -EOPNOTSUPP did not stop the walk: COMMIT_TRANS came. */
	ck_assert_int_eq(peek(&t), 0);
	ck_assert_uint_ge(esim_calls(sim, SRSV_STATE_COMMIT_TRANS), 1);
	ck_assert(esim_snap(md).full);
	esim_free(sim);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Timeout and cancel */

START_TEST(test_timeout)
{
	struct esim *sim = manual_sim(0);
	struct srsv_space *md = esim_space(sim, SRSV_POOL_METADATA);
	struct srsv_space_info before, after;
	struct srsv_ticket t;

	reserve_ok(md, META_TOTAL, SRSV_NO_FLUSH);
	before = esim_snap(md);

	/* Nobody flushes in manual mode: the deadline passes. */
	ck_assert_int_eq(srsv_space_reserve_timeout(md, 64 * KiB,
						    SRSV_FLUSH_ALL, 0,
						    20 * 1000000ull),
			 -ETIMEDOUT);
	after = esim_snap(md);
	ck_assert_uint_eq(after.may_use, before.may_use);
	ck_assert_uint_eq(after.nr_tickets, 0);
	ck_assert_uint_eq(after.reclaim_size, 0);

	/* 0: do not wait at all, and never queue (no ticket ends). */
	ck_assert_int_eq(srsv_space_reserve_timeout(md, 64 * KiB,
						    SRSV_FLUSH_ALL, 0, 0),
			 -ETIMEDOUT);
	ck_assert_uint_eq(esim_snap(md).tickets_failed,
			  after.tickets_failed);
	ck_assert_uint_eq(esim_snap(md).nr_tickets, 0);

	/* The ticket form: the result sticks, cancel finds it ended. */
	queue(md, &t, 64 * KiB, SRSV_FLUSH_ALL);
	ck_assert_int_eq(srsv_ticket_wait(&t, 20 * 1000000ull), -ETIMEDOUT);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -ETIMEDOUT);
	ck_assert_int_eq(srsv_ticket_cancel(&t), -EALREADY);

	/* Freed space goes to nobody: the timed-out tickets hold nothing. */
	ck_assert_int_eq(srsv_space_release(md, 128 * KiB), 0);
	after = esim_snap(md);
	ck_assert_uint_eq(after.may_use, META_TOTAL - 128 * KiB);
	ck_assert_uint_eq(after.nr_tickets, 0);
	ck_assert_uint_eq(after.tickets_granted, 0);
	ck_assert_uint_ge(after.tickets_failed, 2);

	/* A priority reservation with a far deadline: its own walk ends it
	 * (-ENOSPC), the deadline does not matter. */
	reserve_ok(md, 128 * KiB, SRSV_NO_FLUSH);
	ck_assert_int_eq(srsv_space_reserve_timeout(md, 64 * KiB,
						    SRSV_FLUSH_LIMIT, 0,
						    WAIT_MS * 1000000ull),
			 -ENOSPC);
	ESIM_ASSERT_COUNTERS(md, META_TOTAL, 0, 0, 0, META_TOTAL, 0);
	esim_free(sim);
}
END_TEST

struct waiter {
	struct srsv_ticket *ticket;
	struct srsv_space *space;
	uint64_t bytes;
	int mode;
	int ret;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;

	w->ret = srsv_ticket_wait(w->ticket, UINT64_MAX);
	return NULL;
}

static void *reserve_thread(void *arg)
{
	struct waiter *w = arg;

	w->ret = srsv_space_reserve(w->space, w->bytes,
				    (enum srsv_flush)w->mode, 0);
	return NULL;
}

/* Cancel from another thread: the waiter gets -ECANCELED, holds nothing. */
START_TEST(test_cancel_from_other_thread)
{
	struct esim *sim = manual_sim(0);
	struct srsv_space *md = esim_space(sim, SRSV_POOL_METADATA);
	struct srsv_ticket t;
	struct waiter w = { .ticket = &t, .ret = 1 };
	struct srsv_space_info info;
	pthread_t th;

	reserve_ok(md, META_TOTAL, SRSV_NO_FLUSH);
	queue(md, &t, 64 * KiB, SRSV_FLUSH_ALL);
	ck_assert_int_eq(pthread_create(&th, NULL, wait_thread, &w), 0);
	/* Give the waiter a chance to block; the result is the same if it
	 * has not yet (cancel ends the ticket either way). */
	esim_sleep_ms(20);
	ck_assert_int_eq(srsv_ticket_cancel(&t), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(w.ret, -ECANCELED);
	ck_assert_int_eq(srsv_ticket_cancel(&t), -EALREADY);
	ck_assert_int_eq(srsv_ticket_wait(&t, UINT64_MAX), -ECANCELED);

	info = esim_snap(md);
	ck_assert_uint_eq(info.may_use, META_TOTAL);
	ck_assert_uint_eq(info.nr_tickets, 0);
	ck_assert_uint_eq(info.reclaim_size, 0);
	/* Space freed now goes to nobody. */
	ck_assert_int_eq(srsv_space_release(md, 64 * KiB), 0);
	ESIM_ASSERT_COUNTERS(md, META_TOTAL, 0, 0, 0, META_TOTAL - 64 * KiB,
			     0);
	esim_free(sim);
}
END_TEST

/* Cancel after the grant: -EALREADY, and the caller holds the bytes. */
START_TEST(test_cancel_after_grant)
{
	struct esim *sim = manual_sim(0);
	struct srsv_space *md = esim_space(sim, SRSV_POOL_METADATA);
	struct srsv_ticket t, big, small;

	reserve_ok(md, META_TOTAL, SRSV_NO_FLUSH);
	queue(md, &t, 64 * KiB, SRSV_FLUSH_ALL);
	ck_assert_int_eq(srsv_space_release(md, 64 * KiB), 0);
	ck_assert_int_eq(srsv_ticket_cancel(&t), -EALREADY);
	ck_assert_int_eq(srsv_ticket_wait(&t, UINT64_MAX), 0);
	ESIM_ASSERT_COUNTERS(md, META_TOTAL, 0, 0, 0, META_TOTAL, 0);

	/* Cancelling a large head ticket lets the smaller one behind in. */
	ck_assert_int_eq(srsv_space_release(md, 100 * KiB), 0);
	queue(md, &big, 512 * KiB, SRSV_FLUSH_ALL);
	queue(md, &small, 64 * KiB, SRSV_FLUSH_ALL);
	ck_assert_int_eq(srsv_ticket_cancel(&big), 0);
	ck_assert_int_eq(peek(&small), 0);
	ESIM_ASSERT_COUNTERS(md, META_TOTAL, 0, 0, 0, 988 * KiB, 0);
	esim_free(sim);
}
END_TEST

/*
 * No grant is ever lost: while one thread frees space, another keeps
 * starting tickets and cancelling them or letting them time out.  Every
 * outcome is either "granted, caller holds the bytes" or "ended, caller
 * holds nothing"; at the end may_use is what the callers hold.
 */
#define RACE_ROUNDS 400
#define RACE_BYTES (16 * KiB)

struct race {
	struct srsv_space *space;
	uint64_t held;		/* by the ticket thread */
	unsigned granted, cancelled, timedout, other;
	volatile int stop;
};

static void *race_tickets(void *arg)
{
	struct race *r = arg;

	for (int i = 0; i < RACE_ROUNDS; i++) {
		struct srsv_ticket t;
		int ret = srsv_ticket_reserve(r->space, &t, RACE_BYTES,
					      SRSV_FLUSH_ALL, 0);

		if (ret == -EINPROGRESS) {
			if (i & 1) {
				srsv_ticket_cancel(&t);
				ret = srsv_ticket_wait(&t, UINT64_MAX);
			} else {
				ret = srsv_ticket_wait(&t, 50000);
			}
		}
		if (ret == 0) {
			r->held += RACE_BYTES;
			r->granted++;
		} else if (ret == -ECANCELED) {
			r->cancelled++;
		} else if (ret == -ETIMEDOUT) {
			r->timedout++;
		} else {
			r->other++;
		}
	}
	__atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
	return NULL;
}

START_TEST(test_no_grant_lost_on_cancel_or_timeout)
{
	struct esim *sim = manual_sim(0);
	struct srsv_space *md = esim_space(sim, SRSV_POOL_METADATA);
	struct race r = { .space = md };
	uint64_t main_held = META_TOTAL;
	pthread_t th;

	reserve_ok(md, META_TOTAL, SRSV_NO_FLUSH);
	ck_assert_int_eq(pthread_create(&th, NULL, race_tickets, &r), 0);
	/* Free space in small steps while the ticket thread runs. */
	while (!__atomic_load_n(&r.stop, __ATOMIC_ACQUIRE) && main_held) {
		ck_assert_int_eq(srsv_space_release(md, 4 * KiB), 0);
		main_held -= 4 * KiB;
		esim_sleep_ms(0);
	}
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_uint_eq(r.other, 0);
	ck_assert_uint_eq(r.granted + r.cancelled + r.timedout, RACE_ROUNDS);
	ESIM_ASSERT_COUNTERS(md, META_TOTAL, 0, 0, 0, main_held + r.held, 0);
	ck_assert_uint_eq(esim_snap(md).nr_tickets, 0);
	ck_assert_uint_eq(esim_snap(md).reclaim_size, 0);
	esim_free(sim);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Shutdown */

#define NR_WAITERS 3

/* Shutdown with threads blocked in srsv_space_reserve: -ESHUTDOWN. */
START_TEST(test_shutdown_with_waiters)
{
	struct esim *sim = manual_sim(0);
	struct srsv_space *md = esim_space(sim, SRSV_POOL_METADATA);
	struct srsv_space *data = esim_space(sim, SRSV_POOL_DATA);
	struct waiter w[NR_WAITERS];
	pthread_t th[NR_WAITERS];
	struct srsv_space_info info;

	reserve_ok(md, META_TOTAL, SRSV_NO_FLUSH);
	reserve_ok(data, DATA_TOTAL, SRSV_NO_FLUSH);
	for (int i = 0; i < NR_WAITERS; i++) {
		bool d = i == NR_WAITERS - 1;

		w[i] = (struct waiter){
			.space = d ? data : md, .bytes = 64 * KiB,
			.mode = d ? SRSV_FLUSH_DATA : SRSV_FLUSH_ALL, .ret = 1,
		};
		ck_assert_int_eq(pthread_create(&th[i], NULL, reserve_thread,
						&w[i]), 0);
	}
	ck_assert(esim_wait_tickets(md, NR_WAITERS - 1, WAIT_MS));
	ck_assert(esim_wait_tickets(data, 1, WAIT_MS));

	ck_assert_int_eq(srsv_ctx_shutdown(sim->ctx), 0);
	for (int i = 0; i < NR_WAITERS; i++) {
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
		ck_assert_int_eq(w[i].ret, -ESHUTDOWN);
	}
	/* Counters stay readable and nothing leaked into may_use. */
	info = esim_snap(md);
	ck_assert_uint_eq(info.may_use, META_TOTAL);
	ck_assert_uint_eq(info.nr_tickets, 0);
	ck_assert_uint_eq(info.reclaim_size, 0);
	ck_assert_uint_eq(info.tickets_failed, NR_WAITERS - 1);
	ESIM_ASSERT_COUNTERS(data, DATA_TOTAL, 0, 0, 0, DATA_TOTAL, 0);
	/* New reservations that would wait fail at once. */
	ck_assert_int_eq(srsv_space_reserve(md, 64 * KiB, SRSV_FLUSH_ALL, 0),
			 -ESHUTDOWN);
	ck_assert_int_eq(srsv_ctx_shutdown(sim->ctx), 0);
	esim_free(sim);
}
END_TEST

/* Threaded ctx, workers busy in the callback: destroy fails the waiters
 * with -ESHUTDOWN, joins the workers and returns. */
START_TEST(test_destroy_with_waiters_threaded)
{
	struct esim *sim = esim_setup(SRSV_CTX_NO_PREEMPT, DATA_TOTAL,
				      META_TOTAL, 0);
	struct srsv_space *md = esim_space(sim, SRSV_POOL_METADATA);
	struct waiter w[NR_WAITERS];
	pthread_t th[NR_WAITERS];

	/* Each state takes 100 ms: the walk would need ~3 s to give up,
	 * far longer than it takes to queue three tickets and destroy (which
	 * waits for at most the one callback in progress). */
	esim_on(sim, 0, ESIM_SLEEP_MS, 100);
	reserve_ok(md, META_TOTAL, SRSV_NO_FLUSH);
	for (int i = 0; i < NR_WAITERS; i++) {
		w[i] = (struct waiter){
			.space = md, .bytes = 64 * KiB,
			.mode = SRSV_FLUSH_ALL, .ret = 1,
		};
		ck_assert_int_eq(pthread_create(&th[i], NULL, reserve_thread,
						&w[i]), 0);
	}
	ck_assert(esim_wait_tickets(md, NR_WAITERS, WAIT_MS));
	ck_assert(esim_wait_calls(sim, 1, WAIT_MS));

	srsv_ctx_destroy(sim->ctx);
	sim->ctx = NULL;
	for (int i = 0; i < NR_WAITERS; i++) {
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
		ck_assert_int_eq(w[i].ret, -ESHUTDOWN);
	}
	esim_free(sim);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Callbacks re-entering the library */

static int reserve_system_noflush(struct esim *sim, struct srsv_space *space,
				  enum srsv_flush_state state, uint64_t bytes,
				  void *arg)
{
	struct srsv_space *sys = esim_space(sim, SRSV_POOL_SYSTEM);
	int *ret = arg;

	(void)space; (void)state; (void)bytes;
	*ret = srsv_space_reserve(sys, 4 * KiB, SRSV_NO_FLUSH, 0);
	if (!*ret)
		*ret = srsv_space_release(sys, 4 * KiB) ? 2 : 0;
	return 0;
}

/* Threaded ctx: the worker's callback reserves NO_FLUSH and releases. */
START_TEST(test_callback_reserves_noflush)
{
	struct esim *sim = esim_setup(SRSV_CTX_NO_PREEMPT, DATA_TOTAL,
				      META_TOTAL, 0);
	struct srsv_space *md = esim_space(sim, SRSV_POOL_METADATA);
	int sys_ret = 1;
	struct esim_action same = {
		.state = SRSV_STATE_DELAYED_ITEMS_NR, .pool = ESIM_ANY,
		.preempt = -1, .op = ESIM_REENTER_NOFLUSH, .arg = 4 * KiB,
		.times = 1,
	};
	struct esim_action other = {
		.state = SRSV_STATE_DELAYED_ITEMS_NR, .pool = ESIM_ANY,
		.preempt = -1, .op = ESIM_CALL, .fn = reserve_system_noflush,
		.fn_arg = &sys_ret, .times = 1,
	};
	struct esim_reenter re;
	struct esim_call c;

	reserve_ok(md, META_TOTAL - 128 * KiB, SRSV_NO_FLUSH);
	reserve_ok(md, 128 * KiB, SRSV_NO_FLUSH);
	esim_hold(sim, SRSV_POOL_METADATA, 128 * KiB);
	esim_add(sim, &same);
	esim_add(sim, &other);
	esim_on(sim, SRSV_STATE_DELAYED_ITEMS, ESIM_RELEASE, 128 * KiB);

	reserve_ok(md, 64 * KiB, SRSV_FLUSH_ALL);

	re = esim_reenter_results(sim);
	ck_assert_uint_eq(re.noflush_calls, 1);
	/* Our own ticket was queued: NO_FLUSH must not jump it, even from
	 * the flusher, and must not deadlock either. */
	ck_assert_int_eq(re.noflush_last, -ENOSPC);
	ck_assert_int_eq(sys_ret, 0);
	ck_assert(esim_log_get(sim, 0, &c));
	ck_assert(!pthread_equal(c.thread, pthread_self()));
	ESIM_ASSERT_COUNTERS(md, META_TOTAL, 0, 0, 0,
			     META_TOTAL - 128 * KiB + 64 * KiB, 0);
	ESIM_ASSERT_COUNTERS(esim_space(sim, SRSV_POOL_SYSTEM), UINT64_MAX,
			     0, 0, 0, 0, 0);
	ck_assert_uint_eq(esim_action_errors(sim, NULL), 0);
	esim_free(sim);
}
END_TEST

struct inside {
	int run_pending, shutdown, destroy, limit;
};

static int call_from_inside(struct esim *sim, struct srsv_space *space,
			    enum srsv_flush_state state, uint64_t bytes,
			    void *arg)
{
	struct inside *in = arg;

	(void)state; (void)bytes;
	in->run_pending = srsv_ctx_run_pending(sim->ctx);
	in->shutdown = srsv_ctx_shutdown(sim->ctx);
	/* Freeing the ctx under its own walk would be a use-after-free. */
	in->destroy = srsv_ctx_destroy(sim->ctx);
	in->limit = srsv_space_reserve(space, 512 * KiB, SRSV_FLUSH_LIMIT, 0);
	return 0;
}

/* A flushing reservation from inside a callback gets -EDEADLK (manual
 * mode: the callback runs in srsv_ctx_run_pending()'s thread). */
START_TEST(test_callback_flushing_reserve_edeadlk)
{
	struct esim *sim = manual_sim(0);
	struct srsv_space *md = esim_space(sim, SRSV_POOL_METADATA);
	struct inside in = { 1, 1, 1, 1 };
	struct esim_action a = {
		.state = SRSV_STATE_DELAYED_ITEMS_NR, .pool = ESIM_ANY,
		.preempt = -1, .op = ESIM_REENTER_FLUSH, .arg = 64 * KiB,
		.times = 1,
	};
	struct esim_action b = {
		.state = SRSV_STATE_DELAYED_ITEMS_NR, .pool = ESIM_ANY,
		.preempt = -1, .op = ESIM_CALL, .fn = call_from_inside,
		.fn_arg = &in, .times = 1,
	};
	struct srsv_ticket t;
	struct esim_reenter re;

	reserve_ok(md, META_TOTAL - 64 * KiB, SRSV_NO_FLUSH);
	reserve_ok(md, 64 * KiB, SRSV_NO_FLUSH);
	esim_hold(sim, SRSV_POOL_METADATA, 64 * KiB);
	esim_add(sim, &a);
	esim_add(sim, &b);
	esim_on(sim, SRSV_STATE_DELAYED_ITEMS, ESIM_RELEASE, 64 * KiB);
	queue(md, &t, 64 * KiB, SRSV_FLUSH_ALL);
	ck_assert_int_gt(esim_run_all(sim, RUN_ROUNDS), 0);
	ck_assert_int_eq(peek(&t), 0);

	re = esim_reenter_results(sim);
	ck_assert_uint_eq(re.flush_calls, 1);
	ck_assert_int_eq(re.flush_last, -EDEADLK);
	ck_assert_int_eq(in.run_pending, -EDEADLK);
	ck_assert_int_eq(in.shutdown, -EDEADLK);
	ck_assert_int_eq(in.destroy, -EDEADLK);
	ck_assert_int_eq(in.limit, -EDEADLK);
	ESIM_ASSERT_COUNTERS(md, META_TOTAL, 0, 0, 0, META_TOTAL, 0);
	/* The ctx is not shut down. */
	ck_assert_int_eq(srsv_space_release(md, 64 * KiB), 0);
	reserve_ok(md, 64 * KiB, SRSV_FLUSH_ALL);
	esim_free(sim);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Lifecycle transitions */

START_TEST(test_lifecycle_transitions)
{
	struct esim *sim = manual_sim(0);
	struct srsv_space *d = esim_space(sim, SRSV_POOL_DATA);
	struct srsv_space_info info;

	ESIM_ASSERT_COUNTERS(d, 1024 * KiB, 0, 0, 0, 0, 0);
	reserve_ok(d, 100 * KiB, SRSV_FLUSH_DATA);
	ESIM_ASSERT_COUNTERS(d, 1024 * KiB, 0, 0, 0, 100 * KiB, 0);
	ck_assert_int_eq(srsv_space_alloc(d, 60 * KiB), 0);
	ESIM_ASSERT_COUNTERS(d, 1024 * KiB, 0, 0, 60 * KiB, 40 * KiB, 0);
	ck_assert_int_eq(srsv_space_commit_used(d, 50 * KiB), 0);
	ESIM_ASSERT_COUNTERS(d, 1024 * KiB, 50 * KiB, 0, 10 * KiB, 40 * KiB,
			     0);
	ck_assert_int_eq(srsv_space_free_reserved(d, 10 * KiB), 0);
	ESIM_ASSERT_COUNTERS(d, 1024 * KiB, 50 * KiB, 0, 0, 40 * KiB, 0);
	ck_assert_int_eq(srsv_space_pin(d, 20 * KiB), 0);
	ESIM_ASSERT_COUNTERS(d, 1024 * KiB, 30 * KiB, 20 * KiB, 0, 40 * KiB,
			     0);
	ck_assert_int_eq(srsv_space_unpin(d, 20 * KiB), 0);
	ESIM_ASSERT_COUNTERS(d, 1024 * KiB, 30 * KiB, 0, 0, 40 * KiB, 0);

	ck_assert_int_eq(srsv_space_grow(d, 1024 * KiB), 0);
	ESIM_ASSERT_COUNTERS(d, 2048 * KiB, 30 * KiB, 0, 0, 40 * KiB, 0);

	/* Free = 2048 - 30 - 40 = 1978 KiB. */
	ck_assert_int_eq(srsv_space_set_readonly(d, 100 * KiB, false), 0);
	ESIM_ASSERT_COUNTERS(d, 2048 * KiB, 30 * KiB, 0, 0, 40 * KiB,
			     100 * KiB);
	ck_assert_int_eq(srsv_space_set_readonly(d, 1879 * KiB, false),
			 -ENOSPC);
	ESIM_ASSERT_COUNTERS(d, 2048 * KiB, 30 * KiB, 0, 0, 40 * KiB,
			     100 * KiB);
	ck_assert_int_eq(srsv_space_set_readonly(d, 1878 * KiB, false), 0);
	ESIM_ASSERT_COUNTERS(d, 2048 * KiB, 30 * KiB, 0, 0, 40 * KiB,
			     1978 * KiB);
	/* Full now: only force takes more (and overcommits the pool). */
	ck_assert_int_eq(srsv_space_set_readonly(d, 1, false), -ENOSPC);
	ck_assert_int_eq(srsv_space_set_readonly(d, 10 * KiB, true), 0);
	ESIM_ASSERT_COUNTERS(d, 2048 * KiB, 30 * KiB, 0, 0, 40 * KiB,
			     1988 * KiB);
	ck_assert_int_eq(srsv_space_clear_readonly(d, 1888 * KiB), 0);
	ESIM_ASSERT_COUNTERS(d, 2048 * KiB, 30 * KiB, 0, 0, 40 * KiB,
			     100 * KiB);
	/* A read-only block group deleted: capacity goes with it. */
	ck_assert_int_eq(srsv_space_shrink(d, 100 * KiB), 0);
	ESIM_ASSERT_COUNTERS(d, 1948 * KiB, 30 * KiB, 0, 0, 40 * KiB, 0);

	/* full: set, cleared by growth. */
	ck_assert_int_eq(srsv_space_set_full(d, true), 0);
	ck_assert(esim_snap(d).full);
	ck_assert_int_eq(srsv_space_grow(d, 4 * KiB), 0);
	ck_assert(!esim_snap(d).full);
	ESIM_ASSERT_COUNTERS(d, 1952 * KiB, 30 * KiB, 0, 0, 40 * KiB, 0);

	/* Give everything back. */
	ck_assert_int_eq(srsv_space_release(d, 40 * KiB), 0);
	ck_assert_int_eq(srsv_space_pin(d, 30 * KiB), 0);
	ck_assert_int_eq(srsv_space_unpin(d, 30 * KiB), 0);
	ESIM_ASSERT_COUNTERS(d, 1952 * KiB, 0, 0, 0, 0, 0);
	info = esim_snap(d);
	ck_assert_int_eq(info.kind, SRSV_POOL_DATA);
	ck_assert_uint_eq(info.zone_unusable, 0);
	ck_assert_uint_eq(info.tickets_granted + info.tickets_failed, 0);
	ck_assert_uint_eq(esim_total_calls(sim), 0);
	esim_free(sim);
}
END_TEST

/*
 * Every transition that frees space grants a waiting ticket: release,
 * unpin, free_reserved, grow, clear_readonly, and (metadata overcommit)
 * more unallocated device space.  One loop index per trigger.
 */
enum grant_trigger {
	BY_RELEASE, BY_UNPIN, BY_FREE_RESERVED, BY_GROW, BY_CLEAR_READONLY,
	BY_UNALLOCATED, BY_RELEASE_PRIORITY, GRANT_TRIGGERS
};

START_TEST(test_frees_grant_waiting_ticket)
{
	struct esim *sim = manual_sim(0);
	struct srsv_space *md = esim_space(sim, SRSV_POOL_METADATA);
	const uint64_t b = 64 * KiB;
	struct srsv_ticket t;
	int mode = _i == BY_RELEASE_PRIORITY ? SRSV_FLUSH_LIMIT
					      : SRSV_FLUSH_ALL;

	/* Fill the pool so that each trigger frees exactly b. */
	switch (_i) {
	case BY_UNPIN:
		reserve_ok(md, META_TOTAL, SRSV_NO_FLUSH);
		ck_assert_int_eq(srsv_space_alloc(md, b), 0);
		ck_assert_int_eq(srsv_space_commit_used(md, b), 0);
		ck_assert_int_eq(srsv_space_pin(md, b), 0);
		break;
	case BY_FREE_RESERVED:
		reserve_ok(md, META_TOTAL, SRSV_NO_FLUSH);
		ck_assert_int_eq(srsv_space_alloc(md, b), 0);
		break;
	case BY_CLEAR_READONLY:
		ck_assert_int_eq(srsv_space_set_readonly(md, b, false), 0);
		reserve_ok(md, META_TOTAL - b, SRSV_NO_FLUSH);
		break;
	default:
		reserve_ok(md, META_TOTAL, SRSV_NO_FLUSH);
		break;
	}
	queue(md, &t, b, mode);

	switch (_i) {
	case BY_RELEASE:
	case BY_RELEASE_PRIORITY:
		ck_assert_int_eq(srsv_space_release(md, b), 0);
		break;
	case BY_UNPIN:
		ck_assert_int_eq(srsv_space_unpin(md, b), 0);
		break;
	case BY_FREE_RESERVED:
		ck_assert_int_eq(srsv_space_free_reserved(md, b), 0);
		break;
	case BY_GROW:
		ck_assert_int_eq(srsv_space_grow(md, b), 0);
		break;
	case BY_CLEAR_READONLY:
		ck_assert_int_eq(srsv_space_clear_readonly(md, b), 0);
		break;
	case BY_UNALLOCATED:
		/* FLUSH_ALL overcommit: (1G - 10% of device) >> 6, MiBs. */
		ck_assert_int_eq(srsv_ctx_set_unallocated(sim->ctx, GiB), 0);
		break;
	}
	ck_assert_msg(peek(&t) == 0, "trigger %d did not grant", _i);
	ck_assert_uint_eq(esim_snap(md).tickets_granted, 1);
	ck_assert_uint_eq(esim_snap(md).nr_tickets +
			  esim_snap(md).nr_priority_tickets, 0);
	ck_assert_uint_eq(esim_total_calls(sim), 0);
	esim_free(sim);
}
END_TEST

/* srsv_ctx_set_error() fails every queued ticket with that error. */
START_TEST(test_set_error_fails_tickets)
{
	struct esim *sim = manual_sim(0);
	struct srsv_space *md = esim_space(sim, SRSV_POOL_METADATA);
	struct srsv_space *data = esim_space(sim, SRSV_POOL_DATA);
	struct srsv_ticket normal, prio, dt;
	struct srsv_space_info info;

	reserve_ok(md, META_TOTAL, SRSV_NO_FLUSH);
	reserve_ok(data, DATA_TOTAL, SRSV_NO_FLUSH);
	queue(md, &normal, 64 * KiB, SRSV_FLUSH_ALL);
	queue(md, &prio, 64 * KiB, SRSV_FLUSH_LIMIT);
	queue(data, &dt, 64 * KiB, SRSV_FLUSH_DATA);

	ck_assert_int_eq(srsv_ctx_set_error(sim->ctx, -EIO), 0);
	ck_assert_int_eq(peek(&normal), -EIO);
	ck_assert_int_eq(peek(&prio), -EIO);
	ck_assert_int_eq(peek(&dt), -EIO);
	info = esim_snap(md);
	ck_assert_uint_eq(info.nr_tickets + info.nr_priority_tickets, 0);
	ck_assert_uint_eq(info.reclaim_size, 0);
	ck_assert_uint_eq(info.tickets_failed, 2);
	ck_assert_uint_eq(info.may_use, META_TOTAL);

	/* Reservations that would wait fail at once with the error... */
	ck_assert_int_eq(srsv_space_reserve(md, 64 * KiB, SRSV_FLUSH_ALL, 0),
			 -EIO);
	ck_assert_int_eq(srsv_space_reserve(md, 64 * KiB, SRSV_FLUSH_LIMIT,
					    0), -EIO);
	/* ...fast-path ones that fit still succeed, so cleanup can go on. */
	ck_assert_int_eq(srsv_space_release(md, 128 * KiB), 0);
	reserve_ok(md, 64 * KiB, SRSV_FLUSH_ALL);
	ESIM_ASSERT_COUNTERS(md, META_TOTAL, 0, 0, 0, META_TOTAL - 64 * KiB,
			     0);
	ck_assert_uint_eq(esim_total_calls(sim), 0);
	esim_free(sim);
}
END_TEST

/* The snapshot lists queued tickets: priority queue first, FIFO order,
 * with bytes, mode and age. */
START_TEST(test_snapshot_lists_tickets)
{
	struct esim *sim = manual_sim(0);
	struct srsv_space *md = esim_space(sim, SRSV_POOL_METADATA);
	struct srsv_ticket t[4];
	struct srsv_ticket_info ti[8];
	struct srsv_space_info info;
	size_t nr = 0;
	static const struct {
		uint64_t bytes;
		int mode;
		bool priority;
	} want[4] = {
		/* queued 3rd and 4th, listed first */
		{ 50 * KiB, SRSV_FLUSH_LIMIT, true },
		{ 60 * KiB, SRSV_FLUSH_EVICT, true },
		{ 100 * KiB, SRSV_FLUSH_ALL, false },
		{ 200 * KiB, SRSV_FLUSH_ALL_STEAL, false },
	};

	reserve_ok(md, META_TOTAL, SRSV_NO_FLUSH);
	queue(md, &t[0], 100 * KiB, SRSV_FLUSH_ALL);
	esim_sleep_ms(2);
	queue(md, &t[1], 200 * KiB, SRSV_FLUSH_ALL_STEAL);
	esim_sleep_ms(2);
	queue(md, &t[2], 50 * KiB, SRSV_FLUSH_LIMIT);
	esim_sleep_ms(2);
	queue(md, &t[3], 60 * KiB, SRSV_FLUSH_EVICT);

	memset(ti, 0xff, sizeof(ti));
	ck_assert_int_eq(srsv_space_snapshot(md, &info, ti, 8, &nr), 0);
	ck_assert_uint_eq(nr, 4);
	ck_assert_uint_eq(info.nr_tickets, 2);
	ck_assert_uint_eq(info.nr_priority_tickets, 2);
	ck_assert_uint_eq(info.reclaim_size, 410 * KiB);
	for (int i = 0; i < 4; i++) {
		ck_assert_uint_eq(ti[i].bytes, want[i].bytes);
		ck_assert_int_eq(ti[i].mode, want[i].mode);
		ck_assert_int_eq(ti[i].priority, want[i].priority);
	}
	/* Within each queue the oldest comes first. */
	ck_assert_uint_ge(ti[0].age_ns, ti[1].age_ns);
	ck_assert_uint_ge(ti[2].age_ns, ti[3].age_ns);
	/* The normal ones were queued before the priority ones. */
	ck_assert_uint_ge(ti[3].age_ns, ti[0].age_ns);
	ck_assert_uint_gt(ti[2].age_ns, 0);

	/* Room for two: two filled, the count still says four. */
	memset(ti, 0xff, sizeof(ti));
	nr = 0;
	ck_assert_int_eq(srsv_space_snapshot(md, &info, ti, 2, &nr), 0);
	ck_assert_uint_eq(nr, 4);
	ck_assert_uint_eq(ti[0].bytes, 50 * KiB);
	ck_assert_uint_eq(ti[1].bytes, 60 * KiB);
	ck_assert_uint_eq(ti[2].bytes, UINT64_MAX);	/* untouched */
	/* No ticket room, no count pointer: fine. */
	ck_assert_int_eq(srsv_space_snapshot(md, &info, NULL, 0, NULL), 0);

	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(finish(&t[i]), -ECANCELED);
	ck_assert_int_eq(srsv_space_snapshot(md, &info, ti, 8, &nr), 0);
	ck_assert_uint_eq(nr, 0);
	ck_assert_uint_eq(info.reclaim_size, 0);
	esim_free(sim);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The whole loop, threaded */

#define WRITERS 4
#define WRITER_ITERS 300
#define WRITE_BYTES (64 * KiB)

struct writer {
	struct srsv_space *space;
	int errors;
	int last_error;
};

/* Reserve, allocate, reference, and free in the same transaction (COW
 * overwrite): each write leaves WRITE_BYTES pinned until a commit. */
static void *writer_thread(void *arg)
{
	struct writer *w = arg;

	for (int i = 0; i < WRITER_ITERS; i++) {
		int ret = srsv_space_reserve(w->space, WRITE_BYTES,
					     SRSV_FLUSH_ALL, 0);

		if (!ret)
			ret = srsv_space_alloc(w->space, WRITE_BYTES);
		if (!ret)
			ret = srsv_space_commit_used(w->space, WRITE_BYTES);
		if (!ret)
			ret = srsv_space_pin(w->space, WRITE_BYTES);
		if (ret) {
			w->errors++;
			w->last_error = ret;
		}
	}
	return NULL;
}

START_TEST(test_threaded_writers_loop)
{
	struct esim *sim = esim_setup(0, DATA_TOTAL, META_TOTAL, 0);
	struct srsv_space *md = esim_space(sim, SRSV_POOL_METADATA);
	struct srsv_space_info start, info;
	struct writer w[WRITERS];
	pthread_t th[WRITERS];

	esim_on(sim, SRSV_STATE_COMMIT_TRANS, ESIM_UNPIN, ESIM_ALL);
	start = esim_snap(md);
	for (int i = 0; i < WRITERS; i++) {
		w[i] = (struct writer){ .space = md };
		ck_assert_int_eq(pthread_create(&th[i], NULL, writer_thread,
						&w[i]), 0);
	}
	for (int i = 0; i < WRITERS; i++) {
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
		ck_assert_msg(w[i].errors == 0, "writer %d: %d errors, last %d",
			      i, w[i].errors, w[i].last_error);
	}
	/* 75 MiB went through a 1 MiB pool: commits must have happened. */
	ck_assert_uint_gt(esim_calls(sim, SRSV_STATE_COMMIT_TRANS), 0);
	info = esim_snap(md);
	ck_assert_uint_eq(info.may_use, 0);
	ck_assert_uint_eq(info.reserved, 0);
	ck_assert_uint_eq(info.used, 0);
	ck_assert_uint_eq(info.nr_tickets + info.nr_priority_tickets, 0);
	ck_assert_uint_eq(info.reclaim_size, 0);
	ck_assert_uint_eq(info.tickets_failed, 0);
	if (info.pinned)
		ck_assert_int_eq(srsv_space_unpin(md, info.pinned), 0);
	ESIM_ASSERT_COUNTERS(md, start.total, start.used, start.pinned,
			     start.reserved, start.may_use, start.readonly);
	ck_assert_uint_eq(esim_action_errors(sim, NULL), 0);
	esim_free(sim);
}
END_TEST

static Suite *core_suite(void)
{
	Suite *s = suite_create("core");
	TCase *order = tcase_create("order");
	TCase *oc = tcase_create("overcommit");
	TCase *walk = tcase_create("walks");
	TCase *wait = tcase_create("wait");
	TCase *cb = tcase_create("callbacks");
	TCase *life = tcase_create("lifecycle");
	TCase *loop = tcase_create("loop");

	tcase_add_test(order, test_fifo_small_waits_behind_large);
	tcase_add_test(order, test_priority_passes_normal);
	tcase_add_test(order, test_noflush_never_jumps_queue);
	suite_add_tcase(s, order);

	tcase_add_loop_test(oc, test_overcommit_table, 0, (int)NR(oc_rows));
	tcase_add_test(oc, test_data_never_overcommits);
	tcase_add_test(oc, test_emergency_ignores_may_use);
	suite_add_tcase(s, oc);

	tcase_add_test(walk, test_async_metadata_walk);
	tcase_add_test(walk, test_async_metadata_walk_zoned);
	tcase_add_test(walk, test_async_data_walk_grows_first);
	tcase_add_test(walk, test_async_data_walk_full);
	tcase_add_test(walk, test_manual_blocking_runs_its_walk);
	tcase_add_test(walk, test_unpin_refill_takes_all_no_grant);
	tcase_add_test(walk, test_async_data_walk_commit_grants);
	tcase_add_test(walk, test_priority_limit_walk);
	tcase_add_test(walk, test_evict_walk);
	tcase_add_test(walk, test_evict_walk_stops_on_grant);
	tcase_add_test(walk, test_free_space_inode_walk);
	tcase_add_test(walk, test_progress_restarts_walk);
	tcase_add_test(walk, test_progress_decrements_commit_cycles);
	tcase_add_test(walk, test_fail_after_commit_cycles);
	tcase_add_test(walk, test_steal_from_global_after_cycles);
	tcase_add_test(walk, test_state_array_overrides);
	tcase_add_test(walk, test_unsupported_states_skipped);
	suite_add_tcase(s, walk);

	tcase_add_test(wait, test_timeout);
	tcase_add_test(wait, test_cancel_from_other_thread);
	tcase_add_test(wait, test_cancel_after_grant);
	tcase_add_test(wait, test_no_grant_lost_on_cancel_or_timeout);
	tcase_add_test(wait, test_shutdown_with_waiters);
	tcase_add_test(wait, test_destroy_with_waiters_threaded);
	suite_add_tcase(s, wait);

	tcase_add_test(cb, test_callback_reserves_noflush);
	tcase_add_test(cb, test_callback_flushing_reserve_edeadlk);
	suite_add_tcase(s, cb);

	tcase_add_test(life, test_lifecycle_transitions);
	tcase_add_loop_test(life, test_frees_grant_waiting_ticket, 0,
			    GRANT_TRIGGERS);
	tcase_add_test(life, test_set_error_fails_tickets);
	tcase_add_test(life, test_snapshot_lists_tickets);
	suite_add_tcase(s, life);

	tcase_add_test(loop, test_threaded_writers_loop);
	suite_add_tcase(s, loop);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(core_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
