/* SPDX-License-Identifier: MIT */
/*
 * tools.c - the same workload functions probed from outside the process, by
 * Linux's own mechanisms and by a debugger (issue 5):
 *   uprobe     a p: event on the function's first instruction through
 *              tracefs (uprobe_events), enabled in a tracing instance of
 *              our own: the kernel's uprobe, writing a trace record per hit
 *   uretprobe  an r: event (entry uprobe + return through the kernel's
 *              uretprobe trampoline)
 *   bpf-u      bpftrace 'uprobe:WORKLOAD:FUNC { @c = count(); }'
 *   bpf-ur     the same with uretprobe
 *   gdb        gdb: break *FUNC, commands silent; continue; end
 * each over the same workload program unprobed (baseline), per variant.
 *
 * The workload (bench/workload/workload.c, built to build/bench/workload)
 * times its own loop, after waiting until the probe is really planted (its
 * first byte changed) and a warm-up: uprobes, bpftrace and gdb cost partly
 * outside the process, so what is measured is said per row (the JSON's
 * "clock"): for uprobe and bpftrace rows the CPU time of the calling thread
 * (the trap, the uprobe's handler and the BPF program run in that thread's
 * kernel time; the CPU time of the whole process and its user/system split
 * are in the log); for gdb the wall time of the loop (each hit stops the
 * process while gdb, another process, handles it).  Hits are checked: the
 * event's count in uprobe_profile, bpftrace's @c, gdb's "already hit N
 * times".
 *
 * What the machine cannot do (not root, no tracefs, no bpftrace, no gdb,
 * ptrace refused) ends the rows as n/a with the reason.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "targets.h"

#define TRACEFS "/sys/kernel/tracing"
#define GROUP "ukpbench"
#define WARMUP 1000
#define GDB_WARMUP 100

static char workload[PATH_MAX];		/* absolute path */
static char tmpdir[64];

static const char *const clock_cpu =
	"thread CPU time (user+sys) of the workload's calling thread, measured "
	"by the workload around its loop: the uprobe trap and handler (or BPF "
	"program) run in that thread's kernel time";
static const char *const clock_wall =
	"wall time of the workload's loop, measured by the workload: each hit "
	"stops it while gdb (another process) handles the breakpoint";

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------ */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int write_file(const char *path, const char *s, int append)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | (append ? O_APPEND : O_TRUNC));
	ssize_t n;
	int err;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	err = n == (ssize_t)strlen(s) ? 0 : n < 0 ? -errno : -EIO;
	close(fd);
	return err;
}

/* Whole small file into buf (NUL-terminated); bytes read or -errno. */
static ssize_t read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;
	ssize_t n;

	if (fd < 0)
		return -errno;
	while (got + 1 < len && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	buf[got] = '\0';
	return (ssize_t)got;
}

static int have_program(const char *name, char *path, size_t len)
{
	const char *p = getenv("PATH");
	char dirs[4096];

	snprintf(dirs, sizeof(dirs), "%s", p ? p : "/usr/bin:/bin");
	for (char *d = strtok(dirs, ":"); d; d = strtok(NULL, ":")) {
		snprintf(path, len, "%s/%s", d, name);
		if (access(path, X_OK) == 0)
			return 1;
	}
	return 0;
}

/* File offset of the symbol @name in the workload (what uprobe_events
 * wants), or -1. */
