/* SPDX-License-Identifier: MIT */
/*
 * logstore: the command line.  Opens (or creates) a store in DIR, runs
 * writer threads over it for a while, prints what the engine and the
 * library did, and optionally verifies the store.
 *
 * Each writer works for one tenant (writer i for tenant i % --tenants) on
 * keys "k000000000000042" (16 bytes) of its tenant.  An operation is a
 * put (a value that starts with its tenant, key number and a version, so
 * that a get can tell a value of another key), a delete (--delete-pct),
 * or a get that checks what it read (--get-pct).  --nowait-pct of the
 * puts are tried with LS_NOWAIT first and, on -EAGAIN, again from the
 * same thread without it: what an io_uring submitter does with a write
 * that would block.  -EDQUOT (the tenant is at its quota) and -ENOSPC
 * (the device is full of live data) are counted, not fatal.
 *
 * A second run on the same DIR is the restart recipe at work: the store
 * opens on the segments the first one left (log.c), with the index and
 * the pools as they were.  The data stays in DIR.
 *
 * Usage: logstore DIR [--threads N] [--seconds S] [--keys K]
 *                 [--value-size B] [--capacity SIZE] [--index-capacity SIZE]
 *                 [--tenants N] [--quota SIZE] [--delete-pct P]
 *                 [--get-pct P] [--nowait-pct P] [--bg-cleaner]
 *                 [--policy greedy|cost-benefit] [--seed N] [--quiet]
 *                 [--verify]
 * Exit status: 0 when every check passed, 1 otherwise, 2 on bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "logstore.h"

#define KEY_LEN 16
#define MAX_THREADS 64
/* The value's own header: tenant, key number, version, writer. */
#define VALUE_HDR 24
/* 4 KiB records: a 32-byte header, the 16-byte key, 4048 bytes. */
#define DEFAULT_VALUE 4048

struct opts {
	const char *dir;
	unsigned threads, tenants;
	double seconds;
	uint64_t keys, value_size, capacity, index_capacity, quota, seed;
	unsigned delete_pct, get_pct, nowait_pct;
	bool bg_cleaner, verify, quiet;
	enum ls_clean_policy policy;
};

struct run {
	const struct opts *o;
	struct logstore *ls;
	atomic_bool stop;
	_Atomic uint64_t puts, deletes, gets, nowait_tries, nowait_retried;
	_Atomic uint64_t enospc, edquot, enoent, bad_values, errors;
	_Atomic uint64_t max_put_ns;
	_Atomic uint64_t versions;
};

