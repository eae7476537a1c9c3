/* SPDX-License-Identifier: MIT */
/*
 * fuzz_api: libFuzzer harness that checks libspacersv against the reference
 * model (tests/model.h) after every call.
 *
 * HOW AN INPUT IS READ
 *
 * The bytes are a program.  The first ones configure a MANUAL ctx (pool
 * sizes, unallocated space, global reserve, overcommit profile, mixed or
 * zoned, now and then an overriding flush-state array or a bad value) and
 * the engine's script: what the flush callback does for each flush state
 * (unpin, give back held bytes, grow the pool from unallocated space, free
 * allocations, re-enter the library, set an engine error, fail with an
 * errno, ...), what the quota flush and the zone callbacks return.  With
 * block groups (a flag bit; never on a zoned ctx, whose table holds its
 * zones) srsv_bgroups_init() is called with a configuration from the input,
 * data chunks are a few MiB, and the engine mostly grows pools by adding
 * groups (ALLOC_CHUNK), reports its commits (COMMIT_TRANS:
 * srsv_ctx_commit_done()) and relocates candidates (RECLAIM_CHUNKS: take,
 * find_free, alloc, free, done).  Another flag bit gives the pools
 * movers' reserves and makes a quarter of the reservations a mover's
 * (SRSV_RESERVE_MOVER); another sets SRSV_CTX_NO_DATA_PREEMPT.  The rest
 * is a sequence of up to MAX_OPS calls, one opcode and its arguments
 * each, over every public function of the pools, tickets, block
 * reservations, quotas, zones and block groups, with sizes that are
 * mostly sensible and sometimes 0, huge, wrapped negative numbers,
 * unknown modes, kinds and flags.  When the bytes run out they read as zeros and the program ends.
 *
 * HOW IT IS CHECKED
 *
 * The same call is made on the library and on the model, each with its own
 * copy of the engine (the callbacks act on the side that called them).
 * After every call: the same return code and out-parameters, the same
 * callback calls (pool, state, hint) in the same order, the same results
 * of the calls the engine made from inside its callbacks, and the same
 * state: every pool's srsv_space_snapshot() (counters, flags, statistics,
 * the queued tickets in order), every block reservation, every quota,
 * every zone group and the zoned summary, every block group
 * (srsv_bgroup_next() over the table), the block-group statistics, each
 * pool's reclaim threshold, and srsv_ctx_statfs().  The first difference aborts
 * with a description, which libFuzzer records as a crash.
 *
 * A MANUAL ctx has no worker thread: a waiter runs the walk that serves
 * its normal ticket in its own thread, and waits for ever only when no
 * such walk is pending (the ticket was queued while the pool's walk ran,
 * which only a flush callback could do, and it cannot).  Before a call
 * that may block (a flushing reserve, an rsv add or refill, a partial
 * reservation, a ticket wait without deadline) the model is asked first,
 * on a copy; if it says the call would block, the call is skipped.  If
 * the model is wrong and the library blocks, libFuzzer's -timeout reports
 * the hang.
 *
 * KNOWN DISAGREEMENTS
 *
 * Inputs that reach a disagreement already reported are steered away from
 * it, so that a long run keeps exploring instead of finding the same bug
 * again.  Open ones (the library's to fix; tests/test_fuzz_findings.c
 * reduces each to a few calls, in the meson suite 'pending') are steered
 * by default: build with -DFUZZ_KNOWN_BUGS to turn that off and check a
 * fix, then delete the switch.  Fixed since, their switches kept as
 * regression points (FUZZ_STEER_KNOWN_BUGS steers them again):
 * - KB_CLAMP_NOT_DATA: a normal ticket that starts the async flusher of a
 *   SYSTEM pool, or of a DATA pool on a ctx with SRSV_CTX_NO_DATA_PREEMPT,
 *   raises the library's clamp even when ordered >= delalloc (the library
 *   applies its data-pool rule to every pool that is not metadata); the
 *   steering leaves those pools' clamp out of the comparison (nothing
 *   reads it: the fuzzer's ctx has no preemptive flushing).
 * - KB_MANUAL_WAIT_MIXED: a waiter on a MIXED pool runs the async work of
 *   its ticket's mode only (data for FLUSH_DATA, metadata otherwise),
 *   while the pool's one normal queue is served by the walk of the kind
 *   its first ticket started: the waiter waits for ever.  The steering
 *   (struct model::wait_own_kind) makes the model answer "blocks" there
 *   too, so the call is skipped.
 * - KB_RECLAIMABLE_WRAP: srsv_space_set_reclaimable() figures that add up
 *   past 2^64 (four states at SRSV_MAX_BYTES) wrap the library's sum, so
 *   srsv_space_info::reclaimable (and the data pool's debt) reads small;
 *   the model saturates.  The steering skips a call that would pass 2^64.
 * - KB_RECLAIM_TIE_POOLS: srsv_bgroup_reclaim_take() among candidates
 *   with the same used bytes in different pools takes the lowest pool
 *   kind's (a candidate list per pool, walked in kind order); btrfs's one
 *   reclaim list, sorted stably, gives the one marked first.  The
 *   steering (struct model::bg_tie_by_pool) makes the model choose as the
 *   library does.  Still open (the library's choice is documented in
 *   tests/test_fuzz_findings.c).
 * KB_CLAMP_NOT_DATA, KB_MANUAL_WAIT_MIXED and KB_RECLAIMABLE_WRAP are
 * fixed: the clamp takes btrfs's rule but for a data pool flushed by its
 * debt, a manual waiter runs whichever walk is pending, the reported sum
 * saturates.  The three found earlier (an all-skipped async metadata array,
 * use_fallback on a DATA pool, waiting on a ticket whose reserve got a
 * NULL pool) are fixed in the library; their switches stay as regression
 * points (define FUZZ_STEER_KNOWN_BUGS to steer them).
 *
 * To read a finding: FUZZ_TRACE=1 in the environment prints each op as it
 * runs (and the model's block-group figures after it), and a mismatch prints the failing op's callback calls on both
 * sides.
 *
 * Build with -Dfuzzing=true (clang); tests/fuzz/run-fuzz.sh runs it.  The
 * same file built with -DFUZZ_REPLAY has a main() that replays corpus
 * files: the unit suite replays the committed corpus with any compiler.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libspacersv/spacersv.h>

#include "../model.h"

#ifdef FUZZ_STEER_KNOWN_BUGS
#define KB_SKIPPED_ARRAY 1
#define KB_FALLBACK_DATA 1
#define KB_NULL_TICKET_WAIT 1
#define KB_CLAMP_NOT_DATA 1
#define KB_MANUAL_WAIT_MIXED 1
#define KB_RECLAIMABLE_WRAP 1
#else
#define KB_SKIPPED_ARRAY 0
#define KB_FALLBACK_DATA 0
#define KB_NULL_TICKET_WAIT 0
#define KB_CLAMP_NOT_DATA 0
#define KB_MANUAL_WAIT_MIXED 0
#define KB_RECLAIMABLE_WRAP 0
#endif

/* Open disagreements: steered away from unless -DFUZZ_KNOWN_BUGS; each
 * switch can also be set on its own (-DKB_CLAMP_NOT_DATA=0). */
#ifdef FUZZ_KNOWN_BUGS
#define KB_OPEN 0
#else
#define KB_OPEN 1
#endif
#ifndef KB_RECLAIM_TIE_POOLS
#define KB_RECLAIM_TIE_POOLS KB_OPEN
#endif

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)

/* Calls one input makes: enough to fill pools, queue tickets and walk. */
#define MAX_OPS 256
/*
 * Flush callback calls one input may make.  Every walk is bounded by the
 * library, but a forced growth of a few bytes at a time against a large
 * ticket takes as many calls as the ticket has bytes: past this many
 * calls the engine does nothing (and ALLOC_CHUNK* says the device is
 * full), which ends every walk quickly.
 */
#define CALL_CAP 400
/* Results of the calls the engine makes inside its callbacks, per op. */
#define INNER_LOG 1024

#define NSLOTS MODEL_TICKETS
#define NUSER MODEL_USER_RSVS
#define NQUOTAS MODEL_QUOTAS
#define NGROUPS MODEL_GROUPS
/* Block groups an input may create (the model holds MODEL_BGROUPS). */
#define BG_CAP (MODEL_BGROUPS - 8)
/* Candidates the engine's RECLAIM_CHUNKS takes in one call at most. */
#define RELOCATE_MAX 16

enum side { LIB = 0, MDL = 1 };

/* What the engine does when asked for a flush state. */
enum engine_op {
	EO_NOP = 0,
	EO_UNPIN,		/* unpin min(arg, pinned) */
	EO_RELEASE,		/* give back min(arg, held) of may_use */
	EO_GROW,		/* grow by arg from unallocated, -ENOSPC if short */
	EO_FREE_RESERVED,	/* free min(arg, reserved) */
	EO_REENTER_NOFLUSH,	/* reserve arg NO_FLUSH, release on success */
	EO_REENTER_FLUSH,	/* reserve arg flushing: -EDEADLK if it waits */
	EO_RSV_RELEASE,		/* release arg of the size of DELOPS/DELREFS */
	EO_QUOTA_COMMIT,	/* srsv_quota_commit() */
	EO_SET_ERROR,		/* srsv_ctx_set_error(-EIO) */
	EO_NESTED,		/* run_pending and shutdown: -EDEADLK */
	EO_BG_ADD,		/* a block group of arg bytes (ALLOC_CHUNK) */
	EO_BG_COMMIT,		/* srsv_ctx_commit_done() of its transaction */
	EO_BG_RELOCATE,		/* take candidates, move their used bytes */
	EO_COUNT
};

struct action {
	int op;
	uint64_t arg;
	int ret;		/* what the callback returns (unless the op
				 * itself answers, e.g. GROW's -ENOSPC) */
};

struct script {
	struct action state[SRSV_STATE_COUNT];
	int quota_ret;		/* quota flush callback's result */
	int reset_ret;		/* zone reset callback's result */
};

/* One side's engine: what it holds, how often it was called, and the
 * results of the calls it made. */
struct engine {
	uint64_t held[SRSV_POOL_COUNT];
	uint64_t trans;		/* its running transaction (block groups) */
	uint64_t next_addr;	/* where its next block group goes */
	uint64_t calls;
	int inner[INNER_LOG];
	size_t ninner;
};

struct lib_call {
	int pool, state;
	uint64_t bytes;
};

static struct {
	const uint8_t *p;
	size_t n;
	unsigned opno;
	const char *opname;
	/* The pool whose snapshot is being compared, or -1 (for the
	 * message of a mismatch). */
	int cmp_pool;
	/* The ctx has movers' reserves: reservations may be a mover's. */
	bool movers;
	struct script script;

	/* The library side. */
	struct srsv_ctx *ctx;
	struct srsv_ticket tickets[NSLOTS];
	struct srsv_rsv user_rsv[NUSER];
	struct srsv_quota *quotas[NQUOTAS];
	struct srsv_zone_group *groups[NGROUPS];
	struct engine eng[2];
	struct lib_call log[MODEL_LOG];
	size_t log_len;
	uint64_t log_total;

	/* The model side, and a copy for "would it block?". */
	struct model m, backup;
	struct engine backup_eng;
} F;

/* ---- reading the input ---- */

static uint8_t rd8(void)
{
	if (!F.n)
		return 0;
	F.n--;
	return *F.p++;
}

static uint64_t rd64(void)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | rd8();
	return v;
}

