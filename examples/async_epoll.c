/* SPDX-License-Identifier: MIT */
/*
 * async_epoll: a small server loop that reserves space asynchronously and
 * never blocks.
 *
 * One thread runs an epoll loop over its clients' sockets and the fd of a
 * libspacersv completion queue (srsv_async_fd()).  Each request asks to
 * store --bytes bytes.  The loop reserves them with
 * srsv_ticket_reserve_async(): when they fit the request is served at
 * once; when they do not, the ticket waits in the pool's FIFO and the loop
 * goes on serving other clients; when the ticket ends, the completion
 * queue's fd becomes readable, the loop reaps it and the ticket's callback
 * (run by srsv_async_reap(), in the loop thread, no library lock held)
 * answers the client.  Nothing in the loop waits for space: no punt
 * thread, no polling of tickets.
 *
 * The "engine" behind it keeps stored bytes dirty until the library asks
 * it to flush (its flush callback runs on the library's worker thread):
 * writing them back takes --flush-us microseconds and gives the bytes back
 * with srsv_space_release(), which grants waiting tickets in FIFO order.
 *
 * Clients are threads on the other end of socket pairs, each sending
 * --requests requests one after the other.  At the end the loop checks that
 * every request was served, that no reservation was lost (the pool holds
 * exactly the dirty bytes, then nothing) and reports how long one turn of
 * the loop took at most (reaping and callbacks included): the loop's
 * answer to "did it block?".
 *
 * Usage: async_epoll [--clients N] [--requests N] [--bytes N]
 *                    [--pool-kib N] [--flush-us N] [--require-wait]
 * Exit status: 0 when every check passed, 1 otherwise.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* clock_gettime(), pwrite() under -std=c11 too */
#endif
#include <errno.h>
#include <getopt.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <libspacersv/spacersv.h>

#define MAX_CLIENTS 64

struct engine {
	pthread_mutex_t lock;
	uint64_t dirty;			/* stored, not written back */
	unsigned flush_us;
	uint64_t flushes;
};

struct client {
	int fd;				/* the server's end */
	int peer;			/* the client thread's end */
	pthread_t thread;
	unsigned requests;
	struct server *srv;
	struct srsv_ticket ticket;	/* the request waiting, if any */
	bool waiting;
	unsigned answered;
};

struct server {
	struct engine eng;
	struct srsv_ctx *ctx;
	struct srsv_space *pool;
	struct srsv_async *q;
	uint64_t bytes;
	unsigned nr_clients;
	struct client clients[MAX_CLIENTS];
	unsigned pending, max_pending;
	uint64_t served_at_once, served_later, failed;
	uint64_t max_turn_ns, turn_ns, turns;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The library's flush callback: write everything dirty back. */
static int engine_flush(struct srsv_space *space, enum srsv_flush_state state,
			uint64_t bytes, bool for_preempt, void *user)
{
	struct engine *eng = user;
	struct timespec io = { 0, 0 };
	uint64_t n;

	(void)bytes; (void)for_preempt;
	if (state == SRSV_STATE_ALLOC_CHUNK ||
	    state == SRSV_STATE_ALLOC_CHUNK_FORCE)
		return -ENOSPC;		/* a fixed device */
	pthread_mutex_lock(&eng->lock);
	n = eng->dirty;
	eng->dirty = 0;
	if (n)
		eng->flushes++;
	pthread_mutex_unlock(&eng->lock);
	if (!n)
		return 0;
	io.tv_nsec = (long)eng->flush_us * 1000;
	nanosleep(&io, NULL);		/* the device */
	return srsv_space_release(space, n);
}

/* A client: one request at a time, each answered before the next. */
static void *client_main(void *arg)
{
	struct client *c = arg;

	for (unsigned i = 0; i < c->requests; i++) {
		char req = 'w', ans;

		if (write(c->peer, &req, 1) != 1 ||
		    read(c->peer, &ans, 1) != 1)
			break;
		/* Refused (-ENOSPC: the flusher found nothing to free while
		 * granted space was on its way to the engine): ask again. */
		if (ans == 'e')
			i--;
	}
	close(c->peer);
	return NULL;
}

/* The request of @c got its space (or failed): store it and answer. */
static void answer(struct server *srv, struct client *c, int result)
{
	char ans = result ? 'e' : 'k';

	if (!result) {
		pthread_mutex_lock(&srv->eng.lock);
		srv->eng.dirty += srv->bytes;
		pthread_mutex_unlock(&srv->eng.lock);
		c->answered++;
	} else {
		srv->failed++;
	}
	/* The socket buffer always has room for one byte per request. */
	if (write(c->fd, &ans, 1) != 1)
		perror("async_epoll: answer");
}

/* srsv_async_reap() runs this in the loop thread, no library lock held. */
static void ticket_done(struct srsv_ticket *t, int result, void *arg)
{
	struct client *c = arg;
	struct server *srv = c->srv;

	(void)t;
	c->waiting = false;
	srv->pending--;
	srv->served_later++;
	answer(srv, c, result);
}

static void on_request(struct server *srv, struct client *c)
{
	int ret;

	/* At once if it fits and nobody waits; else the ticket waits in the
	 * pool's FIFO and ticket_done() answers.  Never blocks. */
	ret = srsv_ticket_reserve_async(srv->q, srv->pool, &c->ticket,
					srv->bytes, SRSV_FLUSH_MAY_WAIT, 0,
					UINT64_MAX, ticket_done, c);
	if (ret == -EINPROGRESS) {
		c->waiting = true;
		if (++srv->pending > srv->max_pending)
			srv->max_pending = srv->pending;
		return;
	}
	srv->served_at_once++;
	answer(srv, c, ret);
}

static int parse(const char *s, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 10);
	return errno || end == s || *end || s[0] == '-' ? -1 : 0;
}

