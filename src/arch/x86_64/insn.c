// SPDX-License-Identifier: MIT
/*
 * insn.c - x86-64 decoding with Zydis: instruction lengths and the analysis
 * that tells how a probed instruction can be executed.  The only file that
 * includes Zydis (its API changed between v3 and v4; keep that in one place).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <Zydis/Zydis.h>

#include <ukprobes.h>

#include "insn.h"

static const ZydisDecoder *x86_decoder(void)
{
	static ZydisDecoder dec;
	static int ready;

	/* Initialisation is idempotent and cheap; a race writes the same bytes. */
	if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
		ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64,
				 ZYDIS_STACK_WIDTH_64);
		__atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
	}
	return &dec;
}

int x86_insn_length(const uint8_t *code, size_t avail)
{
	ZydisDecodedInstruction insn;

	if (ZYAN_FAILED(ZydisDecoderDecodeInstruction(x86_decoder(), NULL, code,
						      avail, &insn)))
		return -EILSEQ;
	return insn.length;
}

bool x86_is_endbr64(const uint8_t *code, size_t avail)
{
	static const uint8_t endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };

	return avail >= 4 && !memcmp(code, endbr64, 4);
}

/* Byte offset in struct pt_regs of a 64-bit general register, or -1. */
static int x86_reg_offset(ZydisRegister r)
{
	switch (r) {
	case ZYDIS_REGISTER_RAX: return offsetof(struct pt_regs, ax);
	case ZYDIS_REGISTER_RBX: return offsetof(struct pt_regs, bx);
	case ZYDIS_REGISTER_RCX: return offsetof(struct pt_regs, cx);
	case ZYDIS_REGISTER_RDX: return offsetof(struct pt_regs, dx);
	case ZYDIS_REGISTER_RSI: return offsetof(struct pt_regs, si);
	case ZYDIS_REGISTER_RDI: return offsetof(struct pt_regs, di);
	case ZYDIS_REGISTER_RBP: return offsetof(struct pt_regs, bp);
	case ZYDIS_REGISTER_RSP: return offsetof(struct pt_regs, sp);
	case ZYDIS_REGISTER_R8:  return offsetof(struct pt_regs, r8);
	case ZYDIS_REGISTER_R9:  return offsetof(struct pt_regs, r9);
	case ZYDIS_REGISTER_R10: return offsetof(struct pt_regs, r10);
	case ZYDIS_REGISTER_R11: return offsetof(struct pt_regs, r11);
	case ZYDIS_REGISTER_R12: return offsetof(struct pt_regs, r12);
	case ZYDIS_REGISTER_R13: return offsetof(struct pt_regs, r13);
	case ZYDIS_REGISTER_R14: return offsetof(struct pt_regs, r14);
	case ZYDIS_REGISTER_R15: return offsetof(struct pt_regs, r15);
	default: return -1;
	}
}

/* Instructions no probe may sit on, as the kernel's can_probe() refuses
 * interrupts and far transfers: they either trap themselves or cannot run
 * anywhere but in place. */
static bool x86_refused(const ZydisDecodedInstruction *insn)
{
	if (insn->meta.category == ZYDIS_CATEGORY_INTERRUPT)	/* int3, int, into, iret */
		return true;
	if (insn->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR)	/* ljmp, lcall, lret */
		return true;
	switch (insn->mnemonic) {
	case ZYDIS_MNEMONIC_INT1:
	case ZYDIS_MNEMONIC_INT3:
	case ZYDIS_MNEMONIC_HLT:
	case ZYDIS_MNEMONIC_SYSENTER:
	case ZYDIS_MNEMONIC_SYSEXIT:
	case ZYDIS_MNEMONIC_SYSRET:
	case ZYDIS_MNEMONIC_XBEGIN:	/* RIP-relative abort target */
	case ZYDIS_MNEMONIC_XABORT:
	case ZYDIS_MNEMONIC_XEND:
	case ZYDIS_MNEMONIC_ENCLU:
		return true;
	default:
		return false;
	}
}

static int x86_analyze_indirect(uintptr_t addr, const ZydisDecodedInstruction *insn,
				const ZydisDecodedOperand *op, struct x86_analysis *a)
{
	a->ind.reg = a->ind.base = a->ind.index = -1;
	if (op->type == ZYDIS_OPERAND_TYPE_REGISTER) {
		a->ind.reg = (int8_t)x86_reg_offset(op->reg.value);
		return a->ind.reg < 0 ? -EINVAL : 0;
	}
	if (op->type != ZYDIS_OPERAND_TYPE_MEMORY)
		return -EINVAL;
	if (insn->attributes & (ZYDIS_ATTRIB_HAS_SEGMENT_FS | ZYDIS_ATTRIB_HAS_SEGMENT_GS))
		return -EINVAL;
	if (insn->address_width != 64)
		return -EINVAL;
	a->ind.disp = op->mem.disp.has_displacement ? op->mem.disp.value : 0;
	if (op->mem.base == ZYDIS_REGISTER_RIP) {
		a->ind.disp += (int64_t)(addr + insn->length);
	} else if (op->mem.base != ZYDIS_REGISTER_NONE) {
		a->ind.base = (int8_t)x86_reg_offset(op->mem.base);
		if (a->ind.base < 0)
			return -EINVAL;
	}
	if (op->mem.index != ZYDIS_REGISTER_NONE) {
		a->ind.index = (int8_t)x86_reg_offset(op->mem.index);
		if (a->ind.index < 0)
			return -EINVAL;
		a->ind.scale = op->mem.scale;
	}
	return 0;
}

