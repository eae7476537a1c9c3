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
 *
 * -DCAPACITY adds a third kind of process, the pool's capacity changes
 * (under the pool lock, which alloc() and free_reserved() then take too):
 * srsv_space_set_readonly() without force (space.c 615-644: a charge
 * through the admission word, then readonly += x, then may_use -= x),
 * srsv_space_clear_readonly() (562, transition() 474-497),
 * srsv_space_grow() (568-590), srsv_space_shrink() (592-613), the removal
 * of a block group that holds no readonly bytes (give_back() in
 * lib/bgroup.c 789-815: a charge through the word, total -= x, may_use
 * -= x) and the addition of a zone group whose last byte is not writable
 * (pool_grow() in lib/bgroup.c 421-431: zone_unusable, hence claimed,
 * += 1, then total += 2).  TOTAL is then the pool's initial total, `total`
 * the word s->counters[SRSV__TOTAL], and admission is try_charge_cap().
 * The callers make no over-release in these runs (an over-release that
 * took a capacity change's own charge is a caller bug this part does not
 * judge), and every admission is asserted against the pool's real total
 * at the instant it is confirmed.
 *
 * Under CAPACITY the default is the FIXED protocol, not today's code (see
 * try_charge_cap() and README.md): every change of total is bracketed, under
 * the pool lock, by two increments of a capacity sequence word (odd while
 * it runs); admission loads the sequence word first and leaves an odd one
 * to the slow path, and after its compare-and-swap loads claimed, then the
 * sequence word: a changed sequence word takes the admission back and
 * starts again; an unchanged one means total did not move, and claimed is
 * judged as today.
 * Capacity mutants (-D, with -DCAPACITY), each must be refuted:
 *   MUTANT_TODAY          today's lib/space.c: no sequence word, the
 *                         re-check after the swap loads claimed only, and
 *                         shrink lowers readonly (claimed) before total
 *   MUTANT_TOTAL_RECHECK  no sequence word; after the swap claimed, then
 *                         total are loaded again and judged (shrink lowers
 *                         total first): the two loads are not a snapshot
 *   MUTANT_CACHE_TODAY    today's charge_far_from_full() (lib/cache.c): no
 *                         sequence word, total loaded before claimed, and
 *                         the fit judged again after the swap on total and
 *                         claimed loaded again, in that order
 *   MUTANT_SEQ_NOT_RECHECKED  the sequence word is not loaded again after
 *                         the swap (an odd one still sends the caller to
 *                         the slow path)
 *   MUTANT_SEQ_ODD_IGNORED    an odd sequence word does not stop admission
 * MUTANT_SHRINK_CLAIMED_FIRST makes shrink lower claimed before total (as
 * today); with the sequence word the order does not matter, and run.sh runs
 * the fixed protocol with it as a model that must pass.
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

#ifndef CAPOPS
#define CAPOPS 2
#endif
#ifndef MAXTOTAL
#define MAXTOTAL 4	/* grow() is refused above it (a model bound) */
#endif
#ifndef BASE
#define BASE 0		/* bytes of may_use held from the start by a caller
			 * that does nothing else (CAPACITY) */
#endif

#define W 64
#define WRAPPED 48
#define EINVAL 22

#ifdef CAPACITY
#define NSLOTS 7	/* init, NPROC <= 4 callers, the capacity process */
#ifdef XADD_UNDO
#error "CAPACITY models the compare-and-swap release only"
#endif
#else
#define NSLOTS 5
#endif

int word = BASE;	/* s->may_use */
int claimed = 0;	/* s->claimed */
int held = BASE;	/* ghost: bytes of may_use the callers hold */
int accepted_over = 0;	/* ghost: over-releases the pool accepted */
int moving = 0;		/* ghost: in claimed, not yet out of may_use */
int pending = 0;	/* ghost: subtracted, not yet judged (XADD_UNDO) */
int tentative = 0;	/* ghost: admitted in the word, not yet confirmed */
int inrel[NSLOTS];	/* ghost: a lawful release in progress, its bytes */
bool must[NSLOTS];	/* ghost: an admission counted on that release */
bool nowait[NSLOTS];	/* ghost: the caller is in a NOWAIT entry point */
byte done = 0;

