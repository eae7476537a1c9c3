/* SPDX-License-Identifier: MIT */
/*
 * The reservation domain (btrfs's fs_info): configuration, pools, the
 * standard reservations, workers, shutdown and manual reclaim.
 *
 * Layer: the top.  It creates and wires every layer: the pools with their
 * pacing and caches, the hooks the lower layers call up through (the
 * counters' undone grant, the workers' jobs), and tears them down in
 * order.  Nothing calls in here but the engine.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "async.h"
#include "bgroup.h"
#include "cache.h"
#include "counters.h"
#include "flush.h"
#include "gate.h"
#include "pace.h"
#include "preempt.h"
#include "quota.h"
#include "rsv.h"
#include "tickets.h"
#include "trace.h"
#include "workers.h"
#include "zoned.h"

/* Default flush-state arrays: btrfs's, in storage-engine terms in types.h. */
static const enum srsv_flush_state default_async_metadata[] = {
	SRSV_STATE_DELAYED_ITEMS_NR, SRSV_STATE_DELAYED_ITEMS,
	SRSV_STATE_DELAYED_REFS_NR, SRSV_STATE_DELAYED_REFS,
	SRSV_STATE_DELALLOC, SRSV_STATE_DELALLOC_WAIT,
	SRSV_STATE_DELALLOC_FULL, SRSV_STATE_ALLOC_CHUNK,
	SRSV_STATE_ALLOC_CHUNK_FORCE, SRSV_STATE_RUN_DELAYED_IPUTS,
	SRSV_STATE_COMMIT_TRANS,
	/* zoned only: */
	SRSV_STATE_RESET_ZONES,
};

static const enum srsv_flush_state default_async_data[] = {
	SRSV_STATE_DELALLOC_FULL, SRSV_STATE_RUN_DELAYED_IPUTS,
	SRSV_STATE_COMMIT_TRANS, SRSV_STATE_RECLAIM_ZONES,
	SRSV_STATE_RESET_ZONES, SRSV_STATE_ALLOC_CHUNK_FORCE,
};

/* FLUSH_LIMIT: cheap states only; the caller may hold a transaction. */
static const enum srsv_flush_state default_priority[] = {
	SRSV_STATE_DELAYED_ITEMS_NR, SRSV_STATE_DELAYED_ITEMS,
	SRSV_STATE_RESET_ZONES, SRSV_STATE_ALLOC_CHUNK,
};

/* FLUSH_EVICT: everything but delayed iputs (we may be one). */
static const enum srsv_flush_state default_evict[] = {
	SRSV_STATE_DELAYED_ITEMS_NR, SRSV_STATE_DELAYED_ITEMS,
	SRSV_STATE_DELAYED_REFS_NR, SRSV_STATE_DELAYED_REFS,
	SRSV_STATE_DELALLOC, SRSV_STATE_DELALLOC_WAIT,
	SRSV_STATE_DELALLOC_FULL, SRSV_STATE_ALLOC_CHUNK,
	SRSV_STATE_COMMIT_TRANS, SRSV_STATE_RESET_ZONES,
};

#define KNOWN_FLAGS (SRSV_CTX_MANUAL | SRSV_CTX_MIXED | SRSV_CTX_NO_PREEMPT | \
		     SRSV_CTX_ZONED | SRSV_CTX_FIXED_CLAMP | SRSV_CTX_MANUAL_WAIT | \
		     SRSV_CTX_NO_DATA_PREEMPT)

/* The first layout of struct srsv_config: everything up to item_bytes. */
#define CONFIG_MIN_SIZE offsetof(struct srsv_config, item_bytes)

/* The layout before cpu_cache_bytes: what srsv_config_init() fills. */
#define CONFIG_V1_SIZE offsetof(struct srsv_config, cpu_cache_bytes)

