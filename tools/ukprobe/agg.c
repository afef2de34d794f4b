// SPDX-License-Identifier: MIT
/*
 * agg.c - keyed maps (see agg.h): an open-addressing hash table of
 * (event, key text) -> count or log2 histogram, grown as needed.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agg.h"
#include "json.h"
#include "report.h"

enum { K_TID = -1, K_PID = -2, K_COMM = -3, K_STACK = -4 };

struct aent {
	char *key;	/* "EVENT\0k1\0k2..." as text; NULL: empty slot */
	size_t klen;
	unsigned long long n;
	struct uks_hist *h;	/* AGG_HIST, AGG_LATENCY */
	int ev;
};

struct agg {
	struct agg_spec spec;
	int *argidx;		/* AGG_HIST: per event, the argument or -1 */
	const struct pe_event *evs;
	int nevs;
	int nkeys;
	char names[AGG_MAX_KEYS][PE_MAX_ARG_NAME_LEN + 1];
	int what[AGG_MAX_KEYS];	/* K_* or, per event, looked up by name */
	struct aent *v;
	size_t cap, n;
};

/* AGG_HIST: which argument of each definition is binned. */
static int find_hist_args(struct agg *a, char *err, size_t errlen)
{
	bool found = false;

	a->argidx = calloc((size_t)a->nevs + 1, sizeof(*a->argidx));
	if (!a->argidx) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (int e = 0; e < a->nevs; e++) {
		a->argidx[e] = -1;
		for (int i = 0; i < a->evs[e].nargs && a->argidx[e] < 0; i++)
			if (pe_arg_matches(&a->evs[e], &a->evs[e].args[i], a->spec.name) &&
			    pe_arg_numeric(&a->evs[e].args[i]))
				a->argidx[e] = i;
		found |= a->argidx[e] >= 0;
	}
	if (!found) {
		snprintf(err, errlen, "--hist %s: no definition has a number of that name",
			 a->spec.name);
		return -ENOENT;
	}
	return 0;
}

