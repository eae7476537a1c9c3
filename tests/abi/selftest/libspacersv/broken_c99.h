/* SPDX-License-Identifier: MIT */
/* Self-test fixture for check-headers.py: a header that is valid C++ but
 * not valid C99 -pedantic.  abi-selftest: expect c99 */
#ifndef SRSV_SELFTEST_BROKEN_C99_H
#define SRSV_SELFTEST_BROKEN_C99_H

#ifdef __cplusplus
extern "C" {
#endif

/* An unprototyped declaration: -Wstrict-prototypes (C only) rejects it. */
int srsv_selftest_unprototyped();

#ifdef __cplusplus
}
#endif

#endif
