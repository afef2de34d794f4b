// SPDX-License-Identifier: MIT
/*
 * handler.c - the agent's probe handlers.
 *
 * They run in signal context (breakpoint probes) or from the return
 * trampoline with the engine's reentry guard held: no malloc, no lock, no
 * stdio.  Everything they touch was allocated before the first probe was
 * armed: the shared counters, the ring pool, the definitions.  The file is
 * built with -mgeneral-regs-only and calls no libc string function, so the
 * handlers use only general registers (the optimized probes' fast path).
 *
 * A thread's first hit claims a ring from the pool in the memory shared
 * with the command (ring.h) with a compare-and-swap; the ring's index lives
 * in initial-exec TLS (no allocation on first access).  The records are
 * binary: the command formats them.  A full ring waits for the command;
 * with no free ring, or when the command does not move, the record is
 * counted, and the stream says where records were lost.
 */
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "fetch.h"
#include "filter.h"

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* The thread's ring: index + 1 into the pool, 0 while it has none. */
static __thread int my_ring __attribute__((tls_model("initial-exec")));
/* The thread's name, read again when comm_gen moves (a thread was
 * renamed: agent.c interposes prctl() and pthread_setname_np()). */
static __thread char my_comm[16] __attribute__((tls_model("initial-exec")));
static __thread unsigned int my_comm_gen __attribute__((tls_model("initial-exec")));
static __thread bool my_is_engine __attribute__((tls_model("initial-exec")));
_Atomic unsigned int comm_gen = 1;
/* Non-zero while agent code runs on this thread: its probe hits (malloc in
 * registration) are not the program's and are not recorded. */
static __thread int my_depth __attribute__((tls_model("initial-exec")));

void agent_enter(void)
{
	my_depth++;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

void agent_leave(void)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	my_depth--;
}

uint64_t agent_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The consumer is another process: shared (not private) futexes. */
void agent_futex_wake(_Atomic unsigned int *w)
{
	atomic_fetch_add_explicit(w, 1, memory_order_release);
	syscall(SYS_futex, (unsigned int *)w, FUTEX_WAKE, 1, NULL, NULL, 0);
}

static void futex_wait_ms(_Atomic uint32_t *w, uint32_t seen, long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT, seen, &ts, NULL, 0);
}

struct uks_ring *agent_ring(int i)
{
	return (struct uks_ring *)((char *)shm + shm->rings_off) + i;
}

char *agent_ring_data(int i)
{
	return (char *)shm + shm->data_off + (size_t)i * shm->ring_size;
}

/* The command cannot be waited for: it is gone, stalled, or --no-wait. */
static bool consumer_unavailable(void)
{
	return atomic_load_explicit(&shm->no_wait, memory_order_relaxed) ||
	       atomic_load_explicit(&shm->consumer_gone, memory_order_relaxed) ||
	       agent_now_ns() - atomic_load(&shm->beat_ns) > UKS_STALL_NS;
}

static int try_claim(uint32_t state)
{
	static _Atomic unsigned int hint;
	unsigned int start = atomic_fetch_add_explicit(&hint, 1, memory_order_relaxed);
	int tid = (int)syscall(SYS_gettid), n = (int)shm->nrings;

	for (int k = 0; k < n; k++) {
		int i = (int)((start + (unsigned int)k) % (unsigned int)n);
		struct uks_ring *r = agent_ring(i);
		uint32_t expect = RING_FREE;

		if (atomic_load_explicit(&r->state, memory_order_relaxed) != RING_FREE)
			continue;
		if (atomic_compare_exchange_strong(&r->state, &expect, RING_CLAIMING)) {
			/* Not getpid(): a probe on it would count a miss here. */
			atomic_store_explicit(&r->pid, (int32_t)syscall(SYS_getpid),
					      memory_order_relaxed);
			atomic_store_explicit(&r->tid, tid, memory_order_relaxed);
			atomic_store_explicit(&r->lost, 0, memory_order_relaxed);
			atomic_store_explicit(&r->kind, state, memory_order_relaxed);
			atomic_store_explicit(&r->state, state, memory_order_release);
			return i;
		}
	}
	return -1;
}

/*
 * A free ring of the pool for this thread (state RING_DATA) or process
 * (RING_META): its index, or -1.  When every ring is taken, the command
 * is asked to give back those of threads that have exited, and waited for
 * as long as it moves.
 */