struct agg *agg_new(const struct agg_spec *spec, const struct pe_event *evs, int nevs,
		    char *err, size_t errlen)
{
	const char *keys = spec->keys;
	struct agg *a = calloc(1, sizeof(*a));
	char *copy = strdup(keys ? keys : ""), *save = NULL;

	if (!a || !copy) {
		free(a);
		free(copy);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	a->spec = *spec;
	a->evs = evs;
	a->nevs = nevs;
	if (spec->kind == AGG_HIST && find_hist_args(a, err, errlen))
		goto fail;
	for (char *k = strtok_r(copy, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
		bool found = false;

		if (a->nkeys == AGG_MAX_KEYS) {
			snprintf(err, errlen, "--by: at most %d keys", AGG_MAX_KEYS);
			goto fail;
		}
		if (strlen(k) > PE_MAX_ARG_NAME_LEN) {
			snprintf(err, errlen, "--by %s: no such key", k);
			goto fail;
		}
		strcpy(a->names[a->nkeys], k);
		if (!strcmp(k, "tid"))
			a->what[a->nkeys] = K_TID;
		else if (!strcmp(k, "pid"))
			a->what[a->nkeys] = K_PID;
		else if (!strcmp(k, "comm"))
			a->what[a->nkeys] = K_COMM;
		else if (!strcmp(k, "stack"))
			a->what[a->nkeys] = K_STACK;
		else {
			a->what[a->nkeys] = 0;
			for (int e = 0; e < nevs && !found; e++)
				for (int i = 0; i < evs[e].nargs && !found; i++)
					found = pe_arg_matches(&evs[e], &evs[e].args[i], k);
			if (!found) {
				snprintf(err, errlen, "--by %s: not tid, pid, comm, or the name of "
					 "an argument of a definition", k);
				goto fail;
			}
		}
		a->nkeys++;
	}
	free(copy);
	if (!a->nkeys && keys) {
		snprintf(err, errlen, "--by: give a key (tid, pid, comm, ARG)");
		free(a->argidx);
		free(a);
		return NULL;
	}
	return a;
fail:
	free(copy);
	free(a->argidx);
	free(a);
	return NULL;
}

void agg_free(struct agg *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->cap; i++) {
		free(a->v[i].key);
		free(a->v[i].h);
	}
	free(a->v);
	free(a->argidx);
	free(a);
}

static uint64_t hash(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

static int grow(struct agg *a)
{
	size_t cap = a->cap ? 2 * a->cap : 1024;
	struct aent *nv = calloc(cap, sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	for (size_t i = 0; i < a->cap; i++) {
		struct aent *e = &a->v[i];
		size_t j;

		if (!e->key)
			continue;
		for (j = hash(e->key, e->klen) & (cap - 1); nv[j].key; j = (j + 1) & (cap - 1))
			;
		nv[j] = *e;
	}
	free(a->v);
	a->v = nv;
	a->cap = cap;
	return 0;
}

/* The entry of (event, keys) of hit h; NULL if there is no memory. */
static struct aent *entry(struct agg *a, const struct agg_hit *h, const char *first)
{
	char key[16384];
	size_t n = 0, j;

	n += (size_t)snprintf(key, sizeof(key), "%s", first) + 1;
	for (int k = 0; k < a->nkeys && n < sizeof(key); k++) {
		const char *v = "";
		char num[32];

		switch (a->what[k]) {
		case K_TID: snprintf(num, sizeof(num), "%d", h->tid); v = num; break;
		case K_PID: snprintf(num, sizeof(num), "%d", h->pid); v = num; break;
		case K_COMM: v = h->comm; break;
		case K_STACK: v = h->stack ? h->stack : ""; break;
		default:
			for (int i = 0; i < a->evs[h->ev].nargs; i++)
				if (pe_arg_matches(&a->evs[h->ev], &a->evs[h->ev].args[i], a->names[k]))
					v = h->argval(h->ctx, i);
			break;
		}
		n += (size_t)snprintf(key + n, sizeof(key) - n, "%s", v) + 1;
	}
	if (n > sizeof(key))
		n = sizeof(key);
	if ((a->n + 1) * 2 > a->cap && grow(a))
		return NULL;
	for (j = hash(key, n) & (a->cap - 1); a->v[j].key; j = (j + 1) & (a->cap - 1))
		if (a->v[j].klen == n && !memcmp(a->v[j].key, key, n))
			return &a->v[j];
	if (a->spec.kind != AGG_COUNT && !(a->v[j].h = calloc(1, sizeof(*a->v[j].h))))
		return NULL;
	a->v[j].key = malloc(n);
	if (!a->v[j].key) {
		free(a->v[j].h);
		a->v[j].h = NULL;
		return NULL;
	}
	memcpy(a->v[j].key, key, n);
	a->v[j].klen = n;
	a->v[j].ev = h->ev;
	a->n++;
	return &a->v[j];
}

static void hist_put(struct uks_hist *h, int64_t v, bool is_signed)
{
	int b = is_signed ? uks_bucket_s(v) : uks_bucket_u((uint64_t)v);

	atomic_fetch_add_explicit(&h->b[b], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum, (uint64_t)v, memory_order_relaxed);
}

void agg_add(struct agg *a, const struct agg_hit *h)
{
	struct aent *e;
	int64_t v = 0;
	bool sgn = false;

	switch (a->spec.kind) {
	case AGG_COUNT:
		if ((e = entry(a, h, h->evname)))
			e->n++;
		return;
	case AGG_HIST:
		if (a->argidx[h->ev] < 0 || !h->argnum(h->ctx, a->argidx[h->ev], &v, &sgn))
			return;
		break;
	case AGG_LATENCY:
		if (!h->has_duration)
			return;
		v = (int64_t)h->duration;
		break;
	}
	if ((e = entry(a, h, a->spec.kind == AGG_LATENCY ? h->func : h->evname))) {
		e->n++;
		hist_put(e->h, v, sgn);
	}
}

static int cmp_ent(const void *x, const void *y)
{
	const struct aent *a = x, *b = y;

	if (a->n != b->n)
		return a->n < b->n ? -1 : 1;
	if (a->klen != b->klen)
		return a->klen < b->klen ? -1 : 1;
	return memcmp(a->key, b->key, a->klen);
}

/* The entries, smallest count first (malloc'd; NULL if none could be). */
static struct aent *sorted(const struct agg *a, size_t *n)
{
	struct aent *v = calloc(a->n + 1, sizeof(*v));

	*n = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < a->cap; i++)
		if (a->v[i].key)
			v[(*n)++] = a->v[i];
	qsort(v, *n, sizeof(*v), cmp_ent);
	return v;
}

/* The keys after an entry's first part p, as text: ", v" each, or
 * ", NAME=v" (named); a stack on lines of its own. */
static void text_keys(FILE *out, const struct agg *a, const char *p, bool named)
{
	for (int k = 0; k < a->nkeys; k++) {
		p += strlen(p) + 1;
		if (a->what[k] == K_STACK && named)
			fprintf(out, "%sstack:\n%s", k ? ", " : "", p);
		else if (a->what[k] == K_STACK)
			fprintf(out, ",\n%s", p);
		else if (named)
			fprintf(out, "%s%s=%s", k ? ", " : "", a->names[k], p);
		else
			fprintf(out, ", %s", p);
	}
}

/* "key":{"NAME":"v",...} of the keys after the first part p. */
static void json_keys(FILE *out, const struct agg *a, const char *p)
{
	fprintf(out, "\"key\":{");
	for (int k = 0; k < a->nkeys; k++) {
		p += strlen(p) + 1;
		fputs(k ? "," : "", out);
		json_fputq(out, a->names[k]);
		fputc(':', out);
		json_fputq(out, p);
	}
	fputc('}', out);
}

static void print_counts(const struct agg *a, const struct aent *v, size_t n, FILE *out,
			 bool json)
{
	if (json) {
		fprintf(out, "{\"type\":\"counts\",\"by\":[");
		for (int k = 0; k < a->nkeys; k++) {
			fputs(k ? "," : "", out);
			json_fputq(out, a->names[k]);
		}
		fprintf(out, "],\"counts\":[");
	}
	for (size_t i = 0; i < n; i++) {
		if (json) {
			fprintf(out, "%s{\"event\":", i ? "," : "");
			json_fputq(out, v[i].key);
			fputc(',', out);
			json_keys(out, a, v[i].key);
			fprintf(out, ",\"count\":%llu}", v[i].n);
		} else {
			fprintf(out, "@count[%s", v[i].key);
			text_keys(out, a, v[i].key, false);
			fprintf(out, "]: %llu\n", v[i].n);
		}
	}
	fprintf(out, json ? "]}\n" : "\n");
}

/* One histogram per entry: @NAME[EVENT, KEY...]: as bpftrace, or
 * funclatency's table under "FUNC [KEY=v, ...]"; JSON as the unkeyed
 * ones (report.h) with the event and a "key" object. */
static void print_hists(const struct agg *a, const struct aent *v, size_t n, FILE *out,
			bool json)
{
	bool lat = a->spec.kind == AGG_LATENCY;

	for (size_t i = 0; i < n; i++) {
		char *label = NULL;
		size_t len = 0;
		FILE *l;

		if (json) {
			fprintf(out, "{\"type\":\"%s\",", lat ? "latency" : "hist");
			if (!lat) {
				fprintf(out, "\"name\":");
				json_fputq(out, a->spec.name);
				fputc(',', out);
			}
			fprintf(out, "\"%s\":", lat ? "function" : "event");
			json_fputq(out, v[i].key);
			fputc(',', out);
			json_keys(out, a, v[i].key);
			fputc(',', out);
			if (lat)
				report_latency_json_body(out, v[i].h, a->spec.unit_div, a->spec.unit);
			else
				report_hist_json_body(out, v[i].h);
			fprintf(out, "}\n");
			continue;
		}
		l = open_memstream(&label, &len);
		if (!l)
			return;
		if (lat) {
			fprintf(l, "%s [", v[i].key);
			text_keys(l, a, v[i].key, true);
			fputc(']', l);
		} else {
			fprintf(l, "%s[%s", a->spec.name, v[i].key);
			text_keys(l, a, v[i].key, false);
			fputc(']', l);
		}
		fclose(l);
		if (lat)
			report_latency(out, label, v[i].h, a->spec.unit_div, a->spec.unit);
		else
			report_hist(out, label, v[i].h);
		free(label);
	}
}

void agg_print(struct agg *a, FILE *out, bool json)
{
	size_t n;
	struct aent *v = sorted(a, &n);

	if (!v)
		return;
	if (a->spec.kind == AGG_COUNT)
		print_counts(a, v, n, out, json);
	else
		print_hists(a, v, n, out, json);
	free(v);
}

void agg_print_folded(struct agg *a, FILE *out)
{
	size_t n;
	struct aent *v = sorted(a, &n);

	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s %llu\n", v[i].key, v[i].n);
	free(v);
}
