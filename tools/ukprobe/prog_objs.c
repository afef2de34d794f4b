// SPDX-License-Identifier: MIT
/*
 * prog_objs.c - the objects a program loads at start, from the files (see
 * prog_objs.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "prog_objs.h"

static struct pobj *add(struct prog_objs *P, const char *name, const char *path, bool at_start)
{
	char *real = realpath(path, NULL);
	struct pobj *o;

	if (!real)
		return NULL;
	for (int i = 0; i < P->n; i++) {
		if (!strcmp(P->v[i].path, real)) {
			free(real);
			return &P->v[i];
		}
	}
	if (P->n == PROG_OBJS_MAX) {
		free(real);
		return NULL;
	}
	o = &P->v[P->n];
	memset(o, 0, sizeof(*o));
	o->name = strdup(name);
	o->path = real;
	o->at_start = at_start;
	P->n++;
	return o;
}

/*
 * One line of the run-time linker's --list output:
 *	libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)
 *	/lib64/ld-linux-x86-64.so.2 (0x...)
 *	linux-vdso.so.1 (0x...)			(no file)
 *	libfoo.so.1 => not found
 */
static void add_listed(struct prog_objs *P, char *line)
{
	char *arrow, *name = line, *path, *paren;

	while (*name == '\t' || *name == ' ')
		name++;
	paren = strstr(name, " (0x");
	if (!paren)
		return;
	*paren = '\0';
	arrow = strstr(name, " => ");
	if (arrow) {
		*arrow = '\0';
		path = arrow + 4;
	} else {
		path = name;
	}
	if (path[0] == '/')
		add(P, name, path, true);
}

/* `interp --list prog`: 0 if it listed the objects. */
static int list_by_linker(struct prog_objs *P, const char *interp, const char *prog)
{
	int pfd[2], status;
	pid_t pid;
	FILE *f;
	char *line = NULL;
	size_t cap = 0;

	if (pipe2(pfd, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(pfd[1], 1);
		if (null >= 0)
			dup2(null, 2);
		/* Audit modules would run in the listing: not the program's
		 * objects anyway (they live in namespaces of their own). */
		unsetenv("LD_AUDIT");
		execl(interp, interp, "--list", prog, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	f = fdopen(pfd[0], "r");
	if (!f) {
		close(pfd[0]);
		waitpid(pid, &status, 0);
		return -1;
	}
	while (getline(&line, &cap, f) > 0) {
		line[strcspn(line, "\n")] = '\0';
		add_listed(P, line);
	}
	free(line);
	fclose(f);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* Without the run-time linker: the DT_NEEDED tree, breadth first. */
static void list_needed(struct prog_objs *P)
{
	for (int i = 0; i < P->n; i++) {
		char **need = elf_needed(P->v[i].path);

		for (char **p = need; p && *p; p++) {
			char *lp = find_object_file(*p);

			if (lp)
				add(P, *p, lp, true);
			free(lp);
		}
		strv_free(need);
	}
}

int prog_objs_load(struct prog_objs *P, const char *prog, char *err, size_t errlen)
{
	char *path = find_in_path(prog), *interp;

	if (!path) {
		snprintf(err, errlen, "%s: not found", prog);
		return -1;
	}
	if (!add(P, prog, path, true) || !pobj_symfile(&P->v[0])) {
		snprintf(err, errlen, "%s: cannot read its symbols (not an ELF file?)", path);
		free(path);
		return -1;
	}
	P->have_program = true;
	interp = elf_interp(path);
	if (interp && list_by_linker(P, interp, path)) {
		/* Keep the program, read the rest from the files. */
		for (int i = 1; i < P->n; i++) {
			free(P->v[i].name);
			free(P->v[i].path);
			symfile_close(P->v[i].sf);
		}
		P->n = 1;
		list_needed(P);
	}
	free(interp);
	free(path);
	return 0;
}

struct symfile *pobj_symfile(struct pobj *o)
{
	if (!o->sf_tried) {
		o->sf_tried = true;
		o->sf = symfile_open(o->path, NULL, 0);
	}
	return o->sf;
}

void prog_objs_free(struct prog_objs *P)
{
	for (int i = 0; i < P->n; i++) {
		free(P->v[i].name);
		free(P->v[i].path);
		symfile_close(P->v[i].sf);
	}
	P->n = 0;
	P->have_program = false;
}

struct pobj *prog_objs_find(struct prog_objs *P, const char *name, bool files_too)
{
	char *path;
	struct pobj *o;

	for (int i = 0; i < P->n; i++)
		if (object_name_matches(name, P->v[i].path) ||
		    object_name_matches(name, P->v[i].name))
			return &P->v[i];
	if (!files_too)
		return NULL;
	path = find_object_file(name);
	if (!path)
		return NULL;
	o = add(P, name, path, false);
	free(path);
	return o;
}

int prog_objs_check(struct prog_objs *P, const struct pe_event *ev, bool files_too,
		    struct pobj **o, struct point_info *pi, struct pe_error *err)
{
	*o = NULL;
	memset(pi, 0, sizeof(*pi));
	if (!ev->symbol[0] && !ev->addr_is_file_offset)
		return POINT_LATER;	/* an absolute address */
	if (ev->object[0]) {
		*o = prog_objs_find(P, ev->object, files_too);
		if (!*o && files_too) {
			err->code = PE_ERR_FILE_NOT_FOUND;
			err->pos = ev->point_pos;
			err->reason = pe_error_reason(err->code);
			snprintf(pi->why, sizeof(pi->why), "no object file %s", ev->object);
			return POINT_BAD;
		}
		if (!*o)
			return POINT_LATER;
	} else {
		/* A bare symbol: the program first, then load order, as the
		 * agent resolves it. */
		for (int i = 0; i < P->n && !*o; i++) {
			struct symfile *sf = P->v[i].at_start ? pobj_symfile(&P->v[i]) : NULL;

			if (sf && symfile_lookup(sf, ev->symbol))
				*o = &P->v[i];
		}
		if (!*o && (!P->have_program || !files_too))
			return POINT_LATER;
		if (!*o) {
			err->code = PE_ERR_BAD_PROBE_ADDR;
			err->pos = ev->point_pos;
			err->reason = pe_error_reason(err->code);
			snprintf(pi->why, sizeof(pi->why), "no object of %s has a symbol %s",
				 P->v[0].path, ev->symbol);
			return POINT_BAD;
		}
	}
	if (!pobj_symfile(*o)) {
		err->code = PE_ERR_BAD_PROBE_ADDR;
		err->pos = ev->point_pos;
		err->reason = pe_error_reason(err->code);
		snprintf(pi->why, sizeof(pi->why), "cannot read the symbols of %s", (*o)->path);
		return POINT_BAD;
	}
	return point_check_event(ev, (*o)->sf, pi, err) ? POINT_BAD : POINT_GOOD;
}
