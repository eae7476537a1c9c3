/* SPDX-License-Identifier: MIT */
/*
 * bench/nowait.c - the NOWAIT benchmark (the nowait direct-I/O series,
 * the async buffered-write series and the ext4 NOWAIT patch of
 * docs/design.md section 8).
 *
 * (a) The promise.  Two threads issue NOWAIT reservations for --seconds
 *     (5 s): in turn srsv_space_reserve() on the METADATA pool (FLUSH_ALL
 *     with SRSV_RESERVE_NOWAIT), on the DATA pool (FLUSH_DATA with
 *     SRSV_RESERVE_NOWAIT) and srsv_delalloc_reserve() in
 *     SRSV_DELALLOC_NOWAIT mode for a tenant; a success is given back at
 *     once, outside the timed call.  Meanwhile a third thread keeps
 *     tickets queued: the METADATA pool is used up but for 1 MiB, and it
 *     asks for 4 MiB with FLUSH_ALL, again and again; every flush callback
 *     call sleeps 10 ms (a slow device), so each ticket waits through a
 *     whole flush walk before it fails.  A NOWAIT metadata reservation
 *     must not pass the queued ticket, even though 4 KiB would fit: its
 *     answer is -EAGAIN, at once.  Per call the bench takes the time
 *     (clock_gettime around the call) and, when the library was built
 *     with -Ddebug_locks=true, the thread's lock statistics before and
 *     after (srsv_debug_lock_stats()): a call is "blocked" when it made a
 *     blocking lock acquisition or a condition wait.  Without debug_locks
 *     the bench says so and reports blocked=n/a.
 *
 * (b) The async buffered-write series' experiment.  Sequential 4 KiB buffered writes at queue
 *     depth 1 through the io_uring writer of examples/nowait_uring.h,
 *     in the same process: "inline" (reserve NOWAIT in the submitter,
 *     submit to the ring; punt on -EAGAIN) against "punted" (every write
 *     handed to the worker thread, which reserves in blocking mode and
 *     pwrite()s: io_uring before NOWAIT support), plus "psync" (reserve
 *     NOWAIT and pwrite() in the submitter, fio's psync column of the
 *     series) for reference.  --runs rounds, the order of the variants
 *     reversed every other round; figures are medians.  The file is
 *     preallocated, one block per write, as fio lays out its file.  The
 *     pools are roomy by default (metadata for four times every write's
 *     reservation, data for every write), so that the library never makes
 *     a write punt or wait and no writeback runs during the timed part:
 *     the experiment measures the hand-off, as the series did (--meta-mib
 *     makes the METADATA pool tight).  inline_speedup = punted time /
 *     inline time.  The series measured 55k -> 134k IOPS (2.4x) on btrfs.
 *     On a file system that refuses buffered NOWAIT writes (ext4, tmpfs)
 *     io_uring hands the "inline" writes to its own io-wq, so both
 *     variants pay a thread hand-off there; bench/run-nowait.sh --btrfs
 *     runs (b) on a scratch btrfs as well.
 *     Two more variants: "async" (on -EAGAIN the reservation becomes an
 *     asynchronous ticket, srsv_delalloc_reserve_async(), whose completion
 *     queue's fd the ring waits for with IORING_OP_POLL_ADD; no thread waits
 *     for space) and "blocking" (the submitter reserves in blocking mode).
 *     Each variant's p99 write latency (issue to completion) is reported;
 *     async_speedup = punted time / async time, async_p99_vs_punted = async
 *     p99 / punted p99.  They mean something with a tight METADATA pool
 *     (--meta-mib), where writes wait for writeback during the run.
 *
 * Last line: summary: nowait_calls=N blocked=B p9999_us=P max_us=M
 * inline_speedup=X async_speedup=S async_p99_vs_punted=Q.  Goals: B = 0,
 * P <= 20, X >= 2.0; with a tight metadata pool S >= 2.0, Q <= 1.0.
 *
 * Exit status 1 when a run was invalid: a NOWAIT call answered something
 * other than 0 or -EAGAIN, the pools or the quota did not end as they
 * began, or a writer run failed to verify its file.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <libspacersv/spacersv.h>

#if SRSV_BENCH_URING
#include "../examples/nowait_uring.h"
#endif

#include "bench_util.h"

#define KIB (UINT64_C(1) << 10)
#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)
#define NSEC_PER_USEC UINT64_C(1000)
#define NSEC_PER_MSEC UINT64_C(1000000)

/* Part (a): the threads issuing NOWAIT calls (the issue says 2). */
#define NOWAIT_THREADS 2
/* Every flush callback call sleeps this long (the 10 ms). */
#define FLUSH_SLEEP_NS (10 * NSEC_PER_MSEC)
/* Part (a) pools.  DATA is roomy: its NOWAIT calls succeed. */
#define A_DATA_BYTES GIB
/* Part (a)'s per-CPU caches (srsv_config.cpu_cache_bytes), KiB. */
#define DEFAULT_CACHE_KIB 64
#define A_META_BYTES (64 * MIB)
/* What is left free in the METADATA pool: 256 calls' worth of 4 KiB,
 * room a NOWAIT call would find if it could pass the queued ticket. */
