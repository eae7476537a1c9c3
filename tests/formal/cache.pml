/*
 * cache.pml: the per-CPU reservation caches' credit protocol (lib/cache.c):
 * reservations taking credit from a slot and refilling it, releases giving
 * credit to a slot and trimming it, a slow path that closes and drains
 * every slot and waits for credit in motion, the NOWAIT slow path that
 * does not wait, and a ticket that keeps the slots closed until granted.
 *
 * Mirrors main as of the commit that adds this model, statement by
 * statement (lib/cache.c line numbers):
 *   close_slot() 177-186, srsv__cache_drain() 188-199, settle() 206-217,
 *   block() 219-236, srsv__cache_unblock() 248-252, credit_unwelcome()
 *   255-258, give_to_tickets() 273-285, far_from_full() 292-302,
 *   charge_far_from_full() 305-332, srsv__cache_take() 334-412,
 *   srsv__cache_put() 435-485;
 * and from lib/space.c release() and srsv__maybe_grant(),
 * srsv__try_grant_tickets() (its drain), srsv__space_try_charge() (one
 * step here: may_use.pml checks it); lib/reserve.c reserve_slow() (both
 * branches) and queue_ticket().
 *
 * Scale: SLOTS slots of BATCH = 1 byte; the margin that refills keep free
 * is SLOTS * 4 * BATCH, as srsv__cache_create() sets it; the pool has
 * TOTAL bytes, claimed is 0.  Every caller is lawful (no over-release:
 * restore_slot() and the clamping of srsv__may_use_sub_clamped() are not
 * exercised; may_use.pml covers over-releases of the word).  A slot word
 * is -1 for CLOSED (a closed slot holds no credit: every CAS that adds
 * credit checks CLOSED first), else its credit.
 *
 * Ghosts: `held`, bytes the callers hold; hidden = may_use - held is the
 * credit in slots plus the credit in motion.  For a slow path between
 * block() and its decision, `added[p]`: the credit that entered a slot or
 * was charged for a refill since p raised `draining`.  Checked:
 *   - at every slow path's decision: hidden <= added[p]: all credit that
 *     existed when the slow path began is back in may_use (the caches
 *     never cost it a reservation); what remains came from releases and
 *     refills concurrent with the decision;
 *   - a slot never holds more than 3 batches: 2 kept by releases, plus one
 *     a refill that raced them adds (the essay says 2; the margin of 4
 *     per slot covers 3, see README.md);
 *   - at quiescence: may_use == held + the slots' credit (nothing lost or
 *     invented), and while the slow path's ticket still waits no slot
 *     holds credit and the ticket does not fit (no credit hides from a
 *     ticket, no lost wake-up);
 *   - NOWAIT never blocks (the NOWAIT slow path, its release);
 *   - no deadlock; with -DNP, pan -l: no livelock.
 *
 * Mutants (-D), each must be refuted:
 *   MUTANT_NO_SETTLE        block() drains but does not wait for credit in
 *                           motion (a drain that ignores it)
 *   MUTANT_REFILL_UNANNOUNCED a refill does not raise in_flight
 *   MUTANT_PUT_NO_RECHECK   a release does not look at waiting/draining
 *                           after putting credit into its slot
 *   MUTANT_REOPEN_NO_RECHECK a take that reopened a slot does not look
 *                           again whether a drain raced it
 */

#ifndef SLOTS
#define SLOTS 2
#endif
#ifndef USERS
#define USERS 1
#endif
#ifndef ROUNDS
#define ROUNDS 2
#endif
#define BATCH 1
#define MARGIN (SLOTS * 4 * BATCH)
#ifndef TOTAL
#define TOTAL (MARGIN + 3)
#endif
#ifndef BIG
#define BIG (TOTAL - 1)		/* the slow path: fits only with no credit */
#endif
#define CLOSED (-1)

int word = 0;		/* s->may_use */
int slot[SLOTS];	/* s->cache[i].word */
int in_flight = 0;	/* s->in_flight */
int draining = 0;	/* s->draining */
int waiting = 0;	/* s->waiting (the one ticket) */
byte lock = 0;		/* s->lock */
bool tlisted = false;	/* the ticket is queued */
bool kicked = false, stopped = false, wdone = false;

int held = 0;		/* ghost */
int added[8];		/* ghost, per blocking pid */
bool blocking[8];	/* ghost: pid is between draining++ and its decision */
bool nowait[8];
byte done = 0;

