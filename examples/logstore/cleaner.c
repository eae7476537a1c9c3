/* SPDX-License-Identifier: MIT */
/*
 * logstore's cleaner: give dead bytes back by copying live records out of
 * a segment and deleting it (LFS's segment cleaning, RAMCloud's log
 * cleaner).
 *
 * WHEN
 *
 * - When the library asks: COMMIT_TRANS (store.c says why that state).
 *   Two callers.  The preemptive flusher, when the DATA pool's debt (its
 *   pinned bytes: every dead record is pinned) reaches the room not used
 *   >> clamp, with a quarter of the debt as the hint: one segment per
 *   call, the flusher loops while the debt stays above its threshold.
 *   And the async data walk, when FLUSH_DATA tickets wait, with the
 *   bytes they lack: a pass cleans until that much came back (at most
 *   FLUSH_CLEAN_SEGMENTS segments).  A ctx made with
 *   SRSV_CTX_NO_DATA_PREEMPT (btrfs's data behaviour) gets only the
 *   second: writers run the device full and then all wait while the
 *   walk cleans, the sawtooth on data.
 * - The engine's own background cleaner (ls_options::bg_cleaner): a
 *   thread that looks at the DATA pool every BG_POLL_NS and cleans, one
 *   segment at a time, from below a low free-space watermark to above a
 *   high one, as bcachefs's copygc runs from its watermarks.  It is what
 *   an engine had to write before the library flushed data pools early;
 *   the bench keeps it to compare.  Cleaning early has a price: segments
 *   are less dead when they are cleaned, so more live bytes are copied
 *   per byte freed (the bench measures it).
 *
 * WHAT
 *
 * Among the sealed segments with dead bytes, entirely dead ones first
 * (they cost an unlink), then by the policy: greedy (most dead bytes) or
 * LFS's cost-benefit ((1 - u) * age / (1 + u), which lets a cold segment
 * wait for more of its data to die and cleans it once it is old enough).
 * A pass the library asked for may also seal the writers' head, or the
 * cleaner's output, when only they hold dead bytes (a small store).
 *
 * HOW
 *
 * Read the segment, check every record's checksums, and copy each live
 * one to the cleaner's own output segment: copies have survived at least
 * one cleaning, so they are colder than new puts, and LFS and RAMCloud
 * keep the two apart so that segments die whole.  Each copy moves its
 * index entry (the original dies, index.c), unless a writer replaced the
 * key meanwhile (then the copy is dead at once).  A live tombstone whose
 * older records are all in the same segment is not copied: it dies with
 * them.  Then commit: fdatasync the copies and every segment written
 * since the last commit (a key's newest record must be durable before its
 * older one may go), count the segment's records out of the index, delete
 * the file, make the deletion durable, wait for readers still inside the
 * file, and srsv_space_unpin() its bytes: free, the movers' reserve
 * refilled first, the rest granted to waiting tickets.
 *
 * THE HEADROOM
 *
 * A cleaner needs space to free space: the live records go somewhere
 * before their segment can go.  Without room of its own the store wedges:
 * the cleaner's room goes to the writers (an unpin grants queued tickets,
 * a writer's fast path takes what they leave), a segment is left
 * half-copied, the device is full of used and pinned bytes and every put
 * fails with -ENOSPC while a third of the device is dead (the first
 * version of this file did exactly that).  The library's movers' class
 * is that room:
 *
 * - The DATA pool's movers' reserve (srsv_config::mover_reserve_bytes,
 *   from ls_options::cleaner_reserve), one segment by default.  Why one:
 *   the cleaner copies one segment at a time, and a segment with any dead
 *   byte holds less than a segment of live records, so the reserve alone
 *   covers the copies of any candidate, whatever the writers took; the
 *   segment's unpin (its whole size, at least what was copied out of it)
 *   refills the reserve before any ticket is granted, so it never runs
 *   dry from one segment to the next.  Less would make segments with more
 *   live bytes than the reserve depend on free space the writers take;
 *   more would hide bytes from writers that no single copy needs.  The
 *   library keeps it charged to may_use (snapshots show it, so the
 *   counters still equal the engine's to the byte) and hides it from
 *   writers and from statfs.
 * - cleaner_reserve(): srsv_space_reserve_partial() with
 *   SRSV_RESERVE_MOVER and SRSV_NO_FLUSH, between the live bytes of the
 *   cheapest candidate and those of the best one: from the reserve first,
 *   else from the pool passing the writers' queued tickets, never waiting
 *   (it runs under the clean lock, often inside the flush callback, where
 *   a reservation that may wait fails with -EDEADLK).  What it grants
 *   decides the segment: the best one whose live bytes fit, all of them
 *   reserved before the first copy, so none is left half-copied for lack
 *   of room.  It fails (counted, cleaner_enospc) only when not even the
 *   cheapest candidate fits.
 * - Nothing after the unpin: the library refills the reserve inside the
 *   unpin, under its pool lock, before it grants a ticket, so no writer
 *   can take those bytes meanwhile.  (Before the movers' class, the store
 *   held a standing reservation of its own and refilled it after each
 *   unpin behind a writers' gate, an rwlock every DATA reservation
 *   started under; both are gone.)
 *
 * cleaner_reserve() is the one function through which cleaning reserves.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

/* The background cleaner looks at the pool this often.  At the bench's
 * device rate (64 MiB/s) writers take 320 KiB in 5 ms, a third of a
 * segment and a small share of the 10%-of-capacity gap between the
 * default watermarks, so it never starts late by much; a poll is one
 * pool snapshot. */