#define A_META_FREE MIB
/* The ticket asks for more than is free: it stays queued. */
#define A_TICKET_BYTES (4 * MIB)
#define A_CALL_BYTES (4 * KIB)
/*
 * Latency histogram: 10 ns buckets below 100 µs (the range the goal is
 * in), 1 µs buckets up to 100 ms, one overflow bucket.  The maximum is
 * kept exactly besides.
 */
#define H_FINE_NS 10u
#define H_FINE_END (100 * NSEC_PER_USEC)
#define H_COARSE_NS NSEC_PER_USEC
#define H_COARSE_END (100 * NSEC_PER_MSEC)
#define H_FINE (H_FINE_END / H_FINE_NS)
#define H_COARSE ((H_COARSE_END - H_FINE_END) / H_COARSE_NS)
#define H_BUCKETS (H_FINE + H_COARSE + 1)

#define DEFAULT_SECONDS 5
#define DEFAULT_RUNS 5
#define MAX_RUNS 99
/* Writes per run of part (b): about half a second per run at the rates
 * of a 2-core VM, enough to dwarf the ring's and the ctx's set-up. */
#define DEFAULT_WRITES 50000
/*
 * The file of part (b): by default one block per write, one pass over a
 * preallocated file, as the series' fio job (a second pass would make btrfs
 * copy-on-write every block, which it never does without blocking).
 */
#define DEFAULT_BLOCKS 0

/*
 * K_EMPTY times nothing between the two clock reads: the same threads, at
 * the same moments, measure the floor the machine puts under any call
 * (clock reads, preemption, virtualisation).  It is not a NOWAIT call and
 * is counted apart.
 */
enum call_kind { K_META = 0, K_DATA = 1, K_DELALLOC = 2, K_COUNT = 3,
		 K_EMPTY = K_COUNT };
static const char *const kind_names[K_COUNT] = {
	"space_reserve(META, FLUSH_ALL|NOWAIT)",
	"space_reserve(DATA, FLUSH_DATA|NOWAIT)",
	"delalloc_reserve(NOWAIT) + quota"
};

struct a_thread {
	pthread_t thread;
	struct a_bench *b;
	uint64_t *hist;			/* H_BUCKETS */
	uint64_t max_ns;
	uint64_t *kind_hist[K_COUNT];	/* per kind, H_BUCKETS */
	uint64_t kind_max_ns[K_COUNT];
	uint64_t *empty_hist;		/* K_EMPTY, H_BUCKETS */
	uint64_t empty_max_ns, empty_calls;
	uint64_t calls[K_COUNT], eagain[K_COUNT];
	uint64_t blocked, bad;
	struct srsv_lock_stats locks;	/* summed over the calls */
	long nivcsw;			/* involuntary context switches */
};

struct a_bench {
	struct srsv_ctx *ctx;
	struct srsv_space *data, *meta;
	struct srsv_quota *quota;
	bool debug_locks;
	atomic_bool stop;
	atomic_bool stop_tickets;
	atomic_uint_fast64_t tickets, tickets_granted, flush_calls;
	struct a_thread th[NOWAIT_THREADS];
};

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u),
			       (long)(ns % 1000000000u) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* The 1, 5 and 15 minute loads: this bench runs long enough for them. */
static void print_loads(const char *when)
{
	double load[3];

	if (getloadavg(load, 3) == 3)
		printf("load average %s: %.2f %.2f %.2f on %ld CPUs\n", when,
		       load[0], load[1], load[2],
		       sysconf(_SC_NPROCESSORS_ONLN));
}

/* ---- part (a) ---- */

/* A slow device: every state takes 10 ms and frees nothing. */
static int a_flush(struct srsv_space *space, enum srsv_flush_state state,
		   uint64_t bytes, bool for_preempt, void *user)
{
	struct a_bench *b = user;

	(void)space; (void)bytes; (void)for_preempt;
	atomic_fetch_add(&b->flush_calls, 1);
	sleep_ns(FLUSH_SLEEP_NS);
	if (state == SRSV_STATE_ALLOC_CHUNK ||
	    state == SRSV_STATE_ALLOC_CHUNK_FORCE)
		return -ENOSPC;
	return 0;
}

static void hist_add(uint64_t *hist, uint64_t *max_ns, uint64_t ns)
{
	size_t i;

	if (ns < H_FINE_END)
		i = ns / H_FINE_NS;
	else if (ns < H_COARSE_END)
		i = H_FINE + (ns - H_FINE_END) / H_COARSE_NS;
	else
		i = H_BUCKETS - 1;
	hist[i]++;
	if (ns > *max_ns)
		*max_ns = ns;
}

/* Upper edge of bucket @i in µs. */
static double hist_edge_us(size_t i)
{
	if (i < H_FINE)
		return (double)(i + 1) * H_FINE_NS / 1e3;
	if (i < H_FINE + H_COARSE)
		return (H_FINE_END + (double)(i - H_FINE + 1) * H_COARSE_NS) /
		       1e3;
	return INFINITY;
}