struct writer {
	struct run *run;
	pthread_t thread;
	unsigned id, tenant;
	uint64_t rng;
	unsigned char *val, *got;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

static double mib(uint64_t b)
{
	return (double)b / (1024.0 * 1024.0);
}

static void make_key(char *key, uint64_t k)
{
	char tmp[24];	/* k < 10^15 (parse_args()): 16 bytes and a NUL */

	snprintf(tmp, sizeof(tmp), "k%015" PRIu64, k);
	memcpy(key, tmp, KEY_LEN);
}

/* A value: its header, then bytes that depend on it. */
static void make_value(unsigned char *v, size_t len, unsigned tenant,
		       uint64_t k, uint64_t version, unsigned writer)
{
	uint64_t hdr[3] = { tenant, k, version << 8 | (writer & 0xff) };
	uint64_t s = (k * 0x9e3779b97f4a7c15u) ^ version;

	for (size_t off = 0; off < len; off++) {
		if (off % 8 == 0)
			s = s * 6364136223846793005u + 1442695040888963407u;
		v[off] = (unsigned char)(s >> (8 * (off % 8)));
	}
	memcpy(v, hdr, len < VALUE_HDR ? len : VALUE_HDR);
}

static void atomic_max(_Atomic uint64_t *p, uint64_t v)
{
	uint64_t cur = atomic_load(p);

	while (v > cur && !atomic_compare_exchange_weak(p, &cur, v))
		;
}

static void do_put(struct writer *w, const char *key, uint64_t k)
{
	struct run *run = w->run;
	const struct opts *o = run->o;
	uint64_t version = atomic_fetch_add(&run->versions, 1), t0 = now_ns();
	bool nowait = rng_next(&w->rng) % 100 < o->nowait_pct;
	int ret = -EAGAIN;

	make_value(w->val, o->value_size, w->tenant, k, version, w->id);
	if (nowait) {
		atomic_fetch_add(&run->nowait_tries, 1);
		ret = ls_put(run->ls, w->tenant, key, KEY_LEN, w->val,
			     o->value_size, LS_NOWAIT);
		if (ret == -EAGAIN)
			atomic_fetch_add(&run->nowait_retried, 1);
	}
	if (ret == -EAGAIN)
		ret = ls_put(run->ls, w->tenant, key, KEY_LEN, w->val,
			     o->value_size, 0);
	atomic_max(&run->max_put_ns, now_ns() - t0);
	if (!ret)
		atomic_fetch_add(&run->puts, 1);
	else if (ret == -ENOSPC)
		atomic_fetch_add(&run->enospc, 1);
	else if (ret == -EDQUOT)
		atomic_fetch_add(&run->edquot, 1);
	else
		atomic_fetch_add(&run->errors, 1);
}

static void do_get(struct writer *w, const char *key, uint64_t k)
{
	struct run *run = w->run;
	const struct opts *o = run->o;
	uint64_t hdr[3];
	size_t len = 0;
	int ret;

	ret = ls_get(run->ls, w->tenant, key, KEY_LEN, w->got, o->value_size,
		     &len);
	if (ret == -ENOENT) {
		atomic_fetch_add(&run->enoent, 1);
		return;
	}
	atomic_fetch_add(&run->gets, 1);
	if (ret || len != o->value_size) {
		atomic_fetch_add(&run->bad_values, 1);
		return;
	}
	memcpy(hdr, w->got, len < VALUE_HDR ? len : VALUE_HDR);
	if (len >= VALUE_HDR && (hdr[0] != w->tenant || hdr[1] != k))
		atomic_fetch_add(&run->bad_values, 1);
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct run *run = w->run;
	const struct opts *o = run->o;

	while (!atomic_load(&run->stop)) {
		uint64_t k = rng_next(&w->rng) % o->keys;
		unsigned dice = (unsigned)(rng_next(&w->rng) % 100);
		char key[KEY_LEN];
		int ret;

		make_key(key, k);
		if (dice < o->delete_pct) {
			ret = ls_delete(run->ls, w->tenant, key, KEY_LEN, 0);
			if (!ret)
				atomic_fetch_add(&run->deletes, 1);
			else if (ret == -ENOSPC)
				atomic_fetch_add(&run->enospc, 1);
			else if (ret != -ENOENT)
				atomic_fetch_add(&run->errors, 1);
		} else if (dice < o->delete_pct + o->get_pct) {
			do_get(w, key, k);
		} else {
			do_put(w, key, k);
		}
	}
	return NULL;
}

static void print_pool(const char *name, struct srsv_space *s)
{
	struct srsv_space_info i;

	if (srsv_space_snapshot(s, &i, NULL, 0, NULL))
		return;
	printf("  %-8s total %7.2f  used %7.2f  pinned %6.2f  reserved %5.2f"
	       "  may_use %5.2f MiB; tickets granted %" PRIu64 " failed %"
	       PRIu64 "; preemptive runs %" PRIu64 "\n", name, mib(i.total),
	       mib(i.used), mib(i.pinned), mib(i.reserved), mib(i.may_use),
	       i.tickets_granted, i.tickets_failed, i.preempt_runs);
}

/* What the library says about the DATA pool's writers: how long they
 * were stalled, on how many tickets, and who was asked to free space. */
static void print_library(struct logstore *ls, const struct srsv_space_stats *a,
			  double seconds)
{
	struct srsv_space *data = srsv_ctx_space(ls_ctx(ls), SRSV_POOL_DATA);
	const struct srsv_wait_stats *w;
	struct srsv_space_stats b;

	if (srsv_space_get_stats(data, &b))
		return;
	w = &b.modes[SRSV_FLUSH_DATA];
	printf("library (data)  tickets queued %.1f%% of the run; FLUSH_DATA "
	       "tickets %" PRIu64 " (failed %" PRIu64 "), longest wait %.1f ms;"
	       " COMMIT_TRANS calls %" PRIu64 " (preemptive %" PRIu64 ")\n",
	       seconds > 0 ? 100.0 * (double)(b.stalled_ns - a->stalled_ns) /
			     (seconds * 1e9) : 0.0,
	       w->tickets - a->modes[SRSV_FLUSH_DATA].tickets,
	       w->failed - a->modes[SRSV_FLUSH_DATA].failed,
	       (double)w->max_wait_ns / 1e6,
	       b.states[SRSV_STATE_COMMIT_TRANS].calls -
	       a->states[SRSV_STATE_COMMIT_TRANS].calls,
	       b.states[SRSV_STATE_COMMIT_TRANS].preempt_calls -
	       a->states[SRSV_STATE_COMMIT_TRANS].preempt_calls);
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: logstore DIR [options]\n"
"  --threads N          writer threads (default 4, at most 64)\n"
"  --seconds S          how long they run (default 3; 0: open, report, verify)\n"
"  --keys K             keys per tenant (default: half the capacity, live)\n"
"  --value-size B       value bytes (default 4048: 4 KiB records)\n"
"  --capacity SIZE      bytes the segment files may hold (default 64M;\n"
"                       K, M, G suffixes)\n"
"  --index-capacity SIZE  the index's METADATA pool (default capacity/32)\n"
"  --tenants N          tenants (default 2, at most 4)\n"
"  --quota SIZE         each tenant's limit on live value bytes (default none)\n"
"  --delete-pct P       operations that delete (default 5)\n"
"  --get-pct P          operations that read and check a key (default 10)\n"
"  --nowait-pct P       puts tried with LS_NOWAIT first (default 10)\n"
"  --bg-cleaner         run the engine's own background cleaner\n"
"  --policy NAME        cost-benefit (default) or greedy\n"
"  --seed N             writers' random seed (default 1)\n"
"  --verify             verify the store at the end (checksums, index, pools)\n"
"  --quiet              no progress lines\n"
"The data stays in DIR; a second run there reopens it.\n");
}

