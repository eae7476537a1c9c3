/* SPDX-License-Identifier: MIT */
/*
 * nowait_uring.h - the io_uring writer of examples/nowait_uring.c, shared
 * with bench/nowait.c (docs/design.md section 8).  Static code only:
 * each program that includes it gets its own copy.
 *
 * WHAT IT SHOWS
 *
 * Before the async buffered-write series ("io-uring/btrfs:
 * support async buffered writes", Stefan Roesch, 2022), io_uring handed every buffered write to btrfs to an
 * io-wq worker thread, because btrfs's write path could block: reserving
 * space may flush delalloc, wait for ordered extents or commit.  The series
 * lets the write run inline, in the submitting thread, once every step of
 * it (the space reservation first of all: the nowait
 * direct-I/O series) can answer "would
 * block" with -EAGAIN instead of blocking.  io_uring then punts only the
 * writes that got -EAGAIN.  Dave Chinner's review of an ext4 NOWAIT patch is the warning: the promise
 * holds only if nothing on the path blocks, the first blocking lock after
 * the check breaks it.
 *
 * The writer does the same with this library playing btrfs's space
 * reservation.  For each 4 KiB buffered write it calls
 * srsv_delalloc_reserve() in SRSV_DELALLOC_NOWAIT mode in the submitting
 * thread; on success it submits the write to the ring at once (with
 * RWF_NOWAIT when the kernel does non-blocking buffered writes on this
 * file system, see below); on -EAGAIN it hands the write to a worker
 * thread (our io-wq) that reserves in SRSV_DELALLOC_NORMAL mode, which may
 * wait for the flushers, writes with pwrite() and posts the completion to
 * the submitter's ring with IORING_OP_MSG_RING, as io-wq posts a CQE.  The
 * submitting thread never takes a lock: it hands finished writes to
 * writeback through a lock-free list and finds its completions in the
 * ring.  It never has two writes to one block in flight (nu_writer::busy):
 * in-flight requests have no order, and a punted write could otherwise
 * land after a later one to the same block.
 *
 * THE ENGINE
 *
 * A file of nu_config::blocks 4 KiB blocks, written sequentially (and
 * round again if more writes than blocks are asked, as fio's time_based
 * jobs wrap around).  The engine's flush callback does real work:
 *
 * - DELALLOC, DELALLOC_WAIT, DELALLOC_FULL (writeback): take a batch of
 *   written-but-dirty blocks, move them from delalloc to ordered in the
 *   library's dirty figures, write them to disk (sync_file_range()), then
 *   end each write's reservation with srsv_delalloc_finish(): data and
 *   the metadata the write used become "used".  The metadata a write uses
 *   is the copy-on-write of its extent item's leaf: 16 KiB the first time
 *   the leaf changes in a transaction, nothing after that; the old copy
 *   of the leaf, and the old version of an overwritten block, are pinned
 *   until the commit.  A block written again before its previous version
 *   was written back makes that version moot: its reservation is
 *   released (srsv_delalloc_release()).
 * - COMMIT_TRANS: fdatasync() the file, then unpin what was pinned before
 *   the commit started (data and metadata) and commit the quota
 *   (META_PERTRANS is freed).
 * - ALLOC_CHUNK*: the device is fixed, -ENOSPC.  The other states do not
 *   exist in this engine: -EOPNOTSUPP.
 *
 * The pools are deliberately small in the example (4 MiB of metadata for
 * 256 KiB per write, the library's default per-extent cost) so that the
 * submitter outruns writeback and some NOWAIT reservations get -EAGAIN.
 * Preemptive flushing is on by default; with it off (nu_config::no_preempt)
 * nothing flushes until a ticket waits, so a punt is certain once the
 * metadata pool is full.
 *
 * KERNEL NOWAIT
 *
 * Whether the kernel itself can do a buffered write without blocking
 * depends on the file system.  btrfs (since Linux 6.1) and XFS can; btrfs
 * only into preallocated or NOCOW ranges, so the file is preallocated as
 * fio does (nu_prealloc()), and a second pass over it (copy-on-write of
 * written extents) gets -EAGAIN from the kernel.  ext4 answers RWF_NOWAIT
 * buffered writes submitted through io_uring with -EAGAIN (no
 * FOP_BUFFER_WASYNC), tmpfs with -EOPNOTSUPP.  nu_run() probes once, on a
 * scratch file next to the data file; when the probe fails the writes go
 * to the ring without RWF_NOWAIT, and io_uring does what it does for such
 * files: it punts them to its own io-wq.  A -EAGAIN for one write with
 * RWF_NOWAIT is punted to our worker like a library -EAGAIN (the
 * reservation is then already held).
 *
 * At the end the writer writes everything back, commits, checks that the
 * pools, the quota and the dirty figures hold exactly what the file holds
 * (nothing leaked), and reads every block back: header (block, pass) and
 * CRC-32C of the whole block.
 */
#ifndef NOWAIT_URING_H
#define NOWAIT_URING_H

/* liburing's sigset_t and O_DIRECT need it; it must come before the first
 * system header of the including file, which should define it too. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>

#include <libspacersv/spacersv.h>

/*
 * valgrind 3.19 does not treat io_uring_enter() as a blocking system call:
 * a thread waiting in it keeps valgrind's big lock and no other thread
 * runs (liburing issue 657, KDE bug 463859).  Under valgrind the
 * submitter waits on an eventfd registered with the ring instead.
 */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define NU_UNDER_VALGRIND() (RUNNING_ON_VALGRIND != 0)
#endif
#endif
#ifndef NU_UNDER_VALGRIND
#define NU_UNDER_VALGRIND() false
#endif

#define NU_KIB (UINT64_C(1) << 10)
#define NU_MIB (UINT64_C(1) << 20)

/* One write: fio --bs=4k in the series' job, and the page size. */
#define NU_BLOCK 4096u
/* btrfs's default node size: the unit of a leaf's copy-on-write. */
#define NU_NODE (16 * NU_KIB)
/*
 * File extent items per 16 KiB leaf.  A btrfs file extent item with its
 * key and item header is about 100 bytes, but the leaf also holds the
 * checksum items of the data; 64 per leaf (about 250 bytes per block) is
 * the engine_demo figure and keeps a 16 MiB file at 64 leaves.
 */
#define NU_ITEMS_PER_LEAF 64u
/* Writes in flight at most (io_uring queue depth).  The series used 1. */
#define NU_MAX_QD 64u
/*
 * Blocks per writeback call at least.  The library's "bytes" hint may ask
 * for one write's worth; a sync_file_range() and a pass over the list per
 * block would cost more than the writes, so small asks are rounded up to
 * a 64 KiB cluster, as the kernel clusters writeback.
 */
#define NU_WB_CLUSTER 16u
/* DELALLOC_WAIT asks for more than DELALLOC: a waiter is blocked. */
#define NU_WB_WAIT_FACTOR 4u
/* The exit status of a test that was skipped (meson, automake). */
#define NU_SKIP 77
#define NU_MAGIC 0x4e575552u	/* "NWUR" */