/* The @q quantile (0..1) of @hist, in µs (bucket upper edge). */
static double hist_quantile(const uint64_t *hist, uint64_t n, double q)
{
	uint64_t want = (uint64_t)ceil(q * (double)n), seen = 0;

	if (!want)
		want = 1;
	for (size_t i = 0; i < H_BUCKETS; i++) {
		seen += hist[i];
		if (seen >= want)
			return hist_edge_us(i);
	}
	return INFINITY;
}

static void stats_add(struct srsv_lock_stats *sum,
		      const struct srsv_lock_stats *a,
		      const struct srsv_lock_stats *b)
{
	sum->acquisitions += b->acquisitions - a->acquisitions;
	sum->blocking_acquisitions += b->blocking_acquisitions -
				      a->blocking_acquisitions;
	sum->trylock_failures += b->trylock_failures - a->trylock_failures;
	sum->waits += b->waits - a->waits;
}

static void *a_nowait_thread(void *arg)
{
	struct a_thread *t = arg;
	struct a_bench *b = t->b;
	struct srsv_lock_stats before = { 0 }, after = { 0 };
	struct srsv_delalloc_resv resv;
	struct rusage ru;
	unsigned k = 0;

	while (!atomic_load_explicit(&b->stop, memory_order_relaxed)) {
		uint64_t t0, t1;
		int ret;

		if (b->debug_locks && srsv_debug_lock_stats(&before))
			abort();
		t0 = now_ns();
		switch (k) {
		case K_META:
			ret = srsv_space_reserve(b->meta, A_CALL_BYTES,
						 SRSV_FLUSH_ALL,
						 SRSV_RESERVE_NOWAIT);
			break;
		case K_DATA:
			ret = srsv_space_reserve(b->data, A_CALL_BYTES,
						 SRSV_FLUSH_DATA,
						 SRSV_RESERVE_NOWAIT);
			break;
		case K_DELALLOC:
			ret = srsv_delalloc_reserve(b->ctx, b->quota,
						    A_CALL_BYTES,
						    SRSV_DELALLOC_NOWAIT,
						    &resv);
			break;
		default:
			/* Nothing: keep the compiler from merging the reads. */
			__asm__ __volatile__("" ::: "memory");
			ret = 0;
			break;
		}
		t1 = now_ns();
		if (k == K_EMPTY) {
			hist_add(t->empty_hist, &t->empty_max_ns, t1 - t0);
			t->empty_calls++;
			k = 0;
			continue;
		}
		if (b->debug_locks) {
			if (srsv_debug_lock_stats(&after))
				abort();
			if (after.blocking_acquisitions !=
			    before.blocking_acquisitions ||
			    after.waits != before.waits)
				t->blocked++;
			stats_add(&t->locks, &before, &after);
		}
		hist_add(t->hist, &t->max_ns, t1 - t0);
		hist_add(t->kind_hist[k], &t->kind_max_ns[k], t1 - t0);
		t->calls[k]++;
		if (ret == -EAGAIN) {
			t->eagain[k]++;
		} else if (ret) {
			t->bad++;	/* NOWAIT may only say 0 or -EAGAIN */
		} else if (k == K_DELALLOC) {
			if (srsv_delalloc_release(&resv))
				t->bad++;
		} else if (srsv_space_release(k == K_META ? b->meta : b->data,
					      A_CALL_BYTES)) {
			t->bad++;
		}
		k++;
	}
	if (!getrusage(RUSAGE_THREAD, &ru))
		t->nivcsw = ru.ru_nivcsw;
	return NULL;
}

/* Keeps a FLUSH_ALL ticket queued on the METADATA pool. */
static void *a_ticket_thread(void *arg)
{
	struct a_bench *b = arg;

	while (!atomic_load(&b->stop_tickets)) {
		int ret = srsv_space_reserve(b->meta, A_TICKET_BYTES,
					     SRSV_FLUSH_ALL, 0);

		atomic_fetch_add(&b->tickets, 1);
		if (ret == 0) {
			/* Cannot happen (nothing frees space); be exact. */
			atomic_fetch_add(&b->tickets_granted, 1);
			if (srsv_space_release(b->meta, A_TICKET_BYTES))
				abort();	/* we hold them */
		} else if (ret == -ESHUTDOWN) {
			break;
		}
	}
	return NULL;
}

struct a_result {
	uint64_t calls, eagain, blocked, bad;
	double p50_us, p99_us, p999_us, p9999_us, max_us;
	double floor_p999_us, floor_p9999_us, floor_max_us;
	bool debug_locks;
	bool valid;
};

static int part_a(unsigned seconds, uint64_t cache_bytes,
		  struct a_result *res)
{
	static struct a_bench b;
	struct srsv_config cfg;
	struct srsv_space_info di0, mi0, di1, mi1;
	struct srsv_quota_info qi;
	struct srsv_lock_stats probe;
	struct srsv_lock_stats locks = { 0 };
	pthread_t ticket_thread;
	uint64_t *hist, *empty_hist;
	uint64_t max_ns = 0, empty_max_ns = 0, empty_calls = 0, used;
	long nivcsw = 0;
	int ret;

