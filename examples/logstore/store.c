/* SPDX-License-Identifier: MIT */
/*
 * logstore: the store's core.  Pools, puts, gets, deletes, the flush
 * callback.  log.c has the records, the segment files, the restart recipe
 * and verify; index.c what dies when a key changes; cleaner.c cleaning.
 *
 * THE DEVICE
 *
 * A directory with a byte budget, --capacity: the DATA pool's total.  The
 * segment files' bytes are the pool's used + pinned bytes, so the pool is
 * exactly the directory's usage.  A second pool, METADATA, holds the
 * index's entries (index.c).  Nothing is unallocated: the pools never
 * grow (ALLOC_CHUNK answers -ENOSPC, which marks them full) and metadata
 * never overcommits.
 *
 * THE LIFE OF A PUT'S BYTES
 *
 *   ls_put()     srsv_quota_reserve(tenant, DATA), then
 *                srsv_space_reserve(DATA, record, FLUSH_DATA) and
 *                srsv_space_reserve(METADATA, entry, FLUSH_ALL): may_use.
 *                Reservations first, with no lock held: they may wait
 *                while the library asks this engine to clean.
 *   the append   under the log lock: srsv_space_alloc() (reserved), the
 *                pwrite(), srsv_space_commit_used() (used), the index
 *                update; then srsv_quota_charge_used().
 *   overwritten  the old record is dead: srsv_space_pin() (pinned), and
 *   or deleted   its bytes leave the tenant's quota (free_used)
 *   cleaned      the cleaner copies the segment's live records forward,
 *                commits (fdatasync), deletes the file, and
 *                srsv_space_unpin()s all of it: free, and the tickets
 *                waiting for it are granted.
 *
 * THE FLUSH STATES: what this engine has
 *
 *   DELAYED_ITEMS*, DELAYED_REFS*   none: the index is updated in the
 *                    put itself; -EOPNOTSUPP (the library then stops
 *                    asking)
 *   DELALLOC*        none: a put's bytes are in the file when it returns
 *                    (no dirty buffer waits for writeback)
 *   ALLOC_CHUNK*     -ENOSPC: the directory's budget is fixed
 *   RUN_DELAYED_IPUTS  none
 *   COMMIT_TRANS     cleaning (cleaner.c): a bounded batch of segments,
 *                    the most profitable first, each copied, committed,
 *                    deleted and unpinned
 *   RESET_ZONES, RECLAIM_ZONES, RECLAIM_CHUNKS  none (not zoned, no
 *                    block groups)
 *
 * Why cleaning is COMMIT_TRANS.  Dead records are pinned bytes, and
 * COMMIT_TRANS is the state whose contract is pinned -> free; the async
 * data walk (what FLUSH_DATA tickets wait on) reaches it after the states
 * this engine lacks, and calls it again while it makes progress.  It is
 * also what a btrfs commit is: make the new state durable (the copies,
 * and every segment written since the last commit), then release what
 * the old state pinned.  RECLAIM_ZONES describes the copying better
 * ("move live data out of mostly dead zones") but belongs to zoned ctxs,
 * where freed bytes are zone_unusable, not pinned, and the library picks
 * the zones itself.  An LSM tree maps the same way: compaction is its
 * COMMIT_TRANS (docs/engines.md).
 *
 * QUOTAS
 *
 * One srsv_quota per tenant, charged with its live value bytes: reserved
 * (DATA) before the append, used after it, freed when the value dies.
 * There is no quota flush callback: nothing a flush could do frees a
 * tenant's live bytes, so a tenant at its limit gets -EDQUOT at once, and
 * an overwrite at the limit too (the new copy is reserved before the old
 * one dies, as a btrfs COW overwrite is).  Tombstones are not charged: a
 * tenant at its limit must be able to delete.  So must a full device: a
 * delete that finds no room takes its tombstone's bytes through the
 * movers' class (write_record() says why), as btrfs's unlink steals from
 * its global reserve.
 *
 * NOWAIT
 *
 * ls_put(..., LS_NOWAIT) makes every reservation with
 * SRSV_RESERVE_NOWAIT, only try-locks the log lock (held across the
 * pwrite), and does not create a segment file; any of those is -EAGAIN,
 * and the caller retries from a thread that may block.  It takes the
 * index lock and the library's pool locks, which nobody holds across I/O
 * or a wait.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* Segments a cleaning pass asked for by the library cleans at most (fully
 * dead ones included; those cost an unlink each).  Bounded, as btrfs
 * bounds its reclaim passes: 16 segments of copying is at most 16 MiB of
 * writes, a few tens of milliseconds on the bench's device. */
