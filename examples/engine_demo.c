/* SPDX-License-Identifier: MIT */
/*
 * engine_demo: a small copy-on-write record store on top of libspacersv.
 *
 * What it models, in btrfs terms:
 *
 * - N writer threads put 4 KiB records (keys 0..KEY_CAP-1).  A put is a
 *   buffered write: it reserves data space (FLUSH_DATA on the DATA pool)
 *   and the worst-case metadata of one index update (FLUSH_ALL on a
 *   deliberately small METADATA pool), then leaves the record dirty in
 *   memory (the delalloc pool, reported with srsv_ctx_account_delalloc()).
 *   Putting a key that is still dirty replaces the buffered copy and gives
 *   the new reservations back (a rewritten dirty page costs nothing more).
 * - Writeback (the DELALLOC* flush states) takes dirty records, allocates a
 *   free slot of the file for each (may_use -> reserved), pwrite()s it,
 *   marks it referenced (reserved -> used) and updates the index.  The
 *   index is a tree of 16 KiB leaves, each copied on its first change in a
 *   transaction: the new copy is allocated from the metadata reservation
 *   (the rest of it is released) and the old copy is pinned.  A record
 *   that replaces an older version pins the old slot: it may only be
 *   reused once the new version is durable.
 * - COMMIT_TRANS fdatasync()s the file, starts a new transaction and
 *   unpins everything pinned before it, in both pools.
 * - ALLOC_CHUNK and ALLOC_CHUNK_FORCE grow the METADATA pool by one chunk
 *   of unallocated device space until there is none left (-ENOSPC then
 *   marks the pool full).  The DATA pool is the file's fixed capacity.
 * - The other states (delayed items and refs, delayed iputs, zones) do not
 *   exist in this engine: the callback returns -EOPNOTSUPP and the library
 *   stops calling them.
 *
 * Every second, and for the whole run at the end, it prints why writers
 * waited, from srsv_space_get_stats() alone (no trace session): "metadata:
 * writers waited 35% of the last second, mostly behind DELALLOC".
 *
 * At the end the demo writes everything back, commits, checks that the
 * pools' counters equal what the engine holds (nothing lost, nothing
 * leaked) and reads every record back from the file, checking its CRC-32C,
 * its version and its payload.  Exit status 0 only if all of that holds.
 *
 * Usage: engine_demo [--seconds N] [--threads N] [--no-preempt]
 *                    [--dir DIR] [--seed N] [--quiet]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* clock_gettime(), pwrite() under -std=c11 too */
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libspacersv/spacersv.h>

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)

/*
 * Geometry.  Everything is small on purpose so that a few seconds show
 * every mechanism many times over; the ratios are what matter.
 */
/* One record: the unit of data space and of the file's slots. */
#define REC_SIZE 4096u
/* File capacity: 64 MiB of slots is the DATA pool (never overcommitted). */
#define NR_SLOTS 16384u
/* Live keys at most: half the slots, so that the other half holds dirty,
 * in-flight and pinned versions (a COW store needs that headroom). */
#define KEY_CAP (NR_SLOTS / 2)
/* One in APPEND_ONE_IN puts creates a key (until KEY_CAP), the others
 * rewrite a random existing key: a mostly-overwrite workload, which is
 * what makes pinned space and commits matter. */
#define APPEND_ONE_IN 4
/* Index leaf size: btrfs's default nodesize. */
#define NODE_SIZE (16 * KiB)
/* Keys per leaf: 16 KiB leaves of ~256-byte items (key, slot, version,
 * checksum) hold 64. */
#define KEYS_PER_LEAF 64u
#define NR_LEAVES (KEY_CAP / KEYS_PER_LEAF)
/* Worst-case metadata of one put: a two-level tree (leaf and root), each
 * copied on write, times two for a split: 4 nodes.  Like btrfs's
 * calc_inode_reservations() it is a deliberate overestimate; writeback
 * returns what the update did not need. */
#define META_PER_REC (4 * NODE_SIZE)
/*
 * METADATA pool at start, its growth unit and the unallocated device space
 * it may grow into.  The index alone reaches NR_LEAVES * NODE_SIZE = 2 MiB
 * and each transaction may pin as much again, so the 2 MiB start is too
 * small on purpose: writers wait on tickets, the flushers write back, and
 * ALLOC_CHUNK grows the pool until the 4 MiB of unallocated space is gone
 * (then -ENOSPC marks it full and commits have to do).  Metadata overcommit
 * is nil here: unallocated space is below the data chunk allowance (10% of
 * the device), exactly as btrfs computes it on a small device.
 */
#define META_START (2 * MiB)
#define META_CHUNK (2 * MiB)
#define UNALLOCATED (4 * MiB)
/* The engine's emergency reserve (btrfs's global rsv), four leaves'
 * worth.  This engine never draws on it, but it is part of may_use, and
 * the preemptive heuristic and the end-of-run check account for it. */
#define GLOBAL_RSV (4 * NODE_SIZE)
/* Records written per DELALLOC / DELALLOC_WAIT call at most: 1 MiB of
 * writes keeps one callback in the millisecond range, so a flusher never
 * holds up the walk for long (btrfs bounds its reclaim passes too). */
#define WRITEBACK_BATCH 256u
/* Records written per DELALLOC call at least (64 KiB): writing one or two
 * records per call, as a small "bytes" hint asks, costs a callback, two
 * lock round trips and the pool transitions per record; a cluster
 * amortises them, as the kernel's writeback clusters pages. */
