/* SPDX-License-Identifier: MIT */
/*
 * The LTTng-UST provider "spacersv": every decision point of the library.
 *
 * Do not include this file directly: the library's files include
 * lib/trace.h, which includes lib/trace-lttng.h (the static inline
 * srsv__trace_*() wrappers) when tracing is compiled in, which includes this
 * header.  struct srsv__dump (lib/trace.h) must be defined before this file
 * is read; the wrappers guarantee it.
 *
 * Design rules (docs/tracing.md has the long form, with every field):
 *
 * - Arguments are plain scalars computed by the wrappers, so that this
 *   header and the probe code never need the library's internal structures;
 *   the one exception is the space dump, passed by pointer because it has
 *   more fields than a tracepoint takes arguments (10).
 * - Every pool event starts with the ctx address (an integer: several
 *   ctxs may live in one process) and the pool kind.
 * - Every closed set of values (pool kinds, flush modes, flush states, ...)
 *   is a CTF enumeration, so that babeltrace2 prints names, not numbers.
 *   The values are those of the public enums (include/libspacersv/types.h,
 *   rsv.h) and of lib/trace.h and lib/internal.h; a value outside the
 *   mapping is still recorded (and printed as a number).
 * - The tracepoint definitions live in the library (lib/trace.c, dynamic
 *   linkage: the library does not link liblttng-ust), the probes in the
 *   provider package libspacersv-tp.so (tracepoints/spacersv_tp.c), loaded
 *   only by processes that trace.  Every symbol either creates is hidden;
 *   the version scripts (lib/libspacersv.sym, tracepoints/spacersv-tp.sym,
 *   local: *) hide the section bounds the linker adds.
 */

#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER spacersv

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./spacersv_tp.h"

/*
 * Nothing outside the module that defines them refers to the tracepoints
 * (the library) or to the provider (libspacersv-tp.so): keep their symbols
 * out of the dynamic symbol tables.  Both must be set before every
 * inclusion of <lttng/tracepoint.h>.
 */
#ifndef LTTNG_UST_TRACEPOINT_HIDDEN_DEFINITION
#define LTTNG_UST_TRACEPOINT_HIDDEN_DEFINITION
#endif
#ifndef LTTNG_UST_TRACEPOINT_PROVIDER_HIDDEN_DEFINITION
#define LTTNG_UST_TRACEPOINT_PROVIDER_HIDDEN_DEFINITION
#endif

#if !defined(SRSV_SPACERSV_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define SRSV_SPACERSV_TP_H

#include <stdint.h>

#include <lttng/tracepoint.h>

/* ---- enumerations ---- */

/* enum srsv_pool */
LTTNG_UST_TRACEPOINT_ENUM(spacersv, pool,
	LTTNG_UST_TP_ENUM_VALUES(
		lttng_ust_field_enum_value("data", 0)
		lttng_ust_field_enum_value("metadata", 1)
		lttng_ust_field_enum_value("system", 2)
		lttng_ust_field_enum_value("mixed", 3)
	)
)

/* enum srsv_flush */
LTTNG_UST_TRACEPOINT_ENUM(spacersv, flush_mode,
	LTTNG_UST_TP_ENUM_VALUES(
		lttng_ust_field_enum_value("NO_FLUSH", 0)
		lttng_ust_field_enum_value("FLUSH_LIMIT", 1)
		lttng_ust_field_enum_value("FLUSH_EVICT", 2)
		lttng_ust_field_enum_value("FLUSH_DATA", 3)
		lttng_ust_field_enum_value("FLUSH_FREE_SPACE_INODE", 4)
		lttng_ust_field_enum_value("FLUSH_ALL", 5)
		lttng_ust_field_enum_value("FLUSH_ALL_STEAL", 6)
		lttng_ust_field_enum_value("FLUSH_EMERGENCY", 7)
	)
)

