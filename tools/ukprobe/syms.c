// SPDX-License-Identifier: MIT
/*
 * syms.c - ELF symbol tables for ukprobe (see syms.h).
 *
 * Files are read with libelf (ELF_C_READ: read(2), no mapping of our own in
 * the traced process).  Symbol tables of loaded objects are cached for the
 * life of the process: an object unloaded and loaded again finds its table.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <fnmatch.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dwarf_eh.h"
#include "syms.h"

/* ------------------------------------------------------------------------ */
/* One ELF file                                                              */
/* ------------------------------------------------------------------------ */

struct names_buf {
	char *p;
	size_t len, cap;
};

static long names_add(struct names_buf *b, const char *s)
{
	size_t n = strlen(s) + 1;
	long off;

	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4096;
		char *p;

		while (cap < b->len + n)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p)
			return -1;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	off = (long)b->len;
	b->len += n;
	return off;
}

static int cmp_addr(const void *a, const void *b, void *names)
{
	const struct ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Sized before unsized, global before local, then by name. */
	if (x->sized != y->sized)
		return x->sized ? -1 : 1;
	if ((x->bind == STB_LOCAL) != (y->bind == STB_LOCAL))
		return x->bind == STB_LOCAL ? 1 : -1;
	/* Of aliases, the shortest name first (openat, not openat64). */
	{
		size_t lx = strlen((char *)names + x->name), ly = strlen((char *)names + y->name);

		if (lx != ly)
			return lx < ly ? -1 : 1;
	}
	return strcmp((char *)names + x->name, (char *)names + y->name);
}

struct by_name_ctx {
	const struct symfile *sf;
};

static int cmp_name(const void *a, const void *b, void *ctx)
{
	const struct symfile *sf = ((struct by_name_ctx *)ctx)->sf;
	const struct ksym *x = &sf->syms[*(const uint32_t *)a];
	const struct ksym *y = &sf->syms[*(const uint32_t *)b];

	return strcmp(sf->names + x->name, sf->names + y->name);
}

static bool want_sym(const GElf_Sym *s, const char *name)
{
	int type = GELF_ST_TYPE(s->st_info);

	if (!name || !*name || s->st_shndx == SHN_UNDEF || s->st_shndx == SHN_ABS)
		return false;
	if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_OBJECT &&
	    type != STT_NOTYPE && type != STT_TLS)
		return false;
	if (type == STT_TLS)
		return false;
	/* Local labels of assembly files ($x, .L...). */
	if (name[0] == '$' || (name[0] == '.' && name[1] == 'L'))
		return false;
	return true;
}

/*
 * The functions of the unwind tables: .eh_frame_hdr's binary-search table
 * (version 1) lists the start of every function that has an FDE, sorted.
 * Stripped files keep it: it is how their code can be decoded from a
 * function's start.
 */
static void read_cfi_starts(Elf *elf, struct symfile *sf, const GElf_Phdr *ph)
{
	Elf_Data *d = elf_getdata_rawchunk(elf, (int64_t)ph->p_offset, ph->p_filesz, ELF_T_BYTE);
	const uint8_t *p, *end;
	uint64_t fde_table, count, hdr = ph->p_vaddr;
	uint8_t enc_count, enc_table;

	if (!d || !d->d_buf || d->d_size < 4)
		return;
	p = d->d_buf;
	end = p + d->d_size;
	if (p[0] != 1 || p[1] == 0xff || p[2] == 0xff || p[3] == 0xff)
		return;
	enc_count = p[2];
	enc_table = p[3];
	{
		const uint8_t *q = p + 4;

		if (dwarf_eh_pointer(&q, end, p[1], hdr + 4, hdr, &fde_table) ||
		    dwarf_eh_pointer(&q, end, enc_count, hdr + (uint64_t)(q - p), hdr, &count))
			return;
		p = q;
	}
	if (!count || count > (uint64_t)(end - p) / 4)
		return;
	sf->cfi_starts = malloc(count * sizeof(*sf->cfi_starts));
	if (!sf->cfi_starts)
		return;
	for (uint64_t i = 0; i < count; i++) {
		uint64_t start, fde;
		const uint8_t *q = p;

		if (dwarf_eh_pointer(&q, end, enc_table, hdr + (uint64_t)(p - (const uint8_t *)d->d_buf),
			       hdr, &start) ||
		    dwarf_eh_pointer(&q, end, enc_table, hdr + (uint64_t)(q - (const uint8_t *)d->d_buf),
			       hdr, &fde))
			break;
		p = q;
		if (sf->ncfi && start < sf->cfi_starts[sf->ncfi - 1])
			break;	/* not sorted: not a table to search */
		sf->cfi_starts[sf->ncfi++] = start;
	}
}

struct symfile *symfile_open(const char *path, char *err, size_t errlen)
{
	struct symfile *sf = NULL;
	struct names_buf nb = { 0 };
	Elf *elf = NULL;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	size_t cap = 0, phnum = 0;
	int fd;

