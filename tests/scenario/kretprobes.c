/* SPDX-License-Identifier: MIT */
/*
 * kretprobes.c - return probes (register_kretprobe(3)).
 *   - every return: the value (regs_return_value()), ri->ret_addr and
 *     regs->ip against the real call site (labels in kretprobes.S),
 *     get_kretprobe(), ri->fp, ri->data shared with the entry handler;
 *   - maxactive: the default, nmissed when the pool is empty (the entry
 *     handler is skipped too), the 256 calls in flight per thread;
 *   - entry_handler veto;
 *   - recursion: one instance per level, returned in order;
 *   - 4 threads with exact counts;
 *   - longjmp out of a deep recursion: stale instances reclaimed, never
 *     matched, never leaked;
 *   - unregister under load, the struct destroyed right after;
 *   - functions that never return (exit(), pthread_exit()) and fork();
 *   - a kprobe, or a second kretprobe, on the same function;
 *   - a signal handler calling the probed function while it runs;
 *   - __builtin_return_address(0) sees a return stub (as the seeds warn).
 *
 * Handlers never assert: they count errors, the test checks the counts.
 */
#include "../support/ukp_test.h"
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ukprobes.h>
#include "scn_util.h"

typedef long (*fn3_t)(long, long, long);

extern long scn_rp_add(long a, long b);
extern long scn_rp_mul(long a, long b);
extern long scn_rp_call_ptr(void *fn, long a, long b, long c);
extern long scn_rp_call_ptr1(void *fn, long a, long b, long c);
extern long scn_rp_rec(long n);
extern long scn_rp_deep(long n, void (*cb)(void));
extern char scn_rp_site0[], scn_rp_site1[], scn_rp_rec_ret[], scn_rp_deep_ret[];

static long (*volatile call_ptr)(void *, long, long, long) = scn_rp_call_ptr;
static long (*volatile call_ptr1)(void *, long, long, long) = scn_rp_call_ptr1;
static long (*volatile deep_fn)(long, void (*)(void)) = scn_rp_deep;

static atomic_ulong entry_cnt, ret_cnt, errs;
static atomic_ulong err_ret_addr, err_ip, err_value, err_rp, err_data, err_fp;

#define ERR(counter) atomic_fetch_add_explicit(&(counter), 1, memory_order_relaxed)
#define INC(counter) atomic_fetch_add_explicit(&(counter), 1, memory_order_relaxed)

static void expect_no_handler_errors(void)
{
	cr_expect_eq(err_ret_addr, 0, "%lu returns with a wrong ri->ret_addr", (unsigned long)err_ret_addr);
	cr_expect_eq(err_ip, 0, "%lu returns with regs->ip != ri->ret_addr", (unsigned long)err_ip);
	cr_expect_eq(err_value, 0, "%lu wrong return values in the handler", (unsigned long)err_value);
	cr_expect_eq(err_rp, 0, "%lu instances with get_kretprobe(ri) != rp", (unsigned long)err_rp);
	cr_expect_eq(err_data, 0, "%lu instances whose ri->data changed", (unsigned long)err_data);
	cr_expect_eq(err_fp, 0, "%lu instances with a wrong ri->fp", (unsigned long)err_fp);
	cr_expect_eq(errs, 0, "%lu other handler errors", (unsigned long)errs);
}

/* --------------------------------------------------------------------- */
/* 1. Return values and return addresses, for every call                 */
/* --------------------------------------------------------------------- */

static struct kretprobe *cur_rp;
static volatile uintptr_t expect_site;	/* 0: don't know (called from C) */

struct add_data {
	long a, b;
	uintptr_t site;
	unsigned long sp_at_entry;
};

static int add_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct add_data *d = (struct add_data *)ri->data;

	INC(entry_cnt);
	if ((uintptr_t)ri->data % 16)
		ERR(errs);
	if (get_kretprobe(ri) != cur_rp)
		ERR(err_rp);
	d->a = (long)regs->di;
	d->b = (long)regs->si;
	d->site = expect_site;
	d->sp_at_entry = regs->sp;
	if (d->site && (uintptr_t)ri->ret_addr != d->site)
		ERR(err_ret_addr);
	if ((unsigned long)ri->fp != regs->sp)
		ERR(err_fp);
	return 0;
}

static int add_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct add_data *d = (struct add_data *)ri->data;

	INC(ret_cnt);
	if ((long)regs_return_value(regs) != d->a + d->b)
		ERR(err_value);
	if (d->site && (uintptr_t)ri->ret_addr != d->site)
		ERR(err_ret_addr);
	if (regs->ip != (unsigned long)ri->ret_addr)
		ERR(err_ip);
	if (get_kretprobe(ri) != cur_rp)
		ERR(err_rp);
	/* After the ret: the slot that held the return address is popped. */
	if (regs->sp != d->sp_at_entry + 8 || (unsigned long)ri->fp != d->sp_at_entry)
		ERR(err_fp);
	return 0;
}

Test(kretprobes, return_value_and_ret_addr_every_call, .timeout = 60)
{
	struct kretprobe rp = { .kp.symbol_name = "scn_rp_add", .handler = add_ret,
				.entry_handler = add_entry, .maxactive = 4,
				.data_size = sizeof(struct add_data) };
	long (*volatile add)(long, long) = scn_rp_add;
	const long n = 30000;
	long bad = 0;

	cur_rp = &rp;
	cr_assert_eq(register_kretprobe(&rp), 0);
	cr_assert_eq((void *)rp.kp.addr, (void *)scn_rp_add);
	cr_expect_eq(rp.maxactive, 4);
	for (long i = 0; i < n; i++) {
		long a = i * 7 - 1000, b = i ^ 0x5a5a;

		switch (i % 3) {
		case 0:
			expect_site = (uintptr_t)scn_rp_site0;
			bad += call_ptr((void *)scn_rp_add, a, b, 0) != a + b;
			break;
		case 1:
			expect_site = (uintptr_t)scn_rp_site1;
			bad += call_ptr1((void *)scn_rp_add, a, b, 0) != a + b;
			break;
		default:
			expect_site = 0;
			bad += add(a, b) != a + b;
			break;
		}
	}
	unregister_kretprobe(&rp);
	cr_expect_eq(bad, 0, "%ld calls returned a wrong value", bad);
	cr_expect_eq(entry_cnt, (unsigned long)n, "entry handler ran %lu times", (unsigned long)entry_cnt);
	cr_expect_eq(ret_cnt, (unsigned long)n, "return handler ran %lu times", (unsigned long)ret_cnt);
	cr_expect_eq(rp.nmissed, 0);
	expect_no_handler_errors();
	/* Unregistered: nothing runs, the call works. */
	expect_site = (uintptr_t)scn_rp_site0;
	cr_expect_eq(call_ptr((void *)scn_rp_add, 2, 3, 0), 5);
	cr_expect_eq(ret_cnt, (unsigned long)n);
}

/* --------------------------------------------------------------------- */
/* 2. maxactive and nmissed                                              */
/* --------------------------------------------------------------------- */

