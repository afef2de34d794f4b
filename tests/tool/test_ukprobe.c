// SPDX-License-Identifier: MIT
/*
 * test_ukprobe.c - end-to-end tests of the ukprobe command with real
 * programs: gzip, grep, sqlite3, python3 and the small programs of
 * tests/tool/progs/ (built into $(B)/tests/tool-progs/).
 *
 * Each test runs shell commands with $U (ukprobe), $P (the test programs)
 * and $T (a fresh directory) set, and checks the traced program's output
 * and exit status against an untraced run, the event counts where they are
 * known, and the summaries.
 */
#include "../support/ukp_test.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

TestSuite(ukprobe, .init = setup, .fini = teardown, .timeout = 60);

/* Run a bash script; its stdout and stderr are captured. */
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

static int count(const char *s, const char *needle)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static long count_value(const char *s, const char *event)
{
	char key[256];
	const char *p;

	snprintf(key, sizeof(key), "@count[%s]: ", event);
	p = strstr(s, key);
	return p ? atol(p + strlen(key)) : -1;
}

static bool have(const char *prog)
{
	struct res r = sh("command -v %s", prog);

	return r.status == 0;
}

#define NEED(prog) do { if (!have(prog)) cr_skip_test(prog " is not installed"); } while (0)

/* The file offset of a function of one of the test programs, from its
 * unstripped build: nm gives the address, readelf the segment that maps it
 * (the OBJ:0xOFFSET form; stripped-calls has the same layout as calls). */
static unsigned long file_offset_of(const char *prog, const char *sym)
{
	struct res r = sh("addr=$((16#$(nm $P/%s | awk '$3==\"%s\"{print $1}')))\n"
			  "while read -r type off vaddr paddr filesz memsz flags rest; do\n"
			  "  [ \"$type\" = LOAD ] || continue\n"
			  "  case \"$flags $rest\" in *E*) ;; *) continue ;; esac\n"
			  "  if (( addr >= vaddr && addr < vaddr + filesz )); then\n"
			  "    echo $(( addr - vaddr + off )); fi\n"
			  "done < <(readelf -lW $P/%s)", prog, sym, prog);

	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_gt(atol(r.out), 0, "%s: %s", sym, r.out);
	return strtoul(r.out, NULL, 10);
}

/* The kernel's error_log form: the definition, a caret under column col,
 * then the reason and "(NAME)". */
static void assert_caret(const char *err, const char *def, int col, const char *name)
{
	char want[1200];

	snprintf(want, sizeof(want), "%s\n%*s^\n", def, col, "");
	cr_assert(strstr(err, want), "no caret at %d under '%s':\n%s", col, def, err);
	snprintf(want, sizeof(want), "(%s)\n", name);
	cr_assert(strstr(strstr(err, def), want), "no %s for '%s':\n%s", name, def, err);
}

/* ------------------------------------------------------------------------ */
/* Help, check, list-symbols                                                 */
/* ------------------------------------------------------------------------ */

Test(ukprobe, help_for_every_command)
{
	static const char *cmds[] = { "trace", "latency", "list-symbols", "check" };
	struct res r = sh("$U --help");

	cr_assert_eq(r.status, 0);
	cr_assert(strstr(r.out, "Usage: ukprobe COMMAND"));
	for (int i = 0; i < 4; i++) {
		r = sh("$U %s --help", cmds[i]);
		cr_assert_eq(r.status, 0, "%s --help: %d", cmds[i], r.status);
		cr_assert(strstr(r.out, "Usage: ukprobe ") && strstr(r.out, cmds[i]),
			  "%s --help: %s", cmds[i], r.out);
		r = sh("$U help %s", cmds[i]);
		cr_assert_eq(r.status, 0);
	}
	r = sh("$U frobnicate");
	cr_assert_eq(r.status, 2);
}

Test(ukprobe, check_good_and_bad_definitions)
{
	struct res r = sh("$U check -e 'p:libc.so.6:malloc size=%%di:u64' "
			  "-e 'r:libc.so.6:openat ret=$retval:s32'");

	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert(strstr(r.out, "p:ukprobes/"), "%s", r.out);
	cr_assert(strstr(r.out, "libc.so.6"), "%s", r.out);
	cr_assert(strstr(r.out, "return (kretprobe)"), "%s", r.out);

	/* Syntax error: the reason and a caret under the bad register. */
	r = sh("$U check -e 'p:libc.so.6:malloc x=%%zz'");
	cr_assert_eq(r.status, 1);
	cr_assert(strstr(r.err, "BAD_REG_NAME"), "%s", r.err);
	cr_assert(strstr(r.err, "\n                     ^"), "%s", r.err);

	/* Not an instruction boundary (malloc+1), unknown symbol. */
	r = sh("$U check -e 'p:libc.so.6:malloc+1'");
	cr_assert_eq(r.status, 1);
	cr_assert(strstr(r.err, "BAD_INSN_BNDRY"), "%s", r.err);
	r = sh("$U check -e 'p:libc.so.6:no_such_function_here'");
	cr_assert_eq(r.status, 1);
	cr_assert(strstr(r.err, "BAD_PROBE_ADDR"), "%s", r.err);

	/* A bare symbol is looked up in the program given with -x. */
	r = sh("$U check -x $P/calls -e 'p target n=%%di:s64'");
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert(strstr(r.out, "tool-progs/calls: target at"), "%s", r.out);
}

Test(ukprobe, list_symbols)
{
	struct res r = sh("$U list-symbols libc.so.6 malloc");

	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, " malloc\n"), "%s", r.out);
	r = sh("$U list-symbols $P/calls 'target*'");
	cr_assert_eq(r.status, 0);
	cr_assert_eq(count(r.out, " T target"), 3, "%s", r.out);
	/* Without an object: the tool's own loaded objects. */
	r = sh("$U list-symbols elf_begin");
	cr_assert_eq(r.status, 0);
	cr_assert(strstr(r.out, "libelf"), "%s", r.out);
}

/* ------------------------------------------------------------------------ */
/* Real programs                                                             */
/* ------------------------------------------------------------------------ */

