/* SPDX-License-Identifier: MIT */
/*
 * filter.h - event filters with ftrace's grammar, after "if" at the end of
 * a definition:
 *
 *   p:libc.so.6:malloc size=%di:u64 if size > 4096 && comm != "python3"
 *
 *   FIELD OP VALUE, where FIELD is an argument's name or comm (the thread's
 *   name); numbers: == != < <= > >= & (a non-zero AND); strings (string,
 *   ustring, symstr arguments, comm): == != ~ (a glob: * ? [...]);
 *   combined with && || ! and parentheses.  VALUE: a number (decimal,
 *   0x..., negative for signed types) or a string, quoted with " or ', or
 *   a bare word.
 *
 * Compiled once (filter_compile(): errors with the kernel's caret), then
 * evaluated in the probe handler on the values fetched into the record,
 * before the record is published: no allocation, no lock, no libc string
 * function (the file is built -mgeneral-regs-only), bounded work.
 */
#ifndef UKPROBE_FILTER_H
#define UKPROBE_FILTER_H

#include <stdbool.h>
#include <stdint.h>

#include "probe_events.h"

#define FILTER_MAX_NODES	64
#define FILTER_MAX_STR		128

enum filter_op {
	FOP_F_EQ, FOP_F_NE, FOP_F_LT, FOP_F_LE, FOP_F_GT, FOP_F_GE, FOP_F_AND_BITS,
	FOP_F_GLOB,		/* ~ */
	FOP_F_LAND, FOP_F_LOR, FOP_F_NOT,	/* on the stack of results */
};

struct filter_node {
	uint8_t op;		/* enum filter_op */
	bool is_str;		/* compare as strings */
	int16_t arg;		/* the argument's index; -1: comm */
	uint64_t num;		/* the value (as the argument's type) */
	bool num_signed;
	char str[FILTER_MAX_STR];
};

/* A postfix program: predicates push a result, && || ! combine them. */
struct pe_filter {
	int n;
	struct filter_node v[FILTER_MAX_NODES];
};

/*
 * Compile the filter text (what follows "if ") for ev's arguments.  pos
 * is where text starts in the definition (for carets).  0 and *out
 * (malloc'd), or -EINVAL with err filled (BAD_FETCH_ARG for an unknown
 * field, NO_EP_FILTER for an empty or malformed rule, BAD_TYPE for an
 * operator the field's type has not), or -ENOMEM.
 */
int filter_compile(const char *text, int pos, const struct pe_event *ev,
		   struct pe_filter **out, struct pe_error *err);

/* Does the hit pass?  args..end: the arguments as the record holds them
 * (ring.h: { int32 used; int32 pad; bytes, 8-aligned } each, fetch_arg()'s
 * results); comm: the thread's name.  A field that faulted fails its
 * comparison.  filter_eval.c: built for the handlers. */
bool filter_eval(const struct pe_filter *f, const struct pe_event *ev, const char *args,
		 const char *end, const char *comm);

#endif
