// SPDX-License-Identifier: MIT
/*
 * main.c - the ukprobe command: kprobe events for a program it starts.
 *
 *   ukprobe trace -e DEF [-e DEF]... [options] -- CMD [ARGS]
 *   ukprobe latency [options] [OBJ:]FUNC... -- CMD [ARGS]
 *   ukprobe list-symbols [OBJ] [PATTERN]
 *   ukprobe check -e DEF [-e DEF]... [-x PROGRAM | -- CMD [ARGS]]
 *
 * `trace` checks the definitions, creates the shared counters (shm.h),
 * starts CMD with the agent preloaded (and the audit module in LD_AUDIT),
 * waits for it, then prints the summaries and exits with CMD's status.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/futex.h>
#include <unistd.h>

#include "probe_events.h"
#include "agent_env.h"
#include "consume.h"
#include "format.h"
#include "agg.h"
#include "fetch.h"
#include "json.h"
#include "prog_objs.h"
#include "report.h"
#include "shm.h"
#include "syms.h"
#include "tool.h"
#include "ukp_file.h"
#include "inject.h"

#ifndef UKPROBE_VERSION
#define UKPROBE_VERSION "0.1.0"
#endif
#ifndef UKPROBE_LIBDIR
#define UKPROBE_LIBDIR "/usr/local/lib"
#endif

#define AGENT_NAME	"libukprobe-agent.so"
/* Rings in the pool: threads (and processes, one each for their
 * descriptions) recording at once; those of exited threads are reused. */
#define DEFAULT_RINGS	1024
#define DEFAULT_BUFSIZE	(1024 * 1024)	/* per thread, when records are written */
#define AUDIT_NAME	"libukprobe-audit.so"

/* ------------------------------------------------------------------------ */
/* Help                                                                      */
/* ------------------------------------------------------------------------ */

static const char usage_main[] =
"Usage: ukprobe COMMAND [OPTIONS]\n"
"\n"
"Kprobe events for user space: probes planted in the running code of a\n"
"program that ukprobe starts, with the kernel's kprobe_events grammar.\n"
"\n"
"Commands:\n"
"  trace         start a program with probes in place; print its events\n"
"  latency       histogram of the durations of a function's calls\n"
"  report        format a recording (trace -o FILE.ukp)\n"
"  list          the probes placed in a running process (-p PID)\n"
"  enable, disable, optimization\n"
"                the switches of a running process's probes (-p PID)\n"
"  list-symbols  the function symbols of an object file\n"
"  check         parse and resolve definitions without running anything\n"
"  help [CMD]    this text, or a command's\n"
"\n"
"Run 'ukprobe COMMAND --help' for a command's options; see ukprobe(1).\n";

static const char usage_trace[] =
"Usage: ukprobe trace -e DEF [-e DEF]... [OPTIONS] -- CMD [ARGS]\n"
"       ukprobe trace -e DEF [-e DEF]... [OPTIONS] -p PID\n"
"\n"
"Start CMD with the probes DEF in place before its main() runs (or attach to\n"
"the running process PID), and write one line per hit (ftrace's format) to\n"
"stderr or FILE.  CMD's own output and exit status are unchanged.\n"
"\n"
"  -e, --event DEF        a definition (repeatable):\n"
"                           p[:[GRP/]EVENT] [OBJ:]SYM[+OFFS]|ADDR|OBJ:0xOFFSET [ARGS]\n"
"                           r[MAXACTIVE][:[GRP/]EVENT] [OBJ:]SYM[+0] [ARGS]\n"
"                         ARGS: [NAME=]FETCHARG[:TYPE] ... (see ukprobe(1))\n"
"  -f, --file FILE        definitions from FILE, one per line ('#' comments)\n"
"  -o, --output FILE      write events and summaries to FILE (default stderr);\n"
"                         FILE.ukp: the binary records, for ukprobe report\n"
"      --format FMT       text (default), json (one object per line),\n"
"                         perfetto (Chrome trace JSON for ui.perfetto.dev),\n"
"                         folded (stacks for flamegraph.pl, speedscope) or\n"
"                         ukp (binary records, the fastest: see report)\n"
"  -c, --count            count hits per event; print the counts at the end\n"
"                         (instead of the events, unless --events)\n"
"  -H, --hist NAME        log2 histogram of the argument NAME (or EVENT.NAME)\n"
"                         (repeatable; instead of the events, unless --events)\n"
"      --by KEY[,KEY]     -c counts and --hist histograms per tid, pid, comm,\n"
"                         argument NAME, or stack, as bpftrace's\n"
"                         @[tid] = count() and @[tid] = hist(arg)\n"
"      --stack[=BYTES]    the user stack of each event (frame pointers, else\n"
"                         .eh_frame), printed under it; with -c, hits per\n"
"                         stack; --format folded for flame graphs\n"
"      --events           print the events too with --count or --hist\n"
"  -F, --follow-fork      trace the children too (fork, and what they exec)\n"
"  -p, --pid PID          attach to a running process; Ctrl-C (or SIGTERM)\n"
"                         detaches and leaves it as it was\n"
"      --duration SECS    attached: detach after SECS seconds\n"
"  -b, --buffer-size N    bytes of buffer per thread (default 1M; K, M)\n"
"      --no-wait          lose events (counted, marked) rather than let a\n"
"                         thread wait when its buffer is full\n"
"  -v, --verbose          say where probes were placed, more statistics\n"
"  -h, --help             this text\n"
"\n"
"Examples:\n"
"  ukprobe trace -e 'p:libc.so.6:malloc size=%di:u64' -- gzip -c file\n"
"  ukprobe trace -e 'r:libc.so.6:openat ret=$retval:s32' -- grep -r x /etc\n"
"  ukprobe trace -c -e 'p:libsqlite3.so.0:sqlite3_prepare_v2' -- sqlite3 db .dump\n"
"  ukprobe trace --hist size -e 'p:libc.so.6:malloc size=%di:u64' -- ls\n";

