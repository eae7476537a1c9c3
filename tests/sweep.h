/* SPDX-License-Identifier: MIT */
/*
 * The generated sweep of bad arguments (tests/gen-sweep.py writes
 * sweep_probes.c from the public headers): what the generated probes and
 * the hand-written runner (sweep.c) share.
 *
 * A probe calls one exported function once, with the fixture's objects for
 * every argument but one, which is NULL or out of range.  It runs in a
 * child process of its own under a deadline: a crash or a hang is a
 * reported failure of that probe, and the next probe runs.
 */
#ifndef SRSV_TESTS_SWEEP_H
#define SRSV_TESTS_SWEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libspacersv/spacersv.h>

#define SWEEP_KIB (UINT64_C(1) << 10)
#define SWEEP_MIB (UINT64_C(1) << 20)

/*
 * The world every probe starts from: a manual ctx (no library thread, so
 * nothing moves unless called) with something in every counter, and a
 * zoned manual ctx.  Created afresh in each probe's child.
 */
struct sweep_fixture {
	struct srsv_ctx *ctx;		/* block groups configured, one group */
	struct srsv_space *data, *md, *sys;
	struct srsv_rsv rsv, rsv2;	/* TEMP, metadata, holding bytes */
	struct srsv_quota *quota;	/* tenant 1, DATA reserved */
	struct srsv_async *q;		/* a completion queue, empty */
	struct srsv_ticket ticket;	/* a ticket granted at once */
	struct srsv_delalloc_resv dresv;/* a held delalloc reservation */
	struct srsv_config cfg;		/* a valid config */
	struct srsv_bgroup_config bgcfg;
	struct srsv_zoned_config zcfg;
	struct srsv_ctx *zctx;		/* zoned */
	struct srsv_space *zdata;
	struct srsv_zone_group *zg;	/* active, part written */
	uint64_t bg_start;		/* the block group (DATA pool) */
	uint64_t zg_start;		/* the zone group */
	uint64_t callbacks;		/* flush callback calls (both ctxs) */
};

/* How a probe's answer is judged. */
enum sweep_kind {
	/*
	 * A bad argument: the call returns a negative errno its @retval list
	 * documents (or the documented neutral value), and changes nothing
	 * but at most one refusal count.
	 */
	SWEEP_INVALID,
	/*
	 * NULL where the documentation says NULL is a no-op (or 0 where 0 is
	 * a no-op): the call returns 0 (or nothing) and changes nothing.
	 */
	SWEEP_NOOP,
	/*
	 * A legal extreme (a timeout of 0 or UINT64_MAX, NULL where NULL is
	 * allowed): the call returns, with a documented answer; it may act.
	 */
	SWEEP_EXTREME,
};

/* What a function returns, to judge the answer. */
enum sweep_ret {
	SWEEP_RET_INT,		/* 0, a count, or a negative errno */
	SWEEP_RET_VOID,
	SWEEP_RET_PTR,		/* neutral value NULL */
	SWEEP_RET_U64,		/* neutral value in neutral_u64 */
	SWEEP_RET_NAME,		/* a static string; neutral "unknown" */
};

struct sweep_result {
	int64_t ret;		/* int, u64 results */
	const void *ptr;	/* pointer results */
	const char *name;	/* name results */
};

struct sweep_probe {
	const char *function;	/* the exported function */
	const char *what;	/* "bytes = UINT64_MAX", "space = NULL", ... */
	enum sweep_kind kind;
	enum sweep_ret ret;
	/* Answers the documentation allows (negative errnos), 0-terminated;
	 * for SWEEP_EXTREME 0 and positive counts are allowed as well. */
	const int *documented;
	bool counts;		/* may return a positive count */
	uint64_t neutral_u64;	/* SWEEP_RET_U64: the neutral value */
	void (*call)(struct sweep_fixture *f, struct sweep_result *r);
};

/* The generated table (sweep_probes.c), and the functions it covers. */
extern const struct sweep_probe sweep_probes[];
extern const size_t sweep_nr_probes;
extern const char *const sweep_functions[];
extern const size_t sweep_nr_functions;

/*
 * Run every probe of @function, each in a child process under a deadline.
 * Returns the number of failed probes; each failure is printed (a TAP
 * comment) and the first few are copied into @why.
 */
unsigned sweep_run_function(const char *function, char *why, size_t len);

/*
 * The runner's self-test: probes that crash, hang, answer an undocumented
 * errno, change the pools or return a non-neutral value must each be
 * reported as such, a lawful one must pass.  Returns the number judged
 * wrongly (0: the runner can fail).
 */
unsigned sweep_selftest(char *why, size_t len);

#endif /* SRSV_TESTS_SWEEP_H */
