/* SPDX-License-Identifier: MIT */
/*
 * The flush walks: the async walks that serve normal tickets, priority
 * flushing in the caller's thread, rescue rounds, and failing tickets.
 *
 * Layer: the flush walks, above the engine-callback wrapper, pacing and
 * preemption (a walk that served every ticket hands over to the
 * preemptive flusher), below the API.  The walks run as jobs of the
 * workers (ctx.c hands them over) or in a waiting caller's thread.
 *
 * HOW SPACE IS RECLAIMED FOR WAITING TICKETS
 *
 * The library cannot free anything itself: it asks the engine, one flush
 * state at a time (enum srsv_flush_state, cheapest first), and the engine
 * reports what it freed through the transition functions, which grant
 * queued tickets in FIFO order.  Which states are walked, and how, follows
 * btrfs:
 *
 * - Async metadata (FLUSH_ALL, FLUSH_ALL_STEAL tickets): walk the metadata
 *   array.  Whenever a ticket was granted during a step (tickets_id moved)
 *   the walk restarts from the cheapest state, and one commit cycle is
 *   forgiven: cheap states are producing, keep using them.  DELALLOC_FULL
 *   and ALLOC_CHUNK_FORCE are skipped on the first cycle (do not empty the
 *   system of dirty data, or create a barely used chunk, before a commit had
 *   its chance to free pinned space).  Passing the last state is one commit
 *   cycle; after more than two, maybe_fail_all_tickets() fails tickets from
 *   the head, trying to steal from the global reserve first, until one is
 *   granted or none is left.
 * - Async data (FLUSH_DATA tickets): force pool growth while the pool can
 *   grow, then walk the data array, restarting on progress; exhausted and
 *   full, maybe_fail_all_tickets().
 * - Priority (FLUSH_LIMIT, FLUSH_EVICT): the waiting thread walks its short
 *   array once, then steals (EVICT) or fails.  FLUSH_FREE_SPACE_INODE forces
 *   growth while the pool can grow, then fails.
 *
 * - Rescue before failing (block groups, bgroup.c): a walk that is about
 *   to fail its tickets while its pool is full (it could grow only from
 *   device space another pool holds) first runs a rescue round: the
 *   RECLAIM_CHUNKS state, whose preparation sweeps the other pools with
 *   upstream's urgent rule, then COMMIT_TRANS, so that the chunks the
 *   engine relocated go back to unallocated; then it walks again.  The
 *   async metadata walk does so once its commit cycles are spent, the
 *   async data walk once it is exhausted and full, a FLUSH_EVICT ticket
 *   (or FLUSH_LIMIT, if the engine put COMMIT_TRANS in the priority array)
 *   after its array.  One helper (try_rescue()) for all three, at most
 *   SRSV__MAX_RESCUES rounds per walk.  Walks that may not commit do not
 *   rescue (the default FLUSH_LIMIT array: its caller may hold a
 *   transaction open; FLUSH_FREE_SPACE_INODE: btrfs uses it inside a
 *   commit), and NO_FLUSH, EMERGENCY and NOWAIT requests never reach a
 *   walk at all.
 *   Upstream does this only on zoned devices.  btrfs relocates
 *   conventional block groups asynchronously: do_reclaim_sweep() (from
 *   btrfs_reclaim_sweep(), which btrfs_reclaim_bgs() runs for the
 *   cleaner thread) and btrfs_update_block_group()'s threshold check
 *   (should_reclaim_block_group()) mark groups with
 *   btrfs_mark_bg_to_reclaim(), and btrfs_reclaim_bgs_work() relocates
 *   them in a worker that no ticket waits for; a ticket whose walk ends
 *   before that worker has returned chunks fails with -ENOSPC, and the
 *   space is there for the next one.  Only the zoned RECLAIM_ZONES state
 *   of data_flush_states waits for it (sweep, btrfs_delete_unused_bgs(),
 *   btrfs_reclaim_bgs(), flush_work(&reclaim_bgs_work), then a commit).
 *   We deviate: every walk that may commit rescues, on conventional
 *   chunks too, because the library cannot relocate in the background
 *   itself (only the engine can move extents, and it is asked through the
 *   flush callback), and because "df says free, ENOSPC" is exactly a
 *   ticket that fails while the space sits in another pool's underused
 *   chunks.  The cost falls on a ticket that was about to fail anyway.
 *
 * Every walk is bounded: a step either grants a ticket (and each ticket is
 * granted once) or advances; cycles without progress end in failure, and
 * rescue rounds are counted.  The data walk relies on "full" to stop
 * growing, so an ALLOC_CHUNK_FORCE that adds nothing marks the pool full
 * even if the engine forgot to.
 */
