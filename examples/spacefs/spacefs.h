/* SPDX-License-Identifier: MIT */
/*
 * spacefs: the engine behind the FUSE glue (spacefs.c).
 *
 * The engine is a passthrough over a backing directory with its own
 * write-back cache and btrfs-like space accounting through libspacersv.  It
 * knows nothing about FUSE, so tests can drive it directly
 * (tests/spacefs/test_engine.c).  Every function takes paths relative to the
 * mount root, beginning with '/', and returns 0 (or a byte count) or a
 * negative errno.  All functions are thread-safe.
 *
 * See docs/spacefs.md for the design.
 */
#ifndef SPACEFS_H
#define SPACEFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <time.h>

#define SFS_KiB (UINT64_C(1) << 10)
#define SFS_MiB (UINT64_C(1) << 20)
#define SFS_GiB (UINT64_C(1) << 30)

/* The unit of the cache and of data allocation: one page. */
#define SFS_PAGE UINT64_C(4096)
/* Metadata node (btrfs's default nodesize): the unit of metadata
 * allocation.  Inodes share leaves: the items of SFS_LEAF_INODES
 * consecutive inode numbers live in one leaf, copied on its first change in
 * a transaction. */
#define SFS_NODE (16 * SFS_KiB)
/* Inodes per leaf: btrfs keys its items by inode number, so an inode's
 * items (inode item 160 bytes, inode ref, dir item, dir index, an extent
 * item, 25-byte headers: about 400 bytes for a short name) sit next to
 * those of the neighbouring numbers, and leaves split half full: 20,000
 * six-byte files take 10.1 MiB of metadata on a 2 GiB btrfs, about 530
 * bytes each.  32 inodes of 512 bytes per 16 KiB leaf. */
#define SFS_LEAF_INODES 32u
#define SFS_INODE_BYTES (SFS_NODE / SFS_LEAF_INODES)
/* Worst-case metadata of one item (an extent item, an inode update, a
 * directory entry): a two-level path of nodes, each copied on write:
 * 2 levels x 2 copies x 16 KiB.  btrfs reserves nodesize x 8 levels x 2
 * (256 KiB); our trees never grow past two levels at the sizes we mount. */
#define SFS_ITEM (4 * SFS_NODE)
/* Tenants (per-directory quotas) at most. */
#define SFS_MAX_TENANTS 16
/* Longest tenant directory name. */
#define SFS_TENANT_NAME 64
/* Name of the control file at the mount root. */
#define SFS_CONTROL_NAME ".spacefs"

/** Mount configuration. */
struct sfs_config {
	const char *backing;	/**< backing directory (must exist) */
	uint64_t capacity;	/**< file system size in bytes */
	uint64_t meta_bytes;	/**< initial metadata pool size */
	uint64_t cache_bytes;	/**< write-back cache size (dirty bytes) */
	bool preempt;		/**< preemptive flushing */
	bool data_preempt;	/**< the data pool's preemptive reclaim by
				 *   debt (off: SRSV_CTX_NO_DATA_PREEMPT,
				 *   btrfs's data behaviour) */
	unsigned pace_pct;	/**< the library's pacing of metadata
				 *   reservations from this % of the room
				 *   (srsv_config::pace_start_pct); 0: off */
	unsigned commit_interval; /**< seconds between periodic commits, 0 off */
	const char *trace_path;	/**< event log, or NULL */
	uint64_t fd_budget;	/**< backing fds kept open before idle ones
				 *   are closed; 0: half of RLIMIT_NOFILE */
	unsigned nr_tenants;	/**< per-directory quotas */
	struct {
		char name[SFS_TENANT_NAME];	/**< top-level directory */
		uint64_t limit;			/**< bytes */
	} tenants[SFS_MAX_TENANTS];
};

struct sfs;
struct sfs_file;

/** Fill @cfg with the defaults (1 GiB, 16 MiB metadata, 64 MiB cache,
 *  preemptive flushing on, commit every 30 s). */
void sfs_config_init(struct sfs_config *cfg);

/** Parse "123", "64k", "16M", "2G" into bytes; -EINVAL if malformed. */
int sfs_parse_size(const char *s, uint64_t *out);

/** Scan the backing directory, build the pools and start the library.
 *  -ENOSPC if the backing data do not fit the capacity. */
int sfs_mount(const struct sfs_config *cfg, struct sfs **out);

/**
 * Write back everything, commit, stop the library and free the engine.
 * @param report where to print the accounting check (may be NULL)
 * @return 0 if the pools' counters matched the engine's view at rest,
 *         -EUCLEAN if not (the engine is freed in both cases)
 */
