/* SPDX-License-Identifier: MIT */
/*
 * signals.c - faults and the program's own signal handlers with probes in
 * place.  A fault of a probed instruction goes to the probe's fault_handler
 * first; unhandled, the program's handler sees it exactly as without the
 * probe (same signal, si_code, si_addr, and RIP == the probed instruction's
 * original address).  Faults inside handlers can be handled by the
 * fault_handler.  The program's own int3 still reaches its SIGTRAP handler.
 * Handlers installed before or after registration, with sigaction() or
 * signal(), are all called.  So are handlers installed behind ukprobes'
 * back with the bare system call: before registration they are chained,
 * after it the next registration notices, takes its signal back, chains
 * them and says so; a fault that follows a hit that went to such a handler
 * says so on standard error.
 */
#include "../support/ukp_test.h"
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <ukprobes.h>
#include "scn_util.h"

extern char scn_sig_load[], scn_sig_load_at[], scn_sig_load_next[];
extern char scn_sig_div[], scn_sig_div_at[], scn_sig_div_next[];
extern char scn_sig_ud2[], scn_sig_ud2_at[], scn_sig_ud2_next[];
extern char scn_sig_int3[], scn_sig_int3_at[], scn_sig_int3_next[];
extern char scn_sig_other[], scn_sig_other_1[];
extern char scn_sig_mov6[], scn_sig_mov6_at[];
extern char scn_sig_int3b[], scn_sig_int3b_next[];

static long (*volatile load)(long *) = (long (*)(long *))scn_sig_load;
static unsigned long (*volatile divide)(unsigned long, unsigned long) =
	(unsigned long (*)(unsigned long, unsigned long))scn_sig_div;
static long (*volatile ud2fn)(void) = (long (*)(void))scn_sig_ud2;
static long (*volatile int3fn)(void) = (long (*)(void))scn_sig_int3;
static long (*volatile other)(long) = (long (*)(long))scn_sig_other;
static long (*volatile mov6)(void) = (long (*)(void))scn_sig_mov6;
static long (*volatile int3b)(void) = (long (*)(void))scn_sig_int3b;

/* --------------------------------------------------------------------- */
/* The program's handler                                                 */
/* --------------------------------------------------------------------- */

struct sig_seen {
	int count;
	int signo;
	int code;
	unsigned long addr;
	unsigned long rip;
};

static sigjmp_buf jb;
static volatile struct sig_seen seen;
static volatile unsigned long resume_at;	/* 0: siglongjmp out */

static void prog_handler(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	seen.count++;
	seen.signo = sig;
	seen.code = si->si_code;
	seen.addr = (unsigned long)si->si_addr;
	seen.rip = (unsigned long)uc->uc_mcontext.gregs[REG_RIP];
	if (sig == SIGTRAP)
		return;		/* RIP is already past the int3 */
	if (resume_at) {
		uc->uc_mcontext.gregs[REG_RIP] = (greg_t)resume_at;
		return;
	}
	siglongjmp(jb, 1);
}

static void install(int sig)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = prog_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(sig, &sa, NULL), 0);
}

static void reset_seen(void)
{
	memset((void *)&seen, 0, sizeof(seen));
}

/* Returns 1 if the call faulted (the handler longjmp'ed), else 0; *res gets
 * the result of a call that returned. */
static int try_load(long *p, long *res)
{
	if (sigsetjmp(jb, 1))
		return 1;
	*res = load(p);
	return 0;
}

static int try_div(unsigned long a, unsigned long b, unsigned long *res)
{
	if (sigsetjmp(jb, 1))
		return 1;
	*res = divide(a, b);
	return 0;
}

static int try_ud2(long *res)
{
	if (sigsetjmp(jb, 1))
		return 1;
	*res = ud2fn();
	return 0;
}

/* --------------------------------------------------------------------- */
/* Probe handlers                                                        */
/* --------------------------------------------------------------------- */

static volatile int pre_hits, post_hits, fault_hits, fault_trapnr;
static volatile unsigned long fault_ip;
static volatile int fault_ret;
static volatile unsigned long fault_set_ip, fault_set_ax;
static volatile int pre_faults, post_faults;	/* handlers fault on purpose */

static int s_pre(struct kprobe *p, struct pt_regs *regs)
{
	pre_hits++;
	if (pre_faults)
		*(volatile int *)0x20 = 1;
	return 0;
}

static void s_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	post_hits++;
	if (post_faults)
		*(volatile int *)0x28 = 1;
}