/* How the submitter handles a write. */
enum nu_mode {
	/* Reserve NOWAIT inline; submit to the ring; punt on -EAGAIN. */
	NU_MODE_NOWAIT = 0,
	/* Punt every write to the worker (io_uring before the series). */
	NU_MODE_PUNT_ALL = 1,
	/* Reserve NOWAIT inline and pwrite() in the submitter (fio psync);
	 * punt on -EAGAIN.  No ring submission for inline writes. */
	NU_MODE_PSYNC = 2,
	/* As NOWAIT, but on -EAGAIN queue an asynchronous reservation
	 * (srsv_delalloc_reserve_async()) and wait for its completion
	 * queue's fd in the ring (IORING_OP_POLL_ADD); then submit the
	 * write.  No thread waits for space. */
	NU_MODE_ASYNC = 3,
	/* Reserve in blocking mode in the submitter (the loop stops while
	 * the reservation waits), then submit to the ring. */
	NU_MODE_BLOCKING = 4,
	NU_MODE_COUNT = 5
};

static const char *const nu_mode_names[NU_MODE_COUNT] = {
	"inline", "punted", "psync", "async", "blocking"
};

/* Use of RWF_NOWAIT on the ring's writes. */
enum nu_kernel_nowait {
	NU_KNOWAIT_AUTO = 0,	/* probe the file system */
	NU_KNOWAIT_ON = 1,	/* always (ext4: every write punted) */
	NU_KNOWAIT_OFF = 2	/* never */
};

struct nu_config {
	const char *dir;	/* where the temp dir goes (NULL: $TMPDIR) */
	uint64_t blocks;	/* file size in 4 KiB blocks */
	uint64_t writes;	/* writes in all (wraps around the file) */
	unsigned qd;		/* writes in flight at most */
	enum nu_mode mode;
	enum nu_kernel_nowait kernel_nowait;
	bool no_preempt;	/* create the ctx with SRSV_CTX_NO_PREEMPT */
	/* Wait for CQEs on an eventfd, not in io_uring_enter() (always
	 * under valgrind, see above). */
	bool wait_eventfd;
	uint64_t meta_pool_bytes;	/* METADATA pool */
	uint64_t data_headroom_bytes;	/* DATA pool beyond the file size */
};

static inline void nu_config_init(struct nu_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->blocks = 4096;		/* 16 MiB */
	cfg->writes = 4096;		/* one pass */
	cfg->qd = 1;
	cfg->mode = NU_MODE_NOWAIT;
	cfg->kernel_nowait = NU_KNOWAIT_AUTO;
	/* 16 writes' worth at 256 KiB each: tight on purpose (see top). */
	cfg->meta_pool_bytes = 4 * NU_MIB;
	/* Room for what overwrites pin until a commit. */
	cfg->data_headroom_bytes = 4 * NU_MIB;
}

struct nu_stats {
	uint64_t writes;		/* writes completed */
	uint64_t inline_writes;		/* done by the submitter's path */
	uint64_t punted_library;	/* NOWAIT reservation said -EAGAIN */
	uint64_t punted_kernel;		/* RWF_NOWAIT write said -EAGAIN */
	uint64_t punted_short;		/* short write, finished by the worker */
	uint64_t punted_forced;		/* NU_MODE_PUNT_ALL */
	uint64_t async_waits;		/* NU_MODE_ASYNC: waited on the fd */
	uint64_t async_max_pending;	/* most async reservations at once */
	uint64_t polls;			/* POLL_ADD completions */
	uint64_t lat_p50_ns, lat_p99_ns, lat_max_ns;	/* issue -> done */
	uint64_t written_back;		/* writes finished by writeback */
	uint64_t superseded;		/* released: rewritten while dirty */
	uint64_t wb_calls;		/* writeback calls that wrote */
	uint64_t commits;
	uint64_t elapsed_ns;		/* first submission to last CQE */
	bool kernel_nowait;		/* RWF_NOWAIT was used */
	bool waited_eventfd;		/* the submitter waited on an eventfd */
	char fs_note[64];		/* what the kernel probe found */
};

/* One write: its block, its version and what it holds in the library. */
struct nu_write {
	_Atomic(struct nu_write *) next;	/* inbox / writeback FIFO */
	uint64_t block;
	uint64_t gen;			/* pass number, from 1 */
	struct srsv_delalloc_resv resv;
	bool reserved;
};

/* A queue slot: the buffer of one write in flight. */
struct nu_slot {
	struct nu_slot *next_free;
	struct nu_slot *next_punt;	/* worker queue */
	struct nu_write *w;
	unsigned idx;
	unsigned char *buf;
	uint64_t t0;			/* when the write was issued */
	/* NU_MODE_ASYNC: the metadata ticket while the write waits. */
	struct srsv_ticket ticket;
	/*
	 * Set (release) by the worker before it posts the slot's
	 * completion, read (acquire) by the submitter when it reaps it.  The
	 * kernel already orders the MSG_RING after the worker's stores, but
	 * tools that check C's memory model (TSan) cannot see into the
	 * kernel: this pair says it in C, for one store and one load.
	 */
	atomic_bool handed_back;
};

struct nu_engine {
	const struct nu_config *cfg;
	struct nu_stats *stats;
	struct srsv_ctx *ctx;
	struct srsv_space *data, *meta;
	struct srsv_quota *quota;
	int fd;
	uint64_t meta_per_write;	/* what one write reserves */

	/* Written and dirty, pushed lock-free by the submitter. */
	_Atomic(struct nu_write *) inbox;
	/* Newest version submitted per block (read by writeback). */
	_Atomic uint64_t *latest_gen;

	/* Writeback and commit state, under wb_lock. */
	pthread_mutex_t wb_lock;
	struct nu_write *fifo_head, *fifo_tail;	/* oldest first */
	uint64_t *durable_gen;		/* version finished per block */
	uint64_t *leaf_trans;		/* transaction of the leaf's copy */
	bool *leaf_exists;
	uint64_t trans;			/* running transaction, from 1 */
	uint64_t pinned_data, pinned_meta;
	uint64_t leaves;		/* leaves that exist */

	/* Serialises commits: held across fdatasync(). */
	pthread_mutex_t commit_lock;

	_Atomic uint64_t written_back, superseded, wb_calls, commits;
	_Atomic int error;		/* first failure (negative errno) */
};

/* Remember the first failure. */
static inline void nu_fail(struct nu_engine *e, int err, const char *what)
{
	int zero = 0;

	if (err >= 0)
		err = -EIO;
	if (atomic_compare_exchange_strong(&e->error, &zero, err))
		fprintf(stderr, "nowait_uring: %s: %s\n", what, strerror(-err));
}

#define NU_CHECK(e, call) do {						\
	int nu_ret_ = (call);						\
	if (nu_ret_)							\
		nu_fail((e), nu_ret_, #call);				\
} while (0)

static inline uint64_t nu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- block contents: a pure function of (block, gen), CRC-32C ---- */

struct nu_block_hdr {
	uint32_t magic;
	uint32_t crc;		/* CRC-32C of the block with crc = 0 */
	uint64_t block;
	uint64_t gen;
};

