/* SPDX-License-Identifier: MIT */
/*
 * spacefs allocation maps: which pages of a file have a block (and which of
 * those were preallocated and never written).
 *
 * The map is sparse: a hash of blocks, each covering BMAP_PAGES consecutive
 * pages with two bitmaps (allocated, preallocated).  Its memory follows the
 * pages a file has, not the offsets it reaches.  The dense bitmaps it
 * replaced grew with the highest offset written: a one-byte pwrite() at
 * 4 TiB made the daemon 262 MB larger (two bitmaps of 32 MiB per TiB of
 * offset), and one at 8 EiB failed with ENOMEM.  ext4's extent tree and
 * btrfs's file extent items are sparse for the same reason.
 *
 * Ranges (truncate, punch, delete, fallocate's count) walk whichever is
 * smaller, the blocks of the range or the blocks the file has, so that a
 * truncate from 16 TiB to 0 of a file with ten pages does ten pages' work.
 *
 * A block is freed when a clear leaves it empty.  Clears happen only when
 * the file has no dirty page (truncate and punch write them back first,
 * delete drops them), so a block that sfs__alloc_reserve() made for a
 * dirty page is still there when writeback sets its bit.
 *
 * Every function is called with the file's page lock (sinode->lock) held
 * for writing, the tests (and counts) with it held at least for reading.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Pages per block: 512 pages (2 MiB of file) in two 64-byte bitmaps, a
 * block about the size of its header and hash link.  A 1 GiB file written
 * in full takes 512 blocks (about 90 KB), as the dense bitmaps took 64 KB. */
#define BMAP_PAGES 512u
#define BMAP_WORDS (BMAP_PAGES / 64)

struct bmap_block {
	struct bmap_block *next;	/* hash chain */
	uint64_t index;			/* first page / BMAP_PAGES */
	uint32_t nr_alloc;		/* bits set in alloc[] */
	uint64_t alloc[BMAP_WORDS];
	uint64_t prealloc[BMAP_WORDS];	/* a subset of alloc[] */
};

static size_t block_slot(uint64_t index, size_t size)
{
	return (size_t)((index * UINT64_C(0x9e3779b97f4a7c15)) >> 32) &
	       (size - 1);
}

static struct bmap_block *block_find(const struct sfs_bmap *m, uint64_t index)
{
	if (!m->nr)
		return NULL;
	for (struct bmap_block *b = m->tab[block_slot(index, m->size)]; b;
	     b = b->next)
		if (b->index == index)
			return b;
	return NULL;
}

/* Double the table when the chains average two blocks; a failed resize
 * only makes the chains longer. */
static void table_grow(struct sfs_bmap *m)
{
	size_t size = m->size ? m->size * 2 : 4;
	struct bmap_block **t = calloc(size, sizeof(*t));

	if (!t)
		return;
	for (size_t i = 0; i < m->size; i++) {
		struct bmap_block *b = m->tab[i], *next;

		for (; b; b = next) {
			size_t s = block_slot(b->index, size);

			next = b->next;
			b->next = t[s];
			t[s] = b;
		}
	}
	free(m->tab);
	m->tab = t;
	m->size = size;
}

static struct bmap_block *block_get(struct sfs_bmap *m, uint64_t index)
{
	struct bmap_block *b = block_find(m, index);
	size_t s;

	if (b)
		return b;
	if (m->nr >= 2 * m->size)
		table_grow(m);
	if (!m->size)
		return NULL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->index = index;
	s = block_slot(index, m->size);
	b->next = m->tab[s];
	m->tab[s] = b;
	m->nr++;
	if (m->total)
		atomic_fetch_add(m->total, 1);
	return b;
}

static void block_free(struct sfs_bmap *m, struct bmap_block *b)
{
	struct bmap_block **pp = &m->tab[block_slot(b->index, m->size)];

	for (; *pp; pp = &(*pp)->next) {
		if (*pp == b) {
			*pp = b->next;
			m->nr--;
			if (m->total)
				atomic_fetch_sub(m->total, 1);
			free(b);
			return;
		}
	}
}

static bool bit_test(const uint64_t *words, uint64_t page)
{
	uint32_t bit = (uint32_t)(page % BMAP_PAGES);

	return words[bit / 64] >> (bit % 64) & 1;
}

bool sfs__alloc_test(const struct sinode *ino, uint64_t page)
{
	const struct bmap_block *b = block_find(&ino->bmap, page / BMAP_PAGES);

	return b && bit_test(b->alloc, page);
}

bool sfs__prealloc_test(const struct sinode *ino, uint64_t page)
{
	const struct bmap_block *b = block_find(&ino->bmap, page / BMAP_PAGES);

	return b && bit_test(b->prealloc, page);
}

int sfs__alloc_reserve(struct sinode *ino, uint64_t first, uint64_t last)
{
	for (uint64_t i = first / BMAP_PAGES; i <= last / BMAP_PAGES; i++)
		if (!block_get(&ino->bmap, i))
			return -ENOMEM;
	return 0;
}

