/* SPDX-License-Identifier: MIT */
/*
 * Internal structures and helpers shared by the library's files.  Nothing
 * here is part of the API; non-static functions are prefixed srsv__.
 *
 * Concurrency model (see docs/design.md for the long form):
 *
 * - Each pool has one mutex (srsv_space::lock), btrfs's space_info->lock.
 *   Lock order: pool lock, then rsv lock, then the quota lock.  The ctx
 *   lock (ctx->lock) is never taken while a pool lock is held.
 * - Counters are AO_t words so they can be read without the lock (the
 *   preemptive heuristic on the fast path, snapshots of single values).
 *   They are written under the pool lock, with one exception: may_use, the
 *   admission word, is changed by compare-and-swap so that a reservation
 *   with room and no queued tickets takes no lock at all (XFS's grant-head
 *   fast path).  Every change still goes through one helper per kind
 *   (srsv__space_update() under the lock, srsv__may_use_add()/sub()
 *   lock-free) that refuses underflow and traces.
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
#include <stdbool.h>
#include <stdint.h>

#include <atomic_ops.h>

#include <libspacersv/spacersv.h>

#include "config.h"
#include "lock.h"
#include "stats.h"

#define SRSV__EXPORT __attribute__((visibility("default")))

/*
 * A public call the library makes where it cannot fail (it gives back
 * bytes it holds), or where a failure has no one to go to: the result is
 * dropped on purpose.  "(void)!" because gcc's warn_unused_result
 * (SRSV_MUST_CHECK) ignores a plain (void) cast.
 */
#define srsv__discard(call) ((void)!(call))

#define SZ_1M (UINT64_C(1) << 20)
#define SZ_128M (UINT64_C(128) << 20)
#define SZ_256M (UINT64_C(256) << 20)
#define SZ_1G (UINT64_C(1) << 30)

/*
 * Each argument is evaluated once, like the kernel's min()/max(): an
 * argument may load a word other threads change lock-free (an rsv's
 * reserved), and evaluating it again for the result could return a value
 * the comparison never saw (rsv.c, the spill in srsv_rsv_release()).
 */
#define srsv__min(a, b) ({ __typeof__(a) srsv__a_ = (a);		\
			   __typeof__(b) srsv__b_ = (b);		\
			   srsv__a_ < srsv__b_ ? srsv__a_ : srsv__b_; })
#define srsv__max(a, b) ({ __typeof__(a) srsv__a_ = (a);		\
			   __typeof__(b) srsv__b_ = (b);		\
			   srsv__a_ > srsv__b_ ? srsv__a_ : srsv__b_; })
#define SRSV__ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* @value * @percent / 100 without overflow (btrfs's mult_perc). */
static inline uint64_t srsv__mult_perc(uint64_t value, unsigned percent)
{
	return value / 100 * percent + value % 100 * percent / 100;
}

_Static_assert(sizeof(AO_t) >= sizeof(uint64_t),
	       "libspacersv needs 64-bit atomic words");

/* Intrusive doubly linked list (tickets). */
struct srsv__list {
	struct srsv__list *next, *prev;
};

static inline void srsv__list_init(struct srsv__list *h)
{
	h->next = h->prev = h;
}

static inline bool srsv__list_empty(const struct srsv__list *h)
{
	return h->next == h;
}

static inline void srsv__list_add_tail(struct srsv__list *n,
				       struct srsv__list *h)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}

static inline void srsv__list_del_init(struct srsv__list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	srsv__list_init(n);
}

#define srsv__container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

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

const char *srsv__counter_name(int counter);

enum srsv__ticket_state {
	SRSV__TICKET_IDLE = 0,
	SRSV__TICKET_QUEUED = 1,
	SRSV__TICKET_DONE = 2
};

#define SRSV__TICKET_MAGIC 0x7469636bu	/* "tick" */

