// SPDX-License-Identifier: MIT
/*
 * inject.c - calls in a running process (see inject.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "inject.h"
#include "syms.h"
#include "tool_arch.h"

/* Room for the strings the calls take, below the red zone. */
#define SCRATCH		(64 * 1024)

struct inj {
	pid_t pid, tid;
	struct inj_regs *saved;
	uint64_t scratch_top, scratch_used;
	int pending_sig;	/* a signal that stopped it first: delivered at the end */
};

/* ------------------------------------------------------------------------ */
/* What /proc says                                                           */
/* ------------------------------------------------------------------------ */

/* The value of "Key:" in /proc/PID[/task/TID]/status, or NULL. */
static char *status_field(const char *path, const char *key, char *out, size_t len)
{
	FILE *f = fopen(path, "re");
	char line[512];
	size_t k = strlen(key);
	char *r = NULL;

	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, k) && line[k] == ':') {
			char *v = line + k + 1;

			v += strspn(v, " \t");
			v[strcspn(v, "\n")] = '\0';
			snprintf(out, len, "%s", v);
			r = out;
			break;
		}
	}
	fclose(f);
	return r;
}

static int read_int_file(const char *path, int dflt)
{
	FILE *f = fopen(path, "re");
	int v = dflt;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = dflt;
		fclose(f);
	}
	return v;
}

static bool have_cap_sys_ptrace(void)
{
	char v[64];
	unsigned long long eff;

	if (!status_field("/proc/self/status", "CapEff", v, sizeof(v)))
		return false;
	eff = strtoull(v, NULL, 16);
	return eff & (1ull << 19);	/* CAP_SYS_PTRACE */
}

static void comm_of(pid_t pid, char *out, size_t len)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/%d/status", pid);
	if (!status_field(p, "Name", out, len))
		snprintf(out, len, "?");
}

const char *inject_refusal(pid_t pid, char *buf, size_t len)
{
	char p[128], v[256], comm[64];
	int scope, uid, me = (int)getuid();
	bool cap = have_cap_sys_ptrace();
	DIR *d;
	struct dirent *de;

	snprintf(p, sizeof(p), "/proc/%d/status", pid);
	if (!status_field(p, "Uid", v, sizeof(v))) {
		snprintf(buf, len, "no process %d", pid);
		return buf;
	}
	comm_of(pid, comm, sizeof(comm));
	uid = atoi(v);
	if (pid == getpid()) {
		snprintf(buf, len, "%d is ukprobe itself", pid);
		return buf;
	}
	if (uid != me && !cap) {
		snprintf(buf, len, "%d (%s) belongs to uid %d, and you are uid %d: run ukprobe as "
			 "that user, or as root", pid, comm, uid, me);
		return buf;
	}
	if (status_field(p, "TracerPid", v, sizeof(v)) && atoi(v) != 0) {
		char tc[64];

		comm_of(atoi(v), tc, sizeof(tc));
		snprintf(buf, len, "%d (%s) is already traced by %d (%s): detach that tracer "
			 "first (one tracer at a time)", pid, comm, atoi(v), tc);
		return buf;
	}
	scope = read_int_file("/proc/sys/kernel/yama/ptrace_scope", 0);
	if (scope == 3) {
		snprintf(buf, len, "Yama's ptrace_scope is 3: no process may be traced until "
			 "reboot; start the program under ukprobe instead (ukprobe trace -- CMD)");
		return buf;
	}
	if (scope == 2 && !cap) {
		snprintf(buf, len, "Yama's ptrace_scope is 2: only root may attach; run ukprobe as "
			 "root, or start the program under ukprobe (ukprobe trace -- CMD)");
		return buf;
	}
	if (scope == 1 && !cap) {
		/* Only descendants (or a process that allowed us with
		 * PR_SET_PTRACER): tell, rather than try and fail. */
		pid_t q = pid;
		bool desc = false;

		while (q > 1 && !desc) {
			char sp[64];

			snprintf(sp, sizeof(sp), "/proc/%d/status", q);
			if (!status_field(sp, "PPid", v, sizeof(v)))
				break;
			q = atoi(v);
			desc = q == getpid();
		}
		if (!desc) {
			snprintf(buf, len, "Yama's ptrace_scope is 1: only a parent may attach to %d "
				 "(%s); run ukprobe as root, or 'sudo sysctl kernel.yama.ptrace_scope=0', "
				 "or start the program under ukprobe (ukprobe trace -- CMD)", pid, comm);
			return buf;
		}
	}
	if (status_field(p, "Seccomp", v, sizeof(v)) && atoi(v) != 0) {
		snprintf(buf, len, "%d (%s) runs under a seccomp %s: the calls ukprobe would make "
			 "in it (dlopen, mmap, open) could be refused or kill it; not attaching", pid,
			 comm, atoi(v) == 1 ? "strict mode" : "filter");
		return buf;
	}
	/* A thread that blocks SIGTRAP would be killed by its first hit of a
	 * breakpoint probe (the kernel forces a blocked trap signal to its
	 * default action). */
	snprintf(p, sizeof(p), "/proc/%d/task", pid);
	d = opendir(p);
	while (d && (de = readdir(d))) {
		char tp[320];

		if (de->d_name[0] == '.')
			continue;
		snprintf(tp, sizeof(tp), "/proc/%d/task/%s/status", pid, de->d_name);
		if (status_field(tp, "SigBlk", v, sizeof(v)) &&
		    (strtoull(v, NULL, 16) & (1ull << (SIGTRAP - 1)))) {
			snprintf(buf, len, "thread %s of %d (%s) blocks SIGTRAP: its first probe hit "
				 "would kill the process; not attaching (start the program under "
				 "ukprobe instead: ukprobe trace -- CMD)", de->d_name, pid, comm);
			closedir(d);
			return buf;
		}
	}
	if (d)
		closedir(d);
	if (!inject_sym(pid, "/libc.so.6", "dlopen")) {
		snprintf(buf, len, "%d (%s) has no libc.so.6 with dlopen() (glibc 2.34 or later, "
			 "dynamically linked): ukprobe cannot load its agent into it", pid, comm);
		return buf;
	}
	return NULL;
}

