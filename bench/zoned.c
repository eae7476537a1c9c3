/* SPDX-License-Identifier: MIT */
/*
 * bench_zoned: the zoned allocator hint against the pre-fix scan (upstream 02444f2ac26e).
 *
 * A simulated SMR disk (default 80,000 zones of 256 MiB, 20 TiB, no
 * active-zone limit) is filled sequentially with 1 MiB extents, as a large
 * file written front to back.  At every 1% of fill the time per allocation
 * is measured with two ways of finding the group to allocate in:
 *
 * - hint: srsv_zone_hint(), which walks the active list only;
 * - scan: what the allocator did before upstream 02444f2ac26e, walking
 *   every group of the pool from the first and checking its room.  The
 *   scan here reads the room lock-free (srsv_zone_group_room()); btrfs took
 *   each block group's lock, so this scan is a lower bound of the old cost
 *   and the speedup reported is conservative.
 *
 * Both then allocate in the group found (srsv_zone_group_alloc()).  Filling
 * 20 TiB with the scan would take hours, so the device is filled with the
 * hint and both methods are timed at each sampled level: several batches
 * of allocations with each method, the median batch of each.
 * The pool-level accounting (reserve, srsv_space_alloc, written, commit) is
 * done once per zone, outside the timed loops, so that both methods time
 * the same thing: finding the group and advancing its write pointer.
 *
 * Output: a CSV (fill_pct,hint_ns,scan_ns) and, last line,
 *   summary: flatness=F speedup_vs_scan=S
 * F = hint ns/allocation at 99% full over at 1% full (goal <= 1.2);
 * S = scan ns over hint ns at 99% full (goal >= 100).
 *
 * Usage: bench_zoned [--zones N] [--zone-mib M] [--extent-kib K]
 *                    [--batches B] [--clock cpu|wall] [--csv PATH]
 * The CSV defaults to bench_zoned.csv next to the executable (the build
 * directory), never into the source tree.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libspacersv/spacersv.h>

#define MIB (UINT64_C(1) << 20)
#define KIB (UINT64_C(1) << 10)

/* Allocations per timed hint batch: long enough (tens of microseconds) for
 * clock_gettime() overhead and timer resolution to vanish, short enough
 * that a batch stays within a few zones of its fill level. */
#define HINT_BATCH 1024
/* Allocations per timed scan batch: at 99% one scan walks ~79,000
 * groups, so a handful per batch already takes milliseconds. */
#define SCAN_BATCH 8
#define MAX_BATCHES 31
#define LEVELS 99

struct bench {
	struct srsv_ctx *ctx;
	struct srsv_space *pool;
	struct srsv_zone_group **groups;
	uint64_t nr_groups;
	uint64_t zone_bytes, extent_bytes;
	uint64_t next;		/* next group to activate */
	struct srsv_zone_group *current;	/* the one being filled */
	uint64_t allocs;	/* extents allocated so far */
};

/*
 * The timed batches read the calling thread's CPU clock by default: on a
 * shared machine a wall-clock batch also counts the time the thread was
 * descheduled, which has nothing to do with the allocator.  --clock wall
 * switches to CLOCK_MONOTONIC.
 */
static clockid_t batch_clock = CLOCK_THREAD_CPUTIME_ID;

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static void die(const char *what, int ret)
{
	fprintf(stderr, "bench_zoned: %s: %s\n", what, strerror(-ret));
	exit(1);
}

/*
 * The current zone is full: account it as written, then open the next
 * one and reserve its capacity in the pool (one reservation per zone
 * stands for the per-extent reservations of a real engine).
 */
static struct srsv_zone_group *next_zone(struct bench *b)
{
	struct srsv_zone_group *g;
	int ret;

	if (b->current) {
		ret = srsv_zone_group_written(b->current, b->zone_bytes);
		if (!ret)
			ret = srsv_space_commit_used(b->pool, b->zone_bytes);
		if (ret)
			die("written", ret);
		b->current = NULL;
	}
	if (b->next == b->nr_groups)
		return NULL;
	g = b->groups[b->next++];
	ret = srsv_zone_group_activate(g);
	if (!ret)
		ret = srsv_space_reserve(b->pool, b->zone_bytes, SRSV_NO_FLUSH,
					 0);
	if (!ret)
		ret = srsv_space_alloc(b->pool, b->zone_bytes);
	if (ret)
		die("activate", ret);
	b->current = g;
	return g;
}

/* One allocation found with the hint; false when the device is full. */
static bool alloc_hint(struct bench *b)
{
	struct srsv_zone_group *g;

	for (;;) {
		int ret = srsv_zone_hint(b->ctx, SRSV_ZONE_DATA,
					 b->extent_bytes, &g);

		if (ret == -ENOSPC) {
			if (!next_zone(b))
				return false;
			continue;
		}
		if (ret)
			die("hint", ret);
		ret = srsv_zone_group_alloc(g, b->extent_bytes, NULL);
		if (ret)
			die("alloc", ret);
		b->allocs++;
		return true;
	}
}

