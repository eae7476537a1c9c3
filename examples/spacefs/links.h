/* SPDX-License-Identifier: MIT */
/*
 * spacefs glue: the names of hard-linked files (links.c).  Every function
 * is thread-safe; links_changed() must run in a FUSE request handler (it
 * notifies the kernel through the handler's fuse_get_context()).
 */
#ifndef SPACEFS_LINKS_H
#define SPACEFS_LINKS_H

#include <stdbool.h>
#include <stdint.h>

/** @path names inode @ino, which has more than one link. */
void links_seen(uint64_t ino, const char *path);
/** @path was unlinked. */
void links_forget(const char *path);
/** @from was renamed to @to (@exchange: RENAME_EXCHANGE, both moved);
 *  names below a renamed directory follow it. */
void links_renamed(const char *from, const char *to, bool exchange);
/** The attributes of @ino changed through @path (NULL: through none of the
 *  names known): the kernel drops what it caches of the other names. */
void links_changed(uint64_t ino, const char *path);
/** Forget every name (at unmount). */
void links_destroy(void);

#endif /* SPACEFS_LINKS_H */
