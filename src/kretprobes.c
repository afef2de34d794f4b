// SPDX-License-Identifier: MIT
/*
 * kretprobes.c - return probes.
 *
 * A kretprobe is a kprobe at the function's entry whose pre handler takes an
 * instance from the kretprobe's pool (maxactive of them, allocated at
 * registration), runs the entry handler, and replaces the return address
 * with the thread's return stub for that depth (kretprobe_unwind.c).  The
 * function returns into the stub and the trampoline, plain code (no trap),
 * which runs the return handler and goes on to the real return address.
 *
 * Each thread keeps its calls in flight on a stack of its own (its block,
 * thread_ext.h), each entry remembering the frame (the stack slot that held
 * the return address on x86) and having a stub of its own:
 *  - a return comes through its entry's stub and is checked against its
 *    frame; entries above it were skipped by longjmp and are reclaimed;
 *  - a new call on the same stack reclaims entries at or below its own
 *    frame (frames that cannot be live any more), so a longjmp out of a
 *    deep recursion gives every instance back at the next call;
 *  - an exception or a forced unwind gives back the instances of the
 *    frames it passes (the stubs' personality routine).
 * An instance therefore never matches the wrong return, and none leaks.
 * The stack is changed only while the thread counts as running a handler,
 * so a signal handler's probed calls meanwhile are missed, not interleaved.
 *
 * Unregistering while calls are in flight: those calls still return through
 * the trampoline to the right place; their instances go back to a pool that
 * is freed when the last one returns (never on the trap path: the pool is
 * queued and freed by the next API call).
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"
#include "arch.h"
#include "symbols.h"
#include "trap.h"
#include "kretprobes.h"
#include "thread_ext.h"
#include "optprobes.h"
#include "ri_cache.h"



/* Pools whose last instance came back after unregistration, freed by the
 * next API call (the trampoline may run in a signal handler: no free()). */
struct ukp_rp_pool *_Atomic ukp_dead_pools;


/* Held while dead pools are freed, and by unregister_kretprobes() from
 * marking its pools dead until it is done with them: a return that gives
 * the last instance back queues the pool meanwhile, and another API call
 * must not free it under us. */
static pthread_mutex_t ukp_pool_free_mutex = PTHREAD_MUTEX_INITIALIZER;

/* In a fork()ed child: the thread that held it is not there. */
void ukp_kretprobes_after_fork(void)
{
	pthread_mutex_init(&ukp_pool_free_mutex, NULL);
	ukp_ri_cache_after_fork();
}

static void ukp_free_dead_pools(void)
{
	struct ukp_rp_pool *p;

	pthread_mutex_lock(&ukp_pool_free_mutex);
	p = atomic_exchange(&ukp_dead_pools, NULL);

	while (p) {
		struct ukp_rp_pool *next = p->dead_next;

		free(p->insts);
		free(p);
		p = next;
	}
	pthread_mutex_unlock(&ukp_pool_free_mutex);
}

static int ukp_default_maxactive(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (cpus < 1)
		cpus = 1;
	return 2 * cpus > 10 ? (int)(2 * cpus) : 10;
}

static int ukp_kretprobe_prepare(struct kretprobe *rp)
{
	struct ukp_rp_pool *pool;
	unsigned int n;

	if (!rp)
		return -EINVAL;
	/* Registered already: touch nothing (its pool is in use). */
	if (ukp_kprobe_registered(&rp->kp))
		return -EINVAL;
	if (rp->maxactive <= 0)
		rp->maxactive = ukp_default_maxactive();
	n = (unsigned int)rp->maxactive;
	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return -ENOMEM;
	pool->n = n;
	/* Each instance's data[] as aligned as malloc()'s memory. */
	pool->inst_size = (sizeof(struct kretprobe_instance) + rp->data_size +
			   _Alignof(max_align_t) - 1) & ~(_Alignof(max_align_t) - 1);
	if (posix_memalign((void **)&pool->insts, _Alignof(max_align_t), pool->inst_size * n)) {
		free(pool);
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < n; i++) {
		struct kretprobe_instance *ri = ukp_inst(pool, i);

		ri->ukp_pool = pool;
		ri->rp = rp;
		ri->ukp_link = i + 1 < n ? i + 2 : 0;	/* next free, as index + 1 */
	}
	atomic_store(&pool->free_head, n ? 1 : 0);
	atomic_store(&pool->rp, rp);
	rp->ukp_pool = pool;
	rp->nmissed = 0;
	rp->kp.pre_handler = ukp_kretprobe_pre_handler;
	rp->kp.post_handler = NULL;
	return 0;
}

