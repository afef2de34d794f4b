// SPDX-License-Identifier: MIT
/*
 * signal_chain.c - the program's own handlers for the signals ukprobes
 * takes (SIGTRAP, SIGSEGV, SIGBUS, SIGFPE, SIGILL).
 *
 * Once ukprobes owns a signal, the kernel's disposition is ukprobes' handler
 * and the program's wish is kept here: sigaction() and signal() are
 * interposed, so a program that installs or queries a handler later talks to
 * this table and still gets its signals, chained from ours, with the mask,
 * SA_SIGINFO, SA_NODEFER and SA_RESETHAND semantics the kernel would apply.
 *
 * The table is read on the trap path, lock-free, under a sequence counter.
 * Writers (sigaction() may be called from a signal handler, so no mutex)
 * serialize with a spin flag.
 */
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

/* glibc's own implementation, under the name it exports besides sigaction. */
extern int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);

struct ukp_app_sig {
	atomic_uint seq;	/* odd while being written */
	atomic_bool owned;	/* the kernel runs ukprobes' handler */
	atomic_bool wrapped;	/* the kernel runs ukp_app_signal_wrapper */
	struct sigaction act;	/* the program's wish */
};

static struct ukp_app_sig ukp_app[NSIG];
static atomic_flag ukp_sig_wlock = ATOMIC_FLAG_INIT;

static void ukp_sig_wlock_take(void)
{
	while (atomic_flag_test_and_set_explicit(&ukp_sig_wlock, memory_order_acquire))
		;
}

static void ukp_sig_wlock_drop(void)
{
	atomic_flag_clear_explicit(&ukp_sig_wlock, memory_order_release);
}

static void ukp_app_write(int sig, const struct sigaction *act)
{
	struct ukp_app_sig *a = &ukp_app[sig];

	atomic_fetch_add_explicit(&a->seq, 1, memory_order_acq_rel);
	a->act = *act;
	atomic_fetch_add_explicit(&a->seq, 1, memory_order_release);
}

static void ukp_app_read(int sig, struct sigaction *act)
{
	struct ukp_app_sig *a = &ukp_app[sig];
	unsigned int s1, s2;

	do {
		s1 = atomic_load_explicit(&a->seq, memory_order_acquire);
		if (s1 & 1)
			continue;
		memcpy(act, (const void *)&a->act, sizeof(*act));
		atomic_thread_fence(memory_order_acquire);
		s2 = atomic_load_explicit(&a->seq, memory_order_relaxed);
	} while ((s1 & 1) || s1 != s2);
}
NOKPROBE_SYMBOL(ukp_app_read);


/**
 * ukp_signal_take() - install @fn for @sig, remembering the program's
 * current action for chaining.  Returns 0 or a negative errno.
 */
int ukp_signal_take(int sig, void (*fn)(int, siginfo_t *, void *),
		    const sigset_t *mask)
{
	struct sigaction ours, prev;
	int err = 0;

	memset(&ours, 0, sizeof(ours));
	memset(&prev, 0, sizeof(prev));
	ours.sa_sigaction = fn;
	ours.sa_mask = *mask;
	/* SA_NODEFER: a breakpoint inside a handler (reentry) or a fault in one
	 * must reach us; a blocked synchronous signal would kill the process. */
	ours.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER | SA_RESTART;

	ukp_sig_wlock_take();
	if (!atomic_load(&ukp_app[sig].owned)) {
		if (__sigaction(sig, &ours, &prev)) {
			err = -errno;
		} else {
			/* A wrapped handler's table entry is the program's
			 * wish already; the kernel's was our wrapper. */
			if (!atomic_load(&ukp_app[sig].wrapped))
				ukp_app_write(sig, &prev);
			atomic_store(&ukp_app[sig].wrapped, false);
			atomic_store(&ukp_app[sig].owned, true);
		}
	}
	ukp_sig_wlock_drop();
	return err;
}

static int ukp_sigaction_unowned(int sig, const struct sigaction *act,
				 struct sigaction *old);

