/* SPDX-License-Identifier: MIT */
/*
 * spacefs chunks: the device carved into block groups the library tracks
 * (<libspacersv/bgroup.h>), so that space comes back.
 *
 * Every chunk spacefs allocates is registered with srsv_bgroup_add(); the
 * library moves it from unallocated space to the pool.  spacefs keeps its
 * file data in backing files, so its "device addresses" are virtual: each
 * chunk gets the next free range of an address space that only grows, and
 * each inode keeps a short list of runs, "so many of my pages live in the
 * chunk at this address" (struct sfs_runs).  New pages go to the lowest
 * chunk with room (srsv_bgroup_find_free(): low chunks fill, high ones
 * empty and go back); freed pages leave the inode's newest runs first.  The
 * library hears both (srsv_bgroup_alloc(), srsv_bgroup_free() with the
 * running transaction) and, at each commit (srsv_ctx_commit_done()), gives
 * the chunks that transaction emptied back to unallocated.  Pages that
 * existed at mount belong to no inode: they are one anonymous owner.
 *
 * RECLAIM_CHUNKS (the library asks when a metadata reservation would
 * otherwise fail): every data chunk srsv_bgroup_reclaim_take() hands out is
 * relocated by moving its runs to other chunks: the new copies are charged
 * to the data pool (reserve, alloc, commit_used: NO_FLUSH, we are inside a
 * flush callback), the old ones are pinned until the commit.  The backing
 * files need no copy (their bytes do not live at these addresses); a real
 * engine would copy the extents here.  Metadata chunks are not relocated
 * (spacefs has no metadata addresses): they are handed back at once.
 *
 * Locking: the runs and the owner list are under trans_lock, where every
 * allocation and free of data pages already happens.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static struct sfs_run *runs_last(struct sfs_runs *r)
{
	return r->nr ? &r->v[r->nr - 1] : NULL;
}

static int runs_push(struct sfs_runs *r, uint64_t chunk, uint64_t pages)
{
	struct sfs_run *last = runs_last(r);

	if (last && last->chunk == chunk) {
		last->pages += pages;
		return 0;
	}
	if (r->nr == r->cap) {
		uint32_t cap = r->cap ? 2 * r->cap : 2;
		struct sfs_run *v = realloc(r->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		r->v = v;
		r->cap = cap;
	}
	r->v[r->nr].chunk = chunk;
	r->v[r->nr].pages = pages;
	r->nr++;
	return 0;
}

/* Put @r on the owner list (trans_lock). */
static void owner_link(struct sfs *fs, struct sfs_runs *r)
{
	if (r->linked)
		return;
	r->next = fs->run_owners.next;
	r->prev = &fs->run_owners;
	fs->run_owners.next->prev = r;
	fs->run_owners.next = r;
	r->linked = true;
}

static void owner_unlink(struct sfs_runs *r)
{
	if (!r->linked)
		return;
	r->prev->next = r->next;
	r->next->prev = r->prev;
	r->linked = false;
}

/* Place @pages new pages for @r, lowest chunks first (trans_lock). */
static int place(struct sfs *fs, struct sfs_runs *r, uint64_t pages)
{
	while (pages) {
		struct srsv_bgroup_info gi;
		uint64_t start, n;
		int ret;

		ret = srsv_bgroup_find_free(fs->ctx, SRSV_POOL_DATA, SFS_PAGE,
					    &start);
		if (!ret)
			ret = srsv_bgroup_get(fs->ctx, start, &gi);
		if (ret)
			return ret;
		n = sfs__min(pages, (gi.length - gi.used - gi.pinned) / SFS_PAGE);
		ret = srsv_bgroup_alloc(fs->ctx, SRSV_POOL_DATA, start,
					n * SFS_PAGE);
		if (!ret)
			ret = runs_push(r, start, n);
		if (ret)
			return ret;
		owner_link(fs, r);
		pages -= n;
	}
	return 0;
}

/* Free @pages of @r's newest pages in transaction @trans (trans_lock);
 * returns the pages it could not find. */
