/* SPDX-License-Identifier: MIT */
/*
 * logstore (examples/logstore): puts, gets, deletes and overwrites; dead
 * bytes pinned and cleaning giving them back with the counters equal to
 * the engine's, to the byte; tombstones that live as long as what they
 * hide; restart (the index and the pools come back exactly, a torn tail is
 * cut); quotas (-EDQUOT for one tenant while the other writes); NOWAIT
 * (-EAGAIN, never blocking, nothing changed); a full device (-ENOSPC, the
 * accounting intact, deletes still work); the flush callback cleaning for
 * a waiting put; the cleaner's headroom problem without a reserve, and
 * the library's movers' reserve solving it (a cleaner on a device the
 * writers filled, with a writer's ticket queued, copies and frees; the
 * reserve comes back first); the restart recipe through
 * srsv_space_load_used() (a store closed with less free than the reserve
 * opens again; its dead bytes are cleaned before a writer waits).
 *
 * White-box where it must be (the CRC, holding the engine's locks): the
 * engine's internal header.  Most stores are in manual mode
 * (SRSV_CTX_MANUAL): no library thread runs, so what happens is what the
 * test does, and a put that would wait is made only from a thread the
 * test watches (fill() uses NOWAIT).
 *
 * Bounded: every store lives in its own directory under a mkdtemp()
 * directory in $TMPDIR (or /tmp), removed at the end of each test, and
 * holds at most its capacity, 4 to 16 MiB here: the DATA pool refuses
 * anything beyond, so no test can fill the file system.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include "internal.h"

#define KEY_LEN 16
/* 4 KiB records: 32-byte header, 16-byte key, 4048-byte value. */
#define VAL_LEN 4048
#define REC (ls_record_bytes(KEY_LEN, VAL_LEN))
/* How long a test waits for a thread that should return at once. */
#define JOIN_DEADLINE_S 30

/* ---- fixture ---- */

static char tmp_root[4096];
static char dir[4200];

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	return remove(path);
}

static void setup(void)
{
	const char *base = getenv("TMPDIR");

	snprintf(tmp_root, sizeof(tmp_root), "%s/test_logstore.XXXXXX",
		 base && *base ? base : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(tmp_root));
	snprintf(dir, sizeof(dir), "%s/store", tmp_root);
}

