// SPDX-License-Identifier: MIT
/*
 * gen.c - random valid x86-64 sequences, encoded with Zydis's encoder.
 *
 * A sequence is a list of blocks; a block is one or a few instructions that
 * belong together (a divide and the guards that keep it from #DE, a string
 * instruction and the setup of %rsi/%rdi/%rcx, a counted loop).  Branches
 * land only on block starts, forward, except a counted loop's own branch
 * back; calls go to subroutines placed after the main body, each called
 * once.  The main body ends with "jmp fuzz_exit".
 *
 * What keeps a sequence valid (it must run the same natively and under any
 * probe, and never fault):
 *  - memory operands point into the scratch buffer (through a base register
 *    the sequence never writes, plus an index made small by a movzx just
 *    before), into the RIP-relative data area, or into the live part of the
 *    stack: the "caller's frame" above the entry %rsp, the red zone below
 *    it, and what the sequence pushed itself.  Below that, a signal frame or
 *    a detour may legitimately write at any time;
 *  - %rsp changes only by push/pop/call/ret/enter/leave (tracked statically:
 *    a forward branch lands where the depth is the one it left with);
 *  - popfq only pops what pushfq pushed, with arithmetic flags or DF flipped
 *    (never TF, AC, NT);
 *  - div/idiv follow guards that make the divisor non-zero and the
 *    quotient fit; loops are counted and short;
 *  - no system call, no time stamp, no random number, no cpuid, no x87.
 * Every instruction built from a template is decoded again, and rejected if
 * it writes %rsp, the base register or a register a loop counts with,
 * touches memory implicitly, or changes a system flag.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <Zydis/Zydis.h>

#include "fuzz.h"
#include "templates.h"

#define MAX_ITEMS	(FUZZ_MAX_INSN - 16)
#define MAX_LABELS	512
#define LABEL_EXIT	0	/* fuzz_exit, outside the arena */
#define MAX_DEPTH	512	/* bytes the main body may push */

enum { RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8, R9, R10, R11, R12, R13, R14, R15 };

/* ------------------------------------------------------------------------ */
/* Registers                                                                 */
/* ------------------------------------------------------------------------ */

static ZydisRegister gpr(int id, int size)
{
	switch (size) {
	case 1:
		if (id < 4)
			return ZYDIS_REGISTER_AL + id;
		if (id < 8)
			return ZYDIS_REGISTER_SPL + (id - 4);
		return ZYDIS_REGISTER_R8B + (id - 8);
	case 2:
		return ZYDIS_REGISTER_AX + id;
	case 4:
		return ZYDIS_REGISTER_EAX + id;
	default:
		return ZYDIS_REGISTER_RAX + id;
	}
}

/* The general register id (0-15) of a GPR of any width, or -1. */
static int gpr_id(ZydisRegister r)
{
	ZydisRegister big = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);

	if (big >= ZYDIS_REGISTER_RAX && big <= ZYDIS_REGISTER_R15)
		return big - ZYDIS_REGISTER_RAX;
	return -1;
}

/* ------------------------------------------------------------------------ */
/* The generator's state                                                     */
/* ------------------------------------------------------------------------ */

/* One instruction: an encoder request (or raw bytes), maybe naming a label
 * whose address one operand takes (a branch target, or a RIP-relative
 * lea of code). */
struct item {
	ZydisEncoderRequest req;
	uint8_t raw[15], rawlen;
	uint8_t pfx[3], npfx;		/* neutral prefixes put in front */
	int8_t label_op;		/* -1: none */
	bool label_mem;			/* a memory operand's displacement */
	bool rel8;			/* a short branch: may need retargeting */
	int16_t label;
	uint8_t kind;			/* FUZZ_IK_* */
	uint16_t block;
	uint16_t off;
	uint8_t len;
	uint8_t bytes[16];
};

struct pending {
	int label;
	int depth;		/* the stack depth it must land at */
	int blocks_left;
};

struct sub {
	int label;
	int depth;		/* stack depth at its entry (return address pushed) */
	int ret_imm;
};

struct gen {
	struct fuzz_rng rng;
	const struct fuzz_cpu *cpu;
	ZydisDecoder dec;
	struct item *items;
	int n;
	int label_item[MAX_LABELS];	/* item index; -1 pending */
	int nlabels;
	struct pending pend[64];
	int npend;
	struct sub subs[16];
	int nsubs;
	int base;		/* the scratch base register (id) */
	int depth;		/* bytes below the entry %rsp */
	int prot;		/* a return address at E - prot (0: none) */
	bool no_rsp_mem;	/* %rsp not statically known (enter frames) */
	bool fault_mem;		/* memory operands into the guard page */
	uint32_t noclobber;	/* registers the block must not write */
	uint32_t held;		/* registers holding an address, count, divisor...
				 * between two instructions: a handler that
				 * changed one would make the sequence invalid */
	uint16_t block;
	bool indirect_jmp;
	bool failed;
	/* template choice */
	unsigned int wsum;
	unsigned int weights[FUZZ_MAX_TMPLS];
};

static unsigned int rnd(struct gen *g, unsigned int n)
{
	return fuzz_rng_below(&g->rng, n);
}

static bool chance(struct gen *g, unsigned int pct)
{
	return fuzz_rng_chance(&g->rng, pct);
}

static int64_t rnd_range(struct gen *g, int64_t lo, int64_t hi)
{
	if (hi <= lo)
		return lo;
	return lo + (int64_t)(fuzz_rng_next(&g->rng) % (uint64_t)(hi - lo + 1));
}

static void req_init(ZydisEncoderRequest *r, ZydisMnemonic m)
{
	memset(r, 0, sizeof(*r));
	r->machine_mode = ZYDIS_MACHINE_MODE_LONG_64;
	r->mnemonic = m;
}

static void op_reg(ZydisEncoderRequest *r, int i, ZydisRegister reg)
{
	r->operands[i].type = ZYDIS_OPERAND_TYPE_REGISTER;
	r->operands[i].reg.value = reg;
	if (i >= r->operand_count)
		r->operand_count = (ZyanU8)(i + 1);
}

static void op_imm(ZydisEncoderRequest *r, int i, int64_t v)
{
	r->operands[i].type = ZYDIS_OPERAND_TYPE_IMMEDIATE;
	r->operands[i].imm.s = v;
	if (i >= r->operand_count)
		r->operand_count = (ZyanU8)(i + 1);
}

static void op_mem(ZydisEncoderRequest *r, int i, ZydisRegister base, ZydisRegister index,
		   int scale, int64_t disp, int size)
{
	r->operands[i].type = ZYDIS_OPERAND_TYPE_MEMORY;
	r->operands[i].mem.base = base;
	r->operands[i].mem.index = index;
	r->operands[i].mem.scale = (ZyanU8)(index ? scale : 0);
	r->operands[i].mem.displacement = disp;
	r->operands[i].mem.size = (ZyanU16)size;
	if (i >= r->operand_count)
		r->operand_count = (ZyanU8)(i + 1);
}

/* A register the block may write: not %rsp, not the base, not a counter. */
static int rnd_dest(struct gen *g)
{
	for (;;) {
		int id = (int)rnd(g, 16);

		if (id != RSP && id != g->base && !(g->noclobber & (1u << id)))
			return id;
	}
}

/* ------------------------------------------------------------------------ */
/* Items                                                                     */
/* ------------------------------------------------------------------------ */

static struct item *item_new(struct gen *g)
{
	struct item *it;

	if (g->n >= MAX_ITEMS) {
		g->failed = true;
		it = &g->items[MAX_ITEMS];	/* a spare one, dropped */
	} else {
		it = &g->items[g->n++];
	}
	memset(it, 0, sizeof(*it));
	it->label_op = -1;
	it->label = -1;
	it->block = g->block;
	return it;
}

/* Append a request built by a block (trusted: not checked by decode).
 * Some get prefixes that change nothing in 64-bit mode in front (cs, ds,
 * es, ss overrides; branch hints on jcc), as compilers and hand-written
 * code pad with: an instruction's parts are then where decoders least
 * expect them. */
static struct item *emit(struct gen *g, const ZydisEncoderRequest *r)
{
	static const uint8_t neutral[] = { 0x2e, 0x3e, 0x26, 0x36 };
	struct item *it = item_new(g);

	it->req = *r;
	if (chance(g, 6)) {
		it->npfx = (uint8_t)(1 + rnd(g, 3));
		for (unsigned int i = 0; i < it->npfx; i++)
			it->pfx[i] = neutral[rnd(g, 4)];
	}
	return it;
}

