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
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

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

	bench_call_loop(t->fn, WARMUP * 100, &tm);
	sum = bench_call_loop(t->fn, iters, &tm);
	if (sum != bench_call_sum(iters)) {
		bench_fail(res, "%s returned wrong values", t->variant);
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

void bench_measure_int3(const struct bench_row *row, long iters,
			struct bench_result *res)
{
	struct sigaction sa;
	struct bench_time tm;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = int3_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (libc_sigaction(SIGTRAP, &sa, NULL, res))
		return;
	for (int i = 0; i < WARMUP; i++)
		do_int3();
	bench_time_start(&tm);
	for (long i = 0; i < iters; i++)
		do_int3();
	bench_time_stop(&tm);
	bench_result_set(res, &tm, iters);
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
