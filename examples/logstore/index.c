/* SPDX-License-Identifier: MIT */
/*
 * logstore's index: (tenant, key) -> the newest record, and what dies
 * when it changes.
 *
 * THE INDEX AND ITS SPACE
 *
 * A chained hash table in memory, rebuilt from the segments at every
 * open (log.c), never written.  Its entries are still the engine's
 * metadata, and are accounted in the METADATA pool as an on-disk index
 * would be: ls_entry_bytes() per entry (48 bytes of location, sequence
 * number and counts, plus the key, rounded to 16: 64 bytes for the CLI's
 * 16-byte keys).  A put reserves one entry's worth before it writes
 * (FLUSH_ALL: it may wait, like any metadata reservation); a new key's
 * entry turns it into used bytes (alloc, commit_used), an overwrite gives
 * it back.  An entry removed has nothing to wait for (no transaction
 * still refers to it), so its bytes go used -> pinned -> free at once.
 *
 * WHAT DIES
 *
 * Every byte of every segment is live or dead.  Live: the record an entry
 * points at, if it is a value or a tombstone that still hides something.
 * Dead: everything else.  Dead bytes are pinned in the DATA pool
 * (used -> pinned) at the moment they die, and stay pinned until the
 * cleaner deletes their segment: pinned is exactly "freed, but not
 * reusable before the cleaner's commit", as in btrfs.  One rule decides
 * who pins: whoever moves an entry off a live record pins that record
 * (a writer's overwrite or delete, the cleaner's copy), and a record that
 * is dead from birth (a copy whose original was overwritten meanwhile, a
 * tombstone with nothing to hide) is pinned by whoever wrote it.  So each
 * record is pinned once, and a segment's dead bytes always equal what the
 * pool holds pinned for it.  The tenant's quota is charged for live value
 * bytes only: a value that dies is srsv_quota_free_used() at once, since
 * the dead bytes are the engine's debt, not the tenant's.
 *
 * TOMBSTONES
 *
 * A delete writes a tombstone, which must outlive every older record of
 * its key, or a restart would resurrect one.  So an entry counts the
 * key's older records still on disk ("older"), exactly, by one rule:
 * every record written increments it, every record reclaimed decrements
 * it.  A tombstone with older > 0 is live; once the cleaner has reclaimed
 * the last older record it dies (pinned), and its entry (a "ghost") stays
 * until the tombstone's own segment is reclaimed, so that the count stays
 * the count of records on disk: that is what a restart rebuilds, and
 * ls_verify() compares the two.  (RAMCloud keeps tombstones alive the
 * same way, by the segment of the object they delete.)
 *
 * ORDER
 *
 * Writers index their record under the log lock, in sequence order, so a
 * writer's record is never older than the entry it replaces; the
 * cleaner's copies keep their sequence numbers and move an entry only if
 * it still points at the original (else the copy is dead at once).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Entry header bytes charged besides the key: location (8), length (4),
 * sequence number (8), older count (4), hash (8), chain (8), tenant and
 * flags (8).  Rounded with the key to 16, an allocator's granule. */
#define ENTRY_FIXED_BYTES 48
#define ENTRY_ROUND 16
/* Buckets at least: 1024 chains cost 8 KiB. */
#define MIN_BUCKETS 1024

uint64_t ls_entry_bytes(size_t key_len)
{
	return (ENTRY_FIXED_BYTES + (uint64_t)key_len + ENTRY_ROUND - 1) &
	       ~(uint64_t)(ENTRY_ROUND - 1);
}

/* FNV-1a over the tenant and the key, then a multiply-xorshift so that
 * the low bits (the bucket) depend on every byte. */
uint64_t ls__key_hash(unsigned tenant, const void *key, size_t key_len)
{
	const unsigned char *p = key;
	uint64_t h = UINT64_C(0xcbf29ce484222325);

	h = (h ^ (tenant & 0xff)) * UINT64_C(0x100000001b3);
	for (size_t i = 0; i < key_len; i++)
		h = (h ^ p[i]) * UINT64_C(0x100000001b3);
	h ^= h >> 29;
	h *= UINT64_C(0xbf58476d1ce4e5b9);
	return h ^ (h >> 32);
}

