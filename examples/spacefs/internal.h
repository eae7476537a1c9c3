/* SPDX-License-Identifier: MIT */
/*
 * spacefs internals shared by engine.c (pools, transactions, flushing),
 * cache.c (pages, extents, writeback) and ns.c (inodes, namespace).
 *
 * Lock order (outer first):
 *
 *   sinode->wlock  (writers of one file, truncate, fsync: btrfs's i_rwsem)
 *   commit_lock    (one commit at a time)
 *   sinode->lock   (the file's pages, size and allocation bitmap)
 *   wb_lock        (the FIFO of dirty extents)
 *   trans_lock     (the running transaction: pins, leaves, file list)
 *   items_lock, chunk_lock, itable_lock, trace_lock (leaves)
 *   library locks  (no library call ever runs a flush under our locks
 *                   except the non-flushing transitions)
 *
 * A thread that may wait inside the library (a flushing reservation) holds
 * at most a wlock: the flush callbacks never take a wlock, so they can
 * always make progress.
 */
#ifndef SPACEFS_INTERNAL_H
#define SPACEFS_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include <libspacersv/spacersv.h>

#include "spacefs.h"

/*
 * A library call that cannot fail here (spacefs gives back what it holds,
 * reads what exists): a failure is an accounting bug of spacefs, reported
 * on stderr, never ignored silently (the calls are SRSV_MUST_CHECK).
 */
#define SFS_MUST(call) sfs__must((call), #call, __FILE__, __LINE__)
static inline void sfs__must(int ret, const char *what, const char *file,
			     int line)
{
	if (ret)
		fprintf(stderr, "spacefs: %s:%d: %s = %d\n", file, line, what,
			ret);
}

struct extent;

/* Pages of one owner in one chunk (chunks.c): the chunk's address. */
struct sfs_run {
	uint64_t chunk;
	uint64_t pages;
};

/* An owner's runs, oldest first, and its link on the owner list
 * (trans_lock). */
struct sfs_runs {
	struct sfs_run *v;
	uint32_t nr, cap;
	struct sfs_runs *prev, *next;
	bool linked;
};

struct bmap_block;

/* A file's allocation map (bmap.c): a hash of blocks of 512 pages, so
 * that its memory follows the pages the file has, not its offsets. */
struct sfs_bmap {
	struct bmap_block **tab;	/* buckets */
	size_t size;			/* buckets, power of two */
	size_t nr;			/* blocks */
	_Atomic uint64_t *total;	/* the mount's count of blocks */
};

/* A page of the write-back cache: always a full image of the file's page
 * (partial writes read the rest from the backing file first). */
struct page {
	struct page *hnext;	/* hash chain (sinode->lock) */
	uint64_t index;		/* page number in the file */
	struct extent *owner;	/* the extent whose reservation pays for it */
	bool wb;		/* being written back: stable, writers wait */
	unsigned char data[SFS_PAGE];
};

/*
 * A dirty extent: the pages one write added to the cache and the
 * srsv_delalloc_resv that pays for them.  Pages never change owner (a later
 * write to a dirty page rewrites it in place: it was paid for already), so
 * the reservation ends all at once: srsv_delalloc_finish() when writeback
 * wrote every page, srsv_delalloc_release() when the file is deleted first.
 */
struct extent {
	struct extent *prev, *next;	/* FIFO of queued extents (wb_lock) */
	struct extent *iprev, *inext;	/* the file's queued extents, oldest
					 * first (wb_lock) */
	struct sinode *ino;
	struct srsv_delalloc_resv resv;	/* empty if in_place */
	bool queued;			/* on the FIFO (wb_lock) */
	bool in_place;			/* pages over preallocated blocks:
					 * no data reserved, written in
					 * place; their metadata is a
					 * delayed item */
	uint32_t nr_pages;
	uint32_t cap;
	struct page *pages[];		/* ascending page index */
};

/* An inode of the backing tree, kept from first use until it is deleted or
 * the file system is unmounted. */
struct sinode {
	struct sinode *hnext;		/* inode table chain (itable_lock) */
	uint64_t ino;			/* backing st_ino: the key */
	_Atomic unsigned refs;		/* table + handles + items + trans */
	int tenant;			/* index into fs->tenants, -1 none */
	bool is_reg;

