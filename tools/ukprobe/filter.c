// SPDX-License-Identifier: MIT
/*
 * filter.c - filters compiled from their text (see filter.h): a recursive
 * descent parser that emits the postfix program filter_eval.c runs.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fetch.h"
#include "filter.h"

struct fp {
	const char *s;		/* the text */
	int base;		/* its position in the definition */
	size_t i;
	const struct pe_event *ev;
	struct pe_filter *f;
	struct pe_error *err;
};

static int fail(struct fp *p, size_t at, int code)
{
	p->err->code = code;
	p->err->pos = p->base + (int)at;
	p->err->reason = pe_error_reason(code);
	return -EINVAL;
}

static void skip_ws(struct fp *p)
{
	while (p->s[p->i] == ' ' || p->s[p->i] == '\t')
		p->i++;
}

static struct filter_node *emit_node(struct fp *p, int op)
{
	struct filter_node *nd;

	if (p->f->n == FILTER_MAX_NODES)
		return NULL;
	nd = &p->f->v[p->f->n++];
	memset(nd, 0, sizeof(*nd));
	nd->op = (uint8_t)op;
	return nd;
}

static bool is_signed(enum pe_type t)
{
	return t == PE_S8 || t == PE_S16 || t == PE_S32 || t == PE_S64;
}

static bool is_string(const struct pe_arg *a)
{
	return !a->array_len && (a->type == PE_STRING || a->type == PE_USTRING ||
				 a->type == PE_SYMSTR);
}

static int parse_or(struct fp *p);

/* FIELD OP VALUE */
static int parse_pred(struct fp *p)
{
	size_t start = p->i, fs, opat, vs;
	char field[PE_MAX_ARG_NAME_LEN + 8];
	struct filter_node *nd;
	int arg = -2, op;
	bool str;

	fs = p->i;
	while (isalnum((unsigned char)p->s[p->i]) || p->s[p->i] == '_')
		p->i++;
	if (p->i == fs || p->i - fs >= sizeof(field))
		return fail(p, start, PE_ERR_NO_EP_FILTER);
	memcpy(field, p->s + fs, p->i - fs);
	field[p->i - fs] = '\0';
	for (int a = 0; a < p->ev->nargs; a++)
		if (!strcmp(p->ev->args[a].name, field))
			arg = a;
	if (arg == -2 && !strcmp(field, "comm"))
		arg = -1;
	if (arg == -2)
		return fail(p, fs, PE_ERR_BAD_FETCH_ARG);
	str = arg < 0 || is_string(&p->ev->args[arg]);
	if (arg >= 0 && !str && p->ev->args[arg].array_len)
		return fail(p, fs, PE_ERR_BAD_TYPE);
	skip_ws(p);
	opat = p->i;
	if (!strncmp(p->s + p->i, "==", 2)) { op = FOP_F_EQ; p->i += 2; }
	else if (!strncmp(p->s + p->i, "!=", 2)) { op = FOP_F_NE; p->i += 2; }
	else if (!strncmp(p->s + p->i, "<=", 2)) { op = FOP_F_LE; p->i += 2; }
	else if (!strncmp(p->s + p->i, ">=", 2)) { op = FOP_F_GE; p->i += 2; }
	else if (p->s[p->i] == '<') { op = FOP_F_LT; p->i++; }
	else if (p->s[p->i] == '>') { op = FOP_F_GT; p->i++; }
	else if (p->s[p->i] == '~') { op = FOP_F_GLOB; p->i++; }
	else if (p->s[p->i] == '&' && p->s[p->i + 1] != '&') { op = FOP_F_AND_BITS; p->i++; }
	else
		return fail(p, opat, PE_ERR_NO_EP_FILTER);
	/* Strings: == != ~; numbers: all but ~. */
	if (str && op != FOP_F_EQ && op != FOP_F_NE && op != FOP_F_GLOB)
		return fail(p, opat, PE_ERR_BAD_TYPE);
	if (!str && op == FOP_F_GLOB)
		return fail(p, opat, PE_ERR_BAD_TYPE);
	skip_ws(p);
	vs = p->i;
	nd = emit_node(p, op);
	if (!nd)
		return fail(p, start, PE_ERR_TOO_MANY_OPS);
	nd->arg = (int16_t)arg;
	nd->is_str = str;
	if (str) {
		size_t n = 0;
		char q = p->s[p->i];

		if (q == '"' || q == '\'') {
			p->i++;
			while (p->s[p->i] && p->s[p->i] != q) {
				if (n + 1 >= FILTER_MAX_STR)
					return fail(p, vs, PE_ERR_ARG_TOO_LONG);
				nd->str[n++] = p->s[p->i++];
			}
			if (p->s[p->i] != q)
				return fail(p, vs, PE_ERR_IMMSTR_NO_CLOSE);
			p->i++;
		} else {
			while (p->s[p->i] && !isspace((unsigned char)p->s[p->i]) &&
			       p->s[p->i] != ')' && p->s[p->i] != '&' && p->s[p->i] != '|') {
				if (n + 1 >= FILTER_MAX_STR)
					return fail(p, vs, PE_ERR_ARG_TOO_LONG);
				nd->str[n++] = p->s[p->i++];
			}
			if (!n)
				return fail(p, vs, PE_ERR_NO_EP_FILTER);
		}
		nd->str[n] = '\0';
	} else {
		const char *s = p->s + p->i;
		char *e;

		errno = 0;
		if (*s == '-') {
			long long v = strtoll(s, &e, 0);

			nd->num = (uint64_t)v;
		} else {
			nd->num = strtoull(s, &e, 0);
		}
		if (e == s || errno)
			return fail(p, vs, PE_ERR_BAD_IMM);
		nd->num_signed = is_signed(p->ev->args[arg].type);
		if (*s == '-' && !nd->num_signed && op != FOP_F_EQ && op != FOP_F_NE)
			return fail(p, vs, PE_ERR_BAD_IMM);
		p->i += (size_t)(e - s);
	}
	return 0;
}

