// SPDX-License-Identifier: MIT
/*
 * kretprobe_return_gpr.c - the kretprobe hit paths: the entry probe's pre
 * handler, the instance pool, and what the return trampoline calls.
 *
 * Built with -mgeneral-regs-only and without sanitizers: a kretprobe whose
 * handlers are KPROBE_FLAG_GPR_ONLY gets an optimized entry and a return
 * that save no vector state (arguments and return values sit in %xmm0-7),
 * so nothing on these paths may touch a vector register.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"
#include "arch.h"
#include "kretprobes.h"
#include "thread_ext.h"
#include "optprobes.h"
#include "trap.h"
#include "ri_cache.h"

extern struct ukp_rp_pool *_Atomic ukp_dead_pools;

struct kretprobe_instance *ukp_inst(struct ukp_rp_pool *pool, unsigned int i)
{
	return (struct kretprobe_instance *)(pool->insts + (size_t)i * pool->inst_size);
}
NOKPROBE_SYMBOL(ukp_inst);

/* Lock-free free list (Treiber stack with an ABA tag). */
struct kretprobe_instance *ukp_pool_get(struct ukp_rp_pool *pool)
{
	uint64_t h = atomic_load_explicit(&pool->free_head, memory_order_acquire), nh;
	struct kretprobe_instance *ri;

	do {
		uint32_t idx = (uint32_t)h;

		if (!idx)
			return NULL;
		ri = ukp_inst(pool, idx - 1);
		nh = (__atomic_load_n(&ri->ukp_link, __ATOMIC_RELAXED) & 0xffffffffu) |
		     (((h >> 32) + 1) << 32);
	} while (!atomic_compare_exchange_weak_explicit(&pool->free_head, &h, nh,
							memory_order_acq_rel,
							memory_order_acquire));
	return ri;
}
NOKPROBE_SYMBOL(ukp_pool_get);

/*
 * ukp_pool_reap_if_done() - a pool whose kretprobe was unregistered is freed
 * once every instance is back: then its free list holds all of them.  No
 * instance is taken from it any more, so a count of the list taken now
 * can only be too low (a put racing with us), never too high, and that
 * put checks again.  The pool goes to a list the next API call frees
 * (this may run in a signal handler: no free()).
 */
void ukp_pool_reap_if_done(struct ukp_rp_pool *pool)
{
	uint32_t idx = (uint32_t)atomic_load_explicit(&pool->free_head, memory_order_acquire);
	unsigned int n = 0;
	int zero = 0;

	while (idx && n <= pool->n) {
		n++;
		idx = (uint32_t)__atomic_load_n(&ukp_inst(pool, idx - 1)->ukp_link, __ATOMIC_ACQUIRE);
	}
	if (n != pool->n || !atomic_compare_exchange_strong(&pool->reaped, &zero, 1))
		return;
	pool->dead_next = atomic_load(&ukp_dead_pools);
	while (!atomic_compare_exchange_weak(&ukp_dead_pools, &pool->dead_next, pool))
		;
}
NOKPROBE_SYMBOL(ukp_pool_reap_if_done);

void ukp_pool_put(struct kretprobe_instance *ri)
{
	struct ukp_rp_pool *pool = ri->ukp_pool;
	uint32_t idx = (uint32_t)(((char *)ri - pool->insts) / pool->inst_size) + 1;
	uint64_t h = atomic_load_explicit(&pool->free_head, memory_order_acquire), nh;

	do {
		__atomic_store_n(&ri->ukp_link, h & 0xffffffffu, __ATOMIC_RELAXED);
		nh = idx | (((h >> 32) + 1) << 32);
	} while (!atomic_compare_exchange_weak_explicit(&pool->free_head, &h, nh,
							memory_order_acq_rel,
							memory_order_acquire));
	if (unlikely(atomic_load_explicit(&pool->dead, memory_order_acquire)))
		ukp_pool_reap_if_done(pool);
}
NOKPROBE_SYMBOL(ukp_pool_put);

