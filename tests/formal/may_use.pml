/*
 * may_use.pml: the admission word srsv_space::may_use (lib/counters.c;
 * lib/space.c before the library was split into layers).
 *
 * Default: lib/space.c as of the commit that adds this model (on main
 * after 42b0de9; line numbers re-checked at its last landing), where a release subtracts with a compare-and-swap and
 * an admission re-checks claimed after its swap.  -DXADD_UNDO: the protocol of 7965481, where a release
 * subtracted with one fetch-and-add and undid a refused subtraction (the
 * "wrapped" word); SPIN refutes it (see README.md), so it is run as a
 * mutant.
 *
 * Mirrors, statement by statement (lib/space.c line numbers; the
 * XADD_UNDO lines are those of 7965481):
 *   srsv__may_use_add()        172-177  (XADD_UNDO: 186-201, wait 170-184)
 *   srsv__may_use_sub()        179-193  (XADD_UNDO: 245-256 and
 *                                        may_use_sub_undo() 204-221)
 *   srsv__space_try_charge()   314-341  (fits() 268-283 in mode NO_FLUSH,
 *                                        without overcommit;
 *                                        claimed_still_fits() 300-312)
 *   srsv_space_alloc()         520-531  (srsv__space_update() 137: claimed
 *                                        is raised before may_use falls)
 *   srsv_space_free_reserved() through transition() 474
 * The pool lock those two take orders them with each other only; the
 * lock-free admission and release do not take it, so it is not modelled,
 * nor are the tickets claimed_still_fits() serves (ticket_end.pml).
 *
 * The 64-bit word is scaled down to W = 64 values, arithmetic modulo W as
 * the C word's is modulo 2^64; SRSV__MAY_USE_WRAPPED (3 << 62) becomes
 * 3 << 4 = 48.  Requests are 1 or 2 bytes, the pool TOTAL bytes.
 *
 * Memory model: sequential consistency.  Every C atomic here is a
 * full-barrier read-modify-write (AO_*_full), a release store, or an
 * acquire load; the loads that feed a compare-and-swap are re-checked by
 * it, and the one order that matters between two loads (may_use, then
 * claimed: internal.h) is kept, as in C, by acquire.  One Promela step per
 * C atomic; thread-local arithmetic is folded into the neighbouring step.
 * Spin-waits (cpu_relax, then sched_yield) are blocking guards, so a wait
 * that never ends is an invalid end state.
 *
 * Ghost variables (the specification): `held`, bytes of may_use the
 * callers hold (a release's bytes count until it takes effect);
 * `accepted_over`, over-releases the pool accepted (a double release of no
 * more than may_use, which no counter can tell from a lawful one);
 * `claimed_g` / `moving`, claimed and the bytes already added to it but
 * not yet taken out of may_use; `pending`, bytes a release subtracted and
 * has not yet judged (XADD_UNDO only).  Asserted:
 *   - after every step: word == held - accepted_over - pending (mod W):
 *     no byte lost or invented, at any instant;
 *   - a lawful release is refused only after the pool accepted an
 *     over-release (which may have taken its bytes): no wrong -EINVAL;
 *   - an over-release is accepted only when may_use holds that much;
 *   - no admission beyond the limit: what the callers hold, plus claimed
 *     (each moving byte once), plus the new bytes, is at most TOTAL; under
 *     XADD_UNDO an admission may count releases still in progress as done,
 *     which are then marked and must not end refused;
 *   - at quiescence: nothing pending and the word is what the callers
 *     hold;
 *   - NOWAIT callers (the first kind of round below) never reach a
 *     blocking guard that blocks;
 *   - with -DNP, pan -l: no cycle without progress (livelock).
 *
 * Mutants (-D), each must be refuted:
 *   MUTANT_NO_RECHECK     admission without claimed_still_fits() (the
 *                         code of 7965481: an ABA on may_use)
 *   MUTANT_SUB_NO_CHECK   the release's CAS loop without "old < bytes"
 *   MUTANT_CHARGE_NO_CAS  admission checks, then adds with a fetch-and-add
 *   XADD_UNDO             the fetch-and-add with undo of 7965481 (a
 *                         NOWAIT release waits; with NOWAIT_UNCHECKED and
 *                         XADD_RECHECK, the recheck added: a lawful
 *                         release refused)
 *   XADD_UNDO + MUTANT_NO_UNDO  ... with the undo omitted
 */