static int s_fault(struct kprobe *p, struct pt_regs *regs, int trapnr)
{
	fault_hits++;
	fault_trapnr = trapnr;
	fault_ip = regs->ip;
	if (fault_ret && fault_set_ip) {
		regs->ip = fault_set_ip;
		regs->ax = fault_set_ax;
	}
	return fault_ret;
}

static void reset_probe_counts(void)
{
	pre_hits = post_hits = fault_hits = 0;
	fault_trapnr = -1;
	fault_ip = 0;
}

/* --------------------------------------------------------------------- */
/* SIGSEGV of a probed instruction, not handled by the fault_handler     */
/* --------------------------------------------------------------------- */

static void segv_case(int install_before, int with_post, int with_fault_handler)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)scn_sig_load_at, .pre_handler = s_pre };
	long r = 0, arr[3] = { 0, 0, 1234 };

	if (with_post)
		kp.post_handler = s_post;
	if (with_fault_handler)
		kp.fault_handler = s_fault;

	if (install_before)
		install(SIGSEGV);
	cr_assert_eq(register_kprobe(&kp), 0);
	if (!install_before)
		install(SIGSEGV);

	/* a good pointer first */
	cr_expect_eq(try_load(arr, &r), 0);
	cr_expect_eq(r, 1234);
	cr_expect_eq(pre_hits, 1);

	reset_seen();
	reset_probe_counts();
	int faulted = try_load(NULL, &r);
	cr_expect_eq(faulted, 1, "the program's SIGSEGV handler did not run");
	cr_expect_eq(seen.count, 1, "program handler ran %d times", seen.count);
	cr_expect_eq(seen.signo, SIGSEGV, "signal %d", seen.signo);
	cr_expect_eq(seen.code, SEGV_MAPERR, "si_code %d", seen.code);
	cr_expect_eq(seen.addr, 0x10, "si_addr %#lx, expected 0x10", seen.addr);
	cr_expect_eq(seen.rip, (unsigned long)scn_sig_load_at,
		     "RIP in the program's handler %#lx, expected the probed address %p",
		     seen.rip, (void *)scn_sig_load_at);
	cr_expect_eq(pre_hits, 1, "pre_handler ran %d times", pre_hits);
	cr_expect_eq(post_hits, 0, "post_handler ran after a faulting instruction");
	if (with_fault_handler) {
		cr_expect_eq(fault_hits, 1, "fault_handler ran %d times", fault_hits);
		cr_expect_eq(fault_trapnr, 14, "trapnr %d", fault_trapnr);
	}

	/* the thread's probe state is clean after the longjmp */
	reset_probe_counts();
	for (int i = 0; i < 3; i++) {
		cr_expect_eq(try_load(arr, &r), 0);
		cr_expect_eq(r, 1234);
	}
	cr_expect_eq(pre_hits, 3, "after the fault: pre ran %d times of 3", pre_hits);
	if (with_post)
		cr_expect_eq(post_hits, 3, "after the fault: post ran %d times of 3", post_hits);
	cr_expect_eq(kp.nmissed, 0, "nmissed %lu after the fault", kp.nmissed);

	/* and a second fault is delivered the same way */
	reset_seen();
	cr_expect_eq(try_load(NULL, &r), 1);
	cr_expect_eq(seen.count, 1);
	cr_expect_eq(seen.rip, (unsigned long)scn_sig_load_at);
	unregister_kprobe(&kp);
}

Test(signals, segv_handler_before_register_single_step, .timeout = 30)
{
	segv_case(1, 1, 1);
}

Test(signals, segv_handler_before_register_boost, .timeout = 30)
{
	segv_case(1, 0, 1);
}

Test(signals, segv_handler_after_register_single_step, .timeout = 30)
{
	segv_case(0, 1, 1);
}

Test(signals, segv_handler_after_register_boost, .timeout = 30)
{
	segv_case(0, 0, 1);
}

Test(signals, segv_no_fault_handler, .timeout = 30)
{
	segv_case(1, 1, 0);
}

Test(signals, segv_unprobed_baseline, .timeout = 30)
{
	/* what the program sees without probes: the same assertions hold */
	long r;
	install(SIGSEGV);
	reset_seen();
	cr_assert_eq(try_load(NULL, &r), 1);
	cr_assert_eq(seen.addr, 0x10);
	cr_assert_eq(seen.rip, (unsigned long)scn_sig_load_at);
	cr_assert_eq(seen.code, SEGV_MAPERR);
}

/* --------------------------------------------------------------------- */
/* The fault_handler handles the probed instruction's fault              */
/* --------------------------------------------------------------------- */

