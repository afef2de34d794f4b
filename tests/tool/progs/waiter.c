// SPDX-License-Identifier: MIT
/*
 * waiter - a program to attach to (ukprobe trace -p): its main thread
 * blocks reading lines from stdin and calls target(n) for each; one more
 * thread sleeps in nanosleep() and another in poll(), in loops.  Any call
 * that fails with EINTR (an attach or a detach that was not transparent)
 * makes it print "EINTR in ..." and exit 3.  At the end of its input it
 * prints "done lines=N ticks>0" and exits 0.  SIGUSR1 has a handler (it
 * must still be there after a detach).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noipa))

static volatile long ticks;

NOINLINE long target(long n)
{
	return n * 2;
}

NOINLINE void tick(void)
{
	ticks++;
}

static void on_usr1(int sig)
{
	(void)sig;
}

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;) {
		struct timespec d = { 0, 20 * 1000000L };

		if (nanosleep(&d, NULL) && errno == EINTR) {
			printf("EINTR in nanosleep\n");
			fflush(stdout);
			_exit(3);
		}
		tick();
	}
	return NULL;
}

static void *poller(void *arg)
{
	int fds[2];
	struct pollfd p;

	(void)arg;
	if (pipe(fds))
		return NULL;
	p.fd = fds[0];
	p.events = POLLIN;
	for (;;) {
		if (poll(&p, 1, 30) < 0 && errno == EINTR) {
			printf("EINTR in poll\n");
			fflush(stdout);
			_exit(3);
		}
	}
	return NULL;
}

int main(void)
{
	char line[256];
	long n = 0;
	pthread_t a, b;

	signal(SIGUSR1, on_usr1);
	pthread_create(&a, NULL, sleeper, NULL);
	pthread_create(&b, NULL, poller, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (;;) {
		errno = 0;
		if (!fgets(line, sizeof(line), stdin)) {
			if (errno == EINTR) {
				printf("EINTR in read\n");
				return 3;
			}
			break;
		}
		line[strcspn(line, "\n")] = '\0';
		printf("line %ld %s -> %ld\n", n, line, target(n));
		n++;
	}
	printf("done lines=%ld ticks>0=%d\n", n, ticks > 0);
	return 0;
}
