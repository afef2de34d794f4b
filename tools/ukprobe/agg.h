/* SPDX-License-Identifier: MIT */
/*
 * agg.h - counts keyed as bpftrace users key their maps (ukprobe trace -c
 * --by KEY[,KEY...]): per thread (tid), per process (pid), per thread name
 * (comm), per value of a fetched argument (its NAME), per user stack
 * (stack, with --stack).  Computed by the
 * command from the hit records (none lost: ring.h), printed at the end as
 * bpftrace prints a map: @count[EVENT, KEY...]: N, smallest first.
 */
#ifndef UKPROBE_AGG_H
#define UKPROBE_AGG_H

#include <stdbool.h>
#include <stdio.h>

#include "probe_events.h"

#define AGG_MAX_KEYS	4

struct agg;

/* keys: "tid", "pid", "comm" or an argument's name, comma-separated (NULL:
 * none, counts per event).  NULL with a message in err when a key is
 * neither. */
struct agg *agg_new(const char *keys, const struct pe_event *evs, int nevs, char *err,
		    size_t errlen);
void agg_free(struct agg *a);

/* One hit of definition ev (shown as evname: a glob's probes each have
 * their own) of thread tid of process pid; argument i's value as text is
 * argval(ctx, i). */
void agg_add(struct agg *a, int ev, const char *evname, int pid, int tid, const char *comm,
	     const char *stack, const char *(*argval)(void *ctx, int i), void *ctx);

void agg_print(struct agg *a, FILE *out, bool json);
/* Folded stacks (flamegraph.pl, speedscope): "KEY COUNT" lines; the keys
 * are the folded stacks themselves (agg_new(NULL), evname the stack). */
void agg_print_folded(struct agg *a, FILE *out);

#endif
