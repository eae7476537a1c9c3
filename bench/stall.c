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
 * - Background writeback (--no-bg-writeback turns it off): above a
 *   threshold of dirty pages (half of a "dirty limit", Linux's
 *   dirty_background_ratio 10 / dirty_ratio 20; the limit defaults to what
 *   the free metadata leaves for dirty pages' reservations once a
 *   transaction has copied every tree block and one writeback pass has
 *   queued its refs), a flusher thread (the kernel's wb_workfn) writes
 *   dirty pages back outside the reservation machinery.  It is part of the
 *   engine, the same under every policy.  There is no hand-written dirty
 *   throttle any more: what slows the writers is the policy under test.
 * - Workloads: "buffered" (above), "steady" (the same writers asking for
 *   --steady-pct of the device's rate, on smaller trees with background
 *   writeback from a quarter of the dirty limit, see workload_params():
 *   a fixed high clamp flushes more than needed there), "abusive" (the
 *   steady file system under --abusive-writers writers reserving
 *   --abusive-item-kib per write, in bursts that together reserve
 *   --burst-pct of the free metadata every --burst-period-ms: below the
 *   device's rate on average, but each burst larger than the headroom
 *   clamp 1 leaves; the series' "particularly abusive" workloads that
 *   "quickly overwhelm the preemptive flushing code and drive us into
 *   using tickets"), "overload" (the same writers on the default trees,
 *   --burst-ms on and as long off: 13x what the device writes back, where
 *   no clamp keeps up and only slowing the writers helps) and "dio"
 *   (below).
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
 * Policies (modes), all over the same engine and device: "tickets" (btrfs
 * before the preemptive flushing series: SRSV_CTX_NO_PREEMPT), "clamp1" /
 * "clamp8" (preemptive flushing, clamp held: SRSV_CTX_FIXED_CLAMP and
 * fixed_clamp), "adaptive" (the default library), "pace" (adaptive plus
 * the library's pacing, pace_start_pct), "wbm" (adaptive plus RocksDB's
 * WriteBufferManager stall: stop at buffer_size, wake every stalled writer
 * at once) and "wc" (adaptive plus RocksDB's WriteController: a token
 * bucket refilled every millisecond at a delayed write rate that
 * SetupDelay() adapts by 0.8 / 1.25 / 0.6 / 1.4, and a stop condition).
 * A write's latency is everything it waited before it could dirty its
 * page: the peer's stall or delay, the reservation, the library's pacing.
 * Each workload runs the policies its figures need (default_modes[]).
 * The runs are made in rounds, every policy once per round, in reverse
 * order every other round; figures are medians over the rounds, printed
 * with their spread, and every ratio also as the spread of its per-round
 * values.  The timeline of the median run (every --sample-ms) goes to
 * <csv-dir>/stall-<workload>-<mode>.csv for tools/plot_stall.py.
 *
 * Last line: summary: throughput_ratio=A p99_ratio=B commit_ratio=C
 * dio_ratio=D (adaptive over tickets; A, B, C from the buffered workload,
 * D the direct-I/O throughput ratio) pace_p99_vs_wc, pace_p99_vs_tickets,
 * pace_tput_vs_best (the best of tickets, wbm and wc), max_stall_ms (the
 * longest single wait of a paced write), clamp_abusive_gain and
 * clamp_abusive_p99 (adaptive over clamp1, abusive), clamp_steady_tput
 * (adaptive over clamp1, steady) and clamp_steady_flush_vs_c8 (flush
 * callback calls, adaptive over clamp8, steady).  Every round also
 * prints the host's steal time (a virtual machine's CPUs waiting for the
 * host's): the figures move with it.
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
#include <time.h>

#include <libspacersv/spacersv.h>

#include "bench_model.h"
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
/* How long main waits for writers blocked in a ticket once told to stop
 * before it shuts the ctx down (a writer stuck longer is a core bug). */
#define STOP_GRACE_NS (5 * NSEC_PER_SEC)

enum workload { WL_BUFFERED = 0, WL_STEADY, WL_ABUSIVE, WL_OVERLOAD, WL_DIO,
		WL_COUNT };
static const char *const workload_names[WL_COUNT] = {
	"buffered", "steady", "abusive", "overload", "dio"
};

/*
 * Policies over the same engine.  tickets: btrfs before the preemptive
 * flushing series (SRSV_CTX_NO_PREEMPT).  clamp1 / clamp8: preemptive
 * flushing with the clamp held (SRSV_CTX_FIXED_CLAMP, fixed_clamp).
 * adaptive: the library's default.  pace: adaptive plus the library's
 * pacing (pace_start_pct).  wbm / wc: adaptive flushing with RocksDB's
 * WriteBufferManager stall or WriteController delay in front of the
 * reservation, as RocksDB puts them in front of the memtable insert.
 */
enum mode { MODE_TICKETS = 0, MODE_CLAMP1, MODE_CLAMP8, MODE_ADAPTIVE,
	    MODE_PACE, MODE_WBM, MODE_WC, MODE_COUNT };
static const char *const mode_names[MODE_COUNT] = {
	"tickets", "clamp1", "clamp8", "adaptive", "pace", "wbm", "wc"
};

#define M(x) (1u << (x))
/* The default matrix: each workload runs the policies its figures need. */
static const unsigned default_modes[WL_COUNT] = {
	[WL_BUFFERED] = M(MODE_TICKETS) | M(MODE_CLAMP1) | M(MODE_ADAPTIVE) |
			M(MODE_PACE) | M(MODE_WBM) | M(MODE_WC),
	[WL_STEADY] = M(MODE_CLAMP1) | M(MODE_CLAMP8) | M(MODE_ADAPTIVE),
	[WL_ABUSIVE] = M(MODE_CLAMP1) | M(MODE_CLAMP8) | M(MODE_ADAPTIVE) |
		       M(MODE_PACE),
	[WL_OVERLOAD] = M(MODE_CLAMP1) | M(MODE_ADAPTIVE) | M(MODE_PACE),
	[WL_DIO] = M(MODE_TICKETS) | M(MODE_ADAPTIVE),
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
	bool bg_writeback;		/* the background flusher (wb_workfn) */
	uint64_t dirty_limit_pages;	/* 0: from the pool, see below */
	unsigned dirty_bg_pct;		/* background threshold, % of limit */
	/* Policies. */
	unsigned pace_pct;		/* pace: pace_start_pct */
	unsigned pace_max_ms;		/* pace: pace_max_delay_ns */
	unsigned wbm_pct;		/* wbm: buffer_size, % of the room */
	unsigned wc_soft_pct;		/* wc: delay from here */
	unsigned wc_stop_pct;		/* wc: stop from here */
	uint64_t wc_rate;		/* wc: delayed_write_rate, B/s (0: dev) */
	unsigned wc_recalc_ms;		/* wc: how often conditions are read */
	/* Workloads. */
	unsigned steady_pct;		/* steady: demand, % of the device */
	unsigned steady_fs_leaves;	/* steady: its own, smaller trees */
	unsigned steady_ext_leaves;
	unsigned steady_bg_pct;		/* steady: background threshold */
	unsigned abusive_writers;	/* abusive, overload: writers */
	uint64_t abusive_item_bytes;	/* abusive, overload: per write */
	unsigned burst_pct;		/* abusive: a burst, % of the room */
	unsigned burst_period_ms;	/* abusive: one burst per period */
	unsigned burst_ms;		/* overload: on for this, off as long */
	const char *csv_dir;
	unsigned modes;		/* bit per enum mode; 0: default matrix */
	unsigned workloads;	/* bit per enum workload */
	uint64_t seed;
};

/* ---- time ---- */

/* sleep_until(), tight_timers() and rng_next() are bench_util.h's. */

static uint64_t div_round_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

/* ---- the simulated device ---- */

/*
 * One queue, requests served in submission order, each costing
 * dev_lat_us + bytes at dev_us_per_mib, booked at submission on a
 * dev_clock (bench_model.h), so the model is exact whatever the threads'
 * wake-up delays: a synchronous request (direct write, commit) sleeps once
 * until its end; writeback requests are completed by the device thread at
 * their end, in order.
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
	struct dev_clock clock;	/* the schedule (bench_model.h) */
	bool stop;
	pthread_t thread;
};

