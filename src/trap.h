/* SPDX-License-Identifier: MIT */
/* trap.h - per-thread probe state, shared by the trap path's files. */
#ifndef UKP_TRAP_H
#define UKP_TRAP_H

#include <setjmp.h>

#include "internal.h"

/* Per-thread kprobe control block (the kernel's struct kprobe_ctlblk). */
struct ukp_kcb {
	int depth;			/* >0: a handler runs on this thread */
	int srcu_depth;			/* read sections open (UKP_DEBUG only) */
	bool internal;			/* ukprobes' own thread: runs no handler */
	/* The detour path's per-thread state, next to depth: one TLS access. */
	struct ukp_qs_rec *qs;		/* this thread's grace-period record */
	int *errno_ptr;			/* &errno, looked up once */
	/* While an optimized entry's handlers run: nonzero when its detour
	 * primes a kretprobe's return (prime.h), and where the priming goes
	 * (a return stub's prime address) once a kretprobe set one up. */
	uintptr_t ret_tramp;
	uintptr_t prime_to;
	/* The signal stack this thread set with sigaltstack(), as seen by
	 * our interposer (0 size: none known). */
	uintptr_t alt_base;
	size_t alt_size;
	struct kprobe *cur;		/* whose handler runs */
	sigjmp_buf *recover;		/* where a handled handler fault resumes */
	const ucontext_t *uc;		/* the trap's context, while handlers run */
	/* A single-step in flight, 0 when none. */
	uintptr_t ss_trap;		/* the breakpoint that ends it */
	uintptr_t ss_copy;		/* the copy: a fault there is the step's */
	uintptr_t ss_addr;		/* the probed instruction */
	unsigned long ss_gen;		/* its point's generation */
	uint64_t ss_mask;		/* the program's signal mask */
	/* What the step's slot held when the step began: the step finishes
	 * from this, never from the slot, which may have been reused by the
	 * time the trap that ends the step reaches us (grace.h). */
	struct ukp_slot_info ss_info;
	bool ss_info_valid;
};

/* Initial-exec TLS: no allocation, no call to reach it. */
extern __thread struct ukp_kcb ukp_kcb_tls __attribute__((tls_model("initial-exec")));

static inline struct ukp_kcb *ukp_this_kcb(void)
{
	return &ukp_kcb_tls;
}

static inline void ukp_handler_enter(struct ukp_kcb *kcb)
{
	kcb->depth++;
	__asm__ volatile("" ::: "memory");
}

static inline void ukp_handler_exit(struct ukp_kcb *kcb)
{
	__asm__ volatile("" ::: "memory");
	kcb->depth--;
}

int ukp_run_pre_handlers(struct ukp_kcb *kcb, struct ukp_point *pt,
			 struct pt_regs *regs);

/* jprobes.c, on the trap path */
bool ukp_jprobe_return_trap(struct ukp_kcb *kcb, ucontext_t *uc, uintptr_t bp);
/* trap.c: execute the probed instruction of @pt, then post handlers */
void ukp_execute_insn(struct ukp_kcb *kcb, struct ukp_point *pt, ucontext_t *uc,
		      struct pt_regs *regs);

#endif
