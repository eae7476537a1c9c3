/* SPDX-License-Identifier: MIT */
/*
 * Models the benchmarks share: the device (one FIFO queue whose schedule
 * is booked at submission) and RocksDB's WriteController (a delayed write
 * rate adapted by SetupDelay()'s steps, and a stop).  bench/stall.c and
 * bench/logstore.c put the same peer policy in front of their engines
 * with it.  Header-only, like bench_util.h.
 */
#ifndef SRSV_BENCH_MODEL_H
#define SRSV_BENCH_MODEL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "bench_util.h"

/* ---- the device ---- */

/*
 * One queue, requests served in submission order.  The schedule is
 * computed when a request is submitted (start = max(now, end of the
 * previous request)), so the device's rate is exact whatever the threads'
 * wake-up delays: on a shared machine only completions can be late, never
 * the device's work, and a bench measures the model, not the scheduler.
 * The caller serialises bookings (its own lock).
 */
struct dev_clock {
	uint64_t busy_until;	/* scheduled end of the last request */
	uint64_t busy_ns;	/* sum of request costs */
};

/* Book @cost_ns of device time; returns when it ends (caller's lock). */
static inline uint64_t dev_clock_book(struct dev_clock *d, uint64_t cost_ns)
{
	uint64_t now = now_ns();
	uint64_t start = d->busy_until > now ? d->busy_until : now;

	d->busy_until = start + cost_ns;
	d->busy_ns += cost_ns;
	return d->busy_until;
}

/* ---- RocksDB's WriteController ---- */

/*
 * RocksDB's WriteController (db/write_controller.cc) and the part of
 * ColumnFamilyData::RecalculateWriteStallConditions() / SetupDelay()
 * (db/column_family.cc) that sets it, under one mutex (the DB mutex).
 * The debt is whatever the bench's engine must work off (bench_stall: the
 * pool's reclaimable bytes; bench_logstore: dead bytes, the cleaning
 * debt, as RocksDB's pending compaction bytes).
 */
struct write_controller {
	pthread_mutex_t mu;
	pthread_cond_t bg_cv;		/* the stop condition ended */
	bool delayed, stopped, was_stopped;
	uint64_t rate, max_rate;	/* delayed_write_rate, data B/s */
	uint64_t credit;		/* credit_in_bytes_ */
	uint64_t next_refill_us;	/* next_refill_time_ */
	uint64_t prev_debt;
	uint64_t delays, stops, rate_min;	/* statistics */
};

/* SetupDelay()'s factors and floor (db/column_family.cc). */
#define WC_INC_SLOWDOWN 0.8		/* debt did not shrink */
#define WC_DEC_SLOWDOWN (1 / 0.8)	/* debt shrank */
#define WC_NEAR_STOP_SLOWDOWN 0.6	/* stopped, or near the stop */
#define WC_DELAY_RECOVER 1.4		/* the delay condition ended */
#define WC_MIN_RATE (16 * 1024)
#define WC_REFILL_US 1000		/* kMicrosPerRefill */
#define WC_DELAY_INTERVAL_US 1001	/* DelayWrite()'s sleep slice */

/* delayed_write_rate: the rate a delay starts from and never exceeds. */
static inline void wc_init(struct write_controller *wc, uint64_t max_rate)
{
	pthread_mutex_init(&wc->mu, NULL);
	pthread_cond_init(&wc->bg_cv, NULL);
	wc->max_rate = max_rate;
	wc->rate = max_rate;
}

static inline void wc_destroy(struct write_controller *wc)
{
	pthread_mutex_destroy(&wc->mu);
	pthread_cond_destroy(&wc->bg_cv);
}

/* GetDelayToken(): a new token resets the bucket. */
static inline void wc_delay_token(struct write_controller *wc, uint64_t rate)
{
	wc->rate = rate < 1 ? 1 : rate > wc->max_rate ? wc->max_rate : rate;
	if (wc->rate < wc->rate_min || !wc->rate_min)
		wc->rate_min = wc->rate;
	wc->delayed = true;
	wc->credit = 0;
	wc->next_refill_us = 0;
}

/*
 * RecalculateWriteStallConditions() for one cause, @debt against the
 * @soft limit (delay from here) and the @stop limit: at or above @stop
 * writes stop; at or above @soft they are delayed at a rate SetupDelay()
 * adapts (x0.6 when stopped or near the stop, x0.8 while the debt does
 * not shrink, x1.25 while it does, never above delayed_write_rate);
 * below, a delay that ends raises the rate by 1.4.  RocksDB recalculates
 * when a flush or compaction installs a new version; the benches call it
 * every few milliseconds.
 */
