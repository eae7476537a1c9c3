/* SPDX-License-Identifier: MIT */
/*
 * Per-CPU reservation caches (srsv_config.cpu_cache_bytes, lib/cache.c).
 *
 * White-box: links the static library to read the admission word and the
 * caches' credit next to what the snapshot reports.  The single-threaded
 * cases pin themselves to one CPU so that every call uses the same slot.
 * The rule under test throughout: credit is space nobody uses, so it never
 * costs anyone a reservation, and what callers see is what they hold.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache.h"
#include "counters.h"
#include "internal.h"
#include "engine_sim.h"

#define KiB ESIM_KIB
#define MiB ESIM_MIB
#define BATCH (64 * KiB)

#define MANUAL (SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT)

static struct esim *sim;
static struct srsv_space *data, *md;

/* Caches configured, not engaged yet (no contention seen). */
static struct esim *make_idle(unsigned flags, uint64_t data_bytes,
			      uint64_t md_bytes, uint64_t batch)
{
	struct esim *s = esim_new();
	struct srsv_config cfg;

	esim_config_init(s, &cfg, flags);
	cfg.pool_bytes[SRSV_POOL_DATA] = data_bytes;
	cfg.pool_bytes[SRSV_POOL_METADATA] = md_bytes;
	cfg.pool_bytes[SRSV_POOL_SYSTEM] = 4 * MiB;
	cfg.cpu_cache_bytes = batch;
	ck_assert_int_eq(esim_ctx_create(s, &cfg), 0);
	return s;
}

/* Caches engaged from the start, as after the first contention. */
static struct esim *make(unsigned flags, uint64_t data_bytes,
			 uint64_t md_bytes, uint64_t batch)
{
	struct esim *s = make_idle(flags, data_bytes, md_bytes, batch);

	for (int k = 0; k < SRSV_POOL_COUNT; k++) {
		struct srsv_space *sp = esim_space(s, (enum srsv_pool)k);

		if (sp)
			AO_store(&sp->cache_on, 1);
	}
	return s;
}

/* The CPUs the test may use, before any pinning. */
static cpu_set_t allowed;
static bool allowed_saved;

static void pin_to_one_cpu(void)
{
	cpu_set_t set;
	int cpu = sched_getcpu();

	if (!allowed_saved) {
		ck_assert_int_eq(sched_getaffinity(0, sizeof(allowed),
						   &allowed), 0);
		allowed_saved = true;
	}
	ck_assert_int_ge(cpu, 0);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	ck_assert_int_eq(sched_setaffinity(0, sizeof(set), &set), 0);
}

static void setup(void)
{
	pin_to_one_cpu();
	sim = make(MANUAL, 64 * MiB, 64 * MiB, BATCH);
	data = esim_space(sim, SRSV_POOL_DATA);
	md = esim_space(sim, SRSV_POOL_METADATA);
}

static void teardown(void)
{
	esim_free(sim);
	sim = NULL;
	/* Unpin (matters when CK_FORK=no runs every case in one process). */
	sched_setaffinity(0, sizeof(allowed), &allowed);
}

static uint64_t word(struct srsv_space *s)
{
	return AO_load(&s->may_use);
}

/* The admission word is what callers hold plus the credit. */
static void assert_split(struct srsv_space *s, uint64_t held, uint64_t credit)
{
	ck_assert_uint_eq(esim_snap(s).may_use, held);
	ck_assert_uint_eq(srsv__cache_credit(s), credit);
	ck_assert_uint_eq(word(s), held + credit);
}

START_TEST(test_cache_off_by_default)
{
	struct esim *s = esim_setup(MANUAL, 64 * MiB, 64 * MiB, 0);
	struct srsv_space *d = esim_space(s, SRSV_POOL_DATA);

	ck_assert_ptr_null(d->cache);
	ck_assert_int_eq(srsv_space_reserve(d, 4 * KiB, SRSV_NO_FLUSH, 0), 0);
	ck_assert_uint_eq(AO_load(&d->may_use), 4 * KiB);
	ck_assert_int_eq(srsv_space_release(d, 4 * KiB), 0);
	esim_free(s);
}
END_TEST

/* One thread never races itself: the exact path, no credit. */
START_TEST(test_cache_idle_until_contended)
{
	struct esim *s = make_idle(MANUAL, 64 * MiB, 64 * MiB, BATCH);
	struct srsv_space *d = esim_space(s, SRSV_POOL_DATA);

	ck_assert_ptr_nonnull(d->cache);
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(srsv_space_reserve(d, 4 * KiB, SRSV_NO_FLUSH,
						    0), 0);
	ck_assert_uint_eq(AO_load(&d->cache_on), 0);
	assert_split(d, 400 * KiB, 0);
	ck_assert_int_eq(srsv_space_release(d, 400 * KiB), 0);
	esim_free(s);
}
END_TEST

