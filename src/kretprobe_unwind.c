// SPDX-License-Identifier: MIT
/*
 * kretprobe_unwind.c - what every unwinder must see through: the return
 * addresses that kretprobes replace.
 *
 * THE PROBLEM.  A kretprobe replaces a return address.  Everything that
 * reads return addresses then finds ours: C++ and Rust unwinding, forced
 * unwinding (pthread_cancel, pthread_exit), backtrace(), _Unwind_Backtrace,
 * libunwind, gdb, and a signal handler that walks the stack between an
 * entry and its return.  Left alone, an exception thrown through a
 * kretprobed frame ends in std::terminate and a cancelled thread skips the
 * destructors above it.  The kernel fixes its own unwinders
 * (kretprobe_find_ret_addr()); user space has no unwinder of ours.
 *
 * TWO DESIGNS WERE WEIGHED.
 *  1. Fix up at the unwinders' doors: interpose _Unwind_RaiseException,
 *     _Unwind_ForcedUnwind, _Unwind_Resume, _Unwind_Backtrace and
 *     backtrace(), put the real return addresses back in the thread's
 *     frames before delegating and take the instances of the frames that
 *     will be unwound.  It fails where interposition does: libukprobes
 *     dlopen()ed into a running program (ukprobe -p) comes after libgcc in
 *     the lookup order and binds nothing; glibc's backtrace() and its
 *     cancellation reach libgcc_s through dlopen()+dlsym(), past any
 *     interposer; -static-libgcc programs call their own copy; gdb reads
 *     memory and calls nothing.  It also loses the return probes of every
 *     frame that stays (the catching frame and its callers), whose return
 *     addresses it had to restore with no way to re-arm them, since a
 *     successful _Unwind_RaiseException never returns.
 *  2. Make what replaces the return address a real frame with unwind
 *     information, so that every unwinder that reads DWARF call frame
 *     information goes through it by itself.  Chosen: it needs no
 *     cooperation from the caller of the unwinder, keeps the probes of the
 *     frames that stay, and the same information serves exceptions,
 *     cancellation, stack walks, signal handlers and the debugger.
 *
 * HOW.  The unwind rule must give the real return address of one
 * particular call, and DWARF expressions can read memory but not
 * thread-local storage, so the address that replaces a return address
 * must itself tell where the real one is.  Hence return stubs per thread
 * and per depth: the thread's block (thread_ext.h) holds its calls in
 * flight (struct ukp_ret_entry, kretprobes.h), and entry i has a stub of
 * its own (arch code, e.g. ret_stubs.c for x86-64) whose address is what
 * the entry handler puts in place.  A return lands in stub i, which hands
 * entry i and its real return address to the trampoline; the trampoline
 * checks that the entry is this call's (by its frame, arch_kretprobe_
 * return_frame()), runs the handlers and returns there.  Stub i's FDE says
 * "the CFA is the stack pointer, the return address is the value at
 * &e[i].ret": a constant address, since the stubs and the entries are made
 * together, per block, here.  The trampoline's own code has static CFI
 * (trampolines.S), so a return handler's or a signal handler's stack walk
 * goes through it too.
 *
 * The information is registered with libgcc (__register_frame: C++, Rust,
 * cancellation, _Unwind_Backtrace, glibc's backtrace()) and with gdb (its
 * JIT interface); see unwind_info.c.
 *
 * FRAMES THAT ARE UNWOUND.  The stubs' CIE names a personality routine,
 * ukp_kretprobe_personality(), which libgcc calls in the cleanup phase of
 * an exception or a forced unwind when it passes a stub: the frame will
 * never return, so the instances of its call (one per kretprobe on it) go
 * back to their pools at once, without the return handler (the kernel's
 * rethook has the same rule for frames that never return), and so do those
 * of deeper entries.  The entry itself stays, emptied, until the next
 * entry or return of the thread removes it: libgcc reads its return
 * address after the personality routine returns.  A frame that longjmp()
 * skips has no such hook: its instance goes back at the thread's next
 * kretprobe entry or return (kretprobe_return_gpr.c), or when the thread
 * exits.
 *
 * COST.  Per thread's block: 256 stubs of 32 bytes (8 KiB of code), and
 * 40 bytes of FDE per stub twice (libgcc's copy and the others', struct
 * arch_cfi): about 30 KiB with the block itself; a program's first
 * registration makes 18 blocks (thread_ext_gpr.c), as one region for the
 * unwinders.  libgcc before GCC 13 takes a mutex for each lookup once any
 * frame is registered (later versions look up registered frames without a
 * lock).
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <unwind.h>

#include "internal.h"
#include "arch.h"
#include "kretprobes.h"
#include "ri_cache.h"
#include "thread_ext.h"
#include "trap.h"
#include "unwind_info.h"

struct ukp_ret_chunk {
	unsigned int n;
	struct ukp_thread_ext **ext;
};

static size_t ukp_round_up(size_t v, size_t to)
{
	return (v + to - 1) / to * to;
}

/* The FDE of stub k of a chunk (k counts across its blocks). */
static size_t ukp_ret_stub_fde(void *arg, size_t k, uintptr_t *start, size_t *len,
			       uint8_t *insns)
{
	struct ukp_ret_chunk *c = arg;
	struct ukp_rstack *rs = &c->ext[k / UKP_RET_STACK]->rstack;
	unsigned int i = (unsigned int)(k % UKP_RET_STACK);

	return arch_ret_stub_fde(rs->stubs, i, &rs->e[i], start, len, insns);
}