SRSV__EXPORT int srsv_config_init_sized(struct srsv_config *cfg, size_t size)
{
	struct srsv_config def;

	if (!cfg || size < CONFIG_MIN_SIZE)
		return -EINVAL;
	if (size > sizeof(def))
		size = sizeof(def);
	memset(&def, 0, sizeof(def));
	def.size = size;
	def.data_chunk_bytes = SZ_1G;
	def.metadata_raid_factor = 1;
	/* btrfs: 16 KiB nodes, 8 levels, times 2 for copy-on-write. */
	def.item_bytes = UINT64_C(16384) * 8 * 2;
	def.zone_bytes = SZ_256M;
	def.delalloc_max_extent_bytes = SZ_128M;
	/* Never more than the caller has: it may be an older layout. */
	memcpy(cfg, &def, size);
	return 0;
}

/* For programs built before srsv_config_init_sized(): their layout only. */
SRSV__EXPORT int (srsv_config_init)(struct srsv_config *cfg)
{
	return srsv_config_init_sized(cfg, CONFIG_V1_SIZE);
}

static void set_states(struct srsv_state_array *arr,
		       const enum srsv_flush_state *def, unsigned nr)
{
	if (arr->nr)
		return;
	memcpy(arr->states, def, nr * sizeof(*def));
	arr->nr = nr;
}

static bool states_valid(const struct srsv_state_array *arr)
{
	if (arr->nr > SRSV_MAX_STATES)
		return false;
	for (unsigned i = 0; i < arr->nr; i++)
		if ((int)arr->states[i] < SRSV_STATE_DELAYED_ITEMS_NR ||
		    arr->states[i] >= SRSV_STATE_COUNT)
			return false;
	return true;
}

/* Copy @user into @cfg (which holds the defaults) and validate. */
static int load_config(struct srsv_config *cfg, const struct srsv_config *user)
{
	struct srsv_config defaults = *cfg;
	uint64_t sum = 0;
	size_t n;

	if (user->size < CONFIG_MIN_SIZE)
		return -EINVAL;
	if (user->size > sizeof(*cfg)) {
		/* A newer caller: fine if it set nothing we do not know. */
		const unsigned char *tail = (const unsigned char *)user +
					    sizeof(*cfg);

		for (size_t i = 0; i < user->size - sizeof(*cfg); i++)
			if (tail[i])
				return -EINVAL;
	}
	n = user->size < sizeof(*cfg) ? user->size : sizeof(*cfg);
	memcpy(cfg, user, n);
	cfg->size = sizeof(*cfg);
	if (cfg->flags & ~(unsigned)KNOWN_FLAGS)
		return -EINVAL;
	/* Zero means "default" for the tunables. */
	if (!cfg->data_chunk_bytes)
		cfg->data_chunk_bytes = defaults.data_chunk_bytes;
	if (!cfg->metadata_raid_factor)
		cfg->metadata_raid_factor = 1;
	if (cfg->metadata_raid_factor > 4)
		return -EINVAL;
	if (!cfg->item_bytes)
		cfg->item_bytes = defaults.item_bytes;
	if (!cfg->zone_bytes)
		cfg->zone_bytes = defaults.zone_bytes;
	if (!cfg->delalloc_extent_meta_bytes)
		cfg->delalloc_extent_meta_bytes = cfg->item_bytes;
	if (!cfg->delalloc_max_extent_bytes)
		cfg->delalloc_max_extent_bytes = defaults.delalloc_max_extent_bytes;
	for (int i = 0; i < SRSV_POOL_COUNT; i++) {
		if (cfg->pool_bytes[i] > SRSV_MAX_BYTES ||
		    cfg->mover_reserve_bytes[i] > SRSV_MAX_BYTES)
			return -EINVAL;
		sum += cfg->pool_bytes[i];
	}
	if (sum > SRSV_MAX_BYTES || cfg->unallocated_bytes > SRSV_MAX_BYTES ||
	    cfg->device_bytes > SRSV_MAX_BYTES ||
	    cfg->global_rsv_bytes > SRSV_MAX_BYTES ||
	    cfg->item_bytes > SRSV_MAX_BYTES ||
	    cfg->data_chunk_bytes > SRSV_MAX_BYTES ||
	    cfg->zone_bytes > SRSV_MAX_BYTES ||
	    cfg->delalloc_extent_meta_bytes > SRSV_MAX_BYTES ||
	    cfg->delalloc_max_extent_bytes > SRSV_MAX_BYTES ||
	    cfg->cpu_cache_bytes > SZ_1G || cfg->pace_start_pct > 99 ||
	    cfg->data_pace_start_pct > 99 ||
	    cfg->pace_max_delay_ns > 1000000000ull || cfg->fixed_clamp > 8)
		return -EINVAL;
	if (!cfg->device_bytes)
		cfg->device_bytes = sum + cfg->unallocated_bytes;
	if (!states_valid(&cfg->async_metadata_states) ||
	    !states_valid(&cfg->async_data_states) ||
	    !states_valid(&cfg->priority_states) ||
	    !states_valid(&cfg->evict_states))
		return -EINVAL;
	/* RESET_ZONES ends the async metadata walk on zoned devices only. */
	set_states(&cfg->async_metadata_states, default_async_metadata,
		   SRSV__ARRAY_SIZE(default_async_metadata) -
		   ((cfg->flags & SRSV_CTX_ZONED) ? 0 : 1));
	set_states(&cfg->async_data_states, default_async_data,
		   SRSV__ARRAY_SIZE(default_async_data));
	set_states(&cfg->priority_states, default_priority,
		   SRSV__ARRAY_SIZE(default_priority));
	set_states(&cfg->evict_states, default_evict,
		   SRSV__ARRAY_SIZE(default_evict));
	return 0;
}