#define WRITEBACK_CLUSTER 16u
#define RECORD_MAGIC 0x53525356u	/* "SRSV" */

struct record_hdr {
	uint32_t magic;
	uint32_t key;
	uint64_t version;
	uint32_t writer;
	uint32_t crc;		/* CRC-32C of the record with crc = 0 */
};

/* A dirty record: buffered in memory until writeback. */
struct record {
	struct record *next;
	uint32_t key;
	uint64_t version;
	unsigned char buf[REC_SIZE];	/* exactly what goes to the file */
};

struct key_state {
	uint64_t latest;	/* last version put (0: never) */
	uint64_t version;	/* version in the index (on disk) */
	uint32_t slot;		/* where that version is */
	struct record *dirty;	/* buffered and not yet taken, or NULL */
};

struct leaf {
	bool exists;		/* written at least once */
	uint64_t cow_trans;	/* transaction that last copied it */
};

struct engine {
	/* Serialises commits; taken before (never under) lock. */
	pthread_mutex_t commit_lock;
	pthread_mutex_t lock;	/* protects everything below but stats */
	int fd;
	struct srsv_ctx *ctx;
	struct srsv_space *data, *meta;

	struct key_state keys[KEY_CAP];
	uint32_t nr_keys;
	uint64_t next_version;

	struct record *dirty_head, **dirty_tail;
	uint64_t nr_dirty;

	uint32_t free_slots[NR_SLOTS];	/* stack of free slots */
	uint32_t nr_free;
	uint32_t pinned_slots[NR_SLOTS];	/* freed in this transaction */
	uint32_t nr_pinned;
	uint64_t pinned_meta;		/* metadata bytes pinned */
	struct leaf leaves[NR_LEAVES];
	uint64_t trans;
	uint64_t unallocated;
	uint64_t chunks;

	/* statistics (atomic: updated outside the lock too) */
	_Atomic uint64_t puts, coalesced, written_back, stale, commits;
	_Atomic uint64_t enospc, reserve_max_ns;
	_Atomic uint64_t wait_ns[SRSV_POOL_COUNT];	/* time in reserve */
	_Atomic uint64_t preempt_calls;
	/* srsv_space_get_stats() (metadata, data) at the start and at the
	 * last progress line; main thread only. */
	struct srsv_space_stats first_stats[2], last_stats[2];
	_Atomic bool failed;
	atomic_bool stop;
};

struct writer {
	struct engine *eng;
	pthread_t thread;
	unsigned id;
	uint64_t rng;
};

static bool quiet;

/* ---- small helpers ---- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* xorshift64*: the writers' key choice and the payload generator. */
static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

static uint32_t crc32c_table[256];

static void crc32c_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc32c_table[i] = c;
	}
}

static uint32_t crc32c(const unsigned char *p, size_t n)
{
	uint32_t c = ~0u;

	while (n--)
		c = crc32c_table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return ~c;
}

/* The payload of (key, version) is a pure function of both, so the
 * verification can regenerate it. */
static void fill_record(unsigned char *buf, uint32_t key, uint64_t version,
			unsigned writer)
{
	struct record_hdr h = { RECORD_MAGIC, key, version, writer, 0 };
	uint64_t s = ((uint64_t)key << 32 ^ version) * 0x9e3779b97f4a7c15u | 1;

	for (size_t off = sizeof(h); off < REC_SIZE; off += 8) {
		uint64_t v = rng_next(&s);

		memcpy(buf + off, &v, 8);
	}
	memcpy(buf, &h, sizeof(h));
	h.crc = crc32c(buf, REC_SIZE);
	memcpy(buf, &h, sizeof(h));
}

/* Record the first failure of a library call made by the engine. */
#define CHECK(eng, call) check_ret((eng), (call), #call, __LINE__)

static int check_ret(struct engine *eng, int ret, const char *what, int line)
{
	if (ret && !atomic_exchange(&eng->failed, true))
		fprintf(stderr, "engine_demo:%d: %s = %d (%s)\n", line, what,
			ret, strerror(-ret));
	return ret;
}

static void atomic_max(_Atomic uint64_t *p, uint64_t v)
{
	uint64_t cur = atomic_load(p);

	while (v > cur && !atomic_compare_exchange_weak(p, &cur, v))
		;
}

/* ---- writeback: the DELALLOC states ---- */

/*
 * The metadata side of one index update, engine lock held: the key's leaf
 * is copied on its first change in a transaction (a new node is allocated
 * and referenced, the old one pinned until the commit); later changes in
 * the same transaction modify the copy in place.  Returns how much of the
 * put's META_PER_REC reservation the update did not need.
 */
static uint64_t index_update(struct engine *eng, uint32_t key)
{
	struct leaf *l = &eng->leaves[key / KEYS_PER_LEAF];

	if (l->exists && l->cow_trans == eng->trans)
		return META_PER_REC;
	CHECK(eng, srsv_space_alloc(eng->meta, NODE_SIZE));
	CHECK(eng, srsv_space_commit_used(eng->meta, NODE_SIZE));
	if (l->exists) {
		CHECK(eng, srsv_space_pin(eng->meta, NODE_SIZE));
		eng->pinned_meta += NODE_SIZE;
	}
	l->exists = true;
	l->cow_trans = eng->trans;
	return META_PER_REC - NODE_SIZE;
}

