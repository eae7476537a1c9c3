/* SPDX-License-Identifier: MIT */
/*
 * nowait_uring: buffered writes through io_uring, each reserved inline with
 * a NOWAIT reservation.  When the library answers -EAGAIN, the write is
 * either handed to a worker thread that blocks (the default, io_uring's
 * io-wq punt; docs/design.md section 8), or, with --async, its reservation is
 * queued as an asynchronous ticket (srsv_delalloc_reserve_async()) and the
 * ring itself waits for the completion queue's fd (IORING_OP_POLL_ADD):
 * no thread waits for space.  The engine and the writer are in
 * nowait_uring.h (shared with bench/nowait.c), which explains the design.
 *
 * It writes a file of --blocks 4 KiB blocks sequentially (--passes times),
 * prints how many writes went inline and how many were punted, and reads
 * the file back, checking every block's header and CRC-32C, and that the
 * pools and the quota hold exactly what the file holds.
 *
 * Exit status: 0 when everything checked out; 77 when io_uring (or
 * IORING_OP_MSG_RING, Linux 5.18) is not available; 1 otherwise.
 *
 * Usage: nowait_uring [--blocks N] [--passes N] [--qd N] [--dir DIR]
 *                     [--meta-mib N] [--no-preempt]
 *                     [--kernel-nowait auto|on|off]
 *                     [--punt-all | --psync | --async | --blocking]
 *                     [--wait-eventfd]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* liburing's sigset_t, O_DIRECT */
#endif
#include <getopt.h>

