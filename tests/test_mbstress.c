/* SPDX-License-Identifier: MIT */
/*
 * Model-based concurrent stress: 8 threads of random operations
 * across the API on a threaded ctx, each thread keeping its own books (a
 * model of what it holds), checked against the library at quiescent
 * checkpoints.
 *
 * THE OPERATIONS
 *
 * Pools: reserve (NO_FLUSH, EMERGENCY, NOWAIT), alloc, commit_used, pin,
 * free_reserved, release, and handing bytes over to the engine (which gives
 * them back when asked to flush dirty data).  Waiting reservations go
 * through the ticket API in every waiting mode (FLUSH_ALL, ALL_STEAL,
 * LIMIT, EVICT, DATA, FREE_SPACE_INODE) and end with a short deadline, a
 * cancellation, or a grant.  Block reservations: each thread's TEMP rsv
 * (add, refill, use, migrate to and from the delayed-refs rsv, release
 * with spills, the use_fallback chain that may borrow from the global
 * reserve), and tickets that steal from the global reserve.  Quotas: each
 * thread owns a tenant (reserve every kind, release, convert, commit,
 * charge_used, free_used) whose limit makes the quota flush run.  The
 * delalloc helper in NOFLUSH and NOWAIT mode, finished or released.
 * Block groups: each thread owns at most one 256 KiB group of the SYSTEM
 * pool at a time (the pools the checkpoints weigh keep their totals): it
 * adds one from unallocated space, places extents in it, frees them in the
 * running transaction (or at once), and finds it gone once the commit
 * after it emptied it returned it; the engine's commits report
 * srsv_ctx_commit_done() while the threads place and free.  Reclaim
 * thresholds are off: relocation is the fuzzer's and
 * tests/test_bgroup_rescue.c's.
 *
 * THE ENGINE
 *
 * Flush callbacks that sleep (1-2 ms), fail (-EIO, -EOPNOTSUPP), re-enter
 * the library (NO_FLUSH reservations and releases, flushing reservations
 * that must get -EDEADLK), commit (unpin what is pinned), give back the
 * bytes threads handed over, and refuse to grow the pools; preemptive
 * flushing on.
 *
 * THE CHECKPOINTS
 *
 * Every CHECK_MS the threads finish their operation and park on a barrier;
 * once the workers are idle (preemptive flushing paused, no callback
 * running), the main thread checks, for the data and metadata pools:
 * - may_use == what the threads hold + what every rsv holds + what the
 *   engine holds;
 * - reserved and used == the threads' books; pinned == what was pinned
 *   minus what the engine's commits unpinned; no counter underflowed;
 * - no ticket queued; every ticket ended exactly once: the pools'
 *   tickets_granted / tickets_failed grew by exactly the number of queued
 *   tickets the threads saw granted / fail;
 * - every tenant's quota equals its thread's books;
 * - every thread's group holds exactly the bytes its books say, or is
 *   gone and the books say 0.
 * At the end everything is given back and every counter must be at its
 * start.
 *
 * Bounded by time: SRSV_STRESS_SECONDS (default 5; CI uses 30).  The seed
 * is printed; SRSV_STRESS_SEED=<n> replays each thread's sequence of
 * operations (the interleaving is the machine's).
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libspacersv/spacersv.h>

#include "engine_sim.h"

#define KiB ESIM_KIB
#define MiB ESIM_MIB

#define NR_THREADS 8
#define DEFAULT_SECONDS 5
/* Checkpoints: often enough to catch a drift near its cause, rarely
 * enough that the threads mostly run. */
#define CHECK_MS 250
/* Giving up on quiescence (a hang detector, never reached normally). */
#define QUIESCE_MS 20000

/* Small pools, so that the threads fill them and every path runs. */
#define DATA_BYTES (8 * MiB)
#define META_BYTES (4 * MiB)
/* Some unallocated space: metadata overcommits, nothing grows. */
#define UNALLOCATED (48 * MiB)
#define GLOBAL_BYTES (512 * KiB)
/* The delayed-refs rsv is sized but empty: released rsvs spill into it. */
#define DELREFS_ROOM (256 * KiB)

/* One thread holds at most this share of a pool before giving back. */
#define HOLD_SHARE 16
#define MAX_REQ (64 * KiB)
/* Tenant limit: a few delalloc writes' worth, so the quota flush runs. */
#define QUOTA_LIMIT (2 * MiB)
/* Delalloc reservations a thread keeps open at once. */
#define MAX_DELALLOC 4
/* A thread's block group (SYSTEM pool). */
#define BG_BYTES (256 * KiB)
/* Tries of a free whose transaction committed meanwhile. */
#define BG_FREE_TRIES 100000

enum { P_DATA = 0, P_META = 1, NR_POOLS = 2 };

struct books {
	uint64_t held[NR_POOLS];	/* may_use we own */
	uint64_t allocated[NR_POOLS];	/* reserved counter we own */
	uint64_t used[NR_POOLS];	/* used counter we own */
	uint64_t quota[SRSV_QUOTA_KIND_COUNT];
	uint64_t quota_used;
	/* What the open delalloc reservations hold, kept apart: the other
	 * operations must not spend it. */
	uint64_t dl_data, dl_quota_data, dl_quota_meta;
};

struct worker {
	int id;
	uint64_t rng;
	struct srsv_ctx *ctx;
	struct srsv_space *pool[NR_POOLS];
	struct srsv_rsv rsv;		/* TEMP, metadata pool */
	struct srsv_quota *quota;
	struct srsv_delalloc_resv dres[MAX_DELALLOC];
	unsigned nr_dres;
	struct books b;
	/* Tickets we saw queued (-EINPROGRESS) and how they ended; ticket
	 * reservations granted at once (fast path, or queued and granted
	 * before srsv_ticket_reserve() returned: a release that raced the
	 * queueing). */
	uint64_t tickets, tickets_granted, tickets_failed, granted_at_once;
	uint64_t ops, unexpected;
	char first_unexpected[200];
	/* Its block group, if it has one, and the bytes placed in it. */
	bool bg_have;
	uint64_t bg_start, bg_used, bg_added, bg_gone;
};

