// SPDX-License-Identifier: MIT
/*
 * consume.c - the command reads the rings (see consume.h).
 *
 * A round: the meta rings first (a process's objects are described before
 * any record that points into them is read), then the data rings up to the
 * head each had when the round began.  FILE.ukp gets each ring's bytes in
 * one writev() (a chunk header and the one or two spans of the ring), with
 * nothing parsed; formats get the records merged by time.  Then the room
 * is given back (tail), a producer waiting for it is woken, and now and
 * then the rings of threads that have exited go back to the pool.
 */
#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "consume.h"
#include "ring.h"
#include "ukp_file.h"

struct cons_src {
	int idx;
	struct uks_ring *r;
	const char *data;
	uint64_t cursor, end;
	int pid;
};

uint64_t ukp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct uks_ring *ring_at(struct uks *shm, int i)
{
	return (struct uks_ring *)((char *)shm + shm->rings_off) + i;
}

static const char *ring_data(struct uks *shm, int i)
{
	return (const char *)shm + shm->data_off + (size_t)i * shm->ring_size;
}

void consumer_init(struct consumer *c, struct uks *shm, struct fmt_ctx *fmt, int ukp_fd)
{
	memset(c, 0, sizeof(*c));
	c->shm = shm;
	c->fmt = fmt;
	c->ukp_fd = ukp_fd;
	c->src = calloc(shm->nrings, sizeof(*c->src));
	if (getenv("UKPROBE_TEST_CONSUMER_SLEEP_MS"))
		c->test_sleep_ms = (unsigned int)atoi(getenv("UKPROBE_TEST_CONSUMER_SLEEP_MS"));
	consumer_beat(c);
}

void consumer_fini(struct consumer *c)
{
	free(c->src);
	c->src = NULL;
}

void consumer_beat(struct consumer *c)
{
	atomic_store(&c->shm->beat_ns, ukp_now_ns());
}

