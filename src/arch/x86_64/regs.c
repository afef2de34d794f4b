// SPDX-License-Identifier: MIT
/*
 * regs.c - struct pt_regs <-> the signal frame's ucontext_t, and register
 * names (the kernel's regs_query_register_offset()).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "internal.h"
#include "arch.h"

#define X86_EFLAGS_TF 0x100ul

void arch_regs_from_uc(struct pt_regs *regs, const ucontext_t *uc)
{
	const greg_t *g = uc->uc_mcontext.gregs;

	regs->r15 = (unsigned long)g[REG_R15];
	regs->r14 = (unsigned long)g[REG_R14];
	regs->r13 = (unsigned long)g[REG_R13];
	regs->r12 = (unsigned long)g[REG_R12];
	regs->bp = (unsigned long)g[REG_RBP];
	regs->bx = (unsigned long)g[REG_RBX];
	regs->r11 = (unsigned long)g[REG_R11];
	regs->r10 = (unsigned long)g[REG_R10];
	regs->r9 = (unsigned long)g[REG_R9];
	regs->r8 = (unsigned long)g[REG_R8];
	regs->ax = (unsigned long)g[REG_RAX];
	regs->cx = (unsigned long)g[REG_RCX];
	regs->dx = (unsigned long)g[REG_RDX];
	regs->si = (unsigned long)g[REG_RSI];
	regs->di = (unsigned long)g[REG_RDI];
	regs->orig_ax = (unsigned long)-1;
	regs->ip = (unsigned long)g[REG_RIP];
	regs->cs = (unsigned long)g[REG_CSGSFS] & 0xffff;
	regs->flags = (unsigned long)g[REG_EFL];
	regs->sp = (unsigned long)g[REG_RSP];
	regs->ss = ((unsigned long)g[REG_CSGSFS] >> 48) & 0xffff;
}
NOKPROBE_SYMBOL(arch_regs_from_uc);

/* Handlers may change every general register, ip, sp and the arithmetic
 * flags; cs/ss are not theirs, and TF never reaches the program from us. */
void arch_regs_to_uc(const struct pt_regs *regs, ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;
	unsigned long tf = (unsigned long)g[REG_EFL] & X86_EFLAGS_TF;

	g[REG_R15] = (greg_t)regs->r15;
	g[REG_R14] = (greg_t)regs->r14;
	g[REG_R13] = (greg_t)regs->r13;
	g[REG_R12] = (greg_t)regs->r12;
	g[REG_RBP] = (greg_t)regs->bp;
	g[REG_RBX] = (greg_t)regs->bx;
	g[REG_R11] = (greg_t)regs->r11;
	g[REG_R10] = (greg_t)regs->r10;
	g[REG_R9] = (greg_t)regs->r9;
	g[REG_R8] = (greg_t)regs->r8;
	g[REG_RAX] = (greg_t)regs->ax;
	g[REG_RCX] = (greg_t)regs->cx;
	g[REG_RDX] = (greg_t)regs->dx;
	g[REG_RSI] = (greg_t)regs->si;
	g[REG_RDI] = (greg_t)regs->di;
	g[REG_RIP] = (greg_t)regs->ip;
	g[REG_EFL] = (greg_t)((regs->flags & ~X86_EFLAGS_TF) | tf);
	g[REG_RSP] = (greg_t)regs->sp;
}
NOKPROBE_SYMBOL(arch_regs_to_uc);

uintptr_t arch_uc_ip(const ucontext_t *uc)
{
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
}
NOKPROBE_SYMBOL(arch_uc_ip);

void arch_uc_set_ip(ucontext_t *uc, uintptr_t ip)
{
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)ip;
}
NOKPROBE_SYMBOL(arch_uc_set_ip);

int arch_uc_trapnr(const ucontext_t *uc)
{
	return (int)uc->uc_mcontext.gregs[REG_TRAPNO];
}
NOKPROBE_SYMBOL(arch_uc_trapnr);

uint64_t arch_uc_sigmask(const ucontext_t *uc)
{
	uint64_t m;

	memcpy(&m, &uc->uc_sigmask, sizeof(m));
	return m;
}
NOKPROBE_SYMBOL(arch_uc_sigmask);

void arch_uc_set_sigmask(ucontext_t *uc, uint64_t mask)
{
	memcpy(&uc->uc_sigmask, &mask, sizeof(mask));
}
NOKPROBE_SYMBOL(arch_uc_set_sigmask);

/* ------------------------------------------------------------------------ */

struct x86_reg_name {
	const char *name;	/* kernel name */
	const char *alias;	/* user-space name */
	unsigned int offset;
};

#define REG(n, a) { #n, a, offsetof(struct pt_regs, n) }
static const struct x86_reg_name x86_regs[] = {
	REG(ax, "rax"), REG(bx, "rbx"), REG(cx, "rcx"), REG(dx, "rdx"),
	REG(si, "rsi"), REG(di, "rdi"), REG(bp, "rbp"), REG(sp, "rsp"),
	REG(r8, NULL), REG(r9, NULL), REG(r10, NULL), REG(r11, NULL),
	REG(r12, NULL), REG(r13, NULL), REG(r14, NULL), REG(r15, NULL),
	REG(ip, "rip"), REG(flags, "eflags"), REG(orig_ax, NULL),
	REG(cs, NULL), REG(ss, NULL),
};

UKP_API int regs_query_register_offset(const char *name)
{
	if (!name)
		return -EINVAL;
	if (*name == '%')
		name++;
	for (size_t i = 0; i < ARRAY_SIZE(x86_regs); i++) {
		if (!strcmp(name, x86_regs[i].name) ||
		    (x86_regs[i].alias && !strcmp(name, x86_regs[i].alias)))
			return (int)x86_regs[i].offset;
	}
	return -EINVAL;
}

UKP_API const char *regs_query_register_name(unsigned int offset)
{
	for (size_t i = 0; i < ARRAY_SIZE(x86_regs); i++)
		if (x86_regs[i].offset == offset)
			return x86_regs[i].name;
	return NULL;
}

/* The signal frame's FXSAVE image holds %xmm0-15 and %mxcsr. */
void arch_save_fpargs(const ucontext_t *uc, void *buf)
{
	const struct _libc_fpstate *fp = uc->uc_mcontext.fpregs;

	if (!fp)
		return;
	memcpy(buf, fp->_xmm, 8 * 16);
	memcpy((char *)buf + 8 * 16, &fp->mxcsr, 4);
}
NOKPROBE_SYMBOL(arch_save_fpargs);

void arch_restore_fpargs(ucontext_t *uc, const void *buf)
{
	struct _libc_fpstate *fp = uc->uc_mcontext.fpregs;

	if (!fp)
		return;
	memcpy(fp->_xmm, buf, 8 * 16);
	memcpy(&fp->mxcsr, (const char *)buf + 8 * 16, 4);
}
NOKPROBE_SYMBOL(arch_restore_fpargs);