static struct {
	struct esim *sim;
	struct worker w[NR_THREADS];
	pthread_barrier_t park, resume;
	volatile int pause, stop;
	/* Bytes pinned by the threads and unpinned by the engine's commits,
	 * per pool kind. */
	uint64_t pinned_by_threads[SRSV_POOL_COUNT];
	uint64_t unpinned_by_engine[SRSV_POOL_COUNT];
	/* META_PERTRANS the quota flush freed, per tenant (= thread). */
	uint64_t quota_freed[NR_THREADS];
	/* The main thread's own books (the delayed-refs room it made). */
	uint64_t main_held_meta;
	/* Block groups: the running transaction (the engine's commits
	 * move on to the next, then report it) and the next group's
	 * address. */
	uint64_t trans, next_addr;
	/* Commits reported after a later one (which covered them). */
	uint64_t commits_covered;
} G;

static uint64_t next_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * UINT64_C(2685821657736338717);
}

static uint64_t rnd(struct worker *w, uint64_t n)
{
	return n ? next_rand(&w->rng) % n : 0;
}

static uint64_t rand_bytes(struct worker *w)
{
	return (1 + rnd(w, MAX_REQ / (4 * KiB))) * 4 * KiB;
}

static uint64_t rand_part(struct worker *w, uint64_t have)
{
	return have ? 1 + rnd(w, have) : 0;
}

static void unexpected(struct worker *w, const char *what, int ret)
{
	if (!w->unexpected++)
		snprintf(w->first_unexpected, sizeof(w->first_unexpected),
			 "thread %d, op %" PRIu64 ": %s returned %d", w->id,
			 w->ops, what, ret);
}

/* A call on bytes we own must succeed. */
static bool must(struct worker *w, const char *what, int ret)
{
	if (ret)
		unexpected(w, what, ret);
	return ret == 0;
}

static void add_atomic(uint64_t *v, uint64_t n)
{
	__atomic_add_fetch(v, n, __ATOMIC_RELAXED);
}

/* ---- the engine ---- */

/* COMMIT_TRANS: unpin what is pinned (two flushers may race: only a
 * successful unpin counts). */
static int engine_commit(struct esim *sim, struct srsv_space *space,
			 enum srsv_flush_state state, uint64_t bytes, void *arg)
{
	struct srsv_space_info info;

	(void)sim;
	(void)state;
	(void)bytes;
	(void)arg;
	uint64_t t;

	if (!srsv_space_snapshot(space, &info, NULL, 0, NULL) && info.pinned &&
	    srsv_space_unpin(space, info.pinned) == 0)
		add_atomic(&G.unpinned_by_engine[info.kind], info.pinned);
	/* The block groups' half: transaction t committed.  As an engine
	 * does, the next transaction starts (t + 1 runs) before t's commit
	 * is reported, so a free never waits for a committer that was
	 * preempted between the two.  A flusher of another pool racing us
	 * loses the compare-and-swap and reports nothing; a later commit
	 * reported first covers t too (its commit_done then says -EINVAL). */
	t = __atomic_load_n(&G.trans, __ATOMIC_ACQUIRE);
	if (__atomic_compare_exchange_n(&G.trans, &t, t + 1, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) &&
	    srsv_ctx_commit_done(G.sim->ctx, t) < 0)
		add_atomic(&G.commits_covered, 1);
	return 0;
}

static void script_engine(struct esim *sim)
{
	const struct esim_action actions[] = {
		/* Deferred items: re-enter with NO_FLUSH (reserve, release). */
		{ .state = SRSV_STATE_DELAYED_ITEMS_NR, .pool = ESIM_ANY,
		  .preempt = -1, .op = ESIM_REENTER_NOFLUSH, .arg = 64 * KiB },
		/* Deferred refs: a flushing reservation from inside a
		 * callback must get -EDEADLK (or fit at once). */
		{ .state = SRSV_STATE_DELAYED_REFS_NR, .pool = ESIM_ANY,
		  .preempt = -1, .op = ESIM_REENTER_FLUSH, .arg = 64 * KiB },
		/* Dirty data: give back what the threads handed over. */
		{ .state = SRSV_STATE_DELALLOC, .pool = ESIM_ANY,
		  .preempt = -1, .op = ESIM_RELEASE, .arg = 256 * KiB },
		{ .state = SRSV_STATE_DELALLOC_WAIT, .pool = ESIM_ANY,
		  .preempt = -1, .op = ESIM_SLEEP_MS, .arg = 1 },
		{ .state = SRSV_STATE_DELALLOC_WAIT, .pool = ESIM_ANY,
		  .preempt = -1, .op = ESIM_RELEASE, .arg = ESIM_ALL },
		/* Failing states. */
		{ .state = SRSV_STATE_DELALLOC_FULL, .pool = ESIM_ANY,
		  .preempt = -1, .op = ESIM_RETURN, .error = -EIO },
		{ .state = SRSV_STATE_RUN_DELAYED_IPUTS, .pool = ESIM_ANY,
		  .preempt = -1, .op = ESIM_RETURN, .error = -EOPNOTSUPP },
		/* The device is full: no pool grows. */
		{ .state = SRSV_STATE_ALLOC_CHUNK, .pool = ESIM_ANY,
		  .preempt = -1, .op = ESIM_RETURN, .error = -ENOSPC },
		{ .state = SRSV_STATE_ALLOC_CHUNK_FORCE, .pool = ESIM_ANY,
		  .preempt = -1, .op = ESIM_RETURN, .error = -ENOSPC },
		/* A commit takes a moment and frees what is pinned. */
		{ .state = SRSV_STATE_COMMIT_TRANS, .pool = ESIM_ANY,
		  .preempt = -1, .op = ESIM_SLEEP_MS, .arg = 2 },
		{ .state = SRSV_STATE_COMMIT_TRANS, .pool = ESIM_ANY,
		  .preempt = -1, .op = ESIM_CALL, .fn = engine_commit },
	};

	for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
		ck_assert_int_ge(esim_add(sim, &actions[i]), 0);
}

/* The quota flush commits the tenant's transaction (it runs in the
 * thread that owns the tenant). */
static int quota_flush(struct srsv_quota *q, void *user)
{
	uint64_t freed = 0;
	uint64_t id = srsv_quota_id(q);

	(void)user;
	if (srsv_quota_commit_one(q, &freed) == 0 && id < NR_THREADS)
		add_atomic(&G.quota_freed[id], freed);
	return 0;
}

/* ---- the operations ---- */

static const enum srsv_flush data_wait_modes[] = {
	SRSV_FLUSH_DATA, SRSV_FLUSH_DATA, SRSV_FLUSH_FREE_SPACE_INODE,
};
static const enum srsv_flush meta_wait_modes[] = {
	SRSV_FLUSH_ALL, SRSV_FLUSH_ALL, SRSV_FLUSH_ALL_STEAL,
	SRSV_FLUSH_LIMIT, SRSV_FLUSH_EVICT,
};

