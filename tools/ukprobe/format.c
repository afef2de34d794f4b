// SPDX-License-Identifier: MIT
/*
 * format.c - records made text in the command (see format.h): the trace
 * lines of the kernel's trace buffer, JSON lines, Chrome/Perfetto trace
 * events.  The traced process never formats anything; addresses are
 * symbolized here with the objects the process had loaded at the time
 * (objmap.h).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fetch.h"
#include "agg.h"
#include "format.h"
#include "json.h"
#include "unwind.h"

/* For the symbol types of fetch arguments (fetch_format() calls the
 * installed symbolizer): the record being formatted. */
static struct objmaps *cur_maps;
static int cur_pid;
static uint64_t cur_ts;

static int symbolize_cb(unsigned long addr, char *out, size_t len)
{
	const char *s;

	if (!cur_maps)
		return -1;
	s = objmaps_symbolize(cur_maps, cur_pid, cur_ts, addr, true);
	snprintf(out, len, "%s", s);
	return strncmp(s, "0x", 2) ? 0 : -1;
}

int fmt_parse(const char *s)
{
	if (!s || !strcmp(s, "text"))
		return FMT_TEXT;
	if (!strcmp(s, "json"))
		return FMT_JSON;
	if (!strcmp(s, "perfetto") || !strcmp(s, "chrome"))
		return FMT_PERFETTO;
	if (!strcmp(s, "ukp") || !strcmp(s, "binary"))
		return FMT_UKP;
	if (!strcmp(s, "folded"))
		return FMT_FOLDED;
	return -1;
}

void fmt_init(struct fmt_ctx *c, enum out_format fmt, FILE *out,
	      const struct pe_event *evs, int nevs, struct objmaps *maps)
{
	memset(c, 0, sizeof(*c));
	c->fmt = fmt;
	c->out = out;
	c->evs = evs;
	c->nevs = nevs;
	c->maps = maps;
	pe_set_resolvers(NULL, symbolize_cb);
}

void fmt_fini(struct fmt_ctx *c)
{
	free(c->named);
	c->named = NULL;
	c->nnamed = c->capnamed = 0;
	agg_free(c->agg);
	agg_free(c->lagg);
	agg_free(c->folded);
	for (int h = 0; h < c->nhagg; h++)
		agg_free(c->hagg[h]);
	c->agg = c->lagg = c->folded = NULL;
	c->nhagg = 0;
}

int fmt_maps_init(struct fmt_ctx *c, const struct fmt_maps *m, char *err, size_t errlen)
{
	struct agg_spec s = { .keys = m->by, .kind = AGG_COUNT };

	if (m->count && !(c->agg = agg_new(&s, c->evs, c->nevs, err, errlen)))
		return -1;
	if (!m->by)
		return 0;
	s.kind = AGG_HIST;
	for (int h = 0; h < m->nhists && h < UKS_MAX_HISTS; h++) {
		s.name = m->hists[h];
		if (!(c->hagg[c->nhagg] = agg_new(&s, c->evs, c->nevs, err, errlen)))
			return -1;
		c->nhagg++;
	}
	s = (struct agg_spec){ .keys = m->by, .kind = AGG_LATENCY, .unit_div = m->unit_div,
			       .unit = m->unit };
	if (m->latency && !(c->lagg = agg_new(&s, c->evs, c->nevs, err, errlen)))
		return -1;
	return 0;
}

bool fmt_maps_any(const struct fmt_ctx *c)
{
	return c->agg || c->nhagg || c->lagg;
}

void fmt_maps_print(struct fmt_ctx *c, FILE *out, bool json)
{
	if (c->agg)
		agg_print(c->agg, out, json);
	for (int h = 0; h < c->nhagg; h++)
		agg_print(c->hagg[h], out, json);
	if (c->lagg)
		agg_print(c->lagg, out, json);
}

/* ------------------------------------------------------------------------ */
/* Output                                                                    */
/* ------------------------------------------------------------------------ */

