/* SPDX-License-Identifier: MIT */
/*
 * Per-tenant quotas (btrfs's qgroups, reduced to what a reservation needs).
 *
 * HOW A QUOTA IS CHECKED
 *
 * A tenant is charged for what it has written (used) and for what it holds
 * in reservations of three kinds: DATA, META_PREALLOC and META_PERTRANS
 * (qgroup.c's reservation types).  The sum is kept as one word, "charged",
 * and a reservation of @bytes is admitted when charged + bytes <= limit.
 *
 * - Admission (every increase of charged) happens under the quota's lock,
 *   so two tenants-threads can never both take the last bytes: the limit is
 *   exact, not approximate.
 * - Decreases (release, commit of META_PERTRANS, free_used) are lock-free
 *   compare-and-swap operations that refuse underflow.  They must be: the
 *   undo path of a NOWAIT reservation gives quota back and may not block,
 *   and flush callbacks free quota while reservers hold nothing.  A
 *   decrease lowers the per-kind word first and charged second, so the
 *   admission check can only see charged too high for an instant (and
 *   refuse), never too low (and overshoot the limit).
 * - Transfers between kinds (convert: META_PREALLOC -> META_PERTRANS,
 *   charge_used: DATA -> used, and the delalloc helper's finish) leave
 *   charged unchanged or lower it; they run under the lock so that
 *   snapshots see them whole.
 * - So charged >= used + every reserved kind at every instant a reader can
 *   see, with equality when no lock-free decrease is half done.  A
 *   snapshot reads charged first (acquire) and the other words after it:
 *   any decrease whose charged part it saw had lowered its own word
 *   before, so the relation holds in every snapshot.
 *
 * PAST THE LIMIT
 *
 * btrfs's qgroup_reserve_meta() calls try_flush_qgroup(): commit the
 * transaction (META_PERTRANS becomes free), flush delalloc, and retry once;
 * a root already being flushed makes the others wait for that flush rather
 * than start their own (per root).  Here the engine's
 * srsv_config::quota_flush does the committing and flushing, and the
 * library runs one quota flush at a time per ctx (quota_table.flushing
 * names the tenant being flushed; a commit is ctx-wide, so two at once
 * would only queue behind each other in the engine).  A tenant over its
 * limit:
 *
 * 1. runs the flush if none is running, or waits for the running one;
 * 2. retries once;
 * 3. if it is still over and the flush it waited for was another
 *    tenant's (which may have freed nothing of its own: btrfs would have
 *    flushed its root), gets a flush of its own: it waits until no flush
 *    runs and runs one (or waits for one of its own tenant that another
 *    thread started), and retries once more.
 *
 * So a reservation runs the callback at most once and retries at most
 * twice.  Each wait lasts as long as one running callback; in step 3 a
 * thread may wait for several, as other tenants take the free slot first
 * (it is not handed out in order: tenants flushing back to back is the
 * case where the engine is committing anyway).  Every wait ends early,
 * with -ESHUTDOWN or the ctx's error, when the ctx is shut down or put in
 * an error state: waiters sleep in slices of WAIT_SLICE_NS and look again
 * (the ctx has no hook into the quota table on shutdown).
 *
 * - NOFLUSH (btrfs's noflush): -EDQUOT at once, no callback, no wait.
 * - NOWAIT: the quota lock is only try-locked; over the limit, or lock
 *   busy, is -EAGAIN (never -EDQUOT), no callback, no wait, no allocation.
 * - A quota reservation that would have to flush from inside a flush
 *   callback (space or quota) gets -EDEADLK: it would wait for itself
 *   (btrfs's rule against flushing qgroups while holding a transaction).
 *
 * Lock order (internal.h): pool lock, rsv lock, quota table lock, quota
 * lock.  No other library lock is taken while a quota lock is held, and the
 * quota flush callback runs with none held.
 *
 * Layer: the engine-facing API; it calls only the shutdown gate, the
 * statistics and tracing.  The delalloc helper calls it.
 */
#include <stdlib.h>
#include <string.h>

#include "gate.h"
#include "quota.h"
#include "stats.h"
#include "trace.h"

#define QUOTA_MAGIC 0x71756f74u		/* "quot" */

