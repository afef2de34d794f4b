// SPDX-License-Identifier: MIT
/*
 * grace_gpr.c - the detour path's per-thread records (grace.h): claimed by
 * a thread on its first read section, from the detour callback or the
 * return trampoline's handler, where only the general registers were
 * saved (built with -mgeneral-regs-only).  The claim sits in section
 * ukp_opt_text with the detour callback: a thread in there may not have
 * counted itself yet, so writers prove no thread is (optprobes.c).
 */
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "grace.h"
#include "trap.h"

struct ukp_qs_rec *_Atomic ukp_qs_recs;

UKP_OPT_TEXT struct ukp_qs_rec *ukp_qs_claim(void)
{
	struct ukp_qs_rec *recs = atomic_load_explicit(&ukp_qs_recs, memory_order_acquire);
	int tid = (int)syscall(SYS_gettid);

	if (!recs)
		return NULL;
	for (unsigned int i = 0; i < UKP_QS_MAX; i++) {
		struct ukp_qs_rec *r = &recs[((unsigned int)tid + i) % UKP_QS_MAX];
		int zero = 0;

		if (atomic_compare_exchange_strong(&r->tid, &zero, tid))
			return r;
	}
	return NULL;	/* full: this thread uses the shared counters */
}

/* After fork(): this thread's record was cleared with all the others. */
void ukp_opt_forget_thread_record(void)
{
	ukp_this_kcb()->qs = NULL;
}
