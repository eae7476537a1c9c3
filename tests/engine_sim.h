/* SPDX-License-Identifier: MIT */
/*
 * engine_sim: a small scriptable storage engine for the tests.
 *
 * A test builds a ctx through the simulator (manual or threaded), tells it
 * what to do when the library asks for a flush state ("on COMMIT_TRANS unpin
 * everything", "on ALLOC_CHUNK grow the pool by 1 MiB", "on DELALLOC sleep
 * 2 ms then release 64 KiB of the engine's may_use", "return -EIO", "reserve
 * NO_FLUSH from inside the callback"), runs its scenario and then reads the
 * call log (every callback: state, bytes, for_preempt, pool, thread) and the
 * pool counters.
 *
 * The simulator frees space only through the public transition functions
 * (srsv_space_unpin(), srsv_space_release(), srsv_space_grow(), ...), as a
 * real engine must, and uses only the public API, so it links against both
 * the shared library and the static (white-box) one.
 *
 * Thread-safety: every esim_*() function is thread-safe (one mutex per
 * simulator, never held while calling into the library), so threaded ctxs
 * may call the flush callback from several workers at once.
 */
#ifndef SRSV_TESTS_ENGINE_SIM_H
#define SRSV_TESTS_ENGINE_SIM_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libspacersv/spacersv.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Sizes tests talk in. */
#define ESIM_KIB (UINT64_C(1) << 10)
#define ESIM_MIB (UINT64_C(1) << 20)
#define ESIM_GIB (UINT64_C(1) << 30)

/* "As much as there is" for ESIM_UNPIN / ESIM_RELEASE. */
#define ESIM_ALL UINT64_MAX

/*
 * Call log size.  The longest deterministic scenario (tickets failing after
 * the async metadata walk: 3 cycles of 11 states, plus restarts) logs well
 * under 200 calls; threaded tests only look at the first calls or at the
 * per-state counts, which are never dropped.
 */
#define ESIM_LOG_MAX 4096

/* Actions a simulator can hold (a scenario uses a handful). */
#define ESIM_MAX_ACTIONS 32

struct esim;

/* What an action does when its state is flushed. */
enum esim_op {
	/* Do nothing (the call is still logged and returns 0). */
	ESIM_NOP = 0,
	/* srsv_space_unpin(min(arg, pinned)): a commit. */
	ESIM_UNPIN,
	/* srsv_space_release(min(arg, what the engine holds in this pool)),
	 * see esim_hold(): delalloc / delayed items giving back may_use. */
	ESIM_RELEASE,
	/* srsv_space_grow(arg) and lower the ctx's unallocated bytes by arg;
	 * -ENOSPC (pool full) when unallocated < arg: a chunk allocation. */
	ESIM_GROW,
	/* Sleep arg milliseconds (slow I/O). */
	ESIM_SLEEP_MS,
	/* Return error (the action's error field) from the callback. */
	ESIM_RETURN,
	/* Re-enter: srsv_space_reserve(arg, NO_FLUSH) then release on success;
	 * the result is recorded (esim_reenter_results()). */
	ESIM_REENTER_NOFLUSH,
	/* Re-enter with a flushing mode (FLUSH_ALL, FLUSH_DATA for data
	 * pools): must get -EDEADLK; the result is recorded and a grant, if
	 * any, released. */
	ESIM_REENTER_FLUSH,
	/* srsv_space_free_reserved(min(arg, reserved)). */
	ESIM_FREE_RESERVED,
	/* srsv_ctx_set_error(ctx, error). */
	ESIM_SET_ERROR,
	/* Call fn(sim, space, state, bytes, fn_arg); its return value (if
	 * negative) is the callback's. */
	ESIM_CALL
};

typedef int (*esim_fn)(struct esim *sim, struct srsv_space *space,
		       enum srsv_flush_state state, uint64_t bytes,
		       void *fn_arg);

/* One scripted reaction.  Zero-initialise, then fill. */
struct esim_action {
	/* State it reacts to; 0 reacts to every state. */
	enum srsv_flush_state state;
	/* Pool kind it reacts to (::srsv_pool), or -1 (ESIM_ANY) for all. */
	int pool;
	/* -1 any caller, 0 only non-preemptive calls, 1 only preemptive. */
	int preempt;
	enum esim_op op;
	uint64_t arg;
	/* ESIM_RETURN / ESIM_SET_ERROR: a negative errno. */
	int error;
	/* Fire at most this many times; 0 = unlimited. */
	unsigned times;
	esim_fn fn;
	void *fn_arg;
};

#define ESIM_ANY (-1)

