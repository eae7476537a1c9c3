/* SPDX-License-Identifier: MIT */
/*
 * The delalloc helper and the NOWAIT contract ("Behaviour" and
 * "Proof, not promise"): each mode; NOWAIT answers -EAGAIN, never -ENOSPC
 * or -EDQUOT, when the pool is full, the quota is exhausted, tickets are
 * queued, or another thread holds the pool, rsv or quota lock, with zero
 * blocking lock acquisitions and zero waits in the calling thread (built
 * with -Ddebug_locks=true; without it those two counts are not checked);
 * failure injected at each step leaves the quota, data and metadata pools
 * exactly as before.
 *
 * White-box: linked against the static library, so it can hold the
 * library's own locks from another thread and set the fault-injection
 * hook of lib/delalloc.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <check.h>

#include "blockrsv.h"	/* the rsv lock */
#include "delalloc.h"	/* srsv__delalloc_fault */
#include "gate.h"	/* srsv__outer_begin */
#include "quota.h"	/* srsv__quota_lock_ptr */

/* The fallible steps, as lib/delalloc.c numbers them: reserve, then
 * finish and release. */
enum {
	STEP_DATA = 0, STEP_QUOTA = 1, STEP_META = 2, NR_RESERVE_STEPS = 3,
	STEP_FINISH_RSV = 3, STEP_FINISH_QUOTA = 4, STEP_RELEASE_RSV = 5,
	NR_STEPS = 6
};

#define KIB (UINT64_C(1) << 10)
#define MIB (UINT64_C(1) << 20)

/* Bound on every wait for another thread (never a timing assertion). */
#define WAIT_NS (UINT64_C(20) * 1000 * 1000 * 1000)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_us(unsigned us)
{
	struct timespec ts = { us / 1000000, (long)(us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

/* ---- fixture ---- */

struct fx {
	struct srsv_ctx *ctx;
	struct srsv_space *data, *meta;
	struct srsv_rsv *rsv;
	/* Space flush callback: bytes of data may_use the "engine" holds
	 * and gives back on any data flush state. */
	volatile AO_t data_held;
	volatile AO_t space_calls;
	volatile AO_t quota_calls;
	/* Sleep this long in every space flush call (a slow engine). */
	volatile AO_t flush_sleep_us;
	/* Threads inside the space flush callback now. */
	volatile AO_t flush_inside;
	/* When set, the callback keeps what it holds (frees nothing). */
	volatile AO_t flush_hold;
	/* Bytes of metadata may_use the "engine" holds and gives back on any
	 * metadata flush state. */
	volatile AO_t meta_held;
	/* Bitmask of the states the callback saw, per pool. */
	volatile AO_t data_states, meta_states;
	/* When set, the quota flush callback first runs reenter_checks(). */
	struct srsv_quota *reenter_full;
	int reenter_ret[5];
};

static void add_state(volatile AO_t *mask, int state)
{
	AO_t old;

	do
		old = AO_load(mask);
	while (!AO_compare_and_swap_full(mask, old, old | (AO_t)1 << state));
}

static int space_flush_cb(struct srsv_space *s, enum srsv_flush_state state,
			  uint64_t bytes, bool for_preempt, void *user)
{
	struct fx *fx = user;
	uint64_t held;

	(void)bytes;
	(void)for_preempt;
	AO_fetch_and_add1(&fx->space_calls);
	add_state(s == fx->data ? &fx->data_states : &fx->meta_states,
		  (int)state);
	AO_fetch_and_add1_full(&fx->flush_inside);
	if (AO_load(&fx->flush_sleep_us)) {
		/* A slow engine: at least one nap, and more while told to
		 * hold on (bounded, in case the test dies). */
		uint64_t deadline = now_ns() + WAIT_NS;

		do
			sleep_us((unsigned)AO_load(&fx->flush_sleep_us));
		while (AO_load_acquire(&fx->flush_hold) &&
		       now_ns() < deadline);
	}
	AO_fetch_and_sub1_full(&fx->flush_inside);
	if (s == fx->data && !AO_load_acquire(&fx->flush_hold)) {
		held = (uint64_t)AO_load(&fx->data_held);
		if (held && AO_compare_and_swap_full(&fx->data_held, held, 0))
			ck_assert_int_eq(srsv_space_release(s, held), 0);
	}
	if (s == fx->meta && s != fx->data &&
	    !AO_load_acquire(&fx->flush_hold)) {
		held = (uint64_t)AO_load(&fx->meta_held);
		if (held && AO_compare_and_swap_full(&fx->meta_held, held, 0))
			ck_assert_int_eq(srsv_space_release(s, held), 0);
	}
	return 0;
}

static void reenter_checks(struct fx *fx);

static int quota_flush_cb(struct srsv_quota *q, void *user)
{
	struct fx *fx = user;

	AO_fetch_and_add1(&fx->quota_calls);
	if (fx->reenter_full)
		reenter_checks(fx);
	return srsv_quota_commit(srsv_quota_ctx(q), NULL);
}

static struct fx *fx_new_cfg(struct srsv_config *cfg)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	ck_assert_ptr_nonnull(fx);
	cfg->user = fx;
	cfg->flush = space_flush_cb;
	cfg->quota_flush = quota_flush_cb;
	ck_assert_int_eq(srsv_ctx_create(cfg, &fx->ctx), 0);
	fx->data = srsv_ctx_space(fx->ctx, SRSV_POOL_DATA);
	fx->meta = srsv_ctx_space(fx->ctx, SRSV_POOL_METADATA);
	fx->rsv = srsv_ctx_rsv(fx->ctx, SRSV_RSV_DELALLOC);
	ck_assert_ptr_nonnull(fx->data);
	ck_assert_ptr_nonnull(fx->meta);
	ck_assert_ptr_nonnull(fx->rsv);
	return fx;
}

static void cfg_init(struct srsv_config *cfg, uint64_t data, uint64_t meta)
{
	ck_assert_int_eq(srsv_config_init(cfg), 0);
	cfg->flags = SRSV_CTX_MANUAL | SRSV_CTX_MANUAL_WAIT | SRSV_CTX_NO_PREEMPT;
	cfg->pool_bytes[SRSV_POOL_DATA] = data;
	cfg->pool_bytes[SRSV_POOL_METADATA] = meta;
	cfg->pool_bytes[SRSV_POOL_SYSTEM] = 4 * MIB;
	/* No unallocated space: no metadata overcommit, "full" is exact. */
	cfg->unallocated_bytes = 0;
	cfg->global_rsv_bytes = 0;
}

/* A manual ctx (no library thread) with no overcommit. */
static struct fx *fx_new(uint64_t data, uint64_t meta)
{
	struct srsv_config cfg;

	cfg_init(&cfg, data, meta);
	return fx_new_cfg(&cfg);
}

static void fx_free(struct fx *fx)
{
	srsv_ctx_destroy(fx->ctx);
	free(fx);
}

/* ---- state snapshots ---- */

struct state {
	struct srsv_space_info data, meta;
	struct srsv_rsv_info delalloc;
	struct srsv_quota_info quota;
};

static struct state state_of(struct fx *fx, struct srsv_quota *q)
{
	struct state s;

	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(srsv_space_snapshot(fx->data, &s.data, NULL, 0,
					     NULL), 0);
	ck_assert_int_eq(srsv_space_snapshot(fx->meta, &s.meta, NULL, 0,
					     NULL), 0);
	ck_assert_int_eq(srsv_rsv_get_info(fx->rsv, &s.delalloc), 0);
	if (q)
		ck_assert_int_eq(srsv_quota_snapshot(q, &s.quota), 0);
	return s;
}

static void assert_same_space(const struct srsv_space_info *a,
			      const struct srsv_space_info *b)
{
	ck_assert_uint_eq(a->total, b->total);
	ck_assert_uint_eq(a->used, b->used);
	ck_assert_uint_eq(a->pinned, b->pinned);
	ck_assert_uint_eq(a->reserved, b->reserved);
	ck_assert_uint_eq(a->may_use, b->may_use);
	ck_assert_uint_eq(a->readonly, b->readonly);
	ck_assert_uint_eq(a->reclaim_size, b->reclaim_size);
	ck_assert_uint_eq(a->nr_tickets, b->nr_tickets);
	ck_assert_uint_eq(a->nr_priority_tickets, b->nr_priority_tickets);
	ck_assert_uint_eq(a->global_rsv_reserved, b->global_rsv_reserved);
	ck_assert_uint_eq(a->trans_rsv_reserved, b->trans_rsv_reserved);
	ck_assert_uint_eq(a->delayed_rsv_reserved, b->delayed_rsv_reserved);
	ck_assert_uint_eq(a->delayed_refs_rsv_reserved,
			  b->delayed_refs_rsv_reserved);
}

static void assert_unchanged(const struct state *before, struct fx *fx,
			     struct srsv_quota *q)
{
	struct state now = state_of(fx, q);
	int k;

	assert_same_space(&before->data, &now.data);
	assert_same_space(&before->meta, &now.meta);
	ck_assert_uint_eq(before->delalloc.size, now.delalloc.size);
	ck_assert_uint_eq(before->delalloc.reserved, now.delalloc.reserved);
	if (!q)
		return;
	ck_assert_uint_eq(before->quota.limit, now.quota.limit);
	for (k = 0; k < SRSV_QUOTA_KIND_COUNT; k++)
		ck_assert_uint_eq(before->quota.reserved[k],
				  now.quota.reserved[k]);
	ck_assert_uint_eq(before->quota.used, now.quota.used);
	ck_assert_uint_eq(before->quota.charged, now.quota.charged);
}

/* ---- lock accounting ---- */

static bool have_lock_stats(void)
{
	struct srsv_lock_stats st;

	return srsv_debug_lock_stats(&st) == 0;
}

static void stats_reset(void)
{
	int ret = srsv_debug_lock_stats_reset();

	ck_assert(ret == 0 || ret == -ENOTSUP);
}

/* The calling thread neither slept on a lock nor waited since the reset. */
static void assert_never_blocked(void)
{
	struct srsv_lock_stats st;

	if (!have_lock_stats())
		return;
	ck_assert_int_eq(srsv_debug_lock_stats(&st), 0);
	ck_assert_uint_eq(st.blocking_acquisitions, 0);
	ck_assert_uint_eq(st.waits, 0);
}

/* ---- a thread that holds a lock until told to let go ---- */

enum held_kind { HOLD_LIBLOCK, HOLD_MUTEX };

struct holder {
	pthread_t thread;
	enum held_kind kind;
	struct srsv__lock *liblock;
	pthread_mutex_t *mutex;
	volatile AO_t holding;	/* set once the lock is held */
	volatile AO_t release;	/* set by the test to let go */
};

static void *holder_fn(void *p)
{
	struct holder *h = p;
	uint64_t deadline;

	if (h->kind == HOLD_LIBLOCK)
		srsv__lock(h->liblock);
	else
		pthread_mutex_lock(h->mutex);
	AO_store_release(&h->holding, 1);
	/* Bounded: if the test dies, the lock is let go anyway. */
	deadline = now_ns() + WAIT_NS;
	while (!AO_load_acquire(&h->release) && now_ns() < deadline)
		sleep_us(200);
	if (h->kind == HOLD_LIBLOCK)
		srsv__unlock(h->liblock);
	else
		pthread_mutex_unlock(h->mutex);
	return NULL;
}

static void hold_start(struct holder *h)
{
	uint64_t deadline = now_ns() + WAIT_NS;

	AO_store(&h->holding, 0);
	AO_store(&h->release, 0);
	ck_assert_int_eq(pthread_create(&h->thread, NULL, holder_fn, h), 0);
	while (!AO_load_acquire(&h->holding) && now_ns() < deadline)
		sleep_us(100);
	ck_assert(AO_load_acquire(&h->holding));
}

static void hold_stop(struct holder *h)
{
	AO_store_release(&h->release, 1);
	pthread_join(h->thread, NULL);
}

/* ---- each mode ---- */

START_TEST(test_reserve_finish)
{
	struct fx *fx = fx_new(64 * MIB, 64 * MIB);
	struct srsv_delalloc_resv r;
	struct srsv_quota *q;
	struct state s;
	uint64_t cost, extents;
	int mode;

	ck_assert_int_eq(srsv_quota_create(fx->ctx, 1, 32 * MIB, &q), 0);
	ck_assert_int_eq(srsv_delalloc_meta_cost(fx->ctx, 1 * MIB, &extents,
						 &cost), 0);
	ck_assert_uint_eq(extents, 1);
	/* The ctx's default: one item's worth (256 KiB) per extent. */
	ck_assert_uint_eq(cost, 256 * KIB);

	for (mode = 0; mode < SRSV_DELALLOC_MODE_COUNT; mode++) {
		struct state before = state_of(fx, q);

		ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, q, 1 * MIB,
					(enum srsv_delalloc_mode)mode, &r), 0);
		ck_assert_uint_eq(r.bytes, 1 * MIB);
		ck_assert_uint_eq(r.data_bytes, 1 * MIB);
		ck_assert_uint_eq(r.meta_bytes, cost);
		ck_assert_uint_eq(r.extents, 1);
		ck_assert_ptr_eq(r.quota, q);
		ck_assert_uint_eq(r.quota_data_bytes, 1 * MIB);
		ck_assert_uint_eq(r.quota_meta_bytes, cost);

		s = state_of(fx, q);
		ck_assert_uint_eq(s.data.may_use, before.data.may_use + MIB);
		ck_assert_uint_eq(s.meta.may_use, before.meta.may_use + cost);
		ck_assert_uint_eq(s.delalloc.size, before.delalloc.size + cost);
		ck_assert_uint_eq(s.delalloc.reserved,
				  before.delalloc.reserved + cost);
		ck_assert_uint_eq(s.quota.reserved[SRSV_QUOTA_DATA], MIB);
		ck_assert_uint_eq(s.quota.reserved[SRSV_QUOTA_META_PREALLOC],
				  cost);

		/* The write reached disk. */
		ck_assert_int_eq(srsv_delalloc_finish(&r,
					SRSV_DELALLOC_META_ALL), 0);
		s = state_of(fx, q);
		ck_assert_uint_eq(s.data.may_use, before.data.may_use);
		ck_assert_uint_eq(s.data.reserved, before.data.reserved);
		ck_assert_uint_eq(s.data.used, before.data.used + MIB);
		ck_assert_uint_eq(s.meta.may_use, before.meta.may_use);
		ck_assert_uint_eq(s.meta.used, before.meta.used + cost);
		ck_assert_uint_eq(s.delalloc.size, before.delalloc.size);
		ck_assert_uint_eq(s.delalloc.reserved,
				  before.delalloc.reserved);
		ck_assert_uint_eq(s.quota.reserved[SRSV_QUOTA_DATA], 0);
		ck_assert_uint_eq(s.quota.reserved[SRSV_QUOTA_META_PREALLOC],
				  0);
		ck_assert_uint_eq(s.quota.reserved[SRSV_QUOTA_META_PERTRANS],
				  before.quota.reserved[
					SRSV_QUOTA_META_PERTRANS] + cost);
		ck_assert_uint_eq(s.quota.used, before.quota.used + MIB);
		/* Ended: a second end is refused. */
		ck_assert_int_eq(srsv_delalloc_finish(&r, 0), -EINVAL);
		ck_assert_int_eq(srsv_delalloc_release(&r), -EINVAL);
	}
	/* The commit frees the transaction's quota. */
	ck_assert_int_eq(srsv_quota_commit(fx->ctx, NULL), 0);
	s = state_of(fx, q);
	ck_assert_uint_eq(s.quota.reserved[SRSV_QUOTA_META_PERTRANS], 0);
	ck_assert_uint_eq(s.quota.charged, SRSV_DELALLOC_MODE_COUNT * MIB);
	fx_free(fx);
}
END_TEST

