/* SPDX-License-Identifier: MIT */
/*
 * kretprobes_signals.c - a kretprobed function that signal handlers call
 * too, with signals arriving at 10 kHz per thread: a signal lands between
 * any two instructions of the entry path, the return trampoline and the
 * return handler, and its handler enters the same function.
 *
 * Every call must come back with its value, its callee-saved registers
 * and stack pointer (ksig_call_checked() checks them), and errno; every call is
 * either seen by the return handler or counted missed:
 *	return handlers + rp.nmissed + rp.kp.nmissed == calls.
 * For the breakpoint entry and the jump-optimized one, handlers that are
 * KPROBE_FLAG_GPR_ONLY or not, signal handlers on the thread's stack and on
 * a sigaltstack; and libc's write() as the original report had it.
 *
 * Handlers never assert: they count errors, the test checks the counts.
 */
#include "../support/ukp_test.h"
#include <dlfcn.h>
#include <execinfo.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <ukprobes.h>
#include "scn_arch.h"
#include "scn_util.h"

extern long ksig_target(long x);
extern long ksig_call_checked(long (*fn)(long), long x);

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

#define WORKERS		2
#define SIGNAL_NS	100000L		/* 10 kHz per thread */
#define RUN_NS		700000000LL	/* per test */
#define ALTSTACK_SIZE	(64 * 1024)

#define GPR __attribute__((target("general-regs-only")))
#define INC(c) atomic_fetch_add_explicit(&(c), 1, memory_order_relaxed)

static long (*volatile probed)(long) = ksig_target;
static atomic_ulong calls, sig_calls, signals, entries, returns;
static atomic_ulong bad_value, bad_regs, bad_errno, bad_handler;
static atomic_int stop;

/* -------------------------------------------------------------------- */
/* Handlers of the kretprobe                                            */
/* -------------------------------------------------------------------- */

GPR static int gpr_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	*(long *)ri->data = (long)regs_get_kernel_argument(regs, 0);
	INC(entries);
	return 0;
}

GPR static int gpr_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	if ((long)regs_return_value(regs) != 3 * *(long *)ri->data + 1)
		INC(bad_handler);
	INC(returns);
	return 0;
}

static int vec_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	/* Vector registers in use, as C handlers may (formatting does). */
	volatile double d = (double)regs_get_kernel_argument(regs, 0) * 1.5;

	*(long *)ri->data = (long)(d / 1.5);
	INC(entries);
	return 0;
}

static int vec_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	volatile double d = (double)*(long *)ri->data;

	if ((long)regs_return_value(regs) != 3 * (long)d + 1)
		INC(bad_handler);
	INC(returns);
	return 0;
}

/* -------------------------------------------------------------------- */
/* The program: workers calling the function, a signal handler that     */
/* calls it too                                                          */
/* -------------------------------------------------------------------- */

static void one_checked_call(long x)
{
	long r = ksig_call_checked(probed, x);

	if (r == LONG_MIN)
		INC(bad_regs);
	else if (r != 3 * x + 1)
		INC(bad_value);
}

static void on_signal(int sig)
{
	int saved = errno;	/* as a program's handler does */
	static _Thread_local long n;

	(void)sig;
	INC(signals);
	one_checked_call(1000000 + n++);
	INC(sig_calls);
	errno = saved;
}

static void *worker(void *arg)
{
	struct sigevent sev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGUSR1 };
	struct itimerspec its = { .it_interval.tv_nsec = SIGNAL_NS, .it_value.tv_nsec = SIGNAL_NS };
	bool altstack = arg != NULL;
	void *stack = NULL;
	timer_t timer;
	long i = 0;
	long long end;

	if (altstack) {
		stack_t ss = { .ss_size = ALTSTACK_SIZE };

		stack = ss.ss_sp = malloc(ALTSTACK_SIZE);
		if (!stack || sigaltstack(&ss, NULL))
			INC(bad_errno);
	}
	sev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_MONOTONIC, &sev, &timer) || timer_settime(timer, 0, &its, NULL)) {
		INC(bad_errno);
		return NULL;
	}
	end = scn_now_ns() + RUN_NS;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		errno = (int)(i & 0x7fff);
		one_checked_call(i);
		if (errno != (int)(i & 0x7fff))
			INC(bad_errno);
		INC(calls);
		if (!(++i & 255) && scn_now_ns() > end)
			break;
	}
	timer_delete(timer);
	if (altstack) {
		stack_t ss = { .ss_flags = SS_DISABLE };

		sigaltstack(&ss, NULL);
		free(stack);
	}
	return NULL;
}

