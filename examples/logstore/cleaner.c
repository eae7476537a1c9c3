/* SPDX-License-Identifier: MIT */
/*
 * logstore's cleaner: give dead bytes back by copying live records out of
 * a segment and deleting it (LFS's segment cleaning, RAMCloud's log
 * cleaner).
 *
 * WHEN
 *
 * - When the library asks: COMMIT_TRANS (store.c says why that state).
 *   FLUSH_DATA tickets wait, the async data walk calls it with the bytes
 *   they lack, and a pass cleans until that much came back (at most
 *   FLUSH_CLEAN_SEGMENTS segments).  This is all a store with the
 *   library's defaults gets: today's library flushes early (preemptive
 *   reclaim, the clamp, pacing) for metadata pools only, so writers run
 *   the device full and then all wait while the walk cleans: the
 *   sawtooth, on data.
 * - The engine's own background cleaner (ls_options::bg_cleaner): a
 *   thread that looks at the DATA pool every BG_POLL_NS and cleans, one
 *   segment at a time, from below a low free-space watermark to above a
 *   high one, as bcachefs's copygc runs from its watermarks.  It is what
 *   an engine must write today to keep writers off the tickets.  Cleaning
 *   early has a price: segments are less dead when they are cleaned, so
 *   more live bytes are copied per byte freed (the bench measures it).
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
 * them.  Then commit: fdatasync
 * the copies and every segment written since the last commit (a key's
 * newest record must be durable before its older one may go), count the
 * segment's records out of the index, delete the file, make the deletion
 * durable, wait for readers still inside the file, and srsv_space_unpin()
 * its bytes: free, and granted to waiting tickets.
 *
 * THE HEADROOM
 *
 * A cleaner needs space to free space: the live records go somewhere
 * before their segment can go.  Today's library gives it no room of its
 * own: srsv_space_unpin() grants the queued tickets first, a NO_FLUSH
 * reservation never passes a queued ticket, a reservation that may wait
 * fails with -EDEADLK inside the flush callback (it would wait for
 * itself), and a writer's fast-path reservation takes whatever the
 * tickets left.  Without help the store wedges: the cleaner's room goes
 * to the writers, a segment is left half-copied, the device is full of
 * used and pinned bytes, and every put fails with -ENOSPC while a third
 * of the device is dead (the first version of this file did exactly
 * that).  What works with the current API, in three pieces:
 *
 * - A standing reservation, one segment by default, held in the DATA
 *   pool's may_use, so that snapshots show it and the counters match the
 *   engine to the byte (a segment hidden from the pool would not).
 * - cleaner_reserve(): a segment's live bytes, all of them before its
 *   first copy, from the standing reservation, topped up with
 *   FLUSH_FREE_SPACE_INODE | NOWAIT.  A priority mode passes the writers'
 *   queued FLUSH_DATA tickets (btrfs writes its free-space cache inside a
 *   commit with it, for the same reason: the commit must not wait behind
 *   the writers it frees space for); NOWAIT never waits or flushes, so it
 *   is safe in the callback and under the clean lock.  pick() offers only
 *   segments whose live bytes fit the headroom, so none is left
 *   half-copied; when none fits, the pass gives up, counted
 *   (cleaner_enospc), and the tickets waiting fail with -ENOSPC.
 * - The refill after each unpin, behind a gate: writers start their DATA
 *   reservation with the gate read-held (srsv_ticket_reserve(), which
 *   never waits: granted at once, or queued and waited for after the gate
 *   is dropped), and the cleaner write-holds it across the unpin and the
 *   refill.  So only the tickets already queued (a record per writer) get
 *   freed bytes before the cleaner takes its reserve back.  A writer must
 *   not wait for space with the gate held: the flush callback takes it
 *   (the first deadlock an engine writes, docs/engines.md).
 *
 * cleaner_reserve() is the one function through which cleaning reserves.
 * When the library serves movers (cleaning, compaction output) from a
 * reserve it keeps, that function asks it, and the standing reservation,
 * the refill and the gate go.
 */
#include <errno.h>
#include <math.h>
#include <sched.h>
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
/* NOWAIT reservations answer -EAGAIN when the pool lock is busy, too: a
 * few tries with a yield between tell "busy" from "no room". */
#define RESERVE_TRIES 3
/* The smallest record (a header and a 1-byte key, padded): sizes the
 * array of a segment's records. */
#define MIN_RECORD_BYTES 40

/* ---- the headroom ---- */

/*
 * THE place where cleaning reserves DATA for its copies (see "THE
 * HEADROOM" above): @bytes, a segment's live bytes, before its first
 * copy.  Clean lock held.  0: the caller holds @bytes of may_use;
 * -ENOSPC: no room, counted.
 */
