/* SPDX-License-Identifier: MIT */
/*
 * jprobes.c - jump probes (register_jprobe(3)).
 *   - the entry function sees the six register arguments and the stack
 *     arguments; the probed function then runs on its own arguments and
 *     returns its normal result, whatever the entry did to its copy of the
 *     stack arguments, the argument registers, the callee-saved registers
 *     or the vector registers;
 *   - one jprobe per function (-EEXIST), at a function entry only (-EINVAL);
 *   - probes hit inside the entry function are missed (nmissed);
 *   - a kprobe or a kretprobe on the same function, in either order;
 *   - threads, enable/disable, unregister while an entry function runs;
 *   - the listing shows 'j'.
 */
#include "../support/ukp_test.h"
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <ukprobes.h>
#include "scn_util.h"

typedef long (*f8_t)(long, long, long, long, long, long, long, long);

extern long scn_jp_f8(long a1, long a2, long a3, long a4, long a5, long a6,
		      long a7, long a8);
extern long scn_jp_clobber_entry(long a1, long a2, long a3, long a4, long a5,
				 long a6, long a7, long a8);
extern long scn_jp_check_regs(f8_t fn, long base);
extern double scn_jp_fd(double x, double y, long n);
extern double scn_jp_fd_clobber_entry(double x, double y, long n);
extern volatile long scn_jp_seen[8];
extern volatile int scn_jp_regs_ok;

static volatile f8_t f8 = scn_jp_f8;
static long (*volatile check_regs)(f8_t, long) = scn_jp_check_regs;

static long f8_expect(long a1, long a2, long a3, long a4, long a5, long a6,
		      long a7, long a8)
{
	/* modulo 2^64, as the assembly computes it */
	return (long)((unsigned long)a1 + 2ul * a2 + 3ul * a3 + 4ul * a4 + 5ul * a5 +
		      6ul * a6 + 7ul * a7 + 8ul * a8);
}

static atomic_ulong entries, arg_errors;

/* --------------------------------------------------------------------- */
/* Arguments                                                             */
/* --------------------------------------------------------------------- */

static volatile long seen[8];

/* The entry has the probed function's prototype (the mirror principle). */
static long jp_f8_entry(long a1, long a2, long a3, long a4, long a5, long a6,
			long a7, long a8)
{
	atomic_fetch_add(&entries, 1);
	seen[0] = a1; seen[1] = a2; seen[2] = a3; seen[3] = a4;
	seen[4] = a5; seen[5] = a6; seen[6] = a7; seen[7] = a8;
	/* Always end with a call to jprobe_return(). */
	jprobe_return();
	return 0;
}

Test(jprobes, entry_sees_register_and_stack_arguments, .timeout = 30)
{
	struct jprobe jp = { .entry = jp_f8_entry, .kp.symbol_name = "scn_jp_f8" };
	long bad = 0, bad_args = 0;

	cr_assert_eq(register_jprobe(&jp), 0);
	cr_assert_eq((void *)jp.kp.addr, (void *)scn_jp_f8);
	for (long i = 0; i < 2000; i++) {
		long a[8];

		for (int k = 0; k < 8; k++)
			a[k] = (long)((unsigned long)(i + 1) * 0x9E3779B97F4A7C15ul >> (k * 3)) - k;
		bad += f8(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]) !=
		       f8_expect(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
		for (int k = 0; k < 8; k++)
			bad_args += seen[k] != a[k];
	}
	unregister_jprobe(&jp);
	cr_expect_eq(entries, 2000, "entry ran %lu times", (unsigned long)entries);
	cr_expect_eq(bad, 0, "%ld calls returned a wrong result", bad);
	cr_expect_eq(bad_args, 0, "%ld arguments seen wrong by the entry", bad_args);
	cr_expect_eq(jp.kp.nmissed, 0);
	cr_expect_eq(f8(1, 1, 1, 1, 1, 1, 1, 1), 36);
	cr_expect_eq(entries, 2000);
}

