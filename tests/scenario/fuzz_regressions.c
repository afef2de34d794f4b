/* SPDX-License-Identifier: MIT */
/*
 * fuzz_regressions.c - regression tests for what the differential fuzzer
 * (tests/fuzz/, `make fuzz`) found, each minimized to the instructions
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
 */
#include <criterion/criterion.h>

#include <stdatomic.h>
#include <stdbool.h>

#include <ukprobes.h>
#include "scn_util.h"

extern char fzr_ret[], fzr_ret_p[], fzr_jmp[], fzr_jmp_p[];

typedef long (*fn1_t)(long);

/* Called through volatile pointers, so that calls stay calls. */
static fn1_t volatile f_ret = (fn1_t)fzr_ret;
static fn1_t volatile f_jmp = (fn1_t)fzr_jmp;

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
