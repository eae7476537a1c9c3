/* SPDX-License-Identifier: MIT */
/*
 * Pools (btrfs's space_info): counters, the lifecycle transitions of space,
 * granting queued tickets, and the snapshot.
 *
 * HOW A POOL COUNTS ITS BYTES
 *
 * A pool of @total bytes is divided between reservations not yet used
 * (may_use), allocations not yet referenced (reserved), referenced space
 * (used), space freed in the running transaction (pinned: it only becomes
 * free at the commit, because the last committed state still points at it),
 * read-only space and, on zoned devices, space below a zone's write pointer
 * that was freed and cannot be rewritten until the zone is reset
 * (zone_unusable).  A reservation fits when
 *
 *	used + reserved + pinned + readonly + zone_unusable + may_use + bytes
 *
 * is at most total, or, for metadata, within the overcommit allowance that
 * counts on unallocated device space (srsv__available_free_space()).
 *
 * The five counters that are not reservations only change under the pool
 * lock; their sum is kept as one word, "claimed", so the lock-free
 * admission check (srsv__space_try_charge()) reads two words, not six.
 * may_use is the admission word itself: reservations add to it with
 * compare-and-swap, so reserve/release with room and no queued tickets take
 * no lock (the XFS grant-head fast path).  A transition out of may_use into
 * a claimed counter adds to claimed first and subtracts from may_use
 * second: a concurrent admission check can double-count the moving bytes
 * for an instant, and so be too strict, but never too lenient.
 *
 * Every counter change goes through srsv__space_update() (locked counters)
 * or srsv__may_use_add()/srsv__may_use_sub(), which refuse underflow with
 * -EINVAL and no change (btrfs clamps and warns; a library must not hide a
 * caller's double release) and trace (counter, old, diff).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "pace.h"
#include "trace.h"

static const char *const counter_names[SRSV__COUNTER_COUNT] = {
	[SRSV__TOTAL] = "total",
	[SRSV__USED] = "used",
	[SRSV__RESERVED] = "reserved",
	[SRSV__PINNED] = "pinned",
	[SRSV__READONLY] = "readonly",
	[SRSV__ZONE_UNUSABLE] = "zone_unusable",
	[SRSV__MAY_USE] = "may_use",
};

const char *srsv__counter_name(int counter)
{
	if (counter < 0 || counter >= SRSV__COUNTER_COUNT)
		return "unknown";
	return counter_names[counter];
}

int srsv__space_create(struct srsv_ctx *ctx, int kind, uint64_t total,
		       struct srsv_space **out)
{
	struct srsv_space *s;
	int ret;

	/* Cache-line aligned: see may_use in internal.h. */
	if (posix_memalign((void **)&s, SRSV__CACHELINE, sizeof(*s)))
		return -ENOMEM;
	memset(s, 0, sizeof(*s));
	ret = srsv__lock_init(&s->lock);
	if (ret) {
		free(s);
		return ret;
	}
	s->ctx = ctx;
	s->kind = kind;
	s->is_data = kind == SRSV_POOL_DATA || kind == SRSV_POOL_MIXED;
	s->is_metadata = kind == SRSV_POOL_METADATA || kind == SRSV_POOL_MIXED;
	srsv__st(&s->counters[SRSV__TOTAL], total);
	/* A pool that never grows still shows its total in a trace. */
	srsv__trace_counter(s, SRSV__TOTAL, 0, (int64_t)total);
	srsv__st(&s->preempt_floor, srsv__preempt_floor(s, total));
	srsv__st(&s->clamp, (ctx->cfg.flags & SRSV_CTX_FIXED_CLAMP) &&
		 ctx->cfg.fixed_clamp ? ctx->cfg.fixed_clamp : 1);
	srsv__list_init(&s->tickets);
	srsv__list_init(&s->priority_tickets);
	ret = srsv__pace_create(s);
	if (ret) {
		srsv__lock_destroy(&s->lock);
		free(s);
		return ret;
	}
	*out = s;
	return 0;
}

void srsv__space_destroy(struct srsv_space *s)
{
	if (!s)
		return;
	srsv__cache_free(s);
	srsv__pace_free(s);
	srsv__lock_destroy(&s->lock);
	free(s);
}

