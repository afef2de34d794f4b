/* SPDX-License-Identifier: MIT */
/*
 * <ukprobes/asm/ptrace.h> for x86-64: struct pt_regs and its accessors, as
 * the kernel's arch/x86/include/asm/ptrace.h gives them.  Included by
 * <ukprobes.h>; the build installs the header of the architecture it
 * targets under this name.
 */
#ifndef UKPROBES_ASM_PTRACE_H
#define UKPROBES_ASM_PTRACE_H

/* Which architecture's registers these are (string, for messages). */
#define UKPROBES_ARCH "x86_64"

/*
 * The kernel's in-kernel x86-64 names and order, so that handler code reads
 * like kernel code.  orig_ax is -1 (no system call); cs and ss are the user
 * selectors and are read-only.
 */
struct pt_regs {
	unsigned long r15;
	unsigned long r14;
	unsigned long r13;
	unsigned long r12;
	unsigned long bp;
	unsigned long bx;
	unsigned long r11;
	unsigned long r10;
	unsigned long r9;
	unsigned long r8;
	unsigned long ax;
	unsigned long cx;
	unsigned long dx;
	unsigned long si;
	unsigned long di;
	unsigned long orig_ax;
	unsigned long ip;
	unsigned long cs;
	unsigned long flags;
	unsigned long sp;
	unsigned long ss;
};

/* A probe's address points at bytes: x86 instructions have any length. */
typedef unsigned char kprobe_opcode_t;

static inline unsigned long regs_return_value(struct pt_regs *regs)
{
	return regs->ax;
}

static inline void regs_set_return_value(struct pt_regs *regs, unsigned long rc)
{
	regs->ax = rc;
}

/* SysV AMD64 integer argument registers; n counts from 0, as the kernel. */
static inline unsigned long regs_get_kernel_argument(struct pt_regs *regs,
						     unsigned int n)
{
	switch (n) {
	case 0: return regs->di;
	case 1: return regs->si;
	case 2: return regs->dx;
	case 3: return regs->cx;
	case 4: return regs->r8;
	case 5: return regs->r9;
	default: {
		/* Past the register arguments: on the stack above the return
		 * address, valid at the first instruction of a function. */
		unsigned long *sp = (unsigned long *)regs->sp;
		return sp[n - 6 + 1];
	}
	}
}

static inline unsigned long instruction_pointer(struct pt_regs *regs)
{
	return regs->ip;
}

static inline void instruction_pointer_set(struct pt_regs *regs,
					   unsigned long val)
{
	regs->ip = val;
}

static inline unsigned long user_stack_pointer(struct pt_regs *regs)
{
	return regs->sp;
}

static inline unsigned long kernel_stack_pointer(struct pt_regs *regs)
{
	return regs->sp;
}

static inline void user_stack_pointer_set(struct pt_regs *regs, unsigned long val)
{
	regs->sp = val;
}

/* The frame pointer register (the kernel's frame_pointer()). */
static inline unsigned long frame_pointer(struct pt_regs *regs)
{
	return regs->bp;
}

#endif