enum entry_kind { BREAKPOINT_ENTRY, OPTIMIZED_ENTRY };

static void run(enum entry_kind entry, bool gpr, bool altstack)
{
	struct kretprobe rp = { .kp.symbol_name = "ksig_target",
				.kp.flags = gpr ? KPROBE_FLAG_GPR_ONLY : 0,
				.handler = gpr ? gpr_ret : vec_ret,
				.entry_handler = gpr ? gpr_entry : vec_entry,
				.data_size = sizeof(long), .maxactive = 64 };
	struct sigaction sa = { .sa_handler = on_signal,
				.sa_flags = SA_RESTART | (altstack ? SA_ONSTACK : 0) };
	pthread_t th[WORKERS];
	unsigned long total, missed;

	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	ukprobes_set_optimization(entry == OPTIMIZED_ENTRY);
	cr_assert_eq(register_kretprobe(&rp), 0);
	if (entry == OPTIMIZED_ENTRY) {
		ukprobes_wait_optimizer();
		cr_assert(rp.kp.flags & KPROBE_FLAG_OPTIMIZED, "the entry was not optimized");
	} else {
		cr_assert(!(rp.kp.flags & KPROBE_FLAG_OPTIMIZED));
	}
	for (int i = 0; i < WORKERS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, worker, altstack ? (void *)1 : NULL), 0);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(th[i], NULL);
	unregister_kretprobe(&rp);

	total = atomic_load(&calls) + atomic_load(&sig_calls);
	missed = (unsigned long)rp.nmissed + (unsigned long)rp.kp.nmissed;
	cr_log_info("%lu calls (%lu in %lu signal handlers), %lu returns handled, "
		    "nmissed %d + %lu", total, atomic_load(&sig_calls), atomic_load(&signals),
		    atomic_load(&returns), rp.nmissed, rp.kp.nmissed);
	cr_expect_gt(atomic_load(&signals), 200, "only %lu signals arrived",
		     atomic_load(&signals));
	cr_expect_eq(atomic_load(&bad_regs), 0, "%lu calls came back with a callee-saved "
		     "register or the stack pointer changed", atomic_load(&bad_regs));
	cr_expect_eq(atomic_load(&bad_value), 0, "%lu calls returned a wrong value",
		     atomic_load(&bad_value));
	cr_expect_eq(atomic_load(&bad_errno), 0, "%lu calls changed errno (or setup failed)",
		     atomic_load(&bad_errno));
	cr_expect_eq(atomic_load(&bad_handler), 0, "%lu return handlers saw a wrong value",
		     atomic_load(&bad_handler));
	cr_expect_eq(atomic_load(&returns) + missed, total,
		     "return handlers %lu + nmissed %lu != calls %lu",
		     atomic_load(&returns), missed, total);
	cr_expect_leq(atomic_load(&returns), atomic_load(&entries));
	/* Unregistered: nothing runs any more. */
	cr_expect_eq(ksig_call_checked(probed, 5), 16);
}

Test(kretprobes_signals, breakpoint_entry_gpr, .timeout = 60)
{
	run(BREAKPOINT_ENTRY, true, false);
}

Test(kretprobes_signals, breakpoint_entry_default, .timeout = 60)
{
	run(BREAKPOINT_ENTRY, false, false);
}

Test(kretprobes_signals, breakpoint_entry_gpr_altstack, .timeout = 60)
{
	run(BREAKPOINT_ENTRY, true, true);
}

Test(kretprobes_signals, breakpoint_entry_default_altstack, .timeout = 60)
{
	run(BREAKPOINT_ENTRY, false, true);
}

Test(kretprobes_signals, optimized_entry_gpr, .timeout = 60)
{
	run(OPTIMIZED_ENTRY, true, false);
}

Test(kretprobes_signals, optimized_entry_default, .timeout = 60)
{
	run(OPTIMIZED_ENTRY, false, false);
}

