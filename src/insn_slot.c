// SPDX-License-Identifier: MIT
/*
 * insn_slot.c - executable slots for out-of-line copies of probed
 * instructions (the kernel's insn_slot cache).
 *
 * Slots live in pages of our own, mapped read+execute only, placed within
 * rel32 reach of the code they serve (the window the arch asks for) and
 * filled through text_poke.  Each slot remembers which instruction it copies
 * so the trap path can translate an address inside a slot back to the
 * original one (faults, stale single-steps) without a lock.
 *
 * A slot released after it was armed is "dirty": a thread may still be
 * executing in it.  Dirty slots are reused only after ukp_slot_gc() has proved
 * that no thread can be inside (see the comment there).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "internal.h"
#include "arch.h"
#include "memmap.h"
#include "grace.h"

#define SLOT_PAGE_SIZE		UKP_ARCH_PAGE_SIZE
#define SLOTS_PER_PAGE		(SLOT_PAGE_SIZE / UKP_ARCH_SLOT_SIZE)
#define MAX_SLOT_PAGES		65536u
#define GC_DIRTY_THRESHOLD	256u

_Static_assert(SLOTS_PER_PAGE <= 64, "one 64-bit map per page");

struct ukp_slot_page {
	uintptr_t base;
	unsigned long created;		/* ukp_slot_mark() sequence */
	uint64_t used;			/* allocated (live or dirty) */
	uint64_t dirty;			/* released, awaiting proof of quiescence */
	struct ukp_slot_info info[SLOTS_PER_PAGE];
};

/* This protects everything below except what the trap path reads, which is
 * published with release stores: npages, pages[i] and info[]. */
static pthread_mutex_t ukp_slot_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct ukp_slot_page *_Atomic ukp_slot_pages[MAX_SLOT_PAGES];
static atomic_uint ukp_slot_npages;
static unsigned long ukp_slot_seq;
static unsigned int ukp_slot_ndirty;
/* Collect when this many are dirty: after a collection that could not
 * prove them free, not again before as many more (each try waits). */
static unsigned int ukp_slot_gc_at = GC_DIRTY_THRESHOLD;
static unsigned int ukp_slot_hint;	/* where the last allocation was */
static uintptr_t ukp_slot_last_new;	/* the last page mapped */

/*
 * Pages by address: an open-addressing table of page numbers + 1, at most
 * half full (twice MAX_SLOT_PAGES entries), so that finding the page of an
 * address costs a probe or two, not a walk of every page (10,000 detours
 * take hundreds of pages).  Written under ukp_slot_mutex, read lock-free:
 * a page is published in ukp_slot_pages[] before its number goes in here.
 */
#define PAGE_INDEX_BITS		17
#define PAGE_INDEX_SIZE		(1u << PAGE_INDEX_BITS)
#define PAGE_INDEX_REMOVED	UINT32_MAX

_Static_assert(PAGE_INDEX_SIZE >= 2 * MAX_SLOT_PAGES, "index at most half full");

static _Atomic uint32_t ukp_slot_index[PAGE_INDEX_SIZE];

static unsigned int ukp_page_hash(uintptr_t base)
{
	return (unsigned int)(((uint64_t)(base / SLOT_PAGE_SIZE) * 0x9e3779b97f4a7c15ull) >>
			      (64 - PAGE_INDEX_BITS));
}

static struct ukp_slot_page *ukp_slot_page_of(uintptr_t ip)
{
	uintptr_t base = ip & ~(uintptr_t)(SLOT_PAGE_SIZE - 1);

	for (unsigned int i = ukp_page_hash(base);; i = (i + 1) % PAGE_INDEX_SIZE) {
		uint32_t v = atomic_load_explicit(&ukp_slot_index[i], memory_order_acquire);
		struct ukp_slot_page *pg;

		if (!v)
			return NULL;
		if (v == PAGE_INDEX_REMOVED)
			continue;
		pg = atomic_load_explicit(&ukp_slot_pages[v - 1], memory_order_acquire);
		if (pg && pg->base == base)
			return pg;
	}
}
NOKPROBE_SYMBOL(ukp_slot_page_of);

/* Page number @n (ukp_slot_pages[n]) goes in the index.  Mutex held. */
static void ukp_slot_index_add(struct ukp_slot_page *pg, unsigned int n)
{
	for (unsigned int i = ukp_page_hash(pg->base);; i = (i + 1) % PAGE_INDEX_SIZE) {
		uint32_t v = atomic_load(&ukp_slot_index[i]);

		if (!v || v == PAGE_INDEX_REMOVED) {
			atomic_store_explicit(&ukp_slot_index[i], n + 1, memory_order_release);
			return;
		}
	}
}