/*
 * btrfs's calc_effective_data_chunk_size(): a data chunk is at most 10% of
 * the device and at most 1 GiB; on zoned devices it is one zone.
 */
static uint64_t data_chunk_allowance(const struct srsv_config *cfg)
{
	uint64_t chunk;

	if (cfg->flags & SRSV_CTX_ZONED)
		return cfg->zone_bytes;
	chunk = srsv__min(cfg->data_chunk_bytes,
			  srsv__mult_perc(cfg->device_bytes, 10));
	return srsv__min(chunk, SZ_1G);
}

/*
 * The workers' jobs (workers.c runs them, knowing nothing of them).  An
 * async worker serves the asynchronous priority tickets first, as their
 * blocking twins flush in their own threads before the async walk.
 */
static void job_async_metadata(struct srsv_space *s)
{
	srsv__async_walks(s);
	srsv__async_reclaim_metadata(s);
}

static void job_async_data(struct srsv_space *s)
{
	srsv__async_walks(s);
	srsv__async_reclaim_data(s);
}

static const srsv__job_fn jobs[SRSV__WORK_COUNT] = {
	[SRSV__WORK_ASYNC_METADATA] = job_async_metadata,
	[SRSV__WORK_ASYNC_DATA] = job_async_data,
	[SRSV__WORK_PREEMPT] = srsv__preempt_reclaim,
};

static void free_ctx(struct srsv_ctx *ctx)
{
	for (int i = 0; i < SRSV_RSV_TYPE_COUNT; i++)
		if (ctx->std_rsv_ready[i])
			srsv__rsv_teardown(&ctx->std_rsv[i]);
	for (int i = 0; i < SRSV_POOL_COUNT; i++) {
		struct srsv_space *s = ctx->spaces[i];

		if (!s)
			continue;
		srsv__cache_free(s);
		srsv__pace_free(s);
		srsv__space_destroy(s);
	}
	srsv__lock_destroy(&ctx->manual_lock);
	srsv__lock_destroy(&ctx->lock);
	free(ctx);
}