START_TEST(test_cache_refill_then_hits)
{
	/* First reservation: itself plus one batch in one step. */
	ck_assert_int_eq(srsv_space_reserve(data, 4 * KiB, SRSV_NO_FLUSH, 0),
			 0);
	assert_split(data, 4 * KiB, BATCH);
	/* The next ones come out of the credit: the word does not move. */
	for (int i = 1; i <= 16; i++) {
		ck_assert_int_eq(srsv_space_reserve(data, 4 * KiB,
						    SRSV_NO_FLUSH, 0), 0);
		assert_split(data, (uint64_t)(i + 1) * 4 * KiB,
			     BATCH - (uint64_t)i * 4 * KiB);
	}
	/* Credit exhausted: the next one refills. */
	ck_assert_int_eq(srsv_space_reserve(data, 4 * KiB, SRSV_NO_FLUSH, 0),
			 0);
	assert_split(data, 18 * 4 * KiB, BATCH);
	/* A request above the batch never touches the cache. */
	ck_assert_int_eq(srsv_space_reserve(data, BATCH + 1, SRSV_NO_FLUSH, 0),
			 0);
	assert_split(data, 18 * 4 * KiB + BATCH + 1, BATCH);
	ck_assert_int_eq(srsv_space_release(data, BATCH + 1), 0);
	assert_split(data, 18 * 4 * KiB, BATCH);
}
END_TEST

START_TEST(test_cache_release_keeps_two_batches)
{
	uint64_t held = 0, credit;

	for (int i = 0; i < 64; i++) {
		ck_assert_int_eq(srsv_space_reserve(md, 4 * KiB,
						    SRSV_FLUSH_ALL, 0), 0);
		held += 4 * KiB;
	}
	/* Refills at reservations 1, 18, 35 and 52, each for itself plus a
	 * batch that serves the next 16: 12 of the last batch are used. */
	assert_split(md, held, BATCH - 12 * 4 * KiB);
	for (int i = 0; i < 64; i++) {
		ck_assert_int_eq(srsv_space_release(md, 4 * KiB), 0);
		held -= 4 * KiB;
		/* Never more than two batches of credit; beyond, all but
		 * one go back. */
		ck_assert_uint_le(srsv__cache_credit(md), 2 * BATCH);
		ck_assert_uint_eq(word(md) - srsv__cache_credit(md), held);
	}
	ck_assert_uint_eq(esim_snap(md).may_use, 0);
	credit = srsv__cache_credit(md);
	ck_assert_uint_eq(credit, word(md));
	/* Draining returns it all and closes the caches. */
	ck_assert_uint_eq(srsv__cache_drain(md), credit);
	assert_split(md, 0, 0);
}
END_TEST

/*
 * The pool fills exactly to its size with caches on: near full no refill
 * happens, and what the caches hold goes back before a request fails.
 */
START_TEST(test_cache_fills_exactly)
{
	struct esim *s = make(MANUAL, 2 * MiB, 64 * MiB, BATCH);
	struct srsv_space *d = esim_space(s, SRSV_POOL_DATA);
	uint64_t n = 2 * MiB / (4 * KiB);

	for (uint64_t i = 0; i < n; i++)
		ck_assert_int_eq(srsv_space_reserve(d, 4 * KiB, SRSV_NO_FLUSH,
						    0), 0);
	ck_assert_int_eq(srsv_space_reserve(d, 4 * KiB, SRSV_NO_FLUSH, 0),
			 -ENOSPC);
	assert_split(d, 2 * MiB, 0);
	for (uint64_t i = 0; i < n; i++)
		ck_assert_int_eq(srsv_space_release(d, 4 * KiB), 0);
	ck_assert_uint_eq(esim_snap(d).may_use, 0);
	esim_free(s);
}
END_TEST

/* Credit sitting in a cache never costs a large reservation its fit. */
START_TEST(test_cache_credit_yields_to_exact_fit)
{
	uint64_t rest;

	ck_assert_int_eq(srsv_space_reserve(data, 4 * KiB, SRSV_NO_FLUSH, 0),
			 0);
	assert_split(data, 4 * KiB, BATCH);
	rest = 64 * MiB - 4 * KiB;
	ck_assert_int_eq(srsv_space_reserve(data, rest, SRSV_NO_FLUSH, 0), 0);
	assert_split(data, 64 * MiB, 0);
	/* Full: a cached reservation cannot refill, and fails exactly. */
	ck_assert_int_eq(srsv_space_reserve(data, 4 * KiB, SRSV_NO_FLUSH, 0),
			 -ENOSPC);
	ck_assert_int_eq(srsv_space_release(data, rest), 0);
	ck_assert_int_eq(srsv_space_release(data, 4 * KiB), 0);
	ck_assert_uint_eq(esim_snap(data).may_use, 0);
}
END_TEST

/* A read-only claim does not fail for credit either. */
START_TEST(test_cache_credit_yields_to_readonly)
{
	ck_assert_int_eq(srsv_space_reserve(data, 4 * KiB, SRSV_NO_FLUSH, 0),
			 0);
	ck_assert_int_eq(srsv_space_set_readonly(data, 64 * MiB - 4 * KiB,
						 false), 0);
	assert_split(data, 4 * KiB, 0);
	ck_assert_int_eq(srsv_space_release(data, 4 * KiB), 0);
}
END_TEST

/*
 * While a ticket waits the caches are closed: releases go to the ticket,
 * reservations do not pass it with credit, and the caches reopen once the
 * queue is empty.
 */