/*
 * How long a thread waiting for another's quota flush sleeps before it
 * looks at the ctx's shutdown and error flags again.  10 ms: shutdown
 * itself polls every millisecond for threads still inside, a quota flush
 * (a commit) takes tens of milliseconds or more, so a waiter wakes a few
 * times per flush and a shutdown is not held up noticeably.
 */
#define WAIT_SLICE_NS (UINT64_C(10) * 1000 * 1000)

/* The kind field of the trace event for "used bytes" (free_used). */
#define TRACE_KIND_USED (-1)
/* The kind field of the trace event for a flush (no kind). */
#define TRACE_KIND_NONE (-2)

struct srsv_quota {
	struct srsv__list node;		/* on quota_table.quotas, table lock */
	struct srsv_ctx *ctx;
	uint64_t id;
	/* Admission, transfers, the limit and snapshots. */
	struct srsv__lock lock;
	uint64_t limit;			/* protected by lock */
	/* Written under lock when they grow; lock-free CAS when they shrink. */
	volatile AO_t reserved[SRSV_QUOTA_KIND_COUNT];
	volatile AO_t used;
	/* used + every reserved kind; grows only under lock. */
	volatile AO_t charged;
	/* Statistics (atomic increments). */
	volatile AO_t stat_flushes;
	volatile AO_t stat_flush_waits;
	volatile AO_t stat_edquot;
	volatile AO_t stat_nowait;	/* NOWAIT refused over the limit */
	uint32_t magic;
};

struct srsv__quota_table {
	/* Protects the list and the flush state below. */
	struct srsv__lock lock;
	struct srsv__list quotas;
	/* Broadcast when a quota flush ends. */
	pthread_cond_t flush_cond;
	/* The tenant whose flush callback is running, NULL: none.  Only
	 * compared: the flushing thread is inside a call on it, so it cannot
	 * be destroyed meanwhile. */
	struct srsv_quota *flushing;
	uint64_t flush_gen;		/* bumped when a quota flush ends */
};

static const char *const kind_names[SRSV_QUOTA_KIND_COUNT] = {
	[SRSV_QUOTA_DATA] = "data",
	[SRSV_QUOTA_META_PREALLOC] = "meta_prealloc",
	[SRSV_QUOTA_META_PERTRANS] = "meta_pertrans",
};

static bool quota_ok(const struct srsv_quota *q)
{
	return q && q->magic == QUOTA_MAGIC;
}

static bool kind_ok(int kind)
{
	return kind >= 0 && kind < SRSV_QUOTA_KIND_COUNT;
}

static bool limit_ok(uint64_t limit)
{
	return limit <= SRSV_MAX_BYTES || limit == SRSV_QUOTA_NO_LIMIT;
}

/*
 * Count and trace a refused quota call (stats.c) on the pool the bytes of
 * @kind come from: DATA (or MIXED) for data and used bytes
 * (TRACE_KIND_USED), METADATA for the META kinds and unknown ones.
 * Returns -EINVAL.
 */
static int quota_refused(const struct srsv_quota *q, int kind, int refusal,
			 uint64_t bytes)
{
	bool data = kind == SRSV_QUOTA_DATA || kind == TRACE_KIND_USED;

	return srsv__refused(srsv__ctx_space(q->ctx, data ? SRSV_POOL_DATA :
						     SRSV_POOL_METADATA),
			     refusal, bytes);
}

/* ---- counters ---- */

/*
 * Decreases use the shared srsv__ao_sub_checked() (refuses underflow) and
 * srsv__ao_take_all(); this wrapper gives the quota's errno.
 */
static int ctr_sub(volatile AO_t *w, uint64_t bytes)
{
	return srsv__ao_sub_checked(w, bytes) ? 0 : -EINVAL;
}

static void ctr_add(volatile AO_t *w, uint64_t bytes)
{
	AO_fetch_and_add_full(w, (AO_t)bytes);
}

/*
 * The admission check and charge; quota lock held.  charged only grows
 * here, so the check cannot race with another grant.
 */
static int admit_locked(struct srsv_quota *q,
			const uint64_t bytes[SRSV_QUOTA_KIND_COUNT],
			uint64_t total)
{
	uint64_t charged;
	int k;

	srsv__assert_held(&q->lock);
	charged = srsv__ld(&q->charged);
	/* Written as a subtraction: charged + total may not fit in 64 bits
	 * when there is no limit. */
	if (charged > q->limit || total > q->limit - charged)
		return -EDQUOT;
	/* charged first, kinds second: see the essay. */
	ctr_add(&q->charged, total);
	for (k = 0; k < SRSV_QUOTA_KIND_COUNT; k++)
		if (bytes[k])
			ctr_add(&q->reserved[k], bytes[k]);
	return 0;
}

