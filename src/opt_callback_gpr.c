// SPDX-License-Identifier: MIT
/*
 * opt_callback_gpr.c - what a jump-optimized probe's detour calls
 * (the kernel's optimized_callback()).
 *
 * Built with -mgeneral-regs-only and without sanitizers: for probes whose
 * handlers use general registers only, the detour saves no vector state,
 * so nothing on this path may touch a vector register.  The callback and
 * the claim of a thread's record sit in section ukp_opt_text: a thread in
 * there may not have counted itself yet, so writers prove no thread is
 * (optprobes.c).
 */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "optprobes.h"
#include "trap.h"

struct ukp_qs_rec *_Atomic ukp_qs_recs;

#define UKP_OPT_TEXT __attribute__((section("ukp_opt_text"), noinline))

UKP_OPT_TEXT static struct ukp_qs_rec *ukp_qs_claim(void)
{
	struct ukp_qs_rec *recs = atomic_load_explicit(&ukp_qs_recs, memory_order_acquire);
	int tid = (int)syscall(SYS_gettid);

	if (!recs)
		return NULL;
	for (unsigned int i = 0; i < UKP_QS_MAX; i++) {
		struct ukp_qs_rec *r = &recs[((unsigned int)tid + i) % UKP_QS_MAX];
		int zero = 0;

		if (atomic_compare_exchange_strong(&r->tid, &zero, tid))
			return r;
	}
	return NULL;	/* full: this thread uses the shared counters */
}

/**
 * ukp_opt_callback() - called by a detour (opt_entry.S) with the registers
 * at the probe: run the pre handlers.  Their return value cannot redirect
 * execution on an optimized probe (as in the kernel).
 */
UKP_OPT_TEXT void ukp_opt_callback(struct ukp_point *pt, struct pt_regs *regs)
{
	struct ukp_kcb *kcb = ukp_this_kcb();
	struct ukp_qs_rec *r = kcb->qs;
	unsigned int idx = 0;
	int saved_errno, *ep = kcb->errno_ptr;

	if (unlikely(!r))
		r = kcb->qs = ukp_qs_claim();
	if (likely(r)) {
		r->nest++;
		__asm__ volatile("" ::: "memory");
	} else {
		idx = ukp_srcu_read_lock();
	}
	/* Handlers may call libc: the program's errno is kept (its address,
	 * per thread, is looked up once). */
	if (unlikely(!ep))
		ep = kcb->errno_ptr = &errno;
	saved_errno = *ep;
	regs->ip = pt->addr;
	if (kcb->depth || kcb->internal) {
		if (!kcb->internal)
			ukp_inc_nmissed(pt);
	} else if (!(atomic_load_explicit(&pt->flags, memory_order_relaxed) & UKP_PT_HAS_FAULT)) {
		/* The common case, without fault recovery points. */
		ukp_handler_enter(kcb);
		for (struct kprobe *p = atomic_load_explicit(&pt->probes, memory_order_acquire);
		     p; p = __atomic_load_n(&p->ukp_next, __ATOMIC_ACQUIRE))
			if (!kprobe_disabled(p) && p->pre_handler)
				p->pre_handler(p, regs);
		ukp_handler_exit(kcb);
	} else {
		ukp_run_pre_handlers(kcb, pt, regs);
	}
	*ep = saved_errno;
	if (likely(r)) {
		__asm__ volatile("" ::: "memory");
		r->nest--;
	} else {
		ukp_srcu_read_unlock(idx);
	}
}

/* After fork(): this thread's record was cleared with all the others. */
void ukp_opt_forget_thread_record(void)
{
	ukp_this_kcb()->qs = NULL;
}

/**
 * ukp_qs_enter() - open a read section of the cheap grace period on this
 * thread (its record's count; the shared SRCU counters if it has none).
 * Returns the record, or NULL with *@srcu set.  GPR-only paths use it.
 */
struct ukp_qs_rec *ukp_qs_enter(unsigned int *srcu)
{
	struct ukp_kcb *kcb = ukp_this_kcb();
	struct ukp_qs_rec *r = kcb->qs;

	if (unlikely(!r))
		r = kcb->qs = ukp_qs_claim();
	if (likely(r)) {
		r->nest++;
		__asm__ volatile("" ::: "memory");
	} else {
		*srcu = ukp_srcu_read_lock();
	}
	return r;
}
NOKPROBE_SYMBOL(ukp_qs_enter);

void ukp_qs_exit(struct ukp_qs_rec *r, unsigned int srcu)
{
	if (likely(r)) {
		__asm__ volatile("" ::: "memory");
		r->nest--;
	} else {
		ukp_srcu_read_unlock(srcu);
	}
}
NOKPROBE_SYMBOL(ukp_qs_exit);