Test(kretprobes_signals, optimized_entry_gpr_altstack, .timeout = 60)
{
	run(OPTIMIZED_ENTRY, true, true);
}

Test(kretprobes_signals, optimized_entry_default_altstack, .timeout = 60)
{
	run(OPTIMIZED_ENTRY, false, true);
}

/* -------------------------------------------------------------------- */
/* The report: r:libc.so.6:write, a signal handler that writes           */
/* -------------------------------------------------------------------- */

static int devnull = -1;
static atomic_ulong wr_calls, wr_sig_calls, wr_bad;

static int wr_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	if ((long)regs_return_value(regs) != 1)
		INC(bad_handler);
	INC(returns);
	return 0;
}

static void on_signal_write(int sig)
{
	int saved = errno;

	(void)sig;
	INC(signals);
	if (write(devnull, "s", 1) != 1)
		INC(wr_bad);
	INC(wr_sig_calls);
	errno = saved;
}

static void *write_worker(void *arg)
{
	struct sigevent sev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGUSR2 };
	struct itimerspec its = { .it_interval.tv_nsec = SIGNAL_NS, .it_value.tv_nsec = SIGNAL_NS };
	timer_t timer;
	long long end = scn_now_ns() + RUN_NS;

	(void)arg;
	sev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_MONOTONIC, &sev, &timer) || timer_settime(timer, 0, &its, NULL)) {
		INC(wr_bad);
		return NULL;
	}
	for (long i = 0; scn_now_ns() < end; i++) {
		if (write(devnull, "w", 1) != 1)
			INC(wr_bad);
		INC(wr_calls);
	}
	timer_delete(timer);
	return NULL;
}

Test(kretprobes_signals, libc_write_called_by_signal_handlers, .timeout = 60)
{
	struct kretprobe rp = { .kp.symbol_name = "libc.so.6:write", .handler = wr_ret,
				.maxactive = 64 };
	struct sigaction sa = { .sa_handler = on_signal_write, .sa_flags = SA_RESTART };
	pthread_t th[WORKERS];
	unsigned long total, missed;

	devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	cr_assert_geq(devnull, 0);
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGUSR2, &sa, NULL), 0);
	cr_assert_eq(register_kretprobe(&rp), 0);
	ukprobes_wait_optimizer();
	for (int i = 0; i < WORKERS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, write_worker, NULL), 0);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(th[i], NULL);
	unregister_kretprobe(&rp);
	total = atomic_load(&wr_calls) + atomic_load(&wr_sig_calls);
	missed = (unsigned long)rp.nmissed + (unsigned long)rp.kp.nmissed;
	cr_log_info("write: %lu calls (%lu in signal handlers), %lu returns handled, "
		    "nmissed %d + %lu, entry %s", total, atomic_load(&wr_sig_calls),
		    atomic_load(&returns), rp.nmissed, rp.kp.nmissed,
		    rp.kp.flags & KPROBE_FLAG_OPTIMIZED ? "optimized" : "breakpoint");
	cr_expect_gt(atomic_load(&signals), 200, "only %lu signals arrived",
		     atomic_load(&signals));
	cr_expect_eq(atomic_load(&wr_bad), 0, "%lu writes failed", atomic_load(&wr_bad));
	cr_expect_eq(atomic_load(&bad_handler), 0);
	/* Other writes of the process (Criterion's) are counted by the handler
	 * too, never fewer. */
	cr_expect_geq(atomic_load(&returns) + missed, total,
		      "return handlers %lu + nmissed %lu < calls %lu",
		      atomic_load(&returns), missed, total);
}

/* -------------------------------------------------------------------- */
/* Exhaustively: a signal at every instruction of one kretprobed call   */
/* -------------------------------------------------------------------- */

/*
 * A traced child makes one call of the probed function while this process
 * single-steps it (ptrace) and, at every instruction from the call to its
 * return, delivers a signal whose handler calls the probed function too:
 * the entry path, the trampoline and the return handler are interrupted at
 * each of their instructions once (where the breakpoint path blocks
 * signals, the signal waits for the end of the block, as it would).  The
 * handler stops itself (SIGSTOP) when done, and stepping goes on from
 * where it interrupted.
 *
 * The handler also walks the stack (backtrace()): from every instruction
 * of the breakpoint entry's path, the trampoline and the return stubs, the
 * walk reaches the caller of the call (ksig_outer_call_ret).  What has no
 * unwind information is kprobes' own: the out-of-line copy a boosted
 * breakpoint resumes in (two instructions here, code made at run time),
 * and an optimized entry's detour, from inside which (and the handlers it
 * calls) walks stop: counted, not required.
 */
