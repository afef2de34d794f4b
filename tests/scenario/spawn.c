/* SPDX-License-Identifier: MIT */
/*
 * spawn.c - probes on the code that a new process runs between its birth
 * and its execve(): posix_spawn(), posix_spawnp(), system(), popen() and
 * vfork().
 *
 * glibc runs those children in the parent's memory (clone with CLONE_VM and
 * CLONE_VFORK), with every signal blocked and every handler reset to
 * SIG_DFL until the execve: a breakpoint there used to kill the child (or,
 * for the code the parent runs while it has every signal blocked, the
 * parent).  Each child must exec as it would without probes, the hits in
 * it are counted, and the parent's per-thread probe state (which the child
 * shares, TLS included) is the same afterwards.
 */
#include "../support/ukp_test.h"
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ukprobes.h>
#include "scn_util.h"

extern char **environ;

static atomic_int hits, post_hits, ret_hits, entry_hits;

static int count_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add(&hits, 1);
	return 0;
}

static void count_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	atomic_fetch_add(&post_hits, 1);
}

/* A probe on libc's @sym counting hits (with a post handler: the hit is a
 * single step, not a boost). */
static void probe(struct kprobe *kp, const char *sym, int with_post)
{
	memset(kp, 0, sizeof(*kp));
	kp->symbol_name = sym;
	kp->pre_handler = count_pre;
	if (with_post)
		kp->post_handler = count_post;
	cr_assert_eq(register_kprobe(kp), 0, "register_kprobe(%s)", sym);
}

/* The status of @pid, which must have exited with @code. */
static void expect_exit(pid_t pid, int code)
{
	int st = 0;

	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "child %d: status %#x (signal %d)", pid, st,
		  WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	cr_assert_eq(WEXITSTATUS(st), code, "child exit %d, wanted %d", WEXITSTATUS(st), code);
}

static pid_t spawn_argv(const char *path, char *const argv[])
{
	pid_t pid = 0;
	int err = posix_spawn(&pid, path, NULL, NULL, argv, environ);

	cr_assert_eq(err, 0, "posix_spawn(%s): %s", path, strerror(err));
	return pid;
}

/* ------------------------------------------------------------------------ */
/* posix_spawn                                                               */
/* ------------------------------------------------------------------------ */

Test(spawn, posix_spawn_probe_on_execve, .timeout = 60)
{
	struct kprobe kp;
	char *argv[] = { "true", NULL };

	probe(&kp, "libc.so.6:execve", 0);
	for (int i = 0; i < 20; i++)
		expect_exit(spawn_argv("/bin/true", argv), 0);
	unregister_kprobe(&kp);
	cr_expect_eq(atomic_load(&hits), 20, "%d hits in 20 children", atomic_load(&hits));
	cr_expect_eq(kp.nmissed, 0);
}

/* A post handler: the execve's first instruction is single-stepped in the
 * child, and the post handler runs there. */
Test(spawn, posix_spawn_single_step_in_child, .timeout = 60)
{
	struct kprobe kp;
	char *argv[] = { "true", NULL };

	probe(&kp, "libc.so.6:execve", 1);
	for (int i = 0; i < 10; i++)
		expect_exit(spawn_argv("/bin/true", argv), 0);
	unregister_kprobe(&kp);
	cr_expect_eq(atomic_load(&hits), 10);
	cr_expect_eq(atomic_load(&post_hits), 10);
}

static void *dlsym_libc(const char *sym)
{
	void *h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void *p = h ? dlsym(h, sym) : NULL;

	cr_assert_not_null(p, "%s not in libc", sym);
	return p;
}

/* The address of the first "syscall" (0f 05) of libc's @sym. */
static void *syscall_insn_of(const char *sym)
{
	unsigned char *p = dlsym_libc(sym);

	for (int i = 0; i < 64; i++)
		if (p[i] == 0x0f && p[i + 1] == 0x05)
			return p + i;
	cr_assert_fail("no syscall instruction in %s", sym);
	return NULL;
}

static volatile int parent_pre, parent_post;

static int parent_pre_fn(struct kprobe *p, struct pt_regs *regs)
{
	parent_pre++;
	return 0;
}

static void parent_post_fn(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	parent_post++;
}

SCN_NOINLINE long spawn_parent_work(long x)
{
	return x * 3 + 1;
}