#define BG_POLL_NS (5 * 1000 * 1000)
/* The smallest record (a header and a 1-byte key, padded): sizes the
 * array of a segment's records. */
#define MIN_RECORD_BYTES 40

/* ---- the headroom ---- */

/*
 * THE place where cleaning reserves DATA for its copies (see "THE
 * HEADROOM" above): at least @min bytes (the live bytes of the cheapest
 * candidate), at most @max (those of the best), before the first copy.
 * Clean lock held.  0: the caller holds *@got bytes of may_use; -ENOSPC:
 * not even @min could be had, counted.
 */
static int cleaner_reserve(struct logstore *ls, uint64_t min, uint64_t max,
			   uint64_t *got)
{
	/* NO_FLUSH takes the pool's lock (short, never held across a
	 * wait) and answers at once: 0 or -ENOSPC.  Anything else is a bug
	 * of ours (bad arguments). */
	int ret = srsv_space_reserve_partial(ls->data, min, max, SRSV_NO_FLUSH,
					     SRSV_RESERVE_MOVER, got);

	if (ret == -ENOSPC)
		atomic_fetch_add(&ls->c.cleaner_enospc, 1);
	else if (ret)
		return LS_CHECK(ls, ret);
	return ret;
}

/* The bytes the movers' reserve holds now (the library's figure). */
uint64_t ls__mover_reserved(struct logstore *ls)
{
	struct srsv_space_info i;

	if (srsv_space_snapshot(ls->data, &i, NULL, 0, NULL))
		return 0;
	return i.mover_rsv_reserved;
}

/* ---- one segment ---- */

/* What pick() saw. */
struct pick {
	uint64_t best_live;	/* live bytes (at most) of the segment picked */
	uint64_t min_live;	/* of the cheapest candidate (UINT64_MAX:
				 * none) */
	bool all_dead;		/* the segment picked is all dead */
};

/*
 * The segment to clean next, or NULL: the best among those with dead
 * bytes whose live bytes fit @headroom.  A segment's live bytes are at
 * most its size less its dead bytes (a live tombstone that dies with the
 * segment is not copied), and records only die, so a figure seen here
 * holds until the segment is cleaned.  @mark: mark it as being cleaned
 * (else only look).  @desperate: the library asked and no sealed segment
 * with dead bytes fits: seal an open one that has some (a small store).
 */
