/* SPDX-License-Identifier: MIT */
/*
 * harness.c - runs the rows of a bench program, one forked child per
 * measurement, rows interleaved round by round; prints the table and writes
 * the JSON fragments (see harness.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* ------------------------------------------------------------------------ */
/* Notes                                                                     */
/* ------------------------------------------------------------------------ */

static void vnote(char *buf, size_t size, const char *fmt, va_list ap)
{
	size_t len = strnlen(buf, size);

	if (len && len + 2 < size) {
		memcpy(buf + len, "; ", 3);
		len += 2;
	}
	if (len < size)
		vsnprintf(buf + len, size - len, fmt, ap);
}

void bench_note(struct bench_result *res, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vnote(res->note, sizeof(res->note), fmt, ap);
	va_end(ap);
}

void bench_fail(struct bench_result *res, const char *fmt, ...)
{
	va_list ap;

	res->ok = 0;
	res->note[0] = '\0';
	va_start(ap, fmt);
	vnote(res->note, sizeof(res->note), fmt, ap);
	va_end(ap);
}

void bench_extra_set(struct bench_result *res, int i, double value,
		     double wall_value)
{
	if (i < 0 || i >= BENCH_EXTRA_MAX)
		return;
	res->extra_ok[i] = 1;
	res->extra[i] = value;
	res->extra_wall[i] = wall_value;
}

void bench_extra_fail(struct bench_result *res, int i, const char *fmt, ...)
{
	va_list ap;

	if (i < 0 || i >= BENCH_EXTRA_MAX)
		return;
	res->extra_ok[i] = 0;
	res->extra_note[i][0] = '\0';
	va_start(ap, fmt);
	vnote(res->extra_note[i], sizeof(res->extra_note[i]), fmt, ap);
	va_end(ap);
}

