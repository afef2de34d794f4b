/* SPDX-License-Identifier: MIT */
/*
 * kretprobes.S - targets of the return-probe tests whose return addresses
 * the tests know: every call site that matters carries a global label, so a
 * return handler can compare ri->ret_addr and regs->ip with the real one.
 * Recursion is written here too, so that no compiler turns it into a loop.
 */
#include "scn_asm.h"

	.text

/* long scn_rp_add(long a, long b): a + b */
FUNC(scn_rp_add)
	lea	(%rdi,%rsi), %rax
	ret
END(scn_rp_add)

/* long scn_rp_mul(long a, long b): a * b */
FUNC(scn_rp_mul)
	mov	%rdi, %rax
	imul	%rsi, %rax
	ret
END(scn_rp_mul)

/*
 * long scn_rp_call_ptr(long (*fn)(), long a, long b, long c): fn(a, b, c),
 * returning to scn_rp_site0.
 */
FUNC(scn_rp_call_ptr)
	sub	$8, %rsp		/* the call's 16-byte alignment */
	mov	%rdi, %rax
	mov	%rsi, %rdi
	mov	%rdx, %rsi
	mov	%rcx, %rdx
	call	*%rax
LABEL(scn_rp_site0)
	add	$8, %rsp
	ret
END(scn_rp_call_ptr)

/* The same, returning to scn_rp_site1 (a second, different call site). */
FUNC(scn_rp_call_ptr1)
	push	%rbx			/* alignment, and a callee-saved reg */
	mov	%rdi, %rax
	mov	%rsi, %rdi
	mov	%rdx, %rsi
	mov	%rcx, %rdx
	call	*%rax
LABEL(scn_rp_site1)
	pop	%rbx
	ret
END(scn_rp_call_ptr1)

/*
 * long scn_rp_rec(long n): n + scn_rp_rec(n - 1), 1 for n <= 1: n calls in
 * flight at the deepest point.  The inner calls return to scn_rp_rec_ret.
 */
FUNC(scn_rp_rec)
	cmp	$1, %rdi
	jle	1f
	push	%rdi
	dec	%rdi
	call	scn_rp_rec
LABEL(scn_rp_rec_ret)
	pop	%rdi
	add	%rdi, %rax
	ret
1:	mov	%rdi, %rax
	ret
END(scn_rp_rec)

/*
 * long scn_rp_deep(long n, void (*cb)(void)): recurse to n + 1 calls in
 * flight, call cb() at the bottom (if not NULL), return n.  The inner calls
 * return to scn_rp_deep_ret.  cb may longjmp out of the whole recursion.
 */
FUNC(scn_rp_deep)
	test	%rdi, %rdi
	jz	1f
	push	%rdi
	dec	%rdi
	call	scn_rp_deep
LABEL(scn_rp_deep_ret)
	pop	%rdi
	inc	%rax
	ret
1:	test	%rsi, %rsi
	jz	2f
	sub	$8, %rsp		/* entry sp is 16n+8 at every level */
	call	*%rsi
	add	$8, %rsp
2:	xor	%eax, %eax
	ret
END(scn_rp_deep)

	.section .note.GNU-stack, "", @progbits
