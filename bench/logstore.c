// SPDX-License-Identifier: MIT
/*
 * bench/logstore.c - cleaning policies for a log-structured store, side by
 * side: what writers wait for when the pool that fills is a DATA pool.
 *
 * The engine is examples/logstore, in this process, on real files: 1 MiB
 * segments appended in a directory the bench makes (on /dev/shm when it is
 * a tmpfs, else in $TMPDIR or /tmp), removed after every run and on exit.
 * A run never holds more than --capacity-mib (32 MiB by default) there:
 * the store's DATA pool refuses anything beyond, and the bench checks
 * before it starts that the file system has four times that free.
 *
 * THE DEVICE
 *
 * On tmpfs a write costs a memcpy, and on this machine's disk an
 * fdatasync() costs whatever the host and the other tenants make it
 * cost: neither is a device whose rate is bounded and reproducible.  So
 * the device is modelled as bench/stall.c models its own: one queue,
 * requests served in submission order at --device-mib-s, the schedule
 * booked at submission (bench_model.h's dev_clock).  The store calls the
 * model for every append (its on_write hook, where RocksDB would call its
 * rate_limiter): a writer's record and every record the cleaner copies
 * share the one queue, so cleaning costs device time exactly as its
 * copies' bytes, and write amplification costs throughput.  An append
 * returns once the device is at most --device-queue-ms (4) behind its
 * bytes, as a buffered write returns into the page cache and waits at
 * the dirty limit.  Reads (the cleaner reads each segment it cleans) come
 * from the page cache, free.  Booking at submission keeps the device's
 * rate exact on a loaded 2-core machine, and the queue keeps it busy
 * through a thread's late wake-up.
 *
 * THE LOAD
 *
 * --writers threads put 4 KiB records (a 16-byte key, a 4048-byte value)
 * at --offered-pct of the device's rate together (150%: more than the
 * device takes, so that some policy must say who waits, and where), each
 * writer paced by a virtual clock as bench/stall.c paces its writers (a
 * wait is lost time, a late wake-up of the thread is made up).  The store
 * is first loaded with its working set, --live-pct of the capacity, once
 * (device off), so every run starts aged the same way.  Workloads:
 *
 * - overwrite: each put overwrites a key of the working set drawn at
 *   random: dead bytes spread over every segment, cleaning copies live
 *   data.
 * - bulk-unpin: each writer overwrites its share of the working set in
 *   order, again and again, so segments die whole and one cleaning pass
 *   (a commit) gives a large share of the pool back at once: the sawtooth
 *   case.  Its figure: the throughput of each 100 ms window of the
 *   saturated phase against the median window.
 *
 * THE POLICIES
 *
 * One entry each in policies[]: a name, a setup function for the ctx's
 * config (what the library does), and whether the engine runs its own
 * background cleaner and a WriteController delay in front of its puts
 * (what the engine does).  Every policy has the store's movers' reserve
 * (one segment, examples/logstore/cleaner.c): the cleaner's only
 * headroom.
 *
 * - tickets: btrfs's data behaviour (SRSV_CTX_NO_DATA_PREEMPT).  Writers
 *   reserve with FLUSH_DATA, wait on tickets when the pool is full, and
 *   the async data walk calls the store's COMMIT_TRANS, which cleans.
 *   Nothing cleans before.
 * - preempt: the library's defaults.  The data pool's preemptive flusher
 *   calls COMMIT_TRANS (one segment per call) while the debt (the pinned
 *   dead bytes) is at least 3/4 of the room not used >> (clamp - 1); tickets as above
 *   when it falls behind.
 * - pace: the defaults plus data pacing from --pace-pct of the debt's
 *   fill (srsv_config::data_pace_start_pct): writers are delayed inside
 *   their reservation so that together they are admitted at the measured
 *   rate of freed bytes.
 * - cleaner: btrfs's data behaviour, plus the store's own background
 *   cleaner (bcachefs copygc style): it starts below 15% of the capacity
 *   free and stops above 25%.
 * - wc: the background cleaner, plus RocksDB's WriteController in front
 *   of every put (bench_model.h), with the dead bytes as the debt
 *   (RocksDB's pending compaction bytes): delays from --wc-soft-pct of the
 *   room the live data leaves (capacity - live), rate x0.8 / x1.25 steps,
 *   a stop at --wc-stop-pct.
 * The engine-side policies (cleaner, wc) run with btrfs's data behaviour
 * so that what they measure is the engine's work alone: with the
 * library's preemption on as well, two cleaners would share the work.
 *
 * THE FIGURES, per policy (median of --runs rounds, every policy once
 * per round, in reverse order every other round; the host's steal time
 * printed per round): puts/s; the writers' stall (their time inside the
 * library's reservations, tickets and pacing sleeps alike, plus the
 * WriteController's delay, over their run time); p50, p99 and longest put
 * latency (everything from asking to done: delay, reservation, the device
 * queue); write amplification (bytes the cleaner copied per byte put);
 * the cleaner's -ENOSPC count (no room for its copies); puts refused with
 * -ENOSPC; FLUSH_DATA tickets, their longest wait and the data pool's
 * preemptive calls (the library's view); the sawtooth figure; and the
 * latency floor.  The floor: a writer's put and its own work (put_ns)
 * take 1/(its share of the puts/s) together, so at a policy's throughput
 * X the mean put latency is writers x (1/X - 1/offered puts/s): the delay
 * every put must lose on average for the offered rate to come down to
 * what the device gives the puts.  No policy's mean can be under it at
 * that throughput, and a policy that spreads the loss evenly (pacing) has
 * its p99 near it; the table gives p99 over it.  A CSV timeline of the
 * median run (100 ms windows: puts, free bytes, dead bytes, cleaner
 * bytes, the writers' stall, each window's actual length) goes to
 * --csv-dir for tools/plot_logstore.py.  Every run ends with the store's
 * verify pass (the pools equal what the engine holds, to the byte); a
 * run that fails it makes the bench exit 1.
 *
 * Last line: summary: data_stall_pct=S tput_vs_best_engine=T
 * wa_vs_best_engine=W p99_vs_wc=P cleaner_enospc=E sawtooth_min_window=M
 * pace_p99_vs_floor=F.  On the overwrite workload: S is the preempt
 * policy's (the library's defaults) stall in percent, T and W its puts/s
 * and write amplification over those of the best engine-side policy
 * (cleaner or wc, by puts/s), P the pace policy's p99 over wc's, F the
 * pace policy's p99 over its floor.  E is the cleaner's -ENOSPC count
 * summed over every run of the library policies (tickets, preempt, pace),
 * both workloads.  M is the preempt policy's sawtooth on bulk-unpin.
 */
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "logstore.h"

#include "bench_model.h"
#include "bench_util.h"

#define KIB (UINT64_C(1) << 10)
#define MIB (UINT64_C(1) << 20)
#define NSEC_PER_MSEC UINT64_C(1000000)
#define NSEC_PER_SEC UINT64_C(1000000000)
#define KEY_LEN 16
#define MAX_WRITERS 64
#define MAX_RUNS 64
/* A writer sleeps once its virtual clock is this far ahead: sleeping per
 * put (tens of µs) would measure the timer. */
#define PACE_SLACK_NS (100 * 1000)
/* How long the bench waits for writers blocked in the store once told
 * to stop (one stuck longer is an engine or library bug). */
#define STOP_GRACE_NS (10 * NSEC_PER_SEC)
/* The pace policy's srsv_config::data_pace_start_pct (main() says why). */
#define DEFAULT_PACE_PCT 75
/* tmpfs's f_type (linux/magic.h). */
#define TMPFS_MAGIC_NR 0x01021994

