/* SPDX-License-Identifier: MIT */
/*
 * spacefs inodes and namespace.
 *
 * The backing directory holds the tree as it is: names, attributes and
 * file contents.  Namespace operations are applied to it at once (the
 * next lookup must see them), and their metadata cost is accounted the
 * btrfs way: each one reserves one item's worth of metadata in the ctx's
 * delayed-items rsv (FLUSH_ALL, or FLUSH_ALL_STEAL for deletions, which
 * must not fail on a full file system) and queues a delayed item; the
 * DELAYED_ITEMS flush states and the commit apply the items, copying the
 * leaves they touch and returning the rest of the reservation.
 *
 * An inode is known by its backing st_ino.  Its state (struct sinode)
 * lives from first use to deletion or unmount; a recycled inode number
 * after a deletion gets a fresh sinode, because deletion removes the old
 * one from the table.
 *
 * Space at mount: the backing tree is scanned, each file's allocated pages
 * counted with FIEMAP (a file written through spacefs has exactly the
 * pages it wrote or preallocated allocated; unwritten extents, which
 * SEEK_DATA reports as holes on ext4, and blocks preallocated past EOF
 * count; SEEK_DATA / SEEK_HOLE where FIEMAP is missing, as on tmpfs,
 * whose fallocated pages SEEK_DATA does report), each inode's items counted in
 * the leaf of its number (SFS_LEAF_INODES consecutive numbers share one),
 * and the pools are created already holding that much used space.
 *
 * Descriptors: an inode keeps its backing fd from first use, so writeback
 * and the commit's fdatasync() can reach it after the last close.  Past
 * fs->fd_budget (half of RLIMIT_NOFILE) the opener writes everything back,
 * commits and closes the fds that nothing needs any more (no handle, no
 * dirty page, no extent in flight, not on the running transaction's file
 * list); they are opened again by path on the next use.  20,000 small files
 * used to end in EMFILE and a daemon that could not finish its unmount.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "internal.h"

/* ---- paths ---- */

/* The backing path of a mount path ("/" is "."). */
static const char *rel(const char *path)
{
	while (*path == '/')
		path++;
	return *path ? path : ".";
}

/* The tenant a path belongs to: its first component names a tenant and
 * something follows it (the tenant directory itself belongs to nobody). */
static int path_tenant(struct sfs *fs, const char *path)
{
	const char *p = path, *end;
	size_t n;

	while (*p == '/')
		p++;
	end = strchr(p, '/');
	if (!end || !end[1])
		return -1;
	n = (size_t)(end - p);
	for (unsigned i = 0; i < fs->cfg.nr_tenants; i++)
		if (strlen(fs->tenants[i].name) == n &&
		    !memcmp(fs->tenants[i].name, p, n))
			return (int)i;
	return -1;
}

/* Copy the parent of @path into @buf ("." for top-level names). */
static void parent_of(const char *path, char *buf, size_t size)
{
	const char *r = rel(path), *slash = strrchr(r, '/');
	size_t n = slash ? (size_t)(slash - r) : 0;

	if (!n || n >= size) {
		snprintf(buf, size, ".");
		return;
	}
	memcpy(buf, r, n);
	buf[n] = '\0';
}

/* Mark pages [first, end) allocated (and preallocated if @unwritten). */
static int mark_pages(struct sinode *fill, uint64_t first, uint64_t end,
		      bool unwritten)
{
	for (uint64_t p = first; p < end; p++) {
		if (sfs__alloc_set(fill, p))
			return -ENOMEM;
		if (unwritten)
			sfs__prealloc_set(fill, p);
	}
	return 0;
}

/* FIEMAP over pages [first, end): calls @fn for each mapped run of pages
 * (clipped to the range, ascending, not overlapping).  -EOPNOTSUPP without
 * FIEMAP. */
static int fiemap_pages(int fd, uint64_t first, uint64_t end,
			int (*fn)(void *arg, uint64_t first, uint64_t end,
				  bool unwritten),
			void *arg)
{
	enum { NR = 64 };
	union {
		struct fiemap fm;
		unsigned char raw[sizeof(struct fiemap) +
				  NR * sizeof(struct fiemap_extent)];
	} u;
	uint64_t start = first * SFS_PAGE, stop = end * SFS_PAGE;
	uint64_t next_page = first;
	bool last = false;
	int ret;

	while (!last && start < stop) {
		memset(&u, 0, sizeof(u));
		u.fm.fm_start = start;
		u.fm.fm_length = stop - start;
		u.fm.fm_extent_count = NR;
		if (ioctl(fd, FS_IOC_FIEMAP, &u.fm))
			return errno == EOPNOTSUPP || errno == ENOTTY ||
			       errno == EINVAL ? -EOPNOTSUPP : -errno;
		if (!u.fm.fm_mapped_extents)
			break;
		for (uint32_t i = 0; i < u.fm.fm_mapped_extents; i++) {
			const struct fiemap_extent *x = &u.fm.fm_extents[i];
			uint64_t a = sfs__max(x->fe_logical / SFS_PAGE,
					      next_page);
			uint64_t b = sfs__min((x->fe_logical + x->fe_length +
					       SFS_PAGE - 1) / SFS_PAGE, end);

			if (b > a) {
				ret = fn(arg, a, b, x->fe_flags &
					 FIEMAP_EXTENT_UNWRITTEN);
				if (ret)
					return ret;
				next_page = b;
			}
			start = sfs__max(start, x->fe_logical + x->fe_length);
			if (x->fe_flags & FIEMAP_EXTENT_LAST)
				last = true;
		}
	}
	return 0;
}

struct count_arg {
	uint64_t count;
	struct sinode *fill;
};

static int count_run(void *arg, uint64_t first, uint64_t end, bool unwritten)
{
	struct count_arg *c = arg;

	c->count += end - first;
	return c->fill ? mark_pages(c->fill, first, end, unwritten) : 0;
}

/* FIEMAP: every extent, past EOF too.  -EOPNOTSUPP without FIEMAP. */
static int count_fiemap(int fd, uint64_t *pages, struct sinode *fill)
{
	struct count_arg c = { 0, fill };
	int ret = fiemap_pages(fd, 0, FIEMAP_MAX_OFFSET / SFS_PAGE, count_run,
			       &c);

	if (!ret)
		*pages = c.count;
	return ret;
}

struct hole_arg {
	struct sinode *n;
	uint64_t next, cut;		/* next page not looked at */
};

/* Pages between two mapped runs are not allocated any more. */
static int hole_run(void *arg, uint64_t first, uint64_t end, bool unwritten)
{
	struct hole_arg *h = arg;

	(void)unwritten;
	if (first > h->next)
		h->cut += sfs__alloc_clear_range(h->n, h->next, first - 1);
	h->next = end;
	return 0;
}