static long symbol_file_offset(const char *name)
{
	int fd = open(workload, O_RDONLY | O_CLOEXEC);
	Elf *e;
	long off = -1;
	GElf_Addr vaddr = 0;
	int found = 0;
	size_t phnum;

	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	for (Elf_Scn *s = e ? elf_nextscn(e, NULL) : NULL; s && !found;
	     s = elf_nextscn(e, s)) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(s, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		d = elf_getdata(s, NULL);
		for (size_t i = 0; d && sh.sh_entsize &&
		     i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *n;

			if (!gelf_getsym(d, (int)i, &sym))
				continue;
			n = elf_strptr(e, sh.sh_link, sym.st_name);
			if (n && !strcmp(n, name) && sym.st_shndx != SHN_UNDEF) {
				vaddr = sym.st_value;
				found = 1;
				break;
			}
		}
	}
	if (found && !elf_getphdrnum(e, &phnum))
		for (size_t i = 0; i < phnum; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz)
				off = (long)(vaddr - ph.p_vaddr + ph.p_offset);
		}
	if (e)
		elf_end(e);
	close(fd);
	return off;
}

static const char *fn_name(const struct bench_target *t, char *buf, size_t len)
{
	snprintf(buf, len, "bench_fn_%s", t->variant);
	return buf;
}

/* fork + exec argv with stdout/stderr to @outfd (the log), default signal
 * dispositions (a shell may have left SIGINT ignored, and bpftrace stops on
 * SIGINT), in a process group of its own.  Returns the pid or -errno. */
static pid_t spawn(char *const argv[], int outfd, int raise_memlock)
{
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		for (int s = 1; s < NSIG; s++)
			if (s != SIGKILL && s != SIGSTOP)
				signal(s, SIG_DFL);
		if (outfd >= 0) {
			dup2(outfd, 1);
			dup2(outfd, 2);
		}
		if (raise_memlock) {
			struct rlimit rl;

			getrlimit(RLIMIT_MEMLOCK, &rl);
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_MEMLOCK, &rl);
			rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
			setrlimit(RLIMIT_MEMLOCK, &rl);	/* root may */
		}
		setpgid(0, 0);
		/* Gone with the measuring child, should the harness kill it
		 * (timeout): no bpftrace or gdb left behind. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	setpgid(pid, pid);
	return pid;
}

/* Waits up to @secs for @pid; SIGKILL after that if @kill_it.  Returns the
 * wait status, or -1 when it had to be killed (or is still running). */
static int wait_for2(pid_t pid, double secs, int kill_it)
{
	double end = now_s() + secs;
	int status;

	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return status;
		if (r < 0 && errno != EINTR)
			return -1;
		if (now_s() > end) {
			if (!kill_it)
				return -1;
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		usleep(2000);
	}
}

static int wait_for(pid_t pid, double secs)
{
	return wait_for2(pid, secs, 1);
}

struct wl_result {
	double thread_cpu_ns, wall_ns;	/* per call */
	unsigned long long proc_cpu_ns;
	long utime_us, stime_us, wait_ms, calls;
	char bytes[16];
};

static int parse_workload(const char *path, struct wl_result *w,
			  struct bench_result *res)
{
	char buf[1024];
	const char *p;

	if (read_file(path, buf, sizeof(buf)) <= 0) {
		bench_fail(res, "the workload wrote no result");
		return -1;
	}
	if (strncmp(buf, "ok ", 3)) {
		buf[strcspn(buf, "\n")] = '\0';
		bench_fail(res, "workload: %.200s", buf);
		return -1;
	}
	memset(w, 0, sizeof(*w));
#define FIELD(key, fmt, dst)						\
	do {								\
		p = strstr(buf, " " key "=");				\
		if (!p || sscanf(p + strlen(key) + 2, fmt, dst) != 1) {	\
			bench_fail(res, "workload output lacks " key);	\
			return -1;					\
		}							\
	} while (0)
	FIELD("thread_cpu_ns", "%lf", &w->thread_cpu_ns);
	FIELD("wall_ns", "%lf", &w->wall_ns);
	FIELD("proc_cpu_ns", "%llu", &w->proc_cpu_ns);
	FIELD("utime_us", "%ld", &w->utime_us);
	FIELD("stime_us", "%ld", &w->stime_us);
	FIELD("wait_ms", "%ld", &w->wait_ms);
	FIELD("calls", "%ld", &w->calls);
	FIELD("bytes", "%15s", w->bytes);
#undef FIELD
	return 0;
}

