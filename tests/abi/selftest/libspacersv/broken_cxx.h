/* SPDX-License-Identifier: MIT */
/* Self-test fixture for check-headers.py: valid C99, not valid C++ (a
 * parameter named with a C++ keyword).  abi-selftest: expect c++11 */
#ifndef SRSV_SELFTEST_BROKEN_CXX_H
#define SRSV_SELFTEST_BROKEN_CXX_H

#ifdef __cplusplus
extern "C" {
#endif

int srsv_selftest_keyword(int class);

#ifdef __cplusplus
}
#endif

#endif
