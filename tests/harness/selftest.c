// SPDX-License-Identifier: MIT
/*
 * selftest.c - the harness's own test: each test's name says how it must
 * end (pass_, fail_, crash_, timeout_, skip_), and check_selftest.sh
 * checks that it did, and the closing counts.  It builds against
 * Criterion too, and must end the same way there: that is the proof that
 * the harness keeps Criterion's semantics for what the suite uses.
 *
 * Plain C and POSIX only: it is also what `make cross-smoke` builds for
 * every architecture and runs under qemu-user.
 */
#include "../support/ukp_test.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

/* ---- pass ------------------------------------------------------------------ */

Test(selftest, pass_plain)
{
	cr_assert(1);
}

Test(selftest, pass_every_macro_true, .timeout = 30)
{
	int one = 1, two = 2;
	const char *s = "abc";
	long neg = -1;

	cr_assert(one, "with a message %d", one);
	cr_expect(one);
	cr_assert_not(0);
	cr_expect_not(0, "message");
	cr_assert_eq(one, 1);
	cr_expect_eq(one + 1, two, "message %s", "here");
	cr_assert_neq(one, two);
	cr_expect_neq(one, two);
	cr_assert_lt(one, two);
	cr_expect_lt(neg, 0);
	cr_assert_leq(one, 1);
	cr_expect_leq(one, two);
	cr_assert_gt(two, one);
	cr_expect_gt(two, one);
	cr_assert_geq(two, 2);
	cr_expect_geq(two, one);
	cr_assert_null(NULL);
	cr_expect_null((void *)0);
	cr_assert_not_null(s);
	cr_expect_not_null(&one);
	cr_assert_str_eq(s, "abc");
	cr_expect_str_eq("x", "x", "message");
	cr_assert_str_neq(s, "abd");
	cr_expect_str_neq(s, "");
	cr_assert_eq(2.5, 2.5);
	cr_assert_eq((unsigned char)200, 200);
	cr_assert_eq(s, s);
	cr_log_info("info %d", 1);
}

static int calls;

static int counted(int v)
{
	calls++;
	return v;
}

/* Tests count the calls of probed functions inside assertions. */
Test(selftest, pass_arguments_evaluated_once, .timeout = 30)
{
	cr_assert_eq(counted(1), counted(1));
	cr_expect_neq(counted(1), counted(2));
	cr_expect_lt(counted(1), counted(2));
	cr_expect_geq(counted(2), counted(2));
	cr_expect(counted(1));
	cr_expect_not(counted(0));
	cr_expect_not_null((void *)(long)counted(1));
	cr_expect_str_eq(counted(1) ? "a" : "b", "a");
	cr_assert_eq(calls, 12, "%d calls", calls);
}

Test(selftest, pass_expected_signal, .signal = SIGSEGV, .timeout = 30)
{
	signal(SIGSEGV, SIG_DFL);	/* (a sanitizer's handler would exit) */
	raise(SIGSEGV);
}

Test(selftest, pass_expected_exit_code, .exit_code = 3, .timeout = 30)
{
	exit(3);
}

Test(selftest, pass_exit_zero_before_the_end, .timeout = 30)
{
	exit(0);
}

static int init_ran;

static void set_init_ran(void)
{
	init_ran = 1;
}

Test(selftest, pass_init_runs_first, .init = set_init_ran, .timeout = 30)
{
	cr_assert_eq(init_ran, 1);
}

static void *true_asserts(void *arg)
{
	for (int i = 0; i < 1000; i++)
		cr_assert_eq(i, i);
	return arg;
}

Test(selftest, pass_asserts_in_threads, .timeout = 30)
{
	pthread_t t[4];

	for (int i = 0; i < 4; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, true_asserts, NULL), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
}

/* A test that leaves a process behind still ends. */
Test(selftest, pass_leaves_a_child, .timeout = 30)
{
	if (fork() == 0) {
		sleep(3);
		_exit(0);
	}
}

/* ---- fail ------------------------------------------------------------------ */