/*
 * CRC-32C (Castagnoli).  The submitter checksums every block it writes, in
 * every variant, before the reservation: a byte-wise table costs several
 * microseconds per 4 KiB block (17 us measured on a loaded 2-vCPU VM),
 * more than the write itself, and would hide the difference the benchmark
 * measures; with the SSE4.2 instruction the whole fill takes about 1.5 us
 * there.  The table is the fallback, and the reference the instruction is
 * checked against at start.
 */
static uint32_t nu_crc_table[256];
static bool nu_crc_hw;

static uint32_t nu_crc32c_sw(const unsigned char *p, size_t n)
{
	uint32_t c = ~0u;

	while (n--)
		c = nu_crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return ~c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("sse4.2")))
static uint32_t nu_crc32c_hw(const unsigned char *p, size_t n)
{
	uint64_t c = ~UINT32_C(0);
	uint32_t c32;

	for (; n >= 8; n -= 8, p += 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
	}
	c32 = (uint32_t)c;
	for (; n; n--)
		c32 = __builtin_ia32_crc32qi(c32, *p++);
	return ~c32;
}
#define NU_HAVE_CRC_HW 1
#endif

static inline void nu_crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		nu_crc_table[i] = c;
	}
#ifdef NU_HAVE_CRC_HW
	{
		/* "123456789" is CRC-32C's check string: 0xe3069283. */
		static const unsigned char check[] = "123456789abcdefghij";

		nu_crc_hw = __builtin_cpu_supports("sse4.2") &&
			    nu_crc32c_hw(check, 9) == 0xe3069283u &&
			    nu_crc32c_hw(check, sizeof(check)) ==
			    nu_crc32c_sw(check, sizeof(check));
	}
#endif
}

static inline uint32_t nu_crc32c(const unsigned char *p, size_t n)
{
#ifdef NU_HAVE_CRC_HW
	if (nu_crc_hw)
		return nu_crc32c_hw(p, n);
#endif
	return nu_crc32c_sw(p, n);
}

static inline void nu_fill_block(unsigned char *buf, uint64_t block,
				 uint64_t gen)
{
	struct nu_block_hdr h = { NU_MAGIC, 0, block, gen };
	uint64_t seed = (block * UINT64_C(0x9e3779b97f4a7c15)) ^ (gen << 40);

	/* Each word a function of (block, gen, offset) alone, so the loop
	 * vectorises: the payload must be cheap (see the CRC above). */
	for (size_t off = sizeof(h); off < NU_BLOCK; off += 8) {
		uint64_t v = seed ^ (off * UINT64_C(0xbf58476d1ce4e5b9));

		memcpy(buf + off, &v, 8);
	}
	memcpy(buf, &h, sizeof(h));
	h.crc = nu_crc32c(buf, NU_BLOCK);
	memcpy(buf, &h, sizeof(h));
}

/* 0 when @buf is block @block of pass @gen, intact. */
static inline int nu_check_block(const unsigned char *buf, uint64_t block,
				 uint64_t gen)
{
	unsigned char copy[NU_BLOCK];
	struct nu_block_hdr h;

	memcpy(&h, buf, sizeof(h));
	if (h.magic != NU_MAGIC || h.block != block || h.gen != gen)
		return -1;
	memcpy(copy, buf, NU_BLOCK);
	memset(copy + offsetof(struct nu_block_hdr, crc), 0, sizeof(h.crc));
	return nu_crc32c(copy, NU_BLOCK) == h.crc ? 0 : -1;
}

/* ---- writeback and commit: the flush callback's work ---- */

/* Move everything the submitter pushed to the FIFO, oldest first. */
static void nu_drain_inbox(struct nu_engine *e)
{
	struct nu_write *w = atomic_exchange(&e->inbox, NULL);
	struct nu_write *rev = NULL, *next;

	/* The inbox is a stack (newest first): reverse it. */
	for (; w; w = next) {
		next = atomic_load_explicit(&w->next, memory_order_relaxed);
		atomic_store_explicit(&w->next, rev, memory_order_relaxed);
		rev = w;
	}
	if (!rev)
		return;
	if (e->fifo_tail)
		atomic_store_explicit(&e->fifo_tail->next, rev,
				      memory_order_relaxed);
	else
		e->fifo_head = rev;
	for (w = rev; atomic_load_explicit(&w->next, memory_order_relaxed);
	     w = atomic_load_explicit(&w->next, memory_order_relaxed))
		;
	e->fifo_tail = w;
}

/*
 * The metadata of one finished write, wb_lock held: the first change of a
 * leaf in a transaction copies it (16 KiB, taken from the write's
 * reservation; the old copy is pinned after the finish).  Returns the
 * bytes the write used; *pin_old says whether an old copy is to be pinned.
 */
static uint64_t nu_leaf_cow(struct nu_engine *e, uint64_t block,
			    bool *pin_old)
{
	uint64_t leaf = block / NU_ITEMS_PER_LEAF;
	uint64_t used = NU_NODE < e->meta_per_write ? NU_NODE :
			e->meta_per_write;

	*pin_old = false;
	if (e->leaf_exists[leaf] && e->leaf_trans[leaf] == e->trans)
		return 0;
	*pin_old = e->leaf_exists[leaf];
	if (!e->leaf_exists[leaf])
		e->leaves++;
	e->leaf_exists[leaf] = true;
	e->leaf_trans[leaf] = e->trans;
	return used;
}

/*
 * Write back at most @max dirty writes, oldest first, and end their
 * reservations.  Returns how many were taken.  wb_lock is held across the
 * I/O: writeback calls from several flushers run one after the other,
 * which keeps the per-block order of finishes simple.  The submitter
 * never takes the lock.
 */
static uint64_t nu_writeback(struct nu_engine *e, uint64_t max)
{
	struct nu_write *batch, *w, *next;
	uint64_t n = 0, lo = UINT64_MAX, hi = 0;

	pthread_mutex_lock(&e->wb_lock);
	nu_drain_inbox(e);
	batch = e->fifo_head;
	for (w = batch; w && n < max; n++) {
		lo = w->block < lo ? w->block : lo;
		hi = w->block > hi ? w->block : hi;
		next = atomic_load_explicit(&w->next, memory_order_relaxed);
		if (n + 1 == max || !next)
			atomic_store_explicit(&w->next, NULL,
					      memory_order_relaxed);
		w = next;
	}
	e->fifo_head = w;
	if (!w)
		e->fifo_tail = NULL;
	if (!n) {
		pthread_mutex_unlock(&e->wb_lock);
		return 0;
	}

	/* dirty -> under writeback (btrfs: delalloc -> ordered) */
	NU_CHECK(e, srsv_ctx_account_delalloc(e->ctx,
					      -(int64_t)(n * NU_BLOCK),
					      (int64_t)(n * NU_BLOCK)));
	if (sync_file_range(e->fd, (off_t)(lo * NU_BLOCK),
			    (off_t)((hi - lo + 1) * NU_BLOCK),
			    SYNC_FILE_RANGE_WAIT_BEFORE |
			    SYNC_FILE_RANGE_WRITE |
			    SYNC_FILE_RANGE_WAIT_AFTER))
		nu_fail(e, -errno, "sync_file_range");

	/* The ordered extents complete. */
	for (w = batch; w; w = next) {
		uint64_t b = w->block;
		bool pin_old_leaf;
		uint64_t meta_used;

		next = atomic_load_explicit(&w->next, memory_order_relaxed);
		if (atomic_load_explicit(&e->latest_gen[b],
					 memory_order_acquire) > w->gen) {
			/* Rewritten since: this version never lands. */
			NU_CHECK(e, srsv_delalloc_release(&w->resv));
			w->reserved = false;
			atomic_fetch_add(&e->superseded, 1);
			continue;
		}
		meta_used = nu_leaf_cow(e, b, &pin_old_leaf);
		NU_CHECK(e, srsv_delalloc_finish(&w->resv, meta_used));
		w->reserved = false;
		if (pin_old_leaf) {
			NU_CHECK(e, srsv_space_pin(e->meta, NU_NODE));
			e->pinned_meta += NU_NODE;
		}
		if (e->durable_gen[b]) {
			/* The old version is garbage once this commits. */
			NU_CHECK(e, srsv_space_pin(e->data, NU_BLOCK));
			e->pinned_data += NU_BLOCK;
			NU_CHECK(e, srsv_quota_free_used(e->quota, NU_BLOCK));
		}
		e->durable_gen[b] = w->gen;
		atomic_fetch_add(&e->written_back, 1);
	}
	NU_CHECK(e, srsv_ctx_account_delalloc(e->ctx, 0,
					      -(int64_t)(n * NU_BLOCK)));
	atomic_fetch_add(&e->wb_calls, 1);
	pthread_mutex_unlock(&e->wb_lock);
	return n;
}

