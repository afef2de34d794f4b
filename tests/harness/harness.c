// SPDX-License-Identifier: MIT
/*
 * harness.c - the runner behind ukp_harness.h: main() of every test
 * program built with HARNESS=ours.
 *
 * Each selected test runs in a fork()ed child, never exec'd: nothing to
 * re-execute, so it runs the same under qemu-user without binfmt_misc.  The
 * child is the leader of its own process group, so that a timeout kills
 * whatever the test started too.  Its stdout and stderr go to a file of
 * its own, printed with its result line once it ended, so that parallel
 * tests (-j) do not mix their output.  What it reports (failed
 * assertions, a skip, how far it got) lies in a shared page, which
 * outlives a crash.  The child installs no signal handler: the tests own
 * every signal.
 *
 * Options (Criterion's spelling, so that tests/run.sh and the tests that
 * run their own program again work with either):
 *   -jN, --jobs N      N tests at once (default: the number of CPUs)
 *   --timeout S        at most S seconds for every test (a test's own
 *                      .timeout, or its suite's, applies if shorter)
 *   --filter GLOB      only the tests whose "suite/name" matches (fnmatch,
 *                      extended patterns)
 *   -l, --list         list the tests
 *   -f, --fail-fast    start no test after a failure
 *   --no-capture       tests write straight to the terminal
 *   -q, --verbose, --tap, --ascii, -S, --color=...: accepted, no effect
 * UKP_TEST_TIMEOUT_SCALE=F multiplies every timeout (slow emulators).
 *
 * Output (stderr, like Criterion): a TAP plan, one "ok N - suite::name" or
 * "not ok N - suite::name: why" line per test, the test's output before
 * it as "# " lines, and "[====] Synthesis: Tested: N | Passing: N |
 * Failing: N | Crashing: N" (skipped tests are not counted; a crash counts
 * as failing and crashing, as in Criterion).  Exit status 1 if a test
 * failed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "ukp_harness.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- registration (constructors of the test program) -------------------- */

static struct ukp_test *tests;
static struct ukp_suite *suites;
static size_t ntests;

void ukp_harness_register_test(struct ukp_test *t)
{
	t->next = tests;
	tests = t;
	ntests++;
}

void ukp_harness_register_suite(struct ukp_suite *s)
{
	s->next = suites;
	suites = s;
}

static const struct ukp_test_extra *suite_extra(const char *name)
{
	for (struct ukp_suite *s = suites; s; s = s->next)
		if (!strcmp(s->name, name))
			return s->x;
	return NULL;
}

/* Before a test runs (constructors, the runner itself): a slot of its own. */
static struct ukp_slot idle_slot;
struct ukp_slot *ukp_harness_slot = &idle_slot;

/* ---- in the test's process ------------------------------------------------ */

static struct {
	struct ukp_test *t;
	const struct ukp_test_extra *sx;	/* its suite's, or NULL */
	pid_t pid;				/* the test's own process */
	pthread_t thread;			/* the thread that runs the body */
	sigjmp_buf out;				/* where cr_assert/cr_skip_test end up */
	atomic_int teardown_taken;
} cur;

