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

struct ukp_ret_entry {
	struct kretprobe_instance *ri;
	uintptr_t slot;		/* where the return address was */
	bool altstack;		/* on the thread's signal stack */
};

/* This thread's calls in flight, innermost last. */
struct ukp_rstack {
	unsigned int depth;
	struct ukp_ret_entry e[UKP_RET_STACK];
};

struct kretprobe_instance *ukp_inst(struct ukp_rp_pool *pool, unsigned int i);
struct kretprobe_instance *ukp_pool_get(struct ukp_rp_pool *pool);
void ukp_pool_put(struct kretprobe_instance *ri);
void ukp_pool_reap_if_done(struct ukp_rp_pool *pool);
void ukp_kretprobes_after_fork(void);

#endif