#define FAILS(name, stmt)				\
	Test(selftest, fail_##name, .timeout = 30)	\
	{						\
		int one = 1, two = 2;			\
		const char *s = "abc";			\
		(void)one; (void)two; (void)s;		\
		stmt;					\
	}

FAILS(assert, cr_assert(one == two))
FAILS(expect, cr_expect(one == two, "message %d", one))
FAILS(assert_not, cr_assert_not(one))
FAILS(expect_not, cr_expect_not(one))
FAILS(assert_fail, cr_assert_fail())
FAILS(expect_fail, cr_expect_fail("message %s", s))
FAILS(assert_eq, cr_assert_eq(one, two))
FAILS(expect_eq, cr_expect_eq(one, two, "message"))
FAILS(assert_neq, cr_assert_neq(one, 1))
FAILS(expect_neq, cr_expect_neq(one, 1))
FAILS(assert_lt, cr_assert_lt(two, one))
FAILS(expect_lt, cr_expect_lt(one, one))
FAILS(assert_leq, cr_assert_leq(two, one))
FAILS(expect_leq, cr_expect_leq(two, one))
FAILS(assert_gt, cr_assert_gt(one, one))
FAILS(expect_gt, cr_expect_gt(one, two))
FAILS(assert_geq, cr_assert_geq(one, two))
FAILS(expect_geq, cr_expect_geq(one, two))
FAILS(assert_null, cr_assert_null(s))
FAILS(expect_null, cr_expect_null(s))
FAILS(assert_not_null, cr_assert_not_null(NULL))
FAILS(expect_not_null, cr_expect_not_null(NULL))
FAILS(assert_str_eq, cr_assert_str_eq(s, "abd"))
FAILS(expect_str_eq, cr_expect_str_eq(s, "ab"))
FAILS(assert_str_neq, cr_assert_str_neq(s, "abc"))
FAILS(expect_str_neq, cr_expect_str_neq(s, "abc"))
FAILS(unsigned_vs_negative, cr_expect_eq(0u, -1L))
FAILS(double_eq, cr_expect_eq(0.5, 0.25))

Test(selftest, fail_expect_goes_on, .timeout = 30)
{
	cr_expect(0);
	fprintf(stderr, "selftest: expect goes on\n");
}

static void fini_after_assert(void)
{
	fprintf(stderr, "selftest: fini after assert\n");
}

Test(selftest, fail_assert_stops_and_fini_runs, .fini = fini_after_assert, .timeout = 30)
{
	cr_assert(0);
	fprintf(stderr, "selftest: after assert\n");
}

Test(selftest, fail_exit_status, .timeout = 30)
{
	_exit(3);
}

Test(selftest, fail_missing_signal, .signal = SIGSEGV, .timeout = 30)
{
}

Test(selftest, fail_wrong_exit_code, .exit_code = 3, .timeout = 30)
{
	exit(4);
}

static void *failing_expect(void *arg)
{
	cr_expect_eq(1, 2, "in a thread");
	return arg;
}

static void *failing_assert(void *arg)
{
	cr_assert_eq(1, 2, "in a thread");
	return arg;
}

Test(selftest, fail_expect_in_a_thread, .timeout = 30)
{
	pthread_t t;

	pthread_create(&t, NULL, failing_expect, NULL);
	pthread_join(t, NULL);
}

Test(selftest, fail_assert_in_a_thread, .timeout = 30)
{
	pthread_t t;

	pthread_create(&t, NULL, failing_assert, NULL);
	pthread_join(t, NULL);
}

Test(selftest, fail_skip_after_a_failure, .timeout = 30)
{
	cr_expect(0);
	cr_skip_test("skipped after a failure");
}

/* ---- crash ------------------------------------------------------------------ */

Test(selftest, crash_segv, .timeout = 30)
{
	signal(SIGSEGV, SIG_DFL);
	raise(SIGSEGV);
}

Test(selftest, crash_abort, .timeout = 30)
{
	abort();
}

Test(selftest, fail_other_signal_than_expected, .signal = SIGSEGV, .timeout = 30)
{
	signal(SIGILL, SIG_DFL);
	raise(SIGILL);
}

static void crashing_init(void)
{
	signal(SIGSEGV, SIG_DFL);
	raise(SIGSEGV);
}

Test(selftest, crash_in_init, .init = crashing_init, .timeout = 30)
{
}

static void asserting_init(void)
{
	cr_assert_fail("in .init");
}

/* (Criterion counts a failure in .init as a crash of the setup.) */
Test(selftest, crash_assert_in_init, .init = asserting_init, .timeout = 30)
{
}

/* ---- timeout ------------------------------------------------------------------ */

Test(selftest, timeout_own, .timeout = 1)
{
	sleep(60);
}

#ifdef UKP_TEST_HARNESS
/* (Criterion's timeout sends a signal that can be blocked: it waits for
 * this one forever.  Ours kills.) */
Test(selftest, timeout_with_every_signal_blocked, .timeout = 1)
{
	sigset_t all;

	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	for (;;)
		pause();
}
#endif

Test(selftest, timeout_with_a_child_holding_the_output, .timeout = 1)
{
	if (fork() == 0) {
		sleep(5);
		_exit(0);
	}
	sleep(60);
}

/* ---- skip ------------------------------------------------------------------ */

Test(selftest, skip_in_the_body, .timeout = 30)
{
	cr_skip_test("skipped %s", "here");
	cr_assert_fail("not reached");
}

static void skipping_init(void)
{
	cr_skip_test("skipped in .init");
}

Test(selftest, skip_in_init, .init = skipping_init, .timeout = 30)
{
	cr_assert_fail("not reached");
}

Test(selftest, skip_disabled, .disabled = true)
{
	cr_assert_fail("not reached");
}

/* ---- a suite's settings ----------------------------------------------------- */

static int suite_init_ran;

static void suite_init(void)
{
	suite_init_ran = 1;
}

TestSuite(selftest_suite, .init = suite_init, .timeout = 30);

Test(selftest_suite, pass_suite_init_runs)
{
	cr_assert_eq(suite_init_ran, 1);
}

TestSuite(selftest_slow, .timeout = 1);

Test(selftest_slow, timeout_of_the_suite)
{
	sleep(60);
}
