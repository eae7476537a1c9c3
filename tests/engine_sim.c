/* SPDX-License-Identifier: MIT */
/*
 * engine_sim: the scriptable storage engine of the tests (see engine_sim.h).
 *
 * The flush callback logs the call under the simulator's mutex, copies the
 * matching actions out, drops the mutex and only then performs them: an
 * action may sleep or call back into the library, and holding our mutex
 * across that would serialise concurrent workers (hiding races the tests
 * want to see) or invert lock order with the library.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine_sim.h"

/* Default size of the SYSTEM pool made by esim_setup(): big enough that no
 * test runs into it, small enough to be obviously separate in dumps. */
#define ESIM_SYSTEM_BYTES (4 * ESIM_MIB)

/* Polling period of the esim_wait_*() helpers: short enough not to slow
 * tests, long enough not to burn one of the machine's two cores. */
#define ESIM_POLL_MS 1

static void die(const char *what, int err)
{
	fprintf(stderr, "engine_sim: %s: %s\n", what, strerror(err < 0 ? -err
								    : err));
	abort();
}

struct esim *esim_new(void)
{
	struct esim *sim = calloc(1, sizeof(*sim));
	int ret;

	if (!sim)
		die("calloc", ENOMEM);
	ret = pthread_mutex_init(&sim->lock, NULL);
	if (ret)
		die("pthread_mutex_init", ret);
	sim->reenter.noflush_last = 1;	/* "never called" */
	sim->reenter.flush_last = 1;
	return sim;
}

void esim_config_init(struct esim *sim, struct srsv_config *cfg,
		      unsigned flags)
{
	int ret = srsv_config_init(cfg);

	if (ret)
		die("srsv_config_init", ret);
	cfg->flush = esim_flush;
	cfg->user = sim;
	cfg->flags = flags;
}

int esim_ctx_create(struct esim *sim, const struct srsv_config *cfg)
{
	struct srsv_config copy = *cfg;

	copy.flush = esim_flush;
	copy.user = sim;
	return srsv_ctx_create(&copy, &sim->ctx);
}

struct esim *esim_setup(unsigned flags, uint64_t data_bytes,
			uint64_t meta_bytes, uint64_t unallocated)
{
	struct esim *sim = esim_new();
	struct srsv_config cfg;
	int ret;

	esim_config_init(sim, &cfg, flags);
	cfg.pool_bytes[SRSV_POOL_DATA] = data_bytes;
	cfg.pool_bytes[SRSV_POOL_METADATA] = meta_bytes;
	cfg.pool_bytes[SRSV_POOL_SYSTEM] = ESIM_SYSTEM_BYTES;
	cfg.unallocated_bytes = unallocated;
	ret = esim_ctx_create(sim, &cfg);
	if (ret)
		die("srsv_ctx_create", ret);
	return sim;
}

void esim_free(struct esim *sim)
{
	if (!sim)
		return;
	srsv_ctx_destroy(sim->ctx);
	pthread_mutex_destroy(&sim->lock);
	free(sim);
}

struct srsv_space *esim_space(struct esim *sim, enum srsv_pool kind)
{
	return srsv_ctx_space(sim->ctx, kind);
}

int esim_add(struct esim *sim, const struct esim_action *a)
{
	int idx = -ENOSPC;

	pthread_mutex_lock(&sim->lock);
	if (sim->nr_actions < ESIM_MAX_ACTIONS) {
		idx = (int)sim->nr_actions++;
		sim->actions[idx] = *a;
		sim->fired[idx] = 0;
	}
	pthread_mutex_unlock(&sim->lock);
	return idx;
}

int esim_on(struct esim *sim, enum srsv_flush_state state, enum esim_op op,
	    uint64_t arg)
{
	struct esim_action a = {
		.state = state, .pool = ESIM_ANY, .preempt = -1,
		.op = op, .arg = arg,
	};

	return esim_add(sim, &a);
}

int esim_on_error(struct esim *sim, enum srsv_flush_state state, int error)
{
	struct esim_action a = {
		.state = state, .pool = ESIM_ANY, .preempt = -1,
		.op = ESIM_RETURN, .error = error,
	};

	return esim_add(sim, &a);
}

void esim_clear_actions(struct esim *sim)
{
	pthread_mutex_lock(&sim->lock);
	sim->nr_actions = 0;
	pthread_mutex_unlock(&sim->lock);
}

