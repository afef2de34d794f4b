/* SPDX-License-Identifier: MIT */
/*
 * targets.h - the workload functions of targets.S and the rows that share
 * them.  Every target returns x + 1.
 */
#ifndef BENCH_TARGETS_H
#define BENCH_TARGETS_H

#include "harness.h"

typedef long (*bench_fn_t)(long);

struct bench_target {
	const char *variant;	/* row variant: "push_rbp", ... */
	bench_fn_t fn;
	const char *first;	/* the first instruction, for the legend */
};

long bench_fn_push_rbp(long x);
long bench_fn_endbr64(long x);
long bench_fn_riprel(long x);
long bench_fn_nop5(long x);

#define BENCH_NTARGETS 4
extern const struct bench_target bench_targets[BENCH_NTARGETS];

/**
 * bench_call_loop() - sum of fn(i) for i in [0, iters), each call through a
 * volatile function pointer; the elapsed times go to *t.  The caller checks
 * the sum against bench_call_sum(iters).
 */
long bench_call_loop(bench_fn_t fn, long iters, struct bench_time *t);

static inline long bench_call_sum(long iters)
{
	return iters * (iters + 1) / 2;
}

/* ------------------------------------------------------------------------ */
/* Measure functions without ukprobes (floors.c)                             */
/* ------------------------------------------------------------------------ */

/* int3 -> SIGTRAP -> return, arg unused. */
void bench_measure_int3(const struct bench_row *row, long iters,
			struct bench_result *res);
/* int3 whose handler sets TF, then one TRAP_TRACE step, arg unused. */
void bench_measure_int3_tf(const struct bench_row *row, long iters,
			   struct bench_result *res);
/* The unprobed call, arg = struct bench_target. */
void bench_measure_call(const struct bench_row *row, long iters,
			struct bench_result *res);

#endif