int main(int argc, char **argv)
{
	static struct server srv;
	unsigned long clients = 8, requests = 500, bytes = 64 * 1024,
		      pool_kib = 1024, flush_us = 500;
	struct epoll_event ev, evs[MAX_CLIENTS + 1];
	struct srsv_config cfg;
	struct srsv_space_info info;
	unsigned open_clients;
	int ep, ret, bad = 0;

	static const struct option opts[] = {
		{ "clients", required_argument, NULL, 'c' },
		{ "requests", required_argument, NULL, 'r' },
		{ "bytes", required_argument, NULL, 'b' },
		{ "pool-kib", required_argument, NULL, 'p' },
		{ "flush-us", required_argument, NULL, 'f' },
		{ "require-wait", no_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	static const char usage[] = "usage: async_epoll [--clients N] "
		"[--requests N] [--bytes N] [--pool-kib N] [--flush-us N]\n"
		"                   [--require-wait] [--help] [--version]\n";
	bool require_wait = false;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		unsigned long *v = NULL;

		switch (c) {
		case 'c': v = &clients; break;
		case 'r': v = &requests; break;
		case 'b': v = &bytes; break;
		case 'p': v = &pool_kib; break;
		case 'f': v = &flush_us; break;
		case 'w':
			/* Fail unless some request waited on the queue (the
			 * test's proof that the asynchronous path ran). */
			require_wait = true;
			continue;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case 'V':
			printf("async_epoll (libspacersv) %s\n", srsv_version());
			return 0;
		default:
			break;
		}
		if (!v || parse(optarg, v) || (v != &flush_us && !*v)) {
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fputs(usage, stderr);
		return 2;
	}
	if (clients > MAX_CLIENTS || flush_us > 1000000 ||
	    bytes > pool_kib * 1024) {
		fprintf(stderr, "async_epoll: at most %d clients, 1 s of "
			"flush, requests no larger than the pool\n",
			MAX_CLIENTS);
		return 1;
	}

	pthread_mutex_init(&srv.eng.lock, NULL);
	srv.eng.flush_us = (unsigned)flush_us;
	srv.bytes = bytes;
	srv.nr_clients = (unsigned)clients;
	srsv_config_init(&cfg);
	cfg.flush = engine_flush;
	cfg.user = &srv.eng;
	cfg.pool_bytes[SRSV_POOL_DATA] = pool_kib * 1024;
	cfg.pool_bytes[SRSV_POOL_METADATA] = 4u << 20;
	cfg.pool_bytes[SRSV_POOL_SYSTEM] = 4u << 20;
	ret = srsv_ctx_create(&cfg, &srv.ctx);
	if (ret) {
		fprintf(stderr, "async_epoll: ctx: %s\n", strerror(-ret));
		return 1;
	}
	srv.pool = srsv_ctx_space(srv.ctx, SRSV_POOL_DATA);
	ret = srsv_async_create(srv.ctx, &srv.q);
	if (ret) {
		fprintf(stderr, "async_epoll: queue: %s\n", strerror(-ret));
		return 1;
	}

	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0) {
		perror("async_epoll: epoll_create1");
		return 1;
	}
	ev.events = EPOLLIN;
	ev.data.ptr = NULL;		/* NULL: the completion queue */
	if (epoll_ctl(ep, EPOLL_CTL_ADD, srsv_async_fd(srv.q), &ev)) {
		perror("async_epoll: epoll_ctl");
		return 1;
	}
	for (unsigned i = 0; i < srv.nr_clients; i++) {
		struct client *c = &srv.clients[i];
		int sv[2];

		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
			perror("async_epoll: socketpair");
			return 1;
		}
		c->fd = sv[0];
		c->peer = sv[1];
		c->srv = &srv;
		c->requests = (unsigned)requests;
		fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
		ev.events = EPOLLIN;
		ev.data.ptr = c;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) ||
		    pthread_create(&c->thread, NULL, client_main, c)) {
			perror("async_epoll: client");
			return 1;
		}
	}

	/* The loop: wait for readiness, handle it, never wait for space. */
	open_clients = srv.nr_clients;
	while (open_clients || srv.pending) {
		int n = epoll_wait(ep, evs, MAX_CLIENTS + 1, -1);
		uint64_t t0 = now_ns(), turn;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			perror("async_epoll: epoll_wait");
			return 1;
		}
		for (int i = 0; i < n; i++) {
			struct client *c = evs[i].data.ptr;
			char req[64];
			ssize_t r;

			if (!c) {
				/* Callbacks answer the clients. */
				if (srsv_async_reap(srv.q, NULL, 0) < 0) {
					fprintf(stderr, "async_epoll: "
						"srsv_async_reap failed\n");
					return 1;
				}
				continue;
			}
			/* One request in flight per client (it waits for the
			 * answer): read what is there. */
			while ((r = read(c->fd, req, sizeof(req))) > 0)
				for (ssize_t k = 0; k < r; k++)
					on_request(&srv, c);
			if (r == 0) {
				epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
				open_clients--;
			}
		}
		turn = now_ns() - t0;
		srv.turns++;
		srv.turn_ns += turn;
		if (turn > srv.max_turn_ns)
			srv.max_turn_ns = turn;
	}

	for (unsigned i = 0; i < srv.nr_clients; i++) {
		struct client *c = &srv.clients[i];

		pthread_join(c->thread, NULL);
		close(c->fd);
		if (c->answered != c->requests || c->waiting) {
			fprintf(stderr, "async_epoll: client %u: %u of %u "
				"answered\n", i, c->answered, c->requests);
			bad = 1;
		}
	}
	close(ep);
	/* Everything stored is dirty or written back: nothing lost. */
	if (srsv_space_snapshot(srv.pool, &info, NULL, 0, NULL))
		bad = 1;
	pthread_mutex_lock(&srv.eng.lock);
	if (info.may_use != srv.eng.dirty) {
		fprintf(stderr, "async_epoll: may_use %" PRIu64 " but %" PRIu64
			" dirty\n", info.may_use, srv.eng.dirty);
		bad = 1;
	}
	pthread_mutex_unlock(&srv.eng.lock);
	if (srv.eng.dirty && srsv_space_release(srv.pool, srv.eng.dirty))
		bad = 1;
	if (srsv_space_snapshot(srv.pool, &info, NULL, 0, NULL))
		bad = 1;
	if (info.may_use) {
		fprintf(stderr, "async_epoll: %" PRIu64 " bytes left\n",
			info.may_use);
		bad = 1;
	}
	printf("async_epoll: %u clients x %lu requests of %lu bytes, pool "
	       "%lu KiB\n", srv.nr_clients, requests, bytes, pool_kib);
	printf("served at once: %" PRIu64 ", after waiting on the completion "
	       "queue: %" PRIu64 " (at most %u at once), refused and asked "
	       "again: %" PRIu64 "\n", srv.served_at_once, srv.served_later,
	       srv.max_pending, srv.failed);
	printf("engine write-backs: %" PRIu64 "; loop turns: %" PRIu64
	       ", mean %.1f us, longest %.1f us (preemption included: the "
	       "loop itself never waits for space)\n", srv.eng.flushes,
	       srv.turns, srv.turns ? srv.turn_ns / 1e3 / srv.turns : 0.0,
	       srv.max_turn_ns / 1e3);
	if (require_wait && !srv.served_later) {
		fprintf(stderr, "async_epoll: no request waited\n");
		bad = 1;
	}
	ret = srsv_async_destroy(srv.q);
	srsv_ctx_destroy(srv.ctx);
	if (ret)
		bad = 1;
	printf("check: %s\n", bad ? "FAILED" : "ok");
	return bad;
}
