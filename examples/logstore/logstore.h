/* SPDX-License-Identifier: MIT */
/*
 * logstore: a log-structured key-value store whose every byte of space is
 * accounted by libspacersv.  The engine's API, for its command line
 * (cli.c), its tests (tests/logstore) and bench/logstore.c.
 *
 * Records are appended to 1 MiB segment files in one directory; an
 * in-memory index maps (tenant, key) to the newest record; an overwritten
 * or deleted record is dead until the cleaner copies its segment's live
 * records forward and deletes the segment.  store.c's opening comment is
 * the map of the engine; docs/engines.md explains the mapping onto pools,
 * flush states and quotas for other engines.
 *
 * Every call returns 0 or a negative errno.  Every call is thread-safe
 * except ls_open(), ls_close() and ls_verify(), which want the store to
 * themselves: no other call may run on it meanwhile.
 */
#ifndef LOGSTORE_H
#define LOGSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libspacersv/spacersv.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A segment file holds at most this many bytes (records never span
 * segments, so this is also the largest record). */
#define LS_SEGMENT_BYTES (UINT64_C(1) << 20)
/* Tenants a store can have (each with its own quota). */
#define LS_MAX_TENANTS 4
/* Longest key, in bytes. */
#define LS_KEY_MAX 255
/* Bytes of a record's header (log.c has the layout). */
#define LS_RECORD_HEADER 32
/* ls_options::cleaner_reserve for "no movers' reserve": the cleaner then
 * copies only into space it finds free (tests of the headroom problem). */
#define LS_NO_CLEANER_RESERVE UINT64_MAX

/* ls_put() / ls_delete() flags. */
enum ls_flags {
	/*
	 * Never wait for space or on an engine lock held across I/O: every
	 * reservation is NOWAIT (no ticket, no flush), the log lock is only
	 * try-locked, and a put that needs a new segment file does not
	 * create one.  Any of those answers -EAGAIN (never -ENOSPC or
	 * -EDQUOT): retry without the flag, from a thread that may block
	 * (the io_uring pattern).  It still takes the short locks nobody
	 * holds across I/O or a wait (the index lock, the library's pool
	 * locks), as btrfs's NOWAIT paths take spinlocks.
	 */
	LS_NOWAIT = 1u << 0
};

/* Who wrote the bytes an ls_options::on_write hook is told about. */
enum ls_writer {
	LS_WRITER_PUT = 0,	/* a put or a delete (tombstone) */
	LS_WRITER_CLEANER = 1	/* the cleaner copying a live record */
};

/* How the cleaner picks the segment to clean. */
enum ls_clean_policy {
	/* LFS's cost-benefit: (1 - u) * age / (1 + u), u the live share,
	 * age the bytes written since the segment was sealed. */
	LS_CLEAN_COST_BENEFIT = 0,
	/* The most dead bytes first (RAMCloud's in-memory cleaner). */
	LS_CLEAN_GREEDY = 1
};

struct ls_options {
	/* The DATA pool: bytes of segment files the directory may hold
	 * (required, at least 4 segments). */
	uint64_t capacity;
	/* The METADATA pool, for index entries (0: capacity / 32, at least
	 * 64 KiB: a 64-byte entry per 4 KiB record, twice over). */
	uint64_t index_capacity;
	/* Tenants (1..LS_MAX_TENANTS; 0 means 1). */
	unsigned tenants;
	/* Per-tenant limit on live value bytes (0: no limit). */
	uint64_t quota[LS_MAX_TENANTS];
	/* The DATA pool's movers' reserve, which the library keeps for the
	 * cleaner's copies (srsv_config::mover_reserve_bytes; 0: one
	 * segment; LS_NO_CLEANER_RESERVE: none).  See cleaner.c. */
	uint64_t cleaner_reserve;
	enum ls_clean_policy clean_policy;
	/* Run the engine's own background cleaner (cleaner.c), between the
	 * free-space watermarks below (0: 15% and 25% of the capacity). */
	bool bg_cleaner;
	unsigned bg_low_pct, bg_high_pct;
	/* SRSV_CTX_MANUAL: the library starts no thread (deterministic
	 * tests): the reclaim a waiting reservation needs runs where
	 * docs/api.md's manual mode says (srsv_ctx_run_pending()). */
	bool manual;
	/* No fdatasync() at all (on tmpfs it costs nothing anyway; the
	 * bench models its device instead).  Crash safety is lost. */
	bool no_sync;
	/* Called on the ctx's config just before srsv_ctx_create() (the
	 * engine sets flush, user, flags and pool sizes first; the hook must
	 * not change flush or user). */
	void (*configure)(struct srsv_config *cfg, void *arg);
	/* Called after every append of @bytes, with no engine lock held:
	 * a rate limiter or a device model (RocksDB's Options::rate_limiter
	 * plays this part for its compactions). */
	void (*on_write)(void *arg, uint64_t bytes, enum ls_writer who);
	void *arg;
};