/* The internal view of struct srsv_ticket. */
struct srsv__ticket {
	struct srsv__list node;		/* on a queue while QUEUED */
	struct srsv_space *space;
	uint64_t bytes;			/* still wanted; 0 once granted */
	uint64_t orig_bytes;
	uint64_t start_ns;
	pthread_cond_t cond;		/* signalled when it ends */
	int error;
	int mode;
	uint32_t magic;
	volatile AO_t state;		/* enum srsv__ticket_state */
	bool steal;			/* may take from the global rsv */
	bool priority;			/* on priority_tickets */
	bool cond_ready;		/* cond initialised */
	/* Asynchronous tickets (async.c); async NULL for a blocking one. */
	bool async_hold;		/* do not post yet (queueing, walking) */
	bool async_walk;		/* priority walk to run by a worker */
	struct srsv_async *async;	/* completion queue */
	srsv_async_fn async_fn;
	void *async_arg;
	uint64_t deadline_ns;		/* monotonic; UINT64_MAX: none */
};

_Static_assert(sizeof(struct srsv__ticket) <= sizeof(struct srsv_ticket),
	       "struct srsv_ticket too small");

#define SRSV__CACHELINE 64

/* One CPU's reservation cache (cache.c), alone on its cache line. */
struct srsv__pace;	/* pace.c */

struct srsv__cache_slot {
	volatile AO_t word;		/* credit bytes, or closed */
} __attribute__((aligned(SRSV__CACHELINE)));

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
	 * time).  Averages with weight 1/4; 0 = not measured yet.
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
};

static inline uint64_t srsv__ld(const volatile AO_t *p)
{
	return (uint64_t)AO_load((volatile AO_t *)p);
}

static inline void srsv__st(volatile AO_t *p, uint64_t v)
{
	AO_store(p, (AO_t)v);
}

/*
 * Lock-free decrease of a counter word that refuses underflow: false, and
 * the word unchanged, when it holds less than @bytes.  Full barrier on
 * success (the compare-and-swap).
 */
static inline bool srsv__ao_sub_checked(volatile AO_t *w, uint64_t bytes)
{
	AO_t old;

	do {
		old = AO_load(w);
		if ((uint64_t)old < bytes)
			return false;
	} while (!AO_compare_and_swap_full(w, old, old - (AO_t)bytes));
	return true;
}

/* Take the whole word (leave 0); returns what it held.  Full barrier. */
static inline uint64_t srsv__ao_take_all(volatile AO_t *w)
{
	AO_t old;

	do {
		old = AO_load(w);
	} while (old && !AO_compare_and_swap_full(w, old, 0));
	return (uint64_t)old;
}

/* may_use's word (an acquire load; space.c). */
uint64_t srsv__may_use_settled(const struct srsv_space *s);
/* Credit sitting in @s's per-CPU caches (a lock-free approximation). */
uint64_t srsv__cache_credit(const struct srsv_space *s);

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

/* Worker kinds; each is a thread unless the ctx is in manual mode. */
enum srsv__work {
	SRSV__WORK_ASYNC_METADATA = 0,	/* tickets of non-data pools */
	SRSV__WORK_ASYNC_DATA = 1,	/* tickets of the data pool */
	SRSV__WORK_PREEMPT = 2,		/* preemptive flushing */
	SRSV__WORK_COUNT = 3
};