/* A reservation that may have to wait: through the ticket API, so that
 * every queued ticket is seen and its end counted. */
static void op_ticket(struct worker *w, int p)
{
	struct srsv_ticket t;
	uint64_t bytes = rand_bytes(w);
	enum srsv_flush mode = p == P_DATA ? data_wait_modes[rnd(w, 3)] :
					     meta_wait_modes[rnd(w, 5)];
	int ret;

	ret = srsv_ticket_reserve(w->pool[p], &t, bytes, mode, 0);
	if (ret == 0)
		w->granted_at_once++;
	if (ret == -EINPROGRESS) {
		w->tickets++;
		switch (rnd(w, 4)) {
		case 0:		/* look, then cancel (it may have ended) */
			ret = srsv_ticket_wait(&t, 0);
			if (ret == -EINPROGRESS) {
				int c = srsv_ticket_cancel(&t);

				if (c && c != -EALREADY)
					unexpected(w, "ticket_cancel", c);
				ret = srsv_ticket_wait(&t, UINT64_MAX);
			}
			break;
		case 1:		/* a deadline long enough for a walk */
			ret = srsv_ticket_wait(&t, 20ull * 1000 * 1000);
			break;
		default:	/* a short deadline: often times out */
			ret = srsv_ticket_wait(&t, 1000 + rnd(w, 500000));
			break;
		}
		if (ret == 0)
			w->tickets_granted++;
		else
			w->tickets_failed++;
	}
	if (ret == 0)
		w->b.held[p] += bytes;
	else if (ret != -ENOSPC && ret != -ETIMEDOUT && ret != -ECANCELED)
		unexpected(w, "ticket reserve", ret);
}

/* A reservation that never waits. */
static void op_reserve_nowait(struct worker *w, int p)
{
	uint64_t bytes = rand_bytes(w);
	enum srsv_flush mode = SRSV_NO_FLUSH;
	unsigned flags = 0;
	int ret;

	switch (rnd(w, 3)) {
	case 0:
		break;
	case 1:		/* NOWAIT, in a waiting mode: -EAGAIN, not a ticket */
		flags = SRSV_RESERVE_NOWAIT;
		mode = p == P_DATA ? SRSV_FLUSH_DATA : SRSV_FLUSH_ALL;
		break;
	default:
		if (p == P_META)
			mode = SRSV_FLUSH_EMERGENCY;
		break;
	}
	ret = srsv_space_reserve(w->pool[p], bytes, mode, flags);
	if (ret == 0)
		w->b.held[p] += bytes;
	else if (ret != -ENOSPC && ret != -EAGAIN)
		unexpected(w, "reserve", ret);
}

static struct srsv_rsv *delrefs(struct worker *w)
{
	return srsv_ctx_rsv(w->ctx, SRSV_RSV_DELREFS);
}

static void op_rsv(struct worker *w)
{
	struct srsv_rsv_info info;
	struct srsv_rsv *paid;
	uint64_t n, released;
	int ret;

	if (!must(w, "rsv_get_info", srsv_rsv_get_info(&w->rsv, &info)))
		return;
	switch (rnd(w, 7)) {
	case 0:
		if (info.size > META_BYTES / HOLD_SHARE)
			break;
		/* A flushing mode only with NOWAIT: a blocking one would queue
		 * a ticket the books could not count (waiting reservations go
		 * through op_ticket()). */
		if (rnd(w, 2))
			ret = srsv_rsv_add(&w->rsv, rand_bytes(w), SRSV_FLUSH_ALL,
					   SRSV_RESERVE_NOWAIT);
		else
			ret = srsv_rsv_add(&w->rsv, rand_bytes(w), SRSV_NO_FLUSH,
					   rnd(w, 2) ? SRSV_RESERVE_NOWAIT : 0);
		if (ret && ret != -ENOSPC && ret != -EAGAIN)
			unexpected(w, "rsv_add", ret);
		break;
	case 1:
		if (info.size > info.reserved) {
			ret = srsv_rsv_refill(&w->rsv, info.size, SRSV_NO_FLUSH,
					      0);
			if (ret && ret != -ENOSPC)
				unexpected(w, "rsv_refill", ret);
		}
		break;
	case 2:		/* consume: the bytes become ours */
		n = rand_part(w, info.reserved);
		if (n && must(w, "rsv_use", srsv_rsv_use(&w->rsv, n)))
			w->b.held[P_META] += n;
		break;
	case 3:		/* release: the excess may spill into delayed refs */
		n = rand_part(w, info.size);
		must(w, "rsv_release", srsv_rsv_release(&w->rsv, n, &released));
		break;
	case 4:		/* to the shared delayed-refs rsv and back */
		n = rand_part(w, info.reserved);
		if (n)
			must(w, "rsv_migrate", srsv_rsv_migrate(&w->rsv,
				delrefs(w), n, false));
		break;
	case 5:
		n = rand_bytes(w);
		ret = srsv_rsv_migrate(delrefs(w), &w->rsv, n, true);
		if (ret && ret != -ENOSPC)
			unexpected(w, "rsv_migrate back", ret);
		break;
	default:	/* the fallback chain, may borrow from the global rsv */
		n = rand_bytes(w);
		ret = srsv_rsv_use_fallback(&w->rsv, n, &paid);
		if (ret == 0)
			w->b.held[P_META] += n;
		else if (ret != -ENOSPC)
			unexpected(w, "rsv_use_fallback", ret);
		break;
	}
}

/* After a quota reservation: what the quota flush freed of ours. */
static void quota_settle(struct worker *w)
{
	uint64_t freed = __atomic_exchange_n(&G.quota_freed[w->id], 0,
					     __ATOMIC_ACQ_REL);

	w->b.quota[SRSV_QUOTA_META_PERTRANS] -= freed;
}

