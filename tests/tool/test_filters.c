// SPDX-License-Identifier: MIT
/*
 * test_filters.c - end-to-end tests of filters ("if ..." at the end of a
 * definition, ftrace's grammar), evaluated in the handlers: exact counts
 * of what passes, strings and globs, and the caret errors of bad filters.
 */
#include "tool_test.h"

TestSuite(filters, .init = setup, .fini = teardown, .timeout = 60);

Test(filters, numbers_exact_counts)
{
	/* target(i) for i in 0..199: 10..19 but 15, and 99: 10 calls. */
	struct res r = sh("$U trace -c -e 'p:calls:target i=%%di:s64 if i >= 10 && "
			  "(i < 20 || i == 99) && !(i == 15)' -- $P/calls count 200");

	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.err, "]: 10\n"), "%s", r.err);
	/* & tests bits; the events shown are those that pass. */
	r = sh("$U trace -e 'p:calls:target i=%%di:u64 if i & 0x40 && i < 0x42' "
	       "-- $P/calls count 200");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.err, " i=64\n") && strstr(r.err, " i=65\n") &&
		  !strstr(r.err, " i=66\n") && !strstr(r.err, " i=63\n"), "%s", r.err);
	/* Signed: a negative bound. */
	r = sh("$U trace -c -e 'p:calls:target i=%%di:s32 if i > -1 && i != 0' "
	       "-- $P/calls count 50");
	cr_assert(strstr(r.err, "]: 49\n"), "%s", r.err);
}

Test(filters, strings_globs_and_comm)
{
	struct res r = sh("$U trace -e 'p:libc.so.6:open f=+0(%%di):string if f ~ \"/e*e\" "
			  "&& comm == cat' -- cat /etc/hostname >/dev/null");

	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.err, "f=\"/etc/hostname\"\n"), "%s", r.err);
	r = sh("$U trace -c -e \"p:libc.so.6:open f=+0(%%di):string if f != '/etc/hostname' "
	       "|| comm ~ 'x[!a]*'\" -- cat /etc/hostname >/dev/null");
	cr_assert(strstr(r.err, "]: 0\n"), "%s", r.err);
}

Test(filters, bad_filters_get_a_caret)
{
	const char *d1 = "p:calls:target i=%di:s64 if j > 3";
	const char *d2 = "p:calls:target i=%di:s64 if";
	const char *d3 = "p:libc.so.6:open f=+0(%di):string if f > 3";
	const char *d4 = "p:calls:target i=%di:s64 if i >";
	const char *d5 = "p:calls:target i=%di:s64 if (i > 3";
	struct res r = sh("$U trace -e '%s' -e '%s' -e '%s' -e '%s' -e '%s' -- $P/calls count 1",
			  d1, d2, d3, d4, d5);

	cr_assert_eq(r.status, 2, "%s", r.err);
	assert_caret(r.err, d1, 28, "BAD_FETCH_ARG");
	assert_caret(r.err, d2, 27, "NO_EP_FILTER");
	assert_caret(r.err, d3, 39, "BAD_TYPE");
	assert_caret(r.err, d4, 31, "BAD_IMM");
	assert_caret(r.err, d5, 28, "NO_EP_FILTER");
	cr_assert(strstr(r.err, "was not run"), "%s", r.err);
}

/* ------------------------------------------------------------------------ */
/* Counts, histograms and latency keyed (--by)                               */
/* ------------------------------------------------------------------------ */

