/* SPDX-License-Identifier: MIT */
/*
 * A tiny program built against the *installed* libspacersv through
 * pkg-config (tests/abi/install-consumer.sh), as a user would build it:
 * strict C99, public headers only.  It creates a ctx, reserves, releases
 * and destroys, checking the pool's may_use on the way.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <libspacersv/spacersv.h>

#define MIB (UINT64_C(1) << 20)

static int fail(const char *what, int rc)
{
	fprintf(stderr, "consumer: %s failed: %d (%s)\n", what, rc,
		strerror(rc < 0 ? -rc : rc));
	return 1;
}

static int may_use(struct srsv_space *space, uint64_t *out)
{
	struct srsv_space_info info;
	int rc = srsv_space_snapshot(space, &info, NULL, 0, NULL);

	if (rc == 0)
		*out = info.may_use;
	return rc;
}

int main(void)
{
	struct srsv_config cfg;
	struct srsv_ctx *ctx = NULL;
	struct srsv_space *meta;
	uint64_t before, during, after;
	int rc;

	rc = srsv_config_init(&cfg);
	if (rc)
		return fail("srsv_config_init", rc);
	cfg.pool_bytes[SRSV_POOL_DATA] = 64 * MIB;
	cfg.pool_bytes[SRSV_POOL_METADATA] = 64 * MIB;
	cfg.pool_bytes[SRSV_POOL_SYSTEM] = 8 * MIB;
	cfg.unallocated_bytes = 256 * MIB;

	rc = srsv_ctx_create(&cfg, &ctx);
	if (rc)
		return fail("srsv_ctx_create", rc);
	meta = srsv_ctx_space(ctx, SRSV_POOL_METADATA);
	if (!meta)
		return fail("srsv_ctx_space", -EINVAL);

	rc = may_use(meta, &before);
	if (rc)
		return fail("srsv_space_snapshot", rc);
	rc = srsv_space_reserve(meta, MIB, SRSV_FLUSH_ALL, 0);
	if (rc)
		return fail("srsv_space_reserve", rc);
	rc = may_use(meta, &during);
	if (rc)
		return fail("srsv_space_snapshot", rc);
	rc = srsv_space_release(meta, MIB);
	if (rc)
		return fail("srsv_space_release", rc);
	rc = may_use(meta, &after);
	if (rc)
		return fail("srsv_space_snapshot", rc);
	srsv_ctx_destroy(ctx);

	if (during != before + MIB || after != before) {
		fprintf(stderr, "consumer: may_use %llu -> %llu -> %llu, "
			"expected +%llu then back\n",
			(unsigned long long)before, (unsigned long long)during,
			(unsigned long long)after, (unsigned long long)MIB);
		return 1;
	}
	printf("consumer ok: libspacersv %s (headers %d.%d.%d), reserved "
	       "and released %llu bytes of %s\n", srsv_version(),
	       SRSV_VERSION_MAJOR, SRSV_VERSION_MINOR, SRSV_VERSION_PATCH,
	       (unsigned long long)MIB, srsv_pool_name(SRSV_POOL_METADATA));
	return 0;
}
