/* SPDX-License-Identifier: MIT */
/*
 * The probes and the tracepoint definitions of provider "spacersv", built
 * into the library when tracing is enabled (lib/meson.build).
 *
 * Going through lib/trace.h (rather than including spacersv_tp.h alone)
 * gives the probes the definition of struct srsv__dump they read, and
 * compiles the wrappers against the provider once more.  The library never
 * dlcloses itself, and a provider must not be unloaded while a session
 * may call its probes: libspacersv must not be dlclose()d by an application
 * that traces it (docs/tracing.md).
 */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE

#include "trace.h"

#if !SRSV_TRACING
#error "spacersv_tp.c is built only with tracing enabled"
#endif