Test(filters, counts_by_tid_comm_pid_and_argument)
{
	/* 3 threads named worker-0..2, 5 calls each. */
	struct res r = sh("$U trace -c --by comm -e 'p:threads:target' -- $P/threads 3 5");

	cr_assert_eq(r.status, 0, "%s", r.err);
	for (int i = 0; i < 3; i++) {
		char want[64];

		snprintf(want, sizeof(want), "@count[p_target_0, worker-%d]: 5\n", i);
		cr_assert(strstr(r.err, want), "%s", r.err);
	}
	r = sh("$U trace -c --by tid -e 'p:threads:target' -- $P/threads 3 5");
	cr_assert_eq(count(r.err, "]: 5\n"), 3, "%s", r.err);
	/* By an argument, with a filter; smallest counts first. */
	r = sh("$U trace -c --by odd -e 'p:calls:target i=%%di:s64 odd=%%di:b1@0/64 if i < 10' "
	       "-- $P/calls count 100");
	cr_assert(strstr(r.err, "@count[p_target_0, 0]: 5\n@count[p_target_0, 1]: 5\n"), "%s",
		  r.err);
	/* By process with -F: the parent and its children apart. */
	r = sh("$U trace -F -c --by pid,comm -e 'p:forker:target' -- $P/forker fork");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.err, ", forker]: "), "%s", r.err);
	/* The same from a recording, keyed afterwards. */
	r = sh("$U trace -c --by tid -o $T/t.ukp -e 'p:threads:target' -- $P/threads 2 7 && "
	       "$U report $T/t.ukp && $U report --by comm $T/t.ukp");
	cr_assert_eq(count(r.out, "]: 7\n"), 4, "%s%s", r.out, r.err);
	cr_assert(strstr(r.out, "@count[p_target_0, worker-1]: 7\n"), "%s", r.out);
	r = sh("$U trace -c --by nosuch -e 'p:threads:target' -- $P/threads 1 1");
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "--by nosuch: not tid, pid, comm"), "%s", r.err);
}

/*
 * Histograms and latency keyed as counts are: --hist NAME --by KEY (one
 * @NAME[EVENT, KEY]: histogram each, as bpftrace's @[comm] = hist(arg)),
 * ukprobe latency --by KEY (one funclatency table each), live and from a
 * recording, text and JSON.
 */
Test(filters, histograms_and_latency_by_key)
{
	/* 3 threads named worker-0..2 call target(0..4): per thread, 0, 1,
	 * two in [2, 4) and one in [4, 8). */
	static const char rows[] =
		"[0]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n"
		"[1]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n"
		"[2, 4)                 2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
		"[4, 8)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n";
	struct res r = sh("$U trace --hist i --by comm -e 'p:threads:target i=%%di:s64' "
			  "-- $P/threads 3 5");

	cr_assert_eq(r.status, 0, "%s", r.err);
	for (int i = 0; i < 3; i++) {
		char want[512];

		snprintf(want, sizeof(want), "@i[p_target_0, worker-%d]:\n%s", i, rows);
		cr_assert(strstr(r.err, want), "%s", r.err);
	}
	/* Keyed, the unkeyed histogram is not printed besides. */
	cr_assert(!strstr(r.err, "@i:"), "%s", r.err);
	/* Counts and histograms keyed at once, JSON. */
	r = sh("$U trace -c --hist i --by comm --format json "
	       "-e 'p:threads:target i=%%di:s64' -- $P/threads 1 2");
	cr_assert(strstr(r.err, "{\"type\":\"counts\",\"by\":[\"comm\"],\"counts\":[{\"event\":"
			 "\"p_target_0\",\"key\":{\"comm\":\"worker-0\"},\"count\":2}]}\n"), "%s", r.err);
	cr_assert(strstr(r.err, "{\"type\":\"hist\",\"name\":\"i\",\"event\":\"p_target_0\","
			 "\"key\":{\"comm\":\"worker-0\"},\"count\":2,\"buckets\":[{\"min\":0,"
			 "\"max\":0,\"count\":1},{\"min\":1,\"max\":1,\"count\":1}]}\n"), "%s", r.err);
	/* Latency per thread name: one table each, 5 calls. */
	r = sh("$U latency --by comm threads:target -- $P/threads 3 5");
	cr_assert_eq(r.status, 0, "%s", r.err);
	for (int i = 0; i < 3; i++) {
		char want[64];

		snprintf(want, sizeof(want), "threads:target [comm=worker-%d]\n", i);
		cr_assert(strstr(r.err, want), "%s", r.err);
	}
	cr_assert_eq(count(r.err, ", count: 5\n"), 3, "%s", r.err);
	cr_assert(!strstr(r.err, "threads:target\n"), "%s", r.err);
	/* From a recording: keyed as it was recorded, or afterwards. */
	r = sh("$U latency -o $T/l.ukp --by comm threads:target -- $P/threads 2 4 && "
	       "$U report --format json $T/l.ukp && $U report --by tid $T/l.ukp");
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert(strstr(r.out, "{\"type\":\"latency\",\"function\":\"threads:target\","
			 "\"key\":{\"comm\":\"worker-1\"},\"unit\":\"nsecs\",\"count\":4,"), "%s", r.out);
	cr_assert_eq(count(r.out, "threads:target [tid="), 2, "%s", r.out);
	/* What cannot be keyed. */
	r = sh("$U latency --by stack threads:target -- $P/threads 1 1");
	cr_assert_eq(r.status, 2, "%s", r.err);
	cr_assert(strstr(r.err, "latency --by stack: tid, pid or comm"), "%s", r.err);
	r = sh("$U trace --by comm -e 'p:threads:target' -- $P/threads 1 1");
	cr_assert_eq(r.status, 2, "%s", r.err);
	cr_assert(strstr(r.err, "--by keys counts or histograms: with -c or --hist NAME"), "%s",
		  r.err);
}