/* enum srsv_flush_state (btrfs's values: 0 is unused) */
LTTNG_UST_TRACEPOINT_ENUM(spacersv, flush_state,
	LTTNG_UST_TP_ENUM_VALUES(
		lttng_ust_field_enum_value("DELAYED_ITEMS_NR", 1)
		lttng_ust_field_enum_value("DELAYED_ITEMS", 2)
		lttng_ust_field_enum_value("DELAYED_REFS_NR", 3)
		lttng_ust_field_enum_value("DELAYED_REFS", 4)
		lttng_ust_field_enum_value("DELALLOC", 5)
		lttng_ust_field_enum_value("DELALLOC_WAIT", 6)
		lttng_ust_field_enum_value("DELALLOC_FULL", 7)
		lttng_ust_field_enum_value("ALLOC_CHUNK", 8)
		lttng_ust_field_enum_value("ALLOC_CHUNK_FORCE", 9)
		lttng_ust_field_enum_value("RUN_DELAYED_IPUTS", 10)
		lttng_ust_field_enum_value("COMMIT_TRANS", 11)
		lttng_ust_field_enum_value("RESET_ZONES", 12)
		lttng_ust_field_enum_value("RECLAIM_ZONES", 13)
		lttng_ust_field_enum_value("RECLAIM_CHUNKS", 14)
	)
)

/* enum srsv__flush_reason (lib/trace.h) */
LTTNG_UST_TRACEPOINT_ENUM(spacersv, flush_reason,
	LTTNG_UST_TP_ENUM_VALUES(
		lttng_ust_field_enum_value("enospc", 0)
		lttng_ust_field_enum_value("preempt", 1)
	)
)

/* enum srsv__counter (lib/internal.h) */
LTTNG_UST_TRACEPOINT_ENUM(spacersv, counter,
	LTTNG_UST_TP_ENUM_VALUES(
		lttng_ust_field_enum_value("total", 0)
		lttng_ust_field_enum_value("used", 1)
		lttng_ust_field_enum_value("reserved", 2)
		lttng_ust_field_enum_value("pinned", 3)
		lttng_ust_field_enum_value("readonly", 4)
		lttng_ust_field_enum_value("zone_unusable", 5)
		lttng_ust_field_enum_value("may_use", 6)
	)
)

/* enum srsv_refusal */
LTTNG_UST_TRACEPOINT_ENUM(spacersv, refusal,
	LTTNG_UST_TP_ENUM_VALUES(
		lttng_ust_field_enum_value("release", 0)
		lttng_ust_field_enum_value("alloc", 1)
		lttng_ust_field_enum_value("free_reserved", 2)
		lttng_ust_field_enum_value("commit_used", 3)
		lttng_ust_field_enum_value("pin", 4)
		lttng_ust_field_enum_value("unpin", 5)
		lttng_ust_field_enum_value("shrink", 6)
		lttng_ust_field_enum_value("clear_readonly", 7)
		lttng_ust_field_enum_value("grow", 8)
		lttng_ust_field_enum_value("args", 9)
		lttng_ust_field_enum_value("rsv_release", 10)
		lttng_ust_field_enum_value("rsv_args", 11)
		lttng_ust_field_enum_value("quota_release", 12)
		lttng_ust_field_enum_value("quota_args", 13)
		lttng_ust_field_enum_value("delalloc", 14)
		lttng_ust_field_enum_value("bgroup", 15)
		lttng_ust_field_enum_value("zone", 16)
		lttng_ust_field_enum_value("async", 17)
	)
)

/* enum srsv_rsv_type */
LTTNG_UST_TRACEPOINT_ENUM(spacersv, rsv_type,
	LTTNG_UST_TP_ENUM_VALUES(
		lttng_ust_field_enum_value("global", 0)
		lttng_ust_field_enum_value("delalloc", 1)
		lttng_ust_field_enum_value("trans", 2)
		lttng_ust_field_enum_value("chunk", 3)
		lttng_ust_field_enum_value("delops", 4)
		lttng_ust_field_enum_value("delrefs", 5)
		lttng_ust_field_enum_value("treelog", 6)
		lttng_ust_field_enum_value("empty", 7)
		lttng_ust_field_enum_value("temp", 8)
	)
)

/* enum srsv__rsv_op (lib/trace.h) */
LTTNG_UST_TRACEPOINT_ENUM(spacersv, rsv_op,
	LTTNG_UST_TP_ENUM_VALUES(
		lttng_ust_field_enum_value("add", 0)
		lttng_ust_field_enum_value("refill", 1)
		lttng_ust_field_enum_value("use", 2)
		lttng_ust_field_enum_value("migrate", 3)
		lttng_ust_field_enum_value("release", 4)
		lttng_ust_field_enum_value("spill", 5)
		lttng_ust_field_enum_value("resize_global", 6)
		lttng_ust_field_enum_value("steal", 7)
		lttng_ust_field_enum_value("fallback_use", 8)
		lttng_ust_field_enum_value("fallback_global_refill", 9)
		lttng_ust_field_enum_value("fallback_no_flush", 10)
		lttng_ust_field_enum_value("fallback_from_global", 11)
		lttng_ust_field_enum_value("fallback_emergency", 12)
	)
)

