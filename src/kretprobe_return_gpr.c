// SPDX-License-Identifier: MIT
/*
 * kretprobe_return_gpr.c - what the return trampoline calls.
 *
 * Built with -mgeneral-regs-only and without sanitizers: when every return
 * handler of the returning call is KPROBE_FLAG_GPR_ONLY the trampoline
 * saves no vector state (the return value may sit in %xmm0), so nothing on
 * this path may touch a vector register.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"
#include "kretprobes.h"
#include "thread_ext.h"
#include "trap.h"

/**
 * ukp_kretprobe_return_needs_xstate() - must the trampoline save the
 * vector state around the return handlers of the call returning with
 * @regs?  Yes unless every one of them is KPROBE_FLAG_GPR_ONLY.
 */
int ukp_kretprobe_return_needs_xstate(struct pt_regs *regs)
{
	uintptr_t slot = regs->sp - sizeof(unsigned long);
	struct ukp_thread_ext *ext = ukp_ext_peek();
	unsigned int idx = ukp_srcu_read_lock();
	int need = !ext;

	for (unsigned int i = ext ? ext->rstack.depth : 0; i && !need; i--) {
		struct ukp_ret_entry *e = &ext->rstack.e[i - 1];
		struct kretprobe *rp;

		if (e->slot < slot)
			continue;	/* skipped by longjmp: no handler */
		if (e->slot > slot)
			break;
		rp = get_kretprobe(e->ri);
		if (rp && rp->handler && !(rp->kp.flags & KPROBE_FLAG_GPR_ONLY))
			need = 1;
	}
	ukp_srcu_read_unlock(idx);
	return need;
}
NOKPROBE_SYMBOL(ukp_kretprobe_return_needs_xstate);

/*
 * Called by the trampoline with the registers at the return.  Runs the
 * return handlers of every kretprobe on this call, newest first, and
 * returns the address to go on at: regs->ip, the real return address unless
 * a handler changed it.
 */
unsigned long ukp_kretprobe_trampoline_handler(struct pt_regs *regs)
{
	uintptr_t slot = regs->sp - sizeof(unsigned long);
	struct ukp_kcb *kcb = ukp_this_kcb();
	struct ukp_thread_ext *ext = ukp_ext_peek();
	struct ukp_rstack *rs = ext ? &ext->rstack : NULL;
	unsigned int idx, i = rs ? rs->depth : 0;
	int saved_errno = errno;
	unsigned long ret;

	while (i && rs->e[i - 1].slot != slot)
		i--;
	if (!i) {
		static const char msg[] =
			"ukprobes: kretprobe return address lost; aborting\n";

		write(2, msg, sizeof(msg) - 1);
		abort();
	}
	/* Entries above the match were jumped over by longjmp. */
	while (rs->depth > i)
		ukp_pool_put(rs->e[--rs->depth].ri);
	ret = (unsigned long)rs->e[i - 1].ri->ret_addr;
	regs->ip = ret;

	idx = ukp_srcu_read_lock();
	while (rs->depth && rs->e[rs->depth - 1].slot == slot) {
		struct kretprobe_instance *ri = rs->e[--rs->depth].ri;
		struct kretprobe *rp = get_kretprobe(ri);

		if (rp && rp->handler) {
			if (kcb->internal) {
				/* ukprobes' own thread: no handler. */
			} else if (kcb->depth) {
				/* Returning inside another probe's handler. */
				__atomic_fetch_add(&rp->nmissed, 1, __ATOMIC_RELAXED);
			} else {
				ukp_handler_enter(kcb);
				rp->handler(ri, regs);
				ukp_handler_exit(kcb);
			}
		}
		ukp_pool_put(ri);
	}
	ukp_srcu_read_unlock(idx);
	errno = saved_errno;
	return regs->ip;
}
NOKPROBE_SYMBOL(ukp_kretprobe_trampoline_handler);