/*
 * One admission attempt.  0, -EDQUOT (over the limit) or, when @nowait and
 * the lock is busy, -EAGAIN.
 */
static int try_admit(struct srsv_quota *q,
		     const uint64_t bytes[SRSV_QUOTA_KIND_COUNT],
		     uint64_t total, bool nowait)
{
	int ret;

	if (nowait) {
		if (!srsv__trylock(&q->lock))
			return srsv__nowait_refused(NULL, SRSV_NOWAIT_LOCK);
	} else {
		srsv__lock(&q->lock);
	}
	ret = admit_locked(q, bytes, total);
	srsv__unlock(&q->lock);
	return ret;
}

/* ---- the table ---- */

static void table_free(struct srsv__quota_table *t)
{
	pthread_cond_destroy(&t->flush_cond);
	srsv__lock_destroy(&t->lock);
	free(t);
}

/*
 * The ctx's quota table, created on first use.  Creation races are settled
 * by a compare-and-swap on ctx->quotas (the loser frees its copy), so the
 * ctx needs no lock for it.
 */
static struct srsv__quota_table *table_get(struct srsv_ctx *ctx, bool create)
{
	volatile AO_t *slot = (volatile AO_t *)(void *)&ctx->quotas;
	struct srsv__quota_table *t;

	t = (struct srsv__quota_table *)(uintptr_t)AO_load_acquire(slot);
	if (t || !create)
		return t;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	if (srsv__lock_init(&t->lock)) {
		free(t);
		return NULL;
	}
	if (srsv__cond_init(&t->flush_cond)) {
		srsv__lock_destroy(&t->lock);
		free(t);
		return NULL;
	}
	srsv__list_init(&t->quotas);
	if (!AO_compare_and_swap_full(slot, 0, (AO_t)(uintptr_t)t)) {
		table_free(t);
		t = (struct srsv__quota_table *)(uintptr_t)
			AO_load_acquire(slot);
	}
	return t;
}

static struct srsv_quota *table_find(struct srsv__quota_table *t, uint64_t id)
{
	struct srsv__list *n;

	srsv__assert_held(&t->lock);
	for (n = t->quotas.next; n != &t->quotas; n = n->next) {
		struct srsv_quota *q =
			srsv__container_of(n, struct srsv_quota, node);

		if (q->id == id)
			return q;
	}
	return NULL;
}

static void quota_free(struct srsv_quota *q)
{
	q->magic = 0;
	srsv__lock_destroy(&q->lock);
	free(q);
}

void srsv__quota_ctx_destroy(struct srsv_ctx *ctx)
{
	struct srsv__quota_table *t = table_get(ctx, false);

	if (!t)
		return;
	while (!srsv__list_empty(&t->quotas)) {
		struct srsv_quota *q = srsv__container_of(t->quotas.next,
							  struct srsv_quota,
							  node);

		srsv__list_del_init(&q->node);
		quota_free(q);
	}
	table_free(t);
	ctx->quotas = NULL;
}

/* ---- flushing ---- */

/* Why a reservation that would flush or wait must stop now, or 0. */
static int ctx_stop_error(const struct srsv_ctx *ctx)
{
	if (srsv__ld(&ctx->closing))
		return -ESHUTDOWN;
	return (int)(int64_t)srsv__ld(&ctx->error);
}

/*
 * Wait until the running quota flush ends; table lock held.  0, or why the
 * wait was cut short (shutdown, the ctx's error).
 */
static int wait_flush_end(struct srsv_ctx *ctx, struct srsv__quota_table *t)
{
	uint64_t gen = t->flush_gen;
	struct timespec slice;
	int ret;

	srsv__assert_held(&t->lock);
	while (t->flush_gen == gen) {
		ret = ctx_stop_error(ctx);
		if (ret)
			return ret;
		srsv__deadline(&slice, WAIT_SLICE_NS);
		srsv__cond_wait(&t->lock, &t->flush_cond, &slice);
	}
	return 0;
}