static void op_quota(struct worker *w)
{
	struct books *b = &w->b;
	int kind = (int)rnd(w, SRSV_QUOTA_KIND_COUNT);
	uint64_t n, freed;
	unsigned flags;
	int ret;

	switch (rnd(w, 6)) {
	case 0:
	case 1:
		n = rand_bytes(w);
		flags = rnd(w, 3) == 0 ? SRSV_RESERVE_NOWAIT :
			rnd(w, 2) ? SRSV_QUOTA_NOFLUSH : 0;
		ret = srsv_quota_reserve(w->quota, (enum srsv_quota_kind)kind,
					 n, flags);
		quota_settle(w);
		if (ret == 0)
			b->quota[kind] += n;
		else if (ret != -EDQUOT && ret != -EAGAIN)
			unexpected(w, "quota_reserve", ret);
		break;
	case 2:
		n = rand_part(w, b->quota[kind]);
		if (n && must(w, "quota_release", srsv_quota_release(w->quota,
					(enum srsv_quota_kind)kind, n)))
			b->quota[kind] -= n;
		break;
	case 3:
		n = rand_part(w, b->quota[SRSV_QUOTA_META_PREALLOC]);
		if (n && must(w, "quota_convert",
			      srsv_quota_convert(w->quota, n))) {
			b->quota[SRSV_QUOTA_META_PREALLOC] -= n;
			b->quota[SRSV_QUOTA_META_PERTRANS] += n;
		}
		break;
	case 4:
		if (must(w, "quota_commit_one",
			 srsv_quota_commit_one(w->quota, &freed)))
			b->quota[SRSV_QUOTA_META_PERTRANS] -= freed;
		break;
	default:
		n = rand_part(w, b->quota[SRSV_QUOTA_DATA]);
		if (n && must(w, "quota_charge_used",
			      srsv_quota_charge_used(w->quota, n))) {
			b->quota[SRSV_QUOTA_DATA] -= n;
			b->quota_used += n;
		}
		n = rand_part(w, b->quota_used);
		if (n && rnd(w, 2) && must(w, "quota_free_used",
				srsv_quota_free_used(w->quota, n)))
			b->quota_used -= n;
		break;
	}
}

/* What a delalloc reservation holds goes into our books and out again. */
static void dres_books(struct worker *w, const struct srsv_delalloc_resv *r,
		       bool add)
{
	struct books *b = &w->b;

	if (add) {
		b->dl_data += r->data_bytes;
		b->dl_quota_data += r->quota_data_bytes;
		b->dl_quota_meta += r->quota_meta_bytes;
	} else {
		b->dl_data -= r->data_bytes;
		b->dl_quota_data -= r->quota_data_bytes;
		b->dl_quota_meta -= r->quota_meta_bytes;
	}
}

static void op_delalloc(struct worker *w)
{
	struct srsv_delalloc_resv *r;
	int ret;

	if (w->nr_dres < MAX_DELALLOC && rnd(w, 2)) {
		enum srsv_delalloc_mode mode = rnd(w, 2) ? SRSV_DELALLOC_NOFLUSH :
							   SRSV_DELALLOC_NOWAIT;

		r = &w->dres[w->nr_dres];
		ret = srsv_delalloc_reserve(w->ctx, rnd(w, 4) ? w->quota : NULL,
					    rand_bytes(w) * 2, mode, r);
		quota_settle(w);
		if (ret == 0) {
			dres_books(w, r, true);
			w->nr_dres++;
		} else if (ret != -ENOSPC && ret != -EDQUOT && ret != -EAGAIN) {
			unexpected(w, "delalloc_reserve", ret);
		} else if (mode == SRSV_DELALLOC_NOWAIT && ret != -EAGAIN) {
			unexpected(w, "delalloc_reserve NOWAIT", ret);
		}
		return;
	}
	if (!w->nr_dres)
		return;
	r = &w->dres[--w->nr_dres];
	if (rnd(w, 2)) {
		struct srsv_delalloc_resv copy = *r;

		must(w, "delalloc_release", srsv_delalloc_release(r));
		dres_books(w, &copy, false);
	} else {
		/* The write reached disk, using part of the metadata. */
		struct srsv_delalloc_resv copy = *r;
		uint64_t meta_used = rnd(w, copy.meta_bytes + 1);

		if (!must(w, "delalloc_finish",
			  srsv_delalloc_finish(r, meta_used)))
			return;
		dres_books(w, &copy, false);
		w->b.used[P_DATA] += copy.data_bytes;
		w->b.used[P_META] += meta_used;
		if (copy.quota) {
			w->b.quota[SRSV_QUOTA_META_PERTRANS] += meta_used;
			w->b.quota_used += copy.quota_data_bytes;
		}
	}
}

/* ---- block groups ---- */

/* Free @n of the thread's group in the running transaction (or at once
 * with @now); a transaction that committed since it was read is read
 * again, and while two commits are in flight (the one of the same parity
 * not reported yet) the committers get the CPU. */
static int bg_free(struct worker *w, uint64_t n, bool now)
{
	int ret = -EINVAL;

	for (int i = 0; i < BG_FREE_TRIES && ret == -EINVAL; i++) {
		uint64_t t = now ? 0 : __atomic_load_n(&G.trans,
						       __ATOMIC_ACQUIRE);

		ret = srsv_bgroup_free(w->ctx, SRSV_POOL_SYSTEM, w->bg_start,
				       n, t);
		if (now)
			break;
		if (ret == -EINVAL)
			sched_yield();
	}
	return ret;
}

static void op_bgroup(struct worker *w)
{
	struct srsv_bgroup_info gi;
	uint64_t n;
	int ret;

	if (!w->bg_have) {
		uint64_t at = __atomic_fetch_add(&G.next_addr, BG_BYTES,
						 __ATOMIC_RELAXED);

		ret = srsv_bgroup_add(w->ctx, SRSV_POOL_SYSTEM, at, BG_BYTES);
		if (!ret) {
			w->bg_have = true;
			w->bg_start = at;
			w->bg_used = 0;
			w->bg_added++;
		} else if (ret != -ENOSPC) {
			unexpected(w, "bgroup_add", ret);
		}
		return;
	}
	ret = srsv_bgroup_get(w->ctx, w->bg_start, &gi);
	/* Emptied, and returned by the commit after that. */
	if (ret == -ENOENT && !w->bg_used) {
		w->bg_have = false;
		w->bg_gone++;
		return;
	}
	if (!must(w, "bgroup_get", ret))
		return;
	if (gi.used != w->bg_used || gi.start != w->bg_start ||
	    gi.used + gi.pinned > gi.length || gi.readonly) {
		unexpected(w, "bgroup_get: used", (int)gi.used);
		return;
	}
	if (rnd(w, 2)) {
		/* Room only grows meanwhile (a commit frees pinned bytes),
		 * but an empty group may go back. */
		n = rand_part(w, gi.length - gi.used - gi.pinned);
		if (!n)
			return;
		ret = srsv_bgroup_alloc(w->ctx, SRSV_POOL_SYSTEM, w->bg_start,
					n);
		if (ret == -ENOENT && !w->bg_used) {
			w->bg_have = false;
			w->bg_gone++;
		} else if (must(w, "bgroup_alloc", ret)) {
			w->bg_used += n;
		}
		return;
	}
	n = rand_part(w, w->bg_used);
	if (n && must(w, "bgroup_free", bg_free(w, n, !rnd(w, 4))))
		w->bg_used -= n;
}