static long (*volatile parent_work)(long) = spawn_parent_work;

/*
 * The probe is on execve's syscall instruction, with a post handler: the
 * child execs from the out-of-line copy, in the middle of its single step.
 * The step record was the parent's thread's (shared TLS): the parent's own
 * single steps afterwards must work.
 */
Test(spawn, child_execs_inside_its_single_step, .timeout = 60)
{
	struct kprobe kp = { .addr = syscall_insn_of("execve"), .pre_handler = count_pre,
			     .post_handler = count_post };
	struct kprobe pk = { .symbol_name = "spawn_parent_work", .pre_handler = parent_pre_fn,
			     .post_handler = parent_post_fn };
	char *argv[] = { "true", NULL };
	long sum = 0;

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert_eq(register_kprobe(&pk), 0);
	for (int i = 0; i < 10; i++) {
		expect_exit(spawn_argv("/bin/true", argv), 0);
		sum += parent_work(i);
	}
	unregister_kprobe(&kp);
	unregister_kprobe(&pk);
	cr_expect_eq(atomic_load(&hits), 10);
	cr_expect_eq(atomic_load(&post_hits), 0, "the exec never came back to the step's end");
	cr_expect_eq(sum, 3 * 45 + 10);
	cr_expect_eq(parent_pre, 10);
	cr_expect_eq(parent_post, 10);
}

