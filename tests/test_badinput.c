/* SPDX-License-Identifier: MIT */
/*
 * Bad input to every public function of ctx.h, space.h and rsv.h: each
 * call gets its documented errno (or NULL) and changes nothing.  "Nothing"
 * is checked by comparing a full picture of the ctx before and after: every
 * field of every pool's snapshot (counters, flags, statistics, ctx-wide
 * figures), every standard and test-owned block reservation, and the
 * engine's call count (a function that fails never calls the callback).
 *
 * docs/bad-input.md is the table of these cases; each row names its test.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libspacersv/spacersv.h>

#include "engine_sim.h"

#define KiB ESIM_KIB
#define MiB ESIM_MIB
#define MAXB SRSV_MAX_BYTES

#define MANUAL (SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT)

/* The fixture: a manual ctx whose pools hold something in every counter,
 * so that a wrongly applied change cannot hide behind a zero. */
static struct esim *sim;
static struct srsv_space *data, *md, *sys;
static struct srsv_rsv rsv_md, rsv_data;

static const enum srsv_rsv_type std_types[] = {
	SRSV_RSV_GLOBAL, SRSV_RSV_TRANS, SRSV_RSV_DELOPS, SRSV_RSV_DELREFS,
	SRSV_RSV_DELALLOC,
};
#define NR_STD (sizeof(std_types) / sizeof(std_types[0]))

struct world {
	struct srsv_space_info pool[3];
	struct srsv_rsv_info std[NR_STD];
	struct srsv_rsv_info mine[2];
	uint64_t unallocated;
	uint64_t calls;
};

static void get_rsv(struct srsv_rsv *rsv, struct srsv_rsv_info *info)
{
	memset(info, 0, sizeof(*info));
	if (rsv)
		ck_assert_int_eq(srsv_rsv_get_info(rsv, info), 0);
}

static void capture(struct world *w)
{
	struct srsv_space *pools[3] = { data, md, sys };

	memset(w, 0, sizeof(*w));
	for (int i = 0; i < 3; i++)
		w->pool[i] = esim_snap(pools[i]);
	for (size_t i = 0; i < NR_STD; i++)
		get_rsv(srsv_ctx_rsv(sim->ctx, std_types[i]), &w->std[i]);
	get_rsv(&rsv_md, &w->mine[0]);
	get_rsv(&rsv_data, &w->mine[1]);
	w->unallocated = srsv_ctx_unallocated(sim->ctx);
	w->calls = esim_total_calls(sim);
}

static bool same_rsv(const struct srsv_rsv_info *a,
		     const struct srsv_rsv_info *b)
{
	return a->size == b->size && a->reserved == b->reserved &&
	       a->type == b->type && a->full == b->full &&
	       a->failfast == b->failfast;
}

static void assert_same(const struct world *a, const struct world *b,
			const char *what)
{
	char why[1024];

	for (int i = 0; i < 3; i++)
		ck_assert_msg(esim_info_diff(&a->pool[i], &b->pool[i], why,
					     sizeof(why)) == 0,
			      "%s changed pool %s: %s", what,
			      srsv_pool_name(a->pool[i].kind), why);
	for (size_t i = 0; i < NR_STD; i++)
		ck_assert_msg(same_rsv(&a->std[i], &b->std[i]),
			      "%s changed standard rsv %d", what,
			      (int)std_types[i]);
	for (int i = 0; i < 2; i++)
		ck_assert_msg(same_rsv(&a->mine[i], &b->mine[i]),
			      "%s changed test rsv %d: size %" PRIu64 "->%"
			      PRIu64 " reserved %" PRIu64 "->%" PRIu64, what,
			      i, a->mine[i].size, b->mine[i].size,
			      a->mine[i].reserved, b->mine[i].reserved);
	ck_assert_msg(a->unallocated == b->unallocated,
		      "%s changed unallocated", what);
	ck_assert_msg(a->calls == b->calls, "%s called the flush callback",
		      what);
}

