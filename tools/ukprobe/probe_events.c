/* SPDX-License-Identifier: MIT */
/*
 * probe_events.c - the kprobe_events definition grammar (parser and fetch
 * program builder), following the kernel's kernel/trace/trace_kprobe.c
 * (trace_kprobe_create_internal) and kernel/trace/trace_probe.c
 * (traceprobe_parse_probe_arg and friends): the same checks in the same
 * order, the same error names, the caret at the same place.
 *
 * Differences, all on purpose:
 *  - the default group is "ukprobes";
 *  - OBJ:SYM takes an object (a path or a library name; split at the last
 *    ':'), OBJ:0xOFFSET is the uprobe file-offset form;
 *  - a symbol that is not found is reported only when a resolver is
 *    installed (pe_set_resolvers());
 *  - no BTF: a bare name as a fetch argument is NOSUP_BTFARG, $arg* and
 *    $args too;
 *  - junk after the closing ')' of a dereference is BAD_FETCH_ARG (the
 *    kernel ignores it); the caret of +u/-u dereferences points at the
 *    inner argument (the kernel's is one byte short);
 *  - positions are byte offsets in the definition as written (the kernel's
 *    are in the command re-joined with single spaces: the same when the
 *    definition has single spaces).
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_events.h"
#include "fetch.h"
#include "filter.h"

#define MAX_ARGSTR_LEN		63	/* the kernel's */
#define PARAM_MAX_STACK		2048	/* the kernel's THREAD_SIZE / sizeof(long):
					 * 2048 on x86-64, i386 and arm64 */

#define C(a, b) #a
static const char *const err_names[] = { PE_ERRORS };
#undef C
#define C(a, b) b
static const char *const err_reasons[] = { PE_ERRORS };
#undef C

static pe_resolve_fn g_resolve;
static pe_symbolize_fn g_symbolize;

void pe_set_resolvers(pe_resolve_fn resolve, pe_symbolize_fn symbolize)
{
	g_resolve = resolve;
	g_symbolize = symbolize;
}

/* fetch.c reads the symbolizer through this. */
pe_symbolize_fn pe__symbolizer(void);
pe_symbolize_fn pe__symbolizer(void)
{
	return g_symbolize;
}

const char *pe_error_name(int code)
{
	if (code < 0 || code >= PE_ERR_MAX)
		return "UNKNOWN";
	return err_names[code];
}

const char *pe_error_reason(int code)
{
	if (code < 0 || code >= PE_ERR_MAX)
		return "Unknown error";
	return err_reasons[code];
}

void pe_print_error(FILE *out, const char *def, const struct pe_error *err)
{
	size_t len = strlen(def);

	fprintf(out, "%s\n", def);
	for (int i = 0; i < err->pos; i++)
		fputc((size_t)i < len && def[i] == '\t' ? '\t' : ' ', out);
	fprintf(out, "^\n%s (%s)\n",
		err->reason ? err->reason : pe_error_reason(err->code),
		pe_error_name(err->code));
}

/* ------------------------------------------------------------------------ */
/* The kernel's number parsers (lib/kstrtox.c)                               */
/* ------------------------------------------------------------------------ */

static int kstrtoull_(const char *s, unsigned int base, unsigned long long *res)
{
	unsigned long long v = 0;
	int any = 0;

	if (*s == '+')
		s++;
	if (base == 0) {
		if (s[0] == '0') {
			if (tolower((unsigned char)s[1]) == 'x' && isxdigit((unsigned char)s[2]))
				base = 16;
			else
				base = 8;
		} else {
			base = 10;
		}
	}
	if (base == 16 && s[0] == '0' && tolower((unsigned char)s[1]) == 'x')
		s += 2;
	for (; *s; s++) {
		unsigned int d;
		unsigned char ch = (unsigned char)*s;

		if (isdigit(ch))
			d = ch - '0';
		else if (isalpha(ch))
			d = tolower(ch) - 'a' + 10;
		else
			break;
		if (d >= base)
			break;
		if (v > (ULLONG_MAX - d) / base)
			return -ERANGE;
		v = v * base + d;
		any = 1;
	}
	if (!any)
		return -EINVAL;
	if (*s == '\n')
		s++;
	if (*s)
		return -EINVAL;
	*res = v;
	return 0;
}

static int kstrtoul_(const char *s, unsigned int base, unsigned long *res)
{
	unsigned long long v;
	int ret = kstrtoull_(s, base, &v);

	if (!ret)
		*res = (unsigned long)v;
	return ret;
}

static int kstrtol_(const char *s, unsigned int base, long *res)
{
	unsigned long long v;
	int ret;

	if (*s == '-') {
		ret = kstrtoull_(s + 1, base, &v);
		if (ret)
			return ret;
		if (v > (unsigned long long)LONG_MAX + 1)
			return -ERANGE;
		*res = (long)(0 - v);
		return 0;
	}
	ret = kstrtoull_(s, base, &v);
	if (ret)
		return ret;
	if (v > LONG_MAX)
		return -ERANGE;
	*res = (long)v;
	return 0;
}

/* traceprobe_split_symbol_offset() */
static int split_symbol_offset(char *symbol, long *offset)
{
	char *tmp = strpbrk(symbol, "+-");

	if (tmp) {
		int ret = kstrtol_(tmp, 0, offset);

		if (ret)
			return ret;
		*tmp = '\0';
	} else {
		*offset = 0;
	}
	return 0;
}

static bool is_good_name(const char *name)
{
	if (!isalpha((unsigned char)*name) && *name != '_')
		return false;
	while (*++name) {
		if (!isalnum((unsigned char)*name) && *name != '_')
			return false;
	}
	return true;
}

