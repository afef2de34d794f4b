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
	/* nopl 0x0(%rax,%rax,1), spelled out: as drops the zero disp8
	 * and would emit the 4-byte 0f 1f 04 00. */
	.byte	0x0f, 0x1f, 0x44, 0x00, 0x00
	lea	1(%rdi), %rax		/* 48 8d 47 01 */
	ret				/* c3 */
	.size	bench_fn_nop5, .-bench_fn_nop5

/* ------------------------------------------------------------------------ */
/* Floors of an optimized probe's detour (not probe targets)                 */
/* ------------------------------------------------------------------------ */

/* A plain tiny function: what the stubs below are measured over. */
	.globl	bench_fn_plain
	.type	bench_fn_plain, @function
	.p2align 4
bench_fn_plain:
	lea	1(%rdi), %rax
	ret
	.size	bench_fn_plain, .-bench_fn_plain

/* Saves the flags and the 15 general registers (a pt_regs-like frame, as an
 * optprobe's detour buffer builds), calls bench_empty_handler(&bench_one,
 * frame) like a pre handler, restores everything, then does the function's
 * work (x + 1). */
	.globl	bench_fn_regsave
	.type	bench_fn_regsave, @function
	.p2align 4
bench_fn_regsave:
	pushfq
	push	%rax
	push	%rcx
	push	%rdx
	push	%rbx
	push	%rbp
	push	%rsi
	push	%rdi
	push	%r8
	push	%r9
	push	%r10
	push	%r11
	push	%r12
	push	%r13
	push	%r14
	push	%r15
	mov	%rsp, %rsi
	lea	bench_one(%rip), %rdi
	sub	$8, %rsp		/* 16 pushes + return address: align */
	call	bench_empty_handler
	add	$8, %rsp
	pop	%r15
	pop	%r14
	pop	%r13
	pop	%r12
	pop	%r11
	pop	%r10
	pop	%r9
	pop	%r8
	pop	%rdi
	pop	%rsi
	pop	%rbp
	pop	%rbx
	pop	%rdx
	pop	%rcx
	pop	%rax
	popfq
	lea	1(%rdi), %rax
	ret
	.size	bench_fn_regsave, .-bench_fn_regsave

/* The same, and the extended state (x87/SSE/AVX/AVX-512... all that XCR0
 * enables) saved with xsavec and restored with xrstor around the call, in a
 * 64-byte aligned area of bench_xsave_size bytes below the frame: what a
 * detour must do when handlers may use any register. */
	.globl	bench_fn_xsave
	.type	bench_fn_xsave, @function
	.p2align 4
bench_fn_xsave:
	pushfq
	push	%rax
	push	%rcx
	push	%rdx
	push	%rbx
	push	%rbp
	push	%rsi
	push	%rdi
	push	%r8
	push	%r9
	push	%r10
	push	%r11
	push	%r12
	push	%r13
	push	%r14
	push	%r15
	mov	%rsp, %rbx		/* the frame; rbx is saved above */
	sub	bench_xsave_size(%rip), %rsp
	and	$-64, %rsp
	xor	%eax, %eax		/* the XSAVE header must start zeroed */
	mov	%rax, 512(%rsp)
	mov	%rax, 520(%rsp)
	mov	%rax, 528(%rsp)
	mov	%rax, 536(%rsp)
	mov	%rax, 544(%rsp)
	mov	%rax, 552(%rsp)
	mov	%rax, 560(%rsp)
	mov	%rax, 568(%rsp)
	mov	$-1, %eax
	mov	$-1, %edx
	xsavec64 (%rsp)
	mov	%rbx, %rsi
	lea	bench_one(%rip), %rdi
	call	bench_empty_handler
	mov	$-1, %eax
	mov	$-1, %edx
	xrstor64 (%rsp)
	mov	%rbx, %rsp
	pop	%r15
	pop	%r14
	pop	%r13
	pop	%r12
	pop	%r11
	pop	%r10
	pop	%r9
	pop	%r8
	pop	%rdi
	pop	%rsi
	pop	%rbp
	pop	%rbx
	pop	%rdx
	pop	%rcx
	pop	%rax
	popfq
	lea	1(%rdi), %rax
	ret
	.size	bench_fn_xsave, .-bench_fn_xsave

	.section .rodata
	.p2align 3
	.type	bench_one, @object
bench_one:
	.quad	1
	.size	bench_one, .-bench_one

	.section .note.GNU-stack, "", @progbits
