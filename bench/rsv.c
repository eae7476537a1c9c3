/* SPDX-License-Identifier: MIT */
/*
 * bench/rsv: what a block reservation saves a writer.
 *
 * A writer needs 16 KiB of metadata per operation (one tree block).  Two
 * ways of getting it, 1 and 2 threads, in the same process:
 *
 *   rsv-use        the writer reserves once into its own block reservation
 *                  (srsv_rsv_init + srsv_rsv_add of a large chunk) and then
 *                  takes 16 KiB per operation with srsv_rsv_use(), refilling
 *                  with srsv_rsv_refill() when it runs short: each thread
 *                  touches only its own rsv, and the shared pool once per
 *                  chunk;
 *   pool-per-use   the writer reserves 16 KiB from the pool for every
 *                  operation (srsv_space_reserve): every operation is an
 *                  atomic update of the pool's shared may_use word.
 *
 * Both then release everything they hold (the rsv-use writer its rsv and
 * the bytes it used, the pool-per-use writer the bytes it reserved), inside
 * the timed part, so each run ends with may_use back to zero; the bench
 * checks that, and that nothing failed, after every run.
 *
 * Runs are interleaved (both variants, both thread counts, round after
 * round); figures are medians.  ns/op is the time one thread spends per
 * operation: wall time of the run divided by the operations of each thread.
 * The summary compares the two with 2 threads, where the shared word is
 * contended.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <atomic_ops.h>

#include <libspacersv/spacersv.h>

#include "bench_util.h"

/* One tree block of a 16 KiB-node tree: what one insertion allocates. */
#define USE_BYTES (UINT64_C(16) << 10)
/*
 * The rsv's chunk: 32 items at the library's default item_bytes (256 KiB,
 * btrfs's cost of one item insertion), i.e. what a transaction that
 * modifies 32 items reserves up front.  512 uses per refill.
 */
#define CHUNK_BYTES (UINT64_C(32) * (UINT64_C(256) << 10))
/* Operations per thread and run: the default invocation takes a few
 * seconds. */
#define DEFAULT_OPS UINT64_C(4000000)
#define DEFAULT_RUNS 5
#define MAX_RUNS 101
#define MAX_THREADS 2
/*
 * The pool is sized from the run so that what the writers hold never
 * passes a quarter of it: the preemptive heuristic (btrfs's
 * need_preemptive_reclaim) starts only when may_use reaches total >> clamp,
 * half the pool at the initial clamp of 1, and the fast path never has to
 * consider overcommit.
 */
#define POOL_HEADROOM 4
/* Largest --ops whose pool stays within SRSV_MAX_BYTES. */
#define MAX_OPS ((SRSV_MAX_BYTES / (POOL_HEADROOM * MAX_THREADS) - \
		  CHUNK_BYTES) / USE_BYTES)
#define CACHELINE 64

/* Flush callback calls: with this much room there must be none. */
static volatile AO_t flush_calls;

static int bench_flush(struct srsv_space *space, enum srsv_flush_state state,
		       uint64_t bytes, bool for_preempt, void *user)
{
	(void)space; (void)state; (void)bytes; (void)for_preempt; (void)user;
	AO_fetch_and_add1(&flush_calls);
	return -EOPNOTSUPP;
}

enum variant { V_RSV_USE, V_POOL_PER_USE, V_COUNT };

static const char *const variant_name[V_COUNT] = {
	[V_RSV_USE] = "rsv-use",
	[V_POOL_PER_USE] = "pool-per-use",
};

/* One writer thread.  Each has its own cache line(s), rsv included, so the
 * rsv-use writers share nothing but the pool. */
struct writer {
	pthread_t thread;
	struct srsv_rsv rsv;
	struct srsv_space *space;
	enum variant variant;
	uint64_t ops;
	pthread_barrier_t *start;
	uint64_t start_ns, end_ns;
	uint64_t cpu_ns;
	uint64_t refills;
	int error;			/* first failure, 0: none */
	const char *failed_call;
} __attribute__((aligned(CACHELINE)));

