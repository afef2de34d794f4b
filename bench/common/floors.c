/* SPDX-License-Identifier: MIT */
/*
 * floors.c - what no user-space probe can beat: the bare int3 -> SIGTRAP
 * round trip, the same plus one TF single-step trap, and the unprobed call.
 * None of this needs libukprobes.
 *
 * The SIGTRAP handlers are installed with libc's own sigaction(), looked up
 * in libc.so.6: in a program linked with libukprobes, plain sigaction()
 * resolves to ukprobes' interposer (it chains the program's handlers behind
 * its own), which must not sit in the floor's path.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cpuid.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <ucontext.h>
#include <unistd.h>

#include "harness.h"
#include "targets.h"

#define WARMUP 1000
#define EFLAGS_TF 0x100

const struct bench_target bench_targets[BENCH_NTARGETS] = {
	{ "push_rbp", bench_fn_push_rbp, "push %rbp" },
	{ "endbr64",  bench_fn_endbr64,  "endbr64" },
	{ "riprel",   bench_fn_riprel,   "mov disp32(%rip),%rax" },
	{ "nop5",     bench_fn_nop5,     "nopl 0x0(%rax,%rax,1)" },
};

long bench_call_loop(bench_fn_t fn, long iters, struct bench_time *t)
{
	bench_fn_t volatile fp = fn;
	long sum = 0;

	bench_time_start(t);
	for (long i = 0; i < iters; i++)
		sum += fp(i);
	bench_time_stop(t);
	return sum;
}

void bench_measure_call(const struct bench_row *row, long iters,
			struct bench_result *res)
{
	const struct bench_target *t = row->arg;
	struct bench_time tm;
	long sum;

	if (row->threads > 1) {
		bench_call_threads(t->fn, WARMUP * 100, iters, row->threads,
				   NULL, NULL, res);
		return;
	}
	bench_call_loop(t->fn, WARMUP * 100, &tm);
	sum = bench_call_loop(t->fn, iters, &tm);
	if (sum != bench_call_sum(iters)) {
		bench_fail(res, "%s returned wrong values", t->variant);
		return;
	}
	bench_result_set(res, &tm, iters);
}

/* ------------------------------------------------------------------------ */
/* Threads                                                                   */
/* ------------------------------------------------------------------------ */

struct call_thread {
	pthread_t tid;
	int idx;
	bench_fn_t fn;
	long warmup, iters;
	void (*reset)(void);
	int (*check)(long, char *, size_t);
	pthread_barrier_t *bar;
	struct bench_time tm;
	uint64_t t0, t1;	/* CLOCK_MONOTONIC at the timed loop's ends */
	int ok;
	char why[BENCH_NOTE_MAX];
};

static void *call_thread_main(void *arg)
{
	struct call_thread *c = arg;
	struct bench_time tm;
	long sum;

	sum = bench_call_loop(c->fn, c->warmup, &tm);
	if (sum != bench_call_sum(c->warmup)) {
		snprintf(c->why, sizeof(c->why), "thread %d: warm-up calls "
			 "returned wrong values", c->idx);
		pthread_barrier_wait(c->bar);
		return NULL;
	}
	if (c->reset)
		c->reset();
	pthread_barrier_wait(c->bar);
	c->t0 = bench_clock_ns(CLOCK_MONOTONIC);
	sum = bench_call_loop(c->fn, c->iters, &c->tm);
	c->t1 = bench_clock_ns(CLOCK_MONOTONIC);
	if (sum != bench_call_sum(c->iters)) {
		snprintf(c->why, sizeof(c->why), "thread %d: calls returned "
			 "wrong values", c->idx);
		return NULL;
	}
	if (c->check && c->check(c->iters, c->why, sizeof(c->why)))
		return NULL;
	c->ok = 1;
	return NULL;
}

/* How much @n threads ran side by side: their CPU time over the span from
 * the first start to the last end (n: all the time; 1: they took turns, as
 * on a machine whose other jobs hold the other CPUs). */