static void ukp_kretprobe_unprepare(struct kretprobe *rp)
{
	struct ukp_rp_pool *pool = rp->ukp_pool;

	if (!pool)
		return;
	free(pool->insts);
	free(pool);
	rp->ukp_pool = NULL;
}

UKP_API int register_kretprobes(struct kretprobe **rps, int num)
{
	struct kprobe **kps;
	int err = 0, i;

	if (!rps || num <= 0)
		return -EINVAL;
	/* Under a CET shadow stack the replaced return address would fault
	 * at the return. */
	if (!arch_kretprobe_supported())
		return -EOPNOTSUPP;
	ukp_free_dead_pools();
	ukp_ext_reserve();
	/* The return path's grace period; its fence also lets threads keep
	 * free instances (ri_cache.h). */
	if (!ukp_qs_init())
		ukp_ri_cache_enable();
	kps = calloc((size_t)num, sizeof(*kps));
	if (!kps)
		return -ENOMEM;
	for (i = 0; i < num && !err; i++) {
		err = rps[i] ? ukp_kretprobe_prepare(rps[i]) : -EINVAL;
		if (!err)
			kps[i] = &rps[i]->kp;
	}
	if (!err)
		err = ukp_register_kprobes_kind(kps, num, UKP_KIND_KRETPROBE);
	if (err) {
		/* Only those this call prepared (kps[j] set). */
		for (int j = 0; j < num; j++)
			if (kps[j])
				ukp_kretprobe_unprepare(rps[j]);
	}
	free(kps);
	return err;
}

UKP_API int register_kretprobe(struct kretprobe *rp)
{
	return register_kretprobes(&rp, 1);
}

UKP_API void unregister_kretprobes(struct kretprobe **rps, int num)
{
	struct kprobe **kps;

	if (!rps || num <= 0)
		return;
	kps = calloc((size_t)num, sizeof(*kps));
	for (int i = 0; i < num; i++) {
		if (!rps[i])
			continue;
		if (kps)
			kps[i] = &rps[i]->kp;
		else
			unregister_kprobe(&rps[i]->kp);
	}
	/* No new entries after this; then no return handler either. */
	if (kps)
		unregister_kprobes(kps, num);
	/* In-flight instances must not reach the caller's struct: clear them,
	 * then wait for return handlers that read them before. */
	for (int i = 0; i < num; i++) {
		struct ukp_rp_pool *pool = rps[i] ? rps[i]->ukp_pool : NULL;

		if (!pool)
			continue;
		atomic_store(&pool->rp, NULL);
		for (unsigned int k = 0; k < pool->n; k++)
			__atomic_store_n(&ukp_inst(pool, k)->rp, NULL, __ATOMIC_RELEASE);
	}
	ukp_qs_synchronize();	/* return handlers; includes ukp_synchronize() */
	pthread_mutex_lock(&ukp_pool_free_mutex);
	for (int i = 0; i < num; i++) {
		struct ukp_rp_pool *pool = rps[i] ? rps[i]->ukp_pool : NULL;

		if (pool)
			atomic_store(&pool->dead, true);
	}
	/* Free instances that threads keep go back to their dead pools. */
	ukp_ri_drain_dead();
	for (int i = 0; i < num; i++) {
		struct ukp_rp_pool *pool = rps[i] ? rps[i]->ukp_pool : NULL;

		if (!pool)
			continue;
		rps[i]->ukp_pool = NULL;
		ukp_pool_reap_if_done(pool);
	}
	pthread_mutex_unlock(&ukp_pool_free_mutex);
	free(kps);
	ukp_free_dead_pools();
}

UKP_API void unregister_kretprobe(struct kretprobe *rp)
{
	unregister_kretprobes(&rp, 1);
}

UKP_API int enable_kretprobe(struct kretprobe *rp)
{
	return rp ? enable_kprobe(&rp->kp) : -EINVAL;
}

UKP_API int disable_kretprobe(struct kretprobe *rp)
{
	return rp ? disable_kprobe(&rp->kp) : -EINVAL;
}
