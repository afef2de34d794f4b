/* SPDX-License-Identifier: MIT */
/*
 * format.h - records (ring.h) made text in the command: ftrace's trace
 * lines, JSON lines, or Chrome/Perfetto trace events.  Used live by
 * `ukprobe trace` (consume.c) and afterwards by `ukprobe report FILE.ukp`.
 */
#ifndef UKPROBE_FORMAT_H
#define UKPROBE_FORMAT_H

#include <stdbool.h>
#include <stdio.h>

#include "objmap.h"
#include "probe_events.h"
#include "ring.h"
#include "shm.h"

enum out_format { FMT_TEXT, FMT_JSON, FMT_PERFETTO, FMT_UKP, FMT_FOLDED };

struct fmt_ctx {
	enum out_format fmt;
	FILE *out;
	const struct pe_event *evs;	/* the definitions, by record event */
	int nevs;
	struct objmaps *maps;
	/* Perfetto: the processes and threads already named. */
	int *named;
	size_t nnamed, capnamed;
	/* The maps --by keys (agg.h), filled here from the records: */
	struct agg *agg;		/* -c */
	struct agg *hagg[UKS_MAX_HISTS];	/* --hist NAME */
	int nhagg;
	struct agg *lagg;		/* ukprobe latency */
	struct agg *folded;		/* --format folded: stacks counted */
	bool quiet;			/* count, do not print the hits */
	unsigned long long lost;	/* records lost, summed */
	unsigned long long records;	/* hit records formatted */
};

/* -1 for an unknown name; "text", "json", "perfetto" (or "chrome"),
 * "ukp" (binary, FILE.ukp), "folded" (stacks for flame graphs). */
int fmt_parse(const char *name);

void fmt_init(struct fmt_ctx *c, enum out_format fmt, FILE *out,
	      const struct pe_event *evs, int nevs, struct objmaps *maps);
void fmt_fini(struct fmt_ctx *c);

/* What is keyed (--by): counts, each --hist, latency. */
struct fmt_maps {
	const char *by;			/* the keys; NULL: nothing but per-probe
					 * counts of globs */
	bool count;			/* -c with --by, or a glob counted */
	char **hists;			/* --hist names, keyed when by */
	int nhists;
	bool latency;			/* keyed when by */
	unsigned long long unit_div;
	const char *unit;
};

/* Make the maps m asks for; 0, or -1 with a message in err.  Afterwards
 * c->agg, c->nhagg, c->lagg say which summaries the maps replace. */
int fmt_maps_init(struct fmt_ctx *c, const struct fmt_maps *m, char *err, size_t errlen);
bool fmt_maps_any(const struct fmt_ctx *c);
/* Print them (JSON: one object each), smallest first. */
void fmt_maps_print(struct fmt_ctx *c, FILE *out, bool json);

/* Perfetto's opening and closing (the file is a JSON object). */
void fmt_begin(struct fmt_ctx *c);
void fmt_end(struct fmt_ctx *c);

/* One record of process pid: meta records update c->maps; hits and losses
 * are written. */
void fmt_record(struct fmt_ctx *c, int pid, const struct rec *r);

/* A loss the rings could not hold (no free ring): n records of pid (0:
 * unknown) at ts. */
void fmt_lost(struct fmt_ctx *c, int pid, int tid, uint64_t ts, unsigned long long n);

#endif