int ls__index_init(struct ls_index *idx, size_t hint)
{
	size_t n = MIN_BUCKETS;

	memset(idx, 0, sizeof(*idx));
	while (n < hint && n < ((size_t)1 << 30))
		n <<= 1;
	idx->buckets = calloc(n, sizeof(*idx->buckets));
	if (!idx->buckets)
		return -ENOMEM;
	idx->mask = n - 1;
	return 0;
}

void ls__index_free(struct ls_index *idx)
{
	if (!idx->buckets)
		return;
	for (size_t i = 0; i <= idx->mask; i++) {
		struct ls_entry *e = idx->buckets[i], *next;

		for (; e; e = next) {
			next = e->next;
			free(e);
		}
	}
	free(idx->buckets);
	idx->buckets = NULL;
}

/* Double the table past one entry per bucket.  A failed allocation only
 * leaves the chains longer. */
static void maybe_grow(struct ls_index *idx)
{
	size_t n = (idx->mask + 1) * 2;
	struct ls_entry **b;

	if (idx->nr <= idx->mask + 1 || n > ((size_t)1 << 30))
		return;
	b = calloc(n, sizeof(*b));
	if (!b)
		return;
	for (size_t i = 0; i <= idx->mask; i++) {
		struct ls_entry *e = idx->buckets[i], *next;

		for (; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
		}
	}
	free(idx->buckets);
	idx->buckets = b;
	idx->mask = n - 1;
}

struct ls_entry *ls__index_find(struct ls_index *idx, uint64_t hash,
				unsigned tenant, const void *key,
				size_t key_len)
{
	struct ls_entry *e = idx->buckets[hash & idx->mask];

	for (; e; e = e->next)
		if (e->hash == hash && e->tenant == tenant &&
		    e->key_len == key_len && !memcmp(e->key, key, key_len))
			return e;
	return NULL;
}

static struct ls_entry *find_rec(struct ls_index *idx, const struct ls_rec *r)
{
	return ls__index_find(idx, r->hash, r->tenant, r->key, r->key_len);
}

/* The index's totals follow an entry's state: take it out before a
 * change, put it back after. */
static void account(struct ls_index *idx, const struct ls_entry *e, int sign)
{
	uint64_t d = (uint64_t)(int64_t)sign;

	if (!e->tombstone) {
		idx->keys += d;
		idx->live_bytes += d * e->len;
		idx->tenant_bytes[e->tenant] += d * e->len;
	} else if (e->older) {
		idx->tombstones += d;
		idx->live_bytes += d * e->len;
	} else {
		idx->ghosts += d;
	}
}

static bool entry_live(const struct ls_entry *e)
{
	return !e->tombstone || e->older;
}

/* A new entry for @r, not accounted yet; NULL if out of memory. */
static struct ls_entry *entry_new(struct ls_index *idx, const struct ls_rec *r)
{
	struct ls_entry *e = malloc(sizeof(*e) + r->key_len);

	if (!e)
		return NULL;
	e->hash = r->hash;
	e->seg = r->seg;
	e->off = r->off;
	e->len = r->len;
	e->seq = r->seq;
	e->older = 0;
	e->tenant = r->tenant;
	e->tombstone = r->tombstone;
	e->key_len = r->key_len;
	memcpy(e->key, r->key, r->key_len);
	e->next = idx->buckets[e->hash & idx->mask];
	idx->buckets[e->hash & idx->mask] = e;
	idx->nr++;
	idx->meta_bytes += ls_entry_bytes(e->key_len);
	maybe_grow(idx);
	return e;
}

static void entry_remove(struct ls_index *idx, struct ls_entry *e)
{
	struct ls_entry **pp = &idx->buckets[e->hash & idx->mask];

	while (*pp != e)
		pp = &(*pp)->next;
	*pp = e->next;
	idx->nr--;
	idx->meta_bytes -= ls_entry_bytes(e->key_len);
	free(e);
}

static void point_at(struct ls_entry *e, const struct ls_rec *r)
{
	e->seg = r->seg;
	e->off = r->off;
	e->len = r->len;
	e->seq = r->seq;
	e->tombstone = r->tombstone;
}

/* ---- scanning (restart, verify): no pool accounting ---- */