static double parallelism(uint64_t cpu_sum, uint64_t first, uint64_t last)
{
	return last > first ? (double)cpu_sum / (double)(last - first) : 0;
}

/* A 2-thread row is about threads hitting at once: an attempt in which they
 * mostly took turns is done again, up to THREAD_TRIES times, and the one
 * that ran most side by side is kept (its note says so if still little). */
#define THREAD_TRIES 4

static void note_parallelism(struct bench_result *res, int nthreads, double par,
			     int tries)
{
	if (nthreads > 1 && par < nthreads - 0.25)
		bench_note(res, "threads side by side only %.2gx after %d tries",
			   floor(par * 4 + 0.5) / 4, tries);
}

/* One attempt: 0 and the figures in *cpu, *wall, *par; or -1, res failed. */
static int call_threads_once(bench_fn_t fn, long warmup, long iters,
			     int nthreads, void (*reset)(void),
			     int (*check)(long, char *, size_t),
			     struct bench_result *res, double *cpu,
			     double *wall, double *par)
{
	struct call_thread c[64];
	pthread_barrier_t bar;
	uint64_t first = UINT64_MAX, last = 0, cpu_sum = 0;
	int started = 1;

	pthread_barrier_init(&bar, NULL, (unsigned)nthreads);
	memset(c, 0, sizeof(c));
	for (int i = 0; i < nthreads; i++)
		c[i] = (struct call_thread){ .idx = i, .fn = fn, .warmup = warmup,
			.iters = iters, .reset = reset, .check = check,
			.bar = &bar };
	for (int i = 1; i < nthreads; i++) {
		int err = pthread_create(&c[i].tid, NULL, call_thread_main, &c[i]);

		if (err) {
			/* The barrier would never open: give up whole. */
			bench_fail(res, "pthread_create: %s", strerror(err));
			_exit(1);
		}
		started++;
	}
	call_thread_main(&c[0]);
	for (int i = 1; i < started; i++)
		pthread_join(c[i].tid, NULL);
	pthread_barrier_destroy(&bar);
	*cpu = *wall = 0;
	for (int i = 0; i < nthreads; i++) {
		if (!c[i].ok) {
			bench_fail(res, "%s", c[i].why[0] ? c[i].why :
				   "a thread failed");
			return -1;
		}
		*cpu += (double)c[i].tm.cpu_ns / (double)iters / nthreads;
		*wall += (double)c[i].tm.wall_ns / (double)iters / nthreads;
		cpu_sum += c[i].tm.cpu_ns;
		first = c[i].t0 < first ? c[i].t0 : first;
		last = c[i].t1 > last ? c[i].t1 : last;
	}
	*par = parallelism(cpu_sum, first, last);
	return 0;
}

int bench_call_threads_tries;

int bench_call_threads(bench_fn_t fn, long warmup, long iters, int nthreads,
		       void (*reset)(void),
		       int (*check)(long iters, char *why, size_t len),
		       struct bench_result *res)
{
	double cpu, wall, par, best = -1;
	int tries = 0;

	if (nthreads < 1 || nthreads > 64) {
		bench_fail(res, "bad thread count %d", nthreads);
		return -1;
	}
	do {
		if (call_threads_once(fn, warmup, iters, nthreads, reset, check,
				      res, &cpu, &wall, &par))
			return -1;
		tries++;
		bench_call_threads_tries = tries;
		if (par > best) {
			best = par;
			res->ns_per_op = cpu;
			res->wall_ns_per_op = wall;
		}
	} while (nthreads > 1 && best < nthreads - 0.25 && tries < THREAD_TRIES);
	res->ok = 1;
	note_parallelism(res, nthreads, best, tries);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Detour floors: save/call/restore                                          */
/* ------------------------------------------------------------------------ */

unsigned long bench_xsave_size = 4096;

void bench_empty_handler(void *p, void *regs)
{
	(void)p, (void)regs;
	asm volatile("" ::: "memory");
}

int bench_xsave_init(char *why, unsigned long len)
{
	unsigned int a, b, c, d;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE)) {
		snprintf(why, len, "no OSXSAVE (CPUID.1:ECX.27)");
		return -1;
	}
	if (__get_cpuid_max(0, NULL) < 0xd) {
		snprintf(why, len, "no CPUID leaf 0xd");
		return -1;
	}
	__cpuid_count(0xd, 1, a, b, c, d);
	if (!(a & (1u << 1))) {
		snprintf(why, len, "no xsavec (CPUID.(0xd,1):EAX.1)");
		return -1;
	}
	/* EBX of sub-leaf 0: the standard-format size for what XCR0 enables,
	 * never smaller than the compacted one. */
	__cpuid_count(0xd, 0, a, b, c, d);
	bench_xsave_size = b + 64;
	return 0;
}