static inline void wc_recalc(struct write_controller *wc, uint64_t debt,
			     uint64_t soft, uint64_t stop)
{
	uint64_t near_stop = soft + (stop - soft) * 4 / 5;

	pthread_mutex_lock(&wc->mu);
	if (debt >= stop) {
		if (!wc->stopped)
			wc->stops++;
		wc->stopped = true;
	} else if (debt >= soft) {
		double rate = (double)wc->rate;

		if (wc->delayed && wc->max_rate > WC_MIN_RATE) {
			if (wc->was_stopped || debt >= near_stop)
				rate *= WC_NEAR_STOP_SLOWDOWN;
			else if (wc->prev_debt && wc->prev_debt <= debt)
				rate *= WC_INC_SLOWDOWN;
			else if (wc->prev_debt > debt)
				rate *= WC_DEC_SLOWDOWN;
			if (rate < WC_MIN_RATE)
				rate = WC_MIN_RATE;
		} else {
			wc->delays++;
		}
		wc_delay_token(wc, (uint64_t)rate);
		wc->stopped = false;
	} else {
		if (wc->delayed) {
			double rate = (double)wc->rate * WC_DELAY_RECOVER;

			wc->rate = rate > (double)wc->max_rate ? wc->max_rate :
				   (uint64_t)rate;
		}
		wc->delayed = false;
		wc->stopped = false;
	}
	wc->was_stopped = wc->stopped;
	wc->prev_debt = debt;
	if (!wc->stopped)
		pthread_cond_broadcast(&wc->bg_cv);
	pthread_mutex_unlock(&wc->mu);
}

/* WriteController::GetDelay(), in microseconds; wc->mu held. */
static inline uint64_t wc_get_delay(struct write_controller *wc, uint64_t bytes)
{
	uint64_t now_us, over, needed;

	if (wc->stopped || !wc->delayed)
		return 0;
	if (wc->credit >= bytes) {
		wc->credit -= bytes;
		return 0;
	}
	now_us = now_ns() / 1000;
	if (!wc->next_refill_us)
		wc->next_refill_us = now_us;
	if (wc->next_refill_us <= now_us) {
		uint64_t elapsed = now_us - wc->next_refill_us + WC_REFILL_US;

		wc->credit += (uint64_t)((double)elapsed / 1e6 *
					 (double)wc->rate + 0.999999);
		wc->next_refill_us = now_us + WC_REFILL_US;
		if (wc->credit >= bytes) {
			wc->credit -= bytes;
			return 0;
		}
	}
	over = bytes - wc->credit;
	needed = (uint64_t)((double)over / (double)wc->rate * 1e6);
	wc->credit = 0;
	wc->next_refill_us += needed;
	return wc->next_refill_us - now_us > WC_REFILL_US ?
	       wc->next_refill_us - now_us : WC_REFILL_US;
}

/*
 * DBImpl::DelayWrite(): take the delay under the DB mutex, sleep it in
 * 1 ms slices while the delay condition lasts, then wait while writes are
 * stopped (or until @stop is set: the run ended).  RocksDB charges the
 * previous write group's size; we charge this write's (one write per
 * group here).  Returns the time waited.
 */
static inline uint64_t wc_before_write(struct write_controller *wc,
				       uint64_t bytes, atomic_bool *stop)
{
	uint64_t t0 = now_ns(), delay, end;

	pthread_mutex_lock(&wc->mu);
	delay = wc_get_delay(wc, bytes);
	if (delay) {
		end = t0 + delay * 1000;
		pthread_mutex_unlock(&wc->mu);
		while (now_ns() < end && !atomic_load(stop)) {
			pthread_mutex_lock(&wc->mu);
			if (!wc->delayed) {
				pthread_mutex_unlock(&wc->mu);
				break;
			}
			pthread_mutex_unlock(&wc->mu);
			sleep_until(now_ns() + WC_DELAY_INTERVAL_US * 1000);
		}
		pthread_mutex_lock(&wc->mu);
	}
	while (wc->stopped && !atomic_load(stop))
		pthread_cond_wait(&wc->bg_cv, &wc->mu);
	pthread_mutex_unlock(&wc->mu);
	return now_ns() - t0;
}

/* The run ended: nobody stays stopped. */
static inline void wc_release(struct write_controller *wc)
{
	pthread_mutex_lock(&wc->mu);
	wc->stopped = false;
	pthread_cond_broadcast(&wc->bg_cv);
	pthread_mutex_unlock(&wc->mu);
}

#endif /* SRSV_BENCH_MODEL_H */
