/* SPDX-License-Identifier: MIT */
/*
 * model: a reference model of libspacersv's accounting, for the fuzzer.
 *
 * Plain integers, one thread, no locks, no atomics, no pointers between
 * objects (a struct model can be copied with memcpy, which is how the
 * fuzzer asks "would this call block?" without making it).  Each function
 * mirrors one public function of the library on a MANUAL ctx: same
 * arguments (objects are named by index), same return value, same effect
 * on the counters, the ticket queues, the block reservations, the quotas
 * and the zone groups.  It is written from the public headers' doxygen and
 * from btrfs (space-info.c, block-rsv.c), not from the library sources: where the two
 * disagree, the fuzzer says so and a person decides who is right.
 *
 * What is modelled:
 * - pools: the seven counters, reclaim_size, tickets_id, the two FIFO
 *   queues with every ticket's bytes and mode, full, flush (the async
 *   flusher is queued), force_alloc, the clamp (raised when a normal ticket
 *   starts async flushing), the statistics of the snapshot (flush calls per
 *   state, async runs, tickets granted and failed), error_failures and
 *   refused[SRSV_REFUSED_POOL_ARGS] of srsv_space_get_stats(), the
 *   engine's reclaimable figures per state (srsv_space_set_reclaimable()),
 *   srsv_space_load_used();
 * - the movers' reserve of each pool (srsv_config::mover_reserve_bytes):
 *   filled at creation with what fits, refilled before any ticket on
 *   every unpin (after the global reserve), free_reserved, clear_readonly
 *   and grow; SRSV_RESERVE_MOVER reservations (the reserve first, then
 *   the priority modes' queue-jumping rule, a priority ticket when they
 *   must wait); srsv_space_reserve_partial();
 * - the admission rule (btrfs's __reserve_bytes: queue-jumping, plain fit,
 *   overcommit with calc_available_free_space, EMERGENCY), strict FIFO
 *   granting (priority queue first with NO_FLUSH overcommit, then the
 *   normal queue with FLUSH_ALL overcommit);
 * - the walks that srsv_ctx_run_pending() runs (async metadata with commit
 *   cycles and maybe_fail_all_tickets, async data with forced growth), the
 *   same walks run by a waiter on a normal ticket (a MANUAL ctx has no
 *   worker), and the priority walks a waiter runs (LIMIT, EVICT,
 *   FREE_SPACE_INODE and a data mover's FLUSH_DATA), with stealing from
 *   the global reserve; the error state and srsv_ctx_clear_error();
 * - block reservations: add, refill, use, migrate, release with spill
 *   targets, check, the use_fallback chain (a TREELOG rsv stops after its
 *   NO_FLUSH try), failfast, the global reserve's resize;
 * - quotas: limit, the three reserved kinds, used, flush-and-retry once,
 *   NOFLUSH, NOWAIT;
 * - zones: groups, the active list and its tokens, hint, alloc, written,
 *   abandon, free, finish, finish_one, and the RESET_ZONES and
 *   RECLAIM_ZONES passes over their candidate queues (a group joins the
 *   queue when it becomes fully freed or sparse; passes are bounded by a
 *   batch and stop when they gave back what the flush asked for).
 *
 * - block groups (bgroup.h) on a ctx that is not zoned: the table of
 *   chunks, their used and pinned bytes per transaction, return at the
 *   commit that emptied them (not the last group of a pool, not while
 *   reservations hold the pool's free space), the reclaim thresholds
 *   (fixed, and btrfs's calc_dynamic_reclaim_threshold()), the periodic
 *   sweeps with reclaim marks and the urgent second pass
 *   (do_reclaim_sweep()), take and done with their read-only bytes, the
 *   RECLAIM_CHUNKS state (called only with candidates, after a sweep of
 *   the other pools; groups left taken are ended after it), the rescue
 *   rounds of the walks (a walk that may commit and is about to fail
 *   with its pool full runs RECLAIM_CHUNKS and COMMIT_TRANS, at most
 *   four times), and btrfs_statfs() (srsv_ctx_statfs(), any ctx).
 *
 * Not modelled: preemptive flushing and pacing (the model requires
 * SRSV_CTX_NO_PREEMPT and never enables it; SRSV_CTX_NO_DATA_PREEMPT only
 * changes the clamp rule then), time (timeouts are 0 or "forever" only),
 * threads, SRSV_CTX_MANUAL_WAIT, SRSV_FLUSH_MAY_WAIT, asynchronous tickets,
 * per-CPU caches, the refusal counts other than POOL_ARGS.
 *
 * The engine is the caller's: the model calls m->hooks.flush (and the
 * quota and zone callbacks) where the library would call the real ones,
 * and the hooks act on the model through these same functions.
 */