/* And out again (a rollback).  Mutex held. */
static void ukp_slot_index_remove(const struct ukp_slot_page *pg, unsigned int n)
{
	for (unsigned int i = ukp_page_hash(pg->base);; i = (i + 1) % PAGE_INDEX_SIZE) {
		uint32_t v = atomic_load(&ukp_slot_index[i]);

		if (!v)
			return;
		if (v == n + 1) {
			atomic_store_explicit(&ukp_slot_index[i], PAGE_INDEX_REMOVED,
					      memory_order_release);
			return;
		}
	}
}

/**
 * ukp_slot_info_at() - what the slot containing @ip copies.  Trap-safe.
 * Returns NULL if @ip is not in a slot page.  *@slot gets the slot's start.
 */
const struct ukp_slot_info *ukp_slot_info_at(uintptr_t ip, uintptr_t *slot)
{
	struct ukp_slot_page *pg = ukp_slot_page_of(ip);
	unsigned int idx;

	if (!pg)
		return NULL;
	idx = (unsigned int)((ip - pg->base) / UKP_ARCH_SLOT_SIZE);
	if (!(pg->used & (1ull << idx)) && !(pg->dirty & (1ull << idx)))
		return NULL;
	*slot = pg->base + idx * UKP_ARCH_SLOT_SIZE;
	return &pg->info[idx];
}
NOKPROBE_SYMBOL(ukp_slot_info_at);

/* ------------------------------------------------------------------------ */
/* Finding room near the probed code                                         */
/* ------------------------------------------------------------------------ */

static uintptr_t ukp_dist(uintptr_t a, uintptr_t b)
{
	return a > b ? a - b : b - a;
}

/*
 * Pick a free page in [lo, hi] close to @near.  Candidates are the pages just
 * below each mapping (the region above the program's data is where brk grows,
 * so we prefer below) and, second, just above each mapping.
 */