/* ------------------------------------------------------------------------ */
/* Symbols of the target                                                     */
/* ------------------------------------------------------------------------ */

uint64_t inject_sym(pid_t pid, const char *obj, const char *sym)
{
	char p[64], line[PATH_MAX + 256], path[PATH_MAX + 256] = "";
	uint64_t base = 0, r = 0;
	size_t ol = strlen(obj);
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/maps", pid);
	f = fopen(p, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		char *slash = strchr(line, '/');
		size_t pl;

		if (!slash || sscanf(line, "%llx-%llx %*s %llx", &lo, &hi, &off) != 3)
			continue;
		slash[strcspn(slash, "\n")] = '\0';
		pl = strlen(slash);
		if (off != 0 || pl < ol || strcmp(slash + pl - ol, obj))
			continue;
		base = lo;
		snprintf(path, sizeof(path), "%s", slash);
		break;
	}
	fclose(f);
	if (path[0]) {
		char full[PATH_MAX + 320];
		struct symfile *sf;
		const struct ksym *s;

		/* The file as the target sees it (its mount namespace). */
		snprintf(full, sizeof(full), "/proc/%d/root%s", pid, path);
		sf = symfile_open(full, NULL, 0);
		if (!sf)
			sf = symfile_open(path, NULL, 0);
		s = sf ? symfile_lookup(sf, sym) : NULL;
		if (s && ksym_is_func(s)) {
			uint64_t lowest = UINT64_MAX;

			/* The mapping at file offset 0 holds the lowest
			 * segment: the load bias is its start minus that
			 * segment's page-aligned address. */
			for (int i = 0; i < sf->nloads; i++)
				if (sf->loads[i].vaddr < lowest)
					lowest = sf->loads[i].vaddr;
			r = base - (lowest & ~4095ull) + s->addr;
		}
		symfile_close(sf);
	}
	return r;
}

/* ------------------------------------------------------------------------ */
/* The seized thread                                                         */
/* ------------------------------------------------------------------------ */

/* A thread blocked in a system call if there is one (the main thread
 * first), else the main thread. */
static pid_t pick_thread(pid_t pid)
{
	char p[320], buf[64];
	pid_t best = pid;
	DIR *d;
	struct dirent *de;

	snprintf(p, sizeof(p), "/proc/%d/task/%d/syscall", pid, pid);
	if (read_int_file(p, -1) >= 0)
		return pid;
	snprintf(p, sizeof(p), "/proc/%d/task", pid);
	d = opendir(p);
	while (d && (de = readdir(d))) {
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/proc/%d/task/%s/syscall", pid, de->d_name);
		f = fopen(p, "re");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) && buf[0] >= '0' && buf[0] <= '9') {
			best = atoi(de->d_name);
			fclose(f);
			break;
		}
		fclose(f);
	}
	if (d)
		closedir(d);
	return best;
}

/* Is pc in a file's executable mapping of the target (not generated code:
 * a probe's detour or out-of-line slot, which could go away)? */
static bool pc_in_file_code(pid_t pid, uint64_t pc)
{
	char p[64], line[PATH_MAX + 256];
	bool r = false;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/maps", pid);
	f = fopen(p, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi;
		char perms[8];

		if (sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) != 3)
			continue;
		if (pc >= lo && pc < hi) {
			r = perms[2] == 'x' && strchr(line, '/');
			break;
		}
	}
	fclose(f);
	return r;
}

/* Wait for tid's next stop; its status, or -1 if it is gone. */
static int wait_stop(pid_t tid)
{
	int st;

	for (;;) {
		pid_t w = waitpid(tid, &st, __WALL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 || WIFEXITED(st) || WIFSIGNALED(st))
			return -1;
		return st;
	}
}

static struct inj *seize(pid_t pid, pid_t tid, char *err, size_t errlen)
{
	struct inj *in = calloc(1, sizeof(*in));
	int st;