static struct item *emit_raw(struct gen *g, const uint8_t *b, size_t len)
{
	struct item *it = item_new(g);

	memcpy(it->raw, b, len);
	it->rawlen = (uint8_t)len;
	return it;
}

static void emit0(struct gen *g, ZydisMnemonic m)
{
	ZydisEncoderRequest r;

	req_init(&r, m);
	emit(g, &r);
}

/* reg, imm / reg, reg */
static void emit_ri(struct gen *g, ZydisMnemonic m, ZydisRegister reg, int64_t imm)
{
	ZydisEncoderRequest r;

	req_init(&r, m);
	op_reg(&r, 0, reg);
	op_imm(&r, 1, imm);
	emit(g, &r);
}

static void emit_rr(struct gen *g, ZydisMnemonic m, ZydisRegister a, ZydisRegister b)
{
	ZydisEncoderRequest r;

	req_init(&r, m);
	op_reg(&r, 0, a);
	op_reg(&r, 1, b);
	emit(g, &r);
}

static int label_new(struct gen *g)
{
	if (g->nlabels == MAX_LABELS) {
		g->failed = true;
		return LABEL_EXIT;
	}
	g->label_item[g->nlabels] = -1;
	return g->nlabels++;
}

/* The label points at the next item emitted. */
static void label_here(struct gen *g, int l)
{
	g->label_item[l] = g->n;
}

/* A forward branch target: resolved at a later block start where the
 * stack depth is the current one. */
static void label_pending(struct gen *g, int l, int blocks)
{
	if (g->npend == (int)(sizeof(g->pend) / sizeof(g->pend[0]))) {
		label_here(g, l);	/* no room: the next instruction */
		return;
	}
	g->pend[g->npend].label = l;
	g->pend[g->npend].depth = g->depth;
	g->pend[g->npend].blocks_left = blocks;
	g->npend++;
}

/* The deepest depth a pending label needs: pops may not go above it. */
static int pending_max_depth(const struct gen *g)
{
	int d = 0;

	for (int i = 0; i < g->npend; i++)
		if (g->pend[i].depth > d)
			d = g->pend[i].depth;
	return d;
}

static void resolve_pending(struct gen *g, bool all_at_depth)
{
	for (int i = 0; i < g->npend;) {
		struct pending *p = &g->pend[i];

		if (p->depth == g->depth && (all_at_depth || p->blocks_left <= 0)) {
			label_here(g, p->label);
			*p = g->pend[--g->npend];
		} else {
			i++;
		}
	}
}

static void block_start(struct gen *g)
{
	g->block++;
	for (int i = 0; i < g->npend; i++)
		g->pend[i].blocks_left--;
	resolve_pending(g, false);
}

/* ------------------------------------------------------------------------ */
/* Memory operands                                                           */
/* ------------------------------------------------------------------------ */

static uintptr_t scratch_base(void)
{
	return (uintptr_t)fuzz_scratch + FUZZ_SCRATCH_SIZE / 2;
}

static int64_t align_down(int64_t v, int a)
{
	return a > 1 ? v & ~(int64_t)(a - 1) : v;
}

/*
 * A memory operand of @size bytes aligned to @align, into memory the
 * sequence owns.  An index register, when used, is made small by an
 * instruction put in @pre (*npre set to 1).
 */
static bool build_mem(struct gen *g, int size, int align, bool allow_index,
		      ZydisEncoderOperand *op, ZydisEncoderRequest *pre, int *npre)
{
	unsigned int w = rnd(g, 100);
	const int half = FUZZ_SCRATCH_SIZE / 2;

	memset(op, 0, sizeof(*op));
	op->type = ZYDIS_OPERAND_TYPE_MEMORY;
	op->mem.size = (ZyanU16)size;
	if (align < 1)
		align = 1;
	if (g->fault_mem) {
		/* into the guard page after the scratch: a fault */
		int64_t off = align_down(rnd_range(g, 0, FUZZ_GUARD_SIZE - size), align);

		if (chance(g, 50)) {
			op->mem.base = gpr(g->base, 8);
			op->mem.displacement = half + off;
		} else {
			op->mem.base = ZYDIS_REGISTER_RIP;
			op->mem.displacement = (int64_t)(uintptr_t)fuzz_guard + off;
		}
		return true;
	}
	if (w < 20 && allow_index) {
		/* [base + idx*scale + disp], idx = a byte, zero-extended */
		int idx = rnd_dest(g);
		int scale = 1 << rnd(g, 4);

		g->held |= 1u << idx;
		int64_t hi = half - size - 255 * scale;

		req_init(pre, MN(MOVZX));
		op_reg(pre, 0, gpr(idx, 4));
		op_reg(pre, 1, gpr(idx, 1));
		*npre = 1;
		op->mem.base = gpr(g->base, 8);
		op->mem.index = gpr(idx, 8);
		op->mem.scale = (ZyanU8)scale;
		op->mem.displacement = rnd_range(g, -half, hi);
		if (chance(g, 20)) {		/* the base as the index */
			op->mem.base = gpr(idx, 8);
			op->mem.index = gpr(g->base, 8);
			op->mem.scale = 1;
			op->mem.displacement = rnd_range(g, -half, half - size - 255);
		}
		return true;
	}
	if (w < 55) {
		/* [base + disp]: disp8 or disp32 forms, sometimes none */
		int64_t d = chance(g, 40) ? rnd_range(g, -128, 127 - size) :
			    rnd_range(g, -half, half - size);

		if (chance(g, 10))
			d = 0;
		op->mem.base = gpr(g->base, 8);
		op->mem.displacement = align_down(d, align);
		return true;
	}
	if (w < 72 && !g->no_rsp_mem) {
		/* [rsp + disp] into the live stack: the caller's frame above
		 * the entry %rsp (E), the red zone below it, and what was
		 * pushed since; never a return address being used. */
		int64_t lo = -(int64_t)(g->depth > FUZZ_REDZONE ? g->depth : FUZZ_REDZONE);
		int64_t hi = FUZZ_STACK_ABOVE - size;

		for (int tries = 0; tries < 8; tries++) {
			int64_t a = align_down(rnd_range(g, lo, hi), align);	/* from E */

			if (a < lo)
				continue;
			if (g->prot && a < -g->prot + 8 && a + size > -g->prot)
				continue;
			op->mem.base = ZYDIS_REGISTER_RSP;
			op->mem.displacement = a + g->depth;
			return true;
		}
	}
	/* RIP-relative, into the data area: the encoder takes the absolute
	 * address and computes the displacement. */
	op->mem.base = ZYDIS_REGISTER_RIP;
	op->mem.displacement = (int64_t)(uintptr_t)fuzz_ripdata +
			       align_down(rnd_range(g, 0, FUZZ_RIPDATA_SIZE - size), align);
	return true;
}

/* ------------------------------------------------------------------------ */
/* Template instructions, checked by decoding                                */
/* ------------------------------------------------------------------------ */

#define SYSTEM_FLAGS (ZYDIS_CPUFLAG_TF | ZYDIS_CPUFLAG_IF | ZYDIS_CPUFLAG_IOPL | \
		      ZYDIS_CPUFLAG_NT | ZYDIS_CPUFLAG_RF | ZYDIS_CPUFLAG_VM | \
		      ZYDIS_CPUFLAG_AC | ZYDIS_CPUFLAG_VIF | ZYDIS_CPUFLAG_VIP | ZYDIS_CPUFLAG_ID)