int sfs__alloc_set(struct sinode *ino, uint64_t page)
{
	struct bmap_block *b = block_get(&ino->bmap, page / BMAP_PAGES);
	uint32_t bit = (uint32_t)(page % BMAP_PAGES);

	if (!b)
		return -ENOMEM;
	if (!bit_test(b->alloc, page)) {
		b->alloc[bit / 64] |= UINT64_C(1) << (bit % 64);
		b->nr_alloc++;
		ino->nr_alloc++;
	}
	return 0;
}

void sfs__prealloc_set(struct sinode *ino, uint64_t page)
{
	struct bmap_block *b = block_find(&ino->bmap, page / BMAP_PAGES);
	uint32_t bit = (uint32_t)(page % BMAP_PAGES);

	if (b && bit_test(b->alloc, page) && !bit_test(b->prealloc, page)) {
		b->prealloc[bit / 64] |= UINT64_C(1) << (bit % 64);
		ino->nr_prealloc++;
	}
}

void sfs__prealloc_clear(struct sinode *ino, uint64_t page)
{
	struct bmap_block *b = block_find(&ino->bmap, page / BMAP_PAGES);
	uint32_t bit = (uint32_t)(page % BMAP_PAGES);

	if (b && bit_test(b->prealloc, page)) {
		b->prealloc[bit / 64] &= ~(UINT64_C(1) << (bit % 64));
		ino->nr_prealloc--;
	}
}

/* Clear (or, with @count_only, count) the allocated pages of block @b in
 * [first, last]; frees the block once it is empty. */
static uint64_t block_clear(struct sinode *ino, struct bmap_block *b,
			    uint64_t first, uint64_t last, bool count_only)
{
	uint64_t base = b->index * BMAP_PAGES, n = 0;
	uint32_t lo = first > base ? (uint32_t)(first - base) : 0;
	uint32_t hi = last - base >= BMAP_PAGES - 1 ? BMAP_PAGES - 1 :
		      (uint32_t)(last - base);

	for (uint32_t bit = lo; bit <= hi; bit++) {
		uint64_t mask = UINT64_C(1) << (bit % 64);

		if (!(b->alloc[bit / 64] & mask))
			continue;
		n++;
		if (count_only)
			continue;
		b->alloc[bit / 64] &= ~mask;
		if (b->prealloc[bit / 64] & mask) {
			b->prealloc[bit / 64] &= ~mask;
			ino->nr_prealloc--;
		}
	}
	if (!count_only) {
		b->nr_alloc -= (uint32_t)n;
		ino->nr_alloc -= n;
		if (!b->nr_alloc)
			block_free(&ino->bmap, b);
	}
	return n;
}

/* Apply block_clear() to every block that meets [first, last], walking
 * the range's block indexes or the table, whichever is shorter. */
static uint64_t range_walk(struct sinode *ino, uint64_t first, uint64_t last,
			   bool count_only)
{
	struct sfs_bmap *m = &ino->bmap;
	uint64_t n = 0, bfirst, blast;

	if (first > last || !m->nr)
		return 0;
	bfirst = first / BMAP_PAGES;
	blast = last / BMAP_PAGES;
	if (blast - bfirst < m->nr) {
		for (uint64_t i = bfirst; i <= blast; i++) {
			struct bmap_block *b = block_find(m, i);

			if (b)
				n += block_clear(ino, b, first, last,
						 count_only);
		}
		return n;
	}
	for (size_t s = 0; s < m->size; s++) {
		struct bmap_block *b = m->tab[s], *next;

		/* block_clear() may free b: read the link first. */
		for (; b; b = next) {
			next = b->next;
			if (b->index >= bfirst && b->index <= blast)
				n += block_clear(ino, b, first, last,
						 count_only);
		}
	}
	return n;
}

uint64_t sfs__alloc_clear_range(struct sinode *ino, uint64_t first,
				uint64_t last)
{
	return range_walk(ino, first, last, false);
}

uint64_t sfs__alloc_count_range(struct sinode *ino, uint64_t first,
				uint64_t last)
{
	return range_walk(ino, first, last, true);
}

uint64_t sfs__alloc_end(const struct sinode *ino)
{
	const struct sfs_bmap *m = &ino->bmap;
	uint64_t end = 0;

	for (size_t s = 0; s < m->size; s++) {
		for (const struct bmap_block *b = m->tab[s]; b; b = b->next) {
			if (!b->nr_alloc || (b->index + 1) * BMAP_PAGES <= end)
				continue;
			for (uint32_t w = BMAP_WORDS; w-- > 0;) {
				if (b->alloc[w]) {
					end = b->index * BMAP_PAGES + w * 64 +
					      64 - (uint64_t)__builtin_clzll(b->alloc[w]);
					break;
				}
			}
		}
	}
	return end;
}

void sfs__bmap_free(struct sinode *ino)
{
	struct sfs_bmap *m = &ino->bmap;

	for (size_t s = 0; s < m->size; s++) {
		struct bmap_block *b = m->tab[s], *next;

		for (; b; b = next) {
			next = b->next;
			free(b);
		}
	}
	if (m->total)
		atomic_fetch_sub(m->total, m->nr);
	free(m->tab);
	m->tab = NULL;
	m->size = m->nr = 0;
	ino->nr_alloc = 0;
	ino->nr_prealloc = 0;
}