static void fault_handled_case(int with_post)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)scn_sig_load_at, .pre_handler = s_pre,
			     .fault_handler = s_fault };
	long r = 0;

	if (with_post)
		kp.post_handler = s_post;
	install(SIGSEGV);
	cr_assert_eq(register_kprobe(&kp), 0);
	fault_ret = 1;
	fault_set_ip = (unsigned long)scn_sig_load_next;
	fault_set_ax = 777;
	reset_seen();
	reset_probe_counts();
	int faulted = try_load(NULL, &r);
	cr_expect_eq(faulted, 0, "the program's handler ran though the fault_handler returned 1");
	cr_expect_eq(seen.count, 0);
	cr_expect_eq(r, 777, "fault_handler set ax = 777 and ip past the load: got %ld", r);
	cr_expect_eq(fault_hits, 1);
	cr_expect_eq(fault_trapnr, 14);
	cr_log_info("fault_handler saw regs->ip %#lx (probe at %p)", fault_ip,
		    (void *)scn_sig_load_at);

	/* normal hits afterwards */
	long arr[3] = { 0, 0, 5 };
	reset_probe_counts();
	cr_expect_eq(try_load(arr, &r), 0);
	cr_expect_eq(r, 5);
	cr_expect_eq(pre_hits, 1);
	if (with_post)
		cr_expect_eq(post_hits, 1);
	cr_expect_eq(fault_hits, 0);
	cr_expect_eq(kp.nmissed, 0);
	unregister_kprobe(&kp);
}

Test(signals, fault_handler_handles_single_step, .timeout = 30)
{
	fault_handled_case(1);
}

Test(signals, fault_handler_handles_boost, .timeout = 30)
{
	fault_handled_case(0);
}

/* --------------------------------------------------------------------- */
/* Faults inside handlers                                                */
/* --------------------------------------------------------------------- */

static void handler_fault_case(int in_pre)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)scn_sig_other_1, .pre_handler = s_pre,
			     .post_handler = s_post, .fault_handler = s_fault };

	install(SIGSEGV);
	cr_assert_eq(register_kprobe(&kp), 0);
	fault_ret = 1;
	fault_set_ip = 0;	/* handled: only abandon the handler */
	reset_seen();
	reset_probe_counts();
	if (in_pre)
		pre_faults = 1;
	else
		post_faults = 1;
	for (int i = 0; i < 3; i++)
		cr_expect_eq(other(i), i + 1, "call %d with a faulting %s handler", i,
			     in_pre ? "pre" : "post");
	pre_faults = post_faults = 0;
	cr_expect_eq(seen.count, 0, "the program's SIGSEGV handler saw a handler's fault");
	cr_expect_eq(fault_hits, 3, "fault_handler ran %d times", fault_hits);
	cr_expect_eq(fault_trapnr, 14);
	cr_expect_eq(pre_hits, 3);
	cr_expect_eq(post_hits, 3, "the probe hit did not continue to the post handler (%d)",
		     post_hits);

	reset_probe_counts();
	cr_expect_eq(other(10), 11);
	cr_expect_eq(pre_hits, 1);
	cr_expect_eq(post_hits, 1);
	cr_expect_eq(fault_hits, 0);
	/* The kernel counts a fault in a handler as a miss
	 * (kprobe_fault_handler: "We increment the nmissed count for
	 * accounting"): one per faulting hit, none for the clean one. */
	cr_expect_eq(kp.nmissed, 3, "nmissed %lu, expected 3", kp.nmissed);
	unregister_kprobe(&kp);
}

Test(signals, fault_in_pre_handler_handled, .timeout = 30)
{
	handler_fault_case(1);
}

Test(signals, fault_in_post_handler_handled, .timeout = 30)
{
	handler_fault_case(0);
}

/* --------------------------------------------------------------------- */
/* The program's own int3                                                */
/* --------------------------------------------------------------------- */

