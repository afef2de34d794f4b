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
 *
 * A vfork-style child (vfork(), or clone(CLONE_VM) as in Python's
 * subprocess) shares this table with its parent: what it asks for changes
 * its own kernel dispositions only, never the parent's table.
 *
 * What cannot be interposed, a handler installed with the bare system call
 * or through a libc that libukprobes does not interpose (it was dlopen()ed),
 * is noticed at the next registration (ukp_signals_verify()) and on a fault
 * (ukp_signals_fault_check()): ukprobes takes its signal back and chains
 * the program's new handler, and says so.
 */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/kcmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "arch.h"

/* glibc's own implementation, under the name it exports besides sigaction. */
extern int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);

struct ukp_app_sig {
	atomic_uint seq;	/* odd while being written */
	atomic_bool owned;	/* the kernel runs ukprobes' handler */
	atomic_bool wrapped;	/* the kernel runs ukp_app_signal_wrapper */
	struct sigaction act;	/* the program's wish */
	struct sigaction ours;	/* what ukprobes installed, while owned */
};

/* The kernel's struct sigaction (rt_sigaction(2)), and its flag that says
 * sa_restorer is set (libc's, never the program's business). */
#define UKP_SA_RESTORER 0x04000000ul
struct ukp_ksigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
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

/* ------------------------------------------------------------------------ */
/* vfork-style children                                                      */
/* ------------------------------------------------------------------------ */

/* The process this memory belongs to (kept by fork()'s child handler). */
static pid_t ukp_owner_pid;
/* A child of this thread found to share its memory (kcmp() is slow). */
static __thread pid_t ukp_vm_child_pid __attribute__((tls_model("initial-exec")));

/* The bare system call: libc's getpid() is a function a probe may be on,
 * and these run for the program's calls (sigaltstack() at every thread's
 * start, in some runtimes). */
static pid_t ukp_getpid(void)
{
	return (pid_t)syscall(SYS_getpid);
}

static void ukp_owner_refresh(void)
{
	ukp_owner_pid = ukp_getpid();
	ukp_vm_child_pid = 0;
}

__attribute__((constructor)) static void ukp_owner_init(void)
{
	ukp_owner_refresh();
	pthread_atfork(NULL, NULL, ukp_owner_refresh);
}

/**
 * ukp_in_vfork_child() - is this a child that shares its parent's memory
 * (vfork(), clone(CLONE_VM), ukprobes' own spawn child)?  Such a child must
 * not write what the parent reads.  Async-signal-safe; errno is kept.
 */
bool ukp_in_vfork_child(void)
{
	int saved = errno;
	bool shared;
	pid_t pid;
	long r;

	if (ukp_in_spawn_child)
		return true;
	pid = ukp_getpid();
	if (likely(pid == ukp_owner_pid))
		return false;
	if (pid == ukp_vm_child_pid)
		return true;
	r = syscall(SYS_kcmp, pid, ukp_owner_pid, KCMP_VM, 0, 0);
	if (r == 0) {
		ukp_vm_child_pid = pid;
		shared = true;
	} else if (r > 0 || errno == ESRCH) {
		/* Memory of its own: a fork that skipped the fork handlers
		 * (_Fork(), a bare clone()). */
		ukp_owner_pid = pid;
		shared = false;
	} else {
		shared = true;	/* cannot tell: write nothing that may be shared */
	}
	errno = saved;
	return shared;
}
NOKPROBE_SYMBOL(ukp_in_vfork_child);

/** ukp_signal_owned() - does the kernel run ukprobes' handler for @sig? */
bool ukp_signal_owned(int sig)
{
	return sig > 0 && sig < NSIG && atomic_load(&ukp_app[sig].owned);
}

