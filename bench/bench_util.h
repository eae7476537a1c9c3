/* SPDX-License-Identifier: MIT */
/*
 * Helpers the benchmarks share: clocks and sleeps, the machine's load and
 * steal time, argument parsing, a random generator, latency logs, sorting
 * for medians.  Header-only (static inline), so each bench stays one
 * translation unit.
 */
#ifndef SRSV_BENCH_UTIL_H
#define SRSV_BENCH_UTIL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <libspacersv/spacersv.h>

/* --version: the program and the library it runs on. */
static inline void bench_print_version(const char *prog)
{
	printf("%s (libspacersv) %s\n", prog, srsv_version());
}

static inline uint64_t bench_clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

/* Wall time, monotonic. */
static inline uint64_t now_ns(void)
{
	return bench_clock_ns(CLOCK_MONOTONIC);
}

/* Sleep until @deadline (CLOCK_MONOTONIC, ns), through signals. */
static inline void sleep_until(uint64_t deadline)
{
	struct timespec ts = {
		.tv_sec = (time_t)(deadline / UINT64_C(1000000000)),
		.tv_nsec = (long)(deadline % UINT64_C(1000000000)),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

/* Model sleeps are tens of µs: the default 50 µs timer slack would
 * double them.  Per thread; the library's own threads are left alone. */
static inline void tight_timers(void)
{
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
}

/* xorshift64*: cheap, and good enough to pick keys and leaves. */
static inline uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * UINT64_C(2685821657736338717);
}

/* CPU time of the calling thread: excludes the time other processes ran
 * on its core, which wall time on a shared machine does not. */
static inline uint64_t thread_cpu_ns(void)
{
	return bench_clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/*
 * Print the machine's load: other processes competing for the cores make
 * the figures slower and noisier, and the reader should know.
 */
static inline void print_load(const char *when)
{
	double load[1];

	if (getloadavg(load, 1) == 1)
		printf("load average %s: %.2f on %ld CPUs\n", when, load[0],
		       sysconf(_SC_NPROCESSORS_ONLN));
}

/*
 * The machine's CPU time so far, from the first line of /proc/stat (in
 * clock ticks): all of it, and the share "steal" (a virtual machine's
 * CPUs waiting for the host's).  On a shared host steal comes and goes,
 * and timing-sensitive figures move with it.  Both 0 if unreadable.
 */
struct cpu_ticks {
	uint64_t total, steal;
};

static inline struct cpu_ticks cpu_ticks_now(void)
{
	struct cpu_ticks t = { 0, 0 };
	unsigned long long v[8] = { 0 };
	FILE *f = fopen("/proc/stat", "r");

	if (!f)
		return t;
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
		   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8) {
		for (int i = 0; i < 8; i++)
			t.total += v[i];
		t.steal = v[7];
	}
	fclose(f);
	return t;
}

/* Steal between two readings, in % of the CPU time (NAN if unknown). */
static inline double cpu_steal_pct(struct cpu_ticks a, struct cpu_ticks b)
{
	if (b.total <= a.total)
		return 0.0 / 0.0;
	return 100.0 * (double)(b.steal - a.steal) /
	       (double)(b.total - a.total);
}

/*
 * The steal time of a whole bench and of its rounds, printed as
 * bench_stall prints it: the reader compares runs made under different
 * hosts' load with it.
 */
static inline void print_steal(struct cpu_ticks bench_start,
			       const double *per_round, unsigned rounds)
{
	double lo = per_round[0], hi = per_round[0];

	for (unsigned i = 1; i < rounds; i++) {
		lo = per_round[i] < lo ? per_round[i] : lo;
		hi = per_round[i] > hi ? per_round[i] : hi;
	}
	printf("steal (the host's share of this VM's CPU time): %.1f%%, "
	       "per round %.1f-%.1f%%\n",
	       cpu_steal_pct(bench_start, cpu_ticks_now()), lo, hi);
}

/* A non-negative integer argument (decimal, 0x hex or 0 octal). */
static inline bool parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-')
		return false;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

/* qsort() comparator for doubles. */
static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* qsort() comparator for uint64_t. */
static inline int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The median of @n doubles (sorts them). */
static inline double median_d(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A growing log of latencies (ns), one per thread. */
struct lat_log {
	uint64_t *ns;
	size_t nr, cap;
};

static inline int lat_push(struct lat_log *l, uint64_t ns)
{
	if (l->nr == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 65536;
		uint64_t *n = (uint64_t *)realloc(l->ns, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		l->ns = n;
		l->cap = cap;
	}
	l->ns[l->nr++] = ns;
	return 0;
}

#endif /* SRSV_BENCH_UTIL_H */
