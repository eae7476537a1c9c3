/* SPDX-License-Identifier: MIT */
/*
 * trace_scenarios: scripted scenarios for the trace suite.
 *
 * run-trace.sh records an LTTng session around this program, then
 * check_trace.py reads the trace back and checks, scenario by scenario,
 * that the library emitted the events each decision point owes.  This
 * program does the reserving and checks every API answer; it prints what the
 * checker needs to find its events (one line per scenario, keys=values):
 *
 *     SCENARIO <name> ctx=0x... [more keys]
 *     SNAPSHOT <name> ctx=0x... total=... may_use=... clamp=... ...
 *
 * Each scenario has its own ctx, and every ctx stays alive until the end,
 * so that no two scenarios share a ctx address (the trace identifies a pool
 * by ctx address and pool kind).  Every ctx is in manual mode: the library
 * starts no thread and all reclaim runs here, in srsv_ctx_run_pending(), so
 * the order of events is deterministic.
 *
 * Exit status: 0 when every API call answered as expected, 1 otherwise
 * (with a FAIL line on stderr).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libspacersv/spacersv.h>
#if SRSV_TEST_HAVE_ZONED
#include <libspacersv/zoned.h>
#endif
#if SRSV_TEST_HAVE_QUOTA
#include <libspacersv/quota.h>
#endif

#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

/*
 * Upper bound on srsv_ctx_run_pending() rounds before a scenario gives up:
 * one round normally settles a ticket (the async walk runs to the end); the
 * bound only turns a library that never settles into a failure instead of
 * a hang.
 */
#define MAX_ROUNDS 64

#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__,	\
				__LINE__, #cond);			\
			exit(1);					\
		}							\
	} while (0)

#define CHECK_RC(expr, want)						\
	do {								\
		int rc_ = (expr);					\
		if (rc_ != (want)) {					\
			fprintf(stderr, "FAIL %s:%d: %s = %d (%s), "	\
				"expected %d\n", __FILE__, __LINE__,	\
				#expr, rc_, strerror(rc_ < 0 ? -rc_ : rc_), \
				(want));				\
			exit(1);					\
		}							\
	} while (0)

/* The simulated engine behind one ctx. */
struct engine {
	/* may_use the engine holds and may give back when asked to flush */
	uint64_t held;
	/* Give space back when flushed (false: flushing frees nothing). */
	bool gives_back;
	/* Also report the given-back bytes as written-back dirty data. */
	bool is_delalloc;
	struct srsv_ctx *ctx;
	unsigned calls;
};

static int flush_cb(struct srsv_space *space, enum srsv_flush_state state,
		    uint64_t bytes, bool for_preempt, void *user)
{
	struct engine *e = user;
	uint64_t n;

	(void)for_preempt;
	e->calls++;
	/* Nothing to grow from: the ALLOC_CHUNK rules mark the pool full. */
	if (state == SRSV_STATE_ALLOC_CHUNK ||
	    state == SRSV_STATE_ALLOC_CHUNK_FORCE)
		return -ENOSPC;
	if (!e->gives_back || !e->held)
		return 0;
	n = bytes ? bytes : MIB;
	if (n > e->held)
		n = e->held;
	if (srsv_space_release(space, n))
		return -EIO;
	e->held -= n;
	if (e->is_delalloc &&
	    srsv_ctx_account_delalloc(e->ctx, -(int64_t)n, 0))
		return -EIO;
	return 0;
}

/* The ctxs of every scenario, destroyed at the end (distinct addresses). */
static struct srsv_ctx *ctxs[16];
static unsigned nr_ctxs;

