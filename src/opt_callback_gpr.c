// SPDX-License-Identifier: MIT
/*
 * opt_callback_gpr.c - what a jump-optimized probe's detour calls
 * (the kernel's optimized_callback()).
 *
 * Built with -mgeneral-regs-only and without sanitizers: for probes whose
 * handlers use general registers only, the detour saves no vector state,
 * so nothing on this path may touch a vector register.  The callback sits
 * in section ukp_opt_text, with the claim of a thread's record
 * (grace_gpr.c): a thread in there may not have counted itself yet, so
 * writers prove no thread is (optprobes.c).
 */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "optprobes.h"
#include "trap.h"

/**
 * ukp_opt_callback() - called by a detour (opt_entry.S) with the registers
 * at the probe: run the pre handlers.  Their return value cannot redirect
 * execution on an optimized probe (as in the kernel).
 * @ret_tramp: the return address the detour primes (a kretprobe's entry),
 * or 0.  @gpr: the detour saved no vector state: a probe added since it
 * was built that is not KPROBE_FLAG_GPR_ONLY misses this hit (the point
 * is being unoptimized for it).
 */
UKP_OPT_TEXT void ukp_opt_callback(struct ukp_point *pt, struct pt_regs *regs,
				   uintptr_t ret_tramp, int gpr)
{
	struct ukp_kcb *kcb = ukp_this_kcb();
	unsigned int idx = 0;
	struct ukp_qs_rec *r = ukp_qs_enter(kcb, &idx);
	int saved_errno, *ep = kcb->errno_ptr;

	/* Handlers may call libc: the program's errno is kept (its address,
	 * per thread, is looked up once). */
	if (unlikely(!ep))
		ep = kcb->errno_ptr = &errno;
	saved_errno = *ep;
	instruction_pointer_set(regs, pt->addr);
	kcb->ret_tramp = ret_tramp;
	if (kcb->depth || kcb->internal) {
		if (!kcb->internal)
			ukp_inc_nmissed(pt);
	} else if (!(atomic_load_explicit(&pt->flags, memory_order_relaxed) & UKP_PT_HAS_FAULT)) {
		/* The common case, without fault recovery points. */
		ukp_handler_enter(kcb);
		ukp_for_each_probe(p, pt) {
			if (kprobe_disabled(p) || !p->pre_handler)
				continue;
			if (gpr && !(p->flags & KPROBE_FLAG_GPR_ONLY))
				__atomic_fetch_add(&p->nmissed, 1, __ATOMIC_RELAXED);
			else
				p->pre_handler(p, regs);
		}
		ukp_handler_exit(kcb);
	} else {
		ukp_run_pre_handlers(kcb, pt, regs);
	}
	kcb->ret_tramp = 0;
	*ep = saved_errno;
	ukp_qs_exit(r, idx);
}
