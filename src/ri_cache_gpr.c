// SPDX-License-Identifier: MIT
/*
 * ri_cache_gpr.c - per-thread caches of free kretprobe instances (see
 * ri_cache.h for the protocol).
 *
 * Built with -mgeneral-regs-only: it runs on the GPR-only kretprobe paths.
 */
#include <linux/membarrier.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "kretprobes.h"
#include "ri_cache.h"
#include "thread_ext.h"

#define barrier() __asm__ volatile("" ::: "memory")

atomic_bool ukp_ri_on;
/* One thief at a time (a hit that found its pool empty, or the API). */
static atomic_int ukp_ri_thief;

void ukp_ri_cache_enable(void)
{
	atomic_store(&ukp_ri_on, true);
}

void ukp_ri_cache_after_fork(void)
{
	unsigned int n = ukp_ext_count();

	atomic_store(&ukp_ri_thief, 0);
	for (unsigned int i = 0; i < n; i++) {
		struct ukp_thread_ext *ext = ukp_ext_block(i);

		if (ext)
			ext->ri.steal = 0;
	}
}

/*
 * Enter this thread's cache.  False when it must not: a thief is in, or
 * this is a signal handler's hit that interrupted the thread in its cache
 * (the slots would change under the interrupted code).
 */
static bool ukp_ri_enter(struct ukp_ri_cache *c)
{
	if (!atomic_load_explicit(&ukp_ri_on, memory_order_relaxed) || c->busy)
		return false;
	c->busy = 1;
	barrier();
	/* A thief's mark is seen here, or our busy is seen by the thief
	 * after its membarrier(): never neither. */
	if (c->steal) {
		barrier();
		c->busy = 0;
		return false;
	}
	return true;
}

static void ukp_ri_leave(struct ukp_ri_cache *c)
{
	barrier();
	c->busy = 0;
}

/* In the cache: give back what belongs to unregistered kretprobes (left
 * here when ukp_ri_drain_dead() gave up waiting for this thread). */
static void ukp_ri_drop_dead(struct ukp_ri_cache *c)
{
	for (unsigned int i = 0; i < UKP_RI_CACHE; i++) {
		struct kretprobe_instance *r = c->slot[i];
		struct ukp_rp_pool *pool = r ? r->ukp_pool : NULL;

		if (pool && atomic_load_explicit(&pool->dead, memory_order_acquire)) {
			c->slot[i] = NULL;
			ukp_pool_put(r);
		}
	}
}
NOKPROBE_SYMBOL(ukp_ri_drop_dead);

/* Take an instance of @pool out of cache @c (its owner's or a thief's
 * turn), or NULL. */
static struct kretprobe_instance *ukp_ri_take(struct ukp_ri_cache *c, struct ukp_rp_pool *pool)
{
	for (unsigned int i = 0; i < UKP_RI_CACHE; i++) {
		struct kretprobe_instance *r = c->slot[i];

		if (r && r->ukp_pool == pool) {
			c->slot[i] = NULL;
			return r;
		}
	}
	return NULL;
}
NOKPROBE_SYMBOL(ukp_ri_take);

static struct kretprobe_instance *ukp_ri_steal(struct ukp_ri_cache *self,
					       struct ukp_rp_pool *pool);

struct kretprobe_instance *ukp_ri_get_slow(struct ukp_ri_cache *c, struct ukp_rp_pool *pool)
{
	struct kretprobe_instance *ri = NULL;

	if (ukp_ri_enter(c)) {
		ukp_ri_drop_dead(c);
		ri = ukp_ri_take(c, pool);
		ukp_ri_leave(c);
		if (ri)
			return ri;
	}
	ri = ukp_pool_get(pool);
	if (!ri && atomic_load_explicit(&ukp_ri_on, memory_order_relaxed))
		ri = ukp_ri_steal(c, pool);
	return ri;
}
NOKPROBE_SYMBOL(ukp_ri_get_slow);

void ukp_ri_put_slow(struct ukp_ri_cache *c, struct kretprobe_instance *ri)
{
	if (c && ukp_ri_enter(c)) {
		struct ukp_rp_pool *pool = ri->ukp_pool;

		/* Not for a dead pool: it is freed once all are on its list.
		 * Read in the busy section: ukp_ri_drain_dead() either sees
		 * us busy and waits (if it gives up, ukp_ri_drop_dead()
		 * here later gives the instance back), or we see the pool
		 * dead. */
		ukp_ri_drop_dead(c);
		if (!atomic_load_explicit(&pool->dead, memory_order_relaxed)) {
			for (unsigned int i = 0; i < UKP_RI_CACHE; i++) {
				if (!c->slot[i]) {
					c->slot[i] = ri;
					ukp_ri_leave(c);
					return;
				}
			}
		}
		ukp_ri_leave(c);
	}
	ukp_pool_put(ri);
}
NOKPROBE_SYMBOL(ukp_ri_put_slow);

