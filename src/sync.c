// SPDX-License-Identifier: MIT
/*
 * sync.c - grace periods: the user-space synchronize_rcu().
 *
 * The trap path brackets everything it does with a probe point with
 * ukp_srcu_read_lock()/unlock(); ukp_synchronize() returns once every
 * section that began before it has ended, so an unregistered probe's handlers
 * can no longer run and its struct may be freed by the caller.
 *
 * Two counters, as SRCU: a reader adds one to the counter of the current
 * phase (a locked add, which is a full barrier on x86 and orders its later
 * loads of the probe tables); a writer flips the phase and waits for the old
 * counter to drain, twice, so a reader that read the phase just before a flip
 * is waited for too.  Readers arriving meanwhile use the other counter and
 * never starve the writer.
 */
#include <sched.h>
#include <time.h>

#include "internal.h"

static struct {
	atomic_ulong ctr[2];
	atomic_uint phase;
} ukp_srcu;

/* Serializes writers; the trap path never takes it. */
static pthread_mutex_t ukp_srcu_mutex = PTHREAD_MUTEX_INITIALIZER;

unsigned int ukp_srcu_read_lock(void)
{
	unsigned int idx = atomic_load_explicit(&ukp_srcu.phase,
						memory_order_relaxed) & 1;

	atomic_fetch_add_explicit(&ukp_srcu.ctr[idx], 1, memory_order_seq_cst);
	return idx;
}

void ukp_srcu_read_unlock(unsigned int idx)
{
	atomic_fetch_sub_explicit(&ukp_srcu.ctr[idx], 1, memory_order_release);
}

static void ukp_srcu_wait_drained(unsigned int idx)
{
	unsigned int spins = 0;

	while (atomic_load_explicit(&ukp_srcu.ctr[idx], memory_order_acquire)) {
		if (++spins < 64) {
			sched_yield();
		} else {
			struct timespec ts = { 0, 50 * 1000 };

			nanosleep(&ts, NULL);
		}
	}
}

/**
 * ukp_synchronize() - wait for every trap-path section that started before
 * the call to finish.  Must not be called from a probe handler.
 */
void ukp_synchronize(void)
{
	pthread_mutex_lock(&ukp_srcu_mutex);
	atomic_thread_fence(memory_order_seq_cst);
	for (int round = 0; round < 2; round++) {
		unsigned int old = atomic_load(&ukp_srcu.phase) & 1;

		atomic_store(&ukp_srcu.phase, old ^ 1);
		ukp_srcu_wait_drained(old);
	}
	pthread_mutex_unlock(&ukp_srcu_mutex);
}
