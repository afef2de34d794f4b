// SPDX-License-Identifier: MIT
/*
 * dl LIB N [ROUNDS] - dlopen LIB after start, call its dl_target() N times,
 * dlclose it; ROUNDS times (default 1, without the dlclose).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 10, sum = 0;
	int rounds = argc > 3 ? atoi(argv[3]) : 0;

	if (argc < 2)
		return 2;
	for (int r = 0; r < (rounds ? rounds : 1); r++) {
		long (*fn)(long);
		void *h = dlopen(argv[1], RTLD_NOW);

		if (!h) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			return 1;
		}
		fn = (long (*)(long))dlsym(h, "dl_target");
		if (!fn)
			return 1;
		for (long i = 0; i < n; i++)
			sum += fn(i);
		if (rounds)
			dlclose(h);
	}
	printf("dl sum=%ld\n", sum);
	return 0;
}