/* Finish with part of the metadata used: the rest goes back. */
START_TEST(test_finish_partial_meta)
{
	struct fx *fx = fx_new(512 * MIB, 64 * MIB);
	struct srsv_delalloc_resv r;
	struct srsv_quota *q;
	struct state before, s;

	ck_assert_int_eq(srsv_quota_create(fx->ctx, 1, 1024 * MIB, &q), 0);
	before = state_of(fx, q);
	ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, q, 300 * MIB,
					       SRSV_DELALLOC_NOFLUSH, &r), 0);
	/* 300 MiB in 128 MiB extents: 3 extents. */
	ck_assert_uint_eq(r.extents, 3);
	ck_assert_uint_eq(r.meta_bytes, 3 * 256 * KIB);
	/* More than reserved: refused, nothing changed. */
	ck_assert_int_eq(srsv_delalloc_finish(&r, r.meta_bytes + 1), -EINVAL);
	ck_assert_int_eq(srsv_delalloc_finish(&r, 100 * KIB), 0);
	s = state_of(fx, q);
	ck_assert_uint_eq(s.meta.used, before.meta.used + 100 * KIB);
	ck_assert_uint_eq(s.meta.may_use, before.meta.may_use);
	ck_assert_uint_eq(s.delalloc.size, before.delalloc.size);
	ck_assert_uint_eq(s.quota.reserved[SRSV_QUOTA_META_PERTRANS],
			  100 * KIB);
	ck_assert_uint_eq(s.quota.reserved[SRSV_QUOTA_META_PREALLOC], 0);
	ck_assert_uint_eq(s.quota.charged, 300 * MIB + 100 * KIB);
	fx_free(fx);
}
END_TEST

/* The extent count follows the config (calc_inode_reservations). */
START_TEST(test_meta_cost_config)
{
	struct srsv_config cfg;
	struct fx *fx;
	struct srsv_delalloc_resv r;
	uint64_t extents, cost;

	cfg_init(&cfg, 64 * MIB, 64 * MIB);
	cfg.delalloc_max_extent_bytes = 1 * MIB;
	cfg.delalloc_extent_meta_bytes = 16 * KIB;
	fx = fx_new_cfg(&cfg);
	ck_assert_int_eq(srsv_delalloc_meta_cost(fx->ctx, 1, &extents,
						 &cost), 0);
	ck_assert_uint_eq(extents, 1);
	ck_assert_uint_eq(cost, 16 * KIB);
	ck_assert_int_eq(srsv_delalloc_meta_cost(fx->ctx, 1 * MIB, &extents,
						 &cost), 0);
	ck_assert_uint_eq(extents, 1);
	ck_assert_int_eq(srsv_delalloc_meta_cost(fx->ctx, 1 * MIB + 1,
						 &extents, &cost), 0);
	ck_assert_uint_eq(extents, 2);
	ck_assert_uint_eq(cost, 32 * KIB);
	ck_assert_int_eq(srsv_delalloc_meta_cost(fx->ctx, 3 * MIB + MIB / 2,
						 NULL, &cost), 0);
	ck_assert_uint_eq(cost, 4 * 16 * KIB);
	ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, NULL, 3 * MIB + 1,
					       SRSV_DELALLOC_NORMAL, &r), 0);
	ck_assert_uint_eq(r.extents, 4);
	ck_assert_uint_eq(r.meta_bytes, 64 * KIB);
	ck_assert_ptr_null(r.quota);
	ck_assert_int_eq(srsv_delalloc_release(&r), 0);
	fx_free(fx);

	/* A metadata cost that would overflow is refused. */
	cfg_init(&cfg, 64 * MIB, 64 * MIB);
	cfg.delalloc_max_extent_bytes = 1;
	cfg.delalloc_extent_meta_bytes = 1 * MIB;
	fx = fx_new_cfg(&cfg);
	ck_assert_int_eq(srsv_delalloc_meta_cost(fx->ctx, SRSV_MAX_BYTES,
						 NULL, &cost), -EINVAL);
	ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, NULL, SRSV_MAX_BYTES,
					       SRSV_DELALLOC_NOWAIT, &r),
			 -EINVAL);
	fx_free(fx);
}
END_TEST

