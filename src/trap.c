// SPDX-License-Identifier: MIT
/*
 * trap.c - the signal entry: breakpoint hits, single-step completion, faults
 * (kprobe_int3_handler(), kprobe_post_process() and kprobe_fault_handler()
 * in the kernel).
 *
 * Everything here runs in signal context: no lock, no allocation, no libc
 * call but the async-signal-safe ones.  Per-thread state is in initial-exec
 * TLS, which needs no allocation either.
 *
 * While ukprobes' own handler runs, every asynchronous signal is blocked
 * (the kernel runs kprobe handlers with interrupts off), and during a single
 * step they stay blocked in the resumed context until the step's trap, so an
 * interrupting signal handler can never see a half-executed probe.
 */
#include <errno.h>
#include <setjmp.h>
#include <string.h>

#include "internal.h"
#include "arch.h"
#include "trap.h"
#include "grace.h"

__thread struct ukp_kcb ukp_kcb_tls __attribute__((tls_model("initial-exec")));

/* Asynchronous signals, blocked during handlers and steps: all but the
 * synchronous ones (which must reach us) and SIGKILL/SIGSTOP. */
static uint64_t ukp_async_mask;

static uint64_t ukp_sigbit(int sig)
{
	return 1ull << (sig - 1);
}


/*
 * Call one pre or post handler.  When the probe has a fault_handler, a fault
 * inside the handler that the fault_handler accepts returns here through
 * the recovery point, and the hit goes on as if the handler had returned 0.
 */
static int ukp_call_handler(struct ukp_kcb *kcb, struct kprobe *p,
			    struct pt_regs *regs, bool post)
{
	sigjmp_buf env;
	sigjmp_buf *prev = kcb->recover;
	volatile int ret = 0;

	kcb->cur = p;
	if (!p->fault_handler) {
		if (post)
			p->post_handler(p, regs, 0);
		else
			ret = p->pre_handler(p, regs);
		kcb->cur = NULL;
		return ret;
	}
	kcb->recover = &env;
	if (!sigsetjmp(env, 0)) {
		if (post)
			p->post_handler(p, regs, 0);
		else
			ret = p->pre_handler(p, regs);
	}
	kcb->recover = prev;
	kcb->cur = NULL;
	return ret;
}
NOKPROBE_SYMBOL(ukp_call_handler);

/* Pre handlers of every enabled probe at @pt; non-zero when one asks to
 * resume at instruction_pointer(regs) without executing the instruction (as the kernel's
 * aggr_pre_handler stops at the first that returns non-zero). */
int ukp_run_pre_handlers(struct ukp_kcb *kcb, struct ukp_point *pt,
			 struct pt_regs *regs)
{
	int ret = 0;

	ukp_handler_enter(kcb);
	ukp_for_each_probe(p, pt) {
		if (kprobe_disabled(p) || !p->pre_handler)
			continue;
		if (ukp_call_handler(kcb, p, regs, false)) {
			ret = 1;
			break;
		}
	}
	ukp_handler_exit(kcb);
	return ret;
}
NOKPROBE_SYMBOL(ukp_run_pre_handlers);

static void ukp_run_post_handlers_kcb(struct ukp_kcb *kcb, struct ukp_point *pt,
				      struct pt_regs *regs)
{
	ukp_handler_enter(kcb);
	ukp_for_each_probe(p, pt) {
		if (!kprobe_disabled(p) && p->post_handler)
			ukp_call_handler(kcb, p, regs, true);
	}
	ukp_handler_exit(kcb);
}
NOKPROBE_SYMBOL(ukp_run_post_handlers_kcb);

void ukp_inc_nmissed(struct ukp_point *pt)
{
	ukp_for_each_probe(p, pt)
		__atomic_fetch_add(&p->nmissed, 1, __ATOMIC_RELAXED);
}
NOKPROBE_SYMBOL(ukp_inc_nmissed);

/*
 * Execute the probed instruction of @pt on @regs (pre handlers done), then
 * run post handlers now or at the end of a single-step; @uc gets the result.
 */
void ukp_execute_insn(struct ukp_kcb *kcb, struct ukp_point *pt, ucontext_t *uc,
		      struct pt_regs *regs)
{
	uintptr_t step_trap = 0, copy = 0, detour;
	bool need_post;