#ifndef NPROC
#define NPROC 2
#endif
#ifndef ROUNDS
#define ROUNDS 2
#endif
#ifndef TOTAL
#define TOTAL 3
#endif

#define W 64
#define WRAPPED 48
#define EINVAL 22

int word = 0;		/* s->may_use */
int claimed = 0;	/* s->claimed */
int held = 0;		/* ghost: bytes of may_use the callers hold */
int accepted_over = 0;	/* ghost: over-releases the pool accepted */
int moving = 0;		/* ghost: in claimed, not yet out of may_use */
int pending = 0;	/* ghost: subtracted, not yet judged (XADD_UNDO) */
int tentative = 0;	/* ghost: admitted in the word, not yet confirmed */
int inrel[5];		/* ghost: a lawful release in progress, its bytes */
bool must[5];		/* ghost: an admission counted on that release */
bool nowait[5];		/* ghost: the caller is in a NOWAIT entry point */
byte done = 0;

#define INVARIANT \
	assert(word == (held - accepted_over - pending + tentative + 2 * W) % W)

/* A blocking guard: a NOWAIT caller must never block on one. */
#define WAIT_FOR(cond) atomic { assert(!nowait[_pid] || (cond)); cond }

/* The ghost side of a release of @b that takes effect... */
#define RELEASED(b, mine) \
	if \
	:: mine -> held = held - b; inrel[_pid] = 0; must[_pid] = false \
	:: else -> assert(held + tentative - accepted_over >= b); \
		accepted_over = accepted_over + b \
	fi

/* ... and of one refused with -EINVAL. */
#define REFUSED(b, mine) \
	assert(!mine || (accepted_over > 0 && !must[_pid])); \
	inrel[_pid] = 0

#define inrel_sum() (inrel[1] + inrel[2] + inrel[3] + inrel[4])
#define mark_inrel() \
	must[1] = must[1] || inrel[1] > 0; must[2] = must[2] || inrel[2] > 0; \
	must[3] = must[3] || inrel[3] > 0; must[4] = must[4] || inrel[4] > 0
#define USAGE (held - accepted_over + claimed - moving)

/* An admission of @b takes effect. */
#define ADMITTED(b) \
	assert(USAGE + b <= TOTAL || USAGE - inrel_sum() + b <= TOTAL); \
	if \
	:: USAGE + b > TOTAL -> mark_inrel() \
	:: else \
	fi; \
	held = held + b

#ifndef XADD_UNDO

/* srsv__may_use_add(), 172-177: one fetch-and-add. */
inline may_use_add(b, old, seen)
{
	d_step {						/* 174 */
		word = (word + b) % W;
		held = held + b;
		INVARIANT
	}
}

/*
 * srsv__may_use_sub(), 179-193.  @mine: the caller holds these bytes (a
 * lawful release) or not (an over-release).
 */
inline may_use_sub(b, mine, old, seen, ret)
{
	old = word;						/* 181 */
	do
	:: true ->
#ifndef MUTANT_SUB_NO_CHECK
		if						/* 184-185 */
		:: old < b -> ret = -EINVAL; REFUSED(b, mine); break
		:: else
		fi;
#endif
		d_step {					/* 186-187 */
			seen = word;
			if
			:: seen == old ->
				word = (word + W - b) % W;
				RELEASED(b, mine)
			:: else
			fi;
			INVARIANT
		}
		if						/* 188-189 */
		:: seen == old -> ret = 0; break
		:: else -> old = seen
		fi
	od
}

#else	/* XADD_UNDO: lib/space.c of 7965481 */

