/* SPDX-License-Identifier: MIT */
/*
 * trampolines.S - x86-64 code that probes return through.
 *
 * ukp_kretprobe_trampoline and its variants: a kretprobe's entry handler
 * replaced the probed function's return address with the address of a
 * return stub of the thread's (ret_stubs.c), which loads its entry of the
 * calls in flight into %r11 and the real return address into %r10 and
 * jumps here.  The function's `ret` landed there with the return value in
 * %rax/%rdx and %rsp where the caller expects it; %r10 and %r11 are
 * scratch at a return (caller-saved, not return registers).  Plain code,
 * no trap: save every general register into a struct pt_regs (regs->ip:
 * the real return address), ask ukp_kretprobe_trampoline_handler() (which
 * runs the return handlers) where to go on, restore, and go there (the
 * flags are not restored: they are dead across a call).
 * What lies below %rsp here is the callee's dead frame (a caller keeps no
 * red-zone data across a call), so using it is safe.
 *
 * Unwind information at every instruction (a signal handler may walk the
 * stack from anywhere here, and a return handler does from its call): the
 * frame's CFA is %rsp at the return, its return address is %r10, then
 * regs->ip, then the slot the `ret` popped (where it is written back).
 * Callee-saved registers are in pt_regs until restored.
 *
 * jprobe_return: the int3 the jprobe break handler recognizes.
 */
	.text

#define PT_R15		0
#define PT_R14		8
#define PT_R13		16
#define PT_R12		24
#define PT_BP		32
#define PT_BX		40
#define PT_R11		48
#define PT_R10		56
#define PT_R9		64
#define PT_R8		72
#define PT_AX		80
#define PT_CX		88
#define PT_DX		96
#define PT_SI		104
#define PT_DI		112
#define PT_ORIG_AX	120
#define PT_IP		128
#define PT_CS		136
#define PT_FLAGS	144
#define PT_SP		152
#define PT_SS		160
#define PT_SIZE		168

#define FRAME		(PT_SIZE + 8)	/* pt_regs, then the slot popped */
/* CFA-relative offsets of what the frame keeps */
#define AT(off)		((off) - FRAME)

/*
 * KRET_TRAMPOLINE name, vec, primed
 *   vec:    1 keeps %xmm0/%xmm1 (%ymm, %zmm) across the handlers; 0 for
 *           calls whose return handlers all use general registers only.
 *   primed: 1 when the return was predicted: an optimized entry's detour
 *           pushed the stub's return address onto the return stack buffer
 *           (prime.h), so the buffer's top is now the real return address
 *           and `ret` is right.  0 when the function's `ret` came to the
 *           stub unpredicted and consumed the caller's entry: an indirect
 *           jump then keeps the buffer in step.
 */
.macro KRET_TRAMPOLINE name, vec, primed
	.globl	\name
	.hidden	\name
	.type	\name, @function
\name:
	.cfi_startproc simple
	.cfi_def_cfa	%rsp, 0
	.cfi_register	%rip, %r10
	/* pt_regs, then one slot for the address we return to */
	leaq	-FRAME(%rsp), %rsp
	.cfi_adjust_cfa_offset FRAME
	movq	%r10, PT_IP(%rsp)
	.cfi_offset	%rip, AT(PT_IP)
	movq	%rax, PT_AX(%rsp)
	pushfq
	.cfi_adjust_cfa_offset 8
	popq	%rax
	.cfi_adjust_cfa_offset -8
	movq	%rax, PT_FLAGS(%rsp)
	movq	%r15, PT_R15(%rsp)
	.cfi_offset	%r15, AT(PT_R15)
	movq	%r14, PT_R14(%rsp)
	.cfi_offset	%r14, AT(PT_R14)
	movq	%r13, PT_R13(%rsp)
	.cfi_offset	%r13, AT(PT_R13)
	movq	%r12, PT_R12(%rsp)
	.cfi_offset	%r12, AT(PT_R12)
	movq	%rbp, PT_BP(%rsp)
	.cfi_offset	%rbp, AT(PT_BP)
	movq	%rbx, PT_BX(%rsp)
	.cfi_offset	%rbx, AT(PT_BX)
	movq	%r11, PT_R11(%rsp)
	movq	%r10, PT_R10(%rsp)
	movq	%r9, PT_R9(%rsp)
	movq	%r8, PT_R8(%rsp)
	movq	%rcx, PT_CX(%rsp)
	movq	%rdx, PT_DX(%rsp)
	movq	%rsi, PT_SI(%rsp)
	movq	%rdi, PT_DI(%rsp)
	movq	$-1, PT_ORIG_AX(%rsp)
	leaq	FRAME(%rsp), %rax
	movq	%rax, PT_SP(%rsp)
	movq	x86_user_cs(%rip), %rax
	movq	%rax, PT_CS(%rsp)
	movq	x86_user_ss(%rip), %rax
	movq	%rax, PT_SS(%rsp)

	movq	%rsp, %rbx		/* callee-saved: our frame */
	.cfi_def_cfa_register %rbx
	cld				/* the ABI's DF; popfq restores it */
