/* SPDX-License-Identifier: MIT */
/*
 * spacefs write-back cache: buffered writes, reads, writeback.
 *
 * HOW A WRITE IS PAID FOR
 *
 * A write of N bytes dirties the pages it covers.  Pages that are already
 * dirty were paid for by the write that dirtied them first: the new data
 * replaces theirs in place and costs nothing (btrfs clears the old
 * delalloc accounting of a re-dirtied range for the same reason).  The
 * pages that are not dirty yet are paid for by one srsv_delalloc_reserve()
 * of exactly their size: quota (DATA and META_PREALLOC), data space, and
 * one extent's worth of metadata in the DELALLOC rsv.  That reservation
 * and the pages it pays for form an extent (internal.h).
 *
 * Counting the missing pages needs the file's page lock, and reserving may
 * wait for the flushers, which need the same lock to write pages back: so
 * the count is made under the lock, the reservation without it, and the
 * count checked again under the lock.  Writers of one file are serialised
 * by the file's wlock (the kernel's i_rwsem, which FUSE holds around a
 * buffered write anyway), and writeback only ever turns dirty pages clean,
 * so the second count can only be higher: the writer reserves the
 * difference as another extent and checks again.  The loop ends because
 * the count is bounded by the pages of the write.
 *
 * HOW WRITEBACK PAYS
 *
 * Writeback (the DELALLOC flush states, the cache throttle, fsync, commit
 * at unmount) takes the oldest extent (with the next ones of the same
 * file: a cluster), writes its pages to the backing file without holding
 * the file's lock (the pages are marked under writeback: readers use them,
 * a writer that touches one waits, as for the kernel's stable pages), and
 * ends its reservation with srsv_delalloc_finish(): data may_use
 * becomes used, the metadata the extent needed (a copy of the file's leaf,
 * once per transaction) is allocated and the rest of the extent's metadata
 * reservation goes back to the pool, which is what grants waiting
 * tickets.  A page that already had a block on disk is copied on write:
 * the old block is pinned until the next commit (engine.c).
 *
 * PREALLOCATED BLOCKS
 *
 * A page whose block was preallocated (fallocate) and never written is
 * written in place, as btrfs writes into a PREALLOC extent
 * (run_delalloc_nocow()): its data space was reserved and counted as used
 * by the fallocate, so the write reserves no data and no quota for it,
 * only the metadata of marking the extent written (one delayed item), and
 * writeback neither allocates nor pins for it.  Such pages belong to an
 * in-place extent, which holds no reservation.  A write into a
 * preallocated range therefore gets no ENOSPC for data.
 *
 * THE CACHE THROTTLE
 *
 * The cache holds at most cache_bytes of dirty pages.  A write that would
 * exceed it writes back the oldest extents itself first (the kernel's
 * balance_dirty_pages()), or, with NOWAIT, fails with -EAGAIN (the async buffered-write series'
 * balance_dirty_pages_ratelimited_flags()).  Nothing else writes back in
 * the background but the library's flushers: with preemptive flushing off,
 * writers find the cache or the metadata pool full and stop to flush; with
 * it on, the preemptive worker writes back before they do (the preemptive-flushing series).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"

/* A throttled writer writes back at least this much (or an eighth of the
 * cache, if larger): throttling on every write of a cache that sits at its
 * limit would turn each write into a writeback of one page. */
#define THROTTLE_MIN_BYTES (1 * SFS_MiB)
/* Longest wait for another thread's writeback before looking again.  Only
 * a bound on a missed wake-up: extents end with a broadcast. */
#define THROTTLE_WAIT_NS (10 * 1000 * 1000)

/* ---- page hash ---- */

static size_t page_slot(uint64_t index, size_t size)
{
	/* Fibonacci hashing: sequential indexes spread over the buckets. */
	return (size_t)((index * UINT64_C(0x9e3779b97f4a7c15)) >> 32) &
	       (size - 1);
}

struct page *sfs__page_lookup(struct sinode *ino, uint64_t index)
{
	struct page *p;

	if (!ino->nr_pages)
		return NULL;
	for (p = ino->pht[page_slot(index, ino->pht_size)]; p; p = p->hnext)
		if (p->index == index)
			return p;
	return NULL;
}

/* Double the table when the chains average two pages; a failed resize
 * only makes the chains longer. */
static void page_table_grow(struct sinode *ino)
{
	size_t size = ino->pht_size ? ino->pht_size * 2 : 64;
	struct page **t = calloc(size, sizeof(*t));

	if (!t)
		return;
	for (size_t i = 0; i < ino->pht_size; i++) {
		struct page *p = ino->pht[i], *next;

		for (; p; p = next) {
			size_t slot = page_slot(p->index, size);

			next = p->hnext;
			p->hnext = t[slot];
			t[slot] = p;
		}
	}
	free(ino->pht);
	ino->pht = t;
	ino->pht_size = size;
}

