/* SPDX-License-Identifier: MIT */
/*
 * The internal view of struct srsv_rsv (block reservations, rsv.c).
 *
 * The public struct is opaque storage (as struct srsv_ticket is), so the
 * lock type and the layout below can change without changing the ABI: only
 * the size of the storage, SRSV_RSV_WORDS, is part of it.
 */
#ifndef SRSV_RSV_PRIV_H
#define SRSV_RSV_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <libspacersv/spacersv.h>

struct srsv__rsv {
	pthread_mutex_t lock;		/* protects the fields below */
	struct srsv_space *space;	/* pool the bytes are counted in */
	uint64_t size;			/* target size (atomic word) */
	uint64_t reserved;		/* bytes held, in may_use (atomic word) */
	int type;			/* enum srsv_rsv_type */
	bool failfast;			/* fail use at once, no fallback */
	uint32_t magic;			/* set by srsv_rsv_init() */
};

_Static_assert(sizeof(struct srsv__rsv) <= sizeof(struct srsv_rsv),
	       "struct srsv_rsv too small");
_Static_assert(_Alignof(struct srsv__rsv) <= _Alignof(struct srsv_rsv),
	       "struct srsv_rsv under-aligned");

static inline struct srsv__rsv *srsv__rsv_of(const struct srsv_rsv *rsv)
{
	return (struct srsv__rsv *)(uintptr_t)rsv->priv.words;
}

#endif /* SRSV_RSV_PRIV_H */