static int count_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	INC(entry_cnt);
	return 0;
}

static volatile uintptr_t last_ret_addr;

static int count_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	INC(ret_cnt);
	last_ret_addr = (uintptr_t)ri->ret_addr;
	if (regs->ip != (unsigned long)ri->ret_addr)
		ERR(err_ip);
	return 0;
}

Test(kretprobes, maxactive_1_recursion_depth_5, .timeout = 30)
{
	struct kretprobe rp = { .kp.symbol_name = "scn_rp_rec", .handler = count_ret,
				.entry_handler = count_entry, .maxactive = 1 };

	cr_assert_eq(register_kretprobe(&rp), 0);
	/* scn_rp_rec(5): 5 calls in flight at the bottom. */
	cr_expect_eq(call_ptr((void *)scn_rp_rec, 5, 0, 0), 15);
	cr_expect_eq(rp.nmissed, 4, "nmissed %d, expected 4", rp.nmissed);
	cr_expect_eq(entry_cnt, 1, "entry handler ran %lu times (skipped when missed)",
		     (unsigned long)entry_cnt);
	cr_expect_eq(ret_cnt, 1, "return handler ran %lu times", (unsigned long)ret_cnt);
	cr_expect_eq(last_ret_addr, (uintptr_t)scn_rp_site0,
		     "the outermost call holds the instance: ret_addr %#lx", (unsigned long)last_ret_addr);
	/* The instance came back: the next call gets it. */
	cr_expect_eq(call_ptr((void *)scn_rp_rec, 1, 0, 0), 1);
	cr_expect_eq(ret_cnt, 2);
	cr_expect_eq(rp.nmissed, 4);
	unregister_kretprobe(&rp);
	expect_no_handler_errors();
}

Test(kretprobes, maxactive_default, .timeout = 30)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int expect = 2 * cpus > 10 ? (int)(2 * cpus) : 10;
	struct kretprobe rp0 = { .kp.symbol_name = "scn_rp_add", .handler = count_ret };
	struct kretprobe rpn = { .kp.symbol_name = "scn_rp_mul", .handler = count_ret,
				 .maxactive = -7 };

	cr_assert_eq(register_kretprobe(&rp0), 0);
	cr_assert_eq(register_kretprobe(&rpn), 0);
	cr_expect_eq(rp0.maxactive, expect, "maxactive 0 became %d, expected max(10, 2*%ld)",
		     rp0.maxactive, cpus);
	cr_expect_eq(rpn.maxactive, expect, "maxactive -7 became %d", rpn.maxactive);
	unregister_kretprobe(&rp0);
	unregister_kretprobe(&rpn);
}

/* The per-thread stack of calls in flight holds 256 (register_kretprobe(3)). */
Test(kretprobes, calls_in_flight_per_thread_limit, .timeout = 30)
{
	struct kretprobe rp = { .kp.symbol_name = "scn_rp_rec", .handler = count_ret,
				.entry_handler = count_entry, .maxactive = 400 };

	cr_assert_eq(register_kretprobe(&rp), 0);
	cr_expect_eq(call_ptr((void *)scn_rp_rec, 300, 0, 0), 300L * 301 / 2);
	cr_expect_eq(rp.nmissed, 300 - 256, "nmissed %d", rp.nmissed);
	cr_expect_eq(ret_cnt, 256);
	cr_expect_eq(entry_cnt, 256);
	/* Nothing lost: 256 more. */
	cr_expect_eq(call_ptr((void *)scn_rp_rec, 256, 0, 0), 256L * 257 / 2);
	cr_expect_eq(ret_cnt, 512);
	cr_expect_eq(rp.nmissed, 300 - 256);
	unregister_kretprobe(&rp);
	expect_no_handler_errors();
}

/* --------------------------------------------------------------------- */
/* 3. Recursion, entry handler veto, ri->data                            */
/* --------------------------------------------------------------------- */

#define REC_MAX 64

struct rec_data {
	long n;
	unsigned long cookie;
	unsigned char fill[23];		/* odd sizes too */
};

static volatile long ret_order[REC_MAX];
static volatile uintptr_t ret_addrs[REC_MAX];
static atomic_int nret;

static int rec_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct rec_data *d = (struct rec_data *)ri->data;

	INC(entry_cnt);
	d->n = (long)regs->di;
	d->cookie = (unsigned long)d->n * 0x9E3779B97F4A7C15ul;
	memset(d->fill, (int)(d->n & 0xff), sizeof(d->fill));
	return 0;
}

static int rec_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct rec_data *d = (struct rec_data *)ri->data;
	long n = d->n;
	int k;

	INC(ret_cnt);
	if (d->cookie != (unsigned long)n * 0x9E3779B97F4A7C15ul)
		ERR(err_data);
	for (size_t i = 0; i < sizeof(d->fill); i++)
		if (d->fill[i] != (unsigned char)(n & 0xff))
			ERR(err_data);
	if ((long)regs_return_value(regs) != n * (n + 1) / 2)
		ERR(err_value);
	if (regs->ip != (unsigned long)ri->ret_addr)
		ERR(err_ip);
	k = atomic_fetch_add(&nret, 1);
	if (k < REC_MAX) {
		ret_order[k] = n;
		ret_addrs[k] = (uintptr_t)ri->ret_addr;
	}
	return 0;
}

Test(kretprobes, recursion_one_instance_per_level_in_order, .timeout = 30)
{
	struct kretprobe rp = { .kp.symbol_name = "scn_rp_rec", .handler = rec_ret,
				.entry_handler = rec_entry, .maxactive = 20,
				.data_size = sizeof(struct rec_data) };
	const int depth = 12;

	cr_assert_eq(register_kretprobe(&rp), 0);
	for (int rep = 0; rep < 100; rep++) {
		atomic_store(&nret, 0);
		cr_assert_eq(call_ptr((void *)scn_rp_rec, depth, 0, 0), depth * (depth + 1) / 2);
		cr_assert_eq(nret, depth, "rep %d: %d returns", rep, nret);
		for (int k = 0; k < depth; k++) {
			/* innermost first: n = 1, 2, ... depth */
			cr_assert_eq(ret_order[k], k + 1, "rep %d: return %d was level n=%ld",
				     rep, k, ret_order[k]);
			cr_assert_eq(ret_addrs[k], k + 1 < depth ? (uintptr_t)scn_rp_rec_ret
							       : (uintptr_t)scn_rp_site0,
				     "rep %d: level n=%d returned to %#lx", rep, k + 1,
				     (unsigned long)ret_addrs[k]);
		}
	}
	unregister_kretprobe(&rp);
	cr_expect_eq(rp.nmissed, 0);
	cr_expect_eq(entry_cnt, 100ul * depth);
	cr_expect_eq(ret_cnt, 100ul * depth);
	expect_no_handler_errors();
}

