/* SPDX-License-Identifier: MIT */
/*
 * arch.h - what an architecture back end provides to the generic core, as
 * the kernel's arch_prepare_kprobe()/arch_arm_kprobe() hooks do.  Generic
 * code reaches an architecture only through this file, the port's
 * constants header and the public register accessors.
 *
 * A port to ARCH (uname -m) is these files, and only they know its
 * instruction set, registers and ABI:
 *   src/arch/ARCH/arch.mk        ARCH_SRCS, ARCH_ASMS, ARCH_LIBS,
 *                                ARCH_GPR_CFLAGS, ARCH_OPTPROBES (y when it
 *                                implements the jump-optimization hooks
 *                                below; else src/optprobes_none.c is built)
 *   src/arch/ARCH/arch_insn.h    constants and per-point state:
 *       struct arch_insn          per probe point (the kernel's
 *                                 arch_specific_insn), opaque to the core
 *       struct arch_optinsn       a detour (ARCH_OPTPROBES only), opaque
 *       UKP_ARCH_MAX_INSN         longest instruction, bytes
 *       UKP_ARCH_INSN_FIXED_LEN   every instruction's length, 0 if variable
 *       UKP_ARCH_SLOT_SIZE        an out-of-line slot, bytes
 *       UKP_ARCH_MAX_PATCH        most bytes a probe changes at its address
 *       UKP_ARCH_MAX_REGION       an optimized region is shorter than this
 *       UKP_ARCH_PAGE_SIZE        the page size of the mappings we make
 *       UKP_ARCH_STACK_ALIGN      the stack pointer's alignment at a call
 *       UKP_ARCH_FPARGS_SIZE      the vector argument registers a jprobe saves
 *   src/arch/ARCH/arch_libc.h    glibc's symbol versions for the interposed
 *                                functions (UKP_GLIBC_BASE, ...), and
 *   src/arch/ARCH/libc.map       their version nodes
 *   include/arch/ARCH/ukprobes/asm/ptrace.h
 *                                struct pt_regs, kprobe_opcode_t and the
 *                                kernel's accessors (instruction_pointer(),
 *                                kernel_stack_pointer(), regs_return_value(),
 *                                regs_get_kernel_argument(), ...): generic
 *                                code never names a register field
 *   tests/arch/ARCH/NAME.S       the code tests/scenario/NAME.c probes
 *
 * Functions marked "trap path" run in signal context: no lock, no
 * allocation, no libc call that is not async-signal-safe.
 */
#ifndef UKP_ARCH_H
#define UKP_ARCH_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>

#include <ukprobes.h>

#include "arch_insn.h"

struct ukp_point;
struct ukp_ret_entry;
struct ukp_slot_info;

/** arch_init() - once, before the first probe (ukp_kprobe_mutex held). */
void arch_init(void);

/* ---- what the core must know of libc on this architecture -------------- */

/*
 * The code a signal handler returns through (rt_sigreturn): blacklisted,
 * since every handler's return would trap there.  @names: its symbols in
 * libc (NULL-terminated, the first is used in messages); @code/@len: its
 * bytes, to find it where libc's .symtab is stripped.  NULL where libc has
 * none (the kernel's vDSO provides it).
 */
struct arch_sigreturn {
	const char *const *names;
	const unsigned char *code;
	size_t len;
};
const struct arch_sigreturn *arch_sigreturn_trampoline(void);

/**
 * arch_call_ifunc_resolver() - call an STT_GNU_IFUNC resolver with the
 * arguments this architecture's dynamic linker passes it (none on x86-64;
 * the hardware capabilities on aarch64, powerpc...), and return the
 * implementation it chose.
 */
uintptr_t arch_call_ifunc_resolver(uintptr_t resolver);

/* ---- preparing and arming (ukp_kprobe_mutex held) ---------------------- */

/** arch_kretprobe_supported() - can a return address be replaced here?
 *  (Not under a hardware-checked shadow stack.)  API calls only. */
bool arch_kretprobe_supported(void);

/** arch_insn_len() - length of the instruction at @code, or -EILSEQ. */
int arch_insn_len(const uint8_t *code, size_t avail);

/**
 * arch_skip_func_entry() - bytes to skip at a function's entry so that a
 * "function entry" probe lands on the first real instruction (x86: endbr64,
 * as the kernel's arch_adjust_kprobe_addr() does).  0 when none.
 */
