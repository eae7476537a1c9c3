/* SPDX-License-Identifier: MIT */
/*
 * The shutdown gate (gate.c): threads inside a ctx's slow paths.
 */
#ifndef SRSV_GATE_H
#define SRSV_GATE_H

#include "internal.h"

/* Enter/leave a slow path (shutdown waits for them); false if closing. */
bool srsv__ctx_enter(struct srsv_ctx *ctx);
void srsv__ctx_leave(struct srsv_ctx *ctx);
/*
 * A public call that waits inside (reserve_blocking(), a quota flush) and
 * then goes on using the ctx (srsv_rsv_add(), srsv_delalloc_reserve(),
 * srsv_quota_reserve(), ...) brackets itself with srsv__outer_begin() and
 * srsv__outer_end(): a wait inside leaves with srsv__ctx_leave_waited(),
 * which, inside such a call on the same ctx, keeps the shutdown count until
 * the outermost call ends, so that srsv_ctx_destroy() cannot free what it
 * still touches.
 * Thread-local: costs no shared write when nothing waited.
 */
void srsv__outer_begin(struct srsv_ctx *ctx);
void srsv__outer_end(void);
void srsv__ctx_leave_waited(struct srsv_ctx *ctx);

#endif /* SRSV_GATE_H */
