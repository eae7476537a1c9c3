/* SPDX-License-Identifier: MIT */
/*
 * The reference model of libspacersv's accounting (see model.h).
 *
 * HOW TO READ IT
 *
 * Every function is the library's documented behaviour written the
 * simplest way: integers, arrays, one thread.  Where the headers leave a
 * detail open (which flush state comes first, what a walk does when it
 * runs out of states), the model follows btrfs's space-info.c and
 * block-rsv.c.  Sums that could
 * exceed 64 bits in contrived states (forced read-only space on top of an
 * overcommitted pool) are computed in 128 bits: the model has no
 * wrap-around, so a wrap in the library shows up as a disagreement.
 *
 * Places where the model says what the library SHOULD do, where it did
 * otherwise when this was written (docs/reliability.md, "Known
 * disagreements", keeps the current list):
 * - a forced pool growth (ALLOC_CHUNK_FORCE) that added nothing marks the
 *   pool full whatever the callback returned: otherwise a callback that
 *   keeps failing with, say, -EIO makes the data walks loop for ever
 *   (fixed in the library since);
 * - an async metadata walk whose first-cycle states are all skipped (an
 *   overriding array of only DELALLOC_FULL / ALLOC_CHUNK_FORCE) ends its
 *   first cycle at once, like any other walk, instead of never starting;
 * - a block group of 2^62 bytes in a pool of factor 4 needs 2^64 raw
 *   bytes: -ENOSPC (the library's product wrapped to 0 and took the group
 *   for nothing), and statfs sums raw bytes without wrapping (fixed in the
 *   library since, with the block groups' model);
 * - the use_fallback chain of an rsv in a pool that takes no EMERGENCY
 *   reservation (a DATA pool) ends with -ENOSPC, its documented "every
 *   step failed", not with the -EINVAL of the mode check;
 * and, open (tests/test_fuzz_findings.c, suite 'pending'):
 * - a normal ticket that starts the flusher raises the clamp of a data
 *   pool that is flushed preemptively, and otherwise only while ordered <
 *   delalloc (btrfs's maybe_clamp_preempt()): not on every SYSTEM pool's
 *   ticket, nor on a data pool's with SRSV_CTX_NO_DATA_PREEMPT;
 * - the engine's reclaimable figures are summed without wrapping
 *   (saturated at 2^64 - 1);
 * - a waiter on a MIXED pool runs the walk pending for the pool, whichever
 *   kind its first ticket started, not only its own mode's (else it waits
 *   for ever in a single-threaded engine);
 * - srsv_bgroup_reclaim_take() breaks ties in used bytes by the order the
 *   candidates were marked, across pools (btrfs's one reclaim list), not
 *   by pool kind first.
 */
#include <errno.h>
#include <string.h>

#include "model.h"

typedef unsigned __int128 u128;

#define GIB (UINT64_C(1) << 30)
/* btrfs: maybe_fail_all_tickets() after "commit_cycles > 2". */
#define MAX_COMMIT_CYCLES 2
/* btrfs keeps 10% of the global reserve out of reach of stealing. */
#define STEAL_KEEP_PERCENT 10
/* srsv_zoned_finish_one() retries a choice that went busy this often. */
#define FINISH_ONE_TRIES 4

/* Internal charge modes (srsv__space_try_charge()). */
#define CHARGE_NO_OVERCOMMIT (-1)
#define CHARGE_EMERGENCY (-2)

/* The slot blocking reserve calls use. */
#define INTERNAL_SLOT MODEL_TICKETS

static const enum srsv_flush_state def_async_md[] = {
	SRSV_STATE_DELAYED_ITEMS_NR, SRSV_STATE_DELAYED_ITEMS,
	SRSV_STATE_DELAYED_REFS_NR, SRSV_STATE_DELAYED_REFS,
	SRSV_STATE_DELALLOC, SRSV_STATE_DELALLOC_WAIT,
	SRSV_STATE_DELALLOC_FULL, SRSV_STATE_ALLOC_CHUNK,
	SRSV_STATE_ALLOC_CHUNK_FORCE, SRSV_STATE_RUN_DELAYED_IPUTS,
	SRSV_STATE_COMMIT_TRANS, SRSV_STATE_RESET_ZONES,
};
static const enum srsv_flush_state def_async_data[] = {
	SRSV_STATE_DELALLOC_FULL, SRSV_STATE_RUN_DELAYED_IPUTS,
	SRSV_STATE_COMMIT_TRANS, SRSV_STATE_RECLAIM_ZONES,
	SRSV_STATE_RESET_ZONES, SRSV_STATE_ALLOC_CHUNK_FORCE,
};
static const enum srsv_flush_state def_priority[] = {
	SRSV_STATE_DELAYED_ITEMS_NR, SRSV_STATE_DELAYED_ITEMS,
	SRSV_STATE_RESET_ZONES, SRSV_STATE_ALLOC_CHUNK,
};
static const enum srsv_flush_state def_evict[] = {
	SRSV_STATE_DELAYED_ITEMS_NR, SRSV_STATE_DELAYED_ITEMS,
	SRSV_STATE_DELAYED_REFS_NR, SRSV_STATE_DELAYED_REFS,
	SRSV_STATE_DELALLOC, SRSV_STATE_DELALLOC_WAIT,
	SRSV_STATE_DELALLOC_FULL, SRSV_STATE_ALLOC_CHUNK,
	SRSV_STATE_COMMIT_TRANS, SRSV_STATE_RESET_ZONES,
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t mult_perc(uint64_t v, unsigned pct)
{
	return v / 100 * pct + v % 100 * pct / 100;
}

static bool bad_size(uint64_t bytes)
{
	return bytes == 0 || bytes > SRSV_MAX_BYTES;
}

/*
 * Counters refuse to grow past 2 * SRSV_MAX_BYTES (a pool is at most
 * SRSV_MAX_BYTES; twice that leaves room for forced read-only space) and
 * to go below 0: -EINVAL, nothing changed.
 */
static int ctr_add(uint64_t *c, uint64_t bytes)
{
	if (bytes > SRSV_MAX_BYTES || *c + bytes > 2 * SRSV_MAX_BYTES)
		return -EINVAL;
	*c += bytes;
	return 0;
}

static int ctr_sub(uint64_t *c, uint64_t bytes)
{
	if (*c < bytes)
		return -EINVAL;
	*c -= bytes;
	return 0;
}

static u128 claimed(const struct model_pool *p);

/*
 * The counters that are not reservations (used, reserved, pinned,
 * readonly, zone_unusable) are also bounded as a sum, to 2^63, so that no
 * sum of counters can wrap.  Moves between two of them add first and
 * subtract second, so the bound applies to the sum plus the moving bytes.
 */
static int claim_add(struct model_pool *p, uint64_t *c, uint64_t bytes)
{
	if (claimed(p) + bytes > 2 * SRSV_MAX_BYTES)
		return -EINVAL;
	return ctr_add(c, bytes);
}

static struct model_pool *pool_of(struct model *m, int pool)
{
	if (pool < 0 || pool >= SRSV_POOL_COUNT || !m->pools[pool].exists)
		return NULL;
	return &m->pools[pool];
}

static int metadata_pool(const struct model *m)
{
	return m->pools[SRSV_POOL_MIXED].exists ? SRSV_POOL_MIXED :
						  SRSV_POOL_METADATA;
}

int model_space_of(const struct model *m, int kind)
{
	if (kind < 0 || kind >= SRSV_POOL_COUNT)
		return -1;
	if (m->pools[SRSV_POOL_MIXED].exists &&
	    (kind == SRSV_POOL_DATA || kind == SRSV_POOL_METADATA))
		return SRSV_POOL_MIXED;
	return m->pools[kind].exists ? kind : -1;
}

static u128 claimed(const struct model_pool *p)
{
	return (u128)p->used + p->reserved + p->pinned + p->readonly +
	       p->zone_unusable;
}

/* ---- tracing the callback ---- */

static void log_call(struct model *m, int pool, int state, uint64_t bytes)
{
	if (m->log_len < MODEL_LOG) {
		m->log[m->log_len].pool = pool;
		m->log[m->log_len].state = state;
		m->log[m->log_len].bytes = bytes;
		m->log_len++;
	}
	m->log_total++;
}

/* ---- admission ---- */

/* calc_available_free_space() */
static uint64_t avail_free(const struct model *m, int mode)
{
	uint64_t avail = m->unallocated / m->raid_factor;

	if (!avail || avail <= m->data_chunk_allowance)
		return 0;
	avail -= m->data_chunk_allowance;
	if (mode == SRSV_FLUSH_ALL || mode == SRSV_FLUSH_ALL_STEAL)
		avail >>= 6;
	else
		avail >>= 1;
	if (m->flags & SRSV_CTX_ZONED)
		avail -= avail % m->zone_bytes;
	return avail;
}

static bool fits(const struct model *m, const struct model_pool *p,
		 uint64_t bytes, int mode)
{
	u128 used = claimed(p) + p->may_use;

	if (mode == CHARGE_EMERGENCY)
		return claimed(p) + bytes <= p->total;
	if (used + bytes <= p->total)
		return true;
	if (mode == CHARGE_NO_OVERCOMMIT || p->is_data)
		return false;
	return used + bytes < (u128)p->total + avail_free(m, mode);
}

static bool charge(struct model *m, struct model_pool *p, uint64_t bytes,
		   int mode)
{
	if (!fits(m, p, bytes, mode))
		return false;
	p->may_use += bytes;
	return true;
}

/* ---- tickets ---- */

static void queue_del(struct model_pool *p, int q, int t)
{
	for (unsigned i = 0; i < p->qlen[q]; i++) {
		if (p->queue[q][i] != t)
			continue;
		memmove(&p->queue[q][i], &p->queue[q][i + 1],
			(p->qlen[q] - i - 1) * sizeof(int));
		p->qlen[q]--;
		return;
	}
}

static void ticket_remove(struct model *m, struct model_pool *p, int t)
{
	struct model_ticket *tk = &m->tickets[t];

	queue_del(p, tk->priority ? MODEL_Q_PRIORITY : MODEL_Q_NORMAL, t);
	p->reclaim_size -= tk->bytes;
}

static void ticket_end(struct model *m, struct model_pool *p, int t,
		       int error)
{
	struct model_ticket *tk = &m->tickets[t];

	tk->error = error;
	tk->state = MODEL_T_DONE;
	if (error)
		p->failed++;
	else
		p->granted++;
	/* srsv_space_stats::error_failures: tickets ended with the ctx's
	 * error (whatever ended them: the error's failing of every ticket,
	 * a walk, a cancel whose errno happens to be the same). */
	if (error && error == m->error)
		p->error_failures++;
}

/* btrfs_try_granting_tickets() */
static void try_grant(struct model *m, struct model_pool *p)
{
	static const int modes[2] = { SRSV_NO_FLUSH, SRSV_FLUSH_ALL };

	for (int q = 0; q < 2; q++) {
		while (p->qlen[q]) {
			int t = p->queue[q][0];
			uint64_t b = m->tickets[t].bytes;

			/* A mover's bytes come from its reserve first. */
			if (m->tickets[t].mover && p->mover_reserved >= b)
				p->mover_reserved -= b;
			else if (!charge(m, p, b, modes[q]))
				break;
			ticket_remove(m, p, t);
			m->tickets[t].bytes = 0;
			p->tickets_id++;
			ticket_end(m, p, t, 0);
		}
	}
}

static void fail_all(struct model *m, struct model_pool *p, int error)
{
	for (int q = 0; q < 2; q++) {
		while (p->qlen[q]) {
			int t = p->queue[q][0];

			ticket_remove(m, p, t);
			ticket_end(m, p, t, error);
		}
	}
}

/* ---- flushing ---- */

static void zoned_flush(struct model *m, int pool, int state, uint64_t wanted);
static unsigned bg_prepare(struct model *m, int pool, uint64_t *prev);
static void bg_finish(struct model *m, uint64_t prev);

static int flush_space(struct model *m, int pool, uint64_t bytes, int state)
{
	struct model_pool *p = &m->pools[pool];
	uint64_t total_before = p->total;
	/* A state that answered -EOPNOTSUPP is not called again. */
	bool called = m->hooks.flush && !(p->disabled >> state & 1);
	int ret = -EOPNOTSUPP;
	uint64_t prev_round = 0;

	/* RECLAIM_CHUNKS calls the engine only with candidate groups to
	 * relocate (btrfs_reclaim_bgs_work() has nothing to do without
	 * them), after sweeping the other pools for them; without any the
	 * state is a no-op that answers -EOPNOTSUPP and is not disabled. */
	if (state == SRSV_STATE_RECLAIM_CHUNKS && called)
		called = bg_prepare(m, pool, &prev_round) > 0;

	if (m->zoned && (state == SRSV_STATE_RESET_ZONES ||
			 state == SRSV_STATE_RECLAIM_ZONES))
		zoned_flush(m, pool, state, bytes);
	if (called) {
		log_call(m, pool, state, bytes);
		m->in_callback++;
		ret = m->hooks.flush(m, pool, state, bytes, m->hooks.user);
		m->in_callback--;
		/* ... unless the library implements it: the zoned states of
		 * a ctx created zoned, before srsv_zoned_init() too (the
		 * library decides by the ctx flag, lib/flush.c
		 * library_state(), so that a reset asked for before the
		 * zoned state exists is not disabled for ever). */
		if (ret == -EOPNOTSUPP &&
		    !((m->flags & SRSV_CTX_ZONED) &&
		      (state == SRSV_STATE_RESET_ZONES ||
		       state == SRSV_STATE_RECLAIM_ZONES)))
			p->disabled |= UINT64_C(1) << state;
		/* The groups the engine took and did not end. */
		if (state == SRSV_STATE_RECLAIM_CHUNKS)
			bg_finish(m, prev_round);
	}
	if (state == SRSV_STATE_ALLOC_CHUNK ||
	    state == SRSV_STATE_ALLOC_CHUNK_FORCE) {
		bool grew = p->total != total_before;

		/*
		 * -ENOSPC or "no such state": the pool cannot grow.  A forced
		 * growth that added nothing, whatever it returned, means the
		 * same (see the file comment).
		 */
		if (ret == -ENOSPC || ret == -EOPNOTSUPP ||
		    (state == SRSV_STATE_ALLOC_CHUNK_FORCE && !grew))
			p->full = true;
		if (ret == -ENOSPC)
			ret = 0;
	}
	if (called)
		p->flushes[state]++;
	return ret;
}

/* btrfs_calc_reclaim_metadata_size() */
static uint64_t calc_reclaim(const struct model *m, const struct model_pool *p)
{
	u128 to_reclaim = p->reclaim_size;
	u128 limit = (u128)p->total + avail_free(m, SRSV_FLUSH_ALL);
	u128 used = claimed(p) + p->may_use;

	if (limit < used)
		to_reclaim += used - limit;
	return to_reclaim > UINT64_MAX ? UINT64_MAX : (uint64_t)to_reclaim;
}

/* steal_from_global_rsv() */
static bool steal(struct model *m, struct model_pool *p, int t)
{
	struct model_ticket *tk = &m->tickets[t];
	struct model_rsv *g = &m->rsvs[SRSV_RSV_GLOBAL];

	if (!tk->steal || !g->valid || g->pool != p->kind)
		return false;
	if (g->reserved < mult_perc(g->size, STEAL_KEEP_PERCENT) + tk->bytes)
		return false;
	g->reserved -= tk->bytes;
	ticket_remove(m, p, t);
	tk->bytes = 0;
	p->tickets_id++;
	ticket_end(m, p, t, 0);
	return true;
}

/* maybe_fail_all_tickets(): true when a ticket was granted meanwhile. */
static bool maybe_fail_all(struct model *m, struct model_pool *p)
{
	uint64_t id = p->tickets_id;

	while (p->qlen[MODEL_Q_NORMAL] && id == p->tickets_id) {
		int t = p->queue[MODEL_Q_NORMAL][0];

		if (!m->error && steal(m, p, t))
			return true;
		ticket_remove(m, p, t);
		ticket_end(m, p, t, m->error ? m->error : -ENOSPC);
		if (!m->error)
			try_grant(m, p);
	}
	return id != p->tickets_id;
}

/* Shutdown or an engine error ends a walk, failing every ticket. */
static bool walk_interrupted(struct model *m, struct model_pool *p)
{
	if (m->closing) {
		fail_all(m, p, -ESHUTDOWN);
		return true;
	}
	if (m->error) {
		fail_all(m, p, m->error);
		return true;
	}
	return false;
}

static bool skip_first_cycle(int state)
{
	return state == SRSV_STATE_DELALLOC_FULL ||
	       state == SRSV_STATE_ALLOC_CHUNK_FORCE;
}

static bool array_has(const struct srsv_state_array *arr, int state);

/*
 * A rescue round before a walk fails its tickets (bgroup.h, types.h's
 * RECLAIM_CHUNKS): only with a group table, a pool that cannot grow
 * (full), no engine error, a walk whose array may commit, and fewer than
 * MODEL_MAX_RESCUES rounds so far.  RECLAIM_CHUNKS first; if the engine
 * was asked (anything but "not supported"), a commit follows and the
 * round counts.  True when it counted: the walk starts again.
 */
static bool try_rescue(struct model *m, int pool,
		       const struct srsv_state_array *arr, uint64_t bytes,
		       unsigned *rescues)
{
	struct model_pool *p = &m->pools[pool];

	if (*rescues >= MODEL_MAX_RESCUES || !m->bg_on || !p->full ||
	    m->error || !array_has(arr, SRSV_STATE_COMMIT_TRANS))
		return false;
	if (flush_space(m, pool, bytes, SRSV_STATE_RECLAIM_CHUNKS) ==
	    -EOPNOTSUPP)
		return false;
	flush_space(m, pool, bytes, SRSV_STATE_COMMIT_TRANS);
	(*rescues)++;
	return true;
}

/* btrfs_async_reclaim_metadata_space() */
static void async_md(struct model *m, int pool)
{
	struct model_pool *p = &m->pools[pool];
	const struct srsv_state_array *arr = &m->async_md;
	unsigned idx = 0, cycles = 0, rescues = 0;
	uint64_t to_reclaim, last;

	p->async_runs++;
	try_grant(m, p);
	if (!p->qlen[MODEL_Q_NORMAL] || walk_interrupted(m, p)) {
		p->flush = false;
		return;
	}
	to_reclaim = calc_reclaim(m, p);
	last = p->tickets_id;
	for (;;) {
		/* Do not empty the system of dirty data, or force a barely
		 * used chunk, before one commit had its chance. */
		while (idx < arr->nr && !cycles && skip_first_cycle(arr->states[idx]))
			idx++;
		if (idx >= arr->nr) {
			cycles++;
			if (cycles > MAX_COMMIT_CYCLES &&
			    try_rescue(m, pool, arr, to_reclaim, &rescues)) {
				/* One more cycle with what came back. */
				cycles--;
				idx = 0;
				if (walk_interrupted(m, p) ||
				    !p->qlen[MODEL_Q_NORMAL]) {
					p->flush = false;
					return;
				}
			} else if (cycles > MAX_COMMIT_CYCLES) {
				if (maybe_fail_all(m, p)) {
					idx = 0;
					cycles--;
				} else {
					p->flush = false;
					return;
				}
			} else {
				idx = 0;
			}
			continue;
		}
		flush_space(m, pool, to_reclaim, arr->states[idx]);
		if (!p->qlen[MODEL_Q_NORMAL] || walk_interrupted(m, p)) {
			p->flush = false;
			return;
		}
		to_reclaim = calc_reclaim(m, p);
		if (last == p->tickets_id) {
			idx++;
		} else {
			/* Progress: the cheap states work, keep using them. */
			last = p->tickets_id;
			idx = 0;
			if (cycles)
				cycles--;
		}
	}
}

static bool array_has(const struct srsv_state_array *arr, int state)
{
	for (unsigned i = 0; i < arr->nr; i++)
		if ((int)arr->states[i] == state)
			return true;
	return false;
}

/* btrfs_async_reclaim_data_space() */
static void async_data(struct model *m, int pool)
{
	struct model_pool *p = &m->pools[pool];
	const struct srsv_state_array *arr = &m->async_data;
	uint64_t last;
	unsigned idx, rescues = 0;

	p->async_runs++;
	try_grant(m, p);
	if (!p->qlen[MODEL_Q_NORMAL] || walk_interrupted(m, p)) {
		p->flush = false;
		return;
	}
	last = p->tickets_id;
again:
	while (!p->full) {
		flush_space(m, pool, p->reclaim_size,
			    SRSV_STATE_ALLOC_CHUNK_FORCE);
		if (!p->qlen[MODEL_Q_NORMAL] || walk_interrupted(m, p)) {
			p->flush = false;
			return;
		}
		last = p->tickets_id;
	}
	idx = 0;
	while (idx < arr->nr) {
		flush_space(m, pool, p->reclaim_size, arr->states[idx]);
		if (!p->qlen[MODEL_Q_NORMAL] || walk_interrupted(m, p)) {
			p->flush = false;
			return;
		}
		if (last == p->tickets_id) {
			idx++;
		} else {
			last = p->tickets_id;
			idx = 0;
		}
		if (idx >= arr->nr) {
			/* An array that cannot grow the pool counts as full. */
			bool full = p->full ||
				    !array_has(arr, SRSV_STATE_ALLOC_CHUNK_FORCE);

			/* Full: chunks of the other pools may come back;
			 * then grow again. */
			if (full && try_rescue(m, pool, arr, p->reclaim_size,
					       &rescues)) {
				if (!p->qlen[MODEL_Q_NORMAL] ||
				    walk_interrupted(m, p)) {
					p->flush = false;
					return;
				}
				last = p->tickets_id;
				goto again;
			}
			if (full && !maybe_fail_all(m, p)) {
				p->flush = false;
				return;
			}
			idx = 0;
		}
	}
}

/* priority_reclaim_data_space(): force growth while the pool can grow. */
static void priority_reclaim_data(struct model *m, int pool, int t)
{
	struct model_pool *p = &m->pools[pool];
	struct model_ticket *tk = &m->tickets[t];

	while (tk->state == MODEL_T_QUEUED && !p->full && !m->closing)
		flush_space(m, pool, tk->bytes, SRSV_STATE_ALLOC_CHUNK_FORCE);
	if (tk->state == MODEL_T_QUEUED && !m->closing) {
		ticket_remove(m, p, t);
		ticket_end(m, p, t, -ENOSPC);
		try_grant(m, p);
	}
}

/* priority_reclaim_metadata_space() */
static void priority_reclaim(struct model *m, int pool, int t)
{
	struct model_pool *p = &m->pools[pool];
	struct model_ticket *tk = &m->tickets[t];
	const struct srsv_state_array *arr;
	uint64_t to_reclaim;
	unsigned rescues = 0;

	/* FREE_SPACE_INODE, and a mover's FLUSH_DATA ticket (the only
	 * FLUSH_DATA tickets on the priority queue): force growth. */
	if (tk->mode == SRSV_FLUSH_FREE_SPACE_INODE ||
	    tk->mode == SRSV_FLUSH_DATA) {
		priority_reclaim_data(m, pool, t);
		return;
	}
	arr = tk->mode == SRSV_FLUSH_EVICT ? &m->evict : &m->priority;
	to_reclaim = calc_reclaim(m, p);
	for (;;) {
		for (unsigned i = 0; i < arr->nr; i++) {
			if (tk->state != MODEL_T_QUEUED || m->closing)
				return;
			flush_space(m, pool, to_reclaim, arr->states[i]);
		}
		if (tk->state != MODEL_T_QUEUED || m->closing)
			return;
		/* Out of states: a rescue round, then the array again. */
		if (!try_rescue(m, pool, arr, to_reclaim, &rescues))
			break;
		to_reclaim = calc_reclaim(m, p);
	}
	if (tk->state != MODEL_T_QUEUED || m->closing)
		return;
	if (m->error) {
		ticket_remove(m, p, t);
		ticket_end(m, p, t, m->error);
	} else if (!steal(m, p, t)) {
		ticket_remove(m, p, t);
		ticket_end(m, p, t, -ENOSPC);
	}
	try_grant(m, p);
}

/* ---- ctx ---- */

#define KNOWN_FLAGS (SRSV_CTX_MANUAL | SRSV_CTX_MIXED | SRSV_CTX_NO_PREEMPT | \
		     SRSV_CTX_ZONED | SRSV_CTX_FIXED_CLAMP | \
		     SRSV_CTX_NO_DATA_PREEMPT)