struct srsv__worker {
	struct srsv_ctx *ctx;
	enum srsv__work id;
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

/* ---- space.c: counters and transitions ---- */
int srsv__space_create(struct srsv_ctx *ctx, int kind, uint64_t total,
		       struct srsv_space **out);
void srsv__space_destroy(struct srsv_space *s);
/*
 * The one helper for locked counters: asserts the pool lock, refuses a
 * change that would underflow (or overflow) with -EINVAL and no change,
 * keeps "claimed" in step, traces (counter, old, diff).
 */
int srsv__space_update(struct srsv_space *s, enum srsv__counter c,
		       int64_t diff);
/*
 * Move @bytes between two locked counters, adding to @to before
 * subtracting from @from (a lock-free reader of "claimed" never sees them
 * as free); -EINVAL and nothing changed if @from holds less.  Pool lock.
 */
int srsv__space_move(struct srsv_space *s, enum srsv__counter from,
		     enum srsv__counter to, uint64_t bytes);
/* may_use, lock-free: refuse underflow with -EINVAL; trace. */
int srsv__may_use_sub(struct srsv_space *s, uint64_t bytes);
/*
 * Subtract @bytes from may_use, or all it holds if less (after an
 * undetected over-release); the bytes subtracted.  The caches' drain.
 */
uint64_t srsv__may_use_sub_clamped(struct srsv_space *s, uint64_t bytes);
void srsv__may_use_add(struct srsv_space *s, uint64_t bytes);
/*
 * Charge @bytes to may_use if they fit under the overcommit rules of
 * @mode (btrfs: used + bytes <= total || can_overcommit(bytes, mode)).
 * Lock-free (CAS); true when charged, and then *@after (if not NULL) is
 * the may_use our compare-and-swap left: callers that look at may_use
 * again need not reload the contended word.
 */
bool srsv__space_try_charge(struct srsv_space *s, uint64_t bytes, int mode,
			    uint64_t *after);
/* A @mode for srsv__space_try_charge(): plain fit, no overcommit. */
#define SRSV__CHARGE_NO_OVERCOMMIT (-1)
/* A @mode for srsv__space_try_charge(): used without may_use <= total. */
#define SRSV__CHARGE_EMERGENCY (-2)
/* calc_available_free_space(s, mode) */
uint64_t srsv__available_free_space(const struct srsv_space *s, int mode);
/* Grant queued tickets that fit, in FIFO order; pool lock held. */
void srsv__try_grant_tickets(struct srsv_space *s);
/* More unallocated space: grant the metadata (and system, mixed) pools'
 * tickets that may overcommit into it now.  Takes each pool lock. */
void srsv__grant_metadata_tickets(struct srsv_ctx *ctx);
/*
 * After a free that happened without the lock: grant if tickets wait.
 * With @nowait the lock is only try-locked; if it is busy the pool's async
 * worker is kicked to grant instead (never blocks).
 */
void srsv__maybe_grant(struct srsv_space *s, bool nowait);
/* srsv_space_release() for NOWAIT callers (undo paths): never blocks. */
int srsv__space_release_nowait(struct srsv_space *s, uint64_t bytes);

/* ---- reserve.c: the reserve path and tickets ---- */
/* Remove a queued ticket (reclaim_size, waiting); pool lock held. */
void srsv__ticket_remove(struct srsv_space *s, struct srsv__ticket *t);
/* End a ticket with @error (0: granted), trace, wake; pool lock held. */
void srsv__ticket_end(struct srsv_space *s, struct srsv__ticket *t, int error);
static inline struct srsv__ticket *srsv__ticket_first(struct srsv__list *h)
{
	return srsv__container_of(h->next, struct srsv__ticket, node);
}
/* Enter/leave a slow path (shutdown waits for them); false if closing. */
bool srsv__ctx_enter(struct srsv_ctx *ctx);
void srsv__ctx_leave(struct srsv_ctx *ctx);
/*
 * A public call that waits inside (reserve_blocking(), a quota flush) and
 * then goes on using the ctx (srsv_rsv_add(), srsv_delalloc_reserve(),
 * srsv_quota_reserve(), ...) brackets itself with srsv__outer_begin() and
 * srsv__outer_end(): a wait inside leaves with srsv__ctx_leave_waited(),
 * which, inside such a call on the same ctx, keeps the shutdown count until
 * the outermost call ends, so that srsv_ctx_destroy() cannot free what it
 * still touches.
 * Thread-local: costs no shared write when nothing waited.
 */
void srsv__outer_begin(struct srsv_ctx *ctx);
void srsv__outer_end(void);
void srsv__ctx_leave_waited(struct srsv_ctx *ctx);

/* ---- flush.c: flushing ---- */
/*
 * Call the engine for @state with no lock held; count, trace, and apply
 * the ALLOC_CHUNK rules (-ENOSPC / -EOPNOTSUPP mark the pool full).
 */
int srsv__flush_space(struct srsv_space *s, uint64_t bytes, int state,
		      bool for_preempt);
/* Queue async reclaim of @s (normal tickets); pool lock held. */
void srsv__queue_async_reclaim(struct srsv_space *s, uint64_t bytes, int mode);
/* Run the priority flushing of ticket @t in the caller's thread. */
void srsv__priority_reclaim(struct srsv_space *s, struct srsv__ticket *t,
			    const struct timespec *deadline);
/* maybe_fail_all_tickets(); pool lock held.  True if progress was made. */
bool srsv__maybe_fail_all_tickets(struct srsv_space *s);
/* Fail every queued ticket with @error; pool lock held. */
void srsv__fail_all_tickets(struct srsv_space *s, int error);
/* Wake worker @w for pool kind @kind (never blocks). */
void srsv__worker_kick(struct srsv_ctx *ctx, enum srsv__work w, int kind);
int srsv__workers_start(struct srsv_ctx *ctx);
void srsv__workers_stop(struct srsv_ctx *ctx);
/* Run one pending item of worker @w inline; returns items run. */
int srsv__worker_run_pending(struct srsv_ctx *ctx, enum srsv__work w);
/* steal_from_global_rsv() (rsv.c); pool lock held. */
bool srsv__steal_from_global_rsv(struct srsv_space *s, struct srsv__ticket *t);
/*
 * btrfs_return_free_space(): @bytes of @s just became free (unpin); the
 * global reserve, if it lives in @s and is below its size, takes them
 * first.  Returns the bytes it took.  Pool lock held.
 */
uint64_t srsv__global_rsv_refill(struct srsv_space *s, uint64_t bytes);
/* btrfs_calc_reclaim_metadata_size(); pool lock held. */
uint64_t srsv__calc_reclaim_metadata_size(struct srsv_space *s);

/* ---- preempt.c: preemptive flushing ---- */
/* need_preemptive_reclaim(); lock-free reads, call with or without lock. */
bool srsv__need_preemptive_reclaim(struct srsv_space *s);
/* The preemptive floor of a pool of @total bytes. */
uint64_t srsv__preempt_floor(const struct srsv_space *s, uint64_t total);
/* A COMMIT_TRANS callback took @ns (pool lock held). */
void srsv__note_commit_time(struct srsv_space *s, uint64_t ns);
/* Queue the preemptive worker if need_preemptive_reclaim() says so. */
void srsv__queue_preempt_if_needed(struct srsv_space *s, uint64_t bytes,
				   int mode);

/*
 * Are tickets queued that a reservation in @mode may not pass?  Normal
 * tickets hold back FLUSH_ALL, ALL_STEAL and NO_FLUSH; priority tickets
 * hold back everyone.  Lock-free.
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

/*
 * After a successful metadata reservation: queue preemptive flushing if
 * needed.  Inline so that the reservation fast path of a pool with room
 * pays four loads here, not a chain of calls: a busy or disabled worker,
 * or reservations under the floor, answer "no" at once.  @may_use is what
 * the caller's charge left: with writers on several CPUs the admission
 * word's cache line has often moved on by now, and reloading it would
 * cost a second transfer per reservation.
 */
static inline void srsv__maybe_queue_preempt(struct srsv_space *s,
					     uint64_t bytes, int mode,
					     uint64_t may_use)
{
	struct srsv_ctx *ctx = s->ctx;

	if (srsv__ld(&ctx->preempt_busy) || !srsv__ld(&ctx->preempt_enabled))
		return;
	if (may_use + srsv__space_counter(s, SRSV__PINNED) <=
	    srsv__ld(&s->preempt_floor))
		return;
	srsv__queue_preempt_if_needed(s, bytes, mode);
}
/* maybe_clamp_preempt(): a ticket started async flushing, or a paced
 * writer slept; pool lock held. */
void srsv__maybe_clamp_preempt(struct srsv_space *s);
/* The clamp comes down one step per this long without a wait (preempt.c,
 * THE CLAMP). */
#define SRSV__CLAMP_QUIET_NS (1000ull * 1000 * 1000)
/* The preempt worker's body. */
void srsv__preempt_reclaim(struct srsv_space *s);
/* The preempt worker's choice of state and bytes; pool lock held. */
int srsv__preempt_choose(struct srsv_space *s, uint64_t *to_reclaim);

/* ---- cache.c: per-CPU reservation caches ---- */
/*
 * Whether @bytes go through @s's caches: engaged (which implies
 * configured) and small enough.  One load on the exact path.
 */
static inline bool srsv__cache_engaged(const struct srsv_space *s,
				       uint64_t bytes)
{
	return __builtin_expect(srsv__ld(&s->cache_on) != 0, 0) &&
	       bytes <= s->cache_batch;
}
/* Engage @s's (configured) caches: contention was seen.  Cold. */
void srsv__cache_engage(struct srsv_space *s);
/* Give @s caches serving requests up to @batch (0: none). */
int srsv__cache_create(struct srsv_space *s, uint64_t batch);
void srsv__cache_free(struct srsv_space *s);
/*
 * Reserve @bytes (at most the batch) from this CPU's cache, refilling it
 * from may_use if the pool is far from full.  *@after: may_use after a
 * refill, 0 when the credit sufficed.  false: use may_use directly.
 */
bool srsv__cache_take(struct srsv_space *s, uint64_t bytes, bool nowait,
		      uint64_t *after);
/*
 * Release @bytes (at most the batch) into this CPU's cache.  1: done;
 * 0: the cache is closed, release to may_use; -EINVAL: more than may_use.
 */
int srsv__cache_put(struct srsv_space *s, uint64_t bytes, bool nowait);
/* Close every cache and return its credit to may_use; the bytes moved. */
uint64_t srsv__cache_drain(struct srsv_space *s);
/*
 * A slow path's decision: keep every cache closed and empty (no reopen, no
 * refill) from srsv__cache_block(), which drains and lets credit in motion
 * land, to srsv__cache_unblock().  The try form (NOWAIT) does not wait for
 * another thread: false, and nothing blocked, if credit is in motion.
 */
void srsv__cache_block(struct srsv_space *s);
bool srsv__cache_try_block(struct srsv_space *s)
	__attribute__((warn_unused_result));
void srsv__cache_unblock(struct srsv_space *s);

/* ---- rsv.c: block reservations ---- */
int srsv__rsv_init(struct srsv_rsv *rsv, struct srsv_space *s, int type);
void srsv__rsv_teardown(struct srsv_rsv *rsv);
/* Reserved bytes of a standard rsv, lock-free approximation. */
uint64_t srsv__std_rsv_reserved(struct srsv_ctx *ctx, int type);
uint64_t srsv__std_rsv_size(struct srsv_ctx *ctx, int type);
/* The metadata (or mixed) pool the standard rsvs live in. */
struct srsv_space *srsv__metadata_space(struct srsv_ctx *ctx);
/*
 * Take @bytes back out of @rsv as srsv_rsv_add() put them in: reserved and
 * size both drop by @bytes under one rsv lock, so nothing spills and the
 * bytes stay in may_use, owned by the caller.  -ENOSPC (reserved < @bytes)
 * or -EINVAL (size < @bytes) with nothing changed.
 */
int srsv__rsv_take(struct srsv_rsv *rsv, uint64_t bytes);
/* The exact inverse of srsv__rsv_take() (may_use untouched). */
void srsv__rsv_put_back(struct srsv_rsv *rsv, uint64_t bytes);

/* ---- quota.c ---- */
/* Reserve several quota kinds in one admission (the delalloc helper). */
int srsv__quota_reserve_kinds(struct srsv_quota *q,
			      const uint64_t bytes[SRSV_QUOTA_KIND_COUNT],
			      unsigned flags);
/*
 * A delalloc write reached disk, all or nothing: META_PREALLOC -@meta,
 * META_PERTRANS +@meta_used (<= @meta), DATA -@data, used +@data.
 * -EINVAL, nothing changed, when the tenant holds less than that.
 */
int srsv__quota_finish(struct srsv_quota *q, uint64_t data, uint64_t meta,
		       uint64_t meta_used);
/* White-box tests: the quota's lock, to hold it from another thread. */
struct srsv__lock *srsv__quota_lock_ptr(struct srsv_quota *q);

/* ---- delalloc.c ---- */
/*
 * White-box tests: an int (*)(int step) stored as a word (read with
 * AO_load()), called before each fallible step of the delalloc helper;
 * non-zero fails that step.  Set it while no delalloc call runs.
 */
typedef int (*srsv__delalloc_fault_fn)(int step);
extern volatile AO_t srsv__delalloc_fault;

/* ---- quota.c and zoned.c teardown ---- */
void srsv__quota_ctx_destroy(struct srsv_ctx *ctx);
void srsv__zoned_ctx_destroy(struct srsv_ctx *ctx);
/* Flush states the zoned code implements inside the library (reset /
 * reclaim of zone groups) before the engine is called, bounded and
 * stopping once @bytes are back (0: no target); returns bytes returned to
 * the pool. */
uint64_t srsv__zoned_flush(struct srsv_space *s, int state, uint64_t bytes);

#endif /* SRSV_INTERNAL_H */