enum workload { WL_OVERWRITE = 0, WL_BULK, WL_COUNT };
static const char *const workload_names[WL_COUNT] = {
	"overwrite", "bulk-unpin"
};

struct params {
	unsigned writers, runs;
	uint64_t duration_ms;
	uint64_t capacity;
	unsigned live_pct;
	uint64_t value_size;
	uint64_t device_rate;		/* bytes/s */
	uint64_t device_queue_ns;
	unsigned offered_pct;
	unsigned window_ms;
	unsigned bg_low_pct, bg_high_pct;
	unsigned wc_soft_pct, wc_stop_pct, wc_recalc_ms;
	uint64_t wc_rate;		/* 0: the device's rate */
	unsigned pace_pct;		/* pace: data_pace_start_pct */
	unsigned policies;		/* bit per policies[] entry */
	unsigned workloads;
	const char *csv_dir, *dir;
	uint64_t seed;
};

/* ---- the policies ---- */

struct policy {
	const char *name;
	const char *what;
	/* The ctx's config, before srsv_ctx_create() (the library's part). */
	void (*setup)(struct srsv_config *cfg, const struct params *p);
	bool bg_cleaner;	/* the engine's own background cleaner */
	bool wc_delay;		/* a WriteController delay before each put */
};

/* btrfs's data behaviour: only tickets reclaim a data pool. */
static void btrfs_data(struct srsv_config *cfg, const struct params *p)
{
	(void)p;
	cfg->flags |= SRSV_CTX_NO_DATA_PREEMPT;
}

/* The library's defaults: data pools flushed preemptively by their debt. */
static void library_defaults(struct srsv_config *cfg, const struct params *p)
{
	(void)cfg;
	(void)p;
}

/* The defaults and data pacing. */
static void data_pacing(struct srsv_config *cfg, const struct params *p)
{
	cfg->data_pace_start_pct = p->pace_pct;
}

static const struct policy policies[] = {
	{ "tickets", "btrfs's data behaviour (SRSV_CTX_NO_DATA_PREEMPT): "
	  "FLUSH_DATA tickets, the store cleans in COMMIT_TRANS when they "
	  "wait", btrfs_data, false, false },
	{ "preempt", "library defaults: the data pool's preemptive flusher "
	  "cleans when the dead (pinned) bytes reach 3/4 of the room not "
	  "used >> (clamp - 1)", library_defaults, false, false },
	{ "pace", "library defaults + data pacing from --pace-pct of the "
	  "debt's fill", data_pacing, false, false },
	{ "cleaner", "btrfs's data behaviour + the store's background cleaner "
	  "at free-space watermarks (bcachefs copygc)", btrfs_data, true,
	  false },
	{ "wc", "btrfs's data behaviour + the background cleaner and RocksDB's "
	  "WriteController delay by dead bytes", btrfs_data, true, true },
};
#define NR_POLICIES (sizeof(policies) / sizeof(policies[0]))
#define POLICY_TICKETS 0
#define POLICY_PREEMPT 1
#define POLICY_PACE 2
#define POLICY_WC 4
_Static_assert(POLICY_WC + 1 == NR_POLICIES, "policies[] and its indexes");

/* The library's policies: the store cleans only when the library asks. */
static bool library_policy(unsigned m)
{
	return !policies[m].bg_cleaner && !policies[m].wc_delay;
}

/* ---- the device ---- */

struct device {
	pthread_mutex_t lock;
	struct dev_clock clock;
	uint64_t rate;			/* bytes/s */
	uint64_t queue_ns;		/* --device-queue-ms */
	atomic_bool on;			/* off while the store is loaded */
};

/*
 * The store's on_write hook: book the bytes on the device, and return
 * once what is queued in front of their end is no more than the queue's
 * depth (the page cache's dirty limit: a buffered append returns when
 * its bytes are in the cache, and waits when the device is that far
 * behind).  The same rule for writers and the cleaner: they share the
 * device and its queue.  A queue a few milliseconds deep also keeps the
 * device busy when a thread wakes up late on a loaded machine.
 */
/* The calling thread's time asleep in device_write() so far, and how
 * late it woke up in all (after the time it asked for: the machine's
 * share): a writer reads both around each put. */
static __thread uint64_t device_wait_ns, device_late_ns;

static void device_write(struct device *d, uint64_t bytes, enum ls_writer who)
{
	static __thread bool slack_set;
	uint64_t end, t;

	(void)who;
	if (!atomic_load(&d->on))
		return;
	/* Library workers and the store's cleaner are not ours to set up
	 * at their start: the first write does it. */
	if (!slack_set) {
		tight_timers();
		slack_set = true;
	}
	pthread_mutex_lock(&d->lock);
	end = dev_clock_book(&d->clock, bytes * NSEC_PER_SEC / d->rate);
	pthread_mutex_unlock(&d->lock);
	t = now_ns();
	if (end > t + d->queue_ns) {
		uint64_t woke;

		sleep_until(end - d->queue_ns);
		woke = now_ns();
		device_wait_ns += woke - t;
		device_late_ns += woke - (end - d->queue_ns);
	}
}

/* ---- one run ---- */

struct writer {
	struct run *run;
	pthread_t thread;
	unsigned id;
	uint64_t rng;
	uint64_t next;			/* bulk-unpin: next key of its share */
	struct lat_log lat;
	struct lat_log rest;		/* latency less the device's wait */
	struct lat_log late;		/* the device sleep's late wake-up */
	_Atomic uint64_t throttled_ns;	/* in the WriteController */
	uint64_t puts, enospc, errors;
};

struct window {
	double t_ms;			/* its end, from the run's start */
	double dt_ms;			/* its length (a late wake-up
					 * lengthens it) */
	uint64_t puts;			/* in the window */
	uint64_t free_bytes, dead_bytes;
	uint64_t cleaner_bytes;		/* copied in the window */
	uint64_t stall_ns;		/* writers' stall in the window */
};

struct run {
	const struct params *p;
	const struct policy *pol;
	enum workload wl;
	struct logstore *ls;
	struct srsv_space *data;
	struct device dev;
	struct write_controller wc;
	atomic_bool stop;
	uint64_t keys, rec_bytes, put_ns;
	struct writer w[MAX_WRITERS];
	atomic_uint writers_done;
	struct window *win;
	size_t nr_win, max_win;
	pthread_t sampler, monitor;
	char dir[4200];
};

struct result {
	bool ok;
	double puts_per_s;
	double stall, reserve_share, wc_share, queued_share;
	uint64_t p50_ns, p99_ns, max_ns;
	uint64_t rest_p99_ns;		/* p99 of latency less device wait */
	uint64_t late_p99_ns;		/* p99 of the device's late wake-up */
	double wa;
	uint64_t cleaner_enospc, put_enospc, errors;
	uint64_t tickets, tickets_failed, max_wait_ns, preempt_calls;
	uint64_t paced;			/* reservations pacing delayed */
	uint64_t clamp_raised, clamp_lowered;	/* the data pool's clamp */
	double pace_share;		/* their sleep over the writers' time */
	uint64_t flush_calls, bg_passes, cleaned;
	uint64_t wc_delays, wc_stops;
	double device_busy;
	double saw_min, saw_median;
	unsigned saw_windows;
	char check[600];
};

/* The store's hooks: the policy's ctx config, and the device. */
static void configure(struct srsv_config *cfg, void *arg)
{
	struct run *r = arg;

	r->pol->setup(cfg, r->p);
}