	memset(res, 0, sizeof(*res));
	/* A fresh bench state: part (a) may run twice. */
	memset(&b, 0, sizeof(b));
	atomic_init(&b.stop, false);
	atomic_init(&b.stop_tickets, false);
	atomic_init(&b.tickets, 0);
	atomic_init(&b.tickets_granted, 0);
	atomic_init(&b.flush_calls, 0);
	b.debug_locks = srsv_debug_lock_stats(&probe) == 0;
	res->debug_locks = b.debug_locks;

	srsv_config_init(&cfg);
	cfg.flush = a_flush;
	cfg.user = &b;
	cfg.pool_bytes[SRSV_POOL_DATA] = A_DATA_BYTES;
	cfg.pool_bytes[SRSV_POOL_METADATA] = A_META_BYTES;
	cfg.pool_bytes[SRSV_POOL_SYSTEM] = 4 * MIB;
	cfg.unallocated_bytes = 0;	/* no overcommit, no growth */
	cfg.cpu_cache_bytes = cache_bytes;
	ret = srsv_ctx_create(&cfg, &b.ctx);
	if (ret)
		return ret;
	b.data = srsv_ctx_space(b.ctx, SRSV_POOL_DATA);
	b.meta = srsv_ctx_space(b.ctx, SRSV_POOL_METADATA);
	ret = srsv_quota_create(b.ctx, 1, SRSV_QUOTA_NO_LIMIT, &b.quota);
	if (ret)
		goto out;

	/* Use up the METADATA pool but for A_META_FREE: written trees. */
	used = A_META_BYTES - A_META_FREE;
	ret = srsv_space_reserve(b.meta, used, SRSV_NO_FLUSH, 0);
	if (!ret)
		ret = srsv_space_alloc(b.meta, used);
	if (!ret)
		ret = srsv_space_commit_used(b.meta, used);
	if (ret)
		goto out;
	if (srsv_space_snapshot(b.data, &di0, NULL, 0, NULL) ||
	    srsv_space_snapshot(b.meta, &mi0, NULL, 0, NULL))
		abort();

	ret = pthread_create(&ticket_thread, NULL, a_ticket_thread, &b);
	if (ret) {
		ret = -ret;
		goto out;
	}
	/* Let the first ticket queue before the clock starts. */
	for (int i = 0; i < 1000; i++) {
		struct srsv_space_info mi;

		if (srsv_space_snapshot(b.meta, &mi, NULL, 0, NULL))
			abort();
		if (mi.nr_tickets)
			break;
		sleep_ns(NSEC_PER_MSEC);
	}
	for (int i = 0; i < NOWAIT_THREADS; i++) {
		b.th[i].b = &b;
		b.th[i].hist = calloc(H_BUCKETS, sizeof(uint64_t));
		b.th[i].empty_hist = calloc(H_BUCKETS, sizeof(uint64_t));
		if (!b.th[i].hist || !b.th[i].empty_hist)
			abort();
		for (int k = 0; k < K_COUNT; k++) {
			b.th[i].kind_hist[k] = calloc(H_BUCKETS,
						      sizeof(uint64_t));
			if (!b.th[i].kind_hist[k])
				abort();
		}
		if (pthread_create(&b.th[i].thread, NULL, a_nowait_thread,
				   &b.th[i]))
			abort();
	}
	sleep_ns((uint64_t)seconds * 1000000000u);
	atomic_store(&b.stop, true);
	for (int i = 0; i < NOWAIT_THREADS; i++)
		pthread_join(b.th[i].thread, NULL);
	atomic_store(&b.stop_tickets, true);
	srsv_ctx_shutdown(b.ctx);	/* ends the queued ticket */
	pthread_join(ticket_thread, NULL);

	/* Everything the NOWAIT calls took went back. */
	if (srsv_space_snapshot(b.data, &di1, NULL, 0, NULL) ||
	    srsv_space_snapshot(b.meta, &mi1, NULL, 0, NULL) ||
	    srsv_quota_snapshot(b.quota, &qi))
		abort();
	res->valid = di1.may_use == di0.may_use && di1.used == di0.used &&
		     mi1.may_use == mi0.may_use && mi1.used == mi0.used &&
		     !qi.reserved[SRSV_QUOTA_DATA] &&
		     !qi.reserved[SRSV_QUOTA_META_PREALLOC] && !qi.used;