static bool states_ok(const struct srsv_state_array *a)
{
	if (a->nr > SRSV_MAX_STATES)
		return false;
	for (unsigned i = 0; i < a->nr; i++)
		if ((int)a->states[i] < SRSV_STATE_DELAYED_ITEMS_NR ||
		    (int)a->states[i] >= SRSV_STATE_COUNT)
			return false;
	return true;
}

static void states_default(struct srsv_state_array *a,
			   const enum srsv_flush_state *def, unsigned nr)
{
	if (a->nr)
		return;
	memcpy(a->states, def, nr * sizeof(*def));
	a->nr = nr;
}

static void pool_init(struct model_pool *p, int kind, uint64_t total)
{
	memset(p, 0, sizeof(*p));
	p->exists = true;
	p->kind = kind;
	p->is_data = kind == SRSV_POOL_DATA || kind == SRSV_POOL_MIXED;
	p->is_metadata = kind == SRSV_POOL_METADATA || kind == SRSV_POOL_MIXED;
	p->total = total;
	p->clamp = 1;
}

static void std_rsv_init(struct model *m, int type, int pool)
{
	struct model_rsv *r = &m->rsvs[type];

	memset(r, 0, sizeof(*r));
	r->valid = true;
	r->std = true;
	r->pool = pool;
	r->type = type;
}

static void global_settle(struct model *m);

int model_create(struct model *m, const struct srsv_config *cfg)
{
	uint64_t sum = 0, device, chunk;
	struct srsv_config c;

	memset(m, 0, sizeof(*m));
	for (int k = 0; k < SRSV_ZONE_KIND_COUNT; k++)
		m->dedicated[k] = -1;
	if (!cfg || cfg->size != sizeof(*cfg))
		return -EINVAL;
	c = *cfg;
	if (c.flags & ~(unsigned)KNOWN_FLAGS)
		return -EINVAL;
	if (!c.data_chunk_bytes)
		c.data_chunk_bytes = GIB;
	if (!c.metadata_raid_factor)
		c.metadata_raid_factor = 1;
	if (c.metadata_raid_factor > 4)
		return -EINVAL;
	if (!c.item_bytes)
		c.item_bytes = UINT64_C(16384) * 8 * 2;
	if (!c.zone_bytes)
		c.zone_bytes = UINT64_C(256) << 20;
	for (int i = 0; i < SRSV_POOL_COUNT; i++) {
		if (c.pool_bytes[i] > SRSV_MAX_BYTES ||
		    c.mover_reserve_bytes[i] > SRSV_MAX_BYTES)
			return -EINVAL;
		sum += c.pool_bytes[i];
	}
	if (sum > SRSV_MAX_BYTES || c.unallocated_bytes > SRSV_MAX_BYTES ||
	    c.device_bytes > SRSV_MAX_BYTES ||
	    c.global_rsv_bytes > SRSV_MAX_BYTES ||
	    c.item_bytes > SRSV_MAX_BYTES ||
	    c.data_chunk_bytes > SRSV_MAX_BYTES ||
	    c.zone_bytes > SRSV_MAX_BYTES ||
	    c.delalloc_extent_meta_bytes > SRSV_MAX_BYTES ||
	    c.delalloc_max_extent_bytes > SRSV_MAX_BYTES)
		return -EINVAL;
	if (!states_ok(&c.async_metadata_states) ||
	    !states_ok(&c.async_data_states) || !states_ok(&c.priority_states) ||
	    !states_ok(&c.evict_states))
		return -EINVAL;
	/* The model is single-threaded and has no preemptive flusher. */
	if ((c.flags & (SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT)) !=
	    (SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT))
		return -ENOTSUP;

	m->flags = c.flags;
	m->zone_bytes = c.zone_bytes;
	m->item_bytes = c.item_bytes;
	m->raid_factor = c.metadata_raid_factor;
	m->have_quota_flush = c.quota_flush != NULL;
	m->async_md = c.async_metadata_states;
	m->async_data = c.async_data_states;
	m->priority = c.priority_states;
	m->evict = c.evict_states;
	states_default(&m->async_md, def_async_md, ARRAY_SIZE(def_async_md) -
		       ((c.flags & SRSV_CTX_ZONED) ? 0 : 1));
	states_default(&m->async_data, def_async_data,
		       ARRAY_SIZE(def_async_data));
	states_default(&m->priority, def_priority, ARRAY_SIZE(def_priority));
	states_default(&m->evict, def_evict, ARRAY_SIZE(def_evict));

	device = c.device_bytes ? c.device_bytes : sum + c.unallocated_bytes;
	if (c.flags & SRSV_CTX_ZONED) {
		m->data_chunk_allowance = c.zone_bytes;
	} else {
		chunk = min64(c.data_chunk_bytes, mult_perc(device, 10));
		m->data_chunk_allowance = min64(chunk, GIB);
	}
	m->unallocated = c.unallocated_bytes;
	m->device_bytes = device;

	if (c.flags & SRSV_CTX_MIXED) {
		pool_init(&m->pools[SRSV_POOL_MIXED], SRSV_POOL_MIXED,
			  c.pool_bytes[SRSV_POOL_MIXED]);
	} else {
		pool_init(&m->pools[SRSV_POOL_DATA], SRSV_POOL_DATA,
			  c.pool_bytes[SRSV_POOL_DATA]);
		pool_init(&m->pools[SRSV_POOL_METADATA], SRSV_POOL_METADATA,
			  c.pool_bytes[SRSV_POOL_METADATA]);
	}
	pool_init(&m->pools[SRSV_POOL_SYSTEM], SRSV_POOL_SYSTEM,
		  c.pool_bytes[SRSV_POOL_SYSTEM]);

	std_rsv_init(m, SRSV_RSV_GLOBAL, metadata_pool(m));
	std_rsv_init(m, SRSV_RSV_TRANS, metadata_pool(m));
	std_rsv_init(m, SRSV_RSV_DELOPS, metadata_pool(m));
	std_rsv_init(m, SRSV_RSV_DELREFS, metadata_pool(m));
	std_rsv_init(m, SRSV_RSV_DELALLOC, metadata_pool(m));
	if (c.global_rsv_bytes) {
		m->rsvs[SRSV_RSV_GLOBAL].size = c.global_rsv_bytes;
		global_settle(m);
	}
	/* The movers' reserves, after the global one: each takes what fits
	 * of its size without overcommit; the rest comes as space comes
	 * back (reserves_refill()). */
	for (int k = 0; k < SRSV_POOL_COUNT; k++) {
		struct model_pool *p = &m->pools[k];
		u128 used = claimed(p) + p->may_use;
		uint64_t room;

		if (!p->exists)
			continue;
		p->mover_size = c.mover_reserve_bytes[k];
		room = used < p->total ? p->total - (uint64_t)used : 0;
		room = min64(room, p->mover_size);
		p->may_use += room;
		p->mover_reserved = room;
	}
	m->created = true;
	return 0;
}