static void fail(struct writer *w, const char *call, int ret)
{
	if (!w->error) {
		w->error = ret ? ret : -EIO;
		w->failed_call = call;
	}
}

static void rsv_use_writer(struct writer *w)
{
	const char *call = "srsv_rsv_add";
	uint64_t used = 0;
	int ret;

	ret = srsv_rsv_add(&w->rsv, CHUNK_BYTES, SRSV_FLUSH_ALL, 0);
	for (uint64_t i = 0; !ret && i < w->ops; i++) {
		call = "srsv_rsv_use";
		ret = srsv_rsv_use(&w->rsv, USE_BYTES);
		if (ret == -ENOSPC) {
			w->refills++;
			call = "srsv_rsv_refill";
			ret = srsv_rsv_refill(&w->rsv, CHUNK_BYTES,
					      SRSV_FLUSH_ALL, 0);
			if (!ret) {
				call = "srsv_rsv_use";
				ret = srsv_rsv_use(&w->rsv, USE_BYTES);
			}
		}
		if (!ret)
			used += USE_BYTES;
	}
	if (ret)
		fail(w, call, ret);
	/* Give back what is held, failed or not. */
	ret = srsv_rsv_release(&w->rsv, SRSV_RSV_ALL, NULL);
	if (ret)
		fail(w, "srsv_rsv_release", ret);
	ret = srsv_space_release(w->space, used);
	if (ret)
		fail(w, "srsv_space_release", ret);
}

static void pool_per_use_writer(struct writer *w)
{
	uint64_t used = 0;
	int ret = 0;

	for (uint64_t i = 0; i < w->ops; i++) {
		ret = srsv_space_reserve(w->space, USE_BYTES, SRSV_FLUSH_ALL,
					 0);
		if (ret)
			break;
		used += USE_BYTES;
	}
	if (ret)
		fail(w, "srsv_space_reserve", ret);
	/* Give back what was reserved, failed or not. */
	ret = srsv_space_release(w->space, used);
	if (ret)
		fail(w, "srsv_space_release", ret);
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;

	pthread_barrier_wait(w->start);
	w->start_ns = now_ns();
	w->cpu_ns = thread_cpu_ns();
	if (w->variant == V_RSV_USE)
		rsv_use_writer(w);
	else
		pool_per_use_writer(w);
	w->cpu_ns = thread_cpu_ns() - w->cpu_ns;
	w->end_ns = now_ns();
	return NULL;
}

struct bench {
	struct srsv_ctx *ctx;
	struct srsv_space *space;
	uint64_t ops;
	double ns[V_COUNT][MAX_THREADS][MAX_RUNS];	/* ns/op per run */
	double cpu[V_COUNT][MAX_THREADS][MAX_RUNS];	/* CPU ns/op per run */
	uint64_t refills[V_COUNT][MAX_THREADS];		/* last run */
};

/*
 * One run of @v with @nthreads writers of @ops operations each; stores
 * wall ns/op in *ns and the writers' mean CPU ns/op in *cpu.  Returns 0,
 * or -EIO if a call failed or the pool is not back to zero afterwards.
 */
