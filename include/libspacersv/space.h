/* SPDX-License-Identifier: MIT */
/**
 * @file space.h
 * Pools: reservation (blocking, timed, ticketed), the lifecycle transitions
 * of space, and the snapshot.  Include <libspacersv/spacersv.h> rather than
 * this file.
 *
 * Lifecycle of a byte in a pool, as in btrfs:
 *
 *     free --reserve--> may_use --alloc--> reserved --commit_used--> used
 *       ^                  |                  |                       |
 *       +----release-------+   free_reserved--+                      pin
 *       +-------------------------unpin (commit)--- pinned <----------+
 *
 * The pool is full of "accounted" bytes = used + reserved + pinned +
 * readonly + zone_unusable + may_use; a reservation fits when accounted +
 * bytes <= total (or within the metadata overcommit allowance).
 */
#ifndef LIBSPACERSV_SPACE_H
#define LIBSPACERSV_SPACE_H

#include <libspacersv/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Reserve @p bytes in @p space (may_use += bytes).
 *
 * Fast path (lock-free) when no ticket this mode must respect is queued and
 * the bytes fit.  Otherwise, by @p mode: NO_FLUSH and EMERGENCY fail;
 * FLUSH_ALL, FLUSH_ALL_STEAL and FLUSH_DATA queue a normal ticket, wake the
 * async worker and sleep; FLUSH_LIMIT, FLUSH_EVICT and FLUSH_FREE_SPACE_INODE
 * queue a priority ticket and flush in the calling thread.
 *
 * @param space the pool
 * @param bytes how much (> 0)
 * @param mode ::srsv_flush; data pools take NO_FLUSH, FLUSH_DATA and
 *        FLUSH_FREE_SPACE_INODE, metadata and system pools the others,
 *        mixed pools all
 * @param flags ::srsv_reserve_flags
 * @retval 0 reserved: the caller holds @p bytes of may_use
 * @retval -ENOSPC no room and the flushing could not make enough; also at
 *         once, without queueing, for a request larger than the pool could
 *         ever become (its total plus all unallocated device space)
 * @retval -EAGAIN NOWAIT and the answer would need waiting or flushing
 * @retval -EINVAL NULL space, 0 bytes, bytes larger than any pool could hold
 *         (overflow), unknown mode or flag, or a mode this pool kind does
 *         not take
 * @retval -ESHUTDOWN the ctx is shut down (or shutting down) and the
 *         reservation would have to wait: as in the error state, a
 *         reservation that fits is still granted (0) and one that never
 *         can fails with -ENOSPC; only waiting is refused, whatever the
 *         per-CPU caches hold
 * @retval -EDEADLK a flushing mode used from inside a flush callback
 * @retval other the error set by srsv_ctx_set_error()
 * @note Thread-safe.  With ::SRSV_RESERVE_NOWAIT it never blocks.
 * @warning A blocking call may run the engine's flush callback (in this
 *          thread for priority modes and in ::SRSV_CTX_MANUAL mode, in a
 *          library thread otherwise) and waits until it frees space: never
 *          call it with a flushing mode while holding a lock of the
 *          engine's that its flush callback takes, or the two wait for
 *          each other for ever.  The library cannot see engine locks (it
 *          answers -EDEADLK only to a call made from inside a callback).
 *          Reserve before taking such a lock, as btrfs reserves when it
 *          starts a transaction, before it locks any tree block; under the
 *          lock, use ::SRSV_NO_FLUSH or ::SRSV_RESERVE_NOWAIT, which never
 *          wait.
 */
SRSV_MUST_CHECK int srsv_space_reserve(struct srsv_space *space, uint64_t bytes,
		       enum srsv_flush mode, unsigned flags);

/**
 * As srsv_space_reserve(), giving up after @p timeout_ns of waiting.
 * @param space the pool
 * @param bytes how much
 * @param mode flush mode
 * @param flags ::srsv_reserve_flags
 * @param timeout_ns how long to wait at most; 0: never wait and never
 *         queue (0 when the bytes can be had at once, -ETIMEDOUT where
 *         the call would have to wait; the same meaning as in
 *         srsv_ticket_reserve_async())
 * @retval -ETIMEDOUT the ticket was still queued at the deadline; it was
 *         removed under the pool lock, so the caller holds nothing (with
 *         @p timeout_ns 0: it would have had to wait; nothing was queued)
 * @retval 0 and the other errors as srsv_space_reserve()
 * @note Thread-safe.
 * @warning As srsv_space_reserve(): never with a flushing mode while
 *          holding an engine lock the flush callback takes.  The timeout
 *          turns that deadlock into -ETIMEDOUT at best; with a priority
 *          mode, or in ::SRSV_CTX_MANUAL mode, the callback runs in this
 *          thread and the lock is held.
 */