/* @call returns @err and changes nothing. */
#define BAD(call, err)							\
	do {								\
		struct world b_, a_;					\
		int r_;							\
		capture(&b_);						\
		r_ = (call);						\
		capture(&a_);						\
		ck_assert_msg(r_ == (err), "%s: got %d, want %d (%s)",	\
			      #call, r_, (err), #err);			\
		assert_same(&b_, &a_, #call);				\
	} while (0)

/* @call returns NULL and changes nothing. */
#define BAD_PTR(call)							\
	do {								\
		struct world b_, a_;					\
		const void *p_;						\
		capture(&b_);						\
		p_ = (call);						\
		capture(&a_);						\
		ck_assert_msg(p_ == NULL, "%s: not NULL", #call);	\
		assert_same(&b_, &a_, #call);				\
	} while (0)

static void setup(void)
{
	struct srsv_config cfg;
	struct srsv_space *pools[2];

	sim = esim_new();
	esim_config_init(sim, &cfg, MANUAL);
	cfg.pool_bytes[SRSV_POOL_DATA] = 1 * MiB;
	cfg.pool_bytes[SRSV_POOL_METADATA] = 1 * MiB;
	cfg.pool_bytes[SRSV_POOL_SYSTEM] = 4 * MiB;
	cfg.global_rsv_bytes = 64 * KiB;
	ck_assert_int_eq(esim_ctx_create(sim, &cfg), 0);
	data = esim_space(sim, SRSV_POOL_DATA);
	md = esim_space(sim, SRSV_POOL_METADATA);
	sys = esim_space(sim, SRSV_POOL_SYSTEM);
	ck_assert_ptr_nonnull(data);
	ck_assert_ptr_nonnull(md);
	ck_assert_ptr_nonnull(sys);

	/* may_use 100K, reserved 50K, used 100K, pinned 50K, readonly 100K
	 * in data and metadata (plus the global rsv in metadata). */
	pools[0] = data;
	pools[1] = md;
	for (int i = 0; i < 2; i++) {
		struct srsv_space *s = pools[i];

		ck_assert_int_eq(srsv_space_reserve(s, 300 * KiB,
						    SRSV_NO_FLUSH, 0), 0);
		ck_assert_int_eq(srsv_space_alloc(s, 200 * KiB), 0);
		ck_assert_int_eq(srsv_space_commit_used(s, 150 * KiB), 0);
		ck_assert_int_eq(srsv_space_pin(s, 50 * KiB), 0);
		ck_assert_int_eq(srsv_space_set_readonly(s, 100 * KiB, false),
				 0);
	}
	ck_assert_int_eq(srsv_space_reserve(sys, 8 * KiB, SRSV_NO_FLUSH, 0),
			 0);
	ck_assert_int_eq(srsv_rsv_init(&rsv_md, md, SRSV_RSV_TEMP), 0);
	ck_assert_int_eq(srsv_rsv_add(&rsv_md, 32 * KiB, SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_rsv_init(&rsv_data, data, SRSV_RSV_TEMP), 0);
	ck_assert_int_eq(srsv_rsv_add(&rsv_data, 16 * KiB, SRSV_NO_FLUSH, 0),
			 0);
	ck_assert_int_eq(srsv_ctx_account_delalloc(sim->ctx, 1 * MiB,
						   256 * KiB), 0);
}

static void teardown(void)
{
	srsv_rsv_destroy(&rsv_md);
	srsv_rsv_destroy(&rsv_data);
	esim_free(sim);
	sim = NULL;
}

/* ------------------------------------------------------------------ */
/* ctx.h */

START_TEST(test_config_init_bad)
{
	ck_assert_int_eq(srsv_config_init(NULL), -EINVAL);
}
END_TEST

/* Each bad config is refused, leaves nothing behind, calls nothing. */
START_TEST(test_ctx_create_bad)
{
	struct esim *s2 = esim_new();
	struct srsv_config good, cfg;
	struct srsv_ctx *out = NULL;
	struct {
		struct srsv_config c;
		unsigned char tail[64];
	} big;

	esim_config_init(s2, &good, MANUAL);
	good.pool_bytes[SRSV_POOL_METADATA] = 1 * MiB;

#define CREATE_BAD(...)							\
	do {								\
		cfg = good;						\
		__VA_ARGS__;						\
		out = NULL;						\
		ck_assert_msg(srsv_ctx_create(&cfg, &out) == -EINVAL,	\
			      "%s accepted", #__VA_ARGS__);		\
		ck_assert_ptr_null(out);				\
	} while (0)

	ck_assert_int_eq(srsv_ctx_create(NULL, &out), -EINVAL);
	ck_assert_int_eq(srsv_ctx_create(&good, NULL), -EINVAL);
	CREATE_BAD(cfg.size = 0);
	CREATE_BAD(cfg.size = 1);
	CREATE_BAD(cfg.size = sizeof(size_t) + sizeof(unsigned));
	CREATE_BAD(cfg.flags |= 1u << 31);
	CREATE_BAD(cfg.flags |= 1u << 30);
	CREATE_BAD(cfg.async_metadata_states.nr = SRSV_MAX_STATES + 1);
	CREATE_BAD(cfg.priority_states = (struct srsv_state_array){
		.nr = 1, .states = { (enum srsv_flush_state)0 } });
	CREATE_BAD(cfg.evict_states = (struct srsv_state_array){
		.nr = 1, .states = { SRSV_STATE_COUNT } });
	CREATE_BAD(cfg.async_data_states = (struct srsv_state_array){
		.nr = 2, .states = { SRSV_STATE_COMMIT_TRANS,
				     (enum srsv_flush_state)-1 } });
	CREATE_BAD(cfg.pool_bytes[SRSV_POOL_DATA] = MAXB + 1);
	CREATE_BAD(cfg.pool_bytes[SRSV_POOL_METADATA] = UINT64_MAX);
	/* Each within the limit, the sum not. */
	CREATE_BAD(cfg.pool_bytes[SRSV_POOL_DATA] = MAXB;
		   cfg.pool_bytes[SRSV_POOL_METADATA] = MAXB;
		   cfg.pool_bytes[SRSV_POOL_SYSTEM] = MAXB);
	CREATE_BAD(cfg.unallocated_bytes = UINT64_MAX);
	CREATE_BAD(cfg.global_rsv_bytes = UINT64_MAX);
#undef CREATE_BAD

	/* A newer caller's larger struct with unknown fields set. */
	memset(&big, 0, sizeof(big));
	big.c = good;
	big.c.size = sizeof(big);
	big.tail[10] = 1;
	out = NULL;
	ck_assert_int_eq(srsv_ctx_create(&big.c, &out), -EINVAL);
	ck_assert_ptr_null(out);

	/* The good config works, and nothing was ever called. */
	ck_assert_int_eq(srsv_ctx_create(&good, &out), 0);
	srsv_ctx_destroy(out);
	ck_assert_uint_eq(esim_total_calls(s2), 0);
	esim_free(s2);
}
END_TEST

static int shutdown_inside(struct esim *s, struct srsv_space *space,
			   enum srsv_flush_state state, uint64_t bytes,
			   void *arg)
{
	int *ret = arg;

	(void)space; (void)state; (void)bytes;
	ret[0] = srsv_ctx_shutdown(s->ctx);
	ret[1] = srsv_ctx_run_pending(s->ctx);
	return 0;
}

START_TEST(test_ctx_shutdown_bad)
{
	int inside[2] = { 1, 1 };
	struct esim_action a = {
		.state = SRSV_STATE_DELAYED_ITEMS_NR, .pool = ESIM_ANY,
		.preempt = -1, .op = ESIM_CALL, .fn = shutdown_inside,
		.fn_arg = inside, .times = 1,
	};
	struct srsv_ticket t;

	BAD(srsv_ctx_shutdown(NULL), -EINVAL);

	/* From a callback: -EDEADLK, the ctx keeps working. */
	esim_add(sim, &a);
	ck_assert_int_eq(srsv_space_reserve(md, 1 * MiB, SRSV_NO_FLUSH, 0),
			 -ENOSPC);
	ck_assert_int_eq(srsv_ticket_reserve(md, &t, 600 * KiB,
					     SRSV_FLUSH_ALL, 0), -EINPROGRESS);
	ck_assert_int_gt(esim_run_all(sim, 8), 0);
	ck_assert_int_eq(inside[0], -EDEADLK);
	ck_assert_int_eq(inside[1], -EDEADLK);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -ENOSPC);
	/* Not shut down: a FLUSH_ALL reservation still queues. */
	ck_assert_int_eq(srsv_ticket_reserve(md, &t, 600 * KiB,
					     SRSV_FLUSH_ALL, 0), -EINPROGRESS);
	ck_assert_int_eq(srsv_ticket_cancel(&t), 0);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -ECANCELED);
}
END_TEST

START_TEST(test_ctx_destroy_null)
{
	struct world b, a;

	capture(&b);
	srsv_ctx_destroy(NULL);
	capture(&a);
	assert_same(&b, &a, "srsv_ctx_destroy(NULL)");
}
END_TEST

START_TEST(test_ctx_space_bad)
{
	BAD_PTR(srsv_ctx_space(NULL, SRSV_POOL_DATA));
	BAD_PTR(srsv_ctx_space(sim->ctx, (enum srsv_pool)-1));
	BAD_PTR(srsv_ctx_space(sim->ctx, SRSV_POOL_COUNT));
	BAD_PTR(srsv_ctx_space(sim->ctx, (enum srsv_pool)1000));
	/* Not a mixed ctx. */
	BAD_PTR(srsv_ctx_space(sim->ctx, SRSV_POOL_MIXED));
}
END_TEST

START_TEST(test_ctx_set_unallocated_bad)
{
	BAD(srsv_ctx_set_unallocated(NULL, 1 * MiB), -EINVAL);
	BAD(srsv_ctx_set_unallocated(sim->ctx, MAXB + 1), -EINVAL);
	BAD(srsv_ctx_set_unallocated(sim->ctx, UINT64_MAX), -EINVAL);
}
END_TEST

START_TEST(test_ctx_account_delalloc_bad)
{
	BAD(srsv_ctx_account_delalloc(NULL, 1, 1), -EINVAL);
	/* Below 0: 1 MiB delalloc, 256 KiB ordered in the fixture. */
	BAD(srsv_ctx_account_delalloc(sim->ctx, -(int64_t)MiB - 1, 0),
	    -EINVAL);
	BAD(srsv_ctx_account_delalloc(sim->ctx, 0, -256 * (int64_t)KiB - 1),
	    -EINVAL);
	/* One valid change and one invalid: neither is applied. */
	BAD(srsv_ctx_account_delalloc(sim->ctx, 4096, -(int64_t)MiB), -EINVAL);
	BAD(srsv_ctx_account_delalloc(sim->ctx, -(int64_t)MiB - 1, 4096),
	    -EINVAL);
	BAD(srsv_ctx_account_delalloc(sim->ctx, INT64_MIN, 0), -EINVAL);
	BAD(srsv_ctx_account_delalloc(sim->ctx, 0, INT64_MIN), -EINVAL);
}
END_TEST

START_TEST(test_ctx_set_preempt_bad)
{
	BAD(srsv_ctx_set_preempt(NULL, true), -EINVAL);
	BAD(srsv_ctx_set_preempt(NULL, false), -EINVAL);
}
END_TEST

START_TEST(test_ctx_set_error_bad)
{
	struct srsv_ticket t;

	BAD(srsv_ctx_set_error(NULL, -EIO), -EINVAL);
	BAD(srsv_ctx_set_error(sim->ctx, 0), -EINVAL);
	BAD(srsv_ctx_set_error(sim->ctx, EIO), -EINVAL);
	BAD(srsv_ctx_set_error(sim->ctx, 1), -EINVAL);
	/* No error was set: a ticket still queues instead of failing. */
	ck_assert_int_eq(srsv_ticket_reserve(md, &t, 600 * KiB,
					     SRSV_FLUSH_ALL, 0), -EINPROGRESS);
	ck_assert_int_eq(srsv_ticket_cancel(&t), 0);
	ck_assert_int_eq(srsv_ticket_wait(&t, 0), -ECANCELED);
}
END_TEST

START_TEST(test_ctx_run_pending_bad)
{
	struct esim *threaded;

	BAD(srsv_ctx_run_pending(NULL), -EINVAL);
	threaded = esim_setup(SRSV_CTX_NO_PREEMPT, MiB, MiB, 0);
	ck_assert_int_eq(srsv_ctx_run_pending(threaded->ctx), -EINVAL);
	esim_free(threaded);
	/* From a callback: test_ctx_shutdown_bad. */
}
END_TEST

/* No error return: NULL is a precondition; the values are right. */
START_TEST(test_ctx_user_and_unallocated)
{
	ck_assert_ptr_eq(srsv_ctx_user(sim->ctx), sim);
	ck_assert_uint_eq(srsv_ctx_unallocated(sim->ctx), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* space.h: reservations */

static const int data_bad_modes[] = {
	SRSV_FLUSH_LIMIT, SRSV_FLUSH_EVICT, SRSV_FLUSH_ALL,
	SRSV_FLUSH_ALL_STEAL, SRSV_FLUSH_EMERGENCY,
};
static const int md_bad_modes[] = {
	SRSV_FLUSH_DATA, SRSV_FLUSH_FREE_SPACE_INODE,
};

/* The argument checks shared by the three reserve entry points. */
typedef int (*reserve_fn)(struct srsv_space *s, uint64_t bytes, int mode,
			  unsigned flags);

static int via_reserve(struct srsv_space *s, uint64_t bytes, int mode,
		       unsigned flags)
{
	return srsv_space_reserve(s, bytes, (enum srsv_flush)mode, flags);
}

static int via_timeout(struct srsv_space *s, uint64_t bytes, int mode,
		       unsigned flags)
{
	return srsv_space_reserve_timeout(s, bytes, (enum srsv_flush)mode,
					  flags, 1000000);
}

static int via_ticket(struct srsv_space *s, uint64_t bytes, int mode,
		      unsigned flags)
{
	struct srsv_ticket t;
	int ret = srsv_ticket_reserve(s, &t, bytes, (enum srsv_flush)mode,
				      flags);

	/* The ticket is finished: wait reports the same error. */
	if (ret != -EINPROGRESS && s)
		ck_assert_int_eq(srsv_ticket_wait(&t, 0), ret);
	return ret;
}

static void reserve_arg_checks(reserve_fn fn)
{
	BAD(fn(NULL, 4 * KiB, SRSV_NO_FLUSH, 0), -EINVAL);
	BAD(fn(md, 0, SRSV_NO_FLUSH, 0), -EINVAL);
	BAD(fn(md, 0, SRSV_FLUSH_ALL, 0), -EINVAL);
	BAD(fn(md, MAXB + 1, SRSV_FLUSH_ALL, 0), -EINVAL);
	BAD(fn(md, UINT64_MAX, SRSV_NO_FLUSH, 0), -EINVAL);
	BAD(fn(data, (uint64_t)-4096, SRSV_FLUSH_DATA, 0), -EINVAL);
	BAD(fn(md, 4 * KiB, -1, 0), -EINVAL);
	BAD(fn(md, 4 * KiB, SRSV_FLUSH_MODE_COUNT, 0), -EINVAL);
	BAD(fn(md, 4 * KiB, 1000, 0), -EINVAL);
	BAD(fn(md, 4 * KiB, SRSV_NO_FLUSH, 1u << 1), -EINVAL);
	BAD(fn(md, 4 * KiB, SRSV_NO_FLUSH, 1u << 31), -EINVAL);
	BAD(fn(md, 4 * KiB, SRSV_NO_FLUSH, SRSV_RESERVE_NOWAIT | 1u << 7),
	    -EINVAL);
	for (size_t i = 0; i < sizeof(data_bad_modes) / sizeof(int); i++)
		BAD(fn(data, 4 * KiB, data_bad_modes[i], 0), -EINVAL);
	for (size_t i = 0; i < sizeof(md_bad_modes) / sizeof(int); i++) {
		BAD(fn(md, 4 * KiB, md_bad_modes[i], 0), -EINVAL);
		BAD(fn(sys, 4 * KiB, md_bad_modes[i], 0), -EINVAL);
	}
	/* More than the pool (1 MiB, nothing unallocated) could ever give. */
	BAD(fn(md, 2 * MiB, SRSV_NO_FLUSH, 0), -ENOSPC);
	BAD(fn(md, 2 * MiB, SRSV_FLUSH_EMERGENCY, 0), -ENOSPC);
	BAD(fn(md, 2 * MiB, SRSV_FLUSH_ALL, 0), -ENOSPC);
	BAD(fn(data, 2 * MiB, SRSV_FLUSH_DATA, 0), -ENOSPC);
	BAD(fn(data, MAXB, SRSV_FLUSH_DATA, 0), -ENOSPC);
	/* NOWAIT never answers -ENOSPC: the caller may retry blocking. */
	BAD(fn(md, 2 * MiB, SRSV_FLUSH_ALL, SRSV_RESERVE_NOWAIT), -EAGAIN);
}

START_TEST(test_space_reserve_bad)
{
	reserve_arg_checks(via_reserve);
}
END_TEST

START_TEST(test_space_reserve_timeout_bad)
{
	reserve_arg_checks(via_timeout);
}
END_TEST

START_TEST(test_ticket_reserve_bad)
{
	reserve_arg_checks(via_ticket);
	BAD(srsv_ticket_reserve(md, NULL, 4 * KiB, SRSV_NO_FLUSH, 0),
	    -EINVAL);
	BAD(srsv_ticket_reserve(md, NULL, 2 * MiB, SRSV_FLUSH_ALL, 0),
	    -EINVAL);
}
END_TEST

START_TEST(test_ticket_wait_cancel_bad)
{
	struct srsv_ticket zero, junk;

	memset(&zero, 0, sizeof(zero));
	memset(&junk, 0xa5, sizeof(junk));
	BAD(srsv_ticket_wait(NULL, 0), -EINVAL);
	BAD(srsv_ticket_wait(NULL, UINT64_MAX), -EINVAL);
	BAD(srsv_ticket_wait(&zero, 0), -EINVAL);
	BAD(srsv_ticket_wait(&zero, UINT64_MAX), -EINVAL);
	BAD(srsv_ticket_wait(&junk, 1000), -EINVAL);
	BAD(srsv_ticket_cancel(NULL), -EINVAL);
	BAD(srsv_ticket_cancel(&zero), -EINVAL);
	BAD(srsv_ticket_cancel(&junk), -EINVAL);
}
END_TEST

/* ------------------------------------------------------------------ */
/* space.h: transitions */

/* Fixture, per data/metadata pool: may_use 100K (+64K global rsv and
 * 32K/16K of the test rsvs), reserved 50K, used 100K, pinned 50K,
 * readonly 100K. */

START_TEST(test_space_release_bad)
{
	uint64_t may_use = esim_snap(md).may_use;

	BAD(srsv_space_release(NULL, 4 * KiB), -EINVAL);
	BAD(srsv_space_release(md, may_use + 1), -EINVAL);
	BAD(srsv_space_release(data, esim_snap(data).may_use + 1), -EINVAL);
	BAD(srsv_space_release(md, UINT64_MAX), -EINVAL);
	BAD(srsv_space_release(md, MAXB + 1), -EINVAL);
	/* 0 is a documented no-op. */
	BAD(srsv_space_release(md, 0), 0);
}
END_TEST

/* The transitions that take bytes out of one counter. */
typedef int (*move_fn)(struct srsv_space *s, uint64_t bytes);

static void move_checks(move_fn fn, const char *name, uint64_t held_md)
{
	(void)name;
	BAD(fn(NULL, 4 * KiB), -EINVAL);
	BAD(fn(md, held_md + 1), -EINVAL);
	BAD(fn(md, held_md + 64 * KiB), -EINVAL);
	BAD(fn(md, UINT64_MAX), -EINVAL);
	BAD(fn(md, MAXB + 1), -EINVAL);
	BAD(fn(sys, 4 * MiB + 1), -EINVAL);
	/* Zero moves nothing: refused (only release documents 0 as a
	 * no-op). */
	BAD(fn(md, 0), -EINVAL);
}

START_TEST(test_space_alloc_bad)
{
	move_checks(srsv_space_alloc, "alloc", esim_snap(md).may_use);
}
END_TEST

START_TEST(test_space_free_reserved_bad)
{
	move_checks(srsv_space_free_reserved, "free_reserved", 50 * KiB);
}
END_TEST

START_TEST(test_space_commit_used_bad)
{
	move_checks(srsv_space_commit_used, "commit_used", 50 * KiB);
}
END_TEST

START_TEST(test_space_pin_bad)
{
	move_checks(srsv_space_pin, "pin", 100 * KiB);
}
END_TEST

START_TEST(test_space_unpin_bad)
{
	move_checks(srsv_space_unpin, "unpin", 50 * KiB);
}
END_TEST

START_TEST(test_space_shrink_bad)
{
	move_checks(srsv_space_shrink, "shrink", 100 * KiB);
}
END_TEST

START_TEST(test_space_clear_readonly_bad)
{
	move_checks(srsv_space_clear_readonly, "clear_readonly", 100 * KiB);
}
END_TEST

START_TEST(test_space_grow_bad)
{
	uint64_t total = esim_snap(md).total;

	BAD(srsv_space_grow(NULL, 4 * KiB), -EINVAL);
	BAD(srsv_space_grow(md, 0), -EINVAL);
	BAD(srsv_space_grow(md, UINT64_MAX), -EINVAL);
	BAD(srsv_space_grow(md, MAXB + 1), -EINVAL);
	/* The pool's total may not pass SRSV_MAX_BYTES... */
	BAD(srsv_space_grow(md, MAXB - total + 1), -EINVAL);
	BAD(srsv_space_grow(md, MAXB), -EINVAL);
	/* ...but may reach it, and not one byte more. */
	ck_assert_int_eq(srsv_space_grow(md, MAXB - total), 0);
	ck_assert_uint_eq(esim_snap(md).total, MAXB);
	BAD(srsv_space_grow(md, 1), -EINVAL);
}
END_TEST

START_TEST(test_space_set_readonly_bad)
{
	struct srsv_space_info i = esim_snap(md);
	uint64_t free_md = i.total - i.used - i.reserved - i.pinned -
			   i.readonly - i.may_use;

	BAD(srsv_space_set_readonly(NULL, 4 * KiB, false), -EINVAL);
	BAD(srsv_space_set_readonly(NULL, 4 * KiB, true), -EINVAL);
	BAD(srsv_space_set_readonly(md, 0, false), -EINVAL);
	BAD(srsv_space_set_readonly(md, 0, true), -EINVAL);
	BAD(srsv_space_set_readonly(md, MAXB + 1, true), -EINVAL);
	BAD(srsv_space_set_readonly(md, UINT64_MAX, true), -EINVAL);
	/* Not free (documented -ENOSPC), one byte too many. */
	BAD(srsv_space_set_readonly(md, free_md + 1, false), -ENOSPC);
	BAD(srsv_space_set_readonly(md, MAXB, false), -ENOSPC);
}
END_TEST

START_TEST(test_space_set_full_bad)
{
	BAD(srsv_space_set_full(NULL, true), -EINVAL);
	BAD(srsv_space_set_full(NULL, false), -EINVAL);
}
END_TEST

START_TEST(test_space_kind_ctx_bad)
{
	BAD(srsv_space_kind(NULL), -EINVAL);
	BAD_PTR(srsv_space_ctx(NULL));
	ck_assert_int_eq(srsv_space_kind(md), SRSV_POOL_METADATA);
	ck_assert_ptr_eq(srsv_space_ctx(md), sim->ctx);
}
END_TEST

START_TEST(test_space_snapshot_bad)
{
	struct srsv_space_info info;
	struct srsv_ticket_info ti[2];
	size_t nr = 77;

	BAD(srsv_space_snapshot(NULL, &info, NULL, 0, NULL), -EINVAL);
	BAD(srsv_space_snapshot(md, NULL, NULL, 0, NULL), -EINVAL);
	BAD(srsv_space_snapshot(md, NULL, ti, 2, &nr), -EINVAL);
	BAD(srsv_space_snapshot(md, &info, NULL, 1, &nr), -EINVAL);
	ck_assert_uint_eq(nr, 77);	/* untouched on failure */
}
END_TEST

START_TEST(test_names_unknown)
{
	ck_assert_str_eq(srsv_pool_name(-1), "unknown");
	ck_assert_str_eq(srsv_pool_name(SRSV_POOL_COUNT), "unknown");
	ck_assert_str_eq(srsv_flush_name(-1), "unknown");
	ck_assert_str_eq(srsv_flush_name(SRSV_FLUSH_MODE_COUNT), "unknown");
	ck_assert_str_eq(srsv_state_name(0), "unknown");
	ck_assert_str_eq(srsv_state_name(SRSV_STATE_COUNT), "unknown");
	ck_assert_str_eq(srsv_state_name(-5), "unknown");
	/* And known ones are named. */
	ck_assert_str_eq(srsv_flush_name(SRSV_FLUSH_ALL), "FLUSH_ALL");
	ck_assert_str_eq(srsv_state_name(SRSV_STATE_COMMIT_TRANS),
			 "COMMIT_TRANS");
	ck_assert_str_ne(srsv_pool_name(SRSV_POOL_DATA), "unknown");
}
END_TEST

/*
 * Sums that would overflow 64 bits must not wrap into "fits".  Build a
 * pool whose accounted bytes are close to 2^64 (its total at the maximum,
 * may_use overcommitted by half the maximum, a forced read-only region of
 * twice the maximum), then ask for the maximum once more.
 */
START_TEST(test_space_sum_overflow)
{
	struct srsv_space_info i;
	uint64_t total = esim_snap(md).total, room;

	ck_assert_int_eq(srsv_space_grow(md, MAXB - total), 0);
	ck_assert_int_eq(srsv_ctx_set_unallocated(sim->ctx, MAXB), 0);
	/* NO_FLUSH may overcommit by about half the unallocated space. */
	ck_assert_int_eq(srsv_space_reserve(md, MAXB, SRSV_NO_FLUSH, 0), 0);
	i = esim_snap(md);
	room = (MAXB >> 1) - 4 * MiB;	/* well inside the allowance */
	ck_assert_int_eq(srsv_space_reserve(md, room, SRSV_NO_FLUSH, 0), 0);
	/* Relocation may force read-only space beyond the total. */
	ck_assert_int_eq(srsv_space_set_readonly(md, MAXB, true), 0);
	ck_assert_int_eq(srsv_space_set_readonly(md, MAXB - 1 * MiB, true),
			 0);
	i = esim_snap(md);
	ck_assert_uint_gt(i.readonly, MAXB);
	/* accounted + MAXB now exceeds 2^64. */
	ck_assert_uint_gt(i.used + i.reserved + i.pinned + i.readonly +
			  i.may_use, UINT64_MAX - MAXB);

	BAD(srsv_space_reserve(md, MAXB, SRSV_NO_FLUSH, 0), -ENOSPC);
	BAD(srsv_space_reserve(md, MAXB, SRSV_FLUSH_EMERGENCY, 0), -ENOSPC);
	BAD(srsv_space_reserve(md, MAXB, SRSV_FLUSH_LIMIT,
			       SRSV_RESERVE_NOWAIT), -EAGAIN);
	BAD(srsv_space_reserve(md, MAXB / 2, SRSV_NO_FLUSH, 0), -ENOSPC);
	BAD(srsv_space_set_readonly(md, 1, false), -ENOSPC);
	/* The counter itself refuses to grow past its bound. */
	BAD(srsv_space_set_readonly(md, MAXB, true), -EINVAL);
}
END_TEST

/* ------------------------------------------------------------------ */
/* rsv.h */

START_TEST(test_rsv_init_bad)
{
	struct srsv_rsv r;

	BAD(srsv_rsv_init(NULL, md, SRSV_RSV_TEMP), -EINVAL);
	BAD(srsv_rsv_init(&r, NULL, SRSV_RSV_TEMP), -EINVAL);
	BAD(srsv_rsv_init(&r, md, SRSV_RSV_GLOBAL), -EINVAL);
	BAD(srsv_rsv_init(&r, md, (enum srsv_rsv_type)-1), -EINVAL);
	BAD(srsv_rsv_init(&r, md, SRSV_RSV_TYPE_COUNT), -EINVAL);
	BAD(srsv_rsv_init(&r, md, (enum srsv_rsv_type)99), -EINVAL);
}
END_TEST

START_TEST(test_rsv_destroy_bad)
{
	struct srsv_rsv zero, junk;

	memset(&zero, 0, sizeof(zero));
	memset(&junk, 0x5a, sizeof(junk));
	BAD(srsv_rsv_destroy(NULL), -EINVAL);
	BAD(srsv_rsv_destroy(&zero), -EINVAL);
	BAD(srsv_rsv_destroy(&junk), -EINVAL);
	for (size_t i = 0; i < NR_STD; i++) {
		struct srsv_rsv *std = srsv_ctx_rsv(sim->ctx, std_types[i]);

		ck_assert_ptr_nonnull(std);
		BAD(srsv_rsv_destroy(std), -EINVAL);
	}
}
END_TEST

/* add and refill share the reservation's argument checks. */
START_TEST(test_rsv_add_refill_bad)
{
	struct srsv_rsv zero;
	uint64_t held = 32 * KiB;

	memset(&zero, 0, sizeof(zero));
	BAD(srsv_rsv_add(NULL, 4 * KiB, SRSV_NO_FLUSH, 0), -EINVAL);
	BAD(srsv_rsv_add(&zero, 4 * KiB, SRSV_NO_FLUSH, 0), -EINVAL);
	BAD(srsv_rsv_add(&rsv_md, MAXB + 1, SRSV_NO_FLUSH, 0), -EINVAL);
	BAD(srsv_rsv_add(&rsv_md, UINT64_MAX, SRSV_FLUSH_ALL, 0), -EINVAL);
	BAD(srsv_rsv_add(&rsv_md, 4 * KiB, -1, 0), -EINVAL);
	BAD(srsv_rsv_add(&rsv_md, 4 * KiB, SRSV_FLUSH_MODE_COUNT, 0),
	    -EINVAL);
	BAD(srsv_rsv_add(&rsv_md, 4 * KiB, SRSV_NO_FLUSH, 1u << 9), -EINVAL);
	BAD(srsv_rsv_add(&rsv_md, 4 * KiB, SRSV_FLUSH_DATA, 0), -EINVAL);
	BAD(srsv_rsv_add(&rsv_data, 4 * KiB, SRSV_FLUSH_ALL, 0), -EINVAL);
	BAD(srsv_rsv_add(&rsv_md, 2 * MiB, SRSV_NO_FLUSH, 0), -ENOSPC);
	BAD(srsv_rsv_add(&rsv_md, 2 * MiB, SRSV_FLUSH_ALL, 0), -ENOSPC);
	BAD(srsv_rsv_add(&rsv_md, 2 * MiB, SRSV_FLUSH_ALL,
			 SRSV_RESERVE_NOWAIT), -EAGAIN);
	BAD(srsv_rsv_add(&rsv_md, 0, SRSV_FLUSH_ALL, 0), 0);	/* no-op */

	BAD(srsv_rsv_refill(NULL, 64 * KiB, SRSV_NO_FLUSH, 0), -EINVAL);
	BAD(srsv_rsv_refill(&zero, 64 * KiB, SRSV_NO_FLUSH, 0), -EINVAL);
	BAD(srsv_rsv_refill(&rsv_md, MAXB + 1, SRSV_NO_FLUSH, 0), -EINVAL);
	BAD(srsv_rsv_refill(&rsv_md, UINT64_MAX, SRSV_NO_FLUSH, 0), -EINVAL);
	BAD(srsv_rsv_refill(&rsv_md, held + 4 * KiB, -1, 0), -EINVAL);
	BAD(srsv_rsv_refill(&rsv_md, held + 4 * KiB, SRSV_NO_FLUSH, 1u << 9),
	    -EINVAL);
	BAD(srsv_rsv_refill(&rsv_md, held + 4 * KiB, SRSV_FLUSH_DATA, 0),
	    -EINVAL);
	BAD(srsv_rsv_refill(&rsv_md, 2 * MiB, SRSV_NO_FLUSH, 0), -ENOSPC);
	/* Already holds enough: success, nothing changes. */
	BAD(srsv_rsv_refill(&rsv_md, held, SRSV_NO_FLUSH, 0), 0);
}
END_TEST

START_TEST(test_rsv_use_bad)
{
	struct srsv_rsv zero;

	memset(&zero, 0, sizeof(zero));
	BAD(srsv_rsv_use(NULL, 4 * KiB), -EINVAL);
	BAD(srsv_rsv_use(&zero, 4 * KiB), -EINVAL);
	BAD(srsv_rsv_use(&rsv_md, 32 * KiB + 1), -ENOSPC);
	BAD(srsv_rsv_use(&rsv_md, UINT64_MAX), -EINVAL);
	BAD(srsv_rsv_use(srsv_ctx_rsv(sim->ctx, SRSV_RSV_TRANS), 1), -ENOSPC);
}
END_TEST

START_TEST(test_rsv_migrate_bad)
{
	struct srsv_rsv zero;
	struct srsv_rsv *trans = srsv_ctx_rsv(sim->ctx, SRSV_RSV_TRANS);

	memset(&zero, 0, sizeof(zero));
	BAD(srsv_rsv_migrate(NULL, trans, 4 * KiB, true), -EINVAL);
	BAD(srsv_rsv_migrate(&rsv_md, NULL, 4 * KiB, true), -EINVAL);
	BAD(srsv_rsv_migrate(&zero, trans, 4 * KiB, true), -EINVAL);
	BAD(srsv_rsv_migrate(&rsv_md, &zero, 4 * KiB, true), -EINVAL);
	BAD(srsv_rsv_migrate(&rsv_md, &rsv_md, 4 * KiB, true), -EINVAL);
	BAD(srsv_rsv_migrate(&rsv_md, &rsv_data, 4 * KiB, true), -EINVAL);
	BAD(srsv_rsv_migrate(&rsv_md, trans, UINT64_MAX, true), -EINVAL);
	BAD(srsv_rsv_migrate(&rsv_md, trans, 32 * KiB + 1, false), -ENOSPC);
}
END_TEST

START_TEST(test_rsv_check_bad)
{
	struct srsv_rsv zero;

	memset(&zero, 0, sizeof(zero));
	BAD(srsv_rsv_check(NULL, 50), -EINVAL);
	BAD(srsv_rsv_check(&zero, 50), -EINVAL);
	BAD(srsv_rsv_check(&rsv_md, 101), -EINVAL);
	BAD(srsv_rsv_check(&rsv_md, UINT32_MAX), -EINVAL);
}
END_TEST

START_TEST(test_rsv_release_bad)
{
	struct srsv_rsv zero;
	uint64_t released = 12345;

	memset(&zero, 0, sizeof(zero));
	BAD(srsv_rsv_release(NULL, 4 * KiB, NULL), -EINVAL);
	BAD(srsv_rsv_release(&zero, 4 * KiB, &released), -EINVAL);
	BAD(srsv_rsv_release(&rsv_md, 32 * KiB + 1, &released), -EINVAL);
	BAD(srsv_rsv_release(&rsv_md, UINT64_MAX - 1, &released), -EINVAL);
	ck_assert_uint_eq(released, 12345);	/* untouched on failure */
}
END_TEST

START_TEST(test_rsv_use_fallback_bad)
{
	struct srsv_rsv zero, *used = (struct srsv_rsv *)&zero;

	memset(&zero, 0, sizeof(zero));
	BAD(srsv_rsv_use_fallback(NULL, 4 * KiB, &used), -EINVAL);
	BAD(srsv_rsv_use_fallback(&zero, 4 * KiB, &used), -EINVAL);
	BAD(srsv_rsv_use_fallback(&rsv_md, 0, &used), -EINVAL);
	BAD(srsv_rsv_use_fallback(&rsv_md, MAXB + 1, &used), -EINVAL);
	ck_assert_ptr_eq(used, &zero);	/* untouched on failure */
}
END_TEST

START_TEST(test_rsv_set_failfast_bad)
{
	struct srsv_rsv zero;

	memset(&zero, 0, sizeof(zero));
	BAD(srsv_rsv_set_failfast(NULL, true), -EINVAL);
	BAD(srsv_rsv_set_failfast(&zero, true), -EINVAL);
}
END_TEST

START_TEST(test_rsv_get_info_bad)
{
	struct srsv_rsv zero;
	struct srsv_rsv_info info;

	memset(&zero, 0, sizeof(zero));
	BAD(srsv_rsv_get_info(NULL, &info), -EINVAL);
	BAD(srsv_rsv_get_info(&zero, &info), -EINVAL);
	BAD(srsv_rsv_get_info(&rsv_md, NULL), -EINVAL);
}
END_TEST

START_TEST(test_ctx_rsv_bad)
{
	BAD_PTR(srsv_ctx_rsv(NULL, SRSV_RSV_GLOBAL));
	BAD_PTR(srsv_ctx_rsv(sim->ctx, (enum srsv_rsv_type)-1));
	BAD_PTR(srsv_ctx_rsv(sim->ctx, SRSV_RSV_TYPE_COUNT));
	/* Not standard reservations of a ctx. */
	BAD_PTR(srsv_ctx_rsv(sim->ctx, SRSV_RSV_TEMP));
	BAD_PTR(srsv_ctx_rsv(sim->ctx, SRSV_RSV_EMPTY));
	BAD_PTR(srsv_ctx_rsv(sim->ctx, SRSV_RSV_TREELOG));
}
END_TEST

/* rsv.h: "GLOBAL, TRANS, DELOPS, DELREFS or DELALLOC ... NULL for another
 * type"; CHUNK is not in that list. */
START_TEST(test_ctx_rsv_chunk_not_standard)
{
	BAD_PTR(srsv_ctx_rsv(sim->ctx, SRSV_RSV_CHUNK));
}
END_TEST

START_TEST(test_ctx_resize_global_rsv_bad)
{
	BAD(srsv_ctx_resize_global_rsv(NULL, 64 * KiB), -EINVAL);
	BAD(srsv_ctx_resize_global_rsv(sim->ctx, MAXB + 1), -EINVAL);
	BAD(srsv_ctx_resize_global_rsv(sim->ctx, UINT64_MAX), -EINVAL);
}
END_TEST

static Suite *badinput_suite(void)
{
	Suite *s = suite_create("badinput");
	TCase *ctx = tcase_create("ctx");
	TCase *space = tcase_create("space");
	TCase *rsv = tcase_create("rsv");
	TCase *all[] = { ctx, space, rsv };

	for (int i = 0; i < 3; i++)
		tcase_add_checked_fixture(all[i], setup, teardown);

	tcase_add_test(ctx, test_config_init_bad);
	tcase_add_test(ctx, test_ctx_create_bad);
	tcase_add_test(ctx, test_ctx_shutdown_bad);
	tcase_add_test(ctx, test_ctx_destroy_null);
	tcase_add_test(ctx, test_ctx_space_bad);
	tcase_add_test(ctx, test_ctx_set_unallocated_bad);
	tcase_add_test(ctx, test_ctx_account_delalloc_bad);
	tcase_add_test(ctx, test_ctx_set_preempt_bad);
	tcase_add_test(ctx, test_ctx_set_error_bad);
	tcase_add_test(ctx, test_ctx_run_pending_bad);
	tcase_add_test(ctx, test_ctx_user_and_unallocated);
	suite_add_tcase(s, ctx);

	tcase_add_test(space, test_space_reserve_bad);
	tcase_add_test(space, test_space_reserve_timeout_bad);
	tcase_add_test(space, test_ticket_reserve_bad);
	tcase_add_test(space, test_ticket_wait_cancel_bad);
	tcase_add_test(space, test_space_release_bad);
	tcase_add_test(space, test_space_alloc_bad);
	tcase_add_test(space, test_space_free_reserved_bad);
	tcase_add_test(space, test_space_commit_used_bad);
	tcase_add_test(space, test_space_pin_bad);
	tcase_add_test(space, test_space_unpin_bad);
	tcase_add_test(space, test_space_shrink_bad);
	tcase_add_test(space, test_space_clear_readonly_bad);
	tcase_add_test(space, test_space_grow_bad);
	tcase_add_test(space, test_space_set_readonly_bad);
	tcase_add_test(space, test_space_set_full_bad);
	tcase_add_test(space, test_space_kind_ctx_bad);
	tcase_add_test(space, test_space_snapshot_bad);
	tcase_add_test(space, test_names_unknown);
	tcase_add_test(space, test_space_sum_overflow);
	suite_add_tcase(s, space);

	tcase_add_test(rsv, test_rsv_init_bad);
	tcase_add_test(rsv, test_rsv_destroy_bad);
	tcase_add_test(rsv, test_rsv_add_refill_bad);
	tcase_add_test(rsv, test_rsv_use_bad);
	tcase_add_test(rsv, test_rsv_migrate_bad);
	tcase_add_test(rsv, test_rsv_check_bad);
	tcase_add_test(rsv, test_rsv_release_bad);
	tcase_add_test(rsv, test_rsv_use_fallback_bad);
	tcase_add_test(rsv, test_rsv_set_failfast_bad);
	tcase_add_test(rsv, test_rsv_get_info_bad);
	tcase_add_test(rsv, test_ctx_rsv_bad);
	tcase_add_test(rsv, test_ctx_rsv_chunk_not_standard);
	tcase_add_test(rsv, test_ctx_resize_global_rsv_bad);
	suite_add_tcase(s, rsv);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(badinput_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
