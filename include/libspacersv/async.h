/* SPDX-License-Identifier: MIT */
/**
 * @file async.h
 * Asynchronous reservations: a ticket that waits for space without a
 * thread, and a completion queue an event loop (epoll, libuv, io_uring's
 * IORING_OP_POLL_ADD) can wait on.  Include <libspacersv/spacersv.h>
 * rather than this file.
 *
 * A completion queue (struct srsv_async) owns one eventfd.  A ticket
 * started with srsv_ticket_reserve_async() waits in the pool's queues like
 * any other (strict FIFO, priority tickets first, the same flushing); when
 * it ends, granted or not, it is put on its completion queue and the
 * queue's fd becomes readable.  srsv_async_reap() hands the ended tickets
 * back to the caller (and runs their callbacks, in the reaping thread,
 * with no library lock held).  The fd is readable exactly while ended
 * tickets wait to be reaped (rarely once more after a reap that raced a
 * completion: a reap that finds nothing is harmless).
 */
#ifndef LIBSPACERSV_ASYNC_H
#define LIBSPACERSV_ASYNC_H

#include <libspacersv/types.h>
#include <libspacersv/space.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A completion queue for asynchronous tickets (opaque). */
struct srsv_async;

/**
 * Called by srsv_async_reap() for a ticket that ended: in the thread that
 * reaps, with no library lock held, after the ticket left the library
 * (the callback may reuse or free it, and may call any library function,
 * reservations included).
 * @param ticket the ticket
 * @param result what srsv_ticket_wait() returns for it: 0 granted (the
 *        caller holds the bytes), -ETIMEDOUT, -ECANCELED, -ENOSPC,
 *        -ESHUTDOWN or the error of srsv_ctx_set_error()
 * @param arg the argument given to srsv_ticket_reserve_async()
 */
typedef void (*srsv_async_fn)(struct srsv_ticket *ticket, int result,
			      void *arg);

/**
 * Create a completion queue for tickets of pools of @p ctx.  The first
 * queue of a ctx starts its timer thread (none in ::SRSV_CTX_MANUAL mode,
 * where srsv_ctx_run_pending() expires timed-out tickets).
 * @param ctx the ctx
 * @param[out] out the queue
 * @retval 0 success
 * @retval -EINVAL NULL argument
 * @retval -ESHUTDOWN the ctx is shut down
 * @retval -ENOMEM, -EMFILE, -ENFILE no memory or no file descriptor
 * @retval -EAGAIN the timer thread could not be started
 * @note Thread-safe.  A process may have any number of queues per ctx (one
 * per event-loop thread is the intended use).
 */
SRSV_MUST_CHECK int srsv_async_create(struct srsv_ctx *ctx, struct srsv_async **out);

/**
 * The queue's file descriptor: an eventfd (non-blocking, close-on-exec)
 * that is readable while ended tickets wait to be reaped.  Poll it for
 * POLLIN (epoll, poll, IORING_OP_POLL_ADD); do not read or close it
 * yourself, srsv_async_reap() does the reading.
 * @param q the queue
 * @return the fd, or -EINVAL for NULL
 * @note Thread-safe; the fd lives as long as the queue.
 */
SRSV_MUST_CHECK int srsv_async_fd(const struct srsv_async *q);

