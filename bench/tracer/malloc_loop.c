// SPDX-License-Identifier: MIT
/*
 * malloc_loop N - the program of bench/tracer_malloc.sh: N calls of malloc
 * (and free) in a loop; prints N.  Built -O2, plain (no -pg): ukprobe and
 * `uftrace record --force` trace its library calls as they are.
 */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000, ok = 0;

	for (long i = 0; i < n; i++) {
		void *volatile p = malloc(16 + (size_t)(i & 63));

		ok += p != NULL;
		free(p);
	}
	printf("%ld\n", ok);
	return 0;
}
