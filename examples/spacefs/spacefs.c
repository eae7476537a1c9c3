/* SPDX-License-Identifier: MIT */
/*
 * spacefs: a FUSE file system whose space accounting is libspacersv.
 *
 *   spacefs MOUNTPOINT -o backing=DIR[,capacity=1G][,meta=16M][,cache=64M]
 *           [,preempt=0|1][,data_preempt=0|1][,keep_cache=0|1][,commit=SECS]
 *           [,tenant=NAME:SIZE]...[,trace=FILE]
 *           [,log=FILE] [-f] [-s] [-d]
 *   spacefs --unmount MOUNTPOINT
 *
 * A passthrough over DIR with a fixed capacity, its own write-back cache
 * and btrfs's space reservation (engine.c, cache.c, ns.c; the design is in
 * docs/spacefs.md).  This file is the FUSE glue: the high-level API, a
 * multi-threaded loop, and the control file /.spacefs (read it for the
 * library's snapshot, queued tickets included; write "sync", "commit",
 * "check" or "preempt=0|1" to it).  The control file is found by name but
 * not listed, so cp -a and tar of the mount root do not copy it.
 *
 * NOWAIT: the kernel does not forward RWF_NOWAIT to a FUSE server (FUSE
 * files do not accept it: pwritev2() fails with EOPNOTSUPP before the
 * request is sent), but it does forward the file's open flags with every
 * write.  A write on a descriptor opened with O_NONBLOCK is a NOWAIT write
 * here: it never blocks, and answers -EAGAIN where a blocking write would
 * wait or fail with ENOSPC/EDQUOT.
 *
 * On unmount the cache is written back, the transaction committed and the
 * pools compared with the engine's view; the exit status is 1 if they
 * differ, and the result goes to stderr, log=FILE or (a daemon without
 * log=) syslog.  The kernel does not wait for a /dev/fuse daemon at
 * unmount (FUSE_DESTROY is synchronous only on fuseblk), so
 * "spacefs --unmount" unmounts, waits for the daemon and prints its result.
 */
#define FUSE_USE_VERSION 31

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include <libspacersv/spacersv.h>

#include "links.h"
#include "spacefs.h"

/* Inode number shown for the control file: far above what a backing file
 * system hands out, so it never collides with a real inode. */
#define CONTROL_INO UINT64_C(0x7ffffffffffffff0)
/* Largest write request: 1 MiB, the FUSE maximum (256 pages); the kernel
 * splits larger writes. */
#define MAX_WRITE (1024 * 1024)

static struct sfs *g_fs;
/* keep_cache=1 (the default): pages cached across opens where they cannot
 * be stale (sfs_keep_cache()); 0: dropped at every open. */
static bool g_keep_cache = true;
/* log=FILE, made absolute before fuse_daemonize() changes directory. */
static char *g_log_path;

/* What fi->fh points at. */
struct handle {
	struct sfs_file *file;		/* NULL for the control file */
	char *snap;			/* control: the snapshot */
	size_t snap_len;
};

static bool is_control(const char *path)
{
	return !strcmp(path, "/" SFS_CONTROL_NAME);
}

static struct handle *handle_of(struct fuse_file_info *fi)
{
	return (struct handle *)(uintptr_t)fi->fh;
}

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	cfg->use_ino = 1;
	/* Unlinking an open file renames it to .fuse_hidden* until the last
	 * close: the engine deletes files nobody has open. */
	cfg->hard_remove = 0;
	/* The kernel's caches (entry_timeout, attr_timeout, kernel_cache)
	 * are set in main(), before the user's options. */
	/* Writes must reach us synchronously, or ENOSPC and EDQUOT could
	 * not be returned to the writer. */
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	conn->max_write = MAX_WRITE;
	return NULL;
}

static int op_getattr(const char *path, struct stat *st,
		      struct fuse_file_info *fi)
{
	int ret;

