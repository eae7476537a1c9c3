/* SPDX-License-Identifier: MIT */
/*
 * The library's layout: the structures every layer shares and the
 * lock-free inline readers of them.  Nothing here is part of the API, and
 * no function of any module is declared here: each module's prototypes are
 * in its own header (docs/design.md, "The layers", says which file may call
 * which).
 *
 * Concurrency model (see docs/design.md for the long form):
 *
 * - Each pool has one mutex (srsv_space::lock), btrfs's space_info->lock.
 *   Lock order: block-group table lock, group lock, pool lock, rsv lock,
 *   quota lock.  The ctx lock (ctx->lock) is never taken while a pool lock
 *   is held.
 * - Counters are AO_t words so they can be read without the lock (the
 *   preemptive heuristic on the fast path, snapshots of single values).
 *   They are written under the pool lock, with one exception: may_use, the
 *   admission word, is changed by compare-and-swap so that a reservation
 *   with room and no queued tickets takes no lock at all (XFS's grant-head
 *   fast path).  Every change still goes through one helper per kind
 *   (counters.c: srsv__space_update() under the lock, srsv__may_use_add()/
 *   sub() lock-free) that refuses underflow and traces.
 * - Admission: a reservation fits when claimed + may_use + bytes is within
 *   the limit, where "claimed" = used + reserved + pinned + readonly +
 *   zone_unusable is kept as one word.  Transitions out of may_use into a
 *   claimed counter add to claimed before they subtract from may_use, so a
 *   lock-free reader may double-count for an instant (and refuse or queue)
 *   but never under-count (and overcommit).
 * - No lost wake-up: a thread that queues a ticket raises srsv_space::waiting
 *   (full barrier) under the lock and then tries to grant; a lock-free
 *   release lowers may_use (full barrier) and then reads waiting, taking the
 *   lock to grant only when tickets are queued.  One of the two sees the
 *   other.
 */
#ifndef SRSV_INTERNAL_H
#define SRSV_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>

#include <libspacersv/spacersv.h>

#include "config.h"
#include "lock.h"
#include "util.h"

/* Counters that srsv__space_update() changes under the pool lock. */
enum srsv__counter {
	SRSV__TOTAL = 0,
	SRSV__USED,
	SRSV__RESERVED,
	SRSV__PINNED,
	SRSV__READONLY,
	SRSV__ZONE_UNUSABLE,
	SRSV__MAY_USE,		/* lock-free: srsv__may_use_add()/sub() */
	SRSV__COUNTER_COUNT
};

struct srsv__ticket;		/* tickets.h */
struct srsv__ticket_ops;	/* tickets.h */

/* A pool's statistics (stats.c records them, space.c reports them). */
struct srsv__stats {
	/* Under the pool lock. */
	struct srsv_wait_stats modes[SRSV_FLUSH_MODE_COUNT];
	struct srsv__state_stats {
		uint64_t time_ns, waited_ns, bytes_freed, unsupported, skipped;
	} states[SRSV_STATE_COUNT];
	uint64_t stalled_ns;		/* closed stalls */
	uint64_t stall_start_ns;	/* the open one's start, if tickets wait */
	/* Written under the pool lock, read lock-free around a flush. */
	volatile AO_t grant_bytes;	/* monotonic: bytes granted to tickets */
	/* Lock-free: a refusal may come from the lock-free release path. */
	volatile AO_t refused[SRSV_REFUSED_COUNT];
	/* Lock-free: NOWAIT answers of -EAGAIN, per srsv_nowait_reason. */
	volatile AO_t nowait[SRSV_NOWAIT_REASON_COUNT];
	/* Bit s: state s said -EOPNOTSUPP and is not called any more. */
	volatile AO_t disabled;
};

/* One CPU's reservation cache (cache.c), alone on its cache line. */
struct srsv__cache_slot {
	volatile AO_t word;		/* credit bytes, or closed */
} __attribute__((aligned(SRSV__CACHELINE)));

struct srsv__pace;	/* pace.c */

struct srsv_space {
	/*
	 * may_use, the admission word, alone on its cache line: every
	 * reservation and release with room changes it, and the words the
	 * fast path only reads (claimed, total, waiting, ...) stay
	 * shared-clean in every CPU's cache instead of bouncing with it.
	 * (counters[SRSV__MAY_USE] is unused; srsv__space_counter() maps.)
	 */
	volatile AO_t may_use __attribute__((aligned(SRSV__CACHELINE)));
	char may_use_pad[SRSV__CACHELINE - sizeof(AO_t)];

	struct srsv__lock lock;
	struct srsv_ctx *ctx;
	int kind;			/* enum srsv_pool */
	bool is_data;			/* DATA or MIXED: never overcommits */
	bool is_metadata;		/* METADATA or MIXED: preempt, async md */
	/* A lock-free charge was taken back (counters.c): serve the queue,
	 * never blocking.  The tickets layer's, set by ctx.c. */
	void (*undone)(struct srsv_space *s);

