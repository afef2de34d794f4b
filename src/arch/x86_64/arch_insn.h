/* SPDX-License-Identifier: MIT */
/* arch_insn.h - x86-64 per-point state (the kernel's struct arch_specific_insn). */
#ifndef UKP_ARCH_INSN_H
#define UKP_ARCH_INSN_H

#include <stdbool.h>
#include <stdint.h>

#include "prime.h"

#define UKP_ARCH_MAX_INSN	15
/* The page size the library assumes for the mappings it makes (slots). */
#define UKP_ARCH_PAGE_SIZE	4096u
/* The stack pointer's alignment at a call (SysV ABI). */
#define UKP_ARCH_STACK_ALIGN	16
/* Every instruction has this length (0: they vary, and an instruction
 * boundary is found by decoding from the function's start). */
#define UKP_ARCH_INSN_FIXED_LEN	0
/*
 * A slot holds two copies of the instruction, so the trap path can choose
 * per hit without rewriting code:
 *   +0   boost:  copy, then "jmp orig+len"   (syscall: movabs orig+len,%rcx first)
 *   +32  step:   copy, then int3             (post handlers run at that trap)
 */
#define UKP_ARCH_SLOT_SIZE	64
/* The most bytes a probe changes at its address: an optimized jmp rel32. */
#define UKP_ARCH_MAX_PATCH	5
/* An optimized region (the instructions a jump covers) is shorter than
 * this: a probe's neighbours are looked for this far back. */
#define UKP_ARCH_MAX_REGION	32
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
	uint8_t resume;		/* the relocated copy, from the code's start */
	int16_t prime;		/* its prime stub (prime.h), -1 if none */
	uintptr_t ret_tramp;	/* that stub's T: a kretprobe's return address */
	uint8_t orig[32];	/* the region's original bytes */
};

/*
 * kretprobes: what a return address is replaced with.  The trampolines
 * (trampolines.S) keep %xmm0/%xmm1 for the return handlers or not (@gpr);
 * a prime stub's T (prime.h) is the way back from an optimized entry that
 * primed the return stack buffer.  Trap-safe, general registers only.
 */
/* Hidden (as in the assembly): addressed RIP-relative, not through the GOT. */
extern const char ukp_kretprobe_trampoline[] __attribute__((visibility("hidden")));
extern const char ukp_kretprobe_trampoline_gpr[] __attribute__((visibility("hidden")));
extern const char ukp_prime_stubs[] __attribute__((visibility("hidden")));

static inline uintptr_t arch_kretprobe_trampoline(bool gpr)
{
	return (uintptr_t)(gpr ? ukp_kretprobe_trampoline_gpr : ukp_kretprobe_trampoline);
}

/* -1: not a prime stub's T; else the stub's number. */
static inline long arch_prime_stub_of(uintptr_t a)
{
	uintptr_t off = a - (uintptr_t)ukp_prime_stubs;

	if (off >= 2 * PRIME_STUBS * PRIME_STUB_SIZE || off % PRIME_STUB_SIZE != PRIME_T_OFFSET)
		return -1;
	return (long)(off / PRIME_STUB_SIZE);
}

static inline bool arch_is_kretprobe_trampoline(uintptr_t a)
{
	return a == (uintptr_t)ukp_kretprobe_trampoline ||
	       a == (uintptr_t)ukp_kretprobe_trampoline_gpr || arch_prime_stub_of(a) >= 0;
}

/* Does the return through @a leave the vector registers to the handlers? */
static inline bool arch_kretprobe_trampoline_is_gpr(uintptr_t a)
{
	return a == (uintptr_t)ukp_kretprobe_trampoline_gpr || arch_prime_stub_of(a) >= PRIME_STUBS;
}

#endif
