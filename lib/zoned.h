/* SPDX-License-Identifier: MIT */
/*
 * Zoned devices' internal side (zoned.c), for the engine-callback wrapper
 * and ctx.c.
 */
#ifndef SRSV_ZONED_H
#define SRSV_ZONED_H

#include "internal.h"

/* Flush states the zoned code implements inside the library (reset /
 * reclaim of zone groups) before the engine is called, bounded and
 * stopping once @bytes are back (0: no target); returns bytes returned to
 * the pool. */
uint64_t srsv__zoned_flush(struct srsv_space *s, int state, uint64_t bytes);
/* srsv_ctx_destroy(): free the zoned state (before the group table). */
void srsv__zoned_ctx_destroy(struct srsv_ctx *ctx);

#endif /* SRSV_ZONED_H */