_Unwind_Reason_Code ukp_kretprobe_personality(int version, _Unwind_Action actions,
					      _Unwind_Exception_Class cls,
					      struct _Unwind_Exception *ue,
					      struct _Unwind_Context *ctx);

int ukp_ret_blocks_new(unsigned int n, struct ukp_thread_ext **out)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t stubs = (size_t)UKP_RET_STACK * UKP_ARCH_RET_STUB_SIZE;
	size_t code_len = ukp_round_up(n * stubs, page);
	size_t ext_len = ukp_round_up(sizeof(struct ukp_thread_ext), 64);
	size_t unwind_off = code_len + ukp_round_up(n * ext_len, 64);
	size_t total = ukp_round_up(unwind_off + ukp_unwind_space((size_t)n * UKP_RET_STACK), page);
	struct ukp_ret_chunk c = { n, out };
	struct ukp_unwind_region *r;
	char *m;

	m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -ENOMEM;
	for (unsigned int b = 0; b < n; b++) {
		struct ukp_thread_ext *ext = (struct ukp_thread_ext *)(m + code_len + b * ext_len);
		uint8_t *code = (uint8_t *)m + b * stubs;

		ext->rstack.stubs = (uintptr_t)code;
		arch_ret_stubs_write(code, ext->rstack.e, UKP_RET_STACK);
		out[b] = ext;
	}
	r = ukp_unwind_build(m + unwind_off, (uintptr_t)m, n * stubs,
			     "ukprobes_kretprobe_return", arch_ret_stub_cfi(),
			     (uintptr_t)ukp_kretprobe_personality, (size_t)n * UKP_RET_STACK,
			     ukp_ret_stub_fde, &c);
	/* Never writable and executable at once. */
	if (mprotect(m, code_len, PROT_READ | PROT_EXEC)) {
		munmap(m, total);
		return -ENOMEM;
	}
	ukp_unwind_register(r);
	return 0;
}

/**
 * ukp_kretprobe_personality() - the personality routine of the return stubs'
 * frames (see above): in the cleanup phase of an exception or a forced
 * unwind, the call whose stub this is will not return; its instances go
 * back without the return handler.
 */
_Unwind_Reason_Code ukp_kretprobe_personality(int version, _Unwind_Action actions,
					      _Unwind_Exception_Class cls,
					      struct _Unwind_Exception *ue,
					      struct _Unwind_Context *ctx)
{
	struct ukp_thread_ext *ext = ukp_ext_peek();
	struct ukp_kcb *kcb = ukp_this_kcb();
	struct ukp_rstack *rs;
	long idx;

	(void)cls;
	(void)ue;
	if (version != 1)
		return _URC_FATAL_PHASE1_ERROR;
	if (!(actions & _UA_CLEANUP_PHASE) || !ext)
		return _URC_CONTINUE_UNWIND;
	rs = &ext->rstack;
	/* Another thread's stub (a coroutine that moved): not ours to touch. */
	idx = arch_ret_stub_index(rs->stubs, UKP_RET_STACK, (uintptr_t)_Unwind_GetIP(ctx));
	if (idx < 0)
		return _URC_CONTINUE_UNWIND;
	/* The thread's stack changes only while it "runs a handler": a signal
	 * handler's probed calls meanwhile are missed (kretprobes.h). */
	ukp_handler_enter(kcb);
	if ((unsigned int)idx < rs->depth) {
		struct ukp_ret_entry *e;

		/* Deeper frames were unwound before this one. */
		while (rs->depth > (unsigned int)idx + 1) {
			e = &rs->e[--rs->depth];
			if (e->ri)
				ukp_ri_put(&ext->ri, e->ri);
		}
		/* Every kretprobe's entry on this call, emptied. */
		for (long i = idx;; i--) {
			e = &rs->e[i];
			if (e->ri) {
				ukp_ri_put(&ext->ri, e->ri);
				e->ri = NULL;
			}
			if (!i || rs->e[i - 1].frame != e->frame ||
			    rs->e[i - 1].altstack != e->altstack)
				break;
		}
	}
	ukp_handler_exit(kcb);
	return _URC_CONTINUE_UNWIND;
}