	if (is_control(path)) {
		memset(st, 0, sizeof(*st));
		st->st_ino = CONTROL_INO;
		st->st_mode = S_IFREG | 0644;
		st->st_nlink = 1;
		clock_gettime(CLOCK_REALTIME, &st->st_mtim);
		st->st_atim = st->st_ctim = st->st_mtim;
		return 0;
	}
	if (fi && handle_of(fi) && handle_of(fi)->file)
		ret = sfs_fgetattr(g_fs, handle_of(fi)->file, st);
	else
		ret = sfs_getattr(g_fs, path, st);
	/* Every name the kernel learns passes here (lookups too). */
	if (!ret && path && S_ISREG(st->st_mode) && st->st_nlink > 1)
		links_seen((uint64_t)st->st_ino, path);
	return ret;
}

/* After a change to the attributes of @path's inode: if it has other
 * names, the kernel drops what it caches of them (links.c). */
static void attrs_changed(const char *path)
{
	struct stat st;

	if (!sfs_getattr(g_fs, path, &st) && S_ISREG(st.st_mode) &&
	    st.st_nlink > 1) {
		links_seen((uint64_t)st.st_ino, path);
		links_changed((uint64_t)st.st_ino, path);
	}
}

static int op_readlink(const char *path, char *buf, size_t size)
{
	return sfs_readlink(g_fs, path, buf, size);
}

static int op_mknod(const char *path, mode_t mode, dev_t rdev)
{
	return is_control(path) ? -EEXIST : sfs_mknod(g_fs, path, mode, rdev);
}

static int op_mkdir(const char *path, mode_t mode)
{
	return is_control(path) ? -EEXIST : sfs_mkdir(g_fs, path, mode);
}

static int op_unlink(const char *path)
{
	struct stat st;
	bool linked;
	int ret;

	if (is_control(path))
		return -EPERM;
	linked = !sfs_getattr(g_fs, path, &st) && S_ISREG(st.st_mode) &&
		 st.st_nlink > 1;
	ret = sfs_unlink(g_fs, path);
	if (!ret) {
		links_forget(path);
		if (linked)	/* one link fewer for the other names */
			links_changed((uint64_t)st.st_ino, NULL);
	}
	return ret;
}

static int op_rmdir(const char *path)
{
	return is_control(path) ? -ENOTDIR : sfs_rmdir(g_fs, path);
}

static int op_symlink(const char *target, const char *path)
{
	return is_control(path) ? -EEXIST : sfs_symlink(g_fs, target, path);
}

static int op_rename(const char *from, const char *to, unsigned int flags)
{
	struct stat victim;
	bool linked;
	int ret;

	if (is_control(from) || is_control(to))
		return -EPERM;
	linked = !(flags & RENAME_EXCHANGE) && !sfs_getattr(g_fs, to, &victim) &&
		 S_ISREG(victim.st_mode) && victim.st_nlink > 1;
	ret = sfs_rename(g_fs, from, to, flags);
	if (!ret) {
		links_renamed(from, to, flags & RENAME_EXCHANGE);
		if (linked)
			links_changed((uint64_t)victim.st_ino, NULL);
	}
	return ret;
}

static int op_link(const char *from, const char *to)
{
	struct stat st;
	int ret;

	if (is_control(from) || is_control(to))
		return -EPERM;
	ret = sfs_link(g_fs, from, to);
	if (!ret && !sfs_getattr(g_fs, to, &st)) {
		links_seen((uint64_t)st.st_ino, from);
		links_seen((uint64_t)st.st_ino, to);
		links_changed((uint64_t)st.st_ino, to);	/* nlink */
	}
	return ret;
}

static int op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	int ret;

	(void)fi;
	if (is_control(path))
		return -EPERM;
	ret = sfs_chmod(g_fs, path, mode);
	if (!ret)
		attrs_changed(path);
	return ret;
}

static int op_chown(const char *path, uid_t uid, gid_t gid,
		    struct fuse_file_info *fi)
{
	int ret;

	(void)fi;
	if (is_control(path))
		return -EPERM;
	ret = sfs_chown(g_fs, path, uid, gid);
	if (!ret)
		attrs_changed(path);
	return ret;
}