	/* Counters: written under lock (may_use: CAS), readable lock-free. */
	volatile AO_t counters[SRSV__COUNTER_COUNT];
	/* used + reserved + pinned + readonly + zone_unusable */
	volatile AO_t claimed;
	/* (priority tickets << 32) | normal tickets; changed under lock */
	volatile AO_t waiting;
	/* Sum of queued tickets' bytes (under lock; read lock-free). */
	volatile AO_t reclaim_size;
	/* Preemptive clamp, 1..8 (under lock; read lock-free). */
	volatile AO_t clamp;
	volatile AO_t full;		/* cannot grow */
	volatile AO_t preempt_floor;	/* srsv__preempt_floor(total) */
	/* Pacing state (pace.c); NULL when off.  Fixed. */
	struct srsv__pace *pace;
	/* Monotonic: bytes charged to may_use, kept while pace is set. */
	volatile AO_t charged;
	/* Per-CPU reservation caches (cache.c); NULL when off.  Fixed. */
	struct srsv__cache_slot *cache;
	volatile AO_t cache_on;		/* engaged (contention seen); 0 if
					 * cache is NULL */
	volatile AO_t draining;		/* slow paths between block/unblock */
	/* Credit in motion (refills, give-backs, trims; cache.c): written
	 * by every CPU's refills, so on a line of its own. */
	volatile AO_t in_flight __attribute__((aligned(SRSV__CACHELINE)));
	char in_flight_pad[SRSV__CACHELINE - sizeof(AO_t)];
	unsigned cache_slots;
	uint64_t cache_batch;		/* largest request a slot serves */
	uint64_t cache_margin;		/* room refills leave in the pool */

	/* Protected by lock. */
	uint64_t tickets_id;		/* bumped on every grant */
	bool flush;			/* async flusher queued or running */
	bool force_alloc;		/* global rsv reached total */
	struct srsv__list tickets;
	struct srsv__list priority_tickets;
	/*
	 * The preemptive commit rule's measurements: how fast space is being
	 * pinned (bytes ever pinned, pinned + stat_unpinned, sampled by the
	 * preempt worker) and what a commit costs (COMMIT_TRANS callback
	 * time, callback.c).  Averages with weight 1/4; 0 = not measured yet.
	 */
	uint64_t pin_mark, pin_mark_ns;
	uint64_t pin_rate;		/* bytes pinned per second */
	uint64_t commit_ns;		/* a commit's duration */
	/* The clamp's quiet period (preempt.c): tickets queued plus paced
	 * sleeps when a run last looked, and since when none came and the
	 * clamp did not move. */
	uint64_t clamp_waits;
	uint64_t clamp_quiet_ns;

	/* Statistics (under lock). */
	uint64_t stat_flushes[SRSV_STATE_COUNT];
	uint64_t stat_preempt_flushes[SRSV_STATE_COUNT];
	uint64_t stat_granted, stat_failed;
	uint64_t stat_async_runs, stat_preempt_runs;
	uint64_t stat_unpinned;		/* monotonic: bytes unpinned */
	uint64_t stat_queued;		/* monotonic: tickets queued */
	uint64_t stat_clamp_raised;	/* preempt.c: clamp + 1 */
	uint64_t stat_clamp_lowered;	/* preempt.c: clamp - 1 */
	struct srsv__stats stats;	/* stats.c */
	/* Tracing's sampling of counter events (trace-lttng.h): per
	 * counter, when the next may go out and the value last traced. */
	volatile AO_t trace_next[SRSV__COUNTER_COUNT];
	volatile AO_t trace_last[SRSV__COUNTER_COUNT];
};

/* Worker kinds; each is a thread unless the ctx is in manual mode. */
enum srsv__work {
	SRSV__WORK_ASYNC_METADATA = 0,	/* tickets of non-data pools */
	SRSV__WORK_ASYNC_DATA = 1,	/* tickets of the data pool */
	SRSV__WORK_PREEMPT = 2,		/* preemptive flushing */
	SRSV__WORK_COUNT = 3
};

/* A worker's job for one pool (workers.c runs it; ctx.c fills it). */
typedef void (*srsv__job_fn)(struct srsv_space *s);

struct srsv__worker {
	struct srsv_ctx *ctx;
	enum srsv__work id;
	srsv__job_fn job;
	pthread_t thread;
	struct srsv__thread start;	/* name, hook */
	bool started;
	sem_t wake;			/* posted (never blocks) to wake it */
	/* Bitmask of pool kinds with work queued. */
	volatile AO_t pending;
};

struct srsv__quota_table;
struct srsv__zoned;
struct srsv__async_ctx;
struct srsv__bgroups;

struct srsv_ctx {
	struct srsv_config cfg;		/* copy, defaults filled in */
	struct srsv_space *spaces[SRSV_POOL_COUNT];	/* NULL if absent */
	struct srsv_rsv std_rsv[SRSV_RSV_TYPE_COUNT];	/* GLOBAL, TRANS, ... */
	bool std_rsv_ready[SRSV_RSV_TYPE_COUNT];