/* Runs the workload (argv from @pre, then its own arguments); its result
 * file is @outpath. */
static int run_workload(const struct bench_target *t, long iters, int threads,
			long warmup, double wait_s, long settle_ms,
			const char *outpath, struct wl_result *w,
			struct bench_result *res)
{
	char it[32], th[32], wu[32], ws[32], sm[32];
	char *argv[] = { workload, (char *)t->variant, it, "--threads", th,
			 "--warmup", wu, "--wait-probe", ws, "--settle-ms", sm,
			 "--out", (char *)outpath, NULL };
	pid_t pid;
	int st;

	snprintf(it, sizeof(it), "%ld", iters);
	snprintf(th, sizeof(th), "%d", threads);
	snprintf(wu, sizeof(wu), "%ld", warmup);
	snprintf(ws, sizeof(ws), "%g", wait_s);
	snprintf(sm, sizeof(sm), "%ld", settle_ms);
	unlink(outpath);
	pid = spawn(argv, 2, 0);
	if (pid < 0) {
		bench_fail(res, "fork: %s", strerror((int)-pid));
		return -1;
	}
	st = wait_for(pid, 50);
	if (st < 0) {
		bench_fail(res, "the workload did not finish within 50 s");
		return -1;
	}
	return parse_workload(outpath, w, res);
}

static void set_result(struct bench_result *res, const struct wl_result *w,
		       int wall)
{
	res->ns_per_op = wall ? w->wall_ns : w->thread_cpu_ns;
	res->wall_ns_per_op = w->wall_ns;
	res->ok = 1;
	fprintf(stderr, "workload: thread CPU %.1f ns/call, wall %.1f ns/call, "
		"process CPU %llu ns (user %ld us, sys %ld us) in the loop, "
		"probe seen after %ld ms, first bytes %s\n", w->thread_cpu_ns,
		w->wall_ns, w->proc_cpu_ns, w->utime_us, w->stime_us,
		w->wait_ms, w->bytes);
}

static void note_bytes(struct bench_result *res, const struct wl_result *w)
{
	if (!strncmp(w->bytes, "e8", 2))
		bench_note(res, "optimized by the kernel: the nop5 became a call "
			   "(%s)", w->bytes);
	else if (strncmp(w->bytes, "cc", 2))
		bench_note(res, "first bytes during the run %s", w->bytes);
}

static void out_path(char *buf, size_t len, const char *what)
{
	snprintf(buf, len, "%s/%s.%d", tmpdir, what, (int)getpid());
}

/* ------------------------------------------------------------------------ */
/* Baseline                                                                  */
/* ------------------------------------------------------------------------ */

static void measure_baseline(const struct bench_row *row, long iters,
			     struct bench_result *res)
{
	struct wl_result w;
	char out[PATH_MAX];

	out_path(out, sizeof(out), "base");
	if (!run_workload(row->arg, iters, row->threads, WARMUP * 10, 0, 0, out,
			  &w, res))
		set_result(res, &w, 0);
	unlink(out);
}

/* ------------------------------------------------------------------------ */
/* uprobe_events                                                             */
/* ------------------------------------------------------------------------ */

/* Why tracefs cannot be used, or NULL. */
static const char *tracefs_problem(void)
{
	struct stat st;

	if (geteuid() != 0)
		return "not root: uprobe_events needs root";
	if (stat(TRACEFS "/uprobe_events", &st) < 0) {
		mkdir(TRACEFS, 0700);
		if (mount("nodev", TRACEFS, "tracefs", 0, NULL) < 0 &&
		    errno != EBUSY)
			return "no tracefs at " TRACEFS " and mounting it failed";
		if (stat(TRACEFS "/uprobe_events", &st) < 0)
			return "no " TRACEFS "/uprobe_events (kernel without "
			       "CONFIG_UPROBE_EVENTS?)";
	}
	return NULL;
}