#define FLUSH_CLEAN_SEGMENTS 16
/* Default free-space watermarks of the background cleaner, % of the
 * capacity: start below 15%, stop above 25% (bcachefs's copygc runs from
 * such watermarks too). */
#define BG_LOW_PCT 15
#define BG_HIGH_PCT 25
/* The index pool by default: a 64-byte entry per 4 KiB record is 1/64 of
 * the capacity; twice that leaves room for ghosts and small records. */
#define INDEX_CAPACITY_DIV 32
#define INDEX_CAPACITY_MIN (64 * KiB)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- errors ---- */

int ls__check(struct logstore *ls, int ret, const char *what,
	      const char *file, int line)
{
	if (ret >= 0)
		return ret;
	pthread_mutex_lock(&ls->err_lock);
	if (!ls->err) {
		ls->err = ret;
		snprintf(ls->err_msg, sizeof(ls->err_msg), "%s:%d: %s = %d (%s)",
			 file, line, what, ret, strerror(-ret));
		fprintf(stderr, "logstore: %s\n", ls->err_msg);
	}
	pthread_mutex_unlock(&ls->err_lock);
	return ret;
}

int ls_error(struct logstore *ls, char *msg, size_t len)
{
	int err;

	pthread_mutex_lock(&ls->err_lock);
	err = ls->err;
	if (err && msg && len)
		snprintf(msg, len, "%s", ls->err_msg);
	pthread_mutex_unlock(&ls->err_lock);
	return err;
}

/* ---- helpers for the other files ---- */

/* A record of @seg died (index lock held). */
void ls__pin_dead(struct logstore *ls, struct ls_segment *seg, uint32_t len)
{
	seg->dead += len;
	LS_CHECK(ls, srsv_space_pin(ls->data, len));
}

/* Index entries removed: nothing refers to them, free at once. */
void ls__meta_free(struct logstore *ls, uint64_t bytes)
{
	if (!LS_CHECK(ls, srsv_space_pin(ls->meta, bytes)))
		LS_CHECK(ls, srsv_space_unpin(ls->meta, bytes));
}

/* Bytes of @space nobody has: what a reservation could take now. */
uint64_t ls__pool_free(struct srsv_space *space)
{
	struct srsv_space_info i;
	uint64_t held;

	if (srsv_space_snapshot(space, &i, NULL, 0, NULL))
		return 0;
	held = i.used + i.reserved + i.pinned + i.may_use + i.readonly +
	       i.zone_unusable;
	return i.total > held ? i.total - held : 0;
}

void ls__on_write(struct logstore *ls, uint64_t bytes, enum ls_writer who)
{
	if (ls->opt.on_write)
		ls->opt.on_write(ls->opt.arg, bytes, who);
}

/* ---- the flush callback ---- */

/*
 * Called by the library's workers (or srsv_ctx_run_pending() in manual
 * mode) with no library lock held, never with one of ours held by this
 * thread: a put reserves before it takes any lock.  @bytes is what the
 * waiting tickets lack (data walk) or a quarter of the pool's debt
 * (preemptive calls: the dead bytes, all pinned).
 */
int ls__flush(struct srsv_space *space, enum srsv_flush_state state,
	      uint64_t bytes, bool for_preempt, void *user)
{
	struct logstore *ls = user;
	int64_t n;

	switch (state) {
	case SRSV_STATE_COMMIT_TRANS:
		/* Nothing is ever pinned in METADATA (entries are freed at
		 * once): a preemptive commit there would clean for nothing.
		 * Tickets waiting on it are another matter: cleaning
		 * reclaims ghosts' entries. */
		if (space == ls->meta && for_preempt)
			return 0;
		atomic_fetch_add(&ls->c.flush_calls, 1);
		n = ls__clean(ls, bytes, for_preempt ? 1 : FLUSH_CLEAN_SEGMENTS,
			      !for_preempt, false);
		/* "Nothing to clean" is not an error of the state: the walk
		 * sees no progress and fails its tickets with -ENOSPC. */
		return n < 0 && n != -ENOSPC ? (int)n : 0;
	case SRSV_STATE_ALLOC_CHUNK:
	case SRSV_STATE_ALLOC_CHUNK_FORCE:
		return -ENOSPC;
	default:
		return -EOPNOTSUPP;
	}
}

