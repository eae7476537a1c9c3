/* SPDX-License-Identifier: MIT */
/*
 * Stress: 8 threads doing random reserve / alloc / commit_used / pin /
 * free_reserved / release, block-reservation add / use / release /
 * fallback, tickets with timeouts and cancellation, on a threaded ctx whose
 * engine commits (unpins everything pinned) and sleeps a little in every
 * flush state, with preemptive flushing on.
 *
 * Each thread keeps its own books of what it holds.  At the end:
 * - may_use of each pool equals what the threads hold (plus what the
 *   block reservations hold), used and reserved equal the threads' books;
 * - no ticket is left queued;
 * - releasing and unpinning everything returns every counter to its start.
 *
 * Bounded in time: SRSV_STRESS_SECONDS (default 5).  The random seed is
 * printed; SRSV_STRESS_SEED=<n> replays the same operation sequences (the
 * thread interleaving is, of course, the machine's).
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libspacersv/spacersv.h>

#include "engine_sim.h"

#define KiB ESIM_KIB
#define MiB ESIM_MIB

#define NR_THREADS 8
#define DEFAULT_SECONDS 5

/*
 * Pool sizes: small enough that the threads fill them (every path of the
 * reserve code runs: fast path, tickets, flushing, failures), large enough
 * for 8 threads each holding up to 1/16 of a pool.
 */
#define DATA_BYTES (8 * MiB)
#define META_BYTES (4 * MiB)
/* Unallocated space so metadata overcommits; the allowance left to data
 * is 10% of the device (about 1.3 MiB), the rest is shared per mode. */
#define UNALLOCATED (64 * MiB)

/* One thread holds at most this share of a pool before it gives back. */
#define HOLD_SHARE 16

/* Largest single request: a few of them fill a thread's share. */
#define MAX_REQ (64 * KiB)

/* Ticket wait for the timed operations: short, so both outcomes occur. */
#define TICKET_WAIT_NS (200 * 1000ull)

enum { P_DATA = 0, P_META = 1, NR_POOLS = 2 };

struct books {
	uint64_t held[NR_POOLS];	/* may_use we own */
	uint64_t allocated[NR_POOLS];	/* reserved counter we own */
	uint64_t used[NR_POOLS];	/* used counter we own */
};

struct worker {
	int id;
	uint64_t rng;
	struct srsv_space *pool[NR_POOLS];
	struct srsv_rsv rsv;		/* TEMP rsv on the metadata pool */
	struct books b;
	uint64_t ops, ok, expected_fail;
	uint64_t unexpected;
	char first_unexpected[160];
};

static volatile int stop_flag;

/* xorshift64*: fast, good enough, replayable from the seed. */
static uint64_t next_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * UINT64_C(2685821657736338717);
}

static uint64_t rand_below(struct worker *w, uint64_t n)
{
	return n ? next_rand(&w->rng) % n : 0;
}

/* A request size: whole 4 KiB blocks, 4 KiB .. MAX_REQ. */
static uint64_t rand_bytes(struct worker *w)
{
	return (1 + rand_below(w, MAX_REQ / (4 * KiB))) * 4 * KiB;
}

/* Part of @have: 1 .. have bytes, or 0 if nothing. */
static uint64_t rand_part(struct worker *w, uint64_t have)
{
	return have ? 1 + rand_below(w, have) : 0;
}

static void unexpected(struct worker *w, const char *what, int ret)
{
	if (!w->unexpected++)
		snprintf(w->first_unexpected, sizeof(w->first_unexpected),
			 "thread %d: %s returned %d", w->id, what, ret);
}

/* A transition on bytes we own must always succeed. */
static void must(struct worker *w, const char *what, int ret)
{
	if (ret)
		unexpected(w, what, ret);
	else
		w->ok++;
}

/* Errors a reservation may legitimately end with. */
static bool allowed_failure(int ret)
{
	return ret == -ENOSPC || ret == -EAGAIN || ret == -ETIMEDOUT ||
	       ret == -ECANCELED;
}

static int pick_mode(struct worker *w, int p)
{
	static const int data_modes[] = {
		SRSV_NO_FLUSH, SRSV_FLUSH_DATA, SRSV_FLUSH_DATA,
		SRSV_FLUSH_FREE_SPACE_INODE,
	};
	static const int meta_modes[] = {
		SRSV_NO_FLUSH, SRSV_FLUSH_LIMIT, SRSV_FLUSH_EVICT,
		SRSV_FLUSH_ALL, SRSV_FLUSH_ALL, SRSV_FLUSH_ALL_STEAL,
		SRSV_FLUSH_EMERGENCY,
	};

	if (p == P_DATA)
		return data_modes[rand_below(w, 4)];
	return meta_modes[rand_below(w, 7)];
}

