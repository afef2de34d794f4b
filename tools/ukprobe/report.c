// SPDX-License-Identifier: MIT
/*
 * report.c - summaries printed by the ukprobe command (see report.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "report.h"

/* 2^power with bpftrace's suffixes: 512, 1K, 2K ... 1M ... */
static void pow2_label(char *out, size_t len, int power)
{
	static const char sfx[] = { 0, 'K', 'M', 'G', 'T', 'P', 'E' };
	int k = power / 10;

	if (k > 6)
		k = 6;
	if (k == 0)
		snprintf(out, len, "%llu", 1ull << power);
	else
		snprintf(out, len, "%llu%c", 1ull << (power - 10 * k), sfx[k]);
}

/* Bucket b of shm.h as bpftrace labels it. */
static void bucket_label(char *out, size_t len, int b)
{
	char lo[24], hi[24];

	if (b == 0) {
		snprintf(out, len, "(..., 0)");
	} else if (b == 1) {
		snprintf(out, len, "[0]");
	} else if (b == 2) {
		snprintf(out, len, "[1]");
	} else {
		pow2_label(lo, sizeof(lo), b - 2);
		if (b - 1 >= 64)
			snprintf(hi, sizeof(hi), "...");
		else
			pow2_label(hi, sizeof(hi), b - 1);
		snprintf(out, len, "[%s, %s)", lo, hi);
	}
}

void report_hist(FILE *out, const char *name, const struct uks_hist *h)
{
	uint64_t v[UKS_BUCKETS], max = 0;
	int first = -1, last = -1;

	for (int b = 0; b < UKS_BUCKETS; b++) {
		v[b] = atomic_load(&h->b[b]);
		if (v[b]) {
			if (first < 0)
				first = b;
			last = b;
			if (v[b] > max)
				max = v[b];
		}
	}
	fprintf(out, "@%s:\n", name);
	if (first < 0) {
		fprintf(out, "(no values)\n\n");
		return;
	}
	for (int b = first; b <= last; b++) {
		char label[80], bar[53];
		int n = (int)(v[b] * 52 / max);

		bucket_label(label, sizeof(label), b);
		memset(bar, '@', (size_t)n);
		memset(bar + n, ' ', (size_t)(52 - n));
		bar[52] = '\0';
		fprintf(out, "%-16s%8" PRIu64 " |%s|\n", label, v[b], bar);
	}
	fprintf(out, "\n");
}

void report_hist_json(FILE *out, const char *name, const struct uks_hist *h)
{
	bool first = true;

	fprintf(out, "{\"type\":\"hist\",\"name\":");
	json_fputq(out, name);
	fprintf(out, ",\"count\":%" PRIu64 ",\"buckets\":[", (uint64_t)atomic_load(&h->count));
	for (int b = 0; b < UKS_BUCKETS; b++) {
		uint64_t c = atomic_load(&h->b[b]);

		if (!c)
			continue;
		fprintf(out, "%s{", first ? "" : ",");
		first = false;
		if (b == 0)
			fprintf(out, "\"max\":-1");
		else if (b == 1)
			fprintf(out, "\"min\":0,\"max\":0");
		else if (b - 1 >= 64)
			fprintf(out, "\"min\":%llu", 1ull << (b - 2));
		else
			fprintf(out, "\"min\":%llu,\"max\":%llu", 1ull << (b - 2),
				(1ull << (b - 1)) - 1);
		fprintf(out, ",\"count\":%" PRIu64 "}", c);
	}
	fprintf(out, "]}\n");
}

/*
 * funclatency's print_log2_hist(): its slot i (i >= 1) holds values v with
 * floor(log2(v)) + 1 == i, printed as "2^(i-1) -> 2^i - 1" ("0 -> 1" for
 * i = 1).  Our durations are first divided by the unit.
 */
void report_latency(FILE *out, const char *func, const struct uks_hist *h,
		    unsigned long long unit_div, const char *unit)
{
	uint64_t slots[66] = { 0 }, max = 0, count = atomic_load(&h->count);
	uint64_t sum = atomic_load(&h->sum);
	int idx_max = 0, stars_max = 40;

	/* Re-bucket in the unit: a bucket [2^(k-1), 2^k) ns scaled by the
	 * unit is approximate for usecs/msecs, exact for nsecs. */
	for (int b = 1; b < UKS_BUCKETS; b++) {
		uint64_t c = atomic_load(&h->b[b]);
		uint64_t lo = b == 1 ? 0 : 1ull << (b - 2);
		uint64_t v = lo / unit_div;
		int slot = v ? 64 - __builtin_clzll(v) : 0;

		if (!c)
			continue;
		if (slot == 0)
			slot = 1;	/* "0 -> 1" */
		slots[slot] += c;
	}
	for (int i = 1; i < 66; i++) {
		if (slots[i])
			idx_max = i;
		if (slots[i] > max)
			max = slots[i];
	}
	fprintf(out, "%s\n", func);
	if (!idx_max) {
		fprintf(out, "     %-19s : count     distribution\n", unit);
		fprintf(out, "(no calls returned)\n\n");
		return;
	}
	if (idx_max <= 32)
		fprintf(out, "     %-19s : count     distribution\n", unit);
	else {
		fprintf(out, "               %-29s : count     distribution\n", unit);
		stars_max = 20;
	}
	for (int i = 1; i <= idx_max; i++) {
		unsigned long long low = (1ull << i) >> 1, high = (1ull << i) - 1;
		char stars[64];
		int n = max ? (int)(slots[i] * (uint64_t)stars_max / max) : 0;

		if (i == 64)
			high = ~0ull;
		if (low == high)
			low--;
		memset(stars, '*', (size_t)n);
		stars[n] = '\0';
		if (idx_max <= 32)
			fprintf(out, "%10llu -> %-10llu : %-8" PRIu64 " |%-*s|\n", low, high,
				slots[i], stars_max, stars);
		else
			fprintf(out, "%20llu -> %-20llu : %-8" PRIu64 " |%-*s|\n", low, high,
				slots[i], stars_max, stars);
	}
	fprintf(out, "\navg = %llu %s, total: %llu %s, count: %" PRIu64 "\n\n",
		count ? (unsigned long long)(sum / count / unit_div) : 0ull, unit,
		(unsigned long long)(sum / unit_div), unit, count);
}

void report_latency_json(FILE *out, const char *func, const struct uks_hist *h,
			 unsigned long long unit_div, const char *unit)
{
	uint64_t count = atomic_load(&h->count), sum = atomic_load(&h->sum);
	bool first = true;

	fprintf(out, "{\"type\":\"latency\",\"function\":");
	json_fputq(out, func);
	fprintf(out, ",\"unit\":\"%s\",\"count\":%" PRIu64 ",\"total\":%llu,\"avg\":%llu,"
		"\"buckets_ns\":[", unit, count, (unsigned long long)(sum / unit_div),
		count ? (unsigned long long)(sum / count / unit_div) : 0ull);
	for (int b = 1; b < UKS_BUCKETS; b++) {
		uint64_t c = atomic_load(&h->b[b]);

		if (!c)
			continue;
		fprintf(out, "%s{\"min\":%llu,\"max\":%llu,\"count\":%" PRIu64 "}",
			first ? "" : ",", b == 1 ? 0ull : 1ull << (b - 2),
			b == 1 ? 0ull : (b - 1 >= 64 ? ~0ull : (1ull << (b - 1)) - 1), c);
		first = false;
	}
	fprintf(out, "]}\n");
}
