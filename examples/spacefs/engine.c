/* SPDX-License-Identifier: MIT */
/*
 * spacefs engine: the pools, the transaction, the flush callback.
 *
 * THE DEVICE
 *
 * The file system has a fixed capacity, carved as btrfs carves a device:
 * a DATA pool (starting with one data chunk, or what the backing tree
 * already uses), a METADATA pool (the "meta" mount option), and the rest
 * unallocated.  ALLOC_CHUNK_FORCE on the DATA pool (the async data walk
 * forces growth first) and ALLOC_CHUNK / ALLOC_CHUNK_FORCE on the METADATA
 * pool grow them from the unallocated space; the last data chunk takes
 * whatever is left, so data can fill the device up to what metadata holds.
 * Like btrfs's should_alloc_chunk(), a non-forced metadata chunk is only
 * allocated when the pool's real usage (used + reserved + pinned) reaches
 * 80% of it: reservations alone are reclaimable by flushing, and a metadata
 * chunk allocated for them would be taken from data for good.
 *
 * THE TRANSACTION
 *
 * Data is copy-on-write in its accounting (the backing file is overwritten
 * in place, but the old block is treated as btrfs treats it): a page that
 * writeback rewrites, truncates or deletes is pinned, used -> pinned, until
 * the next commit; so is the old copy of a metadata leaf, copied once per
 * transaction by the first change to it.  Leaves are shared: the items of
 * SFS_LEAF_INODES consecutive inode numbers live in one, as btrfs's items
 * keyed by inode number share leaves, so a small file costs a
 * thirty-second of a leaf, not 16 KiB; a leaf is allocated with its first
 * inode and freed (pinned) with its last.  COMMIT_TRANS runs the delayed
 * items, fdatasync()s every file written in the transaction, starts the
 * next one and only then unpins what the old one pinned (the new copies are
 * durable, the old ones may be reused), in both pools, and frees the
 * tenants' per-transaction quota (srsv_quota_commit()) and their deleted
 * bytes.
 *
 * THE FLUSH CALLBACK
 *
 *   DELAYED_ITEMS_NR   apply a batch of delayed items (inode updates)
 *   DELAYED_ITEMS      apply all of them
 *   DELALLOC(_WAIT)    write back the oldest dirty extents, bounded: until
 *                      the metadata they give back covers the request, at
 *                      least WB_CLUSTER_META and at most WB_BATCH_BYTES
 *   DELALLOC_FULL      write back everything dirty (a preemptive call is
 *                      bounded to WB_BATCH_BYTES: nobody is waiting yet)
 *   ALLOC_CHUNK(_FORCE) grow the pool from unallocated space
 *   COMMIT_TRANS       commit
 *   the rest           -EOPNOTSUPP (no delayed refs, iputs or zones here)
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "internal.h"

/* Global reserve: four items' worth, so that deletions on a full file
 * system can steal what they need (FLUSH_ALL_STEAL keeps 10% of it). */
#define GLOBAL_RSV_BYTES (4 * SFS_ITEM)
/* Delayed items applied per DELAYED_ITEMS_NR call at most: the "NR"
 * states are the cheap ones, a bounded batch. */
#define ITEMS_BATCH 32u
/* Data written back per DELALLOC* call at most: 4 MiB of pwrite() keeps
 * one callback in the low milliseconds, so a flusher never holds up the
 * walk (btrfs bounds its reclaim passes too). */
#define WB_BATCH_BYTES (4 * SFS_MiB)
/* Metadata a DELALLOC call aims to give back at least: sixteen extents'
 * worth.  One extent per call would cost a callback, a lock round trip and
 * the pool transitions per 4 KiB page; a cluster amortises them, as the
 * kernel's writeback clusters pages. */
#define WB_CLUSTER_META (16 * SFS_ITEM)
/* Non-forced metadata chunks only when real usage reaches 80% (btrfs's
 * should_alloc_chunk() threshold). */
#define META_ALLOC_PCT 80

static const struct srsv_space_info empty_info;

/* ---- configuration ---- */

void sfs_config_init(struct sfs_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->capacity = SFS_GiB;
	cfg->meta_bytes = 16 * SFS_MiB;
	cfg->cache_bytes = 64 * SFS_MiB;
	cfg->preempt = true;
	cfg->data_preempt = true;
	/* btrfs's default commit interval. */
	cfg->commit_interval = 30;
}

int sfs_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (tolower((unsigned char)*end)) {
	case 'k':
		shift = 10;
		break;
	case 'm':
		shift = 20;
		break;
	case 'g':
		shift = 30;
		break;
	case 't':
		shift = 40;
		break;
	case '\0':
		break;
	default:
		return -EINVAL;
	}
	if (shift) {
		end++;
		if (*end == 'i' || *end == 'I')
			end++;
		if (*end == 'b' || *end == 'B')
			end++;
	}
	if (*end || (shift && v > (SRSV_MAX_BYTES >> shift)))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

/* ---- trace ---- */

uint64_t sfs__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sfs__trace(struct sfs *fs, const char *fmt, ...)
{
	va_list ap;

	if (!fs->trace)
		return;
	pthread_mutex_lock(&fs->trace_lock);
	fprintf(fs->trace, "%.6f ",
		(double)(sfs__now_ns() - fs->t0_ns) / 1e9);
	va_start(ap, fmt);
	vfprintf(fs->trace, fmt, ap);
	va_end(ap);
	fputc('\n', fs->trace);
	pthread_mutex_unlock(&fs->trace_lock);
}

/* ---- pins and leaves (trans_lock) ---- */

void sfs__pin_locked(struct sfs *fs, struct sinode *ino, uint64_t pages,
		     uint64_t meta)
{
	if (pages) {
		SFS_MUST(srsv_space_pin(fs->data, pages * SFS_PAGE));
		fs->pinned_data += pages * SFS_PAGE;
		if (ino && ino->tenant >= 0)
			fs->tenants[ino->tenant].pinned_pages += pages;
	}
	if (meta) {
		SFS_MUST(srsv_space_pin(fs->meta, meta));
		fs->pinned_meta += meta;
	}
}

static size_t leaf_slot(uint64_t id, size_t size)
{
	return (size_t)((id * UINT64_C(0x9e3779b97f4a7c15)) >> 32) &
	       (size - 1);
}