/* ------------------------------------------------------------------------ */
/* Globs, C++ names, many definitions                                        */
/* ------------------------------------------------------------------------ */

Test(filters, glob_over_libc_one_probe_per_function)
{
	/* str* of libc: each function its own event, indirect functions
	 * (strlen) by their names as in the source. */
	struct res r = sh("$U trace -c -e 'p:libc.so.6:str*' -- ls / >/dev/null");

	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_gt(count_value(r.err, "p_strlen_0"), 0, "%s", r.err);
	cr_assert_gt(count_value(r.err, "p_strcmp_0"), 0, "%s", r.err);
	cr_assert(!strstr(r.err, "@count[p_libc"), "unnamed: %s", r.err);
	/* Events too, named after their functions; r: as well. */
	r = sh("$U trace -e 'r:libc.so.6:strdup*' -- ls / >/dev/null");
	cr_assert(strstr(r.err, " r_strdup_0: ("), "%s", r.err);
	/* A glob that matches nothing, in an object loaded at start. */
	r = sh("$U trace -c -e 'p:libc.so.6:no_such_fn_*' -- true");
	cr_assert_eq(r.status, 2, "%s", r.err);
	cr_assert(strstr(r.err, "no function of libc.so.6 matches no_such_fn_*"), "%s", r.err);
}

Test(filters, every_function_of_libz)
{
	/* p:libz.so.1:* over python's zlib module (loaded by dlopen). */
	struct res r;

	if (system("command -v python3 >/dev/null"))
		cr_skip_test("python3 is not installed");
	r = sh("$U trace -c -e 'p:libz.so.1:*' -- python3 -c 'import zlib\n"
	       "for i in range(3): zlib.decompress(zlib.compress(b\"x\" * 10000))'");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(count_value(r.err, "p_deflate_0"), 3, "%s", r.err);
	cr_assert_eq(count_value(r.err, "p_deflateEnd_0"), 3, "%s", r.err);
	cr_assert_eq(count_value(r.err, "p_inflate_0"), 3, "%s", r.err);
	cr_assert_eq(count_value(r.err, "p_compress2_0"), -1, "%s", r.err);
}

Test(filters, cxx_names_in_definitions_and_output)
{
	/* ns::Parser::parse is overloaded: a probe on each. */
	struct res r = sh("$U trace -e 'p:cxx:ns::Parser::parse' -- $P/cxx");

	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "sum=58\n");
	cr_assert_eq(count(r.err, ": (ns::Parser::parse(int)+0x0/"), 3, "%s", r.err);
	cr_assert_eq(count(r.err, ": (ns::Parser::parse(char const*)+0x0/"), 2, "%s", r.err);
	r = sh("$U trace -c -e 'r:cxx:ns::Parser::parse ret=$retval:s64' -- $P/cxx");
	cr_assert_eq(count_value(r.err, "r_ns__Parser__parse_int__0"), 3, "%s", r.err);
	cr_assert_eq(count_value(r.err, "r_ns__Parser__parse_char_const___0"), 2, "%s", r.err);
}

Test(filters, more_than_128_definitions)
{
	/* 300 definitions (the limit was 128), every one counted. */
	struct res r = sh("for i in $(seq 300); do echo \"p:e$i calls:target\"; done > $T/defs && "
			  "$U trace -c -f $T/defs -- $P/calls count 7");

	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(count_value(r.err, "e1"), 7, "%s", r.err);
	cr_assert_eq(count_value(r.err, "e300"), 7, "%s", r.err);
	cr_assert_eq(count(r.err, "]: 7\n"), 300);
}
