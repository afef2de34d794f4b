/* SPDX-License-Identifier: MIT */
/*
 * point_check.h - is a definition's probe point good?  Checked in the file
 * of the object it is in, before anything is placed, with the kernel's
 * error names: BAD_PROBE_ADDR (no such function; an offset past the
 * function's end, which would land in the next one), BAD_RETPROBE (a
 * return probe not at a function entry), BAD_INSN_BNDRY (not on an
 * instruction boundary, decoded from the nearest known start of code: the
 * function's symbol, else its entry in the unwind tables, else the section;
 * stripped files included), BAD_FILE_OFFS.
 *
 * `ukprobe check` and `trace` run these on the files before the program
 * starts; the agent runs them on an object loaded later, before it places
 * the probe.  They read files (open, pread) and allocate: not for handlers.
 */
#ifndef UKPROBE_POINT_CHECK_H
#define UKPROBE_POINT_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probe_events.h"
#include "syms.h"

struct point_info {
	uint64_t vaddr;		/* link-time address of the point */
	const struct ksym *fn;	/* the function symbol it is in, or NULL */
	uint64_t from;		/* where decoding started */
	const char *from_what;	/* "symbol", "unwind table", "section";
				 * NULL: no boundary check (nothing known) */
	const char *skipped;	/* SYM+0: the entry instruction a probe
				 * skips ("endbr64"), or NULL */
	size_t skip;		/* its length */
	bool ifunc;		/* SYM is an indirect function: its
				 * implementation is chosen at run time and
				 * checked when placed */
	char why[768];		/* an error's explanation, for a second line */
};

/*
 * ev's probe point in the object file sf: the SYM[+offs] form, or the
 * OBJ:0xOFFSET form.  0 and *pi filled, or -EINVAL with err filled (the
 * kernel's code, the caret's position in ev's definition) and pi->why.
 */
int point_check_event(const struct pe_event *ev, const struct symfile *sf,
		      struct point_info *pi, struct pe_error *err);

/* The same for a point known by its link-time address in sf (the ADDR
 * form, or SYM resolved at run time). */
int point_check_vaddr(const struct pe_event *ev, const struct symfile *sf, uint64_t vaddr,
		      struct point_info *pi, struct pe_error *err);

/* pi->from_what in words: "a function start in the unwind tables". */
const char *point_start_words(const char *from_what);

/* Print err as the kernel's error_log does (pe_print_error()), then the
 * explanation why, if any, on its own line. */
void point_print_error(FILE *out, const char *def, const struct pe_error *err,
		       const char *why);

#endif