static struct srsv_ctx *make_ctx(struct engine *e, unsigned flags,
				 uint64_t metadata_bytes)
{
	struct srsv_config cfg;
	struct srsv_ctx *ctx;

	CHECK_RC(srsv_config_init(&cfg), 0);
	cfg.flags = SRSV_CTX_MANUAL | SRSV_CTX_MANUAL_WAIT | flags;
	cfg.flush = flush_cb;
	cfg.user = e;
	cfg.pool_bytes[SRSV_POOL_DATA] = 64 * MIB;
	cfg.pool_bytes[SRSV_POOL_METADATA] = metadata_bytes;
	cfg.pool_bytes[SRSV_POOL_SYSTEM] = 8 * MIB;
	/*
	 * No unallocated device space: metadata cannot overcommit, so a pool
	 * reserved to its total is full and the next reservation waits.
	 */
	cfg.unallocated_bytes = 0;
	CHECK_RC(srsv_ctx_create(&cfg, &ctx), 0);
	CHECK(nr_ctxs < sizeof(ctxs) / sizeof(ctxs[0]));
	ctxs[nr_ctxs++] = ctx;
	e->ctx = ctx;
	return ctx;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void print_snapshot(const char *name, struct srsv_ctx *ctx,
			   struct srsv_space *s)
{
	struct srsv_space_info i;

	CHECK_RC(srsv_space_snapshot(s, &i, NULL, 0, NULL), 0);
	printf("SNAPSHOT %s ctx=%#" PRIxPTR " pool=%s total=%" PRIu64
	       " used=%" PRIu64 " pinned=%" PRIu64 " reserved=%" PRIu64
	       " may_use=%" PRIu64 " readonly=%" PRIu64
	       " zone_unusable=%" PRIu64 " reclaim_size=%" PRIu64
	       " clamp=%u global_reserved=%" PRIu64 " trans_reserved=%" PRIu64
	       " delayed_refs_reserved=%" PRIu64 " delayed_reserved=%" PRIu64
	       " unallocated=%" PRIu64 " delalloc=%" PRIu64
	       " ordered=%" PRIu64 " preempt_runs=%" PRIu64
	       " tickets_granted=%" PRIu64 " tickets_failed=%" PRIu64 "\n",
	       name, (uintptr_t)ctx, srsv_pool_name(i.kind), i.total, i.used,
	       i.pinned, i.reserved, i.may_use, i.readonly, i.zone_unusable,
	       i.reclaim_size, i.clamp, i.global_rsv_reserved,
	       i.trans_rsv_reserved, i.delayed_refs_rsv_reserved,
	       i.delayed_rsv_reserved, i.unallocated, i.delalloc_bytes,
	       i.ordered_bytes, i.preempt_runs, i.tickets_granted,
	       i.tickets_failed);
}

/*
 * Fill the metadata pool to its total with a NO_FLUSH reservation the
 * engine holds, so that the next FLUSH_ALL reservation queues a ticket.
 */
static struct srsv_space *fill_metadata(struct engine *e, uint64_t bytes)
{
	struct srsv_space *md = srsv_ctx_space(e->ctx, SRSV_POOL_METADATA);

	CHECK(md != NULL);
	CHECK_RC(srsv_space_reserve(md, bytes, SRSV_NO_FLUSH, 0), 0);
	e->held += bytes;
	return md;
}

/* Run the pending reclaim until @t settles; return its result. */
static int settle(struct srsv_ctx *ctx, struct srsv_ticket *t)
{
	int ret = -EINPROGRESS;

	for (unsigned i = 0; i < MAX_ROUNDS && ret == -EINPROGRESS; i++) {
		CHECK(srsv_ctx_run_pending(ctx) >= 0);
		ret = srsv_ticket_wait(t, 0);
	}
	return ret;
}

/*
 * granted: a FLUSH_ALL ticket queues on a full pool, the async flusher
 * (run here) asks the engine to flush, the engine gives space back and the
 * ticket is granted.  Expected: ticket_add, trigger_flush(enospc),
 * flush_space(for_preempt=0), ticket_end(error 0, wait_ns > 0).
 */
static void scenario_granted(void)
{
	static struct engine e;
	struct srsv_ticket t;
	struct srsv_ctx *ctx = make_ctx(&e, SRSV_CTX_NO_PREEMPT, 64 * MIB);
	struct srsv_space *md = fill_metadata(&e, 64 * MIB);

	CHECK_RC(srsv_ticket_reserve(md, &t, MIB, SRSV_FLUSH_ALL, 0),
		 -EINPROGRESS);
	CHECK_RC(srsv_ticket_wait(&t, 0), -EINPROGRESS);
	/* Not a timing assertion: only makes the queued time plainly > 0. */
	sleep_ms(1);
	e.gives_back = true;
	CHECK_RC(settle(ctx, &t), 0);
	CHECK_RC(srsv_space_release(md, MIB), 0);
	printf("SCENARIO granted ctx=%#" PRIxPTR " bytes=%" PRIu64 "\n",
	       (uintptr_t)ctx, MIB);
}

/*
 * burst: 20000 reserve/release pairs as fast as one thread goes.  Every
 * reservation is a reserve event; may_use's counter events are sampled,
 * at most one per millisecond of the burst (trace-lttng.h).
 */
static void scenario_burst(void)
{
	static struct engine e;
	struct srsv_ctx *ctx = make_ctx(&e, SRSV_CTX_NO_PREEMPT, 64 * MIB);
	struct srsv_space *md = srsv_ctx_space(ctx, SRSV_POOL_METADATA);

	for (int i = 0; i < 20000; i++) {
		CHECK_RC(srsv_space_reserve(md, 4096, SRSV_FLUSH_ALL, 0), 0);
		CHECK_RC(srsv_space_release(md, 4096), 0);
	}
	printf("SCENARIO burst ctx=%#" PRIxPTR " n=20000\n", (uintptr_t)ctx);
}

/*
 * refused: a release of more than the pool lent and a pin of bytes not
 * used are refused with -EINVAL, then an rsv released past its size and a
 * tenant's release of data it never reserved.  Expected: one "refused"
 * event each (kind release, 2 MiB; kind pin, 4 KiB; kind rsv_release on
 * the metadata pool, 128 KiB; kind quota_release on the data pool, 4 KiB),
 * nothing changed.
 */
static void scenario_refused(void)
{
	static struct engine e;
	struct srsv_ctx *ctx = make_ctx(&e, SRSV_CTX_NO_PREEMPT, 64 * MIB);
	struct srsv_space *md = srsv_ctx_space(ctx, SRSV_POOL_METADATA);
	struct srsv_quota *q = NULL;
	struct srsv_rsv rsv;

	CHECK_RC(srsv_space_reserve(md, MIB, SRSV_NO_FLUSH, 0), 0);
	CHECK_RC(srsv_space_release(md, 2 * MIB), -EINVAL);
	CHECK_RC(srsv_space_pin(md, 4096), -EINVAL);
	CHECK_RC(srsv_space_release(md, MIB), 0);
	CHECK_RC(srsv_rsv_init(&rsv, md, SRSV_RSV_TEMP), 0);
	CHECK_RC(srsv_rsv_add(&rsv, 64 * 1024, SRSV_NO_FLUSH, 0), 0);
	CHECK_RC(srsv_rsv_release(&rsv, 128 * 1024, NULL), -EINVAL);
	CHECK_RC(srsv_rsv_destroy(&rsv), 0);
	CHECK_RC(srsv_quota_create(ctx, 9, SRSV_QUOTA_NO_LIMIT, &q), 0);
	CHECK_RC(srsv_quota_release(q, SRSV_QUOTA_DATA, 4096), -EINVAL);
	printf("SCENARIO refused ctx=%#" PRIxPTR "\n", (uintptr_t)ctx);
}

/*
 * timeout: a ticket nobody serves (the pending flush is never run) times
 * out.  Expected: ticket_add, then ticket_end(error -ETIMEDOUT).
 */
static void scenario_timeout(void)
{
	static struct engine e;
	struct srsv_ticket t;
	struct srsv_ctx *ctx = make_ctx(&e, SRSV_CTX_NO_PREEMPT, 64 * MIB);
	struct srsv_space *md = fill_metadata(&e, 64 * MIB);

	CHECK_RC(srsv_ticket_reserve(md, &t, 2 * MIB, SRSV_FLUSH_ALL, 0),
		 -EINPROGRESS);
	/* 5 ms: long enough to be a real wait, short for the suite. */
	CHECK_RC(srsv_ticket_wait(&t, 5 * 1000 * 1000), -ETIMEDOUT);
	printf("SCENARIO timeout ctx=%#" PRIxPTR " bytes=%" PRIu64 "\n",
	       (uintptr_t)ctx, 2 * MIB);
}

/*
 * preempt: 600 MiB of a 1 GiB metadata pool reserved for dirty data
 * (delalloc reported to the ctx) is past the preemptive threshold
 * (half the free space at clamp 1), so the reservation queues a preemptive
 * run.  Run here, it flushes DELALLOC (for_preempt=1); the engine writes
 * back what it is asked, and the run ends with done_preemptive_reclaim.
 * The snapshot taken right after must equal that dump: in manual mode
 * nothing else runs in between.
 */
static void scenario_preempt(void)
{
	static struct engine e;
	struct srsv_ctx *ctx = make_ctx(&e, 0, GIB);
	struct srsv_space *md = srsv_ctx_space(ctx, SRSV_POOL_METADATA);
	const uint64_t bytes = 600 * MIB;
	int ran;

	CHECK(md != NULL);
	CHECK_RC(srsv_ctx_account_delalloc(ctx, (int64_t)bytes, 0), 0);
	CHECK_RC(srsv_space_reserve(md, bytes, SRSV_FLUSH_ALL, 0), 0);
	e.held = bytes;
	e.gives_back = true;
	e.is_delalloc = true;
	ran = srsv_ctx_run_pending(ctx);
	CHECK(ran >= 1);
	print_snapshot("preempt", ctx, md);
	printf("SCENARIO preempt ctx=%#" PRIxPTR " run_pending=%d calls=%u\n",
	       (uintptr_t)ctx, ran, e.calls);
	CHECK(e.calls >= 1);
}

/*
 * fail_all: a ticket on a full pool whose engine can free nothing: the
 * async flusher walks its states, makes no progress, and fails every
 * ticket with -ENOSPC.  Expected: flush_space events, fail_all_tickets
 * (dump), ticket_end(error -ENOSPC).
 */
static void scenario_fail_all(void)
{
	static struct engine e;
	struct srsv_ticket t;
	struct srsv_ctx *ctx = make_ctx(&e, SRSV_CTX_NO_PREEMPT, 64 * MIB);
	struct srsv_space *md = fill_metadata(&e, 64 * MIB);

	e.gives_back = false;
	CHECK_RC(srsv_ticket_reserve(md, &t, 4 * MIB, SRSV_FLUSH_ALL, 0),
		 -EINPROGRESS);
	CHECK_RC(settle(ctx, &t), -ENOSPC);
	print_snapshot("fail_all", ctx, md);
	printf("SCENARIO fail_all ctx=%#" PRIxPTR " bytes=%" PRIu64
	       " calls=%u\n", (uintptr_t)ctx, 4 * MIB, e.calls);
}

/*
 * rsv: a caller-owned temporary rsv: add, use, release.  Expected: rsv
 * events for that rsv address, with their op names and results.
 */
static void scenario_rsv(void)
{
	static struct engine e;
	struct srsv_rsv r;
	struct srsv_ctx *ctx = make_ctx(&e, SRSV_CTX_NO_PREEMPT, 64 * MIB);
	struct srsv_space *md = srsv_ctx_space(ctx, SRSV_POOL_METADATA);

	CHECK_RC(srsv_rsv_init(&r, md, SRSV_RSV_TEMP), 0);
	CHECK_RC(srsv_rsv_add(&r, 2 * MIB, SRSV_FLUSH_ALL, 0), 0);
	CHECK_RC(srsv_rsv_use(&r, MIB), 0);
	CHECK_RC(srsv_rsv_use(&r, 4 * MIB), -ENOSPC);
	CHECK_RC(srsv_space_release(md, MIB), 0);
	CHECK_RC(srsv_rsv_release(&r, SRSV_RSV_ALL, NULL), 0);
	printf("SCENARIO rsv ctx=%#" PRIxPTR " rsv=%#" PRIxPTR "\n",
	       (uintptr_t)ctx, (uintptr_t)&r);
	CHECK_RC(srsv_rsv_destroy(&r), 0);
}

/*
 * nowait: a NOWAIT reservation that fits is granted; once the pool is
 * full, two NOWAIT reservations are refused with -EAGAIN (never -ENOSPC),
 * and a NO_FLUSH one without the flag gets -ENOSPC.  Expected: reserve
 * events with flags 0x1: one ret 0, two ret -EAGAIN (1 MiB each); one
 * with flags 0 and -ENOSPC.
 */
static void scenario_nowait(void)
{
	static struct engine e;
	struct srsv_ctx *ctx = make_ctx(&e, SRSV_CTX_NO_PREEMPT, 64 * MIB);
	struct srsv_space *md = srsv_ctx_space(ctx, SRSV_POOL_METADATA);

	CHECK(md != NULL);
	CHECK_RC(srsv_space_reserve(md, MIB, SRSV_NO_FLUSH,
				    SRSV_RESERVE_NOWAIT), 0);
	CHECK_RC(srsv_space_reserve(md, 63 * MIB, SRSV_NO_FLUSH, 0), 0);
	CHECK_RC(srsv_space_reserve(md, MIB, SRSV_NO_FLUSH,
				    SRSV_RESERVE_NOWAIT), -EAGAIN);
	CHECK_RC(srsv_space_reserve(md, MIB, SRSV_NO_FLUSH,
				    SRSV_RESERVE_NOWAIT), -EAGAIN);
	CHECK_RC(srsv_space_reserve(md, MIB, SRSV_NO_FLUSH, 0), -ENOSPC);
	CHECK_RC(srsv_space_release(md, 64 * MIB), 0);
	printf("SCENARIO nowait ctx=%#" PRIxPTR " bytes=%" PRIu64 "\n",
	       (uintptr_t)ctx, MIB);
}

#if SRSV_TEST_HAVE_QUOTA
/*
 * quota: tenant 4242 with a 2 MiB limit: 1 MiB of data is granted, 2 MiB
 * more is refused with -EDQUOT (NOFLUSH) and, NOWAIT, with -EAGAIN, 512 KiB
 * are given back, the other 512 KiB are written (used) and then deleted.
 */
static void scenario_quota(void)
{
	static struct engine e;
	struct srsv_quota *q;
	struct srsv_ctx *ctx = make_ctx(&e, SRSV_CTX_NO_PREEMPT, 64 * MIB);

	CHECK_RC(srsv_quota_create(ctx, 4242, 2 * MIB, &q), 0);
	CHECK_RC(srsv_quota_reserve(q, SRSV_QUOTA_DATA, MIB, 0), 0);
	CHECK_RC(srsv_quota_reserve(q, SRSV_QUOTA_DATA, 2 * MIB,
				    SRSV_QUOTA_NOFLUSH), -EDQUOT);
	CHECK_RC(srsv_quota_reserve(q, SRSV_QUOTA_DATA, 2 * MIB,
				    SRSV_RESERVE_NOWAIT), -EAGAIN);
	CHECK_RC(srsv_quota_release(q, SRSV_QUOTA_DATA, MIB / 2), 0);
	CHECK_RC(srsv_quota_charge_used(q, MIB / 2), 0);
	CHECK_RC(srsv_quota_free_used(q, MIB / 2), 0);
	printf("SCENARIO quota ctx=%#" PRIxPTR " id=4242\n", (uintptr_t)ctx);
}
#endif

/*
 * bgroup: three 1 GiB data chunks.  A falls below the 50% threshold
 * (add_reclaim_block_group), is taken (reclaim_block_group, 400 MiB to
 * move), relocated in transaction 1 and done (add_unused_block_group); B
 * is emptied at once, C in transaction 2 (add_unused_block_group each).
 * The commit of 1 returns A and B (remove_block_group) and keeps C, whose
 * freed bytes are still pinned (skip_unused_block_group).
 */
static void scenario_bgroup(void)
{
	static struct engine e;
	const uint64_t a = 100 * GIB, b = 101 * GIB, c = 102 * GIB;
	struct srsv_bgroup_config bc;
	struct srsv_bgroup_info t;
	struct srsv_ctx *ctx = make_ctx(&e, SRSV_CTX_NO_PREEMPT, 64 * MIB);

	CHECK_RC(srsv_bgroup_config_init(&bc), 0);
	bc.dynamic_reclaim = false;
	bc.periodic_reclaim = false;
	bc.reclaim_threshold_pct = 50;
	CHECK_RC(srsv_bgroups_init(ctx, &bc), 0);
	CHECK_RC(srsv_ctx_set_unallocated(ctx, 4 * GIB), 0);
	CHECK_RC(srsv_bgroup_add(ctx, SRSV_POOL_DATA, a, GIB), 0);
	CHECK_RC(srsv_bgroup_add(ctx, SRSV_POOL_DATA, b, GIB), 0);
	CHECK_RC(srsv_bgroup_add(ctx, SRSV_POOL_DATA, c, GIB), 0);
	CHECK_RC(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, a, 600 * MIB), 0);
	CHECK_RC(srsv_bgroup_free(ctx, SRSV_POOL_DATA, a, 200 * MIB, 0), 0);
	CHECK_RC(srsv_bgroup_reclaim_take(ctx, &t), 0);
	CHECK(t.start == a);
	CHECK_RC(srsv_bgroup_free(ctx, SRSV_POOL_DATA, a, 400 * MIB, 1), 0);
	CHECK_RC(srsv_bgroup_reclaim_done(ctx, a, 0), 0);
	CHECK_RC(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, b, MIB), 0);
	CHECK_RC(srsv_bgroup_free(ctx, SRSV_POOL_DATA, b, MIB, 0), 0);
	CHECK_RC(srsv_bgroup_alloc(ctx, SRSV_POOL_DATA, c, MIB), 0);
	CHECK_RC(srsv_bgroup_free(ctx, SRSV_POOL_DATA, c, MIB, 2), 0);
	CHECK_RC(srsv_ctx_commit_done(ctx, 1), 2);
	printf("SCENARIO bgroup ctx=%#" PRIxPTR " a=%#" PRIx64 " b=%#" PRIx64
	       " c=%#" PRIx64 " moved=%" PRIu64 "\n", (uintptr_t)ctx, a, b, c,
	       400 * MIB);
}

