/* SPDX-License-Identifier: MIT */
/*
 * logstore under load: writers, a reader, the library's flush callback
 * and (in one case) the engine's background cleaner at once, for
 * SRSV_STRESS_SECONDS seconds (default 3) per case.  Three cases: tickets
 * only (SRSV_CTX_NO_DATA_PREEMPT, btrfs's data behaviour: the store cleans
 * when writers wait), the library's defaults (the data pool's preemptive
 * flusher cleans before they do), and the engine's background cleaner.
 *
 * Each writer owns a range of keys of one tenant and keeps a shadow of
 * what it last stored there, so every read of its own keys has one right
 * answer: the shadow's version, or -ENOENT.  Puts (a fifth of them
 * NOWAIT first, blocking on -EAGAIN), overwrites, deletes and reads mix;
 * tenant 1 has a quota it reaches (-EDQUOT leaves the shadow as it was).
 * A reader reads everyone's keys and checks that a value names its key.
 * The device is small (6 MiB, 40% live at most), so cleaning never stops
 * and writers wait on the library's tickets, but never for good: a put
 * that fails with -ENOSPC fails the test (the store must not wedge), and
 * so does a cleaning pass that finds no room for its copies (the movers'
 * reserve is the cleaner's headroom: no other is kept).
 * At the end: verify, every key against the shadow, close, reopen (the
 * restart), verify and compare again.
 *
 * Bounded in time (each writer stops at the deadline; joins are bounded)
 * and in space (6 MiB of segment files in a temporary directory, removed
 * at the end).
 */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <check.h>

#include "logstore.h"

#define KEY_LEN 16
#define VAL_LEN 4048
#define WRITERS 4
#define KEYS_PER_WRITER 150
#define CAPACITY (6 * (UINT64_C(1) << 20))
#define JOIN_GRACE_S 60

static char tmp_root[4096], dir[4200];
static unsigned seconds;

struct writer {
	struct logstore *ls;
	pthread_t thread;
	unsigned id, tenant;
	uint64_t rng, deadline;
	uint32_t shadow[KEYS_PER_WRITER];	/* version, 0: absent */
	unsigned puts, deletes, reads, edquot, nowait_retried;
	char failure[256];
};

struct reader {
	struct logstore *ls;
	pthread_t thread;
	uint64_t rng, deadline;
	unsigned reads;
	char failure[256];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	return remove(path);
}

static unsigned stress_seconds(void)
{
	const char *secs = getenv("SRSV_STRESS_SECONDS");

	return secs && atoi(secs) > 0 ? (unsigned)atoi(secs) : 3;
}

static void setup(void)
{
	const char *base = getenv("TMPDIR");

	seconds = stress_seconds();
	snprintf(tmp_root, sizeof(tmp_root), "%s/test_logstore_stress.XXXXXX",
		 base && *base ? base : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(tmp_root));
	snprintf(dir, sizeof(dir), "%s/store", tmp_root);
}