/*
 * Commit: make the transaction durable, then free what it replaced.
 * Serialised: a flusher that arrives during another's fdatasync() waits
 * for it and then commits what was pinned meanwhile, so COMMIT_TRANS never
 * returns before what was pinned when it was called is free.
 */
static void nu_commit(struct nu_engine *e)
{
	uint64_t pd, pm;

	pthread_mutex_lock(&e->commit_lock);
	pthread_mutex_lock(&e->wb_lock);
	pd = e->pinned_data;
	pm = e->pinned_meta;
	e->trans++;
	pthread_mutex_unlock(&e->wb_lock);

	if (fdatasync(e->fd))
		nu_fail(e, -errno, "fdatasync");
	if (pd)
		NU_CHECK(e, srsv_space_unpin(e->data, pd));
	if (pm)
		NU_CHECK(e, srsv_space_unpin(e->meta, pm));

	pthread_mutex_lock(&e->wb_lock);
	e->pinned_data -= pd;
	e->pinned_meta -= pm;
	pthread_mutex_unlock(&e->wb_lock);
	/* The quota's per-transaction metadata goes with the commit. */
	NU_CHECK(e, srsv_quota_commit(e->ctx, NULL));
	atomic_fetch_add(&e->commits, 1);
	pthread_mutex_unlock(&e->commit_lock);
}

/* The library's flush callback (a library thread, no library lock held). */
static int nu_flush(struct srsv_space *space, enum srsv_flush_state state,
		    uint64_t bytes, bool for_preempt, void *user)
{
	struct nu_engine *e = user;
	uint64_t per = srsv_space_kind(space) == SRSV_POOL_DATA ||
		       !e->meta_per_write ? NU_BLOCK : e->meta_per_write;
	uint64_t batch = bytes / per + 1;

	(void)for_preempt;
	if (batch < NU_WB_CLUSTER)
		batch = NU_WB_CLUSTER;
	switch (state) {
	case SRSV_STATE_DELALLOC:
		nu_writeback(e, batch);
		return 0;
	case SRSV_STATE_DELALLOC_WAIT:
		nu_writeback(e, batch * NU_WB_WAIT_FACTOR);
		return 0;
	case SRSV_STATE_DELALLOC_FULL:
		while (nu_writeback(e, UINT64_MAX))
			;
		return 0;
	case SRSV_STATE_COMMIT_TRANS:
		nu_commit(e);
		return 0;
	case SRSV_STATE_ALLOC_CHUNK:
	case SRSV_STATE_ALLOC_CHUNK_FORCE:
		return -ENOSPC;		/* a fixed device */
	default:
		return -EOPNOTSUPP;	/* no such thing in this engine */
	}
}

/* ---- the writer: submitter, worker, completions ---- */

/* user_data of a CQE: what completed, and which slot. */
#define NU_UD_WRITE UINT64_C(1)	/* a write the submitter submitted */
#define NU_UD_PUNT UINT64_C(2)	/* the worker's MSG_RING */
#define NU_UD_POLL UINT64_C(3)	/* POLL_ADD on the completion queue's fd */
#define NU_UD(kind, slot) ((kind) << 32 | (uint64_t)(slot))

struct nu_writer {
	struct nu_engine *e;
	struct io_uring ring;		/* the submitter's */
	struct io_uring wring;		/* the worker's, for MSG_RING only */
	int efd;			/* registered eventfd, or -1 */
	bool ring_ok, wring_ok;
	struct nu_slot slots[NU_MAX_QD];
	struct nu_slot *free_slots;
	struct nu_write *writes;
	/* NU_MODE_ASYNC: the library's completion queue, watched by one
	 * POLL_ADD in the ring while reservations wait. */
	struct srsv_async *aq;
	unsigned async_pending;
	bool poll_armed;
	/* Per-write latency, issue to completion (ns). */
	uint64_t *lat;
	uint64_t nlat;
	unsigned char *bufs;
	/*
	 * Blocks with a write in flight (submitter only).  Writes in flight
	 * have no order: a punted write waiting for its reservation could
	 * land after a later write to the same block issued meanwhile, and
	 * the file would keep the older version.  A block is written by one
	 * request at a time, as the kernel's page lock serialises writers.
	 */
	bool *busy;

	/* The worker's queue (the submitter's only lock, as io-wq's). */
	pthread_mutex_t punt_lock;
	pthread_cond_t punt_cond;
	struct nu_slot *punt_head, **punt_tail;
	bool punt_stop;
	pthread_t worker;
	bool worker_started;
};

/* Hand @s to the worker. */
static void nu_punt(struct nu_writer *wr, struct nu_slot *s)
{
	pthread_mutex_lock(&wr->punt_lock);
	s->next_punt = NULL;
	*wr->punt_tail = s;
	wr->punt_tail = &s->next_punt;
	pthread_cond_signal(&wr->punt_cond);
	pthread_mutex_unlock(&wr->punt_lock);
}

/* Write the whole block at its offset, blocking; bytes or -errno. */
static int nu_pwrite_block(int fd, const unsigned char *buf, uint64_t block)
{
	size_t done = 0;

	while (done < NU_BLOCK) {
		ssize_t r = pwrite(fd, buf + done, NU_BLOCK - done,
				   (off_t)(block * NU_BLOCK + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EIO;
		done += (size_t)r;
	}
	return (int)NU_BLOCK;
}

/* Post a completion for @s to the submitter's ring, as io-wq does. */
static int nu_post(struct nu_writer *wr, struct nu_slot *s, int res)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&wr->wring);
	struct io_uring_cqe *cqe;
	int ret;

	if (!sqe)
		return -EBUSY;
	io_uring_prep_msg_ring(sqe, wr->ring.ring_fd, (unsigned)res,
			       NU_UD(NU_UD_PUNT, s->idx), 0);
	do {
		ret = io_uring_submit_and_wait(&wr->wring, 1);
	} while (ret == -EINTR);
	if (ret < 0)
		return ret;
	ret = io_uring_wait_cqe(&wr->wring, &cqe);
	if (ret)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(&wr->wring, cqe);
	return ret < 0 ? ret : 0;
}

