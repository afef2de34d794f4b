// SPDX-License-Identifier: MIT
/*
 * inspect.c - `ukprobe list-symbols` and `ukprobe check`: symbols and
 * definitions checked against the files, nothing run.
 */
#include <Zydis/Zydis.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probe_events.h"
#include "fetch.h"
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

struct cobj {
	char *name;		/* as needed (soname) or the program's name */
	char *path;
	struct symfile *sf;
};

static struct {
	struct cobj v[256];
	int n;
	bool have_program;
} C;

static struct cobj *cobj_add(const char *name, const char *path)
{
	struct cobj *o;
	char err[512];

	for (int i = 0; i < C.n; i++)
		if (!strcmp(C.v[i].path, path))
			return &C.v[i];
	if (C.n == (int)(sizeof(C.v) / sizeof(C.v[0])))
		return NULL;
	o = &C.v[C.n];
	o->sf = symfile_open(path, err, sizeof(err));
	if (!o->sf)
		return NULL;
	o->name = strdup(name);
	o->path = strdup(path);
	C.n++;
	return o;
}

/* The program and the libraries it needs, breadth first (as ld.so). */
static int load_program(const char *prog)
{
	char *path = find_in_path(prog);

	if (!path) {
		tool_err("%s: not found", prog);
		return -1;
	}
	if (!cobj_add(prog, path)) {
		tool_err("%s: cannot read its symbols", path);
		free(path);
		return -1;
	}
	free(path);
	C.have_program = true;
	for (int i = 0; i < C.n; i++) {
		char **need = elf_needed(C.v[i].path);

		for (char **p = need; p && *p; p++) {
			char *lp = find_object_file(*p);

			if (lp)
				cobj_add(*p, lp);
			free(lp);
		}
		strv_free(need);
	}
	return 0;
}

static struct cobj *cobj_find(const char *name)
{
	char *path;
	struct cobj *o;

	for (int i = 0; i < C.n; i++)
		if (object_name_matches(name, C.v[i].path) || object_name_matches(name, C.v[i].name))
			return &C.v[i];
	path = find_object_file(name);
	if (!path)
		return NULL;
	o = cobj_add(name, path);
	free(path);
	return o;
}

static bool unresolved_bare;	/* a bare SYM with no program to look in */

static int check_resolve(const char *obj, const char *sym, unsigned long *addr)
{
	if (obj && *obj) {
		struct cobj *o = cobj_find(obj);
		const struct ksym *s = o ? symfile_lookup(o->sf, sym) : NULL;

		if (!s)
			return -ENOENT;
		*addr = (unsigned long)s->addr;
		return 0;
	}
	for (int i = 0; i < C.n; i++) {
		const struct ksym *s = symfile_lookup(C.v[i].sf, sym);

		if (s) {
			*addr = (unsigned long)s->addr;
			return 0;
		}
	}
	if (!C.have_program) {
		/* Nothing to look it up in: not an error. */
		unresolved_bare = true;
		*addr = 0;
		return 0;
	}
	return -ENOENT;
}

/* Where SYM is: the object and its symbol (NULL if not found). */
static struct cobj *locate(const struct pe_event *ev, const struct ksym **sp)
{
	*sp = NULL;
	if (ev->object[0]) {
		struct cobj *o = cobj_find(ev->object);

		if (o && ev->symbol[0])
			*sp = symfile_lookup(o->sf, ev->symbol);
		return o;
	}
	for (int i = 0; i < C.n; i++) {
		const struct ksym *s = symfile_lookup(C.v[i].sf, ev->symbol);

		if (s) {
			*sp = s;
			return &C.v[i];
		}
	}
	return NULL;
}

/*
 * Decode from the start of the function to off: 0 on a boundary,
 * -EILSEQ inside an instruction, other <0 if the bytes cannot be read.
 * *endbr set if the function starts with endbr64.
 */
static int insn_boundary(const struct cobj *o, const struct ksym *fn, uint64_t off, bool *endbr)
{
	ZydisDecoder dec;
	uint64_t foff, pos = 0;
	size_t len = (size_t)(off + 16);
	unsigned char *buf;
	int fd, ret = -EILSEQ;
	ssize_t got;

	*endbr = false;
	if (symfile_vaddr_to_off(o->sf, fn->addr, &foff))
		return -ENOENT;
	buf = malloc(len);
	fd = open(o->path, O_RDONLY | O_CLOEXEC);
	if (!buf || fd < 0) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	got = pread(fd, buf, len, (off_t)foff);
	close(fd);
	if (got < 4) {
		free(buf);
		return -EIO;
	}
	*endbr = buf[0] == 0xf3 && buf[1] == 0x0f && buf[2] == 0x1e && buf[3] == 0xfa;
	ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	while (pos < off) {
		ZydisDecodedInstruction insn;

		if (ZYAN_FAILED(ZydisDecoderDecodeInstruction(&dec, NULL, buf + pos,
							      (size_t)got - pos, &insn))) {
			ret = -EIO;
			break;
		}
		pos += insn.length;
	}
	if (pos == off)
		ret = 0;
	free(buf);
	return ret;
}

static void caret_error(const char *def, int pos, int code, const char *extra)
{
	struct pe_error e = { .code = code, .pos = pos, .reason = pe_error_reason(code) };

	pe_print_error(stderr, def, &e);
	if (extra)
		fprintf(stderr, "  %s\n", extra);
}

