/* SPDX-License-Identifier: MIT */
/*
 * kretprobes_opt.c - return probes whose entry is jump-optimized, and the
 * per-thread instance caches (ri_cache.h):
 *   - the optimized entry primes the return (prime.h): the return address
 *     put in place is a prime stub's, not the plain trampoline's, and every
 *     return still lands at the real return address with the right value,
 *     for handlers with and without KPROBE_FLAG_GPR_ONLY;
 *   - recursion and longjmp out of a deep recursion on that path;
 *   - %xmm0 kept for the caller, when one kretprobe on the function uses
 *     general registers only and another does not, on both paths;
 *   - maxactive 1 with the only instance kept by another thread's cache:
 *     taken from there, not missed;
 *   - unregistering while threads keep instances in their caches, again
 *     and again (the sanitizer build checks that no pool leaks).
 *
 * Handlers never assert: they count errors, the test checks the counts.
 */
#include "../support/ukp_test.h"
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <ukprobes.h>
#include "scn_util.h"

extern long kro_add(long a, long b);
extern long kro_rec(long n, void (*cb)(void));
extern double kro_fp(double x, double y);
extern char kro_rec_ret[];

static long (*volatile add_fn)(long, long) = kro_add;
static long (*volatile rec_fn)(long, void (*)(void)) = kro_rec;
static double (*volatile fp_fn)(double, double) = kro_fp;

static atomic_ulong entries, returns, errs;
static volatile uintptr_t put_in_place;	/* the return address seen inside */

#define GPR __attribute__((target("general-regs-only")))
#define INC(c) atomic_fetch_add_explicit(&(c), 1, memory_order_relaxed)

static void reset(void)
{
	atomic_store(&entries, 0);
	atomic_store(&returns, 0);
	atomic_store(&errs, 0);
}

/* Optimization on, and wait until @rp's entry is optimized. */
static void expect_optimized(struct kretprobe *rp)
{
	ukprobes_wait_optimizer();
	cr_assert(rp->kp.flags & KPROBE_FLAG_OPTIMIZED, "the entry of %s was not optimized",
		  rp->kp.symbol_name);
}

/* ------------------------------------------------------------------------ */
/* The primed return: values, return addresses, the address put in place   */
/* ------------------------------------------------------------------------ */

struct add_data {
	long a, b;
	unsigned long ret;	/* the real return address */
};

GPR static int add_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct add_data *d = (struct add_data *)ri->data;

	INC(entries);
	d->a = (long)regs->di;
	d->b = (long)regs->si;
	d->ret = *(unsigned long *)regs->sp;
	if ((unsigned long)ri->ret_addr != d->ret)
		INC(errs);
	return 0;
}

GPR static int add_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct add_data *d = (struct add_data *)ri->data;

	INC(returns);
	if ((long)regs->ax != d->a + d->b || regs->ip != d->ret ||
	    (unsigned long)ri->ret_addr != d->ret)
		INC(errs);
	return 0;
}

/* At the lea after the nop: what the kretprobe left as return address. */
GPR static int inside_pre(struct kprobe *p, struct pt_regs *regs)
{
	put_in_place = *(unsigned long *)regs->sp;
	return 0;
}

static uintptr_t return_address_put_in_place(unsigned int flags, bool optimize)
{
	struct kretprobe rp = { .kp.symbol_name = "kro_add", .kp.flags = flags,
				.handler = add_ret, .entry_handler = add_entry,
				.data_size = sizeof(struct add_data) };
	struct kprobe in = { .addr = (kprobe_opcode_t *)((uintptr_t)kro_add + 5),
			     .pre_handler = inside_pre, .flags = KPROBE_FLAG_GPR_ONLY };
	Dl_info info;
	long bad = 0;

	reset();
	ukprobes_set_optimization(optimize);
	cr_assert_eq(register_kretprobe(&rp), 0);
	int ierr = register_kprobe(&in);

	cr_assert_eq(ierr, 0, "register_kprobe(kro_add+5): %d", ierr);
	if (optimize)
		expect_optimized(&rp);
	for (long i = 0; i < 10000; i++)
		bad += add_fn(i, 3) != i + 3;
	unregister_kprobe(&in);
	unregister_kretprobe(&rp);
	ukprobes_set_optimization(1);
	cr_expect_eq(bad, 0, "%ld wrong results", bad);
	cr_expect_eq(atomic_load(&entries), 10000);
	cr_expect_eq(atomic_load(&returns), 10000);
	cr_expect_eq(atomic_load(&errs), 0, "%lu handler errors (values, return addresses)",
		     atomic_load(&errs));
	cr_expect_eq(rp.nmissed, 0);
	cr_assert(dladdr((void *)put_in_place, &info) && strstr(info.dli_fname, "libukprobes"),
		  "the return address put in place, %#lx, is not in libukprobes",
		  (unsigned long)put_in_place);
	return put_in_place;
}