static void put(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

/* Appends to buf (size n, used *len) like snprintf, never past the end. */
static void addf(char *buf, size_t n, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void vaddf(char *buf, size_t n, size_t *len, const char *fmt, va_list ap)
{
	if (*len + 1 >= n)
		return;
	int k = vsnprintf(buf + *len, n - *len, fmt, ap);

	if (k > 0)
		*len = *len + (size_t)k < n ? *len + (size_t)k : n - 1;
}

static void addf(char *buf, size_t n, size_t *len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vaddf(buf, n, len, fmt, ap);
	va_end(ap);
}

static void add_val(char *buf, size_t n, size_t *len, const struct ukp_val *v)
{
	switch (v->kind) {
	case 'i': addf(buf, n, len, "%lld", v->i); break;
	case 'u': addf(buf, n, len, "%llu (%#llx)", v->u, v->u); break;
	case 'f': addf(buf, n, len, "%.17g", v->f); break;
	default:  addf(buf, n, len, "%p", (const void *)v->p); break;
	}
}

/* The message of a failed assertion: one write(), whole. */
static void report(const char *file, int line, const char *expr, const struct ukp_val *v,
		   const char *const *strs, const char *fmt, va_list ap)
{
	char buf[4096];
	size_t len = 0;

	addf(buf, sizeof(buf), &len, "[----] %s:%d: Assertion failed", file, line);
	if (expr)
		addf(buf, sizeof(buf), &len, ": %s", expr);
	if (v) {
		addf(buf, sizeof(buf), &len, "\n[----]   actual: ");
		add_val(buf, sizeof(buf), &len, &v[0]);
		addf(buf, sizeof(buf), &len, ", expected: ");
		add_val(buf, sizeof(buf), &len, &v[1]);
	}
	for (int i = 0; strs && i < 2; i++) {
		addf(buf, sizeof(buf), &len, i ? ", expected: " : "\n[----]   actual: ");
		addf(buf, sizeof(buf), &len, strs[i] ? "\"%s\"" : "%s", strs[i] ? strs[i] : "NULL");
	}
	/* fmt is " " followed by the test's format, if any */
	if (fmt[0] == ' ')
		fmt++;
	if (fmt[0]) {
		addf(buf, sizeof(buf), &len, "\n[----]   ");
		vaddf(buf, sizeof(buf), &len, fmt, ap);
	} else if (!expr) {
		addf(buf, sizeof(buf), &len, ": the conditions for this assertion were not met");
	}
	addf(buf, sizeof(buf), &len, "\n");
	put(2, buf, len);
}

static void run_fini(void)
{
	struct ukp_slot *slot = ukp_harness_slot;

	if (atomic_exchange(&cur.teardown_taken, 1))
		return;
	__atomic_store_n(&slot->phase, UKP_PHASE_TEARDOWN, __ATOMIC_SEQ_CST);
	if (cur.t->x->fini)
		cur.t->x->fini();
	if (cur.sx && cur.sx->fini)
		cur.sx->fini();
}

/* The test ends here (a failed cr_assert, cr_skip_test). */
static __attribute__((noreturn)) void end_test(void)
{
	if (!cur.t)
		exit(1);	/* not in a test (a constructor?) */
	if (getpid() != cur.pid)
		_exit(1);	/* a child of the test: the failure is recorded */
	if (pthread_equal(pthread_self(), cur.thread))
		siglongjmp(cur.out, 1);
	/* Another thread of the test: its teardown runs here, as Criterion's
	 * does, and the process ends with the verdict in the slot. */
	if (__atomic_load_n(&ukp_harness_slot->phase, __ATOMIC_SEQ_CST) == UKP_PHASE_BODY)
		run_fini();
	exit(0);
}

void ukp_harness_fail(int fatal, const char *file, int line, const char *expr,
		      const struct ukp_val *v, const char *const *strs, const char *fmt, ...)
{
	va_list ap;

	__atomic_fetch_add(&ukp_harness_slot->failed, 1, __ATOMIC_SEQ_CST);
	va_start(ap, fmt);
	report(file, line, expr, v, strs, fmt, ap);
	va_end(ap);
	if (fatal)
		end_test();
}

void ukp_harness_skip(const char *fmt, ...)
{
	struct ukp_slot *slot = ukp_harness_slot;
	va_list ap;

	if (fmt[0] == ' ')
		fmt++;
	va_start(ap, fmt);
	vsnprintf(slot->skip_reason, sizeof(slot->skip_reason), fmt, ap);
	va_end(ap);
	__atomic_store_n(&slot->skipped, 1, __ATOMIC_SEQ_CST);
	end_test();
}

void ukp_harness_log(int level, const char *fmt, ...)
{
	static const char *const tag[] = { "[INFO]", "[WARN]", "[ERR ]" };
	char buf[2048];
	size_t len = 0;
	va_list ap;

	addf(buf, sizeof(buf), &len, "%s ", tag[level < 0 || level > 2 ? 2 : level]);
	va_start(ap, fmt);
	vaddf(buf, sizeof(buf), &len, fmt, ap);
	va_end(ap);
	addf(buf, sizeof(buf), &len, "\n");
	put(2, buf, len);
}

/* ---- the runner ----------------------------------------------------------- */

static struct {
	long jobs;
	double timeout;		/* --timeout, 0: none */
	double scale;		/* UKP_TEST_TIMEOUT_SCALE */
	const char *filter;
	bool list, fail_fast, capture;
} opt = { .scale = 1.0, .capture = true };

struct run {
	struct ukp_test *t;
	const struct ukp_test_extra *sx;
	struct ukp_slot *slot;
	pid_t pid;		/* 0: not running */
	int out;		/* its output file */
	double start, deadline;	/* CLOCK_MONOTONIC seconds; deadline 0: none */
	bool timed_out;
};

static struct run *running;	/* opt.jobs entries */
/* The selected tests, the disabled ones (globals: a test's process exits
 * with them still reachable, for LeakSanitizer's sake). */
static struct ukp_test **all, **disabled;
static sigset_t parent_mask;	/* SIGCHLD blocked: sigtimedwait() */
static sigset_t orig_mask;
static struct sigaction orig_int, orig_term, orig_hup;
static size_t done_count;
static struct { size_t tested, passing, failing, crashing, skipped; } sum;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f, "usage: %s [-jN] [--timeout S] [--filter GLOB] [-l] [-f] [--no-capture]\n"
		"  (the ukprobes test harness; Criterion's options where they overlap)\n", prog);
}