static const char usage_latency[] =
"Usage: ukprobe latency [OPTIONS] [OBJ:]FUNC... -- CMD [ARGS]\n"
"       ukprobe latency [OPTIONS] -p PID [OBJ:]FUNC...\n"
"\n"
"Start CMD and time every call of FUNC (a return probe stamps the entry\n"
"time; durations per thread, exact for recursion); print a log2 histogram\n"
"of the durations at the end, as bcc's funclatency.\n"
"\n"
"  -u, --microseconds     histogram in microseconds\n"
"  -m, --milliseconds     histogram in milliseconds (default: nanoseconds)\n"
"  -o, --output FILE      write the histogram to FILE (default stderr)\n"
"      --format FMT       text (default) or json\n"
"  -F, --follow-fork      time the calls in children too\n"
"  -p, --pid PID          a running process (Ctrl-C detaches)\n"
"      --by KEY[,KEY]     one histogram per tid, pid or comm, as bpftrace's\n"
"                         @[tid] = hist(...)\n"
"      --duration SECS    with -p: detach after SECS seconds\n"
"  -h, --help             this text\n"
"\n"
"Example:\n"
"  ukprobe latency libz.so.1:deflate -- gzip -c file\n";

static const char usage_report[] =
"Usage: ukprobe report [OPTIONS] FILE.ukp\n"
"\n"
"Format a recording made with ukprobe trace -o FILE.ukp (the records as the\n"
"probes wrote them, formatted now, as perf report does for perf record):\n"
"the events merged by time, then the summaries of the run.\n"
"\n"
"      --format FMT       text (default), json, perfetto or folded\n"
"  -o, --output FILE      write to FILE (default stdout)\n"
"  -h, --help             this text\n";

static const char usage_ctl[] =
"Usage: ukprobe list -p PID\n"
"       ukprobe enable -p PID\n"
"       ukprobe disable -p PID\n"
"       ukprobe optimization -p PID [on|off]\n"
"\n"
"list: the probes placed in the running process PID, one per line as\n"
"/sys/kernel/debug/kprobes/list shows the kernel's (address, k/r/j,\n"
"object:symbol+offset, [DISABLED] [GONE] [OPTIMIZED] [FTRACE]).\n"
"enable, disable: arm or disarm every probe of PID, each keeping its own\n"
"disabled state (/sys/kernel/debug/kprobes/enabled).  optimization: the\n"
"jump optimization of PID on or off (debug.kprobes_optimization); without\n"
"on|off, the switches' state.  For any process libukprobes is loaded in:\n"
"a traced one, or a program linked with the library.\n"
"\n"
"  -p, --pid PID          the process\n"
"  -h, --help             this text\n";

static const char usage_list[] =
"Usage: ukprobe list-symbols [OPTIONS] [OBJ] [PATTERN]\n"
"\n"
"List the function symbols of the object OBJ (a path, a library name such\n"
"as libc.so.6, or a program in $PATH), or, without OBJ, of every object\n"
"loaded in ukprobe itself.  PATTERN is a glob (*, ?, [...]) or, without\n"
"wildcards, a substring.  Columns: link-time address, file offset (for the\n"
"OBJ:0xOFFSET form), size, type (T global, t local, W weak, i ifunc,\n"
"D data with --data), name.\n"
"\n"
"  -d, --data             data symbols too\n"
"  -h, --help             this text\n";

static const char usage_check[] =
"Usage: ukprobe check -e DEF [-e DEF]... [-x PROGRAM | -- CMD [ARGS]]\n"
"\n"
"Parse each definition and resolve its probe point in the files, without\n"
"running anything: print the parsed form, or the error with a caret under\n"
"the offending part.  Symbols without an object are looked up in PROGRAM\n"
"(or CMD) and the libraries it needs.  Exit status 0 if all are good.\n"
"\n"
"  -e, --event DEF        a definition (repeatable)\n"
"  -f, --file FILE        definitions from FILE, one per line\n"
"  -x, --exe PROGRAM      the program the definitions are for\n"
"  -h, --help             this text\n";

static void print_usage(const char *cmd, FILE *out)
{
	if (!cmd)
		fputs(usage_main, out);
	else if (!strcmp(cmd, "trace"))
		fputs(usage_trace, out);
	else if (!strcmp(cmd, "latency"))
		fputs(usage_latency, out);
	else if (!strcmp(cmd, "list-symbols"))
		fputs(usage_list, out);
	else if (!strcmp(cmd, "check"))
		fputs(usage_check, out);
	else if (!strcmp(cmd, "report"))
		fputs(usage_report, out);
	else if (!strcmp(cmd, "list") || !strcmp(cmd, "enable") || !strcmp(cmd, "disable") ||
		 !strcmp(cmd, "optimization"))
		fputs(usage_ctl, out);
	else
		fputs(usage_main, out);
}

void tool_err(const char *fmt, ...)
{
	va_list ap;

	fputs("ukprobe: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ------------------------------------------------------------------------ */
/* Definitions                                                               */
/* ------------------------------------------------------------------------ */

/*
 * "p:libc.so.6:malloc ARGS" and "r:libc.so.6:openat": the kernel reads
 * "p:X" as an event name X, but X here cannot be one (it has a ':', which
 * neither a group nor an event name may have), so it is the probe point, as
 * in "p libc.so.6:malloc".  Anything else after "p:" stays the event name
 * and is checked as one ("p:bad-name SYM" is BAD_EVENT_NAME, as in the
 * kernel).  Same length: the carets of error messages stay right.
 */
static void normalize_def(char *def)
{
	char *p = def, *tok, *end;

	if (*p != 'p' && *p != 'r')
		return;
	p++;
	while (*p >= '0' && *p <= '9')
		p++;
	if (*p != ':')
		return;
	tok = p + 1;
	end = tok + strcspn(tok, " \t");
	if (memchr(tok, ':', (size_t)(end - tok)))
		*p = ' ';
}

int defs_add(struct defs *d, const char *def)
{
	while (*def == ' ' || *def == '\t')
		def++;
	if (!*def)
		return 0;
	if (strchr(def, '\n')) {
		tool_err("a definition cannot contain a newline");
		return -1;
	}
	if (d->n == UKS_MAX_EVENTS) {
		tool_err("too many definitions (at most %d)", UKS_MAX_EVENTS);
		return -1;
	}
	if (d->n == d->cap) {
		int cap = d->cap ? 2 * d->cap : 64;
		char **nv = realloc(d->v, (size_t)cap * sizeof(*nv));
		char **no = nv ? realloc(d->orig, (size_t)cap * sizeof(*no)) : NULL;

		if (nv)
			d->v = nv;
		if (!no)
			return -1;
		d->orig = no;
		d->cap = cap;
	}
	d->v[d->n] = strdup(def);
	d->orig[d->n] = strdup(def);
	if (!d->v[d->n] || !d->orig[d->n])
		return -1;
	normalize_def(d->v[d->n++]);
	return 0;
}

int defs_add_file(struct defs *d, const char *path)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "re") : stdin;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int err = 0;

	if (!f) {
		tool_err("%s: %s", path, strerror(errno));
		return -1;
	}
	while (!err && (n = getline(&line, &cap, f)) >= 0) {
		if (n && line[n - 1] == '\n')
			line[--n] = '\0';
		for (char *p = line; *p == ' ' || *p == '\t'; p++)
			if (p[1] == '#')
				*p = '\0';
		if (line[0] == '#')
			continue;
		err = defs_add(d, line);
	}
	free(line);
	if (f != stdin)
		fclose(f);
	return err;
}

