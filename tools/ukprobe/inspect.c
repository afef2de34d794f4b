// SPDX-License-Identifier: MIT
/*
 * inspect.c - `ukprobe list-symbols` and `ukprobe check`: symbols and
 * definitions checked against the files, nothing run.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probe_events.h"
#include "fetch.h"
#include "prog_objs.h"
#include "syms.h"
#include "tool.h"

/* ------------------------------------------------------------------------ */
/* list-symbols                                                              */
/* ------------------------------------------------------------------------ */

static bool pattern_match(const char *pat, const char *name)
{
	if (!pat || !*pat)
		return true;
	if (strpbrk(pat, "*?["))
		return fnmatch(pat, name, 0) == 0;
	return strstr(name, pat) != NULL;
}

static char sym_letter(const struct ksym *s)
{
	if (s->type == STT_GNU_IFUNC)
		return 'i';
	if (ksym_is_func(s))
		return s->bind == STB_WEAK ? 'W' : s->bind == STB_LOCAL ? 't' : 'T';
	return s->bind == STB_WEAK ? 'V' : s->bind == STB_LOCAL ? 'd' : 'D';
}

static int list_file(const char *path, const char *pat, bool data, bool header)
{
	char err[512];
	struct symfile *sf = symfile_open(path, err, sizeof(err));
	int n = 0;

	if (!sf) {
		tool_err("%s", err);
		return -1;
	}
	for (size_t i = 0; i < sf->nsyms; i++) {
		const struct ksym *s = &sf->syms[i];
		uint64_t off = 0;

		if (!ksym_is_func(s) && !(data && s->type == STT_OBJECT))
			continue;
		if (ksym_is_func(s) && !symfile_vaddr_exec(sf, s->addr))
			continue;
		if (!pattern_match(pat, ksym_name(sf, s)))
			continue;
		if (header && !n)
			printf("# %s%s\n", path, sf->has_symtab ? "" : " (no .symtab: dynamic symbols)");
		symfile_vaddr_to_off(sf, s->addr, &off);
		printf("%016llx 0x%-9llx %7llu %c %s\n", (unsigned long long)s->addr,
		       (unsigned long long)off, (unsigned long long)(s->sized ? s->size : 0),
		       sym_letter(s), ksym_name(sf, s));
		n++;
	}
	symfile_close(sf);
	return n;
}

struct paths {
	char **v;
	int n;
};

static void collect_obj(struct lobj *o, void *arg)
{
	struct paths *p = arg;
	char **nv;

	if (o->path[0] != '/')
		return;
	nv = realloc(p->v, (size_t)(p->n + 1) * sizeof(*nv));
	if (!nv)
		return;
	p->v = nv;
	p->v[p->n++] = strdup(o->path);
}

static bool is_elf(const char *path)
{
	unsigned char m[4];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool ok;

	if (fd < 0)
		return false;
	ok = read(fd, m, 4) == 4 && !memcmp(m, ELFMAG, 4);
	close(fd);
	return ok;
}