void model_set_hooks(struct model *m, const struct model_hooks *hooks)
{
	m->hooks = *hooks;
}

int model_ctx_set_unallocated(struct model *m, uint64_t bytes)
{
	if (bytes > SRSV_MAX_BYTES)
		return -EINVAL;
	m->unallocated = bytes;
	/* More room to overcommit into: metadata tickets may fit now. */
	for (int i = 0; i < SRSV_POOL_COUNT; i++)
		if (m->pools[i].exists && !m->pools[i].is_data)
			try_grant(m, &m->pools[i]);
	return 0;
}

static int add_signed(uint64_t *v, int64_t delta)
{
	uint64_t mag = delta < 0 ? (uint64_t)0 - (uint64_t)delta :
				   (uint64_t)delta;

	if (mag > SRSV_MAX_BYTES)
		return -EINVAL;
	if (delta < 0) {
		if (mag > *v)
			return -EINVAL;
		*v -= mag;
	} else {
		if (*v + mag > SRSV_MAX_BYTES)
			return -EINVAL;
		*v += mag;
	}
	return 0;
}

int model_ctx_account_delalloc(struct model *m, int64_t delalloc_delta,
			       int64_t ordered_delta)
{
	uint64_t d = m->delalloc, o = m->ordered;

	if (add_signed(&d, delalloc_delta) || add_signed(&o, ordered_delta))
		return -EINVAL;
	m->delalloc = d;
	m->ordered = o;
	return 0;
}

int model_ctx_set_error(struct model *m, int error)
{
	/* -EINPROGRESS means "queued" to the reserve calls. */
	if (error >= 0 || error == -EINPROGRESS)
		return -EINVAL;
	m->error = error;
	for (int i = 0; i < SRSV_POOL_COUNT; i++)
		if (m->pools[i].exists)
			fail_all(m, &m->pools[i], error);
	return 0;
}

/* srsv_ctx_clear_error(): waiting is possible again; what failed stays
 * failed.  A shut-down ctx stays so. */
int model_ctx_clear_error(struct model *m)
{
	if (m->closing)
		return -ESHUTDOWN;
	m->error = 0;
	return 0;
}

int model_ctx_shutdown(struct model *m)
{
	if (m->in_callback)
		return -EDEADLK;
	if (m->closing)
		return 0;
	m->closing = true;
	for (int i = 0; i < SRSV_POOL_COUNT; i++)
		if (m->pools[i].exists)
			fail_all(m, &m->pools[i], -ESHUTDOWN);
	return 0;
}

/* The async work of one kind recorded so far: every pool marked for it,
 * in kind order (lib/workers.c, srsv__worker_run_pending()). */
static int run_kind(struct model *m, bool data)
{
	unsigned bits = data ? m->pending_data : m->pending_md;
	int ran = 0;

	if (data)
		m->pending_data = 0;
	else
		m->pending_md = 0;
	for (int k = 0; k < SRSV_POOL_COUNT; k++) {
		if (!(bits & (1u << k)) || !m->pools[k].exists)
			continue;
		ran++;
		if (data)
			async_data(m, k);
		else
			async_md(m, k);
	}
	return ran;
}

int model_ctx_run_pending(struct model *m)
{
	int ran;

	if (m->in_callback)
		return -EDEADLK;
	ran = run_kind(m, false);
	return ran + run_kind(m, true);
}

/* ---- the reserve path ---- */

static bool mode_valid_for(const struct model_pool *p, int mode)
{
	switch (mode) {
	case SRSV_NO_FLUSH:
		return true;
	case SRSV_FLUSH_DATA:
	case SRSV_FLUSH_FREE_SPACE_INODE:
		return p->is_data;
	case SRSV_FLUSH_LIMIT:
	case SRSV_FLUSH_EVICT:
	case SRSV_FLUSH_ALL:
	case SRSV_FLUSH_ALL_STEAL:
	case SRSV_FLUSH_EMERGENCY:
		return p->is_metadata || !p->is_data;
	default:
		return false;
	}
}

static bool is_async_mode(int mode)
{
	return mode == SRSV_FLUSH_ALL || mode == SRSV_FLUSH_ALL_STEAL ||
	       mode == SRSV_FLUSH_DATA;
}

/* The queue-jumping rule: which queued tickets this mode must respect. */
static bool pending_for(const struct model_pool *p, int mode)
{
	if (mode == SRSV_FLUSH_ALL || mode == SRSV_FLUSH_ALL_STEAL ||
	    mode == SRSV_NO_FLUSH)
		return p->qlen[0] + p->qlen[1] != 0;
	return p->qlen[MODEL_Q_PRIORITY] != 0;
}

/*
 * The mode whose queue-jumping rule a reservation follows: a mover
 * (SRSV_RESERVE_MOVER) passes queued normal tickets, never priority ones,
 * as the priority modes do.
 */
static int respected(int mode, unsigned flags)
{
	return (flags & SRSV_RESERVE_MOVER) ? SRSV_FLUSH_LIMIT : mode;
}

static bool try_reserve(struct model *m, struct model_pool *p, uint64_t bytes,
			int mode, unsigned flags)
{
	if (!pending_for(p, respected(mode, flags)) &&
	    charge(m, p, bytes, mode))
		return true;
	return mode == SRSV_FLUSH_EMERGENCY &&
	       charge(m, p, bytes, CHARGE_EMERGENCY);
}

/* @no_queue: a timeout of 0, -ETIMEDOUT where it would have to wait. */
static int reserve_start(struct model *m, int pool, int t, uint64_t bytes,
			 int mode, unsigned flags, bool no_queue)
{
	struct model_pool *p = pool_of(m, pool);
	struct model_ticket *tk = &m->tickets[t];

	if (!p || bad_size(bytes) || mode < 0 || mode >= SRSV_FLUSH_MODE_COUNT ||
	    (flags & ~(unsigned)(SRSV_RESERVE_NOWAIT | SRSV_RESERVE_MOVER)) ||
	    !mode_valid_for(p, mode))
		return -EINVAL;
	/* A mover is served from the movers' reserve first: the bytes are
	 * in may_use already and change hands. */
	if ((flags & SRSV_RESERVE_MOVER) && p->mover_reserved >= bytes) {
		p->mover_reserved -= bytes;
		return 0;
	}
	if (try_reserve(m, p, bytes, mode, flags))
		return 0;
	if (flags & SRSV_RESERVE_NOWAIT)
		return -EAGAIN;
	/* More than the pool could ever become: fail at once. */
	if (bytes > p->total + m->unallocated)
		return -ENOSPC;
	if (mode == SRSV_NO_FLUSH || mode == SRSV_FLUSH_EMERGENCY)
		return -ENOSPC;
	if (m->in_callback)
		return -EDEADLK;
	/* Shut down refuses only what would wait, as the error state. */
	if (m->closing)
		return -ESHUTDOWN;
	if (m->error) {
		/* Refused with the ctx's error: counted with the tickets. */
		p->error_failures++;
		return m->error;
	}
	if (no_queue)
		return -ETIMEDOUT;

	memset(tk, 0, sizeof(*tk));
	tk->pool = pool;
	tk->mode = mode;
	tk->bytes = bytes;
	tk->orig_bytes = bytes;
	/* A mover waits with the priority tickets, ahead of the writers. */
	tk->priority = !is_async_mode(mode) || (flags & SRSV_RESERVE_MOVER);
	tk->mover = flags & SRSV_RESERVE_MOVER;
	tk->steal = mode == SRSV_FLUSH_ALL_STEAL || mode == SRSV_FLUSH_EVICT;
	tk->state = MODEL_T_QUEUED;
	{
		int q = tk->priority ? MODEL_Q_PRIORITY : MODEL_Q_NORMAL;

		p->queue[q][p->qlen[q]++] = t;
	}
	p->reclaim_size += bytes;
	try_grant(m, p);
	if (tk->state == MODEL_T_DONE)
		return tk->error;
	if (!tk->priority && !p->flush) {
		/* Preemptive flushing did not keep up: clamp down.  A data
		 * pool's debt is the engine's to free: any wait says so. */
		bool data_preempt = p->kind == SRSV_POOL_DATA &&
				    !(m->flags & SRSV_CTX_NO_DATA_PREEMPT);

		if (!(m->flags & SRSV_CTX_FIXED_CLAMP) &&
		    (data_preempt || m->ordered < m->delalloc) && p->clamp < 8)
			p->clamp++;
		p->flush = true;
		if (mode == SRSV_FLUSH_DATA)
			m->pending_data |= 1u << pool;
		else
			m->pending_md |= 1u << pool;
	}
	return -EINPROGRESS;
}

static int finish_start(struct model *m, int pool, int t, int ret)
{
	struct model_ticket *tk = &m->tickets[t];

	if (ret != -EINPROGRESS) {
		memset(tk, 0, sizeof(*tk));
		tk->pool = pool_of(m, pool) ? pool : -1;
		tk->error = ret;
		tk->state = MODEL_T_DONE;
	}
	return ret;
}

int model_ticket_reserve(struct model *m, int pool, int slot, uint64_t bytes,
			 int mode, unsigned flags)
{
	int ret;

	if (slot < 0 || slot > INTERNAL_SLOT)
		return -EINVAL;
	/* A ticket in flight is refused and left as it is. */
	if (m->tickets[slot].inflight)
		return -EBUSY;
	ret = finish_start(m, pool, slot, reserve_start(m, pool, slot, bytes,
							mode, flags, false));
	if (ret == -EINPROGRESS)
		m->tickets[slot].inflight = true;
	return ret;
}

/*
 * Which async work serves normal ticket @t: the data walk for a FLUSH_DATA
 * ticket, the metadata walk for the others; but a MIXED pool has one
 * normal queue for both, served by the walk its first ticket started, so
 * when only the other kind is pending for the pool, that one.
 * (m->wait_own_kind: the ticket's own kind always, as the library does
 * today; the fuzzer's steering.)
 */
static bool serves_data(const struct model *m, const struct model_ticket *tk)
{
	bool data = tk->mode == SRSV_FLUSH_DATA;
	unsigned bit = 1u << tk->pool;

	if (m->wait_own_kind)
		return data;
	if (data && !(m->pending_data & bit) && (m->pending_md & bit))
		return false;
	if (!data && !(m->pending_md & bit) && (m->pending_data & bit))
		return true;
	return data;
}

/*
 * A wait without deadline.  A priority ticket runs its priority walk.  A
 * normal ticket's waiter on a MANUAL ctx runs the async work that serves
 * it, in its own thread (ctx.h, SRSV_CTX_MANUAL: "a single-threaded
 * engine never waits for a thread that does not exist"), until the
 * ticket ends or no such work is pending: then it would wait for ever
 * (MODEL_BLOCKS).
 */
static int wait_forever(struct model *m, int t)
{
	struct model_ticket *tk = &m->tickets[t];

	if (tk->state == MODEL_T_QUEUED && tk->priority)
		priority_reclaim(m, tk->pool, t);
	while (tk->state == MODEL_T_QUEUED) {
		if (!run_kind(m, serves_data(m, tk)))
			return MODEL_BLOCKS;
	}
	return tk->error;
}

int model_ticket_wait(struct model *m, int slot, uint64_t timeout_ns)
{
	struct model_ticket *tk;
	int ret;

	if (slot < 0 || slot > INTERNAL_SLOT)
		return -EINVAL;
	tk = &m->tickets[slot];
	if (tk->state == MODEL_T_IDLE)
		return -EINVAL;
	if (tk->state == MODEL_T_DONE) {
		tk->inflight = false;	/* its end is known to the owner */
		return tk->error;
	}
	if (timeout_ns == 0)
		return -EINPROGRESS;
	if (timeout_ns != UINT64_MAX)
		return -ENOTSUP;
	ret = wait_forever(m, slot);
	if (ret != MODEL_BLOCKS)
		tk->inflight = false;
	return ret;
}

int model_ticket_cancel(struct model *m, int slot)
{
	struct model_ticket *tk;
	struct model_pool *p;

	if (slot < 0 || slot > INTERNAL_SLOT)
		return -EINVAL;
	tk = &m->tickets[slot];
	if (tk->state == MODEL_T_IDLE)
		return -EINVAL;
	if (tk->state != MODEL_T_QUEUED)
		return -EALREADY;
	p = &m->pools[tk->pool];
	ticket_remove(m, p, slot);
	ticket_end(m, p, slot, -ECANCELED);
	try_grant(m, p);
	return 0;
}

int model_space_reserve(struct model *m, int pool, uint64_t bytes, int mode,
			unsigned flags)
{
	int ret = reserve_start(m, pool, INTERNAL_SLOT, bytes, mode, flags,
				false);

	if (ret != -EINPROGRESS)
		return ret;
	return wait_forever(m, INTERNAL_SLOT);
}

