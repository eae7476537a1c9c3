/* SPDX-License-Identifier: MIT */
/*
 * Per-CPU reservation caches (srsv_config.cpu_cache_bytes).
 *
 * Layer: the per-CPU caches, above the pool counters, below tickets and
 * granting.  Where credit goes back to may_use while tickets may wait, a
 * cache call tells its caller (gave_back) instead of granting itself: the
 * caller, above the tickets layer, serves the queue once the credit has
 * landed and no credit is in motion any more.
 *
 * WHY
 *
 * Every reservation and release of a pool changes one word, may_use.  With
 * writers on several CPUs that word's cache line moves from CPU to CPU on
 * every call, and the transfer, not the arithmetic, is the cost: on 2
 * CPUs a reserve+release pair costs 3 to 4 times what it costs on one.
 * XFS met the same wall with its free-block counter and answered with
 * per-CPU counters that only fold into the shared sum in batches; these
 * caches do the same for reservations.
 *
 * WHEN
 *
 * Configured caches stay idle until the pool sees contention: the first
 * compare-and-swap on may_use that fails because another CPU changed it
 * engages them for good (srsv__space_try_charge(), the way Java's
 * LongAdder stripes only after a failed CAS).  A single writer keeps the
 * exact path and pays nothing for a cache it cannot use.
 *
 * HOW
 *
 * Each CPU has a slot on its own cache line holding "credit": bytes
 * charged to may_use that no caller holds yet.  A reservation of at most
 * one batch takes from its CPU's credit with a compare-and-swap on that
 * line; when the credit runs short, it charges itself plus one batch to
 * may_use in one step (a "refill") and keeps the batch.  A release of at
 * most one batch gives its bytes to its CPU's slot, and a slot holding more
 * than two batches gives all but one back to may_use.  So may_use counts
 * what callers hold plus the credit, and the credit is at most two batches
 * per slot, or three until the next release trims it: a refill adds its
 * batch to whatever releases put into the slot meanwhile (found by the
 * SPIN model tests/formal/cache.pml; the margin below keeps room for
 * four).
 *
 * Credit is space nobody uses, so it must never cost anyone a reservation:
 *
 * - Refills only happen far from full: the pool must keep room for every
 *   slot's credit twice over after the refill.  Near full, no credit is
 *   taken or added: reservations and releases go to may_use and are
 *   exact, as without caches (credit already in a slot stays until the
 *   next drain).
 * - A reservation or operation that does not fit the shared word first
 *   drains every slot back into may_use (srsv__cache_drain()), then
 *   decides: the slow path of a reservation, the granting of tickets, and
 *   a read-only claim.  While a slow path decides, the slots stay closed
 *   (srsv__cache_block()) and no refill starts; a take that raced the
 *   block may reopen one, but closes it again, and what a release puts
 *   into it meanwhile it gives back (below).
 * - Credit in motion.  Anything but a drain that takes credit out of a
 *   slot (a give-back, a release trimming its slot to one batch) or
 *   charges may_use for a refill first announces itself in `in_flight`
 *   (a full barrier), and withdraws once the credit is in may_use or in
 *   the slot; it takes no lock in between.  A slow path closes every slot,
 *   then waits until nothing is in motion: credit a motion took from a
 *   slot before the drain reached it was announced before that, so the
 *   wait sees it land.  Credit that enters a slot after the drain comes
 *   from a release concurrent with the decision, which may as well have
 *   come after it.  A NOWAIT slow path waits for no other thread: credit
 *   in motion is an answer of -EAGAIN.
 * - While tickets are queued the slots are closed: draining closes them,
 *   credit cannot enter a closed slot, and a slot reopens only when no
 *   ticket waits.  A thread that put credit into a slot reads the ticket
 *   count after its compare-and-swap; a thread that queues a ticket
 *   increments that count before it drains (both full barriers), so one of
 *   the two sees the other and the credit reaches the ticket.
 * - What callers see counts what they hold: the snapshot and the flushing
 *   decisions subtract the credit from may_use (srsv__space_counter()).
 *
 * A cached release cannot compare its bytes with what its caller holds
 * (nothing counts that per caller); it refuses only more than the pool's
 * whole may_use, credit included.  An over-release it lets through leaves
 * more credit than what callers hold could account for: once the
 * releases that overdraw have all landed, the credit exceeds may_use.
 * Whenever credit goes back to may_use (credit_back(): a drain, a give-
 * back to tickets, a refused trim) the excess is detected there, counted
 * as a refused release (refused[SRSV_REFUSED_RELEASE]) and traced, and
 * only what may_use holds is subtracted, since the rest are bytes nobody
 * ever reserved.  So an over-release through the caches is caught at the
 * latest when the credit is next reconciled: the next reservation that
 * takes the slow path, grant of queued tickets, or capacity change
 * (srsv_space_set_readonly(), a block group given back).
 * Reservations served from a slot trace the reservation but no may_use
 * change.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache.h"
#include "counters.h"
#include "stats.h"
#include "trace.h"

/*
 * glibc 2.35+ registers every thread's rseq area, where the kernel keeps
 * the current CPU number: reading it is a load, where sched_getcpu() is a
 * call (that reads the same field).
 */
