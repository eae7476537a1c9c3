/* SPDX-License-Identifier: MIT */
/*
 * bench/fastpath: what a reservation that fits costs.
 *
 * Each thread runs a fixed number of "pairs": reserve 4096 bytes, release
 * them, on a pool with plenty of room, so nothing ever waits.  Four ways of
 * doing that are measured in the same process, 1 and 2 threads:
 *
 *   cas       a bare compare-and-swap bounded counter
 *             (load; if cur + n > limit fail; CAS): the physical floor, one
 *             atomic read-modify-write per reserve and one per release;
 *   mutex     a counter under a pthread mutex;
 *   throttle  a mutex + condvar FIFO throttle like Ceph's Throttle (what a
 *             user would write): get() always takes the mutex and queues
 *             behind earlier waiters, put() signals the head waiter;
 *   lib       srsv_space_reserve(space, 4096, SRSV_FLUSH_ALL, 0) +
 *             srsv_space_release() on a METADATA pool, with preemptive
 *             flushing off (SRSV_CTX_NO_PREEMPT) and on (the default),
 *             and with per-CPU caches (cpu_cache_bytes = 64 KiB, the
 *             configuration for several writer threads; the summary's).
 *
 * Every 1-thread run starts from a fresh object (ctx), as a single-writer
 * application would: a pool whose caches two threads once engaged keeps
 * them engaged, and that is the 2-thread case.  The table's 2-thread
 * rows reuse the object of the 1-thread run before them.
 *
 * Runs are interleaved (run 1 of every variant, then run 2, ...) so that a
 * drift of the machine's speed hits every variant alike; each figure is the
 * median of the runs.  ns/pair is the time one thread spends per pair:
 * wall time of the run (first thread's start to last thread's end) divided
 * by the pairs each thread did.
 *
 * --overhead (tracing builds only): the library with its
 * tracepoints compiled in but no session, against the same sources built
 * with tracing disabled, in one process.  bench/meson.build links two static
 * copies: the traced libspacersv.a and a tracing-free one whose symbols are
 * renamed srsv_* -> srsvu_* (objcopy --redefine-syms), so both have the same
 * linkage and differ only by the tracepoints.
 *
 * Every run checks that no reservation failed and that the counter is back
 * to zero afterwards; a run that breaks either makes the bench exit 1.
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

/* The measured size: one page, a small metadata item. */
#define PAIR_BYTES UINT64_C(4096)
/*
 * Pool size: "plenty of room".  Two threads hold at most 8 KiB at once, and
 * the preemptive heuristic (btrfs's need_preemptive_reclaim) does nothing
 * while may_use + pinned stay under 128 MiB, so with 1 GiB neither the
 * admission check nor preemptive flushing can ever say no.
 */
#define POOL_BYTES (UINT64_C(1) << 30)
/* Pairs per thread and run: about 0.05-0.3 s per run on a 2020s x86 core,
 * so the default invocation stays under 20 s. */
#define DEFAULT_OPS UINT64_C(2000000)
#define DEFAULT_RUNS 5
#define MAX_RUNS 101
#define MAX_THREADS 2
/* Warm-up run before the timed ones: 1/WARMUP_DIV of the pairs. */
#define WARMUP_DIV 10
/* Keeps each shared object on its own cache line (x86-64: 64 bytes), so
 * that the variants contend only on what they really share. */
#define CACHELINE 64

/* ------------------------------------------------------------------ */
/* cas: the physical floor */

struct cas_counter {
	volatile AO_t cur;
	uint64_t limit;
} __attribute__((aligned(CACHELINE)));

static inline bool cas_get(struct cas_counter *c, uint64_t n)
{
	AO_t cur = AO_load(&c->cur), seen;

	for (;;) {
		if (cur + n > c->limit)
			return false;
		seen = AO_fetch_compare_and_swap_full(&c->cur, cur, cur + n);
		if (seen == cur)
			return true;
		cur = seen;
	}
}