/* The file actions run in the child with probes on the calls they make. */
Test(spawn, posix_spawn_file_actions_with_probes, .timeout = 60)
{
	struct kprobe kps[4];
	const char *syms[] = { "libc.so.6:execve", "libc.so.6:dup2", "libc.so.6:close",
			       "libc.so.6:open" };
	char dir[] = "/tmp/ukp-spawn-XXXXXX", out[64], real[PATH_MAX], buf[256] = { 0 };
	char *argv[] = { "sh", "-c", "pwd; echo err >&2", NULL };
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int fd, n;

	cr_assert_not_null(mkdtemp(dir));
	cr_assert_not_null(realpath(dir, real));
	snprintf(out, sizeof(out), "%s/out", dir);
	for (int i = 0; i < 4; i++)
		probe(&kps[i], syms[i], 0);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	posix_spawn_file_actions_addclose(&fa, 0);
	posix_spawn_file_actions_addchdir_np(&fa, dir);
	cr_assert_eq(posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	expect_exit(pid, 0);
	for (int i = 0; i < 4; i++)
		unregister_kprobe(&kps[i]);
	fd = open(out, O_RDONLY);
	cr_assert_geq(fd, 0);
	n = (int)read(fd, buf, sizeof(buf) - 1);
	close(fd);
	cr_assert_gt(n, 0);
	snprintf(out, sizeof(out), "%.40s\nerr\n", real);
	cr_expect_str_eq(buf, out);
	cr_expect_geq(atomic_load(&hits), 4, "%d hits (execve, dup2, close, open)",
		      atomic_load(&hits));
	unlink(strcat(strcpy(buf, dir), "/out"));
	rmdir(dir);
}

Test(spawn, posix_spawnp_searches_path_with_probe_on_execve, .timeout = 60)
{
	struct kprobe kp;
	char *argv[] = { "true", NULL };
	pid_t pid;

	setenv("PATH", "/nonexistent-ukp:/bin:/usr/bin", 1);
	probe(&kp, "libc.so.6:execve", 0);
	cr_assert_eq(posix_spawnp(&pid, "true", NULL, NULL, argv, environ), 0);
	expect_exit(pid, 0);
	cr_expect_eq(posix_spawnp(&pid, "no-such-program-ukp", NULL, NULL, argv, environ), ENOENT);
	cr_expect_eq(posix_spawn(&pid, "/nonexistent-ukp/x", NULL, NULL, argv, environ), ENOENT);
	unregister_kprobe(&kp);
	/* /nonexistent-ukp/true, /bin/true; then /nonexistent-ukp/..., /bin/...,
	 * /usr/bin/...; then the absolute path. */
	cr_expect_eq(atomic_load(&hits), 2 + 3 + 1, "%d execve calls", atomic_load(&hits));
	cr_expect_eq(waitpid(-1, NULL, WNOHANG), -1, "a failed spawn left a child");
}

/* glibc's posix_spawn munmaps the child's stack while every signal is
 * blocked in the parent: a probe there killed the parent itself. */
Test(spawn, probe_on_munmap_while_spawning, .timeout = 60)
{
	struct kprobe kp;
	char *argv[] = { "true", NULL };

	probe(&kp, "libc.so.6:munmap", 1);
	for (int i = 0; i < 10; i++)
		expect_exit(spawn_argv("/bin/true", argv), 0);
	unregister_kprobe(&kp);
}

/* ------------------------------------------------------------------------ */
/* What the child inherits: the same as without probes                      */
/* ------------------------------------------------------------------------ */

static void ign_handler(int sig)
{
	(void)sig;
}

/* What a child sees of itself (cat, which changes none of it): blocked,
 * ignored and caught signals, process group and session relative to ours. */
static void child_report(const posix_spawnattr_t *attr, char *out, size_t len)
{
	char *argv[] = { "cat", "/proc/self/status", "/proc/self/stat", NULL };
	char tmp[] = "/tmp/ukp-report-XXXXXX", buf[8192], *p;
	posix_spawn_file_actions_t fa;
	size_t used = 0;
	int pgrp = 0, sid = 0;
	pid_t pid;
	int fd = mkstemp(tmp), n;

	cr_assert_geq(fd, 0);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fd, 1);
	cr_assert_eq(posix_spawn(&pid, "/bin/cat", &fa, attr, argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	expect_exit(pid, 0);
	n = (int)pread(fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(tmp);
	out[0] = '\0';
	for (p = strtok(buf, "\n"); p; p = strtok(NULL, "\n")) {
		if (!strncmp(p, "SigBlk:", 7) || !strncmp(p, "SigIgn:", 7) ||
		    !strncmp(p, "SigCgt:", 7))
			used += (size_t)snprintf(out + used, len - used, "%s\n", p);
		else if (strchr(p, ')'))
			sscanf(strrchr(p, ')') + 2, "%*c %*d %d %d", &pgrp, &sid);
	}
	snprintf(out + used, len - used, "%s\n%s\n",
		 pgrp == getpgrp() ? "same-pgrp" : "new-pgrp",
		 sid == getsid(0) ? "same-session" : "new-session");
}

/* Each attribute, spawned by glibc (no probe yet: ukprobes passes the call
 * on) and then with a probe on execve: the children must see the same. */
static void compare_with_glibc(void (*setup)(posix_spawnattr_t *))
{
	char before[1024], after[1024];
	posix_spawnattr_t attr;
	struct kprobe kp;

	posix_spawnattr_init(&attr);
	setup(&attr);
	child_report(&attr, before, sizeof(before));
	probe(&kp, "libc.so.6:execve", 0);
	child_report(&attr, after, sizeof(after));
	unregister_kprobe(&kp);
	posix_spawnattr_destroy(&attr);
	cr_expect_str_eq(after, before);
	cr_expect_eq(atomic_load(&hits), 1);
}

static void attr_none(posix_spawnattr_t *a)
{
	sigset_t m;

	(void)a;
	/* The parent's own state: an ignored signal stays ignored, a handled
	 * one is default, a blocked one stays blocked. */
	signal(SIGPIPE, SIG_IGN);
	signal(SIGUSR1, ign_handler);
	sigemptyset(&m);
	sigaddset(&m, SIGUSR2);
	sigprocmask(SIG_BLOCK, &m, NULL);
}

static void attr_sigmask_sigdef(posix_spawnattr_t *a)
{
	sigset_t m;

	signal(SIGHUP, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	sigemptyset(&m);
	sigaddset(&m, SIGQUIT);
	posix_spawnattr_setsigdefault(a, &m);
	sigemptyset(&m);
	sigaddset(&m, SIGWINCH);
	posix_spawnattr_setsigmask(a, &m);
	posix_spawnattr_setflags(a, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
}

static void attr_pgroup(posix_spawnattr_t *a)
{
	posix_spawnattr_setpgroup(a, 0);
	posix_spawnattr_setflags(a, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_RESETIDS);
}

static void attr_setsid(posix_spawnattr_t *a)
{
	posix_spawnattr_setflags(a, POSIX_SPAWN_SETSID);
}

Test(spawn, child_state_as_glibc_default, .timeout = 60)
{
	compare_with_glibc(attr_none);
}

Test(spawn, child_state_as_glibc_sigmask_sigdefault, .timeout = 60)
{
	compare_with_glibc(attr_sigmask_sigdef);
}

Test(spawn, child_state_as_glibc_pgroup_resetids, .timeout = 60)
{
	compare_with_glibc(attr_pgroup);
}

Test(spawn, child_state_as_glibc_setsid, .timeout = 60)
{
	compare_with_glibc(attr_setsid);
}

/*
 * A program that blocks SIGTRAP (as it believes: ukprobes keeps it
 * deliverable in the process) gives its children that mask, as it would
 * without ukprobes; and one that ignores SIGTRAP, that disposition.
 */
Test(spawn, child_inherits_sigtrap_blocked_or_ignored, .timeout = 60)
{
	char report[1024];
	unsigned long long blk = 0, ign = 0;
	struct kprobe kp;
	sigset_t m;
	char *p;

	sigemptyset(&m);
	sigaddset(&m, SIGTRAP);
	sigprocmask(SIG_BLOCK, &m, NULL);
	probe(&kp, "libc.so.6:execve", 0);
	child_report(NULL, report, sizeof(report));
	p = strstr(report, "SigBlk:");
	cr_assert_not_null(p, "%s", report);
	blk = strtoull(p + 7, NULL, 16);
	cr_expect(blk & (1ull << (SIGTRAP - 1)), "SIGTRAP not blocked in the child: %s", report);
	sigprocmask(SIG_UNBLOCK, &m, NULL);
	signal(SIGTRAP, SIG_IGN);
	child_report(NULL, report, sizeof(report));
	p = strstr(report, "SigIgn:");
	cr_assert_not_null(p, "%s", report);
	ign = strtoull(p + 7, NULL, 16);
	cr_expect(ign & (1ull << (SIGTRAP - 1)), "SIGTRAP not ignored in the child: %s", report);
	unregister_kprobe(&kp);
}

/* A script without "#!": ENOEXEC from posix_spawn (glibc >= 2.15). */
Test(spawn, script_without_interpreter_line, .timeout = 60)
{
	char path[] = "/tmp/ukp-script-XXXXXX";
	char *argv[] = { "script", NULL };
	int fd = mkstemp(path), before, after;
	struct kprobe kp;
	pid_t pid;

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "exit 7\n", 7), 7);
	close(fd);
	chmod(path, 0700);
	before = posix_spawn(&pid, path, NULL, NULL, argv, environ);
	probe(&kp, "libc.so.6:execve", 0);
	after = posix_spawn(&pid, path, NULL, NULL, argv, environ);
	unregister_kprobe(&kp);
	unlink(path);
	cr_expect_eq(before, ENOEXEC);
	cr_expect_eq(after, before);
}

/* ------------------------------------------------------------------------ */
/* system() and popen(): libc calls its spawn code directly                 */
/* ------------------------------------------------------------------------ */

Test(spawn, system_with_probe_on_execve, .timeout = 60)
{
	struct kprobe kp;
	struct sigaction intr, quit;
	sigset_t mask, mask_after;
	int st;

	signal(SIGINT, ign_handler);
	memset(&mask, 0, sizeof(mask));
	memset(&mask_after, 0, sizeof(mask_after));
	sigprocmask(SIG_BLOCK, NULL, &mask);
	probe(&kp, "libc.so.6:execve", 0);
	st = system("exit 3");
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 3, "system: %#x", st);
	st = system("kill -TERM $$");
	cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "system: %#x", st);
	cr_expect_neq(system(NULL), 0);
	unregister_kprobe(&kp);
	cr_expect_eq(atomic_load(&hits), 3, "%d execve calls", atomic_load(&hits));
	/* The program's handlers and mask are back. */
	sigaction(SIGINT, NULL, &intr);
	sigaction(SIGQUIT, NULL, &quit);
	sigprocmask(SIG_BLOCK, NULL, &mask_after);
	cr_expect_eq(intr.sa_handler, ign_handler);
	cr_expect_eq(quit.sa_handler, SIG_DFL);
	cr_expect_eq(memcmp(&mask, &mask_after, sizeof(mask)), 0);
}

/* While system() waits, SIGINT and SIGQUIT are ignored in the caller, as
 * POSIX asks: the shell's SIGINT to its parent does not kill it. */
Test(spawn, system_ignores_sigint_while_waiting, .timeout = 60)
{
	struct kprobe kp;
	int st;

	probe(&kp, "libc.so.6:execve", 0);
	st = system("kill -INT $PPID; exit 5");
	unregister_kprobe(&kp);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 5, "system: %#x", st);
}

