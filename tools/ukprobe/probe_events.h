/* SPDX-License-Identifier: MIT */
/*
 * probe_events.h - the kprobe_events definition grammar for ukprobe.
 *
 *   p[:[GRP/][EVENT]] [OBJ:]SYM[+offs]|ADDR|OBJ:0xOFFSET [FETCHARGS]
 *   r[MAXACTIVE][:[GRP/][EVENT]] [OBJ:]SYM[+0] [FETCHARGS]
 *   p[:[GRP/][EVENT]] [OBJ:]SYM[+0]%return [FETCHARGS]
 *
 * FETCHARGS: up to PE_MAX_ARGS of [NAME=]FETCHARG[:TYPE], as the kernel's
 * Documentation/trace/kprobetrace.rst, checked as kernel/trace/trace_probe.c
 * does (same checks, same order).  Errors carry the kernel's error name and
 * the byte position of the kernel's error_log caret, counted in the
 * definition as written (the same as the kernel's when words are separated
 * by single spaces).  Default type x64; no TYPE[N] on registers/immediates
 * ('$stack1:x8[8]' is BAD_STRING, as in the kernel); no BTF, so bare names,
 * $arg* and $args are NOSUP_BTFARG.  OBJ:SYM splits at the last ':'; a
 * digit after it makes OBJ:OFFSET, the uprobe form (file offset).
 *
 * pe_parse() checks the probe point's symbol only when a resolver is
 * installed (pe_set_resolvers()), like the kernel's parse-time check;
 * without one the agent finds out at register_kprobe().  @SYM fetch
 * arguments are resolved through the same resolver, at pe_parse() if it is
 * installed then, else by a later pe_event_resolve().
 */
#ifndef UKPROBE_PROBE_EVENTS_H
#define UKPROBE_PROBE_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define PE_MAX_ARGS		128
#define PE_MAX_ARG_NAME_LEN	32
#define PE_MAX_EVENT_NAME_LEN	64
#define PE_MAX_ARRAY_LEN	64
#define PE_MAX_STRING_LEN	4096	/* longest string fetched */
#define PE_MAXACTIVE_MAX	4096	/* KRETPROBE_MAXACTIVE_MAX */
#define PE_DEFAULT_GROUP	"ukprobes"

enum pe_kind {
	PE_ENTRY,	/* p */
	PE_RETURN,	/* r, or p ...%return */
};

enum pe_type {
	PE_U8, PE_U16, PE_U32, PE_U64,
	PE_S8, PE_S16, PE_S32, PE_S64,
	PE_X8, PE_X16, PE_X32, PE_X64,
	PE_CHAR,
	PE_STRING,	/* kernel memory string: here, own memory */
	PE_USTRING,	/* user memory string: same thing here */
	PE_SYMBOL,	/* address shown as sym+0xoff/0xsize */
	PE_SYMSTR,	/* the same text, as a "string" */
	PE_BITFIELD,	/* b<width>@<offset>/<size>: shown as unsigned */
};

struct pe_fetch;	/* compiled fetch program (fetch.h) */
struct pe_filter;	/* compiled filter (filter.h) */

struct pe_arg {
	char name[PE_MAX_ARG_NAME_LEN + 1];	/* NAME= or "argN" (1-based) */
	struct pe_fetch *fetch;			/* compiled */
	enum pe_type type;
	int bf_width, bf_offset, bf_size;	/* b<width>@<offset>/<size> (bits) */
	int array_len;				/* TYPE[N]; 0 = scalar */
	char *text;				/* FETCHARG[:TYPE] as written (no NAME=) */
	int pos;				/* where this argument starts in
						 * the definition */
};

struct pe_event {
	enum pe_kind kind;
	char group[PE_MAX_EVENT_NAME_LEN + 1];	/* default "ukprobes" */
	char event[PE_MAX_EVENT_NAME_LEN + 1];	/* default p_SYM_OFFS, r_SYM_OFFS,
						 * p_0xADDR, p_OBJ_0xOFFSET */
	char object[256];	/* OBJ or "" */
	char symbol[256];	/* SYM, or "" for the address / offset forms */
	unsigned long offset;	/* +offs after SYM */
	unsigned long address;	/* ADDR (absolute), or the file offset of
				 * OBJ:0xOFFSET when addr_is_file_offset */
	bool addr_is_file_offset;
	bool named;		/* the event was named (p:EVENT ...) */
	bool multi;		/* SYM is a glob (str*) or a C++ name
				 * (ns::Class::fn): each function it names
				 * gets a probe */
	int maxactive;		/* r<N>; 0 = default */
	int point_pos;		/* where the probe point starts in text (for
				 * BAD_INSN_BNDRY, BAD_PROBE_ADDR ... carets) */
	bool fentry;		/* entry probe on SYM+0: $argN allowed */
	unsigned long point_addr; /* SYM+offs resolved by pe_event_resolve();
				   * 0 if not resolved (or not a symbol) */
	int nargs;
	struct pe_arg args[PE_MAX_ARGS];
	/* Return probes: function arguments used as $argN, to save in the
	 * kretprobe entry handler with fetch_save_entry_args() into an array
	 * of nentry_args unsigned longs (the kernel's entry data). */
	int nentry_args;
	int entry_args[PE_MAX_ARGS];	/* 0-based argument numbers, as
					 * regs_get_kernel_argument() counts */
	char *text;		/* the original definition (malloc'd) */
	/* "if FILTER" at the end (filter.h); NULL without one. */
	struct pe_filter *filter;
};

