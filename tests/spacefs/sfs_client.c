/* SPDX-License-Identifier: MIT */
/*
 * sfs_client: the spacefs tests' own client (run-spacefs.sh).
 *
 *   sfs_client write  DIR FILES THREADS SIZE BLOCK PASSES SEED MANIFEST
 *   sfs_client verify DIR FILES SIZE BLOCK PASSES SEED MANIFEST
 *   sfs_client fill   FILE BS [MAX]
 *   sfs_client nowait FILE OFFSET LEN
 *   sfs_client usage  DIR
 *   sfs_client rename FROM TO
 *   sfs_client dio-cycle FILE SIZE SECONDS
 *
 * write: THREADS threads write FILES files of SIZE bytes in blocks of BLOCK
 * bytes (not a multiple of the page size on purpose: neighbouring blocks,
 * written by different threads, share pages), in random order, PASSES times
 * over (each pass a new version of every block).  A block is owned by one
 * thread, so its final content is known: a header (file, block, version)
 * and a pseudo-random stream of (SEED, file, block, version).  The CRC-32C
 * of every final block goes to MANIFEST.
 *
 * verify: reads every block back and checks it against the regenerated
 * content and against the CRC-32C in MANIFEST.
 *
 * fill: writes FILE sequentially in BS-byte writes until a write fails (or
 * MAX bytes were written); prints "written=N errno=NAME".  Exit 0.
 *
 * nowait: one write of LEN bytes at OFFSET on a descriptor opened with
 * O_NONBLOCK, first with pwritev2(RWF_NOWAIT) then, if the kernel refuses
 * that flag, with pwritev2(0); prints "rwf_nowait=supported|EOPNOTSUPP
 * result=N|errno=NAME".
 *
 * usage: what a backing tree holds, the way the tests compare it with the
 * pools: "data=BYTES inodes=N leaves=L", where BYTES counts the 4 KiB pages of
 * regular files that have blocks (FIEMAP: preallocated ones and those past
 * EOF included; SEEK_DATA / SEEK_HOLE without it) and N the distinct
 * inodes, the root included.
 *
 * rename: rename(2) (no copying fallback, unlike mv); prints "errno=NAME".
 *
 * dio-cycle: what fstests generic/451 does, without fstests: for SECONDS,
 * two threads read FILE through the page cache (open, pread SIZE, close)
 * while the main thread writes SIZE bytes of a new pattern at offset 0
 * with an asynchronous O_DIRECT write (io_submit), waits for it, and reads
 * the file back through a new buffered descriptor.  Prints "cycles=N
 * stale=M": M reads that returned a page the write had replaced.  Exit 0.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <ftw.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <linux/aio_abi.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

struct model {
	const char *dir;
	unsigned files, threads, passes;
	uint64_t size, block, seed, nblocks;
	int *fds;
};

struct worker {
	struct model *m;
	unsigned id;
	pthread_t thread;
	int err;
};

static uint32_t crc_table[256];

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_table[i] = c;
	}
}

static uint32_t crc32c(const unsigned char *p, size_t n)
{
	uint32_t c = ~0u;

	while (n--)
		c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return ~c;
}

static uint64_t rng(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

/* Bytes of block @b of a file (the last one may be short). */
static uint64_t block_len(const struct model *m, uint64_t b)
{
	uint64_t off = b * m->block;

	return off + m->block <= m->size ? m->block : m->size - off;
}

static void gen(const struct model *m, unsigned file, uint64_t b,
		unsigned version, unsigned char *buf, uint64_t len)
{
	uint64_t hdr[3] = { file, b, version };
	uint64_t s = (m->seed * 0x9e3779b97f4a7c15u) ^ ((uint64_t)file << 48) ^
		     (b << 8) ^ version;

	s |= 1;
	for (uint64_t i = 0; i < len; i += 8) {
		uint64_t v = rng(&s);

		memcpy(buf + i, &v, len - i < 8 ? len - i : 8);
	}
	memcpy(buf, hdr, len < sizeof(hdr) ? len : sizeof(hdr));
}

