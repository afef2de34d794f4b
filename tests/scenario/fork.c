// SPDX-License-Identifier: MIT
/*
 * fork.c - probes across fork(): the child inherits them and can change
 * them without touching the parent (its own /proc/self/mem), and its grace
 * periods do not wait for threads or handlers that stayed in the parent.
 */
#include "../support/ukp_test.h"
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ukprobes.h>

__attribute__((noinline, noipa)) int fk_target(int x)
{
	return x + 1;
}

__attribute__((noinline, noipa)) int fk_other(int x)
{
	return x * 2;
}

static int (*volatile target)(int) = fk_target;
static int (*volatile other)(int) = fk_other;
static atomic_long hits, other_hits;

static int slow_pre(struct kprobe *p, struct pt_regs *r)
{
	struct timespec ts = { 0, 2000000 };

	atomic_fetch_add(&hits, 1);
	nanosleep(&ts, NULL);
	return 0;
}

static int count_pre(struct kprobe *p, struct pt_regs *r)
{
	atomic_fetch_add(&other_hits, 1);
	return 0;
}

static atomic_int stop;

static void *spin(void *arg)
{
	while (!atomic_load(&stop))
		target(1);
	return NULL;
}

/* A thread sits in a (slow) handler when fork() happens: the child's
 * unregister must not wait for it (it does not exist in the child). */
Test(fork, child_unregisters_while_parent_thread_in_handler, .timeout = 30)
{
	struct kprobe kp = { .symbol_name = "fk_target", .pre_handler = slow_pre };
	pthread_t t;
	int st;

	cr_assert_eq(register_kprobe(&kp), 0);
	pthread_create(&t, NULL, spin, NULL);
	while (atomic_load(&hits) < 3)
		usleep(1000);
	pid_t pid = fork();

	if (pid == 0) {
		alarm(10);
		unregister_kprobe(&kp);
		_exit(target(41) == 42 ? 0 : 1);
	}
	cr_assert_gt(pid, 0);
	waitpid(pid, &st, 0);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	/* The probe lives in this frame: stop using it before returning. */
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	unregister_kprobe(&kp);
}

/* The child's changes are its own: the parent's probe keeps counting. */
Test(fork, child_changes_do_not_reach_parent, .timeout = 30)
{
	struct kprobe kp = { .symbol_name = "fk_other", .pre_handler = count_pre };
	int st;

	cr_assert_eq(register_kprobe(&kp), 0);
	pid_t pid = fork();

	if (pid == 0) {
		long before = atomic_load(&other_hits);

		other(1);
		if (atomic_load(&other_hits) != before + 1)
			_exit(2);	/* inherited probe fires in the child */
		unregister_kprobe(&kp);
		other(1);
		_exit(atomic_load(&other_hits) == before + 1 ? 0 : 3);
	}
	waitpid(pid, &st, 0);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	long before = atomic_load(&other_hits);

	cr_expect_eq(other(3), 6);
	cr_expect_eq(atomic_load(&other_hits), before + 1, "the parent's probe was removed by the child");
	unregister_kprobe(&kp);
}
