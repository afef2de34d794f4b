/* SPDX-License-Identifier: MIT */
/* threads.S - the function the worker threads hammer. */
#include "scn_asm.h"

	.text

/* long scn_t_fn(long x): 2x + 1 */
FUNC(scn_t_fn)
	mov	%rdi, %rax
LABEL(scn_t_fn_1)
	lea	1(%rax,%rax), %rax
LABEL(scn_t_fn_2)
	ret
END(scn_t_fn)

	.section .note.GNU-stack, "", @progbits
