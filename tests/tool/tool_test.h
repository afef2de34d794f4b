/* SPDX-License-Identifier: MIT */
/*
 * tool_test.h - what the end-to-end tests of ukprobe share (test_*.c of
 * tests/tool/, each its own Criterion program): a fresh directory $T per
 * test, $U (ukprobe), $P (the test programs of tests/tool/progs/), $PY3,
 * and sh(), which runs a bash script (after sh_prelude, if set) and
 * captures its status, stdout and stderr.
 */
#ifndef UKPROBE_TOOL_TEST_H
#define UKPROBE_TOOL_TEST_H

#include "../support/ukp_test.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef UKP_BUILD_DIR
#define UKP_BUILD_DIR "build"
#endif
#ifndef UKP_SRC_DIR
#define UKP_SRC_DIR "."
#endif

struct res {
	int status;	/* exit status, or 128 + signal */
	char *out;
	char *err;
};

static char tdir[256];
static const char *sh_prelude;	/* bash run before each sh() script */

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return strdup("");
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)n + 1);
	if (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)
		buf[0] = '\0';
	fclose(f);
	return buf;
}

static void setup(void)
{
#ifdef UKP_SAN
	/* The agent is preloaded into programs that are not sanitized. */
	cr_skip_test("ukprobe's end-to-end tests do not run under SAN=1");
#endif
	snprintf(tdir, sizeof(tdir), "/tmp/ukprobe-test-XXXXXX");
	cr_assert_not_null(mkdtemp(tdir));
	setenv("U", UKP_BUILD_DIR "/ukprobe", 1);
	setenv("P", UKP_BUILD_DIR "/tests/tool-progs", 1);
	setenv("T", tdir, 1);
	setenv("LC_ALL", "C", 1);
	setenv("PY3", access("/usr/bin/python3", X_OK) ? "python3" : "/usr/bin/python3", 1);
}

static void teardown(void)
{
	char cmd[512];

	if (tdir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tdir);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", tdir);
	}
}

/* Run a bash script; its stdout and stderr are captured. */
__attribute__((format(printf, 1, 2)))
static struct res sh(const char *fmt, ...)
{
	char full[1024], o[300], e[300], c[300];
	struct res r;
	va_list ap;
	FILE *f;
	int st;

	snprintf(o, sizeof(o), "%s/.out", tdir);
	snprintf(e, sizeof(e), "%s/.err", tdir);
	snprintf(c, sizeof(c), "%s/.cmd.sh", tdir);
	f = fopen(c, "w");
	cr_assert_not_null(f);
	if (sh_prelude)
		fputs(sh_prelude, f);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
	snprintf(full, sizeof(full), "bash '%s' >'%s' 2>'%s'", c, o, e);
	st = system(full);
	r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	r.out = slurp(o);
	r.err = slurp(e);
	return r;
}

static inline int count(const char *s, const char *needle)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The N of "@count[EVENT]: N", or -1. */
static inline long count_value(const char *s, const char *event)
{
	char key[256];
	const char *p;

	snprintf(key, sizeof(key), "@count[%s]: ", event);
	p = strstr(s, key);
	return p ? atol(p + strlen(key)) : -1;
}

/* The kernel's error_log form: the definition, a caret under column col,
 * then the reason and "(NAME)". */
static inline void assert_caret(const char *err, const char *def, int col, const char *name)
{
	char want[1200];

	snprintf(want, sizeof(want), "%s\n%*s^\n", def, col, "");
	cr_assert(strstr(err, want), "no caret at %d under '%s':\n%s", col, def, err);
	snprintf(want, sizeof(want), "(%s)\n", name);
	cr_assert(strstr(strstr(err, def), want), "no %s for '%s':\n%s", name, def, err);
}

#endif