static inline void cas_put(struct cas_counter *c, uint64_t n)
{
	AO_fetch_and_add_full(&c->cur, (AO_t)0 - n);
}

/* ------------------------------------------------------------------ */
/* mutex: a counter under a lock */

struct mutex_counter {
	pthread_mutex_t lock;
	uint64_t cur;			/* protected by lock */
	uint64_t limit;
} __attribute__((aligned(CACHELINE)));

static inline bool mutex_get(struct mutex_counter *c, uint64_t n)
{
	bool ok;

	pthread_mutex_lock(&c->lock);
	ok = c->cur + n <= c->limit;
	if (ok)
		c->cur += n;
	pthread_mutex_unlock(&c->lock);
	return ok;
}

static inline void mutex_put(struct mutex_counter *c, uint64_t n)
{
	pthread_mutex_lock(&c->lock);
	c->cur -= n;
	pthread_mutex_unlock(&c->lock);
}

/* ------------------------------------------------------------------ */
/*
 * throttle: Ceph's Throttle (src/common/Throttle.cc) as a C user would
 * write it.  Strict FIFO: get() waits while the request does not fit *or*
 * anyone is already waiting, each waiter on its own condvar; the head
 * passes the baton to the next when it leaves, put() signals the head.  The
 * mutex is taken on every call, even when there is room.
 */

struct throttle_waiter {
	pthread_cond_t cond;
	struct throttle_waiter *next;
};

struct throttle {
	pthread_mutex_t lock;
	uint64_t count;			/* protected by lock */
	uint64_t max;
	struct throttle_waiter *head, *tail;	/* protected by lock */
} __attribute__((aligned(CACHELINE)));

/* Ceph's _should_wait(): a request larger than the limit passes alone. */
static inline bool throttle_should_wait(const struct throttle *t, uint64_t c)
{
	return t->max && ((c <= t->max && t->count + c > t->max) ||
			  (c >= t->max && t->count > t->max));
}

static void throttle_wait(struct throttle *t, uint64_t c)
{
	struct throttle_waiter w = { .next = NULL };

	pthread_cond_init(&w.cond, NULL);
	if (t->tail)
		t->tail->next = &w;
	else
		t->head = &w;
	t->tail = &w;
	while (throttle_should_wait(t, c) || t->head != &w)
		pthread_cond_wait(&w.cond, &t->lock);
	t->head = w.next;
	if (!t->head)
		t->tail = NULL;
	else
		pthread_cond_signal(&t->head->cond);
	pthread_cond_destroy(&w.cond);
}

static inline void throttle_get(struct throttle *t, uint64_t c)
{
	pthread_mutex_lock(&t->lock);
	if (throttle_should_wait(t, c) || t->head)
		throttle_wait(t, c);
	t->count += c;
	pthread_mutex_unlock(&t->lock);
}

static inline void throttle_put(struct throttle *t, uint64_t c)
{
	pthread_mutex_lock(&t->lock);
	if (t->head)
		pthread_cond_signal(&t->head->cond);
	t->count -= c;
	pthread_mutex_unlock(&t->lock);
}

/* ------------------------------------------------------------------ */
/* lib: the library, possibly in two builds */

#ifdef SRSV_BENCH_UNTRACED
/*
 * The tracing-free copy linked by bench/meson.build in tracing builds:
 * the same sources with SRSV_TRACING 0, every srsv_* symbol renamed
 * srsvu_*.  Only what this bench calls is declared.
 */
int srsvu_config_init_sized(struct srsv_config *cfg, size_t size);
int srsvu_ctx_create(const struct srsv_config *cfg, struct srsv_ctx **out);
int srsvu_ctx_destroy(struct srsv_ctx *ctx);
struct srsv_space *srsvu_ctx_space(struct srsv_ctx *ctx, enum srsv_pool kind);
int srsvu_space_reserve(struct srsv_space *space, uint64_t bytes,
			enum srsv_flush mode, unsigned flags);
