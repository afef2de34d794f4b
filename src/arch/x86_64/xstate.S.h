/* SPDX-License-Identifier: MIT */
/*
 * xstate.S.h - assembler macros that save and restore the extended state
 * (x87, SSE, AVX, AVX-512) around a call to C handlers, which the ABI lets
 * clobber every vector register.  x86_xsave_{size,mask,kind} come from
 * arch_init() (opt.c): kind 2 xsavec, 1 xsave, 0 fxsave.
 *
 * XSAVE_BELOW: allocate a 64-byte aligned area below %rsp (the caller keeps
 * the old %rsp in a callee-saved register), zero its header (xrstor faults
 * on reserved header bits; xsavec writes its own) and save.  Clobbers %rax,
 * %rdx.  XRSTOR_HERE: restore from (%rsp).  Clobbers %rax, %rdx.
 */
.macro XSAVE_BELOW
	subq	x86_xsave_size(%rip), %rsp
	andq	$-64, %rsp
	xorl	%eax, %eax
	movq	%rax, 512(%rsp)
	movq	%rax, 520(%rsp)
	movq	%rax, 528(%rsp)
	movq	%rax, 536(%rsp)
	movq	%rax, 544(%rsp)
	movq	%rax, 552(%rsp)
	movq	%rax, 560(%rsp)
	movq	%rax, 568(%rsp)
	movl	x86_xsave_mask(%rip), %eax
	movl	x86_xsave_mask+4(%rip), %edx
	cmpl	$2, x86_xsave_kind(%rip)
	jne	101f
	xsavec	(%rsp)
	jmp	103f
101:	cmpl	$1, x86_xsave_kind(%rip)
	jne	102f
	xsave	(%rsp)
	jmp	103f
102:	fxsave	(%rsp)
103:	/* Handlers need an empty x87 stack (a C function may assume it;
	 * MMX code leaves it full).  emms empties it; the restore puts the
	 * program's back. */
	emms
.endm

.macro XRSTOR_HERE
	movl	x86_xsave_mask(%rip), %eax
	movl	x86_xsave_mask+4(%rip), %edx
	cmpl	$0, x86_xsave_kind(%rip)
	je	104f
	xrstor	(%rsp)
	jmp	105f
104:	fxrstor	(%rsp)
105:
.endm