static struct leaf *leaf_find(struct sfs *fs, uint64_t id)
{
	if (!fs->leaves_size)
		return NULL;
	for (struct leaf *l = fs->leaves[leaf_slot(id, fs->leaves_size)]; l;
	     l = l->next)
		if (l->id == id)
			return l;
	return NULL;
}

/* The leaf of @id, created (not yet counted) if missing; NULL: no memory. */
static struct leaf *leaf_get(struct sfs *fs, uint64_t id)
{
	struct leaf *l = leaf_find(fs, id);
	size_t slot;

	if (l)
		return l;
	if (fs->nr_leaves >= 2 * fs->leaves_size) {
		size_t size = fs->leaves_size ? fs->leaves_size * 2 : 256;
		struct leaf **t = calloc(size, sizeof(*t));

		if (t) {
			for (size_t i = 0; i < fs->leaves_size; i++) {
				struct leaf *n, *next;

				for (n = fs->leaves[i]; n; n = next) {
					next = n->next;
					n->next = t[leaf_slot(n->id, size)];
					t[leaf_slot(n->id, size)] = n;
				}
			}
			free(fs->leaves);
			fs->leaves = t;
			fs->leaves_size = size;
		} else if (!fs->leaves_size) {
			return NULL;
		}
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->id = id;
	slot = leaf_slot(id, fs->leaves_size);
	l->next = fs->leaves[slot];
	fs->leaves[slot] = l;
	return l;
}

static void leaf_remove(struct sfs *fs, struct leaf *l)
{
	struct leaf **pp = &fs->leaves[leaf_slot(l->id, fs->leaves_size)];

	for (; *pp; pp = &(*pp)->next) {
		if (*pp == l) {
			*pp = l->next;
			free(l);
			return;
		}
	}
}

int sfs__leaf_add_scanned(struct sfs *fs, uint64_t ino)
{
	struct leaf *l;

	pthread_mutex_lock(&fs->trans_lock);
	l = leaf_get(fs, ino / SFS_LEAF_INODES);
	if (l) {
		if (!l->nr_inodes++)
			fs->nr_leaves++;
		fs->nr_inode_items++;
	}
	pthread_mutex_unlock(&fs->trans_lock);
	return l ? 0 : -ENOMEM;
}

void sfs__leaves_destroy(struct sfs *fs)
{
	for (size_t i = 0; i < fs->leaves_size; i++) {
		struct leaf *l, *next;

		for (l = fs->leaves[i]; l; l = next) {
			next = l->next;
			free(l);
		}
	}
	free(fs->leaves);
	fs->leaves = NULL;
	fs->leaves_size = 0;
}

/* Copy @l for this transaction if it has not been yet: the old copy is
 * pinned; returns the bytes of the new copy (SFS_NODE or 0). */
static uint64_t leaf_cow(struct sfs *fs, struct leaf *l)
{
	if (l->cow_trans == fs->trans)
		return 0;
	sfs__pin_locked(fs, NULL, 0, SFS_NODE);
	l->cow_trans = fs->trans;
	return SFS_NODE;
}

uint64_t sfs__leaf_cow_locked(struct sfs *fs, struct sinode *ino)
{
	struct leaf *l;

	if (ino->deleted)
		return 0;
	l = leaf_get(fs, ino->ino / SFS_LEAF_INODES);
	if (!l)
		return 0;	/* no memory: the leaf is not counted */
	if (!ino->leaf_exists) {
		ino->leaf_exists = true;
		fs->nr_inode_items++;
		if (!l->nr_inodes++) {
			/* a new leaf: allocated, nothing to pin */
			fs->nr_leaves++;
			l->cow_trans = fs->trans;
			return SFS_NODE;
		}
	}
	return leaf_cow(fs, l);
}

/* @ino's items leave its leaf: the last inode frees it (pinned until the
 * commit), any other copies it.  Returns the bytes allocated. */
static uint64_t leaf_del_locked(struct sfs *fs, struct sinode *ino)
{
	struct leaf *l = leaf_find(fs, ino->ino / SFS_LEAF_INODES);

	if (!ino->leaf_exists || !l)
		return 0;
	ino->leaf_exists = false;
	fs->nr_inode_items--;
	if (--l->nr_inodes)
		return leaf_cow(fs, l);
	fs->nr_leaves--;
	sfs__pin_locked(fs, NULL, 0, SFS_NODE);
	leaf_remove(fs, l);
	return 0;
}

/* ---- delayed items ---- */

int sfs__item_reserve(struct sfs *fs, enum srsv_flush mode)
{
	return srsv_rsv_add(fs->delops, SFS_ITEM, mode, 0);
}

/* Take one item's bytes out of the DELOPS rsv the way srsv_rsv_add() put
 * them in (use, then shrink the size by as much: nothing spills into
 * another rsv); the caller owns them as may_use afterwards. */
static void item_take(struct sfs *fs)
{
	SFS_MUST(srsv_rsv_use(fs->delops, SFS_ITEM));
	SFS_MUST(srsv_rsv_release(fs->delops, SFS_ITEM, NULL));
}

void sfs__item_unreserve(struct sfs *fs)
{
	item_take(fs);
	SFS_MUST(srsv_space_release(fs->meta, SFS_ITEM));
}

void sfs__item_queue(struct sfs *fs, struct sinode *a, struct sinode *b,
		     struct sinode *c, struct sinode *del)
{
	struct item *it = calloc(1, sizeof(*it));