static void own_int3_case(int install_before)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)scn_sig_other_1, .pre_handler = s_pre,
			     .post_handler = s_post };

	/* baseline, no probes */
	install(SIGTRAP);
	reset_seen();
	resume_at = 0;
	cr_assert_eq(int3fn(), 5);
	struct sig_seen base = seen;
	cr_assert_eq(base.count, 1);
	cr_assert_eq(base.rip, (unsigned long)scn_sig_int3_next);

	if (!install_before) {
		struct sigaction sa = { .sa_handler = SIG_DFL };
		sigaction(SIGTRAP, &sa, NULL);
	}
	cr_assert_eq(register_kprobe(&kp), 0);
	if (!install_before)
		install(SIGTRAP);

	reset_seen();
	reset_probe_counts();
	cr_expect_eq(other(1), 2);
	cr_expect_eq(seen.count, 0, "the program's SIGTRAP handler saw a probe hit");
	cr_expect_eq(pre_hits, 1);

	cr_expect_eq(int3fn(), 5);
	cr_expect_eq(seen.count, 1, "the program's SIGTRAP handler ran %d times", seen.count);
	cr_expect_eq(seen.signo, SIGTRAP);
	cr_expect_eq(seen.code, base.code, "si_code %d, without probes %d", seen.code, base.code);
	cr_expect_eq(seen.rip, (unsigned long)scn_sig_int3_next,
		     "RIP %#lx, expected just after the int3 %p", seen.rip,
		     (void *)scn_sig_int3_next);

	/* an int3 in C code */
	reset_seen();
	__asm__ volatile("int3" ::: "memory");
	cr_expect_eq(seen.count, 1);
	cr_expect_eq(*(unsigned char *)(seen.rip - 1), 0xcc, "RIP %#lx is not after an int3",
		     seen.rip);

	reset_probe_counts();
	cr_expect_eq(other(2), 3);
	cr_expect_eq(pre_hits, 1);
	cr_expect_eq(post_hits, 1);
	cr_expect_eq(seen.count, 1);
	unregister_kprobe(&kp);
}

Test(signals, own_int3_handler_installed_before, .timeout = 30)
{
	own_int3_case(1);
}

Test(signals, own_int3_handler_installed_after, .timeout = 30)
{
	own_int3_case(0);
}

/* --------------------------------------------------------------------- */
/* SIGFPE and SIGILL of probed instructions                              */
/* --------------------------------------------------------------------- */

static void fpe_case(int with_post)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)scn_sig_div_at, .pre_handler = s_pre,
			     .fault_handler = s_fault };
	unsigned long r = 0;

	if (with_post)
		kp.post_handler = s_post;
	install(SIGFPE);
	resume_at = 0;
	reset_seen();
	cr_assert_eq(try_div(7, 0, &r), 1);
	struct sig_seen base = seen;
	cr_assert_eq(base.rip, (unsigned long)scn_sig_div_at);

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_eq(try_div(42, 6, &r), 0);
	cr_expect_eq(r, 7);
	reset_seen();
	reset_probe_counts();
	fault_ret = 0;
	cr_expect_eq(try_div(7, 0, &r), 1, "the program's SIGFPE handler did not run");
	cr_expect_eq(seen.count, 1);
	cr_expect_eq(seen.signo, SIGFPE);
	cr_expect_eq(seen.code, base.code, "si_code %d, without probes %d", seen.code, base.code);
	cr_expect_eq(seen.addr, base.addr, "si_addr %#lx, without probes %#lx", seen.addr,
		     base.addr);
	cr_expect_eq(seen.rip, (unsigned long)scn_sig_div_at, "RIP %#lx, expected %p",
		     seen.rip, (void *)scn_sig_div_at);
	cr_expect_eq(fault_hits, 1);
	cr_expect_eq(fault_trapnr, 0, "trapnr %d for a divide error", fault_trapnr);
	cr_expect_eq(post_hits, 0);
	reset_probe_counts();
	cr_expect_eq(try_div(42, 6, &r), 0);
	cr_expect_eq(r, 7);
	cr_expect_eq(pre_hits, 1);
	unregister_kprobe(&kp);
}

Test(signals, sigfpe_probed_div_single_step, .timeout = 30)
{
	fpe_case(1);
}

Test(signals, sigfpe_probed_div_boost, .timeout = 30)
{
	fpe_case(0);
}

