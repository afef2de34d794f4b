// SPDX-License-Identifier: MIT
/*
 * attach.c - `ukprobe trace -p PID` and `ukprobe latency -p PID`: trace a
 * process that is already running, then leave it as it was.
 *
 * The agent is loaded with dlopen() in a thread of the target (inject.h)
 * and ukprobe_agent_attach() places the probes there; the thread gets its
 * registers back at once and the program runs on while the command reads
 * the rings.  On Ctrl-C (or SIGTERM), --duration, or the process's end:
 * ukprobe_agent_detach() in a thread again (probes out, signal handlers and
 * switches as before), then the rings are read to the end.
 *
 * `ukprobe list|enable|disable|optimization -p PID`: the same calls for
 * ukprobe_agent_ctl(), in any process where libukprobes is loaded.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "consume.h"
#include "inject.h"
#include "shm.h"
#include "tool.h"

#ifndef RTLD_NOW
#define RTLD_NOW	0x00002
#endif

#define AGENT_SONAME	"/libukprobe-agent.so"

char *tool_find_lib(const char *name);

/* A string of the target (dlerror()'s), at most len - 1 bytes. */
static void read_remote_str(pid_t pid, uint64_t at, char *out, size_t len)
{
	struct iovec l = { out, len - 1 }, r = { (void *)at, len - 1 };
	ssize_t n;

	out[0] = '\0';
	if (!at)
		return;
	n = process_vm_readv(pid, &l, 1, &r, 1, 0);
	out[n > 0 ? n : 0] = '\0';
}

/*
 * The agent loaded (or found loaded) in the seized thread: 0, or -1 with
 * the reason printed.
 */
static int load_agent(struct inj *in, pid_t pid, const char *agent)
{
	uint64_t dl = inject_sym(pid, "/libc.so.6", "dlopen"), path, handle = 0, args[2];
	char err[512];

	path = inject_push(in, agent, strlen(agent) + 1);
	args[0] = path;
	args[1] = RTLD_NOW;
	if (!dl || !path || inject_call(in, dl, args, 2, &handle, err, sizeof(err))) {
		tool_err("%d: cannot load %s: %s", pid, agent, dl && path ? err : "no dlopen()");
		return -1;
	}
	if (!handle) {
		uint64_t de = inject_sym(pid, "/libc.so.6", "dlerror"), msg = 0;
		char why[512] = "";

		if (de && inject_call(in, de, NULL, 0, &msg, err, sizeof(err)) == 0)
			read_remote_str(pid, msg, why, sizeof(why));
		tool_err("%d: dlopen(%s) failed in the process: %s", pid, agent,
			 why[0] ? why : "(no reason given)");
		return -1;
	}
	return 0;
}

/* Call the agent's fn(args) in a seized thread: its int result, or
 * INT32_MIN with the reason printed. */
static int agent_call(struct inj *in, pid_t pid, const char *fn, const uint64_t *args, int n)
{
	uint64_t f = inject_sym(pid, AGENT_SONAME, fn), ret = 0;
	char err[512];

	if (!f) {
		tool_err("%d: the agent has no %s (a different ukprobe version?)", pid, fn);
		return INT32_MIN;
	}
	if (inject_call(in, f, args, n, &ret, err, sizeof(err))) {
		tool_err("%s", err);
		return INT32_MIN;
	}
	return (int)(uint32_t)ret;
}

static bool process_gone(int pidfd, pid_t pid)
{
	struct pollfd p = { pidfd, POLLIN, 0 };

	if (pidfd >= 0)
		return poll(&p, 1, 0) == 1;
	return kill(pid, 0) < 0 && errno == ESRCH;
}

int attach_run(const struct run_opts *o, const char *conf, const char *shm_path,
	       struct uks *shm, struct consumer *cons)
{
	char *agent = tool_find_lib("libukprobe-agent.so"), *text = NULL, err[512];
	size_t tlen = 0;
	uint64_t at, args[1];
	uint64_t t_end = o->duration > 0 ? ukp_now_ns() + (uint64_t)(o->duration * 1e9) : 0;
	struct inj *in;
	int r, pidfd;
	FILE *t;

	if (!agent) {
		tool_err("cannot find libukprobe-agent.so (next to ukprobe, or in "
			 "$UKPROBE_AGENT_DIR)");
		return 2;
	}
	t = open_memstream(&text, &tlen);
	if (!t)
		return 2;
	fprintf(t, "%s\n%%defs\n", conf);
	for (int i = 0; i < o->defs.n; i++)
		fprintf(t, "%s\n", o->defs.v[i]);
	fprintf(t, "%%hists\n");
	for (int i = 0; i < o->nhists; i++)
		fprintf(t, "%s\n", o->hists[i]);
	fclose(t);

	pidfd = (int)syscall(SYS_pidfd_open, o->pid, 0);
	in = inject_begin(o->pid, err, sizeof(err));
	if (!in) {
		tool_err("%s", err);
		return 1;
	}
	if (load_agent(in, o->pid, agent)) {
		inject_end(in);
		return 1;
	}
	at = inject_push(in, text, tlen + 1);
	args[0] = at;
	r = at ? agent_call(in, o->pid, "ukprobe_agent_attach", args, 1) : -E2BIG;
	inject_end(in);
	free(text);
	unlink(shm_path);
	if (r == -EBUSY) {
		tool_err("%d is traced by another ukprobe already (ukprobe list -p %d)", o->pid,
			 o->pid);
		return 1;
	}
	if (r) {
		if (r != INT32_MIN)
			tool_err("%d: the agent could not attach: %s", o->pid, strerror(-r));
		return 1;
	}
	if (o->verbose)
		tool_err("attached to %d; Ctrl-C to detach", o->pid);

