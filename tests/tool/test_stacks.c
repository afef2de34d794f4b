// SPDX-License-Identifier: MIT
/*
 * test_stacks.c - end-to-end tests of --stack: user stacks under the
 * events (ftrace's " => " lines), hits per stack (-c --stack), folded
 * stacks (--format folded, live and from a recording), of the test
 * programs (exact recursion) and of a real program (ls).
 */
#include "tool_test.h"

TestSuite(stacks, .init = setup, .fini = teardown, .timeout = 60);

Test(stacks, under_each_event)
{
	struct res r = sh("$U trace --stack -e 'p:calls:target' -- $P/calls count 2");

	cr_assert_eq(r.status, 0, "%s", r.err);
	/* The probe's function, its caller, down to _start. */
	cr_assert_eq(count(r.err, "\n => target+0x0/0x6 [calls]\n => main+0x"), 2, "%s", r.err);
	cr_assert_eq(count(r.err, " => _start+0x"), 2, "%s", r.err);
}

Test(stacks, recursion_folded_and_counted)
{
	/* fib(5): 15 calls, by depth 1, 2, 4, 6, 2. */
	struct res r = sh("$U trace --format folded -o $T/f -e 'p:calls:fib' -- $P/calls fib 5 "
			  "&& cat $T/f");
	static const char *want[] = { ";main;fib 1\n", ";main;fib;fib 2\n",
				      ";main;fib;fib;fib 4\n", ";main;fib;fib;fib;fib 6\n",
				      ";main;fib;fib;fib;fib;fib 2\n" };

	cr_assert_eq(r.status, 0, "%s", r.err);
	for (int i = 0; i < 5; i++)
		cr_assert(strstr(r.out, want[i]), "%s: %s", want[i], r.out);
	cr_assert(!strncmp(strstr(r.out, "calls;"), "calls;_start;", 13), "%s", r.out);
	/* -c --stack: hits per stack, the innermost frame first. */
	r = sh("$U trace -c --stack -e 'p:calls:fib' -- $P/calls fib 5");
	cr_assert(strstr(r.err, "@count[p_fib_0,\n    fib+0x0/"), "%s", r.err);
	{
		long sum = 0;

		for (const char *p = r.err; (p = strstr(p, "]: ")); p += 3)
			sum += atol(p + 3);
		cr_assert_eq(sum, 15, "%s", r.err);
	}
	/* From a recording. */
	r = sh("$U trace --stack -o $T/s.ukp -e 'p:calls:fib' -- $P/calls fib 5 && "
	       "$U report --format folded $T/s.ukp");
	cr_assert(strstr(r.out, ";main;fib;fib;fib;fib 6\n"), "%s%s", r.out, r.err);
}

Test(stacks, folded_stacks_of_a_real_program)
{
	/* ls's mallocs: every one in a stack that ends in malloc and starts
	 * at the program's entry; as many as -c counts. */
	struct res r = sh("$U trace --format folded -o $T/f -e 'p:libc.so.6:malloc' -- ls -l /usr "
			  ">/dev/null && $U trace -c -e 'p:libc.so.6:malloc' -- ls -l /usr 2>&1 "
			  ">/dev/null | sed -n 's/^@count.*: //p'; awk '{s += $NF} END {print s}' $T/f; "
			  "grep -vc '^ls;[^;]*;__libc_start_main;.*;malloc [0-9]*$' $T/f; "
			  "awk -F';' '{print NF}' $T/f | sort -n | head -n 1");
	long n1, n2, bad, depth;

	cr_assert_eq(sscanf(r.out, "%ld\n%ld\n%ld\n%ld", &n1, &n2, &bad, &depth), 4, "%s%s",
		     r.out, r.err);
	cr_assert_gt(n1, 100);
	cr_assert_eq(n1, n2, "%ld counted, %ld in stacks", n1, n2);
	cr_assert_eq(bad, 0, "%s", r.out);
	cr_assert_geq(depth, 5, "%s", r.out);
}
