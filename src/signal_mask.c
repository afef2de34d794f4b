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
 * Not covered: masks set with the raw rt_sigprocmask system call (glibc
 * itself does so briefly inside pthread_create and posix_spawn).
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "trap.h"

static __thread bool ukp_app_blocks_trap __attribute__((tls_model("initial-exec")));

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
	ukp_app_blocks_trap = want;
	if (old && was)
		sigaddset(old, SIGTRAP);
	return 0;
}

UKP_API int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	return ukp_filtered_mask(how, set, old, ukp_sys_sigprocmask);
}

static int ukp_real_pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	/* pthread_sigmask() returns the error instead of setting errno. */
	return ukp_sys_sigprocmask(how, set, old) ? errno : 0;
}

static int ukp_pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	int saved = errno;
	int ret = ukp_filtered_mask(how, set, old, ukp_real_pthread_sigmask);

	errno = saved;
	return ret;
}

/* Programs built against glibc >= 2.32 call pthread_sigmask@GLIBC_2.32,
 * older ones @GLIBC_2.2.5: answer both. */
UKP_API int ukp_pthread_sigmask_232(int how, const sigset_t *set, sigset_t *old)
	__attribute__((alias("ukp_pthread_sigmask")));
UKP_API int ukp_pthread_sigmask_225(int how, const sigset_t *set, sigset_t *old)
	__attribute__((alias("ukp_pthread_sigmask")));
__asm__(".symver ukp_pthread_sigmask_232, pthread_sigmask@@GLIBC_2.32");
__asm__(".symver ukp_pthread_sigmask_225, pthread_sigmask@GLIBC_2.2.5");

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
UKP_API int sigaltstack(const stack_t *ss, stack_t *old)
{
	struct ukp_kcb *kcb = ukp_this_kcb();
	int ret = (int)syscall(SYS_sigaltstack, ss, old);

	if (!ret && ss) {
		if (ss->ss_flags & SS_DISABLE) {
			kcb->alt_size = 0;
		} else {
			kcb->alt_base = (uintptr_t)ss->ss_sp;
			kcb->alt_size = ss->ss_size;
		}
	}
	return ret;
}