START_TEST(test_cache_closed_while_tickets_wait)
{
	struct srsv_ticket t;
	uint64_t rest;

	ck_assert_int_eq(srsv_space_reserve(md, 4 * KiB, SRSV_FLUSH_ALL, 0),
			 0);
	assert_split(md, 4 * KiB, BATCH);
	rest = 64 * MiB - 4 * KiB;
	/* Fits only without the credit, and the credit is drained for it. */
	ck_assert_int_eq(srsv_space_reserve(md, rest, SRSV_NO_FLUSH, 0), 0);
	assert_split(md, 64 * MiB, 0);
	/* Now a ticket for 8 KiB waits. */
	ck_assert_int_eq(srsv_ticket_reserve(md, &t, 8 * KiB, SRSV_FLUSH_ALL,
					     0),
			 -EINPROGRESS);
	/* A cached-size reservation does not pass it. */
	ck_assert_int_eq(srsv_space_reserve(md, 4 * KiB, SRSV_NO_FLUSH, 0),
			 -ENOSPC);
	/* Releases reach the ticket, not a cache. */
	ck_assert_int_eq(srsv_space_release(md, 4 * KiB), 0);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -EINPROGRESS);
	ck_assert_int_eq(srsv_space_release(md, 4 * KiB), 0);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), 0);
	assert_split(md, 64 * MiB, 0);
	/* Queue empty again: the cache reopens with the next refill. */
	ck_assert_int_eq(srsv_space_release(md, 32 * MiB), 0);
	ck_assert_int_eq(srsv_space_reserve(md, 4 * KiB, SRSV_FLUSH_ALL, 0),
			 0);
	assert_split(md, 32 * MiB + 4 * KiB, BATCH);
	ck_assert_int_eq(srsv_space_release(md, 32 * MiB + 4 * KiB), 0);
	ck_assert_uint_eq(esim_snap(md).may_use, 0);
}
END_TEST

START_TEST(test_cache_nowait_uses_cache)
{
	ck_assert_int_eq(srsv_space_reserve(data, 4 * KiB, SRSV_NO_FLUSH,
					    SRSV_RESERVE_NOWAIT), 0);
	assert_split(data, 4 * KiB, BATCH);
	ck_assert_int_eq(srsv_space_reserve(data, 4 * KiB, SRSV_NO_FLUSH,
					    SRSV_RESERVE_NOWAIT), 0);
	assert_split(data, 8 * KiB, BATCH - 4 * KiB);
	ck_assert_int_eq(srsv_space_release(data, 8 * KiB), 0);
	assert_split(data, 0, BATCH + 4 * KiB);
}
END_TEST

/* A thread that holds a pool lock until told to let go (bounded). */
struct holder {
	pthread_t thread;
	struct srsv_space *s;
	volatile int holding, release;
};

static void *hold_fn(void *p)
{
	struct holder *h = p;

	srsv__lock(&h->s->lock);
	__atomic_store_n(&h->holding, 1, __ATOMIC_RELEASE);
	for (int ms = 0; ms < 10000 &&
	     !__atomic_load_n(&h->release, __ATOMIC_ACQUIRE); ms++)
		esim_sleep_ms(1);
	srsv__unlock(&h->s->lock);
	return NULL;
}

/*
 * NOWAIT through engaged caches never blocks: with the pool lock held by
 * another thread, cache hits, refills and releases succeed lock-free, and
 * what would need the lock answers -EAGAIN at once.
 */
START_TEST(test_cache_nowait_never_blocks)
{
	struct holder h = { .s = data };
	struct srsv_lock_stats st;
	bool stats = srsv_debug_lock_stats_reset() == 0;

	ck_assert_int_eq(pthread_create(&h.thread, NULL, hold_fn, &h), 0);
	for (int ms = 0; ms < 10000 &&
	     !__atomic_load_n(&h.holding, __ATOMIC_ACQUIRE); ms++)
		esim_sleep_ms(1);
	ck_assert(__atomic_load_n(&h.holding, __ATOMIC_ACQUIRE));

	/* Refill, hit, release: no lock. */
	ck_assert_int_eq(srsv_space_reserve(data, 4 * KiB, SRSV_NO_FLUSH,
					    SRSV_RESERVE_NOWAIT), 0);
	ck_assert_int_eq(srsv_space_reserve(data, 4 * KiB, SRSV_NO_FLUSH,
					    SRSV_RESERVE_NOWAIT), 0);
	ck_assert_int_eq(srsv_space_release(data, 4 * KiB), 0);
	/* (The snapshot takes the lock: read the words directly.) */
	ck_assert_uint_eq(word(data), 4 * KiB + BATCH);
	ck_assert_uint_eq(srsv__cache_credit(data), BATCH);
	/* Needs the slow path (drain, exact fit): the lock is busy. */
	ck_assert_int_eq(srsv_space_reserve(data, 64 * MiB - 4 * KiB,
					    SRSV_NO_FLUSH,
					    SRSV_RESERVE_NOWAIT), -EAGAIN);
	/* Why: a lock, not the space (counted as such, lock-free). */
	ck_assert_int_eq(srsv_nowait_reason(), SRSV_NOWAIT_LOCK);
	ck_assert_uint_eq(AO_load(&data->stats.nowait[SRSV_NOWAIT_LOCK]), 1);
	ck_assert_uint_eq(word(data), 4 * KiB + BATCH);
	ck_assert_uint_eq(srsv__cache_credit(data), BATCH);
	if (stats) {
		ck_assert_int_eq(srsv_debug_lock_stats(&st), 0);
		ck_assert_uint_eq(st.blocking_acquisitions, 0);
		ck_assert_uint_eq(st.waits, 0);
	}
	__atomic_store_n(&h.release, 1, __ATOMIC_RELEASE);
	ck_assert_int_eq(pthread_join(h.thread, NULL), 0);
	/* With the lock free, the same call drains and fits exactly. */
	ck_assert_int_eq(srsv_space_reserve(data, 64 * MiB - 4 * KiB,
					    SRSV_NO_FLUSH,
					    SRSV_RESERVE_NOWAIT), 0);
	assert_split(data, 64 * MiB, 0);
	/* Full now: the same NOWAIT call would have to wait for space. */
	ck_assert_int_eq(srsv_space_reserve(data, 4 * KiB, SRSV_NO_FLUSH,
					    SRSV_RESERVE_NOWAIT), -EAGAIN);
	ck_assert_int_eq(srsv_nowait_reason(), SRSV_NOWAIT_SPACE);
	{
		struct srsv_space_stats st;

		ck_assert_int_eq(srsv_space_get_stats(data, &st), 0);
		ck_assert_uint_eq(st.nowait_refused[SRSV_NOWAIT_LOCK], 1);
		ck_assert_uint_eq(st.nowait_refused[SRSV_NOWAIT_SPACE], 1);
		ck_assert_uint_eq(st.nowait_refused[SRSV_NOWAIT_QUOTA], 0);
	}
	ck_assert_int_eq(srsv_space_release(data, 64 * MiB), 0);
}
END_TEST