#define HIDDEN (word - held)
#define ADDED(a) \
	added[1] = added[1] + (blocking[1] -> (a) : 0); \
	added[2] = added[2] + (blocking[2] -> (a) : 0); \
	added[3] = added[3] + (blocking[3] -> (a) : 0); \
	added[4] = added[4] + (blocking[4] -> (a) : 0); \
	added[5] = added[5] + (blocking[5] -> (a) : 0)

#define LOCK	atomic { assert(!nowait[_pid] || lock == 0); lock == 0 -> lock = _pid }
#define UNLOCK	atomic { assert(lock == _pid); lock = 0 }
#define UNWELCOME (waiting > 0 || draining > 0)	/* credit_unwelcome() */

/* srsv__may_use_sub_clamped(), lawful callers: exact. */
#define SUB(a) assert(word >= (a)); word = word - (a)

/* close_slot(), 177-186: one CAS loop, one step; the credit to @c. */
#define CLOSE_SLOT(i, c) \
	c = (slot[i] == CLOSED -> 0 : slot[i]); slot[i] = CLOSED

/* srsv__cache_drain(), 188-199: close every slot, then one subtraction. */
inline drain(i, c, credit)
{
	credit = 0;
	i = 0;
	do
	:: i < SLOTS -> atomic { CLOSE_SLOT(i, c); credit = credit + c }; i++
	:: else -> break
	od;
	atomic { SUB(credit) }			/* 198 */
}

/* srsv__try_grant_tickets(): drain, then the ticket if it fits. */
inline try_grant(i, c, credit)
{
	assert(lock == _pid);
	if
	:: tlisted ->
		drain(i, c, credit);
		atomic {
			if
			:: tlisted && word + BIG <= TOTAL ->
				word = word + BIG; held = held + BIG;
				tlisted = false; waiting = 0
			:: else
			fi
		}
	:: else
	fi
}

/* srsv__maybe_grant() */
inline maybe_grant(nw, i, c, credit)
{
	if
	:: waiting == 0
	:: else ->
		if
		:: nw ->
			if
			:: atomic { lock == 0 -> lock = _pid };
			   try_grant(i, c, credit); UNLOCK
			:: atomic { lock != 0 -> kicked = true }
			fi
		:: else -> LOCK; try_grant(i, c, credit); UNLOCK
		fi
	fi
}

/* far_from_full(), 292-302, claimed = 0 */
#define FAR(mu, grab) ((grab) + MARGIN <= TOTAL && (mu) <= TOTAL - (grab) - MARGIN)

/* block(), 219-236: false only for NOWAIT with credit in motion. */
inline block(nw, ok, i, c, credit)
{
	atomic { draining++; blocking[_pid] = true; added[_pid] = 0 };	/* 223 */
	drain(i, c, credit);					/* 230 */
#ifndef MUTANT_NO_SETTLE
	if							/* settle 206-217 */
	:: nw ->
		if
		:: in_flight > 0 -> atomic { draining--; blocking[_pid] = false };
		   ok = false
		:: else -> ok = true
		fi
	:: else -> atomic { assert(!nowait[_pid] || in_flight == 0); in_flight == 0 };
		ok = true
	fi
#else
	ok = true
#endif
}

/* The decision after block(): every credit that existed is back. */
#define DECIDE	assert(HIDDEN <= added[_pid]); blocking[_pid] = false

/*
 * srsv__cache_take(), 334-412, of 1 byte on slot @k.  @ok: reserved.
 */