static int open_files(struct model *m, int flags)
{
	char path[4096];

	m->fds = calloc(m->files, sizeof(int));
	if (!m->fds)
		return -1;
	for (unsigned f = 0; f < m->files; f++) {
		snprintf(path, sizeof(path), "%s/sfs.%u", m->dir, f);
		m->fds[f] = open(path, flags, 0644);
		if (m->fds[f] < 0) {
			fprintf(stderr, "open %s: %s\n", path, strerror(errno));
			return -1;
		}
	}
	return 0;
}

static void *writer(void *arg)
{
	struct worker *w = arg;
	struct model *m = w->m;
	uint64_t total = m->files * m->nblocks, mine = 0, *order, s;
	unsigned char *buf = malloc(m->block);

	order = calloc(total / m->threads + 1, sizeof(*order));
	if (!buf || !order) {
		w->err = ENOMEM;
		goto out;
	}
	for (uint64_t k = w->id; k < total; k += m->threads)
		order[mine++] = k;
	s = m->seed + w->id * 7919 + 1;
	for (unsigned pass = 1; pass <= m->passes && !w->err; pass++) {
		/* A new random order every pass. */
		for (uint64_t i = mine; i > 1; i--) {
			uint64_t j = rng(&s) % i, t = order[i - 1];

			order[i - 1] = order[j];
			order[j] = t;
		}
		for (uint64_t i = 0; i < mine; i++) {
			unsigned f = (unsigned)(order[i] / m->nblocks);
			uint64_t b = order[i] % m->nblocks, len = block_len(m, b);
			ssize_t n;

			gen(m, f, b, pass, buf, len);
			n = pwrite(m->fds[f], buf, len, (off_t)(b * m->block));
			if (n != (ssize_t)len) {
				w->err = n < 0 ? errno : EIO;
				fprintf(stderr, "write file %u block %" PRIu64
					": %s\n", f, b, strerror(w->err));
				break;
			}
		}
	}
out:
	free(buf);
	free(order);
	return NULL;
}

static int do_write(struct model *m, const char *manifest)
{
	struct worker *ws = calloc(m->threads, sizeof(*ws));
	unsigned char *buf = malloc(m->block);
	FILE *mf;
	int bad = 0;

	if (!ws || !buf || open_files(m, O_RDWR | O_CREAT))
		return 1;
	for (unsigned t = 0; t < m->threads; t++) {
		ws[t].m = m;
		ws[t].id = t;
		if (pthread_create(&ws[t].thread, NULL, writer, &ws[t]))
			return 1;
	}
	for (unsigned t = 0; t < m->threads; t++) {
		pthread_join(ws[t].thread, NULL);
		bad |= ws[t].err != 0;
	}
	mf = fopen(manifest, "w");
	if (!mf)
		return 1;
	for (unsigned f = 0; f < m->files; f++) {
		for (uint64_t b = 0; b < m->nblocks; b++) {
			gen(m, f, b, m->passes, buf, block_len(m, b));
			fprintf(mf, "%u %" PRIu64 " %08x\n", f, b,
				crc32c(buf, block_len(m, b)));
		}
		if (close(m->fds[f]))
			bad = 1;
	}
	if (fclose(mf))
		bad = 1;
	printf("write: %u files x %" PRIu64 " blocks x %u passes by %u threads:"
	       " %s\n", m->files, m->nblocks, m->passes, m->threads,
	       bad ? "FAILED" : "OK");
	free(ws);
	free(buf);
	return bad;
}

static int do_verify(struct model *m, const char *manifest)
{
	unsigned char *buf = malloc(m->block), *want = malloc(m->block);
	uint64_t checked = 0, bad = 0;
	FILE *mf = fopen(manifest, "r");

	if (!buf || !want || !mf || open_files(m, O_RDONLY))
		return 1;
	for (unsigned f = 0; f < m->files; f++) {
		off_t end = lseek(m->fds[f], 0, SEEK_END);

		if (end != (off_t)m->size) {
			fprintf(stderr, "verify: file %u is %lld bytes, expected %"
				PRIu64 "\n", f, (long long)end, m->size);
			bad++;
		}
		for (uint64_t b = 0; b < m->nblocks; b++) {
			uint64_t len = block_len(m, b);
			unsigned mfile;
			uint64_t mblock;
			uint32_t crc;

			if (fscanf(mf, "%u %" SCNu64 " %x", &mfile, &mblock,
				   &crc) != 3 || mfile != f || mblock != b) {
				fprintf(stderr, "verify: manifest out of step\n");
				return 1;
			}
			if (pread(m->fds[f], buf, len, (off_t)(b * m->block)) !=
			    (ssize_t)len) {
				fprintf(stderr, "verify: file %u block %" PRIu64
					": short read\n", f, b);
				bad++;
				continue;
			}
			gen(m, f, b, m->passes, want, len);
			if (memcmp(buf, want, len) || crc32c(buf, len) != crc) {
				if (bad < 10)
					fprintf(stderr, "verify: file %u block %"
						PRIu64 " differs\n", f, b);
				bad++;
			}
			checked++;
		}
		close(m->fds[f]);
	}
	fclose(mf);
	printf("verify: %" PRIu64 " blocks checked, %" PRIu64 " bad\n", checked,
	       bad);
	free(buf);
	free(want);
	return bad != 0;
}