/*
 * @pages of @n's blocks were freed (delete, truncate, punch): they leave
 * the file system's and the tenant's usage, stay pinned until the commit
 * (COW: the old blocks may still be referenced) and leave their chunks.
 * trans_lock held.
 */
static void pages_freed_locked(struct sfs *fs, struct sinode *n,
			       uint64_t pages)
{
	if (!pages)
		return;
	fs->used_pages -= pages;
	if (n->tenant >= 0)
		fs->tenants[n->tenant].used_pages -= pages;
	sfs__pin_locked(fs, n, pages, 0);
	sfs__chunks_free_locked(fs, n, pages);
}

/* After a punch or a truncate of pages [first, end) in the backing file:
 * clear what the backing file system really freed (ext4 punches nothing
 * past EOF, and frees every block past EOF at any truncate that does not
 * grow the file, preallocated ones included); without FIEMAP, the whole
 * range if @all.  Returns the pages cleared. */
static uint64_t clear_freed(struct sinode *n, uint64_t first, uint64_t end,
			    bool all)
{
	struct hole_arg h = { n, first, 0 };

	/* Nothing past the last allocated page to clear. */
	end = sfs__min(end, sfs__alloc_end(n));
	if (end <= first)
		return 0;
	if (fiemap_pages(n->fd, first, end, hole_run, &h))
		return all ? sfs__alloc_clear_range(n, first, end - 1) : 0;
	if (end > h.next)
		h.cut += sfs__alloc_clear_range(n, h.next, end - 1);
	return h.cut;
}

int sfs__count_alloc(int fd, uint64_t size, uint64_t *pages,
		     struct sinode *fill)
{
	uint64_t off = 0, count = 0, next_page = 0;
	int ret = count_fiemap(fd, pages, fill);

	if (ret != -EOPNOTSUPP)
		return ret;
	while (off < size) {
		off_t d = lseek(fd, (off_t)off, SEEK_DATA), h;
		uint64_t first, end;

		if (d < 0) {
			if (errno == ENXIO)
				break;
			/* No SEEK_DATA: the whole file is data. */
			d = (off_t)off;
			h = (off_t)size;
		} else {
			h = lseek(fd, d, SEEK_HOLE);
			if (h < 0)
				h = (off_t)size;
		}
		if ((uint64_t)h > size)
			h = (off_t)size;
		first = sfs__max((uint64_t)d / SFS_PAGE, next_page);
		end = ((uint64_t)h + SFS_PAGE - 1) / SFS_PAGE;
		if (end > first) {
			if (fill && mark_pages(fill, first, end, false))
				return -ENOMEM;
			count += end - first;
		}
		next_page = sfs__max(next_page, end);
		if ((uint64_t)h <= off)
			break;
		off = (uint64_t)h;
	}
	*pages = count;
	return 0;
}

int sfs__load_locked(struct sinode *ino)
{
	struct stat st;
	uint64_t pages;
	int ret;

	if (ino->loaded)
		return 0;
	if (fstat(ino->fd, &st))
		return -errno;
	ino->size = (uint64_t)st.st_size;
	ret = sfs__count_alloc(ino->fd, ino->size, &pages, ino);
	if (ret)
		return ret;
	ino->loaded = true;
	return 0;
}

/* ---- inode table ---- */

static size_t ino_slot(uint64_t ino, size_t size)
{
	return (size_t)((ino * UINT64_C(0x9e3779b97f4a7c15)) >> 32) &
	       (size - 1);
}

static void itable_grow(struct sfs *fs)
{
	size_t size = fs->itable_size ? fs->itable_size * 2 : 256;
	struct sinode **t = calloc(size, sizeof(*t));

	if (!t)
		return;
	for (size_t i = 0; i < fs->itable_size; i++) {
		struct sinode *n = fs->itable[i], *next;

		for (; n; n = next) {
			size_t s = ino_slot(n->ino, size);

			next = n->hnext;
			n->hnext = t[s];
			t[s] = n;
		}
	}
	free(fs->itable);
	fs->itable = t;
	fs->itable_size = size;
}

static struct sinode *itable_find(struct sfs *fs, uint64_t ino)
{
	struct sinode *n;

	if (!fs->itable_size)
		return NULL;
	for (n = fs->itable[ino_slot(ino, fs->itable_size)]; n; n = n->hnext)
		if (n->ino == ino)
			return n;
	return NULL;
}

void sfs__iget_ref(struct sinode *ino)
{
	atomic_fetch_add(&ino->refs, 1);
}

struct sinode *sfs__ilookup(struct sfs *fs, uint64_t ino)
{
	struct sinode *n;

	pthread_mutex_lock(&fs->itable_lock);
	n = itable_find(fs, ino);
	if (n)
		sfs__iget_ref(n);
	pthread_mutex_unlock(&fs->itable_lock);
	return n;
}

struct sinode *sfs__iget(struct sfs *fs, uint64_t ino, int tenant,
			 bool is_reg, bool leaf_exists)
{
	struct sinode *n;

	pthread_mutex_lock(&fs->itable_lock);
	n = itable_find(fs, ino);
	if (n) {
		sfs__iget_ref(n);
		pthread_mutex_unlock(&fs->itable_lock);
		return n;
	}
	if (fs->nr_inodes >= 2 * fs->itable_size)
		itable_grow(fs);
	n = calloc(1, sizeof(*n));
	if (!n || !fs->itable_size) {
		pthread_mutex_unlock(&fs->itable_lock);
		free(n);
		return NULL;
	}
	n->ino = ino;
	atomic_init(&n->refs, 2);	/* the table's and the caller's */
	n->tenant = tenant;
	n->is_reg = is_reg;
	n->fd = -1;
	n->leaf_exists = leaf_exists;
	n->bmap.total = &fs->map_blocks;
	pthread_mutex_init(&n->wlock, NULL);
	pthread_rwlock_init(&n->lock, NULL);
	n->hnext = fs->itable[ino_slot(ino, fs->itable_size)];
	fs->itable[ino_slot(ino, fs->itable_size)] = n;
	fs->nr_inodes++;
	pthread_mutex_unlock(&fs->itable_lock);
	return n;
}

static void ifree(struct sfs *fs, struct sinode *n)
{
	if (n->fd >= 0) {
		close(n->fd);
		atomic_fetch_sub(&fs->nr_fds, 1);
	}
	sfs__free_pages(n);
	sfs__chunks_forget(fs, n);
	sfs__bmap_free(n);
	pthread_mutex_destroy(&n->wlock);
	pthread_rwlock_destroy(&n->lock);
	free(n);
}

void sfs__iput(struct sfs *fs, struct sinode *n)
{
	if (n && atomic_fetch_sub(&n->refs, 1) == 1)
		ifree(fs, n);
}

