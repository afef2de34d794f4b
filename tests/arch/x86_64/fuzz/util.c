// SPDX-License-Identifier: MIT
/* util.c - the fuzzer's PRNG and CPU feature detection. */
#include <cpuid.h>
#include <string.h>

#include "fuzz.h"

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void fuzz_rng_seed(struct fuzz_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* xoshiro256** */
uint64_t fuzz_rng_next(struct fuzz_rng *r)
{
	uint64_t *s = r->s, res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

void fuzz_cpu_detect(struct fuzz_cpu *c)
{
	unsigned int a, b, cx, d, b7 = 0, c7 = 0, e1c = 0;
	unsigned long xcr0 = 0;

	memset(c, 0, sizeof(*c));
	if (!__get_cpuid(1, &a, &b, &cx, &d))
		return;
	c->ssse3 = cx & bit_SSSE3;
	c->sse41 = cx & bit_SSE4_1;
	c->sse42 = cx & bit_SSE4_2;
	c->aes = cx & bit_AES;
	c->pclmul = cx & bit_PCLMUL;
	c->popcnt = cx & bit_POPCNT;
	c->movbe = cx & bit_MOVBE;
	c->f16c = cx & bit_F16C;
	c->fma = cx & bit_FMA;
	if (cx & bit_OSXSAVE) {
		unsigned int lo, hi;

		__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
		xcr0 = ((unsigned long)hi << 32) | lo;
	}
	if (__get_cpuid_count(7, 0, &a, &b7, &c7, &d)) {
		c->bmi1 = b7 & bit_BMI;
		c->bmi2 = b7 & bit_BMI2;
		c->adx = b7 & bit_ADX;
	}
	if (__get_cpuid(0x80000001, &a, &b, &e1c, &d))
		c->lzcnt = e1c & bit_LZCNT;
	/* AVX needs the OS to save ymm (XCR0 bits 1-2); AVX-512 opmask and
	 * zmm too (bits 5-7).  The harness always needs AVX. */
	c->avx = (cx & bit_AVX) && (xcr0 & 0x6) == 0x6;
	if (!c->avx)
		c->fma = c->f16c = false;
	c->avx2 = c->avx && (b7 & bit_AVX2);
	c->avx512 = c->avx && (xcr0 & 0xe6) == 0xe6 && (b7 & bit_AVX512F) &&
		    (b7 & bit_AVX512BW) && (b7 & bit_AVX512VL) && (b7 & bit_AVX512DQ);
}