/* enum srsv__quota_op (lib/trace.h) */
LTTNG_UST_TRACEPOINT_ENUM(spacersv, quota_op,
	LTTNG_UST_TP_ENUM_VALUES(
		lttng_ust_field_enum_value("reserve", 0)
		lttng_ust_field_enum_value("release", 1)
		lttng_ust_field_enum_value("convert", 2)
		lttng_ust_field_enum_value("commit", 3)
		lttng_ust_field_enum_value("flush", 4)
		lttng_ust_field_enum_value("used", 5)
	)
)

/*
 * enum srsv_quota_kind, plus lib/quota.c's two trace-only values: "used"
 * (an operation on the written bytes, not on a reservation) and "none" (a
 * quota flush, which concerns no kind).
 */
LTTNG_UST_TRACEPOINT_ENUM(spacersv, quota_kind,
	LTTNG_UST_TP_ENUM_VALUES(
		lttng_ust_field_enum_value("none", -2)
		lttng_ust_field_enum_value("used", -1)
		lttng_ust_field_enum_value("data", 0)
		lttng_ust_field_enum_value("meta_prealloc", 1)
		lttng_ust_field_enum_value("meta_pertrans", 2)
	)
)

/* enum srsv_zone_kind (names as srsv_zone_kind_name()) */
LTTNG_UST_TRACEPOINT_ENUM(spacersv, zone_kind,
	LTTNG_UST_TP_ENUM_VALUES(
		lttng_ust_field_enum_value("data", 0)
		lttng_ust_field_enum_value("metadata", 1)
		lttng_ust_field_enum_value("system", 2)
		lttng_ust_field_enum_value("data-reloc", 3)
		lttng_ust_field_enum_value("treelog", 4)
	)
)

/* ---- the reserve path and tickets ---- */

/*
 * One call of a reserve entry point, with its answer (btrfs's
 * space_reservation "reserve" side): the pool, what was asked, in which
 * mode, with which ::srsv_reserve_flags, and the result (0 or -errno;
 * -EINPROGRESS when a ticket was queued).
 */
LTTNG_UST_TRACEPOINT_EVENT(spacersv, reserve,
	LTTNG_UST_TP_ARGS(uint64_t, ctx, int, pool, uint64_t, bytes,
			  int, mode, unsigned, flags, int, ret),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer_hex(uint64_t, ctx, ctx)
		lttng_ust_field_enum(spacersv, pool, int, pool, pool)
		lttng_ust_field_integer(uint64_t, bytes, bytes)
		lttng_ust_field_enum(spacersv, flush_mode, int, mode, mode)
		lttng_ust_field_integer_hex(unsigned, flags, flags)
		lttng_ust_field_integer(int, ret, ret)
	)
)

/* A ticket was queued (priority: on the priority queue). */
LTTNG_UST_TRACEPOINT_EVENT(spacersv, ticket_add,
	LTTNG_UST_TP_ARGS(uint64_t, ctx, int, pool, uint64_t, bytes,
			  int, mode, int, priority),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer_hex(uint64_t, ctx, ctx)
		lttng_ust_field_enum(spacersv, pool, int, pool, pool)
		lttng_ust_field_integer(uint64_t, bytes, bytes)
		lttng_ust_field_enum(spacersv, flush_mode, int, mode, mode)
		lttng_ust_field_integer(uint8_t, priority, priority)
	)
)

/*
 * A ticket ended: granted (error 0) or failed (-ENOSPC, -ETIMEDOUT,
 * -ECANCELED, -ESHUTDOWN, ...), after wait_ns nanoseconds in the queue.
 * One event answers "how long, for what, and did it fail" without pairing
 * it with ticket_add (the reviewer's request on btrfs's ticket tracepoints).
 */
LTTNG_UST_TRACEPOINT_EVENT(spacersv, ticket_end,
	LTTNG_UST_TP_ARGS(uint64_t, ctx, int, pool, uint64_t, bytes,
			  int, mode, int, error, uint64_t, wait_ns),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer_hex(uint64_t, ctx, ctx)
		lttng_ust_field_enum(spacersv, pool, int, pool, pool)
		lttng_ust_field_integer(uint64_t, bytes, bytes)
		lttng_ust_field_enum(spacersv, flush_mode, int, mode, mode)
		lttng_ust_field_integer(int, error, error)
		lttng_ust_field_integer(uint64_t, wait_ns, wait_ns)
	)
)

