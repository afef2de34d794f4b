/* SPDX-License-Identifier: MIT */
/*
 * threads.c - probes changed while other threads run the probed code.
 *   - windows: 4 workers hammer a function while the test thread registers,
 *     disables, enables, unregisters it (and flips the global switch); after
 *     each transition everyone meets at a barrier, each worker makes exactly
 *     N calls, and the hit count must be exactly 4N when the probe is armed
 *     and 0 when it is not;
 *   - stress: the same with no pauses, several probes, batches: no crash,
 *     every result right;
 *   - grace: unregister_kprobe() returns only when no thread is still in the
 *     probe's handlers (the struct may be destroyed at once);
 *   - reentry on several threads at once is per thread.
 */
#include "../support/ukp_test.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ukprobes.h>
#include "scn_util.h"

extern char scn_t_fn[], scn_t_fn_1[], scn_t_fn_2[];
static long (*volatile tfn)(long) = (long (*)(long))scn_t_fn;

#define NWORKERS 4

static atomic_ulong pre_cnt, post_cnt, wrong_results;
static atomic_int stop;

static int cnt_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add_explicit(&pre_cnt, 1, memory_order_relaxed);
	return 0;
}

static void cnt_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	atomic_fetch_add_explicit(&post_cnt, 1, memory_order_relaxed);
}

static inline void call_check(long i)
{
	if (tfn(i) != 2 * i + 1)
		atomic_fetch_add_explicit(&wrong_results, 1, memory_order_relaxed);
}

/* --------------------------------------------------------------------- */
/* Stable windows                                                        */
/* --------------------------------------------------------------------- */

#define WINDOW_CALLS 2000

static pthread_barrier_t bar_a, bar_b, bar_c, bar_d;
static atomic_ulong window_gen;

static void *window_worker(void *arg)
{
	unsigned long mygen = 0;
	long i = (long)(intptr_t)arg * 1000000;

	while (!atomic_load(&stop)) {
		unsigned long g = atomic_load(&window_gen);
		if (g != mygen) {
			mygen = g;
			pthread_barrier_wait(&bar_a);	/* the transition is done */
			pthread_barrier_wait(&bar_b);	/* counters are zeroed */
			for (int n = 0; n < WINDOW_CALLS; n++)
				call_check(i++);
			pthread_barrier_wait(&bar_c);	/* window closed */
			pthread_barrier_wait(&bar_d);	/* counters read */
			continue;
		}
		call_check(i++);
	}
	return NULL;
}

enum { ST_REGISTER, ST_DISABLE, ST_ENABLE, ST_UNREGISTER, ST_REGISTER_DISABLED,
       ST_ENABLE2, ST_GLOBAL_OFF, ST_GLOBAL_ON, ST_UNREGISTER2, ST_NSTATES };

static const char *const st_names[] = {
	"register", "disable", "enable", "unregister", "register disabled",
	"enable", "global off", "global on", "unregister",
};

Test(threads, stable_windows, .timeout = 60)
{
	pthread_t th[NWORKERS];
	struct kprobe kp = { .symbol_name = "scn_t_fn", .pre_handler = cnt_pre,
			     .post_handler = cnt_post };
	long long deadline = scn_now_ns() + 12LL * 1000000000LL;
	int windows = 0, bad_windows = 0;

	pthread_barrier_init(&bar_a, NULL, NWORKERS + 1);
	pthread_barrier_init(&bar_b, NULL, NWORKERS + 1);
	pthread_barrier_init(&bar_c, NULL, NWORKERS + 1);
	pthread_barrier_init(&bar_d, NULL, NWORKERS + 1);
	for (int t = 0; t < NWORKERS; t++)
		pthread_create(&th[t], NULL, window_worker, (void *)(intptr_t)t);

	for (int cycle = 0; cycle < 6 && scn_now_ns() < deadline; cycle++) {
		for (int st = 0; st < ST_NSTATES; st++) {
			int armed = 0, ret = 0;

			switch (st) {
			case ST_REGISTER:
				kp.addr = NULL;
				kp.flags = 0;
				ret = register_kprobe(&kp);
				armed = 1;
				break;
			case ST_DISABLE:
				ret = disable_kprobe(&kp);
				break;
			case ST_ENABLE:
				ret = enable_kprobe(&kp);
				armed = 1;
				break;
			case ST_UNREGISTER:
			case ST_UNREGISTER2:
				unregister_kprobe(&kp);
				break;
			case ST_REGISTER_DISABLED:
				kp.addr = NULL;
				kp.flags = KPROBE_FLAG_DISABLED;
				ret = register_kprobe(&kp);
				break;
			case ST_ENABLE2:
				ret = enable_kprobe(&kp);
				armed = 1;
				break;
			case ST_GLOBAL_OFF:
				ret = ukprobes_set_enabled(0);
				break;
			case ST_GLOBAL_ON:
				ret = ukprobes_set_enabled(1);
				armed = 1;
				break;
			}
			cr_expect_eq(ret, 0, "cycle %d: %s returned %d", cycle, st_names[st], ret);

			atomic_fetch_add(&window_gen, 1);
			pthread_barrier_wait(&bar_a);
			atomic_store(&pre_cnt, 0);
			atomic_store(&post_cnt, 0);
			pthread_barrier_wait(&bar_b);
			pthread_barrier_wait(&bar_c);
			unsigned long pre = atomic_load(&pre_cnt), post = atomic_load(&post_cnt);
			pthread_barrier_wait(&bar_d);

			unsigned long expect = armed ? (unsigned long)NWORKERS * WINDOW_CALLS : 0;
			windows++;
			if (pre != expect || post != expect) {
				bad_windows++;
				cr_expect_eq(pre, expect, "cycle %d after %s: %lu pre hits, expected %lu",
					     cycle, st_names[st], pre, expect);
				cr_expect_eq(post, expect, "cycle %d after %s: %lu post hits, expected %lu",
					     cycle, st_names[st], post, expect);
			}
		}
	}
	atomic_store(&stop, 1);
	for (int t = 0; t < NWORKERS; t++)
		pthread_join(th[t], NULL);
	cr_log_info("%d windows checked", windows);
	cr_expect_geq(windows, ST_NSTATES, "not even one cycle ran");
	cr_expect_eq(bad_windows, 0);
	cr_expect_eq(atomic_load(&wrong_results), 0, "%lu wrong results",
		     atomic_load(&wrong_results));
	cr_expect_eq(kp.nmissed, 0);
}

