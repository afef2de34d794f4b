/* SPDX-License-Identifier: MIT */
/*
 * agg.h - maps keyed as bpftrace users key theirs (--by KEY[,KEY...]): per
 * thread (tid), per process (pid), per thread name (comm), per value of a
 * fetched argument (its NAME, or EVENT.NAME), per user stack (stack, with
 * --stack).  A map holds, per event and key, a count (-c: @count[EVENT,
 * KEY]: N), a log2 histogram of an argument (--hist NAME: @NAME[EVENT,
 * KEY]:, bpftrace's hist()) or of the durations of calls (ukprobe latency:
 * bcc's funclatency, one table per function and key).  Computed by the
 * command from the hit records (none lost: ring.h), printed at the end,
 * smallest first, as bpftrace prints a map.
 */
#ifndef UKPROBE_AGG_H
#define UKPROBE_AGG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "probe_events.h"

#define AGG_MAX_KEYS	4

enum agg_kind {
	AGG_COUNT,	/* hits */
	AGG_HIST,	/* the values of argument .name (--hist NAME) */
	AGG_LATENCY,	/* the durations of calls (return records) */
};

struct agg_spec {
	const char *keys;	/* "tid,comm"...; NULL: none, per event */
	enum agg_kind kind;
	const char *name;	/* AGG_HIST: the argument, as --hist names it */
	unsigned long long unit_div;	/* AGG_LATENCY: 1, 1000, 1000000 */
	const char *unit;		/* AGG_LATENCY: "nsecs"... */
};

struct agg;

/* NULL with a message in err when a key is not tid, pid, comm, stack or
 * the name of an argument, or (AGG_HIST) no definition has a numeric
 * argument spec->name. */
struct agg *agg_new(const struct agg_spec *spec, const struct pe_event *evs, int nevs,
		    char *err, size_t errlen);
void agg_free(struct agg *a);

/* One hit record, as the maps see it. */
struct agg_hit {
	int ev;			/* its definition */
	const char *evname;	/* as shown (a glob's probes each have theirs) */
	const char *func;	/* AGG_LATENCY: the function, "OBJ:SYM" */
	int pid, tid;
	const char *comm;
	const char *stack;	/* the user stack as text, or NULL */
	bool has_duration;	/* a return record with its entry time */
	uint64_t duration;	/* ns */
	/* Argument i's value as text (keys), and as a number (false if it
	 * faulted): */
	const char *(*argval)(void *ctx, int i);
	bool (*argnum)(void *ctx, int i, int64_t *v, bool *is_signed);
	void *ctx;
};

void agg_add(struct agg *a, const struct agg_hit *h);

void agg_print(struct agg *a, FILE *out, bool json);
/* Folded stacks (flamegraph.pl, speedscope): "KEY COUNT" lines; the keys
 * are the folded stacks themselves (no keys, evname the stack). */
void agg_print_folded(struct agg *a, FILE *out);

#endif