void bench_measure_floor_fn(const struct bench_row *row, long iters,
			    struct bench_result *res)
{
	bench_fn_t fn = (bench_fn_t)row->arg;
	struct bench_time tm;
	char why[BENCH_NOTE_MAX];

	if (fn == bench_fn_xsave) {
		if (bench_xsave_init(why, sizeof(why))) {
			bench_fail(res, "%s", why);
			return;
		}
		bench_note(res, "xsave area %lu bytes", bench_xsave_size - 64);
	}
	bench_call_loop(fn, WARMUP * 10, &tm);
	if (bench_call_loop(fn, iters, &tm) != bench_call_sum(iters)) {
		bench_fail(res, "wrong return values");
		return;
	}
	bench_result_set(res, &tm, iters);
}

/* ------------------------------------------------------------------------ */
/* SIGTRAP floors                                                            */
/* ------------------------------------------------------------------------ */

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

/* libc's sigaction, not an interposer's. */
static int libc_sigaction(int sig, const struct sigaction *act,
			  struct sigaction *old, struct bench_result *res)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	sigaction_fn fn = libc ? (sigaction_fn)dlsym(libc, "sigaction") : NULL;
	struct sigaction prev;

	if (!fn) {
		bench_fail(res, "sigaction not found in libc.so.6: %s", dlerror());
		return -1;
	}
	if (fn(sig, act, &prev) < 0) {
		bench_fail(res, "sigaction: %s", strerror(errno));
		return -1;
	}
	if (prev.sa_handler != SIG_DFL)
		bench_note(res, "replaced a SIGTRAP handler already installed");
	if (old)
		*old = prev;
	return 0;
}

static void int3_handler(int sig, siginfo_t *si, void *uc)
{
	/* The int3 trap leaves rip after the int3: returning continues. */
	(void)sig, (void)si, (void)uc;
}

static inline void do_int3(void)
{
	asm volatile("int3" ::: "memory");
}

struct int3_thread {
	pthread_t tid;
	long iters;
	pthread_barrier_t *bar;
	struct bench_time tm;
	uint64_t t0, t1;
};

static void *int3_thread_main(void *arg)
{
	struct int3_thread *c = arg;

	for (int i = 0; i < WARMUP; i++)
		do_int3();
	pthread_barrier_wait(c->bar);
	c->t0 = bench_clock_ns(CLOCK_MONOTONIC);
	bench_time_start(&c->tm);
	for (long i = 0; i < c->iters; i++)
		do_int3();
	bench_time_stop(&c->tm);
	c->t1 = bench_clock_ns(CLOCK_MONOTONIC);
	return NULL;
}

/* row->threads threads trapping at once (each its own int3): the kernel's
 * signal delivery takes the process's sighand lock, shared by them. */
void bench_measure_int3(const struct bench_row *row, long iters,
			struct bench_result *res)
{
	struct sigaction sa;
	struct int3_thread c[64];
	pthread_barrier_t bar;
	int n = row->threads > 1 ? row->threads : 1, tries = 0;
	double best = -1;