/** ukp_signal_wish() - the program's action for @sig, as it asked for it. */
void ukp_signal_wish(int sig, struct sigaction *act)
{
	ukp_app_read(sig, act);
}


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
			ukp_app[sig].ours = ours;
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
	bool child = ukp_in_vfork_child();
	int tok;

	ukp_app_read(sig, &act);
	/* ukprobes' spawn child: the program's handlers are SIG_DFL there,
	 * as in glibc's (they would run on the parent's memory). */
	if (ukp_in_spawn_child && act.sa_handler != SIG_IGN)
		act.sa_handler = SIG_DFL;
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
		if (child) {
			/* Its own disposition; the table is the parent's. */
			__sigaction(sig, &dfl, NULL);
		} else {
			ukp_sig_wlock_take();
			__sigaction(sig, &dfl, NULL);
			atomic_store(&ukp_app[sig].owned, false);
			ukp_sig_wlock_drop();
		}
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
	if ((act.sa_flags & SA_RESETHAND) && !child) {
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
	if ((act.sa_flags & SA_RESETHAND) && !ukp_in_vfork_child()) {
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

/*
 * sigaction() in a vfork-style child: its own kernel disposition, never the
 * parent's table.  ukprobes' handlers stay until the exec resets them (a
 * probe hit in the child needs them); the child is shown the program's
 * action it inherited.
 */
static int ukp_sigaction_in_child(int sig, const struct sigaction *act,
				  struct sigaction *old)
{
	struct sigaction wish, kact;

	ukp_app_read(sig, &wish);
	if (atomic_load(&ukp_app[sig].owned)) {
		if (old)
			*old = wish;
		return 0;
	}
	if (act) {
		kact = *act;
		ukp_mask_strip_trap(&kact);
		act = &kact;
	}
	if (__sigaction(sig, act, old))
		return -1;
	if (old && old->sa_sigaction == ukp_app_signal_wrapper)
		*old = wish;
	return 0;
}

static int ukp_sigaction_impl(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction prev;
	int ret;

	if (sig <= 0 || sig >= NSIG)
		return __sigaction(sig, act, old);
	if (ukp_in_vfork_child())
		return ukp_sigaction_in_child(sig, act, old);
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
	/* A query runs libc's own sigaction() too, as without ukprobes (a
	 * probe on it sees the call); a change cannot: it would install. */
	if (!act)
		__sigaction(sig, NULL, old);
	if (old)
		*old = prev;
	return 0;
}

static int ukp_sigaction_entry(int sig, const struct sigaction *act, struct sigaction *old)
{
	return ukp_sigaction_impl(sig, act, old);
}
UKP_API int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
	__attribute__((alias("ukp_sigaction_entry")));
UKP_INTERPOSER(ukp_sigaction_entry);

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
	if (ukp_sigaction_impl(sig, &act, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* BSD semantics, as glibc's signal(). */
static sighandler_t ukp_signal_entry(int sig, sighandler_t handler)
{
	return ukp_signal_as(sig, handler, SA_RESTART, true);
}
UKP_API sighandler_t signal(int sig, sighandler_t handler)
	__attribute__((alias("ukp_signal_entry")));
UKP_INTERPOSER(ukp_signal_entry);

static sighandler_t ukp_bsd_signal_entry(int sig, sighandler_t handler)
{
	return ukp_signal_as(sig, handler, SA_RESTART, true);
}
UKP_API sighandler_t bsd_signal(int sig, sighandler_t handler)
	__attribute__((alias("ukp_bsd_signal_entry")));
UKP_INTERPOSER(ukp_bsd_signal_entry);

/* System V semantics: one shot, not masked during the handler. */
static sighandler_t ukp_sysv_signal_entry(int sig, sighandler_t handler)
{
	return ukp_signal_as(sig, handler, SA_RESETHAND | SA_NODEFER, false);
}
UKP_API sighandler_t sysv_signal(int sig, sighandler_t handler)
	__attribute__((alias("ukp_sysv_signal_entry")));
UKP_INTERPOSER(ukp_sysv_signal_entry);

/* ------------------------------------------------------------------------ */
/* Handlers replaced behind our back                                         */
/* ------------------------------------------------------------------------ */

static int ukp_kernel_action(int sig, struct ukp_ksigaction *k)
{
	return (int)syscall(SYS_rt_sigaction, sig, NULL, k, sizeof(k->mask));
}

static const char *ukp_signame(int sig)
{
	const char *n = sigabbrev_np(sig);

	return n ? n : "?";
}

/*
 * @sig is ours in the table but not in the kernel: adopt what is there as
 * the program's wish, and install ours again.  Write lock held.  Returns
 * true when it was so.
 */
static bool ukp_retake_locked(int sig)
{
	struct ukp_ksigaction k;
	struct sigaction theirs;

	if (!atomic_load(&ukp_app[sig].owned) || ukp_kernel_action(sig, &k) ||
	    (void *)k.handler == (void *)ukp_app[sig].ours.sa_sigaction)
		return false;
	memset(&theirs, 0, sizeof(theirs));
	theirs.sa_handler = k.handler;
	theirs.sa_flags = (int)(k.flags & ~UKP_SA_RESTORER);
	sigemptyset(&theirs.sa_mask);
	for (int s = 1; s <= 64; s++)
		if (k.mask & (1ull << (s - 1)))
			sigaddset(&theirs.sa_mask, s);
	if (__sigaction(sig, &ukp_app[sig].ours, NULL))
		return false;
	ukp_app_write(sig, &theirs);
	return true;
}

/* SIGTRAP was taken back at a fault: said at the next registration too. */
static atomic_bool ukp_fault_retook;

/* Where libukprobes and libc are in the load order (the dynamic linker's
 * lookup order for the program's calls). */
struct ukp_order {
	int n, self, libc;
};

static bool ukp_object_has(const struct dl_phdr_info *info, uintptr_t addr)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && addr - (info->dlpi_addr + ph->p_vaddr) < ph->p_memsz)
			return true;
	}
	return false;
}

static int ukp_order_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct ukp_order *o = data;

	(void)size;
	if (ukp_object_has(info, (uintptr_t)ukp_sigaction_entry))
		o->self = o->n;
	if (ukp_object_has(info, (uintptr_t)__sigaction))
		o->libc = o->n;
	o->n++;
	return 0;
}

