/* SPDX-License-Identifier: MIT */
/*
 * templates.h - the instruction templates the generator (gen.c) draws the
 * bulk of a sequence from (templates.c).
 */
#ifndef FUZZ_TEMPLATES_H
#define FUZZ_TEMPLATES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <Zydis/Zydis.h>

#include "fuzz.h"

#define MN(x) ZYDIS_MNEMONIC_##x
#define FUZZ_MAX_TMPLS	512

/*
 * Operand kinds, one character each; an operand's string lists the kinds it
 * may take, one is picked per attempt.
 *   r m    GPR / memory of the instruction's size S      i  immediate (<= 32 bits)
 *   I      immediate of size S (mov r64, imm64)           k  imm8     1  the immediate 1
 *   c      %cl
 *   b w d q  GPR of 8/16/32/64 bits     B W D Q  memory of 1/2/4/8 bytes
 *   V N    vector register / memory of the instruction's width W
 *   x X    xmm / 16-byte memory         y Y  ymm / 32-byte memory
 *   H h    vector register / memory of W/2 (a 128-bit lane of a ymm)
 *   K      opmask k0-k7                 M    the EVEX write mask (k0 = none)
 *   L      a lea address (no memory access: any registers)
 * Vector registers are 0-15, or 0-31 for EVEX templates.
 */
enum feat {
	F_BASE, F_SSSE3, F_SSE41, F_SSE42, F_AES, F_PCLMUL, F_AVX, F_AVX2, F_FMA,
	F_F16C, F_BMI1, F_BMI2, F_ADX, F_LZCNT, F_POPCNT, F_MOVBE, F_AVX512,
};

#define T_LOCK	0x01	/* a memory destination may take lock */
#define T_VEX	0x02	/* VEX encoding only */
#define T_EVEX	0x04	/* EVEX encoding (registers 0-31, masks) */
#define T_LEG	0x08	/* legacy encoding only (SSE) */
#define T_IS4	0x10	/* the last register operand is the is4 one */

struct tmpl {
	ZydisMnemonic m;
	const char *sizes;	/* S: "1248" etc; "" when no GPR size applies */
	const char *widths;	/* W for V/N: "x", "y", "z" ("" none) */
	const char *ops[5];
	uint8_t feat;
	uint8_t flags;
	uint8_t weight;
};

extern const struct tmpl fuzz_tmpls[];
extern const size_t fuzz_ntmpls;

/* Can this CPU run instructions that need feature @f? */
bool fuzz_feat_ok(const struct fuzz_cpu *c, uint8_t f);

#endif
