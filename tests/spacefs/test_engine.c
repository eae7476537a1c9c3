/* SPDX-License-Identifier: MIT */
/*
 * The spacefs engine driven directly, without FUSE (suite 'spacefs').
 *
 * The kernel does not forward RWF_NOWAIT to FUSE servers, so the NOWAIT
 * path is proven here through the engine's own entry point as well as
 * through the O_NONBLOCK descriptor in run-spacefs.sh: a NOWAIT write gets
 * -EAGAIN, never -ENOSPC or -EDQUOT, when the cache is full, the file
 * system is full or the tenant is over its quota, while the same write
 * blocking succeeds or gets the real error.  Also: copy-on-write pins,
 * deletion pins, data read back through the cache and after a remount,
 * concurrent writers through a tiny metadata pool (tickets), and the
 * accounting check at every unmount.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "spacefs.h"

#define KiB 1024ull
#define MiB (1024ull * 1024)

struct tmpfs {
	char dir[256];
	struct sfs_config cfg;
	struct sfs *fs;
};

static void setup(struct tmpfs *t, uint64_t cap, uint64_t meta, uint64_t cache)
{
	snprintf(t->dir, sizeof(t->dir), "%s/sfs-engine.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(t->dir));
	sfs_config_init(&t->cfg);
	t->cfg.backing = t->dir;
	t->cfg.capacity = cap;
	t->cfg.meta_bytes = meta;
	t->cfg.cache_bytes = cache;
	t->cfg.preempt = false;
	t->cfg.commit_interval = 0;
	t->fs = NULL;
}

static void do_mount(struct tmpfs *t)
{
	ck_assert_int_eq(sfs_mount(&t->cfg, &t->fs), 0);
}

static void do_unmount(struct tmpfs *t)
{
	/* The check at unmount is part of every test. */
	ck_assert_int_eq(sfs_unmount(t->fs, stderr), 0);
	t->fs = NULL;
}

static int rm_one(const char *p, const struct stat *st, int type,
		  struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(p);
}