unsigned esim_fired(struct esim *sim, int idx)
{
	unsigned n = 0;

	pthread_mutex_lock(&sim->lock);
	if (idx >= 0 && (unsigned)idx < sim->nr_actions)
		n = sim->fired[idx];
	pthread_mutex_unlock(&sim->lock);
	return n;
}

void esim_freeze(struct esim *sim, bool frozen)
{
	pthread_mutex_lock(&sim->lock);
	sim->frozen = frozen;
	pthread_mutex_unlock(&sim->lock);
}

unsigned esim_inside(struct esim *sim)
{
	unsigned n;

	pthread_mutex_lock(&sim->lock);
	n = sim->inside;
	pthread_mutex_unlock(&sim->lock);
	return n;
}

void esim_set_unsupported(struct esim *sim, enum srsv_flush_state state,
			  bool unsupported)
{
	pthread_mutex_lock(&sim->lock);
	if (unsupported)
		sim->unsupported |= UINT32_C(1) << state;
	else
		sim->unsupported &= ~(UINT32_C(1) << state);
	pthread_mutex_unlock(&sim->lock);
}

void esim_hold(struct esim *sim, enum srsv_pool kind, uint64_t bytes)
{
	pthread_mutex_lock(&sim->lock);
	sim->held[kind] += bytes;
	pthread_mutex_unlock(&sim->lock);
}

uint64_t esim_held(struct esim *sim, enum srsv_pool kind)
{
	uint64_t v;

	pthread_mutex_lock(&sim->lock);
	v = sim->held[kind];
	pthread_mutex_unlock(&sim->lock);
	return v;
}

/* ---- the callback ---- */

static void note_error(struct esim *sim, int err)
{
	pthread_mutex_lock(&sim->lock);
	sim->action_errors++;
	sim->last_action_error = err;
	pthread_mutex_unlock(&sim->lock);
}

/* Take up to @want of what the engine holds in pool @kind. */
static uint64_t take_held(struct esim *sim, int kind, uint64_t want)
{
	uint64_t got;

	pthread_mutex_lock(&sim->lock);
	got = sim->held[kind] < want ? sim->held[kind] : want;
	sim->held[kind] -= got;
	pthread_mutex_unlock(&sim->lock);
	return got;
}

/*
 * Unpin up to @want.  Another thread (a second worker, the test) may unpin
 * between our snapshot and our call: the library then refuses with -EINVAL
 * and changes nothing, so re-read and retry a bounded number of times.
 */
static int do_unpin(struct srsv_space *space, uint64_t want)
{
	for (int tries = 0; tries < 8; tries++) {
		struct srsv_space_info info = esim_snap(space);
		uint64_t n = info.pinned < want ? info.pinned : want;
		int ret;

		if (!n)
			return 0;
		ret = srsv_space_unpin(space, n);
		if (ret != -EINVAL)
			return ret;
	}
	return -EAGAIN;
}

static int do_free_reserved(struct srsv_space *space, uint64_t want)
{
	for (int tries = 0; tries < 8; tries++) {
		struct srsv_space_info info = esim_snap(space);
		uint64_t n = info.reserved < want ? info.reserved : want;
		int ret;

		if (!n)
			return 0;
		ret = srsv_space_free_reserved(space, n);
		if (ret != -EINVAL)
			return ret;
	}
	return -EAGAIN;
}

/* A chunk allocation: only from unallocated device space. */
static int do_grow(struct srsv_space *space, uint64_t bytes)
{
	struct srsv_ctx *ctx = srsv_space_ctx(space);
	uint64_t unalloc = srsv_ctx_unallocated(ctx);
	int ret;

	if (unalloc < bytes)
		return -ENOSPC;
	ret = srsv_ctx_set_unallocated(ctx, unalloc - bytes);
	if (ret)
		return ret;
	return srsv_space_grow(space, bytes);
}

static int flushing_mode(struct srsv_space *space)
{
	return srsv_space_kind(space) == SRSV_POOL_DATA ? SRSV_FLUSH_DATA
							: SRSV_FLUSH_ALL;
}

/* Perform one action; returns what the callback should return (0 or a
 * negative errno), or 0 after recording a failed side effect. */