/* How long an API call waits for one owner to leave its cache: far
 * longer than the few instructions it spends there, unless a signal
 * handler of the program's interrupted it there and blocks (maybe on a
 * lock the caller holds).  Then the instances it keeps are left to it:
 * they go back the next time it passes a slow path of its cache, or when
 * it exits. */
#define UKP_RI_WAIT_SPINS	2000	/* of sched_yield() */

/*
 * Mark every other cache, fence, and call @fn on each whose owner is not
 * in it.  @wait: wait (a while) for busy owners (API calls), else skip
 * them (a hit).  Returns false if the fence failed (nothing was done).
 */
static bool ukp_ri_raid(struct ukp_ri_cache *self, bool wait,
			bool (*fn)(struct ukp_ri_cache *c, void *arg), void *arg)
{
	unsigned int n = ukp_ext_count();
	bool ok, found = false;

	for (unsigned int i = 0; i < n; i++) {
		struct ukp_thread_ext *ext = ukp_ext_block(i);

		if (ext && &ext->ri != self)
			ext->ri.steal = 1;
	}
	ok = !syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
	for (unsigned int i = 0; i < n; i++) {
		struct ukp_thread_ext *ext = ukp_ext_block(i);

		if (!ext || &ext->ri == self)
			continue;
		for (unsigned int spins = 0; ok && !found; spins++) {
			if (!ext->ri.busy) {
				barrier();
				/* A hit wants one instance; the API all. */
				found = fn(&ext->ri, arg) && !wait;
				break;
			}
			if (!wait || spins == UKP_RI_WAIT_SPINS)
				break;
			sched_yield();
		}
		barrier();
		ext->ri.steal = 0;
	}
	return ok;
}

struct ukp_ri_wanted {
	struct ukp_rp_pool *pool;
	struct kretprobe_instance *ri;
};

static bool ukp_ri_take_one(struct ukp_ri_cache *c, void *arg)
{
	struct ukp_ri_wanted *w = arg;

	w->ri = ukp_ri_take(c, w->pool);
	return w->ri != NULL;
}

/* @pool's list is empty: take one of its instances from another thread's
 * cache.  A system call, but only when the pool is exhausted. */
static struct kretprobe_instance *ukp_ri_steal(struct ukp_ri_cache *self,
					       struct ukp_rp_pool *pool)
{
	struct ukp_ri_wanted w = { pool, NULL };
	int zero = 0;

	if (!atomic_compare_exchange_strong(&ukp_ri_thief, &zero, 1))
		return NULL;	/* another thief: count it missed */
	ukp_ri_raid(self, false, ukp_ri_take_one, &w);
	atomic_store(&ukp_ri_thief, 0);
	return w.ri;
}
NOKPROBE_SYMBOL(ukp_ri_steal);

static bool ukp_ri_give_back_dead(struct ukp_ri_cache *c, void *arg)
{
	(void)arg;
	ukp_ri_drop_dead(c);
	return true;
}

void ukp_ri_drain_dead(void)
{
	int zero = 0;

	if (!atomic_load(&ukp_ri_on))
		return;
	while (!atomic_compare_exchange_weak(&ukp_ri_thief, &zero, 1)) {
		zero = 0;
		sched_yield();
	}
	ukp_ri_raid(NULL, true, ukp_ri_give_back_dead, NULL);
	atomic_store(&ukp_ri_thief, 0);
}

void ukp_ri_flush(struct ukp_ri_cache *c)
{
	if (!atomic_load(&ukp_ri_on))
		return;		/* nothing was ever cached */
	/* A thief may be in: wait until it is gone, holding it off. */
	while (!ukp_ri_enter(c))
		sched_yield();
	for (unsigned int i = 0; i < UKP_RI_CACHE; i++) {
		struct kretprobe_instance *r = c->slot[i];

		c->slot[i] = NULL;
		if (r)
			ukp_pool_put(r);
	}
	ukp_ri_leave(c);
}