/*
 * Get a quota flush for @q: run the engine's callback if no flush runs,
 * else wait for the running one.  With @want_own, a flush of another
 * tenant does not count: wait for it to end and look again, until this
 * thread runs one or waits for one of @q's.  *@own tells whether the flush
 * run or waited for was @q's.
 *
 * Returns 0 (flushed, or waited), -EDQUOT (this thread's callback failed:
 * types.h, the reservation fails without a retry), -ESHUTDOWN or the
 * ctx's error (the ctx stopped before or during the wait).
 */
static int quota_flush(struct srsv_quota *q, bool want_own, bool *own)
{
	struct srsv_ctx *ctx = q->ctx;
	struct srsv__quota_table *t = table_get(ctx, false);
	struct srsv_quota *whose;
	int ret;

	*own = false;
	if (!srsv__ctx_enter(ctx))
		return -ESHUTDOWN;
	srsv__lock(&t->lock);
	for (;;) {
		ret = ctx_stop_error(ctx);
		if (ret)
			goto unlock;
		if (!t->flushing)
			break;
		/* Someone is already flushing: wait for it to end. */
		whose = t->flushing;
		AO_fetch_and_add1(&q->stat_flush_waits);
		ret = wait_flush_end(ctx, t);
		if (ret)
			goto unlock;
		if (whose == q || !want_own) {
			/* Our tenant's flush is ours too (btrfs: per root). */
			*own = whose == q;
			goto unlock;
		}
	}
	t->flushing = q;
	srsv__unlock(&t->lock);

	AO_fetch_and_add1(&q->stat_flushes);
	/*
	 * A flush callback like the space ones (spacersv.h): non-flushing
	 * calls back into the library are fine, a flushing reservation gets
	 * -EDEADLK and srsv_ctx_shutdown() -EDEADLK (it would wait for us).
	 */
	srsv__enter_callback();
	ret = ctx->cfg.quota_flush(q, ctx->cfg.user);
	srsv__leave_callback();
	srsv__trace_quota(q->id, SRSV__QUOTA_FLUSH, TRACE_KIND_NONE, 0, ret);
	if (ret)
		ret = -EDQUOT;
	*own = true;

	srsv__lock(&t->lock);
	t->flushing = NULL;
	t->flush_gen++;
	pthread_cond_broadcast(&t->flush_cond);
unlock:
	srsv__unlock(&t->lock);
	srsv__ctx_leave_waited(ctx);
	return ret;
}

/* ---- reservation ---- */

/*
 * Reserve several kinds at once, all or nothing (the delalloc helper takes
 * DATA and META_PREALLOC in one admission, so a NOWAIT write try-locks the
 * quota once and a flushing one flushes at most once).
 */
int srsv__quota_reserve_kinds(struct srsv_quota *q,
			      const uint64_t bytes[SRSV_QUOTA_KIND_COUNT],
			      unsigned flags)
{
	const unsigned known = SRSV_RESERVE_NOWAIT | SRSV_QUOTA_NOFLUSH;
	bool nowait = flags & SRSV_RESERVE_NOWAIT;
	uint64_t total = 0;
	bool own;
	int k, ret;

	if (!quota_ok(q) || !bytes)
		return -EINVAL;
	if (flags & ~known)
		return quota_refused(q, SRSV_QUOTA_META_PREALLOC,
				     SRSV_REFUSED_QUOTA_ARGS, 0);
	for (k = 0; k < SRSV_QUOTA_KIND_COUNT; k++) {
		if (bytes[k] > SRSV_MAX_BYTES)
			return quota_refused(q, k, SRSV_REFUSED_QUOTA_ARGS,
					     bytes[k]);
		total += bytes[k];	/* <= 3 * 2^62: no overflow */
	}
	if (!total)
		return 0;

	ret = try_admit(q, bytes, total, nowait);
	if (ret != -EDQUOT)
		goto out;
	if (nowait) {
		/* As btrfs's nowait path: the caller retries blocking;
		 * -EDQUOT is for it.  The reason tells it so. */
		ret = srsv__nowait_refused(NULL, SRSV_NOWAIT_QUOTA);
		AO_fetch_and_add1(&q->stat_nowait);
		goto refused;
	}
	if ((flags & SRSV_QUOTA_NOFLUSH) || !q->ctx->cfg.quota_flush)
		goto refused;
	if (srsv__in_callback()) {
		ret = -EDEADLK;
		goto out;
	}
	/* Steps 1 and 2 of the essay: a flush (ours or the running one),
	 * one retry. */
	ret = quota_flush(q, false, &own);
	if (!ret)
		ret = try_admit(q, bytes, total, false);
	if (ret == -EDQUOT && !own) {
		/* Step 3: that was another tenant's flush; get our own. */
		ret = quota_flush(q, true, &own);
		if (!ret)
			ret = try_admit(q, bytes, total, false);
	}
	if (ret != -EDQUOT)
		goto out;
refused:
	AO_fetch_and_add1(&q->stat_edquot);
out:
	for (k = 0; k < SRSV_QUOTA_KIND_COUNT; k++)
		if (bytes[k])
			srsv__trace_quota(q->id, SRSV__QUOTA_RESERVE, k,
					  bytes[k], ret);
	return ret;
}

