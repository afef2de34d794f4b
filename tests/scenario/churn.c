/* SPDX-License-Identifier: MIT */
/*
 * churn.c - probes registered and unregistered, over and over, on a
 * recursive function that other threads keep running: a kprobe inside it
 * and a kretprobe on it, with the optimizer on and off.  Nothing a thread
 * may still execute or read (a step slot, a detour, a trampoline, an
 * instance, the original bytes) may be freed, reused or restored under it:
 * every result must stay right, and no thread may crash.  The kprobe
 * moves over every instruction of the function, with and without a post
 * handler (single-step or boost); the kretprobe is on its entry.
 */
#include "../support/ukp_test.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <ukprobes.h>
#include "scn_util.h"

extern char scn_churn_rec[], scn_churn_rec_end[];
static long (*volatile rec)(long) = (long (*)(long))scn_churn_rec;

#define NWORKERS 4
#define DEPTH 12

static atomic_int stop;
static atomic_ulong calls, wrong, pre_hits, ret_hits;

static void *worker(void *arg)
{
	long n = (long)(intptr_t)arg % DEPTH + 1;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (rec(n) != n * (n + 1) / 2)
			atomic_fetch_add(&wrong, 1);
		atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
		n = n % DEPTH + 1;
	}
	return NULL;
}

static int pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add_explicit(&pre_hits, 1, memory_order_relaxed);
	return 0;
}

static int ret_handler(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	atomic_fetch_add_explicit(&ret_hits, 1, memory_order_relaxed);
	return 0;
}

static void post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
}

/* The instruction boundaries of scn_churn_rec. */
static const unsigned char insn_offs[] = { 0, 1, 4, 5, 8, 11, 13, 17, 22, 25, 27, 29, 30, 31 };

static void churn(int cycles, bool optimize, unsigned int gpr_flags)
{
	pthread_t th[NWORKERS];
	unsigned long last_calls = 0;

	ukprobes_set_optimization(optimize);
	for (int i = 0; i < NWORKERS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i), 0);
	for (int c = 0; c < cycles; c++) {
		struct kprobe kp = {
			.addr = (kprobe_opcode_t *)(scn_churn_rec + insn_offs[c % sizeof(insn_offs)]),
			.pre_handler = pre,
			.post_handler = (c / sizeof(insn_offs)) % 2 ? post : NULL,
			.flags = gpr_flags,
		};
		struct kretprobe rp = {
			.kp.addr = (kprobe_opcode_t *)scn_churn_rec,
			.kp.flags = gpr_flags,
			.handler = ret_handler,
			.maxactive = 64,
		};

		cr_assert_eq(register_kprobe(&kp), 0);
		cr_assert_eq(register_kretprobe(&rp), 0);
		/* Now and then long enough for the optimizer to act. */
		if (optimize && c % 64 == 0)
			ukprobes_wait_optimizer();
		if (c % 3 == 0) {
			unregister_kprobe(&kp);
			unregister_kretprobe(&rp);
		} else {
			unregister_kretprobe(&rp);
			unregister_kprobe(&kp);
		}
		/* The workers must make progress: no thread is stuck. */
		if (c % 1000 == 999) {
			unsigned long now = atomic_load(&calls);

			cr_assert_gt(now, last_calls, "workers stopped at cycle %d", c);
			last_calls = now;
		}
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < NWORKERS; i++)
		pthread_join(th[i], NULL);
	cr_assert_eq(atomic_load(&wrong), 0, "%lu wrong results of %lu calls",
		     atomic_load(&wrong), atomic_load(&calls));
	cr_log_info("churn: %d cycles, %lu calls, %lu pre hits, %lu return hits",
		    cycles, atomic_load(&calls), atomic_load(&pre_hits),
		    atomic_load(&ret_hits));
}

/*
 * 10,000 cycles; a tenth of that in the suite's second passes (beside a
 * uprobe, under the sanitizers), which run the same code more slowly.
 * UKP_CHURN_CYCLES overrides (make stress runs more).
 */
static int env_cycles(int full)
{
	const char *s = getenv("UKP_CHURN_CYCLES");

	if (s)
		return atoi(s) * full / 10000;
#if defined(__SANITIZE_ADDRESS__)
	return full / 10;
#else
	return getenv("UKP_TEST_UPROBE") ? full / 10 : full;
#endif
}

Test(churn, breakpoints, .timeout = 300)
{
	churn(env_cycles(10000), false, 0);
}

Test(churn, optimized, .timeout = 300)
{
	churn(env_cycles(10000), true, 0);
}

Test(churn, optimized_gpr_only, .timeout = 300)
{
	churn(env_cycles(10000), true, KPROBE_FLAG_GPR_ONLY);
}

/*
 * A kprobe inside the entry region of a kretprobe that stays: each time it
 * goes, the kretprobe's entry is optimized over the place where it was,
 * while threads may still be on their way back from its breakpoint.
 */
static void churn_inside_region(int cycles, unsigned int gpr_flags)
{
	pthread_t th[NWORKERS];
	struct kretprobe rp = {
		.kp.addr = (kprobe_opcode_t *)scn_churn_rec,
		.kp.flags = gpr_flags,
		.handler = ret_handler,
		.maxactive = 64,
	};

	ukprobes_set_optimization(1);
	cr_assert_eq(register_kretprobe(&rp), 0);
	for (int i = 0; i < NWORKERS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i), 0);
	for (int c = 0; c < cycles; c++) {
		struct kprobe kp = {
			.addr = (kprobe_opcode_t *)(scn_churn_rec + (c % 2 ? 1 : 4)),
			.pre_handler = pre,
			.flags = gpr_flags,
		};

		cr_assert_eq(register_kprobe(&kp), 0);
		unregister_kprobe(&kp);
		ukprobes_wait_optimizer();
	}
	unregister_kretprobe(&rp);
	atomic_store(&stop, 1);
	for (int i = 0; i < NWORKERS; i++)
		pthread_join(th[i], NULL);
	cr_assert_eq(atomic_load(&wrong), 0, "%lu wrong results of %lu calls",
		     atomic_load(&wrong), atomic_load(&calls));
}

Test(churn, inside_optimized_region, .timeout = 300)
{
	churn_inside_region(env_cycles(100), 0);
}

Test(churn, inside_optimized_region_gpr_only, .timeout = 300)
{
	churn_inside_region(env_cycles(100), KPROBE_FLAG_GPR_ONLY);
}
