/* SPDX-License-Identifier: MIT */
/* arch_insn.h - x86-64 per-point state (the kernel's struct arch_specific_insn). */
#ifndef UKP_ARCH_INSN_H
#define UKP_ARCH_INSN_H

#include <stdint.h>

#define UKP_ARCH_MAX_INSN	15
/*
 * A slot holds two copies of the instruction, so the trap path can choose
 * per hit without rewriting code:
 *   +0   boost:  copy, then "jmp orig+len"   (syscall: movabs orig+len,%rcx first)
 *   +32  step:   copy, then int3             (post handlers run at that trap)
 */
#define UKP_ARCH_SLOT_SIZE	64
/* The most bytes a probe changes at its address: an optimized jmp rel32. */
#define UKP_ARCH_MAX_PATCH	5
/* %xmm0-%xmm7 (the vector argument registers) and %mxcsr, for jprobes. */
#define UKP_ARCH_FPARGS_SIZE	(8 * 16 + 4)
#define UKP_ARCH_STEP_OFFSET	32

/* How the instruction is executed. */
enum x86_op {
	X86_OP_XOL,		/* out of line as is (RIP-relative fixed up) */
	X86_OP_SYSCALL,		/* out of line; %rcx = return address after */
	X86_OP_JMP_REL,		/* emulated ... */
	X86_OP_JCC,
	X86_OP_LOOP,		/* loop, loope, loopne */
	X86_OP_JRCXZ,		/* jrcxz, jecxz */
	X86_OP_CALL_REL,
	X86_OP_RET,
	X86_OP_CALL_IND,
	X86_OP_JMP_IND,
};

/* ukp_slot_info.arch_flags */
#define X86_SLOT_FIX_RCX	0x1	/* syscall: %rcx holds the return address */

/* An indirect branch operand, decoded once at prepare time so the trap path
 * needs no decoder.  Register fields are byte offsets into struct pt_regs,
 * or -1. */
struct x86_indirect {
	int8_t reg;		/* register operand: jmp *%rax */
	int8_t base;		/* memory operand: jmp *disp(base,index,scale) */
	int8_t index;
	uint8_t scale;
	int64_t disp;		/* RIP-relative: already absolute, base -1 */
};

struct arch_insn {
	uint8_t orig[16];	/* the original instruction bytes */
	uint8_t len;
	uint8_t op;		/* enum x86_op */
	uint8_t cond;		/* JCC: condition code 0-15; LOOP: 0 loop, 1 e, 2 ne */
	uint8_t addr32;		/* JRCXZ: ecx instead of rcx */
	uint16_t ret_imm;	/* ret $imm16 */
	uintptr_t target;	/* relative branch target */
	uintptr_t slot;		/* 0 when the instruction needs none */
	struct x86_indirect ind;
};

/* A jump-optimized probe: the detoured region and its detour buffer. */
#define X86_OPT_MAX_INSN	8
#define X86_OPT_HEADER		32	/* translation table before the code */

struct arch_optinsn {
	uintptr_t detour;	/* start of the slots (header, then code) */
	uint8_t nslots;
	uint8_t rlen;		/* bytes of the region the jmp replaces */
	uint8_t ninsn;
	uint8_t single;		/* one instruction: no thread can be inside */
	uint8_t ftrace;		/* a patchable function entry's nop */
	uint8_t orig[32];	/* the region's original bytes */
};

#endif
