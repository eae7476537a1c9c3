/* SPDX-License-Identifier: MIT */
/*
 * logstore's log: records, segment files, the restart recipe, verify.
 *
 * RECORDS
 *
 * A record is a 32-byte header (struct ls_rec_hdr), the key, the value,
 * and zeroes up to a multiple of 8 bytes.  It carries two CRC-32C
 * checksums: the body's (key and value), computed by the writer before it
 * takes the log lock, and the header's, which covers the sequence number
 * the log lock hands out.  A record never spans two segments, so the
 * largest is a segment.  A tombstone (a delete) is a record with no value.
 * Sequence numbers grow with every append, and a cleaner's copy keeps its
 * original's: the newest record of a key is the one with the highest.
 *
 * SEGMENTS
 *
 * Files named seg-NNNNNNNNNN.log (the id, which only grows), appended to
 * by one writer at a time (the writers' head under the log lock, the
 * cleaner's output under the clean lock) and never modified afterwards.
 * Nothing else is on disk: no index, no manifest.  A segment is durable
 * once a commit (cleaner.c) or ls_sync() has fdatasync()ed it; a put is
 * acknowledged before that, as a buffered write is (btrfs makes it
 * durable at the transaction commit, or at fsync()).
 *
 * THE RESTART RECIPE
 *
 * ls_open() on a directory with segments:
 *
 * 1. Scan every segment in id order, every record in order, checking both
 *    checksums.  A record that fails (a torn write at the end of a
 *    segment after a crash) ends the segment: the file is cut there, as
 *    RocksDB's WAL recovery drops a corrupted tail.
 * 2. Rebuild the index: a key's entry points at its record with the
 *    highest sequence number (on a tie, a copy the cleaner made before a
 *    crash, the later segment); "older" counts its other records.  A
 *    tombstone with nothing older is a ghost.  Every record the index does
 *    not point at, and every ghost, is dead: it counts toward its
 *    segment's dead bytes.
 * 3. Load the pools (the library's restart recipe, btrfs loading each
 *    block group's used bytes at mount): srsv_space_load_used() every
 *    file byte in the DATA pool, then srsv_space_pin() the dead bytes
 *    (the preemptive flusher sees them as debt at once: a store reopened
 *    with much dead starts cleaning before a writer waits); load the index
 *    entries' bytes in the METADATA pool; create each tenant's quota with
 *    no limit, srsv_quota_reserve() (NOFLUSH) and srsv_quota_charge_used()
 *    its live value bytes, then srsv_quota_set_limit().  The limit comes
 *    last so that a tenant already over a lowered limit still opens (it
 *    gets -EDQUOT on its next put, as btrfs lets a lowered qgroup limit
 *    stand below the usage).  load_used() never waits: a directory
 *    holding more than the capacity is refused with -ENOSPC.  Nothing
 *    else needs reporting: every dead byte is pinned, which is all the
 *    debt the library must know (srsv_space_set_reclaimable() is for
 *    debt that is not pinned).  The movers' reserve was taken at
 *    srsv_ctx_create(), from the empty pool; load_data() says what
 *    happens when the files leave it less than its size.
 * 4. Segments found on disk are sealed: writers start a new one.
 *
 * After that the pools hold exactly what a store that never closed would
 * hold, to the byte; ls_verify() checks it the same way.
 *
 * VERIFY
 *
 * ls_verify() runs steps 1 and 2 again (read-only) into a second index and
 * compares it with the live one, entry by entry and segment by segment:
 * every record's checksums were just read from disk, and the live index
 * points exactly at the records a restart would choose.  Then it checks
 * the pools' and quotas' counters against what the engine holds.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

_Static_assert(sizeof(struct ls_rec_hdr) == LS_RECORD_HEADER,
	       "the on-disk header is 32 bytes");

/* ---- CRC-32C (Castagnoli), slicing by 8 ---- */

/*
 * Eight tables, so that the loop consumes 8 bytes per step: about a byte
 * per cycle, a quarter of the byte-at-a-time table's cost.  Every record
 * is checksummed once when written and once per read, scan or copy, so
 * this is most of the engine's CPU time per put after the memcpy.
 */
