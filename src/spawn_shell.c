// SPDX-License-Identifier: MIT
/*
 * spawn_shell.c - system() and popen().  glibc starts their children with
 * its own spawn code, called inside libc where no interposition reaches
 * it; spawn.c says why that child dies at a probe.  While ukprobes'
 * handlers are installed these two are ukprobes' own, with glibc's
 * semantics (sysdeps/posix/system.c, libio/iopopen.c), on ukprobes' child.
 *
 * A stream of this popen() is a plain fdopen() stream, so pclose() is ours
 * too, and fclose(), which glibc lets close a popen() stream (it waits for
 * the child and returns its status); a stream glibc's popen() made before
 * ukprobes took over goes to glibc's pclose().
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <paths.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "spawn_req.h"

extern char **environ;
/* glibc's own sigaction() (as its system() uses it), not the interposer. */
extern int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);

static int (*ukp_next_system)(const char *);
static FILE *(*ukp_next_popen)(const char *, const char *);
static int (*ukp_next_pclose)(FILE *);
static int (*ukp_next_fclose)(FILE *);

static void ukp_shell_resolve(void)
{
	ukp_next_system = (int (*)(const char *))dlsym(RTLD_NEXT, "system");
	ukp_next_popen = (FILE *(*)(const char *, const char *))dlsym(RTLD_NEXT, "popen");
	ukp_next_pclose = (int (*)(FILE *))dlsym(RTLD_NEXT, "pclose");
	ukp_next_fclose = (int (*)(FILE *))dlsym(RTLD_NEXT, "fclose");
}

/* Found when the library is loaded: fclose() may be called anywhere. */
__attribute__((constructor)) static void ukp_shell_init(void)
{
	ukp_shell_resolve();
}

static void ukp_shell_need(void *fn)
{
	if (!fn)
		ukp_shell_resolve();
}

/* "sh -c @argv[2]", in the program's environment, as glibc runs both. */
static void ukp_shell_req(struct ukp_spawn_req *req, char **argv)
{
	ukp_spawn_req_init(req);
	req->file = _PATH_BSHELL;
	req->argv = argv;
	req->envp = environ;
}

/* ------------------------------------------------------------------------ */
/* system()                                                                  */
/* ------------------------------------------------------------------------ */

/*
 * SIGINT and SIGQUIT are ignored while any system() call waits, and given
 * back by the last one (glibc keeps a count for concurrent calls).
 */
static pthread_mutex_t ukp_system_lock = PTHREAD_MUTEX_INITIALIZER;
static int ukp_system_refs;		/* 'ukp_system_lock' */
static struct sigaction ukp_system_intr, ukp_system_quit;

static void ukp_system_unref(void)
{
	pthread_mutex_lock(&ukp_system_lock);
	if (--ukp_system_refs == 0) {
		__sigaction(SIGINT, &ukp_system_intr, NULL);
		__sigaction(SIGQUIT, &ukp_system_quit, NULL);
	}
	pthread_mutex_unlock(&ukp_system_lock);
}

struct ukp_system_call {
	pid_t pid;
	sigset_t omask;
};

/* Cancelled in waitpid(): the child goes too, as in glibc. */
static void ukp_system_cancel(void *arg)
{
	struct ukp_system_call *c = arg;
	int state;

	kill(c->pid, SIGKILL);
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
	while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
		;
	pthread_setcancelstate(state, NULL);
	ukp_system_unref();
	ukp_sigprocmask_program(SIG_SETMASK, &c->omask, NULL);
}