/* The worker (io-wq): may block on the reservation and on the write. */
static void *nu_worker(void *arg)
{
	struct nu_writer *wr = arg;
	struct nu_engine *e = wr->e;

	for (;;) {
		struct nu_slot *s;
		int res;

		pthread_mutex_lock(&wr->punt_lock);
		while (!wr->punt_head && !wr->punt_stop)
			pthread_cond_wait(&wr->punt_cond, &wr->punt_lock);
		s = wr->punt_head;
		if (s) {
			wr->punt_head = s->next_punt;
			if (!wr->punt_head)
				wr->punt_tail = &wr->punt_head;
		}
		pthread_mutex_unlock(&wr->punt_lock);
		if (!s)
			return NULL;	/* stop, and nothing left */

		res = 0;
		if (!s->w->reserved) {
			res = srsv_delalloc_reserve(e->ctx, e->quota,
						    NU_BLOCK,
						    SRSV_DELALLOC_NORMAL,
						    &s->w->resv);
			s->w->reserved = res == 0;
		}
		if (!res)
			res = nu_pwrite_block(e->fd, s->buf, s->w->block);
		/* Nothing of the slot is touched after this. */
		atomic_store_explicit(&s->handed_back, true,
				      memory_order_release);
		res = nu_post(wr, s, res);
		if (res)
			nu_fail(e, res, "MSG_RING to the submitter");
	}
}

/* A write is in the page cache: it is now dirty, waiting for writeback. */
static void nu_complete(struct nu_writer *wr, struct nu_slot *s)
{
	struct nu_engine *e = wr->e;
	struct nu_write *w = s->w, *head;

	NU_CHECK(e, srsv_ctx_account_delalloc(e->ctx, NU_BLOCK, 0));
	if (wr->lat)
		wr->lat[wr->nlat++] = nu_now_ns() - s->t0;
	/* Lock-free push: the submitter never waits for writeback. */
	head = atomic_load_explicit(&e->inbox, memory_order_relaxed);
	do {
		atomic_store_explicit(&w->next, head, memory_order_relaxed);
	} while (!atomic_compare_exchange_weak_explicit(&e->inbox, &head, w,
							memory_order_release,
							memory_order_relaxed));
	wr->busy[w->block] = false;
	s->w = NULL;
	s->next_free = wr->free_slots;
	wr->free_slots = s;
	e->stats->writes++;
}

/* Queue the write of @s (reserved) to the ring. */
static void nu_submit_write(struct nu_writer *wr, struct nu_slot *s)
{
	struct nu_engine *e = wr->e;
	/* qd writes + one POLL_ADD <= SQ entries: never NULL */
	struct io_uring_sqe *sqe = io_uring_get_sqe(&wr->ring);

	io_uring_prep_write(sqe, e->fd, s->buf, NU_BLOCK,
			    (uint64_t)s->w->block * NU_BLOCK);
	if (e->stats->kernel_nowait)
		sqe->rw_flags = RWF_NOWAIT;
	io_uring_sqe_set_data64(sqe, NU_UD(NU_UD_WRITE, s->idx));
}

/* Watch the completion queue's fd from the ring (one POLL_ADD at most). */
static void nu_arm_poll(struct nu_writer *wr)
{
	struct io_uring_sqe *sqe;

	if (wr->poll_armed)
		return;
	sqe = io_uring_get_sqe(&wr->ring);
	io_uring_prep_poll_add(sqe, srsv_async_fd(wr->aq), POLLIN);
	io_uring_sqe_set_data64(sqe, NU_UD(NU_UD_POLL, 0));
	wr->poll_armed = true;
}

/*
 * The completion queue's fd was readable: finish the reservations that
 * ended and submit their writes.  A reservation that failed (it cannot in
 * this engine: nothing cancels, nothing times out) is handed to the
 * worker, which reserves in blocking mode and reports.
 */
static void nu_async_ready(struct nu_writer *wr)
{
	struct srsv_ticket *got[NU_MAX_QD];
	int n;

	wr->poll_armed = false;
	wr->e->stats->polls++;
	while ((n = srsv_async_reap(wr->aq, got, NU_MAX_QD)) > 0) {
		for (int i = 0; i < n; i++) {
			struct nu_slot *s = (struct nu_slot *)(void *)
				((char *)got[i] -
				 offsetof(struct nu_slot, ticket));
			int ret = srsv_delalloc_complete(&s->w->resv, got[i]);

			wr->async_pending--;
			if (ret) {
				nu_fail(wr->e, ret, "asynchronous reservation");
				nu_punt(wr, s);
				continue;
			}
			s->w->reserved = true;
			nu_submit_write(wr, s);
		}
	}
	if (wr->async_pending)
		nu_arm_poll(wr);
}

/*
 * Start write @i in a free slot.  Returns true when it completed at once
 * (NU_MODE_PSYNC inline); false when it is in flight.
 */
static bool nu_issue(struct nu_writer *wr, uint64_t i)
{
	struct nu_engine *e = wr->e;
	const struct nu_config *cfg = e->cfg;
	struct nu_slot *s = wr->free_slots;
	struct nu_write *w = &wr->writes[i];
	int ret;

	wr->free_slots = s->next_free;
	s->w = w;
	w->block = i % cfg->blocks;
	w->gen = i / cfg->blocks + 1;
	w->reserved = false;
	wr->busy[w->block] = true;
	nu_fill_block(s->buf, w->block, w->gen);
	/* Before the write can be dirty: writeback compares with it. */
	atomic_store_explicit(&e->latest_gen[w->block], w->gen,
			      memory_order_release);

	s->t0 = nu_now_ns();
	if (cfg->mode == NU_MODE_PUNT_ALL) {
		e->stats->punted_forced++;
		nu_punt(wr, s);
		return false;
	}
	if (cfg->mode == NU_MODE_ASYNC) {
		ret = srsv_delalloc_reserve_async(wr->aq, e->quota, NU_BLOCK,
						  &s->ticket, &w->resv);
		if (ret == -EINPROGRESS) {
			/* Wait in the ring, not in a thread. */
			e->stats->async_waits++;
			if (++wr->async_pending > e->stats->async_max_pending)
				e->stats->async_max_pending =
					wr->async_pending;
			nu_arm_poll(wr);
			return false;
		}
	} else if (cfg->mode == NU_MODE_BLOCKING) {
		ret = srsv_delalloc_reserve(e->ctx, e->quota, NU_BLOCK,
					    SRSV_DELALLOC_NORMAL, &w->resv);
	} else {
		ret = srsv_delalloc_reserve(e->ctx, e->quota, NU_BLOCK,
					    SRSV_DELALLOC_NOWAIT, &w->resv);
	}
	if (ret == -EAGAIN) {
		e->stats->punted_library++;
		nu_punt(wr, s);
		return false;
	}
	if (ret) {
		/* NOWAIT promises -EAGAIN, never -ENOSPC/-EDQUOT. */
		nu_fail(e, ret, "srsv_delalloc_reserve(NOWAIT)");
		nu_punt(wr, s);
		return false;
	}
	w->reserved = true;
	if (cfg->mode == NU_MODE_PSYNC) {
		ret = nu_pwrite_block(e->fd, s->buf, w->block);
		if (ret < 0) {
			/* The worker retries it and completes the slot. */
			nu_fail(e, ret, "pwrite");
			nu_punt(wr, s);
			return false;
		}
		e->stats->inline_writes++;
		nu_complete(wr, s);
		return true;
	}
	nu_submit_write(wr, s);
	return false;
}