Test(kretprobes_opt, primed_return_gpr_only)
{
	uintptr_t plain = return_address_put_in_place(KPROBE_FLAG_GPR_ONLY, false);
	uintptr_t primed = return_address_put_in_place(KPROBE_FLAG_GPR_ONLY, true);

	cr_expect_neq(plain, primed, "the optimized entry put the plain trampoline (%#lx) in "
		      "place: its return is not primed", (unsigned long)plain);
}

static int add_entry_c(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	return add_entry(ri, regs);
}

static int add_ret_c(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	char buf[64];

	/* C that uses the vector registers. */
	snprintf(buf, sizeof(buf), "%f", (double)regs->ax / 3.0);
	__asm__ volatile("" : : "r"(buf) : "memory");
	return add_ret(ri, regs);
}

Test(kretprobes_opt, primed_return_default_handlers)
{
	struct kretprobe rp = { .kp.symbol_name = "kro_add", .handler = add_ret_c,
				.entry_handler = add_entry_c,
				.data_size = sizeof(struct add_data) };
	long bad = 0;

	reset();
	cr_assert_eq(register_kretprobe(&rp), 0);
	expect_optimized(&rp);
	for (long i = 0; i < 10000; i++)
		bad += add_fn(i, -7) != i - 7;
	unregister_kretprobe(&rp);
	cr_expect_eq(bad, 0);
	cr_expect_eq(atomic_load(&returns), 10000);
	cr_expect_eq(atomic_load(&errs), 0);
}

/* ------------------------------------------------------------------------ */
/* Recursion and longjmp                                                    */
/* ------------------------------------------------------------------------ */

static sigjmp_buf rec_env;
static volatile uintptr_t outer_site;

static void rec_escape(void)
{
	siglongjmp(rec_env, 1);
}

GPR static int rec_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	INC(returns);
	/* An inner level returns into kro_rec, the outermost to the test. */
	if (regs->ip != (unsigned long)ri->ret_addr ||
	    ((uintptr_t)ri->ret_addr != (uintptr_t)kro_rec_ret &&
	     (uintptr_t)ri->ret_addr != outer_site))
		INC(errs);
	return 0;
}

GPR static int rec_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	INC(entries);
	if (regs->di == 30)	/* the outermost call of the test's */
		outer_site = *(unsigned long *)regs->sp;
	return 0;
}

static SCN_NOINLINE int jump_out(long n)
{
	if (!sigsetjmp(rec_env, 0)) {
		rec_fn(n, rec_escape);
		return 0;
	}
	return 1;
}

Test(kretprobes_opt, recursion_and_longjmp_on_the_primed_path)
{
	struct kretprobe rp = { .kp.symbol_name = "kro_rec", .kp.flags = KPROBE_FLAG_GPR_ONLY,
				.handler = rec_ret, .entry_handler = rec_entry,
				.maxactive = 64 };
	int jumped = 0;
	long bad = 0;

	reset();
	cr_assert_eq(register_kretprobe(&rp), 0);
	expect_optimized(&rp);
	for (int k = 0; k < 100; k++) {
		/* 31 levels, each handled once, in order of return. */
		unsigned long before = atomic_load(&returns);

		bad += rec_fn(30, NULL) != 30 * 31 / 2;
		bad += atomic_load(&returns) != before + 31;
		/* 31 levels abandoned: reclaimed at the next call. */
		jumped += jump_out(30);
	}
	unregister_kretprobe(&rp);
	cr_expect_eq(jumped, 100);
	cr_expect_eq(bad, 0, "%ld wrong results or return counts", bad);
	cr_expect_eq(rp.nmissed, 0, "nmissed %d: instances lost to the longjmps", rp.nmissed);
	cr_expect_eq(atomic_load(&entries), 100 * 62ul);
	cr_expect_eq(atomic_load(&returns), 100 * 31ul);
	cr_expect_eq(atomic_load(&errs), 0, "%lu returns to a wrong address",
		     atomic_load(&errs));
}

/* ------------------------------------------------------------------------ */
/* %xmm0 for the caller, with mixed handlers                                */
/* ------------------------------------------------------------------------ */

GPR static int fp_ret_gpr(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	INC(returns);
	return 0;
}

static int fp_ret_c(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	char buf[96];

	INC(returns);
	snprintf(buf, sizeof(buf), "%f %f %g", 1.0 / 7.0, (double)regs->di * 0.5, 2.5e10);
	__asm__ volatile("" : : "r"(buf) : "memory");
	return 0;
}

static void fp_mixed(bool optimize, bool gpr_first)
{
	struct kretprobe a = { .kp.symbol_name = "kro_fp", .kp.flags = KPROBE_FLAG_GPR_ONLY,
			       .handler = fp_ret_gpr };
	struct kretprobe b = { .kp.symbol_name = "kro_fp", .handler = fp_ret_c };
	long bad = 0;

	reset();
	ukprobes_set_optimization(optimize);
	cr_assert_eq(register_kretprobe(gpr_first ? &a : &b), 0);
	cr_assert_eq(register_kretprobe(gpr_first ? &b : &a), 0);
	if (optimize)
		expect_optimized(&a);
	for (int i = 1; i <= 1000; i++)
		bad += fp_fn(1.5 * i, 4.0) != 6.0 * i;
	unregister_kretprobe(&a);
	unregister_kretprobe(&b);
	ukprobes_set_optimization(1);
	cr_expect_eq(bad, 0, "%ld results changed on the way back (optimize %d, GPR-only "
		     "first %d)", bad, optimize, gpr_first);
	cr_expect_eq(atomic_load(&returns), 2000);
}

