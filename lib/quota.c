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
 *   charge_used: DATA -> used) leave charged unchanged; they run under the
 *   lock so that snapshots see them whole.
 *
 * PAST THE LIMIT
 *
 * btrfs's qgroup_reserve_meta() calls try_flush_qgroup(): commit the
 * transaction (META_PERTRANS becomes free), flush delalloc, and retry once;
 * a root already being flushed makes the others wait for that flush rather
 * than start their own.  Here the engine's srsv_config::quota_flush does
 * the committing and flushing; the library serialises it: one quota flush
 * at a time per ctx (quota_table.flushing), others wait on flush_cond until
 * the flush generation changes, and everyone retries exactly once.
 *
 * - NOFLUSH (seed 000's noflush): -EDQUOT at once, no callback, no wait.
 * - NOWAIT: the quota lock is only try-locked; over the limit, or lock
 *   busy, is -EAGAIN (never -EDQUOT), no callback, no wait, no allocation.
 * - A quota reservation that would have to flush from inside a flush
 *   callback (space or quota) gets -EDEADLK: it would wait for itself
 *   (btrfs's rule against flushing qgroups while holding a transaction,
 *   research/btrfs-upstream.md section 9, item 9).
 *
 * Lock order (internal.h): pool lock, rsv lock, quota table lock, quota
 * lock.  No other library lock is taken while a quota lock is held, and the
 * quota flush callback runs with none held.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "trace.h"

#define QUOTA_MAGIC 0x71756f74u		/* "quot" */

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
	uint32_t magic;
};

struct srsv__quota_table {
	/* Protects the list and the flush state below. */
	struct srsv__lock lock;
	struct srsv__list quotas;
	/* Broadcast when a quota flush ends. */
	pthread_cond_t flush_cond;
	bool flushing;			/* a quota flush callback is running */
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

/* ---- counters ---- */

/* Lock-free decrease that refuses underflow: -EINVAL and no change. */
static int ctr_sub(volatile AO_t *w, uint64_t bytes)
{
	AO_t old;

	do {
		old = AO_load(w);
		if ((uint64_t)old < bytes)
			return -EINVAL;
	} while (!AO_compare_and_swap_full(w, old, old - (AO_t)bytes));
	return 0;
}

/* Take the whole word: returns what it held. */
static uint64_t ctr_take_all(volatile AO_t *w)
{
	AO_t old;

	do {
		old = AO_load(w);
	} while (old && !AO_compare_and_swap_full(w, old, 0));
	return (uint64_t)old;
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
			return -EAGAIN;
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

/*
 * Run the engine's quota flush for @q, or wait for the one already running
 * in this ctx.  Returns the callback's result (0 for a waiter), or
 * -ESHUTDOWN.
 */
static int quota_flush(struct srsv_quota *q)
{
	struct srsv_ctx *ctx = q->ctx;
	struct srsv__quota_table *t = table_get(ctx, false);
	uint64_t gen;
	int ret;

	if (!srsv__ctx_enter(ctx))
		return -ESHUTDOWN;
	srsv__lock(&t->lock);
	if (t->flushing) {
		/* Someone is already flushing: its flush is ours too. */
		AO_fetch_and_add1(&q->stat_flush_waits);
		gen = t->flush_gen;
		while (t->flush_gen == gen)
			srsv__cond_wait(&t->lock, &t->flush_cond, NULL);
		srsv__unlock(&t->lock);
		srsv__ctx_leave(ctx);
		return 0;
	}
	t->flushing = true;
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

	srsv__lock(&t->lock);
	t->flushing = false;
	t->flush_gen++;
	pthread_cond_broadcast(&t->flush_cond);
	srsv__unlock(&t->lock);
	srsv__ctx_leave(ctx);
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
	int k, ret;

	if (!quota_ok(q) || !bytes || (flags & ~known))
		return -EINVAL;
	for (k = 0; k < SRSV_QUOTA_KIND_COUNT; k++) {
		if (bytes[k] > SRSV_MAX_BYTES)
			return -EINVAL;
		total += bytes[k];	/* <= 3 * 2^62: no overflow */
	}
	if (!total)
		return 0;

	ret = try_admit(q, bytes, total, nowait);
	if (ret != -EDQUOT)
		goto out;
	if (nowait) {
		/* Seed 000: the caller retries blocking; -EDQUOT is for it. */
		ret = -EAGAIN;
		goto refused;
	}
	if ((flags & SRSV_QUOTA_NOFLUSH) || !q->ctx->cfg.quota_flush)
		goto refused;
	if (srsv__in_callback()) {
		ret = -EDEADLK;
		goto out;
	}
	ret = quota_flush(q);
	if (ret == -ESHUTDOWN)
		goto out;
	if (ret) {
		/* types.h: a failed flush fails the reservation, no retry. */
		ret = -EDQUOT;
		goto refused;
	}
	ret = try_admit(q, bytes, total, false);
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
	if (!quota_ok(q) || !limit_ok(limit))
		return -EINVAL;
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

	if (!quota_ok(q) || !kind_ok((int)kind) || bytes > SRSV_MAX_BYTES)
		return -EINVAL;
	v[kind] = bytes;
	return srsv__quota_reserve_kinds(q, v, flags);
}

SRSV__EXPORT int srsv_quota_release(struct srsv_quota *q,
				    enum srsv_quota_kind kind, uint64_t bytes)
{
	int ret;

	if (!quota_ok(q) || !kind_ok((int)kind))
		return -EINVAL;
	if (!bytes)
		return 0;
	/* Kind first, charged second: see the essay. */
	ret = ctr_sub(&q->reserved[kind], bytes);
	if (!ret)
		ret = ctr_sub(&q->charged, bytes);
	srsv__trace_quota(q->id, SRSV__QUOTA_RELEASE, (int)kind, bytes, ret);
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
	return ret;
}

SRSV__EXPORT int srsv_quota_commit_one(struct srsv_quota *q, uint64_t *freed)
{
	uint64_t bytes;

	if (!quota_ok(q))
		return -EINVAL;
	bytes = ctr_take_all(&q->reserved[SRSV_QUOTA_META_PERTRANS]);
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
			srsv_quota_commit_one(srsv__container_of(n,
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
	return ret;
}

SRSV__EXPORT int srsv_quota_snapshot(struct srsv_quota *q,
				     struct srsv_quota_info *info)
{
	int k;

	if (!quota_ok(q) || !info)
		return -EINVAL;
	memset(info, 0, sizeof(*info));
	srsv__lock(&q->lock);
	info->id = q->id;
	info->limit = q->limit;
	for (k = 0; k < SRSV_QUOTA_KIND_COUNT; k++)
		info->reserved[k] = srsv__ld(&q->reserved[k]);
	info->used = srsv__ld(&q->used);
	info->charged = srsv__ld(&q->charged);
	srsv__unlock(&q->lock);
	info->flushes = srsv__ld(&q->stat_flushes);
	info->flush_waits = srsv__ld(&q->stat_flush_waits);
	info->edquot = srsv__ld(&q->stat_edquot);
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