Test(ukprobe, gzip_output_unchanged)
{
	struct res r;

	NEED("gzip");
	r = sh("seq 1 200000 > $T/in && gzip -c $T/in > $T/plain; echo $? > $T/plain.rc; "
	       "$U trace -o $T/trace -e 'p:libc.so.6:malloc size=%%di:u64' "
	       "-e 'p:libc.so.6:read fd=%%di:s32 n=%%dx:u64' -- gzip -c $T/in > $T/traced; "
	       "echo $? > $T/traced.rc; cmp $T/plain $T/traced && cmp $T/plain.rc $T/traced.rc "
	       "&& gzip -dc $T/traced | cmp - $T/in");
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	r = sh("cat $T/trace");
	/* gzip reads its input through read(): lines in ftrace's format. */
	cr_assert(count(r.out, "p_libc_so_6_read_0: (read+0x") > 3, "%s", r.out);
	cr_assert(strstr(r.out, "            gzip-"), "%s", r.out);
	cr_assert(strstr(r.out, " n=32768") || strstr(r.out, " n="), "%s", r.out);
	/* gzip -l allocates: malloc sizes in the events. */
	r = sh("gzip -c $T/in > $T/in.gz && $U trace -e 'p:libc.so.6:malloc size=%%di:u64' "
	       "-- gzip -l $T/in.gz");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "/in\n"), "%s", r.out);
	cr_assert(count(r.err, ": (malloc+0x") > 0, "%s", r.err);
	cr_assert(strstr(r.err, " size="), "%s", r.err);
}

Test(ukprobe, grep_openat_return_and_read)
{
	struct res r;

	r = sh("mkdir -p $T/d/a $T/d/b && for i in 1 2 3 4 5 6; do echo \"x needle $i\" > $T/d/a/f$i;"
	       " echo nothing > $T/d/b/g$i; done; grep -r needle $T/d | sort > $T/plain;"
	       "$U trace -o $T/trace -e 'r:libc.so.6:openat ret=$retval:s32' "
	       "-e 'p libc.so.6:read fd=%%di:s32 n=%%dx:u64' -- grep -r needle $T/d | sort > $T/traced;"
	       "cmp $T/plain $T/traced && wc -l < $T/traced");
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert_eq(atoi(r.out), 6);
	r = sh("cat $T/trace");
	/* grep opens each of the 12 files (and the directories) with openat. */
	cr_assert_geq(count(r.out, "r_libc_so_6_openat_0: ("), 12, "%s", r.out);
	cr_assert(strstr(r.out, " <- openat) ret="), "%s", r.out);
	cr_assert_geq(count(r.out, "p_libc_so_6_read_0: (read+0x0/"), 12, "%s", r.out);
}

Test(ukprobe, sqlite3_prepare_in_library)
{
	struct res r;

	NEED("sqlite3");
	r = sh("printf '%%s\\n' 'create table t(a integer, b text);' "
	       "\"insert into t values(1, 'one');\" \"insert into t values(2, 'two');\" "
	       "'select a, b from t order by a;' 'select count(*) from t;' > $T/s.sql;"
	       "sqlite3 :memory: < $T/s.sql > $T/plain;"
	       "$U trace -o $T/trace -e 'p:libsqlite3.so.0:sqlite3_prepare_v2 sql=+0(%%si):string' "
	       "-- sqlite3 :memory: < $T/s.sql > $T/traced; cmp $T/plain $T/traced");
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	r = sh("cat $T/trace");
	cr_assert(strstr(r.out, "sql=\"insert into t values(1, 'one');\""), "%s", r.out);
	cr_assert(strstr(r.out, "sql=\"select count(*) from t;\""), "%s", r.out);
	cr_assert_geq(count(r.out, ": (sqlite3_prepare_v2+0x0/"), 5, "%s", r.out);
}

Test(ukprobe, python_exported_function)
{
	struct res r;
	const char *py = "/usr/bin/python3.11";

	if (access(py, X_OK))
		cr_skip_test("python3.11 is not installed");
	r = sh("%s -c 'import json; print(json.dumps({\"a\": [1, 2]}), sum(map(abs, range(-9, 9))))'"
	       " > $T/plain; echo $? >> $T/plain;"
	       "$U trace -c -e 'p:python3.11:PyObject_Call' -e 'r PyObject_Call' -o $T/counts -- "
	       "%s -c 'import json; print(json.dumps({\"a\": [1, 2]}), sum(map(abs, range(-9, 9))))'"
	       " > $T/traced; echo $? >> $T/traced; cmp $T/plain $T/traced && cat $T/counts", py, py);
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert_gt(count_value(r.out, "p_python3_11_PyObject_Call_0"), 10, "%s", r.out);
	/* Every call returns: as many returns as entries. */
	cr_assert_eq(count_value(r.out, "p_python3_11_PyObject_Call_0"),
		     count_value(r.out, "r_PyObject_Call_0"), "%s", r.out);
}

Test(ukprobe, stripped_code_by_file_offset)
{
	/* The offset of target() from the unstripped twin. */
	unsigned long off = file_offset_of("calls", "target");
	struct res r = sh("nm $P/stripped-calls 2>&1 | grep -q 'no symbols' &&\n"
			  "$U trace -c -e 'p:stripped-calls:0x%lx' -- $P/stripped-calls count 321",
			  off);

	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert(strstr(r.out, "sum="), "%s", r.out);
	cr_assert(strstr(r.err, "]: 321\n"), "%s", r.err);
	r = sh("$U trace -e 'p:stripped-calls:0x%lx' -- $P/stripped-calls count 2", off);
	cr_assert_eq(count(r.err, ": (stripped-calls+0x"), 2, "%s", r.err);
}

/* ------------------------------------------------------------------------ */
/* Exact counts, arguments, formats                                          */
/* ------------------------------------------------------------------------ */