	if (!in)
		return NULL;
	in->pid = pid;
	in->tid = tid;
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL)) {
		snprintf(err, errlen, "cannot attach to %d: %s", pid, strerror(errno));
		free(in);
		return NULL;
	}
	for (int tries = 0;; tries++) {
		if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) || (st = wait_stop(tid)) < 0) {
			snprintf(err, errlen, "%d: the thread %d went away", pid, tid);
			ptrace(PTRACE_DETACH, tid, NULL, NULL);
			free(in);
			return NULL;
		}
		if (WIFSTOPPED(st) && (st >> 16) != PTRACE_EVENT_STOP) {
			/* A signal came first: the program gets it when
			 * the thread is released. */
			in->pending_sig = WSTOPSIG(st);
			continue;
		}
		if (inject_arch_save(tid, &in->saved)) {
			snprintf(err, errlen, "%d: cannot read the registers of thread %d", pid, tid);
			ptrace(PTRACE_DETACH, tid, NULL, NULL);
			free(in);
			return NULL;
		}
		/* Stopped in generated code (a detour, a slot): let it run
		 * out of it first. */
		if (inject_arch_in_syscall(in->saved) ||
		    pc_in_file_code(pid, inject_arch_pc(in->saved)) || tries > 200)
			break;
		free(in->saved);
		in->saved = NULL;
		ptrace(PTRACE_CONT, tid, NULL, NULL);
		{
			struct timespec ms = { 0, 1000000 };

			nanosleep(&ms, NULL);
		}
	}
	in->scratch_top = (inject_arch_sp(in->saved) - TOOL_RED_ZONE) & ~15ull;
	return in;
}

struct inj *inject_begin(pid_t pid, char *err, size_t errlen)
{
	return seize(pid, pick_thread(pid), err, errlen);
}

pid_t inject_tid(const struct inj *in)
{
	return in->tid;
}

uint64_t inject_push(struct inj *in, const void *data, size_t len)
{
	uint64_t at;
	struct iovec l = { (void *)data, len }, r;

	if (in->scratch_used + len + 16 > SCRATCH)
		return 0;
	in->scratch_used = (in->scratch_used + len + 15) & ~15ull;
	at = in->scratch_top - in->scratch_used;
	r.iov_base = (void *)at;
	r.iov_len = len;
	if (process_vm_writev(in->tid, &l, 1, &r, 1, 0) != (ssize_t)len) {
		/* Where process_vm_writev() is not allowed: word by word. */
		for (size_t i = 0; i < len; i += sizeof(long)) {
			long w = 0;

			memcpy(&w, (const char *)data + i, len - i < sizeof(w) ? len - i : sizeof(w));
			if (len - i < sizeof(w)) {
				long old = ptrace(PTRACE_PEEKDATA, in->tid, (void *)(at + i), NULL);

				memcpy((char *)&old, &w, len - i);
				w = old;
			}
			if (ptrace(PTRACE_POKEDATA, in->tid, (void *)(at + i), (void *)w))
				return 0;
		}
	}
	return at;
}

int inject_call(struct inj *in, uint64_t fn, const uint64_t *args, int nargs, uint64_t *ret,
		char *err, size_t errlen)
{
	uint64_t sp = in->scratch_top - SCRATCH - 256, pc = 0;
	int st, e;

	e = inject_arch_setup_call(in->tid, in->saved, fn, args, nargs, sp);
	if (e) {
		snprintf(err, errlen, "cannot set up the call in %d: %s", in->pid, strerror(-e));
		return -1;
	}
	if (ptrace(PTRACE_CONT, in->tid, NULL, NULL)) {
		snprintf(err, errlen, "cannot resume %d: %s", in->pid, strerror(errno));
		return -1;
	}
	for (;;) {
		st = wait_stop(in->tid);
		if (st < 0) {
			snprintf(err, errlen, "%d ended during the call", in->pid);
			return -1;
		}
		if ((st >> 16) == PTRACE_EVENT_STOP) {
			/* A group stop (SIGSTOP to the process): the call
			 * goes on when it continues. */
			ptrace(PTRACE_LISTEN, in->tid, NULL, NULL);
			continue;
		}
		if (WSTOPSIG(st) == SIGSEGV && inject_arch_result(in->tid, ret, &pc) == 0)
			return 0;
		if (WSTOPSIG(st) == SIGSEGV || WSTOPSIG(st) == SIGBUS || WSTOPSIG(st) == SIGILL ||
		    WSTOPSIG(st) == SIGTRAP || WSTOPSIG(st) == SIGFPE) {
			if (WSTOPSIG(st) != SIGTRAP || pc) {
				inject_arch_result(in->tid, ret, &pc);
				snprintf(err, errlen, "the call in %d faulted (signal %d at 0x%llx)",
					 in->pid, WSTOPSIG(st), (unsigned long long)pc);
				return -1;
			}
		}
		/* Another signal for the program: its handler runs on top
		 * of the call, as it would anywhere. */
		ptrace(PTRACE_CONT, in->tid, NULL, (void *)(long)WSTOPSIG(st));
	}
}

void inject_end(struct inj *in)
{
	if (!in)
		return;
	if (in->saved)
		inject_arch_restore(in->tid, in->saved);
	ptrace(PTRACE_DETACH, in->tid, NULL, (void *)(long)in->pending_sig);
	free(in);
}