#ifndef SRSV_TESTS_MODEL_H
#define SRSV_TESTS_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libspacersv/spacersv.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Returned (positive) by calls that would sleep for ever on a MANUAL ctx:
 * a normal ticket is still queued, its waiter found no async work to run
 * for it, and nothing but srsv_ctx_run_pending() from another thread
 * could end it. */
#define MODEL_BLOCKS 1

/* Ticket slots the caller may use (0 .. MODEL_TICKETS - 1); one more is
 * kept for the blocking reserve calls. */
#define MODEL_TICKETS 32
/* Caller-owned rsvs (index SRSV_RSV_TYPE_COUNT + i). */
#define MODEL_USER_RSVS 6
#define MODEL_RSVS (SRSV_RSV_TYPE_COUNT + MODEL_USER_RSVS)
#define MODEL_QUOTAS 8
#define MODEL_GROUPS 24
/* Block groups the model can hold (the fuzzer stays below). */
#define MODEL_BGROUPS 48
/* Rescue rounds a walk may run (lib/flush.c: the bound is part of the
 * documented behaviour, "at most four rounds per walk"). */
#define MODEL_MAX_RESCUES 4
/* Callback calls kept in the log (the fuzzer empties it after every call
 * and caps the calls of one input well below this). */
#define MODEL_LOG 512

enum model_ticket_state {
	MODEL_T_IDLE = 0,	/* never started */
	MODEL_T_QUEUED = 1,
	MODEL_T_DONE = 2
};

struct model_ticket {
	int state;		/* enum model_ticket_state */
	int pool;		/* pool kind, -1: none (bad arguments) */
	int mode;
	int error;
	bool priority;
	bool steal;
	bool mover;		/* SRSV_RESERVE_MOVER: its reserve first */
	/* The ticket API's ticket is in flight: queued, until a wait
	 * returned its end (srsv_ticket_reserve() on it: -EBUSY). */
	bool inflight;
	uint64_t bytes;		/* still wanted; 0 once granted */
	uint64_t orig_bytes;
};

/* Queue indices. */
#define MODEL_Q_PRIORITY 0
#define MODEL_Q_NORMAL 1

struct model_pool {
	bool exists;
	int kind;
	bool is_data;		/* DATA or MIXED: never overcommits */
	bool is_metadata;	/* METADATA or MIXED */
	uint64_t total, used, pinned, reserved, may_use, readonly;
	uint64_t zone_unusable;
	uint64_t reclaim_size;
	uint64_t tickets_id;
	unsigned clamp;
	bool full, flush, force_alloc;
	/* FIFO queues of ticket indices. */
	int queue[2][MODEL_TICKETS + 1];
	unsigned qlen[2];
	uint64_t flushes[SRSV_STATE_COUNT];
	/* Bit s: state s answered -EOPNOTSUPP, not called again. */
	uint64_t disabled;
	uint64_t async_runs;
	uint64_t granted, failed;
	/* The movers' reserve (srsv_config::mover_reserve_bytes): its size
	 * and the bytes of may_use it holds. */
	uint64_t mover_size, mover_reserved;
	/* srsv_space_set_reclaimable(): the engine's figure per state. */
	uint64_t reclaimable[SRSV_STATE_COUNT];
	/* srsv_space_stats: refused[SRSV_REFUSED_POOL_ARGS] and
	 * error_failures (the only refusal kind the model counts). */
	uint64_t refused_pool_args, error_failures;
};

struct model_rsv {
	bool valid;		/* initialised and not destroyed */
	bool std;		/* a standard rsv of the ctx */
	int pool;		/* pool kind */
	int type;
	uint64_t size, reserved;	/* "full" is reserved >= size */
	bool failfast;
};

struct model_quota {
	bool exists;
	uint64_t id, limit;
	uint64_t reserved[SRSV_QUOTA_KIND_COUNT];
	uint64_t used;
	uint64_t flushes, flush_waits, edquot;
};

struct model_group {
	bool exists;
	int kind;		/* enum srsv_zone_kind */
	int pool;		/* pool kind it feeds */
	uint64_t start, length, capacity;
	uint64_t alloc_offset, used, reserved, zone_unusable;
	bool active, open, busy;
	bool on_unused, on_reclaim;	/* queued as a candidate */
};