int model_space_reserve_timeout(struct model *m, int pool, uint64_t bytes,
				int mode, unsigned flags, uint64_t timeout_ns)
{
	if (timeout_ns == UINT64_MAX)
		return model_space_reserve(m, pool, bytes, mode, flags);
	if (timeout_ns != 0)
		return -ENOTSUP;
	/* "Do not wait at all": never queued, -ETIMEDOUT where it would. */
	return reserve_start(m, pool, INTERNAL_SLOT, bytes, mode, flags, true);
}

/*
 * srsv__space_room(): the most one charge of @mode could take now (the
 * admission rule of fits() solved for the bytes).
 */
static uint64_t room_for(const struct model *m, const struct model_pool *p,
			 int mode)
{
	u128 used = claimed(p) + p->may_use;
	u128 room = used < p->total ? p->total - used : 0, limit;

	if (mode == CHARGE_NO_OVERCOMMIT || p->is_data)
		return (uint64_t)room;
	/* used + bytes < total + allowance */
	limit = (u128)p->total + avail_free(m, mode);
	if (limit > used + 1 && limit - used - 1 > room)
		room = limit - used - 1;
	return room > UINT64_MAX ? UINT64_MAX : (uint64_t)room;
}

/*
 * srsv_space_reserve_partial(), as lib/reserve.c does it: a mover takes
 * what its reserve holds up to @max, and the rest from the pool: the
 * rest if it fits under the mode's rules, else what there is room for
 * under the mode (when no ticket the mode respects is queued) if that
 * makes at least @min; else the reserve's bytes go back and a
 * reservation of @min follows, which may wait.
 */
int model_space_reserve_partial(struct model *m, int pool, uint64_t min,
				uint64_t max, int mode, unsigned flags,
				uint64_t *got)
{
	struct model_pool *p = pool_of(m, pool);
	uint64_t take;
	int ret;

	if (got)
		*got = 0;
	if (!p || !got)
		return -EINVAL;
	if (!min || min > max || max > SRSV_MAX_BYTES) {
		p->refused_pool_args++;
		return -EINVAL;
	}
	if (mode < 0 || mode >= SRSV_FLUSH_MODE_COUNT ||
	    (flags & ~(unsigned)(SRSV_RESERVE_NOWAIT | SRSV_RESERVE_MOVER)) ||
	    !mode_valid_for(p, mode))
		return -EINVAL;
	take = 0;
	if (flags & SRSV_RESERVE_MOVER) {
		take = min64(p->mover_reserved, max);
		p->mover_reserved -= take;
	}
	if (take < max) {
		uint64_t lo = take >= min ? 1 : min - take, hi = max - take;
		uint64_t pool_got = 0;

		if (try_reserve(m, p, hi, mode, flags)) {
			pool_got = hi;
		} else if (!pending_for(p, respected(mode, flags))) {
			pool_got = min64(hi, room_for(m, p, mode));
			if (pool_got < lo || !charge(m, p, pool_got, mode))
				pool_got = 0;
		}
		take += pool_got;
	}
	if (take >= min) {
		*got = take;
		return 0;
	}
	/* Back into the reserve (nothing refilled it meanwhile). */
	p->mover_reserved += take;
	ret = model_space_reserve(m, pool, min, mode, flags);
	if (!ret)
		*got = min;
	return ret;
}

/* ---- transitions ---- */

int model_space_release(struct model *m, int pool, uint64_t bytes)
{
	struct model_pool *p = pool_of(m, pool);

	if (!p || bytes > SRSV_MAX_BYTES)
		return -EINVAL;
	if (!bytes)
		return 0;
	/* The movers' reserve is in may_use and nobody holds it: a release
	 * that would reach into it is an over-release. */
	if (p->may_use < bytes || p->may_use - bytes < p->mover_reserved ||
	    ctr_sub(&p->may_use, bytes)) {
		/*
		 * The library grants after a refused release too (for an
		 * instant its admission word looked full, and a ticket may
		 * have queued then: lib/space.c), so tickets that already
		 * fit are granted here as well.
		 */
		try_grant(m, p);
		return -EINVAL;
	}
	/* Space came back: the movers' reserve first, with a charge of what
	 * it lacks (all of it or nothing) that fits without overcommit. */
	if (p->mover_reserved < p->mover_size) {
		uint64_t add = min64(bytes, p->mover_size - p->mover_reserved);

		if (charge(m, p, add, CHARGE_NO_OVERCOMMIT))
			p->mover_reserved += add;
	}
	try_grant(m, p);
	return 0;
}

/* Move @bytes from one counter to another (or to free: @to NULL). */
static int move(struct model *m, int pool, uint64_t *(*from)(struct model_pool *),
		uint64_t *(*to)(struct model_pool *), uint64_t bytes, bool grant)
{
	struct model_pool *p = pool_of(m, pool);
	uint64_t *f, *t;

	if (!p || bad_size(bytes))
		return -EINVAL;
	f = from(p);
	t = to ? to(p) : NULL;
	if (*f < bytes)
		return -EINVAL;
	if (t && claim_add(p, t, bytes))
		return -EINVAL;
	*f -= bytes;
	if (grant)
		try_grant(m, p);
	return 0;
}

static uint64_t *c_may_use(struct model_pool *p) { return &p->may_use; }
static uint64_t *c_reserved(struct model_pool *p) { return &p->reserved; }
static uint64_t *c_used(struct model_pool *p) { return &p->used; }
static uint64_t *c_pinned(struct model_pool *p) { return &p->pinned; }
static uint64_t *c_readonly(struct model_pool *p) { return &p->readonly; }

int model_space_alloc(struct model *m, int pool, uint64_t bytes)
{
	struct model_pool *p = pool_of(m, pool);

	/* Never out of the movers' reserve, which nobody holds: refused as
	 * a move from a counter that holds less. */
	if (p && !bad_size(bytes) && p->may_use >= bytes &&
	    p->may_use - bytes < p->mover_reserved)
		return -EINVAL;
	return move(m, pool, c_may_use, c_reserved, bytes, false);
}

static int to_free(struct model *m, int pool,
		   uint64_t *(*from)(struct model_pool *), uint64_t bytes,
		   bool unpinned);

int model_space_free_reserved(struct model *m, int pool, uint64_t bytes)
{
	return to_free(m, pool, c_reserved, bytes, false);
}

int model_space_commit_used(struct model *m, int pool, uint64_t bytes)
{
	return move(m, pool, c_reserved, c_used, bytes, false);
}

int model_space_pin(struct model *m, int pool, uint64_t bytes)
{
	return move(m, pool, c_used, c_pinned, bytes, false);
}

/*
 * Space came back (@bytes of it): btrfs_return_free_space().  On an unpin
 * the global reserve, in this pool and below its size, takes its share
 * first; then the movers' reserve is refilled up to its size, with what
 * is still free (a charge without overcommit: lib/tickets.c).  Both are
 * served before any ticket.  True when the tickets are to be offered a
 * grant: bytes are left ("if (len)"), or the movers' reserve took some
 * while a priority ticket (a mover's) waits.
 */
static bool reserves_refill(struct model *m, struct model_pool *p,
			    uint64_t bytes, bool unpinned)
{
	struct model_rsv *g = &m->rsvs[SRSV_RSV_GLOBAL];
	uint64_t took = 0, add;

	if (unpinned && g->valid && &m->pools[g->pool] == p &&
	    g->reserved < g->size) {
		took = min64(bytes, g->size - g->reserved);
		p->may_use += took;
		g->reserved += took;
	}
	add = p->mover_size - min64(p->mover_size, p->mover_reserved);
	add = min64(add, bytes - took);
	add = min64(add, room_for(m, p, CHARGE_NO_OVERCOMMIT));
	p->may_use += add;
	p->mover_reserved += add;
	return took + add < bytes || (add && p->qlen[MODEL_Q_PRIORITY]);
}

/* A move of @bytes to free, then the reserves' refill and the grant. */
static int to_free(struct model *m, int pool,
		   uint64_t *(*from)(struct model_pool *), uint64_t bytes,
		   bool unpinned)
{
	int ret = move(m, pool, from, NULL, bytes, false);
	struct model_pool *p = pool_of(m, pool);

	if (ret)
		return ret;
	if (reserves_refill(m, p, bytes, unpinned))
		try_grant(m, p);
	return 0;
}

int model_space_unpin(struct model *m, int pool, uint64_t bytes)
{
	return to_free(m, pool, c_pinned, bytes, true);
}

int model_space_clear_readonly(struct model *m, int pool, uint64_t bytes)
{
	return to_free(m, pool, c_readonly, bytes, false);
}

int model_space_grow(struct model *m, int pool, uint64_t bytes)
{
	struct model_pool *p = pool_of(m, pool);

	if (!p || bad_size(bytes) || p->total + bytes > SRSV_MAX_BYTES)
		return -EINVAL;
	p->total += bytes;
	p->full = false;
	/* New capacity refills the movers' reserve first. */
	if (reserves_refill(m, p, bytes, false))
		try_grant(m, p);
	return 0;
}

int model_space_shrink(struct model *m, int pool, uint64_t bytes)
{
	struct model_pool *p = pool_of(m, pool);

	if (!p || bad_size(bytes) || p->readonly < bytes || p->total < bytes)
		return -EINVAL;
	p->readonly -= bytes;
	p->total -= bytes;
	return 0;
}

int model_space_set_readonly(struct model *m, int pool, uint64_t bytes,
			     bool force)
{
	struct model_pool *p = pool_of(m, pool);

	if (!p || bad_size(bytes))
		return -EINVAL;
	if (!force && !fits(m, p, bytes, CHARGE_NO_OVERCOMMIT))
		return -ENOSPC;
	return claim_add(p, &p->readonly, bytes);
}

int model_space_set_full(struct model *m, int pool, bool full)
{
	struct model_pool *p = pool_of(m, pool);

	if (!p)
		return -EINVAL;
	p->full = full;
	return 0;
}

int model_space_enable_state(struct model *m, int pool, int state)
{
	struct model_pool *p = pool_of(m, pool);

	if (!p || state < 0 || state >= SRSV_STATE_COUNT)
		return -EINVAL;
	p->disabled &= state ? ~(UINT64_C(1) << state) : 0;
	return 0;
}

/*
 * srsv_space_set_reclaimable(): a figure per state, stored (not added);
 * the snapshot shows the sum.  Bad input is counted as refused
 * (SRSV_REFUSED_POOL_ARGS).
 */
int model_space_set_reclaimable(struct model *m, int pool, int state,
				uint64_t bytes)
{
	struct model_pool *p = pool_of(m, pool);

	if (!p)
		return -EINVAL;
	if (state <= 0 || state >= SRSV_STATE_COUNT || bytes > SRSV_MAX_BYTES) {
		p->refused_pool_args++;
		return -EINVAL;
	}
	p->reclaimable[state] = bytes;
	return 0;
}

/*
 * srsv_space_load_used(): bytes already on the device become used, as a
 * reservation that is used at once: only if they fit in the free space
 * without overcommit (queued tickets do not matter, nothing is granted).
 */
int model_space_load_used(struct model *m, int pool, uint64_t bytes)
{
	struct model_pool *p = pool_of(m, pool);

	if (!p)
		return -EINVAL;
	if (bad_size(bytes)) {
		p->refused_pool_args++;
		return -EINVAL;
	}
	if (!fits(m, p, bytes, CHARGE_NO_OVERCOMMIT))
		return -ENOSPC;
	p->used += bytes;
	return 0;
}

/* ---- block reservations ---- */

static struct model_rsv *rsv_of(struct model *m, int rsv)
{
	if (rsv < 0 || rsv >= MODEL_RSVS || !m->rsvs[rsv].valid)
		return NULL;
	return &m->rsvs[rsv];
}

int model_ctx_rsv(const struct model *m, int type)
{
	switch (type) {
	case SRSV_RSV_GLOBAL:
	case SRSV_RSV_TRANS:
	case SRSV_RSV_DELOPS:
	case SRSV_RSV_DELREFS:
	case SRSV_RSV_DELALLOC:
		return m->rsvs[type].valid ? type : -1;
	default:
		return -1;
	}
}

int model_rsv_init(struct model *m, int rsv, int pool, int type)
{
	struct model_rsv *r;

	if (rsv < SRSV_RSV_TYPE_COUNT || rsv >= MODEL_RSVS ||
	    !pool_of(m, pool) || type <= SRSV_RSV_GLOBAL ||
	    type >= SRSV_RSV_TYPE_COUNT)
		return -EINVAL;
	r = &m->rsvs[rsv];
	memset(r, 0, sizeof(*r));
	r->valid = true;
	r->pool = pool;
	r->type = type;
	return 0;
}

int model_rsv_destroy(struct model *m, int rsv)
{
	struct model_rsv *r = rsv_of(m, rsv);
	int ret;

	if (!r || r->std)
		return -EINVAL;
	ret = model_rsv_release(m, rsv, SRSV_RSV_ALL, NULL);
	if (ret)
		return ret;
	r->valid = false;
	return 0;
}

/* btrfs_block_rsv_add_bytes() */
static void add_bytes(struct model_rsv *r, uint64_t bytes, bool update_size)
{
	r->reserved += bytes;
	if (update_size)
		r->size += bytes;
}

/* btrfs_block_rsv_use_bytes() */
static int use_bytes(struct model_rsv *r, uint64_t bytes)
{
	if (r->reserved < bytes)
		return -ENOSPC;
	r->reserved -= bytes;
	return 0;
}

int model_rsv_add(struct model *m, int rsv, uint64_t bytes, int mode,
		  unsigned flags)
{
	struct model_rsv *r = rsv_of(m, rsv);
	int ret;

	if (!r || bytes > SRSV_MAX_BYTES)
		return -EINVAL;
	if (!bytes)
		return 0;
	ret = model_space_reserve(m, r->pool, bytes, mode, flags);
	if (!ret)
		add_bytes(r, bytes, true);
	return ret;
}

int model_rsv_refill(struct model *m, int rsv, uint64_t min_reserved,
		     int mode, unsigned flags)
{
	struct model_rsv *r = rsv_of(m, rsv);
	uint64_t missing;
	int ret;

	/* rsv.h: bad input is refused even when nothing is missing. */
	if (!r || min_reserved > SRSV_MAX_BYTES || mode < 0 ||
	    mode >= SRSV_FLUSH_MODE_COUNT ||
	    (flags & ~(unsigned)(SRSV_RESERVE_NOWAIT | SRSV_RESERVE_MOVER)))
		return -EINVAL;
	if (r->reserved >= min_reserved)
		return 0;
	missing = min_reserved - r->reserved;
	ret = model_space_reserve(m, r->pool, missing, mode, flags);
	if (!ret)
		add_bytes(r, missing, false);
	return ret;
}

int model_rsv_use(struct model *m, int rsv, uint64_t bytes)
{
	struct model_rsv *r = rsv_of(m, rsv);

	if (!r || bytes > SRSV_MAX_BYTES)
		return -EINVAL;
	return use_bytes(r, bytes);
}

