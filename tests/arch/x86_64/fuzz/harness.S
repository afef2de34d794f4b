/* SPDX-License-Identifier: MIT */
/*
 * harness.S - what runs around a generated sequence.
 *
 * fuzz_run() saves the C caller's registers, loads the whole state from
 * fuzz_in (general registers, %rsp included, flags, %mxcsr, vector and
 * opmask registers) and jumps to the sequence in fuzz_arena.  The sequence
 * ends with "jmp fuzz_exit", which stores the whole state into fuzz_out and
 * returns to fuzz_run()'s caller.  Neither touches the sequence's stack:
 * the flags go through a private one.
 *
 * fuzz_arena is a function symbol of its own (ukprobes decodes a function
 * from its start to check boundaries and, for jump optimization, looks at
 * every branch in it), page aligned so that the C code can make it
 * writable, write a sequence and make it executable again without touching
 * other code.
 */
#include "layout.h"

	.text

/* void fuzz_run(void) */
	.globl	fuzz_run
	.type	fuzz_run, @function
	.p2align 4
fuzz_run:
	pushq	%rbx
	pushq	%rbp
	pushq	%r12
	pushq	%r13
	pushq	%r14
	pushq	%r15
	movq	%rsp, fuzz_host_rsp(%rip)
	stmxcsr	fuzz_host_mxcsr(%rip)
	ldmxcsr	fuzz_in + ST_MXCSR(%rip)
	cmpl	$0, fuzz_avx512(%rip)
	je	1f
	.irp	k, 0,1,2,3,4,5,6,7
	kmovq	fuzz_in + ST_K + 8 * \k(%rip), %k\k
	.endr
	.irp	v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	vmovdqu64 fuzz_in + ST_VEC + ST_VEC_STRIDE * \v(%rip), %zmm\v
	.endr
	jmp	2f
1:	.irp	v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	vmovdqu	fuzz_in + ST_VEC + ST_VEC_STRIDE * \v(%rip), %ymm\v
	.endr
2:	leaq	fuzz_flag_stack_top(%rip), %rsp
	pushq	fuzz_in + ST_FLAGS(%rip)
	popfq
	movq	fuzz_in + ST_GPR + 0 * 8(%rip), %rax
	movq	fuzz_in + ST_GPR + 1 * 8(%rip), %rcx
	movq	fuzz_in + ST_GPR + 2 * 8(%rip), %rdx
	movq	fuzz_in + ST_GPR + 3 * 8(%rip), %rbx
	movq	fuzz_in + ST_GPR + 5 * 8(%rip), %rbp
	movq	fuzz_in + ST_GPR + 6 * 8(%rip), %rsi
	movq	fuzz_in + ST_GPR + 7 * 8(%rip), %rdi
	movq	fuzz_in + ST_GPR + 8 * 8(%rip), %r8
	movq	fuzz_in + ST_GPR + 9 * 8(%rip), %r9
	movq	fuzz_in + ST_GPR + 10 * 8(%rip), %r10
	movq	fuzz_in + ST_GPR + 11 * 8(%rip), %r11
	movq	fuzz_in + ST_GPR + 12 * 8(%rip), %r12
	movq	fuzz_in + ST_GPR + 13 * 8(%rip), %r13
	movq	fuzz_in + ST_GPR + 14 * 8(%rip), %r14
	movq	fuzz_in + ST_GPR + 15 * 8(%rip), %r15
	movq	fuzz_in + ST_GPR + 4 * 8(%rip), %rsp
	jmp	*fuzz_code(%rip)
	.size	fuzz_run, . - fuzz_run

	.globl	fuzz_exit
	.type	fuzz_exit, @function
	.p2align 4
