// SPDX-License-Identifier: MIT
/*
 * quiesce.c - proving that no thread is executing in some code, without
 * stopping anybody (the user-space stop_machine()).
 *
 * Stopping threads with a signal would make poll(), epoll_wait(), select()
 * and nanosleep() fail with EINTR even under SA_RESTART; ptrace needs a
 * helper process.  Instead, for each thread:
 *  - blocked in a system call: /proc/self/task/TID/syscall shows its user
 *    pc; it is outside when that pc is;
 *  - running or runnable: /proc/self/task/TID/schedstat gives its on-CPU
 *    time; once that has grown, the thread has run again, and code that is
 *    straight-line, short and makes no system call (a slot copy, a
 *    detoured region, a detour's prologue) has been left.
 * Not seen: a thread interrupted inside such code by a signal whose handler
 * is still running (its resume point is on its stack, not in /proc), and a
 * vfork() child of the program (ukprobes' own spawn children are waited
 * for).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static int ukp_read_small(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	return 0;
}

/* The user pc of a thread blocked in a system call; 0 when it is running. */
static int ukp_task_pc(int tid, uintptr_t *pc)
{
	char path[64], buf[256];
	char *last;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	if (ukp_read_small(path, buf, sizeof(buf)))
		return -1;	/* exited */
	if (!strncmp(buf, "running", 7)) {
		*pc = 0;
		return 0;
	}
	last = strrchr(buf, ' ');
	*pc = last ? (uintptr_t)strtoull(last + 1, NULL, 16) : 0;
	return 0;
}

static int ukp_task_runtime(int tid, unsigned long long *ns)
{
	char path[64], buf[128];

	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", tid);
	if (ukp_read_small(path, buf, sizeof(buf)))
		return -1;
	*ns = strtoull(buf, NULL, 10);
	return 0;
}

struct ukp_task_wait {
	int tid;
	unsigned long long run_ns;
};

/**
 * ukp_threads_outside() - true when no other thread can be executing where
 * @inside says.  Waits up to @max_wait_us for running threads to run again.
 */
bool ukp_threads_outside(bool (*inside)(uintptr_t ip, void *arg), void *arg,
			 unsigned int max_wait_us)
{
	DIR *d = opendir("/proc/self/task");
	struct ukp_task_wait *running = NULL;
	size_t nrun = 0, cap = 0;
	struct dirent *de;
	bool ok = true;
	int self = (int)gettid();
	unsigned int waited = 0;

	if (!d)
		return false;
	/* A vfork-style child of ours runs in this memory, but is not in
	 * /proc/self/task: where it is cannot be known (spawn.c).  It is
	 * gone at its execve, soon. */
	while (atomic_load(&ukp_spawn_children)) {
		if (waited >= max_wait_us) {
			closedir(d);
			return false;
		}
		usleep(50);
		waited += 50;
	}
	while (ok && (de = readdir(d))) {
		int tid = atoi(de->d_name);
		uintptr_t pc;
		unsigned long long ns;

		if (tid <= 0 || tid == self || ukp_task_pc(tid, &pc))
			continue;
		if (pc) {
			if (inside(pc, arg))
				ok = false;
			continue;
		}
		if (ukp_task_runtime(tid, &ns))
			continue;
		if (nrun == cap) {
			struct ukp_task_wait *nr;

			cap = cap ? 2 * cap : 16;
			nr = realloc(running, cap * sizeof(*nr));
			if (!nr) {
				ok = false;
				break;
			}
			running = nr;
		}
		running[nrun].tid = tid;
		running[nrun].run_ns = ns;
		nrun++;
	}
	closedir(d);
	for (size_t i = 0; i < nrun && ok; i++) {
		for (;;) {
			uintptr_t pc;
			unsigned long long ns;

			if (ukp_task_runtime(running[i].tid, &ns) ||
			    ns != running[i].run_ns)
				break;		/* exited, or ran again */
			if (!ukp_task_pc(running[i].tid, &pc) && pc && !inside(pc, arg))
				break;		/* now blocked, outside */
			if (waited >= max_wait_us) {
				ok = false;
				break;
			}
			usleep(50);
			waited += 50;
		}
	}
	free(running);
	return ok;
}
