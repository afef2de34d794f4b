/* SPDX-License-Identifier: MIT */
/*
 * harness.h - the benchmark harness shared by every bench/NAME.c program.
 *
 * A program is a table of rows (struct bench_row) and of ratios
 * (struct bench_ratio) handed to bench_main().  The harness runs the rows
 * interleaved, round after round (round r measures every row once), each
 * measurement in its own forked child: a crash, a hang or a leftover signal
 * handler of one row cannot touch the others, and the parent never loads
 * probe state.  It then prints the table and writes the rows and ratios as
 * JSON fragments that bench/run.sh assembles into bench/results.json.
 *
 * Adding a row: write a measure function (it runs in the child, does its
 * setup, times its loop with bench_time_start()/bench_time_stop() and fills
 * struct bench_result) and add a line to the program's table.  Adding a
 * program: a new bench/NAME.c calling bench_main(); bench/bench.mk builds
 * and runs it.
 */
#ifndef BENCH_HARNESS_H
#define BENCH_HARNESS_H

#include <stdint.h>
#include <time.h>

/* ------------------------------------------------------------------------ */
/* Types                                                                     */
/* ------------------------------------------------------------------------ */

#define BENCH_NOTE_MAX 240
#define BENCH_EXTRA_MAX 6
#define BENCH_EXTRA_NOTE 96

/* What a measure function reports for one run (filled in the child). */
struct bench_result {
	int ok;			/* 1: the figures are valid; 0: note says why not */
	double ns_per_op;	/* CPU time of the measuring thread per iteration */
	double wall_ns_per_op;	/* wall-clock time per iteration */
	char note[BENCH_NOTE_MAX];	/* remark, or the failure's reason */
	/* Figures of other rows measured in the same child (rows whose .from
	 * names this one; index = their .from_index): when one setup serves
	 * several rows and is too slow to repeat per row. */
	int extra_ok[BENCH_EXTRA_MAX];
	double extra[BENCH_EXTRA_MAX];
	double extra_wall[BENCH_EXTRA_MAX];
	char extra_note[BENCH_EXTRA_MAX][BENCH_EXTRA_NOTE];
};

/* A timed interval: both clocks (see bench_time_start()). */
struct bench_time {
	uint64_t cpu_ns;
	uint64_t wall_ns;
};

struct bench_row;
typedef void (*bench_measure_fn)(const struct bench_row *row, long iters,
				 struct bench_result *res);

struct bench_row {
	const char *name;	/* "int3", "int3+TF", "baseline", "k", "b" */
	const char *variant;	/* workload variant, or "-" */
	int threads;
	long iters;		/* iterations per run (times --scale) */
	/* Name of the row (same variant) whose per-run value is subtracted
	 * from this row's, run by run: "ns per hit over the baseline".
	 * NULL: the raw ns per iteration is reported. */
	const char *over;
	bench_measure_fn measure;
	const void *arg;	/* for the measure function */
	const char *what;	/* one line for the table's legend */
	/* What the figures are.  unit NULL: "ns"; anything else ("B/probe",
	 * "ms") is printed in the note and written to the JSON.  clock NULL:
	 * CPU time of the measuring thread (BENCH_CLOCK_THREAD); a row whose
	 * cost lies partly outside its process says what it measured. */
	const char *unit;
	const char *clock;
	/* Measured in the first max_runs rounds only (0: every round), for
	 * rows too slow to repeat; the table and JSON say how many ran. */
	int max_runs;
	/* The measurement writes to the log as a matter of course (tools.c):
	 * do not point at the log unless the row failed. */
	int log_expected;
	/* Not measured by a child of its own: its figures are extra
	 * [from_index] of row @from (same variant and threads), run by run. */
	const char *from;
	int from_index;

	/* Filled by the harness. */
	double *raw;		/* [runs] raw CPU ns per op, per run */
	double *val;		/* [runs] reported value (raw - over) */
	double *wraw;		/* [runs] raw wall ns per op */
	double *wval;		/* [runs] wall value (wraw - over's wraw) */
	int nval;		/* successful runs */
	int failed;		/* stopped after a failure; note says why */
	char note[BENCH_NOTE_MAX];
};

#define BENCH_CLOCK_THREAD "thread CPU time (user+sys) of the measuring thread"

/* ratio = num / (den_factor * den), computed run by run (same round), for
 * each variant and thread count of row num; den is looked up with the same
 * variant and threads first, then variant "-" with the same threads, then
 * variant "-" with 1 thread. */
struct bench_ratio {
	const char *name;	/* "b/int3" */
	const char *num;
	const char *den;
	double den_factor;
	double goal_max;	/* 0: no goal */
	int num_threads;	/* 0: rows num of any thread count; else only those */
	int den_threads;	/* 0: see above; else den with this thread count */
};

/* ------------------------------------------------------------------------ */
/* Functions                                                                 */
/* ------------------------------------------------------------------------ */

/*
 * The figures are CPU time of the measuring thread (CLOCK_THREAD_CPUTIME_ID:
 * user + kernel, so a trap's kernel work counts): on a shared machine the
 * wall clock also counts the time the thread waited for a CPU, which
 * doubled or tripled trap costs here under load.  Wall time is kept too.
 */
static inline uint64_t bench_clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void bench_time_start(struct bench_time *t)
{
	t->wall_ns = bench_clock_ns(CLOCK_MONOTONIC);
	t->cpu_ns = bench_clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* Turns the start times in *t into elapsed times. */
static inline void bench_time_stop(struct bench_time *t)
{
	t->cpu_ns = bench_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t->cpu_ns;
	t->wall_ns = bench_clock_ns(CLOCK_MONOTONIC) - t->wall_ns;
}

/* Records the per-iteration figures of an elapsed *t and marks res ok. */
static inline void bench_result_set(struct bench_result *res,
				    const struct bench_time *t, long iters)
{
	res->ns_per_op = (double)t->cpu_ns / (double)iters;
	res->wall_ns_per_op = (double)t->wall_ns / (double)iters;
	res->ok = 1;
}

/* printf into res->note (appends after a "; " when there is a note already). */
void bench_note(struct bench_result *res, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Marks res failed with a reason. */
void bench_fail(struct bench_result *res, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Sets extra figure @i (per-op CPU and wall values) for a .from row. */
void bench_extra_set(struct bench_result *res, int i, double value,
		     double wall_value);
/* Extra figure @i is n/a, with a reason. */
void bench_extra_fail(struct bench_result *res, int i, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A remark on extra figure @i. */
void bench_extra_note(struct bench_result *res, int i, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Effective number of runs of a row (its max_runs or all of them). */
int bench_row_runs(const struct bench_row *row, int runs);

/**
 * bench_main() - run the rows and print/write the results.
 * @prog: the program's name ("kprobes"), used in the table header.
 *
 * Options: --runs N (default 7, env BENCH_RUNS), --scale F (iterations
 * factor, env BENCH_SCALE), --out PREFIX (writes PREFIX.rows, JSON objects
 * one a line, and PREFIX.ratios, "name": {...} members one a line),
 * --log FILE (the children's stdout/stderr; default /dev/null),
 * --only NAME[,NAME] (rows by name), --timeout S (per measurement, default
 * 60).  Env BENCH_CPU=N pins the children on CPU N (default: no pinning).
 *
 * Returns the exit status: 0 even when rows are n/a (that is a result);
 * 2 on bad usage.
 */
int bench_main(int argc, char **argv, const char *prog,
	       struct bench_row *rows, int nrows,
	       const struct bench_ratio *ratios, int nratios);

#endif