	need_post = atomic_load_explicit(&pt->flags, memory_order_relaxed) & UKP_PT_HAS_POST;
	/* Being optimized: the region must not be entered past its first
	 * byte any more, so the detour's copy runs it. */
	if (!need_post && (detour = ukp_opt_resume_ip(pt))) {
		instruction_pointer_set(regs, detour);
		arch_regs_to_uc(regs, uc);
		return;
	}
	switch (arch_execute(pt, regs, need_post, &step_trap, &copy)) {
	case ARCH_EXEC_DONE:
		if (need_post)
			ukp_run_post_handlers_kcb(kcb, pt, regs);
		break;
	case ARCH_EXEC_BOOST:
		break;
	case ARCH_EXEC_STEP: {
		uintptr_t slot;
		const struct ukp_slot_info *info = ukp_slot_info_at(copy, &slot);

		kcb->ss_info_valid = info != NULL;
		if (info)
			kcb->ss_info = *info;
		kcb->ss_copy = copy;
		kcb->ss_addr = pt->addr;
		kcb->ss_gen = pt->gen;
		kcb->ss_mask = arch_uc_sigmask(uc);
		kcb->ss_trap = step_trap;
		/* Like the kernel's single-step with interrupts off, except
		 * around a system call, which must stay interruptible (a
		 * signal handler that hits a probe meanwhile ends this step
		 * without its post handlers, never wrongly). */
		if (!arch_step_may_block(pt))
			arch_uc_set_sigmask(uc, kcb->ss_mask | ukp_async_mask);
		break;
	}
	}
	arch_regs_to_uc(regs, uc);
}
NOKPROBE_SYMBOL(ukp_execute_insn);

/*
 * Never resume a thread where a detour's jump is or may soon be (grace.h):
 * a region that got a detour since this thread trapped, or the slot of a
 * probe removed since, whose copy jumps back into such a region.  In the
 * read section that decided where the thread resumes.
 */
static void ukp_resume_redirect(ucontext_t *uc)
{
	uintptr_t to = ukp_opt_redirect(arch_uc_ip(uc));

	if (to)
		arch_uc_set_ip(uc, to);
}
NOKPROBE_SYMBOL(ukp_resume_redirect);

/* A hit of the breakpoint at @pt. */
static void ukp_kprobe_hit(struct ukp_kcb *kcb, struct ukp_point *pt,
			   ucontext_t *uc, uintptr_t bp)
{
	struct pt_regs regs;
	uintptr_t step_trap = 0, copy = 0;
	int redirect;

	arch_regs_from_uc(&regs, uc);
	instruction_pointer_set(&regs, bp);

	if (kcb->depth || kcb->internal) {
		/* Reentered from a handler: run no handlers, count the miss,
		 * still execute the instruction (never by a step, which would
		 * need the post path: boost or emulate).  ukprobes' own thread
		 * runs no handler and misses nothing. */
		if (!kcb->internal)
			ukp_inc_nmissed(pt);
		uintptr_t detour = ukp_opt_resume_ip(pt);

		instruction_pointer_set(&regs, detour ? detour : bp);
		if (!detour)
			arch_execute(pt, &regs, false, &step_trap, &copy);
		arch_regs_to_uc(&regs, uc);
		return;
	}
	/* A step record left by a step that never finished (the stepped
	 * instruction was a sigreturn, or longjmp'ed away from a fault): a new
	 * hit can only come after it, so it is stale. */
	kcb->ss_trap = 0;

	kcb->uc = uc;
	redirect = ukp_run_pre_handlers(kcb, pt, &regs);
	kcb->uc = NULL;
	if (redirect) {
		arch_regs_to_uc(&regs, uc);	/* resume at its ip */
		return;
	}
	ukp_execute_insn(kcb, pt, uc, &regs);
}
NOKPROBE_SYMBOL(ukp_kprobe_hit);

/* The point whose step is recorded, if it is still registered. */
static struct ukp_point *ukp_step_point(const struct ukp_kcb *kcb)
{
	struct ukp_point *pt = ukp_point_lookup(kcb->ss_addr);

	return pt && pt->gen == kcb->ss_gen ? pt : NULL;
}
NOKPROBE_SYMBOL(ukp_step_point);

/* The breakpoint after a single-step copy trapped: finish the hit. */
static void ukp_step_complete(struct ukp_kcb *kcb, ucontext_t *uc)
{
	struct ukp_point *pt;
	struct pt_regs regs;

	/* From what the slot held when the step began (grace.h). */
	arch_regs_from_uc(&regs, uc);
	if (kcb->ss_info_valid)
		arch_step_done(&kcb->ss_info, &regs);
	arch_uc_set_sigmask(uc, kcb->ss_mask);
	kcb->ss_trap = 0;
	pt = ukp_step_point(kcb);
	if (pt)
		ukp_run_post_handlers_kcb(kcb, pt, &regs);
	arch_regs_to_uc(&regs, uc);
}
NOKPROBE_SYMBOL(ukp_step_complete);