int sfs_unmount(struct sfs *fs, FILE *report);

/* ---- namespace (paths relative to the mount root, "/..." ) ---- */
int sfs_getattr(struct sfs *fs, const char *path, struct stat *st);
int sfs_fgetattr(struct sfs *fs, struct sfs_file *f, struct stat *st);
int sfs_readlink(struct sfs *fs, const char *path, char *buf, size_t size);
int sfs_mknod(struct sfs *fs, const char *path, mode_t mode, dev_t rdev);
int sfs_mkdir(struct sfs *fs, const char *path, mode_t mode);
int sfs_unlink(struct sfs *fs, const char *path);
int sfs_rmdir(struct sfs *fs, const char *path);
int sfs_symlink(struct sfs *fs, const char *target, const char *path);
int sfs_rename(struct sfs *fs, const char *from, const char *to,
	       unsigned flags);
int sfs_link(struct sfs *fs, const char *from, const char *to);
int sfs_chmod(struct sfs *fs, const char *path, mode_t mode);
int sfs_chown(struct sfs *fs, const char *path, uid_t uid, gid_t gid);
int sfs_utimens(struct sfs *fs, const char *path, const struct timespec ts[2]);
int sfs_truncate(struct sfs *fs, const char *path, off_t size);
int sfs_ftruncate(struct sfs *fs, struct sfs_file *f, off_t size);
/** Open a directory of the backing tree for readdir (an fd to fdopendir). */
int sfs_opendir(struct sfs *fs, const char *path);
int sfs_statfs(struct sfs *fs, struct statvfs *st);

/* ---- files ---- */
int sfs_open(struct sfs *fs, const char *path, int flags,
	     struct sfs_file **out);
int sfs_create(struct sfs *fs, const char *path, mode_t mode, int flags,
	       struct sfs_file **out);
void sfs_release(struct sfs *fs, struct sfs_file *f);
ssize_t sfs_read(struct sfs *fs, struct sfs_file *f, char *buf, size_t len,
		 off_t off);
/**
 * A buffered write into the cache.  Reserves through srsv_delalloc_reserve()
 * (quota, data, metadata); -ENOSPC, -EDQUOT as the library answers.  With
 * @nowait nothing blocks: a busy lock, a full cache or any answer of the
 * library that would need waiting is -EAGAIN, never -ENOSPC or -EDQUOT.
 */
ssize_t sfs_write(struct sfs *fs, struct sfs_file *f, const char *buf,
		  size_t len, off_t off, bool nowait);
/**
 * fallocate(2): mode 0 and FALLOC_FL_KEEP_SIZE reserve data space (and the
 * tenant's quota) for the pages of the range that have no block yet, as
 * btrfs_fallocate() does, allocate them in the backing file and count them
 * as used; later writes into them need no data space (written in place).
 * FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE frees the range: dirty pages
 * in it are dropped with their reservations, blocks are pinned until the
 * commit, as a delete's.  -ENOSPC / -EDQUOT before anything changed;
 * -EOPNOTSUPP for other modes; -EINVAL for a bad range.
 */
int sfs_fallocate(struct sfs *fs, struct sfs_file *f, int mode, off_t off,
		  off_t len);
/** Write back the file's dirty pages and commit. */
int sfs_fsync(struct sfs *fs, struct sfs_file *f);
/** The file saw an O_DIRECT write (open flags changed with fcntl()): as an
 *  O_DIRECT open, it makes sfs_keep_cache() false from now on. */
void sfs_direct_io(struct sfs_file *f);
/**
 * Whether the kernel may keep the file's cached pages across this open
 * (FOPEN_KEEP_CACHE): no descriptor of it was opened or wrote with
 * O_DIRECT in this mount and it has one link, so that every change to its
 * data went through the kernel inode that holds them.
 */
bool sfs_keep_cache(struct sfs *fs, struct sfs_file *f);

/* ---- control ---- */
/** Write back everything and commit. */
int sfs_sync(struct sfs *fs);
/**
 * The control file's text: pools (counters and queued tickets), engine
 * figures, tenants.  *out is malloc()ed; the caller frees it.
 */
int sfs_snapshot(struct sfs *fs, char **out, size_t *len);
/** Apply a control command ("sync", "writeback", "commit", "check",
 *  "preempt=0|1"). */
int sfs_control(struct sfs *fs, const char *cmd, size_t len);
/** Sync, then compare the pools with the engine's view; 0 or -EUCLEAN. */
int sfs_check(struct sfs *fs, FILE *report);

#endif /* SPACEFS_H */