static void teardown(struct tmpfs *t)
{
	if (t->fs)
		do_unmount(t);
	nftw(t->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A figure from the control file's snapshot. */
static uint64_t snap(struct sfs *fs, const char *key)
{
	char *text, *line;
	size_t len, klen = strlen(key);
	uint64_t v = UINT64_MAX;

	ck_assert_int_eq(sfs_snapshot(fs, &text, &len), 0);
	for (line = text; line && *line; line = strchr(line, '\n')) {
		if (*line == '\n')
			line++;
		if (!strncmp(line, key, klen) && line[klen] == ' ') {
			v = strtoull(line + klen + 1, NULL, 10);
			break;
		}
	}
	free(text);
	ck_assert_msg(v != UINT64_MAX, "no %s in the snapshot", key);
	return v;
}

static struct sfs_file *create(struct sfs *fs, const char *path)
{
	struct sfs_file *f;

	ck_assert_int_eq(sfs_create(fs, path, 0644, O_RDWR, &f), 0);
	return f;
}

/* Create @n files /s0.. of 4 KiB each; returns how many failed. */
static unsigned small_files(struct sfs *fs, unsigned n)
{
	static const char page[4096];
	unsigned failed = 0;

	for (unsigned i = 0; i < n; i++) {
		struct sfs_file *f;
		char path[32];

		snprintf(path, sizeof(path), "/s%u", i);
		if (sfs_create(fs, path, 0644, O_RDWR, &f)) {
			failed++;
			continue;
		}
		if (sfs_write(fs, f, page, sizeof(page), 0, false) !=
		    (ssize_t)sizeof(page))
			failed++;
		sfs_release(fs, f);
	}
	return failed;
}

static void fill_pattern(char *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (char)((i * 31 + seed * 17 + (i >> 12)) & 0xff);
}

START_TEST(test_roundtrip)
{
	struct tmpfs t;
	struct sfs_file *f;
	static char buf[3 * 4096 + 100], back[sizeof(buf)];
	struct stat st;

	setup(&t, 64 * MiB, 1 * MiB, 1 * MiB);
	do_mount(&t);
	f = create(t.fs, "/a");
	fill_pattern(buf, sizeof(buf), 1);
	/* Unaligned: the first and last pages are partial. */
	ck_assert_int_eq(sfs_write(t.fs, f, buf, sizeof(buf), 1000, false),
			 sizeof(buf));
	ck_assert_int_eq(sfs_read(t.fs, f, back, sizeof(back), 1000),
			 sizeof(back));
	ck_assert_mem_eq(buf, back, sizeof(buf));
	/* The bytes before the write read as zeros. */
	ck_assert_int_eq(sfs_read(t.fs, f, back, 1000, 0), 1000);
	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(back[i], 0);
	ck_assert_uint_eq(snap(t.fs, "dirty_bytes"), 4 * 4096);
	/* getattr writes the file back first (its times are final). */
	ck_assert_int_eq(sfs_getattr(t.fs, "/a", &st), 0);
	ck_assert_int_eq(st.st_size, 1000 + sizeof(buf));
	ck_assert_uint_eq(snap(t.fs, "dirty_bytes"), 0);
	ck_assert_int_eq(sfs_sync(t.fs), 0);
	ck_assert_uint_eq(snap(t.fs, "dirty_bytes"), 0);
	ck_assert_uint_eq(snap(t.fs, "data.used"), 4 * 4096);
	memset(back, 0, sizeof(back));
	ck_assert_int_eq(sfs_read(t.fs, f, back, sizeof(back), 1000),
			 sizeof(back));
	ck_assert_mem_eq(buf, back, sizeof(buf));
	/* Rewrite a few bytes in the middle of a clean page: the rest of the
	 * page comes from the backing file. */
	ck_assert_int_eq(sfs_write(t.fs, f, "XYZ", 3, 5000, false), 3);
	memcpy(buf + 4000, "XYZ", 3);
	ck_assert_int_eq(sfs_sync(t.fs), 0);
	ck_assert_int_eq(sfs_read(t.fs, f, back, sizeof(back), 1000),
			 sizeof(back));
	ck_assert_mem_eq(buf, back, sizeof(buf));
	sfs_release(t.fs, f);
	ck_assert_int_eq(sfs_check(t.fs, stderr), 0);
	do_unmount(&t);

	/* Remount: the data and the accounting come back from the files. */
	do_mount(&t);
	ck_assert_uint_eq(snap(t.fs, "data.used"), 4 * 4096);
	ck_assert_int_eq(sfs_open(t.fs, "/a", O_RDONLY, &f), 0);
	memset(back, 0, sizeof(back));
	ck_assert_int_eq(sfs_read(t.fs, f, back, sizeof(back), 1000),
			 sizeof(back));
	ck_assert_mem_eq(buf, back, sizeof(buf));
	sfs_release(t.fs, f);
	teardown(&t);
}
END_TEST

START_TEST(test_nowait_cache_full)
{
	struct tmpfs t;
	struct sfs_file *f;
	static char buf[64 * KiB];

	setup(&t, 64 * MiB, 4 * MiB, 64 * KiB);
	do_mount(&t);
	f = create(t.fs, "/n");
	ck_assert_int_eq(sfs_write(t.fs, f, buf, sizeof(buf), 0, true),
			 sizeof(buf));
	ck_assert_uint_eq(snap(t.fs, "dirty_bytes"), sizeof(buf));
	/* The cache is full: NOWAIT says EAGAIN and leaves it as it was. */
	ck_assert_int_eq(sfs_write(t.fs, f, buf, 4096, sizeof(buf), true),
			 -EAGAIN);
	ck_assert_uint_eq(snap(t.fs, "dirty_bytes"), sizeof(buf));
	ck_assert_uint_eq(snap(t.fs, "data.may_use"), sizeof(buf));
	ck_assert_uint_eq(snap(t.fs, "eagain"), 1);
	/* The throttle counts the pages a write covers, dirty or not (as
	 * the kernel's): a NOWAIT rewrite of dirty pages waits for room too. */
	ck_assert_int_eq(sfs_write(t.fs, f, buf, 4096, 0, true), -EAGAIN);
	/* Blocking, the writer writes back and goes on. */
	ck_assert_int_eq(sfs_write(t.fs, f, buf, 4096, sizeof(buf), false),
			 4096);
	ck_assert_uint_eq(snap(t.fs, "throttles"), 1);
	ck_assert_uint_le(snap(t.fs, "dirty_bytes"), sizeof(buf));
	sfs_release(t.fs, f);
	teardown(&t);
}
END_TEST

START_TEST(test_nowait_enospc)
{
	struct tmpfs t;
	struct sfs_file *f;
	static char buf[1 * MiB];
	uint64_t off = 0;
	ssize_t n;

	setup(&t, 32 * MiB, 1 * MiB, 4 * MiB);
	do_mount(&t);
	f = create(t.fs, "/full");
	while ((n = sfs_write(t.fs, f, buf, sizeof(buf), (off_t)off, false)) > 0)
		off += (uint64_t)n;
	ck_assert_int_eq(n, -ENOSPC);
	ck_assert_uint_ge(off, 28 * MiB);
	ck_assert_int_eq(sfs_sync(t.fs), 0);
	/* Full: blocking says ENOSPC, NOWAIT says EAGAIN, every time. */
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(sfs_write(t.fs, f, buf, sizeof(buf),
					   (off_t)off, true), -EAGAIN);
		ck_assert_int_eq(sfs_write(t.fs, f, buf, sizeof(buf),
					   (off_t)off, false), -ENOSPC);
	}
	ck_assert_uint_eq(snap(t.fs, "eagain"), 3);
	ck_assert_uint_eq(snap(t.fs, "enospc"), 4);
	sfs_release(t.fs, f);
	/* Delete (it must work on a full file system): the space is pinned
	 * until the commit, and then all of it can be written again. */
	ck_assert_int_eq(sfs_unlink(t.fs, "/full"), 0);
	ck_assert_uint_eq(snap(t.fs, "data.pinned"), off);
	f = create(t.fs, "/again");
	for (uint64_t o = 0; o < off; o += sizeof(buf))
		ck_assert_int_eq(sfs_write(t.fs, f, buf, sizeof(buf), (off_t)o,
					   false), sizeof(buf));
	sfs_release(t.fs, f);
	teardown(&t);
}
END_TEST

/*
 * Space comes back (block groups): fill the file system with one file,
 * delete it, commit, then create many small files.  The data pool had
 * grown over the whole device; the commit returns its emptied chunks, so
 * the metadata pool can grow again and no small file fails.
 */
START_TEST(test_space_comes_back)
{
	struct tmpfs t;
	struct sfs_file *f;
	static char buf[1 * MiB];
	uint64_t off = 0, meta_before;
	ssize_t n;

	setup(&t, 64 * MiB, 1 * MiB, 4 * MiB);
	do_mount(&t);
	meta_before = snap(t.fs, "meta_chunks");
	f = create(t.fs, "/full");
	while ((n = sfs_write(t.fs, f, buf, sizeof(buf), (off_t)off, false)) > 0)
		off += (uint64_t)n;
	ck_assert_int_eq(n, -ENOSPC);
	sfs_release(t.fs, f);
	ck_assert_uint_lt(snap(t.fs, "unallocated"), 16 * MiB);
	ck_assert_int_eq(sfs_unlink(t.fs, "/full"), 0);
	ck_assert_int_eq(sfs_sync(t.fs), 0);
	ck_assert_uint_gt(snap(t.fs, "chunks_returned"), 0);
	ck_assert_uint_ge(snap(t.fs, "unallocated"), 32 * MiB);
	ck_assert_uint_eq(small_files(t.fs, 3000), 0);
	/* The metadata pool did grow into the space that came back. */
	ck_assert_uint_gt(snap(t.fs, "meta_chunks"), meta_before);
	teardown(&t);
}
END_TEST

/*
 * Underused chunks are relocated: fill the file system with 1 MiB files,
 * delete all but every sixteenth (each 16 MiB data chunk keeps one live
 * file, none is empty), commit, then create small files.  The metadata
 * pool can only grow once the library has spacefs relocate data chunks
 * (RECLAIM_CHUNKS) and the commit returns them.
 */
START_TEST(test_underused_chunks_relocated)
{
	struct tmpfs t;
	struct sfs_file *f;
	static char buf[1 * MiB];
	unsigned nfiles = 0;
	uint64_t returned;
	char path[32];

	setup(&t, 64 * MiB, 1 * MiB, 4 * MiB);
	do_mount(&t);
	for (;; nfiles++) {
		ssize_t n;

		snprintf(path, sizeof(path), "/big%u", nfiles);
		if (sfs_create(t.fs, path, 0644, O_RDWR, &f))
			break;
		n = sfs_write(t.fs, f, buf, sizeof(buf), 0, false);
		sfs_release(t.fs, f);
		if (n != (ssize_t)sizeof(buf))
			break;
		/* Written back file by file, so that file i sits in data
		 * MiB i whatever the writeback threads do: every chunk then
		 * keeps a live file, and only relocation can empty one. */
		ck_assert_int_eq(sfs_sync(t.fs), 0);
	}
	ck_assert_uint_ge(nfiles, 32);
	returned = snap(t.fs, "chunks_returned");
	for (unsigned i = 0; i <= nfiles; i++) {
		snprintf(path, sizeof(path), "/big%u", i);
		if (i % 16)
			(void)sfs_unlink(t.fs, path);
	}
	ck_assert_int_eq(sfs_sync(t.fs), 0);
	/* No data chunk was emptied by the deletes alone. */
	ck_assert_uint_eq(snap(t.fs, "chunks_returned"), returned);
	ck_assert_uint_eq(small_files(t.fs, 3000), 0);
	ck_assert_uint_gt(snap(t.fs, "chunks_relocated"), 0);
	teardown(&t);
}
END_TEST

START_TEST(test_nowait_edquot)
{
	struct tmpfs t;
	struct sfs_file *f;
	static char buf[64 * KiB], big[1 * MiB];
	uint64_t off = 0;
	ssize_t n;

	setup(&t, 64 * MiB, 4 * MiB, 4 * MiB);
	t.cfg.nr_tenants = 1;
	strcpy(t.cfg.tenants[0].name, "t");
	t.cfg.tenants[0].limit = 2 * MiB;
	do_mount(&t);
	f = create(t.fs, "/t/f");
	while ((n = sfs_write(t.fs, f, buf, sizeof(buf), (off_t)off, false)) > 0)
		off += (uint64_t)n;
	ck_assert_int_eq(n, -EDQUOT);
	ck_assert_uint_le(off, 2 * MiB);
	ck_assert_uint_ge(off, 1 * MiB);
	ck_assert_int_eq(sfs_write(t.fs, f, buf, sizeof(buf), (off_t)off, true),
			 -EAGAIN);
	ck_assert_int_eq(sfs_write(t.fs, f, buf, sizeof(buf), (off_t)off, false),
			 -EDQUOT);
	/* Outside the tenant nothing is limited. */
	sfs_release(t.fs, f);
	f = create(t.fs, "/free");
	ck_assert_int_eq(sfs_write(t.fs, f, buf, sizeof(buf), 0, true),
			 sizeof(buf));
	sfs_release(t.fs, f);
	ck_assert_int_eq(sfs_rename(t.fs, "/t/f", "/g", 0), -EXDEV);
	/* Remounted, the scan charges the tenant what its directory holds
	 * (it once compared the names before the tenants had them: the
	 * quota came back empty and deleting the file underflowed it). */
	do_unmount(&t);
	do_mount(&t);
	ck_assert_int_eq(sfs_open(t.fs, "/t/f", O_RDWR, &f), 0);
	ck_assert_int_eq(sfs_write(t.fs, f, big, sizeof(big), (off_t)off, false),
			 -EDQUOT);
	sfs_release(t.fs, f);
	ck_assert_int_eq(sfs_unlink(t.fs, "/t/f"), 0);
	ck_assert_int_eq(sfs_check(t.fs, stderr), 0);
	f = create(t.fs, "/t/f2");
	ck_assert_int_eq(sfs_write(t.fs, f, buf, sizeof(buf), 0, false),
			 sizeof(buf));
	sfs_release(t.fs, f);
	teardown(&t);
}
END_TEST

START_TEST(test_cow_pins)
{
	struct tmpfs t;
	struct sfs_file *f;
	static char buf[1 * MiB];

	setup(&t, 64 * MiB, 4 * MiB, 4 * MiB);
	do_mount(&t);
	f = create(t.fs, "/c");
	ck_assert_int_eq(sfs_write(t.fs, f, buf, sizeof(buf), 0, false),
			 sizeof(buf));
	ck_assert_int_eq(sfs_sync(t.fs), 0);
	ck_assert_uint_eq(snap(t.fs, "data.used"), sizeof(buf));
	ck_assert_uint_eq(snap(t.fs, "data.pinned"), 0);
	/* Overwrite half: once written back, the old half is pinned... */
	ck_assert_int_eq(sfs_write(t.fs, f, buf, sizeof(buf) / 2, 0, false),
			 sizeof(buf) / 2);
	ck_assert_int_eq(sfs_control(t.fs, "writeback", 9), 0);
	ck_assert_uint_eq(snap(t.fs, "data.pinned"), sizeof(buf) / 2);
	ck_assert_uint_eq(snap(t.fs, "data.used"), sizeof(buf));
	ck_assert_uint_eq(snap(t.fs, "meta.pinned"), 16 * KiB);
	/* ...until the commit. */
	ck_assert_int_eq(sfs_control(t.fs, "commit", 6), 0);
	ck_assert_uint_eq(snap(t.fs, "data.pinned"), 0);
	ck_assert_uint_eq(snap(t.fs, "meta.pinned"), 0);
	ck_assert_uint_eq(snap(t.fs, "data.used"), sizeof(buf));
	/* Truncate pins what it cuts. */
	ck_assert_int_eq(sfs_ftruncate(t.fs, f, 4096), 0);
	ck_assert_uint_eq(snap(t.fs, "data.pinned"), sizeof(buf) - 4096);
	sfs_release(t.fs, f);
	/* Delete pins the rest. */
	ck_assert_int_eq(sfs_unlink(t.fs, "/c"), 0);
	ck_assert_uint_eq(snap(t.fs, "data.pinned"), sizeof(buf));
	ck_assert_uint_eq(snap(t.fs, "data.used"), 0);
	ck_assert_int_eq(sfs_check(t.fs, stderr), 0);
	ck_assert_uint_eq(snap(t.fs, "data.pinned"), 0);
	teardown(&t);
}
END_TEST

/* Concurrent writers: each owns the blocks i % NR_WRITERS == id of one
 * shared file; blocks of 3000 bytes share pages between writers. */
#define NR_WRITERS 4
#define BLOCK 3000
#define NR_BLOCKS 2048
#define PASSES 3

struct writer {
	struct sfs *fs;
	struct sfs_file *f;
	unsigned id;
	pthread_t thread;
	int err;
};

static void block_data(char *buf, unsigned block, unsigned pass)
{
	for (unsigned i = 0; i < BLOCK; i++)
		buf[i] = (char)(block * 7 + pass * 13 + i);
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	char buf[BLOCK];

	for (unsigned pass = 1; pass <= PASSES && !w->err; pass++) {
		for (unsigned b = w->id; b < NR_BLOCKS; b += NR_WRITERS) {
			/* Scatter the order a little between passes. */
			unsigned blk = (b * (pass * 2 + 1)) % NR_BLOCKS;
			ssize_t n;

			if (blk % NR_WRITERS != w->id)
				continue;
			block_data(buf, blk, pass);
			n = sfs_write(w->fs, w->f, buf, BLOCK,
				      (off_t)blk * BLOCK, false);
			if (n != BLOCK) {
				w->err = n < 0 ? (int)n : -EIO;
				break;
			}
		}
		/* Every block gets this pass's version, in order. */
		for (unsigned b = w->id; b < NR_BLOCKS; b += NR_WRITERS) {
			block_data(buf, b, pass);
			if (sfs_write(w->fs, w->f, buf, BLOCK, (off_t)b * BLOCK,
				      false) != BLOCK) {
				w->err = -EIO;
				break;
			}
		}
	}
	return NULL;
}

static void verify_blocks(struct sfs *fs, struct sfs_file *f)
{
	char buf[BLOCK], want[BLOCK];

	for (unsigned b = 0; b < NR_BLOCKS; b++) {
		ck_assert_int_eq(sfs_read(fs, f, buf, BLOCK, (off_t)b * BLOCK),
				 BLOCK);
		block_data(want, b, PASSES);
		ck_assert_msg(!memcmp(buf, want, BLOCK), "block %u differs", b);
	}
}

/* A pace= the library refuses fails the mount, and leaves nothing. */
START_TEST(test_pace_bad)
{
	struct tmpfs t;

	setup(&t, 64 * MiB, 1 * MiB, 256 * KiB);
	t.cfg.pace_pct = 100;
	ck_assert_int_eq(sfs_mount(&t.cfg, &t.fs), -EINVAL);
	ck_assert_ptr_null(t.fs);
	t.cfg.pace_pct = 99;
	do_mount(&t);
	teardown(&t);
}
END_TEST

START_TEST(test_concurrent_writers)
{
	struct writer w[NR_WRITERS];
	struct tmpfs t;
	struct sfs_file *f;

	/* 6 MiB of blocks x 3 passes through a 256 KiB cache and a 1 MiB
	 * metadata pool (sixteen extents' worth): writers throttle and wait
	 * on metadata tickets all the time. */
	setup(&t, 64 * MiB, 1 * MiB, 256 * KiB);
	t.cfg.preempt = _i != 0;
	/* The third run adds the library's pacing (pace=50). */
	t.cfg.pace_pct = _i == 2 ? 50 : 0;
	do_mount(&t);
	f = create(t.fs, "/shared");
	for (unsigned i = 0; i < NR_WRITERS; i++) {
		w[i] = (struct writer){ .fs = t.fs, .f = f, .id = i };
		ck_assert_int_eq(pthread_create(&w[i].thread, NULL, writer_main,
						&w[i]), 0);
	}
	for (unsigned i = 0; i < NR_WRITERS; i++) {
		pthread_join(w[i].thread, NULL);
		ck_assert_int_eq(w[i].err, 0);
	}
	verify_blocks(t.fs, f);
	if (_i < 2)
		ck_assert_uint_gt(snap(t.fs, "meta.tickets"), 0);
	ck_assert_uint_gt(snap(t.fs, "cow_pinned_pages"), 0);
	ck_assert_int_eq(sfs_check(t.fs, stderr), 0);
	verify_blocks(t.fs, f);
	sfs_release(t.fs, f);
	do_unmount(&t);
	do_mount(&t);
	ck_assert_int_eq(sfs_open(t.fs, "/shared", O_RDONLY, &f), 0);
	verify_blocks(t.fs, f);
	sfs_release(t.fs, f);
	teardown(&t);
}
END_TEST

START_TEST(test_namespace_items)
{
	struct tmpfs t;
	struct sfs_file *f;
	uint64_t leaves, inodes;

	setup(&t, 64 * MiB, 4 * MiB, 1 * MiB);
	do_mount(&t);
	leaves = snap(t.fs, "engine.leaves");
	inodes = snap(t.fs, "engine.inodes");
	ck_assert_int_eq(sfs_mkdir(t.fs, "/d", 0755), 0);
	f = create(t.fs, "/d/x");
	sfs_release(t.fs, f);
	ck_assert_int_eq(sfs_symlink(t.fs, "x", "/d/l"), 0);
	ck_assert_int_eq(sfs_link(t.fs, "/d/x", "/d/y"), 0);
	ck_assert_int_eq(sfs_chmod(t.fs, "/d/x", 0600), 0);
	ck_assert_int_eq(sfs_rename(t.fs, "/d/y", "/d/z", 0), 0);
	/* Queued, each holding one item's metadata. */
	ck_assert_uint_eq(snap(t.fs, "items_queued"), 6);
	ck_assert_uint_eq(snap(t.fs, "rsv.delayed_items"), 6 * 4 * 16 * KiB);
	ck_assert_int_eq(sfs_check(t.fs, stderr), 0);
	ck_assert_uint_eq(snap(t.fs, "items_queued"), 0);
	/* d, x, l: three new inodes, in at most three new leaves (they
	 * share one when their numbers are neighbours). */
	ck_assert_uint_eq(snap(t.fs, "engine.inodes"), inodes + 3);
	ck_assert_uint_le(snap(t.fs, "engine.leaves"), leaves + 3);
	ck_assert_uint_eq(snap(t.fs, "meta.used"),
			  snap(t.fs, "engine.leaves") * 16 * KiB);
	ck_assert_int_eq(sfs_unlink(t.fs, "/d/z"), 0);	/* x still linked */
	ck_assert_int_eq(sfs_unlink(t.fs, "/d/x"), 0);
	ck_assert_int_eq(sfs_unlink(t.fs, "/d/l"), 0);
	ck_assert_int_eq(sfs_rmdir(t.fs, "/d"), 0);
	ck_assert_int_eq(sfs_check(t.fs, stderr), 0);
	ck_assert_uint_eq(snap(t.fs, "engine.leaves"), leaves);
	ck_assert_uint_eq(snap(t.fs, "engine.inodes"), inodes);
	teardown(&t);
}
END_TEST

/* Small files share leaves: 2000 six-byte files take about a thirty-second
 * of a leaf each (btrfs: about 530 bytes), not 16 KiB; after deleting every
 * other one most leaves are still there, after deleting all of them they
 * are gone; remounted, the scan finds the same leaves. */
/* More files in use than descriptors: with a budget of 32 backing fds,
 * 600 files written and closed (and written again) make the engine write
 * back, commit and close idle descriptors; every byte reads back, the
 * accounting holds, and a file still open keeps its descriptor. */
START_TEST(test_fd_budget)
{
	enum { N = 600 };
	struct tmpfs t;
	struct sfs_file *keep, *f;
	char path[64], buf[64];

	setup(&t, 128 * MiB, 8 * MiB, 4 * MiB);
	t.cfg.fd_budget = 32;
	do_mount(&t);
	keep = create(t.fs, "/keep");
	ck_assert_int_eq(sfs_write(t.fs, keep, "kept", 4, 0, false), 4);
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < N; i++) {
			int len = snprintf(buf, sizeof(buf), "file %d pass %d",
					   i, pass);

			snprintf(path, sizeof(path), "/f%d", i);
			if (pass)
				ck_assert_int_eq(sfs_open(t.fs, path, O_RDWR,
							  &f), 0);
			else
				f = create(t.fs, path);
			ck_assert_int_eq(sfs_write(t.fs, f, buf, (size_t)len,
						   0, false), len);
			sfs_release(t.fs, f);
			ck_assert_uint_le(snap(t.fs, "backing_fds"), 32 + 2);
		}
	}
	ck_assert_int_eq(sfs_write(t.fs, keep, "KEPT", 4, 4, false), 4);
	ck_assert_int_eq(sfs_check(t.fs, stderr), 0);
	for (int i = 0; i < N; i++) {
		int len = snprintf(buf, sizeof(buf), "file %d pass 1", i);
		char got[64] = { 0 };

		snprintf(path, sizeof(path), "/f%d", i);
		ck_assert_int_eq(sfs_open(t.fs, path, O_RDONLY, &f), 0);
		ck_assert_int_eq(sfs_read(t.fs, f, got, sizeof(got), 0), len);
		ck_assert_str_eq(got, buf);
		sfs_release(t.fs, f);
	}
	ck_assert_int_eq(sfs_read(t.fs, keep, buf, 8, 0), 8);
	ck_assert_int_eq(memcmp(buf, "keptKEPT", 8), 0);
	sfs_release(t.fs, keep);
	teardown(&t);
}
END_TEST

