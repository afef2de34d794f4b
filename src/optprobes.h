/* SPDX-License-Identifier: MIT */
/* optprobes.h - shared by optprobes.c and the detour callback. */
#ifndef UKP_OPTPROBES_H
#define UKP_OPTPROBES_H

#include "internal.h"

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

void ukp_opt_callback(struct ukp_point *pt, struct pt_regs *regs);
void ukp_opt_forget_thread_record(void);
struct ukp_qs_rec *ukp_qs_enter(unsigned int *srcu);
void ukp_qs_exit(struct ukp_qs_rec *r, unsigned int srcu);
int ukp_qs_init(void);
void ukp_qs_synchronize(void);

#endif