Test(ukprobe, counts_are_exact_and_status_kept)
{
	struct res r = sh("$U trace -c -e 'p:calls:target' -e 'r:calls:target ret=$retval:s64' "
			  "-- $P/calls count 1000 7");

	cr_assert_eq(r.status, 7);
	cr_assert_str_eq(r.out, "sum=1499500\n");
	cr_assert_eq(count_value(r.err, "p_calls_target_0"), 1000, "%s", r.err);
	cr_assert_eq(count_value(r.err, "r_calls_target_0"), 1000, "%s", r.err);

	/* One line per hit; arguments and return values. */
	r = sh("$U trace -e 'p:calls:target i=%%di:s64' -e 'r:calls:target ret=$retval:s64' "
	       "-- $P/calls count 50");
	cr_assert_eq(r.status, 0);
	cr_assert_eq(count(r.err, "p_calls_target_0: (target+0x"), 50, "%s", r.err);
	cr_assert_eq(count(r.err, " <- target) ret="), 50, "%s", r.err);
	cr_assert(strstr(r.err, " i=49\n"), "%s", r.err);
	cr_assert(strstr(r.err, " ret=148\n"), "%s", r.err);
	cr_assert(strstr(r.err, "(main+0x"), "%s", r.err);
}

Test(ukprobe, output_unchanged_stdout_stderr)
{
	struct res r = sh("$P/calls out > $T/o1 2> $T/e1; echo $? > $T/s1;"
			  "$U trace -o $T/trace -e 'p:calls:target' -- $P/calls out > $T/o2 2> $T/e2;"
			  "echo $? > $T/s2; cmp $T/o1 $T/o2 && cmp $T/e1 $T/e2 && cmp $T/s1 $T/s2 "
			  "&& cat $T/s2");
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert_str_eq(r.out, "3\n");
}

Test(ukprobe, bad_pointer_prints_fault)
{
	struct res r = sh("$U trace -e 'p:calls:target_ptr v=+0(%%di):s64' "
			  "-e 'p:calls:target_str s=+0(%%di):string c=$comm' -- $P/calls fault");

	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "1 1 13\n");
	cr_assert(strstr(r.err, " v=(fault)\n"), "%s", r.err);
	cr_assert(strstr(r.err, " v=4242\n"), "%s", r.err);
	cr_assert(strstr(r.err, " s=\"hello ukprobe\" c=\"calls\"\n"), "%s", r.err);
}

Test(ukprobe, json_lines)
{
	struct res r = sh("$U trace --format json -o $T/j -e 'p:calls:target i=%%di:s64' "
			  "-e 'r:calls:target ret=$retval:s64' -- $P/calls count 20 && "
			  "$PY3 -c 'import json,sys\n"
			  "n=0\n"
			  "for l in open(sys.argv[1]):\n"
			  "  o=json.loads(l); n+=1\n"
			  "  assert o[\"comm\"]==\"calls\" and o[\"probe\"] in (\"entry\",\"return\")\n"
			  "print(n)' $T/j");
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert_str_eq(r.out, "sum=590\n40\n");
}

Test(ukprobe, perfetto_trace_parses)
{
	struct res r = sh("$U trace --format perfetto -o $T/p.json -e 'p:calls:target i=%%di:s64' "
			  "-e 'r:calls:target ret=$retval:s64' -- $P/calls count 30 > /dev/null && "
			  "$PY3 -m json.tool $T/p.json > /dev/null && "
			  "$PY3 -c 'import json,sys\n"
			  "t=json.load(open(sys.argv[1]))[\"traceEvents\"]\n"
			  "x=[e for e in t if e[\"ph\"]==\"X\"]\n"
			  "i=[e for e in t if e[\"ph\"]==\"i\"]\n"
			  "assert all(e[\"dur\"]>=0 and e[\"name\"]==\"target\" for e in x)\n"
			  "print(len(x), len(i))' $T/p.json");
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	/* Each return is a complete slice ("X": begin and end together). */
	cr_assert_str_eq(r.out, "30 30\n");
}

Test(ukprobe, hist_of_an_argument)
{
	struct res r = sh("$U trace --hist i -e 'p:calls:target i=%%di:u64' -- $P/calls count 100");

	cr_assert_eq(r.status, 0);
	cr_assert(strstr(r.err, "@i:\n[0]                    1 |"), "%s", r.err);
	cr_assert(strstr(r.err, "[1]                    1 |"), "%s", r.err);
	cr_assert(strstr(r.err, "[64, 128)             36 |@@@@"), "%s", r.err);
	/* No event lines without --events. */
	cr_assert_eq(count(r.err, "p_calls_target_0:"), 0);
}

Test(ukprobe, latency_histogram)
{
	struct res r = sh("$U latency calls:sleepy -- $P/calls sleep 4 3000");

	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "slept 4 times\n");
	cr_assert(strstr(r.err, "     nsecs               : count     distribution"), "%s", r.err);
	cr_assert(strstr(r.err, "count: 4\n"), "%s", r.err);
	/* 3 ms each, at least. */
	cr_assert(strstr(r.err, "   2097152 -> 4194303    : 4 ") ||
		  strstr(r.err, "   4194304 -> 8388607    : "), "%s", r.err);
	r = sh("$U latency -u calls:sleepy -- $P/calls sleep 2 1000");
	cr_assert(strstr(r.err, "     usecs     "), "%s", r.err);
}

Test(ukprobe, drops_are_counted_and_reported)
{
	/* A writer that cannot keep up, a 4 KiB buffer: most records are
	 * dropped, each one counted. */
	struct res r = sh("UKPROBE_TEST_WRITER_SLEEP_MS=300 $U trace -b 4096 -o $T/t "
			  "-e 'p:calls:target i=%%di:s64' -- $P/calls count 20000 && wc -l < $T/t");
	long lines, dropped;
	const char *p;

	cr_assert_eq(r.status, 0, "%s", r.err);
	p = strstr(r.err, "ukprobe: ");
	cr_assert_not_null(p, "%s", r.err);
	dropped = atol(p + 9);
	cr_assert(strstr(r.err, " events dropped"), "%s", r.err);
	lines = atol(strchr(r.out, '\n') + 1);
	cr_assert_gt(dropped, 0);
	cr_assert_eq(lines + dropped, 20000, "%ld + %ld", lines, dropped);
}

/* ------------------------------------------------------------------------ */
/* Threads, processes, signals, dlopen                                       */
/* ------------------------------------------------------------------------ */

