// SPDX-License-Identifier: MIT
/*
 * filter_eval.c - a compiled filter (filter.h) run in a probe handler:
 * signal context, general registers only (built -mgeneral-regs-only), no
 * libc string function, no recursion, bounded by FILTER_MAX_NODES and the
 * strings' lengths.
 */
#include <stddef.h>

#include "fetch.h"
#include "filter.h"

/* Argument i's bytes and length in the record; false if it faulted. */
static bool arg_at(const char *p, const char *end, int i, const char **data, int32_t *used)
{
	for (int k = 0; p + 8 <= end; k++) {
		int32_t u = *(const int32_t *)p;

		if (k == i) {
			*data = p + 8;
			*used = u;
			return u >= 0;
		}
		p += 8 + ((u > 0 ? (uint32_t)u : 0u) + 7u) / 8u * 8u;
	}
	return false;
}

/* Does pattern element pat[*i] match c?  *i moves past it. */
static bool match_one(const char *pat, size_t *i, char c)
{
	size_t j = *i;

	if (pat[j] == '?') {
		*i = j + 1;
		return true;
	}
	if (pat[j] == '[') {
		bool neg, in = false;

		j++;
		neg = pat[j] == '!' || pat[j] == '^';
		if (neg)
			j++;
		for (bool first = true; pat[j] && (first || pat[j] != ']'); first = false) {
			if (pat[j + 1] == '-' && pat[j + 2] && pat[j + 2] != ']') {
				in |= c >= pat[j] && c <= pat[j + 2];
				j += 3;
			} else {
				in |= c == pat[j++];
			}
		}
		if (pat[j] == ']') {
			*i = j + 1;
			return in != neg;
		}
		/* An unclosed [ is itself. */
		j = *i;
	}
	*i = j + 1;
	return pat[j] && pat[j] == c;
}

/* A glob (* ? [...] [!...]) over the string s[0..n), as fnmatch() with no
 * flags; '*' backtracks to its last position only (linear). */
static bool glob_match(const char *pat, const char *s, size_t n)
{
	size_t i = 0, si = 0, star = 0, mark = 0;
	bool have_star = false;

	while (si < n && s[si]) {
		size_t next = i;

		if (pat[i] == '*') {
			star = ++i;
			mark = si;
			have_star = true;
			continue;
		}
		if (pat[i] && match_one(pat, &next, s[si])) {
			i = next;
			si++;
			continue;
		}
		if (!have_star)
			return false;
		i = star;
		si = ++mark;
	}
	while (pat[i] == '*')
		i++;
	return !pat[i];
}

static int str_cmp(const char *a, size_t an, const char *b)
{
	size_t i = 0;

	for (; i < an && a[i] && b[i]; i++)
		if (a[i] != b[i])
			return (unsigned char)a[i] - (unsigned char)b[i];
	if (i < an && a[i])
		return 1;
	return b[i] ? -1 : 0;
}

static bool pred(const struct filter_node *nd, const struct pe_event *ev, const char *args,
		 const char *end, const char *comm)
{
	const char *d;
	int32_t used;

	if (nd->arg < 0) {
		d = comm;
		used = 16;
	} else if (!arg_at(args, end, nd->arg, &d, &used)) {
		return false;
	}
	if (nd->is_str) {
		size_t n = (size_t)used;
		int c;

		if (nd->op == FOP_F_GLOB)
			return glob_match(nd->str, d, n);
		c = str_cmp(d, n, nd->str);
		return nd->op == FOP_F_EQ ? c == 0 : c != 0;
	}
	{
		const struct pe_arg *a = &ev->args[nd->arg];
		uint64_t u = 0;
		int64_t sv;
		unsigned int sz = (unsigned int)used < 8 ? (unsigned int)used : 8;

		for (unsigned int k = 0; k < sz; k++)
			u |= (uint64_t)(unsigned char)d[k] << (8 * k);
		if (nd->num_signed) {
			sv = sz >= 8 ? (int64_t)u : (int64_t)(u << (64 - 8 * sz)) >> (64 - 8 * sz);
			switch (nd->op) {
			case FOP_F_EQ: return sv == (int64_t)nd->num;
			case FOP_F_NE: return sv != (int64_t)nd->num;
			case FOP_F_LT: return sv < (int64_t)nd->num;
			case FOP_F_LE: return sv <= (int64_t)nd->num;
			case FOP_F_GT: return sv > (int64_t)nd->num;
			case FOP_F_GE: return sv >= (int64_t)nd->num;
			case FOP_F_AND_BITS: return (u & nd->num) != 0;
			default: return false;
			}
		}
		(void)a;
		switch (nd->op) {
		case FOP_F_EQ: return u == nd->num;
		case FOP_F_NE: return u != nd->num;
		case FOP_F_LT: return u < nd->num;
		case FOP_F_LE: return u <= nd->num;
		case FOP_F_GT: return u > nd->num;
		case FOP_F_GE: return u >= nd->num;
		case FOP_F_AND_BITS: return (u & nd->num) != 0;
		default: return false;
		}
	}
}

bool filter_eval(const struct pe_filter *f, const struct pe_event *ev, const char *args,
		 const char *end, const char *comm)
{
	bool st[FILTER_MAX_NODES];
	int sp = 0;

	for (int i = 0; i < f->n; i++) {
		const struct filter_node *nd = &f->v[i];

		switch (nd->op) {
		case FOP_F_LAND:
			sp--;
			st[sp - 1] = st[sp - 1] && st[sp];
			break;
		case FOP_F_LOR:
			sp--;
			st[sp - 1] = st[sp - 1] || st[sp];
			break;
		case FOP_F_NOT:
			st[sp - 1] = !st[sp - 1];
			break;
		default:
			st[sp++] = pred(nd, ev, args, end, comm);
			break;
		}
	}
	return sp == 1 && st[0];
}
