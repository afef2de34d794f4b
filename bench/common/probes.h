/* SPDX-License-Identifier: MIT */
/*
 * probes.h - the ukprobes rows' measure function, shared by the programs
 * that time probe hits (kprobes.c, scale.c).  Not built into the
 * no-library floors program (BENCH_NO_UKPROBES): there every probe row is
 * n/a.
 *
 * The kind of probe is the row's name, the seeds' letters:
 *   k   kprobe, pre + post handlers: int3, out-of-line copy, int3 (two traps)
 *   b   kprobe, pre handler only: boosted (copy + jmp back, one trap)
 *   o   kprobe, pre handler only, once ukprobes reports it OPTIMIZED (a
 *       jump, no trap); "n/a (not optimized)" when it does not become so
 *   rb  kretprobe (return handler only): its entry kprobe has no post
 *       handler, so it is boosted; the return goes through a trampoline
 *       without a trap.  This is what register_kretprobe() gives by default.
 *   rb-gpr  rb whose return handler is declared KPROBE_FLAG_GPR_ONLY: the
 *       return trampoline skips saving the vector state
 *   o-gpr, ro-gpr  o and ro with KPROBE_FLAG_GPR_ONLY handlers
 *   r   the same kretprobe plus, at the same address, a kprobe with only a
 *       post handler: the entry takes the single-step path (two traps), as
 *       the seeds' unboosted kretprobe did.
 *   ro  kretprobe whose entry kprobe is OPTIMIZED, else n/a
 *   kr  kretprobe + kprobe (pre handler) on the same function entry
 *   j   jprobe: the entry function runs with the arguments and ends with
 *       jprobe_return() (a second int3), then the probed instruction runs
 * All on the target's first byte (arg = struct bench_target), row->threads
 * threads calling the same function.  Handler counters are per thread, so
 * that two threads measure the mechanism and not a shared counter.
 */
#ifndef BENCH_PROBES_H
#define BENCH_PROBES_H

#include "harness.h"

void bench_measure_probe(const struct bench_row *row, long iters,
			 struct bench_result *res);

/* The same with the kind given apart from the row's name. */
void bench_measure_probe_kind(const char *kind, const struct bench_row *row,
			      long iters, struct bench_result *res);

/* How long an o/ro row waits for its probe to become OPTIMIZED (ms; env
 * BENCH_OPT_WAIT_MS, default 300). */
int bench_opt_wait_ms(void);

#endif