static uintptr_t ukp_find_hole(uintptr_t lo, uintptr_t hi, uintptr_t near)
{
	struct ukp_map *m;
	size_t n;
	uintptr_t best = 0, bestd = UINTPTR_MAX;
	const uintptr_t min_addr = 0x10000;

	if (ukp_maps_read(&m, &n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		uintptr_t prev_end = i ? m[i - 1].end : min_addr;
		uintptr_t next_start = i + 1 < n ? m[i + 1].start : (uintptr_t)0x7ffffffff000;
		uintptr_t cand[2] = { 0, 0 };

		if (m[i].start >= prev_end + SLOT_PAGE_SIZE && m[i].start > min_addr + SLOT_PAGE_SIZE)
			cand[0] = m[i].start - SLOT_PAGE_SIZE;
		/* Leave a gap above a mapping so brk and stack growth keep room. */
		if (next_start >= m[i].end + 2 * SLOT_PAGE_SIZE + (64u << 20))
			cand[1] = m[i].end + (64u << 20);
		for (int k = 0; k < 2; k++) {
			uintptr_t c = cand[k];

			if (!c || c < lo || c + SLOT_PAGE_SIZE > hi)
				continue;
			if (ukp_dist(c, near) + (k ? 1u << 30 : 0) < bestd) {
				best = c;
				bestd = ukp_dist(c, near) + (k ? 1u << 30 : 0);
			}
		}
	}
	free(m);
	return best;
}

static struct ukp_slot_page *ukp_slot_page_new(uintptr_t lo, uintptr_t hi,
					       uintptr_t near)
{
	unsigned int n = atomic_load(&ukp_slot_npages);
	struct ukp_slot_page *pg;
	void *p = MAP_FAILED;

	if (n >= MAX_SLOT_PAGES)
		return NULL;
	/* The page below the last new one first: pages come in runs near the
	 * same code, and this spares a read of /proc/self/maps (hundreds of
	 * lines by then) for each. */
	if (ukp_slot_last_new > lo + SLOT_PAGE_SIZE &&
	    ukp_slot_last_new - SLOT_PAGE_SIZE >= lo && ukp_slot_last_new <= hi &&
	    ukp_dist(ukp_slot_last_new, near) < (1u << 30))
		p = mmap((void *)(ukp_slot_last_new - SLOT_PAGE_SIZE), SLOT_PAGE_SIZE,
			 PROT_READ | PROT_EXEC,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	for (int tries = 0; tries < 4 && p == MAP_FAILED; tries++) {
		uintptr_t hole = ukp_find_hole(lo, hi, near);

		if (!hole)
			return NULL;
		p = mmap((void *)hole, SLOT_PAGE_SIZE, PROT_READ | PROT_EXEC,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	}
	if (p == MAP_FAILED)
		return NULL;
	pg = calloc(1, sizeof(*pg));
	if (!pg) {
		munmap(p, SLOT_PAGE_SIZE);
		return NULL;
	}
	/* Name it in /proc/self/maps where the kernel allows. */
	prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)p, SLOT_PAGE_SIZE,
	      (unsigned long)"ukprobes-insn-slots");
	pg->base = (uintptr_t)p;
	ukp_slot_last_new = pg->base;
	pg->created = ++ukp_slot_seq;
	atomic_store_explicit(&ukp_slot_pages[n], pg, memory_order_release);
	atomic_store_explicit(&ukp_slot_npages, n + 1, memory_order_release);
	ukp_slot_index_add(pg, n);
	return pg;
}

/* First index of @n consecutive free slots in @used, or -1. */
static int ukp_find_free_run(uint64_t used, unsigned int n)
{
	/* Bit i of @starts: slots i .. i + n - 1 are all free. */
	uint64_t free_map = SLOTS_PER_PAGE >= 64 ? ~used :
			    ~used & ((1ull << SLOTS_PER_PAGE) - 1);
	uint64_t starts = free_map;

	if ((unsigned int)__builtin_popcountll(free_map) < n)
		return -1;
	for (unsigned int k = 1; k < n && starts; k++)
		starts &= free_map >> k;
	return starts ? __builtin_ctzll(starts) : -1;
}

/**
 * ukp_slot_alloc_n() - @n consecutive free slots in [@lo, @hi], near @near.
 * @info: what the slots hold (kept for the trap path, in every slot).
 * Returns the first slot's address, or 0 when none can be had.
 */
uintptr_t ukp_slot_alloc_n(uintptr_t lo, uintptr_t hi, uintptr_t near,
			   unsigned int n, const struct ukp_slot_info *info)
{
	struct ukp_slot_page *pg = NULL;
	unsigned int npg;
	int idx = -1;
	uintptr_t slot = 0;

	if (!n || n > SLOTS_PER_PAGE)
		return 0;
	pthread_mutex_lock(&ukp_slot_mutex);
	if (ukp_slot_ndirty >= ukp_slot_gc_at)
		ukp_slot_gc();
	npg = atomic_load(&ukp_slot_npages);
	/* The page that served last first: allocations come in batches near
	 * one another, so a scan of every page is rarely needed. */
	for (unsigned int k = 0; k < npg && !pg; k++) {
		unsigned int i = (ukp_slot_hint + k) % npg;
		struct ukp_slot_page *c = atomic_load(&ukp_slot_pages[i]);

		if (c && c->base >= lo && c->base + SLOT_PAGE_SIZE <= hi &&
		    (idx = ukp_find_free_run(c->used, n)) >= 0) {
			pg = c;
			ukp_slot_hint = i;
		}
	}
	if (!pg) {
		pg = ukp_slot_page_new(lo, hi, near);
		idx = 0;
		ukp_slot_hint = atomic_load(&ukp_slot_npages) - 1;
	}
	if (pg) {
		for (unsigned int k = 0; k < n; k++) {
			pg->info[idx + (int)k] = *info;
			/* A detour spans slots: each knows how far its start is. */
			if (info->detour)
				pg->info[idx + (int)k].detour = (uint8_t)(k + 1);
		}
		uint64_t run = n >= 64 ? ~0ull : (1ull << n) - 1;

		__atomic_store_n(&pg->used, pg->used | (run << idx), __ATOMIC_RELEASE);
		slot = pg->base + (unsigned int)idx * UKP_ARCH_SLOT_SIZE;
	}
	pthread_mutex_unlock(&ukp_slot_mutex);
	return slot;
}

/** ukp_slot_alloc() - one slot; see ukp_slot_alloc_n(). */
uintptr_t ukp_slot_alloc(uintptr_t lo, uintptr_t hi, uintptr_t near,
			 const struct ukp_slot_info *info)
{
	return ukp_slot_alloc_n(lo, hi, near, 1, info);
}

static struct ukp_slot_page *ukp_slot_locate(uintptr_t slot, unsigned int *idx)
{
	struct ukp_slot_page *pg = ukp_slot_page_of(slot);

	if (pg)
		*idx = (unsigned int)((slot - pg->base) / UKP_ARCH_SLOT_SIZE);
	return pg;
}

/** ukp_slot_free_unused_n() - give back @n slots that were never armed. */
void ukp_slot_free_unused_n(uintptr_t slot, unsigned int n)
{
	unsigned int idx;
	struct ukp_slot_page *pg;

	pthread_mutex_lock(&ukp_slot_mutex);
	pg = ukp_slot_locate(slot, &idx);
	for (unsigned int k = 0; pg && k < n && idx + k < SLOTS_PER_PAGE; k++)
		__atomic_store_n(&pg->used, pg->used & ~(1ull << (idx + k)), __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ukp_slot_mutex);
}

void ukp_slot_free_unused(uintptr_t slot)
{
	ukp_slot_free_unused_n(slot, 1);
}

/** ukp_slot_release_n() - @n slots that were armed: dirty until proven unused. */
void ukp_slot_release_n(uintptr_t slot, unsigned int n)
{
	unsigned int idx;
	struct ukp_slot_page *pg;

	pthread_mutex_lock(&ukp_slot_mutex);
	pg = ukp_slot_locate(slot, &idx);
	for (unsigned int k = 0; pg && k < n && idx + k < SLOTS_PER_PAGE; k++) {
		if (!(pg->dirty & (1ull << (idx + k)))) {
			pg->dirty |= 1ull << (idx + k);
			ukp_slot_ndirty++;
		}
	}
	pthread_mutex_unlock(&ukp_slot_mutex);
}

void ukp_slot_release(uintptr_t slot)
{
	ukp_slot_release_n(slot, 1);
}

/** ukp_slot_mark() - remember the page sequence, for a rollback. */
void ukp_slot_mark(unsigned long *mark)
{
	pthread_mutex_lock(&ukp_slot_mutex);
	*mark = ukp_slot_seq;
	pthread_mutex_unlock(&ukp_slot_mutex);
}

/**
 * ukp_slot_unmap_new_since() - after a failed registration, unmap the pages
 * created since @mark that hold no slot, so the memory map is as it was.
 * Pages are only appended, so the new ones are at the end of the array.
 */
void ukp_slot_unmap_new_since(unsigned long mark)
{
	pthread_mutex_lock(&ukp_slot_mutex);
	for (;;) {
		unsigned int n = atomic_load(&ukp_slot_npages);
		struct ukp_slot_page *pg = n ? atomic_load(&ukp_slot_pages[n - 1]) : NULL;

		if (!pg || pg->created <= mark || pg->used || pg->dirty)
			break;
		ukp_slot_index_remove(pg, n - 1);
		atomic_store(&ukp_slot_npages, n - 1);
		atomic_store(&ukp_slot_pages[n - 1], NULL);
		/* Never armed: no thread can have run in it. */
		munmap((void *)pg->base, SLOT_PAGE_SIZE);
		free(pg);
		ukp_slot_seq--;
	}
	pthread_mutex_unlock(&ukp_slot_mutex);
}

/* ------------------------------------------------------------------------ */
/* Reclaiming dirty slots                                                    */
/* ------------------------------------------------------------------------ */

/*
 * A dirty slot's probe is disarmed and a grace period has passed since (the
 * release happens after ukp_synchronize()), so no thread can newly enter it.
 * A thread may still be inside, or about to resume there from a signal
 * handler of the program's: the proof of grace.h (step 3) says when none
 * is.  Threads we cannot prove out keep every dirty slot dirty until the
 * next attempt.
 */
static bool ukp_ip_in_dirty_slot(uintptr_t ip, void *arg)
{
	struct ukp_slot_page *pg = ukp_slot_page_of(ip);

	(void)arg;
	if (!pg)
		return false;
	return pg->dirty & (1ull << ((ip - pg->base) / UKP_ARCH_SLOT_SIZE));
}

/** ukp_slot_gc() - reuse dirty slots when no thread can be inside.  Mutex held. */
void ukp_slot_gc(void)
{
	unsigned int n;

	if (!ukp_slot_ndirty)
		return;
	if (!ukp_threads_outside(ukp_ip_in_dirty_slot, NULL, 10000, 0)) {
		ukp_slot_gc_at = ukp_slot_ndirty + GC_DIRTY_THRESHOLD;
		return;
	}
	ukp_slot_gc_at = GC_DIRTY_THRESHOLD;
	n = atomic_load(&ukp_slot_npages);
	for (unsigned int i = 0; i < n; i++) {
		struct ukp_slot_page *pg = atomic_load(&ukp_slot_pages[i]);

		if (!pg || !pg->dirty)
			continue;
		__atomic_store_n(&pg->used, pg->used & ~pg->dirty, __ATOMIC_RELEASE);
		pg->dirty = 0;
	}
	ukp_slot_ndirty = 0;
}
