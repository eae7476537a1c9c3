/* SPDX-License-Identifier: MIT */
/*
 * logstore internals shared by store.c, log.c, index.c and cleaner.c.
 *
 * Locks, in the order they nest (never the other way):
 *
 *   clean_lock   one cleaning step at a time; the cleaner's output
 *                segment (cleaner.c)
 *   log_lock     the writers' head segment, the segment list, segment
 *                ids and sequence numbers (held across the append's
 *                pwrite: NOWAIT puts only try it)
 *   index_lock   the index, every segment's dead and reader counts; held
 *                for memory updates and the library's non-waiting
 *                transitions only, never across I/O or a call that waits
 *   (library)    the pools' and quotas' locks, inside library calls
 *
 * No reservation that may wait is made with any of them held: the flush
 * callback takes clean_lock, log_lock and index_lock, and the library's
 * worker that calls it is the one a waiting reservation waits for.
 */
#ifndef LOGSTORE_INTERNAL_H
#define LOGSTORE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "logstore.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)

/* "LSR1" read as a little-endian word: the first bytes of every record. */
#define LS_RECORD_MAGIC 0x3152534cu

enum ls_kind {
	LS_KIND_PUT = 1,
	LS_KIND_DELETE = 2	/* a tombstone: no value */
};

/*
 * A record's header, little-endian on disk (the machines this runs on;
 * a port to a big-endian one would convert here).  The body (key, then
 * value) follows, then zeroes up to a multiple of 8 bytes.  Two
 * checksums: the body's, computed by the writer before it takes the log
 * lock, and the header's, which covers the sequence number the log lock
 * hands out and the body's checksum, so sealing a record under the lock
 * costs 32 bytes of CRC instead of the whole record.
 */
struct ls_rec_hdr {
	uint32_t magic;		/* LS_RECORD_MAGIC */
	uint32_t hdr_crc;	/* CRC-32C of this header with hdr_crc = 0 */
	uint64_t seq;		/* newest wins; a cleaner's copy keeps it */
	uint32_t body_crc;	/* CRC-32C of key and value */
	uint32_t val_len;
	uint16_t key_len;
	uint8_t kind;		/* enum ls_kind */
	uint8_t tenant;
	uint32_t zero;		/* 0 */
};

/* One segment file.  Lives from its creation (or ls_open()) until the
 * cleaner deletes it. */
struct ls_segment {
	uint32_t id;
	int fd;
	uint64_t size;		/* bytes appended (log_lock while open;
				 * fixed once sealed) */
	uint64_t dead;		/* dead bytes, pinned in DATA (index_lock) */
	uint64_t sealed_at;	/* ls->written when sealed: its age */
	unsigned readers;	/* ls_get()s reading it (index_lock) */
	bool sealed;		/* no more appends (log_lock) */
	bool cleaning;		/* being cleaned (clean_lock) */
	bool synced;		/* fdatasync()ed since its last append */
	size_t scan_pos;	/* its place in a scan (log.c) */
	struct ls_segment *next;	/* ls->segments, oldest first */
};

/*
 * An index entry: where the newest record of (tenant, key) is, and how
 * many older records of the key are still on disk.  Its state:
 *
 *   value            !tombstone: the newest record is a value (live)
 *   live tombstone   tombstone, older > 0: it must stay, or a restart
 *                    would bring an older value back
 *   ghost            tombstone, older == 0: nothing left to hide, so the
 *                    tombstone is dead; the entry stays until the cleaner
 *                    reclaims the tombstone's segment, so that the count
 *                    of records on disk stays exact
 *
 * Invariant: every record on disk has an entry, and older = the key's
 * records on disk - 1.  That is what a restart rebuilds (log.c).
 */
struct ls_entry {
	struct ls_entry *next;	/* hash chain */
	uint64_t hash;
	struct ls_segment *seg;	/* the newest record */
	uint32_t off, len;
	uint64_t seq;
	uint32_t older;
	uint8_t tenant;
	bool tombstone;
	uint16_t key_len;
	unsigned char key[];
};

struct ls_index {
	struct ls_entry **buckets;
	size_t mask;		/* buckets - 1 (a power of two) */
	size_t nr;		/* entries */
	uint64_t meta_bytes;	/* sum of ls_entry_bytes() */
	uint64_t live_bytes;	/* records of values and live tombstones */
	uint64_t keys, tombstones, ghosts;
	uint64_t tenant_bytes[LS_MAX_TENANTS];	/* live value records */
};

/* A record read from a segment (pointers into the caller's buffer). */
struct ls_rec {
	struct ls_segment *seg;
	uint32_t off, len;
	uint64_t seq;
	uint8_t tenant;
	bool tombstone;
	uint16_t key_len;
	uint32_t val_len;
	const unsigned char *key, *val;
	uint64_t hash;
};

/* Statistics: counters bumped outside any lock. */
struct ls_counters {
	_Atomic uint64_t puts, deletes, gets, put_bytes;
	_Atomic uint64_t enospc, edquot, eagain, reserve_ns, stale;
	_Atomic uint64_t clean_passes, segments_cleaned, cleaned_bytes;
	_Atomic uint64_t moved_bytes, moved_records, lost_copies;
	_Atomic uint64_t cleaner_enospc, clean_aborted, bg_passes;
	_Atomic uint64_t flush_calls;
};