extern long ksig_outer(long x);
extern long ksig_outer_call(long x);
extern char ksig_outer_done[], ksig_outer_call_ret[];

#define BT_MISSES_KEPT	16

struct step_shared {
	volatile int traced, done;
	volatile unsigned long handled, interrupted_ip, interrupted_sp;
	volatile unsigned long outer_calls, outer_bad, handler_bad, returns;
	volatile long nmissed;
	/* Stack walks from the handler that did not reach the caller, and
	 * where the first of them were interrupted. */
	volatile unsigned long bt_missed, bt_missed_ip[BT_MISSES_KEPT];
	volatile unsigned long bt_missed_in_copy;	/* in code made at run time */
};

static struct step_shared *sh;

static int step_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	if ((long)regs_return_value(regs) != 3 * *(long *)ri->data + 1)
		sh->handler_bad++;
	sh->returns++;
	return 0;
}

GPR static int step_ret_gpr(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	if ((long)regs_return_value(regs) != 3 * *(long *)ri->data + 1)
		sh->handler_bad++;
	sh->returns++;
	return 0;
}

static void step_on_signal(int sig, siginfo_t *info, void *ucv)
{
	ucontext_t *uc = ucv;
	int saved = errno;
	long r = ksig_call_checked(probed, 77);

	(void)sig;
	(void)info;
	if (r != 3 * 77 + 1)
		sh->handler_bad++;
	if (sh->traced) {
		void *ips[64];
		int n = backtrace(ips, 64), i;

		for (i = 0; i < n && ips[i] != (void *)ksig_outer_call_ret; i++)
			;
		if (i == n) {
			if (sh->bt_missed < BT_MISSES_KEPT)
				sh->bt_missed_ip[sh->bt_missed] = scn_uc_ip(uc);
			sh->bt_missed++;
		}
		sh->interrupted_ip = scn_uc_ip(uc);
		sh->interrupted_sp = scn_uc_sp(uc);
		sh->handled++;
		/* The tracer steps on from here. */
		syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), SIGSTOP);
	}
	errno = saved;
}

static void step_child(enum entry_kind entry, bool gpr, bool altstack)
{
	struct kretprobe rp = { .kp.symbol_name = "ksig_target",
				.kp.flags = gpr ? KPROBE_FLAG_GPR_ONLY : 0,
				.handler = gpr ? step_ret_gpr : step_ret,
				.entry_handler = gpr ? gpr_entry : vec_entry,
				.data_size = sizeof(long), .maxactive = 16 };
	struct sigaction sa = { .sa_sigaction = step_on_signal,
				.sa_flags = SA_SIGINFO | (altstack ? SA_ONSTACK : 0) };
	static char stack[ALTSTACK_SIZE];
	long x = 1;

	if (altstack) {
		stack_t ss = { .ss_sp = stack, .ss_size = sizeof(stack) };

		if (sigaltstack(&ss, NULL))
			_exit(10);
	}
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL))
		_exit(11);
	ukprobes_set_optimization(entry == OPTIMIZED_ENTRY);
	if (register_kretprobe(&rp))
		_exit(12);
	if (entry == OPTIMIZED_ENTRY) {
		ukprobes_wait_optimizer();
		if (!(rp.kp.flags & KPROBE_FLAG_OPTIMIZED))
			_exit(13);
	}
	/* Warm every lazy path up (PLT slots, per-thread blocks, the
	 * unwinder's library). */
	for (int i = 0; i < 100; i++)
		ksig_outer_call(x++);
	raise(SIGUSR1);
	{
		void *ips[4];

		backtrace(ips, 4);
	}
	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL))
		_exit(14);
	sh->returns = 0;
	sh->nmissed = -(rp.nmissed + (long)rp.kp.nmissed);
	sh->traced = 1;
	for (;;) {
		raise(SIGSTOP);
		if (sh->done)
			break;
		sh->outer_calls++;
		if (ksig_outer_call(x) != 3 * x + 1)
			sh->outer_bad++;
		x++;
	}
	sh->traced = 0;
	/* (Here, not in the tracer: the mappings are this process's.) */
	for (unsigned long i = 0; i < sh->bt_missed && i < BT_MISSES_KEPT; i++)
		sh->bt_missed_in_copy += scn_in_anonymous_text(sh->bt_missed_ip[i]);
	unregister_kretprobe(&rp);
	sh->nmissed += rp.nmissed + (long)rp.kp.nmissed;
	_exit(0);
}