/* Called through a pointer: the compiler knows fclose() does not match
 * popen(), glibc allows it. */
static int (*volatile fclose_fn)(FILE *) = fclose;

Test(spawn, popen_read_and_write_with_probe, .timeout = 60)
{
	char dir[] = "/tmp/ukp-popen-XXXXXX", cmd[128], line[64] = { 0 }, path[64];
	struct kprobe kp;
	FILE *f;
	int fd, n;

	cr_assert_not_null(mkdtemp(dir));
	probe(&kp, "libc.so.6:execve", 0);
	f = popen("echo hi; exit 2", "r");
	cr_assert_not_null(f);
	cr_expect_not_null(fgets(line, sizeof(line), f));
	cr_expect_str_eq(line, "hi\n");
	n = pclose(f);
	cr_expect(WIFEXITED(n) && WEXITSTATUS(n) == 2, "pclose: %#x", n);
	snprintf(path, sizeof(path), "%s/w", dir);
	snprintf(cmd, sizeof(cmd), "cat > %s", path);
	f = popen(cmd, "we");
	cr_assert_not_null(f);
	cr_expect(fcntl(fileno(f), F_GETFD) & FD_CLOEXEC);
	fputs("written\n", f);
	cr_expect_eq(pclose(f), 0);
	/* fclose() on a popen() stream waits for the child too (glibc). */
	f = popen("exit 4", "r");
	cr_assert_not_null(f);
	n = fclose_fn(f);
	cr_expect(WIFEXITED(n) && WEXITSTATUS(n) == 4, "fclose: %#x", n);
	cr_expect_eq(waitpid(-1, NULL, WNOHANG), -1);
	cr_expect_null(popen("true", "rw"));
	cr_expect_eq(errno, EINVAL);
	unregister_kprobe(&kp);
	cr_expect_eq(atomic_load(&hits), 3);
	fd = open(path, O_RDONLY);
	n = (int)read(fd, line, sizeof(line) - 1);
	line[n > 0 ? n : 0] = '\0';
	close(fd);
	cr_expect_str_eq(line, "written\n");
	unlink(path);
	rmdir(dir);
}

