/* SPDX-License-Identifier: MIT */
/*
 * Quotas' internal side (quota.c), for delalloc.c, ctx.c and the
 * white-box tests.
 */
#ifndef SRSV_QUOTA_H
#define SRSV_QUOTA_H

#include "internal.h"
#include "lock.h"

/* Reserve several quota kinds in one admission (the delalloc helper). */
int srsv__quota_reserve_kinds(struct srsv_quota *q,
			      const uint64_t bytes[SRSV_QUOTA_KIND_COUNT],
			      unsigned flags);
/*
 * A delalloc write reached disk, all or nothing: META_PREALLOC -@meta,
 * META_PERTRANS +@meta_used (<= @meta), DATA -@data, used +@data.
 * -EINVAL, nothing changed, when the tenant holds less than that.
 */
int srsv__quota_finish(struct srsv_quota *q, uint64_t data, uint64_t meta,
		       uint64_t meta_used);
/* White-box tests: the quota's lock, to hold it from another thread. */
struct srsv__lock *srsv__quota_lock_ptr(struct srsv_quota *q);
/* srsv_ctx_destroy(): free the ctx's quota table. */
void srsv__quota_ctx_destroy(struct srsv_ctx *ctx);

#endif /* SRSV_QUOTA_H */
