/* SPDX-License-Identifier: MIT */
/*
 * grace.h - when memory that a thread might execute or read may be reused
 * (the kernel's synchronize_rcu(), synchronize_rcu_tasks() and the
 * stop_machine() of text_poke, in user space).  grace.c implements it all.
 *
 * THE RULE.  Memory M that another thread may read or execute (a step slot,
 * a detour, the bytes of a region under a jump, a point, a table, a pool)
 * is freed, reused or rewritten only after three steps, in order:
 *
 *  1. Unpublish.  No thread can newly reach M: its pointer is out of every
 *     table, the breakpoint or jump that led to it is gone, and, where code
 *     changed, every core has been serialized (ukp_sync_cores()).
 *
 *  2. Readers.  Every read section that began before step 1 ended:
 *     ukp_synchronize() for the trap path's sections (ukp_srcu_read_lock()),
 *     ukp_qs_synchronize() for those and the detour path's per-thread
 *     records (ukp_qs_enter()).  Handlers run inside read sections, so
 *     after this no handler of an unpublished probe runs.
 *
 *  3. Positions (only for M that is executed, or code bytes changed under
 *     running threads).  ukp_threads_outside() proves that no thread is at
 *     an instruction inside M, or will resume at one:
 *       - a thread blocked in the kernel (a system call, a page fault) shows
 *         its user pc in /proc/self/task/TID/syscall;
 *       - a thread stopped by a signal whose handler of the program's is
 *         still running will resume where the signal frame says: the
 *         wrapper around the program's handlers notes that place
 *         (ukp_intr_push()) for the handler's lifetime;
 *       - a vfork-style child that ukprobes started (spawn.c) runs in this
 *         memory but is not in /proc/self/task: it is waited for until it
 *         calls execve;
 *       - a thread that is running or runnable has left straight-line code
 *         with no system call once it has run again: its on-CPU time
 *         (/proc/self/task/TID/schedstat) changed once since we looked
 *         (the kernel updates it at a tick or a switch, so that change may
 *         be time used before we looked, up to a preemption inside M), and
 *         then grew by 100 us more;
 *       - a thread blocked in rt_sigreturn counts as running: it resumes
 *         where its signal frame says, not at the pc /proc shows.
 *     What this cannot see: a thread kept in the kernel, its user pc inside
 *     M, across a scheduler update of its time (a page fault that takes
 *     longer than a tick, or a thread switched in and out again before it
 *     returns to user space).  Nothing short of stopping threads (ptrace,
 *     or a signal, which would make poll() and friends fail with EINTR)
 *     sees that; it is the one case where this rule is a heuristic.
 *     A proof can fail (a thread stays inside, or cannot be seen, for the
 *     whole wait allowed): then M stays retired, and a later call reclaims
 *     it.  Nothing is ever freed unproven.
 *
 * What step 3 does not see, the trap path never needs: between a
 * breakpoint and the moment its handler opens a read section the thread is
 * in the kernel, so the handler
 *   - finishes a single-step from what the thread recorded when the step
 *     began (struct ukp_kcb), never from the slot's current contents;
 *   - never resumes a thread inside a region that has a detour (prepared or
 *     optimized): ukp_opt_redirect() moves it to the detour's copy.
 *
 * Lock order and which functions may be called where: internal.h.
 */
#ifndef UKP_GRACE_H
#define UKP_GRACE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "trap.h"

/* ---- Step 2: the trap path's read sections (sleepable RCU) ------------- */
unsigned int ukp_srcu_read_lock(void);
void ukp_srcu_read_unlock(unsigned int cookie);
void ukp_synchronize(void);
void ukp_srcu_after_fork(void);

/* ---- Step 2: the detour path's per-thread records ----------------------- */

/*
 * One record per thread, its nesting count written by that thread only
 * (plain stores on the hit path); writers read them all after membarrier(),
 * the asymmetric fence of liburcu's "memb" flavour.
 */
#define UKP_QS_MAX 4096

struct ukp_qs_rec {
	atomic_int tid;			/* owner, 0 when free */
	volatile int nest;		/* written by the owner only */
} __attribute__((aligned(64)));

extern struct ukp_qs_rec *_Atomic ukp_qs_recs;

/* The detour path's code in which a thread may not have counted itself
 * yet (the callback, the claim): writers prove no thread is there. */
#define UKP_OPT_TEXT __attribute__((section("ukp_opt_text"), noinline))

/* This thread's record, claimed the first time (NULL: none left). */
struct ukp_qs_rec *ukp_qs_claim(void);
/* After fork(): this thread's record was cleared with all the others. */
void ukp_opt_forget_thread_record(void);

/*
 * ukp_qs_enter() - open a read section of the detour path on this thread
 * (its record's count; the shared SRCU counters if it has none).  Returns
 * the record, or NULL with *@srcu set.  Inline: the detour callback and the
 * return trampoline's handler use it on every hit.
 */
static inline struct ukp_qs_rec *ukp_qs_enter(struct ukp_kcb *kcb, unsigned int *srcu)
{
	struct ukp_qs_rec *r = kcb->qs;

	if (__builtin_expect(!r, 0))
		r = kcb->qs = ukp_qs_claim();
	if (__builtin_expect(!!r, 1)) {
		r->nest++;
		__asm__ volatile("" ::: "memory");
	} else {
		*srcu = ukp_srcu_read_lock();
	}
	return r;
}

static inline void ukp_qs_exit(struct ukp_qs_rec *r, unsigned int srcu)
{
	if (__builtin_expect(!!r, 1)) {
		__asm__ volatile("" ::: "memory");
		r->nest--;
	} else {
		ukp_srcu_read_unlock(srcu);
	}
}

/* The records (-ENOSYS when the asymmetric fence is missing). */
int ukp_qs_init(void);
int ukp_qs_init_locked(void);	/* ukp_kprobe_mutex held */
/* Both kinds of read sections: the records, then ukp_synchronize(). */
void ukp_qs_synchronize(void);
void ukp_qs_after_fork(void);

/* ---- Step 3: where threads are ------------------------------------------ */

/**
 * ukp_threads_outside() - true when no thread but the caller is, or will
 * resume, at an ip for which @inside returns true (see the rule above).
 * Waits up to @max_wait_us for running threads to run.  Not trap-safe
 * (reads /proc, allocates).
 */
bool ukp_threads_outside(bool (*inside)(uintptr_t ip, void *arg), void *arg,
			 unsigned int max_wait_us, unsigned int flags);
/* A thread in a read section of the detour path (a handler called from a
 * detour, or the return trampoline's) counts as inside: it returns there. */
#define UKP_OUTSIDE_QS_READERS	0x1u
/* A thread in a program's signal handler is not waited for: its context
 * is moved out of M when the handler returns (ukp_resume_fixup(): code
 * under a jump has a copy in the detour to move to). */
#define UKP_OUTSIDE_RESUME_REDIRECTED	0x2u

/*
 * The wrapper around a program's signal handler notes where the thread it
 * interrupted will resume, for the handler's lifetime (trap-safe, no
 * allocation).  ukp_intr_push() returns a token for ukp_intr_pop().
 */
int ukp_intr_push(uintptr_t resume_ip);
void ukp_intr_pop(int token);
void ukp_intr_after_fork(void);

#endif
