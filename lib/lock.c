/* SPDX-License-Identifier: MIT */
/*
 * Lock wrappers, clocks and per-thread state.
 *
 * Every library mutex goes through srsv__lock()/srsv__trylock() so that the
 * helpers can assert the lock they need is held, and so that a build with
 * -Ddebug_locks=true can prove the NOWAIT contract: a NOWAIT call must show
 * zero blocking acquisitions and zero waits in the calling thread's
 * counters (include/libspacersv/debug.h).
 *
 * Layer: the bottom, beside util.h: it knows no library structure.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include <libspacersv/spacersv.h>

#include "lock.h"
#include "util.h"

static __thread AO_t thread_token;
static volatile AO_t next_token = 1;
static __thread unsigned callback_depth;

#if SRSV_DEBUG_LOCKS
static __thread struct srsv_lock_stats lock_stats;
#define STAT_INC(field) (lock_stats.field++)
#else
#define STAT_INC(field) do { } while (0)
#endif

AO_t srsv__thread_token(void)
{
	if (!thread_token)
		thread_token = AO_fetch_and_add1(&next_token);
	return thread_token;
}

int srsv__lock_init(struct srsv__lock *l)
{
	int ret = pthread_mutex_init(&l->mutex, NULL);

	AO_store(&l->owner, 0);
	return -ret;
}

void srsv__lock_destroy(struct srsv__lock *l)
{
	pthread_mutex_destroy(&l->mutex);
}

void srsv__lock(struct srsv__lock *l)
{
	pthread_mutex_lock(&l->mutex);
	AO_store(&l->owner, srsv__thread_token());
	STAT_INC(acquisitions);
	STAT_INC(blocking_acquisitions);
}

/*
 * How often a busy lock is tried before a NOWAIT caller gives up (see
 * lock.h).  Measured on 2 vCPUs with two NOWAIT writers of one tenant
 * (docs/results-nowait.md): without it about half their delalloc calls
 * failed on each other's quota and rsv locks.
 */
#ifndef SRSV__TRYLOCK_SPINS
#define SRSV__TRYLOCK_SPINS 64
#endif

bool srsv__mutex_trylock_spin(pthread_mutex_t *m)
{
	for (unsigned i = 0; i < SRSV__TRYLOCK_SPINS; i++) {
		if (pthread_mutex_trylock(m) == 0)
			return true;
		srsv__cpu_relax();
	}
	return pthread_mutex_trylock(m) == 0;
}

bool srsv__trylock(struct srsv__lock *l)
{
	if (!srsv__mutex_trylock_spin(&l->mutex)) {
		STAT_INC(trylock_failures);
		return false;
	}
	AO_store(&l->owner, srsv__thread_token());
	STAT_INC(acquisitions);
	return true;
}

void srsv__unlock(struct srsv__lock *l)
{
	AO_store(&l->owner, 0);
	pthread_mutex_unlock(&l->mutex);
}

int srsv__cond_init(pthread_cond_t *cond)
{
	pthread_condattr_t attr;
	int ret;

	ret = pthread_condattr_init(&attr);
	if (ret)
		return -ret;
	ret = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	if (!ret)
		ret = pthread_cond_init(cond, &attr);
	pthread_condattr_destroy(&attr);
	return -ret;
}

int srsv__cond_wait(struct srsv__lock *l, pthread_cond_t *cond,
		    const struct timespec *deadline)
{
	int ret;

	srsv__assert_held(l);
	STAT_INC(waits);
	AO_store(&l->owner, 0);
	if (deadline)
		ret = pthread_cond_timedwait(cond, &l->mutex, deadline);
	else
		ret = pthread_cond_wait(cond, &l->mutex);
	AO_store(&l->owner, srsv__thread_token());
	return ret == ETIMEDOUT ? ETIMEDOUT : 0;
}

uint64_t srsv__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void srsv__deadline(struct timespec *ts, uint64_t ns)
{
	uint64_t now = srsv__now_ns();
	/* Saturate far in the future rather than wrap: 100 years is "never". */
	const uint64_t cap = 100ull * 365 * 24 * 3600 * 1000000000ull;
	uint64_t at = ns > cap ? now + cap : now + ns;

	ts->tv_sec = (time_t)(at / 1000000000ull);
	ts->tv_nsec = (long)(at % 1000000000ull);
}

void srsv__lock_note(bool blocking)
{
	STAT_INC(acquisitions);
	if (blocking)
		STAT_INC(blocking_acquisitions);
}

void srsv__lock_note_busy(void)
{
	STAT_INC(trylock_failures);
}

void srsv__enter_callback(void)
{
	callback_depth++;
}

void srsv__leave_callback(void)
{
	callback_depth--;
}

bool srsv__in_callback(void)
{
	return callback_depth != 0;
}

SRSV__EXPORT int srsv_debug_lock_stats_sized(struct srsv_lock_stats *stats,
					     size_t size)
{
#if SRSV_DEBUG_LOCKS
	struct srsv_lock_stats all;

	if (!stats || size < SRSV__OUT_MIN(struct srsv_lock_stats, waits))
		return -EINVAL;
	all = lock_stats;
	SRSV__OUT_COPY(stats, all, size, size);
	return 0;
#else
	(void)stats; (void)size;
	return -ENOTSUP;
#endif
}

SRSV__EXPORT int srsv_debug_lock_stats_reset(void)
{
#if SRSV_DEBUG_LOCKS
	memset(&lock_stats, 0, sizeof(lock_stats));
	return 0;
#else
	return -ENOTSUP;
#endif
}

static void *thread_main(void *arg)
{
	struct srsv__thread *start = arg;

	/* Best effort: a name is for humans (top -H, gdb, perf). */
	pthread_setname_np(pthread_self(), start->name);
	if (start->hook)
		start->hook(start->name, start->user);
	return start->fn(start->arg);
}

int srsv__thread_create(pthread_t *th, struct srsv__thread *start)
{
	sigset_t all, old;
	int ret;

	/*
	 * Signals are the application's: a library thread must not be the
	 * one the kernel picks for a process-directed signal.  The new thread
	 * inherits the mask; the hook may open what it wants.
	 */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(th, NULL, thread_main, start);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret ? -EAGAIN : 0;
}

volatile AO_t srsv__fork_gen;

static void fork_child(void)
{
	AO_fetch_and_add1(&srsv__fork_gen);
}

static void fork_register(void)
{
	pthread_atfork(NULL, NULL, fork_child);
}

void srsv__fork_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, fork_register);
}