/* ---- writes ---- */

/*
 * Append @buf (a record, encoded, @len bytes) to the writers' head and
 * index it, all under the log lock, so that records are indexed in
 * sequence order.  @meta_held: the METADATA reservation for its entry.
 */
static int append_and_index(struct logstore *ls, unsigned char *buf,
			    uint64_t len, struct ls_rec *r, uint64_t meta_held,
			    bool nowait)
{
	struct ls_segment *seg;
	int ret;

	if (nowait) {
		if (pthread_mutex_trylock(&ls->log_lock))
			return -EAGAIN;
	} else {
		pthread_mutex_lock(&ls->log_lock);
	}
	seg = ls->head;
	if (!seg || seg->size + len > LS_SEGMENT_BYTES) {
		if (nowait) {
			pthread_mutex_unlock(&ls->log_lock);
			return -EAGAIN;		/* would create a file */
		}
		if (seg) {
			seg->sealed = true;
			seg->sealed_at = ls->written;
		}
		ls->head = NULL;
		ret = ls__seg_create(ls, &seg);
		if (ret) {
			pthread_mutex_unlock(&ls->log_lock);
			return LS_CHECK(ls, ret);
		}
		ls->head = seg;
	}
	ls__rec_seal(buf, ls->next_seq);
	ret = LS_CHECK(ls, srsv_space_alloc(ls->data, len));
	if (ret) {
		pthread_mutex_unlock(&ls->log_lock);
		return ret;
	}
	ret = ls__seg_write(seg, buf, len, seg->size);
	if (ret) {
		LS_CHECK(ls, srsv_space_free_reserved(ls->data, len));
		pthread_mutex_unlock(&ls->log_lock);
		return LS_CHECK(ls, ret);
	}
	r->seg = seg;
	r->off = (uint32_t)seg->size;
	r->seq = ls->next_seq++;
	seg->size += len;
	seg->synced = false;
	ls->written += len;
	LS_CHECK(ls, srsv_space_commit_used(ls->data, len));
	ls__index_install(ls, r, meta_held);
	pthread_mutex_unlock(&ls->log_lock);
	return 0;
}

static int check_key(const struct logstore *ls, unsigned tenant, const void *key,
		     size_t key_len)
{
	if (!ls || !key || !key_len || key_len > LS_KEY_MAX ||
	    tenant >= ls->tenants)
		return -EINVAL;
	return 0;
}

static void count_refusal(struct logstore *ls, int ret)
{
	if (ret == -ENOSPC)
		atomic_fetch_add(&ls->c.enospc, 1);
	else if (ret == -EDQUOT)
		atomic_fetch_add(&ls->c.edquot, 1);
	else if (ret == -EAGAIN)
		atomic_fetch_add(&ls->c.eagain, 1);
}

