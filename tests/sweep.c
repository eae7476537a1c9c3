/* SPDX-License-Identifier: MIT */
/*
 * The sweep's runner: the fixture, the picture of "nothing changed", and
 * one child process per probe under a deadline (sweep.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine_sim.h"
#include "sweep.h"

#define KiB SWEEP_KIB
#define MiB SWEEP_MIB

/* A probe's child gets this long (a hang detector, generous for a loaded
 * machine: a probe is one call on a fresh fixture).  The self-test
 * shortens it for its hanging probe. */
static unsigned probe_deadline_s = 10;

/* ------------------------------------------------------------------ */
/* The fixture */

static int count_calls(struct srsv_space *space, enum srsv_flush_state state,
		       uint64_t bytes, bool for_preempt, void *user)
{
	struct sweep_fixture *f = user;

	(void)space;
	(void)state;
	(void)bytes;
	(void)for_preempt;
	f->callbacks++;
	return 0;
}

/* Setup steps must succeed; a child that cannot build its world says so. */
#define MUST(call)							\
	do {								\
		int r_ = (call);					\
		if (r_) {						\
			fprintf(stderr, "sweep fixture: %s: %d\n",	\
				#call, r_);				\
			_exit(3);					\
		}							\
	} while (0)

static void fixture_init(struct sweep_fixture *f)
{
	struct srsv_config cfg;
	struct srsv_space *pools[2];

	memset(f, 0, sizeof(*f));
	MUST(srsv_config_init(&cfg));
	cfg.flags = SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT;
	cfg.flush = count_calls;
	cfg.user = f;
	cfg.pool_bytes[SRSV_POOL_DATA] = 4 * MiB;
	cfg.pool_bytes[SRSV_POOL_METADATA] = 4 * MiB;
	cfg.pool_bytes[SRSV_POOL_SYSTEM] = 4 * MiB;
	cfg.global_rsv_bytes = 64 * KiB;
	cfg.unallocated_bytes = 64 * MiB;
	f->cfg = cfg;
	MUST(srsv_ctx_create(&cfg, &f->ctx));
	f->data = srsv_ctx_space(f->ctx, SRSV_POOL_DATA);
	f->md = srsv_ctx_space(f->ctx, SRSV_POOL_METADATA);
	f->sys = srsv_ctx_space(f->ctx, SRSV_POOL_SYSTEM);

	/* Something in every counter of data and metadata, room left. */
	pools[0] = f->data;
	pools[1] = f->md;
	for (int i = 0; i < 2; i++) {
		MUST(srsv_space_reserve(pools[i], 300 * KiB, SRSV_NO_FLUSH, 0));
		MUST(srsv_space_alloc(pools[i], 200 * KiB));
		MUST(srsv_space_commit_used(pools[i], 150 * KiB));
		MUST(srsv_space_pin(pools[i], 50 * KiB));
		MUST(srsv_space_set_readonly(pools[i], 100 * KiB, false));
	}
	MUST(srsv_space_reserve(f->sys, 8 * KiB, SRSV_NO_FLUSH, 0));
	MUST(srsv_rsv_init(&f->rsv, f->md, SRSV_RSV_TEMP));
	MUST(srsv_rsv_add(&f->rsv, 32 * KiB, SRSV_NO_FLUSH, 0));
	MUST(srsv_rsv_init(&f->rsv2, f->md, SRSV_RSV_TEMP));
	MUST(srsv_rsv_add(&f->rsv2, 16 * KiB, SRSV_NO_FLUSH, 0));
	MUST(srsv_ctx_account_delalloc(f->ctx, 1 * MiB, 256 * KiB));
	MUST(srsv_quota_create(f->ctx, 1, 8 * MiB, &f->quota));
	MUST(srsv_quota_reserve(f->quota, SRSV_QUOTA_DATA, 16 * KiB, 0));
	MUST(srsv_delalloc_reserve(f->ctx, f->quota, 16 * KiB,
				   SRSV_DELALLOC_NOFLUSH, &f->dresv));
	MUST(srsv_async_create(f->ctx, &f->q));
	MUST(srsv_ticket_reserve(f->md, &f->ticket, 4 * KiB, SRSV_NO_FLUSH, 0));
	/* One block group in the data pool, 1 MiB at 1 GiB. */
	MUST(srsv_bgroup_config_init(&f->bgcfg));
	MUST(srsv_bgroups_init(f->ctx, &f->bgcfg));
	f->bg_start = 1024 * MiB;
	MUST(srsv_bgroup_add(f->ctx, SRSV_POOL_DATA, f->bg_start, 1 * MiB));
	MUST(srsv_bgroup_alloc(f->ctx, SRSV_POOL_DATA, f->bg_start, 64 * KiB));

	/* The zoned ctx: one active zone group, part allocated and written. */
	MUST(srsv_config_init(&cfg));
	cfg.flags = SRSV_CTX_MANUAL | SRSV_CTX_NO_PREEMPT | SRSV_CTX_ZONED;
	cfg.flush = count_calls;
	cfg.user = f;
	cfg.pool_bytes[SRSV_POOL_DATA] = 4 * MiB;
	cfg.pool_bytes[SRSV_POOL_METADATA] = 4 * MiB;
	cfg.pool_bytes[SRSV_POOL_SYSTEM] = 4 * MiB;
	cfg.zone_bytes = 1 * MiB;
	MUST(srsv_ctx_create(&cfg, &f->zctx));
	f->zdata = srsv_ctx_space(f->zctx, SRSV_POOL_DATA);
	MUST(srsv_zoned_config_init(&f->zcfg));
	MUST(srsv_zoned_init(f->zctx, &f->zcfg));
	f->zg_start = 16 * MiB;
	MUST(srsv_zone_group_add(f->zctx, SRSV_ZONE_DATA, f->zg_start, 1 * MiB,
				 1 * MiB, &f->zg));
	MUST(srsv_zone_group_activate(f->zg));
	MUST(srsv_space_reserve(f->zdata, 128 * KiB, SRSV_NO_FLUSH, 0));
	MUST(srsv_zone_group_alloc(f->zg, 128 * KiB, NULL));
	MUST(srsv_space_alloc(f->zdata, 128 * KiB));
	MUST(srsv_zone_group_written(f->zg, 64 * KiB));
	MUST(srsv_space_commit_used(f->zdata, 64 * KiB));
	/* A fresh zoned config for the probes (the one above is consumed). */
	MUST(srsv_zoned_config_init(&f->zcfg));
}

/* ------------------------------------------------------------------ */
/* "Nothing changed" */

static const enum srsv_rsv_type std_types[] = {
	SRSV_RSV_GLOBAL, SRSV_RSV_TRANS, SRSV_RSV_DELOPS, SRSV_RSV_DELREFS,
	SRSV_RSV_DELALLOC,
};
#define NR_STD (sizeof(std_types) / sizeof(std_types[0]))

struct picture {
	struct srsv_space_info pool[6];
	uint64_t refused[6];		/* sum over the refusal kinds */
	struct srsv_rsv_info rsv[2], std[NR_STD];
	struct srsv_quota_info quota;
	struct srsv_delalloc_resv dresv;
	struct srsv_bgroup_stats bgstats;
	struct srsv_bgroup_info bg;
	struct srsv_statfs statfs;
	struct srsv_zoned_info zinfo;
	struct srsv_zone_group_info zg;
	uint64_t unallocated[2];
	uint64_t callbacks;
};

static void picture(struct sweep_fixture *f, struct picture *p)
{
	struct srsv_space *pools[6] = {
		f->data, f->md, f->sys,
		srsv_ctx_space(f->zctx, SRSV_POOL_DATA),
		srsv_ctx_space(f->zctx, SRSV_POOL_METADATA),
		srsv_ctx_space(f->zctx, SRSV_POOL_SYSTEM),
	};

	memset(p, 0, sizeof(*p));
	for (int i = 0; i < 6; i++) {
		struct srsv_space_stats st;

		if (srsv_space_snapshot(pools[i], &p->pool[i], NULL, 0, NULL) ||
		    srsv_space_get_stats(pools[i], &st))
			_exit(4);
		for (int k = 0; k < SRSV_STATS_REFUSALS; k++)
			p->refused[i] += st.refused[k];
	}
	if (srsv_rsv_get_info(&f->rsv, &p->rsv[0]) ||
	    srsv_rsv_get_info(&f->rsv2, &p->rsv[1]) ||
	    srsv_quota_snapshot(f->quota, &p->quota) ||
	    srsv_bgroup_stats(f->ctx, &p->bgstats) ||
	    srsv_bgroup_get(f->ctx, f->bg_start, &p->bg) ||
	    srsv_ctx_statfs(f->ctx, &p->statfs) ||
	    srsv_zoned_get_info(f->zctx, &p->zinfo) ||
	    srsv_zone_group_info(f->zg, &p->zg))
		_exit(4);
	for (size_t i = 0; i < NR_STD; i++)
		if (srsv_rsv_get_info(srsv_ctx_rsv(f->ctx, std_types[i]),
				      &p->std[i]))
			_exit(4);
	p->dresv = f->dresv;
	p->unallocated[0] = srsv_ctx_unallocated(f->ctx);
	p->unallocated[1] = srsv_ctx_unallocated(f->zctx);
	p->callbacks = f->callbacks;
}

/* The differences between two pictures, as text; the number of them.  At
 * most @refusals more refusals are allowed, in all the pools together. */
static int differences(const struct picture *a, const struct picture *b,
		       unsigned refusals, char *why, size_t len)
{
	static const char *const pool_names[6] = {
		"data", "metadata", "system", "zoned data", "zoned metadata",
		"zoned system",
	};
	uint64_t ra = 0, rb = 0;
	size_t pos = 0;
	int n = 0;

#define DIFF(...)							\
	do {								\
		n++;							\
		if (pos < len)						\
			pos += (size_t)snprintf(why + pos, len - pos,	\
						__VA_ARGS__);		\
	} while (0)
	why[0] = 0;
	for (int i = 0; i < 6; i++) {
		char d[256];

		if (esim_info_diff(&a->pool[i], &b->pool[i], d, sizeof(d)))
			DIFF("%s pool: %s; ", pool_names[i], d);
		ra += a->refused[i];
		rb += b->refused[i];
	}
	if (rb < ra || rb - ra > refusals)
		DIFF("refusals counted %" PRIu64 " -> %" PRIu64 "; ", ra, rb);
	if (memcmp(a->rsv, b->rsv, sizeof(a->rsv)))
		DIFF("a test rsv changed; ");
	if (memcmp(a->std, b->std, sizeof(a->std)))
		DIFF("a standard rsv changed; ");
	if (memcmp(&a->quota, &b->quota, sizeof(a->quota)))
		DIFF("the quota changed; ");
	if (memcmp(&a->dresv, &b->dresv, sizeof(a->dresv)))
		DIFF("the delalloc reservation changed; ");
	if (memcmp(&a->bgstats, &b->bgstats, sizeof(a->bgstats)) ||
	    memcmp(&a->bg, &b->bg, sizeof(a->bg)))
		DIFF("the block groups changed; ");
	if (memcmp(&a->statfs, &b->statfs, sizeof(a->statfs)))
		DIFF("statfs changed; ");
	if (memcmp(&a->zinfo, &b->zinfo, sizeof(a->zinfo)) ||
	    memcmp(&a->zg, &b->zg, sizeof(a->zg)))
		DIFF("the zones changed; ");
	if (memcmp(a->unallocated, b->unallocated, sizeof(a->unallocated)))
		DIFF("unallocated changed; ");
	if (a->callbacks != b->callbacks)
		DIFF("the flush callback was called; ");
#undef DIFF
	return n;
}

/* ------------------------------------------------------------------ */
/* One probe, in a child */

static bool documented(const struct sweep_probe *p, int64_t ret)
{
	for (const int *e = p->documented; e && *e; e++)
		if (ret == *e)
			return true;
	return false;
}

/* Judge the answer; NULL when it is right, else why not (static text). */
static const char *judge_answer(const struct sweep_probe *p,
				const struct sweep_result *r, char *buf,
				size_t len)
{
	switch (p->ret) {
	case SWEEP_RET_VOID:
		return NULL;
	case SWEEP_RET_PTR:
		if (p->kind == SWEEP_EXTREME || r->ptr == NULL)
			return NULL;
		snprintf(buf, len, "returned %p, want NULL", r->ptr);
		return buf;
	case SWEEP_RET_NAME:
		if (r->name && (p->kind == SWEEP_EXTREME ||
				strcmp(r->name, "unknown") == 0))
			return NULL;
		snprintf(buf, len, "returned \"%s\", want \"unknown\"",
			 r->name ? r->name : "(null)");
		return buf;
	case SWEEP_RET_U64:
		if (p->kind == SWEEP_EXTREME ||
		    (uint64_t)r->ret == p->neutral_u64)
			return NULL;
		snprintf(buf, len, "returned %" PRIu64 ", want %" PRIu64,
			 (uint64_t)r->ret, p->neutral_u64);
		return buf;
	case SWEEP_RET_INT:
		break;
	}
	switch (p->kind) {
	case SWEEP_INVALID:
		if (r->ret < 0 && documented(p, r->ret))
			return NULL;
		snprintf(buf, len, "returned %" PRId64 ", not a documented "
			 "error", r->ret);
		return buf;
	case SWEEP_NOOP:
		if (r->ret == 0)
			return NULL;
		snprintf(buf, len, "returned %" PRId64 ", want 0 (a no-op)",
			 r->ret);
		return buf;
	case SWEEP_EXTREME:
		if (r->ret == 0 || (r->ret > 0 && p->counts) ||
		    documented(p, r->ret))
			return NULL;
		snprintf(buf, len, "returned %" PRId64 ", not a documented "
			 "answer", r->ret);
		return buf;
	}
	return NULL;
}

/* The child: build the world, call, judge; the verdict goes to @fd. */
static void child(const struct sweep_probe *p, int fd)
{
	static struct sweep_fixture f;
	struct picture before, after;
	struct sweep_result r;
	char msg[1024], buf[256];
	const char *bad;
	size_t n;

	/*
	 * The deadline kills this process only: Check's own SIGALRM handler,
	 * inherited through fork(), would kill the runner's whole process
	 * group.
	 */
	signal(SIGALRM, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	alarm(probe_deadline_s);
	fixture_init(&f);
	picture(&f, &before);
	memset(&r, 0, sizeof(r));
	p->call(&f, &r);
	bad = judge_answer(p, &r, buf, sizeof(buf));
	if (bad) {
		n = (size_t)snprintf(msg, sizeof(msg), "%s", bad);
		if (write(fd, msg, n) < 0)
			_exit(5);
		_exit(1);
	}
	if (p->kind != SWEEP_EXTREME) {
		picture(&f, &after);
		if (differences(&before, &after,
				p->kind == SWEEP_INVALID ? 1 : 0, buf,
				sizeof(buf))) {
			n = (size_t)snprintf(msg, sizeof(msg),
					     "returned %" PRId64
					     " and changed: %s", r.ret, buf);
			if (write(fd, msg, n) < 0)
				_exit(5);
			_exit(1);
		}
	}
	/* No teardown: the process ends, and a destroy would only add
	 * ways for a probe's damage to fail a later step. */
	_exit(0);
}

static const char *kind_name(enum sweep_kind k)
{
	return k == SWEEP_INVALID ? "bad" : k == SWEEP_NOOP ? "no-op" :
	       "extreme";
}

/* Run probe @p; NULL if it passed, else its failure (in @msg). */
static const char *run_probe(const struct sweep_probe *p, char *msg,
			     size_t len)
{
	int fds[2], status;
	ssize_t got;
	pid_t pid;

	if (pipe(fds))
		return "pipe() failed";
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return "fork() failed";
	if (pid == 0) {
		close(fds[0]);
		child(p, fds[1]);
	}
	close(fds[1]);
	got = read(fds[0], msg, len - 1);
	msg[got > 0 ? got : 0] = 0;
	close(fds[0]);
	if (waitpid(pid, &status, 0) != pid)
		return "waitpid() failed";
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return NULL;
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
		snprintf(msg, len, "no answer within %u s (a hang)",
			 probe_deadline_s);
	else if (WIFSIGNALED(status))
		snprintf(msg, len, "crashed (signal %d, %s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else if (WEXITSTATUS(status) == 3)
		snprintf(msg, len, "the fixture could not be built");
	else if (WEXITSTATUS(status) == 4)
		snprintf(msg, len, "the fixture could not be read back (a "
			 "snapshot or an info call failed)");
	else if (!msg[0])
		snprintf(msg, len, "exit status %d", WEXITSTATUS(status));
	return msg;
}

unsigned sweep_run_function(const char *function, char *why, size_t len)
{
	unsigned failed = 0, probes = 0;
	size_t pos = 0;

	why[0] = 0;
	for (size_t i = 0; i < sweep_nr_probes; i++) {
		const struct sweep_probe *p = &sweep_probes[i];
		char msg[1024];
		const char *bad;

		if (strcmp(p->function, function))
			continue;
		probes++;
		bad = run_probe(p, msg, sizeof(msg));
		if (!bad)
			continue;
		failed++;
		printf("# %s(%s) [%s]: %s\n", p->function, p->what,
		       kind_name(p->kind), bad);
		if (pos + 64 < len)
			pos += (size_t)snprintf(why + pos, len - pos,
						"%s%s: %s", failed > 1 ? "; " :
						"", p->what, bad);
	}
	if (!probes)
		snprintf(why, len, "no probe for %s", function);
	return probes ? failed : 1;
}

/* ------------------------------------------------------------------ */
/* The runner's self-test: probes that misbehave on purpose must each be
 * reported, and for the right reason; a lawful one must pass. */

static const int doc_einval[] = { -EINVAL, 0 };

static void st_good(struct sweep_fixture *f, struct sweep_result *r)
{
	r->ret = srsv_space_release(NULL, 4 * KiB);
	(void)f;
}

static void st_crash(struct sweep_fixture *f, struct sweep_result *r)
{
	(void)f;
	(void)r;
	/* SIGABRT, which no sanitizer catches by default: ASan's and TSan's
	 * SIGSEGV handlers would turn a raised SIGSEGV into their report and
	 * "exit status 1" (or a crash inside the handler). */
	abort();
}

static void st_hang(struct sweep_fixture *f, struct sweep_result *r)
{
	(void)f;
	(void)r;
	for (;;)
		pause();
}

static void st_wrong_errno(struct sweep_fixture *f, struct sweep_result *r)
{
	(void)f;
	r->ret = -ENOSPC;
}

static void st_changes(struct sweep_fixture *f, struct sweep_result *r)
{
	/* A "refused" call that released bytes all the same. */
	if (srsv_space_release(f->md, 4 * KiB))
		_exit(6);
	r->ret = -EINVAL;
}

static void st_not_neutral(struct sweep_fixture *f, struct sweep_result *r)
{
	r->ptr = f;
}

static const struct {
	struct sweep_probe p;
	const char *verdict;	/* a substring of the failure, NULL: pass */
} selftest[] = {
	{ { "selftest", "good", SWEEP_INVALID, SWEEP_RET_INT, doc_einval,
	    false, 0, st_good }, NULL },
	{ { "selftest", "crash", SWEEP_INVALID, SWEEP_RET_INT, doc_einval,
	    false, 0, st_crash }, "crashed" },
	{ { "selftest", "hang", SWEEP_INVALID, SWEEP_RET_INT, doc_einval,
	    false, 0, st_hang }, "hang" },
	{ { "selftest", "wrong errno", SWEEP_INVALID, SWEEP_RET_INT,
	    doc_einval, false, 0, st_wrong_errno }, "not a documented" },
	{ { "selftest", "changes", SWEEP_INVALID, SWEEP_RET_INT, doc_einval,
	    false, 0, st_changes }, "changed" },
	{ { "selftest", "not neutral", SWEEP_INVALID, SWEEP_RET_PTR,
	    doc_einval, false, 0, st_not_neutral }, "want NULL" },
};

unsigned sweep_selftest(char *why, size_t len)
{
	unsigned saved = probe_deadline_s, wrong = 0;
	size_t pos = 0;

	why[0] = 0;
	probe_deadline_s = 1;
	for (size_t i = 0; i < sizeof(selftest) / sizeof(selftest[0]); i++) {
		char msg[1024];
		const char *bad = run_probe(&selftest[i].p, msg, sizeof(msg));
		bool right = selftest[i].verdict ?
			     bad && strstr(bad, selftest[i].verdict) :
			     bad == NULL;

		if (right)
			continue;
		wrong++;
		if (pos + 64 < len)
			pos += (size_t)snprintf(why + pos, len - pos,
						"%s: %s; ", selftest[i].p.what,
						bad ? bad : "passed");
	}
	probe_deadline_s = saved;
	return wrong;
}