/* wait_unwrapped(), 170-184 (NOWAIT_UNCHECKED: without the NOWAIT check,
 * to let SPIN show the next flaw) */
#ifndef NOWAIT_UNCHECKED
#define WAIT_UNWRAPPED(v) atomic { assert(!nowait[_pid] || word < WRAPPED); \
	word < WRAPPED -> v = word }
#else
#define WAIT_UNWRAPPED(v) atomic { word < WRAPPED -> v = word }
#endif

/* srsv__may_use_add(), 186-201: a compare-and-swap on an unwrapped word. */
inline may_use_add(b, old, seen)
{
	WAIT_UNWRAPPED(old);					/* 188 */
	do
	:: true ->
		if						/* 191-194 */
		:: old >= WRAPPED -> WAIT_UNWRAPPED(seen); old = seen; goto retry_add
		:: else
		fi;
		d_step {					/* 195-196 */
			seen = word;
			if
			:: seen == old ->
				word = (word + b) % W;
				held = held + b
			:: else
			fi;
			INVARIANT
		}
		if						/* 197-198 */
		:: seen == old -> break
		:: else -> old = seen
		fi;
retry_add:	skip
	od
}

/* srsv__may_use_sub(), 245-256, and may_use_sub_undo(), 204-221. */
inline may_use_sub(b, mine, old, seen, ret)
{
	if
	:: mine -> inrel[_pid] = b
	:: else
	fi;
	d_step {						/* 251 */
		old = word;
		word = (word + W - b) % W;
		if
		:: old < b || old >= WRAPPED ->
			pending = pending + b	/* to be undone */
		:: else ->
			RELEASED(b, mine)	/* a fit: done */
		fi;
		INVARIANT
	}
	if							/* 252 */
	:: old < b || old >= WRAPPED ->
		do
		:: true ->
#ifndef MUTANT_NO_UNDO
			d_step {				/* 209 */
				word = (word + b) % W;
				pending = pending - b;
				INVARIANT
			};
#endif
			if					/* 210-211 */
			:: old < b -> ret = -EINVAL; REFUSED(b, mine); break
			:: else
			fi;
			WAIT_UNWRAPPED(seen);			/* 213 */
			d_step {				/* 214-215 */
				old = word;
				word = (word + W - b) % W;
				if
				:: old >= WRAPPED || old < b ->
					pending = pending + b
				:: else ->
					RELEASED(b, mine)
				fi;
				INVARIANT
			}
			if					/* 216-217 */
			:: old >= b && old < WRAPPED -> ret = 0; break
			:: else
			fi
		od
	:: else -> ret = 0					/* 254-255 */
	fi
}
#endif	/* XADD_UNDO */

/*
 * srsv__space_try_charge(), 314-341, mode NO_FLUSH, fits() 268-283 without
 * the overcommit allowance: claimed + may_use + bytes <= total.
 */