#include <string.h>

#include "bgroup.h"
#include "callback.h"
#include "counters.h"
#include "flush.h"
#include "preempt.h"
#include "tickets.h"
#include "trace.h"
#include "workers.h"

/* btrfs's passes before maybe_fail_all_tickets(): "commit_cycles > 2". */
#define SRSV__MAX_COMMIT_CYCLES 2
/* Block-group rescues (RECLAIM_CHUNKS + COMMIT_TRANS) one walk (async
 * metadata, async data, or one priority ticket's) may run before it fails
 * its tickets: each relocates at most SRSV_BGROUP_RECLAIM_BATCH groups, so
 * a walk moves at most 20 groups' live data before it gives up. */
#define SRSV__MAX_RESCUES 4

static bool past(const struct timespec *deadline)
{
	uint64_t at;

	if (!deadline)
		return false;
	at = (uint64_t)deadline->tv_sec * 1000000000ull +
	     (uint64_t)deadline->tv_nsec;
	return srsv__now_ns() >= at;
}

uint64_t srsv__calc_reclaim_metadata_size(struct srsv_space *s)
{
	uint64_t to_reclaim = srsv__ld(&s->reclaim_size);
	uint64_t avail = srsv__available_free_space(s, SRSV_FLUSH_ALL);
	uint64_t used = srsv__space_used(s, true);
	uint64_t total = srsv__space_counter(s, SRSV__TOTAL);

	srsv__assert_held(&s->lock);
	/*
	 * We may be flushing because we suddenly have less room than before
	 * (unallocated space shrank): add the overage so the walk is pressed
	 * hard enough.
	 */
	if (total + avail < used)
		to_reclaim += used - (total + avail);
	return to_reclaim;
}

bool srsv__maybe_fail_all_tickets(struct srsv_space *s)
{
	uint64_t tickets_id = s->tickets_id;
	int error = (int)(int64_t)srsv__ld(&s->ctx->error);

	srsv__assert_held(&s->lock);
	srsv__trace_dump(s, SRSV__DUMP_FAIL_ALL_TICKETS);
	while (!srsv__list_empty(&s->tickets) && tickets_id == s->tickets_id) {
		struct srsv__ticket *t = srsv__ticket_first(&s->tickets);

		if (!error && srsv__steal_from_global_rsv(s, t))
			return true;
		srsv__ticket_remove(s, t);
		srsv__ticket_end(s, t, error ? error : -ENOSPC);
		/*
		 * Throwing a large head ticket away may let smaller ones
		 * behind it in; nobody else will try while we flush.
		 */
		if (!error)
			srsv__try_grant_tickets(s);
	}
	return tickets_id != s->tickets_id;
}

/* Shutdown or a ctx error ends the walk; returns true when it did. */
static bool walk_interrupted(struct srsv_space *s)
{
	struct srsv_ctx *ctx = s->ctx;
	int error = (int)(int64_t)srsv__ld(&ctx->error);

	srsv__assert_held(&s->lock);
	if (srsv__ld(&ctx->closing)) {
		srsv__fail_all_tickets(s, -ESHUTDOWN);
		return true;
	}
	if (error) {
		srsv__fail_all_tickets(s, error);
		return true;
	}
	return false;
}

static bool array_has(const struct srsv_state_array *arr, int state)
{
	for (unsigned i = 0; i < arr->nr; i++)
		if ((int)arr->states[i] == state)
			return true;
	return false;
}

static bool skip_first_cycle(int state)
{
	return state == SRSV_STATE_DELALLOC_FULL ||
	       state == SRSV_STATE_ALLOC_CHUNK_FORCE;
}

/*
 * May a walk that is about to fail its tickets run a rescue round
 * (rescue_with_chunks())?  Only when chunk reclaim can help and the walk
 * may run it:
 * - a group table (srsv_bgroups_init()): else there is nothing to reclaim;
 * - the pool is full (its last ALLOC_CHUNK could not grow it): it could
 *   grow only from unallocated space that reclaim would give back;
 * - no ctx error (the walk fails with it anyway);
 * - the walk's state array may commit (it holds COMMIT_TRANS): a round
 *   relocates and commits, which a caller holding a transaction open
 *   cannot wait for.  So FLUSH_LIMIT (btrfs's priority_flush_states: its
 *   callers hold a transaction handle) and FLUSH_FREE_SPACE_INODE (no
 *   array; btrfs uses it while writing the free-space cache inside a
 *   commit) are not rescued unless the engine put COMMIT_TRANS in the
 *   priority array.  NO_FLUSH and EMERGENCY never queue a ticket and NOWAIT
 *   never waits (reserve.c), so none of them gets here.
 * Pool lock held.
 */