struct logstore {
	struct ls_options opt;
	char *dir;
	int dirfd;
	unsigned tenants;
	/* The DATA pool's movers' reserve (cleaner.c, "THE HEADROOM"):
	 * srsv_config::mover_reserve_bytes[SRSV_POOL_DATA]. */
	uint64_t mover_reserve;

	struct srsv_ctx *ctx;
	struct srsv_space *data, *meta;
	struct srsv_quota *quota[LS_MAX_TENANTS];

	pthread_mutex_t clean_lock;
	struct ls_segment *out;		/* the cleaner's output segment */
	unsigned char *clean_buf;	/* a segment's bytes (clean_lock) */
	struct ls_rec *clean_recs;	/* its records (clean_lock) */
	uint32_t *clean_order;		/* their indexes by key hash */
	size_t clean_recs_cap;

	pthread_mutex_t log_lock;
	struct ls_segment *head;	/* the writers' open segment */
	struct ls_segment *segments;	/* every segment, by id */
	uint32_t next_id;
	uint64_t next_seq;
	uint64_t written;		/* bytes ever appended: the clock of
					 * segment ages */

	pthread_mutex_t index_lock;
	pthread_cond_t readers_done;	/* a segment's readers reached 0 */
	struct ls_index index;

	/* The background cleaner (cleaner.c). */
	pthread_t bg_thread;
	bool bg_started;
	pthread_mutex_t bg_lock;
	pthread_cond_t bg_cond;		/* CLOCK_MONOTONIC */
	atomic_bool bg_stop;

	struct ls_counters c;
	uint64_t loaded_segments, loaded_records, torn_bytes;

	/* The first internal error (store.c, ls__fail()). */
	pthread_mutex_t err_lock;
	int err;
	char err_msg[256];
};

/* Record a library call that failed where it cannot (an accounting bug)
 * or an I/O error; returns @ret.  ls_error() reads it. */
#define LS_CHECK(ls, call) ls__check((ls), (call), #call, __FILE__, __LINE__)
int ls__check(struct logstore *ls, int ret, const char *what,
	      const char *file, int line);

/* store.c */
int ls__flush(struct srsv_space *space, enum srsv_flush_state state,
	      uint64_t bytes, bool for_preempt, void *user);
void ls__pin_dead(struct logstore *ls, struct ls_segment *seg, uint32_t len);
void ls__meta_free(struct logstore *ls, uint64_t bytes);
uint64_t ls__pool_free(struct srsv_space *space);
void ls__on_write(struct logstore *ls, uint64_t bytes, enum ls_writer who);

/* log.c: records, segment files, the restart recipe, verify */
void ls__crc_init(void);
uint32_t ls__crc32c(uint32_t crc, const void *buf, size_t len);
uint64_t ls__rec_encode(unsigned char *buf, unsigned tenant, enum ls_kind kind,
			const void *key, size_t key_len, const void *val,
			size_t val_len);
void ls__rec_seal(unsigned char *buf, uint64_t seq);
int ls__rec_parse(const unsigned char *buf, uint64_t avail,
		  struct ls_rec *r);
int ls__seg_create(struct logstore *ls, struct ls_segment **out);
int ls__seg_write(struct ls_segment *seg, const void *buf, uint64_t len,
		  uint64_t off);
int ls__seg_read(struct ls_segment *seg, void *buf, uint64_t len,
		 uint64_t off);
int ls__sync_all(struct logstore *ls);
void ls__seg_close(struct ls_segment *seg);
int ls__seg_unlink(struct logstore *ls, struct ls_segment *seg);
int ls__replay(struct logstore *ls);

/* index.c */
uint64_t ls__key_hash(unsigned tenant, const void *key, size_t key_len);
int ls__index_init(struct ls_index *idx, size_t hint);
void ls__index_free(struct ls_index *idx);
struct ls_entry *ls__index_find(struct ls_index *idx, uint64_t hash,
				unsigned tenant, const void *key,
				size_t key_len);
/* Replay and verify: add a record found on disk, no pool accounting;
 * @dead[seg->scan_pos] counts what dies. */
int ls__index_scan_add(struct ls_index *idx, const struct ls_rec *r,
		       uint64_t *dead);
void ls__index_scan_finish(struct ls_index *idx, uint64_t *dead);
int ls__index_compare(const struct ls_index *live, const struct ls_index *disk,
		      char *err, size_t len);
/* A writer's record was appended and is used: index it.  @meta_held is
 * the METADATA reservation the writer made for a new entry; the entry
 * uses it or it is released. */
void ls__index_install(struct logstore *ls, const struct ls_rec *r,
		       uint64_t meta_held);
/* The cleaner. */
enum ls_liveness { LS_DEAD = 0, LS_LIVE, LS_GHOST };
enum ls_liveness ls__index_liveness(struct logstore *ls,
				    const struct ls_rec *r, uint32_t *older);
bool ls__index_move(struct logstore *ls, const struct ls_rec *from,
		    struct ls_segment *to, uint32_t to_off);
int ls__index_reclaim(struct logstore *ls, struct ls_segment *seg,
		      const struct ls_rec *recs, size_t nr);

/* cleaner.c */
int64_t ls__clean(struct logstore *ls, uint64_t bytes, unsigned max_segments,
		  bool desperate, bool background);
uint64_t ls__mover_reserved(struct logstore *ls);
int ls__bg_start(struct logstore *ls);
void ls__bg_stop(struct logstore *ls);

#endif /* LOGSTORE_INTERNAL_H */