static int create_pools(struct srsv_ctx *ctx)
{
	static const int plain[] = { SRSV_POOL_DATA, SRSV_POOL_METADATA,
				     SRSV_POOL_SYSTEM };
	static const int mixed[] = { SRSV_POOL_MIXED, SRSV_POOL_SYSTEM };
	bool is_mixed = ctx->cfg.flags & SRSV_CTX_MIXED;
	const int *kinds = is_mixed ? mixed : plain;
	unsigned nr = is_mixed ? 2 : 3;

	for (unsigned i = 0; i < nr; i++) {
		int ret = srsv__space_create(ctx, kinds[i],
					     ctx->cfg.pool_bytes[kinds[i]],
					     &ctx->spaces[kinds[i]]);

		/* The counters call up to granting only through this. */
		if (!ret) {
			struct srsv_space *s = ctx->spaces[kinds[i]];

			s->undone = srsv__maybe_grant_nowait;
			s->data_preempt = s->is_data && !s->is_metadata &&
				!(ctx->cfg.flags & SRSV_CTX_NO_DATA_PREEMPT);
			s->mover_size = ctx->cfg.mover_reserve_bytes[kinds[i]];
		}
		if (!ret)
			ret = srsv__pace_create(ctx->spaces[kinds[i]]);
		if (!ret)
			ret = srsv__cache_create(ctx->spaces[kinds[i]],
						 ctx->cfg.cpu_cache_bytes);
		if (ret)
			return ret;
	}
	return 0;
}

/* The standard reservations, all in the metadata (or mixed) pool. */
static int create_std_rsvs(struct srsv_ctx *ctx)
{
	static const int types[] = { SRSV_RSV_GLOBAL, SRSV_RSV_TRANS,
				     SRSV_RSV_DELOPS, SRSV_RSV_DELREFS,
				     SRSV_RSV_DELALLOC };
	struct srsv_space *meta = srsv__metadata_space(ctx);

	for (unsigned i = 0; i < SRSV__ARRAY_SIZE(types); i++) {
		int ret = srsv__rsv_init(&ctx->std_rsv[types[i]], meta,
					 types[i]);

		if (ret)
			return ret;
		ctx->std_rsv_ready[types[i]] = true;
	}
	return 0;
}

/* Each pool's movers' reserve takes what fits of its size at creation;
 * the rest comes as space comes back (tickets.c). */
static void fill_mover_reserves(struct srsv_ctx *ctx)
{
	for (int i = 0; i < SRSV_POOL_COUNT; i++) {
		struct srsv_space *s = ctx->spaces[i];
		uint64_t room;

		if (!s || !s->mover_size)
			continue;
		srsv__lock(&s->lock);
		room = srsv__min(s->mover_size,
				 srsv__space_room(s, SRSV__CHARGE_NO_OVERCOMMIT));
		if (room && srsv__space_try_charge(s, room,
					SRSV__CHARGE_NO_OVERCOMMIT, NULL))
			srsv__st(&s->mover_reserved, room);
		srsv__unlock(&s->lock);
	}
}

SRSV__EXPORT int srsv_ctx_create(const struct srsv_config *user,
				 struct srsv_ctx **out)
{
	struct srsv_ctx *ctx;
	int ret;

	if (!user || !out)
		return -EINVAL;
	/* LIBSPACERSV_TRACE: load the tracepoint provider (lib/trace.c). */
	srsv__trace_init();
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	srsv_config_init(&ctx->cfg);
	ret = load_config(&ctx->cfg, user);
	if (ret) {
		free(ctx);
		return ret;
	}
	ret = srsv__lock_init(&ctx->lock);
	if (ret) {
		free(ctx);
		return ret;
	}
	ret = srsv__lock_init(&ctx->manual_lock);
	if (ret) {
		srsv__lock_destroy(&ctx->lock);
		free(ctx);
		return ret;
	}
	/* A child of fork() tells its parent's ctxs from its own (below). */
	srsv__fork_init();
	ctx->fork_gen = srsv__ld(&srsv__fork_gen);
	ctx->data_chunk_allowance = data_chunk_allowance(&ctx->cfg);
	srsv__st(&ctx->unallocated, ctx->cfg.unallocated_bytes);
	srsv__st(&ctx->preempt_enabled,
		 !(ctx->cfg.flags & SRSV_CTX_NO_PREEMPT));
	ret = create_pools(ctx);
	if (!ret)
		ret = create_std_rsvs(ctx);
	if (!ret && ctx->cfg.global_rsv_bytes)
		ret = srsv_ctx_resize_global_rsv(ctx, ctx->cfg.global_rsv_bytes);
	if (!ret)
		fill_mover_reserves(ctx);
	if (!ret)
		ret = srsv__workers_start(ctx, jobs);
	if (ret) {
		free_ctx(ctx);
		return ret;
	}
	*out = ctx;
	return 0;
}