/* A block group (a chunk; the model has no zone groups in its chunk
 * table: block groups are modelled on ctxs that are not zoned). */
struct model_bgroup {
	uint64_t start, length;
	int pool;			/* pool kind (MIXED in a mixed ctx) */
	uint64_t used;
	uint64_t pinned[2];		/* freed, by transaction parity */
	uint64_t pinned_trans[2];
	uint64_t ro_bytes;		/* its bytes in the pool's readonly */
	unsigned reclaim_mark;
	bool readonly, taken, unused, candidate;
	uint64_t taken_round;		/* 0: taken outside a RECLAIM_CHUNKS
					 * callback */
	/* When it joined the reclaim and the unused list (queue order:
	 * ties in reclaim, and the order the commit returns groups). */
	uint64_t candidate_seq, unused_seq;
};

/* One call of the flush callback, for comparing the walks. */
struct model_call {
	int pool;
	int state;
	uint64_t bytes;
};

struct model;

/* The engine, as seen by the model.  NULL hooks behave as a NULL
 * srsv_config::flush / quota_flush / zone callbacks. */
struct model_hooks {
	int (*flush)(struct model *m, int pool, int state, uint64_t bytes,
		     void *user);
	int (*quota_flush)(struct model *m, int quota, void *user);
	int (*zone_reset)(struct model *m, int group, void *user);
	int (*zone_relocate)(struct model *m, int group, void *user);
	void *user;
};

struct model {
	bool created;
	/* The configuration, validated and with its defaults. */
	unsigned flags;
	uint64_t data_chunk_allowance;
	uint64_t zone_bytes;
	uint64_t item_bytes;
	unsigned raid_factor;
	struct srsv_state_array async_md, async_data, priority, evict;
	bool have_quota_flush;

	uint64_t unallocated, delalloc, ordered;
	int error;
	bool closing;
	/* Work recorded for srsv_ctx_run_pending(): pool-kind bitmasks of the
	 * async metadata and async data workers. */
	unsigned pending_md, pending_data;
	/* Steering only (the fuzzer's KB_MANUAL_WAIT_MIXED): a waiter runs
	 * the async work of its ticket's mode only, as the library does
	 * today, even where the other kind serves its MIXED pool. */
	bool wait_own_kind;

	struct model_pool pools[SRSV_POOL_COUNT];
	struct model_ticket tickets[MODEL_TICKETS + 1];
	struct model_rsv rsvs[MODEL_RSVS];
	struct model_quota quotas[MODEL_QUOTAS];

	/* Zoned. */
	bool zoned;
	struct srsv_zoned_config zcfg;
	bool have_zone_reset, have_zone_relocate;
	struct model_group groups[MODEL_GROUPS];	/* registration order */
	int active[MODEL_GROUPS];			/* open groups, in order */
	unsigned nr_active_list;
	unsigned active_count;
	unsigned active_by_class[3];
	unsigned active_by_kind[SRSV_ZONE_KIND_COUNT];
	int dedicated[SRSV_ZONE_KIND_COUNT];		/* -1: none */
	/* Candidates of RESET_ZONES (fully freed) and RECLAIM_ZONES
	 * (sparse), per pool, in the order they became candidates. */
	int unused[SRSV_POOL_COUNT][MODEL_GROUPS];
	unsigned nr_unused[SRSV_POOL_COUNT];
	int reclaim[SRSV_POOL_COUNT][MODEL_GROUPS];
	unsigned nr_reclaim[SRSV_POOL_COUNT];
	uint64_t hints, hint_looked, resets, relocations, flush_looked;

	/* Block groups: configured by model_bgroups_init(). */
	uint64_t device_bytes;
	bool bg_on;
	struct srsv_bgroup_config bgcfg;
	struct model_bgroup bgs[MODEL_BGROUPS];		/* sorted by start */
	unsigned nr_bgs;
	uint64_t bg_committed;
	unsigned bg_taken;
	uint64_t bg_round, bg_rounds;	/* the callback's round; rounds begun */
	uint64_t bg_seq;		/* candidate-list queue order */
	uint64_t bg_reclaimable[SRSV_POOL_COUNT];
	bool bg_ready[SRSV_POOL_COUNT];
	struct srsv_bgroup_stats bgst;
	/* Steering only (the fuzzer's KB_RECLAIM_TIE_POOLS): reclaim_take
	 * breaks ties by pool kind first, as the library does today. */
	bool bg_tie_by_pool;