int ls__index_scan_add(struct ls_index *idx, const struct ls_rec *r,
		       uint64_t *dead)
{
	struct ls_entry *e = find_rec(idx, r);

	if (!e) {
		e = entry_new(idx, r);
		if (!e)
			return -ENOMEM;
		return 0;
	}
	e->older++;
	/* The newest wins; on a tie (a copy and its original, both on disk
	 * after a crash in a cleaning pass) the later segment, as the pass
	 * would have. */
	if (r->seq >= e->seq) {
		dead[e->seg->scan_pos] += e->len;
		point_at(e, r);
	} else {
		dead[r->seg->scan_pos] += r->len;
	}
	return 0;
}

/* Count the ghosts' dead bytes, and the index's totals. */
void ls__index_scan_finish(struct ls_index *idx, uint64_t *dead)
{
	for (size_t i = 0; i <= idx->mask; i++)
		for (struct ls_entry *e = idx->buckets[i]; e; e = e->next) {
			if (e->tombstone && !e->older)
				dead[e->seg->scan_pos] += e->len;
			account(idx, e, 1);
		}
}

int ls__index_compare(const struct ls_index *live, const struct ls_index *disk,
		      char *err, size_t len)
{
	struct ls_index *d = (struct ls_index *)disk;

	if (live->nr != disk->nr) {
		snprintf(err, len, "the index has %zu entries, the segments "
			 "give %zu", live->nr, disk->nr);
		return -EUCLEAN;
	}
	for (size_t i = 0; i <= live->mask; i++)
		for (const struct ls_entry *e = live->buckets[i]; e;
		     e = e->next) {
			const struct ls_entry *o = ls__index_find(d, e->hash,
						e->tenant, e->key, e->key_len);

			if (!o || o->seg != e->seg || o->off != e->off ||
			    o->len != e->len || o->seq != e->seq ||
			    o->older != e->older || o->tombstone != e->tombstone) {
				snprintf(err, len, "key '%.*s' (tenant %u): index"
					 " says segment %" PRIu32 " offset %"
					 PRIu32 " seq %" PRIu64 " older %" PRIu32
					 "%s, the segments %s%" PRIu32 " %" PRIu32
					 " %" PRIu64 " %" PRIu32, (int)e->key_len,
					 (const char *)e->key, e->tenant,
					 e->seg->id, e->off, e->seq, e->older,
					 e->tombstone ? " (tombstone)" : "",
					 o ? "" : "nothing: ",
					 o ? o->seg->id : 0, o ? o->off : 0,
					 o ? o->seq : 0, o ? o->older : 0);
				return -EUCLEAN;
			}
		}
	if (live->live_bytes != disk->live_bytes || live->keys != disk->keys ||
	    live->tombstones != disk->tombstones ||
	    live->ghosts != disk->ghosts || live->meta_bytes != disk->meta_bytes) {
		snprintf(err, len, "index totals differ from the segments'");
		return -EUCLEAN;
	}
	return 0;
}

/* ---- writers ---- */

void ls__index_install(struct logstore *ls, const struct ls_rec *r,
		       uint64_t meta_held)
{
	struct ls_index *idx = &ls->index;
	uint64_t cost = ls_entry_bytes(r->key_len);
	struct ls_entry *e;

	pthread_mutex_lock(&ls->index_lock);
	e = find_rec(idx, r);
	if (!e) {
		e = entry_new(idx, r);
		if (!e) {
			/* The record stays on disk without an entry: a restart
			 * would see it.  Counted as an error. */
			LS_CHECK(ls, -ENOMEM);
			ls__pin_dead(ls, r->seg, r->len);
		} else {
			LS_CHECK(ls, srsv_space_alloc(ls->meta, cost));
			LS_CHECK(ls, srsv_space_commit_used(ls->meta, cost));
			meta_held -= cost;
			/* A tombstone with nothing to hide: a ghost at once. */
			if (r->tombstone)
				ls__pin_dead(ls, r->seg, r->len);
			account(idx, e, 1);
		}
	} else if (r->seq < e->seq) {
		/* Writers index in sequence order: cannot happen. */
		LS_CHECK(ls, -EINVAL);
		e->older++;
		ls__pin_dead(ls, r->seg, r->len);
		atomic_fetch_add(&ls->c.stale, 1);
	} else {
		account(idx, e, -1);
		if (entry_live(e))
			ls__pin_dead(ls, e->seg, e->len);
		if (!e->tombstone)
			LS_CHECK(ls, srsv_quota_free_used(ls->quota[e->tenant],
							  e->len));
		e->older++;
		point_at(e, r);
		account(idx, e, 1);
	}
	pthread_mutex_unlock(&ls->index_lock);
	if (meta_held)
		LS_CHECK(ls, srsv_space_release(ls->meta, meta_held));
}