/*
 * Write back at most @max dirty records, oldest first.  Returns how many.
 * The order of operations keeps the engine's view of free slots never
 * below the pools': a slot leaves the free list before the pool's
 * reservation turns into "reserved", and a replaced slot is pinned in the
 * pool under the engine lock, so a concurrent commit can only unpin what
 * the pool already counts as pinned.
 */
static uint64_t writeback(struct engine *eng, uint64_t max)
{
	struct record *batch = NULL, **tail = &batch, *r, *next;
	uint32_t slots[WRITEBACK_BATCH];
	uint64_t n = 0, meta_release = 0;

	if (max > WRITEBACK_BATCH)
		max = WRITEBACK_BATCH;

	pthread_mutex_lock(&eng->lock);
	while (n < max && eng->dirty_head) {
		r = eng->dirty_head;
		eng->dirty_head = r->next;
		if (!eng->dirty_head)
			eng->dirty_tail = &eng->dirty_head;
		eng->nr_dirty--;
		if (eng->keys[r->key].dirty == r)
			eng->keys[r->key].dirty = NULL;
		if (!eng->nr_free) {
			/* The DATA pool promised a slot to every dirty
			 * record: running out is an accounting bug. */
			check_ret(eng, -ENOSPC, "free slot for a reserved record",
				  __LINE__);
			free(r);
			continue;
		}
		slots[n++] = eng->free_slots[--eng->nr_free];
		r->next = NULL;
		*tail = r;
		tail = &r->next;
		/* dirty -> under writeback (btrfs's delalloc -> ordered) */
		CHECK(eng, srsv_ctx_account_delalloc(eng->ctx, -(int64_t)REC_SIZE,
						     REC_SIZE));
	}
	pthread_mutex_unlock(&eng->lock);
	if (!n)
		return 0;

	/* The allocator takes the data reservations. */
	CHECK(eng, srsv_space_alloc(eng->data, n * REC_SIZE));
	n = 0;
	for (r = batch; r; r = r->next, n++) {
		ssize_t w = pwrite(eng->fd, r->buf, REC_SIZE,
				   (off_t)slots[n] * REC_SIZE);

		if (w != (ssize_t)REC_SIZE)
			check_ret(eng, w < 0 ? -errno : -EIO, "pwrite",
				  __LINE__);
	}

	pthread_mutex_lock(&eng->lock);
	n = 0;
	for (r = batch; r; r = r->next, n++) {
		struct key_state *k = &eng->keys[r->key];

		/* Written: the new slot is referenced. */
		CHECK(eng, srsv_space_commit_used(eng->data, REC_SIZE));
		if (r->version < k->version) {
			/* A newer version of the key got written back first
			 * by another flusher: this copy is dead already and
			 * the index does not change. */
			CHECK(eng, srsv_space_pin(eng->data, REC_SIZE));
			eng->pinned_slots[eng->nr_pinned++] = slots[n];
			atomic_fetch_add(&eng->stale, 1);
			meta_release += META_PER_REC;
		} else {
			if (k->version) {
				/* COW: the old version stays until commit. */
				CHECK(eng, srsv_space_pin(eng->data, REC_SIZE));
				eng->pinned_slots[eng->nr_pinned++] = k->slot;
			}
			k->version = r->version;
			k->slot = slots[n];
			meta_release += index_update(eng, r->key);
		}
		CHECK(eng, srsv_ctx_account_delalloc(eng->ctx, 0,
						     -(int64_t)REC_SIZE));
	}
	pthread_mutex_unlock(&eng->lock);

	/* What the index updates did not need goes back (grants tickets). */
	CHECK(eng, srsv_space_release(eng->meta, meta_release));
	for (r = batch; r; r = next) {
		next = r->next;
		free(r);
	}
	atomic_fetch_add(&eng->written_back, n);
	return n;
}

/* Write back everything that is dirty now (not what writers add
 * meanwhile: the loop is bounded by the count at entry). */
static void writeback_all(struct engine *eng)
{
	uint64_t todo, done;

	pthread_mutex_lock(&eng->lock);
	todo = eng->nr_dirty;
	pthread_mutex_unlock(&eng->lock);
	while (todo) {
		done = writeback(eng, todo);
		if (!done)
			break;
		todo -= done < todo ? done : todo;
	}
}

/* ---- commit: COMMIT_TRANS ---- */

/*
 * Make everything written so far durable, then free what it replaced.  One
 * commit serves both pools, whichever asked.  Commits are serialised, as a
 * second btrfs committer waits for the running commit: COMMIT_TRANS must
 * not return before what was pinned when it was called is free, or a
 * flusher that arrives during another flusher's fdatasync() sees no
 * progress and its tickets fail.
 */