SRSV_MUST_CHECK int srsv_space_reserve_timeout(struct srsv_space *space, uint64_t bytes,
			       enum srsv_flush mode, unsigned flags,
			       uint64_t timeout_ns);

/** Number of 64-bit words of a ticket's private storage. */
#define SRSV_TICKET_WORDS 24

/**
 * A reservation ticket, owned by the caller (stack or heap) for the time the
 * reservation is in flight.  All fields are private.
 */
struct srsv_ticket {
	/** private */
	union {
		uint64_t words[SRSV_TICKET_WORDS];
		void *align_ptr;
		long double align_ld;
	} priv;
};

/**
 * Start a reservation that may wait, without waiting: the building block of
 * srsv_space_reserve() for engines that cancel or poll (event loops,
 * io_uring).
 * @param space the pool
 * @param ticket caller-owned ticket (need not be initialised)
 * @param bytes how much
 * @param mode flush mode
 * @param flags ::srsv_reserve_flags
 * @retval 0 granted at once (the ticket is finished)
 * @retval -EINPROGRESS queued: finish it with srsv_ticket_wait() (which
 *         also runs the priority flushing for priority modes)
 * @retval -EBUSY @p ticket is in flight: queued, or ended and not yet
 *         waited for (or, for an asynchronous one, not yet reaped); it is
 *         left as it is.  The library tells by the ticket's address, never
 *         by reading its memory
 * @retval -EAGAIN NOWAIT and the in-flight registry was busy; the ticket
 *         is left as it is
 * @retval negative as srsv_space_reserve(); the ticket is finished
 * @note Thread-safe.  A queued ticket must be finished (waited on until it
 * returns something other than -EINPROGRESS, or cancelled and then waited
 * on) before its memory is reused, and must not be moved meanwhile: the
 * pool's queue links it where it is (a copy, e.g. by realloc() of an
 * array of tickets, is refused by srsv_ticket_wait() and
 * srsv_ticket_cancel() with -EINVAL, and the original stays queued).
 */
SRSV_MUST_CHECK int srsv_ticket_reserve(struct srsv_space *space, struct srsv_ticket *ticket,
			uint64_t bytes, enum srsv_flush mode, unsigned flags);

/**
 * Wait for a ticket.  For priority modes this runs the flush states in the
 * calling thread.
 * @param ticket a ticket from srsv_ticket_reserve()
 * @param timeout_ns longest wait; UINT64_MAX waits for ever, 0 only looks
 * @retval 0 granted: the caller holds the bytes
 * @retval -EINPROGRESS @p timeout_ns was 0 and the ticket is still queued
 * @retval -ETIMEDOUT the deadline passed; the ticket was removed, the
 *         caller holds nothing
 * @retval -ECANCELED srsv_ticket_cancel() removed it
 * @retval -ENOSPC, -ESHUTDOWN, error of srsv_ctx_set_error(): failed
 * @retval -EINVAL NULL or never-started ticket, or a copy of a queued one
 * @note Thread-safe.  Once it returned anything but -EINPROGRESS, further
 * calls return the same result.  Unlike the srsv_space_reserve() family,
 * it must not race srsv_ctx_destroy(): call srsv_ctx_shutdown() (which
 * ends every ticket), let the waits return, then destroy.
 * @warning As srsv_space_reserve(): never wait (@p timeout_ns not 0)
 *          while holding an engine lock the flush callback takes.  For a
 *          priority mode, and in ::SRSV_CTX_MANUAL mode, the callback runs
 *          in this thread.
 */
SRSV_MUST_CHECK int srsv_ticket_wait(struct srsv_ticket *ticket, uint64_t timeout_ns);