/* The caller is in group @gid: its own or one of its supplementary
 * groups (fuse_getgroups() reads them from /proc). */
static bool caller_in_group(gid_t gid)
{
	const struct fuse_context *ctx = fuse_get_context();
	gid_t groups[64];
	int n;

	if (ctx->gid == gid)
		return true;
	n = fuse_getgroups(64, groups);
	for (int i = 0; i < n && i < 64; i++)
		if (groups[i] == gid)
			return true;
	return false;
}

/*
 * A change to a file's contents by a caller without CAP_FSETID (here: not
 * root) drops its setuid bit, and its setgid bit if the file is group-
 * executable or the caller is not in its group: the kernel's
 * setattr_should_drop_suidgid(), which file_modified() applies to writes,
 * truncates and fallocates.  Through FUSE the kernel drops setgid only on
 * a group-executable file, and the daemon, as root, keeps both bits on the
 * backing file: so fallocate (and a hole punch) by a user who is not in
 * the file's group left a setgid file setgid.  Truncate is treated the
 * same way.  @f: the open file, if the operation has one.
 */
static int drop_suid_sgid(const char *path, struct sfs_file *f)
{
	const struct fuse_context *ctx = fuse_get_context();
	mode_t kill = 0;
	struct stat st;
	int ret;

	if (!ctx || ctx->uid == 0)
		return 0;
	ret = f ? sfs_fgetattr(g_fs, f, &st) : sfs_getattr(g_fs, path, &st);
	if (ret || !S_ISREG(st.st_mode))
		return ret;
	if (st.st_mode & S_ISUID)
		kill |= S_ISUID;
	if ((st.st_mode & S_ISGID) &&
	    ((st.st_mode & S_IXGRP) || !caller_in_group(st.st_gid)))
		kill |= S_ISGID;
	if (!kill)
		return 0;
	ret = sfs_chmod(g_fs, path, (st.st_mode & 07777) & ~kill);
	/* The kernel did not send this chmod: the mode it caches for this
	 * name (and the others, attrs_changed()) is stale. */
	if (!ret)
		fuse_invalidate_path(ctx->fuse, path);
	return ret;
}

static int op_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	struct sfs_file *f = fi && handle_of(fi) ? handle_of(fi)->file : NULL;
	int ret;

	if (is_control(path))
		return 0;	/* "echo sync > .spacefs" truncates first */
	ret = f ? sfs_ftruncate(g_fs, f, size) : sfs_truncate(g_fs, path, size);
	if (!ret)
		ret = drop_suid_sgid(path, f);
	if (!ret)
		attrs_changed(path);
	return ret;
}

static int op_utimens(const char *path, const struct timespec ts[2],
		      struct fuse_file_info *fi)
{
	int ret;

	(void)fi;
	if (is_control(path))
		return 0;
	ret = sfs_utimens(g_fs, path, ts);
	if (!ret)
		attrs_changed(path);
	return ret;
}

/* The daemon's own lines: its pid and log, which "spacefs --unmount"
 * reads to wait for the end of the unmount and report its result. */
static int snapshot_add_daemon(struct handle *h)
{
	const char *log = g_log_path ? g_log_path : "-";
	size_t extra = strlen(log) + 64;
	char *p = realloc(h->snap, h->snap_len + extra);

	if (!p)
		return -ENOMEM;
	h->snap = p;
	h->snap_len += (size_t)snprintf(p + h->snap_len, extra,
					"pid %ld\nlog %s\n", (long)getpid(),
					log);
	return 0;
}

