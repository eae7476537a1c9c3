/* SPDX-License-Identifier: MIT */
/*
 * A header the sweep generator must refuse (tests/meson.build,
 * sweep-generator-selftest): an exported function whose argument and
 * return value no rule of tests/gen-sweep.py classifies.
 */
#ifndef SRSV_SWEEP_SELFTEST_BROKEN_H
#define SRSV_SWEEP_SELFTEST_BROKEN_H

struct srsv_selftest_mystery;

/**
 * Nothing the sweep knows how to call.
 * @param m a type with no rule
 * @param x a scalar type with no rule
 * @return a type with no rule
 */
double srsv_selftest_unclassified(struct srsv_selftest_mystery *m, float x);

#endif
