/* SPDX-License-Identifier: MIT */
/*
 * probes.c - one measurement of a ukprobes row (see probes.h): register the
 * probe(s) of the row's kind on the target's first byte, warm up, check the
 * handler counts, time the loop in row->threads threads, check again,
 * unregister, and check that the code is the original and no handler runs.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "probes.h"
#include "targets.h"

#ifndef BENCH_NO_UKPROBES
#include <ukprobes.h>

#define WARMUP 1000

/* Per-thread handler counts (the handlers run in the thread that hit). */
static __thread unsigned long t_pre, t_post, t_ret, t_j;
static __thread long t_retsum, t_jsum;

static int pre_count(struct kprobe *p, struct pt_regs *regs)
{
	t_pre++;
	return 0;
}

static void post_count(struct kprobe *p, struct pt_regs *regs,
		       unsigned long flags)
{
	t_post++;
}

static int ret_count(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	t_ret++;
	t_retsum += (long)regs_return_value(regs);
	return 0;
}

/* The same for the -gpr rows, declared KPROBE_FLAG_GPR_ONLY: built to use
 * general registers only, as that flag promises. */
#define GPR_ONLY __attribute__((target("general-regs-only")))

GPR_ONLY static int pre_count_gpr(struct kprobe *p, struct pt_regs *regs)
{
	t_pre++;
	return 0;
}

GPR_ONLY static int ret_count_gpr(struct kretprobe_instance *ri,
				  struct pt_regs *regs)
{
	t_ret++;
	t_retsum += (long)regs_return_value(regs);
	return 0;
}

/* The jprobe's entry: the target's prototype. */
static long j_entry(long x)
{
	t_j++;
	t_jsum += x;
	jprobe_return();
}

/* What one call of the target must produce, per kind. */
struct kind {
	const char *name;
	int pre, post, ret, j;	/* handler runs per call */
	int kp, rp, jp, kp2;	/* probes: kprobe (pre[+post]), kretprobe,
				 * jprobe, a second kprobe at the same address
				 * (kp2 = 1: post handler only; 2: pre only) */
	int optimized;		/* must be OPTIMIZED (o, ro) */
	int gpr_only;		/* KPROBE_FLAG_GPR_ONLY handlers */
};

static const struct kind kinds[] = {
	{ "k",  1, 1, 0, 0,  1, 0, 0, 0, 0, 0 },
	{ "b",  1, 0, 0, 0,  1, 0, 0, 0, 0, 0 },
	{ "o",  1, 0, 0, 0,  1, 0, 0, 0, 1, 0 },
	{ "o-gpr", 1, 0, 0, 0,  1, 0, 0, 0, 1, 1 },
	{ "rb", 0, 0, 1, 0,  0, 1, 0, 0, 0, 0 },
	{ "rb-gpr", 0, 0, 1, 0,  0, 1, 0, 0, 0, 1 },
	{ "r",  0, 1, 1, 0,  0, 1, 0, 1, 0, 0 },
	{ "ro", 0, 0, 1, 0,  0, 1, 0, 0, 1, 0 },
	{ "ro-gpr", 0, 0, 1, 0,  0, 1, 0, 0, 1, 1 },
	{ "kr", 1, 0, 1, 0,  0, 1, 0, 2, 0, 0 },
	{ "j",  0, 0, 0, 1,  0, 0, 1, 0, 0, 0 },
};

static const struct kind *g_kind;
static struct kprobe g_kp, g_kp2;
static struct kretprobe g_rp;
static struct jprobe g_jp;

static void reset_counts(void)
{
	t_pre = t_post = t_ret = t_j = 0;
	t_retsum = t_jsum = 0;
}

static unsigned long nmissed(void)
{
	return g_kp.nmissed + g_kp2.nmissed + g_rp.kp.nmissed +
	       (unsigned long)g_rp.nmissed + g_jp.kp.nmissed;
}