/*
 * The delalloc helper's finish, all or nothing under the lock.  The two
 * decreases are compare-and-swaps because lock-free releases may run; if
 * the second is refused the first is put back before anyone can see it
 * (admission and snapshots take the lock; a concurrent release only ever
 * gives back bytes its caller holds, which ours are not).
 */
int srsv__quota_finish(struct srsv_quota *q, uint64_t data, uint64_t meta,
		       uint64_t meta_used)
{
	int ret;

	if (!quota_ok(q) || meta_used > meta)
		return -EINVAL;
	srsv__lock(&q->lock);
	ret = ctr_sub(&q->reserved[SRSV_QUOTA_META_PREALLOC], meta);
	if (!ret) {
		ret = ctr_sub(&q->reserved[SRSV_QUOTA_DATA], data);
		if (ret)
			ctr_add(&q->reserved[SRSV_QUOTA_META_PREALLOC], meta);
	}
	if (!ret) {
		ctr_add(&q->reserved[SRSV_QUOTA_META_PERTRANS], meta_used);
		ctr_add(&q->used, data);
		/* Kinds first, charged second: see the essay.  Cannot
		 * underflow: charged covers the META_PREALLOC taken. */
		if (meta > meta_used)
			ctr_sub(&q->charged, meta - meta_used);
	}
	srsv__unlock(&q->lock);
	srsv__trace_quota(q->id, SRSV__QUOTA_CONVERT, SRSV_QUOTA_META_PREALLOC,
			  meta_used, ret);
	srsv__trace_quota(q->id, SRSV__QUOTA_RELEASE, SRSV_QUOTA_META_PREALLOC,
			  meta - meta_used, ret);
	srsv__trace_quota(q->id, SRSV__QUOTA_USED, SRSV_QUOTA_DATA, data, ret);
	return ret;
}

/* ---- public API ---- */

SRSV__EXPORT int srsv_quota_create(struct srsv_ctx *ctx, uint64_t id,
				   uint64_t limit, struct srsv_quota **out)
{
	struct srsv__quota_table *t;
	struct srsv_quota *q;
	int ret;

	if (!ctx || !out || !limit_ok(limit))
		return -EINVAL;
	t = table_get(ctx, true);
	if (!t)
		return -ENOMEM;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	ret = srsv__lock_init(&q->lock);
	if (ret) {
		free(q);
		return ret;
	}
	srsv__list_init(&q->node);
	q->ctx = ctx;
	q->id = id;
	q->limit = limit;
	q->magic = QUOTA_MAGIC;

	srsv__lock(&t->lock);
	if (table_find(t, id)) {
		srsv__unlock(&t->lock);
		quota_free(q);
		return -EEXIST;
	}
	srsv__list_add_tail(&q->node, &t->quotas);
	srsv__unlock(&t->lock);
	*out = q;
	return 0;
}

SRSV__EXPORT int srsv_quota_destroy(struct srsv_quota *q)
{
	struct srsv__quota_table *t;
	int k;

	if (!quota_ok(q))
		return -EINVAL;
	t = table_get(q->ctx, false);
	srsv__lock(&t->lock);
	for (k = 0; k < SRSV_QUOTA_KIND_COUNT; k++) {
		if (srsv__ld(&q->reserved[k])) {
			srsv__unlock(&t->lock);
			return -EBUSY;
		}
	}
	srsv__list_del_init(&q->node);
	srsv__unlock(&t->lock);
	quota_free(q);
	return 0;
}