	hist = calloc(H_BUCKETS, sizeof(uint64_t));
	empty_hist = calloc(H_BUCKETS, sizeof(uint64_t));
	if (!hist || !empty_hist)
		abort();
	printf("%-42s %9s %9s %7s %7s %8s %8s\n", "call (2 threads)",
	       "calls", "-EAGAIN", "p50 us", "p99.9", "p99.99", "max us");
	for (int k = 0; k < K_COUNT; k++) {
		uint64_t c = 0, e = 0, kmax = 0;

		memset(hist, 0, H_BUCKETS * sizeof(uint64_t));
		for (int i = 0; i < NOWAIT_THREADS; i++) {
			c += b.th[i].calls[k];
			e += b.th[i].eagain[k];
			for (size_t j = 0; j < H_BUCKETS; j++)
				hist[j] += b.th[i].kind_hist[k][j];
			if (b.th[i].kind_max_ns[k] > kmax)
				kmax = b.th[i].kind_max_ns[k];
			free(b.th[i].kind_hist[k]);
		}
		printf("%-42s %9" PRIu64 " %9" PRIu64 " %7.2f %7.2f %8.2f "
		       "%8.1f\n", kind_names[k], c, e,
		       hist_quantile(hist, c, 0.5),
		       hist_quantile(hist, c, 0.999),
		       hist_quantile(hist, c, 0.9999), kmax / 1e3);
		res->calls += c;
		res->eagain += e;
	}
	memset(hist, 0, H_BUCKETS * sizeof(uint64_t));
	for (int i = 0; i < NOWAIT_THREADS; i++) {
		struct a_thread *t = &b.th[i];

		for (size_t j = 0; j < H_BUCKETS; j++) {
			hist[j] += t->hist[j];
			empty_hist[j] += t->empty_hist[j];
		}
		max_ns = t->max_ns > max_ns ? t->max_ns : max_ns;
		empty_max_ns = t->empty_max_ns > empty_max_ns ?
			       t->empty_max_ns : empty_max_ns;
		empty_calls += t->empty_calls;
		res->blocked += t->blocked;
		res->bad += t->bad;
		locks.acquisitions += t->locks.acquisitions;
		locks.blocking_acquisitions += t->locks.blocking_acquisitions;
		locks.trylock_failures += t->locks.trylock_failures;
		locks.waits += t->locks.waits;
		nivcsw += t->nivcsw;
		free(t->hist);
		free(t->empty_hist);
	}
	res->p50_us = hist_quantile(hist, res->calls, 0.5);
	res->p99_us = hist_quantile(hist, res->calls, 0.99);
	res->p9999_us = hist_quantile(hist, res->calls, 0.9999);
	res->max_us = max_ns / 1e3;
	res->p999_us = hist_quantile(hist, res->calls, 0.999);
	res->floor_p9999_us = hist_quantile(empty_hist, empty_calls, 0.9999);
	res->floor_p999_us = hist_quantile(empty_hist, empty_calls, 0.999);
	res->floor_max_us = empty_max_ns / 1e3;
	free(hist);
	free(empty_hist);

	printf("tickets queued by the third thread: %" PRIu64
	       " (granted: %" PRIu64 "), flush callback calls: %" PRIu64
	       " (10 ms each)\n", atomic_load(&b.tickets),
	       atomic_load(&b.tickets_granted), atomic_load(&b.flush_calls));
	printf("latency per call (us): p50 %.2f  p99 %.2f  p99.9 %.2f  "
	       "p99.99 %.2f  max %.1f\n", res->p50_us, res->p99_us,
	       res->p999_us, res->p9999_us, res->max_us);
	printf("floor, nothing timed (%" PRIu64 " samples, same threads): "
	       "p99.9 %.2f  p99.99 %.2f  max %.1f\n", empty_calls,
	       res->floor_p999_us, res->floor_p9999_us, res->floor_max_us);
	if (b.debug_locks)
		printf("lock stats over the calls: acquisitions %" PRIu64
		       ", blocking %" PRIu64 ", waits %" PRIu64
		       ", try-lock failures %" PRIu64 "; blocked calls %"
		       PRIu64 "\n", locks.acquisitions,
		       locks.blocking_acquisitions, locks.waits,
		       locks.trylock_failures, res->blocked);
	else
		printf("blocked: n/a (library built without "
		       "-Ddebug_locks=true: srsv_debug_lock_stats() says "
		       "-ENOTSUP)\n");
	printf("involuntary context switches of the 2 threads: %ld "
	       "(preemption by other runnable threads: the tail's cause)\n",
	       nivcsw);
	printf("unexpected answers: %" PRIu64 "; pools and quota as before: "
	       "%s\n", res->bad, res->valid ? "yes" : "NO");
	res->valid = res->valid && !res->bad;
	ret = 0;
out:
	srsv_ctx_destroy(b.ctx);
	return ret;
}

/* ---- part (b) ---- */

#if SRSV_BENCH_URING
static uint64_t median_u64(const uint64_t *v, unsigned n)
{
	uint64_t s[MAX_RUNS];

	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(*s), cmp_u64);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* The asynchronous variant against the punted one (part (b)). */
struct b_async {
	double speedup;		/* punted time / async time */
	double p99_ratio;	/* async p99 write latency / punted's */
	uint64_t waits;		/* async reservations, median per run */
	uint64_t max_pending;	/* most waiting at once, over all runs */
};