/* Does the instruction in @bytes only do what a block may do? */
static bool semantics_ok(struct gen *g, const uint8_t *bytes, size_t len, bool allow_fs)
{
	ZydisDecodedInstruction insn;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];

	if (ZYAN_FAILED(ZydisDecoderDecodeFull(&g->dec, bytes, len, &insn, ops)) ||
	    insn.length != len)
		return false;
	switch (insn.meta.category) {
	case ZYDIS_CATEGORY_COND_BR:
	case ZYDIS_CATEGORY_UNCOND_BR:
	case ZYDIS_CATEGORY_CALL:
	case ZYDIS_CATEGORY_RET:
	case ZYDIS_CATEGORY_INTERRUPT:
	case ZYDIS_CATEGORY_SYSCALL:
	case ZYDIS_CATEGORY_SYSTEM:
	case ZYDIS_CATEGORY_IO:
	case ZYDIS_CATEGORY_IOSTRINGOP:
	case ZYDIS_CATEGORY_X87_ALU:
		return false;
	default:
		break;
	}
	if (insn.cpu_flags && ((insn.cpu_flags->modified | insn.cpu_flags->set_0 |
				insn.cpu_flags->set_1 | insn.cpu_flags->undefined) & SYSTEM_FLAGS))
		return false;
	for (unsigned int i = 0; i < insn.operand_count; i++) {
		const ZydisDecodedOperand *o = &ops[i];

		if (o->type == ZYDIS_OPERAND_TYPE_POINTER)
			return false;
		if (o->type == ZYDIS_OPERAND_TYPE_MEMORY) {
			if (o->visibility != ZYDIS_OPERAND_VISIBILITY_EXPLICIT)
				return false;	/* push, pop, string, xlat... */
			if (o->mem.type != ZYDIS_MEMOP_TYPE_MEM &&
			    o->mem.type != ZYDIS_MEMOP_TYPE_AGEN)
				return false;	/* vsib, mib */
			if ((o->mem.segment == ZYDIS_REGISTER_FS ||
			     o->mem.segment == ZYDIS_REGISTER_GS) && !allow_fs)
				return false;
			continue;
		}
		if (o->type != ZYDIS_OPERAND_TYPE_REGISTER ||
		    !(o->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
			continue;
		switch (ZydisRegisterGetClass(o->reg.value)) {
		case ZYDIS_REGCLASS_GPR8:
		case ZYDIS_REGCLASS_GPR16:
		case ZYDIS_REGCLASS_GPR32:
		case ZYDIS_REGCLASS_GPR64: {
			int id = gpr_id(o->reg.value);

			if (id < 0 || id == RSP || id == g->base || (g->noclobber & (1u << id)))
				return false;
			break;
		}
		case ZYDIS_REGCLASS_XMM:
		case ZYDIS_REGCLASS_YMM:
		case ZYDIS_REGCLASS_ZMM:
		case ZYDIS_REGCLASS_MASK:
		case ZYDIS_REGCLASS_FLAGS:
			break;
		default:
			return false;	/* ip, segments, mxcsr, x87 ... */
		}
	}
	return true;
}

/* Encode @r at the arena's start (only relative operands depend on where;
 * those are checked at layout). */
static bool encode_probe(const ZydisEncoderRequest *r, uint8_t *buf, ZyanUSize *len)
{
	ZydisEncoderRequest c = *r;

	*len = 16;
	return ZYAN_SUCCESS(ZydisEncoderEncodeInstructionAbsolute(&c, buf, len,
								 (uintptr_t)fuzz_arena));
}

static ZydisRegister vreg(struct gen *g, int width, bool evex)
{
	int n = evex && g->cpu->avx512 ? 32 : 16;
	int id = (int)rnd(g, (unsigned int)n);

	switch (width) {
	case 16: return ZYDIS_REGISTER_XMM0 + id;
	case 32: return ZYDIS_REGISTER_YMM0 + id;
	default: return ZYDIS_REGISTER_ZMM0 + id;
	}
}

static int64_t rnd_imm(struct gen *g, int size)
{
	switch (size) {
	case 1: return (int8_t)rnd(g, 256);
	case 2: return (int16_t)rnd(g, 65536);
	default:
		if (chance(g, 40))
			return (int8_t)rnd(g, 256);
		return (int32_t)(uint32_t)fuzz_rng_next(&g->rng);
	}
}

/* An address for lea: anything goes, it is never dereferenced. */
static void build_lea(struct gen *g, int size, ZydisEncoderOperand *op)
{
	bool a32 = chance(g, 15);
	int asz = a32 ? 4 : 8;

	memset(op, 0, sizeof(*op));
	op->type = ZYDIS_OPERAND_TYPE_MEMORY;
	op->mem.size = (ZyanU16)size;
	if (!a32 && chance(g, 20)) {
		/* RIP-relative: an address near the code (its value depends
		 * on where the code runs: a relocated copy must give the
		 * original's) */
		op->mem.base = ZYDIS_REGISTER_RIP;
		op->mem.displacement = (int64_t)(uintptr_t)fuzz_arena + rnd_range(g, -4096, 12288);
		return;
	}
	if (chance(g, 85))
		op->mem.base = gpr((int)rnd(g, 16), asz);
	if (chance(g, 50)) {
		int idx;

		do
			idx = (int)rnd(g, 16);
		while (idx == RSP);
		op->mem.index = gpr(idx, asz);
		op->mem.scale = (ZyanU8)(1 << rnd(g, 4));
	}
	if (!op->mem.base && !op->mem.index)
		op->mem.base = gpr((int)rnd(g, 16), asz);
	op->mem.displacement = chance(g, 30) ? 0 : chance(g, 50) ? (int8_t)rnd(g, 256) :
			       (int32_t)(uint32_t)fuzz_rng_next(&g->rng);
}

/* One attempt at an instance of @t.  True if it encodes and passes. */
static bool try_tmpl(struct gen *g, const struct tmpl *t, ZydisEncoderRequest *r,
		     ZydisEncoderRequest *pre, int *npre)
{
	static const int sizes_of[] = { ['1'] = 1, ['2'] = 2, ['4'] = 4, ['8'] = 8 };
	int S = t->sizes[0] ? sizes_of[(unsigned char)t->sizes[rnd(g, (unsigned int)strlen(t->sizes))]] : 0;
	int W = 0;
	bool evex = t->flags & T_EVEX;
	uint8_t buf[16];
	ZyanUSize len;
	int last_vreg = -1;

	if (t->widths[0]) {
		char c = t->widths[rnd(g, (unsigned int)strlen(t->widths))];

		W = c == 'x' ? 16 : c == 'y' ? 32 : 64;
	}
	req_init(r, t->m);
	*npre = 0;
	if (t->flags & T_VEX)
		r->allowed_encodings = ZYDIS_ENCODABLE_ENCODING_VEX;
	else if (evex)
		r->allowed_encodings = ZYDIS_ENCODABLE_ENCODING_EVEX;
	else if (t->flags & T_LEG)
		r->allowed_encodings = ZYDIS_ENCODABLE_ENCODING_LEGACY;
	for (int i = 0; i < 5 && t->ops[i]; i++) {
		const char *k = t->ops[i];
		char c = k[rnd(g, (unsigned int)strlen(k))];
		ZydisEncoderOperand *o = &r->operands[i];
		int msz = 0, al = 1;

		switch (c) {
		case 'r': {
			int id = (int)rnd(g, 16);

			if (S == 1 && id < 4 && chance(g, 15))
				op_reg(r, i, ZYDIS_REGISTER_AH + id);
			else
				op_reg(r, i, gpr(id, S));
			break;
		}
		case 'b': op_reg(r, i, gpr((int)rnd(g, 16), 1)); break;
		case 'w': op_reg(r, i, gpr((int)rnd(g, 16), 2)); break;
		case 'd': op_reg(r, i, gpr((int)rnd(g, 16), 4)); break;
		case 'q': op_reg(r, i, gpr((int)rnd(g, 16), 8)); break;
		case 'c': op_reg(r, i, ZYDIS_REGISTER_CL); break;
		case 'i': op_imm(r, i, rnd_imm(g, S)); break;
		case 'I': op_imm(r, i, (int64_t)fuzz_rng_next(&g->rng)); break;
		case 'k': op_imm(r, i, rnd(g, 256)); break;
		case '1': op_imm(r, i, 1); break;
		case 'x': op_reg(r, i, vreg(g, 16, evex)); last_vreg = i; break;
		case 'y': op_reg(r, i, vreg(g, 32, evex)); last_vreg = i; break;
		case 'V': op_reg(r, i, vreg(g, W, evex)); last_vreg = i; break;
		case 'H': op_reg(r, i, vreg(g, W / 2, evex)); last_vreg = i; break;
		case 'K': op_reg(r, i, ZYDIS_REGISTER_K0 + rnd(g, 8)); break;
		case 'M':
			op_reg(r, i, chance(g, 30) ? ZYDIS_REGISTER_K0 : ZYDIS_REGISTER_K1 + rnd(g, 7));
			if (i == 1 && chance(g, 30) && t->ops[0][0] != 'N')
				r->evex.zeroing_mask = ZYAN_TRUE;
			break;
		case 'L':
			build_lea(g, S, o);
			if (i >= r->operand_count)
				r->operand_count = (ZyanU8)(i + 1);
			break;
		case 'm': msz = S; break;
		case 'B': msz = 1; break;
		case 'W': msz = 2; break;
		case 'D': msz = 4; break;
		case 'Q': msz = 8; break;
		case 'X': msz = 16; al = 16; break;
		case 'Y': msz = 32; al = 32; break;
		case 'N': msz = W; al = W; break;
		case 'h': msz = W / 2; al = W / 2; break;
		default: return false;
		}
		if (msz) {
			/* vector memory (al > 1) is aligned, as legacy SSE
			 * demands, and has no index (an aligned address
			 * needs a known base) */
			build_mem(g, msz, al, al == 1 && !*npre, o, pre, npre);
			if (i >= r->operand_count)
				r->operand_count = (ZyanU8)(i + 1);
		}
	}
	if ((t->flags & T_IS4) && last_vreg >= 0)
		r->operands[last_vreg].reg.is4 = ZYAN_TRUE;
	if ((t->flags & T_LOCK) && r->operands[0].type == ZYDIS_OPERAND_TYPE_MEMORY && chance(g, 35))
		r->prefixes |= ZYDIS_ATTRIB_HAS_LOCK;
	if (!encode_probe(r, buf, &len))
		return false;
	if (!semantics_ok(g, buf, len, false))
		return false;
	if (*npre) {
		if (!encode_probe(pre, buf, &len) || !semantics_ok(g, buf, len, false))
			return false;
	}
	return true;
}

static const struct tmpl *pick_tmpl(struct gen *g)
{
	unsigned int x = rnd(g, g->wsum);

	for (size_t i = 0; i < fuzz_ntmpls; i++) {
		if (x < g->weights[i])
			return &fuzz_tmpls[i];
		x -= g->weights[i];
	}
	return &fuzz_tmpls[0];
}

/* One instruction from the templates (with its index setup, if any). */
static void gen_simple(struct gen *g)
{
	ZydisEncoderRequest r, pre;
	int npre;

	for (int tries = 0; tries < 200; tries++) {
		const struct tmpl *t = pick_tmpl(g);

		for (int a = 0; a < 12; a++) {
			if (try_tmpl(g, t, &r, &pre, &npre)) {
				if (npre)
					emit(g, &pre);
				emit(g, &r);
				return;
			}
		}
	}
	emit0(g, MN(NOP));
}

/* ------------------------------------------------------------------------ */
/* Blocks                                                                    */
/* ------------------------------------------------------------------------ */

static const ZydisMnemonic jcc_mn[16] = {
	MN(JO), MN(JNO), MN(JB), MN(JNB), MN(JZ), MN(JNZ), MN(JBE), MN(JNBE),
	MN(JS), MN(JNS), MN(JP), MN(JNP), MN(JL), MN(JNL), MN(JLE), MN(JNLE),
};

/* A branch to @label: operand 0 is the label's address. */
static struct item *emit_branch(struct gen *g, ZydisMnemonic m, int label, bool rel8,
				ZydisInstructionAttributes prefixes)
{
	ZydisEncoderRequest r;
	struct item *it;

	req_init(&r, m);
	op_imm(&r, 0, 0);
	r.branch_type = ZYDIS_BRANCH_TYPE_NEAR;
	r.branch_width = rel8 ? ZYDIS_BRANCH_WIDTH_8 : ZYDIS_BRANCH_WIDTH_32;
	if (m == MN(JRCXZ) || m == MN(JECXZ) || m == MN(LOOP) || m == MN(LOOPE) ||
	    m == MN(LOOPNE))
		r.branch_type = ZYDIS_BRANCH_TYPE_SHORT;
	else if (rel8)
		r.branch_type = ZYDIS_BRANCH_TYPE_SHORT;
	r.prefixes = prefixes;
	it = emit(g, &r);
	it->label_op = 0;
	it->label = (int16_t)label;
	it->rel8 = rel8;
	return it;
}

/* lea LABEL(%rip), %reg */
static void emit_lea_label(struct gen *g, int label, int reg)
{
	ZydisEncoderRequest r;
	struct item *it;

	req_init(&r, MN(LEA));
	op_reg(&r, 0, gpr(reg, 8));
	op_mem(&r, 1, ZYDIS_REGISTER_RIP, ZYDIS_REGISTER_NONE, 0, 0, 8);
	it = emit(g, &r);
	it->label_op = 1;
	it->label_mem = true;
	it->label = (int16_t)label;
}

static ZydisInstructionAttributes branch_prefix(struct gen *g)
{
	unsigned int x = rnd(g, 100);

	if (x < 6)
		return ZYDIS_ATTRIB_HAS_BRANCH_TAKEN;
	if (x < 10)
		return ZYDIS_ATTRIB_HAS_BRANCH_NOT_TAKEN;
	if (x < 15)
		return ZYDIS_ATTRIB_HAS_BND;
	return 0;
}

static void block_jcc(struct gen *g)
{
	int l = label_new(g);
	bool rel8 = chance(g, 50);

	emit_branch(g, jcc_mn[rnd(g, 16)], l, rel8, branch_prefix(g));
	label_pending(g, l, (int)rnd(g, 6));
}

static void block_jmp(struct gen *g)
{
	int l = label_new(g);
	bool rel8 = chance(g, 50);

	/* (Zydis 4.0 encodes no bnd jmp rel8) */
	emit_branch(g, MN(JMP), l, rel8, !rel8 && chance(g, 10) ? ZYDIS_ATTRIB_HAS_BND : 0);
	label_pending(g, l, 1 + (int)rnd(g, 3));
}

/* loop/loope/loopne/jrcxz/jecxz forward (rel8 only) */
static void block_loop_fwd(struct gen *g)
{
	static const ZydisMnemonic m[] = { MN(LOOP), MN(LOOPE), MN(LOOPNE), MN(JRCXZ), MN(JECXZ) };
	int l = label_new(g);

	if (g->noclobber & (1u << RCX) || g->base == RCX)
		return;
	emit_branch(g, m[rnd(g, 5)], l, true, 0);
	label_pending(g, l, (int)rnd(g, 3));
}

/* A counted loop: mov $k, C; L: body; dec C; jnz L (or loop L). */
static void block_counted(struct gen *g)
{
	int c = chance(g, 50) ? RCX : rnd_dest(g);
	int l = label_new(g), nbody = 1 + (int)rnd(g, 3), v = (int)rnd(g, 4);

	emit_ri(g, MN(MOV), gpr(c, 4), 1 + (int)rnd(g, 6));
	label_here(g, l);
	g->noclobber |= 1u << c;
	g->held |= 1u << c;
	for (int i = 0; i < nbody; i++)
		gen_simple(g);
	g->noclobber &= ~(1u << c);
	if (c == RCX && v < 3) {
		static const ZydisMnemonic m[] = { MN(LOOP), MN(LOOPE), MN(LOOPNE) };

		emit_branch(g, m[v], l, true, 0)->kind = FUZZ_IK_LOOPBACK;
		return;
	}
	if (chance(g, 50))
		emit_ri(g, MN(SUB), gpr(c, 4), 1);
	else {
		ZydisEncoderRequest r;

		req_init(&r, MN(DEC));
		op_reg(&r, 0, gpr(c, chance(g, 50) ? 4 : 8));
		emit(g, &r);
	}
	emit_branch(g, MN(JNZ), l, chance(g, 60),
		    chance(g, 10) ? ZYDIS_ATTRIB_HAS_BRANCH_TAKEN : 0)->kind = FUZZ_IK_LOOPBACK;
}

static void block_push(struct gen *g)
{
	ZydisEncoderRequest r, pre;
	int npre = 0;

	req_init(&r, MN(PUSH));
	switch (rnd(g, 4)) {
	case 0:
		op_imm(&r, 0, rnd_imm(g, 4));
		break;
	case 1:
		r.operand_count = 1;
		build_mem(g, 8, 1, true, &r.operands[0], &pre, &npre);
		break;
	default:
		op_reg(&r, 0, gpr((int)rnd(g, 16), 8));
		break;
	}
	if (npre)
		emit(g, &pre);
	emit(g, &r);
	g->depth += 8;
}

static void block_pop(struct gen *g)
{
	ZydisEncoderRequest r;

	req_init(&r, MN(POP));
	if (chance(g, 25)) {
		/* pop into memory: the base register only (an %rsp base
		 * would be computed after the increment) */
		op_mem(&r, 0, gpr(g->base, 8), ZYDIS_REGISTER_NONE, 0,
		       rnd_range(g, -FUZZ_SCRATCH_SIZE / 2, FUZZ_SCRATCH_SIZE / 2 - 8), 8);
	} else {
		op_reg(&r, 0, gpr(rnd_dest(g), 8));
	}
	emit(g, &r);
	g->depth -= 8;
}

/* pushfq; pop R; xor $mask, R; push R; popfq  -- or pushfq; insn; popfq */
static void block_pushf(struct gen *g)
{
	static const uint32_t bits[] = { 0x1, 0x4, 0x10, 0x40, 0x80, 0x400, 0x800 };
	struct item *it;

	it = item_new(g);
	req_init(&it->req, MN(PUSHFQ));
	it->kind = FUZZ_IK_PUSHF;
	g->depth += 8;
	if (chance(g, 60)) {
		int reg = rnd_dest(g);
		uint32_t mask = 0;
		ZydisEncoderRequest r;

		g->held |= 1u << reg;	/* what popfq will load */
		for (unsigned int i = 0; i < 7; i++)
			if (chance(g, 30))
				mask |= bits[i];
		req_init(&r, MN(POP));
		op_reg(&r, 0, gpr(reg, 8));
		emit(g, &r);
		emit_ri(g, MN(XOR), gpr(reg, chance(g, 50) ? 4 : 8), mask);
		req_init(&r, MN(PUSH));
		op_reg(&r, 0, gpr(reg, 8));
		emit(g, &r);
	} else {
		/* nothing %rsp-relative: it could overwrite what popfq loads */
		bool was = g->no_rsp_mem;

		g->no_rsp_mem = true;
		gen_simple(g);
		g->no_rsp_mem = was;
	}
	emit0(g, MN(POPFQ));
	g->depth -= 8;
}

/* lea d1(B), %rsi; lea d2(B), %rdi; mov $n, %ecx; [rep] string op */
static void block_string(struct gen *g)
{
	static const ZydisMnemonic ops[5][4] = {
		{ MN(MOVSB), MN(MOVSW), MN(MOVSD), MN(MOVSQ) },
		{ MN(STOSB), MN(STOSW), MN(STOSD), MN(STOSQ) },
		{ MN(LODSB), MN(LODSW), MN(LODSD), MN(LODSQ) },
		{ MN(CMPSB), MN(CMPSW), MN(CMPSD), MN(CMPSQ) },
		{ MN(SCASB), MN(SCASW), MN(SCASD), MN(SCASQ) },
	};
	int k = (int)rnd(g, 5), sz = (int)rnd(g, 4);
	ZydisEncoderRequest r;
	struct item *it;

	if (g->noclobber & ((1u << RSI) | (1u << RDI) | (1u << RCX) | (1u << RAX)))
		return;
	g->held |= (1u << RSI) | (1u << RDI) | (1u << RCX);
	req_init(&r, MN(LEA));
	op_reg(&r, 0, gpr(RSI, 8));
	op_mem(&r, 1, gpr(g->base, 8), ZYDIS_REGISTER_NONE, 0, rnd_range(g, -1024, 1024), 8);
	emit(g, &r);
	req_init(&r, MN(LEA));
	op_reg(&r, 0, gpr(RDI, 8));
	op_mem(&r, 1, gpr(g->base, 8), ZYDIS_REGISTER_NONE, 0, rnd_range(g, -1024, 1024), 8);
	emit(g, &r);
	emit_ri(g, MN(MOV), gpr(RCX, 4), rnd(g, 40));
	req_init(&r, ops[k][sz]);
	if (chance(g, 75)) {
		if (k < 3)
			r.prefixes = ZYDIS_ATTRIB_HAS_REP;
		else
			r.prefixes = chance(g, 50) ? ZYDIS_ATTRIB_HAS_REPE : ZYDIS_ATTRIB_HAS_REPNE;
	}
	it = emit(g, &r);
	if (r.prefixes)
		it->kind = FUZZ_IK_REPSTR;
}

/* A guarded divide: the dividend's high half made safe, the divisor made
 * non-zero (and positive for idiv), then div/idiv. */
static void block_div(struct gen *g)
{
	bool sign = chance(g, 50);
	int S = 1 << rnd(g, 4);
	ZydisEncoderRequest r;

	if (g->base == RAX || g->base == RDX ||
	    (g->noclobber & ((1u << RAX) | (1u << RDX))))
		return;
	g->held |= (1u << RAX) | (1u << RDX);
	/* the dividend */
	if (sign) {
		static const ZydisMnemonic ext[] = { MN(CBW), MN(CWD), MN(CDQ), MN(CQO) };

		emit0(g, ext[__builtin_ctz((unsigned int)S)]);
	} else if (S == 1) {
		emit_rr(g, MN(MOVZX), gpr(RAX, 4), gpr(RAX, 1));
	} else {
		emit_rr(g, MN(XOR), gpr(RDX, 4), gpr(RDX, 4));
	}
	req_init(&r, sign ? MN(IDIV) : MN(DIV));
	if (chance(g, 60)) {
		int d;

		do
			d = rnd_dest(g);
		while (d == RAX || d == RDX);
		g->held |= 1u << d;
		if (sign)
			emit_ri(g, MN(AND), gpr(d, S), S == 1 ? 0x7f : S == 2 ? 0x7fff : 0x7fffffff);
		emit_ri(g, MN(OR), gpr(d, S), 2);
		op_reg(&r, 0, gpr(d, S));
	} else {
		/* memory divisor: scratch, through the base */
		int64_t disp = rnd_range(g, -FUZZ_SCRATCH_SIZE / 2, FUZZ_SCRATCH_SIZE / 2 - 8);
		ZydisEncoderRequest m;

		req_init(&m, MN(OR));
		op_mem(&m, 0, gpr(g->base, 8), ZYDIS_REGISTER_NONE, 0, disp, 1);
		op_imm(&m, 1, 2);
		emit(g, &m);
		if (sign) {
			req_init(&m, MN(AND));
			op_mem(&m, 0, gpr(g->base, 8), ZYDIS_REGISTER_NONE, 0, disp + S - 1, 1);
			op_imm(&m, 1, 0x7f);
			emit(g, &m);
		}
		op_mem(&r, 0, gpr(g->base, 8), ZYDIS_REGISTER_NONE, 0, disp, S);
	}
	emit(g, &r);
}

/* enter $n, $0 (or push %rbp; mov %rsp, %rbp; sub $n, %rsp); body; leave */
static void block_frame(struct gen *g)
{
	int n = (int)rnd(g, 33) * 8, nbody = (int)rnd(g, 3);
	ZydisEncoderRequest r;

	if (g->base == RBP || (g->noclobber & (1u << RBP)))
		return;
	if (chance(g, 50)) {
		req_init(&r, MN(ENTER));
		op_imm(&r, 0, n);
		op_imm(&r, 1, 0);
		emit(g, &r);
	} else {
		req_init(&r, MN(PUSH));
		op_reg(&r, 0, ZYDIS_REGISTER_RBP);
		emit(g, &r);
		emit_rr(g, MN(MOV), ZYDIS_REGISTER_RBP, ZYDIS_REGISTER_RSP);
		emit_ri(g, MN(SUB), ZYDIS_REGISTER_RSP, n);
	}
	g->no_rsp_mem = true;
	g->noclobber |= 1u << RBP;
	g->held |= 1u << RBP;
	for (int i = 0; i < nbody; i++)
		gen_simple(g);
	g->noclobber &= ~(1u << RBP);
	g->no_rsp_mem = false;
	emit0(g, MN(LEAVE));
}

/* Odd encodings: long nops, endbr64, prefixed nops. */
static void block_raw(struct gen *g)
{
	static const uint8_t odd[][12] = {
		{ 4, 0xf3, 0x0f, 0x1e, 0xfa },		/* endbr64 */
		{ 2, 0xf3, 0x90 },			/* pause */
		{ 2, 0x66, 0x90 },			/* xchg %ax,%ax */
		{ 2, 0x48, 0x90 },			/* rex.w nop */
		{ 3, 0x0f, 0x1f, 0x00 },		/* nopl (%rax) */
		{ 3, 0x0f, 0x1f, 0xc0 },		/* nopl %eax */
		{ 10, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0 },	/* cs nopw 0(%rax,%rax) */
	};

	if (chance(g, 50)) {
		uint8_t buf[16];
		size_t n = 1 + rnd(g, 15), off = 0;

		ZydisEncoderNopFill(buf, n);
		while (off < n) {
			ZydisDecodedInstruction insn;

			if (ZYAN_FAILED(ZydisDecoderDecodeInstruction(&g->dec, NULL, buf + off,
								      n - off, &insn)))
				break;
			emit_raw(g, buf + off, insn.length);
			off += insn.length;
		}
		return;
	}
	{
		const uint8_t *o = odd[rnd(g, sizeof(odd) / sizeof(odd[0]))];

		emit_raw(g, o + 1, o[0]);
	}
}

/* Reads of the thread pointer's block: mov/add/cmp %fs:off, R. */
static void block_fs(struct gen *g)
{
	static const int offs[] = { 0x0, 0x10, 0x28, 0x30 };
	static const ZydisMnemonic m[] = { MN(MOV), MN(ADD), MN(CMP), MN(XOR) };
	ZydisEncoderRequest r;

	req_init(&r, m[rnd(g, 4)]);
	r.prefixes = ZYDIS_ATTRIB_HAS_SEGMENT_FS;
	op_reg(&r, 0, gpr(rnd_dest(g), 8));
	op_mem(&r, 1, ZYDIS_REGISTER_NONE, ZYDIS_REGISTER_NONE, 0, offs[rnd(g, 4)], 8);
	emit(g, &r);
}

static void block_cx16(struct gen *g)
{
	ZydisEncoderRequest r;
	bool b16 = chance(g, 50);

	if (g->base == RAX || g->base == RDX || (g->noclobber & ((1u << RAX) | (1u << RDX))))
		return;
	req_init(&r, b16 ? MN(CMPXCHG16B) : MN(CMPXCHG8B));
	if (chance(g, 70))
		r.prefixes = ZYDIS_ATTRIB_HAS_LOCK;
	op_mem(&r, 0, gpr(g->base, 8), ZYDIS_REGISTER_NONE, 0,
	       rnd_range(g, -64, 63) * 16, b16 ? 16 : 8);
	emit(g, &r);
}

static void block_xlat(struct gen *g)
{
	if (g->base != RBX || (g->noclobber & 1u))
		return;
	emit0(g, MN(XLAT));
}

/* lea of a code address (a label, or the exit). */
static void block_lea_code(struct gen *g)
{
	int l = g->nlabels > 1 && chance(g, 70) ? 1 + (int)rnd(g, (unsigned int)g->nlabels - 1) :
		LABEL_EXIT;

	emit_lea_label(g, l, rnd_dest(g));
}

/* A call to a new subroutine, direct or indirect, maybe with arguments
 * that the subroutine's "ret $n" drops. */
static void block_call(struct gen *g)
{
	int l = label_new(g), nargs = chance(g, 25) ? 1 + (int)rnd(g, 2) : 0;
	int v = (int)rnd(g, 5), reg = rnd_dest(g);
	ZydisEncoderRequest r;

	if (g->nsubs == (int)(sizeof(g->subs) / sizeof(g->subs[0])))
		return;
	g->held |= 1u << reg;
	for (int i = 0; i < nargs; i++) {
		req_init(&r, MN(PUSH));
		if (chance(g, 50))
			op_imm(&r, 0, rnd_imm(g, 4));
		else
			op_reg(&r, 0, gpr((int)rnd(g, 16), 8));
		emit(g, &r);
		g->depth += 8;
	}
	g->subs[g->nsubs].label = l;
	g->subs[g->nsubs].depth = g->depth + 8;
	g->subs[g->nsubs].ret_imm = nargs * 8;
	g->nsubs++;
	switch (v) {
	case 0:
	case 1:
		emit_branch(g, MN(CALL), l, false, chance(g, 15) ? ZYDIS_ATTRIB_HAS_BND : 0);
		break;
	case 2:
		emit_lea_label(g, l, reg);
		req_init(&r, MN(CALL));
		op_reg(&r, 0, gpr(reg, 8));
		if (chance(g, 20))
			r.prefixes = ZYDIS_ATTRIB_HAS_NOTRACK;
		emit(g, &r);
		break;
	case 3: {
		int64_t d = rnd_range(g, -128, 127) * 8;

		emit_lea_label(g, l, reg);
		req_init(&r, MN(MOV));
		op_mem(&r, 0, gpr(g->base, 8), ZYDIS_REGISTER_NONE, 0, d, 8);
		op_reg(&r, 1, gpr(reg, 8));
		emit(g, &r);
		req_init(&r, MN(CALL));
		op_mem(&r, 0, gpr(g->base, 8), ZYDIS_REGISTER_NONE, 0, d, 8);
		emit(g, &r);
		break;
	}
	default: {
		int64_t a = (int64_t)(uintptr_t)fuzz_ripdata + rnd_range(g, 0, 511) * 8;

		emit_lea_label(g, l, reg);
		req_init(&r, MN(MOV));
		op_mem(&r, 0, ZYDIS_REGISTER_RIP, ZYDIS_REGISTER_NONE, 0, a, 8);
		op_reg(&r, 1, gpr(reg, 8));
		emit(g, &r);
		req_init(&r, MN(CALL));
		op_mem(&r, 0, ZYDIS_REGISTER_RIP, ZYDIS_REGISTER_NONE, 0, a, 8);
		emit(g, &r);
		break;
	}
	}
	g->depth -= nargs * 8;
}

/* An indirect jump forward (the function then has one: no multi-instruction
 * detour anywhere in it). */
static void block_ijmp(struct gen *g)
{
	int l = label_new(g), reg = rnd_dest(g);
	ZydisEncoderRequest r;

	g->held |= 1u << reg;
	emit_lea_label(g, l, reg);
	req_init(&r, MN(JMP));
	if (chance(g, 40)) {
		op_reg(&r, 0, gpr(reg, 8));
		if (chance(g, 25))
			r.prefixes = ZYDIS_ATTRIB_HAS_NOTRACK;
	} else if (chance(g, 40)) {
		/* jmp *slot(%rip) */
		int64_t a = (int64_t)(uintptr_t)fuzz_ripdata + rnd_range(g, 0, 511) * 8;
		ZydisEncoderRequest m;

		req_init(&m, MN(MOV));
		op_mem(&m, 0, ZYDIS_REGISTER_RIP, ZYDIS_REGISTER_NONE, 0, a, 8);
		op_reg(&m, 1, gpr(reg, 8));
		emit(g, &m);
		op_mem(&r, 0, ZYDIS_REGISTER_RIP, ZYDIS_REGISTER_NONE, 0, a, 8);
	} else {
		int64_t d = rnd_range(g, -128, 127) * 8;
		ZydisEncoderRequest m;

		req_init(&m, MN(MOV));
		op_mem(&m, 0, gpr(g->base, 8), ZYDIS_REGISTER_NONE, 0, d, 8);
		op_reg(&m, 1, gpr(reg, 8));
		emit(g, &m);
		op_mem(&r, 0, gpr(g->base, 8), ZYDIS_REGISTER_NONE, 0, d, 8);
	}
	emit(g, &r);
	label_pending(g, l, 1 + (int)rnd(g, 3));
}

/* call 1f; 1: pop R -- the position-independent way to read the pc: the
 * pushed return address must be the original one. */
static void block_getpc(struct gen *g)
{
	int l = label_new(g);
	ZydisEncoderRequest r;

	emit_branch(g, MN(CALL), l, false, 0);
	label_here(g, l);
	req_init(&r, MN(POP));
	op_reg(&r, 0, gpr(rnd_dest(g), 8));
	emit(g, &r);
}

/* movabs between %al..%rax and a 64-bit absolute address (moffs): an
 * address in the instruction that no relocation may touch. */
static void block_movabs(struct gen *g)
{
	static const int sizes[] = { 1, 2, 4, 8 };
	int sz = sizes[rnd(g, 4)];
	bool store = chance(g, 50);
	uintptr_t a = chance(g, 50) ? (uintptr_t)fuzz_ripdata + rnd(g, FUZZ_RIPDATA_SIZE - 8) :
		      (uintptr_t)fuzz_scratch + rnd(g, FUZZ_SCRATCH_SIZE - 8);
	ZydisEncoderRequest r;

	if (!store && (g->base == RAX || (g->noclobber & 1u)))
		return;
	req_init(&r, MN(MOV));
	op_reg(&r, store ? 1 : 0, gpr(RAX, sz));
	op_mem(&r, store ? 0 : 1, ZYDIS_REGISTER_NONE, ZYDIS_REGISTER_NONE, 0, (int64_t)a, sz);
	emit(g, &r);
}

/*
 * A fault on purpose: an access to the guard page (#PF), a divide by zero
 * (#DE), ud2 (#UD), a misaligned movdqa and a non-canonical address (#GP).
 * The program's own handler (run.c) records what it sees and resumes after
 * the instruction; with probes it must see exactly the same.
 */
static void block_fault(struct gen *g)
{
	static const uint8_t ud2[] = { 0x0f, 0x0b };
	ZydisEncoderRequest r;
	int d = rnd_dest(g);

	switch (rnd(g, 6)) {
	case 0:
	case 1:
		g->fault_mem = true;
		gen_simple(g);
		g->fault_mem = false;
		break;
	case 2:
		g->held |= 1u << d;
		emit_rr(g, MN(XOR), gpr(d, 4), gpr(d, 4));
		req_init(&r, chance(g, 50) ? MN(DIV) : MN(IDIV));
		op_reg(&r, 0, gpr(d, 1 << rnd(g, 4)));
		emit(g, &r);
		break;
	case 3:
		emit_raw(g, ud2, sizeof(ud2));
		break;
	case 4:
		req_init(&r, chance(g, 50) ? MN(MOVDQA) : MN(MOVAPS));
		op_reg(&r, chance(g, 50) ? 0 : 1, ZYDIS_REGISTER_XMM0 + rnd(g, 16));
		op_mem(&r, r.operands[0].type ? 1 : 0, gpr(g->base, 8), ZYDIS_REGISTER_NONE, 0,
		       rnd_range(g, -64, 63) * 16 + 8, 16);
		emit(g, &r);
		break;
	default:
		g->held |= 1u << d;
		emit_ri(g, MN(MOV), gpr(d, 8),
			(int64_t)(0x8000000000000000ull | (fuzz_rng_next(&g->rng) >> 2)));
		req_init(&r, MN(MOV));
		op_reg(&r, 0, gpr(rnd_dest(g), 4));
		op_mem(&r, 1, gpr(d, 8), ZYDIS_REGISTER_NONE, 0, 0, 4);
		emit(g, &r);
		break;
	}
}

enum block_kind {
	BK_SIMPLE, BK_JCC, BK_JMP, BK_LOOPFWD, BK_COUNTED, BK_CALL, BK_PUSH, BK_POP,
	BK_PUSHF, BK_STRING, BK_DIV, BK_FRAME, BK_RAW, BK_FS, BK_CX16, BK_XLAT,
	BK_LEACODE, BK_IJMP, BK_GETPC, BK_MOVABS, BK_FAULT, BK_COUNT
};

static const uint8_t main_weight[BK_COUNT] = {
	[BK_SIMPLE] = 60, [BK_JCC] = 8, [BK_JMP] = 2, [BK_LOOPFWD] = 3, [BK_COUNTED] = 3,
	[BK_CALL] = 5, [BK_PUSH] = 5, [BK_POP] = 5, [BK_PUSHF] = 3, [BK_STRING] = 4,
	[BK_DIV] = 3, [BK_FRAME] = 2, [BK_RAW] = 3, [BK_FS] = 1, [BK_CX16] = 1,
	[BK_XLAT] = 1, [BK_LEACODE] = 2, [BK_IJMP] = 3, [BK_GETPC] = 1, [BK_MOVABS] = 1,
	[BK_FAULT] = 4,
};

static const uint8_t sub_weight[BK_COUNT] = {
	[BK_SIMPLE] = 60, [BK_PUSHF] = 4, [BK_STRING] = 4, [BK_DIV] = 3, [BK_RAW] = 3,
	[BK_FS] = 1, [BK_CX16] = 1, [BK_LEACODE] = 1, [BK_MOVABS] = 1, [BK_FAULT] = 1,
};

static void gen_block(struct gen *g, const uint8_t *weights)
{
	unsigned int sum = 0, x;
	int k;

	for (k = 0; k < BK_COUNT; k++)
		sum += weights[k];
	x = rnd(g, sum);
	for (k = 0; k < BK_COUNT && x >= weights[k]; k++)
		x -= weights[k];
	switch (k) {
	case BK_JCC: block_jcc(g); break;
	case BK_JMP: block_jmp(g); break;
	case BK_LOOPFWD: block_loop_fwd(g); break;
	case BK_COUNTED: block_counted(g); break;
	case BK_CALL: block_call(g); break;
	case BK_PUSH:
		if (g->depth + 8 <= MAX_DEPTH)
			block_push(g);
		break;
	case BK_POP:
		if (g->depth >= 8 && g->depth - 8 >= pending_max_depth(g))
			block_pop(g);
		break;
	case BK_PUSHF: block_pushf(g); break;
	case BK_STRING: block_string(g); break;
	case BK_DIV: block_div(g); break;
	case BK_FRAME: block_frame(g); break;
	case BK_RAW: block_raw(g); break;
	case BK_FS: block_fs(g); break;
	case BK_CX16: block_cx16(g); break;
	case BK_XLAT: block_xlat(g); break;
	case BK_LEACODE: block_lea_code(g); break;
	case BK_IJMP:
		if (g->indirect_jmp)
			block_ijmp(g);
		break;
	case BK_GETPC: block_getpc(g); break;
	case BK_MOVABS: block_movabs(g); break;
	case BK_FAULT: block_fault(g); break;
	default: gen_simple(g); break;
	}
}

static void gen_sub(struct gen *g, const struct sub *s)
{
	int nblocks = 1 + (int)rnd(g, 4);

	g->block++;
	label_here(g, s->label);
	g->depth = s->depth;
	g->prot = s->depth;
	for (int i = 0; i < nblocks && !g->failed; i++) {
		g->block++;
		gen_block(g, sub_weight);
	}
	g->block++;
	if (s->ret_imm) {
		ZydisEncoderRequest r;

		req_init(&r, MN(RET));
		op_imm(&r, 0, s->ret_imm);
		emit(g, &r);
	} else {
		static const uint8_t bnd_ret[] = { 0xf2, 0xc3 }, rep_ret[] = { 0xf3, 0xc3 };

		switch (rnd(g, 6)) {
		case 0: emit_raw(g, bnd_ret, 2); break;
		case 1: emit_raw(g, rep_ret, 2); break;
		default: emit0(g, MN(RET)); break;
		}
	}
	g->prot = 0;
}

/* ------------------------------------------------------------------------ */
/* Layout                                                                    */
/* ------------------------------------------------------------------------ */

static uint64_t label_addr(const struct gen *g, int l, const struct item *self)
{
	if (l == LABEL_EXIT)
		return (uintptr_t)fuzz_exit;
	if (g->label_item[l] < 0 || g->label_item[l] >= g->n)
		return (uintptr_t)fuzz_arena + self->off;	/* placeholder */
	return (uintptr_t)fuzz_arena + g->items[g->label_item[l]].off;
}

/*
 * Did every relative operand come out where it was asked to point?  Zydis
 * 4.0's absolute mode predicts the length without some prefixes (bnd): the
 * target then lands a byte off, in the middle of an instruction.  Such an
 * item is re-encoded with the request corrected by the error.
 */
static bool targets_ok(const struct gen *g, struct item *it, const ZydisEncoderRequest *req,
		       uint64_t at)
{
	ZydisEncoderRequest r = *req;

	for (int pass = 0; pass < 2; pass++) {
		ZydisDecodedInstruction insn;
		ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
		bool fixed = false;

		if (ZYAN_FAILED(ZydisDecoderDecodeFull(&g->dec, it->bytes, it->len, &insn, ops)))
			return false;
		for (unsigned int i = 0; i < insn.operand_count_visible; i++) {
			bool mem = ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY &&
				   ops[i].mem.base == ZYDIS_REGISTER_RIP;
			ZydisEncoderOperand *eo = NULL;
			int64_t want;
			ZyanU64 got;

			if (!mem && !(ops[i].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
				      ops[i].imm.is_relative))
				continue;
			/* the request's operand of that kind (one per instruction) */
			for (int k = 0; k < r.operand_count && !eo; k++)
				if (mem ? r.operands[k].type == ZYDIS_OPERAND_TYPE_MEMORY &&
					  r.operands[k].mem.base == ZYDIS_REGISTER_RIP :
					  r.operands[k].type == ZYDIS_OPERAND_TYPE_IMMEDIATE)
					eo = &r.operands[k];
			if (!eo || ZYAN_FAILED(ZydisCalcAbsoluteAddress(&insn, &ops[i], at, &got)))
				return false;
			want = mem ? req->operands[eo - r.operands].mem.displacement :
				     req->operands[eo - r.operands].imm.s;
			if ((int64_t)got == want)
				continue;
			if (pass)
				return false;
			if (mem)
				eo->mem.displacement += want - (int64_t)got;
			else
				eo->imm.s += want - (int64_t)got;
			fixed = true;
		}
		if (!fixed)
			return true;
		{
			ZyanUSize len = sizeof(it->bytes) - it->npfx;
			ZydisEncoderRequest c = r;

			if (ZYAN_FAILED(ZydisEncoderEncodeInstructionAbsolute(&c, it->bytes + it->npfx,
									     &len, at + it->npfx)) ||
			    len + it->npfx != it->len)
				return false;
		}
	}
	return true;
}

static bool encode_item(const struct gen *g, struct item *it, bool final)
{
	ZydisEncoderRequest r;
	ZyanUSize len = sizeof(it->bytes);
	uint64_t at = (uintptr_t)fuzz_arena + it->off;

	if (it->rawlen) {
		memcpy(it->bytes, it->raw, it->rawlen);
		it->len = it->rawlen;
		return true;
	}
	r = it->req;
	if (it->label_op >= 0) {
		uint64_t t = final ? label_addr(g, it->label, it) : at;

		if (it->label_mem)
			r.operands[it->label_op].mem.displacement = (int64_t)t;
		else
			r.operands[it->label_op].imm.u = t;
	}
	{
		/* (the encoder writes the relative values back into its request) */
		ZydisEncoderRequest c = r;

		len -= it->npfx;
		if (ZYAN_FAILED(ZydisEncoderEncodeInstructionAbsolute(&c, it->bytes + it->npfx, &len,
								     at + it->npfx)))
			return false;
	}
	/* the prefixes go in front, while the result fits in 15 bytes */
	if (!final && len + it->npfx > 15) {
		it->npfx = 0;
		return encode_item(g, it, final);
	}
	memcpy(it->bytes, it->pfx, it->npfx);
	len += it->npfx;
	if (final && len != it->len)
		return false;
	it->len = (uint8_t)len;
	if (final)
		return targets_ok(g, it, &r, at);
	return true;
}

static bool layout(struct gen *g)
{
	size_t off = 0;

	for (int i = 0; i < g->n; i++) {
		struct item *it = &g->items[i];

		it->off = (uint16_t)off;
		if (!encode_item(g, it, false))
			return false;
		off += it->len;
		if (off > FUZZ_ARENA_SIZE - 16)
			return false;
	}
	for (int i = 0; i < g->n; i++) {
		struct item *it = &g->items[i];

		if (encode_item(g, it, true))
			continue;
		if (!it->rel8)
			return false;
		/* A short branch out of reach: to the next instruction. */
		it->label = (int16_t)label_new(g);
		g->label_item[it->label] = i + 1;
		if (!encode_item(g, it, true))
			return false;
	}
	return true;
}

/* ------------------------------------------------------------------------ */
/* The initial state                                                         */
/* ------------------------------------------------------------------------ */

static uint64_t rnd_value(struct gen *g)
{
	static const uint64_t special[] = {
		0, 1, ~0ull, 0x8000000000000000ull, 0x7fffffffffffffffull, 0x80000000ull,
		0xffffffffull, 0x100000000ull, 0x80, 0xff, 0x8000,
	};
	unsigned int x = rnd(g, 100);

	if (x < 45)
		return fuzz_rng_next(&g->rng);
	if (x < 65)
		return rnd(g, 256);
	if (x < 80)
		return (uint32_t)fuzz_rng_next(&g->rng);
	return special[rnd(g, sizeof(special) / sizeof(special[0]))];
}

static void fill_random(struct gen *g, uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i += 8) {
		uint64_t v = fuzz_rng_next(&g->rng);

		memcpy(p + i, &v, n - i < 8 ? n - i : 8);
	}
}