/* The kernel's error names (kernel/trace/trace_probe.h ERRORS), same order
 * where they overlap; PE_ERR_NONE = 0. */
#define PE_ERRORS							\
	C(NONE,			"No error"),				\
	C(FILE_NOT_FOUND,	"Failed to find the given file"),	\
	C(NO_REGULAR_FILE,	"Not a regular file"),			\
	C(BAD_REFCNT,		"Invalid reference counter offset"),	\
	C(REFCNT_OPEN_BRACE,	"Reference counter brace is not closed"), \
	C(BAD_REFCNT_SUFFIX,	"Reference counter has wrong suffix"),	\
	C(BAD_UPROBE_OFFS,	"Invalid uprobe offset"),		\
	C(MAXACT_NO_KPROBE,	"Maxactive is not for kprobe"),		\
	C(BAD_MAXACT,		"Invalid maxactive number"),		\
	C(MAXACT_TOO_BIG,	"Maxactive is too big"),		\
	C(BAD_PROBE_ADDR,	"Invalid probed address or symbol"),	\
	C(NON_UNIQ_SYMBOL,	"The symbol is not unique"),		\
	C(BAD_RETPROBE,		"Retprobe address must be an function entry"), \
	C(NO_TRACEPOINT,	"Tracepoint is not found"),		\
	C(BAD_ADDR_SUFFIX,	"Invalid probed address suffix"),	\
	C(NO_GROUP_NAME,	"Group name is not specified"),		\
	C(GROUP_TOO_LONG,	"Group name is too long"),		\
	C(BAD_GROUP_NAME,	"Group name must follow the same rules as C identifiers"), \
	C(NO_EVENT_NAME,	"Event name is not specified"),		\
	C(EVENT_TOO_LONG,	"Event name is too long"),		\
	C(BAD_EVENT_NAME,	"Event name must follow the same rules as C identifiers"), \
	C(EVENT_EXIST,		"Given group/event name is already used by another event"), \
	C(RETVAL_ON_PROBE,	"$retval is not available on probe"),	\
	C(NO_RETVAL,		"This function returns 'void' type"),	\
	C(BAD_STACK_NUM,	"Invalid stack number"),		\
	C(BAD_ARG_NUM,		"Invalid argument number"),		\
	C(BAD_VAR,		"Invalid $-valiable specified"),	\
	C(BAD_REG_NAME,		"Invalid register name"),		\
	C(BAD_MEM_ADDR,		"Invalid memory address"),		\
	C(BAD_IMM,		"Invalid immediate value"),		\
	C(IMMSTR_NO_CLOSE,	"String is not closed with '\"'"),	\
	C(FILE_ON_KPROBE,	"File offset is not available with kprobe"), \
	C(BAD_FILE_OFFS,	"Invalid file offset value"),		\
	C(SYM_ON_UPROBE,	"Symbol is not available with uprobe"),	\
	C(TOO_MANY_OPS,		"Dereference is too much nested"),	\
	C(DEREF_NEED_BRACE,	"Dereference needs a brace"),		\
	C(BAD_DEREF_OFFS,	"Invalid dereference offset"),		\
	C(DEREF_OPEN_BRACE,	"Dereference brace is not closed"),	\
	C(COMM_CANT_DEREF,	"$comm can not be dereferenced"),	\
	C(BAD_FETCH_ARG,	"Invalid fetch argument"),		\
	C(ARRAY_NO_CLOSE,	"Array is not closed"),			\
	C(BAD_ARRAY_SUFFIX,	"Array has wrong suffix"),		\
	C(BAD_ARRAY_NUM,	"Invalid array size"),			\
	C(ARRAY_TOO_BIG,	"Array number is too big"),		\
	C(BAD_TYPE,		"Unknown type is specified"),		\
	C(BAD_STRING,		"String accepts only memory argument"),	\
	C(BAD_SYMSTRING,	"Symbol String doesn't accept data/userdata"), \
	C(BAD_BITFIELD,		"Invalid bitfield"),			\
	C(ARG_NAME_TOO_LONG,	"Argument name is too long"),		\
	C(NO_ARG_NAME,		"Argument name is not specified"),	\
	C(BAD_ARG_NAME,		"Argument name must follow the same rules as C identifiers"), \
	C(USED_ARG_NAME,	"This argument name is already used"),	\
	C(ARG_TOO_LONG,		"Argument expression is too long"),	\
	C(NO_ARG_BODY,		"No argument expression"),		\
	C(BAD_INSN_BNDRY,	"Probe point is not an instruction boundary"), \
	C(FAIL_REG_PROBE,	"Failed to register probe event"),	\
	C(DIFF_PROBE_TYPE,	"Probe type is different from existing probe"), \
	C(DIFF_ARG_TYPE,	"Argument type or name is different from existing probe"), \
	C(SAME_PROBE,		"There is already the exact same probe event"), \
	C(NO_EVENT_INFO,	"This requires both group and event name to attach"), \
	C(BAD_ATTACH_EVENT,	"Attached event does not exist"),	\
	C(BAD_ATTACH_ARG,	"Attached event does not have this field"), \
	C(NO_EP_FILTER,		"No filter rule after 'if'"),		\
	C(NOSUP_BTFARG,		"BTF is not available or not supported"), \
	C(NO_BTFARG,		"This variable is not found at this probe point"), \
	C(NO_BTF_ENTRY,		"No BTF entry for this probe point"),	\
	C(BAD_VAR_ARGS,		"$arg* must be an independent parameter without name etc."), \
	C(NOFENTRY_ARGS,	"$arg* can be used only on function entry or exit"), \
	C(DOUBLE_ARGS,		"$arg* can be used only once in the parameters"), \
	C(ARGS_2LONG,		"$arg* failed because the argument list is too long"), \
	C(ARGIDX_2BIG,		"$argN index is too big"),		\
	C(NO_PTR_STRCT,		"This is not a pointer to union/structure."), \
	C(NOSUP_DAT_ARG,	"Non pointer structure/union argument is not supported."), \
	C(BAD_HYPHEN,		"Failed to parse single hyphen. Forgot '>'?"), \
	C(NO_BTF_FIELD,		"This field is not found."),		\
	C(BAD_BTF_TID,		"Failed to get BTF type info."),	\
	C(BAD_TYPE4STR,		"This type does not fit for string."),	\
	C(NEED_STRING_TYPE,	"$comm and immediate-string only accepts string type"), \
	C(TOO_MANY_ARGS,	"Too many arguments are specified"),	\
	C(TOO_MANY_EARGS,	"Too many entry arguments specified"),	\
	/* ukprobe's own: */						\
	C(BAD_PROBE_TYPE,	"Probe definition must start with p or r"), \
	C(NO_SYMBOL,		"Symbol is not found"),			\
	C(NO_MEMORY,		"Out of memory")