static int parse_unary(struct fp *p)
{
	int e;

	skip_ws(p);
	if (p->s[p->i] == '!' && p->s[p->i + 1] != '=') {
		p->i++;
		e = parse_unary(p);
		if (e)
			return e;
		return emit_node(p, FOP_F_NOT) ? 0 : fail(p, p->i, PE_ERR_TOO_MANY_OPS);
	}
	if (p->s[p->i] == '(') {
		size_t open = p->i++;

		e = parse_or(p);
		if (e)
			return e;
		skip_ws(p);
		if (p->s[p->i] != ')')
			return fail(p, open, PE_ERR_NO_EP_FILTER);
		p->i++;
		return 0;
	}
	return parse_pred(p);
}

static int parse_and(struct fp *p)
{
	int e = parse_unary(p);

	while (!e) {
		skip_ws(p);
		if (strncmp(p->s + p->i, "&&", 2))
			break;
		p->i += 2;
		e = parse_unary(p);
		if (!e && !emit_node(p, FOP_F_LAND))
			e = fail(p, p->i, PE_ERR_TOO_MANY_OPS);
	}
	return e;
}

static int parse_or(struct fp *p)
{
	int e = parse_and(p);

	while (!e) {
		skip_ws(p);
		if (strncmp(p->s + p->i, "||", 2))
			break;
		p->i += 2;
		e = parse_and(p);
		if (!e && !emit_node(p, FOP_F_LOR))
			e = fail(p, p->i, PE_ERR_TOO_MANY_OPS);
	}
	return e;
}

int filter_compile(const char *text, int pos, const struct pe_event *ev,
		   struct pe_filter **out, struct pe_error *err)
{
	struct fp p = { .s = text, .base = pos, .ev = ev, .err = err };
	int e;

	p.f = calloc(1, sizeof(*p.f));
	if (!p.f)
		return -ENOMEM;
	skip_ws(&p);
	if (!text[p.i]) {
		free(p.f);
		return fail(&p, p.i, PE_ERR_NO_EP_FILTER);
	}
	e = parse_or(&p);
	if (!e) {
		skip_ws(&p);
		if (text[p.i])
			e = fail(&p, p.i, PE_ERR_NO_EP_FILTER);
	}
	if (e) {
		free(p.f);
		return e;
	}
	*out = p.f;
	return 0;
}