/*
 * A paced reservation (pace.c): the delay its slot asked for, the time it
 * slept (less when flushing brought the fill below freerun; 0 for NOWAIT,
 * which never sleeps), the reclaim bandwidth estimate in bytes/s and the
 * fill in per mille.
 */
LTTNG_UST_TRACEPOINT_EVENT(spacersv, pace,
	LTTNG_UST_TP_ARGS(uint64_t, ctx, int, pool, uint64_t, bytes,
			  uint64_t, delay_ns, uint64_t, slept_ns,
			  uint64_t, bw, uint64_t, fill_pm, int, nowait),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer_hex(uint64_t, ctx, ctx)
		lttng_ust_field_enum(spacersv, pool, int, pool, pool)
		lttng_ust_field_integer(uint64_t, bytes, bytes)
		lttng_ust_field_integer(uint64_t, delay_ns, delay_ns)
		lttng_ust_field_integer(uint64_t, slept_ns, slept_ns)
		lttng_ust_field_integer(uint64_t, bw, bw)
		lttng_ust_field_integer(uint64_t, fill_pm, fill_pm)
		lttng_ust_field_integer(int, nowait, nowait)
	)
)

/* ---- flushing ---- */

/* A flusher was queued: for a waiting ticket (enospc) or preemptively. */
LTTNG_UST_TRACEPOINT_EVENT(spacersv, trigger_flush,
	LTTNG_UST_TP_ARGS(uint64_t, ctx, int, pool, uint64_t, bytes,
			  int, mode, int, reason),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer_hex(uint64_t, ctx, ctx)
		lttng_ust_field_enum(spacersv, pool, int, pool, pool)
		lttng_ust_field_integer(uint64_t, bytes, bytes)
		lttng_ust_field_enum(spacersv, flush_mode, int, mode, mode)
		lttng_ust_field_enum(spacersv, flush_reason, int, reason, reason)
	)
)

/*
 * One call of the engine's flush callback for @state, asked for @bytes,
 * with its return value; for_preempt tells the preemptive flusher (1) from
 * a flusher serving tickets (0); duration_ns is the time the step took
 * (the callback and, for the zoned states, the library's own work); called
 * is 0 when the callback was not called because it had answered
 * -EOPNOTSUPP for this state before (ret is then -EOPNOTSUPP).  The event
 * fires when the step ends.
 */
LTTNG_UST_TRACEPOINT_EVENT(spacersv, flush_space,
	LTTNG_UST_TP_ARGS(uint64_t, ctx, int, pool, int, state,
			  uint64_t, bytes, int, ret, int, for_preempt,
			  uint64_t, duration_ns, int, called),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer_hex(uint64_t, ctx, ctx)
		lttng_ust_field_enum(spacersv, pool, int, pool, pool)
		lttng_ust_field_enum(spacersv, flush_state, int, state, state)
		lttng_ust_field_integer(uint64_t, bytes, bytes)
		lttng_ust_field_integer(int, ret, ret)
		lttng_ust_field_integer(uint8_t, for_preempt, for_preempt)
		lttng_ust_field_integer(uint64_t, duration_ns, duration_ns)
		lttng_ust_field_integer(uint8_t, called, called)
	)
)

/*
 * A call the library refused because the bytes were not where the caller
 * said (a double release, a pin of bytes not used, ...): @kind is enum
 * srsv_refusal, @bytes what was asked.  srsv_space_stats::refused counts
 * the same.
 */
LTTNG_UST_TRACEPOINT_EVENT(spacersv, refused,
	LTTNG_UST_TP_ARGS(uint64_t, ctx, int, pool, int, kind,
			  uint64_t, bytes),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer_hex(uint64_t, ctx, ctx)
		lttng_ust_field_enum(spacersv, pool, int, pool, pool)
		lttng_ust_field_enum(spacersv, refusal, int, kind, kind)
		lttng_ust_field_integer(uint64_t, bytes, bytes)
	)
)

/*
 * A pool counter changed from old to old + diff (btrfs's update_bytes_*
 * events).  new_value is old + diff, so that a reader can plot a counter
 * from its events alone.
 */