/* Branches: decide which emulation runs them. */
static int x86_analyze_branch(uintptr_t addr, const ZydisDecodedInstruction *insn,
			      const ZydisDecodedOperand *ops, struct x86_analysis *a)
{
	const ZydisDecodedOperand *op0 = &ops[0];
	bool rel = op0->type == ZYDIS_OPERAND_TYPE_IMMEDIATE && op0->imm.is_relative;

	/* A 16-bit near branch truncates RIP on some CPUs: not worth emulating. */
	if (insn->attributes & ZYDIS_ATTRIB_HAS_OPERANDSIZE)
		return -EINVAL;
	if (rel) {
		ZyanU64 target;

		if (ZYAN_FAILED(ZydisCalcAbsoluteAddress(insn, op0, addr, &target)))
			return -EINVAL;
		a->target = (uintptr_t)target;
	}
	switch (insn->mnemonic) {
	case ZYDIS_MNEMONIC_JMP:
		a->op = rel ? X86_OP_JMP_REL : X86_OP_JMP_IND;
		return rel ? 0 : x86_analyze_indirect(addr, insn, op0, a);
	case ZYDIS_MNEMONIC_CALL:
		a->op = rel ? X86_OP_CALL_REL : X86_OP_CALL_IND;
		if (rel)
			a->rel32_off = (int8_t)insn->raw.imm[0].offset;
		return rel ? 0 : x86_analyze_indirect(addr, insn, op0, a);
	case ZYDIS_MNEMONIC_RET:
		a->op = X86_OP_RET;
		if (insn->operand_count_visible && op0->type == ZYDIS_OPERAND_TYPE_IMMEDIATE)
			a->ret_imm = (uint16_t)op0->imm.value.u;
		return 0;
	case ZYDIS_MNEMONIC_LOOP:
	case ZYDIS_MNEMONIC_LOOPE:
	case ZYDIS_MNEMONIC_LOOPNE:
		if (!rel || insn->address_width != 64)
			return -EINVAL;
		a->op = X86_OP_LOOP;
		a->cond = insn->mnemonic == ZYDIS_MNEMONIC_LOOP ? 0 :
			  insn->mnemonic == ZYDIS_MNEMONIC_LOOPE ? 1 : 2;
		return 0;
	case ZYDIS_MNEMONIC_JRCXZ:
	case ZYDIS_MNEMONIC_JECXZ:
		if (!rel)
			return -EINVAL;
		a->op = X86_OP_JRCXZ;
		a->addr32 = insn->mnemonic == ZYDIS_MNEMONIC_JECXZ;
		return 0;
	default:
		if (insn->meta.category != ZYDIS_CATEGORY_COND_BR || !rel)
			return -EINVAL;
		/* Jcc: the condition is the low nibble of 7x / 0f 8x. */
		a->op = X86_OP_JCC;
		a->cond = insn->opcode & 0xf;
		return 0;
	}
}

int x86_insn_analyze(uintptr_t addr, const uint8_t *code, size_t avail,
		     struct x86_analysis *a)
{
	ZydisDecodedInstruction insn;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];

	memset(a, 0, sizeof(*a));
	a->riprel_off = -1;
	a->rel32_off = -1;
	if (ZYAN_FAILED(ZydisDecoderDecodeFull(x86_decoder(), code, avail, &insn, ops)))
		return -EILSEQ;
	a->len = insn.length;
	if (x86_refused(&insn))
		return -EINVAL;

	/* A RIP-relative memory operand: its disp32 gets rebased in a copy. */
	for (unsigned int i = 0; i < insn.operand_count; i++) {
		if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY &&
		    ops[i].mem.base == ZYDIS_REGISTER_RIP) {
			if (insn.raw.disp.size != 32)
				return -EINVAL;
			a->riprel_off = (int8_t)insn.raw.disp.offset;
			a->riprel_target = addr + insn.length + (uintptr_t)insn.raw.disp.value;
		}
	}

	switch (insn.meta.category) {
	case ZYDIS_CATEGORY_UNCOND_BR:
	case ZYDIS_CATEGORY_COND_BR:
	case ZYDIS_CATEGORY_CALL:
	case ZYDIS_CATEGORY_RET:
		return x86_analyze_branch(addr, &insn, ops, a);
	default:
		break;
	}
	if (insn.mnemonic == ZYDIS_MNEMONIC_SYSCALL) {
		a->op = X86_OP_SYSCALL;
		return 0;
	}
	/* Anything else relative to RIP but not through a memory operand
	 * (none known besides xbegin) cannot run elsewhere. */
	if ((insn.attributes & ZYDIS_ATTRIB_IS_RELATIVE) && a->riprel_off < 0)
		return -EINVAL;
	a->op = X86_OP_XOL;
	return 0;
}
