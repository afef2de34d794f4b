// SPDX-License-Identifier: MIT
/*
 * objmap.c - see objmap.h.  Entries are few (tens per process); lookups go
 * through a direct-mapped cache of the strings made, since probe addresses
 * and call sites repeat.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objmap.h"
#include "syms.h"

#define MAX_RANGES	16

struct oent {
	int pid;
	uint64_t from, to;	/* valid in [from, to) */
	uint64_t bias;
	uint64_t ranges[MAX_RANGES][2];
	int nranges;
	char *path;
	const char *base;
	bool is_exe;		/* REC_EXEC: the image, no ranges */
	struct symfile *sf;
	bool sf_tried;
};

#define CACHE_SIZE	8192

struct cent {
	const struct oent *o;	/* NULL: outside every object */
	int pid;
	uint64_t addr;
	bool with_off;
	char *text;
};

struct oname {
	int pid;
	uint64_t from, addr;
	char *name;
};

struct objmaps {
	struct oent *v;
	size_t n, cap;
	struct oname *names;	/* REC_NAME */
	size_t nnames, capnames;
	struct cent cache[CACHE_SIZE];
};

struct objmaps *objmaps_new(void)
{
	return calloc(1, sizeof(struct objmaps));
}

void objmaps_free(struct objmaps *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].path);
	for (int i = 0; i < CACHE_SIZE; i++)
		free(m->cache[i].text);
	for (size_t i = 0; i < m->nnames; i++)
		free(m->names[i].name);
	free(m->names);
	free(m->v);
	free(m);
}

/* A new entry of process pid, valid from ts on; NULL without memory. */
static struct oent *add(struct objmaps *m, int pid, uint64_t ts)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 64;
		struct oent *nv = realloc(m->v, cap * sizeof(*nv));

		if (!nv)
			return NULL;
		m->v = nv;
		m->cap = cap;
	}
	memset(&m->v[m->n], 0, sizeof(m->v[0]));
	m->v[m->n].pid = pid;
	m->v[m->n].from = ts;
	m->v[m->n].to = UINT64_MAX;
	return &m->v[m->n++];
}

static const char *basename_of(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

void objmaps_apply(struct objmaps *m, int pid, const struct rec *r)
{
	const char *body = (const char *)(r + 1);
	size_t blen = r->size > sizeof(*r) ? r->size - sizeof(*r) : 0;
	struct oent *o;

	switch (r->kind) {
	case REC_EXEC:
		/* A new image: what the process had is gone. */
		for (size_t i = 0; i < m->n; i++)
			if (m->v[i].pid == pid && m->v[i].to > r->ts)
				m->v[i].to = r->ts;
		o = add(m, pid, r->ts);
		if (!o)
			return;
		o->is_exe = true;
		o->path = strndup(body, blen);
		o->base = o->path ? basename_of(o->path) : "?";
		break;
	case REC_OBJ: {
		int nr = (int)r->ret;
		size_t plen;

		if (nr < 0 || nr > MAX_RANGES || (size_t)nr * 16 > blen)
			return;
		plen = blen - (size_t)nr * 16;
		o = add(m, pid, r->ts);
		if (!o)
			return;
		o->bias = r->ip;
		o->nranges = nr;
		memcpy(o->ranges, body, (size_t)nr * 16);
		o->path = strndup(body + (size_t)nr * 16, plen);
		o->base = o->path ? basename_of(o->path) : "?";
		break;
	}
	case REC_NAME:
		if (m->nnames == m->capnames) {
			size_t cap = m->capnames ? 2 * m->capnames : 64;
			struct oname *nn = realloc(m->names, cap * sizeof(*nn));

			if (!nn)
				return;
			m->names = nn;
			m->capnames = cap;
		}
		m->names[m->nnames] = (struct oname){ pid, r->ts, r->ip, strndup(body, blen) };
		if (m->names[m->nnames].name)
			m->nnames++;
		break;
	case REC_OBJ_GONE:
		for (size_t i = 0; i < m->n; i++)
			if (m->v[i].pid == pid && !m->v[i].is_exe && m->v[i].bias == r->ip &&
			    m->v[i].to > r->ts)
				m->v[i].to = r->ts;
		break;
	default:
		break;
	}
}

static const struct oent *containing(struct objmaps *m, int pid, uint64_t ts, uint64_t addr)
{
	/* Latest first: a later load at the same address wins. */
	for (size_t i = m->n; i-- > 0;) {
		const struct oent *o = &m->v[i];

		if (o->pid != pid || o->is_exe || ts < o->from || ts >= o->to)
			continue;
		for (int k = 0; k < o->nranges; k++)
			if (addr >= o->ranges[k][0] && addr < o->ranges[k][1])
				return o;
	}
	return NULL;
}

const char *objmaps_symbolize(struct objmaps *m, int pid, uint64_t ts, uint64_t addr,
			      bool with_off)
{
	struct oent *o = (struct oent *)containing(m, pid, ts, addr);
	struct cent *c = &m->cache[((addr >> 2) ^ (addr >> 13) ^ (uint64_t)pid ^ with_off) %
				   CACHE_SIZE];
	char buf[4096];

	if (c->text && c->o == o && c->addr == addr && c->with_off == with_off &&
	    (o || c->pid == pid))
		return c->text;
	for (size_t i = 0; i < m->nnames; i++) {
		const struct oname *nm = &m->names[i];

		if (nm->pid == pid && nm->addr == addr && nm->from <= ts) {
			/* A function known by the name it was probed by (its
			 * own symbol may be missing: a stripped library). */
			char plain[4096];

			if (o && !o->sf_tried) {
				o->sf_tried = true;
				o->sf = o->path && o->path[0] == '/' ? symfile_cached(o->path) : NULL;
			}
			if (o && sym_describe(o->sf, o->base, addr - o->bias, with_off, plain,
					      sizeof(plain)) == 0 && !strncmp(plain, nm->name,
									 strlen(nm->name)))
				snprintf(buf, sizeof(buf), "%s", plain);
			else
				snprintf(buf, sizeof(buf), "%s%s", nm->name, with_off ? "+0x0" : "");
			goto keep;
		}
	}
	if (o) {
		if (!o->sf_tried) {
			o->sf_tried = true;
			o->sf = o->path && o->path[0] == '/' ? symfile_cached(o->path) : NULL;
		}
		sym_describe(o->sf, o->base, addr - o->bias, with_off, buf, sizeof(buf));
	} else {
		snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)addr);
	}
keep:
	free(c->text);
	c->text = strdup(buf);
	c->o = o;
	c->pid = pid;
	c->addr = addr;
	c->with_off = with_off;
	return c->text ? c->text : "?";
}

const char *objmaps_exe(struct objmaps *m, int pid, uint64_t ts)
{
	for (size_t i = m->n; i-- > 0;) {
		const struct oent *o = &m->v[i];

		if (o->pid == pid && o->is_exe && ts >= o->from && ts < o->to)
			return o->base;
	}
	return NULL;
}

int objmaps_object(struct objmaps *m, int pid, uint64_t ts, uint64_t addr, const char **path,
		   uint64_t *bias)
{
	const struct oent *o = containing(m, pid, ts, addr);

	if (!o || !o->path || o->path[0] != '/')
		return -ENOENT;
	*path = o->path;
	*bias = o->bias;
	return 0;
}
