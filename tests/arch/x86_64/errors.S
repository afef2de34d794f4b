/* SPDX-License-Identifier: MIT */
/*
 * errors.S - targets for the registration errors.  scn_err_bad holds
 * instructions that cannot be probed; it is never called.  scn_err_ok is a
 * plain function with a 10-byte instruction (for offsets inside it).
 */
#include "scn_asm.h"

	.text

/* long scn_err_ok(long x): x + 0x1122334455667788 */
FUNC(scn_err_ok)
	mov	%rdi, %rcx			/* 3 bytes */
LABEL(scn_err_ok_movabs)
	movabs	$0x1122334455667788, %rax	/* 10 bytes */
LABEL(scn_err_ok_add)
	add	%rcx, %rax
	ret
END(scn_err_ok)

/* Never called: each label is an instruction ukprobes must refuse. */
FUNC(scn_err_bad)
	nop
LABEL(scn_err_bad_int3)
	int3
LABEL(scn_err_bad_int80)
	int	$0x80
LABEL(scn_err_bad_iret)
	iretq
LABEL(scn_err_bad_ljmp)
	ljmp	*(%rax)
LABEL(scn_err_bad_lcall)
	lcall	*(%rax)
LABEL(scn_err_bad_xbegin)
	xbegin	1f
1:
LABEL(scn_err_bad_hlt)
	hlt
LABEL(scn_err_bad_nop)
	nop					/* probeable, for contrast */
	ret
END(scn_err_bad)

/* Blacklisted with NOKPROBE_SYMBOL() in errors.c. */
FUNC(scn_err_black)
	mov	%rdi, %rax
LABEL(scn_err_black_1)
	add	$1, %rax
	ret
LABEL(scn_err_black_end)
END(scn_err_black)

	.section .note.GNU-stack, "", @progbits