.if \vec
	andq	$-64, %rsp		/* the vector save area's alignment */
	/* Only the return-value registers are live here: every other vector
	 * register is the caller's to lose across a call (SysV ABI).  Handlers
	 * are C, so %xmm0/%xmm1 (%ymm, %zmm with AVX, AVX-512) are kept; the
	 * x87 stack is left alone (a long double result stays in %st0 and C
	 * code uses the stack balanced). */
	subq	$128, %rsp
	cmpl	$2, x86_retvec_kind(%rip)
	jne	1f
	vmovdqa64 %zmm0, (%rsp)
	vmovdqa64 %zmm1, 64(%rsp)
	jmp	3f
1:	cmpl	$1, x86_retvec_kind(%rip)
	jne	2f
	vmovdqa	%ymm0, (%rsp)
	vmovdqa	%ymm1, 32(%rsp)
	jmp	3f
2:	movdqa	%xmm0, (%rsp)
	movdqa	%xmm1, 16(%rsp)
3:
.else
	andq	$-16, %rsp		/* the ABI's alignment for the call */
.endif
	movq	%rbx, %rdi		/* regs */
	movq	%r11, %rsi		/* the stub's entry */
	call	ukp_kretprobe_trampoline_handler
	movq	%rax, %r12		/* (restored from pt_regs below) */
.if \vec
	cmpl	$2, x86_retvec_kind(%rip)
	jne	4f
	vmovdqa64 (%rsp), %zmm0
	vmovdqa64 64(%rsp), %zmm1
	jmp	6f
4:	cmpl	$1, x86_retvec_kind(%rip)
	jne	5f
	vmovdqa	(%rsp), %ymm0
	vmovdqa	32(%rsp), %ymm1
	jmp	6f
5:	movdqa	(%rsp), %xmm0
	movdqa	16(%rsp), %xmm1
6:
.endif
	movq	%rbx, %rsp
	.cfi_def_cfa_register %rsp
	movq	%r12, PT_SIZE(%rsp)	/* where to return: the slot popped */
	.cfi_offset	%rip, -8

	/* No popfq: the flags are dead across a call (SysV ABI), and popfq
	 * is the slowest instruction here. */
	movq	PT_R15(%rsp), %r15
	.cfi_restore	%r15
	movq	PT_R14(%rsp), %r14
	.cfi_restore	%r14
	movq	PT_R13(%rsp), %r13
	.cfi_restore	%r13
	movq	PT_R12(%rsp), %r12
	.cfi_restore	%r12
	movq	PT_BP(%rsp), %rbp
	.cfi_restore	%rbp
	movq	PT_BX(%rsp), %rbx
	.cfi_restore	%rbx
	movq	PT_R11(%rsp), %r11
	movq	PT_R10(%rsp), %r10
	movq	PT_R9(%rsp), %r9
	movq	PT_R8(%rsp), %r8
	movq	PT_CX(%rsp), %rcx
	movq	PT_DX(%rsp), %rdx
	movq	PT_SI(%rsp), %rsi
	movq	PT_DI(%rsp), %rdi
	movq	PT_AX(%rsp), %rax
.if \primed
	leaq	PT_SIZE(%rsp), %rsp
	.cfi_def_cfa_offset 8
	ret
.else
	/* The slot below %rsp is safe to read: signal frames skip the red
	 * zone. */
	leaq	FRAME(%rsp), %rsp
	.cfi_def_cfa_offset 0
	jmp	*-8(%rsp)
.endif
	.cfi_endproc
	.size	\name, .-\name
.endm

	KRET_TRAMPOLINE ukp_kretprobe_trampoline, 1, 0
	KRET_TRAMPOLINE ukp_kretprobe_trampoline_gpr, 0, 0
	KRET_TRAMPOLINE ukp_kretprobe_trampoline_primed, 1, 1
	KRET_TRAMPOLINE ukp_kretprobe_trampoline_primed_gpr, 0, 1

	.globl	jprobe_return
	.type	jprobe_return, @function
jprobe_return:
	int3			/* the jprobe break handler takes it from here */
	ud2			/* never reached */
	.size	jprobe_return, .-jprobe_return

	.section .note.GNU-stack,"",@progbits