/* Sizes: mostly whole 4 KiB blocks of a few MiB pools, sometimes bad. */
static uint64_t rd_size(void)
{
	static const uint64_t special[] = {
		0, 1, SRSV_MAX_BYTES, SRSV_MAX_BYTES + 1, UINT64_MAX,
		(uint64_t)-4096, UINT64_C(1) << 63, SRSV_MAX_BYTES - 1,
	};
	uint8_t sel = rd8();

	switch (sel >> 5) {
	case 0:
	case 1:
	case 2:
		return (uint64_t)(rd8() % 64 + 1) * 4 * KiB;
	case 3:
		return (uint64_t)(rd8() % 64 + 1) * 64 * KiB;
	case 4:
		return (uint64_t)rd8() + 1;
	case 5:
		return (uint64_t)(rd8() % 16 + 1) * MiB;
	case 6:
		return special[sel % 8];
	default:
		return rd64();
	}
}

/* A size no larger than @have most of the time (the caller's own bytes). */
static uint64_t rd_part(uint64_t have)
{
	uint8_t sel = rd8();

	if (sel < 200 && have)
		return 1 + rd64() % have;
	return rd_size();
}

static int rd_mode(void)
{
	uint8_t b = rd8();

	if (b == 0xff)
		return -1;
	return b % (SRSV_FLUSH_MODE_COUNT + 2);
}

static unsigned rd_flags(void)
{
	uint8_t b = rd8();

	if (b < 200) {
		unsigned flags = b % 4 == 0 ? SRSV_RESERVE_NOWAIT : 0;

		/* With movers: a quarter of the reservations are a mover's,
		 * an eighth a NOWAIT mover's. */
		if (F.movers && (b % 4 == 1 || b % 8 == 4))
			flags |= SRSV_RESERVE_MOVER;
		return flags;
	}
	return b;	/* unknown bits: -EINVAL */
}

/* A pool kind; SRSV_POOL_COUNT means "NULL". */
static int rd_pool(void)
{
	return rd8() % (SRSV_POOL_COUNT + 1);
}

static int rd_errno(void)
{
	static const int errs[] = { 0, 0, 0, -EOPNOTSUPP, -ENOSPC, -EIO };

	return errs[rd8() % 6];
}

/* ---- failing ---- */

static void fail(int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fuzz_api: mismatch at op %u (%s), harness line %d: ",
		F.opno, F.opname ? F.opname : "setup", line);
	if (F.cmp_pool >= 0)
		fprintf(stderr, "pool %d: ", F.cmp_pool);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	/* The op's callback calls on both sides: most findings show there. */
	for (size_t i = 0; i < F.log_len || i < F.m.log_len; i++) {
		fprintf(stderr, "  callback %zu:", i);
		if (i < F.log_len)
			fprintf(stderr, " library pool %d state %d bytes %llu",
				F.log[i].pool, F.log[i].state,
				(unsigned long long)F.log[i].bytes);
		if (i < F.m.log_len)
			fprintf(stderr, " | model pool %d state %d bytes %llu",
				F.m.log[i].pool, F.m.log[i].state,
				(unsigned long long)F.m.log[i].bytes);
		fputc('\n', stderr);
	}
	abort();
}

#define EQ(what, a, b)							\
	do {								\
		unsigned long long a_ = (unsigned long long)(a);	\
		unsigned long long b_ = (unsigned long long)(b);	\
		if (a_ != b_)						\
			fail(__LINE__, "%s: library %lld, model %lld",	\
			     what, (long long)a_, (long long)b_);	\
	} while (0)

/* ---- the two sides' views ---- */

static struct srsv_space *lib_space(int pool)
{
	if (pool < 0 || pool >= SRSV_POOL_COUNT)
		return NULL;
	return srsv_ctx_space(F.ctx, (enum srsv_pool)pool);
}

static int mdl_pool(int pool)
{
	return model_space_of(&F.m, pool);
}

static struct srsv_space_info lib_info(int pool)
{
	struct srsv_space_info info;

	if (srsv_space_snapshot(lib_space(pool), &info, NULL, 0, NULL))
		fail(__LINE__, "snapshot of pool %d failed", pool);
	return info;
}

static uint64_t side_pinned(enum side s, int pool)
{
	return s == LIB ? lib_info(pool).pinned : F.m.pools[mdl_pool(pool)].pinned;
}

static uint64_t side_reserved(enum side s, int pool)
{
	return s == LIB ? lib_info(pool).reserved :
			  F.m.pools[mdl_pool(pool)].reserved;
}

static uint64_t side_unallocated(enum side s)
{
	return s == LIB ? srsv_ctx_unallocated(F.ctx) : F.m.unallocated;
}

static void inner(enum side s, int ret)
{
	struct engine *e = &F.eng[s];

	if (e->ninner < INNER_LOG)
		e->inner[e->ninner++] = ret;
}

static int side_reserve(enum side s, int pool, uint64_t bytes, int mode,
			unsigned flags)
{
	return s == LIB ? srsv_space_reserve(lib_space(pool), bytes,
					     (enum srsv_flush)mode, flags) :
			  model_space_reserve(&F.m, mdl_pool(pool), bytes, mode,
					      flags);
}

static int side_release(enum side s, int pool, uint64_t bytes)
{
	return s == LIB ? srsv_space_release(lib_space(pool), bytes) :
			  model_space_release(&F.m, mdl_pool(pool), bytes);
}

/* ---- block groups, on either side (pool: a kind as the library takes
 * it; the model gets the kind it maps to) ---- */

static int side_bg_add(enum side s, int pool, uint64_t start, uint64_t length)
{
	return s == LIB ? srsv_bgroup_add(F.ctx, (enum srsv_pool)pool, start,
					  length) :
			  model_bgroup_add(&F.m, mdl_pool(pool), start, length);
}

static int side_bg_alloc(enum side s, int pool, uint64_t at, uint64_t bytes)
{
	return s == LIB ? srsv_bgroup_alloc(F.ctx, (enum srsv_pool)pool, at,
					    bytes) :
			  model_bgroup_alloc(&F.m, mdl_pool(pool), at, bytes);
}

static int side_bg_free(enum side s, int pool, uint64_t at, uint64_t bytes,
			uint64_t transid)
{
	return s == LIB ? srsv_bgroup_free(F.ctx, (enum srsv_pool)pool, at,
					   bytes, transid) :
			  model_bgroup_free(&F.m, mdl_pool(pool), at, bytes,
					    transid);
}

static int side_commit_done(enum side s, uint64_t transid)
{
	return s == LIB ? srsv_ctx_commit_done(F.ctx, transid) :
			  model_ctx_commit_done(&F.m, transid);
}

static int side_bg_take(enum side s, struct srsv_bgroup_info *info)
{
	return s == LIB ? srsv_bgroup_reclaim_take(F.ctx, info) :
			  model_bgroup_reclaim_take(&F.m, info);
}

static int side_bg_done(enum side s, uint64_t start, int result)
{
	return s == LIB ? srsv_bgroup_reclaim_done(F.ctx, start, result) :
			  model_bgroup_reclaim_done(&F.m, start, result);
}

static int side_bg_find_free(enum side s, int pool, uint64_t bytes,
			     uint64_t *start)
{
	return s == LIB ? srsv_bgroup_find_free(F.ctx, (enum srsv_pool)pool,
						bytes, start) :
			  model_bgroup_find_free(&F.m, mdl_pool(pool), bytes,
						 start);
}

static uint64_t side_bg_count(enum side s)
{
	struct srsv_bgroup_stats st;

	if (s == MDL)
		return F.m.nr_bgs;
	return srsv_bgroup_stats(F.ctx, &st) ? 0 : st.nr_groups;
}

/*
 * The engine's RECLAIM_CHUNKS: take each candidate, copy its used bytes
 * into the lowest group with room (find_free + alloc), free the old copy
 * in its running transaction, and end the reclaim (0, or find_free's
 * error when nothing had room).  Everything it sees goes to the inner log.
 */
static void engine_relocate(enum side s)
{
	struct engine *e = &F.eng[s];

	for (int n = 0; n < RELOCATE_MAX; n++) {
		struct srsv_bgroup_info t;
		uint64_t to = 0;
		int r = side_bg_take(s, &t), ret = 0;

		inner(s, r);
		if (r)
			return;
		inner(s, (int)(t.start >> 12));
		inner(s, (int)(t.used >> 12));
		if (t.used) {
			ret = side_bg_find_free(s, t.pool, t.used, &to);
			inner(s, ret);
		}
		if (t.used && !ret) {
			inner(s, (int)(to >> 12));
			inner(s, side_bg_alloc(s, t.pool, to, t.used));
			inner(s, side_bg_free(s, t.pool, t.start, t.used,
					      e->trans));
		}
		inner(s, side_bg_done(s, t.start, ret));
	}
}

/* The engine's reaction to @state in @pool (a pool kind as the library
 * reports it: MIXED in a mixed ctx). */
static int engine_act(enum side s, int pool, int state)
{
	struct engine *e = &F.eng[s];
	const struct action *a = &F.script.state[state];
	bool chunk = state == SRSV_STATE_ALLOC_CHUNK ||
		     state == SRSV_STATE_ALLOC_CHUNK_FORCE;
	uint64_t n;
	int ret = a->ret, r;

	if (++e->calls > CALL_CAP)
		return chunk ? -ENOSPC : 0;
	switch (a->op) {
	case EO_UNPIN:
		n = side_pinned(s, pool);
		n = n < a->arg ? n : a->arg;
		if (n)
			inner(s, s == LIB ? srsv_space_unpin(lib_space(pool), n) :
				 model_space_unpin(&F.m, pool, n));
		break;
	case EO_RELEASE:
		n = e->held[pool] < a->arg ? e->held[pool] : a->arg;
		if (n) {
			r = side_release(s, pool, n);
			inner(s, r);
			if (!r)
				e->held[pool] -= n;
		}
		break;
	case EO_GROW:
		if (side_unallocated(s) < a->arg) {
			ret = -ENOSPC;
			break;
		}
		r = s == LIB ? srsv_space_grow(lib_space(pool), a->arg) :
			       model_space_grow(&F.m, pool, a->arg);
		inner(s, r);
		if (!r) {
			n = side_unallocated(s) - a->arg;
			inner(s, s == LIB ? srsv_ctx_set_unallocated(F.ctx, n) :
				 model_ctx_set_unallocated(&F.m, n));
		}
		break;
	case EO_FREE_RESERVED:
		n = side_reserved(s, pool);
		n = n < a->arg ? n : a->arg;
		if (n)
			inner(s, s == LIB ?
			      srsv_space_free_reserved(lib_space(pool), n) :
			      model_space_free_reserved(&F.m, pool, n));
		break;
	case EO_REENTER_NOFLUSH:
	case EO_REENTER_FLUSH: {
		bool data = pool == SRSV_POOL_DATA;
		int mode = a->op == EO_REENTER_NOFLUSH ? SRSV_NO_FLUSH :
			   data ? SRSV_FLUSH_DATA : SRSV_FLUSH_ALL;
		/* A cleaner's output, written from the callback: the
		 * movers' reserve serves it without waiting. */
		unsigned flags = F.movers && (a->arg >> 13 & 1) ?
				 SRSV_RESERVE_MOVER : 0;

		r = side_reserve(s, pool, a->arg, mode, flags);
		inner(s, r);
		if (!r)
			inner(s, side_release(s, pool, a->arg));
		break;
	}
	case EO_RSV_RELEASE: {
		int type = state <= SRSV_STATE_DELAYED_ITEMS ? SRSV_RSV_DELOPS :
			   SRSV_RSV_DELREFS;
		uint64_t rel = 0;
		struct srsv_rsv_info info;

		if (s == LIB) {
			struct srsv_rsv *rsv = srsv_ctx_rsv(F.ctx,
						(enum srsv_rsv_type)type);

			if (srsv_rsv_get_info(rsv, &info))
				info.size = 0;
			n = info.size < a->arg ? info.size : a->arg;
			inner(s, srsv_rsv_release(rsv, n, &rel));
		} else {
			n = F.m.rsvs[type].size < a->arg ? F.m.rsvs[type].size :
							   a->arg;
			inner(s, model_rsv_release(&F.m, type, n, &rel));
		}
		inner(s, (int)(rel & 0x7fffffff));
		break;
	}
	case EO_QUOTA_COMMIT: {
		uint64_t freed = 0;

		inner(s, s == LIB ? srsv_quota_commit(F.ctx, &freed) :
			 model_quota_commit(&F.m, &freed));
		inner(s, (int)(freed & 0x7fffffff));
		break;
	}
	case EO_SET_ERROR:
		inner(s, s == LIB ? srsv_ctx_set_error(F.ctx, -EIO) :
			 model_ctx_set_error(&F.m, -EIO));
		/* Now and then the engine recovers at once: the tickets
		 * failed, the walk goes on with whatever is queued after. */
		if (a->arg >> 12 & 1)
			inner(s, s == LIB ? srsv_ctx_clear_error(F.ctx) :
				 model_ctx_clear_error(&F.m));
		break;
	case EO_NESTED:
		inner(s, s == LIB ? srsv_ctx_run_pending(F.ctx) :
			 model_ctx_run_pending(&F.m));
		inner(s, s == LIB ? srsv_ctx_shutdown(F.ctx) :
			 model_ctx_shutdown(&F.m));
		break;
	case EO_BG_ADD:
		/* A chunk from unallocated space, as ALLOC_CHUNK does. */
		if (side_bg_count(s) >= BG_CAP) {
			ret = -ENOSPC;
			break;
		}
		r = side_bg_add(s, pool, e->next_addr, a->arg);
		inner(s, r);
		if (!r)
			e->next_addr += a->arg;
		else if (r == -ENOSPC)
			ret = -ENOSPC;
		break;
	case EO_BG_COMMIT:
		r = side_commit_done(s, e->trans);
		inner(s, r);
		if (r >= 0)
			e->trans++;
		break;
	case EO_BG_RELOCATE:
		engine_relocate(s);
		break;
	default:
		break;
	}
	return ret;
}