/*
 * What the kernel's message does not say for the mistakes people make:
 * "p libc.so.6 malloc" (spaces for colons: the kernel reads malloc as a
 * BTF argument) and "p:malloc" (an event name, and no probe point).
 */
static void print_hint(const char *def, const struct pe_error *err)
{
	char w1[256] = "", w2[256] = "";
	int n = 0;

	if (sscanf(def, "%*s %255s %255s%n", w1, w2, &n) < 1)
		w1[0] = '\0';
	if (err->code == PE_ERR_NOSUP_BTFARG && w2[0] && !strchr(w1, ':') &&
	    (isalpha((unsigned char)w2[0]) || w2[0] == '_') && !strpbrk(w2, "=%@$+-()"))
		fprintf(stderr, "  a probe point is OBJ:SYM, with a colon: did you mean "
			"'%c %s:%s'?\n", def[0], w1, w2);
	else if (err->code == PE_ERR_BAD_PROBE_ADDR && !w1[0] && strchr(def, ':'))
		fprintf(stderr, "  '%s' names an event (p:EVENT) and gives no probe point: "
			"'%c %s' for SYM in any object, '%c:OBJ:%s' for one\n", def,
			def[0], strchr(def, ':') + 1, def[0], strchr(def, ':') + 1);
}

/* Parse every definition (syntax only); print the error with a caret. */
static int parse_all(struct defs *d, struct pe_event **evs)
{
	int bad = 0;

	*evs = calloc((size_t)d->n, sizeof(**evs));
	if (!*evs)
		return -1;
	pe_set_resolvers(NULL, NULL);
	for (int i = 0; i < d->n; i++) {
		struct pe_error err;
		int e = pe_parse(d->v[i], &(*evs)[i], &err);

		if (e) {
			pe_print_error(stderr, d->orig[i], &err);
			print_hint(d->orig[i], &err);
			bad++;
			continue;
		}
		for (int j = 0; j < i; j++) {
			if (!strcmp((*evs)[j].group, (*evs)[i].group) &&
			    !strcmp((*evs)[j].event, (*evs)[i].event)) {
				struct pe_error e2 = { .code = PE_ERR_EVENT_EXIST, .pos = 0,
						       .reason = pe_error_reason(PE_ERR_EVENT_EXIST) };

				pe_print_error(stderr, d->orig[i], &e2);
				fprintf(stderr, "  (%s/%s is also defined by '%s'; name one with "
					"p:EVENT ...)\n", (*evs)[i].group, (*evs)[i].event, d->orig[j]);
				bad++;
				break;
			}
		}
	}
	return bad ? -1 : 0;
}

/* ------------------------------------------------------------------------ */
/* Starting the program                                                      */
/* ------------------------------------------------------------------------ */

char *tool_find_lib(const char *name)
{
	char exe[PATH_MAX], p[PATH_MAX + 64];
	const char *dir = getenv("UKPROBE_AGENT_DIR");
	ssize_t n;

	if (dir) {
		snprintf(p, sizeof(p), "%s/%s", dir, name);
		if (access(p, R_OK) == 0)
			return realpath(p, NULL);
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		char *slash;

		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			snprintf(p, sizeof(p), "%s/%s", exe, name);
			if (access(p, R_OK) == 0)
				return realpath(p, NULL);
			snprintf(p, sizeof(p), "%s/../lib/ukprobe/%s", exe, name);
			if (access(p, R_OK) == 0)
				return realpath(p, NULL);
		}
	}
	snprintf(p, sizeof(p), "%s/ukprobe/%s", UKPROBE_LIBDIR, name);
	if (access(p, R_OK) == 0)
		return realpath(p, NULL);
	return NULL;
}

/*
 * Static TLS the agent and libukprobes need.  With LD_AUDIT the run-time
 * linker sets the static TLS block up before it loads the program's
 * objects, so their initial-exec TLS must fit in the "optional" surplus
 * (glibc.rtld.optional_static_tls, 512 bytes by default): ask for enough.
 */
static unsigned long tls_need(const char *agent)
{
	char lib[PATH_MAX];
	const char *files[2] = { agent, lib };
	unsigned long need = 512 + 1024;
	char *slash;

	snprintf(lib, sizeof(lib), "%s", agent);
	slash = strrchr(lib, '/');
	if (slash)
		snprintf(slash + 1, sizeof(lib) - (size_t)(slash + 1 - lib), "libukprobes.so.0");
	for (int i = 0; i < 2; i++) {
		unsigned long sz = elf_tls_size(files[i]);

		need += (sz + 63) & ~63ul;
	}
	/* libukprobes installed elsewhere: room for it anyway. */
	return need < 16384 ? 16384 : need;
}

/*
 * LD_PRELOAD: libukprobes first, then the agent.  Loaded only as the
 * agent's dependency, libukprobes would come after libc in the global
 * scope, and its sigaction()/sigprocmask()/pthread_sigmask() would not
 * interpose the program's (ukprobes(7), "Signals"): a program blocking all
 * signals would block SIGTRAP, and the next breakpoint would kill it.
 */
static char *preload_list(const char *agent)
{
	char dir[PATH_MAX], p[PATH_MAX + 64], *slash, *r = NULL;

	snprintf(dir, sizeof(dir), "%s", agent);
	slash = strrchr(dir, '/');
	if (!slash)
		return strdup(agent);
	*slash = '\0';
	snprintf(p, sizeof(p), "%s/libukprobes.so.0", dir);
	if (access(p, R_OK)) {
		snprintf(p, sizeof(p), "%s/../libukprobes.so.0", dir);
		if (access(p, R_OK))
			return strdup(agent);
	}
	{
		char *real = realpath(p, NULL);

		if (real && asprintf(&r, "%s:%s", real, agent) < 0)
			r = NULL;
		free(real);
	}
	return r ? r : strdup(agent);
}

