/* SPDX-License-Identifier: MIT */
/*
 * Self-test fixture for check-exports.py: a library that leaks one symbol
 * without the prefix and one internal srsv__ symbol, and exports one good
 * symbol.  Built with default visibility and no version script, as a
 * library whose build forgot both would be.
 */
int srsv_selftest_good(int x);
int srsv__selftest_internal(int x);
int selftest_leaky_helper(int x);

int selftest_leaky_helper(int x)
{
	return x + 1;
}

int srsv__selftest_internal(int x)
{
	return selftest_leaky_helper(x) * 2;
}

int srsv_selftest_good(int x)
{
	return srsv__selftest_internal(x);
}

/* Exported, versioned nowhere and declared in no header. */
int srsv_selftest_undeclared(void);

int srsv_selftest_undeclared(void)
{
	return 0;
}