	/* min(data chunk, 10% of device, 1 GiB): see available_free_space */
	uint64_t data_chunk_allowance;
	/* Monotonic: bytes that left each standard rsv (progress measure). */
	volatile AO_t std_rsv_drained[SRSV_RSV_TYPE_COUNT];
	/* Monotonic: dirty bytes the engine reported written back. */
	volatile AO_t delalloc_cleaned;
	/* Preemptive runs end early after a run made no progress: until this
	 * monotonic time (ns) no new run is queued (bugzilla 212185). */
	volatile AO_t preempt_backoff_until;
	volatile AO_t preempt_backoff_ns;

	volatile AO_t unallocated;
	volatile AO_t delalloc_bytes;
	volatile AO_t ordered_bytes;
	volatile AO_t preempt_enabled;
	volatile AO_t preempt_busy;	/* preempt queued or running */
	volatile AO_t closing;		/* shutdown started */
	volatile AO_t error;		/* negative errno, 0: none */

	struct srsv__worker workers[SRSV__WORK_COUNT];
	volatile AO_t stop_workers;

	/* Threads inside a slow path; shutdown waits for 0. */
	volatile AO_t active;
	struct srsv__lock lock;		/* serialises shutdown */
	bool shut_down;			/* under lock */
	struct srsv__lock manual_lock;	/* serialises run_pending */

	struct srsv__quota_table *quotas;	/* quota.c */
	struct srsv__zoned *zoned;		/* zoned.c */
	struct srsv__async_ctx *async;		/* async.c, under lock */
	uint64_t fork_gen;		/* srsv__fork_gen at creation */
	struct srsv__bgroups *bgroups;		/* bgroup.c */
};

/* ---- lock-free inline readers ---- */

/* may_use's word (an acquire load). */
static inline uint64_t srsv__may_use_settled(const struct srsv_space *s)
{
	return (uint64_t)AO_load_acquire((volatile AO_t *)&s->may_use);
}

/* Credit sitting in @s's per-CPU caches (a lock-free approximation). */
static inline uint64_t srsv__cache_credit(const struct srsv_space *s)
{
	/* A slot's word is its credit, or its credit | CLOSED (bit 63). */
	const AO_t mask = ~((AO_t)1 << 63);
	uint64_t credit = 0;

	for (unsigned i = 0; i < s->cache_slots; i++)
		credit += AO_load((volatile AO_t *)&s->cache[i].word) & mask;
	return credit;
}

/*
 * A counter's value.  may_use is what callers hold: the admission word
 * minus the caches' credit.  With caches engaged the two are read a moment
 * apart, so under concurrency it is an approximation, good for decisions
 * and snapshots; admission and validation read the word itself.
 */
static inline uint64_t srsv__space_counter(const struct srsv_space *s,
					   enum srsv__counter c)
{
	uint64_t may_use, credit;

	if (c != SRSV__MAY_USE)
		return srsv__ld(&s->counters[c]);
	may_use = srsv__may_use_settled(s);
	if (!s->cache)
		return may_use;
	credit = srsv__cache_credit(s);
	return may_use > credit ? may_use - credit : 0;
}

/* btrfs_space_info_used(s, with_may_use) */
static inline uint64_t srsv__space_used(const struct srsv_space *s,
					bool with_may_use)
{
	uint64_t used = srsv__ld(&s->claimed);

	if (with_may_use)
		used += srsv__space_counter(s, SRSV__MAY_USE);
	return used;
}

/*
 * Are tickets queued that a reservation in @mode may not pass?  Normal
 * tickets hold back FLUSH_ALL, ALL_STEAL and NO_FLUSH; priority tickets
 * hold back everyone.
 */
static inline bool srsv__pending_for(const struct srsv_space *s, int mode)
{
	uint64_t waiting = (uint64_t)AO_load_acquire(
		(volatile AO_t *)&s->waiting);

	if (mode == SRSV_FLUSH_ALL || mode == SRSV_FLUSH_ALL_STEAL ||
	    mode == SRSV_NO_FLUSH)
		return waiting != 0;
	return (waiting >> 32) != 0;
}

/* The pool @kind of @ctx stands for (srsv_ctx_space()), or NULL. */
static inline struct srsv_space *srsv__ctx_space(const struct srsv_ctx *ctx,
						 int kind)
{
	if ((unsigned)kind >= SRSV_POOL_COUNT)
		return NULL;
	if (ctx->spaces[SRSV_POOL_MIXED] &&
	    (kind == SRSV_POOL_DATA || kind == SRSV_POOL_METADATA))
		return ctx->spaces[SRSV_POOL_MIXED];
	return ctx->spaces[kind];
}

/* The metadata (or mixed) pool the standard rsvs live in. */
static inline struct srsv_space *
srsv__metadata_space(const struct srsv_ctx *ctx)
{
	return ctx->spaces[SRSV_POOL_MIXED] ? ctx->spaces[SRSV_POOL_MIXED] :
					      ctx->spaces[SRSV_POOL_METADATA];
}

#endif /* SRSV_INTERNAL_H */
