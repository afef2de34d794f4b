// SPDX-License-Identifier: MIT
/*
 * retired.c - breakpoints removed lately.
 *
 * A thread that executed one of our int3s gets its SIGTRAP a little later;
 * if the probe was removed meanwhile, the trap finds no probe and the
 * original byte back in place, and must execute that instruction (the
 * kernel's kprobe_int3_handler() backs up over "the (now missing) int3").
 * But a SIGTRAP that was never ours can look the same: a debugger passing
 * on its own breakpoint's trap (gdb with "handle SIGTRAP pass" has already
 * moved the pc back), the program's "int $3" (cd 03).  Backing up one byte
 * there runs the middle of an instruction.  So the trap path backs up only
 * over an address noted here when its probe was removed.
 *
 * A small hash table of (address, time): written under ukp_kprobe_mutex,
 * read by the trap path without a lock.  An entry counts for
 * UKP_RETIRED_NS; a thread whose SIGTRAP waits longer than that to be
 * delivered is not expected.  When removals outrun the table (a batch of
 * thousands), every unknown address counts as retired for that long, which
 * is what the trap path did before.
 */
#include <time.h>

#include "internal.h"
#include "trap.h"

#define UKP_RETIRED_SLOTS	4096	/* a power of two */
#define UKP_RETIRED_PROBE	8
#define UKP_RETIRED_NS		(5ull * 1000 * 1000 * 1000)

struct ukp_retired {
	_Atomic uintptr_t addr;
	_Atomic uint64_t when;		/* 0: free */
};

static struct ukp_retired ukp_retired[UKP_RETIRED_SLOTS];
/* Until when an unknown address counts as retired (table overrun). */
static _Atomic uint64_t ukp_retired_overrun;

static uint64_t ukp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + 1;
}
NOKPROBE_SYMBOL(ukp_now_ns);

static size_t ukp_retired_hash(uintptr_t addr)
{
	return (size_t)((addr * 0x9e3779b97f4a7c15ull) >> 40) & (UKP_RETIRED_SLOTS - 1);
}
NOKPROBE_SYMBOL(ukp_retired_hash);

/**
 * ukp_bp_retired_note() - the breakpoint at @addr is about to be removed
 * for good.  Call before it is.  ukp_kprobe_mutex held.
 */
void ukp_bp_retired_note(uintptr_t addr)
{
	uint64_t now = ukp_now_ns(), oldest = UINT64_MAX;
	size_t h = ukp_retired_hash(addr), victim = h;

	for (size_t i = 0; i < UKP_RETIRED_PROBE; i++) {
		struct ukp_retired *r = &ukp_retired[(h + i) & (UKP_RETIRED_SLOTS - 1)];
		uint64_t when = atomic_load_explicit(&r->when, memory_order_relaxed);

		if (!when || now - when >= UKP_RETIRED_NS ||
		    atomic_load_explicit(&r->addr, memory_order_relaxed) == addr) {
			victim = (h + i) & (UKP_RETIRED_SLOTS - 1);
			oldest = 0;
			break;
		}
		if (when < oldest) {
			oldest = when;
			victim = (h + i) & (UKP_RETIRED_SLOTS - 1);
		}
	}
	if (oldest)	/* a live entry is evicted */
		atomic_store_explicit(&ukp_retired_overrun, now + UKP_RETIRED_NS,
				      memory_order_relaxed);
	/* Free while the address changes, so no reader pairs the new
	 * address with the old time. */
	atomic_store_explicit(&ukp_retired[victim].when, 0, memory_order_release);
	atomic_store_explicit(&ukp_retired[victim].addr, addr, memory_order_release);
	atomic_store_explicit(&ukp_retired[victim].when, now, memory_order_release);
}

/** ukp_bp_retired() - was a breakpoint of ours at @addr removed lately?
 * Trap path. */
bool ukp_bp_retired(uintptr_t addr)
{
	struct ukp_kcb *kcb = ukp_this_kcb();
	size_t h = ukp_retired_hash(addr);
	uint64_t now;

	/* A probe on clock_gettime() is missed here, not run. */
	ukp_handler_enter(kcb);
	now = ukp_now_ns();
	ukp_handler_exit(kcb);

	if (now < atomic_load_explicit(&ukp_retired_overrun, memory_order_relaxed))
		return true;
	for (size_t i = 0; i < UKP_RETIRED_PROBE; i++) {
		struct ukp_retired *r = &ukp_retired[(h + i) & (UKP_RETIRED_SLOTS - 1)];
		uint64_t when = atomic_load_explicit(&r->when, memory_order_acquire);

		if (when && now - when < UKP_RETIRED_NS &&
		    atomic_load_explicit(&r->addr, memory_order_acquire) == addr &&
		    atomic_load_explicit(&r->when, memory_order_acquire) == when)
			return true;
	}
	return false;
}
NOKPROBE_SYMBOL(ukp_bp_retired);