static const char *errname(int e)
{
	switch (e) {
	case 0:
		return "0";
	case ENOSPC:
		return "ENOSPC";
	case EDQUOT:
		return "EDQUOT";
	case EAGAIN:
		return "EAGAIN";
	case EOPNOTSUPP:
		return "EOPNOTSUPP";
	case EXDEV:
		return "EXDEV";
	default:
		return strerror(e);
	}
}

static int do_fill(const char *path, uint64_t bs, uint64_t max)
{
	unsigned char *buf = malloc(bs);
	uint64_t written = 0, s = 42;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), err = 0;

	if (fd < 0 || !buf) {
		perror("fill");
		return 1;
	}
	for (uint64_t i = 0; i < bs; i += 8) {
		uint64_t v = rng(&s);

		memcpy(buf + i, &v, bs - i < 8 ? bs - i : 8);
	}
	while (!max || written < max) {
		ssize_t n = write(fd, buf, bs);

		if (n < 0) {
			err = errno;
			break;
		}
		written += (uint64_t)n;
		if ((uint64_t)n < bs) {
			/* A short write: the next one says why. */
			continue;
		}
	}
	if (close(fd) && !err)
		err = errno;
	printf("written=%" PRIu64 " errno=%s\n", written, errname(err));
	free(buf);
	return 0;
}

static int do_nowait(const char *path, uint64_t off, uint64_t len)
{
	unsigned char *buf = calloc(1, len);
	struct iovec iov = { buf, len };
	int fd = open(path, O_WRONLY | O_CREAT | O_NONBLOCK, 0644);
	ssize_t n;
	bool supported = true;

	if (fd < 0 || !buf) {
		perror("nowait");
		return 1;
	}
	memset(buf, 0x5a, len);
	n = pwritev2(fd, &iov, 1, (off_t)off, RWF_NOWAIT);
	if (n < 0 && errno == EOPNOTSUPP) {
		/* The kernel refused the flag before asking the file system:
		 * the O_NONBLOCK descriptor is the NOWAIT channel. */
		supported = false;
		n = pwritev2(fd, &iov, 1, (off_t)off, 0);
	}
	if (n < 0)
		printf("rwf_nowait=%s errno=%s\n",
		       supported ? "supported" : "EOPNOTSUPP", errname(errno));
	else
		printf("rwf_nowait=%s result=%zd\n",
		       supported ? "supported" : "EOPNOTSUPP", n);
	close(fd);
	free(buf);
	return 0;
}

static uint64_t usage_pages, usage_inodes;
static uint64_t *usage_leaf_ids;	/* st_ino / 32 of every inode */
static size_t usage_cap_ids;
static uint64_t *usage_links;
static size_t usage_nr_links;

/* Pages mapped by FIEMAP (unwritten extents and blocks past EOF, which
 * fallocate leaves, included); UINT64_MAX without FIEMAP. */