/* A descriptor number out of the program's way, inherited by it. */
static int high_fd(int fd)
{
	struct rlimit rl;
	int want = 700, nfd;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    (rlim_t)want + 16 > rl.rlim_cur)
		want = rl.rlim_cur > 64 ? (int)rl.rlim_cur - 32 : 10;
	nfd = fcntl(fd, F_DUPFD, want);
	if (nfd < 0)
		nfd = fcntl(fd, F_DUPFD, 10);
	if (nfd < 0)
		return fd;
	close(fd);
	return nfd;
}

static volatile sig_atomic_t child_pid;
static struct uks *volatile run_shm;
volatile sig_atomic_t stop_requested;	/* attached: Ctrl-C, SIGTERM */

static void wake_consumer(void)
{
	struct uks *shm = run_shm;

	if (shm) {
		atomic_fetch_add(&shm->consumer_wake, 1);
		syscall(SYS_futex, (uint32_t *)&shm->consumer_wake, FUTEX_WAKE, 1, NULL, NULL, 0);
	}
}

/*
 * A signal for ukprobe.  One the terminal sent (Ctrl-C, Ctrl-\\: si_code
 * SI_KERNEL) reached the program's process group too: the program decides,
 * and ukprobe writes everything when it ends.  One sent to ukprobe alone
 * (kill: SI_USER, SI_QUEUE) is passed on to the program, as if ukprobe
 * were not there.
 */
static void on_signal(int sig, siginfo_t *si, void *uc)
{
	int e = errno;

	(void)uc;
	if (sig == SIGCHLD) {
		wake_consumer();
	} else if (child_pid > 0) {
		if (si->si_code != SI_KERNEL)
			kill(child_pid, sig);
	} else {
		/* Attached: detach, leaving the process as it was. */
		stop_requested = 1;
		wake_consumer();
	}
	errno = e;
}


/*
 * Each probe point checked in the files of the objects the program loads at
 * start, before it runs: an error stops ukprobe as the kernel refuses a bad
 * definition.  Points in objects loaded later (dlopen), and absolute
 * addresses, are checked by the agent when it places them.  A program that
 * is no ELF file (a script) leaves every check to the agent.
 */
static int check_points(const struct run_opts *o, const struct pe_event *evs)
{
	struct prog_objs *P = calloc(1, sizeof(*P));
	char err[PATH_MAX + 128];
	int bad = 0;

	if (!P)
		return -1;
	if (prog_objs_load(P, o->argv[0], err, sizeof(err))) {
		free(P);
		return 0;
	}
	for (int i = 0; i < o->defs.n; i++) {
		struct point_info pi;
		struct pe_error e;
		struct pobj *obj;

		if (prog_objs_check(P, &evs[i], false, &obj, &pi, &e) == POINT_BAD) {
			point_print_error(stderr, o->defs.orig[i], &e, pi.why);
			bad++;
		}
	}
	prog_objs_free(P);
	free(P);
	return bad ? -1 : 0;
}

/* What the agent found wrong with definition i: with the caret when it
 * has the kernel's error name (point_check.h), else as a line. */
static void print_event_error(const struct run_opts *o, int i, const struct uks_event *se)
{
	if (se->err_code > 0) {
		struct pe_error e = { .code = se->err_code, .pos = se->err_pos,
				      .reason = pe_error_reason(se->err_code) };

		point_print_error(stderr, o->defs.orig[i], &e, se->error);
	} else {
		fprintf(stderr, "ukprobe: %s: %s\n", o->defs.orig[i], se->error);
	}
}

/* Warnings: never silent about what was not traced. */
static int print_warnings(struct run_opts *o, struct uks *shm, struct pe_event *evs, int status)
{
	unsigned long long drops = atomic_load(&shm->drops);
	unsigned long long nobuf = atomic_load(&shm->no_buffer);
	int never = 0;

	if (!atomic_load(&shm->processes)) {
		/* Not started (exec failed: the child said why), or started
		 * without the agent. */
		if (!o->pid && !(WIFEXITED(status) && (WEXITSTATUS(status) == 127 ||
						       WEXITSTATUS(status) == 126)))
			fprintf(stderr, "ukprobe: the agent did not start in %s (statically "
				"linked, or set-user-ID?): nothing was traced\n", o->argv[0]);
		return 0;
	}

	if (drops + nobuf) {
		fprintf(stderr, "ukprobe: %llu events lost", drops + nobuf);
		if (drops && nobuf)
			fprintf(stderr, " (%llu to full buffers, %llu for want of a free buffer)",
				drops, nobuf);
		else if (drops)
			fprintf(stderr, " (buffers full while the output could not keep up%s)",
				atomic_load(&shm->no_wait) ? ", --no-wait" : "");
		else
			fprintf(stderr, " (no free per-thread buffer)");
		fprintf(stderr, "; the output marks where ([LOST N EVENTS])\n");
		for (int i = 0; i < o->defs.n; i++) {
			unsigned long long d = atomic_load(&uks_ev(shm, i)->dropped);

			if (d && o->verbose)
				fprintf(stderr, "ukprobe:   %s: %llu dropped\n", evs[i].event, d);
		}
	}
	for (int i = 0; i < o->defs.n; i++) {
		struct uks_event *se = uks_ev(shm, i);
		unsigned long long m = atomic_load(&se->missed);

		if (m)
			fprintf(stderr, "ukprobe: %s: %llu hits missed (%s)\n", evs[i].event, m,
				evs[i].kind == PE_RETURN ?
				"hit inside a handler, or no free instance: raise MAXACTIVE with r<N>" :
				"hit inside a handler, e.g. of a function the handlers call");
		if (atomic_load(&se->error_set))
			print_event_error(o, i, se);
		if (!atomic_load(&se->placed) && !atomic_load(&se->failed)) {
			never++;
			if (evs[i].object[0])
				fprintf(stderr, "ukprobe: %s: never placed: %s was never loaded\n",
					o->defs.orig[i], evs[i].object);
			else
				fprintf(stderr, "ukprobe: %s: never placed: no loaded object "
					"defines %s\n", o->defs.orig[i],
					evs[i].symbol[0] ? evs[i].symbol : "the address");
		} else if (o->verbose) {
			fprintf(stderr, "ukprobe: %s: placed in %u process image(s), %llu hits\n",
				evs[i].event, atomic_load(&se->placed),
				(unsigned long long)atomic_load(&se->hits));
			if (evs[i].multi)
				fprintf(stderr, "ukprobe: %s: %u probes placed (%u functions refused), "
					"in %.1f ms\n", o->defs.orig[i], atomic_load(&se->probes),
					atomic_load(&se->refused),
					(double)atomic_load(&se->place_ns) / 1e6);
		}
	}
	if (atomic_load(&shm->agent_error_set))
		fprintf(stderr, "ukprobe: agent: %s\n", shm->agent_error);
	if (atomic_load(&shm->write_errors))
		fprintf(stderr, "ukprobe: %llu writes of the output failed\n",
			(unsigned long long)atomic_load(&shm->write_errors));
	return never;
}