	if (err && errlen)
		err[0] = '\0';
	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (err)
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		if (err)
			snprintf(err, errlen, "%s: not an ELF file", path);
		goto fail;
	}
	sf = calloc(1, sizeof(*sf));
	if (!sf)
		goto nomem;
	sf->path = strdup(path);
	sf->etype = eh.e_type;
	if (!sf->path)
		goto nomem;
	if (names_add(&nb, "") < 0)
		goto nomem;

	if (elf_getphdrnum(elf, &phnum) == 0 && phnum) {
		sf->loads = calloc(phnum, sizeof(*sf->loads));
		if (!sf->loads)
			goto nomem;
		for (size_t i = 0; i < phnum; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(elf, (int)i, &ph))
				continue;
			if (ph.p_type == PT_GNU_EH_FRAME && !sf->ncfi)
				read_cfi_starts(elf, sf, &ph);
			if (ph.p_type != PT_LOAD)
				continue;
			sf->loads[sf->nloads++] = (struct load_seg){
				ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz, ph.p_flags };
		}
	}

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t n;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_PROGBITS && (sh.sh_flags & SHF_EXECINSTR) && sh.sh_size) {
			struct code_range *x = realloc(sf->xsecs,
						       (size_t)(sf->nxsecs + 1) * sizeof(*x));

			if (!x)
				goto nomem;
			sf->xsecs = x;
			x[sf->nxsecs++] = (struct code_range){ sh.sh_addr, sh.sh_size };
		}
		if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM)
			continue;
		if (sh.sh_type == SHT_SYMTAB)
			sf->has_symtab = true;
		d = elf_getdata(scn, NULL);
		if (!d || !sh.sh_entsize)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 1; i < n; i++) {
			GElf_Sym s;
			const char *name;
			long off;

			if (!gelf_getsym(d, (int)i, &s))
				continue;
			name = elf_strptr(elf, sh.sh_link, s.st_name);
			if (!want_sym(&s, name))
				continue;
			if (sf->nsyms == cap) {
				struct ksym *p;

				cap = cap ? cap * 2 : 1024;
				p = realloc(sf->syms, cap * sizeof(*p));
				if (!p)
					goto nomem;
				sf->syms = p;
			}
			/* Drop the version of versioned names in .symtab. */
			off = names_add(&nb, name);
			if (off < 0)
				goto nomem;
			{
				char *at = strchr(nb.p + off, '@');

				if (at && at != nb.p + off)
					*at = '\0';
			}
			sf->syms[sf->nsyms++] = (struct ksym){
				.addr = s.st_value, .size = s.st_size, .name = (uint32_t)off,
				.type = GELF_ST_TYPE(s.st_info), .bind = GELF_ST_BIND(s.st_info),
				.sized = s.st_size != 0, .dynamic = sh.sh_type == SHT_DYNSYM,
			};
		}
	}
	sf->names = nb.p;
	sf->names_len = nb.len;
	nb.p = NULL;

	if (sf->nsyms) {
		size_t j = 0;

		qsort_r(sf->syms, sf->nsyms, sizeof(*sf->syms), cmp_addr, sf->names);
		/* Merge duplicates (the same symbol in .symtab and .dynsym). */
		for (size_t i = 0; i < sf->nsyms; i++) {
			if (j && sf->syms[j - 1].addr == sf->syms[i].addr &&
			    !strcmp(sf->names + sf->syms[j - 1].name, sf->names + sf->syms[i].name)) {
				sf->syms[j - 1].dynamic |= sf->syms[i].dynamic;
				continue;
			}
			sf->syms[j++] = sf->syms[i];
		}
		sf->nsyms = j;
		/* Unsized symbols extend to the next address. */
		for (size_t i = 0; i < sf->nsyms; i++) {
			if (sf->syms[i].size)
				continue;
			for (size_t k = i + 1; k < sf->nsyms; k++) {
				if (sf->syms[k].addr > sf->syms[i].addr) {
					sf->syms[i].size = sf->syms[k].addr - sf->syms[i].addr;
					break;
				}
			}
		}
		sf->by_name = malloc(sf->nsyms * sizeof(*sf->by_name));
		if (!sf->by_name)
			goto nomem;
		for (size_t i = 0; i < sf->nsyms; i++)
			sf->by_name[i] = (uint32_t)i;
		struct by_name_ctx ctx = { sf };
		qsort_r(sf->by_name, sf->nsyms, sizeof(*sf->by_name), cmp_name, &ctx);
	}
	elf_end(elf);
	close(fd);
	return sf;

nomem:
	if (err)
		snprintf(err, errlen, "%s: out of memory", path);
fail:
	free(nb.p);
	if (elf)
		elf_end(elf);
	close(fd);
	symfile_close(sf);
	return NULL;
}

void symfile_close(struct symfile *sf)
{
	if (!sf)
		return;
	free(sf->path);
	free(sf->syms);
	free(sf->by_name);
	free(sf->names);
	free(sf->loads);
	free(sf->cfi_starts);
	free(sf->xsecs);
	free(sf);
}