#if defined(__GLIBC__) && \
	(__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35)) && \
	(defined(__x86_64__) || defined(__aarch64__)) && \
	(defined(__clang__) || __GNUC__ >= 11) && defined(__has_include)
#if __has_include(<sys/rseq.h>)
#include <sys/rseq.h>
#define HAVE_RSEQ_AREA 1
#endif
#endif

/* A slot's word: credit bytes, or this bit when closed. */
#define CLOSED ((AO_t)1 << 63)
/* At most this many slots: beyond, CPUs share them. */
#define MAX_SLOTS 64

/* The CPUs this process may run on (a container's, not the host's). */
static unsigned usable_cpus(void)
{
	cpu_set_t set;
	long cpus;

	if (!sched_getaffinity(0, sizeof(set), &set) && CPU_COUNT(&set) > 0)
		return (unsigned)CPU_COUNT(&set);
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	return cpus < 1 ? 1 : (unsigned)cpus;
}

int srsv__cache_create(struct srsv_space *s, uint64_t batch)
{
	unsigned n = usable_cpus();
	struct srsv__cache_slot *slots;

	if (!batch)
		return 0;
	if (n > MAX_SLOTS)
		n = MAX_SLOTS;
	if (posix_memalign((void **)&slots, SRSV__CACHELINE,
			   n * sizeof(*slots)))
		return -ENOMEM;
	memset(slots, 0, n * sizeof(*slots));
	s->cache = slots;
	s->cache_slots = n;
	s->cache_batch = batch;
	/* Room kept free by refills: every slot's most credit, twice. */
	s->cache_margin = (uint64_t)n * 4 * batch;
	return 0;
}

void srsv__cache_free(struct srsv_space *s)
{
	free(s->cache);
	s->cache = NULL;
}

static inline int current_cpu(void)
{
#ifdef HAVE_RSEQ_AREA
	if (__rseq_size) {
		const volatile struct rseq *r = (const volatile struct rseq *)
			((char *)__builtin_thread_pointer() + __rseq_offset);
		int cpu = (int)r->cpu_id;

		/* Negative: registration failed (valgrind, old kernel). */
		if (cpu >= 0)
			return cpu;
	}
#endif
	return sched_getcpu();
}

static struct srsv__cache_slot *my_slot(struct srsv_space *s)
{
	int cpu = current_cpu();

	/* Any slot is correct; the CPU's own is merely fast. */
	return &s->cache[cpu < 0 ? 0 : (unsigned)cpu % s->cache_slots];
}

/* Close @c and hand back the credit it held. */
static uint64_t close_slot(struct srsv__cache_slot *c)
{
	AO_t v = AO_load(&c->word), seen;

	for (;; v = seen) {
		seen = AO_fetch_compare_and_swap_full(&c->word, v, CLOSED);
		if (seen == v)
			return v & ~CLOSED;
	}
}

/* Credit back into may_use; an excess over it is an over-release that a
 * cached release let through (see the essay): counted, traced, dropped. */
static uint64_t credit_back(struct srsv_space *s, uint64_t credit)
{
	uint64_t took = srsv__may_use_sub_clamped(s, credit);

	if (took < credit)
		srsv__refuse(s, SRSV_REFUSED_RELEASE, credit - took);
	return took;
}

uint64_t srsv__cache_drain(struct srsv_space *s)
{
	uint64_t credit = 0;

	if (!s->cache)
		return 0;
	for (unsigned i = 0; i < s->cache_slots; i++)
		credit += close_slot(&s->cache[i]);
	return credit ? credit_back(s, credit) : 0;
}

/*
 * Wait until no credit is in motion (see "in motion" in the essay).  No
 * motion takes a lock, so waiting for them under the pool lock cannot
 * deadlock.  With @nowait, only look.  True if none is (any more).
 */