static bool may_rescue(struct srsv_space *s, const struct srsv_state_array *arr)
{
	srsv__assert_held(&s->lock);
	return srsv__bgroups_enabled(s->ctx) && srsv__ld(&s->full) &&
	       !srsv__ld(&s->ctx->error) &&
	       array_has(arr, SRSV_STATE_COMMIT_TRANS);
}

/*
 * One rescue round, before a walk fails its tickets: relocate underused
 * chunks of the other pools (RECLAIM_CHUNKS, whose preparation sweeps
 * them with the urgent rule, bgroup.c) and commit, so that the groups the
 * relocation emptied go back to unallocated, where ALLOC_CHUNK (or
 * metadata overcommit) finds them.  The one mechanism for every walk that
 * may rescue (may_rescue()): the async metadata walk, the async data walk
 * and the priority walks.  Pool lock held; dropped meanwhile.  False when
 * nothing was relocated (no candidate, or an engine without
 * RECLAIM_CHUNKS): then no commit is run either.
 */
static bool rescue_with_chunks(struct srsv_space *s, uint64_t bytes)
{
	int ret;

	srsv__assert_held(&s->lock);
	srsv__unlock(&s->lock);
	ret = srsv__flush_space(s, bytes, SRSV_STATE_RECLAIM_CHUNKS, false);
	if (ret != -EOPNOTSUPP)
		srsv__flush_space(s, bytes, SRSV_STATE_COMMIT_TRANS, false);
	srsv__lock(&s->lock);
	return ret != -EOPNOTSUPP;
}

/* A rescue round for a walk that has had fewer than SRSV__MAX_RESCUES:
 * true when one ran (and *@rescues counts it).  Pool lock held. */
static bool try_rescue(struct srsv_space *s, const struct srsv_state_array *arr,
		       uint64_t bytes, unsigned *rescues)
{
	if (*rescues >= SRSV__MAX_RESCUES || !may_rescue(s, arr) ||
	    !rescue_with_chunks(s, bytes))
		return false;
	(*rescues)++;
	return true;
}

/* btrfs_async_reclaim_metadata_space() for pool @s. */
void srsv__async_reclaim_metadata(struct srsv_space *s)
{
	const struct srsv_state_array *arr = &s->ctx->cfg.async_metadata_states;
	unsigned idx = 0, commit_cycles = 0, rescues = 0;
	uint64_t to_reclaim, last_tickets_id;

	srsv__lock(&s->lock);
	s->stat_async_runs++;
	/* Grants deferred by NOWAIT releases that found the lock busy. */
	srsv__try_grant_tickets(s);
	if (srsv__list_empty(&s->tickets) || walk_interrupted(s)) {
		s->flush = false;
		srsv__unlock(&s->lock);
		return;
	}
	to_reclaim = srsv__calc_reclaim_metadata_size(s);
	last_tickets_id = s->tickets_id;
	while (idx < arr->nr && !commit_cycles && skip_first_cycle(arr->states[idx]))
		idx++;
	/* An array of first-cycle-skipped states only: the first cycle is
	 * empty, start with the second. */
	if (idx >= arr->nr) {
		idx = 0;
		commit_cycles = 1;
	}
	srsv__unlock(&s->lock);

	while (idx < arr->nr) {
		srsv__flush_space(s, to_reclaim, arr->states[idx], false);
		srsv__lock(&s->lock);
		if (walk_interrupted(s)) {
			s->flush = false;
			srsv__unlock(&s->lock);
			return;
		}
		if (srsv__list_empty(&s->tickets)) {
			s->flush = false;
			/*
			 * Every ticket was served: the walk reclaimed just their
			 * bytes and leaves the pool at the brink.  Let the
			 * preemptive flusher build headroom (it declines if it
			 * is not needed, busy or switched off).
			 */
			if (s->is_metadata)
				srsv__maybe_queue_preempt(s, 0, SRSV_FLUSH_ALL,
					srsv__space_counter(s, SRSV__MAY_USE));
			srsv__unlock(&s->lock);
			return;
		}
		to_reclaim = srsv__calc_reclaim_metadata_size(s);
		if (last_tickets_id == s->tickets_id) {
			idx++;
		} else {
			last_tickets_id = s->tickets_id;
			idx = 0;
			if (commit_cycles)
				commit_cycles--;
		}
		while (idx < arr->nr && !commit_cycles &&
		       skip_first_cycle(arr->states[idx]))
			idx++;
		if (idx >= arr->nr) {
			commit_cycles++;
			if (commit_cycles > SRSV__MAX_COMMIT_CYCLES &&
			    try_rescue(s, arr, to_reclaim, &rescues)) {
				/* One more cycle with the space that came
				 * back (ALLOC_CHUNK can now grow the pool). */
				commit_cycles--;
				idx = 0;
				if (walk_interrupted(s) ||
				    srsv__list_empty(&s->tickets)) {
					s->flush = false;
					srsv__unlock(&s->lock);
					return;
				}
			} else if (commit_cycles > SRSV__MAX_COMMIT_CYCLES) {
				if (srsv__maybe_fail_all_tickets(s)) {
					idx = 0;
					commit_cycles--;
				} else {
					s->flush = false;
				}
			} else {
				idx = 0;
			}
		}
		srsv__unlock(&s->lock);
	}
}