static void one_op(struct worker *w)
{
	int p = (int)rnd(w, NR_POOLS);
	struct srsv_space *s = w->pool[p];
	uint64_t limit = (p == P_DATA ? DATA_BYTES : META_BYTES) / HOLD_SHARE;
	struct books *b = &w->b;
	uint64_t n;

	w->ops++;
	/* Keep each thread's share bounded so the pools keep moving. */
	if (b->held[p] + b->allocated[p] + b->used[p] > limit) {
		if (b->used[p]) {
			n = b->used[p];
			if (must(w, "pin", srsv_space_pin(s, n))) {
				b->used[p] -= n;
				add_atomic(&G.pinned_by_threads[
					   srsv_space_kind(s)], n);
			}
		} else if (b->allocated[p]) {
			n = b->allocated[p];
			if (must(w, "commit_used", srsv_space_commit_used(s, n))) {
				b->allocated[p] -= n;
				b->used[p] += n;
			}
		} else if (must(w, "release", srsv_space_release(s, b->held[p]))) {
			b->held[p] = 0;
		}
		return;
	}
	switch (rnd(w, 18)) {
	case 0:
	case 1:
		op_ticket(w, p);
		break;
	case 16:
	case 17:
		op_bgroup(w);
		break;
	case 2:
		op_reserve_nowait(w, p);
		break;
	case 3:
		n = rand_part(w, b->held[p]);
		if (n && must(w, "alloc", srsv_space_alloc(s, n))) {
			b->held[p] -= n;
			b->allocated[p] += n;
		}
		break;
	case 4:
		n = rand_part(w, b->allocated[p]);
		if (n && must(w, "commit_used", srsv_space_commit_used(s, n))) {
			b->allocated[p] -= n;
			b->used[p] += n;
		}
		break;
	case 5:
		n = rand_part(w, b->allocated[p]);
		if (n && must(w, "free_reserved", srsv_space_free_reserved(s, n)))
			b->allocated[p] -= n;
		break;
	case 6:
		n = rand_part(w, b->used[p]);
		if (n && must(w, "pin", srsv_space_pin(s, n))) {
			b->used[p] -= n;
			add_atomic(&G.pinned_by_threads[srsv_space_kind(s)], n);
		}
		break;
	case 7:
		n = rand_part(w, b->held[p]);
		if (n && must(w, "release", srsv_space_release(s, n)))
			b->held[p] -= n;
		break;
	case 8:		/* dirty data: the engine holds it until it flushes */
		n = rand_part(w, b->held[p]);
		if (n) {
			esim_hold(G.sim, (enum srsv_pool)srsv_space_kind(s), n);
			b->held[p] -= n;
		}
		break;
	case 9:
	case 10:
	case 11:
		op_rsv(w);
		break;
	case 12:
	case 13:
		op_quota(w);
		break;
	default:
		op_delalloc(w);
		break;
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	while (!__atomic_load_n(&G.stop, __ATOMIC_ACQUIRE)) {
		if (__atomic_load_n(&G.pause, __ATOMIC_ACQUIRE)) {
			pthread_barrier_wait(&G.park);
			pthread_barrier_wait(&G.resume);
			continue;
		}
		one_op(w);
	}
	return NULL;
}

/* ---- checkpoints ---- */

struct start_state {
	struct srsv_space_info pool[NR_POOLS];
	struct srsv_rsv_info std[SRSV_RSV_TYPE_COUNT];
};

static const enum srsv_rsv_type std_types[] = {
	SRSV_RSV_GLOBAL, SRSV_RSV_TRANS, SRSV_RSV_DELOPS, SRSV_RSV_DELREFS,
	SRSV_RSV_DELALLOC,
};
#define NR_STD (sizeof(std_types) / sizeof(std_types[0]))

static uint64_t std_reserved(struct srsv_ctx *ctx)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < NR_STD; i++) {
		struct srsv_rsv_info info;

		ck_assert_int_eq(srsv_rsv_get_info(srsv_ctx_rsv(ctx,
					std_types[i]), &info), 0);
		sum += info.reserved;
	}
	return sum;
}

/*
 * Wait until no callback can change the books: freeze the engine (every
 * callback from now on does nothing), then wait for those already inside
 * to leave and for every pool's async flusher to finish.  Preemptive
 * flushing is paused too, so that the workers go idle.  Nothing here
 * depends on timing: a worker about to enter a callback finds it frozen.
 */
static void quiesce(struct srsv_space *pools[NR_POOLS])
{
	ck_assert_int_eq(srsv_ctx_set_preempt(G.sim->ctx, false), 0);
	esim_freeze(G.sim, true);
	for (unsigned ms = 0; ms < QUIESCE_MS; ms++) {
		bool busy = esim_inside(G.sim) != 0;

		for (int p = 0; p < NR_POOLS; p++)
			busy |= esim_snap(pools[p]).flushing;
		if (!busy)
			return;
		esim_sleep_ms(1);
	}
	ck_abort_msg("the workers never went idle");
}

/* A may_use mismatch: every owner's share, for the failure report. */
static void dump_owners(struct srsv_ctx *ctx, int p)
{
	for (int i = 0; i < NR_THREADS; i++) {
		struct srsv_rsv_info info = { 0 };

		if (srsv_rsv_get_info(&G.w[i].rsv, &info))
			fprintf(stderr, "# thread %d: no rsv info\n", i);
		fprintf(stderr, "# thread %d: holds %" PRIu64 ", rsv %" PRIu64
			" of %" PRIu64 "\n", i, G.w[i].b.held[p],
			info.reserved, info.size);
	}
	for (size_t i = 0; i < NR_STD; i++) {
		struct srsv_rsv_info info = { 0 };

		if (srsv_rsv_get_info(srsv_ctx_rsv(ctx, std_types[i]), &info))
			fprintf(stderr, "# standard rsv %d: no info\n",
				(int)std_types[i]);
		fprintf(stderr, "# standard rsv %d: %" PRIu64 " of %" PRIu64
			"\n", (int)std_types[i], info.reserved, info.size);
	}
	fprintf(stderr, "# main thread: %" PRIu64 "\n", G.main_held_meta);
}