static struct ls_segment *pick(struct logstore *ls, bool desperate,
			       uint64_t headroom, bool mark, struct pick *pk)
{
	struct ls_segment *best = NULL;
	double best_score = -1;

	pk->best_live = 0;
	pk->min_live = UINT64_MAX;
	pk->all_dead = false;
	pthread_mutex_lock(&ls->log_lock);
	pthread_mutex_lock(&ls->index_lock);
	for (struct ls_segment *s = ls->segments; s; s = s->next) {
		uint64_t live = s->size - s->dead;
		double score, u, age;

		if (!s->sealed || s->cleaning || !s->dead)
			continue;
		if (live < pk->min_live)
			pk->min_live = live;
		if (live > headroom)
			continue;
		if (s->dead == s->size) {
			score = HUGE_VAL;
		} else if (ls->opt.clean_policy == LS_CLEAN_GREEDY) {
			score = (double)s->dead;
		} else {
			u = (double)live / (double)s->size;
			age = (double)(ls->written - s->sealed_at) + 1;
			score = (1 - u) * age / (1 + u);
		}
		if (score > best_score) {
			best = s;
			best_score = score;
		}
	}
	if (!best && desperate) {
		struct ls_segment *open[2] = { ls->head, ls->out };

		for (int i = 0; i < 2; i++) {
			struct ls_segment *o = open[i];

			if (!o || !o->dead)
				continue;
			if (o->size - o->dead < pk->min_live)
				pk->min_live = o->size - o->dead;
			if (o->size - o->dead <= headroom &&
			    (!best || o->dead > best->dead))
				best = o;
		}
		if (best && mark) {
			best->sealed = true;
			best->sealed_at = ls->written;
			if (best == ls->head)
				ls->head = NULL;
			else
				ls->out = NULL;
		}
	}
	if (best) {
		best->cleaning = mark;
		pk->best_live = best->size - best->dead;
		pk->all_dead = best->dead == best->size;
	}
	pthread_mutex_unlock(&ls->index_lock);
	pthread_mutex_unlock(&ls->log_lock);
	return best;
}

/* Copy live record @r (its bytes in ls->clean_buf) to the output, with
 * r->len bytes of the caller's reservation. */
static int copy_forward(struct logstore *ls, const struct ls_rec *r)
{
	struct ls_segment *out;
	uint32_t to_off;
	int ret;

	pthread_mutex_lock(&ls->log_lock);
	out = ls->out;
	if (!out || out->size + r->len > LS_SEGMENT_BYTES) {
		if (out) {
			out->sealed = true;
			out->sealed_at = ls->written;
		}
		ls->out = NULL;
		ret = ls__seg_create(ls, &out);
		if (ret) {
			pthread_mutex_unlock(&ls->log_lock);
			return LS_CHECK(ls, ret);
		}
		ls->out = out;
	}
	to_off = (uint32_t)out->size;
	pthread_mutex_unlock(&ls->log_lock);

	ret = LS_CHECK(ls, srsv_space_alloc(ls->data, r->len));
	if (ret)
		return ret;
	ret = ls__seg_write(out, ls->clean_buf + r->off, r->len, to_off);
	if (ret) {
		LS_CHECK(ls, srsv_space_free_reserved(ls->data, r->len));
		return LS_CHECK(ls, ret);
	}
	pthread_mutex_lock(&ls->log_lock);
	out->size += r->len;
	out->synced = false;
	pthread_mutex_unlock(&ls->log_lock);
	LS_CHECK(ls, srsv_space_commit_used(ls->data, r->len));
	if (!ls__index_move(ls, r, out, to_off))
		atomic_fetch_add(&ls->c.lost_copies, 1);
	atomic_fetch_add(&ls->c.moved_bytes, r->len);
	atomic_fetch_add(&ls->c.moved_records, 1);
	ls__on_write(ls, r->len, LS_WRITER_CLEANER);
	return 0;
}

/* qsort_r() comparator: two indexes into @recs, by key hash. */
static int cmp_by_hash(const void *a, const void *b, void *recs)
{
	const struct ls_rec *r = recs;
	uint64_t x = r[*(const uint32_t *)a].hash;
	uint64_t y = r[*(const uint32_t *)b].hash;

	return (x > y) - (x < y);
}

/* Read @seg's records into ls->clean_recs (and their order by key hash
 * into ls->clean_order); their bytes stay in ls->clean_buf. */
static int read_records(struct logstore *ls, struct ls_segment *seg,
			size_t *nr)
{
	uint64_t off = 0, size = seg->size;
	size_t max = (size_t)(size / MIN_RECORD_BYTES) + 1;
	int ret;

	if (ls->clean_recs_cap < max) {
		struct ls_rec *n = realloc(ls->clean_recs, max * sizeof(*n));
		uint32_t *o;

		if (!n)
			return -ENOMEM;
		ls->clean_recs = n;
		o = realloc(ls->clean_order, max * sizeof(*o));
		if (!o)
			return -ENOMEM;
		ls->clean_order = o;
		ls->clean_recs_cap = max;
	}
	ret = ls__seg_read(seg, ls->clean_buf, size, 0);
	if (ret)
		return LS_CHECK(ls, ret);
	*nr = 0;
	while (off < size) {
		struct ls_rec *r = &ls->clean_recs[*nr];

		/* A sealed segment was written whole by this process or
		 * checked at open: a bad record is damage, not a torn tail. */
		if (ls__rec_parse(ls->clean_buf + off, size - off, r))
			return LS_CHECK(ls, -EUCLEAN);
		r->seg = seg;
		r->off = (uint32_t)off;
		r->hash = ls__key_hash(r->tenant, r->key, r->key_len);
		ls->clean_order[*nr] = (uint32_t)*nr;
		(*nr)++;
		off += r->len;
	}
	/* By key hash, so that must_move() finds a key's records in
	 * O(log n): a segment of small tombstones holds thousands. */
	qsort_r(ls->clean_order, *nr, sizeof(*ls->clean_order), cmp_by_hash,
		ls->clean_recs);
	return 0;
}