Test(kretprobes_opt, fp_value_kept_mixed_handlers)
{
	fp_mixed(false, true);
	fp_mixed(false, false);
	fp_mixed(true, true);
	fp_mixed(true, false);
}

/* ------------------------------------------------------------------------ */
/* Instances kept by other threads                                          */
/* ------------------------------------------------------------------------ */

GPR static int count_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	INC(returns);
	return 0;
}

static pthread_barrier_t keeper_in, keeper_out;

static void *keeper(void *arg)
{
	(void)arg;
	/* One call: the instance goes back to this thread's cache. */
	if (add_fn(1, 2) != 3)
		INC(errs);
	pthread_barrier_wait(&keeper_in);
	pthread_barrier_wait(&keeper_out);	/* alive, not calling */
	return NULL;
}

static void steal_from_a_keeper(bool optimize)
{
	struct kretprobe rp = { .kp.symbol_name = "kro_add", .kp.flags = KPROBE_FLAG_GPR_ONLY,
				.handler = count_ret, .maxactive = 1 };
	pthread_t t;
	long bad = 0;

	reset();
	ukprobes_set_optimization(optimize);
	cr_assert_eq(register_kretprobe(&rp), 0);
	if (optimize)
		expect_optimized(&rp);
	pthread_barrier_init(&keeper_in, NULL, 2);
	pthread_barrier_init(&keeper_out, NULL, 2);
	cr_assert_eq(pthread_create(&t, NULL, keeper, NULL), 0);
	pthread_barrier_wait(&keeper_in);
	/* The pool's one instance sits in the keeper's cache. */
	for (long i = 0; i < 1000; i++)
		bad += add_fn(i, i) != 2 * i;
	pthread_barrier_wait(&keeper_out);
	pthread_join(t, NULL);
	/* The keeper is gone: what it kept went back with it. */
	for (long i = 0; i < 1000; i++)
		bad += add_fn(i, 1) != i + 1;
	unregister_kretprobe(&rp);
	ukprobes_set_optimization(1);
	cr_expect_eq(bad, 0);
	cr_expect_eq(rp.nmissed, 0, "nmissed %d: the instance kept by another thread was "
		     "not taken (optimize %d)", rp.nmissed, optimize);
	cr_expect_eq(atomic_load(&returns), 2001);
	cr_expect_eq(atomic_load(&errs), 0);
}

Test(kretprobes_opt, maxactive_1_instance_in_another_threads_cache)
{
	steal_from_a_keeper(false);
	steal_from_a_keeper(true);
}

#define UC_THREADS 4

static atomic_int uc_stop;

static void *uc_worker(void *arg)
{
	long base = (long)(intptr_t)arg * 1000000;

	while (!atomic_load_explicit(&uc_stop, memory_order_relaxed))
		for (long i = 0; i < 100; i++)
			if (rec_fn(3, NULL) != 6 || add_fn(base, i) != base + i)
				INC(errs);
	return NULL;
}

/*
 * Threads keep calling (their caches full of instances) while kretprobes
 * come and go, 200 times: each unregistration must get every instance
 * back, from the threads' caches too, for its pool to be freed (the
 * sanitizer build reports a pool that is not).
 */
Test(kretprobes_opt, unregister_while_threads_keep_instances, .timeout = 120)
{
	pthread_t th[UC_THREADS];

	reset();
	atomic_store(&uc_stop, 0);
	for (long i = 0; i < UC_THREADS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, uc_worker, (void *)(intptr_t)i), 0);
	for (int k = 0; k < 200; k++) {
		struct kretprobe r1 = { .kp.symbol_name = "kro_add", .handler = count_ret,
					.kp.flags = KPROBE_FLAG_GPR_ONLY, .maxactive = 8 };
		struct kretprobe r2 = { .kp.symbol_name = "kro_rec", .handler = count_ret,
					.maxactive = 32 };
		struct kretprobe *both[2] = { &r1, &r2 };

		cr_assert_eq(register_kretprobes(both, 2), 0);
		if (k % 20 == 0)
			ukprobes_wait_optimizer();
		for (volatile int spin = 0; spin < 20000; spin++)
			;
		/* On a loaded machine the workers may not have run at all in
		 * this short window: the first one waits for a return. */
		for (int w = 0; k == 0 && w < 5000 && !atomic_load(&returns); w++)
			usleep(1000);
		unregister_kretprobes(both, 2);
	}
	atomic_store(&uc_stop, 1);
	for (int i = 0; i < UC_THREADS; i++)
		pthread_join(th[i], NULL);
	cr_expect_eq(atomic_load(&errs), 0, "%lu wrong results", atomic_load(&errs));
	cr_expect_gt(atomic_load(&returns), 0);
}