static void commit(struct engine *eng)
{
	uint32_t *slots = malloc(NR_SLOTS * sizeof(*slots));
	uint32_t nr_slots;
	uint64_t meta;

	if (!slots) {
		check_ret(eng, -ENOMEM, "malloc", __LINE__);
		return;
	}
	pthread_mutex_lock(&eng->commit_lock);
	pthread_mutex_lock(&eng->lock);
	nr_slots = eng->nr_pinned;
	memcpy(slots, eng->pinned_slots, nr_slots * sizeof(*slots));
	eng->nr_pinned = 0;
	meta = eng->pinned_meta;
	eng->pinned_meta = 0;
	eng->trans++;		/* leaves get copied again from now on */
	pthread_mutex_unlock(&eng->lock);

	/* The replacements of the pinned slots were written before the slots
	 * were pinned; once they are durable the old copies may be reused. */
	if (fdatasync(eng->fd))
		check_ret(eng, -errno, "fdatasync", __LINE__);
	atomic_fetch_add(&eng->commits, 1);

	/* The engine frees the slots before the pool counts them free, so
	 * its free list never runs behind the pool. */
	pthread_mutex_lock(&eng->lock);
	memcpy(eng->free_slots + eng->nr_free, slots, nr_slots * sizeof(*slots));
	eng->nr_free += nr_slots;
	pthread_mutex_unlock(&eng->lock);
	free(slots);

	if (nr_slots)
		CHECK(eng, srsv_space_unpin(eng->data, nr_slots * REC_SIZE));
	if (meta)
		CHECK(eng, srsv_space_unpin(eng->meta, meta));
	pthread_mutex_unlock(&eng->commit_lock);
}

/* ---- pool growth: ALLOC_CHUNK ---- */

static int grow_metadata(struct engine *eng)
{
	int ret;

	pthread_mutex_lock(&eng->lock);
	if (eng->unallocated < META_CHUNK) {
		pthread_mutex_unlock(&eng->lock);
		return -ENOSPC;		/* the library marks the pool full */
	}
	/* Lower the unallocated figure first: overcommit must never count
	 * the chunk twice (once as unallocated, once as pool capacity). */
	eng->unallocated -= META_CHUNK;
	eng->chunks++;
	ret = CHECK(eng, srsv_ctx_set_unallocated(eng->ctx, eng->unallocated));
	if (!ret)
		ret = CHECK(eng, srsv_space_grow(eng->meta, META_CHUNK));
	pthread_mutex_unlock(&eng->lock);
	return ret;
}

/* ---- the flush callback ---- */

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static uint64_t div_round_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

/*
 * Called by the library's workers (or by srsv_ctx_run_pending() in manual
 * mode) with no library lock held.  @bytes is how much the library would
 * like back from @space: one record written back returns REC_SIZE of data
 * reservation and at least META_PER_REC - NODE_SIZE of metadata.
 */
static int flush_cb(struct srsv_space *space, enum srsv_flush_state state,
		    uint64_t bytes, bool for_preempt, void *user)
{
	struct engine *eng = user;
	bool is_meta = space == eng->meta;
	uint64_t unit = is_meta ? META_PER_REC - NODE_SIZE : REC_SIZE;

	if (for_preempt)
		atomic_fetch_add(&eng->preempt_calls, 1);
	switch (state) {
	case SRSV_STATE_DELALLOC:
	case SRSV_STATE_DELALLOC_WAIT:
		/* pwrite() is synchronous here, so "start writeback" and
		 * "write back and wait" are the same work. */
		writeback(eng, max_u64(div_round_up(bytes, unit),
					    WRITEBACK_CLUSTER));
		return 0;
	case SRSV_STATE_DELALLOC_FULL:
		/* Preemptive calls keep it cheap: nobody is waiting yet. */
		if (for_preempt)
			writeback(eng, WRITEBACK_BATCH);
		else
			writeback_all(eng);
		return 0;
	case SRSV_STATE_COMMIT_TRANS:
		commit(eng);
		return 0;
	case SRSV_STATE_ALLOC_CHUNK:
	case SRSV_STATE_ALLOC_CHUNK_FORCE:
		/* The DATA pool is the file's fixed capacity. */
		return is_meta ? grow_metadata(eng) : -ENOSPC;
	default:
		return -EOPNOTSUPP;	/* no such work in this engine */
	}
}

static bool state_implemented(int state)
{
	switch (state) {
	case SRSV_STATE_DELALLOC:
	case SRSV_STATE_DELALLOC_WAIT:
	case SRSV_STATE_DELALLOC_FULL:
	case SRSV_STATE_COMMIT_TRANS:
	case SRSV_STATE_ALLOC_CHUNK:
	case SRSV_STATE_ALLOC_CHUNK_FORCE:
		return true;
	default:
		return false;
	}
}

/* ---- writers ---- */

/* Buffer a record: it becomes dirty, or replaces the dirty copy of its
 * key.  Returns true when it was absorbed by an existing dirty copy (the
 * caller then gives its reservations back). */