#ifdef CAPACITY
int total = TOTAL;	/* s->counters[SRSV__TOTAL] */
int readonly = 0;	/* s->counters[SRSV__READONLY] (part of claimed) */
int unusable = 0;	/* s->counters[SRSV__ZONE_UNUSABLE] (part of claimed) */
byte seq = 0;		/* the capacity sequence word (the fix; odd while a
			 * change of total runs) */
byte lock = 0;		/* s->lock: the holder's _pid, 0 when free */
int leaving = 0;	/* ghost: readonly bytes a shrink took out of total,
			 * still in claimed */
int lagging = 0;	/* ghost: readonly bytes a shrink took out of
			 * claimed, total not yet lowered */
int outgoing = 0;	/* ghost: bytes a group removal charged and took out
			 * of total, not yet out of the word */
int arriving = 0;	/* ghost: a new zone's unwritable byte, in claimed
			 * before the zone is in total */
#define CAP (total - lagging)	/* the pool's real total */
#define LOCK atomic { lock == 0 -> lock = _pid }
#define UNLOCK lock = 0
#if defined(MUTANT_TODAY) || defined(MUTANT_TOTAL_RECHECK) || \
    defined(MUTANT_CACHE_TODAY)
#define SEQ_BUMP skip	/* no sequence word */
#else
#define SEQ_BUMP seq = seq + 1
#endif
#ifdef MUTANT_TODAY
#define MUTANT_SHRINK_CLAIMED_FIRST
#endif
#else
#define CAP TOTAL
#define leaving 0
#define outgoing 0
#define arriving 0
#endif

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
#define USAGE (held - accepted_over - outgoing + claimed - moving - leaving - \
	       arriving)

/* An admission of @b takes effect (checked against the real total). */
#define ADMITTED(b) \
	assert(USAGE + b <= CAP || USAGE - inrel_sum() + b <= CAP); \
	if \
	:: USAGE + b > CAP -> mark_inrel() \
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
#ifdef CAPACITY
	LOCK;
#endif
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
#ifdef CAPACITY
	UNLOCK;
	if
	:: ret == 0 -> LOCK; claimed = claimed - b; UNLOCK
	:: else
	fi
#else
	if				/* srsv_space_free_reserved(), transition() */
	:: ret == 0 -> atomic { claimed = claimed - b }
	:: else
	fi
#endif
}

#ifdef CAPACITY
/* srsv__space_take_back: claimed_still_fits() 309, srsv__may_use_sub_clamped()
 * (no over-release in these runs: exact) */
#define TAKE_BACK(b) \
	d_step { \
		assert(word >= b); \
		word = word - b; \
		tentative = tentative - b; \
		INVARIANT \
	}

/* The decision after a successful swap, on values the process loaded:
 * today's claimed_still_fits() (now == claimed, or a fit). */
#define CONFIRM(cond) \
	if \
	:: cond -> tentative = tentative - b; ADMITTED(b); ok = true \
	:: else -> ok = false \
	fi

/*
 * srsv__space_try_charge() with capacity changes, mode NO_FLUSH (data:
 * no overcommit).  Default: the fixed protocol.
 *
 *   1  g = seq (acquire); odd: a change of total runs, answer "no" (the
 *      caller's slow path takes the pool lock, under which seq is even)
 *   2  mu = may_use; cl = claimed; tt = total (acquire loads, in order)
 *   3  no fit: answer "no"
 *   4  CAS may_use mu -> mu + b; on a miss mu = what it found, back to 2
 *   5  cl2 = claimed, then g2 = seq (acquire loads, in order)
 *   6  g2 == g: total did not move since 1; admitted if cl2 == cl or the
 *      bytes fit (mu, cl2, tt); else take back, mu = may_use, back to 2
 *      g2 != g: take back, back to 1
 */
