// SPDX-License-Identifier: MIT
/*
 * bench/stall.c - the stall benchmark of "Improve preemptive ENOSPC flushing" (Josef Bacik, btrfs 5.11).
 *
 * That series is the reason this library
 * exists: when nothing flushes until a writer must wait, writers run up,
 * stop while the ticket flusher walks its states, run again, stop again (the
 * sawtooth).  Flushing early, in the background, from whichever pool holds
 * the most space, removes the stalls.  This program re-runs that experiment
 * on a simulated storage engine built on the public API only.
 *
 * The engine, in btrfs terms:
 *
 * - Metadata pool (SRSV_POOL_METADATA) of --pool-mib, mostly used by trees
 *   (a "fs tree" of --fs-leaves 16 KiB leaves, an "extent tree" of
 *   --ext-leaves, and --other-mib of metadata the workload never touches),
 *   with the global reservation filled at creation.  Nothing is left
 *   unallocated on the device, so the pool cannot grow (ALLOC_CHUNK answers
 *   -ENOSPC) and metadata overcommit has nothing to count on: the pool is
 *   the bottleneck, as in the series' fio job.
 * - Buffered workload: --writers threads each write random 4 KiB pages of
 *   their own file (fio --rw=randwrite --bs=4k --numjobs=4).  A write costs
 *   --write-us of writer time and reserves one item's worth of metadata
 *   (cfg.item_bytes, 256 KiB as btrfs: a random 4 KiB write is one new file
 *   extent) with SRSV_FLUSH_ALL into the standard DELALLOC reservation, then
 *   dirties the page (delalloc += 4 KiB).  The reservation stays "held by
 *   the dirty page" until its writeback completes.
 * - Writeback (DELALLOC, DELALLOC_WAIT, DELALLOC_FULL) moves dirty pages to
 *   "ordered" and queues them on a simulated device in chunks of
 *   --wb-chunk pages; the device serves requests in FIFO order, one at a
 *   time, each costing --dev-lat-us plus --dev-us-per-mib per MiB.  When a
 *   chunk completes (btrfs's finish_ordered_io), each page's file extent
 *   item is inserted: the path (leaf, node, root) is copied on write the
 *   first time it is touched in the running transaction (16 KiB each,
 *   allocated from the page's reservation, the old copy pinned, as COW
 *   does), two delayed ref heads (add the new extent, drop the old one) get
 *   --head-kib each moved to the delayed-refs reservation, the inode update
 *   once per transaction goes to the delayed-items reservation, and the
 *   surplus of the page's reservation is released.  The engine frees only
 *   what it really wrote back.
 * - Delayed refs / items (the _NR states run a bounded number, the others
 *   all) cost --ref-us each, copy extent-tree (or fs-tree) paths on write
 *   and release the rest of their reservation.
 * - COMMIT_TRANS runs all delayed work, then writes the transaction
 *   (--commit-us on the device, a fixed latency) and unpins what the
 *   transaction pinned: pinned -> free.  Only then may the COW'd blocks be
 *   copied again (a new transaction starts).  A timer also commits a
 *   transaction --commit-interval-ms old (btrfs's transaction kthread, 30 s
 *   there, scaled to 1 s for 4 s runs; a commit from a flusher restarts the
 *   clock, as there): without it a tickets-only run may never commit,
 *   since the ticket walk restarts at its first state on any progress.
 * - Dirty throttle (the default; --no-dirty-throttle turns it off): a
 *   simplified balance_dirty_pages().  "Dirty" is dirty plus under-writeback
 *   pages, as Linux counts it.  Above the background threshold (half the
 *   limit: Linux's dirty_background_ratio 10 / dirty_ratio 20) a background
 *   flusher thread (the kernel's wb_workfn) writes dirty pages back until
 *   dirty drops below it, outside the reservation machinery.  Above the
 *   freerun point, (limit + bg) / 2, each writer pauses after its writes so
 *   that together the writers dirty pages at pos_ratio x the measured
 *   writeback bandwidth, pos_ratio being Linux's cubic: 2 at freerun, 1 at
 *   the setpoint (freerun + limit) / 2, 0 at the limit.  Pauses are at least
 *   a jiffy and at most the time to write an eighth of the dirty pages
 *   (wb_max_pause(), under MAX_PAUSE = 200 ms).  Time paused is "throttled",
 *   counted apart from time blocked in a reservation.  The limit defaults to
 *   what the free metadata space leaves for dirty pages' reservations once
 *   a transaction has copied (and pinned) every tree block: the dirty
 *   pages' reservations at the limit plus the most a transaction can pin
 *   fill the pool.  So when nothing flushes early (pinned space grows
 *   until the timer commits, delayed refs pile up until tickets run them)
 *   the pool fills before the dirty limit is reached and writers wait on
 *   tickets, as in the series (its 4 KiB random writes reserve 64x their
 *   size in metadata, and a machine's dirty limits are far above what its
 *   metadata pool can back); when flushing keeps the pool in shape, the
 *   dirty pages have room up to the limit and the throttle, not the
 *   tickets, paces the writers to the device.
 * - Direct-I/O workload: reserve the same metadata, write the page on the
 *   device synchronously, complete at once (COW, refs, release): no delalloc.
 *   Its reservations are short-lived; what fills its pool is pinned space
 *   and delayed refs, so it measures what preemptive commits cost (Nikolay
 *   measured -7% on DIO with the series' series).
 *
 * Time is modelled, not burnt: the writers' CPU work and every device or
 * flush cost are absolute-deadline sleeps, so the results depend little on
 * the 2 shared cores of the machine running the benchmark (a writer models
 * a thread with its own core and makes up late wake-ups; the device is
 * booked at submission, so its schedule is exact and only completions can
 * be late).  On a heavily loaded machine, wake-up delays of tens of ms
 * still show up as gaps in the timeline.
 *
 * Modes: "tickets" (SRSV_CTX_NO_PREEMPT: only ticketed flushing),
 * "clamp1" (SRSV_CTX_FIXED_CLAMP: preemptive flushing with the clamp held
 * at 1), "adaptive" (the default library).
 * Each mode runs --runs times per workload; figures are medians.  The
 * timeline of the median run (every --sample-ms) goes to
 * <csv-dir>/stall-<workload>-<mode>.csv for tools/plot_stall.py.
 *
 * Last line: summary: throughput_ratio=A p99_ratio=B commit_ratio=C
 * dio_ratio=D (adaptive over tickets; A, B, C from the buffered workload,
 * D the direct-I/O throughput ratio).
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
#include <sys/prctl.h>
#include <time.h>

#include <libspacersv/spacersv.h>

#include "bench_util.h"

#define KIB (UINT64_C(1) << 10)
#define MIB (UINT64_C(1) << 20)
#define NSEC_PER_USEC UINT64_C(1000)
#define NSEC_PER_MSEC UINT64_C(1000000)
#define NSEC_PER_SEC UINT64_C(1000000000)

/* A page, the unit of a buffered or direct write (fio --bs=4k). */
#define PAGE_BYTES (4 * KIB)
/* btrfs's default node size: the unit of copy-on-write. */
#define NODE_BYTES (16 * KIB)
/*
 * Key pointers per 16 KiB node: (16384 - 101 header bytes) / 33 bytes per
 * btrfs_key_ptr = 493.  With a few thousand leaves every tree here has
 * three levels (leaf, node, root), so a path copy costs at most 3 nodes.
 */
#define NODE_FANOUT 493
#define PATH_NODES 3
/* Writers are one file each; the delayed inode item is per file. */
#define MAX_WRITERS 64
/*
 * A writer sleeps once its modelled work is this far ahead of the clock:
 * sleeping per write (a few µs) would measure the timer, not the model.
 */
#define PACE_SLACK_NS (100 * NSEC_PER_USEC)
/*
 * Bandwidth estimation period of the dirty throttle.  Linux re-estimates
 * every 200 ms (BANDWIDTH_INTERVAL) on devices whose dirty limit takes
 * seconds to write; here the limit drains in ~10 ms, so 20 ms, averaged
 * with weight 1/4 (a memory of ~80 ms, where Linux averages over ~3 s).
 */
#define BW_INTERVAL_NS (20 * NSEC_PER_MSEC)
/* Linux's MAX_PAUSE (HZ / 5): no throttle pause is ever longer. */
#define MAX_PAUSE_NS (200 * NSEC_PER_MSEC)
/* How long main waits for writers blocked in a ticket once told to stop
 * before it shuts the ctx down (a writer stuck longer is a core bug). */
#define STOP_GRACE_NS (5 * NSEC_PER_SEC)

enum workload { WL_BUFFERED = 0, WL_DIO = 1, WL_COUNT = 2 };
static const char *const workload_names[WL_COUNT] = { "buffered", "dio" };

enum mode { MODE_TICKETS = 0, MODE_CLAMP1 = 1, MODE_ADAPTIVE = 2,
	    MODE_COUNT = 3 };
static const char *const mode_names[MODE_COUNT] = {
	"tickets", "clamp1", "adaptive"
};

struct params {
	unsigned writers;
	uint64_t duration_ms;
	unsigned runs;
	unsigned sample_ms;
	uint64_t pool_bytes;
	uint64_t item_bytes;
	uint64_t global_rsv_bytes;
	uint64_t other_used_bytes;
	unsigned fs_leaves;
	unsigned ext_leaves;
	uint64_t head_bytes;
	uint64_t inode_item_bytes;
	unsigned write_us;
	unsigned dev_us_per_mib;
	unsigned dev_lat_us;
	unsigned wb_chunk_pages;
	unsigned commit_us;
	unsigned commit_interval_ms;
	unsigned ref_us;
	unsigned jiffy_us;
	bool dirty_throttle;
	uint64_t dirty_limit_pages;	/* 0: from the pool, see below */
	unsigned dirty_bg_pct;		/* background threshold, % of limit */
	const char *csv_dir;
	unsigned modes;		/* bit per enum mode */
	unsigned workloads;	/* bit per enum workload */
	uint64_t seed;
};

/* ---- time ---- */