/* The summaries from the shared counters: those no keyed map replaces. */
static struct summary_opts summary_of(struct run_opts *o, const struct fmt_ctx *fc)
{
	return (struct summary_opts){
		.count = o->count && !fc->agg, .hists = o->hists,
		.nhists = fc->nhagg ? 0 : o->nhists, .latency = o->latency && !fc->lagg,
		.unit_div = o->unit_div, .unit = o->unit,
	};
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

static int run(struct run_opts *o)
{
	bool per_probe_counts = false;
	struct pe_event *evs = NULL;
	char *agent, *audit;
	int fmt, out_fd, shm_fd, status = 0;
	unsigned long tls;
	char *preload;
	struct uks *shm;
	struct stat sst;
	size_t shm_hdr, rings_sz, total;
	struct objmaps *objmaps;
	struct fmt_ctx fc;
	struct consumer cons;
	FILE *out;
	pid_t pid;
	char conf[8192], shm_path[PATH_MAX];
	struct sigaction sa;

	/* -o FILE.ukp: the records as they are, unless a format is asked. */
	fmt = fmt_parse(o->format ? o->format :
			o->output && ends_with(o->output, ".ukp") ? "ukp" : "text");
	if (fmt < 0) {
		tool_err("unknown format '%s' (text, json, perfetto, ukp)", o->format);
		return 2;
	}
	if (fmt == FMT_UKP && !o->output) {
		tool_err("--format ukp writes a file: give it with -o FILE.ukp");
		return 2;
	}
	if (o->latency && fmt == FMT_PERFETTO) {
		tool_err("latency: formats text and json only");
		return 2;
	}
	if (!o->defs.n) {
		tool_err("no definition: give one with -e (see ukprobe trace --help)");
		return 2;
	}
	if (o->pid && o->argv && o->argv[0]) {
		tool_err("-p PID or -- CMD, not both");
		return 2;
	}
	if (!o->pid && (!o->argv || !o->argv[0])) {
		tool_err("no command to run: ... -- CMD [ARGS] (or -p PID: a running process)");
		return 2;
	}
	if (o->pid) {
		char why[512];

		/* Nothing is done to a process ukprobe may not trace. */
		sym_demangle_may_load(true);
		if (inject_refusal(o->pid, why, sizeof(why))) {
			tool_err("%s", why);
			return 1;
		}
		if (parse_all(&o->defs, &evs))
			return 2;
	} else if (parse_all(&o->defs, &evs) || check_points(o, evs)) {
		tool_err("%s was not run", o->argv[0]);
		return 2;
	}
	/* A glob's probes are counted each (named after their functions):
	 * from the records, by the command. */
	for (int i = 0; i < o->defs.n; i++)
		if (evs[i].multi && o->count)
			per_probe_counts = true;
	sym_demangle_may_load(true);
	for (int h = 0; h < o->nhists; h++) {
		bool found = false, ok = true;

		for (int i = 0; i < o->defs.n; i++)
			for (int a = 0; a < evs[i].nargs; a++)
				if (pe_arg_matches(&evs[i], &evs[i].args[a], o->hists[h])) {
					found = true;
					ok &= pe_arg_numeric(&evs[i].args[a]);
				}
		if (!found) {
			tool_err("--hist %s: no definition has an argument of that name", o->hists[h]);
			return 2;
		}
		if (!ok) {
			tool_err("--hist %s: not a number (strings and arrays cannot be binned)",
				 o->hists[h]);
			return 2;
		}
	}
	agent = tool_find_lib(AGENT_NAME);
	audit = tool_find_lib(AUDIT_NAME);
	if (!agent) {
		tool_err("cannot find %s (next to ukprobe, or in $UKPROBE_AGENT_DIR)", AGENT_NAME);
		return 2;
	}
	preload = preload_list(agent);
	tls = tls_need(agent);
	if (!audit && o->verbose)
		tool_err("cannot find %s: probes on objects loaded by dlopen() will be placed "
			 "at the next load only", AUDIT_NAME);

	/* The output: a file, or our stderr; FILE.ukp gets the records as
	 * they are, for `ukprobe report`. */
	if (o->output) {
		out_fd = open(o->output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (out_fd < 0) {
			tool_err("%s: %s", o->output, strerror(errno));
			return 2;
		}
		out = fdopen(out_fd, "w");
	} else {
		/* Our stderr, buffered: the lines go out whole, a round at a
		 * time. */
		out_fd = dup(2);
		out = out_fd >= 0 ? fdopen(out_fd, "w") : NULL;
		if (out)
			fcntl(out_fd, F_SETFD, FD_CLOEXEC);
	}
	if (!out) {
		tool_err("%s: %s", o->output, strerror(errno));
		return 2;
	}
	if (fmt == FMT_UKP) {
		char *hdr = NULL;
		size_t hlen = 0;
		FILE *h = open_memstream(&hdr, &hlen);

		if (!h)
			return 2;
		fprintf(h, "tool=ukprobe %s\ncount=%d\nevents=%d\nlatency=%d\nunit=%s\nunit_div=%llu\n",
			UKPROBE_VERSION, o->count, o->events, o->latency, o->unit ? o->unit : "nsecs",
			o->unit_div ? o->unit_div : 1);
		if (o->by)
			fprintf(h, "by=%s\n", o->by);
		if (o->stack)
			fprintf(h, "stack=%u\n", o->stack);
		for (int i = 0; i < o->defs.n; i++)
			fprintf(h, "def=%s\n", o->defs.v[i]);
		for (int i = 0; i < o->nhists; i++)
			fprintf(h, "hist=%s\n", o->hists[i]);
		fclose(h);
		if (ukp_write_header(out_fd, hdr)) {
			tool_err("%s: %s", o->output, strerror(errno));
			return 2;
		}
		free(hdr);
	}

	/* The counters and the rings the agents share with us. */
	if (o->pid) {
		/* A running process opens it by its name (it may be another
		 * user's when we are root): a file of its own, removed once
		 * the agent has it. */
		const char *dir = access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm";

		snprintf(shm_path, sizeof(shm_path), "%s/ukprobe-%d-XXXXXX", dir, (int)getpid());
		shm_fd = mkostemp(shm_path, O_CLOEXEC);
		if (shm_fd >= 0 && getuid() == 0) {
			char sp[64];
			struct stat pst;

			snprintf(sp, sizeof(sp), "/proc/%d", o->pid);
			if (stat(sp, &pst) == 0 && fchown(shm_fd, pst.st_uid, pst.st_gid))
				tool_err("%s: %s", shm_path, strerror(errno));
		}
	} else {
		shm_fd = memfd_create("ukprobe", MFD_CLOEXEC);
	}
	shm_hdr = ((sizeof(struct uks) + (size_t)o->defs.n * sizeof(struct uks_event) + 4095) &
		   ~(size_t)4095);
	rings_sz = ((o->nrings * sizeof(struct uks_ring)) + 4095) & ~(size_t)4095;
	total = shm_hdr + rings_sz + o->nrings * o->bufsize;
	if (shm_fd < 0 || ftruncate(shm_fd, (off_t)total)) {
		tool_err("memfd: %s", strerror(errno));
		return 2;
	}
	if (!o->pid) {
		fcntl(shm_fd, F_SETFD, 0);
		shm_fd = high_fd(shm_fd);
	}
	shm = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, shm_fd, 0);
	if (shm == MAP_FAILED) {
		tool_err("mmap: %s", strerror(errno));
		return 2;
	}
	shm->magic = UKS_MAGIC;
	shm->version = UKS_VERSION;
	shm->nevents = (uint32_t)o->defs.n;
	shm->ev_off = sizeof(struct uks);
	shm->nhists = (uint32_t)o->nhists;
	shm->nrings = (uint32_t)o->nrings;
	shm->ring_size = (uint32_t)o->bufsize;
	shm->rings_off = shm_hdr;
	shm->data_off = shm_hdr + rings_sz;
	shm->total_size = total;
	shm->no_wait = o->no_wait;
	fstat(shm_fd, &sst);

	{
		size_t len = 0;

		len += (size_t)snprintf(conf + len, sizeof(conf) - len,
			"shm=%d\nfollow=%d\nevents=%d\nlatency=%d\n"
			"initial=%d\nagent=%s\npreload=%s\ntoolpid=%d\ntoolshm=%d\ntls=%lu\n"
			"shmid=%llu:%llu\nstack=%u\n",
			shm_fd, o->follow, o->events || o->by || per_probe_counts || fmt == FMT_FOLDED,
			o->latency, !o->pid,
			agent, preload,
			(int)getpid(), shm_fd, tls, (unsigned long long)sst.st_dev,
			(unsigned long long)sst.st_ino, o->stack);
		if (o->pid)
			len += (size_t)snprintf(conf + len, sizeof(conf) - len, "shmpath=%s\n",
						shm_path);
		if (audit)
			len += (size_t)snprintf(conf + len, sizeof(conf) - len, "audit=%s\n", audit);
		if (len >= sizeof(conf)) {
			tool_err("paths too long");
			return 2;
		}
	}

	objmaps = objmaps_new();
	fmt_init(&fc, (enum out_format)fmt, out, evs, o->defs.n, objmaps);
	if ((o->by || per_probe_counts) && fmt != FMT_UKP) {
		struct fmt_maps m = {
			.by = o->by, .count = o->count, .hists = o->hists, .nhists = o->nhists,
			.latency = o->latency, .unit_div = o->unit_div, .unit = o->unit,
		};
		char why[256];

		if (fmt_maps_init(&fc, &m, why, sizeof(why))) {
			tool_err("%s", why);
			return 2;
		}
		fc.quiet = !o->events;
	}
	if (fmt == FMT_FOLDED) {
		struct agg_spec s = { .kind = AGG_COUNT };
		char why[64];

		fc.folded = agg_new(&s, evs, o->defs.n, why, sizeof(why));
		if (!fc.folded)
			return 2;
	}
	fmt_begin(&fc);
	fflush(out);
	consumer_init(&cons, shm, &fc, fmt == FMT_UKP ? out_fd : -1);
	run_shm = shm;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGCHLD, &sa, NULL);