static uint32_t crc_tab[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_build(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_tab[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^
					crc_tab[0][crc_tab[t - 1][i] & 0xff];
}

void ls__crc_init(void)
{
	pthread_once(&crc_once, crc_build);
}

/* CRC-32C of @buf continuing @crc (0 to start): chaining two calls gives
 * the CRC of the concatenation. */
uint32_t ls__crc32c(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	crc = ~crc;
	while (len && ((uintptr_t)p & 7)) {
		crc = crc_tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
		len--;
	}
	while (len >= 8) {
		uint64_t w;

		memcpy(&w, p, 8);	/* little-endian, as the tables */
		w ^= crc;
		crc = crc_tab[7][w & 0xff] ^ crc_tab[6][(w >> 8) & 0xff] ^
		      crc_tab[5][(w >> 16) & 0xff] ^
		      crc_tab[4][(w >> 24) & 0xff] ^
		      crc_tab[3][(w >> 32) & 0xff] ^
		      crc_tab[2][(w >> 40) & 0xff] ^
		      crc_tab[1][(w >> 48) & 0xff] ^ crc_tab[0][w >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = crc_tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

/* ---- records ---- */

uint64_t ls_record_bytes(size_t key_len, size_t val_len)
{
	return (LS_RECORD_HEADER + (uint64_t)key_len + val_len + 7) & ~UINT64_C(7);
}

/* Write a record into @buf (ls_record_bytes() long), all but its sequence
 * number and header checksum (ls__rec_seal()).  Returns its length. */
uint64_t ls__rec_encode(unsigned char *buf, unsigned tenant, enum ls_kind kind,
			const void *key, size_t key_len, const void *val,
			size_t val_len)
{
	uint64_t len = ls_record_bytes(key_len, val_len);
	size_t body = key_len + val_len;
	struct ls_rec_hdr h;

	memset(&h, 0, sizeof(h));
	memcpy(buf + LS_RECORD_HEADER, key, key_len);
	if (val_len)
		memcpy(buf + LS_RECORD_HEADER + key_len, val, val_len);
	memset(buf + LS_RECORD_HEADER + body, 0, len - LS_RECORD_HEADER - body);
	h.magic = LS_RECORD_MAGIC;
	h.body_crc = ls__crc32c(0, buf + LS_RECORD_HEADER, body);
	h.val_len = (uint32_t)val_len;
	h.key_len = (uint16_t)key_len;
	h.kind = (uint8_t)kind;
	h.tenant = (uint8_t)tenant;
	memcpy(buf, &h, sizeof(h));
	return len;
}

/* Give the record its sequence number and seal the header (log lock). */
void ls__rec_seal(unsigned char *buf, uint64_t seq)
{
	struct ls_rec_hdr h;

	memcpy(&h, buf, sizeof(h));
	h.seq = seq;
	h.hdr_crc = 0;
	h.hdr_crc = ls__crc32c(0, &h, sizeof(h));
	memcpy(buf, &h, sizeof(h));
}

/*
 * Parse the record at @buf, @avail bytes being readable.  0 and @r
 * filled (r->seg, r->off and r->hash are the caller's), or -EBADMSG: not
 * a whole record with both checksums right.
 */
int ls__rec_parse(const unsigned char *buf, uint64_t avail, struct ls_rec *r)
{
	struct ls_rec_hdr h;
	uint32_t crc;
	uint64_t len;

	if (avail < LS_RECORD_HEADER)
		return -EBADMSG;
	memcpy(&h, buf, sizeof(h));
	if (h.magic != LS_RECORD_MAGIC)
		return -EBADMSG;
	crc = h.hdr_crc;
	h.hdr_crc = 0;
	if (ls__crc32c(0, &h, sizeof(h)) != crc)
		return -EBADMSG;
	if ((h.kind != LS_KIND_PUT && h.kind != LS_KIND_DELETE) ||
	    h.tenant >= LS_MAX_TENANTS || !h.key_len ||
	    h.key_len > LS_KEY_MAX || h.zero ||
	    (h.kind == LS_KIND_DELETE && h.val_len))
		return -EBADMSG;
	len = ls_record_bytes(h.key_len, h.val_len);
	if (len > avail || len > LS_SEGMENT_BYTES)
		return -EBADMSG;
	if (ls__crc32c(0, buf + LS_RECORD_HEADER,
		       (size_t)h.key_len + h.val_len) != h.body_crc)
		return -EBADMSG;
	r->len = (uint32_t)len;
	r->seq = h.seq;
	r->tenant = h.tenant;
	r->tombstone = h.kind == LS_KIND_DELETE;
	r->key_len = h.key_len;
	r->val_len = h.val_len;
	r->key = buf + LS_RECORD_HEADER;
	r->val = r->key + h.key_len;
	return 0;
}

/* ---- segment files ---- */

static void seg_name(char *name, size_t len, uint32_t id)
{
	snprintf(name, len, "seg-%010" PRIu32 ".log", id);
}

/* The id of a segment file's name, or false for any other name. */
static bool seg_id_of(const char *name, uint32_t *id)
{
	unsigned long v;
	char *end;

	if (strncmp(name, "seg-", 4) || strlen(name) != 18 ||
	    strcmp(name + 14, ".log"))
		return false;
	for (int i = 4; i < 14; i++)
		if (name[i] < '0' || name[i] > '9')
			return false;
	v = strtoul(name + 4, &end, 10);
	if (end != name + 14 || v > UINT32_MAX)
		return false;
	*id = (uint32_t)v;
	return true;
}

/* Create the next segment and add it to the list; log lock held. */
int ls__seg_create(struct logstore *ls, struct ls_segment **out)
{
	struct ls_segment *seg = calloc(1, sizeof(*seg)), **pp;
	char name[32];

	if (!seg)
		return -ENOMEM;
	seg->id = ls->next_id;
	seg_name(name, sizeof(name), seg->id);
	seg->fd = openat(ls->dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
			 0644);
	if (seg->fd < 0) {
		int err = -errno;

		free(seg);
		return err;
	}
	ls->next_id++;
	seg->synced = false;	/* its directory entry is new */
	for (pp = &ls->segments; *pp; pp = &(*pp)->next)
		;
	*pp = seg;
	*out = seg;
	return 0;
}

int ls__seg_write(struct ls_segment *seg, const void *buf, uint64_t len,
		  uint64_t off)
{
	const unsigned char *p = buf;

	while (len) {
		ssize_t n = pwrite(seg->fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

static int seg_read(int fd, void *buf, uint64_t len, uint64_t off)
{
	unsigned char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

int ls__seg_read(struct ls_segment *seg, void *buf, uint64_t len, uint64_t off)
{
	return seg_read(seg->fd, buf, len, off);
}

/*
 * A commit's durability step: fdatasync() every segment appended to since
 * it was last synced, then the directory (new and deleted segment
 * files).  Clean lock held, so no segment is freed meanwhile; segments
 * appended to after the log lock is dropped are synced next time.
 */
int ls__sync_all(struct logstore *ls)
{
	struct ls_segment *seg, **todo;
	size_t nr = 0, cap = 0;
	int ret = 0;

	pthread_mutex_lock(&ls->log_lock);
	for (seg = ls->segments; seg; seg = seg->next)
		cap++;
	todo = calloc(cap ? cap : 1, sizeof(*todo));
	if (!todo) {
		pthread_mutex_unlock(&ls->log_lock);
		return -ENOMEM;
	}
	for (seg = ls->segments; seg; seg = seg->next)
		if (!seg->synced) {
			seg->synced = true;	/* covers what is appended now */
			todo[nr++] = seg;
		}
	pthread_mutex_unlock(&ls->log_lock);
	if (!ls->opt.no_sync) {
		for (size_t i = 0; i < nr && !ret; i++)
			if (fdatasync(todo[i]->fd))
				ret = -errno;
		if (!ret && nr && fsync(ls->dirfd))
			ret = -errno;
	}
	free(todo);
	return ret;
}

void ls__seg_close(struct ls_segment *seg)
{
	if (seg->fd >= 0)
		close(seg->fd);
	free(seg);
}

/* Delete the file, and make the deletion durable before anything that
 * depends on it (a ghost's entry may go once the value it hid is gone). */
int ls__seg_unlink(struct logstore *ls, struct ls_segment *seg)
{
	char name[32];

	seg_name(name, sizeof(name), seg->id);
	if (unlinkat(ls->dirfd, name, 0))
		return -errno;
	if (!ls->opt.no_sync && fsync(ls->dirfd))
		return -errno;
	return 0;
}

/* ---- scanning: steps 1 and 2 of the restart recipe ---- */

struct scan {
	struct ls_segment **segs;	/* by id */
	size_t nr;
	uint64_t *dead;			/* per segs[i] */
	uint64_t records, max_seq, torn;
	unsigned char *buf;
};

/*
 * Read every record of every segment into @idx.  With @repair (restart),
 * a segment ends at its first bad record and the file is cut there; else
 * (verify) a bad record is an error described in @err.
 */
static int scan_segments(struct scan *sc, struct ls_index *idx, bool repair,
			 char *err, size_t errlen)
{
	for (size_t i = 0; i < sc->nr; i++)
		sc->segs[i]->scan_pos = i;
	for (size_t i = 0; i < sc->nr; i++) {
		struct ls_segment *seg = sc->segs[i];
		uint64_t size = seg->size, off = 0;
		int ret;

		if (size > LS_SEGMENT_BYTES) {
			if (!repair) {
				snprintf(err, errlen, "segment %" PRIu32 ": %"
					 PRIu64 " bytes, more than a segment",
					 seg->id, size);
				return -EUCLEAN;
			}
			size = LS_SEGMENT_BYTES;
		}
		ret = seg_read(seg->fd, sc->buf, size, 0);
		if (ret) {
			snprintf(err, errlen, "segment %" PRIu32 ": read: %s",
				 seg->id, strerror(-ret));
			return ret;
		}
		while (off < size) {
			struct ls_rec r;

			if (ls__rec_parse(sc->buf + off, size - off, &r)) {
				if (!repair) {
					snprintf(err, errlen, "segment %" PRIu32
						 ": bad record at offset %" PRIu64,
						 seg->id, off);
					return -EUCLEAN;
				}
				break;
			}
			r.seg = seg;
			r.off = (uint32_t)off;
			r.hash = ls__key_hash(r.tenant, r.key, r.key_len);
			ret = ls__index_scan_add(idx, &r, sc->dead);
			if (ret) {
				snprintf(err, errlen, "out of memory");
				return ret;
			}
			if (r.seq > sc->max_seq)
				sc->max_seq = r.seq;
			sc->records++;
			off += r.len;
		}
		if (off != seg->size) {
			/* A torn tail (repair only): cut it off. */
			sc->torn += seg->size - off;
			if (ftruncate(seg->fd, (off_t)off)) {
				ret = -errno;
				snprintf(err, errlen, "segment %" PRIu32
					 ": ftruncate: %s", seg->id,
					 strerror(-ret));
				return ret;
			}
			seg->size = off;
		}
	}
	ls__index_scan_finish(idx, sc->dead);
	return 0;
}

static int cmp_seg_id(const void *a, const void *b)
{
	const struct ls_segment *x = *(struct ls_segment *const *)a;
	const struct ls_segment *y = *(struct ls_segment *const *)b;

	return (x->id > y->id) - (x->id < y->id);
}

/* Open every segment file of the directory, sorted by id. */
static int open_segments(struct logstore *ls, struct scan *sc)
{
	int fd = openat(ls->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t cap = 0;
	struct dirent *de;
	DIR *d;
	int ret = 0;

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		ret = -errno;
		close(fd);
		return ret;
	}
	while ((de = readdir(d))) {
		struct ls_segment *seg;
		struct stat st;
		uint32_t id;

		if (!seg_id_of(de->d_name, &id))
			continue;
		if (sc->nr == cap) {
			size_t ncap = cap ? 2 * cap : 64;
			struct ls_segment **n = realloc(sc->segs,
							ncap * sizeof(*n));

			if (!n) {
				ret = -ENOMEM;
				break;
			}
			sc->segs = n;
			cap = ncap;
		}
		seg = calloc(1, sizeof(*seg));
		if (!seg) {
			ret = -ENOMEM;
			break;
		}
		seg->id = id;
		seg->fd = openat(ls->dirfd, de->d_name, O_RDWR | O_CLOEXEC);
		if (seg->fd < 0 || fstat(seg->fd, &st)) {
			ret = -errno;
			ls__seg_close(seg);
			break;
		}
		seg->size = (uint64_t)st.st_size;
		seg->sealed = true;
		seg->synced = true;
		sc->segs[sc->nr++] = seg;
	}
	closedir(d);
	if (ret)
		return ret;
	if (sc->nr)
		qsort(sc->segs, sc->nr, sizeof(*sc->segs), cmp_seg_id);
	return 0;
}

/*
 * The segment files' @bytes as used in the DATA pool.  srsv_space_load_used()
 * counts only the pool's free space, and the movers' reserve (one segment)
 * was charged at srsv_ctx_create(): a store closed with less than that
 * free (deletes on a full device drew on the reserve, a clean pass was cut
 * short) would not open again at its own capacity.  So what does not fit
 * in the free space is taken from the reserve, as the cleaner takes a
 * copy's bytes (reserve, alloc, commit_used); the library refills the
 * reserve as space comes back.  (Better in the library: load_used() drawing
 * on the movers' reserve itself, the reserve being at most a promise of
 * space that a restart finds already used.)
 */
static int load_data(struct logstore *ls, uint64_t bytes)
{
	struct srsv_space_info i;
	uint64_t free_bytes, held, rest;
	int ret = srsv_space_load_used(ls->data, bytes);

	if (ret != -ENOSPC)
		return ret;
	if (srsv_space_snapshot(ls->data, &i, NULL, 0, NULL))
		return -EIO;
	held = i.used + i.reserved + i.pinned + i.may_use + i.readonly +
	       i.zone_unusable;
	free_bytes = i.total > held ? i.total - held : 0;
	if (bytes > free_bytes + i.mover_rsv_reserved)
		return -ENOSPC;
	rest = bytes - free_bytes;
	if (free_bytes)
		ret = srsv_space_load_used(ls->data, free_bytes);
	else
		ret = 0;
	if (!ret)
		ret = srsv_space_reserve(ls->data, rest, SRSV_NO_FLUSH,
					 SRSV_RESERVE_MOVER);
	if (!ret)
		ret = LS_CHECK(ls, srsv_space_alloc(ls->data, rest));
	if (!ret)
		ret = LS_CHECK(ls, srsv_space_commit_used(ls->data, rest));
	return ret;
}

/* Step 3: the pools and quotas, loaded with what is on disk. */
static int load_pools(struct logstore *ls, uint64_t file_bytes,
		      uint64_t dead_bytes)
{
	const struct ls_index *idx = &ls->index;
	int ret = 0;

	if (file_bytes > ls->opt.capacity ||
	    idx->meta_bytes > ls->opt.index_capacity)
		return -ENOSPC;
	if (file_bytes) {
		ret = load_data(ls, file_bytes);
		if (!ret && dead_bytes)
			ret = LS_CHECK(ls, srsv_space_pin(ls->data, dead_bytes));
		if (ret)
			return ret;
	}
	if (idx->meta_bytes) {
		ret = srsv_space_load_used(ls->meta, idx->meta_bytes);
		if (ret)
			return ret;
	}
	for (unsigned t = 0; t < ls->tenants && !ret; t++) {
		uint64_t b = idx->tenant_bytes[t];

		if (!b)
			continue;
		ret = LS_CHECK(ls, srsv_quota_reserve(ls->quota[t],
						      SRSV_QUOTA_DATA, b,
						      SRSV_QUOTA_NOFLUSH));
		if (!ret)
			ret = LS_CHECK(ls, srsv_quota_charge_used(ls->quota[t],
								  b));
	}
	return ret;
}

/* The restart recipe (steps 1 to 4 above); called by ls_open() with the
 * ctx and the quotas created, before anyone else can use the store. */
int ls__replay(struct logstore *ls)
{
	struct scan sc;
	uint64_t file_bytes = 0, dead_bytes = 0;
	char err[256] = "";
	int ret;

	memset(&sc, 0, sizeof(sc));
	ret = open_segments(ls, &sc);
	if (!ret && sc.nr) {
		sc.dead = calloc(sc.nr, sizeof(*sc.dead));
		sc.buf = malloc(LS_SEGMENT_BYTES);
		if (!sc.dead || !sc.buf)
			ret = -ENOMEM;
	}
	pthread_mutex_lock(&ls->clean_lock);
	pthread_mutex_lock(&ls->log_lock);
	pthread_mutex_lock(&ls->index_lock);
	if (!ret && sc.nr)
		ret = scan_segments(&sc, &ls->index, true, err, sizeof(err));
	if (!ret) {
		struct ls_segment **pp = &ls->segments;

		/* Oldest first; their ages follow their order. */
		for (size_t i = 0; i < sc.nr; i++) {
			struct ls_segment *seg = sc.segs[i];

			seg->dead = sc.dead[i];
			ls->written += seg->size;
			seg->sealed_at = ls->written;
			file_bytes += seg->size;
			dead_bytes += seg->dead;
			*pp = seg;
			pp = &seg->next;
			ls->next_id = seg->id + 1;
		}
		sc.nr = 0;	/* the list owns them now */
		ls->next_seq = sc.max_seq + 1;
		ls->loaded_records = sc.records;
		ls->torn_bytes = sc.torn;
		ls->loaded_segments = 0;
		for (struct ls_segment *s = ls->segments; s; s = s->next)
			ls->loaded_segments++;
	}
	pthread_mutex_unlock(&ls->index_lock);
	pthread_mutex_unlock(&ls->log_lock);
	pthread_mutex_unlock(&ls->clean_lock);
	if (!ret)
		ret = load_pools(ls, file_bytes, dead_bytes);
	else if (*err)
		fprintf(stderr, "logstore: %s: %s\n", ls->dir, err);
	for (size_t i = 0; i < sc.nr; i++)
		ls__seg_close(sc.segs[i]);
	free(sc.segs);
	free(sc.dead);
	free(sc.buf);
	return ret;
}

/* ---- verify ---- */

#define VERR(...) snprintf(rep->error, sizeof(rep->error), __VA_ARGS__)

/* "what is X, expected Y" for one counter; false if it differs. */
static bool expect(struct ls_verify_report *rep, const char *what,
		   uint64_t got, uint64_t want)
{
	if (got == want)
		return true;
	VERR("%s is %" PRIu64 ", the engine holds %" PRIu64, what, got, want);
	return false;
}

static bool check_pools(struct logstore *ls, struct ls_verify_report *rep,
			uint64_t dead_bytes)
{
	const struct ls_index *idx = &ls->index;
	struct srsv_space_info di, mi;

	if (srsv_space_snapshot(ls->data, &di, NULL, 0, NULL) ||
	    srsv_space_snapshot(ls->meta, &mi, NULL, 0, NULL)) {
		VERR("srsv_space_snapshot failed");
		return false;
	}
	if (!expect(rep, "data used", di.used, idx->live_bytes) ||
	    !expect(rep, "data pinned", di.pinned, dead_bytes) ||
	    !expect(rep, "data reserved", di.reserved, 0) ||
	    !expect(rep, "data may_use", di.may_use, di.mover_rsv_reserved) ||
	    !expect(rep, "data total", di.total, ls->opt.capacity) ||
	    !expect(rep, "data tickets", di.nr_tickets + di.nr_priority_tickets,
		    0) ||
	    !expect(rep, "metadata used", mi.used, idx->meta_bytes) ||
	    !expect(rep, "metadata pinned", mi.pinned, 0) ||
	    !expect(rep, "metadata reserved", mi.reserved, 0) ||
	    !expect(rep, "metadata may_use", mi.may_use,
		    mi.global_rsv_reserved + mi.trans_rsv_reserved +
		    mi.delayed_rsv_reserved + mi.delayed_refs_rsv_reserved) ||
	    !expect(rep, "metadata total", mi.total, ls->opt.index_capacity))
		return false;
	for (unsigned t = 0; t < ls->tenants; t++) {
		struct srsv_quota_info qi;
		char what[64];

		if (srsv_quota_snapshot(ls->quota[t], &qi)) {
			VERR("srsv_quota_snapshot failed");
			return false;
		}
		snprintf(what, sizeof(what), "tenant %u quota used", t);
		if (!expect(rep, what, qi.used, idx->tenant_bytes[t]))
			return false;
		snprintf(what, sizeof(what), "tenant %u quota reserved", t);
		if (!expect(rep, what, qi.reserved[SRSV_QUOTA_DATA] +
			    qi.reserved[SRSV_QUOTA_META_PREALLOC] +
			    qi.reserved[SRSV_QUOTA_META_PERTRANS], 0))
			return false;
	}
	return true;
}

int ls_verify(struct logstore *ls, struct ls_verify_report *rep)
{
	struct ls_index disk;
	struct scan sc;
	uint64_t file_bytes = 0, dead_bytes = 0;
	int ret;

	memset(rep, 0, sizeof(*rep));
	memset(&sc, 0, sizeof(sc));
	memset(&disk, 0, sizeof(disk));
	/* The clean lock keeps cleaning passes (the library's, the
	 * background cleaner's) out while we look. */
	pthread_mutex_lock(&ls->clean_lock);
	pthread_mutex_lock(&ls->log_lock);
	pthread_mutex_lock(&ls->index_lock);
	for (struct ls_segment *s = ls->segments; s; s = s->next)
		sc.nr++;
	sc.segs = calloc(sc.nr ? sc.nr : 1, sizeof(*sc.segs));
	sc.dead = calloc(sc.nr ? sc.nr : 1, sizeof(*sc.dead));
	sc.buf = malloc(LS_SEGMENT_BYTES);
	ret = sc.segs && sc.dead && sc.buf &&
	      !ls__index_init(&disk, ls->index.nr) ? 0 : -ENOMEM;
	if (!ret) {
		size_t i = 0;

		for (struct ls_segment *s = ls->segments; s; s = s->next) {
			struct stat st;

			sc.segs[i++] = s;
			file_bytes += s->size;
			dead_bytes += s->dead;
			if (fstat(s->fd, &st) ||
			    (uint64_t)st.st_size != s->size) {
				VERR("segment %" PRIu32 ": file holds %jd bytes,"
				     " the engine %" PRIu64, s->id,
				     (intmax_t)st.st_size, s->size);
				ret = -EUCLEAN;
				break;
			}
		}
	}
	if (!ret)
		ret = scan_segments(&sc, &disk, false, rep->error,
				    sizeof(rep->error));
	if (!ret)
		ret = ls__index_compare(&ls->index, &disk, rep->error,
					sizeof(rep->error));
	for (size_t i = 0; !ret && i < sc.nr; i++)
		if (sc.dead[i] != sc.segs[i]->dead) {
			VERR("segment %" PRIu32 ": %" PRIu64 " dead bytes on "
			     "disk, %" PRIu64 " counted", sc.segs[i]->id,
			     sc.dead[i], sc.segs[i]->dead);
			ret = -EUCLEAN;
		}
	if (!ret && file_bytes != ls->index.live_bytes + dead_bytes) {
		VERR("segments hold %" PRIu64 " bytes, live %" PRIu64
		     " + dead %" PRIu64, file_bytes, ls->index.live_bytes,
		     dead_bytes);
		ret = -EUCLEAN;
	}
	if (!ret && !check_pools(ls, rep, dead_bytes))
		ret = -EUCLEAN;
	rep->segments = sc.nr;
	rep->records = sc.records;
	rep->keys = ls->index.keys;
	rep->tombstones = ls->index.tombstones;
	rep->ghosts = ls->index.ghosts;
	rep->live_bytes = ls->index.live_bytes;
	rep->dead_bytes = dead_bytes;
	pthread_mutex_unlock(&ls->index_lock);
	pthread_mutex_unlock(&ls->log_lock);
	pthread_mutex_unlock(&ls->clean_lock);
	if (!ret && ls_error(ls, rep->error, sizeof(rep->error)))
		ret = -EUCLEAN;
	ls__index_free(&disk);
	free(sc.segs);
	free(sc.dead);
	free(sc.buf);
	return ret;
}