/**
 * Cancel a queued ticket; its waiter returns -ECANCELED.  A ticket already
 * granted or failed is left alone (a grant is never lost).
 * @param ticket the ticket
 * @retval 0 cancelled
 * @retval -EALREADY the ticket had already ended (check srsv_ticket_wait())
 * @retval -EINVAL NULL or never-started ticket, or a copy of a queued one
 * @note Thread-safe: meant to be called from another thread than the
 * waiter.  The caller guarantees the ticket memory is alive.
 */
int srsv_ticket_cancel(struct srsv_ticket *ticket);

/**
 * Give back @p bytes of may_use (a reservation not needed any more).
 * The pool's movers' reserve, if below its size, is refilled from them
 * first; then waiting tickets that now fit are granted.
 * @param space the pool
 * @param bytes how much (0 is a no-op)
 * @retval 0 success
 * @retval -EINVAL NULL space, or more than the callers hold: may_use less
 * the movers' reserve, which nobody holds (nothing changed;
 * concurrent callers may find the pool full for the instant the refused
 * subtraction takes to be undone, and two over-releases racing each other
 * can let one of them through)
 * @note Thread-safe; lock-free unless tickets are queued; may be called
 * from flush callbacks.
 */
SRSV_MUST_CHECK int srsv_space_release(struct srsv_space *space, uint64_t bytes);

/**
 * The allocator took @p bytes of a reservation: may_use -> reserved.
 * @param space the pool
 * @param bytes how much
 * @retval 0 success
 * @retval -EINVAL NULL space, 0 bytes, or may_use smaller than @p bytes
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_space_alloc(struct srsv_space *space, uint64_t bytes);

/**
 * An allocation was abandoned before it was referenced: reserved -> free.
 * Grants waiting tickets.
 * @param space the pool
 * @param bytes how much
 * @retval 0 success
 * @retval -EINVAL NULL space, 0 bytes, or reserved smaller than @p bytes
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_space_free_reserved(struct srsv_space *space, uint64_t bytes);

/**
 * The allocated bytes are now referenced (written and committed to the
 * engine's index): reserved -> used.
 * @param space the pool
 * @param bytes how much
 * @retval 0 success
 * @retval -EINVAL NULL space, 0 bytes, or reserved smaller than @p bytes
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_space_commit_used(struct srsv_space *space, uint64_t bytes);

/**
 * Bytes freed in the running transaction (overwritten or deleted, still
 * needed until the commit): used -> pinned.
 * @param space the pool
 * @param bytes how much
 * @retval 0 success
 * @retval -EINVAL NULL space, 0 bytes, or used smaller than @p bytes
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_space_pin(struct srsv_space *space, uint64_t bytes);

/**
 * The commit is done: pinned -> free.  Grants waiting tickets.
 * @param space the pool
 * @param bytes how much
 * @retval 0 success
 * @retval -EINVAL NULL space, 0 bytes, or pinned smaller than @p bytes
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_space_unpin(struct srsv_space *space, uint64_t bytes);

/**
 * Add capacity to the pool (a new chunk): total += bytes, clears "full",
 * grants waiting tickets.  The engine also lowers the unallocated figure
 * (srsv_ctx_set_unallocated()) when the capacity came from there.
 * @param space the pool
 * @param bytes how much
 * @retval 0 success
 * @retval -EINVAL NULL space, 0 bytes or overflow
 * @note Thread-safe; meant for the ALLOC_CHUNK states.
 */
SRSV_MUST_CHECK int srsv_space_grow(struct srsv_space *space, uint64_t bytes);

/**
 * Remove read-only capacity from the pool (a block group deleted after
 * being made read-only): readonly -= bytes, total -= bytes.
 * @param space the pool
 * @param bytes how much
 * @retval 0 success
 * @retval -EINVAL NULL space, 0 bytes, or readonly smaller than @p bytes
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_space_shrink(struct srsv_space *space, uint64_t bytes);

/**
 * Make free bytes read-only (free -> readonly).
 * @param space the pool
 * @param bytes how much
 * @param force take them even if that overcommits the pool (btrfs's
 *        force: relocation must go on)
 * @retval 0 success
 * @retval -ENOSPC without @p force, the bytes are not free
 * @retval -EINVAL NULL space or 0 bytes
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_space_set_readonly(struct srsv_space *space, uint64_t bytes,
			    bool force);

/**
 * Make read-only bytes writable again (readonly -> free); grants tickets.
 * @param space the pool
 * @param bytes how much
 * @retval 0 success
 * @retval -EINVAL NULL space, 0 bytes, or readonly smaller than @p bytes
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_space_clear_readonly(struct srsv_space *space, uint64_t bytes);

/**
 * Mark the pool as unable to grow (or able again).  The library also sets
 * it when ALLOC_CHUNK* returns -ENOSPC or -EOPNOTSUPP.
 * @param space the pool
 * @param full new value
 * @retval 0 success
 * @retval -EINVAL NULL space
 * @note Thread-safe.
 */