/* Release (cancelled write) puts everything back exactly. */
START_TEST(test_release_restores)
{
	struct fx *fx = fx_new(64 * MIB, 64 * MIB);
	struct srsv_delalloc_resv r[3];
	struct srsv_quota *q;
	struct state before;
	int i;

	ck_assert_int_eq(srsv_quota_create(fx->ctx, 1, 32 * MIB, &q), 0);
	/* Some unrelated state that must survive untouched. */
	ck_assert_int_eq(srsv_quota_reserve(q, SRSV_QUOTA_META_PERTRANS,
					    64 * KIB, 0), 0);
	ck_assert_int_eq(srsv_space_reserve(fx->data, 5 * MIB, SRSV_NO_FLUSH,
					    0), 0);
	ck_assert_int_eq(srsv_rsv_add(fx->rsv, 128 * KIB, SRSV_NO_FLUSH, 0),
			 0);
	before = state_of(fx, q);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, q,
				 (uint64_t)(i + 1) * MIB,
				 (enum srsv_delalloc_mode)i, &r[i]), 0);
	/* Out of order. */
	ck_assert_int_eq(srsv_delalloc_release(&r[1]), 0);
	ck_assert_int_eq(srsv_delalloc_release(&r[0]), 0);
	ck_assert_int_eq(srsv_delalloc_release(&r[2]), 0);
	assert_unchanged(&before, fx, q);
	ck_assert_int_eq(srsv_delalloc_release(&r[2]), -EINVAL);
	fx_free(fx);
}
END_TEST

/* MIXED: data and metadata come from one pool. */
START_TEST(test_mixed)
{
	struct srsv_config cfg;
	struct srsv_delalloc_resv r;
	struct fx *fx;
	struct state before, s;

	cfg_init(&cfg, 0, 0);
	cfg.flags |= SRSV_CTX_MIXED;
	cfg.pool_bytes[SRSV_POOL_MIXED] = 64 * MIB;
	fx = fx_new_cfg(&cfg);
	ck_assert_ptr_eq(fx->data, fx->meta);
	before = state_of(fx, NULL);
	ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, NULL, 1 * MIB,
					       SRSV_DELALLOC_NORMAL, &r), 0);
	s = state_of(fx, NULL);
	ck_assert_uint_eq(s.data.may_use,
			  before.data.may_use + MIB + r.meta_bytes);
	ck_assert_int_eq(srsv_delalloc_release(&r), 0);
	assert_unchanged(&before, fx, NULL);
	ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, NULL, 1 * MIB,
					       SRSV_DELALLOC_NOWAIT, &r), 0);
	ck_assert_int_eq(srsv_delalloc_finish(&r, SRSV_DELALLOC_META_ALL), 0);
	s = state_of(fx, NULL);
	ck_assert_uint_eq(s.data.used, before.data.used + MIB + 256 * KIB);
	ck_assert_uint_eq(s.data.may_use, before.data.may_use);
	fx_free(fx);
}
END_TEST

/* ---- NORMAL flushes and waits; NOFLUSH does neither ---- */

struct bg_reserve {
	struct fx *fx;
	struct srsv_quota *q;
	uint64_t bytes;
	enum srsv_delalloc_mode mode;
	struct srsv_delalloc_resv r;
	volatile AO_t done;
	int ret;
};

static void *bg_reserve_fn(void *p)
{
	struct bg_reserve *b = p;

	b->ret = srsv_delalloc_reserve(b->fx->ctx, b->q, b->bytes, b->mode,
				       &b->r);
	AO_store_release(&b->done, 1);
	return NULL;
}

static unsigned nr_tickets(struct srsv_space *s)
{
	struct srsv_space_info info;

	ck_assert_int_eq(srsv_space_snapshot(s, &info, NULL, 0, NULL), 0);
	return info.nr_tickets + info.nr_priority_tickets;
}

/* Poll (bounded) until @s has @n tickets queued. */
static void wait_tickets(struct srsv_space *s, unsigned n)
{
	uint64_t deadline = now_ns() + WAIT_NS;

	while (nr_tickets(s) < n && now_ns() < deadline)
		sleep_us(200);
	ck_assert_uint_eq(nr_tickets(s), n);
}

START_TEST(test_normal_flushes_noflush_does_not)
{
	struct fx *fx = fx_new(8 * MIB, 64 * MIB);
	struct srsv_delalloc_resv r;
	struct bg_reserve b;
	pthread_t th;
	struct state before;
	uint64_t deadline;

	/* The "engine" holds 6 MiB of dirty data it can write back. */
	ck_assert_int_eq(srsv_space_reserve(fx->data, 6 * MIB, SRSV_NO_FLUSH,
					    0), 0);
	AO_store(&fx->data_held, 6 * MIB);
	before = state_of(fx, NULL);

	/* NOFLUSH: -ENOSPC at once, no callback. */
	ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, NULL, 4 * MIB,
					       SRSV_DELALLOC_NOFLUSH, &r),
			 -ENOSPC);
	ck_assert_uint_eq(AO_load(&fx->space_calls), 0);
	assert_unchanged(&before, fx, NULL);

	/* NORMAL: queues a data ticket; the flush gives the 6 MiB back. */
	memset(&b, 0, sizeof(b));
	b.fx = fx;
	b.bytes = 4 * MIB;
	b.mode = SRSV_DELALLOC_NORMAL;
	ck_assert_int_eq(pthread_create(&th, NULL, bg_reserve_fn, &b), 0);
	wait_tickets(fx->data, 1);
	ck_assert(!AO_load_acquire(&b.done));
	deadline = now_ns() + WAIT_NS;
	while (!AO_load_acquire(&b.done) && now_ns() < deadline) {
		srsv_ctx_run_pending(fx->ctx);
		sleep_us(200);
	}
	pthread_join(th, NULL);
	ck_assert_int_eq(b.ret, 0);
	ck_assert_uint_ge(AO_load(&fx->space_calls), 1);
	ck_assert_uint_eq(AO_load(&fx->data_held), 0);
	ck_assert_uint_eq(b.r.data_bytes, 4 * MIB);
	ck_assert_int_eq(srsv_delalloc_release(&b.r), 0);
	fx_free(fx);
}
END_TEST

/* NORMAL over quota: the quota flush commits, the retry succeeds. */
START_TEST(test_normal_quota_flush)
{
	struct fx *fx = fx_new(64 * MIB, 64 * MIB);
	struct srsv_delalloc_resv r;
	struct srsv_quota *q;
	struct state before;

	ck_assert_int_eq(srsv_quota_create(fx->ctx, 1, 2 * MIB, &q), 0);
	ck_assert_int_eq(srsv_quota_reserve(q, SRSV_QUOTA_META_PERTRANS,
					    1 * MIB, 0), 0);
	before = state_of(fx, q);
	ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, q, 1 * MIB,
					       SRSV_DELALLOC_NOFLUSH, &r),
			 -EDQUOT);
	ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, q, 1 * MIB,
					       SRSV_DELALLOC_NOWAIT, &r),
			 -EAGAIN);
	ck_assert_uint_eq(AO_load(&fx->quota_calls), 0);
	assert_unchanged(&before, fx, q);
	ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, q, 1 * MIB,
					       SRSV_DELALLOC_NORMAL, &r), 0);
	ck_assert_uint_eq(AO_load(&fx->quota_calls), 1);
	ck_assert_int_eq(srsv_delalloc_release(&r), 0);
	fx_free(fx);
}
END_TEST

/* ---- NOWAIT: -EAGAIN, never blocks, never -ENOSPC/-EDQUOT ---- */

/* One NOWAIT attempt that must fail with -EAGAIN, without blocking, and
 * leave everything as it was. */
static void expect_nowait_eagain(struct fx *fx, struct srsv_quota *q,
				 uint64_t bytes)
{
	struct srsv_delalloc_resv r;
	struct state before = state_of(fx, q);
	int ret;

	stats_reset();
	ret = srsv_delalloc_reserve(fx->ctx, q, bytes, SRSV_DELALLOC_NOWAIT,
				    &r);
	assert_never_blocked();
	ck_assert_int_eq(ret, -EAGAIN);
	assert_unchanged(&before, fx, q);
}

START_TEST(test_nowait_success_never_blocks)
{
	struct fx *fx = fx_new(64 * MIB, 64 * MIB);
	struct srsv_delalloc_resv r;
	struct srsv_quota *q;
	int i;

	ck_assert_int_eq(srsv_quota_create(fx->ctx, 1, 32 * MIB, &q), 0);
	for (i = 0; i < 16; i++) {
		stats_reset();
		ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, q, 64 * KIB,
					SRSV_DELALLOC_NOWAIT, &r), 0);
		assert_never_blocked();
		ck_assert_int_eq(srsv_delalloc_release(&r), 0);
	}
	fx_free(fx);
}
END_TEST

START_TEST(test_nowait_pool_full)
{
	struct fx *fx = fx_new(8 * MIB, 8 * MIB);
	struct srsv_quota *q;

	ck_assert_int_eq(srsv_quota_create(fx->ctx, 1, 32 * MIB, &q), 0);
	/* Data full. */
	ck_assert_int_eq(srsv_space_reserve(fx->data, 8 * MIB - 32 * KIB,
					    SRSV_NO_FLUSH, 0), 0);
	expect_nowait_eagain(fx, q, 64 * KIB);
	expect_nowait_eagain(fx, NULL, 64 * KIB);
	ck_assert_int_eq(srsv_space_release(fx->data, 8 * MIB - 32 * KIB), 0);
	/* Metadata full: data and quota are taken, then given back. */
	ck_assert_int_eq(srsv_space_reserve(fx->meta, 8 * MIB - 128 * KIB,
					    SRSV_NO_FLUSH, 0), 0);
	expect_nowait_eagain(fx, q, 64 * KIB);
	expect_nowait_eagain(fx, NULL, 64 * KIB);
	ck_assert_uint_eq(AO_load(&fx->space_calls), 0);
	fx_free(fx);
}
END_TEST

START_TEST(test_nowait_quota_exhausted)
{
	struct fx *fx = fx_new(64 * MIB, 64 * MIB);
	struct srsv_quota *q;

	ck_assert_int_eq(srsv_quota_create(fx->ctx, 1, 1 * MIB, &q), 0);
	ck_assert_int_eq(srsv_quota_reserve(q, SRSV_QUOTA_META_PERTRANS,
					    1 * MIB - 64 * KIB, 0), 0);
	expect_nowait_eagain(fx, q, 64 * KIB);
	ck_assert_uint_eq(AO_load(&fx->quota_calls), 0);
	/* The same call blocking-mode would flush and succeed. */
	{
		struct srsv_delalloc_resv r;

		ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, q, 64 * KIB,
					SRSV_DELALLOC_NORMAL, &r), 0);
		ck_assert_uint_eq(AO_load(&fx->quota_calls), 1);
		ck_assert_int_eq(srsv_delalloc_release(&r), 0);
	}
	fx_free(fx);
}
END_TEST