static int op_open(const char *path, struct fuse_file_info *fi)
{
	struct handle *h = calloc(1, sizeof(*h));
	int ret;

	if (!h)
		return -ENOMEM;
	if (is_control(path)) {
		/* The snapshot is taken at open, read with direct I/O (its
		 * size is not known to the kernel). */
		ret = sfs_snapshot(g_fs, &h->snap, &h->snap_len);
		if (!ret)
			ret = snapshot_add_daemon(h);
		fi->direct_io = 1;
	} else {
		ret = sfs_open(g_fs, path, fi->flags, &h->file);
		if (!ret && g_keep_cache)
			fi->keep_cache = sfs_keep_cache(g_fs, h->file);
	}
	if (ret) {
		free(h->snap);
		free(h);
		return ret;
	}
	fi->fh = (uint64_t)(uintptr_t)h;
	return 0;
}

static int op_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct handle *h;
	int ret;

	if (is_control(path))
		return op_open(path, fi);
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	ret = sfs_create(g_fs, path, mode, fi->flags, &h->file);
	if (ret) {
		free(h);
		return ret;
	}
	if (g_keep_cache)
		fi->keep_cache = sfs_keep_cache(g_fs, h->file);
	fi->fh = (uint64_t)(uintptr_t)h;
	return 0;
}

static int op_read(const char *path, char *buf, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	struct handle *h = handle_of(fi);

	(void)path;
	if (!h->file) {
		if ((size_t)off >= h->snap_len)
			return 0;
		if (size > h->snap_len - (size_t)off)
			size = h->snap_len - (size_t)off;
		memcpy(buf, h->snap + off, size);
		return (int)size;
	}
	return (int)sfs_read(g_fs, h->file, buf, size, off);
}

static int op_write(const char *path, const char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct handle *h = handle_of(fi);
	int ret;

	(void)path;
	if (!h->file) {
		ret = sfs_control(g_fs, buf, size);
		return ret ? ret : (int)size;
	}
	/* The write's flags, not the open's: fcntl() may have set it. */
	if (fi->flags & O_DIRECT)
		sfs_direct_io(h->file);
	return (int)sfs_write(g_fs, h->file, buf, size, off,
			      (fi->flags & O_NONBLOCK) != 0);
}

static int op_statfs(const char *path, struct statvfs *st)
{
	(void)path;
	return sfs_statfs(g_fs, st);
}

static int op_flush(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	(void)fi;
	return 0;
}

static int op_release(const char *path, struct fuse_file_info *fi)
{
	struct handle *h = handle_of(fi);

	(void)path;
	if (h->file)
		sfs_release(g_fs, h->file);
	free(h->snap);
	free(h);
	return 0;
}

static int op_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	struct handle *h = handle_of(fi);

	(void)path;
	(void)datasync;
	return h->file ? sfs_fsync(g_fs, h->file) : 0;
}

static int op_fallocate(const char *path, int mode, off_t off, off_t len,
			struct fuse_file_info *fi)
{
	struct handle *h = fi ? handle_of(fi) : NULL;
	int ret;

	if (!h || !h->file)
		return -EOPNOTSUPP;	/* the control file */
	ret = sfs_fallocate(g_fs, h->file, mode, off, len);
	if (!ret)
		ret = drop_suid_sgid(path, h->file);
	if (!ret)
		attrs_changed(path);
	return ret;
}

static int op_readdir(const char *path, void *buf, fuse_fill_dir_t filler,
		      off_t off, struct fuse_file_info *fi,
		      enum fuse_readdir_flags flags)
{
	struct dirent *de;
	DIR *d;
	int fd;

	(void)off;
	(void)fi;
	(void)flags;
	fd = sfs_opendir(g_fs, path);
	if (fd < 0)
		return fd;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		struct stat st;

		memset(&st, 0, sizeof(st));
		st.st_ino = de->d_ino;
		st.st_mode = (mode_t)DTTOIF(de->d_type);
		if (filler(buf, de->d_name, &st, 0, 0))
			break;
	}
	closedir(d);
	/* The control file is not listed: cp -a, rsync and tar of the mount
	 * root must not copy it (writing a copy back would run it as a
	 * command).  It is found by name, as /proc/self is not in ls /. */
	return 0;
}

