/* SPDX-License-Identifier: MIT */
/*
 * The probes of provider "spacersv": the tracepoint provider package,
 * built as its own shared object, libspacersv-tp.so (lib/meson.build), the
 * only part of libspacersv that links liblttng-ust.  The tracepoints
 * themselves are defined in the library (lib/trace.c, with dynamic
 * linkage); loading this object (LD_PRELOAD, or LIBSPACERSV_TRACE, see
 * lib/trace.c and docs/tracing.md) registers the probes with lttng-ust,
 * which connects them to the library's tracepoints.
 *
 * Going through lib/trace.h (rather than including spacersv_tp.h alone)
 * gives the probes the definition of struct srsv__dump they read.  A
 * provider must not be unloaded while a session may call its probes: never
 * dlclose() this object.
 */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES

#include "trace.h"

#if !SRSV_TRACING
#error "spacersv_tp.c is built only with tracing enabled"
#endif