static void sleep_until(uint64_t deadline)
{
	struct timespec ts = {
		.tv_sec = (time_t)(deadline / NSEC_PER_SEC),
		.tv_nsec = (long)(deadline % NSEC_PER_SEC),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

/* Our model sleeps are tens of µs: the default 50 µs timer slack would
 * double them.  Per thread; the library's own threads are left alone. */
static void tight_timers(void)
{
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
}

static uint64_t rng_next(uint64_t *s)
{
	/* xorshift64*: cheap, good enough to pick leaves */
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * UINT64_C(2685821657736338717);
}

static uint64_t div_round_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

/* ---- the simulated device ---- */

/*
 * One queue, requests served in submission order, each costing
 * dev_lat_us + bytes at dev_us_per_mib.  The schedule is computed when a
 * request is submitted (start = max(now, end of the previous request)), so
 * the model is exact whatever the threads' wake-up delays: a synchronous
 * request (direct write, commit) sleeps once until its end; writeback
 * requests are completed by the device thread at their end, in order.
 */
struct io_req {
	struct io_req *next;
	uint64_t end_ns;
	uint64_t seq;
	unsigned pages;
	unsigned inode;
};

struct device {
	pthread_mutex_t lock;
	pthread_cond_t kick;	/* a writeback request was queued / stop */
	pthread_cond_t done;	/* done_seq moved */
	struct io_req *head, *tail;	/* writeback requests in flight */
	uint64_t next_seq;	/* last writeback seq handed out */
	uint64_t done_seq;	/* last writeback seq completed */
	uint64_t busy_until;	/* scheduled end of the last request */
	uint64_t busy_ns;	/* sum of request costs */
	bool stop;
	pthread_t thread;
};

/* ---- the engine ---- */

struct tree {
	unsigned leaves;
	unsigned blocks;	/* leaves + nodes + root */
	uint32_t *cow_trans;	/* transaction that last copied the block */
};

struct lat_log {
	uint64_t *ns;
	size_t nr, cap;
};

struct writer {
	struct engine *e;
	unsigned id;
	pthread_t thread;
	uint64_t rng;
	struct lat_log lat;
	/* Written by the writer, read by the sampler for the timeline. */
	atomic_uint_fast64_t blocked_ns;	/* in srsv_rsv_add() */
	atomic_uint_fast64_t throttled_ns;	/* in dirty throttle pauses */
	uint64_t ops;
	uint64_t reserve_errors;
	uint64_t pauses;
	/* Dirty throttle: pages dirtied since the last pause, and when. */
	uint64_t bdp_pages;
	uint64_t bdp_since;
};

struct sample {
	uint64_t t_ns;
	uint64_t may_use, pinned, used, total;
	unsigned clamp;
	uint64_t delalloc, ordered;
	unsigned queued;
	uint64_t ops;
	uint64_t delayed_refs_rsv;
	uint64_t commits;
	uint64_t dirty_pages, wb_pages;
	uint64_t blocked_ns, throttled_ns;	/* sums over the writers */
	uint64_t write_bw;			/* pages/s estimate */
};

struct engine {
	const struct params *p;
	enum workload wl;
	enum mode mode;
	struct srsv_ctx *ctx;
	struct srsv_space *meta;
	struct srsv_rsv *rsv_delalloc, *rsv_delrefs, *rsv_delops;
	uint64_t setup_used;

	/* Trees and the running transaction: protected by tree_lock. */
	pthread_mutex_t tree_lock;
	struct tree fs, ext;
	uint32_t trans;
	uint64_t trans_start_ns;	/* when the running transaction began */
	uint64_t pinned_trans;		/* pinned by the running transaction */
	uint64_t nr_refs;		/* queued delayed ref heads */
	uint64_t nr_items;		/* queued delayed inode items */
	uint32_t inode_trans[MAX_WRITERS];
	uint64_t rng;

	/* Dirty pages per file: protected by dirty_lock. */
	pthread_mutex_t dirty_lock;
	uint64_t dirty[MAX_WRITERS];
	uint64_t dirty_total;
	unsigned wb_cursor;		/* next file to write back */
	pthread_cond_t dirty_kick;	/* dirty over bg_thresh, or stop */
	bool flusher_idle;

	/*
	 * Dirty throttle, in pages.  wb_inflight: pages under writeback (on
	 * the device).  write_bw: measured writeback bandwidth in pages/s,
	 * updated by the device thread (bw_* under dev.lock).
	 */
	uint64_t dirty_limit, dirty_bg, dirty_freerun, dirty_setpoint;
	atomic_uint_fast64_t wb_inflight;
	atomic_uint_fast64_t write_bw;
	uint64_t bw_stamp, bw_pages;
	bool bw_idle;
	atomic_uint_fast64_t bg_wb_pages;	/* written by the bg flusher */
	pthread_t flusher;

	struct device dev;
	pthread_mutex_t commit_lock;	/* one commit at a time */

	/* Statistics. */
	atomic_uint_fast64_t ops;
	atomic_uint_fast64_t commits, commits_preempt, commits_timer;
	atomic_uint_fast64_t refs_run, items_run, wb_pages;
	atomic_uint_fast64_t flush_calls[SRSV_STATE_COUNT];
	atomic_uint_fast64_t lib_errors;
	atomic_int first_error_line;
	atomic_int first_error;
	atomic_bool stop;

	struct writer writers[MAX_WRITERS];
	atomic_uint writers_done;

	pthread_t sampler;
	pthread_t committer;
	struct sample *samples;
	size_t nr_samples, max_samples;
};

/*
 * Every library call of the engine goes through CHECK: a failure is a
 * library (or engine) bug, counted and reported with its line, never
 * silently absorbed into the figures.
 */
#define CHECK(e, call)							\
	do {								\
		int check_ret_ = (call);				\
		if (check_ret_ < 0)					\
			lib_error((e), __LINE__, check_ret_);		\
	} while (0)

static void lib_error(struct engine *e, int line, int ret)
{
	int zero = 0;

	if (atomic_fetch_add(&e->lib_errors, 1) == 0) {
		atomic_compare_exchange_strong(&e->first_error_line, &zero,
					       line);
		atomic_store(&e->first_error, ret);
	}
}

static uint64_t page_meta_need(const struct params *p)
{
	return 2 * p->head_bytes + PATH_NODES * NODE_BYTES;
}

static unsigned tree_blocks(unsigned leaves)
{
	return leaves + (unsigned)div_round_up(leaves, NODE_FANOUT) + 1;
}

/*
 * The trees' size, which is also the most one transaction can pin: every
 * block of both trees copied once.
 */
static uint64_t cow_max_bytes(const struct params *p)
{
	return (uint64_t)(tree_blocks(p->fs_leaves) +
			  tree_blocks(p->ext_leaves)) * NODE_BYTES;
}

/* Metadata free for reservations at the start: the pool less the trees,
 * the untouched metadata and the global reservation. */
static uint64_t free_meta_bytes(const struct params *p)
{
	uint64_t taken = p->other_used_bytes + p->global_rsv_bytes +
			 cow_max_bytes(p);

	return taken < p->pool_bytes ? p->pool_bytes - taken : 0;
}

/*
 * The delayed refs that one writeback pass leaves behind: completion turns
 * each page's reservation into two delayed-ref heads, which stay in the
 * pool until the refs run.  A pass is one request per writer's file.
 */
static uint64_t pass_refs_bytes(const struct params *p)
{
	return (uint64_t)p->writers * p->wb_chunk_pages * 2 * p->head_bytes;
}

/*
 * The dirty limit, in pages: --dirty-limit-kib, or by default the number
 * of dirty pages whose reservations fill what is left of the free metadata
 * once a transaction has copied every tree block and one writeback pass
 * has queued its delayed refs.  Then, when nothing flushes early (pinned
 * space grows until the timer commits, delayed refs pile up until tickets
 * run them), the pool fills before the dirty limit is reached and writers
 * wait on tickets, as in the series; when the pool is kept in shape, dirty
 * pages have room up to the limit and the throttle paces the writers.
 *
 * Without the refs' share (the default until 2026-11-29) the pool is
 * over-subscribed by construction whenever dirty pages near the limit with
 * a transaction's worth pinned: the room is then gone however well the
 * pool is flushed, and only a commit (or a wait) can make more.
 * --dirty-limit-kib 1272 gives that sizing back; docs/results-stall.md
 * reports both.  Never less than two writeback passes' worth, so the
 * background threshold and freerun stay meaningful on odd settings.
 */
static uint64_t dirty_limit_pages(const struct params *p)
{
	uint64_t free = free_meta_bytes(p);
	uint64_t taken = cow_max_bytes(p) + pass_refs_bytes(p);
	uint64_t min = 2 * (uint64_t)p->writers * p->wb_chunk_pages, lim;

	if (p->dirty_limit_pages)
		return p->dirty_limit_pages;
	lim = free > taken ? (free - taken) / p->item_bytes : 0;
	return lim > min ? lim : min;
}

static int tree_init(struct tree *t, unsigned leaves)
{
	t->leaves = leaves;
	t->blocks = tree_blocks(leaves);
	t->cow_trans = calloc(t->blocks, sizeof(*t->cow_trans));
	return t->cow_trans ? 0 : -ENOMEM;
}

/*
 * Copy the path to @leaf on write: every block not yet copied in the
 * running transaction costs a new 16 KiB block and pins the old one.
 * tree_lock held.  Returns the bytes the copy consumed.
 */
static uint64_t cow_path(struct engine *e, struct tree *t, unsigned leaf)
{
	unsigned path[PATH_NODES] = {
		leaf,
		t->leaves + leaf / NODE_FANOUT,
		t->blocks - 1,
	};
	uint64_t bytes = 0;

	for (unsigned i = 0; i < PATH_NODES; i++) {
		if (t->cow_trans[path[i]] != e->trans) {
			t->cow_trans[path[i]] = e->trans;
			bytes += NODE_BYTES;
		}
	}
	return bytes;
}

/*
 * @bytes of a reservation held in @rsv become metadata blocks: the new
 * copies are allocated and referenced, the old ones pinned until the
 * commit (used is unchanged, pinned grows, may_use shrinks).  tree_lock
 * held, so a commit cannot unpin bytes before they are pinned.
 */
static void cow_consume(struct engine *e, struct srsv_rsv *rsv, uint64_t bytes)
{
	if (!bytes)
		return;
	CHECK(e, srsv_rsv_use(rsv, bytes));
	CHECK(e, srsv_space_alloc(e->meta, bytes));
	CHECK(e, srsv_space_commit_used(e->meta, bytes));
	CHECK(e, srsv_space_pin(e->meta, bytes));
	e->pinned_trans += bytes;
}

/*
 * btrfs's finish_ordered_io for @pages pages of file @inode: insert the
 * file extent items (COW of fs-tree paths), queue two delayed ref heads
 * per extent and the inode update, release the rest of each page's
 * reservation.  Runs on the device thread.
 */
static void finish_ordered(struct engine *e, unsigned inode, unsigned pages,
			   bool buffered)
{
	const struct params *p = e->p;
	uint64_t cow = 0;

	pthread_mutex_lock(&e->tree_lock);
	for (unsigned i = 0; i < pages; i++)
		cow += cow_path(e, &e->fs,
				(unsigned)(rng_next(&e->rng) % e->fs.leaves));
	cow_consume(e, e->rsv_delalloc, cow);
	/* Refs and items are queued and their bytes moved under the same
	 * lock, so a runner never finds a queued ref without its bytes. */
	e->nr_refs += 2 * (uint64_t)pages;
	CHECK(e, srsv_rsv_migrate(e->rsv_delalloc, e->rsv_delrefs,
				  2 * pages * p->head_bytes, true));
	if (e->inode_trans[inode] != e->trans) {
		e->inode_trans[inode] = e->trans;
		e->nr_items++;
		CHECK(e, srsv_rsv_migrate(e->rsv_delalloc, e->rsv_delops,
					  p->inode_item_bytes, true));
	}
	/* The pages' share of the rsv size goes; what the rsv then holds
	 * above its size (the surplus of these pages) returns to the pool. */
	CHECK(e, srsv_rsv_release(e->rsv_delalloc, pages * p->item_bytes,
				  NULL));
	pthread_mutex_unlock(&e->tree_lock);
	if (buffered)
		CHECK(e, srsv_ctx_account_delalloc(e->ctx, 0,
				-(int64_t)(pages * PAGE_BYTES)));
	else
		CHECK(e, srsv_ctx_account_delalloc(e->ctx, 0,
				-(int64_t)PAGE_BYTES));
}

/* Book @cost_ns of device time; returns when it ends.  dev->lock held. */
static uint64_t dev_book(struct device *d, uint64_t cost_ns)
{
	uint64_t now = now_ns();
	uint64_t start = d->busy_until > now ? d->busy_until : now;

	d->busy_until = start + cost_ns;
	d->busy_ns += cost_ns;
	return d->busy_until;
}

/* A synchronous request: wait for the device, then for its own cost. */
static void dev_sync(struct device *d, uint64_t cost_ns)
{
	uint64_t end;

	pthread_mutex_lock(&d->lock);
	end = dev_book(d, cost_ns);
	pthread_mutex_unlock(&d->lock);
	sleep_until(end);
}

/* Queue a writeback request (heap-allocated, freed on completion). */
static uint64_t dev_submit_wb(struct device *d, struct io_req *r,
			      uint64_t cost_ns)
{
	uint64_t seq;

	r->next = NULL;
	pthread_mutex_lock(&d->lock);
	r->end_ns = dev_book(d, cost_ns);
	seq = r->seq = ++d->next_seq;
	if (d->tail)
		d->tail->next = r;
	else
		d->head = r;
	d->tail = r;
	pthread_cond_signal(&d->kick);
	pthread_mutex_unlock(&d->lock);
	return seq;
}

/* Wait until writeback request @seq (0: every one submitted so far) has
 * completed. */
static void dev_wait(struct device *d, uint64_t seq)
{
	pthread_mutex_lock(&d->lock);
	if (!seq)
		seq = d->next_seq;
	while (d->done_seq < seq)
		pthread_cond_wait(&d->done, &d->lock);
	pthread_mutex_unlock(&d->lock);
}

/*
 * Writeback bandwidth estimate for the dirty throttle (Linux's
 * wb_update_write_bandwidth(), simplified): pages completed per interval,
 * averaged with weight 1/4.  An interval in which the writeback queue ran
 * dry measures the demand, not the device, and is skipped (Linux skips
 * quiet periods likewise).  dev->lock held.
 */
static void update_write_bw(struct engine *e, unsigned pages, uint64_t now)
{
	uint64_t elapsed = now - e->bw_stamp;

	e->bw_pages += pages;
	if (elapsed < BW_INTERVAL_NS)
		return;
	if (!e->bw_idle) {
		uint64_t bw = atomic_load(&e->write_bw);
		uint64_t cur = e->bw_pages * NSEC_PER_SEC / elapsed;

		atomic_store(&e->write_bw, (3 * bw + cur) / 4);
	}
	e->bw_stamp = now;
	e->bw_pages = 0;
	e->bw_idle = false;
}

/* The writeback completion thread (btrfs's endio workers). */
static void *device_main(void *arg)
{
	struct engine *e = arg;
	struct device *d = &e->dev;

	tight_timers();
	pthread_mutex_lock(&d->lock);
	for (;;) {
		struct io_req *r;

		if (!d->head)
			e->bw_idle = true;
		while (!d->head && !d->stop)
			pthread_cond_wait(&d->kick, &d->lock);
		if (!d->head)
			break;
		r = d->head;
		pthread_mutex_unlock(&d->lock);
		sleep_until(r->end_ns);
		finish_ordered(e, r->inode, r->pages, true);
		atomic_fetch_add(&e->wb_pages, r->pages);
		atomic_fetch_sub(&e->wb_inflight, r->pages);
		pthread_mutex_lock(&d->lock);
		update_write_bw(e, r->pages, now_ns());
		d->head = r->next;
		if (!d->head)
			d->tail = NULL;
		d->done_seq = r->seq;
		free(r);
		pthread_cond_broadcast(&d->done);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

static uint64_t dev_cost_ns(const struct params *p, uint64_t bytes)
{
	return p->dev_lat_us * NSEC_PER_USEC +
	       bytes * p->dev_us_per_mib * NSEC_PER_USEC / MIB;
}

/* ---- flush states ---- */

/* Run up to @nr delayed ref heads (UINT64_MAX: all). */
static void run_delayed_refs(struct engine *e, uint64_t nr)
{
	const struct params *p = e->p;
	uint64_t cow = 0;

	pthread_mutex_lock(&e->tree_lock);
	if (nr > e->nr_refs)
		nr = e->nr_refs;
	e->nr_refs -= nr;
	pthread_mutex_unlock(&e->tree_lock);
	if (!nr)
		return;
	/* Updating the extent tree is CPU (and cached metadata) work. */
	sleep_until(now_ns() + nr * p->ref_us * NSEC_PER_USEC);
	pthread_mutex_lock(&e->tree_lock);
	for (uint64_t i = 0; i < nr; i++)
		cow += cow_path(e, &e->ext,
				(unsigned)(rng_next(&e->rng) % e->ext.leaves));
	cow_consume(e, e->rsv_delrefs, cow);
	CHECK(e, srsv_rsv_release(e->rsv_delrefs, nr * p->head_bytes, NULL));
	pthread_mutex_unlock(&e->tree_lock);
	atomic_fetch_add(&e->refs_run, nr);
}

/* Run up to @nr delayed inode items (UINT64_MAX: all). */
static void run_delayed_items(struct engine *e, uint64_t nr)
{
	const struct params *p = e->p;
	uint64_t cow = 0;

	pthread_mutex_lock(&e->tree_lock);
	if (nr > e->nr_items)
		nr = e->nr_items;
	e->nr_items -= nr;
	pthread_mutex_unlock(&e->tree_lock);
	if (!nr)
		return;
	sleep_until(now_ns() + nr * p->ref_us * NSEC_PER_USEC);
	pthread_mutex_lock(&e->tree_lock);
	for (uint64_t i = 0; i < nr; i++)
		cow += cow_path(e, &e->fs,
				(unsigned)(rng_next(&e->rng) % e->fs.leaves));
	cow_consume(e, e->rsv_delops, cow);
	CHECK(e, srsv_rsv_release(e->rsv_delops, nr * p->inode_item_bytes,
				  NULL));
	pthread_mutex_unlock(&e->tree_lock);
	atomic_fetch_add(&e->items_run, nr);
}

/*
 * Take up to @want dirty pages, file by file from a rotating cursor (btrfs
 * walks its delalloc inodes in list order), mark them ordered and queue
 * them on the device.  Returns the last request's seq (0: none).
 */
static uint64_t start_writeback(struct engine *e, uint64_t want,
			       uint64_t *started)
{
	const struct params *p = e->p;
	uint64_t taken[MAX_WRITERS] = { 0 };
	uint64_t total = 0, seq = 0;
	unsigned first;

	pthread_mutex_lock(&e->dirty_lock);
	first = e->wb_cursor;
	for (unsigned k = 0; k < p->writers && total < want; k++) {
		unsigned i = (first + k) % p->writers;
		uint64_t n = e->dirty[i];

		if (n > want - total)
			n = want - total;
		e->dirty[i] -= n;
		taken[i] = n;
		total += n;
		if (n)
			e->wb_cursor = (i + 1) % p->writers;
	}
	e->dirty_total -= total;
	/* Counted before they leave dirty_total's lock: the throttle sees
	 * dirty + writeback without a gap. */
	atomic_fetch_add(&e->wb_inflight, total);
	pthread_mutex_unlock(&e->dirty_lock);
	if (started)
		*started = total;
	if (!total)
		return 0;
	CHECK(e, srsv_ctx_account_delalloc(e->ctx, -(int64_t)(total * PAGE_BYTES),
					   (int64_t)(total * PAGE_BYTES)));
	for (unsigned i = 0; i < p->writers; i++) {
		while (taken[i]) {
			unsigned n = taken[i] > p->wb_chunk_pages ?
				     p->wb_chunk_pages : (unsigned)taken[i];
			struct io_req *r = calloc(1, sizeof(*r));

			if (!r) {
				/* Out of memory: put the pages back (they
				 * stay dirty) rather than lose them. */
				pthread_mutex_lock(&e->dirty_lock);
				e->dirty[i] += taken[i];
				e->dirty_total += taken[i];
				atomic_fetch_sub(&e->wb_inflight, taken[i]);
				pthread_mutex_unlock(&e->dirty_lock);
				CHECK(e, srsv_ctx_account_delalloc(e->ctx,
					(int64_t)(taken[i] * PAGE_BYTES),
					-(int64_t)(taken[i] * PAGE_BYTES)));
				break;
			}
			r->pages = n;
			r->inode = i;
			seq = dev_submit_wb(&e->dev, r,
					    dev_cost_ns(p, (uint64_t)n *
							PAGE_BYTES));
			taken[i] -= n;
		}
	}
	return seq;
}

static bool tickets_queued(struct engine *e)
{
	struct srsv_space_info info;

	if (srsv_space_snapshot(e->meta, &info, NULL, 0, NULL))
		return false;
	return info.nr_tickets + info.nr_priority_tickets > 0;
}

/*
 * btrfs's shrink_delalloc, in engine terms.  @bytes is the metadata the
 * library wants back; each dirty page frees (most of) one item's worth
 * when its writeback completes, so that is bytes / item_bytes pages, but
 * at least an eighth of the dirty pages per pass (upstream's
 * "max(to_reclaim, delalloc_bytes >> 3)": the hint tracks metadata, not
 * data, and later states are more aggressive if it is not enough).  Up to
 * three passes while tickets wait; DELALLOC sleeps a jiffy between passes,
 * the _WAIT states wait for the ordered I/O (also DELALLOC when more is
 * ordered than dirty: flushing more would not free space sooner).  A
 * preemptive call makes one pass and does not wait.
 */
static void flush_delalloc(struct engine *e, int state, uint64_t bytes,
			   bool for_preempt)
{
	const struct params *p = e->p;
	struct srsv_space_info info;
	bool wait = state != SRSV_STATE_DELALLOC;

	if (!for_preempt &&
	    !srsv_space_snapshot(e->meta, &info, NULL, 0, NULL) &&
	    info.ordered_bytes > info.delalloc_bytes)
		wait = true;

	for (int loops = 0; loops < 3; loops++) {
		uint64_t dirty, want, seq;

		pthread_mutex_lock(&e->dirty_lock);
		dirty = e->dirty_total;
		pthread_mutex_unlock(&e->dirty_lock);
		if (state == SRSV_STATE_DELALLOC_FULL) {
			want = dirty;
		} else {
			want = div_round_up(bytes, p->item_bytes);
			if (want < dirty / 8)
				want = dirty / 8;
		}
		seq = start_writeback(e, want, NULL);
		if (wait)
			dev_wait(&e->dev, seq);
		else
			sleep_until(now_ns() + p->jiffy_us * NSEC_PER_USEC);
		if (for_preempt || state == SRSV_STATE_DELALLOC_FULL)
			break;
		if (!tickets_queued(e))
			break;
	}
}

/*
 * Commit the running transaction: run the delayed work (btrfs runs all
 * delayed refs and items in the commit), switch to a new transaction,
 * write (fixed latency on the device), then unpin what the committed
 * transaction pinned.  Committing an empty transaction is free.
 */
enum commit_source { COMMIT_TIMER = 0, COMMIT_TICKETS = 1, COMMIT_PREEMPT = 2 };

static void commit_transaction(struct engine *e, enum commit_source src)
{
	uint64_t pinned;
	bool empty;

	pthread_mutex_lock(&e->commit_lock);
	pthread_mutex_lock(&e->tree_lock);
	empty = !e->pinned_trans && !e->nr_refs && !e->nr_items;
	pthread_mutex_unlock(&e->tree_lock);
	if (empty) {
		pthread_mutex_unlock(&e->commit_lock);
		return;
	}
	run_delayed_items(e, UINT64_MAX);
	run_delayed_refs(e, UINT64_MAX);
	pthread_mutex_lock(&e->tree_lock);
	pinned = e->pinned_trans;
	e->pinned_trans = 0;
	e->trans++;
	e->trans_start_ns = now_ns();
	pthread_mutex_unlock(&e->tree_lock);

	dev_sync(&e->dev, (uint64_t)e->p->commit_us * NSEC_PER_USEC);
	if (pinned)
		CHECK(e, srsv_space_unpin(e->meta, pinned));
	atomic_fetch_add(&e->commits, 1);
	if (src == COMMIT_PREEMPT)
		atomic_fetch_add(&e->commits_preempt, 1);
	else if (src == COMMIT_TIMER)
		atomic_fetch_add(&e->commits_timer, 1);
	pthread_mutex_unlock(&e->commit_lock);
}

/* The engine's srsv_flush_fn: called by the library's workers. */
static int engine_flush(struct srsv_space *space, enum srsv_flush_state state,
			uint64_t bytes, bool for_preempt, void *user)
{
	struct engine *e = user;
	const struct params *p = e->p;

	if (space != e->meta)
		return -EOPNOTSUPP;
	if ((unsigned)state < SRSV_STATE_COUNT)
		atomic_fetch_add(&e->flush_calls[state], 1);

	switch (state) {
	case SRSV_STATE_DELAYED_ITEMS_NR:
		run_delayed_items(e, div_round_up(bytes ? bytes : 1,
						  p->inode_item_bytes));
		return 0;
	case SRSV_STATE_DELAYED_ITEMS:
		run_delayed_items(e, UINT64_MAX);
		return 0;
	case SRSV_STATE_DELAYED_REFS_NR:
		run_delayed_refs(e, div_round_up(bytes ? bytes : 1,
						 p->head_bytes));
		return 0;
	case SRSV_STATE_DELAYED_REFS:
		run_delayed_refs(e, UINT64_MAX);
		return 0;
	case SRSV_STATE_DELALLOC:
	case SRSV_STATE_DELALLOC_WAIT:
	case SRSV_STATE_DELALLOC_FULL:
		flush_delalloc(e, state, bytes, for_preempt);
		return 0;
	case SRSV_STATE_ALLOC_CHUNK:
	case SRSV_STATE_ALLOC_CHUNK_FORCE:
		/* The device is fully allocated: the pool cannot grow. */
		return -ENOSPC;
	case SRSV_STATE_COMMIT_TRANS:
		commit_transaction(e, for_preempt ? COMMIT_PREEMPT :
						    COMMIT_TICKETS);
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

/* ---- the dirty throttle (balance_dirty_pages) ---- */

/* Dirty pages as the throttle counts them: dirty plus under writeback. */
static uint64_t nr_dirty(struct engine *e)
{
	uint64_t dirty;

	pthread_mutex_lock(&e->dirty_lock);
	dirty = e->dirty_total;
	pthread_mutex_unlock(&e->dirty_lock);
	return dirty + atomic_load(&e->wb_inflight);
}

/*
 * The background flusher (the kernel's wb_workfn for background
 * writeback): while more than dirty_bg pages are dirty (not counting those
 * already under writeback, as wb_over_bg_thresh()), write them back, one
 * request per file per pass so that the threshold is re-read often, with
 * at most two passes on the device (the block layer's queue depth; deeper
 * would only move pages from dirty to writeback, both throttled alike).
 * It frees reservations as writeback completes, without the library
 * asking: that is the point of comparing it with preemptive flushing.
 */
static void *flusher_main(void *arg)
{
	struct engine *e = arg;
	const struct params *p = e->p;
	uint64_t prev = 0;

	tight_timers();
	for (;;) {
		uint64_t want, seq, started = 0;

		pthread_mutex_lock(&e->dirty_lock);
		while (e->dirty_total <= e->dirty_bg && !atomic_load(&e->stop)) {
			e->flusher_idle = true;
			pthread_cond_wait(&e->dirty_kick, &e->dirty_lock);
		}
		e->flusher_idle = false;
		want = e->dirty_total - e->dirty_bg;
		pthread_mutex_unlock(&e->dirty_lock);
		if (atomic_load(&e->stop))
			break;
		if (want < p->wb_chunk_pages)
			want = p->wb_chunk_pages;
		if (want > (uint64_t)p->writers * p->wb_chunk_pages)
			want = (uint64_t)p->writers * p->wb_chunk_pages;
		seq = start_writeback(e, want, &started);
		atomic_fetch_add(&e->bg_wb_pages, started);
		if (prev)
			dev_wait(&e->dev, prev);
		prev = seq;
	}
	return NULL;
}

/*
 * Linux's pos_ratio (the global part, a cubic): 2 at freerun, 1 at the
 * setpoint, 0 at the limit.  The per-device line that Linux multiplies in
 * is left out: there is one device and one writeback queue.
 */
static double pos_ratio(const struct engine *e, uint64_t dirty)
{
	double x, pos;

	if (dirty >= e->dirty_limit)
		return 0;
	x = ((double)e->dirty_setpoint - (double)dirty) /
	    (double)(e->dirty_limit - e->dirty_setpoint + 1);
	pos = 1 + x * x * x;
	return pos < 0 ? 0 : pos > 2 ? 2 : pos;
}

/*
 * balance_dirty_pages() after a writer dirtied a page.  Below freerun the
 * writer runs free.  Above it, the writers together may dirty pos_ratio x
 * the writeback bandwidth, so each of the N writers gets bw x pos / N pages
 * per second (Linux estimates this per-task dirty_ratelimit with a control
 * loop; with N identical writers it converges to bw / N, which we use
 * directly).  The writer sleeps off the difference between the time its
 * pages since the last pause should have taken at that rate and the time
 * they took (Linux's "period - elapsed"), once it reaches a jiffy (no
 * shorter sleep exists in the kernel); a pause is at most the time to write
 * an eighth of the dirty pages (wb_max_pause(): longer, and the device
 * could run dry while the writers sleep) and at most 200 ms.  At or above
 * the limit it sleeps until dirty drops below it.  Returns the time paused.
 */
static uint64_t balance_dirty_pages(struct writer *w)
{
	struct engine *e = w->e;
	const struct params *p = e->p;
	uint64_t jiffy = p->jiffy_us * NSEC_PER_USEC;
	uint64_t dirty = nr_dirty(e), now = now_ns(), paused = 0;

	if (dirty <= e->dirty_freerun) {
		w->bdp_pages = 0;
		w->bdp_since = now;
		return 0;
	}
	w->bdp_pages++;
	while (!atomic_load_explicit(&e->stop, memory_order_relaxed)) {
		/* At least a page a second: a device that completed nothing
		 * for a while still gets a finite (200 ms) pause. */
		double bw = (double)(atomic_load(&e->write_bw) ?: 1);
		double rate = bw * pos_ratio(e, dirty) / p->writers;
		uint64_t max_pause = (uint64_t)((double)dirty / 8 / bw *
						NSEC_PER_SEC);
		uint64_t pause, elapsed = now - w->bdp_since, t;

		if (max_pause > MAX_PAUSE_NS)
			max_pause = MAX_PAUSE_NS;
		if (max_pause < jiffy)
			max_pause = jiffy;
		if (rate > 0) {
			uint64_t period = (uint64_t)((double)w->bdp_pages *
						     NSEC_PER_SEC / rate);

			if (period <= elapsed) {
				/* Slow enough already (blocked elsewhere). */
				w->bdp_pages = 0;
				w->bdp_since = now;
				break;
			}
			if (period - elapsed < jiffy)
				break;	/* pause later, for more pages */
			pause = period - elapsed;
			if (pause > max_pause)
				pause = max_pause;
		} else {
			pause = max_pause;
		}
		sleep_until(now + pause);
		t = now_ns();
		paused += t - now;
		w->pauses++;
		w->bdp_pages = 0;
		w->bdp_since = t;
		now = t;
		dirty = nr_dirty(e);
		if (dirty < e->dirty_limit)
			break;
	}
	return paused;
}

/* ---- writers ---- */

static int lat_push(struct lat_log *l, uint64_t ns)
{
	if (l->nr == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 65536;
		uint64_t *n = realloc(l->ns, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		l->ns = n;
		l->cap = cap;
	}
	l->ns[l->nr++] = ns;
	return 0;
}

/*
 * Pace a writer to one write per write_us of modelled work.  @vt is the
 * writer's virtual clock: the caller moves it past every wait (a stall is
 * lost time, never made up in a burst), while a late wake-up of this
 * thread (the machine is shared) is made up, so the writer's speed is the
 * model's, not the scheduler's.
 */
static void pace(const struct params *p, uint64_t *vt)
{
	*vt += p->write_us * NSEC_PER_USEC;
	if (*vt > now_ns() + PACE_SLACK_NS)
		sleep_until(*vt);
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct engine *e = w->e;
	const struct params *p = e->p;
	uint64_t vt = now_ns();

	tight_timers();
	while (!atomic_load_explicit(&e->stop, memory_order_relaxed)) {
		uint64_t t0, t1;
		int ret;

		t0 = now_ns();
		ret = srsv_rsv_add(e->rsv_delalloc, p->item_bytes,
				   SRSV_FLUSH_ALL, 0);
		t1 = now_ns();
		atomic_fetch_add_explicit(&w->blocked_ns, t1 - t0,
					  memory_order_relaxed);
		vt += t1 - t0;
		if (lat_push(&w->lat, t1 - t0))
			break;
		if (ret) {
			w->reserve_errors++;
			if (ret == -ESHUTDOWN)
				break;
			pace(p, &vt);
			continue;
		}
		pace(p, &vt);
		if (e->wl == WL_BUFFERED) {
			/* Report the dirty page before publishing it: once it
			 * is on the list, writeback may take it and report
			 * it written, which must not find delalloc short. */
			CHECK(e, srsv_ctx_account_delalloc(e->ctx, PAGE_BYTES,
							   0));
			pthread_mutex_lock(&e->dirty_lock);
			e->dirty[w->id]++;
			e->dirty_total++;
			/* wb_start_background_writeback() */
			if (p->dirty_throttle && e->flusher_idle &&
			    e->dirty_total > e->dirty_bg) {
				e->flusher_idle = false;
				pthread_cond_signal(&e->dirty_kick);
			}
			pthread_mutex_unlock(&e->dirty_lock);
			if (p->dirty_throttle) {
				uint64_t paused = balance_dirty_pages(w);

				atomic_fetch_add_explicit(&w->throttled_ns,
							  paused,
							  memory_order_relaxed);
				vt += paused;
			}
		} else {
			/* The write, then its completion in this thread;
			 * waiting for the device is lost time too. */
			CHECK(e, srsv_ctx_account_delalloc(e->ctx, 0,
							   PAGE_BYTES));
			t0 = now_ns();
			dev_sync(&e->dev, dev_cost_ns(p, PAGE_BYTES));
			finish_ordered(e, w->id, 1, false);
			vt += now_ns() - t0;
		}
		w->ops++;
		atomic_fetch_add_explicit(&e->ops, 1, memory_order_relaxed);
	}
	atomic_fetch_add(&e->writers_done, 1);
	return NULL;
}

/* ---- timeline ---- */

static void *sampler_main(void *arg)
{
	struct engine *e = arg;
	uint64_t start = now_ns(), next = start;

	tight_timers();
	while (!atomic_load(&e->stop) && e->nr_samples < e->max_samples) {
		struct srsv_space_info info;
		struct sample *s = &e->samples[e->nr_samples];

		if (srsv_space_snapshot(e->meta, &info, NULL, 0, NULL) == 0) {
			s->t_ns = now_ns() - start;
			s->may_use = info.may_use;
			s->pinned = info.pinned;
			s->used = info.used;
			s->total = info.total;
			s->clamp = info.clamp;
			s->delalloc = info.delalloc_bytes;
			s->ordered = info.ordered_bytes;
			s->queued = info.nr_tickets + info.nr_priority_tickets;
			s->ops = atomic_load(&e->ops);
			s->delayed_refs_rsv = info.delayed_refs_rsv_reserved;
			s->commits = atomic_load(&e->commits);
			pthread_mutex_lock(&e->dirty_lock);
			s->dirty_pages = e->dirty_total;
			pthread_mutex_unlock(&e->dirty_lock);
			s->wb_pages = atomic_load(&e->wb_inflight);
			for (unsigned i = 0; i < e->p->writers; i++) {
				s->blocked_ns += atomic_load(
					&e->writers[i].blocked_ns);
				s->throttled_ns += atomic_load(
					&e->writers[i].throttled_ns);
			}
			s->write_bw = atomic_load(&e->write_bw);
			e->nr_samples++;
		}
		next += e->p->sample_ms * NSEC_PER_MSEC;
		sleep_until(next);
	}
	return NULL;
}

/*
 * The transaction timer (btrfs's transaction_kthread, commit_interval): it
 * commits the running transaction once it is --commit-interval-ms old.  A
 * younger one (a commit from elsewhere started it) is left alone until it
 * reaches that age, as in btrfs, so commits from the flushers replace
 * timer commits rather than add to them.
 */
static uint64_t trans_start(struct engine *e)
{
	uint64_t t;

	pthread_mutex_lock(&e->tree_lock);
	t = e->trans_start_ns;
	pthread_mutex_unlock(&e->tree_lock);
	return t;
}

static void *committer_main(void *arg)
{
	struct engine *e = arg;
	uint64_t interval = (uint64_t)e->p->commit_interval_ms * NSEC_PER_MSEC;
	uint64_t next;

	tight_timers();
	next = trans_start(e) + interval;
	for (;;) {
		uint64_t start;

		/* Look at the stop flag every 10 ms so a run ends on time. */
		while (now_ns() < next && !atomic_load(&e->stop)) {
			uint64_t t = now_ns() + 10 * NSEC_PER_MSEC;

			sleep_until(t < next ? t : next);
		}
		if (atomic_load(&e->stop))
			break;
		start = trans_start(e);
		if (start + interval <= now_ns()) {
			commit_transaction(e, COMMIT_TIMER);
			/* An empty transaction is not committed: look again
			 * a full interval later, as btrfs does with none. */
			if (trans_start(e) == start) {
				next = now_ns() + interval;
				continue;
			}
		}
		next = trans_start(e) + interval;
	}
	return NULL;
}

static int write_csv(const struct engine *e, const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	fprintf(f, "t_ms,may_use,pinned,used,total,clamp,delalloc,ordered,"
		   "queued_tickets,ops,delayed_refs_rsv,commits,dirty_pages,"
		   "wb_pages,blocked_ms,throttled_ms,write_bw\n");
	for (size_t i = 0; i < e->nr_samples; i++) {
		const struct sample *s = &e->samples[i];

		fprintf(f, "%.3f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			",%u,%" PRIu64 ",%" PRIu64 ",%u,%" PRIu64 ",%" PRIu64
			",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.3f,%.3f,%"
			PRIu64 "\n",
			(double)s->t_ns / NSEC_PER_MSEC, s->may_use, s->pinned,
			s->used, s->total, s->clamp, s->delalloc, s->ordered,
			s->queued, s->ops, s->delayed_refs_rsv, s->commits,
			s->dirty_pages, s->wb_pages,
			(double)s->blocked_ns / NSEC_PER_MSEC,
			(double)s->throttled_ns / NSEC_PER_MSEC, s->write_bw);
	}
	return fclose(f) ? -errno : 0;
}

/* ---- one run ---- */

struct result {
	bool ok;
	double ops_per_s;
	double blocked_share;
	double throttled_share;		/* of writer time, dirty throttle */
	uint64_t pauses;
	uint64_t bg_wb_pages;
	uint64_t p50_ns, p99_ns, max_ns;
	uint64_t tickets;		/* granted + failed */
	uint64_t tickets_failed;
	uint64_t async_runs, preempt_runs;
	uint64_t flushes[SRSV_STATE_COUNT];
	uint64_t preempt_flushes[SRSV_STATE_COUNT];
	uint64_t commits, commits_preempt, commits_timer;
	uint64_t refs_run, wb_pages;
	uint64_t reserve_errors;
	uint64_t lib_errors;
	double device_busy;		/* share of the run the device worked */
	char check[256];		/* accounting check verdict */
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Reserve, allocate and reference @bytes: metadata that exists already. */
static int preload_used(struct engine *e, uint64_t bytes)
{
	int ret = srsv_space_reserve(e->meta, bytes, SRSV_NO_FLUSH, 0);

	if (!ret)
		ret = srsv_space_alloc(e->meta, bytes);
	if (!ret)
		ret = srsv_space_commit_used(e->meta, bytes);
	return ret;
}

static int engine_init(struct engine *e, const struct params *p,
		       enum workload wl, enum mode mode, uint64_t seed)
{
	struct srsv_config cfg;
	int ret;

	memset(e, 0, sizeof(*e));
	e->p = p;
	e->wl = wl;
	e->mode = mode;
	e->rng = seed | 1;
	e->trans = 1;
	pthread_mutex_init(&e->tree_lock, NULL);
	pthread_mutex_init(&e->dirty_lock, NULL);
	pthread_mutex_init(&e->commit_lock, NULL);
	pthread_mutex_init(&e->dev.lock, NULL);
	pthread_cond_init(&e->dirty_kick, NULL);
	pthread_cond_init(&e->dev.kick, NULL);
	pthread_cond_init(&e->dev.done, NULL);
	if (tree_init(&e->fs, p->fs_leaves) || tree_init(&e->ext, p->ext_leaves))
		return -ENOMEM;
	e->max_samples = p->duration_ms / p->sample_ms + 16;
	e->samples = calloc(e->max_samples, sizeof(*e->samples));
	if (!e->samples)
		return -ENOMEM;

	srsv_config_init(&cfg);
	cfg.flush = engine_flush;
	cfg.user = e;
	cfg.pool_bytes[SRSV_POOL_METADATA] = p->pool_bytes;
	cfg.pool_bytes[SRSV_POOL_DATA] = 64 * (uint64_t)1 << 30;
	cfg.pool_bytes[SRSV_POOL_SYSTEM] = 32 * MIB;
	/* Every device byte is in a pool: no overcommit, no growth. */
	cfg.unallocated_bytes = 0;
	cfg.device_bytes = cfg.pool_bytes[SRSV_POOL_DATA] + p->pool_bytes +
			   cfg.pool_bytes[SRSV_POOL_SYSTEM];
	cfg.item_bytes = p->item_bytes;
	cfg.global_rsv_bytes = p->global_rsv_bytes;
	if (mode == MODE_TICKETS)
		cfg.flags |= SRSV_CTX_NO_PREEMPT;
	if (mode == MODE_CLAMP1)
		cfg.flags |= SRSV_CTX_FIXED_CLAMP;
	ret = srsv_ctx_create(&cfg, &e->ctx);
	if (ret)
		return ret;
	e->meta = srsv_ctx_space(e->ctx, SRSV_POOL_METADATA);
	e->rsv_delalloc = srsv_ctx_rsv(e->ctx, SRSV_RSV_DELALLOC);
	e->rsv_delrefs = srsv_ctx_rsv(e->ctx, SRSV_RSV_DELREFS);
	e->rsv_delops = srsv_ctx_rsv(e->ctx, SRSV_RSV_DELOPS);
	if (!e->meta || !e->rsv_delalloc || !e->rsv_delrefs || !e->rsv_delops)
		return -EINVAL;

	e->setup_used = p->other_used_bytes +
			(uint64_t)(e->fs.blocks + e->ext.blocks) * NODE_BYTES;
	ret = preload_used(e, e->setup_used);
	if (ret)
		return ret;

	e->dirty_limit = dirty_limit_pages(p);
	e->dirty_bg = e->dirty_limit * p->dirty_bg_pct / 100;
	e->dirty_freerun = (e->dirty_limit + e->dirty_bg) / 2;
	e->dirty_setpoint = (e->dirty_freerun + e->dirty_limit) / 2;
	/* Until measured: the device's rate for writeback requests (Linux
	 * starts from a fixed 100 MB/s). */
	atomic_store(&e->write_bw, p->wb_chunk_pages * NSEC_PER_SEC /
		     dev_cost_ns(p, (uint64_t)p->wb_chunk_pages * PAGE_BYTES));
	e->bw_stamp = now_ns();
	return pthread_create(&e->dev.thread, NULL, device_main, e) ? -EAGAIN :
									0;
}

/*
 * At quiescence every byte of may_use must be held by someone the engine
 * knows: the standard reservations, and the DELALLOC one exactly by the
 * dirty pages (no I/O is in flight).  Pinned must be what the running
 * transaction pinned, used what was preloaded (COW replaces blocks).
 */
static void check_accounting(struct engine *e, struct result *r)
{
	const struct params *p = e->p;
	struct srsv_space_info info;
	struct srsv_rsv_info ri[SRSV_RSV_TYPE_COUNT];
	static const enum srsv_rsv_type types[] = {
		SRSV_RSV_GLOBAL, SRSV_RSV_DELALLOC, SRSV_RSV_TRANS,
		SRSV_RSV_DELOPS, SRSV_RSV_DELREFS,
	};
	uint64_t held = 0;
	int n = 0;

	if (srsv_space_snapshot(e->meta, &info, NULL, 0, NULL)) {
		snprintf(r->check, sizeof(r->check), "snapshot failed");
		return;
	}
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct srsv_rsv *rsv = srsv_ctx_rsv(e->ctx, types[i]);

		memset(&ri[types[i]], 0, sizeof(ri[0]));
		if (rsv && srsv_rsv_get_info(rsv, &ri[types[i]]) == 0)
			held += ri[types[i]].reserved;
	}
	if (info.may_use != held)
		n += snprintf(r->check + n, sizeof(r->check) - (size_t)n,
			      "may_use %" PRIu64 " != rsvs %" PRIu64 "; ",
			      info.may_use, held);
	if (ri[SRSV_RSV_DELALLOC].reserved != e->dirty_total * p->item_bytes &&
	    n < 200)
		n += snprintf(r->check + n, sizeof(r->check) - (size_t)n,
			      "delalloc rsv %" PRIu64 " != %" PRIu64
			      " dirty pages; ",
			      ri[SRSV_RSV_DELALLOC].reserved, e->dirty_total);
	if (ri[SRSV_RSV_DELREFS].reserved != e->nr_refs * p->head_bytes &&
	    n < 200)
		n += snprintf(r->check + n, sizeof(r->check) - (size_t)n,
			      "delrefs rsv %" PRIu64 " != %" PRIu64 " heads; ",
			      ri[SRSV_RSV_DELREFS].reserved, e->nr_refs);
	if (info.pinned != e->pinned_trans && n < 200)
		n += snprintf(r->check + n, sizeof(r->check) - (size_t)n,
			      "pinned %" PRIu64 " != %" PRIu64 "; ",
			      info.pinned, e->pinned_trans);
	if ((info.used != e->setup_used || info.reserved) && n < 200)
		n += snprintf(r->check + n, sizeof(r->check) - (size_t)n,
			      "used %" PRIu64 " reserved %" PRIu64 "; ",
			      info.used, info.reserved);
	if (!n)
		snprintf(r->check, sizeof(r->check), "ok");
}

static void engine_free(struct engine *e)
{
	for (unsigned i = 0; i < MAX_WRITERS; i++)
		free(e->writers[i].lat.ns);
	free(e->fs.cow_trans);
	free(e->ext.cow_trans);
	free(e->samples);
	srsv_ctx_destroy(e->ctx);
}

static int run_once(const struct params *p, enum workload wl, enum mode mode,
		    unsigned run, struct result *r, const char *csv_path)
{
	struct engine *e = calloc(1, sizeof(*e));
	struct srsv_space_info info;
	uint64_t t0, t1, blocked = 0, throttled = 0, nr_lat = 0, *all;
	size_t k = 0;
	int ret;

	memset(r, 0, sizeof(*r));
	if (!e)
		return -ENOMEM;
	ret = engine_init(e, p, wl, mode,
			  p->seed + 7919 * run + 104729 * (uint64_t)wl);
	if (ret) {
		fprintf(stderr, "stall: setup failed: %s\n", strerror(-ret));
		if (e->ctx)
			srsv_ctx_destroy(e->ctx);
		free(e);
		return ret;
	}

	t0 = now_ns();
	pthread_mutex_lock(&e->tree_lock);
	e->trans_start_ns = t0;	/* the first transaction starts with the run */
	pthread_mutex_unlock(&e->tree_lock);
	pthread_create(&e->sampler, NULL, sampler_main, e);
	if (p->commit_interval_ms)
		pthread_create(&e->committer, NULL, committer_main, e);
	if (p->dirty_throttle && wl == WL_BUFFERED)
		pthread_create(&e->flusher, NULL, flusher_main, e);
	for (unsigned i = 0; i < p->writers; i++) {
		struct writer *w = &e->writers[i];

		w->e = e;
		w->id = i;
		w->rng = p->seed ^ (i + 1);
		pthread_create(&w->thread, NULL, writer_main, w);
	}
	sleep_until(t0 + p->duration_ms * NSEC_PER_MSEC);
	atomic_store(&e->stop, true);
	t1 = now_ns();

	/* Writers blocked in a ticket get it once flushing catches up; one
	 * still stuck after the grace period is reported, and the shutdown
	 * fails its ticket. */
	while (atomic_load(&e->writers_done) < p->writers &&
	       now_ns() - t1 < STOP_GRACE_NS)
		sleep_until(now_ns() + NSEC_PER_MSEC);
	if (atomic_load(&e->writers_done) < p->writers)
		fprintf(stderr, "stall: %s/%s: %u writer(s) still blocked %.1f s "
			"after stop (suspect a lost wake-up or a stuck flusher)\n",
			workload_names[wl], mode_names[mode],
			p->writers - atomic_load(&e->writers_done),
			(double)STOP_GRACE_NS / NSEC_PER_SEC);
	CHECK(e, srsv_ctx_shutdown(e->ctx));
	for (unsigned i = 0; i < p->writers; i++)
		pthread_join(e->writers[i].thread, NULL);
	pthread_join(e->sampler, NULL);
	if (p->commit_interval_ms)
		pthread_join(e->committer, NULL);
	if (p->dirty_throttle && wl == WL_BUFFERED) {
		pthread_mutex_lock(&e->dirty_lock);
		pthread_cond_signal(&e->dirty_kick);
		pthread_mutex_unlock(&e->dirty_lock);
		pthread_join(e->flusher, NULL);
	}
	pthread_mutex_lock(&e->dev.lock);
	e->dev.stop = true;
	pthread_cond_signal(&e->dev.kick);
	pthread_mutex_unlock(&e->dev.lock);
	pthread_join(e->dev.thread, NULL);

	check_accounting(e, r);
	if (srsv_space_snapshot(e->meta, &info, NULL, 0, NULL))
		abort();

	for (unsigned i = 0; i < p->writers; i++) {
		struct writer *w = &e->writers[i];

		blocked += atomic_load(&w->blocked_ns);
		throttled += atomic_load(&w->throttled_ns);
		r->pauses += w->pauses;
		nr_lat += w->lat.nr;
		r->reserve_errors += w->reserve_errors;
	}
	all = malloc((nr_lat ? nr_lat : 1) * sizeof(*all));
	if (!all) {
		engine_free(e);
		free(e);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < p->writers; i++) {
		memcpy(all + k, e->writers[i].lat.ns,
		       e->writers[i].lat.nr * sizeof(*all));
		k += e->writers[i].lat.nr;
	}
	qsort(all, k, sizeof(*all), cmp_u64);
	if (k) {
		r->p50_ns = all[k / 2];
		r->p99_ns = all[(k * 99) / 100];
		r->max_ns = all[k - 1];
	}
	free(all);

	r->ops_per_s = (double)atomic_load(&e->ops) * NSEC_PER_SEC /
		       (double)(t1 - t0);
	r->blocked_share = (double)blocked / ((double)p->writers * (t1 - t0));
	r->throttled_share = (double)throttled /
			     ((double)p->writers * (t1 - t0));
	r->bg_wb_pages = atomic_load(&e->bg_wb_pages);
	r->tickets = info.tickets_granted + info.tickets_failed;
	r->tickets_failed = info.tickets_failed;
	r->async_runs = info.async_runs;
	r->preempt_runs = info.preempt_runs;
	memcpy(r->flushes, info.flushes, sizeof(info.flushes));
	memcpy(r->preempt_flushes, info.preempt_flushes,
	       sizeof(info.preempt_flushes));
	r->commits = atomic_load(&e->commits);
	r->commits_preempt = atomic_load(&e->commits_preempt);
	r->commits_timer = atomic_load(&e->commits_timer);
	r->refs_run = atomic_load(&e->refs_run);
	r->wb_pages = atomic_load(&e->wb_pages);
	r->lib_errors = atomic_load(&e->lib_errors);
	r->device_busy = (double)e->dev.busy_ns / (double)(t1 - t0);
	if (r->lib_errors)
		fprintf(stderr, "stall: %s/%s: %" PRIu64 " library call(s) "
			"failed, first at bench/stall.c:%d: %s\n",
			workload_names[wl], mode_names[mode], r->lib_errors,
			atomic_load(&e->first_error_line),
			strerror(-atomic_load(&e->first_error)));
	r->ok = !r->lib_errors && !strcmp(r->check, "ok");
	if (csv_path) {
		ret = write_csv(e, csv_path);
		if (ret)
			fprintf(stderr, "stall: %s: %s\n", csv_path,
				strerror(-ret));
	}
	engine_free(e);
	free(e);
	return 0;
}

/* ---- medians and report ---- */

static double median_d(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Median of a field over the runs, as a double. */
#define MEDIAN(res, n, expr)						\
	({								\
		double v_[64];						\
		for (unsigned i_ = 0; i_ < (n); i_++)			\
			v_[i_] = (double)(res)[i_].expr;		\
		median_d(v_, (n));					\
	})

struct summary {
	bool have;
	double ops, blocked, throttled, p50, p99, max, tickets, async_runs;
	double preempt_runs, bg_wb_pages, wb_pages, pauses;
	double commits, commits_preempt, commits_timer, device_busy;
	double flushes[SRSV_STATE_COUNT], preempt_flushes[SRSV_STATE_COUNT];
	unsigned median_run;
	bool ok;
};

static void summarise(const struct result *res, unsigned n, struct summary *s)
{
	double best = INFINITY;

	memset(s, 0, sizeof(*s));
	s->have = true;
	s->ok = true;
	for (unsigned i = 0; i < n; i++)
		s->ok = s->ok && res[i].ok;
	s->ops = MEDIAN(res, n, ops_per_s);
	s->blocked = MEDIAN(res, n, blocked_share);
	s->throttled = MEDIAN(res, n, throttled_share);
	s->bg_wb_pages = MEDIAN(res, n, bg_wb_pages);
	s->wb_pages = MEDIAN(res, n, wb_pages);
	s->pauses = MEDIAN(res, n, pauses);
	s->p50 = MEDIAN(res, n, p50_ns);
	s->p99 = MEDIAN(res, n, p99_ns);
	s->max = MEDIAN(res, n, max_ns);
	s->tickets = MEDIAN(res, n, tickets);
	s->async_runs = MEDIAN(res, n, async_runs);
	s->preempt_runs = MEDIAN(res, n, preempt_runs);
	s->commits = MEDIAN(res, n, commits);
	s->commits_preempt = MEDIAN(res, n, commits_preempt);
	s->commits_timer = MEDIAN(res, n, commits_timer);
	s->device_busy = MEDIAN(res, n, device_busy);
	for (int st = 0; st < SRSV_STATE_COUNT; st++) {
		s->flushes[st] = MEDIAN(res, n, flushes[st]);
		s->preempt_flushes[st] = MEDIAN(res, n, preempt_flushes[st]);
	}
	/* The run closest to the median throughput: its timeline is kept. */
	for (unsigned i = 0; i < n; i++) {
		double d = fabs(res[i].ops_per_s - s->ops);

		if (d < best) {
			best = d;
			s->median_run = i;
		}
	}
}

static void print_summary(enum workload wl, enum mode m,
			  const struct summary *s)
{
	printf("%-8s %-8s %9.0f %7.1f%% %7.1f%% %9.1f %9.1f %9.1f %8.0f %6.0f "
	       "%7.0f %5.0f(%.0f/%.0f) %5.0f%% %s\n",
	       workload_names[wl], mode_names[m], s->ops, 100 * s->blocked,
	       100 * s->throttled,
	       s->p50 / NSEC_PER_USEC, s->p99 / NSEC_PER_USEC,
	       s->max / NSEC_PER_USEC, s->tickets, s->async_runs,
	       s->preempt_runs, s->commits, s->commits_timer,
	       s->commits_preempt, 100 * s->device_busy,
	       s->ok ? "ok" : "CHECK-FAILED");
}

static void print_flushes(enum workload wl, enum mode m,
			  const struct summary *s)
{
	printf("  %s/%s flushes (async+priority / preempt):", workload_names[wl],
	       mode_names[m]);
	for (int st = 1; st < SRSV_STATE_COUNT; st++) {
		if (!s->flushes[st])
			continue;
		printf(" %s=%.0f/%.0f", srsv_state_name(st),
		       s->flushes[st] - s->preempt_flushes[st],
		       s->preempt_flushes[st]);
	}
	if (wl == WL_BUFFERED)
		printf("; pages written back %.0f, by the bg flusher %.0f; "
		       "throttle pauses %.0f", s->wb_pages, s->bg_wb_pages,
		       s->pauses);
	printf("\n");
}

/* Keep the median run's timeline as stall-<workload>-<mode>.csv. */
static void keep_median_timeline(const struct params *p, int wl, int m,
				 unsigned median_run)
{
	char from[4096], to[4096];

	for (unsigned run = 0; run < p->runs; run++) {
		snprintf(from, sizeof(from), "%s/stall-%s-%s.run%u.csv",
			 p->csv_dir, workload_names[wl], mode_names[m], run);
		if (run != median_run) {
			remove(from);
			continue;
		}
		snprintf(to, sizeof(to), "%s/stall-%s-%s.csv", p->csv_dir,
			 workload_names[wl], mode_names[m]);
		if (rename(from, to))
			fprintf(stderr, "stall: %s: %s\n", to, strerror(errno));
	}
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: bench_stall [options]\n"
"  --duration-ms N    length of one run (default 4000)\n"
"  --runs N           runs per mode and workload, medians (default 3)\n"
"  --quick            --duration-ms 1500 --runs 1\n"
"  --modes LIST       tickets,clamp1,adaptive (default all)\n"
"  --workloads LIST   buffered,dio (default both)\n"
"  --csv-dir DIR      write stall-<workload>-<mode>.csv timelines there\n"
"  --sample-ms N      timeline period (default 10)\n"
"  --writers N        writer threads (default 4)\n"
"  --write-us N       writer time per 4 KiB write (default 20)\n"
"  --dev-us-per-mib N device time per MiB (default 4000 = 250 MiB/s)\n"
"  --dev-lat-us N     device time per request (default 20)\n"
"  --wb-chunk N       pages per writeback request (default 32)\n"
"  --commit-us N      commit latency (default 10000)\n"
"  --commit-interval-ms N  timer commit period, 0: none (default 1000)\n"
"  --ref-us N         cost of one delayed ref or item (default 5)\n"
"  --jiffy-us N       DELALLOC's sleep between passes, shortest throttle\n"
"                     pause (default 1000)\n"
"  --no-dirty-throttle  no balance_dirty_pages, no background writeback:\n"
"                     the reservation is the writers' only throttle\n"
"  --dirty-limit-kib N  dirty limit (default: what the free metadata less\n"
"                     the trees' size leaves, / item; see the source)\n"
"  --dirty-bg-pct N   background threshold, %% of the limit (default 50)\n"
"  --pool-mib N       metadata pool (default 512)\n"
"  --other-mib N      untouched used metadata (default 208)\n"
"  --fs-leaves N      fs tree leaves (default 4096)\n"
"  --ext-leaves N     extent tree leaves (default 2048)\n"
"  --global-mib N     global reservation (default 32)\n"
"  --item-kib N       metadata reserved per write (default 256)\n"
"  --head-kib N       reservation per delayed ref head (default 48)\n"
"  --seed N           random seed\n");
}

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

int main(int argc, char **argv)
{
	/*
	 * Defaults, and why:
	 * - 512 MiB metadata pool, 304 MiB of it used (the trees below and
	 *   208 MiB of other metadata), a 32 MiB global rsv: 176 MiB free =
	 *   704 writes' worth of 256 KiB reservations, i.e. 2.75 MiB of
	 *   dirty data before writers block, the same order as btrfs's (a
	 *   4 KiB random write reserves 64x its size in metadata).
	 * - fs tree 4096 leaves (64 MiB), extent tree 2048 (32 MiB): a
	 *   transaction that touches every leaf pins 96 MiB, more than half
	 *   the free space, so pinned space matters and commits are needed,
	 *   as in the series.
	 * - 20 µs of writer time per 4 KiB buffered write: btrfs's buffered
	 *   write path (copy, extent state, reservation), ~50k writes/s per
	 *   thread, 4x what the device below can write back.
	 * - Device 250 MiB/s with 20 µs per request: writeback including the
	 *   per-extent completion work of random 4 KiB extents, well below a
	 *   modern SSD's sequential rate.
	 * - Commit 10 ms (superblock writes and cache flushes), delayed ref
	 *   5 µs (an extent-tree update with cached metadata), jiffy 1 ms
	 *   (HZ=1000).
	 * - Delayed ref head 48 KiB: a path of 3 x 16 KiB nodes in the
	 *   extent tree.  The inode item update: 48 KiB likewise.
	 * - Dirty throttle on, its limit from the pool (dirty_limit_pages():
	 *   318 pages here, 1.24 MiB), background writeback from half of it
	 *   (Linux's dirty_background_ratio 10 / dirty_ratio 20).
	 */
	struct params p = {
		.writers = 4,
		.duration_ms = 4000,
		.runs = 3,
		.sample_ms = 10,
		.pool_bytes = 512 * MIB,
		.item_bytes = 256 * KIB,
		.global_rsv_bytes = 32 * MIB,
		.other_used_bytes = 208 * MIB,
		.fs_leaves = 4096,
		.ext_leaves = 2048,
		.head_bytes = 48 * KIB,
		.inode_item_bytes = 48 * KIB,
		.write_us = 20,
		.dev_us_per_mib = 4000,
		.dev_lat_us = 20,
		.wb_chunk_pages = 32,
		.commit_us = 10000,
		.commit_interval_ms = 1000,
		.ref_us = 5,
		.jiffy_us = 1000,
		.dirty_throttle = true,
		.dirty_limit_pages = 0,
		.dirty_bg_pct = 50,
		.csv_dir = NULL,
		.modes = (1u << MODE_COUNT) - 1,
		.workloads = (1u << WL_COUNT) - 1,
		.seed = 0x5eed002,
	};
	enum {
		OPT_DURATION = 256, OPT_RUNS, OPT_QUICK, OPT_MODES,
		OPT_WORKLOADS, OPT_CSV, OPT_SAMPLE, OPT_WRITERS, OPT_WRITE_US,
		OPT_DEV_US, OPT_DEV_LAT, OPT_CHUNK, OPT_COMMIT, OPT_INTERVAL,
		OPT_REF,
		OPT_JIFFY, OPT_POOL, OPT_OTHER, OPT_FS, OPT_EXT, OPT_GLOBAL,
		OPT_ITEM, OPT_HEAD, OPT_SEED, OPT_NO_THROTTLE, OPT_DIRTY_LIMIT,
		OPT_DIRTY_BG, OPT_HELP, OPT_VERSION,
	};
	static const struct option opts[] = {
		{ "duration-ms", required_argument, NULL, OPT_DURATION },
		{ "runs", required_argument, NULL, OPT_RUNS },
		{ "quick", no_argument, NULL, OPT_QUICK },
		{ "modes", required_argument, NULL, OPT_MODES },
		{ "workloads", required_argument, NULL, OPT_WORKLOADS },
		{ "csv-dir", required_argument, NULL, OPT_CSV },
		{ "sample-ms", required_argument, NULL, OPT_SAMPLE },
		{ "writers", required_argument, NULL, OPT_WRITERS },
		{ "write-us", required_argument, NULL, OPT_WRITE_US },
		{ "dev-us-per-mib", required_argument, NULL, OPT_DEV_US },
		{ "dev-lat-us", required_argument, NULL, OPT_DEV_LAT },
		{ "wb-chunk", required_argument, NULL, OPT_CHUNK },
		{ "commit-us", required_argument, NULL, OPT_COMMIT },
		{ "commit-interval-ms", required_argument, NULL, OPT_INTERVAL },
		{ "ref-us", required_argument, NULL, OPT_REF },
		{ "jiffy-us", required_argument, NULL, OPT_JIFFY },
		{ "pool-mib", required_argument, NULL, OPT_POOL },
		{ "other-mib", required_argument, NULL, OPT_OTHER },
		{ "fs-leaves", required_argument, NULL, OPT_FS },
		{ "ext-leaves", required_argument, NULL, OPT_EXT },
		{ "global-mib", required_argument, NULL, OPT_GLOBAL },
		{ "item-kib", required_argument, NULL, OPT_ITEM },
		{ "head-kib", required_argument, NULL, OPT_HEAD },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "no-dirty-throttle", no_argument, NULL, OPT_NO_THROTTLE },
		{ "dirty-limit-kib", required_argument, NULL, OPT_DIRTY_LIMIT },
		{ "dirty-bg-pct", required_argument, NULL, OPT_DIRTY_BG },
		{ "help", no_argument, NULL, OPT_HELP },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 }
	};
	struct result res[WL_COUNT][MODE_COUNT][64];
	struct summary sum[WL_COUNT][MODE_COUNT];
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		unsigned long long v = optarg ? strtoull(optarg, NULL, 0) : 0;

		switch (c) {
		case OPT_DURATION: p.duration_ms = v; break;
		case OPT_RUNS: p.runs = (unsigned)v; break;
		case OPT_QUICK: p.duration_ms = 1500; p.runs = 1; break;
		case OPT_MODES:
			p.modes = parse_list(optarg, mode_names, MODE_COUNT);
			break;
		case OPT_WORKLOADS:
			p.workloads = parse_list(optarg, workload_names,
						 WL_COUNT);
			break;
		case OPT_CSV: p.csv_dir = optarg; break;
		case OPT_SAMPLE: p.sample_ms = (unsigned)v; break;
		case OPT_WRITERS: p.writers = (unsigned)v; break;
		case OPT_WRITE_US: p.write_us = (unsigned)v; break;
		case OPT_DEV_US: p.dev_us_per_mib = (unsigned)v; break;
		case OPT_DEV_LAT: p.dev_lat_us = (unsigned)v; break;
		case OPT_CHUNK: p.wb_chunk_pages = (unsigned)v; break;
		case OPT_COMMIT: p.commit_us = (unsigned)v; break;
		case OPT_INTERVAL: p.commit_interval_ms = (unsigned)v; break;
		case OPT_REF: p.ref_us = (unsigned)v; break;
		case OPT_JIFFY: p.jiffy_us = (unsigned)v; break;
		case OPT_POOL: p.pool_bytes = v * MIB; break;
		case OPT_OTHER: p.other_used_bytes = v * MIB; break;
		case OPT_FS: p.fs_leaves = (unsigned)v; break;
		case OPT_EXT: p.ext_leaves = (unsigned)v; break;
		case OPT_GLOBAL: p.global_rsv_bytes = v * MIB; break;
		case OPT_ITEM: p.item_bytes = v * KIB; break;
		case OPT_HEAD: p.head_bytes = v * KIB; break;
		case OPT_SEED: p.seed = v; break;
		case OPT_NO_THROTTLE: p.dirty_throttle = false; break;
		case OPT_DIRTY_LIMIT:
			p.dirty_limit_pages = div_round_up(v * KIB, PAGE_BYTES);
			break;
		case OPT_DIRTY_BG: p.dirty_bg_pct = (unsigned)v; break;
		case OPT_HELP: usage(stdout); return 0;
		case OPT_VERSION:
			printf("bench_stall (libspacersv) %s\n", srsv_version());
			return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	p.inode_item_bytes = p.head_bytes;
	if (!p.writers || p.writers > MAX_WRITERS || !p.runs || p.runs > 64 ||
	    !p.duration_ms || !p.sample_ms || !p.modes || !p.workloads ||
	    !p.wb_chunk_pages || p.fs_leaves < 1 || p.ext_leaves < 1 ||
	    p.dirty_bg_pct >= 100 || !p.jiffy_us ||
	    p.item_bytes < page_meta_need(&p)) {
		fprintf(stderr, "stall: bad options (item must cover %" PRIu64
			" KiB: two ref heads and a 3-node path)\n",
			page_meta_need(&p) / KIB);
		usage(stderr);
		return 2;
	}

	printf("stall: %u writers, %" PRIu64 " ms x %u runs, pool %" PRIu64
	       " MiB (used %" PRIu64 " MiB + trees), item %" PRIu64
	       " KiB, write %u us, device %u us/MiB + %u us, commit %u us\n",
	       p.writers, p.duration_ms, p.runs, p.pool_bytes / MIB,
	       p.other_used_bytes / MIB, p.item_bytes / KIB, p.write_us,
	       p.dev_us_per_mib, p.dev_lat_us, p.commit_us);
	if (p.dirty_throttle) {
		uint64_t lim = dirty_limit_pages(&p);

		printf("dirty throttle: limit %" PRIu64 " pages (%" PRIu64
		       " KiB; their reservations %" PRIu64 " MiB + a "
		       "transaction's max pinned %" PRIu64 " MiB + a "
		       "writeback pass's refs %" PRIu64 " MiB vs free "
		       "metadata %" PRIu64 " MiB), background %" PRIu64
		       ", freerun %" PRIu64 "\n", lim, lim * PAGE_BYTES / KIB,
		       lim * p.item_bytes / MIB, cow_max_bytes(&p) / MIB,
		       pass_refs_bytes(&p) / MIB,
		       free_meta_bytes(&p) / MIB, lim * p.dirty_bg_pct / 100,
		       (lim + lim * p.dirty_bg_pct / 100) / 2);
	} else {
		printf("dirty throttle: off (no balance_dirty_pages, no "
		       "background writeback)\n");
	}
	printf("%-8s %-8s %9s %8s %8s %9s %9s %9s %8s %6s %7s %10s %6s\n",
	       "workload", "mode", "ops/s", "blocked", "throttl", "p50(us)",
	       "p99(us)", "max(us)", "tickets", "async", "preempt",
	       "commits(tmr/pre)", "device");

	memset(sum, 0, sizeof(sum));
	for (int wl = 0; wl < WL_COUNT; wl++) {
		if (!(p.workloads & (1u << wl)))
			continue;
		for (int m = 0; m < MODE_COUNT; m++) {
			if (!(p.modes & (1u << m)))
				continue;
			for (unsigned run = 0; run < p.runs; run++) {
				char path[4096];
				int ret;

				snprintf(path, sizeof(path),
					 "%s/stall-%s-%s.run%u.csv",
					 p.csv_dir ? p.csv_dir : ".",
					 workload_names[wl], mode_names[m], run);
				ret = run_once(&p, wl, m, run, &res[wl][m][run],
					       p.csv_dir ? path : NULL);
				if (ret)
					return 1;
			}
			summarise(res[wl][m], p.runs, &sum[wl][m]);
			if (p.csv_dir)
				keep_median_timeline(&p, wl, m,
						     sum[wl][m].median_run);
			print_summary(wl, m, &sum[wl][m]);
			fflush(stdout);
		}
	}
	for (int wl = 0; wl < WL_COUNT; wl++)
		for (int m = 0; m < MODE_COUNT; m++)
			if (sum[wl][m].have)
				print_flushes(wl, m, &sum[wl][m]);

	{
		const struct summary *bt = &sum[WL_BUFFERED][MODE_TICKETS];
		const struct summary *ba = &sum[WL_BUFFERED][MODE_ADAPTIVE];
		const struct summary *dt = &sum[WL_DIO][MODE_TICKETS];
		const struct summary *da = &sum[WL_DIO][MODE_ADAPTIVE];
		double a = NAN, b = NAN, cr = NAN, d = NAN;

		if (bt->have && ba->have) {
			a = ba->ops / bt->ops;
			b = bt->p99 ? ba->p99 / bt->p99 : NAN;
			cr = bt->commits ? ba->commits / bt->commits : NAN;
		}
		if (dt->have && da->have)
			d = da->ops / dt->ops;
		printf("summary: throughput_ratio=%.2f p99_ratio=%.3f "
		       "commit_ratio=%.2f dio_ratio=%.3f\n", a, b, cr, d);
	}
	return 0;
}