#define C(a, b) PE_ERR_##a
enum pe_error_code { PE_ERRORS, PE_ERR_MAX };
#undef C

struct pe_error {
	int code;		/* enum pe_error_code */
	int pos;		/* byte offset in the definition */
	const char *reason;	/* the kernel's message for code */
};

/* Symbol resolution, plugged in by the agent (libukprobes-based).
 *   resolve: obj may be NULL or "" (any object); 0 and *addr set, or <0.
 *   symbolize: writes the %pS-style "sym+0xoff/0xsize" for addr into out;
 *              0, or <0 when addr is in no known symbol. */
typedef int (*pe_resolve_fn)(const char *obj, const char *sym, unsigned long *addr);
typedef int (*pe_symbolize_fn)(unsigned long addr, char *out, size_t len);
void pe_set_resolvers(pe_resolve_fn resolve, pe_symbolize_fn symbolize);

/* Parse def into ev (ev is overwritten; free with pe_event_free()).
 * Returns 0; -EINVAL with err filled on a syntax error; -ENOENT
 * (PE_ERR_NO_SYMBOL) when an @SYM argument does not resolve; -ENOMEM. */
int pe_parse(const char *def, struct pe_event *ev, struct pe_error *err);

/* With the resolver: check the probe point's symbol as the kernel does at
 * parse time (resolver -ENOENT -> BAD_PROBE_ADDR, -EADDRNOTAVAIL ->
 * NON_UNIQ_SYMBOL), set point_addr, and resolve @SYM fetch arguments
 * (-> NO_SYMBOL).  pe_parse() calls it when a resolver is installed.
 * 0, -ENOENT, or -EINVAL with err filled; no resolver: 0, nothing done. */
int pe_event_resolve(struct pe_event *ev, struct pe_error *err);

void pe_event_free(struct pe_event *ev);

/* The definition, a caret line under err->pos, and "reason (ERR_NAME)". */
void pe_print_error(FILE *out, const char *def, const struct pe_error *err);
const char *pe_error_name(int code);	/* "BAD_REG_NAME"; "UNKNOWN" */
const char *pe_error_reason(int code);

/* The base type's name: "u32", "x64", "string", "symbol", "b" ... */
const char *pe_type_name(enum pe_type t);
/* The argument's full type as written: "u32", "b3@4/32", "x8[4]"; returns
 * the length as snprintf. */
int pe_arg_type_str(const struct pe_arg *a, char *out, size_t len);

/* Does want ("NAME", or "EVENT.NAME" / "EVENT:NAME") name argument a of
 * ev?  How --hist and --by name an argument. */
bool pe_arg_matches(const struct pe_event *ev, const struct pe_arg *a, const char *want);

/* Can a's values be binned or compared as numbers (not strings, arrays)? */
bool pe_arg_numeric(const struct pe_arg *a);

#endif