static void ill_case(int with_post, int resume)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)scn_sig_ud2_at, .pre_handler = s_pre,
			     .fault_handler = s_fault };
	long r = 0;

	if (with_post)
		kp.post_handler = s_post;
	install(SIGILL);
	resume_at = 0;
	reset_seen();
	cr_assert_eq(try_ud2(&r), 1);
	struct sig_seen base = seen;
	cr_assert_eq(base.rip, (unsigned long)scn_sig_ud2_at);

	cr_assert_eq(register_kprobe(&kp), 0);
	reset_seen();
	reset_probe_counts();
	fault_ret = 0;
	/* resume: the program's handler moves RIP past the ud2 and returns */
	resume_at = resume ? (unsigned long)scn_sig_ud2_next : 0;
	int faulted = try_ud2(&r);
	if (resume) {
		cr_expect_eq(faulted, 0);
		cr_expect_eq(r, 1, "resumed after ud2 by the program's handler: got %ld", r);
	} else {
		cr_expect_eq(faulted, 1, "the program's SIGILL handler did not run");
	}
	cr_expect_eq(seen.count, 1);
	cr_expect_eq(seen.signo, SIGILL);
	cr_expect_eq(seen.code, base.code, "si_code %d, without probes %d", seen.code, base.code);
	cr_expect_eq(seen.addr, base.addr, "si_addr %#lx, without probes %#lx", seen.addr,
		     base.addr);
	cr_expect_eq(seen.rip, (unsigned long)scn_sig_ud2_at, "RIP %#lx, expected %p",
		     seen.rip, (void *)scn_sig_ud2_at);
	cr_expect_eq(pre_hits, 1);
	cr_expect_eq(fault_hits, 1);
	cr_expect_eq(fault_trapnr, 6, "trapnr %d for an invalid opcode", fault_trapnr);
	cr_expect_eq(kp.nmissed, 0);
	resume_at = 0;
	unregister_kprobe(&kp);
}

Test(signals, sigill_probed_ud2_single_step, .timeout = 30)
{
	ill_case(1, 0);
}

Test(signals, sigill_probed_ud2_boost, .timeout = 30)
{
	ill_case(0, 0);
}

Test(signals, sigill_program_handler_resumes_past_ud2, .timeout = 30)
{
	ill_case(1, 1);
}

/* --------------------------------------------------------------------- */
/* signal() after registration; the disposition the program reads        */
/* --------------------------------------------------------------------- */

static volatile int plain_count;

static void plain_handler(int sig)
{
	plain_count++;
	siglongjmp(jb, 1);
}

Test(signals, signal_installed_after_register, .timeout = 30)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)scn_sig_load_at, .pre_handler = s_pre,
			     .post_handler = s_post };
	long r;

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert_neq(signal(SIGSEGV, plain_handler), SIG_ERR);
	cr_expect_eq(try_load(NULL, &r), 1, "the handler installed with signal() did not run");
	cr_expect_eq(plain_count, 1);
	cr_expect_eq(pre_hits, 1);
	/* and once more: signal() installs a handler that stays */
	cr_expect_eq(try_load(NULL, &r), 1);
	cr_expect_eq(plain_count, 2);
	unregister_kprobe(&kp);
}

Test(signals, signal_installed_after_register_unprobed_fault, .timeout = 30)
{
	/* a fault away from any probe, probes registered elsewhere */
	struct kprobe kp = { .addr = (kprobe_opcode_t *)scn_sig_other_1, .pre_handler = s_pre };
	long r;

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert_neq(signal(SIGSEGV, plain_handler), SIG_ERR);
	cr_expect_eq(try_load(NULL, &r), 1);
	cr_expect_eq(plain_count, 1);
	cr_expect_eq(pre_hits, 0);
	unregister_kprobe(&kp);
}

Test(signals, sigaction_reports_program_handler, .timeout = 30)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)scn_sig_other_1, .pre_handler = s_pre };
	struct sigaction old;

	install(SIGSEGV);
	cr_assert_eq(register_kprobe(&kp), 0);
	memset(&old, 0, sizeof(old));
	cr_assert_eq(sigaction(SIGSEGV, NULL, &old), 0);
	cr_expect_eq((void *)old.sa_sigaction, (void *)prog_handler,
		     "sigaction(SIGSEGV) reports %p, the program installed %p",
		     (void *)old.sa_sigaction, (void *)prog_handler);
	memset(&old, 0, sizeof(old));
	cr_assert_eq(sigaction(SIGTRAP, NULL, &old), 0);
	cr_expect_eq((void *)old.sa_handler, (void *)SIG_DFL,
		     "sigaction(SIGTRAP) reports %p, the program installed none",
		     (void *)old.sa_handler);
	unregister_kprobe(&kp);
}

/* --------------------------------------------------------------------- */
/* No handler at all: the default action kills with the right signal     */
/* --------------------------------------------------------------------- */

Test(signals, default_action_segv_single_step, .signal = SIGSEGV, .timeout = 30)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)scn_sig_load_at, .pre_handler = s_pre,
			     .post_handler = s_post, .fault_handler = s_fault };
	/* no handler at all (a sanitizer runtime may have installed one) */
	signal(SIGSEGV, SIG_DFL);
	cr_assert_eq(register_kprobe(&kp), 0);
	load(NULL);
}