/* --------------------------------------------------------------------- */
/* Stress: no pauses                                                     */
/* --------------------------------------------------------------------- */

static atomic_ulong worker_calls;

static void *stress_worker(void *arg)
{
	long i = (long)(intptr_t)arg * 1000000000L;
	unsigned long n = 0;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		call_check(i++);
		n++;
	}
	atomic_fetch_add(&worker_calls, n);
	return NULL;
}

Test(threads, stress_transitions_no_pause, .timeout = 60)
{
	pthread_t th[NWORKERS];
	unsigned char orig[16];
	struct kprobe entry = { .symbol_name = "scn_t_fn", .pre_handler = cnt_pre };
	struct kprobe mid = { .addr = (kprobe_opcode_t *)scn_t_fn_1, .pre_handler = cnt_pre,
			      .post_handler = cnt_post };
	struct kprobe ret = { .addr = (kprobe_opcode_t *)scn_t_fn_2, .pre_handler = cnt_pre,
			      .post_handler = cnt_post };
	struct kprobe entry2 = { .addr = (kprobe_opcode_t *)scn_t_fn, .pre_handler = cnt_pre,
				 .post_handler = cnt_post };
	struct kprobe *batch[] = { &mid, &ret, &entry2 };
	long long deadline = scn_now_ns() + 6LL * 1000000000LL;
	int rounds = 0, errors = 0;

	memcpy(orig, scn_t_fn, sizeof(orig));
	for (int t = 0; t < NWORKERS; t++)
		pthread_create(&th[t], NULL, stress_worker, (void *)(intptr_t)t);

#define STEP(x) do { if (x) errors++; scn_spin_ns(20000); } while (0)
	while (scn_now_ns() < deadline) {
		entry.addr = NULL;
		entry.flags = 0;
		STEP(register_kprobe(&entry));
		STEP(disable_kprobe(&entry));
		STEP(register_kprobes(batch, 3));
		STEP(enable_kprobe(&entry));
		STEP(disable_kprobe(&mid));
		STEP(ukprobes_set_enabled(0));
		STEP(enable_kprobe(&mid));
		STEP(ukprobes_set_enabled(1));
		unregister_kprobe(&entry);
		scn_spin_ns(20000);
		unregister_kprobes(batch, 3);
		rounds++;
	}
#undef STEP
	atomic_store(&stop, 1);
	for (int t = 0; t < NWORKERS; t++)
		pthread_join(th[t], NULL);
	cr_log_info("%d rounds, %lu calls, %lu pre hits", rounds,
		    atomic_load(&worker_calls), atomic_load(&pre_cnt));
	cr_expect_eq(errors, 0, "%d API calls failed", errors);
	cr_expect_gt(rounds, 10, "only %d rounds in 6 s", rounds);
	cr_expect_gt(atomic_load(&pre_cnt), 0, "the probes were never hit");
	cr_expect_eq(atomic_load(&wrong_results), 0, "%lu wrong results of %lu calls",
		     atomic_load(&wrong_results), atomic_load(&worker_calls));
	cr_expect_eq(memcmp(orig, scn_t_fn, sizeof(orig)), 0, "code not restored at the end");
	/* all gone: no more hits */
	unsigned long before = atomic_load(&pre_cnt);
	for (int i = 0; i < 100; i++)
		call_check(i);
	cr_expect_eq(atomic_load(&pre_cnt), before);
}

/* --------------------------------------------------------------------- */
/* Grace period: no handler runs after unregister returns               */
/* --------------------------------------------------------------------- */

