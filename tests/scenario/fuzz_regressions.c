/* SPDX-License-Identifier: MIT */
/*
 * fuzz_regressions.c - regression tests for what the differential fuzzer
 * (tests/arch/x86_64/fuzz/, `make fuzz`) found, each minimized to the instructions
 * that show it (targets in fuzz_regressions.S).
 *
 *   region_ends_at_ret, region_ends_at_jmp: a jump-optimized region must
 *   not run on past a ret or an unconditional jmp.  What follows one is
 *   entered only by a branch; the optimizer checks the direct branches of
 *   the function, but a call through a pointer to a local label (or a C++
 *   landing pad the unwinder jumps to, or a longjmp) is invisible to it,
 *   and would land in the middle of the 5-byte jmp.  Found by the fuzzer
 *   as a SIGSEGV/SIGILL in mode opt-sparse with a probe on a subroutine's
 *   ret followed by another subroutine called indirectly.
 *
 *   handler_resumes_inside_region_being_optimized: a program's own fault
 *   handler that skips the faulting instruction resumes its thread past
 *   the first byte of a region.  While the optimizer writes the jmp (its
 *   displacement first, then the opcode) the region's bytes are neither
 *   the old nor the new code: ukprobes moves such a resume point into the
 *   detour's copy, but did so only once the probe was fully optimized.
 *   Found by the fuzzer (mode opt-flip): SIGILL at an instruction the
 *   handler resumed to, or an extra fault.
 */
#include "../support/ukp_test.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <ucontext.h>

#include <ukprobes.h>
#include "scn_util.h"

extern char fzr_ret[], fzr_ret_p[], fzr_jmp[], fzr_jmp_p[];
extern char fzr_skip[], fzr_skip_f[], fzr_skip_p[], fzr_skip_mid[];

typedef long (*fn1_t)(long);

/* Called through volatile pointers, so that calls stay calls. */
static fn1_t volatile f_ret = (fn1_t)fzr_ret;
static fn1_t volatile f_jmp = (fn1_t)fzr_jmp;
static long (*volatile f_skip)(long *, long) = (long (*)(long *, long))fzr_skip;

static atomic_ulong hits;

static int count_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add_explicit(&hits, 1, memory_order_relaxed);
	return 0;
}

/* Register a probe at @addr, let the optimizer decide, then call @f
 * @n times: every call must return x + @add and hit the probe once. */
static void probe_and_call(void *addr, fn1_t f, long add, const char *what)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)addr, .pre_handler = count_pre };
	const long n = 1000;

	atomic_store(&hits, 0);
	cr_assert_eq(register_kprobe(&kp), 0, "%s: register", what);
	cr_expect_eq(ukprobes_wait_optimizer(), 0, "%s: probes left waiting", what);
	for (long i = 0; i < n; i++)
		cr_assert_eq(f(i), i + add, "%s: call %ld", what, i);
	cr_expect_eq(atomic_load(&hits), (unsigned long)n, "%s: hits", what);
	/* The region would run past the transfer: not optimized. */
	cr_expect(!(kp.flags & KPROBE_FLAG_OPTIMIZED), "%s: optimized", what);
	unregister_kprobe(&kp);
	for (long i = 0; i < 10; i++)
		cr_assert_eq(f(i), i + add, "%s: after unregister", what);
}

Test(fuzz_regressions, region_ends_at_ret, .timeout = 30)
{
	probe_and_call(fzr_ret_p, f_ret, 3, "ret then an indirectly called block");
}

Test(fuzz_regressions, region_ends_at_jmp, .timeout = 30)
{
	probe_and_call(fzr_jmp_p, f_jmp, 5, "jmp then a block reached indirectly");
}

/* The program's SIGSEGV handler: do the work of the faulting load and
 * the lea after it, and resume after them, inside the probe's region. */
static atomic_ulong skipped, bad_faults;

/* Optimization passes while the thread runs: with the fix undone (the
 * redirect only for OPTIMIZED probes), 100 passes crashed 12 runs of 12. */
#ifndef FZR_PASSES
#define FZR_PASSES 300
#endif

static void skip_load(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	greg_t *g = uc->uc_mcontext.gregs;

	if (g[REG_RIP] != (greg_t)fzr_skip_f) {
		atomic_fetch_add(&bad_faults, 1);
		signal(SIGSEGV, SIG_DFL);	/* let it crash where it is */
		return;
	}
	g[REG_RAX] = g[REG_RSI] + 7;
	g[REG_RIP] = (greg_t)fzr_skip_mid;
	atomic_fetch_add(&skipped, 1);
}

static atomic_bool flip_stop;
static atomic_ulong passes;

/* Unoptimize and optimize again, over and over: each pass writes the jmp. */
static void *flip_optimization(void *arg)
{
	(void)arg;
	while (!atomic_load(&flip_stop)) {
		ukprobes_set_optimization(0);
		ukprobes_set_optimization(1);
		ukprobes_wait_optimizer();
		atomic_fetch_add(&passes, 1);
	}
	return NULL;
}

Test(fuzz_regressions, handler_resumes_inside_region_being_optimized, .timeout = 120)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)fzr_skip_p, .pre_handler = count_pre };
	struct sigaction sa;
	unsigned long wrong = 0;
	long *bad = (long *)16;
	const unsigned long npasses = FZR_PASSES;
	long n = 0;
	pthread_t th;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = skip_load;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGSEGV, &sa, NULL), 0);
	atomic_store(&hits, 0);
	cr_assert_eq(register_kprobe(&kp), 0);
	ukprobes_wait_optimizer();
	cr_expect(kp.flags & KPROBE_FLAG_OPTIMIZED, "the region is not optimized");
	cr_assert_eq(pthread_create(&th, NULL, flip_optimization, NULL), 0);
	while (atomic_load(&passes) < npasses) {
		wrong += f_skip(bad, n) != n + 8;
		n++;
	}
	atomic_store(&flip_stop, true);
	pthread_join(th, NULL);
	unregister_kprobe(&kp);
	cr_expect_eq(wrong, 0, "%lu of %ld calls returned a wrong value", wrong, n);
	cr_expect_eq(atomic_load(&bad_faults), 0);
	cr_expect_eq(atomic_load(&skipped), (unsigned long)n);
	cr_expect_eq(atomic_load(&hits), 0, "the probe's instruction never runs");
	cr_expect_gt(n, (long)npasses, "only %ld calls", n);
}
