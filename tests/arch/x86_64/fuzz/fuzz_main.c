// SPDX-License-Identifier: MIT
/*
 * fuzz_main.c - the differential fuzzer's command line (make fuzz).
 *
 *   fuzz [--time SECONDS] [--seed N] [--cases N] [-v] [--no-minimize]
 *   fuzz --case SEED [--mode NAME] [-v]      one case again (a reproducer)
 *
 * Runs generated cases until the time or the count is reached and prints
 * what was executed and every mismatch, with the line that reproduces it.
 * Exits 1 if any case mismatched.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fuzz.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void summary(const struct fuzz_stats *st, double secs, unsigned long genfail)
{
	printf("fuzz: %lu cases (%lu not generated) in %.1f s: %lu instructions natively "
	       "(%lu faults; %lu in detours), %lu under probes (%.0f/s), %lu handler calls, %lu probes "
	       "(%lu optimized, %lu refused), %lu runs; %lu mismatches\n",
	       st->cases, genfail, secs, st->insns, st->faults, st->faults_in_detour, st->probed_insns,
	       secs > 0 ? (double)st->probed_insns / secs : 0.0, st->hits, st->probes,
	       st->optimized, st->refused, st->runs, st->mismatches);
}

static int mode_by_name(const char *n)
{
	for (int m = 0; m < FM_COUNT; m++)
		if (!strcmp(n, fuzz_mode_name[m]))
			return m;
	return -1;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "time", required_argument, NULL, 't' },
		{ "seed", required_argument, NULL, 's' },
		{ "cases", required_argument, NULL, 'n' },
		{ "case", required_argument, NULL, 'c' },
		{ "mode", required_argument, NULL, 'm' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "no-minimize", no_argument, NULL, 'M' },
		{ "repeat", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	double limit = -1, t0, last;
	uint64_t seed = 1, one = 0;
	unsigned long max_cases = 0, genfail = 0, repeat = 1;
	bool have_one = false;
	struct fuzz_opts o = { .minimize = true };
	struct fuzz_stats st = { 0 };
	struct fuzz_cpu cpu;
	struct fuzz_seq *s;
	struct fuzz_rng rng;
	int c;

	while ((c = getopt_long(argc, argv, "t:s:n:c:m:vM", lo, NULL)) != -1) {
		switch (c) {
		case 't': limit = atof(optarg); break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'n': max_cases = strtoul(optarg, NULL, 0); break;
		case 'c': one = strtoull(optarg, NULL, 0); have_one = true; break;
		case 'm':
			if (mode_by_name(optarg) <= FM_TRACE) {
				fprintf(stderr, "fuzz: unknown mode %s\n", optarg);
				return 2;
			}
			o.only_modes |= 1u << mode_by_name(optarg);
			break;
		case 'v': o.verbose = true; break;
		case 'M': o.minimize = false; break;
		case 'r': repeat = strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: fuzz [--time S] [--seed N] [--cases N] [--case SEED "
				"[--mode NAME] [--repeat N]] [-v] [--no-minimize]\n");
			return 2;
		}
	}
	if (limit < 0)		/* --cases alone: as long as it takes */
		limit = max_cases ? 1e12 : 10;
	fuzz_cpu_detect(&cpu);
	if (!cpu.avx) {
		printf("fuzz: this CPU (or OS) has no AVX: the harness needs it; nothing run\n");
		return 0;
	}
	fuzz_avx512 = cpu.avx512;
	s = malloc(sizeof(*s));
	if (!s || fuzz_init()) {
		fprintf(stderr, "fuzz: out of memory\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	t0 = last = now();
	if (have_one) {
		if (fuzz_generate(one, &cpu, s)) {
			fprintf(stderr, "fuzz: case %#lx does not generate\n", (unsigned long)one);
			return 2;
		}
		if (o.verbose)
			fuzz_disasm(s, stdout, NULL);
		/* (a timing-dependent mismatch may need many runs to show) */
		for (unsigned long i = 0; i < repeat && !st.mismatches; i++)
			fuzz_case(s, &o, &st);
		summary(&st, now() - t0, 0);
		fuzz_fini();
		return st.mismatches ? 1 : 0;
	}
	if (max_cases)
		printf("fuzz: seed %#lx, %lu cases, avx512 %s\n", (unsigned long)seed, max_cases,
		       cpu.avx512 ? "yes" : "no");
	else
		printf("fuzz: seed %#lx, %.0f s, avx512 %s\n", (unsigned long)seed, limit,
		       cpu.avx512 ? "yes" : "no");
	fuzz_rng_seed(&rng, seed);
	while (now() - t0 < limit && (!max_cases || st.cases + genfail < max_cases)) {
		uint64_t cs = fuzz_rng_next(&rng);

		if (fuzz_generate(cs, &cpu, s)) {
			genfail++;
			continue;
		}
		fuzz_case(s, &o, &st);
		if (now() - last >= 10) {
			last = now();
			summary(&st, last - t0, genfail);
		}
	}
	summary(&st, now() - t0, genfail);
	printf("fuzz: asynchronous signals: %lu at an instruction of the sequence, %lu in "
	       "file code, %lu in anonymous code (slots, detours), %lu not sorted\n",
	       st.async[FA_ORIG], st.async[FA_CODE], st.async[FA_ANON], st.async[FA_OTHER]);
	printf("fuzz: time per run:");
	for (int m = 0; m < FM_COUNT; m++)
		if (st.cases)
			printf(" %s %.1f ms", fuzz_mode_name[m], st.mode_ns[m] / 1e6 / (double)st.cases);
	printf("\n");
	free(s);
	fuzz_fini();
	return st.mismatches ? 1 : 0;
}