struct grace_probe {
	struct kprobe kp;
	atomic_int alive;
};

#define GRACE_MAX 4000
static struct grace_probe grace_pool[GRACE_MAX];
static atomic_ulong grace_violations, grace_handler_runs;

static void grace_check(struct kprobe *p)
{
	struct grace_probe *g = (struct grace_probe *)p;

	atomic_fetch_add_explicit(&grace_handler_runs, 1, memory_order_relaxed);
	if (!atomic_load(&g->alive))
		atomic_fetch_add(&grace_violations, 1);
	scn_spin_ns(20000);	/* widen the window */
	if (!atomic_load(&g->alive))
		atomic_fetch_add(&grace_violations, 1);
}

static int grace_pre(struct kprobe *p, struct pt_regs *regs)
{
	grace_check(p);
	return 0;
}

static void grace_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	grace_check(p);
}

Test(threads, unregister_waits_for_handlers, .timeout = 60)
{
	pthread_t th[NWORKERS];
	long long deadline = scn_now_ns() + 4LL * 1000000000LL;
	int n = 0;

	for (int t = 0; t < NWORKERS; t++)
		pthread_create(&th[t], NULL, stress_worker, (void *)(intptr_t)t);
	while (n < GRACE_MAX && scn_now_ns() < deadline) {
		struct grace_probe *g = &grace_pool[n];
		g->kp.addr = (kprobe_opcode_t *)((n & 1) ? scn_t_fn : scn_t_fn_1);
		g->kp.pre_handler = grace_pre;
		g->kp.post_handler = (n % 3) ? grace_post : NULL;
		atomic_store(&g->alive, 1);
		cr_assert_eq(register_kprobe(&g->kp), 0, "probe %d", n);
		scn_spin_ns(300000);
		unregister_kprobe(&g->kp);
		atomic_store(&g->alive, 0);
		/* the caller may destroy the struct now */
		memset(&g->kp, 0x5a, sizeof(g->kp));
		n++;
	}
	atomic_store(&stop, 1);
	for (int t = 0; t < NWORKERS; t++)
		pthread_join(th[t], NULL);
	cr_log_info("%d probes, %lu handler runs", n, atomic_load(&grace_handler_runs));
	cr_expect_gt(atomic_load(&grace_handler_runs), 0, "the handlers never ran");
	cr_expect_eq(atomic_load(&grace_violations), 0,
		     "a handler ran after unregister_kprobe() returned (%lu times)",
		     atomic_load(&grace_violations));
	cr_expect_eq(atomic_load(&wrong_results), 0);
}

/* --------------------------------------------------------------------- */
/* Reentry on several threads at once                                    */
/* --------------------------------------------------------------------- */

static __thread int depth;
static atomic_ulong nested, inner_wrong;

static int reenter_pre(struct kprobe *p, struct pt_regs *regs)
{
	if (++depth > 1)
		atomic_fetch_add(&nested, 1);
	atomic_fetch_add_explicit(&pre_cnt, 1, memory_order_relaxed);
	if (tfn(5) != 11)	/* hits the probe from inside its handler */
		atomic_fetch_add(&inner_wrong, 1);
	depth--;
	return 0;
}

#define REENTER_CALLS 5000

static void *reenter_worker(void *arg)
{
	for (long i = 0; i < REENTER_CALLS; i++)
		call_check(i);
	return NULL;
}

Test(threads, reentry_is_per_thread, .timeout = 60)
{
	pthread_t th[NWORKERS];
	struct kprobe kp = { .symbol_name = "scn_t_fn", .pre_handler = reenter_pre,
			     .post_handler = cnt_post };

	cr_assert_eq(register_kprobe(&kp), 0);
	for (int t = 0; t < NWORKERS; t++)
		pthread_create(&th[t], NULL, reenter_worker, NULL);
	for (int t = 0; t < NWORKERS; t++)
		pthread_join(th[t], NULL);
	unregister_kprobe(&kp);

	unsigned long total = (unsigned long)NWORKERS * REENTER_CALLS;
	cr_expect_eq(atomic_load(&pre_cnt), total, "pre ran %lu times, expected %lu (one per outer call)",
		     atomic_load(&pre_cnt), total);
	cr_expect_eq(atomic_load(&post_cnt), total, "post ran %lu times", atomic_load(&post_cnt));
	cr_expect_eq(atomic_load(&nested), 0, "a handler ran nested on one thread");
	cr_expect_eq(atomic_load(&inner_wrong), 0, "a nested (missed) hit computed a wrong result");
	cr_expect_eq(atomic_load(&wrong_results), 0);
	/* The kernel bumps nmissed without atomics; here threads race on it,
	 * so only a bound is checked. */
	cr_expect_leq(kp.nmissed, total, "nmissed %lu > %lu", kp.nmissed, total);
	cr_expect_gt(kp.nmissed, 0, "no missed hit counted");
	cr_log_info("nmissed %lu of %lu nested hits", kp.nmissed, total);
}