/* One CQE.  Returns 1 when a write completed, 0 when it was punted. */
static int nu_reap(struct nu_writer *wr, const struct io_uring_cqe *cqe)
{
	struct nu_engine *e = wr->e;
	uint64_t kind = cqe->user_data >> 32;
	struct nu_slot *s = &wr->slots[(uint32_t)cqe->user_data];

	if (kind == NU_UD_POLL) {
		if (cqe->res < 0 && cqe->res != -ECANCELED)
			nu_fail(e, cqe->res, "POLL_ADD");
		nu_async_ready(wr);
		return 0;
	}
	if (kind == NU_UD_PUNT) {
		if (!atomic_exchange_explicit(&s->handed_back, false,
					      memory_order_acquire))
			nu_fail(e, -EPROTO, "completion of a slot not handed back");
		if (cqe->res != (int)NU_BLOCK) {
			nu_fail(e, cqe->res, "punted write");
			/* The slot is done with either way. */
		}
		nu_complete(wr, s);
		return 1;
	}
	if (cqe->res == (int)NU_BLOCK) {
		e->stats->inline_writes++;
		nu_complete(wr, s);
		return 1;
	}
	if (cqe->res == -EAGAIN) {
		/* The kernel would have blocked: io-wq's job, reserved. */
		e->stats->punted_kernel++;
	} else if (cqe->res >= 0) {
		/* Short: the worker rewrites the whole block. */
		e->stats->punted_short++;
	} else {
		nu_fail(e, cqe->res, "write");
	}
	nu_punt(wr, s);
	return 0;
}

/*
 * Submit what is queued and wait until at least one CQE is there: in
 * io_uring_enter() (one system call for both), or, with an eventfd, by
 * submitting without waiting and reading the eventfd until a CQE shows
 * (a count left over from a CQE already reaped only costs one more turn).
 */
static int nu_wait(struct nu_writer *wr)
{
	struct io_uring_cqe *cqe;
	uint64_t count;
	int ret;

	if (wr->efd < 0)
		return io_uring_submit_and_wait(&wr->ring, 1);
	ret = io_uring_submit(&wr->ring);
	if (ret < 0)
		return ret;
	while (io_uring_peek_cqe(&wr->ring, &cqe)) {
		if (read(wr->efd, &count, sizeof(count)) < 0 &&
		    errno != EINTR)
			return -errno;
	}
	return 0;
}

/*
 * Preallocate the file, as fio does before a write job (its default
 * fallocate=native).  It matters for the kernel's NOWAIT path: btrfs only
 * writes without blocking into preallocated (or NOCOW) ranges, a write into
 * a hole or over a written extent needs a copy-on-write allocation and is
 * -EAGAIN, and so is a write beyond i_size.  Best effort: a
 * file system without fallocate() gets the writes into holes.
 */
static void nu_prealloc(int fd, uint64_t bytes)
{
	if (fallocate(fd, 0, 0, (off_t)bytes) && ftruncate(fd, (off_t)bytes))
		perror("nowait_uring: fallocate and ftruncate");
}

/*
 * Does the kernel do RWF_NOWAIT buffered writes through io_uring on this
 * file system?  One fresh scratch file, up to three tries (a transient
 * -EAGAIN is possible where it is supported; where it is not, every try
 * fails the same way).
 */
static bool nu_probe_kernel_nowait(struct io_uring *ring, const char *dir,
				   char *note, size_t note_len)
{
	char path[PATH_MAX];
	unsigned char *buf;
	int fd, res = -EINVAL;
	bool ok = false;

	if (snprintf(path, sizeof(path), "%s/probe", dir) >= (int)sizeof(path))
		fd = -1;	/* too long: no probe, kernel NOWAIT off */
	else
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	/* As the data file: preallocated (see nu_run()). */
	if (fd >= 0)
		nu_prealloc(fd, NU_BLOCK);
	buf = calloc(1, NU_BLOCK);
	for (int i = 0; fd >= 0 && buf && i < 3 && !ok; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
		struct io_uring_cqe *cqe;

		if (!sqe)
			break;
		io_uring_prep_write(sqe, fd, buf, NU_BLOCK, 0);
		sqe->rw_flags = RWF_NOWAIT;
		io_uring_sqe_set_data64(sqe, 0);
		if (io_uring_submit_and_wait(ring, 1) < 0 ||
		    io_uring_wait_cqe(ring, &cqe))
			break;
		res = cqe->res;
		io_uring_cqe_seen(ring, cqe);
		ok = res == (int)NU_BLOCK;
	}
	snprintf(note, note_len, ok ? "supported" :
		 "unsupported here (probe: %s)", strerror(-res));
	free(buf);
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
	return ok;
}

