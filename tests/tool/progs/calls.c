// SPDX-License-Identifier: MIT
/*
 * calls - a program for ukprobe's end-to-end tests: calls functions a known
 * number of times.
 *
 *   calls count N [STATUS]   target(i) for i in 0..N-1; prints the sum
 *   calls sleep N US         sleepy(US) N times (usleep inside)
 *   calls fault              target_ptr() with a bad and a good pointer,
 *                            target_str() with a string
 *   calls out                writes to stdout and stderr, exits 3
 *   calls fib N              recursive fib(N) (fib(15): 1973 calls, 15 deep)
 *   calls str S [NAME]       target_str(S), after naming the thread NAME
 *                            (bytes as given: UTF-8 or not)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noipa))

NOINLINE long target(long i)
{
	return i * 3 + 1;
}

NOINLINE void sleepy(long us)
{
	usleep((useconds_t)us);
}

NOINLINE long target_ptr(const long *p)
{
	return p ? 1 : 0;	/* never dereferenced here: the probe does */
}

NOINLINE size_t target_str(const char *s)
{
	return strlen(s);
}

NOINLINE long fib(long n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "fib")) {
		printf("fib=%ld\n", fib(atol(argv[2])));
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "count")) {
		long n = atol(argv[2]), sum = 0;

		for (long i = 0; i < n; i++)
			sum += target(i);
		printf("sum=%ld\n", sum);
		return argc > 3 ? atoi(argv[3]) : 0;
	}
	if (argc >= 4 && !strcmp(argv[1], "sleep")) {
		long n = atol(argv[2]), us = atol(argv[3]);

		for (long i = 0; i < n; i++)
			sleepy(us);
		printf("slept %ld times\n", n);
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[1], "fault")) {
		static long good = 4242;

		printf("%ld %ld %zu\n", target_ptr((const long *)16), target_ptr(&good),
		       target_str("hello ukprobe"));
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "str")) {
		if (argc >= 4)
			prctl(PR_SET_NAME, argv[3]);
		printf("len=%zu\n", target_str(argv[2]));
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[1], "out")) {
		printf("to stdout\n");
		fprintf(stderr, "to stderr\n");
		return 3;
	}
	fprintf(stderr, "usage: calls count N [STATUS] | sleep N US | fault | out | fib N | str S [NAME]\n");
	return 2;
}