/* ---- the engine ---- */

struct tree {
	unsigned leaves;
	unsigned blocks;	/* leaves + nodes + root */
	uint32_t *cow_trans;	/* transaction that last copied the block */
};

struct writer {
	struct engine *e;
	unsigned id;
	pthread_t thread;
	uint64_t rng;
	struct lat_log lat;
	/* Written by the writer, read by the sampler for the timeline. */
	atomic_uint_fast64_t blocked_ns;	/* in srsv_rsv_add() */
	atomic_uint_fast64_t throttled_ns;	/* in a peer's stall or delay */
	uint64_t ops;
	uint64_t reserve_errors;
	unsigned burst_done;		/* abusive: writes in this burst */
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
	uint64_t write_bw;		/* library's reclaim estimate, items/s */
	uint64_t paced_ns;		/* library pacing delays so far */
};

struct engine {
	struct params pw;		/* this workload's parameters */
	const struct params *p;		/* &pw */
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
	uint64_t dirty_bg;		/* background writeback threshold */
	atomic_uint_fast64_t wb_inflight;	/* pages on the device */
	atomic_uint_fast64_t bg_wb_pages;	/* written by the bg flusher */
	pthread_t flusher;

	/*
	 * What the peers' policies read: the pool's reclaimable bytes
	 * (may_use less the global rsv, plus pinned), refreshed from a
	 * snapshot whenever the engine frees space (RocksDB's FreeMem) and
	 * raised by every writer's reservation (ReserveMem), and the room
	 * those may take (the free metadata at the start).
	 */
	atomic_uint_fast64_t held;
	uint64_t room;
	uint64_t t0;			/* the run's start: bursts' epoch */
	unsigned burst_writes;		/* abusive: writes per writer */
	/* WriteBufferManager: writers stalled at buffer_size, all woken
	 * at once when usage drops below it. */
	pthread_mutex_t wbm_lock;
	pthread_cond_t wbm_cv;
	unsigned wbm_stalled;
	uint64_t wbm_limit, wbm_stalls;
	struct write_controller wc;
	pthread_t monitor;

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

static void held_refresh(struct engine *e);

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
 * pages have room up to the limit.
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
	held_refresh(e);
}