/* "N", for an option that takes a number. */
static double number(const char *prog, const char *what, const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s ? s : "", &end);
	if (!s || end == s || *end || errno || v < 0) {
		fprintf(stderr, "%s: %s needs a non-negative number, not '%s'\n", prog, what, s ? s : "");
		exit(2);
	}
	return v;
}

static void parse(int argc, char **argv)
{
	const char *prog = argv[0];

	opt.jobs = sysconf(_SC_NPROCESSORS_ONLN);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = strchr(a, '=');
		const char *next = i + 1 < argc ? argv[i + 1] : NULL;

#define OPT_WITH_VALUE(name) \
	(!strncmp(a, name, strlen(name)) && (a[strlen(name)] == 0 || a[strlen(name)] == '='))
#define VALUE() (v ? v + 1 : (i++, next))
		if (!strncmp(a, "-j", 2) && a[2]) {
			opt.jobs = (long)number(prog, "-j", a + 2);
		} else if (!strcmp(a, "-j") || OPT_WITH_VALUE("--jobs")) {
			opt.jobs = (long)number(prog, "--jobs", strcmp(a, "-j") ? VALUE() : (i++, next));
		} else if (OPT_WITH_VALUE("--timeout")) {
			opt.timeout = number(prog, "--timeout", VALUE());
		} else if (OPT_WITH_VALUE("--filter")) {
			opt.filter = VALUE();
			if (!opt.filter) {
				fprintf(stderr, "%s: --filter needs a pattern\n", prog);
				exit(2);
			}
		} else if (!strcmp(a, "-l") || !strcmp(a, "--list")) {
			opt.list = true;
		} else if (!strcmp(a, "-f") || !strcmp(a, "--fail-fast")) {
			opt.fail_fast = true;
		} else if (!strcmp(a, "--no-capture")) {
			opt.capture = false;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout, prog);
			exit(0);
		} else if (!strcmp(a, "-v") || !strcmp(a, "--version")) {
			printf("ukprobes test harness (Criterion-compatible subset)\n");
			exit(0);
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet") || !strcmp(a, "-S") ||
			   !strcmp(a, "--short-filename") || !strcmp(a, "--ascii") ||
			   !strcmp(a, "--always-succeed") || !strcmp(a, "--ignore-warnings") ||
			   !strcmp(a, "--full-stats") || !strncmp(a, "--verbose", 9) ||
			   !strncmp(a, "--tap", 5) || !strncmp(a, "--color=", 8)) {
			/* Criterion's; our output is always the same */
		} else {
			fprintf(stderr, "%s: unknown option '%s'\n", prog, a);
			usage(stderr, prog);
			exit(2);
		}
#undef OPT_WITH_VALUE
#undef VALUE
	}
	if (opt.jobs < 1)
		opt.jobs = 1;
	const char *sc = getenv("UKP_TEST_TIMEOUT_SCALE");
	if (sc && *sc)
		opt.scale = number(prog, "UKP_TEST_TIMEOUT_SCALE", sc);
}

