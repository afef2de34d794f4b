// SPDX-License-Identifier: MIT
/*
 * test_grace.c - the proofs of src/grace.h, from inside:
 *   - a thread blocked in the kernel is seen where its user pc is;
 *   - a thread that runs is proven out of straight-line code once it ran;
 *   - a thread whose signal handler (the program's) runs is seen where it
 *     will resume, not where it blocks, until the handler returns;
 *   - debug builds (SAN=1) stop a walk of the probe tables made outside a
 *     read section and without ukp_kprobe_mutex.
 */
#include "../support/ukp_test.h"
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ukprobes.h>
#include "internal.h"
#include "grace.h"

struct range {
	uintptr_t lo, hi;
};

static bool in_range(uintptr_t ip, void *arg)
{
	const struct range *r = arg;

	return ip >= r->lo && ip < r->hi;
}

static sem_t go;
static atomic_int tid_of_waiter;

static void *waiter(void *arg)
{
	atomic_store(&tid_of_waiter, (int)syscall(SYS_gettid));
	while (sem_wait(&go))
		;
	return NULL;
}

/* The user pc /proc shows for a blocked thread (0 while it runs). */
static uintptr_t blocked_pc(int tid)
{
	char path[64], buf[256] = "";
	FILE *f;
	char *last;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	if (!strncmp(buf, "running", 7) || !(last = strrchr(buf, ' ')))
		return 0;
	return (uintptr_t)strtoull(last + 1, NULL, 16);
}

Test(grace, blocked_thread_seen_at_its_pc, .timeout = 30)
{
	pthread_t th;
	uintptr_t pc = 0;

	sem_init(&go, 0, 0);
	cr_assert_eq(pthread_create(&th, NULL, waiter, NULL), 0);
	while (!atomic_load(&tid_of_waiter))
		usleep(100);
	for (int i = 0; i < 1000 && !(pc = blocked_pc(atomic_load(&tid_of_waiter))); i++)
		usleep(1000);
	cr_assert_neq(pc, 0, "the waiter never blocked");

	struct range at = { pc - 1, pc + 1 }, away = { pc + 4096, pc + 8192 };

	cr_assert_not(ukp_threads_outside(in_range, &at, 20000, 0),
		      "a thread blocked at %#lx was proven out of it", (unsigned long)pc);
	cr_assert(ukp_threads_outside(in_range, &away, 20000, 0));
	sem_post(&go);
	pthread_join(th, NULL);
	cr_assert(ukp_threads_outside(in_range, &at, 20000, 0));
}

static atomic_int spin_stop;

static void *spinner(void *arg)
{
	while (!atomic_load_explicit(&spin_stop, memory_order_relaxed))
		;
	return NULL;
}

Test(grace, running_thread_proven_once_it_ran, .timeout = 30)
{
	/* Its loop (other threads of the test runner block elsewhere). */
	struct range loop = { (uintptr_t)spinner, (uintptr_t)spinner + 256 };
	pthread_t th;

	cr_assert_eq(pthread_create(&th, NULL, spinner, NULL), 0);
	/* It never blocks: only its CPU time can tell, within a few ticks. */
	cr_assert(ukp_threads_outside(in_range, &loop, 2000000, 0));
	atomic_store(&spin_stop, 1);
	pthread_join(th, NULL);
}

/* A handler of the program's, as the wrapper around it notes it. */
static uintptr_t fake_resume_ip = 0x1000;
static sem_t in_handler;

static void *handler_thread(void *arg)
{
	int tok = ukp_intr_push(fake_resume_ip);

	sem_post(&in_handler);
	while (sem_wait(&go))
		;
	ukp_intr_pop(tok);
	/* Back in the interrupted code: it runs on. */
	while (!atomic_load_explicit(&spin_stop, memory_order_relaxed))
		;
	return NULL;
}

Test(grace, resume_point_of_a_running_handler_counts, .timeout = 30)
{
	struct range resume = { fake_resume_ip, fake_resume_ip + 1 };
	pthread_t th;

	pthread_mutex_lock(&ukp_kprobe_mutex);
	cr_assert_eq(ukp_grace_init(), 0);
	pthread_mutex_unlock(&ukp_kprobe_mutex);
	sem_init(&go, 0, 0);
	sem_init(&in_handler, 0, 0);
	atomic_store(&spin_stop, 0);
	cr_assert_eq(pthread_create(&th, NULL, handler_thread, NULL), 0);
	sem_wait(&in_handler);
	/* Blocked in its handler, far from 0x1000: still not out. */
	cr_assert_not(ukp_threads_outside(in_range, &resume, 20000, 0));
	/* Unless the caller moves such contexts itself. */
	cr_assert(ukp_threads_outside(in_range, &resume, 20000, UKP_OUTSIDE_RESUME_REDIRECTED));
	sem_post(&go);
	/* The handler returned: once the thread ran on, it is out. */
	cr_assert(ukp_threads_outside(in_range, &resume, 2000000, 0));
	atomic_store(&spin_stop, 1);
	pthread_join(th, NULL);
}

#ifdef UKP_DEBUG
Test(grace, debug_walk_without_lock_aborts, .signal = SIGABRT, .timeout = 30)
{
	/* Neither a read section nor ukp_kprobe_mutex. */
	ukp_point_lookup((uintptr_t)&fake_resume_ip);
}

Test(grace, debug_walk_under_mutex_or_read_section_allowed, .timeout = 30)
{
	unsigned int idx;

	pthread_mutex_lock(&ukp_kprobe_mutex);
	ukp_point_lookup((uintptr_t)&fake_resume_ip);
	pthread_mutex_unlock(&ukp_kprobe_mutex);
	idx = ukp_srcu_read_lock();
	ukp_point_lookup((uintptr_t)&fake_resume_ip);
	ukp_srcu_read_unlock(idx);
}
#endif
