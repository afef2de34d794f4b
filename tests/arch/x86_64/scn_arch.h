/* SPDX-License-Identifier: MIT */
/*
 * scn_arch.h - what a scenario test written in C needs to know of the
 * machine beyond <ukprobes/asm/ptrace.h>: the registers of a signal
 * frame and of a ptrace()d child, and libunwind's names.  x86-64.
 */
#ifndef SCN_ARCH_H
#define SCN_ARCH_H

#include <stddef.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/user.h>
#include <ucontext.h>

/* The interrupted pc and stack pointer in a signal handler's context. */
static inline unsigned long scn_uc_ip(const ucontext_t *uc)
{
	return (unsigned long)uc->uc_mcontext.gregs[REG_RIP];
}

static inline unsigned long scn_uc_sp(const ucontext_t *uc)
{
	return (unsigned long)uc->uc_mcontext.gregs[REG_RSP];
}

/* A ptrace-stopped child's pc, stack pointer, and the system call it is
 * entering (at a PTRACE_SYSCALL stop). */
static inline unsigned long scn_child_peek_(pid_t pid, size_t off)
{
	return (unsigned long)ptrace(PTRACE_PEEKUSER, pid, (void *)off, NULL);
}

static inline unsigned long scn_child_ip(pid_t pid)
{
	return scn_child_peek_(pid, offsetof(struct user_regs_struct, rip));
}

static inline unsigned long scn_child_sp(pid_t pid)
{
	return scn_child_peek_(pid, offsetof(struct user_regs_struct, rsp));
}

static inline long scn_child_syscall(pid_t pid)
{
	return (long)scn_child_peek_(pid, offsetof(struct user_regs_struct, orig_rax));
}

/* libunwind's local-unwinding functions (libunwind.so.8) are named per
 * architecture, and so is its pc register (UNW_REG_IP). */
#define SCN_UNW_GETCONTEXT	"_Ux86_64_getcontext"
#define SCN_UNW_INIT_LOCAL	"_ULx86_64_init_local"
#define SCN_UNW_STEP		"_ULx86_64_step"
#define SCN_UNW_GET_REG		"_ULx86_64_get_reg"
#define SCN_UNW_REG_IP		16

#endif
