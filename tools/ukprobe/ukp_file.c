// SPDX-License-Identifier: MIT
/*
 * ukp_file.c - FILE.ukp written (ukp_file.h) and read back:
 * `ukprobe report FILE.ukp [--format text|json|perfetto] [-o OUT]`.
 *
 * The report reads every chunk, applies the meta records (objmap.h: they
 * are time-stamped, so a record is symbolized with the objects of its
 * time), sorts the records of all threads by time and formats them as the
 * live trace would have.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "agg.h"
#include "format.h"
#include "syms.h"
#include "report.h"
#include "shm.h"
#include "tool.h"
#include "ukp_file.h"

static int write_full(int fd, const void *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p = (const char *)p + w;
		n -= (size_t)w;
	}
	return 0;
}

int ukp_write_header(int fd, const char *text)
{
	struct ukf_header h = { .version = UKF_VERSION, .hdr_len = (uint32_t)strlen(text) };

	memcpy(h.magic, UKF_MAGIC, sizeof(h.magic));
	if (write_full(fd, &h, sizeof(h)) || write_full(fd, text, h.hdr_len))
		return -1;
	return 0;
}

void ukp_write_lost(int fd, int pid, uint64_t n)
{
	struct ukf_chunk h = { .magic = UKF_CHUNK_MAGIC, .type = UKF_LOST, .pid = pid,
			       .len = sizeof(n) };
	struct iovec iov[2] = { { &h, sizeof(h) }, { &n, sizeof(n) } };

	if (writev(fd, iov, 2) < 0)
		return;
}

/* The counters: the header, then its nevents events (uks_ev() finds them
 * again: ev_off is where they follow the header in the chunk too). */