void bench_extra_note(struct bench_result *res, int i, const char *fmt, ...)
{
	va_list ap;

	if (i < 0 || i >= BENCH_EXTRA_MAX)
		return;
	va_start(ap, fmt);
	vnote(res->extra_note[i], sizeof(res->extra_note[i]), fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------------------ */
/* One measurement in a child                                                */
/* ------------------------------------------------------------------------ */

struct opts {
	int runs;
	double scale;
	const char *out;
	const char *log;
	const char *only;
	int timeout_s;
	int cpu;		/* -1: not pinned */
};

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static long row_iters(const struct bench_row *row, const struct opts *o)
{
	long n = (long)((double)row->iters * o->scale);

	return n < 1 ? 1 : n;
}

static void run_child(const struct bench_row *row, const struct opts *o,
		      int logfd, struct bench_result *res)
{
	int pfd[2];
	pid_t pid;
	size_t got = 0;
	int status;

	memset(res, 0, sizeof(*res));
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		bench_fail(res, "pipe: %s", strerror(errno));
		return;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		bench_fail(res, "fork: %s", strerror(errno));
		close(pfd[0]);
		close(pfd[1]);
		return;
	}
	if (pid == 0) {
		struct bench_result r;

		close(pfd[0]);
		if (logfd >= 0) {
			dup2(logfd, 1);
			dup2(logfd, 2);
		}
		if (o->cpu >= 0) {
			cpu_set_t set;

			CPU_ZERO(&set);
			CPU_SET(o->cpu, &set);
			sched_setaffinity(0, sizeof(set), &set);
		}
		memset(&r, 0, sizeof(r));
		row->measure(row, row_iters(row, o), &r);
		if (r.ok && !(r.ns_per_op >= 0 && isfinite(r.ns_per_op) &&
			      r.wall_ns_per_op >= 0 && isfinite(r.wall_ns_per_op)))
			bench_fail(&r, "bad figures %g, %g", r.ns_per_op,
				   r.wall_ns_per_op);
		fflush(NULL);
		write_all(pfd[1], &r, sizeof(r));
		_exit(0);
	}
	close(pfd[1]);
	for (;;) {
		struct pollfd pf = { .fd = pfd[0], .events = POLLIN };
		int n = poll(&pf, 1, o->timeout_s * 1000);
		ssize_t k;

		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0) {
			kill(pid, SIGKILL);
			break;
		}
		k = read(pfd[0], (char *)res + got, sizeof(*res) - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
		if (got == sizeof(*res))
			break;
	}
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (got == sizeof(*res)) {
		res->note[sizeof(res->note) - 1] = '\0';
		for (int i = 0; i < BENCH_EXTRA_MAX; i++)
			res->extra_note[i][sizeof(res->extra_note[i]) - 1] = '\0';
		return;
	}
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		bench_fail(res, "no result within %d s (killed)", o->timeout_s);
	else if (WIFSIGNALED(status))
		bench_fail(res, "child killed by SIG%s",
			   sigabbrev_np(WTERMSIG(status)) ?: "?");
	else
		bench_fail(res, "child exited with status %d and no result",
			   WEXITSTATUS(status));
}

/* ------------------------------------------------------------------------ */
/* Statistics                                                                */
/* ------------------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double vmin(const double *v, int n)
{
	double m = v[0];

	for (int i = 1; i < n; i++)
		if (v[i] < m)
			m = v[i];
	return m;
}

static double vmedian(const double *v, int n)
{
	double *s = malloc(sizeof(double) * (size_t)n);
	double m;

	memcpy(s, v, sizeof(double) * (size_t)n);
	qsort(s, (size_t)n, sizeof(double), cmp_double);
	m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	free(s);
	return m;
}

static struct bench_row *find_row(struct bench_row *rows, int nrows,
				  const char *name, const char *variant,
				  int threads)
{
	for (int i = 0; i < nrows; i++)
		if (!strcmp(rows[i].name, name) &&
		    !strcmp(rows[i].variant, variant) &&
		    rows[i].threads == threads)
			return &rows[i];
	return NULL;
}

int bench_row_runs(const struct bench_row *row, int runs)
{
	return row->max_runs > 0 && row->max_runs < runs ? row->max_runs : runs;
}

static int row_ok(const struct bench_row *r, int runs)
{
	return r && !r->failed && r->nval == bench_row_runs(r, runs);
}

static const char *row_unit(const struct bench_row *r)
{
	return r->unit ? r->unit : "ns";
}

/* ------------------------------------------------------------------------ */
/* Output                                                                    */
/* ------------------------------------------------------------------------ */

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_num(FILE *f, double v, int ok)
{
	if (ok && isfinite(v))
		fprintf(f, "%.3f", v);
	else
		fputs("null", f);
}

static const char *fmt_ns(char *buf, size_t size, double v)
{
	snprintf(buf, size, v < 10 ? "%.2f" : "%.1f", v);
	return buf;
}

/* "over baseline; remark" for the table and the JSON. */
static void row_note(char *buf, size_t size, const struct bench_row *r)
{
	snprintf(buf, size, "%s%s%s%s", r->over ? "over " : "",
		 r->over ? r->over : "", r->over && r->note[0] ? "; " : "",
		 r->note);
}

static void print_row(const struct bench_row *r, const struct opts *o)
{
	char a[32], b[32], c[32], note[BENCH_NOTE_MAX + 64], pre[64] = "";
	int want = bench_row_runs(r, o->runs);

	printf("%-9s %-9s %3d %8ld ", r->name, r->variant, r->threads,
	       row_iters(r, o));
	if (!row_ok(r, o->runs)) {
		printf("%9s %9s %9s  n/a (%s)\n", "n/a", "n/a", "n/a",
		       r->note[0] ? r->note : "not run");
		return;
	}
	/* "[B/probe, 1 run] " before the note when the row is not the usual
	 * ns over all the runs. */
	if (r->unit || want != o->runs)
		snprintf(pre, sizeof(pre), "[%s%s%.0d%s] ", r->unit ? r->unit : "",
			 r->unit && want != o->runs ? ", " : "",
			 want != o->runs ? want : 0,
			 want == o->runs ? "" : want > 1 ? " runs" : " run");
	row_note(note, sizeof(note), r);
	printf("%9s %9s %9s  %s%s\n", fmt_ns(a, sizeof(a), vmin(r->val, r->nval)),
	       fmt_ns(b, sizeof(b), vmedian(r->val, r->nval)),
	       fmt_ns(c, sizeof(c), vmedian(r->wval, r->nval)), pre, note);
}

static void write_row_json(FILE *f, const struct bench_row *r,
			   const struct opts *o, const char *prog)
{
	int ok = row_ok(r, o->runs);
	char note[BENCH_NOTE_MAX + 64];

	if (ok) {
		char n[BENCH_NOTE_MAX + 32];

		row_note(n, sizeof(n), r);
		if (r->unit)
			snprintf(note, sizeof(note), "%s%s%s", r->unit,
				 n[0] ? "; " : "", n);
		else
			snprintf(note, sizeof(note), "ns per %s%s%s",
				 r->over ? "hit " : "iteration",
				 n[0] ? (r->over ? "" : "; ") : "", n);
	} else
		snprintf(note, sizeof(note), "n/a (%s)",
			 r->note[0] ? r->note : "not run");
	fputs("{\"program\": ", f);
	json_str(f, prog);
	fputs(", \"name\": ", f);
	json_str(f, r->name);
	fputs(", \"variant\": ", f);
	json_str(f, r->variant);
	fprintf(f, ", \"threads\": %d, \"min_ns\": ", r->threads);
	json_num(f, ok ? vmin(r->val, r->nval) : 0, ok);
	fputs(", \"median_ns\": ", f);
	json_num(f, ok ? vmedian(r->val, r->nval) : 0, ok);
	fprintf(f, ", \"runs\": %d, \"iters\": %ld, \"note\": ",
		ok ? r->nval : 0, row_iters(r, o));
	json_str(f, note);
	fputs(", \"unit\": ", f);
	json_str(f, row_unit(r));
	fputs(", \"clock\": ", f);
	json_str(f, r->clock ? r->clock : BENCH_CLOCK_THREAD);
	fputs(", \"wall_min_ns\": ", f);
	json_num(f, ok ? vmin(r->wval, r->nval) : 0, ok);
	fputs(", \"wall_median_ns\": ", f);
	json_num(f, ok ? vmedian(r->wval, r->nval) : 0, ok);
	fputs(", \"per_run_ns\": [", f);
	for (int i = 0; ok && i < r->nval; i++)
		fprintf(f, "%s%.3f", i ? ", " : "", r->val[i]);
	fputs("], \"wall_per_run_ns\": [", f);
	for (int i = 0; ok && i < r->nval; i++)
		fprintf(f, "%s%.3f", i ? ", " : "", r->wval[i]);
	fputs("]}\n", f);
}

/* One ratio for one numerator row: per-run values, median and of-mins,
 * over the runs both rows have. */
static void do_ratio(const struct bench_ratio *q, struct bench_row *num,
		     struct bench_row *rows, int nrows, const struct opts *o,
		     FILE *jf, int *first)
{
	struct bench_row *den;
	double *v = NULL;
	double med = 0, ofmins = 0;
	int ok = 0, n = 0;
	char why[BENCH_NOTE_MAX + 32] = "";
	char label[64], var[32];

	if (q->den_threads) {
		den = find_row(rows, nrows, q->den, num->variant, q->den_threads);
		if (!den)
			den = find_row(rows, nrows, q->den, "-", q->den_threads);
	} else {
		den = find_row(rows, nrows, q->den, num->variant, num->threads);
		if (!den)
			den = find_row(rows, nrows, q->den, "-", num->threads);
		if (!den)
			den = find_row(rows, nrows, q->den, "-", 1);
	}
	if (!den)
		snprintf(why, sizeof(why), "no row %s", q->den);
	else if (!row_ok(num, o->runs))
		snprintf(why, sizeof(why), "%s %s is n/a", num->name, num->variant);
	else if (!row_ok(den, o->runs))
		snprintf(why, sizeof(why), "%s %s is n/a", den->name, den->variant);
	else {
		n = num->nval < den->nval ? num->nval : den->nval;
		v = malloc(sizeof(double) * (size_t)n);
		for (int i = 0; i < n; i++)
			v[i] = num->val[i] / (q->den_factor * den->val[i]);
		med = vmedian(v, n);
		ofmins = vmin(num->val, num->nval) /
			 (q->den_factor * vmin(den->val, den->nval));
		ok = 1;
	}
	snprintf(label, sizeof(label), "%s", q->name);
	if (num->threads > 1)
		snprintf(var, sizeof(var), "%s x%d", num->variant, num->threads);
	else
		snprintf(var, sizeof(var), "%s", num->variant);
	if (ok) {
		printf("%-16s %-11s %8.3f %8.3f", label, var, med, ofmins);
		if (q->goal_max > 0)
			printf("   <= %-4.2g %s", q->goal_max,
			       med <= q->goal_max ? "met" : "NOT MET");
		printf("\n");
	} else {
		printf("%-16s %-11s %8s %8s   n/a (%s)\n", label, var,
		       "n/a", "n/a", why);
	}
	if (jf) {
		fprintf(jf, "%s{\"variant\": ", *first ? "" : ", ");
		json_str(jf, num->variant);
		fprintf(jf, ", \"threads\": %d", num->threads);
		fputs(", \"median\": ", jf);
		json_num(jf, med, ok);
		fputs(", \"of_mins\": ", jf);
		json_num(jf, ofmins, ok);
		fprintf(jf, ", \"runs\": %d, \"met\": %s", ok ? n : 0,
			!ok || q->goal_max <= 0 ? "null" :
			med <= q->goal_max ? "true" : "false");
		fputs(", \"per_run\": [", jf);
		for (int i = 0; ok && i < n; i++)
			fprintf(jf, "%s%.4f", i ? ", " : "", v[i]);
		fputs("]", jf);
		if (!ok) {
			char nb[BENCH_NOTE_MAX + 48];

			snprintf(nb, sizeof(nb), "n/a (%s)", why);
			fputs(", \"note\": ", jf);
			json_str(jf, nb);
		}
		fputs("}", jf);
	}
	*first = 0;
	free(v);
}

static FILE *open_out(const char *prefix, const char *ext)
{
	char path[4096];
	FILE *f;

	if (!prefix)
		return NULL;
	snprintf(path, sizeof(path), "%s.%s", prefix, ext);
	f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "bench: %s: %s\n", path, strerror(errno));
	return f;
}