	pthread_mutex_t wlock;		/* writers, truncate, fsync */
	pthread_rwlock_t lock;		/* everything below up to "trans" */
	int fd;				/* O_RDWR backing fd, -1 until open
					 * (and again once idle: see
					 * sfs__close_idle()) */
	_Atomic unsigned nr_open;	/* handles and callers using fd */
	atomic_bool direct_io;		/* a descriptor was opened, or
					 * wrote, with O_DIRECT: the kernel
					 * keeps no page of it across opens
					 * (sfs_keep_cache()) */
	bool loaded;			/* size and bitmap read from backing */
	uint64_t size;			/* in-memory i_size */
	struct page **pht;		/* dirty pages, hashed by index */
	size_t pht_size;		/* buckets, power of two */
	size_t nr_pages;		/* dirty pages */
	struct sfs_bmap bmap;		/* allocated pages and, of those,
					 * the preallocated ones never
					 * written (fallocate): written in
					 * place, as btrfs writes into a
					 * PREALLOC extent (bmap.c) */
	uint64_t nr_alloc;		/* allocated pages */
	uint64_t nr_prealloc;		/* preallocated pages */
	/* The time of the last buffered write (times_set): writeback moves
	 * the backing file's mtime, and puts this one back.  Truncate,
	 * fallocate and utimens, which leave no dirty page and set the
	 * backing file's times themselves, clear times_set. */
	struct timespec mtime;
	bool times_set;

	/* wb_lock */
	unsigned nr_extents;		/* extents not finished yet */
	struct extent *q_head, *q_tail;	/* its extents on the FIFO: fsync,
					 * truncate and delete take them
					 * without walking the whole FIFO */

	/* trans_lock */
	bool deleted;			/* last link gone: no items any more */
	bool leaf_exists;		/* its items are in a leaf */
	uint64_t sync_trans;		/* on this transaction's file list */
	struct sfs_runs runs;		/* where its pages live (chunks.c) */
	struct sinode *trans_next;	/* file list link */
};

/* An open file: what fi->fh points at. */
struct sfs_file {
	struct sinode *ino;
	int flags;			/* open flags */
};

/* A delayed item: an inode update (create, unlink, rename, setattr...)
 * whose metadata is reserved in the ctx's DELOPS rsv now and applied later
 * (DELAYED_ITEMS flush states, or the commit). */
struct item {
	struct item *next;
	struct sinode *cow[3];		/* leaves copied (NULL: none) */
	struct sinode *del;		/* leaf freed (NULL: none) */
};

/* A metadata leaf: the items of SFS_LEAF_INODES consecutive inode numbers
 * (trans_lock).  Allocated with its first inode, freed with its last. */
struct leaf {
	struct leaf *next;		/* hash chain */
	uint64_t id;			/* inode number / SFS_LEAF_INODES */
	uint32_t nr_inodes;		/* inodes with items in it */
	uint64_t cow_trans;		/* transaction that last copied it */
};

struct tenant {
	char name[SFS_TENANT_NAME];
	uint64_t limit;
	struct srsv_quota *quota;
	uint64_t used_pages;		/* engine's view (trans_lock) */
	uint64_t pinned_pages;		/* freed this transaction (trans_lock) */
};

struct sfs {
	struct sfs_config cfg;
	int dirfd;			/* backing root */
	uint64_t max_bytes;		/* largest file (s_maxbytes): the
					 * backing file system's, probed at
					 * mount */
	struct srsv_ctx *ctx;
	struct srsv_space *data, *meta;
	struct srsv_rsv *delops;
	uint64_t data_chunk, meta_chunk;

	/* inode table */
	pthread_mutex_t itable_lock;
	struct sinode **itable;
	size_t itable_size, nr_inodes;

	/* write-back cache */
	pthread_mutex_t wb_lock;
	pthread_cond_t wb_cond;		/* an extent was finished */
	struct extent *wb_head, *wb_tail;
	uint64_t nr_queued;		/* extents on the FIFO */
	uint64_t wb_gen;		/* bumped when a cluster is finished */
	_Atomic uint64_t dirty_bytes;	/* pages in the cache x SFS_PAGE */

	/* transactions */
	pthread_mutex_t commit_lock;
	pthread_mutex_t trans_lock;
	uint64_t trans;
	struct sinode *trans_files;
	uint64_t pinned_data;		/* bytes pinned in this transaction */
	uint64_t pinned_meta;
	uint64_t used_pages;		/* engine's view of data used */
	uint64_t nr_leaves;		/* engine's view of metadata used */
	uint64_t nr_inode_items;	/* inodes with items (df -i used) */
	struct leaf **leaves;		/* leaf table, hashed by id */
	size_t leaves_size;		/* buckets, power of two */

	/* delayed items */
	pthread_mutex_t items_lock;
	struct item *items_head, **items_tail;
	uint64_t nr_items;