static uint64_t unplace(struct sfs *fs, struct sfs_runs *r, uint64_t pages,
			uint64_t trans)
{
	while (pages && r->nr) {
		struct sfs_run *last = runs_last(r);
		uint64_t n = sfs__min(pages, last->pages);

		SFS_MUST(srsv_bgroup_free(fs->ctx, SRSV_POOL_DATA, last->chunk,
					  n * SFS_PAGE, trans));
		last->pages -= n;
		pages -= n;
		if (!last->pages)
			r->nr--;
	}
	if (!r->nr)
		owner_unlink(r);
	return pages;
}

void sfs__chunks_alloc_locked(struct sfs *fs, struct sinode *ino,
			      uint64_t pages)
{
	int ret;

	if (!pages)
		return;
	ret = place(fs, ino ? &ino->runs : &fs->anon_runs, pages);
	if (ret)
		sfs__trace(fs, "chunk_place_error err=%d pages=%" PRIu64, ret,
			   pages);
}

void sfs__chunks_free_locked(struct sfs *fs, struct sinode *ino,
			     uint64_t pages)
{
	if (!pages)
		return;
	/* Pages older than the mount are the anonymous owner's. */
	if (ino)
		pages = unplace(fs, &ino->runs, pages, fs->trans);
	if (pages)
		pages = unplace(fs, &fs->anon_runs, pages, fs->trans);
	if (pages)
		sfs__trace(fs, "chunk_free_error pages=%" PRIu64, pages);
}

void sfs__chunks_forget(struct sfs *fs, struct sinode *ino)
{
	pthread_mutex_lock(&fs->trans_lock);
	/* An inode leaves memory with pages (unmount): they stay where they
	 * are, owned by nobody in particular. */
	for (uint32_t i = 0; i < ino->runs.nr; i++) {
		if (runs_push(&fs->anon_runs, ino->runs.v[i].chunk,
			      ino->runs.v[i].pages))
			sfs__trace(fs, "chunk_forget_error");
		owner_link(fs, &fs->anon_runs);
	}
	owner_unlink(&ino->runs);
	pthread_mutex_unlock(&fs->trans_lock);
	free(ino->runs.v);
	memset(&ino->runs, 0, sizeof(ino->runs));
}

/* The mirrors the consistency check compares with (chunk_lock held):
 * pool totals as the sums of the group lengths, unallocated as the rest
 * of the device. */
static void mirror(struct sfs *fs)
{
	struct srsv_bgroup_info gi;
	uint64_t from = 0, data = 0, meta = 0;

	while (!srsv_bgroup_next(fs->ctx, from, &gi)) {
		if (gi.pool == SRSV_POOL_DATA)
			data += gi.length;
		else
			meta += gi.length;
		from = gi.start + gi.length;
	}
	fs->data_total = data;
	fs->meta_total = meta;
	fs->unallocated = fs->cfg.capacity - data - meta;
}

int sfs__chunk_add(struct sfs *fs, struct srsv_space *space, uint64_t bytes)
{
	int pool = space == fs->data ? SRSV_POOL_DATA : SRSV_POOL_METADATA;
	int ret = srsv_bgroup_add(fs->ctx, pool, fs->next_addr, bytes);

	if (!ret) {
		fs->next_addr += bytes;
		atomic_fetch_add(pool == SRSV_POOL_DATA ? &fs->data_chunks :
				 &fs->meta_chunks, 1);
		mirror(fs);
	}
	return ret;
}

int sfs__chunks_setup(struct sfs *fs, uint64_t data_total,
		      uint64_t meta_total)
{
	struct srsv_bgroup_config bc;
	int ret;

	fs->run_owners.next = fs->run_owners.prev = &fs->run_owners;
	srsv_bgroup_config_init(&bc);
	ret = srsv_bgroups_init(fs->ctx, &bc);
	pthread_mutex_lock(&fs->chunk_lock);
	while (!ret && data_total) {
		uint64_t n = sfs__min(data_total, fs->data_chunk);

		ret = sfs__chunk_add(fs, fs->data, n);
		data_total -= n;
	}
	if (!ret)
		ret = sfs__chunk_add(fs, fs->meta, meta_total);
	pthread_mutex_unlock(&fs->chunk_lock);
	return ret;
}