Test(ukprobe, multithreaded_program)
{
	struct res r = sh("$U trace -c -e 'p:threads:target' -- $P/threads 4 2500");

	cr_assert_eq(r.status, 0);
	cr_assert_str_eq(r.out, "total=12505000\n");
	cr_assert_eq(count_value(r.err, "p_threads_target_0"), 10000, "%s", r.err);
	/* Events of several threads, each in its thread's name and tid. */
	r = sh("$U trace -o $T/t -e 'p:threads:target' -- $P/threads 3 100 && "
	       "grep -c 'p_threads_target_0' $T/t && awk '{print $1}' $T/t | sort -u | wc -l");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "total=15150\n300\n3\n");
	/* The threads name themselves: the lines say so. */
	r = sh("awk '{print $1}' $T/t | sed 's/-[0-9]*$//' | sort -u");
	cr_assert_str_eq(r.out, "worker-0\nworker-1\nworker-2\n");
}

Test(ukprobe, fork_without_and_with_follow)
{
	struct res r = sh("$U trace -c -e 'p:forker:target' -- $P/forker fork");

	cr_assert_eq(r.status, 0);
	cr_assert(strstr(r.out, "child sum=8\n") && strstr(r.out, "parent sum=6"), "%s", r.out);
	cr_assert_eq(count_value(r.err, "p_forker_target_0"), 2, "%s", r.err);
	r = sh("$U trace -F -c -e 'p:forker:target' -- $P/forker fork");
	cr_assert_eq(count_value(r.err, "p_forker_target_0"), 5, "%s", r.err);
	/* Event lines of the child carry its own pid. */
	r = sh("$U trace -F -e 'p:forker:target' -- $P/forker fork");
	cr_assert_eq(count(r.err, "p_forker_target_0:"), 5, "%s", r.err);
	/* Neither parent nor child sees ukprobe's variables. */
	r = sh("$U trace -F -e 'p:forker:target' -- $P/forker env");
	cr_assert(strstr(r.out, "child: clean\n") && strstr(r.out, "parent: clean\n"), "%s", r.out);
}

Test(ukprobe, exec_spawn_system_follow)
{
	struct res r = sh("$U trace -c -e 'p:forker:target' -e 'p:calls:target' "
			  "-- $P/forker exec $P/calls count 4");

	cr_assert_eq(r.status, 0);
	cr_assert(strstr(r.out, "sum=22\n"), "%s", r.out);
	cr_assert_eq(count_value(r.err, "p_forker_target_0"), 2, "%s", r.err);
	cr_assert_eq(count_value(r.err, "p_calls_target_0"), 0, "%s", r.err);
	cr_assert(strstr(r.err, "never placed"), "%s", r.err);
	r = sh("$U trace -F -c -e 'p:forker:target' -e 'p:calls:target' "
	       "-- $P/forker exec $P/calls count 4");
	cr_assert_eq(count_value(r.err, "p_calls_target_0"), 4, "%s", r.err);
	r = sh("$U trace -F -c -e 'p:calls:target' -- $P/forker spawn $P/calls count 5");
	cr_assert_eq(count_value(r.err, "p_calls_target_0"), 5, "%s", r.err);
	r = sh("$U trace -F -c -e 'p:calls:target' -- $P/forker system '$P/calls count 6'");
	cr_assert_eq(count_value(r.err, "p_calls_target_0"), 6, "%s", r.err);
	r = sh("$U trace -c -e 'p:calls:target' -- $P/forker system '$P/calls count 6'");
	cr_assert_eq(count_value(r.err, "p_calls_target_0"), 0, "%s", r.err);
	/* The process itself execs: still traced (as strace without -f). */
	r = sh("$U trace -c -e 'p:calls:target' -- env X=1 $P/calls count 7");
	cr_assert_eq(count_value(r.err, "p_calls_target_0"), 7, "%s", r.err);
	/* The environment the program sees is its own. */
	r = sh("env | grep -v '^_=' | sort > $T/e1; $U trace -e 'p:calls:target' -- env "
	       "| grep -v '^_=' | sort > $T/e2; diff $T/e1 $T/e2");
	cr_assert_eq(r.status, 0, "%s", r.out);
}

/*
 * A probe on execve hits in the children of posix_spawn() (make starts its
 * recipes so), system() and popen(), which run in the parent's memory
 * until they exec: each child execs as without the probe, and the hits are
 * the parent's.
 */
Test(ukprobe, execve_probe_in_spawned_children)
{
	struct res r;

	r = sh("printf 'all: a b c\\na:\\n\\t@/bin/true\\nb:\\n\\t@echo b >/dev/null\\n"
	       "c:\\n\\t@/bin/true c\\n' > $T/Makefile; command -v make");
	if (r.status)
		cr_skip_test("make is not installed");
	r = sh("$U trace -c -e 'p:libc.so.6:execve' -- make -s -f $T/Makefile");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(count_value(r.err, "p_libc_so_6_execve_0"), 3, "%s", r.err);
	/* glibc's spawn munmaps the child's stack with every signal blocked:
	 * a probe there killed make itself. */
	r = sh("$U trace -c -e 'p:libc.so.6:munmap' -- make -s -f $T/Makefile");
	cr_assert_eq(r.status, 0, "%s", r.err);
	r = sh("$U trace -c -e 'p:libc.so.6:execve' -- $P/forker spawn /bin/true");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "child status=0\n"), "%s", r.out);
	cr_assert_eq(count_value(r.err, "p_libc_so_6_execve_0"), 1, "%s", r.err);
	r = sh("$U trace -c -e 'p:libc.so.6:execve' -- $P/forker system 'exit 3'");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "child status=768\n"), "%s", r.out);
	cr_assert_eq(count_value(r.err, "p_libc_so_6_execve_0"), 1, "%s", r.err);
	/* With --follow-fork the children are traced too. */
	r = sh("$U trace -F -c -e 'p:libc.so.6:execve' -e 'p:calls:target' -- "
	       "$P/forker spawn $P/calls count 5");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(count_value(r.err, "p_calls_target_0"), 5, "%s", r.err);
	cr_assert_eq(count_value(r.err, "p_libc_so_6_execve_0"), 1, "%s", r.err);
}