	if (o->pid) {
		int r = attach_run(o, conf, shm_path, shm, &cons);

		unlink(shm_path);
		fmt_end(&fc);
		if (r == 0) {
			struct summary_opts so = summary_of(o, &fc);

			fmt_maps_print(&fc, fmt == FMT_PERFETTO ? stderr : out, fmt == FMT_JSON);
			if (fmt == FMT_UKP)
				ukp_write_summary(out_fd, shm);
			else
				report_summaries(fmt == FMT_PERFETTO ? stderr : out, fmt == FMT_JSON,
						 shm, evs, o->defs.n, &so);
		}
		fclose(out);
		if (r == 0)
			print_warnings(o, shm, evs, 0);
		return r;
	}

	if (o->follow)
		prctl(PR_SET_CHILD_SUBREAPER, 1);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		tool_err("fork: %s", strerror(errno));
		return 2;
	}
	if (pid == 0) {
		const char *pre = getenv("LD_PRELOAD"), *aud = getenv("LD_AUDIT");
		const char *tun = getenv("GLIBC_TUNABLES");
		char *defs = NULL, *hists = NULL, *v;
		size_t dl = 0, hl = 0;

		/* The program gets the signal dispositions ukprobe had. */
		signal(SIGINT, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		/* A program the agent cannot start in (static, set-user-ID)
		 * runs with the environment as it is; the end says that
		 * nothing was traced. */
		if (!agent_env_takes_agent_file(o->argv[0]))
			goto exec;

		for (int i = 0; i < o->defs.n; i++)
			dl += strlen(o->defs.v[i]) + 1;
		defs = calloc(1, dl + 1);
		for (int i = 0; i < o->defs.n; i++) {
			strcat(defs, o->defs.v[i]);
			strcat(defs, "\n");
		}
		for (int h = 0; h < o->nhists; h++)
			hl += strlen(o->hists[h]) + 1;
		hists = calloc(1, hl + 1);
		for (int h = 0; h < o->nhists; h++) {
			strcat(hists, o->hists[h]);
			strcat(hists, "\n");
		}
		if (pre)
			setenv("UKPROBE_AGENT_ORIG_LD_PRELOAD", pre, 1);
		if (aud)
			setenv("UKPROBE_AGENT_ORIG_LD_AUDIT", aud, 1);
		if (tun)
			setenv("UKPROBE_AGENT_ORIG_GLIBC_TUNABLES", tun, 1);
		if (audit && asprintf(&v, "%s%sglibc.rtld.optional_static_tls=%lu",
				      tun ? tun : "", tun && *tun ? ":" : "", tls) > 0)
			setenv("GLIBC_TUNABLES", v, 1);
		if (asprintf(&v, "%s%s%s", preload, pre && *pre ? ":" : "", pre ? pre : "") > 0)
			setenv("LD_PRELOAD", v, 1);
		if (audit && asprintf(&v, "%s%s%s", audit, aud && *aud ? ":" : "",
				      aud ? aud : "") > 0)
			setenv("LD_AUDIT", v, 1);
		setenv("UKPROBE_AGENT_CONF", conf, 1);
		setenv("UKPROBE_AGENT_DEFS", defs, 1);
		setenv("UKPROBE_AGENT_HISTS", hists, 1);
exec:
		execvp(o->argv[0], o->argv);
		fprintf(stderr, "ukprobe: %s: %s\n", o->argv[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	child_pid = pid;
	close(shm_fd);

	/* Read the rings until the program (with -F, every traced process)
	 * has ended, then what is left in them. */
	{
		bool child_done = false;

		for (;;) {
			uint32_t seen = atomic_load(&shm->consumer_wake);
			pid_t w;
			int st;

			consumer_drain(&cons);
			if (!child_done) {
				w = waitpid(pid, &status, WNOHANG);
				if (w == pid)
					child_done = true;
			}
			if (child_done && o->follow) {
				/* Traced descendants that outlived it. */
				while ((w = waitpid(-1, &st, WNOHANG)) > 0)
					;
				if (w < 0 && errno == ECHILD)
					break;
			} else if (child_done) {
				break;
			}
			if (atomic_load(&shm->consumer_wake) == seen) {
				struct timespec ts = { 0, 20 * 1000000L };

				syscall(SYS_futex, (uint32_t *)&shm->consumer_wake, FUTEX_WAIT, seen,
					&ts, NULL, 0);
			}
		}
		consumer_final(&cons);
	}
	consumer_close(&cons);
	child_pid = 0;

	fmt_end(&fc);
	if (atomic_load(&shm->fatal)) {
		for (int i = 0; i < o->defs.n; i++)
			if (atomic_load(&uks_ev(shm, i)->error_set))
				print_event_error(o, i, uks_ev(shm, i));
		tool_err("%s was not run: a definition could not be placed", o->argv[0]);
		return 2;
	}
	if (fmt == FMT_UKP) {
		ukp_write_summary(out_fd, shm);
		if (o->verbose)
			fprintf(stderr, "ukprobe: %s: the recording; see it with ukprobe report %s\n",
				o->output, o->output);
	} else {
		struct summary_opts so = summary_of(o, &fc);

		fmt_maps_print(&fc, fmt == FMT_PERFETTO ? stderr : out, fmt == FMT_JSON);
		report_summaries(fmt == FMT_PERFETTO ? stderr : out, fmt == FMT_JSON, shm, evs,
				 o->defs.n, &so);
	}
	fclose(out);
	print_warnings(o, shm, evs, status);
	consumer_fini(&cons);
	fmt_fini(&fc);

	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		struct rlimit no_core = { 0, 0 };
		sigset_t set;

		/* Die the same way, without a core of our own. */
		setrlimit(RLIMIT_CORE, &no_core);
		signal(sig, SIG_DFL);
		sigemptyset(&set);
		sigaddset(&set, sig);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		fflush(NULL);
		raise(sig);
		return 128 + sig;
	}
	return 2;
}

/* ------------------------------------------------------------------------ */
/* Commands                                                                  */
/* ------------------------------------------------------------------------ */

static size_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	if (*end == 'k' || *end == 'K')
		v <<= 10;
	else if (*end == 'm' || *end == 'M')
		v <<= 20;
	else if (*end == 'g' || *end == 'G')
		v <<= 30;
	else if (*end)
		return 0;
	return (size_t)v;
}

static int parse_pid(const char *s, int *pid)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*end || v <= 0 || v > INT32_MAX) {
		tool_err("-p: a process id, not '%s'", s);
		return -1;
	}
	*pid = (int)v;
	return 0;
}