static int lib_flush(struct srsv_space *space, enum srsv_flush_state state,
		     uint64_t bytes, bool for_preempt, void *user)
{
	int pool = srsv_space_kind(space);

	(void)user;
	if (for_preempt)
		fail(__LINE__, "preemptive flush on a NO_PREEMPT ctx");
	if (F.log_len < MODEL_LOG) {
		F.log[F.log_len].pool = pool;
		F.log[F.log_len].state = (int)state;
		F.log[F.log_len].bytes = bytes;
		F.log_len++;
	}
	F.log_total++;
	return engine_act(LIB, pool, (int)state);
}

static int mdl_flush(struct model *m, int pool, int state, uint64_t bytes,
		     void *user)
{
	(void)m;
	(void)bytes;
	(void)user;
	return engine_act(MDL, pool, state);
}

/* The quota flush commits the running transaction, as btrfs's does. */
static int quota_flush_common(enum side s)
{
	uint64_t freed = 0;

	inner(s, s == LIB ? srsv_quota_commit(F.ctx, &freed) :
		 model_quota_commit(&F.m, &freed));
	inner(s, (int)(freed & 0x7fffffff));
	return F.script.quota_ret;
}

static int lib_quota_flush(struct srsv_quota *q, void *user)
{
	(void)q;
	(void)user;
	return quota_flush_common(LIB);
}

static int mdl_quota_flush(struct model *m, int q, void *user)
{
	(void)m;
	(void)q;
	(void)user;
	return quota_flush_common(MDL);
}

static int group_index(struct srsv_zone_group *g)
{
	for (int i = 0; i < NGROUPS; i++)
		if (F.groups[i] == g)
			return i;
	fail(__LINE__, "zone callback for an unknown group");
	return -1;
}

static int lib_zone_reset(struct srsv_zone_group *g, void *user)
{
	(void)user;
	inner(LIB, group_index(g));
	return F.script.reset_ret;
}

static int mdl_zone_reset(struct model *m, int g, void *user)
{
	(void)m;
	(void)user;
	inner(MDL, g);
	return F.script.reset_ret;
}

/* Relocation: the live data moves elsewhere, the old extents are freed. */
static int lib_zone_relocate(struct srsv_zone_group *g, void *user)
{
	struct srsv_zone_group_info info;

	(void)user;
	inner(LIB, group_index(g));
	if (srsv_zone_group_info(g, &info))
		info.used = 0;
	if (info.used)
		inner(LIB, srsv_zone_group_free(g, info.used));
	return 0;
}

static int mdl_zone_relocate(struct model *m, int g, void *user)
{
	(void)user;
	inner(MDL, g);
	if (m->groups[g].used)
		inner(MDL, model_zone_group_free(m, g, m->groups[g].used));
	return 0;
}

/* ---- comparing the states ---- */

/*
 * KB_CLAMP_NOT_DATA: a pool whose clamp the library raises on every
 * normal ticket that starts its flusher, where btrfs's rule (ordered <
 * delalloc) applies: a SYSTEM pool, a DATA pool without preemptive data
 * flushing.
 */
static bool clamp_rule_open(int mp)
{
	return !F.m.pools[mp].is_metadata &&
	       !(mp == SRSV_POOL_DATA &&
		 !(F.m.flags & SRSV_CTX_NO_DATA_PREEMPT));
}

static void compare_space(int pool)
{
	struct srsv_ticket_info lt[MODEL_TICKETS + 2], mt[MODEL_TICKETS + 2];
	struct srsv_space_info a, b;
	size_t ln = 0, mn = 0;
	int mp = mdl_pool(pool);

	if (!lib_space(pool)) {
		EQ("pool exists", 0, mp >= 0);
		return;
	}
	EQ("pool exists", 1, mp >= 0);
	EQ("snapshot", srsv_space_snapshot(lib_space(pool), &a, lt,
					   MODEL_TICKETS + 2, &ln), 0);
	model_space_info(&F.m, mp, &b, mt, MODEL_TICKETS + 2, &mn);
#define F_(x) EQ(#x, a.x, b.x)
	F_(kind); F_(total); F_(used); F_(pinned); F_(reserved); F_(may_use);
	F_(readonly); F_(zone_unusable); F_(reclaim_size); F_(tickets_id);
	if (!(KB_CLAMP_NOT_DATA && clamp_rule_open(mp)))
		F_(clamp);
	F_(full); F_(flushing); F_(force_alloc); F_(nr_tickets);
	F_(nr_priority_tickets); F_(unallocated); F_(delalloc_bytes);
	F_(ordered_bytes); F_(global_rsv_size); F_(global_rsv_reserved);
	F_(trans_rsv_reserved); F_(delayed_rsv_reserved);
	F_(delayed_refs_rsv_reserved); F_(preempt_runs); F_(async_runs);
	F_(tickets_granted); F_(tickets_failed); F_(mover_rsv_size);
	F_(mover_rsv_reserved); F_(reclaimable);
#undef F_
	for (int s = 0; s < SRSV_SPACE_INFO_STATES; s++) {
		EQ("flushes[state]", a.flushes[s], b.flushes[s]);
		EQ("preempt_flushes[state]", a.preempt_flushes[s], 0);
	}
	{
		struct srsv_space_stats st;

		EQ("get_stats", srsv_space_get_stats(lib_space(pool), &st), 0);
		for (int s = 0; s < SRSV_STATE_COUNT; s++)
			EQ("state disabled", st.states[s].disabled,
			   (F.m.pools[mp].disabled >> s) & 1);
		EQ("error_failures", st.error_failures,
		   F.m.pools[mp].error_failures);
		EQ("refused[POOL_ARGS]", st.refused[SRSV_REFUSED_POOL_ARGS],
		   F.m.pools[mp].refused_pool_args);
	}
	EQ("queued tickets", ln, mn);
	for (size_t i = 0; i < ln && i < MODEL_TICKETS + 2; i++) {
		EQ("ticket bytes", lt[i].bytes, mt[i].bytes);
		EQ("ticket mode", lt[i].mode, mt[i].mode);
		EQ("ticket priority", lt[i].priority, mt[i].priority);
	}
}

static struct srsv_rsv *lib_rsv(int i)
{
	if (i < 0)
		return NULL;
	if (i < SRSV_RSV_TYPE_COUNT)
		return srsv_ctx_rsv(F.ctx, (enum srsv_rsv_type)i);
	return &F.user_rsv[i - SRSV_RSV_TYPE_COUNT];
}

static void compare_rsvs(void)
{
	for (int i = 0; i < MODEL_RSVS; i++) {
		struct srsv_rsv_info a, b;
		int ret;

		if (i < SRSV_RSV_TYPE_COUNT) {
			EQ("std rsv exists", lib_rsv(i) != NULL,
			   model_ctx_rsv(&F.m, i) >= 0);
			if (!lib_rsv(i))
				continue;
		}
		ret = srsv_rsv_get_info(lib_rsv(i), &a);
		EQ("rsv valid", ret == 0, F.m.rsvs[i].valid);
		if (ret)
			continue;
		model_rsv_info(&F.m, i, &b);
		EQ("rsv size", a.size, b.size);
		EQ("rsv reserved", a.reserved, b.reserved);
		EQ("rsv type", a.type, b.type);
		EQ("rsv full", a.full, b.full);
		EQ("rsv failfast", a.failfast, b.failfast);
	}
}

static void compare_quotas(void)
{
	for (int q = 0; q < NQUOTAS; q++) {
		struct srsv_quota_info a, b;

		EQ("quota exists", F.quotas[q] != NULL, F.m.quotas[q].exists);
		if (!F.quotas[q])
			continue;
		EQ("quota snapshot", srsv_quota_snapshot(F.quotas[q], &a), 0);
		model_quota_info(&F.m, q, &b);
		EQ("quota id", a.id, b.id);
		EQ("quota limit", a.limit, b.limit);
		for (int k = 0; k < SRSV_QUOTA_KIND_COUNT; k++)
			EQ("quota reserved[kind]", a.reserved[k], b.reserved[k]);
		EQ("quota used", a.used, b.used);
		EQ("quota charged", a.charged, b.charged);
		EQ("quota flushes", a.flushes, b.flushes);
		EQ("quota flush_waits", a.flush_waits, b.flush_waits);
		EQ("quota edquot", a.edquot, b.edquot);
	}
}

static void compare_zones(void)
{
	struct srsv_zoned_info a, b;
	int ret = srsv_zoned_get_info(F.ctx, &a);

	EQ("zoned", ret == 0, F.m.zoned);
	if (ret)
		return;
	model_zoned_get_info(&F.m, &b);
	EQ("zoned max_active", a.max_active_zones, b.max_active_zones);
	EQ("zoned active", a.active, b.active);
	for (int k = 0; k < SRSV_ZONE_KIND_COUNT; k++)
		EQ("zoned active_by_kind", a.active_by_kind[k],
		   b.active_by_kind[k]);
	EQ("zoned reserved_metadata_left", a.reserved_metadata_left,
	   b.reserved_metadata_left);
	EQ("zoned reserved_system_left", a.reserved_system_left,
	   b.reserved_system_left);
	EQ("zoned open", a.open, b.open);
	EQ("zoned nr_groups", a.nr_groups, b.nr_groups);
	EQ("zoned hints", a.hints, b.hints);
	EQ("zoned hint_groups_looked", a.hint_groups_looked,
	   b.hint_groups_looked);
	EQ("zoned resets", a.resets, b.resets);
	EQ("zoned relocations", a.relocations, b.relocations);
	EQ("zoned flush_groups_looked", a.flush_groups_looked,
	   b.flush_groups_looked);
	for (int g = 0; g < NGROUPS; g++) {
		struct srsv_zone_group_info gi, mi;

		EQ("group exists", F.groups[g] != NULL, F.m.groups[g].exists);
		if (!F.groups[g])
			continue;
		EQ("group info", srsv_zone_group_info(F.groups[g], &gi), 0);
		model_zone_group_info(&F.m, g, &mi);
#define G_(x) EQ("group " #x, gi.x, mi.x)
		G_(start); G_(length); G_(capacity); G_(alloc_offset); G_(used);
		G_(reserved); G_(zone_unusable); G_(kind); G_(pool); G_(active);
		G_(open); G_(busy); G_(dedicated);
#undef G_
		EQ("group room", srsv_zone_group_room(F.groups[g]),
		   mi.capacity - mi.alloc_offset);
	}
}