	/* device space */
	pthread_mutex_t chunk_lock;
	uint64_t unallocated, data_total, meta_total;
	uint64_t next_addr;		/* next chunk's address (chunk_lock) */
	/* trans_lock: pages older than the mount, owners with pages */
	struct sfs_runs anon_runs, run_owners;
	_Atomic uint64_t chunks_returned, chunks_relocated;

	struct tenant tenants[SFS_MAX_TENANTS];

	/* periodic commit */
	pthread_t committer;
	bool committer_started;
	pthread_mutex_t stop_lock;
	pthread_cond_t stop_cond;
	bool stopping;

	/* event log */
	pthread_mutex_t trace_lock;
	FILE *trace;
	uint64_t t0_ns;

	/* backing descriptors: one per inode in use, closed when idle */
	_Atomic uint64_t map_blocks;	/* allocation map blocks (bmap.c) */
	_Atomic uint64_t nr_fds;
	uint64_t fd_budget;		/* nr_fds that starts closing idle ones */
	pthread_mutex_t fd_reclaim_lock;
	_Atomic uint64_t fd_reclaims;	/* reclaims done */
	_Atomic uint64_t fd_emfile;	/* opens that got EMFILE / ENFILE */

	/* statistics */
	_Atomic uint64_t writes, written, enospc, edquot, eagain;
	_Atomic uint64_t throttles, wb_extents, wb_bytes, wb_pinned;
	_Atomic uint64_t commits, commit_ns, items_applied;
	_Atomic uint64_t data_chunks, meta_chunks, quota_flushes;
	_Atomic uint64_t wb_errors, absorbed_pages;
	_Atomic int check_result;	/* 1 not run, 0 ok, <0 failed */
	atomic_bool preempt;		/* preemptive flushing is on */
};

/* ---- chunks.c: block groups ---- */
/* Register the chunks the pools start with (after srsv_ctx_create()). */
int sfs__chunks_setup(struct sfs *fs, uint64_t data_total,
		      uint64_t meta_total);
/* Place the data pages that exist at mount. */
int sfs__chunks_preload(struct sfs *fs, uint64_t pages);
/* A new chunk for @space (chunk_lock held). */
int sfs__chunk_add(struct sfs *fs, struct srsv_space *space, uint64_t bytes);
/* @pages new data pages of @ino (NULL: nobody's), trans_lock held. */
void sfs__chunks_alloc_locked(struct sfs *fs, struct sinode *ino,
			      uint64_t pages);
/* @pages data pages of @ino freed in the running transaction. */
void sfs__chunks_free_locked(struct sfs *fs, struct sinode *ino,
			     uint64_t pages);
/* @ino leaves memory: its pages stay where they are. */
void sfs__chunks_forget(struct sfs *fs, struct sinode *ino);
/* Transaction @trans committed, its data unpinned in the same trans_lock
 * hold: the groups it emptied go back; returns how many. */
int sfs__chunks_commit_locked(struct sfs *fs, uint64_t trans);
/* After sfs__chunks_commit_locked() returned @n > 0 (no lock held). */
void sfs__chunks_returned(struct sfs *fs, int n);
/* RECLAIM_CHUNKS: relocate what the library hands out. */
int sfs__chunks_reclaim(struct sfs *fs, uint64_t *moved);
void sfs__chunks_destroy(struct sfs *fs);
/* Live and pinned bytes the data chunks hold (the consistency check). */
uint64_t sfs__chunks_data_used(struct sfs *fs, uint64_t *pinned);

