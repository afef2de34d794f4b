/* SPDX-License-Identifier: MIT */
/*
 * kprobes.c - the trap-path rows (issue 2): the int3 and int3+TF floors, the
 * unprobed call, and kprobes on the first instruction of the workload:
 *   k  pre and post handlers: the single-step path, two traps per hit;
 *   b  pre handler only: boosted, one trap per hit.
 * Probe rows are ns per hit over the baseline row of the same variant and
 * run; ratios are computed run by run.
 *
 * Built with -DBENCH_NO_UKPROBES (make bench-floors) it needs no library and
 * the k and b rows say so.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "targets.h"

#ifndef BENCH_NO_UKPROBES
#include <ukprobes.h>
#endif

#define WARMUP 1000

#ifndef BENCH_NO_UKPROBES
static volatile unsigned long pre_hits, post_hits;

static int pre_count(struct kprobe *p, struct pt_regs *regs)
{
	pre_hits++;
	return 0;
}

static void post_count(struct kprobe *p, struct pt_regs *regs,
		       unsigned long flags)
{
	post_hits++;
}

/* Checks the handler counts after n calls of the probed function. */
static int hits_ok(struct bench_result *res, const char *when, long n,
		   int with_post, struct kprobe *kp)
{
	unsigned long want_post = with_post ? (unsigned long)n : 0;

	if (pre_hits == (unsigned long)n && post_hits == want_post &&
	    !kp->nmissed)
		return 1;
	bench_fail(res, "%s: %ld calls ran pre %lu, post %lu times (nmissed %lu)",
		   when, n, pre_hits, post_hits, kp->nmissed);
	return 0;
}

/* "k" (row name) adds a post handler; "b" has a pre handler only. */
static void measure_kprobe(const struct bench_row *row, long iters,
			   struct bench_result *res)
{
	const struct bench_target *t = row->arg;
	int with_post = !strcmp(row->name, "k");
	unsigned char before[16], armed0, after[16];
	struct kprobe kp;
	struct bench_time tm;
	long sum;
	int err;

	memcpy(before, (const void *)t->fn, sizeof(before));
	memset(&kp, 0, sizeof(kp));
	kp.addr = (kprobe_opcode_t *)t->fn;
	kp.pre_handler = pre_count;
	if (with_post)
		kp.post_handler = post_count;
	err = register_kprobe(&kp);
	if (err) {
		bench_fail(res, "register_kprobe: %d (%s)", err,
			   err < 0 ? strerror(-err) : "not an errno");
		return;
	}
	if ((void *)kp.addr != (void *)t->fn)
		bench_note(res, "probe placed at %s%+ld", t->variant,
			   (long)((char *)kp.addr - (char *)t->fn));

	pre_hits = post_hits = 0;
	if (bench_call_loop(t->fn, WARMUP, &tm) != bench_call_sum(WARMUP)) {
		bench_fail(res, "probed %s returned wrong values", t->variant);
		goto out;
	}
	if (!hits_ok(res, "warm-up", WARMUP, with_post, &kp))
		goto out;
	/* What sits at the probe now: int3 for the trap path. */
	armed0 = *(volatile unsigned char *)kp.addr;

	pre_hits = post_hits = 0;
	sum = bench_call_loop(t->fn, iters, &tm);
	if (sum != bench_call_sum(iters)) {
		bench_fail(res, "probed %s returned wrong values", t->variant);
		goto out;
	}
	if (!hits_ok(res, "timed loop", iters, with_post, &kp))
		goto out;
	if (kprobe_optimized(&kp))
		bench_note(res, "probe was OPTIMIZED (jump, not the int3 path)");
	if (kp.flags & KPROBE_FLAG_FTRACE)
		bench_note(res, "probe was [FTRACE] (patchable entry)");
	if (armed0 != 0xcc)
		bench_note(res, "first byte at the probe was 0x%02x, not int3",
			   armed0);
	bench_result_set(res, &tm, iters);
out:
	unregister_kprobe(&kp);
	pre_hits = post_hits = 0;
	if (bench_call_loop(t->fn, 10, &tm) != bench_call_sum(10) || pre_hits) {
		bench_fail(res, "after unregister_kprobe: %s returns wrong values "
			   "or the handler still runs", t->variant);
		return;
	}
	memcpy(after, (const void *)t->fn, sizeof(after));
	if (memcmp(before, after, sizeof(before)))
		bench_fail(res, "after unregister_kprobe: the code of %s differs",
			   t->variant);
}
#else
static void measure_kprobe(const struct bench_row *row, long iters,
			   struct bench_result *res)
{
	bench_fail(res, "built without libukprobes (make bench-floors)");
}
#endif

int main(int argc, char **argv)
{
	struct bench_row rows[2 + 3 * BENCH_NTARGETS];
	int n = 0;
	static const struct bench_ratio ratios[] = {
		{ "b/int3",         "b",       "int3", 1, 1.1 },
		{ "k/(2*int3)",     "k",       "int3", 2, 1.1 },
		{ "(int3+TF)/int3", "int3+TF", "int3", 1, 0 },
	};

	memset(rows, 0, sizeof(rows));
	rows[n++] = (struct bench_row){
		.name = "int3", .variant = "-", .threads = 1, .iters = 200000,
		.measure = bench_measure_int3,
		.what = "bare int3 -> SIGTRAP (SA_SIGINFO, empty handler) -> "
			"return: ns per trap",
	};
	rows[n++] = (struct bench_row){
		.name = "int3+TF", .variant = "-", .threads = 1, .iters = 20000,
		.measure = bench_measure_int3_tf,
		.what = "int3 whose handler sets TF + the TRAP_TRACE step whose "
			"handler clears it: ns per pair",
	};
	/* Per variant: baseline, then the probes, so that each probe row and
	 * the baseline it is measured over are taken moments apart. */
	for (int i = 0; i < BENCH_NTARGETS; i++) {
		const struct bench_target *t = &bench_targets[i];

		rows[n++] = (struct bench_row){
			.name = "baseline", .variant = t->variant, .threads = 1,
			.iters = 5000000, .measure = bench_measure_call, .arg = t,
			.what = "unprobed call of a tiny function through a "
				"volatile pointer: ns per call",
		};
		rows[n++] = (struct bench_row){
			.name = "k", .variant = t->variant, .threads = 1,
			.iters = 100000, .over = "baseline",
			.measure = measure_kprobe, .arg = t,
			.what = "kprobe on the first instruction, pre + post "
				"handlers (single-step path, two traps)",
		};
		rows[n++] = (struct bench_row){
			.name = "b", .variant = t->variant, .threads = 1,
			.iters = 200000, .over = "baseline",
			.measure = measure_kprobe, .arg = t,
			.what = "kprobe on the first instruction, pre handler "
				"only (boosted, one trap)",
		};
	}
	return bench_main(argc, argv, "kprobes", rows, n, ratios,
			  (int)(sizeof(ratios) / sizeof(ratios[0])));
}