#if SRSV_TEST_HAVE_ZONED
/*
 * zoned: two active 256 MiB data zone groups, the first with 1 MiB of room
 * left: the hint for 4 MiB skips it and picks the second.  Then the first
 * (its allocation written) is finished, wasting its last 1 MiB.
 */
static void scenario_zoned(void)
{
	static struct engine e;
	const uint64_t zone = 256 * MIB;
	struct srsv_zoned_config zcfg;
	struct srsv_zone_group *g1, *g2, *hint;
	struct srsv_ctx *ctx = make_ctx(&e, SRSV_CTX_NO_PREEMPT |
					    SRSV_CTX_ZONED, 64 * MIB);

	CHECK_RC(srsv_zoned_config_init(&zcfg), 0);
	CHECK_RC(srsv_zoned_init(ctx, &zcfg), 0);
	CHECK_RC(srsv_zone_group_add(ctx, SRSV_ZONE_DATA, 16 * zone, zone,
				     zone, &g1), 0);
	CHECK_RC(srsv_zone_group_add(ctx, SRSV_ZONE_DATA, 17 * zone, zone,
				     zone, &g2), 0);
	CHECK_RC(srsv_zone_group_activate(g1), 0);
	CHECK_RC(srsv_zone_group_activate(g2), 0);
	CHECK_RC(srsv_zone_group_alloc(g1, zone - MIB, NULL), 0);
	CHECK_RC(srsv_zone_hint(ctx, SRSV_ZONE_DATA, 4 * MIB, &hint), 0);
	CHECK(hint == g2);
	CHECK_RC(srsv_zone_group_written(g1, zone - MIB), 0);
	CHECK_RC(srsv_zone_group_finish(g1), 0);
	printf("SCENARIO zoned ctx=%#" PRIxPTR " g1=%#" PRIx64 " g2=%#" PRIx64
	       " bytes=%" PRIu64 " wasted=%" PRIu64 "\n", (uintptr_t)ctx,
	       16 * zone, 17 * zone, 4 * MIB, MIB);
}
#endif

int main(void)
{
	/* Lines must reach the harness even if a later scenario crashes. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("PID %ld\n", (long)getpid());
	scenario_granted();
	scenario_burst();
	scenario_refused();
	scenario_timeout();
	scenario_preempt();
	scenario_fail_all();
	scenario_rsv();
	scenario_nowait();
	scenario_bgroup();
#if SRSV_TEST_HAVE_QUOTA
	scenario_quota();
#endif
#if SRSV_TEST_HAVE_ZONED
	scenario_zoned();
#endif
	for (unsigned i = 0; i < nr_ctxs; i++)
		srsv_ctx_destroy(ctxs[i]);
	printf("DONE\n");
	return 0;
}