/*
 * Must this record move?  A live value must.  A live tombstone must too,
 * unless every older record of its key is in this segment: then it dies
 * with them when the segment goes (index.c), and a copy would only be a
 * ghost waiting for the next cleaning.  Records only die meanwhile, and a
 * tombstone's older records only go, so a "no" stays right.
 */
static bool must_move(struct logstore *ls, const struct ls_rec *r, size_t nr)
{
	const uint32_t *order = ls->clean_order;
	uint32_t older = 0, here = 0;
	size_t lo = 0, hi = nr;

	if (ls__index_liveness(ls, r, &older) != LS_LIVE)
		return false;
	if (!r->tombstone)
		return true;
	/* The records of its key in this segment: a run of equal hashes in
	 * clean_order (read_records() sorted it). */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ls->clean_recs[order[mid]].hash < r->hash)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < nr && ls->clean_recs[order[lo]].hash == r->hash; lo++) {
		const struct ls_rec *o = &ls->clean_recs[order[lo]];

		if (o != r && o->tenant == r->tenant &&
		    o->key_len == r->key_len &&
		    !memcmp(o->key, r->key, r->key_len))
			here++;
	}
	return here != older;
}

/*
 * Clean @seg with @held bytes of DATA may_use reserved for its copies (at
 * least its live bytes when pick() saw it); what the copies do not take
 * goes back.  *@freed: the segment's bytes, unpinned.
 */
static int clean_segment(struct logstore *ls, struct ls_segment *seg,
			 uint64_t held, uint64_t *freed)
{
	uint64_t size = seg->size;	/* sealed: fixed */
	uint64_t live = 0, budget = held;
	struct ls_segment **pp;
	size_t nr = 0;
	bool copying;
	int ret;

	ret = read_records(ls, seg, &nr);
	copying = !ret;
	for (size_t i = 0; !ret && i < nr; i++)
		if (must_move(ls, &ls->clean_recs[i], nr))
			live += ls->clean_recs[i].len;
	/* Room for every copy before the first: records only die after
	 * pick() saw the segment, so what it saw fits. */
	if (!ret && live > held)
		ret = LS_CHECK(ls, -EUCLEAN);		/* cannot happen */
	for (size_t i = 0; !ret && i < nr; i++) {
		const struct ls_rec *r = &ls->clean_recs[i];

		if (!must_move(ls, r, nr))
			continue;
		if (budget < r->len)			/* cannot happen */
			ret = LS_CHECK(ls, -EUCLEAN);
		else if (!(ret = copy_forward(ls, r)))
			budget -= r->len;
	}
	/* What the copies did not take (records that died meanwhile, a
	 * grant above the live bytes) goes back: to the movers' reserve
	 * first, the library's rule. */
	if (budget)
		LS_CHECK(ls, srsv_space_release(ls->data, budget));
	/* The commit: the copies and every newer record durable first. */
	if (!ret)
		ret = LS_CHECK(ls, ls__sync_all(ls));
	if (ret) {
		/* What was copied stays valid; the rest waits for the next
		 * pass, with more of the segment dead by then. */
		if (copying)
			atomic_fetch_add(&ls->c.clean_aborted, 1);
		seg->cleaning = false;
		return ret;
	}
	ret = ls__index_reclaim(ls, seg, ls->clean_recs, nr);
	if (ret) {
		seg->cleaning = false;
		return ret;
	}
	pthread_mutex_lock(&ls->log_lock);
	for (pp = &ls->segments; *pp != seg; pp = &(*pp)->next)
		;
	*pp = seg->next;
	pthread_mutex_unlock(&ls->log_lock);
	LS_CHECK(ls, ls__seg_unlink(ls, seg));
	/* No entry points here any more: only reads already started can
	 * be inside the file. */
	pthread_mutex_lock(&ls->index_lock);
	while (seg->readers)
		pthread_cond_wait(&ls->readers_done, &ls->index_lock);
	pthread_mutex_unlock(&ls->index_lock);
	ls__seg_close(seg);
	/* Every byte of it was pinned (index.c): all of it is free now.  The
	 * library refills the movers' reserve first, under its pool lock,
	 * then grants the queued tickets. */
	LS_CHECK(ls, srsv_space_unpin(ls->data, size));
	atomic_fetch_add(&ls->c.segments_cleaned, 1);
	atomic_fetch_add(&ls->c.cleaned_bytes, size);
	*freed = size;
	return 0;
}