/*
 * A refused release changes nothing, not even for an instant: the word
 * never holds less than what is reserved while over-releases are refused
 * in a loop (until commit 7965481 each one subtracted and undid itself,
 * and the model in tests/formal/may_use.pml found the undo could fail a
 * lawful release).  An observer thread reads the word throughout.
 */
struct refuse_watch {
	struct srsv_space *s;
	volatile int stop;
	uint64_t refused, bad, seen_low, looks;
};

static void *over_release(void *p)
{
	struct refuse_watch *w = p;

	while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		if (srsv_space_release(w->s, 12 * KiB) == -EINVAL)
			w->refused++;
		else
			w->bad++;
	}
	return NULL;
}

START_TEST(test_refused_release_changes_nothing)
{
	struct esim *e = esim_setup(MANUAL, 64 * MiB, 64 * MiB, 0);
	struct refuse_watch w = { .s = esim_space(e, SRSV_POOL_METADATA) };
	pthread_t th;

	ck_assert_int_eq(srsv_space_reserve(w.s, 8 * KiB, SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, over_release, &w), 0);
	/* Bounded: 200,000 looks, or 5 s on a loaded machine. */
	for (uint64_t t0 = srsv__now_ns();
	     w.looks < 200000 && srsv__now_ns() - t0 < 5000000000ull;
	     w.looks++) {
		if (AO_load_acquire(&w.s->may_use) != 8 * KiB)
			w.seen_low++;
		if (!(w.looks & 1023))
			sched_yield();
	}
	__atomic_store_n(&w.stop, 1, __ATOMIC_RELEASE);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_uint_gt(w.refused, 0);
	ck_assert_uint_eq(w.bad, 0);
	ck_assert_uint_eq(w.seen_low, 0);
	ck_assert_uint_eq(AO_load(&w.s->may_use), 8 * KiB);
	ck_assert_int_eq(srsv_space_release(w.s, 8 * KiB), 0);
	ck_assert_uint_eq(AO_load(&w.s->may_use), 0);
	esim_free(e);
}
END_TEST

/*
 * Credit in motion (a give-back that closed its slot and has not returned
 * the credit yet) must not cost a slow path its exact fit: a blocking one
 * waits for it to land, a NOWAIT one answers -EAGAIN, not -ENOSPC.  The
 * give-back is played by hand here, halfway, to hold it in motion.
 */
struct exact_fit {
	struct srsv_space *s;
	uint64_t bytes;
	volatile int done;
	int ret;
};