SRSV__EXPORT int srsv_quota_lookup(struct srsv_ctx *ctx, uint64_t id,
				   struct srsv_quota **out)
{
	struct srsv__quota_table *t;
	struct srsv_quota *q = NULL;

	if (!ctx || !out)
		return -EINVAL;
	t = table_get(ctx, false);
	if (!t)
		return -ENOENT;
	srsv__lock(&t->lock);
	q = table_find(t, id);
	srsv__unlock(&t->lock);
	if (!q)
		return -ENOENT;
	*out = q;
	return 0;
}

SRSV__EXPORT int srsv_quota_set_limit(struct srsv_quota *q, uint64_t limit)
{
	if (!quota_ok(q))
		return -EINVAL;
	if (!limit_ok(limit))
		return quota_refused(q, SRSV_QUOTA_DATA,
				     SRSV_REFUSED_QUOTA_ARGS, limit);
	srsv__lock(&q->lock);
	q->limit = limit;
	srsv__unlock(&q->lock);
	return 0;
}

SRSV__EXPORT int srsv_quota_reserve(struct srsv_quota *q,
				    enum srsv_quota_kind kind, uint64_t bytes,
				    unsigned flags)
{
	uint64_t v[SRSV_QUOTA_KIND_COUNT] = { 0 };
	int ret;

	if (!quota_ok(q))
		return -EINVAL;
	if (!kind_ok((int)kind) || bytes > SRSV_MAX_BYTES)
		return quota_refused(q, (int)kind, SRSV_REFUSED_QUOTA_ARGS,
				     bytes);
	v[kind] = bytes;
	/* Keeps a wait's shutdown count while it touches q (internal.h). */
	srsv__outer_begin(q->ctx);
	ret = srsv__quota_reserve_kinds(q, v, flags);
	srsv__outer_end();
	return ret;
}

SRSV__EXPORT int srsv_quota_release(struct srsv_quota *q,
				    enum srsv_quota_kind kind, uint64_t bytes)
{
	int ret;

	if (!quota_ok(q))
		return -EINVAL;
	if (!kind_ok((int)kind))
		return quota_refused(q, (int)kind, SRSV_REFUSED_QUOTA_ARGS,
				     bytes);
	if (!bytes)
		return 0;
	/* Kind first, charged second: see the essay. */
	ret = ctr_sub(&q->reserved[kind], bytes);
	if (!ret)
		ret = ctr_sub(&q->charged, bytes);
	srsv__trace_quota(q->id, SRSV__QUOTA_RELEASE, (int)kind, bytes, ret);
	if (ret)
		quota_refused(q, (int)kind, SRSV_REFUSED_QUOTA_RELEASE, bytes);
	return ret;
}

SRSV__EXPORT int srsv_quota_convert(struct srsv_quota *q, uint64_t bytes)
{
	int ret;

	if (!quota_ok(q))
		return -EINVAL;
	if (!bytes)
		return 0;
	srsv__lock(&q->lock);
	ret = ctr_sub(&q->reserved[SRSV_QUOTA_META_PREALLOC], bytes);
	if (!ret)
		ctr_add(&q->reserved[SRSV_QUOTA_META_PERTRANS], bytes);
	srsv__unlock(&q->lock);
	srsv__trace_quota(q->id, SRSV__QUOTA_CONVERT, SRSV_QUOTA_META_PREALLOC,
			  bytes, ret);
	if (ret)
		quota_refused(q, SRSV_QUOTA_META_PREALLOC,
			      SRSV_REFUSED_QUOTA_RELEASE, bytes);
	return ret;
}

SRSV__EXPORT int srsv_quota_commit_one(struct srsv_quota *q, uint64_t *freed)
{
	uint64_t bytes;

	if (!quota_ok(q))
		return -EINVAL;
	bytes = srsv__ao_take_all(&q->reserved[SRSV_QUOTA_META_PERTRANS]);
	if (bytes)
		ctr_sub(&q->charged, bytes);	/* cannot underflow */
	srsv__trace_quota(q->id, SRSV__QUOTA_COMMIT, SRSV_QUOTA_META_PERTRANS,
			  bytes, 0);
	if (freed)
		*freed = bytes;
	return 0;
}

