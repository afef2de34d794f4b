// SPDX-License-Identifier: MIT
/*
 * spawn.c - a vfork-style child that keeps ukprobes' handlers until its
 * execve: posix_spawn() and posix_spawnp() (system() and popen() are in
 * spawn_shell.c).
 *
 * Design note.  glibc starts the child of posix_spawn(), system() and
 * popen() with clone(CLONE_VM | CLONE_VFORK): it blocks every signal in the
 * calling thread, and the child, which shares the parent's memory, resets
 * every handled signal to SIG_DFL, runs the file actions and calls execve().
 * A breakpoint in that code (execve, close, dup2, ..., or munmap and
 * waitpid in the parent while everything is blocked) is fatal: the kernel
 * kills a thread whose synchronous SIGTRAP is blocked or has no handler.
 * system() and popen() call that code inside libc, past any interposition
 * of posix_spawn().  Three ways out were weighed:
 *  - probes on the spawn path that never trap (optimized, or emulated by
 *    the detour): not every probe can be optimized (post handlers, the
 *    int3 while (un)optimizing, optimization turned off), so no guarantee;
 *  - patching glibc's child routine, found by its call to execve: it
 *    depends on glibc's private structures version by version, and leaves
 *    the parent's all-blocked window;
 *  - a child path of our own (chosen).  While ukprobes' SIGTRAP handler is
 *    installed, posix_spawn(), posix_spawnp(), system() and popen() (with
 *    pclose() and fclose() for its streams) are ukprobes' own: the child is
 *    cloned with CLONE_VM | CLONE_VFORK as glibc does, with the asynchronous
 *    signals blocked (no handler of the program may run in it) but SIGTRAP
 *    and the fault signals never blocked; it resets the program's handlers
 *    to SIG_DFL as glibc does, but keeps ukprobes' own (the kernel resets
 *    them at the execve); it runs the file actions and execve() through
 *    libc's public functions, so probes on them hit and are counted, and
 *    the tracer's execve() interposer still sees the exec.  Attributes are
 *    read with posix_spawnattr_get*(); file actions in glibc's layout of
 *    posix_spawn_file_actions_t, checked once against glibc's own add
 *    functions.  Anything else (an unknown flag or action, an unknown
 *    layout) goes to glibc's posix_spawn(), with a warning.
 *
 * The child runs on the parent thread's TLS: its hits use the parent's
 * per-thread probe state.  The parent is suspended meanwhile, and resumes
 * inside clone() before this file gets control back, so that state must
 * stay valid, not merely be restored: the child runs on the parent's own
 * stack, below the parent's frames (as a vfork() child does), so that the
 * return probes it enters lie below every return probe the parent has in
 * flight and are reclaimed as dead frames, never mistaken for live ones.
 * When the stack has no room for the child, it runs on a stack of its own
 * and every hit in it is missed (counted in nmissed, no handler runs).  The
 * step record the child may leave (it execs in the middle of a step) is
 * put back as it was.  The child is invisible to /proc/self/task: while
 * one runs, no code is rewritten under it (quiesce.c waits).
 *
 * What the new program inherits is what the program asked for: a signal
 * mask in which it blocked SIGTRAP (ukprobes keeps it deliverable in the
 * process), or SIGTRAP ignored, is set just before an execve made with the
 * bare system call, so no probe can hit in between (a probe on execve then
 * does not see that exec).
 *
 * Not covered: wordexp() (command substitution), glibc 2.39's
 * pidfd_spawn(), and a program's own clone() children.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <paths.h>
#include <pthread.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "internal.h"
#include "arch_libc.h"
#include "spawn_req.h"
#include "trap.h"

/* The child's stack, below the parent's frames; past the red zone and
 * clone()'s own few bytes. */
#define UKP_SPAWN_STACK		(128 * 1024)
#define UKP_SPAWN_GAP		8192
#define UKP_PAGE		((uintptr_t)UKP_ARCH_PAGE_SIZE)
/* The main thread's stack below __libc_stack_end holds more than its
 * frames (auxv, the environment strings live above it): a margin. */
#define UKP_MAIN_STACK_SLACK	(256 * 1024)

/* Children of ours that run now (quiesce.c cannot see them). */
atomic_int ukp_spawn_children;

/* In the child only (the TLS is the parent thread's, which is suspended). */
__thread bool ukp_in_spawn_child __attribute__((tls_model("initial-exec")));

extern void *__libc_stack_end;

static const int ukp_sync_signals[] = { SIGTRAP, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGSYS };

