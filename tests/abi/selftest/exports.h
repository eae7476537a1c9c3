/* SPDX-License-Identifier: MIT */
/* Self-test fixture for check-exports.py: the "public header" of leaky.c.
 * srsv_selftest_missing is declared but the library does not define it. */
#ifndef SRSV_SELFTEST_EXPORTS_H
#define SRSV_SELFTEST_EXPORTS_H

int srsv_selftest_good(int x);
int srsv_selftest_missing(void);

#endif
