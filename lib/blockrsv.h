/* SPDX-License-Identifier: MIT */
/*
 * Block-reservation accounting: the layout of an rsv, its lock-free
 * readers, and the primitives on its words that the tickets layer (the
 * global reserve's refill and steal) and the rsv API (rsv.c) share.
 * Header-only: each is a few instructions.  Layer: right above the layout
 * (tracing dumps the standard rsvs).
 *
 * An rsv's reserved is an atomic word: srsv_rsv_use(), the hot call, is a
 * compare-and-swap and takes no lock; every other change of it is atomic
 * too, under the rsv lock where the size must be read consistently.  The
 * size only changes under the lock but is read lock-free (the preemptive
 * heuristic reads the standard rsvs on the reservation fast path).
 * "full" is derived: reserved >= size.  Lock order: pool lock, then rsv
 * lock.
 */
#ifndef SRSV_BLOCKRSV_H
#define SRSV_BLOCKRSV_H

#include "internal.h"

/*
 * The internal view of struct srsv_rsv (block reservations).  The public
 * struct is opaque storage (as struct srsv_ticket is), so the lock type
 * and this layout can change without changing the ABI: only the size of
 * the storage, SRSV_RSV_WORDS, is part of it.
 */
struct srsv__rsv {
	pthread_mutex_t lock;		/* protects the fields below */
	struct srsv_space *space;	/* pool the bytes are counted in */
	uint64_t size;			/* target size (atomic word) */
	uint64_t reserved;		/* bytes held, in may_use (atomic word) */
	int type;			/* enum srsv_rsv_type */
	bool failfast;			/* fail use at once, no fallback */
	uint32_t magic;			/* set by srsv_rsv_init() */
};

_Static_assert(sizeof(struct srsv__rsv) <= sizeof(struct srsv_rsv),
	       "struct srsv_rsv too small");
_Static_assert(_Alignof(struct srsv__rsv) <= _Alignof(struct srsv_rsv),
	       "struct srsv_rsv under-aligned");
_Static_assert(sizeof(((struct srsv__rsv *)0)->reserved) == sizeof(AO_t),
	       "rsv counters are atomic words");

static inline struct srsv__rsv *srsv__rsv_of(const struct srsv_rsv *rsv)
{
	return (struct srsv__rsv *)(uintptr_t)rsv->priv.words;
}

/* An rsv's words, read lock-free (btrfs_block_rsv_reserved()). */
static inline uint64_t srsv__rsv_reserved(const struct srsv_rsv *rsv)
{
	return (uint64_t)AO_load_acquire(
		(volatile AO_t *)(uintptr_t)&srsv__rsv_of(rsv)->reserved);
}

static inline uint64_t srsv__rsv_size(const struct srsv_rsv *rsv)
{
	return (uint64_t)AO_load_acquire(
		(volatile AO_t *)(uintptr_t)&srsv__rsv_of(rsv)->size);
}

/* Reserved bytes and size of a standard rsv (0 if it does not exist). */
static inline uint64_t srsv__std_rsv_reserved(const struct srsv_ctx *ctx,
					      int type)
{
	return ctx->std_rsv_ready[type] ?
	       srsv__rsv_reserved(&ctx->std_rsv[type]) : 0;
}

static inline uint64_t srsv__std_rsv_size(const struct srsv_ctx *ctx, int type)
{
	return ctx->std_rsv_ready[type] ? srsv__rsv_size(&ctx->std_rsv[type]) :
					  0;
}

/* A standard rsv's reserved bytes as @s sees them: 0 outside its pool. */
static inline uint64_t srsv__std_reserved_in(const struct srsv_space *s,
					     int type)
{
	return srsv__metadata_space(s->ctx) == s ?
	       srsv__std_rsv_reserved(s->ctx, type) : 0;
}

#define SRSV__RSV_MAGIC 0x72737621u	/* "rsv!" */

static inline volatile AO_t *srsv__rsv_res_word(const struct srsv_rsv *rsv)
{
	return (volatile AO_t *)(uintptr_t)&srsv__rsv_of(rsv)->reserved;
}

static inline volatile AO_t *srsv__rsv_size_word(const struct srsv_rsv *rsv)
{
	return (volatile AO_t *)(uintptr_t)&srsv__rsv_of(rsv)->size;
}

static inline void srsv__rsv_lock(struct srsv_rsv *rsv)
{
	pthread_mutex_lock(&srsv__rsv_of(rsv)->lock);
	srsv__lock_note(true);
}

/* NOWAIT callers: never sleeps. */
static inline bool srsv__rsv_trylock(struct srsv_rsv *rsv)
{
	bool ok = srsv__mutex_trylock_spin(&srsv__rsv_of(rsv)->lock);

	if (ok)
		srsv__lock_note(false);
	else
		srsv__lock_note_busy();
	return ok;
}

static inline void srsv__rsv_unlock(struct srsv_rsv *rsv)
{
	pthread_mutex_unlock(&srsv__rsv_of(rsv)->lock);
}

/* Rsv lock held. */
static inline void srsv__rsv_set_size(struct srsv_rsv *rsv, uint64_t size)
{
	AO_store_release(srsv__rsv_size_word(rsv), (AO_t)size);
}

/* Is @rsv one of its ctx's standard rsvs? */
static inline bool srsv__rsv_is_std(const struct srsv_rsv *rsv)
{
	const struct srsv__rsv *r = srsv__rsv_of(rsv);
	const struct srsv_ctx *ctx = r->space->ctx;

	return r->type >= 0 && r->type < SRSV_RSV_TYPE_COUNT &&
	       rsv == &ctx->std_rsv[r->type];
}

/* Bytes that left a standard rsv: the preemptive flusher's progress. */
static inline void srsv__rsv_drained(struct srsv_rsv *rsv, uint64_t bytes)
{
	if (bytes && srsv__rsv_is_std(rsv))
		AO_fetch_and_add(&srsv__rsv_of(rsv)->space->ctx->std_rsv_drained[
					 srsv__rsv_of(rsv)->type], (AO_t)bytes);
}

static inline void srsv__rsv_res_add(struct srsv_rsv *rsv, uint64_t bytes)
{
	AO_fetch_and_add_full(srsv__rsv_res_word(rsv), (AO_t)bytes);
}

/* Take @bytes if held; false and unchanged otherwise. */
static inline bool srsv__rsv_res_sub(struct srsv_rsv *rsv, uint64_t bytes)
{
	if (!srsv__ao_sub_checked(srsv__rsv_res_word(rsv), bytes))
		return false;
	srsv__rsv_drained(rsv, bytes);
	return true;
}

/* Cut reserved down to @limit; returns what was cut. */
static inline uint64_t srsv__rsv_res_trim(struct srsv_rsv *rsv, uint64_t limit)
{
	AO_t old;

	do {
		old = AO_load(srsv__rsv_res_word(rsv));
		if (old <= limit)
			return 0;
	} while (!AO_compare_and_swap_full(srsv__rsv_res_word(rsv), old,
					   (AO_t)limit));
	srsv__rsv_drained(rsv, old - limit);
	return old - limit;
}

/* The global reserve if it lives in @s, else NULL. */
static inline struct srsv_rsv *srsv__global_rsv_in(struct srsv_space *s)
{
	struct srsv_ctx *ctx = s->ctx;
	struct srsv_rsv *global = &ctx->std_rsv[SRSV_RSV_GLOBAL];

	return ctx->std_rsv_ready[SRSV_RSV_GLOBAL] &&
	       srsv__rsv_of(global)->space == s ? global : NULL;
}

#endif /* SRSV_BLOCKRSV_H */