/* Remove a deleted inode from the table (drops the table's reference). */
static void iremove(struct sfs *fs, struct sinode *n)
{
	struct sinode **pp;
	bool found = false;

	pthread_mutex_lock(&fs->itable_lock);
	for (pp = &fs->itable[ino_slot(n->ino, fs->itable_size)]; *pp;
	     pp = &(*pp)->hnext) {
		if (*pp == n) {
			*pp = n->hnext;
			fs->nr_inodes--;
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&fs->itable_lock);
	if (found)
		sfs__iput(fs, n);
}

void sfs__itable_destroy(struct sfs *fs)
{
	for (size_t i = 0; i < fs->itable_size; i++) {
		struct sinode *n = fs->itable[i], *next;

		for (; n; n = next) {
			next = n->hnext;
			sfs__iput(fs, n);
		}
	}
	free(fs->itable);
	fs->itable = NULL;
	fs->itable_size = 0;
}

/* The sinode of an existing path (a reference), with its stat. */
static int path_iget(struct sfs *fs, const char *path, struct stat *st,
		     struct sinode **out)
{
	if (fstatat(fs->dirfd, rel(path), st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	*out = sfs__iget(fs, (uint64_t)st->st_ino, path_tenant(fs, path),
			 S_ISREG(st->st_mode), true);
	return *out ? 0 : -ENOMEM;
}

static int parent_iget(struct sfs *fs, const char *path, struct sinode **out)
{
	char parent[4096];
	struct stat st;

	parent_of(path, parent, sizeof(parent));
	if (fstatat(fs->dirfd, parent, &st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	*out = sfs__iget(fs, (uint64_t)st.st_ino, -1, false, true);
	return *out ? 0 : -ENOMEM;
}

/*
 * Too many backing descriptors (@force: an open just failed with EMFILE or
 * ENFILE): write everything back, commit and close the idle ones.  Past
 * the budget one thread reclaims and the others go on (the budget is half
 * the limit: they have the other half).  Out of descriptors, an opener
 * waits for the reclaim in flight, if any, and retries once it is done,
 * or reclaims itself: only try-locking here left concurrent copiers with
 * EMFILE while another thread was still committing (two cp -r of 300
 * files under a 256-descriptor limit failed 329 opens).  No lock held.
 */
static void fd_reclaim(struct sfs *fs, bool force)
{
	uint64_t closed, gen;

	if (!force && atomic_load(&fs->nr_fds) <= fs->fd_budget)
		return;
	gen = atomic_load(&fs->fd_reclaims);
	if (!force) {
		if (pthread_mutex_trylock(&fs->fd_reclaim_lock))
			return;
	} else {
		pthread_mutex_lock(&fs->fd_reclaim_lock);
		if (atomic_load(&fs->fd_reclaims) != gen) {
			/* One ended while we waited: its room is ours. */
			pthread_mutex_unlock(&fs->fd_reclaim_lock);
			return;
		}
	}
	sfs_sync(fs);
	closed = sfs__close_idle(fs);
	atomic_fetch_add(&fs->fd_reclaims, 1);
	sfs__trace(fs, "fd_reclaim closed=%" PRIu64 " open=%" PRIu64 " force=%d",
		   closed, (uint64_t)atomic_load(&fs->nr_fds), force);
	pthread_mutex_unlock(&fs->fd_reclaim_lock);
}

/* Attempts of an open that keeps failing with EMFILE: each one follows a
 * reclaim (ours or another thread's), so more mean a descriptor leak or a
 * limit below what the open handles alone need. */
#define FD_RECLAIM_TRIES 8

/* openat() under the backing root that makes room when the process is out
 * of descriptors; counted in nr_fds unless O_DIRECTORY (readdir's). */
static int open_backing(struct sfs *fs, const char *path, int flags,
			mode_t mode)
{
	int fd = -1;

	for (int i = 0; i < FD_RECLAIM_TRIES; i++) {
		fd = openat(fs->dirfd, rel(path), flags, mode);
		if (fd >= 0 || (errno != EMFILE && errno != ENFILE))
			break;
		atomic_fetch_add(&fs->fd_emfile, 1);
		fd_reclaim(fs, true);
	}
	if (fd >= 0 && !(flags & O_DIRECTORY))
		atomic_fetch_add(&fs->nr_fds, 1);
	return fd;
}

/* Open the backing file of a regular inode (if it is not), load it, and
 * count the caller as a user of the fd (unpin() when done, or the handle's
 * release). */
static int ensure_open(struct sfs *fs, struct sinode *n, const char *path)
{
	int ret = 0;

	fd_reclaim(fs, false);
	pthread_rwlock_wrlock(&n->lock);
	if (n->fd < 0) {
		pthread_rwlock_unlock(&n->lock);
		/* Opened without the lock: the open may have to reclaim,
		 * which writes back, which takes the lock. */
		int fd = open_backing(fs, path, O_RDWR | O_CLOEXEC |
				      O_NOFOLLOW, 0);

		if (fd < 0)
			return -errno;
		pthread_rwlock_wrlock(&n->lock);
		if (n->fd < 0) {
			n->fd = fd;
		} else {
			close(fd);
			atomic_fetch_sub(&fs->nr_fds, 1);
		}
	}
	ret = sfs__load_locked(n);
	if (!ret)
		atomic_fetch_add(&n->nr_open, 1);
	pthread_rwlock_unlock(&n->lock);
	return ret;
}

static void unpin(struct sinode *n)
{
	atomic_fetch_sub(&n->nr_open, 1);
}

uint64_t sfs__close_idle(struct sfs *fs)
{
	struct sinode **v;
	size_t nr = 0, cap;
	uint64_t closed = 0;

	pthread_mutex_lock(&fs->itable_lock);
	cap = fs->nr_inodes;
	v = cap ? malloc(cap * sizeof(*v)) : NULL;
	for (size_t i = 0; v && i < fs->itable_size; i++)
		for (struct sinode *n = fs->itable[i]; n && nr < cap;
		     n = n->hnext)
			if (n->is_reg && !atomic_load(&n->nr_open)) {
				sfs__iget_ref(n);
				v[nr++] = n;
			}
	pthread_mutex_unlock(&fs->itable_lock);
	/* No commit in flight: it fdatasync()s the files of its list. */
	pthread_mutex_lock(&fs->commit_lock);
	for (size_t i = 0; i < nr; i++) {
		struct sinode *n = v[i];
		bool busy;

		pthread_rwlock_wrlock(&n->lock);
		pthread_mutex_lock(&fs->wb_lock);
		busy = n->nr_extents != 0;
		pthread_mutex_unlock(&fs->wb_lock);
		pthread_mutex_lock(&fs->trans_lock);
		busy |= n->sync_trans == fs->trans;
		pthread_mutex_unlock(&fs->trans_lock);
		/* Handles and pins are taken under this lock: none now. */
		if (!busy && n->fd >= 0 && !n->nr_pages &&
		    !atomic_load(&n->nr_open)) {
			close(n->fd);
			n->fd = -1;
			atomic_fetch_sub(&fs->nr_fds, 1);
			closed++;
		}
		pthread_rwlock_unlock(&n->lock);
		sfs__iput(fs, n);
	}
	pthread_mutex_unlock(&fs->commit_lock);
	free(v);
	return closed;
}

/* ---- deletion: the data goes to pinned until the commit ---- */

/*
 * The last link of @n is gone: drop its dirty pages (their reservations go
 * back), wait for writeback in flight, pin its allocated pages, and take it
 * out of the table.  The leaf is freed by the delayed item.
 */
static void inode_delete(struct sfs *fs, struct sinode *n)
{
	uint64_t pages = 0;

	pthread_mutex_lock(&fs->trans_lock);
	n->deleted = true;
	pthread_mutex_unlock(&fs->trans_lock);
	if (n->is_reg) {
		sfs__drop_inode_cache(fs, n);
		pthread_rwlock_wrlock(&n->lock);
		pages = sfs__alloc_clear_range(n, 0, UINT64_MAX);
		pthread_mutex_lock(&fs->trans_lock);
		pages_freed_locked(fs, n, pages);
		pthread_mutex_unlock(&fs->trans_lock);
		n->size = 0;
		pthread_rwlock_unlock(&n->lock);
	}
	iremove(fs, n);
}

/* ---- namespace operations ---- */

/*
 * A file's attributes are read after its dirty pages are written back, as
 * NFS's nfs_getattr() writes back first.  Writeback moves the backing
 * file's ctime (and its mtime, which writeback puts back: cache.c), so a
 * ctime read while pages were dirty would change under a reader who
 * changed nothing, at the writeback or across a remount (fstests
 * generic/003), and a ctime kept apart from the backing file's would not
 * survive the remount.  Afterwards the backing file's times are the
 * file's: a write moved mtime and ctime (080, 215, 423), and nothing moves
 * them again until the next change.  Only files with dirty pages pay; a
 * reader waits for a writer of the file (its wlock).  Returns true if the
 * file had dirty pages.
 */
static bool getattr_writeback(struct sfs *fs, struct sinode *n)
{
	bool dirty;

	pthread_rwlock_rdlock(&n->lock);
	dirty = n->loaded && n->nr_pages;
	pthread_rwlock_unlock(&n->lock);
	if (!dirty)
		return false;
	pthread_mutex_lock(&n->wlock);
	sfs__writeback_inode(fs, n);
	pthread_mutex_unlock(&n->wlock);
	return true;
}

int sfs_getattr(struct sfs *fs, const char *path, struct stat *st)
{
	struct sinode *n;
	int ret = 0;

	if (fstatat(fs->dirfd, rel(path), st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	if (!S_ISREG(st->st_mode))
		return 0;
	n = sfs__ilookup(fs, (uint64_t)st->st_ino);
	if (!n)
		return 0;
	if (getattr_writeback(fs, n) &&
	    fstatat(fs->dirfd, rel(path), st, AT_SYMLINK_NOFOLLOW))
		ret = -errno;
	pthread_rwlock_rdlock(&n->lock);
	if (!ret && n->loaded) {
		/* Pages dirtied since: a size not written yet, blocks not
		 * allocated yet (ext4 and btrfs count delalloc too). */
		st->st_size = (off_t)n->size;
		st->st_blocks += (blkcnt_t)(sfs__delalloc_pages(n) *
					    (SFS_PAGE / 512));
	}
	pthread_rwlock_unlock(&n->lock);
	sfs__iput(fs, n);
	return ret;
}

int sfs_fgetattr(struct sfs *fs, struct sfs_file *f, struct stat *st)
{
	struct sinode *n = f->ino;

	getattr_writeback(fs, n);
	pthread_rwlock_rdlock(&n->lock);
	if (fstat(n->fd, st)) {
		int err = errno;

		pthread_rwlock_unlock(&n->lock);
		return -err;
	}
	st->st_size = (off_t)n->size;
	st->st_blocks += (blkcnt_t)(sfs__delalloc_pages(n) * (SFS_PAGE / 512));
	pthread_rwlock_unlock(&n->lock);
	return 0;
}

int sfs_readlink(struct sfs *fs, const char *path, char *buf, size_t size)
{
	ssize_t n;

	if (!size)
		return -EINVAL;
	n = readlinkat(fs->dirfd, rel(path), buf, size - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

int sfs_opendir(struct sfs *fs, const char *path)
{
	int fd = open_backing(fs, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC,
			      0);

	return fd < 0 ? -errno : fd;
}

/* The common tail of every creation: the new inode gets a leaf and the
 * parent's leaf is copied when the item is applied.  Consumes the item
 * the caller reserved (given back on failure). */
static int created(struct sfs *fs, const char *path, struct sinode **out)
{
	struct sinode *n, *parent;
	struct stat st;
	int ret;

	if (fstatat(fs->dirfd, rel(path), &st, AT_SYMLINK_NOFOLLOW)) {
		ret = -errno;
		sfs__item_unreserve(fs);
		return ret;
	}
	n = sfs__iget(fs, (uint64_t)st.st_ino, path_tenant(fs, path),
		      S_ISREG(st.st_mode), false);
	if (!n) {
		sfs__item_unreserve(fs);
		return -ENOMEM;
	}
	ret = parent_iget(fs, path, &parent);
	if (ret) {
		sfs__iput(fs, n);
		sfs__item_unreserve(fs);
		return ret;
	}
	sfs__item_queue(fs, n, parent, NULL, NULL);
	sfs__iput(fs, parent);
	if (out)
		*out = n;
	else
		sfs__iput(fs, n);
	return 0;
}

int sfs_mknod(struct sfs *fs, const char *path, mode_t mode, dev_t rdev)
{
	int ret = sfs__item_reserve(fs, SRSV_FLUSH_ALL);

	if (ret)
		return ret;
	if (mknodat(fs->dirfd, rel(path), mode, rdev)) {
		ret = -errno;
		sfs__item_unreserve(fs);
		return ret;
	}
	return created(fs, path, NULL);
}

int sfs_mkdir(struct sfs *fs, const char *path, mode_t mode)
{
	int ret = sfs__item_reserve(fs, SRSV_FLUSH_ALL);

	if (ret)
		return ret;
	if (mkdirat(fs->dirfd, rel(path), mode)) {
		ret = -errno;
		sfs__item_unreserve(fs);
		return ret;
	}
	return created(fs, path, NULL);
}

int sfs_symlink(struct sfs *fs, const char *target, const char *path)
{
	int ret = sfs__item_reserve(fs, SRSV_FLUSH_ALL);

	if (ret)
		return ret;
	if (symlinkat(target, fs->dirfd, rel(path))) {
		ret = -errno;
		sfs__item_unreserve(fs);
		return ret;
	}
	return created(fs, path, NULL);
}

/* Remove a name; @dir: rmdir.  Deletions reserve with FLUSH_ALL_STEAL: a
 * full file system must still let its users delete (btrfs's unlink may
 * steal from the global reserve). */
static int remove_name(struct sfs *fs, const char *path, bool dir)
{
	struct sinode *n = NULL, *parent = NULL;
	struct stat st = { 0 };
	bool last, pinned = false;
	int ret;

	if (path_tenant(fs, path) < 0 && dir) {
		/* A tenant's directory stays while the mount has the
		 * tenant. */
		for (unsigned i = 0; i < fs->cfg.nr_tenants; i++)
			if (!strcmp(rel(path), fs->tenants[i].name))
				return -EBUSY;
	}
	ret = sfs__item_reserve(fs, SRSV_FLUSH_ALL_STEAL);
	if (ret)
		return ret;
	ret = path_iget(fs, path, &st, &n);
	if (!ret)
		ret = parent_iget(fs, path, &parent);
	last = dir || st.st_nlink <= 1;
	/* Count the file's blocks while its name still opens it. */
	if (!ret && n->is_reg && last) {
		ret = ensure_open(fs, n, path);
		pinned = !ret;
	}
	if (!ret && (dir ? unlinkat(fs->dirfd, rel(path), AT_REMOVEDIR) :
			   unlinkat(fs->dirfd, rel(path), 0)))
		ret = -errno;
	if (ret) {
		sfs__item_unreserve(fs);
	} else if (last) {
		inode_delete(fs, n);
		sfs__item_queue(fs, parent, NULL, NULL, n);
	} else {
		sfs__item_queue(fs, parent, n, NULL, NULL);
	}
	if (pinned)
		unpin(n);
	if (n)
		sfs__iput(fs, n);
	if (parent)
		sfs__iput(fs, parent);
	return ret;
}

int sfs_unlink(struct sfs *fs, const char *path)
{
	return remove_name(fs, path, false);
}

int sfs_rmdir(struct sfs *fs, const char *path)
{
	return remove_name(fs, path, true);
}

int sfs_rename(struct sfs *fs, const char *from, const char *to,
	       unsigned flags)
{
	struct sinode *n = NULL, *victim = NULL, *pfrom = NULL, *pto = NULL;
	struct stat st, vst;
	bool have_victim, pinned = false;
	int ret;

	/* Tenants are separate trees, as btrfs subvolumes: a rename or link
	 * across them is -EXDEV (the caller copies instead). */
	if (path_tenant(fs, from) != path_tenant(fs, to))
		return -EXDEV;
	ret = sfs__item_reserve(fs, SRSV_FLUSH_ALL_STEAL);
	if (ret)
		return ret;
	if (flags & RENAME_WHITEOUT) {
		/* The whiteout the backing file system leaves at @from (a
		 * character device 0:0, overlayfs's) is a new inode: one more
		 * item, as mknod's.  Unaccounted, its deletion would free a
		 * leaf nobody allocated. */
		ret = sfs__item_reserve(fs, SRSV_FLUSH_ALL);
		if (ret) {
			sfs__item_unreserve(fs);
			return ret;
		}
	}
	ret = path_iget(fs, from, &st, &n);
	if (!ret)
		ret = parent_iget(fs, from, &pfrom);
	if (!ret)
		ret = parent_iget(fs, to, &pto);
	have_victim = !ret && !(flags & RENAME_EXCHANGE) &&
		      !fstatat(fs->dirfd, rel(to), &vst, AT_SYMLINK_NOFOLLOW) &&
		      vst.st_ino != st.st_ino;
	if (have_victim) {
		ret = path_iget(fs, to, &vst, &victim);
		if (!ret && victim->is_reg && vst.st_nlink <= 1) {
			ret = ensure_open(fs, victim, to);
			pinned = !ret;
		}
	}
	if (!ret && renameat2(fs->dirfd, rel(from), fs->dirfd, rel(to), flags))
		ret = -errno;
	if (ret) {
		sfs__item_unreserve(fs);
		if (flags & RENAME_WHITEOUT)
			sfs__item_unreserve(fs);
	} else {
		bool gone = victim && (S_ISDIR(vst.st_mode) || vst.st_nlink <= 1);

		if (gone)
			inode_delete(fs, victim);
		sfs__item_queue(fs, pfrom, pto, n, gone ? victim : NULL);
		/* (A failure here gives its item back: the whiteout then
		 * stays unaccounted, as after a crash.) */
		if (flags & RENAME_WHITEOUT)
			created(fs, from, NULL);
	}
	if (pinned)
		unpin(victim);
	if (n)
		sfs__iput(fs, n);
	if (victim)
		sfs__iput(fs, victim);
	if (pfrom)
		sfs__iput(fs, pfrom);
	if (pto)
		sfs__iput(fs, pto);
	return ret;
}

int sfs_link(struct sfs *fs, const char *from, const char *to)
{
	struct sinode *n = NULL, *parent = NULL;
	struct stat st;
	int ret;

	if (path_tenant(fs, from) != path_tenant(fs, to))
		return -EXDEV;
	ret = sfs__item_reserve(fs, SRSV_FLUSH_ALL);
	if (ret)
		return ret;
	ret = path_iget(fs, from, &st, &n);
	if (!ret)
		ret = parent_iget(fs, to, &parent);
	if (!ret && linkat(fs->dirfd, rel(from), fs->dirfd, rel(to), 0))
		ret = -errno;
	if (ret) {
		sfs__item_unreserve(fs);
	} else {
		sfs__item_queue(fs, parent, n, NULL, NULL);
	}
	if (n)
		sfs__iput(fs, n);
	if (parent)
		sfs__iput(fs, parent);
	return ret;
}

/* An attribute change: the inode's leaf is copied. */
static int setattr_item(struct sfs *fs, const char *path)
{
	struct sinode *n = NULL;	/* set when path_iget() succeeds */
	struct stat st;
	int ret = path_iget(fs, path, &st, &n);

	if (ret)
		return ret;
	sfs__item_queue(fs, n, NULL, NULL, NULL);
	sfs__iput(fs, n);
	return 0;
}

int sfs_chmod(struct sfs *fs, const char *path, mode_t mode)
{
	int ret = sfs__item_reserve(fs, SRSV_FLUSH_ALL);

	if (ret)
		return ret;
	if (fchmodat(fs->dirfd, rel(path), mode, 0)) {
		ret = -errno;
		sfs__item_unreserve(fs);
		return ret;
	}
	ret = setattr_item(fs, path);
	if (ret)
		sfs__item_unreserve(fs);
	return ret;
}

int sfs_chown(struct sfs *fs, const char *path, uid_t uid, gid_t gid)
{
	int ret = sfs__item_reserve(fs, SRSV_FLUSH_ALL);

	if (ret)
		return ret;
	if (fchownat(fs->dirfd, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW)) {
		ret = -errno;
		sfs__item_unreserve(fs);
		return ret;
	}
	ret = setattr_item(fs, path);
	if (ret)
		sfs__item_unreserve(fs);
	return ret;
}

/*
 * utimens: the file's dirty pages are written back first (under its wlock,
 * so no new ones come): writeback would otherwise stamp the backing file
 * again after the new times are set (tar, cp -a and rsync set them after
 * writing the data).  Then the backing file's times are the file's.
 */
int sfs_utimens(struct sfs *fs, const char *path, const struct timespec ts[2])
{
	struct sinode *n;
	struct stat st;
	int ret = sfs__item_reserve(fs, SRSV_FLUSH_ALL);

	if (ret)
		return ret;
	ret = path_iget(fs, path, &st, &n);
	if (ret) {
		sfs__item_unreserve(fs);
		return ret;
	}
	if (n->is_reg) {
		pthread_mutex_lock(&n->wlock);
		sfs__writeback_inode(fs, n);
	}
	if (utimensat(fs->dirfd, rel(path), ts, AT_SYMLINK_NOFOLLOW)) {
		ret = -errno;
	} else if (n->is_reg) {
		pthread_rwlock_wrlock(&n->lock);
		n->times_set = false;
		pthread_rwlock_unlock(&n->lock);
	}
	if (n->is_reg)
		pthread_mutex_unlock(&n->wlock);
	if (ret)
		sfs__item_unreserve(fs);
	else
		sfs__item_queue(fs, n, NULL, NULL, NULL);
	sfs__iput(fs, n);
	return ret;
}

/*
 * Truncate: write the file's dirty pages back first (so that the cache
 * never holds pages past EOF), then truncate the backing file.  Pages cut
 * off are pinned until the commit, as any freed data.
 */
static int truncate_inode(struct sfs *fs, struct sinode *n, off_t size)
{
	uint64_t cut = 0;
	int ret;

	if (size < 0)
		return -EINVAL;
	if ((uint64_t)size > fs->max_bytes)
		return -EFBIG;	/* inode_newsize_ok() */
	pthread_mutex_lock(&n->wlock);
	sfs__writeback_inode(fs, n);
	/* A truncate that frees space must work on a full file system, as
	 * unlink (writers are excluded: n->size is stable under wlock). */
	ret = sfs__item_reserve(fs, (uint64_t)size < n->size ?
				    SRSV_FLUSH_ALL_STEAL : SRSV_FLUSH_ALL);
	if (ret) {
		pthread_mutex_unlock(&n->wlock);
		return ret;
	}
	pthread_rwlock_wrlock(&n->lock);
	if (ftruncate(n->fd, size)) {
		ret = -errno;
		pthread_rwlock_unlock(&n->lock);
		pthread_mutex_unlock(&n->wlock);
		sfs__item_unreserve(fs);
		return ret;
	}
	cut = clear_freed(n, ((uint64_t)size + SFS_PAGE - 1) / SFS_PAGE,
			  UINT64_MAX, (uint64_t)size < n->size);
	n->size = (uint64_t)size;
	/* No dirty page is left and ftruncate() moved the backing file's
	 * mtime and ctime: they are the file's. */
	n->times_set = false;
	pthread_mutex_lock(&fs->trans_lock);
	pages_freed_locked(fs, n, cut);
	pthread_mutex_unlock(&fs->trans_lock);
	pthread_rwlock_unlock(&n->lock);
	pthread_mutex_unlock(&n->wlock);
	sfs__item_queue(fs, n, NULL, NULL, NULL);
	return 0;
}

int sfs_truncate(struct sfs *fs, const char *path, off_t size)
{
	struct sinode *n = NULL;	/* set when path_iget() succeeds */
	struct stat st;
	int ret = path_iget(fs, path, &st, &n);

	if (ret)
		return ret;
	if (!n->is_reg)
		ret = -EINVAL;
	if (!ret) {
		ret = ensure_open(fs, n, path);
		if (!ret) {
			ret = truncate_inode(fs, n, size);
			unpin(n);
		}
	}
	sfs__iput(fs, n);
	return ret;
}

int sfs_ftruncate(struct sfs *fs, struct sfs_file *f, off_t size)
{
	return truncate_inode(fs, f->ino, size);
}

/* ---- fallocate ---- */

/* Put @n on the running transaction's file list, so that the commit
 * fdatasync()s it before it unpins anything (trans_lock held). */
static void trans_file_add_locked(struct sfs *fs, struct sinode *n)
{
	if (n->sync_trans != fs->trans) {
		n->sync_trans = fs->trans;
		sfs__iget_ref(n);
		n->trans_next = fs->trans_files;
		fs->trans_files = n;
	}
}

/*
 * Preallocate [off, off + len) (mode 0 or FALLOC_FL_KEEP_SIZE), as
 * btrfs_fallocate(): reserve data space for the part of the range that has
 * no block yet (btrfs_alloc_data_chunk_ondemand() and the data qgroup
 * reservation there: srsv_delalloc_reserve() here, data space, the
 * tenant's quota and one extent item's metadata), fail before anything
 * changed, then allocate the blocks (fallocate on the backing file) and
 * count them as used (srsv_delalloc_finish(): may_use -> used, quota DATA
 * -> used, the leaf copied once per transaction).  The pages are marked
 * preallocated: a later write into one reserves no data (btrfs writes a
 * PREALLOC extent in place), so it cannot get ENOSPC for data.
 *
 * The file's dirty pages are written back first (wlock held: no new
 * ones), so that no page of the range is both dirty and newly allocated:
 * its extent has reserved data for a block the fallocate would provide.
 */
static int prealloc_range(struct sfs *fs, struct sinode *n, int mode,
			  off_t off, off_t len, uint64_t first, uint64_t last)
{
	struct srsv_quota *q = n->tenant >= 0 ?
			       fs->tenants[n->tenant].quota : NULL;
	struct srsv_delalloc_resv resv;
	uint64_t missing = 0, fresh = 0, meta_used, end = (uint64_t)off + (uint64_t)len;
	bool item = false, grow;
	int ret;

	sfs__writeback_inode(fs, n);
	pthread_rwlock_wrlock(&n->lock);
	/* The range may be far larger than the file system (a sparse
	 * preallocation): count what it has, not every page of it. */
	missing = last - first + 1 - sfs__alloc_count_range(n, first, last);
	grow = !(mode & FALLOC_FL_KEEP_SIZE) && end > n->size;
	pthread_rwlock_unlock(&n->lock);
	if (missing) {
		ret = srsv_delalloc_reserve(fs->ctx, q, missing * SFS_PAGE,
					    SRSV_DELALLOC_NORMAL, &resv);
		if (ret) {
			if (ret == -ENOSPC)
				atomic_fetch_add(&fs->enospc, 1);
			else if (ret == -EDQUOT)
				atomic_fetch_add(&fs->edquot, 1);
			sfs__trace(fs, "fallocate_error err=%d bytes=%" PRIu64,
				   ret, missing * SFS_PAGE);
			return ret;
		}
	} else if (grow) {
		/* Only the inode's size changes: one delayed item. */
		ret = sfs__item_reserve(fs, SRSV_FLUSH_ALL);
		if (ret)
			return ret;
		item = true;
	} else {
		return 0;	/* every block is there already */
	}
	/* The map's memory for the new pages, before anything changes: the
	 * reservation bounds the range by the free space now. */
	pthread_rwlock_wrlock(&n->lock);
	ret = missing ? sfs__alloc_reserve(n, first, last) : 0;
	pthread_rwlock_unlock(&n->lock);
	if (ret || fallocate(n->fd, mode, off, len)) {
		ret = ret ? ret : -errno;
		if (missing)
			SFS_MUST(srsv_delalloc_release(&resv));
		if (item)
			sfs__item_unreserve(fs);
		return ret;
	}
	pthread_rwlock_wrlock(&n->lock);
	pthread_mutex_lock(&fs->trans_lock);
	for (uint64_t p = first; missing && p <= last; p++) {
		if (!sfs__alloc_test(n, p)) {
			sfs__alloc_set(n, p);	/* reserved above */
			sfs__prealloc_set(n, p);
			fresh++;
		}
	}
	if (missing) {
		fs->used_pages += fresh;
		if (n->tenant >= 0)
			fs->tenants[n->tenant].used_pages += fresh;
		sfs__chunks_alloc_locked(fs, n, fresh);
		meta_used = sfs__leaf_cow_locked(fs, n);
		trans_file_add_locked(fs, n);
		ret = srsv_delalloc_finish(&resv, meta_used);
		if (ret || fresh != missing) {
			sfs__trace(fs, "fallocate_finish_error err=%d fresh=%"
				   PRIu64 " missing=%" PRIu64, ret, fresh,
				   missing);
			srsv_ctx_set_error(fs->ctx, ret ? ret : -EUCLEAN);
			ret = 0;	/* the blocks are there */
		}
	}
	pthread_mutex_unlock(&fs->trans_lock);
	if (grow)
		n->size = sfs__max(n->size, end);
	/* No dirty page (written back above); the backing file's times are
	 * the file's. */
	n->times_set = false;
	pthread_rwlock_unlock(&n->lock);
	if (item)
		sfs__item_queue(fs, n, NULL, NULL, NULL);
	sfs__trace(fs, "fallocate ino=%llu mode=%d off=%lld len=%lld fresh=%"
		   PRIu64, (unsigned long long)n->ino, mode, (long long)off,
		   (long long)len, fresh);
	return 0;
}

/*
 * Punch [off, off + len) (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE):
 * dirty extents whose pages all lie in the hole are dropped with their
 * reservations (as a delete drops them), the file's other dirty pages
 * written back (a partial page at an edge must reach the backing file
 * before the punch zeroes its part); then the backing file is punched and
 * its blocks in the hole are pinned until the commit, as a truncate's.
 * One delayed item (FLUSH_ALL_STEAL: freeing space must work on a full
 * file system, as unlink).
 */
static int punch_range(struct sfs *fs, struct sinode *n, off_t off, off_t len)
{
	uint64_t end = (uint64_t)off + (uint64_t)len;
	uint64_t full_first = ((uint64_t)off + SFS_PAGE - 1) / SFS_PAGE;
	uint64_t full_end = end / SFS_PAGE, cut = 0;
	int ret;

	struct stat st;

	ret = sfs__item_reserve(fs, SRSV_FLUSH_ALL_STEAL);
	if (ret)
		return ret;
	sfs__punch_cache(fs, n, full_first, full_end);
	pthread_rwlock_wrlock(&n->lock);
	/* Dropped pages past the backing file's end: the size they gave the
	 * file stays (KEEP_SIZE), as a hole. */
	if (!fstat(n->fd, &st) && (uint64_t)st.st_size < n->size &&
	    ftruncate(n->fd, (off_t)n->size))
		ret = -errno;
	if (!ret && fallocate(n->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      off, len))
		ret = -errno;
	if (ret) {
		pthread_rwlock_unlock(&n->lock);
		sfs__item_unreserve(fs);
		return ret;
	}
	if (full_end > full_first)
		cut = clear_freed(n, full_first, full_end, true);
	n->times_set = false;	/* no dirty page: the backing's are right */
	pthread_mutex_lock(&fs->trans_lock);
	if (cut) {
		pages_freed_locked(fs, n, cut);
		trans_file_add_locked(fs, n);
	}
	pthread_mutex_unlock(&fs->trans_lock);
	pthread_rwlock_unlock(&n->lock);
	sfs__item_queue(fs, n, NULL, NULL, NULL);
	sfs__trace(fs, "punch ino=%llu off=%lld len=%lld cut=%" PRIu64,
		   (unsigned long long)n->ino, (long long)off, (long long)len,
		   cut);
	return 0;
}

int sfs_fallocate(struct sfs *fs, struct sfs_file *f, int mode, off_t off,
		  off_t len)
{
	struct sinode *n = f->ino;
	int ret;

	if (mode != 0 && mode != FALLOC_FL_KEEP_SIZE &&
	    mode != (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE))
		return -EOPNOTSUPP;
	if (off < 0 || len <= 0)
		return -EINVAL;
	if (off > INT64_MAX - len || (uint64_t)(off + len) > fs->max_bytes)
		return -EFBIG;	/* vfs_fallocate()'s s_maxbytes check */
	if (!n->is_reg)
		return -ENODEV;
	pthread_mutex_lock(&n->wlock);
	if (mode & FALLOC_FL_PUNCH_HOLE)
		ret = punch_range(fs, n, off, len);
	else
		ret = prealloc_range(fs, n, mode, off, len,
				     (uint64_t)off / SFS_PAGE,
				     ((uint64_t)off + (uint64_t)len - 1) /
				     SFS_PAGE);
	pthread_mutex_unlock(&n->wlock);
	return ret;
}

/* ---- files ---- */

static int new_file(struct sinode *n, int flags, struct sfs_file **out)
{
	struct sfs_file *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->ino = n;
	f->flags = flags;
	if (flags & O_DIRECT)
		atomic_store(&n->direct_io, true);
	*out = f;
	return 0;
}

int sfs_open(struct sfs *fs, const char *path, int flags,
	     struct sfs_file **out)
{
	struct sinode *n = NULL;	/* set when path_iget() succeeds */
	struct stat st;
	int ret = path_iget(fs, path, &st, &n);

	if (ret)
		return ret;
	if (!n->is_reg)
		ret = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	if (!ret) {
		ret = ensure_open(fs, n, path);
		/* FUSE_CAP_ATOMIC_O_TRUNC (libfuse turns it on): the kernel
		 * passes O_TRUNC on and truncates nothing itself, so open
		 * must, or a file rewritten in place keeps its old tail. */
		if (!ret && (flags & O_TRUNC)) {
			ret = truncate_inode(fs, n, 0);
			if (ret)
				unpin(n);
		}
		if (!ret) {
			ret = new_file(n, flags, out);
			if (ret)
				unpin(n);
		}
	}
	if (ret)
		sfs__iput(fs, n);
	return ret;
}

int sfs_create(struct sfs *fs, const char *path, mode_t mode, int flags,
	       struct sfs_file **out)
{
	struct sinode *n;
	int fd, ret;

	ret = sfs__item_reserve(fs, SRSV_FLUSH_ALL);
	if (ret)
		return ret;
	fd_reclaim(fs, false);
	fd = open_backing(fs, path,
			  O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC | O_NOFOLLOW,
			  mode);
	if (fd < 0) {
		ret = -errno;
		sfs__item_unreserve(fs);
		if (ret == -EEXIST && !(flags & O_EXCL))
			return sfs_open(fs, path, flags, out);
		return ret;
	}
	ret = created(fs, path, &n);
	if (ret) {
		close(fd);
		atomic_fetch_sub(&fs->nr_fds, 1);
		return ret;
	}
	pthread_rwlock_wrlock(&n->lock);
	if (n->fd < 0) {
		n->fd = fd;
	} else {
		close(fd);
		atomic_fetch_sub(&fs->nr_fds, 1);
	}
	ret = sfs__load_locked(n);
	if (!ret)
		atomic_fetch_add(&n->nr_open, 1);
	pthread_rwlock_unlock(&n->lock);
	if (!ret) {
		ret = new_file(n, flags, out);
		if (ret)
			unpin(n);
	}
	if (ret)
		sfs__iput(fs, n);
	return ret;
}

void sfs_direct_io(struct sfs_file *f)
{
	atomic_store(&f->ino->direct_io, true);
}

/*
 * Pages cached by the kernel stay right across opens as long as every
 * change to the file's data goes through the kernel inode they belong to:
 * buffered writes, mmap, truncate and fallocate do.  An asynchronous
 * O_DIRECT write does not invalidate them (fuse_direct_IO() leaves that to
 * its completion, which does not: fstests generic/451 read stale data),
 * and a write through another name of a hard-linked file goes through that
 * name's kernel inode (libfuse's high-level API gives each name its own).
 * Files that ever saw O_DIRECT in this mount, and files with more than one
 * link, get their pages dropped at every open instead.
 */
bool sfs_keep_cache(struct sfs *fs, struct sfs_file *f)
{
	struct stat st;
	bool keep;

	(void)fs;
	if (atomic_load(&f->ino->direct_io))
		return false;
	pthread_rwlock_rdlock(&f->ino->lock);
	keep = f->ino->fd >= 0 && !fstat(f->ino->fd, &st) && st.st_nlink == 1;
	pthread_rwlock_unlock(&f->ino->lock);
	return keep;
}

void sfs_release(struct sfs *fs, struct sfs_file *f)
{
	unpin(f->ino);
	sfs__iput(fs, f->ino);
	free(f);
}

int sfs_fsync(struct sfs *fs, struct sfs_file *f)
{
	pthread_mutex_lock(&f->ino->wlock);
	sfs__writeback_inode(fs, f->ino);
	pthread_mutex_unlock(&f->ino->wlock);
	sfs__commit(fs);
	return atomic_load(&fs->wb_errors) ? -EIO : 0;
}

/* ---- the scan at mount ---- */

struct scan {
	uint64_t data_pages, inodes;
	uint64_t tenant_pages[SFS_MAX_TENANTS];
	uint64_t *links;		/* inodes with nlink > 1 seen */
	size_t nr_links, cap_links;
};

/* True if @ino was counted already (a hard link). */
static bool seen_link(struct scan *sc, uint64_t ino)
{
	for (size_t i = 0; i < sc->nr_links; i++)
		if (sc->links[i] == ino)
			return true;
	if (sc->nr_links == sc->cap_links) {
		size_t cap = sc->cap_links ? sc->cap_links * 2 : 64;
		uint64_t *n = realloc(sc->links, cap * sizeof(*n));

		if (!n)
			return false;
		sc->links = n;
		sc->cap_links = cap;
	}
	sc->links[sc->nr_links++] = ino;
	return false;
}

static int scan_dir(struct sfs *fs, struct scan *sc, int dfd, int tenant,
		    bool top)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;
	int ret = 0;

	if (!d) {
		close(dfd);
		return -errno;
	}
	while (!ret && (de = readdir(d))) {
		struct stat st;
		int t = tenant;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW)) {
			ret = -errno;
			break;
		}
		if (st.st_nlink > 1 && !S_ISDIR(st.st_mode) &&
		    seen_link(sc, (uint64_t)st.st_ino))
			continue;
		sc->inodes++;
		ret = sfs__leaf_add_scanned(fs, (uint64_t)st.st_ino);
		if (ret)
			break;
		if (top)
			for (unsigned i = 0; i < fs->cfg.nr_tenants; i++)
				if (!strcmp(de->d_name, fs->cfg.tenants[i].name))
					t = (int)i;
		if (S_ISREG(st.st_mode)) {
			int fd = openat(dirfd(d), de->d_name,
					O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
			uint64_t pages = 0;

			if (fd < 0) {
				ret = -errno;
				break;
			}
			ret = sfs__count_alloc(fd, (uint64_t)st.st_size, &pages,
					       NULL);
			close(fd);
			sc->data_pages += pages;
			if (tenant >= 0)
				sc->tenant_pages[tenant] += pages;
		} else if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), de->d_name,
					 O_RDONLY | O_DIRECTORY | O_CLOEXEC |
					 O_NOFOLLOW);

			if (sub < 0) {
				ret = -errno;
				break;
			}
			/* Only what is inside a tenant directory is the
			 * tenant's. */
			ret = scan_dir(fs, sc, sub, t, false);
		}
	}
	closedir(d);
	return ret;
}

int sfs__scan(struct sfs *fs, uint64_t *data_pages, uint64_t *inodes,
	      uint64_t tenant_pages[SFS_MAX_TENANTS])
{
	struct scan sc = { 0 };
	int dfd = openat(fs->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	int ret;

	if (dfd < 0)
		return -errno;
	sc.inodes = 1;		/* the root directory */
	ret = fstat(dfd, &st) ? -errno :
	      sfs__leaf_add_scanned(fs, (uint64_t)st.st_ino);
	if (ret) {
		close(dfd);
		return ret;
	}
	ret = scan_dir(fs, &sc, dfd, -1, true);
	free(sc.links);
	if (ret)
		return ret;
	*data_pages = sc.data_pages;
	*inodes = sc.inodes;
	memcpy(tenant_pages, sc.tenant_pages, sizeof(sc.tenant_pages));
	return 0;
}
