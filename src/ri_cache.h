/* SPDX-License-Identifier: MIT */
/*
 * ri_cache.h - a few free kretprobe instances kept by each thread, so that
 * a return probe's hit takes and gives back an instance with plain loads and
 * stores instead of two compare-and-swaps on its pool's shared free list
 * (the kernel keeps them per CPU for the same reason: objpool).
 *
 * An instance in a thread's cache is still free for every thread: one that
 * finds its pool's list empty takes one from another thread's cache (as
 * objpool_pop() looks at other CPUs), so maxactive means what it says.
 * The owner works on its cache without atomics, marked busy; a thief marks
 * the caches it wants, then membarrier() (the asymmetric fence the
 * optimizer's grace period already uses) makes sure every owner either is
 * seen busy (the thief leaves that cache alone) or sees the mark (the owner
 * keeps off its cache and uses the pool's list).
 */
#ifndef UKP_RI_CACHE_H
#define UKP_RI_CACHE_H

#include <stdatomic.h>
#include <stdbool.h>

#include <ukprobes.h>

#include "internal.h"
#include "kretprobes.h"

#define UKP_RI_CACHE	4	/* instances a thread keeps */

struct ukp_thread_ext;

struct ukp_ri_cache {
	volatile int busy;	/* the owner is in its cache (owner only) */
	volatile int steal;	/* keep off: a thief is in (thieves only) */
	struct kretprobe_instance *slot[UKP_RI_CACHE];
};

/* This thread's (@c) cache, else @pool's free list, else another
 * thread's cache.  NULL: none free (a miss).  Trap-safe. */
static inline struct kretprobe_instance *ukp_ri_get(struct ukp_ri_cache *c,
						    struct ukp_rp_pool *pool);
/* Give @ri back: to the cache @c if there is room (@c may be NULL), else
 * to its pool.  Trap-safe. */
static inline void ukp_ri_put(struct ukp_ri_cache *c, struct kretprobe_instance *ri);
/* The slow paths of ukp_ri_get() and ukp_ri_put(). */
struct kretprobe_instance *ukp_ri_get_slow(struct ukp_ri_cache *c, struct ukp_rp_pool *pool);
void ukp_ri_put_slow(struct ukp_ri_cache *c, struct kretprobe_instance *ri);

/* The thread of the cache @c exits: its instances go back to their pools. */
void ukp_ri_flush(struct ukp_ri_cache *c);
/* Pools were marked dead: every cached instance of a dead pool goes back
 * to it, so that the pool can be freed.  API calls only: waits for a
 * thread that is in its cache, up to a bound (ri_cache_gpr.c). */
void ukp_ri_drain_dead(void);
/* The asymmetric fence works (MEMBARRIER_CMD_PRIVATE_EXPEDITED is
 * registered): caches may be used from now on. */
void ukp_ri_cache_enable(void);
/* In a fork()ed child: no thief can be running. */
void ukp_ri_cache_after_fork(void);

/*
 * The fast paths, inline on the return probe's hit path: the cache's first
 * slot, which in a thread that calls one probed function at a time is
 * where the instance went back at the last return.  The slow paths do the
 * same with every slot, then the pool.
 */
extern atomic_bool ukp_ri_on;

static inline struct kretprobe_instance *ukp_ri_get(struct ukp_ri_cache *c,
						    struct ukp_rp_pool *pool)
{
	struct kretprobe_instance *r = NULL;

	if (likely(!c->busy)) {
		c->busy = 1;
		__asm__ volatile("" ::: "memory");
		/* A thief's mark is seen here, or our busy by the thief. */
		if (likely(!c->steal)) {
			r = c->slot[0];
			if (likely(r && r->ukp_pool == pool))
				c->slot[0] = NULL;
			else
				r = NULL;
		}
		__asm__ volatile("" ::: "memory");
		c->busy = 0;
		if (likely(r))
			return r;
	}
	return ukp_ri_get_slow(c, pool);
}

static inline void ukp_ri_put(struct ukp_ri_cache *c, struct kretprobe_instance *ri)
{
	if (likely(c && !c->busy &&
		   atomic_load_explicit(&ukp_ri_on, memory_order_relaxed))) {
		struct ukp_rp_pool *pool = ri->ukp_pool;
		bool done = false;

		c->busy = 1;
		__asm__ volatile("" ::: "memory");
		/* The pool's death is read in the busy section (see
		 * ukp_ri_drain_dead()). */
		if (likely(!c->steal && !c->slot[0] &&
			   !atomic_load_explicit(&pool->dead, memory_order_relaxed))) {
			c->slot[0] = ri;
			done = true;
		}
		__asm__ volatile("" ::: "memory");
		c->busy = 0;
		if (likely(done))
			return;
	}
	ukp_ri_put_slow(c, ri);
}

#endif