Test(signals, default_action_segv_boost, .signal = SIGSEGV, .timeout = 30)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)scn_sig_load_at, .pre_handler = s_pre };
	/* no handler at all (a sanitizer runtime may have installed one) */
	signal(SIGSEGV, SIG_DFL);
	cr_assert_eq(register_kprobe(&kp), 0);
	load(NULL);
}

Test(signals, default_action_ill, .signal = SIGILL, .timeout = 30)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)scn_sig_ud2_at, .pre_handler = s_pre,
			     .post_handler = s_post };
	/* no handler at all (a sanitizer runtime may have installed one) */
	signal(SIGILL, SIG_DFL);
	cr_assert_eq(register_kprobe(&kp), 0);
	ud2fn();
}

Test(signals, default_action_own_int3, .signal = SIGTRAP, .timeout = 30)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)scn_sig_other_1, .pre_handler = s_pre };
	/* no handler at all (a sanitizer runtime may have installed one) */
	signal(SIGTRAP, SIG_DFL);
	cr_assert_eq(register_kprobe(&kp), 0);
	other(1);
	int3fn();
}

/* --------------------------------------------------------------------- */
/* Probe hits with the fault/trap signals blocked by the program         */
/* --------------------------------------------------------------------- */

/*
 * Threads that block every signal (pthread_sigmask(SIG_BLOCK, full)) are
 * common.  The kernel delivers a blocked synchronous SIGTRAP by resetting
 * its handler to SIG_DFL (force_sig), so a probe hit there must still work:
 * the probe is invisible to the program's masks.
 */
static void *blocked_worker(void *arg)
{
	sigset_t all;
	long wrong = 0;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (long i = 0; i < 100; i++)
		if (other(i) != i + 1)
			wrong++;
	return (void *)wrong;
}

Test(signals, probe_hit_in_thread_blocking_all_signals, .timeout = 30)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)scn_sig_other_1, .pre_handler = s_pre,
			     .post_handler = s_post };
	pthread_t th;
	void *wrong;

	cr_assert_eq(register_kprobe(&kp), 0);
	pthread_create(&th, NULL, blocked_worker, NULL);
	pthread_join(th, &wrong);
	unregister_kprobe(&kp);
	cr_expect_eq((long)wrong, 0);
	cr_expect_eq(pre_hits, 100, "pre ran %d times", pre_hits);
	cr_expect_eq(post_hits, 100, "post ran %d times", post_hits);
}

Test(signals, probe_hit_with_sigtrap_blocked_by_sigprocmask, .timeout = 30)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)scn_sig_other_1, .pre_handler = s_pre };
	sigset_t set, old;

	cr_assert_eq(register_kprobe(&kp), 0);
	sigemptyset(&set);
	sigaddset(&set, SIGTRAP);
	sigaddset(&set, SIGSEGV);
	sigprocmask(SIG_BLOCK, &set, &old);
	long r = other(41);
	sigprocmask(SIG_SETMASK, &old, NULL);
	unregister_kprobe(&kp);
	cr_expect_eq(r, 42);
	cr_expect_eq(pre_hits, 1);
	/* the program's mask is its own again */
	sigset_t now;
	sigprocmask(SIG_BLOCK, NULL, &now);
	cr_expect(!sigismember(&now, SIGTRAP));
}

/* --------------------------------------------------------------------- */
/* The program's asynchronous signal handler runs probed code            */
/* --------------------------------------------------------------------- */

static atomic_long usr1_calls, usr1_wrong;
static atomic_int usr1_done;

static void usr1_handler(int sig)
{
	long i = atomic_fetch_add(&usr1_calls, 1);
	if (other(i) != i + 1)
		atomic_fetch_add(&usr1_wrong, 1);
}

struct kill_arg {
	pthread_t target;
	int n;
};

static void *usr1_sender(void *argv)
{
	struct kill_arg *a = argv;
	for (int i = 0; i < a->n; i++) {
		pthread_kill(a->target, SIGUSR1);
		scn_spin_ns(20000);
	}
	atomic_store(&usr1_done, 1);
	return NULL;
}