/* Resume @pid (PTRACE_SINGLESTEP, _SYSCALL or _CONT) and wait for its next
 * stop; the signal of that stop, 0 when it exited (*@status tells how). */
static int resume(pid_t pid, enum __ptrace_request how, int sig, int *status)
{
	ptrace(how, pid, NULL, (void *)(long)sig);
	if (waitpid(pid, status, __WALL) != pid || !WIFSTOPPED(*status))
		return 0;
	return WSTOPSIG(*status);
}

/* The si_code of the SIGTRAP @pid stopped with: SI_KERNEL for an int3
 * (the program's: pass it on), SIGTRAP for the step ptrace reports after
 * setting up a signal handler (a signal given there is dropped by the
 * kernel), TRAP_TRACE or TRAP_BRKPT for the step. */
static int trap_code(pid_t pid)
{
	siginfo_t si;

	return ptrace(PTRACE_GETSIGINFO, pid, NULL, &si) ? -1 : si.si_code;
}

static void step_every_instruction(enum entry_kind entry, bool gpr, bool altstack)
{
	enum { TO_OUTER, OUTER, IN_HANDLER, BACK } state = TO_OUTER;
	unsigned long injected = 0, stops = 0, handled_before = 0;
	int status = 0, sig, pass = 0;
	bool skip = false;	/* no signal at this stop (see below) */
	pid_t pid;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(sh, MAP_FAILED);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (!pid)
		step_child(entry, gpr, altstack);
	/* The first stop: the child is ready, at the top of its loop. */
	cr_assert_eq(waitpid(pid, &status, __WALL), pid);
	cr_assert(WIFSTOPPED(status) && WSTOPSIG(status) == SIGSTOP,
		  "the child did not start (status %#x)", status);
	ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)(long)(PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL));
	for (;;) {
		enum __ptrace_request how = state == IN_HANDLER ? PTRACE_CONT :
					    state == BACK ? PTRACE_SYSCALL : PTRACE_SINGLESTEP;
		int deliver = pass;

		if (state == OUTER && !deliver && !skip) {
			/* Here: a signal. */
			deliver = SIGUSR1;
			handled_before = sh->handled;
			injected++;
			state = IN_HANDLER;
			how = PTRACE_CONT;
		}
		skip = false;
		pass = 0;
		sig = resume(pid, how, deliver, &status);
		stops++;
		if (!sig)
			break;
		if (sig == SIGTRAP) {
			int code = trap_code(pid);

			if (code == SI_KERNEL) {
				pass = SIGTRAP;		/* a breakpoint of ukprobes' */
				continue;
			}
			if (code == SIGTRAP)
				skip = true;	/* no signal can be given here */
		}
		if (sig != SIGTRAP && sig != SIGSTOP && sig != (SIGTRAP | 0x80)) {
			pass = sig;
			continue;
		}
		switch (state) {
		case TO_OUTER:
			if (scn_child_ip(pid) ==
			    (unsigned long)ksig_outer)
				state = OUTER;
			break;
		case OUTER:
			if (scn_child_ip(pid) ==
			    (unsigned long)ksig_outer_done) {
				/* The call is over: let the child finish. */
				sh->done = 1;
				while ((sig = resume(pid, PTRACE_CONT, 0, &status)))
					;
				goto out;
			}
			break;
		case IN_HANDLER:
			/* The handler is done: on to its rt_sigreturn. */
			if (sig == SIGSTOP && sh->handled == handled_before + 1)
				state = BACK;
			break;
		case BACK:
			/* Entering rt_sigreturn: one step puts the child back
			 * at the instruction the signal interrupted. */
			if (sig == (SIGTRAP | 0x80) &&
			    scn_child_syscall(pid) ==
			    SYS_rt_sigreturn) {
				sig = resume(pid, PTRACE_SINGLESTEP, 0, &status);
				if (!sig)
					goto out;
				cr_assert_eq(scn_child_ip(pid),
					     sh->interrupted_ip);
				cr_assert_eq(scn_child_sp(pid),
					     sh->interrupted_sp);
				state = OUTER;
				skip = true;	/* it was interrupted here already */
			}
			break;
		}
	}