/* Returns the speedup, 0 when skipped, a negative errno on failure. */
static double part_b(unsigned runs, uint64_t writes, uint64_t blocks,
		     uint64_t meta_bytes, const char *dir,
		     enum nu_kernel_nowait knw, struct b_async *ar)
{
	static const enum nu_mode order[] = {
		NU_MODE_NOWAIT, NU_MODE_PUNT_ALL, NU_MODE_PSYNC,
		NU_MODE_ASYNC, NU_MODE_BLOCKING
	};
	const unsigned nv = sizeof(order) / sizeof(order[0]);
	uint64_t ns[NU_MODE_COUNT][MAX_RUNS], lib[NU_MODE_COUNT][MAX_RUNS];
	uint64_t kern[NU_MODE_COUNT][MAX_RUNS], wb[NU_MODE_COUNT][MAX_RUNS];
	uint64_t p99[NU_MODE_COUNT][MAX_RUNS], waits[MAX_RUNS];
	struct nu_config cfg;
	struct nu_stats st;
	char note[64] = "";
	double x;

	nu_config_init(&cfg);
	cfg.dir = dir;
	cfg.blocks = blocks;
	cfg.writes = writes;
	cfg.qd = 1;
	cfg.kernel_nowait = knw;
	cfg.meta_pool_bytes = meta_bytes;
	cfg.data_headroom_bytes = writes * NU_BLOCK;

	for (unsigned r = 0; r < runs; r++) {
		for (unsigned k = 0; k < nv; k++) {
			enum nu_mode m = order[r % 2 ? nv - 1 - k : k];
			int ret;

			cfg.mode = m;
			ret = nu_run(&cfg, &st);
			if (ret == NU_SKIP)
				return 0;
			if (ret) {
				fprintf(stderr, "bench_nowait: %s run: %s\n",
					nu_mode_names[m], strerror(-ret));
				return ret;
			}
			ns[m][r] = st.elapsed_ns;
			p99[m][r] = st.lat_p99_ns;
			if (m == NU_MODE_ASYNC) {
				waits[r] = st.async_waits;
				if (st.async_max_pending > ar->max_pending)
					ar->max_pending = st.async_max_pending;
			}
			lib[m][r] = st.punted_library;
			kern[m][r] = st.punted_kernel + st.punted_short;
			wb[m][r] = st.wb_calls;
			memcpy(note, st.fs_note, sizeof(note));
		}
	}
	printf("kernel RWF_NOWAIT buffered writes: %s\n", note);
	printf("%-8s %9s %9s %9s %9s %9s %12s %12s %9s\n", "variant", "IOPS",
	       "min IOPS", "max IOPS", "us/write", "p99 us", "lib -EAGAIN",
	       "kern -EAGAIN", "wb calls");
	for (unsigned k = 0; k < nv; k++) {
		enum nu_mode m = order[k];
		uint64_t med = median_u64(ns[m], runs), lo = ns[m][0],
			 hi = ns[m][0];

		for (unsigned r = 1; r < runs; r++) {
			lo = ns[m][r] < lo ? ns[m][r] : lo;
			hi = ns[m][r] > hi ? ns[m][r] : hi;
		}
		printf("%-8s %9.0f %9.0f %9.0f %9.2f %9.1f %12" PRIu64 " %12"
		       PRIu64 " %9" PRIu64 "\n", nu_mode_names[m],
		       writes * 1e9 / med, writes * 1e9 / hi,
		       writes * 1e9 / lo, med / 1e3 / writes,
		       median_u64(p99[m], runs) / 1e3,
		       median_u64(lib[m], runs),
		       median_u64(kern[m], runs), median_u64(wb[m], runs));
	}
	x = (double)median_u64(ns[NU_MODE_PUNT_ALL], runs) /
	    (double)median_u64(ns[NU_MODE_NOWAIT], runs);
	printf("inline_speedup = punted time / inline time = %.2f "
	       "(btrfs async buffered writes: 134k / 55k = 2.4)\n", x);
	{
		/*
		 * The two variants of one round ran back to back: their ratio
		 * is less exposed to the machine's load changing from round
		 * to round than the ratio of the medians.
		 */
		uint64_t paired[MAX_RUNS];

		for (unsigned r = 0; r < runs; r++)
			paired[r] = ns[NU_MODE_PUNT_ALL][r] * 1000 /
				    ns[NU_MODE_NOWAIT][r];
		printf("median of the per-round ratios: %.2f\n",
		       median_u64(paired, runs) / 1000.0);
	}
	printf("psync / inline = %.2f\n",
	       (double)median_u64(ns[NU_MODE_NOWAIT], runs) /
	       (double)median_u64(ns[NU_MODE_PSYNC], runs));
	ar->speedup = (double)median_u64(ns[NU_MODE_PUNT_ALL], runs) /
		      (double)median_u64(ns[NU_MODE_ASYNC], runs);
	ar->p99_ratio = (double)median_u64(p99[NU_MODE_ASYNC], runs) /
			(double)(median_u64(p99[NU_MODE_PUNT_ALL], runs) ?
				 median_u64(p99[NU_MODE_PUNT_ALL], runs) : 1);
	ar->waits = median_u64(waits, runs);
	printf("async_speedup = punted time / async time = %.2f; async p99 / "
	       "punted p99 = %.2f; blocking / async time = %.2f\n",
	       ar->speedup, ar->p99_ratio,
	       (double)median_u64(ns[NU_MODE_BLOCKING], runs) /
	       (double)median_u64(ns[NU_MODE_ASYNC], runs));
	printf("async: %" PRIu64 " reservations per run waited on the "
	       "completion queue's fd in the ring (median), at most %" PRIu64
	       " at once; threads waiting for space: 0 (the punted variant "
	       "blocks its worker thread for each)\n", ar->waits,
	       ar->max_pending);
	return x;
}
#endif

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench_nowait [options]\n"
		"  --seconds S        part (a) duration (default %d)\n"
		"  --runs K           part (b) runs per variant, 1..%d "
		"(default %d)\n"
		"  --writes N         part (b) writes per run (default %d)\n"
		"  --blocks N         part (b) file size in 4 KiB blocks "
		"(default %d: one per write)\n"
		"  --meta-mib N       part (b) METADATA pool (default: "
		"every write's reservation fits)\n"
		"  --dir DIR          part (b) temp dir location "
		"(default $TMPDIR or /tmp)\n"
		"  --kernel-nowait M  part (b) RWF_NOWAIT: auto, on, off "
		"(default auto)\n"
		"  --part a|b         run one part only\n"
		"  --cpu-cache-kib N  part (a): srsv_config.cpu_cache_bytes "
		"of the summary's run\n"
		"                     (default %d; 0: only the run without "
		"caches)\n",
		DEFAULT_SECONDS, MAX_RUNS, DEFAULT_RUNS, DEFAULT_WRITES,
		DEFAULT_BLOCKS, DEFAULT_CACHE_KIB);
}