/* Check the pools, the quota and the dirty figures, then the file. */
static int nu_verify(struct nu_engine *e, uint64_t *blocks_ok)
{
	const struct nu_config *cfg = e->cfg;
	uint64_t distinct = cfg->writes < cfg->blocks ? cfg->writes :
			    cfg->blocks;
	struct srsv_space_info di, mi;
	struct srsv_quota_info qi;
	unsigned char *buf;
	int bad = 0;

	*blocks_ok = 0;
	if (srsv_space_snapshot(e->data, &di, NULL, 0, NULL) ||
	    srsv_space_snapshot(e->meta, &mi, NULL, 0, NULL) ||
	    srsv_quota_snapshot(e->quota, &qi))
		return -EIO;
	if (di.used != distinct * NU_BLOCK || di.may_use || di.reserved ||
	    di.pinned) {
		fprintf(stderr, "nowait_uring: data pool: used %" PRIu64
			" (want %" PRIu64 ") may_use %" PRIu64 " reserved %"
			PRIu64 " pinned %" PRIu64 "\n", di.used,
			distinct * NU_BLOCK, di.may_use, di.reserved,
			di.pinned);
		bad = 1;
	}
	if (mi.used != e->leaves * NU_NODE ||
	    mi.may_use != mi.global_rsv_reserved || mi.reserved ||
	    mi.pinned) {
		fprintf(stderr, "nowait_uring: metadata pool: used %" PRIu64
			" (want %" PRIu64 ") may_use %" PRIu64 " reserved %"
			PRIu64 " pinned %" PRIu64 "\n", mi.used,
			e->leaves * NU_NODE, mi.may_use, mi.reserved,
			mi.pinned);
		bad = 1;
	}
	if (mi.delalloc_bytes || mi.ordered_bytes) {
		fprintf(stderr, "nowait_uring: dirty figures: delalloc %"
			PRIu64 " ordered %" PRIu64 "\n", mi.delalloc_bytes,
			mi.ordered_bytes);
		bad = 1;
	}
	if (qi.used != distinct * NU_BLOCK ||
	    qi.reserved[SRSV_QUOTA_DATA] ||
	    qi.reserved[SRSV_QUOTA_META_PREALLOC] ||
	    qi.reserved[SRSV_QUOTA_META_PERTRANS]) {
		fprintf(stderr, "nowait_uring: quota: used %" PRIu64
			" reserved %" PRIu64 "/%" PRIu64 "/%" PRIu64 "\n",
			qi.used, qi.reserved[0], qi.reserved[1],
			qi.reserved[2]);
		bad = 1;
	}

	buf = malloc(NU_BLOCK);
	if (!buf)
		return -ENOMEM;
	for (uint64_t b = 0; b < distinct; b++) {
		/* The last pass that wrote block b. */
		uint64_t gen = (cfg->writes - 1 - b) / cfg->blocks + 1;
		ssize_t r = pread(e->fd, buf, NU_BLOCK, (off_t)(b * NU_BLOCK));

		if (r != (ssize_t)NU_BLOCK || nu_check_block(buf, b, gen)) {
			if (bad++ < 5)
				fprintf(stderr, "nowait_uring: block %" PRIu64
					" (pass %" PRIu64 ") is wrong\n", b,
					gen);
			continue;
		}
		(*blocks_ok)++;
	}
	free(buf);
	return bad ? -EIO : 0;
}

static int nu_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* p50, p99 and max of the per-write latencies. */
static void nu_latency(struct nu_writer *wr, struct nu_stats *stats)
{
	uint64_t n = wr->nlat;

	if (!n)
		return;
	qsort(wr->lat, n, sizeof(*wr->lat), nu_cmp_u64);
	stats->lat_p50_ns = wr->lat[(n - 1) / 2];
	stats->lat_p99_ns = wr->lat[(n * 99 + 99) / 100 - 1];
	stats->lat_max_ns = wr->lat[n - 1];
}

/*
 * Run one writer as configured.  Returns 0 (stats filled, file verified),
 * NU_SKIP when io_uring or IORING_OP_MSG_RING is unavailable, or a
 * negative errno.
 */
static int nu_run(const struct nu_config *cfg, struct nu_stats *stats)
{
	struct nu_engine e;
	struct nu_writer *wr;
	struct srsv_config sc;
	struct io_uring_probe *probe;
	char dir[PATH_MAX], path[PATH_MAX];
	const char *base;
	uint64_t leaves, issued = 0, done = 0, t0, blocks_ok = 0;
	unsigned inflight = 0;
	int ret;

	if (!cfg->blocks || !cfg->writes || !cfg->qd || cfg->qd > NU_MAX_QD ||
	    cfg->mode >= NU_MODE_COUNT ||
	    cfg->blocks > SIZE_MAX / sizeof(uint64_t) / 2 ||
	    cfg->writes > SIZE_MAX / sizeof(struct nu_write) / 2)
		return -EINVAL;
	memset(stats, 0, sizeof(*stats));
	memset(&e, 0, sizeof(e));
	e.cfg = cfg;
	e.stats = stats;
	e.fd = -1;
	e.trans = 1;
	pthread_mutex_init(&e.wb_lock, NULL);
	pthread_mutex_init(&e.commit_lock, NULL);
	nu_crc_init();

	wr = calloc(1, sizeof(*wr));
	if (!wr)
		return -ENOMEM;
	wr->e = &e;
	pthread_mutex_init(&wr->punt_lock, NULL);
	pthread_cond_init(&wr->punt_cond, NULL);
	wr->punt_tail = &wr->punt_head;
	wr->efd = -1;
	dir[0] = '\0';

	/* Two SQ entries per write in flight: the CQ (twice as large) then
	 * holds every write's CQE and every MSG_RING's at once. */
	ret = io_uring_queue_init(cfg->qd < 4 ? 8 : 2 * cfg->qd, &wr->ring, 0);
	if (ret) {
		ret = NU_SKIP;
		goto out;
	}
	wr->ring_ok = true;
	ret = io_uring_queue_init(4, &wr->wring, 0);
	if (ret) {
		ret = NU_SKIP;
		goto out;
	}
	wr->wring_ok = true;
	probe = io_uring_get_probe_ring(&wr->ring);
	if (!probe || !io_uring_opcode_supported(probe, IORING_OP_WRITE) ||
	    !io_uring_opcode_supported(probe, IORING_OP_MSG_RING)) {
		io_uring_free_probe(probe);
		ret = NU_SKIP;
		goto out;
	}
	io_uring_free_probe(probe);
	if (cfg->wait_eventfd || NU_UNDER_VALGRIND()) {
		wr->efd = eventfd(0, EFD_CLOEXEC);
		if (wr->efd < 0) {
			ret = -errno;
			goto out;
		}
		ret = io_uring_register_eventfd(&wr->ring, wr->efd);
		if (ret)
			goto out;
		stats->waited_eventfd = true;
	}

	base = cfg->dir ? cfg->dir : getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/srsv-nowait-XXXXXX",
		 base && *base ? base : "/tmp");
	if (!mkdtemp(dir)) {
		ret = -errno;
		dir[0] = '\0';
		goto out;
	}
	switch (cfg->kernel_nowait) {
	case NU_KNOWAIT_AUTO:
		stats->kernel_nowait = nu_probe_kernel_nowait(&wr->ring, dir,
					stats->fs_note, sizeof(stats->fs_note));
		break;
	case NU_KNOWAIT_ON:
		stats->kernel_nowait = true;
		snprintf(stats->fs_note, sizeof(stats->fs_note), "forced on");
		break;
	default:
		snprintf(stats->fs_note, sizeof(stats->fs_note), "off");
		break;
	}
	if (snprintf(path, sizeof(path), "%s/data", dir) >=
	    (int)sizeof(path)) {
		ret = -ENAMETOOLONG;
		goto out;
	}
	e.fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (e.fd < 0) {
		ret = -errno;
		goto out;
	}
	nu_prealloc(e.fd, cfg->blocks * NU_BLOCK);

	leaves = (cfg->blocks + NU_ITEMS_PER_LEAF - 1) / NU_ITEMS_PER_LEAF;
	e.latest_gen = calloc(cfg->blocks, sizeof(*e.latest_gen));
	e.durable_gen = calloc(cfg->blocks, sizeof(*e.durable_gen));
	e.leaf_trans = calloc(leaves, sizeof(*e.leaf_trans));
	e.leaf_exists = calloc(leaves, sizeof(*e.leaf_exists));
	wr->writes = calloc(cfg->writes, sizeof(*wr->writes));
	wr->busy = calloc(cfg->blocks, sizeof(*wr->busy));
	wr->bufs = aligned_alloc(NU_BLOCK, (size_t)cfg->qd * NU_BLOCK);
	if (!e.latest_gen || !e.durable_gen || !e.leaf_trans ||
	    !e.leaf_exists || !wr->writes || !wr->busy || !wr->bufs) {
		ret = -ENOMEM;
		goto out;
	}
	for (unsigned i = cfg->qd; i-- > 0;) {
		wr->slots[i].idx = i;
		wr->slots[i].buf = wr->bufs + (size_t)i * NU_BLOCK;
		wr->slots[i].next_free = wr->free_slots;
		wr->free_slots = &wr->slots[i];
	}

	srsv_config_init(&sc);
	sc.flags = cfg->no_preempt ? SRSV_CTX_NO_PREEMPT : 0;
	sc.flush = nu_flush;
	sc.user = &e;
	sc.pool_bytes[SRSV_POOL_DATA] = cfg->blocks * NU_BLOCK +
					cfg->data_headroom_bytes;
	sc.pool_bytes[SRSV_POOL_METADATA] = cfg->meta_pool_bytes;
	sc.pool_bytes[SRSV_POOL_SYSTEM] = 4 * NU_MIB;
	/* A fixed device: no overcommit, no growth. */
	sc.unallocated_bytes = 0;
	ret = srsv_ctx_create(&sc, &e.ctx);
	if (ret)
		goto out;
	e.data = srsv_ctx_space(e.ctx, SRSV_POOL_DATA);
	e.meta = srsv_ctx_space(e.ctx, SRSV_POOL_METADATA);
	ret = srsv_delalloc_meta_cost(e.ctx, NU_BLOCK, NULL, &e.meta_per_write);
	if (ret)
		goto out;
	/*
	 * The leaves, their pinned old copies and one write in flight must
	 * fit, or a blocking reservation could fail with -ENOSPC.
	 */
	if (cfg->meta_pool_bytes < 2 * leaves * NU_NODE +
				   (cfg->qd + 1) * e.meta_per_write) {
		fprintf(stderr, "nowait_uring: metadata pool too small: %"
			PRIu64 " bytes for %" PRIu64 " leaves (at least %"
			PRIu64 ")\n", cfg->meta_pool_bytes, leaves,
			2 * leaves * NU_NODE +
			(cfg->qd + 1) * e.meta_per_write);
		ret = -EINVAL;
		goto out;
	}
	/* One tenant, no limit: the quota's path is taken, never refused. */
	ret = srsv_quota_create(e.ctx, 1, SRSV_QUOTA_NO_LIMIT, &e.quota);
	if (ret)
		goto out;

	if (cfg->mode == NU_MODE_ASYNC) {
		ret = srsv_async_create(e.ctx, &wr->aq);
		if (ret)
			goto out;
	}
	wr->lat = calloc(cfg->writes, sizeof(*wr->lat));
	if (!wr->lat) {
		ret = -ENOMEM;
		goto out;
	}

	ret = pthread_create(&wr->worker, NULL, nu_worker, wr);
	if (ret) {
		ret = -ret;
		goto out;
	}
	wr->worker_started = true;

	t0 = nu_now_ns();
	for (;;) {
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;

		/* After a failure, issue nothing more but reap what is in
		 * flight: the kernel and the worker still use the slots. */
		while (!atomic_load(&e.error) && issued < cfg->writes &&
		       inflight < cfg->qd &&
		       !wr->busy[issued % cfg->blocks]) {
			issued++;
			if (nu_issue(wr, issued - 1))
				done++;
			else
				inflight++;
		}
		if (!inflight)
			break;
		ret = nu_wait(wr);
		if (ret == -EINTR)
			continue;
		if (ret < 0) {
			nu_fail(&e, ret, "waiting for completions");
			break;
		}
		io_uring_for_each_cqe(&wr->ring, head, cqe) {
			if (nu_reap(wr, cqe)) {
				done++;
				inflight--;
			}
			seen++;
		}
		io_uring_cq_advance(&wr->ring, seen);
	}
	stats->elapsed_ns = nu_now_ns() - t0;
	ret = atomic_load(&e.error);
	nu_latency(wr, stats);

