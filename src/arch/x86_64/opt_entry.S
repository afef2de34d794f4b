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
 *	.quad	T			# and + 10: a prime stub's T, or 0
 * 1:	[jmp	*stub(%rip)]		# a kretprobe's entry: prime (prime.h)
 * 2:	lea	0x80(%rsp), %rsp	# (the stub comes back here)
 *	<the relocated instructions>
 *	jmp	<end of the region>
 *
 * The entry saves the registers as a breakpoint trap would, into a struct
 * pt_regs, calls ukp_opt_callback(point, regs, T, gpr), restores them
 * (handlers may change any general register and the flags) and returns.
 * What the callback returns (where a priming detour's stub goes, prime.h)
 * is left 8 bytes below the link, where the stub reads it.
 *
 * ukp_optprobe_entry also saves the extended state (x87/SSE/AVX/AVX-512)
 * around the call: handlers are C functions, which the ABI lets clobber
 * every vector register, and libc's string functions do.
 * ukp_optprobe_entry_gpr skips that, for probes whose handlers all use
 * general registers only (KPROBE_FLAG_GPR_ONLY).
 */
#include "prime.h"
#include "xstate.S.h"

	.text

#define PT_R15		0
#define PT_AX		80
#define PT_ORIG_AX	120
#define PT_FLAGS	144
#define PT_SP		152
#define PT_SIZE		168

/*
 * The program's %rsp need not be 8-byte aligned (hand-written code may move
 * it by 4), but struct pt_regs must be: %rax and the flags go below it
 * first (the "link"), then %rsp is aligned and the pt_regs built below.
 *
 *	link+40 ...	red-zone gap (128 bytes), then the program's stack
 *	link+32		return address into the detour
 *	link+24		%rax
 *	link+16		flags
 *	link+8		the detour's way on after priming (prime.h)
 *	link		the callback's answer: where a prime stub goes
 *	R+168		link  (R 16-byte aligned)
 *	R		struct pt_regs
 *
 * A detour that primes has "1: jmp *stub(%rip)" (6 bytes) right after the
 * point and T, so its way on ("2:") is the return address + 2 + 16 + 6.
 */
#define PRIME_CONT_FROM_RET	24
#define LINK		PT_SIZE		/* offset of the link from pt_regs */
/* The flags restored without popfq: CF, bit 1 (always set), PF, AF, ZF,
 * SF, IF (always set in user mode) and OF. */
#define FLAGS_SAHF_OF	0xad7

.macro SAVE_PT_REGS
	pushq	%rax
	pushfq
	leaq	-16(%rsp), %rsp		/* for the prime stub (see above) */
	movq	%rsp, %rax		/* the link */
	andq	$-16, %rsp
	pushq	%rax
	pushq	$0			/* ss */
	pushq	$0			/* sp, set below */
	pushq	16(%rax)		/* flags */
	pushq	$0			/* cs */
	pushq	$0			/* ip, set by the callback */
	pushq	$-1			/* orig_ax */
	pushq	%rdi
	pushq	%rsi
	pushq	%rdx
	pushq	%rcx
	pushq	24(%rax)		/* rax */
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
	leaq	(32 + 8 + 128)(%rax), %rcx
	movq	%rcx, PT_SP(%rsp)	/* the program's %rsp at the probe */
	movq	32(%rax), %r12		/* return address: the jmp over ... */
	movq	10(%r12), %r13		/* ... the point and T */
	movq	2(%r12), %r12
	cld				/* C code expects DF clear; popfq restores it */
.endm

/* Restore them (handlers may have changed any) and return. */
.macro RESTORE_PT_REGS_AND_RETURN
	movq	LINK(%rsp), %rdi
	movq	PT_ORIG_AX(%rsp), %rsi	/* the callback's answer (see above) */
	testq	%rsi, %rsi
	jz	92f			/* this detour does not prime */
	movq	%rsi, (%rdi)
	movq	32(%rdi), %rsi
	addq	$PRIME_CONT_FROM_RET, %rsi
	movq	%rsi, 8(%rdi)
92:	movq	PT_AX(%rsp), %rsi
	movq	%rsi, 24(%rdi)
	movq	PT_FLAGS(%rsp), %rsi
	movq	%rsi, 16(%rdi)
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
	leaq	8(%rsp), %rsp		/* rax: from the link below */
	popq	%rcx
	popq	%rdx
	popq	%rsi
	popq	%rdi
	movq	(LINK - PT_ORIG_AX)(%rsp), %rsp
	/* The flags.  popfq costs more than the rest of the restore put
	 * together (about 20 cycles, microcoded), so the usual ones are put
	 * back without it: OF by an 8-bit add that overflows or not, then
	 * SF ZF AF PF CF by sahf.  Any other bit set (DF, AC, TF, NT, ID,
	 * set by the program or by a handler) takes popfq. */
	movq	16(%rsp), %rax
	testq	$~FLAGS_SAHF_OF, %rax
	jnz	91f
	btl	$11, %eax		/* CF = OF */
	movb	%al, %ah		/* what sahf loads */
	sbbb	%al, %al		/* 0xff if OF, else 0 */
	andb	$0x7f, %al
	addb	$1, %al			/* 0x7f + 1 overflows: OF as saved */
	sahf
	movq	24(%rsp), %rax
	leaq	32(%rsp), %rsp
	ret
91:	leaq	16(%rsp), %rsp
	popfq
	popq	%rax
	ret
.endm

	.globl	ukp_optprobe_entry_gpr
	.hidden	ukp_optprobe_entry_gpr
	.type	ukp_optprobe_entry_gpr, @function
ukp_optprobe_entry_gpr:
	SAVE_PT_REGS
	movq	%r12, %rdi		/* the point */
	movq	%rsp, %rsi		/* regs */
	movq	%r13, %rdx		/* T */
	movl	$1, %ecx		/* general registers only */
	movq	%rsp, %rbx
	call	ukp_opt_callback	/* %rsp is 16-byte aligned here */
	movq	%rbx, %rsp
	movq	%rax, PT_ORIG_AX(%rsp)
	RESTORE_PT_REGS_AND_RETURN
	.size	ukp_optprobe_entry_gpr, .-ukp_optprobe_entry_gpr

	.globl	ukp_optprobe_entry
	.hidden	ukp_optprobe_entry
	.type	ukp_optprobe_entry, @function
ukp_optprobe_entry:
	SAVE_PT_REGS
	movq	%rsp, %rbx
	XSAVE_BELOW
	movq	%r12, %rdi
	movq	%rbx, %rsi
	movq	%r13, %rdx
	xorl	%ecx, %ecx
	call	ukp_opt_callback
	movq	%rax, PT_ORIG_AX(%rbx)	/* (xrstor takes %edx:%eax) */
	XRSTOR_HERE
	movq	%rbx, %rsp
	RESTORE_PT_REGS_AND_RETURN
	.size	ukp_optprobe_entry, .-ukp_optprobe_entry

/*
 * The prime stubs (prime.h): each is
 *	jmp	*-40(%rsp)		# what the entry left: a return stub's
 *					# prime address, or ukp_prime_none
 * (one per detour that primes: opt.c hands them out).  Inside the entry
 * range: a detour is not freed while a thread is here.
 */
	.balign	PRIME_STUB_SIZE
	.globl	ukp_prime_stubs
	.hidden	ukp_prime_stubs
ukp_prime_stubs:
	.set	k, 0
	.rept	2 * PRIME_STUBS
	.balign	PRIME_STUB_SIZE
	jmp	*-PRIME_TARGET_BELOW(%rsp)
	.set	k, k + 1
	.endr

/* No kretprobe set a return stub up at this hit: back into the detour. */
	.globl	ukp_prime_none
	.hidden	ukp_prime_none
	.type	ukp_prime_none, @function
ukp_prime_none:
	jmp	*-PRIME_CONT_BELOW(%rsp)
	.size	ukp_prime_none, .-ukp_prime_none

	.globl	ukp_optprobe_entry_end
	.hidden	ukp_optprobe_entry_end
ukp_optprobe_entry_end:

	.bss
	.balign	64
	.globl	ukp_prime_cont
	.hidden	ukp_prime_cont
ukp_prime_cont:
	.zero	8 * 2 * PRIME_STUBS

	.section .note.GNU-stack,"",@progbits
