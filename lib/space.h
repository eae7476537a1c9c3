/* SPDX-License-Identifier: MIT */
/*
 * The pool API's internal side (space.c).
 */
#ifndef SRSV_SPACE_H
#define SRSV_SPACE_H

#include "internal.h"

/* srsv_space_release() for NOWAIT callers (undo paths): never blocks. */
int srsv__space_release_nowait(struct srsv_space *s, uint64_t bytes);

#endif /* SRSV_SPACE_H */
