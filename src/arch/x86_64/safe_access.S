/* SPDX-License-Identifier: MIT */
/*
 * safe_access.S - memory accessors that report a fault instead of crashing,
 * for the trap path (emulating ret/call, which touch the program's stack).
 * The SIGSEGV/SIGBUS handler calls arch_fixup_exception(), which moves a
 * faulting ip found at one of the two labelled instructions to
 * x86_safe_fault, the user-space twin of the kernel's exception tables.
 * Written in assembly so no sanitizer instruments the accesses.
 */
	.text
	.globl	arch_safe_read_ulong
	.hidden	arch_safe_read_ulong
	.type	arch_safe_read_ulong, @function
/* int arch_safe_read_ulong(uintptr_t addr, unsigned long *val) */
arch_safe_read_ulong:
	.globl	x86_safe_read_insn
	.hidden	x86_safe_read_insn
x86_safe_read_insn:
	movq	(%rdi), %rax
	movq	%rax, (%rsi)
	xorl	%eax, %eax
	ret
	.size	arch_safe_read_ulong, .-arch_safe_read_ulong

	.globl	arch_safe_write_ulong
	.hidden	arch_safe_write_ulong
	.type	arch_safe_write_ulong, @function
/* int arch_safe_write_ulong(uintptr_t addr, unsigned long val) */
arch_safe_write_ulong:
	.globl	x86_safe_write_insn
	.hidden	x86_safe_write_insn
x86_safe_write_insn:
	movq	%rsi, (%rdi)
	xorl	%eax, %eax
	ret
	.size	arch_safe_write_ulong, .-arch_safe_write_ulong

	.globl	x86_safe_fault
	.hidden	x86_safe_fault
	.type	x86_safe_fault, @function
x86_safe_fault:
	movl	$-14, %eax		/* -EFAULT */
	ret
	.size	x86_safe_fault, .-x86_safe_fault

	.section .note.GNU-stack,"",@progbits
