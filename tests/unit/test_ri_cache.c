// SPDX-License-Identifier: MIT
/*
 * test_ri_cache.c - the per-thread caches of free kretprobe instances
 * (src/ri_cache_gpr.c), from inside: unregistering a kretprobe while a
 * thread is in its cache (as if a signal handler of the program's had
 * stopped it there and blocked) must return, not wait for ever; what that
 * thread keeps goes back to the dead pool the next time it passes a slow
 * path of its cache, and the pool can then be freed.
 */
#include "../support/ukp_test.h"
#include <pthread.h>
#include <stdatomic.h>

#include <ukprobes.h>
#include "kretprobes.h"
#include "thread_ext.h"

#define NOINL __attribute__((noinline, noclone, used))

NOINL long rc_f(long x)
{
	__asm__ volatile("");
	return x + 1;
}

NOINL long rc_g(long x)
{
	__asm__ volatile("");
	return x * 2;
}

static long (*volatile f)(long) = rc_f;
static long (*volatile g)(long) = rc_g;
static atomic_long rets;

static int count_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	atomic_fetch_add(&rets, 1);
	return 0;
}

static atomic_int step;
static struct ukp_thread_ext *keeper_ext;

static void wait_step(int s)
{
	while (atomic_load(&step) < s)
		sched_yield();
}

static void *keeper(void *arg)
{
	(void)arg;
	/* One call: its instance goes back to this thread's cache. */
	if (f(1) != 2)
		return (void *)1;
	keeper_ext = ukp_ext_peek();
	/* As if interrupted inside its cache by a handler that blocks. */
	keeper_ext->ri.busy = 1;
	atomic_store(&step, 1);
	wait_step(2);
	keeper_ext->ri.busy = 0;
	/* Another kretprobe's call passes the cache's slow path: the dead
	 * pool's instance is given back there. */
	if (g(3) != 6)
		return (void *)1;
	atomic_store(&step, 3);
	wait_step(4);
	return NULL;
}

Test(ri_cache, unregister_does_not_wait_for_ever_for_a_thread_in_its_cache, .timeout = 60)
{
	struct kretprobe rf = { .kp.addr = (kprobe_opcode_t *)rc_f, .handler = count_ret,
				.maxactive = 2 };
	struct kretprobe rg = { .kp.addr = (kprobe_opcode_t *)rc_g, .handler = count_ret,
				.maxactive = 2 };
	struct ukp_rp_pool *pool;
	unsigned int on_list = 0;
	void *ret;
	pthread_t t;

	cr_assert_eq(register_kretprobe(&rf), 0);
	cr_assert_eq(register_kretprobe(&rg), 0);
	pool = rf.ukp_pool;
	cr_assert_eq(pthread_create(&t, NULL, keeper, NULL), 0);
	wait_step(1);
	cr_assert_not_null(keeper_ext);
	cr_assert_not_null(keeper_ext->ri.slot[0], "the keeper's instance is not in its cache");
	/* Returns although the keeper is "in" its cache. */
	unregister_kretprobe(&rf);
	cr_expect_eq(keeper_ext->ri.slot[0] ? keeper_ext->ri.slot[0]->ukp_pool : NULL,
		     (void *)pool, "the instance left with the keeper moved");
	cr_expect_eq(atomic_load(&pool->reaped), 0, "the pool was freed with an instance out");
	atomic_store(&step, 2);
	wait_step(3);
	/* The keeper gave it back: every instance is on the dead pool's list,
	 * which is queued for freeing by the next API call. */
	for (uint32_t idx = (uint32_t)atomic_load(&pool->free_head); idx && on_list <= pool->n;
	     idx = (uint32_t)ukp_inst(pool, idx - 1)->ukp_link)
		on_list++;
	cr_expect_eq(on_list, pool->n, "%u of %u instances back", on_list, pool->n);
	cr_expect_eq(atomic_load(&pool->reaped), 1, "the dead pool was not queued for freeing");
	atomic_store(&step, 4);
	pthread_join(t, &ret);
	cr_expect_null(ret);
	unregister_kretprobe(&rg);	/* frees the queued pool */
	cr_expect_eq(atomic_load(&rets), 2);
}
