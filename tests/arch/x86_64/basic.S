/* SPDX-License-Identifier: MIT */
/* basic.S - targets whose instruction boundaries the tests know. */
#include "scn_asm.h"

	.text

/* long scn_b_add(long a, long b): a + b */
FUNC(scn_b_add)
	mov	%rdi, %rax		/* 3 bytes */
LABEL(scn_b_add_1)
	add	%rsi, %rax		/* 3 bytes */
LABEL(scn_b_add_2)
	ret
END(scn_b_add)

/* long scn_b_endbr(long x): x + 1, starts with endbr64 */
FUNC(scn_b_endbr)
	endbr64
LABEL(scn_b_endbr_1)
	lea	1(%rdi), %rax
	ret
END(scn_b_endbr)

/* long scn_b_off(long x): x + 2, the interesting instruction at +0x11 */
FUNC(scn_b_off)
	.fill	0x11, 1, 0x90
LABEL(scn_b_off_at)
	lea	2(%rdi), %rax
	ret
END(scn_b_off)

	.section .note.GNU-stack, "", @progbits