/* Everything the threads' books say, checked against the library. */
static void checkpoint(const struct start_state *st, uint64_t seed,
		       const char *when)
{
	struct srsv_ctx *ctx = G.sim->ctx;
	struct srsv_space *pools[NR_POOLS] = {
		srsv_ctx_space(ctx, SRSV_POOL_DATA),
		srsv_ctx_space(ctx, SRSV_POOL_METADATA),
	};
	uint64_t held[NR_POOLS] = { 0 }, alloc[NR_POOLS] = { 0 };
	uint64_t used[NR_POOLS] = { 0 }, rsvs = 0;
	uint64_t tickets = 0, granted = 0, failed = 0, at_once = 0;
	uint64_t lib_granted = 0, lib_failed = 0;

	quiesce(pools);
	for (int i = 0; i < NR_THREADS; i++) {
		struct worker *w = &G.w[i];
		struct srsv_rsv_info info;
		struct srsv_quota_info qi;

		ck_assert_msg(w->unexpected == 0, "%" PRIu64 " unexpected "
			      "results (seed %" PRIu64 "); first: %s",
			      w->unexpected, seed, w->first_unexpected);
		for (int p = 0; p < NR_POOLS; p++) {
			held[p] += w->b.held[p];
			alloc[p] += w->b.allocated[p];
			used[p] += w->b.used[p];
		}
		held[P_DATA] += w->b.dl_data;
		ck_assert_int_eq(srsv_rsv_get_info(&w->rsv, &info), 0);
		rsvs += info.reserved;
		tickets += w->tickets;
		granted += w->tickets_granted;
		failed += w->tickets_failed;
		at_once += w->granted_at_once;
		/* The tenant is the thread's alone: exact. */
		quota_settle(w);
		ck_assert_int_eq(srsv_quota_snapshot(w->quota, &qi), 0);
		for (int k = 0; k < SRSV_QUOTA_KIND_COUNT; k++) {
			uint64_t books = w->b.quota[k] +
				(k == SRSV_QUOTA_DATA ? w->b.dl_quota_data :
				 k == SRSV_QUOTA_META_PREALLOC ?
				 w->b.dl_quota_meta : 0);

			ck_assert_msg(qi.reserved[k] == books,
				      "%s: tenant %d %s: %" PRIu64 " != books %"
				      PRIu64 " (seed %" PRIu64 ")", when, i,
				      srsv_quota_kind_name(k), qi.reserved[k],
				      books, seed);
		}
		ck_assert_uint_eq(qi.used, w->b.quota_used);
		ck_assert_uint_eq(qi.charged, qi.used + qi.reserved[0] +
				  qi.reserved[1] + qi.reserved[2]);
		if (w->bg_have) {
			struct srsv_bgroup_info gi;
			int ret = srsv_bgroup_get(ctx, w->bg_start, &gi);

			ck_assert_msg(ret == 0 ? gi.used == w->bg_used :
				      ret == -ENOENT && !w->bg_used,
				      "%s: thread %d's group: %d, used %" PRIu64
				      ", books %" PRIu64 " (seed %" PRIu64 ")",
				      when, i, ret, ret ? 0 : gi.used,
				      w->bg_used, seed);
		}
	}
	rsvs += std_reserved(ctx);
	held[P_META] += G.main_held_meta;

	for (int p = 0; p < NR_POOLS; p++) {
		struct srsv_space_info s = esim_snap(pools[p]);
		int kind = s.kind;
		uint64_t engine = esim_held(G.sim, (enum srsv_pool)kind);
		/* Every byte of may_use has an owner. */
		uint64_t expect_may_use = held[p] + engine +
					  (p == P_META ? rsvs : 0);
		uint64_t pinned = st->pool[p].pinned +
			__atomic_load_n(&G.pinned_by_threads[kind],
					__ATOMIC_ACQUIRE) -
			__atomic_load_n(&G.unpinned_by_engine[kind],
					__ATOMIC_ACQUIRE);

		if (s.may_use != expect_may_use)
			dump_owners(ctx, p);
		ck_assert_msg(s.may_use == expect_may_use,
			      "%s: %s may_use %" PRIu64 " != threads %" PRIu64
			      " + engine %" PRIu64 " + rsvs %" PRIu64
			      " (seed %" PRIu64 ")", when,
			      srsv_pool_name(kind), s.may_use, held[p], engine,
			      p == P_META ? rsvs : 0, seed);
		ck_assert_msg(s.reserved == st->pool[p].reserved + alloc[p],
			      "%s: %s reserved %" PRIu64 " != %" PRIu64, when,
			      srsv_pool_name(kind), s.reserved,
			      st->pool[p].reserved + alloc[p]);
		ck_assert_msg(s.used == st->pool[p].used + used[p],
			      "%s: %s used %" PRIu64 " != %" PRIu64, when,
			      srsv_pool_name(kind), s.used,
			      st->pool[p].used + used[p]);
		ck_assert_msg(s.pinned == pinned, "%s: %s pinned %" PRIu64
			      " != %" PRIu64, when, srsv_pool_name(kind),
			      s.pinned, pinned);
		/* No counter wrapped below zero (a wrapped one is huge). */
		ck_assert_uint_le(s.may_use, 2 * (s.total + s.unallocated));
		ck_assert_uint_le(s.used + s.reserved + s.pinned,
				  2 * (s.total + s.unallocated));
		ck_assert_uint_eq(s.total, st->pool[p].total);
		ck_assert_uint_eq(s.readonly, st->pool[p].readonly);
		ck_assert_uint_eq(s.zone_unusable, st->pool[p].zone_unusable);
		ck_assert_uint_eq(s.nr_tickets + s.nr_priority_tickets, 0);
		ck_assert_uint_eq(s.reclaim_size, 0);
		lib_granted += s.tickets_granted - st->pool[p].tickets_granted;
		lib_failed += s.tickets_failed - st->pool[p].tickets_failed;
	}
	/*
	 * Every ticket the threads saw queued ended exactly once (a ticket
	 * ended twice would count twice), and no other ticket failed.  The
	 * pools may count a few more grants: tickets queued and granted
	 * before srsv_ticket_reserve() returned 0, which the caller cannot
	 * tell from the fast path.
	 */
	ck_assert_msg(lib_failed == failed && granted + failed == tickets &&
		      lib_granted >= granted &&
		      lib_granted - granted <= at_once,
		      "%s: tickets: threads queued %" PRIu64 ", saw %" PRIu64
		      " granted and %" PRIu64 " failed (and %" PRIu64
		      " granted at once); pools counted %" PRIu64 " granted and %"
		      PRIu64 " failed (seed %" PRIu64 ")", when, tickets,
		      granted, failed, at_once, lib_granted, lib_failed, seed);
	ck_assert_uint_eq(esim_action_errors(G.sim, NULL), 0);
	ck_assert_uint_eq(esim_reenter_results(G.sim).release_errors, 0);
}