static uint64_t magnitude(int64_t diff)
{
	return diff < 0 ? (uint64_t)0 - (uint64_t)diff : (uint64_t)diff;
}

int srsv__space_update(struct srsv_space *s, enum srsv__counter c,
		       int64_t diff)
{
	uint64_t old, mag = magnitude(diff);

	srsv__assert_held(&s->lock);
	if (c == SRSV__MAY_USE || c >= SRSV__COUNTER_COUNT)
		return -EINVAL;
	old = srsv__space_counter(s, c);
	if (diff < 0 && mag > old)
		return -EINVAL;
	/*
	 * Bound every counter, and their sum "claimed", to 2^63 so that no
	 * sum of them wraps (forced read-only space is not otherwise capped).
	 */
	if (diff > 0 && (mag > SRSV_MAX_BYTES || old + mag > 2 * SRSV_MAX_BYTES ||
			 (c != SRSV__TOTAL &&
			  srsv__ld(&s->claimed) + mag > 2 * SRSV_MAX_BYTES)))
		return -EINVAL;
	if (diff == 0)
		return 0;
	if (c != SRSV__TOTAL) {
		uint64_t claimed = srsv__ld(&s->claimed);

		/* Release order: the counter's readers pair with claimed. */
		AO_store_release(&s->claimed,
				 diff > 0 ? claimed + mag : claimed - mag);
	}
	AO_store_release(&s->counters[c], diff > 0 ? old + mag : old - mag);
	if (c == SRSV__TOTAL)
		srsv__st(&s->preempt_floor,
			 srsv__preempt_floor(s, srsv__space_counter(s, c)));
	srsv__trace_counter(s, c, old, diff);
	return 0;
}

/*
 * HOW A RELEASE REFUSES UNDERFLOW
 *
 * A release subtracts with a compare-and-swap that applies only a
 * subtraction the word covers: a release of more than the pool lent (a
 * double release) is refused with -EINVAL and changes nothing, and every
 * release is judged against the word as it is, exactly as a sequential
 * counter would judge it.  Additions cannot underflow and take one
 * fetch-and-add.
 *
 * Until commit 7965481 a release subtracted with one fetch-and-add and
 * undid a refused subtraction at once, leaving the word "wrapped" for the
 * instant between; releases that met a wrapped word undid theirs too,
 * waited and tried again.  That saved one transfer of the contended cache
 * line (72 against 99 ns per reserve+release pair on 2 CPUs,
 * docs/results.md), but its SPIN model (tests/formal/may_use.pml, mutant
 * XADD_UNDO) found that the word is not wrapped exactly while a refusal is
 * pending: with two threads, a release that met a wrapped word and undid
 * its subtraction could unwrap the word under another thread's pending
 * refusal, judge itself against that, and fail a lawful release with
 * -EINVAL (docs/reliability.md has the trace).  A NOWAIT release also had
 * to wait there for another thread.  The compare-and-swap loop has neither
 * problem and needs no waiting anywhere.
 */
void srsv__may_use_add(struct srsv_space *s, uint64_t bytes)
{
	AO_t old = AO_fetch_and_add_full(&s->may_use, (AO_t)bytes);

	srsv__trace_counter(s, SRSV__MAY_USE, old, (int64_t)bytes);
}

int srsv__may_use_sub(struct srsv_space *s, uint64_t bytes)
{
	AO_t old = AO_load_acquire(&s->may_use), seen;

	for (;; old = seen) {
		if (old < bytes)
			return -EINVAL;	/* more than the pool lent */
		seen = AO_fetch_compare_and_swap_full(&s->may_use, old,
						      old - bytes);
		if (seen == old)
			break;
	}
	srsv__trace_counter(s, SRSV__MAY_USE, old, -(int64_t)bytes);
	return 0;
}

uint64_t srsv__may_use_settled(const struct srsv_space *s)
{
	return AO_load_acquire(&s->may_use);
}

uint64_t srsv__may_use_sub_clamped(struct srsv_space *s, uint64_t bytes)
{
	AO_t old = AO_load_acquire(&s->may_use), seen, take;

	for (;; old = seen) {
		take = old < bytes ? old : bytes;
		seen = AO_fetch_compare_and_swap_full(&s->may_use, old,
						      old - take);
		if (seen == old)
			break;
	}
	if (take)
		srsv__trace_counter(s, SRSV__MAY_USE, old, -(int64_t)take);
	return take;
}

