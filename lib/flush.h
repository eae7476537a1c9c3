/* SPDX-License-Identifier: MIT */
/*
 * The flush walks (flush.c): what serves queued tickets.
 */
#ifndef SRSV_FLUSH_H
#define SRSV_FLUSH_H

#include "internal.h"

/* The async workers' jobs: btrfs_async_reclaim_metadata_space() and
 * btrfs_async_reclaim_data_space() for pool @s (no lock held). */
void srsv__async_reclaim_metadata(struct srsv_space *s);
void srsv__async_reclaim_data(struct srsv_space *s);
/* Queue async reclaim of @s (normal tickets); pool lock held. */
void srsv__queue_async_reclaim(struct srsv_space *s, uint64_t bytes, int mode);
/* Run the priority flushing of ticket @t in the caller's thread. */
void srsv__priority_reclaim(struct srsv_space *s, struct srsv__ticket *t,
			    const struct timespec *deadline);
/* maybe_fail_all_tickets(); pool lock held.  True if progress was made. */
bool srsv__maybe_fail_all_tickets(struct srsv_space *s);
/* btrfs_calc_reclaim_metadata_size(); pool lock held. */
uint64_t srsv__calc_reclaim_metadata_size(struct srsv_space *s);

#endif /* SRSV_FLUSH_H */