/* ---- the cleaner ---- */

/* Is @r the record its key's entry points at (live, or a ghost), or dead?
 * @older, if not NULL, gets the key's count of older records. */
enum ls_liveness ls__index_liveness(struct logstore *ls, const struct ls_rec *r,
				    uint32_t *older)
{
	enum ls_liveness l = LS_DEAD;
	struct ls_entry *e;

	pthread_mutex_lock(&ls->index_lock);
	e = find_rec(&ls->index, r);
	if (!e)
		LS_CHECK(ls, -ENOENT);	/* a record without an entry */
	else if (e->seg == r->seg && e->off == r->off)
		l = entry_live(e) ? LS_LIVE : LS_GHOST;
	if (e && older)
		*older = e->older;
	pthread_mutex_unlock(&ls->index_lock);
	return l;
}

/* The cleaner copied @from to (@to, @to_off): move the entry there if it
 * still points at @from (the original dies), else the copy is dead. */
bool ls__index_move(struct logstore *ls, const struct ls_rec *from,
		    struct ls_segment *to, uint32_t to_off)
{
	struct ls_index *idx = &ls->index;
	struct ls_entry *e;
	bool moved = false;

	pthread_mutex_lock(&ls->index_lock);
	e = find_rec(idx, from);
	if (!e) {
		LS_CHECK(ls, -ENOENT);
		ls__pin_dead(ls, to, from->len);
	} else if (e->seg == from->seg && e->off == from->off) {
		account(idx, e, -1);
		e->seg = to;
		e->off = to_off;
		e->older++;	/* the original, until it is reclaimed */
		account(idx, e, 1);
		ls__pin_dead(ls, from->seg, from->len);
		moved = true;
	} else {
		/* Overwritten or deleted while we copied: the copy is one
		 * more older record, dead from birth.  The entry cannot be a
		 * ghost: only the cleaner (this thread) makes ghosts. */
		if (!entry_live(e))
			LS_CHECK(ls, -EINVAL);
		account(idx, e, -1);
		e->older++;
		account(idx, e, 1);
		ls__pin_dead(ls, to, from->len);
	}
	pthread_mutex_unlock(&ls->index_lock);
	return moved;
}

/*
 * Every record of @seg is dead (live ones were copied away) and the
 * segment is about to go: each record leaves its key's count, which may
 * kill a tombstone (nothing older left to hide); then the ghosts whose
 * tombstone is in @seg lose their entry.  Two passes, so that a key with
 * records on both sides is counted down before its entry is judged.
 */
int ls__index_reclaim(struct logstore *ls, struct ls_segment *seg,
		      const struct ls_rec *recs, size_t nr)
{
	struct ls_index *idx = &ls->index;
	uint64_t meta = 0;
	int ret = 0;

	pthread_mutex_lock(&ls->index_lock);
	for (size_t i = 0; i < nr && !ret; i++) {
		struct ls_entry *e = find_rec(idx, &recs[i]);

		if (!e) {
			ret = LS_CHECK(ls, -EUCLEAN);
			break;
		}
		if (e->seg == seg && e->off == recs[i].off)
			continue;
		if (!e->older) {
			ret = LS_CHECK(ls, -EUCLEAN);
			break;
		}
		account(idx, e, -1);
		e->older--;
		if (e->tombstone && !e->older)
			ls__pin_dead(ls, e->seg, e->len);	/* now a ghost */
		account(idx, e, 1);
	}
	for (size_t i = 0; i < nr && !ret; i++) {
		struct ls_entry *e = find_rec(idx, &recs[i]);

		if (!e || e->seg != seg || e->off != recs[i].off)
			continue;
		if (entry_live(e)) {
			ret = LS_CHECK(ls, -EUCLEAN);	/* was not copied */
			break;
		}
		account(idx, e, -1);
		meta += ls_entry_bytes(e->key_len);
		entry_remove(idx, e);
	}
	if (!ret && seg->dead != seg->size)
		ret = LS_CHECK(ls, -EUCLEAN);
	pthread_mutex_unlock(&ls->index_lock);
	if (meta)
		ls__meta_free(ls, meta);
	return ret;
}