/* A popen() child does not inherit the streams of earlier popen()s. */
Test(spawn, popen_child_closes_other_popen_streams, .timeout = 60)
{
	struct kprobe kp;
	char cmd[128], line[64] = { 0 };
	FILE *a, *b;
	int st;

	probe(&kp, "libc.so.6:execve", 0);
	a = popen("cat >/dev/null", "w");
	cr_assert_not_null(a);
	snprintf(cmd, sizeof(cmd), "[ -e /proc/self/fd/%d ] && echo open || echo closed",
		 fileno(a));
	b = popen(cmd, "r");
	cr_assert_not_null(b);
	cr_expect_not_null(fgets(line, sizeof(line), b));
	st = pclose(b);
	cr_expect_eq(st, 0);
	cr_expect_eq(pclose(a), 0);
	unregister_kprobe(&kp);
	cr_expect_str_eq(line, "closed\n");
}

/* ------------------------------------------------------------------------ */
/* vfork()                                                                   */
/* ------------------------------------------------------------------------ */

Test(spawn, vfork_execve_with_probe, .timeout = 60)
{
	struct kprobe kp;
	char *argv[] = { "true", NULL };

	probe(&kp, "libc.so.6:execve", 1);
	for (int i = 0; i < 10; i++) {
		pid_t pid = vfork();

		if (pid == 0) {
			execve("/bin/true", argv, environ);
			_exit(127);
		}
		expect_exit(pid, 0);
	}
	unregister_kprobe(&kp);
	cr_expect_eq(atomic_load(&hits), 10);
	cr_expect_eq(atomic_load(&post_hits), 10);
}

static volatile int segv_caught;
static sigjmp_buf segv_jb;

static void segv_handler(int sig)
{
	segv_caught++;
	siglongjmp(segv_jb, 1);
}

