/* SPDX-License-Identifier: MIT */
/*
 * alloc_fail.S - targets for the allocation-failure tests (alloc_fail.c).
 * Each is "long f(long x)", returning x plus a constant of its own, so that
 * a probe that fires or a result that is wrong tells which function it was.
 * The first two instructions (mov 3 + add 4 bytes) make a region the
 * optimizer may replace by a jump (it needs a proof that no thread is in
 * it); af_opt1 starts with one 7-byte instruction (no proof needed).
 */
#include "scn_asm.h"

	.text

#define TARGET(name, k)			\
FUNC(name);				\
	mov	%rdi, %rax;		\
LABEL(name##_2);			\
	add	$k, %rax;		\
	ret;				\
END(name)

TARGET(af_t1, 1)
TARGET(af_t2, 2)
TARGET(af_t3, 3)
TARGET(af_ret, 4)
TARGET(af_ret2, 5)
TARGET(af_jpf, 6)
TARGET(af_next, 7)
TARGET(af_fork, 8)
TARGET(af_opt, 9)
TARGET(af_black, 10)		/* NOKPROBE_SYMBOL() in alloc_fail.c */
TARGET(af_warm, 11)

/* long af_opt1(long x): x + 0x10000, one 7-byte instruction. */
FUNC(af_opt1)
	lea	0x10000(%rdi), %rax	/* 7 */
	ret
END(af_opt1)

/* long af_uffd(long *p): *p + 12.  The load is the region's second
 * instruction: a thread that faults on it (userfaultfd) waits in the
 * kernel with its pc inside the region. */
FUNC(af_uffd)
	mov	%rdi, %rcx		/* 3 */
LABEL(af_uffd_load)
	mov	(%rcx), %rax		/* 3 */
	add	$12, %rax		/* 4 */
	ret
END(af_uffd)

/* What the test compares code with. */
	.section .rodata
	.globl	af_arch_brk, af_arch_brk_len, af_arch_jump
af_arch_brk:
	.byte	0xcc			/* int3 */
	.balign	4
af_arch_brk_len:
	.long	1
af_arch_jump:
	.byte	0xe9			/* jmp rel32 */

	.section .note.GNU-stack, "", @progbits