int srsv_space_set_full(struct srsv_space *space, bool full);

/**
 * The kind of a pool.
 * @param space the pool
 * @return its ::srsv_pool, -EINVAL for NULL
 * @note Thread-safe.
 */
int srsv_space_kind(const struct srsv_space *space);

/**
 * The ctx a pool belongs to.
 * @param space the pool
 * @return its ctx, NULL for NULL
 * @note Thread-safe.
 */
struct srsv_ctx *srsv_space_ctx(const struct srsv_space *space);

/**
 * Flush states srsv_space_info counts (DELAYED_ITEMS_NR .. RECLAIM_ZONES):
 * the struct's layout is fixed, so states added later
 * (::SRSV_STATE_RECLAIM_CHUNKS) are counted by srsv_space_stats() only.
 */
#define SRSV_SPACE_INFO_STATES 14

/** Counters of a pool, from srsv_space_snapshot(). */
struct srsv_space_info {
	/** bytes the library filled (set by srsv_space_snapshot_sized(): see docs/api.md,
	 *  "output structs") */
	size_t size;
	int kind;			/**< ::srsv_pool */
	uint64_t total;			/**< capacity */
	uint64_t used;			/**< referenced */
	uint64_t pinned;		/**< freed in the running transaction */
	uint64_t reserved;		/**< allocated, not yet referenced */
	uint64_t may_use;		/**< outstanding reservations */
	uint64_t readonly;		/**< read-only */
	uint64_t zone_unusable;		/**< unusable until its zone is reset */
	uint64_t reclaim_size;		/**< sum of queued tickets' bytes */
	uint64_t tickets_id;		/**< bumped on every grant */
	unsigned clamp;			/**< preemptive clamp, 1..8 */
	bool full;			/**< cannot grow */
	bool flushing;			/**< an async flusher owns the pool */
	bool force_alloc;		/**< global rsv reached the pool size */
	unsigned nr_tickets;		/**< normal tickets queued */
	unsigned nr_priority_tickets;	/**< priority tickets queued */
	uint64_t unallocated;		/**< ctx's unallocated bytes */
	uint64_t delalloc_bytes;	/**< ctx's delalloc figure */
	uint64_t ordered_bytes;		/**< ctx's ordered figure */
	uint64_t global_rsv_size;	/**< global rsv size (0 if elsewhere) */
	uint64_t global_rsv_reserved;	/**< global rsv reserved */
	uint64_t trans_rsv_reserved;	/**< trans rsv reserved */
	uint64_t delayed_rsv_reserved;	/**< delayed items rsv reserved */
	uint64_t delayed_refs_rsv_reserved; /**< delayed refs rsv reserved */
	uint64_t preempt_runs;		/**< preemptive runs so far */
	uint64_t async_runs;		/**< async flusher runs so far */
	uint64_t flushes[SRSV_SPACE_INFO_STATES]; /**< callback calls per state */
	uint64_t preempt_flushes[SRSV_SPACE_INFO_STATES]; /**< of which preemptive */
	uint64_t tickets_granted;	/**< tickets ended with 0 */
	uint64_t tickets_failed;	/**< tickets ended with an error */
	/** the movers' reserve's size (srsv_config::mover_reserve_bytes) */
	uint64_t mover_rsv_size;
	/** the bytes the movers' reserve holds (counted in @c may_use) */
	uint64_t mover_rsv_reserved;
	/** what the engine says it could free, all states together
	 *  (srsv_space_set_reclaimable(); a sum that saturates at
	 *  UINT64_MAX) */
	uint64_t reclaimable;
};

/** One queued ticket, from srsv_space_snapshot(). */
struct srsv_ticket_info {
	uint64_t bytes;		/**< requested */
	uint64_t age_ns;	/**< time since it was queued */
	int mode;		/**< ::srsv_flush */
	bool priority;		/**< on the priority queue */
};