/* Is @sp on the signal stack the trap was delivered on? */
static bool ukp_on_altstack(const struct ukp_kcb *kcb, uintptr_t sp)
{
	const ucontext_t *uc = kcb->uc;
	uintptr_t base;

	/* An optimized entry has no signal frame: the stack the thread set
	 * through our sigaltstack() (signal_mask.c) tells instead. */
	if (!uc)
		return kcb->alt_size && sp - kcb->alt_base < kcb->alt_size;
	if (uc->uc_stack.ss_flags & SS_DISABLE)
		return false;
	base = (uintptr_t)uc->uc_stack.ss_sp;
	return sp - base < uc->uc_stack.ss_size;
}
NOKPROBE_SYMBOL(ukp_on_altstack);

/*
 * The entry probe's pre handler (the kernel's pre_handler_kretprobe).
 * Runs as a handler (kcb->depth raised): nothing else of this thread
 * touches its calls in flight meanwhile (kretprobes.h).
 */
int ukp_kretprobe_pre_handler(struct kprobe *p, struct pt_regs *regs)
{
	struct kretprobe *rp = container_of(p, struct kretprobe, kp);
	struct ukp_rp_pool *pool = rp->ukp_pool;
	struct ukp_kcb *kcb = ukp_this_kcb();
	struct ukp_thread_ext *ext = ukp_ext_get();
	struct ukp_ret_entry *top, *e;
	struct ukp_rstack *rs;
	struct kretprobe_instance *ri;
	uintptr_t frame = arch_kretprobe_frame(regs);
	unsigned long ret;
	unsigned int d;
	bool alt = ukp_on_altstack(kcb, frame), again;
	bool gpr = p->flags & KPROBE_FLAG_GPR_ONLY, primed = kcb->ret_tramp != 0;
	/* From a trap, the return address is read and written with guarded
	 * accesses; from an optimized entry the thread runs on that stack. */
	bool guarded = kcb->uc != NULL;

	if (!ext || arch_kretprobe_get_ret(regs, frame, &ret, guarded)) {
		__atomic_fetch_add(&rp->nmissed, 1, __ATOMIC_RELAXED);
		return 0;
	}
	rs = &ext->rstack;
	d = rs->depth;
	/* Another kretprobe on this call was first: its stub is in place. */
	top = d ? &rs->e[d - 1] : NULL;
	again = top && top->frame == frame && top->altstack == alt &&
		ret == arch_ret_stub_return(rs->stubs, d - 1);
	/* Frames at or below this call's frame on the same stack are dead
	 * (left by longjmp, or unwound): give their instances back. */
	while (!again && d) {
		e = &rs->e[d - 1];
		if (e->altstack != alt || e->frame > frame)
			break;
		rs->depth = --d;
		if (e->ri)
			ukp_ri_put(&ext->ri, e->ri);
	}
	if (d == UKP_RET_STACK) {
		__atomic_fetch_add(&rp->nmissed, 1, __ATOMIC_RELAXED);
		return 0;
	}
	ri = ukp_ri_get(&ext->ri, pool);
	if (!ri) {
		__atomic_fetch_add(&rp->nmissed, 1, __ATOMIC_RELAXED);
		return 0;
	}
	/* The trampoline: one that keeps the vector registers unless every
	 * return handler on the call uses general registers only; one that
	 * returns by `ret` when the optimized entry primes the return. */
	if (again) {
		ret = top->ret;
		gpr = gpr && arch_kretprobe_trampoline_is_gpr(top->tramp);
	}
	__atomic_store_n(&ri->rp, rp, __ATOMIC_RELAXED);
	ri->ret_addr = (kprobe_opcode_t *)ret;
	ri->fp = (void *)frame;
	if (rp->entry_handler && rp->entry_handler(ri, regs)) {
		ukp_ri_put(&ext->ri, ri);
		return 0;
	}
	e = &rs->e[d];
	e->ret = ret;
	e->tramp = arch_kretprobe_trampoline(gpr, primed);
	e->ri = ri;
	e->frame = frame;
	e->altstack = alt;
	__asm__ volatile("" ::: "memory");
	rs->depth = d + 1;
	if (arch_kretprobe_set_ret(regs, frame, arch_ret_stub_return(rs->stubs, d), guarded)) {
		rs->depth = d;
		ukp_ri_put(&ext->ri, ri);
		return 0;
	}
	if (primed)
		kcb->prime_to = arch_ret_stub_prime(rs->stubs, d);
	return 0;
}
NOKPROBE_SYMBOL(ukp_kretprobe_pre_handler);