size_t arch_skip_func_entry(const uint8_t *code, size_t avail);

/**
 * arch_prepare_kprobe() - decode the instruction at pt->addr from @orig
 * (@avail original bytes), decide how to execute it (out of line, emulate,
 * refuse), and build its slot.
 * Returns 0; -EINVAL for an instruction that cannot be probed; -EILSEQ if
 * the bytes do not decode; -ENOMEM when no slot can be had within reach.
 * On error nothing is left allocated.
 */
int arch_prepare_kprobe(struct ukp_point *pt, const uint8_t *orig, size_t avail);

/** arch_unprepare_kprobe() - undo a prepare that was never armed. */
void arch_unprepare_kprobe(struct ukp_point *pt);

/** arch_remove_kprobe() - release the slot of a point that was armed
 *  (after a grace period: no thread enters it any more). */
void arch_remove_kprobe(struct ukp_point *pt);

/** arch_arm_kprobe()/arch_disarm_kprobe() - write/remove the breakpoint.
 *  The caller serializes cores afterwards (ukp_sync_cores()). */
int arch_arm_kprobe(struct ukp_point *pt);
int arch_disarm_kprobe(struct ukp_point *pt);

/** arch_maybe_patched() - could @b be the first byte of a breakpoint or of
 * an optimized jump of ours?  (Reading code as it was looks up only those.) */
bool arch_maybe_patched(uint8_t b);

/** arch_original_byte() - the byte the breakpoint at pt->addr covers. */
uint8_t arch_original_byte(const struct ukp_point *pt, size_t i);
/** Length of the breakpoint instruction (bytes to restore). */
size_t arch_breakpoint_len(void);

/* ---- the trap path ----------------------------------------------------- */

/** Is this SIGTRAP a breakpoint instruction (not a kill(), not a TF step)? */
bool arch_trap_is_breakpoint(const siginfo_t *info, const ucontext_t *uc);
/** Address of the breakpoint instruction that trapped. */
uintptr_t arch_trap_bp_addr(const ucontext_t *uc);
/** Is there a breakpoint instruction at @addr now? */
bool arch_breakpoint_at(uintptr_t addr);

uintptr_t arch_uc_ip(const ucontext_t *uc);
void arch_uc_set_ip(ucontext_t *uc, uintptr_t ip);
int arch_uc_trapnr(const ucontext_t *uc);
void arch_regs_from_uc(struct pt_regs *regs, const ucontext_t *uc);
void arch_regs_to_uc(const struct pt_regs *regs, ucontext_t *uc);
/* The signal mask the context resumes with (first word: enough for Linux's
 * 64 signals). */
uint64_t arch_uc_sigmask(const ucontext_t *uc);
void arch_uc_set_sigmask(ucontext_t *uc, uint64_t mask);

/* A jprobe saves the argument registers the C entry function may clobber
 * beyond the general ones (trap path). */
void arch_save_fpargs(const ucontext_t *uc, void *buf);
void arch_restore_fpargs(ucontext_t *uc, const void *buf);

enum arch_exec {
	ARCH_EXEC_DONE,		/* emulated: regs are after the instruction */
	ARCH_EXEC_BOOST,	/* regs->ip is the boosted copy: no more trap */
	ARCH_EXEC_STEP,		/* regs->ip is the copy followed by a breakpoint */
};

/**
 * arch_execute() - execute the probed instruction on @regs (trap path).
 * @need_post: post handlers must run after it, so a boosted copy won't do.
 * For ARCH_EXEC_STEP, *@step_trap is the address of the breakpoint that ends
 * the step and *@copy the start of the copy.
 */
enum arch_exec arch_execute(struct ukp_point *pt, struct pt_regs *regs,
			    bool need_post, uintptr_t *step_trap, uintptr_t *copy);

/**
 * arch_step_may_block() - the copy of @pt's instruction may block for long
 * (a system call).  Asynchronous signals then stay deliverable during the
 * step, as they would be in the original system call.
 */
bool arch_step_may_block(const struct ukp_point *pt);

/**
 * arch_step_done() - after the step's breakpoint trapped: set @regs as if the
 * original instruction at @info->addr had executed in place (trap path).
 */
void arch_step_done(const struct ukp_slot_info *info, struct pt_regs *regs);