static int run_action(struct esim *sim, const struct esim_action *a,
		      struct srsv_space *space, enum srsv_flush_state state,
		      uint64_t bytes)
{
	int kind = srsv_space_kind(space);
	uint64_t n;
	int ret = 0;

	switch (a->op) {
	case ESIM_NOP:
		break;
	case ESIM_UNPIN:
		ret = do_unpin(space, a->arg);
		if (ret)
			note_error(sim, ret);
		ret = 0;
		break;
	case ESIM_RELEASE:
		n = take_held(sim, kind, a->arg);
		if (n) {
			ret = srsv_space_release(space, n);
			if (ret) {
				esim_hold(sim, kind, n);
				note_error(sim, ret);
			}
		}
		ret = 0;
		break;
	case ESIM_GROW:
		/* -ENOSPC is the answer the library wants from ALLOC_CHUNK
		 * when the device is out of space: pass it through. */
		ret = do_grow(space, a->arg);
		break;
	case ESIM_SLEEP_MS:
		esim_sleep_ms((unsigned)a->arg);
		break;
	case ESIM_RETURN:
		ret = a->error;
		break;
	case ESIM_REENTER_NOFLUSH:
		ret = srsv_space_reserve(space, a->arg, SRSV_NO_FLUSH, 0);
		pthread_mutex_lock(&sim->lock);
		sim->reenter.noflush_calls++;
		sim->reenter.noflush_last = ret;
		if (!ret)
			sim->reenter.noflush_ok++;
		pthread_mutex_unlock(&sim->lock);
		if (!ret && srsv_space_release(space, a->arg)) {
			pthread_mutex_lock(&sim->lock);
			sim->reenter.release_errors++;
			pthread_mutex_unlock(&sim->lock);
		}
		ret = 0;
		break;
	case ESIM_REENTER_FLUSH:
		ret = srsv_space_reserve(space, a->arg, flushing_mode(space), 0);
		pthread_mutex_lock(&sim->lock);
		sim->reenter.flush_calls++;
		sim->reenter.flush_last = ret;
		if (ret == -EDEADLK)
			sim->reenter.flush_edeadlk++;
		pthread_mutex_unlock(&sim->lock);
		if (!ret && srsv_space_release(space, a->arg)) {
			pthread_mutex_lock(&sim->lock);
			sim->reenter.release_errors++;
			pthread_mutex_unlock(&sim->lock);
		}
		ret = 0;
		break;
	case ESIM_FREE_RESERVED:
		ret = do_free_reserved(space, a->arg);
		if (ret)
			note_error(sim, ret);
		ret = 0;
		break;
	case ESIM_SET_ERROR:
		ret = srsv_ctx_set_error(srsv_space_ctx(space), a->error);
		if (ret)
			note_error(sim, ret);
		ret = 0;
		break;
	case ESIM_CALL:
		ret = a->fn ? a->fn(sim, space, state, bytes, a->fn_arg) : 0;
		if (ret > 0)
			ret = 0;
		break;
	}
	return ret;
}

static bool action_matches(const struct esim_action *a, int state, int kind,
			   bool for_preempt)
{
	if (a->state && (int)a->state != state)
		return false;
	if (a->pool != ESIM_ANY && a->pool != kind)
		return false;
	if (a->preempt >= 0 && (a->preempt != 0) != for_preempt)
		return false;
	return true;
}

int esim_flush(struct srsv_space *space, enum srsv_flush_state state,
	       uint64_t bytes, bool for_preempt, void *user)
{
	struct esim *sim = user;
	struct esim_action todo[ESIM_MAX_ACTIONS];
	unsigned nr = 0;
	size_t slot = SIZE_MAX;
	uint64_t seq;
	int kind = srsv_space_kind(space);
	int ret = 0;
	bool unsupported;

	pthread_mutex_lock(&sim->lock);
	seq = sim->seq++;
	if ((int)state > 0 && state < SRSV_STATE_COUNT) {
		sim->calls[state]++;
		if (for_preempt)
			sim->preempt_calls[state]++;
	}
	if (sim->log_len < ESIM_LOG_MAX) {
		slot = sim->log_len++;
		sim->log[slot] = (struct esim_call){
			.seq = seq, .state = state, .bytes = bytes,
			.for_preempt = for_preempt, .pool = kind,
			.thread = pthread_self(),
		};
	} else {
		sim->log_dropped++;
	}
	/* Frozen: no action runs (esim_freeze()). */
	for (unsigned i = 0; !sim->frozen && i < sim->nr_actions; i++) {
		struct esim_action *a = &sim->actions[i];

		if (!action_matches(a, state, kind, for_preempt))
			continue;
		if (a->times && sim->fired[i] >= a->times)
			continue;
		sim->fired[i]++;
		todo[nr++] = *a;
	}
	unsupported = !sim->frozen && state < 32 &&
		      (sim->unsupported >> state) & 1;
	sim->inside++;
	if (sim->inside > sim->max_inside)
		sim->max_inside = sim->inside;
	pthread_mutex_unlock(&sim->lock);

	if (!nr && unsupported)
		ret = -EOPNOTSUPP;
	for (unsigned i = 0; i < nr; i++) {
		int r = run_action(sim, &todo[i], space, state, bytes);

		/* The first error wins; later actions still run (a test may
		 * script "unpin, then return -EIO"). */
		if (r && !ret)
			ret = r;
	}

	pthread_mutex_lock(&sim->lock);
	sim->inside--;
	/* The log may have been cleared meanwhile: only fill our own slot. */
	if (slot < sim->log_len && sim->log[slot].seq == seq) {
		sim->log[slot].ret = ret;
		sim->log[slot].done = true;
	}
	pthread_mutex_unlock(&sim->lock);
	return ret;
}

