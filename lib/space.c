/* SPDX-License-Identifier: MIT */
/*
 * Pools for the engine: releases, the lifecycle transitions of space,
 * capacity changes, the snapshot and the statistics (btrfs's
 * btrfs_space_info_update_*() callers, and what /sys/fs/btrfs shows).
 *
 * Layer: the engine-facing API, first of its files: above tickets,
 * pacing and the walks, below the reserve path's files only in name (none
 * of them calls in here but for a NOWAIT release).  Every transition is
 * one locked move between two counters (counters.c), then, where space
 * came back, granting (tickets.c); bad input is refused with -EINVAL and
 * counted, and changes nothing.
 */
#include <string.h>

#include "blockrsv.h"
#include "cache.h"
#include "counters.h"
#include "pace.h"
#include "preempt.h"
#include "space.h"
#include "stats.h"
#include "tickets.h"
#include "trace.h"

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
		bool gave_back;

		ret = srsv__cache_put(s, bytes, &gave_back);
		if (gave_back)
			srsv__maybe_grant(s, nowait);
		if (ret < 0)
			srsv__refuse(s, SRSV_REFUSED_RELEASE, bytes);
		if (ret)
			return ret < 0 ? ret : 0;
	}
	ret = srsv__may_use_sub_held(s, bytes);
	/* Space came back: the movers' reserve is refilled first. */
	if (__builtin_expect(s->mover_size != 0, 0) && !ret)
		srsv__mover_refill_released(s, bytes);
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
		if (!ret) {
			if (from == SRSV__PINNED)
				s->stat_unpinned += bytes;
			srsv__st(&s->stat_freed,
				 srsv__ld(&s->stat_freed) + bytes);
			/* btrfs_return_free_space(): the reserves are
			 * refilled first (the global one on an unpin), and
			 * tickets are offered only what is left
			 * ("if (len)"). */
			grant = srsv__reserves_refill(s, bytes,
						      from == SRSV__PINNED);
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
	 * srsv__may_use_sub_held() below has the last word anyway.
	 */
	if (srsv__ld(&s->may_use) < bytes) {
		ret = -EINVAL;
	} else {
		ret = srsv__space_update(s, SRSV__RESERVED, (int64_t)bytes);
		if (!ret) {
			ret = srsv__may_use_sub_held(s, bytes);
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
		srsv__capacity_begin(s);
		ret = srsv__space_update(s, SRSV__TOTAL, (int64_t)bytes);
		srsv__capacity_end(s);
		/* New capacity: btrfs clears full when a block group is added. */
		srsv__st(&s->full, 0);
		if (srsv__reserves_refill(s, bytes, false))
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
		srsv__capacity_begin(s);
		srsv__space_update(s, SRSV__READONLY, -(int64_t)bytes);
		srsv__space_update(s, SRSV__TOTAL, -(int64_t)bytes);
		srsv__capacity_end(s);
	}
	srsv__unlock(&s->lock);
	if (ret)
		srsv__refuse(s, SRSV_REFUSED_SHRINK, bytes);
	return ret;
}

/*
 * Free bytes into @counter (readonly, used), refused without overcommit.
 * Admission goes through may_use so that it is ordered with lock-free
 * reservations: charge (claimed first), then move, then may_use down.
 * Pool lock held, caches blocked.
 */
static int take_free(struct srsv_space *s, enum srsv__counter counter,
		     uint64_t bytes)
{
	if (!srsv__space_try_charge(s, bytes, SRSV__CHARGE_NO_OVERCOMMIT, NULL))
		return -ENOSPC;
	srsv__space_update(s, counter, (int64_t)bytes);
	srsv__may_use_sub(s, bytes);
	return 0;
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
	if (force)
		ret = srsv__space_update(s, SRSV__READONLY, (int64_t)bytes);
	else
		ret = take_free(s, SRSV__READONLY, bytes);
	srsv__cache_unblock(s);
	srsv__unlock(&s->lock);
	return ret;
}

SRSV__EXPORT int srsv_space_load_used(struct srsv_space *s, uint64_t bytes)
{
	int ret;

	if (!s)
		return -EINVAL;
	if (bytes == 0 || bytes > SRSV_MAX_BYTES)
		return srsv__refused(s, SRSV_REFUSED_POOL_ARGS, bytes);
	srsv__lock(&s->lock);
	/* No credit may hide in the caches while we decide (cache.c). */
	srsv__cache_block(s);
	/* As a reservation that becomes used at once. */
	ret = take_free(s, SRSV__USED, bytes);
	srsv__cache_unblock(s);
	srsv__unlock(&s->lock);
	return ret;
}

SRSV__EXPORT int srsv_space_set_reclaimable(struct srsv_space *s, int state,
					    uint64_t bytes)
{
	AO_t old;

	if (!s)
		return -EINVAL;
	if (state <= 0 || state >= SRSV_STATE_COUNT || bytes > SRSV_MAX_BYTES)
		return srsv__refused(s, SRSV_REFUSED_POOL_ARGS, bytes);
	old = AO_fetch_and_add_full(&s->reported[state], 0);
	while (!AO_compare_and_swap_full(&s->reported[state], old,
					 (AO_t)bytes))
		old = AO_load(&s->reported[state]);
	/* Each state's part of the sum is capped (counters.h); the
	 * difference is of the parts, so that the sum telescopes. */
	AO_fetch_and_add_full(&s->reported_sum,
			      (AO_t)srsv__min(bytes, SRSV__REPORTED_PART) -
			      (AO_t)srsv__min(old, SRSV__REPORTED_PART));
	/* More debt: the preemptive flusher may be due (preempt.c). */
	if (bytes > old && s->data_preempt)
		srsv__maybe_queue_data_preempt(s, 0, SRSV_FLUSH_DATA);
	return 0;
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
	info->mover_rsv_size = s->mover_size;
	info->mover_rsv_reserved = srsv__ld(&s->mover_reserved);
	info->reclaimable = 0;
	for (int st = 0; st < SRSV_STATE_COUNT; st++)
		info->reclaimable = srsv__sat_add(info->reclaimable,
						  srsv__ld(&s->reported[st]));
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

_Static_assert(SRSV_FLUSH_MODE_COUNT <= SRSV_STATS_MODES,
	       "srsv_space_stats::modes too small");
_Static_assert(SRSV_STATE_COUNT <= SRSV_STATS_STATES,
	       "srsv_space_stats::states too small");
_Static_assert(SRSV_REFUSED_COUNT <= SRSV_STATS_REFUSALS,
	       "srsv_space_stats::refused too small");
_Static_assert(SRSV_STATE_COUNT <= 64, "srsv__stats::disabled is 64 bits");

/* The first layout of struct srsv_space_stats: everything up to refused. */
#define STATS_MIN_SIZE \
	(offsetof(struct srsv_space_stats, refused) + \
	 sizeof(((struct srsv_space_stats *)0)->refused))

SRSV__EXPORT int srsv_space_get_stats_sized(struct srsv_space *s,
					    struct srsv_space_stats *stats,
					    size_t size)
{
	struct srsv_space_stats all;
	uint64_t disabled;

	if (!s || !stats || size < STATS_MIN_SIZE)
		return -EINVAL;
	if (size > sizeof(all))
		size = sizeof(all);
	memset(&all, 0, sizeof(all));
	all.size = size;
	all.kind = s->kind;
	srsv__lock(&s->lock);
	all.now_ns = srsv__now_ns();
	all.stalled_ns = s->stats.stalled_ns;
	if (srsv__ld(&s->waiting) && all.now_ns > s->stats.stall_start_ns)
		all.stalled_ns += all.now_ns - s->stats.stall_start_ns;
	memcpy(all.modes, s->stats.modes, sizeof(s->stats.modes));
	all.clamp_raised = s->stat_clamp_raised;
	all.clamp_lowered = s->stat_clamp_lowered;
	for (int i = 0; i < SRSV_NOWAIT_REASON_COUNT; i++)
		all.nowait_refused[i] = srsv__ld(&s->stats.nowait[i]);
	all.error_failures = s->stat_error_failures;
	disabled = srsv__ld(&s->stats.disabled);
	for (int i = 0; i < SRSV_STATE_COUNT; i++) {
		struct srsv_state_stats *o = &all.states[i];
		const struct srsv__state_stats *in = &s->stats.states[i];

		o->calls = s->stat_flushes[i];
		o->preempt_calls = s->stat_preempt_flushes[i];
		o->time_ns = in->time_ns;
		o->waited_ns = in->waited_ns;
		o->bytes_freed = in->bytes_freed;
		o->unsupported = in->unsupported;
		o->skipped = in->skipped;
		o->disabled = (disabled >> i) & 1;
	}
	srsv__unlock(&s->lock);
	for (int i = 0; i < SRSV_REFUSED_COUNT; i++)
		all.refused[i] = srsv__ld(&s->stats.refused[i]);
	if (s->pace) {
		struct srsv__pace_stats ps;

		srsv__pace_get_stats(s, &ps);
		all.paced = ps.paced;
		all.pace_delay_ns = ps.delay_ns;
		all.pace_max_delay_ns = ps.max_delay_ns;
		all.pace_eased = ps.eased;
		all.pace_nowait = ps.nowait;
		all.pace_nowait_ns = ps.nowait_ns;
		all.pace_bw = ps.bw;
		all.pace_fill_pm = ps.fill_pm;
	}
	/* Never more than the caller has: it may be an older layout. */
	memcpy(stats, &all, size);
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