/* btrfs_async_reclaim_data_space() for pool @s. */
void srsv__async_reclaim_data(struct srsv_space *s)
{
	const struct srsv_state_array *arr = &s->ctx->cfg.async_data_states;
	uint64_t last_tickets_id;
	unsigned idx, rescues = 0;

	srsv__lock(&s->lock);
	s->stat_async_runs++;
	srsv__try_grant_tickets(s);
	if (srsv__list_empty(&s->tickets) || walk_interrupted(s)) {
		s->flush = false;
		srsv__unlock(&s->lock);
		return;
	}
	last_tickets_id = s->tickets_id;
	srsv__unlock(&s->lock);

again:
	while (!srsv__ld(&s->full)) {
		srsv__flush_space(s, srsv__ld(&s->reclaim_size),
				  SRSV_STATE_ALLOC_CHUNK_FORCE, false);
		srsv__lock(&s->lock);
		if (srsv__list_empty(&s->tickets) || walk_interrupted(s)) {
			s->flush = false;
			srsv__unlock(&s->lock);
			return;
		}
		last_tickets_id = s->tickets_id;
		srsv__unlock(&s->lock);
	}

	idx = 0;
	while (idx < arr->nr) {
		srsv__flush_space(s, srsv__ld(&s->reclaim_size), arr->states[idx],
				  false);
		srsv__lock(&s->lock);
		if (srsv__list_empty(&s->tickets) || walk_interrupted(s)) {
			s->flush = false;
			srsv__unlock(&s->lock);
			return;
		}
		if (last_tickets_id == s->tickets_id) {
			idx++;
		} else {
			last_tickets_id = s->tickets_id;
			idx = 0;
		}
		if (idx >= arr->nr) {
			/*
			 * Not full: the array ends with ALLOC_CHUNK_FORCE, which
			 * either grows the pool (progress) or marks it full, so
			 * this loop ends.  An overriding array without it cannot
			 * grow the pool: treat it as full.
			 */
			bool full = srsv__ld(&s->full) ||
				    !array_has(arr, SRSV_STATE_ALLOC_CHUNK_FORCE);

			/* Full: chunks of the other pools may give the
			 * device space back; then grow again. */
			if (full && try_rescue(s, arr, srsv__ld(&s->reclaim_size),
					       &rescues)) {
				if (srsv__list_empty(&s->tickets) ||
				    walk_interrupted(s)) {
					s->flush = false;
					srsv__unlock(&s->lock);
					return;
				}
				last_tickets_id = s->tickets_id;
				srsv__unlock(&s->lock);
				goto again;
			}
			if (full && !srsv__maybe_fail_all_tickets(s))
				s->flush = false;
			else
				idx = 0;
			if (!s->flush) {
				srsv__unlock(&s->lock);
				return;
			}
		}
		srsv__unlock(&s->lock);
	}
}

/* End @t when its deadline passed; pool lock held. */
static bool expire(struct srsv_space *s, struct srsv__ticket *t,
		   const struct timespec *deadline)
{
	if (!past(deadline))
		return false;
	srsv__ticket_remove(s, t);
	srsv__ticket_end(s, t, -ETIMEDOUT);
	srsv__try_grant_tickets(s);
	return true;
}

