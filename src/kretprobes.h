/* SPDX-License-Identifier: MIT */
/* kretprobes.h - shared by kretprobes.c and the return path. */
#ifndef UKP_KRETPROBES_H
#define UKP_KRETPROBES_H

#include "internal.h"

#define UKP_RET_STACK	256	/* calls in flight per thread */

struct ukp_rp_pool {
	struct kretprobe *_Atomic rp;	/* NULL once unregistered */
	atomic_bool dead;		/* unregistered: free when all are back */
	atomic_int reaped;		/* queued for freeing (once) */
	size_t inst_size;
	unsigned int n;
	_Atomic uint64_t free_head;	/* index + 1 | ABA tag << 32 */
	struct ukp_rp_pool *dead_next;
	char *insts;
};

/*
 * A call in flight under kretprobes.  Entry i of a thread's stack has a
 * return stub of its own (kretprobe_unwind.c): the address put in place of
 * the return address, which gives the trampoline this entry and tells
 * unwinders where the real return address is (@ret).  The stub's code reads
 * @ret and @tramp at these offsets (arch code, unwind info): keep them first.
 */
struct ukp_ret_entry {
	unsigned long ret;		/* the real return address */
	uintptr_t tramp;		/* the trampoline its stub goes on to */
	struct kretprobe_instance *ri;	/* NULL: its frame was unwound */
	uintptr_t frame;		/* arch_kretprobe_frame() at the entry */
	bool altstack;			/* on the thread's signal stack */
};

#define UKP_RET_ENTRY_RET	0
#define UKP_RET_ENTRY_TRAMP	8
_Static_assert(offsetof(struct ukp_ret_entry, ret) == UKP_RET_ENTRY_RET, "stub reads ret");
_Static_assert(offsetof(struct ukp_ret_entry, tramp) == UKP_RET_ENTRY_TRAMP, "stub reads tramp");

/*
 * This thread's calls in flight, innermost last.  Only its thread changes
 * it, and only with kcb->depth raised (a handler "runs"): a signal handler
 * that interrupts the change and calls a probed function meanwhile finds
 * the thread busy and counts a miss instead of touching the stack.
 */
struct ukp_rstack {
	unsigned int depth;
	uintptr_t stubs;		/* entry i returns through stub i here */
	struct ukp_ret_entry e[UKP_RET_STACK];
};

struct kretprobe_instance *ukp_inst(struct ukp_rp_pool *pool, unsigned int i);
struct kretprobe_instance *ukp_pool_get(struct ukp_rp_pool *pool);
void ukp_pool_put(struct kretprobe_instance *ri);
void ukp_pool_reap_if_done(struct ukp_rp_pool *pool);
void ukp_kretprobes_after_fork(void);

struct ukp_thread_ext;
/* kretprobe_unwind.c: @n zeroed per-thread blocks, each with its return
 * stubs in place and their unwind information registered; 0 or -ENOMEM. */
int ukp_ret_blocks_new(unsigned int n, struct ukp_thread_ext **out);

#endif