	if (!it) {
		/* Nothing to apply: give the reservation back. */
		sfs__item_unreserve(fs);
		return;
	}
	it->cow[0] = a;
	it->cow[1] = b;
	it->cow[2] = c;
	it->del = del;
	for (int i = 0; i < 3; i++)
		if (it->cow[i])
			sfs__iget_ref(it->cow[i]);
	if (del)
		sfs__iget_ref(del);
	pthread_mutex_lock(&fs->items_lock);
	*fs->items_tail = it;
	fs->items_tail = &it->next;
	fs->nr_items++;
	pthread_mutex_unlock(&fs->items_lock);
}

/* Apply one item: copy the leaves it touches, free the leaf of a deleted
 * inode, allocate what the copies need from the item's reservation and
 * return the rest to the pool. */
static void item_apply(struct sfs *fs, struct item *it)
{
	uint64_t used = 0;

	pthread_mutex_lock(&fs->trans_lock);
	for (int i = 0; i < 3; i++)
		if (it->cow[i] && it->cow[i] != it->del)
			used += sfs__leaf_cow_locked(fs, it->cow[i]);
	if (it->del)
		used += leaf_del_locked(fs, it->del);
	item_take(fs);
	if (used) {
		SFS_MUST(srsv_space_alloc(fs->meta, used));
		SFS_MUST(srsv_space_commit_used(fs->meta, used));
	}
	if (used < SFS_ITEM)
		SFS_MUST(srsv_space_release(fs->meta, SFS_ITEM - used));
	pthread_mutex_unlock(&fs->trans_lock);
	for (int i = 0; i < 3; i++)
		sfs__iput(fs, it->cow[i]);
	sfs__iput(fs, it->del);
	free(it);
}

uint64_t sfs__items_run(struct sfs *fs, uint64_t max)
{
	uint64_t n = 0;

	if (max == UINT64_MAX) {
		pthread_mutex_lock(&fs->items_lock);
		max = fs->nr_items;
		pthread_mutex_unlock(&fs->items_lock);
	}
	while (n < max) {
		struct item *it;

		pthread_mutex_lock(&fs->items_lock);
		it = fs->items_head;
		if (it) {
			fs->items_head = it->next;
			if (!fs->items_head)
				fs->items_tail = &fs->items_head;
			fs->nr_items--;
		}
		pthread_mutex_unlock(&fs->items_lock);
		if (!it)
			break;
		item_apply(fs, it);
		n++;
	}
	atomic_fetch_add(&fs->items_applied, n);
	return n;
}

/* ---- commit ---- */

void sfs__commit(struct sfs *fs)
{
	uint64_t t0 = sfs__now_ns(), pd, pm, tp[SFS_MAX_TENANTS], files = 0;
	uint64_t committed = 0;
	int returned;

	struct sinode **list = NULL, *n;

	pthread_mutex_lock(&fs->commit_lock);
	/* btrfs runs the delayed items as part of the commit. */
	sfs__items_run(fs, UINT64_MAX);

	pthread_mutex_lock(&fs->trans_lock);
	/*
	 * Detach the file list into an array while the lock is held: once the
	 * next transaction starts, a writeback may put the same inodes on its
	 * new list, reusing their trans_next links.
	 */
	for (n = fs->trans_files; n; n = n->trans_next)
		files++;
	if (files)
		list = malloc(files * sizeof(*list));
	if (list) {
		files = 0;
		for (n = fs->trans_files; n; n = n->trans_next)
			list[files++] = n;
		fs->trans_files = NULL;
	} else {
		/* No memory: leave the files on the list; they are synced by
		 * the next commit, and this one unpins nothing. */
		files = 0;
	}
	if (list || !fs->trans_files) {
		pd = fs->pinned_data;
		pm = fs->pinned_meta;
		fs->pinned_data = fs->pinned_meta = 0;
		for (unsigned i = 0; i < fs->cfg.nr_tenants; i++) {
			tp[i] = fs->tenants[i].pinned_pages;
			fs->tenants[i].pinned_pages = 0;
		}
		committed = fs->trans++;
	} else {
		pd = pm = 0;
		memset(tp, 0, sizeof(tp));
	}
	pthread_mutex_unlock(&fs->trans_lock);

	/* The new copies become durable... */
	for (uint64_t i = 0; i < files; i++) {
		if (fdatasync(list[i]->fd))
			sfs__trace(fs, "fdatasync_error errno=%d", errno);
		sfs__iput(fs, list[i]);
	}
	free(list);
	fsync(fs->dirfd);

	/* ...then the old ones may be reused.  The data chunks learn it in
	 * the same trans_lock hold as the pool: a writer granted the unpinned
	 * bytes places its pages only after, and finds the room (chunks.c). */
	pthread_mutex_lock(&fs->trans_lock);
	if (pd)
		SFS_MUST(srsv_space_unpin(fs->data, pd));
	returned = committed ? sfs__chunks_commit_locked(fs, committed) : 0;
	pthread_mutex_unlock(&fs->trans_lock);
	if (returned)
		sfs__chunks_returned(fs, returned);
	if (pm)
		SFS_MUST(srsv_space_unpin(fs->meta, pm));
	for (unsigned i = 0; i < fs->cfg.nr_tenants; i++)
		if (tp[i])
			SFS_MUST(srsv_quota_free_used(fs->tenants[i].quota,
					     tp[i] * SFS_PAGE));
	SFS_MUST(srsv_quota_commit(fs->ctx, NULL));
	atomic_fetch_add(&fs->commits, 1);
	atomic_fetch_add(&fs->commit_ns, sfs__now_ns() - t0);
	pthread_mutex_unlock(&fs->commit_lock);
	sfs__trace(fs, "commit files=%" PRIu64 " unpinned_data=%" PRIu64
		   " unpinned_meta=%" PRIu64 " ms=%.3f", files, pd, pm,
		   (double)(sfs__now_ns() - t0) / 1e6);
}

/* ---- chunks ---- */

static int alloc_chunk(struct sfs *fs, struct srsv_space *space, bool force)
{
	uint64_t chunk;
	int ret;

	if (space != fs->data && space != fs->meta)
		return -EOPNOTSUPP;	/* SYSTEM: never needed here */
	pthread_mutex_lock(&fs->chunk_lock);
	if (space == fs->meta && !force) {
		struct srsv_space_info mi = empty_info;

		SFS_MUST(srsv_space_snapshot(fs->meta, &mi, NULL, 0, NULL));
		if ((mi.used + mi.reserved + mi.pinned) * 100 <
		    mi.total * META_ALLOC_PCT) {
			pthread_mutex_unlock(&fs->chunk_lock);
			return 0;	/* flushing will do; not worth a chunk */
		}
	}
	chunk = sfs__min(space == fs->data ? fs->data_chunk : fs->meta_chunk,
			 srsv_ctx_unallocated(fs->ctx));
	/* Whole pages only, and never a metadata chunk smaller than a few
	 * items: it would be used up by the next transaction. */
	chunk -= chunk % SFS_PAGE;
	if (!chunk || (space == fs->meta && chunk < 4 * SFS_ITEM)) {
		pthread_mutex_unlock(&fs->chunk_lock);
		return -ENOSPC;	/* the library marks the pool full */
	}
	/* A block group: the library takes it from unallocated space. */
	ret = sfs__chunk_add(fs, space, chunk);
	pthread_mutex_unlock(&fs->chunk_lock);
	sfs__trace(fs, "chunk pool=%s bytes=%" PRIu64 " ret=%d",
		   space == fs->data ? "data" : "metadata", chunk, ret);
	return ret;
}

/* ---- callbacks ---- */

static int flush_cb(struct srsv_space *space, enum srsv_flush_state state,
		    uint64_t bytes, bool for_preempt, void *user)
{
	struct sfs *fs = user;
	bool is_meta = space != fs->data;
	uint64_t t0 = sfs__now_ns(), done = 0, freed = 0;
	int ret = 0;

	switch (state) {
	case SRSV_STATE_DELAYED_ITEMS_NR:
		done = sfs__items_run(fs, sfs__min(ITEMS_BATCH,
					sfs__max(1, bytes / SFS_ITEM)));
		break;
	case SRSV_STATE_DELAYED_ITEMS:
		done = sfs__items_run(fs, UINT64_MAX);
		break;
	case SRSV_STATE_DELALLOC:
	case SRSV_STATE_DELALLOC_WAIT:
		/* pwrite() is synchronous: starting writeback and waiting
		 * for it are the same work. */
		freed = sfs__writeback(fs, WB_BATCH_BYTES,
				       is_meta ? sfs__max(bytes, WB_CLUSTER_META) :
						 UINT64_MAX, &done);
		break;
	case SRSV_STATE_DELALLOC_FULL:
		if (for_preempt)
			freed = sfs__writeback(fs, WB_BATCH_BYTES, UINT64_MAX,
					       &done);
		else
			sfs__writeback_all(fs);
		break;
	case SRSV_STATE_COMMIT_TRANS:
		sfs__commit(fs);
		break;
	case SRSV_STATE_RECLAIM_CHUNKS:
		ret = sfs__chunks_reclaim(fs, &freed);
		break;
	case SRSV_STATE_ALLOC_CHUNK:
	case SRSV_STATE_ALLOC_CHUNK_FORCE:
		ret = alloc_chunk(fs, space, state == SRSV_STATE_ALLOC_CHUNK_FORCE);
		break;
	default:
		return -EOPNOTSUPP;
	}
	sfs__trace(fs, "flush pool=%s state=%s bytes=%" PRIu64 " preempt=%d"
		   " done=%" PRIu64 " freed=%" PRIu64 " us=%.1f ret=%d",
		   is_meta ? "metadata" : "data", srsv_state_name(state), bytes,
		   for_preempt, done, freed,
		   (double)(sfs__now_ns() - t0) / 1e3, ret);
	return ret;
}

/* A tenant hit its limit: what it reserved for dirty data becomes exact at
 * writeback and its per-transaction metadata goes at the commit (btrfs's
 * try_flush_qgroup() flushes delalloc and commits). */
static int quota_flush_cb(struct srsv_quota *quota, void *user)
{
	struct sfs *fs = user;

	atomic_fetch_add(&fs->quota_flushes, 1);
	sfs__trace(fs, "quota_flush tenant=%" PRIu64, srsv_quota_id(quota));
	sfs__writeback_all(fs);
	sfs__commit(fs);
	return 0;
}

/* ---- periodic commit ---- */

static void *committer_main(void *arg)
{
	struct sfs *fs = arg;

	pthread_mutex_lock(&fs->stop_lock);
	while (!fs->stopping) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += fs->cfg.commit_interval;
		pthread_cond_timedwait(&fs->stop_cond, &fs->stop_lock, &ts);
		if (fs->stopping)
			break;
		pthread_mutex_unlock(&fs->stop_lock);
		sfs__writeback_all(fs);
		sfs__commit(fs);
		pthread_mutex_lock(&fs->stop_lock);
	}
	pthread_mutex_unlock(&fs->stop_lock);
	return NULL;
}