static void ukp_sigtrap(int sig, siginfo_t *info, void *ucv)
{
	ucontext_t *uc = ucv;
	struct ukp_kcb *kcb = &ukp_kcb_tls;
	int saved_errno = errno;
	const struct ukp_slot_info *si;
	struct ukp_point *pt;
	uintptr_t bp, slot;
	unsigned int idx;
	bool ours = true;

	if (!arch_trap_is_breakpoint(info, uc)) {
		ukp_chain_signal(sig, info, uc);
		return;
	}
	bp = arch_trap_bp_addr(uc);
	idx = ukp_srcu_read_lock();
	if (kcb->ss_trap && bp == kcb->ss_trap) {
		ukp_step_complete(kcb, uc);
	} else if (ukp_jprobe_return_trap(kcb, uc, bp)) {
		/* jprobe_return(): done */
	} else if ((pt = ukp_point_lookup(bp))) {
		ukp_kprobe_hit(kcb, pt, uc, bp);
	} else if ((si = ukp_slot_info_at(bp, &slot)) &&
		   arch_slot_ip_kind(si, slot, bp) == 2) {
		/* The end of a step nobody recorded (a vfork child finished
		 * it for us): complete it without handlers. */
		struct pt_regs regs;

		arch_regs_from_uc(&regs, uc);
		arch_step_done(si, &regs);
		arch_regs_to_uc(&regs, uc);
	} else if (ukp_bp_retired(bp) && !arch_breakpoint_at(bp)) {
		/* The probe was removed after this thread hit it: execute
		 * the restored instruction.  (Not for any trap without an
		 * int3 behind it: a debugger's, or an "int $3", is the
		 * program's, as it is.) */
		arch_uc_set_ip(uc, bp);
	} else {
		ours = false;
	}
	if (ours)
		ukp_resume_redirect(uc);
	ukp_srcu_read_unlock(idx);
	errno = saved_errno;
	if (!ours)
		ukp_chain_signal(sig, info, uc);
}
NOKPROBE_SYMBOL(ukp_sigtrap);

/* Let the fault handlers of @pt try; true if one handled it. */
static bool ukp_try_fault_handlers(struct ukp_kcb *kcb, struct ukp_point *pt,
				   struct pt_regs *regs, int trapnr)
{
	bool handled = false;

	ukp_handler_enter(kcb);
	ukp_for_each_probe(p, pt) {
		if (!kprobe_disabled(p) && p->fault_handler &&
		    p->fault_handler(p, regs, trapnr)) {
			handled = true;
			break;
		}
	}
	ukp_handler_exit(kcb);
	return handled;
}
NOKPROBE_SYMBOL(ukp_try_fault_handlers);

/*
 * The probed instruction faulted while running out of line (copy at
 * @copy_ip, original at @addr).  The probe's fault_handler may take it;
 * otherwise the program sees the fault at the original address, as the
 * kernel resets the instruction pointer to the probe address.
 */
static bool ukp_insn_fault(struct ukp_kcb *kcb, struct ukp_point *pt,
			   uintptr_t addr, siginfo_t *info, ucontext_t *uc)
{
	uintptr_t copy = arch_uc_ip(uc);
	struct pt_regs regs;

	/* SIGFPE, SIGILL (and a fetch fault) report the instruction's own
	 * address in si_addr: the original's, not the copy's. */
	if ((uintptr_t)info->si_addr - copy < UKP_ARCH_MAX_INSN)
		info->si_addr = (void *)(addr + ((uintptr_t)info->si_addr - copy));

	arch_regs_from_uc(&regs, uc);
	instruction_pointer_set(&regs, addr);
	if (pt && !kcb->depth &&
	    (atomic_load_explicit(&pt->flags, memory_order_relaxed) & UKP_PT_HAS_FAULT) &&
	    ukp_try_fault_handlers(kcb, pt, &regs, arch_uc_trapnr(uc))) {
		arch_regs_to_uc(&regs, uc);
		return true;
	}
	arch_uc_set_ip(uc, addr);
	return false;
}
NOKPROBE_SYMBOL(ukp_insn_fault);

