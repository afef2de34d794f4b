/* SPDX-License-Identifier: MIT */
/*
 * report.h - the summaries ukprobe prints once the traced program is done:
 * event counts, log2 histograms (bpftrace's hist()), latency histograms
 * (bcc's funclatency) and the warnings (drops, misses, probes never placed).
 */
#ifndef UKPROBE_REPORT_H
#define UKPROBE_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "probe_events.h"
#include "shm.h"

/* What the summaries at the end show. */
struct summary_opts {
	bool count;			/* -c: @count[EVENT] */
	char **hists;			/* --hist names */
	int nhists;
	bool latency;			/* ukprobe latency */
	unsigned long long unit_div;
	const char *unit;
};

/* The summaries of a run from its shared counters, text or JSON; evs are
 * its definitions, in event order. */
void report_summaries(FILE *out, bool json, const struct uks *shm,
		      const struct pe_event *evs, int nevs, const struct summary_opts *o);

/* bpftrace's hist(): "@name:" then "[lo, hi)   count |@@@@   |" rows from
 * the first to the last non-empty bucket. */
void report_hist(FILE *out, const char *name, const struct uks_hist *h);
void report_hist_json(FILE *out, const char *name, const struct uks_hist *h);
/* Its members without braces: "count":N,"buckets":[...] */
void report_hist_json_body(FILE *out, const struct uks_hist *h);

/* bcc's funclatency: "     nsecs : count  distribution" and the
 * "avg = ..." line; unit_div 1 (nsecs), 1000 (usecs), 1000000 (msecs). */
void report_latency(FILE *out, const char *func, const struct uks_hist *h,
		    unsigned long long unit_div, const char *unit);
void report_latency_json(FILE *out, const char *func, const struct uks_hist *h,
			 unsigned long long unit_div, const char *unit);
/* Its members without braces: "unit":...,"count":N,...,"buckets_ns":[...] */
void report_latency_json_body(FILE *out, const struct uks_hist *h, unsigned long long unit_div,
			      const char *unit);

#endif