Test(signals, async_signal_handler_hits_probe, .timeout = 30)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)scn_sig_other_1, .pre_handler = s_pre,
			     .post_handler = s_post };
	struct kill_arg ka = { .target = pthread_self(), .n = 2000 };
	struct sigaction sa;
	pthread_t th;
	long main_calls = 0, wrong = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = usr1_handler;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	cr_assert_eq(register_kprobe(&kp), 0);
	pthread_create(&th, NULL, usr1_sender, &ka);
	while (!atomic_load(&usr1_done)) {
		if (other(main_calls) != main_calls + 1)
			wrong++;
		main_calls++;
	}
	pthread_join(th, NULL);
	unregister_kprobe(&kp);

	long total = main_calls + atomic_load(&usr1_calls);
	cr_log_info("%ld calls in the main flow, %ld in the signal handler, nmissed %lu",
		    main_calls, atomic_load(&usr1_calls), kp.nmissed);
	cr_expect_gt(atomic_load(&usr1_calls), 0, "SIGUSR1 handler never ran");
	cr_expect_eq(wrong, 0);
	cr_expect_eq(atomic_load(&usr1_wrong), 0);
	cr_expect_eq(pre_hits + (long)kp.nmissed, total,
		     "pre %d + nmissed %lu != %ld calls", pre_hits, kp.nmissed, total);
	cr_expect_eq(post_hits, pre_hits, "post %d != pre %d", post_hits, pre_hits);
}

/* --------------------------------------------------------------------- */
/* Handlers installed with the bare system call                          */
/* --------------------------------------------------------------------- */

/* The program's handler, installed as libc would but not through it. */
extern void scn_restore_rt(void) __asm__("scn_sig_restore_rt");
__asm__(".text\n"
	"scn_sig_restore_rt:\n"
	"	mov $15, %rax\n"	/* rt_sigreturn */
	"	syscall\n");

static void raw_install(int sig)
{
	struct scn_ksigaction k = {
		.handler = (unsigned long)prog_handler,
		.flags = SA_SIGINFO | 0x04000000 /* SA_RESTORER */,
		.restorer = (unsigned long)scn_restore_rt,
	};

	cr_assert_eq(syscall(SYS_rt_sigaction, sig, &k, NULL, 8), 0);
}

static char logbuf[4096];
static size_t loglen;

static int capture_print(enum ukprobes_print_level level, const char *fmt, va_list ap)
{
	int n = vsnprintf(logbuf + loglen, sizeof(logbuf) - loglen, fmt, ap);

	if (n > 0)
		loglen = loglen + (size_t)n < sizeof(logbuf) ? loglen + (size_t)n : sizeof(logbuf) - 1;
	return n;
}

/* Before registration: taken over and chained, like a sigaction() one. */
Test(signals, own_sigtrap_handler_raw_before_register, .timeout = 30)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)scn_sig_other_1, .pre_handler = s_pre };

	raw_install(SIGTRAP);
	cr_assert_eq(register_kprobe(&kp), 0);
	reset_seen();
	cr_expect_eq(other(1), 2);
	cr_expect_eq(pre_hits, 1);
	cr_expect_eq(seen.count, 0);
	cr_expect_eq(int3fn(), 5);
	cr_expect_eq(seen.count, 1);
	cr_expect_eq(seen.rip, (unsigned long)scn_sig_int3_next);
	unregister_kprobe(&kp);
}

/*
 * After registration, the bare system call replaces ukprobes' handler:
 * the next registration takes it back (the program's handler chained),
 * logs one line, and succeeds.  Without that, every hit of the first
 * probe went to the program's handler and resumed inside the instruction.
 */
static void replaced_after_register(int sig)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)scn_sig_other_1, .pre_handler = s_pre };
	struct kprobe kp2 = { .addr = (kprobe_opcode_t *)scn_sig_load_at, .pre_handler = s_pre,
			      .post_handler = s_post };
	ukprobes_print_fn_t old_print;
	long r = 0, bad[2] = { 0, 0 };

	cr_assert_eq(register_kprobe(&kp), 0);
	raw_install(sig);
	old_print = ukprobes_set_print(capture_print);
	cr_assert_eq(register_kprobe(&kp2), 0);
	ukprobes_set_print(old_print);
	cr_expect(strstr(logbuf, sigabbrev_np(sig)) && strstr(logbuf, "taken back"),
		  "no word of it: \"%s\"", logbuf);
	reset_seen();
	reset_probe_counts();
	for (long i = 0; i < 10; i++)
		if (other(i) != i + 1)
			bad[0]++;
	cr_expect_eq(bad[0], 0);
	cr_expect_eq(pre_hits, 10, "%d hits of 10", pre_hits);
	cr_expect_eq(seen.count, 0, "the program's handler saw %d probe hits", seen.count);
	if (sig == SIGTRAP) {
		cr_expect_eq(int3fn(), 5);
		cr_expect_eq(seen.count, 1, "the program's own int3 did not reach it");
	} else {
		/* A fault of the probed (single-stepped) load reaches the
		 * program's new handler at the original address. */
		resume_at = 0;
		cr_expect_eq(try_load(NULL, &r), 1);
		cr_expect_eq(seen.count, 1);
		cr_expect_eq(seen.rip, (unsigned long)scn_sig_load_at);
		bad[1] = try_load((long[3]){ 1, 2, 3 }, &r) || r != 3;
		cr_expect_eq(bad[1], 0);
	}
	unregister_kprobe(&kp);
	unregister_kprobe(&kp2);
}

