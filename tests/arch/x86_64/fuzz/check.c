// SPDX-License-Identifier: MIT
/*
 * check.c - the short, fixed-seed pass of the differential fuzzer that
 * `make check` runs (built into $(B)/tests/realworld/ so that tests/run.sh
 * picks it up; `make fuzz` runs the long one).
 *
 * Each test runs a fixed number of generated cases from a fixed seed:
 * every instruction natively, single-stepped for the reference trace, and
 * with a probe on it on the breakpoint path (pre handler only: boosted; pre
 * and post: stepped) and on the jump-optimized path (all probed, or spaced
 * so that multi-instruction regions form; with and without the vector
 * state saved).  Any difference in the final state, in the registers a
 * handler saw, or a crash fails the test with a reproducer line.  The test
 * also fails if the optimizer optimized nothing, so that a pass cannot
 * come from a path that was never taken.
 */
#include "../support/ukp_test.h"
#include <stdlib.h>

#include "fuzz.h"

/* About 20-40 s for the four tests on two cores; a sanitized build runs
 * each case some five times slower, and fewer cases. */
#ifdef __SANITIZE_ADDRESS__
#define CASES_PER_TEST	12
#else
#define CASES_PER_TEST	75
#endif

static void fuzz_pass(uint64_t seed, unsigned long ncases)
{
	/* Each case runs a third of the probed modes, in turn. */
	struct fuzz_opts o = { .minimize = true, .rotate = 3 };
	struct fuzz_stats st = { 0 };
	struct fuzz_cpu cpu;
	struct fuzz_rng rng;
	struct fuzz_seq *s;
	unsigned long genfail = 0;

	fuzz_cpu_detect(&cpu);
	if (!cpu.avx)
		cr_skip_test("the harness needs AVX");
	fuzz_avx512 = cpu.avx512;
	cr_assert_eq(fuzz_init(), 0);
	s = malloc(sizeof(*s));
	cr_assert_not_null(s);
	fuzz_rng_seed(&rng, seed);
	while (st.cases < ncases && genfail < ncases) {
		if (fuzz_generate(fuzz_rng_next(&rng), &cpu, s)) {
			genfail++;
			continue;
		}
		fuzz_case(s, &o, &st);
	}
	free(s);
	fuzz_fini();
	fprintf(stderr, "fuzz seed %lu: %lu cases, %lu instructions natively (%lu faults), "
		"%lu under probes, %lu handler calls, %lu probes (%lu optimized, %lu refused), "
		"%lu mismatches\n", (unsigned long)seed, st.cases, st.insns, st.faults,
		st.probed_insns, st.hits, st.probes, st.optimized, st.refused, st.mismatches);
	cr_assert_eq(st.mismatches, 0, "%lu mismatches (reproducers above)", st.mismatches);
	cr_assert_eq(st.cases, ncases, "only %lu of %lu cases generated", st.cases, ncases);
	cr_assert_gt(st.hits, 0);
	cr_assert_gt(st.optimized, 0, "nothing was jump-optimized");
}

Test(fuzz, seed_1, .timeout = 300) { fuzz_pass(1, CASES_PER_TEST); }
Test(fuzz, seed_2, .timeout = 300) { fuzz_pass(2, CASES_PER_TEST); }
Test(fuzz, seed_3, .timeout = 300) { fuzz_pass(3, CASES_PER_TEST); }
Test(fuzz, seed_4, .timeout = 300) { fuzz_pass(4, CASES_PER_TEST); }