/* "NAME hits" of our event in uprobe_profile, or -1. */
static long profile_hits(const char *event)
{
	static char buf[1 << 16];
	char key[128];
	char *p;
	long hits = -1;

	if (read_file(TRACEFS "/uprobe_profile", buf, sizeof(buf)) < 0)
		return -1;
	/* "  PATH EVENT HITS": the event without its group. */
	snprintf(key, sizeof(key), " %s ", event);
	p = strstr(buf, key);
	if (p)
		sscanf(p + strlen(key), "%ld", &hits);
	return hits;
}

static void measure_uprobe(const struct bench_row *row, long iters,
			   struct bench_result *res)
{
	const struct bench_target *t = row->arg;
	int ret = !strcmp(row->name, "uretprobe");
	const char *why = tracefs_problem();
	char ev[64], def[PATH_MAX + 128], inst[PATH_MAX], path[PATH_MAX + 128];
	char out[PATH_MAX], sym[64];
	struct wl_result w;
	long off, hits, want;
	int err, made_inst = 0, defined = 0;

	if (why) {
		bench_fail(res, "%s", why);
		return;
	}
	off = symbol_file_offset(fn_name(t, sym, sizeof(sym)));
	if (off < 0) {
		bench_fail(res, "%s not found in %s", sym, workload);
		return;
	}
	snprintf(ev, sizeof(ev), "%s_%s_%d", ret ? "r" : "p", t->variant,
		 (int)getpid());
	snprintf(def, sizeof(def), "%s:%s/%s %s:0x%lx\n", ret ? "r" : "p",
		 GROUP, ev, workload, off);
	err = write_file(TRACEFS "/uprobe_events", def, 1);
	if (err) {
		bench_fail(res, "uprobe_events <- %.*s: %s",
			   (int)strlen(def) - 1, def, strerror(-err));
		return;
	}
	defined = 1;
	/* Our own instance, so that the records go to a buffer of ours. */
	snprintf(inst, sizeof(inst), TRACEFS "/instances/ukpbench_%d",
		 (int)getpid());
	if (mkdir(inst, 0700) < 0) {
		bench_fail(res, "mkdir %s: %s", inst, strerror(errno));
		goto out;
	}
	made_inst = 1;
	snprintf(path, sizeof(path), "%s/events/%s/%s/enable", inst, GROUP, ev);
	err = write_file(path, "1", 0);
	if (err) {
		bench_fail(res, "%s <- 1: %s", path, strerror(-err));
		goto out;
	}
	out_path(out, sizeof(out), "uprobe");
	if (!run_workload(t, iters, row->threads, WARMUP, 20, 0, out, &w, res)) {
		hits = profile_hits(ev);
		want = w.calls;
		if (hits != want) {
			bench_fail(res, "uprobe_profile counts %ld hits, want %ld",
				   hits, want);
		} else {
			set_result(res, &w, 0);
			note_bytes(res, &w);
		}
	}
	unlink(out);
	write_file(path, "0", 0);
out:
	if (made_inst && rmdir(inst) < 0)
		fprintf(stderr, "rmdir %s: %s\n", inst, strerror(errno));
	if (defined) {
		snprintf(def, sizeof(def), "-:%s/%s\n", GROUP, ev);
		err = write_file(TRACEFS "/uprobe_events", def, 1);
		if (err)
			fprintf(stderr, "uprobe_events <- -:%s/%s: %s\n", GROUP, ev,
				strerror(-err));
	}
}