static bool buffer_record(struct engine *eng, struct record *r)
{
	struct key_state *k = &eng->keys[r->key];
	bool absorbed = false;

	pthread_mutex_lock(&eng->lock);
	if (k->dirty) {
		/* A newer put of the key may have been buffered while we
		 * filled ours: keep whichever is newer. */
		if (r->version > k->dirty->version) {
			memcpy(k->dirty->buf, r->buf, REC_SIZE);
			k->dirty->version = r->version;
		}
		absorbed = true;
	} else {
		r->next = NULL;
		*eng->dirty_tail = r;
		eng->dirty_tail = &r->next;
		eng->nr_dirty++;
		k->dirty = r;
		CHECK(eng, srsv_ctx_account_delalloc(eng->ctx, REC_SIZE, 0));
	}
	pthread_mutex_unlock(&eng->lock);
	return absorbed;
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct engine *eng = w->eng;

	while (!atomic_load(&eng->stop) && !atomic_load(&eng->failed)) {
		struct record *r;
		uint64_t t0 = now_ns(), t1, t2;
		int ret;

		/* Data first, then metadata, undoing the first if the second
		 * fails: btrfs_delalloc_reserve_space()'s order. */
		ret = srsv_space_reserve(eng->data, REC_SIZE, SRSV_FLUSH_DATA, 0);
		t1 = t2 = now_ns();
		if (!ret) {
			ret = srsv_space_reserve(eng->meta, META_PER_REC,
						 SRSV_FLUSH_ALL, 0);
			t2 = now_ns();
			if (ret)
				CHECK(eng, srsv_space_release(eng->data,
							      REC_SIZE));
		}
		atomic_fetch_add(&eng->wait_ns[SRSV_POOL_DATA], t1 - t0);
		atomic_fetch_add(&eng->wait_ns[SRSV_POOL_METADATA], t2 - t1);
		atomic_max(&eng->reserve_max_ns, t1 - t0);
		atomic_max(&eng->reserve_max_ns, t2 - t1);
		if (ret == -ENOSPC) {
			/* The flushers could not make room in time (every
			 * ticket failed after the commit cycles): back off. */
			atomic_fetch_add(&eng->enospc, 1);
			sched_yield();
			continue;
		}
		if (ret) {
			check_ret(eng, ret, "srsv_space_reserve", __LINE__);
			break;
		}

		r = malloc(sizeof(*r));
		if (!r) {
			CHECK(eng, srsv_space_release(eng->data, REC_SIZE));
			CHECK(eng, srsv_space_release(eng->meta, META_PER_REC));
			check_ret(eng, -ENOMEM, "malloc", __LINE__);
			break;
		}
		pthread_mutex_lock(&eng->lock);
		if (eng->nr_keys < KEY_CAP &&
		    (!eng->nr_keys || rng_next(&w->rng) % APPEND_ONE_IN == 0))
			r->key = eng->nr_keys++;
		else
			r->key = (uint32_t)(rng_next(&w->rng) % eng->nr_keys);
		r->version = ++eng->next_version;
		eng->keys[r->key].latest = r->version;
		pthread_mutex_unlock(&eng->lock);

		fill_record(r->buf, r->key, r->version, w->id);
		atomic_fetch_add(&eng->puts, 1);
		if (buffer_record(eng, r)) {
			free(r);
			atomic_fetch_add(&eng->coalesced, 1);
			CHECK(eng, srsv_space_release(eng->data, REC_SIZE));
			CHECK(eng, srsv_space_release(eng->meta, META_PER_REC));
		}
	}
	return NULL;
}

/* ---- reporting ---- */

static double mib(uint64_t b)
{
	return (double)b / (double)MiB;
}

/*
 * "Why did my writers wait?" from two srsv_space_get_stats() snapshots of
 * one pool, no trace session needed: the share of the interval during
 * which a ticket was queued (stalled_ns), and the flush state the waiting
 * writers' time went to (waited_ns: each callback call's duration times
 * the tickets queued when it began).
 */
static void print_why(const char *pool, const char *span_name,
		      const struct srsv_space_stats *a,
		      const struct srsv_space_stats *b)
{
	uint64_t span = b->now_ns - a->now_ns, behind = 0, top_ns = 0;
	int top = 0;

	for (int s = 1; s < SRSV_STATE_COUNT; s++) {
		uint64_t d = b->states[s].waited_ns - a->states[s].waited_ns;

		behind += d;
		if (d > top_ns) {
			top_ns = d;
			top = s;
		}
	}
	printf("%s: writers waited %.0f%% of the %s", pool,
	       span ? 100.0 * (double)(b->stalled_ns - a->stalled_ns) /
		      (double)span : 0.0, span_name);
	if (top)
		printf(", mostly behind %s (%.0f%% of their time in flush "
		       "states)", srsv_state_name(top),
		       100.0 * (double)top_ns / (double)behind);
	printf("\n");
}

static void print_progress(struct engine *eng, double t)
{
	struct srsv_space_stats ms, ds;
	struct srsv_ticket_info tk[64];
	struct srsv_space_info mi, di;
	size_t nr_mt = 0, nr_dt = 0, shown;
	uint64_t oldest = 0;

	if (srsv_space_snapshot(eng->meta, &mi, tk, 64, &nr_mt))
		return;
	/* The queue dump: the age of the oldest waiter, from the API. */
	shown = nr_mt < 64 ? nr_mt : 64;
	for (size_t i = 0; i < shown; i++)
		if (tk[i].age_ns > oldest)
			oldest = tk[i].age_ns;
	if (srsv_space_snapshot(eng->data, &di, NULL, 0, &nr_dt))
		return;
	printf("[%4.1fs] puts %8" PRIu64 "  metadata %4.1f/%4.1f MiB used %4.1f"
	       " pinned %4.1f may_use %4.1f, %2zu waiting (oldest %5.1f ms),"
	       " clamp %u | data pinned %4.1f may_use %4.1f, %2zu waiting\n",
	       t, atomic_load(&eng->puts), mib(mi.used + mi.pinned +
	       mi.reserved + mi.may_use), mib(mi.total), mib(mi.used),
	       mib(mi.pinned), mib(mi.may_use), nr_mt, (double)oldest / 1e6,
	       mi.clamp, mib(di.pinned), mib(di.may_use), nr_dt);
	if (!srsv_space_get_stats(eng->meta, &ms) &&
	    !srsv_space_get_stats(eng->data, &ds)) {
		printf("        ");
		print_why("metadata", "last second", &eng->last_stats[0], &ms);
		printf("        ");
		print_why("data", "last second", &eng->last_stats[1], &ds);
		eng->last_stats[0] = ms;
		eng->last_stats[1] = ds;
	}
	fflush(stdout);
}

