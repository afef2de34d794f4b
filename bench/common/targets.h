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

/* Not probe targets: the floors of an optimized probe's detour (targets.S). */
long bench_fn_plain(long x);		/* lea 1(%rdi),%rax; ret */
long bench_fn_regsave(long x);		/* + save/call/restore the GPRs */
long bench_fn_xsave(long x);		/* + xsavec/xrstor around the call */
void bench_empty_handler(void *p, void *regs);
/* Bytes the xsavec area needs (+ 64 for alignment); set by
 * bench_xsave_init(), which returns 0 when xsavec is usable. */
extern unsigned long bench_xsave_size;
int bench_xsave_init(char *why, unsigned long len);

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
/* The unprobed call, arg = struct bench_target; row->threads threads. */
void bench_measure_call(const struct bench_row *row, long iters,
			struct bench_result *res);
/* Calls of a floor function (bench_fn_plain, bench_fn_regsave,
 * bench_fn_xsave): arg = the function. */
void bench_measure_floor_fn(const struct bench_row *row, long iters,
			    struct bench_result *res);

/**
 * bench_call_threads() - @nthreads threads (the caller is one) each run a
 * warm-up of @warmup calls of @fn, then, all released together, a timed loop
 * of @iters calls; figures per call, averaged over the threads (each thread's
 * own CPU and wall time), go to *res.  @reset runs in each thread after its
 * warm-up, @check after its timed loop (0: counts right; else it wrote why).
 * Either may be NULL.  Returns 0, or -1 with res failed.
 */
int bench_call_threads(bench_fn_t fn, long warmup, long iters, int nthreads,
		       void (*reset)(void),
		       int (*check)(long iters, char *why, size_t len),
		       struct bench_result *res);
/* How many attempts the last bench_call_threads() made (threads that
 * mostly took turns are run again): each one made nthreads * (warmup +
 * iters) calls. */
extern int bench_call_threads_tries;

#endif
