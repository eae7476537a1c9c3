/* SPDX-License-Identifier: MIT */
/*
 * The engine-callback wrapper (callback.c).
 */
#ifndef SRSV_CALLBACK_H
#define SRSV_CALLBACK_H

#include "internal.h"

/*
 * Call the engine for @state with no lock held; count, trace, and apply
 * the ALLOC_CHUNK rules (-ENOSPC / -EOPNOTSUPP mark the pool full).
 */
int srsv__flush_space(struct srsv_space *s, uint64_t bytes, int state,
		      bool for_preempt);

#endif /* SRSV_CALLBACK_H */