/**
 * Copy the pool's counters and its queued tickets (priority queue first,
 * each queue in FIFO order), consistently under the pool lock.  Called
 * through the srsv_space_snapshot() macro, which passes the caller's
 * sizeof of both structs: the library fills at most @p info_size bytes of
 * @p info (setting info->size to what it filled) and at most
 * @p ticket_size bytes of each ticket, which are @p ticket_size bytes
 * apart; bytes past that are untouched.
 * @param space the pool
 * @param[out] info counters (required)
 * @param[out] tickets room for @p max tickets, may be NULL if @p max is 0
 * @param max size of @p tickets
 * @param[out] nr_tickets how many tickets are queued (may exceed @p max);
 *        may be NULL
 * @param info_size sizeof(struct srsv_space_info) as the caller knows it
 * @param ticket_size sizeof(struct srsv_ticket_info) as the caller knows it
 * @retval 0 success
 * @retval -EINVAL NULL space or info, NULL tickets with max > 0, or a size
 *         smaller than the first layout of its struct (nothing written)
 * @note Thread-safe; takes the pool lock, allocates nothing.
 */
SRSV_MUST_CHECK int srsv_space_snapshot_sized(struct srsv_space *space,
					      struct srsv_space_info *info,
					      struct srsv_ticket_info *tickets,
					      size_t max, size_t *nr_tickets,
					      size_t info_size,
					      size_t ticket_size);
/** srsv_space_snapshot_sized() with the caller's sizeofs. */
#define srsv_space_snapshot(space, info, tickets, max, nr_tickets) \
	srsv_space_snapshot_sized((space), (info), (tickets), (max), \
				  (nr_tickets), \
				  sizeof(struct srsv_space_info), \
				  sizeof(struct srsv_ticket_info))

/**
 * Calls the library refused because the bytes were not where the caller
 * said, or with arguments it cannot take (btrfs warns and clamps; the
 * library refuses with -EINVAL and counts it here, and fires the trace
 * event "refused").  Index of srsv_space_stats::refused, counted on the
 * pool the call was about: an rsv's pool, a quota kind's pool (DATA for
 * data and used bytes, METADATA for the META kinds), the DATA (or MIXED)
 * pool for the delalloc helper, a group's pool.  A call on a NULL or
 * unknown object has no pool to count on: -EINVAL only.
 */
enum srsv_refusal {
	/** srsv_space_release(): more than may_use holds (a double release) */
	SRSV_REFUSED_RELEASE = 0,
	/** srsv_space_alloc(): more than may_use holds */
	SRSV_REFUSED_ALLOC = 1,
	/** srsv_space_free_reserved(): more than reserved holds */
	SRSV_REFUSED_FREE_RESERVED = 2,
	/** srsv_space_commit_used(): more than reserved holds */
	SRSV_REFUSED_COMMIT_USED = 3,
	/** srsv_space_pin(): more than used holds */
	SRSV_REFUSED_PIN = 4,
	/** srsv_space_unpin(): more than pinned holds */
	SRSV_REFUSED_UNPIN = 5,
	/** srsv_space_shrink(): more than readonly (or total) holds */
	SRSV_REFUSED_SHRINK = 6,
	/** srsv_space_clear_readonly(): more than readonly holds */
	SRSV_REFUSED_CLEAR_READONLY = 7,
	/** srsv_space_grow(): the total would pass ::SRSV_MAX_BYTES */
	SRSV_REFUSED_GROW = 8,
	/** a reserve call with 0 or too many bytes, an unknown mode or flag,
	 *  or a mode this pool kind does not take */
	SRSV_REFUSED_ARGS = 9,
	/** srsv_rsv_release(): more than the rsv's size (a double release) */
	SRSV_REFUSED_RSV_RELEASE = 10,
	/** another rsv call refused: too many bytes, a percentage above 100,
	 *  a migrate to itself or across pools, 0 bytes to
	 *  srsv_rsv_use_fallback(), a standard rsv destroyed */
	SRSV_REFUSED_RSV_ARGS = 11,
	/** srsv_quota_release(), _convert(), _charge_used(), _free_used():
	 *  more than the tenant holds of that kind */
	SRSV_REFUSED_QUOTA_RELEASE = 12,
	/** a quota reserve with an unknown kind or flag or too many bytes, or
	 *  a limit above ::SRSV_MAX_BYTES */
	SRSV_REFUSED_QUOTA_ARGS = 13,
	/** the delalloc helper: a reservation released or finished twice, more
	 *  metadata used than it holds, a completion of one not pending or of
	 *  a ticket not reaped, an unknown mode, a tenant of another ctx, a
	 *  write too large */
	SRSV_REFUSED_DELALLOC = 14,
	/** a block-group call: an extent that is not in the group (more bytes
	 *  than its room or its used bytes, a range across groups), a
	 *  transaction already committed, a group of another pool, a
	 *  reclaim_done() of a group not taken */
	SRSV_REFUSED_BGROUP = 15,
	/** a zone-group call: more written or abandoned than reserved, more
	 *  freed than used, 0 or too many bytes */
	SRSV_REFUSED_ZONE = 16,
	/** srsv_ticket_reserve_async(): flags, or a pool of another ctx than
	 *  the queue's */
	SRSV_REFUSED_ASYNC = 17,
	/** srsv_space_set_reclaimable(), srsv_space_load_used(),
	 *  srsv_space_reserve_partial(): an unknown state, 0 or too many
	 *  bytes, a minimum above the maximum */
	SRSV_REFUSED_POOL_ARGS = 18,
	SRSV_REFUSED_COUNT = 19
};

