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
#include <sys/wait.h>
#include <unistd.h>

#include "probe_events.h"
#include "agent_env.h"
#include "fetch.h"
#include "json.h"
#include "prog_objs.h"
#include "report.h"
#include "shm.h"
#include "syms.h"
#include "tool.h"

#ifndef UKPROBE_VERSION
#define UKPROBE_VERSION "0.1.0"
#endif
#ifndef UKPROBE_LIBDIR
#define UKPROBE_LIBDIR "/usr/local/lib"
#endif

#define AGENT_NAME	"libukprobe-agent.so"
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
"  list-symbols  the function symbols of an object file\n"
"  check         parse and resolve definitions without running anything\n"
"  help [CMD]    this text, or a command's\n"
"\n"
"Run 'ukprobe COMMAND --help' for a command's options; see ukprobe(1).\n";

static const char usage_trace[] =
"Usage: ukprobe trace -e DEF [-e DEF]... [OPTIONS] -- CMD [ARGS]\n"
"\n"
"Start CMD with the probes DEF in place before its main() runs, and write\n"
"one line per hit (ftrace's format) to stderr or FILE.  CMD's own output and\n"
"exit status are unchanged.\n"
"\n"
"  -e, --event DEF        a definition (repeatable):\n"
"                           p[:[GRP/]EVENT] [OBJ:]SYM[+OFFS]|ADDR|OBJ:0xOFFSET [ARGS]\n"
"                           r[MAXACTIVE][:[GRP/]EVENT] [OBJ:]SYM[+0] [ARGS]\n"
"                         ARGS: [NAME=]FETCHARG[:TYPE] ... (see ukprobe(1))\n"
"  -f, --file FILE        definitions from FILE, one per line ('#' comments)\n"
"  -o, --output FILE      write events and summaries to FILE (default stderr)\n"
"      --format FMT       text (default), json (one object per line) or\n"
"                         perfetto (Chrome trace JSON for ui.perfetto.dev)\n"
"  -c, --count            count hits per event; print the counts at the end\n"
"                         (instead of the events, unless --events)\n"
"  -H, --hist NAME        log2 histogram of the argument NAME (or EVENT.NAME)\n"
"                         (repeatable; instead of the events, unless --events)\n"
"      --events           print the events too with --count or --hist\n"
"  -F, --follow-fork      trace the children too (fork, and what they exec)\n"
"  -b, --buffer-size N    bytes of buffer per thread (default 1M; K, M)\n"
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
"  -h, --help             this text\n"
"\n"
"Example:\n"
"  ukprobe latency libz.so.1:deflate -- gzip -c file\n";

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

static char *find_lib(const char *name)
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

static void on_signal(int sig)
{
	/* SIGINT/SIGQUIT from a terminal reach the program as well: only
	 * pass on what was sent to us alone. */
	if (child_pid > 0 && sig != SIGINT && sig != SIGQUIT)
		kill(child_pid, sig);
}

struct run_opts {
	struct defs defs;
	const char *output;
	const char *format;
	bool count, events, follow, verbose, latency;
	char *hists[UKS_MAX_HISTS];
	int nhists;
	size_t bufsize;
	unsigned long long unit_div;
	const char *unit;
	char **argv;		/* CMD ARGS */
};

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

static int fmt_of(const char *s)
{
	if (!s || !strcmp(s, "text"))
		return 0;
	if (!strcmp(s, "json"))
		return 1;
	if (!strcmp(s, "perfetto") || !strcmp(s, "chrome"))
		return 2;
	return -1;
}

static bool numeric(const struct pe_arg *a)
{
	if (a->array_len)
		return false;
	switch (a->type) {
	case PE_STRING: case PE_USTRING: case PE_SYMSTR:
		return false;
	default:
		return true;
	}
}