static int sym_rank(const struct ksym *s)
{
	int r = 0;

	if (s->bind != STB_LOCAL)
		r += 4;
	if (s->type == STT_FUNC || s->type == STT_GNU_IFUNC)
		r += 2;
	if (s->sized)
		r += 1;
	return r;
}

const struct ksym *symfile_lookup(const struct symfile *sf, const char *name)
{
	size_t lo = 0, hi = sf->nsyms;
	const struct ksym *best = NULL;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (strcmp(sf->names + sf->syms[sf->by_name[mid]].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < sf->nsyms; lo++) {
		const struct ksym *s = &sf->syms[sf->by_name[lo]];

		if (strcmp(sf->names + s->name, name))
			break;
		if (!best || sym_rank(s) > sym_rank(best))
			best = s;
	}
	return best;
}

/* How many symbols start at or below vaddr (syms is sorted by address). */
static size_t syms_at_or_below(const struct symfile *sf, uint64_t vaddr)
{
	size_t lo = 0, hi = sf->nsyms;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (sf->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct ksym *symfile_containing(const struct symfile *sf, uint64_t vaddr)
{
	size_t lo = syms_at_or_below(sf, vaddr);
	const struct ksym *best = NULL;
	/* Walk back over symbols at lower addresses that still cover vaddr
	 * (nested or aliased); prefer functions, then the closest start. */
	for (size_t i = lo, steps = 0; i-- > 0 && steps < 64; steps++) {
		const struct ksym *s = &sf->syms[i];

		if (vaddr - s->addr >= (s->size ? s->size : 1))
			continue;
		/* Functions first; among aliases, the first in sort order. */
		if (!best || (ksym_is_func(s) && !ksym_is_func(best)) ||
		    (s->addr == best->addr && ksym_is_func(s) == ksym_is_func(best)))
			best = s;
		if (ksym_is_func(best) && s->addr != best->addr)
			break;
	}
	return best;
}

int symfile_off_to_vaddr(const struct symfile *sf, uint64_t off, uint64_t *vaddr)
{
	for (int i = 0; i < sf->nloads; i++) {
		const struct load_seg *l = &sf->loads[i];

		if (off >= l->offset && off < l->offset + l->filesz) {
			*vaddr = l->vaddr + (off - l->offset);
			return 0;
		}
	}
	return -ENOENT;
}

int symfile_vaddr_to_off(const struct symfile *sf, uint64_t vaddr, uint64_t *off)
{
	for (int i = 0; i < sf->nloads; i++) {
		const struct load_seg *l = &sf->loads[i];

		if (vaddr >= l->vaddr && vaddr < l->vaddr + l->filesz) {
			*off = l->offset + (vaddr - l->vaddr);
			return 0;
		}
	}
	return -ENOENT;
}

bool symfile_vaddr_exec(const struct symfile *sf, uint64_t vaddr)
{
	for (int i = 0; i < sf->nloads; i++) {
		const struct load_seg *l = &sf->loads[i];

		if (vaddr >= l->vaddr && vaddr < l->vaddr + l->memsz)
			return l->flags & PF_X;
	}
	return false;
}

/* Index of the last cfi_starts entry <= vaddr, or -1. */
static long cfi_at_or_below(const struct symfile *sf, uint64_t vaddr)
{
	size_t lo = 0, hi = sf->ncfi;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (sf->cfi_starts[mid] <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}

/* The last function symbol at or below vaddr in an executable segment. */
static const struct ksym *func_at_or_below(const struct symfile *sf, uint64_t vaddr)
{
	size_t lo = syms_at_or_below(sf, vaddr);

	while (lo-- > 0) {
		const struct ksym *s = &sf->syms[lo];

		if (ksym_is_func(s) && symfile_vaddr_exec(sf, s->addr))
			return s;
	}
	return NULL;
}

int symfile_code_start(const struct symfile *sf, uint64_t vaddr, uint64_t *start,
		       const char **from)
{
	const struct ksym *s = func_at_or_below(sf, vaddr);
	long c = cfi_at_or_below(sf, vaddr);
	bool found = false;
	uint64_t best = 0;
	const char *what = NULL;

	/* Sections first: a nearer function start wins. */
	for (int i = 0; i < sf->nxsecs; i++) {
		const struct code_range *x = &sf->xsecs[i];

		if (vaddr >= x->addr && vaddr < x->addr + x->size && (!found || x->addr > best)) {
			best = x->addr;
			what = "section";
			found = true;
		}
	}
	if (c >= 0 && (!found || sf->cfi_starts[c] >= best)) {
		best = sf->cfi_starts[c];
		what = "unwind table";
		found = true;
	}
	if (s && (!found || s->addr >= best)) {
		best = s->addr;
		what = "symbol";
		found = true;
	}
	if (!found)
		return -ENOENT;
	*start = best;
	if (from)
		*from = what;
	return 0;
}

bool symfile_func_start(const struct symfile *sf, uint64_t vaddr, bool *known)
{
	const struct ksym *s = func_at_or_below(sf, vaddr);
	long c = cfi_at_or_below(sf, vaddr);

	*known = (s && vaddr - s->addr < (s->size ? s->size : 1)) || c >= 0;
	return (s && s->addr == vaddr) || (c >= 0 && sf->cfi_starts[c] == vaddr);
}

long symfile_read(const struct symfile *sf, uint64_t vaddr, void *buf, size_t len)
{
	for (int i = 0; i < sf->nloads; i++) {
		const struct load_seg *l = &sf->loads[i];
		ssize_t got;
		int fd;

		if (vaddr < l->vaddr || vaddr >= l->vaddr + l->filesz)
			continue;
		if (len > l->vaddr + l->filesz - vaddr)
			len = (size_t)(l->vaddr + l->filesz - vaddr);
		fd = open(sf->path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -EIO;
		got = pread(fd, buf, len, (off_t)(l->offset + (vaddr - l->vaddr)));
		close(fd);
		return got < 0 ? -EIO : (long)got;
	}
	return -ENOENT;
}

/* ------------------------------------------------------------------------ */
/* C++ names                                                                 */
/* ------------------------------------------------------------------------ */

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);
static cxa_demangle_fn demangler;
static bool demangler_tried, demangle_may_load;

void sym_demangle_may_load(bool yes)
{
	demangle_may_load = yes;
}

/* libstdc++'s __cxa_demangle(): the process's own if it has one (a C++
 * program, or one that loaded a C++ library); the command may load it. */
static cxa_demangle_fn get_demangler(void)
{
	if (!demangler && (!demangler_tried || demangle_may_load)) {
		demangler_tried = true;
		demangler = (cxa_demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
		if (!demangler && demangle_may_load) {
			void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);

			if (h)
				demangler = (cxa_demangle_fn)dlsym(h, "__cxa_demangle");
			demangle_may_load = false;
		}
	}
	return demangler;
}

const char *sym_demangle(const char *name, char *buf, size_t len)
{
	cxa_demangle_fn f;
	char *d;
	int st = -1;

	if (name[0] != '_' || name[1] != 'Z' || !(f = get_demangler()))
		return name;
	d = f(name, NULL, NULL, &st);
	if (!d || st)
		return name;
	snprintf(buf, len, "%s", d);
	free(d);
	return buf;
}

/* "ns::C::f(int) const" -> "ns::C::f": up to the parameters' '(' (not one
 * of "operator()" or inside a template's <...>). */
static void strip_params(char *s)
{
	int depth = 0;

	for (char *p = s; *p; p++) {
		if (*p == '<')
			depth++;
		else if (*p == '>' && depth)
			depth--;
		else if (*p == '(' && !depth &&
			 !(p - s >= 8 && !strncmp(p - 8, "operator", 8))) {
			*p = '\0';
			return;
		}
	}
}

/*
 * Is name the mangled name of a function called qual ("ns::Parser::parse",
 * identifiers joined by "::"), whatever its parameters and qualifiers?
 * The Itanium ABI's nested name, _ZN [rVKRO]* <len><id>... E <params>: no
 * demangler needed (a C program, or a C++ one whose libstdc++ is not
 * loaded yet, has none).  Templates and operators need the demangler.
 */
static bool mangled_is(const char *qual, const char *name)
{
	const char *q = qual, *n = name;

	if (strncmp(n, "_ZN", 3))
		return false;
	n += 3;
	while (*n && strchr("rVKRO", *n))
		n++;
	while (*q) {
		size_t len = strcspn(q, ":");
		char num[16];
		int k;

		if (!len)
			return false;
		k = snprintf(num, sizeof(num), "%zu", len);
		if (strncmp(n, num, (size_t)k) || strncmp(n + k, q, len))
			return false;
		n += (size_t)k + len;
		q += len;
		if (*q) {
			if (q[0] != ':' || q[1] != ':')
				return false;
			q += 2;
		}
	}
	return *n == 'E';
}

bool sym_name_matches(const char *pattern, const char *name)
{
	bool glob = strpbrk(pattern, "*?[") != NULL;
	char buf[4096];
	const char *d;

	if (glob ? !fnmatch(pattern, name, 0) : !strcmp(pattern, name))
		return true;
	if (!glob && strstr(pattern, "::") && !strpbrk(pattern, "<>() ~") &&
	    mangled_is(pattern, name))
		return true;
	if (name[0] != '_' || name[1] != 'Z')
		return false;
	d = sym_demangle(name, buf, sizeof(buf));
	if (d != buf)
		return false;
	strip_params(buf);
	return glob ? !fnmatch(pattern, buf, 0) : !strcmp(pattern, buf);
}

/* ------------------------------------------------------------------------ */
/* Names of objects                                                          */
/* ------------------------------------------------------------------------ */

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* "libz.so" names "libz.so.1" and "libz.so.1.2.13". */
static bool version_suffix_match(const char *want, const char *base)
{
	size_t n = strlen(want);

	if (strncmp(want, base, n) || base[n] != '.')
		return false;
	for (const char *p = base + n; *p; p++)
		if (*p != '.' && (*p < '0' || *p > '9'))
			return false;
	return true;
}

bool object_name_matches(const char *want, const char *path)
{
	const char *base;

	if (!want || !*want || !path || !*path)
		return false;
	if (!strcmp(want, path))
		return true;
	if (strchr(want, '/')) {
		char a[PATH_MAX], b[PATH_MAX];

		return realpath(want, a) && realpath(path, b) && !strcmp(a, b);
	}
	base = base_name(path);
	return !strcmp(want, base) || version_suffix_match(want, base);
}

static bool is_file(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

char *find_in_path(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	if (strchr(prog, '/'))
		return is_file(prog) ? realpath(prog, NULL) : NULL;
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *e = strchr(path, ':');
		size_t n = e ? (size_t)(e - path) : strlen(path);

		if (n && n < sizeof(buf) - 2 - strlen(prog)) {
			snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path, prog);
			if (is_file(buf) && access(buf, X_OK) == 0)
				return strdup(buf);
		}
		path += n;
		if (*path == ':')
			path++;
	}
	return NULL;
}

struct find_loaded {
	const char *want;
	char *found;
};

static int find_loaded_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct find_loaded *f = arg;

	(void)size;
	if (info->dlpi_name && info->dlpi_name[0] &&
	    object_name_matches(f->want, info->dlpi_name)) {
		f->found = realpath(info->dlpi_name, NULL);
		return f->found != NULL;
	}
	return 0;
}

/* A copy of s at the end of the NULL-terminated vector *v of *n strings. */
static bool strv_push(char ***v, size_t *n, const char *s)
{
	char *d = strdup(s);
	char **nv = d ? realloc(*v, (*n + 2) * sizeof(**v)) : NULL;

	if (!nv) {
		free(d);
		return false;
	}
	*v = nv;
	(*v)[(*n)++] = d;
	(*v)[*n] = NULL;
	return true;
}

/* Directories of /etc/ld.so.conf and the files it includes (one level). */
static void add_conf_dirs(const char *conf, char ***dirs, size_t *n, int depth)
{
	FILE *f = fopen(conf, "re");
	char line[PATH_MAX];

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *s = line, *e;

		s[strcspn(s, "#\n")] = '\0';
		while (*s == ' ' || *s == '\t')
			s++;
		e = s + strlen(s);
		while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
			*--e = '\0';
		if (!*s)
			continue;
		if (!strncmp(s, "include", 7) && (s[7] == ' ' || s[7] == '\t')) {
			char *pat = s + 8;

			while (*pat == ' ')
				pat++;
			if (depth > 0)
				continue;
			/* Only the usual "dir/\*.conf" form. */
			char *star = strstr(pat, "*.conf");
			if (star) {
				/* In name order, as ldconfig's glob() reads them. */
				char dir[PATH_MAX];
				struct dirent **de = NULL;
				int nde;

				snprintf(dir, sizeof(dir), "%.*s", (int)(star - pat), pat);
				nde = scandir(dir, &de, NULL, alphasort);
				for (int i = 0; i < nde; i++) {
					size_t l = strlen(de[i]->d_name);
					char p[PATH_MAX];

					if (l >= 5 && !strcmp(de[i]->d_name + l - 5, ".conf") &&
					    snprintf(p, sizeof(p), "%s%s", dir, de[i]->d_name) <
					    (int)sizeof(p))
						add_conf_dirs(p, dirs, n, depth + 1);
					free(de[i]);
				}
				free(de);
			}
			continue;
		}
		if (!strv_push(dirs, n, s))
			break;
	}
	fclose(f);
}

/*
 * The run-time linker's own directories, searched after its cache: asked
 * of it (RTLD_DI_SERINFO, for libc's link map: no object's RUNPATH), so
 * they are the multiarch ones of this system (/lib/x86_64-linux-gnu,
 * /lib/aarch64-linux-gnu, ...) without naming any here.  Its list also
 * holds LD_LIBRARY_PATH's, searched already: they find nothing twice.
 */
static void add_loader_dirs(char ***dirs, size_t *n)
{
	static const char *const fallback[] = { "/lib", "/usr/lib" };
	Dl_serinfo size, *si = NULL;
	Dl_info libc;
	void *h = NULL;
	size_t cnt = 0;

	if (dladdr((void *)dlinfo, &libc) && libc.dli_fname)
		h = dlopen(libc.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
	if (h && dlinfo(h, RTLD_DI_SERINFOSIZE, &size) == 0 && (si = malloc(size.dls_size))) {
		*si = size;
		if (dlinfo(h, RTLD_DI_SERINFO, si) == 0)
			cnt = si->dls_cnt;
	}
	if (h)
		dlclose(h);
	for (size_t i = 0; i < (cnt ? cnt : sizeof(fallback) / sizeof(*fallback)); i++) {
		if (!strv_push(dirs, n, cnt ? si->dls_serpath[i].dls_name : fallback[i]))
			break;
	}
	free(si);
}

/* Is the file an ELF object of the machine and class ukprobe runs on?  A
 * library of another one (/usr/lib32's) is not what a program of ours
 * would load, as the run-time linker skips it. */
static bool same_machine(const char *path)
{
	static unsigned char self[20];
	static bool have;
	unsigned char h[20];
	int fd;
	bool ok;

	if (!have) {
		fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
		have = fd >= 0 && read(fd, self, sizeof(self)) == (ssize_t)sizeof(self);
		if (fd >= 0)
			close(fd);
		if (!have)
			return true;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ok = read(fd, h, sizeof(h)) == (ssize_t)sizeof(h);
	close(fd);
	/* EI_CLASS, EI_DATA, e_machine */
	return ok && h[4] == self[4] && h[5] == self[5] && h[18] == self[18] && h[19] == self[19];
}

static char *search_dir(const char *dir, const char *name)
{
	char p[PATH_MAX];
	DIR *d;
	struct dirent *de;
	char *best = NULL;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	if (is_file(p) && same_machine(p))
		return realpath(p, NULL);
	/* "libz.so" for "libz.so.1" when the unversioned link is absent. */
	d = opendir(dir);
	if (!d)
		return NULL;
	while ((de = readdir(d))) {
		if (!version_suffix_match(name, de->d_name))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		/* The shortest name: the soname, not the full version. */
		if (is_file(p) && same_machine(p) && (!best || strlen(p) < strlen(best))) {
			free(best);
			best = strdup(p);
		}
	}
	closedir(d);
	if (best) {
		char *r = realpath(best, NULL);

		free(best);
		return r;
	}
	return NULL;
}

char *find_object_file(const char *name)
{
	struct find_loaded f = { name, NULL };
	char **dirs = NULL;
	size_t nd = 0;
	char *r = NULL;
	const char *llp;

	if (!name || !*name)
		return NULL;
	if (strchr(name, '/'))
		return is_file(name) ? realpath(name, NULL) : NULL;
	dl_iterate_phdr(find_loaded_cb, &f);
	if (f.found)
		return f.found;
	llp = getenv("LD_LIBRARY_PATH");
	if (llp) {
		char *copy = strdup(llp), *save = NULL;

		for (char *t = copy ? strtok_r(copy, ":", &save) : NULL; t && !r;
		     t = strtok_r(NULL, ":", &save))
			r = search_dir(t, name);
		free(copy);
		if (r)
			return r;
	}
	add_conf_dirs("/etc/ld.so.conf", &dirs, &nd, 0);
	add_loader_dirs(&dirs, &nd);
	for (size_t i = 0; i < nd && !r; i++)
		r = search_dir(dirs[i], name);
	strv_free(dirs);
	if (!r)
		r = find_in_path(name);
	return r;
}

void strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

unsigned long elf_tls_size(const char *path)
{
	unsigned long sz = 0;
	size_t phnum = 0;
	Elf *elf;
	int fd;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && elf_getphdrnum(elf, &phnum) == 0) {
		for (size_t i = 0; i < phnum; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_TLS)
				sz += ph.p_memsz + ph.p_align;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return sz;
}

char *elf_interp(const char *path)
{
	char *interp = NULL;
	size_t phnum = 0;
	Elf *elf;
	int fd;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF && elf_getphdrnum(elf, &phnum) == 0) {
		for (size_t i = 0; i < phnum && !interp; i++) {
			GElf_Phdr ph;
			Elf_Data *d;

			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_INTERP)
				continue;
			d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_BYTE);
			if (d && d->d_buf && d->d_size)
				interp = strndup(d->d_buf, d->d_size);
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return interp;
}

char **elf_needed(const char *path)
{
	Elf *elf;
	Elf_Scn *scn = NULL;
	char **v = NULL;
	size_t n = 0;
	int fd;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		close(fd);
		return NULL;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;
			const char *s;
			char **nv;

			if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag != DT_NEEDED)
				continue;
			s = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
			if (!s)
				continue;
			nv = realloc(v, (n + 2) * sizeof(*v));
			if (!nv)
				break;
			v = nv;
			v[n++] = strdup(s);
			v[n] = NULL;
		}
	}
	elf_end(elf);
	close(fd);
	if (!v)
		v = calloc(1, sizeof(*v));
	return v;
}