int agent_claim_ring(uint32_t state)
{
	int i;

	while ((i = try_claim(state)) < 0) {
		uint32_t seen = atomic_load(&shm->rings_freed);

		if (consumer_unavailable())
			return -1;
		atomic_store(&shm->rings_low, 1);
		agent_futex_wake(&shm->consumer_wake);
		i = try_claim(state);
		if (i >= 0)
			break;
		futex_wait_ms(&shm->rings_freed, seen, 100);
	}
	return i;
}

/* Attached again (a new command, new shared memory): the ring every thread
 * remembers is of the old session; the generation tells them. */
static _Atomic unsigned int ring_gen;
static __thread unsigned int my_ring_gen __attribute__((tls_model("initial-exec")));

void agent_rings_new_session(void)
{
	atomic_fetch_add(&ring_gen, 1);
	my_ring = 0;
}

/*
 * After fork(): in the child only the calling thread exists, and the rings
 * it knew are the parent's (shared memory): it claims its own when it next
 * records.
 */
void agent_rings_after_fork(void)
{
	my_ring = 0;
}

/* The calling thread's ring is given back (exec: the new image's threads
 * claim their own); the command frees it once it has read it. */
void agent_ring_retire(void)
{
	if (my_ring) {
		atomic_store(&agent_ring(my_ring - 1)->state, RING_RETIRED);
		my_ring = 0;
	}
}

/* Room for need bytes in ring r whose records are at data: a pointer where
 * to write them (after a filler up to the ring's end if they would not fit
 * before it), or NULL. */
static char *ring_reserve(struct uks_ring *r, char *data, uint32_t need, uint64_t *headp)
{
	uint64_t size = shm->ring_size;
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	uint64_t off = head & (size - 1);
	uint64_t contig = size - off;
	uint64_t avail = size - (head - tail);

	if (contig < need) {
		struct rec *pad;

		if (avail < contig + need)
			return NULL;
		pad = (struct rec *)(data + off);
		pad->size = (uint32_t)contig;
		pad->event = REC_PAD;
		head += contig;
		atomic_store_explicit(&r->head, head, memory_order_release);
		off = 0;
	} else if (avail < need) {
		return NULL;
	}
	*headp = head;
	return data + off;
}

/*
 * Room for need bytes, waiting for the consumer if the ring is full: as
 * long as the command is there and moving, the program waits rather than
 * losing the record (a futex wait: no lock, nothing the program holds).
 */
char *agent_ring_room(struct uks_ring *r, char *data, uint32_t need, uint64_t *headp)
{
	char *p = ring_reserve(r, data, need, headp);

	while (!p) {
		uint32_t seq = atomic_load(&r->tail_seq);

		if (consumer_unavailable())
			return NULL;
		atomic_store(&r->waiting, 1);
		agent_futex_wake(&shm->consumer_wake);
		p = ring_reserve(r, data, need, headp);
		if (p)
			break;
		futex_wait_ms(&r->tail_seq, seq, 100);
		p = ring_reserve(r, data, need, headp);
	}
	return p;
}

/* Publish what was written at head (size bytes); wake the consumer when the
 * ring crosses half full. */
void agent_ring_commit(struct uks_ring *r, uint64_t head, uint32_t size)
{
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	uint64_t nh = head + size, half = shm->ring_size / 2;

	atomic_store_explicit(&r->head, nh, memory_order_release);
	if (nh - tail > half && head - tail <= half)
		agent_futex_wake(&shm->consumer_wake);
}

/*
 * --stack: a copy of the thread's stack from sp up, for the command to
 * unwind (unwind.c).  process_vm_readv() on the own process, page by page
 * (a transfer stops at the first page it cannot read: the stack's top),
 * never a fault.  Returns the bytes written at p.
 */
static uint32_t copy_stack(char *p, struct pt_regs *regs, unsigned long pc)
{
	struct rec_stack *st = (struct rec_stack *)p;
	unsigned long sp = user_stack_pointer(regs);
	struct iovec l[8], r[8];
	int n = 0;
	unsigned long at = sp, end = sp + conf.stack;
	ssize_t got;

	st->pc = pc;
	st->sp = sp;
	st->fp = frame_pointer(regs);
	st->magic = REC_STACK_MAGIC;
	while (at < end && n < 8) {
		unsigned long next = (at & ~4095ul) + 4096;

		if (next > end)
			next = end;
		l[n].iov_base = p + sizeof(*st) + (at - sp);
		l[n].iov_len = next - at;
		r[n].iov_base = (void *)at;
		r[n].iov_len = next - at;
		n++;
		at = next;
	}
	got = syscall(SYS_process_vm_readv, (long)syscall(SYS_getpid), l, (unsigned long)n, r,
		      (unsigned long)n, 0ul);
	st->len = got > 0 ? (uint32_t)got & ~7u : 0;
	return (uint32_t)sizeof(*st) + st->len;
}