static void op_reserve(struct worker *w, int p)
{
	uint64_t bytes = rand_bytes(w);
	int mode = pick_mode(w, p);
	unsigned flags = rand_below(w, 8) == 0 ? SRSV_RESERVE_NOWAIT : 0;
	struct srsv_ticket t;
	int ret;

	switch (rand_below(w, 4)) {
	case 0:		/* ticket, short wait */
		ret = srsv_ticket_reserve(w->pool[p], &t, bytes,
					  (enum srsv_flush)mode, flags);
		if (ret == -EINPROGRESS)
			ret = srsv_ticket_wait(&t, TICKET_WAIT_NS);
		break;
	case 1:		/* ticket, cancelled right away */
		ret = srsv_ticket_reserve(w->pool[p], &t, bytes,
					  (enum srsv_flush)mode, flags);
		if (ret == -EINPROGRESS) {
			srsv_ticket_cancel(&t);
			ret = srsv_ticket_wait(&t, UINT64_MAX);
		}
		break;
	case 2:
		ret = srsv_space_reserve_timeout(w->pool[p], bytes,
						 (enum srsv_flush)mode, flags,
						 TICKET_WAIT_NS * 10);
		break;
	default:
		ret = srsv_space_reserve(w->pool[p], bytes,
					 (enum srsv_flush)mode, flags);
		break;
	}
	if (ret == 0) {
		w->b.held[p] += bytes;
		w->ok++;
	} else if (allowed_failure(ret)) {
		w->expected_fail++;
	} else {
		unexpected(w, "reserve", ret);
	}
}

static void op_rsv(struct worker *w)
{
	struct srsv_rsv_info info;
	struct srsv_rsv *paid;
	uint64_t n, released;
	int ret;

	ret = srsv_rsv_get_info(&w->rsv, &info);
	if (ret) {
		unexpected(w, "rsv_get_info", ret);
		return;
	}
	switch (rand_below(w, 4)) {
	case 0:
		if (info.size > META_BYTES / HOLD_SHARE)
			break;
		ret = srsv_rsv_add(&w->rsv, rand_bytes(w),
				   rand_below(w, 2) ? SRSV_FLUSH_ALL
						    : SRSV_NO_FLUSH, 0);
		if (ret && !allowed_failure(ret))
			unexpected(w, "rsv_add", ret);
		break;
	case 1:		/* consume: the bytes become ours */
		n = rand_part(w, info.reserved);
		if (n) {
			ret = srsv_rsv_use(&w->rsv, n);
			must(w, "rsv_use", ret);
			if (!ret)
				w->b.held[P_META] += n;
		}
		break;
	case 2:
		n = rand_part(w, info.size);
		ret = srsv_rsv_release(&w->rsv, n, &released);
		must(w, "rsv_release", ret);
		break;
	default:
		n = rand_bytes(w);
		ret = srsv_rsv_use_fallback(&w->rsv, n, &paid);
		if (ret == 0)
			w->b.held[P_META] += n;
		else if (ret != -ENOSPC)
			unexpected(w, "rsv_use_fallback", ret);
		break;
	}
}

static void one_op(struct worker *w)
{
	int p = (int)rand_below(w, NR_POOLS);
	struct srsv_space *s = w->pool[p];
	uint64_t limit = (p == P_DATA ? DATA_BYTES : META_BYTES) / HOLD_SHARE;
	struct books *b = &w->b;
	uint64_t n;

	/* Keep each thread's share bounded so the pools keep moving. */
	if (b->held[p] + b->allocated[p] + b->used[p] > limit) {
		if (b->used[p]) {
			n = b->used[p];
			must(w, "pin", srsv_space_pin(s, n));
			b->used[p] -= n;
		} else if (b->allocated[p]) {
			n = b->allocated[p];
			must(w, "commit_used", srsv_space_commit_used(s, n));
			b->allocated[p] -= n;
			b->used[p] += n;
		} else {
			n = b->held[p];
			must(w, "release", srsv_space_release(s, n));
			b->held[p] -= n;
		}
		return;
	}

	switch (rand_below(w, 10)) {
	case 0:
	case 1:
	case 2:
		op_reserve(w, p);
		break;
	case 3:
		n = rand_part(w, b->held[p]);
		if (n) {
			must(w, "alloc", srsv_space_alloc(s, n));
			b->held[p] -= n;
			b->allocated[p] += n;
		}
		break;
	case 4:
		n = rand_part(w, b->allocated[p]);
		if (n) {
			must(w, "commit_used", srsv_space_commit_used(s, n));
			b->allocated[p] -= n;
			b->used[p] += n;
		}
		break;
	case 5:
		n = rand_part(w, b->allocated[p]);
		if (n) {
			must(w, "free_reserved",
			     srsv_space_free_reserved(s, n));
			b->allocated[p] -= n;
		}
		break;
	case 6:
		/* Pinned bytes belong to the running transaction: the
		 * engine's commit frees them. */
		n = rand_part(w, b->used[p]);
		if (n) {
			must(w, "pin", srsv_space_pin(s, n));
			b->used[p] -= n;
		}
		break;
	case 7:
		n = rand_part(w, b->held[p]);
		if (n) {
			must(w, "release", srsv_space_release(s, n));
			b->held[p] -= n;
		}
		break;
	default:
		op_rsv(w);
		break;
	}
	w->ops++;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	while (!__atomic_load_n(&stop_flag, __ATOMIC_ACQUIRE))
		one_op(w);
	return NULL;
}

