/* SPDX-License-Identifier: MIT */
/*
 * The delalloc helper's internal side (delalloc.c): its fault hook.
 */
#ifndef SRSV_DELALLOC_H
#define SRSV_DELALLOC_H

#include "internal.h"

/*
 * White-box tests: an int (*)(int step) stored as a word (read with
 * AO_load()), called before each fallible step of the delalloc helper;
 * non-zero fails that step.  Set it while no delalloc call runs.
 */
typedef int (*srsv__delalloc_fault_fn)(int step);
extern volatile AO_t srsv__delalloc_fault;

#endif /* SRSV_DELALLOC_H */
