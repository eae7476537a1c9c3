/* SPDX-License-Identifier: MIT */
/*
 * srsv_version(): the running library, the headers' macros and meson's
 * project version (passed by tests/meson.build as SRSV_TEST_PROJECT_VERSION)
 * are one version.  Black-box.
 */
#include <stdio.h>
#include <string.h>

#include <check.h>

#include <libspacersv/spacersv.h>

START_TEST(test_version_matches)
{
	char macros[64];
	const char *v = srsv_version();

	ck_assert_ptr_nonnull(v);
	ck_assert_str_eq(v, SRSV_TEST_PROJECT_VERSION);
	snprintf(macros, sizeof(macros), "%d.%d.%d", SRSV_VERSION_MAJOR,
		 SRSV_VERSION_MINOR, SRSV_VERSION_PATCH);
	ck_assert_str_eq(v, macros);
	/* A static string: the same pointer every time. */
	ck_assert_ptr_eq(srsv_version(), v);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("version");
	TCase *tc = tcase_create("version");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_version_matches);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
