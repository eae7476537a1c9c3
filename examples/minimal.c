/* SPDX-License-Identifier: MIT */
/*
 * The smallest complete embedding of libspacersv: one ctx, one flush
 * callback, and the life of a metadata block in a copy-on-write engine.
 * Each "write" reserves a worst-case 64 KiB, allocates the 16 KiB it
 * really needed, gives the rest back, and frees (pins) the block it
 * replaced.  Pinned space only comes back at a commit, so once the 8 MiB
 * pool is full of pinned blocks a reservation waits on a ticket and the
 * library calls the COMMIT_TRANS state of our callback.
 *
 * Build: cc minimal.c $(pkg-config --cflags --libs libspacersv)
 * Run: ./minimal (it takes no arguments but --help and --version)
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libspacersv/spacersv.h>

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)

/* Bytes pinned per pool since the last commit; the callback runs on a
 * library thread, hence atomic. */
static _Atomic uint64_t pinned[SRSV_POOL_COUNT];

/* README.md shows the code between the "README" markers verbatim: keep
 * them in sync. */
/* README begin */
static int flush(struct srsv_space *space, enum srsv_flush_state state,
		 uint64_t bytes, bool for_preempt, void *user)
{
	uint64_t n;

	(void)bytes; (void)for_preempt; (void)user;
	if (state != SRSV_STATE_COMMIT_TRANS)
		return -EOPNOTSUPP;	/* this engine has no such state */
	n = atomic_exchange(&pinned[srsv_space_kind(space)], 0);
	return n ? srsv_space_unpin(space, n) : 0;	/* commit: free them */
}
/* README end */

/* The command line: --help and --version only; anything else exits 2. */
static void parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int c = getopt_long(argc, argv, "h", opts, NULL);

	if (c == 'h') {
		puts("usage: minimal [--help] [--version]\n"
		     "Reserves, allocates and pins metadata blocks until a pool "
		     "of 8 MiB has\nserved 2000 writes; prints its counters.");
		exit(0);
	}
	if (c == 'V') {
		printf("minimal (libspacersv) %s\n", srsv_version());
		exit(0);
	}
	if (c != -1 || optind < argc) {
		fputs("usage: minimal [--help] [--version]\n", stderr);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	struct srsv_config cfg;
	struct srsv_ctx *ctx;
	struct srsv_space *meta;
	struct srsv_space_info info;
	int i, ret = 0;

	parse_args(argc, argv);
	/* README begin */
	if (srsv_config_init(&cfg))
		return 1;
	cfg.flush = flush;
	cfg.pool_bytes[SRSV_POOL_METADATA] = 8 * MiB;
	if (srsv_ctx_create(&cfg, &ctx))
		return 1;
	meta = srsv_ctx_space(ctx, SRSV_POOL_METADATA);

	for (i = 0; i < 2000; i++) {
		/* Reserve before writing; may wait while the library flushes. */
		ret = srsv_space_reserve(meta, 64 * KiB, SRSV_FLUSH_ALL, 0);
		if (ret)
			break;
		/* The write took one 16 KiB block: allocate it, return the rest,
		 * and once it is written and referenced, count it as used. */
		if (srsv_space_alloc(meta, 16 * KiB) ||
		    srsv_space_release(meta, 48 * KiB) ||
		    srsv_space_commit_used(meta, 16 * KiB))
			ret = -EINVAL;	/* only bad arguments fail these */
		/* Copy-on-write: the block it replaced is free after the commit. */
		else if (i > 0 && !(ret = srsv_space_pin(meta, 16 * KiB)))
			pinned[SRSV_POOL_METADATA] += 16 * KiB;
		if (ret)
			break;
	}

	if (srsv_space_snapshot(meta, &info, NULL, 0, NULL))
		memset(&info, 0, sizeof(info));
	srsv_ctx_destroy(ctx);
	/* README end */
	printf("%d writes: ret=%d used=%" PRIu64 " pinned=%" PRIu64
	       " may_use=%" PRIu64 " tickets=%" PRIu64 " commits=%" PRIu64 "\n",
	       i, ret, info.used, info.pinned, info.may_use,
	       info.tickets_granted,
	       info.flushes[SRSV_STATE_COMMIT_TRANS]);
	return ret || info.used != 16 * KiB ? 1 : 0;
}