START_TEST(test_nowait_tickets_queued)
{
	struct fx *fx = fx_new(8 * MIB, 8 * MIB);
	struct srsv_ticket t;
	struct srsv_delalloc_resv r;
	struct srsv_quota *q;

	ck_assert_int_eq(srsv_quota_create(fx->ctx, 1, 32 * MIB, &q), 0);
	/* Half the data pool used; a ticket for more than the rest waits. */
	ck_assert_int_eq(srsv_space_reserve(fx->data, 4 * MIB, SRSV_NO_FLUSH,
					    0), 0);
	ck_assert_int_eq(srsv_ticket_reserve(fx->data, &t, 6 * MIB,
					     SRSV_FLUSH_DATA, 0),
			 -EINPROGRESS);
	ck_assert_uint_eq(nr_tickets(fx->data), 1);
	/* 64 KiB would fit, but NOWAIT does not pass the queue. */
	expect_nowait_eagain(fx, q, 64 * KIB);
	/* NOFLUSH does not pass it either, and says -ENOSPC. */
	ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, q, 64 * KIB,
					       SRSV_DELALLOC_NOFLUSH, &r),
			 -ENOSPC);
	ck_assert_int_eq(srsv_ticket_cancel(&t), 0);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -ECANCELED);

	/* The same with a metadata ticket. */
	ck_assert_int_eq(srsv_space_reserve(fx->meta, 4 * MIB, SRSV_NO_FLUSH,
					    0), 0);
	ck_assert_int_eq(srsv_ticket_reserve(fx->meta, &t, 6 * MIB,
					     SRSV_FLUSH_ALL, 0),
			 -EINPROGRESS);
	expect_nowait_eagain(fx, q, 64 * KIB);
	ck_assert_int_eq(srsv_ticket_cancel(&t), 0);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -ECANCELED);

	/* Queue empty again: NOWAIT goes through. */
	ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, q, 64 * KIB,
					       SRSV_DELALLOC_NOWAIT, &r), 0);
	ck_assert_int_eq(srsv_delalloc_release(&r), 0);
	fx_free(fx);
}
END_TEST

/*
 * A threaded ctx whose engine is slow: a blocking writer's ticket is
 * queued and the async data worker sits in a flush callback that sleeps
 * (10 ms naps until the test lets it free its data).  NOWAIT writers
 * meanwhile get -EAGAIN at once, never sleeping; once the engine frees its
 * data the blocking writer gets in.
 */
START_TEST(test_nowait_while_flush_sleeps)
{
	struct srsv_config cfg;
	struct srsv_delalloc_resv r;
	struct bg_reserve b;
	struct srsv_quota *q;
	struct fx *fx;
	pthread_t th;
	uint64_t deadline;
	unsigned i, inside_seen = 0, tickets_seen = 0;
	int ret;

	cfg_init(&cfg, 8 * MIB, 64 * MIB);
	cfg.flags = SRSV_CTX_NO_PREEMPT;	/* threaded */
	fx = fx_new_cfg(&cfg);
	ck_assert_int_eq(srsv_quota_create(fx->ctx, 1, 64 * MIB, &q), 0);
	AO_store(&fx->flush_sleep_us, 10000);
	AO_store(&fx->flush_hold, 1);
	ck_assert_int_eq(srsv_space_reserve(fx->data, 6 * MIB, SRSV_NO_FLUSH,
					    0), 0);
	AO_store(&fx->data_held, 6 * MIB);

	memset(&b, 0, sizeof(b));
	b.fx = fx;
	b.q = q;
	b.bytes = 4 * MIB;
	b.mode = SRSV_DELALLOC_NORMAL;
	ck_assert_int_eq(pthread_create(&th, NULL, bg_reserve_fn, &b), 0);
	/* Wait (bounded) for the worker to be in the sleeping callback. */
	deadline = now_ns() + WAIT_NS;
	while (!AO_load_acquire(&fx->flush_inside) && now_ns() < deadline)
		sleep_us(100);
	ck_assert_uint_ge(AO_load(&fx->space_calls), 1);

	for (i = 0; i < 200; i++) {
		inside_seen += AO_load_acquire(&fx->flush_inside) != 0;
		tickets_seen += nr_tickets(fx->data) != 0;
		stats_reset();
		ret = srsv_delalloc_reserve(fx->ctx, q, 64 * KIB,
					    SRSV_DELALLOC_NOWAIT, &r);
		assert_never_blocked();
		ck_assert_int_eq(ret, -EAGAIN);
		sleep_us(100);
	}
	/* We did overlap the sleeping callback and the queued ticket. */
	ck_assert_uint_gt(inside_seen, 0);
	ck_assert_uint_gt(tickets_seen, 0);

	/* The engine frees its data: the blocking writer gets in. */
	AO_store_release(&fx->flush_hold, 0);
	pthread_join(th, NULL);
	ck_assert_int_eq(b.ret, 0);
	ck_assert_int_eq(srsv_delalloc_release(&b.r), 0);
	fx_free(fx);
}
END_TEST

/* Another thread holds the quota lock: -EAGAIN, no sleep. */
START_TEST(test_nowait_quota_lock_held)
{
	struct fx *fx = fx_new(64 * MIB, 64 * MIB);
	struct holder h = { .kind = HOLD_LIBLOCK };
	struct srsv_delalloc_resv r;
	struct srsv_quota *q;
	struct state before;
	int ret1, ret2;

	ck_assert_int_eq(srsv_quota_create(fx->ctx, 1, 32 * MIB, &q), 0);
	before = state_of(fx, q);
	h.liblock = srsv__quota_lock_ptr(q);
	hold_start(&h);
	stats_reset();
	ret1 = srsv_delalloc_reserve(fx->ctx, q, 64 * KIB,
				     SRSV_DELALLOC_NOWAIT, &r);
	ret2 = srsv_quota_reserve(q, SRSV_QUOTA_DATA, 4 * KIB,
				  SRSV_RESERVE_NOWAIT);
	assert_never_blocked();
	hold_stop(&h);
	ck_assert_int_eq(ret1, -EAGAIN);
	ck_assert_int_eq(ret2, -EAGAIN);
	/* Nothing was taken from the pools either (quota goes first). */
	assert_unchanged(&before, fx, q);
	fx_free(fx);
}
END_TEST

/*
 * Another thread holds the data pool's lock.  With room and no ticket the
 * reservation is lock-free and may succeed; when the answer needs the lock
 * (the pool is short, so the locked re-check would be next) it is -EAGAIN.
 * Either way the caller never sleeps.
 */
START_TEST(test_nowait_pool_lock_held)
{
	struct fx *fx = fx_new(8 * MIB, 64 * MIB);
	struct holder h = { .kind = HOLD_LIBLOCK };
	struct srsv_delalloc_resv r;
	struct srsv_quota *q;
	struct state before;
	int ret;

	ck_assert_int_eq(srsv_quota_create(fx->ctx, 1, 32 * MIB, &q), 0);
	h.liblock = &fx->data->lock;

	/* Room: lock-free success or -EAGAIN, never a sleep. */
	before = state_of(fx, q);
	hold_start(&h);
	stats_reset();
	ret = srsv_delalloc_reserve(fx->ctx, q, 64 * KIB,
				    SRSV_DELALLOC_NOWAIT, &r);
	assert_never_blocked();
	hold_stop(&h);
	ck_assert(ret == 0 || ret == -EAGAIN);
	if (ret == 0)
		ck_assert_int_eq(srsv_delalloc_release(&r), 0);
	assert_unchanged(&before, fx, q);

	/* Short of room: -EAGAIN. */
	ck_assert_int_eq(srsv_space_reserve(fx->data, 8 * MIB - 32 * KIB,
					    SRSV_NO_FLUSH, 0), 0);
	before = state_of(fx, q);
	hold_start(&h);
	stats_reset();
	ret = srsv_delalloc_reserve(fx->ctx, q, 64 * KIB,
				    SRSV_DELALLOC_NOWAIT, &r);
	assert_never_blocked();
	hold_stop(&h);
	ck_assert_int_eq(ret, -EAGAIN);
	assert_unchanged(&before, fx, q);
	fx_free(fx);
}
END_TEST

/* Another thread holds the metadata pool lock while tickets are queued. */
START_TEST(test_nowait_meta_lock_held_tickets)
{
	struct fx *fx = fx_new(64 * MIB, 8 * MIB);
	struct holder h = { .kind = HOLD_LIBLOCK };
	struct srsv_delalloc_resv r;
	struct srsv_ticket t;
	struct srsv_quota *q;
	struct state before;
	int ret;

	ck_assert_int_eq(srsv_quota_create(fx->ctx, 1, 32 * MIB, &q), 0);
	ck_assert_int_eq(srsv_space_reserve(fx->meta, 4 * MIB, SRSV_NO_FLUSH,
					    0), 0);
	ck_assert_int_eq(srsv_ticket_reserve(fx->meta, &t, 6 * MIB,
					     SRSV_FLUSH_ALL, 0),
			 -EINPROGRESS);
	before = state_of(fx, q);
	h.liblock = &fx->meta->lock;
	hold_start(&h);
	stats_reset();
	ret = srsv_delalloc_reserve(fx->ctx, q, 64 * KIB,
				    SRSV_DELALLOC_NOWAIT, &r);
	assert_never_blocked();
	hold_stop(&h);
	ck_assert_int_eq(ret, -EAGAIN);
	/* Data and quota were taken and given back without blocking. */
	assert_unchanged(&before, fx, q);
	ck_assert_int_eq(srsv_ticket_cancel(&t), 0);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -ECANCELED);
	fx_free(fx);
}
END_TEST

/* Another thread holds the DELALLOC rsv's lock. */
START_TEST(test_nowait_rsv_lock_held)
{
	struct fx *fx = fx_new(64 * MIB, 64 * MIB);
	struct holder h = { .kind = HOLD_MUTEX };
	struct srsv_delalloc_resv r;
	struct srsv_quota *q;
	struct state before;
	int ret;

	ck_assert_int_eq(srsv_quota_create(fx->ctx, 1, 32 * MIB, &q), 0);
	before = state_of(fx, q);
	h.mutex = &srsv__rsv_of(fx->rsv)->lock;
	hold_start(&h);
	stats_reset();
	ret = srsv_delalloc_reserve(fx->ctx, q, 64 * KIB,
				    SRSV_DELALLOC_NOWAIT, &r);
	assert_never_blocked();
	hold_stop(&h);
	ck_assert_int_eq(ret, -EAGAIN);
	assert_unchanged(&before, fx, q);
	fx_free(fx);
}
END_TEST