/* ---- the log ---- */

size_t esim_log_len(struct esim *sim)
{
	size_t n;

	pthread_mutex_lock(&sim->lock);
	n = sim->log_len;
	pthread_mutex_unlock(&sim->lock);
	return n;
}

bool esim_log_get(struct esim *sim, size_t i, struct esim_call *out)
{
	bool ok = false;

	pthread_mutex_lock(&sim->lock);
	if (i < sim->log_len) {
		*out = sim->log[i];
		ok = true;
	}
	pthread_mutex_unlock(&sim->lock);
	return ok;
}

size_t esim_log_states(struct esim *sim, int pool, bool skip_preempt,
		       enum srsv_flush_state *states, size_t max)
{
	size_t n = 0;

	pthread_mutex_lock(&sim->lock);
	for (size_t i = 0; i < sim->log_len; i++) {
		const struct esim_call *c = &sim->log[i];

		if (pool != ESIM_ANY && c->pool != pool)
			continue;
		if (skip_preempt && c->for_preempt)
			continue;
		if (n < max)
			states[n] = c->state;
		n++;
	}
	pthread_mutex_unlock(&sim->lock);
	return n;
}

void esim_log_clear(struct esim *sim)
{
	pthread_mutex_lock(&sim->lock);
	sim->log_len = 0;
	sim->log_dropped = 0;
	memset(sim->calls, 0, sizeof(sim->calls));
	memset(sim->preempt_calls, 0, sizeof(sim->preempt_calls));
	pthread_mutex_unlock(&sim->lock);
}

uint64_t esim_calls(struct esim *sim, enum srsv_flush_state state)
{
	uint64_t n = 0;

	pthread_mutex_lock(&sim->lock);
	if ((int)state > 0 && state < SRSV_STATE_COUNT)
		n = sim->calls[state];
	pthread_mutex_unlock(&sim->lock);
	return n;
}

uint64_t esim_total_calls(struct esim *sim)
{
	uint64_t n = 0;

	pthread_mutex_lock(&sim->lock);
	for (int s = 0; s < SRSV_STATE_COUNT; s++)
		n += sim->calls[s];
	pthread_mutex_unlock(&sim->lock);
	return n;
}

struct esim_reenter esim_reenter_results(struct esim *sim)
{
	struct esim_reenter r;

	pthread_mutex_lock(&sim->lock);
	r = sim->reenter;
	pthread_mutex_unlock(&sim->lock);
	return r;
}

uint64_t esim_action_errors(struct esim *sim, int *last)
{
	uint64_t n;

	pthread_mutex_lock(&sim->lock);
	n = sim->action_errors;
	if (last)
		*last = sim->last_action_error;
	pthread_mutex_unlock(&sim->lock);
	return n;
}

/* snprintf that appends and never overruns. */
static void append(char *buf, size_t len, size_t *pos, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*pos >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *pos, len - *pos, fmt, ap);
	va_end(ap);
	if (n > 0)
		*pos += (size_t)n;
}

char *esim_log_format(struct esim *sim, char *buf, size_t len)
{
	size_t pos = 0;

	if (!len)
		return buf;
	buf[0] = '\0';
	pthread_mutex_lock(&sim->lock);
	for (size_t i = 0; i < sim->log_len; i++) {
		const struct esim_call *c = &sim->log[i];

		append(buf, len, &pos, "%s%s(%s,%" PRIu64 "%s)", i ? " " : "",
		       srsv_state_name(c->state), srsv_pool_name(c->pool),
		       c->bytes, c->for_preempt ? ",P" : "");
	}
	pthread_mutex_unlock(&sim->lock);
	return buf;
}