/* ---- giving everything back ---- */

static void release_all(struct worker *w)
{
	struct books *b = &w->b;

	while (w->nr_dres) {
		struct srsv_delalloc_resv *r = &w->dres[--w->nr_dres];
		struct srsv_delalloc_resv copy = *r;

		ck_assert_int_eq(srsv_delalloc_release(r), 0);
		dres_books(w, &copy, false);
	}
	for (int p = 0; p < NR_POOLS; p++) {
		struct srsv_space *s = w->pool[p];

		if (b->held[p])
			ck_assert_int_eq(srsv_space_release(s, b->held[p]), 0);
		if (b->allocated[p])
			ck_assert_int_eq(srsv_space_free_reserved(s,
					 b->allocated[p]), 0);
		if (b->used[p]) {
			ck_assert_int_eq(srsv_space_pin(s, b->used[p]), 0);
			ck_assert_int_eq(srsv_space_unpin(s, b->used[p]), 0);
		}
		b->held[p] = b->allocated[p] = b->used[p] = 0;
	}
	if (w->bg_used)
		ck_assert_int_eq(bg_free(w, w->bg_used, false), 0);
	w->bg_used = 0;
	ck_assert_int_eq(srsv_rsv_destroy(&w->rsv), 0);
	quota_settle(w);
	for (int k = 0; k < SRSV_QUOTA_KIND_COUNT; k++)
		ck_assert_int_eq(srsv_quota_release(w->quota,
				 (enum srsv_quota_kind)k, b->quota[k]), 0);
	ck_assert_int_eq(srsv_quota_free_used(w->quota, b->quota_used), 0);
	ck_assert_int_eq(srsv_quota_destroy(w->quota), 0);
}

static unsigned env_unsigned(const char *name, unsigned dflt)
{
	const char *v = getenv(name);

	return v && *v ? (unsigned)strtoul(v, NULL, 0) : dflt;
}

