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

#include <ukprobes.h>

#include "internal.h"

static struct {
	atomic_ulong ctr[2];
	atomic_uint phase;
	atomic_uint fork_gen;	/* sections opened before a fork() are void */
} ukp_srcu;

/* Serializes writers; the trap path never takes it. */
static pthread_mutex_t ukp_srcu_mutex = PTHREAD_MUTEX_INITIALIZER;

/* The cookie: the phase in bit 0, the fork generation above it. */
unsigned int ukp_srcu_read_lock(void)
{
	unsigned int idx = atomic_load_explicit(&ukp_srcu.phase,
						memory_order_relaxed) & 1;

	atomic_fetch_add_explicit(&ukp_srcu.ctr[idx], 1, memory_order_seq_cst);
	return idx | atomic_load_explicit(&ukp_srcu.fork_gen, memory_order_relaxed) << 1;
}
NOKPROBE_SYMBOL(ukp_srcu_read_lock);

void ukp_srcu_read_unlock(unsigned int cookie)
{
	/* Opened in the parent of a fork(): the child's counters never
	 * counted it. */
	if (cookie >> 1 != atomic_load_explicit(&ukp_srcu.fork_gen, memory_order_relaxed))
		return;
	atomic_fetch_sub_explicit(&ukp_srcu.ctr[cookie & 1], 1, memory_order_release);
}
NOKPROBE_SYMBOL(ukp_srcu_read_unlock);

/**
 * ukp_srcu_after_fork() - in the child: the other threads, and the read
 * sections they held, did not come along.  A section of the forking thread
 * itself (fork() called from a handler) ends without counting.
 */
void ukp_srcu_after_fork(void)
{
	atomic_store(&ukp_srcu.ctr[0], 0);
	atomic_store(&ukp_srcu.ctr[1], 0);
	atomic_fetch_add(&ukp_srcu.fork_gen, 1);
	pthread_mutex_init(&ukp_srcu_mutex, NULL);
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
