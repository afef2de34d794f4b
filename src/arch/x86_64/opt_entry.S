/* SPDX-License-Identifier: MIT */
/*
 * opt_entry.S - the common part of every jump-optimized probe's detour
 * (the kernel's optprobe_template).
 *
 * A detour (opt.c) does
 *	lea	-0x80(%rsp), %rsp	# never touch the program's red zone
 *	call	*entry(%rip)		# here
 *	jmp	1f			# returned to (well predicted)
 *	.quad	point			# read at return address + 2
 * 1:	lea	0x80(%rsp), %rsp
 *	<the relocated instructions>
 *	jmp	<end of the region>
 *
 * The entry saves the registers as a breakpoint trap would, into a struct
 * pt_regs, calls ukp_opt_callback(point, regs), restores them (handlers may
 * change any general register and the flags) and returns.
 *
 * ukp_optprobe_entry also saves the extended state (x87/SSE/AVX/AVX-512)
 * around the call: handlers are C functions, which the ABI lets clobber
 * every vector register, and libc's string functions do.
 * ukp_optprobe_entry_gpr skips that, for probes whose handlers all use
 * general registers only (KPROBE_FLAG_GPR_ONLY).
 */
#include "xstate.S.h"

	.text

#define PT_R15		0
#define PT_SP		152
#define PT_SIZE		168
/* Stack above pt_regs at the call: return address, then the red-zone gap. */
#define ABOVE		(8 + 128)

/* Save the general registers and flags as a struct pt_regs at (%rsp). */
.macro SAVE_PT_REGS
	pushq	$0			/* ss */
	pushq	$0			/* sp, set below */
	pushfq				/* flags */
	pushq	$0			/* cs */
	pushq	$0			/* ip, set by the callback */
	pushq	$-1			/* orig_ax */
	pushq	%rdi
	pushq	%rsi
	pushq	%rdx
	pushq	%rcx
	pushq	%rax
	pushq	%r8
	pushq	%r9
	pushq	%r10
	pushq	%r11
	pushq	%rbx
	pushq	%rbp
	pushq	%r12
	pushq	%r13
	pushq	%r14
	pushq	%r15
	leaq	(PT_SIZE + ABOVE)(%rsp), %rax
	movq	%rax, PT_SP(%rsp)	/* the program's %rsp at the probe */
.endm

/* Restore them and return. */
.macro RESTORE_PT_REGS_AND_RETURN
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%rbp
	popq	%rbx
	popq	%r11
	popq	%r10
	popq	%r9
	popq	%r8
	popq	%rax
	popq	%rcx
	popq	%rdx
	popq	%rsi
	popq	%rdi
	leaq	24(%rsp), %rsp		/* orig_ax, ip, cs */
	popfq
	leaq	16(%rsp), %rsp		/* sp, ss (lea keeps the flags) */
	ret
.endm

	.globl	ukp_optprobe_entry_gpr
	.hidden	ukp_optprobe_entry_gpr
	.type	ukp_optprobe_entry_gpr, @function
ukp_optprobe_entry_gpr:
	SAVE_PT_REGS
	movq	PT_SIZE(%rsp), %rdi	/* return address: the jmp over ... */
	movq	2(%rdi), %rdi		/* ... the point */
	movq	%rsp, %rsi		/* regs */
	movq	%rsp, %rbx
	andq	$-16, %rsp
	call	ukp_opt_callback
	movq	%rbx, %rsp
	RESTORE_PT_REGS_AND_RETURN
	.size	ukp_optprobe_entry_gpr, .-ukp_optprobe_entry_gpr

	.globl	ukp_optprobe_entry
	.hidden	ukp_optprobe_entry
	.type	ukp_optprobe_entry, @function
ukp_optprobe_entry:
	SAVE_PT_REGS
	movq	%rsp, %rbx
	XSAVE_BELOW
	movq	PT_SIZE(%rbx), %rdi
	movq	2(%rdi), %rdi
	movq	%rbx, %rsi
	call	ukp_opt_callback
	XRSTOR_HERE
	movq	%rbx, %rsp
	RESTORE_PT_REGS_AND_RETURN
	.size	ukp_optprobe_entry, .-ukp_optprobe_entry

	.globl	ukp_optprobe_entry_end
	.hidden	ukp_optprobe_entry_end
ukp_optprobe_entry_end:

	.section .note.GNU-stack,"",@progbits