LTTNG_UST_TRACEPOINT_EVENT(spacersv, counter,
	LTTNG_UST_TP_ARGS(uint64_t, ctx, int, pool, int, counter,
			  uint64_t, old, int64_t, diff),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer_hex(uint64_t, ctx, ctx)
		lttng_ust_field_enum(spacersv, pool, int, pool, pool)
		lttng_ust_field_enum(spacersv, counter, int, counter, counter)
		lttng_ust_field_integer(uint64_t, old, old)
		lttng_ust_field_integer(int64_t, diff, diff)
		lttng_ust_field_integer(uint64_t, new_value,
					old + (uint64_t)diff)
	)
)

/*
 * The full state of a pool (btrfs's dump_space_info class), recorded by
 * done_preemptive_reclaim (end of a preemptive run) and fail_all_tickets
 * (the async flusher gives up and fails the queued tickets).
 */
LTTNG_UST_TRACEPOINT_EVENT_CLASS(spacersv, dump_space,
	LTTNG_UST_TP_ARGS(uint64_t, ctx, int, pool,
			  const struct srsv__dump *, d),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer_hex(uint64_t, ctx, ctx)
		lttng_ust_field_enum(spacersv, pool, int, pool, pool)
		lttng_ust_field_integer(uint64_t, total, d->total)
		lttng_ust_field_integer(uint64_t, used, d->used)
		lttng_ust_field_integer(uint64_t, pinned, d->pinned)
		lttng_ust_field_integer(uint64_t, reserved, d->reserved)
		lttng_ust_field_integer(uint64_t, may_use, d->may_use)
		lttng_ust_field_integer(uint64_t, readonly, d->readonly)
		lttng_ust_field_integer(uint64_t, zone_unusable,
					d->zone_unusable)
		lttng_ust_field_integer(uint64_t, reclaim_size,
					d->reclaim_size)
		lttng_ust_field_integer(unsigned, clamp, d->clamp)
		lttng_ust_field_integer(uint64_t, global_reserved,
					d->global_reserved)
		lttng_ust_field_integer(uint64_t, trans_reserved,
					d->trans_reserved)
		lttng_ust_field_integer(uint64_t, delayed_refs_reserved,
					d->delayed_refs_reserved)
		lttng_ust_field_integer(uint64_t, delayed_reserved,
					d->delayed_reserved)
		lttng_ust_field_integer(uint64_t, unallocated, d->unallocated)
		lttng_ust_field_integer(uint64_t, delalloc, d->delalloc)
		lttng_ust_field_integer(uint64_t, ordered, d->ordered)
	)
)

LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(spacersv, dump_space, spacersv,
	done_preemptive_reclaim,
	LTTNG_UST_TP_ARGS(uint64_t, ctx, int, pool,
			  const struct srsv__dump *, d)
)

LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(spacersv, dump_space, spacersv,
	fail_all_tickets,
	LTTNG_UST_TP_ARGS(uint64_t, ctx, int, pool,
			  const struct srsv__dump *, d)
)

/* ---- block reservations and quotas ---- */

/*
 * One rsv operation (or one step of the fallback chain): the rsv's address
 * (caller-owned rsvs have no other name), its type, the bytes and the
 * result.
 */
LTTNG_UST_TRACEPOINT_EVENT(spacersv, rsv,
	LTTNG_UST_TP_ARGS(uint64_t, ctx, int, pool, uint64_t, rsv,
			  int, type, int, op, uint64_t, bytes, int, ret),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer_hex(uint64_t, ctx, ctx)
		lttng_ust_field_enum(spacersv, pool, int, pool, pool)
		lttng_ust_field_integer_hex(uint64_t, rsv, rsv)
		lttng_ust_field_enum(spacersv, rsv_type, int, type, type)
		lttng_ust_field_enum(spacersv, rsv_op, int, op, op)
		lttng_ust_field_integer(uint64_t, bytes, bytes)
		lttng_ust_field_integer(int, ret, ret)
	)
)

/* One quota operation of tenant @id on its reservations of @kind. */
LTTNG_UST_TRACEPOINT_EVENT(spacersv, quota,
	LTTNG_UST_TP_ARGS(uint64_t, id, int, op, int, kind,
			  uint64_t, bytes, int, ret),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(uint64_t, id, id)
		lttng_ust_field_enum(spacersv, quota_op, int, op, op)
		lttng_ust_field_enum(spacersv, quota_kind, int, kind, kind)
		lttng_ust_field_integer(uint64_t, bytes, bytes)
		lttng_ust_field_integer(int, ret, ret)
	)
)