/* Book @cost_ns of device time; returns when it ends.  dev->lock held. */
static uint64_t dev_book(struct device *d, uint64_t cost_ns)
{
	return dev_clock_book(&d->clock, cost_ns);
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

/* The writeback completion thread (btrfs's endio workers). */
static void *device_main(void *arg)
{
	struct engine *e = arg;
	struct device *d = &e->dev;

	tight_timers();
	pthread_mutex_lock(&d->lock);
	for (;;) {
		struct io_req *r;

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
	held_refresh(e);
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
	held_refresh(e);
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
	/* Counted before they leave dirty_total's lock: a reader sees
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
	held_refresh(e);
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

/* ---- background writeback ---- */

/*
 * The background flusher (the kernel's wb_workfn for background
 * writeback): while more than dirty_bg pages are dirty (not counting those
 * already under writeback, as wb_over_bg_thresh()), write them back, one
 * request per file per pass so that the threshold is re-read often, with
 * at most two passes on the device (the block layer's queue depth; deeper
 * would only move pages from dirty to writeback).
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

/* ---- the peers' policies: RocksDB's WriteBufferManager, WriteController */

static bool uses_held(const struct engine *e)
{
	return e->mode == MODE_WBM || e->mode == MODE_WC;
}

/*
 * Read the pool's reclaimable bytes from a snapshot (the exact figure the
 * writers' own increments approximate in between), and end a
 * WriteBufferManager stall if usage fell below buffer_size: RocksDB's
 * FreeMem() calls MaybeEndWriteStall(), which signals every stalled
 * writer at once.  Called wherever the engine frees space.
 */
static void held_refresh(struct engine *e)
{
	struct srsv_space_info info;
	uint64_t held;

	if (!uses_held(e) ||
	    srsv_space_snapshot(e->meta, &info, NULL, 0, NULL))
		return;
	held = info.may_use + info.pinned;
	held -= held > info.global_rsv_reserved ? info.global_rsv_reserved :
						  held;
	atomic_store(&e->held, held);
	if (e->mode == MODE_WBM && held < e->wbm_limit) {
		pthread_mutex_lock(&e->wbm_lock);
		if (e->wbm_stalled)
			pthread_cond_broadcast(&e->wbm_cv);
		pthread_mutex_unlock(&e->wbm_lock);
	}
}

/*
 * WriteBufferManager::ShouldStall() and the stall: with allow_stall,
 * once usage reaches buffer_size a writer blocks (RocksDB queues its DB's
 * StallInterface and calls Block()) until MaybeEndWriteStall() wakes all
 * of them; waiters carry no size and are not ordered.  Returns the time
 * stalled.
 */
static uint64_t wbm_before_write(struct engine *e)
{
	uint64_t t0;

	if (atomic_load(&e->held) < e->wbm_limit)
		return 0;
	t0 = now_ns();
	pthread_mutex_lock(&e->wbm_lock);
	e->wbm_stalls++;
	e->wbm_stalled++;
	while (atomic_load(&e->held) >= e->wbm_limit && !atomic_load(&e->stop))
		pthread_cond_wait(&e->wbm_cv, &e->wbm_lock);
	e->wbm_stalled--;
	pthread_mutex_unlock(&e->wbm_lock);
	return now_ns() - t0;
}

/*
 * RocksDB's WriteController in front of the reservation (bench_model.h),
 * with the pool's reclaimable bytes as the compaction debt: delays from
 * --wc-soft-pct of the free metadata, a stop at --wc-stop-pct.
 */
static void wc_recalc_engine(struct engine *e)
{
	const struct params *p = e->p;

	wc_recalc(&e->wc, atomic_load(&e->held), e->room / 100 * p->wc_soft_pct,
		  e->room / 100 * p->wc_stop_pct);
}

/* The WriteController's recalculations, and the exact usage for both. */
static void *monitor_main(void *arg)
{
	struct engine *e = arg;
	uint64_t next = now_ns();

	tight_timers();
	while (!atomic_load(&e->stop)) {
		held_refresh(e);
		if (e->mode == MODE_WC)
			wc_recalc_engine(e);
		next += (uint64_t)e->p->wc_recalc_ms * NSEC_PER_MSEC;
		sleep_until(next);
	}
	/* Nobody stays stalled or stopped once the run ends. */
	pthread_mutex_lock(&e->wbm_lock);
	pthread_cond_broadcast(&e->wbm_cv);
	pthread_mutex_unlock(&e->wbm_lock);
	wc_release(&e->wc);
	return NULL;
}

/* ---- writers ---- */

/* The device's writeback rate in pages per second. */
static double dev_pages_per_s(const struct params *p);

/*
 * Writer time per write: --write-us, or for the steady workload what
 * makes the writers together ask for --steady-pct of the device's rate.
 */
static uint64_t write_ns(const struct engine *e)
{
	const struct params *p = e->p;

	if (e->wl == WL_STEADY)
		return (uint64_t)((double)p->writers * 100 * NSEC_PER_SEC /
				  ((double)p->steady_pct * dev_pages_per_s(p)));
	return p->write_us * NSEC_PER_USEC;
}

/*
 * Pace a writer to one write per write_ns() of modelled work.  @vt is the
 * writer's virtual clock: the caller moves it past every wait (a stall is
 * lost time, never made up in a burst), while a late wake-up of this
 * thread (the machine is shared) is made up, so the writer's speed is the
 * model's, not the scheduler's.  Bursts, every writer in step from the
 * run's start: the abusive workload writes burst_writes writes per writer
 * at the start of every --burst-period-ms (a writer that waited through
 * the period starts its next burst at the next period); the overload
 * workload writes --burst-ms on, as long off.
 */
static void pace_writer(struct writer *w, uint64_t *vt)
{
	const struct engine *e = w->e;
	const struct params *p = e->p;

	*vt += write_ns(e);
	if (e->wl == WL_ABUSIVE && ++w->burst_done >= e->burst_writes) {
		uint64_t period = (uint64_t)p->burst_period_ms * NSEC_PER_MSEC;

		w->burst_done = 0;
		*vt = e->t0 + ((*vt - e->t0) / period + 1) * period;
	} else if (e->wl == WL_OVERLOAD && p->burst_ms) {
		uint64_t period = 2 * (uint64_t)p->burst_ms * NSEC_PER_MSEC;
		uint64_t into = (*vt - e->t0) % period;

		if (into >= period / 2)
			*vt += period - into;
	}
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
		uint64_t t0, t1, waited = 0;
		int ret;

		t0 = now_ns();
		if (e->mode == MODE_WBM)
			waited = wbm_before_write(e);
		else if (e->mode == MODE_WC)
			waited = wc_before_write(&e->wc, PAGE_BYTES, &e->stop);
		t1 = now_ns();
		ret = srsv_rsv_add(e->rsv_delalloc, p->item_bytes,
				   SRSV_FLUSH_ALL, 0);
		atomic_fetch_add_explicit(&w->throttled_ns, waited,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&w->blocked_ns, now_ns() - t1,
					  memory_order_relaxed);
		t1 = now_ns();
		/* A write's latency: everything it waited before it could
		 * dirty its page, whoever made it wait. */
		vt += t1 - t0;
		if (lat_push(&w->lat, t1 - t0))
			break;
		if (ret) {
			w->reserve_errors++;
			if (ret == -ESHUTDOWN)
				break;
			pace_writer(w, &vt);
			continue;
		}
		if (uses_held(e))
			atomic_fetch_add(&e->held, p->item_bytes);
		pace_writer(w, &vt);
		if (e->wl != WL_DIO) {
			/* Report the dirty page before publishing it: once it
			 * is on the list, writeback may take it and report
			 * it written, which must not find delalloc short. */
			CHECK(e, srsv_ctx_account_delalloc(e->ctx, PAGE_BYTES,
							   0));
			pthread_mutex_lock(&e->dirty_lock);
			e->dirty[w->id]++;
			e->dirty_total++;
			/* wb_start_background_writeback() */
			if (p->bg_writeback && e->flusher_idle &&
			    e->dirty_total > e->dirty_bg) {
				e->flusher_idle = false;
				pthread_cond_signal(&e->dirty_kick);
			}
			pthread_mutex_unlock(&e->dirty_lock);
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
			{
				struct srsv_space_stats st;

				if (!srsv_space_get_stats(e->meta, &st)) {
					s->write_bw = st.pace_bw /
						      e->p->item_bytes;
					s->paced_ns = st.pace_delay_ns;
				}
			}
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
		   "wb_pages,blocked_ms,throttled_ms,write_bw,paced_ms\n");
	for (size_t i = 0; i < e->nr_samples; i++) {
		const struct sample *s = &e->samples[i];

		fprintf(f, "%.3f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			",%u,%" PRIu64 ",%" PRIu64 ",%u,%" PRIu64 ",%" PRIu64
			",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.3f,%.3f,%"
			PRIu64 ",%.3f\n",
			(double)s->t_ns / NSEC_PER_MSEC, s->may_use, s->pinned,
			s->used, s->total, s->clamp, s->delalloc, s->ordered,
			s->queued, s->ops, s->delayed_refs_rsv, s->commits,
			s->dirty_pages, s->wb_pages,
			(double)s->blocked_ns / NSEC_PER_MSEC,
			(double)s->throttled_ns / NSEC_PER_MSEC, s->write_bw,
			(double)s->paced_ns / NSEC_PER_MSEC);
	}
	return fclose(f) ? -errno : 0;
}

/* ---- one run ---- */

struct result {
	bool ok;
	double ops_per_s;
	double blocked_share;		/* in the reservation (pacing incl.) */
	double throttled_share;		/* in a peer's stall or delay */
	double paced_share;		/* the library's pacing delays */
	uint64_t bg_wb_pages;
	uint64_t p50_ns, p99_ns, max_ns;
	uint64_t tickets;		/* granted + failed */
	uint64_t tickets_failed;
	uint64_t async_runs, preempt_runs;
	uint64_t flushes[SRSV_STATE_COUNT];
	uint64_t preempt_flushes[SRSV_STATE_COUNT];
	uint64_t flush_calls;		/* every callback call */
	uint64_t commits, commits_preempt, commits_timer;
	uint64_t refs_run, wb_pages;
	uint64_t reserve_errors;
	uint64_t lib_errors;
	uint64_t paced, pace_eased, pace_max_ns;	/* library pacing */
	uint64_t clamp_raised, clamp_lowered;	/* srsv_space_get_stats() */
	double clamp_mean;		/* over the timeline's samples */
	uint64_t wbm_stalls, wc_delays, wc_stops, wc_rate_min;
	double device_busy;		/* share of the run the device worked */
	char check[256];		/* accounting check verdict */
};

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

static double dev_pages_per_s(const struct params *p)
{
	return (double)p->wb_chunk_pages * NSEC_PER_SEC /
	       (double)dev_cost_ns(p, (uint64_t)p->wb_chunk_pages * PAGE_BYTES);
}

/* A workload's parameters: steady and abusive run on smaller trees;
 * abusive and overload have more writers, each reserving more per
 * write. */
static void workload_params(struct params *w, const struct params *p,
			    enum workload wl)
{
	*w = *p;
	/* The engine's background writeback threshold stays the default
	 * workload's: the workload changes, not the engine. */
	w->dirty_limit_pages = dirty_limit_pages(p);
	/*
	 * Steady runs on a file system whose trees are a quarter the size
	 * (a transaction pins at most 24 MiB, an eighth of the free
	 * metadata, instead of more than half of it) with background
	 * writeback from a quarter of the dirty limit.  With the default
	 * trees, pinned space alone passes clamp 1's threshold (half the
	 * free space) once a transaction has copied most blocks, so every
	 * clamp flushes all the time and none can over-flush (measured:
	 * clamp 1 and clamp 8 within 5% of each other's flush calls).
	 * Here writeback meets the demand, reclaimable space stays under
	 * clamp 1's threshold, and what a fixed high clamp adds is flushing
	 * nobody needed.
	 */
	/*
	 * Abusive is the steady file system (trees, background writeback)
	 * under bursts: where a burst larger than clamp 1's headroom queues
	 * tickets and a higher clamp's does not (see main()).
	 */
	if (wl == WL_STEADY || wl == WL_ABUSIVE) {
		w->fs_leaves = p->steady_fs_leaves;
		w->ext_leaves = p->steady_ext_leaves;
		w->dirty_bg_pct = p->steady_bg_pct;
		w->dirty_limit_pages = dirty_limit_pages(w);
	}
	if (wl == WL_ABUSIVE || wl == WL_OVERLOAD) {
		w->writers = p->abusive_writers;
		w->item_bytes = p->abusive_item_bytes;
	}
}

static int engine_init(struct engine *e, const struct params *p0,
		       enum workload wl, enum mode mode, uint64_t seed)
{
	const struct params *p;
	struct srsv_config cfg;
	int ret;

	memset(e, 0, sizeof(*e));
	workload_params(&e->pw, p0, wl);
	p = e->p = &e->pw;
	e->wl = wl;
	e->mode = mode;
	e->rng = seed | 1;
	e->trans = 1;
	pthread_mutex_init(&e->tree_lock, NULL);
	pthread_mutex_init(&e->dirty_lock, NULL);
	pthread_mutex_init(&e->commit_lock, NULL);
	pthread_mutex_init(&e->dev.lock, NULL);
	pthread_mutex_init(&e->wbm_lock, NULL);
	wc_init(&e->wc, 0);	/* the rate is set below */
	pthread_cond_init(&e->dirty_kick, NULL);
	pthread_cond_init(&e->dev.kick, NULL);
	pthread_cond_init(&e->dev.done, NULL);
	pthread_cond_init(&e->wbm_cv, NULL);
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
	switch (mode) {
	case MODE_TICKETS:
		cfg.flags |= SRSV_CTX_NO_PREEMPT;
		break;
	case MODE_CLAMP1:
		cfg.flags |= SRSV_CTX_FIXED_CLAMP;
		break;
	case MODE_CLAMP8:
		cfg.flags |= SRSV_CTX_FIXED_CLAMP;
		cfg.fixed_clamp = 8;
		break;
	case MODE_PACE:
		cfg.pace_start_pct = p->pace_pct;
		cfg.pace_max_delay_ns = (uint64_t)p->pace_max_ms * NSEC_PER_MSEC;
		break;
	default:
		break;
	}
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

	e->dirty_bg = dirty_limit_pages(p) * p->dirty_bg_pct / 100;
	e->room = free_meta_bytes(p);
	/* Abusive: together the writers reserve --burst-pct of the room
	 * per burst. */
	e->burst_writes = (unsigned)div_round_up(e->room / 100 * p->burst_pct,
						 (uint64_t)p->writers *
						 p->item_bytes);
	e->wbm_limit = e->room / 100 * p->wbm_pct;
	/* delayed_write_rate: a tuned one, the device's own data rate
	 * (RocksDB's default of 16 MB/s would be a fraction of it). */
	e->wc.max_rate = p->wc_rate ? p->wc_rate :
			 (uint64_t)(dev_pages_per_s(p) * PAGE_BYTES);
	e->wc.rate = e->wc.max_rate;
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

static int run_once(const struct params *p0, enum workload wl, enum mode mode,
		    unsigned run, struct result *r, const char *csv_path)
{
	struct engine *e = calloc(1, sizeof(*e));
	const struct params *p;
	struct srsv_space_info info;
	struct srsv_space_stats st;
	uint64_t t0, t1, blocked = 0, throttled = 0, nr_lat = 0, *all;
	bool bg;
	size_t k = 0;
	int ret;

	memset(r, 0, sizeof(*r));
	if (!e)
		return -ENOMEM;
	ret = engine_init(e, p0, wl, mode,
			  p0->seed + 7919 * run + 104729 * (uint64_t)wl);
	if (ret) {
		fprintf(stderr, "stall: setup failed: %s\n", strerror(-ret));
		if (e->ctx)
			srsv_ctx_destroy(e->ctx);
		free(e);
		return ret;
	}
	p = e->p;
	bg = p->bg_writeback && wl != WL_DIO;

	t0 = e->t0 = now_ns();
	pthread_mutex_lock(&e->tree_lock);
	e->trans_start_ns = t0;	/* the first transaction starts with the run */
	pthread_mutex_unlock(&e->tree_lock);
	pthread_create(&e->sampler, NULL, sampler_main, e);
	if (p->commit_interval_ms)
		pthread_create(&e->committer, NULL, committer_main, e);
	if (bg)
		pthread_create(&e->flusher, NULL, flusher_main, e);
	if (uses_held(e))
		pthread_create(&e->monitor, NULL, monitor_main, e);
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
	if (uses_held(e))
		pthread_join(e->monitor, NULL);
	if (bg) {
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
	if (srsv_space_get_stats(e->meta, &st))
		memset(&st, 0, sizeof(st));

	for (unsigned i = 0; i < p->writers; i++) {
		struct writer *w = &e->writers[i];

		blocked += atomic_load(&w->blocked_ns);
		throttled += atomic_load(&w->throttled_ns);
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
	r->paced_share = (double)st.pace_delay_ns /
			 ((double)p->writers * (t1 - t0));
	r->paced = st.paced;
	r->pace_eased = st.pace_eased;
	r->pace_max_ns = st.pace_max_delay_ns;
	r->clamp_raised = st.clamp_raised;
	r->clamp_lowered = st.clamp_lowered;
	for (size_t i = 0; i < e->nr_samples; i++)
		r->clamp_mean += e->samples[i].clamp;
	if (e->nr_samples)
		r->clamp_mean /= (double)e->nr_samples;
	r->wbm_stalls = e->wbm_stalls;
	r->wc_delays = e->wc.delays;
	r->wc_stops = e->wc.stops;
	r->wc_rate_min = e->wc.rate_min;
	r->bg_wb_pages = atomic_load(&e->bg_wb_pages);
	r->tickets = info.tickets_granted + info.tickets_failed;
	r->tickets_failed = info.tickets_failed;
	r->async_runs = info.async_runs;
	r->preempt_runs = info.preempt_runs;
	memcpy(r->flushes, info.flushes, sizeof(info.flushes));
	memcpy(r->preempt_flushes, info.preempt_flushes,
	       sizeof(info.preempt_flushes));
	for (int s = 0; s < SRSV_SPACE_INFO_STATES; s++)
		r->flush_calls += info.flushes[s];
	r->commits = atomic_load(&e->commits);
	r->commits_preempt = atomic_load(&e->commits_preempt);
	r->commits_timer = atomic_load(&e->commits_timer);
	r->refs_run = atomic_load(&e->refs_run);
	r->wb_pages = atomic_load(&e->wb_pages);
	r->lib_errors = atomic_load(&e->lib_errors);
	r->device_busy = (double)e->dev.clock.busy_ns / (double)(t1 - t0);
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

/* Median of a field over the runs, as a double. */
#define MEDIAN(res, n, expr)						\
	({								\
		double v_[64];						\
		for (unsigned i_ = 0; i_ < (n); i_++)			\
			v_[i_] = (double)(res)[i_].expr;		\
		median_d(v_, (n));					\
	})

/* Smallest and largest of a field over the runs. */
#define SPREAD(res, n, expr, lo, hi)					\
	do {								\
		(lo) = INFINITY;					\
		(hi) = -INFINITY;					\
		for (unsigned i_ = 0; i_ < (n); i_++) {			\
			double v_ = (double)(res)[i_].expr;		\
			(lo) = v_ < (lo) ? v_ : (lo);			\
			(hi) = v_ > (hi) ? v_ : (hi);			\
		}							\
	} while (0)

struct summary {
	bool have;
	double ops, blocked, throttled, paced, p50, p99, max, tickets;
	double async_runs, preempt_runs, bg_wb_pages, wb_pages, flush_calls;
	double commits, commits_preempt, commits_timer, device_busy;
	double ops_lo, ops_hi, p99_lo, p99_hi;
	double flushes[SRSV_STATE_COUNT], preempt_flushes[SRSV_STATE_COUNT];
	double wbm_stalls, wc_delays, wc_stops, wc_rate_min, pace_eased;
	double clamp_raised, clamp_lowered, clamp_mean;
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
	SPREAD(res, n, ops_per_s, s->ops_lo, s->ops_hi);
	s->blocked = MEDIAN(res, n, blocked_share);
	s->throttled = MEDIAN(res, n, throttled_share);
	s->paced = MEDIAN(res, n, paced_share);
	s->bg_wb_pages = MEDIAN(res, n, bg_wb_pages);
	s->wb_pages = MEDIAN(res, n, wb_pages);
	s->p50 = MEDIAN(res, n, p50_ns);
	s->p99 = MEDIAN(res, n, p99_ns);
	SPREAD(res, n, p99_ns, s->p99_lo, s->p99_hi);
	s->max = MEDIAN(res, n, max_ns);
	s->tickets = MEDIAN(res, n, tickets);
	s->async_runs = MEDIAN(res, n, async_runs);
	s->preempt_runs = MEDIAN(res, n, preempt_runs);
	s->flush_calls = MEDIAN(res, n, flush_calls);
	s->commits = MEDIAN(res, n, commits);
	s->commits_preempt = MEDIAN(res, n, commits_preempt);
	s->commits_timer = MEDIAN(res, n, commits_timer);
	s->device_busy = MEDIAN(res, n, device_busy);
	s->wbm_stalls = MEDIAN(res, n, wbm_stalls);
	s->wc_delays = MEDIAN(res, n, wc_delays);
	s->wc_stops = MEDIAN(res, n, wc_stops);
	s->wc_rate_min = MEDIAN(res, n, wc_rate_min);
	s->pace_eased = MEDIAN(res, n, pace_eased);
	s->clamp_raised = MEDIAN(res, n, clamp_raised);
	s->clamp_lowered = MEDIAN(res, n, clamp_lowered);
	s->clamp_mean = MEDIAN(res, n, clamp_mean);
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

static void print_header(void)
{
	printf("%-8s %-8s %9s %13s %7s %7s %7s %8s %8s %15s %8s %8s %6s %7s "
	       "%9s %6s\n",
	       "workload", "mode", "ops/s", "(min-max)", "blocked", "throttl",
	       "paced", "p50(us)", "p99(us)", "(min-max)", "max(ms)",
	       "tickets", "flush", "preempt", "commits", "device");
}

static void print_summary(enum workload wl, enum mode m,
			  const struct summary *s)
{
	char spread[32], p99s[32], commits[32];

	snprintf(spread, sizeof(spread), "%.0f-%.0f", s->ops_lo, s->ops_hi);
	snprintf(p99s, sizeof(p99s), "%.1f-%.1f", s->p99_lo / NSEC_PER_USEC,
		 s->p99_hi / NSEC_PER_USEC);
	snprintf(commits, sizeof(commits), "%.0f(%.0f/%.0f)", s->commits,
		 s->commits_timer, s->commits_preempt);
	printf("%-8s %-8s %9.0f %13s %6.1f%% %6.1f%% %6.1f%% %8.1f %8.1f "
	       "%15s %8.2f %8.0f %6.0f %7.0f %9s %5.0f%% %s\n",
	       workload_names[wl], mode_names[m], s->ops, spread,
	       100 * (s->blocked - s->paced), 100 * s->throttled,
	       100 * s->paced, s->p50 / NSEC_PER_USEC, s->p99 / NSEC_PER_USEC,
	       p99s, s->max / NSEC_PER_MSEC, s->tickets, s->flush_calls,
	       s->preempt_runs, commits, 100 * s->device_busy,
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
	if (wl != WL_DIO)
		printf("; pages written back %.0f, by the bg flusher %.0f",
		       s->wb_pages, s->bg_wb_pages);
	if (m == MODE_WBM)
		printf("; stalls %.0f", s->wbm_stalls);
	if (m == MODE_WC)
		printf("; delay episodes %.0f, stops %.0f, lowest rate %.1f "
		       "MiB/s", s->wc_delays, s->wc_stops,
		       s->wc_rate_min / MIB);
	if (m == MODE_PACE)
		printf("; delays eased by flushing %.0f", s->pace_eased);
	if (m != MODE_TICKETS)
		printf("; clamp mean %.2f, raised %.0f, lowered %.0f",
		       s->clamp_mean, s->clamp_raised, s->clamp_lowered);
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

/*
 * A ratio of two policies' figures: of the medians (the summary), and
 * its spread over the rounds (run i of one over run i of the other, the
 * two run side by side in the same round).
 */
struct ratio {
	const char *name;
	double med, lo, hi;
};

static struct ratio ratio_of(const char *name, const struct result *a,
			     const struct result *b, unsigned n,
			     double (*get)(const struct result *), bool have)
{
	struct ratio r = { name, NAN, NAN, NAN };
	double va[64], vb[64];

	if (!have)
		return r;
	r.lo = INFINITY;
	r.hi = -INFINITY;
	for (unsigned i = 0; i < n; i++) {
		double x;

		va[i] = get(&a[i]);
		vb[i] = get(&b[i]);
		x = vb[i] ? va[i] / vb[i] : NAN;
		r.lo = x < r.lo ? x : r.lo;
		r.hi = x > r.hi ? x : r.hi;
	}
	r.med = median_d(vb, n) ? median_d(va, n) / median_d(vb, n) : NAN;
	return r;
}

static double get_ops(const struct result *r) { return r->ops_per_s; }
static double get_p99(const struct result *r) { return (double)r->p99_ns; }
static double get_commits(const struct result *r) { return (double)r->commits; }
static double get_flushes(const struct result *r)
{
	return (double)r->flush_calls;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: bench_stall [options]\n"
"  --duration-ms N    length of one run (default 3000)\n"
"  --runs N           rounds; every policy runs once per round, figures are\n"
"                     medians (default 3)\n"
"  --quick            --duration-ms 1500 --runs 1\n"
"  --modes LIST       tickets,clamp1,clamp8,adaptive,pace,wbm,wc (default:\n"
"                     per workload, see docs/results-stall.md)\n"
"  --workloads LIST   buffered,steady,abusive,overload,dio (default all)\n"
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
"  --jiffy-us N       DELALLOC's sleep between passes (default 1000)\n"
"  --no-bg-writeback  no background flusher (wb_workfn)\n"
"  --dirty-limit-kib N  dirty limit the background threshold is a share of\n"
"                     (default: from the pool, see the source)\n"
"  --dirty-bg-pct N   background threshold, %% of the limit (default 50)\n"
"  --pace-pct N       pace: the library's pace_start_pct (default 80)\n"
"  --pace-max-ms N    pace: longest single delay (default 10)\n"
"  --wbm-pct N        wbm: buffer_size, %% of the free metadata (default 90)\n"
"  --wc-soft-pct N    wc: delay from this %% of the free metadata (default 80)\n"
"  --wc-stop-pct N    wc: stop from this %% (default 90)\n"
"  --wc-rate-mib N    wc: delayed_write_rate, MiB/s of data (default: the\n"
"                     device's rate)\n"
"  --wc-recalc-ms N   wc: stall conditions recalculated every N ms (default 10)\n"
"  --steady-pct N     steady: demand, %% of the device's rate (default 70)\n"
"  --steady-fs-leaves N, --steady-ext-leaves N  steady and abusive: their\n"
"                     trees (default 1024 and 512)\n"
"  --steady-bg-pct N  steady and abusive: background threshold, %% of the\n"
"                     dirty limit (default 25)\n"
"  --abusive-writers N  abusive, overload: writers (default 16)\n"
"  --abusive-item-kib N abusive, overload: reservation per write (default\n"
"                     512)\n"
"  --burst-pct N      abusive: each burst reserves N%% of the free metadata\n"
"                     (default 70)\n"
"  --burst-period-ms N  abusive: one burst every N ms (default 20)\n"
"  --burst-ms N       overload: on N ms, off N ms (default 20)\n"
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

static unsigned modes_of(const struct params *p, int wl)
{
	if (!(p->workloads & (1u << wl)))
		return 0;
	return p->modes ? p->modes : default_modes[wl];
}

static struct result res[WL_COUNT][MODE_COUNT][64];
static struct summary sum[WL_COUNT][MODE_COUNT];

static void print_ratio(const struct ratio *r)
{
	printf("  %-26s %8.3f   (per round %.3f .. %.3f)\n", r->name, r->med,
	       r->lo, r->hi);
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
	 * - Background writeback from half the dirty limit, the limit from
	 *   the pool (dirty_limit_pages(): 270 pages here), as Linux's
	 *   dirty_background_ratio 10 / dirty_ratio 20.
	 * - The policies share one threshold where they can: pacing starts,
	 *   and the WriteController delays, at 80% of the free metadata; the
	 *   WriteBufferManager stalls, and the WriteController stops, at 90%.
	 * - Steady: 70% of the device's rate.  Abusive: 16 writers reserving
	 *   512 KiB each, in bursts of 70% of the free metadata every 20 ms
	 *   (about 29% of the device's rate): more than the half clamp 1
	 *   leaves free, less than what clamp 2 or 3 does.  Overload: the
	 *   same writers, 20 ms on, 20 ms off.
	 */
	struct params p = {
		.writers = 4,
		.duration_ms = 3000,
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
		.bg_writeback = true,
		.dirty_limit_pages = 0,
		.dirty_bg_pct = 50,
		.pace_pct = 80,
		.pace_max_ms = 10,
		.wbm_pct = 90,
		.wc_soft_pct = 80,
		.wc_stop_pct = 90,
		.wc_rate = 0,
		.wc_recalc_ms = 10,
		.steady_pct = 70,
		.steady_fs_leaves = 1024,
		.steady_ext_leaves = 512,
		.steady_bg_pct = 25,
		.abusive_writers = 16,
		.abusive_item_bytes = 512 * KIB,
		.burst_pct = 70,
		.burst_period_ms = 20,
		.burst_ms = 20,
		.csv_dir = NULL,
		.modes = 0,
		.workloads = (1u << WL_COUNT) - 1,
		.seed = 0x5eed002,
	};
	enum {
		OPT_DURATION = 256, OPT_RUNS, OPT_QUICK, OPT_MODES,
		OPT_WORKLOADS, OPT_CSV, OPT_SAMPLE, OPT_WRITERS, OPT_WRITE_US,
		OPT_DEV_US, OPT_DEV_LAT, OPT_CHUNK, OPT_COMMIT, OPT_INTERVAL,
		OPT_REF, OPT_JIFFY, OPT_POOL, OPT_OTHER, OPT_FS, OPT_EXT,
		OPT_GLOBAL, OPT_ITEM, OPT_HEAD, OPT_SEED, OPT_NO_BG,
		OPT_DIRTY_LIMIT, OPT_DIRTY_BG, OPT_PACE_PCT, OPT_PACE_MAX,
		OPT_WBM_PCT, OPT_WC_SOFT, OPT_WC_STOP, OPT_WC_RATE,
		OPT_WC_RECALC, OPT_STEADY, OPT_AB_WRITERS, OPT_AB_ITEM,
		OPT_BURST, OPT_STEADY_FS, OPT_STEADY_EXT, OPT_STEADY_BG,
		OPT_BURST_PCT, OPT_BURST_PERIOD,
		OPT_HELP, OPT_VERSION,
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
		{ "no-bg-writeback", no_argument, NULL, OPT_NO_BG },
		{ "dirty-limit-kib", required_argument, NULL, OPT_DIRTY_LIMIT },
		{ "dirty-bg-pct", required_argument, NULL, OPT_DIRTY_BG },
		{ "pace-pct", required_argument, NULL, OPT_PACE_PCT },
		{ "pace-max-ms", required_argument, NULL, OPT_PACE_MAX },
		{ "wbm-pct", required_argument, NULL, OPT_WBM_PCT },
		{ "wc-soft-pct", required_argument, NULL, OPT_WC_SOFT },
		{ "wc-stop-pct", required_argument, NULL, OPT_WC_STOP },
		{ "wc-rate-mib", required_argument, NULL, OPT_WC_RATE },
		{ "wc-recalc-ms", required_argument, NULL, OPT_WC_RECALC },
		{ "steady-pct", required_argument, NULL, OPT_STEADY },
		{ "steady-fs-leaves", required_argument, NULL, OPT_STEADY_FS },
		{ "steady-ext-leaves", required_argument, NULL, OPT_STEADY_EXT },
		{ "steady-bg-pct", required_argument, NULL, OPT_STEADY_BG },
		{ "abusive-writers", required_argument, NULL, OPT_AB_WRITERS },
		{ "abusive-item-kib", required_argument, NULL, OPT_AB_ITEM },
		{ "burst-ms", required_argument, NULL, OPT_BURST },
		{ "burst-pct", required_argument, NULL, OPT_BURST_PCT },
		{ "burst-period-ms", required_argument, NULL, OPT_BURST_PERIOD },
		{ "help", no_argument, NULL, OPT_HELP },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 }
	};
	int order[WL_COUNT * MODE_COUNT][2], nr_order = 0;
	struct cpu_ticks bench_start;
	double steal[64];
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		unsigned long long v = optarg ? strtoull(optarg, NULL, 0) : 0;

		switch (c) {
		case OPT_DURATION: p.duration_ms = v; break;
		case OPT_RUNS: p.runs = (unsigned)v; break;
		case OPT_QUICK: p.duration_ms = 1500; p.runs = 1; break;
		case OPT_MODES:
			p.modes = parse_list(optarg, mode_names, MODE_COUNT);
			if (!p.modes) {
				usage(stderr);
				return 2;
			}
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
		case OPT_NO_BG: p.bg_writeback = false; break;
		case OPT_DIRTY_LIMIT:
			p.dirty_limit_pages = div_round_up(v * KIB, PAGE_BYTES);
			break;
		case OPT_DIRTY_BG: p.dirty_bg_pct = (unsigned)v; break;
		case OPT_PACE_PCT: p.pace_pct = (unsigned)v; break;
		case OPT_PACE_MAX: p.pace_max_ms = (unsigned)v; break;
		case OPT_WBM_PCT: p.wbm_pct = (unsigned)v; break;
		case OPT_WC_SOFT: p.wc_soft_pct = (unsigned)v; break;
		case OPT_WC_STOP: p.wc_stop_pct = (unsigned)v; break;
		case OPT_WC_RATE: p.wc_rate = v * MIB; break;
		case OPT_WC_RECALC: p.wc_recalc_ms = (unsigned)v; break;
		case OPT_STEADY: p.steady_pct = (unsigned)v; break;
		case OPT_STEADY_FS: p.steady_fs_leaves = (unsigned)v; break;
		case OPT_STEADY_EXT: p.steady_ext_leaves = (unsigned)v; break;
		case OPT_STEADY_BG: p.steady_bg_pct = (unsigned)v; break;
		case OPT_AB_WRITERS: p.abusive_writers = (unsigned)v; break;
		case OPT_AB_ITEM: p.abusive_item_bytes = v * KIB; break;
		case OPT_BURST: p.burst_ms = (unsigned)v; break;
		case OPT_BURST_PCT: p.burst_pct = (unsigned)v; break;
		case OPT_BURST_PERIOD: p.burst_period_ms = (unsigned)v; break;
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
	    !p.duration_ms || !p.sample_ms || !p.workloads ||
	    !p.wb_chunk_pages || p.fs_leaves < 1 || p.ext_leaves < 1 ||
	    p.dirty_bg_pct >= 100 || !p.jiffy_us ||
	    !p.abusive_writers || p.abusive_writers > MAX_WRITERS ||
	    !p.pace_pct || p.pace_pct > 99 || p.pace_max_ms > 1000 ||
	    !p.wbm_pct || p.wbm_pct > 100 || p.wc_soft_pct >= p.wc_stop_pct ||
	    p.wc_stop_pct > 100 || !p.wc_recalc_ms || !p.steady_pct ||
	    p.steady_fs_leaves < 1 || p.steady_ext_leaves < 1 ||
	    p.steady_bg_pct >= 100 || !p.burst_pct || p.burst_pct > 100 ||
	    !p.burst_period_ms ||
	    p.item_bytes < page_meta_need(&p) ||
	    p.abusive_item_bytes < page_meta_need(&p)) {
		fprintf(stderr, "stall: bad options (an item must cover %" PRIu64
			" KiB: two ref heads and a 3-node path)\n",
			page_meta_need(&p) / KIB);
		usage(stderr);
		return 2;
	}

	printf("stall: %u writers, %" PRIu64 " ms x %u rounds, pool %" PRIu64
	       " MiB (used %" PRIu64 " MiB + trees, %" PRIu64 " MiB free), "
	       "item %" PRIu64 " KiB, write %u us, device %u us/MiB + %u us "
	       "(%.0f pages/s), commit %u us\n",
	       p.writers, p.duration_ms, p.runs, p.pool_bytes / MIB,
	       p.other_used_bytes / MIB, free_meta_bytes(&p) / MIB,
	       p.item_bytes / KIB, p.write_us, p.dev_us_per_mib, p.dev_lat_us,
	       dev_pages_per_s(&p), p.commit_us);
	printf("policies: pace from %u%% (longest delay %u ms); wbm stall at "
	       "%u%%; wc delay at %u%%, stop at %u%%, rate %.0f MiB/s, "
	       "recalculated every %u ms; steady %u%% of the device; abusive "
	       "and overload %u writers x %" PRIu64 " KiB, abusive in bursts "
	       "of %u%% of the free metadata every %u ms, overload %u ms on, "
	       "%u ms off; background writeback %s\n", p.pace_pct,
	       p.pace_max_ms, p.wbm_pct, p.wc_soft_pct, p.wc_stop_pct,
	       (p.wc_rate ? (double)p.wc_rate :
			    dev_pages_per_s(&p) * PAGE_BYTES) / MIB,
	       p.wc_recalc_ms, p.steady_pct, p.abusive_writers,
	       p.abusive_item_bytes / KIB, p.burst_pct, p.burst_period_ms,
	       p.burst_ms, p.burst_ms, p.bg_writeback ? "on" : "off");
	print_load("start");
	bench_start = cpu_ticks_now();

	for (int wl = 0; wl < WL_COUNT; wl++)
		for (int m = 0; m < MODE_COUNT; m++)
			if (modes_of(&p, wl) & (1u << m)) {
				order[nr_order][0] = wl;
				order[nr_order][1] = m;
				nr_order++;
			}
	/*
	 * Rounds: every policy once per round, in reverse order every
	 * other round, so that a machine slowing down (other jobs) hurts
	 * all alike, and the ratios are of runs made side by side.
	 */
	for (unsigned run = 0; run < p.runs; run++) {
		struct cpu_ticks round_start = cpu_ticks_now();

		for (int k = 0; k < nr_order; k++) {
			int i = run % 2 ? nr_order - 1 - k : k;
			int wl = order[i][0], m = order[i][1];
			char path[4096];

			snprintf(path, sizeof(path), "%s/stall-%s-%s.run%u.csv",
				 p.csv_dir ? p.csv_dir : ".",
				 workload_names[wl], mode_names[m], run);
			if (run_once(&p, wl, m, run, &res[wl][m][run],
				     p.csv_dir ? path : NULL))
				return 1;
		}
		steal[run] = cpu_steal_pct(round_start, cpu_ticks_now());
		fprintf(stderr, "stall: round %u of %u done (steal %.1f%% of "
			"CPU time)\n", run + 1, p.runs, steal[run]);
	}
	print_load("end");
	print_steal(bench_start, steal, p.runs);
	print_header();
	for (int i = 0; i < nr_order; i++) {
		int wl = order[i][0], m = order[i][1];

		summarise(res[wl][m], p.runs, &sum[wl][m]);
		if (p.csv_dir)
			keep_median_timeline(&p, wl, m, sum[wl][m].median_run);
		print_summary(wl, m, &sum[wl][m]);
	}
	for (int i = 0; i < nr_order; i++)
		print_flushes(order[i][0], order[i][1],
			      &sum[order[i][0]][order[i][1]]);

	{
#define S(wl, m) (&sum[WL_##wl][MODE_##m])
#define R(wl, m) (res[WL_##wl][MODE_##m])
#define HAVE2(wl, a, b) (S(wl, a)->have && S(wl, b)->have)
/* Policy a over policy b on workload wl, per round and of the medians. */
#define RATIO(name, wl, a, b, get) \
	ratio_of(name, R(wl, a), R(wl, b), n, get, HAVE2(wl, a, b))
		unsigned n = p.runs;
		struct ratio tp = RATIO("throughput_ratio",
			BUFFERED, ADAPTIVE, TICKETS, get_ops);
		struct ratio p99 = RATIO("p99_ratio",
			BUFFERED, ADAPTIVE, TICKETS, get_p99);
		struct ratio cr = RATIO("commit_ratio",
			BUFFERED, ADAPTIVE, TICKETS, get_commits);
		struct ratio dio = RATIO("dio_ratio",
			DIO, ADAPTIVE, TICKETS, get_ops);
		struct ratio pwc = RATIO("pace_p99_vs_wc",
			BUFFERED, PACE, WC, get_p99);
		struct ratio ptk = RATIO("pace_p99_vs_tickets",
			BUFFERED, PACE, TICKETS, get_p99);
		struct ratio ptp = { "pace_tput_vs_best", NAN, NAN, NAN };
		struct ratio cag = RATIO("clamp_abusive_gain",
			ABUSIVE, ADAPTIVE, CLAMP1, get_ops);
		struct ratio cap = RATIO("clamp_abusive_p99",
			ABUSIVE, ADAPTIVE, CLAMP1, get_p99);
		struct ratio cst = RATIO("clamp_steady_tput",
			STEADY, ADAPTIVE, CLAMP1, get_ops);
		struct ratio csf = RATIO("clamp_steady_flush_vs_c8",
			STEADY, ADAPTIVE, CLAMP8, get_flushes);
		/* Not in the summary line: what a fixed high clamp buys on
		 * the abusive bursts, and pacing under overload. */
		struct ratio c8p = RATIO("clamp8_abusive_p99",
			ABUSIVE, CLAMP8, CLAMP1, get_p99);
		struct ratio pov = RATIO("pace_overload_tput",
			OVERLOAD, PACE, CLAMP1, get_ops);
		double max_stall = S(BUFFERED, PACE)->have ?
				   S(BUFFERED, PACE)->max / NSEC_PER_MSEC : NAN;
		static const int peers[] = { MODE_TICKETS, MODE_WBM, MODE_WC };
		int best = -1;

		/* The best peer: the highest median throughput of the three. */
		for (size_t i = 0; i < sizeof(peers) / sizeof(peers[0]); i++)
			if (sum[WL_BUFFERED][peers[i]].have &&
			    (best < 0 || sum[WL_BUFFERED][peers[i]].ops >
					 sum[WL_BUFFERED][best].ops))
				best = peers[i];
		if (best >= 0 && S(BUFFERED, PACE)->have) {
			ptp = ratio_of("pace_tput_vs_best", R(BUFFERED, PACE),
				       res[WL_BUFFERED][best], n, get_ops, true);
			printf("best peer on throughput: %s\n", mode_names[best]);
		}
		printf("ratios (of medians; spread = the same ratio per round):\n");
		print_ratio(&tp);
		print_ratio(&p99);
		print_ratio(&cr);
		print_ratio(&dio);
		print_ratio(&pwc);
		print_ratio(&ptk);
		print_ratio(&ptp);
		print_ratio(&cag);
		print_ratio(&cap);
		print_ratio(&cst);
		print_ratio(&csf);
		print_ratio(&c8p);
		print_ratio(&pov);
		printf("summary: throughput_ratio=%.2f p99_ratio=%.3f "
		       "commit_ratio=%.2f dio_ratio=%.3f pace_p99_vs_wc=%.3f "
		       "pace_p99_vs_tickets=%.3f pace_tput_vs_best=%.3f "
		       "max_stall_ms=%.2f clamp_abusive_gain=%.3f "
		       "clamp_abusive_p99=%.3f clamp_steady_tput=%.3f "
		       "clamp_steady_flush_vs_c8=%.3f\n", tp.med, p99.med,
		       cr.med, dio.med, pwc.med, ptk.med, ptp.med, max_stall,
		       cag.med, cap.med, cst.med, csf.med);
#undef S
#undef R
#undef HAVE2
#undef RATIO
	}
	return 0;
}