static bool settle(struct srsv_space *s, bool nowait)
{
	for (unsigned i = 0; AO_load_acquire(&s->in_flight); i++) {
		if (nowait)
			return false;
		if (i < 64)
			srsv__cpu_relax();
		else
			sched_yield();
	}
	return true;
}

static bool block(struct srsv_space *s, bool nowait)
{
	if (!s->cache)
		return true;
	AO_fetch_and_add_full(&s->draining, 1);
	/*
	 * Close every slot, then let the credit in motion land: a motion
	 * that took credit from a slot before our drain reached it had
	 * announced itself first (see the essay).  A NOWAIT caller does not
	 * wait for another thread.
	 */
	srsv__cache_drain(s);
	if (!settle(s, nowait)) {
		AO_fetch_and_add_full(&s->draining, (AO_t)0 - 1);
		return false;
	}
	return true;
}

void srsv__cache_block(struct srsv_space *s)
{
	block(s, false);
}

bool srsv__cache_try_block(struct srsv_space *s)
{
	return block(s, true);
}

void srsv__cache_unblock(struct srsv_space *s)
{
	if (s->cache)
		AO_fetch_and_add_full(&s->draining, (AO_t)0 - 1);
}

/* Whether credit must stay out of the slots: tickets, or a slow path. */
static bool credit_unwelcome(const struct srsv_space *s)
{
	return AO_load_acquire(&s->waiting) || AO_load_acquire(&s->draining);
}

/*
 * A ticket or a slow path appeared after we put credit into @c: give the
 * credit back to may_use, where they look (the caller then grants).
 */
static void give_to_tickets(struct srsv_space *s, struct srsv__cache_slot *c)
{
	uint64_t credit;

	/* In motion until it is back in may_use: see settle(). */
	AO_fetch_and_add_full(&s->in_flight, 1);
	credit = close_slot(c);
	if (credit)
		credit_back(s, credit);
	AO_fetch_and_add_full(&s->in_flight, (AO_t)0 - 1);
}

/*
 * Whether @may_use + @grab leave the pool room for all the caches' credit
 * (no overcommit: credit is not worth promising space the pool does not
 * have).
 */
static bool far_from_full(const struct srsv_space *s, uint64_t may_use,
			  uint64_t grab)
{
	uint64_t total = srsv__space_counter(s, SRSV__TOTAL);
	uint64_t need = grab + s->cache_margin;
	/* Loaded after may_use: see "claimed" in internal.h. */
	uint64_t claimed = AO_load_acquire(&s->claimed);

	return need <= total && claimed <= total - need &&
	       may_use <= total - need - claimed;
}

/* Charge @grab to may_use if the pool stays far from full. */
static bool charge_far_from_full(struct srsv_space *s, uint64_t grab,
				 uint64_t *after)
{
	AO_t may_use = AO_load_acquire(&s->may_use), seen;

	for (;; may_use = seen) {
		if (!far_from_full(s, may_use, grab))
			return false;
		seen = AO_fetch_compare_and_swap_full(&s->may_use, may_use,
						      may_use + grab);
		if (seen == may_use)
			break;
	}
	/*
	 * The swap proves the word held may_use, not that claimed still
	 * does: judge again with claimed loaded now, as
	 * srsv__space_try_charge() does (space.c), and take the charge back
	 * if it no longer fits.  We are in motion (in_flight): a slow path
	 * deciding waits for this.
	 */
	srsv__trace_counter(s, SRSV__MAY_USE, may_use, (int64_t)grab);
	if (!far_from_full(s, may_use, grab)) {
		srsv__may_use_sub_clamped(s, grab);
		return false;
	}
	*after = may_use + grab;
	return true;
}

