// SPDX-License-Identifier: MIT
/*
 * sigcalls - calls the signal functions that libukprobes replaces, a known
 * number of times each: sigprocmask 5, pthread_sigmask 6, signal 7,
 * sigaction 8.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>

static void handler(int sig)
{
	(void)sig;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = handler };
	sigset_t m;

	sigemptyset(&m);
	sigaddset(&m, SIGUSR1);
	for (int i = 0; i < 5; i++)
		sigprocmask(SIG_BLOCK, &m, NULL);
	for (int i = 0; i < 6; i++)
		pthread_sigmask(SIG_UNBLOCK, &m, NULL);
	for (int i = 0; i < 7; i++)
		signal(SIGUSR2, handler);
	for (int i = 0; i < 8; i++)
		sigaction(SIGUSR1, &sa, NULL);
	puts("done");
	return 0;
}