#define UKP_SPAWN_FLAGS (POSIX_SPAWN_RESETIDS | POSIX_SPAWN_SETPGROUP |	\
			 POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK |	\
			 POSIX_SPAWN_SETSCHEDPARAM | POSIX_SPAWN_SETSCHEDULER | \
			 POSIX_SPAWN_USEVFORK | POSIX_SPAWN_SETSID)

/* glibc's signals for thread cancellation and set*id(). */
#define UKP_SIGCANCEL	32
#define UKP_SIGSETXID	33

/* The kernel's struct sigaction (rt_sigaction(2)). */
struct ukp_ksigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

struct ukp_spawn_args {
	const struct ukp_spawn_req *req;
	uint64_t mask;		/* the new program's signal mask */
	uint64_t ignore;	/* ukprobes' signals it starts ignoring */
	bool bare_exec;		/* SIGTRAP blocked or ignored across the exec */
	bool miss;		/* no room on the parent's stack: hits missed */
	int err;		/* the child's errno when it could not exec */
};

bool ukp_spawn_ours(void)
{
	return ukp_signal_owned(SIGTRAP);
}

void ukp_spawn_req_init(struct ukp_spawn_req *req)
{
	memset(req, 0, sizeof(*req));
	sigemptyset(&req->sigdefault);
	sigemptyset(&req->sigmask);
}

static uint64_t ukp_sigbit(int sig)
{
	return 1ull << (sig - 1);
}

static uint64_t ukp_sigset_bits(const sigset_t *set)
{
	uint64_t bits = 0;

	for (int sig = 1; sig <= 64; sig++)
		if (sigismember(set, sig) == 1)
			bits |= ukp_sigbit(sig);
	return bits;
}

/* ------------------------------------------------------------------------ */
/* The child                                                                 */
/* ------------------------------------------------------------------------ */

static int ukp_child_sigaction(int sig, void (*handler)(int))
{
	struct ukp_ksigaction k = { .handler = handler };

	return (int)syscall(SYS_rt_sigaction, sig, &k, NULL, sizeof(uint64_t));
}

/*
 * No handler of the program may run in the child (it would run on the
 * parent's memory): handled signals go back to SIG_DFL, as glibc's child
 * does, but ukprobes' own handlers stay until the execve resets them.
 */
static void ukp_child_reset_handlers(const struct ukp_spawn_req *r)
{
	for (int sig = 1; sig < _NSIG; sig++) {
		struct ukp_ksigaction k;

		if (sig == SIGKILL || sig == SIGSTOP || ukp_signal_owned(sig))
			continue;
		if ((r->flags & POSIX_SPAWN_SETSIGDEF) && sigismember(&r->sigdefault, sig) == 1) {
			ukp_child_sigaction(sig, SIG_DFL);
		} else if (sig == UKP_SIGCANCEL || sig == UKP_SIGSETXID) {
			ukp_child_sigaction(sig, SIG_IGN);
		} else if (!syscall(SYS_rt_sigaction, sig, NULL, &k, sizeof(uint64_t)) &&
			   k.handler != SIG_IGN && k.handler != SIG_DFL) {
			ukp_child_sigaction(sig, SIG_DFL);
		}
	}
}

/* The attributes, in glibc's order.  0 or -1 (errno set). */
static int ukp_child_attributes(const struct ukp_spawn_req *r)
{
	short f = r->flags;

	if ((f & (POSIX_SPAWN_SETSCHEDPARAM | POSIX_SPAWN_SETSCHEDULER)) ==
	    POSIX_SPAWN_SETSCHEDPARAM) {
		if (sched_setparam(0, &r->param) == -1)
			return -1;
	} else if (f & POSIX_SPAWN_SETSCHEDULER) {
		if (sched_setscheduler(0, r->policy, &r->param) == -1)
			return -1;
	}
	if ((f & POSIX_SPAWN_SETSID) && setsid() < 0)
		return -1;
	if ((f & POSIX_SPAWN_SETPGROUP) && setpgid(0, r->pgroup))
		return -1;
	/* The bare system calls: libc's seteuid() would signal every thread
	 * of the parent (set*id() broadcasts), whose memory this is. */
	if ((f & POSIX_SPAWN_RESETIDS) &&
	    (syscall(SYS_setresuid, -1, getuid(), -1) ||
	     syscall(SYS_setresgid, -1, getgid(), -1)))
		return -1;
	return 0;
}