int cmd_list_symbols(int argc, char **argv, const char *usage)
{
	static const struct option lo[] = {
		{ "data", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *obj = NULL, *pat = NULL;
	bool data = false;
	char *path = NULL;
	int c, total = 0;

	while ((c = getopt_long(argc, argv, "dh", lo, NULL)) != -1) {
		switch (c) {
		case 'd': data = true; break;
		case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return 2;
		}
	}
	argc -= optind;
	argv += optind;
	if (argc > 2) {
		fputs(usage, stderr);
		return 2;
	}
	if (argc == 2) {
		obj = argv[0];
		pat = argv[1];
	} else if (argc == 1) {
		path = find_object_file(argv[0]);
		if (path && is_elf(path))
			obj = argv[0];
		else
			pat = argv[0];
	}
	if (obj) {
		int n;

		if (!path)
			path = find_object_file(obj);
		if (!path) {
			tool_err("%s: no such object (a path, a library name or a program in $PATH)",
				 obj);
			return 2;
		}
		n = list_file(path, pat, data, true);
		free(path);
		return n < 0 ? 2 : n ? 0 : 1;
	}
	free(path);
	{
		struct paths p = { 0 };

		lobjs_foreach(collect_obj, &p);
		for (int i = 0; i < p.n; i++) {
			int n = list_file(p.v[i], pat, data, true);

			if (n > 0)
				total += n;
			free(p.v[i]);
		}
		free(p.v);
	}
	return total ? 0 : 1;
}

/* ------------------------------------------------------------------------ */
/* check                                                                     */
/* ------------------------------------------------------------------------ */

static struct prog_objs C;

/* Symbols for fetch arguments (@SYM): looked up in the program's objects,
 * or, without a program, in the file of the object named. */
static int check_resolve(const char *obj, const char *sym, unsigned long *addr)
{
	if (obj && *obj) {
		struct pobj *o = prog_objs_find(&C, obj, true);
		struct symfile *sf = o ? pobj_symfile(o) : NULL;
		const struct ksym *s = sf ? symfile_lookup(sf, sym) : NULL;

		if (!s)
			return -ENOENT;
		*addr = (unsigned long)s->addr;
		return 0;
	}
	for (int i = 0; i < C.n; i++) {
		struct symfile *sf = pobj_symfile(&C.v[i]);
		const struct ksym *s = sf ? symfile_lookup(sf, sym) : NULL;

		if (s) {
			*addr = (unsigned long)s->addr;
			return 0;
		}
	}
	if (!C.have_program) {
		/* Nothing to look it up in: not an error. */
		*addr = 0;
		return 0;
	}
	return -ENOENT;
}

/* The definition in its full form, and where it goes. */
static void describe(FILE *out, const struct pe_event *ev)
{
	fprintf(out, "%s:%s/%s ", ev->kind == PE_RETURN ? "r" : "p", ev->group, ev->event);
	if (ev->kind == PE_RETURN && ev->maxactive)
		fprintf(out, "(maxactive %d) ", ev->maxactive);
	if (ev->addr_is_file_offset)
		fprintf(out, "%s:0x%lx", ev->object, ev->address);
	else if (!ev->symbol[0])
		fprintf(out, "0x%lx", ev->address);
	else
		fprintf(out, "%s%s%s+%lu", ev->object, ev->object[0] ? ":" : "", ev->symbol,
			ev->offset);
	for (int i = 0; i < ev->nargs; i++)
		fprintf(out, " %s=%s", ev->args[i].name, ev->args[i].text);
	fprintf(out, "\n  probe:    %s\n",
		ev->kind == PE_RETURN ? "return (kretprobe)" : "entry (kprobe)");
}

static void locate(FILE *out, const struct pe_event *ev, const struct pobj *o,
		   const struct point_info *pi)
{
	const struct symfile *sf = o->sf;
	uint64_t foff = 0;

	symfile_vaddr_to_off(sf, pi->vaddr, &foff);
	if (ev->addr_is_file_offset) {
		fprintf(out, "  location: %s file offset 0x%lx = address 0x%llx", o->path,
			ev->address, (unsigned long long)pi->vaddr);
		if (pi->fn)
			fprintf(out, " (%s+0x%llx)", ksym_name(sf, pi->fn),
				(unsigned long long)(pi->vaddr - pi->fn->addr));
		fputc('\n', out);
	} else {
		fprintf(out, "  location: %s: %s at 0x%llx (file offset 0x%llx), function, size %llu\n",
			o->path, ksym_name(sf, pi->fn), (unsigned long long)pi->vaddr,
			(unsigned long long)foff, (unsigned long long)pi->fn->size);
	}
	if (pi->ifunc)
		fprintf(out, "  note:     an indirect function: the probe goes on the "
			"implementation chosen at run time (register_kprobe() checks it)\n");
	else if (pi->from_what && strcmp(pi->from_what, "symbol"))
		fprintf(out, "  note:     no function symbol: instruction boundary checked from "
			"%s, address 0x%llx\n", point_start_words(pi->from_what),
			(unsigned long long)pi->from);
	else if (!pi->from_what && ev->addr_is_file_offset)
		fprintf(out, "  note:     no symbol, unwind table or section here: instruction "
			"boundary not checked\n");
	if (pi->skip && !ev->offset && !ev->addr_is_file_offset)
		fprintf(out, "  note:     starts with %s: the probe goes on the next "
			"instruction (+0x%zx)\n", pi->skipped, pi->skip);
}

static int check_one(const char *def, const char *orig)
{
	struct pe_event ev;
	struct pe_error err;
	struct point_info pi;
	struct pobj *o;
	char tbuf[128], *text = NULL;
	size_t textlen = 0;
	FILE *out;
	int e;

	memset(&err, 0, sizeof(err));
	e = pe_parse(def, &ev, &err);
	if (e) {
		pe_print_error(stderr, orig, &err);
		return 1;
	}
	/* The parsed form is printed only if everything checks out. */
	out = open_memstream(&text, &textlen);
	if (!out) {
		pe_event_free(&ev);
		return 1;
	}
	describe(out, &ev);
	switch (prog_objs_check(&C, &ev, true, &o, &pi, &err)) {
	case POINT_BAD:
		/* Carets: same positions in the user's text. */
		point_print_error(stderr, orig, &err, pi.why);
		pe_event_free(&ev);
		fclose(out);
		free(text);
		return 1;
	case POINT_LATER:
		if (ev.symbol[0])
			fprintf(out, "  location: %s+0x%lx, not looked up (give the program: "
				"-x PROGRAM)\n", ev.symbol, ev.offset);
		else
			fprintf(out, "  location: absolute address 0x%lx (checked when placed)\n",
				ev.address);
		break;
	default:
		locate(out, &ev, o, &pi);
	}
	for (int i = 0; i < ev.nargs; i++) {
		pe_arg_type_str(&ev.args[i], tbuf, sizeof(tbuf));
		fprintf(out, "  arg %-5s %s (%s)\n", ev.args[i].name, ev.args[i].text, tbuf);
	}
	pe_event_free(&ev);
	fclose(out);
	fputs(text, stdout);
	free(text);
	return 0;
}

int cmd_check(int argc, char **argv, const char *usage)
{
	static const struct option lo[] = {
		{ "event", required_argument, NULL, 'e' },
		{ "file", required_argument, NULL, 'f' },
		{ "exe", required_argument, NULL, 'x' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct defs d = { 0 };
	const char *exe = NULL;
	char err[PATH_MAX + 128];
	int c, bad = 0;

	while ((c = getopt_long(argc, argv, "+e:f:x:h", lo, NULL)) != -1) {
		switch (c) {
		case 'e':
			if (defs_add(&d, optarg))
				return 2;
			break;
		case 'f':
			if (defs_add_file(&d, optarg))
				return 2;
			break;
		case 'x': exe = optarg; break;
		case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return 2;
		}
	}
	if (!exe && optind < argc)
		exe = argv[optind];
	if (!d.n) {
		fputs(usage, stderr);
		return 2;
	}
	if (exe && prog_objs_load(&C, exe, err, sizeof(err))) {
		tool_err("%s", err);
		return 2;
	}
	pe_set_resolvers(check_resolve, NULL);
	for (int i = 0; i < d.n; i++)
		bad += check_one(d.v[i], d.orig[i]);
	prog_objs_free(&C);
	return bad ? 1 : 0;
}