/* After n calls of the target by this thread. */
static int check_counts(long n, char *why, size_t len)
{
	const struct kind *k = g_kind;
	unsigned long u = (unsigned long)n;

	if (t_pre == k->pre * u && t_post == k->post * u &&
	    t_ret == k->ret * u && t_j == k->j * u &&
	    (!k->ret || t_retsum == bench_call_sum(n)) &&
	    (!k->j || t_jsum == bench_call_sum(n - 1)) && !nmissed())
		return 0;
	snprintf(why, len, "%ld calls ran pre %lu, post %lu, return %lu, "
		 "jprobe %lu times (want %d %d %d %d per call; return values "
		 "%s; nmissed %lu)", n, t_pre, t_post, t_ret, t_j, k->pre,
		 k->post, k->ret, k->j,
		 !k->ret || t_retsum == bench_call_sum(n) ? "right" : "WRONG",
		 nmissed());
	return -1;
}

static struct kprobe *entry_probe(void)
{
	if (g_kind->kp)
		return &g_kp;
	if (g_kind->rp)
		return &g_rp.kp;
	return &g_jp.kp;
}

/* The kernel's debug.kprobes-optimization: on for the o rows, off for
 * the others, which measure the breakpoint path. */
static void set_optimization(int on)
{
	int err = ukprobes_set_optimization(on);

	if (err)
		fprintf(stderr, "ukprobes_set_optimization(%d): %d\n", on, err);
}

int bench_opt_wait_ms(void)
{
	const char *e = getenv("BENCH_OPT_WAIT_MS");

	return e && *e ? atoi(e) : 300;
}

/* Is @p listed [OPTIMIZED] (flag, and the listing as a second opinion)? */
static int is_optimized(struct kprobe *p)
{
	char *buf = NULL, line[64];
	size_t len = 0;
	FILE *f;
	int found = 0;

	if (kprobe_optimized(p))
		return 1;
	f = open_memstream(&buf, &len);
	if (!f)
		return 0;
	ukprobes_print_list(f);
	fclose(f);
	snprintf(line, sizeof(line), "%p", (void *)p->addr);
	for (char *l = buf; l && *l;) {
		char *e = strchrnul(l, '\n');

		if (!strncmp(l, line, strlen(line)) &&
		    memmem(l, (size_t)(e - l), "[OPTIMIZED]", 11))
			found = 1;
		l = *e ? e + 1 : e;
	}
	free(buf);
	return found;
}

static void unregister_all(void)
{
	if (g_kind->kp2)
		unregister_kprobe(&g_kp2);
	if (g_kind->kp)
		unregister_kprobe(&g_kp);
	if (g_kind->rp)
		unregister_kretprobe(&g_rp);
	if (g_kind->jp)
		unregister_jprobe(&g_jp);
}

static int register_all(const struct bench_target *t, struct bench_result *res)
{
	int err = 0;
	const char *what = "";

	memset(&g_kp, 0, sizeof(g_kp));
	memset(&g_kp2, 0, sizeof(g_kp2));
	memset(&g_rp, 0, sizeof(g_rp));
	memset(&g_jp, 0, sizeof(g_jp));
	if (g_kind->kp) {
		g_kp.addr = (kprobe_opcode_t *)t->fn;
		g_kp.pre_handler = g_kind->gpr_only ? pre_count_gpr : pre_count;
		if (g_kind->gpr_only)
			g_kp.flags |= KPROBE_FLAG_GPR_ONLY;
		if (g_kind->post)
			g_kp.post_handler = post_count;
		what = "register_kprobe";
		err = register_kprobe(&g_kp);
	}
	if (!err && g_kind->rp) {
		g_rp.kp.addr = (kprobe_opcode_t *)t->fn;
		g_rp.handler = g_kind->gpr_only ? ret_count_gpr : ret_count;
		if (g_kind->gpr_only)
			g_rp.kp.flags |= KPROBE_FLAG_GPR_ONLY;
		what = "register_kretprobe";
		err = register_kretprobe(&g_rp);
	}
	if (!err && g_kind->jp) {
		g_jp.kp.addr = (kprobe_opcode_t *)t->fn;
		g_jp.entry = (void *)j_entry;
		what = "register_jprobe";
		err = register_jprobe(&g_jp);
	}
	if (!err && g_kind->kp2) {
		g_kp2.addr = (kprobe_opcode_t *)t->fn;
		if (g_kind->kp2 == 1)
			g_kp2.post_handler = post_count;
		else
			g_kp2.pre_handler = pre_count;
		what = "register_kprobe (the second probe)";
		err = register_kprobe(&g_kp2);
		if (err && g_kind->rp)
			unregister_kretprobe(&g_rp);
	}
	if (err) {
		bench_fail(res, "%s: %d (%s)", what, err,
			   err < 0 ? strerror(-err) : "not an errno");
		return -1;
	}
	return 0;
}