static void ukp_sigfault(int sig, siginfo_t *info, void *ucv)
{
	ucontext_t *uc = ucv;
	struct ukp_kcb *kcb = &ukp_kcb_tls;
	int saved_errno = errno;
	const struct ukp_slot_info *si = NULL;
	uintptr_t ip = arch_uc_ip(uc), slot, orig;
	unsigned int idx;

	if (arch_fixup_exception(uc))
		return;
	idx = ukp_srcu_read_lock();

	/* A fault in a pre/post handler whose probe has a fault_handler. */
	if (kcb->depth && kcb->cur && kcb->cur->fault_handler && kcb->recover) {
		struct kprobe *p = kcb->cur;
		struct pt_regs regs;

		arch_regs_from_uc(&regs, uc);
		__atomic_fetch_add(&p->nmissed, 1, __ATOMIC_RELAXED);
		if (p->fault_handler(p, &regs, arch_uc_trapnr(uc))) {
			ukp_srcu_read_unlock(idx);
			errno = saved_errno;
			siglongjmp(*kcb->recover, 1);
		}
	}

	if (kcb->ss_trap && ip == kcb->ss_copy) {
		/* The single-stepped copy faulted. */
		struct ukp_point *pt = ukp_step_point(kcb);
		uintptr_t addr = kcb->ss_addr;

		kcb->ss_trap = 0;
		arch_uc_set_sigmask(uc, kcb->ss_mask);
		if (ukp_insn_fault(kcb, pt, addr, info, uc))
			goto handled;
	} else if ((si = ukp_slot_info_at(ip, &slot)) &&
		   arch_slot_ip_kind(si, slot, ip) == 1) {
		/* A boosted copy (or an emulation's fall-back copy) faulted. */
		if (ukp_insn_fault(kcb, ukp_point_lookup(si->addr), si->addr, info, uc))
			goto handled;
	} else if (si && arch_opt_translate(si, slot, ip, &orig)) {
		/* An instruction relocated into a detour faulted. */
		if (ukp_insn_fault(kcb, orig == si->addr ? ukp_point_lookup(orig) : NULL,
				   orig, info, uc))
			goto handled;
	}
	ukp_srcu_read_unlock(idx);
	ukp_signals_fault_check(ip);
	errno = saved_errno;
	ukp_chain_signal(sig, info, uc);
	return;
handled:
	ukp_srcu_read_unlock(idx);
	errno = saved_errno;
}
NOKPROBE_SYMBOL(ukp_sigfault);

static const int ukp_fault_signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL };

/**
 * ukp_trap_install() - take SIGTRAP and the fault signals, keeping the
 * program's handlers for chaining.  Caller holds ukp_kprobe_mutex.
 */
int ukp_trap_install(void)
{
	static bool installed;
	sigset_t mask;
	int err;

	if (installed)
		return ukp_signals_verify(false);
	sigfillset(&mask);
	sigdelset(&mask, SIGTRAP);
	for (size_t i = 0; i < ARRAY_SIZE(ukp_fault_signals); i++)
		sigdelset(&mask, ukp_fault_signals[i]);
	sigdelset(&mask, SIGSYS);
	ukp_async_mask = ~0ull;
	ukp_async_mask &= ~ukp_sigbit(SIGTRAP) & ~ukp_sigbit(SIGSYS) &
			  ~ukp_sigbit(SIGKILL) & ~ukp_sigbit(SIGSTOP);
	for (size_t i = 0; i < ARRAY_SIZE(ukp_fault_signals); i++)
		ukp_async_mask &= ~ukp_sigbit(ukp_fault_signals[i]);

	err = ukp_signal_take(SIGTRAP, ukp_sigtrap, &mask);
	for (size_t i = 0; !err && i < ARRAY_SIZE(ukp_fault_signals); i++) {
		err = ukp_signal_take(ukp_fault_signals[i], ukp_sigfault, &mask);
		if (err) {
			while (i--)
				ukp_signal_give_back(ukp_fault_signals[i]);
			ukp_signal_give_back(SIGTRAP);
		}
	}
	if (!err) {
		installed = true;
		ukp_signals_verify(true);
	}
	return err;
}

void ukp_resume_fixup(void *ucv)
{
	unsigned int idx = ukp_srcu_read_lock();

	ukp_resume_redirect(ucv);
	ukp_srcu_read_unlock(idx);
}
NOKPROBE_SYMBOL(ukp_resume_fixup);

/* ukp_intr_note() - see internal.h. */
int ukp_intr_note(void *ucv)
{
	return ukp_intr_push(arch_uc_ip(ucv));
}
NOKPROBE_SYMBOL(ukp_intr_note);