static int cleaner_reserve(struct logstore *ls, uint64_t bytes)
{
	uint64_t held = atomic_load(&ls->reserve_held);

	if (held >= bytes) {
		atomic_store(&ls->reserve_held, held - bytes);
		return 0;
	}
	for (int i = 0; i < RESERVE_TRIES; i++) {
		int ret = srsv_space_reserve(ls->data, bytes - held,
					     SRSV_FLUSH_FREE_SPACE_INODE,
					     SRSV_RESERVE_NOWAIT);

		if (!ret) {
			atomic_store(&ls->reserve_held, 0);
			return 0;
		}
		if (ret != -EAGAIN)
			break;
		sched_yield();
	}
	atomic_fetch_add(&ls->c.cleaner_enospc, 1);
	return -ENOSPC;
}

/* Bring the standing reservation back to its target, from what is free
 * (clean lock held; the gate too, after an unpin).  -ENOSPC when nothing
 * could be taken. */
int ls__cleaner_refill(struct logstore *ls)
{
	int ret = -ENOSPC;

	for (int i = 0; i < RESERVE_TRIES; i++) {
		uint64_t held = atomic_load(&ls->reserve_held), want, avail;

		if (held >= ls->cleaner_reserve_target)
			return 0;
		want = ls->cleaner_reserve_target - held;
		avail = ls__pool_free(ls->data);
		if (want > avail)
			want = avail;
		if (!want)
			return -ENOSPC;
		ret = srsv_space_reserve(ls->data, want,
					 SRSV_FLUSH_FREE_SPACE_INODE,
					 SRSV_RESERVE_NOWAIT);
		if (!ret) {
			atomic_store(&ls->reserve_held, held + want);
			continue;	/* more may have come free */
		}
		if (ret != -EAGAIN)
			break;
		sched_yield();
	}
	return ret;
}

/*
 * A delete on a full device: its tombstone's bytes from the standing
 * reservation (the caller then holds them as may_use, as if reserved).
 * Tombstones are tiny; the cleaner gets them back at its next refill.
 */
int ls__cleaner_lend(struct logstore *ls, uint64_t bytes)
{
	uint64_t held;
	int ret = -ENOSPC;

	pthread_mutex_lock(&ls->clean_lock);
	held = atomic_load(&ls->reserve_held);
	if (held >= bytes) {
		atomic_store(&ls->reserve_held, held - bytes);
		ret = 0;
	}
	pthread_mutex_unlock(&ls->clean_lock);
	return ret;
}

/*
 * A writer's DATA reservation, started with the gate read-held and
 * waited for without it (see "THE HEADROOM").  FLUSH_DATA: a normal
 * ticket, served by the library's async data walk, which calls the
 * engine's COMMIT_TRANS.
 */
int ls__reserve_data(struct logstore *ls, uint64_t bytes, bool nowait)
{
	struct srsv_ticket t;
	int ret;

	if (nowait) {
		if (pthread_rwlock_tryrdlock(&ls->gate))
			return -EAGAIN;
		ret = srsv_space_reserve(ls->data, bytes, SRSV_FLUSH_DATA,
					 SRSV_RESERVE_NOWAIT);
		pthread_rwlock_unlock(&ls->gate);
		return ret;
	}
	pthread_rwlock_rdlock(&ls->gate);
	ret = srsv_ticket_reserve(ls->data, &t, bytes, SRSV_FLUSH_DATA, 0);
	pthread_rwlock_unlock(&ls->gate);
	if (ret == -EINPROGRESS)
		ret = srsv_ticket_wait(&t, UINT64_MAX);
	return ret;
}

/* Give the standing reservation back (ls_close(); clean lock held). */
void ls__cleaner_release(struct logstore *ls)
{
	uint64_t held = atomic_exchange(&ls->reserve_held, 0);

	if (held)
		LS_CHECK(ls, srsv_space_release(ls->data, held));
}

/* ---- one segment ---- */

/*
 * The segment to clean next, marked, or NULL: among those whose live
 * bytes fit @headroom.  @desperate: the library asked and nothing sealed
 * has dead bytes: seal an open segment that has.
 */