void consumer_close(struct consumer *c)
{
	atomic_store(&c->shm->consumer_gone, 1);
	/* Anybody still waiting for room: stop waiting. */
	for (uint32_t i = 0; i < c->shm->nrings; i++) {
		struct uks_ring *r = ring_at(c->shm, (int)i);

		atomic_fetch_add(&r->tail_seq, 1);
		syscall(SYS_futex, (uint32_t *)&r->tail_seq, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
	}
}

/* ------------------------------------------------------------------------ */
/* Output of the bytes as they are                                          */
/* ------------------------------------------------------------------------ */

static void write_iov(struct consumer *c, struct iovec *iov, int n)
{
	while (n) {
		ssize_t w = writev(c->ukp_fd, iov, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (!c->write_failed)
				atomic_fetch_add(&c->shm->write_errors, 1);
			c->write_failed = true;
			return;
		}
		while (n && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
}

static void ukp_chunk(struct consumer *c, const struct cons_src *s, uint32_t kind)
{
	uint64_t size = c->shm->ring_size;
	uint64_t off = s->cursor & (size - 1), len = s->end - s->cursor;
	uint64_t first = len < size - off ? len : size - off;
	struct ukf_chunk h = {
		.magic = UKF_CHUNK_MAGIC, .type = UKF_RECORDS, .pid = s->pid,
		.tid = atomic_load(&s->r->tid), .kind = kind, .len = len,
	};
	struct iovec iov[3] = {
		{ &h, sizeof(h) },
		{ (void *)(s->data + off), first },
		{ (void *)s->data, len - first },
	};

	write_iov(c, iov, len - first ? 3 : 2);
}

/* ------------------------------------------------------------------------ */
/* A round                                                                   */
/* ------------------------------------------------------------------------ */

static const struct rec *src_peek(struct consumer *c, struct cons_src *s)
{
	while (s->cursor < s->end) {
		const struct rec *r = (const struct rec *)(s->data +
							   (s->cursor & (c->shm->ring_size - 1)));

		if (r->size < sizeof(uint64_t) || r->size > s->end - s->cursor) {
			/* Not a record: give up on the rest of the round. */
			s->cursor = s->end;
			return NULL;
		}
		if (r->event != REC_PAD)
			return r;
		s->cursor += r->size;
	}
	return NULL;
}

static void give_back(struct cons_src *s)
{
	struct uks_ring *r = s->r;

	atomic_store_explicit(&r->tail, s->end, memory_order_release);
	atomic_fetch_add(&r->tail_seq, 1);
	if (atomic_exchange(&r->waiting, 0))
		syscall(SYS_futex, (uint32_t *)&r->tail_seq, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

/* Records lost by ring i's producer that no later record of its marked
 * (it wrote none since, or is gone): marked now. */
static void take_lost(struct consumer *c, int i)
{
	struct uks_ring *r = ring_at(c->shm, i);
	uint64_t n = atomic_exchange(&r->lost, 0);

	if (!n)
		return;
	if (c->ukp_fd >= 0) {
		struct rec h = { .size = sizeof(h), .kind = REC_LOST, .tid = atomic_load(&r->tid),
				 .cpu = -1, .ts = ukp_now_ns(), .ip = n };
		struct ukf_chunk ch = { .magic = UKF_CHUNK_MAGIC, .type = UKF_RECORDS,
					.pid = atomic_load(&r->pid), .tid = h.tid,
					.kind = RING_DATA, .len = sizeof(h) };
		struct iovec iov[2] = { { &ch, sizeof(ch) }, { &h, sizeof(h) } };

		write_iov(c, iov, 2);
	} else {
		fmt_lost(c->fmt, atomic_load(&r->pid), atomic_load(&r->tid), ukp_now_ns(), n);
	}
}

void consumer_final(struct consumer *c)
{
	while (consumer_drain(c))
		;
	for (uint32_t i = 0; i < c->shm->nrings; i++)
		take_lost(c, (int)i);
	if (c->ukp_fd < 0)
		fflush(c->fmt->out);
}

/* The rings of threads (processes, for meta rings) that are gone, once
 * read, and those an exec retired, go back to the pool. */
static void recycle(struct consumer *c)
{
	bool freed = false;

	for (uint32_t i = 0; i < c->shm->nrings; i++) {
		struct uks_ring *r = ring_at(c->shm, (int)i);
		uint32_t st = atomic_load(&r->state);
		int pid = atomic_load(&r->pid), tid = atomic_load(&r->tid);
		bool gone;

		if (st != RING_DATA && st != RING_META && st != RING_RETIRED)
			continue;
		if (atomic_load(&r->head) != atomic_load(&r->tail))
			continue;
		if (st == RING_RETIRED)
			gone = true;
		else if (st == RING_DATA)
			gone = syscall(SYS_tgkill, pid, tid, 0) < 0 && errno == ESRCH;
		else
			gone = kill(pid, 0) < 0 && errno == ESRCH;
		if (gone) {
			take_lost(c, (int)i);
			atomic_store(&r->state, RING_FREE);
			freed = true;
		}
	}
	if (freed) {
		atomic_fetch_add(&c->shm->rings_freed, 1);
		syscall(SYS_futex, (uint32_t *)&c->shm->rings_freed, FUTEX_WAKE, INT32_MAX,
			NULL, NULL, 0);
	}
}

static int collect(struct consumer *c, uint32_t kind)
{
	int n = 0;

	for (uint32_t i = 0; i < c->shm->nrings; i++) {
		struct uks_ring *r = ring_at(c->shm, (int)i);
		uint32_t st = atomic_load_explicit(&r->state, memory_order_acquire);
		struct cons_src *s;

		if (st == RING_FREE || st == RING_CLAIMING || atomic_load(&r->kind) != kind)
			continue;
		s = &c->src[n];
		s->idx = (int)i;
		s->r = r;
		s->data = ring_data(c->shm, (int)i);
		s->end = atomic_load_explicit(&r->head, memory_order_acquire);
		s->cursor = atomic_load_explicit(&r->tail, memory_order_relaxed);
		s->pid = atomic_load(&r->pid);
		if (s->cursor != s->end)
			n++;
	}
	return n;
}

uint64_t consumer_drain(struct consumer *c)
{
	bool raw = c->ukp_fd >= 0;
	uint64_t moved = 0, nb;
	unsigned int k = 0;
	int n;

	if (c->test_sleep_ms) {
		/* Tests: a consumer that cannot keep up (an output that
		 * cannot take the rate). */
		struct timespec d = { c->test_sleep_ms / 1000,
				      (long)(c->test_sleep_ms % 1000) * 1000000L };

		nanosleep(&d, NULL);
	}
	consumer_beat(c);
	/* Meta rings, then data rings, each up to where it was now. */
	n = collect(c, RING_META);
	for (int i = 0; i < n; i++) {
		struct cons_src *s = &c->src[i];
		const struct rec *r;

		moved += s->end - s->cursor;
		if (raw) {
			ukp_chunk(c, s, RING_META);
		} else {
			while ((r = src_peek(c, s))) {
				fmt_record(c->fmt, s->pid, r);
				s->cursor += r->size;
			}
		}
		give_back(s);
	}
	n = collect(c, RING_DATA);
	if (raw) {
		for (int i = 0; i < n; i++) {
			moved += c->src[i].end - c->src[i].cursor;
			ukp_chunk(c, &c->src[i], RING_DATA);
			give_back(&c->src[i]);
		}
	} else if (n) {
		for (int i = 0; i < n; i++)
			moved += c->src[i].end - c->src[i].cursor;
		for (;;) {
			struct cons_src *best = NULL;
			const struct rec *br = NULL;

			for (int i = 0; i < n; i++) {
				const struct rec *r = src_peek(c, &c->src[i]);

				if (r && (!br || r->ts < br->ts)) {
					br = r;
					best = &c->src[i];
				}
			}
			if (!best)
				break;
			fmt_record(c->fmt, best->pid, br);
			best->cursor += br->size;
			if (!(++k & 8191)) {
				/* A long round: room for the producers now. */
				consumer_beat(c);
				for (int i = 0; i < n; i++) {
					uint64_t end = c->src[i].end;

					c->src[i].end = c->src[i].cursor;
					give_back(&c->src[i]);
					c->src[i].end = end;
				}
			}
		}
		for (int i = 0; i < n; i++)
			give_back(&c->src[i]);
	}
	/* Records no ring could take (every ring taken): said where it was
	 * noticed. */
	nb = atomic_load(&c->shm->no_buffer);
	if (nb > c->no_buffer_seen) {
		if (raw)
			ukp_write_lost(c->ukp_fd, 0, nb - c->no_buffer_seen);
		else
			fmt_lost(c->fmt, 0, 0, ukp_now_ns(), nb - c->no_buffer_seen);
		c->no_buffer_seen = nb;
	}
	if (++c->rounds % 32 == 0 || atomic_exchange(&c->shm->rings_low, 0))
		recycle(c);
	if (!raw)
		fflush(c->fmt->out);
	return moved;
}