/*
 * A vfork child that resets the program's handlers before its execve (as
 * Python's subprocess does): that is the child's business; the parent's
 * handlers must be as they were.
 */
Test(spawn, vfork_child_resets_handlers_parent_keeps_them, .timeout = 60)
{
	struct sigaction sa, old;
	struct kprobe kp;
	char *argv[] = { "true", NULL };
	pid_t pid;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = segv_handler;
	cr_assert_eq(sigaction(SIGSEGV, &sa, NULL), 0);
	sa.sa_handler = ign_handler;
	cr_assert_eq(sigaction(SIGINT, &sa, NULL), 0);
	probe(&kp, "libc.so.6:execve", 0);
	pid = vfork();
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		execve("/bin/true", argv, environ);
		_exit(127);
	}
	expect_exit(pid, 0);
	/* The parent's view, and its handlers at work. */
	cr_assert_eq(sigaction(SIGSEGV, NULL, &old), 0);
	cr_expect_eq(old.sa_handler, segv_handler);
	cr_assert_eq(sigaction(SIGINT, NULL, &old), 0);
	cr_expect_eq(old.sa_handler, ign_handler);
	/* Save and restore (a common pattern), then the signal. */
	cr_assert_eq(sigaction(SIGINT, &old, NULL), 0);
	raise(SIGINT);
	if (!sigsetjmp(segv_jb, 1))
		*(volatile int *)16 = 1;
	cr_expect_eq(segv_caught, 1);
	unregister_kprobe(&kp);
	cr_expect_eq(atomic_load(&hits), 1);
}

/* ------------------------------------------------------------------------ */
/* Return probes across the spawn                                            */
/* ------------------------------------------------------------------------ */

static int rp_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	atomic_fetch_add(&entry_hits, 1);
	return 0;
}

static int rp_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	atomic_fetch_add(&ret_hits, 1);
	return 0;
}

static volatile long outer_rets, outer_last;

static int outer_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	outer_rets++;
	outer_last = (long)regs_return_value(regs);
	return 0;
}

SCN_NOINLINE long spawn_outer(long i)
{
	char *argv[] = { "true", NULL };
	pid_t pid = 0;

	/* posix_spawnp searches PATH: its first execve fails and returns in
	 * the child, the second one does not return. */
	if (posix_spawnp(&pid, "true", NULL, NULL, argv, environ))
		return -1;
	waitpid(pid, NULL, 0);
	return i + 100;
}

static long (*volatile outer)(long) = spawn_outer;

/*
 * A kretprobe on execve is entered in the child, which either never
 * returns (exec) or returns there (a failed attempt); a kretprobe on the
 * function that spawns is in flight in the parent meanwhile.  No instance
 * may be lost (a small maxactive would run dry) and the parent's return
 * must be matched.
 */
Test(spawn, kretprobes_across_spawn, .timeout = 60)
{
	struct kretprobe rx = { .kp.symbol_name = "libc.so.6:execve", .entry_handler = rp_entry,
				.handler = rp_ret, .maxactive = 2 };
	struct kretprobe ro = { .kp.symbol_name = "spawn_outer", .handler = outer_ret,
				.maxactive = 2 };

	setenv("PATH", "/nonexistent-ukp:/bin:/usr/bin", 1);
	cr_assert_eq(register_kretprobe(&rx), 0);
	cr_assert_eq(register_kretprobe(&ro), 0);
	for (long i = 0; i < 30; i++) {
		cr_assert_eq(outer(i), i + 100);
		cr_assert_eq(outer_rets, i + 1);
		cr_assert_eq(outer_last, i + 100);
	}
	unregister_kretprobe(&rx);
	unregister_kretprobe(&ro);
	cr_expect_eq(atomic_load(&entry_hits), 60);
	cr_expect_eq(atomic_load(&ret_hits), 30, "the failed attempts return");
	cr_expect_eq(rx.nmissed, 0);
	cr_expect_eq(ro.nmissed, 0);
}

/* ------------------------------------------------------------------------ */
/* Threads                                                                   */
/* ------------------------------------------------------------------------ */

static void *spawner(void *arg)
{
	char *argv[] = { "true", NULL };
	long bad = 0;

	for (int i = 0; i < 100; i++) {
		pid_t pid;
		int st;

		if (posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ) ||
		    waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			bad++;
		if (i % 10 == 0) {
			FILE *f = popen("true", "r");

			if (!f || pclose(f))
				bad++;
		}
	}
	return (void *)bad;
}