int srsvu_space_release(struct srsv_space *space, uint64_t bytes);
int srsvu_space_snapshot_sized(struct srsv_space *space,
			       struct srsv_space_info *info,
			       struct srsv_ticket_info *tickets, size_t max,
			       size_t *nr_tickets, size_t info_size,
			       size_t ticket_size);
#endif

/* Set-up calls of one build of the library (not on the timed path). */
struct lib_api {
	int (*config_init_sized)(struct srsv_config *cfg, size_t size);
	int (*ctx_create)(const struct srsv_config *cfg, struct srsv_ctx **out);
	int (*ctx_destroy)(struct srsv_ctx *ctx);
	struct srsv_space *(*ctx_space)(struct srsv_ctx *ctx,
					enum srsv_pool kind);
	int (*snapshot_sized)(struct srsv_space *space,
			      struct srsv_space_info *info,
			      struct srsv_ticket_info *tickets, size_t max,
			      size_t *nr_tickets, size_t info_size,
			      size_t ticket_size);
};

static const struct lib_api lib_default = {
	srsv_config_init_sized, srsv_ctx_create, srsv_ctx_destroy,
	srsv_ctx_space, srsv_space_snapshot_sized
};

#ifdef SRSV_BENCH_UNTRACED
static const struct lib_api lib_untraced = {
	srsvu_config_init_sized, srsvu_ctx_create, srsvu_ctx_destroy,
	srsvu_ctx_space, srsvu_space_snapshot_sized
};
#endif

struct lib_param {
	const struct lib_api *api;
	bool preempt;
	uint64_t cache_bytes;	/* srsv_config.cpu_cache_bytes */
};

/* The per-CPU cache variant's batch. */
#define CACHE_BYTES (UINT64_C(64) << 10)

struct lib_obj {
	const struct lib_api *api;
	struct srsv_ctx *ctx;
	struct srsv_space *space;
};

/* Flush callback calls: with this much room there must be none. */
static volatile AO_t flush_calls;

static int bench_flush(struct srsv_space *space, enum srsv_flush_state state,
		       uint64_t bytes, bool for_preempt, void *user)
{
	(void)space; (void)state; (void)bytes; (void)for_preempt; (void)user;
	AO_fetch_and_add1(&flush_calls);
	return -EOPNOTSUPP;
}

typedef int (*reserve_fn)(struct srsv_space *space, uint64_t bytes,
			  enum srsv_flush mode, unsigned flags);
typedef int (*release_fn)(struct srsv_space *space, uint64_t bytes);

/*
 * The timed loop of the library variants.  Always inlined with constant
 * function pointers, so each copy calls its build directly, exactly as an
 * application would.
 */
static inline __attribute__((always_inline)) uint64_t
lib_pairs(struct srsv_space *s, uint64_t ops, reserve_fn reserve,
	  release_fn release)
{
	uint64_t failed = 0;

	for (uint64_t i = 0; i < ops; i++) {
		if (reserve(s, PAIR_BYTES, SRSV_FLUSH_ALL, 0)) {
			failed++;
			continue;
		}
		if (release(s, PAIR_BYTES))
			failed++;
	}
	return failed;
}

/* ------------------------------------------------------------------ */
/* Variants */

struct variant {
	const char *name;
	/* Create the shared object; 0 or a negative errno. */
	int (*setup)(struct variant *v);
	/* Timed: @ops pairs on v->obj; returns how many failed. */
	uint64_t (*loop)(void *obj, uint64_t ops);
	/* After a run: 0 if the counter is back to zero. */
	int (*check)(struct variant *v);
	void (*teardown)(struct variant *v);
	const void *param;
	void *obj;
	double ns[MAX_THREADS][MAX_RUNS];	/* ns/pair per run */
	double cpu[MAX_THREADS][MAX_RUNS];	/* CPU ns/pair per run */
};