static void teardown(void)
{
	nftw(tmp_root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Writer w's key number k: a global key number, and its 16 bytes. */
static void key_of(char *key, unsigned global)
{
	char tmp[32];

	snprintf(tmp, sizeof(tmp), "k%015u", global);
	memcpy(key, tmp, KEY_LEN);
}

static void val_of(unsigned char *v, unsigned global, uint32_t version)
{
	uint64_t s = global * 0x9e3779b97f4a7c15u ^ version;

	for (size_t i = 0; i < VAL_LEN; i += 8) {
		s = s * 6364136223846793005u + 1442695040888963407u;
		memcpy(v + i, &s, VAL_LEN - i < 8 ? VAL_LEN - i : 8);
	}
	memcpy(v, &global, 4);
	memcpy(v + 4, &version, 4);
}

/* Check a value read for key @global: it names the key, and its bytes are
 * what its version says. */
static bool value_ok(const unsigned char *v, size_t len, unsigned global,
		     uint32_t *version)
{
	unsigned char want[VAL_LEN];
	unsigned g;

	if (len != VAL_LEN)
		return false;
	memcpy(&g, v, 4);
	memcpy(version, v + 4, 4);
	if (g != global)
		return false;
	val_of(want, global, *version);
	return !memcmp(v, want, VAL_LEN);
}

/* Does key k of @w read back as the shadow says? */
static bool check_key(struct logstore *ls, const struct writer *w, unsigned k,
		      char *failure, size_t len)
{
	unsigned global = w->id * KEYS_PER_WRITER + k;
	unsigned char v[VAL_LEN];
	char key[KEY_LEN];
	uint32_t version = 0;
	size_t vlen = 0;
	int ret;

	key_of(key, global);
	ret = ls_get(ls, w->tenant, key, KEY_LEN, v, sizeof(v), &vlen);
	if (!w->shadow[k] && ret == -ENOENT)
		return true;
	if (!ret && value_ok(v, vlen, global, &version) &&
	    version == w->shadow[k])
		return true;
	snprintf(failure, len, "key %u: got %d version %u, stored %u", global,
		 ret, version, w->shadow[k]);
	return false;
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	unsigned char v[VAL_LEN];
	uint32_t next_version = 1;

	while (now_ns() < w->deadline && !w->failure[0]) {
		unsigned k = (unsigned)(rng_next(&w->rng) % KEYS_PER_WRITER);
		unsigned global = w->id * KEYS_PER_WRITER + k;
		unsigned dice = (unsigned)(rng_next(&w->rng) % 100);
		char key[KEY_LEN];
		int ret;

		key_of(key, global);
		if (dice < 10) {
			ret = ls_delete(w->ls, w->tenant, key, KEY_LEN, 0);
			if (ret == 0 && w->shadow[k]) {
				w->shadow[k] = 0;
				w->deletes++;
			} else if (!(ret == -ENOENT && !w->shadow[k])) {
				snprintf(w->failure, sizeof(w->failure),
					 "delete %u: %d (stored %u)", global,
					 ret, w->shadow[k]);
			}
		} else if (dice < 30) {
			if (check_key(w->ls, w, k, w->failure,
				      sizeof(w->failure)))
				w->reads++;
		} else {
			uint32_t version = next_version++;

			val_of(v, global, version);
			ret = -EAGAIN;
			if (dice < 44) {
				ret = ls_put(w->ls, w->tenant, key, KEY_LEN, v,
					     VAL_LEN, LS_NOWAIT);
				w->nowait_retried += ret == -EAGAIN;
			}
			if (ret == -EAGAIN)
				ret = ls_put(w->ls, w->tenant, key, KEY_LEN, v,
					     VAL_LEN, 0);
			if (!ret) {
				w->shadow[k] = version;
				w->puts++;
			} else if (ret == -EDQUOT && w->tenant == 1) {
				w->edquot++;
			} else {
				snprintf(w->failure, sizeof(w->failure),
					 "put %u: %s", global, strerror(-ret));
			}
		}
	}
	return NULL;
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	unsigned char v[VAL_LEN];

	while (now_ns() < r->deadline && !r->failure[0]) {
		unsigned global = (unsigned)(rng_next(&r->rng) %
					     (WRITERS * KEYS_PER_WRITER));
		unsigned tenant = (global / KEYS_PER_WRITER) % 2;
		char key[KEY_LEN];
		uint32_t version;
		size_t len = 0;
		int ret;

		key_of(key, global);
		ret = ls_get(r->ls, tenant, key, KEY_LEN, v, sizeof(v), &len);
		if (ret == -ENOENT)
			continue;
		if (ret || !value_ok(v, len, global, &version))
			snprintf(r->failure, sizeof(r->failure),
				 "read %u: %d, or a value of another key",
				 global, ret);
		r->reads++;
	}
	return NULL;
}

static void join_bounded(pthread_t t)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += JOIN_GRACE_S;
	ck_assert_msg(!pthread_timedjoin_np(t, NULL, &ts),
		      "a thread is still blocked %d s after the deadline",
		      JOIN_GRACE_S);
}

static void verify_ok(struct logstore *ls)
{
	struct ls_verify_report rep;

	ck_assert_msg(!ls_verify(ls, &rep), "verify: %s", rep.error);
}

static void check_shadows(struct logstore *ls, struct writer *w)
{
	char failure[256];

	for (unsigned i = 0; i < WRITERS; i++)
		for (unsigned k = 0; k < KEYS_PER_WRITER; k++)
			ck_assert_msg(check_key(ls, &w[i], k, failure,
						sizeof(failure)), "%s", failure);
}

enum mode { TICKETS_ONLY, LIBRARY_DEFAULTS, BACKGROUND_CLEANER };
static const char *const mode_names[] = {
	"tickets only", "library defaults", "background cleaner"
};

static void no_data_preempt(struct srsv_config *cfg, void *arg)
{
	(void)arg;
	cfg->flags |= SRSV_CTX_NO_DATA_PREEMPT;
}

static void run(enum mode mode)
{
	bool bg_cleaner = mode == BACKGROUND_CLEANER;
	struct srsv_space_stats ss;
	static struct writer w[WRITERS];
	struct reader r;
	struct ls_options o;
	struct ls_stats st;
	struct logstore *ls;
	uint64_t deadline;
	unsigned puts = 0, edquot = 0;

	memset(&o, 0, sizeof(o));
	o.capacity = CAPACITY;
	o.tenants = 2;
	o.no_sync = true;
	o.bg_cleaner = bg_cleaner;
	if (mode == TICKETS_ONLY)
		o.configure = no_data_preempt;
	/* Tenant 1's writers could store 300 values: let it keep 200. */
	o.quota[1] = 200 * ls_record_bytes(KEY_LEN, VAL_LEN);
	ck_assert_int_eq(ls_open(dir, &o, &ls), 0);

	deadline = now_ns() + (uint64_t)seconds * 1000000000u;
	memset(w, 0, sizeof(w));
	memset(&r, 0, sizeof(r));
	for (unsigned i = 0; i < WRITERS; i++) {
		w[i].ls = ls;
		w[i].id = i;
		w[i].tenant = i % 2;
		w[i].rng = 0x5eed + i;
		w[i].deadline = deadline;
		ck_assert_int_eq(pthread_create(&w[i].thread, NULL, writer_main,
						&w[i]), 0);
	}
	r.ls = ls;
	r.rng = 77;
	r.deadline = deadline;
	ck_assert_int_eq(pthread_create(&r.thread, NULL, reader_main, &r), 0);
	for (unsigned i = 0; i < WRITERS; i++)
		join_bounded(w[i].thread);
	join_bounded(r.thread);
	for (unsigned i = 0; i < WRITERS; i++) {
		ck_assert_msg(!w[i].failure[0], "writer %u: %s", i,
			      w[i].failure);
		puts += w[i].puts;
		edquot += w[i].edquot;
	}
	ck_assert_msg(!r.failure[0], "reader: %s", r.failure);

	ck_assert_int_eq(ls_stats(ls, &st), 0);
	ck_assert_int_eq(srsv_space_get_stats(srsv_ctx_space(ls_ctx(ls),
							     SRSV_POOL_DATA),
					      &ss), 0);
	fprintf(stderr, "logstore stress (%s): %u puts, %u -EDQUOT, %" PRIu64
		" segments cleaned (%" PRIu64 " by the background cleaner, %"
		PRIu64 " flush callback calls, %" PRIu64 " of them preemptive),"
		" %" PRIu64 " MiB moved, %" PRIu64 " lost copies, cleaner "
		"without headroom %" PRIu64 "\n", mode_names[mode], puts,
		edquot, st.segments_cleaned, st.bg_passes, st.flush_calls,
		ss.states[SRSV_STATE_COMMIT_TRANS].preempt_calls,
		st.moved_bytes >> 20, st.lost_copies, st.cleaner_enospc);
	/* It worked, it cleaned, and the quota bit. */
	ck_assert_uint_gt(puts, 1000);
	ck_assert_uint_gt(st.segments_cleaned, 0);
	ck_assert_uint_eq(st.enospc, 0);
	/* The cleaner always had room for its copies, with no headroom of
	 * the store's own. */
	ck_assert_uint_eq(st.cleaner_enospc, 0);
	ck_assert_uint_eq(st.clean_aborted, 0);
	/* Who cleaned: the tickets only when asked to, the library's
	 * defaults mostly before anyone waited. */
	if (mode == TICKETS_ONLY)
		ck_assert_uint_eq(ss.states[SRSV_STATE_COMMIT_TRANS].preempt_calls,
				  0);
	if (mode == LIBRARY_DEFAULTS)
		ck_assert_uint_gt(ss.states[SRSV_STATE_COMMIT_TRANS].preempt_calls,
				  0);
	verify_ok(ls);
	check_shadows(ls, w);
	ck_assert_int_eq(ls_close(ls), 0);

	/* The restart: the same keys, the same versions, the same pools. */
	o.bg_cleaner = false;
	ck_assert_int_eq(ls_open(dir, &o, &ls), 0);
	verify_ok(ls);
	check_shadows(ls, w);
	ck_assert_int_eq(ls_close(ls), 0);
}

START_TEST(test_stress_tickets_only)
{
	run(TICKETS_ONLY);
}
END_TEST

START_TEST(test_stress_library_defaults)
{
	run(LIBRARY_DEFAULTS);
}
END_TEST

START_TEST(test_stress_background_cleaner)
{
	run(BACKGROUND_CLEANER);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("logstore-stress");
	TCase *tc = tcase_create("logstore-stress");
	SRunner *sr;
	int failed;

	seconds = stress_seconds();
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, (double)seconds + 2 * JOIN_GRACE_S);
	tcase_add_test(tc, test_stress_tickets_only);
	tcase_add_test(tc, test_stress_library_defaults);
	tcase_add_test(tc, test_stress_background_cleaner);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