/* closefrom() without close_range(): every descriptor listed in /proc. */
static int ukp_child_closefrom_slow(int from)
{
	char buf[1024];
	int dfd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	long n;

	if (dfd < 0)
		return -1;
	while ((n = syscall(SYS_getdents64, dfd, buf, sizeof(buf))) > 0) {
		bool closed = false;

		for (long off = 0; off < n;) {
			struct { uint64_t ino; int64_t off; unsigned short reclen;
				 unsigned char type; char name[]; } *d = (void *)(buf + off);
			int fd = atoi(d->name);

			if (d->name[0] != '.' && fd >= from && fd != dfd) {
				close(fd);
				closed = true;
			}
			off += d->reclen;
		}
		if (closed)
			lseek(dfd, 0, SEEK_SET);
	}
	close(dfd);
	return n < 0 ? -1 : 0;
}

static int ukp_child_file_action(const struct ukp_spawn_req *r, const struct ukp_fa *a)
{
	struct rlimit rl;
	int fd;

	switch (a->kind) {
	case UKP_FA_CLOSE:
		/* Only a descriptor out of range is an error (glibc). */
		if (close(a->fd) && (a->fd < 0 || (!getrlimit(RLIMIT_NOFILE, &rl) &&
						   (rlim_t)a->fd >= rl.rlim_cur)))
			return -1;
		return 0;
	case UKP_FA_OPEN:
		close(a->fd);
		fd = open(a->path, a->oflag | O_LARGEFILE, a->mode);
		if (fd < 0)
			return -1;
		if (fd != a->fd && (dup2(fd, a->fd) != a->fd || close(fd)))
			return -1;
		return 0;
	case UKP_FA_DUP2:
		if (a->fd == a->newfd) {
			/* Austin Group issue #411: clears close-on-exec. */
			int fl = fcntl(a->fd, F_GETFD);

			return fl < 0 || fcntl(a->fd, F_SETFD, fl & ~FD_CLOEXEC) < 0 ? -1 : 0;
		}
		return dup2(a->fd, a->newfd) == a->newfd ? 0 : -1;
	case UKP_FA_CHDIR:
		return chdir(a->path);
	case UKP_FA_FCHDIR:
		return fchdir(a->fd);
	case UKP_FA_CLOSEFROM:
		if (!syscall(SYS_close_range, a->fd, ~0u, 0))
			return 0;
		return ukp_child_closefrom_slow(a->fd);
	case UKP_FA_TCSETPGRP:
		return tcsetpgrp(a->fd, (r->flags & POSIX_SPAWN_SETPGROUP) && r->pgroup ?
					r->pgroup : getpgid(0));
	}
	errno = EINVAL;
	return -1;
}

static void ukp_child_exec_one(const struct ukp_spawn_args *a, const char *path,
			       char *const argv[])
{
	if (a->bare_exec)
		syscall(SYS_execve, path, argv, a->req->envp);
	else
		execve(path, argv, a->req->envp);
}

/* A file the kernel would not run (ENOEXEC): /bin/sh reads it, for the
 * first versions of posix_spawn() and posix_spawnp() (UKP_GLIBC_BASE). */
static void ukp_child_exec_script(const struct ukp_spawn_args *a, const char *file)
{
	char *const *argv = a->req->argv;
	size_t argc = 0;

	while (argv && argv[argc])
		argc++;
	{
		char *nargv[argc + 3];

		nargv[0] = (char *)_PATH_BSHELL;
		nargv[1] = (char *)file;
		for (size_t i = 1; i <= argc; i++)
			nargv[i + 1] = argv[i];
		nargv[argc > 1 ? argc + 1 : 2] = NULL;
		ukp_child_exec_one(a, _PATH_BSHELL, nargv);
	}
}

/* posix_spawnp(): glibc's __execvpex(), the PATH of the parent. */
static void ukp_child_exec_path(const struct ukp_spawn_args *a)
{
	const char *file = a->req->file, *path = getenv("PATH"), *p, *end;
	size_t flen = strnlen(file, NAME_MAX + 1);
	char buf[PATH_MAX + NAME_MAX + 2];
	bool eacces = false;

	if (!path)
		path = "/bin:/usr/bin";
	if (flen > NAME_MAX) {
		errno = ENAMETOOLONG;
		return;
	}
	for (p = path;; p = end + 1) {
		size_t dlen;

		end = strchrnul(p, ':');
		dlen = (size_t)(end - p);
		if (dlen < PATH_MAX) {
			memcpy(buf, p, dlen);
			buf[dlen] = '/';
			memcpy(buf + dlen + (dlen > 0), file, flen + 1);
			ukp_child_exec_one(a, buf, a->req->argv);
			switch (errno) {
			case EACCES:
				eacces = true;
				/* fall through */
			case ENOENT:
			case ESTALE:
			case ENOTDIR:
			case ENODEV:
			case ETIMEDOUT:
				break;
			default:
				return;
			}
		}
		if (!*end)
			break;
	}
	if (eacces)
		errno = EACCES;
}