static void init_state(struct gen *g, struct fuzz_seq *s)
{
	static const uint64_t fbits[] = { 0x1, 0x4, 0x10, 0x40, 0x80, 0x800 };
	struct fuzz_state *st = &s->in;

	memset(st, 0, sizeof(*st));
	for (int i = 0; i < 16; i++)
		st->gpr[i] = rnd_value(g);
	st->gpr[RSP] = FUZZ_ENTRY_SP;
	st->gpr[g->base] = scratch_base();
	st->flags = 0x202;
	for (unsigned int i = 0; i < 6; i++)
		if (chance(g, 50))
			st->flags |= fbits[i];
	if (chance(g, 15))
		st->flags |= 0x400;	/* DF */
	/* exceptions masked; random rounding, FTZ, DAZ and sticky flags */
	st->mxcsr = 0x1f80 | (rnd(g, 4) << 13) | (chance(g, 20) ? 0x8000 : 0) |
		    (chance(g, 20) ? 0x40 : 0) | (chance(g, 30) ? rnd(g, 64) : 0);
	for (int i = 0; i < 8; i++)
		st->k[i] = fuzz_rng_next(&g->rng);
	fill_random(g, &st->vec[0][0], sizeof(st->vec));
	for (int i = 0; i < 32; i++) {
		/* some lanes with values floating point cares about */
		static const uint32_t fs[] = { 0, 0x80000000, 0x3f800000, 0x7f800000,
					       0x7fc00000, 0x00000001, 0xff800000 };

		for (int j = 0; j < 16; j++)
			if (chance(g, 10))
				memcpy(&st->vec[i][4 * j], &fs[rnd(g, 7)], 4);
	}
	if (!g->cpu->avx512)
		for (int i = 0; i < 32; i++)
			memset(&st->vec[i][i < 16 ? 32 : 0], 0, i < 16 ? 32 : 64);
	fill_random(g, s->scratch, sizeof(s->scratch));
	fill_random(g, s->ripdata, sizeof(s->ripdata));
	fill_random(g, s->stack, sizeof(s->stack));
}