/* The pre-fix allocator: every group from the first, checking room. */
static bool alloc_scan(struct bench *b)
{
	for (;;) {
		struct srsv_zone_group *g = NULL;
		int ret;

		for (uint64_t i = 0; i < b->nr_groups; i++) {
			if (srsv_zone_group_room(b->groups[i]) >=
			    b->extent_bytes) {
				g = b->groups[i];
				break;
			}
		}
		if (!g)
			return false;
		ret = srsv_zone_group_alloc(g, b->extent_bytes, NULL);
		if (ret == -ENOSPC) {
			/* Room but not active: the old allocator activated
			 * the group it found; so do we, then retry. */
			if (!next_zone(b))
				return false;
			continue;
		}
		if (ret)
			die("alloc", ret);
		b->allocs++;
		return true;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Nanoseconds taken by @n allocations with @fn, 0 if the device filled. */
static uint64_t time_batch(struct bench *b, bool (*fn)(struct bench *),
			   unsigned n)
{
	uint64_t t0 = clock_ns(batch_clock);

	for (unsigned i = 0; i < n; i++)
		if (!fn(b))
			return 0;
	return clock_ns(batch_clock) - t0;
}

static void default_csv(char *buf, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n <= 0) {
		snprintf(buf, len, "bench_zoned.csv");
		return;
	}
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	snprintf(buf, len, "%s/bench_zoned.csv", exe);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench_zoned [--zones N] [--zone-mib N] [--extent-kib N]\n"
		"                   [--batches N] [--csv FILE] [--clock wall|cpu]\n"
		"                   [--help] [--version]\n"
		"  --zones N        zones of the simulated device (default 80000)\n"
		"  --zone-mib N     zone size (default 256)\n"
		"  --extent-kib N   allocation size (default 1024)\n"
		"  --batches N      timed batches per fill level (default 15)\n"
		"  --csv FILE       where the curve goes (default: next to the "
		"program)\n"
		"  --clock wall|cpu the batches' clock (default cpu)\n");
}