int model_rsv_migrate(struct model *m, int src, int dst, uint64_t bytes,
		      bool update_size)
{
	struct model_rsv *s = rsv_of(m, src), *d = rsv_of(m, dst);
	int ret;

	if (!s || !d || src == dst || s->pool != d->pool ||
	    bytes > SRSV_MAX_BYTES)
		return -EINVAL;
	ret = use_bytes(s, bytes);
	if (!ret)
		add_bytes(d, bytes, update_size);
	return ret;
}

int model_rsv_check(struct model *m, int rsv, unsigned min_percent)
{
	struct model_rsv *r = rsv_of(m, rsv);

	if (!r || min_percent > 100)
		return -EINVAL;
	return r->reserved >= mult_perc(r->size, min_percent) ? 0 : -ENOSPC;
}

/* Where the excess of a released rsv goes (btrfs_block_rsv_release()). */
static struct model_rsv *spill_target(struct model *m, int rsv)
{
	struct model_rsv *r = &m->rsvs[rsv];
	struct model_rsv *t = NULL;

	if (r->type == SRSV_RSV_DELOPS)
		t = rsv_of(m, SRSV_RSV_GLOBAL);
	else if (rsv != SRSV_RSV_GLOBAL && rsv != SRSV_RSV_DELREFS)
		t = rsv_of(m, SRSV_RSV_DELREFS);
	if (t && t->pool != r->pool)
		t = NULL;
	return t;
}

int model_rsv_release(struct model *m, int rsv, uint64_t bytes,
		      uint64_t *released)
{
	struct model_rsv *r = rsv_of(m, rsv), *t;
	uint64_t excess = 0, spilled = 0;

	if (!r)
		return -EINVAL;
	if (bytes == SRSV_RSV_ALL)
		bytes = r->size;
	else if (bytes > r->size)
		return -EINVAL;
	r->size -= bytes;
	if (r->reserved >= r->size) {
		excess = r->reserved - r->size;
		r->reserved = r->size;
	}
	if (released)
		*released = excess;
	if (!excess)
		return 0;
	t = spill_target(m, rsv);
	if (t && t->size > t->reserved) {
		spilled = min64(excess, t->size - t->reserved);
		add_bytes(t, spilled, false);
	}
	if (excess > spilled)
		model_space_release(m, r->pool, excess - spilled);
	return 0;
}

/* btrfs_update_global_block_rsv(): fill to the size or give back. */
static void global_settle(struct model *m)
{
	struct model_rsv *g = &m->rsvs[SRSV_RSV_GLOBAL];
	struct model_pool *p = &m->pools[g->pool];

	if (g->reserved < g->size) {
		/* Unconditional: the global reserve may overcommit. */
		p->may_use += g->size - g->reserved;
		g->reserved = g->size;
	} else if (g->reserved > g->size) {
		/* A caller that released bytes it did not own may have left
		 * may_use short: the library then gives back what is left. */
		ctr_sub(&p->may_use, g->reserved - g->size);
		g->reserved = g->size;
		try_grant(m, p);
	}
	if (g->size >= p->total)
		p->force_alloc = true;
}

int model_ctx_resize_global_rsv(struct model *m, uint64_t bytes)
{
	if (bytes > SRSV_MAX_BYTES || !m->rsvs[SRSV_RSV_GLOBAL].valid)
		return -EINVAL;
	m->rsvs[SRSV_RSV_GLOBAL].size = bytes;
	global_settle(m);
	return 0;
}

int model_rsv_use_fallback(struct model *m, int rsv, uint64_t bytes,
			   int *used_rsv)
{
	struct model_rsv *r = rsv_of(m, rsv);
	struct model_rsv *g = rsv_of(m, SRSV_RSV_GLOBAL);
	bool global_updated = false;
	int paid = rsv, ret;

	if (!r || bad_size(bytes))
		return -EINVAL;
	if (r->size == 0)
		goto try_reserve;
again:
	ret = use_bytes(r, bytes);
	if (!ret)
		goto out;
	if (r->failfast)
		return ret;
	if (rsv == SRSV_RSV_GLOBAL && !global_updated) {
		global_updated = true;
		global_settle(m);
		goto again;
	}
try_reserve:
	ret = model_space_reserve(m, r->pool, bytes, SRSV_NO_FLUSH, 0);
	if (!ret)
		goto out;
	/* The log tree's rule (upstream 40f2b11c1b7c, "btrfs: don't allow
	 * log trees to consume global reserve or overcommit metadata"): a
	 * TREELOG rsv whose NO_FLUSH try failed fails with its answer; the
	 * engine falls back to a full commit. */
	if (r->type == SRSV_RSV_TREELOG)
		return ret;
	if (rsv != SRSV_RSV_GLOBAL && g && g->pool == r->pool &&
	    !use_bytes(g, bytes)) {
		paid = SRSV_RSV_GLOBAL;
		goto out;
	}
	/* All hope is lost, but if the bytes physically fit, take them.  A
	 * pool that takes no EMERGENCY reservation has no such last step. */
	if (!mode_valid_for(&m->pools[r->pool], SRSV_FLUSH_EMERGENCY))
		return -ENOSPC;
	ret = model_space_reserve(m, r->pool, bytes, SRSV_FLUSH_EMERGENCY, 0);
	if (ret)
		return ret;
out:
	if (used_rsv)
		*used_rsv = paid;
	return 0;
}

int model_rsv_set_failfast(struct model *m, int rsv, bool failfast)
{
	struct model_rsv *r = rsv_of(m, rsv);

	if (!r)
		return -EINVAL;
	r->failfast = failfast;
	return 0;
}

/* ---- quotas ---- */

static struct model_quota *quota_of(struct model *m, int q)
{
	if (q < 0 || q >= MODEL_QUOTAS || !m->quotas[q].exists)
		return NULL;
	return &m->quotas[q];
}

static bool limit_ok(uint64_t limit)
{
	return limit <= SRSV_MAX_BYTES || limit == SRSV_QUOTA_NO_LIMIT;
}

uint64_t model_quota_charged(const struct model *m, int q)
{
	const struct model_quota *qu = &m->quotas[q];
	uint64_t sum = qu->used;

	for (int k = 0; k < SRSV_QUOTA_KIND_COUNT; k++)
		sum += qu->reserved[k];
	return sum;
}

int model_quota_create(struct model *m, int q, uint64_t id, uint64_t limit)
{
	if (q < 0 || q >= MODEL_QUOTAS || !limit_ok(limit))
		return -EINVAL;
	if (model_quota_lookup(m, id) >= 0)
		return -EEXIST;
	memset(&m->quotas[q], 0, sizeof(m->quotas[q]));
	m->quotas[q].exists = true;
	m->quotas[q].id = id;
	m->quotas[q].limit = limit;
	return 0;
}

int model_quota_destroy(struct model *m, int q)
{
	struct model_quota *qu = quota_of(m, q);

	if (!qu)
		return -EINVAL;
	for (int k = 0; k < SRSV_QUOTA_KIND_COUNT; k++)
		if (qu->reserved[k])
			return -EBUSY;
	qu->exists = false;
	return 0;
}

int model_quota_lookup(const struct model *m, uint64_t id)
{
	/* Quotas are looked up in creation order; ids are unique anyway. */
	for (int q = 0; q < MODEL_QUOTAS; q++)
		if (m->quotas[q].exists && m->quotas[q].id == id)
			return q;
	return -ENOENT;
}

int model_quota_set_limit(struct model *m, int q, uint64_t limit)
{
	struct model_quota *qu = quota_of(m, q);

	if (!qu || !limit_ok(limit))
		return -EINVAL;
	qu->limit = limit;
	return 0;
}

static int admit(struct model *m, int q, int kind, uint64_t bytes)
{
	struct model_quota *qu = &m->quotas[q];
	uint64_t charged = model_quota_charged(m, q);

	if (charged > qu->limit || bytes > qu->limit - charged)
		return -EDQUOT;
	qu->reserved[kind] += bytes;
	return 0;
}

int model_quota_reserve(struct model *m, int q, int kind, uint64_t bytes,
			unsigned flags)
{
	struct model_quota *qu = quota_of(m, q);
	int ret;

	if (!qu || kind < 0 || kind >= SRSV_QUOTA_KIND_COUNT ||
	    bytes > SRSV_MAX_BYTES ||
	    (flags & ~(unsigned)(SRSV_RESERVE_NOWAIT | SRSV_QUOTA_NOFLUSH)))
		return -EINVAL;
	if (!bytes)
		return 0;
	ret = admit(m, q, kind, bytes);
	if (ret != -EDQUOT)
		return ret;
	if (flags & SRSV_RESERVE_NOWAIT) {
		qu->edquot++;
		return -EAGAIN;
	}
	if ((flags & SRSV_QUOTA_NOFLUSH) || !m->have_quota_flush) {
		qu->edquot++;
		return -EDQUOT;
	}
	/* A flusher that flushed would wait for itself. */
	if (m->in_callback)
		return -EDEADLK;
	/* A flush (or a wait for one) stops at shutdown or an engine
	 * error, as a ticket would. */
	if (m->closing)
		return -ESHUTDOWN;
	if (m->error)
		return m->error;
	qu->flushes++;
	ret = 0;
	if (m->hooks.quota_flush) {
		m->in_callback++;
		ret = m->hooks.quota_flush(m, q, m->hooks.user);
		m->in_callback--;
	}
	/* A failed flush fails the reservation, no retry. */
	if (ret) {
		qu->edquot++;
		return -EDQUOT;
	}
	ret = admit(m, q, kind, bytes);
	if (ret)
		qu->edquot++;
	return ret;
}

int model_quota_release(struct model *m, int q, int kind, uint64_t bytes)
{
	struct model_quota *qu = quota_of(m, q);

	if (!qu || kind < 0 || kind >= SRSV_QUOTA_KIND_COUNT)
		return -EINVAL;
	if (!bytes)
		return 0;
	return ctr_sub(&qu->reserved[kind], bytes);
}

int model_quota_convert(struct model *m, int q, uint64_t bytes)
{
	struct model_quota *qu = quota_of(m, q);

	if (!qu)
		return -EINVAL;
	if (!bytes)
		return 0;
	if (ctr_sub(&qu->reserved[SRSV_QUOTA_META_PREALLOC], bytes))
		return -EINVAL;
	qu->reserved[SRSV_QUOTA_META_PERTRANS] += bytes;
	return 0;
}

int model_quota_commit_one(struct model *m, int q, uint64_t *freed)
{
	struct model_quota *qu = quota_of(m, q);

	if (!qu)
		return -EINVAL;
	if (freed)
		*freed = qu->reserved[SRSV_QUOTA_META_PERTRANS];
	qu->reserved[SRSV_QUOTA_META_PERTRANS] = 0;
	return 0;
}

int model_quota_commit(struct model *m, uint64_t *freed)
{
	uint64_t sum = 0, one;

	for (int q = 0; q < MODEL_QUOTAS; q++) {
		if (!m->quotas[q].exists)
			continue;
		model_quota_commit_one(m, q, &one);
		sum += one;
	}
	if (freed)
		*freed = sum;
	return 0;
}

int model_quota_charge_used(struct model *m, int q, uint64_t bytes)
{
	struct model_quota *qu = quota_of(m, q);

	if (!qu)
		return -EINVAL;
	if (!bytes)
		return 0;
	if (ctr_sub(&qu->reserved[SRSV_QUOTA_DATA], bytes))
		return -EINVAL;
	qu->used += bytes;
	return 0;
}

int model_quota_free_used(struct model *m, int q, uint64_t bytes)
{
	struct model_quota *qu = quota_of(m, q);

	if (!qu)
		return -EINVAL;
	if (!bytes)
		return 0;
	return ctr_sub(&qu->used, bytes);
}

/* ---- zones ---- */

enum { CLASS_DATA = 0, CLASS_METADATA = 1, CLASS_SYSTEM = 2 };

static const int zone_pool[SRSV_ZONE_KIND_COUNT] = {
	[SRSV_ZONE_DATA] = SRSV_POOL_DATA,
	[SRSV_ZONE_METADATA] = SRSV_POOL_METADATA,
	[SRSV_ZONE_SYSTEM] = SRSV_POOL_SYSTEM,
	[SRSV_ZONE_DATA_RELOC] = SRSV_POOL_DATA,
	[SRSV_ZONE_TREELOG] = SRSV_POOL_METADATA,
};

static const int zone_class[SRSV_ZONE_KIND_COUNT] = {
	[SRSV_ZONE_DATA] = CLASS_DATA,
	[SRSV_ZONE_METADATA] = CLASS_METADATA,
	[SRSV_ZONE_SYSTEM] = CLASS_SYSTEM,
	[SRSV_ZONE_DATA_RELOC] = CLASS_DATA,
	[SRSV_ZONE_TREELOG] = CLASS_METADATA,
};

static bool zone_dedicated_kind(int kind)
{
	return kind == SRSV_ZONE_DATA_RELOC || kind == SRSV_ZONE_TREELOG;
}

static struct model_group *group_of(struct model *m, int g)
{
	if (g < 0 || g >= MODEL_GROUPS || !m->groups[g].exists)
		return NULL;
	return &m->groups[g];
}

static uint64_t room(const struct model_group *g)
{
	return g->capacity - g->alloc_offset;
}

static uint64_t tail(const struct model_group *g)
{
	return g->length - g->capacity;
}

int model_zoned_init(struct model *m, const struct srsv_zoned_config *cfg)
{
	if (!cfg || cfg->size != sizeof(*cfg) || !(m->flags & SRSV_CTX_ZONED))
		return -EINVAL;
	if (cfg->reclaim_threshold_pct < 1 || cfg->reclaim_threshold_pct > 100)
		return -EINVAL;
	if (cfg->max_active_zones &&
	    cfg->max_active_zones <=
	    (uint64_t)cfg->reserved_metadata + cfg->reserved_system)
		return -EINVAL;
	if (m->zoned)
		return -EALREADY;
	m->zoned = true;
	m->zcfg = *cfg;
	m->have_zone_reset = cfg->zone_reset != NULL;
	m->have_zone_relocate = cfg->zone_relocate != NULL;
	return 0;
}

