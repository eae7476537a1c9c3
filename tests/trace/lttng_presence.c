/* SPDX-License-Identifier: MIT */
/*
 * lttng_presence absent|loaded: what a process linked with libspacersv
 * (and nothing of LTTng) carries of lttng-ust.
 *
 * absent: no LIBSPACERSV_TRACE, no LD_PRELOAD.  liblttng-ust must not be
 *         mapped and the process must have no thread but its own (a
 *         manual-mode ctx starts none), before and after a ctx is created
 *         and used.
 * loaded: the provider was asked for (LIBSPACERSV_TRACE or LD_PRELOAD):
 *         after srsv_ctx_create() liblttng-ust and the provider must be
 *         mapped and lttng-ust's listener threads running.  This is what
 *         makes "absent" a test that can fail.
 *
 * Exit 0 when the expectation holds, 1 otherwise, with the reason.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <libspacersv/spacersv.h>

static int threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* Is an object whose file name contains @name mapped? */
static int mapped(const char *name)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	int found = 0;

	if (!f)
		return -1;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, name) != NULL;
	fclose(f);
	return found;
}

static int check(int loaded, const char *when)
{
	int ust = mapped("/liblttng-ust.so"), tp = mapped("libspacersv-tp.so");
	int n = threads();

	printf("%s: liblttng-ust mapped %d, provider mapped %d, threads %d\n",
	       when, ust, tp, n);
	if (ust < 0 || tp < 0 || n < 0) {
		fprintf(stderr, "cannot read /proc/self\n");
		return 1;
	}
	if (!loaded && (ust || tp || n != 1)) {
		fprintf(stderr, "FAIL: lttng-ust present without the provider\n");
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct srsv_config cfg;
	struct srsv_ctx *ctx;
	struct srsv_space *s;
	int loaded, ret;

	if (argc != 2 || (strcmp(argv[1], "absent") && strcmp(argv[1], "loaded"))) {
		fprintf(stderr, "usage: lttng_presence absent|loaded\n");
		return 2;
	}
	loaded = !strcmp(argv[1], "loaded");
	if (!loaded && check(0, "before srsv_ctx_create"))
		return 1;
	ret = srsv_config_init(&cfg);
	if (ret)
		return 1;
	cfg.flags = SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT;
	cfg.pool_bytes[SRSV_POOL_DATA] = 1 << 20;
	cfg.pool_bytes[SRSV_POOL_METADATA] = 1 << 20;
	cfg.pool_bytes[SRSV_POOL_SYSTEM] = 1 << 20;
	ret = srsv_ctx_create(&cfg, &ctx);
	if (ret) {
		fprintf(stderr, "srsv_ctx_create: %d\n", ret);
		return 1;
	}
	s = srsv_ctx_space(ctx, SRSV_POOL_METADATA);
	if (srsv_space_reserve(s, 4096, SRSV_FLUSH_ALL, 0) ||
	    srsv_space_release(s, 4096)) {
		fprintf(stderr, "reserve/release failed\n");
		return 1;
	}
	ret = check(loaded, "after srsv_ctx_create");
	if (!ret && loaded && (mapped("/liblttng-ust.so") != 1 ||
			       mapped("libspacersv-tp.so") != 1 ||
			       threads() < 2)) {
		fprintf(stderr, "FAIL: the provider was asked for and is not "
			"loaded (or lttng-ust started no thread)\n");
		ret = 1;
	}
	srsv_ctx_destroy(ctx);
	return ret;
}
