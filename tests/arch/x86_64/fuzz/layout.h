/* SPDX-License-Identifier: MIT */
/*
 * layout.h - sizes and offsets shared by the fuzzer's C code and its
 * harness (harness.S).  Only #defines: included from assembly too.
 */
#ifndef FUZZ_LAYOUT_H
#define FUZZ_LAYOUT_H

/* The function the generated code is written into (two pages). */
#define FUZZ_ARENA_SIZE		8192
/* Memory the generated code reads and writes: through a base register
 * (scratch), RIP-relative (ripdata) and its stack. */
#define FUZZ_SCRATCH_SIZE	4096
#define FUZZ_RIPDATA_SIZE	4096
#define FUZZ_GUARD_SIZE		4096	/* after the scratch: faults */
/* Below the entry %rsp: room for the sequence's pushes, the red zone and
 * every signal frame and handler frame stacked on it (ASan frames are big). */
#define FUZZ_STACK_BELOW	65536
/* Above it: the "caller's frame", live from the start. */
#define FUZZ_STACK_ABOVE	1024
#define FUZZ_REDZONE		128

/* struct fuzz_state (fuzz.h) */
#define ST_GPR		0	/* rax rcx rdx rbx rsp rbp rsi rdi r8-r15 */
#define ST_FLAGS	128
#define ST_MXCSR	136
#define ST_K		144	/* k0-k7 */
#define ST_VEC		256	/* zmm0-31 (ymm0-15 in the low halves) */
#define ST_VEC_STRIDE	64
#define ST_SIZE		(ST_VEC + 32 * ST_VEC_STRIDE)

#endif