static int ukp_do_system(const char *line)
{
	char *argv[] = { "sh", "-c", (char *)line, NULL };
	struct ukp_system_call c;
	struct ukp_spawn_req req;
	struct sigaction ign;
	int status = -1, ret;
	sigset_t chld;

	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	ukp_shell_req(&req, argv);
	pthread_mutex_lock(&ukp_system_lock);
	if (ukp_system_refs++ == 0) {
		__sigaction(SIGINT, &ign, &ukp_system_intr);
		__sigaction(SIGQUIT, &ign, &ukp_system_quit);
	}
	if (ukp_system_intr.sa_handler != SIG_IGN)
		sigaddset(&req.sigdefault, SIGINT);
	if (ukp_system_quit.sa_handler != SIG_IGN)
		sigaddset(&req.sigdefault, SIGQUIT);
	pthread_mutex_unlock(&ukp_system_lock);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	ukp_sigprocmask_program(SIG_BLOCK, &chld, &c.omask);

	req.flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK;
	req.sigmask = c.omask;
	ret = ukp_spawn(&c.pid, &req);
	if (!ret) {
		pid_t w;

		/* waitpid() is the cancellation point system() is. */
		pthread_cleanup_push(ukp_system_cancel, &c);
		while ((w = waitpid(c.pid, &status, 0)) < 0 && errno == EINTR)
			;
		pthread_cleanup_pop(0);
		if (w != c.pid)
			status = -1;
	} else {
		/* As if the shell had exited with 127 (POSIX). */
		status = 127 << 8;
	}
	ukp_system_unref();
	ukp_sigprocmask_program(SIG_SETMASK, &c.omask, NULL);
	if (ret)
		errno = ret;
	return status;
}

static int ukp_system_entry(const char *line)
{
	if (!ukp_spawn_ours()) {
		ukp_shell_need(ukp_next_system);
		return ukp_next_system(line);
	}
	/* Is there a shell at all? */
	if (!line)
		return ukp_do_system("exit 0") == 0;
	return ukp_do_system(line);
}
UKP_API int system(const char *line) __attribute__((alias("ukp_system_entry")));
UKP_INTERPOSER(ukp_system_entry);

/* ------------------------------------------------------------------------ */
/* popen(), pclose(), fclose()                                               */
/* ------------------------------------------------------------------------ */

struct ukp_popen {
	FILE *f;
	pid_t pid;
	int fd;
	struct ukp_popen *next;
};

/* This protects 'ukp_popens'; 'ukp_npopen' is its length, read without it. */
static pthread_mutex_t ukp_popen_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ukp_popen *ukp_popens;
static atomic_int ukp_npopen;

static struct ukp_popen *ukp_popen_take(FILE *f)
{
	struct ukp_popen **pp, *p = NULL;

	pthread_mutex_lock(&ukp_popen_lock);
	for (pp = &ukp_popens; *pp; pp = &(*pp)->next) {
		if ((*pp)->f == f) {
			p = *pp;
			*pp = p->next;
			atomic_fetch_sub(&ukp_npopen, 1);
			break;
		}
	}
	pthread_mutex_unlock(&ukp_popen_lock);
	return p;
}

/*
 * Start "sh -c @cmd" with @child_end as its @child_fd, closing the streams
 * of earlier popen() calls in the child (POSIX).  'ukp_popen_lock' held,
 * so that no stream is added meanwhile.
 */
static int ukp_popen_spawn(const char *cmd, int child_end, int child_fd, pid_t *pid)
{
	char *argv[] = { "sh", "-c", (char *)cmd, NULL };
	struct ukp_spawn_req req;
	struct ukp_fa *fa;
	int n = 0, ret;

	fa = calloc((size_t)atomic_load(&ukp_npopen) + 1, sizeof(*fa));
	if (!fa)
		return ENOMEM;
	fa[n++] = (struct ukp_fa){ .kind = UKP_FA_DUP2, .fd = child_end, .newfd = child_fd };
	for (struct ukp_popen *p = ukp_popens; p; p = p->next)
		if (p->fd != child_fd)
			fa[n++] = (struct ukp_fa){ .kind = UKP_FA_CLOSE, .fd = p->fd };
	ukp_shell_req(&req, argv);
	req.fa = fa;
	req.nfa = n;
	ret = ukp_spawn(pid, &req);
	free(fa);
	return ret;
}