static int write_record(struct logstore *ls, unsigned tenant, enum ls_kind kind,
			const void *key, size_t key_len, const void *val,
			size_t val_len, unsigned flags)
{
	bool nowait = flags & LS_NOWAIT;
	unsigned rflags = nowait ? SRSV_RESERVE_NOWAIT : 0;
	uint64_t len = ls_record_bytes(key_len, val_len);
	uint64_t meta = ls_entry_bytes(key_len), t0;
	struct srsv_quota *q = ls->quota[tenant];
	bool charged = kind == LS_KIND_PUT;
	struct ls_rec r;
	unsigned char *buf;
	int ret;

	if (len > LS_SEGMENT_BYTES)
		return -EMSGSIZE;
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	/* The record and its body checksum, before any reservation or
	 * lock: CPU work nobody waits behind. */
	ls__rec_encode(buf, tenant, kind, key, key_len, val, val_len);

	t0 = now_ns();
	ret = charged ? srsv_quota_reserve(q, SRSV_QUOTA_DATA, len, rflags) : 0;
	if (!ret) {
		/* FLUSH_DATA: a normal ticket if it does not fit, served by
		 * the library's async data walk, which calls COMMIT_TRANS. */
		ret = srsv_space_reserve(ls->data, len, SRSV_FLUSH_DATA, rflags);
		/*
		 * A full device must still take deletes: they are what makes
		 * room.  A tombstone is a mover's write in the library's
		 * sense: it frees more than it takes (the value it kills,
		 * which the cleaner then reclaims, against a header and a
		 * key), so it may use the movers' class: the movers'
		 * reserve, else the pool passing the writers' queued
		 * tickets.  NO_FLUSH: the walk just failed, waiting again
		 * would find nothing.  Only once the device is full, so
		 * that deletes do not draw on the reserve while writers
		 * can still be served; a tombstone is at most 288 bytes
		 * against the reserve's segment, and every byte the cleaner
		 * frees refills the reserve first.  As btrfs's unlink
		 * steals from the global reserve.
		 */
		if (ret == -ENOSPC && kind == LS_KIND_DELETE)
			ret = srsv_space_reserve(ls->data, len, SRSV_NO_FLUSH,
						 SRSV_RESERVE_MOVER);
		if (!ret) {
			ret = srsv_space_reserve(ls->meta, meta, SRSV_FLUSH_ALL,
						 rflags);
			if (ret)
				LS_CHECK(ls, srsv_space_release(ls->data, len));
		}
		if (ret && charged)
			LS_CHECK(ls, srsv_quota_release(q, SRSV_QUOTA_DATA, len));
	}
	atomic_fetch_add(&ls->c.reserve_ns, now_ns() - t0);
	if (ret) {
		count_refusal(ls, ret);
		free(buf);
		return ret;
	}

	memset(&r, 0, sizeof(r));
	r.len = (uint32_t)len;
	r.tenant = (uint8_t)tenant;
	r.tombstone = kind == LS_KIND_DELETE;
	r.key_len = (uint16_t)key_len;
	r.key = buf + LS_RECORD_HEADER;
	r.hash = ls__key_hash(tenant, key, key_len);
	ret = append_and_index(ls, buf, len, &r, meta, nowait);
	free(buf);
	if (ret) {
		/* Nothing was written: every reservation goes back. */
		LS_CHECK(ls, srsv_space_release(ls->meta, meta));
		LS_CHECK(ls, srsv_space_release(ls->data, len));
		if (charged)
			LS_CHECK(ls, srsv_quota_release(q, SRSV_QUOTA_DATA, len));
		count_refusal(ls, ret);
		return ret;
	}
	if (charged)
		LS_CHECK(ls, srsv_quota_charge_used(q, len));
	atomic_fetch_add(&ls->c.put_bytes, len);
	atomic_fetch_add(kind == LS_KIND_PUT ? &ls->c.puts : &ls->c.deletes, 1);
	ls__on_write(ls, len, LS_WRITER_PUT);
	return 0;
}

int ls_put(struct logstore *ls, unsigned tenant, const void *key,
	   size_t key_len, const void *val, size_t val_len, unsigned flags)
{
	int ret = check_key(ls, tenant, key, key_len);

	if (ret)
		return ret;
	if ((!val && val_len) || (flags & ~(unsigned)LS_NOWAIT))
		return -EINVAL;
	return write_record(ls, tenant, LS_KIND_PUT, key, key_len, val,
			    val_len, flags);
}

int ls_delete(struct logstore *ls, unsigned tenant, const void *key,
	      size_t key_len, unsigned flags)
{
	struct ls_entry *e;
	bool exists;
	int ret = check_key(ls, tenant, key, key_len);

	if (ret)
		return ret;
	if (flags & ~(unsigned)LS_NOWAIT)
		return -EINVAL;
	pthread_mutex_lock(&ls->index_lock);
	e = ls__index_find(&ls->index, ls__key_hash(tenant, key, key_len),
			   tenant, key, key_len);
	exists = e && !e->tombstone;
	pthread_mutex_unlock(&ls->index_lock);
	if (!exists)
		return -ENOENT;
	/* A delete racing another one writes a second tombstone: the index
	 * sorts it out (index.c). */
	return write_record(ls, tenant, LS_KIND_DELETE, key, key_len, NULL, 0,
			    flags);
}