/*
 * A C entry that writes its stack arguments: gcc keeps a stack parameter in
 * its incoming slot, which belongs to the caller's frame (the reason the
 * seeds' jprobes save and restore the top of the stack).
 */
static long jp_f8_scribble_entry(long a1, long a2, long a3, long a4, long a5,
				 long a6, long a7, long a8)
{
	atomic_fetch_add(&entries, 1);
	seen[6] = a7;
	seen[7] = a8;
	*(volatile long *)&a7 = 7777;
	*(volatile long *)&a8 = 8888;
	a1 = a2 = a3 = 0;
	__asm__ volatile("" : : "r"(a1), "r"(a2), "r"(a3) : "memory");
	jprobe_return();
	return 0;
}

Test(jprobes, entry_writing_its_stack_arguments_changes_nothing, .timeout = 30)
{
	struct jprobe jp = { .entry = jp_f8_scribble_entry, .kp.symbol_name = "scn_jp_f8" };

	cr_assert_eq(register_jprobe(&jp), 0);
	for (long i = 0; i < 100; i++) {
		long r = f8(i, 1, 2, 3, 4, 5, 100 + i, 200 + i);

		cr_assert_eq(seen[6], 100 + i);
		cr_assert_eq(seen[7], 200 + i);
		cr_assert_eq(r, f8_expect(i, 1, 2, 3, 4, 5, 100 + i, 200 + i),
			     "call %ld: %ld (the function saw the entry's stack writes?)", i, r);
	}
	unregister_jprobe(&jp);
	cr_expect_eq(entries, 100);
}

Test(jprobes, hostile_entry_changes_nothing, .timeout = 30)
{
	struct jprobe jp = { .entry = scn_jp_clobber_entry, .kp.symbol_name = "scn_jp_f8" };

	/* Unprobed first: the harness itself is right. */
	scn_jp_regs_ok = 0;
	cr_assert_eq(check_regs(scn_jp_f8, 10), 36 * 10 + 204);
	cr_assert_eq(scn_jp_regs_ok, 1);

	cr_assert_eq(register_jprobe(&jp), 0);
	for (long base = 0; base < 100; base++) {
		scn_jp_regs_ok = 0;
		long r = check_regs(scn_jp_f8, base);

		cr_assert_eq(r, 36 * base + 204, "base %ld: %ld", base, r);
		cr_assert_eq(scn_jp_regs_ok, 1,
			     "base %ld: callee-saved registers or the caller's frame changed", base);
		for (int k = 0; k < 8; k++)
			cr_assert_eq(scn_jp_seen[k], base + k + 1, "base %ld: arg %d seen as %ld",
				     base, k + 1, scn_jp_seen[k]);
	}
	unregister_jprobe(&jp);
}

/* --------------------------------------------------------------------- */
/* Vector registers (floating-point arguments)                           */
/* --------------------------------------------------------------------- */

static volatile double seen_x, seen_y;
static volatile long seen_n;

static double jp_fd_entry(double x, double y, long n)
{
	char buf[64];

	seen_x = x;
	seen_y = y;
	seen_n = n;
	/* Real entries format and compute; both use the vector registers. */
	snprintf(buf, sizeof(buf), "%f %f %ld", x * 3.5, y / 7.0, n);
	__asm__ volatile("" : : "r"(buf) : "memory");
	jprobe_return();
	return 0;
}

static void fp_args(void *entry)
{
	struct jprobe jp = { .entry = entry, .kp.symbol_name = "scn_jp_fd" };
	double (*volatile fd)(double, double, long) = scn_jp_fd;

	cr_assert_eq(register_jprobe(&jp), 0);
	for (long i = 1; i <= 100; i++) {
		double x = 1.25 * (double)i, y = -0.5 * (double)i;
		double r = fd(x, y, i + 1);

		if (entry == (void *)jp_fd_entry) {
			cr_assert_eq(seen_x, x);
			cr_assert_eq(seen_y, y);
			cr_assert_eq(seen_n, i + 1);
		} else {
			cr_assert_eq(((volatile double *)scn_jp_seen)[0], x);
			cr_assert_eq(((volatile double *)scn_jp_seen)[1], y);
		}
		cr_assert_eq(r, x * (double)(i + 1) + y,
			     "call %ld: %g, expected %g: the function's xmm arguments changed",
			     i, r, x * (double)(i + 1) + y);
	}
	unregister_jprobe(&jp);
}