int model_zone_group_add(struct model *m, int kind, uint64_t start,
			 uint64_t length, uint64_t capacity, int *out)
{
	struct model_pool *p;
	struct model_group *g;
	int pool, slot = -1;

	if (!m->zoned || kind < 0 || kind >= SRSV_ZONE_KIND_COUNT)
		return -EINVAL;
	if (!length || !capacity || capacity > length ||
	    length > SRSV_MAX_BYTES || start > UINT64_MAX - length)
		return -EINVAL;
	pool = model_space_of(m, zone_pool[kind]);
	if (pool < 0)
		return -EINVAL;
	p = &m->pools[pool];
	for (int i = 0; i < MODEL_GROUPS; i++) {
		const struct model_group *o = &m->groups[i];

		if (!o->exists) {
			if (slot < 0)
				slot = i;
			continue;
		}
		if (start < o->start + o->length && o->start < start + length)
			return -EINVAL;
	}
	if (slot < 0)
		return -ENOMEM;		/* the model's table is full */
	if (p->total + length > SRSV_MAX_BYTES ||
	    claim_add(p, &p->zone_unusable, length - capacity))
		return -EINVAL;
	p->total += length;
	p->full = false;
	/* Its capacity came back: the movers' reserve first. */
	if (reserves_refill(m, p, capacity, false))
		try_grant(m, p);
	g = &m->groups[slot];
	memset(g, 0, sizeof(*g));
	g->exists = true;
	g->kind = kind;
	g->pool = pool;
	g->start = start;
	g->length = length;
	g->capacity = capacity;
	g->zone_unusable = length - capacity;
	if (out)
		*out = slot;
	return 0;
}

static unsigned reserved_left(const struct model *m, int class)
{
	unsigned reserved = class == CLASS_METADATA ? m->zcfg.reserved_metadata :
			    class == CLASS_SYSTEM ? m->zcfg.reserved_system : 0;

	return reserved > m->active_by_class[class] ?
	       reserved - m->active_by_class[class] : 0;
}

/* The tokens a class may take: the unreserved ones and its own. */
static bool may_take_token(const struct model *m, int class)
{
	unsigned others = 0;

	if (!m->zcfg.max_active_zones)
		return true;
	for (int c = 0; c < 3; c++)
		if (c != class)
			others += reserved_left(m, c);
	return m->zcfg.max_active_zones - m->active_count > others;
}

static void close_group(struct model *m, int gi)
{
	struct model_group *g = &m->groups[gi];

	if (!g->open)
		return;
	for (unsigned i = 0; i < m->nr_active_list; i++) {
		if (m->active[i] != gi)
			continue;
		memmove(&m->active[i], &m->active[i + 1],
			(m->nr_active_list - i - 1) * sizeof(int));
		m->nr_active_list--;
		break;
	}
	g->open = false;
	if (m->dedicated[g->kind] == gi)
		m->dedicated[g->kind] = -1;
}

/* The group leaves the active list and gives its token back. */
static void release_token(struct model *m, int gi)
{
	struct model_group *g = &m->groups[gi];

	close_group(m, gi);
	g->active = false;
	m->active_count--;
	m->active_by_class[zone_class[g->kind]]--;
	m->active_by_kind[g->kind]--;
}

static bool resettable(const struct model_group *g);
static bool sparse(const struct model *m, const struct model_group *g);

/*
 * A group that became a candidate joins the tail of its queue: fully
 * freed groups the RESET_ZONES queue, sparse ones (when the engine can
 * relocate) the RECLAIM_ZONES queue.  Busy groups are queued by their
 * flusher when it lets go.
 */
static void queue_candidate(struct model *m, int gi)
{
	struct model_group *g = &m->groups[gi];
	bool unused, reclaim;

	if (g->busy)
		return;
	unused = resettable(g);
	reclaim = !unused && m->have_zone_relocate && sparse(m, g);
	if (unused && !g->on_unused) {
		m->unused[g->pool][m->nr_unused[g->pool]++] = gi;
		g->on_unused = true;
	}
	if (reclaim && !g->on_reclaim) {
		m->reclaim[g->pool][m->nr_reclaim[g->pool]++] = gi;
		g->on_reclaim = true;
	}
}

/* Remove @gi from the queue @q of @nr entries. */
static void queue_remove(int *q, unsigned *nr, int gi)
{
	for (unsigned i = 0; i < *nr; i++) {
		if (q[i] != gi)
			continue;
		memmove(&q[i], &q[i + 1], (*nr - i - 1) * sizeof(int));
		(*nr)--;
		return;
	}
}

int model_zone_group_activate(struct model *m, int gi)
{
	struct model_group *g = group_of(m, gi);
	int class;

	if (!g)
		return -EINVAL;
	class = zone_class[g->kind];
	if (g->busy)
		return -EBUSY;
	if (g->alloc_offset == g->capacity)
		return -ENOSPC;
	if (g->active)
		return 0;
	if (!may_take_token(m, class))
		return -EBUSY;
	g->active = true;
	g->open = true;
	m->active[m->nr_active_list++] = gi;
	m->active_count++;
	m->active_by_class[class]++;
	m->active_by_kind[g->kind]++;
	if (zone_dedicated_kind(g->kind) && m->dedicated[g->kind] < 0)
		m->dedicated[g->kind] = gi;
	return 0;
}

static int finish_group(struct model *m, int gi)
{
	struct model_group *g = &m->groups[gi];
	uint64_t wasted;

	if (g->busy)
		return -EBUSY;
	if (!g->active)
		return -EALREADY;
	if (g->reserved)
		return -EBUSY;
	wasted = room(g);
	if (wasted) {
		struct model_pool *p = &m->pools[g->pool];

		if (claim_add(p, &p->zone_unusable, wasted))
			return -EINVAL;
		g->zone_unusable += wasted;
		g->alloc_offset = g->capacity;
	}
	release_token(m, gi);
	/* Finishing an empty or mostly freed group makes a candidate. */
	queue_candidate(m, gi);
	return 0;
}

int model_zone_group_finish(struct model *m, int gi)
{
	if (!group_of(m, gi))
		return -EINVAL;
	return finish_group(m, gi);
}

int model_zoned_finish_one(struct model *m, int *finished)
{
	int ret = -ENOENT;

	if (!m->zoned)
		return -EINVAL;
	for (int tries = 0; tries < FINISH_ONE_TRIES; tries++) {
		int best = -1;
		uint64_t best_room = UINT64_MAX;
		bool saw_busy = false;

		for (unsigned i = 0; i < m->nr_active_list; i++) {
			const struct model_group *g = &m->groups[m->active[i]];

			if (g->kind != SRSV_ZONE_DATA || !g->alloc_offset)
				continue;
			if (g->reserved) {
				saw_busy = true;
				continue;
			}
			if (room(g) < best_room) {
				best = m->active[i];
				best_room = room(g);
			}
		}
		if (best < 0)
			return saw_busy ? -EBUSY : -ENOENT;
		ret = finish_group(m, best);
		if (!ret) {
			if (finished)
				*finished = best;
			return 0;
		}
		if (ret != -EBUSY)
			return ret;
	}
	return ret;
}

int model_zone_hint(struct model *m, int kind, uint64_t bytes, int *out)
{
	int chosen = -1, pool;
	unsigned looked = 0;

	if (!m->zoned || kind < 0 || kind >= SRSV_ZONE_KIND_COUNT ||
	    bad_size(bytes))
		return -EINVAL;
	pool = model_space_of(m, zone_pool[kind]);
	if (pool < 0)
		return -EINVAL;
	if (zone_dedicated_kind(kind) && m->dedicated[kind] >= 0) {
		looked++;
		if (room(&m->groups[m->dedicated[kind]]) >= bytes)
			chosen = m->dedicated[kind];
	}
	if (chosen < 0) {
		for (unsigned i = 0; i < m->nr_active_list; i++) {
			const struct model_group *g = &m->groups[m->active[i]];

			looked++;
			if (g->kind == kind && g->pool == pool &&
			    room(g) >= bytes) {
				chosen = m->active[i];
				break;
			}
		}
		if (chosen >= 0 && zone_dedicated_kind(kind))
			m->dedicated[kind] = chosen;
	}
	m->hints++;
	m->hint_looked += looked;
	if (chosen < 0)
		return -ENOSPC;
	if (out)
		*out = chosen;
	return 0;
}

int model_zone_group_alloc(struct model *m, int gi, uint64_t bytes,
			   uint64_t *logical)
{
	struct model_group *g = group_of(m, gi);

	if (!g || bad_size(bytes))
		return -EINVAL;
	if (!g->open || room(g) < bytes)
		return -ENOSPC;
	if (logical)
		*logical = g->start + g->alloc_offset;
	g->alloc_offset += bytes;
	g->reserved += bytes;
	/* Full: off the list at once (the hint must never see it); the
	 * token stays until the last write lands. */
	if (g->alloc_offset == g->capacity)
		close_group(m, gi);
	return 0;
}

int model_zone_group_written(struct model *m, int gi, uint64_t bytes)
{
	struct model_group *g = group_of(m, gi);

	if (!g || bad_size(bytes) || g->reserved < bytes)
		return -EINVAL;
	g->used += bytes;
	g->reserved -= bytes;
	/* The last write into a full zone landed: no longer active. */
	if (!g->reserved && g->active && g->alloc_offset == g->capacity) {
		release_token(m, gi);
		queue_candidate(m, gi);
	}
	return 0;
}

/* Bytes below the write pointer become zone_unusable, group and pool. */
static int to_unusable(struct model *m, int gi, bool from_reserved,
		       uint64_t bytes)
{
	struct model_group *g = group_of(m, gi);
	struct model_pool *p;
	uint64_t *gfrom, *pfrom;

	if (!g || bad_size(bytes))
		return -EINVAL;
	p = &m->pools[g->pool];
	gfrom = from_reserved ? &g->reserved : &g->used;
	pfrom = from_reserved ? &p->reserved : &p->used;
	if (*gfrom < bytes || *pfrom < bytes)
		return -EINVAL;
	if (claim_add(p, &p->zone_unusable, bytes))
		return -EINVAL;
	*pfrom -= bytes;
	g->zone_unusable += bytes;
	*gfrom -= bytes;
	if (from_reserved && !g->reserved && g->active &&
	    g->alloc_offset == g->capacity)
		release_token(m, gi);
	queue_candidate(m, gi);
	return 0;
}

int model_zone_group_abandon(struct model *m, int gi, uint64_t bytes)
{
	return to_unusable(m, gi, true, bytes);
}

int model_zone_group_free(struct model *m, int gi, uint64_t bytes)
{
	return to_unusable(m, gi, false, bytes);
}

void model_zone_group_info(const struct model *m, int gi,
			   struct srsv_zone_group_info *info)
{
	const struct model_group *g = &m->groups[gi];

	memset(info, 0, sizeof(*info));
	info->start = g->start;
	info->length = g->length;
	info->capacity = g->capacity;
	info->alloc_offset = g->alloc_offset;
	info->used = g->used;
	info->reserved = g->reserved;
	info->zone_unusable = g->zone_unusable;
	info->kind = g->kind;
	info->pool = g->pool;
	info->active = g->active;
	info->open = g->open;
	info->busy = g->busy;
	info->dedicated = m->dedicated[g->kind] == gi;
}

void model_zoned_get_info(const struct model *m, struct srsv_zoned_info *info)
{
	memset(info, 0, sizeof(*info));
	info->max_active_zones = m->zcfg.max_active_zones;
	info->active = m->active_count;
	for (int k = 0; k < SRSV_ZONE_KIND_COUNT; k++)
		info->active_by_kind[k] = m->active_by_kind[k];
	info->reserved_metadata_left = reserved_left(m, CLASS_METADATA);
	info->reserved_system_left = reserved_left(m, CLASS_SYSTEM);
	info->open = m->nr_active_list;
	for (int i = 0; i < MODEL_GROUPS; i++)
		info->nr_groups += m->groups[i].exists;
	info->hints = m->hints;
	info->hint_groups_looked = m->hint_looked;
	info->resets = m->resets;
	info->relocations = m->relocations;
	info->flush_groups_looked = m->flush_looked;
}

static bool resettable(const struct model_group *g)
{
	return !g->active && !g->used && !g->reserved &&
	       g->zone_unusable == g->length;
}

static bool sparse(const struct model *m, const struct model_group *g)
{
	uint64_t freed = g->zone_unusable - tail(g);

	return !g->active && g->alloc_offset == g->capacity && !g->reserved &&
	       g->used && freed >= mult_perc(g->capacity,
					     m->zcfg.reclaim_threshold_pct);
}

static int call_zone(struct model *m, int (*fn)(struct model *, int, void *),
		     int gi)
{
	int ret;

	if (!fn)
		return 0;
	m->in_callback++;
	ret = fn(m, gi, m->hooks.user);
	m->in_callback--;
	return ret;
}

/*
 * Reset a group marked busy: its capacity returns to the pool.  Returns
 * the bytes given back; 0 (the engine or the accounting refused) leaves
 * the group not busy and not queued.
 */
static uint64_t reset_group(struct model *m, int gi)
{
	struct model_group *g = &m->groups[gi];
	struct model_pool *p = &m->pools[g->pool];
	int ret = call_zone(m, m->have_zone_reset ? m->hooks.zone_reset : NULL,
			    gi);
	uint64_t freed = 0;

	if (!ret && resettable(g) && p->zone_unusable >= g->capacity) {
		p->zone_unusable -= g->capacity;
		g->alloc_offset = 0;
		g->zone_unusable = tail(g);
		freed = g->capacity;
		if (reserves_refill(m, p, freed, false))
			try_grant(m, p);
		m->resets++;
	}
	g->busy = false;
	return freed;
}

/* A flush of 0 bytes names no target: the batch alone bounds the pass. */
static bool enough(uint64_t freed, uint64_t wanted)
{
	return wanted && freed >= wanted;
}

/* RESET_ZONES: the oldest fully freed groups first, until @wanted bytes
 * are back or SRSV_ZONED_RESET_BATCH candidates were taken. */
static void reset_zones(struct model *m, int pool, uint64_t wanted)
{
	int failed[SRSV_ZONED_RESET_BATCH];
	unsigned nr_failed = 0;
	uint64_t freed = 0;

	for (unsigned taken = 0; taken < SRSV_ZONED_RESET_BATCH &&
	     !enough(freed, wanted); taken++) {
		struct model_group *g;
		uint64_t got;
		int gi;

		if (!m->nr_unused[pool])
			break;
		gi = m->unused[pool][0];
		queue_remove(m->unused[pool], &m->nr_unused[pool], gi);
		g = &m->groups[gi];
		g->on_unused = false;
		m->flush_looked++;
		if (g->busy || !resettable(g)) {
			queue_candidate(m, gi);
			continue;
		}
		g->busy = true;
		got = reset_group(m, gi);
		if (got)
			freed += got;
		else
			failed[nr_failed++] = gi;
	}
	/* Not retried in the same pass: the device just refused them. */
	for (unsigned i = 0; i < nr_failed; i++)
		queue_candidate(m, failed[i]);
}

/*
 * RECLAIM_ZONES: of the queued sparse groups, the SRSV_ZONED_RECLAIM_BATCH
 * with the fewest used bytes (ties: queue order) are relocated and reset,
 * until @wanted bytes are back.  Groups no longer sparse leave the queue;
 * the others keep their place.
 */
