/* SPDX-License-Identifier: MIT */
/* signals.S - instructions that fault, at known addresses. */
#include "scn_asm.h"

	.text

/* long scn_sig_load(long *p): p[2]; faults at _at when p is NULL (0x10) */
FUNC(scn_sig_load)
	mov	%rdi, %rcx
LABEL(scn_sig_load_at)
	mov	0x10(%rcx), %rax
LABEL(scn_sig_load_next)
	ret
END(scn_sig_load)

/* unsigned long scn_sig_div(unsigned long a, unsigned long b): a / b */
FUNC(scn_sig_div)
	mov	%rdi, %rax
	xor	%edx, %edx
LABEL(scn_sig_div_at)
	div	%rsi
LABEL(scn_sig_div_next)
	ret
END(scn_sig_div)

/* long scn_sig_ud2(void): ud2; returns 1 if a handler skips the ud2 */
FUNC(scn_sig_ud2)
	mov	$1, %eax
LABEL(scn_sig_ud2_at)
	ud2
LABEL(scn_sig_ud2_next)
	ret
END(scn_sig_ud2)

/* long scn_sig_int3(void): the program's own breakpoint; returns 5 */
FUNC(scn_sig_int3)
	mov	$5, %eax
LABEL(scn_sig_int3_at)
	int3
LABEL(scn_sig_int3_next)
	ret
END(scn_sig_int3)

/* long scn_sig_other(long x): x + 1, a probe target that does not fault */
FUNC(scn_sig_other)
	mov	%rdi, %rax
LABEL(scn_sig_other_1)
	add	$1, %rax
	ret
END(scn_sig_other)

/* long scn_sig_mov6(void): 6.  Its mov is 5 bytes whose second is 0x06,
 * an invalid opcode in 64-bit mode: running from the byte after an int3
 * over the mov faults at once (SIGILL), having done nothing. */
FUNC(scn_sig_mov6)
LABEL(scn_sig_mov6_at)
	mov	$6, %eax
	ret
END(scn_sig_mov6)

/* long scn_sig_int3b(void): the program's own breakpoint in its two-byte
 * form, "int $3" (cd 03); returns 5 */
FUNC(scn_sig_int3b)
	mov	$5, %eax
	.byte	0xcd, 0x03
LABEL(scn_sig_int3b_next)
	ret
END(scn_sig_int3b)

	.section .note.GNU-stack, "", @progbits