/* ------------------------------------------------------------------------ */
/* The objects loaded in this process                                       */
/* ------------------------------------------------------------------------ */

/* Symbol tables by path, kept for the life of the process. */
struct sf_cache {
	struct sf_cache *next;
	char *path;
	struct symfile *sf;
};

static struct {
	pthread_mutex_t lock;
	struct lobj *objs;
	int n;
	unsigned long long adds, subs;
	bool valid;
	struct sf_cache *cache;
} L = { .lock = PTHREAD_MUTEX_INITIALIZER };

static struct symfile *cached_symfile(const char *path)
{
	struct sf_cache *c;

	for (c = L.cache; c; c = c->next)
		if (!strcmp(c->path, path))
			return c->sf;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->path = strdup(path);
	c->sf = symfile_open(path, NULL, 0);
	c->next = L.cache;
	L.cache = c;
	return c->sf;
}

struct counters {
	unsigned long long adds, subs;
};

static int counters_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct counters *c = arg;

	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		c->adds = info->dlpi_adds;
		c->subs = info->dlpi_subs;
	}
	return 1;
}

struct scan {
	struct lobj *objs;
	int n, cap;
};

static int scan_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct scan *s = arg;
	struct lobj o = { 0 };
	char buf[PATH_MAX];

	(void)size;
	if (info->dlpi_name && info->dlpi_name[0]) {
		o.dlname = strdup(info->dlpi_name);
		if (!strncmp(info->dlpi_name, "linux-vdso", 10) ||
		    !strncmp(info->dlpi_name, "linux-gate", 10))
			o.path = strdup(info->dlpi_name);
		else
			o.path = realpath(info->dlpi_name, NULL);
		if (!o.path)
			o.path = strdup(info->dlpi_name);
	} else if (s->n == 0) {
		ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);

		if (n <= 0)
			return 0;
		buf[n] = '\0';
		o.path = strdup(buf);
		o.dlname = strdup("");
		o.is_main = true;
	} else {
		return 0;	/* the vDSO on some systems: no name */
	}
	if (!o.path || !o.dlname) {
		free(o.path);
		free(o.dlname);
		return 0;
	}
	o.base = base_name(o.path);
	o.bias = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum && o.nranges < 16; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		o.ranges[o.nranges].start = info->dlpi_addr + ph->p_vaddr;
		o.ranges[o.nranges].end = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
		o.nranges++;
	}
	if (s->n == s->cap) {
		int cap = s->cap ? s->cap * 2 : 32;
		struct lobj *p = realloc(s->objs, (size_t)cap * sizeof(*p));

		if (!p) {
			free(o.path);
			free(o.dlname);
			return 0;
		}
		s->objs = p;
		s->cap = cap;
	}
	s->objs[s->n++] = o;
	return 0;
}

