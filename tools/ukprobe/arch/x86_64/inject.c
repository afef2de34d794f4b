// SPDX-License-Identifier: MIT
/*
 * inject.c - the x86-64 part of inject.h (tool_arch.h): registers through
 * PTRACE_GETREGS, the extended state (x87, SSE, AVX, AVX-512) through
 * PTRACE_GETREGSET NT_X86_XSTATE, SysV calls.
 *
 * A thread stopped inside a system call shows orig_rax >= 0 and, if the
 * call is to be restarted, rax = -ERESTARTSYS and friends: left as saved,
 * the kernel restarts the call when the thread resumes from its stop.  For
 * the injected call orig_rax is -1, so nothing is restarted into it.
 */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>

#include "inject.h"

#define XSTATE_MAX	(64 * 1024)

struct inj_regs {
	struct user_regs_struct regs;
	size_t xlen;			/* 0: no NT_X86_XSTATE (FPREGS used) */
	struct user_fpregs_struct fp;
	unsigned char xstate[];
};

int inject_arch_save(pid_t tid, struct inj_regs **saved)
{
	struct inj_regs *s = calloc(1, sizeof(*s) + XSTATE_MAX);
	struct iovec iov;

	if (!s)
		return -ENOMEM;
	if (ptrace(PTRACE_GETREGS, tid, NULL, &s->regs)) {
		int e = errno;

		free(s);
		return -e;
	}
	iov.iov_base = s->xstate;
	iov.iov_len = XSTATE_MAX;
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &iov) == 0) {
		s->xlen = iov.iov_len;
	} else if (ptrace(PTRACE_GETFPREGS, tid, NULL, &s->fp)) {
		int e = errno;

		free(s);
		return -e;
	}
	*saved = s;
	return 0;
}

int inject_arch_restore(pid_t tid, struct inj_regs *s)
{
	int err = 0;

	if (s->xlen) {
		struct iovec iov = { s->xstate, s->xlen };

		if (ptrace(PTRACE_SETREGSET, tid, (void *)NT_X86_XSTATE, &iov))
			err = -errno;
	} else if (ptrace(PTRACE_SETFPREGS, tid, NULL, &s->fp)) {
		err = -errno;
	}
	if (ptrace(PTRACE_SETREGS, tid, NULL, &s->regs))
		err = -errno;
	free(s);
	return err;
}

uint64_t inject_arch_sp(const struct inj_regs *s)
{
	return s->regs.rsp;
}

uint64_t inject_arch_pc(const struct inj_regs *s)
{
	return s->regs.rip;
}

bool inject_arch_in_syscall(const struct inj_regs *s)
{
	return (long)s->regs.orig_rax >= 0;
}

int inject_arch_setup_call(pid_t tid, const struct inj_regs *saved, uint64_t fn,
			   const uint64_t *args, int nargs, uint64_t sp)
{
	struct user_regs_struct r = saved->regs;
	unsigned long long *argregs[6] = { &r.rdi, &r.rsi, &r.rdx, &r.rcx, &r.r8, &r.r9 };
	uint64_t zero = 0;

	if (nargs > 6)
		return -EINVAL;
	/* At the call's first instruction rsp + 8 is 16-aligned: the return
	 * address (0) is at rsp. */
	sp = (sp & ~15ull) - 8;
	if (ptrace(PTRACE_POKEDATA, tid, (void *)sp, (void *)zero))
		return -errno;
	for (int i = 0; i < nargs; i++)
		*argregs[i] = args[i];
	r.rsp = sp;
	r.rip = fn;
	r.rax = 0;		/* no vector registers for varargs */
	r.orig_rax = -1ull;	/* no system call restart into the call */
	r.eflags &= ~(1ull << 10);	/* DF clear, as the ABI wants */
	if (ptrace(PTRACE_SETREGS, tid, NULL, &r))
		return -errno;
	return 0;
}

int inject_arch_result(pid_t tid, uint64_t *ret, uint64_t *pc)
{
	struct user_regs_struct r;

	if (ptrace(PTRACE_GETREGS, tid, NULL, &r))
		return -errno;
	*pc = r.rip;
	if (r.rip != 0)
		return -EFAULT;
	*ret = r.rax;
	return 0;
}
