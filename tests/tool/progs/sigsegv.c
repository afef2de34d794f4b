// SPDX-License-Identifier: MIT
/*
 * sigsegv N - a program with its own SIGSEGV handler: N times, call
 * target() and then fault on purpose; the handler recovers with siglongjmp.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline, noipa))

static sigjmp_buf env;
static volatile int caught;

NOINLINE long target(long i)
{
	return i + 7;
}

NOINLINE void crash(volatile long *p)
{
	*p = 1;
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (si->si_addr == (void *)8)
		caught++;
	siglongjmp(env, 1);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 5;
	struct sigaction sa;
	long sum = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, NULL);
	for (int i = 0; i < n; i++) {
		sum += target(i);
		if (!sigsetjmp(env, 1))
			crash((volatile long *)8);
	}
	printf("caught=%d sum=%ld\n", caught, sum);
	return caught == n ? 0 : 1;
}
