/* SPDX-License-Identifier: MIT */
/* scn_asm.h - macros for the scenario tests' assembly targets (AT&T). */
#ifndef SCN_ASM_H
#define SCN_ASM_H

/* A function with symbol bounds (type and size), so that ukprobes can decode
 * it from its start. */
#define FUNC(name) .p2align 4; .globl name; .type name, @function; name:
#define END(name) .size name, . - name
/* A global label at an instruction (the probe point or an expected ip). */
#define LABEL(name) .globl name; name:

#endif
