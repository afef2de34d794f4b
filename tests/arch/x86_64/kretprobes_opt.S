/* SPDX-License-Identifier: MIT */
/*
 * kretprobes_opt.S - targets whose entry a kretprobe's jump optimization
 * always takes: each starts with a 5-byte nop, one instruction the size of
 * the jump (no function analysis needed), so the tests can ask for the
 * optimized entry and its primed return (prime.h) and get them.
 */
#include "scn_asm.h"

	.text

/* long kro_add(long a, long b): a + b */
FUNC(kro_add)
	.byte	0x0f, 0x1f, 0x44, 0x00, 0x00	/* nopl 0x0(%rax,%rax,1) */
	lea	(%rdi,%rsi), %rax
	ret
END(kro_add)

/*
 * long kro_rec(long n, void (*cb)(void)): n + kro_rec(n - 1, cb), and at
 * n == 0 calls cb (when not NULL) and returns 0.  Inner levels return to
 * kro_rec_ret.
 */
FUNC(kro_rec)
	.byte	0x0f, 0x1f, 0x44, 0x00, 0x00	/* nopl 0x0(%rax,%rax,1) */
	test	%rdi, %rdi
	jz	1f
	push	%rdi
	dec	%rdi
	call	kro_rec
LABEL(kro_rec_ret)
	pop	%rdi
	add	%rdi, %rax
	ret
1:	test	%rsi, %rsi
	jz	2f
	sub	$8, %rsp
	call	*%rsi
	add	$8, %rsp
2:	xor	%eax, %eax
	ret
END(kro_rec)

/* double kro_fp(double x, double y): x * y, in %xmm0 */
FUNC(kro_fp)
	.byte	0x0f, 0x1f, 0x44, 0x00, 0x00	/* nopl 0x0(%rax,%rax,1) */
	mulsd	%xmm1, %xmm0
	ret
END(kro_fp)
	.section .note.GNU-stack, "", @progbits