/** ukp_signal_give_back() - hand @sig back to the program's action. */
void ukp_signal_give_back(int sig)
{
	struct sigaction act;

	ukp_sig_wlock_take();
	if (atomic_load(&ukp_app[sig].owned)) {
		ukp_app_read(sig, &act);
		atomic_store(&ukp_app[sig].owned, false);
		atomic_store(&ukp_app[sig].wrapped, false);
		ukp_sigaction_unowned(sig, &act, NULL);
	}
	ukp_sig_wlock_drop();
}

/*
 * The signal is not a probe's: deliver it to the program as the kernel would
 * have.  @uc is the interrupted context, already translated back to original
 * addresses where a probe was involved.
 */
void ukp_chain_signal(int sig, siginfo_t *info, ucontext_t *uc)
{
	struct sigaction act;
	sigset_t mask, old;
	bool from_kernel = info->si_code > 0;
	int tok;

	ukp_app_read(sig, &act);
	if (act.sa_handler == SIG_IGN && !from_kernel)
		return;
	if (act.sa_handler == SIG_IGN || act.sa_handler == SIG_DFL) {
		/*
		 * The default action (the kernel also turns an ignored
		 * synchronous fault into it): give the signal back and let it
		 * happen.  A fault is re-executed and faults again; a trap or
		 * a sent signal cannot be re-executed and is raised again.
		 */
		struct sigaction dfl;

		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		ukp_sig_wlock_take();
		__sigaction(sig, &dfl, NULL);
		atomic_store(&ukp_app[sig].owned, false);
		ukp_sig_wlock_drop();
		if (sig == SIGTRAP || !from_kernel) {
			sigemptyset(&mask);
			sigaddset(&mask, sig);
			ukp_sys_sigprocmask(SIG_UNBLOCK, &mask, NULL);
			syscall(SYS_tgkill, getpid(), gettid(), sig);
		}
		return;
	}

	/* The mask the kernel would have set for the program's handler. */
	mask = uc->uc_sigmask;
	for (int s = 1; s < NSIG; s++)
		if (sigismember(&act.sa_mask, s) == 1)
			sigaddset(&mask, s);
	if (!(act.sa_flags & SA_NODEFER))
		sigaddset(&mask, sig);
	sigdelset(&mask, SIGTRAP);	/* see signal_mask.c */
	if (act.sa_flags & SA_RESETHAND) {
		struct sigaction dfl;

		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		ukp_sig_wlock_take();
		ukp_app_write(sig, &dfl);
		ukp_sig_wlock_drop();
	}
	ukp_sys_sigprocmask(SIG_SETMASK, &mask, &old);
	tok = ukp_intr_note(uc);
	if (act.sa_flags & SA_SIGINFO)
		act.sa_sigaction(sig, info, uc);
	else
		act.sa_handler(sig);
	ukp_intr_pop(tok);
	ukp_sys_sigprocmask(SIG_SETMASK, &old, NULL);
	/* The context may be inside code optimized while the handler ran. */
	ukp_resume_fixup(uc);
}
NOKPROBE_SYMBOL(ukp_chain_signal);

/* ------------------------------------------------------------------------ */
/* The program's other handlers                                              */
/* ------------------------------------------------------------------------ */

/*
 * A handler of the program's for any other signal runs through this
 * wrapper: when it returns, the interrupted context may have to be moved
 * (ukp_resume_fixup(): code that was optimized while the handler ran).
 * The kernel applies the program's own flags and mask; the wrapper only
 * adds SA_SIGINFO to see the context.
 */