START_TEST(test_small_files_share_leaves)
{
	enum { N = 2000 };
	struct tmpfs t;
	uint64_t leaves0, inodes0, leaves, half;
	char path[64];

	setup(&t, 128 * MiB, 8 * MiB, 4 * MiB);
	do_mount(&t);
	leaves0 = snap(t.fs, "engine.leaves");
	inodes0 = snap(t.fs, "engine.inodes");
	ck_assert_int_eq(sfs_mkdir(t.fs, "/s", 0755), 0);
	for (int i = 0; i < N; i++) {
		struct sfs_file *f;

		snprintf(path, sizeof(path), "/s/f%d", i);
		f = create(t.fs, path);
		ck_assert_int_eq(sfs_write(t.fs, f, "hello\n", 6, 0, false), 6);
		sfs_release(t.fs, f);
	}
	ck_assert_int_eq(sfs_check(t.fs, stderr), 0);
	ck_assert_uint_eq(snap(t.fs, "engine.inodes"), inodes0 + N + 1);
	leaves = snap(t.fs, "engine.leaves") - leaves0;
	fprintf(stderr, "%d small files: %" PRIu64 " leaves (%" PRIu64
		" KiB of metadata, %" PRIu64 " bytes a file)\n", N, leaves,
		leaves * 16, (uint64_t)(leaves * 16 * KiB / N));
	/* 32 inodes a leaf when the backing numbers are consecutive; the
	 * bound allows other users of the backing file system to take
	 * numbers in between. */
	ck_assert_uint_le(leaves, N / 8);
	ck_assert_uint_ge(leaves, N / 32);
	ck_assert_uint_eq(snap(t.fs, "meta.used"),
			  snap(t.fs, "engine.leaves") * 16 * KiB);
	for (int i = 0; i < N; i += 2) {
		snprintf(path, sizeof(path), "/s/f%d", i);
		ck_assert_int_eq(sfs_unlink(t.fs, path), 0);
	}
	ck_assert_int_eq(sfs_check(t.fs, stderr), 0);
	half = snap(t.fs, "engine.leaves") - leaves0;
	/* A leaf goes only with its last inode: most keep odd files. */
	ck_assert_uint_le(half, leaves);
	ck_assert_uint_ge(half, leaves / 2);
	ck_assert_uint_eq(snap(t.fs, "engine.inodes"), inodes0 + N / 2 + 1);
	do_unmount(&t);
	do_mount(&t);
	ck_assert_uint_eq(snap(t.fs, "engine.leaves") - leaves0, half);
	ck_assert_uint_eq(snap(t.fs, "engine.inodes"), inodes0 + N / 2 + 1);
	for (int i = 1; i < N; i += 2) {
		snprintf(path, sizeof(path), "/s/f%d", i);
		ck_assert_int_eq(sfs_unlink(t.fs, path), 0);
	}
	ck_assert_int_eq(sfs_rmdir(t.fs, "/s"), 0);
	ck_assert_int_eq(sfs_check(t.fs, stderr), 0);
	ck_assert_uint_eq(snap(t.fs, "engine.leaves"), leaves0);
	ck_assert_uint_eq(snap(t.fs, "engine.inodes"), inodes0);
	ck_assert_uint_eq(snap(t.fs, "meta.used"), leaves0 * 16 * KiB);
	teardown(&t);
}
END_TEST