static int veto_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct add_data *d = (struct add_data *)ri->data;

	INC(entry_cnt);
	d->a = (long)regs->di;
	d->b = (long)regs->si;
	d->site = 0;
	d->sp_at_entry = regs->sp;
	return d->a & 1;	/* odd a: no return handler for this call */
}

static int veto_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct add_data *d = (struct add_data *)ri->data;

	INC(ret_cnt);
	if (d->a & 1)
		ERR(errs);
	if ((long)regs_return_value(regs) != d->a + d->b)
		ERR(err_value);
	if (regs->ip != (unsigned long)ri->ret_addr || ri->ret_addr != (void *)scn_rp_site0)
		ERR(err_ret_addr);
	return 0;
}

Test(kretprobes, entry_handler_veto, .timeout = 30)
{
	struct kretprobe rp = { .kp.symbol_name = "scn_rp_add", .handler = veto_ret,
				.entry_handler = veto_entry, .maxactive = 1,
				.data_size = sizeof(struct add_data) };
	long bad = 0;

	cr_assert_eq(register_kretprobe(&rp), 0);
	for (long i = 0; i < 10000; i++)
		bad += call_ptr((void *)scn_rp_add, i, 3 * i, 0) != 4 * i;
	unregister_kretprobe(&rp);
	cr_expect_eq(bad, 0);
	cr_expect_eq(entry_cnt, 10000);
	cr_expect_eq(ret_cnt, 5000, "return handler ran %lu times", (unsigned long)ret_cnt);
	/* A vetoed call gives its instance back and is not a miss: with
	 * maxactive 1, every even call still found the instance free. */
	cr_expect_eq(rp.nmissed, 0, "nmissed %d", rp.nmissed);
	expect_no_handler_errors();
}

/* --------------------------------------------------------------------- */
/* 4. Threads: exact counts                                              */
/* --------------------------------------------------------------------- */

#define MT_THREADS 4
#define MT_CALLS 1000000L

static SCN_NOINLINE long mt_target(long x)
{
	__asm__ volatile("");
	return x * 5 + 3;
}

static long (*volatile mt_fn)(long) = mt_target;

static int mt_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	*(long *)ri->data = (long)regs->di;
	INC(entry_cnt);
	return 0;
}

static int mt_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	long x = *(long *)ri->data;

	INC(ret_cnt);
	if ((long)regs_return_value(regs) != x * 5 + 3)
		ERR(err_value);
	if (regs->ip != (unsigned long)ri->ret_addr)
		ERR(err_ip);
	return 0;
}

static atomic_long mt_bad;

static void *mt_worker(void *arg)
{
	long base = (long)(intptr_t)arg * MT_CALLS, bad = 0;

	for (long i = 0; i < MT_CALLS; i++)
		bad += mt_fn(base + i) != (base + i) * 5 + 3;
	atomic_fetch_add(&mt_bad, bad);
	return NULL;
}

Test(kretprobes, four_threads_exact_counts, .timeout = 120)
{
	struct kretprobe rp = { .kp.symbol_name = "mt_target", .handler = mt_ret,
				.entry_handler = mt_entry, .maxactive = 8,
				.data_size = sizeof(long) };
	pthread_t th[MT_THREADS];
	long long t0;

	cr_assert_eq(register_kretprobe(&rp), 0);
	t0 = scn_now_ns();
	for (long i = 0; i < MT_THREADS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, mt_worker, (void *)(intptr_t)i), 0);
	for (int i = 0; i < MT_THREADS; i++)
		pthread_join(th[i], NULL);
	cr_log_info("%d x %ld kretprobed calls: %.2f s", MT_THREADS, MT_CALLS,
		    (scn_now_ns() - t0) / 1e9);
	unregister_kretprobe(&rp);
	cr_expect_eq(mt_bad, 0, "%ld wrong results", (long)mt_bad);
	cr_expect_eq(entry_cnt, MT_THREADS * MT_CALLS, "entry handler ran %lu times",
		     (unsigned long)entry_cnt);
	cr_expect_eq(ret_cnt, MT_THREADS * MT_CALLS, "return handler ran %lu times",
		     (unsigned long)ret_cnt);
	cr_expect_eq(rp.nmissed, 0, "nmissed %d", rp.nmissed);
	expect_no_handler_errors();
}

/* --------------------------------------------------------------------- */
/* 5. longjmp out of a deep recursion                                    */
/* --------------------------------------------------------------------- */

static sigjmp_buf deep_env;

static void deep_escape(void)
{
	siglongjmp(deep_env, 1);
}

/* Call scn_rp_deep(n) and longjmp out from the bottom; 1 if it did. */
static SCN_NOINLINE int jump_out_of(long n)
{
	if (!sigsetjmp(deep_env, 0)) {
		deep_fn(n, deep_escape);
		return 0;
	}
	return 1;
}

static int deep_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	INC(ret_cnt);
	if (regs->ip != (unsigned long)ri->ret_addr)
		ERR(err_ip);
	/* Inner levels return into scn_rp_deep; an outermost call returns
	 * into the test function, never to a stale level's address. */
	last_ret_addr = (uintptr_t)ri->ret_addr;
	return 0;
}

Test(kretprobes, longjmp_out_of_depth_100_then_normal_calls, .timeout = 60)
{
	struct kretprobe rp = { .kp.symbol_name = "scn_rp_deep", .handler = deep_ret,
				.entry_handler = count_entry, .maxactive = 200 };
	long bad = 0, lost = 0, wrong_addr = 0;
	int jumped;

	cr_assert_eq(register_kretprobe(&rp), 0);
	jumped = jump_out_of(99);	/* 100 calls in flight, abandoned */
	cr_expect_eq(entry_cnt, 100);
	cr_expect_eq(ret_cnt, 0, "%lu return handlers ran for the abandoned frames",
		     (unsigned long)ret_cnt);
	for (long i = 0; i < 100000; i++) {
		unsigned long before = ret_cnt;

		last_ret_addr = 0;
		bad += deep_fn(0, NULL) != 0;
		lost += ret_cnt != before + 1;
		wrong_addr += last_ret_addr == (uintptr_t)scn_rp_deep_ret || !last_ret_addr;
	}
	cr_expect(jumped);
	cr_expect_eq(bad, 0, "%ld wrong results", bad);
	cr_expect_eq(lost, 0, "%ld calls whose return handler did not run once", lost);
	cr_expect_eq(wrong_addr, 0, "%ld returns matched to a stale instance", wrong_addr);
	cr_expect_eq(rp.nmissed, 0, "nmissed %d: instances lost to the longjmp", rp.nmissed);
	/* A full-depth call still gets an instance at every level. */
	cr_expect_eq(deep_fn(150, NULL), 150);
	cr_expect_eq(rp.nmissed, 0, "nmissed %d at depth 151", rp.nmissed);
	cr_expect_eq(ret_cnt, 100000ul + 151);
	unregister_kretprobe(&rp);
	expect_no_handler_errors();
}