static void ukp_child_exec(const struct ukp_spawn_args *a)
{
	const struct ukp_spawn_req *r = a->req;

	for (int sig = 1; sig <= 64; sig++)
		if ((a->ignore & ukp_sigbit(sig)) && (sig != SIGTRAP || a->bare_exec))
			ukp_child_sigaction(sig, SIG_IGN);
	/* From here on, no probe may hit when SIGTRAP is to be blocked. */
	syscall(SYS_rt_sigprocmask, SIG_SETMASK,
		&(uint64_t){ a->bare_exec ? a->mask : a->mask & ~ukp_sigbit(SIGTRAP) },
		NULL, sizeof(uint64_t));
	if (!*r->file) {
		errno = ENOENT;
		return;
	}
	if (r->use_path && !strchr(r->file, '/'))
		ukp_child_exec_path(a);
	else
		ukp_child_exec_one(a, r->file, r->argv);
	if (errno == ENOEXEC && r->try_shell)
		ukp_child_exec_script(a, r->file);
}

static int ukp_spawn_child(void *arg)
{
	struct ukp_spawn_args *a = arg;
	const struct ukp_spawn_req *r = a->req;
	stack_t off = { .ss_flags = SS_DISABLE };

	ukp_in_spawn_child = true;
	if (a->miss)
		ukp_this_kcb()->depth++;
	/* Our handlers' frames on this stack, not on the parent's signal
	 * stack, which the parent may be using. */
	syscall(SYS_sigaltstack, &off, NULL);
	ukp_child_reset_handlers(r);
	if (ukp_child_attributes(r))
		goto fail;
	for (int i = 0; i < r->nfa; i++)
		if (ukp_child_file_action(r, &r->fa[i]))
			goto fail;
	ukp_child_exec(a);
fail:
	a->err = errno ? errno : ECHILD;
	return 127;
}

/* ------------------------------------------------------------------------ */
/* The parent                                                                */
/* ------------------------------------------------------------------------ */

/*
 * Can [low, high) be the child's stack?  It must lie inside this thread's
 * stack: on the main thread's, within what RLIMIT_STACK lets it grow to;
 * elsewhere every page of it readable (a thread stack's guard page is not).
 */
static bool ukp_stack_usable(uintptr_t low, uintptr_t high)
{
	uintptr_t top = (uintptr_t)__libc_stack_end;
	struct iovec local, remote[(UKP_SPAWN_STACK + UKP_SPAWN_GAP) / UKP_PAGE + 2];
	char sink[sizeof(remote) / sizeof(remote[0])];
	pid_t pid = (pid_t)syscall(SYS_getpid);
	unsigned int n = 0;
	struct rlimit rl;

	if ((pid_t)syscall(SYS_gettid) == pid && high < top && !getrlimit(RLIMIT_STACK, &rl)) {
		if (rl.rlim_cur == RLIM_INFINITY)
			return true;
		if (top - low + UKP_MAIN_STACK_SLACK <= rl.rlim_cur)
			return true;
	}
	for (uintptr_t pg = low & ~(UKP_PAGE - 1); pg < high && n < sizeof(sink); pg += UKP_PAGE) {
		remote[n].iov_base = (void *)(pg < low ? low : pg);
		remote[n].iov_len = 1;
		n++;
	}
	local.iov_base = sink;
	local.iov_len = n;
	return syscall(SYS_process_vm_readv, pid, &local, 1ul, remote, (unsigned long)n, 0ul) ==
	       (long)n;
}

/* clone() with the child's stack below this frame, or on @own. */
static __attribute__((noinline)) pid_t ukp_spawn_clone(struct ukp_spawn_args *a, char *own)
{
	uintptr_t top = ((uintptr_t)__builtin_frame_address(0) - UKP_SPAWN_GAP) &
			~(uintptr_t)(UKP_ARCH_STACK_ALIGN - 1);

	if (!own && !ukp_stack_usable(top - UKP_SPAWN_STACK, top))
		return -2;
	a->miss = own != NULL;
	return clone(ukp_spawn_child, own ? own + UKP_SPAWN_STACK : (void *)top,
		     CLONE_VM | CLONE_VFORK | SIGCHLD, a);
}