/* The block-group table, its statistics and statfs. */
static void compare_bgroups(void)
{
	struct srsv_bgroup_stats a, b;
	struct srsv_bgroup_info gi, mi;
	struct srsv_statfs la, mb;
	uint64_t from = 0;
	int lret, mret;

	EQ("ctx_statfs", srsv_ctx_statfs(F.ctx, &la), model_ctx_statfs(&F.m, &mb));
	EQ("statfs total", la.total, mb.total);
	EQ("statfs free", la.free, mb.free);
	EQ("statfs avail", la.avail, mb.avail);
	EQ("statfs metadata_free", la.metadata_free, mb.metadata_free);
	EQ("statfs global_rsv_size", la.global_rsv_size, mb.global_rsv_size);
	EQ("statfs metadata_full", la.metadata_full, mb.metadata_full);
	/* A zoned ctx's table holds its zones (compared as zone groups). */
	if (F.m.flags & SRSV_CTX_ZONED)
		return;
	lret = srsv_bgroup_stats(F.ctx, &a);
	mret = model_bgroup_stats(&F.m, &b);
	EQ("bgroup_stats", lret, mret);
	if (lret)
		return;
#define S_(x) EQ("bgroup stats " #x, a.x, b.x)
	S_(nr_groups); S_(added); S_(returned); S_(reclaimed);
	S_(reclaim_failed); S_(sweeps); S_(marked); S_(committed);
#undef S_
	for (int k = 0; k < SRSV_POOL_COUNT; k++)
		EQ("bgroup_reclaim_threshold",
		   srsv_bgroup_reclaim_threshold(F.ctx, (enum srsv_pool)k),
		   model_bgroup_reclaim_threshold(&F.m, mdl_pool(k)));
	for (;;) {
		lret = srsv_bgroup_next(F.ctx, from, &gi);
		mret = model_bgroup_next(&F.m, from, &mi);
		EQ("bgroup_next", lret, mret);
		if (lret)
			break;
#define B_(x) EQ("bgroup " #x, gi.x, mi.x)
		B_(size); B_(start); B_(length); B_(used); B_(pinned); B_(pool);
		B_(reclaim_mark); B_(readonly); B_(unused); B_(candidate);
#undef B_
		from = gi.start + gi.length;
	}
}

static void compare_all(void)
{
	EQ("callback calls", F.log_total, F.m.log_total);
	for (size_t i = 0; i < F.log_len && i < F.m.log_len; i++) {
		EQ("callback pool", F.log[i].pool, F.m.log[i].pool);
		EQ("callback state", F.log[i].state, F.m.log[i].state);
		EQ("callback bytes", F.log[i].bytes, F.m.log[i].bytes);
	}
	EQ("engine inner calls", F.eng[LIB].ninner, F.eng[MDL].ninner);
	for (size_t i = 0; i < F.eng[LIB].ninner; i++)
		EQ("engine inner result", F.eng[LIB].inner[i],
		   F.eng[MDL].inner[i]);
	for (int p = 0; p < SRSV_POOL_COUNT; p++)
		EQ("engine held", F.eng[LIB].held[p], F.eng[MDL].held[p]);
	EQ("unallocated", srsv_ctx_unallocated(F.ctx), F.m.unallocated);
	for (int p = 0; p < SRSV_POOL_COUNT; p++) {
		F.cmp_pool = p;
		compare_space(p);
	}
	F.cmp_pool = -1;
	compare_rsvs();
	compare_quotas();
	compare_zones();
	compare_bgroups();
	/* The logs are per op: start the next op with empty ones. */
	F.log_len = 0;
	F.m.log_len = 0;
	F.eng[LIB].ninner = 0;
	F.eng[MDL].ninner = 0;
}

/* ---- "would it block?" ---- */

static void save_model(void)
{
	F.backup = F.m;
	F.backup_eng = F.eng[MDL];
}

static void restore_model(void)
{
	F.m = F.backup;
	F.eng[MDL] = F.backup_eng;
}

/* ---- setup ---- */

static void rd_states(struct srsv_state_array *arr, bool metadata)
{
	uint8_t b = rd8();

	if (b < 224)
		return;		/* keep the default (most inputs) */
	arr->nr = 1 + rd8() % 4;
	if (b == 0xff)
		arr->nr = SRSV_MAX_STATES + 1;	/* too long: -EINVAL */
	for (unsigned i = 0; i < arr->nr && i < SRSV_MAX_STATES; i++) {
		uint8_t s = rd8();

		arr->states[i] = (enum srsv_flush_state)(s % SRSV_STATE_COUNT);
		if (s == 0xfe)
			arr->states[i] = (enum srsv_flush_state)0; /* bad */
		else if (!arr->states[i])
			arr->states[i] = SRSV_STATE_COMMIT_TRANS;
	}
	if (KB_SKIPPED_ARRAY && metadata && arr->nr <= SRSV_MAX_STATES) {
		bool all_skipped = true;

		for (unsigned i = 0; i < arr->nr; i++)
			if (arr->states[i] != SRSV_STATE_DELALLOC_FULL &&
			    arr->states[i] != SRSV_STATE_ALLOC_CHUNK_FORCE)
				all_skipped = false;
		if (all_skipped)
			arr->states[0] = SRSV_STATE_COMMIT_TRANS;
	}
}

static void rd_script_state(int state)
{
	struct action *a = &F.script.state[state];

	a->op = rd8() % EO_COUNT;
	/* Engine errors are rare: they end every ticket of the input. */
	if (a->op == EO_SET_ERROR && rd8() < 200)
		a->op = EO_NOP;
	a->arg = rd_size();
	a->ret = rd_errno();
}

/* srsv_bgroups_init() on both sides, from the input; sometimes bad. */
static void bg_init_from_input(void)
{
	union {
		struct srsv_bgroup_config cfg;
		unsigned char bytes[sizeof(struct srsv_bgroup_config) + 8];
	} u;
	uint8_t b = rd8();

	memset(&u, 0, sizeof(u));
	srsv_bgroup_config_init(&u.cfg);
	u.cfg.dynamic_reclaim = b & 1;
	u.cfg.periodic_reclaim = b & 2;
	u.cfg.reclaim_threshold_pct = rd8() % 102;	/* 101: -EINVAL */
	u.cfg.data_raid_factor = rd8() < 200 ? 1 + rd8() % 2 : rd8() % 6;
	if ((b & 0xf0) == 0xf0)
		u.cfg.size--;				/* too small */
	else if ((b & 0xf0) == 0xe0)
		u.cfg.size += 8;			/* zero tail: fine */
	else if ((b & 0xf0) == 0xd0) {
		u.cfg.size += 8;
		u.bytes[sizeof(u.cfg) + 3] = 1;		/* unknown: -EINVAL */
	}
	/* A zoned ctx's table holds zone groups: not modelled. */
	if (F.m.flags & SRSV_CTX_ZONED)
		return;
	EQ("bgroups_init", srsv_bgroups_init(F.ctx, &u.cfg),
	   model_bgroups_init(&F.m, &u.cfg));
}

static int setup(void)
{
	struct srsv_config cfg;
	struct model_hooks hooks = {
		.flush = mdl_flush,
		.quota_flush = mdl_quota_flush,
		.zone_reset = mdl_zone_reset,
		.zone_relocate = mdl_zone_relocate,
	};
	uint8_t flags = rd8(), b;
	int lret, mret;

	srsv_config_init(&cfg);
	cfg.flags = SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT;
	if (flags & 1)
		cfg.flags |= SRSV_CTX_MIXED;
	if (flags & 2)
		cfg.flags |= SRSV_CTX_ZONED;
	if (flags & 4)
		cfg.flags |= SRSV_CTX_FIXED_CLAMP;
	/* btrfs's data behaviour (no preemptive flushing of data pools: the
	 * fuzzer's ctx has none anyway); the clamp rule differs. */
	if (flags & 0x10)
		cfg.flags |= SRSV_CTX_NO_DATA_PREEMPT;
	/* Movers' reserves, and SRSV_RESERVE_MOVER in the reservations. */
	F.movers = flags & 0x20;
	if ((flags & 0xf8) == 0xf8)
		cfg.flags |= 1u << 20;		/* unknown flag: -EINVAL */
	cfg.flush = lib_flush;
	if (rd8() & 1)
		cfg.quota_flush = lib_quota_flush;
	for (int k = 0; k < SRSV_POOL_COUNT; k++) {
		unsigned n = k == SRSV_POOL_SYSTEM ? 8 : 64;

		b = rd8();
		cfg.pool_bytes[k] = (uint64_t)(b % n) * 256 * KiB;
		/* Movers' reserves (setup flag 0x20) from the bits above:
		 * none to 1.5 MiB, against pools of up to 16 MiB. */
		if (F.movers)
			cfg.mover_reserve_bytes[k] =
				(uint64_t)(b / n % 4) * 512 * KiB;
	}
	cfg.unallocated_bytes = (uint64_t)rd8() * MiB;
	cfg.metadata_raid_factor = rd8() % 6;		/* 5: -EINVAL */
	b = rd8();
	cfg.global_rsv_bytes = (uint64_t)(b % 16) * 64 * KiB;
	if (F.movers && b >= 0xf0)
		cfg.mover_reserve_bytes[b % SRSV_POOL_COUNT] =
			SRSV_MAX_BYTES + 1;		/* -EINVAL */
	cfg.zone_bytes = (uint64_t)(rd8() % 4 + 1) * MiB;
	if (rd8() >= 250)
		cfg.pool_bytes[SRSV_POOL_DATA] = rd_size();	/* maybe bad */
	if (rd8() >= 250)
		cfg.data_chunk_bytes = rd_size();
	rd_states(&cfg.async_metadata_states, true);
	rd_states(&cfg.async_data_states, false);
	rd_states(&cfg.priority_states, false);
	rd_states(&cfg.evict_states, false);
	for (int s = 1; s < SRSV_STATE_COUNT; s++)
		rd_script_state(s);
	/* Block groups: an engine that grows pools by chunks, reports its
	 * commits and relocates, most of the time. */
	if (flags & 8) {
		static const int states[] = {
			SRSV_STATE_ALLOC_CHUNK, SRSV_STATE_ALLOC_CHUNK_FORCE,
			SRSV_STATE_COMMIT_TRANS, SRSV_STATE_RECLAIM_CHUNKS,
		};
		static const int acts[] = {
			EO_BG_ADD, EO_BG_ADD, EO_BG_COMMIT, EO_BG_RELOCATE,
		};

		/* Chunks of a few MiB: sweeps get ready, reclaim gets urgent
		 * and the dynamic threshold moves within a small device. */
		cfg.data_chunk_bytes = (uint64_t)(rd8() % 8 + 1) * MiB;
		for (int i = 0; i < 4; i++) {
			struct action *a = &F.script.state[states[i]];

			if (rd8() >= 192)
				continue;
			a->op = acts[i];
			a->arg = (uint64_t)(rd8() % 8 + 1) * MiB;
			a->ret = 0;
		}
	}
	for (int i = 0; i < 2; i++) {
		F.eng[i].trans = 1;
		F.eng[i].next_addr = UINT64_C(1) << 40;
	}
	F.script.quota_ret = rd8() % 4 == 0 ? -EIO : 0;
	F.script.reset_ret = rd8() % 4 == 0 ? -EIO : 0;

	lret = srsv_ctx_create(&cfg, &F.ctx);
	mret = model_create(&F.m, &cfg);
	EQ("srsv_ctx_create", lret, mret);
	if (lret)
		return lret;
	model_set_hooks(&F.m, &hooks);
	F.m.wait_own_kind = KB_MANUAL_WAIT_MIXED;
	F.m.bg_tie_by_pool = KB_RECLAIM_TIE_POOLS;
	compare_all();
	if (flags & 8) {
		bg_init_from_input();
		compare_all();
	}
	return 0;
}