static int by_name(const void *pa, const void *pb)
{
	const struct ukp_test *a = *(struct ukp_test *const *)pa, *b = *(struct ukp_test *const *)pb;
	int c = strcmp(a->suite, b->suite);

	return c ? c : strcmp(a->name, b->name);
}

static bool selected(const struct ukp_test *t)
{
	char id[512];

	if (!opt.filter)
		return true;
	snprintf(id, sizeof(id), "%s/%s", t->suite, t->name);
	return fnmatch(opt.filter, id, FNM_EXTMATCH) == 0;
}

/* The timeout of a test: its own, else its suite's; --timeout caps it. */
static double timeout_of(const struct ukp_test *t, const struct ukp_test_extra *sx)
{
	double to = t->x->timeout;

	if (to <= 0 && sx)
		to = sx->timeout;
	if (opt.timeout > 0 && (to <= 0 || opt.timeout < to))
		to = opt.timeout;
	return to * opt.scale;
}

static int new_output_file(void)
{
	const char *dir = getenv("TMPDIR");
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/ukp-harness-XXXXXX", dir && *dir ? dir : "/tmp");
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0) {
		perror("ukp harness: mkostemp");
		exit(2);
	}
	unlink(path);
	return fd;
}

static __attribute__((noreturn)) void child(struct run *r)
{
	/* The test's world: its own process group, the signal mask and
	 * dispositions the program started with; it dies with the runner. */
	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	sigaction(SIGINT, &orig_int, NULL);
	sigaction(SIGTERM, &orig_term, NULL);
	sigaction(SIGHUP, &orig_hup, NULL);
	sigprocmask(SIG_SETMASK, &orig_mask, NULL);
	if (opt.capture) {
		dup2(r->out, 1);
		dup2(r->out, 2);
	}
	for (long j = 0; j < opt.jobs; j++)
		close(running[j].out);
	setvbuf(stdout, NULL, _IOLBF, 0);

	ukp_harness_slot = r->slot;
	cur.t = r->t;
	cur.sx = r->sx;
	cur.pid = getpid();
	cur.thread = pthread_self();
	if (!sigsetjmp(cur.out, 1)) {
		__atomic_store_n(&r->slot->phase, UKP_PHASE_SETUP, __ATOMIC_SEQ_CST);
		if (cur.sx && cur.sx->init)
			cur.sx->init();
		if (r->t->x->init)
			r->t->x->init();
		__atomic_store_n(&r->slot->phase, UKP_PHASE_BODY, __ATOMIC_SEQ_CST);
		r->t->fn();
	}
	/* After the body, or a failed cr_assert / a skip in it: the teardown.
	 * Not after a setup that did not finish, nor twice. */
	int phase = __atomic_load_n(&r->slot->phase, __ATOMIC_SEQ_CST);

	if (phase == UKP_PHASE_BODY)
		run_fini();
	if (phase != UKP_PHASE_SETUP)	/* (stays: the report tells it) */
		__atomic_store_n(&r->slot->phase, UKP_PHASE_DONE, __ATOMIC_SEQ_CST);
	exit(0);
}

static void start(struct run *r, struct ukp_test *t, struct ukp_slot *slot)
{
	r->t = t;
	r->sx = suite_extra(t->suite);
	r->slot = slot;
	r->timed_out = false;
	if (ftruncate(r->out, 0) || lseek(r->out, 0, SEEK_SET) < 0) {
		perror("ukp harness: output file");
		exit(2);
	}
	fflush(stdout);
	fflush(stderr);
	r->start = now();
	double to = timeout_of(t, r->sx);
	r->deadline = to > 0 ? r->start + to : 0;
	r->pid = fork();
	if (r->pid < 0) {
		perror("ukp harness: fork");
		exit(2);
	}
	if (r->pid == 0)
		child(r);
	setpgid(r->pid, r->pid);	/* (also done by the child: no race) */
}

static const char *sig_name(int sig)
{
	const char *d = strsignal(sig);

	return d ? d : "?";
}