out:
	if (wr->worker_started) {
		/*
		 * After a failure, writes may still be in flight: the worker
		 * finishes its queue first; a CQE nobody reaps is harmless.
		 */
		pthread_mutex_lock(&wr->punt_lock);
		wr->punt_stop = true;
		pthread_cond_signal(&wr->punt_cond);
		pthread_mutex_unlock(&wr->punt_lock);
		pthread_join(wr->worker, NULL);
	}
	if (e.ctx) {
		if (!ret) {
			/* Everything to disk, then one commit frees the
			 * pins the last writeback made. */
			while (nu_writeback(&e, UINT64_MAX))
				;
			nu_commit(&e);
		}
		srsv_ctx_shutdown(e.ctx);
		if (wr->aq) {
			/* After a failure: shutdown ended what still waited;
			 * give back what those writes held. */
			struct srsv_ticket *got[NU_MAX_QD];
			int n;

			while ((n = srsv_async_reap(wr->aq, got,
						    NU_MAX_QD)) > 0)
				for (int i = 0; i < n; i++) {
					struct nu_slot *s = (struct nu_slot *)
						(void *)((char *)got[i] -
						offsetof(struct nu_slot,
							 ticket));

					/* Granted before the shutdown: the
					 * resv holds it all, give it back. */
					if (!srsv_delalloc_complete(
						    &s->w->resv, got[i]) &&
					    srsv_delalloc_release(&s->w->resv))
						nu_fail(&e, -EIO,
							"delalloc release");
				}
		}
		if (!ret)
			ret = atomic_load(&e.error);
		if (!ret)
			ret = nu_verify(&e, &blocks_ok);
		stats->written_back = atomic_load(&e.written_back);
		stats->superseded = atomic_load(&e.superseded);
		stats->wb_calls = atomic_load(&e.wb_calls);
		stats->commits = atomic_load(&e.commits);
		srsv_ctx_destroy(e.ctx);
	}
	if (!ret && blocks_ok != (cfg->writes < cfg->blocks ? cfg->writes :
				  cfg->blocks))
		ret = -EIO;
	if (e.fd >= 0) {
		close(e.fd);
		unlink(path);
	}
	if (dir[0])
		rmdir(dir);
	if (wr->ring_ok)
		io_uring_queue_exit(&wr->ring);
	if (wr->efd >= 0)
		close(wr->efd);
	if (wr->wring_ok)
		io_uring_queue_exit(&wr->wring);
	if (wr->aq && srsv_async_destroy(wr->aq))
		fprintf(stderr, "nowait_uring: completion queue not empty\n");
	free(wr->lat);
	pthread_cond_destroy(&wr->punt_cond);
	pthread_mutex_destroy(&wr->punt_lock);
	pthread_mutex_destroy(&e.wb_lock);
	pthread_mutex_destroy(&e.commit_lock);
	free(e.latest_gen);
	free(e.durable_gen);
	free(e.leaf_trans);
	free(e.leaf_exists);
	free(wr->writes);
	free(wr->busy);
	free(wr->bufs);
	free(wr);
	return ret;
}

#endif /* NOWAIT_URING_H */