/* ---- the operations ---- */

static int slot_arg(void)
{
	return rd8() % NSLOTS;
}

static void op_reserve(int kind)
{
	int pool = rd_pool(), mode = rd_mode();
	uint64_t bytes = rd_size();
	unsigned flags = rd_flags();
	int lret, mret;

	save_model();
	if (kind == 0)
		mret = model_space_reserve(&F.m, mdl_pool(pool), bytes, mode,
					   flags);
	else
		mret = model_space_reserve_timeout(&F.m, mdl_pool(pool), bytes,
						   mode, flags, 0);
	if (mret == MODEL_BLOCKS) {
		restore_model();
		return;
	}
	if (kind == 0)
		lret = srsv_space_reserve(lib_space(pool), bytes,
					  (enum srsv_flush)mode, flags);
	else
		lret = srsv_space_reserve_timeout(lib_space(pool), bytes,
						  (enum srsv_flush)mode, flags,
						  0);
	EQ("reserve", lret, mret);
	if (!lret && mdl_pool(pool) >= 0) {
		F.eng[LIB].held[mdl_pool(pool)] += bytes;
		F.eng[MDL].held[mdl_pool(pool)] += bytes;
	}
}

/*
 * srsv_space_reserve_partial(): a minimum from rd_size(), a maximum
 * mostly above it (sometimes equal, below, or huge), now and then a NULL
 * @got.  Skipped, as op_reserve, when the model says the reservation of
 * the minimum would wait for ever.
 */
static void op_reserve_partial(void)
{
	int pool = rd_pool(), mode = rd_mode(), lret, mret;
	uint8_t b = rd8();
	uint64_t min = rd_size(), max, lgot = 1, mgot = 1;
	bool null_got = b == 0xff;
	unsigned flags;

	if (b < 160)
		max = min + rd_size();
	else if (b < 224)
		max = min * (rd8() % 8 + 1);
	else if (b < 240)
		max = min;
	else
		max = rd_size();	/* may be below min: -EINVAL */
	flags = rd_flags();
	save_model();
	mret = model_space_reserve_partial(&F.m, mdl_pool(pool), min, max,
					   mode, flags,
					   null_got ? NULL : &mgot);
	if (mret == MODEL_BLOCKS) {
		restore_model();
		return;
	}
	lret = srsv_space_reserve_partial(lib_space(pool), min, max,
					  (enum srsv_flush)mode, flags,
					  null_got ? NULL : &lgot);
	EQ("reserve_partial", lret, mret);
	if (null_got)
		return;
	EQ("reserve_partial got", lgot, mgot);
	if (!lret) {
		F.eng[LIB].held[mdl_pool(pool)] += lgot;
		F.eng[MDL].held[mdl_pool(pool)] += mgot;
	}
}

/* Bytes a granted ticket brought: counted when its wait reports 0. */
static uint64_t slot_bytes[NSLOTS];
static int slot_pool[NSLOTS];
static bool slot_counted[NSLOTS];
static bool slot_null[NSLOTS];

static void slot_granted(int slot)
{
	if (slot_counted[slot] || slot_pool[slot] < 0)
		return;
	slot_counted[slot] = true;
	F.eng[LIB].held[slot_pool[slot]] += slot_bytes[slot];
	F.eng[MDL].held[slot_pool[slot]] += slot_bytes[slot];
}

static void op_ticket_reserve(void)
{
	int slot = slot_arg(), pool = rd_pool(), mode = rd_mode();
	uint64_t bytes = rd_size();
	unsigned flags = rd_flags();
	int lret, mret;

	/* A queued ticket's memory may not be reused. */
	if (F.m.tickets[slot].state == MODEL_T_QUEUED)
		return;
	mret = model_ticket_reserve(&F.m, mdl_pool(pool), slot, bytes, mode,
				    flags);
	lret = srsv_ticket_reserve(lib_space(pool), &F.tickets[slot], bytes,
				   (enum srsv_flush)mode, flags);
	EQ("ticket_reserve", lret, mret);
	slot_bytes[slot] = bytes;
	slot_null[slot] = !lib_space(pool);
	slot_pool[slot] = mdl_pool(pool);
	slot_counted[slot] = false;
	if (!lret)
		slot_granted(slot);
}

static void op_ticket_wait(bool forever)
{
	int slot = slot_arg();
	uint64_t timeout = forever ? UINT64_MAX : 0;
	int lret, mret;

	if (KB_NULL_TICKET_WAIT && slot_null[slot])
		return;
	save_model();
	mret = model_ticket_wait(&F.m, slot, timeout);
	if (mret == MODEL_BLOCKS) {
		restore_model();
		return;
	}
	lret = srsv_ticket_wait(&F.tickets[slot], timeout);
	EQ("ticket_wait", lret, mret);
	if (!lret)
		slot_granted(slot);
}

static void op_ticket_cancel(void)
{
	int slot = slot_arg();

	EQ("ticket_cancel", srsv_ticket_cancel(&F.tickets[slot]),
	   model_ticket_cancel(&F.m, slot));
}

static void op_release(void)
{
	int pool = rd_pool(), mp = mdl_pool(pool);
	uint64_t bytes = rd_part(mp >= 0 ? F.eng[MDL].held[mp] : 0);
	int lret = srsv_space_release(lib_space(pool), bytes);

	EQ("release", lret, model_space_release(&F.m, mp, bytes));
	if (!lret && mp >= 0) {
		for (int s = 0; s < 2; s++)
			F.eng[s].held[mp] -= F.eng[s].held[mp] < bytes ?
					     F.eng[s].held[mp] : bytes;
	}
}

static void op_transition(int which)
{
	static const char *const names[] = {
		"alloc", "free_reserved", "commit_used", "pin", "unpin", "grow",
		"shrink", "clear_readonly",
	};
	int pool = rd_pool(), mp = mdl_pool(pool);
	struct srsv_space *s = lib_space(pool);
	const struct model_pool *p = mp >= 0 ? &F.m.pools[mp] : NULL;
	uint64_t have = 0, bytes;
	int lret = 0, mret = 0;

	if (p) {
		const uint64_t counters[] = {
			p->may_use, p->reserved, p->reserved, p->used,
			p->pinned, 4 * MiB, p->readonly, p->readonly,
		};

		have = counters[which];
	}
	bytes = rd_part(have);
	F.opname = names[which];
	switch (which) {
	case 0:
		/* The engine allocates what it holds. */
		lret = srsv_space_alloc(s, bytes);
		mret = model_space_alloc(&F.m, mp, bytes);
		if (!lret && mp >= 0)
			for (int i = 0; i < 2; i++)
				F.eng[i].held[mp] -= F.eng[i].held[mp] < bytes ?
						     F.eng[i].held[mp] : bytes;
		break;
	case 1:
		lret = srsv_space_free_reserved(s, bytes);
		mret = model_space_free_reserved(&F.m, mp, bytes);
		break;
	case 2:
		lret = srsv_space_commit_used(s, bytes);
		mret = model_space_commit_used(&F.m, mp, bytes);
		break;
	case 3:
		lret = srsv_space_pin(s, bytes);
		mret = model_space_pin(&F.m, mp, bytes);
		break;
	case 4:
		lret = srsv_space_unpin(s, bytes);
		mret = model_space_unpin(&F.m, mp, bytes);
		break;
	case 5:
		lret = srsv_space_grow(s, bytes);
		mret = model_space_grow(&F.m, mp, bytes);
		break;
	case 6:
		lret = srsv_space_shrink(s, bytes);
		mret = model_space_shrink(&F.m, mp, bytes);
		break;
	default:
		lret = srsv_space_clear_readonly(s, bytes);
		mret = model_space_clear_readonly(&F.m, mp, bytes);
		break;
	}
	EQ("transition", lret, mret);
}

static void op_set_readonly(void)
{
	int pool = rd_pool();
	uint64_t bytes = rd_size();
	bool force = rd8() & 1;

	EQ("set_readonly", srsv_space_set_readonly(lib_space(pool), bytes, force),
	   model_space_set_readonly(&F.m, mdl_pool(pool), bytes, force));
}

static void op_set_full(void)
{
	int pool = rd_pool();
	bool full = rd8() & 1;

	EQ("set_full", srsv_space_set_full(lib_space(pool), full),
	   model_space_set_full(&F.m, mdl_pool(pool), full));
}

static void op_enable_state(void)
{
	int pool = rd_pool();
	/* -1 and SRSV_STATE_COUNT are bad input; 0 means every state. */
	int state = (int)(rd8() % (SRSV_STATE_COUNT + 2)) - 1;

	EQ("enable_state", srsv_space_enable_state(lib_space(pool), state),
	   model_space_enable_state(&F.m, mdl_pool(pool), state));
}

static void op_set_unallocated(void)
{
	uint64_t bytes = rd8() < 250 ? (uint64_t)rd8() * MiB : rd_size();

	EQ("set_unallocated", srsv_ctx_set_unallocated(F.ctx, bytes),
	   model_ctx_set_unallocated(&F.m, bytes));
}

static void op_account_delalloc(void)
{
	int64_t d = (int64_t)(int8_t)rd8() * (int64_t)MiB;
	int64_t o = (int64_t)(int8_t)rd8() * (int64_t)MiB;

	if (rd8() >= 250)
		d = (int64_t)rd64();
	EQ("account_delalloc", srsv_ctx_account_delalloc(F.ctx, d, o),
	   model_ctx_account_delalloc(&F.m, d, o));
}

static void op_set_error(void)
{
	int err = rd8() < 128 ? -EIO : (int)(int8_t)rd8();

	/* An engine error ends every ticket of the input: keep it rare. */
	if (rd8() < 224)
		return;
	EQ("set_error", srsv_ctx_set_error(F.ctx, err),
	   model_ctx_set_error(&F.m, err));
}

/* The engine recovered (RocksDB's DB::Resume()): waiting is possible
 * again.  Also without an error, and after a shutdown (-ESHUTDOWN). */
static void op_clear_error(void)
{
	EQ("clear_error", srsv_ctx_clear_error(F.ctx),
	   model_ctx_clear_error(&F.m));
}

/* The engine's figure of what a state would free: a store per state,
 * now and then a bad state or too many bytes. */
