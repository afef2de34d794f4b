/* SPDX-License-Identifier: MIT */
/*
 * prog_objs.h - the objects a program loads at start, known from the files
 * before it runs, and definitions checked against them: what lets
 * `ukprobe trace` refuse a bad definition before the program runs, and
 * `ukprobe check` resolve one without running anything.
 */
#ifndef UKPROBE_PROG_OBJS_H
#define UKPROBE_PROG_OBJS_H

#include <stdbool.h>
#include <stddef.h>

#include "point_check.h"
#include "probe_events.h"
#include "syms.h"

#define PROG_OBJS_MAX	256

struct pobj {
	char *name;		/* as the run-time linker names it (the
				 * soname), or the program's name */
	char *path;
	struct symfile *sf;	/* read when first needed: pobj_symfile() */
	bool sf_tried;
	bool at_start;		/* loaded when the program starts */
};

struct prog_objs {
	struct pobj v[PROG_OBJS_MAX];
	int n;
	bool have_program;	/* v[0] is the program, v[1..] what it loads */
};

/*
 * prog (a path, or a name found in $PATH as execvp() does) and the objects
 * the run-time linker loads with it at start, in load order: asked of its
 * own run-time linker (`INTERP --list PROG`, which runs none of the
 * program's code, in our environment: the program's LD_LIBRARY_PATH and
 * LD_PRELOAD), else read from the DT_NEEDED entries.  0, or -1 with a
 * reason in err (not found, not ELF).
 */
int prog_objs_load(struct prog_objs *P, const char *prog, char *err, size_t errlen);
void prog_objs_free(struct prog_objs *P);

/* o's symbols, read from its file the first time (NULL if unreadable). */
struct symfile *pobj_symfile(struct pobj *o);

/* The object name names; with files_too, one not loaded at start is looked
 * for as a file (find_object_file()) and added.  NULL if none. */
struct pobj *prog_objs_find(struct prog_objs *P, const char *name, bool files_too);

enum { POINT_GOOD, POINT_LATER, POINT_BAD };

/*
 * Check ev's probe point in the files, as point_check_event() does.
 * POINT_GOOD: checked, *o and *pi filled.  POINT_LATER: nothing to check
 * it in before the program runs (an absolute address, an object or a bare
 * symbol that only an object loaded later can have): the agent checks it
 * when it places it.  POINT_BAD: err and pi->why say why.  Without
 * files_too (trace), an object not loaded at start is POINT_LATER; with it
 * (check), its file is checked.
 */
int prog_objs_check(struct prog_objs *P, const struct pe_event *ev, bool files_too,
		    struct pobj **o, struct point_info *pi, struct pe_error *err);

#endif