static void refresh_locked(void)
{
	struct counters c = { 0, 0 };
	struct scan s = { 0 };

	dl_iterate_phdr(counters_cb, &c);
	if (L.valid && c.adds == L.adds && c.subs == L.subs)
		return;
	dl_iterate_phdr(scan_cb, &s);
	for (int i = 0; i < L.n; i++) {
		free(L.objs[i].path);
		free(L.objs[i].dlname);
	}
	free(L.objs);
	L.objs = s.objs;
	L.n = s.n;
	L.adds = c.adds;
	L.subs = c.subs;
	L.valid = true;
}

void lobjs_lock(void)
{
	pthread_mutex_lock(&L.lock);
}

void lobjs_unlock(void)
{
	pthread_mutex_unlock(&L.lock);
}

void lobjs_refresh(void)
{
	pthread_mutex_lock(&L.lock);
	refresh_locked();
	pthread_mutex_unlock(&L.lock);
}

static struct symfile *lobj_syms(struct lobj *o)
{
	if (!o->sf_tried) {
		o->sf_tried = true;
		if (o->path[0] == '/')
			o->sf = cached_symfile(o->path);
	}
	return o->sf;
}

void lobjs_foreach(void (*fn)(struct lobj *o, void *arg), void *arg)
{
	pthread_mutex_lock(&L.lock);
	refresh_locked();
	for (int i = 0; i < L.n; i++)
		fn(&L.objs[i], arg);
	pthread_mutex_unlock(&L.lock);
}