Test(jprobes, fp_arguments_c_entry, .timeout = 30)
{
	fp_args((void *)jp_fd_entry);
}

Test(jprobes, fp_arguments_entry_clobbers_xmm, .timeout = 30)
{
	fp_args((void *)scn_jp_fd_clobber_entry);
}

/* --------------------------------------------------------------------- */
/* Registration rules                                                    */
/* --------------------------------------------------------------------- */

static SCN_NOINLINE long jp_target(long x)
{
	__asm__ volatile("");
	return x * 2 + 1;
}

static long (*volatile jt)(long) = jp_target;
static atomic_ulong entries2;

static long jp_target_entry(long x)
{
	atomic_fetch_add(&entries, 1);
	if (x < 0)
		atomic_fetch_add(&arg_errors, 1);
	jprobe_return();
	return 0;
}

static long jp_target_entry2(long x)
{
	atomic_fetch_add(&entries2, 1);
	jprobe_return();
	return 0;
}

Test(jprobes, one_jprobe_per_function, .timeout = 30)
{
	struct jprobe a = { .entry = jp_target_entry, .kp.symbol_name = "jp_target" };
	struct jprobe b = { .entry = jp_target_entry2, .kp.symbol_name = "jp_target" };
	struct jprobe c = { .entry = jp_target_entry2, .kp.addr = (kprobe_opcode_t *)jp_target };
	struct jprobe *batch[] = { &b, &c };

	cr_assert_eq(register_jprobe(&a), 0);
	cr_expect_eq(register_jprobe(&b), -EEXIST);
	cr_expect_eq(register_jprobe(&c), -EEXIST);
	cr_expect_eq(jt(4), 9);
	cr_expect_eq(entries, 1);
	cr_expect_eq(entries2, 0);
	unregister_jprobe(&a);
	/* Free again: but not twice in one batch. */
	cr_expect_eq(register_jprobes(batch, 2), -EEXIST);
	cr_expect_eq(jt(4), 9);
	cr_expect_eq(entries2, 0, "a failed batch left a jprobe registered");
	cr_assert_eq(register_jprobe(&b), 0);
	cr_expect_eq(jt(4), 9);
	cr_expect_eq(entries2, 1);
	unregister_jprobe(&b);
}

Test(jprobes, function_entry_only, .timeout = 30)
{
	struct jprobe jp = { .entry = jp_f8_entry };

	jp.kp.addr = (kprobe_opcode_t *)scn_jp_f8 + 3;	/* lea, the 2nd instruction */
	cr_expect_eq(register_jprobe(&jp), -EINVAL);
	jp.kp.addr = NULL;
	jp.kp.symbol_name = "scn_jp_f8";
	jp.kp.offset = 3;
	cr_expect_eq(register_jprobe(&jp), -EINVAL);
	jp.kp.offset = 0;
	jp.entry = NULL;
	cr_expect_eq(register_jprobe(&jp), -EINVAL, "no entry function");
	jp.entry = jp_f8_entry;
	jp.kp.symbol_name = "scn_jp_no_such_function";
	cr_expect_eq(register_jprobe(&jp), -ENOENT);
	jp.kp.symbol_name = "scn_jp_f8";
	cr_assert_eq(register_jprobe(&jp), 0);
	cr_expect_eq(register_jprobe(&jp), -EINVAL, "registered twice");
	cr_expect_eq(f8(1, 1, 1, 1, 1, 1, 1, 1), 36);
	cr_expect_eq(entries, 1);
	unregister_jprobe(&jp);
}