static void ukp_app_signal_wrapper(int sig, siginfo_t *info, void *ucv)
{
	struct sigaction act;
	int tok;

	ukp_app_read(sig, &act);
	if (act.sa_flags & SA_RESETHAND) {
		/* The kernel reset its action: so does the program's view. */
		struct sigaction dfl;

		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		ukp_sig_wlock_take();
		ukp_app_write(sig, &dfl);
		atomic_store(&ukp_app[sig].wrapped, false);
		ukp_sig_wlock_drop();
	}
	if (act.sa_handler == SIG_DFL || act.sa_handler == SIG_IGN)
		return;		/* changed while this signal was on its way */
	tok = ukp_intr_note(ucv);
	if (act.sa_flags & SA_SIGINFO)
		act.sa_sigaction(sig, info, ucv);
	else
		act.sa_handler(sig);
	ukp_intr_pop(tok);
	ukp_resume_fixup(ucv);
}
NOKPROBE_SYMBOL(ukp_app_signal_wrapper);

static bool ukp_wrappable(int sig, const struct sigaction *act)
{
	return act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN &&
	       sig != SIGKILL && sig != SIGSTOP;
}

/* sigaction() for a signal ukprobes does not own.  Write lock held. */
static int ukp_sigaction_unowned(int sig, const struct sigaction *act,
				 struct sigaction *old)
{
	bool was_wrapped = atomic_load(&ukp_app[sig].wrapped), wrap = false;
	struct sigaction prev, kact, kold;

	if (was_wrapped)
		ukp_app_read(sig, &prev);
	if (act) {
		kact = *act;
		/* A handler must not run with SIGTRAP blocked: a probe it
		 * hits would kill the process (signal_mask.c). */
		ukp_mask_strip_trap(&kact);
		wrap = ukp_wrappable(sig, act);
		if (wrap) {
			ukp_app_write(sig, act);
			kact.sa_sigaction = ukp_app_signal_wrapper;
			kact.sa_flags |= SA_SIGINFO;
		}
	}
	if (__sigaction(sig, act ? &kact : NULL, &kold)) {
		if (wrap && was_wrapped)
			ukp_app_write(sig, &prev);
		return -1;
	}
	if (act)
		atomic_store(&ukp_app[sig].wrapped, wrap);
	if (old)
		*old = was_wrapped ? prev : kold;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Interposers                                                               */
/* ------------------------------------------------------------------------ */

UKP_API int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction prev;
	int ret;

	if (sig <= 0 || sig >= NSIG)
		return __sigaction(sig, act, old);
	ukp_sig_wlock_take();
	if (!atomic_load(&ukp_app[sig].owned)) {
		ret = ukp_sigaction_unowned(sig, act, old);
		ukp_sig_wlock_drop();
		return ret;
	}
	ukp_app_read(sig, &prev);
	if (act)
		ukp_app_write(sig, act);
	ukp_sig_wlock_drop();
	if (old)
		*old = prev;
	return 0;
}

static sighandler_t ukp_signal_as(int sig, sighandler_t handler, int flags,
				  bool mask_self)
{
	struct sigaction act, old;

	if (handler == SIG_ERR || sig <= 0 || sig >= NSIG) {
		errno = EINVAL;
		return SIG_ERR;
	}
	memset(&act, 0, sizeof(act));
	act.sa_handler = handler;
	sigemptyset(&act.sa_mask);
	if (mask_self)
		sigaddset(&act.sa_mask, sig);
	act.sa_flags = flags;
	if (sigaction(sig, &act, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* BSD semantics, as glibc's signal(). */
UKP_API sighandler_t signal(int sig, sighandler_t handler)
{
	return ukp_signal_as(sig, handler, SA_RESTART, true);
}

UKP_API sighandler_t bsd_signal(int sig, sighandler_t handler)
{
	return ukp_signal_as(sig, handler, SA_RESTART, true);
}

/* System V semantics: one shot, not masked during the handler. */
UKP_API sighandler_t sysv_signal(int sig, sighandler_t handler)
{
	return ukp_signal_as(sig, handler, SA_RESETHAND | SA_NODEFER, false);
}

/** ukp_signal_after_fork() - a thread that held the write flag at fork()
 * did not come along. */
void ukp_signal_after_fork(void)
{
	atomic_flag_clear(&ukp_sig_wlock);
}