/* ---- mount ---- */

static uint64_t round_up(uint64_t v, uint64_t unit)
{
	return (v + unit - 1) / unit * unit;
}

static uint64_t clamp_u64(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* Make the pools hold what the backing tree already uses. */
static int preload_used(struct srsv_space *s, uint64_t bytes)
{
	int ret;

	if (!bytes)
		return 0;
	ret = srsv_space_reserve(s, bytes, SRSV_NO_FLUSH, 0);
	if (!ret)
		ret = srsv_space_alloc(s, bytes);
	if (!ret)
		ret = srsv_space_commit_used(s, bytes);
	return ret;
}

static int setup_tenants(struct sfs *fs, const uint64_t *pages)
{
	for (unsigned i = 0; i < fs->cfg.nr_tenants; i++) {
		struct tenant *t = &fs->tenants[i];
		uint64_t bytes = pages[i] * SFS_PAGE;
		int ret;

		memcpy(t->name, fs->cfg.tenants[i].name, sizeof(t->name));
		t->limit = fs->cfg.tenants[i].limit;
		t->used_pages = pages[i];
		/* Charge what the tenant holds already without a limit (it may
		 * be over its new one), then set the limit. */
		ret = srsv_quota_create(fs->ctx, i + 1, SRSV_QUOTA_NO_LIMIT,
					&t->quota);
		if (!ret && bytes)
			ret = srsv_quota_reserve(t->quota, SRSV_QUOTA_DATA, bytes,
						 SRSV_QUOTA_NOFLUSH);
		if (!ret && bytes)
			ret = srsv_quota_charge_used(t->quota, bytes);
		if (!ret)
			ret = srsv_quota_set_limit(t->quota, t->limit);
		if (ret)
			return ret;
	}
	return 0;
}

/* One backing fd per file in use: raise the soft limit to the hard one,
 * and start closing idle descriptors at half of it. */
static uint64_t raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 512;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (1u << 20))
		return 1u << 19;
	return rl.rlim_cur / 2 > 64 ? rl.rlim_cur / 2 : 64;
}

/* Without O_TMPFILE to probe with: ext4's limit with 4 KiB blocks, the
 * smallest of the backing file systems docs/spacefs.md names. */
