// SPDX-License-Identifier: MIT
/*
 * core.c - x86-64 kprobes: breakpoints, out-of-line copies with their
 * fix-ups, boost, and emulation of what cannot run out of line
 * (arch/x86/kernel/kprobes/core.c in the kernel).
 *
 * Since Linux 5.13 the kernel single-steps with a second int3 after the copy
 * instead of the TF flag, and emulates branches; we do the same: in user
 * space a TF debug trap costs about four breakpoint traps.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"
#include "arch.h"
#include "insn.h"

#define INT3		0xcc
#define JMP_REL32	0xe9
#define X86_EFLAGS_CF	0x0001ul
#define X86_EFLAGS_PF	0x0004ul
#define X86_EFLAGS_ZF	0x0040ul
#define X86_EFLAGS_SF	0x0080ul
#define X86_EFLAGS_OF	0x0800ul

/* Slack kept from the rel32 limits, for the few bytes inside a slot. */
#define REL32_MARGIN	256

size_t arch_breakpoint_len(void)
{
	return 1;
}

bool arch_maybe_patched(uint8_t b)
{
	return b == INT3 || b == JMP_REL32;
}

uint8_t arch_original_byte(const struct ukp_point *pt, size_t i)
{
	return pt->ainsn.orig[i];
}

int arch_insn_len(const uint8_t *code, size_t avail)
{
	return x86_insn_length(code, avail);
}

size_t arch_skip_func_entry(const uint8_t *code, size_t avail)
{
	return x86_is_endbr64(code, avail) ? 4 : 0;
}

/* Does the instruction need a slot?  Branches with no memory access are
 * emulated and never run elsewhere; the others keep a copy to fall back on
 * when emulation meets a fault, so the fault is the original one. */
static bool x86_needs_slot(const struct x86_analysis *a)
{
	switch (a->op) {
	case X86_OP_JMP_REL:
	case X86_OP_JCC:
	case X86_OP_LOOP:
	case X86_OP_JRCXZ:
		return false;
	default:
		return true;
	}
}

/* Narrow [*lo, *hi] so that a rel32 from anywhere in a slot reaches @to. */
static void x86_window_reach(uintptr_t to, uintptr_t *lo, uintptr_t *hi)
{
	const uintptr_t reach = 0x7fffffffu - REL32_MARGIN;
	uintptr_t l = to > reach ? to - reach : 0;
	uintptr_t h = to < UINTPTR_MAX - reach ? to + reach : UINTPTR_MAX;

	if (l > *lo)
		*lo = l;
	if (h < *hi)
		*hi = h;
}

static int x86_put_rel32(uint8_t *buf, size_t off, uintptr_t from_next, uintptr_t to)
{
	int64_t d = (int64_t)(to - from_next);
	int32_t d32 = (int32_t)d;

	if (d != d32)
		return -ERANGE;
	memcpy(buf + off, &d32, 4);
	return 0;
}

/* Copy the instruction into @buf, to run at @at, with its fix-ups. */
static int x86_copy_insn(const struct ukp_point *pt, const struct x86_analysis *a,
			 uint8_t *buf, uintptr_t at)
{
	int err = 0;

	memcpy(buf, pt->ainsn.orig, a->len);
	if (a->riprel_off >= 0)
		err = x86_put_rel32(buf, (size_t)a->riprel_off, at + a->len,
				    a->riprel_target);
	if (!err && a->rel32_off >= 0)
		err = x86_put_rel32(buf, (size_t)a->rel32_off, at + a->len, a->target);
	return err;
}

/*
 * Slot layout (UKP_ARCH_SLOT_SIZE bytes, padding int3):
 *   +0   copy [movabs $next,%rcx] jmp next     the boosted copy
 *   +32  copy int3                              the single-step copy
 */
static int x86_build_slot(const struct ukp_point *pt, const struct x86_analysis *a,
			  uintptr_t slot, uint8_t *buf)
{
	uintptr_t next = pt->addr + a->len;
	uint8_t *p = buf + a->len;
	int err;

	memset(buf, INT3, UKP_ARCH_SLOT_SIZE);
	err = x86_copy_insn(pt, a, buf, slot);
	if (!err)
		err = x86_copy_insn(pt, a, buf + UKP_ARCH_STEP_OFFSET,
				    slot + UKP_ARCH_STEP_OFFSET);
	if (err)
		return err;
	if (a->op != X86_OP_XOL && a->op != X86_OP_SYSCALL)
		return 0;	/* fall-back copies transfer control themselves */
	if (a->op == X86_OP_SYSCALL) {
		/* syscall leaves its return address in %rcx: make it the
		 * original one.  movabs does not touch the flags (or %r11). */
		*p++ = 0x48;
		*p++ = 0xb9;			/* movabs $next, %rcx */
		memcpy(p, &next, 8);
		p += 8;
	}
	*p = JMP_REL32;				/* jmp next */
	return x86_put_rel32(buf, (size_t)(p + 1 - buf),
			     slot + (uintptr_t)(p + 5 - buf), next);
}