Test(spawn, threads_spawn_while_parent_hits_probes, .timeout = 120)
{
	struct kprobe kp, pk = { .symbol_name = "spawn_parent_work", .pre_handler = parent_pre_fn,
				 .post_handler = parent_post_fn };
	pthread_t t[2];
	long sum = 0;

	probe(&kp, "libc.so.6:execve", 0);
	cr_assert_eq(register_kprobe(&pk), 0);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, spawner, NULL), 0);
	for (int i = 0; i < 2000; i++)
		sum += parent_work(1);
	for (int i = 0; i < 2; i++) {
		void *bad;

		pthread_join(t[i], &bad);
		cr_expect_eq((long)bad, 0);
	}
	unregister_kprobe(&kp);
	unregister_kprobe(&pk);
	cr_expect_eq(sum, 2000 * 4);
	cr_expect_eq(atomic_load(&hits), 2 * 110);
	cr_expect_eq(parent_pre, 2000);
}

/*
 * Probes on the children's path come and go (registered, optimized,
 * unregistered, their slots reused) while another thread spawns: the
 * children are not in /proc/self/task, so nothing may be rewritten or
 * freed under one.  Repeated, in one process.
 */
static atomic_int stop_spawning;

static void *spawn_loop(void *arg)
{
	char *argv[] = { "true", NULL };
	long bad = 0, n = 0;

	(void)arg;
	while (!atomic_load(&stop_spawning)) {
		pid_t pid;
		int st;

		if (posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ) ||
		    waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			bad++;
		n++;
	}
	return (void *)(bad ? -bad : n);
}

Test(spawn, probes_come_and_go_while_spawning, .timeout = 120)
{
	static const char *const syms[] = { "libc.so.6:execve", "libc.so.6:dup2",
					    "libc.so.6:close", "libc.so.6:sched_getparam" };
	struct kprobe kp = { .symbol_name = "libc.so.6:execve", .pre_handler = count_pre };
	pthread_t t;
	void *res;

	/* One probe stays, so that ukprobes' child path is in use. */
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert_eq(pthread_create(&t, NULL, spawn_loop, NULL), 0);
	for (int i = 0; i < 300; i++) {
		struct kprobe q = { .symbol_name = syms[i % 4], .pre_handler = count_pre,
				    .post_handler = (i & 4) ? count_post : NULL };

		cr_assert_eq(register_kprobe(&q), 0, "round %d", i);
		if (i % 16 == 0)
			ukprobes_wait_optimizer();
		unregister_kprobe(&q);
	}
	atomic_store(&stop_spawning, 1);
	pthread_join(t, &res);
	unregister_kprobe(&kp);
	cr_expect_gt((long)res, 0, "spawner: %ld (negative: failed spawns)", (long)res);
}

/*
 * A thread whose stack has no room for the child below its frames: the
 * child runs on a stack of its own, and its hits are missed (counted in
 * nmissed, no handler runs: a return probe it entered could not be told
 * from the parent's), but it execs as without probes.
 */
static void *small_stack_spawner(void *arg)
{
	char *argv[] = { "true", NULL };
	pid_t pid;
	int st = -1;

	(void)arg;
	if (posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ) ||
	    waitpid(pid, &st, 0) != pid)
		return (void *)-1L;
	return (void *)(long)st;
}

Test(spawn, thread_stack_without_room_misses_hits, .timeout = 60)
{
	struct kprobe kp;
	pthread_attr_t attr;
	pthread_t t;
	void *st;

	probe(&kp, "libc.so.6:execve", 0);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	cr_assert_eq(pthread_create(&t, &attr, small_stack_spawner, NULL), 0);
	pthread_join(t, &st);
	pthread_attr_destroy(&attr);
	cr_expect_eq((long)st, 0, "child status %#lx", (long)st);
	cr_expect_eq(atomic_load(&hits), 0);
	cr_expect_eq(kp.nmissed, 1);
	/* This thread's stack has room: counted. */
	expect_exit(spawn_argv("/bin/true", (char *[]){ "true", NULL }), 0);
	cr_expect_eq(atomic_load(&hits), 1);
	unregister_kprobe(&kp);
}