static void on_write(void *arg, uint64_t bytes, enum ls_writer who)
{
	struct run *r = arg;

	device_write(&r->dev, bytes, who);
}

static uint64_t pool_free(struct srsv_space *s)
{
	struct srsv_space_info i;
	uint64_t held;

	if (srsv_space_snapshot(s, &i, NULL, 0, NULL))
		return 0;
	held = i.used + i.reserved + i.pinned + i.may_use + i.readonly;
	return i.total > held ? i.total - held : 0;
}

static void key_of(char *key, uint64_t k)
{
	char tmp[32];

	snprintf(tmp, sizeof(tmp), "k%015" PRIu64, k % UINT64_C(1000000000000000));
	memcpy(key, tmp, KEY_LEN);
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct run *r = w->run;
	const struct params *p = r->p;
	uint64_t share = r->keys / p->writers, vt = now_ns();
	unsigned char *val = malloc(p->value_size);

	tight_timers();
	if (!val) {
		w->errors++;
		atomic_fetch_add(&r->writers_done, 1);
		return NULL;
	}
	memset(val, 0x5a, p->value_size);
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		uint64_t k, t0, t1, dev0, late0, waited = 0;
		char key[KEY_LEN];
		int ret;

		if (r->wl == WL_BULK)
			k = w->id * share + w->next++ % share;
		else
			k = rng_next(&w->rng) % r->keys;
		key_of(key, k);
		memcpy(val, &vt, sizeof(vt));
		t0 = now_ns();
		dev0 = device_wait_ns;
		late0 = device_late_ns;
		if (r->pol->wc_delay)
			waited = wc_before_write(&r->wc, r->rec_bytes, &r->stop);
		ret = ls_put(r->ls, 0, key, KEY_LEN, val, p->value_size, 0);
		t1 = now_ns();
		atomic_fetch_add_explicit(&w->throttled_ns, waited,
					  memory_order_relaxed);
		if (lat_push(&w->lat, t1 - t0) ||
		    lat_push(&w->rest, t1 - t0 - (device_wait_ns - dev0)) ||
		    lat_push(&w->late, device_late_ns - late0))
			w->errors++;
		if (!ret)
			w->puts++;
		else if (ret == -ENOSPC)
			w->enospc++;
		else
			w->errors++;
		/* What it waited is lost; its own work is one put_ns. */
		vt += t1 - t0 + r->put_ns;
		if (vt > now_ns() + PACE_SLACK_NS)
			sleep_until(vt);
	}
	free(val);
	atomic_fetch_add(&r->writers_done, 1);
	return NULL;
}

/* The writers' stall so far: their time in the library's reservations
 * (the store counts it) and in the WriteController. */
static uint64_t stall_ns(struct run *r, uint64_t reserve_ns)
{
	uint64_t t = reserve_ns;

	for (unsigned i = 0; i < r->p->writers; i++)
		t += atomic_load(&r->w[i].throttled_ns);
	return t;
}

static void *sampler_main(void *arg)
{
	struct run *r = arg;
	uint64_t start = now_ns(), next = start, puts0, moved0, stall0;
	struct ls_stats st;

	tight_timers();
	if (ls_stats(r->ls, &st))
		return NULL;
	puts0 = st.puts;
	moved0 = st.moved_bytes;
	stall0 = stall_ns(r, st.reserve_ns);
	while (!atomic_load(&r->stop) && r->nr_win < r->max_win) {
		struct window *w = &r->win[r->nr_win];
		double prev = r->nr_win ? w[-1].t_ms : 0;
		uint64_t stall;

		next += (uint64_t)r->p->window_ms * NSEC_PER_MSEC;
		sleep_until(next);
		if (atomic_load(&r->stop) || ls_stats(r->ls, &st))
			break;
		stall = stall_ns(r, st.reserve_ns);
		w->t_ms = (double)(now_ns() - start) / NSEC_PER_MSEC;
		w->dt_ms = w->t_ms - prev;
		w->puts = st.puts - puts0;
		w->cleaner_bytes = st.moved_bytes - moved0;
		w->stall_ns = stall - stall0;
		w->dead_bytes = st.dead_bytes;
		w->free_bytes = pool_free(r->data);
		puts0 = st.puts;
		moved0 = st.moved_bytes;
		stall0 = stall;
		r->nr_win++;
	}
	return NULL;
}

/* The WriteController's recalculations: the dead bytes against the room
 * the live data leaves. */
static void *monitor_main(void *arg)
{
	struct run *r = arg;
	const struct params *p = r->p;
	uint64_t next = now_ns();

	tight_timers();
	while (!atomic_load(&r->stop)) {
		struct ls_stats st;

		if (!ls_stats(r->ls, &st)) {
			uint64_t room = p->capacity > st.live_bytes ?
					p->capacity - st.live_bytes : 1;

			wc_recalc(&r->wc, st.dead_bytes,
				  room / 100 * p->wc_soft_pct,
				  room / 100 * p->wc_stop_pct);
		}
		next += (uint64_t)p->wc_recalc_ms * NSEC_PER_MSEC;
		sleep_until(next);
	}
	wc_release(&r->wc);
	return NULL;
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	return remove(path);
}