static int cas_setup(struct variant *v)
{
	struct cas_counter *c = aligned_alloc(CACHELINE, sizeof(*c));

	if (!c)
		return -ENOMEM;
	AO_store(&c->cur, 0);
	c->limit = POOL_BYTES;
	v->obj = c;
	return 0;
}

static uint64_t cas_loop(void *obj, uint64_t ops)
{
	struct cas_counter *c = obj;
	uint64_t failed = 0;

	for (uint64_t i = 0; i < ops; i++) {
		if (!cas_get(c, PAIR_BYTES)) {
			failed++;
			continue;
		}
		cas_put(c, PAIR_BYTES);
	}
	return failed;
}

static int cas_check(struct variant *v)
{
	struct cas_counter *c = v->obj;

	return AO_load(&c->cur) == 0 ? 0 : -EIO;
}

static void free_teardown(struct variant *v)
{
	free(v->obj);
	v->obj = NULL;
}

static int mutex_setup(struct variant *v)
{
	struct mutex_counter *c = aligned_alloc(CACHELINE, sizeof(*c));

	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->lock, NULL);
	c->cur = 0;
	c->limit = POOL_BYTES;
	v->obj = c;
	return 0;
}

static uint64_t mutex_loop(void *obj, uint64_t ops)
{
	struct mutex_counter *c = obj;
	uint64_t failed = 0;

	for (uint64_t i = 0; i < ops; i++) {
		if (!mutex_get(c, PAIR_BYTES)) {
			failed++;
			continue;
		}
		mutex_put(c, PAIR_BYTES);
	}
	return failed;
}

static int mutex_check(struct variant *v)
{
	struct mutex_counter *c = v->obj;
	uint64_t cur;

	pthread_mutex_lock(&c->lock);
	cur = c->cur;
	pthread_mutex_unlock(&c->lock);
	return cur == 0 ? 0 : -EIO;
}

static void mutex_teardown(struct variant *v)
{
	struct mutex_counter *c = v->obj;

	pthread_mutex_destroy(&c->lock);
	free_teardown(v);
}

static int throttle_setup(struct variant *v)
{
	struct throttle *t = aligned_alloc(CACHELINE, sizeof(*t));

	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	t->count = 0;
	t->max = POOL_BYTES;
	t->head = t->tail = NULL;
	v->obj = t;
	return 0;
}

static uint64_t throttle_loop(void *obj, uint64_t ops)
{
	struct throttle *t = obj;

	/* get() cannot fail: it waits.  With this much room it never does. */
	for (uint64_t i = 0; i < ops; i++) {
		throttle_get(t, PAIR_BYTES);
		throttle_put(t, PAIR_BYTES);
	}
	return 0;
}

static int throttle_check(struct variant *v)
{
	struct throttle *t = v->obj;
	bool clean;

	pthread_mutex_lock(&t->lock);
	clean = t->count == 0 && !t->head;
	pthread_mutex_unlock(&t->lock);
	return clean ? 0 : -EIO;
}

static void throttle_teardown(struct variant *v)
{
	struct throttle *t = v->obj;

	pthread_mutex_destroy(&t->lock);
	free_teardown(v);
}

static int lib_setup(struct variant *v)
{
	const struct lib_param *p = v->param;
	struct lib_obj *o = calloc(1, sizeof(*o));
	struct srsv_config cfg;
	int ret;

	if (!o)
		return -ENOMEM;
	o->api = p->api;
	ret = o->api->config_init_sized(&cfg, sizeof(cfg));
	if (ret)
		goto fail;
	cfg.flags = p->preempt ? 0 : SRSV_CTX_NO_PREEMPT;
	cfg.cpu_cache_bytes = p->cache_bytes;
	cfg.flush = bench_flush;
	cfg.pool_bytes[SRSV_POOL_DATA] = POOL_BYTES;
	cfg.pool_bytes[SRSV_POOL_METADATA] = POOL_BYTES;
	ret = o->api->ctx_create(&cfg, &o->ctx);
	if (ret)
		goto fail;
	o->space = o->api->ctx_space(o->ctx, SRSV_POOL_METADATA);
	if (!o->space) {
		o->api->ctx_destroy(o->ctx);
		ret = -ENOENT;
		goto fail;
	}
	v->obj = o;
	return 0;
fail:
	free(o);
	return ret;
}