/*
 * What the new program starts with: the mask and the ignored signals the
 * program asked for (as it sees them: ukprobes keeps SIGTRAP deliverable
 * and its own handlers installed in the process).
 */
static void ukp_spawn_inherit(struct ukp_spawn_args *a, uint64_t kmask)
{
	const struct ukp_spawn_req *r = a->req;
	uint64_t def = (r->flags & POSIX_SPAWN_SETSIGDEF) ? ukp_sigset_bits(&r->sigdefault) : 0;

	if (r->flags & POSIX_SPAWN_SETSIGMASK) {
		a->mask = ukp_sigset_bits(&r->sigmask) &
			  ~(ukp_sigbit(UKP_SIGCANCEL) | ukp_sigbit(UKP_SIGSETXID));
	} else {
		a->mask = kmask;
		if (ukp_mask_app_blocks_trap())
			a->mask |= ukp_sigbit(SIGTRAP);
	}
	for (int sig = 1; sig <= 64; sig++) {
		struct sigaction wish;

		if (!ukp_signal_owned(sig) || (def & ukp_sigbit(sig)))
			continue;
		ukp_signal_wish(sig, &wish);
		if (wish.sa_handler == SIG_IGN)
			a->ignore |= ukp_sigbit(sig);
	}
	a->bare_exec = (a->mask | a->ignore) & ukp_sigbit(SIGTRAP);
}

int ukp_spawn(pid_t *pidp, const struct ukp_spawn_req *req)
{
	struct ukp_kcb *kcb = ukp_this_kcb(), saved;
	struct ukp_spawn_args a;
	int saved_errno = errno, state, ec = 0;
	uint64_t block = ~0ull, old = 0;
	char *own = NULL;
	pid_t pid;

	memset(&a, 0, sizeof(a));
	a.req = req;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
	/* Every asynchronous signal blocked in the child (and here until it
	 * is gone); the synchronous ones must always reach us. */
	for (size_t i = 0; i < ARRAY_SIZE(ukp_sync_signals); i++)
		block &= ~ukp_sigbit(ukp_sync_signals[i]);
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &block, &old, sizeof(uint64_t));
	ukp_spawn_inherit(&a, old);

	saved = *kcb;
	atomic_fetch_add(&ukp_spawn_children, 1);
	pid = ukp_spawn_clone(&a, NULL);
	if (pid == -2) {
		own = mmap(NULL, UKP_SPAWN_STACK, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
		pid = own == MAP_FAILED ? -1 : ukp_spawn_clone(&a, own);
	}
	if (pid < 0)
		ec = errno;
	ukp_in_spawn_child = false;
	atomic_fetch_sub(&ukp_spawn_children, 1);
	/* The child's hits ran on this thread's state: a step it began and
	 * never finished (it exec'd from the copy) is not ours. */
	kcb->depth = saved.depth;
	kcb->cur = saved.cur;
	kcb->recover = saved.recover;
	kcb->uc = saved.uc;
	kcb->ret_tramp = saved.ret_tramp;
	kcb->ss_trap = saved.ss_trap;
	kcb->ss_copy = saved.ss_copy;
	kcb->ss_addr = saved.ss_addr;
	kcb->ss_gen = saved.ss_gen;
	kcb->ss_mask = saved.ss_mask;

	if (pid > 0 && a.err > 0) {
		/* It could not exec: reap it, report why. */
		ec = a.err;
		waitpid(pid, NULL, 0);
	}
	if (own && own != MAP_FAILED)
		munmap(own, UKP_SPAWN_STACK);
	if (!ec && pidp)
		*pidp = pid;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof(uint64_t));
	pthread_setcancelstate(state, NULL);
	errno = saved_errno;
	return ec;
}

/* ------------------------------------------------------------------------ */
/* posix_spawn_file_actions_t, in glibc's layout                            */
/* ------------------------------------------------------------------------ */

/* glibc's struct __spawn_action (posix/spawn_int.h), tags in its order. */
struct ukp_glibc_action {
	int tag;
	union {
		struct { int fd; } close_action;
		struct { int fd; int newfd; } dup2_action;
		struct { int fd; char *path; int oflag; mode_t mode; } open_action;
		struct { char *path; } chdir_action;
		struct { int fd; } fchdir_action;
		struct { int from; } closefrom_action;
		struct { int fd; } setpgrp_action;
	} action;
};