static unsigned env_unsigned(const char *name, unsigned dflt)
{
	const char *v = getenv(name);

	return v && *v ? (unsigned)strtoul(v, NULL, 0) : dflt;
}

static uint64_t env_seed(void)
{
	const char *v = getenv("SRSV_STRESS_SEED");
	struct timespec ts;

	if (v && *v)
		return strtoull(v, NULL, 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec;
}

/* Unpin everything, retrying if the engine's commit races with us. */
static void unpin_all(struct srsv_space *s)
{
	for (int tries = 0; tries < 1000; tries++) {
		uint64_t pinned = esim_snap(s).pinned;
		int ret;

		if (!pinned)
			return;
		ret = srsv_space_unpin(s, pinned);
		ck_assert_msg(ret == 0 || ret == -EINVAL, "unpin: %d", ret);
	}
	ck_abort_msg("could not unpin everything");
}

/* What the ctx's standard reservations hold (all in the metadata pool;
 * a released TEMP rsv may spill into the delayed-refs one). */
static uint64_t std_rsvs_reserved(struct srsv_ctx *ctx)
{
	static const enum srsv_rsv_type types[] = {
		SRSV_RSV_GLOBAL, SRSV_RSV_TRANS, SRSV_RSV_DELOPS,
		SRSV_RSV_DELREFS, SRSV_RSV_DELALLOC,
	};
	uint64_t sum = 0;

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct srsv_rsv *r = srsv_ctx_rsv(ctx, types[i]);
		struct srsv_rsv_info info;

		if (r && srsv_rsv_get_info(r, &info) == 0)
			sum += info.reserved;
	}
	return sum;
}