/* fsync() of a directory: the kernel forwards it (FUSE_FSYNCDIR), unlike
 * sync(2) and syncfs(2), which never reach a /dev/fuse server (the kernel's
 * fuse_sync_fs() sends FUSE_SYNCFS only where fc->sync_fs is set: virtiofs).
 * On the mount root ("sync MOUNTPOINT" with coreutils, which fsync()s its
 * arguments) it writes everything back and commits; on another directory
 * it commits: its entries are in the transaction, as a journal commit is
 * what fsync of a directory does on ext4. */
static int op_fsyncdir(const char *path, int datasync,
		       struct fuse_file_info *fi)
{
	(void)datasync;
	(void)fi;
	if (!strcmp(path, "/"))
		return sfs_sync(g_fs);
	return sfs_control(g_fs, "commit", 6);
}

static int op_access(const char *path, int mask)
{
	struct stat st;

	(void)mask;
	/* default_permissions: the kernel checks the modes. */
	return is_control(path) ? 0 : sfs_getattr(g_fs, path, &st);
}

static const struct fuse_operations ops = {
	.init = op_init,
	.getattr = op_getattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.chmod = op_chmod,
	.chown = op_chown,
	.truncate = op_truncate,
	.utimens = op_utimens,
	.open = op_open,
	.create = op_create,
	.read = op_read,
	.write = op_write,
	.statfs = op_statfs,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.fallocate = op_fallocate,
	.readdir = op_readdir,
	.fsyncdir = op_fsyncdir,
	.access = op_access,
};

/* ---- options ---- */

struct options {
	char *backing, *capacity, *meta, *cache, *trace, *log;
	int preempt;
	int data_preempt;
	int keep_cache;
	int pace;
	int commit;
	int help;
	struct sfs_config *cfg;
	int bad;
};

enum { KEY_TENANT, KEY_HELP };

#define OPT(t, f) { t, offsetof(struct options, f), 0 }
static const struct fuse_opt spec[] = {
	OPT("backing=%s", backing),
	OPT("capacity=%s", capacity),
	OPT("meta=%s", meta),
	OPT("cache=%s", cache),
	OPT("trace=%s", trace),
	OPT("log=%s", log),
	OPT("preempt=%d", preempt),
	OPT("data_preempt=%d", data_preempt),
	OPT("keep_cache=%d", keep_cache),
	OPT("pace=%d", pace),
	OPT("commit=%d", commit),
	FUSE_OPT_KEY("tenant=", KEY_TENANT),
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_END
};

static int opt_proc(void *data, const char *arg, int key,
		    struct fuse_args *outargs)
{
	struct options *o = data;
	struct sfs_config *cfg = o->cfg;
	const char *v, *colon;
	size_t n;

	(void)outargs;
	switch (key) {
	case KEY_HELP:
		o->help = 1;
		return 1;	/* keep it: fuse prints its own help too */
	case KEY_TENANT:
		v = arg + strlen("tenant=");
		colon = strchr(v, ':');
		n = colon ? (size_t)(colon - v) : 0;
		if (!colon || !n || n >= SFS_TENANT_NAME ||
		    cfg->nr_tenants == SFS_MAX_TENANTS ||
		    sfs_parse_size(colon + 1,
				   &cfg->tenants[cfg->nr_tenants].limit)) {
			fprintf(stderr, "spacefs: bad option %s "
				"(tenant=NAME:SIZE)\n", arg);
			o->bad = 1;
			return 0;
		}
		memcpy(cfg->tenants[cfg->nr_tenants].name, v, n);
		cfg->tenants[cfg->nr_tenants].name[n] = '\0';
		cfg->nr_tenants++;
		return 0;
	default:
		return 1;
	}
}