/* Leftovers of a killed run: our instances and events. */
static void tracefs_cleanup(void)
{
	static char buf[1 << 16];
	char line[512], cmd[600];

	if (geteuid() != 0 || read_file(TRACEFS "/uprobe_events", buf,
					 sizeof(buf)) < 0)
		return;
	{
		FILE *p = popen("ls -d " TRACEFS "/instances/ukpbench_* 2>/dev/null",
				"r");

		while (p && fgets(line, sizeof(line), p)) {
			line[strcspn(line, "\n")] = '\0';
			if (rmdir(line) < 0)
				fprintf(stderr, "rmdir %s: %s\n", line,
					strerror(errno));
		}
		if (p)
			pclose(p);
	}
	for (char *l = buf; *l;) {
		char *e = strchrnul(l, '\n');
		char name[256];

		if (sscanf(l, "%*c:" GROUP "/%255s", name) == 1) {
			snprintf(cmd, sizeof(cmd), "-:" GROUP "/%s\n", name);
			write_file(TRACEFS "/uprobe_events", cmd, 1);
		}
		l = *e ? e + 1 : e;
	}
}

/* ------------------------------------------------------------------------ */
/* bpftrace                                                                  */
/* ------------------------------------------------------------------------ */

/* One try: 0 measured, -1 failed for good, 1 failed in a way worth one
 * more try (bpftrace did not stop, or counted hits short). */
static int bpftrace_once(const struct bench_row *row, long iters,
			 struct bench_result *res, const char *bt,
			 struct wl_result *w, char *buf, size_t len)
{
	const struct bench_target *t = row->arg;
	int ret = !strcmp(row->name, "bpf-ur");
	char prog[PATH_MAX + 128], sym[64], log[PATH_MAX], out[PATH_MAX];
	char *argv[] = { (char *)bt, "-e", prog, NULL };
	pid_t pid;
	int st, fd, rc;
	long count = -1, want;
	const char *p;

	snprintf(prog, sizeof(prog), "%s:%s:%s { @c = count(); }",
		 ret ? "uretprobe" : "uprobe", workload,
		 fn_name(t, sym, sizeof(sym)));
	out_path(log, sizeof(log), "bpftrace");
	fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		bench_fail(res, "%s: %s", log, strerror(errno));
		return -1;
	}
	pid = spawn(argv, fd, 1);
	close(fd);
	if (pid < 0) {
		bench_fail(res, "fork: %s", strerror((int)-pid));
		return -1;
	}
	out_path(out, sizeof(out), "bpfwl");
	/* The workload waits until the uprobe is really in, and a little more:
	 * bpftrace plants it before its program is attached (in one run of
	 * 7, a hundred of the first hits went uncounted without this). */
	rc = run_workload(t, iters, row->threads, WARMUP, 30, 300, out, w, res);
	/* SIGINT makes bpftrace print the map and exit; once in a while here
	 * it took no notice of the first one. */
	kill(pid, SIGINT);
	st = wait_for2(pid, 5, 0);
	if (st < 0) {
		kill(pid, SIGINT);
		st = wait_for(pid, 10);
	}
	read_file(log, buf, len);
	fprintf(stderr, "bpftrace -e '%s':\n%s\n", prog, buf);
	unlink(log);
	unlink(out);
	if (rc)
		return -1;
	if (st < 0) {
		bench_fail(res, "bpftrace did not stop on two SIGINTs within 15 s");
		return 1;
	}
	p = strstr(buf, "@c: ");
	if (p)
		count = atol(p + 4);
	want = w->calls;
	if (count != want) {
		char *l = count < 0 ? strstr(buf, "ERROR") : NULL;

		bench_fail(res, "bpftrace counted %ld hits, want %ld%s%.120s", count,
			   want, l ? ": " : "", l ? l : "");
		return count < 0 ? -1 : 1;
	}
	return 0;
}

static void measure_bpftrace(const struct bench_row *row, long iters,
			     struct bench_result *res)
{
	char bt[PATH_MAX], buf[8192], why[BENCH_NOTE_MAX] = "";
	struct wl_result w;
	struct rlimit rl;
	int rc = 1, tries = 0;