static void reclaim_zones(struct model *m, int pool, uint64_t wanted)
{
	int batch[SRSV_ZONED_RECLAIM_BATCH], drop[MODEL_GROUPS];
	int mine[MODEL_GROUPS];
	unsigned nr = 0, nr_drop = 0, n = m->nr_reclaim[pool];
	uint64_t freed = 0;

	if (!m->have_zone_relocate)
		return;
	memcpy(mine, m->reclaim[pool], n * sizeof(int));
	m->nr_reclaim[pool] = 0;
	for (unsigned i = 0; i < n; i++) {
		const struct model_group *g = &m->groups[mine[i]];
		unsigned j;

		m->flush_looked++;
		if (!sparse(m, g)) {
			drop[nr_drop++] = mine[i];
			mine[i] = -1;
			continue;
		}
		if (nr == SRSV_ZONED_RECLAIM_BATCH &&
		    g->used >= m->groups[batch[nr - 1]].used)
			continue;
		if (nr < SRSV_ZONED_RECLAIM_BATCH)
			nr++;
		for (j = nr - 1; j > 0 && m->groups[batch[j - 1]].used > g->used;
		     j--)
			batch[j] = batch[j - 1];
		batch[j] = mine[i];
	}
	/* The chosen leave the queue, the rest keep their order. */
	for (unsigned i = 0; i < n; i++) {
		bool chosen = false;

		if (mine[i] < 0)
			continue;
		for (unsigned j = 0; j < nr; j++)
			chosen |= batch[j] == mine[i];
		if (chosen)
			m->groups[mine[i]].on_reclaim = false;
		else
			m->reclaim[pool][m->nr_reclaim[pool]++] = mine[i];
	}
	for (unsigned i = 0; i < nr_drop; i++) {
		m->groups[drop[i]].on_reclaim = false;
		queue_candidate(m, drop[i]);
	}
	for (unsigned i = 0; i < nr; i++) {
		struct model_group *g = &m->groups[batch[i]];
		uint64_t got;

		if (enough(freed, wanted) || g->busy || !sparse(m, g)) {
			queue_candidate(m, batch[i]);
			continue;
		}
		g->busy = true;
		if (!call_zone(m, m->hooks.zone_relocate, batch[i]))
			m->relocations++;
		if (!resettable(g)) {
			g->busy = false;
			queue_candidate(m, batch[i]);
			continue;
		}
		got = reset_group(m, batch[i]);
		if (got)
			freed += got;
		else
			queue_candidate(m, batch[i]);
	}
}

static void zoned_flush(struct model *m, int pool, int state, uint64_t wanted)
{
	if (state == SRSV_STATE_RESET_ZONES)
		reset_zones(m, pool, wanted);
	else if (state == SRSV_STATE_RECLAIM_ZONES)
		reclaim_zones(m, pool, wanted);
}

/* ---- views ---- */

void model_space_info(const struct model *m, int pool,
		      struct srsv_space_info *info,
		      struct srsv_ticket_info *tickets, size_t max, size_t *nr)
{
	const struct model_pool *p = &m->pools[pool];
	size_t n = 0;

	memset(info, 0, sizeof(*info));
	info->kind = p->kind;
	info->total = p->total;
	info->used = p->used;
	info->pinned = p->pinned;
	info->reserved = p->reserved;
	info->may_use = p->may_use;
	info->readonly = p->readonly;
	info->zone_unusable = p->zone_unusable;
	info->reclaim_size = p->reclaim_size;
	info->tickets_id = p->tickets_id;
	info->clamp = p->clamp;
	info->full = p->full;
	info->flushing = p->flush;
	info->force_alloc = p->force_alloc;
	info->nr_tickets = p->qlen[MODEL_Q_NORMAL];
	info->nr_priority_tickets = p->qlen[MODEL_Q_PRIORITY];
	info->unallocated = m->unallocated;
	info->delalloc_bytes = m->delalloc;
	info->ordered_bytes = m->ordered;
	if (pool == metadata_pool(m)) {
		info->global_rsv_size = m->rsvs[SRSV_RSV_GLOBAL].size;
		info->global_rsv_reserved = m->rsvs[SRSV_RSV_GLOBAL].reserved;
		info->trans_rsv_reserved = m->rsvs[SRSV_RSV_TRANS].reserved;
		info->delayed_rsv_reserved = m->rsvs[SRSV_RSV_DELOPS].reserved;
		info->delayed_refs_rsv_reserved =
			m->rsvs[SRSV_RSV_DELREFS].reserved;
	}
	info->async_runs = p->async_runs;
	memcpy(info->flushes, p->flushes, sizeof(info->flushes));
	info->tickets_granted = p->granted;
	info->tickets_failed = p->failed;
	info->mover_rsv_size = p->mover_size;
	info->mover_rsv_reserved = p->mover_reserved;
	{
		/* The figures of all states together, without wrapping. */
		u128 sum = 0;

		for (int st = 0; st < SRSV_STATE_COUNT; st++)
			sum += p->reclaimable[st];
		info->reclaimable = sum > UINT64_MAX ? UINT64_MAX :
						       (uint64_t)sum;
	}
	for (int q = 0; q < 2; q++) {
		for (unsigned i = 0; i < p->qlen[q]; i++, n++) {
			const struct model_ticket *t =
				&m->tickets[p->queue[q][i]];

			if (n >= max)
				continue;
			tickets[n].bytes = t->orig_bytes;
			tickets[n].age_ns = 0;
			tickets[n].mode = t->mode;
			tickets[n].priority = q == MODEL_Q_PRIORITY;
		}
	}
	if (nr)
		*nr = n;
}

void model_rsv_info(const struct model *m, int rsv, struct srsv_rsv_info *info)
{
	const struct model_rsv *r = &m->rsvs[rsv];

	memset(info, 0, sizeof(*info));
	info->size = r->size;
	info->reserved = r->reserved;
	info->type = r->type;
	/* rsv.h: "full" is reserved >= size. */
	info->full = r->reserved >= r->size;
	info->failfast = r->failfast;
}

void model_quota_info(const struct model *m, int q,
		      struct srsv_quota_info *info)
{
	const struct model_quota *qu = &m->quotas[q];

	memset(info, 0, sizeof(*info));
	info->id = qu->id;
	info->limit = qu->limit;
	for (int k = 0; k < SRSV_QUOTA_KIND_COUNT; k++)
		info->reserved[k] = qu->reserved[k];
	info->used = qu->used;
	info->charged = model_quota_charged(m, q);
	info->flushes = qu->flushes;
	info->flush_waits = qu->flush_waits;
	info->edquot = qu->edquot;
}

/* ---- block groups (bgroup.h) ----
 *
 * Written from bgroup.h's doxygen and from btrfs's block-group.c and
 * space-info.c: btrfs_delete_unused_bgs() (an emptied group returns after
 * the commit that emptied it; the last of its profile stays),
 * should_reclaim_block_group(), calc_dynamic_reclaim_threshold(),
 * do_reclaim_sweep() with reclaim marks and its urgent second pass,
 * btrfs_inc_block_group_ro() (take) and btrfs_statfs().  Groups are kept
 * sorted by address.  Counter moves on the pools refuse underflow (and
 * change nothing), as every counter of the library does.
 */

/* btrfs's statfs: metadata counts as exhausted below this much room
 * above the global reserve (bgroup.h: "its free bytes less 4 MiB"). */
#define STATFS_META_THRESH (UINT64_C(4) << 20)

static unsigned bg_factor(const struct model *m, const struct model_pool *p)
{
	return p->is_data ? m->bgcfg.data_raid_factor : m->raid_factor;
}

static uint64_t bg_pinned(const struct model_bgroup *g)
{
	return g->pinned[0] + g->pinned[1];
}

static uint64_t bg_room(const struct model_bgroup *g)
{
	return g->length - g->used - bg_pinned(g);
}

/* The group covering @addr, or -1. */
static int bg_lookup(const struct model *m, uint64_t addr)
{
	for (unsigned i = 0; i < m->nr_bgs; i++)
		if (addr >= m->bgs[i].start &&
		    addr - m->bgs[i].start < m->bgs[i].length)
			return (int)i;
	return -1;
}

static void bg_info(const struct model_bgroup *g, struct srsv_bgroup_info *info)
{
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	info->start = g->start;
	info->length = g->length;
	info->used = g->used;
	info->pinned = bg_pinned(g);
	info->pool = g->pool;
	info->reclaim_mark = g->reclaim_mark;
	info->readonly = g->readonly;
	info->unused = g->unused;
	info->candidate = g->candidate;
}

/* calc_unalloc_target(): SRSV_BGROUP_UNALLOC_TARGET data chunks. */
static unsigned dynamic_threshold(const struct model *m,
				  const struct model_pool *p)
{
	u128 target = (u128)SRSV_BGROUP_UNALLOC_TARGET *
		      m->data_chunk_allowance;
	u128 want = target > m->unallocated ? target - m->unallocated : 0;
	u128 used = claimed(p);
	u128 unused = p->total > used ? p->total - used : 0;

	/* Nothing to relocate into: "it won't work anyway". */
	if (unused < m->data_chunk_allowance || !target)
		return 0;
	return (unsigned)(want * 100 / target);
}

/* btrfs_calc_reclaim_threshold() */
static unsigned reclaim_threshold(const struct model *m,
				  const struct model_pool *p)
{
	return m->bgcfg.dynamic_reclaim ? dynamic_threshold(m, p) :
					  m->bgcfg.reclaim_threshold_pct;
}

static void mark_candidate(struct model *m, struct model_bgroup *g)
{
	if (!g->candidate) {
		g->candidate = true;
		g->candidate_seq = ++m->bg_seq;
		m->bgst.marked++;
	}
}

/* Onto the unused list (btrfs_mark_bg_unused()), at its tail. */
static void mark_unused(struct model *m, struct model_bgroup *g)
{
	if (!g->unused) {
		g->unused = true;
		g->unused_seq = ++m->bg_seq;
	}
}

/* do_reclaim_sweep() over the groups of @pool. */
static void sweep(struct model *m, int pool)
{
	const struct model_pool *p = &m->pools[pool];
	unsigned pct = reclaim_threshold(m, p);
	/* is_reclaim_urgent(): less than a data chunk unallocated. */
	bool urgent = m->unallocated < m->data_chunk_allowance;
	bool try_again = true;

	m->bgst.sweeps++;
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned i = 0; i < m->nr_bgs; i++) {
			struct model_bgroup *g = &m->bgs[i];

			/* Emptied groups go back at the commit anyway. */
			if (g->pool != pool || g->readonly || g->unused)
				continue;
			if (g->used < mult_perc(g->length, pct) &&
			    g->reclaim_mark) {
				try_again = false;
				mark_candidate(m, g);
			}
			if (g->reclaim_mark < UINT32_MAX)
				g->reclaim_mark++;
		}
		/* A fresh group is taken only when reclaim is urgent and no
		 * stale one qualified. */
		if (!(try_again && urgent))
			break;
		try_again = false;
	}
}

/* should_reclaim_block_group(): this free crossed the threshold. */
static bool should_reclaim(const struct model *m, const struct model_bgroup *g,
			   uint64_t freed)
{
	unsigned pct = reclaim_threshold(m, &m->pools[g->pool]);
	uint64_t thresh = mult_perc(g->length, pct);

	return pct && g->used + freed >= thresh && g->used < thresh;
}

int model_bgroups_init(struct model *m, const struct srsv_bgroup_config *cfg)
{
	if (!cfg || cfg->size < sizeof(*cfg))
		return -EINVAL;
	for (size_t i = sizeof(*cfg); i < cfg->size; i++)
		if (((const unsigned char *)cfg)[i])
			return -EINVAL;
	if (cfg->reclaim_threshold_pct > 100 || !cfg->data_raid_factor ||
	    cfg->data_raid_factor > 4)
		return -EINVAL;
	if (m->bg_on)
		return -EALREADY;
	m->bgcfg = *cfg;
	m->bgcfg.size = sizeof(m->bgcfg);
	m->bg_on = true;
	return 0;
}

int model_bgroup_add(struct model *m, int pool, uint64_t start,
		     uint64_t length)
{
	struct model_pool *p = m->bg_on ? pool_of(m, pool) : NULL;
	unsigned pos = 0;
	u128 raw;

	if (!p || bad_size(length) || start > UINT64_MAX - length)
		return -EINVAL;
	for (unsigned i = 0; i < m->nr_bgs; i++) {
		const struct model_bgroup *g = &m->bgs[i];

		if (start < g->start + g->length && g->start < start + length)
			return -EINVAL;		/* overlap */
		if (g->start < start)
			pos = i + 1;
	}
	if (m->nr_bgs == MODEL_BGROUPS)
		return -ENOMEM;		/* the model's limit, not the library's */
	if (p->total + length > SRSV_MAX_BYTES)
		return -EINVAL;
	raw = (u128)length * bg_factor(m, p);
	if (m->unallocated < raw)
		return -ENOSPC;
	m->unallocated -= (uint64_t)raw;
	p->total += length;
	p->full = false;
	memmove(&m->bgs[pos + 1], &m->bgs[pos],
		(m->nr_bgs - pos) * sizeof(m->bgs[0]));
	memset(&m->bgs[pos], 0, sizeof(m->bgs[0]));
	m->bgs[pos].start = start;
	m->bgs[pos].length = length;
	m->bgs[pos].pool = pool;
	m->nr_bgs++;
	m->bgst.added++;
	/* Space came back: the movers' reserve first (lib/bgroup.c). */
	if (reserves_refill(m, p, length, false))
		try_grant(m, p);
	return 0;
}

/* The group an extent call names: -ENOENT no group at @bytenr, -EINVAL
 * another pool's group or an extent that leaves it. */
static int bg_resolve(const struct model *m, int pool, uint64_t bytenr,
		      uint64_t bytes, int *out)
{
	const struct model_bgroup *g;
	int gi;

	if (!m->bg_on || pool < 0 || pool >= SRSV_POOL_COUNT ||
	    !m->pools[pool].exists || bad_size(bytes))
		return -EINVAL;
	gi = bg_lookup(m, bytenr);
	if (gi < 0)
		return -ENOENT;
	g = &m->bgs[gi];
	if (g->pool != pool || bytes > g->length - (bytenr - g->start))
		return -EINVAL;
	*out = gi;
	return 0;
}

int model_bgroup_alloc(struct model *m, int pool, uint64_t bytenr,
		       uint64_t bytes)
{
	struct model_bgroup *g;
	int gi, ret = bg_resolve(m, pool, bytenr, bytes, &gi);

	if (ret)
		return ret;
	g = &m->bgs[gi];
	if (g->readonly)
		return -EROFS;
	if (bytes > bg_room(g))
		return -EINVAL;
	g->used += bytes;
	g->reclaim_mark = 0;
	g->unused = false;
	return 0;
}