static int parse_duration(const char *s, double *d)
{
	char *end;

	*d = strtod(s, &end);
	if (*end || *d <= 0) {
		tool_err("--duration: seconds, not '%s'", s);
		return -1;
	}
	return 0;
}

/* Options end at "--" or at the first operand (getopt's "+"). */
static int cmd_trace(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "event", required_argument, NULL, 'e' },
		{ "file", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'T' },
		{ "count", no_argument, NULL, 'c' },
		{ "hist", required_argument, NULL, 'H' },
		{ "events", no_argument, NULL, 'E' },
		{ "by", required_argument, NULL, 'B' },
		{ "stack", optional_argument, NULL, 'S' },
		{ "follow-fork", no_argument, NULL, 'F' },
		{ "buffer-size", required_argument, NULL, 'b' },
		{ "no-wait", no_argument, NULL, 'W' },
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, 'D' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct run_opts o = { .bufsize = DEFAULT_BUFSIZE, .nrings = DEFAULT_RINGS };
	bool force_events = false;
	int c;

	while ((c = getopt_long(argc, argv, "+e:f:o:cH:Fb:p:vh", lo, NULL)) != -1) {
		switch (c) {
		case 'e':
			if (defs_add(&o.defs, optarg))
				return 2;
			break;
		case 'f':
			if (defs_add_file(&o.defs, optarg))
				return 2;
			break;
		case 'o': o.output = optarg; break;
		case 'T': o.format = optarg; break;
		case 'c': o.count = true; break;
		case 'H':
			if (o.nhists == UKS_MAX_HISTS) {
				tool_err("at most %d --hist", UKS_MAX_HISTS);
				return 2;
			}
			o.hists[o.nhists++] = optarg;
			break;
		case 'E': force_events = true; break;
		case 'B': o.by = optarg; break;
		case 'S':
			o.stack = optarg ? (unsigned int)parse_size(optarg) : 8192;
			if (o.stack < 256 || o.stack > 65536) {
				tool_err("--stack=BYTES: 256 to 64K of stack per event");
				return 2;
			}
			break;
		case 'F': o.follow = true; break;
		case 'b':
			o.bufsize = parse_size(optarg);
			if (o.bufsize < 4096 || o.bufsize > (1ull << 30)) {
				tool_err("--buffer-size: 4K to 1G");
				return 2;
			}
			while (o.bufsize & (o.bufsize - 1))
				o.bufsize += o.bufsize & -o.bufsize;
			break;
		case 'W': o.no_wait = true; break;
		case 'p':
			if (parse_pid(optarg, &o.pid))
				return 2;
			break;
		case 'D':
			if (parse_duration(optarg, &o.duration))
				return 2;
			break;
		case 'v': o.verbose = true; break;
		case 'h':
			print_usage("trace", stdout);
			return 0;
		default:
			/* getopt said what (one line); not the whole help. */
			fprintf(stderr, "Try 'ukprobe trace --help'\n");
			return 2;
		}
	}
	o.events = force_events || (!o.count && !o.nhists);
	if (o.format && !strcmp(o.format, "folded") && !o.stack)
		o.stack = 8192;
	if (o.count && o.stack) {
		/* -c --stack: hits per unique stack. */
		static char by[256];

		snprintf(by, sizeof(by), "%s%sstack", o.by ? o.by : "", o.by ? "," : "");
		o.by = by;
	}
	if (o.by && !o.count && !o.nhists) {
		tool_err("--by keys counts or histograms: with -c or --hist NAME "
			 "(ukprobe trace -c --by KEY)");
		return 2;
	}
	o.argv = argv + optind;
	return run(&o);
}

