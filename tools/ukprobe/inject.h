/* SPDX-License-Identifier: MIT */
/*
 * inject.h - running a function in a process that is already running, as
 * gdb's `call` does: `ukprobe trace -p PID` loads the agent with dlopen()
 * in the target and calls it (attach.c).
 *
 * One thread of the target is seized (PTRACE_SEIZE, PTRACE_INTERRUPT: no
 * signal the program could see), preferably one blocked in a system call
 * (its resume address is in libc, never inside a probe's detour), its
 * registers and extended state saved; the call runs on its stack below the
 * red zone and returns to address 0, whose fault stops the thread again;
 * then everything is put back as it was, and the system call it was in is
 * restarted by the kernel as after any stop (no EINTR).  The other threads
 * run on meanwhile.
 */
#ifndef UKPROBE_INJECT_H
#define UKPROBE_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct inj;	/* a seized thread */

/*
 * Why ukprobe may not attach to pid, in one line (what and what to do), or
 * NULL if nothing is known against it: no such process, another user's
 * (without CAP_SYS_PTRACE), already traced, Yama's ptrace_scope, a seccomp
 * filter, a thread that blocks SIGTRAP (a probe hit would kill it), no
 * glibc with a public dlopen().  Looks only at /proc: the target is not
 * touched.
 */
const char *inject_refusal(pid_t pid, char *buf, size_t len);

/* Seize a thread of pid for calls.  NULL with a one-line reason in err. */
struct inj *inject_begin(pid_t pid, char *err, size_t errlen);

/* Address of symbol sym in the object of the target whose path ends with
 * obj ("/libc.so.6", or a full path), from its file and /proc/PID/maps.
 * 0 if not found. */
uint64_t inject_sym(pid_t pid, const char *obj, const char *sym);

/* Copy len bytes into the scratch area of the thread's stack; their address
 * in the target, or 0 (too big).  Valid until inject_end(). */
uint64_t inject_push(struct inj *in, const void *data, size_t len);

/* Call fn(args...) in the thread (up to 6 integer arguments); 0 and *ret,
 * or -1 with err (the target died, or the call faulted: then the thread is
 * left stopped and inject_end() puts it back). */
int inject_call(struct inj *in, uint64_t fn, const uint64_t *args, int nargs, uint64_t *ret,
		char *err, size_t errlen);

/* Registers and state as they were; the thread is released.  tid is the
 * thread that was used (for the agent's wait for the release). */
void inject_end(struct inj *in);
pid_t inject_tid(const struct inj *in);

/* ---- the architecture's part (arch/ARCH/inject.c, tool_arch.h) ---- */

struct inj_regs;	/* the saved state, opaque */

/* Save the stopped thread's registers and extended state: 0 or -errno. */
int inject_arch_save(pid_t tid, struct inj_regs **saved);
/* Put them back (and free them): 0 or -errno. */
int inject_arch_restore(pid_t tid, struct inj_regs *saved);
/* The stack pointer and program counter of the saved state. */
uint64_t inject_arch_sp(const struct inj_regs *saved);
uint64_t inject_arch_pc(const struct inj_regs *saved);
/* Whether the saved state is inside a system call (the kernel restarts it
 * when the thread resumes with these registers). */
bool inject_arch_in_syscall(const struct inj_regs *saved);
/* Set the thread up to call fn(args) with stack pointer sp (aligned as the
 * ABI wants at a call, room below the red zone) and return address 0;
 * no system call restart on resume.  0 or -errno. */
int inject_arch_setup_call(pid_t tid, const struct inj_regs *saved, uint64_t fn,
			   const uint64_t *args, int nargs, uint64_t sp);
/* After the stop at address 0: the return value; -errno if the thread did
 * not stop there (*pc says where it did). */
int inject_arch_result(pid_t tid, uint64_t *ret, uint64_t *pc);

#endif