int model_bgroup_free(struct model *m, int pool, uint64_t bytenr,
		      uint64_t bytes, uint64_t transid)
{
	struct model_bgroup *g;
	unsigned b = transid & 1;
	int gi, ret = bg_resolve(m, pool, bytenr, bytes, &gi);

	if (ret)
		return ret;
	g = &m->bgs[gi];
	/* Reported committed already, or a bucket holding another open
	 * transaction of the same parity. */
	if (transid && (transid <= m->bg_committed ||
			(g->pinned[b] && g->pinned_trans[b] != transid)))
		return -EINVAL;
	if (bytes > g->used)
		return -EINVAL;
	g->used -= bytes;
	if (transid) {
		g->pinned[b] += bytes;
		g->pinned_trans[b] = transid;
	}
	if (m->bgcfg.periodic_reclaim) {
		/* A data chunk's worth freed makes the pool worth a sweep. */
		m->bg_reclaimable[pool] += bytes;
		if (m->bg_reclaimable[pool] >= m->data_chunk_allowance)
			m->bg_ready[pool] = true;
	}
	if (!g->used)
		mark_unused(m, g);
	else if (!m->bgcfg.periodic_reclaim && !g->readonly &&
		 should_reclaim(m, g, bytes))
		mark_candidate(m, g);
	return 0;
}

static unsigned pool_groups(const struct model *m, int pool)
{
	unsigned n = 0;

	for (unsigned i = 0; i < m->nr_bgs; i++)
		n += m->bgs[i].pool == pool;
	return n;
}

/*
 * Group @gi goes back to unallocated: the part of it that is not yet
 * read-only must be free in its pool (claimed as a reservation would be,
 * never overcommitting), else -ENOSPC and nothing changes.
 */
static int give_back(struct model *m, unsigned gi)
{
	struct model_bgroup *g = &m->bgs[gi];
	struct model_pool *p = &m->pools[g->pool];
	uint64_t rest = g->length - g->ro_bytes;

	if (rest && !fits(m, p, rest, CHARGE_NO_OVERCOMMIT))
		return -ENOSPC;
	ctr_sub(&p->total, g->length);
	ctr_sub(&p->readonly, g->ro_bytes);
	m->unallocated += g->length * bg_factor(m, p);
	/* New device space: every pool may grow again. */
	for (int k = 0; k < SRSV_POOL_COUNT; k++)
		m->pools[k].full = false;
	/* A reclaimed group went back: the sweep made progress. */
	if (g->readonly && m->bgcfg.periodic_reclaim)
		m->bg_ready[g->pool] = true;
	memmove(&m->bgs[gi], &m->bgs[gi + 1],
		(m->nr_bgs - gi - 1) * sizeof(m->bgs[0]));
	m->nr_bgs--;
	m->bgst.returned++;
	return 0;
}

/* Metadata tickets may overcommit into the space that came back. */
static void grant_metadata(struct model *m)
{
	for (int k = 0; k < SRSV_POOL_COUNT; k++)
		if (m->pools[k].exists && !m->pools[k].is_data)
			try_grant(m, &m->pools[k]);
}

int model_ctx_commit_done(struct model *m, uint64_t transid)
{
	int returned = 0;

	if (!m->bg_on || !transid || transid <= m->bg_committed)
		return -EINVAL;
	m->bg_committed = transid;
	m->bgst.committed = transid;
	for (unsigned i = 0; i < m->nr_bgs; i++) {
		struct model_bgroup *g = &m->bgs[i];
		struct model_pool *p = &m->pools[g->pool];
		uint64_t freed = 0;

		for (int b = 0; b < 2; b++) {
			if (g->pinned[b] && g->pinned_trans[b] <= transid) {
				freed += g->pinned[b];
				g->pinned[b] = 0;
			}
		}
		/* Bytes unpinned in a read-only group stay out of reach
		 * (btrfs's unpin_extent_range() adds them to bytes_readonly),
		 * if the pool can spare them. */
		if (freed && g->readonly &&
		    fits(m, p, freed, CHARGE_NO_OVERCOMMIT)) {
			claim_add(p, &p->readonly, freed);
			g->ro_bytes += freed;
		}
	}
	/* The unused groups in the order they became so (the library's
	 * unused list); a group kept stays for the next commit. */
	for (uint64_t after = 0;;) {
		int gi = -1;

		for (unsigned i = 0; i < m->nr_bgs; i++) {
			const struct model_bgroup *g = &m->bgs[i];

			if (g->unused && g->unused_seq > after &&
			    (gi < 0 || g->unused_seq < m->bgs[gi].unused_seq))
				gi = (int)i;
		}
		if (gi < 0)
			break;
		after = m->bgs[gi].unused_seq;
		if (!m->bgs[gi].used && !bg_pinned(&m->bgs[gi]) &&
		    !m->bgs[gi].taken &&
		    pool_groups(m, m->bgs[gi].pool) > 1 &&
		    !give_back(m, (unsigned)gi))
			returned++;
	}
	if (m->bgcfg.periodic_reclaim) {
		for (int k = 0; k < SRSV_POOL_COUNT; k++) {
			if (!m->pools[k].exists || !m->bg_ready[k])
				continue;
			m->bg_ready[k] = false;
			m->bg_reclaimable[k] = 0;
			sweep(m, k);
		}
	}
	if (returned)
		grant_metadata(m);
	return returned;
}

int model_bgroup_remove(struct model *m, int pool, uint64_t start)
{
	const struct model_bgroup *g;
	int gi, ret;

	if (!m->bg_on || !pool_of(m, pool))
		return -EINVAL;
	gi = bg_lookup(m, start);
	if (gi < 0)
		return -ENOENT;
	g = &m->bgs[gi];
	if (g->start != start || g->pool != pool)
		return -EINVAL;
	if (g->used || bg_pinned(g) || g->taken)
		return -EBUSY;
	ret = give_back(m, (unsigned)gi);
	if (!ret)
		grant_metadata(m);
	return ret;
}

int model_bgroup_get(const struct model *m, uint64_t bytenr,
		     struct srsv_bgroup_info *info)
{
	int gi;

	if (!m->bg_on)
		return -EINVAL;
	gi = bg_lookup(m, bytenr);
	if (gi < 0)
		return -ENOENT;
	bg_info(&m->bgs[gi], info);
	return 0;
}

int model_bgroup_next(const struct model *m, uint64_t from,
		      struct srsv_bgroup_info *info)
{
	if (!m->bg_on)
		return -EINVAL;
	for (unsigned i = 0; i < m->nr_bgs; i++) {
		if (m->bgs[i].start >= from) {
			bg_info(&m->bgs[i], info);
			return 0;
		}
	}
	return -ENOENT;
}

int model_bgroup_find_free(const struct model *m, int pool, uint64_t bytes,
			   uint64_t *start)
{
	if (!m->bg_on || !pool_of((struct model *)m, pool) || bad_size(bytes))
		return -EINVAL;
	for (unsigned i = 0; i < m->nr_bgs; i++) {
		const struct model_bgroup *g = &m->bgs[i];

		if (g->pool == pool && !g->readonly && bg_room(g) >= bytes) {
			*start = g->start;
			return 0;
		}
	}
	return -ENOSPC;
}

/* Still worth taking: under the threshold now (or empty), not emptied or
 * read-only meanwhile. */
static bool still_candidate(const struct model *m, const struct model_bgroup *g)
{
	return !g->readonly && !g->unused &&
	       (!g->used || g->used < mult_perc(g->length,
				reclaim_threshold(m, &m->pools[g->pool])));
}

/* Of two candidates with the same used bytes, is @g taken before @best?
 * (m->bg_tie_by_pool: the lower pool kind first, then queue order, as
 * the library does today; the fuzzer's steering.) */
static bool tie_first(const struct model *m, const struct model_bgroup *g,
		      const struct model_bgroup *best)
{
	if (m->bg_tie_by_pool && g->pool != best->pool)
		return g->pool < best->pool;
	return g->candidate_seq < best->candidate_seq;
}

int model_bgroup_reclaim_take(struct model *m, struct srsv_bgroup_info *info)
{
	if (!m->bg_on || !info)
		return -EINVAL;
	if (m->bg_taken >= SRSV_BGROUP_RECLAIM_BATCH)
		return -EBUSY;
	for (;;) {
		struct model_bgroup *best = NULL;
		struct model_pool *p;
		uint64_t room;

		for (unsigned i = 0; i < m->nr_bgs; i++) {
			struct model_bgroup *g = &m->bgs[i];

			if (!g->candidate)
				continue;
			if (!still_candidate(m, g)) {
				g->candidate = false;
				continue;
			}
			/* The least used first; queue order on ties (one
			 * list for every pool, as btrfs's reclaim_bgs). */
			if (!best || g->used < best->used ||
			    (g->used == best->used &&
			     tie_first(m, g, best)))
				best = g;
		}
		if (!best)
			return -ENOENT;
		best->candidate = false;
		/* btrfs_reclaim_block_group(): pinned bytes, not now; emptied
		 * since it was marked, the unused list returns it. */
		if (bg_pinned(best))
			continue;
		if (!best->used) {
			mark_unused(m, best);
			continue;
		}
		p = &m->pools[best->pool];
		room = bg_room(best);
		/* Its free bytes become read-only; if reservations hold
		 * them, it is skipped (btrfs_inc_block_group_ro(): -ENOSPC). */
		if (room && !fits(m, p, room, CHARGE_NO_OVERCOMMIT))
			continue;
		if (room)
			claim_add(p, &p->readonly, room);
		best->ro_bytes = room;
		best->readonly = true;
		best->taken = true;
		best->taken_round = m->bg_round;
		m->bg_taken++;
		bg_info(best, info);
		return 0;
	}
}

static void reclaim_end(struct model *m, struct model_bgroup *g, int result)
{
	struct model_pool *p = &m->pools[g->pool];

	g->taken = false;
	m->bg_taken--;
	if (!result) {
		/* Relocated: read-only until the commit returns it. */
		mark_unused(m, g);
		m->bgst.reclaimed++;
		return;
	}
	/* Its read-only bytes are free again: tickets may fit. */
	if (g->ro_bytes && !ctr_sub(&p->readonly, g->ro_bytes) &&
	    reserves_refill(m, p, g->ro_bytes, false))
		try_grant(m, p);
	g->ro_bytes = 0;
	g->readonly = false;
	m->bgst.reclaim_failed++;
}

int model_bgroup_reclaim_done(struct model *m, uint64_t start, int result)
{
	struct model_bgroup *g;
	int gi;

	if (!m->bg_on || result > 0)
		return -EINVAL;
	gi = bg_lookup(m, start);
	if (gi < 0)
		return -ENOENT;
	g = &m->bgs[gi];
	if (g->start != start || !g->taken)
		return -EINVAL;
	if (!result && g->used)
		return -EBUSY;
	reclaim_end(m, g, result);
	return 0;
}

int model_bgroup_reclaim_threshold(const struct model *m, int pool)
{
	if (!m->bg_on || !pool_of((struct model *)m, pool))
		return -EINVAL;
	return (int)reclaim_threshold(m, &m->pools[pool]);
}

int model_bgroup_stats(const struct model *m, struct srsv_bgroup_stats *st)
{
	if (!m->bg_on)
		return -EINVAL;
	*st = m->bgst;
	st->nr_groups = m->nr_bgs;
	return 0;
}

/* RECLAIM_CHUNKS, before the engine: sweep the other pools (the urgent
 * rule applies by itself when unallocated space is short); the engine is
 * called if any group is a candidate. */
static unsigned bg_prepare(struct model *m, int pool, uint64_t *prev)
{
	unsigned candidates = 0;

	*prev = m->bg_round;
	if (!m->bg_on)
		return 0;
	for (int k = 0; k < SRSV_POOL_COUNT; k++)
		if (m->pools[k].exists && k != pool)
			sweep(m, k);
	for (unsigned i = 0; i < m->nr_bgs; i++)
		candidates += m->bgs[i].candidate;
	/* The callback's takes belong to this round. */
	if (candidates)
		m->bg_round = ++m->bg_rounds;
	return candidates;
}

/* After the RECLAIM_CHUNKS callback: the groups the callback took and left
 * taken end, with 0 if they are empty, -EAGAIN otherwise; groups taken
 * outside the callback stay taken (bgroup.h, srsv_bgroup_reclaim_done()). */
static void bg_finish(struct model *m, uint64_t prev)
{
	uint64_t round = m->bg_round;

	m->bg_round = prev;
	for (unsigned i = 0; i < m->nr_bgs && m->bg_taken; i++)
		if (m->bgs[i].taken && m->bgs[i].taken_round == round)
			reclaim_end(m, &m->bgs[i],
				    m->bgs[i].used ? -EAGAIN : 0);
}

/* btrfs_statfs(), in bytes, as bgroup.h states it. */
int model_ctx_statfs(const struct model *m, struct srsv_statfs *st)
{
	unsigned df = m->bg_on ? m->bgcfg.data_raid_factor : 1;
	bool mixed = m->pools[SRSV_POOL_MIXED].exists;
	u128 free_data = 0, free_meta = 0, used_raw = 0, total, used, avail;
	uint64_t global = m->rsvs[SRSV_RSV_GLOBAL].size;
	bool meta_full = m->pools[metadata_pool(m)].full;

	if (!st)
		return -EINVAL;
	for (int k = 0; k < SRSV_POOL_COUNT; k++) {
		const struct model_pool *p = &m->pools[k];
		unsigned f = p->is_data ? df : m->raid_factor;

		if (!p->exists)
			continue;
		if (p->is_data) {
			/* Read-only and zone-unusable bytes: no write gets
			 * them. */
			u128 busy = (u128)p->used + p->readonly +
				    p->zone_unusable;

			/* The movers' reserve is not for writers. */
			busy += p->mover_size;

			if (p->total > busy)
				free_data += (p->total - busy) * f;
		} else if (k == SRSV_POOL_METADATA && p->total > p->used) {
			free_meta += (u128)(p->total - p->used) * f;
		}
		used_raw += (u128)p->used * f;
	}
	memset(st, 0, sizeof(*st));
	total = m->device_bytes / df;
	used = used_raw / df;
	total = total > used ? total - used : 0;
	total = total > global ? total - global : 0;
	avail = free_data / df + m->unallocated / df;
	if (!mixed && meta_full &&
	    (free_meta < STATFS_META_THRESH ||
	     free_meta - STATFS_META_THRESH < global))
		avail = 0;
	st->total = m->device_bytes / df;
	st->free = (uint64_t)total;
	st->avail = avail > UINT64_MAX ? UINT64_MAX : (uint64_t)avail;
	st->metadata_free = mixed ? 0 : free_meta > UINT64_MAX ? UINT64_MAX :
					(uint64_t)free_meta;
	st->global_rsv_size = global;
	st->metadata_full = meta_full;
	return 0;
}