static void op_set_reclaimable(void)
{
	int pool = rd_pool();
	/* -1, 0 and SRSV_STATE_COUNT are bad input. */
	int state = (int)(rd8() % (SRSV_STATE_COUNT + 2)) - 1;
	uint8_t b = rd8();
	/* 0, a size, or close to the most one state may report (a few
	 * states of that add up past 2^64). */
	uint64_t bytes = b < 32 ? 0 : b < 232 ? rd_size() :
			 SRSV_MAX_BYTES - rd8();
	int mp = mdl_pool(pool);

	if (KB_RECLAIMABLE_WRAP && mp >= 0 && state > 0 &&
	    state < SRSV_STATE_COUNT && bytes <= SRSV_MAX_BYTES) {
		unsigned __int128 sum = bytes;

		for (int st = 0; st < SRSV_STATE_COUNT; st++)
			if (st != state)
				sum += F.m.pools[mp].reclaimable[st];
		if (sum > UINT64_MAX)
			return;
	}
	EQ("set_reclaimable", srsv_space_set_reclaimable(lib_space(pool),
							 state, bytes),
	   model_space_set_reclaimable(&F.m, mdl_pool(pool), state, bytes));
}

/* Bytes already on the device counted as used (a restart). */
static void op_load_used(void)
{
	int pool = rd_pool();
	uint64_t bytes = rd_size();

	EQ("load_used", srsv_space_load_used(lib_space(pool), bytes),
	   model_space_load_used(&F.m, mdl_pool(pool), bytes));
}

static void op_shutdown(void)
{
	if (rd8() < 240)
		return;
	EQ("shutdown", srsv_ctx_shutdown(F.ctx), model_ctx_shutdown(&F.m));
}

static int rsv_arg(void)
{
	uint8_t b = rd8();

	if (b == 0xff)
		return -1;		/* NULL */
	return b % MODEL_RSVS;
}

static void op_rsv_init(void)
{
	int i = SRSV_RSV_TYPE_COUNT + rd8() % NUSER;
	int pool = rd_pool(), type = rd8() % (SRSV_RSV_TYPE_COUNT + 1);

	/* Re-initialising a live rsv would leak what it holds. */
	if (F.m.rsvs[i].valid)
		return;
	EQ("rsv_init", srsv_rsv_init(lib_rsv(i), lib_space(pool),
				     (enum srsv_rsv_type)type),
	   model_rsv_init(&F.m, i, mdl_pool(pool), type));
}

static void op_rsv_destroy(void)
{
	int i = rsv_arg();

	EQ("rsv_destroy", srsv_rsv_destroy(lib_rsv(i)),
	   model_rsv_destroy(&F.m, i));
}

static void op_rsv_add(bool refill)
{
	int i = rsv_arg(), mode = rd_mode();
	uint64_t bytes = rd_size();
	unsigned flags = rd_flags();
	int lret, mret;

	save_model();
	mret = refill ? model_rsv_refill(&F.m, i, bytes, mode, flags) :
			model_rsv_add(&F.m, i, bytes, mode, flags);
	if (mret == MODEL_BLOCKS) {
		restore_model();
		return;
	}
	lret = refill ? srsv_rsv_refill(lib_rsv(i), bytes,
					(enum srsv_flush)mode, flags) :
			srsv_rsv_add(lib_rsv(i), bytes, (enum srsv_flush)mode,
				     flags);
	EQ(refill ? "rsv_refill" : "rsv_add", lret, mret);
}

static void op_rsv_use(void)
{
	int i = rsv_arg();
	uint64_t bytes = rd_part(i >= 0 ? F.m.rsvs[i].reserved : 0);
	int lret = srsv_rsv_use(lib_rsv(i), bytes);

	EQ("rsv_use", lret, model_rsv_use(&F.m, i, bytes));
	/* The bytes are now the caller's may_use. */
	if (!lret && bytes <= SRSV_MAX_BYTES)
		for (int s = 0; s < 2; s++)
			F.eng[s].held[F.m.rsvs[i].pool] += bytes;
}

static void op_rsv_migrate(void)
{
	int src = rsv_arg(), dst = rsv_arg();
	uint64_t bytes = rd_part(src >= 0 ? F.m.rsvs[src].reserved : 0);
	bool update = rd8() & 1;

	EQ("rsv_migrate", srsv_rsv_migrate(lib_rsv(src), lib_rsv(dst), bytes,
					   update),
	   model_rsv_migrate(&F.m, src, dst, bytes, update));
}

static void op_rsv_check(void)
{
	int i = rsv_arg();
	unsigned pct = rd8() % 110;

	EQ("rsv_check", srsv_rsv_check(lib_rsv(i), pct),
	   model_rsv_check(&F.m, i, pct));
}

static void op_rsv_release(void)
{
	int i = rsv_arg();
	uint64_t bytes = rd8() < 16 ? SRSV_RSV_ALL :
			 rd_part(i >= 0 ? F.m.rsvs[i].size : 0);
	uint64_t lrel = 0, mrel = 0;
	int lret = srsv_rsv_release(lib_rsv(i), bytes, &lrel);

	EQ("rsv_release", lret, model_rsv_release(&F.m, i, bytes, &mrel));
	if (!lret)
		EQ("rsv_release released", lrel, mrel);
}

static void op_rsv_fallback(void)
{
	int i = rsv_arg(), mpaid = -2;
	uint64_t bytes = rd_size();
	struct srsv_rsv *paid = NULL;
	int lret;

	if (KB_FALLBACK_DATA && i >= 0 && F.m.rsvs[i].valid &&
	    F.m.rsvs[i].pool == SRSV_POOL_DATA)
		return;
	lret = srsv_rsv_use_fallback(lib_rsv(i), bytes, &paid);
	EQ("rsv_use_fallback", lret,
	   model_rsv_use_fallback(&F.m, i, bytes, &mpaid));
	if (lret)
		return;
	EQ("rsv_use_fallback paid", paid, lib_rsv(mpaid));
	for (int s = 0; s < 2; s++)
		F.eng[s].held[F.m.rsvs[i].pool] += bytes;
}

static void op_rsv_failfast(void)
{
	int i = rsv_arg();
	bool ff = rd8() & 1;

	EQ("rsv_set_failfast", srsv_rsv_set_failfast(lib_rsv(i), ff),
	   model_rsv_set_failfast(&F.m, i, ff));
}

static void op_resize_global(void)
{
	uint64_t bytes = rd8() < 250 ? (uint64_t)(rd8() % 32) * 64 * KiB :
		rd_size();

	EQ("resize_global_rsv", srsv_ctx_resize_global_rsv(F.ctx, bytes),
	   model_ctx_resize_global_rsv(&F.m, bytes));
}

static void op_run_pending(void)
{
	EQ("run_pending", srsv_ctx_run_pending(F.ctx),
	   model_ctx_run_pending(&F.m));
}

/* ---- quotas ---- */

static uint64_t rd_limit(void)
{
	uint8_t b = rd8();

	if (b >= 240)
		return b == 0xff ? SRSV_QUOTA_NO_LIMIT : rd_size();
	return (uint64_t)(b % 64) * 64 * KiB;
}

static void op_quota_create(void)
{
	int q = rd8() % NQUOTAS;
	uint64_t id = rd8() % 12, limit = rd_limit();
	struct srsv_quota *out = NULL;
	int lret, mret;

	if (F.quotas[q])
		return;
	lret = srsv_quota_create(F.ctx, id, limit, &out);
	mret = model_quota_create(&F.m, q, id, limit);
	EQ("quota_create", lret, mret);
	if (!lret)
		F.quotas[q] = out;
}

static int quota_arg(void)
{
	uint8_t b = rd8();

	return b == 0xff ? -1 : b % NQUOTAS;
}

static struct srsv_quota *lib_quota(int q)
{
	return q < 0 ? NULL : F.quotas[q];
}

/* A quota index the model knows, or -1 (NULL) for an empty slot. */
static int mdl_quota(int q)
{
	return q >= 0 && F.quotas[q] ? q : -1;
}

static void op_quota(int which)
{
	int q = quota_arg(), mq = mdl_quota(q);
	struct srsv_quota *lq = lib_quota(q);
	int kind = rd8() % (SRSV_QUOTA_KIND_COUNT + 1);
	uint64_t have = mq >= 0 && kind < SRSV_QUOTA_KIND_COUNT ?
			F.m.quotas[mq].reserved[kind] : 0;
	uint64_t bytes, lfreed = 0, mfreed = 0;
	unsigned flags;
	int lret, mret;

	switch (which) {
	case 0:			/* destroy */
		lret = srsv_quota_destroy(lq);
		EQ("quota_destroy", lret, model_quota_destroy(&F.m, mq));
		if (!lret)
			F.quotas[q] = NULL;
		return;
	case 1: {		/* lookup */
		uint64_t id = rd8() % 12;
		struct srsv_quota *out = NULL;
		int mi;

		lret = srsv_quota_lookup(F.ctx, id, &out);
		mi = model_quota_lookup(&F.m, id);
		EQ("quota_lookup", lret, mi < 0 ? mi : 0);
		if (!lret)
			EQ("quota_lookup result", out, F.quotas[mi]);
		return;
	}
	case 2:
		bytes = rd_limit();
		EQ("quota_set_limit", srsv_quota_set_limit(lq, bytes),
		   model_quota_set_limit(&F.m, mq, bytes));
		return;
	case 3:
		bytes = rd_size();
		flags = rd8();
		flags = flags < 200 ? (flags % 4 == 1 ? SRSV_RESERVE_NOWAIT :
				       flags % 4 == 2 ? SRSV_QUOTA_NOFLUSH : 0) :
			flags;
		EQ("quota_reserve", srsv_quota_reserve(lq,
				(enum srsv_quota_kind)kind, bytes, flags),
		   model_quota_reserve(&F.m, mq, kind, bytes, flags));
		return;
	case 4:
		bytes = rd_part(have);
		EQ("quota_release", srsv_quota_release(lq,
				(enum srsv_quota_kind)kind, bytes),
		   model_quota_release(&F.m, mq, kind, bytes));
		return;
	case 5:
		bytes = rd_part(mq >= 0 ? F.m.quotas[mq].reserved[
				SRSV_QUOTA_META_PREALLOC] : 0);
		EQ("quota_convert", srsv_quota_convert(lq, bytes),
		   model_quota_convert(&F.m, mq, bytes));
		return;
	case 6:
		lret = srsv_quota_commit(F.ctx, &lfreed);
		mret = model_quota_commit(&F.m, &mfreed);
		EQ("quota_commit", lret, mret);
		EQ("quota_commit freed", lfreed, mfreed);
		return;
	case 7:
		lret = srsv_quota_commit_one(lq, &lfreed);
		mret = model_quota_commit_one(&F.m, mq, &mfreed);
		EQ("quota_commit_one", lret, mret);
		if (!lret)
			EQ("quota_commit_one freed", lfreed, mfreed);
		return;
	case 8:
		bytes = rd_part(mq >= 0 ? F.m.quotas[mq].reserved[
				SRSV_QUOTA_DATA] : 0);
		EQ("quota_charge_used", srsv_quota_charge_used(lq, bytes),
		   model_quota_charge_used(&F.m, mq, bytes));
		return;
	default:
		bytes = rd_part(mq >= 0 ? F.m.quotas[mq].used : 0);
		EQ("quota_free_used", srsv_quota_free_used(lq, bytes),
		   model_quota_free_used(&F.m, mq, bytes));
		return;
	}
}

/* ---- zones ---- */

static void op_zoned_init(void)
{
	struct srsv_zoned_config cfg;
	uint8_t b = rd8();

	srsv_zoned_config_init(&cfg);
	cfg.max_active_zones = b & 1 ? rd8() % 8 : 0;
	cfg.reserved_metadata = rd8() % 4;
	cfg.reserved_system = rd8() % 3;
	cfg.reclaim_threshold_pct = rd8() % 102;
	if (b & 2)
		cfg.zone_reset = lib_zone_reset;
	if (b & 4)
		cfg.zone_relocate = lib_zone_relocate;
	EQ("zoned_init", srsv_zoned_init(F.ctx, &cfg),
	   model_zoned_init(&F.m, &cfg));
}