/* ------------------------------------------------------------------------ */
/* Main                                                                      */
/* ------------------------------------------------------------------------ */

/* Enters the result of run @r of @row. */
static void record(struct bench_row *rows, int nrows, struct bench_row *row,
		   int r, const struct bench_result *res, int log_grew,
		   const struct opts *o)
{
	if (!res->ok) {
		/* Failures are mostly deterministic (an error code): do not
		 * retry the row in later runs. */
		row->failed = 1;
		if (r)
			snprintf(row->note, sizeof(row->note), "run %d/%d: %.200s",
				 r + 1, o->runs, res->note);
		else
			snprintf(row->note, sizeof(row->note), "%s", res->note);
		if (log_grew && o->log) {
			size_t len = strlen(row->note);

			snprintf(row->note + len, sizeof(row->note) - len,
				 "; output in %s", o->log);
		}
		return;
	}
	row->raw[r] = row->val[r] = res->ns_per_op;
	row->wraw[r] = row->wval[r] = res->wall_ns_per_op;
	if (row->over) {
		struct bench_row *b = find_row(rows, nrows, row->over,
					       row->variant, row->threads);

		if (!b || b->failed || b->nval != r + 1) {
			row->failed = 1;
			snprintf(row->note, sizeof(row->note),
				 "row %s %s has no figure for run %d",
				 row->over, row->variant, r + 1);
			return;
		}
		row->val[r] -= b->raw[r];
		row->wval[r] -= b->wraw[r];
	}
	row->nval++;
	/* Remarks repeat run to run: keep each once. */
	if (res->note[0] && !strstr(row->note, res->note)) {
		size_t len = strlen(row->note);

		snprintf(row->note + len, sizeof(row->note) - len, "%srun %d: %s",
			 len ? "; " : "", r + 1, res->note);
	}
	if (log_grew && o->log && !row->log_expected &&
	    !strstr(row->note, "output in"))
		snprintf(row->note + strlen(row->note),
			 sizeof(row->note) - strlen(row->note), "%soutput in %s",
			 row->note[0] ? "; " : "", o->log);
}

