/*
 * ticket_end.pml: the end of a reservation ticket racing its grant, its
 * cancellation, its timeout and shutdown; the no-lost-wake-up handshake
 * between a lock-free release and a queueing reservation.
 *
 * Mirrors main as of the commit that adds this model (after the
 * asynchronous tickets of c42f013, which left the blocking path as it
 * was; their posting is not modelled, see README.md), statement by
 * statement:
 * (Since the library was split into layers, the ticket-ending, granting
 * and failing functions live in lib/tickets.c, the gate in lib/gate.c;
 * the line numbers are those of the commit named above.)
 *   lib/reserve.c  srsv__ticket_remove() 102-113, srsv__ticket_end()
 *                  115-143, srsv__ctx_enter()/leave() 145-161,
 *                  queue_ticket() 227-276, reserve_slow() 283-364 (the
 *                  blocking branch 318-364 and the NOWAIT one 290-313),
 *                  ticket_wait() 424-476, srsv_ticket_cancel() 514-536,
 *                  reserve_blocking() 539-585
 *   lib/space.c    srsv__try_grant_tickets() 350-374 (one normal queue),
 *                  srsv__maybe_grant() 376-398, release() 411-431 (the
 *                  compare-and-swap of srsv__may_use_sub(): one step here,
 *                  may_use.pml checks it)
 *   lib/ctx.c      srsv_ctx_shutdown() 311-351
 *   lib/flush.c    srsv__fail_all_tickets() 179-192
 * One FLUSH_ALL ticket (the normal queue: no priority walk), no caches,
 * no asynchronous completion (t->async == NULL), no flushing: the only
 * way space comes back is a release.
 *
 * Processes: W reserves BYTES with srsv_space_reserve_timeout() on a pool
 * that R fills; R releases what it holds (lock-free, then
 * srsv__maybe_grant(), NOWAIT or not: chosen); the pool's worker serves a
 * NOWAIT release's kick; optional: C cancels W's ticket (as
 * srsv_ticket_cancel() does for a ticket of srsv_ticket_reserve(): the
 * same locked code), S shuts the ctx down, N makes a NOWAIT reservation.
 *
 * Mutex: a pid-owned bit; pthread_cond_wait(): release the mutex and
 * sleep in one step, wake on a signal (or, with a deadline, at any
 * moment: ETIMEDOUT), then take the mutex again.  No spurious wake-ups
 * (they would only add loops that re-check the state).  A NOWAIT process
 * asserts it never blocks on the mutex (it may only try it).
 *
 * Checked: the ticket ends exactly once when it was queued; granted XOR
 * cancelled/timed out/shut down, and the waiter's result says which; a
 * waiter told "granted" holds the bytes and nobody else does (no byte
 * lost or invented: at quiescence may_use is 0 after every holder
 * released); no deadlock (invalid end states: a waiter asleep for ever
 * with nothing left to wake it is one); nobody touches the ctx after
 * shutdown returned; NOWAIT never blocks; with -DNP, pan -l: no cycle
 * without progress.
 *
 * Mutants (-D), each must be refuted:
 *   MUTANT_TIMEOUT_NO_RECHECK  ticket_wait() ends the ticket after
 *                              ETIMEDOUT without re-checking QUEUED
 *   MUTANT_CANCEL_NO_CHECK     cancel ends a ticket that is not queued
 *   MUTANT_NO_GRANT_AFTER_QUEUE queue_ticket() does not try to grant
 *                              after raising `waiting`
 *   MUTANT_RELEASE_NO_GRANT    release() does not call maybe_grant()
 *   MUTANT_SHUTDOWN_NO_WAIT    shutdown does not wait for `active`
 *   MUTANT_ACTIVE_LATE         reserve_blocking() counts itself in
 *                              `active` only in ticket_wait()
 */

#ifndef TOTAL
#define TOTAL 2
#endif
#ifndef BYTES
#define BYTES 2
#endif

#define QUEUED 1
#define DONE 2
#define EINPROGRESS 115
#define ETIMEDOUT 110
#define ECANCELED 125
#define ESHUTDOWN 108
#define EAGAIN 11
#define ENOSPC 28

int word = TOTAL;	/* s->may_use: R holds all of it */
byte lock = 0;		/* s->lock: owner's pid, 0 when free */
int waiting = 0;	/* s->waiting */
bool closing = false;	/* ctx->closing */
int nactive = 0;		/* ctx->active */
bool kicked = false;	/* srsv__worker_kick() pending */
bool stopped = false;	/* srsv__workers_stop() */
bool wdone = false;	/* the worker thread ended */

/* W's ticket */
byte tstate = 0;	/* IDLE, QUEUED, DONE */
bool tlisted = false;	/* on s->tickets */
int terror = 0;
bool sleeping = false;	/* W inside pthread_cond_wait() */
bool signalled = false;