/* ------------------------------------------------------------------------ */

int fuzz_generate(uint64_t seed, const struct fuzz_cpu *cpu, struct fuzz_seq *s)
{
	static const int bases[] = { RBX, RBP, R12, R13, R14, R15 };
	static struct item items[MAX_ITEMS + 1];
	struct gen *g = calloc(1, sizeof(*g));
	int nblocks, ret = -1;

	if (!g)
		return -1;
	memset(s, 0, sizeof(*s));
	s->seed = seed;
	fuzz_rng_seed(&g->rng, seed);
	g->cpu = cpu;
	g->items = items;
	ZydisDecoderInit(&g->dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	for (size_t i = 0; i < fuzz_ntmpls; i++) {
		g->weights[i] = fuzz_feat_ok(cpu, fuzz_tmpls[i].feat) ? fuzz_tmpls[i].weight : 0;
		g->wsum += g->weights[i];
	}
	g->base = bases[rnd(g, 6)];
	g->indirect_jmp = chance(g, 20);
	g->label_item[LABEL_EXIT] = -1;
	g->nlabels = 1;
	nblocks = 4 + (int)rnd(g, 40);

	for (int b = 0; b < nblocks && g->n < MAX_ITEMS - 120; b++) {
		block_start(g);
		gen_block(g, main_weight);
	}
	/* Pop what is left, landing pending branches at their depth. */
	for (;;) {
		block_start(g);
		resolve_pending(g, true);
		if (g->depth == 0)
			break;
		block_pop(g);
	}
	g->block++;
	emit_branch(g, MN(JMP), LABEL_EXIT, false, 0);
	for (int i = 0; i < g->nsubs && !g->failed; i++)
		gen_sub(g, &g->subs[i]);
	if (g->failed || g->npend || !layout(g))
		goto out;

	s->base_reg = g->base;
	s->indirect_jmp = g->indirect_jmp;
	s->mod_regs = (uint16_t)~(g->held | (1u << RSP) | (1u << g->base));
	s->n = (unsigned int)g->n;
	memset(s->code, 0xcc, sizeof(s->code));
	for (int i = 0; i < g->n; i++) {
		struct item *it = &g->items[i];

		memcpy(s->code + it->off, it->bytes, it->len);
		s->insn[i].off = it->off;
		s->insn[i].len = it->len;
		s->insn[i].kind = it->kind;
		s->insn[i].block = it->block;
		s->len = it->off + it->len;
	}
	/* The bytes must decode back to the same boundaries. */
	for (unsigned int i = 0; i < s->n; i++) {
		ZydisDecodedInstruction insn;

		if (ZYAN_FAILED(ZydisDecoderDecodeInstruction(&g->dec, NULL, s->code + s->insn[i].off,
							      s->len - s->insn[i].off, &insn)) ||
		    insn.length != s->insn[i].len)
			goto out;
	}
	init_state(g, s);
	ret = 0;
out:
	free(g);
	return ret;
}
