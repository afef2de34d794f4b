/* SPDX-License-Identifier: MIT */
/*
 * tool_arch_defs.h - the x86-64 facts of the ukprobe tool (tool_arch.h says
 * what each port gives): the SysV AMD64 calling convention, the DWARF
 * register numbers of the psABI, the frame-pointer frame, the red zone.
 * Register names in fetch arguments (%di, %ax, %r8...) are the library's
 * regs_query_register_offset() (src/arch/x86_64/regs.c).
 */
#ifndef UKPROBE_TOOL_ARCH_DEFS_H
#define UKPROBE_TOOL_ARCH_DEFS_H

#include "ukprobes.h"

/* Longest instruction: bytes to read past a point to decode what is there. */
#define TOOL_MAX_INSN		16

/* $argN: the first six integer arguments are in registers
 * (regs_get_kernel_argument()); the others on the stack above the return
 * address, at a function's first instruction. */
#define TOOL_REG_ARGS		6
static inline unsigned long tool_stack_arg_addr(struct pt_regs *regs, unsigned int n)
{
	return user_stack_pointer(regs) + (n - TOOL_REG_ARGS + 1) * sizeof(unsigned long);
}

/* DWARF register numbers (psABI figure 3.36) and the return address
 * column, for the CFI interpreter; registers 0..TOOL_DWARF_NREGS-1 are
 * tracked. */
#define TOOL_DWARF_SP		7	/* %rsp */
#define TOOL_DWARF_FP		6	/* %rbp */
#define TOOL_DWARF_RA		16	/* return address column */
#define TOOL_DWARF_NREGS	17

/* A frame-pointer frame: %rbp points at the caller's %rbp, the return
 * address is above it (push %rbp; mov %rsp,%rbp). */
#define TOOL_FP_SAVED_FP	0
#define TOOL_FP_SAVED_RA	8

/* Bytes below the stack pointer a function may use without moving it: an
 * injected call (inject.c) puts its data below them. */
#define TOOL_RED_ZONE		128

#endif