/**
 * arch_slot_trap_kind() - for an address inside slot @slot that copies
 * @info: 1 if @ip is the start of a copy (a fault there is the original
 * instruction's), 2 if it is the breakpoint ending a step copy, else 0.
 */
int arch_slot_ip_kind(const struct ukp_slot_info *info, uintptr_t slot,
		      uintptr_t ip);

/**
 * arch_fixup_exception() - if the fault at uc's ip happened inside one of the
 * back end's guarded memory accessors, make it return an error and return
 * true (the kernel's exception tables).
 */
bool arch_fixup_exception(ucontext_t *uc);

/* Guarded accessors: 0 or -EFAULT, never a crash.  Trap-safe. */
int arch_safe_read_ulong(uintptr_t addr, unsigned long *val);
int arch_safe_write_ulong(uintptr_t addr, unsigned long val);

/* ---- return probes ----------------------------------------------------- */

/*
 * Where a call's return address lives is the architecture's business (x86:
 * on the stack; arm64: in x30): generic code names a call by its "frame",
 * an address on the stack that the entry and the return both give and that
 * is lower for deeper calls (stacks grow down on every supported arch).
 * Inline in arch_insn.h where the hit paths need them.
 *
 *   uintptr_t arch_kretprobe_frame(const struct pt_regs *regs)
 *	At a function's first instruction: its call's frame.
 *   uintptr_t arch_kretprobe_return_frame(const struct pt_regs *regs)
 *	In the return trampoline's handler: the frame of the call returning.
 *   int arch_kretprobe_get_ret(const struct pt_regs *regs, uintptr_t frame,
 *				unsigned long *ret, bool guarded)
 *   int arch_kretprobe_set_ret(struct pt_regs *regs, uintptr_t frame,
 *				unsigned long ret, bool guarded)
 *	Read or replace the return address of the call at @frame (first
 *	instruction).  @guarded: from a trap, where the memory may fault
 *	(0 or -EFAULT); otherwise the thread runs on that memory.
 *   uintptr_t arch_kretprobe_trampoline(bool gpr, bool primed)
 *	The code a return stub goes on to: keeping the vector return
 *	registers for the handlers or not (@gpr), returning by a predicted
 *	`ret` (@primed: the entry primed the return stack buffer) or not.
 *   bool arch_kretprobe_trampoline_is_gpr(uintptr_t tramp)
 *
 * Return stubs: each per-thread entry i of the calls in flight
 * (struct ukp_ret_entry, kretprobes.h) has UKP_ARCH_RET_STUB_SIZE bytes of
 * code of its own at stubs + i * UKP_ARCH_RET_STUB_SIZE, whose return
 * address (arch_ret_stub_return()) is what replaces the real one: it loads
 * the entry and its real return address and goes on to entry->tramp.  Its
 * prime address (arch_ret_stub_prime()) is where an optimized entry that
 * primes the return stack buffer jumps (x86: prime.h).
 *   uintptr_t arch_ret_stub_return(uintptr_t stubs, unsigned int i)
 *   uintptr_t arch_ret_stub_prime(uintptr_t stubs, unsigned int i)
 *   uintptr_t arch_prime_none(void)
 *	Where a priming detour goes when no kretprobe set a stub up.
 */

/** arch_ret_stubs_write() - write @n return stubs at @code (writable now,
 *  executed at the same address later) for the entries @e[0..n).  API. */
void arch_ret_stubs_write(uint8_t *code, struct ukp_ret_entry *e, unsigned int n);

/** arch_ret_stub_index() - i if @ip is the return address of stub i of the
 *  @n at @stubs, else -1. */
long arch_ret_stub_index(uintptr_t stubs, unsigned int n, uintptr_t ip);

/*
 * Unwind information (DWARF CFI, as in .eh_frame) for the stubs, so that
 * every unwinder goes through a stub to the real caller: the return
 * address column, the alignment factors, the CIE's initial instructions,
 * and for stub i the range its FDE covers (the return address minus one
 * included: unwinders look a caller's frame up at its return address - 1)
 * and the FDE's instructions (the return address read from @e->ret).
 */