/** Room for flush modes in srsv_space_stats (fixed: the layout must not
 *  change when a mode is added). */
#define SRSV_STATS_MODES 16
/** Room for flush states in srsv_space_stats, indexed by state value. */
#define SRSV_STATS_STATES 32
/** Room for refusal kinds in srsv_space_stats. */
#define SRSV_STATS_REFUSALS 32
/** Size of srsv_space_stats::nowait_refused (::srsv_nowait_reason). */
#define SRSV_STATS_NOWAIT 8
/** Buckets of a wait histogram (srsv_wait_stats::hist). */
#define SRSV_WAIT_BUCKETS 24

/** The waits of the tickets of one flush mode (srsv_space_stats::modes). */
struct srsv_wait_stats {
	uint64_t tickets;	/**< tickets of this mode that ended */
	uint64_t failed;	/**< of which with an error (incl. timeouts) */
	uint64_t wait_ns;	/**< sum of their waits, queueing to end */
	uint64_t max_wait_ns;	/**< the longest of them */
	/** log2 histogram: [i] counts waits of 2^i to 2^(i+1) - 1
	 *  microseconds; [0] also those under 1 us, the last bucket every
	 *  longer wait (from 2^23 us, about 8.4 s) */
	uint64_t hist[SRSV_WAIT_BUCKETS];
};

/** The engine's work for one flush state (srsv_space_stats::states). */
struct srsv_state_stats {
	uint64_t calls;		/**< callback calls (as srsv_space_info::flushes) */
	uint64_t preempt_calls;	/**< of which by the preemptive flusher */
	uint64_t time_ns;	/**< time spent inside the callback */
	/** the writers' time behind this state: each call's duration times
	 *  the tickets queued on the pool when it began (the per-mode
	 *  wait_ns sums are the same unit: ticket-nanoseconds) */
	uint64_t waited_ns;
	/** bytes the calls made available: the growth of the pool's free
	 *  space across each call plus what tickets were granted meanwhile
	 *  (reservations of other threads during a call make it an
	 *  underestimate) */
	uint64_t bytes_freed;
	uint64_t unsupported;	/**< calls that returned -EOPNOTSUPP */
	/** calls not made: the state is disabled */
	uint64_t skipped;
	/** the callback said -EOPNOTSUPP: the library no longer calls it for
	 *  this pool until srsv_space_enable_state() */
	bool disabled;
};

/**
 * Statistics of a pool, from srsv_space_get_stats(): what the snapshot's
 * counters cannot say, why and for how long writers waited.  Every figure
 * is monotonic (except @c disabled): an engine takes two and subtracts.
 * The struct carries its size, so that fields can be added at its end
 * without breaking programs built against an older header.
 */
