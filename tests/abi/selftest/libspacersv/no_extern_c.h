/* SPDX-License-Identifier: MIT */
/* Self-test fixture for check-headers.py: compiles as C99 and C++ but
 * forgets extern "C", so C++ callers would look for mangled names.
 * abi-selftest: expect extern-c */
#ifndef SRSV_SELFTEST_NO_EXTERN_C_H
#define SRSV_SELFTEST_NO_EXTERN_C_H

int srsv_selftest_mangled(int x);

#endif