static void teardown(void)
{
	nftw(tmp_root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static struct ls_options opts(uint64_t capacity, bool manual)
{
	struct ls_options o;

	memset(&o, 0, sizeof(o));
	o.capacity = capacity;
	o.tenants = 2;
	o.manual = manual;
	o.no_sync = true;	/* tmp files: durability is not tested here */
	o.clean_policy = LS_CLEAN_GREEDY;
	return o;
}

static struct logstore *open_store(const struct ls_options *o)
{
	struct logstore *ls = NULL;
	int ret = ls_open(dir, o, &ls);

	ck_assert_msg(!ret, "ls_open: %s", strerror(-ret));
	return ls;
}

static void key_of(char *key, unsigned k)
{
	char tmp[32];

	snprintf(tmp, sizeof(tmp), "k%015u", k);
	memcpy(key, tmp, KEY_LEN);
}

/* A value that names its key and version. */
static void val_of(unsigned char *v, size_t len, unsigned k, unsigned version)
{
	for (size_t i = 0; i < len; i++)
		v[i] = (unsigned char)(k * 31 + version * 7 + i);
	if (len >= 8) {
		memcpy(v, &k, 4);
		memcpy(v + 4, &version, 4);
	}
}

static int put(struct logstore *ls, unsigned tenant, unsigned k,
	       unsigned version, unsigned flags)
{
	unsigned char v[VAL_LEN];
	char key[KEY_LEN];

	key_of(key, k);
	val_of(v, sizeof(v), k, version);
	return ls_put(ls, tenant, key, KEY_LEN, v, sizeof(v), flags);
}

static int del(struct logstore *ls, unsigned tenant, unsigned k)
{
	char key[KEY_LEN];

	key_of(key, k);
	return ls_delete(ls, tenant, key, KEY_LEN, 0);
}

/* 0 and the value's version, or the error of ls_get(). */
static int get(struct logstore *ls, unsigned tenant, unsigned k,
	       unsigned *version)
{
	unsigned char v[VAL_LEN], want[VAL_LEN];
	char key[KEY_LEN];
	size_t len = 0;
	unsigned kk;
	int ret;

	key_of(key, k);
	ret = ls_get(ls, tenant, key, KEY_LEN, v, sizeof(v), &len);
	if (ret)
		return ret;
	ck_assert_uint_eq(len, VAL_LEN);
	memcpy(&kk, v, 4);
	memcpy(version, v + 4, 4);
	ck_assert_uint_eq(kk, k);
	val_of(want, sizeof(want), k, *version);
	ck_assert(!memcmp(v, want, sizeof(v)));
	return 0;
}

static void verify_ok(struct logstore *ls)
{
	struct ls_verify_report rep;
	int ret = ls_verify(ls, &rep);

	ck_assert_msg(!ret, "verify: %s", rep.error);
}

static struct srsv_space_info snap(struct logstore *ls, enum srsv_pool kind)
{
	struct srsv_space_info i;

	ck_assert_int_eq(srsv_space_snapshot(srsv_ctx_space(ls_ctx(ls), kind),
					     &i, NULL, 0, NULL), 0);
	return i;
}

static unsigned count_segment_files(void)
{
	struct dirent *de;
	unsigned n = 0;
	DIR *d = opendir(dir);

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		n += !strncmp(de->d_name, "seg-", 4);
	closedir(d);
	return n;
}

static struct ls_stats stats(struct logstore *ls)
{
	struct ls_stats st;

	ck_assert_int_eq(ls_stats(ls, &st), 0);
	return st;
}

/*
 * Put keys key_fn(0), key_fn(1), ... until the DATA pool cannot take
 * another record; returns how many went in.  NOWAIT, so that nothing waits
 * in manual mode; a NOWAIT put also declines to create a segment file, so
 * while room remains a declined put is made again, blocking (it has room:
 * it does not wait).
 */
static unsigned fill(struct logstore *ls, unsigned (*key_fn)(unsigned))
{
	for (unsigned i = 0;; i++) {
		int ret = put(ls, 0, key_fn(i), i + 1, LS_NOWAIT);

		if (ret == -EAGAIN && ls__pool_free(ls->data) >= REC)
			ret = put(ls, 0, key_fn(i), i + 1, 0);
		if (ret) {
			ck_assert_int_eq(ret, -EAGAIN);
			return i;
		}
	}
}

static unsigned distinct_keys(unsigned i)
{
	return i;
}

/* 400 keys, then overwrites of keys 0..399 in order. */
static unsigned overwrite_400(unsigned i)
{
	return i % 400;
}

/* 400 keys, then random overwrites of 300 of them (never a key k with
 * k % 4 == 3): every segment keeps live records. */
static unsigned overwrite_hot(unsigned i)
{
	unsigned k = ((i * 2654435761u) >> 8) % 300;

	return i < 400 ? i : k / 3 * 4 + k % 3;
}

/* Every fourth put a new key, kept; the others overwrite 30 hot keys:
 * every segment holds a quarter of live records, for good. */
static unsigned quarter_live(unsigned i)
{
	return i % 4 == 3 ? 100000 + i : (i / 4 * 3 + i % 4) % 30;
}

/* The configure hook of a store whose blocked reservations wait for the
 * test to run the reclaim (SRSV_CTX_MANUAL_WAIT). */
static void manual_wait(struct srsv_config *cfg, void *arg)
{
	(void)arg;
	cfg->flags |= SRSV_CTX_MANUAL_WAIT;
}

/* Join @t within JOIN_DEADLINE_S seconds: a call that should not block
 * and does fails here instead of hanging the suite. */
static void join_bounded(pthread_t t, void **res)
{
	struct timespec ts;
	int ret;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += JOIN_DEADLINE_S;
	ret = pthread_timedjoin_np(t, res, &ts);
	ck_assert_msg(!ret, "thread still blocked after %d s", JOIN_DEADLINE_S);
}

/* ---- records ---- */

START_TEST(test_crc32c)
{
	ls__crc_init();
	/* The standard check value of CRC-32C. */
	ck_assert_uint_eq(ls__crc32c(0, "123456789", 9), 0xe3069283u);
	/* Chaining two calls gives the CRC of the concatenation. */
	ck_assert_uint_eq(ls__crc32c(ls__crc32c(0, "1234", 4), "56789", 5),
			  0xe3069283u);
	ck_assert_uint_eq(ls_record_bytes(16, 4048), 4096);
	ck_assert_uint_eq(ls_record_bytes(1, 0), 40);
	ck_assert_uint_eq(ls_entry_bytes(16), 64);
}
END_TEST

/* ---- put, get, overwrite, delete ---- */

START_TEST(test_put_get_overwrite_delete)
{
	struct ls_options o = opts(8 * MiB, true);
	struct logstore *ls = open_store(&o);
	struct srsv_space_info d;
	unsigned version;
	struct ls_stats st;

	ck_assert_int_eq(get(ls, 0, 1, &version), -ENOENT);
	ck_assert_int_eq(put(ls, 0, 1, 1, 0), 0);
	ck_assert_int_eq(get(ls, 0, 1, &version), 0);
	ck_assert_uint_eq(version, 1);
	/* Another tenant's key of the same name is another key. */
	ck_assert_int_eq(get(ls, 1, 1, &version), -ENOENT);

	d = snap(ls, SRSV_POOL_DATA);
	ck_assert_uint_eq(d.used, REC);
	ck_assert_uint_eq(d.pinned, 0);

	/* An overwrite: the old record is dead, pinned until cleaned. */
	ck_assert_int_eq(put(ls, 0, 1, 2, 0), 0);
	ck_assert_int_eq(get(ls, 0, 1, &version), 0);
	ck_assert_uint_eq(version, 2);
	d = snap(ls, SRSV_POOL_DATA);
	ck_assert_uint_eq(d.used, REC);
	ck_assert_uint_eq(d.pinned, REC);
	verify_ok(ls);

	/* A delete: the value dies, the tombstone lives while an older
	 * record of the key is on disk. */
	ck_assert_int_eq(del(ls, 0, 1), 0);
	ck_assert_int_eq(get(ls, 0, 1, &version), -ENOENT);
	ck_assert_int_eq(del(ls, 0, 1), -ENOENT);
	ck_assert_int_eq(del(ls, 1, 7), -ENOENT);
	d = snap(ls, SRSV_POOL_DATA);
	ck_assert_uint_eq(d.pinned, 2 * REC);
	ck_assert_uint_eq(d.used, ls_record_bytes(KEY_LEN, 0));
	st = stats(ls);
	ck_assert_uint_eq(st.keys, 0);
	ck_assert_uint_eq(st.tombstones, 1);
	ck_assert_uint_eq(st.entries, 1);
	/* The index entry is accounted in METADATA. */
	ck_assert_uint_eq(snap(ls, SRSV_POOL_METADATA).used, ls_entry_bytes(16));
	verify_ok(ls);

	/* Put again after the delete. */
	ck_assert_int_eq(put(ls, 0, 1, 3, 0), 0);
	ck_assert_int_eq(get(ls, 0, 1, &version), 0);
	ck_assert_uint_eq(version, 3);
	verify_ok(ls);
	ck_assert_int_eq(ls_close(ls), 0);
}
END_TEST

START_TEST(test_value_sizes)
{
	struct ls_options o = opts(8 * MiB, true);
	struct logstore *ls = open_store(&o);
	static unsigned char big[512 * 1024], back[512 * 1024];
	size_t len = 0;
	char small[4];

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (unsigned char)(i * 13);
	ck_assert_int_eq(ls_put(ls, 0, "empty", 5, NULL, 0, 0), 0);
	ck_assert_int_eq(ls_get(ls, 0, "empty", 5, NULL, 0, &len), 0);
	ck_assert_uint_eq(len, 0);
	ck_assert_int_eq(ls_put(ls, 0, "big", 3, big, sizeof(big), 0), 0);
	ck_assert_int_eq(ls_get(ls, 0, "big", 3, back, sizeof(back), &len), 0);
	ck_assert_uint_eq(len, sizeof(big));
	ck_assert(!memcmp(big, back, sizeof(big)));
	/* Too small a buffer: the length, and -ENOBUFS. */
	ck_assert_int_eq(ls_get(ls, 0, "big", 3, small, sizeof(small), &len),
			 -ENOBUFS);
	ck_assert_uint_eq(len, sizeof(big));
	/* A record larger than a segment can never be stored. */
	{
		unsigned char *huge = calloc(1, LS_SEGMENT_BYTES);

		ck_assert_ptr_nonnull(huge);
		ck_assert_int_eq(ls_put(ls, 0, "huge", 4, huge,
					LS_SEGMENT_BYTES, 0), -EMSGSIZE);
		free(huge);
	}
	verify_ok(ls);
	ck_assert_int_eq(ls_close(ls), 0);
}
END_TEST

START_TEST(test_bad_input)
{
	struct ls_options o = opts(8 * MiB, true);
	struct logstore *ls = NULL;
	char key[LS_KEY_MAX + 1];
	size_t len;

	o.capacity = 3 * LS_SEGMENT_BYTES;
	ck_assert_int_eq(ls_open(dir, &o, &ls), -EINVAL);
	o = opts(8 * MiB, true);
	o.tenants = LS_MAX_TENANTS + 1;
	ck_assert_int_eq(ls_open(dir, &o, &ls), -EINVAL);
	o = opts(8 * MiB, true);
	o.bg_low_pct = 30;
	o.bg_high_pct = 20;
	ck_assert_int_eq(ls_open(dir, &o, &ls), -EINVAL);
	ck_assert_ptr_null(ls);

	o = opts(8 * MiB, true);
	ls = open_store(&o);
	memset(key, 'x', sizeof(key));
	ck_assert_int_eq(ls_put(ls, 2, "k", 1, "v", 1, 0), -EINVAL);
	ck_assert_int_eq(ls_put(ls, 0, key, 0, "v", 1, 0), -EINVAL);
	ck_assert_int_eq(ls_put(ls, 0, key, LS_KEY_MAX + 1, "v", 1, 0), -EINVAL);
	ck_assert_int_eq(ls_put(ls, 0, "k", 1, NULL, 1, 0), -EINVAL);
	ck_assert_int_eq(ls_put(ls, 0, "k", 1, "v", 1, 0x80), -EINVAL);
	ck_assert_int_eq(ls_delete(ls, 0, "k", 1, 0x80), -EINVAL);
	ck_assert_int_eq(ls_get(ls, 0, "k", 1, NULL, 0, NULL), -EINVAL);
	ck_assert_int_eq(ls_put(ls, 0, key, LS_KEY_MAX, "v", 1, 0), 0);
	ck_assert_int_eq(ls_get(ls, 0, key, LS_KEY_MAX, NULL, 0, &len),
			 -ENOBUFS);
	/* Nothing the refused calls touched shows in the counters. */
	ck_assert_uint_eq(snap(ls, SRSV_POOL_DATA).used,
			  ls_record_bytes(LS_KEY_MAX, 1));
	verify_ok(ls);
	ck_assert_int_eq(ls_close(ls), 0);
}
END_TEST

/* ---- cleaning ---- */

START_TEST(test_clean_reclaims_dead_space)
{
	struct ls_options o = opts(16 * MiB, true);
	struct logstore *ls = open_store(&o);
	struct srsv_space_info before, after;
	struct ls_stats st0, st;
	unsigned files0, version;
	int64_t freed;

	/* 1024 keys fill 4 segments; overwriting every other one three
	 * times leaves the first four half dead and writes 6 more. */
	for (unsigned k = 0; k < 1024; k++)
		ck_assert_int_eq(put(ls, 0, k, 1, 0), 0);
	for (unsigned v = 2; v <= 4; v++)
		for (unsigned k = 0; k < 1024; k += 2)
			ck_assert_int_eq(put(ls, 0, k, v, 0), 0);
	verify_ok(ls);
	before = snap(ls, SRSV_POOL_DATA);
	st0 = stats(ls);
	files0 = count_segment_files();
	ck_assert_uint_eq(before.used, 1024 * REC);
	ck_assert_uint_eq(before.pinned, 3 * 512 * REC);
	ck_assert_uint_eq(before.pinned, st0.dead_bytes);
	ck_assert_uint_eq(files0, st0.segments);

	freed = ls_clean(ls, UINT64_MAX, 64);
	ck_assert_int_gt(freed, 0);
	after = snap(ls, SRSV_POOL_DATA);
	st = stats(ls);
	/* What came back is exactly what the pool unpinned, and the live
	 * records moved stayed used. */
	ck_assert_uint_eq((uint64_t)freed, st.cleaned_bytes);
	ck_assert_uint_eq(before.pinned + st.moved_bytes - after.pinned,
			  (uint64_t)freed);
	ck_assert_uint_eq(after.used, 1024 * REC);
	ck_assert_uint_eq(after.pinned, st.dead_bytes);
	ck_assert_uint_lt(after.pinned, before.pinned);
	ck_assert_uint_gt(st.moved_bytes, 0);
	ck_assert_uint_lt(count_segment_files(), files0);
	ck_assert_uint_eq(count_segment_files(), st.segments);
	ck_assert_uint_eq(st.cleaner_enospc, 0);
	/* Every value is still there, the newest. */
	for (unsigned k = 0; k < 1024; k++) {
		ck_assert_int_eq(get(ls, 0, k, &version), 0);
		ck_assert_uint_eq(version, k % 2 ? 1 : 4);
	}
	verify_ok(ls);
	ck_assert_int_eq(ls_close(ls), 0);
}
END_TEST

/* A tombstone lives while an older record of its key is on disk, then
 * dies (a ghost), and its entry goes with its own segment. */
START_TEST(test_tombstone_lifecycle)
{
	struct ls_options o = opts(16 * MiB, true);
	struct logstore *ls = open_store(&o);
	struct ls_verify_report rep;
	uint64_t tomb = ls_record_bytes(KEY_LEN, 0);
	struct ls_stats st;

	ck_assert_int_eq(put(ls, 0, 7, 1, 0), 0);
	/* Fill the rest of the first segment with other keys. */
	for (unsigned k = 100; k < 100 + 255; k++)
		ck_assert_int_eq(put(ls, 0, k, 1, 0), 0);
	ck_assert_int_eq(del(ls, 0, 7), 0);
	ck_assert_int_eq(ls_verify(ls, &rep), 0);
	ck_assert_uint_eq(rep.tombstones, 1);
	ck_assert_uint_eq(rep.ghosts, 0);
	/* Clean until nothing dead is left: the value's segment goes, the
	 * tombstone dies, its segment goes, and so does the entry. */
	for (int i = 0; i < 8 && stats(ls).dead_bytes; i++) {
		ck_assert_int_ge(ls_clean(ls, UINT64_MAX, 64), 0);
		verify_ok(ls);
	}
	st = stats(ls);
	ck_assert_uint_eq(st.dead_bytes, 0);
	ck_assert_uint_eq(st.tombstones, 0);
	ck_assert_uint_eq(st.entries, 255);
	ck_assert_uint_eq(snap(ls, SRSV_POOL_METADATA).used,
			  255 * ls_entry_bytes(KEY_LEN));
	ck_assert_uint_eq(snap(ls, SRSV_POOL_DATA).used, 255 * REC);
	ck_assert_int_eq(ls_verify(ls, &rep), 0);
	ck_assert_uint_eq(rep.ghosts, 0);
	(void)tomb;
	ck_assert_int_eq(ls_close(ls), 0);

	/* A restart agrees: the key is gone for good. */
	ls = open_store(&o);
	{
		unsigned version;

		ck_assert_int_eq(get(ls, 0, 7, &version), -ENOENT);
	}
	verify_ok(ls);
	ck_assert_int_eq(ls_close(ls), 0);
}
END_TEST

/* A tombstone whose value is in its own segment goes with it: cleaning
 * that segment copies neither. */
START_TEST(test_tombstone_same_segment)
{
	struct ls_options o = opts(16 * MiB, true);
	struct logstore *ls = open_store(&o);
	struct ls_stats st;
	unsigned version;

	ck_assert_int_eq(put(ls, 0, 7, 1, 0), 0);
	ck_assert_int_eq(del(ls, 0, 7), 0);
	/* 254 more fill the segment (the tombstone took 48 bytes of it);
	 * the last one starts the next. */
	for (unsigned k = 100; k < 100 + 255; k++)
		ck_assert_int_eq(put(ls, 0, k, 1, 0), 0);
	ck_assert_uint_eq(stats(ls).tombstones, 1);
	ck_assert_uint_eq(stats(ls).segments, 2);
	ck_assert_int_eq(ls_clean(ls, UINT64_MAX, 1),
			 REC + ls_record_bytes(KEY_LEN, 0) + 254 * REC);
	st = stats(ls);
	/* 254 values moved; neither the value of key 7 nor its tombstone. */
	ck_assert_uint_eq(st.moved_bytes, 254 * REC);
	ck_assert_uint_eq(st.tombstones, 0);
	ck_assert_uint_eq(st.entries, 255);
	ck_assert_uint_eq(st.dead_bytes, 0);
	ck_assert_int_eq(get(ls, 0, 7, &version), -ENOENT);
	verify_ok(ls);
	ck_assert_int_eq(ls_close(ls), 0);
	ls = open_store(&o);
	ck_assert_int_eq(get(ls, 0, 7, &version), -ENOENT);
	verify_ok(ls);
	ck_assert_int_eq(ls_close(ls), 0);
}
END_TEST

/* ---- restart ---- */

struct image {
	struct srsv_space_info data, meta;
	struct srsv_quota_info q[2];
	unsigned versions[600][2];	/* 0: absent */
	struct ls_stats st;
};

static void take_image(struct logstore *ls, struct image *im)
{
	memset(im, 0, sizeof(*im));
	im->data = snap(ls, SRSV_POOL_DATA);
	im->meta = snap(ls, SRSV_POOL_METADATA);
	for (unsigned t = 0; t < 2; t++) {
		ck_assert_int_eq(srsv_quota_snapshot(ls_quota(ls, t), &im->q[t]),
				 0);
		for (unsigned k = 0; k < 600; k++) {
			unsigned v = 0;
			int ret = get(ls, t, k, &v);

			ck_assert(ret == 0 || ret == -ENOENT);
			im->versions[k][t] = ret ? 0 : v;
		}
	}
	im->st = stats(ls);
}

START_TEST(test_restart)
{
	struct ls_options o = opts(16 * MiB, true);
	struct logstore *ls = open_store(&o);
	struct image a, b;
	uint64_t rng = 42;

	/* Two tenants, overwrites, deletes, and a cleaning pass in the
	 * middle, so that the store holds live and dead records, live
	 * tombstones and ghosts. */
	for (unsigned i = 0; i < 3000; i++) {
		unsigned k, t, dice;

		rng = rng * 6364136223846793005u + 1442695040888963407u;
		k = (unsigned)(rng >> 33) % 600;
		t = (unsigned)(rng >> 20) & 1;
		dice = (unsigned)(rng >> 8) % 10;
		if (dice == 0) {
			int ret = del(ls, t, k);

			ck_assert(ret == 0 || ret == -ENOENT);
		} else
			ck_assert_int_eq(put(ls, t, k, i + 1, 0), 0);
		if (i == 1500)
			ck_assert_int_gt(ls_clean(ls, 4 * MiB, 8), 0);
	}
	verify_ok(ls);
	take_image(ls, &a);
	ck_assert_uint_gt(a.data.pinned, 0);
	ck_assert_int_eq(ls_close(ls), 0);

	ls = open_store(&o);
	verify_ok(ls);
	take_image(ls, &b);
	ck_assert_uint_eq(b.st.loaded_segments, a.st.segments);
	ck_assert_uint_eq(b.st.torn_bytes, 0);
	/* The index comes back: every key, its newest version. */
	ck_assert(!memcmp(a.versions, b.versions, sizeof(a.versions)));
	ck_assert_uint_eq(b.st.entries, a.st.entries);
	ck_assert_uint_eq(b.st.tombstones, a.st.tombstones);
	/* The pools come back, to the byte. */
	ck_assert_uint_eq(b.data.used, a.data.used);
	ck_assert_uint_eq(b.data.pinned, a.data.pinned);
	ck_assert_uint_eq(b.data.may_use, a.data.may_use);
	ck_assert_uint_eq(b.meta.used, a.meta.used);
	for (unsigned t = 0; t < 2; t++)
		ck_assert_uint_eq(b.q[t].used, a.q[t].used);
	/* And it keeps working. */
	ck_assert_int_eq(put(ls, 1, 3, 99999, 0), 0);
	ck_assert_int_gt(ls_clean(ls, UINT64_MAX, 64), 0);
	verify_ok(ls);
	ck_assert_int_eq(ls_close(ls), 0);
}
END_TEST

/* A crash in the middle of an append leaves a torn record: cut. */
START_TEST(test_restart_torn_tail)
{
	struct ls_options o = opts(8 * MiB, true);
	struct logstore *ls = open_store(&o);
	unsigned char junk[1000];
	struct srsv_space_info d;
	struct ls_stats st;
	unsigned version;
	char path[4300];
	int fd;

	for (unsigned k = 0; k < 10; k++)
		ck_assert_int_eq(put(ls, 0, k, 1, 0), 0);
	ck_assert_int_eq(ls_close(ls), 0);
	/* Half a record: the first 1000 bytes of a real one. */
	snprintf(path, sizeof(path), "%s/seg-0000000001.log", dir);
	fd = open(path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, junk, sizeof(junk), 0), sizeof(junk));
	ck_assert_int_eq(pwrite(fd, junk, sizeof(junk), 10 * REC),
			 sizeof(junk));
	close(fd);

	ls = open_store(&o);
	st = stats(ls);
	ck_assert_uint_eq(st.torn_bytes, sizeof(junk));
	ck_assert_uint_eq(st.loaded_records, 10);
	d = snap(ls, SRSV_POOL_DATA);
	ck_assert_uint_eq(d.used, 10 * REC);
	for (unsigned k = 0; k < 10; k++)
		ck_assert_int_eq(get(ls, 0, k, &version), 0);
	verify_ok(ls);
	ck_assert_int_eq(ls_close(ls), 0);
}
END_TEST

START_TEST(test_open_over_capacity)
{
	struct ls_options o = opts(16 * MiB, true);
	struct logstore *ls = open_store(&o), *ls2 = NULL;

	for (unsigned k = 0; k < 1500; k++)	/* ~6 MiB */
		ck_assert_int_eq(put(ls, 0, k, 1, 0), 0);
	ck_assert_int_eq(ls_close(ls), 0);
	o.capacity = 4 * MiB;
	ck_assert_int_eq(ls_open(dir, &o, &ls2), -ENOSPC);
	ck_assert_ptr_null(ls2);
	o.capacity = 16 * MiB;
	ls = open_store(&o);
	verify_ok(ls);
	ck_assert_int_eq(ls_close(ls), 0);
}
END_TEST

/* ---- quotas ---- */

struct other_tenant {
	struct logstore *ls;
	unsigned puts, failures;
};

static void *other_tenant_main(void *arg)
{
	struct other_tenant *ot = arg;

	for (unsigned i = 0; i < 400; i++) {
		if (put(ot->ls, 1, i % 100, i, 0))
			ot->failures++;
		else
			ot->puts++;
	}
	return NULL;
}

START_TEST(test_quota)
{
	struct ls_options o = opts(16 * MiB, false);
	struct other_tenant ot = { 0 };
	struct srsv_quota_info qi;
	struct logstore *ls;
	pthread_t t;
	unsigned k;

	o.quota[0] = 10 * REC;
	ls = open_store(&o);
	ot.ls = ls;
	ck_assert_int_eq(pthread_create(&t, NULL, other_tenant_main, &ot), 0);
	/* Tenant 0 fills its quota while tenant 1 writes. */
	for (k = 0; k < 10; k++)
		ck_assert_int_eq(put(ls, 0, k, 1, 0), 0);
	ck_assert_int_eq(put(ls, 0, k, 1, 0), -EDQUOT);
	/* An overwrite needs its new copy before the old one dies. */
	ck_assert_int_eq(put(ls, 0, 3, 2, 0), -EDQUOT);
	ck_assert_int_eq(put(ls, 0, 3, 2, LS_NOWAIT), -EAGAIN);
	join_bounded(t, NULL);
	ck_assert_uint_eq(ot.failures, 0);
	ck_assert_uint_eq(ot.puts, 400);
	ck_assert_int_eq(srsv_quota_snapshot(ls_quota(ls, 0), &qi), 0);
	ck_assert_uint_eq(qi.used, 10 * REC);
	ck_assert_uint_ge(qi.edquot, 2);
	/* A delete is not charged, and gives its value's bytes back. */
	ck_assert_int_eq(del(ls, 0, 3), 0);
	ck_assert_int_eq(srsv_quota_snapshot(ls_quota(ls, 0), &qi), 0);
	ck_assert_uint_eq(qi.used, 9 * REC);
	ck_assert_int_eq(put(ls, 0, k, 1, 0), 0);
	ck_assert_int_eq(srsv_quota_snapshot(ls_quota(ls, 1), &qi), 0);
	ck_assert_uint_eq(qi.used, 100 * REC);
	verify_ok(ls);
	ck_assert_int_eq(ls_close(ls), 0);
}
END_TEST

/* ---- NOWAIT ---- */

struct nowait_call {
	struct logstore *ls;
	int ret;
};

static void *nowait_put_main(void *arg)
{
	struct nowait_call *c = arg;

	c->ret = put(c->ls, 0, 5000, 1, LS_NOWAIT);
	return NULL;
}

/* Run a NOWAIT put in another thread while this one holds something:
 * it must come back (bounded join), with -EAGAIN. */
static int nowait_put_elsewhere(struct logstore *ls)
{
	struct nowait_call c = { ls, 1 };
	pthread_t t;

	ck_assert_int_eq(pthread_create(&t, NULL, nowait_put_main, &c), 0);
	join_bounded(t, NULL);
	return c.ret;
}

START_TEST(test_nowait)
{
	struct ls_options o = opts(4 * MiB, true);
	struct logstore *ls = open_store(&o);
	struct srsv_space_info a, b;
	struct srsv_lock_stats lk;
	unsigned k;

	/* Manual mode: nothing cleans.  Fill until a put would have to
	 * wait: NOWAIT says -EAGAIN, never -ENOSPC. */
	k = fill(ls, distinct_keys);
	ck_assert_uint_eq((uint64_t)k * REC, 3 * MiB);
	ck_assert_uint_lt(ls__pool_free(ls->data), REC);
	/* The refused call changed nothing, and took no library lock that
	 * may sleep (where the build counts them). */
	a = snap(ls, SRSV_POOL_DATA);
	ck_assert_int_ne(srsv_debug_lock_stats_reset(), -EINVAL);
	ck_assert_int_eq(put(ls, 0, k, 1, LS_NOWAIT), -EAGAIN);
	if (srsv_debug_lock_stats(&lk) == 0) {
		ck_assert_uint_eq(lk.blocking_acquisitions, 0);
		ck_assert_uint_eq(lk.waits, 0);
	}
	b = snap(ls, SRSV_POOL_DATA);
	ck_assert_uint_eq(a.may_use, b.may_use);
	ck_assert_uint_eq(a.used, b.used);
	ck_assert_uint_eq(stats(ls).puts, k);
	verify_ok(ls);
	ck_assert_int_eq(ls_close(ls), 0);
	teardown();
	setup();

	/* Room enough, but the log lock is held (an append in progress, a
	 * pwrite that takes long): -EAGAIN, not a wait. */
	o = opts(8 * MiB, true);
	ls = open_store(&o);
	ck_assert_int_eq(put(ls, 0, 1, 1, 0), 0);
	pthread_mutex_lock(&ls->log_lock);
	ck_assert_int_eq(nowait_put_elsewhere(ls), -EAGAIN);
	pthread_mutex_unlock(&ls->log_lock);
	/* The head segment full: a new file would be made, -EAGAIN. */
	for (k = 2; k <= 256; k++)
		ck_assert_int_eq(put(ls, 0, k, 1, 0), 0);
	ck_assert_int_eq(put(ls, 0, 300, 1, LS_NOWAIT), -EAGAIN);
	ck_assert_int_eq(put(ls, 0, 300, 1, 0), 0);
	ck_assert_int_eq(put(ls, 0, 301, 1, LS_NOWAIT), 0);
	ck_assert_uint_ge(stats(ls).eagain, 2);
	verify_ok(ls);
	ck_assert_int_eq(ls_close(ls), 0);
}
END_TEST

/* ---- a full device ---- */

START_TEST(test_full_device_enospc)
{
	/* Library threads on: a put that does not fit waits on a ticket
	 * while the data walk asks the engine to clean; with nothing dead
	 * the walk fails it with -ENOSPC. */
	struct ls_options o = opts(4 * MiB, false);
	struct logstore *ls = open_store(&o);
	struct srsv_space_info d;
	struct ls_stats st;
	unsigned k = 0, version;
	int ret;

	while (!(ret = put(ls, 0, k, 1, 0)))
		k++;
	ck_assert_int_eq(ret, -ENOSPC);
	/* The cleaner's headroom (one segment) is all that is left. */
	ck_assert_uint_ge((uint64_t)k * REC, 3 * MiB - REC);
	d = snap(ls, SRSV_POOL_DATA);
	ck_assert_uint_eq(d.used, (uint64_t)k * REC);
	ck_assert_uint_eq(d.pinned, 0);
	ck_assert_uint_eq(d.nr_tickets, 0);
	ck_assert_uint_eq(d.used + d.may_use, d.total);
	st = stats(ls);
	ck_assert_uint_ge(st.enospc, 1);
	verify_ok(ls);
	ck_assert_int_eq(put(ls, 0, k + 1, 1, 0), -ENOSPC);
	verify_ok(ls);

	/* Deletes still work (their tombstones borrow from the cleaner's
	 * headroom), and cleaning then makes room for puts again. */
	for (unsigned i = 0; i < 300; i++)
		ck_assert_int_eq(del(ls, 0, i), 0);
	ck_assert_int_ge(ls_clean(ls, UINT64_MAX, 64), 0);
	ck_assert_int_eq(put(ls, 0, k + 1, 1, 0), 0);
	ck_assert_int_eq(get(ls, 0, k + 1, &version), 0);
	ck_assert_int_eq(get(ls, 0, 0, &version), -ENOENT);
	verify_ok(ls);
	ck_assert_int_eq(ls_close(ls), 0);
}
END_TEST

/* ---- the flush callback ---- */

struct blocked_put {
	struct logstore *ls;
	unsigned k;
	int ret;
	atomic_bool done;
};

static void *blocked_put_main(void *arg)
{
	struct blocked_put *b = arg;

	b->ret = put(b->ls, 0, b->k, 2, 0);
	atomic_store(&b->done, true);
	return NULL;
}

/* A put waits on a FLUSH_DATA ticket; the library's async data walk
 * serves it, run by srsv_ctx_run_pending() from this thread (or by the
 * waiting thread itself, where the library's manual mode lets a waiter
 * run its own walk): it calls COMMIT_TRANS, which cleans, and the unpin
 * grants the ticket. */
START_TEST(test_flush_callback_cleans)
{
	struct ls_options o = opts(4 * MiB, true);
	struct logstore *ls = open_store(&o);
	struct blocked_put b = { .ls = ls };
	struct srsv_space *data = srsv_ctx_space(ls_ctx(ls), SRSV_POOL_DATA);
	struct srsv_space_stats st;
	pthread_t t;
	unsigned k;

	k = fill(ls, overwrite_400);
	ck_assert_uint_eq((uint64_t)k * REC, 3 * MiB);
	ck_assert_uint_gt(stats(ls).dead_bytes, 0);
	ck_assert_uint_eq(stats(ls).flush_calls, 0);
	ck_assert_int_eq(pthread_create(&t, NULL, blocked_put_main, &b), 0);
	for (int i = 0; i < 10000 && !atomic_load(&b.done); i++) {
		if (snap(ls, SRSV_POOL_DATA).nr_tickets)
			srsv_ctx_run_pending(ls_ctx(ls));
		usleep(1000);
	}
	join_bounded(t, NULL);
	ck_assert_int_eq(b.ret, 0);
	/* It did wait on a ticket, and the callback cleaned for it. */
	ck_assert_int_eq(srsv_space_get_stats(data, &st), 0);
	ck_assert_uint_ge(st.modes[SRSV_FLUSH_DATA].tickets, 1);
	ck_assert_uint_ge(st.states[SRSV_STATE_COMMIT_TRANS].calls, 1);
	ck_assert_uint_ge(stats(ls).flush_calls, 1);
	ck_assert_uint_ge(stats(ls).segments_cleaned, 1);
	verify_ok(ls);
	ck_assert_int_eq(ls_close(ls), 0);
}
END_TEST

/* Without a standing reservation the cleaner has nowhere to copy to once
 * the device is full: dead bytes stay dead (the headroom problem). */
START_TEST(test_cleaner_without_headroom)
{
	struct ls_options o = opts(4 * MiB, true);
	struct logstore *ls;
	struct ls_stats st;

	o.cleaner_reserve = LS_NO_CLEANER_RESERVE;
	ls = open_store(&o);
	/* Keys 0..399, then three quarters of them again and again: every
	 * segment is partly live, and the device full. */
	ck_assert_uint_eq((uint64_t)fill(ls, overwrite_hot) * REC, 4 * MiB);
	st = stats(ls);
	ck_assert_uint_gt(st.dead_bytes, 0);
	ck_assert_uint_eq(st.cleaner_reserve_held, 0);
	ck_assert_int_eq(ls_clean(ls, UINT64_MAX, 64), -ENOSPC);
	st = stats(ls);
	ck_assert_uint_ge(st.cleaner_enospc, 1);
	ck_assert_uint_eq(st.segments_cleaned, 0);
	verify_ok(ls);
	ck_assert_int_eq(ls_close(ls), 0);

	/* The same directory with the default headroom cleans. */
	o.cleaner_reserve = 0;
	o.capacity = 5 * MiB;
	ls = open_store(&o);
	ck_assert_int_gt(ls_clean(ls, UINT64_MAX, 64), 0);
	verify_ok(ls);
	ck_assert_int_eq(ls_close(ls), 0);
}
END_TEST

/*
 * The movers' reserve is the cleaner's headroom, and no writer can take
 * it: writers fill the device to the reserve, a put queues a ticket, and
 * a cleaning pass still copies a segment's live records (from the
 * reserve, passing the ticket), frees the segment, and gets its reserve
 * back first; the ticket is granted with the rest.  No ENOSPC for the
 * cleaner, no headroom kept by the store.
 */
START_TEST(test_cleaner_full_device_movers_reserve)
{
	struct ls_options o = opts(4 * MiB, true);
	struct logstore *ls;
	struct blocked_put b = { .k = 5000 };
	struct srsv_space_info d;
	struct ls_stats st;
	pthread_t t;
	int64_t freed;
	int i;

	o.configure = manual_wait;
	ls = open_store(&o);
	b.ls = ls;
	d = snap(ls, SRSV_POOL_DATA);
	ck_assert_uint_eq(d.mover_rsv_size, LS_SEGMENT_BYTES);
	ck_assert_uint_eq(d.mover_rsv_reserved, LS_SEGMENT_BYTES);
	ck_assert_uint_eq(d.may_use, LS_SEGMENT_BYTES);
	ck_assert_uint_eq(stats(ls).cleaner_reserve_held, LS_SEGMENT_BYTES);
	/* The writers get everything but the reserve. */
	ck_assert_uint_eq((uint64_t)fill(ls, quarter_live) * REC, 3 * MiB);
	ck_assert_uint_lt(ls__pool_free(ls->data), REC);
	d = snap(ls, SRSV_POOL_DATA);
	ck_assert_uint_eq(d.mover_rsv_reserved, LS_SEGMENT_BYTES);
	ck_assert_uint_eq(d.used + d.pinned + d.may_use, d.total);
	/* A writer waits on a ticket; nobody runs the walk for it. */
	ck_assert_int_eq(pthread_create(&t, NULL, blocked_put_main, &b), 0);
	for (i = 0; i < 10000 && !snap(ls, SRSV_POOL_DATA).nr_tickets; i++)
		usleep(1000);
	ck_assert_uint_eq(snap(ls, SRSV_POOL_DATA).nr_tickets, 1);
	ck_assert(!atomic_load(&b.done));

	/* One segment: a quarter of it live, copied from the reserve. */
	freed = ls_clean(ls, 1, 1);
	ck_assert_int_eq(freed, LS_SEGMENT_BYTES);
	join_bounded(t, NULL);
	ck_assert_int_eq(b.ret, 0);
	st = stats(ls);
	ck_assert_uint_ge(st.moved_bytes, LS_SEGMENT_BYTES / 4 - REC);
	ck_assert_uint_eq(st.cleaner_enospc, 0);
	ck_assert_uint_eq(st.clean_aborted, 0);
	/* The unpin refilled the reserve before it granted the ticket. */
	d = snap(ls, SRSV_POOL_DATA);
	ck_assert_uint_eq(d.mover_rsv_reserved, LS_SEGMENT_BYTES);
	ck_assert_uint_eq(d.nr_tickets, 0);
	verify_ok(ls);
	/* And so on, until nothing is dead: never short of room. */
	while (stats(ls).dead_bytes)
		ck_assert_int_gt(ls_clean(ls, UINT64_MAX, 64), 0);
	ck_assert_uint_eq(stats(ls).cleaner_enospc, 0);
	ck_assert_uint_eq(snap(ls, SRSV_POOL_DATA).mover_rsv_reserved,
			  LS_SEGMENT_BYTES);
	verify_ok(ls);
	ck_assert_int_eq(ls_close(ls), 0);
}
END_TEST

/*
 * The restart recipe when the files leave less free than the movers'
 * reserve: tombstones on a full device drew on it, and the store opens
 * again at the same capacity.  srsv_space_load_used() takes what is free,
 * the reserve the rest (log.c, load_data()); the pools equal what the
 * store held.  The reserve is 16 KiB here, less than a segment's live
 * bytes, so the cleaner cannot clean for the deletes (what one segment
 * avoids) and the tombstones keep the reserve's bytes until the restart.
 */
START_TEST(test_restart_movers_reserve_lent)
{
	struct ls_options o = opts(4 * MiB, true);
	uint64_t tomb = ls_record_bytes(KEY_LEN, 0), rsv = 16 * KiB;
	struct srsv_space_info a, d;
	struct logstore *ls;
	unsigned k = 0, version;
	int ret;

	o.cleaner_reserve = rsv;
	ls = open_store(&o);
	/* Distinct keys until the device is full: nothing dead, so the
	 * put's own walk (manual mode, in this thread) fails it. */
	while (!(ret = put(ls, 0, k, 1, 0)))
		k++;
	ck_assert_int_eq(ret, -ENOSPC);
	ck_assert_uint_eq((uint64_t)k * REC, 4 * MiB - rsv);
	/* Deletes still work: their tombstones come from the reserve (the
	 * cleaner cannot copy a segment's live records into 16 KiB). */
	for (unsigned i = 0; i < 200; i++)
		ck_assert_int_eq(del(ls, 0, i), 0);
	a = snap(ls, SRSV_POOL_DATA);
	ck_assert_uint_eq(a.mover_rsv_reserved, rsv - 200 * tomb);
	ck_assert_uint_eq(a.pinned, 200 * REC);
	ck_assert_uint_eq(a.used + a.pinned, 4 * MiB - rsv + 200 * tomb);
	ck_assert_uint_gt(stats(ls).cleaner_enospc, 0);
	verify_ok(ls);
	ck_assert_int_eq(ls_close(ls), 0);

	/* More file bytes than the pool's free space at creation. */
	ls = open_store(&o);
	d = snap(ls, SRSV_POOL_DATA);
	ck_assert_uint_eq(d.used, a.used);
	ck_assert_uint_eq(d.pinned, a.pinned);
	ck_assert_uint_eq(d.reserved, 0);
	ck_assert_uint_eq(d.may_use, d.mover_rsv_reserved);
	ck_assert_uint_eq(d.mover_rsv_reserved, rsv - 200 * tomb);
	ck_assert_uint_eq(snap(ls, SRSV_POOL_METADATA).used,
			  (uint64_t)k * ls_entry_bytes(KEY_LEN));
	verify_ok(ls);
	ck_assert_int_eq(get(ls, 0, 0, &version), -ENOENT);
	ck_assert_int_eq(get(ls, 0, k - 1, &version), 0);
	ck_assert_int_eq(ls_close(ls), 0);

	/* With room beside it, load_used() takes it all; the reserve is
	 * whole from the start, and cleaning works again. */
	o.capacity = 5 * MiB;
	o.cleaner_reserve = 0;
	ls = open_store(&o);
	d = snap(ls, SRSV_POOL_DATA);
	ck_assert_uint_eq(d.used, a.used);
	ck_assert_uint_eq(d.mover_rsv_reserved, LS_SEGMENT_BYTES);
	verify_ok(ls);
	ck_assert_int_gt(ls_clean(ls, UINT64_MAX, 64), 0);
	ck_assert_uint_eq(stats(ls).cleaner_enospc, 0);
	ck_assert_uint_eq(snap(ls, SRSV_POOL_DATA).mover_rsv_reserved,
			  LS_SEGMENT_BYTES);
	verify_ok(ls);
	ck_assert_int_eq(ls_close(ls), 0);
}
END_TEST

/*
 * The restart's dead bytes are debt the library sees at once: pinned by
 * the recipe, cleaned by the data pool's preemptive flusher after the
 * first put, before any writer waits on a ticket.
 */
START_TEST(test_restart_debt_cleaned_preemptively)
{
	struct ls_options o = opts(16 * MiB, true);
	struct logstore *ls = open_store(&o);
	struct srsv_space_stats ss;
	struct ls_stats st;
	int i;

	/* 1024 keys, each written three times: two thirds of 12 MiB dead. */
	for (unsigned v = 1; v <= 3; v++)
		for (unsigned k = 0; k < 1024; k++)
			ck_assert_int_eq(put(ls, 0, k, v, 0), 0);
	ck_assert_uint_eq(stats(ls).dead_bytes, 2 * 1024 * REC);
	ck_assert_int_eq(ls_close(ls), 0);

	o.manual = false;
	ls = open_store(&o);
	ck_assert_uint_eq(snap(ls, SRSV_POOL_DATA).pinned, 2 * 1024 * REC);
	verify_ok(ls);
	ck_assert_uint_eq(stats(ls).segments_cleaned, 0);
	/* New writes eat the room until the debt passes its threshold
	 * (three quarters of the room at clamp 1): a reservation then
	 * queues the preemptive flusher, before any writer has to wait. */
	for (i = 0; i < 10000 && !stats(ls).segments_cleaned; i++) {
		if (i < 1024)
			ck_assert_int_eq(put(ls, 0, 2048 + i, 1, 0), 0);
		usleep(i < 1024 ? 100 : 1000);
	}
	st = stats(ls);
	ck_assert_uint_gt(st.segments_cleaned, 0);
	ck_assert_uint_eq(st.cleaner_enospc, 0);
	ck_assert_int_eq(srsv_space_get_stats(srsv_ctx_space(ls_ctx(ls),
							     SRSV_POOL_DATA),
					      &ss), 0);
	ck_assert_uint_gt(ss.states[SRSV_STATE_COMMIT_TRANS].preempt_calls, 0);
	ck_assert_uint_eq(ss.modes[SRSV_FLUSH_DATA].tickets, 0);
	ck_assert_int_eq(ls_close(ls), 0);
	ls = open_store(&o);
	verify_ok(ls);
	ck_assert_int_eq(ls_close(ls), 0);
}
END_TEST

static Suite *logstore_suite(void)
{
	Suite *s = suite_create("logstore");
	TCase *tc = tcase_create("logstore");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_crc32c);
	tcase_add_test(tc, test_put_get_overwrite_delete);
	tcase_add_test(tc, test_value_sizes);
	tcase_add_test(tc, test_bad_input);
	tcase_add_test(tc, test_clean_reclaims_dead_space);
	tcase_add_test(tc, test_tombstone_lifecycle);
	tcase_add_test(tc, test_tombstone_same_segment);
	tcase_add_test(tc, test_restart);
	tcase_add_test(tc, test_restart_torn_tail);
	tcase_add_test(tc, test_open_over_capacity);
	tcase_add_test(tc, test_quota);
	tcase_add_test(tc, test_nowait);
	tcase_add_test(tc, test_full_device_enospc);
	tcase_add_test(tc, test_flush_callback_cleans);
	tcase_add_test(tc, test_cleaner_without_headroom);
	tcase_add_test(tc, test_cleaner_full_device_movers_reserve);
	tcase_add_test(tc, test_restart_movers_reserve_lent);
	tcase_add_test(tc, test_restart_debt_cleaned_preemptively);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(logstore_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