static bool parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-')
		return false;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno)
		return false;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end)
		return false;
	*out = v;
	return true;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lopts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "seconds", required_argument, NULL, 's' },
		{ "keys", required_argument, NULL, 'k' },
		{ "value-size", required_argument, NULL, 'v' },
		{ "capacity", required_argument, NULL, 'c' },
		{ "index-capacity", required_argument, NULL, 'i' },
		{ "tenants", required_argument, NULL, 'T' },
		{ "quota", required_argument, NULL, 'Q' },
		{ "delete-pct", required_argument, NULL, 'D' },
		{ "get-pct", required_argument, NULL, 'G' },
		{ "nowait-pct", required_argument, NULL, 'N' },
		{ "bg-cleaner", no_argument, NULL, 'b' },
		{ "policy", required_argument, NULL, 'p' },
		{ "seed", required_argument, NULL, 'r' },
		{ "verify", no_argument, NULL, 'V' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'W' },
		{ NULL, 0, NULL, 0 }
	};
	uint64_t v;
	int c;

	while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		bool ok = true;

		switch (c) {
		case 't': ok = parse_size(optarg, &v) && v && v <= MAX_THREADS;
			o->threads = (unsigned)v; break;
		case 's': o->seconds = strtod(optarg, NULL);
			ok = o->seconds >= 0 && o->seconds <= 3600; break;
		case 'k': ok = parse_size(optarg, &o->keys) && o->keys &&
			       o->keys < UINT64_C(1000000000000000); break;
		case 'v': ok = parse_size(optarg, &o->value_size) &&
			       o->value_size >= VALUE_HDR; break;
		case 'c': ok = parse_size(optarg, &o->capacity); break;
		case 'i': ok = parse_size(optarg, &o->index_capacity); break;
		case 'T': ok = parse_size(optarg, &v) && v &&
			       v <= LS_MAX_TENANTS;
			o->tenants = (unsigned)v; break;
		case 'Q': ok = parse_size(optarg, &o->quota); break;
		case 'D': ok = parse_size(optarg, &v) && v <= 100;
			o->delete_pct = (unsigned)v; break;
		case 'G': ok = parse_size(optarg, &v) && v <= 100;
			o->get_pct = (unsigned)v; break;
		case 'N': ok = parse_size(optarg, &v) && v <= 100;
			o->nowait_pct = (unsigned)v; break;
		case 'b': o->bg_cleaner = true; break;
		case 'p':
			if (!strcmp(optarg, "greedy"))
				o->policy = LS_CLEAN_GREEDY;
			else if (!strcmp(optarg, "cost-benefit"))
				o->policy = LS_CLEAN_COST_BENEFIT;
			else
				ok = false;
			break;
		case 'r': ok = parse_size(optarg, &o->seed); break;
		case 'V': o->verify = true; break;
		case 'q': o->quiet = true; break;
		case 'h': usage(stdout); exit(0);
		case 'W':
			printf("logstore (libspacersv) %s\n", srsv_version());
			exit(0);
		default: ok = false; break;
		}
		if (!ok) {
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1 || o->delete_pct + o->get_pct > 100) {
		usage(stderr);
		return 2;
	}
	o->dir = argv[optind];
	if (!o->keys)
		o->keys = o->capacity / 2 /
			  ls_record_bytes(KEY_LEN, o->value_size) / o->tenants;
	if (!o->keys)
		o->keys = 1;
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {
		.threads = 4, .tenants = 2, .seconds = 3,
		.value_size = DEFAULT_VALUE, .capacity = 64 << 20,
		.delete_pct = 5, .get_pct = 10, .nowait_pct = 10, .seed = 1,
		.policy = LS_CLEAN_COST_BENEFIT,
	};
	struct writer w[MAX_THREADS];
	struct srsv_space_stats first;
	struct ls_options lo;
	struct ls_stats st0, st;
	struct run run;
	unsigned started = 0;
	uint64_t t0, elapsed;
	double secs;
	int ret, status = 0;
	char err[256];

	ret = parse_args(argc, argv, &o);
	if (ret)
		return ret;
	memset(&lo, 0, sizeof(lo));
	lo.capacity = o.capacity;
	lo.index_capacity = o.index_capacity;
	lo.tenants = o.tenants;
	for (unsigned t = 0; t < o.tenants; t++)
		lo.quota[t] = o.quota;
	lo.bg_cleaner = o.bg_cleaner;
	lo.clean_policy = o.policy;

	memset(&run, 0, sizeof(run));
	run.o = &o;
	ret = ls_open(o.dir, &lo, &run.ls);
	if (ret) {
		fprintf(stderr, "logstore: %s: %s\n", o.dir, strerror(-ret));
		return 1;
	}
	ls_stats(run.ls, &st0);
	printf("logstore: %s: %" PRIu64 " segments (%" PRIu64 " records, %.2f "
	       "MiB live, %.2f MiB dead) loaded, %" PRIu64 " torn bytes cut; "
	       "capacity %.0f MiB, %u tenants x %" PRIu64 " keys, %" PRIu64
	       "-byte records, %u writers, %.1f s%s\n", o.dir,
	       st0.loaded_segments, st0.loaded_records, mib(st0.live_bytes),
	       mib(st0.dead_bytes), st0.torn_bytes, mib(o.capacity), o.tenants,
	       o.keys, ls_record_bytes(KEY_LEN, o.value_size), o.threads,
	       o.seconds, o.bg_cleaner ? ", background cleaner" : "");
	if (srsv_space_get_stats(srsv_ctx_space(ls_ctx(run.ls), SRSV_POOL_DATA),
				 &first))
		memset(&first, 0, sizeof(first));

	t0 = now_ns();
	for (; o.seconds > 0 && started < o.threads; started++) {
		struct writer *x = &w[started];

		x->run = &run;
		x->id = started;
		x->tenant = started % o.tenants;
		x->rng = o.seed * 0x9e3779b97f4a7c15u + started + 1;
		x->val = malloc(o.value_size);
		x->got = malloc(o.value_size);
		if (!x->val || !x->got ||
		    pthread_create(&x->thread, NULL, writer_main, x)) {
			free(x->val);
			free(x->got);
			fprintf(stderr, "logstore: cannot start writer %u\n",
				started);
			status = 1;
			break;
		}
	}
	for (uint64_t next = t0 + 1000000000u; started;
	     next += 1000000000u) {
		uint64_t deadline = t0 + (uint64_t)(o.seconds * 1e9);
		uint64_t until = next < deadline ? next : deadline, now = now_ns();
		struct timespec ts;

		if (now >= deadline)
			break;
		if (until > now) {
			ts.tv_sec = (time_t)((until - now) / 1000000000u);
			ts.tv_nsec = (long)((until - now) % 1000000000u);
			nanosleep(&ts, NULL);
		}
		if (!o.quiet && now_ns() < deadline && !ls_stats(run.ls, &st))
			printf("[%4.1fs] puts %8" PRIu64 "  live %6.2f MiB  dead "
			       "%6.2f MiB  segments %4" PRIu64 "  cleaned %5"
			       PRIu64 "\n", (double)(now_ns() - t0) / 1e9,
			       atomic_load(&run.puts), mib(st.live_bytes),
			       mib(st.dead_bytes), st.segments,
			       st.segments_cleaned);
	}
	atomic_store(&run.stop, true);
	for (unsigned i = 0; i < started; i++) {
		pthread_join(w[i].thread, NULL);
		free(w[i].val);
		free(w[i].got);
	}
	elapsed = now_ns() - t0;
	secs = (double)elapsed / 1e9;

	ls_stats(run.ls, &st);
	if (started) {
		printf("operations      puts %" PRIu64 " (%.0f/s), deletes %"
		       PRIu64 ", gets %" PRIu64 " (%" PRIu64 " of absent keys);"
		       " -ENOSPC %" PRIu64 ", -EDQUOT %" PRIu64 "; NOWAIT puts %"
		       PRIu64 ", %" PRIu64 " retried blocking; longest put %.1f "
		       "ms\n", atomic_load(&run.puts),
		       (double)atomic_load(&run.puts) / secs,
		       atomic_load(&run.deletes), atomic_load(&run.gets),
		       atomic_load(&run.enoent), atomic_load(&run.enospc),
		       atomic_load(&run.edquot), atomic_load(&run.nowait_tries),
		       atomic_load(&run.nowait_retried),
		       (double)atomic_load(&run.max_put_ns) / 1e6);
		printf("reservations    writers spent %.1f%% of their time in "
		       "them\n", 100.0 * (double)(st.reserve_ns - st0.reserve_ns) /
		       ((double)elapsed * started));
		print_library(run.ls, &first, secs);
	}
	printf("cleaner         %" PRIu64 " segments cleaned (%.1f MiB back), "
	       "%.1f MiB live copied (%.2f per byte put), %" PRIu64
	       " copies lost to a newer put; flush callback %" PRIu64
	       " passes, background %" PRIu64 "; no headroom %" PRIu64
	       " times (cleaner_reserve), %" PRIu64 " segments left "
	       "half-copied\n", st.segments_cleaned, mib(st.cleaned_bytes),
	       mib(st.moved_bytes),
	       st.put_bytes ? (double)st.moved_bytes / (double)st.put_bytes : 0.0,
	       st.lost_copies, st.flush_calls, st.bg_passes, st.cleaner_enospc,
	       st.clean_aborted);
	printf("store           %" PRIu64 " segments, %.2f MiB: %.2f live, %.2f "
	       "dead; %" PRIu64 " keys, %" PRIu64 " live tombstones, %" PRIu64
	       " index entries; movers' reserve %.2f MiB\n", st.segments,
	       mib(st.file_bytes), mib(st.live_bytes), mib(st.dead_bytes),
	       st.keys, st.tombstones, st.entries,
	       mib(st.cleaner_reserve_held));
	printf("pools:\n");
	print_pool("data", srsv_ctx_space(ls_ctx(run.ls), SRSV_POOL_DATA));
	print_pool("metadata", srsv_ctx_space(ls_ctx(run.ls),
					      SRSV_POOL_METADATA));
	for (unsigned t = 0; t < o.tenants; t++) {
		struct srsv_quota_info qi;

		if (srsv_quota_snapshot(ls_quota(run.ls, t), &qi))
			continue;
		if (qi.limit == SRSV_QUOTA_NO_LIMIT)
			printf("  tenant %u used %.2f MiB (no limit)\n", t,
			       mib(qi.used));
		else
			printf("  tenant %u used %.2f MiB of %.2f MiB, %" PRIu64
			       " puts refused\n", t, mib(qi.used),
			       mib(qi.limit), qi.edquot);
	}
	if (atomic_load(&run.bad_values) || atomic_load(&run.errors)) {
		fprintf(stderr, "logstore: %" PRIu64 " bad values read, %" PRIu64
			" unexpected errors\n", atomic_load(&run.bad_values),
			atomic_load(&run.errors));
		status = 1;
	}
	if (ls_error(run.ls, err, sizeof(err))) {
		fprintf(stderr, "logstore: internal error: %s\n", err);
		status = 1;
	}
	if (o.verify) {
		struct ls_verify_report rep;

		ret = ls_verify(run.ls, &rep);
		if (ret) {
			fprintf(stderr, "verify: FAILED: %s\n", rep.error);
			status = 1;
		} else {
			printf("verify: OK: %" PRIu64 " segments, %" PRIu64
			       " records re-read with good checksums; the index "
			       "is what a restart rebuilds (%" PRIu64 " keys, %"
			       PRIu64 " live tombstones, %" PRIu64 " ghosts); "
			       "the pools and quotas hold what the engine holds"
			       " (%.2f MiB live, %.2f MiB dead)\n", rep.segments,
			       rep.records, rep.keys, rep.tombstones, rep.ghosts,
			       mib(rep.live_bytes), mib(rep.dead_bytes));
		}
	}
	ret = ls_close(run.ls);
	if (ret) {
		fprintf(stderr, "logstore: close: %s\n", strerror(-ret));
		status = 1;
	}
	printf("%s\n", status ? "logstore: FAILED" : "logstore: OK");
	return status;
}