/*
 * The child of a fork() inherited a copy of the ctx: its worker threads
 * exist only in the parent, and a lock one of them (or any other parent
 * thread) held at the fork stays held for ever.  What the child may do
 * with it is free its memory; nothing is joined, locked or waited for.
 * (The memory holds no file descriptors: completion queues are the
 * caller's.)
 */
static bool forked_copy(const struct srsv_ctx *ctx)
{
	return ctx->fork_gen != srsv__ld(&srsv__fork_gen);
}

SRSV__EXPORT int srsv_ctx_shutdown(struct srsv_ctx *ctx)
{
	const struct timespec pause = { 0, 1000 * 1000 };

	if (!ctx)
		return -EINVAL;
	if (srsv__in_callback())
		return -EDEADLK;
	/* Its threads are the parent's: nothing to stop here. */
	if (forked_copy(ctx))
		return -ECHILD;
	srsv__lock(&ctx->lock);
	if (ctx->shut_down) {
		srsv__unlock(&ctx->lock);
		return 0;
	}
	AO_store_full(&ctx->closing, 1);
	for (int i = 0; i < SRSV_POOL_COUNT; i++) {
		struct srsv_space *s = ctx->spaces[i];

		if (!s)
			continue;
		srsv__lock(&s->lock);
		srsv__fail_all_tickets(s, -ESHUTDOWN);
		srsv__unlock(&s->lock);
	}
	srsv__workers_stop(ctx);
	srsv__async_stop(ctx);
	/*
	 * Every ticket has ended; wait for the threads that were waiting on
	 * them to leave the pools (they only need the pool lock once more).
	 * Acquire: their last unlock of a pool lock happens before the free
	 * that may follow (a relaxed load orders nothing, and TSan saw the
	 * unlock race pthread_mutex_destroy()).
	 */
	while (AO_load_acquire(&ctx->active))
		nanosleep(&pause, NULL);
	ctx->shut_down = true;
	srsv__unlock(&ctx->lock);
	return 0;
}

static void forget_threads(struct srsv_ctx *ctx)
{
	for (int i = 0; i < SRSV__WORK_COUNT; i++)
		ctx->workers[i].started = false;
	free(ctx->async);
	ctx->async = NULL;
}

SRSV__EXPORT int srsv_ctx_destroy(struct srsv_ctx *ctx)
{
	if (!ctx)
		return 0;
	/* The callback's caller (a worker, a waiter's walk) still uses the
	 * ctx: freeing it under them is a use-after-free. */
	if (srsv__in_callback())
		return -EDEADLK;
	if (forked_copy(ctx))
		forget_threads(ctx);
	else
		srsv_ctx_shutdown(ctx);
	srsv__inflight_forget(ctx);
	srsv__quota_ctx_destroy(ctx);
	srsv__zoned_ctx_destroy(ctx);
	srsv__async_ctx_destroy(ctx);
	srsv__bgroups_ctx_destroy(ctx);
	free_ctx(ctx);
	return 0;
}

SRSV__EXPORT struct srsv_space *srsv_ctx_space(struct srsv_ctx *ctx,
					       enum srsv_pool kind)
{
	return ctx ? srsv__ctx_space(ctx, (int)kind) : NULL;
}

SRSV__EXPORT int srsv_ctx_set_unallocated(struct srsv_ctx *ctx, uint64_t bytes)
{
	if (!ctx || bytes > SRSV_MAX_BYTES)
		return -EINVAL;
	srsv__st(&ctx->unallocated, bytes);
	/* More room to overcommit into: metadata tickets may fit now. */
	srsv__grant_metadata_tickets(ctx);
	return 0;
}

SRSV__EXPORT uint64_t srsv_ctx_unallocated(const struct srsv_ctx *ctx)
{
	return ctx ? srsv__ld(&ctx->unallocated) : 0;
}