#define FALLBACK_MAX_BYTES ((UINT64_C(1) << 44) - SFS_PAGE)

/*
 * The largest file the backing file system stores, its s_maxbytes, which
 * no system call reports: the largest size an unlinked O_TMPFILE file can
 * be truncated to (inode_newsize_ok() refuses more with EFBIG), found by
 * bisection, at most the daemon's RLIMIT_FSIZE (past it a write would
 * raise SIGXFSZ), rounded down to a page.  ext4 with 4 KiB blocks: 16 TiB
 * - 4 KiB; xfs, btrfs and tmpfs: 8 EiB - 4 KiB.  Writes, truncates and
 * fallocates past it are refused up front with EFBIG: accepted into the
 * cache, such a write used to fail at writeback, its data lost.
 */
static uint64_t probe_max_bytes(int dirfd)
{
	uint64_t lo = 0, hi = INT64_MAX;	/* lo fits, past hi does not */
	struct rlimit rl;
	int fd;

	if (!getrlimit(RLIMIT_FSIZE, &rl) && rl.rlim_cur != RLIM_INFINITY)
		hi = sfs__min(hi, rl.rlim_cur);
	fd = openat(dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		return sfs__min(hi - hi % SFS_PAGE, FALLBACK_MAX_BYTES);
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo + 1) / 2;

		if (!ftruncate(fd, (off_t)mid))
			lo = mid;
		else
			hi = mid - 1;
	}
	close(fd);
	return lo - lo % SFS_PAGE;
}

static void fs_free(struct sfs *fs)
{
	if (fs->ctx)
		srsv_ctx_destroy(fs->ctx);
	while (fs->items_head) {
		struct item *it = fs->items_head;

		fs->items_head = it->next;
		free(it);
	}
	sfs__itable_destroy(fs);
	sfs__chunks_destroy(fs);
	sfs__leaves_destroy(fs);
	if (fs->dirfd >= 0)
		close(fs->dirfd);
	if (fs->trace)
		fclose(fs->trace);
	pthread_mutex_destroy(&fs->itable_lock);
	pthread_mutex_destroy(&fs->wb_lock);
	pthread_cond_destroy(&fs->wb_cond);
	pthread_mutex_destroy(&fs->commit_lock);
	pthread_mutex_destroy(&fs->trans_lock);
	pthread_mutex_destroy(&fs->items_lock);
	pthread_mutex_destroy(&fs->chunk_lock);
	pthread_mutex_destroy(&fs->stop_lock);
	pthread_cond_destroy(&fs->stop_cond);
	pthread_mutex_destroy(&fs->trace_lock);
	pthread_mutex_destroy(&fs->fd_reclaim_lock);
	free(fs);
}