/* Prints the test's output and its result line, counts it. */
static void finish(struct run *r, int status)
{
	const struct ukp_test *t = r->t;
	struct ukp_slot *s = r->slot;
	int want_sig = t->x->signal ? t->x->signal : (r->sx ? r->sx->signal : 0);
	int want_exit = t->x->exit_code ? t->x->exit_code : (r->sx ? r->sx->exit_code : 0);
	char why[512] = "";
	bool pass = false, crash = false, skip = false;
	size_t len = 0;

	if (r->timed_out) {
		addf(why, sizeof(why), &len, "timed out after %.0f s", r->deadline - r->start);
	} else if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);

		if (sig == want_sig) {
			pass = !s->failed;
			if (!pass)
				addf(why, sizeof(why), &len, "%d assertion%s failed", s->failed,
				     s->failed == 1 ? "" : "s");
		} else if (want_sig) {
			/* (Criterion: a failure, not a crash) */
			addf(why, sizeof(why), &len, "died of signal %d (%s), expected %d (%s)", sig,
			     sig_name(sig), want_sig, sig_name(want_sig));
		} else {
			crash = true;
			addf(why, sizeof(why), &len, "CRASH! signal %d (%s)", sig, sig_name(sig));
			if (s->phase == UKP_PHASE_SETUP)
				addf(why, sizeof(why), &len, " in .init");
			else if (s->phase == UKP_PHASE_TEARDOWN)
				addf(why, sizeof(why), &len, " in .fini");
			if (s->file)
				addf(why, sizeof(why), &len, ", after the assertion at %s:%d", s->file, s->line);
		}
	} else if (s->failed) {
		addf(why, sizeof(why), &len, "%d assertion%s failed", s->failed, s->failed == 1 ? "" : "s");
		/* As in Criterion, a setup that did not finish is a crash. */
		if (s->phase == UKP_PHASE_SETUP) {
			addf(why, sizeof(why), &len, " in .init");
			crash = true;
		}
	} else if (s->skipped) {
		skip = true;
	} else if (want_sig) {
		addf(why, sizeof(why), &len, "exited with status %d, expected signal %d (%s)",
		     WEXITSTATUS(status), want_sig, sig_name(want_sig));
	} else if (WEXITSTATUS(status) != want_exit) {
		addf(why, sizeof(why), &len, "exited with status %d, expected %d", WEXITSTATUS(status),
		     want_exit);
	} else {
		pass = true;
	}

	/* The test's own output, then its line. */
	char buf[8192];
	off_t off = 0;
	ssize_t n;
	bool bol = true;

	while ((n = pread(r->out, buf, sizeof(buf), off)) > 0) {
		for (ssize_t i = 0; i < n;) {
			const char *nl = memchr(buf + i, '\n', (size_t)(n - i));
			ssize_t end = nl ? nl - buf + 1 : n;

			if (bol)
				put(2, "# ", 2);
			put(2, buf + i, (size_t)(end - i));
			bol = nl != NULL;
			i = end;
		}
		off += n;
	}
	if (!bol)
		put(2, "\n", 1);

	char line[1024];
	size_t ll = 0;

	done_count++;
	if (skip) {
		sum.skipped++;
		addf(line, sizeof(line), &ll, "ok %zu - %s::%s # SKIP %s\n", done_count, t->suite, t->name,
		     s->skip_reason[0] ? s->skip_reason : "skipped");
	} else {
		sum.tested++;
		if (pass)
			sum.passing++;
		else
			sum.failing++;
		if (crash)
			sum.crashing++;
		addf(line, sizeof(line), &ll, "%s %zu - %s::%s%s%s (%.2fs)\n", pass ? "ok" : "not ok",
		     done_count, t->suite, t->name, pass ? "" : ": ", why, now() - r->start);
	}
	put(2, line, ll);
	r->pid = 0;
}