void bench_measure_probe_kind(const char *kind, const struct bench_row *row,
			      long iters, struct bench_result *res)
{
	const struct bench_target *t = row->arg;
	unsigned char before[16], after[16], armed0;
	struct bench_time tm;
	struct kprobe *ep;
	char why[BENCH_NOTE_MAX];
	int nthreads = row->threads > 0 ? row->threads : 1;

	g_kind = NULL;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kinds[i].name, kind))
			g_kind = &kinds[i];
	if (!g_kind) {
		bench_fail(res, "no probe kind %s", kind);
		return;
	}
	set_optimization(g_kind->optimized);
	memcpy(before, (const void *)t->fn, sizeof(before));
	if (register_all(t, res))
		return;
	ep = entry_probe();
	if ((void *)ep->addr != (void *)t->fn)
		bench_note(res, "probe placed at %s%+ld", t->variant,
			   (long)((char *)ep->addr - (char *)t->fn));

	if (g_kind->optimized) {
		/* Wait a little for the optimizer, calling the target now and
		 * then as a program would. */
		struct timespec d = { 0, 10 * 1000 * 1000 };
		int waited = 0, wait_ms = bench_opt_wait_ms();

		ukprobes_wait_optimizer();
		while (!is_optimized(ep) && waited < wait_ms) {
			reset_counts();
			bench_call_loop(t->fn, 10, &tm);
			nanosleep(&d, NULL);
			waited += 10;
		}
		if (!is_optimized(ep)) {
			fprintf(stderr, "%s %s: the probe at %p is not OPTIMIZED "
				"after %d ms:\n", kind, t->variant,
				(void *)ep->addr, waited);
			ukprobes_print_list(stderr);
			bench_fail(res, "not optimized");
			goto out;
		}
		if (g_kind->gpr_only && !(ep->flags & KPROBE_FLAG_GPR_ONLY))
			bench_note(res, "KPROBE_FLAG_GPR_ONLY was dropped");
	}

	reset_counts();
	if (bench_call_loop(t->fn, WARMUP, &tm) != bench_call_sum(WARMUP)) {
		bench_fail(res, "probed %s returned wrong values", t->variant);
		goto out;
	}
	if (check_counts(WARMUP, why, sizeof(why))) {
		bench_fail(res, "warm-up: %s", why);
		goto out;
	}
	armed0 = *(volatile unsigned char *)ep->addr;

	if (bench_call_threads(t->fn, WARMUP, iters, nthreads, reset_counts,
			       check_counts, res))
		goto out;
	if (!g_kind->optimized && kprobe_optimized(ep)) {
		bench_fail(res, "the probe was OPTIMIZED (a jump, not the int3 "
			   "path): this row needs optimization off");
		goto out;
	}
	if (ep->flags & KPROBE_FLAG_FTRACE)
		bench_note(res, "probe was [FTRACE] (patchable entry)");
	if (!g_kind->optimized && armed0 != 0xcc)
		bench_note(res, "first byte at the probe was 0x%02x, not int3",
			   armed0);
out:
	unregister_all();
	reset_counts();
	if (bench_call_loop(t->fn, 10, &tm) != bench_call_sum(10) ||
	    t_pre || t_post || t_ret || t_j) {
		bench_fail(res, "after unregistering: %s returns wrong values "
			   "or a handler still runs", t->variant);
		return;
	}
	memcpy(after, (const void *)t->fn, sizeof(after));
	if (memcmp(before, after, sizeof(before)))
		bench_fail(res, "after unregistering: the code of %s differs",
			   t->variant);
}

void bench_measure_probe(const struct bench_row *row, long iters,
			 struct bench_result *res)
{
	bench_measure_probe_kind(row->name, row, iters, res);
}

#else /* BENCH_NO_UKPROBES */

void bench_measure_probe_kind(const char *kind, const struct bench_row *row,
			      long iters, struct bench_result *res)
{
	bench_fail(res, "built without libukprobes (make bench-floors)");
}

void bench_measure_probe(const struct bench_row *row, long iters,
			 struct bench_result *res)
{
	bench_measure_probe_kind(row->name, row, iters, res);
}

int bench_opt_wait_ms(void)
{
	return 0;
}

#endif