static void get_comm(char *comm)
{
	/* PR_GET_NAME writes at most 16 bytes, NUL included. */
	if (prctl(PR_GET_NAME, (unsigned long)comm, 0, 0, 0) != 0)
		comm[0] = '\0';
	comm[15] = '\0';
}

static void hist_add(struct uks_hist *h, int bucket, uint64_t v)
{
	atomic_fetch_add_explicit(&h->b[bucket], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum, v, memory_order_relaxed);
}

static bool signed_type(enum pe_type t)
{
	return t == PE_S8 || t == PE_S16 || t == PE_S32 || t == PE_S64;
}

static void hist_value(struct tev *t, int h, const struct fetch_ctx *ctx)
{
	const struct pe_arg *a = &t->ev.args[(int)t->hist_arg[h]];
	union {
		uint64_t u;
		unsigned char b[8];
	} v;
	int n;
	uint64_t u;

	v.u = 0;
	n = fetch_arg(a, ctx, &v, sizeof(v));
	if (n <= 0)
		return;
	u = v.u;
	if (n < 8)
		u &= (1ull << (8 * n)) - 1;
	if (signed_type(a->type)) {
		int64_t s;

		switch (n) {
		case 1: s = (int8_t)u; break;
		case 2: s = (int16_t)u; break;
		case 4: s = (int32_t)u; break;
		default: s = (int64_t)u; break;
		}
		hist_add(&shm->hist[h], uks_bucket_s(s), (uint64_t)s);
	} else {
		hist_add(&shm->hist[h], uks_bucket_u(u), u);
	}
}

