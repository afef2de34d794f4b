// SPDX-License-Identifier: MIT
/*
 * signal_mask.c - keep SIGTRAP deliverable.
 *
 * A breakpoint raised while SIGTRAP is blocked is fatal: the kernel unblocks
 * it and resets its action to the default, which kills the process.  Many
 * programs block "all signals" in worker threads or in their handlers'
 * sa_mask, so the mask functions are interposed: SIGTRAP is taken out of
 * every mask the program installs, and the program is shown the mask it
 * asked for (a per-thread note of whether it believes SIGTRAP blocked).
 *
 * The interposers call libc's own functions to do the work (a probe on
 * "libc.so.6:sigprocmask" sees the program's calls), found once when the
 * library is loaded; before that, the system calls.
 *
 * Not covered: masks set with the raw rt_sigprocmask system call (glibc
 * itself does so briefly inside pthread_create; posix_spawn is ukprobes'
 * own while probes are in place, see spawn.c).
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "arch_libc.h"
#include "trap.h"

static __thread bool ukp_app_blocks_trap __attribute__((tls_model("initial-exec")));

typedef int (*ukp_mask_fn)(int, const sigset_t *, sigset_t *);

/* libc's own sigprocmask(), pthread_sigmask() and sigaltstack(). */
static ukp_mask_fn ukp_libc_sigprocmask, ukp_libc_pthread_sigmask;
static int (*ukp_libc_sigaltstack)(const stack_t *, stack_t *);

__attribute__((constructor)) static void ukp_mask_init(void)
{
	ukp_libc_sigprocmask = (ukp_mask_fn)dlsym(RTLD_NEXT, "sigprocmask");
	/* dlsym(), not dlvsym(): the default version, or the unversioned
	 * definition of another interposer after us. */
	ukp_libc_pthread_sigmask = (ukp_mask_fn)dlsym(RTLD_NEXT, "pthread_sigmask");
	ukp_libc_sigaltstack = (int (*)(const stack_t *, stack_t *))dlsym(RTLD_NEXT, "sigaltstack");
}

bool ukp_mask_app_blocks_trap(void)
{
	return ukp_app_blocks_trap;
}

/*
 * What glibc's sigprocmask() does: the system call, keeping glibc's two
 * internal signals (thread cancellation and setxid) unblockable.
 */
int ukp_sys_sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t copy;

	if (set && how != SIG_UNBLOCK) {
		copy = *set;
		sigdelset(&copy, 32);	/* SIGCANCEL */
		sigdelset(&copy, 33);				/* SIGSETXID */
		set = &copy;
	}
	return (int)syscall(SYS_rt_sigprocmask, how, set, old, (size_t)(_NSIG / 8));
}

static int ukp_filtered_mask(int how, const sigset_t *set, sigset_t *old,
			     int (*real)(int, const sigset_t *, sigset_t *))
{
	sigset_t copy;
	bool was = ukp_app_blocks_trap, want = was;
	int ret;

	if (set) {
		bool has = sigismember(set, SIGTRAP) == 1;

		switch (how) {
		case SIG_BLOCK:
			want = was || has;
			break;
		case SIG_UNBLOCK:
			want = was && !has;
			break;
		case SIG_SETMASK:
			want = has;
			break;
		default:
			break;
		}
		if (has && how != SIG_UNBLOCK) {
			copy = *set;
			sigdelset(&copy, SIGTRAP);
			set = &copy;
		}
	}
	ret = real(how, set, old);
	if (ret)
		return ret;
	/* The thread's note is its parent thread's too in a vfork child:
	 * the child's mask is its own, the note stays the parent's. */
	if (want != was && !ukp_in_vfork_child())
		ukp_app_blocks_trap = want;
	if (old && was)
		sigaddset(old, SIGTRAP);
	return 0;
}

static int ukp_real_sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	ukp_mask_fn fn = ukp_libc_sigprocmask;

	return fn ? fn(how, set, old) : ukp_sys_sigprocmask(how, set, old);
}

/* sigprocmask() as the program sees it, for libukprobes' own callers
 * (system()): libc's sigprocmask() does the work. */
int ukp_sigprocmask_program(int how, const sigset_t *set, sigset_t *old)
{
	return ukp_filtered_mask(how, set, old, ukp_real_sigprocmask);
}

static int ukp_sigprocmask_entry(int how, const sigset_t *set, sigset_t *old)
{
	return ukp_filtered_mask(how, set, old, ukp_real_sigprocmask);
}
UKP_API int sigprocmask(int how, const sigset_t *set, sigset_t *old)
	__attribute__((alias("ukp_sigprocmask_entry")));
UKP_INTERPOSER(ukp_sigprocmask_entry);

static int ukp_real_pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	ukp_mask_fn fn = ukp_libc_pthread_sigmask;

	/* pthread_sigmask() returns the error instead of setting errno. */
	if (fn)
		return fn(how, set, old);
	return ukp_sys_sigprocmask(how, set, old) ? errno : 0;
}

static int ukp_pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	int saved = errno;
	int ret = ukp_filtered_mask(how, set, old, ukp_real_pthread_sigmask);

	errno = saved;
	return ret;
}
UKP_INTERPOSER(ukp_pthread_sigmask);

/* Programs built against glibc >= 2.32 call pthread_sigmask@GLIBC_2.32,
 * older ones the architecture's first version: answer both. */
UKP_API int ukp_pthread_sigmask_232(int how, const sigset_t *set, sigset_t *old)
	__attribute__((alias("ukp_pthread_sigmask")));
UKP_API int ukp_pthread_sigmask_base(int how, const sigset_t *set, sigset_t *old)
	__attribute__((alias("ukp_pthread_sigmask")));
__asm__(".symver ukp_pthread_sigmask_232, pthread_sigmask@@GLIBC_2.32");
__asm__(".symver ukp_pthread_sigmask_base, pthread_sigmask@" UKP_GLIBC_BASE);

/* A handler's sa_mask must not block SIGTRAP either (signal_chain.c). */
void ukp_mask_strip_trap(struct sigaction *act)
{
	sigdelset(&act->sa_mask, SIGTRAP);
}

/*
 * sigaltstack(): noted per thread, for what has no signal frame to ask (an
 * optimized kretprobe entry tells a call on the signal stack from one on
 * the thread's stack by it).
 */
static int ukp_sigaltstack_entry(const stack_t *ss, stack_t *old)
{
	struct ukp_kcb *kcb = ukp_this_kcb();
	int ret = ukp_libc_sigaltstack ? ukp_libc_sigaltstack(ss, old) :
					 (int)syscall(SYS_sigaltstack, ss, old);

	/* A vfork child's signal stack is its own; the note is its parent
	 * thread's. */
	if (!ret && ss && !ukp_in_vfork_child()) {
		if (ss->ss_flags & SS_DISABLE) {
			kcb->alt_size = 0;
		} else {
			kcb->alt_base = (uintptr_t)ss->ss_sp;
			kcb->alt_size = ss->ss_size;
		}
	}
	return ret;
}
UKP_API int sigaltstack(const stack_t *ss, stack_t *old)
	__attribute__((alias("ukp_sigaltstack_entry")));
UKP_INTERPOSER(ukp_sigaltstack_entry);
