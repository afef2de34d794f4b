/* SPDX-License-Identifier: MIT */
/*
 * jprobes.S - targets and entry functions of the jprobe tests that must be
 * exact about registers and the stack.
 */
#include "scn_asm.h"

	.text

/*
 * long scn_jp_f8(long a1, ..., long a6, long a7, long a8):
 *	a1 + 2 a2 + 3 a3 + 4 a4 + 5 a5 + 6 a6 + 7 a7 + 8 a8
 * a7 and a8 are read from the stack, where the caller put them.
 */
FUNC(scn_jp_f8)
	mov	%rdi, %rax
	lea	(%rax,%rsi,2), %rax
	imul	$3, %rdx, %rdx
	add	%rdx, %rax
	lea	(%rax,%rcx,4), %rax
	imul	$5, %r8, %r8
	add	%r8, %rax
	imul	$6, %r9, %r9
	add	%r9, %rax
	mov	8(%rsp), %rdx
	imul	$7, %rdx, %rdx
	add	%rdx, %rax
	mov	16(%rsp), %rdx
	lea	(%rax,%rdx,8), %rax
	ret
END(scn_jp_f8)

/*
 * The jprobe entry for scn_jp_f8 written as a hostile compiler could: it
 * overwrites its stack arguments and the caller's frame above them (the
 * 120 bytes over the return address), the argument registers, every
 * callee-saved register and xmm0/xmm1, then jprobe_return()s.  It records
 * its arguments first, in scn_jp_seen[0..7].
 */
FUNC(scn_jp_clobber_entry)
	lea	scn_jp_seen(%rip), %rax
	mov	%rdi, 0(%rax)
	mov	%rsi, 8(%rax)
	mov	%rdx, 16(%rax)
	mov	%rcx, 24(%rax)
	mov	%r8, 32(%rax)
	mov	%r9, 40(%rax)
	mov	8(%rsp), %r10
	mov	%r10, 48(%rax)
	mov	16(%rsp), %r10
	mov	%r10, 56(%rax)
	mov	$-1, %r10
	mov	$1, %ecx
1:	mov	%r10, (%rsp,%rcx,8)	/* 8(%rsp) ... 120(%rsp) */
	inc	%ecx
	cmp	$16, %ecx
	jb	1b
	mov	%r10, %rdi
	mov	%r10, %rsi
	mov	%r10, %rdx
	mov	%r10, %rcx
	mov	%r10, %r8
	mov	%r10, %r9
	mov	%r10, %rbx
	mov	%r10, %rbp
	mov	%r10, %r12
	mov	%r10, %r13
	mov	%r10, %r14
	mov	%r10, %r15
	pcmpeqd	%xmm0, %xmm0
	pcmpeqd	%xmm1, %xmm1
	sub	$8, %rsp		/* the call's alignment */
	call	jprobe_return@PLT
	ud2
END(scn_jp_clobber_entry)

#define SENT	0x5151515151515151

/*
 * long scn_jp_check_regs(long (*fn)(8 longs), long base): fn(base + 1, ...,
 * base + 8) with known values in every callee-saved register and in the
 * 104 bytes of this frame above fn's two stack arguments.  Returns fn's
 * result; scn_jp_regs_ok = 1 if all of those came back unchanged, else 0.
 */
FUNC(scn_jp_check_regs)
	push	%rbp
	push	%rbx
	push	%r12
	push	%r13
	push	%r14
	push	%r15
	sub	$120, %rsp		/* 16-aligned: a7 at 0, a8 at 8 */
	mov	%rdi, %rax
	mov	%rsi, %r11
	lea	7(%r11), %r10
	mov	%r10, 0(%rsp)
	lea	8(%r11), %r10
	mov	%r10, 8(%rsp)
	movabs	$SENT, %r10
	mov	$2, %ecx
1:	mov	%r10, (%rsp,%rcx,8)	/* 16(%rsp) ... 112(%rsp) */
	inc	%ecx
	cmp	$15, %ecx
	jb	1b
	lea	1(%r11), %rdi
	lea	2(%r11), %rsi
	lea	3(%r11), %rdx
	lea	4(%r11), %rcx
	lea	5(%r11), %r8
	lea	6(%r11), %r9
	movabs	$0x1111111111111111, %rbx
	movabs	$0x0b0b0b0b0b0b0b0b, %rbp
	movabs	$0x1212121212121212, %r12
	movabs	$0x1313131313131313, %r13
	movabs	$0x1414141414141414, %r14
	movabs	$0x1515151515151515, %r15
	call	*%rax
	xor	%edx, %edx
	movabs	$0x1111111111111111, %r10
	cmp	%r10, %rbx
	jne	3f
	movabs	$0x0b0b0b0b0b0b0b0b, %r10
	cmp	%r10, %rbp
	jne	3f
	movabs	$0x1212121212121212, %r10
	cmp	%r10, %r12
	jne	3f
	movabs	$0x1313131313131313, %r10
	cmp	%r10, %r13
	jne	3f
	movabs	$0x1414141414141414, %r10
	cmp	%r10, %r14
	jne	3f
	movabs	$0x1515151515151515, %r10
	cmp	%r10, %r15
	jne	3f
	movabs	$SENT, %r10
	mov	$2, %ecx
2:	cmp	%r10, (%rsp,%rcx,8)
	jne	3f
	inc	%ecx
	cmp	$15, %ecx
	jb	2b
	mov	$1, %edx
3:	mov	%edx, scn_jp_regs_ok(%rip)
	add	$120, %rsp
	pop	%r15
	pop	%r14
	pop	%r13
	pop	%r12
	pop	%rbx
	pop	%rbp
	ret
END(scn_jp_check_regs)

/* double scn_jp_fd(double x, double y, long n): x * n + y */
FUNC(scn_jp_fd)
	cvtsi2sd %rdi, %xmm2
	mulsd	%xmm2, %xmm0
	addsd	%xmm1, %xmm0
	ret
END(scn_jp_fd)

/* An entry for scn_jp_fd that clobbers the vector registers. */
FUNC(scn_jp_fd_clobber_entry)
	lea	scn_jp_seen(%rip), %rax
	movsd	%xmm0, 0(%rax)
	movsd	%xmm1, 8(%rax)
	mov	%rdi, 16(%rax)
	pcmpeqd	%xmm0, %xmm0
	pcmpeqd	%xmm1, %xmm1
	pcmpeqd	%xmm2, %xmm2
	sub	$8, %rsp
	call	jprobe_return@PLT
	ud2
END(scn_jp_fd_clobber_entry)

	.bss
	.p2align 4
	.globl	scn_jp_seen
scn_jp_seen:
	.zero	64
	.globl	scn_jp_regs_ok
scn_jp_regs_ok:
	.zero	4

	.section .note.GNU-stack, "", @progbits