START_TEST(test_stress_random_ops)
{
	unsigned seconds = env_unsigned("SRSV_STRESS_SECONDS",
					DEFAULT_SECONDS);
	uint64_t seed = env_seed();
	struct esim *sim = esim_new();
	struct srsv_config cfg;
	struct srsv_space *pools[NR_POOLS];
	struct srsv_space_info start[NR_POOLS], end;
	static struct worker w[NR_THREADS];
	pthread_t th[NR_THREADS];
	uint64_t held[NR_POOLS] = { 0 }, alloc[NR_POOLS] = { 0 };
	uint64_t used[NR_POOLS] = { 0 }, rsv_reserved = 0, ops = 0;
	uint64_t ok = 0, failed = 0, std_start;

	printf("# stress: seed %" PRIu64 " (SRSV_STRESS_SEED replays), "
	       "%u s, %d threads\n", seed, seconds, NR_THREADS);
	fflush(stdout);

	esim_config_init(sim, &cfg, 0);
	/* The same run with per-CPU caches (meson test stress-cache). */
	cfg.cpu_cache_bytes = env_unsigned("SRSV_STRESS_CACHE_BYTES", 0);
	cfg.pool_bytes[SRSV_POOL_DATA] = DATA_BYTES;
	cfg.pool_bytes[SRSV_POOL_METADATA] = META_BYTES;
	cfg.pool_bytes[SRSV_POOL_SYSTEM] = 4 * MiB;
	cfg.unallocated_bytes = UNALLOCATED;
	ck_assert_int_eq(esim_ctx_create(sim, &cfg), 0);
	/* The engine: every state takes a moment; a commit frees what the
	 * running transaction pinned. */
	esim_on(sim, 0, ESIM_SLEEP_MS, 1);
	esim_on(sim, SRSV_STATE_COMMIT_TRANS, ESIM_UNPIN, ESIM_ALL);
	pools[P_DATA] = esim_space(sim, SRSV_POOL_DATA);
	pools[P_META] = esim_space(sim, SRSV_POOL_METADATA);
	for (int p = 0; p < NR_POOLS; p++)
		start[p] = esim_snap(pools[p]);
	std_start = std_rsvs_reserved(sim->ctx);

	__atomic_store_n(&stop_flag, 0, __ATOMIC_RELEASE);
	for (int i = 0; i < NR_THREADS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].id = i;
		/* Never 0 (xorshift's fixed point). */
		w[i].rng = (seed + 1) * UINT64_C(0x9e3779b97f4a7c15) +
			   (uint64_t)i * 2 + 1;
		w[i].pool[P_DATA] = pools[P_DATA];
		w[i].pool[P_META] = pools[P_META];
		ck_assert_int_eq(srsv_rsv_init(&w[i].rsv, pools[P_META],
					       SRSV_RSV_TEMP), 0);
		ck_assert_int_eq(pthread_create(&th[i], NULL, worker_main,
						&w[i]), 0);
	}
	esim_sleep_ms(seconds * 1000);
	__atomic_store_n(&stop_flag, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < NR_THREADS; i++)
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
	/* No preemptive commit may race the checks below. */
	ck_assert_int_eq(srsv_ctx_set_preempt(sim->ctx, false), 0);

	for (int i = 0; i < NR_THREADS; i++) {
		struct srsv_rsv_info info;

		ck_assert_msg(w[i].unexpected == 0, "%" PRIu64 " unexpected "
			      "results (seed %" PRIu64 "); first: %s",
			      w[i].unexpected, seed, w[i].first_unexpected);
		for (int p = 0; p < NR_POOLS; p++) {
			held[p] += w[i].b.held[p];
			alloc[p] += w[i].b.allocated[p];
			used[p] += w[i].b.used[p];
		}
		ck_assert_int_eq(srsv_rsv_get_info(&w[i].rsv, &info), 0);
		rsv_reserved += info.reserved;
		ops += w[i].ops;
		ok += w[i].ok;
		failed += w[i].expected_fail;
	}
	printf("# stress: %" PRIu64 " ops, %" PRIu64 " ok, %" PRIu64
	       " expected failures, %" PRIu64 " flush calls, %" PRIu64
	       " commits\n", ops, ok, failed, esim_total_calls(sim),
	       esim_calls(sim, SRSV_STATE_COMMIT_TRANS));
	ck_assert_uint_gt(ops, 0);

	/* may_use is exactly what the callers hold. */
	for (int p = 0; p < NR_POOLS; p++) {
		uint64_t extra = p == P_META ? rsv_reserved +
				 std_rsvs_reserved(sim->ctx) - std_start : 0;

		end = esim_snap(pools[p]);
		ck_assert_msg(end.may_use == start[p].may_use + held[p] + extra,
			      "%s may_use %" PRIu64 " != start %" PRIu64
			      " + held %" PRIu64 " + rsvs %" PRIu64 " (seed %"
			      PRIu64 ")", srsv_pool_name(end.kind),
			      end.may_use, start[p].may_use, held[p], extra,
			      seed);
		ck_assert_uint_eq(end.reserved, start[p].reserved + alloc[p]);
		ck_assert_uint_eq(end.used, start[p].used + used[p]);
		ck_assert_uint_eq(end.nr_tickets + end.nr_priority_tickets, 0);
		ck_assert_uint_eq(end.reclaim_size, 0);
	}

	/* Give everything back: every counter returns to its start. */
	for (int i = 0; i < NR_THREADS; i++) {
		for (int p = 0; p < NR_POOLS; p++) {
			struct books *b = &w[i].b;

			if (b->held[p])
				ck_assert_int_eq(srsv_space_release(pools[p],
							b->held[p]), 0);
			if (b->allocated[p])
				ck_assert_int_eq(srsv_space_free_reserved(
						pools[p], b->allocated[p]), 0);
			if (b->used[p])
				ck_assert_int_eq(srsv_space_pin(pools[p],
							b->used[p]), 0);
		}
		ck_assert_int_eq(srsv_rsv_destroy(&w[i].rsv), 0);
	}
	/* Spilled into a standard rsv (none is sized here): give back. */
	ck_assert_uint_eq(std_rsvs_reserved(sim->ctx), std_start);
	for (int p = 0; p < NR_POOLS; p++) {
		unpin_all(pools[p]);
		end = esim_snap(pools[p]);
		ESIM_ASSERT_COUNTERS(pools[p], start[p].total, start[p].used,
				     start[p].pinned, start[p].reserved,
				     start[p].may_use, start[p].readonly);
		ck_assert_uint_eq(end.nr_tickets + end.nr_priority_tickets, 0);
		ck_assert_uint_eq(end.reclaim_size, 0);
		ck_assert_uint_eq(end.zone_unusable, start[p].zone_unusable);
	}
	ck_assert_uint_eq(esim_action_errors(sim, NULL), 0);
	esim_free(sim);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("stress");
	TCase *tc = tcase_create("stress");
	SRunner *sr;
	int failed;

	/* Check's default timeout is far below a long run's length. */
	tcase_set_timeout(tc, env_unsigned("SRSV_STRESS_SECONDS",
					   DEFAULT_SECONDS) * 2 + 60);
	tcase_add_test(tc, test_stress_random_ops);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