static const enum ukp_fa_kind ukp_glibc_tags[] = {
	UKP_FA_CLOSE, UKP_FA_DUP2, UKP_FA_OPEN, UKP_FA_CHDIR, UKP_FA_FCHDIR,
	UKP_FA_CLOSEFROM, UKP_FA_TCSETPGRP,
};

static bool ukp_fa_layout_known;
static pthread_once_t ukp_fa_once = PTHREAD_ONCE_INIT;

typedef int (*ukp_fa_fd_fn)(posix_spawn_file_actions_t *, int);
typedef int (*ukp_fa_path_fn)(posix_spawn_file_actions_t *, const char *);

/* Does glibc lay its actions out as we read them?  Asked of glibc's own
 * add functions, once (the newer ones only where this glibc has them). */
static void ukp_fa_layout_check(void)
{
	ukp_fa_path_fn addchdir = (ukp_fa_path_fn)dlsym(RTLD_DEFAULT,
		"posix_spawn_file_actions_addchdir_np");
	ukp_fa_fd_fn addfchdir = (ukp_fa_fd_fn)dlsym(RTLD_DEFAULT,
		"posix_spawn_file_actions_addfchdir_np");
	ukp_fa_fd_fn addclosefrom = (ukp_fa_fd_fn)dlsym(RTLD_DEFAULT,
		"posix_spawn_file_actions_addclosefrom_np");
	ukp_fa_fd_fn addtcsetpgrp = (ukp_fa_fd_fn)dlsym(RTLD_DEFAULT,
		"posix_spawn_file_actions_addtcsetpgrp_np");
	static const char opath[] = "/ukp-o", cpath[] = "/ukp-c";
	const struct ukp_glibc_action *v;
	posix_spawn_file_actions_t fa;
	bool ok;
	int n = 3;

	if (posix_spawn_file_actions_init(&fa))
		return;
	ok = !posix_spawn_file_actions_addclose(&fa, 10) &&
	     !posix_spawn_file_actions_adddup2(&fa, 11, 12) &&
	     !posix_spawn_file_actions_addopen(&fa, 13, opath, O_RDONLY | O_CLOEXEC, 0640);
	if (ok && addchdir)
		ok = !addchdir(&fa, cpath) && ++n;
	if (ok && addfchdir)
		ok = !addfchdir(&fa, 14) && ++n;
	if (ok && addclosefrom)
		ok = !addclosefrom(&fa, 15) && ++n;
	if (ok && addtcsetpgrp)
		ok = !addtcsetpgrp(&fa, 16) && ++n;
	v = (const struct ukp_glibc_action *)fa.__actions;
	ok = ok && fa.__used == n && v &&
	     v[0].tag == 0 && v[0].action.close_action.fd == 10 &&
	     v[1].tag == 1 && v[1].action.dup2_action.fd == 11 &&
	     v[1].action.dup2_action.newfd == 12 &&
	     v[2].tag == 2 && v[2].action.open_action.fd == 13 &&
	     v[2].action.open_action.path && !strcmp(v[2].action.open_action.path, opath) &&
	     v[2].action.open_action.oflag == (O_RDONLY | O_CLOEXEC) &&
	     v[2].action.open_action.mode == 0640;
	n = 3;
	if (ok && addchdir) {
		ok = v[n].tag == 3 && v[n].action.chdir_action.path &&
		     !strcmp(v[n].action.chdir_action.path, cpath);
		n++;
	}
	if (ok && addfchdir)
		ok = v[n].tag == 4 && v[n++].action.fchdir_action.fd == 14;
	if (ok && addclosefrom)
		ok = v[n].tag == 5 && v[n++].action.closefrom_action.from == 15;
	if (ok && addtcsetpgrp)
		ok = v[n].tag == 6 && v[n++].action.setpgrp_action.fd == 16;
	posix_spawn_file_actions_destroy(&fa);
	ukp_fa_layout_known = ok;
}