/* Add @delta to @word unless it would go below 0 or above the maximum. */
static int add_signed(volatile AO_t *word, int64_t delta)
{
	AO_t old, new;
	uint64_t mag = delta < 0 ? (uint64_t)0 - (uint64_t)delta :
				   (uint64_t)delta;

	if (mag > SRSV_MAX_BYTES)
		return -EINVAL;
	do {
		old = AO_load(word);
		if (delta < 0 && mag > old)
			return -EINVAL;
		new = delta < 0 ? old - mag : old + mag;
		if (new > SRSV_MAX_BYTES)
			return -EINVAL;
	} while (!AO_compare_and_swap_full(word, old, new));
	return 0;
}

SRSV__EXPORT int srsv_ctx_account_delalloc(struct srsv_ctx *ctx,
					   int64_t delalloc_delta,
					   int64_t ordered_delta)
{
	int ret;

	if (!ctx)
		return -EINVAL;
	ret = add_signed(&ctx->delalloc_bytes, delalloc_delta);
	if (ret)
		return ret;
	ret = add_signed(&ctx->ordered_bytes, ordered_delta);
	if (ret) {
		/* Undo: nothing changes on failure.  Cannot fail (we just
		 * applied the opposite change). */
		add_signed(&ctx->delalloc_bytes, -delalloc_delta);
		return ret;
	}
	/* Writeback progress, for the preemptive flusher's pacing. */
	if (delalloc_delta < 0)
		AO_fetch_and_add(&ctx->delalloc_cleaned,
				 (AO_t)0 - (AO_t)delalloc_delta);
	return 0;
}

SRSV__EXPORT int srsv_ctx_set_preempt(struct srsv_ctx *ctx, bool enabled)
{
	if (!ctx)
		return -EINVAL;
	srsv__st(&ctx->preempt_enabled, enabled);
	return 0;
}

SRSV__EXPORT int srsv_ctx_set_error(struct srsv_ctx *ctx, int error)
{
	/*
	 * -EINPROGRESS means "queued" to every reserve call: a waiting call
	 * answered with it would wait on a ticket never queued (the fuzzer
	 * found srsv_space_reserve() crash in ticket_wait() so).
	 */
	if (!ctx || error >= 0 || error == -EINPROGRESS)
		return -EINVAL;
	srsv__st(&ctx->error, (uint64_t)(int64_t)error);
	for (int i = 0; i < SRSV_POOL_COUNT; i++) {
		struct srsv_space *s = ctx->spaces[i];

		if (!s)
			continue;
		srsv__lock(&s->lock);
		srsv__fail_all_tickets(s, error);
		srsv__unlock(&s->lock);
	}
	return 0;
}

SRSV__EXPORT int srsv_ctx_clear_error(struct srsv_ctx *ctx)
{
	if (!ctx)
		return -EINVAL;
	if (srsv__ld(&ctx->closing))
		return -ESHUTDOWN;
	srsv__st(&ctx->error, 0);
	return 0;
}

SRSV__EXPORT int srsv_ctx_run_pending(struct srsv_ctx *ctx)
{
	int ran = 0;

	if (!ctx || !(ctx->cfg.flags & SRSV_CTX_MANUAL))
		return -EINVAL;
	if (srsv__in_callback())
		return -EDEADLK;
	AO_fetch_and_add1_full(&ctx->active);
	srsv__lock(&ctx->manual_lock);
	/* Tickets past their deadline time out before any walk for them. */
	ran += srsv__async_expire(ctx);
	ran += srsv__worker_run_pending(ctx, SRSV__WORK_ASYNC_METADATA);
	ran += srsv__worker_run_pending(ctx, SRSV__WORK_ASYNC_DATA);
	ran += srsv__worker_run_pending(ctx, SRSV__WORK_PREEMPT);
	srsv__unlock(&ctx->manual_lock);
	srsv__ctx_leave(ctx);
	return ran;
}

SRSV__EXPORT void *srsv_ctx_user(const struct srsv_ctx *ctx)
{
	return ctx ? ctx->cfg.user : NULL;
}