/* The TracerPid line of /proc/self/status; 0 when not traced. */
static int ukp_tracer_pid(void)
{
	char buf[2048], *p;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strstr(buf, "TracerPid:");
	return p ? atoi(p + 10) : 0;
}

/*
 * What ukprobes cannot do by itself, said once, when it first takes its
 * signals: interpose sigaction() and the mask functions (libukprobes came
 * after libc, by dlopen()), or be sure a tracer delivers its SIGTRAPs.
 */
static void ukp_signals_first_notes(void)
{
	struct ukp_order o = { 0, -1, -1 };
	int tracer;

	/* After libc, the program's calls bind to libc's functions (a
	 * sanitizer's interceptors in between still reach ours). */
	dl_iterate_phdr(ukp_order_cb, &o);
	if (o.self > o.libc && o.libc >= 0)
		pr_warn("loaded after libc (dlopen()?): the program's sigaction(), "
			"signal() and sigprocmask() are not seen; a handler it "
			"installs for SIGTRAP, SIGSEGV, SIGBUS, SIGFPE or SIGILL is "
			"taken back at the next registration, and a mask that blocks "
			"SIGTRAP kills the thread at a probe\n");
	tracer = ukp_tracer_pid();
	if (tracer)
		pr_info("traced by pid %d: probe hits are SIGTRAPs it must pass to "
			"the program (gdb: see ukprobes(7), \"Signals\")\n", tracer);
}

/**
 * ukp_signals_verify() - at a registration: are ukprobes' handlers still
 * installed?  One replaced behind our back (the bare rt_sigaction system
 * call, or a libc sigaction() that is not ours) is taken back, the
 * program's handler kept for chaining, and the fact logged.  @first: the
 * signals were just taken.  Returns 0.
 */
