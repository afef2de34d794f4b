/* SPDX-License-Identifier: MIT */
/*
 * thread_ext.h - per-thread state too big for static TLS: the calls a
 * thread has in flight under kretprobes, and a running jprobe's saved state.
 *
 * Initial-exec TLS must fit the static TLS block, which a dlopen()ed
 * library shares with every other (a few hundred bytes).  So each thread
 * holds only a pointer, to a block claimed from a preallocated pool the
 * first time it needs one (no allocation on the trap path) and given back
 * when the thread exits.  Blocks are made with their kretprobe return stubs
 * and never freed (kretprobe_unwind.c).
 */
#ifndef UKP_THREAD_EXT_H
#define UKP_THREAD_EXT_H

#include "internal.h"
#include "kretprobes.h"
#include "ri_cache.h"

#define UKP_JPROBE_STACK 128	/* bytes of stack a jprobe saves (kernel: 64) */

struct ukp_jprobe_state {
	bool active;			/* an entry function runs */
	uintptr_t addr;
	unsigned long gen;
	unsigned int srcu;		/* read section held across the entry */
	struct pt_regs regs;
	unsigned long stack[UKP_JPROBE_STACK / sizeof(unsigned long)];
	unsigned char fpargs[UKP_ARCH_FPARGS_SIZE];	/* vector argument registers */
};

struct ukp_thread_ext {
	atomic_int in_use;
	struct ukp_ri_cache ri;		/* free instances kept for the next calls */
	struct ukp_rstack rstack;
	struct ukp_jprobe_state jp;
};

/* This thread's block (initial-exec TLS: no call to reach it). */
extern __thread struct ukp_thread_ext *ukp_ext_mine __attribute__((tls_model("initial-exec")));

/* Claim a block for this thread; NULL when the pool is empty. */
struct ukp_thread_ext *ukp_ext_claim(void);

/* This thread's block, claiming one if needed; NULL when the pool is
 * empty (the hit is then missed).  Trap-safe. */
static inline struct ukp_thread_ext *ukp_ext_get(void)
{
	struct ukp_thread_ext *ext = ukp_ext_mine;

	return likely(ext) ? ext : ukp_ext_claim();
}

/* This thread's block if it has one.  Trap-safe. */
static inline struct ukp_thread_ext *ukp_ext_peek(void)
{
	return ukp_ext_mine;
}
/* The pool of blocks, for a walk over every thread's (trap-safe): how many
 * there are, and block @i (NULL while it is being added). */
unsigned int ukp_ext_count(void);
struct ukp_thread_ext *ukp_ext_block(unsigned int i);
/* Keep enough free blocks for the threads there are (API calls only). */
void ukp_ext_reserve(void);

#endif