	/* Inside a flush callback (space, zone or quota). */
	unsigned in_callback;

	struct model_hooks hooks;
	struct model_call log[MODEL_LOG];
	size_t log_len;
	uint64_t log_total;
};

/* ---- ctx ---- */

/*
 * srsv_ctx_create(): validate @cfg exactly as the library documents and
 * build the pools and standard rsvs.  The hooks are set separately
 * (model_set_hooks) and cfg->flush / quota_flush only tell whether the
 * engine has them.  Returns 0 or the library's error.  @cfg must carry
 * SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT (otherwise -ENOTSUP: the model
 * does not know threads and preemptive flushing).
 */
int model_create(struct model *m, const struct srsv_config *cfg);
void model_set_hooks(struct model *m, const struct model_hooks *hooks);

int model_ctx_set_unallocated(struct model *m, uint64_t bytes);
int model_ctx_account_delalloc(struct model *m, int64_t delalloc_delta,
			       int64_t ordered_delta);
int model_ctx_set_error(struct model *m, int error);
int model_ctx_clear_error(struct model *m);
int model_ctx_shutdown(struct model *m);
int model_ctx_run_pending(struct model *m);
/* Does the pool of @kind exist (srsv_ctx_space() != NULL)?  Returns the
 * kind it maps to (MIXED for DATA/METADATA in a mixed ctx) or -1. */
int model_space_of(const struct model *m, int kind);

/* ---- pools (pool: a kind from model_space_of(), -1 for NULL) ---- */

int model_space_reserve(struct model *m, int pool, uint64_t bytes, int mode,
			unsigned flags);
/* Only timeout 0 and UINT64_MAX are modelled. */
int model_space_reserve_timeout(struct model *m, int pool, uint64_t bytes,
				int mode, unsigned flags, uint64_t timeout_ns);
int model_ticket_reserve(struct model *m, int pool, int slot, uint64_t bytes,
			 int mode, unsigned flags);
int model_ticket_wait(struct model *m, int slot, uint64_t timeout_ns);
int model_ticket_cancel(struct model *m, int slot);
int model_space_release(struct model *m, int pool, uint64_t bytes);
int model_space_alloc(struct model *m, int pool, uint64_t bytes);
int model_space_free_reserved(struct model *m, int pool, uint64_t bytes);
int model_space_commit_used(struct model *m, int pool, uint64_t bytes);
int model_space_pin(struct model *m, int pool, uint64_t bytes);
int model_space_unpin(struct model *m, int pool, uint64_t bytes);
int model_space_grow(struct model *m, int pool, uint64_t bytes);
int model_space_shrink(struct model *m, int pool, uint64_t bytes);
int model_space_set_readonly(struct model *m, int pool, uint64_t bytes,
			     bool force);
int model_space_clear_readonly(struct model *m, int pool, uint64_t bytes);
int model_space_set_full(struct model *m, int pool, bool full);
/* srsv_space_enable_state(): call @state (0: every state) again. */
int model_space_enable_state(struct model *m, int pool, int state);
int model_space_set_reclaimable(struct model *m, int pool, int state,
				uint64_t bytes);
int model_space_load_used(struct model *m, int pool, uint64_t bytes);
/* srsv_space_reserve_partial(); @got may be NULL (-EINVAL).  May return
 * MODEL_BLOCKS (the reservation of @min would wait for ever). */
int model_space_reserve_partial(struct model *m, int pool, uint64_t min,
				uint64_t max, int mode, unsigned flags,
				uint64_t *got);

/* ---- block reservations (rsv: index into m->rsvs) ---- */

/* Index of the standard rsv of @type, or -1 (srsv_ctx_rsv() == NULL). */
int model_ctx_rsv(const struct model *m, int type);
int model_rsv_init(struct model *m, int rsv, int pool, int type);
int model_rsv_destroy(struct model *m, int rsv);
int model_rsv_add(struct model *m, int rsv, uint64_t bytes, int mode,
		  unsigned flags);
int model_rsv_refill(struct model *m, int rsv, uint64_t min_reserved,
		     int mode, unsigned flags);
int model_rsv_use(struct model *m, int rsv, uint64_t bytes);
int model_rsv_migrate(struct model *m, int src, int dst, uint64_t bytes,
		      bool update_size);
int model_rsv_check(struct model *m, int rsv, unsigned min_percent);
int model_rsv_release(struct model *m, int rsv, uint64_t bytes,
		      uint64_t *released);