/* A registered group most of the time (they fill the table in order),
 * sometimes an empty slot or NULL. */
static int group_arg(void)
{
	uint8_t b = rd8();
	int nr = 0;

	while (nr < NGROUPS && F.groups[nr])
		nr++;
	if (b == 0xff)
		return -1;
	if (b >= 240 || !nr)
		return b % NGROUPS;
	return b % nr;
}

static struct srsv_zone_group *lib_group(int g)
{
	return g < 0 ? NULL : F.groups[g];
}

static int mdl_group(int g)
{
	return g >= 0 && F.groups[g] ? g : -1;
}

static void op_zone_add(void)
{
	int kind = rd8() % (SRSV_ZONE_KIND_COUNT + 1);
	uint64_t start = (uint64_t)rd8() * MiB;
	uint64_t length = rd8() < 240 ? (uint64_t)(rd8() % 4 + 1) * MiB :
			  rd_size();
	uint64_t capacity = rd8() < 200 ? length - (uint64_t)(rd8() % 4) * 64 * KiB :
			    rd_size();
	struct srsv_zone_group *out = NULL;
	int mi = -1, lret, mret;
	bool have_slot = false;

	for (int i = 0; i < NGROUPS; i++)
		have_slot |= !F.groups[i];
	if (!have_slot)
		return;
	lret = srsv_zone_group_add(F.ctx, (enum srsv_zone_kind)kind, start,
				   length, capacity, &out);
	mret = model_zone_group_add(&F.m, kind, start, length, capacity, &mi);
	EQ("zone_group_add", lret, mret);
	if (!lret)
		F.groups[mi] = out;
}

/*
 * One group model: the block-group view of a zone group (srsv_bgroup_get(),
 * which a zoned ctx answers without srsv_bgroups_init()) agrees with the
 * model's group.
 */
static void check_bgroup_view(int mg)
{
	const struct model_group *grp;
	struct srsv_bgroup_info bi;
	int ret;

	if (mg < 0 || !F.groups[mg])
		return;
	grp = &F.m.groups[mg];
	ret = srsv_bgroup_get(F.ctx, grp->start, &bi);
	EQ("bgroup_get zone", ret, 0);
	if (ret)
		return;
	EQ("bgroup_get zone start", bi.start, grp->start);
	EQ("bgroup_get zone length", bi.length, grp->length);
	EQ("bgroup_get zone used", bi.used, grp->used);
	EQ("bgroup_get zone pinned", bi.pinned, 0);
	EQ("bgroup_get zone pool", bi.pool, grp->pool);
	EQ("bgroup_get zone readonly", bi.readonly, false);
}

static void op_zone_on(int which, int g)
{
	int mg = mdl_group(g), mout = -1;
	struct srsv_zone_group *lg = lib_group(g), *lout = NULL;
	const struct model_group *grp = mg >= 0 ? &F.m.groups[mg] : NULL;
	uint64_t bytes, llog = 0, mlog = 0;
	int kind, lret, mret;

	switch (which) {
	case 0:
		EQ("zone_activate", srsv_zone_group_activate(lg),
		   model_zone_group_activate(&F.m, mg));
		return;
	case 1:
		EQ("zone_finish", srsv_zone_group_finish(lg),
		   model_zone_group_finish(&F.m, mg));
		return;
	case 2:
		lret = srsv_zoned_finish_one(F.ctx, &lout);
		mret = model_zoned_finish_one(&F.m, &mout);
		EQ("zoned_finish_one", lret, mret);
		if (!lret)
			EQ("zoned_finish_one group", lout, F.groups[mout]);
		return;
	case 3:
		kind = rd8() % (SRSV_ZONE_KIND_COUNT + 1);
		bytes = rd_size();
		lret = srsv_zone_hint(F.ctx, (enum srsv_zone_kind)kind, bytes,
				      &lout);
		mret = model_zone_hint(&F.m, kind, bytes, &mout);
		EQ("zone_hint", lret, mret);
		if (!lret)
			EQ("zone_hint group", lout, F.groups[mout]);
		return;
	case 4:
		bytes = rd_part(grp ? grp->capacity - grp->alloc_offset : 0);
		lret = srsv_zone_group_alloc(lg, bytes, &llog);
		mret = model_zone_group_alloc(&F.m, mg, bytes, &mlog);
		EQ("zone_alloc", lret, mret);
		if (!lret)
			EQ("zone_alloc logical", llog, mlog);
		return;
	case 5:
		bytes = rd_part(grp ? grp->reserved : 0);
		EQ("zone_written", srsv_zone_group_written(lg, bytes),
		   model_zone_group_written(&F.m, mg, bytes));
		return;
	case 6:
		bytes = rd_part(grp ? grp->reserved : 0);
		EQ("zone_abandon", srsv_zone_group_abandon(lg, bytes),
		   model_zone_group_abandon(&F.m, mg, bytes));
		return;
	default:
		bytes = rd_part(grp ? grp->used : 0);
		EQ("zone_free", srsv_zone_group_free(lg, bytes),
		   model_zone_group_free(&F.m, mg, bytes));
		return;
	}
}

static void op_zone(int which)
{
	int g = group_arg();

	op_zone_on(which, g);
	check_bgroup_view(mdl_group(g));
}

/* ---- block groups ---- */

/* A group's address most of the time (its start, or a byte inside),
 * sometimes an address no group may cover; *@g the model's group or
 * NULL. */
static uint64_t bg_addr(const struct model_bgroup **g)
{
	uint8_t b = rd8();

	*g = NULL;
	if (F.m.nr_bgs && b < 224) {
		*g = &F.m.bgs[rd8() % F.m.nr_bgs];
		return (*g)->start + (b < 192 ? 0 : rd64() % (*g)->length);
	}
	return b < 240 ? (uint64_t)rd8() * 4 * MiB : rd64();
}

/* The group's own pool most of the time, else any (or NULL). */
static int bg_pool(const struct model_bgroup *g)
{
	return g && rd8() < 224 ? g->pool : rd_pool();
}

/* The engine's running transaction mostly; 0; or an older or newer one. */
static uint64_t rd_transid(void)
{
	uint8_t b = rd8();
	uint64_t t = F.eng[MDL].trans;

	if (b < 200)
		return t;
	if (b < 230)
		return 0;
	return rd8() % (t + 3);
}

/* A commit reported by an op moves both engines' transactions past it. */
static void note_commit(uint64_t transid)
{
	for (int i = 0; i < 2; i++)
		if (F.eng[i].trans <= transid)
			F.eng[i].trans = transid + 1;
}

static void op_bg_add(void)
{
	int pool = rd_pool();
	uint64_t start = rd8() < 240 ? (uint64_t)rd8() * 4 * MiB : rd64();
	uint64_t length = rd8() < 224 ? (uint64_t)(rd8() % 16 + 1) * MiB :
			  rd_size();

	if (F.m.nr_bgs >= BG_CAP)
		return;
	EQ("bgroup_add", side_bg_add(LIB, pool, start, length),
	   side_bg_add(MDL, pool, start, length));
}

static void op_bg_extent(bool alloc)
{
	const struct model_bgroup *g;
	uint64_t at = bg_addr(&g), bytes, transid;
	int pool = bg_pool(g);

	if (alloc) {
		bytes = rd_part(g ? g->length - g->used - g->pinned[0] -
				    g->pinned[1] : 0);
		F.opname = "bgroup_alloc";
		EQ("bgroup_alloc", side_bg_alloc(LIB, pool, at, bytes),
		   side_bg_alloc(MDL, pool, at, bytes));
		return;
	}
	/* More than used now and then: -EINVAL, nothing changed. */
	bytes = rd_part(g ? g->used : 0);
	transid = rd_transid();
	F.opname = "bgroup_free";
	EQ("bgroup_free", side_bg_free(LIB, pool, at, bytes, transid),
	   side_bg_free(MDL, pool, at, bytes, transid));
}

static void op_bg_commit(void)
{
	uint64_t transid = rd_transid();
	int lret = side_commit_done(LIB, transid);

	EQ("ctx_commit_done", lret, side_commit_done(MDL, transid));
	if (lret >= 0)
		note_commit(transid);
}

static void op_bg_remove(void)
{
	const struct model_bgroup *g;
	uint64_t at = bg_addr(&g);
	int pool = bg_pool(g);

	EQ("bgroup_remove", srsv_bgroup_remove(F.ctx, (enum srsv_pool)pool, at),
	   model_bgroup_remove(&F.m, mdl_pool(pool), at));
}

static void op_bg_reclaim(void)
{
	struct srsv_bgroup_info a, b;
	const struct model_bgroup *g;
	uint64_t at;
	int lret, result;

	if (rd8() & 1) {
		F.opname = "bgroup_reclaim_take";
		lret = side_bg_take(LIB, &a);
		EQ("bgroup_reclaim_take", lret, side_bg_take(MDL, &b));
		if (!lret) {
			EQ("reclaim_take start", a.start, b.start);
			EQ("reclaim_take used", a.used, b.used);
		}
		return;
	}
	at = bg_addr(&g);
	result = rd8() < 128 ? 0 : rd8() < 240 ? -EIO : 1;
	F.opname = "bgroup_reclaim_done";
	EQ("bgroup_reclaim_done", side_bg_done(LIB, at, result),
	   side_bg_done(MDL, at, result));
}

static void op_bg_query(void)
{
	struct srsv_bgroup_info a, b;
	const struct model_bgroup *g;
	uint64_t at = bg_addr(&g), bytes = rd_size(), ls = 0, ms = 0;
	int pool = bg_pool(g), lret;

	lret = side_bg_find_free(LIB, pool, bytes, &ls);
	EQ("bgroup_find_free", lret, side_bg_find_free(MDL, pool, bytes, &ms));
	if (!lret)
		EQ("bgroup_find_free start", ls, ms);
	/* A zoned ctx answers queries from its zone table. */
	if (F.m.flags & SRSV_CTX_ZONED)
		return;
	lret = srsv_bgroup_get(F.ctx, at, &a);
	EQ("bgroup_get", lret, model_bgroup_get(&F.m, at, &b));
	if (!lret) {
		EQ("bgroup_get start", a.start, b.start);
		EQ("bgroup_get used", a.used, b.used);
	}
	EQ("bgroup_get NULL", srsv_bgroup_get(F.ctx, at, NULL), -EINVAL);
	EQ("bgroup_next NULL", srsv_bgroup_next(F.ctx, at, NULL), -EINVAL);
	EQ("bgroup_reclaim_take NULL", srsv_bgroup_reclaim_take(F.ctx, NULL),
	   -EINVAL);
	EQ("ctx_statfs NULL", srsv_ctx_statfs(F.ctx, NULL), -EINVAL);
}

static void op_rescript(void)
{
	int state = 1 + rd8() % (SRSV_STATE_COUNT - 1);

	rd_script_state(state);
}