struct srsv_space_stats {
	/** bytes the library filled (set by srsv_space_get_stats_sized()) */
	size_t size;
	int kind;			/**< ::srsv_pool */
	uint64_t now_ns;		/**< CLOCK_MONOTONIC at the snapshot */
	/** time during which at least one ticket was queued on the pool,
	 *  the stall in progress included */
	uint64_t stalled_ns;
	/** per ::srsv_flush mode */
	struct srsv_wait_stats modes[SRSV_STATS_MODES];
	/** per ::srsv_flush_state value ([0] unused) */
	struct srsv_state_stats states[SRSV_STATS_STATES];
	/** per ::srsv_refusal */
	uint64_t refused[SRSV_STATS_REFUSALS];
	/* Pacing (srsv_config::pace_start_pct; all 0 when off). */
	/** reservations that slept to be paced */
	uint64_t paced;
	/** total time they slept */
	uint64_t pace_delay_ns;
	/** the longest single pacing delay */
	uint64_t pace_max_delay_ns;
	/** delays cut short: flushing brought the fill below freerun */
	uint64_t pace_eased;
	/** NOWAIT (or zero-timeout) reservations admitted, not slept */
	uint64_t pace_nowait;
	/** the delay those NOWAIT reservations were spared, in total */
	uint64_t pace_nowait_ns;
	/** reclaim bandwidth estimate, bytes/s (0: not measured) */
	uint64_t pace_bw;
	/** reclaimable space / the room it may take, per mille */
	uint64_t pace_fill_pm;
	/* The adaptive clamp of preemptive flushing (srsv_space_info::clamp). */
	/** times the clamp went up: a ticket had to start the async flusher,
	 *  or a paced writer slept first since the pool was below pacing's
	 *  start, while dirty data outgrew writeback */
	uint64_t clamp_raised;
	/** times it came down: a preemptive run needed one loop, or ended
	 *  a second (or more) after the last ticket, paced sleep or clamp
	 *  change, with no ticket queued */
	uint64_t clamp_lowered;
	/** NOWAIT calls on the pool answered -EAGAIN, per
	 *  ::srsv_nowait_reason ([::SRSV_NOWAIT_QUOTA] counts the delalloc
	 *  helper's; a tenant's own are in srsv_quota_info::nowait_refused) */
	uint64_t nowait_refused[SRSV_STATS_NOWAIT];
	/** tickets failed, and reservations refused, with the error of
	 *  srsv_ctx_set_error() */
	uint64_t error_failures;
};

/**
 * Copy the pool's statistics, consistently under the pool lock.  Called
 * through the srsv_space_get_stats() macro, which passes the caller's
 * sizeof: the library fills at most @p size bytes (its own layout's, if
 * smaller) and sets stats->size to what it filled.
 * @param space the pool
 * @param[out] stats the statistics
 * @param size sizeof(struct srsv_space_stats) as the caller knows it
 * @retval 0 success
 * @retval -EINVAL NULL space or stats, or @p size smaller than the first
 *         layout (up to and including @c refused)
 * @note Thread-safe; takes the pool lock, allocates nothing.
 */
SRSV_MUST_CHECK int srsv_space_get_stats_sized(struct srsv_space *space,
					       struct srsv_space_stats *stats,
					       size_t size);
/** srsv_space_get_stats_sized() with the caller's sizeof. */
#define srsv_space_get_stats(space, stats) \
	srsv_space_get_stats_sized((space), (stats), \
				   sizeof(struct srsv_space_stats))

/**
 * Reserve between @p min and @p max bytes: as many as can be had at once
 * without passing a ticket @p mode must respect, at least @p min; when
 * fewer than @p min can, exactly srsv_space_reserve(@p min) (which may
 * wait).  For a cleaner's or compactor's output that can use whatever
 * room there is (bcachefs's BCH_DISK_RESERVATION_PARTIAL, XFS's GREEDY).
 * @param space the pool
 * @param min at least this many (> 0)
 * @param max at most this many (>= @p min)
 * @param mode flush mode, as srsv_space_reserve()
 * @param flags ::srsv_reserve_flags (::SRSV_RESERVE_MOVER takes what the
 *        movers' reserve holds first, then the rest from the pool)
 * @param[out] got the bytes reserved, between @p min and @p max (0 on
 *        failure)
 * @retval 0 reserved *@p got bytes: the caller holds them
 * @retval -EINVAL NULL @p space or @p got, @p min 0 or above @p max, or as
 *         srsv_space_reserve()
 * @retval negative as srsv_space_reserve() for @p min bytes
 * @note Thread-safe.  With ::SRSV_RESERVE_NOWAIT it never blocks.
 */