SRSV__EXPORT int srsv_quota_commit(struct srsv_ctx *ctx, uint64_t *freed)
{
	struct srsv__quota_table *t;
	struct srsv__list *n;
	uint64_t sum = 0, one;

	if (!ctx)
		return -EINVAL;
	t = table_get(ctx, false);
	if (t) {
		srsv__lock(&t->lock);
		for (n = t->quotas.next; n != &t->quotas; n = n->next) {
			/* Cannot fail: the quota is not NULL. */
			(void)!srsv_quota_commit_one(srsv__container_of(n,
					      struct srsv_quota, node), &one);
			sum += one;
		}
		srsv__unlock(&t->lock);
	}
	if (freed)
		*freed = sum;
	return 0;
}

SRSV__EXPORT int srsv_quota_charge_used(struct srsv_quota *q, uint64_t bytes)
{
	int ret;

	if (!quota_ok(q))
		return -EINVAL;
	if (!bytes)
		return 0;
	srsv__lock(&q->lock);
	/* DATA first (it refuses underflow), used second: charged does not
	 * change, and the admission check reads only charged. */
	ret = ctr_sub(&q->reserved[SRSV_QUOTA_DATA], bytes);
	if (!ret)
		ctr_add(&q->used, bytes);
	srsv__unlock(&q->lock);
	srsv__trace_quota(q->id, SRSV__QUOTA_USED, SRSV_QUOTA_DATA, bytes, ret);
	if (ret)
		quota_refused(q, SRSV_QUOTA_DATA, SRSV_REFUSED_QUOTA_RELEASE,
			      bytes);
	return ret;
}

SRSV__EXPORT int srsv_quota_free_used(struct srsv_quota *q, uint64_t bytes)
{
	int ret;

	if (!quota_ok(q))
		return -EINVAL;
	if (!bytes)
		return 0;
	ret = ctr_sub(&q->used, bytes);
	if (!ret)
		ret = ctr_sub(&q->charged, bytes);
	srsv__trace_quota(q->id, SRSV__QUOTA_RELEASE, TRACE_KIND_USED, bytes,
			  ret);
	if (ret)
		quota_refused(q, TRACE_KIND_USED, SRSV_REFUSED_QUOTA_RELEASE,
			      bytes);
	return ret;
}

SRSV__EXPORT int srsv_quota_snapshot_sized(struct srsv_quota *q,
					   struct srsv_quota_info *out,
					   size_t size)
{
	struct srsv_quota_info all, *info = &all;
	int k;

	if (!quota_ok(q) || !out ||
	    size < SRSV__OUT_MIN(struct srsv_quota_info, edquot))
		return -EINVAL;
	memset(info, 0, sizeof(*info));
	srsv__lock(&q->lock);
	info->id = q->id;
	info->limit = q->limit;
	/*
	 * charged first, with acquire, the rest after it: the lock keeps out
	 * increases and transfers, and a lock-free decrease lowers its own
	 * word before charged, so any decrease this load sees is seen by the
	 * loads below too (charged >= used + reserved, quota.h).
	 */
	info->charged = (uint64_t)AO_load_acquire(&q->charged);
	for (k = 0; k < SRSV_QUOTA_KIND_COUNT; k++)
		info->reserved[k] = srsv__ld(&q->reserved[k]);
	info->used = srsv__ld(&q->used);
	srsv__unlock(&q->lock);
	info->flushes = srsv__ld(&q->stat_flushes);
	info->flush_waits = srsv__ld(&q->stat_flush_waits);
	info->edquot = srsv__ld(&q->stat_edquot);
	info->nowait_refused = srsv__ld(&q->stat_nowait);
	SRSV__OUT_COPY(out, all, size, size);
	return 0;
}

SRSV__EXPORT uint64_t srsv_quota_id(const struct srsv_quota *q)
{
	return q ? q->id : 0;
}

SRSV__EXPORT struct srsv_ctx *srsv_quota_ctx(const struct srsv_quota *q)
{
	return q ? q->ctx : NULL;
}

SRSV__EXPORT const char *srsv_quota_kind_name(int kind)
{
	return kind_ok(kind) ? kind_names[kind] : "unknown";
}

/*
 * White-box tests only: the quota's lock, so a test can hold it from
 * another thread and prove NOWAIT callers never wait for it.  Not exported
 * (hidden visibility); reachable only by linking the static library.
 */
struct srsv__lock *srsv__quota_lock_ptr(struct srsv_quota *q)
{
	return &q->lock;
}