static void print_pool(const char *name, const struct srsv_space_info *i)
{
	printf("  %-8s total %6.2f  used %6.2f  pinned %5.2f  reserved %5.2f"
	       "  may_use %5.2f MiB; tickets granted %" PRIu64 " failed %"
	       PRIu64 "; async runs %" PRIu64 ", preemptive runs %" PRIu64
	       "; clamp %u%s\n", name, mib(i->total), mib(i->used),
	       mib(i->pinned), mib(i->reserved), mib(i->may_use),
	       i->tickets_granted, i->tickets_failed, i->async_runs,
	       i->preempt_runs, i->clamp, i->full ? "; full" : "");
}

static void print_flushes(const struct srsv_space_stats *ms,
			  const struct srsv_space_stats *ds)
{
	const struct srsv_space_stats *st[2] = { ms, ds };

	printf("flush states (srsv_space_get_stats): calls (preemptive), "
	       "callback ms, writers' ms behind it, MiB freed; skipped: not "
	       "called after -EOPNOTSUPP\n"
	       "  %-18s %-38s %s\n", "state", "metadata", "data");
	for (int s = 1; s < SRSV_STATE_COUNT; s++) {
		char col[2][64];

		if (!ms->states[s].calls && !ds->states[s].calls &&
		    !ms->states[s].skipped && !ds->states[s].skipped)
			continue;
		for (int p = 0; p < 2; p++) {
			const struct srsv_state_stats *x = &st[p]->states[s];

			if (!x->calls && !x->skipped)
				snprintf(col[p], sizeof(col[p]), "-");
			else if (x->unsupported)
				snprintf(col[p], sizeof(col[p]), "%" PRIu64
					 " (-EOPNOTSUPP), %" PRIu64 " skipped",
					 x->calls, x->skipped);
			else
				snprintf(col[p], sizeof(col[p]), "%" PRIu64
					 " (%" PRIu64 ") %.0f ms, %.0f ms, "
					 "%.1f MiB", x->calls,
					 x->preempt_calls,
					 (double)x->time_ns / 1e6,
					 (double)x->waited_ns / 1e6,
					 mib(x->bytes_freed));
		}
		printf("  %-18s %-38s %s%s\n", srsv_state_name(s), col[0],
		       col[1], state_implemented(s) ? "" :
		       "  (not in this engine)");
	}
}

/* ---- end-of-run checks ---- */

static int expect(const char *what, uint64_t got, uint64_t want)
{
	if (got == want)
		return 0;
	fprintf(stderr, "accounting: %s is %" PRIu64 ", expected %" PRIu64 "\n",
		what, got, want);
	return 1;
}

/* The pools' counters must equal what the engine holds, byte for byte. */
static int check_accounting(struct engine *eng, const struct srsv_space_info *mi,
			    const struct srsv_space_info *di)
{
	uint64_t leaves = 0;
	int bad = 0;

	for (unsigned i = 0; i < NR_LEAVES; i++)
		leaves += eng->leaves[i].exists;
	bad |= expect("data used", di->used, (uint64_t)eng->nr_keys * REC_SIZE);
	bad |= expect("data pinned", di->pinned, 0);
	bad |= expect("data reserved", di->reserved, 0);
	bad |= expect("data may_use", di->may_use, 0);
	bad |= expect("free slots", eng->nr_free, NR_SLOTS - eng->nr_keys);
	bad |= expect("metadata used", mi->used, leaves * NODE_SIZE);
	bad |= expect("metadata pinned", mi->pinned, 0);
	bad |= expect("metadata reserved", mi->reserved, 0);
	/* All that stays reserved is what the standard reservations hold. */
	bad |= expect("metadata may_use", mi->may_use,
		      mi->global_rsv_reserved + mi->trans_rsv_reserved +
		      mi->delayed_rsv_reserved + mi->delayed_refs_rsv_reserved);
	bad |= expect("metadata total", mi->total,
		      META_START + eng->chunks * META_CHUNK);
	bad |= expect("unallocated", mi->unallocated, eng->unallocated);
	bad |= expect("delalloc bytes", mi->delalloc_bytes, 0);
	bad |= expect("ordered bytes", mi->ordered_bytes, 0);
	bad |= expect("queued tickets", mi->nr_tickets + mi->nr_priority_tickets +
		      di->nr_tickets + di->nr_priority_tickets, 0);
	if (!bad)
		printf("accounting: OK (data used = %u records, metadata used ="
		       " %" PRIu64 " leaves, may_use = standard reservations)\n",
		       eng->nr_keys, leaves);
	return bad;
}

