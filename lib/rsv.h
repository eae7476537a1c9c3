/* SPDX-License-Identifier: MIT */
/*
 * Block reservations' internal side (rsv.c), for ctx.c and delalloc.c.
 */
#ifndef SRSV_RSV_H
#define SRSV_RSV_H

#include "internal.h"

int srsv__rsv_init(struct srsv_rsv *rsv, struct srsv_space *s, int type);
void srsv__rsv_teardown(struct srsv_rsv *rsv);
/*
 * Take @bytes back out of @rsv as srsv_rsv_add() put them in: reserved and
 * size both drop by @bytes under one rsv lock, so nothing spills and the
 * bytes stay in may_use, owned by the caller.  -ENOSPC (reserved < @bytes)
 * or -EINVAL (size < @bytes) with nothing changed.
 */
int srsv__rsv_take(struct srsv_rsv *rsv, uint64_t bytes);
/* The exact inverse of srsv__rsv_take() (may_use untouched). */
void srsv__rsv_put_back(struct srsv_rsv *rsv, uint64_t bytes);

#endif /* SRSV_RSV_H */