	/* Read the rings until told to stop, the time is up, or it ends. */
	for (;;) {
		uint32_t seen = atomic_load(&shm->consumer_wake);
		struct timespec ts = { 0, 20 * 1000000L };

		consumer_drain(cons);
		if (stop_requested || (t_end && ukp_now_ns() >= t_end) ||
		    process_gone(pidfd, o->pid))
			break;
		if (atomic_load(&shm->consumer_wake) == seen)
			syscall(SYS_futex, (uint32_t *)&shm->consumer_wake, FUTEX_WAIT, seen, &ts,
				NULL, 0);
	}
	if (!process_gone(pidfd, o->pid)) {
		in = inject_begin(o->pid, err, sizeof(err));
		if (!in) {
			tool_err("cannot detach from %d: %s", o->pid, err);
		} else {
			/* Records made until the probes are out are read
			 * meanwhile (a thread may wait for room). */
			r = agent_call(in, o->pid, "ukprobe_agent_detach", NULL, 0);
			inject_end(in);
			if (r && r != INT32_MIN)
				tool_err("%d: detach: %s", o->pid, strerror(-r));
			else if (o->verbose)
				tool_err("detached from %d", o->pid);
		}
	}
	consumer_final(cons);
	consumer_close(cons);
	if (pidfd >= 0)
		close(pidfd);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* ukprobe list | enable | disable | optimization -p PID                     */
/* ------------------------------------------------------------------------ */

static bool maps_have(pid_t pid, const char *suffix)
{
	char p[64], line[PATH_MAX + 256];
	size_t sl = strlen(suffix);
	bool r = false;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/maps", pid);
	f = fopen(p, "re");
	while (f && !r && fgets(line, sizeof(line), f)) {
		size_t n = strcspn(line, "\n");

		line[n] = '\0';
		r = n >= sl && !strcmp(line + n - sl, suffix);
	}
	if (f)
		fclose(f);
	return r;
}

int cmd_ctl(const char *cmd, int argc, char **argv, const char *usage)
{
	static const struct option lo[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char *agent = tool_find_lib("libukprobe-agent.so"), err[512], why[512], op[32];
	char path[PATH_MAX];
	pid_t pid = 0;
	struct inj *in;
	uint64_t args[2];
	bool loaded;
	int c, r, fd;

	while ((c = getopt_long(argc, argv, "+p:h", lo, NULL)) != -1) {
		switch (c) {
		case 'p': pid = atoi(optarg); break;
		case 'h': fputs(usage, stdout); return 0;
		default:
			fprintf(stderr, "Try 'ukprobe %s --help'\n", cmd);
			return 2;
		}
	}
	if (pid <= 0) {
		tool_err("%s: which process? -p PID%s", cmd,
			 !strcmp(cmd, "list") ? " (the symbols of a file: ukprobe list-symbols FILE)" :
			 "");
		return 2;
	}
	snprintf(op, sizeof(op), "%s", !strcmp(cmd, "list") ? "list" : cmd);
	if (!strcmp(cmd, "optimization")) {
		if (optind < argc && (!strcmp(argv[optind], "on") || !strcmp(argv[optind], "1")))
			snprintf(op, sizeof(op), "optimize=1");
		else if (optind < argc && (!strcmp(argv[optind], "off") || !strcmp(argv[optind], "0")))
			snprintf(op, sizeof(op), "optimize=0");
		else if (optind < argc) {
			tool_err("optimization: on or off, not '%s'", argv[optind]);
			return 2;
		} else {
			snprintf(op, sizeof(op), "state");
		}
	}
	if (inject_refusal(pid, why, sizeof(why))) {
		tool_err("%s", why);
		return 1;
	}
	if (!maps_have(pid, "/libukprobes.so.0") && !maps_have(pid, "/libukprobes.so.0.1.0")) {
		/* No probes there, and nothing to switch: nothing is done. */
		if (!strcmp(op, "list"))
			return 0;
		tool_err("%d has no libukprobes loaded: no probes to %s", pid, cmd);
		return 1;
	}
	if (!agent) {
		tool_err("cannot find libukprobe-agent.so");
		return 2;
	}
	loaded = maps_have(pid, AGENT_SONAME);
	{
		const char *dir = access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm";
		char sp[64];
		struct stat pst;

		snprintf(path, sizeof(path), "%s/ukprobe-ctl-%d-XXXXXX", dir, (int)getpid());
		fd = mkostemp(path, O_CLOEXEC);
		if (fd < 0) {
			tool_err("%s: %s", path, strerror(errno));
			return 2;
		}
		snprintf(sp, sizeof(sp), "/proc/%d", pid);
		if (getuid() == 0 && stat(sp, &pst) == 0 && fchown(fd, pst.st_uid, pst.st_gid))
			tool_err("%s: %s", path, strerror(errno));
	}
	in = inject_begin(pid, err, sizeof(err));
	if (!in) {
		tool_err("%s", err);
		unlink(path);
		return 1;
	}
	r = INT32_MIN;
	if (loaded || load_agent(in, pid, agent) == 0) {
		args[0] = inject_push(in, op, strlen(op) + 1);
		args[1] = inject_push(in, path, strlen(path) + 1);
		r = agent_call(in, pid, "ukprobe_agent_ctl", args, 2);
	}
	inject_end(in);
	if (r == 0) {
		char buf[4096];
		ssize_t n;

		while ((n = read(fd, buf, sizeof(buf))) > 0)
			fwrite(buf, 1, (size_t)n, stdout);
	} else if (r != INT32_MIN) {
		tool_err("%d: %s: %s", pid, cmd, strerror(-r));
	}
	close(fd);
	unlink(path);
	return r == 0 ? 0 : 1;
}
