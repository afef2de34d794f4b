// SPDX-License-Identifier: MIT
/*
 * agg.c - keyed counts (see agg.h): an open-addressing hash table of
 * (event, key text) -> count, grown as needed.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agg.h"
#include "json.h"

enum { K_TID = -1, K_PID = -2, K_COMM = -3, K_STACK = -4 };

struct aent {
	char *key;	/* "EVENT\0k1\0k2..." as text; NULL: empty slot */
	size_t klen;
	unsigned long long n;
	int ev;
};

struct agg {
	const struct pe_event *evs;
	int nevs;
	int nkeys;
	char names[AGG_MAX_KEYS][PE_MAX_ARG_NAME_LEN + 1];
	int what[AGG_MAX_KEYS];	/* K_* or, per event, looked up by name */
	struct aent *v;
	size_t cap, n;
};

struct agg *agg_new(const char *keys, const struct pe_event *evs, int nevs, char *err,
		    size_t errlen)
{
	struct agg *a = calloc(1, sizeof(*a));
	char *copy = strdup(keys ? keys : ""), *save = NULL;

	if (!a || !copy) {
		free(a);
		free(copy);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	a->evs = evs;
	a->nevs = nevs;
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
					found = !strcmp(evs[e].args[i].name, k);
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
		free(a);
		return NULL;
	}
	return a;
fail:
	free(copy);
	free(a);
	return NULL;
}

void agg_free(struct agg *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->cap; i++)
		free(a->v[i].key);
	free(a->v);
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

void agg_add(struct agg *a, int ev, const char *evname, int pid, int tid, const char *comm,
	     const char *stack, const char *(*argval)(void *ctx, int i), void *ctx)
{
	char key[16384];
	size_t n = 0, j;

	n += (size_t)snprintf(key, sizeof(key), "%s", evname) + 1;
	for (int k = 0; k < a->nkeys && n < sizeof(key); k++) {
		const char *v = "";
		char num[32];

		switch (a->what[k]) {
		case K_TID: snprintf(num, sizeof(num), "%d", tid); v = num; break;
		case K_PID: snprintf(num, sizeof(num), "%d", pid); v = num; break;
		case K_COMM: v = comm; break;
		case K_STACK: v = stack ? stack : ""; break;
		default:
			for (int i = 0; i < a->evs[ev].nargs; i++)
				if (!strcmp(a->evs[ev].args[i].name, a->names[k]))
					v = argval(ctx, i);
			break;
		}
		n += (size_t)snprintf(key + n, sizeof(key) - n, "%s", v) + 1;
	}
	if (n > sizeof(key))
		n = sizeof(key);
	if ((a->n + 1) * 2 > a->cap && grow(a))
		return;
	for (j = hash(key, n) & (a->cap - 1); a->v[j].key; j = (j + 1) & (a->cap - 1)) {
		if (a->v[j].klen == n && !memcmp(a->v[j].key, key, n)) {
			a->v[j].n++;
			return;
		}
	}
	a->v[j].key = malloc(n);
	if (!a->v[j].key)
		return;
	memcpy(a->v[j].key, key, n);
	a->v[j].klen = n;
	a->v[j].n = 1;
	a->v[j].ev = ev;
	a->n++;
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

void agg_print(struct agg *a, FILE *out, bool json)
{
	size_t n;
	struct aent *v = sorted(a, &n);

	if (!v)
		return;
	if (json) {
		fprintf(out, "{\"type\":\"counts\",\"by\":[");
		for (int k = 0; k < a->nkeys; k++) {
			fputs(k ? "," : "", out);
			json_fputq(out, a->names[k]);
		}
		fprintf(out, "],\"counts\":[");
	}
	for (size_t i = 0; i < n; i++) {
		const char *p = v[i].key;

		if (json) {
			fprintf(out, "%s{\"event\":", i ? "," : "");
			json_fputq(out, p);
			fprintf(out, ",\"key\":{");
		} else {
			fprintf(out, "@count[%s", p);
		}
		p += strlen(p) + 1;
		for (int k = 0; k < a->nkeys; k++) {
			if (!json && a->what[k] == K_STACK) {
				fprintf(out, ",\n%s", p);
				p += strlen(p) + 1;
				continue;
			}
			if (json) {
				fputs(k ? "," : "", out);
				json_fputq(out, a->names[k]);
				fputc(':', out);
				json_fputq(out, p);
			} else {
				fprintf(out, ", %s", p);
			}
			p += strlen(p) + 1;
		}
		if (json)
			fprintf(out, "},\"count\":%llu}", v[i].n);
		else
			fprintf(out, "]: %llu\n", v[i].n);
	}
	fprintf(out, json ? "]}\n" : "\n");
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