uint64_t srsv__available_free_space(const struct srsv_space *s, int mode)
{
	const struct srsv_ctx *ctx = s->ctx;
	uint64_t avail = srsv__ld(&ctx->unallocated);

	/*
	 * A DUP or RAID1 metadata profile writes every byte twice, so only
	 * 1/factor of the unallocated space can become metadata.
	 */
	avail /= ctx->cfg.metadata_raid_factor;
	if (!avail)
		return 0;
	/*
	 * Data reservations consume chunks as soon as they are made, so leave
	 * one data chunk's worth of unallocated space to data: overcommitting
	 * metadata into it would leave no room to allocate the metadata
	 * chunk we promised when a data chunk takes it first.
	 */
	if (avail <= ctx->data_chunk_allowance)
		return 0;
	avail -= ctx->data_chunk_allowance;
	/*
	 * A flusher that can flush everything may overcommit only 1/64 of
	 * what is left (it was 1/8 until 2024: pinned space piled up and a
	 * 1 GiB file system aborted under bonnie++); one that cannot flush
	 * everything (NO_FLUSH, LIMIT, EVICT) may use half, because failing
	 * it is costlier than the risk.
	 */
	if (mode == SRSV_FLUSH_ALL || mode == SRSV_FLUSH_ALL_STEAL)
		avail >>= 6;
	else
		avail >>= 1;
	/*
	 * Zoned devices allocate a whole zone as one chunk: an unaligned
	 * allowance promises space no chunk allocation can deliver.
	 */
	if ((ctx->cfg.flags & SRSV_CTX_ZONED) && ctx->cfg.zone_bytes)
		avail -= avail % ctx->cfg.zone_bytes;
	return avail;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/*
 * The admission rule of btrfs's __reserve_bytes and try_granting_tickets:
 * used + bytes <= total, or used + bytes < total + overcommit allowance.
 * Written so that no sum wraps: forced read-only space and the global
 * reserve may push the counters beyond the pool's size.
 */
static bool fits(const struct srsv_space *s, uint64_t may_use,
		 uint64_t claimed, uint64_t bytes, int mode)
{
	uint64_t total = srsv__space_counter(s, SRSV__TOTAL);
	uint64_t used = sat_add(claimed, may_use);
	uint64_t limit;

	if (mode == SRSV__CHARGE_EMERGENCY)
		return bytes <= total && claimed <= total - bytes;
	if (bytes <= total && used <= total - bytes)
		return true;
	if (mode == SRSV__CHARGE_NO_OVERCOMMIT || s->is_data)
		return false;
	limit = sat_add(total, srsv__available_free_space(s, mode));
	return bytes < limit && used < limit - bytes;
}

/*
 * After a successful compare-and-swap of may_use from @may_use: whether
 * the admission still fits "claimed" as it is now.  The swap proves the
 * word held @may_use, not that it held it throughout: between our load of
 * claimed and the swap, another thread may have reserved, moved those
 * bytes into claimed (srsv_space_alloc(): claimed up, then may_use down)
 * and so brought the word back to @may_use, and we would have admitted
 * against a claimed that no longer holds (an ABA the SPIN model
 * tests/formal/may_use.pml found: MUTANT_NO_RECHECK).  claimed loaded
 * after the swap includes every such move, whose addition to claimed came
 * before its subtraction from may_use.  If it no longer fits, the
 * admission is taken back (our own bytes: exact unless an over-release
 * took them) and tickets queued meanwhile are served.  Under the pool lock
 * claimed cannot change and this is one load.
 */
static bool claimed_still_fits(struct srsv_space *s, uint64_t may_use,
			       uint64_t claimed, uint64_t bytes, int mode)
{
	uint64_t now = AO_load_acquire(&s->claimed);

	if (now == claimed || fits(s, may_use, now, bytes, mode))
		return true;
	/* Traced as applied, then taken back: the trace's sums stay exact. */
	srsv__trace_counter(s, SRSV__MAY_USE, may_use, (int64_t)bytes);
	srsv__may_use_sub_clamped(s, bytes);
	srsv__maybe_grant(s, true);
	return false;
}

bool srsv__space_try_charge(struct srsv_space *s, uint64_t bytes, int mode,
			    uint64_t *after)
{
	AO_t may_use = AO_load_acquire(&s->may_use), claimed, seen;

	for (;; may_use = seen) {
		/* Loaded after may_use: see "claimed" in internal.h. */
		claimed = AO_load_acquire(&s->claimed);
		if (!fits(s, may_use, claimed, bytes, mode))
			return false;
		seen = AO_fetch_compare_and_swap_full(&s->may_use, may_use,
						      may_use + bytes);
		if (seen == may_use) {
			if (claimed_still_fits(s, may_use, claimed, bytes,
					       mode))
				break;
			seen = AO_load_acquire(&s->may_use);
			continue;
		}
		/* Another CPU got in between: time for the caches. */
		if (s->cache && !srsv__ld(&s->cache_on))
			srsv__cache_engage(s);
	}
	srsv__trace_counter(s, SRSV__MAY_USE, may_use, (int64_t)bytes);
	srsv__pace_note_charge(s, bytes);
	if (after)
		*after = may_use + bytes;
	return true;
}

/*
 * btrfs_try_granting_tickets(): priority tickets first, with NO_FLUSH
 * overcommit, then normal tickets with FLUSH_ALL overcommit; within each
 * queue strict FIFO, stopping at the first ticket that does not fit (a
 * smaller ticket behind it waits: fairness over utilisation).
 */
void srsv__try_grant_tickets(struct srsv_space *s)
{
	struct srsv__list *heads[2] = { &s->priority_tickets, &s->tickets };
	const int modes[2] = { SRSV_NO_FLUSH, SRSV_FLUSH_ALL };

	srsv__assert_held(&s->lock);
	/* The caches' credit belongs to the tickets (cache.c). */
	if (s->cache && (!srsv__list_empty(heads[0]) ||
			 !srsv__list_empty(heads[1])))
		srsv__cache_drain(s);
	for (int i = 0; i < 2; i++) {
		while (!srsv__list_empty(heads[i])) {
			struct srsv__ticket *t = srsv__ticket_first(heads[i]);

			if (!srsv__space_try_charge(s, t->bytes, modes[i], NULL))
				break;
			srsv__ticket_remove(s, t);
			srsv__st(&s->stats.grant_bytes,
				 srsv__ld(&s->stats.grant_bytes) + t->bytes);
			t->bytes = 0;
			s->tickets_id++;
			srsv__ticket_end(s, t, 0);
		}
	}
}

void srsv__maybe_grant(struct srsv_space *s, bool nowait)
{
	/*
	 * Our caller's compare-and-swap on may_use was a full barrier; it
	 * pairs with the full barrier of the queueing thread's increment of
	 * waiting (internal.h), so a plain acquire load suffices here.
	 */
	if (!AO_load_acquire(&s->waiting))
		return;
	if (nowait) {
		if (!srsv__trylock(&s->lock)) {
			/* Never block: let the pool's worker grant. */
			srsv__worker_kick(s->ctx, s->is_data && !s->is_metadata ?
					  SRSV__WORK_ASYNC_DATA :
					  SRSV__WORK_ASYNC_METADATA, s->kind);
			return;
		}
	} else {
		srsv__lock(&s->lock);
	}
	srsv__try_grant_tickets(s);
	srsv__unlock(&s->lock);
}

/* 0 or too many bytes: -EINVAL, counted against @s. */
static int check_bytes(struct srsv_space *s, uint64_t bytes)
{
	if (bytes == 0 || bytes > SRSV_MAX_BYTES) {
		srsv__refuse(s, SRSV_REFUSED_ARGS, bytes);
		return -EINVAL;
	}
	return 0;
}

/* Give back @bytes of may_use: through this CPU's cache, or the word. */
static inline int release(struct srsv_space *s, uint64_t bytes, bool nowait)
{
	int ret;

	if (srsv__cache_engaged(s, bytes)) {
		ret = srsv__cache_put(s, bytes, nowait);
		if (ret < 0)
			srsv__refuse(s, SRSV_REFUSED_RELEASE, bytes);
		if (ret)
			return ret < 0 ? ret : 0;
	}
	ret = srsv__may_use_sub(s, bytes);
	/*
	 * Refused too (as tests/model.c does): a refusal changes nothing,
	 * but tickets that fit are served either way.
	 */
	srsv__maybe_grant(s, nowait);
	if (__builtin_expect(ret != 0, 0))
		srsv__refuse(s, SRSV_REFUSED_RELEASE, bytes);
	return ret;
}

SRSV__EXPORT int srsv_space_release(struct srsv_space *s, uint64_t bytes)
{
	if (!s)
		return -EINVAL;
	if (bytes > SRSV_MAX_BYTES) {
		srsv__refuse(s, SRSV_REFUSED_ARGS, bytes);
		return -EINVAL;
	}
	if (!bytes)
		return 0;
	return release(s, bytes, false);
}

int srsv__space_release_nowait(struct srsv_space *s, uint64_t bytes)
{
	return release(s, bytes, true);
}

/*
 * Move @bytes from counter @from to counter @to under the lock, adding
 * before subtracting (see the essay above).  -EINVAL, and nothing changed,
 * if @from holds less; a refused subtraction undoes the addition.
 */
int srsv__space_move(struct srsv_space *s, enum srsv__counter from,
		     enum srsv__counter to, uint64_t bytes)
{
	int ret;

	srsv__assert_held(&s->lock);
	if (srsv__space_counter(s, from) < bytes)
		return -EINVAL;
	ret = srsv__space_update(s, to, (int64_t)bytes);
	if (ret)
		return ret;
	ret = srsv__space_update(s, from, -(int64_t)bytes);
	if (ret)
		srsv__space_update(s, to, -(int64_t)bytes);
	return ret;
}

/* Transition helper for the public functions: validate, lock, move, grant. */
static int transition(struct srsv_space *s, enum srsv__counter from,
		      enum srsv__counter to, uint64_t bytes, bool grant,
		      int refusal)
{
	int ret;

	if (!s)
		return -EINVAL;
	ret = check_bytes(s, bytes);
	if (ret)
		return ret;
	srsv__lock(&s->lock);
	if (to == SRSV__COUNTER_COUNT) {	/* to "free" */
		ret = srsv__space_update(s, from, -(int64_t)bytes);
		if (!ret && from == SRSV__PINNED) {
			s->stat_unpinned += bytes;
			/* btrfs_return_free_space(): the global reserve is
			 * refilled before any ticket is granted. */
			srsv__global_rsv_refill(s, bytes);
		}
	} else
		ret = srsv__space_move(s, from, to, bytes);
	if (!ret && grant)
		srsv__try_grant_tickets(s);
	srsv__unlock(&s->lock);
	if (ret)
		srsv__refuse(s, refusal, bytes);
	return ret;
}

SRSV__EXPORT int srsv_space_alloc(struct srsv_space *s, uint64_t bytes)
{
	int ret;

	if (!s)
		return -EINVAL;
	ret = check_bytes(s, bytes);
	if (ret)
		return ret;
	srsv__lock(&s->lock);
	/*
	 * The word itself, not srsv__space_counter(): with per-CPU caches
	 * that subtracts credit read a moment apart from the word, and a
	 * concurrent drain could make a lawful move look like too much.
	 * srsv__may_use_sub() below has the last word anyway.
	 */
	if (srsv__ld(&s->may_use) < bytes) {
		ret = -EINVAL;
	} else {
		ret = srsv__space_update(s, SRSV__RESERVED, (int64_t)bytes);
		if (!ret) {
			ret = srsv__may_use_sub(s, bytes);
			/* A concurrent release took it after our check. */
			if (ret)
				srsv__space_update(s, SRSV__RESERVED,
						   -(int64_t)bytes);
		}
	}
	srsv__unlock(&s->lock);
	if (ret)
		srsv__refuse(s, SRSV_REFUSED_ALLOC, bytes);
	return ret;
}

SRSV__EXPORT int srsv_space_free_reserved(struct srsv_space *s, uint64_t bytes)
{
	return transition(s, SRSV__RESERVED, SRSV__COUNTER_COUNT, bytes, true,
			  SRSV_REFUSED_FREE_RESERVED);
}

SRSV__EXPORT int srsv_space_commit_used(struct srsv_space *s, uint64_t bytes)
{
	return transition(s, SRSV__RESERVED, SRSV__USED, bytes, false,
			  SRSV_REFUSED_COMMIT_USED);
}

SRSV__EXPORT int srsv_space_pin(struct srsv_space *s, uint64_t bytes)
{
	return transition(s, SRSV__USED, SRSV__PINNED, bytes, false,
			  SRSV_REFUSED_PIN);
}

SRSV__EXPORT int srsv_space_unpin(struct srsv_space *s, uint64_t bytes)
{
	return transition(s, SRSV__PINNED, SRSV__COUNTER_COUNT, bytes, true,
			  SRSV_REFUSED_UNPIN);
}

SRSV__EXPORT int srsv_space_clear_readonly(struct srsv_space *s, uint64_t bytes)
{
	return transition(s, SRSV__READONLY, SRSV__COUNTER_COUNT, bytes, true,
			  SRSV_REFUSED_CLEAR_READONLY);
}

SRSV__EXPORT int srsv_space_grow(struct srsv_space *s, uint64_t bytes)
{
	int ret;

	if (!s)
		return -EINVAL;
	ret = check_bytes(s, bytes);
	if (ret)
		return ret;
	srsv__lock(&s->lock);
	if (srsv__space_counter(s, SRSV__TOTAL) + bytes > SRSV_MAX_BYTES) {
		ret = -EINVAL;
	} else {
		ret = srsv__space_update(s, SRSV__TOTAL, (int64_t)bytes);
		/* New capacity: btrfs clears full when a block group is added. */
		srsv__st(&s->full, 0);
		srsv__try_grant_tickets(s);
	}
	srsv__unlock(&s->lock);
	if (ret)
		srsv__refuse(s, SRSV_REFUSED_GROW, bytes);
	return ret;
}

SRSV__EXPORT int srsv_space_shrink(struct srsv_space *s, uint64_t bytes)
{
	int ret;

	if (!s)
		return -EINVAL;
	ret = check_bytes(s, bytes);
	if (ret)
		return ret;
	srsv__lock(&s->lock);
	if (srsv__space_counter(s, SRSV__READONLY) < bytes ||
	    srsv__space_counter(s, SRSV__TOTAL) < bytes) {
		ret = -EINVAL;
	} else {
		srsv__space_update(s, SRSV__READONLY, -(int64_t)bytes);
		srsv__space_update(s, SRSV__TOTAL, -(int64_t)bytes);
	}
	srsv__unlock(&s->lock);
	if (ret)
		srsv__refuse(s, SRSV_REFUSED_SHRINK, bytes);
	return ret;
}

SRSV__EXPORT int srsv_space_set_readonly(struct srsv_space *s, uint64_t bytes,
					 bool force)
{
	int ret;

	if (!s)
		return -EINVAL;
	ret = check_bytes(s, bytes);
	if (ret)
		return ret;
	srsv__lock(&s->lock);
	/* No credit may hide in the caches while we decide (cache.c). */
	srsv__cache_block(s);
	if (force) {
		ret = srsv__space_update(s, SRSV__READONLY, (int64_t)bytes);
	} else if (!srsv__space_try_charge(s, bytes,
					   SRSV__CHARGE_NO_OVERCOMMIT, NULL)) {
		/*
		 * Admission goes through may_use so that it is ordered with
		 * lock-free reservations: charge, then move to readonly.
		 */
		ret = -ENOSPC;
	} else {
		srsv__space_update(s, SRSV__READONLY, (int64_t)bytes);
		srsv__may_use_sub(s, bytes);
	}
	srsv__cache_unblock(s);
	srsv__unlock(&s->lock);
	return ret;
}

SRSV__EXPORT int srsv_space_set_full(struct srsv_space *s, bool full)
{
	if (!s)
		return -EINVAL;
	srsv__lock(&s->lock);
	srsv__st(&s->full, full);
	srsv__unlock(&s->lock);
	return 0;
}

SRSV__EXPORT int srsv_space_kind(const struct srsv_space *s)
{
	return s ? s->kind : -EINVAL;
}

SRSV__EXPORT struct srsv_ctx *srsv_space_ctx(const struct srsv_space *s)
{
	return s ? s->ctx : NULL;
}

void srsv__dump_fill(const struct srsv_space *s, struct srsv__dump *d)
{
	const struct srsv_ctx *ctx = s->ctx;
	struct srsv_ctx *mctx = (struct srsv_ctx *)ctx;
	bool std_here = srsv__metadata_space(mctx) == s;

	memset(d, 0, sizeof(*d));
	d->kind = s->kind;
	d->total = srsv__space_counter(s, SRSV__TOTAL);
	d->used = srsv__space_counter(s, SRSV__USED);
	d->pinned = srsv__space_counter(s, SRSV__PINNED);
	d->reserved = srsv__space_counter(s, SRSV__RESERVED);
	d->may_use = srsv__space_counter(s, SRSV__MAY_USE);
	d->readonly = srsv__space_counter(s, SRSV__READONLY);
	d->zone_unusable = srsv__space_counter(s, SRSV__ZONE_UNUSABLE);
	d->reclaim_size = srsv__ld(&s->reclaim_size);
	d->clamp = (unsigned)srsv__ld(&s->clamp);
	if (std_here) {
		d->global_reserved = srsv__std_rsv_reserved(mctx, SRSV_RSV_GLOBAL);
		d->trans_reserved = srsv__std_rsv_reserved(mctx, SRSV_RSV_TRANS);
		d->delayed_refs_reserved =
			srsv__std_rsv_reserved(mctx, SRSV_RSV_DELREFS);
		d->delayed_reserved = srsv__std_rsv_reserved(mctx, SRSV_RSV_DELOPS);
	}
	d->unallocated = srsv__ld(&ctx->unallocated);
	d->delalloc = srsv__ld(&ctx->delalloc_bytes);
	d->ordered = srsv__ld(&ctx->ordered_bytes);
}

/* The first layouts (0.1.0); fields are only ever added after them. */
#define SPACE_INFO_MIN SRSV__OUT_MIN(struct srsv_space_info, tickets_failed)
#define TICKET_INFO_MIN SRSV__OUT_MIN(struct srsv_ticket_info, priority)

/* Tickets are @tsize bytes apart in the caller's array; each gets at most
 * that many bytes of the library's struct. */
static void fill_ticket_info(struct srsv__list *head, bool priority,
			     uint64_t now, struct srsv_ticket_info *tickets,
			     size_t tsize, size_t max, size_t *n)
{
	size_t copy = tsize < sizeof(*tickets) ? tsize : sizeof(*tickets);

	for (struct srsv__list *p = head->next; p != head; p = p->next) {
		struct srsv__ticket *t =
			srsv__container_of(p, struct srsv__ticket, node);

		if (*n < max) {
			struct srsv_ticket_info ti = {
				.bytes = t->orig_bytes,
				.age_ns = now - t->start_ns,
				.mode = t->mode,
				.priority = priority,
			};

			memcpy((char *)tickets + *n * tsize, &ti, copy);
		}
		(*n)++;
	}
}

SRSV__EXPORT int srsv_space_snapshot_sized(struct srsv_space *s,
					   struct srsv_space_info *out,
					   struct srsv_ticket_info *tickets,
					   size_t max, size_t *nr_tickets,
					   size_t info_size,
					   size_t ticket_size)
{
	struct srsv_space_info all, *info = &all;
	struct srsv__dump d;
	uint64_t waiting, now;
	size_t n = 0;

	if (!s || !out || (!tickets && max) || info_size < SPACE_INFO_MIN ||
	    (max && ticket_size < TICKET_INFO_MIN))
		return -EINVAL;
	memset(info, 0, sizeof(*info));
	srsv__lock(&s->lock);
	now = srsv__now_ns();
	srsv__dump_fill(s, &d);
	info->kind = s->kind;
	info->total = d.total;
	info->used = d.used;
	info->pinned = d.pinned;
	info->reserved = d.reserved;
	info->may_use = d.may_use;
	info->readonly = d.readonly;
	info->zone_unusable = d.zone_unusable;
	info->reclaim_size = d.reclaim_size;
	info->tickets_id = s->tickets_id;
	info->clamp = d.clamp;
	info->full = srsv__ld(&s->full) != 0;
	info->flushing = s->flush;
	info->force_alloc = s->force_alloc;
	waiting = srsv__ld(&s->waiting);
	info->nr_tickets = (unsigned)(waiting & 0xffffffffu);
	info->nr_priority_tickets = (unsigned)(waiting >> 32);
	info->unallocated = d.unallocated;
	info->delalloc_bytes = d.delalloc;
	info->ordered_bytes = d.ordered;
	if (srsv__metadata_space(s->ctx) == s) {
		info->global_rsv_size =
			srsv__std_rsv_size(s->ctx, SRSV_RSV_GLOBAL);
		info->global_rsv_reserved = d.global_reserved;
		info->trans_rsv_reserved = d.trans_reserved;
		info->delayed_rsv_reserved = d.delayed_reserved;
		info->delayed_refs_rsv_reserved = d.delayed_refs_reserved;
	}
	info->preempt_runs = s->stat_preempt_runs;
	info->async_runs = s->stat_async_runs;
	memcpy(info->flushes, s->stat_flushes, sizeof(info->flushes));
	memcpy(info->preempt_flushes, s->stat_preempt_flushes,
	       sizeof(info->preempt_flushes));
	info->tickets_granted = s->stat_granted;
	info->tickets_failed = s->stat_failed;
	fill_ticket_info(&s->priority_tickets, true, now, tickets,
			 ticket_size, max, &n);
	fill_ticket_info(&s->tickets, false, now, tickets, ticket_size, max,
			 &n);
	srsv__unlock(&s->lock);
	SRSV__OUT_COPY(out, all, size, info_size);
	if (nr_tickets)
		*nr_tickets = n;
	return 0;
}

SRSV__EXPORT const char *srsv_pool_name(int kind)
{
	static const char *const names[SRSV_POOL_COUNT] = {
		"data", "metadata", "system", "mixed"
	};

	if (kind < 0 || kind >= SRSV_POOL_COUNT)
		return "unknown";
	return names[kind];
}

SRSV__EXPORT const char *srsv_flush_name(int mode)
{
	static const char *const names[SRSV_FLUSH_MODE_COUNT] = {
		"NO_FLUSH", "FLUSH_LIMIT", "FLUSH_EVICT", "FLUSH_DATA",
		"FLUSH_FREE_SPACE_INODE", "FLUSH_ALL", "FLUSH_ALL_STEAL",
		"FLUSH_EMERGENCY"
	};

	if (mode == SRSV_FLUSH_MAY_WAIT)
		return "FLUSH_MAY_WAIT";
	if (mode < 0 || mode >= SRSV_FLUSH_MODE_COUNT)
		return "unknown";
	return names[mode];
}

SRSV__EXPORT const char *srsv_state_name(int state)
{
	static const char *const names[SRSV_STATE_COUNT] = {
		[SRSV_STATE_DELAYED_ITEMS_NR] = "DELAYED_ITEMS_NR",
		[SRSV_STATE_DELAYED_ITEMS] = "DELAYED_ITEMS",
		[SRSV_STATE_DELAYED_REFS_NR] = "DELAYED_REFS_NR",
		[SRSV_STATE_DELAYED_REFS] = "DELAYED_REFS",
		[SRSV_STATE_DELALLOC] = "DELALLOC",
		[SRSV_STATE_DELALLOC_WAIT] = "DELALLOC_WAIT",
		[SRSV_STATE_DELALLOC_FULL] = "DELALLOC_FULL",
		[SRSV_STATE_ALLOC_CHUNK] = "ALLOC_CHUNK",
		[SRSV_STATE_ALLOC_CHUNK_FORCE] = "ALLOC_CHUNK_FORCE",
		[SRSV_STATE_RUN_DELAYED_IPUTS] = "RUN_DELAYED_IPUTS",
		[SRSV_STATE_COMMIT_TRANS] = "COMMIT_TRANS",
		[SRSV_STATE_RESET_ZONES] = "RESET_ZONES",
		[SRSV_STATE_RECLAIM_ZONES] = "RECLAIM_ZONES",
		[SRSV_STATE_RECLAIM_CHUNKS] = "RECLAIM_CHUNKS",
	};

	if (state <= 0 || state >= SRSV_STATE_COUNT)
		return "unknown";
	return names[state];
}
