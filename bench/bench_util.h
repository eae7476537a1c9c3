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