Test(kretprobes, longjmp_depth_100_1000_times_maxactive_100, .timeout = 60)
{
	struct kretprobe rp = { .kp.symbol_name = "scn_rp_deep", .handler = deep_ret,
				.entry_handler = count_entry, .maxactive = 100 };
	int i;

	cr_assert_eq(register_kretprobe(&rp), 0);
	for (i = 0; i < 1000; i++) {
		if (!jump_out_of(99) || rp.nmissed)
			break;
	}
	cr_expect_eq(i, 1000, "nmissed became %d at iteration %d", rp.nmissed, i);
	cr_expect_eq(rp.nmissed, 0, "nmissed %d: instances leaked", rp.nmissed);
	cr_expect_eq(entry_cnt, 100000, "entry handler ran %lu times", (unsigned long)entry_cnt);
	cr_expect_eq(ret_cnt, 0);
	/* All 100 instances are still usable. */
	cr_expect_eq(deep_fn(99, NULL), 99);
	cr_expect_eq(ret_cnt, 100, "%lu of 100 returns handled", (unsigned long)ret_cnt);
	cr_expect_eq(rp.nmissed, 0);
	unregister_kretprobe(&rp);
	expect_no_handler_errors();
}

/* --------------------------------------------------------------------- */
/* 6. Unregister under load                                              */
/* --------------------------------------------------------------------- */

#define UL_THREADS 3

static atomic_int ul_stop;
static atomic_long ul_bad, ul_calls;
static atomic_ulong ul_started, ul_done, ul_null_rp;

static SCN_NOINLINE long ul_target(long x)
{
	/* Some time inside, so that calls are in flight at unregister. */
	for (volatile int k = 0; k < 200; k++)
		;
	return x * 3 + 7;
}

static long (*volatile ul_fn)(long) = ul_target;

static int ul_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kretprobe *rp = get_kretprobe(ri);

	INC(ul_started);
	/* Reads the struct: it must still be valid while we run.  NULL is
	 * what get_kretprobe(3) says once unregistering began (as in the
	 * kernel, where the handler's own get_kretprobe() can see NULL too:
	 * the trampoline read it before calling us); a pointer it gives must
	 * point at the caller's intact struct. */
	if (!rp)
		INC(ul_null_rp);
	else if (rp->handler != ul_ret || rp->data_size != sizeof(long))
		ERR(err_rp);
	if ((long)regs_return_value(regs) != *(long *)ri->data * 3 + 7)
		ERR(err_value);
	for (volatile int k = 0; k < 100; k++)
		;
	INC(ul_done);
	return 0;
}

static int ul_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	*(long *)ri->data = (long)regs->di;
	return 0;
}

static void *ul_worker(void *arg)
{
	long i = (long)(intptr_t)arg * 1000000000L;

	while (!atomic_load_explicit(&ul_stop, memory_order_relaxed)) {
		if (ul_fn(i) != i * 3 + 7)
			atomic_fetch_add(&ul_bad, 1);
		atomic_fetch_add_explicit(&ul_calls, 1, memory_order_relaxed);
		i++;
	}
	return NULL;
}

Test(kretprobes, unregister_under_load_then_destroy_struct, .timeout = 120)
{
	pthread_t th[UL_THREADS];
	unsigned long after_unreg = 0, after_done = 0, later = 0, grew = 0, ran = 0;

	for (long i = 0; i < UL_THREADS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, ul_worker, (void *)(intptr_t)i), 0);
	for (int round = 0; round < 40; round++) {
		struct kretprobe *rp = malloc(sizeof(*rp));
		unsigned long before;

		cr_assert(rp);
		memset(rp, 0, sizeof(*rp));
		rp->kp.symbol_name = "ul_target";
		rp->handler = ul_ret;
		rp->entry_handler = ul_entry;
		rp->data_size = sizeof(long);
		rp->maxactive = 16;
		before = ul_done;
		cr_assert_eq(register_kretprobe(rp), 0, "round %d", round);
		scn_spin_ns(20 * 1000 * 1000);
		unregister_kretprobe(rp);
		after_unreg = atomic_load(&ul_started);
		after_done = atomic_load(&ul_done);
		ran += ul_done - before > 0;
		/* The caller owns the struct again: scribble over it, free it. */
		memset(rp, 0xff, sizeof(*rp));
		free(rp);
		scn_spin_ns(10 * 1000 * 1000);
		later = atomic_load(&ul_started);
		if (later != after_unreg || atomic_load(&ul_done) != after_done)
			grew++;
	}
	/* Keep calling with no probe for a while. */
	scn_spin_ns(50 * 1000 * 1000);
	atomic_store(&ul_stop, 1);
	for (int i = 0; i < UL_THREADS; i++)
		pthread_join(th[i], NULL);
	cr_log_info("%ld calls, %lu return handlers (%lu saw get_kretprobe() NULL: unregistering)",
		    (long)ul_calls, (unsigned long)ul_done, (unsigned long)ul_null_rp);
	cr_expect_eq(ul_bad, 0, "%ld wrong results", (long)ul_bad);
	cr_expect_eq(grew, 0, "in %lu rounds a return handler ran after "
		     "unregister_kretprobe() returned", grew);
	cr_expect_eq(ul_started, ul_done);
	cr_expect_gt(ran, 30, "the handler ran in only %lu of 40 rounds", ran);
	expect_no_handler_errors();
}

/* Unregistered from inside the probed function, with 6 calls in flight. */
static struct kretprobe *inflight_rp;

static void unregister_and_destroy(void)
{
	unregister_kretprobe(inflight_rp);
	memset(inflight_rp, 0xff, sizeof(*inflight_rp));
	free(inflight_rp);
	inflight_rp = NULL;
}

Test(kretprobes, unregister_with_calls_in_flight, .timeout = 30)
{
	for (int rep = 0; rep < 3; rep++) {
		inflight_rp = calloc(1, sizeof(*inflight_rp));
		cr_assert(inflight_rp);
		inflight_rp->kp.symbol_name = "scn_rp_deep";
		inflight_rp->handler = deep_ret;
		inflight_rp->entry_handler = count_entry;
		cr_assert_eq(register_kretprobe(inflight_rp), 0);
		cr_assert_eq(deep_fn(2, NULL), 2);
		cr_assert_eq(ret_cnt, 3ul * (rep + 1));
		/* 6 calls in flight when the callback unregisters: they return
		 * to the right places, and no handler runs for them. */
		cr_assert_eq(deep_fn(5, unregister_and_destroy), 5);
		cr_assert_eq(ret_cnt, 3ul * (rep + 1), "%lu return handlers ran after "
			     "unregister_kretprobe() returned", ret_cnt - 3ul * (rep + 1));
		cr_assert_eq(deep_fn(5, NULL), 5);
		cr_assert_eq(entry_cnt, 9ul * (rep + 1));
	}
	expect_no_handler_errors();
}

/* A function of the C library, by "object:symbol". */
static int pid_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	INC(ret_cnt);
	last_ret_addr = regs_return_value(regs);
	if (regs->ip != (unsigned long)ri->ret_addr)
		ERR(err_ip);
	return 0;
}