/* ---- fallocate ---- */

static uint64_t df_avail(struct sfs *fs)
{
	struct statvfs st;

	ck_assert_int_eq(sfs_statfs(fs, &st), 0);
	return (uint64_t)st.f_bavail * st.f_frsize;
}

static uint64_t backing_blocks(struct tmpfs *t, const char *rel)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", t->dir, rel);
	ck_assert_int_eq(stat(path, &st), 0);
	return (uint64_t)st.st_blocks * 512;
}

/*
 * Mode 0 and KEEP_SIZE: the range is counted as used at once (df, pools,
 * st_blocks), a write into it on a full file system succeeds (written in
 * place: no data reserved, no copy on write), and the remount scan counts
 * the preallocated blocks, past EOF too, exactly.
 */
START_TEST(test_fallocate_then_write)
{
	struct tmpfs t;
	struct sfs_file *f, *g, *k;
	static char buf[64 * KiB], back[64 * KiB];
	uint64_t used0, avail0, off = 0, used_full;
	struct stat st;
	ssize_t n;

	setup(&t, 64 * MiB, 4 * MiB, 4 * MiB);
	do_mount(&t);
	used0 = snap(t.fs, "data.used");
	avail0 = df_avail(t.fs);
	f = create(t.fs, "/pre");
	ck_assert_int_eq(sfs_fallocate(t.fs, f, 0, 0, 16 * MiB), 0);
	ck_assert_uint_eq(snap(t.fs, "data.used"), used0 + 16 * MiB);
	ck_assert_uint_eq(snap(t.fs, "data.may_use"), 0);
	ck_assert_uint_eq(df_avail(t.fs), avail0 - 16 * MiB);
	ck_assert_int_eq(sfs_fgetattr(t.fs, f, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, 16 * MiB);
	ck_assert_uint_eq((uint64_t)st.st_blocks * 512, 16 * MiB);
	/* Again over the same range: nothing more is used. */
	ck_assert_int_eq(sfs_fallocate(t.fs, f, 0, 4096, 8 * MiB), 0);
	ck_assert_uint_eq(snap(t.fs, "data.used"), used0 + 16 * MiB);
	/* KEEP_SIZE past EOF of another file. */
	k = create(t.fs, "/keep");
	ck_assert_int_eq(sfs_fallocate(t.fs, k, FALLOC_FL_KEEP_SIZE, 0,
				       1 * MiB + 1), 0);
	ck_assert_uint_eq(snap(t.fs, "data.used"),
			  used0 + 17 * MiB + 4096);
	ck_assert_int_eq(sfs_fgetattr(t.fs, k, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, 0);
	sfs_release(t.fs, k);

	/* Fill everything else. */
	g = create(t.fs, "/fill");
	while ((n = sfs_write(t.fs, g, buf, sizeof(buf), (off_t)off, false)) > 0)
		off += (uint64_t)n;
	ck_assert_int_eq(n, -ENOSPC);
	sfs_release(t.fs, g);
	ck_assert_int_eq(sfs_sync(t.fs), 0);
	used_full = snap(t.fs, "data.used");
	/* Every byte of the preallocated range can be written now. */
	for (uint64_t o = 0; o < 16 * MiB; o += sizeof(buf)) {
		fill_pattern(buf, sizeof(buf), (unsigned)(o >> 16));
		ck_assert_int_eq(sfs_write(t.fs, f, buf, sizeof(buf), (off_t)o,
					   false), sizeof(buf));
	}
	/* A block that was written once is copied on write again: that
	 * write needs data space, which a full file system does not have. */
	ck_assert_int_eq(sfs_sync(t.fs), 0);
	ck_assert_uint_eq(snap(t.fs, "data.used"), used_full);
	ck_assert_uint_eq(snap(t.fs, "data.pinned"), 0);
	ck_assert_int_eq(sfs_check(t.fs, stderr), 0);
	sfs_release(t.fs, f);
	do_unmount(&t);

	do_mount(&t);
	ck_assert_uint_eq(snap(t.fs, "data.used"), used_full);
	ck_assert_int_eq(sfs_open(t.fs, "/pre", O_RDWR, &f), 0);
	for (uint64_t o = 0; o < 16 * MiB; o += sizeof(buf)) {
		fill_pattern(buf, sizeof(buf), (unsigned)(o >> 16));
		ck_assert_int_eq(sfs_read(t.fs, f, back, sizeof(back), (off_t)o),
				 sizeof(back));
		ck_assert_mem_eq(buf, back, sizeof(buf));
	}
	sfs_release(t.fs, f);
	/* The blocks past EOF are still the file's, and still
	 * preallocated: written into after the remount, in place. */
	ck_assert_int_eq(sfs_open(t.fs, "/keep", O_RDWR, &k), 0);
	ck_assert_int_eq(sfs_write(t.fs, k, buf, sizeof(buf), 0, false),
			 sizeof(buf));
	sfs_release(t.fs, k);
	ck_assert_int_eq(sfs_sync(t.fs), 0);
	ck_assert_uint_eq(snap(t.fs, "data.used"), used_full);
	ck_assert_uint_eq(backing_blocks(&t, "keep"), 1 * MiB + 4096);
	teardown(&t);
}
END_TEST

/* More than df shows: ENOSPC, and nothing changed.  What df shows, less
 * the metadata it costs: granted. */
START_TEST(test_fallocate_enospc)
{
	struct tmpfs t;
	struct sfs_file *f;
	uint64_t avail0, used0, may0, mmay0;
	struct stat st;

	setup(&t, 64 * MiB, 4 * MiB, 4 * MiB);
	do_mount(&t);
	f = create(t.fs, "/big");
	avail0 = df_avail(t.fs);
	used0 = snap(t.fs, "data.used");
	may0 = snap(t.fs, "data.may_use");
	mmay0 = snap(t.fs, "meta.may_use");
	ck_assert_int_eq(sfs_fallocate(t.fs, f, 0, 0, (off_t)(avail0 + 4096)),
			 -ENOSPC);
	ck_assert_int_eq(sfs_fallocate(t.fs, f, FALLOC_FL_KEEP_SIZE, 0,
				       64 * MiB), -ENOSPC);
	ck_assert_uint_eq(df_avail(t.fs), avail0);
	ck_assert_uint_eq(snap(t.fs, "data.used"), used0);
	ck_assert_uint_eq(snap(t.fs, "data.may_use"), may0);
	ck_assert_uint_eq(snap(t.fs, "meta.may_use"), mmay0);
	ck_assert_int_eq(sfs_fgetattr(t.fs, f, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, 0);
	ck_assert_uint_eq(backing_blocks(&t, "big"), 0);
	/* Bad input: nothing changes either. */
	ck_assert_int_eq(sfs_fallocate(t.fs, f, FALLOC_FL_ZERO_RANGE, 0, 4096),
			 -EOPNOTSUPP);
	ck_assert_int_eq(sfs_fallocate(t.fs, f, FALLOC_FL_PUNCH_HOLE, 0, 4096),
			 -EOPNOTSUPP);
	ck_assert_int_eq(sfs_fallocate(t.fs, f, FALLOC_FL_COLLAPSE_RANGE, 0,
				       4096), -EOPNOTSUPP);
	ck_assert_int_eq(sfs_fallocate(t.fs, f, 0, 0, 0), -EINVAL);
	ck_assert_int_eq(sfs_fallocate(t.fs, f, 0, -1, 4096), -EINVAL);
	ck_assert_int_eq(sfs_fallocate(t.fs, f, 0, INT64_MAX - 10, 4096),
			 -EFBIG);
	ck_assert_uint_eq(snap(t.fs, "data.used"), used0);
	/* What df promised (less a metadata chunk it may take). */
	ck_assert_int_eq(sfs_fallocate(t.fs, f, 0, 0,
				       (off_t)(avail0 - 4 * MiB)), 0);
	ck_assert_uint_eq(snap(t.fs, "data.used"), used0 + avail0 - 4 * MiB);
	ck_assert_uint_eq(snap(t.fs, "data.may_use"), 0);
	sfs_release(t.fs, f);
	teardown(&t);
}
END_TEST

/* The tenant's quota: EDQUOT before anything changed; within the quota the
 * range is charged, and writes into it are not charged again. */
START_TEST(test_fallocate_edquot)
{
	struct tmpfs t;
	struct sfs_file *f;
	static char buf[64 * KiB];
	uint64_t used0;

	setup(&t, 64 * MiB, 4 * MiB, 4 * MiB);
	t.cfg.nr_tenants = 1;
	strcpy(t.cfg.tenants[0].name, "t");
	t.cfg.tenants[0].limit = 4 * MiB;
	do_mount(&t);
	f = create(t.fs, "/t/f");
	used0 = snap(t.fs, "data.used");
	ck_assert_int_eq(sfs_fallocate(t.fs, f, 0, 0, 8 * MiB), -EDQUOT);
	ck_assert_uint_eq(snap(t.fs, "data.used"), used0);
	ck_assert_uint_eq(snap(t.fs, "data.may_use"), 0);
	ck_assert_uint_eq(backing_blocks(&t, "t/f"), 0);
	ck_assert_int_eq(sfs_fallocate(t.fs, f, 0, 0, 3 * MiB), 0);
	ck_assert_uint_eq(snap(t.fs, "data.used"), used0 + 3 * MiB);
	/* The rest of the quota is not enough for another 3 MiB. */
	ck_assert_int_eq(sfs_fallocate(t.fs, f, 0, 3 * MiB, 3 * MiB), -EDQUOT);
	/* Writing the preallocated 3 MiB costs no quota. */
	for (uint64_t o = 0; o < 3 * MiB; o += sizeof(buf))
		ck_assert_int_eq(sfs_write(t.fs, f, buf, sizeof(buf), (off_t)o,
					   false), sizeof(buf));
	ck_assert_int_eq(sfs_sync(t.fs), 0);
	ck_assert_uint_eq(snap(t.fs, "data.used"), used0 + 3 * MiB);
	sfs_release(t.fs, f);
	ck_assert_int_eq(sfs_check(t.fs, stderr), 0);
	do_unmount(&t);
	do_mount(&t);
	ck_assert_uint_eq(snap(t.fs, "data.used"), used0 + 3 * MiB);
	teardown(&t);
}
END_TEST

/* Punch: written blocks are pinned and come back at the commit; dirty
 * pages in the hole are dropped with their reservations; partial pages at
 * the edges are zeroed; the remount agrees. */
START_TEST(test_punch_hole)
{
	struct tmpfs t;
	struct sfs_file *f;
	static char buf[1 * MiB], back[1 * MiB], zero[1 * MiB];
	uint64_t used0, used1, avail1;

	setup(&t, 64 * MiB, 4 * MiB, 16 * MiB);
	do_mount(&t);
	used0 = snap(t.fs, "data.used");
	f = create(t.fs, "/p");
	for (unsigned i = 0; i < 8; i++) {
		fill_pattern(buf, sizeof(buf), i);
		ck_assert_int_eq(sfs_write(t.fs, f, buf, sizeof(buf),
					   (off_t)(i * MiB), false), sizeof(buf));
	}
	ck_assert_int_eq(sfs_sync(t.fs), 0);
	ck_assert_uint_eq(snap(t.fs, "data.used"), used0 + 8 * MiB);
	avail1 = df_avail(t.fs);
	/* From 100 bytes before 2 MiB to 100 bytes after 4 MiB: the 512
	 * pages fully inside go, the two partial ones are zeroed in part. */
	ck_assert_int_eq(sfs_fallocate(t.fs, f,
				       FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				       2 * MiB - 100, 2 * MiB + 200), 0);
	ck_assert_uint_eq(snap(t.fs, "data.pinned"), 2 * MiB);
	ck_assert_uint_eq(snap(t.fs, "data.used"), used0 + 6 * MiB);
	ck_assert_int_eq(sfs_sync(t.fs), 0);
	ck_assert_uint_eq(snap(t.fs, "data.pinned"), 0);
	ck_assert_uint_eq(df_avail(t.fs), avail1 + 2 * MiB);
	/* Dirty pages in a hole: dropped, reservation given back. */
	fill_pattern(buf, sizeof(buf), 99);
	ck_assert_int_eq(sfs_write(t.fs, f, buf, sizeof(buf), 8 * MiB, false),
			 sizeof(buf));
	ck_assert_uint_gt(snap(t.fs, "data.may_use"), 0);
	ck_assert_int_eq(sfs_fallocate(t.fs, f,
				       FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				       8 * MiB, 1 * MiB), 0);
	ck_assert_uint_eq(snap(t.fs, "data.may_use"), 0);
	ck_assert_uint_eq(snap(t.fs, "dirty_bytes"), 0);
	ck_assert_int_eq(sfs_read(t.fs, f, back, sizeof(back), 8 * MiB),
			 sizeof(back));
	ck_assert_mem_eq(back, zero, sizeof(back));
	/* The hole reads as zeros, its edges keep their data. */
	fill_pattern(buf, sizeof(buf), 1);
	ck_assert_int_eq(sfs_read(t.fs, f, back, sizeof(back), 1 * MiB),
			 sizeof(back));
	ck_assert_mem_eq(back, buf, sizeof(buf) - 100);
	ck_assert_mem_eq(back + sizeof(buf) - 100, zero, 100);
	ck_assert_int_eq(sfs_read(t.fs, f, back, sizeof(back), 2 * MiB),
			 sizeof(back));
	ck_assert_mem_eq(back, zero, sizeof(back));
	fill_pattern(buf, sizeof(buf), 4);
	ck_assert_int_eq(sfs_read(t.fs, f, back, sizeof(back), 4 * MiB),
			 sizeof(back));
	ck_assert_mem_eq(back, zero, 100);
	ck_assert_mem_eq(back + 100, buf + 100, sizeof(buf) - 100);
	/* Punch preallocated blocks too. */
	ck_assert_int_eq(sfs_fallocate(t.fs, f, 0, 10 * MiB, 2 * MiB), 0);
	ck_assert_int_eq(sfs_fallocate(t.fs, f,
				       FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				       10 * MiB, 1 * MiB), 0);
	ck_assert_int_eq(sfs_sync(t.fs), 0);
	ck_assert_uint_eq(snap(t.fs, "data.used"), used0 + 7 * MiB);
	/* Past EOF the backing file system decides (ext4 punches nothing
	 * beyond i_size, xfs does): spacefs counts what it freed. */
	ck_assert_int_eq(sfs_fallocate(t.fs, f, FALLOC_FL_KEEP_SIZE, 12 * MiB,
				       1 * MiB), 0);
	ck_assert_int_eq(sfs_fallocate(t.fs, f,
				       FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				       12 * MiB, 1 * MiB), 0);
	ck_assert_int_eq(sfs_sync(t.fs), 0);
	used1 = snap(t.fs, "data.used");
	ck_assert_uint_ge(used1, used0 + 7 * MiB);
	ck_assert_uint_le(used1, used0 + 8 * MiB);
	ck_assert_int_eq(sfs_check(t.fs, stderr), 0);
	/* A truncate to the same size frees blocks past EOF on ext4. */
	ck_assert_int_eq(sfs_fallocate(t.fs, f, FALLOC_FL_KEEP_SIZE, 14 * MiB,
				       1 * MiB), 0);
	ck_assert_uint_eq(snap(t.fs, "data.used"), used1 + 1 * MiB);
	ck_assert_int_eq(sfs_ftruncate(t.fs, f, 12 * MiB), 0);
	ck_assert_int_eq(sfs_sync(t.fs), 0);
	used1 = snap(t.fs, "data.used");
	ck_assert_uint_ge(used1, used0 + 7 * MiB);
	ck_assert_int_eq(sfs_check(t.fs, stderr), 0);
	sfs_release(t.fs, f);
	do_unmount(&t);
	do_mount(&t);
	ck_assert_uint_eq(snap(t.fs, "data.used"), used1);
	ck_assert_int_eq(sfs_unlink(t.fs, "/p"), 0);
	ck_assert_int_eq(sfs_sync(t.fs), 0);
	ck_assert_uint_eq(snap(t.fs, "data.used"), used0);
	teardown(&t);
}
END_TEST

/*
 * O_TRUNC: libfuse turns on FUSE_CAP_ATOMIC_O_TRUNC, so the kernel passes
 * O_TRUNC with the open flags and truncates nothing itself.  `seq 1 5 > f;
 * echo x > f` used to leave "x\n2\n3\n4\n5\n".  With the old bytes dirty
 * and written back, through sfs_open() and sfs_create() on an existing
 * file: the file holds only what was written after the open, after a
 * remount too, and the old block is pinned as any truncate's.
 */
START_TEST(test_open_trunc)
{
	struct tmpfs t;
	struct sfs_file *f;
	char buf[64];
	struct stat st;

	setup(&t, 64 * MiB, 4 * MiB, 1 * MiB);
	do_mount(&t);
	for (int round = 0; round < 4; round++) {
		bool synced = round & 1, via_create = round & 2;

		f = create(t.fs, "/f");
		ck_assert_int_eq(sfs_write(t.fs, f, "1\n2\n3\n4\n5\n", 10, 0,
					   false), 10);
		sfs_release(t.fs, f);
		if (synced)
			ck_assert_int_eq(sfs_sync(t.fs), 0);
		ck_assert_uint_eq(snap(t.fs, "data.pinned"), 0);
		if (via_create)
			ck_assert_int_eq(sfs_create(t.fs, "/f", 0644,
						    O_WRONLY | O_TRUNC, &f), 0);
		else
			ck_assert_int_eq(sfs_open(t.fs, "/f",
						  O_WRONLY | O_TRUNC, &f), 0);
		ck_assert_int_eq(sfs_fgetattr(t.fs, f, &st), 0);
		ck_assert_int_eq(st.st_size, 0);
		/* Dirty or not, the old bytes had a block (a truncate
		 * writes the file back first): pinned until the commit. */
		ck_assert_uint_eq(snap(t.fs, "data.pinned"), 4096);
		ck_assert_uint_eq(snap(t.fs, "dirty_bytes"), 0);
		ck_assert_int_eq(sfs_write(t.fs, f, "x\n", 2, 0, false), 2);
		sfs_release(t.fs, f);
		ck_assert_int_eq(sfs_open(t.fs, "/f", O_RDONLY, &f), 0);
		memset(buf, 0, sizeof(buf));
		ck_assert_int_eq(sfs_read(t.fs, f, buf, sizeof(buf), 0), 2);
		ck_assert_str_eq(buf, "x\n");
		sfs_release(t.fs, f);
		ck_assert_int_eq(sfs_check(t.fs, stderr), 0);
		if (round < 3) {
			ck_assert_int_eq(sfs_unlink(t.fs, "/f"), 0);
			ck_assert_int_eq(sfs_sync(t.fs), 0);	/* unpin */
		}
	}
	do_unmount(&t);
	do_mount(&t);
	ck_assert_int_eq(sfs_getattr(t.fs, "/f", &st), 0);
	ck_assert_int_eq(st.st_size, 2);
	ck_assert_uint_eq(snap(t.fs, "data.used"), 4096);
	teardown(&t);
}
END_TEST

/*
 * The largest file is the backing file system's (max_file_bytes, probed
 * at mount): a write that starts past it is EFBIG and one across it is
 * short, as the kernel's generic_write_check_limits(); truncates and
 * fallocates past it are EFBIG, before anything changes.  Such a write
 * used to be accepted into the cache and fail at writeback (EIO, the data
 * lost).  The allocation map follows the pages, not the offsets: a byte at
 * 4 TiB and one below the limit take one map block each (the dense
 * bitmaps took 64 MiB per TiB of offset), and a fallocate of a terabyte on
 * a 64 MiB file system is ENOSPC without touching the map.
 */
START_TEST(test_huge_offsets)
{
	struct tmpfs t;
	struct sfs_file *f;
	uint64_t max, blocks0, used0;
	char buf[8];
	struct stat st;

	setup(&t, 64 * MiB, 4 * MiB, 1 * MiB);
	do_mount(&t);
	max = snap(t.fs, "max_file_bytes");
	/* ext4 with 4 KiB blocks 16 TiB - 4 KiB; xfs, btrfs, tmpfs more. */
	ck_assert_uint_ge(max, (1ull << 44) - 4096);
	ck_assert_uint_eq(max % 4096, 0);
	f = create(t.fs, "/sparse");
	blocks0 = snap(t.fs, "engine.map_blocks");
	used0 = snap(t.fs, "data.used");
	ck_assert_int_eq(sfs_write(t.fs, f, "a", 1, (off_t)(4ull << 40), false),
			 1);
	ck_assert_int_eq(sfs_write(t.fs, f, "bc", 2, (off_t)(max - 2), false),
			 2);
	/* Across the limit: short; at it and far past it: EFBIG. */
	ck_assert_int_eq(sfs_write(t.fs, f, "de", 2, (off_t)(max - 1), false),
			 1);
	ck_assert_int_eq(sfs_write(t.fs, f, "f", 1, (off_t)max, false), -EFBIG);
	ck_assert_int_eq(sfs_write(t.fs, f, "g", 1, INT64_MAX - 1, false),
			 -EFBIG);
	ck_assert_int_eq(sfs_sync(t.fs), 0);
	ck_assert_uint_eq(snap(t.fs, "writeback_errors"), 0);
	ck_assert_uint_eq(snap(t.fs, "data.used"), used0 + 2 * 4096);
	ck_assert_uint_le(snap(t.fs, "engine.map_blocks"), blocks0 + 2);
	ck_assert_int_eq(sfs_fgetattr(t.fs, f, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, max);
	ck_assert_int_eq(sfs_read(t.fs, f, buf, 1, (off_t)(4ull << 40)), 1);
	ck_assert_int_eq(buf[0], 'a');
	ck_assert_int_eq(sfs_read(t.fs, f, buf, 8, (off_t)(max - 2)), 2);
	ck_assert_int_eq(memcmp(buf, "bd", 2), 0);

	ck_assert_int_eq(sfs_ftruncate(t.fs, f, (off_t)max + 1), -EFBIG);
	ck_assert_int_eq(sfs_truncate(t.fs, "/sparse", INT64_MAX), -EFBIG);
	ck_assert_int_eq(sfs_fallocate(t.fs, f, 0, (off_t)(max - 4096), 8192),
			 -EFBIG);
	ck_assert_int_eq(sfs_fallocate(t.fs, f, FALLOC_FL_KEEP_SIZE,
				       (off_t)(max / 2), (off_t)(1ull << 40)),
			 -ENOSPC);
	ck_assert_uint_le(snap(t.fs, "engine.map_blocks"), blocks0 + 2);
	ck_assert_uint_eq(snap(t.fs, "data.may_use"), 0);
	ck_assert_int_eq(sfs_fgetattr(t.fs, f, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, max);

	/* Down to a page: the blocks go, and so does their map. */
	ck_assert_int_eq(sfs_ftruncate(t.fs, f, 4096), 0);
	ck_assert_uint_eq(snap(t.fs, "engine.map_blocks"), blocks0);
	ck_assert_int_eq(sfs_check(t.fs, stderr), 0);
	ck_assert_uint_eq(snap(t.fs, "data.used"), used0);
	sfs_release(t.fs, f);
	do_unmount(&t);
	do_mount(&t);
	ck_assert_int_eq(sfs_getattr(t.fs, "/sparse", &st), 0);
	ck_assert_int_eq(st.st_size, 4096);
	teardown(&t);
}
END_TEST

/*
 * renameat2(RENAME_WHITEOUT) (overlayfs's) leaves a whiteout, a character
 * device 0:0, at the old name: a new inode, which must be accounted as
 * mknod's or deleting it frees a leaf nobody allocated (the unmount check
 * then found "metadata used 16384, expected 0").  Making a whiteout needs
 * CAP_MKNOD: without it the rename fails and nothing changes.
 */
START_TEST(test_rename_whiteout)
{
	struct tmpfs t;
	struct sfs_file *f;
	uint64_t inodes0;
	struct stat st;
	int ret;

	setup(&t, 64 * MiB, 4 * MiB, 1 * MiB);
	do_mount(&t);
	f = create(t.fs, "/a");
	ck_assert_int_eq(sfs_write(t.fs, f, "data", 4, 0, false), 4);
	sfs_release(t.fs, f);
	ck_assert_int_eq(sfs_check(t.fs, stderr), 0);
	inodes0 = snap(t.fs, "engine.inodes");
	ret = sfs_rename(t.fs, "/a", "/b", RENAME_WHITEOUT);
	if (ret == -EPERM) {
		fprintf(stderr, "test_rename_whiteout: no CAP_MKNOD, no "
			"whiteout: the refusal only\n");
		ck_assert_int_eq(sfs_check(t.fs, stderr), 0);
		ck_assert_uint_eq(snap(t.fs, "engine.inodes"), inodes0);
		teardown(&t);
		return;
	}
	ck_assert_int_eq(ret, 0);
	ck_assert_int_eq(sfs_getattr(t.fs, "/a", &st), 0);
	ck_assert(S_ISCHR(st.st_mode) && st.st_rdev == 0);
	ck_assert_int_eq(sfs_getattr(t.fs, "/b", &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_int_eq(sfs_check(t.fs, stderr), 0);
	ck_assert_uint_eq(snap(t.fs, "engine.inodes"), inodes0 + 1);
	ck_assert_uint_eq(snap(t.fs, "meta.used"),
			  snap(t.fs, "engine.leaves") * 16 * KiB);
	ck_assert_int_eq(sfs_unlink(t.fs, "/a"), 0);
	ck_assert_int_eq(sfs_unlink(t.fs, "/b"), 0);
	ck_assert_int_eq(sfs_check(t.fs, stderr), 0);
	ck_assert_uint_eq(snap(t.fs, "engine.inodes"), inodes0 - 1);
	ck_assert_uint_eq(snap(t.fs, "data.used"), 0);
	teardown(&t);
}
END_TEST

static int64_t ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* The backing file's stat (what a remount starts from). */
static void backing_stat(struct tmpfs *t, const char *rel, struct stat *st)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", t->dir, rel);
	ck_assert_int_eq(stat(path, st), 0);
}

/*
 * Timestamps (fstests generic/003, 080, 215, 313, 423): a write moves mtime
 * and ctime as soon as anyone looks (ctime used to wait for the
 * writeback), and mtime is the write's time, not after ctime; once seen,
 * neither moves again at a sync or across a remount (getattr writes the
 * file back first); a chmod moves ctime only; a truncate moves both (it
 * used to keep the last write's mtime); times set explicitly over dirty
 * pages survive their writeback and a remount.  The pauses are far above
 * the kernel's timestamp granularity (a jiffy).
 */
START_TEST(test_times)
{
	struct tmpfs t;
	struct sfs_file *f;
	struct stat st0, st1, st2, st3, st4, bst;
	const struct timespec set[2] = { { 1000000000, 5 }, { 1000000000, 7 } };

	setup(&t, 64 * MiB, 4 * MiB, 1 * MiB);
	do_mount(&t);
	f = create(t.fs, "/t");
	ck_assert_int_eq(sfs_write(t.fs, f, "0123456789", 10, 0, false), 10);
	ck_assert_int_eq(sfs_sync(t.fs), 0);
	ck_assert_int_eq(sfs_getattr(t.fs, "/t", &st0), 0);
	pause_ms(50);
	ck_assert_int_eq(sfs_write(t.fs, f, "x", 1, 0, false), 1);
	ck_assert_int_eq(sfs_getattr(t.fs, "/t", &st1), 0);
	ck_assert_int_gt(ts_ns(&st1.st_mtim), ts_ns(&st0.st_mtim));
	ck_assert_int_gt(ts_ns(&st1.st_ctim), ts_ns(&st0.st_ctim));
	ck_assert_int_le(ts_ns(&st1.st_mtim), ts_ns(&st1.st_ctim));
	pause_ms(50);
	ck_assert_int_eq(sfs_sync(t.fs), 0);
	ck_assert_int_eq(sfs_fgetattr(t.fs, f, &st2), 0);
	ck_assert_int_eq(ts_ns(&st2.st_mtim), ts_ns(&st1.st_mtim));
	ck_assert_int_eq(ts_ns(&st2.st_ctim), ts_ns(&st1.st_ctim));
	backing_stat(&t, "t", &bst);
	ck_assert_int_eq(ts_ns(&bst.st_mtim), ts_ns(&st1.st_mtim));
	ck_assert_int_eq(ts_ns(&bst.st_ctim), ts_ns(&st1.st_ctim));
	pause_ms(50);
	ck_assert_int_eq(sfs_chmod(t.fs, "/t", 0600), 0);
	ck_assert_int_eq(sfs_getattr(t.fs, "/t", &st3), 0);
	ck_assert_int_eq(ts_ns(&st3.st_mtim), ts_ns(&st2.st_mtim));
	ck_assert_int_gt(ts_ns(&st3.st_ctim), ts_ns(&st2.st_ctim));
	pause_ms(50);
	ck_assert_int_eq(sfs_truncate(t.fs, "/t", 4), 0);
	ck_assert_int_eq(sfs_getattr(t.fs, "/t", &st4), 0);
	ck_assert_int_gt(ts_ns(&st4.st_mtim), ts_ns(&st3.st_mtim));
	ck_assert_int_gt(ts_ns(&st4.st_ctim), ts_ns(&st3.st_ctim));
	ck_assert_int_eq(st4.st_size, 4);

	/* Explicit times over a dirty page. */
	ck_assert_int_eq(sfs_write(t.fs, f, "y", 1, 0, false), 1);
	ck_assert_int_eq(sfs_utimens(t.fs, "/t", set), 0);
	ck_assert_int_eq(sfs_sync(t.fs), 0);
	ck_assert_int_eq(sfs_getattr(t.fs, "/t", &st1), 0);
	ck_assert_int_eq(ts_ns(&st1.st_mtim), ts_ns(&set[1]));
	backing_stat(&t, "t", &bst);
	ck_assert_int_eq(ts_ns(&bst.st_mtim), ts_ns(&set[1]));
	/* A write seen before the unmount keeps its times after it. */
	pause_ms(50);
	ck_assert_int_eq(sfs_write(t.fs, f, "z", 1, 0, false), 1);
	ck_assert_int_eq(sfs_getattr(t.fs, "/t", &st2), 0);
	ck_assert_int_gt(ts_ns(&st2.st_ctim), ts_ns(&st1.st_ctim));
	sfs_release(t.fs, f);
	do_unmount(&t);
	do_mount(&t);
	ck_assert_int_eq(sfs_getattr(t.fs, "/t", &st3), 0);
	ck_assert_int_eq(ts_ns(&st3.st_mtim), ts_ns(&st2.st_mtim));
	ck_assert_int_eq(ts_ns(&st3.st_ctim), ts_ns(&st2.st_ctim));
	teardown(&t);
}
END_TEST

struct fd_worker {
	struct sfs *fs;
	int id;
	unsigned failed;
};

static void *fd_worker_main(void *arg)
{
	struct fd_worker *w = arg;
	char path[64], buf[64];

	for (int i = 0; i < 300; i++) {
		struct sfs_file *f;
		int len = snprintf(buf, sizeof(buf), "worker %d file %d",
				   w->id, i);
		int dfd;

		snprintf(path, sizeof(path), "/w%d.%d", w->id, i);
		if (sfs_create(w->fs, path, 0644, O_RDWR, &f)) {
			w->failed++;
			continue;
		}
		if (sfs_write(w->fs, f, buf, (size_t)len, 0, false) != len)
			w->failed++;
		sfs_release(w->fs, f);
		if (i % 16)
			continue;
		/* readdir's descriptors come from the same budget. */
		dfd = sfs_opendir(w->fs, "/");
		if (dfd < 0)
			w->failed++;
		else
			close(dfd);
	}
	return NULL;
}

/* In a child with RLIMIT_NOFILE at @limit: 4 threads create, write and
 * close 300 files each; returns the failed operations, 100 + n if the
 * check at unmount failed, 200 + errno if setting up failed. */
static int fd_limit_child(struct tmpfs *t, rlim_t limit)
{
	struct rlimit rl = { limit, limit };
	struct fd_worker w[4];
	pthread_t th[4];
	unsigned failed = 0;

	if (setrlimit(RLIMIT_NOFILE, &rl))
		return 200 + errno;
	if (sfs_mount(&t->cfg, &t->fs))
		return 201;
	for (int i = 0; i < 4; i++) {
		w[i] = (struct fd_worker){ t->fs, i, 0 };
		if (pthread_create(&th[i], NULL, fd_worker_main, &w[i]))
			return 202;
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		failed += w[i].failed;
	}
	if (sfs_unmount(t->fs, stderr))
		return 100;
	return failed > 99 ? 99 : (int)failed;
}

/*
 * Out of descriptors (fstests generic/273's copiers): under a 96-descriptor
 * limit (a budget of 64 backing fds), four threads make 1,200 files.  An
 * open that fails with EMFILE waits for the reclaim in flight and retries;
 * only try-locking it used to return EMFILE to the caller while another
 * thread was committing.  No operation may fail; the accounting holds.
 */
START_TEST(test_fd_limit_threads)
{
	struct tmpfs t;
	struct sfs_file *f;
	char buf[64] = { 0 };
	int status;
	pid_t pid;

	setup(&t, 128 * MiB, 8 * MiB, 4 * MiB);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(fd_limit_child(&t, 96));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_msg(WEXITSTATUS(status) == 0, "child: %d (failed operations, "
		      "100: check at unmount, 200+: setup)", WEXITSTATUS(status));
	do_mount(&t);
	ck_assert_int_eq(sfs_open(t.fs, "/w3.299", O_RDONLY, &f), 0);
	ck_assert_int_gt(sfs_read(t.fs, f, buf, sizeof(buf) - 1, 0), 0);
	ck_assert_str_eq(buf, "worker 3 file 299");
	sfs_release(t.fs, f);
	teardown(&t);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("spacefs-engine");
	TCase *tc = tcase_create("engine");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_roundtrip);
	tcase_add_test(tc, test_nowait_cache_full);
	tcase_add_test(tc, test_nowait_enospc);
	tcase_add_test(tc, test_nowait_edquot);
	tcase_add_test(tc, test_space_comes_back);
	tcase_add_test(tc, test_underused_chunks_relocated);
	tcase_add_test(tc, test_cow_pins);
	tcase_add_test(tc, test_namespace_items);
	tcase_add_test(tc, test_small_files_share_leaves);
	tcase_add_test(tc, test_fd_budget);
	tcase_add_test(tc, test_pace_bad);
	tcase_add_test(tc, test_fallocate_then_write);
	tcase_add_test(tc, test_fallocate_enospc);
	tcase_add_test(tc, test_fallocate_edquot);
	tcase_add_test(tc, test_punch_hole);
	tcase_add_test(tc, test_open_trunc);
	tcase_add_test(tc, test_huge_offsets);
	tcase_add_test(tc, test_rename_whiteout);
	tcase_add_test(tc, test_times);
	tcase_add_test(tc, test_fd_limit_threads);
	/* Without and with preemptive flushing, then with pacing. */
	tcase_add_loop_test(tc, test_concurrent_writers, 0, 3);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