int sfs_mount(const struct sfs_config *cfg, struct sfs **out)
{
	uint64_t data_pages = 0, inodes = 0, tenant_pages[SFS_MAX_TENANTS];
	uint64_t data_used, meta_used, data_total, meta_total;
	struct srsv_config sc;
	struct sfs *fs;
	int ret;

	if (!cfg || !cfg->backing || cfg->nr_tenants > SFS_MAX_TENANTS ||
	    cfg->capacity < 16 * SFS_MiB || cfg->meta_bytes < 4 * SFS_ITEM ||
	    cfg->meta_bytes > cfg->capacity / 2 ||
	    cfg->cache_bytes < 16 * SFS_PAGE)
		return -EINVAL;
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	fs->cfg = *cfg;
	fs->dirfd = -1;
	pthread_mutex_init(&fs->itable_lock, NULL);
	pthread_mutex_init(&fs->wb_lock, NULL);
	pthread_cond_init(&fs->wb_cond, NULL);
	pthread_mutex_init(&fs->commit_lock, NULL);
	pthread_mutex_init(&fs->trans_lock, NULL);
	pthread_mutex_init(&fs->items_lock, NULL);
	pthread_mutex_init(&fs->chunk_lock, NULL);
	pthread_mutex_init(&fs->stop_lock, NULL);
	pthread_cond_init(&fs->stop_cond, NULL);
	pthread_mutex_init(&fs->trace_lock, NULL);
	pthread_mutex_init(&fs->fd_reclaim_lock, NULL);
	fs->items_tail = &fs->items_head;
	fs->trans = 1;
	fs->t0_ns = sfs__now_ns();
	atomic_init(&fs->check_result, 1);
	atomic_init(&fs->preempt, cfg->preempt);
	fs->fd_budget = raise_nofile();
	if (cfg->fd_budget)
		fs->fd_budget = cfg->fd_budget;

	fs->dirfd = open(cfg->backing, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fs->dirfd < 0) {
		ret = -errno;
		goto fail;
	}
	for (unsigned i = 0; i < cfg->nr_tenants; i++) {
		if (!cfg->tenants[i].name[0] ||
		    strchr(cfg->tenants[i].name, '/') ||
		    !strcmp(cfg->tenants[i].name, SFS_CONTROL_NAME)) {
			ret = -EINVAL;
			goto fail;
		}
		if (mkdirat(fs->dirfd, cfg->tenants[i].name, 0755) &&
		    errno != EEXIST) {
			ret = -errno;
			goto fail;
		}
	}
	fs->max_bytes = probe_max_bytes(fs->dirfd);
	if (cfg->trace_path) {
		fs->trace = fopen(cfg->trace_path, "we");
		if (!fs->trace) {
			ret = -errno;
			goto fail;
		}
		setvbuf(fs->trace, NULL, _IOLBF, 0);
	}
	ret = sfs__scan(fs, &data_pages, &inodes, tenant_pages);
	if (ret)
		goto fail;

	/*
	 * Chunks: a sixteenth of the device for data (btrfs uses 10% on
	 * small devices, 1 GiB on large ones), a sixty-fourth for metadata;
	 * within [16 MiB, 1 GiB] and [4 MiB, 256 MiB], whole MiB.
	 */
	fs->data_chunk = clamp_u64(cfg->capacity / 16, 16 * SFS_MiB, SFS_GiB);
	fs->data_chunk -= fs->data_chunk % SFS_MiB;
	fs->meta_chunk = clamp_u64(cfg->capacity / 64, 4 * SFS_MiB,
				   256 * SFS_MiB);
	fs->meta_chunk -= fs->meta_chunk % SFS_MiB;
	data_used = data_pages * SFS_PAGE;
	meta_used = fs->nr_leaves * SFS_NODE;
	/* The option, or what the tree's leaves and the global reserve need
	 * if that is more. */
	meta_total = sfs__max(cfg->meta_bytes,
			      round_up(meta_used + GLOBAL_RSV_BYTES, SFS_NODE));
	data_total = sfs__max(fs->data_chunk, round_up(data_used, fs->data_chunk));
	if (meta_total >= cfg->capacity || data_used + meta_total > cfg->capacity) {
		ret = -ENOSPC;
		goto fail;
	}
	data_total = sfs__min(data_total, cfg->capacity - meta_total);
	data_total -= data_total % SFS_PAGE;
	fs->data_total = data_total;
	fs->meta_total = meta_total;
	fs->unallocated = cfg->capacity - data_total - meta_total;

	srsv_config_init(&sc);
	sc.flags = cfg->preempt ? 0 : SRSV_CTX_NO_PREEMPT;
	if (!cfg->data_preempt)
		sc.flags |= SRSV_CTX_NO_DATA_PREEMPT;
	/* Writers slowed smoothly before the metadata pool fills (design.md,
	 * "Pacing"); the cache limit above stays the bound on dirty memory. */
	sc.pace_start_pct = cfg->pace_pct;
	sc.flush = flush_cb;
	sc.user = fs;
	/* The pools start empty: their first chunks are block groups. */
	sc.pool_bytes[SRSV_POOL_DATA] = 0;
	sc.pool_bytes[SRSV_POOL_METADATA] = 0;
	sc.unallocated_bytes = cfg->capacity;
	sc.device_bytes = cfg->capacity;
	sc.data_chunk_bytes = fs->data_chunk;
	sc.item_bytes = SFS_ITEM;
	sc.delalloc_extent_meta_bytes = SFS_ITEM;
	sc.global_rsv_bytes = GLOBAL_RSV_BYTES;
	sc.quota_flush = quota_flush_cb;
	ret = srsv_ctx_create(&sc, &fs->ctx);
	if (ret)
		goto fail;
	fs->data = srsv_ctx_space(fs->ctx, SRSV_POOL_DATA);
	fs->meta = srsv_ctx_space(fs->ctx, SRSV_POOL_METADATA);
	fs->delops = srsv_ctx_rsv(fs->ctx, SRSV_RSV_DELOPS);
	ret = sfs__chunks_setup(fs, data_total, meta_total);
	if (!ret)
		ret = preload_used(fs->data, data_used);
	if (!ret)
		ret = sfs__chunks_preload(fs, data_pages);
	if (!ret)
		ret = preload_used(fs->meta, meta_used);
	if (!ret)
		ret = setup_tenants(fs, tenant_pages);
	if (ret)
		goto fail;
	fs->used_pages = data_pages;

	if (cfg->commit_interval) {
		ret = -pthread_create(&fs->committer, NULL, committer_main, fs);
		if (ret)
			goto fail;
		fs->committer_started = true;
	}
	sfs__trace(fs, "mount capacity=%" PRIu64 " data=%" PRIu64 " meta=%"
		   PRIu64 " unallocated=%" PRIu64 " used_pages=%" PRIu64
		   " inodes=%" PRIu64 " preempt=%d max_file_bytes=%" PRIu64,
		   cfg->capacity, data_total, meta_total, fs->unallocated,
		   data_pages, inodes, cfg->preempt, fs->max_bytes);
	*out = fs;
	return 0;
fail:
	fs_free(fs);
	return ret;
}

/* ---- the accounting check ---- */

static int expect(FILE *report, const char *what, uint64_t got, uint64_t want)
{
	if (got == want)
		return 0;
	if (report)
		fprintf(report, "spacefs: accounting: %s is %" PRIu64
			", expected %" PRIu64 "\n", what, got, want);
	return 1;
}

/* The pools must equal what the engine holds, byte for byte.  At rest
 * only: nothing dirty, nothing in flight, the transaction committed. */
static int check_at_rest(struct sfs *fs, FILE *report)
{
	struct srsv_space_info di = empty_info, mi = empty_info;
	struct srsv_rsv_info dl;
	int bad = 0;

	pthread_mutex_lock(&fs->commit_lock);
	pthread_mutex_lock(&fs->chunk_lock);
	pthread_mutex_lock(&fs->trans_lock);
	SFS_MUST(srsv_space_snapshot(fs->data, &di, NULL, 0, NULL));
	SFS_MUST(srsv_space_snapshot(fs->meta, &mi, NULL, 0, NULL));
	SFS_MUST(srsv_rsv_get_info(srsv_ctx_rsv(fs->ctx, SRSV_RSV_DELALLOC), &dl));
	bad |= expect(report, "data used", di.used, fs->used_pages * SFS_PAGE);
	bad |= expect(report, "data pinned", di.pinned, 0);
	bad |= expect(report, "data reserved", di.reserved, 0);
	bad |= expect(report, "data may_use", di.may_use, 0);
	bad |= expect(report, "data total", di.total, fs->data_total);
	{
		uint64_t cpinned, cused = sfs__chunks_data_used(fs, &cpinned);

		bad |= expect(report, "data chunks used", cused,
			      fs->used_pages * SFS_PAGE);
		bad |= expect(report, "data chunks pinned", cpinned, 0);
	}
	bad |= expect(report, "metadata used", mi.used, fs->nr_leaves * SFS_NODE);
	bad |= expect(report, "metadata pinned", mi.pinned, 0);
	bad |= expect(report, "metadata reserved", mi.reserved, 0);
	bad |= expect(report, "metadata may_use", mi.may_use,
		      mi.global_rsv_reserved + mi.trans_rsv_reserved +
		      mi.delayed_rsv_reserved + mi.delayed_refs_rsv_reserved);
	bad |= expect(report, "delayed items rsv", mi.delayed_rsv_reserved, 0);
	bad |= expect(report, "delalloc rsv", dl.reserved, 0);
	bad |= expect(report, "metadata total", mi.total, fs->meta_total);
	bad |= expect(report, "unallocated", mi.unallocated, fs->unallocated);
	bad |= expect(report, "device", di.total + mi.total + fs->unallocated,
		      fs->cfg.capacity);
	bad |= expect(report, "delalloc bytes", mi.delalloc_bytes, 0);
	bad |= expect(report, "ordered bytes", mi.ordered_bytes, 0);
	bad |= expect(report, "dirty bytes", atomic_load(&fs->dirty_bytes), 0);
	bad |= expect(report, "queued tickets", mi.nr_tickets +
		      mi.nr_priority_tickets + di.nr_tickets +
		      di.nr_priority_tickets, 0);
	for (unsigned i = 0; i < fs->cfg.nr_tenants; i++) {
		struct srsv_quota_info qi;
		char what[128];

		SFS_MUST(srsv_quota_snapshot(fs->tenants[i].quota, &qi));
		snprintf(what, sizeof(what), "tenant %s used",
			 fs->tenants[i].name);
		bad |= expect(report, what, qi.used,
			      fs->tenants[i].used_pages * SFS_PAGE);
		snprintf(what, sizeof(what), "tenant %s reserved",
			 fs->tenants[i].name);
		bad |= expect(report, what, qi.reserved[0] + qi.reserved[1] +
			      qi.reserved[2], 0);
	}
	if (!bad && report)
		fprintf(report, "spacefs: accounting OK: data used %" PRIu64
			" pages, metadata %" PRIu64 " leaves, pools = engine\n",
			fs->used_pages, fs->nr_leaves);
	pthread_mutex_unlock(&fs->trans_lock);
	pthread_mutex_unlock(&fs->chunk_lock);
	pthread_mutex_unlock(&fs->commit_lock);
	return bad ? -EUCLEAN : 0;
}