Test(kretprobes, libc_function_by_object_and_symbol, .timeout = 30)
{
	struct kretprobe rp = { .kp.symbol_name = "libc.so.6:getpid", .handler = pid_ret };
	pid_t (*volatile gp)(void) = getpid;
	Dl_info info;

	cr_assert_eq(register_kretprobe(&rp), 0);
	cr_assert(dladdr((void *)rp.kp.addr, &info));
	cr_expect(strstr(info.dli_fname, "libc.so"), "probe in %s", info.dli_fname);
	for (int i = 0; i < 100; i++)
		cr_assert_eq(gp(), (pid_t)syscall(SYS_getpid));
	cr_expect_eq(last_ret_addr, (uintptr_t)syscall(SYS_getpid));
	unregister_kretprobe(&rp);
	cr_expect_eq(ret_cnt, 100);
	cr_expect_eq(rp.nmissed, 0);
	expect_no_handler_errors();
}

/* --------------------------------------------------------------------- */
/* 7. Functions that never return; fork                                  */
/* --------------------------------------------------------------------- */

static SCN_NOINLINE long never_returns(long code)
{
	__asm__ volatile("");
	if (code >= 0)
		exit((int)code);
	return -code;
}

static void exit_hook(void)
{
	/* exit() ran its handlers from inside the probed function: leave
	 * now with the code it was given, before the test runner's own
	 * handlers (this is a forked child of the test). */
	_exit(ret_cnt == 1 && entry_cnt == 2 ? 42 : 3);
}

Test(kretprobes, exit_inside_probed_function, .timeout = 30)
{
	struct kretprobe rp = { .kp.symbol_name = "never_returns", .handler = count_ret,
				.entry_handler = count_entry };
	long (*volatile fn)(long) = never_returns;
	int status = 0;
	pid_t pid;

	cr_assert_eq(register_kretprobe(&rp), 0);
	cr_expect_eq(fn(-5), 5);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		atexit(exit_hook);
		fn(42);
		_exit(4);	/* not reached */
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFEXITED(status), "the child died of signal %d",
		  WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	if (WIFEXITED(status))
		cr_expect_eq(WEXITSTATUS(status), 42, "child exit code %d", WEXITSTATUS(status));
	/* The parent goes on. */
	cr_expect_eq(fn(-6), 6);
	cr_expect_eq(ret_cnt, 2);
	unregister_kretprobe(&rp);
}

/* exit() itself, not an atexit shortcut: a plain program. */
Test(kretprobes, exit_code_through_exit, .timeout = 30)
{
	struct kretprobe rp = { .kp.symbol_name = "never_returns", .handler = count_ret };
	long (*volatile fn)(long) = never_returns;
	int status = 0;
	pid_t pid;

	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		/* The child is a fresh ukprobes user: register there. */
		if (register_kretprobe(&rp))
			_exit(5);
		if (fn(-1) != 1 || ret_cnt != 1)
			_exit(6);
		fflush(NULL);
		fn(17);
		_exit(7);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFEXITED(status), "the child died of signal %d",
		  WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	if (WIFEXITED(status))
		cr_expect_eq(WEXITSTATUS(status), 17, "child exit code %d", WEXITSTATUS(status));
}

static SCN_NOINLINE long fork_target(long x)
{
	pid_t pid = fork();

	return pid < 0 ? -1 : pid == 0 ? x : x + 1;
}

Test(kretprobes, fork_inside_probed_function, .timeout = 30)
{
	struct kretprobe rp = { .kp.symbol_name = "fork_target", .handler = count_ret,
				.entry_handler = count_entry };
	int status = 0;
	long r;

	cr_assert_eq(register_kretprobe(&rp), 0);
	r = call_ptr((void *)fork_target, 10, 0, 0);
	if (r == 10) {
		/* child: its copy of the instance brought it back here */
		_exit(ret_cnt == 1 && last_ret_addr == (uintptr_t)scn_rp_site0 ? 0 : 1);
	}
	cr_assert_eq(r, 11);
	cr_expect_eq(ret_cnt, 1);
	cr_expect_eq(last_ret_addr, (uintptr_t)scn_rp_site0);
	cr_assert_neq(wait(&status), -1);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "child: status %#x", status);
	unregister_kretprobe(&rp);
	expect_no_handler_errors();
}

static SCN_NOINLINE long thread_exit_target(long x)
{
	__asm__ volatile("");
	if (x)
		pthread_exit(NULL);
	return 1;
}

static void *thread_exit_worker(void *arg)
{
	long (*volatile fn)(long) = thread_exit_target;

	fn(1);
	return NULL;
}

/*
 * A thread that ends inside a probed function (pthread_exit) never returns
 * through the trampoline; the kernel gives such instances back when the task
 * exits (kprobe_flush_task()).  With maxactive 1, later calls must still get
 * the instance.
 */
Test(kretprobes, thread_exit_inside_probed_function_gives_instance_back, .timeout = 30)
{
	struct kretprobe rp = { .kp.symbol_name = "thread_exit_target", .handler = count_ret,
				.entry_handler = count_entry, .maxactive = 1 };
	long (*volatile fn)(long) = thread_exit_target;
	pthread_t th;

	cr_assert_eq(register_kretprobe(&rp), 0);
	cr_assert_eq(pthread_create(&th, NULL, thread_exit_worker, NULL), 0);
	pthread_join(th, NULL);
	cr_expect_eq(entry_cnt, 1);
	for (int i = 0; i < 10; i++)
		cr_expect_eq(fn(0), 1);
	cr_expect_eq(rp.nmissed, 0, "nmissed %d: the exited thread's instance leaked",
		     rp.nmissed);
	cr_expect_eq(ret_cnt, 10, "return handler ran %lu times", (unsigned long)ret_cnt);
	unregister_kretprobe(&rp);
}

/* --------------------------------------------------------------------- */
/* 8. A kprobe, or another kretprobe, on the same function              */
/* --------------------------------------------------------------------- */

static atomic_ulong kp_pre, kp_post;

static int same_pre(struct kprobe *p, struct pt_regs *regs)
{
	INC(kp_pre);
	return 0;
}

static void same_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	INC(kp_post);
}

static int mul_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	INC(ret_cnt);
	if (ri->ret_addr != (void *)scn_rp_site0)
		ERR(err_ret_addr);
	if (regs->ip != (unsigned long)scn_rp_site0)
		ERR(err_ip);
	if (regs_return_value(regs) != *(unsigned long *)ri->data)
		ERR(err_value);
	return 0;
}

static int mul_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	INC(entry_cnt);
	*(unsigned long *)ri->data = regs->di * regs->si;
	return 0;
}