static struct lobj *find_obj_locked(const char *name)
{
	for (int i = 0; i < L.n; i++) {
		struct lobj *o = &L.objs[i];

		if (object_name_matches(name, o->path) ||
		    (o->dlname[0] && object_name_matches(name, o->dlname)))
			return o;
	}
	return NULL;
}

bool lobjs_loaded(const char *name, char *path, size_t pathlen)
{
	struct lobj *o;

	pthread_mutex_lock(&L.lock);
	refresh_locked();
	o = find_obj_locked(name);
	if (o && path && pathlen)
		snprintf(path, pathlen, "%s", o->path);
	pthread_mutex_unlock(&L.lock);
	return o != NULL;
}

bool lobjs_addr_in(const char *dlname, uintptr_t addr)
{
	bool in = false;

	pthread_mutex_lock(&L.lock);
	refresh_locked();
	for (int i = 0; i < L.n && !in; i++) {
		struct lobj *o = &L.objs[i];

		if (strcmp(o->dlname, dlname ? dlname : ""))
			continue;
		for (int r = 0; r < o->nranges; r++)
			if (addr >= o->ranges[r].start && addr < o->ranges[r].end)
				in = true;
	}
	pthread_mutex_unlock(&L.lock);
	return in;
}

int lobjs_offset_addr(const char *name, uint64_t off, uintptr_t *addr)
{
	struct lobj *o;
	struct symfile *sf;
	uint64_t vaddr;
	int err = -ENOENT;

	pthread_mutex_lock(&L.lock);
	refresh_locked();
	o = find_obj_locked(name);
	sf = o ? lobj_syms(o) : NULL;
	if (sf && symfile_off_to_vaddr(sf, off, &vaddr) == 0) {
		*addr = o->bias + vaddr;
		err = 0;
	}
	pthread_mutex_unlock(&L.lock);
	return err;
}