static uint64_t fiemap_pages(int fd)
{
	enum { NR = 64 };
	union {
		struct fiemap fm;
		unsigned char raw[sizeof(struct fiemap) +
				  NR * sizeof(struct fiemap_extent)];
	} u;
	uint64_t start = 0, pages = 0, next = 0;
	int last = 0;

	while (!last) {
		memset(&u, 0, sizeof(u));
		u.fm.fm_start = start;
		u.fm.fm_length = FIEMAP_MAX_OFFSET - start;
		u.fm.fm_extent_count = NR;
		if (ioctl(fd, FS_IOC_FIEMAP, &u.fm))
			return UINT64_MAX;
		if (!u.fm.fm_mapped_extents)
			break;
		for (uint32_t i = 0; i < u.fm.fm_mapped_extents; i++) {
			const struct fiemap_extent *x = &u.fm.fm_extents[i];
			uint64_t first = x->fe_logical / 4096;
			uint64_t end = (x->fe_logical + x->fe_length + 4095) / 4096;

			if (first < next)
				first = next;
			if (end > first) {
				pages += end - first;
				next = end;
			}
			start = x->fe_logical + x->fe_length;
			if (x->fe_flags & FIEMAP_EXTENT_LAST)
				last = 1;
		}
	}
	return pages;
}

static uint64_t file_pages(const char *path, uint64_t size)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW);
	uint64_t off = 0, pages = 0, next = 0;

	if (fd < 0)
		return 0;
	pages = fiemap_pages(fd);
	if (pages != UINT64_MAX) {
		close(fd);
		return pages;
	}
	pages = 0;
	while (off < size) {
		off_t d = lseek(fd, (off_t)off, SEEK_DATA), h;
		uint64_t first, end;

		if (d < 0)
			break;
		h = lseek(fd, d, SEEK_HOLE);
		if (h < 0 || (uint64_t)h > size)
			h = (off_t)size;
		first = (uint64_t)d / 4096;
		if (first < next)
			first = next;
		end = ((uint64_t)h + 4095) / 4096;
		if (end > first)
			pages += end - first;
		if (end > next)
			next = end;
		if ((uint64_t)h <= off)
			break;
		off = (uint64_t)h;
	}
	close(fd);
	return pages;
}

static int usage_one(const char *path, const struct stat *st, int type,
		     struct FTW *ftw)
{
	(void)type;
	(void)ftw;
	if (st->st_nlink > 1 && !S_ISDIR(st->st_mode)) {
		for (size_t i = 0; i < usage_nr_links; i++)
			if (usage_links[i] == (uint64_t)st->st_ino)
				return 0;
		usage_links = realloc(usage_links,
				      (usage_nr_links + 1) * sizeof(uint64_t));
		if (!usage_links)
			return -1;
		usage_links[usage_nr_links++] = (uint64_t)st->st_ino;
	}
	if (usage_inodes == usage_cap_ids) {
		size_t cap = usage_cap_ids ? usage_cap_ids * 2 : 1024;
		uint64_t *n = realloc(usage_leaf_ids, cap * sizeof(*n));

		if (!n)
			return -1;
		usage_leaf_ids = n;
		usage_cap_ids = cap;
	}
	/* spacefs keeps the items of 32 consecutive inode numbers in one
	 * leaf (SFS_LEAF_INODES). */
	usage_leaf_ids[usage_inodes++] = (uint64_t)st->st_ino / 32;
	if (S_ISREG(st->st_mode))
		usage_pages += file_pages(path, (uint64_t)st->st_size);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int do_usage(const char *dir)
{
	uint64_t leaves = 0;

	if (nftw(dir, usage_one, 64, FTW_PHYS | FTW_MOUNT))
		return 1;
	qsort(usage_leaf_ids, usage_inodes, sizeof(uint64_t), cmp_u64);
	for (size_t i = 0; i < usage_inodes; i++)
		if (!i || usage_leaf_ids[i] != usage_leaf_ids[i - 1])
			leaves++;
	printf("data=%" PRIu64 " inodes=%" PRIu64 " leaves=%" PRIu64 "\n",
	       usage_pages * 4096, usage_inodes, leaves);
	free(usage_leaf_ids);
	return 0;
}

struct dio_reader {
	const char *path;
	uint64_t size;
	volatile bool stop;
};

static void *dio_reader_main(void *arg)
{
	struct dio_reader *r = arg;
	char *buf = malloc(r->size);

	while (buf && !r->stop) {
		int fd = open(r->path, O_RDONLY);

		if (fd < 0)
			continue;
		if (pread(fd, buf, r->size, 0) < 0)
			perror("pread");
		close(fd);
	}
	free(buf);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int do_dio_cycle(const char *path, uint64_t size, double seconds)
{
	struct dio_reader r = { path, size, false };
	pthread_t th[2];
	aio_context_t ctx = 0;
	uint64_t cycles = 0, stale = 0;
	unsigned char *wbuf = NULL, *rbuf = malloc(size);
	double end = now_s() + seconds;
	int dfd = open(path, O_RDWR | O_CREAT | O_DIRECT, 0644);

	if (dfd < 0 || !rbuf || !size || size % 4096 ||
	    posix_memalign((void **)&wbuf, 4096, size) ||
	    syscall(SYS_io_setup, 1, &ctx)) {
		perror("dio-cycle setup");
		return 1;
	}
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, dio_reader_main, &r);
	while (now_s() < end) {
		unsigned char pattern = cycles % 2 ? 0xaa : 0x55;
		struct iocb cb = { 0 }, *cbs[1] = { &cb };
		struct io_event ev;
		int fd;

		memset(wbuf, pattern, size);
		cb.aio_fildes = (uint32_t)dfd;
		cb.aio_lio_opcode = IOCB_CMD_PWRITE;
		cb.aio_buf = (uint64_t)(uintptr_t)wbuf;
		cb.aio_nbytes = size;
		if (syscall(SYS_io_submit, ctx, 1, cbs) != 1 ||
		    syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL) != 1 ||
		    ev.res != (int64_t)size) {
			perror("dio-cycle write");
			break;
		}
		fd = open(path, O_RDONLY);
		if (fd < 0 || pread(fd, rbuf, size, 0) != (ssize_t)size) {
			perror("dio-cycle read");
			break;
		}
		close(fd);
		for (uint64_t k = 0; k < size; k++) {
			if (rbuf[k] != pattern) {
				stale++;
				break;
			}
		}
		cycles++;
	}
	r.stop = true;
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	syscall(SYS_io_destroy, ctx);
	close(dfd);
	free(wbuf);
	free(rbuf);
	printf("cycles=%" PRIu64 " stale=%" PRIu64 "\n", cycles, stale);
	return 0;
}

