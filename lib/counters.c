/* SPDX-License-Identifier: MIT */
/*
 * Pool counters and admission (btrfs's space_info counters and the
 * admission test of __reserve_bytes()).  Layer: pool counters, above
 * tracing and statistics, below everything that reserves.
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

#include "counters.h"
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

/*
 * The floor under which preemptive flushing is pointless (preempt.c reads
 * it on the reservation fast path, so it is kept as a word, recomputed
 * whenever the pool's total changes).  Upstream uses 128 MiB, a quarter of
 * the largest global reserve (512 MiB): "if we have less than that devoted
 * to other reservations there's no sense in flushing".  On a metadata pool
 * of a few hundred MiB a fixed 128 MiB floor sits above the 90% cutoff, so
 * preemptive flushing would never run on the small pools that stall
 * soonest.  We keep upstream's proportion instead: 1/32 of the pool
 * (exactly 128 MiB at 4 GiB, where upstream's global reserve typically
 * reaches its cap), at least one item's worth (below that there is nothing
 * to flush), at most 128 MiB (upstream's value).
 */
static uint64_t preempt_floor(const struct srsv_space *s, uint64_t total)
{
	uint64_t floor = total >> 5;

	floor = srsv__max(floor, s->ctx->cfg.item_bytes);
	return srsv__min(floor, SZ_128M);
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
	srsv__st(&s->preempt_floor, preempt_floor(s, total));
	srsv__st(&s->clamp, (ctx->cfg.flags & SRSV_CTX_FIXED_CLAMP) &&
		 ctx->cfg.fixed_clamp ? ctx->cfg.fixed_clamp : 1);
	srsv__list_init(&s->tickets);
	srsv__list_init(&s->priority_tickets);
	*out = s;
	return 0;
}

void srsv__space_destroy(struct srsv_space *s)
{
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
			 preempt_floor(s, srsv__space_counter(s, c)));
	srsv__trace_counter(s, c, old, diff);
	return 0;
}

