/* SPDX-License-Identifier: MIT */
/*
 * The tracepoint definitions of provider "spacersv", and the loading of the
 * provider package.  Built only with tracing compiled in.
 *
 * WHY THE PROVIDER IS A SEPARATE SHARED OBJECT
 *
 * lttng-ust(3) describes two ways to link a tracepoint provider package.
 * Linked statically into the instrumented module, it makes that module
 * NEED liblttng-ust, whose constructor starts two listener threads (and
 * loads libnuma) in every process before main(), traced or not; and
 * `pkg-config --static` then asks for a liblttng-ust.a that Debian does not
 * ship.  Linked dynamically (LTTNG_UST_TRACEPOINT_PROBE_DYNAMIC_LINKAGE
 * here, where the tracepoints are defined), the library only dlopen()s the
 * small liblttng-ust-tracepoint.so.1 (no threads) to register its
 * tracepoints, and skips even that quietly when lttng-ust is not
 * installed; the probes live in libspacersv-tp.so (tracepoints/
 * spacersv_tp.c), which alone links liblttng-ust.  A process that wants
 * events loads the provider: LD_PRELOAD=libspacersv-tp.so.0, or
 * LIBSPACERSV_TRACE=1 (or a path), which makes the first srsv_ctx_create()
 * dlopen() it.  Until then every tracepoint's state word stays 0, and a
 * tracepoint costs what it always cost when no session records it: one
 * load and a branch.
 *
 * The provider is never dlclose()d (lttng-ust forbids unloading a provider
 * whose probes a session may call).
 */
#define LTTNG_UST_TRACEPOINT_DEFINE
#define LTTNG_UST_TRACEPOINT_PROBE_DYNAMIC_LINKAGE

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

#if !SRSV_TRACING
#error "trace.c is built only with tracing enabled"
#endif

static pthread_once_t provider_once = PTHREAD_ONCE_INIT;

static void load_provider(void)
{
	const char *v = getenv("LIBSPACERSV_TRACE");
	const char *path;

	if (!v || !*v || !strcmp(v, "0"))
		return;
	path = strcmp(v, "1") ? v : SRSV__TP_SONAME;
	/* Never closed: a session may call its probes until exit. */
	if (!dlopen(path, RTLD_NOW | RTLD_GLOBAL))
		fprintf(stderr, "libspacersv: LIBSPACERSV_TRACE=%s: %s\n", v,
			dlerror());
}

void srsv__trace_init(void)
{
	pthread_once(&provider_once, load_provider);
}