int model_rsv_use_fallback(struct model *m, int rsv, uint64_t bytes,
			   int *used_rsv);
int model_rsv_set_failfast(struct model *m, int rsv, bool failfast);
int model_ctx_resize_global_rsv(struct model *m, uint64_t bytes);

/* ---- quotas (quota: index into m->quotas) ---- */

int model_quota_create(struct model *m, int quota, uint64_t id,
		       uint64_t limit);
int model_quota_destroy(struct model *m, int quota);
/* srsv_quota_lookup(): the index, or -ENOENT. */
int model_quota_lookup(const struct model *m, uint64_t id);
int model_quota_set_limit(struct model *m, int quota, uint64_t limit);
int model_quota_reserve(struct model *m, int quota, int kind, uint64_t bytes,
			unsigned flags);
int model_quota_release(struct model *m, int quota, int kind,
			uint64_t bytes);
int model_quota_convert(struct model *m, int quota, uint64_t bytes);
int model_quota_commit(struct model *m, uint64_t *freed);
int model_quota_commit_one(struct model *m, int quota, uint64_t *freed);
int model_quota_charge_used(struct model *m, int quota, uint64_t bytes);
int model_quota_free_used(struct model *m, int quota, uint64_t bytes);
uint64_t model_quota_charged(const struct model *m, int quota);

/* ---- zones (group: index into m->groups) ---- */

/* @have_reset / @have_relocate: the engine set those callbacks. */
int model_zoned_init(struct model *m, const struct srsv_zoned_config *cfg);
/* Returns the new group's index through @out (may be NULL). */
int model_zone_group_add(struct model *m, int kind, uint64_t start,
			 uint64_t length, uint64_t capacity, int *out);
int model_zone_group_activate(struct model *m, int group);
int model_zone_group_finish(struct model *m, int group);
int model_zoned_finish_one(struct model *m, int *finished);
int model_zone_hint(struct model *m, int kind, uint64_t bytes, int *out);
int model_zone_group_alloc(struct model *m, int group, uint64_t bytes,
			   uint64_t *logical);
int model_zone_group_written(struct model *m, int group, uint64_t bytes);
int model_zone_group_abandon(struct model *m, int group, uint64_t bytes);
int model_zone_group_free(struct model *m, int group, uint64_t bytes);
void model_zone_group_info(const struct model *m, int group,
			   struct srsv_zone_group_info *info);
void model_zoned_get_info(const struct model *m,
			  struct srsv_zoned_info *info);

/* ---- block groups (pool: a kind from model_space_of(), -1 for none;
 * the calls are the library's, with the ctx implied) ---- */

int model_bgroups_init(struct model *m, const struct srsv_bgroup_config *cfg);
int model_bgroup_add(struct model *m, int pool, uint64_t start,
		     uint64_t length);
int model_bgroup_alloc(struct model *m, int pool, uint64_t bytenr,
		       uint64_t bytes);
int model_bgroup_free(struct model *m, int pool, uint64_t bytenr,
		      uint64_t bytes, uint64_t transid);
int model_ctx_commit_done(struct model *m, uint64_t transid);
int model_bgroup_remove(struct model *m, int pool, uint64_t start);
int model_bgroup_get(const struct model *m, uint64_t bytenr,
		     struct srsv_bgroup_info *info);
int model_bgroup_next(const struct model *m, uint64_t from,
		      struct srsv_bgroup_info *info);
int model_bgroup_find_free(const struct model *m, int pool, uint64_t bytes,
			   uint64_t *start);
int model_bgroup_reclaim_take(struct model *m, struct srsv_bgroup_info *info);
int model_bgroup_reclaim_done(struct model *m, uint64_t start, int result);
int model_bgroup_reclaim_threshold(const struct model *m, int pool);
int model_bgroup_stats(const struct model *m, struct srsv_bgroup_stats *st);
int model_ctx_statfs(const struct model *m, struct srsv_statfs *st);

/* ---- views, in the library's structs ---- */

/* What srsv_space_snapshot() would return (age_ns is 0). */
void model_space_info(const struct model *m, int pool,
		      struct srsv_space_info *info,
		      struct srsv_ticket_info *tickets, size_t max,
		      size_t *nr);
void model_rsv_info(const struct model *m, int rsv,
		    struct srsv_rsv_info *info);
void model_quota_info(const struct model *m, int quota,
		      struct srsv_quota_info *info);

#ifdef __cplusplus
}
#endif

#endif /* SRSV_TESTS_MODEL_H */