static void kprobe_and_kretprobe(bool kprobe_first, bool with_post)
{
	struct kretprobe rp = { .kp.symbol_name = "scn_rp_mul", .handler = mul_ret,
				.entry_handler = mul_entry, .data_size = sizeof(long) };
	struct kprobe kp = { .symbol_name = "scn_rp_mul", .pre_handler = same_pre,
			     .post_handler = with_post ? same_post : NULL };
	const long n = 20000;
	long bad = 0;

	if (kprobe_first) {
		cr_assert_eq(register_kprobe(&kp), 0);
		cr_assert_eq(register_kretprobe(&rp), 0);
	} else {
		cr_assert_eq(register_kretprobe(&rp), 0);
		cr_assert_eq(register_kprobe(&kp), 0);
	}
	cr_assert_eq(kp.addr, rp.kp.addr);
	for (long i = 0; i < n; i++)
		bad += call_ptr((void *)scn_rp_mul, i, 3, 0) != 3 * i;
	cr_expect_eq(bad, 0);
	cr_expect_eq(kp_pre, (unsigned long)n, "kprobe pre_handler ran %lu times", (unsigned long)kp_pre);
	cr_expect_eq(kp_post, with_post ? (unsigned long)n : 0ul, "kprobe post_handler ran %lu times",
		     (unsigned long)kp_post);
	cr_expect_eq(entry_cnt, (unsigned long)n, "kretprobe entry handler ran %lu times",
		     (unsigned long)entry_cnt);
	cr_expect_eq(ret_cnt, (unsigned long)n, "kretprobe return handler ran %lu times",
		     (unsigned long)ret_cnt);
	cr_expect_eq(kp.nmissed, 0);
	cr_expect_eq(rp.nmissed, 0);

	/* Either goes away alone. */
	unregister_kprobe(&kp);
	call_ptr((void *)scn_rp_mul, 2, 3, 0);
	cr_expect_eq(kp_pre, (unsigned long)n);
	cr_expect_eq(ret_cnt, (unsigned long)n + 1);
	unregister_kretprobe(&rp);
	call_ptr((void *)scn_rp_mul, 2, 3, 0);
	cr_expect_eq(ret_cnt, (unsigned long)n + 1);
	expect_no_handler_errors();
}

Test(kretprobes, kprobe_then_kretprobe_same_function, .timeout = 60)
{
	kprobe_and_kretprobe(true, true);
}

Test(kretprobes, kretprobe_then_kprobe_same_function, .timeout = 60)
{
	kprobe_and_kretprobe(false, true);
}

Test(kretprobes, kretprobe_and_boosted_kprobe_same_function, .timeout = 60)
{
	kprobe_and_kretprobe(false, false);
}

static atomic_ulong ret2_cnt;

static int mul_ret2(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	INC(ret2_cnt);
	if (ri->ret_addr != (void *)scn_rp_site0)
		ERR(err_ret_addr);
	if (regs->ip != (unsigned long)scn_rp_site0)
		ERR(err_ip);
	if (regs_return_value(regs) != *(unsigned long *)ri->data)
		ERR(err_value);
	return 0;
}

/*
 * Two kretprobes on one function: each handler sees the real return address
 * (the kernel's trampoline handler gives every instance of a frame the
 * correct one), and both run once per call.
 */
Test(kretprobes, two_kretprobes_same_function, .timeout = 60)
{
	struct kretprobe rp1 = { .kp.symbol_name = "scn_rp_mul", .handler = mul_ret,
				 .entry_handler = mul_entry, .data_size = sizeof(long) };
	struct kretprobe rp2 = { .kp.symbol_name = "scn_rp_mul", .handler = mul_ret2,
				 .entry_handler = mul_entry, .data_size = sizeof(long) };
	long bad = 0;

	cr_assert_eq(register_kretprobe(&rp1), 0);
	cr_assert_eq(register_kretprobe(&rp2), 0);
	for (long i = 0; i < 1000; i++)
		bad += call_ptr((void *)scn_rp_mul, i, 5, 0) != 5 * i;
	unregister_kretprobe(&rp1);
	unregister_kretprobe(&rp2);
	cr_expect_eq(bad, 0);
	cr_expect_eq(entry_cnt, 2000);
	cr_expect_eq(ret_cnt, 1000);
	cr_expect_eq(ret2_cnt, 1000);
	expect_no_handler_errors();
}

/* --------------------------------------------------------------------- */
/* A signal handler calls the probed function while it runs              */
/* --------------------------------------------------------------------- */

static SCN_NOINLINE long sig_target(long x)
{
	if (x == 1)
		raise(SIGUSR1);
	return x * 10;
}

static volatile long sig_nested_result;

static void on_usr1(int sig)
{
	sig_nested_result = call_ptr1((void *)sig_target, 2, 0, 0);
}

static int sig_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	*(long *)ri->data = (long)regs->di;
	INC(entry_cnt);
	return 0;
}

static int sig_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	long x = *(long *)ri->data;
	int k = atomic_fetch_add(&nret, 1);

	if (k < REC_MAX) {
		ret_order[k] = x;
		ret_addrs[k] = (uintptr_t)ri->ret_addr;
	}
	if ((long)regs_return_value(regs) != x * 10)
		ERR(err_value);
	if (regs->ip != (unsigned long)ri->ret_addr)
		ERR(err_ip);
	INC(ret_cnt);
	return 0;
}

static void signal_nested(bool altstack)
{
	struct kretprobe rp = { .kp.symbol_name = "sig_target", .handler = sig_ret,
				.entry_handler = sig_entry, .data_size = sizeof(long) };
	struct sigaction sa = { .sa_handler = on_usr1 };
	static char stack[64 * 1024];

	if (altstack) {
		stack_t ss = { .ss_sp = stack, .ss_size = sizeof(stack) };

		cr_assert_eq(sigaltstack(&ss, NULL), 0);
		sa.sa_flags = SA_ONSTACK;
	}
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	cr_assert_eq(register_kretprobe(&rp), 0);
	for (int rep = 0; rep < 50; rep++) {
		atomic_store(&nret, 0);
		cr_assert_eq(call_ptr((void *)sig_target, 1, 0, 0), 10);
		cr_assert_eq(sig_nested_result, 20);
		cr_assert_eq(nret, 2, "%d returns", nret);
		cr_expect_eq(ret_order[0], 2);
		cr_expect_eq(ret_addrs[0], (uintptr_t)scn_rp_site1);
		cr_expect_eq(ret_order[1], 1);
		cr_expect_eq(ret_addrs[1], (uintptr_t)scn_rp_site0);
	}
	unregister_kretprobe(&rp);
	cr_expect_eq(rp.nmissed, 0);
	expect_no_handler_errors();
}

Test(kretprobes, signal_handler_calls_probed_function, .timeout = 30)
{
	signal_nested(false);
}

Test(kretprobes, signal_handler_on_altstack_calls_probed_function, .timeout = 30)
{
	signal_nested(true);
}

/* --------------------------------------------------------------------- */
/* 10. __builtin_return_address(0) sees a return stub                   */
/* --------------------------------------------------------------------- */

static SCN_NOINLINE long whence(long unused)
{
	return (long)__builtin_return_address(0);
}