inline take(k, nw, ok, v, seen, gave, i, c, credit)
{
	ok = false; gave = false;
	v = slot[k];						/* 339 */
	do
	:: v == CLOSED ->					/* 344 */
		if						/* 348-349 */
		:: UNWELCOME -> goto take_out
		:: else
		fi;
		atomic { seen = slot[k]; if :: seen == v -> slot[k] = 0 :: else fi };	/* 350 */
		if
		:: seen == v ->
#ifndef MUTANT_REOPEN_NO_RECHECK
			if					/* 353-357 */
			:: UNWELCOME ->
				atomic { if :: slot[k] == 0 -> slot[k] = CLOSED :: else fi };
				goto take_out
			:: else
			fi;
#endif
			v = 0
		:: else -> v = seen
		fi
	:: v != CLOSED && v < 1 -> break			/* 362-363 */
	:: v != CLOSED && v >= 1 ->
		atomic {					/* 364-366 */
			seen = slot[k];
			if
			:: seen == v -> slot[k] = v - 1; held = held + 1; ok = true
			:: else
			fi
		};
		if
		:: ok -> goto take_out
		:: else -> v = seen
		fi
	od;
	/* The refill, 377-411 */
	if							/* 377-379 */
	:: UNWELCOME || !FAR(word, 1 + BATCH) -> goto take_out
	:: else
	fi;
#ifndef MUTANT_REFILL_UNANNOUNCED
	atomic { in_flight++ };					/* 380 */
#endif
	atomic {						/* 381-385 */
		if
		:: !UNWELCOME && FAR(word, 1 + BATCH) ->
			/* charge_far_from_full(): CAS, re-check (claimed 0) */
			word = word + 1 + BATCH; held = held + 1; ok = true;
			ADDED(BATCH)
		:: else
		fi
	};
	if
	:: !ok ->
#ifndef MUTANT_REFILL_UNANNOUNCED
		atomic { in_flight-- };				/* 383 */
#endif
		goto take_out
	:: else
	fi;
	v = slot[k];						/* 386 */
	do
	:: v == CLOSED -> atomic { SUB(BATCH) }; gave = true; break	/* 387-393 */
	:: else ->
		atomic {					/* 395 */
			seen = slot[k];
			if
			:: seen == v -> slot[k] = v + BATCH; assert(slot[k] <= 3 * BATCH)
			:: else
			fi
		};
		if
		:: seen == v -> break
		:: else -> v = seen
		fi
	od;
	if							/* 400-406 */
	:: !gave && UNWELCOME ->
		atomic { CLOSE_SLOT(k, c); SUB(c) }; gave = true
	:: else
	fi;
#ifndef MUTANT_REFILL_UNANNOUNCED
	atomic { in_flight-- };					/* 407 */
#endif
	if							/* 409-410 */
	:: gave -> maybe_grant(nw, i, c, credit)
	:: else
	fi;
take_out:
	skip
}

/* give_to_tickets(), 273-285 */
inline give_to_tickets(k, nw, i, c, credit)
{
	atomic { in_flight++ };					/* 279 */
	atomic { CLOSE_SLOT(k, c); SUB(c) };			/* 280-282 */
	atomic { in_flight-- };					/* 283 */
	maybe_grant(nw, i, c, credit)				/* 284 */
}

/*
 * srsv__cache_put(), 435-485, of 1 byte on slot @k; @r: 1 when the
 * slot took it, 0 when the caller must subtract it from may_use.
 */
inline put(k, nw, r, v, seen, sum, keep, trimming, i, c, credit)
{
	r = 0; trimming = false;
	if							/* 448-449 */
	:: !FAR(word - 1, 0) -> goto put_out
	:: else
	fi;
	v = slot[k];						/* 450 */
	do
	:: v == CLOSED -> break					/* 451-452 */
	:: else ->
		sum = v + 1;					/* 453-454 */
		keep = (sum > 2 * BATCH -> BATCH : sum);
		if						/* 456-459 */
		:: sum > keep && !trimming -> atomic { in_flight++ }; trimming = true
		:: else
		fi;
		atomic {					/* 460 */
			seen = slot[k];
			if
			:: seen == v -> slot[k] = keep; held = held - 1; ADDED(1)
			:: else
			fi
		};
		if
		:: seen == v -> break
		:: else -> v = seen
		fi
	od;
	if							/* 464-473 */
	:: v != CLOSED && sum > keep -> atomic { SUB(sum - keep) }
	:: else
	fi;
	if							/* 475-476 */
	:: trimming -> atomic { in_flight-- }
	:: else
	fi;
	if
	:: v == CLOSED -> goto put_out				/* 477-478 */
	:: else
	fi;
	r = 1;
#ifndef MUTANT_PUT_NO_RECHECK
	if							/* 479-480 */
	:: UNWELCOME -> give_to_tickets(k, nw, i, c, credit)
	:: else
	fi;
#endif
put_out:
	skip
}