/*
 * Two NOWAIT writers of one tenant, with room everywhere: their delalloc
 * calls share the tenant's quota lock and the DELALLOC rsv's lock, so a
 * plain try-lock made about half of them fail on each other (measured on
 * 2 vCPUs: 43-76%).  The bounded spin of srsv__trylock() waits out a
 * holder running on the other CPU: 0.2-4% with it (gcc), 6-12% under TSan.
 * A holder preempted inside its critical section still makes the other
 * give up, most of all when both threads share one CPU (27% under TSan
 * with both pinned to one CPU, where the critical sections are long), so
 * the threshold is half: what a plain try-lock exceeds everywhere.
 * Bounded in time (300 ms).
 */
struct twin_arg {
	struct fx *fx;
	struct srsv_quota *q;
	volatile int *stop;
	uint64_t calls, eagain, bad;
};

static void *twin_writer(void *p)
{
	struct twin_arg *a = p;

	while (!__atomic_load_n(a->stop, __ATOMIC_ACQUIRE)) {
		struct srsv_delalloc_resv r;
		int ret = srsv_delalloc_reserve(a->fx->ctx, a->q, 4 * KIB,
						SRSV_DELALLOC_NOWAIT, &r);

		a->calls++;
		if (ret == -EAGAIN)
			a->eagain++;
		else if (ret || srsv_delalloc_release(&r))
			a->bad++;
	}
	return NULL;
}

START_TEST(test_nowait_twins_rarely_fail_each_other)
{
	struct fx *fx = fx_new(1024 * MIB, 1024 * MIB);
	struct twin_arg a[2];
	pthread_t th[2];
	volatile int stop = 0;
	struct srsv_quota *q;
	uint64_t calls = 0, eagain = 0;

	ck_assert_int_eq(srsv_quota_create(fx->ctx, 1, SRSV_QUOTA_NO_LIMIT, &q),
			 0);
	for (int i = 0; i < 2; i++) {
		a[i] = (struct twin_arg){ .fx = fx, .q = q, .stop = &stop };
		ck_assert_int_eq(pthread_create(&th[i], NULL, twin_writer,
						&a[i]), 0);
	}
	sleep_us(300 * 1000);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
		ck_assert_uint_eq(a[i].bad, 0);
		calls += a[i].calls;
		eagain += a[i].eagain;
	}
	ck_assert_uint_gt(calls, 0);
	ck_assert_msg(eagain * 2 < calls, "%" PRIu64 " of %" PRIu64
		      " NOWAIT calls failed on each other's locks", eagain,
		      calls);
	fx_free(fx);
}
END_TEST

/* ---- failure injected at each step ---- */

static int fault_step = -1;
static int fault_error;
static unsigned fault_seen[NR_STEPS];

/* The hook is a word read with AO_load(); set it while no call runs. */
static void set_fault(srsv__delalloc_fault_fn fn)
{
	AO_store(&srsv__delalloc_fault, (AO_t)(uintptr_t)fn);
}

static int fault_fn(int step)
{
	ck_assert(step >= 0 && step < NR_STEPS);
	fault_seen[step]++;
	return step == fault_step ? fault_error : 0;
}

/*
 * NOWAIT with tickets queued fails before its first step: no quota, data
 * or metadata charge is made (and undone).  The step hook counts.
 */
START_TEST(test_nowait_queued_fails_before_any_step)
{
	struct fx *fx = fx_new(8 * MIB, 8 * MIB);
	struct srsv_space *pools[2] = { fx->data, fx->meta };
	const enum srsv_flush modes[2] = { SRSV_FLUSH_DATA, SRSV_FLUSH_ALL };
	struct srsv_delalloc_resv r;
	struct srsv_ticket t;
	struct srsv_quota *q;

	ck_assert_int_eq(srsv_quota_create(fx->ctx, 1, 32 * MIB, &q), 0);
	fault_step = -1;
	set_fault(fault_fn);
	for (int p = 0; p < 2; p++) {
		memset(fault_seen, 0, sizeof(fault_seen));
		ck_assert_int_eq(srsv_space_reserve(pools[p], 4 * MIB,
						    SRSV_NO_FLUSH, 0), 0);
		ck_assert_int_eq(srsv_ticket_reserve(pools[p], &t, 6 * MIB,
						     modes[p], 0),
				 -EINPROGRESS);
		expect_nowait_eagain(fx, q, 64 * KIB);
		for (int k = 0; k < NR_STEPS; k++)
			ck_assert_uint_eq(fault_seen[k], 0);
		ck_assert_int_eq(srsv_ticket_cancel(&t), 0);
		ck_assert_int_eq(srsv_ticket_wait(&t, 0), -ECANCELED);
		ck_assert_int_eq(srsv_space_release(pools[p], 4 * MIB), 0);
	}
	/* Nothing queued: the three steps run. */
	memset(fault_seen, 0, sizeof(fault_seen));
	ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, q, 64 * KIB,
					       SRSV_DELALLOC_NOWAIT, &r), 0);
	ck_assert_uint_eq(fault_seen[STEP_QUOTA], 1);
	ck_assert_uint_eq(fault_seen[STEP_DATA], 1);
	ck_assert_uint_eq(fault_seen[STEP_META], 1);
	set_fault(NULL);
	ck_assert_int_eq(srsv_delalloc_release(&r), 0);
	fx_free(fx);
}
END_TEST

START_TEST(test_fault_each_step)
{
	static const int errors[] = { -ENOSPC, -EDQUOT, -EIO };
	struct fx *fx = fx_new(64 * MIB, 64 * MIB);
	struct srsv_delalloc_resv r;
	struct srsv_quota *q;
	struct state before;
	unsigned e;
	int mode, step, with_quota, s, ret, want;

	ck_assert_int_eq(srsv_quota_create(fx->ctx, 1, 32 * MIB, &q), 0);
	/* Prior state that must come through untouched. */
	ck_assert_int_eq(srsv_quota_reserve(q, SRSV_QUOTA_META_PERTRANS,
					    128 * KIB, 0), 0);
	ck_assert_int_eq(srsv_quota_reserve(q, SRSV_QUOTA_DATA, 1 * MIB, 0),
			 0);
	ck_assert_int_eq(srsv_space_reserve(fx->data, 3 * MIB, SRSV_NO_FLUSH,
					    0), 0);
	ck_assert_int_eq(srsv_rsv_add(fx->rsv, 512 * KIB, SRSV_NO_FLUSH, 0),
			 0);
	set_fault(fault_fn);

	for (with_quota = 0; with_quota < 2; with_quota++)
	for (mode = 0; mode < SRSV_DELALLOC_MODE_COUNT; mode++)
	for (step = STEP_DATA; step < NR_RESERVE_STEPS; step++)
	for (e = 0; e < sizeof(errors) / sizeof(errors[0]); e++) {
		struct srsv_quota *qq = with_quota ? q : NULL;

		if (step == STEP_QUOTA && !qq)
			continue;

		before = state_of(fx, q);
		fault_step = step;
		fault_error = errors[e];
		memset(fault_seen, 0, sizeof(fault_seen));
		stats_reset();
		ret = srsv_delalloc_reserve(fx->ctx, qq, 1 * MIB,
					    (enum srsv_delalloc_mode)mode, &r);
		if (mode == SRSV_DELALLOC_NOWAIT)
			assert_never_blocked();
		want = fault_error;
		if (mode == SRSV_DELALLOC_NOWAIT &&
		    (want == -ENOSPC || want == -EDQUOT))
			want = -EAGAIN;
		ck_assert_int_eq(ret, want);
		/* Every step up to the failing one ran, none after it. */
		for (s = 0; s < NR_STEPS; s++) {
			unsigned expect = s <= step &&
					  (s != STEP_QUOTA || qq);

			ck_assert_uint_eq(fault_seen[s], expect);
		}
		assert_unchanged(&before, fx, q);
		/* A failed reservation holds nothing. */
		ck_assert_int_eq(srsv_delalloc_release(&r), -EINVAL);
	}
	set_fault(NULL);
	fx_free(fx);
}
END_TEST

/* ---- ending a reservation: all or nothing, nothing stranded ---- */

/* What finish must have done, against the state before the reserve. */
static void assert_finished(const struct state *before, struct fx *fx,
			    struct srsv_quota *q, uint64_t data,
			    uint64_t meta_used)
{
	struct state now = state_of(fx, q);

	ck_assert_uint_eq(now.data.may_use, before->data.may_use);
	ck_assert_uint_eq(now.data.reserved, before->data.reserved);
	ck_assert_uint_eq(now.data.used, before->data.used + data);
	ck_assert_uint_eq(now.meta.may_use, before->meta.may_use);
	ck_assert_uint_eq(now.meta.reserved, before->meta.reserved);
	ck_assert_uint_eq(now.meta.used, before->meta.used + meta_used);
	ck_assert_uint_eq(now.delalloc.size, before->delalloc.size);
	ck_assert_uint_eq(now.delalloc.reserved, before->delalloc.reserved);
	if (!q)
		return;
	ck_assert_uint_eq(now.quota.reserved[SRSV_QUOTA_DATA],
			  before->quota.reserved[SRSV_QUOTA_DATA]);
	ck_assert_uint_eq(now.quota.reserved[SRSV_QUOTA_META_PREALLOC],
			  before->quota.reserved[SRSV_QUOTA_META_PREALLOC]);
	ck_assert_uint_eq(now.quota.reserved[SRSV_QUOTA_META_PERTRANS],
			  before->quota.reserved[SRSV_QUOTA_META_PERTRANS] +
			  meta_used);
	ck_assert_uint_eq(now.quota.used, before->quota.used + data);
	ck_assert_uint_eq(now.quota.charged,
			  before->quota.charged + data + meta_used);
}

/*
 * A failure injected at each fallible step of finish (the rsv, the quota)
 * changes nothing and leaves the reservation whole: the same finish then
 * succeeds and accounts exactly.
 */
