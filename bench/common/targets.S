/* SPDX-License-Identifier: MIT */
/*
 * targets.S - the probed workload: one tiny function per first instruction,
 * since what a probe costs depends on the instruction it displaces.  Every
 * variant computes x + 1 (SysV: x in %rdi, result in %rax), has a sized
 * global symbol (ukprobes checks probe points against symbol bounds), and is
 * called through a volatile function pointer by the bench loops.
 */

	.text

/* push %rbp: the classic frame-pointer prologue (boostable, no fix-up). */
	.globl	bench_fn_push_rbp
	.type	bench_fn_push_rbp, @function
	.p2align 4
bench_fn_push_rbp:
	push	%rbp			/* 55 */
	mov	%rsp, %rbp		/* 48 89 e5 */
	lea	1(%rdi), %rax		/* 48 8d 47 01 */
	pop	%rbp			/* 5d */
	ret				/* c3 */
	.size	bench_fn_push_rbp, .-bench_fn_push_rbp

/* endbr64: the IBT landing pad that -fcf-protection puts at every entry. */
	.globl	bench_fn_endbr64
	.type	bench_fn_endbr64, @function
	.p2align 4
bench_fn_endbr64:
	endbr64				/* f3 0f 1e fa */
	push	%rbp			/* 55 */
	mov	%rsp, %rbp		/* 48 89 e5 */
	lea	1(%rdi), %rax		/* 48 8d 47 01 */
	pop	%rbp			/* 5d */
	ret				/* c3 */
	.size	bench_fn_endbr64, .-bench_fn_endbr64

/* A RIP-relative load: the out-of-line copy needs its disp32 fixed up. */
	.globl	bench_fn_riprel
	.type	bench_fn_riprel, @function
	.p2align 4
bench_fn_riprel:
	mov	bench_one(%rip), %rax	/* 48 8b 05 <disp32> */
	add	%rdi, %rax		/* 48 01 f8 */
	ret				/* c3 */
	.size	bench_fn_riprel, .-bench_fn_riprel

/* A 5-byte nop at entry, as -mfentry -mnop-mcount leaves and as the kernel's
 * ftrace sites look, recorded in __patchable_function_entries the way GCC's
 * -fpatchable-function-entry records its (GCC itself pads with five 1-byte
 * nops, hence the hand-written one). */
	.globl	bench_fn_nop5
	.type	bench_fn_nop5, @function
	.p2align 4
bench_fn_nop5:
	.section __patchable_function_entries, "awo", @progbits, bench_fn_nop5
	.p2align 3
	.quad	.Lbench_nop5_pfe
	.text
.Lbench_nop5_pfe:
	nopl	0x0(%rax,%rax,1)	/* 0f 1f 44 00 00 */
	lea	1(%rdi), %rax		/* 48 8d 47 01 */
	ret				/* c3 */
	.size	bench_fn_nop5, .-bench_fn_nop5

	.section .rodata
	.p2align 3
	.type	bench_one, @object
bench_one:
	.quad	1
	.size	bench_one, .-bench_one

	.section .note.GNU-stack, "", @progbits