static int cmd_latency(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "microseconds", no_argument, NULL, 'u' },
		{ "milliseconds", no_argument, NULL, 'm' },
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'T' },
		{ "follow-fork", no_argument, NULL, 'F' },
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, 'D' },
		{ "by", required_argument, NULL, 'B' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct run_opts o = { .bufsize = 4096, .nrings = DEFAULT_RINGS, .latency = true,
			      .unit_div = 1, .unit = "nsecs" };
	int c, i;

	while ((c = getopt_long(argc, argv, "+umo:Fp:vh", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_pid(optarg, &o.pid))
				return 2;
			break;
		case 'D':
			if (parse_duration(optarg, &o.duration))
				return 2;
			break;
		case 'u': o.unit_div = 1000; o.unit = "usecs"; break;
		case 'm': o.unit_div = 1000000; o.unit = "msecs"; break;
		case 'o': o.output = optarg; break;
		case 'T': o.format = optarg; break;
		case 'F': o.follow = true; break;
		case 'B':
			/* Keyed from the records: room for them. */
			o.by = optarg;
			o.bufsize = DEFAULT_BUFSIZE;
			break;
		case 'v': o.verbose = true; break;
		case 'h':
			print_usage("latency", stdout);
			return 0;
		default:
			fprintf(stderr, "Try 'ukprobe latency --help'\n");
			return 2;
		}
	}
	/* FUNC... up to "--" (getopt left it in place after the operands). */
	for (i = optind; i < argc && strcmp(argv[i], "--"); i++) {
		char def[1024];

		if (argv[i][0] == '-') {
			tool_err("latency: options go before the functions");
			return 2;
		}
		snprintf(def, sizeof(def), "r1024 %s", argv[i]);
		if (defs_add(&o.defs, def))
			return 2;
	}
	if (!o.defs.n) {
		print_usage("latency", stderr);
		return 2;
	}
	if (o.by) {
		char keys[256], *save = NULL;

		snprintf(keys, sizeof(keys), "%s", o.by);
		for (char *k = strtok_r(keys, ",", &save); k; k = strtok_r(NULL, ",", &save))
			if (strcmp(k, "tid") && strcmp(k, "pid") && strcmp(k, "comm")) {
				tool_err("latency --by %s: tid, pid or comm", k);
				return 2;
			}
	}
	if (i < argc)
		i++;
	o.argv = argv + i;
	return run(&o);
}

int main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 2) {
		print_usage(NULL, stderr);
		return 2;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
		print_usage(NULL, stdout);
		return 0;
	}
	if (!strcmp(cmd, "help")) {
		print_usage(argc > 2 ? argv[2] : NULL, stdout);
		return 0;
	}
	if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version")) {
		printf("ukprobe %s\n", UKPROBE_VERSION);
		return 0;
	}
	argv++;
	argc--;
	{
		/* getopt's messages name the command: "ukprobe trace: ...". */
		static char prog[64];

		snprintf(prog, sizeof(prog), "ukprobe %s", cmd);
		argv[0] = prog;
	}
	if (!strcmp(cmd, "trace"))
		return cmd_trace(argc, argv);
	if (!strcmp(cmd, "latency"))
		return cmd_latency(argc, argv);
	if (!strcmp(cmd, "list-symbols"))
		return cmd_list_symbols(argc, argv, usage_list);
	if (!strcmp(cmd, "list") || !strcmp(cmd, "enable") || !strcmp(cmd, "disable") ||
	    !strcmp(cmd, "optimization"))
		return cmd_ctl(cmd, argc, argv, usage_ctl);
	if (!strcmp(cmd, "check"))
		return cmd_check(argc, argv, usage_check);
	if (!strcmp(cmd, "report"))
		return cmd_report(argc, argv, usage_report);
	tool_err("unknown command '%s'", cmd);
	fprintf(stderr, "Try 'ukprobe --help'\n");
	return 2;
}