/* --------------------------------------------------------------------- */
/* Probes hit inside the entry function are missed                       */
/* --------------------------------------------------------------------- */

static SCN_NOINLINE long helper(long x)
{
	__asm__ volatile("");
	return x + 1;
}

static long (*volatile helper_fn)(long) = helper;
static atomic_ulong helper_hits;

static int helper_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add(&helper_hits, 1);
	return 0;
}

static long jp_calls_helper_entry(long x)
{
	atomic_fetch_add(&entries, 1);
	if (helper_fn(x) != x + 1)
		atomic_fetch_add(&arg_errors, 1);
	jprobe_return();
	return 0;
}

Test(jprobes, probes_hit_inside_entry_are_missed, .timeout = 30)
{
	struct jprobe jp = { .entry = jp_calls_helper_entry, .kp.symbol_name = "jp_target" };
	/* Not on this stack: what the entry's callees write within the 128
	 * bytes above the probed function's stack pointer (this frame) is
	 * undone when jprobe_return() restores them (register_jprobe(3)). */
	static struct kprobe kp = { .symbol_name = "helper", .pre_handler = helper_pre };

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert_eq(register_jprobe(&jp), 0);
	for (long i = 0; i < 100; i++)
		cr_assert_eq(jt(i), 2 * i + 1);
	cr_expect_eq(entries, 100);
	cr_expect_eq(helper_hits, 0, "the kprobe's handler ran %lu times inside the entry",
		     (unsigned long)helper_hits);
	cr_expect_eq(kp.nmissed, 100, "kprobe nmissed %lu", kp.nmissed);
	cr_expect_eq(arg_errors, 0, "the missed probe's instruction ran wrongly");
	/* Outside the entry, the kprobe runs. */
	cr_expect_eq(helper_fn(1), 2);
	cr_expect_eq(helper_hits, 1);
	unregister_jprobe(&jp);
	unregister_kprobe(&kp);
}

/* --------------------------------------------------------------------- */
/* A kprobe or a kretprobe on the same function                          */
/* --------------------------------------------------------------------- */

static atomic_ulong kp_hits, kp_post_hits, rp_hits, rp_errors;

static int same_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add(&kp_hits, 1);
	return 0;
}

static void same_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	atomic_fetch_add(&kp_post_hits, 1);
}

static int same_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	atomic_fetch_add(&rp_hits, 1);
	if (regs_return_value(regs) != *(unsigned long *)ri->data * 2 + 1)
		atomic_fetch_add(&rp_errors, 1);
	return 0;
}

static int same_ret_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	*(unsigned long *)ri->data = regs->di;
	return 0;
}

static void jprobe_and_kprobe(bool jprobe_first, bool post)
{
	struct jprobe jp = { .entry = jp_target_entry, .kp.symbol_name = "jp_target" };
	struct kprobe kp = { .symbol_name = "jp_target", .pre_handler = same_pre,
			     .post_handler = post ? same_post : NULL };
	unsigned long before;

	if (jprobe_first) {
		cr_assert_eq(register_jprobe(&jp), 0);
		cr_assert_eq(register_kprobe(&kp), 0);
	} else {
		cr_assert_eq(register_kprobe(&kp), 0);
		cr_assert_eq(register_jprobe(&jp), 0);
	}
	for (long i = 0; i < 1000; i++)
		cr_assert_eq(jt(i), 2 * i + 1);
	cr_expect_eq(entries, 1000, "jprobe entry ran %lu times", (unsigned long)entries);
	cr_expect_eq(kp_hits, 1000, "kprobe pre_handler ran %lu times", (unsigned long)kp_hits);
	cr_expect_eq(kp_post_hits, post ? 1000ul : 0ul, "kprobe post_handler ran %lu times",
		     (unsigned long)kp_post_hits);
	unregister_jprobe(&jp);
	before = kp_hits;
	cr_expect_eq(jt(1), 3);
	cr_expect_eq(kp_hits, before + 1, "the kprobe alone: %lu hits", (unsigned long)(kp_hits - before));
	unregister_kprobe(&kp);
}

