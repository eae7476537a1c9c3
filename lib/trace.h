/* SPDX-License-Identifier: MIT */
/*
 * The library's trace layer.  Every decision point calls one of the
 * srsv__trace_*() functions below.  With -Dtracing=disabled they are empty
 * inline functions and compile to nothing; with tracing compiled in, each is
 * an LTTng-UST tracepoint of provider "spacersv" (tracepoints/spacersv_tp.h)
 * whose disabled cost is one load and a branch; costly arguments (the space
 * dump) are computed only behind lttng_ust_tracepoint_enabled().
 *
 * Layer: tracing, right above the layout; every file may call it.
 */
#ifndef SRSV_TRACE_H
#define SRSV_TRACE_H

#include "blockrsv.h"
#include "internal.h"

/* Why a flush was triggered (trigger_flush.reason). */
enum srsv__flush_reason {
	SRSV__REASON_ENOSPC = 0,	/* a ticket had to wait */
	SRSV__REASON_PREEMPT = 1	/* preemptive flushing */
};

/* Which dump (dump_space.event). */
enum srsv__dump_kind {
	SRSV__DUMP_DONE_PREEMPTIVE_RECLAIM = 0,
	SRSV__DUMP_FAIL_ALL_TICKETS = 1
};

/* rsv operations (rsv.op). */
enum srsv__rsv_op {
	SRSV__RSV_ADD = 0,
	SRSV__RSV_REFILL,
	SRSV__RSV_USE,
	SRSV__RSV_MIGRATE,
	SRSV__RSV_RELEASE,
	SRSV__RSV_SPILL,		/* excess moved to another rsv */
	SRSV__RSV_RESIZE_GLOBAL,
	SRSV__RSV_STEAL,		/* a ticket took from the global rsv */
	SRSV__RSV_FALLBACK_USE,		/* fallback chain, step by step */
	SRSV__RSV_FALLBACK_GLOBAL_REFILL,
	SRSV__RSV_FALLBACK_NO_FLUSH,
	SRSV__RSV_FALLBACK_FROM_GLOBAL,
	SRSV__RSV_FALLBACK_EMERGENCY
};

/* quota operations (quota.op). */
enum srsv__quota_op {
	SRSV__QUOTA_RESERVE = 0,
	SRSV__QUOTA_RELEASE,
	SRSV__QUOTA_CONVERT,
	SRSV__QUOTA_COMMIT,
	SRSV__QUOTA_FLUSH,
	SRSV__QUOTA_USED
};

/* The full state of a pool, for done_preemptive_reclaim and
 * fail_all_tickets (btrfs's dump_space_info class). */
struct srsv__dump {
	int kind;
	uint64_t total, used, pinned, reserved, may_use, readonly;
	uint64_t zone_unusable, reclaim_size;
	unsigned clamp;
	uint64_t global_reserved, trans_reserved, delayed_refs_reserved;
	uint64_t delayed_reserved, unallocated, delalloc, ordered;
};

/* Fill @d from @s (for the trace and the snapshot).  Lock-free reads:
 * call with the pool lock held for a consistent dump. */
static inline void srsv__dump_fill(const struct srsv_space *s,
				   struct srsv__dump *d)
{
	const struct srsv_ctx *ctx = s->ctx;

	memset(d, 0, sizeof(*d));
	d->kind = s->kind;
	d->total = srsv__space_counter(s, SRSV__TOTAL);
	d->used = srsv__space_counter(s, SRSV__USED);
	d->pinned = srsv__space_counter(s, SRSV__PINNED);
	d->reserved = srsv__space_counter(s, SRSV__RESERVED);
	d->may_use = srsv__space_counter(s, SRSV__MAY_USE);
	d->readonly = srsv__space_counter(s, SRSV__READONLY);
	d->zone_unusable = srsv__space_counter(s, SRSV__ZONE_UNUSABLE);
	d->reclaim_size = srsv__ld(&s->reclaim_size);
	d->clamp = (unsigned)srsv__ld(&s->clamp);
	d->global_reserved = srsv__std_reserved_in(s, SRSV_RSV_GLOBAL);
	d->trans_reserved = srsv__std_reserved_in(s, SRSV_RSV_TRANS);
	d->delayed_refs_reserved = srsv__std_reserved_in(s, SRSV_RSV_DELREFS);
	d->delayed_reserved = srsv__std_reserved_in(s, SRSV_RSV_DELOPS);
	d->unallocated = srsv__ld(&ctx->unallocated);
	d->delalloc = srsv__ld(&ctx->delalloc_bytes);
	d->ordered = srsv__ld(&ctx->ordered_bytes);
}