static uint64_t lib_loop(void *obj, uint64_t ops)
{
	struct lib_obj *o = obj;

	return lib_pairs(o->space, ops, srsv_space_reserve, srsv_space_release);
}

#ifdef SRSV_BENCH_UNTRACED
static uint64_t lib_untraced_loop(void *obj, uint64_t ops)
{
	struct lib_obj *o = obj;

	return lib_pairs(o->space, ops, srsvu_space_reserve,
			 srsvu_space_release);
}
#endif

static int lib_check(struct variant *v)
{
	struct lib_obj *o = v->obj;
	struct srsv_space_info info;
	int ret = o->api->snapshot_sized(o->space, &info, NULL, 0, NULL,
					 sizeof(info), 0);

	if (ret)
		return ret;
	return info.may_use == 0 && info.nr_tickets == 0 &&
	       info.nr_priority_tickets == 0 ? 0 : -EIO;
}

static void lib_teardown(struct variant *v)
{
	struct lib_obj *o = v->obj;

	o->api->ctx_destroy(o->ctx);
	free_teardown(v);
}

static const struct lib_param lib_nopreempt_param = { &lib_default, false, 0 };
static const struct lib_param lib_preempt_param = { &lib_default, true, 0 };
static const struct lib_param lib_cache_param = { &lib_default, true,
						  CACHE_BYTES };
#ifdef SRSV_BENCH_UNTRACED
static const struct lib_param lib_untraced_param = { &lib_untraced, true, 0 };
#endif

enum { V_CAS, V_MUTEX, V_THROTTLE, V_LIB_NOPREEMPT, V_LIB_PREEMPT,
       V_LIB_CACHE, V_COUNT };

static struct variant compare_variants[V_COUNT] = {
	[V_CAS] = { "cas", cas_setup, cas_loop, cas_check, free_teardown,
		    NULL, NULL, {{0}}, {{0}} },
	[V_MUTEX] = { "mutex", mutex_setup, mutex_loop, mutex_check,
		      mutex_teardown, NULL, NULL, {{0}}, {{0}} },
	[V_THROTTLE] = { "throttle", throttle_setup, throttle_loop,
			 throttle_check, throttle_teardown, NULL, NULL,
			 {{0}}, {{0}} },
	[V_LIB_NOPREEMPT] = { "lib (preempt off)", lib_setup, lib_loop,
			      lib_check, lib_teardown, &lib_nopreempt_param,
			      NULL, {{0}}, {{0}} },
	[V_LIB_PREEMPT] = { "lib (preempt on)", lib_setup, lib_loop,
			    lib_check, lib_teardown, &lib_preempt_param,
			    NULL, {{0}}, {{0}} },
	[V_LIB_CACHE] = { "lib (per-CPU cache 64K)", lib_setup, lib_loop,
			  lib_check, lib_teardown, &lib_cache_param, NULL,
			  {{0}}, {{0}} },
};

#ifdef SRSV_BENCH_UNTRACED
enum { O_TRACED, O_UNTRACED, O_COUNT };

static struct variant overhead_variants[O_COUNT] = {
	[O_TRACED] = { "lib, tracing compiled in", lib_setup, lib_loop,
		       lib_check, lib_teardown, &lib_preempt_param, NULL,
		       {{0}}, {{0}} },
	[O_UNTRACED] = { "lib, tracing disabled", lib_setup,
			 lib_untraced_loop, lib_check, lib_teardown,
			 &lib_untraced_param, NULL, {{0}}, {{0}} },
};
#endif

/* ------------------------------------------------------------------ */
/* Running */