static int selected(const struct bench_row *r, const char *only)
{
	size_t n = strlen(r->name);

	if (!only)
		return 1;
	for (const char *p = only; *p;) {
		const char *e = strchrnul(p, ',');

		if ((size_t)(e - p) == n && !strncmp(p, r->name, n))
			return 1;
		p = *e ? e + 1 : e;
	}
	return 0;
}

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s [--runs N] [--scale F] [--out PREFIX] "
		"[--log FILE] [--only ROW[,ROW]] [--timeout S]\n", prog);
}

int bench_main(int argc, char **argv, const char *prog,
	       struct bench_row *rows, int nrows,
	       const struct bench_ratio *ratios, int nratios)
{
	struct opts o = { .runs = 7, .scale = 1.0, .timeout_s = 60, .cpu = -1 };
	const char *env;
	int logfd = -1;
	FILE *jr, *jq;

	if ((env = getenv("BENCH_RUNS")) && *env)
		o.runs = atoi(env);
	if ((env = getenv("BENCH_SCALE")) && *env)
		o.scale = atof(env);
	if ((env = getenv("BENCH_CPU")) && *env)
		o.cpu = atoi(env);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v) {
			usage(prog);
			return 2;
		}
		if (!strcmp(a, "--runs"))
			o.runs = atoi(v);
		else if (!strcmp(a, "--scale"))
			o.scale = atof(v);
		else if (!strcmp(a, "--out"))
			o.out = v;
		else if (!strcmp(a, "--log"))
			o.log = v;
		else if (!strcmp(a, "--only"))
			o.only = v;
		else if (!strcmp(a, "--timeout"))
			o.timeout_s = atoi(v);
		else {
			usage(prog);
			return 2;
		}
		i++;
	}
	if (o.runs < 1 || !(o.scale > 0) || o.timeout_s < 1) {
		usage(prog);
		return 2;
	}
	logfd = open(o.log ? o.log : "/dev/null",
		     O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	for (int i = 0; i < nrows; i++) {
		rows[i].raw = calloc((size_t)o.runs, sizeof(double));
		rows[i].val = calloc((size_t)o.runs, sizeof(double));
		rows[i].wraw = calloc((size_t)o.runs, sizeof(double));
		rows[i].wval = calloc((size_t)o.runs, sizeof(double));
		rows[i].nval = 0;
		rows[i].failed = !selected(&rows[i], o.only);
		snprintf(rows[i].note, sizeof(rows[i].note), "%s",
			 rows[i].failed ? "not selected" : "");
	}

	/* Rows measured in another row's child run as often as it does. */
	for (int i = 0; i < nrows; i++) {
		struct bench_row *src;

		if (!rows[i].from)
			continue;
		src = find_row(rows, nrows, rows[i].from, rows[i].variant,
			       rows[i].threads);
		if (!src || src->from || rows[i].from_index < 0 ||
		    rows[i].from_index >= BENCH_EXTRA_MAX) {
			rows[i].failed = 1;
			snprintf(rows[i].note, sizeof(rows[i].note),
				 "no row %s %s to measure it", rows[i].from,
				 rows[i].variant);
			continue;
		}
		rows[i].max_runs = src->max_runs;
		if (src->failed && !rows[i].failed) {
			rows[i].failed = 1;
			snprintf(rows[i].note, sizeof(rows[i].note), "%s",
				 src->note);
		}
	}

	/* Round r measures every row once, in table order, so that a row and
	 * the rows it is compared with see the same state of the machine. */
	for (int r = 0; r < o.runs; r++) {
		fprintf(stderr, "%s: run %d/%d\n", prog, r + 1, o.runs);
		for (int i = 0; i < nrows; i++) {
			struct bench_row *row = &rows[i];
			struct bench_result res;
			struct stat st0 = { 0 }, st1 = { 0 };
			int grew;

			if (row->from || row->failed ||
			    r >= bench_row_runs(row, o.runs))
				continue;
			if (logfd >= 0) {
				dprintf(logfd, "=== %s %s run %d\n", row->name,
					row->variant, r + 1);
				fstat(logfd, &st0);
			}
			run_child(row, &o, logfd, &res);
			if (logfd >= 0 && o.log)
				fstat(logfd, &st1);
			grew = st1.st_size > st0.st_size;
			record(rows, nrows, row, r, &res, grew, &o);
			/* The rows this child measured too. */
			for (int j = 0; j < nrows; j++) {
				struct bench_row *d = &rows[j];
				struct bench_result dr;
				int k = d->from_index;

				if (!d->from || d->failed ||
				    strcmp(d->from, row->name) ||
				    strcmp(d->variant, row->variant) ||
				    d->threads != row->threads)
					continue;
				memset(&dr, 0, sizeof(dr));
				if (!res.ok)
					bench_fail(&dr, "%s", res.note);
				else if (!res.extra_ok[k])
					bench_fail(&dr, "%s", res.extra_note[k][0] ?
						   res.extra_note[k] : "not measured");
				else {
					dr.ok = 1;
					dr.ns_per_op = res.extra[k];
					dr.wall_ns_per_op = res.extra_wall[k];
					snprintf(dr.note, sizeof(dr.note), "%s",
						 res.extra_note[k]);
				}
				record(rows, nrows, d, r, &dr, grew, &o);
			}
		}
	}

	printf("\n%s: %d runs; ns of CPU time of the measuring thread, min and"
	       " median over the runs\n(wall med: median of wall-clock ns)%s\n",
	       prog, o.runs, o.cpu >= 0 ? "" : "; not pinned");
	if (o.cpu >= 0)
		printf("(children pinned on CPU %d)\n", o.cpu);
	printf("%-9s %-9s %3s %8s %9s %9s %9s  %s\n", "row", "variant", "thr",
	       "iters", "min ns", "median", "wall med", "note");
	for (int i = 0; i < nrows; i++)
		print_row(&rows[i], &o);

	jr = open_out(o.out, "rows");
	jq = open_out(o.out, "ratios");
	for (int i = 0; jr && i < nrows; i++)
		write_row_json(jr, &rows[i], &o, prog);

	if (nratios)
		printf("\n%-16s %-11s %8s %8s   %s\n", "ratio", "variant",
		       "median", "of mins", "goal");
	for (int k = 0; k < nratios; k++) {
		const struct bench_ratio *q = &ratios[k];
		int first = 1;

		if (jq) {
			json_str(jq, q->name);
			fprintf(jq, ": {\"program\": ");
			json_str(jq, prog);
			fprintf(jq, ", \"num\": ");
			json_str(jq, q->num);
			fprintf(jq, ", \"den\": ");
			json_str(jq, q->den);
			fprintf(jq, ", \"den_factor\": %g, \"num_threads\": %d, "
				"\"den_threads\": %d, \"goal_max\": ",
				q->den_factor, q->num_threads, q->den_threads);
			json_num(jq, q->goal_max, q->goal_max > 0);
			fputs(", \"by_variant\": [", jq);
		}
		for (int i = 0; i < nrows; i++)
			if (!strcmp(rows[i].name, q->num) &&
			    (!q->num_threads || rows[i].threads == q->num_threads))
				do_ratio(q, &rows[i], rows, nrows, &o, jq, &first);
		if (jq)
			fputs("]}\n", jq);
	}
	printf("\nratio median: median over runs of the per-run ratio (numerator"
	       " and denominator\nfrom the same run); of mins: min(num) / min(den).\n");
	for (int i = 0; i < nrows; i++) {
		int seen = 0;

		for (int j = 0; j < i; j++)
			seen |= !strcmp(rows[i].name, rows[j].name);
		if (rows[i].what && !seen)
			printf("  %-9s %s\n", rows[i].name, rows[i].what);
	}
	fflush(stdout);
	if (jr)
		fclose(jr);
	if (jq)
		fclose(jq);
	if (logfd >= 0)
		close(logfd);
	for (int i = 0; i < nrows; i++) {
		free(rows[i].raw);
		free(rows[i].val);
		free(rows[i].wraw);
		free(rows[i].wval);
	}
	return 0;
}