/* priority_reclaim_data_space(): force growth while the pool can grow. */
static void priority_reclaim_data(struct srsv_space *s, struct srsv__ticket *t,
				  const struct timespec *deadline)
{
	srsv__lock(&s->lock);
	while (AO_load(&t->state) == SRSV__TICKET_QUEUED && !srsv__ld(&s->full)) {
		uint64_t bytes = t->bytes;	/* a grant zeroes it: read locked */

		if (srsv__ld(&s->ctx->closing) || expire(s, t, deadline))
			break;
		srsv__unlock(&s->lock);
		srsv__flush_space(s, bytes, SRSV_STATE_ALLOC_CHUNK_FORCE, false);
		srsv__lock(&s->lock);
	}
	if (AO_load(&t->state) == SRSV__TICKET_QUEUED &&
	    !srsv__ld(&s->ctx->closing)) {
		srsv__ticket_remove(s, t);
		srsv__ticket_end(s, t, -ENOSPC);
		srsv__try_grant_tickets(s);
	}
	srsv__unlock(&s->lock);
}

void srsv__priority_reclaim(struct srsv_space *s, struct srsv__ticket *t,
			    const struct timespec *deadline)
{
	struct srsv_ctx *ctx = s->ctx;
	const struct srsv_state_array *arr;
	uint64_t to_reclaim;
	unsigned rescues = 0;
	int error;

	if (t->mode == SRSV_FLUSH_FREE_SPACE_INODE) {
		priority_reclaim_data(s, t, deadline);
		return;
	}
	arr = t->mode == SRSV_FLUSH_EVICT ? &ctx->cfg.evict_states :
					     &ctx->cfg.priority_states;
	srsv__lock(&s->lock);
	to_reclaim = srsv__calc_reclaim_metadata_size(s);
	for (;;) {
		for (unsigned i = 0; i < arr->nr; i++) {
			if (AO_load(&t->state) != SRSV__TICKET_QUEUED ||
			    srsv__ld(&ctx->closing) || expire(s, t, deadline)) {
				srsv__unlock(&s->lock);
				return;
			}
			srsv__unlock(&s->lock);
			srsv__flush_space(s, to_reclaim, arr->states[i], false);
			srsv__lock(&s->lock);
		}
		if (AO_load(&t->state) != SRSV__TICKET_QUEUED ||
		    srsv__ld(&ctx->closing)) {
			srsv__unlock(&s->lock);
			return;
		}
		/*
		 * Out of states, and the pool cannot grow: a rescue round
		 * (the async walk's, flush.c's one mechanism) may give device
		 * space back; then walk the array once more, whose
		 * ALLOC_CHUNK can use it.  The commit inside may have granted
		 * us: the next pass sees it first.
		 */
		if (past(deadline) ||
		    !try_rescue(s, arr, to_reclaim, &rescues))
			break;
		to_reclaim = srsv__calc_reclaim_metadata_size(s);
	}
	/* A round that relocated nothing still dropped the lock. */
	if (AO_load(&t->state) != SRSV__TICKET_QUEUED ||
	    srsv__ld(&ctx->closing)) {
		srsv__unlock(&s->lock);
		return;
	}
	/*
	 * Out of states: steal from the global reserve if the ticket may,
	 * unless the engine is in an error state, in which case fail with
	 * that error at once (it is easier to debug than a later failure).
	 */
	error = (int)(int64_t)srsv__ld(&ctx->error);
	if (error) {
		srsv__ticket_remove(s, t);
		srsv__ticket_end(s, t, error);
	} else if (!srsv__steal_from_global_rsv(s, t)) {
		srsv__ticket_remove(s, t);
		srsv__ticket_end(s, t, -ENOSPC);
	}
	/* We may have been a large ticket in front of smaller ones. */
	srsv__try_grant_tickets(s);
	srsv__unlock(&s->lock);
}

void srsv__queue_async_reclaim(struct srsv_space *s, uint64_t bytes, int mode)
{
	(void)bytes;
	srsv__assert_held(&s->lock);
	srsv__worker_kick(s->ctx, mode == SRSV_FLUSH_DATA ?
			  SRSV__WORK_ASYNC_DATA : SRSV__WORK_ASYNC_METADATA,
			  s->kind);
}