static void usage(const char *prog)
{
	const char *slash = strrchr(prog, '/');

	if (slash)
		prog = slash + 1;
	printf("usage: %s MOUNTPOINT -o backing=DIR[,OPTIONS] [FUSE options]\n"
	       "\n"
	       "spacefs options:\n"
	       "  -o backing=DIR        directory holding the files (required)\n"
	       "  -o capacity=SIZE      file system size (default 1G)\n"
	       "  -o meta=SIZE          initial metadata pool (default 16M)\n"
	       "  -o cache=SIZE         write-back cache, dirty bytes (default 64M)\n"
	       "  -o preempt=0|1        preemptive flushing (default 1)\n"
	       "  -o data_preempt=0|1   the data pool's preemptive reclaim by its\n"
	       "                        debt; 0: btrfs's data behaviour (default 1)\n"
	       "  -o keep_cache=0|1     keep the kernel's page cache across opens\n"
	       "                        where it cannot be stale (default 1)\n"
	       "  -o pace=PCT           pace metadata reservations from PCT%% of\n"
	       "                        the pool's room (library pacing; default 0:\n"
	       "                        off)\n"
	       "  -o commit=SECS        periodic commit, 0 = off (default 30)\n"
	       "  -o tenant=NAME:SIZE   quota of top-level directory NAME (repeatable)\n"
	       "  -o trace=FILE         log flushes, commits, chunks and refusals\n"
	       "  -o log=FILE           daemon messages and the unmount accounting\n"
	       "                        result (default: stderr with -f, else syslog)\n"
	       "\n"
	       "Sizes take k, M, G suffixes.  Control file: MOUNTPOINT/%s.\n"
	       "%s --unmount MOUNTPOINT unmounts, waits until everything is\n"
	       "written back and committed, and prints the accounting result.\n\n",
	       prog, SFS_CONTROL_NAME, prog);
}

static int parse_sizes(struct options *o, struct sfs_config *cfg)
{
	if (o->capacity && sfs_parse_size(o->capacity, &cfg->capacity))
		return -1;
	if (o->meta && sfs_parse_size(o->meta, &cfg->meta_bytes))
		return -1;
	if (o->cache && sfs_parse_size(o->cache, &cfg->cache_bytes))
		return -1;
	if (o->commit < 0)
		return -1;
	cfg->commit_interval = (unsigned)o->commit;
	cfg->preempt = o->preempt != 0;
	cfg->data_preempt = o->data_preempt != 0;
	g_keep_cache = o->keep_cache != 0;
	if (o->pace < 0 || o->pace > 99)
		return -1;
	cfg->pace_pct = (unsigned)o->pace;
	cfg->backing = o->backing;
	cfg->trace_path = o->trace;
	return 0;
}

/* ---- the unmount result ---- */

#define UNMOUNT_MARK "spacefs: unmount of pid "

/* Where the unmount's check goes: the log (or stderr with -f), or, for a
 * daemon without log=, syslog line by line. */
static int unmount_report(bool use_syslog)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem;
	int status;

	if (!use_syslog) {
		fprintf(stderr, UNMOUNT_MARK "%ld: writing back, committing, "
			"checking\n", (long)getpid());
		status = sfs_unmount(g_fs, stderr);
		fprintf(stderr, UNMOUNT_MARK "%ld: done, status %d\n",
			(long)getpid(), status ? 1 : 0);
		fflush(stderr);
		return status;
	}
	mem = open_memstream(&text, &len);
	status = sfs_unmount(g_fs, mem);
	if (mem)
		fclose(mem);
	for (char *line = text, *nl; line && *line; line = nl) {
		nl = strchr(line, '\n');
		if (nl)
			*nl++ = '\0';
		else
			nl = line + strlen(line);
		syslog(status ? LOG_ERR : LOG_INFO, "%s", line);
	}
	free(text);
	return status;
}

/* "spacefs --unmount MOUNTPOINT": unmount, wait for the daemon to finish
 * writeback, commit and check (the kernel sends FUSE_DESTROY and waits for
 * it only on fuseblk mounts, so fusermount3 -u returns before the daemon
 * is done), then print its result from its log.  Exit status: 0 if the
 * accounting was OK, 1 if not or if it cannot be told. */