/* ---- zoned ---- */

/* A zone group was made active (ret 0) or refused; tokens left after. */
LTTNG_UST_TRACEPOINT_EVENT(spacersv, zone_activate,
	LTTNG_UST_TP_ARGS(uint64_t, start, int, kind, int, ret,
			  unsigned, active_left),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer_hex(uint64_t, start, start)
		lttng_ust_field_enum(spacersv, zone_kind, int, kind, kind)
		lttng_ust_field_integer(int, ret, ret)
		lttng_ust_field_integer(unsigned, active_left, active_left)
	)
)

/* A zone group was finished; wasted: capacity left unwritten. */
LTTNG_UST_TRACEPOINT_EVENT(spacersv, zone_finish,
	LTTNG_UST_TP_ARGS(uint64_t, start, int, kind, uint64_t, wasted),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer_hex(uint64_t, start, start)
		lttng_ust_field_enum(spacersv, zone_kind, int, kind, kind)
		lttng_ust_field_integer(uint64_t, wasted, wasted)
	)
)

/*
 * The allocator hint (upstream 02444f2ac26e): for @bytes of @kind in @pool, the chosen
 * group's start (UINT64_MAX: none) after looking at @looked active groups.
 */
LTTNG_UST_TRACEPOINT_EVENT(spacersv, zone_hint,
	LTTNG_UST_TP_ARGS(int, kind, int, pool, uint64_t, bytes,
			  uint64_t, chosen, unsigned, looked),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_enum(spacersv, zone_kind, int, kind, kind)
		lttng_ust_field_enum(spacersv, pool, int, pool, pool)
		lttng_ust_field_integer(uint64_t, bytes, bytes)
		lttng_ust_field_integer_hex(uint64_t, chosen, chosen)
		lttng_ust_field_integer(unsigned, looked, looked)
	)
)

/* ---- block groups (btrfs's block-group events, without the prefix) ---- */

/*
 * One class for the five: the group's start, pool, length, used bytes and
 * zone_unusable (0 for a chunk) at the event.
 */
LTTNG_UST_TRACEPOINT_EVENT_CLASS(spacersv, block_group,
	LTTNG_UST_TP_ARGS(uint64_t, start, int, pool, uint64_t, length,
			  uint64_t, used, uint64_t, zone_unusable),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer_hex(uint64_t, start, start)
		lttng_ust_field_enum(spacersv, pool, int, pool, pool)
		lttng_ust_field_integer(uint64_t, length, length)
		lttng_ust_field_integer(uint64_t, used, used)
		lttng_ust_field_integer(uint64_t, zone_unusable, zone_unusable)
	)
)

/* Put on its pool's unused list (btrfs_mark_bg_unused()). */
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(spacersv, block_group, spacersv,
	add_unused_block_group,
	LTTNG_UST_TP_ARGS(uint64_t, start, int, pool, uint64_t, length,
			  uint64_t, used, uint64_t, zone_unusable))

/* Put on its pool's reclaim list (btrfs_mark_bg_to_reclaim()). */
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(spacersv, block_group, spacersv,
	add_reclaim_block_group,
	LTTNG_UST_TP_ARGS(uint64_t, start, int, pool, uint64_t, length,
			  uint64_t, used, uint64_t, zone_unusable))

/* Claimed for relocation: taken by the engine (a chunk) or handed to
 * zone_relocate (a zone); @used is what it moves. */
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(spacersv, block_group, spacersv,
	reclaim_block_group,
	LTTNG_UST_TP_ARGS(uint64_t, start, int, pool, uint64_t, length,
			  uint64_t, used, uint64_t, zone_unusable))

/* An unused chunk the commit keeps: pinned, in reclaim, the last of its
 * pool, or its free bytes held by reservations. */
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(spacersv, block_group, spacersv,
	skip_unused_block_group,
	LTTNG_UST_TP_ARGS(uint64_t, start, int, pool, uint64_t, length,
			  uint64_t, used, uint64_t, zone_unusable))

/* A chunk given back to unallocated space (btrfs_remove_block_group()). */
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(spacersv, block_group, spacersv,
	remove_block_group,
	LTTNG_UST_TP_ARGS(uint64_t, start, int, pool, uint64_t, length,
			  uint64_t, used, uint64_t, zone_unusable))

#endif /* SRSV_SPACERSV_TP_H */

#include <lttng/tracepoint-event.h>