Test(jprobes, kprobe_then_jprobe, .timeout = 30)
{
	jprobe_and_kprobe(false, true);
}

Test(jprobes, jprobe_then_kprobe, .timeout = 30)
{
	jprobe_and_kprobe(true, true);
}

Test(jprobes, jprobe_then_boosted_kprobe, .timeout = 30)
{
	jprobe_and_kprobe(true, false);
}

static void jprobe_and_kretprobe(bool jprobe_first)
{
	struct jprobe jp = { .entry = jp_target_entry, .kp.symbol_name = "jp_target" };
	struct kretprobe rp = { .kp.symbol_name = "jp_target", .handler = same_ret,
				.entry_handler = same_ret_entry, .data_size = sizeof(long) };

	if (jprobe_first) {
		cr_assert_eq(register_jprobe(&jp), 0);
		cr_assert_eq(register_kretprobe(&rp), 0);
	} else {
		cr_assert_eq(register_kretprobe(&rp), 0);
		cr_assert_eq(register_jprobe(&jp), 0);
	}
	for (long i = 0; i < 1000; i++)
		cr_assert_eq(jt(i), 2 * i + 1);
	cr_expect_eq(entries, 1000, "jprobe entry ran %lu times", (unsigned long)entries);
	cr_expect_eq(rp_hits, 1000, "kretprobe handler ran %lu times", (unsigned long)rp_hits);
	cr_expect_eq(rp_errors, 0);
	cr_expect_eq(rp.nmissed, 0);
	unregister_jprobe(&jp);
	unregister_kretprobe(&rp);
	cr_expect_eq(jt(1), 3);
}

Test(jprobes, kretprobe_then_jprobe, .timeout = 30)
{
	jprobe_and_kretprobe(false);
}

Test(jprobes, jprobe_then_kretprobe, .timeout = 30)
{
	jprobe_and_kretprobe(true);
}

/* --------------------------------------------------------------------- */
/* Threads, enable/disable, unregister, listing                          */
/* --------------------------------------------------------------------- */

#define JT_THREADS 3
#define JT_CALLS 100000L

static atomic_long jt_bad;

static void *jt_worker(void *arg)
{
	long base = (long)(intptr_t)arg * JT_CALLS, bad = 0;

	for (long i = 0; i < JT_CALLS; i++)
		bad += jt(base + i) != 2 * (base + i) + 1;
	atomic_fetch_add(&jt_bad, bad);
	return NULL;
}

Test(jprobes, threads_exact_counts, .timeout = 120)
{
	struct jprobe jp = { .entry = jp_target_entry, .kp.symbol_name = "jp_target" };
	pthread_t th[JT_THREADS];

	cr_assert_eq(register_jprobe(&jp), 0);
	for (long i = 0; i < JT_THREADS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, jt_worker, (void *)(intptr_t)i), 0);
	for (int i = 0; i < JT_THREADS; i++)
		pthread_join(th[i], NULL);
	unregister_jprobe(&jp);
	cr_expect_eq(jt_bad, 0);
	cr_expect_eq(entries, JT_THREADS * JT_CALLS, "entry ran %lu times", (unsigned long)entries);
	cr_expect_eq(arg_errors, 0);
	cr_expect_eq(jp.kp.nmissed, 0);
}

Test(jprobes, enable_disable, .timeout = 30)
{
	struct jprobe jp = { .entry = jp_target_entry, .kp.symbol_name = "jp_target" };

	cr_assert_eq(register_jprobe(&jp), 0);
	cr_expect_eq(jt(1), 3);
	cr_expect_eq(disable_jprobe(&jp), 0);
	cr_expect(kprobe_disabled(&jp.kp));
	cr_expect_eq(jt(2), 5);
	cr_expect_eq(entries, 1);
	cr_expect_eq(enable_jprobe(&jp), 0);
	cr_expect_eq(jt(3), 7);
	cr_expect_eq(entries, 2);
	unregister_jprobe(&jp);
	cr_expect_eq(disable_jprobe(&jp), -EINVAL);
}