static bool hist_matches(const struct pe_event *ev, const struct pe_arg *a, const char *want)
{
	const char *dot = strpbrk(want, ".:");

	if (!dot)
		return !strcmp(a->name, want);
	return strlen(ev->event) == (size_t)(dot - want) &&
	       !strncmp(ev->event, want, (size_t)(dot - want)) && !strcmp(a->name, dot + 1);
}

static void print_summary(struct run_opts *o, struct uks *shm, struct pe_event *evs,
			  FILE *out, int fmt)
{
	FILE *sout = fmt == 2 ? stderr : out;

	if (o->count) {
		if (fmt == 1) {
			fprintf(sout, "{\"type\":\"counts\",\"counts\":{");
			for (int i = 0; i < o->defs.n; i++) {
				fputs(i ? "," : "", sout);
				json_fputq(sout, evs[i].event);
				fprintf(sout, ":%llu", (unsigned long long)atomic_load(&shm->ev[i].hits));
			}
			fprintf(sout, "}}\n");
		} else {
			for (int i = 0; i < o->defs.n; i++)
				fprintf(sout, "@count[%s]: %llu\n", evs[i].event,
					(unsigned long long)atomic_load(&shm->ev[i].hits));
			fprintf(sout, "\n");
		}
	}
	for (int h = 0; h < o->nhists; h++) {
		if (fmt == 1)
			report_hist_json(sout, o->hists[h], &shm->hist[h]);
		else
			report_hist(sout, o->hists[h], &shm->hist[h]);
	}
	if (o->latency) {
		for (int i = 0; i < o->defs.n; i++) {
			char name[600];

			snprintf(name, sizeof(name), "%s%s%s", evs[i].object,
				 evs[i].object[0] ? ":" : "", evs[i].symbol);
			if (fmt == 1)
				report_latency_json(sout, name, &shm->ev[i].lat, o->unit_div, o->unit);
			else
				report_latency(sout, name, &shm->ev[i].lat, o->unit_div, o->unit);
		}
	}
	fflush(sout);
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
		if (!(WIFEXITED(status) && (WEXITSTATUS(status) == 127 ||
					    WEXITSTATUS(status) == 126)))
			fprintf(stderr, "ukprobe: the agent did not start in %s (statically "
				"linked, or set-user-ID?): nothing was traced\n", o->argv[0]);
		return 0;
	}

	if (drops + nobuf) {
		fprintf(stderr, "ukprobe: %llu events dropped", drops + nobuf);
		if (drops && nobuf)
			fprintf(stderr, " (%llu to full buffers, %llu for want of a free buffer)",
				drops, nobuf);
		else if (drops)
			fprintf(stderr, " (buffers full: try a larger --buffer-size)");
		else
			fprintf(stderr, " (no free per-thread buffer)");
		fputc('\n', stderr);
		for (int i = 0; i < o->defs.n; i++) {
			unsigned long long d = atomic_load(&shm->ev[i].dropped);

			if (d && o->verbose)
				fprintf(stderr, "ukprobe:   %s: %llu dropped\n", evs[i].event, d);
		}
	}
	for (int i = 0; i < o->defs.n; i++) {
		struct uks_event *se = &shm->ev[i];
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
		}
	}
	if (atomic_load(&shm->agent_error_set))
		fprintf(stderr, "ukprobe: agent: %s\n", shm->agent_error);
	if (atomic_load(&shm->write_errors))
		fprintf(stderr, "ukprobe: %llu writes of the output failed\n",
			(unsigned long long)atomic_load(&shm->write_errors));
	if (o->verbose && atomic_load(&shm->lost_exit))
		fprintf(stderr, "ukprobe: %llu hits after the last flush at exit were counted, "
			"not written\n", (unsigned long long)atomic_load(&shm->lost_exit));
	return never;
}