int main(int argc, char **argv)
{
	uint64_t seconds = DEFAULT_SECONDS, runs = DEFAULT_RUNS;
	uint64_t writes = DEFAULT_WRITES, blocks = DEFAULT_BLOCKS;
	uint64_t meta_mib = 0, meta_bytes, cache_kib = DEFAULT_CACHE_KIB;
	const char *dir = NULL, *part = "ab";
	int knw = 0;
	struct a_result a = { 0 }, a0 = { 0 };
	struct b_async ar = { 0 };
	double x = 0;
	bool have_a = false, have_b = false, valid = true;
	char blocked[32], speedup[32], async_fig[64];

	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "runs", required_argument, NULL, 'r' },
		{ "writes", required_argument, NULL, 'w' },
		{ "blocks", required_argument, NULL, 'b' },
		{ "meta-mib", required_argument, NULL, 'm' },
		{ "dir", required_argument, NULL, 'd' },
		{ "kernel-nowait", required_argument, NULL, 'k' },
		{ "cpu-cache-kib", required_argument, NULL, 'c' },
		{ "part", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		const char *val = optarg;

		switch (opt) {
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			bench_print_version("bench_nowait");
			return 0;
		case 's':
			if (!parse_u64(val, &seconds) || !seconds ||
			    seconds > 3600)
				goto bad;
			break;
		case 'r':
			if (!parse_u64(val, &runs) || !runs || runs > MAX_RUNS)
				goto bad;
			break;
		case 'w':
			if (!parse_u64(val, &writes) || !writes ||
			    writes > (UINT64_C(1) << 28))
				goto bad;
			break;
		case 'b':
			if (!parse_u64(val, &blocks) ||
			    blocks > (UINT64_C(1) << 28))
				goto bad;
			break;
		case 'm':
			if (!parse_u64(val, &meta_mib) || !meta_mib ||
			    meta_mib > (UINT64_C(1) << 30))
				goto bad;
			break;
		case 'd':
			dir = val;
			break;
		case 'k':
			if (!strcmp(val, "auto"))
				knw = 0;
			else if (!strcmp(val, "on"))
				knw = 1;
			else if (!strcmp(val, "off"))
				knw = 2;
			else
				goto bad;
			break;
		case 'c':
			if (!parse_u64(val, &cache_kib) || cache_kib > MIB)
				goto bad;
			break;
		case 'p':
			if (strcmp(val, "a") && strcmp(val, "b"))
				goto bad;
			part = val;
			break;
		default:
			goto bad;
		}
	}
	if (optind < argc)
		goto bad;

	if (!blocks)
		blocks = writes;
	if (meta_mib) {
		meta_bytes = meta_mib * MIB;
	} else {
		struct srsv_config sc;

		/*
		 * Roomy: four times every write's metadata reservation.  No
		 * write waits for writeback, and none runs during the timed
		 * part: the preemptive flusher starts when reclaimable space
		 * reaches half the free space (clamp 1), which needs the
		 * reservations to reach a third of the pool.  On 2 shared
		 * cores a flusher thread takes the CPU from the submitter,
		 * where the series' machine had cores to spare for the
		 * kernel's writeback.  --meta-mib makes it tight.
		 */
		srsv_config_init(&sc);
		meta_bytes = 4 * writes * (sc.delalloc_extent_meta_bytes ?
					   sc.delalloc_extent_meta_bytes :
					   sc.item_bytes) +
			     2 * (blocks / 64 + 1) * 16 * KIB;
	}
	printf("bench_nowait\n");
	print_loads("at start");
	fflush(stdout);
	if (strchr(part, 'a')) {
		int ret;

		printf("\n(a) NOWAIT calls for %" PRIu64 " s: 2 threads, a third"
		       " keeps a %" PRIu64 " MiB FLUSH_ALL ticket queued on a "
		       "METADATA pool with %" PRIu64 " MiB free; every flush "
		       "callback call sleeps 10 ms\n", seconds,
		       A_TICKET_BYTES / MIB, A_META_FREE / MIB);
		if (cache_kib) {
			/* First the default configuration, for comparison. */
			printf("\n(a0) the default configuration: no per-CPU "
			       "caches\n");
			fflush(stdout);
			ret = part_a((unsigned)seconds, 0, &a0);
			if (ret) {
				fprintf(stderr, "bench_nowait: part (a0): "
					"%s\n", strerror(-ret));
				return 1;
			}
			valid = valid && a0.valid;
			printf("\n(a) the same with per-CPU caches "
			       "(cpu_cache_bytes = %" PRIu64 " KiB, the "
			       "configuration for several writer threads)\n",
			       cache_kib);
		}
		fflush(stdout);
		ret = part_a((unsigned)seconds, cache_kib * KIB, &a);
		if (ret) {
			fprintf(stderr, "bench_nowait: part (a): %s\n",
				strerror(-ret));
			return 1;
		}
		have_a = true;
		valid = valid && a.valid;
		/* Both runs must keep the promise. */
		a.blocked += a0.blocked;
		if (a.debug_locks)
			printf("goal: blocked = 0 %s; p99.99 <= 20 us %s\n",
			       a.blocked ? "MISSED" : "met",
			       a.p9999_us <= 20 ? "met" : "MISSED");
		else
			printf("goal: p99.99 <= 20 us %s\n",
			       a.p9999_us <= 20 ? "met" : "MISSED");
		fflush(stdout);
	}
	if (strchr(part, 'b')) {
#if SRSV_BENCH_URING
		printf("\n(b) async buffered writes: %" PRIu64 " sequential 4 KiB buffered "
		       "writes per run at queue depth 1 through the io_uring "
		       "writer (a preallocated %" PRIu64 " KiB file), median of %"
		       PRIu64 " runs\n", writes, blocks * NU_BLOCK / KIB, runs);
		fflush(stdout);
		printf("metadata pool %" PRIu64 " MiB (%s)\n",
		       meta_bytes / MIB, meta_mib ? "--meta-mib" :
		       "4x every write's reservation: no flushing");
		x = part_b((unsigned)runs, writes, blocks, meta_bytes, dir,
			   (enum nu_kernel_nowait)knw, &ar);
		if (x < 0) {
			valid = false;
		} else if (x == 0) {
			printf("io_uring unavailable: part (b) skipped\n");
		} else {
			have_b = true;
			printf("goal: inline_speedup >= 2.0 %s\n",
			       x >= 2.0 ? "met" : "MISSED");
			printf("goal: async_speedup >= 2.0 %s; async p99 <= "
			       "punted p99 %s\n",
			       ar.speedup >= 2.0 ? "met" : "MISSED",
			       ar.p99_ratio <= 1.0 ? "met" : "MISSED");
		}
#else
		(void)dir; (void)knw; (void)blocks; (void)writes;
		(void)meta_bytes;
		printf("\n(b) skipped: built without liburing\n");
#endif
	}
	print_loads("at end");

	if (have_a && a.debug_locks)
		snprintf(blocked, sizeof(blocked), "%" PRIu64, a.blocked);
	else
		snprintf(blocked, sizeof(blocked), "n/a");
	if (have_b) {
		snprintf(speedup, sizeof(speedup), "%.2f", x);
		snprintf(async_fig, sizeof(async_fig), "async_speedup=%.2f "
			 "async_p99_vs_punted=%.2f", ar.speedup, ar.p99_ratio);
	} else {
		snprintf(speedup, sizeof(speedup), "n/a");
		snprintf(async_fig, sizeof(async_fig),
			 "async_speedup=n/a async_p99_vs_punted=n/a");
	}
	if (!valid)
		fprintf(stderr, "bench_nowait: invalid run\n");
	if (have_a && cache_kib)
		printf("default configuration (no caches): nowait_calls=%"
		       PRIu64 " p9999_us=%.2f max_us=%.1f\n", a0.calls,
		       a0.p9999_us, a0.max_us);
	if (have_a)
		printf("summary: nowait_calls=%" PRIu64 " blocked=%s "
		       "p9999_us=%.2f max_us=%.1f inline_speedup=%s %s\n",
		       a.calls, blocked, a.p9999_us, a.max_us, speedup,
		       async_fig);
	else
		printf("summary: nowait_calls=n/a blocked=n/a p9999_us=n/a "
		       "max_us=n/a inline_speedup=%s %s\n", speedup,
		       async_fig);
	return valid ? 0 : 1;
bad:
	usage(stderr);
	return 2;
}