/* One logged callback call. */
struct esim_call {
	uint64_t seq;			/* 0, 1, 2, ... over the sim's life */
	enum srsv_flush_state state;
	uint64_t bytes;			/* the library's hint */
	bool for_preempt;
	int pool;			/* srsv_space_kind() */
	pthread_t thread;		/* caller of the callback */
	int ret;			/* what the callback returned */
	bool done;			/* ret is valid (the call returned) */
};

/* Results of the re-entering actions. */
struct esim_reenter {
	unsigned noflush_calls;
	unsigned noflush_ok;		/* reserve returned 0 (then released) */
	int noflush_last;		/* last reserve result */
	unsigned flush_calls;
	unsigned flush_edeadlk;		/* flushing reserve returned -EDEADLK */
	int flush_last;			/* last flushing reserve result */
	unsigned release_errors;	/* a release of a re-entry grant failed */
};

struct esim {
	pthread_mutex_t lock;
	struct srsv_ctx *ctx;		/* set by esim_ctx_create() */

	/* Protected by lock. */
	struct esim_action actions[ESIM_MAX_ACTIONS];
	unsigned fired[ESIM_MAX_ACTIONS];
	unsigned nr_actions;
	/* States the engine "does not have": -EOPNOTSUPP unless an action
	 * matched (bit 1 << state). */
	uint32_t unsupported;
	struct esim_call log[ESIM_LOG_MAX];
	size_t log_len;
	uint64_t log_dropped;
	uint64_t seq;
	uint64_t calls[SRSV_STATE_COUNT];
	uint64_t preempt_calls[SRSV_STATE_COUNT];
	/* Engine-held may_use per pool kind (ESIM_RELEASE draws on it). */
	uint64_t held[SRSV_POOL_COUNT];
	/* Action failures the engine saw (an unpin racing another, ...). */
	uint64_t action_errors;
	int last_action_error;
	struct esim_reenter reenter;
	/* Threads currently inside the callback, and the most ever seen. */
	unsigned inside, max_inside;
	/* esim_freeze(): callbacks run no action. */
	bool frozen;
};

/* ---- life cycle ---- */

/*
 * Allocate a simulator.  Aborts on out-of-memory (tests only).
 */
struct esim *esim_new(void);

/*
 * srsv_config_init() and hook the simulator in (flush, user), then set
 * @flags.  The test then sets pool sizes, unallocated bytes, etc.
 */
void esim_config_init(struct esim *sim, struct srsv_config *cfg,
		      unsigned flags);

/*
 * Create the ctx from @cfg (flush/user forced to the simulator's) into
 * sim->ctx.  Returns srsv_ctx_create()'s result.
 */
int esim_ctx_create(struct esim *sim, const struct srsv_config *cfg);

/*
 * One-call setup: a ctx with DATA, METADATA and a 4 MiB SYSTEM pool,
 * @unallocated bytes of device space left, @flags (SRSV_CTX_*; pass
 * SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT for deterministic tests).  Aborts
 * if creation fails.
 */
struct esim *esim_setup(unsigned flags, uint64_t data_bytes,
			uint64_t meta_bytes, uint64_t unallocated);

/* Destroy the ctx (if any) and free the simulator.  NULL is a no-op. */
void esim_free(struct esim *sim);

/* srsv_ctx_space(sim->ctx, kind) */
struct srsv_space *esim_space(struct esim *sim, enum srsv_pool kind);

/* ---- scripting ---- */

/* Add @a; returns its index, or -ENOSPC when the table is full. */
int esim_add(struct esim *sim, const struct esim_action *a);

/* Shorthand: on @state (any pool, any caller, unlimited) do @op(@arg). */
int esim_on(struct esim *sim, enum srsv_flush_state state, enum esim_op op,
	    uint64_t arg);

/* Shorthand: on @state return @error (-EOPNOTSUPP, -EIO, ...). */
int esim_on_error(struct esim *sim, enum srsv_flush_state state, int error);

/* Remove every action (logs and counts stay). */
void esim_clear_actions(struct esim *sim);

/* How many times action @idx fired. */
unsigned esim_fired(struct esim *sim, int idx);

/*
 * Freeze the engine: from now on every callback returns 0 at once, without
 * running an action (it is still logged and counted).  With
 * esim_inside() == 0 afterwards, no callback can change the books any more:
 * a checkpoint's quiescence that does not depend on timing.
 */
void esim_freeze(struct esim *sim, bool frozen);

/* Threads inside the callback now. */
unsigned esim_inside(struct esim *sim);

/* Mark @state as not implemented (returns -EOPNOTSUPP unless an action
 * for it matches), or implemented again. */
void esim_set_unsupported(struct esim *sim, enum srsv_flush_state state,
			  bool unsupported);

/* The engine now holds @bytes more of @kind's may_use (already reserved by
 * the test); ESIM_RELEASE gives them back. */
