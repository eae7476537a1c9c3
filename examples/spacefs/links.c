/* SPDX-License-Identifier: MIT */
/*
 * spacefs glue: the names of hard-linked files, so that a change made
 * through one name reaches the kernel's cache of the others.
 *
 * libfuse's high-level API gives every name its own node, hence its own
 * kernel inode: the two names of a hard-linked file have two copies of its
 * attributes (and two page caches) in the kernel, each kept for
 * attr_timeout.  After a chmod through one name, the kernel checked access
 * through the other against the old mode (default_permissions): a user
 * read, for up to a second, a file that was no longer readable (fstests
 * generic/378).  libfuse's passthrough example avoids this by caching no
 * attribute at all (attr_timeout=0), which made stat()-heavy work 10 to 16
 * times slower on spacefs (docs/spacefs.md, "fstests").
 *
 * Instead spacefs remembers the names it has seen of files with more than
 * one link (a lookup or stat of such a file, a link()), follows them
 * through renames and unlinks, and after an operation that changes such a
 * file's attributes (chmod, chown, utimens, truncate, link, unlink, a
 * rename over it) asks the kernel to drop the cached attributes and pages
 * of its other names (fuse_invalidate_path(), FUSE_NOTIFY_INVAL_INODE).
 * Writes do not: the other names' cached size and mtime may lag for up to
 * attr_timeout, as on any high-level FUSE file system that caches
 * attributes; their next open drops their pages (no kernel_cache).
 *
 * A name missed (a rename of one of its parent directories is followed; a
 * change made behind spacefs's back is not) costs only the cache's
 * staleness, never an error: invalidating a name the kernel no longer
 * knows fails harmlessly.  One mutex protects the table; it is never held
 * while the kernel is notified.
 */
#define FUSE_USE_VERSION 31

#include <fuse.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "links.h"

/* Buckets of the table (chains grow past it): hard-linked files are few. */
#define LINK_BUCKETS 1024u

struct link_entry {
	struct link_entry *next;
	uint64_t ino;
	char **paths;
	size_t nr, cap;
};

static pthread_mutex_t links_lock = PTHREAD_MUTEX_INITIALIZER;
static struct link_entry *links[LINK_BUCKETS];

static struct link_entry **slot(uint64_t ino)
{
	return &links[(ino * UINT64_C(0x9e3779b97f4a7c15)) >> 54 &
		      (LINK_BUCKETS - 1)];
}

static struct link_entry *find(uint64_t ino, bool create)
{
	struct link_entry **head = slot(ino), *e;

	for (e = *head; e; e = e->next)
		if (e->ino == ino)
			return e;
	if (!create)
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->ino = ino;
	e->next = *head;
	*head = e;
	return e;
}

static void entry_free(struct link_entry *e)
{
	for (size_t i = 0; i < e->nr; i++)
		free(e->paths[i]);
	free(e->paths);
	free(e);
}

/* @path is @prefix or below it: the length of @prefix, else 0. */
static size_t under(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	if (strncmp(path, prefix, n) || (path[n] && path[n] != '/'))
		return 0;
	return n;
}

void links_seen(uint64_t ino, const char *path)
{
	struct link_entry *e;
	char *copy, **v;

	pthread_mutex_lock(&links_lock);
	e = find(ino, true);
	if (!e)
		goto out;
	for (size_t i = 0; i < e->nr; i++)
		if (!strcmp(e->paths[i], path))
			goto out;
	if (e->nr == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 2;

		v = realloc(e->paths, cap * sizeof(*v));
		if (!v)
			goto out;
		e->paths = v;
		e->cap = cap;
	}
	copy = strdup(path);
	if (copy)
		e->paths[e->nr++] = copy;
out:
	pthread_mutex_unlock(&links_lock);
}

/* Drop every name for which @drop(name, arg) is true; entries left with
 * no name go.  links_lock held. */
static void drop_names(bool (*drop)(const char *name, const void *arg),
		       const void *arg)
{
	for (unsigned b = 0; b < LINK_BUCKETS; b++) {
		struct link_entry **pp = &links[b], *e;

		while ((e = *pp)) {
			size_t k = 0;

			for (size_t i = 0; i < e->nr; i++) {
				if (drop(e->paths[i], arg))
					free(e->paths[i]);
				else
					e->paths[k++] = e->paths[i];
			}
			e->nr = k;
			if (!k) {
				*pp = e->next;
				entry_free(e);
			} else {
				pp = &e->next;
			}
		}
	}
}

static bool is_path(const char *name, const void *arg)
{
	return !strcmp(name, arg);
}

static bool is_under(const char *name, const void *arg)
{
	return under(name, arg) != 0;
}

void links_forget(const char *path)
{
	pthread_mutex_lock(&links_lock);
	drop_names(is_path, path);
	pthread_mutex_unlock(&links_lock);
}

/* @name with its @n-byte prefix replaced by @to (NULL: no memory). */
static char *reprefix(const char *name, size_t n, const char *to)
{
	size_t tn = strlen(to), rest = strlen(name + n);
	char *s = malloc(tn + rest + 1);

	if (s) {
		memcpy(s, to, tn);
		memcpy(s + tn, name + n, rest + 1);
	}
	return s;
}

void links_renamed(const char *from, const char *to, bool exchange)
{
	pthread_mutex_lock(&links_lock);
	/* A rename over @to removed what was there (a directory: empty). */
	if (!exchange)
		drop_names(is_under, to);
	for (unsigned b = 0; b < LINK_BUCKETS; b++) {
		for (struct link_entry *e = links[b]; e; e = e->next) {
			for (size_t i = 0; i < e->nr; i++) {
				size_t nf = under(e->paths[i], from);
				size_t nt = exchange ? under(e->paths[i], to) : 0;
				char *s = NULL;

				if (nf)
					s = reprefix(e->paths[i], nf, to);
				else if (nt)
					s = reprefix(e->paths[i], nt, from);
				if (s) {
					free(e->paths[i]);
					e->paths[i] = s;
				}
			}
		}
	}
	pthread_mutex_unlock(&links_lock);
}

void links_changed(uint64_t ino, const char *path)
{
	struct fuse_context *ctx = fuse_get_context();
	struct link_entry *e;
	char **others = NULL;
	size_t nr = 0;

	pthread_mutex_lock(&links_lock);
	e = find(ino, false);
	if (e && e->nr)
		others = calloc(e->nr, sizeof(*others));
	for (size_t i = 0; others && i < e->nr; i++)
		if (!path || strcmp(e->paths[i], path))
			others[nr++] = strdup(e->paths[i]);
	pthread_mutex_unlock(&links_lock);
	for (size_t i = 0; i < nr; i++) {
		/* -ENOENT: the kernel does not know that name (any more). */
		if (others[i] && ctx && ctx->fuse)
			fuse_invalidate_path(ctx->fuse, others[i]);
		free(others[i]);
	}
	free(others);
}

void links_destroy(void)
{
	pthread_mutex_lock(&links_lock);
	for (unsigned b = 0; b < LINK_BUCKETS; b++) {
		while (links[b]) {
			struct link_entry *e = links[b];

			links[b] = e->next;
			entry_free(e);
		}
	}
	pthread_mutex_unlock(&links_lock);
}
