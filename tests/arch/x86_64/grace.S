/* SPDX-License-Identifier: MIT */
/* grace.S - targets of grace.c. */
#include "scn_asm.h"

	.text

/* long scn_g_inc(long x): x + 1, the add probed (a boosted copy). */
FUNC(scn_g_inc)
	mov	%rdi, %rax
LABEL(scn_g_inc_add)
	add	$1, %rax
	ret
END(scn_g_inc)

/* long scn_g_opt(long x): x + 2, with a 5-byte nop to optimize. */
FUNC(scn_g_opt)
LABEL(scn_g_opt_nop)
	nopl	0(%rax, %rax, 1)
	lea	2(%rdi), %rax
	ret
END(scn_g_opt)

/* Many one-byte instructions, to fill slots: probes on them take slots
 * that a removed probe's slot may be reused for. */
FUNC(scn_g_many)
LABEL(scn_g_many_first)
	.rept	512
	inc	%eax
	.endr
	ret
END(scn_g_many)

	.section .note.GNU-stack, "", @progbits