SRSV_MUST_CHECK int srsv_space_reserve_partial(struct srsv_space *space,
					       uint64_t min, uint64_t max,
					       enum srsv_flush mode,
					       unsigned flags, uint64_t *got);

/**
 * What the engine could free in @p space by flushing @p state: the dead
 * records of a log store's segments (cleaning), the garbage an LSM tree's
 * compaction would drop, the extents of deleted files not yet purged.  The
 * engine sets the figure whenever it changes (a store, not an add); the
 * library counts it, with the pool's pinned bytes, as the pool's
 * reclaimable debt: preemptive flushing of a data pool asks for the state
 * with the most of it, and data pacing counts it as held.  Its bytes stay
 * where the engine counts them (used, pinned): this is a figure, not a
 * transition.
 * @param space the pool
 * @param state the flush state that frees them (COMMIT_TRANS for bytes
 *        that a commit frees beyond the pinned ones (a log store's
 *        cleaning), RUN_DELAYED_IPUTS for objects deleted and not yet
 *        purged, DELALLOC... for writeback that frees space, ...)
 * @param bytes the engine's current figure (0: none)
 * @retval 0 success
 * @retval -EINVAL NULL @p space, @p state not a flush state, or @p bytes
 *         above ::SRSV_MAX_BYTES (counted as refused)
 * @note Thread-safe, lock-free; may be called from flush callbacks.
 */
SRSV_MUST_CHECK int srsv_space_set_reclaimable(struct srsv_space *space,
					       int state, uint64_t bytes);

/**
 * Open an engine on existing data: count @p bytes already on the device
 * as used (btrfs loads each block group's used bytes at mount), without a
 * reservation.  The restart recipe: create the ctx with the pools' sizes,
 * load each pool's live bytes here, srsv_space_pin() what the last state
 * still references but will free (dead records awaiting cleaning), and
 * report the rest of the debt with srsv_space_set_reclaimable()
 * (docs/engines.md, "Restart").
 * @param space the pool
 * @param bytes bytes to count as used
 * @retval 0 success
 * @retval -ENOSPC they do not fit in the pool's free space (nothing changed)
 * @retval -EINVAL NULL @p space, 0 or too many bytes (counted as refused)
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_space_load_used(struct srsv_space *space,
					 uint64_t bytes);

/**
 * Why the calling thread's last NOWAIT call answered -EAGAIN, as errno
 * tells why the last system call failed: a lock was busy (a retry may
 * succeed at once), the pool would have to flush or queue, or a tenant
 * is over its quota (the blocking retry would flush the quota, and may
 * fail with -EDQUOT).  Only -EAGAIN answers of NOWAIT calls set it; it
 * is not reset by calls that succeed.
 * @return a ::srsv_nowait_reason (::SRSV_NOWAIT_NONE before any)
 * @note Thread-safe: each thread has its own.
 */
int srsv_nowait_reason(void);

/**
 * Call the engine for @p state again: the library stops calling a state
 * for a pool once the callback returned -EOPNOTSUPP for it (the engine
 * has no such state; the walk skips it as before, without the call).  An
 * engine that gains the state (a feature switched on at run time) says so
 * here.
 * @param space the pool
 * @param state the state, or 0 for every state
 * @retval 0 success (also when it was not disabled)
 * @retval -EINVAL NULL space, or @p state not a ::srsv_flush_state nor 0
 * @note Thread-safe.
 */
SRSV_MUST_CHECK int srsv_space_enable_state(struct srsv_space *space,
					    int state);

/**
 * Name of a pool kind.
 * @param kind ::srsv_pool
 * @return "data", "metadata", ..., "unknown" otherwise (a static string)
 * @note Thread-safe.
 */
const char *srsv_pool_name(int kind);
/**
 * Name of a flush mode.
 * @param mode ::srsv_flush
 * @return "FLUSH_ALL", ..., "unknown" otherwise (a static string)
 * @note Thread-safe.
 */
const char *srsv_flush_name(int mode);
/**
 * Name of a flush state.
 * @param state ::srsv_flush_state
 * @return "COMMIT_TRANS", ..., "unknown" otherwise (a static string)
 * @note Thread-safe.
 */
const char *srsv_state_name(int state);

#ifdef __cplusplus
}
#endif

#endif /* LIBSPACERSV_SPACE_H */