static uint64_t num(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	switch (*end) {
	case 'k': case 'K':
		v <<= 10;
		break;
	case 'm': case 'M':
		v <<= 20;
		break;
	case 'g': case 'G':
		v <<= 30;
		break;
	}
	return v;
}

int main(int argc, char **argv)
{
	struct model m = { 0 };

	crc_init();
	if (argc == 10 && !strcmp(argv[1], "write")) {
		m.dir = argv[2];
		m.files = (unsigned)num(argv[3]);
		m.threads = (unsigned)num(argv[4]);
		m.size = num(argv[5]);
		m.block = num(argv[6]);
		m.passes = (unsigned)num(argv[7]);
		m.seed = num(argv[8]);
		if (!m.files || !m.threads || !m.block || !m.passes || !m.size)
			return 2;
		m.nblocks = (m.size + m.block - 1) / m.block;
		return do_write(&m, argv[9]);
	}
	if (argc == 9 && !strcmp(argv[1], "verify")) {
		m.dir = argv[2];
		m.files = (unsigned)num(argv[3]);
		m.size = num(argv[4]);
		m.block = num(argv[5]);
		m.passes = (unsigned)num(argv[6]);
		m.seed = num(argv[7]);
		if (!m.files || !m.block || !m.passes || !m.size)
			return 2;
		m.nblocks = (m.size + m.block - 1) / m.block;
		return do_verify(&m, argv[8]);
	}
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "fill"))
		return do_fill(argv[2], num(argv[3]), argc == 5 ? num(argv[4]) : 0);
	if (argc == 4 && !strcmp(argv[1], "rename")) {
		printf("errno=%s\n",
		       errname(rename(argv[2], argv[3]) ? errno : 0));
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "usage"))
		return do_usage(argv[2]);
	if (argc == 5 && !strcmp(argv[1], "dio-cycle"))
		return do_dio_cycle(argv[2], num(argv[3]), atof(argv[4]));
	if (argc == 5 && !strcmp(argv[1], "nowait"))
		return do_nowait(argv[2], num(argv[3]), num(argv[4]));
	fprintf(stderr, "usage: see the top of sfs_client.c\n");
	return 2;
}