static void remove_tree(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Put every key of the working set once, device off: the aged store
 * every run starts from. */
static int load_working_set(struct run *r)
{
	unsigned char *val = calloc(1, r->p->value_size);
	int ret = val ? 0 : -ENOMEM;

	for (uint64_t k = 0; !ret && k < r->keys; k++) {
		char key[KEY_LEN];

		key_of(key, k);
		ret = ls_put(r->ls, 0, key, KEY_LEN, val, r->p->value_size, 0);
	}
	free(val);
	return ret;
}

/* The sawtooth: each window's put rate against the median window's, over
 * the saturated phase: from the first window in which the writers had
 * used half the free space the run started with (from then on, what the
 * policy reclaims sets the pace); the last window is cut short.  Rates,
 * not counts: a sampler that wakes late makes a longer window. */
static void sawtooth(const struct run *r, uint64_t free0, struct result *res)
{
	size_t first = r->nr_win, n;
	double *v;

	for (size_t i = 0; i < r->nr_win; i++)
		if (r->win[i].free_bytes < free0 / 2) {
			first = i;
			break;
		}
	res->saw_min = NAN;
	res->saw_median = NAN;
	if (r->nr_win < first + 2)
		return;
	n = r->nr_win - first - 1;
	v = malloc(n * sizeof(*v));
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		v[i] = (double)r->win[first + i].puts / r->win[first + i].dt_ms;
	res->saw_min = INFINITY;
	for (size_t i = 0; i < n; i++)
		res->saw_min = fmin(res->saw_min, v[i]);
	res->saw_median = median_d(v, (unsigned)n);
	res->saw_min = res->saw_median ? res->saw_min / res->saw_median : NAN;
	res->saw_windows = (unsigned)n;
	free(v);
}

static int write_csv(const struct run *r, const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	fprintf(f, "t_ms,dt_ms,puts,puts_per_s,free_bytes,dead_bytes,"
		   "cleaner_bytes,stall_ms\n");
	for (size_t i = 0; i < r->nr_win; i++) {
		const struct window *w = &r->win[i];

		fprintf(f, "%.1f,%.1f,%" PRIu64 ",%.0f,%" PRIu64 ",%" PRIu64 ",%"
			PRIu64 ",%.3f\n", w->t_ms, w->dt_ms, w->puts,
			(double)w->puts * 1000.0 / w->dt_ms, w->free_bytes,
			w->dead_bytes, w->cleaner_bytes,
			(double)w->stall_ns / NSEC_PER_MSEC);
	}
	return fclose(f) ? -errno : 0;
}

static int run_once(const struct params *p, const char *root, enum workload wl,
		    unsigned pol, unsigned round, struct result *res,
		    const char *csv_path)
{
	struct run *r = calloc(1, sizeof(*r));
	struct srsv_space_stats s0, s1;
	struct ls_stats st0, st1;
	struct ls_verify_report rep;
	struct ls_options o;
	uint64_t t0, t1, nr_lat = 0, *all, offered, free0 = 0;
	size_t k = 0;
	int ret;

	memset(res, 0, sizeof(*res));
	if (!r)
		return -ENOMEM;
	r->p = p;
	r->pol = &policies[pol];
	r->wl = wl;
	r->rec_bytes = ls_record_bytes(KEY_LEN, p->value_size);
	r->keys = p->capacity / 100 * p->live_pct / r->rec_bytes;
	r->keys -= r->keys % p->writers;
	offered = p->device_rate / 100 * p->offered_pct;
	/* Each writer's own work per put, so that together they offer
	 * --offered-pct of the device's rate. */
	r->put_ns = (uint64_t)((double)p->writers * (double)r->rec_bytes *
			       NSEC_PER_SEC / (double)offered);
	pthread_mutex_init(&r->dev.lock, NULL);
	r->dev.rate = p->device_rate;
	r->dev.queue_ns = p->device_queue_ns;
	wc_init(&r->wc, p->wc_rate ? p->wc_rate : p->device_rate);
	r->max_win = p->duration_ms / p->window_ms + 4;
	r->win = calloc(r->max_win, sizeof(*r->win));
	snprintf(r->dir, sizeof(r->dir), "%s/run", root);

	memset(&o, 0, sizeof(o));
	o.capacity = p->capacity;
	o.tenants = 1;
	o.bg_cleaner = r->pol->bg_cleaner;
	o.bg_low_pct = p->bg_low_pct;
	o.bg_high_pct = p->bg_high_pct;
	o.no_sync = true;	/* the device is modelled */
	o.configure = configure;
	o.on_write = on_write;
	o.arg = r;
	ret = r->win ? ls_open(r->dir, &o, &r->ls) : -ENOMEM;
	if (!ret) {
		r->data = srsv_ctx_space(ls_ctx(r->ls), SRSV_POOL_DATA);
		ret = load_working_set(r);
	}
	if (ret) {
		fprintf(stderr, "logstore: setup failed: %s\n", strerror(-ret));
		goto out;
	}
	atomic_store(&r->dev.on, true);
	free0 = pool_free(r->data);
	if (ls_stats(r->ls, &st0) ||
	    srsv_space_get_stats(r->data, &s0)) {
		ret = -EIO;
		goto out;
	}

	t0 = now_ns();
	pthread_create(&r->sampler, NULL, sampler_main, r);
	if (r->pol->wc_delay)
		pthread_create(&r->monitor, NULL, monitor_main, r);
	for (unsigned i = 0; i < p->writers; i++) {
		struct writer *w = &r->w[i];

		w->run = r;
		w->id = i;
		w->rng = (p->seed + 7919 * round) ^ (i + 1) * 0x9e3779b97f4a7c15u;
		pthread_create(&w->thread, NULL, writer_main, w);
	}
	sleep_until(t0 + p->duration_ms * NSEC_PER_MSEC);
	atomic_store(&r->stop, true);
	t1 = now_ns();
	while (atomic_load(&r->writers_done) < p->writers &&
	       now_ns() - t1 < STOP_GRACE_NS)
		sleep_until(now_ns() + NSEC_PER_MSEC);
	if (atomic_load(&r->writers_done) < p->writers)
		fprintf(stderr, "logstore: %s/%s: %u writer(s) still blocked "
			"%.0f s after stop\n", workload_names[wl],
			r->pol->name, p->writers - atomic_load(&r->writers_done),
			(double)STOP_GRACE_NS / NSEC_PER_SEC);
	for (unsigned i = 0; i < p->writers; i++)
		pthread_join(r->w[i].thread, NULL);
	pthread_join(r->sampler, NULL);
	if (r->pol->wc_delay)
		pthread_join(r->monitor, NULL);
	atomic_store(&r->dev.on, false);

	if (ls_stats(r->ls, &st1) || srsv_space_get_stats(r->data, &s1)) {
		ret = -EIO;
		goto out;
	}
	for (unsigned i = 0; i < p->writers; i++) {
		nr_lat += r->w[i].lat.nr;
		res->put_enospc += r->w[i].enospc;
		res->errors += r->w[i].errors;
	}
	all = malloc((nr_lat ? nr_lat : 1) * sizeof(*all));
	if (!all) {
		ret = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < p->writers; i++) {
		memcpy(all + k, r->w[i].lat.ns, r->w[i].lat.nr * sizeof(*all));
		k += r->w[i].lat.nr;
	}
	qsort(all, k, sizeof(*all), cmp_u64);
	if (k) {
		res->p50_ns = all[k / 2];
		res->p99_ns = all[k * 99 / 100];
		res->max_ns = all[k - 1];
	}
	k = 0;
	for (unsigned i = 0; i < p->writers; i++) {
		memcpy(all + k, r->w[i].rest.ns, r->w[i].rest.nr * sizeof(*all));
		k += r->w[i].rest.nr;
	}
	qsort(all, k, sizeof(*all), cmp_u64);
	if (k)
		res->rest_p99_ns = all[k * 99 / 100];
	k = 0;
	for (unsigned i = 0; i < p->writers; i++) {
		memcpy(all + k, r->w[i].late.ns, r->w[i].late.nr * sizeof(*all));
		k += r->w[i].late.nr;
	}
	qsort(all, k, sizeof(*all), cmp_u64);
	if (k)
		res->late_p99_ns = all[k * 99 / 100];
	free(all);

	{
		double span = (double)(t1 - t0) * p->writers;
		uint64_t wc_ns = stall_ns(r, 0);
		const struct srsv_wait_stats *a = &s0.modes[SRSV_FLUSH_DATA];
		const struct srsv_wait_stats *b = &s1.modes[SRSV_FLUSH_DATA];

		res->puts_per_s = (double)(st1.puts - st0.puts) * NSEC_PER_SEC /
				  (double)(t1 - t0);
		res->reserve_share = (double)(st1.reserve_ns - st0.reserve_ns) /
				     span;
		res->wc_share = (double)wc_ns / span;
		res->stall = res->reserve_share + res->wc_share;
		res->queued_share = (double)(s1.stalled_ns - s0.stalled_ns) /
				    (double)(t1 - t0);
		res->wa = st1.put_bytes > st0.put_bytes ?
			  (double)(st1.moved_bytes - st0.moved_bytes) /
			  (double)(st1.put_bytes - st0.put_bytes) : NAN;
		res->cleaner_enospc = st1.cleaner_enospc - st0.cleaner_enospc;
		res->tickets = b->tickets - a->tickets;
		res->tickets_failed = b->failed - a->failed;
		res->max_wait_ns = b->max_wait_ns;
		for (int s = 1; s < SRSV_STATE_COUNT; s++)
			res->preempt_calls += s1.states[s].preempt_calls -
					      s0.states[s].preempt_calls;
		res->paced = s1.paced - s0.paced;
		res->clamp_raised = s1.clamp_raised - s0.clamp_raised;
		res->clamp_lowered = s1.clamp_lowered - s0.clamp_lowered;
		res->pace_share = (double)(s1.pace_delay_ns -
					   s0.pace_delay_ns) / span;
		res->flush_calls = st1.flush_calls - st0.flush_calls;
		res->bg_passes = st1.bg_passes - st0.bg_passes;
		res->cleaned = st1.segments_cleaned - st0.segments_cleaned;
		res->wc_delays = r->wc.delays;
		res->wc_stops = r->wc.stops;
		res->device_busy = (double)r->dev.clock.busy_ns /
				   (double)(t1 - t0);
	}
	sawtooth(r, free0, res);

	/* The run counts only if the store is exactly right afterwards. */
	ret = ls_verify(r->ls, &rep);
	if (ret)
		snprintf(res->check, sizeof(res->check), "verify: %s",
			 rep.error);
	else if (res->errors)
		snprintf(res->check, sizeof(res->check), "%" PRIu64
			 " puts failed unexpectedly", res->errors);
	else
		snprintf(res->check, sizeof(res->check), "ok");
	res->ok = !strcmp(res->check, "ok");
	ret = 0;
	if (csv_path) {
		int cret = write_csv(r, csv_path);

		if (cret)
			fprintf(stderr, "logstore: %s: %s\n", csv_path,
				strerror(-cret));
	}
out:
	if (r->ls && ls_close(r->ls) && !ret)
		ret = -EIO;
	remove_tree(r->dir);
	for (unsigned i = 0; i < MAX_WRITERS; i++) {
		free(r->w[i].lat.ns);
		free(r->w[i].rest.ns);
		free(r->w[i].late.ns);
	}
	wc_destroy(&r->wc);
	pthread_mutex_destroy(&r->dev.lock);
	free(r->win);
	free(r);
	return ret;
}

/* ---- the bench's directory ---- */

static char root_dir[4096];

static void cleanup_root(void)
{
	if (root_dir[0])
		remove_tree(root_dir);
	root_dir[0] = 0;
}

static void on_signal(int sig)
{
	cleanup_root();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* /dev/shm if it is a tmpfs we may write, else $TMPDIR or /tmp. */
static const char *default_base(void)
{
	struct statfs sf;
	const char *t = getenv("TMPDIR");

	if (!statfs("/dev/shm", &sf) && sf.f_type == TMPFS_MAGIC_NR &&
	    !access("/dev/shm", W_OK))
		return "/dev/shm";
	return t && *t ? t : "/tmp";
}

static int make_root(const struct params *p)
{
	const char *base = p->dir ? p->dir : default_base();
	struct statvfs sv;

	if (statvfs(base, &sv)) {
		fprintf(stderr, "logstore: %s: %s\n", base, strerror(errno));
		return -1;
	}
	if ((uint64_t)sv.f_bavail * sv.f_frsize < 4 * p->capacity) {
		fprintf(stderr, "logstore: %s has less than 4 x %" PRIu64
			" MiB free\n", base, p->capacity / MIB);
		return -1;
	}
	snprintf(root_dir, sizeof(root_dir), "%s/bench_logstore.XXXXXX", base);
	if (!mkdtemp(root_dir)) {
		fprintf(stderr, "logstore: mkdtemp %s: %s\n", root_dir,
			strerror(errno));
		root_dir[0] = 0;
		return -1;
	}
	atexit(cleanup_root);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	return 0;
}

/* ---- medians and report ---- */

#define MEDIAN(res, n, expr)						\
	({								\
		double v_[MAX_RUNS];					\
		for (unsigned i_ = 0; i_ < (n); i_++)			\
			v_[i_] = (double)(res)[i_].expr;		\
		median_d(v_, (n));					\
	})

struct summary {
	bool have, ok;
	double puts, puts_lo, puts_hi, stall, reserve, wcs, queued;
	double p50, p99, max, rest_p99, late_p99, wa, cleaner_enospc;
	double put_enospc;
	double tickets, tickets_failed, max_wait, preempt, flush_calls;
	double paced, pace_share, floor, clamp_raised, clamp_lowered;
	uint64_t cleaner_enospc_all;	/* summed over the runs */
	double bg_passes, cleaned, device_busy, saw_min, wc_delays, wc_stops;
	unsigned median_run;
};

static void summarise(const struct result *res, unsigned n, struct summary *s)
{
	double best = INFINITY;

	memset(s, 0, sizeof(*s));
	s->have = true;
	s->ok = true;
	s->puts_lo = INFINITY;
	s->puts_hi = -INFINITY;
	for (unsigned i = 0; i < n; i++) {
		s->ok = s->ok && res[i].ok;
		s->puts_lo = fmin(s->puts_lo, res[i].puts_per_s);
		s->puts_hi = fmax(s->puts_hi, res[i].puts_per_s);
	}
	s->puts = MEDIAN(res, n, puts_per_s);
	s->stall = MEDIAN(res, n, stall);
	s->reserve = MEDIAN(res, n, reserve_share);
	s->wcs = MEDIAN(res, n, wc_share);
	s->queued = MEDIAN(res, n, queued_share);
	s->p50 = MEDIAN(res, n, p50_ns);
	s->p99 = MEDIAN(res, n, p99_ns);
	s->rest_p99 = MEDIAN(res, n, rest_p99_ns);
	s->late_p99 = MEDIAN(res, n, late_p99_ns);
	s->max = MEDIAN(res, n, max_ns);
	s->wa = MEDIAN(res, n, wa);
	s->cleaner_enospc = MEDIAN(res, n, cleaner_enospc);
	s->put_enospc = MEDIAN(res, n, put_enospc);
	s->tickets = MEDIAN(res, n, tickets);
	s->tickets_failed = MEDIAN(res, n, tickets_failed);
	s->max_wait = MEDIAN(res, n, max_wait_ns);
	s->preempt = MEDIAN(res, n, preempt_calls);
	s->paced = MEDIAN(res, n, paced);
	s->clamp_raised = MEDIAN(res, n, clamp_raised);
	s->clamp_lowered = MEDIAN(res, n, clamp_lowered);
	s->pace_share = MEDIAN(res, n, pace_share);
	for (unsigned i = 0; i < n; i++)
		s->cleaner_enospc_all += res[i].cleaner_enospc;
	s->flush_calls = MEDIAN(res, n, flush_calls);
	s->bg_passes = MEDIAN(res, n, bg_passes);
	s->cleaned = MEDIAN(res, n, cleaned);
	s->device_busy = MEDIAN(res, n, device_busy);
	s->saw_min = MEDIAN(res, n, saw_min);
	s->wc_delays = MEDIAN(res, n, wc_delays);
	s->wc_stops = MEDIAN(res, n, wc_stops);
	for (unsigned i = 0; i < n; i++) {
		double d = fabs(res[i].puts_per_s - s->puts);

		if (d < best) {
			best = d;
			s->median_run = i;
		}
	}
}

/*
 * The latency floor at a throughput of @puts_per_s (THE FIGURES in the
 * opening comment): each writer's cycle is its put's latency plus its own
 * work, put_ns = writers / offered puts/s, so at that throughput the mean
 * latency is writers x (1/puts_per_s - 1/offered puts/s).
 */
static double floor_ns(const struct params *p, double puts_per_s)
{
	double rec = (double)ls_record_bytes(KEY_LEN, p->value_size);
	double offered = (double)p->device_rate * p->offered_pct / 100 / rec;
	double f = (double)p->writers * (1 / puts_per_s - 1 / offered);

	return puts_per_s > 0 && f > 0 ? f * NSEC_PER_SEC : NAN;
}

static void print_table(const struct params *p, int wl,
			struct summary *sum)
{
	double rec = (double)ls_record_bytes(KEY_LEN, p->value_size);

	for (unsigned m = 0; m < NR_POLICIES; m++)
		sum[m].floor = floor_ns(p, sum[m].puts);
	printf("\n%s: %-8s %9s %13s %6s %6s %6s %8s %8s %8s %5s %6s %6s %7s "
	       "%8s %7s %6s %8s\n", workload_names[wl], "policy", "puts/s",
	       "(min-max)", "stall", "resv", "wc", "p50(us)", "p99(us)",
	       "max(ms)", "WA", "cl-ENO", "ENOSPC", "tickets", "wait(ms)",
	       "cleaned", "saw", "p99/flr");
	for (unsigned m = 0; m < NR_POLICIES; m++) {
		const struct summary *s = &sum[m];
		char spread[32];

		if (!s->have)
			continue;
		snprintf(spread, sizeof(spread), "%.0f-%.0f", s->puts_lo,
			 s->puts_hi);
		printf("%*s %-8s %9.0f %13s %5.1f%% %5.1f%% %5.1f%% %8.1f %8.1f "
		       "%8.2f %5.2f %6.0f %6.0f %7.0f %8.1f %7.0f %6.3f %8.1f "
		       "%s\n", (int)strlen(workload_names[wl]) + 1, "",
		       policies[m].name, s->puts, spread, 100 * s->stall,
		       100 * s->reserve, 100 * s->wcs, s->p50 / 1000,
		       s->p99 / 1000, s->max / NSEC_PER_MSEC, s->wa,
		       s->cleaner_enospc, s->put_enospc, s->tickets,
		       s->max_wait / NSEC_PER_MSEC, s->cleaned, s->saw_min,
		       s->p99 / s->floor, s->ok ? "ok" : "CHECK-FAILED");
	}
	printf("  latency floor (the mean put latency at the policy's "
	       "throughput, %u writers x (1/puts_per_s - 1/offered)): ",
	       p->writers);
	for (unsigned m = 0; m < NR_POLICIES; m++)
		if (sum[m].have)
			printf("%s %.1f us (p99 %.2fx); ", policies[m].name,
			       sum[m].floor / 1000, sum[m].p99 / sum[m].floor);
	printf("at the device's rate with nothing copied: %.1f us\n",
	       (double)p->writers * rec *
	       (1 / (double)p->device_rate -
		100 / ((double)p->device_rate * p->offered_pct)) *
	       NSEC_PER_SEC / 1000);
	for (unsigned m = 0; m < NR_POLICIES; m++) {
		const struct summary *s = &sum[m];

		if (!s->have)
			continue;
		printf("  %s/%s: tickets queued %.1f%% of the run, %.0f failed; "
		       "data pool preemptive calls %.0f; paced reservations "
		       "%.0f (%.1f%% of the writers' time asleep); p99 without "
		       "the device's wait %.1f us, of its late wake-ups %.1f "
		       "us; clamp raised %.0f, lowered "
		       "%.0f times; cleaning "
		       "passes from the flush callback %.0f, the background "
		       "cleaner %.0f; device busy %.0f%%; cleaner ENOSPC over "
		       "all runs %" PRIu64, workload_names[wl],
		       policies[m].name, 100 * s->queued, s->tickets_failed,
		       s->preempt, s->paced, 100 * s->pace_share,
		       s->rest_p99 / 1000, s->late_p99 / 1000,
		       s->clamp_raised, s->clamp_lowered,
		       s->flush_calls, s->bg_passes, 100 * s->device_busy,
		       s->cleaner_enospc_all);
		if (policies[m].wc_delay)
			printf("; wc delay episodes %.0f, stops %.0f",
			       s->wc_delays, s->wc_stops);
		printf("\n");
	}
}

static void keep_median_timeline(const struct params *p, int wl, unsigned m,
				 unsigned median_run)
{
	char from[4096], to[4096];

	for (unsigned run = 0; run < p->runs; run++) {
		snprintf(from, sizeof(from), "%s/logstore-%s-%s.run%u.csv",
			 p->csv_dir, workload_names[wl], policies[m].name, run);
		if (run != median_run) {
			remove(from);
			continue;
		}
		snprintf(to, sizeof(to), "%s/logstore-%s-%s.csv", p->csv_dir,
			 workload_names[wl], policies[m].name);
		if (rename(from, to))
			fprintf(stderr, "logstore: %s: %s\n", to,
				strerror(errno));
	}
}

/* Policy a over policy b: of the medians, and per round. */
static void print_ratio(const char *name, const struct result *a,
			const struct result *b, unsigned n,
			double (*get)(const struct result *), double *med)
{
	double va[MAX_RUNS], vb[MAX_RUNS], lo = INFINITY, hi = -INFINITY;

	for (unsigned i = 0; i < n; i++) {
		double x;

		va[i] = get(&a[i]);
		vb[i] = get(&b[i]);
		x = vb[i] ? va[i] / vb[i] : NAN;
		lo = fmin(lo, x);
		hi = fmax(hi, x);
	}
	*med = median_d(vb, n) ? median_d(va, n) / median_d(vb, n) : NAN;
	printf("  %-22s %8.3f   (per round %.3f .. %.3f)\n", name, *med, lo,
	       hi);
}

static double get_puts(const struct result *r) { return r->puts_per_s; }
static double get_wa(const struct result *r) { return r->wa; }
static double get_p99(const struct result *r) { return (double)r->p99_ns; }

static unsigned parse_list(const char *arg, const char *const *names,
			   unsigned count)
{
	unsigned mask = 0;
	char *copy = strdup(arg), *save = NULL;

	if (!copy)
		return 0;
	for (char *tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		unsigned i;

		for (i = 0; i < count; i++)
			if (!strcmp(tok, names[i]))
				break;
		if (i == count) {
			free(copy);
			return 0;
		}
		mask |= 1u << i;
	}
	free(copy);
	return mask;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: bench_logstore [options]\n"
"  --runs N           rounds; every policy runs once per round (default 3)\n"
"  --duration-ms N    length of one run (default 3000)\n"
"  --quick            --duration-ms 1500 --runs 1\n"
"  --policies LIST    tickets,preempt,pace,cleaner,wc (default all)\n"
"  --workloads LIST   overwrite,bulk-unpin (default both)\n"
"  --writers N        writer threads (default 4)\n"
"  --capacity-mib N   the store's DATA pool (default 32)\n"
"  --live-pct N       working set, %% of the capacity (default 50)\n"
"  --value-size N     value bytes (default 4048: 4 KiB records)\n"
"  --device-mib-s N   the device's rate (default 64)\n"
"  --device-queue-ms N  how far behind the device may be before a write\n"
"                     waits (the dirty limit; default 4)\n"
"  --offered-pct N    the writers' offered rate, %% of the device's\n"
"                     (default 150)\n"
"  --bg-low-pct N, --bg-high-pct N  the background cleaner's free-space\n"
"                     watermarks (default 15, 25)\n"
"  --wc-soft-pct N    wc: delay from N%% of capacity - live dead (default 80)\n"
"  --wc-stop-pct N    wc: stop from N%% (default 90)\n"
"  --wc-rate-mib N    wc: delayed_write_rate (default: the device's)\n"
"  --wc-recalc-ms N   wc: conditions read every N ms (default 10)\n"
"  --pace-pct N       pace: data pacing from N%% of the debt's fill\n"
"                     (srsv_config::data_pace_start_pct; default %u)\n"
"  --window-ms N      timeline windows (default 100)\n"
"  --csv-dir DIR      write logstore-<workload>-<policy>.csv timelines\n"
"  --dir DIR          where the store's files go (default /dev/shm if a\n"
"                     tmpfs, else $TMPDIR or /tmp)\n"
"  --seed N           random seed\n", DEFAULT_PACE_PCT);
}

static struct result res[WL_COUNT][NR_POLICIES][MAX_RUNS];
static struct summary sum[WL_COUNT][NR_POLICIES];

int main(int argc, char **argv)
{
	/*
	 * Defaults, and why:
	 * - 32 MiB, half of it live: 32 segments, enough for the policies
	 *   to differ (which segment to clean, when), small enough for
	 *   tmpfs and for hundreds of cleaning passes in 3 s.
	 * - 64 MiB/s device, writers offering 150% of it: 16k 4 KiB puts/s
	 *   at most, a few µs of CPU each on 2 shared cores; the overload
	 *   forces every policy to make writers wait somewhere.
	 * - Watermarks 15% / 25% free: the background cleaner starts with
	 *   4.8 MiB free, 75 ms of the device, long against its 5 ms poll.
	 * - The WriteController delays from 80% of the room the live data
	 *   leaves and stops at 90% (bench_stall's thresholds), when the
	 *   background cleaner has fallen behind.
	 * - Data pacing from 75% of the debt's fill (DEFAULT_PACE_PCT), where
	 *   the preemptive flusher starts (three quarters of the room at
	 *   clamp 1): pacing below it slows writers before reclaim has even
	 *   started.  A sweep of 50, 75 and 85 once the flusher started
	 *   there (3 rounds each, 2026-12-03 19:27, docs/results-logstore.md):
	 *   on the bulk unpin, pace's puts/s 14,691, 16,037 and 15,748 with
	 *   22.6%, 0.4% and 0.4% of the writers' time asleep; on the
	 *   overwrite 11,128, 11,573 and 11,489, 21 tickets at 85.  (When the
	 *   flusher started at half the room, 50 was the sweep's best.)
	 */
	struct params p = {
		.writers = 4, .runs = 3, .duration_ms = 3000,
		.capacity = 32 * MIB, .live_pct = 50, .value_size = 4048,
		.device_rate = 64 * MIB, .device_queue_ns = 4 * NSEC_PER_MSEC,
		.offered_pct = 150, .window_ms = 100,
		.bg_low_pct = 15, .bg_high_pct = 25,
		.wc_soft_pct = 80, .wc_stop_pct = 90, .wc_recalc_ms = 10,
		.pace_pct = DEFAULT_PACE_PCT,
		.policies = (1u << NR_POLICIES) - 1,
		.workloads = (1u << WL_COUNT) - 1, .seed = 0x5eed10,
	};
	enum {
		OPT_RUNS = 256, OPT_DURATION, OPT_QUICK, OPT_POLICIES,
		OPT_WORKLOADS, OPT_WRITERS, OPT_CAPACITY, OPT_LIVE, OPT_VALUE,
		OPT_DEVICE, OPT_QUEUE, OPT_OFFERED, OPT_BG_LOW, OPT_BG_HIGH, OPT_WC_SOFT,
		OPT_WC_STOP, OPT_WC_RATE, OPT_WC_RECALC, OPT_PACE, OPT_WINDOW,
		OPT_CSV,
		OPT_DIR, OPT_SEED, OPT_HELP, OPT_VERSION,
	};
	static const struct option opts[] = {
		{ "runs", required_argument, NULL, OPT_RUNS },
		{ "duration-ms", required_argument, NULL, OPT_DURATION },
		{ "quick", no_argument, NULL, OPT_QUICK },
		{ "policies", required_argument, NULL, OPT_POLICIES },
		{ "workloads", required_argument, NULL, OPT_WORKLOADS },
		{ "writers", required_argument, NULL, OPT_WRITERS },
		{ "capacity-mib", required_argument, NULL, OPT_CAPACITY },
		{ "live-pct", required_argument, NULL, OPT_LIVE },
		{ "value-size", required_argument, NULL, OPT_VALUE },
		{ "device-mib-s", required_argument, NULL, OPT_DEVICE },
		{ "device-queue-ms", required_argument, NULL, OPT_QUEUE },
		{ "offered-pct", required_argument, NULL, OPT_OFFERED },
		{ "bg-low-pct", required_argument, NULL, OPT_BG_LOW },
		{ "bg-high-pct", required_argument, NULL, OPT_BG_HIGH },
		{ "wc-soft-pct", required_argument, NULL, OPT_WC_SOFT },
		{ "wc-stop-pct", required_argument, NULL, OPT_WC_STOP },
		{ "wc-rate-mib", required_argument, NULL, OPT_WC_RATE },
		{ "wc-recalc-ms", required_argument, NULL, OPT_WC_RECALC },
		{ "pace-pct", required_argument, NULL, OPT_PACE },
		{ "window-ms", required_argument, NULL, OPT_WINDOW },
		{ "csv-dir", required_argument, NULL, OPT_CSV },
		{ "dir", required_argument, NULL, OPT_DIR },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "help", no_argument, NULL, OPT_HELP },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 }
	};
	const char *policy_names[NR_POLICIES];
	int order[WL_COUNT * NR_POLICIES][2], nr_order = 0;
	struct cpu_ticks bench_start;
	double steal[MAX_RUNS];
	bool all_ok = true;
	int c;

	for (unsigned m = 0; m < NR_POLICIES; m++)
		policy_names[m] = policies[m].name;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		uint64_t v = 0;
		bool num = optarg && parse_u64(optarg, &v);

		switch (c) {
		case OPT_POLICIES:
			p.policies = parse_list(optarg, policy_names,
						NR_POLICIES);
			break;
		case OPT_WORKLOADS:
			p.workloads = parse_list(optarg, workload_names,
						 WL_COUNT);
			break;
		case OPT_QUICK: p.duration_ms = 1500; p.runs = 1; break;
		case OPT_CSV: p.csv_dir = optarg; break;
		case OPT_DIR: p.dir = optarg; break;
		case OPT_HELP: usage(stdout); return 0;
		case OPT_VERSION: bench_print_version("bench_logstore"); return 0;
		default:
			if (!num) {
				usage(stderr);
				return 2;
			}
			switch (c) {
			case OPT_RUNS: p.runs = (unsigned)v; break;
			case OPT_DURATION: p.duration_ms = v; break;
			case OPT_WRITERS: p.writers = (unsigned)v; break;
			case OPT_CAPACITY: p.capacity = v * MIB; break;
			case OPT_LIVE: p.live_pct = (unsigned)v; break;
			case OPT_VALUE: p.value_size = v; break;
			case OPT_DEVICE: p.device_rate = v * MIB; break;
			case OPT_QUEUE: p.device_queue_ns = v * NSEC_PER_MSEC;
				break;
			case OPT_OFFERED: p.offered_pct = (unsigned)v; break;
			case OPT_BG_LOW: p.bg_low_pct = (unsigned)v; break;
			case OPT_BG_HIGH: p.bg_high_pct = (unsigned)v; break;
			case OPT_WC_SOFT: p.wc_soft_pct = (unsigned)v; break;
			case OPT_WC_STOP: p.wc_stop_pct = (unsigned)v; break;
			case OPT_WC_RATE: p.wc_rate = v * MIB; break;
			case OPT_WC_RECALC: p.wc_recalc_ms = (unsigned)v; break;
			case OPT_PACE: p.pace_pct = (unsigned)v; break;
			case OPT_WINDOW: p.window_ms = (unsigned)v; break;
			case OPT_SEED: p.seed = v; break;
			default: usage(stderr); return 2;
			}
		}
	}
	if (optind < argc || !p.writers || p.writers > MAX_WRITERS || !p.runs ||
	    p.runs > MAX_RUNS || !p.duration_ms || !p.policies ||
	    !p.workloads || p.capacity < 8 * MIB || p.capacity > 4096 * MIB ||
	    !p.live_pct || p.live_pct > 80 || !p.device_rate ||
	    !p.offered_pct || !p.window_ms || !p.wc_recalc_ms ||
	    p.bg_low_pct >= p.bg_high_pct || p.bg_high_pct > 90 ||
	    p.wc_soft_pct >= p.wc_stop_pct || p.wc_stop_pct > 100 ||
	    !p.pace_pct || p.pace_pct > 99 ||
	    ls_record_bytes(KEY_LEN, p.value_size) > LS_SEGMENT_BYTES / 4) {
		usage(stderr);
		return 2;
	}
	if (make_root(&p))
		return 1;

	printf("logstore: %u writers, %" PRIu64 " ms x %u rounds; store %"
	       PRIu64 " MiB (%u%% live: %" PRIu64 " keys), %" PRIu64
	       "-byte records, in %s; device %.0f MiB/s, offered %u%% of it; "
	       "background cleaner %u%%..%u%% free; wc delay from %u%%, stop "
	       "at %u%% of capacity - live; data pacing from %u%% of the "
	       "debt's fill\n", p.writers, p.duration_ms, p.runs,
	       p.capacity / MIB, p.live_pct,
	       p.capacity / 100 * p.live_pct /
	       ls_record_bytes(KEY_LEN, p.value_size),
	       ls_record_bytes(KEY_LEN, p.value_size), root_dir,
	       (double)p.device_rate / MIB, p.offered_pct, p.bg_low_pct,
	       p.bg_high_pct, p.wc_soft_pct, p.wc_stop_pct, p.pace_pct);
	for (unsigned m = 0; m < NR_POLICIES; m++)
		if (p.policies & (1u << m))
			printf("  %-8s %s\n", policies[m].name, policies[m].what);
	print_load("start");
	bench_start = cpu_ticks_now();
	for (int wl = 0; wl < WL_COUNT; wl++)
		for (unsigned m = 0; m < NR_POLICIES; m++)
			if ((p.workloads & (1u << wl)) &&
			    (p.policies & (1u << m))) {
				order[nr_order][0] = wl;
				order[nr_order][1] = (int)m;
				nr_order++;
			}
	/* Rounds: every policy once per round, in reverse order every
	 * other round (bench_stall's rule). */
	for (unsigned run = 0; run < p.runs; run++) {
		struct cpu_ticks round_start = cpu_ticks_now();

		for (int k = 0; k < nr_order; k++) {
			int i = run % 2 ? nr_order - 1 - k : k;
			int wl = order[i][0], m = order[i][1];
			char path[4096];

			snprintf(path, sizeof(path),
				 "%s/logstore-%s-%s.run%u.csv",
				 p.csv_dir ? p.csv_dir : ".", workload_names[wl],
				 policies[m].name, run);
			if (run_once(&p, root_dir, wl, (unsigned)m, run,
				     &res[wl][m][run], p.csv_dir ? path : NULL))
				return 1;
			if (!res[wl][m][run].ok)
				fprintf(stderr, "logstore: %s/%s round %u: %s\n",
					workload_names[wl], policies[m].name,
					run, res[wl][m][run].check);
		}
		steal[run] = cpu_steal_pct(round_start, cpu_ticks_now());
		fprintf(stderr, "logstore: round %u of %u done (steal %.1f%% "
			"of CPU time)\n", run + 1, p.runs, steal[run]);
	}
	print_load("end");
	print_steal(bench_start, steal, p.runs);
	for (int i = 0; i < nr_order; i++) {
		int wl = order[i][0], m = order[i][1];

		summarise(res[wl][m], p.runs, &sum[wl][m]);
		all_ok = all_ok && sum[wl][m].ok;
		if (p.csv_dir)
			keep_median_timeline(&p, wl, (unsigned)m,
					     sum[wl][m].median_run);
	}
	for (int wl = 0; wl < WL_COUNT; wl++)
		if (p.workloads & (1u << wl))
			print_table(&p, wl, sum[wl]);

	{
		const struct summary *pre = &sum[WL_OVERWRITE][POLICY_PREEMPT];
		const struct summary *pace = &sum[WL_OVERWRITE][POLICY_PACE];
		double st = NAN, t = NAN, w = NAN, p99 = NAN, saw = NAN;
		double f = NAN, e = NAN;
		int best = -1;

		/* The best engine-side policy: the highest median puts/s
		 * of those that run a cleaner or a delay of their own. */
		for (unsigned m = 0; m < NR_POLICIES; m++) {
			const struct summary *x = &sum[WL_OVERWRITE][m];

			if (x->have && !library_policy(m) &&
			    (best < 0 || x->puts > sum[WL_OVERWRITE][best].puts))
				best = (int)m;
		}
		/* The cleaner's ENOSPC: every run of a library policy. */
		for (int wl = 0; wl < WL_COUNT; wl++)
			for (unsigned m = 0; m < NR_POLICIES; m++)
				if (library_policy(m) && sum[wl][m].have)
					e = (isnan(e) ? 0 : e) +
					    (double)sum[wl][m].cleaner_enospc_all;
		printf("\nratios (overwrite; of medians, spread per round):\n");
		if (pre->have) {
			st = 100 * pre->stall;
			if (best >= 0) {
				printf("  best engine-side policy: %s\n",
				       policies[best].name);
				print_ratio("preempt tput / best",
					    res[WL_OVERWRITE][POLICY_PREEMPT],
					    res[WL_OVERWRITE][best], p.runs,
					    get_puts, &t);
				print_ratio("preempt WA / best",
					    res[WL_OVERWRITE][POLICY_PREEMPT],
					    res[WL_OVERWRITE][best], p.runs,
					    get_wa, &w);
			}
		}
		if (pace->have && sum[WL_OVERWRITE][POLICY_WC].have)
			print_ratio("pace p99 / wc p99",
				    res[WL_OVERWRITE][POLICY_PACE],
				    res[WL_OVERWRITE][POLICY_WC], p.runs,
				    get_p99, &p99);
		if (pace->have) {
			f = pace->p99 / pace->floor;
			printf("  %-22s %8.3f   (floor %.1f us at %.0f puts/s, "
			       "p99 %.1f us)\n", "pace p99 / floor", f,
			       pace->floor / 1000, pace->puts, pace->p99 / 1000);
		}
		if (sum[WL_BULK][POLICY_PREEMPT].have)
			saw = sum[WL_BULK][POLICY_PREEMPT].saw_min;
		printf("summary: data_stall_pct=%.1f tput_vs_best_engine=%.3f "
		       "wa_vs_best_engine=%.3f p99_vs_wc=%.3f cleaner_enospc=%.0f"
		       " sawtooth_min_window=%.3f pace_p99_vs_floor=%.3f\n", st,
		       t, w, p99, e, saw, f);
	}
	return all_ok ? 0 : 1;
}