/*
 * The functions libukprobes replaces (preloaded before libc): a probe by
 * their name is on the replacement the program calls; one on libc's own
 * fires where libukprobes has libc do the work (libc's sigprocmask() calls
 * its pthread_sigmask(), its signal() its sigaction(), as without us).
 */
Test(ukprobe, probes_on_replaced_signal_functions)
{
	struct res r = sh("$U trace -c -e 'p sigprocmask' -e 'p pthread_sigmask' -e 'p signal' "
			  "-e 'p sigaction' -e 'p:libc.so.6:sigprocmask' "
			  "-e 'p:libc.so.6:pthread_sigmask' -e 'p:libc.so.6:sigaction' -- $P/sigcalls");

	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "done\n");
	cr_expect_eq(count_value(r.err, "p_sigprocmask_0"), 5, "%s", r.err);
	cr_expect_eq(count_value(r.err, "p_pthread_sigmask_0"), 6, "%s", r.err);
	cr_expect_eq(count_value(r.err, "p_signal_0"), 7, "%s", r.err);
	cr_expect_eq(count_value(r.err, "p_sigaction_0"), 8, "%s", r.err);
	cr_expect_eq(count_value(r.err, "p_libc_so_6_sigprocmask_0"), 5, "%s", r.err);
	cr_expect_eq(count_value(r.err, "p_libc_so_6_pthread_sigmask_0"), 11, "%s", r.err);
	cr_expect_eq(count_value(r.err, "p_libc_so_6_sigaction_0"), 15, "%s", r.err);
}

/*
 * A program with its own SIGTRAP handler, using libukprobes through
 * dlopen() (libukprobes then interposes none of its calls): a handler
 * installed before is chained; one installed after the registration, with
 * libc's sigaction() or the bare system call, is noticed at the next
 * registration, chained, and said; the probes keep working and the
 * program's own int3 reaches its handler.
 */
Test(ukprobe, own_sigtrap_handler_with_libukprobes_dlopened)
{
	static const char *const modes[] = { "libc-before", "raw-before", "libc-after",
					     "raw-after" };

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		struct res r = sh("$P/trapowner %s/libukprobes.so %s", UKP_BUILD_DIR, modes[i]);

		cr_expect_eq(r.status, 0, "%s: %s%s", modes[i], r.out, r.err);
		cr_expect(strstr(r.out, "hits=10 traps=1 sum=145\n"), "%s: %s", modes[i], r.out);
		cr_expect(strstr(r.out, "log: ukprobes: loaded after libc"), "%s: %s", modes[i],
			  r.out);
		if (strstr(modes[i], "after"))
			cr_expect(strstr(r.out, "SIGTRAP handler was replaced") &&
				  strstr(r.out, "taken back"), "%s: %s", modes[i], r.out);
	}
}

/*
 * Under gdb: the probe hits are SIGTRAPs gdb must pass on, and gdb passes
 * either none ("handle SIGTRAP nopass", the default: the program cannot go
 * on) or all, its own too ("pass": its breakpoint on the dynamic linker
 * kills any program before main).  tools/gdb/ukprobes.py's commands pass
 * on those of an int3 gdb did not put there: the program runs as without
 * gdb, stopping at a gdb breakpoint in its own SIGTRAP handler, and the
 * library has said it
 * is traced.
 */
Test(ukprobe, under_gdb_with_its_helper)
{
	struct res r = sh("command -v gdb");

	if (r.status)
		cr_skip_test("gdb is not installed");
	r = sh("gdb -batch -nx -x %s/tools/gdb/ukprobes.py "
	       "-ex 'set environment LD_PRELOAD %s/libukprobes.so' -ex 'break on_trap' "
	       "-ex ukprobes-run -ex delete -ex ukprobes-continue "
	       "--args $P/trapowner %s/libukprobes.so preloaded",
	       UKP_SRC_DIR, UKP_BUILD_DIR, UKP_BUILD_DIR);
	cr_expect(strstr(r.out, "Breakpoint 1, on_trap"), "%s%s", r.out, r.err);
	cr_expect(strstr(r.out, "hits=10 traps=1 sum=145\n"), "%s%s", r.out, r.err);
	cr_expect(strstr(r.out, "log: ukprobes: traced by pid"), "%s", r.out);
}

Test(ukprobe, program_with_its_own_sigsegv_handler)
{
	struct res r = sh("$U trace -c -e 'p:sigsegv:target' -e 'p:sigsegv:crash' -- $P/sigsegv 6");

	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "caught=6 sum=57\n");
	cr_assert_eq(count_value(r.err, "p_sigsegv_target_0"), 6, "%s", r.err);
	cr_assert_eq(count_value(r.err, "p_sigsegv_crash_0"), 6, "%s", r.err);
}

Test(ukprobe, dlopen_placed_at_load_and_never_placed_reported)
{
	struct res r = sh("$U trace -c -e 'p:libdltarget.so:dl_target' -e 'p:libnever.so:foo' "
			  "-- $P/dl $P/libdltarget.so 10");

	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "dl sum=225\n");
	/* 10 calls, and the one in the library's constructor: the probe is
	 * in place before the constructors run. */
	cr_assert_eq(count_value(r.err, "p_libdltarget_so_dl_target_0"), 11, "%s", r.err);
	cr_assert(strstr(r.err, "p:libnever.so:foo: never placed: libnever.so was never loaded"),
		  "%s", r.err);
}

Test(ukprobe, bad_definitions_stop_before_running)
{
	struct res r = sh("$U trace -e 'p:libc.so.6:no_such_function_here' -- echo ran");

	cr_assert_eq(r.status, 2);
	cr_assert_str_eq(r.out, "");
	assert_caret(r.err, "p:libc.so.6:no_such_function_here", 2, "BAD_PROBE_ADDR");
	r = sh("$U trace -e 'p:libc.so.6:malloc %%zz' -- echo ran");
	cr_assert_eq(r.status, 2);
	cr_assert_str_eq(r.out, "");
	cr_assert(strstr(r.err, "BAD_REG_NAME"), "%s", r.err);
	/* Killed by a signal: ukprobe dies of the same signal. */
	r = sh("$U trace -e 'p:calls:target' -- bash -c 'kill -TERM $$'");
	cr_assert_eq(r.status, 128 + 15);
}

