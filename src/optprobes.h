/* SPDX-License-Identifier: MIT */
/* optprobes.h - shared by optprobes.c and the detour callback. */
#ifndef UKP_OPTPROBES_H
#define UKP_OPTPROBES_H

#include "internal.h"
#include "trap.h"

/*
 * The detour path's grace period: one record per thread, its nesting count
 * written by that thread only; writers read them after membarrier().
 */
#define UKP_QS_MAX 4096

struct ukp_qs_rec {
	atomic_int tid;			/* owner, 0 when free */
	volatile int nest;		/* written by the owner only */
} __attribute__((aligned(64)));

extern struct ukp_qs_rec *_Atomic ukp_qs_recs;

uintptr_t ukp_opt_callback(struct ukp_point *pt, struct pt_regs *regs, uintptr_t ret_tramp,
		      int gpr);
void ukp_opt_forget_thread_record(void);
/* This thread's record, claimed the first time (NULL: none left). */
struct ukp_qs_rec *ukp_qs_claim(void);

/*
 * ukp_qs_enter() - open a read section of the cheap grace period on this
 * thread (its record's count; the shared SRCU counters if it has none).
 * Returns the record, or NULL with *@srcu set.  Inline: the detour
 * callback and the return trampoline's handler use it on every hit.
 */
static inline struct ukp_qs_rec *ukp_qs_enter(struct ukp_kcb *kcb, unsigned int *srcu)
{
	struct ukp_qs_rec *r = kcb->qs;

	if (unlikely(!r))
		r = kcb->qs = ukp_qs_claim();
	if (likely(r)) {
		r->nest++;
		__asm__ volatile("" ::: "memory");
	} else {
		*srcu = ukp_srcu_read_lock();
	}
	return r;
}

static inline void ukp_qs_exit(struct ukp_qs_rec *r, unsigned int srcu)
{
	if (likely(r)) {
		__asm__ volatile("" ::: "memory");
		r->nest--;
	} else {
		ukp_srcu_read_unlock(srcu);
	}
}
int ukp_qs_init(void);
void ukp_qs_synchronize(void);

#endif