int lobjs_resolve(const char *obj, const char *sym, unsigned long *addr)
{
	int err = -ENOENT;

	pthread_mutex_lock(&L.lock);
	refresh_locked();
	for (int i = 0; i < L.n && err; i++) {
		struct lobj *o = &L.objs[i];
		const struct ksym *s;
		struct symfile *sf;

		if (obj && *obj && !object_name_matches(obj, o->path) &&
		    !(o->dlname[0] && object_name_matches(obj, o->dlname)))
			continue;
		sf = lobj_syms(o);
		if (!sf)
			continue;
		s = symfile_lookup(sf, sym);
		if (s) {
			*addr = o->bias + s->addr;
			err = 0;
		}
	}
	pthread_mutex_unlock(&L.lock);
	return err;
}

static struct lobj *containing_locked(uintptr_t addr)
{
	for (int i = 0; i < L.n; i++)
		for (int r = 0; r < L.objs[i].nranges; r++)
			if (addr >= L.objs[i].ranges[r].start && addr < L.objs[i].ranges[r].end)
				return &L.objs[i];
	return NULL;
}

int lobjs_symfile(const char *name, const char *sym, const struct symfile **sf,
		  uintptr_t *bias)
{
	int err = -ENOENT;

	pthread_mutex_lock(&L.lock);
	refresh_locked();
	for (int i = 0; i < L.n && err; i++) {
		struct lobj *o = &L.objs[i];
		struct symfile *f;

		if (name && *name) {
			if (!object_name_matches(name, o->path) &&
			    !(o->dlname[0] && object_name_matches(name, o->dlname)))
				continue;
		}
		f = lobj_syms(o);
		if (!f) {
			if (name && *name)
				break;	/* the first object of that name */
			continue;
		}
		if ((!name || !*name) && (!sym || !symfile_lookup(f, sym)))
			continue;
		*sf = f;
		*bias = o->bias;
		err = 0;
	}
	pthread_mutex_unlock(&L.lock);
	return err;
}

