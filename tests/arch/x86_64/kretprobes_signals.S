/* SPDX-License-Identifier: MIT */
/*
 * kretprobes_signals.S - targets for the signal tests: a probed function
 * that any optimizer takes (it starts with a 5-byte nop) and clobbers every
 * register a callee may, and a caller that checks every register a callee
 * must keep.  With unwind information at every instruction: a signal
 * handler walks the stack from each of them.
 */
#include "scn_asm.h"

	.text

/* long ksig_target(long x): 3x + 1; every caller-saved register clobbered. */
FUNC(ksig_target)
	.cfi_startproc
	.byte	0x0f, 0x1f, 0x44, 0x00, 0x00	/* nopl 0x0(%rax,%rax,1) */
	lea	1(%rdi,%rdi,2), %rax
	mov	$-1, %rcx
	mov	$-2, %rdx
	mov	$-3, %rsi
	mov	$-4, %rdi
	mov	$-5, %r8
	mov	$-6, %r9
	mov	$-7, %r10
	mov	$-8, %r11
	ret
	.cfi_endproc
END(ksig_target)

#define K_BX	0x1111111111111111
#define K_BP	0x2222222222222222
#define K_12	0x3333333333333333
#define K_13	0x4444444444444444
#define K_14	0x5555555555555555
#define K_15	0x6666666666666666

/*
 * long ksig_call_checked(long (*fn)(long), long x): fn(x), with %rbx %rbp
 * %r12-%r15 holding patterns made from x across the call; LONG_MIN when one
 * of them, or %rsp, came back changed.
 */
FUNC(ksig_call_checked)
	.cfi_startproc
	push	%rbx
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbx, 0
	push	%rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbp, 0
	push	%r12
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %r12, 0
	push	%r13
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %r13, 0
	push	%r14
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %r14, 0
	push	%r15
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %r15, 0
	sub	$24, %rsp		/* x, the expected %rsp; 16-byte alignment */
	.cfi_adjust_cfa_offset 24
	mov	%rsi, (%rsp)
	mov	%rsp, 8(%rsp)
	mov	%rdi, %rax
	mov	%rsi, %rdi
#define PAT(reg, k) movabs $k, reg; xor %rsi, reg
	PAT(%rbx, K_BX)
	PAT(%rbp, K_BP)
	PAT(%r12, K_12)
	PAT(%r13, K_13)
	PAT(%r14, K_14)
	PAT(%r15, K_15)
	call	*%rax
	cmp	8(%rsp), %rsp
	jne	9f
#define CHECK(reg, k) movabs $k, %rcx; xor (%rsp), %rcx; cmp %rcx, reg; jne 9f
	CHECK(%rbx, K_BX)
	CHECK(%rbp, K_BP)
	CHECK(%r12, K_12)
	CHECK(%r13, K_13)
	CHECK(%r14, K_14)
	CHECK(%r15, K_15)
	jmp	1f
9:	movabs	$0x8000000000000000, %rax
1:	add	$24, %rsp
	.cfi_adjust_cfa_offset -24
	pop	%r15
	.cfi_adjust_cfa_offset -8
	.cfi_restore %r15
	pop	%r14
	.cfi_adjust_cfa_offset -8
	.cfi_restore %r14
	pop	%r13
	.cfi_adjust_cfa_offset -8
	.cfi_restore %r13
	pop	%r12
	.cfi_adjust_cfa_offset -8
	.cfi_restore %r12
	pop	%rbp
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbp
	pop	%rbx
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbx
	ret
	.cfi_endproc
END(ksig_call_checked)

/*
 * long ksig_outer(long x): ksig_call_checked(ksig_target, x), between two
 * labels the single-stepping test knows: ksig_outer is where the outer call
 * starts, ksig_outer_done where it is over.
 */
FUNC(ksig_outer)
	.cfi_startproc
	sub	$8, %rsp
	.cfi_adjust_cfa_offset 8
	mov	%rdi, %rsi
	lea	ksig_target(%rip), %rdi
	call	ksig_call_checked
LABEL(ksig_outer_done)
	add	$8, %rsp
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
END(ksig_outer)

/* long ksig_outer_call(long x): ksig_outer(x), returning to
 * ksig_outer_call_ret: every stack walk from inside the call finds it. */
FUNC(ksig_outer_call)
	.cfi_startproc
	sub	$8, %rsp
	.cfi_adjust_cfa_offset 8
	call	ksig_outer
LABEL(ksig_outer_call_ret)
	add	$8, %rsp
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
END(ksig_outer_call)

	.section .note.GNU-stack, "", @progbits