	if (n > 64) {
		bench_fail(res, "too many threads");
		return;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = int3_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (libc_sigaction(SIGTRAP, &sa, NULL, res))
		return;
	do {
		double cpu = 0, wall = 0, par;
		uint64_t first = UINT64_MAX, last = 0, cpu_sum = 0;

		pthread_barrier_init(&bar, NULL, (unsigned)n);
		memset(c, 0, sizeof(c));
		for (int i = 0; i < n; i++) {
			c[i].iters = iters;
			c[i].bar = &bar;
		}
		for (int i = 1; i < n; i++)
			if (pthread_create(&c[i].tid, NULL, int3_thread_main,
					   &c[i])) {
				bench_fail(res, "pthread_create failed");
				_exit(1);
			}
		int3_thread_main(&c[0]);
		for (int i = 1; i < n; i++)
			pthread_join(c[i].tid, NULL);
		pthread_barrier_destroy(&bar);
		for (int i = 0; i < n; i++) {
			cpu += (double)c[i].tm.cpu_ns / (double)iters / n;
			wall += (double)c[i].tm.wall_ns / (double)iters / n;
			cpu_sum += c[i].tm.cpu_ns;
			first = c[i].t0 < first ? c[i].t0 : first;
			last = c[i].t1 > last ? c[i].t1 : last;
		}
		par = parallelism(cpu_sum, first, last);
		tries++;
		if (par > best) {
			best = par;
			res->ns_per_op = cpu;
			res->wall_ns_per_op = wall;
		}
	} while (n > 1 && best < n - 0.25 && tries < THREAD_TRIES);
	res->ok = 1;
	note_parallelism(res, n, best, tries);
}

static volatile unsigned long tf_steps, tf_breaks, tf_odd;
static volatile int tf_odd_code;

/* Two traps per iteration: the int3 (si_code SI_KERNEL) sets TF in the
 * saved flags; the instruction after it then ends in a debug trap (si_code
 * TRAP_TRACE) whose handler clears TF.  The step is told apart by TF in the
 * saved flags, not by si_code: on this VM about one step in 300,000 arrives
 * with si_code TRAP_BRKPT (DR6.BS lost), at the right ip.  Such traps are
 * counted and reported in the row's note. */
static void tf_handler(int sig, siginfo_t *si, void *vuc)
{
	ucontext_t *uc = vuc;
	greg_t *flags = &uc->uc_mcontext.gregs[REG_EFL];

	(void)sig;
	if (*flags & EFLAGS_TF) {
		*flags &= ~(greg_t)EFLAGS_TF;
		tf_steps++;
		if (si->si_code != TRAP_TRACE) {
			tf_odd++;
			tf_odd_code = si->si_code;
		}
	} else {
		*flags |= EFLAGS_TF;
		tf_breaks++;
		if (si->si_code != SI_KERNEL) {
			tf_odd++;
			tf_odd_code = si->si_code;
		}
	}
}

static inline void do_int3_step(void)
{
	asm volatile("int3\n\tnop" ::: "memory");
}

void bench_measure_int3_tf(const struct bench_row *row, long iters,
			   struct bench_result *res)
{
	struct sigaction sa;
	struct bench_time tm;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = tf_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (libc_sigaction(SIGTRAP, &sa, NULL, res))
		return;
	for (int i = 0; i < WARMUP; i++)
		do_int3_step();
	tf_steps = tf_breaks = tf_odd = 0;
	bench_time_start(&tm);
	for (long i = 0; i < iters; i++)
		do_int3_step();
	bench_time_stop(&tm);
	if (tf_breaks != (unsigned long)iters || tf_steps != (unsigned long)iters) {
		bench_fail(res, "for %ld iterations: %lu int3 traps, %lu TF steps",
			   iters, tf_breaks, tf_steps);
		return;
	}
	if (tf_odd)
		bench_note(res, "%lu of %ld traps had an unexpected si_code "
			   "(last %d; TRAP_BRKPT = %d, TRAP_TRACE = %d)", tf_odd,
			   2 * iters, tf_odd_code, TRAP_BRKPT, TRAP_TRACE);
	bench_result_set(res, &tm, iters);
}