/* Read every live record back: header, CRC-32C, version, payload. */
static int verify_file(struct engine *eng)
{
	static unsigned char seen[NR_SLOTS];
	unsigned char buf[REC_SIZE], want[REC_SIZE];
	int bad = 0;

	memset(seen, 0, sizeof(seen));
	for (uint32_t key = 0; key < eng->nr_keys; key++) {
		struct key_state *k = &eng->keys[key];
		struct record_hdr h;
		uint32_t crc;

		if (k->version != k->latest) {
			fprintf(stderr, "verify: key %u: version %" PRIu64
				" on disk, %" PRIu64 " put\n", key, k->version,
				k->latest);
			bad = 1;
			continue;
		}
		if (seen[k->slot]++) {
			fprintf(stderr, "verify: slot %u used twice\n", k->slot);
			bad = 1;
			continue;
		}
		if (pread(eng->fd, buf, REC_SIZE, (off_t)k->slot * REC_SIZE) !=
		    (ssize_t)REC_SIZE) {
			fprintf(stderr, "verify: key %u: short read\n", key);
			bad = 1;
			continue;
		}
		memcpy(&h, buf, sizeof(h));
		crc = h.crc;
		h.crc = 0;
		memcpy(buf, &h, sizeof(h));
		if (h.magic != RECORD_MAGIC || h.key != key ||
		    h.version != k->version || crc32c(buf, REC_SIZE) != crc) {
			fprintf(stderr, "verify: key %u slot %u: bad record\n",
				key, k->slot);
			bad = 1;
			continue;
		}
		fill_record(want, key, h.version, h.writer);
		h.crc = crc;
		memcpy(buf, &h, sizeof(h));
		if (memcmp(buf, want, REC_SIZE)) {
			fprintf(stderr, "verify: key %u: payload differs\n", key);
			bad = 1;
		}
	}
	if (!bad)
		printf("verify: %u records read back from the file: header, "
		       "CRC-32C, latest version and payload OK\n", eng->nr_keys);
	return bad;
}

/* ---- main ---- */