/* Opcode table: the weights are how many of the 256 byte values pick it. */
enum {
	OP_RESERVE, OP_RESERVE_T0, OP_TICKET, OP_WAIT0, OP_WAIT, OP_CANCEL,
	OP_RUN, OP_RELEASE, OP_TRANSITION, OP_READONLY, OP_FULL, OP_UNALLOC,
	OP_DELALLOC, OP_ERROR, OP_SHUTDOWN, OP_RSV_INIT, OP_RSV_DESTROY,
	OP_RSV_ADD, OP_RSV_REFILL, OP_RSV_USE, OP_RSV_MIGRATE, OP_RSV_CHECK,
	OP_RSV_RELEASE, OP_RSV_FALLBACK, OP_RSV_FAILFAST, OP_GLOBAL,
	OP_QUOTA_CREATE, OP_QUOTA, OP_ZONED_INIT, OP_ZONE_ADD, OP_ZONE,
	OP_ENABLE_STATE, OP_BG_INIT, OP_BG_ADD, OP_BG_ALLOC, OP_BG_FREE,
	OP_BG_COMMIT, OP_BG_REMOVE, OP_BG_RECLAIM, OP_BG_QUERY,
	/* Added after the corpus was first built: appended, so that the
	 * byte values of the ops above keep their meaning. */
	OP_CLEAR_ERROR, OP_SET_RECLAIMABLE, OP_LOAD_USED, OP_RESERVE_PARTIAL,
	OP_RESCRIPT,
	OP_COUNT
};

static const struct {
	const char *name;
	unsigned weight;
} ops[OP_COUNT] = {
	[OP_RESERVE] = { "space_reserve", 18 },
	[OP_RESERVE_T0] = { "space_reserve_timeout(0)", 6 },
	[OP_TICKET] = { "ticket_reserve", 14 },
	[OP_WAIT0] = { "ticket_wait(0)", 8 },
	[OP_WAIT] = { "ticket_wait(forever)", 8 },
	[OP_CANCEL] = { "ticket_cancel", 6 },
	[OP_RUN] = { "ctx_run_pending", 14 },
	[OP_RELEASE] = { "space_release", 14 },
	[OP_TRANSITION] = { "transition", 24 },
	[OP_READONLY] = { "space_set_readonly", 3 },
	[OP_FULL] = { "space_set_full", 3 },
	[OP_UNALLOC] = { "ctx_set_unallocated", 4 },
	[OP_DELALLOC] = { "ctx_account_delalloc", 3 },
	[OP_ERROR] = { "ctx_set_error", 1 },
	[OP_SHUTDOWN] = { "ctx_shutdown", 1 },
	[OP_RSV_INIT] = { "rsv_init", 5 },
	[OP_RSV_DESTROY] = { "rsv_destroy", 2 },
	[OP_RSV_ADD] = { "rsv_add", 8 },
	[OP_RSV_REFILL] = { "rsv_refill", 4 },
	[OP_RSV_USE] = { "rsv_use", 5 },
	[OP_RSV_MIGRATE] = { "rsv_migrate", 4 },
	[OP_RSV_CHECK] = { "rsv_check", 2 },
	[OP_RSV_RELEASE] = { "rsv_release", 6 },
	[OP_RSV_FALLBACK] = { "rsv_use_fallback", 5 },
	[OP_RSV_FAILFAST] = { "rsv_set_failfast", 2 },
	[OP_GLOBAL] = { "ctx_resize_global_rsv", 4 },
	[OP_QUOTA_CREATE] = { "quota_create", 4 },
	[OP_QUOTA] = { "quota", 16 },
	[OP_ZONED_INIT] = { "zoned_init", 3 },
	[OP_ZONE_ADD] = { "zone_group_add", 6 },
	[OP_ZONE] = { "zone", 16 },
	[OP_ENABLE_STATE] = { "space_enable_state", 2 },
	[OP_BG_INIT] = { "bgroups_init", 2 },
	[OP_BG_ADD] = { "bgroup_add", 5 },
	[OP_BG_ALLOC] = { "bgroup_alloc", 6 },
	[OP_BG_FREE] = { "bgroup_free", 5 },
	[OP_BG_COMMIT] = { "ctx_commit_done", 4 },
	[OP_BG_REMOVE] = { "bgroup_remove", 2 },
	[OP_BG_RECLAIM] = { "bgroup_reclaim", 3 },
	[OP_BG_QUERY] = { "bgroup_query", 2 },
	[OP_CLEAR_ERROR] = { "ctx_clear_error", 1 },
	[OP_SET_RECLAIMABLE] = { "space_set_reclaimable", 1 },
	[OP_LOAD_USED] = { "space_load_used", 1 },
	[OP_RESERVE_PARTIAL] = { "space_reserve_partial", 2 },
	[OP_RESCRIPT] = { "rescript", 0 },	/* the rest of 256 */
};

static int pick_op(uint8_t b)
{
	unsigned acc = 0;

	for (int i = 0; i < OP_COUNT; i++) {
		acc += ops[i].weight;
		if (b < acc)
			return i;
	}
	return OP_RESCRIPT;
}

static void run_op(int op)
{
	static int trace = -1;

	if (trace < 0)
		trace = getenv("FUZZ_TRACE") != NULL;
	F.opname = ops[op].name;
	if (trace)
		fprintf(stderr, "op %u: %s\n", F.opno, F.opname);
	switch (op) {
	case OP_RESERVE: op_reserve(0); break;
	case OP_RESERVE_T0: op_reserve(1); break;
	case OP_TICKET: op_ticket_reserve(); break;
	case OP_WAIT0: op_ticket_wait(false); break;
	case OP_WAIT: op_ticket_wait(true); break;
	case OP_CANCEL: op_ticket_cancel(); break;
	case OP_RUN: op_run_pending(); break;
	case OP_RELEASE: op_release(); break;
	case OP_TRANSITION: op_transition(rd8() % 8); break;
	case OP_READONLY: op_set_readonly(); break;
	case OP_FULL: op_set_full(); break;
	case OP_ENABLE_STATE: op_enable_state(); break;
	case OP_UNALLOC: op_set_unallocated(); break;
	case OP_DELALLOC: op_account_delalloc(); break;
	case OP_ERROR: op_set_error(); break;
	case OP_SHUTDOWN: op_shutdown(); break;
	case OP_RSV_INIT: op_rsv_init(); break;
	case OP_RSV_DESTROY: op_rsv_destroy(); break;
	case OP_RSV_ADD: op_rsv_add(false); break;
	case OP_RSV_REFILL: op_rsv_add(true); break;
	case OP_RSV_USE: op_rsv_use(); break;
	case OP_RSV_MIGRATE: op_rsv_migrate(); break;
	case OP_RSV_CHECK: op_rsv_check(); break;
	case OP_RSV_RELEASE: op_rsv_release(); break;
	case OP_RSV_FALLBACK: op_rsv_fallback(); break;
	case OP_RSV_FAILFAST: op_rsv_failfast(); break;
	case OP_GLOBAL: op_resize_global(); break;
	case OP_QUOTA_CREATE: op_quota_create(); break;
	case OP_QUOTA: op_quota(rd8() % 10); break;
	case OP_ZONED_INIT: op_zoned_init(); break;
	case OP_ZONE_ADD: op_zone_add(); break;
	case OP_ZONE: op_zone(rd8() % 8); break;
	case OP_BG_INIT: bg_init_from_input(); break;
	case OP_BG_ADD: op_bg_add(); break;
	case OP_BG_ALLOC: op_bg_extent(true); break;
	case OP_BG_FREE: op_bg_extent(false); break;
	case OP_BG_COMMIT: op_bg_commit(); break;
	case OP_BG_REMOVE: op_bg_remove(); break;
	case OP_BG_RECLAIM: op_bg_reclaim(); break;
	case OP_BG_QUERY: op_bg_query(); break;
	case OP_CLEAR_ERROR: op_clear_error(); break;
	case OP_SET_RECLAIMABLE: op_set_reclaimable(); break;
	case OP_LOAD_USED: op_load_used(); break;
	case OP_RESERVE_PARTIAL: op_reserve_partial(); break;
	default: op_rescript(); break;
	}
	if (trace) {
		for (int k = 0; k < SRSV_POOL_COUNT; k++) {
			const struct model_pool *p = &F.m.pools[k];

			if (!p->exists)
				continue;
			fprintf(stderr, "  pool %d: total %llu used %llu pinned "
				"%llu reserved %llu may_use %llu mover %llu/%llu "
				"tickets %u+%u granted %llu failed %llu "
				"error_failures %llu\n", k,
				(unsigned long long)p->total,
				(unsigned long long)p->used,
				(unsigned long long)p->pinned,
				(unsigned long long)p->reserved,
				(unsigned long long)p->may_use,
				(unsigned long long)p->mover_reserved,
				(unsigned long long)p->mover_size,
				p->qlen[MODEL_Q_PRIORITY], p->qlen[MODEL_Q_NORMAL],
				(unsigned long long)p->granted,
				(unsigned long long)p->failed,
				(unsigned long long)p->error_failures);
		}
	}
	if (trace && F.m.bg_on)
		fprintf(stderr, "  groups %u added %llu returned %llu sweeps %llu "
			"marked %llu reclaimed %llu failed %llu unallocated %llu "
			"callbacks %llu\n", F.m.nr_bgs,
			(unsigned long long)F.m.bgst.added,
			(unsigned long long)F.m.bgst.returned,
			(unsigned long long)F.m.bgst.sweeps,
			(unsigned long long)F.m.bgst.marked,
			(unsigned long long)F.m.bgst.reclaimed,
			(unsigned long long)F.m.bgst.reclaim_failed,
			(unsigned long long)F.m.unallocated,
			(unsigned long long)F.m.log_total);
	for (unsigned i = 0; trace && F.m.bg_on && i < F.m.nr_bgs; i++) {
		const struct model_bgroup *g = &F.m.bgs[i];

		fprintf(stderr, "    group %llu+%llu pool %d used %llu pinned "
			"%llu+%llu mark %u%s%s%s%s\n",
			(unsigned long long)g->start,
			(unsigned long long)g->length, g->pool,
			(unsigned long long)g->used,
			(unsigned long long)g->pinned[0],
			(unsigned long long)g->pinned[1], g->reclaim_mark,
			g->readonly ? " readonly" : "",
			g->taken ? " taken" : "", g->unused ? " unused" : "",
			g->candidate ? " candidate" : "");
	}
	compare_all();
}

static void teardown(void)
{
	for (int i = 0; i < NUSER; i++)
		if (F.m.rsvs[SRSV_RSV_TYPE_COUNT + i].valid)
			EQ("rsv_destroy (teardown)",
			   srsv_rsv_destroy(&F.user_rsv[i]), 0);
	srsv_ctx_destroy(F.ctx);
	F.ctx = NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	memset(&F, 0, sizeof(F));
	F.cmp_pool = -1;
	F.p = data;
	F.n = size;
	for (int i = 0; i < NSLOTS; i++) {
		slot_pool[i] = -1;
		slot_counted[i] = false;
		slot_null[i] = false;
	}
	if (setup())
		return 0;
	for (F.opno = 1; F.opno <= MAX_OPS && F.n; F.opno++)
		run_op(pick_op(rd8()));
	teardown();
	return 0;
}

#ifdef FUZZ_REPLAY
/*
 * Replay driver for compilers without libFuzzer: run every file named on
 * the command line (directories: every file in them).  Exit status 0 when
 * every input ran without a mismatch (a mismatch aborts).
 */
#include <dirent.h>
#include <sys/stat.h>

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long len;

	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(len > 0 ? (size_t)len : 1);
	if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
		fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)len);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned files = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		DIR *d;
		struct dirent *e;

		if (stat(argv[i], &st))
			return 2;
		if (!S_ISDIR(st.st_mode)) {
			if (replay_file(argv[i]))
				return 2;
			files++;
			continue;
		}
		d = opendir(argv[i]);
		if (!d)
			return 2;
		while ((e = readdir(d))) {
			char path[4096];

			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
			if (replay_file(path)) {
				closedir(d);
				return 2;
			}
			files++;
		}
		closedir(d);
	}
	printf("fuzz_replay: %u inputs, no mismatch\n", files);
	return files ? 0 : 1;
}
#endif
