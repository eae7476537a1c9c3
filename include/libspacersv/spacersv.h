/* SPDX-License-Identifier: MIT */
/**
 * @file spacersv.h
 * libspacersv: space reservation for storage engines, after btrfs.
 *
 * Include this header only; it includes the rest.
 *
 * Conventions, stated once:
 * - Every public symbol starts with srsv_ / SRSV_.
 * - Functions return 0 or a negative errno.  Bad input is refused with
 *   -EINVAL (or the documented errno) and changes nothing.  A function that
 *   takes a callback and fails never calls it.
 * - Every function is thread-safe unless its documentation says otherwise.
 * - Flush callbacks run with no library lock held, on a library worker
 *   thread, on a thread waiting on a priority ticket, or in the thread that
 *   calls srsv_ctx_run_pending() in manual mode.  They may call back into the
 *   library with non-flushing calls.
 * - Sizes are bytes in uint64_t; a single request or pool size above
 *   ::SRSV_MAX_BYTES is refused with -EINVAL (it could only be a wrapped
 *   negative number).
 */
#ifndef LIBSPACERSV_SPACERSV_H
#define LIBSPACERSV_SPACERSV_H

/*
 * The version of these headers.  meson's project version is the one source;
 * the library's build fails (lib/version.c) when these differ from it.
 */
#define SRSV_VERSION_MAJOR 0	/**< major version of the headers */
#define SRSV_VERSION_MINOR 1	/**< minor version of the headers */
#define SRSV_VERSION_PATCH 0	/**< patch version of the headers */

/** Largest size the library accepts for one request or one pool (4 EiB). */
#define SRSV_MAX_BYTES (UINT64_C(1) << 62)

#include <libspacersv/types.h>
#include <libspacersv/ctx.h>
#include <libspacersv/space.h>
#include <libspacersv/rsv.h>
#include <libspacersv/debug.h>
#include <libspacersv/quota.h>
#include <libspacersv/delalloc.h>
#include <libspacersv/zoned.h>
#include <libspacersv/async.h>
#include <libspacersv/bgroup.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The version of the library that is running, as "MAJOR.MINOR.PATCH": it
 * may be newer than the headers the caller was compiled with (compare with
 * ::SRSV_VERSION_MAJOR and its siblings).
 * @return a static string; never NULL
 * @note Thread-safe; the string lives as long as the process.
 */
const char *srsv_version(void);

#ifdef __cplusplus
}
#endif

#endif /* LIBSPACERSV_SPACERSV_H */