START_TEST(test_finish_fault_each_step)
{
	static const int errors[] = { -ENOSPC, -EINVAL, -EIO };
	struct fx *fx = fx_new(64 * MIB, 64 * MIB);
	struct srsv_delalloc_resv r, copy;
	struct srsv_quota *q;
	struct state before, mid;
	int with_quota, step;
	unsigned e;

	ck_assert_int_eq(srsv_quota_create(fx->ctx, 1, 64 * MIB, &q), 0);
	/* Another user's share of the shared rsv, and prior quota. */
	ck_assert_int_eq(srsv_rsv_add(fx->rsv, 512 * KIB, SRSV_NO_FLUSH, 0),
			 0);
	ck_assert_int_eq(srsv_quota_reserve(q, SRSV_QUOTA_DATA, 1 * MIB, 0),
			 0);
	set_fault(fault_fn);
	for (with_quota = 0; with_quota < 2; with_quota++)
	for (step = STEP_FINISH_RSV;
	     step <= (with_quota ? STEP_FINISH_QUOTA : STEP_FINISH_RSV);
	     step++)
	for (e = 0; e < sizeof(errors) / sizeof(errors[0]); e++) {
		struct srsv_quota *qq = with_quota ? q : NULL;

		fault_step = -1;
		before = state_of(fx, q);
		ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, qq, 1 * MIB,
					SRSV_DELALLOC_NOFLUSH, &r), 0);
		mid = state_of(fx, q);
		copy = r;
		fault_step = step;
		fault_error = errors[e];
		memset(fault_seen, 0, sizeof(fault_seen));
		ck_assert_int_eq(srsv_delalloc_finish(&r,
					SRSV_DELALLOC_META_ALL), errors[e]);
		assert_unchanged(&mid, fx, q);
		ck_assert(memcmp(&r, &copy, sizeof(r)) == 0);
		ck_assert_uint_eq(fault_seen[STEP_FINISH_RSV], 1);
		ck_assert_uint_eq(fault_seen[STEP_FINISH_QUOTA],
				  step == STEP_FINISH_QUOTA);
		/* The reservation is intact: finish it for real. */
		fault_step = -1;
		ck_assert_int_eq(srsv_delalloc_finish(&r, 100 * KIB), 0);
		assert_finished(&before, fx, qq ? q : NULL, 1 * MIB,
				100 * KIB);
		ck_assert_int_eq(srsv_delalloc_release(&r), -EINVAL);
	}
	set_fault(NULL);
	fx_free(fx);
}
END_TEST

/*
 * Release cannot refuse: with its rsv step failing (as if another user had
 * drained or shrunk the shared rsv) it drops our part of the rsv's size
 * and the rsv returns the bytes: everything is as before the reserve.
 */
START_TEST(test_release_fault)
{
	static const int errors[] = { -ENOSPC, -EINVAL };
	struct fx *fx = fx_new(64 * MIB, 64 * MIB);
	struct srsv_delalloc_resv r;
	struct srsv_quota *q;
	struct state before;
	int with_quota;
	unsigned e;

	ck_assert_int_eq(srsv_quota_create(fx->ctx, 1, 64 * MIB, &q), 0);
	ck_assert_int_eq(srsv_rsv_add(fx->rsv, 512 * KIB, SRSV_NO_FLUSH, 0),
			 0);
	set_fault(fault_fn);
	for (with_quota = 0; with_quota < 2; with_quota++)
	for (e = 0; e < sizeof(errors) / sizeof(errors[0]); e++) {
		fault_step = -1;
		before = state_of(fx, q);
		ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx,
					with_quota ? q : NULL, 1 * MIB,
					SRSV_DELALLOC_NOFLUSH, &r), 0);
		fault_step = STEP_RELEASE_RSV;
		fault_error = errors[e];
		memset(fault_seen, 0, sizeof(fault_seen));
		ck_assert_int_eq(srsv_delalloc_release(&r), 0);
		ck_assert_uint_eq(fault_seen[STEP_RELEASE_RSV], 1);
		assert_unchanged(&before, fx, q);
	}
	set_fault(NULL);
	fx_free(fx);
}
END_TEST

/*
 * Another user of the shared DELALLOC rsv used our share of it: finish
 * says -ENOSPC and changes nothing; release drops our part of the size
 * and nothing is stranded: once the other user gives its bytes back, the
 * metadata may_use outside the rsv is as before.
 */
START_TEST(test_shared_rsv_drained)
{
	struct fx *fx = fx_new(64 * MIB, 64 * MIB);
	struct srsv_delalloc_resv r;
	struct srsv_quota *q;
	struct state before, mid, now;

	ck_assert_int_eq(srsv_quota_create(fx->ctx, 1, 64 * MIB, &q), 0);
	ck_assert_int_eq(srsv_rsv_add(fx->rsv, 128 * KIB, SRSV_NO_FLUSH, 0),
			 0);
	before = state_of(fx, q);
	ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, q, 1 * MIB,
					       SRSV_DELALLOC_NOFLUSH, &r), 0);
	ck_assert_uint_eq(r.meta_bytes, 256 * KIB);
	/* The other user draws 300 KiB: its 128 and 172 of ours. */
	ck_assert_int_eq(srsv_rsv_use(fx->rsv, 300 * KIB), 0);
	mid = state_of(fx, q);
	ck_assert_int_eq(srsv_delalloc_finish(&r, SRSV_DELALLOC_META_ALL),
			 -ENOSPC);
	assert_unchanged(&mid, fx, q);
	ck_assert_int_eq(srsv_delalloc_release(&r), 0);
	/* The other user did not need them after all. */
	ck_assert_int_eq(srsv_space_release(fx->meta, 300 * KIB), 0);
	now = state_of(fx, q);
	assert_same_space(&before.data, &now.data);
	ck_assert_uint_eq(now.delalloc.size, before.delalloc.size);
	/* What left the rsv left may_use with it: nothing stranded. */
	ck_assert_uint_eq(now.meta.may_use - now.delalloc.reserved,
			  before.meta.may_use - before.delalloc.reserved);
	ck_assert_uint_eq(now.quota.charged, before.quota.charged);
	fx_free(fx);
}
END_TEST

/*
 * Another user shrank the shared rsv's size below our share (and refilled
 * what it holds, so the bytes are all there): the old two-call take used
 * the bytes and then failed to shrink the size, changing the rsv and
 * stranding may_use.  Now finish says -EINVAL and changes nothing, and
 * release gives everything back.
 */
START_TEST(test_shared_rsv_shrunk)
{
	struct fx *fx = fx_new(64 * MIB, 64 * MIB);
	struct srsv_delalloc_resv r;
	struct srsv_quota *q;
	struct state before, mid;

	ck_assert_int_eq(srsv_quota_create(fx->ctx, 1, 64 * MIB, &q), 0);
	before = state_of(fx, q);
	ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, q, 1 * MIB,
					       SRSV_DELALLOC_NOFLUSH, &r), 0);
	ck_assert_int_eq(srsv_rsv_release(fx->rsv, 200 * KIB, NULL), 0);
	ck_assert_int_eq(srsv_rsv_refill(fx->rsv, 256 * KIB, SRSV_NO_FLUSH,
					 0), 0);
	mid = state_of(fx, q);
	ck_assert_uint_eq(mid.delalloc.size, 56 * KIB);
	ck_assert_uint_eq(mid.delalloc.reserved, 256 * KIB);
	ck_assert_int_eq(srsv_delalloc_finish(&r, SRSV_DELALLOC_META_ALL),
			 -EINVAL);
	assert_unchanged(&mid, fx, q);
	ck_assert_int_eq(srsv_delalloc_release(&r), 0);
	assert_unchanged(&before, fx, q);

	/* The plain shrink, without the refill: release still returns all. */
	ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, q, 1 * MIB,
					       SRSV_DELALLOC_NOFLUSH, &r), 0);
	ck_assert_int_eq(srsv_rsv_release(fx->rsv, 200 * KIB, NULL), 0);
	ck_assert_int_eq(srsv_delalloc_release(&r), 0);
	assert_unchanged(&before, fx, q);
	fx_free(fx);
}
END_TEST

/*
 * The tenant holds less quota than the reservation says (someone released
 * its DATA): finish fails before any pool transition, the rsv step is put
 * back, nothing changed; once the quota is there again finish completes.
 */
START_TEST(test_finish_quota_taken)
{
	struct fx *fx = fx_new(64 * MIB, 64 * MIB);
	struct srsv_delalloc_resv r;
	struct srsv_quota *q;
	struct state before, mid;

	ck_assert_int_eq(srsv_quota_create(fx->ctx, 1, 64 * MIB, &q), 0);
	before = state_of(fx, q);
	ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, q, 1 * MIB,
					       SRSV_DELALLOC_NOFLUSH, &r), 0);
	ck_assert_int_eq(srsv_quota_release(q, SRSV_QUOTA_DATA, 1 * MIB), 0);
	mid = state_of(fx, q);
	ck_assert_int_eq(srsv_delalloc_finish(&r, SRSV_DELALLOC_META_ALL),
			 -EINVAL);
	assert_unchanged(&mid, fx, q);
	/* The same with META_PREALLOC short. */
	ck_assert_int_eq(srsv_quota_reserve(q, SRSV_QUOTA_DATA, 1 * MIB, 0),
			 0);
	ck_assert_int_eq(srsv_quota_release(q, SRSV_QUOTA_META_PREALLOC, 1),
			 0);
	mid = state_of(fx, q);
	ck_assert_int_eq(srsv_delalloc_finish(&r, SRSV_DELALLOC_META_ALL),
			 -EINVAL);
	assert_unchanged(&mid, fx, q);
	ck_assert_int_eq(srsv_quota_reserve(q, SRSV_QUOTA_META_PREALLOC, 1,
					    0), 0);
	ck_assert_int_eq(srsv_delalloc_finish(&r, SRSV_DELALLOC_META_ALL), 0);
	assert_finished(&before, fx, q, 1 * MIB, 256 * KIB);
	fx_free(fx);
}
END_TEST

/* ---- -EDEADLK: only when a step would flush or wait ---- */

/*
 * Run from inside the quota flush callback: what fits at once succeeds;
 * NORMAL gets -EDEADLK when the quota or a pool would have to flush,
 * LIMIT when the metadata would; NOFLUSH keeps its -ENOSPC.
 */