/* ghosts */
byte ends = 0;		/* srsv__ticket_end() calls on W's ticket */
bool granted = false;	/* ... of which a grant */
bool queued = false;	/* the ticket was queued */
bool freed = false;	/* srsv_ctx_shutdown() returned: ctx may be freed */
bool nowait[8];
int held_w = 0, held_n = 0;
byte done = 0;

/* The threads the library counts or joins (W: pid 1, the worker: pid 3)
 * must not touch the ctx once shutdown returned; the user's own calls
 * racing its destruction are the user's business. */
#define TOUCH	assert(!freed || (_pid != 1 && _pid != 3))
#define LOCK	atomic { assert(!nowait[_pid] || lock == 0); TOUCH; \
			 lock == 0 -> lock = _pid }
#define UNLOCK	atomic { assert(lock == _pid); lock = 0 }

/* srsv__ticket_remove(), 102-113 */
#define TICKET_REMOVE \
	if \
	:: tlisted -> tlisted = false; waiting = waiting - 1 \
	:: else \
	fi

/* srsv__ticket_end(), 115-143, blocking ticket: signal, then DONE. */
#define TICKET_END(err) \
	assert(lock == _pid); \
	terror = err; ends++; assert(ends == 1); \
	if \
	:: sleeping -> signalled = true \
	:: else \
	fi; \
	tstate = DONE

/*
 * srsv__try_grant_tickets(), 350-374: the head ticket, if it fits
 * (srsv__space_try_charge(), under the lock: one step).
 */
#define TRY_GRANT \
	assert(lock == _pid); \
	if \
	:: tlisted && word + BYTES <= TOTAL -> \
		word = word + BYTES; \
		TICKET_REMOVE; \
		granted = true; \
		TICKET_END(0) \
	:: else \
	fi

/* srsv__maybe_grant(), 376-398 */
inline maybe_grant(nw)
{
	if
	:: waiting == 0 -> skip				/* 383-384 */
	:: else ->
		if
		:: nw ->
			if				/* 386-392 */
			:: atomic { lock == 0 -> lock = _pid };
			   atomic { TRY_GRANT };
			   UNLOCK
			:: atomic { lock != 0 -> kicked = true }
			fi
		:: else ->
			LOCK;				/* 394 */
			atomic { TRY_GRANT };		/* 396 */
			UNLOCK
		fi
	fi
}

/* release(), 411-431, without caches: the CAS, then maybe_grant(). */
inline release(b, nw)
{
	atomic { assert(word >= b); word = word - b };	/* 422 */
#ifndef MUTANT_RELEASE_NO_GRANT
	maybe_grant(nw)					/* 427 */
#endif
}

proctype releaser()
{
	bool nw;

	if
	:: nw = true
	:: nw = false
	fi;
	nowait[_pid] = nw;
	release(TOTAL, nw);
	nowait[_pid] = false;
progress_r:
	atomic { done++ }
}

/* The pool's async worker: grants after a NOWAIT release's kick. */
proctype worker()
{
end_idle:
	do
	:: atomic { kicked -> kicked = false };
	   LOCK; atomic { TRY_GRANT }; UNLOCK
	:: atomic { stopped && !kicked -> break }
	od;
	wdone = true
}