void esim_hold(struct esim *sim, enum srsv_pool kind, uint64_t bytes);

/* What the engine still holds in @kind. */
uint64_t esim_held(struct esim *sim, enum srsv_pool kind);

/* ---- the log ---- */

/* Number of calls logged (at most ESIM_LOG_MAX). */
size_t esim_log_len(struct esim *sim);

/* Copy call @i into @out; false if there is no such call. */
bool esim_log_get(struct esim *sim, size_t i, struct esim_call *out);

/*
 * Copy the states of the logged calls (optionally only those of pool @pool,
 * ESIM_ANY for all, and only non-preemptive ones when @skip_preempt) into
 * @states; returns how many matched (may exceed @max).
 */
size_t esim_log_states(struct esim *sim, int pool, bool skip_preempt,
		       enum srsv_flush_state *states, size_t max);

/* Forget the log and the per-state counts. */
void esim_log_clear(struct esim *sim);

/* Calls of @state so far (all pools; preemptive ones included). */
uint64_t esim_calls(struct esim *sim, enum srsv_flush_state state);

/* Total calls so far. */
uint64_t esim_total_calls(struct esim *sim);

/* Copy of the re-entry results. */
struct esim_reenter esim_reenter_results(struct esim *sim);

/* Number of failed actions (and the last error in @last, may be NULL). */
uint64_t esim_action_errors(struct esim *sim, int *last);

/*
 * Format the log as "STATE(pool,bytes[,P]) ..." into @buf, for failure
 * messages.  Returns @buf.
 */
char *esim_log_format(struct esim *sim, char *buf, size_t len);

/* ---- counters ---- */

/* srsv_space_snapshot() of the counters only; aborts on error. */
struct srsv_space_info esim_snap(struct srsv_space *space);

/*
 * Compare the pool's counters with the expected values (UINT64_MAX: do not
 * check that one).  Returns 0 when they match; otherwise writes which
 * differ into @why and returns the number of mismatches.
 */
int esim_check_counters(struct srsv_space *space, uint64_t total,
			uint64_t used, uint64_t pinned, uint64_t reserved,
			uint64_t may_use, uint64_t readonly, char *why,
			size_t len);

/*
 * Compare every field of two snapshots (counters, flags, statistics,
 * ctx-wide figures).  Returns the number of differing fields; their names
 * and values go to @why.
 */
int esim_info_diff(const struct srsv_space_info *a,
		   const struct srsv_space_info *b, char *why, size_t len);

/*
 * Check assertion on the counters, reporting the mismatching fields at the
 * caller's line.  Needs <check.h>.
 */
#define ESIM_ASSERT_COUNTERS(space, total, used, pinned, reserved, may_use, \
			     readonly)					\
	do {								\
		char esim_why_[512];					\
		ck_assert_msg(esim_check_counters((space), (total), (used), \
						  (pinned), (reserved),	\
						  (may_use), (readonly), \
						  esim_why_,		\
						  sizeof(esim_why_)) == 0, \
			      "counters: %s", esim_why_);		\
	} while (0)

/* Check assertion that two snapshots are identical. */
#define ESIM_ASSERT_SAME_INFO(a, b)					\
	do {								\
		char esim_why_[1024];					\
		ck_assert_msg(esim_info_diff((a), (b), esim_why_,	\
					     sizeof(esim_why_)) == 0,	\
			      "snapshot changed: %s", esim_why_);	\
	} while (0)

/* ---- waiting for other threads (bounded; never a timing assertion) ---- */

/*
 * Poll until @space has at least @nr queued tickets (normal + priority).
 * Gives up after @timeout_ms (a hang detector: pass something generous
 * like 10000).  Returns true when reached.
 */
bool esim_wait_tickets(struct srsv_space *space, unsigned nr,
		       unsigned timeout_ms);

/* Poll until the callback has been called at least @nr times in total. */
bool esim_wait_calls(struct esim *sim, uint64_t nr, unsigned timeout_ms);

/*
 * Manual mode: call srsv_ctx_run_pending() until it reports no work, at
 * most @max_rounds times.  Returns the total of work items run, or a
 * negative errno from run_pending.
 */
int esim_run_all(struct esim *sim, unsigned max_rounds);

/* Sleep @ms milliseconds. */
void esim_sleep_ms(unsigned ms);

/* The flush callback itself (exported for tests that build their own
 * config; user must be the struct esim). */
int esim_flush(struct srsv_space *space, enum srsv_flush_state state,
	       uint64_t bytes, bool for_preempt, void *user);

#ifdef __cplusplus
}
#endif

#endif /* SRSV_TESTS_ENGINE_SIM_H */