/* Kill every test still running (the runner was told to stop). */
static void on_stop(int sig)
{
	for (long j = 0; running && j < opt.jobs; j++)
		if (running[j].pid > 0)
			kill(-running[j].pid, SIGKILL);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Waits until a test ends (or a deadline passes), and handles it. */
static void wait_some(void)
{
	for (;;) {
		double t = now(), next = t + 0.5;
		long nrun = 0;

		for (long j = 0; j < opt.jobs; j++) {
			struct run *r = &running[j];

			if (r->pid <= 0)
				continue;
			nrun++;
			if (r->deadline && !r->timed_out && t >= r->deadline) {
				r->timed_out = true;
				kill(-r->pid, SIGKILL);
				kill(r->pid, SIGKILL);
			}
			if (r->deadline && !r->timed_out && r->deadline < next)
				next = r->deadline;
		}
		if (!nrun)
			return;

		/* A test that ended: kill what it left in its group while its
		 * zombie still holds the group's id, then reap it. */
		siginfo_t si = { 0 };
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid > 0) {
			int status;

			kill(-si.si_pid, SIGKILL);
			if (waitpid(si.si_pid, &status, 0) == si.si_pid) {
				for (long j = 0; j < opt.jobs; j++)
					if (running[j].pid == si.si_pid) {
						finish(&running[j], status);
						return;
					}
			}
			continue;
		}

		double d = next - now();
		if (d < 0.001)
			d = 0.001;
		struct timespec ts = { (time_t)d, (long)((d - (double)(time_t)d) * 1e9) };
		sigtimedwait(&parent_mask, NULL, &ts);
	}
}

int main(int argc, char **argv)
{
	parse(argc, argv);

	/* The tests, sorted by suite and name, and the selection. */
	all = calloc(ntests ? ntests : 1, sizeof(*all));
	disabled = calloc(ntests ? ntests : 1, sizeof(*disabled));
	size_t n = 0, nsel = 0, ndis = 0;

	for (struct ukp_test *t = tests; t; t = t->next)
		all[n++] = t;
	qsort(all, n, sizeof(*all), by_name);
	if (opt.list) {
		for (size_t i = 0; i < n; i++)
			printf("%s/%s%s\n", all[i]->suite, all[i]->name,
			       all[i]->x->disabled ? " (disabled)" : "");
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		const struct ukp_test_extra *sx = suite_extra(all[i]->suite);

		if (!selected(all[i]))
			continue;
		if (all[i]->x->disabled || (sx && sx->disabled))
			disabled[ndis++] = all[i];
		else
			all[nsel++] = all[i];
	}

	struct ukp_slot *slots = mmap(NULL, (nsel ? nsel : 1) * sizeof(*slots), PROT_READ | PROT_WRITE,
				      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (slots == MAP_FAILED) {
		perror("ukp harness: mmap");
		return 2;
	}
	if (opt.jobs > (long)nsel)
		opt.jobs = nsel ? (long)nsel : 1;
	running = calloc((size_t)opt.jobs, sizeof(*running));
	for (long j = 0; j < opt.jobs; j++)
		running[j].out = new_output_file();

	/* SIGCHLD is waited for with sigtimedwait(); INT/TERM/HUP kill the
	 * tests first.  The children get the original mask and handlers. */
	sigemptyset(&parent_mask);
	sigaddset(&parent_mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &parent_mask, &orig_mask);
	struct sigaction sa = { .sa_handler = on_stop };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &orig_int);
	sigaction(SIGTERM, &sa, &orig_term);
	sigaction(SIGHUP, &sa, &orig_hup);

	fprintf(stderr, "1..%zu\n", nsel + ndis);
	for (size_t i = 0; i < ndis; i++)
		fprintf(stderr, "ok %zu - %s::%s # SKIP disabled\n", ++done_count, disabled[i]->suite,
			disabled[i]->name);
	for (size_t i = 0; i < nsel; i++) {
		if (opt.fail_fast && sum.failing)
			break;
		struct run *r = NULL;

		for (;;) {
			for (long j = 0; j < opt.jobs && !r; j++)
				if (running[j].pid <= 0)
					r = &running[j];
			if (r)
				break;
			wait_some();
		}
		start(r, all[i], &slots[i]);
	}
	for (;;) {
		bool any = false;

		for (long j = 0; j < opt.jobs; j++)
			any |= running[j].pid > 0;
		if (!any)
			break;
		wait_some();
	}

	fprintf(stderr, "[====] Synthesis: Tested: %zu | Passing: %zu | Failing: %zu | Crashing: %zu \n",
		sum.tested, sum.passing, sum.failing, sum.crashing);
	return sum.failing ? 1 : 0;
}