static void page_insert(struct sinode *ino, struct page *p)
{
	size_t slot;

	if (ino->nr_pages >= 2 * ino->pht_size)
		page_table_grow(ino);
	slot = page_slot(p->index, ino->pht_size);
	p->hnext = ino->pht[slot];
	ino->pht[slot] = p;
	ino->nr_pages++;
}

static void page_remove(struct sinode *ino, struct page *p)
{
	struct page **pp = &ino->pht[page_slot(p->index, ino->pht_size)];

	for (; *pp; pp = &(*pp)->hnext) {
		if (*pp == p) {
			*pp = p->hnext;
			ino->nr_pages--;
			return;
		}
	}
}

void sfs__free_pages(struct sinode *ino)
{
	for (size_t i = 0; i < ino->pht_size; i++) {
		struct page *p = ino->pht[i], *next;

		for (; p; p = next) {
			next = p->hnext;
			free(p);
		}
	}
	free(ino->pht);
	ino->pht = NULL;
	ino->pht_size = 0;
	ino->nr_pages = 0;
}

uint64_t sfs__delalloc_pages(const struct sinode *ino)
{
	uint64_t n = 0;

	if (!ino->nr_pages)
		return 0;
	for (size_t i = 0; i < ino->pht_size; i++)
		for (struct page *p = ino->pht[i]; p; p = p->hnext)
			if (!sfs__alloc_test(ino, p->index))
				n++;
	return n;
}

/* Pages of [first, last] that are not in the cache; *pre: of those, the
 * preallocated ones. */
static uint64_t count_missing(struct sinode *ino, uint64_t first,
			      uint64_t last, uint64_t *pre)
{
	uint64_t n = 0, p = 0;

	for (uint64_t i = first; i <= last; i++) {
		if (!sfs__page_lookup(ino, i)) {
			n++;
			p += sfs__prealloc_test(ino, i);
		}
	}
	*pre = p;
	return n;
}

/* ---- extents ---- */

static int extent_reserve(struct sfs *fs, struct sinode *ino, uint64_t pages,
			  bool nowait, struct extent **out)
{
	struct srsv_quota *q = ino->tenant >= 0 ?
			       fs->tenants[ino->tenant].quota : NULL;
	struct extent *e;
	int ret;

	e = calloc(1, sizeof(*e) + pages * sizeof(e->pages[0]));
	if (!e)
		return -ENOMEM;
	ret = srsv_delalloc_reserve(fs->ctx, q, pages * SFS_PAGE,
				    nowait ? SRSV_DELALLOC_NOWAIT :
					     SRSV_DELALLOC_NORMAL, &e->resv);
	if (ret) {
		free(e);
		return ret;
	}
	e->cap = (uint32_t)pages;
	e->ino = ino;
	sfs__iget_ref(ino);
	*out = e;
	return 0;
}

/* An extent for pages over preallocated blocks: no reservation. */
static struct extent *extent_in_place(struct sinode *ino, uint64_t pages)
{
	struct extent *e = calloc(1, sizeof(*e) + pages * sizeof(e->pages[0]));

	if (!e)
		return NULL;
	e->in_place = true;
	e->cap = (uint32_t)pages;
	e->ino = ino;
	sfs__iget_ref(ino);
	return e;
}

static void extent_free(struct sfs *fs, struct extent *e)
{
	sfs__iput(fs, e->ino);
	free(e);
}

/* Give back what an extent reserved (nothing if in place). */
static void extent_release(struct extent *e)
{
	if (!e->in_place)
		SFS_MUST(srsv_delalloc_release(&e->resv));
}

/* Give back the reservations of extents that never got pages. */
static void extents_release(struct sfs *fs, struct extent *list)
{
	struct extent *next;

	for (; list; list = next) {
		next = list->next;
		extent_release(list);
		extent_free(fs, list);
	}
}

/* ---- write ---- */

