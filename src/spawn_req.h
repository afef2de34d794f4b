/* SPDX-License-Identifier: MIT */
/*
 * spawn_req.h - ukprobes' own way to start a program in a vfork-style child
 * (spawn.c), used by the interposed posix_spawn(), posix_spawnp(),
 * system() and popen() (spawn_shell.c).
 */
#ifndef UKP_SPAWN_REQ_H
#define UKP_SPAWN_REQ_H

#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <spawn.h>
#include <sys/types.h>

/* A file action, as posix_spawn_file_actions_add*() describe them. */
enum ukp_fa_kind {
	UKP_FA_CLOSE,
	UKP_FA_DUP2,
	UKP_FA_OPEN,
	UKP_FA_CHDIR,
	UKP_FA_FCHDIR,
	UKP_FA_CLOSEFROM,
	UKP_FA_TCSETPGRP,
};

struct ukp_fa {
	enum ukp_fa_kind kind;
	int fd;			/* CLOSE, DUP2 (from), OPEN, FCHDIR, CLOSEFROM, TCSETPGRP */
	int newfd;		/* DUP2 */
	int oflag;		/* OPEN */
	mode_t mode;		/* OPEN */
	const char *path;	/* OPEN, CHDIR */
};

/* What to start, and how (posix_spawnattr_t's contents). */
struct ukp_spawn_req {
	const char *file;
	char *const *argv;
	char *const *envp;
	bool use_path;		/* posix_spawnp(): search PATH */
	bool try_shell;		/* the GLIBC_2.2.5 versions: ENOEXEC runs /bin/sh */
	short flags;		/* POSIX_SPAWN_* */
	pid_t pgroup;
	int policy;
	struct sched_param param;
	sigset_t sigdefault;
	sigset_t sigmask;
	const struct ukp_fa *fa;
	int nfa;
};

/* Is ukprobes' child path in use?  (Its SIGTRAP handler is installed:
 * before that, the calls go to libc's own functions.) */
bool ukp_spawn_ours(void);

/*
 * ukp_spawn() - start @req->file in a new process, as glibc's posix_spawn()
 * does, but with a child that keeps ukprobes' handlers until its execve.
 * Returns 0 and the child's pid in *@pid, or an error number (positive, as
 * posix_spawn() returns it); errno is kept.
 */
int ukp_spawn(pid_t *pid, const struct ukp_spawn_req *req);

/* An empty request (no flags, empty signal sets). */
void ukp_spawn_req_init(struct ukp_spawn_req *req);

#endif