static void reenter_checks(struct fx *fx)
{
	struct srsv_delalloc_resv r;
	struct srsv_space_info info;
	uint64_t rest;

	fx->reenter_ret[0] = srsv_delalloc_reserve(fx->ctx, NULL, 64 * KIB,
						   SRSV_DELALLOC_NORMAL, &r);
	if (!fx->reenter_ret[0])
		ck_assert_int_eq(srsv_delalloc_release(&r), 0);
	fx->reenter_ret[1] = srsv_delalloc_reserve(fx->ctx, fx->reenter_full,
						   64 * KIB,
						   SRSV_DELALLOC_NORMAL, &r);
	/* Leave less metadata than one extent's worth. */
	ck_assert_int_eq(srsv_space_snapshot(fx->meta, &info, NULL, 0, NULL), 0);
	rest = info.total - info.used - info.reserved - info.pinned -
	       info.may_use - 64 * KIB;
	ck_assert_int_eq(srsv_space_reserve(fx->meta, rest, SRSV_NO_FLUSH, 0), 0);
	fx->reenter_ret[2] = srsv_delalloc_reserve(fx->ctx, NULL, 64 * KIB,
						   SRSV_DELALLOC_LIMIT, &r);
	fx->reenter_ret[3] = srsv_delalloc_reserve(fx->ctx, NULL, 64 * KIB,
						   SRSV_DELALLOC_NORMAL, &r);
	fx->reenter_ret[4] = srsv_delalloc_reserve(fx->ctx, NULL, 64 * KIB,
						   SRSV_DELALLOC_NOFLUSH, &r);
	ck_assert_int_eq(srsv_space_release(fx->meta, rest), 0);
}

START_TEST(test_deadlk_only_when_waiting)
{
	struct fx *fx = fx_new(64 * MIB, 64 * MIB);
	struct srsv_quota *q, *full;
	struct state before;

	ck_assert_int_eq(srsv_quota_create(fx->ctx, 1, 1 * MIB, &q), 0);
	ck_assert_int_eq(srsv_quota_create(fx->ctx, 2, 1 * MIB, &full), 0);
	ck_assert_int_eq(srsv_quota_reserve(q, SRSV_QUOTA_META_PERTRANS,
					    1 * MIB, 0), 0);
	ck_assert_int_eq(srsv_quota_reserve(full, SRSV_QUOTA_DATA, 1 * MIB,
					    0), 0);
	before = state_of(fx, full);
	fx->reenter_full = full;
	/* Over the limit: the quota flush callback runs the checks. */
	ck_assert_int_eq(srsv_quota_reserve(q, SRSV_QUOTA_DATA, 4 * KIB, 0),
			 0);
	fx->reenter_full = NULL;
	ck_assert_uint_eq(AO_load(&fx->quota_calls), 1);
	ck_assert_int_eq(fx->reenter_ret[0], 0);
	ck_assert_int_eq(fx->reenter_ret[1], -EDEADLK);
	ck_assert_int_eq(fx->reenter_ret[2], -EDEADLK);
	ck_assert_int_eq(fx->reenter_ret[3], -EDEADLK);
	ck_assert_int_eq(fx->reenter_ret[4], -ENOSPC);
	/* None of them left anything behind. */
	assert_unchanged(&before, fx, full);
	ck_assert_uint_eq(AO_load(&fx->space_calls), 0);
	fx_free(fx);
}
END_TEST

/* ---- LIMIT: the caller holds a transaction ---- */

/* The states a FLUSH_LIMIT ticket may ask for (ctx.h's default). */
static const AO_t priority_mask =
	(AO_t)1 << SRSV_STATE_DELAYED_ITEMS_NR |
	(AO_t)1 << SRSV_STATE_DELAYED_ITEMS |
	(AO_t)1 << SRSV_STATE_RESET_ZONES |
	(AO_t)1 << SRSV_STATE_ALLOC_CHUNK;

START_TEST(test_limit_mode)
{
	struct fx *fx = fx_new(8 * MIB, 8 * MIB);
	struct srsv_delalloc_resv r;
	struct srsv_quota *q;
	struct state before;
	AO_t seen;

	ck_assert_int_eq(srsv_quota_create(fx->ctx, 1, 2 * MIB, &q), 0);

	/* Over quota: -EDQUOT at once, the quota flush is never called. */
	ck_assert_int_eq(srsv_quota_reserve(q, SRSV_QUOTA_META_PERTRANS,
					    2 * MIB - 64 * KIB, 0), 0);
	before = state_of(fx, q);
	ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, q, 64 * KIB,
					       SRSV_DELALLOC_LIMIT, &r),
			 -EDQUOT);
	ck_assert_uint_eq(AO_load(&fx->quota_calls), 0);
	ck_assert_uint_eq(AO_load(&fx->space_calls), 0);
	assert_unchanged(&before, fx, q);
	ck_assert_int_eq(srsv_quota_commit(fx->ctx, NULL), 0);

	/* Data short, though the engine could write back: NO_FLUSH. */
	ck_assert_int_eq(srsv_space_reserve(fx->data, 8 * MIB - 32 * KIB,
					    SRSV_NO_FLUSH, 0), 0);
	AO_store(&fx->data_held, 8 * MIB - 32 * KIB);
	before = state_of(fx, q);
	ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, q, 64 * KIB,
					       SRSV_DELALLOC_LIMIT, &r),
			 -ENOSPC);
	ck_assert_uint_eq(AO_load(&fx->space_calls), 0);
	assert_unchanged(&before, fx, q);
	AO_store(&fx->data_held, 0);
	ck_assert_int_eq(srsv_space_release(fx->data, 8 * MIB - 32 * KIB), 0);

	/* Metadata short, and the engine can free some with a cheap state:
	 * NOFLUSH fails, LIMIT flushes in this thread and gets it. */
	ck_assert_int_eq(srsv_space_reserve(fx->meta, 8 * MIB - 64 * KIB,
					    SRSV_NO_FLUSH, 0), 0);
	AO_store(&fx->meta_held, 8 * MIB - 64 * KIB);
	ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, q, 64 * KIB,
					       SRSV_DELALLOC_NOFLUSH, &r),
			 -ENOSPC);
	ck_assert_uint_eq(AO_load(&fx->space_calls), 0);
	ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, q, 64 * KIB,
					       SRSV_DELALLOC_LIMIT, &r), 0);
	ck_assert_uint_ge(AO_load(&fx->space_calls), 1);
	ck_assert_uint_eq(AO_load(&fx->meta_held), 0);
	seen = AO_load(&fx->meta_states);
	ck_assert_uint_ne(seen, 0);
	/* Only the cheap states: never a commit, never delalloc. */
	ck_assert_uint_eq(seen & ~priority_mask, 0);
	ck_assert_uint_eq(AO_load(&fx->data_states), 0);
	ck_assert_uint_eq(AO_load(&fx->quota_calls), 0);
	ck_assert_int_eq(srsv_delalloc_release(&r), 0);

	/* Metadata short and nothing to free: -ENOSPC after the cheap
	 * states, everything given back. */
	AO_store(&fx->meta_states, 0);
	ck_assert_int_eq(srsv_space_reserve(fx->meta, 8 * MIB - 64 * KIB,
					    SRSV_NO_FLUSH, 0), 0);
	before = state_of(fx, q);
	ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, q, 64 * KIB,
					       SRSV_DELALLOC_LIMIT, &r),
			 -ENOSPC);
	ck_assert_uint_eq(AO_load(&fx->meta_states) & ~priority_mask, 0);
	assert_unchanged(&before, fx, q);
	ck_assert_uint_eq(AO_load(&fx->quota_calls), 0);
	fx_free(fx);
}
END_TEST

/* ---- bad input ---- */

START_TEST(test_bad_input)
{
	struct fx *fx = fx_new(64 * MIB, 64 * MIB);
	struct fx *other = fx_new(64 * MIB, 64 * MIB);
	struct srsv_delalloc_resv r, zero;
	struct srsv_quota *q, *foreign;
	struct state before;
	uint64_t cost;

	ck_assert_int_eq(srsv_quota_create(fx->ctx, 1, 32 * MIB, &q), 0);
	ck_assert_int_eq(srsv_quota_create(other->ctx, 1, 32 * MIB, &foreign),
			 0);
	before = state_of(fx, q);
	ck_assert_int_eq(srsv_delalloc_reserve(NULL, q, 1, 0, &r), -EINVAL);
	ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, q, 1, 0, NULL),
			 -EINVAL);
	ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, q, 1,
				SRSV_DELALLOC_MODE_COUNT, &r), -EINVAL);
	ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, q, 1,
				(enum srsv_delalloc_mode)-1, &r), -EINVAL);
	ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, foreign, 1,
				SRSV_DELALLOC_NORMAL, &r), -EINVAL);
	ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, q, (uint64_t)-4096,
				SRSV_DELALLOC_NORMAL, &r), -EINVAL);
	ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, q,
				SRSV_MAX_BYTES + 1, SRSV_DELALLOC_NOWAIT, &r),
			 -EINVAL);
	ck_assert_int_eq(srsv_delalloc_meta_cost(NULL, 1, NULL, &cost),
			 -EINVAL);
	ck_assert_int_eq(srsv_delalloc_meta_cost(fx->ctx, 1, NULL, NULL),
			 -EINVAL);
	assert_unchanged(&before, fx, q);

	/* Ending something never reserved. */
	memset(&zero, 0, sizeof(zero));
	ck_assert_int_eq(srsv_delalloc_release(NULL), -EINVAL);
	ck_assert_int_eq(srsv_delalloc_finish(NULL, 0), -EINVAL);
	ck_assert_int_eq(srsv_delalloc_release(&zero), -EINVAL);
	ck_assert_int_eq(srsv_delalloc_finish(&zero, 0), -EINVAL);

	/* Zero bytes: an empty reservation that ends cleanly. */
	ck_assert_int_eq(srsv_delalloc_reserve(fx->ctx, q, 0,
				SRSV_DELALLOC_NOWAIT, &r), 0);
	ck_assert_uint_eq(r.data_bytes + r.meta_bytes + r.quota_data_bytes +
			  r.quota_meta_bytes, 0);
	ck_assert_int_eq(srsv_delalloc_finish(&r, SRSV_DELALLOC_META_ALL), 0);
	assert_unchanged(&before, fx, q);
	fx_free(other);
	fx_free(fx);
}
END_TEST

/* ---- concurrent writers: nothing is lost ---- */