static uint64_t parse_u64(const char *s, const char *what)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (!*s || *end || !v) {
		fprintf(stderr, "bench_zoned: bad %s '%s'\n", what, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	uint64_t zones = 80000, zone_mib = 256, extent_kib = 1024;
	unsigned batches = 15;
	char csv_path[PATH_MAX + 32];	/* room for the exe dir + name */
	double hint_ns[LEVELS + 1] = { 0 }, scan_ns[LEVELS + 1] = { 0 };
	struct srsv_zoned_config zc;
	struct srsv_config cfg;
	struct bench b = { 0 };
	uint64_t total_allocs, t_start, budget;
	unsigned hint_batch, scan_batch;
	FILE *csv;
	int ret;

	default_csv(csv_path, sizeof(csv_path));
	static const struct option opts[] = {
		{ "zones", required_argument, NULL, 'z' },
		{ "zone-mib", required_argument, NULL, 'm' },
		{ "extent-kib", required_argument, NULL, 'e' },
		{ "batches", required_argument, NULL, 'b' },
		{ "csv", required_argument, NULL, 'c' },
		{ "clock", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'z':
			zones = parse_u64(optarg, "--zones");
			break;
		case 'm':
			zone_mib = parse_u64(optarg, "--zone-mib");
			break;
		case 'e':
			extent_kib = parse_u64(optarg, "--extent-kib");
			break;
		case 'b':
			batches = (unsigned)parse_u64(optarg, "--batches");
			break;
		case 'c':
			snprintf(csv_path, sizeof(csv_path), "%s", optarg);
			break;
		case 'k':
			if (!strcmp(optarg, "wall"))
				batch_clock = CLOCK_MONOTONIC;
			else if (!strcmp(optarg, "cpu"))
				batch_clock = CLOCK_THREAD_CPUTIME_ID;
			else {
				usage(stderr);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("bench_zoned (libspacersv) %s\n", srsv_version());
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (batches > MAX_BATCHES)
		batches = MAX_BATCHES;
	b.zone_bytes = zone_mib * MIB;
	b.extent_bytes = extent_kib * KIB;
	if (b.extent_bytes > b.zone_bytes || b.zone_bytes % b.extent_bytes) {
		fprintf(stderr, "bench_zoned: extents must divide the zone\n");
		return 2;
	}

	srsv_config_init(&cfg);
	cfg.flags = SRSV_CTX_MANUAL | SRSV_CTX_ZONED | SRSV_CTX_NO_PREEMPT;
	cfg.zone_bytes = b.zone_bytes;
	ret = srsv_ctx_create(&cfg, &b.ctx);
	if (ret)
		die("ctx", ret);
	srsv_zoned_config_init(&zc);	/* SMR: no active-zone limit */
	ret = srsv_zoned_init(b.ctx, &zc);
	if (ret)
		die("zoned", ret);
	b.pool = srsv_ctx_space(b.ctx, SRSV_POOL_DATA);
	b.nr_groups = zones;
	b.groups = calloc(zones, sizeof(*b.groups));
	if (!b.groups)
		die("groups", -ENOMEM);
	for (uint64_t i = 0; i < zones; i++) {
		ret = srsv_zone_group_add(b.ctx, SRSV_ZONE_DATA,
					  i * b.zone_bytes, b.zone_bytes,
					  b.zone_bytes, &b.groups[i]);
		if (ret)
			die("add", ret);
	}

	total_allocs = zones * (b.zone_bytes / b.extent_bytes);
	/* The timed allocations fill the device too: keep them within half
	 * of each 1% step, so that small devices (smoke runs) still reach
	 * 99% with room to measure.  The default device is far from it. */
	budget = total_allocs / 100 / 2 / batches;
	hint_batch = budget < HINT_BATCH ? budget : HINT_BATCH;
	scan_batch = budget < SCAN_BATCH ? budget : SCAN_BATCH;
	if (!hint_batch || !scan_batch) {
		fprintf(stderr, "bench_zoned: device too small to sample\n");
		return 2;
	}
	printf("device: %" PRIu64 " zones x %" PRIu64 " MiB = %.2f TiB, "
	       "extents %" PRIu64 " KiB, %" PRIu64 " allocations, "
	       "%u batches, %s clock\n",
	       zones, zone_mib, (double)(zones * b.zone_bytes) /
	       (double)(UINT64_C(1) << 40), extent_kib, total_allocs, batches,
	       batch_clock == CLOCK_MONOTONIC ? "wall" : "thread-cpu");
	t_start = now_ns();

	for (unsigned level = 1; level <= LEVELS; level++) {
		uint64_t target = total_allocs * level / 100;
		uint64_t h[MAX_BATCHES], s[MAX_BATCHES];

		/* Fill (untimed) up to the level, with the hint. */
		while (b.allocs < target)
			if (!alloc_hint(&b))
				break;
		/*
		 * The hint batches first, then the scan batches: a scan walks
		 * up to ~80,000 group structs and evicts everything the hint
		 * touches, so a hint batch right after a scan batch would
		 * time the bench's own cache pollution, and more of it the
		 * fuller the device.  (Only the first hint batch of a level
		 * follows a scan; the median drops it.)
		 */
		for (unsigned i = 0; i < batches; i++)
			h[i] = time_batch(&b, alloc_hint, hint_batch);
		for (unsigned i = 0; i < batches; i++)
			s[i] = time_batch(&b, alloc_scan, scan_batch);
		hint_ns[level] = (double)median(h, batches) / hint_batch;
		scan_ns[level] = (double)median(s, batches) / scan_batch;
		if (level == 1 || level % 10 == 0 || level == LEVELS)
			printf("fill %2u%%: hint %8.1f ns  scan %11.1f ns per "
			       "allocation\n", level, hint_ns[level],
			       scan_ns[level]);
	}

	csv = fopen(csv_path, "w");
	if (!csv) {
		perror(csv_path);
		return 1;
	}
	fprintf(csv, "fill_pct,hint_ns,scan_ns\n");
	for (unsigned level = 1; level <= LEVELS; level++)
		fprintf(csv, "%u,%.3f,%.3f\n", level, hint_ns[level],
			scan_ns[level]);
	fclose(csv);
	printf("csv: %s\n", csv_path);
	{
		struct srsv_zoned_info zi;

		/* The property of the fix itself: hints never walk full
		 * groups, so each looks at about one group. */
		if (!srsv_zoned_get_info(b.ctx, &zi) && zi.hints)
			printf("hints: %" PRIu64 ", groups looked per hint: "
			       "%.3f\n", zi.hints,
			       (double)zi.hint_groups_looked /
			       (double)zi.hints);
	}
	printf("run: %.1f s\n", (double)(now_ns() - t_start) / 1e9);
	srsv_ctx_destroy(b.ctx);
	free(b.groups);
	printf("summary: flatness=%.2f speedup_vs_scan=%.0f\n",
	       hint_ns[1] > 0 ? hint_ns[LEVELS] / hint_ns[1] : 0.0,
	       hint_ns[LEVELS] > 0 ? scan_ns[LEVELS] / hint_ns[LEVELS] : 0.0);
	return 0;
}