int ukp_write_summary(int fd, const struct uks *shm)
{
	struct ukf_chunk h = { .magic = UKF_CHUNK_MAGIC, .type = UKF_SUMMARY,
			       .len = sizeof(struct uks) +
				      (uint64_t)shm->nevents * sizeof(struct uks_event) };

	if (write_full(fd, &h, sizeof(h)) || write_full(fd, shm, sizeof(struct uks)) ||
	    write_full(fd, uks_ev(shm, 0), (size_t)shm->nevents * sizeof(struct uks_event)))
		return -1;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* ukprobe report                                                            */
/* ------------------------------------------------------------------------ */

struct ent {
	uint64_t ts;
	uint64_t seq;
	int pid;
	const struct rec *r;
};

static int cmp_ent(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

struct ukf {
	char *map;
	size_t size;
	struct defs defs;
	char *hists[UKS_MAX_HISTS];
	int nhists;
	bool latency, count, events;
	char *by;
	unsigned long long unit_div;
	char unit[16];
	const struct uks *summary;
};

static int parse_header(struct ukf *f, const char *text, size_t len)
{
	char *copy = strndup(text, len), *save = NULL;

	if (!copy)
		return -1;
	f->unit_div = 1;
	snprintf(f->unit, sizeof(f->unit), "nsecs");
	f->events = true;
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *v = strchr(l, '=');

		if (!v)
			continue;
		*v++ = '\0';
		if (!strcmp(l, "def")) {
			if (defs_add(&f->defs, v))
				break;
		} else if (!strcmp(l, "hist") && f->nhists < UKS_MAX_HISTS) {
			f->hists[f->nhists++] = strdup(v);
		} else if (!strcmp(l, "latency")) {
			f->latency = atoi(v);
		} else if (!strcmp(l, "count")) {
			f->count = atoi(v);
		} else if (!strcmp(l, "events")) {
			f->events = atoi(v);
		} else if (!strcmp(l, "by")) {
			f->by = strdup(v);
		} else if (!strcmp(l, "unit")) {
			snprintf(f->unit, sizeof(f->unit), "%s", v);
		} else if (!strcmp(l, "unit_div")) {
			f->unit_div = strtoull(v, NULL, 10);
		}
	}
	free(copy);
	return 0;
}

static int open_ukf(struct ukf *f, const char *path)
{
	const struct ukf_header *h;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		tool_err("%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || (size_t)st.st_size < sizeof(*h)) {
		tool_err("%s: not a ukprobe recording (too short)", path);
		close(fd);
		return -1;
	}
	f->size = (size_t)st.st_size;
	f->map = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (f->map == MAP_FAILED) {
		tool_err("%s: %s", path, strerror(errno));
		return -1;
	}
	h = (const struct ukf_header *)f->map;
	if (memcmp(h->magic, UKF_MAGIC, sizeof(h->magic)) || h->version != UKF_VERSION ||
	    sizeof(*h) + h->hdr_len > f->size) {
		tool_err("%s: not a ukprobe recording (FILE.ukp of ukprobe trace -o)", path);
		return -1;
	}
	return parse_header(f, f->map + sizeof(*h), h->hdr_len);
}

int cmd_report(int argc, char **argv, const char *usage)
{
	static const struct option lo[] = {
		{ "format", required_argument, NULL, 'T' },
		{ "output", required_argument, NULL, 'o' },
		{ "by", required_argument, NULL, 'B' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *format = NULL, *output = NULL, *by = NULL;
	struct ukf f = { 0 };
	struct pe_event *evs;
	struct objmaps *maps;
	struct fmt_ctx fc;
	struct ent *v = NULL;
	size_t n = 0, cap = 0, off;
	unsigned long long lost_outside = 0;
	FILE *out = stdout;
	bool per_probe = false;
	int c, fmt;

	while ((c = getopt_long(argc, argv, "+o:h", lo, NULL)) != -1) {
		switch (c) {
		case 'T': format = optarg; break;
		case 'o': output = optarg; break;
		case 'B': by = optarg; break;
		case 'h': fputs(usage, stdout); return 0;
		default:
			fprintf(stderr, "Try 'ukprobe report --help'\n");
			return 2;
		}
	}
	if (optind != argc - 1) {
		tool_err("report: one FILE.ukp (see ukprobe report --help)");
		return 2;
	}
	fmt = fmt_parse(format);
	if (fmt < 0 || fmt == FMT_UKP) {
		tool_err("report: unknown format '%s' (text, json, perfetto, folded)", format);
		return 2;
	}
	if (open_ukf(&f, argv[optind]))
		return 2;
	if (output) {
		out = fopen(output, "we");
		if (!out) {
			tool_err("%s: %s", output, strerror(errno));
			return 2;
		}
	}
	evs = calloc((size_t)f.defs.n + 1, sizeof(*evs));
	if (!evs)
		return 2;
	pe_set_resolvers(NULL, NULL);
	for (int i = 0; i < f.defs.n; i++) {
		struct pe_error e;

		if (pe_parse(f.defs.v[i], &evs[i], &e))
			memset(&evs[i], 0, sizeof(evs[i]));
	}
	maps = objmaps_new();
	fmt_init(&fc, (enum out_format)fmt, out, evs, f.defs.n, maps);
	if (fmt == FMT_FOLDED) {
		struct agg_spec s = { .kind = AGG_COUNT };
		char why[64];

		fc.folded = agg_new(&s, evs, f.defs.n, why, sizeof(why));
		f.events = true;
	}
	sym_demangle_may_load(true);
	for (int i = 0; i < f.defs.n; i++)
		if (evs[i].multi && f.count)
			per_probe = true;
	if (by || f.by || per_probe) {
		/* Counts are keyed when the recording counted, or when it has
		 * nothing else to key. */
		struct fmt_maps m = {
			.by = by ? by : f.by, .count = f.count || per_probe || (!f.nhists && !f.latency),
			.hists = f.hists, .nhists = f.nhists, .latency = f.latency,
			.unit_div = f.unit_div, .unit = f.unit,
		};
		char why[256];

		if (fmt_maps_init(&fc, &m, why, sizeof(why))) {
			tool_err("%s", why);
			return 2;
		}
		fc.quiet = !f.events || by;
	}

	off = sizeof(struct ukf_header) + ((const struct ukf_header *)f.map)->hdr_len;
	while (off + sizeof(struct ukf_chunk) <= f.size) {
		const struct ukf_chunk *ch = (const struct ukf_chunk *)(f.map + off);
		const char *p, *end;

		if (ch->magic != UKF_CHUNK_MAGIC || ch->len > f.size - off - sizeof(*ch))
			break;	/* cut short: what came before stands */
		p = (const char *)(ch + 1);
		end = p + ch->len;
		off += sizeof(*ch) + ch->len;
		if (ch->type == UKF_SUMMARY && ch->len >= sizeof(struct uks) &&
		    ch->len == sizeof(struct uks) +
			       (uint64_t)((const struct uks *)p)->nevents * sizeof(struct uks_event) &&
		    ((const struct uks *)p)->ev_off == sizeof(struct uks) && !((uintptr_t)p & 7)) {
			f.summary = (const struct uks *)p;
			continue;
		}
		if (ch->type == UKF_LOST && ch->len >= 8) {
			uint64_t l;

			memcpy(&l, p, 8);
			lost_outside += l;
			continue;
		}
		if (ch->type != UKF_RECORDS)
			continue;
		while (p + sizeof(struct rec) <= end) {
			const struct rec *r = (const struct rec *)p;

			if (r->size < 8 || r->size > (size_t)(end - p) || (r->size & 7))
				break;
			p += r->size;
			if (r->event == REC_PAD)
				continue;
			if (ch->kind == RING_META) {
				objmaps_apply(maps, ch->pid, r);
				continue;
			}
			if (n == cap) {
				size_t ncap = cap ? 2 * cap : 4096;
				struct ent *nv = realloc(v, ncap * sizeof(*nv));

				if (!nv) {
					tool_err("report: out of memory");
					return 2;
				}
				v = nv;
				cap = ncap;
			}
			v[n] = (struct ent){ r->ts, n, ch->pid, r };
			n++;
		}
	}
	qsort(v, n, sizeof(*v), cmp_ent);
	fmt_begin(&fc);
	if (f.events || fmt_maps_any(&fc))
		for (size_t i = 0; i < n; i++)
			fmt_record(&fc, v[i].pid, v[i].r);
	if (lost_outside)
		fmt_lost(&fc, 0, 0, n ? v[n - 1].ts : 0, lost_outside);
	fmt_end(&fc);
	fmt_maps_print(&fc, fmt == FMT_PERFETTO ? stderr : out, fmt == FMT_JSON);
	if (f.summary) {
		struct summary_opts so = {
			.count = f.count && !fc.agg, .hists = f.hists,
			.nhists = fc.nhagg ? 0 : f.nhists, .latency = f.latency && !fc.lagg,
			.unit_div = f.unit_div, .unit = f.unit,
		};

		report_summaries(fmt == FMT_PERFETTO ? stderr : out, fmt == FMT_JSON, f.summary,
				 evs, f.defs.n, &so);
	}
	if (fc.lost)
		fprintf(stderr, "ukprobe: %llu events lost in this recording (see the [LOST] marks)\n",
			fc.lost);
	fmt_fini(&fc);
	objmaps_free(maps);
	free(v);
	if (out != stdout)
		fclose(out);
	else
		fflush(out);
	return 0;
}