static void emit(struct tev *t, struct pt_regs *regs, int kind, uint64_t ip,
		 uint64_t ret, uint64_t entry_ts, const unsigned long *edata)
{
	struct uks_event *se = uks_ev(shm, t->id);
	struct fetch_ctx ctx;
	char comm[16];
	uint64_t ts, head;
	struct uks_ring *r = NULL;
	struct rec *rec = NULL, *lost_rec = NULL;
	char *p, *end, *data = NULL, *args, *argend;
	uint32_t need;
	uint64_t lost;

	if (!atomic_load_explicit(&tracing, memory_order_relaxed) || my_depth)
		return;
	my_depth++;
	ts = agent_now_ns();
	{
		unsigned int g = atomic_load_explicit(&comm_gen, memory_order_relaxed);

		if (my_comm_gen != g) {
			get_comm(my_comm);
			my_comm_gen = g;
			/* libukprobes's own threads (its optimizer,
			 * "ukprobes-opt") are not the program's. */
			my_is_engine = my_comm[0] == 'u' && my_comm[1] == 'k' &&
				       my_comm[2] == 'p' && my_comm[3] == 'r' &&
				       my_comm[4] == 'o' && my_comm[5] == 'b' &&
				       my_comm[6] == 'e' && my_comm[7] == 's' &&
				       my_comm[8] == '-';
		}
	}
	if (my_is_engine)
		goto out;
	for (int i = 0; i < 16; i++)
		comm[i] = my_comm[i];
	ctx.regs = regs;
	ctx.retval_valid = kind == REC_RETURN;
	ctx.comm = comm;
	ctx.edata = edata;

	/* With a filter the values are fetched into the record first, and
	 * the filter decides on them whether anything is recorded at all. */
	if (conf.events || t->ev.filter) {
		if (my_ring && my_ring_gen != atomic_load_explicit(&ring_gen, memory_order_relaxed))
			my_ring = 0;
		if (!my_ring) {
			int i = agent_claim_ring(RING_DATA);

			if (i < 0) {
				atomic_fetch_add_explicit(&shm->no_buffer, 1, memory_order_relaxed);
				atomic_fetch_add_explicit(&se->dropped, 1, memory_order_relaxed);
				goto out;
			}
			my_ring = i + 1;
			my_ring_gen = atomic_load_explicit(&ring_gen, memory_order_relaxed);
		}
		r = agent_ring(my_ring - 1);
		data = agent_ring_data(my_ring - 1);
		need = t->max_rec;
		lost = atomic_load_explicit(&r->lost, memory_order_relaxed);
		rec = (struct rec *)agent_ring_room(r, data,
						    need + (lost ? (uint32_t)sizeof(*rec) : 0u),
						    &head);
		if (!rec) {
			atomic_fetch_add_explicit(&r->lost, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&shm->drops, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&se->dropped, 1, memory_order_relaxed);
			goto out;
		}
		lost_rec = NULL;
		if (lost) {
			/* Where the lost records would have been. */
			lost_rec = rec;
			rec->size = sizeof(*rec);
			rec->event = 0;
			rec->kind = REC_LOST;
			rec->nargs = 0;
			rec->tid = atomic_load_explicit(&r->tid, memory_order_relaxed);
			rec->cpu = -1;
			rec->ts = ts;
			/* 0 if the command took the count meanwhile (it does
			 * for a thread it believes gone). */
			rec->ip = atomic_exchange_explicit(&r->lost, 0, memory_order_relaxed);
			rec->ret = rec->entry_ts = 0;
			rec++;
		}
		rec->event = (uint16_t)t->id;
		rec->kind = (uint8_t)kind;
		rec->nargs = (uint8_t)t->ev.nargs;
		rec->tid = atomic_load_explicit(&r->tid, memory_order_relaxed);
		rec->cpu = sched_getcpu();
		rec->ts = ts;
		rec->ip = ip;
		rec->ret = ret;
		rec->entry_ts = entry_ts;
		p = (char *)(rec + 1);
		for (int i = 0; i < 16; i++)
			p[i] = comm[i];
		p += 16;
		args = p;
		end = (char *)rec + need;
		for (int i = 0; i < t->ev.nargs; i++) {
			int32_t *used = (int32_t *)p;
			size_t room = (size_t)(end - p) - 8;
			int n;

			if ((size_t)(end - p) < 16) {
				*used = -ENOSPC;
				p += 8;
				continue;
			}
			n = fetch_arg(&t->ev.args[i], &ctx, p + 8, room);
			*used = n;
			p += 8 + REC_ALIGN(n > 0 ? (uint32_t)n : 0u);
		}
		argend = p;
		if (conf.stack)
			p += copy_stack(p, regs, kind == REC_RETURN ? ret : ip);
		rec->size = (uint32_t)REC_ALIGN((uint32_t)(p - (char *)rec));
		if (t->ev.filter && !filter_eval(t->ev.filter, &t->ev, args, argend, comm)) {
			/* Not this one; a loss marked before it stays. */
			if (lost_rec)
				agent_ring_commit(r, head, (uint32_t)((char *)lost_rec -
						  (data + (head & (shm->ring_size - 1)))) +
						  lost_rec->size);
			goto out;
		}
	}

	atomic_fetch_add_explicit(&se->hits, 1, memory_order_relaxed);
	if (t->any_hist)
		for (int h = 0; h < UKS_MAX_HISTS; h++)
			if (t->hist_arg[h] >= 0)
				hist_value(t, h, &ctx);
	if (conf.latency && kind == REC_RETURN && entry_ts && ts >= entry_ts)
		hist_add(&se->lat, uks_bucket_u(ts - entry_ts), ts - entry_ts);
	if (conf.events)
		agent_ring_commit(r, head, (uint32_t)((char *)rec - (data + (head & (shm->ring_size - 1)))) +
				  rec->size);
	else if (lost_rec)
		agent_ring_commit(r, head, (uint32_t)((char *)lost_rec -
				  (data + (head & (shm->ring_size - 1)))) + lost_rec->size);
out:
	my_depth--;
}

int agent_kprobe_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct tev *t = container_of(p, struct probe, u.kp)->t;

	emit(t, regs, REC_ENTRY, (uint64_t)(uintptr_t)p->addr, 0, 0, NULL);
	return 0;
}

/* ri->data: the entry time, then the entry arguments $argN needs. */
int agent_kretprobe_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kretprobe *rp = get_kretprobe(ri);
	struct tev *t;

	/* Not tracing, or the agent's own call: skip it (no return handler). */
	if (!rp || !atomic_load_explicit(&tracing, memory_order_relaxed) || my_depth)
		return 1;
	t = container_of(rp, struct probe, u.rp)->t;
	if (t->ev.nentry_args)
		fetch_save_entry_args(&t->ev, regs, (unsigned long *)(ri->data + 8));
	*(uint64_t *)ri->data = agent_now_ns();
	return 0;
}

int agent_kretprobe_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kretprobe *rp = get_kretprobe(ri);
	struct tev *t;

	if (!rp)
		return 0;
	t = container_of(rp, struct probe, u.rp)->t;
	emit(t, regs, REC_RETURN, container_of(rp, struct probe, u.rp)->func, (uint64_t)(uintptr_t)ri->ret_addr,
	     *(uint64_t *)ri->data, (const unsigned long *)(ri->data + 8));
	return 0;
}