/* Group names may have '-' too (the kernel's is_good_system_name()). */
static bool is_good_system_name(const char *name)
{
	if (!isalpha((unsigned char)*name) && *name != '_' && *name != '-')
		return false;
	while (*++name) {
		if (!isalnum((unsigned char)*name) && *name != '_' && *name != '-')
			return false;
	}
	return true;
}

/* ------------------------------------------------------------------------ */
/* Parser state                                                              */
/* ------------------------------------------------------------------------ */

#define TPARG_FL_RETURN	1
#define TPARG_FL_FENTRY	4

struct pctx {
	const char *def;
	int argc;
	char **argv;
	int *argpos;		/* start of argv[i] in def */
	int index;		/* trace_probe_log_set_index() */
	struct pe_error *err;
	struct pe_event *ev;
	unsigned int flags;
	int offset;		/* ctx->offset */
	int body_offset;	/* where the argument's body starts */
};

static int log_err(struct pctx *c, int offset, int code)
{
	struct pe_error *e = c->err;

	e->code = code;
	e->reason = err_reasons[code];
	if (c->index >= c->argc)	/* next to the last word + a space */
		e->pos = c->argc ? c->argpos[c->argc - 1] +
				   (int)strlen(c->argv[c->argc - 1]) + 1 : 0;
	else
		e->pos = c->argpos[c->index] + offset;
	return -EINVAL;
}