static FILE *ukp_popen_ours(const char *cmd, const char *mode)
{
	bool rd = false, wr = false, cloexec = false;
	int fds[2], parent_end, child_end, child_fd, ret;
	struct ukp_popen *node;
	FILE *f;

	for (const char *m = mode; *m; m++) {
		switch (*m) {
		case 'r': rd = true; break;
		case 'w': wr = true; break;
		case 'e': cloexec = true; break;
		default: errno = EINVAL; return NULL;
		}
	}
	if (rd == wr) {
		errno = EINVAL;
		return NULL;
	}
	node = malloc(sizeof(*node));
	if (!node)
		return NULL;
	/* Close-on-exec until the child has its end (a concurrent fork()
	 * must not inherit them). */
	if (pipe2(fds, O_CLOEXEC) < 0) {
		free(node);
		return NULL;
	}
	parent_end = rd ? 0 : 1;
	child_end = !parent_end;
	child_fd = rd ? 1 : 0;
	/* The child's end already has the number it gets there: move it, or
	 * close-on-exec could not be cleared without a leak. */
	if (fds[child_end] == child_fd) {
		int tmp = fcntl(child_fd, F_DUPFD_CLOEXEC, 0);

		close(fds[child_end]);
		fds[child_end] = tmp;
		if (tmp < 0)
			goto fail;
	}
	f = fdopen(fds[parent_end], rd ? "r" : "w");
	if (!f)
		goto fail;
	pthread_mutex_lock(&ukp_popen_lock);
	ret = ukp_popen_spawn(cmd, fds[child_end], child_fd, &node->pid);
	if (!ret) {
		node->f = f;
		node->fd = fds[parent_end];
		node->next = ukp_popens;
		ukp_popens = node;
		atomic_fetch_add(&ukp_npopen, 1);
	}
	pthread_mutex_unlock(&ukp_popen_lock);
	close(fds[child_end]);
	if (ret) {
		ukp_next_fclose(f);
		free(node);
		errno = ENOMEM;		/* as glibc */
		return NULL;
	}
	if (!cloexec)
		fcntl(fds[parent_end], F_SETFD, 0);
	return f;
fail:
	if (fds[child_end] >= 0)
		close(fds[child_end]);
	close(fds[parent_end]);
	free(node);
	errno = ENOMEM;
	return NULL;
}

static FILE *ukp_popen_entry(const char *cmd, const char *mode)
{
	ukp_shell_need(ukp_next_fclose);
	if (!ukp_spawn_ours())
		return ukp_next_popen(cmd, mode);
	return ukp_popen_ours(cmd, mode);
}
UKP_API FILE *popen(const char *cmd, const char *mode) __attribute__((alias("ukp_popen_entry")));
UKP_INTERPOSER(ukp_popen_entry);

/* Close a stream of ours and wait for its child: glibc's status. */
static int ukp_pclose_ours(struct ukp_popen *p)
{
	int fret = ukp_next_fclose(p->f), st = 0, state;
	pid_t w;

	do {
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
		w = waitpid(p->pid, &st, 0);
		pthread_setcancelstate(state, NULL);
	} while (w < 0 && errno == EINTR);
	free(p);
	if (w < 0)
		return -1;
	/* glibc: the child's status, else the flush's failure. */
	return st ? st : (fret ? -1 : 0);
}

static int ukp_pclose_entry(FILE *f)
{
	struct ukp_popen *p;

	ukp_shell_need(ukp_next_fclose);
	p = atomic_load(&ukp_npopen) ? ukp_popen_take(f) : NULL;
	if (!p)
		return ukp_next_pclose(f);
	return ukp_pclose_ours(p);
}
UKP_API int pclose(FILE *f) __attribute__((alias("ukp_pclose_entry")));
UKP_INTERPOSER(ukp_pclose_entry);

static int ukp_fclose_entry(FILE *f)
{
	struct ukp_popen *p;

	ukp_shell_need(ukp_next_fclose);
	p = atomic_load_explicit(&ukp_npopen, memory_order_relaxed) ? ukp_popen_take(f) : NULL;
	if (!p)
		return ukp_next_fclose(f);
	return ukp_pclose_ours(p);
}
UKP_API int fclose(FILE *f) __attribute__((alias("ukp_fclose_entry")));
UKP_INTERPOSER(ukp_fclose_entry);