int sfs_sync(struct sfs *fs)
{
	sfs__writeback_all(fs);
	sfs__commit(fs);
	return atomic_load(&fs->wb_errors) ? -EIO : 0;
}

int sfs_check(struct sfs *fs, FILE *report)
{
	int ret = sfs_sync(fs);

	if (!ret)
		ret = check_at_rest(fs, report);
	atomic_store(&fs->check_result, ret);
	return ret;
}

int sfs_unmount(struct sfs *fs, FILE *report)
{
	int ret;

	if (fs->committer_started) {
		pthread_mutex_lock(&fs->stop_lock);
		fs->stopping = true;
		pthread_cond_broadcast(&fs->stop_cond);
		pthread_mutex_unlock(&fs->stop_lock);
		pthread_join(fs->committer, NULL);
	}
	/* No library thread runs a callback after this; the transitions
	 * keep working, so we settle the accounting from this thread. */
	srsv_ctx_shutdown(fs->ctx);
	sfs__writeback_all(fs);
	sfs__commit(fs);
	ret = check_at_rest(fs, report);
	sfs__trace(fs, "unmount check=%d", ret);
	fs_free(fs);
	return ret;
}

/* ---- statfs ---- */

int sfs_statfs(struct sfs *fs, struct statvfs *st)
{
	struct srsv_space_info mi = empty_info;
	struct srsv_statfs sf;
	struct statvfs b;
	uint64_t busy, unalloc, meta_free, leaves;

	if (fstatvfs(fs->dirfd, &b))
		return -errno;
	/* btrfs_statfs(), computed by the library: only referenced bytes
	 * count as used (df on btrfs shows reservations and pinned extents
	 * as free too), the global reserve is subtracted, and nothing is
	 * available once metadata is full and cannot grow. */
	SFS_MUST(srsv_ctx_statfs(fs->ctx, &sf));
	SFS_MUST(srsv_space_snapshot(fs->meta, &mi, NULL, 0, NULL));
	unalloc = srsv_ctx_unallocated(fs->ctx);
	memset(st, 0, sizeof(*st));
	st->f_bsize = SFS_PAGE;
	st->f_frsize = SFS_PAGE;
	st->f_blocks = sf.total / SFS_PAGE;
	st->f_bfree = sf.free / SFS_PAGE;
	st->f_bavail = sf.avail / SFS_PAGE;
	/* Inodes are spacefs's own: each takes SFS_INODE_BYTES of a shared
	 * leaf, so the free ones are what the metadata pool and the
	 * unallocated space can still hold at that rate (btrfs, which has no
	 * inode table, reports 0). */
	busy = mi.used + mi.reserved + mi.pinned + mi.may_use + mi.readonly;
	meta_free = unalloc + (mi.total > busy ? mi.total - busy : 0);
	pthread_mutex_lock(&fs->trans_lock);
	leaves = fs->nr_inode_items;
	pthread_mutex_unlock(&fs->trans_lock);
	st->f_ffree = meta_free / SFS_INODE_BYTES;
	st->f_favail = st->f_ffree;
	st->f_files = leaves + st->f_ffree;
	st->f_namemax = b.f_namemax;
	return 0;
}

/* ---- the control file ---- */

struct buf {
	char *p;
	size_t len, cap;
};

static void bprintf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void bprintf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL,
			      b->p ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (b->p && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		{
			size_t cap = sfs__max(b->cap * 2,
					      b->len + (size_t)n + 4096);
			char *p = realloc(b->p, cap);

			if (!p)
				return;
			b->p = p;
			b->cap = cap;
		}
	}
}

static void snapshot_pool(struct buf *b, const char *name,
			  struct srsv_space *s)
{
	struct srsv_ticket_info tk[64];
	struct srsv_space_info i = empty_info;
	size_t nr = 0;

	if (srsv_space_snapshot(s, &i, tk, 64, &nr))
		return;
#define P(field) bprintf(b, "%s.%s %" PRIu64 "\n", name, #field, \
			 (uint64_t)i.field)
	P(total);
	P(used);
	P(pinned);
	P(reserved);
	P(may_use);
	P(readonly);
	P(reclaim_size);
	P(clamp);
	P(full);
	P(nr_tickets);
	P(nr_priority_tickets);
	P(tickets_granted);
	P(tickets_failed);
	P(preempt_runs);
	P(async_runs);