Test(signals, sigtrap_handler_replaced_raw_after_register, .timeout = 30)
{
	replaced_after_register(SIGTRAP);
}

Test(signals, sigsegv_handler_replaced_raw_after_register, .timeout = 30)
{
	replaced_after_register(SIGSEGV);
}

/*
 * SIGTRAP replaced behind ukprobes' back, and no registration since: the
 * hit goes to the program's handler, which returns into the probed
 * instruction.  Where that faults at once (here the mov's second byte,
 * 0x06, is invalid), ukprobes says so on standard error, takes SIGTRAP
 * back, and the fault reaches the program; the next hit works.
 */
Test(signals, sigtrap_replaced_raw_fault_inside_probed_insn, .timeout = 30)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)scn_sig_mov6_at, .pre_handler = s_pre };
	char errbuf[1024] = { 0 };
	int pipefd[2], saved_err;
	long r = 0;

	install(SIGILL);
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_eq(mov6(), 6);
	cr_expect_eq(pre_hits, 1);
	raw_install(SIGTRAP);
	cr_assert_eq(pipe(pipefd), 0);
	saved_err = dup(2);
	dup2(pipefd[1], 2);
	reset_seen();
	resume_at = 0;
	if (!sigsetjmp(jb, 1))
		r = mov6();
	dup2(saved_err, 2);
	close(pipefd[1]);
	cr_expect_gt(read(pipefd[0], errbuf, sizeof(errbuf) - 1), 0);
	cr_expect(strstr(errbuf, "ukprobes: SIGTRAP was taken from ukprobes"), "stderr: \"%s\"",
		  errbuf);
	cr_expect_eq(seen.count, 2, "handler runs: %d (the stray trap, then the fault)",
		     seen.count);
	cr_expect_eq(seen.signo, SIGILL);
	cr_expect_eq(seen.rip, (unsigned long)scn_sig_mov6_at + 1);
	/* SIGTRAP is ukprobes' again. */
	reset_seen();
	reset_probe_counts();
	r = mov6();
	cr_expect_eq(r, 6);
	cr_expect_eq(pre_hits, 1);
	cr_expect_eq(seen.count, 0);
	unregister_kprobe(&kp);
}

/*
 * A SIGTRAP that ukprobes did not cause and that has no int3 behind it
 * (the program's "int $3", cd 03; or a debugger passing on its own trap,
 * the pc already moved back) goes to the program as it is: never "backed
 * up over a removed probe", which ran the middle of an instruction.
 */
extern int scn_foreign_uprobe_fd;	/* tests/support/foreign_uprobe.c */

Test(signals, own_two_byte_int3_reaches_handler_unchanged, .timeout = 30)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)scn_sig_other_1, .pre_handler = s_pre };

	/* The kernel's uprobes code backs "int $3" up itself (handle_swbp():
	 * no int3 at ip - 1 is taken for a removed uprobe): without
	 * ukprobes, this program dies of SIGSEGV beside any Linux uprobe. */
	if (scn_foreign_uprobe_fd >= 0)
		cr_skip_test("a Linux uprobe is in the process: the kernel backs int $3 up");
	install(SIGTRAP);
	cr_assert_eq(register_kprobe(&kp), 0);
	reset_seen();
	for (int i = 0; i < 5; i++)
		cr_expect_eq(int3b(), 5);
	cr_expect_eq(seen.count, 5);
	cr_expect_eq(seen.rip, (unsigned long)scn_sig_int3b_next);
	cr_expect_eq(other(1), 2);
	unregister_kprobe(&kp);
	/* Removed: a trap there now is not a late hit of ours either. */
	reset_seen();
	cr_expect_eq(int3b(), 5);
	cr_expect_eq(seen.count, 1);
	cr_expect_eq(seen.rip, (unsigned long)scn_sig_int3b_next);
}
