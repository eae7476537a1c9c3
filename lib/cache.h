/* SPDX-License-Identifier: MIT */
/*
 * Per-CPU reservation caches (cache.c).
 */
#ifndef SRSV_CACHE_H
#define SRSV_CACHE_H

#include "internal.h"

/*
 * Whether @bytes go through @s's caches: engaged (which implies
 * configured) and small enough.  One load on the exact path.
 */
static inline bool srsv__cache_engaged(const struct srsv_space *s,
				       uint64_t bytes)
{
	return __builtin_expect(srsv__ld(&s->cache_on) != 0, 0) &&
	       bytes <= s->cache_batch;
}
/* Give @s caches serving requests up to @batch (0: none). */
int srsv__cache_create(struct srsv_space *s, uint64_t batch);
void srsv__cache_free(struct srsv_space *s);
/*
 * Reserve @bytes (at most the batch) from this CPU's cache, refilling it
 * from may_use if the pool is far from full.  *@after: may_use after a
 * refill, 0 when the credit sufficed.  false: use may_use directly.
 * *@gave_back: credit went back to may_use for waiting tickets; the caller
 * grants (srsv__maybe_grant()).  Takes no lock.
 */
bool srsv__cache_take(struct srsv_space *s, uint64_t bytes, uint64_t *after,
		      bool *gave_back);
/*
 * Release @bytes (at most the batch) into this CPU's cache.  1: done;
 * 0: the cache is closed, release to may_use; -EINVAL: more than may_use.
 * *@gave_back as for srsv__cache_take().  Takes no lock.
 */
int srsv__cache_put(struct srsv_space *s, uint64_t bytes, bool *gave_back);
/* Close every cache and return its credit to may_use; the bytes moved. */
uint64_t srsv__cache_drain(struct srsv_space *s);
/*
 * A slow path's decision: keep every cache closed and empty (no reopen, no
 * refill) from srsv__cache_block(), which drains and lets credit in motion
 * land, to srsv__cache_unblock().  The try form (NOWAIT) does not wait for
 * another thread: false, and nothing blocked, if credit is in motion.
 */
void srsv__cache_block(struct srsv_space *s);
bool srsv__cache_try_block(struct srsv_space *s)
	__attribute__((warn_unused_result));
void srsv__cache_unblock(struct srsv_space *s);

#endif /* SRSV_CACHE_H */