struct worker {
	pthread_t thread;
	struct variant *v;
	uint64_t ops;
	pthread_barrier_t *start;
	uint64_t start_ns, end_ns;
	uint64_t cpu_ns;
	uint64_t failed;
} __attribute__((aligned(CACHELINE)));

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	pthread_barrier_wait(w->start);
	w->start_ns = now_ns();
	w->cpu_ns = thread_cpu_ns();
	w->failed = w->v->loop(w->v->obj, w->ops);
	w->cpu_ns = thread_cpu_ns() - w->cpu_ns;
	w->end_ns = now_ns();
	return NULL;
}

/*
 * One run of @v with @nthreads threads of @ops pairs each.  Stores the
 * wall ns/pair in *ns and the threads' mean CPU ns/pair in *cpu.  Returns
 * 0, or -EIO if a pair failed or the counter is not back to zero (the
 * bench is then invalid).
 */
static int run_once(struct variant *v, unsigned nthreads, uint64_t ops,
		    double *ns, double *cpu)
{
	struct worker w[MAX_THREADS];
	pthread_barrier_t start;
	uint64_t first = UINT64_MAX, last = 0, failed = 0, cpu_ns = 0;
	int ret;

	pthread_barrier_init(&start, NULL, nthreads);
	for (unsigned i = 0; i < nthreads; i++) {
		w[i] = (struct worker){ .v = v, .ops = ops, .start = &start };
		ret = pthread_create(&w[i].thread, NULL, worker_main, &w[i]);
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
		failed += w[i].failed;
		cpu_ns += w[i].cpu_ns;
	}
	pthread_barrier_destroy(&start);
	*ns = (double)(last - first) / (double)ops;
	*cpu = (double)cpu_ns / (double)(ops * nthreads);
	if (failed) {
		fprintf(stderr, "%s: %" PRIu64 " pairs failed\n", v->name,
			failed);
		return -EIO;
	}
	ret = v->check(v);
	if (ret) {
		fprintf(stderr, "%s: counter not back to zero after a run\n",
			v->name);
		return -EIO;
	}
	return 0;
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

/*
 * Set up every variant, warm each up, then @runs rounds; in each round
 * every variant runs once with each thread count.  Odd rounds go through
 * the variants in reverse order, so that none always runs right after the
 * same neighbour.
 */
static int measure(struct variant *vs, unsigned nv, uint64_t ops,
		   unsigned runs)
{
	double dummy;
	int ret;

	for (unsigned i = 0; i < nv; i++) {
		ret = vs[i].setup(&vs[i]);
		if (ret) {
			fprintf(stderr, "%s: setup failed: %s\n", vs[i].name,
				strerror(-ret));
			return ret;
		}
	}
	for (unsigned i = 0; i < nv; i++) {
		ret = run_once(&vs[i], 1, ops / WARMUP_DIV + 1, &dummy,
			       &dummy);
		if (ret)
			return ret;
	}
	for (unsigned r = 0; r < runs; r++) {
		for (unsigned k = 0; k < nv; k++) {
			unsigned i = r % 2 ? nv - 1 - k : k;

			for (unsigned t = 1; t <= MAX_THREADS; t++) {
				if (t == 1 && r > 0) {
					/* A fresh object (see the top). */
					vs[i].teardown(&vs[i]);
					vs[i].obj = NULL;
					ret = vs[i].setup(&vs[i]);
					if (ret)
						return ret;
				}
				ret = run_once(&vs[i], t, ops,
					       &vs[i].ns[t - 1][r],
					       &vs[i].cpu[t - 1][r]);
				if (ret)
					return ret;
			}
		}
	}
	return 0;
}

static void teardown_all(struct variant *vs, unsigned nv)
{
	for (unsigned i = 0; i < nv; i++)
		if (vs[i].obj)
			vs[i].teardown(&vs[i]);
}

/*
 * ns/pair: median wall figure, with the fastest and slowest run; Mpairs/s:
 * all threads together, from the median; cpu ns: median of the threads'
 * mean CPU time per pair (the time they actually ran).
 */
static void print_table(struct variant *vs, unsigned nv, unsigned runs)
{
	printf("%-7s %-26s %9s %9s %9s %10s %8s\n", "threads", "variant",
	       "ns/pair", "min", "max", "Mpairs/s", "cpu ns");
	for (unsigned t = 1; t <= MAX_THREADS; t++) {
		for (unsigned i = 0; i < nv; i++) {
			struct stats st = stats_of(vs[i].ns[t - 1], runs);
			struct stats cpu = stats_of(vs[i].cpu[t - 1], runs);

			printf("%-7u %-26s %9.2f %9.2f %9.2f %10.2f %8.2f\n",
			       t, vs[i].name, st.median, st.min, st.max,
			       t * 1e3 / st.median, cpu.median);
		}
	}
}

static double median_of(struct variant *v, unsigned threads, unsigned runs)
{
	return stats_of(v->ns[threads - 1], runs).median;
}

static const char *goal(bool met)
{
	return met ? "met" : "MISSED";
}

static int bench_compare(uint64_t ops, unsigned runs)
{
	struct variant *vs = compare_variants;
	double r1, r2, r3, lib_st, lib_mt;
	int ret;

	printf("bench_fastpath: %" PRIu64 "-byte reserve+release pairs, "
	       "%" PRIu64 " pairs per thread and run, median of %u runs\n",
	       PAIR_BYTES, ops, runs);
	printf("library: %s\n",
#ifdef SRSV_BENCH_UNTRACED
	       "static libspacersv.a, tracing compiled in (no session)"
#else
	       "libspacersv shared library"
#endif
	      );
	printf("ns/pair = wall time of the run / pairs per thread "
	       "(time one thread spends per pair)\n");
	print_load("at start");
	fflush(stdout);
	ret = measure(vs, V_COUNT, ops, runs);
	if (ret) {
		teardown_all(vs, V_COUNT);
		return 1;
	}
	print_load("at end");
	print_table(vs, V_COUNT, runs);
	printf("flush callback calls: %lu (expected 0)\n",
	       (unsigned long)AO_load(&flush_calls));

	printf("default configuration (no caches): st_ratio_vs_cas=%.2f "
	       "st_speedup_vs_throttle=%.2f mt_speedup_vs_throttle=%.2f\n",
	       median_of(&vs[V_LIB_PREEMPT], 1, runs) /
	       median_of(&vs[V_CAS], 1, runs),
	       median_of(&vs[V_THROTTLE], 1, runs) /
	       median_of(&vs[V_LIB_PREEMPT], 1, runs),
	       median_of(&vs[V_THROTTLE], 2, runs) /
	       median_of(&vs[V_LIB_PREEMPT], 2, runs));
	/* The summary: per-CPU caches configured, preemption on. */
	lib_st = median_of(&vs[V_LIB_CACHE], 1, runs);
	lib_mt = median_of(&vs[V_LIB_CACHE], 2, runs);
	r1 = lib_st / median_of(&vs[V_CAS], 1, runs);
	r2 = median_of(&vs[V_THROTTLE], 1, runs) / lib_st;
	r3 = median_of(&vs[V_THROTTLE], 2, runs) / lib_mt;
	printf("same ratios from CPU time (load-independent, 1 thread): "
	       "st_ratio_vs_cas=%.2f st_speedup_vs_throttle=%.2f\n",
	       stats_of(vs[V_LIB_CACHE].cpu[0], runs).median /
	       stats_of(vs[V_CAS].cpu[0], runs).median,
	       stats_of(vs[V_THROTTLE].cpu[0], runs).median /
	       stats_of(vs[V_LIB_CACHE].cpu[0], runs).median);
	printf("goals: st_ratio_vs_cas <= 2.0 %s, st_speedup_vs_throttle "
	       ">= 1.5 %s, mt_speedup_vs_throttle >= 2.0 %s\n",
	       goal(r1 <= 2.0), goal(r2 >= 1.5), goal(r3 >= 2.0));
	teardown_all(vs, V_COUNT);
	printf("summary: st_ratio_vs_cas=%.2f st_speedup_vs_throttle=%.2f "
	       "mt_speedup_vs_throttle=%.2f\n", r1, r2, r3);
	return AO_load(&flush_calls) ? 1 : 0;
}

static int bench_overhead(uint64_t ops, unsigned runs)
{
#ifdef SRSV_BENCH_UNTRACED
	struct variant *vs = overhead_variants;
	double x, paired[MAX_RUNS];
	int ret;

	printf("bench_fastpath --overhead: tracing compiled in (no session) "
	       "vs disabled, %" PRIu64 "-byte reserve+release pairs, "
	       "%" PRIu64 " pairs per thread and run, median of %u runs\n",
	       PAIR_BYTES, ops, runs);
	printf("both copies static, same sources and flags; the second has "
	       "SRSV_TRACING 0 and symbols renamed srsvu_*\n");
	print_load("at start");
	fflush(stdout);
	ret = measure(vs, O_COUNT, ops, runs);
	if (ret) {
		teardown_all(vs, O_COUNT);
		return 1;
	}
	print_load("at end");
	print_table(vs, O_COUNT, runs);
	for (unsigned r = 0; r < runs; r++)
		paired[r] = vs[O_TRACED].ns[0][r] / vs[O_UNTRACED].ns[0][r];
	x = median_of(&vs[O_TRACED], 1, runs) /
	    median_of(&vs[O_UNTRACED], 1, runs);
	printf("1 thread: ratio of medians %.3f, median of paired per-run "
	       "ratios %.3f\n", x, stats_of(paired, runs).median);
	printf("1 thread, CPU time: ratio of medians %.3f\n",
	       stats_of(vs[O_TRACED].cpu[0], runs).median /
	       stats_of(vs[O_UNTRACED].cpu[0], runs).median);
	printf("2 threads: ratio of medians %.3f\n",
	       median_of(&vs[O_TRACED], 2, runs) /
	       median_of(&vs[O_UNTRACED], 2, runs));
	printf("goal: disabled_overhead <= 1.05 %s\n", goal(x <= 1.05));
	teardown_all(vs, O_COUNT);
	printf("summary: disabled_overhead=%.3f\n", x);
	return 0;
#else
	(void)ops; (void)runs;
	fprintf(stderr, "bench_fastpath: --overhead needs a build with "
		"tracing compiled in (meson setup -Dtracing=enabled)\n");
	return 2;
#endif
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench_fastpath [--ops N] [--runs K] [--overhead] "
		"[--help] [--version]\n"
		"  --ops N     pairs per thread and run (default %" PRIu64 ")\n"
		"  --runs K    runs per variant, 1..%d; the median is "
		"reported (default %d)\n"
		"  --overhead  tracing compiled in vs disabled (tracing "
		"builds)\n", DEFAULT_OPS, MAX_RUNS, DEFAULT_RUNS);
}

int main(int argc, char **argv)
{
	uint64_t ops = DEFAULT_OPS, runs = DEFAULT_RUNS;
	bool overhead = false;

	static const struct option opts[] = {
		{ "ops", required_argument, NULL, 'o' },
		{ "runs", required_argument, NULL, 'r' },
		{ "overhead", no_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (!parse_u64(optarg, &ops) || ops == 0)
				goto bad;
			break;
		case 'r':
			if (!parse_u64(optarg, &runs) || runs == 0 ||
			    runs > MAX_RUNS)
				goto bad;
			break;
		case 'O':
			overhead = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			bench_print_version("bench_fastpath");
			return 0;
		default:
			goto bad;
		}
	}
	if (optind < argc)
		goto bad;
	return overhead ? bench_overhead(ops, (unsigned)runs) :
			  bench_compare(ops, (unsigned)runs);
bad:
	usage(stderr);
	return 2;
}