/* srsv_space_reserve_timeout(BYTES, FLUSH_ALL): the fast path failed. */
proctype waiter()
{
	bool timed;	/* a finite timeout: cond_wait may time out */
	int ret;

	if
	:: timed = true
	:: timed = false
	fi;
	/* reserve_blocking(), 539-585 (TICKET_API: srsv_ticket_reserve()
	 * and srsv_ticket_wait(), which count themselves only inside) */
#if !defined(MUTANT_ACTIVE_LATE) && !defined(TICKET_API)
	nactive++;					/* 562 */
#endif
	/* reserve_slow(), 283-364, blocking branch */
	atomic { nactive++;				/* ctx_enter 147 */
		 if
		 :: closing -> nactive--; ret = -ESHUTDOWN	/* 150-153 */
		 :: else -> ret = 0
		 fi }
	if
	:: ret == -ESHUTDOWN -> goto out_slow_nolock
	:: else
	fi;
	LOCK;						/* 321 */
	if
	:: closing -> ret = -ESHUTDOWN			/* 324-325 */
	:: !closing && word + BYTES <= TOTAL ->		/* try_reserve 326 */
		word = word + BYTES; ret = 0
	:: !closing && word + BYTES > TOTAL ->
		/* queue_ticket(), 227-276 */
		atomic { tstate = QUEUED; tlisted = true; queued = true;
			 waiting = waiting + 1 };	/* 244-248 */
#ifndef MUTANT_NO_GRANT_AFTER_QUEUE
		atomic { TRY_GRANT };			/* 254 */
#endif
		if
		:: tstate == DONE -> ret = terror	/* 255-260 */
		:: else -> ret = -EINPROGRESS
		fi
	fi;
	UNLOCK;						/* 360 */
	nactive--;					/* ctx_leave 361 */
out_slow_nolock:
	if
	:: ret != -EINPROGRESS ->
#ifdef TICKET_API
		tstate = DONE;	/* srsv_ticket_reserve(): finished at once */
		terror = ret;
#elif !defined(MUTANT_ACTIVE_LATE)
		nactive--;			/* ctx_leave_waited 565 */
#endif
		goto out				/* 564-571 */
	:: else
	fi;
	/* ticket_wait(), 424-476 */
	if
	:: tstate == DONE -> ret = terror; goto out_wait	/* 432-433 */
	:: else
	fi;
	nactive++;					/* 444 */
	LOCK;						/* 445 */
	do						/* 458-466 */
	:: tstate != QUEUED -> break
	:: else ->
		/* srsv__cond_wait(): sleep and unlock in one step */
		atomic { TOUCH; sleeping = true; signalled = false; lock = 0 };
		if
		:: atomic { signalled -> sleeping = false; ret = 0 }
		:: timed -> atomic { sleeping = false; ret = ETIMEDOUT }
		fi;
		LOCK;
#ifndef MUTANT_TIMEOUT_NO_RECHECK
		if					/* 459-465 */
		:: ret == ETIMEDOUT && tstate == QUEUED ->
#else
		if
		:: ret == ETIMEDOUT ->
#endif
			TICKET_REMOVE;
			TICKET_END(-ETIMEDOUT);
			TRY_GRANT
		:: else
		fi
	od;
	ret = terror;
	UNLOCK;						/* 467 */
	nactive--;					/* 468 */
out_wait:
	skip;
#if !defined(MUTANT_ACTIVE_LATE) && !defined(TICKET_API)
	nactive--;				/* ctx_leave_waited 583 */
#endif
out:
	/* The caller owns the bytes exactly when told 0. */
	if
	:: ret == 0 -> assert(!queued || granted); held_w = BYTES
	:: else -> assert(!granted)
	fi;
progress_w:
	if
	:: held_w > 0 ->
		if
		:: !freed -> release(held_w, false); held_w = 0
		:: else -> skip	/* the ctx is gone: its bytes with it */
		fi
	:: else
	fi;
	atomic { done++ }
}

/* srsv_ticket_cancel(), 514-536, on W's ticket. */
proctype canceller()
{
	/* Cancelling before the ticket exists is a bad call: wait for it. */
	tstate != 0;
	LOCK;						/* 526 */
#ifndef MUTANT_CANCEL_NO_CHECK
	if						/* 527-533 */
	:: tstate == QUEUED ->
#else
	if
	:: tstate != 0 ->
#endif
		atomic { TICKET_REMOVE; TICKET_END(-ECANCELED) };
		atomic { TRY_GRANT }
	:: else
	fi;
	UNLOCK;
progress_c:
	atomic { done++ }
}

/* srsv_ctx_shutdown(), 311-351 (one pool). */
proctype shutdown()
{
	atomic { closing = true };			/* 327 */
	LOCK;						/* 333 */
	/* srsv__fail_all_tickets(), 179-192 */
	atomic {
		if
		:: tlisted -> TICKET_REMOVE; TICKET_END(-ESHUTDOWN)
		:: else
		fi
	};
	UNLOCK;						/* 335 */
	stopped = true;				/* workers_stop 337 */
	wdone;						/* (joined) */
#ifndef MUTANT_SHUTDOWN_NO_WAIT
	nactive == 0;					/* 346-347 */
#endif
#ifndef TICKET_API
	/* srsv_ctx_destroy() may free the ctx now.  Not with TICKET_API:
	 * include/libspacersv/ctx.h forbids srsv_ticket_wait() to race
	 * destroy ("shut down first, let the waits return"). */
	freed = true;
#endif
progress_s:
	atomic { done++ }
}

/* A NOWAIT reservation of 1: reserve_slow()'s NOWAIT branch, 290-313. */
proctype nowaiter()
{
	nowait[_pid] = true;
	if						/* 298 */
	:: waiting != 0 -> skip			/* pending_for: -EAGAIN */
	:: else ->
		if
		:: atomic { lock == 0 -> lock = _pid };
		   if					/* try_reserve 302 */
		   :: word + 1 <= TOTAL -> word = word + 1; held_n = 1
		   :: else
		   fi;
		   UNLOCK
		:: atomic { lock != 0 -> skip }		/* -EAGAIN */
		fi
	fi;
	if
	:: held_n > 0 -> release(held_n, true); held_n = 0
	:: else
	fi;
	nowait[_pid] = false;
progress_n:
	atomic { done++ }
}

init
{
	byte n = 2;

	atomic {
		run waiter();
		run releaser();
		run worker();
#ifdef CANCEL
		run canceller(); n++;
#endif
#ifdef SHUTDOWN
		run shutdown(); n++;
#endif
#ifdef NOWAITER
		run nowaiter(); n++;
#endif
	}
	done == n;
	stopped = true;
	wdone;
	/* Quiescence */
	assert(ends == (queued -> 1 : 0));
	assert(waiting == 0 && !tlisted);
	assert(freed || word == 0);
	assert(lock == 0)
}
