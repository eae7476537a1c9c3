/* SPDX-License-Identifier: MIT */
/*
 * The library's version.  meson.build's project version is the only source:
 * config.h carries it as a string and as numbers, srsv_version() returns
 * the string, and the assertions below stop the build when the public
 * headers' SRSV_VERSION_* macros were not updated with it.
 */
#include <libspacersv/spacersv.h>

#include "util.h"
#include "version-config.h"

_Static_assert(SRSV_VERSION_MAJOR == SRSV__PROJECT_VERSION_MAJOR &&
	       SRSV_VERSION_MINOR == SRSV__PROJECT_VERSION_MINOR &&
	       SRSV_VERSION_PATCH == SRSV__PROJECT_VERSION_PATCH,
	       "spacersv.h's SRSV_VERSION_* differ from meson's project version");

SRSV__EXPORT const char *srsv_version(void)
{
	return SRSV__PROJECT_VERSION;
}