int arch_prepare_kprobe(struct ukp_point *pt, const uint8_t *orig, size_t avail)
{
	struct arch_insn *ai = &pt->ainsn;
	struct x86_analysis a;
	uint8_t buf[UKP_ARCH_SLOT_SIZE];
	uintptr_t lo = 0x10000, hi = UINTPTR_MAX, slot;
	struct ukp_slot_info info = { 0 };
	int err;

	err = x86_insn_analyze(pt->addr, orig, avail, &a);
	if (err)
		return err;
	memset(ai, 0, sizeof(*ai));
	memcpy(ai->orig, orig, a.len);
	ai->len = a.len;
	ai->op = a.op;
	ai->cond = a.cond;
	ai->addr32 = a.addr32;
	ai->ret_imm = a.ret_imm;
	ai->target = a.target;
	ai->ind = a.ind;
	if (!x86_needs_slot(&a))
		return 0;

	x86_window_reach(pt->addr + a.len, &lo, &hi);
	if (a.riprel_off >= 0)
		x86_window_reach(a.riprel_target, &lo, &hi);
	if (a.rel32_off >= 0)
		x86_window_reach(a.target, &lo, &hi);
	if (lo >= hi)
		return -ERANGE;
	info.addr = pt->addr;
	info.len = a.len;
	info.arch_flags = a.op == X86_OP_SYSCALL ? X86_SLOT_FIX_RCX : 0;
	slot = ukp_slot_alloc(lo, hi, pt->addr, &info);
	if (!slot)
		return -ENOMEM;
	err = x86_build_slot(pt, &a, slot, buf);
	if (!err)
		err = ukp_text_poke(slot, buf, sizeof(buf));
	if (err) {
		ukp_slot_free_unused(slot);
		return err;
	}
	ai->slot = slot;
	return 0;
}

void arch_unprepare_kprobe(struct ukp_point *pt)
{
	if (pt->ainsn.slot)
		ukp_slot_free_unused(pt->ainsn.slot);
	pt->ainsn.slot = 0;
}

void arch_remove_kprobe(struct ukp_point *pt)
{
	if (pt->ainsn.slot)
		ukp_slot_release(pt->ainsn.slot);
	pt->ainsn.slot = 0;
}

int arch_arm_kprobe(struct ukp_point *pt)
{
	static const uint8_t int3 = INT3;

	return ukp_text_poke(pt->addr, &int3, 1);
}

int arch_disarm_kprobe(struct ukp_point *pt)
{
	return ukp_text_poke(pt->addr, pt->ainsn.orig, 1);
}

/* ------------------------------------------------------------------------ */
/* The trap path                                                             */
/* ------------------------------------------------------------------------ */

bool arch_trap_is_breakpoint(const siginfo_t *info, const ucontext_t *uc)
{
	/* int3 raises #BP and the kernel sends SI_KERNEL; a kill() (SI_USER,
	 * SI_TKILL, SI_QUEUE) or a TF step (TRAP_TRACE) does not.  The frame's
	 * trapno is no help: it is 3 from the #BP handler, but 0 where the
	 * process has any Linux uprobe (bpftrace, perf probe on its libc),
	 * because the kernel then sends the SIGTRAP from its uprobes path.
	 * Whether the breakpoint is ours is for the probe tables to say. */
	(void)uc;
	return info->si_code == SI_KERNEL;
}
NOKPROBE_SYMBOL(arch_trap_is_breakpoint);

uintptr_t arch_trap_bp_addr(const ucontext_t *uc)
{
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP] - 1;
}
NOKPROBE_SYMBOL(arch_trap_bp_addr);

bool arch_breakpoint_at(uintptr_t addr)
{
	return *(volatile const uint8_t *)addr == INT3;
}
NOKPROBE_SYMBOL(arch_breakpoint_at);

static bool x86_cond_true(unsigned int cc, unsigned long fl)
{
	bool cf = fl & X86_EFLAGS_CF, zf = fl & X86_EFLAGS_ZF;
	bool sf = fl & X86_EFLAGS_SF, of = fl & X86_EFLAGS_OF;
	bool pf = fl & X86_EFLAGS_PF, r;

	switch (cc >> 1) {
	case 0: r = of; break;			/* jo */
	case 1: r = cf; break;			/* jb */
	case 2: r = zf; break;			/* je */
	case 3: r = cf || zf; break;		/* jbe */
	case 4: r = sf; break;			/* js */
	case 5: r = pf; break;			/* jp */
	case 6: r = sf != of; break;		/* jl */
	default: r = zf || sf != of; break;	/* jle */
	}
	return (cc & 1) ? !r : r;
}
NOKPROBE_SYMBOL(x86_cond_true);

static unsigned long *x86_reg(struct pt_regs *regs, int off)
{
	return (unsigned long *)((char *)regs + off);
}
NOKPROBE_SYMBOL(x86_reg);

