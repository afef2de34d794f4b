/* SPDX-License-Identifier: MIT */
/* churn.S - the recursive function that threads run while probes on it
 * come and go. */
#include "scn_asm.h"

	.text

/* long scn_churn_rec(long n): n + (n - 1) + ... + 1, recursively. */
FUNC(scn_churn_rec)
	push	%rbp
	mov	%rsp, %rbp
LABEL(scn_churn_rec_body)
	push	%rbx
	mov	%rdi, %rbx
	test	%rdi, %rdi
	jle	1f
	lea	-1(%rdi), %rdi
	call	scn_churn_rec
	add	%rbx, %rax
	jmp	2f
1:	xor	%eax, %eax
2:	pop	%rbx
	pop	%rbp
	ret
LABEL(scn_churn_rec_end)
END(scn_churn_rec)

	.section .note.GNU-stack, "", @progbits