static void *reserve_exact(void *p)
{
	struct exact_fit *x = p;

	x->ret = srsv_space_reserve(x->s, x->bytes, SRSV_NO_FLUSH, 0);
	__atomic_store_n(&x->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

START_TEST(test_cache_slow_path_waits_for_credit_in_motion)
{
	struct exact_fit x = { .s = data, .bytes = 64 * MiB - 4 * KiB };
	uint64_t in_hand = 0;
	pthread_t th;

	ck_assert_int_eq(srsv_space_reserve(data, 4 * KiB, SRSV_NO_FLUSH, 0),
			 0);
	assert_split(data, 4 * KiB, BATCH);
	/* A give-back, halfway: announced, its slot closed, credit in hand. */
	AO_fetch_and_add_full(&data->in_flight, 1);
	for (unsigned i = 0; i < data->cache_slots; i++) {
		in_hand += AO_load(&data->cache[i].word);
		AO_store(&data->cache[i].word, (AO_t)1 << 63);
	}
	ck_assert_uint_eq(in_hand, BATCH);
	/* NOWAIT does not wait for another thread's progress. */
	ck_assert_int_eq(srsv_space_reserve(data, x.bytes, SRSV_NO_FLUSH,
					    SRSV_RESERVE_NOWAIT), -EAGAIN);
	/* A blocking slow path waits for the credit to land. */
	ck_assert_int_eq(pthread_create(&th, NULL, reserve_exact, &x), 0);
	esim_sleep_ms(50);
	ck_assert_int_eq(__atomic_load_n(&x.done, __ATOMIC_ACQUIRE), 0);
	/* The give-back's second half. */
	ck_assert_uint_eq(srsv__may_use_sub_clamped(data, in_hand), in_hand);
	AO_fetch_and_add_full(&data->in_flight, (AO_t)0 - 1);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(x.ret, 0);
	assert_split(data, 64 * MiB, 0);
	ck_assert_int_eq(srsv_space_release(data, 64 * MiB), 0);
}
END_TEST

START_TEST(test_cache_over_release)
{
	struct srsv_space_info before;

	ck_assert_int_eq(srsv_space_reserve(data, 4 * KiB, SRSV_NO_FLUSH, 0),
			 0);
	before = esim_snap(data);
	/* More than the word holds, credit included: refused, unchanged. */
	ck_assert_int_eq(srsv_space_release(data, 4 * KiB + BATCH + 1),
			 -EINVAL);
	{
		struct srsv_space_info after = esim_snap(data);

		ESIM_ASSERT_SAME_INFO(&before, &after);
	}
	assert_split(data, 4 * KiB, BATCH);
	ck_assert_int_eq(srsv_space_release(data, 4 * KiB), 0);
}
END_TEST

/*
 * An over-release a cache lets through (within the word) can leave more
 * credit than may_use: a give-back that would underflow is refused with
 * the slot as it was, and a drain subtracts only what may_use holds.
 */
static uint64_t refused_releases(struct srsv_space *s)
{
	struct srsv_space_stats st;

	ck_assert_int_eq(srsv_space_get_stats(s, &st), 0);
	return st.refused[SRSV_REFUSED_RELEASE];
}

/*
 * Two callers hold 264 KiB through the caches; one gives back 8 KiB more
 * than it holds.  The cached release cannot tell (0 is returned); once
 * both have released, the next reconciliation (here a reservation that
 * must take the slow path) finds the credit 8 KiB above may_use: counted
 * as a refused release, and may_use is not lowered below 0.
 */
START_TEST(test_cache_over_release_caught_at_reconcile)
{
	uint64_t refused = refused_releases(data);

	for (int i = 0; i < 66; i++)
		ck_assert_int_eq(srsv_space_reserve(data, 4 * KiB,
						    SRSV_NO_FLUSH, 0), 0);
	/* Caller A held 132 KiB and releases 140 KiB, B its 132 KiB. */
	for (int i = 0; i < 35; i++)
		ck_assert_int_eq(srsv_space_release(data, 4 * KiB), 0);
	for (int i = 0; i < 33; i++)
		ck_assert_int_eq(srsv_space_release(data, 4 * KiB), 0);
	ck_assert_uint_eq(refused_releases(data), refused);
	/* A slow path: the whole pool, exactly. */
	ck_assert_int_eq(srsv_space_reserve(data, 64 * MiB, SRSV_NO_FLUSH, 0),
			 0);
	ck_assert_uint_eq(refused_releases(data), refused + 1);
	assert_split(data, 64 * MiB, 0);
	ck_assert_int_eq(srsv_space_release(data, 64 * MiB), 0);
}
END_TEST

START_TEST(test_cache_over_release_within_word)
{
	ck_assert_int_eq(srsv_space_reserve(data, 4 * KiB, SRSV_NO_FLUSH, 0),
			 0);
	assert_split(data, 4 * KiB, BATCH);
	/* The caller held 4 KiB; 32 KiB pass the only check a cache has. */
	ck_assert_int_eq(srsv_space_release(data, 32 * KiB), 0);
	ck_assert_uint_eq(srsv__cache_credit(data), BATCH + 32 * KiB);
	ck_assert_uint_eq(word(data), 4 * KiB + BATCH);
	/* 96 + 40 KiB exceed two batches: the 72 KiB give-back cannot be
	 * taken from a 68 KiB word.  Refused, the slot unchanged. */
	ck_assert_int_eq(srsv_space_release(data, 40 * KiB), -EINVAL);
	ck_assert_uint_eq(srsv__cache_credit(data), BATCH + 32 * KiB);
	ck_assert_uint_eq(word(data), 4 * KiB + BATCH);
	/* Draining gives back what the word has, no more; the 28 KiB
	 * nobody held are the over-release, counted now (the refused 40 KiB
	 * release was counted when it was refused). */
	ck_assert_uint_eq(refused_releases(data), 1);
	ck_assert_uint_eq(srsv__cache_drain(data), 4 * KiB + BATCH);
	assert_split(data, 0, 0);
	ck_assert_uint_eq(refused_releases(data), 2);
	/* The pool is usable again, exactly. */
	ck_assert_int_eq(srsv_space_reserve(data, 64 * MiB, SRSV_NO_FLUSH, 0),
			 0);
	ck_assert_int_eq(srsv_space_release(data, 64 * MiB), 0);
	ck_assert_uint_eq(esim_snap(data).may_use, 0);
}
END_TEST

START_TEST(test_cache_config_bad)
{
	struct esim *s = esim_new();
	struct srsv_config cfg;

	esim_config_init(s, &cfg, MANUAL);
	cfg.pool_bytes[SRSV_POOL_DATA] = 64 * MiB;
	cfg.cpu_cache_bytes = ESIM_GIB + 1;
	ck_assert_int_eq(esim_ctx_create(s, &cfg), -EINVAL);
	ck_assert_ptr_null(s->ctx);
	esim_free(s);
}
END_TEST

/* ---- threads ---- */

struct worker {
	struct srsv_space *s;
	volatile int *stop;
	unsigned seed;
	uint64_t ops, enospc, errors;
};

static void *churn(void *p)
{
	struct worker *w = p;
	uint64_t held[16] = { 0 };

	while (!__atomic_load_n(w->stop, __ATOMIC_ACQUIRE)) {
		unsigned r = rand_r(&w->seed), slot = r % 16;
		/* Mostly cached sizes, some above the batch. */
		uint64_t bytes = (r >> 4) % 16 == 0 ? BATCH + 4 * KiB :
			(1 + (r >> 8) % 16) * 4 * KiB;
		int ret;

		w->ops++;
		if (held[slot]) {
			if (srsv_space_release(w->s, held[slot]))
				w->errors++;
			held[slot] = 0;
			continue;
		}
		ret = srsv_space_reserve(w->s, bytes, SRSV_NO_FLUSH, 0);
		if (ret == -ENOSPC)
			w->enospc++;
		else if (ret)
			w->errors++;
		else
			held[slot] = bytes;
	}
	for (int i = 0; i < 16; i++)
		if (held[i] && srsv_space_release(w->s, held[i]))
			w->errors++;
	return NULL;
}

/*
 * Four threads churn on a pool small enough that it runs full and the
 * caches open and close all the time; every byte must come back.
 */
static void churn_pool(uint64_t pool_bytes)
{
	struct esim *s = make(MANUAL, pool_bytes, 64 * MiB, BATCH);
	struct srsv_space *d = esim_space(s, SRSV_POOL_DATA);
	struct worker w[4];
	pthread_t th[4];
	volatile int stop = 0;
	uint64_t ops = 0, enospc = 0;

	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ .s = d, .stop = &stop,
					.seed = 7919u * (unsigned)(i + 1) };
		ck_assert_int_eq(pthread_create(&th[i], NULL, churn, &w[i]), 0);
	}
	esim_sleep_ms(400);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
		ck_assert_uint_eq(w[i].errors, 0);
		ops += w[i].ops;
		enospc += w[i].enospc;
	}
	ck_assert_uint_gt(ops, 1000);
	fprintf(stderr, "cache churn on %llu KiB: %llu ops, %llu -ENOSPC\n",
		(unsigned long long)(pool_bytes / KiB), (unsigned long long)ops,
		(unsigned long long)enospc);
	ck_assert_uint_eq(esim_snap(d).may_use, 0);
	ck_assert_uint_eq(word(d), srsv__cache_credit(d));
	srsv__cache_drain(d);
	ck_assert_uint_eq(word(d), 0);
	esim_free(s);
}