/* Target of an indirect jmp/call, read as the CPU would. */
static int x86_indirect_target(const struct arch_insn *ai, struct pt_regs *regs,
			       unsigned long *target)
{
	const struct x86_indirect *ind = &ai->ind;
	uintptr_t ea = (uintptr_t)ind->disp;

	if (ind->reg >= 0) {
		*target = *x86_reg(regs, ind->reg);
		return 0;
	}
	if (ind->base >= 0)
		ea += *x86_reg(regs, ind->base);
	if (ind->index >= 0)
		ea += *x86_reg(regs, ind->index) * ind->scale;
	return arch_safe_read_ulong(ea, target);
}
NOKPROBE_SYMBOL(x86_indirect_target);

static int x86_push(struct pt_regs *regs, unsigned long val)
{
	if (arch_safe_write_ulong(regs->sp - 8, val))
		return -EFAULT;
	regs->sp -= 8;
	return 0;
}
NOKPROBE_SYMBOL(x86_push);

/* Emulate a branch; -EFAULT when the original would fault. */
static int x86_emulate(const struct ukp_point *pt, struct pt_regs *regs)
{
	const struct arch_insn *ai = &pt->ainsn;
	unsigned long next = pt->addr + ai->len, t;
	unsigned long cnt;

	switch (ai->op) {
	case X86_OP_JMP_REL:
		regs->ip = ai->target;
		return 0;
	case X86_OP_JCC:
		regs->ip = x86_cond_true(ai->cond, regs->flags) ? ai->target : next;
		return 0;
	case X86_OP_LOOP:
		cnt = --regs->cx;
		if (cnt && (ai->cond == 0 ||
			    (ai->cond == 1 && (regs->flags & X86_EFLAGS_ZF)) ||
			    (ai->cond == 2 && !(regs->flags & X86_EFLAGS_ZF))))
			regs->ip = ai->target;
		else
			regs->ip = next;
		return 0;
	case X86_OP_JRCXZ:
		cnt = ai->addr32 ? (uint32_t)regs->cx : regs->cx;
		regs->ip = cnt ? next : ai->target;
		return 0;
	case X86_OP_CALL_REL:
		if (x86_push(regs, next))
			return -EFAULT;
		regs->ip = ai->target;
		return 0;
	case X86_OP_RET:
		if (arch_safe_read_ulong(regs->sp, &t))
			return -EFAULT;
		regs->sp += 8 + ai->ret_imm;
		regs->ip = t;
		return 0;
	case X86_OP_CALL_IND:
		if (x86_indirect_target(ai, regs, &t) || x86_push(regs, next))
			return -EFAULT;
		regs->ip = t;
		return 0;
	case X86_OP_JMP_IND:
		if (x86_indirect_target(ai, regs, &t))
			return -EFAULT;
		regs->ip = t;
		return 0;
	default:
		return -EINVAL;
	}
}
NOKPROBE_SYMBOL(x86_emulate);

enum arch_exec arch_execute(struct ukp_point *pt, struct pt_regs *regs,
			    bool need_post, uintptr_t *step_trap, uintptr_t *copy)
{
	const struct arch_insn *ai = &pt->ainsn;

	switch (ai->op) {
	case X86_OP_XOL:
	case X86_OP_SYSCALL:
		if (!need_post) {
			regs->ip = ai->slot;
			return ARCH_EXEC_BOOST;
		}
		*copy = ai->slot + UKP_ARCH_STEP_OFFSET;
		*step_trap = *copy + ai->len;
		regs->ip = *copy;
		return ARCH_EXEC_STEP;
	default:
		/* x86_emulate() changes nothing when it fails. */
		if (!x86_emulate(pt, regs))
			return ARCH_EXEC_DONE;
		/* The original would fault: run the copy, which faults the
		 * same way; the fault path reports it at the original ip. */
		regs->ip = ai->slot;
		return ARCH_EXEC_BOOST;
	}
}
NOKPROBE_SYMBOL(arch_execute);

bool arch_step_may_block(const struct ukp_point *pt)
{
	return pt->ainsn.op == X86_OP_SYSCALL;
}
NOKPROBE_SYMBOL(arch_step_may_block);

void arch_step_done(const struct ukp_slot_info *info, struct pt_regs *regs)
{
	regs->ip = info->addr + info->len;
	if (info->arch_flags & X86_SLOT_FIX_RCX)
		regs->cx = regs->ip;
}
NOKPROBE_SYMBOL(arch_step_done);

int arch_slot_ip_kind(const struct ukp_slot_info *info, uintptr_t slot,
		      uintptr_t ip)
{
	if (info->detour)
		return 0;
	if (ip == slot || ip == slot + UKP_ARCH_STEP_OFFSET)
		return 1;
	if (ip == slot + UKP_ARCH_STEP_OFFSET + info->len)
		return 2;
	return 0;
}
NOKPROBE_SYMBOL(arch_slot_ip_kind);

extern const char x86_safe_read_insn[], x86_safe_write_insn[], x86_safe_fault[];

bool arch_fixup_exception(ucontext_t *uc)
{
	uintptr_t ip = arch_uc_ip(uc);

	if (ip != (uintptr_t)x86_safe_read_insn && ip != (uintptr_t)x86_safe_write_insn)
		return false;
	arch_uc_set_ip(uc, (uintptr_t)x86_safe_fault);
	return true;
}
NOKPROBE_SYMBOL(arch_fixup_exception);
