/* SPDX-License-Identifier: MIT */
/*
 * Bad input to every public function of ctx.h, space.h, rsv.h, quota.h,
 * delalloc.h, zoned.h and debug.h: each call gets its documented errno (or
 * NULL) and changes nothing.  "Nothing" is checked by comparing a full
 * picture of the ctx before and after: every
 * field of every pool's snapshot (counters, flags, statistics, ctx-wide
 * figures), every standard and test-owned block reservation, and the
 * engine's call count (a function that fails never calls the callback).
 *
 * docs/bad-input.md is the table of these cases; each row names its test.
 */
#include <check.h>
#include <pthread.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	ck_assert_int_eq(srsv_rsv_destroy(&rsv_md), 0);
	ck_assert_int_eq(srsv_rsv_destroy(&rsv_data), 0);
	esim_free(sim);
	sim = NULL;
}

/* ------------------------------------------------------------------ */
/* ctx.h */

START_TEST(test_config_init_bad)
{
	struct srsv_config cfg;

	/* The function itself: the macro's sizeof needs an object. */
	ck_assert_int_eq((srsv_config_init)(NULL), -EINVAL);
	ck_assert_int_eq(srsv_config_init_sized(NULL, sizeof(cfg)), -EINVAL);
	/* Smaller than the first layout (up to item_bytes): refused. */
	memset(&cfg, 0xa5, sizeof(cfg));
	ck_assert_int_eq(srsv_config_init_sized(&cfg, sizeof(size_t)),
			 -EINVAL);
	ck_assert_uint_eq(cfg.flags, 0xa5a5a5a5u);
}
END_TEST

/*
 * A program built against a header before cpu_cache_bytes calls the
 * function srsv_config_init(): it must write nothing past its layout, and
 * srsv_ctx_create() must take the missing field as 0.
 */