static struct ls_segment *pick(struct logstore *ls, bool desperate,
			       uint64_t headroom, bool *all_dead,
			       bool *no_room)
{
	struct ls_segment *best = NULL;
	double best_score = -1;
	bool too_live = false;

	pthread_mutex_lock(&ls->log_lock);
	pthread_mutex_lock(&ls->index_lock);
	for (struct ls_segment *s = ls->segments; s; s = s->next) {
		double score, u, age;

		if (!s->sealed || s->cleaning || !s->dead)
			continue;
		if (s->size - s->dead > headroom) {
			too_live = true;
			continue;
		}
		if (s->dead == s->size) {
			score = HUGE_VAL;
		} else if (ls->opt.clean_policy == LS_CLEAN_GREEDY) {
			score = (double)s->dead;
		} else {
			u = (double)(s->size - s->dead) / (double)s->size;
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

		for (int i = 0; i < 2; i++)
			if (open[i] && open[i]->dead &&
			    open[i]->size - open[i]->dead <= headroom &&
			    (!best || open[i]->dead > best->dead))
				best = open[i];
		if (best) {
			best->sealed = true;
			best->sealed_at = ls->written;
			if (best == ls->head)
				ls->head = NULL;
			else
				ls->out = NULL;
		}
	}
	if (best) {
		best->cleaning = true;
		*all_dead = best->dead == best->size;
	}
	*no_room = !best && too_live;
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

static int clean_segment(struct logstore *ls, struct ls_segment *seg,
			 uint64_t *freed)
{
	uint64_t size = seg->size;	/* sealed: fixed */
	uint64_t live = 0, budget;
	struct ls_segment **pp;
	size_t nr = 0;
	int ret;

	ret = read_records(ls, seg, &nr);
	for (size_t i = 0; !ret && i < nr; i++)
		if (must_move(ls, &ls->clean_recs[i], nr))
			live += ls->clean_recs[i].len;
	/* Room for every copy before the first: records only die
	 * meanwhile, so this is enough, and what they leave goes back. */
	if (!ret && live)
		ret = cleaner_reserve(ls, live);
	if (ret) {
		seg->cleaning = false;
		return ret;
	}
	budget = live;
	for (size_t i = 0; !ret && i < nr; i++) {
		const struct ls_rec *r = &ls->clean_recs[i];

		if (!must_move(ls, r, nr))
			continue;
		if (budget < r->len)		/* cannot happen */
			ret = LS_CHECK(ls, -EUCLEAN);
		else if (!(ret = copy_forward(ls, r)))
			budget -= r->len;
	}
	atomic_fetch_add(&ls->reserve_held, budget);
	/* The commit: the copies and every newer record durable first. */
	if (!ret)
		ret = LS_CHECK(ls, ls__sync_all(ls));
	if (ret) {
		/* What was copied stays valid; the rest waits for the next
		 * pass, with more of the segment dead by then. */
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
	/* Every byte of it was pinned (index.c): all of it is free now.
	 * The queued tickets get it first (the library grants on unpin);
	 * behind the gate no new reservation starts until the cleaner has
	 * its headroom back. */
	pthread_rwlock_wrlock(&ls->gate);
	LS_CHECK(ls, srsv_space_unpin(ls->data, size));
	(void)ls__cleaner_refill(ls);
	pthread_rwlock_unlock(&ls->gate);
	atomic_fetch_add(&ls->c.segments_cleaned, 1);
	atomic_fetch_add(&ls->c.cleaned_bytes, size);
	*freed = size;
	return 0;
}

/*
 * Clean until @bytes came back (entirely dead segments are taken even
 * past @bytes: they cost an unlink) or @max_segments were cleaned.  The bytes given back, or a negative errno if none came back
 * because of an error (-ENOSPC: no headroom for the copies).
 */
int64_t ls__clean(struct logstore *ls, uint64_t bytes, unsigned max_segments,
		  bool desperate, bool background)
{
	uint64_t freed = 0;
	unsigned n = 0;
	int ret = 0;

	pthread_mutex_lock(&ls->clean_lock);
	while (n < max_segments) {
		struct ls_segment *seg;
		bool all_dead = false, no_room = false;
		uint64_t f = 0;

		seg = pick(ls, desperate && !freed,
			   atomic_load(&ls->reserve_held) +
			   ls__pool_free(ls->data), &all_dead, &no_room);
		if (!seg) {
			/* Dead bytes there are, but no room to copy what
			 * lives beside them. */
			if (no_room && !freed) {
				atomic_fetch_add(&ls->c.cleaner_enospc, 1);
				ret = -ENOSPC;
			}
			break;
		}
		if (freed && freed >= bytes && !all_dead) {
			seg->cleaning = false;
			break;
		}
		atomic_fetch_add(&ls->c.clean_passes, 1);
		if (background)
			atomic_fetch_add(&ls->c.bg_passes, 1);
		ret = clean_segment(ls, seg, &f);
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
