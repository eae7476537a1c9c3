/* SPDX-License-Identifier: MIT */
/*
 * Helpers the benchmarks share: clocks, the machine's load, argument
 * parsing, sorting for medians.  Header-only (static inline), so each
 * bench stays one translation unit.
 */
#ifndef SRSV_BENCH_UTIL_H
#define SRSV_BENCH_UTIL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

#endif /* SRSV_BENCH_UTIL_H */