static int run_once(struct bench *b, enum variant v, unsigned nthreads,
		    uint64_t ops, double *ns, double *cpu)
{
	struct writer w[MAX_THREADS];
	pthread_barrier_t start;
	uint64_t first = UINT64_MAX, last = 0, refills = 0, cpu_ns = 0;
	struct srsv_space_info info;
	int ret, err = 0;

	pthread_barrier_init(&start, NULL, nthreads);
	for (unsigned i = 0; i < nthreads; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].space = b->space;
		w[i].variant = v;
		w[i].ops = ops;
		w[i].start = &start;
		if (v == V_RSV_USE) {
			ret = srsv_rsv_init(&w[i].rsv, b->space,
					    SRSV_RSV_TEMP);
			if (ret) {
				fprintf(stderr, "srsv_rsv_init: %s\n",
					strerror(-ret));
				exit(1);
			}
		}
		ret = pthread_create(&w[i].thread, NULL, writer_main, &w[i]);
		if (ret) {
			fprintf(stderr, "pthread_create: %s\n", strerror(ret));
			exit(1);
		}
	}
	for (unsigned i = 0; i < nthreads; i++) {
		pthread_join(w[i].thread, NULL);
		if (w[i].start_ns < first)
			first = w[i].start_ns;
		if (w[i].end_ns > last)
			last = w[i].end_ns;
		refills += w[i].refills;
		cpu_ns += w[i].cpu_ns;
		if (w[i].error) {
			fprintf(stderr, "%s, %u threads: %s failed: %s\n",
				variant_name[v], nthreads, w[i].failed_call,
				strerror(-w[i].error));
			err = -EIO;
		}
		if (v == V_RSV_USE) {
			ret = srsv_rsv_destroy(&w[i].rsv);
			if (ret) {
				fprintf(stderr, "srsv_rsv_destroy: %s\n",
					strerror(-ret));
				err = -EIO;
			}
		}
	}
	pthread_barrier_destroy(&start);
	*ns = (double)(last - first) / (double)ops;
	*cpu = (double)cpu_ns / (double)(ops * nthreads);
	b->refills[v][nthreads - 1] = refills;
	ret = srsv_space_snapshot(b->space, &info, NULL, 0, NULL);
	if (ret || info.may_use || info.nr_tickets ||
	    info.nr_priority_tickets) {
		fprintf(stderr, "%s, %u threads: pool not back to zero "
			"(may_use %" PRIu64 ")\n", variant_name[v], nthreads,
			ret ? 0 : info.may_use);
		err = -EIO;
	}
	return err;
}

struct stats {
	double median, min, max;
};

static struct stats stats_of(const double *ns, unsigned runs)
{
	double s[MAX_RUNS];
	struct stats st;

	memcpy(s, ns, runs * sizeof(*s));
	qsort(s, runs, sizeof(*s), cmp_double);
	st.median = runs % 2 ? s[runs / 2] :
		    (s[runs / 2 - 1] + s[runs / 2]) / 2;
	st.min = s[0];
	st.max = s[runs - 1];
	return st;
}

static int create_ctx(struct bench *b)
{
	struct srsv_config cfg;
	uint64_t pool;
	int ret;

	/* b->ops <= MAX_OPS: no overflow, within SRSV_MAX_BYTES */
	pool = POOL_HEADROOM * MAX_THREADS * (b->ops * USE_BYTES + CHUNK_BYTES);
	ret = srsv_config_init(&cfg);
	if (ret)
		return ret;
	cfg.flush = bench_flush;
	cfg.pool_bytes[SRSV_POOL_DATA] = pool;
	cfg.pool_bytes[SRSV_POOL_METADATA] = pool;
	ret = srsv_ctx_create(&cfg, &b->ctx);
	if (ret)
		return ret;
	b->space = srsv_ctx_space(b->ctx, SRSV_POOL_METADATA);
	return b->space ? 0 : -ENOENT;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench_rsv [--ops N] [--runs K] [--help] [--version]\n"
		"  --ops N   16 KiB operations per thread and run "
		"(default %" PRIu64 ")\n"
		"  --runs K  runs per variant, 1..%d; the median is reported "
		"(default %d)\n", DEFAULT_OPS, MAX_RUNS, DEFAULT_RUNS);
}