Test(kretprobes, builtin_return_address_is_a_return_stub, .timeout = 30)
{
	struct kretprobe rp = { .kp.symbol_name = "whence", .handler = count_ret };
	uintptr_t ra1, ra2;
	Dl_info info;

	/* Unprobed: the real return address. */
	cr_assert_eq(call_ptr((void *)whence, 0, 0, 0), (long)scn_rp_site0);
	cr_assert_eq(register_kretprobe(&rp), 0);
	ra1 = (uintptr_t)call_ptr((void *)whence, 0, 0, 0);
	ra2 = (uintptr_t)call_ptr1((void *)whence, 0, 0, 0);
	/* The handler (and the caller) still see the real one. */
	cr_expect_eq(last_ret_addr, (uintptr_t)scn_rp_site1);
	cr_expect_eq(ret_cnt, 2);
	cr_expect_neq(ra1, (uintptr_t)scn_rp_site0,
		      "__builtin_return_address(0) in a kretprobed function is the caller");
	/* This thread's return stub for its first call in flight, on either
	 * path (the optimizer may finish between the calls): code ukprobes
	 * made at run time, in no loaded object. */
	cr_expect_eq(ra1, ra2, "two calls at the same depth, two return addresses: %#lx %#lx",
		     (unsigned long)ra1, (unsigned long)ra2);
	cr_expect(!dladdr((void *)ra1, &info) || !info.dli_fname,
		  "the return stub %#lx is in %s", (unsigned long)ra1, info.dli_fname);
	cr_expect(scn_in_anonymous_text(ra1), "%#lx is not in code made at run time",
		  (unsigned long)ra1);
	unregister_kretprobe(&rp);
	cr_expect_eq(call_ptr((void *)whence, 0, 0, 0), (long)scn_rp_site0);
	expect_no_handler_errors();
}

/* --------------------------------------------------------------------- */
/* What the caller sees after the return handler                         */
/* --------------------------------------------------------------------- */

static SCN_NOINLINE double fp_target(double x, long n)
{
	return x * (double)n + 0.25;
}

static int fp_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	char buf[64];

	INC(ret_cnt);
	/* Handlers are C: they may use the vector registers (formatting a
	 * double does), like the breakpoint path's handlers. */
	snprintf(buf, sizeof(buf), "%f %f", (double)regs->di * 3.25, 1.0 / 3.0);
	__asm__ volatile("" : : "r"(buf) : "memory");
	return 0;
}

Test(kretprobes, return_handler_keeps_fp_return_value, .timeout = 30)
{
	struct kretprobe rp = { .kp.symbol_name = "fp_target", .handler = fp_ret };
	double (*volatile fn)(double, long) = fp_target;

	cr_assert_eq(register_kretprobe(&rp), 0);
	for (long i = 1; i <= 100; i++) {
		double r = fn(1.5 * (double)i, i);

		cr_assert_eq(r, 1.5 * (double)i * (double)i + 0.25,
			     "call %ld returned %g: xmm0 changed by the return handler", i, r);
	}
	unregister_kretprobe(&rp);
	cr_expect_eq(ret_cnt, 100);
}

static SCN_NOINLINE long errno_target(long e)
{
	errno = (int)e;
	return e;
}

static volatile int errno_in_handler;

static int errno_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	INC(ret_cnt);
	errno_in_handler = errno;
	close(-1);		/* EBADF */
	return 0;
}

Test(kretprobes, return_handler_sees_and_keeps_errno, .timeout = 30)
{
	struct kretprobe rp = { .kp.symbol_name = "errno_target", .handler = errno_ret };
	long (*volatile fn)(long) = errno_target;

	cr_assert_eq(register_kretprobe(&rp), 0);
	fn(ERANGE);
	cr_expect_eq(errno_in_handler, ERANGE, "the handler saw errno %d", errno_in_handler);
	cr_expect_eq(errno, ERANGE, "the caller saw errno %d after the return handler", errno);
	unregister_kretprobe(&rp);
	cr_expect_eq(ret_cnt, 1);
}

static int ax_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	INC(ret_cnt);
	regs->ax = 1000;	/* the caller gets 1000 */
	return 0;
}

Test(kretprobes, return_handler_changes_return_value, .timeout = 30)
{
	struct kretprobe rp = { .kp.symbol_name = "scn_rp_add", .handler = ax_ret };

	cr_assert_eq(register_kretprobe(&rp), 0);
	cr_expect_eq(call_ptr((void *)scn_rp_add, 1, 2, 0), 1000);
	unregister_kretprobe(&rp);
	cr_expect_eq(call_ptr((void *)scn_rp_add, 1, 2, 0), 3);
}

/* --------------------------------------------------------------------- */
/* Registration: errors, batches, enable/disable, listing                */
/* --------------------------------------------------------------------- */

Test(kretprobes, not_at_function_entry, .timeout = 30)
{
	struct kretprobe rp = { .handler = count_ret };

	rp.kp.addr = (kprobe_opcode_t *)scn_rp_mul + 3;	/* imul, not the entry */
	cr_expect_eq(register_kretprobe(&rp), -EINVAL);
	rp.kp.addr = NULL;
	rp.kp.symbol_name = "scn_rp_mul";
	rp.kp.offset = 3;
	cr_expect_eq(register_kretprobe(&rp), -EINVAL);
	rp.kp.symbol_name = "scn_rp_no_such_function";
	rp.kp.offset = 0;
	cr_expect_eq(register_kretprobe(&rp), -ENOENT);
	rp.kp.symbol_name = "scn_rp_mul";
	rp.kp.addr = (kprobe_opcode_t *)scn_rp_mul;
	cr_expect_eq(register_kretprobe(&rp), -EINVAL, "both addr and symbol_name");
	/* Nothing is left behind; the struct is still usable. */
	rp.kp.addr = NULL;
	cr_assert_eq(register_kretprobe(&rp), 0);
	cr_expect_eq(call_ptr((void *)scn_rp_mul, 6, 7, 0), 42);
	cr_expect_eq(ret_cnt, 1);
	unregister_kretprobe(&rp);
}

Test(kretprobes, register_twice_keeps_first_registration, .timeout = 30)
{
	struct kretprobe rp = { .kp.symbol_name = "scn_rp_mul", .handler = mul_ret,
				.entry_handler = mul_entry, .data_size = sizeof(long),
				.maxactive = 3 };

	cr_assert_eq(register_kretprobe(&rp), 0);
	cr_expect_eq(call_ptr((void *)scn_rp_mul, 6, 7, 0), 42);
	cr_expect_eq(register_kretprobe(&rp), -EINVAL);
	/* The first registration still works. */
	cr_expect_eq(call_ptr((void *)scn_rp_mul, 6, 8, 0), 48);
	cr_expect_eq(ret_cnt, 2);
	cr_expect_eq(rp.maxactive, 3);
	unregister_kretprobe(&rp);
	expect_no_handler_errors();
}