/* Block-group events, btrfs's names without the prefix. */
enum srsv__bg_event {
	SRSV__TRACE_BG_ADD_UNUSED = 0,	/* add_unused_block_group */
	SRSV__TRACE_BG_ADD_RECLAIM,	/* add_reclaim_block_group */
	SRSV__TRACE_BG_RECLAIM,		/* reclaim_block_group */
	SRSV__TRACE_BG_SKIP_UNUSED,	/* skip_unused_block_group */
	SRSV__TRACE_BG_REMOVE		/* remove_block_group */
};

#if SRSV_TRACING
/* The provider package's file name (lib/trace.c, lib/meson.build). */
#define SRSV__TP_SONAME "libspacersv-tp.so.0"
/* Load the provider if LIBSPACERSV_TRACE asks for it (once; ctx.c). */
void srsv__trace_init(void);
#include "trace-lttng.h"
#else

static inline void srsv__trace_init(void)
{
}

static inline void srsv__trace_reserve(const struct srsv_space *s,
				       uint64_t bytes, int mode,
				       unsigned flags, int ret)
{
	(void)s; (void)bytes; (void)mode; (void)flags; (void)ret;
}

static inline void srsv__trace_ticket_add(const struct srsv_space *s,
					  uint64_t bytes, int mode,
					  bool priority)
{
	(void)s; (void)bytes; (void)mode; (void)priority;
}

static inline void srsv__trace_ticket_end(const struct srsv_space *s,
					  uint64_t bytes, int mode, int error,
					  uint64_t wait_ns)
{
	(void)s; (void)bytes; (void)mode; (void)error; (void)wait_ns;
}

static inline void srsv__trace_trigger_flush(const struct srsv_space *s,
					     uint64_t bytes, int mode,
					     int reason)
{
	(void)s; (void)bytes; (void)mode; (void)reason;
}

static inline void srsv__trace_flush_space(const struct srsv_space *s,
					   int state, uint64_t bytes, int ret,
					   bool for_preempt,
					   uint64_t duration_ns, bool called)
{
	(void)s; (void)state; (void)bytes; (void)ret; (void)for_preempt;
	(void)duration_ns; (void)called;
}

static inline void srsv__trace_refused(const struct srsv_space *s, int kind,
				       uint64_t bytes)
{
	(void)s; (void)kind; (void)bytes;
}

static inline void srsv__trace_counter(const struct srsv_space *s,
				       int counter, uint64_t old, int64_t diff)
{
	(void)s; (void)counter; (void)old; (void)diff;
}

static inline void srsv__trace_dump(const struct srsv_space *s, int which)
{
	(void)s; (void)which;
}

static inline void srsv__trace_rsv(const struct srsv_rsv *rsv, int op,
				   uint64_t bytes, int ret)
{
	(void)rsv; (void)op; (void)bytes; (void)ret;
}

static inline void srsv__trace_quota(uint64_t id, int op, int kind,
				     uint64_t bytes, int ret)
{
	(void)id; (void)op; (void)kind; (void)bytes; (void)ret;
}

static inline void srsv__trace_pace(const struct srsv_space *s,
				    uint64_t bytes, uint64_t delay_ns,
				    uint64_t slept_ns, uint64_t bw,
				    uint64_t fill_pm, bool nowait)
{
	(void)s; (void)bytes; (void)delay_ns; (void)slept_ns; (void)bw;
	(void)fill_pm; (void)nowait;
}

static inline void srsv__trace_zone_activate(uint64_t start, int kind,
					     int ret, unsigned active_left)
{
	(void)start; (void)kind; (void)ret; (void)active_left;
}

static inline void srsv__trace_zone_finish(uint64_t start, int kind,
					   uint64_t wasted)
{
	(void)start; (void)kind; (void)wasted;
}

static inline void srsv__trace_zone_hint(int kind, int pool, uint64_t bytes,
					 uint64_t chosen, unsigned looked)
{
	(void)kind; (void)pool; (void)bytes; (void)chosen; (void)looked;
}

static inline void srsv__trace_block_group(int event, uint64_t start,
					   int pool, uint64_t length,
					   uint64_t used,
					   uint64_t zone_unusable)
{
	(void)event; (void)start; (void)pool; (void)length; (void)used;
	(void)zone_unusable;
}

#endif /* SRSV_TRACING */

#endif /* SRSV_TRACE_H */