/*
 * Clean until @bytes came back (entirely dead segments are taken even
 * past @bytes: they cost an unlink) or @max_segments were cleaned.  The
 * bytes given back, or a negative errno if none came back because of an
 * error (-ENOSPC: no room for the copies of any candidate).
 */
int64_t ls__clean(struct logstore *ls, uint64_t bytes, unsigned max_segments,
		  bool desperate, bool background)
{
	uint64_t freed = 0;
	unsigned n = 0;
	int ret = 0;

	pthread_mutex_lock(&ls->clean_lock);
	while (n < max_segments) {
		bool last_resort = desperate && !freed;
		struct ls_segment *seg;
		uint64_t f = 0, got = 0;
		struct pick pk;

		/* Look first, then reserve: the grant decides the segment. */
		if (!pick(ls, last_resort, UINT64_MAX, false, &pk))
			break;			/* nothing dead */
		if (freed && freed >= bytes && !pk.all_dead)
			break;
		if (pk.best_live) {
			ret = cleaner_reserve(ls, pk.min_live ? pk.min_live : 1,
					      pk.best_live, &got);
			if (ret)
				break;
		}
		seg = pick(ls, last_resort, got, true, &pk);
		if (!seg) {
			/* Nothing fits any more (cannot happen: records
			 * only die); give the grant back. */
			if (got)
				LS_CHECK(ls, srsv_space_release(ls->data, got));
			break;
		}
		atomic_fetch_add(&ls->c.clean_passes, 1);
		if (background)
			atomic_fetch_add(&ls->c.bg_passes, 1);
		ret = clean_segment(ls, seg, got, &f);
		if (ret)
			break;
		freed += f;
		n++;
	}
	pthread_mutex_unlock(&ls->clean_lock);
	if (!freed && ret)
		return ret;
	return (int64_t)freed;
}

/* ---- the background cleaner ---- */

static void *bg_main(void *arg)
{
	struct logstore *ls = arg;
	uint64_t cap = ls->opt.capacity;
	uint64_t low = cap / 100 * ls->opt.bg_low_pct;
	uint64_t high = cap / 100 * ls->opt.bg_high_pct;

	pthread_mutex_lock(&ls->bg_lock);
	while (!atomic_load(&ls->bg_stop)) {
		struct timespec ts;
		uint64_t free_bytes;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += BG_POLL_NS;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&ls->bg_cond, &ls->bg_lock, &ts);
		pthread_mutex_unlock(&ls->bg_lock);
		free_bytes = ls__pool_free(ls->data);
		if (free_bytes < low) {
			while (free_bytes < high && !atomic_load(&ls->bg_stop)) {
				/* One segment at a time: a pass the library
				 * asks for gets the clean lock in between. */
				if (ls__clean(ls, high - free_bytes, 1, false,
					      true) <= 0)
					break;
				free_bytes = ls__pool_free(ls->data);
			}
		}
		pthread_mutex_lock(&ls->bg_lock);
	}
	pthread_mutex_unlock(&ls->bg_lock);
	return NULL;
}

int ls__bg_start(struct logstore *ls)
{
	if (pthread_create(&ls->bg_thread, NULL, bg_main, ls))
		return -EAGAIN;
	ls->bg_started = true;
	return 0;
}

void ls__bg_stop(struct logstore *ls)
{
	if (!ls->bg_started)
		return;
	pthread_mutex_lock(&ls->bg_lock);
	atomic_store(&ls->bg_stop, true);
	pthread_cond_signal(&ls->bg_cond);
	pthread_mutex_unlock(&ls->bg_lock);
	pthread_join(ls->bg_thread, NULL);
	ls->bg_started = false;
}