	if (!have_program("bpftrace", bt, sizeof(bt))) {
		bench_fail(res, "bpftrace is not installed");
		return;
	}
	if (geteuid() != 0) {
		bench_fail(res, "not root: bpftrace needs root");
		return;
	}
	while (rc == 1 && tries < 3) {
		if (tries)
			snprintf(why, sizeof(why), "%s", res->note);
		memset(res, 0, sizeof(*res));
		rc = bpftrace_once(row, iters, res, bt, &w, buf, sizeof(buf));
		tries++;
	}
	if (rc)
		return;
	set_result(res, &w, 0);
	note_bytes(res, &w);
	if (tries > 1)
		bench_note(res, "try %d (the one before: %.100s)", tries, why);
	getrlimit(RLIMIT_MEMLOCK, &rl);
	if (strstr(buf, "RLIMIT_MEMLOCK") && rl.rlim_max != RLIM_INFINITY)
		bench_note(res, "RLIMIT_MEMLOCK stuck at %llu KiB (unneeded: "
			   "memcg accounting)",
			   (unsigned long long)rl.rlim_max / 1024);
}

/* ------------------------------------------------------------------------ */
/* gdb                                                                       */
/* ------------------------------------------------------------------------ */

static void measure_gdb(const struct bench_row *row, long iters,
			struct bench_result *res)
{
	const struct bench_target *t = row->arg;
	char gdb[PATH_MAX], script[PATH_MAX], log[PATH_MAX], out[PATH_MAX],
	     sym[64], it[32], wu[32], buf[16384];
	char *argv[] = { gdb, "-batch", "-nx", "-x", script, "--args", workload,
			 (char *)t->variant, it, "--warmup", wu, "--out", out,
			 NULL };
	struct wl_result w;
	FILE *f;
	pid_t pid;
	int st, fd;
	long hits = -1, want = GDB_WARMUP + iters;
	const char *p;

	if (!have_program("gdb", gdb, sizeof(gdb))) {
		bench_fail(res, "gdb is not installed");
		return;
	}
	out_path(script, sizeof(script), "gdbscript");
	out_path(log, sizeof(log), "gdblog");
	out_path(out, sizeof(out), "gdbwl");
	f = fopen(script, "w");
	if (!f) {
		bench_fail(res, "%s: %s", script, strerror(errno));
		return;
	}
	fprintf(f, "set pagination off\nset confirm off\n"
		"break *%s\ncommands 1\nsilent\ncontinue\nend\nrun\n"
		"info breakpoints\n", fn_name(t, sym, sizeof(sym)));
	fclose(f);
	snprintf(it, sizeof(it), "%ld", iters);
	snprintf(wu, sizeof(wu), "%d", GDB_WARMUP);
	fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		bench_fail(res, "%s: %s", log, strerror(errno));
		return;
	}
	unlink(out);
	pid = spawn(argv, fd, 0);
	close(fd);
	st = pid < 0 ? -1 : wait_for(pid, 50);
	read_file(log, buf, sizeof(buf));
	fprintf(stderr, "gdb:\n%s\n", buf);
	unlink(script);
	unlink(log);
	if (st < 0) {
		bench_fail(res, "gdb did not finish within 50 s");
		unlink(out);
		return;
	}
	if (parse_workload(out, &w, res)) {
		char *l = strstr(buf, "ptrace");

		if (l)
			bench_note(res, "gdb: %.120s", l);
		unlink(out);
		return;
	}
	unlink(out);
	p = strstr(buf, "already hit ");
	if (p)
		hits = atol(p + 12);
	if (hits != want) {
		bench_fail(res, "gdb's breakpoint was hit %ld times, want %ld",
			   hits, want);
		return;
	}
	set_result(res, &w, 1);
}

/* ------------------------------------------------------------------------ */
/* Main                                                                      */
/* ------------------------------------------------------------------------ */