Test(ukprobe, return_probe_maxactive_and_missed)
{
	/* fib(15): 1973 calls, up to 15 in flight.  The default MAXACTIVE
	 * (max(10, 2 * CPUs)) runs out: the misses are counted, reported,
	 * and add up; r32 catches them all. */
	struct res r = sh("$U trace -c -e 'p:calls:fib' -e 'r:few calls:fib' -e 'r32:all calls:fib' "
			  "-- $P/calls fib 15");
	long few, missed;
	const char *p;

	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "fib=610\n");
	cr_assert_eq(count_value(r.err, "p_calls_fib_0"), 1973, "%s", r.err);
	cr_assert_eq(count_value(r.err, "all"), 1973, "%s", r.err);
	few = count_value(r.err, "few");
	p = strstr(r.err, "ukprobe: few: ");
	if (few == 1973) {
		cr_assert_null(p, "%s", r.err);
		return;	/* many CPUs: the default was enough */
	}
	cr_assert_not_null(p, "%s", r.err);
	missed = atol(p + strlen("ukprobe: few: "));
	cr_assert_eq(few + missed, 1973, "%s", r.err);
	cr_assert(strstr(r.err, "hits missed"), "%s", r.err);
}

Test(ukprobe, thousands_of_short_lived_threads)
{
	/* Each thread claims a buffer; those of exited threads are reused. */
	struct res r = sh("$U trace -o $T/t -e 'p:threads:target' -- $P/threads -s 3000 && "
			  "wc -l < $T/t && awk '{print $1}' $T/t | sort -u | wc -l");

	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "threads=3000 total=3000\n3000\n3000\n");
	cr_assert(!strstr(r.err, "dropped"), "%s", r.err);
}

Test(ukprobe, dlclose_and_dlopen_again)
{
	/* Unloaded: the probes are taken out (and the records that point
	 * into the object written while it can be symbolized); loaded
	 * again: placed again.  3 rounds of the constructor's call + 4. */
	struct res r = sh("$U trace -c --events -e 'p:libdltarget.so:dl_target' "
			  "-e 'r:libdltarget.so:dl_target ret=$retval:s64' "
			  "-- $P/dl $P/libdltarget.so 4 3");

	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "dl sum=90\n");
	cr_assert_eq(count_value(r.err, "p_libdltarget_so_dl_target_0"), 15, "%s", r.err);
	cr_assert_eq(count_value(r.err, "r_libdltarget_so_dl_target_0"), 15, "%s", r.err);
	cr_assert_eq(count(r.err, ": (dl_target+0x0/"), 15, "%s", r.err);
	cr_assert_eq(count(r.err, " <- dl_target) ret="), 15, "%s", r.err);
}

/* ------------------------------------------------------------------------ */
/* Bad probe points: refused before anything runs                            */
/* ------------------------------------------------------------------------ */

/*
 * Each definition is refused by `trace` before the program runs (status 2,
 * none of its output) and by `check`, with the kernel's error_log caret.
 * Before: the unknown symbol had no caret, the bad event name was a
 * BAD_PROBE_ADDR, calls:target+6 was placed in the next function,
 * calls:0xOFF+2 had no caret, and in stripped-calls (no symbol) the probe
 * went inside the instruction: the program died of SIGILL (or computed a
 * wrong result); r at a file offset that is no function entry was placed.
 */
Test(ukprobe, bad_points_stop_before_running)
{
	unsigned long off = file_offset_of("calls", "target");
	char in_insn[64], in_insn_stripped[64], ret_mid[64];
	struct {
		const char *def;
		int col;
		const char *name;
	} cases[] = {
		{ "p:libc.so.6:no_such_fn", 2, "BAD_PROBE_ADDR" },
		{ "p:calls:no_such_fn", 2, "BAD_PROBE_ADDR" },
		{ "p:bad-name target", 2, "BAD_EVENT_NAME" },
		{ "p:grp/bad-name target", 6, "BAD_EVENT_NAME" },
		{ "p:getpid+4 target", 2, "BAD_EVENT_NAME" },
		{ "r:calls:target+1", 2, "BAD_RETPROBE" },
		{ "p calls:target+6", 2, "BAD_PROBE_ADDR" },
		{ "p target+6", 2, "BAD_PROBE_ADDR" },
		{ "p calls:target+2", 2, "BAD_INSN_BNDRY" },
		{ in_insn, 8, "BAD_INSN_BNDRY" },
		{ in_insn_stripped, 17, "BAD_INSN_BNDRY" },
		{ ret_mid, 2, "BAD_RETPROBE" },
	};

	/* target(): lea 0x1(%rdi,%rdi,2),%rax (5 bytes); ret. */
	snprintf(in_insn, sizeof(in_insn), "p:calls:0x%lx", off + 2);
	snprintf(in_insn_stripped, sizeof(in_insn_stripped), "p:stripped-calls:0x%lx", off + 2);
	snprintf(ret_mid, sizeof(ret_mid), "r:stripped-calls:0x%lx", off + 5);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *prog = strstr(cases[i].def, "stripped") ? "stripped-calls" : "calls";
		struct res r = sh("$U trace -c -e '%s' -- $P/%s count 3", cases[i].def, prog);

		cr_assert_eq(r.status, 2, "%s: status %d\n%s%s", cases[i].def, r.status, r.out, r.err);
		cr_assert_str_eq(r.out, "", "%s: the program ran", cases[i].def);
		assert_caret(r.err, cases[i].def, cases[i].col, cases[i].name);
		cr_assert(strstr(r.err, "was not run"), "%s", r.err);

		r = sh("$U check -x $P/%s -e '%s'", prog, cases[i].def);
		cr_assert_eq(r.status, 1, "check %s: status %d\n%s%s", cases[i].def, r.status,
			     r.out, r.err);
		assert_caret(r.err, cases[i].def, cases[i].col, cases[i].name);
	}

	/* The same points, on boundaries and entries: good. */
	snprintf(in_insn_stripped, sizeof(in_insn_stripped), "p:stripped-calls:0x%lx", off + 5);
	snprintf(ret_mid, sizeof(ret_mid), "r:stripped-calls:0x%lx", off);
	{
		struct res r = sh("$U trace -c -e '%s' -e '%s' -- $P/stripped-calls count 3",
				  in_insn_stripped, ret_mid);

		cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
		cr_assert_str_eq(r.out, "sum=12\n");
		cr_assert_eq(count(r.err, "]: 3\n"), 2, "%s", r.err);
		/* "GRP/" alone: the kernel (since 6.0) makes the event name. */
		r = sh("$U trace -c -e 'p:grp/ target' -- $P/calls count 3");
		cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
		cr_assert_eq(count_value(r.err, "p_target_0"), 3, "%s", r.err);
	}
}

