// SPDX-License-Identifier: MIT
/*
 * threads T K - T threads at once each call target() K times; prints the
 * total.
 * threads -s N - N threads one after the other, each calling target() once.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline, noipa))

NOINLINE long target(long i)
{
	return i + 1;
}

static long per_thread;

static void *worker(void *arg)
{
	long sum = 0;
	char name[16];

	/* Named after its slot: "worker-0", "worker-1"... */
	snprintf(name, sizeof(name), "worker-%d", (int)(*(long *)arg));
	pthread_setname_np(pthread_self(), name);

	for (long i = 0; i < per_thread; i++)
		sum += target(i);
	*(long *)arg = sum;
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "-s")) {
		long n = atol(argv[2]), total = 0;

		per_thread = 1;
		for (long i = 0; i < n; i++) {
			pthread_t th;
			long sum = i % 1000;

			if (pthread_create(&th, NULL, worker, &sum))
				return 1;
			pthread_join(th, NULL);
			total += sum;
		}
		printf("threads=%ld total=%ld\n", n, total);
		return 0;
	}
	int t = argc > 1 ? atoi(argv[1]) : 4;
	pthread_t th[64];
	long sums[64], total = 0;

	per_thread = argc > 2 ? atol(argv[2]) : 1000;
	if (t > 64)
		t = 64;
	for (int i = 0; i < t; i++) {
		sums[i] = i;
		pthread_create(&th[i], NULL, worker, &sums[i]);
	}
	for (int i = 0; i < t; i++) {
		pthread_join(th[i], NULL);
		total += sums[i];
	}
	printf("total=%ld\n", total);
	return 0;
}