static const struct {
	const char *name;
	long iters;
	bench_measure_fn fn;
	const char *what;
} kinds[] = {
	{ "uprobe", 20000, measure_uprobe,
	  "Linux uprobe: p: event via tracefs, enabled in an instance (one "
	  "trace record per hit)" },
	{ "uretprobe", 20000, measure_uprobe,
	  "Linux uretprobe: r: event via tracefs (entry uprobe + return "
	  "trampoline)" },
	{ "bpf-u", 20000, measure_bpftrace,
	  "bpftrace uprobe with @c = count()" },
	{ "bpf-ur", 20000, measure_bpftrace,
	  "bpftrace uretprobe with @c = count()" },
	{ "gdb", 1000, measure_gdb,
	  "gdb breakpoint, commands: silent; continue (wall time)" },
};
#define NKINDS ((int)(sizeof(kinds) / sizeof(kinds[0])))

int main(int argc, char **argv)
{
	struct bench_row rows[(1 + NKINDS) * BENCH_NTARGETS + 2];
	int n = 0, status;
	ssize_t len;
	static const struct bench_ratio ratios[] = {
		{ "uretprobe/uprobe", "uretprobe", "uprobe", 1, 0, 0, 0 },
		{ "bpf-u/uprobe",     "bpf-u",     "uprobe", 1, 0, 0, 0 },
		{ "bpf-ur/bpf-u",     "bpf-ur",    "bpf-u",  1, 0, 0, 0 },
		{ "gdb/uprobe",       "gdb",       "uprobe", 1, 0, 0, 0 },
		{ "uprobe 2thr/1thr", "uprobe",    "uprobe", 1, 0, 2, 1 },
	};

	len = readlink("/proc/self/exe", workload, sizeof(workload) - 16);
	if (len <= 0) {
		perror("readlink /proc/self/exe");
		return 1;
	}
	workload[len] = '\0';
	snprintf(strrchr(workload, '/') + 1, 16, "workload");
	if (access(workload, X_OK)) {
		fprintf(stderr, "%s: %s\n", workload, strerror(errno));
		return 1;
	}
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/ukpbench.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	tracefs_cleanup();

	memset(rows, 0, sizeof(rows));
	for (int i = 0; i < BENCH_NTARGETS; i++) {
		const struct bench_target *t = &bench_targets[i];

		rows[n++] = (struct bench_row){
			.name = "baseline", .variant = t->variant, .threads = 1,
			.iters = 2000000, .measure = measure_baseline, .arg = t,
			.clock = clock_cpu, .log_expected = 1,
			.what = "the workload program, nothing attached: ns per "
				"call of the function (thread CPU time)",
		};
		for (int k = 0; k < NKINDS; k++)
			rows[n++] = (struct bench_row){
				.name = kinds[k].name, .variant = t->variant,
				.threads = 1, .iters = kinds[k].iters,
				.over = "baseline", .measure = kinds[k].fn,
				.arg = t, .what = kinds[k].what,
				.log_expected = 1,
				.clock = kinds[k].fn == measure_gdb ?
					 clock_wall : clock_cpu,
			};
	}
	/* Two threads of the workload on the same uprobe. */
	rows[n++] = (struct bench_row){
		.name = "baseline", .variant = "push_rbp", .threads = 2,
		.iters = 1000000, .measure = measure_baseline,
		.arg = &bench_targets[0], .clock = clock_cpu,
		.log_expected = 1,
	};
	rows[n++] = (struct bench_row){
		.name = "uprobe", .variant = "push_rbp", .threads = 2,
		.iters = 10000, .over = "baseline", .measure = measure_uprobe,
		.arg = &bench_targets[0], .clock = clock_cpu,
		.log_expected = 1,
	};
	status = bench_main(argc, argv, "tools", rows, n, ratios,
			    (int)(sizeof(ratios) / sizeof(ratios[0])));
	tracefs_cleanup();
	rmdir(tmpdir);
	return status;
}