/*
 * Objects loaded later (dlopen): the definitions wait, the program runs,
 * and a bad point in the object is an error line with the caret once it
 * is loaded.  Before: +1 said "cannot place the probe: Invalid or
 * incomplete multibyte or wide character (EILSEQ)", +5 was placed in the
 * library's constructor, the unknown symbol had no caret.
 */
Test(ukprobe, bad_points_in_objects_loaded_later)
{
	struct res r = sh("$U trace -c -e 'p:libdltarget.so:dl_target+1' "
			  "-e 'p:libdltarget.so:dl_target+5' -e 'p:libdltarget.so:no_such_fn' "
			  "-e 'p:libdltarget.so:dl_target' -e 'p:libnever.so:foo' "
			  "-- $P/dl $P/libdltarget.so 10");

	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "dl sum=225\n");
	cr_assert_eq(count_value(r.err, "p_libdltarget_so_dl_target_0"), 11, "%s", r.err);
	cr_assert_eq(count_value(r.err, "p_libdltarget_so_dl_target_1"), 0, "%s", r.err);
	cr_assert_eq(count_value(r.err, "p_libdltarget_so_dl_target_5"), 0, "%s", r.err);
	assert_caret(r.err, "p:libdltarget.so:dl_target+1", 2, "BAD_INSN_BNDRY");
	assert_caret(r.err, "p:libdltarget.so:dl_target+5", 2, "BAD_PROBE_ADDR");
	assert_caret(r.err, "p:libdltarget.so:no_such_fn", 2, "BAD_PROBE_ADDR");
	cr_assert(strstr(r.err, "ukprobe: p:libnever.so:foo: never placed: libnever.so was "
			 "never loaded\n"), "%s", r.err);

	/* A program the traced one execs: the same, in the new image. */
	{
		unsigned long off = file_offset_of("calls", "target");
		char in_insn[64];

		snprintf(in_insn, sizeof(in_insn), "p:calls:0x%lx", off + 2);
		r = sh("$U trace -c -e '%s' -e 'p calls:target+6' -e 'p:calls:target' "
		       "-- env $P/calls count 4", in_insn);
		cr_assert_eq(r.status, 0, "%s", r.err);
		cr_assert_str_eq(r.out, "sum=22\n");
		cr_assert_eq(count_value(r.err, "p_calls_target_0"), 4, "%s", r.err);
		assert_caret(r.err, in_insn, 8, "BAD_INSN_BNDRY");
		assert_caret(r.err, "p calls:target+6", 2, "BAD_PROBE_ADDR");
	}
}

/* ------------------------------------------------------------------------ */
/* The program's environment                                                 */
/* ------------------------------------------------------------------------ */

/*
 * bash takes its variables from the environment before main() with its own
 * getenv()/setenv(): before, `bash -c env` under ukprobe showed LD_PRELOAD,
 * LD_AUDIT, GLIBC_TUNABLES and the UKPROBE_AGENT_* variables.
 */
Test(ukprobe, environment_is_the_programs_own)
{
	static const char *const scripts[] = {
		"env",			/* bash execs env itself: traced again */
		"env; true",		/* a forked child execs it */
		"echo \"$LD_PRELOAD|$LD_AUDIT|$GLIBC_TUNABLES|${!UKPROBE_*}\"",
	};

	for (int i = 0; i < 3; i++) {
		for (int follow = 0; follow < 2; follow++) {
			struct res r = sh("bash -c '%s' | grep -v '^_=' | sort > $T/e1;"
					  "$U trace %s -e 'p:calls:target' -- bash -c '%s' "
					  "| grep -v '^_=' | sort > $T/e2; diff $T/e1 $T/e2",
					  scripts[i], follow ? "-F" : "", scripts[i]);

			cr_assert_eq(r.status, 0, "bash -c '%s'%s:\n%s%s", scripts[i],
				     follow ? " -F" : "", r.out, r.err);
		}
	}
}

/*
 * The user's own LD_PRELOAD, GLIBC_TUNABLES and UKPROBE_AGENT_DIR: in
 * effect and visible exactly as set, in the program and in the children it
 * starts, which -F still traces.  Before: bash saw ukprobe's values, and a
 * traced child lost UKPROBE_AGENT_DIR.
 */
Test(ukprobe, users_own_preload_kept)
{
	struct res r = sh("export LD_PRELOAD=$P/libuserpreload.so "
			  "GLIBC_TUNABLES=glibc.malloc.perturb=0 UKPROBE_AGENT_DIR=%s;"
			  "bash -c 'env | grep -E \"^(LD_|GLIBC_|UKPROBE)\" | sort' > $T/e1;"
			  "$U trace -F -c -e 'p:calls:target' -- bash -c '"
			  "env | grep -E \"^(LD_|GLIBC_|UKPROBE)\" | sort; "
			  "$P/calls count 3 > /dev/null; "
			  "bash -c \"echo child \\$LD_PRELOAD \\$GLIBC_TUNABLES\"' > $T/e2;"
			  "cat $T/e1 $T/e2", UKP_BUILD_DIR);

	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	{
		char want[2048];

		snprintf(want, sizeof(want),
			 "GLIBC_TUNABLES=glibc.malloc.perturb=0\n"
			 "LD_PRELOAD=%s/tests/tool-progs/libuserpreload.so\n"
			 "UKPROBE_AGENT_DIR=%s\n", UKP_BUILD_DIR, UKP_BUILD_DIR);
		cr_assert(!strncmp(r.out, want, strlen(want)), "untraced:\n%s", r.out);
		cr_assert(!strncmp(r.out + strlen(want), want, strlen(want)), "traced:\n%s",
			  r.out);
		snprintf(want, sizeof(want), "child %s/tests/tool-progs/libuserpreload.so "
			 "glibc.malloc.perturb=0\n", UKP_BUILD_DIR);
		cr_assert(strstr(r.out, want), "%s", r.out);
	}
	/* In effect: in bash, env, calls and the inner bash. */
	cr_assert(strstr(r.err, "userpreload in bash\n"), "%s", r.err);
	cr_assert(strstr(r.err, "userpreload in env\n"), "%s", r.err);
	cr_assert(strstr(r.err, "userpreload in calls\n"), "%s", r.err);
	cr_assert_eq(count_value(r.err, "p_calls_target_0"), 3, "%s", r.err);
}