START_TEST(test_cache_threads_roomy)
{
	churn_pool(256 * MiB);
}
END_TEST

/* Two CPUs racing on the admission word engage the caches by themselves. */
struct racer {
	struct srsv_space *s;
	volatile int *stop;
	uint64_t errors;
};

static void *race_pairs(void *p)
{
	struct racer *r = p;

	while (!__atomic_load_n(r->stop, __ATOMIC_ACQUIRE))
		if (srsv_space_reserve(r->s, 4 * KiB, SRSV_NO_FLUSH, 0) ||
		    srsv_space_release(r->s, 4 * KiB))
			r->errors++;
	return NULL;
}

START_TEST(test_cache_engages_under_contention)
{
	struct esim *s = make_idle(MANUAL, 256 * MiB, 64 * MiB, BATCH);
	struct srsv_space *d = esim_space(s, SRSV_POOL_DATA);
	struct racer r[2];
	pthread_t th[2];
	volatile int stop = 0;

	cpu_set_t mine;

	/* The CPUs this process may run on (cpusets included). */
	ck_assert_int_eq(sched_getaffinity(0, sizeof(mine), &mine), 0);
	if (CPU_COUNT(&mine) < 2) {
		esim_free(s);
		return;		/* one CPU: threads never race on the line */
	}
	for (int i = 0; i < 2; i++) {
		r[i] = (struct racer){ .s = d, .stop = &stop };
		ck_assert_int_eq(pthread_create(&th[i], NULL, race_pairs, &r[i]),
				 0);
	}
	/* Bounded: a failed compare-and-swap comes within microseconds
	 * when both threads run; allow for a loaded machine. */
	for (int ms = 0; ms < 20000 && !AO_load(&d->cache_on); ms++)
		esim_sleep_ms(1);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
		ck_assert_uint_eq(r[i].errors, 0);
	}
	ck_assert_uint_eq(AO_load(&d->cache_on), 1);
	ck_assert_uint_eq(esim_snap(d).may_use, 0);
	ck_assert_uint_eq(word(d), srsv__cache_credit(d));
	esim_free(s);
}
END_TEST