#undef P
	bprintf(b, "%s.tickets %" PRIu64 "\n", name,
		i.tickets_granted + i.tickets_failed);
	for (int st = 1; st < SRSV_SPACE_INFO_STATES; st++)
		if (i.flushes[st])
			bprintf(b, "%s.flush.%s %" PRIu64 " %" PRIu64 "\n", name,
				srsv_state_name(st), i.flushes[st],
				i.preempt_flushes[st]);
	for (size_t k = 0; k < nr && k < 64; k++)
		bprintf(b, "%s.ticket.%zu bytes=%" PRIu64 " age_ms=%.3f mode=%s"
			" priority=%d\n", name, k, tk[k].bytes,
			(double)tk[k].age_ns / 1e6, srsv_flush_name(tk[k].mode),
			tk[k].priority);
	if (name[0] == 'm') {
		bprintf(b, "rsv.global %" PRIu64 "/%" PRIu64 "\n",
			i.global_rsv_reserved, i.global_rsv_size);
		bprintf(b, "rsv.delayed_items %" PRIu64 "\n",
			i.delayed_rsv_reserved);
		bprintf(b, "delalloc_bytes %" PRIu64 "\n", i.delalloc_bytes);
		bprintf(b, "ordered_bytes %" PRIu64 "\n", i.ordered_bytes);
	}
}

int sfs_snapshot(struct sfs *fs, char **out, size_t *len)
{
	struct buf b = { 0 };
	struct srsv_rsv_info dl = { 0 };
	int check = atomic_load(&fs->check_result);

#define S(key, val) bprintf(&b, "%s %" PRIu64 "\n", key, (uint64_t)(val))
	S("capacity", fs->cfg.capacity);
	S("unallocated", srsv_ctx_unallocated(fs->ctx));
	S("cache_bytes", fs->cfg.cache_bytes);
	S("max_file_bytes", fs->max_bytes);
	S("dirty_bytes", atomic_load(&fs->dirty_bytes));
	S("preempt", atomic_load(&fs->preempt));
	S("data_preempt", fs->cfg.data_preempt);
	S("commits", atomic_load(&fs->commits));
	bprintf(&b, "commit_ms %.3f\n",
		(double)atomic_load(&fs->commit_ns) / 1e6);
	S("writes", atomic_load(&fs->writes));
	S("written_bytes", atomic_load(&fs->written));
	S("enospc", atomic_load(&fs->enospc));
	S("edquot", atomic_load(&fs->edquot));
	S("eagain", atomic_load(&fs->eagain));
	S("throttles", atomic_load(&fs->throttles));
	S("writeback_extents", atomic_load(&fs->wb_extents));
	S("writeback_bytes", atomic_load(&fs->wb_bytes));
	S("writeback_errors", atomic_load(&fs->wb_errors));
	S("cow_pinned_pages", atomic_load(&fs->wb_pinned));
	S("absorbed_pages", atomic_load(&fs->absorbed_pages));
	S("items_applied", atomic_load(&fs->items_applied));
	S("data_chunks", atomic_load(&fs->data_chunks));
	S("chunks_returned", atomic_load(&fs->chunks_returned));
	S("chunks_relocated", atomic_load(&fs->chunks_relocated));
	S("meta_chunks", atomic_load(&fs->meta_chunks));
	S("quota_flushes", atomic_load(&fs->quota_flushes));
	pthread_mutex_lock(&fs->items_lock);
	S("items_queued", fs->nr_items);
	pthread_mutex_unlock(&fs->items_lock);
	pthread_mutex_lock(&fs->wb_lock);
	S("extents_queued", fs->nr_queued);
	pthread_mutex_unlock(&fs->wb_lock);
	pthread_mutex_lock(&fs->trans_lock);
	S("trans", fs->trans);
	S("engine.used_bytes", fs->used_pages * SFS_PAGE);
	S("engine.leaves", fs->nr_leaves);
	S("engine.inodes", fs->nr_inode_items);
	S("engine.map_blocks", atomic_load(&fs->map_blocks));
	S("backing_fds", atomic_load(&fs->nr_fds));
	S("fd_reclaims", atomic_load(&fs->fd_reclaims));
	S("fd_emfile", atomic_load(&fs->fd_emfile));
	pthread_mutex_unlock(&fs->trans_lock);
	SFS_MUST(srsv_rsv_get_info(srsv_ctx_rsv(fs->ctx, SRSV_RSV_DELALLOC), &dl));
	S("rsv.delalloc", dl.reserved);
#undef S
	bprintf(&b, "check %s\n", check > 0 ? "not-run" : check ? "FAILED" : "ok");
	snapshot_pool(&b, "data", fs->data);
	snapshot_pool(&b, "meta", fs->meta);
	for (unsigned i = 0; i < fs->cfg.nr_tenants; i++) {
		struct srsv_quota_info qi;

		if (srsv_quota_snapshot(fs->tenants[i].quota, &qi))
			continue;
		bprintf(&b, "tenant.%s limit=%" PRIu64 " used=%" PRIu64
			" charged=%" PRIu64 " data=%" PRIu64 " meta_prealloc=%"
			PRIu64 " meta_pertrans=%" PRIu64 " edquot=%" PRIu64
			" flushes=%" PRIu64 "\n", fs->tenants[i].name, qi.limit,
			qi.used, qi.charged, qi.reserved[SRSV_QUOTA_DATA],
			qi.reserved[SRSV_QUOTA_META_PREALLOC],
			qi.reserved[SRSV_QUOTA_META_PERTRANS], qi.edquot,
			qi.flushes);
	}
	if (!b.p)
		return -ENOMEM;
	*out = b.p;
	*len = b.len;
	return 0;
}

int sfs_control(struct sfs *fs, const char *cmd, size_t len)
{
	char c[64];

	while (len && isspace((unsigned char)cmd[len - 1]))
		len--;
	if (len >= sizeof(c))
		return -EINVAL;
	memcpy(c, cmd, len);
	c[len] = '\0';
	if (!strcmp(c, "sync"))
		return sfs_sync(fs);
	if (!strcmp(c, "writeback")) {
		sfs__writeback_all(fs);
		return 0;
	}
	if (!strcmp(c, "commit")) {
		sfs__commit(fs);
		return 0;
	}
	if (!strcmp(c, "check"))
		return sfs_check(fs, stderr);
	if (!strcmp(c, "preempt=0") || !strcmp(c, "preempt=1")) {
		atomic_store(&fs->preempt, c[8] == '1');
		return srsv_ctx_set_preempt(fs->ctx, c[8] == '1');
	}
	return -EINVAL;
}
