/* SPDX-License-Identifier: MIT */
/* insn.h - x86-64 instruction analysis; insn.c is the only user of Zydis. */
#ifndef UKP_X86_INSN_H
#define UKP_X86_INSN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch_insn.h"

struct x86_analysis {
	uint8_t len;
	uint8_t op;		/* enum x86_op */
	uint8_t cond;
	uint8_t addr32;
	uint16_t ret_imm;
	uintptr_t target;	/* relative branch target */
	struct x86_indirect ind;
	/* Fix-ups for a copy that runs elsewhere: */
	int8_t riprel_off;	/* offset of a RIP-relative disp32, or -1 */
	uintptr_t riprel_target;	/* what it addresses */
	int8_t rel32_off;	/* offset of a call's rel32, or -1 */
};

/* Length of the instruction at @code, or -EILSEQ. */
int x86_insn_length(const uint8_t *code, size_t avail);

/* endbr64 (f3 0f 1e fa)? */
bool x86_is_endbr64(const uint8_t *code, size_t avail);

/*
 * Decode the instruction at @addr (original bytes @code) and decide how a
 * probe executes it.  Returns 0, -EILSEQ (does not decode) or -EINVAL (an
 * instruction that cannot be probed: interrupts, far transfers, TSX, ...).
 */
int x86_insn_analyze(uintptr_t addr, const uint8_t *code, size_t avail,
		     struct x86_analysis *a);

#endif