/* ---- counters ---- */

struct srsv_space_info esim_snap(struct srsv_space *space)
{
	struct srsv_space_info info;
	int ret;

	memset(&info, 0, sizeof(info));
	ret = srsv_space_snapshot(space, &info, NULL, 0, NULL);
	if (ret)
		die("srsv_space_snapshot", ret);
	return info;
}

static void cmp(const char *name, uint64_t want, uint64_t got, char *why,
		size_t len, size_t *pos, int *bad)
{
	if (want == UINT64_MAX || want == got)
		return;
	append(why, len, pos, "%s%s=%" PRIu64 " (want %" PRIu64 ")",
	       *bad ? ", " : "", name, got, want);
	(*bad)++;
}

int esim_check_counters(struct srsv_space *space, uint64_t total,
			uint64_t used, uint64_t pinned, uint64_t reserved,
			uint64_t may_use, uint64_t readonly, char *why,
			size_t len)
{
	struct srsv_space_info i = esim_snap(space);
	size_t pos = 0;
	int bad = 0;

	if (len)
		why[0] = '\0';
	cmp("total", total, i.total, why, len, &pos, &bad);
	cmp("used", used, i.used, why, len, &pos, &bad);
	cmp("pinned", pinned, i.pinned, why, len, &pos, &bad);
	cmp("reserved", reserved, i.reserved, why, len, &pos, &bad);
	cmp("may_use", may_use, i.may_use, why, len, &pos, &bad);
	cmp("readonly", readonly, i.readonly, why, len, &pos, &bad);
	return bad;
}

int esim_info_diff(const struct srsv_space_info *a,
		   const struct srsv_space_info *b, char *why, size_t len)
{
	size_t pos = 0;
	int bad = 0;

	if (len)
		why[0] = '\0';
#define F(field) \
	cmp(#field, (uint64_t)a->field, (uint64_t)b->field, why, len, &pos, &bad)
	F(kind);
	F(total);
	F(used);
	F(pinned);
	F(reserved);
	F(may_use);
	F(readonly);
	F(zone_unusable);
	F(reclaim_size);
	F(tickets_id);
	F(clamp);
	F(full);
	F(flushing);
	F(force_alloc);
	F(nr_tickets);
	F(nr_priority_tickets);
	F(unallocated);
	F(delalloc_bytes);
	F(ordered_bytes);
	F(global_rsv_size);
	F(global_rsv_reserved);
	F(trans_rsv_reserved);
	F(delayed_rsv_reserved);
	F(delayed_refs_rsv_reserved);
	F(preempt_runs);
	F(async_runs);
	F(tickets_granted);
	F(tickets_failed);
	for (int s = 0; s < SRSV_SPACE_INFO_STATES; s++) {
		F(flushes[s]);
		F(preempt_flushes[s]);
	}
#undef F
	return bad;
}

/* ---- waiting ---- */

void esim_sleep_ms(unsigned ms)
{
	struct timespec ts = {
		.tv_sec = ms / 1000,
		.tv_nsec = (long)(ms % 1000) * 1000000L,
	};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

bool esim_wait_tickets(struct srsv_space *space, unsigned nr,
		       unsigned timeout_ms)
{
	for (unsigned waited = 0;; waited += ESIM_POLL_MS) {
		struct srsv_space_info i = esim_snap(space);

		if (i.nr_tickets + i.nr_priority_tickets >= nr)
			return true;
		if (waited >= timeout_ms)
			return false;
		esim_sleep_ms(ESIM_POLL_MS);
	}
}

bool esim_wait_calls(struct esim *sim, uint64_t nr, unsigned timeout_ms)
{
	for (unsigned waited = 0;; waited += ESIM_POLL_MS) {
		if (esim_total_calls(sim) >= nr)
			return true;
		if (waited >= timeout_ms)
			return false;
		esim_sleep_ms(ESIM_POLL_MS);
	}
}

int esim_run_all(struct esim *sim, unsigned max_rounds)
{
	int total = 0;

	for (unsigned r = 0; r < max_rounds; r++) {
		int n = srsv_ctx_run_pending(sim->ctx);

		if (n < 0)
			return n;
		if (!n)
			break;
		total += n;
	}
	return total;
}