static int run(struct run_opts *o)
{
	struct pe_event *evs = NULL;
	char *agent, *audit;
	int fmt = fmt_of(o->format), out_fd, shm_fd, status = 0;
	unsigned long tls;
	char *preload;
	struct uks *shm;
	struct stat ost, sst;
	FILE *out;
	pid_t pid;
	char conf[8192];
	struct sigaction sa;

	if (fmt < 0) {
		tool_err("unknown format '%s' (text, json, perfetto)", o->format);
		return 2;
	}
	if (o->latency && fmt == 2) {
		tool_err("latency: formats text and json only");
		return 2;
	}
	if (!o->defs.n) {
		tool_err("no definition: give one with -e (see ukprobe trace --help)");
		return 2;
	}
	if (!o->argv || !o->argv[0]) {
		tool_err("no command to run: ... -- CMD [ARGS]");
		return 2;
	}
	if (parse_all(&o->defs, &evs) || check_points(o, evs)) {
		tool_err("%s was not run", o->argv[0]);
		return 2;
	}
	for (int h = 0; h < o->nhists; h++) {
		bool found = false, ok = true;

		for (int i = 0; i < o->defs.n; i++)
			for (int a = 0; a < evs[i].nargs; a++)
				if (hist_matches(&evs[i], &evs[i].args[a], o->hists[h])) {
					found = true;
					ok &= numeric(&evs[i].args[a]);
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
	agent = find_lib(AGENT_NAME);
	audit = find_lib(AUDIT_NAME);
	if (!agent) {
		tool_err("cannot find %s (next to ukprobe, or in $UKPROBE_AGENT_DIR)", AGENT_NAME);
		return 2;
	}
	preload = preload_list(agent);
	tls = tls_need(agent);
	if (!audit && o->verbose)
		tool_err("cannot find %s: probes on objects loaded by dlopen() will be placed "
			 "at the next load only", AUDIT_NAME);

	/* The output: a file, or our stderr. */
	if (o->output) {
		out_fd = open(o->output, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
		if (out_fd < 0) {
			tool_err("%s: %s", o->output, strerror(errno));
			return 2;
		}
	} else {
		out_fd = dup(2);
		if (out_fd < 0) {
			tool_err("dup: %s", strerror(errno));
			return 2;
		}
	}
	out_fd = high_fd(out_fd);
	shm_fd = memfd_create("ukprobe", 0);
	if (shm_fd < 0 || ftruncate(shm_fd, sizeof(struct uks))) {
		tool_err("memfd: %s", strerror(errno));
		return 2;
	}
	shm_fd = high_fd(shm_fd);
	shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE, MAP_SHARED, shm_fd, 0);
	if (shm == MAP_FAILED) {
		tool_err("mmap: %s", strerror(errno));
		return 2;
	}
	shm->magic = UKS_MAGIC;
	shm->version = UKS_VERSION;
	shm->nevents = (uint32_t)o->defs.n;
	shm->nhists = (uint32_t)o->nhists;
	fstat(out_fd, &ost);
	fstat(shm_fd, &sst);
	out = fdopen(dup(out_fd), "w");
	if (!out)
		out = stderr;
	if (fmt == 2 && !o->latency) {
		fprintf(out, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
		fflush(out);
	}

	{
		size_t len = 0;
		char *realout = o->output ? realpath(o->output, NULL) : NULL;

		len += (size_t)snprintf(conf + len, sizeof(conf) - len,
			"out=%d\nshm=%d\nfmt=%s\nbuf=%zu\nfollow=%d\nevents=%d\nlatency=%d\n"
			"initial=1\nagent=%s\npreload=%s\ntoolpid=%d\ntoolout=%d\ntoolshm=%d\ntls=%lu\n"
			"outid=%llu:%llu\nshmid=%llu:%llu\n",
			out_fd, shm_fd, fmt == 1 ? "json" : fmt == 2 ? "perfetto" : "text",
			o->bufsize, o->follow, o->events, o->latency, agent, preload, (int)getpid(),
			out_fd, shm_fd, tls, (unsigned long long)ost.st_dev,
			(unsigned long long)ost.st_ino, (unsigned long long)sst.st_dev,
			(unsigned long long)sst.st_ino);
		if (audit)
			len += (size_t)snprintf(conf + len, sizeof(conf) - len, "audit=%s\n", audit);
		if (realout)
			len += (size_t)snprintf(conf + len, sizeof(conf) - len, "outpath=%s\n", realout);
		if (getenv("UKPROBE_TEST_WRITER_SLEEP_MS"))
			len += (size_t)snprintf(conf + len, sizeof(conf) - len, "wsleep=%s\n",
						getenv("UKPROBE_TEST_WRITER_SLEEP_MS"));
		free(realout);
		if (len >= sizeof(conf)) {
			tool_err("paths too long");
			return 2;
		}
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
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			tool_err("waitpid: %s", strerror(errno));
			return 2;
		}
	}
	if (o->follow) {
		/* Traced descendants that outlived it finish their output. */
		int st;

		while (waitpid(-1, &st, 0) > 0 || errno == EINTR)
			;
	}
	child_pid = 0;

	/* The Perfetto file is whole in every case. */
	if (fmt == 2 && !o->latency) {
		fprintf(out, "{\"name\":\"ukprobe\",\"ph\":\"M\",\"pid\":0,\"tid\":0,"
			"\"args\":{\"name\":\"ukprobe %s\"}}\n]}\n", UKPROBE_VERSION);
		fflush(out);
	}
	if (atomic_load(&shm->fatal)) {
		for (int i = 0; i < o->defs.n; i++)
			if (atomic_load(&shm->ev[i].error_set))
				print_event_error(o, i, &shm->ev[i]);
		tool_err("%s was not run: a definition could not be placed", o->argv[0]);
		return 2;
	}
	print_summary(o, shm, evs, out, fmt);
	print_warnings(o, shm, evs, status);
	if (out != stderr)
		fclose(out);

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
		{ "follow-fork", no_argument, NULL, 'F' },
		{ "buffer-size", required_argument, NULL, 'b' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct run_opts o = { .bufsize = 1024 * 1024 };
	bool force_events = false;
	int c;

	while ((c = getopt_long(argc, argv, "+e:f:o:cH:Fb:vh", lo, NULL)) != -1) {
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
		case 'F': o.follow = true; break;
		case 'b':
			o.bufsize = parse_size(optarg);
			if (o.bufsize < 4096 || o.bufsize > (1ull << 30)) {
				tool_err("--buffer-size: 4K to 1G");
				return 2;
			}
			break;
		case 'v': o.verbose = true; break;
		case 'h':
			print_usage("trace", stdout);
			return 0;
		default:
			print_usage("trace", stderr);
			return 2;
		}
	}
	o.events = force_events || (!o.count && !o.nhists);
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
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct run_opts o = { .bufsize = 4096, .latency = true, .unit_div = 1, .unit = "nsecs" };
	int c, i;

	while ((c = getopt_long(argc, argv, "+umo:Fvh", lo, NULL)) != -1) {
		switch (c) {
		case 'u': o.unit_div = 1000; o.unit = "usecs"; break;
		case 'm': o.unit_div = 1000000; o.unit = "msecs"; break;
		case 'o': o.output = optarg; break;
		case 'T': o.format = optarg; break;
		case 'F': o.follow = true; break;
		case 'v': o.verbose = true; break;
		case 'h':
			print_usage("latency", stdout);
			return 0;
		default:
			print_usage("latency", stderr);
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
	if (!strcmp(cmd, "trace"))
		return cmd_trace(argc, argv);
	if (!strcmp(cmd, "latency"))
		return cmd_latency(argc, argv);
	if (!strcmp(cmd, "list-symbols") || !strcmp(cmd, "list"))
		return cmd_list_symbols(argc, argv, usage_list);
	if (!strcmp(cmd, "check"))
		return cmd_check(argc, argv, usage_check);
	tool_err("unknown command '%s'", cmd);
	print_usage(NULL, stderr);
	return 2;
}
