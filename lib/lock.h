/* SPDX-License-Identifier: MIT */
/*
 * Library locks.  Every mutex the library takes goes through these wrappers
 * so that (1) helpers can assert the lock they need is held (btrfs's
 * lockdep_assert_held), and (2) a debug build (-Ddebug_locks=true) can count,
 * per thread, every acquisition, every acquisition that may sleep and every
 * condition wait: the tests of the NOWAIT contract assert these stay zero.
 */
#ifndef SRSV_LOCK_H
#define SRSV_LOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <atomic_ops.h>

#include "config.h"

struct srsv__lock {
	pthread_mutex_t mutex;
	/* Token of the owning thread, for assertions only (0: unowned). */
	volatile AO_t owner;
};

/* The spin-wait hint: a pause that yields the core to its hyperthread. */
static inline void srsv__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/* A per-thread token that is never 0. */
AO_t srsv__thread_token(void);

int srsv__lock_init(struct srsv__lock *l);
void srsv__lock_destroy(struct srsv__lock *l);
/* May sleep: counted as a blocking acquisition. */
void srsv__lock(struct srsv__lock *l);
/*
 * Never sleeps: true when the lock was taken.  A busy lock is tried again
 * a bounded number of times (SRSV__TRYLOCK_SPINS) with a CPU pause in
 * between, the userspace form of the spinlocks btrfs takes on these paths
 * under NOWAIT: the library's critical sections are a few instructions,
 * so a holder running on another CPU is gone within the spin, while one
 * that was preempted costs a bounded wait, then the NOWAIT answer.
 */
bool srsv__trylock(struct srsv__lock *l);
/* The same bounded spin on a bare mutex (rsv locks). */
bool srsv__mutex_trylock_spin(pthread_mutex_t *m);
void srsv__unlock(struct srsv__lock *l);
/*
 * Wait on @cond, releasing @l meanwhile.  @deadline NULL waits for ever.
 * Returns 0 or ETIMEDOUT (positive, pthread style).  @cond must use
 * CLOCK_MONOTONIC (srsv__cond_init).
 */
int srsv__cond_wait(struct srsv__lock *l, pthread_cond_t *cond,
		    const struct timespec *deadline);
int srsv__cond_init(pthread_cond_t *cond);

static inline bool srsv__lock_held(struct srsv__lock *l)
{
	return AO_load(&l->owner) == srsv__thread_token();
}

#ifndef NDEBUG
#include <assert.h>
#define srsv__assert_held(l) assert(srsv__lock_held(l))
#else
#define srsv__assert_held(l) ((void)(l))
#endif

/* Count an acquisition of a lock that is not a struct srsv__lock (the
 * public rsv's mutex); srsv__lock_note_busy() a failed try-lock. */
void srsv__lock_note(bool blocking);
void srsv__lock_note_busy(void);

/* Monotonic clock in nanoseconds. */
uint64_t srsv__now_ns(void);
/* Absolute CLOCK_MONOTONIC deadline @ns from now (saturating). */
void srsv__deadline(struct timespec *ts, uint64_t ns);

/*
 * A library thread: named @name (pthread_setname_np, at most 15
 * characters), started with every signal blocked, and running @hook (the
 * config's thread_start, may be NULL) in the new thread before @fn.  The
 * struct must stay alive until the thread has started @fn.
 */
struct srsv__thread {
	const char *name;
	void *(*fn)(void *);
	void *arg;
	void (*hook)(const char *name, void *user);
	void *user;
};
/* 0, or -EAGAIN when the thread could not be created. */
int srsv__thread_create(pthread_t *th, struct srsv__thread *start);

/*
 * fork(): bumped in the child of every fork() after srsv__fork_init() (the
 * first ctx creation).  A ctx whose generation differs is its parent's:
 * its threads do not exist here and its locks may be held for ever.
 */
extern volatile AO_t srsv__fork_gen;
void srsv__fork_init(void);

/* Marks the calling thread as running a flush callback (re-entrancy). */
void srsv__enter_callback(void);
void srsv__leave_callback(void);
bool srsv__in_callback(void);

#endif /* SRSV_LOCK_H */