static void usage(FILE *f)
{
	fprintf(f, "usage: engine_demo [--seconds N] [--threads N] "
		"[--no-preempt] [--dir DIR] [--seed N] [--quiet]\n"
		"  --seconds N   run time (default 4)\n"
		"  --threads N   writer threads (default 4, at most 64)\n"
		"  --no-preempt  no preemptive flushing: writers wait on tickets\n"
		"  --dir DIR     where to make the temporary directory "
		"(default $TMPDIR or /tmp)\n"
		"  --seed N      writers' random seed (default 1)\n"
		"  --quiet       no progress lines\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "no-preempt", no_argument, NULL, 'n' },
		{ "dir", required_argument, NULL, 'd' },
		{ "seed", required_argument, NULL, 'r' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	double seconds = 4.0;
	unsigned nr_threads = 4, started = 0;
	bool preempt = true;
	uint64_t seed = 1;
	const char *base = getenv("TMPDIR");
	char dir[4096], path[4200];
	struct writer writers[64];
	struct srsv_space_info mi, di;
	struct srsv_config cfg;
	struct engine *eng;
	uint64_t t0, deadline, elapsed;
	double wall;
	int c, ret, status = 1;

	while ((c = getopt_long(argc, argv, "s:t:nd:r:qh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			seconds = strtod(optarg, NULL);
			break;
		case 't':
			nr_threads = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'n':
			preempt = false;
			break;
		case 'd':
			base = optarg;
			break;
		case 'r':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("%s (libspacersv) %s\n", "engine_demo", srsv_version());
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || !(seconds > 0 && seconds <= 3600) ||
	    !nr_threads || nr_threads > 64) {
		usage(stderr);
		return 2;
	}
	if (!base || !*base)
		base = "/tmp";

	crc32c_init();
	eng = calloc(1, sizeof(*eng));
	if (!eng) {
		perror("calloc");
		return 1;
	}
	pthread_mutex_init(&eng->commit_lock, NULL);
	pthread_mutex_init(&eng->lock, NULL);
	eng->dirty_tail = &eng->dirty_head;
	/* Pop slot 0 first: the file fills from its start. */
	for (uint32_t i = 0; i < NR_SLOTS; i++)
		eng->free_slots[i] = NR_SLOTS - 1 - i;
	eng->nr_free = NR_SLOTS;
	eng->trans = 1;
	eng->unallocated = UNALLOCATED;
	eng->fd = -1;

	snprintf(dir, sizeof(dir), "%s/engine_demo.XXXXXX", base);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		goto out_free;
	}
	snprintf(path, sizeof(path), "%s/records", dir);
	eng->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (eng->fd < 0) {
		perror("open");
		goto out_rmdir;
	}

	srsv_config_init(&cfg);
	cfg.flags = preempt ? 0 : SRSV_CTX_NO_PREEMPT;
	cfg.flush = flush_cb;
	cfg.user = eng;
	cfg.pool_bytes[SRSV_POOL_DATA] = (uint64_t)NR_SLOTS * REC_SIZE;
	cfg.pool_bytes[SRSV_POOL_METADATA] = META_START;
	cfg.unallocated_bytes = UNALLOCATED;
	cfg.item_bytes = META_PER_REC;
	cfg.global_rsv_bytes = GLOBAL_RSV;
	ret = srsv_ctx_create(&cfg, &eng->ctx);
	if (ret) {
		fprintf(stderr, "srsv_ctx_create: %s\n", strerror(-ret));
		goto out_unlink;
	}
	eng->data = srsv_ctx_space(eng->ctx, SRSV_POOL_DATA);
	eng->meta = srsv_ctx_space(eng->ctx, SRSV_POOL_METADATA);

	printf("engine_demo: %u writers, %.1f s, preemptive flushing %s, "
	       "file %s\n", nr_threads, seconds, preempt ? "on" : "off", path);
	CHECK(eng, srsv_space_get_stats(eng->meta, &eng->first_stats[0]));
	CHECK(eng, srsv_space_get_stats(eng->data, &eng->first_stats[1]));
	eng->last_stats[0] = eng->first_stats[0];
	eng->last_stats[1] = eng->first_stats[1];
	t0 = now_ns();
	deadline = t0 + (uint64_t)(seconds * 1e9);
	for (; started < nr_threads; started++) {
		struct writer *w = &writers[started];

		w->eng = eng;
		w->id = started;
		w->rng = seed * 0x9e3779b97f4a7c15u + started + 1;
		ret = pthread_create(&w->thread, NULL, writer_main, w);
		if (ret) {
			fprintf(stderr, "pthread_create: %s\n", strerror(ret));
			atomic_store(&eng->failed, true);
			break;
		}
	}

	/* Progress once a second until the deadline. */
	for (uint64_t next = t0 + 1000000000u;; next += 1000000000u) {
		uint64_t now = now_ns(), until = next < deadline ? next : deadline;
		struct timespec ts;

		if (now >= deadline || atomic_load(&eng->failed))
			break;
		if (until > now) {
			ts.tv_sec = (time_t)((until - now) / 1000000000u);
			ts.tv_nsec = (long)((until - now) % 1000000000u);
			nanosleep(&ts, NULL);
		}
		if (!quiet && now_ns() < deadline)
			print_progress(eng, (double)(now_ns() - t0) / 1e9);
	}
	atomic_store(&eng->stop, true);
	for (unsigned i = 0; i < started; i++)
		pthread_join(writers[i].thread, NULL);
	elapsed = now_ns() - t0;

	/* Quiesce: no library thread runs a callback after shutdown; then
	 * write back and commit what is left, from this thread. */
	CHECK(eng, srsv_ctx_shutdown(eng->ctx));
	writeback_all(eng);
	commit(eng);
	CHECK(eng, srsv_space_snapshot(eng->meta, &mi, NULL, 0, NULL));
	CHECK(eng, srsv_space_snapshot(eng->data, &di, NULL, 0, NULL));

	printf("\nputs            %" PRIu64 " (%.0f/s), %" PRIu64
	       " absorbed by a dirty copy of their key\n",
	       atomic_load(&eng->puts),
	       (double)atomic_load(&eng->puts) / ((double)elapsed / 1e9),
	       atomic_load(&eng->coalesced));
	printf("written back    %" PRIu64 " records (%.1f MiB), %" PRIu64
	       " already superseded on arrival\n",
	       atomic_load(&eng->written_back),
	       mib(atomic_load(&eng->written_back) * REC_SIZE),
	       atomic_load(&eng->stale));
	printf("commits         %" PRIu64 " (fdatasync + unpin)\n",
	       atomic_load(&eng->commits));
	printf("metadata pool   grew %" PRIu64 " x %.0f MiB chunks: %.0f -> "
	       "%.0f MiB, %.0f MiB unallocated left\n", eng->chunks,
	       mib(META_CHUNK), mib(META_START), mib(mi.total),
	       mib(eng->unallocated));
	wall = (double)elapsed * (started ? started : 1) / 100.0;
	printf("reservations    writers waited %.1f%% of their time for data, "
	       "%.1f%% for metadata; longest wait %.1f ms; %" PRIu64 " ENOSPC\n",
	       (double)atomic_load(&eng->wait_ns[SRSV_POOL_DATA]) / wall,
	       (double)atomic_load(&eng->wait_ns[SRSV_POOL_METADATA]) / wall,
	       (double)atomic_load(&eng->reserve_max_ns) / 1e6,
	       atomic_load(&eng->enospc));
	printf("preemptive      %" PRIu64 " callback calls\n",
	       atomic_load(&eng->preempt_calls));
	{
		struct srsv_space_stats ms, ds;

		CHECK(eng, srsv_space_get_stats(eng->meta, &ms));
		CHECK(eng, srsv_space_get_stats(eng->data, &ds));
		print_flushes(&ms, &ds);
		printf("why             ");
		print_why("metadata", "run", &eng->first_stats[0], &ms);
		printf("                ");
		print_why("data", "run", &eng->first_stats[1], &ds);
	}
	printf("final counters:\n");
	print_pool("metadata", &mi);
	print_pool("data", &di);

	status = atomic_load(&eng->failed);
	status |= check_accounting(eng, &mi, &di);
	status |= verify_file(eng);

	srsv_ctx_destroy(eng->ctx);
out_unlink:
	close(eng->fd);
	unlink(path);
out_rmdir:
	rmdir(dir);
out_free:
	while (eng->dirty_head) {
		struct record *r = eng->dirty_head;

		eng->dirty_head = r->next;
		free(r);
	}
	pthread_mutex_destroy(&eng->lock);
	pthread_mutex_destroy(&eng->commit_lock);
	free(eng);
	printf("%s\n", status ? "engine_demo: FAILED" : "engine_demo: OK");
	return status ? 1 : 0;
}
