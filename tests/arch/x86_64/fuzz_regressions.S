/* SPDX-License-Identifier: MIT */
/*
 * fuzz_regressions.S - targets for fuzz_regressions.c: the minimized
 * shapes of what the differential fuzzer (tests/arch/x86_64/fuzz/) found.  Every
 * function has symbol bounds (FUNC/END); LABEL marks the probe points.
 * Byte counts in comments are the lengths the regions rely on.
 */
#include "scn_asm.h"

	.text

/*
 * long fzr_ret(long x): x + 3.  The instruction after the ret is the
 * start of a block entered only by the indirect call above it: no direct
 * branch in the function goes there.  A jump-optimized region at the ret
 * (1 byte) would cover it and put the jmp's displacement where the call
 * lands.
 */
FUNC(fzr_ret)
	lea	fzr_ret_sub(%rip), %rcx		/* 7 */
	call	*%rcx				/* 2 */
LABEL(fzr_ret_p)
	ret					/* 1 */
fzr_ret_sub:
	lea	3(%rdi), %rax			/* 4 */
	ret
END(fzr_ret)

/*
 * long fzr_jmp(long x): x + 5.  The same after an unconditional jmp, the
 * shape of a C++ landing pad that only the unwinder jumps to.
 */
FUNC(fzr_jmp)
	lea	fzr_jmp_pad(%rip), %rcx		/* 7 */
	call	*%rcx				/* 2 */
LABEL(fzr_jmp_p)
	jmp	1f				/* 2 */
fzr_jmp_pad:
	lea	5(%rdi), %rax			/* 4 */
	ret
1:	ret
END(fzr_jmp)

/*
 * long fzr_skip(long *p, long x): x + 8.  The load from p faults when p
 * is bad; the program's SIGSEGV handler then does what the load and the
 * first lea would have (rax = x + 7) and resumes at fzr_skip_mid: past the
 * first byte of the region a jump-optimized probe at fzr_skip_p detours.
 * The fault is outside the region on purpose: the thread reaches the
 * region's interior only through the handler, never through the jmp or
 * the breakpoint (fzr_skipin has the fault inside).
 */
FUNC(fzr_skip)
LABEL(fzr_skip_f)
	mov	(%rdi), %rax			/* 3: faults */
LABEL(fzr_skip_p)
	lea	7(%rsi), %rax			/* 4 */
LABEL(fzr_skip_mid)
	add	$1, %rax			/* 4 */
	ret
END(fzr_skip)

/*
 * long fzr_skipin(long *p, long x): x + 8, the same with the faulting load
 * inside the region of a jump-optimized probe at fzr_skipin_p: it faults
 * in the detour's copy, and the program's handler resumes the thread past
 * it, still inside the region, while the detour may be on its way out.
 */
FUNC(fzr_skipin)
LABEL(fzr_skipin_p)
	lea	7(%rsi), %rax			/* 4 */
LABEL(fzr_skipin_f)
	mov	(%rdi), %rdx			/* 3: faults */
LABEL(fzr_skipin_mid)
	add	$1, %rax			/* 4 */
	ret
END(fzr_skipin)

	.section .note.GNU-stack, "", @progbits