Test(kretprobes, batch_register_unregister, .timeout = 30)
{
	struct kretprobe a = { .kp.symbol_name = "scn_rp_add", .handler = count_ret };
	struct kretprobe m = { .kp.symbol_name = "scn_rp_mul", .handler = count_ret };
	struct kretprobe bad = { .kp.symbol_name = "scn_rp_mul", .kp.offset = 3,
				 .handler = count_ret };
	struct kretprobe *ok[] = { &a, &m }, *fails[] = { &a, &m, &bad };
	char buf[4096] = "";
	FILE *f;

	cr_expect_eq(register_kretprobes(fails, 3), -EINVAL);
	cr_expect_eq(call_ptr((void *)scn_rp_add, 1, 2, 0), 3);
	cr_expect_eq(call_ptr((void *)scn_rp_mul, 2, 2, 0), 4);
	cr_expect_eq(ret_cnt, 0, "a failed batch left a kretprobe registered");
	f = fmemopen(buf, sizeof(buf) - 1, "w");
	cr_assert(f);
	cr_expect_eq(ukprobes_print_list(f), 0);
	fclose(f);

	cr_assert_eq(register_kretprobes(ok, 2), 0);
	cr_expect_eq(call_ptr((void *)scn_rp_add, 1, 2, 0), 3);
	cr_expect_eq(call_ptr((void *)scn_rp_mul, 2, 2, 0), 4);
	cr_expect_eq(ret_cnt, 2);
	unregister_kretprobes(ok, 2);
	cr_expect_eq(call_ptr((void *)scn_rp_add, 1, 2, 0), 3);
	cr_expect_eq(ret_cnt, 2);
}

static void disable_cb(void)
{
	disable_kretprobe(cur_rp);
}

Test(kretprobes, enable_disable, .timeout = 30)
{
	struct kretprobe rp = { .kp.symbol_name = "scn_rp_deep", .handler = count_ret,
				.entry_handler = count_entry };

	cur_rp = &rp;
	cr_assert_eq(register_kretprobe(&rp), 0);
	cr_expect_eq(deep_fn(0, NULL), 0);
	cr_expect_eq(ret_cnt, 1);
	cr_expect_eq(disable_kretprobe(&rp), 0);
	cr_expect(kprobe_disabled(&rp.kp));
	cr_expect_eq(deep_fn(3, NULL), 3);
	cr_expect_eq(entry_cnt, 1);
	cr_expect_eq(ret_cnt, 1);
	cr_expect_eq(enable_kretprobe(&rp), 0);
	cr_expect_eq(deep_fn(3, NULL), 3);
	cr_expect_eq(entry_cnt, 5);
	cr_expect_eq(ret_cnt, 5);
	/* Disabled while 6 calls are in flight: they were set up, their
	 * return handlers run (the kernel's trampoline handler does not look
	 * at the disabled flag). */
	cr_expect_eq(deep_fn(5, disable_cb), 5);
	cr_expect_eq(entry_cnt, 11);
	cr_expect_eq(ret_cnt, 11, "return handler ran %lu times", (unsigned long)ret_cnt);
	cr_expect_eq(deep_fn(5, NULL), 5);
	cr_expect_eq(ret_cnt, 11);
	unregister_kretprobe(&rp);
	cr_expect_eq(enable_kretprobe(&rp), -EINVAL);
}

Test(kretprobes, listing_shows_r, .timeout = 30)
{
	struct kretprobe rp = { .kp.symbol_name = "scn_rp_mul", .handler = count_ret };
	struct kprobe kp = { .symbol_name = "scn_rp_mul", .pre_handler = same_pre };
	char buf[4096] = "", want[256];
	FILE *f;

	cr_assert_eq(register_kretprobe(&rp), 0);
	cr_assert_eq(register_kprobe(&kp), 0);
	f = fmemopen(buf, sizeof(buf) - 1, "w");
	cr_assert(f);
	cr_expect_eq(ukprobes_print_list(f), 2);
	fclose(f);
	snprintf(want, sizeof(want), "%016lx  r  %s:scn_rp_mul+0x0", (unsigned long)rp.kp.addr,
		 scn_exe_name());
	cr_expect(strstr(buf, want), "no \"%s\" in:\n%s", want, buf);
	snprintf(want, sizeof(want), "%016lx  k  %s:scn_rp_mul+0x0", (unsigned long)kp.addr,
		 scn_exe_name());
	cr_expect(strstr(buf, want), "no \"%s\" in:\n%s", want, buf);
	disable_kretprobe(&rp);
	f = fmemopen(buf, sizeof(buf) - 1, "w");
	ukprobes_print_list(f);
	fclose(f);
	snprintf(want, sizeof(want), "  r  %s:scn_rp_mul+0x0  [DISABLED]", scn_exe_name());
	cr_expect(strstr(buf, want), "no \"%s\" in:\n%s", want, buf);
	unregister_kprobe(&kp);
	unregister_kretprobe(&rp);
}

/* ---------------------------------------------------------------------- */
/* An optimized entry (no signal frame) still tells calls on the signal   */
/* stack from calls on the thread's stack (sigaltstack() is noted).       */
/* ---------------------------------------------------------------------- */

static atomic_long alt_rets;

__attribute__((noinline, noipa)) int rp_alt_target(int x)
{
	if (x == 1)
		raise(SIGUSR1);		/* the handler calls us again, on its stack */
	return x + 1;
}

static int alt_ret_handler(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	atomic_fetch_add(&alt_rets, 1);
	return 0;
}

static void alt_usr1(int sig)
{
	int (*volatile f)(int) = rp_alt_target;

	(void)sig;
	f(2);
}

Test(kretprobes, optimized_entry_with_signal_stack_above, .timeout = 30)
{
	/* The signal stack lies in this frame, above the probed function's
	 * frames: an entry on it must not retire the one below. */
	static char altmem_guard;
	char altmem[1 << 16];
	stack_t ss = { .ss_sp = altmem, .ss_size = sizeof(altmem), .ss_flags = 0 };
	struct sigaction sa = { 0 };
	struct kretprobe rp = { .kp.symbol_name = "rp_alt_target", .handler = alt_ret_handler,
				.kp.flags = KPROBE_FLAG_GPR_ONLY, .maxactive = 8 };
	int (*volatile f)(int) = rp_alt_target;

	(void)altmem_guard;
	cr_assert_eq(sigaltstack(&ss, NULL), 0);
	sa.sa_handler = alt_usr1;
	sa.sa_flags = SA_ONSTACK;
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	cr_assert_eq(register_kretprobe(&rp), 0);
	ukprobes_wait_optimizer();
	cr_expect(rp.kp.flags & KPROBE_FLAG_OPTIMIZED, "the entry was not optimized");
	for (int i = 0; i < 100; i++)
		cr_assert_eq(f(1), 2);
	unregister_kretprobe(&rp);
	cr_expect_eq(atomic_load(&alt_rets), 200, "return handlers: %ld", atomic_load(&alt_rets));
	cr_expect_eq(rp.nmissed, 0);
	ss.ss_flags = SS_DISABLE;
	sigaltstack(&ss, NULL);
}