int lobjs_symfile_at(uintptr_t addr, const struct symfile **sf, uintptr_t *bias)
{
	struct lobj *o;
	int err = -ENOENT;

	pthread_mutex_lock(&L.lock);
	refresh_locked();
	o = containing_locked(addr);
	if (o && lobj_syms(o)) {
		*sf = o->sf;
		*bias = o->bias;
		err = 0;
	}
	pthread_mutex_unlock(&L.lock);
	return err;
}

/* The symbols of the file at path, read once and kept (for objects of
 * other processes: objmap.c).  Not thread-safe against lobjs_*: the command
 * uses one or the other from one thread. */
struct symfile *symfile_cached(const char *path)
{
	struct symfile *sf;

	pthread_mutex_lock(&L.lock);
	sf = cached_symfile(path);
	pthread_mutex_unlock(&L.lock);
	return sf;
}

int sym_describe(const struct symfile *sf, const char *objbase, uint64_t vaddr,
		 bool with_off, char *out, size_t len)
{
	const struct ksym *s = sf ? symfile_containing(sf, vaddr) : NULL;
	uint64_t foff;

	if (s) {
		uint64_t off = vaddr - s->addr;
		char dbuf[4096];
		const char *name = sym_demangle(ksym_name(sf, s), dbuf, sizeof(dbuf));

		if (with_off)
			snprintf(out, len, "%s+0x%llx/0x%llx", name,
				 (unsigned long long)off, (unsigned long long)s->size);
		else
			snprintf(out, len, "%s", name);
		return 0;
	}
	if (sf && symfile_vaddr_to_off(sf, vaddr, &foff) == 0)
		snprintf(out, len, "%s+0x%llx", objbase, (unsigned long long)foff);
	else
		snprintf(out, len, "%s+0x%llx", objbase, (unsigned long long)vaddr);
	return -ENOENT;
}

int lobjs_symbolize(uintptr_t addr, bool with_off, char *out, size_t len)
{
	struct lobj *o;
	int err = -ENOENT;

	pthread_mutex_lock(&L.lock);
	o = containing_locked(addr);
	if (!o) {
		/* Maybe loaded since the last look. */
		refresh_locked();
		o = containing_locked(addr);
	}
	if (o)
		err = sym_describe(lobj_syms(o), o->base, addr - o->bias, with_off, out, len);
	else
		snprintf(out, len, "0x%lx", (unsigned long)addr);
	pthread_mutex_unlock(&L.lock);
	return err;
}