START_TEST(test_cache_threads_tight)
{
	/* 4 threads holding ~8 x 34 KiB each on average: often full. */
	churn_pool(1 * MiB);
}
END_TEST

/*
 * A blocking reservation waits for what others release while their
 * caches are busy: with real worker threads and real tickets, every
 * waiter is granted (no credit is stranded in a cache).
 */
struct waiter {
	struct srsv_space *s;
	int ret;
};

static void *wait_big(void *p)
{
	struct waiter *w = p;

	w->ret = srsv_space_reserve_timeout(w->s, 512 * KiB, SRSV_FLUSH_ALL,
					    0, 5ull * 1000 * 1000 * 1000);
	return NULL;
}

START_TEST(test_cache_tickets_get_released_credit)
{
	struct esim *s = make(SRSV_CTX_NO_PREEMPT, 64 * MiB, 2 * MiB, BATCH);
	struct srsv_space *m = esim_space(s, SRSV_POOL_METADATA);
	struct waiter w = { .s = m };
	pthread_t th;
	uint64_t held = 0;

	/* Slow flushing keeps the ticket queued until we release. */
	ck_assert_int_ge(esim_on(s, 0, ESIM_SLEEP_MS, 20), 0);
	/* Fill the pool with small cached reservations. */
	while (srsv_space_reserve(m, 4 * KiB, SRSV_NO_FLUSH, 0) == 0)
		held += 4 * KiB;
	ck_assert_uint_ge(held, 2 * MiB - 512 * KiB);
	ck_assert_int_eq(pthread_create(&th, NULL, wait_big, &w), 0);
	ck_assert(esim_wait_tickets(m, 1, 2000));
	/* Give back 1 MiB in small releases: they must reach the ticket. */
	for (uint64_t i = 0; i < MiB / (4 * KiB); i++)
		ck_assert_int_eq(srsv_space_release(m, 4 * KiB), 0);
	held -= MiB;
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(w.ret, 0);
	ck_assert_int_eq(srsv_space_release(m, 512 * KiB), 0);
	while (held) {
		ck_assert_int_eq(srsv_space_release(m, 4 * KiB), 0);
		held -= 4 * KiB;
	}
	ck_assert_uint_eq(esim_snap(m).may_use, 0);
	esim_free(s);
}
END_TEST

/*
 * Writers that block: each takes 4 reservations of one batch (16 KiB)
 * with FLUSH_ALL, then gives them all back.  The pool always has room for
 * one more request (4 threads x 3 x 16 KiB + 16 KiB = 208 KiB; a thread
 * holding 4 is not waiting, and gives them back), so every ticket must be
 * granted, with the caches closing and reopening around the tickets; slow
 * flushing (20 ms a state: 0.66 s before a ticket fails) keeps tickets
 * from failing for lack of time.
 */
struct blocker {
	struct srsv_space *s;
	volatile int *stop;
	uint64_t rounds, failures;
	int last_error;
};

static void *block_churn(void *p)
{
	struct blocker *b = p;

	while (!__atomic_load_n(b->stop, __ATOMIC_ACQUIRE)) {
		uint64_t held[4], n = 0;

		for (int i = 0; i < 4; i++) {
			uint64_t bytes = 16 * KiB;
			int ret = srsv_space_reserve_timeout(
				b->s, bytes, SRSV_FLUSH_ALL, 0,
				10ull * 1000 * 1000 * 1000);

			if (ret) {
				b->failures++;
				b->last_error = ret;
				break;
			}
			held[n++] = bytes;
		}
		while (n)
			if (srsv_space_release(b->s, held[--n]))
				b->failures++;
		b->rounds++;
	}
	return NULL;
}

START_TEST(test_cache_tickets_churn)
{
	struct esim *s = make(SRSV_CTX_NO_PREEMPT, 64 * MiB, 208 * KiB,
			      16 * KiB);
	struct srsv_space *m = esim_space(s, SRSV_POOL_METADATA);
	struct blocker b[4];
	pthread_t th[4];
	volatile int stop = 0;
	uint64_t rounds = 0, granted;

	ck_assert_int_ge(esim_on(s, 0, ESIM_SLEEP_MS, 20), 0);
	for (int i = 0; i < 4; i++) {
		b[i] = (struct blocker){ .s = m, .stop = &stop };
		ck_assert_int_eq(pthread_create(&th[i], NULL, block_churn,
						&b[i]), 0);
	}
	esim_sleep_ms(500);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
		ck_assert_msg(b[i].failures == 0, "thread %d: %llu failures, "
			      "last %d", i, (unsigned long long)b[i].failures,
			      b[i].last_error);
		rounds += b[i].rounds;
	}
	granted = esim_snap(m).tickets_granted;
	fprintf(stderr, "cache ticket churn: %llu rounds, %llu tickets "
		"granted\n", (unsigned long long)rounds,
		(unsigned long long)granted);
	ck_assert_uint_gt(rounds, 100);
	ck_assert_uint_eq(esim_snap(m).tickets_failed, 0);
	ck_assert_uint_eq(esim_snap(m).may_use, 0);
	ck_assert_uint_eq(word(m), srsv__cache_credit(m));
	esim_free(s);
}
END_TEST