int ukp_signals_verify(bool first)
{
	static const int sigs[] = { SIGTRAP, SIGSEGV, SIGBUS, SIGFPE, SIGILL };
	static atomic_bool noted_fault;

	if (first) {
		ukp_signals_first_notes();
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++) {
		bool retaken;

		ukp_sig_wlock_take();
		retaken = ukp_retake_locked(sigs[i]);
		ukp_sig_wlock_drop();
		if (retaken)
			pr_warn("the SIG%s handler was replaced behind ukprobes' back (the bare "
				"rt_sigaction() system call, or a sigaction() ukprobes does not "
				"interpose): taken back; the program's handler runs for the "
				"signals that are not ukprobes'\n", ukp_signame(sigs[i]));
	}
	if (atomic_exchange(&ukp_fault_retook, false) && !atomic_exchange(&noted_fault, true))
		pr_warn("SIGTRAP had been taken back at a fault (see the message on "
			"standard error)\n");
	return 0;
}

/* Write a hex number (no stdio: signal context). */
static size_t ukp_fmt_hex(char *out, uintptr_t v)
{
	char tmp[2 + 2 * sizeof(v)];
	size_t n = 0, len = 0;

	do {
		tmp[n++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	out[len++] = '0';
	out[len++] = 'x';
	while (n)
		out[len++] = tmp[--n];
	return len;
}

/**
 * ukp_signals_fault_check() - a fault that goes to the program: was our
 * SIGTRAP handler replaced behind our back?  Then a breakpoint of ours
 * went to that handler, and the program resumed inside the probed
 * instruction: the fault is likely a consequence.  Take SIGTRAP back (the
 * next hits work) and say so on standard error before the program's
 * handler, or the default action, sees the fault.  Signal context.
 */
void ukp_signals_fault_check(uintptr_t ip)
{
	static const char m1[] = "ukprobes: SIGTRAP was taken from ukprobes behind its back "
				 "(bare rt_sigaction() system call?): a probe hit went to the "
				 "program's handler";
	static const char m2[] = "; this fault at ";
	static const char m3[] = " follows the breakpoint at ";
	static const char m4[] = ". Taken back.\n";
	struct ukp_point *pt;
	char line[sizeof(m1) + sizeof(m2) + sizeof(m3) + sizeof(m4) + 40];
	unsigned int idx;
	size_t n = 0;
	bool retaken;

	if (ukp_in_vfork_child() ||
	    atomic_flag_test_and_set_explicit(&ukp_sig_wlock, memory_order_acquire))
		return;		/* the interrupted code holds the write flag */
	retaken = ukp_retake_locked(SIGTRAP);
	ukp_sig_wlock_drop();
	if (!retaken)
		return;
	atomic_store(&ukp_fault_retook, true);
	memcpy(line, m1, sizeof(m1) - 1);
	n = sizeof(m1) - 1;
	idx = ukp_srcu_read_lock();
	pt = ukp_point_lookup(ip - arch_breakpoint_len());
	if (pt && pt->armed) {
		memcpy(line + n, m2, sizeof(m2) - 1);
		n += sizeof(m2) - 1;
		n += ukp_fmt_hex(line + n, ip);
		memcpy(line + n, m3, sizeof(m3) - 1);
		n += sizeof(m3) - 1;
		n += ukp_fmt_hex(line + n, pt->addr);
	}
	ukp_srcu_read_unlock(idx);
	memcpy(line + n, m4, sizeof(m4) - 1);
	n += sizeof(m4) - 1;
	if (write(STDERR_FILENO, line, n) < 0)
		return;
}
NOKPROBE_SYMBOL(ukp_signals_fault_check);

/** ukp_signal_after_fork() - a thread that held the write flag at fork()
 * did not come along. */
void ukp_signal_after_fork(void)
{
	atomic_flag_clear(&ukp_sig_wlock);
}