fuzz_exit:
	movq	%rax, fuzz_out + ST_GPR + 0 * 8(%rip)
	movq	%rcx, fuzz_out + ST_GPR + 1 * 8(%rip)
	movq	%rdx, fuzz_out + ST_GPR + 2 * 8(%rip)
	movq	%rbx, fuzz_out + ST_GPR + 3 * 8(%rip)
	movq	%rsp, fuzz_out + ST_GPR + 4 * 8(%rip)
	movq	%rbp, fuzz_out + ST_GPR + 5 * 8(%rip)
	movq	%rsi, fuzz_out + ST_GPR + 6 * 8(%rip)
	movq	%rdi, fuzz_out + ST_GPR + 7 * 8(%rip)
	movq	%r8, fuzz_out + ST_GPR + 8 * 8(%rip)
	movq	%r9, fuzz_out + ST_GPR + 9 * 8(%rip)
	movq	%r10, fuzz_out + ST_GPR + 10 * 8(%rip)
	movq	%r11, fuzz_out + ST_GPR + 11 * 8(%rip)
	movq	%r12, fuzz_out + ST_GPR + 12 * 8(%rip)
	movq	%r13, fuzz_out + ST_GPR + 13 * 8(%rip)
	movq	%r14, fuzz_out + ST_GPR + 14 * 8(%rip)
	movq	%r15, fuzz_out + ST_GPR + 15 * 8(%rip)
	leaq	fuzz_flag_stack_top(%rip), %rsp
	pushfq
	popq	fuzz_out + ST_FLAGS(%rip)
	cld
	stmxcsr	fuzz_out + ST_MXCSR(%rip)
	cmpl	$0, fuzz_avx512(%rip)
	je	1f
	.irp	k, 0,1,2,3,4,5,6,7
	kmovq	%k\k, fuzz_out + ST_K + 8 * \k(%rip)
	.endr
	.irp	v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	vmovdqu64 %zmm\v, fuzz_out + ST_VEC + ST_VEC_STRIDE * \v(%rip)
	.endr
	jmp	2f
1:	.irp	v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	vmovdqu	%ymm\v, fuzz_out + ST_VEC + ST_VEC_STRIDE * \v(%rip)
	.endr
2:	vzeroupper
	ldmxcsr	fuzz_host_mxcsr(%rip)
	movq	fuzz_host_rsp(%rip), %rsp
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%rbp
	popq	%rbx
	ret
	.size	fuzz_exit, . - fuzz_exit

/* The arena: int3 until a sequence is written into it. */
	.section .text.fuzz_arena, "ax", @progbits
	.balign	4096
	.globl	fuzz_arena
	.type	fuzz_arena, @function
fuzz_arena:
	.fill	FUZZ_ARENA_SIZE, 1, 0xcc
	.size	fuzz_arena, FUZZ_ARENA_SIZE
	.balign	4096

	.bss
	.balign	4096
	.globl	fuzz_scratch, fuzz_guard, fuzz_ripdata, fuzz_stack, fuzz_in, fuzz_out
	.globl	fuzz_code, fuzz_avx512
/* The flags go through this stack.  It is big, and nothing of ours lies
 * below it, because the tracer's single-step traps on the harness's own
 * instructions put their signal frames here (an AVX-512 frame and a
 * sanitized handler take several KiB). */
fuzz_flag_stack:
	.zero	65536
fuzz_flag_stack_top:
	.balign	4096
fuzz_scratch:
	.zero	FUZZ_SCRATCH_SIZE
/* Right after the scratch, a page made inaccessible (fuzz_init): the
 * generated faults load and store there, through the base or RIP. */
fuzz_guard:
	.zero	4096
fuzz_ripdata:
	.zero	FUZZ_RIPDATA_SIZE
fuzz_stack:
	.zero	FUZZ_STACK_BELOW + FUZZ_STACK_ABOVE
	.balign	64
fuzz_in:
	.zero	ST_SIZE
fuzz_out:
	.zero	ST_SIZE
fuzz_code:
	.zero	8
fuzz_host_rsp:
	.zero	8
fuzz_host_mxcsr:
	.zero	4
fuzz_avx512:
	.zero	4

	.section .note.GNU-stack, "", @progbits