/* Position of "+offs" after the symbol in the definition, for carets. */
static int offs_pos(const char *def, const struct pe_event *ev)
{
	const char *p = def + ev->point_pos;
	const char *plus = strchr(p, '+');
	const char *sp = strpbrk(p, " \t");

	if (plus && (!sp || plus < sp))
		return (int)(plus - def) + 1;
	return ev->point_pos;
}

static int check_one(const char *def, const char *orig)
{
	struct pe_event ev;
	struct pe_error err;
	const struct ksym *s = NULL;
	struct cobj *o;
	char tbuf[128], *text = NULL;
	size_t textlen = 0;
	FILE *out;
	int e;

	unresolved_bare = false;
	memset(&err, 0, sizeof(err));
	e = pe_parse(def, &ev, &err);
	if (e) {
		pe_print_error(stderr, orig, &err);
		return 1;
	}
	def = orig;	/* carets: same positions, the user's text */
	/* The parsed form is printed only if everything checks out. */
	out = open_memstream(&text, &textlen);
	if (!out) {
		pe_event_free(&ev);
		return 1;
	}
	fprintf(out, "%s:%s/%s ", ev.kind == PE_RETURN ? "r" : "p", ev.group, ev.event);
	if (ev.kind == PE_RETURN && ev.maxactive)
		fprintf(out, "(maxactive %d) ", ev.maxactive);
	if (ev.addr_is_file_offset)
		fprintf(out, "%s:0x%lx", ev.object, ev.address);
	else if (!ev.symbol[0])
		fprintf(out, "0x%lx", ev.address);
	else
		fprintf(out, "%s%s%s+%lu", ev.object, ev.object[0] ? ":" : "", ev.symbol, ev.offset);
	for (int i = 0; i < ev.nargs; i++)
		fprintf(out, " %s=%s", ev.args[i].name, ev.args[i].text);
	fprintf(out, "\n  probe:    %s\n", ev.kind == PE_RETURN ? "return (kretprobe)" : "entry (kprobe)");

	if (ev.addr_is_file_offset) {
		uint64_t vaddr;
		const struct ksym *fn;
		bool endbr;

		o = cobj_find(ev.object);
		if (!o) {
			caret_error(def, ev.point_pos, PE_ERR_FILE_NOT_FOUND, NULL);
			goto bad;
		}
		if (symfile_off_to_vaddr(o->sf, ev.address, &vaddr) ||
		    !symfile_vaddr_exec(o->sf, vaddr)) {
			caret_error(def, ev.point_pos + (int)strlen(ev.object) + 1,
				    PE_ERR_BAD_FILE_OFFS, "not in an executable segment of the file");
			goto bad;
		}
		fn = symfile_containing(o->sf, vaddr);
		fprintf(out, "  location: %s file offset 0x%lx = address 0x%llx", o->path, ev.address,
		       (unsigned long long)vaddr);
		if (fn && ksym_is_func(fn)) {
			fprintf(out, " (%s+0x%llx)\n", ksym_name(o->sf, fn),
			       (unsigned long long)(vaddr - fn->addr));
			if (insn_boundary(o, fn, vaddr - fn->addr, &endbr) == -EILSEQ) {
				caret_error(def, ev.point_pos + (int)strlen(ev.object) + 1,
					    PE_ERR_BAD_INSN_BNDRY, NULL);
				goto bad;
			}
		} else {
			fprintf(out, " (no symbol: instruction boundary not checked)\n");
		}
	} else if (!ev.symbol[0]) {
		fprintf(out, "  location: absolute address 0x%lx (checked when placed)\n", ev.address);
	} else if (!ev.object[0] && !C.have_program) {
		fprintf(out, "  location: %s+0x%lx, not looked up (give the program: -x PROGRAM)\n",
		       ev.symbol, ev.offset);
	} else {
		bool endbr;
		uint64_t foff = 0;
		int b;

		o = locate(&ev, &s);
		if (!o || !s) {
			caret_error(def, ev.point_pos, PE_ERR_BAD_PROBE_ADDR, NULL);
			goto bad;
		}
		symfile_vaddr_to_off(o->sf, s->addr + ev.offset, &foff);
		fprintf(out, "  location: %s: %s at 0x%llx (file offset 0x%llx), %s, size %llu\n",
		       o->path, ksym_name(o->sf, s), (unsigned long long)(s->addr + ev.offset),
		       (unsigned long long)foff, ksym_is_func(s) ? "function" : "data",
		       (unsigned long long)s->size);
		if (!ksym_is_func(s) || !symfile_vaddr_exec(o->sf, s->addr)) {
			caret_error(def, ev.point_pos, PE_ERR_BAD_PROBE_ADDR, "not a function");
			goto bad;
		}
		if (s->sized && ev.offset >= s->size) {
			caret_error(def, offs_pos(def, &ev), PE_ERR_BAD_PROBE_ADDR,
				    "the offset is past the end of the function");
			goto bad;
		}
		b = insn_boundary(o, s, ev.offset, &endbr);
		if (b == -EILSEQ) {
			caret_error(def, offs_pos(def, &ev), PE_ERR_BAD_INSN_BNDRY, NULL);
			goto bad;
		}
		if (endbr && ev.offset == 0)
			fprintf(out, "  note:     starts with endbr64: the probe goes on the next "
			       "instruction (+0x4)\n");
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
bad:
	pe_event_free(&ev);
	fclose(out);
	free(text);
	return 1;
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
	if (exe && load_program(exe))
		return 2;
	pe_set_resolvers(check_resolve, NULL);
	for (int i = 0; i < d.n; i++)
		bad += check_one(d.v[i], d.orig[i]);
	return bad ? 1 : 0;
}