/* ---- engine.c ---- */
uint64_t sfs__now_ns(void);
void sfs__trace(struct sfs *fs, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void sfs__commit(struct sfs *fs);
/* Pin @pages data pages of @tenant and @meta bytes of metadata in the
 * running transaction.  Call with trans_lock held. */
void sfs__pin_locked(struct sfs *fs, struct sinode *ino, uint64_t pages,
		     uint64_t meta);
/* Copy @ino's leaf if this transaction has not yet: returns the metadata
 * bytes allocated (SFS_NODE or 0).  Call with trans_lock held. */
uint64_t sfs__leaf_cow_locked(struct sfs *fs, struct sinode *ino);
/* Count @ino's items in its leaf at mount (the scan): allocates the leaf
 * if it is the first.  -ENOMEM. */
int sfs__leaf_add_scanned(struct sfs *fs, uint64_t ino);
void sfs__leaves_destroy(struct sfs *fs);
/* Reserve one delayed item's metadata (may wait unless @mode is NO_FLUSH). */
int sfs__item_reserve(struct sfs *fs, enum srsv_flush mode);
/* Give back a reservation from sfs__item_reserve() (the operation failed). */
void sfs__item_unreserve(struct sfs *fs);
/* Queue an item whose metadata was reserved; takes references. */
void sfs__item_queue(struct sfs *fs, struct sinode *a, struct sinode *b,
		     struct sinode *c, struct sinode *del);
/* Apply up to @max queued items (UINT64_MAX: those queued at entry). */
uint64_t sfs__items_run(struct sfs *fs, uint64_t max);

/* ---- cache.c ---- */
struct page *sfs__page_lookup(struct sinode *ino, uint64_t index);
/* Write back up to about @max_bytes of the oldest dirty extents; returns
 * the metadata bytes their reservations gave back (@data_out: data
 * bytes written). */
uint64_t sfs__writeback(struct sfs *fs, uint64_t max_bytes,
			uint64_t want_meta, uint64_t *data_out);
/* Write back everything dirty at entry. */
void sfs__writeback_all(struct sfs *fs);
/* Write back every dirty extent of @ino and wait for those in flight.
 * Caller holds ino->wlock (no new writes). */
void sfs__writeback_inode(struct sfs *fs, struct sinode *ino);
/* Drop @ino's dirty extents (released, not written); wait for extents in
 * flight.  The file is being deleted.  Caller guarantees no writers. */
void sfs__drop_inode_cache(struct sfs *fs, struct sinode *ino);
void sfs__free_pages(struct sinode *ino);
/* Punch pages [first, end): drop the dirty extents of @ino whose pages all
 * lie in it (their reservations go back), write back the others; wait for
 * extents in flight.  Caller holds ino->wlock. */
void sfs__punch_cache(struct sfs *fs, struct sinode *ino, uint64_t first,
		      uint64_t end);
/* Dirty pages without a block yet (delayed allocation): what st_blocks
 * adds, as ext4 and btrfs count delalloc in i_blocks.  Caller holds
 * ino->lock. */
uint64_t sfs__delalloc_pages(const struct sinode *ino);

/* ---- bmap.c: allocation maps (caller holds ino->lock) ---- */
bool sfs__alloc_test(const struct sinode *ino, uint64_t page);
/* Make the map hold pages [first, last] (-ENOMEM), so that writeback never
 * has to allocate memory after the data is on disk.  The range is a
 * write's, or pages whose space was reserved: bounded by the capacity. */
int sfs__alloc_reserve(struct sinode *ino, uint64_t first, uint64_t last);
int sfs__alloc_set(struct sinode *ino, uint64_t page);
/* Clear the allocated pages of [first, last]; returns how many were. */
uint64_t sfs__alloc_clear_range(struct sinode *ino, uint64_t first,
				uint64_t last);
/* Allocated pages of [first, last]. */
uint64_t sfs__alloc_count_range(struct sinode *ino, uint64_t first,
				uint64_t last);
/* One past the highest allocated page; 0 if none. */
uint64_t sfs__alloc_end(const struct sinode *ino);
/* Preallocated (fallocate, never written) pages: a subset of the
 * allocated ones (setting one that is not allocated does nothing). */
bool sfs__prealloc_test(const struct sinode *ino, uint64_t page);
void sfs__prealloc_set(struct sinode *ino, uint64_t page);
void sfs__prealloc_clear(struct sinode *ino, uint64_t page);
void sfs__bmap_free(struct sinode *ino);

/* ---- ns.c ---- */
struct sinode *sfs__iget(struct sfs *fs, uint64_t ino, int tenant,
			 bool is_reg, bool leaf_exists);
struct sinode *sfs__ilookup(struct sfs *fs, uint64_t ino);
void sfs__iput(struct sfs *fs, struct sinode *ino);
void sfs__iget_ref(struct sinode *ino);
/* Read size and allocation map from the backing file; caller holds
 * ino->lock for writing and ino->fd is open. */
int sfs__load_locked(struct sinode *ino);
/* Count the allocated pages of an open file, past EOF too (FIEMAP; SEEK_DATA
 * / SEEK_HOLE up to @size where the file system has no FIEMAP); with @fill,
 * set them in its map, unwritten extents as preallocated. */
int sfs__count_alloc(int fd, uint64_t size, uint64_t *pages,
		     struct sinode *fill);
int sfs__scan(struct sfs *fs, uint64_t *data_pages, uint64_t *inodes,
	      uint64_t tenant_pages[SFS_MAX_TENANTS]);
void sfs__itable_destroy(struct sfs *fs);
/* Close the backing fd of every inode nobody uses: no handle, no dirty
 * page, no extent in flight, not on the running transaction's file list.
 * Returns how many were closed.  Takes commit_lock: call with no lock. */
uint64_t sfs__close_idle(struct sfs *fs);

static inline uint64_t sfs__min(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static inline uint64_t sfs__max(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

#endif /* SPACEFS_INTERNAL_H */