inline try_charge_cap(b, ok, mu, seen, cl)
{
	do
	:: true ->
		restart = false;
#if !defined(MUTANT_TODAY) && !defined(MUTANT_TOTAL_RECHECK) && \
    !defined(MUTANT_CACHE_TODAY)
		g = seq;					/* 1 */
#ifndef MUTANT_SEQ_ODD_IGNORED
		if
		:: g % 2 == 1 -> ok = false; break
		:: else
		fi;
#endif
#endif
		mu = word;					/* 2 */
		do
		:: true ->
#ifdef MUTANT_CACHE_TODAY
			tt = total;	/* far_from_full(): total, then claimed */
			cl = claimed;
#else
			cl = claimed;	/* 321, then fits() 270 */
			tt = total;
#endif
			if					/* 3 */
			:: cl + mu + b > tt -> ok = false; break
			:: else
			fi;
			d_step {				/* 4 */
				seen = word;
				if
				:: seen == mu ->
					word = (word + b) % W;
					tentative = tentative + b
				:: else
				fi;
				INVARIANT
			}
			if
			:: seen == mu ->
#if defined(MUTANT_TODAY)
				/* claimed_still_fits() 303-304: claimed
				 * unchanged stands; else fits() loads total */
				d_step {
					cl2 = claimed;
					CONFIRM(cl2 == cl)
				}
				if
				:: !ok ->
					d_step {
						tt2 = total;
						CONFIRM(cl2 + mu + b <= tt2)
					}
				:: else
				fi;
#elif defined(MUTANT_TOTAL_RECHECK)
				cl2 = claimed;
				d_step {
					tt2 = total;
					CONFIRM((cl2 == cl && tt2 == tt) ||
						cl2 + mu + b <= tt2)
				}
#elif defined(MUTANT_CACHE_TODAY)
				tt2 = total;	/* charge_far_from_full() 326 */
				d_step {
					cl2 = claimed;
					CONFIRM(cl2 + mu + b <= tt2)
				}
#elif defined(MUTANT_SEQ_NOT_RECHECKED)
				d_step {
					cl2 = claimed;
					CONFIRM(cl2 == cl || cl2 + mu + b <= tt)
				}
#else
				cl2 = claimed;			/* 5 */
				d_step {
					g2 = seq;		/* 6 */
					CONFIRM(g2 == g &&
						(cl2 == cl || cl2 + mu + b <= tt))
				}
#endif
				if
				:: ok -> break
				:: else ->
					TAKE_BACK(b);
#if !defined(MUTANT_TODAY) && !defined(MUTANT_TOTAL_RECHECK) && \
    !defined(MUTANT_CACHE_TODAY) && !defined(MUTANT_SEQ_NOT_RECHECKED)
					if
					:: g2 != g -> restart = true; break
					:: else
					fi;
#endif
					mu = word
				fi
			:: else -> mu = seen
			fi
		od;
		if
		:: restart
		:: else -> break
		fi
	od
}

/* A caller's admission: the capacity-aware one under CAPACITY. */
#define TRY_CHARGE try_charge_cap

/*
 * The capacity changes, each called with the pool lock held.  x is 1 or 2
 * bytes; a change that is refused (-EINVAL, -ENOSPC) changes nothing.
 * Every change of total is bracketed by SEQ_BUMP (the fix).
 */

/* srsv_space_set_readonly(s, x, false), 625-642: charge x through the
 * word, readonly (and claimed) += x, then may_use -= x (no over-release
 * in CAPACITY runs: the compare-and-swap loop's one successful step). */
inline set_readonly(x, ok, old, seen, cl)
{
	try_charge_cap(x, ok, old, seen, cl);
	if
	:: ok ->
		d_step {					/* 638 */
			claimed = claimed + x;
			readonly = readonly + x;
			moving = moving + x
		};
		d_step {					/* 639 */
			assert(word >= x);
			word = word - x;
			held = held - x;
			moving = moving - x;
			INVARIANT
		}
	:: else
	fi
}

/* srsv_space_clear_readonly(), transition() 486-487: readonly (and
 * claimed) -= x. */
inline clear_readonly(x)
{
	if
	:: readonly < x -> skip				/* -EINVAL */
	:: else -> d_step { claimed = claimed - x; readonly = readonly - x }
	fi
}

/* srsv_space_grow(), 578-583: total += x. */
inline grow(x)
{
	if
	:: total + x > MAXTOTAL -> skip			/* model bound */
	:: else -> SEQ_BUMP; total = total + x; SEQ_BUMP
	fi
}