/*
 * After srsv_ctx_shutdown(), as in the error state, only what would wait
 * is refused: a reservation that fits is granted, one that never can is
 * -ENOSPC, one that would queue -ESHUTDOWN; the calls that never wait
 * (srsv_rsv_use_fallback(), NO_FLUSH) never answer -ESHUTDOWN.  The same
 * with and without caches: before, with credit in the caches, an empty
 * 8 MiB pool refused 8 MiB with -ESHUTDOWN (the slow path returned on the
 * shutdown gate before the caches gave their credit back).
 */
static void shutdown_rule(bool caches)
{
	struct esim *s = caches ? make(MANUAL, 8 * MiB, 8 * MiB, BATCH) :
			 esim_setup(MANUAL, 8 * MiB, 8 * MiB, 0);
	struct srsv_space *d = esim_space(s, SRSV_POOL_DATA);
	struct srsv_space *m = esim_space(s, SRSV_POOL_METADATA);
	struct srsv_rsv *trans = srsv_ctx_rsv(s->ctx, SRSV_RSV_TRANS);
	struct srsv_rsv *used = NULL;

	/* Leave credit in this CPU's cache: one byte out, one back. */
	ck_assert_int_eq(srsv_space_reserve(d, 1, SRSV_FLUSH_DATA, 0), 0);
	ck_assert_int_eq(srsv_space_release(d, 1), 0);
	if (caches)
		ck_assert_uint_gt(srsv__cache_credit(d), 0);
	ck_assert_int_eq(srsv_ctx_shutdown(s->ctx), 0);

	ck_assert_int_eq(srsv_space_reserve(d, 8 * MiB, SRSV_FLUSH_DATA, 0), 0);
	ck_assert_int_eq(srsv_space_reserve(d, 9 * MiB, SRSV_FLUSH_DATA, 0),
			 -ENOSPC);
	ck_assert_int_eq(srsv_space_reserve(d, 4 * KiB, SRSV_FLUSH_DATA, 0),
			 -ESHUTDOWN);
	ck_assert_int_eq(srsv_space_reserve(d, 4 * KiB, SRSV_NO_FLUSH, 0),
			 -ENOSPC);
	ck_assert_int_eq(srsv_space_reserve(d, 4 * KiB, SRSV_FLUSH_DATA,
					    SRSV_RESERVE_NOWAIT), -EAGAIN);
	/* Giving back and moving along still work. */
	ck_assert_int_eq(srsv_space_alloc(d, 4 * MiB), 0);
	ck_assert_int_eq(srsv_space_commit_used(d, 4 * MiB), 0);
	ck_assert_int_eq(srsv_space_release(d, 4 * MiB), 0);
	ck_assert_uint_eq(esim_snap(d).may_use, 0);
	/* The fallback chain never waits: 0 while it fits. */
	ck_assert_int_eq(srsv_rsv_use_fallback(trans, 64 * KiB, &used), 0);
	ck_assert_int_eq(srsv_space_reserve(m, 8 * MiB - 64 * KiB,
					    SRSV_FLUSH_ALL, 0), 0);
	ck_assert_int_eq(srsv_space_reserve(m, 64 * KiB, SRSV_FLUSH_ALL, 0),
			 -ESHUTDOWN);
	ck_assert_int_eq(srsv_space_release(m, 8 * MiB), 0);
	ck_assert_uint_eq(esim_snap(m).may_use, 0);
	esim_free(s);
}

START_TEST(test_shutdown_refuses_only_waits)
{
	shutdown_rule(true);
	shutdown_rule(false);
}
END_TEST

static Suite *cache_suite(void)
{
	Suite *s = suite_create("cache");
	TCase *one = tcase_create("one-thread");
	TCase *many = tcase_create("threads");

	tcase_add_checked_fixture(one, setup, teardown);
	tcase_add_test(one, test_shutdown_refuses_only_waits);
	tcase_add_test(one, test_cache_off_by_default);
	tcase_add_test(one, test_cache_idle_until_contended);
	tcase_add_test(one, test_cache_refill_then_hits);
	tcase_add_test(one, test_cache_release_keeps_two_batches);
	tcase_add_test(one, test_cache_fills_exactly);
	tcase_add_test(one, test_cache_credit_yields_to_exact_fit);
	tcase_add_test(one, test_cache_credit_yields_to_readonly);
	tcase_add_test(one, test_cache_closed_while_tickets_wait);
	tcase_add_test(one, test_cache_nowait_uses_cache);
	tcase_add_test(one, test_cache_nowait_never_blocks);
	tcase_add_test(one, test_cache_over_release);
	tcase_add_test(one, test_cache_over_release_caught_at_reconcile);
	tcase_add_test(one, test_cache_slow_path_waits_for_credit_in_motion);
	tcase_add_test(one, test_refused_release_changes_nothing);
	tcase_add_test(one, test_cache_over_release_within_word);
	tcase_add_test(one, test_cache_config_bad);
	suite_add_tcase(s, one);

	tcase_add_test(many, test_cache_threads_roomy);
	tcase_add_test(many, test_cache_engages_under_contention);
	tcase_add_test(many, test_cache_threads_tight);
	tcase_add_test(many, test_cache_tickets_get_released_credit);
	tcase_add_test(many, test_cache_tickets_churn);
	tcase_set_timeout(many, 30);
	suite_add_tcase(s, many);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(cache_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