int main(int argc, char **argv)
{
	static struct bench b;
	uint64_t runs = DEFAULT_RUNS;
	double dummy, x, x1;
	int ret;

	b.ops = DEFAULT_OPS;
	static const struct option opts[] = {
		{ "ops", required_argument, NULL, 'o' },
		{ "runs", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (!parse_u64(optarg, &b.ops) || b.ops == 0 ||
			    b.ops > MAX_OPS)
				goto bad;
			break;
		case 'r':
			if (!parse_u64(optarg, &runs) || runs == 0 ||
			    runs > MAX_RUNS)
				goto bad;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			bench_print_version("bench_rsv");
			return 0;
		default:
			goto bad;
		}
	}
	if (optind < argc)
		goto bad;

	ret = create_ctx(&b);
	if (ret) {
		fprintf(stderr, "bench_rsv: ctx: %s\n", strerror(-ret));
		return 1;
	}
	printf("bench_rsv: %" PRIu64 "-byte uses, %" PRIu64 " per thread and "
	       "run, rsv chunk %" PRIu64 " bytes, median of %u runs\n",
	       USE_BYTES, b.ops, CHUNK_BYTES, (unsigned)runs);
	printf("ns/op = wall time of the run / operations per thread\n");
	print_load("at start");
	fflush(stdout);

	/* Warm-up, untimed. */
	for (int v = 0; v < V_COUNT; v++)
		if (run_once(&b, v, 1, b.ops / 10 + 1, &dummy, &dummy))
			goto invalid;
	for (unsigned r = 0; r < runs; r++) {
		for (int k = 0; k < V_COUNT; k++) {
			/* alternate the order from round to round */
			int v = r % 2 ? V_COUNT - 1 - k : k;

			for (unsigned t = 1; t <= MAX_THREADS; t++)
				if (run_once(&b, v, t, b.ops,
					     &b.ns[v][t - 1][r],
					     &b.cpu[v][t - 1][r]))
					goto invalid;
		}
	}

	print_load("at end");
	printf("%-7s %-13s %9s %9s %9s %10s %8s %8s\n", "threads",
	       "variant", "ns/op", "min", "max", "Mops/s", "cpu ns", "refills");
	for (unsigned t = 1; t <= MAX_THREADS; t++) {
		for (int v = 0; v < V_COUNT; v++) {
			struct stats st = stats_of(b.ns[v][t - 1],
						   (unsigned)runs);
			struct stats cpu = stats_of(b.cpu[v][t - 1],
						    (unsigned)runs);

			printf("%-7u %-13s %9.2f %9.2f %9.2f %10.2f %8.2f %8"
			       PRIu64 "\n", t, variant_name[v], st.median,
			       st.min, st.max, t * 1e3 / st.median,
			       cpu.median, b.refills[v][t - 1]);
		}
	}
	printf("flush callback calls: %lu (expected 0)\n",
	       (unsigned long)AO_load(&flush_calls));
	x1 = stats_of(b.ns[V_POOL_PER_USE][0], (unsigned)runs).median /
	     stats_of(b.ns[V_RSV_USE][0], (unsigned)runs).median;
	x = stats_of(b.ns[V_POOL_PER_USE][1], (unsigned)runs).median /
	    stats_of(b.ns[V_RSV_USE][1], (unsigned)runs).median;
	printf("1 thread: pool-per-use / rsv-use = %.2f\n", x1);
	printf("CPU time (load-independent): 1 thread %.2f, 2 threads %.2f\n",
	       stats_of(b.cpu[V_POOL_PER_USE][0], (unsigned)runs).median /
	       stats_of(b.cpu[V_RSV_USE][0], (unsigned)runs).median,
	       stats_of(b.cpu[V_POOL_PER_USE][1], (unsigned)runs).median /
	       stats_of(b.cpu[V_RSV_USE][1], (unsigned)runs).median);
	printf("goal: rsv_use_speedup >= 3 %s\n", x >= 3 ? "met" : "MISSED");
	srsv_ctx_destroy(b.ctx);
	printf("summary: rsv_use_speedup=%.2f\n", x);
	return AO_load(&flush_calls) ? 1 : 0;

invalid:
	srsv_ctx_destroy(b.ctx);
	fprintf(stderr, "bench_rsv: invalid run, no figures\n");
	return 1;
bad:
	usage(stderr);
	return 2;
}