/* Figures since ls_open() (counters) and now (gauges). */
struct ls_stats {
	/* operations */
	uint64_t puts, deletes, gets;
	uint64_t put_bytes;		/* record bytes appended by writers */
	uint64_t enospc, edquot, eagain; /* puts and deletes refused */
	uint64_t reserve_ns;		/* writers' time inside reservations */
	uint64_t stale;			/* records superseded before indexed */
	/* cleaning */
	uint64_t clean_passes;		/* segments cleaned (or tried) */
	uint64_t segments_cleaned;	/* deleted */
	uint64_t cleaned_bytes;		/* segment bytes given back */
	uint64_t moved_bytes;		/* live bytes copied forward */
	uint64_t moved_records;
	uint64_t lost_copies;		/* copies superseded while copying */
	uint64_t cleaner_enospc;	/* cleaner_reserve() had no room */
	uint64_t clean_aborted;		/* segments left half-copied */
	uint64_t bg_passes;		/* of which by the background cleaner */
	uint64_t flush_calls;		/* flush callback calls that cleaned */
	/* now */
	uint64_t segments;		/* segment files */
	uint64_t file_bytes;		/* their bytes (= live + dead) */
	uint64_t live_bytes;		/* records the index points at */
	uint64_t dead_bytes;		/* pinned in the DATA pool */
	uint64_t entries;		/* index entries */
	uint64_t keys;			/* of which live values */
	uint64_t tombstones;		/* of which live tombstones */
	uint64_t cleaner_reserve_held;	/* the movers' reserve's bytes (DATA
					 * may_use the library keeps) */
	uint64_t capacity;
	/* at ls_open(): what the restart recipe loaded */
	uint64_t loaded_segments, loaded_records, torn_bytes;
};

/* What ls_verify() checked. */
struct ls_verify_report {
	uint64_t segments, records, keys, tombstones, ghosts;
	uint64_t live_bytes, dead_bytes;
	char error[512];		/* the first mismatch, "" if none */
};

struct logstore;

/*
 * Open (or create) the store in @dir.  Existing segment files are
 * replayed (the restart recipe, log.c): the index is rebuilt, a torn
 * record at the end of a segment is cut off, and the pools are loaded
 * with what is on disk.  -ENOSPC if the files hold more than
 * opt->capacity; -EINVAL for bad options; -errno of the file system.
 */
int ls_open(const char *dir, const struct ls_options *opt,
	    struct logstore **out);
/* Stop the background cleaner, make every segment durable, give the
 * cleaner's reservation back, destroy the ctx, free.  NULL: no-op. */
int ls_close(struct logstore *ls);

/* Store @vlen bytes under (@tenant, @key).  -ENOSPC (device full after
 * cleaning), -EDQUOT (tenant over its quota), -EAGAIN (LS_NOWAIT),
 * -EMSGSIZE (record larger than a segment), -EINVAL. */
int ls_put(struct logstore *ls, unsigned tenant, const void *key,
	   size_t key_len, const void *val, size_t val_len, unsigned flags);
/* Delete: writes a tombstone.  -ENOENT if the key has no value. */
int ls_delete(struct logstore *ls, unsigned tenant, const void *key,
	      size_t key_len, unsigned flags);
/* Read the value into @buf (@cap bytes); *@val_len gets its length even
 * when it is larger than @cap (then -ENOBUFS).  -ENOENT, -EIO (bad
 * checksum). */
int ls_get(struct logstore *ls, unsigned tenant, const void *key,
	   size_t key_len, void *buf, size_t cap, size_t *val_len);

/* Clean until @bytes were given back or @max_segments were cleaned (one
 * pass of the cleaner, as the flush callback runs it).  Returns the bytes
 * given back (>= 0) or a negative errno. */
int64_t ls_clean(struct logstore *ls, uint64_t bytes, unsigned max_segments);
/* Make everything appended so far durable. */
int ls_sync(struct logstore *ls);

/* The verify pass: re-scan every segment from disk (every record's
 * checksums), rebuild the index as a restart would and compare it with
 * the live one, read back every live value, and check that the pools'
 * and quotas' counters equal what the engine holds, to the byte.  0, or
 * -EUCLEAN with @rep->error saying what differed.  No put, delete or get
 * may run meanwhile (cleaning passes wait for it). */
int ls_verify(struct logstore *ls, struct ls_verify_report *rep);

int ls_stats(struct logstore *ls, struct ls_stats *st);
/* The library objects, to read their statistics. */
struct srsv_ctx *ls_ctx(struct logstore *ls);
struct srsv_quota *ls_quota(struct logstore *ls, unsigned tenant);
/* The first internal error (a library call that failed where it cannot:
 * an accounting bug), 0 if none; @msg gets its description. */
int ls_error(struct logstore *ls, char *msg, size_t len);

/* The record length of a key and value (header, key, value, padding to
 * 8 bytes): the DATA bytes a put reserves. */
uint64_t ls_record_bytes(size_t key_len, size_t val_len);
/* The METADATA bytes an index entry of a key costs. */
uint64_t ls_entry_bytes(size_t key_len);

#ifdef __cplusplus
}
#endif

#endif /* LOGSTORE_H */