/**
 * Start a reservation that completes asynchronously on @p q.
 * Like srsv_ticket_reserve(), it first tries at once; if the bytes cannot
 * be had without waiting it queues @p ticket and returns -EINPROGRESS:
 * the ticket will end (granted, failed, timed out, cancelled or shut
 * down), be put on @p q, and make its fd readable.  Normal modes are
 * served by the async flush workers as for a blocking waiter; the flushing
 * of a priority mode (FLUSH_LIMIT, FLUSH_EVICT, FLUSH_FREE_SPACE_INODE),
 * which a blocking waiter does in its own thread, is done by the pool's
 * async worker (by srsv_ctx_run_pending() in manual mode).
 * @param q the completion queue (of the pool's ctx)
 * @param space the pool
 * @param ticket caller-owned ticket; must stay alive until reaped
 * @param bytes how much
 * @param mode flush mode (::SRSV_FLUSH_MAY_WAIT picks the pool's own)
 * @param flags 0 (::SRSV_RESERVE_NOWAIT is refused: call
 *        srsv_space_reserve() for that)
 * @param timeout_ns deadline from now (UINT64_MAX: none); the ticket ends
 *        with -ETIMEDOUT when still queued then, removed under the pool
 *        lock as a blocking waiter's.  0: never queue: 0 when the bytes
 *        can be had at once, else -ETIMEDOUT at once (nothing posted),
 *        as srsv_space_reserve_timeout() with 0
 * @param fn callback run by srsv_async_reap(), or NULL
 * @param arg its argument
 * @retval 0 granted at once: the ticket is finished, nothing is posted
 * @retval -EINPROGRESS queued: reap it from @p q
 * @retval -EINVAL NULL @p q or @p ticket, a pool of another ctx, flags
 *         other than 0, or as srsv_space_reserve()
 * @retval -EBUSY @p ticket is in flight (queued, posted and not yet
 *         reaped, or a blocking one not yet waited for): left as it is
 * @retval -ETIMEDOUT @p timeout_ns was 0 and the bytes would have to be
 *         waited for: nothing was queued or posted
 * @retval negative as srsv_space_reserve(); the ticket is finished and
 *         nothing is posted
 * @note Thread-safe.  Never waits for space or for flushing: it takes the
 * pool lock for the few instructions of queueing, as a release does.
 */
SRSV_MUST_CHECK int srsv_ticket_reserve_async(struct srsv_async *q, struct srsv_space *space,
			      struct srsv_ticket *ticket, uint64_t bytes,
			      enum srsv_flush mode, unsigned flags,
			      uint64_t timeout_ns, srsv_async_fn fn,
			      void *arg);

/**
 * Take up to @p max ended tickets off @p q, in the order they ended, and
 * run their callbacks.  Clears the fd's readiness first, so that a ticket
 * ending during the call makes it readable again.
 * @param q the queue
 * @param[out] done receives the tickets (may be NULL if @p max is 0 and
 *        only callbacks matter: then every ended ticket is reaped)
 * @param max room in @p done; 0 with @p done NULL: no limit
 * @return the number of tickets reaped (0: none had ended)
 * @retval -EINVAL NULL queue, or NULL @p done with @p max > 0
 * @note Never blocks.  One thread reaps a queue at a time (the caller
 * serialises reaps of one queue); pushes from other threads are
 * lock-free.  After a ticket is reaped srsv_ticket_wait(ticket, 0) returns
 * its result and its memory may be reused.
 */
SRSV_MUST_CHECK int srsv_async_reap(struct srsv_async *q, struct srsv_ticket **done,
		    unsigned max);

/**
 * Cancel an asynchronous ticket of @p q: srsv_ticket_cancel() that also
 * checks the ticket belongs to @p q.  The ticket ends with -ECANCELED and
 * is posted to @p q like any other end.
 * @param q the queue
 * @param ticket the ticket
 * @retval 0 cancelled (reap it)
 * @retval -EALREADY it had already ended (granted, failed, reaped)
 * @retval -EINVAL NULL argument, a never-started ticket, or one that is
 *         queued but not on @p q (another queue, another ctx, or a
 *         blocking ticket of srsv_ticket_reserve())
 * @note Thread-safe as srsv_ticket_cancel(); the ticket memory must be
 * alive, and the check reads what srsv_async_reap() writes, so call it
 * from the reaping thread or before the ticket can be reaped.
 */
int srsv_async_cancel(struct srsv_async *q, struct srsv_ticket *ticket);

/**
 * Destroy an empty queue: closes the fd and frees it.  Touches only the
 * queue, so it may be called before or after srsv_ctx_destroy().
 * @param q the queue (NULL: no-op, 0)
 * @retval 0 destroyed
 * @retval -EBUSY tickets are still queued or not yet reaped (nothing
 *         changed): cancel them, reap, then destroy
 * @note Not to be called concurrently with other calls on @p q.
 */
SRSV_MUST_CHECK int srsv_async_destroy(struct srsv_async *q);

#ifdef __cplusplus
}
#endif

#endif /* LIBSPACERSV_ASYNC_H */