START_TEST(test_config_older_layout)
{
	size_t old = offsetof(struct srsv_config, cpu_cache_bytes);
	union {
		struct srsv_config cfg;
		unsigned char raw[sizeof(struct srsv_config) + 16];
	} u;
	struct srsv_ctx *ctx = NULL;

	memset(&u, 0x5a, sizeof(u));
	ck_assert_int_eq((srsv_config_init)(&u.cfg), 0);
	ck_assert_uint_eq(u.cfg.size, old);
	for (size_t i = old; i < sizeof(u.raw); i++)
		ck_assert_uint_eq(u.raw[i], 0x5a);
	u.cfg.pool_bytes[SRSV_POOL_METADATA] = 64 * MiB;
	u.cfg.flags = MANUAL;
	/* The tail past its size is garbage (0x5a...): never read. */
	ck_assert_int_eq(srsv_ctx_create(&u.cfg, &ctx), 0);
	srsv_ctx_destroy(ctx);
	/* The macro passes the full size. */
	ck_assert_int_eq(srsv_config_init(&u.cfg), 0);
	ck_assert_uint_eq(u.cfg.size, sizeof(struct srsv_config));
	ck_assert_uint_eq(u.cfg.cpu_cache_bytes, 0);
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
	/* "Queued" to every reserve call: a blocking reserve answered with
	 * it waited on a ticket never queued (crashed). */
	BAD(srsv_ctx_set_error(sim->ctx, -EINPROGRESS), -EINVAL);
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
	BAD(fn(md, 4 * KiB, SRSV_NO_FLUSH, 1u << 5), -EINVAL);
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

/*
 * A refused release changes nothing (a compare-and-swap never applies it):
 * racing it, lawful releases must still succeed, another over-release
 * must be refused too, no reservation may be granted against it, and once all stop every counter
 * must be what it was.
 */
struct race_arg {
	uint64_t over;			/* an over-release of this much; 0: lawful */
	volatile int *stop;
	uint64_t rounds, refused, failed_reserves, bad;
};

static void *race_thread(void *p)
{
	struct race_arg *a = p;

	while (!__atomic_load_n(a->stop, __ATOMIC_ACQUIRE)) {
		int ret;

		__atomic_fetch_add(&a->rounds, 1, __ATOMIC_RELAXED);
		if (a->over) {
			/* Far more than the pool ever lends. */
			if (srsv_space_release(md, a->over) == -EINVAL)
				a->refused++;
			else
				a->bad++;
			continue;
		}
		ret = srsv_space_reserve(md, 4 * KiB, SRSV_NO_FLUSH, 0);
		if (ret == -ENOSPC) {
			a->failed_reserves++;
			continue;
		}
		if (ret || srsv_space_release(md, 4 * KiB))
			a->bad++;
	}
	return NULL;
}

START_TEST(test_space_release_refused_races)
{
	/* Sizes that once took two paths (fetch-and-add with undo up to
	 * 2^40, compare-and-swap beyond; one path since 7965481). */
	struct race_arg args[5] = { { .over = UINT64_C(1) << 40 },
				    { .over = UINT64_C(1) << 39 },
				    { .over = MAXB }, { 0 }, { 0 } };
	enum { NR_BUGGY = 3, NR = 5 };
	pthread_t th[NR];
	volatile int stop = 0;
	struct world before, after;

	capture(&before);
	for (int i = 0; i < NR; i++) {
		args[i].stop = &stop;
		ck_assert_int_eq(pthread_create(&th[i], NULL, race_thread,
						&args[i]), 0);
	}
	/* Bounded: enough rounds of every thread for thousands of
	 * overlaps, or 5 s on a loaded machine. */
	for (int ms = 0; ms < 5000; ms++) {
		bool enough = true;

		for (int i = 0; i < NR; i++)
			enough = enough && __atomic_load_n(&args[i].rounds,
							   __ATOMIC_RELAXED) >
					   200000;
		if (enough)
			break;
		usleep(1000);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < NR; i++)
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);

	for (int i = 0; i < NR_BUGGY; i++) {
		ck_assert_uint_eq(args[i].bad, 0);
		ck_assert_uint_eq(args[i].refused, args[i].rounds);
		ck_assert_uint_gt(args[i].rounds, 0);
	}
	/*
	 * While a refusal is pending the pool looks full, so the lawful
	 * threads' reservations may all have failed on a loaded machine;
	 * their releases never may.  Once the refusals stop, the pool
	 * serves exactly as before.
	 */
	for (int i = NR_BUGGY; i < NR; i++)
		ck_assert_uint_eq(args[i].bad, 0);
	ck_assert_int_eq(srsv_space_reserve(md, 4 * KiB, SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_space_release(md, 4 * KiB), 0);
	capture(&after);
	assert_same(&before, &after, "racing refused releases");
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

/* ------------------------------------------------------------------ */
/* quota.h */

static bool same_quota(const struct srsv_quota_info *a,
		       const struct srsv_quota_info *b)
{
	for (int k = 0; k < SRSV_QUOTA_KIND_COUNT; k++)
		if (a->reserved[k] != b->reserved[k])
			return false;
	return a->id == b->id && a->limit == b->limit && a->used == b->used &&
	       a->charged == b->charged && a->flushes == b->flushes &&
	       a->flush_waits == b->flush_waits && a->edquot == b->edquot;
}

static struct srsv_quota_info qsnap(struct srsv_quota *q)
{
	struct srsv_quota_info info;

	memset(&info, 0, sizeof(info));
	ck_assert_int_eq(srsv_quota_snapshot(q, &info), 0);
	return info;
}

/* As BAD(), and tenant @q's figures are unchanged too. */
#define QBAD(q, call, err)						\
	do {								\
		struct srsv_quota_info qb_ = qsnap(q), qa_;		\
		BAD(call, err);						\
		qa_ = qsnap(q);						\
		ck_assert_msg(same_quota(&qb_, &qa_),			\
			      "%s changed the quota", #call);		\
	} while (0)

/* A tenant holding something of every kind: DATA 70K, META_PREALLOC 50K,
 * META_PERTRANS 20K, used 30K, limit 1 MiB. */
static struct srsv_quota *fixture_quota(uint64_t id)
{
	struct srsv_quota *q = NULL;

	ck_assert_int_eq(srsv_quota_create(sim->ctx, id, 1 * MiB, &q), 0);
	ck_assert_int_eq(srsv_quota_reserve(q, SRSV_QUOTA_DATA, 100 * KiB, 0),
			 0);
	ck_assert_int_eq(srsv_quota_reserve(q, SRSV_QUOTA_META_PREALLOC,
					    50 * KiB, 0), 0);
	ck_assert_int_eq(srsv_quota_reserve(q, SRSV_QUOTA_META_PERTRANS,
					    20 * KiB, 0), 0);
	ck_assert_int_eq(srsv_quota_charge_used(q, 30 * KiB), 0);
	return q;
}

START_TEST(test_quota_create_bad)
{
	struct srsv_quota *q = fixture_quota(7), *out = NULL;

	BAD(srsv_quota_create(NULL, 1, MiB, &out), -EINVAL);
	BAD(srsv_quota_create(sim->ctx, 1, MiB, NULL), -EINVAL);
	BAD(srsv_quota_create(sim->ctx, 1, MAXB + 1, &out), -EINVAL);
	BAD(srsv_quota_create(sim->ctx, 1, UINT64_MAX - 1, &out), -EINVAL);
	ck_assert_ptr_null(out);
	/* Nothing was created by the failures. */
	ck_assert_int_eq(srsv_quota_lookup(sim->ctx, 1, &out), -ENOENT);
	QBAD(q, srsv_quota_create(sim->ctx, 7, MiB, &out), -EEXIST);
	ck_assert_ptr_null(out);
	ck_assert_int_eq(srsv_quota_lookup(sim->ctx, 7, &out), 0);
	ck_assert_ptr_eq(out, q);
}
END_TEST

START_TEST(test_quota_destroy_bad)
{
	struct srsv_quota *q = fixture_quota(7), *out = NULL;

	BAD(srsv_quota_destroy(NULL), -EINVAL);
	QBAD(q, srsv_quota_destroy(q), -EBUSY);
	ck_assert_int_eq(srsv_quota_lookup(sim->ctx, 7, &out), 0);
	ck_assert_ptr_eq(out, q);
}
END_TEST

START_TEST(test_quota_lookup_bad)
{
	struct srsv_quota *q = fixture_quota(7), *out = NULL;

	QBAD(q, srsv_quota_lookup(NULL, 7, &out), -EINVAL);
	QBAD(q, srsv_quota_lookup(sim->ctx, 7, NULL), -EINVAL);
	QBAD(q, srsv_quota_lookup(sim->ctx, 8, &out), -ENOENT);
	ck_assert_ptr_null(out);
}
END_TEST

START_TEST(test_quota_set_limit_bad)
{
	struct srsv_quota *q = fixture_quota(7);

	BAD(srsv_quota_set_limit(NULL, MiB), -EINVAL);
	QBAD(q, srsv_quota_set_limit(q, MAXB + 1), -EINVAL);
	QBAD(q, srsv_quota_set_limit(q, UINT64_MAX - 1), -EINVAL);
}
END_TEST

START_TEST(test_quota_reserve_bad)
{
	struct srsv_quota *q = fixture_quota(7);
	struct srsv_quota_info i;

	BAD(srsv_quota_reserve(NULL, SRSV_QUOTA_DATA, 4 * KiB, 0), -EINVAL);
	QBAD(q, srsv_quota_reserve(q, (enum srsv_quota_kind)-1, 4 * KiB, 0),
	     -EINVAL);
	QBAD(q, srsv_quota_reserve(q, SRSV_QUOTA_KIND_COUNT, 4 * KiB, 0),
	     -EINVAL);
	QBAD(q, srsv_quota_reserve(q, SRSV_QUOTA_DATA, 4 * KiB, 1u << 5),
	     -EINVAL);
	QBAD(q, srsv_quota_reserve(q, SRSV_QUOTA_DATA, 4 * KiB, 1u << 17),
	     -EINVAL);
	QBAD(q, srsv_quota_reserve(q, SRSV_QUOTA_DATA, 4 * KiB, 1u << 31),
	     -EINVAL);
	QBAD(q, srsv_quota_reserve(q, SRSV_QUOTA_DATA, MAXB + 1, 0), -EINVAL);
	QBAD(q, srsv_quota_reserve(q, SRSV_QUOTA_DATA, UINT64_MAX, 0),
	     -EINVAL);
	/* 0 is a documented no-op. */
	QBAD(q, srsv_quota_reserve(q, SRSV_QUOTA_DATA, 0, 0), 0);

	/* Past the limit: the refusal is counted in edquot, nothing else
	 * changes. */
	i = qsnap(q);
	ck_assert_int_eq(srsv_quota_reserve(q, SRSV_QUOTA_DATA,
					    1 * MiB - i.charged + 1,
					    SRSV_QUOTA_NOFLUSH), -EDQUOT);
	ck_assert_int_eq(srsv_quota_reserve(q, SRSV_QUOTA_DATA, MAXB, 0),
			 -EDQUOT);	/* no quota flush callback */
	ck_assert_int_eq(srsv_quota_reserve(q, SRSV_QUOTA_META_PREALLOC,
					    1 * MiB, SRSV_RESERVE_NOWAIT),
			 -EAGAIN);
	{
		struct srsv_quota_info a = qsnap(q);

		ck_assert_uint_eq(a.edquot, i.edquot + 3);
		a.edquot = i.edquot;
		ck_assert_msg(same_quota(&i, &a), "refusal changed the quota");
	}
}
END_TEST

START_TEST(test_quota_release_bad)
{
	struct srsv_quota *q = fixture_quota(7);

	BAD(srsv_quota_release(NULL, SRSV_QUOTA_DATA, 4 * KiB), -EINVAL);
	QBAD(q, srsv_quota_release(q, (enum srsv_quota_kind)-1, 4 * KiB),
	     -EINVAL);
	QBAD(q, srsv_quota_release(q, SRSV_QUOTA_KIND_COUNT, 4 * KiB),
	     -EINVAL);
	QBAD(q, srsv_quota_release(q, SRSV_QUOTA_DATA, 70 * KiB + 1),
	     -EINVAL);
	QBAD(q, srsv_quota_release(q, SRSV_QUOTA_META_PREALLOC, 50 * KiB + 1),
	     -EINVAL);
	QBAD(q, srsv_quota_release(q, SRSV_QUOTA_META_PERTRANS, 20 * KiB + 1),
	     -EINVAL);
	QBAD(q, srsv_quota_release(q, SRSV_QUOTA_DATA, UINT64_MAX), -EINVAL);
	QBAD(q, srsv_quota_release(q, SRSV_QUOTA_DATA, 0), 0);	/* no-op */
}
END_TEST

START_TEST(test_quota_convert_bad)
{
	struct srsv_quota *q = fixture_quota(7);

	BAD(srsv_quota_convert(NULL, 4 * KiB), -EINVAL);
	QBAD(q, srsv_quota_convert(q, 50 * KiB + 1), -EINVAL);
	QBAD(q, srsv_quota_convert(q, UINT64_MAX), -EINVAL);
	QBAD(q, srsv_quota_convert(q, 0), 0);	/* no-op */
}
END_TEST

START_TEST(test_quota_commit_bad)
{
	struct srsv_quota *q = fixture_quota(7);
	uint64_t freed = 12345;

	QBAD(q, srsv_quota_commit(NULL, &freed), -EINVAL);
	QBAD(q, srsv_quota_commit(NULL, NULL), -EINVAL);
	QBAD(q, srsv_quota_commit_one(NULL, &freed), -EINVAL);
	QBAD(q, srsv_quota_commit_one(NULL, NULL), -EINVAL);
	ck_assert_uint_eq(freed, 12345);	/* untouched on failure */
}
END_TEST

START_TEST(test_quota_charge_free_used_bad)
{
	struct srsv_quota *q = fixture_quota(7);

	BAD(srsv_quota_charge_used(NULL, 4 * KiB), -EINVAL);
	QBAD(q, srsv_quota_charge_used(q, 70 * KiB + 1), -EINVAL);
	QBAD(q, srsv_quota_charge_used(q, UINT64_MAX), -EINVAL);
	QBAD(q, srsv_quota_charge_used(q, 0), 0);	/* no-op */
	BAD(srsv_quota_free_used(NULL, 4 * KiB), -EINVAL);
	QBAD(q, srsv_quota_free_used(q, 30 * KiB + 1), -EINVAL);
	QBAD(q, srsv_quota_free_used(q, UINT64_MAX), -EINVAL);
	QBAD(q, srsv_quota_free_used(q, 0), 0);		/* no-op */
}
END_TEST

START_TEST(test_quota_snapshot_id_ctx_bad)
{
	struct srsv_quota *q = fixture_quota(7);
	struct srsv_quota_info info;

	BAD(srsv_quota_snapshot(NULL, &info), -EINVAL);
	QBAD(q, srsv_quota_snapshot(q, NULL), -EINVAL);
	ck_assert_uint_eq(srsv_quota_id(NULL), 0);
	BAD_PTR(srsv_quota_ctx(NULL));
	ck_assert_uint_eq(srsv_quota_id(q), 7);
	ck_assert_ptr_eq(srsv_quota_ctx(q), sim->ctx);
	ck_assert_str_eq(srsv_quota_kind_name(-1), "unknown");
	ck_assert_str_eq(srsv_quota_kind_name(SRSV_QUOTA_KIND_COUNT),
			 "unknown");
	ck_assert_str_eq(srsv_quota_kind_name(SRSV_QUOTA_DATA), "data");
}
END_TEST

/* ------------------------------------------------------------------ */
/* delalloc.h */

START_TEST(test_delalloc_reserve_bad)
{
	struct srsv_quota *q = fixture_quota(7), *small = NULL, *foreign = NULL;
	struct esim *other = esim_setup(MANUAL, MiB, MiB, 0);
	struct srsv_delalloc_resv r;

	/* No limit on q: its failures below come from the pools. */
	ck_assert_int_eq(srsv_quota_set_limit(q, SRSV_QUOTA_NO_LIMIT), 0);

	ck_assert_int_eq(srsv_quota_create(other->ctx, 7, MiB, &foreign), 0);
	ck_assert_int_eq(srsv_quota_create(sim->ctx, 8, 1 * KiB, &small), 0);

	QBAD(q, srsv_delalloc_reserve(NULL, q, 4 * KiB, SRSV_DELALLOC_NORMAL,
				      &r), -EINVAL);
	QBAD(q, srsv_delalloc_reserve(sim->ctx, q, 4 * KiB,
				      SRSV_DELALLOC_NORMAL, NULL), -EINVAL);
	QBAD(q, srsv_delalloc_reserve(sim->ctx, q, 4 * KiB,
				      (enum srsv_delalloc_mode)-1, &r),
	     -EINVAL);
	QBAD(q, srsv_delalloc_reserve(sim->ctx, q, 4 * KiB,
				      SRSV_DELALLOC_MODE_COUNT, &r), -EINVAL);
	BAD(srsv_delalloc_reserve(sim->ctx, foreign, 4 * KiB,
				  SRSV_DELALLOC_NOFLUSH, &r), -EINVAL);
	QBAD(q, srsv_delalloc_reserve(sim->ctx, q, MAXB + 1,
				      SRSV_DELALLOC_NOWAIT, &r), -EINVAL);
	QBAD(q, srsv_delalloc_reserve(sim->ctx, q, UINT64_MAX,
				      SRSV_DELALLOC_NORMAL, &r), -EINVAL);
	/* More than the pools can give (1 MiB each). */
	QBAD(q, srsv_delalloc_reserve(sim->ctx, q, 2 * MiB,
				      SRSV_DELALLOC_NOFLUSH, &r), -ENOSPC);
	QBAD(q, srsv_delalloc_reserve(sim->ctx, NULL, 2 * MiB,
				      SRSV_DELALLOC_NOFLUSH, &r), -ENOSPC);
	QBAD(q, srsv_delalloc_reserve(sim->ctx, q, 2 * MiB,
				      SRSV_DELALLOC_NOWAIT, &r), -EAGAIN);
	/* Over the tenant's limit (1 KiB; no quota flush callback). */
	BAD(srsv_delalloc_reserve(sim->ctx, small, 4 * KiB,
				  SRSV_DELALLOC_NOFLUSH, &r), -EDQUOT);
	BAD(srsv_delalloc_reserve(sim->ctx, small, 4 * KiB,
				  SRSV_DELALLOC_NORMAL, &r), -EDQUOT);
	BAD(srsv_delalloc_reserve(sim->ctx, small, 4 * KiB,
				  SRSV_DELALLOC_NOWAIT, &r), -EAGAIN);
	{
		/* The refusals are counted in edquot (documented); the
		 * tenant holds nothing. */
		struct srsv_quota_info i = qsnap(small);

		ck_assert_uint_eq(i.charged, 0);
		ck_assert_uint_eq(i.edquot, 3);
	}
	esim_free(other);
}
END_TEST

START_TEST(test_delalloc_release_finish_bad)
{
	struct srsv_quota *q = fixture_quota(7);
	struct srsv_delalloc_resv zero, junk, r;

	memset(&zero, 0, sizeof(zero));
	memset(&junk, 0x5a, sizeof(junk));
	QBAD(q, srsv_delalloc_release(NULL), -EINVAL);
	QBAD(q, srsv_delalloc_release(&zero), -EINVAL);
	QBAD(q, srsv_delalloc_release(&junk), -EINVAL);
	QBAD(q, srsv_delalloc_finish(NULL, 0), -EINVAL);
	QBAD(q, srsv_delalloc_finish(&zero, 0), -EINVAL);
	QBAD(q, srsv_delalloc_finish(&junk, SRSV_DELALLOC_META_ALL), -EINVAL);

	/* meta_used above what was reserved: refused, resv still holds. */
	ck_assert_int_eq(srsv_delalloc_reserve(sim->ctx, q, 4 * KiB,
					       SRSV_DELALLOC_NOFLUSH, &r), 0);
	ck_assert_uint_gt(r.meta_bytes, 0);
	QBAD(q, srsv_delalloc_finish(&r, r.meta_bytes + 1), -EINVAL);
	QBAD(q, srsv_delalloc_finish(&r, SRSV_DELALLOC_META_ALL - 1),
	     -EINVAL);
	ck_assert_int_eq(srsv_delalloc_release(&r), 0);
	/* Already ended. */
	QBAD(q, srsv_delalloc_release(&r), -EINVAL);
	QBAD(q, srsv_delalloc_finish(&r, 0), -EINVAL);
}
END_TEST

START_TEST(test_delalloc_meta_cost_bad)
{
	uint64_t extents = 12345, cost = 12345;

	BAD(srsv_delalloc_meta_cost(NULL, 4 * KiB, &extents, &cost), -EINVAL);
	BAD(srsv_delalloc_meta_cost(sim->ctx, 4 * KiB, &extents, NULL),
	    -EINVAL);
	BAD(srsv_delalloc_meta_cost(sim->ctx, 4 * KiB, NULL, NULL), -EINVAL);
	ck_assert_uint_eq(extents, 12345);	/* untouched on failure */
	ck_assert_uint_eq(cost, 12345);
}
END_TEST

/* ------------------------------------------------------------------ */
/* zoned.h */

#define ZONE (16 * MiB)
#define NR_ZG 4

/* A second, zoned ctx: a data group with allocations (2 MiB written,
 * 2 MiB outstanding, active), an empty inactive data group, a full
 * finished data group, and a metadata group. */
static struct esim *zsim;
static struct srsv_zone_group *zg[NR_ZG];

struct zworld {
	struct srsv_space_info pool[3];
	struct srsv_zone_group_info group[NR_ZG];
	struct srsv_zoned_info z;
	uint64_t calls;
};

static void zcapture(struct zworld *w)
{
	static const enum srsv_pool kinds[3] = {
		SRSV_POOL_DATA, SRSV_POOL_METADATA, SRSV_POOL_SYSTEM,
	};

	memset(w, 0, sizeof(*w));
	for (int i = 0; i < 3; i++)
		w->pool[i] = esim_snap(esim_space(zsim, kinds[i]));
	for (int i = 0; i < NR_ZG; i++)
		ck_assert_int_eq(srsv_zone_group_info(zg[i], &w->group[i]), 0);
	ck_assert_int_eq(srsv_zoned_get_info(zsim->ctx, &w->z), 0);
	w->calls = esim_total_calls(zsim);
}

static bool same_group(const struct srsv_zone_group_info *a,
		       const struct srsv_zone_group_info *b)
{
	return a->start == b->start && a->length == b->length &&
	       a->capacity == b->capacity &&
	       a->alloc_offset == b->alloc_offset && a->used == b->used &&
	       a->reserved == b->reserved &&
	       a->zone_unusable == b->zone_unusable && a->kind == b->kind &&
	       a->pool == b->pool && a->active == b->active &&
	       a->open == b->open && a->busy == b->busy &&
	       a->dedicated == b->dedicated;
}

static void zassert_same(const struct zworld *a, const struct zworld *b,
			 const char *what)
{
	char why[1024];

	for (int i = 0; i < 3; i++)
		ck_assert_msg(esim_info_diff(&a->pool[i], &b->pool[i], why,
					     sizeof(why)) == 0,
			      "%s changed zoned pool %d: %s", what, i, why);
	for (int i = 0; i < NR_ZG; i++)
		ck_assert_msg(same_group(&a->group[i], &b->group[i]),
			      "%s changed zone group %d", what, i);
	ck_assert_msg(memcmp(&a->z, &b->z, sizeof(a->z)) == 0,
		      "%s changed the zoned info", what);
	ck_assert_msg(a->calls == b->calls, "%s called a callback", what);
}

/* @call returns @err and changes nothing in either ctx. */
#define ZBAD(call, err)							\
	do {								\
		struct zworld zb_, za_;					\
		zcapture(&zb_);						\
		BAD(call, err);						\
		zcapture(&za_);						\
		zassert_same(&zb_, &za_, #call);			\
	} while (0)

static void zsetup(void)
{
	struct srsv_config cfg;
	struct srsv_zoned_config zc;
	struct srsv_space *d;

	setup();
	zsim = esim_new();
	esim_config_init(zsim, &cfg, MANUAL | SRSV_CTX_ZONED);
	cfg.zone_bytes = ZONE;
	ck_assert_int_eq(esim_ctx_create(zsim, &cfg), 0);
	ck_assert_int_eq(srsv_zoned_config_init(&zc), 0);
	zc.max_active_zones = 5;	/* 2 data tokens: 5 - (2 + 1) */
	ck_assert_int_eq(srsv_zoned_init(zsim->ctx, &zc), 0);

	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(srsv_zone_group_add(zsim->ctx, SRSV_ZONE_DATA,
						     (uint64_t)(10 + i) * ZONE,
						     ZONE, ZONE - MiB,
						     &zg[i]), 0);
	ck_assert_int_eq(srsv_zone_group_add(zsim->ctx, SRSV_ZONE_METADATA,
					     20 * ZONE, ZONE, ZONE, &zg[3]),
			 0);
	d = esim_space(zsim, SRSV_POOL_DATA);
	/* zg[0]: active, 4 MiB allocated, 2 MiB of it written. */
	ck_assert_int_eq(srsv_zone_group_activate(zg[0]), 0);
	ck_assert_int_eq(srsv_space_reserve(d, 4 * MiB, SRSV_NO_FLUSH, 0), 0);
	ck_assert_int_eq(srsv_zone_group_alloc(zg[0], 4 * MiB, NULL), 0);
	ck_assert_int_eq(srsv_space_alloc(d, 4 * MiB), 0);
	ck_assert_int_eq(srsv_zone_group_written(zg[0], 2 * MiB), 0);
	ck_assert_int_eq(srsv_space_commit_used(d, 2 * MiB), 0);
	/* zg[2]: activated and finished empty-handed: full, inactive. */
	ck_assert_int_eq(srsv_zone_group_activate(zg[2]), 0);
	ck_assert_int_eq(srsv_zone_group_finish(zg[2]), 0);
	/* zg[1] (data) and zg[3] (metadata): empty, inactive. */
}

static void zteardown(void)
{
	esim_free(zsim);
	zsim = NULL;
	teardown();
}

START_TEST(test_zoned_config_init_bad)
{
	BAD(srsv_zoned_config_init(NULL), -EINVAL);
}
END_TEST

START_TEST(test_zoned_init_bad)
{
	struct srsv_zoned_config zc;
	struct {
		struct srsv_zoned_config c;
		unsigned char tail[64];
	} big;

	ck_assert_int_eq(srsv_zoned_config_init(&zc), 0);
	ZBAD(srsv_zoned_init(NULL, &zc), -EINVAL);
	ZBAD(srsv_zoned_init(zsim->ctx, NULL), -EINVAL);
	/* The fixture's ctx is not SRSV_CTX_ZONED. */
	ZBAD(srsv_zoned_init(sim->ctx, &zc), -EINVAL);
	ZBAD(srsv_zone_group_add(sim->ctx, SRSV_ZONE_DATA, 0, ZONE, ZONE,
				 NULL), -EINVAL);

	/* Bad configs, checked on a zoned ctx not yet zoned. */
	{
		struct esim *s2 = esim_new();
		struct srsv_config cfg;
		struct srsv_zoned_info zi;

		esim_config_init(s2, &cfg, MANUAL | SRSV_CTX_ZONED);
		cfg.zone_bytes = ZONE;
		ck_assert_int_eq(esim_ctx_create(s2, &cfg), 0);
#define ZINIT_BAD(...)							\
		do {							\
			ck_assert_int_eq(srsv_zoned_config_init(&zc), 0); \
			__VA_ARGS__;					\
			ck_assert_msg(srsv_zoned_init(s2->ctx, &zc) ==	\
				      -EINVAL, "%s accepted",		\
				      #__VA_ARGS__);			\
			ck_assert_int_eq(srsv_zoned_get_info(s2->ctx,	\
							     &zi),	\
					 -EINVAL);			\
		} while (0)
		ZINIT_BAD(zc.size = 0);
		ZINIT_BAD(zc.size = sizeof(zc) - 1);
		ZINIT_BAD(zc.reclaim_threshold_pct = 0);
		ZINIT_BAD(zc.reclaim_threshold_pct = 101);
		ZINIT_BAD(zc.max_active_zones = 3);	/* 2 + 1 reserved */
		ZINIT_BAD(zc.max_active_zones = 1);
#undef ZINIT_BAD
		/* A newer caller's larger struct with unknown fields set. */
		memset(&big, 0, sizeof(big));
		ck_assert_int_eq(srsv_zoned_config_init(&big.c), 0);
		big.c.size = sizeof(big);
		big.tail[3] = 1;
		ck_assert_int_eq(srsv_zoned_init(s2->ctx, &big.c), -EINVAL);
		ck_assert_int_eq(srsv_zoned_get_info(s2->ctx, &zi), -EINVAL);
		ck_assert_uint_eq(esim_total_calls(s2), 0);
		esim_free(s2);
	}

	/* Already zoned. */
	ck_assert_int_eq(srsv_zoned_config_init(&zc), 0);
	ZBAD(srsv_zoned_init(zsim->ctx, &zc), -EALREADY);
}
END_TEST

START_TEST(test_zone_group_add_bad)
{
	struct srsv_zone_group *out = NULL;

	ZBAD(srsv_zone_group_add(NULL, SRSV_ZONE_DATA, 0, ZONE, ZONE, &out),
	     -EINVAL);
	ZBAD(srsv_zone_group_add(zsim->ctx, (enum srsv_zone_kind)-1, 0, ZONE,
				 ZONE, &out), -EINVAL);
	ZBAD(srsv_zone_group_add(zsim->ctx, SRSV_ZONE_KIND_COUNT, 0, ZONE,
				 ZONE, &out), -EINVAL);
	ZBAD(srsv_zone_group_add(zsim->ctx, SRSV_ZONE_DATA, 0, 0, 0, &out),
	     -EINVAL);
	ZBAD(srsv_zone_group_add(zsim->ctx, SRSV_ZONE_DATA, 0, ZONE, 0, &out),
	     -EINVAL);
	ZBAD(srsv_zone_group_add(zsim->ctx, SRSV_ZONE_DATA, 0, ZONE, ZONE + 1,
				 &out), -EINVAL);
	/* Overlaps: exact, from below, from above, covering. */
	ZBAD(srsv_zone_group_add(zsim->ctx, SRSV_ZONE_DATA, 10 * ZONE, ZONE,
				 ZONE, &out), -EINVAL);
	ZBAD(srsv_zone_group_add(zsim->ctx, SRSV_ZONE_DATA, 10 * ZONE - MiB,
				 ZONE, ZONE, &out), -EINVAL);
	ZBAD(srsv_zone_group_add(zsim->ctx, SRSV_ZONE_METADATA,
				 21 * ZONE - MiB, ZONE, ZONE, &out), -EINVAL);
	ZBAD(srsv_zone_group_add(zsim->ctx, SRSV_ZONE_DATA, 9 * ZONE,
				 5 * ZONE, 5 * ZONE, &out), -EINVAL);
	/* A range that wraps. */
	ZBAD(srsv_zone_group_add(zsim->ctx, SRSV_ZONE_DATA, UINT64_MAX - MiB,
				 ZONE, ZONE, &out), -EINVAL);
	/* The data pool (3 zones) would pass SRSV_MAX_BYTES. */
	ZBAD(srsv_zone_group_add(zsim->ctx, SRSV_ZONE_DATA, 100 * ZONE,
				 MAXB, ZONE, &out), -EINVAL);
	ck_assert_ptr_null(out);
}
END_TEST

START_TEST(test_zone_group_activate_bad)
{
	ZBAD(srsv_zone_group_activate(NULL), -EINVAL);
	/* Full (finished): must be reset first. */
	ZBAD(srsv_zone_group_activate(zg[2]), -ENOSPC);
	/* Data may take only the 2 unreserved tokens: one is zg[0]'s; a
	 * finished group gives its back, another data group takes it. */
	ck_assert_int_eq(srsv_zone_group_activate(zg[1]), 0);
	ck_assert_int_eq(srsv_zone_group_finish(zg[1]), 0);
	{
		struct srsv_zone_group *extra = NULL;

		ck_assert_int_eq(srsv_zone_group_add(zsim->ctx,
						     SRSV_ZONE_DATA,
						     30 * ZONE, ZONE, ZONE,
						     &extra), 0);
		ck_assert_int_eq(srsv_zone_group_activate(extra), 0);
		ZBAD(srsv_zone_group_activate(zg[1]), -ENOSPC);
		/* zg[0] and extra hold both data tokens. */
		{
			struct srsv_zone_group *more = NULL;

			ck_assert_int_eq(srsv_zone_group_add(zsim->ctx,
						SRSV_ZONE_DATA, 31 * ZONE,
						ZONE, ZONE, &more), 0);
			ZBAD(srsv_zone_group_activate(more), -EBUSY);
		}
	}
}
END_TEST

START_TEST(test_zone_group_finish_bad)
{
	ZBAD(srsv_zone_group_finish(NULL), -EINVAL);
	/* Not active: empty (zg[1]) or already finished (zg[2]). */
	ZBAD(srsv_zone_group_finish(zg[1]), -EALREADY);
	ZBAD(srsv_zone_group_finish(zg[2]), -EALREADY);
	/* 2 MiB allocated and not written. */
	ZBAD(srsv_zone_group_finish(zg[0]), -EBUSY);
}
END_TEST

START_TEST(test_zoned_finish_one_bad)
{
	struct srsv_zone_group *fin = NULL;

	ZBAD(srsv_zoned_finish_one(NULL, &fin), -EINVAL);
	ZBAD(srsv_zoned_finish_one(sim->ctx, &fin), -EINVAL);
	/* The only active data group has outstanding allocations. */
	ZBAD(srsv_zoned_finish_one(zsim->ctx, &fin), -EBUSY);
	ck_assert_ptr_null(fin);
	/* Once written, it can be finished; then none is left. */
	ck_assert_int_eq(srsv_zone_group_written(zg[0], 2 * MiB), 0);
	ck_assert_int_eq(srsv_space_commit_used(esim_space(zsim,
						SRSV_POOL_DATA), 2 * MiB), 0);
	ck_assert_int_eq(srsv_zoned_finish_one(zsim->ctx, &fin), 0);
	ck_assert_ptr_eq(fin, zg[0]);
	fin = NULL;
	ZBAD(srsv_zoned_finish_one(zsim->ctx, &fin), -ENOENT);
	ck_assert_ptr_null(fin);
}
END_TEST

START_TEST(test_zone_hint_bad)
{
	struct srsv_zone_group *out = NULL;

	ZBAD(srsv_zone_hint(NULL, SRSV_ZONE_DATA, MiB, &out), -EINVAL);
	ZBAD(srsv_zone_hint(sim->ctx, SRSV_ZONE_DATA, MiB, &out), -EINVAL);
	ZBAD(srsv_zone_hint(zsim->ctx, SRSV_ZONE_DATA, MiB, NULL), -EINVAL);
	ZBAD(srsv_zone_hint(zsim->ctx, (enum srsv_zone_kind)-1, MiB, &out),
	     -EINVAL);
	ZBAD(srsv_zone_hint(zsim->ctx, SRSV_ZONE_KIND_COUNT, MiB, &out),
	     -EINVAL);
	ZBAD(srsv_zone_hint(zsim->ctx, SRSV_ZONE_DATA, 0, &out), -EINVAL);
	ZBAD(srsv_zone_hint(zsim->ctx, SRSV_ZONE_DATA, MAXB + 1, &out),
	     -EINVAL);
	ck_assert_ptr_null(out);
	/* No active group with room: counted as a hint call, nothing
	 * else changes. */
	{
		struct zworld b, a;

		zcapture(&b);
		ck_assert_int_eq(srsv_zone_hint(zsim->ctx, SRSV_ZONE_DATA,
						ZONE, &out), -ENOSPC);
		ck_assert_int_eq(srsv_zone_hint(zsim->ctx,
						SRSV_ZONE_METADATA, MiB,
						&out), -ENOSPC);
		zcapture(&a);
		ck_assert_uint_eq(a.z.hints, b.z.hints + 2);
		a.z.hints = b.z.hints;
		a.z.hint_groups_looked = b.z.hint_groups_looked;
		zassert_same(&b, &a, "srsv_zone_hint() -ENOSPC");
		ck_assert_ptr_null(out);
	}
}
END_TEST

START_TEST(test_zone_group_alloc_bad)
{
	uint64_t logical = 12345;

	ZBAD(srsv_zone_group_alloc(NULL, MiB, &logical), -EINVAL);
	ZBAD(srsv_zone_group_alloc(zg[0], 0, &logical), -EINVAL);
	ZBAD(srsv_zone_group_alloc(zg[0], MAXB + 1, &logical), -EINVAL);
	ZBAD(srsv_zone_group_alloc(zg[0], UINT64_MAX, &logical), -EINVAL);
	/* Room is capacity - 4 MiB. */
	ZBAD(srsv_zone_group_alloc(zg[0], ZONE - 5 * MiB + 1, &logical),
	     -ENOSPC);
	/* Not active: empty, and full. */
	ZBAD(srsv_zone_group_alloc(zg[1], MiB, &logical), -ENOSPC);
	ZBAD(srsv_zone_group_alloc(zg[2], MiB, &logical), -ENOSPC);
	ck_assert_uint_eq(logical, 12345);	/* untouched on failure */
}
END_TEST

/* written, abandon and free: bytes out of a group counter. */
START_TEST(test_zone_group_written_abandon_free_bad)
{
	ZBAD(srsv_zone_group_written(NULL, MiB), -EINVAL);
	ZBAD(srsv_zone_group_written(zg[0], 0), -EINVAL);
	ZBAD(srsv_zone_group_written(zg[0], 2 * MiB + 1), -EINVAL);
	ZBAD(srsv_zone_group_written(zg[0], UINT64_MAX), -EINVAL);
	ZBAD(srsv_zone_group_written(zg[1], MiB), -EINVAL);

	ZBAD(srsv_zone_group_abandon(NULL, MiB), -EINVAL);
	ZBAD(srsv_zone_group_abandon(zg[0], 0), -EINVAL);
	ZBAD(srsv_zone_group_abandon(zg[0], 2 * MiB + 1), -EINVAL);
	ZBAD(srsv_zone_group_abandon(zg[0], UINT64_MAX), -EINVAL);
	ZBAD(srsv_zone_group_abandon(zg[1], MiB), -EINVAL);

	ZBAD(srsv_zone_group_free(NULL, MiB), -EINVAL);
	ZBAD(srsv_zone_group_free(zg[0], 0), -EINVAL);
	ZBAD(srsv_zone_group_free(zg[0], 2 * MiB + 1), -EINVAL);
	ZBAD(srsv_zone_group_free(zg[0], UINT64_MAX), -EINVAL);
	ZBAD(srsv_zone_group_free(zg[1], MiB), -EINVAL);

	/* The group holds enough, its pool does not (moved elsewhere):
	 * refused, neither changed. */
	ck_assert_int_eq(srsv_space_free_reserved(esim_space(zsim,
						  SRSV_POOL_DATA), 2 * MiB),
			 0);
	ck_assert_int_eq(srsv_space_pin(esim_space(zsim, SRSV_POOL_DATA),
					2 * MiB), 0);
	ZBAD(srsv_zone_group_abandon(zg[0], MiB), -EINVAL);
	ZBAD(srsv_zone_group_free(zg[0], MiB), -EINVAL);
}
END_TEST

START_TEST(test_zone_info_bad)
{
	struct srsv_zone_group_info gi;
	struct srsv_zoned_info zi;

	ZBAD(srsv_zone_group_info(NULL, &gi), -EINVAL);
	ZBAD(srsv_zone_group_info(zg[0], NULL), -EINVAL);
	ZBAD(srsv_zoned_get_info(NULL, &zi), -EINVAL);
	ZBAD(srsv_zoned_get_info(zsim->ctx, NULL), -EINVAL);
	ZBAD(srsv_zoned_get_info(sim->ctx, &zi), -EINVAL);
	/* No error return: NULL is a precondition; the value is right. */
	ck_assert_uint_eq(srsv_zone_group_room(zg[0]), ZONE - 5 * MiB);
	ck_assert_uint_eq(srsv_zone_group_room(zg[2]), 0);
	ck_assert_str_eq(srsv_zone_kind_name(-1), "unknown");
	ck_assert_str_eq(srsv_zone_kind_name(SRSV_ZONE_KIND_COUNT),
			 "unknown");
	ck_assert_str_eq(srsv_zone_kind_name(SRSV_ZONE_TREELOG), "treelog");
}
END_TEST

/* ------------------------------------------------------------------ */
/* debug.h */

START_TEST(test_debug_lock_stats_bad)
{
	struct srsv_lock_stats st;
	/* -ENOTSUP for every call when built without debug_locks. */
	int want = srsv_debug_lock_stats_reset() == -ENOTSUP ? -ENOTSUP
							     : -EINVAL;

	BAD(srsv_debug_lock_stats(NULL), want);
	if (want == -ENOTSUP)
		BAD(srsv_debug_lock_stats(&st), -ENOTSUP);
	else
		BAD(srsv_debug_lock_stats(&st), 0);
}
END_TEST

static Suite *badinput_suite(void)
{
	Suite *s = suite_create("badinput");
	TCase *ctx = tcase_create("ctx");
	TCase *space = tcase_create("space");
	TCase *rsv = tcase_create("rsv");
	TCase *quota = tcase_create("quota");
	TCase *delalloc = tcase_create("delalloc");
	TCase *zoned = tcase_create("zoned");
	TCase *debug = tcase_create("debug");
	TCase *all[] = { ctx, space, rsv, quota, delalloc, debug };

	for (int i = 0; i < 6; i++)
		tcase_add_checked_fixture(all[i], setup, teardown);

	tcase_add_test(ctx, test_config_init_bad);
	tcase_add_test(ctx, test_config_older_layout);
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
	tcase_add_test(space, test_space_release_refused_races);
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

	tcase_add_test(quota, test_quota_create_bad);
	tcase_add_test(quota, test_quota_destroy_bad);
	tcase_add_test(quota, test_quota_lookup_bad);
	tcase_add_test(quota, test_quota_set_limit_bad);
	tcase_add_test(quota, test_quota_reserve_bad);
	tcase_add_test(quota, test_quota_release_bad);
	tcase_add_test(quota, test_quota_convert_bad);
	tcase_add_test(quota, test_quota_commit_bad);
	tcase_add_test(quota, test_quota_charge_free_used_bad);
	tcase_add_test(quota, test_quota_snapshot_id_ctx_bad);
	suite_add_tcase(s, quota);

	tcase_add_test(delalloc, test_delalloc_reserve_bad);
	tcase_add_test(delalloc, test_delalloc_release_finish_bad);
	tcase_add_test(delalloc, test_delalloc_meta_cost_bad);
	suite_add_tcase(s, delalloc);

	tcase_add_checked_fixture(zoned, zsetup, zteardown);
	tcase_add_test(zoned, test_zoned_config_init_bad);
	tcase_add_test(zoned, test_zoned_init_bad);
	tcase_add_test(zoned, test_zone_group_add_bad);
	tcase_add_test(zoned, test_zone_group_activate_bad);
	tcase_add_test(zoned, test_zone_group_finish_bad);
	tcase_add_test(zoned, test_zoned_finish_one_bad);
	tcase_add_test(zoned, test_zone_hint_bad);
	tcase_add_test(zoned, test_zone_group_alloc_bad);
	tcase_add_test(zoned, test_zone_group_written_abandon_free_bad);
	tcase_add_test(zoned, test_zone_info_bad);
	suite_add_tcase(s, zoned);

	tcase_add_test(debug, test_debug_lock_stats_bad);
	suite_add_tcase(s, debug);
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