/* ---- reads ---- */

int ls_get(struct logstore *ls, unsigned tenant, const void *key,
	   size_t key_len, void *buf, size_t cap, size_t *val_len)
{
	struct ls_segment *seg;
	struct ls_entry *e;
	struct ls_rec r;
	uint64_t seq;
	uint32_t off, len;
	unsigned char *rec;
	int ret = check_key(ls, tenant, key, key_len);

	if (ret)
		return ret;
	if (!val_len || (!buf && cap))
		return -EINVAL;
	pthread_mutex_lock(&ls->index_lock);
	e = ls__index_find(&ls->index, ls__key_hash(tenant, key, key_len),
			   tenant, key, key_len);
	if (!e || e->tombstone) {
		pthread_mutex_unlock(&ls->index_lock);
		return -ENOENT;
	}
	/* The segment stays open while we read it: the cleaner waits for
	 * its readers before it closes the file. */
	seg = e->seg;
	off = e->off;
	len = e->len;
	seq = e->seq;
	seg->readers++;
	pthread_mutex_unlock(&ls->index_lock);

	rec = malloc(len);
	ret = rec ? ls__seg_read(seg, rec, len, off) : -ENOMEM;

	pthread_mutex_lock(&ls->index_lock);
	if (!--seg->readers)
		pthread_cond_broadcast(&ls->readers_done);
	pthread_mutex_unlock(&ls->index_lock);

	if (!ret && (ls__rec_parse(rec, len, &r) || r.seq != seq ||
		     r.tombstone || r.tenant != tenant ||
		     r.key_len != key_len || memcmp(r.key, key, key_len)))
		ret = -EIO;
	if (!ret) {
		*val_len = r.val_len;
		if (r.val_len > cap)
			ret = -ENOBUFS;
		else if (r.val_len)
			memcpy(buf, r.val, r.val_len);
		atomic_fetch_add(&ls->c.gets, 1);
	}
	free(rec);
	return ret;
}

/* ---- open, close ---- */

static int check_options(const struct ls_options *o)
{
	unsigned tenants = o->tenants ? o->tenants : 1;

	if (o->capacity < 4 * LS_SEGMENT_BYTES || o->capacity > SRSV_MAX_BYTES ||
	    o->index_capacity > SRSV_MAX_BYTES || tenants > LS_MAX_TENANTS ||
	    o->bg_low_pct > 100 || o->bg_high_pct > 100 ||
	    (o->bg_low_pct && o->bg_high_pct && o->bg_low_pct >= o->bg_high_pct) ||
	    (o->clean_policy != LS_CLEAN_COST_BENEFIT &&
	     o->clean_policy != LS_CLEAN_GREEDY))
		return -EINVAL;
	for (unsigned t = 0; t < LS_MAX_TENANTS; t++)
		if (o->quota[t] > SRSV_MAX_BYTES)
			return -EINVAL;
	return 0;
}

/* Every segment keeps its file open: make sure the process may have that
 * many (a segment per MiB of capacity, and some for everything else). */
static int check_fd_limit(uint64_t capacity)
{
	uint64_t need = capacity / LS_SEGMENT_BYTES + 64;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 0;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
		if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
			return -EMFILE;
		rl.rlim_cur = need;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			return -EMFILE;
	}
	return 0;
}

static void free_store(struct logstore *ls)
{
	struct ls_segment *seg, *next;

	for (seg = ls->segments; seg; seg = next) {
		next = seg->next;
		ls__seg_close(seg);
	}
	ls__index_free(&ls->index);
	if (ls->dirfd >= 0)
		close(ls->dirfd);
	pthread_mutex_destroy(&ls->clean_lock);
	pthread_mutex_destroy(&ls->log_lock);
	pthread_mutex_destroy(&ls->index_lock);
	pthread_cond_destroy(&ls->readers_done);
	pthread_mutex_destroy(&ls->bg_lock);
	pthread_cond_destroy(&ls->bg_cond);
	pthread_mutex_destroy(&ls->err_lock);
	free(ls->clean_buf);
	free(ls->clean_recs);
	free(ls->clean_order);
	free(ls->dir);
	free(ls);
}