int sfs__chunks_preload(struct sfs *fs, uint64_t pages)
{
	int ret;

	pthread_mutex_lock(&fs->trans_lock);
	ret = pages ? place(fs, &fs->anon_runs, pages) : 0;
	pthread_mutex_unlock(&fs->trans_lock);
	return ret;
}

int sfs__chunks_commit_locked(struct sfs *fs, uint64_t trans)
{
	int ret = srsv_ctx_commit_done(fs->ctx, trans);

	if (ret < 0) {
		sfs__trace(fs, "commit_done_error err=%d", ret);
		return 0;
	}
	return ret;
}

void sfs__chunks_returned(struct sfs *fs, int n)
{
	atomic_fetch_add(&fs->chunks_returned, (uint64_t)n);
	pthread_mutex_lock(&fs->chunk_lock);
	mirror(fs);
	pthread_mutex_unlock(&fs->chunk_lock);
	sfs__trace(fs, "chunks_returned n=%d unallocated=%" PRIu64, n,
		   srsv_ctx_unallocated(fs->ctx));
}

/* Move the pages @r has in @chunk elsewhere (trans_lock). */
static int relocate_owner(struct sfs *fs, struct sfs_runs *r, uint64_t chunk)
{
	for (uint32_t i = 0; i < r->nr; i++) {
		uint64_t pages = r->v[i].pages, bytes = pages * SFS_PAGE;
		int ret;

		if (r->v[i].chunk != chunk)
			continue;
		/* The new copies: the pool pays for them now... */
		ret = srsv_space_reserve(fs->data, bytes, SRSV_NO_FLUSH, 0);
		if (ret)
			return ret;
		SFS_MUST(srsv_space_alloc(fs->data, bytes));
		SFS_MUST(srsv_space_commit_used(fs->data, bytes));
		/* ...the old ones are pinned until the commit. */
		SFS_MUST(srsv_bgroup_free(fs->ctx, SRSV_POOL_DATA, chunk, bytes,
					  fs->trans));
		SFS_MUST(srsv_space_pin(fs->data, bytes));
		fs->pinned_data += bytes;
		memmove(&r->v[i], &r->v[i + 1],
			(r->nr - i - 1) * sizeof(r->v[0]));
		r->nr--;
		i--;
		ret = place(fs, r, pages);
		if (ret)
			return ret;
	}
	return 0;
}

int sfs__chunks_reclaim(struct sfs *fs, uint64_t *moved)
{
	struct srsv_bgroup_info t;
	int ret = 0;

	*moved = 0;
	pthread_mutex_lock(&fs->trans_lock);
	while (!srsv_bgroup_reclaim_take(fs->ctx, &t)) {
		int err = 0;

		if (t.pool == SRSV_POOL_DATA) {
			struct sfs_runs *r = fs->run_owners.next, *next;

			for (; !err && r != &fs->run_owners; r = next) {
				next = r->next;
				err = relocate_owner(fs, r, t.start);
			}
		} else {
			err = -EOPNOTSUPP;
		}
		if (!err) {
			*moved += t.used;
			atomic_fetch_add(&fs->chunks_relocated, 1);
		}
		SFS_MUST(srsv_bgroup_reclaim_done(fs->ctx, t.start, err));
		sfs__trace(fs, "chunk_relocate start=%" PRIu64 " used=%" PRIu64
			   " err=%d", t.start, t.used, err);
		if (err && t.pool == SRSV_POOL_DATA) {
			ret = err;
			break;
		}
	}
	pthread_mutex_unlock(&fs->trans_lock);
	return ret;
}

uint64_t sfs__chunks_data_used(struct sfs *fs, uint64_t *pinned)
{
	struct srsv_bgroup_info gi;
	uint64_t from = 0, used = 0;

	*pinned = 0;
	while (!srsv_bgroup_next(fs->ctx, from, &gi)) {
		if (gi.pool == SRSV_POOL_DATA) {
			used += gi.used;
			*pinned += gi.pinned;
		}
		from = gi.start + gi.length;
	}
	return used;
}

void sfs__chunks_destroy(struct sfs *fs)
{
	free(fs->anon_runs.v);
	memset(&fs->anon_runs, 0, sizeof(fs->anon_runs));
}