static void out_printf(struct fmt_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_printf(struct fmt_ctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(c->out, fmt, ap);
	va_end(ap);
}

static void out_char(struct fmt_ctx *c, char ch)
{
	putc_unlocked(ch, c->out);
}

static void out_bytes(const char *s, size_t n, void *arg)
{
	fwrite_unlocked(s, 1, n, (FILE *)arg);
}

/* A JSON string body (no quotes): valid JSON whatever the program's bytes
 * (json.h). */
static void out_json_str(struct fmt_ctx *c, const char *s, size_t n)
{
	json_escape(s, n, out_bytes, c->out);
}

static void out_json_cstr(struct fmt_ctx *c, const char *s)
{
	out_json_str(c, s, strlen(s));
}

/* ------------------------------------------------------------------------ */
/* Records                                                                   */
/* ------------------------------------------------------------------------ */

struct arg_view {
	int32_t used;
	const char *data;
};

static int rec_args(const struct rec *r, struct arg_view *av, int max,
		    const struct rec_stack **stack)
{
	const char *p = (const char *)(r + 1) + 16;
	const char *end = (const char *)r + r->size;
	int n = 0;

	for (int i = 0; i < r->nargs && i < max; i++) {
		if (p + 8 > end)
			break;
		av[n].used = *(const int32_t *)p;
		av[n].data = p + 8;
		p += 8 + REC_ALIGN(av[n].used > 0 ? (uint32_t)av[n].used : 0u);
		n++;
	}
	*stack = NULL;
	if (p + sizeof(**stack) <= end) {
		const struct rec_stack *s = (const struct rec_stack *)p;

		if (s->magic == REC_STACK_MAGIC && sizeof(*s) + s->len <= (size_t)(end - p))
			*stack = s;
	}
	return n;
}

#define MAX_FRAMES	127

/* The stack of the record: " => frame [obj]" lines (text), or for keys and
 * folded stacks, frames joined by sep (folded: root first, names only). */
static void stack_text(struct fmt_ctx *c, int pid, const struct rec *r,
		       const struct rec_stack *s, bool folded, char *out, size_t len)
{
	uint64_t pcs[MAX_FRAMES + 1];
	int n = unwind_stack(c->maps, pid, r->ts, s, pcs, MAX_FRAMES);
	size_t at = 0;

	out[0] = '\0';
	for (int k = 0; k < n && at + 2 < len; k++) {
		int i = folded ? n - 1 - k : k;
		const char *sym = objmaps_symbolize(c->maps, pid, r->ts, pcs[i], !folded);
		const char *path;
		uint64_t bias;
		int w;

		if (folded) {
			w = snprintf(out + at, len - at, "%s%s", k ? ";" : "", sym);
		} else {
			const char *obj = objmaps_object(c->maps, pid, r->ts, pcs[i], &path, &bias) ?
					  "?" : (strrchr(path, '/') ? strrchr(path, '/') + 1 : path);

			w = snprintf(out + at, len - at, " => %s [%s]\n", sym, obj);
		}
		if (w < 0)
			break;
		at += (size_t)w;
		if (at >= len)
			at = len - 1;
	}
}

static void format_arg(const struct pe_arg *a, const struct arg_view *v, char *out, size_t len)
{
	if (v->used < 0 && v->used != -EFAULT) {
		snprintf(out, len, "(error %d)", -v->used);
		return;
	}
	fetch_format(a, v->data, v->used, out, len);
}

static bool numeric_type(const struct pe_arg *a)
{
	if (a->array_len)
		return false;
	switch (a->type) {
	case PE_U8: case PE_U16: case PE_U32: case PE_U64:
	case PE_S8: case PE_S16: case PE_S32: case PE_S64:
	case PE_BITFIELD:
		return true;
	default:
		return false;
	}
}

static bool string_type(const struct pe_arg *a)
{
	return !a->array_len && (a->type == PE_STRING || a->type == PE_USTRING);
}

static void json_args(struct fmt_ctx *c, const struct pe_event *ev, const struct arg_view *av, int nav)
{
	char val[4096];

	out_char(c, '{');
	for (int i = 0; i < nav; i++) {
		const struct pe_arg *a = &ev->args[i];

		if (i)
			out_char(c, ',');
		out_char(c, '"');
		out_json_cstr(c, a->name);
		out_printf(c, "\":");
		if (av[i].used < 0) {
			out_printf(c, "null");
		} else if (string_type(a)) {
			size_t n = strnlen(av[i].data, (size_t)av[i].used);

			out_char(c, '"');
			out_json_str(c, av[i].data, n);
			out_char(c, '"');
		} else {
			size_t n;

			format_arg(a, &av[i], val, sizeof(val));
			n = strlen(val);
			/* A number, or a quoted "(fault)". */
			if (numeric_type(a) && n && (val[0] == '-' || isdigit((unsigned char)val[0]))) {
				out_printf(c, "%s", val);
			} else {
				if (n >= 2 && val[0] == '"' && val[n - 1] == '"') {
					out_char(c, '"');
					out_json_str(c, val + 1, n - 2);
					out_char(c, '"');
				} else {
					out_char(c, '"');
					out_json_str(c, val, n);
					out_char(c, '"');
				}
			}
		}
	}
	out_char(c, '}');
}

static bool named(struct fmt_ctx *c, int id)
{
	int *nv;

	for (size_t i = 0; i < c->nnamed; i++)
		if (c->named[i] == id)
			return true;
	if (c->nnamed == c->capnamed) {
		size_t cap = c->capnamed ? 2 * c->capnamed : 64;

		nv = realloc(c->named, cap * sizeof(*nv));
		if (!nv)
			return true;
		c->named = nv;
		c->capnamed = cap;
	}
	c->named[c->nnamed++] = id;
	return false;
}

static void perfetto_names(struct fmt_ctx *c, int pid, int tid, const char *comm, uint64_t ts)
{
	/* Processes by -pid, threads by tid. */
	if (!named(c, -pid)) {
		const char *exe = objmaps_exe(c->maps, pid, ts);

		out_printf(c, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
			   "\"args\":{\"name\":\"", pid, pid);
		out_json_cstr(c, exe ? exe : comm);
		out_printf(c, "\"}},\n");
	}
	if (named(c, tid))
		return;
	out_printf(c, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
		   "\"args\":{\"name\":\"", pid, tid);
	out_json_cstr(c, comm);
	out_printf(c, "\"}},\n");
}

struct agg_ctx {
	const struct pe_event *ev;
	const struct arg_view *av;
	int nav;
	char buf[4096];
};

/* An argument's value as a number, as fetch.c stored it (little endian,
 * in the type's size); false if it faulted. */
static bool agg_argnum(void *p, int i, int64_t *v, bool *is_signed)
{
	struct agg_ctx *a = p;
	const struct arg_view *av;
	uint64_t u = 0;
	int n;

	if (i >= a->nav)
		return false;
	av = &a->av[i];
	n = av->used;
	if (n <= 0 || n > 8)
		return false;
	for (int k = 0; k < n; k++)
		u |= (uint64_t)(unsigned char)av->data[k] << (8 * k);
	switch (a->ev->args[i].type) {
	case PE_S8: case PE_S16: case PE_S32: case PE_S64:
		*is_signed = true;
		if (n < 8)
			u = (uint64_t)((int64_t)(u << (64 - 8 * n)) >> (64 - 8 * n));
		break;
	default:
		*is_signed = false;
		break;
	}
	*v = (int64_t)u;
	return true;
}

/* An argument's value as a key: as printed, strings without their quotes. */
static const char *agg_argval(void *p, int i)
{
	struct agg_ctx *a = p;
	size_t n;

	if (i >= a->nav)
		return "";
	format_arg(&a->ev->args[i], &a->av[i], a->buf, sizeof(a->buf));
	n = strlen(a->buf);
	if (n >= 2 && a->buf[0] == '"' && a->buf[n - 1] == '"') {
		a->buf[n - 1] = '\0';
		return a->buf + 1;
	}
	return a->buf;
}

/* The event's name: a glob's (or a C++ name's) probes are named after
 * their functions, p_FUNC_0, unless the definition named them. */
static const char *event_name(struct fmt_ctx *c, const struct pe_event *ev, int pid,
			      const struct rec *r)
{
	static char buf[PE_MAX_EVENT_NAME_LEN + 1];
	const char *fn;
	size_t n = 0;

	if (!ev->multi || ev->named)
		return ev->event;
	fn = objmaps_symbolize(c->maps, pid, r->ts, r->ip, false);
	buf[n++] = r->kind == REC_RETURN ? 'r' : 'p';
	buf[n++] = '_';
	for (; *fn && n < sizeof(buf) - 3; fn++)
		buf[n++] = (isalnum((unsigned char)*fn) || *fn == '_') ? *fn : '_';
	buf[n++] = '_';
	buf[n++] = '0';
	buf[n] = '\0';
	return buf;
}

static void format_hit(struct fmt_ctx *c, int pid, const struct rec *r)
{
	const struct pe_event *ev;
	struct arg_view av[PE_MAX_ARGS];
	char comm[17], loc[4096], func[4096], val[4096];
	unsigned long long sec, usec;
	const char *evname;
	const struct rec_stack *stack;
	static char stk[16384];
	int nav;

	if (r->event >= (unsigned int)c->nevs)
		return;
	ev = &c->evs[r->event];
	c->records++;
	cur_maps = c->maps;
	cur_pid = pid;
	cur_ts = r->ts;
	memcpy(comm, (const char *)(r + 1), 16);
	comm[16] = '\0';
	if (!comm[0])
		strcpy(comm, "<...>");
	nav = rec_args(r, av, PE_MAX_ARGS, &stack);
	if (c->folded) {
		/* COMM;root;...;leaf, as stackcollapse scripts write them. */
		int w = snprintf(stk, sizeof(stk), "%s;", comm);

		if (stack)
			stack_text(c, pid, r, stack, true, stk + w, sizeof(stk) - (size_t)w);
		struct agg_hit h = { .ev = r->event, .evname = stk, .pid = pid, .tid = r->tid,
				     .comm = comm };

		agg_add(c->folded, &h);
		return;
	}
	if (stack)
		stack_text(c, pid, r, stack, false, stk, sizeof(stk));
	else
		stk[0] = '\0';
	if (fmt_maps_any(c)) {
		struct agg_ctx ac = { .ev = ev, .av = av, .nav = nav };
		struct agg_hit h = {
			.ev = r->event, .pid = pid, .tid = r->tid, .comm = comm,
			.has_duration = r->kind == REC_RETURN && r->entry_ts && r->ts >= r->entry_ts,
			.duration = r->ts - r->entry_ts,
			.argval = agg_argval, .argnum = agg_argnum, .ctx = &ac,
		};
		char *keyed = NULL;

		/* A stack as a map key: frames indented, one a line. */
		if (stk[0]) {
			keyed = strdup(stk);
			for (char *q = keyed; q && *q; q++)
				if (q[0] == ' ' && q[1] == '=' && q[2] == '>')
					q[1] = q[2] = ' ';
			if (keyed && *keyed && keyed[strlen(keyed) - 1] == '\n')
				keyed[strlen(keyed) - 1] = '\0';
		}
		h.stack = keyed;
		h.evname = event_name(c, ev, pid, r);
		if (c->agg)
			agg_add(c->agg, &h);
		for (int i = 0; i < c->nhagg; i++)
			agg_add(c->hagg[i], &h);
		if (c->lagg) {
			/* As the unkeyed table names it: OBJ:SYM (a glob's
			 * probes: their functions). */
			snprintf(func, sizeof(func), "%s%s%s", ev->object, ev->object[0] ? ":" : "",
				 ev->multi ? objmaps_symbolize(c->maps, pid, r->ts, r->ip, false) :
				 ev->symbol);
			h.func = func;
			agg_add(c->lagg, &h);
		}
		free(keyed);
	}
	if (c->quiet)
		return;
	evname = event_name(c, ev, pid, r);
	sec = r->ts / 1000000000ull;
	usec = (r->ts % 1000000000ull) / 1000ull;
	if (r->kind == REC_RETURN) {
		snprintf(loc, sizeof(loc), "%s", objmaps_symbolize(c->maps, pid, r->ts, r->ret, true));
		snprintf(func, sizeof(func), "%s", objmaps_symbolize(c->maps, pid, r->ts, r->ip, false));
	} else {
		snprintf(loc, sizeof(loc), "%s", objmaps_symbolize(c->maps, pid, r->ts, r->ip, true));
		func[0] = '\0';
	}

	switch (c->fmt) {
	case FMT_TEXT:
		if (r->kind == REC_RETURN)
			out_printf(c, "%16s-%-7d [%03d] %5llu.%06llu: %s: (%s <- %s)",
				   comm, r->tid, r->cpu, sec, usec, evname, loc, func);
		else
			out_printf(c, "%16s-%-7d [%03d] %5llu.%06llu: %s: (%s)",
				   comm, r->tid, r->cpu, sec, usec, evname, loc);
		for (int i = 0; i < nav; i++) {
			format_arg(&ev->args[i], &av[i], val, sizeof(val));
			out_printf(c, " %s=%s", ev->args[i].name, val);
		}
		out_char(c, '\n');
		/* As ftrace's stacktrace trigger prints a user stack. */
		fputs(stk, c->out);
		break;
	case FMT_JSON:
		out_printf(c, "{\"timestamp\":%llu.%06llu,\"ts_ns\":%llu,\"comm\":\"",
			   sec, usec, (unsigned long long)r->ts);
		out_json_cstr(c, comm);
		out_printf(c, "\",\"pid\":%d,\"tid\":%d,\"cpu\":%d,\"group\":\"", pid, r->tid, r->cpu);
		out_json_cstr(c, ev->group);
		out_printf(c, "\",\"event\":\"");
		out_json_cstr(c, evname);
		out_printf(c, "\",\"probe\":\"%s\",", r->kind == REC_RETURN ? "return" : "entry");
		if (r->kind == REC_RETURN) {
			out_printf(c, "\"function\":\"");
			out_json_cstr(c, func);
			out_printf(c, "\",\"caller\":\"");
			out_json_cstr(c, loc);
			out_printf(c, "\",\"address\":\"0x%llx\",\"return_address\":\"0x%llx\",",
				   (unsigned long long)r->ip, (unsigned long long)r->ret);
			if (r->entry_ts && r->ts >= r->entry_ts)
				out_printf(c, "\"duration_ns\":%llu,",
					   (unsigned long long)(r->ts - r->entry_ts));
		} else {
			out_printf(c, "\"location\":\"");
			out_json_cstr(c, loc);
			out_printf(c, "\",\"address\":\"0x%llx\",", (unsigned long long)r->ip);
		}
		out_printf(c, "\"args\":");
		json_args(c, ev, av, nav);
		if (stack) {
			uint64_t pcs[MAX_FRAMES + 1];
			int n = unwind_stack(c->maps, pid, r->ts, stack, pcs, MAX_FRAMES);

			out_printf(c, ",\"stack\":[");
			for (int i = 0; i < n; i++) {
				out_printf(c, "%s\"", i ? "," : "");
				out_json_cstr(c, objmaps_symbolize(c->maps, pid, r->ts, pcs[i], true));
				out_char(c, '"');
			}
			out_char(c, ']');
		}
		out_printf(c, "}\n");
		break;
	case FMT_PERFETTO:
		perfetto_names(c, pid, r->tid, comm, r->ts);
		if (r->kind == REC_RETURN && r->entry_ts && r->ts >= r->entry_ts) {
			uint64_t d = r->ts - r->entry_ts;

			out_printf(c, "{\"name\":\"");
			out_json_cstr(c, func);
			out_printf(c, "\",\"cat\":\"");
			out_json_cstr(c, ev->group);
			out_printf(c, "\",\"ph\":\"X\",\"ts\":%llu.%03llu,\"dur\":%llu.%03llu,"
				   "\"pid\":%d,\"tid\":%d,\"args\":{\"event\":\"",
				   (unsigned long long)(r->entry_ts / 1000),
				   (unsigned long long)(r->entry_ts % 1000),
				   (unsigned long long)(d / 1000), (unsigned long long)(d % 1000),
				   pid, r->tid);
			out_json_cstr(c, evname);
			out_printf(c, "\",\"caller\":\"");
			out_json_cstr(c, loc);
			out_printf(c, "\",\"values\":");
		} else {
			out_printf(c, "{\"name\":\"");
			out_json_cstr(c, evname);
			out_printf(c, "\",\"cat\":\"");
			out_json_cstr(c, ev->group);
			out_printf(c, "\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%llu.%03llu,"
				   "\"pid\":%d,\"tid\":%d,\"args\":{\"location\":\"",
				   (unsigned long long)(r->ts / 1000),
				   (unsigned long long)(r->ts % 1000), pid, r->tid);
			out_json_cstr(c, r->kind == REC_RETURN ? func : loc);
			out_printf(c, "\",\"values\":");
		}
		json_args(c, ev, av, nav);
		out_printf(c, "}},\n");
		break;
	case FMT_UKP:
	case FMT_FOLDED:
		break;
	}
}


void fmt_begin(struct fmt_ctx *c)
{
	if (c->fmt == FMT_PERFETTO)
		fprintf(c->out, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
}

void fmt_end(struct fmt_ctx *c)
{
	if (c->folded)
		agg_print_folded(c->folded, c->out);
	if (c->fmt == FMT_PERFETTO)
		fprintf(c->out, "{\"name\":\"ukprobe\",\"ph\":\"M\",\"pid\":0,\"tid\":0,"
			"\"args\":{\"name\":\"ukprobe\"}}\n]}\n");
	fflush(c->out);
}

void fmt_lost(struct fmt_ctx *c, int pid, int tid, uint64_t ts, unsigned long long n)
{
	unsigned long long sec = ts / 1000000000ull, usec = (ts % 1000000000ull) / 1000ull;

	c->lost += n;
	switch (c->fmt) {
	case FMT_TEXT:
		/* As ftrace marks a loss in its buffer. */
		fprintf(c->out, "%16s-%-7d [LOST %llu EVENTS] %5llu.%06llu\n", "<...>", tid, n,
			sec, usec);
		break;
	case FMT_JSON:
		fprintf(c->out, "{\"type\":\"lost\",\"timestamp\":%llu.%06llu,\"ts_ns\":%llu,"
			"\"pid\":%d,\"tid\":%d,\"lost\":%llu}\n", sec, usec,
			(unsigned long long)ts, pid, tid, n);
		break;
	case FMT_PERFETTO:
		fprintf(c->out, "{\"name\":\"LOST %llu EVENTS\",\"cat\":\"ukprobe\",\"ph\":\"i\","
			"\"s\":\"p\",\"ts\":%llu.%03llu,\"pid\":%d,\"tid\":%d},\n", n,
			(unsigned long long)(ts / 1000), (unsigned long long)(ts % 1000), pid, tid);
		break;
	case FMT_UKP:
	case FMT_FOLDED:
		break;
	}
}

void fmt_record(struct fmt_ctx *c, int pid, const struct rec *r)
{
	if (r->event == REC_PAD)
		return;
	switch (r->kind) {
	case REC_ENTRY:
	case REC_RETURN:
		format_hit(c, pid, r);
		break;
	case REC_LOST:
		if (r->ip)
			fmt_lost(c, pid, r->tid, r->ts, (unsigned long long)r->ip);
		break;
	default:
		objmaps_apply(c->maps, pid, r);
		break;
	}
}