inline try_charge(b, ok, mu, seen, cl)
{
#ifdef MUTANT_CLAIMED_FIRST
	cl = claimed;
#endif
	mu = word;						/* 317 */
	do
	:: true ->
#ifdef XADD_UNDO
		if			/* 7965481:360: a refusal pending */
		:: mu >= WRAPPED -> ok = false; break
		:: else
		fi;
#endif
#ifndef MUTANT_CLAIMED_FIRST
		cl = claimed;					/* 321 */
#endif
		if						/* 322-323 */
		:: cl + mu + b > TOTAL -> ok = false; break
		:: else
		fi;
#ifndef MUTANT_CHARGE_NO_CAS
		d_step {					/* 324-325 */
			seen = word;
			if
			:: seen == mu ->
				word = (word + b) % W;
#if (defined(XADD_UNDO) && !defined(XADD_RECHECK)) || defined(MUTANT_NO_RECHECK)
				ADMITTED(b)
#else
				tentative = tentative + b
#endif
			:: else
			fi;
			INVARIANT
		}
		if						/* 326 */
		:: seen == mu ->
#if !((defined(XADD_UNDO) && !defined(XADD_RECHECK)) || defined(MUTANT_NO_RECHECK))
			/*
			 * 327-331, claimed_still_fits() 303-311: the word may
			 * have come back to mu while a transition moved bytes
			 * into claimed: judge again with claimed loaded now
			 * (303-306), else take it back (309; the grant at 310
			 * is not modelled) and go round again (330-331).
			 */
			d_step {
				if
				:: claimed == cl || claimed + mu + b <= TOTAL ->
					tentative = tentative - b;
					ADMITTED(b);
					ok = true
				:: else -> ok = false
				fi
			}
			if
			:: ok -> break
			:: else ->
				d_step {	/* 309: srsv__may_use_sub_clamped() */
					if
					:: word >= b -> word = word - b
					:: else ->	/* an over-release took them */
						accepted_over = accepted_over - (b - word);
						word = 0
					fi;
					tentative = tentative - b;
					INVARIANT
				}
				mu = word
			fi
#else
			ok = true; break
#endif
		:: else -> mu = seen
		fi
#else
		d_step {
			word = (word + b) % W;
			ADMITTED(b);
			INVARIANT
		}
		ok = true;
		break
#endif
	od
}

/*
 * srsv_space_alloc(), 520-531 (lock held): @b of the caller's may_use
 * become reserved: claimed first (srsv__space_update(), release store at
 * 137), then srsv__may_use_sub().
 */
inline alloc(b, old, seen, ret)
{
	if							/* 520-521 */
	:: atomic { word < b -> REFUSED(b, true); ret = -EINVAL }
	:: else ->
		d_step { claimed = claimed + b; moving = moving + b };	/* 523 */
		may_use_sub(b, true, old, seen, ret);		/* 525 */
		skip;	/* (a break may not jump into a d_step) */
		d_step {
			moving = moving - b;
			if					/* 526-529 */
			:: ret != 0 -> claimed = claimed - b
			:: else
			fi
		}
	fi;
	if				/* srsv_space_free_reserved(), transition() */
	:: ret == 0 -> atomic { claimed = claimed - b }
	:: else
	fi
}

/*
 * A caller, ROUNDS times one of:
 *   a NOWAIT reservation of b (srsv_space_reserve(), SRSV_RESERVE_NOWAIT:
 *   the same lock-free admission) and its NOWAIT release
 *   (srsv__space_release_nowait());
 *   a reservation, then srsv_space_alloc() and srsv_space_free_reserved();
 *   a forced addition (srsv__may_use_add(), as rsv.c's refill) and its
 *   release;
 *   an over-release of b bytes it does not hold (a double release).
 * Every option opens with a guard: an inline's opening `if ... else`
 * would otherwise be taken for this `if`'s guard, and its else never.
 */
proctype caller()
{
	int b, old, seen, ret, cl;
	bool ok;
	byte r = 0;

	do
	:: r == ROUNDS -> break
	:: r < ROUNDS ->
		if
		:: b = 1
		:: b = 2
		fi;
		if
		:: true ->
			nowait[_pid] = true;
			try_charge(b, ok, old, seen, cl);
			if
			:: ok -> may_use_sub(b, true, old, seen, ret)
			:: else
			fi;
			nowait[_pid] = false
		:: true ->
			try_charge(b, ok, old, seen, cl);
			if
			:: ok -> alloc(b, old, seen, ret)
			:: else
			fi
#ifdef WITH_ADD
		:: true ->
			may_use_add(b, old, seen);
			may_use_sub(b, true, old, seen, ret)
#endif
		:: true ->
			may_use_sub(b, false, old, seen, ret)
		fi;
progress_op:	r++
	od;
	atomic { done++ }
}

init
{
	byte i;

	assert(NPROC <= 4);
	atomic {
		for (i : 1 .. NPROC) {
			run caller()
		}
	}
	done == NPROC;
	/* Quiescence: nothing pending, nothing lost or invented. */
	assert(pending == 0 && moving == 0 && claimed == 0);
	assert(word == held - accepted_over)
}
