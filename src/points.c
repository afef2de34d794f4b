// SPDX-License-Identifier: MIT
/*
 * points.c - the table of probed addresses (the kernel's kprobe_table).
 *
 * Open addressing with linear probing.  The trap path looks up with plain
 * acquire loads and no lock; writers (ukp_kprobe_mutex held) insert by
 * publishing a pointer into an empty bucket and remove by writing a
 * tombstone, so a reader sees either the old or the new state of a bucket.
 * Growing copies into a new table and publishes it; the old one is freed
 * after a grace period.
 */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

struct ukp_ptable {
	size_t mask;		/* buckets - 1 */
	size_t used;		/* live + tombstones */
	size_t live;
	struct ukp_ptable *retired_next;
	struct ukp_point *_Atomic bucket[];
};

/* A removed entry: lookups continue past it, inserts may reuse it. */
static struct ukp_point ukp_tombstone;
#define TOMBSTONE (&ukp_tombstone)

static struct ukp_ptable *_Atomic ukp_ptable;
/* Tables replaced by a bigger one, freed at the next ukp_points_reclaim(). */
static struct ukp_ptable *ukp_retired;

static inline size_t ukp_hash(uintptr_t addr)
{
	uint64_t h = (uint64_t)addr * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 17);
}

struct ukp_point *ukp_point_lookup(uintptr_t addr)
{
	struct ukp_ptable *t;
	size_t i;

	ukp_assert_walk_allowed();
	t = atomic_load_explicit(&ukp_ptable, memory_order_acquire);
	if (!t)
		return NULL;
	for (i = ukp_hash(addr) & t->mask;; i = (i + 1) & t->mask) {
		struct ukp_point *pt = atomic_load_explicit(&t->bucket[i],
							    memory_order_acquire);

		if (!pt)
			return NULL;
		if (pt != TOMBSTONE && pt->addr == addr)
			return pt;
	}
}
NOKPROBE_SYMBOL(ukp_point_lookup);

static struct ukp_ptable *ukp_ptable_new(size_t buckets)
{
	struct ukp_ptable *t = calloc(1, sizeof(*t) + buckets * sizeof(t->bucket[0]));

	if (t)
		t->mask = buckets - 1;
	return t;
}

static void ukp_ptable_put(struct ukp_ptable *t, struct ukp_point *pt)
{
	size_t i;

	for (i = ukp_hash(pt->addr) & t->mask;; i = (i + 1) & t->mask) {
		struct ukp_point *cur = atomic_load_explicit(&t->bucket[i],
							     memory_order_relaxed);

		if (!cur || cur == TOMBSTONE) {
			if (!cur)
				t->used++;
			t->live++;
			atomic_store_explicit(&t->bucket[i], pt, memory_order_release);
			return;
		}
	}
}

/* Grow (or clean tombstones) so that one more insert keeps load <= 1/2. */
static int ukp_ptable_reserve(void)
{
	struct ukp_ptable *t = atomic_load(&ukp_ptable), *n;
	size_t buckets;

	if (t && (t->used + 1) * 2 <= t->mask + 1)
		return 0;
	buckets = t ? t->mask + 1 : 1024;
	while ((t ? t->live + 1 : 1) * 4 > buckets)
		buckets *= 2;
	n = ukp_ptable_new(buckets);
	if (!n)
		return -ENOMEM;
	if (t) {
		for (size_t i = 0; i <= t->mask; i++) {
			struct ukp_point *pt = atomic_load(&t->bucket[i]);

			if (pt && pt != TOMBSTONE)
				ukp_ptable_put(n, pt);
		}
		t->retired_next = ukp_retired;
		ukp_retired = t;
	}
	atomic_store_explicit(&ukp_ptable, n, memory_order_release);
	return 0;
}

/** ukp_point_insert() - publish @pt.  Caller holds ukp_kprobe_mutex. */
int ukp_point_insert(struct ukp_point *pt)
{
	int err;

	ukp_assert_mutex_held();
	err = ukp_ptable_reserve();

	if (err)
		return err;
	ukp_ptable_put(atomic_load(&ukp_ptable), pt);
	return 0;
}

/**
 * ukp_point_remove() - unpublish @pt.  Caller holds ukp_kprobe_mutex and
 * frees @pt only after ukp_synchronize().
 */
void ukp_point_remove(struct ukp_point *pt)
{
	struct ukp_ptable *t = atomic_load(&ukp_ptable);
	size_t i;

	ukp_assert_mutex_held();
	if (!t)
		return;
	for (i = ukp_hash(pt->addr) & t->mask;; i = (i + 1) & t->mask) {
		struct ukp_point *cur = atomic_load(&t->bucket[i]);

		if (!cur)
			return;
		if (cur == pt) {
			atomic_store_explicit(&t->bucket[i], TOMBSTONE,
					      memory_order_release);
			t->live--;
			return;
		}
	}
}

/** ukp_point_foreach() - call @fn on every point.  Mutex held. */
void ukp_point_foreach(void (*fn)(struct ukp_point *, void *), void *arg)
{
	struct ukp_ptable *t = atomic_load(&ukp_ptable);

	ukp_assert_mutex_held();
	if (!t)
		return;
	for (size_t i = 0; i <= t->mask; i++) {
		struct ukp_point *pt = atomic_load(&t->bucket[i]);

		if (pt && pt != TOMBSTONE)
			fn(pt, arg);
	}
}

/** ukp_points_reclaim() - free retired tables.  Call after ukp_synchronize(). */
void ukp_points_reclaim(void)
{
	while (ukp_retired) {
		struct ukp_ptable *t = ukp_retired;

		ukp_retired = t->retired_next;
		free(t);
	}
}