static int throttle(struct sfs *fs, uint64_t bytes, bool nowait)
{
	uint64_t limit = fs->cfg.cache_bytes;
	bool counted = false;

	bytes = sfs__min(bytes, limit);
	while (atomic_load(&fs->dirty_bytes) + bytes > limit) {
		uint64_t written = 0;

		if (nowait)
			return -EAGAIN;
		if (!counted) {
			atomic_fetch_add(&fs->throttles, 1);
			counted = true;
		}
		sfs__writeback(fs, sfs__max(THROTTLE_MIN_BYTES, limit / 8),
			       UINT64_MAX, &written);
		if (written)
			continue;
		/* Everything dirty is being written by other threads: wait
		 * for one of them to finish an extent. */
		pthread_mutex_lock(&fs->wb_lock);
		if (!fs->nr_queued &&
		    atomic_load(&fs->dirty_bytes) + bytes > limit) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += THROTTLE_WAIT_NS;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&fs->wb_cond, &fs->wb_lock, &ts);
		}
		pthread_mutex_unlock(&fs->wb_lock);
	}
	return 0;
}

static int lock_pages(struct sinode *ino, bool nowait)
{
	if (!nowait)
		return -pthread_rwlock_wrlock(&ino->lock);
	return pthread_rwlock_trywrlock(&ino->lock) ? -EAGAIN : 0;
}

/* True if a page of [first, last] is being written back. */
static bool under_writeback(struct sinode *ino, uint64_t first, uint64_t last)
{
	if (!ino->nr_pages)
		return false;
	for (uint64_t i = first; i <= last; i++) {
		struct page *p = sfs__page_lookup(ino, i);

		if (p && p->wb)
			return true;
	}
	return false;
}