/* srsv_space_shrink(), 602-608: readonly -= x and total -= x.  Today
 * (MUTANT_SHRINK_CLAIMED_FIRST) readonly, hence claimed, first. */
inline shrink(x)
{
	if
	:: readonly < x || total < x -> skip		/* -EINVAL */
	:: else ->
		SEQ_BUMP;
#ifdef MUTANT_SHRINK_CLAIMED_FIRST
		d_step {					/* 606 */
			claimed = claimed - x;
			readonly = readonly - x;
			lagging = x
		};
		d_step { total = total - x; lagging = 0 };	/* 607 */
#else
		d_step { total = total - x; leaving = x };
		d_step {
			claimed = claimed - x;
			readonly = readonly - x;
			leaving = 0
		};
#endif
		SEQ_BUMP
	fi
}

/* give_back() (lib/bgroup.c 789-815) of a group with no readonly bytes:
 * charge x through the word (NO_OVERCOMMIT), total -= x, may_use -= x. */
inline remove_group(x, ok, old, seen, cl)
{
	try_charge_cap(x, ok, old, seen, cl);
	if
	:: ok ->
		SEQ_BUMP;
		d_step { total = total - x; outgoing = outgoing + x };	/* 806 */
		SEQ_BUMP;
		d_step {					/* 810 */
			assert(word >= x);
			word = word - x;
			held = held - x;
			outgoing = outgoing - x;
			INVARIANT
		}
	:: else
	fi
}

/* A zone group of 2 bytes, 1 writable (pool_grow(), lib/bgroup.c
 * 421-431): zone_unusable (claimed) += 1, then total += 2. */
inline add_zone()
{
	if
	:: total + 2 > MAXTOTAL -> skip			/* model bound */
	:: else ->
		SEQ_BUMP;
		d_step {					/* 424 */
			claimed = claimed + 1;
			unusable = unusable + 1;
			arriving = 1
		};
		d_step { total = total + 2; arriving = 0 };	/* 428 */
		SEQ_BUMP
	fi
}

/* CAPOPS capacity changes, each chosen among the six, of 1 or 2 bytes. */
proctype capacity()
{
	int x, old, seen, cl, tt, cl2, tt2;
	byte g, g2;
	bool ok, restart;
	byte r = 0;

	do
	:: r == CAPOPS -> break
	:: r < CAPOPS ->
		if
		:: x = 1
		:: x = 2
		fi;
		LOCK;
		if
		:: true -> set_readonly(x, ok, old, seen, cl)
		:: true -> clear_readonly(x)
		:: true -> grow(x)
		:: true -> shrink(x)
		:: true -> remove_group(x, ok, old, seen, cl)
		:: x == 2 -> add_zone()
		fi;
		UNLOCK;
progress_cap:	r++
	od;
	atomic { done++ }
}
#else
#define TRY_CHARGE try_charge
#endif

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
#ifdef CAPACITY
	int tt, cl2, tt2;
	byte g, g2;
	bool restart;
#endif
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
			TRY_CHARGE(b, ok, old, seen, cl);
			if
			:: ok -> may_use_sub(b, true, old, seen, ret)
			:: else
			fi;
			nowait[_pid] = false
		:: true ->
			TRY_CHARGE(b, ok, old, seen, cl);
			if
			:: ok -> alloc(b, old, seen, ret)
			:: else
			fi
#ifdef WITH_ADD
		:: true ->
			may_use_add(b, old, seen);
			may_use_sub(b, true, old, seen, ret)
#endif
#ifndef CAPACITY
		:: true ->
			may_use_sub(b, false, old, seen, ret)
#endif
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
#ifdef CAPACITY
		run capacity()
#endif
	}
#ifdef CAPACITY
	done == NPROC + 1;
	/* Quiescence: what is left in claimed is readonly and unusable. */
	assert(pending == 0 && moving == 0 && claimed == readonly + unusable);
	assert(leaving == 0 && lagging == 0 && outgoing == 0);
	assert(USAGE <= CAP);
#else
	done == NPROC;
	/* Quiescence: nothing pending, nothing lost or invented. */
	assert(pending == 0 && moving == 0 && claimed == 0);
#endif
	assert(word == held - accepted_over)
}