#include "nowait_uring.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: nowait_uring [options]\n"
		"  --blocks N          file size in 4 KiB blocks (default 4096)\n"
		"  --passes N          write the file N times (default 1)\n"
		"  --qd N              writes in flight, 1..%u (default 1)\n"
		"  --dir DIR           where to make the temp dir (default $TMPDIR or /tmp)\n"
		"  --meta-mib N        METADATA pool in MiB (default 4: tight)\n"
		"  --no-preempt        no preemptive flushing: nothing is written\n"
		"                      back until a punted write waits\n"
		"  --kernel-nowait M   RWF_NOWAIT on the ring's writes: auto (probe),\n"
		"                      on, off (default auto)\n"
		"  --punt-all          punt every write (io_uring before NOWAIT)\n"
		"  --psync             inline writes with pwrite(), not the ring\n"
		"  --async             on -EAGAIN, an asynchronous reservation\n"
		"                      waited for in the ring (POLL_ADD), no punt\n"
		"  --blocking          reserve in blocking mode in the submitter\n"
		"  --wait-eventfd      wait for completions on an eventfd (always\n"
		"                      under valgrind)\n",
		NU_MAX_QD);
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-')
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "blocks", required_argument, NULL, 'b' },
		{ "passes", required_argument, NULL, 'p' },
		{ "qd", required_argument, NULL, 'q' },
		{ "dir", required_argument, NULL, 'd' },
		{ "meta-mib", required_argument, NULL, 'm' },
		{ "no-preempt", no_argument, NULL, 'n' },
		{ "kernel-nowait", required_argument, NULL, 'k' },
		{ "punt-all", no_argument, NULL, 'P' },
		{ "psync", no_argument, NULL, 'S' },
		{ "async", no_argument, NULL, 'A' },
		{ "blocking", no_argument, NULL, 'B' },
		{ "wait-eventfd", no_argument, NULL, 'E' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	struct nu_config cfg;
	struct nu_stats st;
	uint64_t passes = 1, v;
	int c, ret;

	nu_config_init(&cfg);
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			if (parse_u64(optarg, &cfg.blocks) || !cfg.blocks)
				goto bad;
			break;
		case 'p':
			if (parse_u64(optarg, &passes) || !passes)
				goto bad;
			break;
		case 'q':
			if (parse_u64(optarg, &v) || !v || v > NU_MAX_QD)
				goto bad;
			cfg.qd = (unsigned)v;
			break;
		case 'd':
			cfg.dir = optarg;
			break;
		case 'm':
			if (parse_u64(optarg, &v) || !v || v > (1u << 20))
				goto bad;
			cfg.meta_pool_bytes = v * NU_MIB;
			break;
		case 'n':
			cfg.no_preempt = true;
			break;
		case 'k':
			if (!strcmp(optarg, "auto"))
				cfg.kernel_nowait = NU_KNOWAIT_AUTO;
			else if (!strcmp(optarg, "on"))
				cfg.kernel_nowait = NU_KNOWAIT_ON;
			else if (!strcmp(optarg, "off"))
				cfg.kernel_nowait = NU_KNOWAIT_OFF;
			else
				goto bad;
			break;
		case 'P':
			cfg.mode = NU_MODE_PUNT_ALL;
			break;
		case 'S':
			cfg.mode = NU_MODE_PSYNC;
			break;
		case 'A':
			cfg.mode = NU_MODE_ASYNC;
			break;
		case 'B':
			cfg.mode = NU_MODE_BLOCKING;
			break;
		case 'E':
			cfg.wait_eventfd = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("%s (libspacersv) %s\n", "nowait_uring", srsv_version());
			return 0;
		default:
			goto bad;
		}
	}
	if (optind != argc || passes > UINT64_MAX / cfg.blocks)
		goto bad;
	cfg.writes = cfg.blocks * passes;

	printf("nowait_uring: %" PRIu64 " writes of 4 KiB, %" PRIu64
	       " pass(es) over a %" PRIu64 " KiB file, qd %u, mode %s, "
	       "metadata pool %" PRIu64 " KiB, preemptive flushing %s\n",
	       cfg.writes, passes, cfg.blocks * NU_BLOCK / NU_KIB, cfg.qd,
	       nu_mode_names[cfg.mode], cfg.meta_pool_bytes / NU_KIB,
	       cfg.no_preempt ? "off" : "on");
	ret = nu_run(&cfg, &st);
	if (ret == NU_SKIP) {
		printf("nowait_uring: io_uring with IORING_OP_WRITE and "
		       "IORING_OP_MSG_RING is not available: skipped\n");
		return NU_SKIP;
	}
	printf("kernel RWF_NOWAIT buffered writes: %s; completions waited "
	       "for %s\n", st.fs_note,
	       st.waited_eventfd ? "on an eventfd" : "in io_uring_enter()");
	printf("writes: %" PRIu64 " inline: %" PRIu64 " punted: %" PRIu64
	       " (library -EAGAIN: %" PRIu64 ", kernel -EAGAIN: %" PRIu64
	       ", short: %" PRIu64 ", forced: %" PRIu64 ")\n",
	       st.writes, st.inline_writes,
	       st.punted_library + st.punted_kernel + st.punted_short +
	       st.punted_forced,
	       st.punted_library, st.punted_kernel, st.punted_short,
	       st.punted_forced);
	if (cfg.mode == NU_MODE_ASYNC)
		printf("asynchronous reservations: %" PRIu64 " waited on the "
		       "completion queue's fd (at most %" PRIu64 " at once), "
		       "%" PRIu64 " POLL_ADD completions\n", st.async_waits,
		       st.async_max_pending, st.polls);
	printf("write latency (issue to completion): p50 %.1f us, p99 %.1f "
	       "us, max %.1f us\n", st.lat_p50_ns / 1e3, st.lat_p99_ns / 1e3,
	       st.lat_max_ns / 1e3);
	printf("writeback: %" PRIu64 " writes finished in %" PRIu64
	       " calls, %" PRIu64 " superseded; commits: %" PRIu64 "\n",
	       st.written_back, st.wb_calls, st.superseded, st.commits);
	printf("elapsed: %.3f s (%.0f writes/s)\n", st.elapsed_ns / 1e9,
	       st.elapsed_ns ? st.writes * 1e9 / st.elapsed_ns : 0.0);
	if (ret) {
		printf("verify: FAILED (%s)\n", strerror(-ret));
		return 1;
	}
	printf("verify: ok, %" PRIu64 " blocks, header and CRC-32C per "
	       "4 KiB block; pools and quota match the file\n",
	       cfg.writes < cfg.blocks ? cfg.writes : cfg.blocks);
	return 0;
bad:
	usage(stderr);
	return 2;
}