/* A writer: ROUNDS times reserve 1 byte (cached, else exact) and release it. */
proctype user()
{
	int k, v, seen, sum, keep, i, c, credit, r;
	bool ok, gave, trimming;
	byte n = 0;

	do
	:: n == ROUNDS -> break
	:: n < ROUNDS ->
		/* reserve_cached(): pending_for, then take on this CPU's slot */
		if
		:: k = 0
		:: k = SLOTS - 1
		fi;
		ok = false;
		if
		:: waiting == 0 -> take(k, false, ok, v, seen, gave, i, c, credit)
		:: else
		fi;
		if
		:: !ok ->		/* the exact fast path: try_charge */
			atomic {
				if
				:: waiting == 0 && word + 1 <= TOTAL ->
					word = word + 1; held = held + 1; ok = true
				:: else
				fi
			}
		:: else
		fi;
		if
		:: ok ->
			/* release(): maybe on another CPU now */
			if
			:: k = 0
			:: k = SLOTS - 1
			fi;
			put(k, false, r, v, seen, sum, keep, trimming, i, c, credit);
			if
			:: r == 0 ->
				atomic { SUB(1); held = held - 1 };
				maybe_grant(false, i, c, credit)
			:: else
			fi
		:: else
		fi;
progress_u:	n++
	od;
	atomic { done++ }
}

/* reserve_slow(), blocking: BIG bytes, queueing a ticket if they do not fit. */
proctype slow()
{
	int i, c, credit;
	bool ok, queued = false;

	LOCK;
	block(false, ok, i, c, credit);
	DECIDE;
	atomic {
		if
		:: word + BIG <= TOTAL -> word = word + BIG; held = held + BIG; ok = true
		:: else -> ok = false
		fi
	};
	if
	:: !ok ->	/* queue_ticket(): raise waiting, then try to grant */
		atomic { tlisted = true; waiting = 1 };
		queued = true;
		try_grant(i, c, credit)
	:: else
	fi;
	atomic { draining-- };			/* srsv__cache_unblock() */
	UNLOCK;
	if
	:: queued ->
end_wait:	!tlisted		/* granted (W asleep: a valid end if never) */
	:: else
	fi;
	/* release BIG (> BATCH: not through the caches) */
	atomic { SUB(BIG); held = held - BIG };
	maybe_grant(false, i, c, credit);
	atomic { done++ }
}

/* reserve_slow(), NOWAIT: try-lock, try-block, 1 byte; then release it. */
proctype nowaiter()
{
	int k, v, seen, sum, keep, i, c, credit, r;
	bool ok = false, gave, trimming;

	nowait[_pid] = true;
	if
	:: waiting == 0 ->
		if
		:: atomic { lock == 0 -> lock = _pid };
		   block(true, ok, i, c, credit);
		   if
		   :: ok ->
			DECIDE;
			atomic {
				if
				:: word + 1 <= TOTAL -> word = word + 1; held = held + 1
				:: else -> ok = false
				fi
			};
			atomic { draining-- }
		   :: else
		   fi;
		   UNLOCK
		:: atomic { lock != 0 -> skip }
		fi
	:: else
	fi;
	if
	:: ok ->
		if
		:: k = 0
		:: k = SLOTS - 1
		fi;
		put(k, true, r, v, seen, sum, keep, trimming, i, c, credit);
		if
		:: r == 0 ->
			atomic { SUB(1); held = held - 1 };
			maybe_grant(true, i, c, credit)
		:: else
		fi
	:: else
	fi;
	nowait[_pid] = false;
	atomic { done++ }
}

/* The pool's worker: grants after a NOWAIT kick. */
proctype worker()
{
	int i, c, credit;
end_idle:
	do
	:: atomic { kicked -> kicked = false };
	   LOCK; try_grant(i, c, credit); UNLOCK
	:: atomic { stopped && !kicked -> break }
	od;
	wdone = true
}

init
{
	byte j, n = 0;

	atomic {
#ifdef START_CLOSED
		/* As an earlier drain left them: a take must reopen. */
		for (j : 0 .. SLOTS - 1) {
			slot[j] = CLOSED
		}
#endif
		for (j : 1 .. USERS) {
			run user(); n++
		}
		run slow(); n++;
#ifdef NOWAITER
		run nowaiter(); n++;
#endif
		run worker()
	}
	(done == n || (done == n - 1 && tlisted && lock == 0 && in_flight == 0));
	stopped = true;
	wdone;
	/* Quiescence (the slow path may still be waiting for its grant) */
	assert(in_flight == 0 && draining == 0);
	c_sum: skip;
	j = 0;
	n = 0;		/* the slots' credit */
	do
	:: j < SLOTS -> n = n + (slot[j] == CLOSED -> 0 : slot[j]); j++
	:: else -> break
	od;
	assert(word == held + n);
	assert(!tlisted || (n == 0 && word + BIG > TOTAL))
}