bool srsv__cache_take(struct srsv_space *s, uint64_t bytes, uint64_t *after,
		      bool *gave_back)
{
	struct srsv__cache_slot *c = my_slot(s);
	uint64_t batch = s->cache_batch;
	AO_t v = AO_load(&c->word), seen;

	*after = 0;
	*gave_back = false;
	for (;; v = seen) {
		if (v & CLOSED) {
			/* Reopen only with no ticket waiting and no slow
			 * path deciding (and no credit left by a refused
			 * give-back: v == CLOSED). */
			if (v != CLOSED || credit_unwelcome(s))
				return false;
			seen = AO_fetch_compare_and_swap_full(&c->word, v, 0);
			if (seen == v) {
				/* Closed again by a drain we raced? */
				if (credit_unwelcome(s)) {
					AO_compare_and_swap_full(&c->word, 0,
								 CLOSED);
					return false;
				}
				seen = 0;
			}
			continue;
		}
		if (v < bytes)
			break;
		seen = AO_fetch_compare_and_swap_full(&c->word, v, v - bytes);
		if (seen == v)
			return true;
	}

	/*
	 * Refill: ourselves plus one batch, in one step.  Plain looks first,
	 * so that near full or with a slow path deciding no take sets
	 * anything in motion.  Then announced in `in_flight` (a full barrier
	 * before we look at `draining` again): a slow path that blocks the
	 * caches waits until we are done, and we take no lock before we
	 * withdraw (srsv__cache_block()).
	 */
	if (credit_unwelcome(s) ||
	    !far_from_full(s, AO_load(&s->may_use), bytes + batch))
		return false;
	AO_fetch_and_add_full(&s->in_flight, 1);
	if (credit_unwelcome(s) ||
	    !charge_far_from_full(s, bytes + batch, after)) {
		AO_fetch_and_add_full(&s->in_flight, (AO_t)0 - 1);
		return false;
	}
	for (v = AO_load(&c->word);; v = seen) {
		if (v & CLOSED) {
			/* Closed meanwhile (a ticket or a slow path): the
			 * batch is theirs, not ours to keep. */
			srsv__may_use_sub_clamped(s, batch);
			*after -= batch;
			*gave_back = true;
			break;
		}
		seen = AO_fetch_compare_and_swap_full(&c->word, v, v + batch);
		if (seen == v)
			break;
	}
	/* Our swap was a full barrier: see the essay. */
	if (!*gave_back && credit_unwelcome(s)) {
		uint64_t credit = close_slot(c);

		if (credit)
			credit_back(s, credit);
		*gave_back = true;
	}
	AO_fetch_and_add_full(&s->in_flight, (AO_t)0 - 1);
	/* Only now may the caller take the pool lock to grant. */
	return true;
}

/*
 * Put @credit back into @c after a refused give-back (still in motion).
 * A slot closed meanwhile was drained: the credit goes to may_use, as far
 * as it holds any (the refusal says it holds less than the slot had).
 */
static void restore_slot(struct srsv_space *s, struct srsv__cache_slot *c,
			 uint64_t credit)
{
	AO_t v = AO_load(&c->word), seen;

	for (;; v = seen) {
		if (v & CLOSED) {
			/* The refused trim was counted by the release. */
			srsv__may_use_sub_clamped(s, credit);
			return;
		}
		seen = AO_fetch_compare_and_swap_full(&c->word, v, v + credit);
		if (seen == v)
			return;
	}
}

int srsv__cache_put(struct srsv_space *s, uint64_t bytes, bool *gave_back)
{
	struct srsv__cache_slot *c = my_slot(s);
	uint64_t batch = s->cache_batch, sum, keep;
	uint64_t may_use = AO_load_acquire(&s->may_use);
	bool trimming = false;
	AO_t v, seen;
	int ret = 0;

	*gave_back = false;
	/* The one check a cached release can make (see the essay). */
	if (bytes > may_use)
		return -EINVAL;
	/* Near full, credit would only be drained again: be exact. */
	if (!far_from_full(s, may_use - bytes, 0))
		return 0;
	for (v = AO_load(&c->word);; v = seen) {
		if (v & CLOSED)
			break;
		sum = v + bytes;
		keep = sum > 2 * batch ? batch : sum;
		/* Taking credit out of the slot: in motion (the essay). */
		if (sum > keep && !trimming) {
			AO_fetch_and_add_full(&s->in_flight, 1);
			trimming = true;
		}
		seen = AO_fetch_compare_and_swap_full(&c->word, v, keep);
		if (seen == v)
			break;
	}
	if (!(v & CLOSED) && sum > keep) {
		ret = srsv__may_use_sub(s, sum - keep);
		/*
		 * Refused: may_use holds less than the slot's credit, so an
		 * earlier release gave back bytes nobody held.  Refuse ours
		 * too, and put the slot back as it was (restore_slot()).
		 */
		if (ret)
			restore_slot(s, c, sum - keep - bytes);
	}
	/* Landed: only now may we take the pool lock. */
	if (trimming)
		AO_fetch_and_add_full(&s->in_flight, (AO_t)0 - 1);
	if (v & CLOSED)
		return 0;
	if (credit_unwelcome(s)) {
		give_to_tickets(s, c);
		*gave_back = true;
	}
	/* Credit went back, or for an instant the pool looked full: the
	 * caller grants what queued (srsv__maybe_grant(), a layer up). */
	if (ret)
		*gave_back = true;
	return ret ? ret : 1;
}