/* glibc's file actions as ours (*@out to be freed).  -1: not readable. */
static int ukp_fa_read(const posix_spawn_file_actions_t *fa, struct ukp_fa **out)
{
	const struct ukp_glibc_action *v;
	struct ukp_fa *f;

	*out = NULL;
	if (!fa || !fa->__used)
		return 0;
	pthread_once(&ukp_fa_once, ukp_fa_layout_check);
	if (!ukp_fa_layout_known || fa->__used < 0)
		return -1;
	f = calloc((size_t)fa->__used, sizeof(*f));
	if (!f)
		return -1;
	v = (const struct ukp_glibc_action *)fa->__actions;
	for (int i = 0; i < fa->__used; i++) {
		if (v[i].tag < 0 || (size_t)v[i].tag >= ARRAY_SIZE(ukp_glibc_tags)) {
			free(f);
			return -1;
		}
		f[i].kind = ukp_glibc_tags[v[i].tag];
		switch (f[i].kind) {
		case UKP_FA_CLOSE:
			f[i].fd = v[i].action.close_action.fd;
			break;
		case UKP_FA_DUP2:
			f[i].fd = v[i].action.dup2_action.fd;
			f[i].newfd = v[i].action.dup2_action.newfd;
			break;
		case UKP_FA_OPEN:
			f[i].fd = v[i].action.open_action.fd;
			f[i].path = v[i].action.open_action.path;
			f[i].oflag = v[i].action.open_action.oflag;
			f[i].mode = v[i].action.open_action.mode;
			break;
		case UKP_FA_CHDIR:
			f[i].path = v[i].action.chdir_action.path;
			break;
		case UKP_FA_FCHDIR:
			f[i].fd = v[i].action.fchdir_action.fd;
			break;
		case UKP_FA_CLOSEFROM:
			f[i].fd = v[i].action.closefrom_action.from;
			break;
		case UKP_FA_TCSETPGRP:
			f[i].fd = v[i].action.setpgrp_action.fd;
			break;
		}
	}
	*out = f;
	return fa->__used;
}

/* ------------------------------------------------------------------------ */
/* Interposers                                                               */
/* ------------------------------------------------------------------------ */

typedef int (*ukp_spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
			    const posix_spawnattr_t *, char *const[], char *const[]);

/*
 * The function of the next object in the lookup order: another
 * interposer's (ukprobe's agent's, unversioned) or libc's.  @version only
 * for an older version: dlvsym() refuses an unversioned definition, and
 * dlsym() finds libc's default one.
 */
static ukp_spawn_fn ukp_next_spawn(ukp_spawn_fn _Atomic *cache, const char *name,
				   const char *version)
{
	ukp_spawn_fn fn = atomic_load_explicit(cache, memory_order_acquire);

	if (!fn) {
		if (version)
			fn = (ukp_spawn_fn)dlvsym(RTLD_NEXT, name, version);
		if (!fn)
			fn = (ukp_spawn_fn)dlsym(RTLD_NEXT, name);
		atomic_store_explicit(cache, fn, memory_order_release);
	}
	return fn;
}

/* The request for posix_spawn()'s arguments; -1 when ours cannot do it. */
static int ukp_spawn_req_from(struct ukp_spawn_req *req, const posix_spawnattr_t *attr,
			      const posix_spawn_file_actions_t *fa, struct ukp_fa **fas)
{
	int n;

	if (attr && (posix_spawnattr_getflags(attr, &req->flags) ||
		     posix_spawnattr_getpgroup(attr, &req->pgroup) ||
		     posix_spawnattr_getsigdefault(attr, &req->sigdefault) ||
		     posix_spawnattr_getsigmask(attr, &req->sigmask) ||
		     posix_spawnattr_getschedpolicy(attr, &req->policy) ||
		     posix_spawnattr_getschedparam(attr, &req->param)))
		return -1;
	if (req->flags & ~UKP_SPAWN_FLAGS)
		return -1;
	n = ukp_fa_read(fa, fas);
	if (n < 0)
		return -1;
	req->fa = *fas;
	req->nfa = n;
	return 0;
}

static int ukp_posix_spawn_as(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			      const posix_spawnattr_t *attr, char *const argv[],
			      char *const envp[], bool use_path, bool try_shell,
			      ukp_spawn_fn next)
{
	struct ukp_spawn_req req;
	struct ukp_fa *fas = NULL;
	int ret;

	if (!ukp_spawn_ours() || !next)
		goto glibc;
	ukp_spawn_req_init(&req);
	if (ukp_spawn_req_from(&req, attr, fa, &fas)) {
		static atomic_bool warned;

		if (!atomic_exchange(&warned, true))
			pr_warn("posix_spawn() with an attribute or a file action ukprobes "
				"does not know: glibc's child runs it, and a probe it hits "
				"kills it\n");
		goto glibc;
	}
	req.file = file;
	req.argv = argv;
	req.envp = envp;
	req.use_path = use_path;
	req.try_shell = try_shell;
	ret = ukp_spawn(pid, &req);
	free(fas);
	return ret;
glibc:
	if (!next)
		return ENOSYS;
	return next(pid, file, fa, attr, argv, envp);
}