static int unmount_main(const char *mnt)
{
	char path[4096], line[4096 + 8], log[4096] = "-";
	char mark[64];
	long pid = 0;
	int pidfd, status, ok = 0, seen = 0;
	struct pollfd pfd;
	pid_t child;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", mnt, SFS_CONTROL_NAME);
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "spacefs: %s: %s (not a spacefs mount?)\n",
			path, strerror(errno));
		return 1;
	}
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "pid ", 4))
			pid = strtol(line + 4, NULL, 10);
		else if (!strncmp(line, "log ", 4) &&
			 sscanf(line + 4, "%4095[^\n]", log) != 1)
			strcpy(log, "-");
	}
	fclose(f);
	if (pid <= 0) {
		fprintf(stderr, "spacefs: no daemon pid in %s\n", path);
		return 1;
	}
	pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
	if (pidfd < 0) {
		fprintf(stderr, "spacefs: pidfd_open(%ld): %s\n", pid,
			strerror(errno));
		return 1;
	}
	child = fork();
	if (child == 0) {
		execlp("fusermount3", "fusermount3", "-u", mnt, (char *)NULL);
		/* No fusermount3: root can unmount directly. */
		_exit(umount2(mnt, 0) ? 1 : 0);
	}
	if (child < 0 || waitpid(child, &status, 0) != child ||
	    !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "spacefs: unmounting %s failed\n", mnt);
		close(pidfd);
		return 1;
	}
	pfd.fd = pidfd;
	pfd.events = POLLIN;
	while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
		;
	close(pidfd);
	if (!strcmp(log, "-")) {
		printf("spacefs: daemon %ld finished (its result is in syslog)\n",
		       pid);
		return 0;
	}
	f = fopen(log, "r");
	if (!f) {
		fprintf(stderr, "spacefs: %s: %s\n", log, strerror(errno));
		return 1;
	}
	snprintf(mark, sizeof(mark), UNMOUNT_MARK "%ld: ", pid);
	/* The lines of the last unmount of this pid. */
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, mark, strlen(mark)) &&
		    strstr(line, "writing back")) {
			seen = 1;
			ok = 0;
			continue;
		}
		if (!seen)
			continue;
		if (!strncmp(line, mark, strlen(mark))) {
			seen = 2;
			continue;
		}
		if (seen == 1 && !strncmp(line, "spacefs: accounting", 19)) {
			fputs(line, stdout);
			if (!strncmp(line, "spacefs: accounting OK", 22))
				ok = 1;
		}
	}
	fclose(f);
	if (seen != 2) {
		fprintf(stderr, "spacefs: daemon %ld ended without an unmount "
			"result in %s\n", pid, log);
		return 1;
	}
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts copts;
	struct sfs_config cfg;
	struct options o;
	struct fuse *fuse = NULL;
	struct fuse_session *se;
	int ret = 1, loop, status, log_fd = -1;
	bool use_syslog = false;

	if (argc == 3 && !strcmp(argv[1], "--unmount"))
		return unmount_main(argv[2]);
	sfs_config_init(&cfg);
	memset(&o, 0, sizeof(o));
	memset(&copts, 0, sizeof(copts));
	o.preempt = 1;
	o.data_preempt = 1;
	o.keep_cache = 1;
	o.commit = (int)cfg.commit_interval;
	o.cfg = &cfg;
	ret = 2;	/* bad usage until the arguments parse */
	if (fuse_opt_parse(&args, &o, spec, opt_proc) || o.bad)
		goto out_args;
	if (fuse_parse_cmdline(&args, &copts))
		goto out_args;
	if (o.help || copts.show_help) {
		usage(argv[0]);
		fuse_cmdline_help();
		fuse_lib_help(&args);
		ret = 0;
		goto out_cmdline;
	}
	if (copts.show_version) {
		printf("spacefs on libspacersv %d.%d.%d\n", SRSV_VERSION_MAJOR,
		       SRSV_VERSION_MINOR, SRSV_VERSION_PATCH);
		ret = 0;
		goto out_cmdline;
	}
	if (!copts.mountpoint || !o.backing || parse_sizes(&o, &cfg)) {
		usage(argv[0]);
		fprintf(stderr, "spacefs: need a mount point, -o backing=DIR "
			"and valid sizes\n");
		goto out_cmdline;
	}
	ret = 1;
	/* The kernel checks permissions against the modes we report. */
	fuse_opt_add_arg(&args, "-odefault_permissions");
	/*
	 * The kernel's caches, before the user's options so that those win
	 * (-o kernel_cache: the settings before these).
	 *
	 * No kernel_cache (FOPEN_KEEP_CACHE on every open): an asynchronous
	 * O_DIRECT write does not invalidate the page cache (fuse_direct_IO()
	 * leaves it to the completion, which does not), so a buffered reader
	 * that opened the file again read stale pages (fstests generic/451).
	 * op_open() keeps them only where they cannot be stale
	 * (sfs_keep_cache(): no O_DIRECT, one link).  libfuse's auto_cache
	 * (keep them if mtime and size did not change) still let stale pages
	 * through with attributes cached.
	 *
	 * Attributes and dentries stay cached for a second: every change to
	 * the tree comes through this mount, and the kernel updates its copy
	 * itself, but for the other names of a hard-linked file, which
	 * links.c invalidates (generic/378).  The passthrough example caches
	 * no attribute (attr_timeout=0) instead: 10 to 16 times slower
	 * stat()s here.  The costs are in docs/spacefs.md, "fstests".
	 */
	fuse_opt_insert_arg(&args, 1,
			    "-oattr_timeout=1,entry_timeout=1,negative_timeout=0");
	fuse = fuse_new(&args, &ops, sizeof(ops), NULL);
	if (!fuse)
		goto out_cmdline;
	if (fuse_mount(fuse, copts.mountpoint))
		goto out_destroy;
	if (o.log) {
		log_fd = open(o.log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
			      0644);
		g_log_path = log_fd >= 0 ? realpath(o.log, NULL) : NULL;
		if (!g_log_path) {
			fprintf(stderr, "spacefs: log %s: %s\n", o.log,
				strerror(errno));
			goto out_unmount;
		}
	}
	/* The library starts threads: after the fork of daemonize. */
	if (fuse_daemonize(copts.foreground))
		goto out_unmount;
	if (log_fd >= 0) {
		/* daemonize pointed stdout and stderr at /dev/null */
		dup2(log_fd, STDOUT_FILENO);
		dup2(log_fd, STDERR_FILENO);
		close(log_fd);
		log_fd = -1;
		setvbuf(stdout, NULL, _IOLBF, 0);
	} else if (!copts.foreground) {
		use_syslog = true;
		openlog("spacefs", LOG_PID, LOG_DAEMON);
	}
	ret = sfs_mount(&cfg, &g_fs);
	if (ret) {
		fprintf(stderr, "spacefs: mount: %s\n", strerror(-ret));
		ret = 1;
		goto out_unmount;
	}
	se = fuse_get_session(fuse);
	if (fuse_set_signal_handlers(se)) {
		ret = 1;
		goto out_fs;
	}
	if (copts.singlethread)
		loop = fuse_loop(fuse);
	else
		loop = fuse_loop_mt(fuse, copts.clone_fd);
	fuse_remove_signal_handlers(se);
	ret = loop ? 1 : 0;
out_fs:
	fuse_unmount(fuse);
	links_destroy();
	status = unmount_report(use_syslog);
	g_fs = NULL;
	if (status)
		ret = 1;
	fuse_destroy(fuse);
	goto out_cmdline;
out_unmount:
	fuse_unmount(fuse);
out_destroy:
	fuse_destroy(fuse);
out_cmdline:
	if (log_fd >= 0)
		close(log_fd);
	free(copts.mountpoint);
out_args:
	fuse_opt_free_args(&args);
	free(o.backing);
	free(o.capacity);
	free(o.meta);
	free(o.cache);
	free(o.trace);
	free(o.log);
	free(g_log_path);
	return ret;
}
