// SPDX-License-Identifier: MIT
/*
 * syms.c - ELF symbol tables for ukprobe (see syms.h).
 *
 * Files are read with libelf (ELF_C_READ: read(2), no mapping of our own in
 * the traced process).  Symbol tables of loaded objects are cached for the
 * life of the process: an object unloaded and loaded again finds its table.
 */
#include <dirent.h>
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
 * A pointer of the DWARF exception-header encoding enc (DW_EH_PE_*) at *p,
 * whose own link-time address is at; datarel is relative to base (the start
 * of .eh_frame_hdr).  Only what .eh_frame_hdr uses: fixed sizes, absolute,
 * pc- or data-relative.  0, or -EINVAL.
 */
static int eh_pointer(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t at,
		      uint64_t base, uint64_t *out)
{
	size_t size;
	uint64_t v = 0;

	switch (enc & 0x0f) {
	case 0x00: case 0x04: case 0x0c: size = 8; break;	/* absptr, u/sdata8 */
	case 0x03: case 0x0b: size = 4; break;			/* u/sdata4 */
	case 0x02: case 0x0a: size = 2; break;			/* u/sdata2 */
	default: return -EINVAL;
	}
	if ((size_t)(end - *p) < size)
		return -EINVAL;
	memcpy(&v, *p, size);	/* little-endian, as the files we read */
	if ((enc & 0x08) && size < 8 && (v >> (size * 8 - 1)))
		v |= ~0ull << (size * 8);	/* signed */
	*p += size;
	switch (enc & 0x70) {
	case 0x00: break;			/* absolute */
	case 0x10: v += at; break;		/* pcrel */
	case 0x30: v += base; break;		/* datarel */
	default: return -EINVAL;
	}
	*out = v;
	return 0;
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

		if (eh_pointer(&q, end, p[1], hdr + 4, hdr, &fde_table) ||
		    eh_pointer(&q, end, enc_count, hdr + (uint64_t)(q - p), hdr, &count))
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

		if (eh_pointer(&q, end, enc_table, hdr + (uint64_t)(p - (const uint8_t *)d->d_buf),
			       hdr, &start) ||
		    eh_pointer(&q, end, enc_table, hdr + (uint64_t)(q - (const uint8_t *)d->d_buf),
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
				char dir[PATH_MAX];
				DIR *d;
				struct dirent *de;

				snprintf(dir, sizeof(dir), "%.*s", (int)(star - pat), pat);
				d = opendir(dir);
				if (!d)
					continue;
				while ((de = readdir(d))) {
					size_t l = strlen(de->d_name);
					char p[PATH_MAX];

					if (l < 5 || strcmp(de->d_name + l - 5, ".conf"))
						continue;
					if (snprintf(p, sizeof(p), "%s%s", dir, de->d_name) >=
					    (int)sizeof(p))
						continue;
					add_conf_dirs(p, dirs, n, depth + 1);
				}
				closedir(d);
			}
			continue;
		}
		char **nd = realloc(*dirs, (*n + 2) * sizeof(**dirs));
		if (!nd)
			break;
		*dirs = nd;
		(*dirs)[(*n)++] = strdup(s);
		(*dirs)[*n] = NULL;
	}
	fclose(f);
}

static char *search_dir(const char *dir, const char *name)
{
	char p[PATH_MAX];
	DIR *d;
	struct dirent *de;
	char *best = NULL;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	if (is_file(p))
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
		if (is_file(p) && (!best || strlen(p) < strlen(best))) {
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
	static const char *std_dirs[] = {
		"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64",
		"/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib", NULL,
	};
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
	for (size_t i = 0; i < nd && !r; i++)
		r = search_dir(dirs[i], name);
	strv_free(dirs);
	for (int i = 0; std_dirs[i] && !r; i++)
		r = search_dir(std_dirs[i], name);
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

int lobjs_symbolize(uintptr_t addr, bool with_off, char *out, size_t len)
{
	struct lobj *o;
	struct symfile *sf;
	const struct ksym *s = NULL;
	int err = -ENOENT;

	pthread_mutex_lock(&L.lock);
	o = containing_locked(addr);
	if (!o) {
		/* Maybe loaded since the last look. */
		refresh_locked();
		o = containing_locked(addr);
	}
	sf = o ? lobj_syms(o) : NULL;
	if (sf)
		s = symfile_containing(sf, addr - o->bias);
	if (s) {
		uint64_t off = addr - o->bias - s->addr;

		if (with_off)
			snprintf(out, len, "%s+0x%llx/0x%llx", ksym_name(sf, s),
				 (unsigned long long)off, (unsigned long long)s->size);
		else
			snprintf(out, len, "%s", ksym_name(sf, s));
		err = 0;
	} else if (o) {
		uint64_t foff;

		if (sf && symfile_vaddr_to_off(sf, addr - o->bias, &foff) == 0)
			snprintf(out, len, "%s+0x%llx", o->base, (unsigned long long)foff);
		else
			snprintf(out, len, "%s+0x%llx", o->base,
				 (unsigned long long)(addr - o->bias));
	} else {
		snprintf(out, len, "0x%lx", (unsigned long)addr);
	}
	pthread_mutex_unlock(&L.lock);
	return err;
}