int ls_open(const char *dir, const struct ls_options *opt,
	    struct logstore **out)
{
	pthread_condattr_t cattr;
	struct srsv_config cfg;
	struct logstore *ls;
	int ret;

	if (!dir || !opt || !out)
		return -EINVAL;
	ret = check_options(opt);
	if (ret)
		return ret;
	ret = check_fd_limit(opt->capacity);
	if (ret)
		return ret;
	ls__crc_init();
	ls = calloc(1, sizeof(*ls));
	if (!ls)
		return -ENOMEM;
	ls->opt = *opt;
	ls->dirfd = -1;
	ls->tenants = opt->tenants ? opt->tenants : 1;
	if (!ls->opt.index_capacity) {
		ls->opt.index_capacity = opt->capacity / INDEX_CAPACITY_DIV;
		if (ls->opt.index_capacity < INDEX_CAPACITY_MIN)
			ls->opt.index_capacity = INDEX_CAPACITY_MIN;
	}
	if (!ls->opt.bg_low_pct || !ls->opt.bg_high_pct) {
		ls->opt.bg_low_pct = BG_LOW_PCT;
		ls->opt.bg_high_pct = BG_HIGH_PCT;
	}
	/* The cleaner's headroom: one segment (cleaner.c says why). */
	ls->mover_reserve =
		opt->cleaner_reserve == LS_NO_CLEANER_RESERVE ? 0 :
		opt->cleaner_reserve ? opt->cleaner_reserve : LS_SEGMENT_BYTES;
	ls->next_id = 1;
	ls->next_seq = 1;
	pthread_mutex_init(&ls->clean_lock, NULL);
	pthread_mutex_init(&ls->log_lock, NULL);
	pthread_mutex_init(&ls->index_lock, NULL);
	pthread_cond_init(&ls->readers_done, NULL);
	pthread_mutex_init(&ls->bg_lock, NULL);
	pthread_condattr_init(&cattr);
	pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
	pthread_cond_init(&ls->bg_cond, &cattr);
	pthread_condattr_destroy(&cattr);
	pthread_mutex_init(&ls->err_lock, NULL);
	ls->dir = strdup(dir);
	ls->clean_buf = malloc(LS_SEGMENT_BYTES);
	if (!ls->dir || !ls->clean_buf ||
	    ls__index_init(&ls->index, opt->capacity / (4 * KiB))) {
		free_store(ls);
		return -ENOMEM;
	}
	if (mkdir(dir, 0755) && errno != EEXIST) {
		ret = -errno;
		free_store(ls);
		return ret;
	}
	ls->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ls->dirfd < 0) {
		ret = -errno;
		free_store(ls);
		return ret;
	}

	srsv_config_init(&cfg);
	cfg.flags = opt->manual ? SRSV_CTX_MANUAL : 0;
	cfg.pool_bytes[SRSV_POOL_DATA] = opt->capacity;
	cfg.pool_bytes[SRSV_POOL_METADATA] = ls->opt.index_capacity;
	cfg.unallocated_bytes = 0;
	/* "One item's worth" is one index entry (a 16-byte key's). */
	cfg.item_bytes = ls_entry_bytes(16);
	/* The movers' reserve the cleaner copies into (cleaner.c, "THE
	 * HEADROOM"); the library keeps it charged and refills it first. */
	cfg.mover_reserve_bytes[SRSV_POOL_DATA] = ls->mover_reserve;
	if (opt->configure)
		opt->configure(&cfg, opt->arg);
	cfg.flush = ls__flush;
	cfg.user = ls;
	ret = srsv_ctx_create(&cfg, &ls->ctx);
	if (ret) {
		free_store(ls);
		return ret;
	}
	ls->data = srsv_ctx_space(ls->ctx, SRSV_POOL_DATA);
	ls->meta = srsv_ctx_space(ls->ctx, SRSV_POOL_METADATA);
	for (unsigned t = 0; t < ls->tenants && !ret; t++)
		ret = srsv_quota_create(ls->ctx, t, SRSV_QUOTA_NO_LIMIT,
					&ls->quota[t]);
	if (!ret)
		ret = ls__replay(ls);
	for (unsigned t = 0; t < ls->tenants && !ret; t++)
		if (opt->quota[t])
			ret = srsv_quota_set_limit(ls->quota[t], opt->quota[t]);
	if (!ret && opt->bg_cleaner)
		ret = ls__bg_start(ls);
	if (ret) {
		srsv_ctx_destroy(ls->ctx);
		free_store(ls);
		return ret;
	}
	*out = ls;
	return 0;
}