out:
	cr_log_info("%lu signals, each at one instruction of the call, %lu ptrace stops",
		    injected, stops);
	cr_assert(WIFEXITED(status), "the child died of signal %d after %lu signals",
		  WIFSIGNALED(status) ? WTERMSIG(status) : 0, injected);
	cr_expect_eq(WEXITSTATUS(status), 0, "child setup failed: %d", WEXITSTATUS(status));
	cr_expect_gt(injected, 50, "only %lu instructions stepped", injected);
	cr_expect_eq(sh->outer_calls, 1);
	cr_expect_eq(sh->outer_bad, 0, "the call came back wrong (value or registers)");
	cr_expect_eq(sh->handler_bad, 0, "%lu wrong values", sh->handler_bad);
	cr_expect_eq(sh->handled, injected, "%lu signal handlers ran for %lu signals",
		     sh->handled, injected);
	cr_expect_eq(sh->returns + (unsigned long)sh->nmissed, injected + 1,
		     "return handlers %lu + nmissed %ld != calls %lu", sh->returns, sh->nmissed,
		     injected + 1);
	if (entry == BREAKPOINT_ENTRY) {
		char where[BT_MISSES_KEPT * 80] = "";

		for (unsigned long i = 0; i < sh->bt_missed && i < BT_MISSES_KEPT; i++) {
			Dl_info info;
			void *ip = (void *)sh->bt_missed_ip[i];
			size_t l = strlen(where);

			if (dladdr(ip, &info) && info.dli_sname)
				snprintf(where + l, sizeof(where) - l, "  %p %s+%#lx\n", ip,
					 info.dli_sname,
					 (unsigned long)((char *)ip - (char *)info.dli_saddr));
			else
				snprintf(where + l, sizeof(where) - l, "  %p\n", ip);
		}
		/* The boosted copy of the nop5: the nop and the jmp back. */
		cr_expect(sh->bt_missed <= 2 && sh->bt_missed_in_copy == sh->bt_missed,
			  "%lu stack walks from the signal handler did not reach the caller; "
			  "interrupted at\n%s", sh->bt_missed, where);
	} else {
		cr_log_info("%lu of %lu stack walks stopped short (inside the detour's path)",
			    sh->bt_missed, injected);
	}
	munmap(sh, sizeof(*sh));
}

Test(kretprobes_signals, every_instruction_breakpoint_entry_gpr, .timeout = 120)
{
	step_every_instruction(BREAKPOINT_ENTRY, true, false);
}

Test(kretprobes_signals, every_instruction_breakpoint_entry_default, .timeout = 120)
{
	step_every_instruction(BREAKPOINT_ENTRY, false, false);
}

Test(kretprobes_signals, every_instruction_breakpoint_entry_gpr_altstack, .timeout = 120)
{
	step_every_instruction(BREAKPOINT_ENTRY, true, true);
}

Test(kretprobes_signals, every_instruction_breakpoint_entry_default_altstack, .timeout = 120)
{
	step_every_instruction(BREAKPOINT_ENTRY, false, true);
}

Test(kretprobes_signals, every_instruction_optimized_entry_gpr, .timeout = 120)
{
	step_every_instruction(OPTIMIZED_ENTRY, true, false);
}

Test(kretprobes_signals, every_instruction_optimized_entry_default, .timeout = 120)
{
	step_every_instruction(OPTIMIZED_ENTRY, false, false);
}

Test(kretprobes_signals, every_instruction_optimized_entry_gpr_altstack, .timeout = 120)
{
	step_every_instruction(OPTIMIZED_ENTRY, true, true);
}

Test(kretprobes_signals, every_instruction_optimized_entry_default_altstack, .timeout = 120)
{
	step_every_instruction(OPTIMIZED_ENTRY, false, true);
}