/*
 * Called by the trampoline with the registers at the return (instruction_pointer(): the
 * real return address) and the entry of the stub it came through.  Runs
 * the return handlers of every kretprobe on this call, newest first, and
 * returns the address to go on at: instruction_pointer(regs), the real return address
 * unless a handler changed it.
 */
unsigned long ukp_kretprobe_trampoline_handler(struct pt_regs *regs, struct ukp_ret_entry *e)
{
	uintptr_t frame = arch_kretprobe_return_frame(regs);
	struct ukp_kcb *kcb = ukp_this_kcb();
	struct ukp_thread_ext *ext = ukp_ext_peek();
	struct ukp_rstack *rs = ext ? &ext->rstack : NULL;
	unsigned int idx = 0;
	struct ukp_qs_rec *qs;
	int saved_errno, *ep, busy = kcb->depth;
	bool alt;

	/* From here on this thread's calls in flight are ours: a signal
	 * handler's probed calls meanwhile are missed (kretprobes.h). */
	ukp_handler_enter(kcb);
	if (unlikely(!rs || (uintptr_t)e - (uintptr_t)rs->e >= sizeof(rs->e) ||
		     e >= rs->e + rs->depth || e->frame != frame)) {
		/* Not a call in flight of this thread's (a coroutine that
		 * moved to another thread, an entry reclaimed under it): the
		 * stub knew where it returns to; no handler. */
		ukp_handler_exit(kcb);
		return instruction_pointer(regs);
	}
	/* Handlers may call libc: the program's errno is kept (its address,
	 * per thread, looked up once: errno is a PLT call away). */
	ep = kcb->errno_ptr;
	if (unlikely(!ep))
		ep = kcb->errno_ptr = &errno;
	saved_errno = *ep;
	/* Entries above this one were jumped over by longjmp. */
	while (unlikely(&rs->e[rs->depth - 1] != e)) {
		struct kretprobe_instance *ri = rs->e[--rs->depth].ri;

		if (ri)
			ukp_ri_put(&ext->ri, ri);
	}

	/* The detour path's cheap grace period (per-thread count, no atomics):
	 * unregister_kretprobe() waits for it after clearing ri->rp.  Then
	 * this entry and those below it for the same call (one per kretprobe
	 * on it), newest first. */
	qs = ukp_qs_enter(kcb, &idx);
	alt = e->altstack;
	do {
		struct kretprobe_instance *ri = rs->e[--rs->depth].ri;
		struct kretprobe *rp;

		if (!ri)
			continue;
		rp = get_kretprobe(ri);
		if (rp && rp->handler) {
			if (kcb->internal) {
				/* ukprobes' own thread: no handler. */
			} else if (busy) {
				/* Returning inside another probe's handler. */
				__atomic_fetch_add(&rp->nmissed, 1, __ATOMIC_RELAXED);
			} else {
				rp->handler(ri, regs);
			}
		}
		ukp_ri_put(&ext->ri, ri);
	} while (rs->depth && rs->e[rs->depth - 1].frame == frame &&
		 rs->e[rs->depth - 1].altstack == alt);
	ukp_qs_exit(qs, idx);
	*ep = saved_errno;
	ukp_handler_exit(kcb);
	return instruction_pointer(regs);
}
NOKPROBE_SYMBOL(ukp_kretprobe_trampoline_handler);