int ls_sync(struct logstore *ls)
{
	int ret;

	if (!ls)
		return -EINVAL;
	pthread_mutex_lock(&ls->clean_lock);
	ret = ls__sync_all(ls);
	pthread_mutex_unlock(&ls->clean_lock);
	return ret;
}

int ls_close(struct logstore *ls)
{
	int ret;

	if (!ls)
		return 0;
	ls__bg_stop(ls);
	/* No callback runs after this: the library's workers are joined. */
	ret = srsv_ctx_shutdown(ls->ctx);
	pthread_mutex_lock(&ls->clean_lock);
	if (!ret)
		ret = ls__sync_all(ls);
	pthread_mutex_unlock(&ls->clean_lock);
	srsv_ctx_destroy(ls->ctx);
	free_store(ls);
	return ret;
}

int64_t ls_clean(struct logstore *ls, uint64_t bytes, unsigned max_segments)
{
	if (!ls || !max_segments)
		return -EINVAL;
	return ls__clean(ls, bytes, max_segments, true, false);
}

/* ---- figures ---- */

struct srsv_ctx *ls_ctx(struct logstore *ls)
{
	return ls ? ls->ctx : NULL;
}

struct srsv_quota *ls_quota(struct logstore *ls, unsigned tenant)
{
	return ls && tenant < ls->tenants ? ls->quota[tenant] : NULL;
}

int ls_stats(struct logstore *ls, struct ls_stats *st)
{
	const struct ls_counters *c;

	if (!ls || !st)
		return -EINVAL;
	c = &ls->c;
	memset(st, 0, sizeof(*st));
	st->puts = atomic_load(&c->puts);
	st->deletes = atomic_load(&c->deletes);
	st->gets = atomic_load(&c->gets);
	st->put_bytes = atomic_load(&c->put_bytes);
	st->enospc = atomic_load(&c->enospc);
	st->edquot = atomic_load(&c->edquot);
	st->eagain = atomic_load(&c->eagain);
	st->reserve_ns = atomic_load(&c->reserve_ns);
	st->stale = atomic_load(&c->stale);
	st->clean_passes = atomic_load(&c->clean_passes);
	st->segments_cleaned = atomic_load(&c->segments_cleaned);
	st->cleaned_bytes = atomic_load(&c->cleaned_bytes);
	st->moved_bytes = atomic_load(&c->moved_bytes);
	st->moved_records = atomic_load(&c->moved_records);
	st->lost_copies = atomic_load(&c->lost_copies);
	st->cleaner_enospc = atomic_load(&c->cleaner_enospc);
	st->clean_aborted = atomic_load(&c->clean_aborted);
	st->bg_passes = atomic_load(&c->bg_passes);
	st->flush_calls = atomic_load(&c->flush_calls);
	st->cleaner_reserve_held = ls__mover_reserved(ls);
	st->capacity = ls->opt.capacity;
	st->loaded_segments = ls->loaded_segments;
	st->loaded_records = ls->loaded_records;
	st->torn_bytes = ls->torn_bytes;

	pthread_mutex_lock(&ls->log_lock);
	pthread_mutex_lock(&ls->index_lock);
	for (struct ls_segment *s = ls->segments; s; s = s->next) {
		st->segments++;
		st->file_bytes += s->size;
		st->dead_bytes += s->dead;
	}
	st->live_bytes = ls->index.live_bytes;
	st->entries = ls->index.nr;
	st->keys = ls->index.keys;
	st->tombstones = ls->index.tombstones;
	pthread_mutex_unlock(&ls->index_lock);
	pthread_mutex_unlock(&ls->log_lock);
	return 0;
}