static uint64_t env_seed(void)
{
	const char *v = getenv("SRSV_STRESS_SEED");
	struct timespec ts;

	if (v && *v)
		return strtoull(v, NULL, 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

START_TEST(test_model_based_stress)
{
	unsigned seconds = env_unsigned("SRSV_STRESS_SECONDS", DEFAULT_SECONDS);
	uint64_t seed = env_seed(), ops = 0, tickets = 0, checkpoints = 0;
	struct srsv_config cfg;
	struct start_state st;
	struct srsv_space *pools[NR_POOLS];
	struct srsv_rsv *dr;
	pthread_t th[NR_THREADS];
	uint64_t deadline;

	printf("# mbstress: seed %" PRIu64 " (SRSV_STRESS_SEED replays), %u s,"
	       " %d threads\n", seed, seconds, NR_THREADS);
	fflush(stdout);
	memset(&G, 0, sizeof(G));
	G.sim = esim_new();
	esim_config_init(G.sim, &cfg, 0);
	/* The same run with per-CPU caches (meson test mbstress-cache). */
	cfg.cpu_cache_bytes = env_unsigned("SRSV_STRESS_CACHE_BYTES", 0);
	cfg.pool_bytes[SRSV_POOL_DATA] = DATA_BYTES;
	cfg.pool_bytes[SRSV_POOL_METADATA] = META_BYTES;
	cfg.pool_bytes[SRSV_POOL_SYSTEM] = MiB;
	cfg.unallocated_bytes = UNALLOCATED;
	cfg.global_rsv_bytes = GLOBAL_BYTES;
	cfg.quota_flush = quota_flush;
	/* Dirty data reported, so that the clamp and the preemptive
	 * heuristic see a delalloc workload. */
	ck_assert_int_eq(esim_ctx_create(G.sim, &cfg), 0);
	ck_assert_int_eq(srsv_ctx_account_delalloc(G.sim->ctx, 64 * MiB, 0), 0);
	{
		struct srsv_bgroup_config bc;

		ck_assert_int_eq(srsv_bgroup_config_init(&bc), 0);
		bc.dynamic_reclaim = false;
		bc.periodic_reclaim = false;
		ck_assert_int_eq(srsv_bgroups_init(G.sim->ctx, &bc), 0);
		G.trans = 1;
		G.next_addr = UINT64_C(1) << 40;
	}
	script_engine(G.sim);
	pools[P_DATA] = esim_space(G.sim, SRSV_POOL_DATA);
	pools[P_META] = esim_space(G.sim, SRSV_POOL_METADATA);
	for (int p = 0; p < NR_POOLS; p++)
		st.pool[p] = esim_snap(pools[p]);
	for (size_t i = 0; i < NR_STD; i++)
		ck_assert_int_eq(srsv_rsv_get_info(srsv_ctx_rsv(G.sim->ctx,
				 std_types[i]), &st.std[i]), 0);

	/* Room in the delayed-refs rsv, for spills: size without bytes (the
	 * main thread holds them). */
	dr = srsv_ctx_rsv(G.sim->ctx, SRSV_RSV_DELREFS);
	ck_assert_int_eq(srsv_rsv_add(dr, DELREFS_ROOM, SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_rsv_use(dr, DELREFS_ROOM), 0);
	G.main_held_meta = DELREFS_ROOM;

	ck_assert_int_eq(pthread_barrier_init(&G.park, NULL, NR_THREADS + 1), 0);
	ck_assert_int_eq(pthread_barrier_init(&G.resume, NULL, NR_THREADS + 1),
			 0);
	for (int i = 0; i < NR_THREADS; i++) {
		struct worker *w = &G.w[i];

		w->id = i;
		w->rng = (seed + 1) * UINT64_C(0x9e3779b97f4a7c15) +
			 (uint64_t)i * 2 + 1;
		w->ctx = G.sim->ctx;
		w->pool[P_DATA] = pools[P_DATA];
		w->pool[P_META] = pools[P_META];
		ck_assert_int_eq(srsv_rsv_init(&w->rsv, pools[P_META],
					       SRSV_RSV_TEMP), 0);
		ck_assert_int_eq(srsv_quota_create(G.sim->ctx, (uint64_t)i,
						   QUOTA_LIMIT, &w->quota), 0);
	}
	for (int i = 0; i < NR_THREADS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, worker_main,
						&G.w[i]), 0);

	deadline = now_ms() + (uint64_t)seconds * 1000;
	for (;;) {
		bool last = now_ms() >= deadline;
		char when[32];

		if (!last)
			esim_sleep_ms(CHECK_MS);
		__atomic_store_n(&G.pause, 1, __ATOMIC_RELEASE);
		pthread_barrier_wait(&G.park);
		__atomic_store_n(&G.pause, 0, __ATOMIC_RELEASE);
		snprintf(when, sizeof(when), "checkpoint %" PRIu64,
			 ++checkpoints);
		checkpoint(&st, seed, when);
		if (last)
			__atomic_store_n(&G.stop, 1, __ATOMIC_RELEASE);
		else
			ck_assert_int_eq(srsv_ctx_set_preempt(G.sim->ctx, true),
					 0);
		esim_freeze(G.sim, false);
		pthread_barrier_wait(&G.resume);
		if (last)
			break;
	}
	for (int i = 0; i < NR_THREADS; i++)
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
	for (int i = 0; i < NR_THREADS; i++) {
		ops += G.w[i].ops;
		tickets += G.w[i].tickets;
	}
	printf("# mbstress: %" PRIu64 " ops, %" PRIu64 " tickets, %" PRIu64
	       " checkpoints, %" PRIu64 " flush calls (%" PRIu64 " commits)\n",
	       ops, tickets, checkpoints, esim_total_calls(G.sim),
	       esim_calls(G.sim, SRSV_STATE_COMMIT_TRANS));
	ck_assert_uint_gt(ops, 0);
	ck_assert_uint_gt(tickets, 0);

	/* Give everything back: every counter returns to its start. */
	for (int i = 0; i < NR_THREADS; i++)
		release_all(&G.w[i]);
	for (int p = 0; p < NR_POOLS; p++) {
		uint64_t engine = esim_held(G.sim,
				(enum srsv_pool)srsv_space_kind(pools[p]));

		/* The engine's share (its own books are not needed any
		 * more: no flush runs now). */
		if (engine)
			ck_assert_int_eq(srsv_space_release(pools[p], engine), 0);
	}
	/* Block groups: the last frees commit, the emptied groups go back
	 * (the last one of the pool by hand), unallocated is whole again. */
	{
		struct srsv_bgroup_stats bst;
		struct srsv_bgroup_info gi;
		uint64_t added = 0, gone = 0;

		ck_assert_int_ge(srsv_ctx_commit_done(G.sim->ctx, G.trans), 0);
		while (srsv_bgroup_next(G.sim->ctx, 0, &gi) == 0) {
			ck_assert_uint_eq(gi.used + gi.pinned, 0);
			ck_assert_int_eq(srsv_bgroup_remove(G.sim->ctx,
					 SRSV_POOL_SYSTEM, gi.start), 0);
		}
		ck_assert_int_eq(srsv_bgroup_stats(G.sim->ctx, &bst), 0);
		for (int i = 0; i < NR_THREADS; i++) {
			added += G.w[i].bg_added;
			gone += G.w[i].bg_gone;
		}
		ck_assert_uint_eq(bst.added, added);
		ck_assert_uint_eq(bst.returned, added);
		ck_assert_uint_le(gone, added);
		ck_assert_uint_eq(srsv_ctx_unallocated(G.sim->ctx), UNALLOCATED);
		printf("# mbstress: %" PRIu64 " block groups, %" PRIu64
		       " returned at a commit while in use, %" PRIu64
		       " transactions (%" PRIu64 " reported after a later"
		       " one)\n", added, gone, G.trans, G.commits_covered);
	}
	/* The standard rsvs back to their start: the delayed-refs room is
	 * dropped, the global reserve refilled to its size. */
	ck_assert_int_eq(srsv_rsv_release(dr, SRSV_RSV_ALL, NULL), 0);
	ck_assert_int_eq(srsv_space_release(pools[P_META], G.main_held_meta), 0);
	ck_assert_int_eq(srsv_ctx_resize_global_rsv(G.sim->ctx, GLOBAL_BYTES),
			 0);
	for (size_t i = 0; i < NR_STD; i++) {
		struct srsv_rsv_info info;

		ck_assert_int_eq(srsv_rsv_get_info(srsv_ctx_rsv(G.sim->ctx,
				 std_types[i]), &info), 0);
		ck_assert_msg(info.size == st.std[i].size &&
			      info.reserved == st.std[i].reserved,
			      "std rsv %d: size %" PRIu64 " reserved %" PRIu64
			      ", at the start %" PRIu64 " / %" PRIu64,
			      std_types[i], info.size, info.reserved,
			      st.std[i].size, st.std[i].reserved);
	}
	for (int p = 0; p < NR_POOLS; p++) {
		struct srsv_space_info end;
		uint64_t pinned = esim_snap(pools[p]).pinned;

		if (pinned)
			ck_assert_int_eq(srsv_space_unpin(pools[p], pinned), 0);
		end = esim_snap(pools[p]);
		ck_assert_uint_eq(end.total, st.pool[p].total);
		ck_assert_uint_eq(end.used, st.pool[p].used);
		ck_assert_uint_eq(end.pinned, 0);
		ck_assert_uint_eq(end.reserved, st.pool[p].reserved);
		ck_assert_msg(end.may_use == st.pool[p].may_use,
			      "%s may_use %" PRIu64 " at the end, %" PRIu64
			      " at the start (seed %" PRIu64 ")",
			      srsv_pool_name(end.kind), end.may_use,
			      st.pool[p].may_use, seed);
		ck_assert_uint_eq(end.readonly, st.pool[p].readonly);
		ck_assert_uint_eq(end.zone_unusable, st.pool[p].zone_unusable);
		ck_assert_uint_eq(end.reclaim_size, 0);
		ck_assert_uint_eq(end.nr_tickets + end.nr_priority_tickets, 0);
	}
	pthread_barrier_destroy(&G.park);
	pthread_barrier_destroy(&G.resume);
	esim_free(G.sim);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mbstress");
	TCase *tc = tcase_create("mbstress");
	SRunner *sr;
	int failed;

	/* Check's timeout must outlast a long run (and its checkpoints). */
	tcase_set_timeout(tc, env_unsigned("SRSV_STRESS_SECONDS",
					   DEFAULT_SECONDS) * 3 + 120);
	tcase_add_test(tc, test_model_based_stress);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