/* An entry that waits until the test lets it go. */
static atomic_int in_entry, release_entry, unreg_done;

static long jp_waiting_entry(long x)
{
	long long deadline = scn_now_ns() + 3000000000LL;

	atomic_store(&in_entry, 1);
	while (!atomic_load(&release_entry) && scn_now_ns() < deadline)
		;
	atomic_store(&in_entry, 2);
	jprobe_return();
	return 0;
}

static volatile long waiting_result;

static void *waiting_caller(void *arg)
{
	waiting_result = jt(20);
	return NULL;
}

static void *unregisterer(void *arg)
{
	unregister_jprobe(arg);
	atomic_store(&unreg_done, 1);
	return NULL;
}

/* The function resumes correctly when its jprobe went away meanwhile. */
Test(jprobes, unregister_while_entry_runs_resumes_function, .timeout = 30)
{
	struct jprobe jp = { .entry = jp_waiting_entry, .kp.symbol_name = "jp_target" };
	pthread_t caller, un;

	cr_assert_eq(register_jprobe(&jp), 0);
	cr_assert_eq(pthread_create(&caller, NULL, waiting_caller, NULL), 0);
	while (!atomic_load(&in_entry))
		;
	cr_assert_eq(pthread_create(&un, NULL, unregisterer, &jp), 0);
	usleep(200 * 1000);
	atomic_store(&release_entry, 1);
	pthread_join(caller, NULL);
	pthread_join(un, NULL);
	cr_expect_eq(waiting_result, 41);
	cr_expect_eq(jt(5), 11);
	cr_expect_eq(jt(6), 13);
}

/*
 * unregister_jprobe() returns only when no thread runs the jprobe's entry
 * (the kernel's entry runs with preemption off, so unregister's
 * synchronize_sched() waits for it; DESIGN: unregister returns when no
 * thread can run the probe's handlers).
 */
Test(jprobes, unregister_waits_for_running_entry, .timeout = 30)
{
	struct jprobe jp = { .entry = jp_waiting_entry, .kp.symbol_name = "jp_target" };
	pthread_t caller, un;
	int done_early;

	cr_assert_eq(register_jprobe(&jp), 0);
	cr_assert_eq(pthread_create(&caller, NULL, waiting_caller, NULL), 0);
	while (!atomic_load(&in_entry))
		;
	cr_assert_eq(pthread_create(&un, NULL, unregisterer, &jp), 0);
	usleep(300 * 1000);
	done_early = atomic_load(&unreg_done) && atomic_load(&in_entry) == 1;
	atomic_store(&release_entry, 1);
	pthread_join(caller, NULL);
	pthread_join(un, NULL);
	cr_expect_not(done_early, "unregister_jprobe() returned while the entry function ran");
	cr_expect_eq(waiting_result, 41);
}

Test(jprobes, listing_shows_j, .timeout = 30)
{
	struct jprobe jp = { .entry = jp_target_entry, .kp.symbol_name = "jp_target" };
	char buf[2048] = "", want[256];
	FILE *f;

	cr_assert_eq(register_jprobe(&jp), 0);
	f = fmemopen(buf, sizeof(buf) - 1, "w");
	cr_assert(f);
	cr_expect_eq(ukprobes_print_list(f), 1);
	fclose(f);
	snprintf(want, sizeof(want), "%016lx  j  %s:jp_target+0x0", (unsigned long)jp.kp.addr,
		 scn_exe_name());
	cr_expect(strstr(buf, want), "no \"%s\" in:\n%s", want, buf);
	unregister_jprobe(&jp);
}