struct arch_cfi {
	uint8_t ra_column;
	uint8_t code_align;
	int8_t data_align;
	uint8_t cie_len;
	uint8_t cie_insns[16];
	/* For libgcc, when it needs other initial instructions (0: none):
	 * it tells frames apart by the CFA of their callee. */
	uint8_t gcc_cie_len;
	uint8_t gcc_cie_insns[16];
};
const struct arch_cfi *arch_ret_stub_cfi(void);
/* Returns the number of instruction bytes written to @insns (<= 32). */
size_t arch_ret_stub_fde(uintptr_t stubs, unsigned int i, const struct ukp_ret_entry *e,
			 uintptr_t *start, size_t *len, uint8_t *insns);
/** ELF e_machine of this architecture (for the debugger's JIT objects). */
uint16_t arch_elf_machine(void);

/* ---- jump optimization (optprobes, ukp_kprobe_mutex held) -------------- */

/**
 * arch_prepare_optimized() - check that the region at pt->addr can be
 * replaced by a jump (the kernel's can_optimize()) and build its detour.
 * @code: the ORIGINAL bytes of [@start, @start + @len): the whole function
 *        containing pt->addr when @whole_function, else only bytes from
 *        pt->addr (then only a single instruction of jump size qualifies).
 * @func_entry: pt->addr is the function's first byte.
 * @gpr_only: the handlers need no vector state saved.
 * @prime: a kretprobe is among them: the detour may make its return
 *         predictable (x86: prime.h).
 * Returns 0, or -EINVAL when the region may not be optimized (it stays a
 * breakpoint probe), -EAGAIN when it needs @code to be the whole function,
 * -ENOMEM.
 */
int arch_prepare_optimized(struct ukp_point *pt, struct arch_optinsn *op,
			   const uint8_t *code, uintptr_t start, size_t len,
			   bool whole_function, bool func_entry, bool gpr_only,
			   bool prime);
/** arch_opt_batch_done() - the optimizer's pass has prepared its batch:
 *  forget what was kept about the functions it looked at (their code may
 *  change before the next). */
void arch_opt_batch_done(void);
/** arch_release_optimized() - free the detour of an optimization that
 *  was never patched in (@used false) or that no thread can be in. */
void arch_release_optimized(struct arch_optinsn *op, bool used);
/** Bytes of code the jump covers (a probe inside them conflicts). */
size_t arch_opt_region_len(const struct arch_optinsn *op);
/** arch_opt_single() - the region is the probed instruction alone: no
 *  thread can be inside it past its first byte, so patching it needs no
 *  proof of where threads are. */
bool arch_opt_single(const struct arch_optinsn *op);
/** arch_opt_patchable_entry() - the region is a patchable function entry's
 *  nop (-fpatchable-function-entry, -mnop-mcount): listed [FTRACE]. */
bool arch_opt_patchable_entry(const struct arch_optinsn *op);
/** Where a breakpoint hit on a prepared probe resumes (trap path). */
uintptr_t arch_opt_resume_ip(const struct arch_optinsn *op);
/** The detour's memory, for quiescence checks. */
void arch_opt_detour_range(const struct arch_optinsn *op, uintptr_t *start,
			   uintptr_t *end);
/** Our own code a thread runs on the way into a handler from a detour. */
void arch_opt_entry_range(uintptr_t *start, uintptr_t *end);
/** The original byte @i of the region (for reading code as it was). */
uint8_t arch_opt_original_byte(const struct arch_optinsn *op, size_t i);

/* Patch in two stages with ukp_sync_cores() after each (the int3 protocol:
 * the breakpoint stays in byte 0 until the rest is written). */
int arch_optimize_stage1(struct ukp_point *pt, struct arch_optinsn *op);
int arch_optimize_stage2(struct ukp_point *pt, struct arch_optinsn *op);
int arch_unoptimize_stage1(struct ukp_point *pt, struct arch_optinsn *op);
int arch_unoptimize_stage2(struct ukp_point *pt, struct arch_optinsn *op);

/** arch_opt_copy_ip() - the detour's copy of the region instruction at
 * byte @off of the region (the region's end if @off is past its last
 * instruction), or 0 when no instruction starts at @off.  Trap path. */
uintptr_t arch_opt_copy_ip(const struct arch_optinsn *op, size_t off);

/**
 * arch_opt_translate() - @ip is in a detour's relocated copy (slot @slot,
 * described by @info): the original address of that instruction.
 * Returns false when @ip is not at a copied instruction.  Trap path.
 */
bool arch_opt_translate(const struct ukp_slot_info *info, uintptr_t slot,
			uintptr_t ip, uintptr_t *orig);

#endif