#define NR_WRITERS 4
#define WRITER_ROUNDS 3000

struct writer {
	struct fx *fx;
	struct srsv_quota *q;
	unsigned idx;
	uint64_t finished_data, finished_meta;
	unsigned eagain, enospc, edquot;
	int bad_ret;
	pthread_barrier_t *barrier;
};

/*
 * The written data is deleted and the deletion committed, so the small
 * pools never fill up with used bytes: used -> pinned -> free, and the
 * tenant's used bytes go down.  The metadata the writes used stays in
 * the tenant's META_PERTRANS (no commit of the quota), which the test
 * checks at the end.
 */
static int delete_written(struct writer *w, uint64_t data, uint64_t meta)
{
	int ret;

	ret = srsv_space_pin(w->fx->data, data);
	if (!ret)
		ret = srsv_space_unpin(w->fx->data, data);
	if (!ret)
		ret = srsv_space_pin(w->fx->meta, meta);
	if (!ret)
		ret = srsv_space_unpin(w->fx->meta, meta);
	if (!ret)
		ret = srsv_quota_free_used(w->q, data);
	return ret;
}

static void *writer_fn(void *p)
{
	struct writer *w = p;
	uint64_t x = 0x2545f4914f6cdd1dull * (w->idx + 1);
	struct srsv_delalloc_resv r;
	enum srsv_delalloc_mode mode;
	unsigned i;
	int ret;

	pthread_barrier_wait(w->barrier);
	for (i = 0; i < WRITER_ROUNDS; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		/* NORMAL is left out: in a manual ctx it could wait for ever
		 * on a ticket nobody flushes. */
		mode = (x & 1) ? SRSV_DELALLOC_NOWAIT : SRSV_DELALLOC_NOFLUSH;
		ret = srsv_delalloc_reserve(w->fx->ctx, w->q,
					    4 * KIB * (1 + (x >> 8) % 16),
					    mode, &r);
		if (ret == -EAGAIN && mode == SRSV_DELALLOC_NOWAIT) {
			w->eagain++;
			continue;
		}
		if (ret == -ENOSPC && mode == SRSV_DELALLOC_NOFLUSH) {
			w->enospc++;
			continue;
		}
		if (ret == -EDQUOT && mode == SRSV_DELALLOC_NOFLUSH) {
			w->edquot++;
			continue;
		}
		if (ret) {
			w->bad_ret = ret;
			return NULL;
		}
		if ((x >> 16) % 2) {
			uint64_t d = r.data_bytes, m = r.meta_bytes;

			ret = srsv_delalloc_finish(&r, SRSV_DELALLOC_META_ALL);
			if (!ret)
				ret = delete_written(w, d, m);
			w->finished_data += d;
			w->finished_meta += m;
		} else {
			ret = srsv_delalloc_release(&r);
		}
		if (ret) {
			w->bad_ret = ret;
			return NULL;
		}
	}
	return NULL;
}

START_TEST(test_concurrent_writers)
{
	/* Small pools and quota so that every error path is taken too. */
	struct fx *fx = fx_new(4 * MIB, 2 * MIB);
	struct writer w[NR_WRITERS];
	pthread_t th[NR_WRITERS];
	pthread_barrier_t barrier;
	struct srsv_quota *q;
	struct state before, s;
	uint64_t data = 0, meta = 0;
	unsigned i;

	ck_assert_int_eq(srsv_quota_create(fx->ctx, 1, SRSV_QUOTA_NO_LIMIT,
					   &q), 0);
	before = state_of(fx, q);
	pthread_barrier_init(&barrier, NULL, NR_WRITERS);
	for (i = 0; i < NR_WRITERS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].fx = fx;
		w[i].q = q;
		w[i].idx = i;
		w[i].barrier = &barrier;
		ck_assert_int_eq(pthread_create(&th[i], NULL, writer_fn,
						&w[i]), 0);
	}
	for (i = 0; i < NR_WRITERS; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(w[i].bad_ret, 0);
		data += w[i].finished_data;
		meta += w[i].finished_meta;
	}
	s = state_of(fx, q);
	/* Every write was cancelled or written and deleted: the pools are
	 * back where they started, nothing leaked, nothing is held. */
	ck_assert_uint_gt(data, 0);
	assert_same_space(&before.data, &s.data);
	assert_same_space(&before.meta, &s.meta);
	ck_assert_uint_eq(s.delalloc.size, before.delalloc.size);
	ck_assert_uint_eq(s.delalloc.reserved, before.delalloc.reserved);
	ck_assert_uint_eq(s.quota.used, 0);
	ck_assert_uint_eq(s.quota.reserved[SRSV_QUOTA_META_PERTRANS], meta);
	ck_assert_uint_eq(s.quota.reserved[SRSV_QUOTA_DATA], 0);
	ck_assert_uint_eq(s.quota.reserved[SRSV_QUOTA_META_PREALLOC], 0);
	ck_assert_uint_eq(s.quota.charged, meta);
	pthread_barrier_destroy(&barrier);
	fx_free(fx);
}
END_TEST

/*
 * A call that waited inside a wrapper (srsv_rsv_add(), the delalloc and
 * quota calls) keeps its shutdown count until the wrapper ends, so that
 * srsv_ctx_destroy() cannot free what the wrapper still touches; a call
 * that did not wait costs no count.  White-box: the count is ctx->active.
 */
START_TEST(test_waited_call_counted_until_wrapper_ends)
{
	struct fx *fx = fx_new(4 * MIB, 4 * MIB);
	uint64_t big = 8 * MIB;

	/* Outside a wrapper: a slow path leaves its count at once. */
	ck_assert_int_eq(srsv_space_reserve(fx->data, big, SRSV_NO_FLUSH, 0),
			 -ENOSPC);
	ck_assert_uint_eq(AO_load(&fx->ctx->active), 0);
	/* Inside one: kept until the wrapper's end. */
	srsv__outer_begin(fx->ctx);
	ck_assert_int_eq(srsv_space_reserve(fx->data, big, SRSV_NO_FLUSH, 0),
			 -ENOSPC);
	ck_assert_int_eq(srsv_space_reserve(fx->data, big, SRSV_NO_FLUSH, 0),
			 -ENOSPC);
	ck_assert_uint_eq(AO_load(&fx->ctx->active), 2);
	/* The fast path counts nothing; nested wrappers end at the outer. */
	srsv__outer_begin(fx->ctx);
	ck_assert_int_eq(srsv_space_reserve(fx->data, 4 * KIB, SRSV_NO_FLUSH,
					    0), 0);
	srsv__outer_end();
	ck_assert_uint_eq(AO_load(&fx->ctx->active), 2);
	srsv__outer_end();
	ck_assert_uint_eq(AO_load(&fx->ctx->active), 0);
	ck_assert_int_eq(srsv_space_release(fx->data, 4 * KIB), 0);
	/*
	 * A wrapper of another ctx nested inside (a callback of this ctx
	 * reserving elsewhere): its waits leave at once, ours still wait
	 * for the outermost end.
	 */
	{
		struct fx *other = fx_new(4 * MIB, 4 * MIB);

		srsv__outer_begin(fx->ctx);
		srsv__outer_begin(other->ctx);
		ck_assert_int_eq(srsv_space_reserve(other->data, big,
						    SRSV_NO_FLUSH, 0), -ENOSPC);
		ck_assert_uint_eq(AO_load(&other->ctx->active), 0);
		ck_assert_int_eq(srsv_space_reserve(fx->data, big,
						    SRSV_NO_FLUSH, 0), -ENOSPC);
		srsv__outer_end();
		ck_assert_uint_eq(AO_load(&fx->ctx->active), 1);
		srsv__outer_end();
		ck_assert_uint_eq(AO_load(&fx->ctx->active), 0);
		fx_free(other);
	}
	/* Through the wrappers themselves: nothing left behind. */
	ck_assert_int_eq(srsv_rsv_add(fx->rsv, big, SRSV_NO_FLUSH, 0),
			 -ENOSPC);
	ck_assert_uint_eq(AO_load(&fx->ctx->active), 0);
	fx_free(fx);
}
END_TEST

static Suite *delalloc_suite(void)
{
	Suite *s = suite_create("delalloc");
	TCase *modes = tcase_create("modes");
	TCase *nowait = tcase_create("nowait");
	TCase *undo = tcase_create("undo");

	tcase_add_test(modes, test_reserve_finish);
	tcase_add_test(modes, test_finish_partial_meta);
	tcase_add_test(modes, test_meta_cost_config);
	tcase_add_test(modes, test_release_restores);
	tcase_add_test(modes, test_mixed);
	tcase_add_test(modes, test_normal_flushes_noflush_does_not);
	tcase_add_test(modes, test_normal_quota_flush);
	tcase_add_test(modes, test_limit_mode);
	tcase_add_test(modes, test_deadlk_only_when_waiting);
	tcase_add_test(modes, test_bad_input);
	tcase_add_test(modes, test_concurrent_writers);
	tcase_add_test(modes, test_waited_call_counted_until_wrapper_ends);
	suite_add_tcase(s, modes);

	tcase_add_test(nowait, test_nowait_success_never_blocks);
	tcase_add_test(nowait, test_nowait_pool_full);
	tcase_add_test(nowait, test_nowait_quota_exhausted);
	tcase_add_test(nowait, test_nowait_tickets_queued);
	tcase_add_test(nowait, test_nowait_queued_fails_before_any_step);
	tcase_add_test(nowait, test_nowait_twins_rarely_fail_each_other);
	tcase_add_test(nowait, test_nowait_quota_lock_held);
	tcase_add_test(nowait, test_nowait_pool_lock_held);
	tcase_add_test(nowait, test_nowait_meta_lock_held_tickets);
	tcase_add_test(nowait, test_nowait_rsv_lock_held);
	tcase_add_test(nowait, test_nowait_while_flush_sleeps);
	suite_add_tcase(s, nowait);

	tcase_add_test(undo, test_fault_each_step);
	tcase_add_test(undo, test_finish_fault_each_step);
	tcase_add_test(undo, test_release_fault);
	tcase_add_test(undo, test_shared_rsv_drained);
	tcase_add_test(undo, test_shared_rsv_shrunk);
	tcase_add_test(undo, test_finish_quota_taken);
	suite_add_tcase(s, undo);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(delalloc_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