/*
 * HOW A RELEASE REFUSES UNDERFLOW (srsv__may_use_sub(), counters.h)
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
uint64_t srsv__may_use_sub_clamped(struct srsv_space *s, uint64_t bytes)
{
	/* Never into the movers' reserve (counters.h). */
	AO_t floor = AO_load_acquire(&s->mover_reserved);
	AO_t old = AO_load_acquire(&s->may_use), seen, take;

	for (;; old = seen) {
		take = old <= floor ? 0 : srsv__min(old - floor, bytes);
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
	 * what is left (it was 1/8 until upstream 574d93fc62e2, "btrfs: be
	 * less aggressive with metadata overcommit when we can do full
	 * flushing", 2026: pinned space piled up and a 1 GiB file system
	 * aborted under bonnie++); one that cannot flush
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

/*
 * The admission rule of btrfs's __reserve_bytes and try_granting_tickets:
 * used + bytes <= total, or used + bytes < total + overcommit allowance.
 * Written so that no sum wraps: forced read-only space and the global
 * reserve may push the counters beyond the pool's size.
 */
static __attribute__((noinline)) bool
fits_beyond(const struct srsv_space *s, uint64_t used, uint64_t claimed,
	    uint64_t total, uint64_t bytes, int mode)
{
	uint64_t limit;

	if (mode == SRSV__CHARGE_EMERGENCY)
		return bytes <= total && claimed <= total - bytes;
	if (mode == SRSV__CHARGE_NO_OVERCOMMIT || s->is_data)
		return false;
	limit = srsv__sat_add(total, srsv__available_free_space(s, mode));
	return bytes < limit && used < limit - bytes;
}

/* The plain fit inline; emergency and overcommit out of line (rare on the
 * fast path, and heavy: they would cost the loop its registers). */
static inline bool fits(const struct srsv_space *s, uint64_t may_use,
			uint64_t claimed, uint64_t total, uint64_t bytes,
			int mode)
{
	uint64_t used = srsv__sat_add(claimed, may_use);

	if (__builtin_expect(mode != SRSV__CHARGE_EMERGENCY, 1) &&
	    bytes <= total && used <= total - bytes)
		return true;
	return fits_beyond(s, used, claimed, total, bytes, mode);
}

uint64_t srsv__space_room(const struct srsv_space *s, int mode)
{
	uint64_t total = srsv__space_counter(s, SRSV__TOTAL);
	uint64_t used = srsv__sat_add(srsv__ld(&s->claimed),
				      srsv__may_use_settled(s));
	uint64_t room = total > used ? total - used : 0, limit;

	if (mode == SRSV__CHARGE_NO_OVERCOMMIT || s->is_data)
		return room;
	/* fits(): used + bytes < limit with the overcommit allowance. */
	limit = srsv__sat_add(total, srsv__available_free_space(s, mode));
	return limit > used + 1 ? srsv__max(room, limit - used - 1) : room;
}

static void charged(struct srsv_space *s, uint64_t may_use, uint64_t bytes,
		    uint64_t *after)
{
	srsv__trace_counter(s, SRSV__MAY_USE, may_use, (int64_t)bytes);
	/* Pacing's measure of what reclaim gave back (pace.c). */
	if (__builtin_expect(s->pace != NULL, 0))
		AO_fetch_and_add(&s->charged, (AO_t)bytes);
	if (after)
		*after = may_use + bytes;
}

/*
 * The re-check's slow side, out of line so that the fast path keeps its
 * registers: claimed or cap_seq moved since our loads.  Admitted if the
 * total did not change and the bytes still fit; else taken back and tried
 * again from the start.
 */
static __attribute__((noinline)) bool
recheck(struct srsv_space *s, uint64_t may_use, uint64_t total, AO_t seq,
	uint64_t bytes, int mode, uint64_t *after)
{
	uint64_t now = AO_load_acquire(&s->claimed);

	if (AO_load_acquire(&s->cap_seq) == seq &&
	    fits(s, may_use, now, total, bytes, mode)) {
		charged(s, may_use, bytes, after);
		return true;
	}
	/* Traced as applied, then taken back: the trace's sums stay exact. */
	srsv__trace_counter(s, SRSV__MAY_USE, may_use, (int64_t)bytes);
	srsv__may_use_sub_clamped(s, bytes);
	s->undone(s);
	return srsv__space_try_charge(s, bytes, mode, after);
}

/* The first failed compare-and-swap engages the caches (cache.c). */
static __attribute__((noinline, cold)) void engage_caches(struct srsv_space *s)
{
	AO_store_release(&s->cache_on, 1);
}

/*
 * The lock-free charge.  After a successful compare-and-swap of may_use
 * from @may_use it checks that the admission still fits.  The swap proves the word held @may_use, not
 * that it held it throughout: between our loads and the swap, another
 * thread may have reserved, moved those bytes into claimed
 * (srsv_space_alloc(): claimed up, then may_use down) and so brought the
 * word back to @may_use, and we would have admitted against a claimed that
 * no longer holds (an ABA the SPIN model tests/formal/may_use.pml found:
 * MUTANT_NO_RECHECK).  claimed loaded after the swap includes every such
 * move, whose addition to claimed came before its subtraction from
 * may_use.  And the total may have changed meanwhile, with claimed back
 * where it was (a set_readonly and a shrink of the same bytes: the model's
 * CAPACITY case): cap_seq, loaded after claimed, tells, since every change
 * of the total moves it (counters.h).  If it no longer fits, the admission
 * is taken back (our own bytes: exact unless an over-release took them),
 * and a ticket queued meanwhile, which may have failed to fit because of
 * our passing charge, is served through the pool's hook (srsv_space::
 * undone: granting is a layer above this one).  Under the pool lock
 * neither word can change and this is two loads, as it is on the fast
 * path when nothing moved (recheck() holds the rest).
 */
/* The whole of the charge, with the loop the fast path leaves out. */
static __attribute__((noinline)) bool
charge_loop(struct srsv_space *s, uint64_t bytes, int mode, uint64_t *after)
{
	/* A change of the total in progress: the slow path decides, under
	 * the lock the change holds (never taken there: it is even). */
	AO_t seq = AO_load_acquire(&s->cap_seq);
	AO_t may_use = AO_load_acquire(&s->may_use), claimed, seen;
	uint64_t total;

	if (seq & 1)
		return false;
	for (;; may_use = seen) {
		/* Loaded after may_use: see "claimed" in internal.h. */
		claimed = AO_load_acquire(&s->claimed);
		total = AO_load_acquire(&s->counters[SRSV__TOTAL]);
		if (!fits(s, may_use, claimed, total, bytes, mode))
			return false;
		seen = AO_fetch_compare_and_swap_full(&s->may_use, may_use,
						      may_use + bytes);
		if (seen == may_use)
			break;
		/* Another CPU got in between: time for the caches. */
		if (s->cache && !srsv__ld(&s->cache_on))
			engage_caches(s);
	}
	if (AO_load_acquire(&s->claimed) != claimed ||
	    AO_load_acquire(&s->cap_seq) != seq)
		return recheck(s, may_use, total, seq, bytes, mode, after);
	charged(s, may_use, bytes, after);
	return true;
}

bool srsv__space_try_charge(struct srsv_space *s, uint64_t bytes, int mode,
			    uint64_t *after)
{
	/* The common case in straight line, every other one in
	 * charge_loop(): a plain fit, no change of the total, one swap,
	 * nothing moved after it. */
	AO_t seq = AO_load_acquire(&s->cap_seq);
	AO_t may_use = AO_load_acquire(&s->may_use);
	AO_t claimed = AO_load_acquire(&s->claimed);
	uint64_t total = AO_load_acquire(&s->counters[SRSV__TOTAL]);
	uint64_t used = srsv__sat_add(claimed, may_use);

	if (__builtin_expect((seq & 1) || mode == SRSV__CHARGE_EMERGENCY ||
			     bytes > total || used > total - bytes, 0))
		return charge_loop(s, bytes, mode, after);
	if (__builtin_expect(!AO_compare_and_swap_full(&s->may_use, may_use,
						       may_use + bytes), 0))
		return charge_loop(s, bytes, mode, after);
	if (__builtin_expect(AO_load_acquire(&s->claimed) != claimed ||
			     AO_load_acquire(&s->cap_seq) != seq, 0))
		return recheck(s, may_use, total, seq, bytes, mode, after);
	charged(s, may_use, bytes, after);
	return true;
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