/* Read the current content of page @index into @buf (zeros past EOF). */
static int page_fill(struct sinode *ino, uint64_t index, unsigned char *buf)
{
	size_t done = 0;

	while (done < SFS_PAGE) {
		ssize_t n = pread(ino->fd, buf + done, SFS_PAGE - done,
				  (off_t)(index * SFS_PAGE + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!n)
			break;
		done += (size_t)n;
	}
	memset(buf + done, 0, SFS_PAGE - done);
	return 0;
}

static void count_error(struct sfs *fs, int err, bool nowait)
{
	if (err == -ENOSPC)
		atomic_fetch_add(&fs->enospc, 1);
	else if (err == -EDQUOT)
		atomic_fetch_add(&fs->edquot, 1);
	else if (err == -EAGAIN)
		atomic_fetch_add(&fs->eagain, 1);
	if (err == -ENOSPC || err == -EDQUOT || err == -EAGAIN)
		sfs__trace(fs, "write_error err=%d nowait=%d", err, nowait);
}

ssize_t sfs_write(struct sfs *fs, struct sfs_file *f, const char *buf,
		  size_t len, off_t off, bool nowait)
{
	struct sinode *ino = f->ino;
	struct extent *held_list = NULL, **held_tail = &held_list, *e;
	struct extent *pre_e = NULL;	/* pages over preallocated blocks */
	struct page **fresh = NULL;
	uint64_t first, last, need, pre, held = 0;
	unsigned tries = 0;
	bool item = false;		/* pre_e's delayed item reserved */
	int ret;

	if (!len)
		return 0;
	if (off < 0 || (uint64_t)off + len < (uint64_t)off)
		return -EINVAL;
	/* The backing file system's largest file is ours: what cannot be
	 * stored is refused now, not lost at writeback (the kernel's
	 * generic_write_check_limits(): EFBIG at the limit, a short write
	 * across it). */
	if ((uint64_t)off >= fs->max_bytes)
		return -EFBIG;
	len = (size_t)sfs__min(len, fs->max_bytes - (uint64_t)off);
	first = (uint64_t)off / SFS_PAGE;
	last = ((uint64_t)off + len - 1) / SFS_PAGE;
	atomic_fetch_add(&fs->writes, 1);

	if (nowait) {
		if (pthread_mutex_trylock(&ino->wlock)) {
			count_error(fs, -EAGAIN, true);
			return -EAGAIN;
		}
	} else {
		pthread_mutex_lock(&ino->wlock);
	}

	ret = throttle(fs, (last - first + 1) * SFS_PAGE, nowait);
	if (ret)
		goto out_unlock;

	/* Reserve for the missing pages until the count holds under the
	 * lock (see the top of the file). */
	for (;;) {
		ret = lock_pages(ino, nowait);
		if (ret)
			goto out_release;
		if (under_writeback(ino, first, last)) {
			/* Stable pages: wait for their writeback to end (it
			 * takes them out of the cache), then count again. */
			uint64_t gen;

			pthread_mutex_lock(&fs->wb_lock);
			gen = fs->wb_gen;
			pthread_mutex_unlock(&fs->wb_lock);
			pthread_rwlock_unlock(&ino->lock);
			if (nowait) {
				ret = -EAGAIN;
				goto out_release;
			}
			pthread_mutex_lock(&fs->wb_lock);
			while (fs->wb_gen == gen)
				pthread_cond_wait(&fs->wb_cond, &fs->wb_lock);
			pthread_mutex_unlock(&fs->wb_lock);
			continue;
		}
		need = count_missing(ino, first, last, &pre);
		if (need - pre <= held && (!pre || (pre_e && pre_e->cap >= pre)))
			break;
		pthread_rwlock_unlock(&ino->lock);
		if (nowait && tries) {
			/* A NOWAIT writer gets one try. */
			ret = -EAGAIN;
			goto out_release;
		}
		tries++;
		if (pre && !item) {
			/* Preallocated pages: only the metadata of marking
			 * their extent written. */
			ret = nowait ? srsv_rsv_add(fs->delops, SFS_ITEM,
						    SRSV_NO_FLUSH,
						    SRSV_RESERVE_NOWAIT) :
				       sfs__item_reserve(fs, SRSV_FLUSH_ALL);
			if (ret) {
				if (nowait)
					ret = -EAGAIN;
				goto out_release;
			}
			item = true;
		}
		if (pre && (!pre_e || pre_e->cap < pre)) {
			if (pre_e)
				extent_free(fs, pre_e);
			pre_e = extent_in_place(ino, pre);
			if (!pre_e) {
				ret = -ENOMEM;
				goto out_release;
			}
		}
		if (need - pre > held) {
			ret = extent_reserve(fs, ino, need - pre - held,
					     nowait, &e);
			if (ret)
				goto out_release;
			*held_tail = e;
			held_tail = &e->next;
			held = need - pre;
		}
	}

	/* Page lock held; need == held.  Everything that can fail comes
	 * before the first page enters the cache. */
	ret = sfs__alloc_reserve(ino, first, last);
	if (!ret && need) {
		fresh = calloc(need, sizeof(*fresh));
		ret = fresh ? 0 : -ENOMEM;
		for (uint64_t i = 0; !ret && i < need; i++) {
			fresh[i] = malloc(sizeof(*fresh[i]));
			if (!fresh[i])
				ret = -ENOMEM;
		}
	}
	if (!ret && need) {
		/* Only the first and the last page can be partly written. */
		uint64_t k = 0;

		for (uint64_t i = first; !ret && i <= last; i++) {
			uint64_t lo = i * SFS_PAGE, hi = lo + SFS_PAGE;

			if (sfs__page_lookup(ino, i))
				continue;
			if ((uint64_t)off > lo || (uint64_t)off + len < hi)
				ret = page_fill(ino, i, fresh[k]->data);
			k++;
		}
	}
	if (ret) {
		pthread_rwlock_unlock(&ino->lock);
		if (fresh)
			for (uint64_t i = 0; i < need; i++)
				free(fresh[i]);
		goto out_release;
	}

	{
		struct extent *owner = held_list;
		uint64_t k = 0, absorbed = 0;

		for (uint64_t i = first; i <= last; i++) {
			uint64_t lo = i * SFS_PAGE;
			uint64_t from = sfs__max((uint64_t)off, lo);
			uint64_t to = sfs__min((uint64_t)off + len,
					       lo + SFS_PAGE);
			struct page *p = sfs__page_lookup(ino, i);

			if (!p) {
				struct extent *o;

				p = fresh[k++];
				p->index = i;
				p->wb = false;
				if (sfs__prealloc_test(ino, i)) {
					o = pre_e;
				} else {
					while (owner->nr_pages == owner->cap)
						owner = owner->next;
					o = owner;
				}
				p->owner = o;
				o->pages[o->nr_pages++] = p;
				page_insert(ino, p);
			} else {
				absorbed++;
			}
			memcpy(p->data + (from - lo), buf + (from - (uint64_t)off),
			       to - from);
		}
		if ((uint64_t)off + len > ino->size)
			ino->size = (uint64_t)off + len;
		/* The write's time is the file's mtime (file_update_time()):
		 * writeback puts it back on the backing file.  The kernel's
		 * coarse clock, which stamps the backing file's ctime at
		 * writeback: mtime never ends up after ctime. */
		clock_gettime(CLOCK_REALTIME_COARSE, &ino->mtime);
		ino->times_set = true;
		atomic_fetch_add(&fs->absorbed_pages, absorbed);
	}
	free(fresh);
	if (pre_e && pre_e->nr_pages) {
		/* After the extents that pay for data: the FIFO order does
		 * not matter for it. */
		*held_tail = pre_e;
		held_tail = &pre_e->next;
		pre_e = NULL;
	}
	if (need) {
		atomic_fetch_add(&fs->dirty_bytes, need * SFS_PAGE);
		SFS_MUST(srsv_ctx_account_delalloc(fs->ctx, (int64_t)(need * SFS_PAGE), 0));
		pthread_mutex_lock(&fs->wb_lock);
		for (e = held_list; e; e = held_list) {
			held_list = e->next;
			e->next = NULL;
			e->prev = fs->wb_tail;
			if (fs->wb_tail)
				fs->wb_tail->next = e;
			else
				fs->wb_head = e;
			fs->wb_tail = e;
			e->queued = true;
			fs->nr_queued++;
			e->inext = NULL;
			e->iprev = ino->q_tail;
			if (ino->q_tail)
				ino->q_tail->inext = e;
			else
				ino->q_head = e;
			ino->q_tail = e;
			ino->nr_extents++;
		}
		pthread_mutex_unlock(&fs->wb_lock);
	}
	pthread_rwlock_unlock(&ino->lock);
	if (pre_e)
		extent_free(fs, pre_e);	/* (not reached: pre pages exist) */
	if (item)
		sfs__item_queue(fs, ino, NULL, NULL, NULL);
	pthread_mutex_unlock(&ino->wlock);
	atomic_fetch_add(&fs->written, len);
	return (ssize_t)len;

out_release:
	extents_release(fs, held_list);
	if (pre_e)
		extent_free(fs, pre_e);
	if (item)
		sfs__item_unreserve(fs);
out_unlock:
	pthread_mutex_unlock(&ino->wlock);
	count_error(fs, ret, nowait);
	return ret;
}

/* ---- read ---- */

ssize_t sfs_read(struct sfs *fs, struct sfs_file *f, char *buf, size_t len,
		 off_t off)
{
	struct sinode *ino = f->ino;
	uint64_t size, done = 0;

	(void)fs;
	if (off < 0)
		return -EINVAL;
	pthread_rwlock_rdlock(&ino->lock);
	size = ino->size;
	if ((uint64_t)off >= size || !len) {
		pthread_rwlock_unlock(&ino->lock);
		return 0;
	}
	len = (size_t)sfs__min(len, size - (uint64_t)off);
	while (done < len) {
		ssize_t n = pread(ino->fd, buf + done, len - done,
				  off + (off_t)done);

		if (n < 0) {
			int err = errno;

			if (err == EINTR)
				continue;
			pthread_rwlock_unlock(&ino->lock);
			return -err;
		}
		if (!n)
			break;
		done += (uint64_t)n;
	}
	/* Past the backing file's end, up to i_size: holes, or dirty pages
	 * not written yet. */
	memset(buf + done, 0, len - done);
	if (ino->nr_pages) {
		uint64_t first = (uint64_t)off / SFS_PAGE;
		uint64_t last = ((uint64_t)off + len - 1) / SFS_PAGE;

		for (uint64_t i = first; i <= last; i++) {
			struct page *p = sfs__page_lookup(ino, i);
			uint64_t lo = i * SFS_PAGE, from, to;

			if (!p)
				continue;
			from = sfs__max((uint64_t)off, lo);
			to = sfs__min((uint64_t)off + len, lo + SFS_PAGE);
			memcpy(buf + (from - (uint64_t)off), p->data + (from - lo),
			       to - from);
		}
	}
	pthread_rwlock_unlock(&ino->lock);
	return (ssize_t)len;
}

/* ---- writeback ---- */

static int pwritev_all(int fd, struct iovec *iov, int cnt, off_t off)
{
	while (cnt) {
		ssize_t n = pwritev(fd, iov, cnt, off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!n)
			return -EIO;
		off += n;
		while (cnt && (size_t)n >= iov->iov_len) {
			n -= (ssize_t)iov->iov_len;
			iov++;
			cnt--;
		}
		if (cnt) {
			iov->iov_base = (char *)iov->iov_base + n;
			iov->iov_len -= (size_t)n;
		}
	}
	return 0;
}

/*
 * Writeback clusters: the oldest extent and the next ones of the same file
 * (within WB_WINDOW extents of the FIFO's head), up to WB_CLUSTER_PAGES
 * pages, are written with one lock hold and as few pwritev() calls as
 * their pages allow, as the kernel's writeback writes ranges, not pages.
 * Without it, a file written 4 KiB at a time is written back 4 KiB at a
 * time, and the flusher and the writer take turns on the file's lock for
 * every page.
 */
/* Pages per cluster: 1 MiB, the largest write FUSE sends. */
#define WB_CLUSTER_PAGES 256u
/* Extents of the FIFO looked at for a cluster: enough to find a file's
 * extents among four writers' interleaved ones, few enough to keep the
 * FIFO lock short. */
#define WB_WINDOW 256u
/* Extents per cluster at most (each ends its own reservation). */
#define WB_CLUSTER_EXTENTS 128u
/* Pages of a cluster at most: a cluster closes once it reaches
 * WB_CLUSTER_PAGES, and the extent that crossed the line holds 256 pages
 * at most (a 1 MiB write). */
#define WB_MAX_PAGES (2 * WB_CLUSTER_PAGES)
/* iovecs per pwritev(): well below IOV_MAX (1024). */
#define WB_IOV 256

static int page_cmp(const void *a, const void *b)
{
	const struct page *x = *(const struct page *const *)a;
	const struct page *y = *(const struct page *const *)b;

	return x->index < y->index ? -1 : x->index > y->index;
}

/* Write @n pages sorted by index, coalescing runs of consecutive pages.
 * The last page of the file is written up to i_size only. */
static int write_pages(struct sinode *ino, uint64_t size, struct page **pages,
		       unsigned n)
{
	struct iovec iov[WB_IOV];
	unsigned i = 0;

	while (i < n) {
		uint64_t start = pages[i]->index;
		int cnt = 0;
		int ret;

		while (i < n && cnt < WB_IOV &&
		       pages[i]->index == start + (uint64_t)cnt) {
			uint64_t lo = pages[i]->index * SFS_PAGE;
			uint64_t len = size > lo ?
				       sfs__min(SFS_PAGE, size - lo) : 0;

			iov[cnt].iov_base = pages[i]->data;
			iov[cnt].iov_len = len;
			cnt++;
			i++;
		}
		ret = pwritev_all(ino->fd, iov, cnt, (off_t)(start * SFS_PAGE));
		if (ret)
			return ret;
	}
	return 0;
}

/* Write back a cluster of @n extents of one file, taken off the FIFO.
 * Returns the metadata bytes their reservations gave back. */
static uint64_t writeback_cluster(struct sfs *fs, struct extent **ev,
				  unsigned n, uint64_t *data_bytes)
{
	struct sinode *ino = ev[0]->ino;
	struct page *pages[WB_MAX_PAGES];
	uint64_t meta_used = 0, pinned = 0, fresh = 0, freed = 0, bytes, size;
	unsigned nr = 0, pay = n;	/* pay: the first extent with a resv */
	int err, ret;

	for (unsigned k = 0; k < n; k++)
		for (uint32_t i = 0; i < ev[k]->nr_pages; i++)
			pages[nr++] = ev[k]->pages[i];
	bytes = (uint64_t)nr * SFS_PAGE;
	qsort(pages, nr, sizeof(pages[0]), page_cmp);

	/*
	 * Mark the pages under writeback and write them without the lock:
	 * readers read them as they are, writers that touch them wait (the
	 * kernel's stable pages), writers of other pages of the file go on.
	 * i_size is read under the lock: a writer that extends the file
	 * cannot change the pages we write (a partial last page of ours is
	 * one of them).
	 */
	pthread_rwlock_wrlock(&ino->lock);
	for (unsigned i = 0; i < nr; i++)
		pages[i]->wb = true;
	size = ino->size;
	pthread_rwlock_unlock(&ino->lock);
	SFS_MUST(srsv_ctx_account_delalloc(fs->ctx, -(int64_t)bytes, (int64_t)bytes));
	err = write_pages(ino, size, pages, nr);
	pthread_rwlock_wrlock(&ino->lock);
	if (err) {
		/* The data cannot reach the backing store: the file system
		 * is in error, as btrfs aborts the transaction. */
		atomic_fetch_add(&fs->wb_errors, 1);
		sfs__trace(fs, "writeback_error err=%d ino=%llu", err,
			   (unsigned long long)ino->ino);
		srsv_ctx_set_error(fs->ctx, -EIO);
		for (unsigned k = 0; k < n; k++) {
			freed += ev[k]->resv.meta_bytes;
			extent_release(ev[k]);
		}
	} else {
		pthread_mutex_lock(&fs->trans_lock);
		for (unsigned i = 0; i < nr; i++) {
			if (sfs__prealloc_test(ino, pages[i]->index)) {
				/* Written in place: its block was
				 * allocated and counted by fallocate. */
				sfs__prealloc_clear(ino, pages[i]->index);
			} else if (sfs__alloc_test(ino, pages[i]->index)) {
				pinned++;	/* copy on write */
			} else {
				sfs__alloc_set(ino, pages[i]->index);
				fresh++;
			}
		}
		fs->used_pages += fresh;
		if (ino->tenant >= 0)
			fs->tenants[ino->tenant].used_pages += fresh;
		/* Block groups: the old copies leave their chunks, the new
		 * ones (and the fresh pages) go to the lowest with room. */
		sfs__chunks_free_locked(fs, ino, pinned);
		sfs__chunks_alloc_locked(fs, ino, fresh + pinned);
		/* One copy of the file's leaf per transaction, paid by the
		 * first extent with a reservation; the others' item
		 * reservations all go back.  (In-place extents' delayed items
		 * copy the leaf themselves.) */
		for (unsigned k = 0; k < n && pay == n; k++)
			if (!ev[k]->in_place)
				pay = k;
		if (pay < n)
			meta_used = sfs__leaf_cow_locked(fs, ino);
		if (pinned)
			sfs__pin_locked(fs, ino, pinned, 0);
		if (ino->sync_trans != fs->trans) {
			ino->sync_trans = fs->trans;
			sfs__iget_ref(ino);
			ino->trans_next = fs->trans_files;
			fs->trans_files = ino;
		}
		for (unsigned k = 0; k < n; k++) {
			uint64_t used = k == pay ? meta_used : 0;

			if (ev[k]->in_place)
				continue;
			freed += ev[k]->resv.meta_bytes - used;
			ret = srsv_delalloc_finish(&ev[k]->resv, used);
			if (ret) {
				sfs__trace(fs, "finish_error err=%d", ret);
				srsv_ctx_set_error(fs->ctx, ret);
			}
		}
		pthread_mutex_unlock(&fs->trans_lock);
		/* pwrite() stamped the backing file with the time of the
		 * writeback: give it back the time of the write, the file's
		 * mtime (the kernel stamps the inode when it is written to,
		 * not when its pages reach the disk). */
		if (ino->times_set) {
			const struct timespec ts[2] = {
				{ .tv_nsec = UTIME_OMIT }, ino->mtime
			};

			futimens(ino->fd, ts);
		}
	}
	for (unsigned i = 0; i < nr; i++) {
		page_remove(ino, pages[i]);
		free(pages[i]);
	}
	pthread_rwlock_unlock(&ino->lock);

	SFS_MUST(srsv_ctx_account_delalloc(fs->ctx, 0, -(int64_t)bytes));
	atomic_fetch_sub(&fs->dirty_bytes, bytes);
	atomic_fetch_add(&fs->wb_extents, n);
	atomic_fetch_add(&fs->wb_bytes, bytes);
	atomic_fetch_add(&fs->wb_pinned, pinned);
	pthread_mutex_lock(&fs->wb_lock);
	ino->nr_extents -= n;
	fs->wb_gen++;
	pthread_cond_broadcast(&fs->wb_cond);
	pthread_mutex_unlock(&fs->wb_lock);
	for (unsigned k = 0; k < n; k++)
		extent_free(fs, ev[k]);
	if (data_bytes)
		*data_bytes = bytes;
	return freed;
}

/* Unlink @e from the FIFO; wb_lock held. */
static void fifo_remove(struct sfs *fs, struct extent *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		fs->wb_head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		fs->wb_tail = e->prev;
	e->prev = e->next = NULL;
	if (e->iprev)
		e->iprev->inext = e->inext;
	else
		e->ino->q_head = e->inext;
	if (e->inext)
		e->inext->iprev = e->iprev;
	else
		e->ino->q_tail = e->iprev;
	e->iprev = e->inext = NULL;
	e->queued = false;
	fs->nr_queued--;
}

/* Take the oldest extent and the next ones of its file (see above). */
static unsigned fifo_pop_cluster(struct sfs *fs, struct extent **ev)
{
	struct extent *e, *next;
	unsigned n = 0, looked = 0;
	uint64_t pages = 0;

	pthread_mutex_lock(&fs->wb_lock);
	for (e = fs->wb_head; e && looked < WB_WINDOW; e = next, looked++) {
		next = e->next;
		if (n && e->ino != ev[0]->ino)
			continue;
		fifo_remove(fs, e);
		ev[n++] = e;
		pages += e->nr_pages;
		if (n == WB_CLUSTER_EXTENTS || pages >= WB_CLUSTER_PAGES)
			break;
	}
	pthread_mutex_unlock(&fs->wb_lock);
	return n;
}

uint64_t sfs__writeback(struct sfs *fs, uint64_t max_bytes,
			uint64_t want_meta, uint64_t *data_out)
{
	struct extent *ev[WB_CLUSTER_EXTENTS];
	uint64_t data = 0, meta = 0;

	while (data < max_bytes && meta < want_meta) {
		unsigned n = fifo_pop_cluster(fs, ev);
		uint64_t bytes = 0;

		if (!n)
			break;
		meta += writeback_cluster(fs, ev, n, &bytes);
		data += bytes;
	}
	if (data_out)
		*data_out = data;
	return meta;
}

void sfs__writeback_all(struct sfs *fs)
{
	struct extent *ev[WB_CLUSTER_EXTENTS];
	uint64_t todo;

	pthread_mutex_lock(&fs->wb_lock);
	todo = fs->nr_queued;
	pthread_mutex_unlock(&fs->wb_lock);
	/* Bounded by what was queued at entry: writers may keep adding. */
	while (todo) {
		unsigned n = fifo_pop_cluster(fs, ev);

		if (!n)
			break;
		writeback_cluster(fs, ev, n, NULL);
		todo -= sfs__min(todo, n);
	}
}

/* Take every queued extent of @ino off the FIFO, oldest first (its own
 * queue: the FIFO can hold thousands of other files' extents). */
static struct extent *take_inode_extents(struct sfs *fs, struct sinode *ino)
{
	struct extent *list = NULL, **tail = &list, *e;

	pthread_mutex_lock(&fs->wb_lock);
	while ((e = ino->q_head)) {
		fifo_remove(fs, e);
		*tail = e;
		tail = &e->next;
	}
	pthread_mutex_unlock(&fs->wb_lock);
	return list;
}

static void wait_inode_extents(struct sfs *fs, struct sinode *ino)
{
	pthread_mutex_lock(&fs->wb_lock);
	while (ino->nr_extents)
		pthread_cond_wait(&fs->wb_cond, &fs->wb_lock);
	pthread_mutex_unlock(&fs->wb_lock);
}

void sfs__writeback_inode(struct sfs *fs, struct sinode *ino)
{
	struct extent *e = take_inode_extents(fs, ino), *ev[WB_CLUSTER_EXTENTS];

	while (e) {
		unsigned n = 0;
		uint64_t pages = 0;

		while (e && n < WB_CLUSTER_EXTENTS && pages < WB_CLUSTER_PAGES) {
			ev[n++] = e;
			pages += e->nr_pages;
			e = e->next;
			ev[n - 1]->next = NULL;
		}
		writeback_cluster(fs, ev, n, NULL);
	}
	wait_inode_extents(fs, ino);
}

/* Drop one extent taken off the FIFO: its pages leave the cache unwritten
 * and its reservation goes back. */
static void drop_extent(struct sfs *fs, struct sinode *ino, struct extent *e)
{
	uint64_t bytes = (uint64_t)e->nr_pages * SFS_PAGE;

	pthread_rwlock_wrlock(&ino->lock);
	for (uint32_t i = 0; i < e->nr_pages; i++) {
		page_remove(ino, e->pages[i]);
		free(e->pages[i]);
	}
	pthread_rwlock_unlock(&ino->lock);
	extent_release(e);
	SFS_MUST(srsv_ctx_account_delalloc(fs->ctx, -(int64_t)bytes, 0));
	atomic_fetch_sub(&fs->dirty_bytes, bytes);
	pthread_mutex_lock(&fs->wb_lock);
	ino->nr_extents--;
	fs->wb_gen++;
	pthread_cond_broadcast(&fs->wb_cond);
	pthread_mutex_unlock(&fs->wb_lock);
	extent_free(fs, e);
}

void sfs__drop_inode_cache(struct sfs *fs, struct sinode *ino)
{
	struct extent *e = take_inode_extents(fs, ino), *next;

	for (; e; e = next) {
		next = e->next;
		drop_extent(fs, ino, e);
	}
	wait_inode_extents(fs, ino);
}

void sfs__punch_cache(struct sfs *fs, struct sinode *ino, uint64_t first,
		      uint64_t end)
{
	struct extent *e = take_inode_extents(fs, ino), *next;
	struct extent *keep = NULL, **tail = &keep, *ev[WB_CLUSTER_EXTENTS];

	for (; e; e = next) {
		bool inside = e->nr_pages > 0;

		next = e->next;
		e->next = NULL;
		/* pages[] ascend: the first and the last decide. */
		if (inside)
			inside = e->pages[0]->index >= first &&
				 e->pages[e->nr_pages - 1]->index < end;
		if (inside) {
			drop_extent(fs, ino, e);
		} else {
			*tail = e;
			tail = &e->next;
		}
	}
	while (keep) {
		unsigned n = 0;
		uint64_t pages = 0;

		while (keep && n < WB_CLUSTER_EXTENTS &&
		       pages < WB_CLUSTER_PAGES) {
			ev[n++] = keep;
			pages += keep->nr_pages;
			keep = keep->next;
			ev[n - 1]->next = NULL;
		}
		writeback_cluster(fs, ev, n, NULL);
	}
	wait_inode_extents(fs, ino);
}