/* argv_split(): whitespace separated words, no quoting. */
static int split_words(const char *def, char ***pargv, int **ppos)
{
	int n = 0, cap = 8;
	char **argv = malloc(sizeof(*argv) * cap);
	int *pos = malloc(sizeof(*pos) * cap);
	const char *p = def;

	if (!argv || !pos)
		goto nomem;
	for (;;) {
		const char *start;

		while (*p && isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		start = p;
		while (*p && !isspace((unsigned char)*p))
			p++;
		if (n == cap) {
			char **a2;
			int *p2;

			cap *= 2;
			a2 = realloc(argv, sizeof(*argv) * cap);
			if (!a2)
				goto nomem;
			argv = a2;
			p2 = realloc(pos, sizeof(*pos) * cap);
			if (!p2)
				goto nomem;
			pos = p2;
		}
		argv[n] = strndup(start, (size_t)(p - start));
		if (!argv[n])
			goto nomem;
		pos[n] = (int)(start - def);
		n++;
	}
	*pargv = argv;
	*ppos = pos;
	return n;
nomem:
	if (argv)
		for (int i = 0; i < n; i++)
			free(argv[i]);
	free(argv);
	free(pos);
	return -ENOMEM;
}

/* ------------------------------------------------------------------------ */
/* Types                                                                     */
/* ------------------------------------------------------------------------ */

static const struct {
	const char *name;
	enum pe_type type;
} type_table[] = {
	{ "string", PE_STRING }, { "ustring", PE_USTRING }, { "symstr", PE_SYMSTR },
	{ "u8", PE_U8 }, { "u16", PE_U16 }, { "u32", PE_U32 }, { "u64", PE_U64 },
	{ "s8", PE_S8 }, { "s16", PE_S16 }, { "s32", PE_S32 }, { "s64", PE_S64 },
	{ "x8", PE_X8 }, { "x16", PE_X16 }, { "x32", PE_X32 }, { "x64", PE_X64 },
	{ "char", PE_CHAR }, { "symbol", PE_SYMBOL },
};

const char *pe_type_name(enum pe_type t)
{
	if (t == PE_BITFIELD)
		return "b";
	for (size_t i = 0; i < sizeof(type_table) / sizeof(type_table[0]); i++)
		if (type_table[i].type == t)
			return type_table[i].name;
	return "?";
}

bool pe_arg_matches(const struct pe_event *ev, const struct pe_arg *a, const char *want)
{
	const char *dot = strpbrk(want, ".:");

	if (!dot)
		return !strcmp(a->name, want);
	return strlen(ev->event) == (size_t)(dot - want) &&
	       !strncmp(ev->event, want, (size_t)(dot - want)) && !strcmp(a->name, dot + 1);
}

bool pe_arg_numeric(const struct pe_arg *a)
{
	if (a->array_len)
		return false;
	switch (a->type) {
	case PE_STRING: case PE_USTRING: case PE_SYMSTR:
		return false;
	default:
		return true;
	}
}

int pe_arg_type_str(const struct pe_arg *a, char *out, size_t len)
{
	int n;

	if (a->type == PE_BITFIELD)
		n = snprintf(out, len, "b%d@%d/%d", a->bf_width, a->bf_offset, a->bf_size);
	else
		n = snprintf(out, len, "%s", pe_type_name(a->type));
	if (a->array_len) {
		size_t used = (size_t)n < len ? (size_t)n : (len ? len - 1 : 0);

		n += snprintf(out + used, len > used ? len - used : 0, "[%d]", a->array_len);
	}
	return n;
}

static bool type_is_string(enum pe_type t)
{
	return t == PE_STRING || t == PE_USTRING || t == PE_SYMSTR;
}

/* find_fetch_type(): 0 and *t (and *bf_size for bitfields), or -1. */
static int find_fetch_type(const char *type, enum pe_type *t, int *bf_size)
{
	if (!type) {
		*t = PE_X64;		/* DEFAULT_FETCH_TYPE */
		return 0;
	}
	if (*type == 'b') {
		unsigned long bs;

		type = strchr(type, '/');
		if (!type)
			return -1;
		if (kstrtoul_(type + 1, 0, &bs))
			return -1;
		if (bs != 8 && bs != 16 && bs != 32 && bs != 64)
			return -1;
		*t = PE_BITFIELD;
		*bf_size = (int)bs;
		return 0;
	}
	for (size_t i = 0; i < sizeof(type_table) / sizeof(type_table[0]); i++) {
		if (!strcmp(type, type_table[i].name)) {
			*t = type_table[i].type;
			return 0;
		}
	}
	return -1;
}

unsigned int fetch_type_size(enum pe_type t)
{
	switch (t) {
	case PE_U8: case PE_S8: case PE_X8: case PE_CHAR:
		return 1;
	case PE_U16: case PE_S16: case PE_X16:
		return 2;
	case PE_U32: case PE_S32: case PE_X32:
		return 4;
	case PE_U64: case PE_S64: case PE_X64: case PE_SYMBOL:
		return 8;
	case PE_SYMSTR:
		return sizeof(unsigned long);
	default:
		return 0;
	}
}

static unsigned int arg_store_size(const struct pe_arg *a)
{
	if (a->type == PE_BITFIELD)
		return (unsigned int)a->bf_size / 8;
	return fetch_type_size(a->type);
}

/* ------------------------------------------------------------------------ */
/* Fetch arguments (parse_probe_arg() and friends)                           */
/* ------------------------------------------------------------------------ */

static int add_entry_arg(struct pe_event *ev, int argnum)
{
	for (int i = 0; i < ev->nentry_args; i++)
		if (ev->entry_args[i] == argnum)
			return i;
	if (ev->nentry_args >= PE_MAX_ARGS)
		return -ENOSPC;
	ev->entry_args[ev->nentry_args] = argnum;
	return ev->nentry_args++;
}

/* parse_probe_vars(): orig_arg points at '$', at c->offset. */
static int parse_probe_vars(struct pctx *c, char *orig_arg, struct fetch_insn *code)
{
	char *arg = orig_arg + 1;
	int err = PE_ERR_BAD_VAR;
	unsigned long param;

	if (!strncmp(arg, "retval", 6)) {
		if (!(c->flags & TPARG_FL_RETURN)) {
			err = PE_ERR_RETVAL_ON_PROBE;
			goto inval;
		}
		if (arg[6])
			goto inval;
		code->op = FOP_RETVAL;
		return 0;
	}
	if (!strncmp(arg, "stack", 5)) {
		if (arg[5] == '\0') {
			code->op = FOP_STACKP;
			return 0;
		}
		if (isdigit((unsigned char)arg[5])) {
			if (kstrtoul_(arg + 5, 10, &param))
				goto inval;
			if (param > PARAM_MAX_STACK) {
				err = PE_ERR_BAD_STACK_NUM;
				goto inval;
			}
			code->op = FOP_STACK;
			code->param = (unsigned int)param;
			return 0;
		}
		goto inval;
	}
	if (!strcmp(arg, "comm") || !strcmp(arg, "COMM")) {
		code->op = FOP_COMM;
		return 0;
	}
	if (!strncmp(arg, "arg", 3)) {
		if (kstrtoul_(arg + 3, 10, &param))
			goto inval;
		if (!param || param > PARAM_MAX_STACK) {
			err = PE_ERR_BAD_ARG_NUM;
			goto inval;
		}
		param--;
		if (c->flags & TPARG_FL_FENTRY) {
			code->op = FOP_ARG;
			code->param = (unsigned int)param;
		} else if (c->flags & TPARG_FL_RETURN) {
			int slot = add_entry_arg(c->ev, (int)param);

			if (slot < 0) {
				err = PE_ERR_TOO_MANY_EARGS;
				goto inval;
			}
			code->op = FOP_EDATA;
			code->param = (unsigned int)slot;
		} else {
			err = PE_ERR_NOFENTRY_ARGS;
			goto inval;
		}
		return 0;
	}
inval:
	return log_err(c, c->offset, err);
}

static int str_to_immediate(const char *str, unsigned long *imm)
{
	if (isdigit((unsigned char)str[0]))
		return kstrtoul_(str, 0, imm);
	if (str[0] == '-')
		return kstrtol_(str, 0, (long *)imm);
	if (str[0] == '+')
		return kstrtol_(str + 1, 0, (long *)imm);
	return -EINVAL;
}

/* Recursive argument parser: *pcode is the current slot, end the END slot. */
static int parse_probe_arg(struct pctx *c, char *arg, struct fetch_insn **pcode,
			   struct fetch_insn *end)
{
	struct fetch_insn *code = *pcode;
	unsigned long param;
	enum fetch_op deref = FOP_DEREF;
	long offset = 0;
	char *tmp;
	int ret = 0;

	switch (arg[0]) {
	case '$':
		ret = parse_probe_vars(c, arg, code);
		break;

	case '%':
		ret = arg[1] == '%' ? -EINVAL : regs_query_register_offset(arg + 1);
		if (ret >= 0) {
			code->op = FOP_REG;
			code->param = (unsigned int)ret;
			ret = 0;
		} else {
			ret = log_err(c, c->offset, PE_ERR_BAD_REG_NAME);
		}
		break;

	case '@':
		if (isdigit((unsigned char)arg[1])) {
			if (kstrtoul_(arg + 1, 0, &param)) {
				ret = log_err(c, c->offset, PE_ERR_BAD_MEM_ADDR);
				break;
			}
			code->op = FOP_IMM;
			code->imm = param;
		} else if (arg[1] == '+') {
			return log_err(c, c->offset, PE_ERR_FILE_ON_KPROBE);
		} else {
			char *sym = strdup(arg + 1);
			long soff;

			if (!sym)
				return -ENOMEM;
			/* the kernel finds a bad offset only at registration */
			if (!sym[0] || split_symbol_offset(sym, &soff) || !sym[0]) {
				free(sym);
				return log_err(c, c->offset, PE_ERR_BAD_MEM_ADDR);
			}
			free(sym);
			code->op = FOP_NOP_SYMBOL;
			code->data = strdup(arg + 1);
			if (!code->data)
				return -ENOMEM;
			code->pos = c->argpos[c->index] + c->offset;
			if (++code == end)
				return log_err(c, c->offset, PE_ERR_TOO_MANY_OPS);
			code->op = FOP_IMM;
			code->imm = 0;
		}
		if (++code == end)
			return log_err(c, c->offset, PE_ERR_TOO_MANY_OPS);
		*pcode = code;
		code->op = FOP_DEREF;
		code->offset = offset;
		break;

	case '+':
	case '-': {
		char *orig = arg;
		int start = c->offset, inner;

		if (arg[1] == 'u') {
			deref = FOP_UDEREF;
			arg[1] = arg[0];
			arg++;
		}
		if (arg[0] == '+')
			arg++;	/* kstrtol() rejects '+' */
		tmp = strchr(arg, '(');
		if (!tmp)
			return log_err(c, start, PE_ERR_DEREF_NEED_BRACE);
		*tmp = '\0';
		if (kstrtol_(arg, 0, &offset)) {
			ret = log_err(c, start, PE_ERR_BAD_DEREF_OFFS);
			break;
		}
		/* the inner argument's position (the kernel's is one short
		 * after +u/-u) */
		c->offset = start + (int)(tmp + 1 - orig);
		arg = tmp + 1;
		tmp = strrchr(arg, ')');
		if (!tmp)
			return log_err(c, c->offset + (int)strlen(arg), PE_ERR_DEREF_OPEN_BRACE);
		if (tmp[1])	/* the kernel ignores what follows ')' */
			return log_err(c, c->offset + (int)(tmp + 1 - arg), PE_ERR_BAD_FETCH_ARG);
		inner = c->offset;
		*tmp = '\0';
		ret = parse_probe_arg(c, arg, &code, end);
		if (ret)
			break;
		c->offset = inner;
		if (code->op == FOP_COMM || code->op == FOP_DATA)
			return log_err(c, c->offset, PE_ERR_COMM_CANT_DEREF);
		if (++code == end)
			return log_err(c, c->offset, PE_ERR_TOO_MANY_OPS);
		*pcode = code;
		code->op = deref;
		code->offset = offset;
		break;
	}

	case '\\':
		if (arg[1] == '"') {
			char *str = arg + 2;
			size_t len = strlen(str);

			if (len == 0 || str[len - 1] != '"')
				return log_err(c, c->offset + 2 + (int)len, PE_ERR_IMMSTR_NO_CLOSE);
			code->data = strndup(str, len - 1);
			if (!code->data)
				return -ENOMEM;
			code->op = FOP_DATA;
		} else {
			if (str_to_immediate(arg + 1, &code->imm))
				ret = log_err(c, c->offset + 1, PE_ERR_BAD_IMM);
			else
				code->op = FOP_IMM;
		}
		break;

	default:
		if (isalpha((unsigned char)arg[0]) || arg[0] == '_')
			return log_err(c, c->offset, PE_ERR_NOSUP_BTFARG);
		break;
	}
	if (!ret && code->op == FOP_NOP)
		ret = log_err(c, c->offset, PE_ERR_BAD_FETCH_ARG);
	return ret;
}

/* __parse_bitfield_probe_arg() */
static int parse_bitfield(const char *bf, struct pe_arg *a, struct fetch_insn **pcode)
{
	struct fetch_insn *code = *pcode;
	unsigned long bw, bo;
	char *tail;
	unsigned int bits = (unsigned int)a->bf_size;

	if (*bf != 'b')
		return 0;
	if (!isdigit((unsigned char)bf[1]))
		return -EINVAL;
	bw = strtoul(bf + 1, &tail, 0);
	if (bw == 0 || *tail != '@')
		return -EINVAL;
	bf = tail + 1;
	if (!isdigit((unsigned char)*bf))
		return -EINVAL;
	bo = strtoul(bf, &tail, 0);
	if (tail == bf || *tail != '/')
		return -EINVAL;
	code++;
	if (code->op != FOP_NOP)
		return -EINVAL;
	*pcode = code;
	if (bits < bw + bo)
		return -EINVAL;
	code->op = FOP_MOD_BF;
	code->lshift = (unsigned char)(bits - (bw + bo));
	code->rshift = (unsigned char)(bits - bw);
	code->basesize = (unsigned char)(bits / 8);
	a->bf_width = (int)bw;
	a->bf_offset = (int)bo;
	return 0;
}

/* parse_probe_arg_type(): splits ":TYPE[N]" off arg; *type is NULL or the
 * type; *toffs its offset in arg. */
static int parse_probe_arg_type(struct pctx *c, char *arg, struct pe_arg *a,
				char **ptype, int *toffs)
{
	char *t, *t2, *t3;
	int offs;

	*ptype = NULL;
	t = strchr(arg, ':');
	if (t) {
		*t++ = '\0';
		t2 = strchr(t, '[');
		if (t2) {
			unsigned long n;

			*t2++ = '\0';
			t3 = strchr(t2, ']');
			if (!t3)
				return log_err(c, c->offset + (int)(t2 + strlen(t2) - arg),
					       PE_ERR_ARRAY_NO_CLOSE);
			if (t3[1] != '\0')
				return log_err(c, c->offset + (int)(t3 + 1 - arg),
					       PE_ERR_BAD_ARRAY_SUFFIX);
			*t3 = '\0';
			if (kstrtoul_(t2, 0, &n) || !n || n > UINT_MAX)
				return log_err(c, c->offset + (int)(t2 - arg), PE_ERR_BAD_ARRAY_NUM);
			if (n > PE_MAX_ARRAY_LEN)
				return log_err(c, c->offset + (int)(t2 - arg), PE_ERR_ARRAY_TOO_BIG);
			a->array_len = (int)n;
		}
	}
	offs = t ? (int)(t - arg) : 0;
	*toffs = offs;

	if (!strcmp(arg, "$comm") || !strcmp(arg, "$COMM") || !strncmp(arg, "\\\"", 2)) {
		if (a->array_len || (t && strcmp(t, "string")))
			return log_err(c, c->offset + offs, PE_ERR_NEED_STRING_TYPE);
		a->type = PE_STRING;
	} else if (find_fetch_type(t, &a->type, &a->bf_size)) {
		return log_err(c, c->offset + offs, PE_ERR_BAD_TYPE);
	}
	*ptype = t;
	return 0;
}

/* finalize_fetch_insn() */
static int finalize_fetch_insn(struct pctx *c, struct fetch_insn *code, struct pe_arg *a,
			       const char *type, int type_offset)
{
	struct fetch_insn *scode;

	/* Type errors point at the type: the kernel adds ctx->offset, which
	 * a dereference has moved to its inner argument by now. */
	type_offset += c->body_offset - c->offset;

	if (type_is_string(a->type)) {
		if (a->type == PE_SYMSTR) {
			if (code->op != FOP_REG && code->op != FOP_STACK &&
			    code->op != FOP_RETVAL && code->op != FOP_ARG &&
			    code->op != FOP_EDATA && code->op != FOP_DEREF)
				return log_err(c, c->offset + type_offset, PE_ERR_BAD_SYMSTRING);
		} else {
			if (code->op != FOP_DEREF && code->op != FOP_UDEREF &&
			    code->op != FOP_IMM && code->op != FOP_COMM &&
			    code->op != FOP_DATA)
				return log_err(c, c->offset + type_offset, PE_ERR_BAD_STRING);
			/* An array of strings is an array of char * in memory. */
			if (a->array_len && code->op != FOP_DEREF && code->op != FOP_UDEREF)
				return log_err(c, c->offset + type_offset, PE_ERR_BAD_STRING);
		}
		if (a->type == PE_SYMSTR || code->op == FOP_IMM || code->op == FOP_COMM ||
		    code->op == FOP_DATA || a->array_len) {
			code++;
			if (code->op != FOP_NOP)
				return log_err(c, c->offset, PE_ERR_TOO_MANY_OPS);
		}
		if (a->type == PE_USTRING || code->op == FOP_UDEREF)
			code->op = FOP_ST_USTRING;
		else if (a->type == PE_SYMSTR)
			code->op = FOP_ST_SYMSTR;
		else
			code->op = FOP_ST_STRING;
		code->size = (unsigned int)sizeof(unsigned long);
	} else if (code->op == FOP_DEREF) {
		code->op = FOP_ST_MEM;
		code->size = arg_store_size(a);
	} else if (code->op == FOP_UDEREF) {
		code->op = FOP_ST_UMEM;
		code->size = arg_store_size(a);
	} else {
		code++;
		if (code->op != FOP_NOP)
			return log_err(c, c->offset, PE_ERR_TOO_MANY_OPS);
		code->op = FOP_ST_RAW;
		code->size = arg_store_size(a);
	}
	scode = code;

	if (type && parse_bitfield(type, a, &code))
		return log_err(c, c->offset + type_offset, PE_ERR_BAD_BITFIELD);

	if (a->array_len) {
		if (scode->op != FOP_ST_MEM && scode->op != FOP_ST_UMEM &&
		    scode->op != FOP_ST_STRING && scode->op != FOP_ST_USTRING)
			return log_err(c, c->offset + type_offset, PE_ERR_BAD_STRING);
		code++;
		if (code->op != FOP_NOP)
			return log_err(c, c->offset, PE_ERR_TOO_MANY_OPS);
		code->op = FOP_LP_ARRAY;
		code->param = (unsigned int)a->array_len;
	}
	code++;
	code->op = FOP_END;
	return 0;
}

static void free_fetch(struct pe_fetch *f)
{
	if (!f)
		return;
	for (int i = 0; i < FETCH_INSN_MAX; i++)
		free(f->code[i].data);
	free(f);
}

/* traceprobe_parse_probe_arg_body() */
static int parse_probe_arg_body(struct pctx *c, const char *argv, struct pe_arg *a)
{
	struct fetch_insn *code;
	struct pe_fetch *f;
	char *type, *arg;
	int ret, toffs;
	size_t len = strlen(argv);

	if (len > MAX_ARGSTR_LEN)
		return log_err(c, c->offset, PE_ERR_ARG_TOO_LONG);
	if (len == 0)
		return log_err(c, c->offset, PE_ERR_NO_ARG_BODY);

	a->text = strdup(argv);
	arg = strdup(argv);
	f = calloc(1, sizeof(*f));
	if (!a->text || !arg || !f) {
		free(arg);
		free(f);
		return -ENOMEM;
	}
	c->body_offset = c->offset;
	ret = parse_probe_arg_type(c, arg, a, &type, &toffs);
	if (ret)
		goto out;

	code = f->code;
	f->code[FETCH_INSN_MAX - 1].op = FOP_END;
	ret = parse_probe_arg(c, arg, &code, &f->code[FETCH_INSN_MAX - 1]);
	if (ret)
		goto out;
	ret = finalize_fetch_insn(c, code, a, type, type ? toffs : 0);
	if (ret)
		goto out;
	f->resolved = 1;
	for (int i = 0; i < FETCH_INSN_MAX; i++)
		if (f->code[i].op == FOP_NOP_SYMBOL)
			f->resolved = 0;
	a->fetch = f;
	f = NULL;
out:
	free_fetch(f);
	free(arg);
	return ret;
}

static const char *const reserved_field_names[] = {
	"common_type", "common_flags", "common_preempt_count", "common_pid",
	"common_tgid", "__probe_ip", "__probe_ret_ip", "__probe_func",
};

static bool conflict_field_name(const char *name, const struct pe_arg *args, int narg)
{
	for (size_t i = 0; i < sizeof(reserved_field_names) / sizeof(reserved_field_names[0]); i++)
		if (!strcmp(reserved_field_names[i], name))
			return true;
	for (int i = 0; i < narg; i++)
		if (!strcmp(args[i].name, name))
			return true;
	return false;
}

/* traceprobe_parse_probe_arg() */
static int parse_one_arg(struct pctx *c, int i, const char *arg)
{
	struct pe_arg *a = &c->ev->args[i];
	const char *body = strchr(arg, '=');

	if (body) {
		if (body - arg > PE_MAX_ARG_NAME_LEN)
			return log_err(c, 0, PE_ERR_ARG_NAME_TOO_LONG);
		if (body == arg)
			return log_err(c, 0, PE_ERR_NO_ARG_NAME);
		memcpy(a->name, arg, (size_t)(body - arg));
		a->name[body - arg] = '\0';
		body++;
	} else {
		snprintf(a->name, sizeof(a->name), "arg%d", i + 1);
		body = arg;
	}
	if (!is_good_name(a->name))
		return log_err(c, 0, PE_ERR_BAD_ARG_NAME);
	if (conflict_field_name(a->name, c->ev->args, i))
		return log_err(c, 0, PE_ERR_USED_ARG_NAME);
	a->pos = c->argpos[c->index];
	c->offset = (int)(body - arg);
	return parse_probe_arg_body(c, body, a);
}

/* ------------------------------------------------------------------------ */
/* Probe point and event name                                                */
/* ------------------------------------------------------------------------ */

static int check_point(struct pe_event *ev, struct pe_error *err)
{
	unsigned long addr;
	int ret;

	if (!g_resolve || !ev->symbol[0] || ev->multi)
		return 0;
	ret = g_resolve(ev->object[0] ? ev->object : NULL, ev->symbol, &addr);
	if (ret) {
		err->code = ret == -EADDRNOTAVAIL ? PE_ERR_NON_UNIQ_SYMBOL : PE_ERR_BAD_PROBE_ADDR;
		err->reason = err_reasons[err->code];
		err->pos = ev->point_pos;
		return -EINVAL;
	}
	ev->point_addr = addr + ev->offset;
	return 0;
}

static int resolve_args(struct pe_event *ev, struct pe_error *err)
{
	if (!g_resolve)
		return 0;
	for (int i = 0; i < ev->nargs; i++) {
		struct pe_fetch *f = ev->args[i].fetch;

		if (!f || f->resolved)
			continue;
		for (int k = 0; k + 1 < FETCH_INSN_MAX; k++) {
			struct fetch_insn *code = &f->code[k];
			unsigned long addr;
			long off = 0;
			char *sym;

			if (code->op != FOP_NOP_SYMBOL)
				continue;
			sym = strdup(code->data);
			if (!sym)
				return -ENOMEM;
			split_symbol_offset(sym, &off);
			if (g_resolve(NULL, sym, &addr)) {
				free(sym);
				err->code = PE_ERR_NO_SYMBOL;
				err->reason = err_reasons[PE_ERR_NO_SYMBOL];
				err->pos = code->pos;
				return -ENOENT;
			}
			free(sym);
			code[1].imm = addr + (unsigned long)off;
		}
		f->resolved = 1;
	}
	return 0;
}

int pe_event_resolve(struct pe_event *ev, struct pe_error *err)
{
	struct pe_error dummy;
	int ret;

	if (!err)
		err = &dummy;
	ret = check_point(ev, err);
	if (ret)
		return ret;
	return resolve_args(ev, err);
}

static void sanitize_event_name(char *name)
{
	for (; *name; name++)
		if (!isalnum((unsigned char)*name) && *name != '_')
			*name = '_';
}

static int parse_point(struct pctx *c, bool *is_return)
{
	struct pe_event *ev = c->ev;
	const char *tok = c->argv[1];
	char *sym, *tmp, *colon, *rest;
	unsigned long addr;
	long offset = 0;
	int ret = -EINVAL;

	c->index = 1;
	ev->point_pos = c->argpos[1];
	if (!kstrtoul_(tok, 0, &addr)) {
		ev->address = addr;
		return 0;
	}
	sym = strdup(tok);
	if (!sym)
		return -ENOMEM;
	tmp = strchr(sym, '%');
	if (tmp) {
		if (!strcmp(tmp, "%return")) {
			*tmp = '\0';
			*is_return = true;
		} else {
			ret = log_err(c, (int)(tmp - sym), PE_ERR_BAD_ADDR_SUFFIX);
			goto out;
		}
	}
	/* OBJ:SYM splits at the last single ':' (a "::" is C++'s). */
	colon = NULL;
	for (char *q = sym; *q; q++) {
		if (q[0] == ':' && q[1] == ':') {
			q++;
			continue;
		}
		if (*q == ':')
			colon = q;
	}
	rest = sym;
	if (colon) {
		if (colon == sym || (size_t)(colon - sym) >= sizeof(ev->object)) {
			ret = log_err(c, 0, PE_ERR_BAD_PROBE_ADDR);
			goto out;
		}
		memcpy(ev->object, sym, (size_t)(colon - sym));
		ev->object[colon - sym] = '\0';
		rest = colon + 1;
		if (isdigit((unsigned char)*rest)) {
			/* OBJ:0xOFFSET, the uprobe form */
			if (kstrtoul_(rest, 0, &addr)) {
				ret = log_err(c, (int)(rest - sym), PE_ERR_BAD_UPROBE_OFFS);
				goto out;
			}
			ev->address = addr;
			ev->addr_is_file_offset = true;
			ret = 0;
			goto out;
		}
	} else if (isdigit((unsigned char)*rest)) {
		/* ADDR%return */
		if (kstrtoul_(rest, 0, &addr)) {
			ret = log_err(c, 0, PE_ERR_BAD_PROBE_ADDR);
			goto out;
		}
		ev->address = addr;
		ret = 0;
		goto out;
	}
	if (split_symbol_offset(rest, &offset) || offset < 0 || offset > (long)UINT_MAX ||
	    !*rest || strlen(rest) >= sizeof(ev->symbol)) {
		ret = log_err(c, 0, PE_ERR_BAD_PROBE_ADDR);
		goto out;
	}
	strcpy(ev->symbol, rest);
	ev->offset = (unsigned long)offset;
	/* A glob, or a C++ name as written in the source (every overload):
	 * several functions, one probe each, at +0. */
	ev->multi = strpbrk(rest, "*?[") || strstr(rest, "::");
	if (ev->multi && offset) {
		ret = log_err(c, (int)(strpbrk(sym + (rest - sym), "+-") - sym), PE_ERR_BAD_PROBE_ADDR);
		goto out;
	}
	ret = check_point(ev, c->err);
	if (ret)
		goto out;
	if (*is_return && offset != 0) {
		ret = log_err(c, 0, PE_ERR_BAD_RETPROBE);
		goto out;
	}
	if (!*is_return)
		ev->fentry = offset == 0;
	ret = 0;
out:
	free(sym);
	return ret;
}

/* traceprobe_parse_event_name() */
static int parse_event_name(struct pctx *c, const char *event, int offset,
			    bool *have_event)
{
	struct pe_event *ev = c->ev;
	const char *slash = strchr(event, '/');
	size_t len;

	if (!slash)
		slash = strchr(event, '.');
	if (slash) {
		if (slash == event)
			return log_err(c, offset, PE_ERR_NO_GROUP_NAME);
		if (slash - event + 1 > PE_MAX_EVENT_NAME_LEN)
			return log_err(c, offset, PE_ERR_GROUP_TOO_LONG);
		memcpy(ev->group, event, (size_t)(slash - event));
		ev->group[slash - event] = '\0';
		if (!is_good_system_name(ev->group))
			return log_err(c, offset, PE_ERR_BAD_GROUP_NAME);
		offset += (int)(slash - event + 1);
		event = slash + 1;
	}
	len = strlen(event);
	if (len == 0) {
		if (slash) {
			*have_event = false;
			return 0;
		}
		return log_err(c, offset, PE_ERR_NO_EVENT_NAME);
	}
	if (len >= PE_MAX_EVENT_NAME_LEN)
		return log_err(c, offset, PE_ERR_EVENT_TOO_LONG);
	if (!is_good_name(event))
		return log_err(c, offset, PE_ERR_BAD_EVENT_NAME);
	strcpy(ev->event, event);
	*have_event = true;
	ev->named = true;
	return 0;
}

static void default_event_name(struct pe_event *ev)
{
	char k = ev->kind == PE_RETURN ? 'r' : 'p';
	char buf[sizeof(ev->object) + sizeof(ev->symbol) + 32];
	const char *obj = strrchr(ev->object, '/');

	obj = obj ? obj + 1 : ev->object;
	if (ev->symbol[0]) {
		/* As the kernel names kprobe events: p_SYM_OFFS, whatever
		 * the object (two definitions of one SYM in two objects need
		 * a name each: EVENT_EXIST). */
		snprintf(buf, sizeof(buf), "%c_%s_%lu", k, ev->symbol, ev->offset);
	} else if (ev->addr_is_file_offset) {
		/* trace_uprobe: the file's base name up to the first . - _ */
		int n = (int)strcspn(obj, ".-_");

		snprintf(buf, sizeof(buf), "%c_%.*s_0x%lx", k, n, obj, ev->address);
	} else {
		snprintf(buf, sizeof(buf), "%c_0x%lx", k, ev->address);
	}
	buf[PE_MAX_EVENT_NAME_LEN - 1] = '\0';	/* snprintf(MAX_EVENT_NAME_LEN) */
	sanitize_event_name(buf);
	strcpy(ev->event, buf);
}

void pe_event_free(struct pe_event *ev)
{
	if (!ev)
		return;
	for (int i = 0; i < PE_MAX_ARGS; i++) {
		free_fetch(ev->args[i].fetch);
		ev->args[i].fetch = NULL;
		free(ev->args[i].text);
		ev->args[i].text = NULL;
	}
	free(ev->text);
	ev->text = NULL;
	free(ev->filter);
	ev->filter = NULL;
	ev->nargs = 0;
}

int pe_parse(const char *def, struct pe_event *ev, struct pe_error *perr)
{
	struct pe_error dummy;
	struct pctx c = { 0 };
	bool is_return, have_event = false;
	const char *event;
	char *a0;
	int ret, argc, nargs, if_at = 0;

	if (!perr)
		perr = &dummy;
	memset(ev, 0, sizeof(*ev));
	memset(perr, 0, sizeof(*perr));
	c.def = def;
	c.err = perr;
	c.ev = ev;
	ev->text = strdup(def);
	if (!ev->text)
		goto nomem;
	argc = split_words(def, &c.argv, &c.argpos);
	if (argc < 0)
		goto nomem;
	c.argc = argc;
	/* "... if FILTER": the arguments end at the "if". */
	for (int i = 2; i < argc; i++) {
		if (!strcmp(c.argv[i], "if")) {
			if_at = i;
			argc = i;
			break;
		}
	}

	if (argc == 0 || (c.argv[0][0] != 'p' && c.argv[0][0] != 'r')) {
		ret = log_err(&c, 0, PE_ERR_BAD_PROBE_TYPE);
		goto out;
	}
	a0 = c.argv[0];
	is_return = a0[0] == 'r';
	event = strchr(a0 + 1, ':');
	if (event)
		event++;

	if (isdigit((unsigned char)a0[1])) {
		unsigned long ma;
		char buf[PE_MAX_EVENT_NAME_LEN];
		size_t len;

		if (!is_return) {
			ret = log_err(&c, 1, PE_ERR_MAXACT_NO_KPROBE);
			goto out;
		}
		len = event ? (size_t)(event - (a0 + 1) - 1) : strlen(a0 + 1);
		if (len > PE_MAX_EVENT_NAME_LEN - 1) {
			ret = log_err(&c, 1, PE_ERR_BAD_MAXACT);
			goto out;
		}
		memcpy(buf, a0 + 1, len);
		buf[len] = '\0';
		if (kstrtoul_(buf, 0, &ma) || !ma || ma > UINT_MAX) {
			ret = log_err(&c, 1, PE_ERR_BAD_MAXACT);
			goto out;
		}
		if (ma > PE_MAXACTIVE_MAX) {
			ret = log_err(&c, 1, PE_ERR_MAXACT_TOO_BIG);
			goto out;
		}
		ev->maxactive = (int)ma;
	} else if (a0[1] != '\0' && a0[1] != ':') {
		ret = log_err(&c, 1, PE_ERR_BAD_PROBE_TYPE);
		goto out;
	}
	if (argc < 2) {
		/* No probe point.  After "p:NAME" the caret goes under NAME
		 * (the point the user meant to give, not an event name),
		 * not past the end of the line. */
		if (event) {
			c.index = 0;
			ret = log_err(&c, (int)(event - a0), PE_ERR_BAD_PROBE_ADDR);
		} else {
			c.index = 1;
			ret = log_err(&c, 0, PE_ERR_BAD_PROBE_ADDR);
		}
		goto out;
	}

	ret = parse_point(&c, &is_return);
	if (ret)
		goto out;
	ev->kind = is_return ? PE_RETURN : PE_ENTRY;
	c.flags = (is_return ? TPARG_FL_RETURN : 0) | (ev->fentry ? TPARG_FL_FENTRY : 0);

	c.index = 0;
	strcpy(ev->group, PE_DEFAULT_GROUP);
	if (event) {
		ret = parse_event_name(&c, event, (int)(event - a0), &have_event);
		if (ret)
			goto out;
	}
	if (!have_event)
		default_event_name(ev);

	/* traceprobe_expand_meta_args(): $arg checks before anything else */
	nargs = argc - 2;
	for (int i = 0; i < nargs; i++) {
		const char *a = c.argv[i + 2];

		if (strncmp(a, "$arg", 4))
			continue;
		c.index = i + 2;
		if (!(c.flags & (TPARG_FL_FENTRY | TPARG_FL_RETURN))) {
			ret = log_err(&c, 0, PE_ERR_NOFENTRY_ARGS);
			goto out;
		}
		if (isdigit((unsigned char)a[4]))
			continue;
		if (a[4] == '*' || !strncmp(a + 4, "s", 2) || !strncmp(a + 4, "s:", 2)) {
			ret = log_err(&c, 0, PE_ERR_NOSUP_BTFARG);
			goto out;
		}
		ret = log_err(&c, 0, PE_ERR_BAD_VAR);
		goto out;
	}
	if (nargs > PE_MAX_ARGS) {
		c.index = 2;
		ret = log_err(&c, 0, PE_ERR_TOO_MANY_ARGS);
		goto out;
	}
	for (int i = 0; i < nargs; i++) {
		c.index = i + 2;
		c.offset = 0;
		ret = parse_one_arg(&c, i, c.argv[i + 2]);
		ev->nargs = i + 1;
		if (ret)
			goto out;
	}
	ev->nargs = nargs;
	if (if_at) {
		if (if_at + 1 >= c.argc) {
			perr->code = PE_ERR_NO_EP_FILTER;
			perr->pos = c.argpos[if_at] + 2;
			perr->reason = err_reasons[PE_ERR_NO_EP_FILTER];
			ret = -EINVAL;
			goto out;
		}
		ret = filter_compile(def + c.argpos[if_at + 1], c.argpos[if_at + 1], ev,
				     &ev->filter, perr);
		if (ret)
			goto out;
	}
	ret = pe_event_resolve(ev, perr);
out:
	if (ret == -ENOMEM) {
		perr->code = PE_ERR_NO_MEMORY;
		perr->reason = err_reasons[PE_ERR_NO_MEMORY];
	}
	if (ret)
		pe_event_free(ev);
	for (int i = 0; i < c.argc; i++)
		free(c.argv[i]);
	free(c.argv);
	free(c.argpos);
	return ret;
nomem:
	ret = -ENOMEM;
	goto out;
}