/*
 * A program the agent cannot start in (statically linked) gets the
 * environment unchanged: started by ukprobe, exec'd by the traced program,
 * or spawned with -F.  Before: ukprobe's LD_PRELOAD, LD_AUDIT,
 * GLIBC_TUNABLES and UKPROBE_AGENT_* stayed in its environment.
 */
Test(ukprobe, static_programs_get_the_environment_unchanged)
{
	static const char *const cmds[] = {
		"$U trace -e 'p:calls:target' -- $P/static-printenv",
		"$U trace -e 'p:calls:target' -- bash -c 'exec $P/static-printenv'",
		"$U trace -F -e 'p:calls:target' -- bash -c '$P/static-printenv; true'",
		"$U trace -F -e 'p:calls:target' -- $P/forker spawn $P/static-printenv",
	};

	for (int i = 0; i < 4; i++) {
		struct res r = sh("%s", cmds[i]);

		cr_assert(!strncmp(r.out, "none\n", 5), "%s:\n%s%s", cmds[i], r.out, r.err);
	}
	/* The dynamic twin is traced, and sees its environment as it was. */
	{
		struct res r = sh("$U trace -F -c -e 'p:printenv:main' -- "
				  "$P/forker spawn $P/printenv");

		cr_assert(strstr(r.out, "none\n"), "%s%s", r.out, r.err);
		cr_assert_eq(count_value(r.err, "p_printenv_main_0"), 1, "%s", r.err);
	}
}

/* ------------------------------------------------------------------------ */
/* JSON: UTF-8 strings                                                       */
/* ------------------------------------------------------------------------ */

/*
 * Strings are UTF-8 in the JSON and Perfetto output; bytes that are not
 * UTF-8 are escaped (\udcXX, as Python's surrogateescape); every file
 * parses.  The thread name is cut by the kernel inside the 'é' (15 bytes).
 * Before: "€" came out as \u00e2\u0082\u00ac.
 */
static const char json_check_py[] =
	"import json,sys\n"
	"raw=open(sys.argv[1],'rb').read()\n"
	"text=raw.decode('utf-8')\n"
	"assert '\\u20ac' in text, 'euro sign not written as UTF-8'\n"
	"if sys.argv[2]=='json':\n"
	"  evs=[json.loads(l) for l in text.splitlines()]\n"
	"  evs=[(e['comm'],e['args']['s']) for e in evs if e.get('event')]\n"
	"else:\n"
	"  t=json.loads(text)['traceEvents']\n"
	"  names={e['tid']:e['args']['name'] for e in t if e['name']=='thread_name'}\n"
	"  evs=[(names[e['tid']],e['args']['values']['s']) for e in t if e['ph']=='i']\n"
	"assert len(evs)==1, evs\n"
	"c,s=evs[0]\n"
	"b=lambda x: x.encode('utf-8','surrogateescape')\n"
	"assert b(s)==b'\\xe2\\x82\\xac \\xff \"q\\\\ \\xc3', ascii(s)\n"
	"assert b(c)==b'a'*14+b'\\xc3', ascii(c)\n"
	"print('ok')\n";

Test(ukprobe, json_strings_are_utf8)
{
	FILE *f;
	char py[300];

	snprintf(py, sizeof(py), "%s/check.py", tdir);
	f = fopen(py, "w");
	cr_assert_not_null(f);
	fputs(json_check_py, f);
	fclose(f);
	for (int perfetto = 0; perfetto < 2; perfetto++) {
		struct res r = sh("$U trace --format %s -o $T/j -e 'p:calls:target_str s=+0(%%di):string' "
				  "-- $P/calls str $'\\xe2\\x82\\xac \\xff \"q\\\\ \\xc3' "
				  "$'aaaaaaaaaaaaaa\\xc3\\xa9' && $PY3 $T/check.py $T/j %s",
				  perfetto ? "perfetto" : "json", perfetto ? "perfetto" : "json");

		cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
		cr_assert_str_eq(r.out, "len=11\nok\n", "%s", r.err);
	}
	/* The summaries: an object path with a quote and a UTF-8 name. */
	{
		struct res r = sh("f=\"$T/we\\\"ird\"$'\\xe2\\x82\\xac'; cp $P/calls \"$f\" && "
				  "$U latency --format json -o $T/l \"$f:target\" -- \"$f\" count 3 && "
				  "$U trace -c --hist i --format json -o $T/c "
				  "-e \"p:$f:target i=%%di:u64\" -- \"$f\" count 3 && "
				  "$PY3 -c 'import json,sys\n"
				  "l=[json.loads(x) for x in open(sys.argv[1],encoding=\"utf-8\")]\n"
				  "c=[json.loads(x) for x in open(sys.argv[2],encoding=\"utf-8\")]\n"
				  "assert l[0][\"function\"].endswith(\"we\\\"ird\\u20ac:target\"), l\n"
				  "assert l[0][\"count\"]==3 and c[0][\"type\"]==\"counts\", (l, c)\n"
				  "print(\"ok\")' $T/l $T/c");

		cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
		cr_assert_str_eq(r.out, "sum=12\nsum=12\nok\n", "%s", r.err);
	}
}