/*
 * The versions of posix_spawn() and posix_spawnp() this architecture's
 * glibc has (arch_libc.h): its first ones, which run /bin/sh on a file the
 * kernel will not run (ENOEXEC), and on some architectures later ones
 * (@@GLIBC_2.15 on x86-64 and i386) that do not.
 */
static ukp_spawn_fn _Atomic ukp_next_spawn_base, ukp_next_spawnp_base;

static int ukp_posix_spawn_base(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
				const posix_spawnattr_t *attr, char *const argv[],
				char *const envp[])
{
	return ukp_posix_spawn_as(pid, path, fa, attr, argv, envp, false, UKP_GLIBC_SPAWN_NEW,
				  ukp_next_spawn(&ukp_next_spawn_base, "posix_spawn",
						 UKP_GLIBC_SPAWN_NEW ? UKP_GLIBC_BASE : NULL));
}

static int ukp_posix_spawnp_base(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
				 const posix_spawnattr_t *attr, char *const argv[],
				 char *const envp[])
{
	return ukp_posix_spawn_as(pid, file, fa, attr, argv, envp, true, UKP_GLIBC_SPAWN_NEW,
				  ukp_next_spawn(&ukp_next_spawnp_base, "posix_spawnp",
						 UKP_GLIBC_SPAWN_NEW ? UKP_GLIBC_BASE : NULL));
}

UKP_INTERPOSER(ukp_posix_spawn_base);
UKP_INTERPOSER(ukp_posix_spawnp_base);

#if UKP_GLIBC_SPAWN_NEW
static ukp_spawn_fn _Atomic ukp_next_spawn_new, ukp_next_spawnp_new;

static int ukp_posix_spawn_new(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			       const posix_spawnattr_t *attr, char *const argv[],
			       char *const envp[])
{
	return ukp_posix_spawn_as(pid, path, fa, attr, argv, envp, false, false,
				  ukp_next_spawn(&ukp_next_spawn_new, "posix_spawn", NULL));
}

static int ukp_posix_spawnp_new(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
				const posix_spawnattr_t *attr, char *const argv[],
				char *const envp[])
{
	return ukp_posix_spawn_as(pid, file, fa, attr, argv, envp, true, false,
				  ukp_next_spawn(&ukp_next_spawnp_new, "posix_spawnp", NULL));
}

UKP_API int ukp_posix_spawn_vnew(pid_t *, const char *, const posix_spawn_file_actions_t *,
				 const posix_spawnattr_t *, char *const[], char *const[])
	__attribute__((alias("ukp_posix_spawn_new")));
UKP_API int ukp_posix_spawnp_vnew(pid_t *, const char *, const posix_spawn_file_actions_t *,
				  const posix_spawnattr_t *, char *const[], char *const[])
	__attribute__((alias("ukp_posix_spawnp_new")));
__asm__(".symver ukp_posix_spawn_vnew, posix_spawn@@" UKP_GLIBC_SPAWN_NEW_VERSION);
__asm__(".symver ukp_posix_spawnp_vnew, posix_spawnp@@" UKP_GLIBC_SPAWN_NEW_VERSION);
UKP_INTERPOSER(ukp_posix_spawn_new);
UKP_INTERPOSER(ukp_posix_spawnp_new);

UKP_API int ukp_posix_spawn_vbase(pid_t *, const char *, const posix_spawn_file_actions_t *,
				  const posix_spawnattr_t *, char *const[], char *const[])
	__attribute__((alias("ukp_posix_spawn_base")));
UKP_API int ukp_posix_spawnp_vbase(pid_t *, const char *, const posix_spawn_file_actions_t *,
				   const posix_spawnattr_t *, char *const[], char *const[])
	__attribute__((alias("ukp_posix_spawnp_base")));
__asm__(".symver ukp_posix_spawn_vbase, posix_spawn@" UKP_GLIBC_BASE);
__asm__(".symver ukp_posix_spawnp_vbase, posix_spawnp@" UKP_GLIBC_BASE);
#else
/* One version: the base one is the default. */
UKP_API int posix_spawn(pid_t *, const char *, const posix_spawn_file_actions_t *,
			const posix_spawnattr_t *, char *const[], char *const[])
	__attribute__((alias("ukp_posix_spawn_base")));
UKP_API int posix_spawnp(pid_t *, const char *, const posix_spawn_file_actions_t *,
			 const posix_spawnattr_t *, char *const[], char *const[])
	__attribute__((alias("ukp_posix_spawnp_base")));
#endif
