// SPDX-License-Identifier: MIT
/*
 * jprobes.c - jump probes, the seeds' older API (removed from Linux in 4.15,
 * kept here for code written against it).
 *
 * At the probed function's entry the pre handler saves the registers and the
 * top of the stack and resumes in jp->entry, which therefore sees the
 * function's arguments.  entry ends with jprobe_return(), an int3 that
 * brings us back: registers and stack are restored, and the probed
 * instruction executes as after any probe hit.  While entry runs the
 * thread counts as inside a handler, so probes it hits are missed (nmissed),
 * as in the kernel where entry runs with the kprobe still current.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "internal.h"
#include "arch.h"
#include "symbols.h"
#include "trap.h"
#include "thread_ext.h"

int ukp_jprobe_pre_handler(struct kprobe *p, struct pt_regs *regs)
{
	struct jprobe *jp = container_of(p, struct jprobe, kp);
	struct ukp_kcb *kcb = ukp_this_kcb();
	struct ukp_point *pt = kprobe_point(p);
	struct ukp_thread_ext *ext = ukp_ext_get();
	struct ukp_jprobe_state *js;

	if (!pt)
		return 0;
	if (!ext || ext->jp.active) {
		__atomic_fetch_add(&p->nmissed, 1, __ATOMIC_RELAXED);
		return 0;
	}
	js = &ext->jp;
	for (size_t i = 0; i < ARRAY_SIZE(js->stack); i++)
		if (arch_safe_read_ulong(kernel_stack_pointer(regs) + i * sizeof(long),
					 &js->stack[i]))
			js->stack[i] = 0;
	js->regs = *regs;
	if (kcb->uc)
		arch_save_fpargs(kcb->uc, js->fpargs);
	js->addr = pt->addr;
	js->gen = pt->gen;
	js->active = true;
	/* unregister_jprobe() waits for the entry function to finish, as the
	 * kernel's did (it ran with preemption off). */
	js->srcu = ukp_srcu_read_lock();
	/* Stay "inside a handler" until jprobe_return(). */
	ukp_handler_enter(kcb);
	instruction_pointer_set(regs, (unsigned long)jp->entry);
	return 1;
}
NOKPROBE_SYMBOL(ukp_jprobe_pre_handler);

/* The int3 of jprobe_return(): restore and execute the probed instruction. */
bool ukp_jprobe_return_trap(struct ukp_kcb *kcb, ucontext_t *uc, uintptr_t bp)
{
	struct ukp_thread_ext *ext = ukp_ext_peek();
	struct ukp_jprobe_state *js = ext ? &ext->jp : NULL;
	struct pt_regs regs;
	struct ukp_point *pt;

	if (bp != (uintptr_t)jprobe_return || !js || !js->active)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(js->stack); i++)
		arch_safe_write_ulong(kernel_stack_pointer(&js->regs) + i * sizeof(long),
				      js->stack[i]);
	regs = js->regs;
	arch_restore_fpargs(uc, js->fpargs);
	js->active = false;
	ukp_handler_exit(kcb);
	ukp_srcu_read_unlock(js->srcu);
	pt = ukp_point_lookup(js->addr);
	if (pt && pt->gen == js->gen) {
		ukp_execute_insn(kcb, pt, uc, &regs);
	} else {
		/* Unregistered meanwhile: the original byte is back. */
		instruction_pointer_set(&regs, js->addr);
		arch_regs_to_uc(&regs, uc);
	}
	return true;
}
NOKPROBE_SYMBOL(ukp_jprobe_return_trap);

/* ------------------------------------------------------------------------ */

static int ukp_jprobe_prepare(struct jprobe *jp)
{
	if (!jp || !jp->entry)
		return -EINVAL;
	jp->kp.pre_handler = ukp_jprobe_pre_handler;
	jp->kp.post_handler = NULL;
	return 0;
}

UKP_API int register_jprobes(struct jprobe **jps, int num)
{
	struct kprobe **kps;
	int err = 0;

	if (!jps || num <= 0)
		return -EINVAL;
	kps = calloc((size_t)num, sizeof(*kps));
	if (!kps)
		return -ENOMEM;
	ukp_ext_reserve();
	for (int i = 0; i < num && !err; i++) {
		err = ukp_jprobe_prepare(jps[i]);
		if (!err)
			kps[i] = &jps[i]->kp;
	}
	if (!err)
		err = ukp_register_kprobes_kind(kps, num, UKP_KIND_JPROBE);
	free(kps);
	return err;
}

UKP_API int register_jprobe(struct jprobe *jp)
{
	return register_jprobes(&jp, 1);
}

UKP_API void unregister_jprobes(struct jprobe **jps, int num)
{
	struct kprobe **kps;

	if (!jps || num <= 0)
		return;
	kps = calloc((size_t)num, sizeof(*kps));
	if (!kps) {
		for (int i = 0; i < num; i++)
			if (jps[i])
				unregister_kprobe(&jps[i]->kp);
		return;
	}
	for (int i = 0; i < num; i++)
		kps[i] = jps[i] ? &jps[i]->kp : NULL;
	unregister_kprobes(kps, num);
	free(kps);
}

UKP_API void unregister_jprobe(struct jprobe *jp)
{
	unregister_jprobes(&jp, 1);
}

UKP_API int enable_jprobe(struct jprobe *jp)
{
	return jp ? enable_kprobe(&jp->kp) : -EINVAL;
}

UKP_API int disable_jprobe(struct jprobe *jp)
{
	return jp ? disable_kprobe(&jp->kp) : -EINVAL;
}
