// SPDX-License-Identifier: MIT
/*
 * symbols.c - the user-space kallsyms: symbols of every loaded ELF object,
 * and the blacklist read from those objects.
 *
 * Two levels of cache, both behind one mutex:
 *
 *  - an "image" is one ELF file parsed with libelf: its symbols at their
 *    link-time addresses, sorted by name and by address.  Images are never
 *    freed: the names and object strings handed out in struct ukp_symbol
 *    stay valid for the life of the process (the registry may keep them for
 *    a [GONE] probe), and an object that is dlclose()d and dlopen()ed again
 *    finds its image already parsed.  Memory is bounded by the number of
 *    distinct files ever loaded.
 *
 *  - an "object" is one loaded instance of an image, as dl_iterate_phdr()
 *    reports it: load bias, PT_LOAD ranges (copied, since the program
 *    headers vanish with the object), and its blacklisted ranges.  Objects
 *    are rebuilt when dlpi_adds/dlpi_subs change.
 *
 * Files are read with ELF_C_READ (read(2), never mmap(2)): the process's
 * mappings are what we probe and list, we must not add our own.
 *
 * The vDSO has no file.  It is kept as an object without symbols, so that
 * ukp_symbol_containing() still names it, but nothing in it can be looked up
 * (its in-memory .dynsym is not read: probing the vDSO is not supported).
 *
 * Lock order: ukp_syms.lock, then the dynamic linker's locks (taken by
 * dl_iterate_phdr).  dlopen()/dlsym() take the loader lock that a
 * constructor runs under, and a constructor may register probes, so they
 * are only ever called with ukp_syms.lock released.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "arch.h"
#include "symbols.h"

#define UKP_BL_SECTION		"_ukprobe_blacklist"
#define UKP_MAIN_FILE		"/proc/self/exe"
/* Retries of a blacklist section whose pointers are not relocated yet. */
#define UKP_BL_MAX_TRIES	64

/* One symbol of an ELF file, at its link-time address. */
struct esym {
	uintptr_t value;
	size_t size;
	const char *name;	/* version suffix cut off */
	const char *version;	/* NULL when unversioned */
	unsigned char type;
	unsigned char bind;
	bool hidden;		/* non-default version ("@", not "@@") */
};

/* One ELF file's symbols.  Never freed: see the top of the file. */
struct image {
	struct image *next;
	char *key;		/* dlpi_name; "" for the main program */
	char *path;		/* full path shown and matched */
	char *real;		/* realpath() of the file, or NULL */
	const char *base;	/* basename, inside path */
	dev_t dev;
	ino_t ino;
	off_t fsize;
	struct timespec mtime;
	char *strs;		/* our copy of the string table */
	struct esym *syms;
	size_t nsyms;
	uint32_t *by_name;	/* indices into syms, sorted by name */
	uint32_t *by_addr;	/* sized functions, sorted by value */
	uintptr_t *max_end;	/* max end over by_addr[0..i] */
	size_t naddrs;
	bool has_bl;		/* a _ukprobe_blacklist section */
	uintptr_t bl_addr;	/* its sh_addr */
	size_t bl_size;
};

struct seg {
	uintptr_t start, end;	/* run-time addresses */
	bool exec;
};

struct bl_range {
	uintptr_t start, end;
	const char *name;	/* static, or owned by an image */
};

/* One loaded instance of an image. */
struct object {
	struct object *next;
	char *dlname;		/* dlpi_name, for dlopen() and identity */
	uintptr_t bias;
	const void *phdr;	/* identity only: never read outside the
				   dl_iterate_phdr() callback */
	struct seg *segs;
	unsigned int nsegs;
	struct image *img;
	bool is_main, is_self, is_libc;
	bool bl_pending;	/* blacklist not (fully) read yet */
	unsigned int bl_tries;
	struct bl_range *bl;
	size_t nbl;
};

static struct {
	pthread_mutex_t lock;
	bool ready;		/* objects scanned at least once */
	bool stale;		/* last scan incomplete: rescan next time */
	bool pending;		/* some object has bl_pending */
	bool elf_ok;
	unsigned long long adds, subs;
	struct object *objects;	/* in dl_iterate_phdr() order */
	struct image *images;
	struct bl_range *bl;	/* all objects' ranges, sorted by start */
	uintptr_t *bl_max_end;
	size_t nbl;
} ukp_syms = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

/* ------------------------------------------------------------------------ */
/* Images                                                                   */
/* ------------------------------------------------------------------------ */

static bool type_is_func(unsigned char type)
{
	return type == STT_FUNC || type == STT_GNU_IFUNC;
}

/* What a name lookup may return: defined code or data with an address. */
static bool sym_wanted(const GElf_Sym *s)
{
	unsigned char type = GELF_ST_TYPE(s->st_info);

	/* ABS values are not addresses in the object; COMMON has none yet. */
	if (s->st_shndx == SHN_UNDEF || s->st_shndx == SHN_ABS ||
	    s->st_shndx == SHN_COMMON || !s->st_name)
		return false;
	return type_is_func(type) || type == STT_OBJECT || type == STT_NOTYPE;
}

static int cmp_by_name(const void *a, const void *b, void *arg)
{
	const struct esym *syms = arg;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	int c = strcmp(syms[i].name, syms[j].name);

	return c ? c : (i > j) - (i < j);
}

static int cmp_by_addr(const void *a, const void *b, void *arg)
{
	const struct esym *syms = arg;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;

	if (syms[i].value != syms[j].value)
		return syms[i].value < syms[j].value ? -1 : 1;
	return (i > j) - (i < j);
}

/*
 * Version names by index, from .gnu.version_d.  Index 1 (the base version,
 * the soname) is left NULL: symbols there are simply unversioned.
 */
static const char **verdef_names(Elf_Scn *scn, const char *strs, size_t nstrs,
				 size_t *count)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	GElf_Verdef vd;
	GElf_Verdaux va;
	const char **names;
	size_t off, max = 0;

	if (!d)
		return NULL;
	for (off = 0; gelf_getverdef(d, off, &vd); off += vd.vd_next) {
		if (vd.vd_ndx > max)
			max = vd.vd_ndx;
		if (!vd.vd_next)
			break;
	}
	names = calloc(max + 1, sizeof(*names));
	if (!names)
		return NULL;
	for (off = 0; gelf_getverdef(d, off, &vd); off += vd.vd_next) {
		if (!(vd.vd_flags & VER_FLG_BASE) &&
		    gelf_getverdaux(d, off + vd.vd_aux, &va) &&
		    va.vda_name < nstrs)
			names[vd.vd_ndx] = strs + va.vda_name;
		if (!vd.vd_next)
			break;
	}
	*count = max + 1;
	return names;
}

/*
 * .symtab of a shared object may carry "name@VERS" / "name@@VERS": keep the
 * plain name and the version apart, as .dynsym + .gnu.version do.  Versions
 * are taken for every symbol before any name is cut, because the linker
 * merges string tails and one cut may shorten another symbol's name.
 */
static void split_versions(struct image *img)
{
	size_t i;

	for (i = 0; i < img->nsyms; i++) {
		const char *at = strchr(img->syms[i].name, '@');

		if (!at || img->syms[i].version)
			continue;
		img->syms[i].hidden = at[1] != '@';
		img->syms[i].version = at + (img->syms[i].hidden ? 1 : 2);
	}
	for (i = 0; i < img->nsyms; i++) {
		char *at = strchr(img->syms[i].name, '@');

		if (at)
			*at = '\0';
	}
}

static int image_sort(struct image *img)
{
	size_t i, n = 0;

	img->by_name = malloc(img->nsyms * sizeof(*img->by_name) + 1);
	img->by_addr = malloc(img->nsyms * sizeof(*img->by_addr) + 1);
	img->max_end = malloc(img->nsyms * sizeof(*img->max_end) + 1);
	if (!img->by_name || !img->by_addr || !img->max_end)
		return -ENOMEM;
	for (i = 0; i < img->nsyms; i++) {
		img->by_name[i] = i;
		if (img->syms[i].size && type_is_func(img->syms[i].type))
			img->by_addr[n++] = i;
	}
	img->naddrs = n;
	qsort_r(img->by_name, img->nsyms, sizeof(uint32_t), cmp_by_name,
		img->syms);
	qsort_r(img->by_addr, n, sizeof(uint32_t), cmp_by_addr, img->syms);
	for (i = 0; i < n; i++) {
		const struct esym *s = &img->syms[img->by_addr[i]];
		uintptr_t end = s->value + s->size;

		img->max_end[i] = i && img->max_end[i - 1] > end ?
				  img->max_end[i - 1] : end;
	}
	return 0;
}

/* Copy the symbols of @tab (and their versions, if @versym) into @img. */
static int image_load_symbols(struct image *img, Elf *elf, Elf_Scn *tab,
			      Elf_Scn *versym, Elf_Scn *verdef)
{
	GElf_Shdr sh, vsh;
	Elf_Data *d, *sd, *vd = NULL;
	const char **vernames = NULL;
	size_t i, n, nstrs, nver = 0;

	if (!gelf_getshdr(tab, &sh) || !sh.sh_entsize)
		return -EINVAL;
	d = elf_getdata(tab, NULL);
	sd = elf_getdata(elf_getscn(elf, sh.sh_link), NULL);
	if (!d || !sd || !sd->d_buf)
		return -EINVAL;
	/* One byte more, so that a corrupt table still ends in a NUL. */
	nstrs = sd->d_size;
	img->strs = malloc(nstrs + 1);
	n = sh.sh_size / sh.sh_entsize;
	img->syms = calloc(n ? n : 1, sizeof(*img->syms));
	if (!img->strs || !img->syms)
		return -ENOMEM;
	memcpy(img->strs, sd->d_buf, nstrs);
	img->strs[nstrs] = '\0';

	/* Versions only when they name strings of this very table. */
	if (versym && verdef && gelf_getshdr(verdef, &vsh) &&
	    vsh.sh_link == sh.sh_link) {
		vd = elf_getdata(versym, NULL);
		vernames = verdef_names(verdef, img->strs, nstrs, &nver);
	}

	for (i = 1; i < n; i++) {
		struct esym *e = &img->syms[img->nsyms];
		GElf_Versym v;
		GElf_Sym s;

		if (!gelf_getsym(d, i, &s) || !sym_wanted(&s) ||
		    s.st_name >= nstrs)
			continue;
		e->value = s.st_value;
		e->size = s.st_size;
		e->name = img->strs + s.st_name;
		e->type = GELF_ST_TYPE(s.st_info);
		e->bind = GELF_ST_BIND(s.st_info);
		if (vd && vernames && gelf_getversym(vd, i, &v)) {
			size_t ndx = v & 0x7fff;

			e->version = ndx < nver ? vernames[ndx] : NULL;
			e->hidden = e->version && (v & 0x8000);
		}
		img->nsyms++;
	}
	free(vernames);
	split_versions(img);
	return image_sort(img);
}

static bool scn_is_blacklist(Elf *elf, size_t shstrndx, const GElf_Shdr *sh)
{
	const char *name = elf_strptr(elf, shstrndx, sh->sh_name);

	return name && !strcmp(name, UKP_BL_SECTION) &&
	       (sh->sh_flags & SHF_ALLOC);
}

/*
 * Parse the ELF file open on @fd: .symtab when it has one (the full table,
 * locals included), .dynsym otherwise; and the blacklist section, found by
 * name in the section headers (which strip keeps).
 */
static int image_read_elf(struct image *img, int fd)
{
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	Elf_Scn *versym = NULL, *verdef = NULL;
	size_t shstrndx;
	GElf_Shdr sh;
	Elf *elf;
	int err = 0;

	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return -EINVAL;
	if (elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx)) {
		elf_end(elf);
		return -EINVAL;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB && sh.sh_size)
			symtab = scn;
		else if (sh.sh_type == SHT_DYNSYM && sh.sh_size)
			dynsym = scn;
		else if (sh.sh_type == SHT_GNU_versym)
			versym = scn;
		else if (sh.sh_type == SHT_GNU_verdef)
			verdef = scn;
		if (scn_is_blacklist(elf, shstrndx, &sh)) {
			img->has_bl = true;
			img->bl_addr = sh.sh_addr;
			img->bl_size = sh.sh_size;
		}
	}
	if (symtab)
		err = image_load_symbols(img, elf, symtab, NULL, NULL);
	else if (dynsym)
		err = image_load_symbols(img, elf, dynsym, versym, verdef);
	elf_end(elf);
	return err;
}

/* The main program's path: /proc/self/exe resolved, " (deleted)" cut. */
static char *main_path(void)
{
	static const char deleted[] = " (deleted)";
	char buf[PATH_MAX];
	ssize_t n = readlink(UKP_MAIN_FILE, buf, sizeof(buf) - 1);
	size_t dl = sizeof(deleted) - 1;

	if (n <= 0)
		return strdup(UKP_MAIN_FILE);
	buf[n] = '\0';
	if ((size_t)n > dl && !strcmp(buf + n - dl, deleted))
		buf[n - dl] = '\0';
	return strdup(buf);
}

static bool image_same_file(const struct image *img, const char *key,
			    const struct stat *st)
{
	if (strcmp(img->key, key))
		return false;
	if (!st)
		return !img->dev && !img->ino;
	return img->dev == st->st_dev && img->ino == st->st_ino &&
	       img->fsize == st->st_size &&
	       img->mtime.tv_sec == st->st_mtim.tv_sec &&
	       img->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

static struct image *image_new(const char *key, bool is_main, int fd,
			       const struct stat *st)
{
	struct image *img = calloc(1, sizeof(*img));
	int err;

	if (!img)
		return NULL;
	img->key = strdup(key);
	img->path = is_main ? main_path() : strdup(*key ? key : "[vdso]");
	if (!img->key || !img->path) {
		free(img->key);
		free(img->path);
		free(img);
		return NULL;
	}
	img->base = strrchr(img->path, '/') ? strrchr(img->path, '/') + 1 :
					       img->path;
	if (st) {
		img->dev = st->st_dev;
		img->ino = st->st_ino;
		img->fsize = st->st_size;
		img->mtime = st->st_mtim;
		img->real = realpath(img->path, NULL);
	}
	/* An image without symbols is still useful: it names the object. */
	if (fd >= 0 && ukp_syms.elf_ok) {
		err = image_read_elf(img, fd);
		if (err) {
			pr_warn("cannot read the symbols of %s (%d)\n",
				img->path, err);
			img->nsyms = 0;
			img->naddrs = 0;
		}
	}
	img->next = ukp_syms.images;
	ukp_syms.images = img;
	return img;
}

/* The image of the file behind @key, parsed on first sight. */
static struct image *image_get(const char *key, bool is_main, bool is_vdso)
{
	const char *file = is_main ? UKP_MAIN_FILE : key;
	struct image *img;
	struct stat st;
	bool have_st = false;
	int fd = -1;

	if (!is_vdso && *file) {
		fd = open(file, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && !fstat(fd, &st))
			have_st = true;
	}
	for (img = ukp_syms.images; img; img = img->next)
		if (image_same_file(img, key, have_st ? &st : NULL))
			break;
	if (!img)
		img = image_new(key, is_main, have_st ? fd : -1,
				have_st ? &st : NULL);
	if (fd >= 0)
		close(fd);
	return img;
}

/* Lowest index in by_name whose name is >= @name. */
static size_t name_lower_bound(const struct image *img, const char *name)
{
	size_t lo = 0, hi = img->nsyms;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(img->syms[img->by_name[mid]].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * How well @s answers a request for @version: -1 for not at all.  An exact
 * version match wins, then global over local (a static function of the same
 * name is the lesser answer), then the default version, then code.
 */
static int sym_score(const struct esym *s, const char *version,
		     bool need_default)
{
	int score = 0;

	if (version && s->version) {
		if (strcmp(s->version, version) || (need_default && s->hidden))
			return -1;
		score += 64;
	}
	if (s->bind != STB_LOCAL)
		score += 32;
	if (!s->hidden)
		score += 8;
	if (type_is_func(s->type))
		score += 4;
	else if (s->type == STT_OBJECT)
		score += 2;
	if (s->size)
		score += 1;
	return score;
}

static const struct esym *image_find(const struct image *img, const char *name,
				     const char *version, bool need_default)
{
	const struct esym *best = NULL;
	int best_score = -1;
	size_t i;

	for (i = name_lower_bound(img, name); i < img->nsyms; i++) {
		const struct esym *s = &img->syms[img->by_name[i]];
		int score;

		if (strcmp(s->name, name))
			break;
		score = sym_score(s, version, need_default);
		if (score > best_score) {
			best = s;
			best_score = score;
		}
	}
	return best;
}

static unsigned int leading_underscores(const char *name)
{
	unsigned int n = 0;

	while (name[n] == '_')
		n++;
	return n;
}

/* Of two aliases at one address, the name a person would use. */
static bool alias_better(const struct esym *a, const struct esym *b)
{
	if ((a->bind == STB_LOCAL) != (b->bind == STB_LOCAL))
		return b->bind == STB_LOCAL;
	if (a->hidden != b->hidden)
		return b->hidden;
	if (leading_underscores(a->name) != leading_underscores(b->name))
		return leading_underscores(a->name) <
		       leading_underscores(b->name);
	return false;
}

/* The innermost sized function covering link-time address @rel. */
static const struct esym *image_containing(const struct image *img,
					   uintptr_t rel)
{
	const struct esym *best = NULL;
	size_t lo = 0, hi = img->naddrs;

	/* hi = number of entries with value <= rel */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (img->syms[img->by_addr[mid]].value <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (hi-- > 0 && img->max_end[hi] > rel) {
		const struct esym *s = &img->syms[img->by_addr[hi]];

		if (best && s->value < best->value)
			break;
		if (rel - s->value >= s->size)
			continue;
		if (!best || alias_better(s, best))
			best = s;
	}
	return best;
}

/* ------------------------------------------------------------------------ */
/* Objects                                                                  */
/* ------------------------------------------------------------------------ */

struct scan_entry {
	char *dlname;
	uintptr_t bias;
	const void *phdr;
	struct seg *segs;
	unsigned int nsegs;
	bool is_main, is_vdso;
};

struct scan {
	struct scan_entry *v;
	size_t n, cap;
	unsigned long long adds, subs;
	bool counted;
	int err;
};

static bool info_has_counters(size_t size)
{
	return size >= offsetof(struct dl_phdr_info, dlpi_subs) +
		       sizeof(((struct dl_phdr_info *)0)->dlpi_subs);
}

static int counters_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct scan *s = data;

	if (info_has_counters(size)) {
		s->adds = info->dlpi_adds;
		s->subs = info->dlpi_subs;
		s->counted = true;
	}
	return 1;	/* the counters are global: one object is enough */
}

static bool segs_contain(const struct seg *segs, unsigned int n,
			 uintptr_t addr, bool exec_only)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (addr >= segs[i].start && addr < segs[i].end &&
		    (segs[i].exec || !exec_only))
			return true;
	return false;
}

/* Copy what we need of the program headers, which go away with the object. */
static int entry_fill(struct scan_entry *e, struct dl_phdr_info *info,
		      bool first)
{
	uintptr_t vdso = getauxval(AT_SYSINFO_EHDR);
	unsigned int i, n = 0;

	e->dlname = strdup(info->dlpi_name ? info->dlpi_name : "");
	e->segs = calloc(info->dlpi_phnum + 1, sizeof(*e->segs));
	if (!e->dlname || !e->segs)
		return -ENOMEM;
	e->bias = info->dlpi_addr;
	e->phdr = info->dlpi_phdr;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !ph->p_memsz)
			continue;
		e->segs[n].start = info->dlpi_addr + ph->p_vaddr;
		e->segs[n].end = e->segs[n].start + ph->p_memsz;
		e->segs[n].exec = ph->p_flags & PF_X;
		n++;
	}
	e->nsegs = n;
	/* glibc lists the main program first, with an empty name. */
	e->is_main = first && !*e->dlname;
	e->is_vdso = vdso && segs_contain(e->segs, n, vdso, false);
	return 0;
}

static int scan_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct scan *s = data;
	struct scan_entry *e;

	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		struct scan_entry *v = realloc(s->v, cap * sizeof(*v));

		if (!v) {
			s->err = -ENOMEM;
			return 1;
		}
		s->v = v;
		s->cap = cap;
	}
	e = &s->v[s->n++];
	memset(e, 0, sizeof(*e));
	if (info_has_counters(size) && !s->counted) {
		s->adds = info->dlpi_adds;
		s->subs = info->dlpi_subs;
		s->counted = true;
	}
	s->err = entry_fill(e, info, s->n == 1);
	return s->err ? 1 : 0;
}

static void scan_free(struct scan *s)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		free(s->v[i].dlname);
		free(s->v[i].segs);
	}
	free(s->v);
}

static void object_free(struct object *o)
{
	free(o->dlname);
	free(o->segs);
	free(o->bl);
	free(o);
}

static bool object_is_entry(const struct object *o, const struct scan_entry *e)
{
	return o->bias == e->bias && o->phdr == e->phdr &&
	       !strcmp(o->dlname, e->dlname);
}

/* A new object for @e, taking its strings; NULL when out of memory. */
static struct object *object_new(struct scan_entry *e)
{
	struct object *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->img = image_get(e->dlname, e->is_main, e->is_vdso);
	if (!o->img) {
		free(o);
		return NULL;
	}
	o->dlname = e->dlname;
	o->segs = e->segs;
	o->nsegs = e->nsegs;
	o->bias = e->bias;
	o->phdr = e->phdr;
	o->is_main = e->is_main;
	o->is_self = segs_contain(o->segs, o->nsegs,
				  (uintptr_t)&ukp_blacklisted, true);
	o->is_libc = !strncmp(o->img->base, "libc.so.", 8);
	o->bl_pending = true;
	e->dlname = NULL;
	e->segs = NULL;
	return o;
}

/* Unlink and return the old object that is @e, if any. */
static struct object *object_take(struct object **list,
				  const struct scan_entry *e)
{
	struct object **pp, *o;

	for (pp = list; (o = *pp); pp = &o->next) {
		if (object_is_entry(o, e)) {
			*pp = o->next;
			o->next = NULL;
			return o;
		}
	}
	return NULL;
}

static struct object *object_at(uintptr_t addr, bool exec_only)
{
	struct object *o;

	for (o = ukp_syms.objects; o; o = o->next)
		if (segs_contain(o->segs, o->nsegs, addr, exec_only))
			return o;
	return NULL;
}

/* ------------------------------------------------------------------------ */
/* Blacklist                                                                */
/* ------------------------------------------------------------------------ */

struct blvec {
	struct bl_range *v;
	size_t n, cap;
};

static int bl_push(struct blvec *b, uintptr_t start, uintptr_t end,
		   const char *name)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 8;
		struct bl_range *v = realloc(b->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		b->v = v;
		b->cap = cap;
	}
	b->v[b->n++] = (struct bl_range){ start, end, name };
	return 0;
}

/* The entries of the libc functions libukprobes replaces (UKP_INTERPOSER()
 * in internal.h), collected by the linker. */
extern const void *const __start_ukp_interposers[] __attribute__((weak, visibility("hidden")));
extern const void *const __stop_ukp_interposers[] __attribute__((weak, visibility("hidden")));

static int cmp_uintptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return (x > y) - (x < y);
}

/*
 * libukprobes as a shared object: all of its code, trap path included,
 * but for the first instruction of each replaced libc function (sigaction,
 * sigprocmask, posix_spawn, ...): the program's calls land there, so a
 * probe by that name goes there; nothing on the trap path calls them.
 */
static int bl_add_self(struct object *o, struct blvec *b)
{
	size_t n = __start_ukp_interposers ?
		(size_t)(__stop_ukp_interposers - __start_ukp_interposers) : 0;
	uintptr_t entry[n ? n : 1];
	unsigned int i;
	int err = 0;

	for (size_t k = 0; k < n; k++)
		entry[k] = (uintptr_t)__start_ukp_interposers[k];
	qsort(entry, n, sizeof(entry[0]), cmp_uintptr);
	for (i = 0; i < o->nsegs && !err; i++) {
		uintptr_t start = o->segs[i].start, end = o->segs[i].end;

		if (!o->segs[i].exec)
			continue;
		for (size_t k = 0; k < n && !err; k++) {
			uintptr_t e = entry[k];

			if (e < start || e >= end)
				continue;
			/* The first real instruction, past an endbr64. */
			e += arch_skip_func_entry((const uint8_t *)e, end - e < 16 ? end - e : 16);
			if (entry[k] > start)
				err = bl_push(b, start, entry[k], "ukprobes");
			start = e + 1;
		}
		if (!err && start < end)
			err = bl_push(b, start, end, "ukprobes");
	}
	return err;
}

/* The whole function around @addr, or its first byte when unknown. */
static int bl_add_function(struct blvec *b, uintptr_t addr)
{
	struct object *o = object_at(addr, true);
	const struct esym *s = o ? image_containing(o->img, addr - o->bias) :
				   NULL;

	if (s)
		return bl_push(b, o->bias + s->value,
			       o->bias + s->value + s->size, s->name);
	return bl_push(b, addr, addr + 1, o ? o->img->base : "?");
}

/*
 * The NOKPROBE_SYMBOL() entries: function pointers, read from memory where
 * the dynamic linker relocated them.  Returns 1 if some entry did not point
 * at code yet (an object seen between mapping and relocation by a
 * concurrent dlopen()), so that the section is read again later.
 */
static int bl_add_section(struct object *o, struct blvec *b)
{
	uintptr_t start = o->bias + o->img->bl_addr;
	size_t i, n = o->img->bl_size / sizeof(void *);
	int err, invalid = 0;

	if (!n || !segs_contain(o->segs, o->nsegs, start, false) ||
	    !segs_contain(o->segs, o->nsegs, start + n * sizeof(void *) - 1,
			  false))
		return 0;
	for (i = 0; i < n; i++) {
		uintptr_t fn = ((const uintptr_t *)start)[i];

		if (!object_at(fn, true)) {
			invalid = 1;
			continue;
		}
		err = bl_add_function(b, fn);
		if (err)
			return err;
	}
	return invalid;
}

/*
 * The signal return trampoline (rt_sigreturn), by its name or, since it is
 * local (only in a .symtab, which distributions strip from libc), by its
 * code: the port says both (arch_sigreturn_trampoline()).  The kernel's
 * signal delivery returns through it, so a probe there would trap with
 * every handler's return.
 */
static int bl_add_restore_rt(struct object *o, struct blvec *b)
{
	const struct arch_sigreturn *sr = arch_sigreturn_trampoline();
	unsigned int i;

	if (!sr)
		return 0;	/* not in libc on this architecture (a vDSO) */
	for (i = 0; sr->names[i]; i++) {
		const struct esym *s = image_find(o->img, sr->names[i], NULL, false);

		if (s)
			return bl_push(b, o->bias + s->value,
				       o->bias + s->value + (s->size ? s->size : sr->len),
				       sr->names[i]);
	}
	for (i = 0; i < o->nsegs; i++) {
		const struct seg *g = &o->segs[i];
		const unsigned char *p;

		if (!g->exec)
			continue;
		p = memmem((const void *)g->start, g->end - g->start, sr->code, sr->len);
		if (p)
			return bl_push(b, (uintptr_t)p, (uintptr_t)p + sr->len, sr->names[0]);
	}
	pr_warn("%s not found in %s\n", sr->names[0], o->img->path);
	return 0;
}

/* libc code that the trap path runs. */
static int bl_add_libc(struct object *o, struct blvec *b)
{
	const struct esym *s;
	int err;

	err = bl_add_restore_rt(o, b);
	if (err)
		return err;
	s = image_find(o->img, "__errno_location", NULL, false);
	if (!s)
		return 0;
	return bl_push(b, o->bias + s->value,
		       o->bias + s->value + (s->size ? s->size : 1),
		       "__errno_location");
}

/*
 * Build @o's ranges.  Reads the object's memory, so runs inside a
 * dl_iterate_phdr() callback, where the object cannot be unloaded.
 */
static void object_read_blacklist(struct object *o)
{
	struct blvec b = { 0 };
	int err = 0, invalid = 0;

	if (o->is_self && !o->is_main)
		err = bl_add_self(o, &b);
	if (!err && o->img->has_bl) {
		invalid = bl_add_section(o, &b);
		if (invalid < 0)
			err = invalid;
	}
	if (!err && o->is_libc)
		err = bl_add_libc(o, &b);
	if (err) {
		free(b.v);
		return;		/* out of memory: stay pending */
	}
	free(o->bl);
	o->bl = b.v;
	o->nbl = b.n;
	o->bl_pending = invalid && ++o->bl_tries < UKP_BL_MAX_TRIES;
	if (invalid && !o->bl_pending)
		pr_warn("%s: %s entries that are not code, ignored\n",
			o->img->path, UKP_BL_SECTION);
}

static int read_blacklist_cb(struct dl_phdr_info *info, size_t size,
			     void *data)
{
	struct object *o;

	for (o = ukp_syms.objects; o; o = o->next) {
		if (o->bl_pending && o->bias == info->dlpi_addr &&
		    o->phdr == info->dlpi_phdr) {
			object_read_blacklist(o);
			break;
		}
	}
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const struct bl_range *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->end > y->end) - (x->end < y->end);
}

/* Merge every object's ranges into the sorted array ukp_blacklisted() reads. */
static int blacklist_rebuild(void)
{
	struct bl_range *v;
	uintptr_t *max_end;
	struct object *o;
	size_t n = 0, i;

	for (o = ukp_syms.objects; o; o = o->next)
		n += o->nbl;
	v = malloc((n + 1) * sizeof(*v));
	max_end = malloc((n + 1) * sizeof(*max_end));
	if (!v || !max_end) {
		free(v);
		free(max_end);
		return -ENOMEM;
	}
	n = 0;
	for (o = ukp_syms.objects; o; o = o->next) {
		if (!o->nbl)
			continue;
		memcpy(v + n, o->bl, o->nbl * sizeof(*v));
		n += o->nbl;
	}
	qsort(v, n, sizeof(*v), cmp_range);
	for (i = 0; i < n; i++)
		max_end[i] = i && max_end[i - 1] > v[i].end ? max_end[i - 1] :
							      v[i].end;
	free(ukp_syms.bl);
	free(ukp_syms.bl_max_end);
	ukp_syms.bl = v;
	ukp_syms.bl_max_end = max_end;
	ukp_syms.nbl = n;
	return 0;
}

/* Read the blacklists not read yet, then publish the merged array. */
static int blacklist_update(void)
{
	struct object *o;

	dl_iterate_phdr(read_blacklist_cb, NULL);
	ukp_syms.pending = false;
	for (o = ukp_syms.objects; o; o = o->next)
		if (o->bl_pending)
			ukp_syms.pending = true;
	return blacklist_rebuild();
}

static bool bl_search(uintptr_t addr)
{
	size_t lo = 0, hi = ukp_syms.nbl;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ukp_syms.bl[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (hi-- > 0 && ukp_syms.bl_max_end[hi] > addr)
		if (addr < ukp_syms.bl[hi].end)
			return true;
	return false;
}

/* ------------------------------------------------------------------------ */
/* Scanning                                                                 */
/* ------------------------------------------------------------------------ */

static void syms_init_elf(void)
{
	static bool tried;

	if (tried)
		return;
	tried = true;
	ukp_syms.elf_ok = elf_version(EV_CURRENT) != EV_NONE;
	if (!ukp_syms.elf_ok)
		pr_warn("libelf: %s\n", elf_errmsg(-1));
}

/*
 * Rebuild the object list from a full dl_iterate_phdr() walk, keeping the
 * objects that are still loaded.  Called with ukp_syms.lock held.
 */
static int syms_rescan(void)
{
	struct object *old = ukp_syms.objects, *head = NULL, **tail = &head;
	struct scan s = { 0 };
	size_t i;
	int err = 0;

	syms_init_elf();
	dl_iterate_phdr(scan_cb, &s);
	if (s.err) {
		scan_free(&s);
		return s.err;
	}
	for (i = 0; i < s.n; i++) {
		struct object *o = object_take(&old, &s.v[i]);

		if (!o)
			o = object_new(&s.v[i]);
		if (!o) {
			err = -ENOMEM;	/* that object is missed this time */
			continue;
		}
		*tail = o;
		tail = &o->next;
	}
	while (old) {
		struct object *next = old->next;

		object_free(old);
		old = next;
	}
	scan_free(&s);
	ukp_syms.objects = head;
	ukp_syms.adds = s.adds;
	ukp_syms.subs = s.subs;
	ukp_syms.ready = true;
	if (!err)
		err = blacklist_update();
	ukp_syms.stale = err || !s.counted;
	return err;
}

/* Bring the caches up to date (cheap when nothing was loaded or unloaded). */
static int syms_update(void)
{
	struct scan c = { 0 };

	if (ukp_syms.ready && !ukp_syms.stale) {
		dl_iterate_phdr(counters_cb, &c);
		if (c.counted && c.adds == ukp_syms.adds &&
		    c.subs == ukp_syms.subs)
			return ukp_syms.pending ? blacklist_update() : 0;
	}
	return syms_rescan();
}

/* Update, but carry on with the old caches if that fails. */
static int syms_lock_update(void)
{
	int err;

	pthread_mutex_lock(&ukp_syms.lock);
	err = syms_update();
	if (err && ukp_syms.ready) {
		pr_debug("symbol cache refresh failed (%d)\n", err);
		err = 0;
	}
	return err;
}

/**
 * ukp_symbols_refresh() - notice objects loaded or unloaded since the last
 * call.  Cheap when nothing changed: one dl_iterate_phdr() step comparing
 * the loader's adds/subs counters.  The lookups below refresh by themselves
 * too; this is for callers that want to notice an unload.
 */
void ukp_symbols_refresh(void)
{
	syms_lock_update();
	pthread_mutex_unlock(&ukp_syms.lock);
}

/* ------------------------------------------------------------------------ */
/* Lookup                                                                   */
/* ------------------------------------------------------------------------ */

struct spec {
	char *buf;		/* our copy, cut in pieces */
	const char *object;	/* NULL: every object */
	const char *name;
	const char *version;	/* NULL: any */
	bool need_default;	/* "@@": the default version only */
};

/* Split "[object:]name[@[@]version]"; -EINVAL when a piece is empty. */
static int spec_parse(const char *text, struct spec *sp)
{
	char *colon, *at, *name;

	memset(sp, 0, sizeof(*sp));
	if (!text || !*text)
		return -EINVAL;
	sp->buf = strdup(text);
	if (!sp->buf)
		return -ENOMEM;
	name = sp->buf;
	/* Last colon: a path may hold one, a symbol name may not. */
	colon = strrchr(sp->buf, ':');
	if (colon) {
		*colon = '\0';
		sp->object = sp->buf;
		name = colon + 1;
		if (!*sp->object)
			return -EINVAL;
	}
	at = strchr(name, '@');
	if (at) {
		*at++ = '\0';
		if (*at == '@') {
			sp->need_default = true;
			at++;
		}
		if (!*at || strchr(at, '@'))
			return -EINVAL;
		sp->version = at;
	}
	sp->name = name;
	return *name ? 0 : -EINVAL;
}

/*
 * "libz.so.1" matches its basename; "/usr/lib/.../libz.so.1" its path (or
 * the same file by another path); "libz.so" and "libz" a prefix of the
 * basename that ends right before a '.'.
 */
static bool object_matches(const struct object *o, const char *want,
			   const char *want_real)
{
	const char *base = o->img->base;
	size_t n = strlen(want);

	if (!strcmp(base, want))
		return true;
	if (strchr(want, '/'))
		return !strcmp(o->img->path, want) ||
		       !strcmp(o->dlname, want) ||
		       (want_real && o->img->real &&
			!strcmp(o->img->real, want_real));
	return !strncmp(base, want, n) && base[n] == '.';
}

/* Main program first, then the objects in load order: the first one wins. */
static int find_symbol(const struct spec *sp, struct object **op,
		       const struct esym **symp)
{
	char *want_real = NULL;
	struct object *o;
	int err = -ENOENT;

	if (sp->object && strchr(sp->object, '/'))
		want_real = realpath(sp->object, NULL);
	for (o = ukp_syms.objects; o; o = o->next) {
		const struct esym *s;

		if (sp->object && !object_matches(o, sp->object, want_real))
			continue;
		s = image_find(o->img, sp->name, sp->version,
			       sp->need_default);
		if (s) {
			*op = o;
			*symp = s;
			err = 0;
			break;
		}
	}
	free(want_real);
	return err;
}

static void fill(struct ukp_symbol *out, const struct object *o,
		 const struct esym *s)
{
	out->addr = o->bias + s->value;
	out->size = s->size;
	out->name = s->name;
	out->object = o->img->base;
	out->object_base = o->bias;
}

/* What an IFUNC resolution needs once the lock is dropped. */
struct ifunc_req {
	char *dlname;		/* NULL for the main program */
	bool use_dlsym;
	uintptr_t resolver;
	const char *name;	/* image strings: never freed */
	const char *version;
};

static int ifunc_prepare(struct ifunc_req *r, const struct object *o,
			 const struct esym *s)
{
	memset(r, 0, sizeof(*r));
	if (!o->is_main) {
		r->dlname = strdup(o->dlname);
		if (!r->dlname)
			return -ENOMEM;
	}
	/*
	 * dlsym() finds the symbol only if it is exported: a global of a
	 * shared object is; a local is not, nor, usually, a global of the
	 * main program (then dlsym() could answer with another object's).
	 */
	r->use_dlsym = !o->is_main && s->bind != STB_LOCAL;
	r->resolver = o->bias + s->value;
	r->name = s->name;
	r->version = s->version;
	return 0;
}

/* The implementation chosen for @r; 0 if the object went away. */
static uintptr_t ifunc_resolve(const struct ifunc_req *r)
{
	uintptr_t impl = 0;
	void *h;

	/* The handle also keeps the object loaded while we call into it. */
	h = dlopen(r->dlname, RTLD_NOLOAD | RTLD_LAZY);
	if (!h) {
		dlerror();
		return 0;
	}
	if (r->use_dlsym)
		impl = (uintptr_t)(r->version ? dlvsym(h, r->name, r->version) :
						dlsym(h, r->name));
	if (!impl)
		impl = arch_call_ifunc_resolver(r->resolver);
	dlclose(h);
	dlerror();
	return impl;
}

/* Bounds of the implementation, when the symbol tables have it. */
static void ifunc_fill(struct ukp_symbol *out, uintptr_t impl)
{
	const struct object *o;
	const struct esym *s = NULL;

	pthread_mutex_lock(&ukp_syms.lock);
	o = object_at(impl, true);
	if (o)
		s = image_containing(o->img, impl - o->bias);
	out->addr = impl;
	if (s && o->bias + s->value == impl) {
		fill(out, o, s);
	} else {
		out->size = 0;
		if (o) {
			out->object = o->img->base;
			out->object_base = o->bias;
		}
	}
	pthread_mutex_unlock(&ukp_syms.lock);
}

static int ifunc_finish(struct ifunc_req *r, struct ukp_symbol *out)
{
	uintptr_t impl = ifunc_resolve(r);

	free(r->dlname);
	if (!impl)
		return -ENOENT;
	ifunc_fill(out, impl);
	return 0;
}

/**
 * ukp_symbol_lookup() - resolve "sym" or "object:sym" to a function.
 * @spec: symbol name, optionally versioned ("malloc@@GLIBC_2.2.5"), and
 *        optionally preceded by an object and a colon.
 * @out:  filled in on success.
 *
 * See symbols.h.  An STT_GNU_IFUNC symbol is resolved with dlopen(NOLOAD) +
 * dlsym(), which runs its resolver, with the lock dropped.
 *
 * Return: 0, -ENOENT (unknown symbol or object), -EINVAL (malformed spec),
 * -ENOMEM.
 */
int ukp_symbol_lookup(const char *spec, struct ukp_symbol *out)
{
	const struct esym *s = NULL;
	struct object *o = NULL;
	struct ifunc_req req;
	bool ifunc = false;
	struct spec sp;
	int err;

	err = spec_parse(spec, &sp);
	if (!err && !out)
		err = -EINVAL;
	if (err) {
		free(sp.buf);
		return err;
	}
	err = syms_lock_update();
	if (!err)
		err = find_symbol(&sp, &o, &s);
	if (!err) {
		fill(out, o, s);
		ifunc = s->type == STT_GNU_IFUNC;
		if (ifunc)
			err = ifunc_prepare(&req, o, s);
	}
	pthread_mutex_unlock(&ukp_syms.lock);
	free(sp.buf);
	if (!err && ifunc)
		err = ifunc_finish(&req, out);
	return err;
}

/**
 * ukp_symbol_containing() - the function (sized symbol) that contains @addr.
 * @addr: run-time address.
 * @out:  filled in: the symbol, or on -ENOENT the object alone (name NULL,
 *        addr and size 0; object NULL too when @addr is in no object).
 *
 * Return: 0 or -ENOENT.
 */
int ukp_symbol_containing(uintptr_t addr, struct ukp_symbol *out)
{
	const struct esym *s = NULL;
	const struct object *o;
	int err;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	err = syms_lock_update();
	if (err) {
		pthread_mutex_unlock(&ukp_syms.lock);
		return err;
	}
	o = object_at(addr, false);
	if (o) {
		out->object = o->img->base;
		out->object_base = o->bias;
		s = image_containing(o->img, addr - o->bias);
		if (s)
			fill(out, o, s);
	}
	pthread_mutex_unlock(&ukp_syms.lock);
	return s ? 0 : -ENOENT;
}

/**
 * ukp_blacklisted() - is @addr inside a blacklisted range?
 * @addr: run-time address.
 *
 * A binary search in the merged ranges, after the cheap refresh check.
 *
 * Return: 1 if blacklisted, 0 if not.
 */
int ukp_blacklisted(uintptr_t addr)
{
	bool hit;

	syms_lock_update();
	hit = ukp_syms.bl && bl_search(addr);
	pthread_mutex_unlock(&ukp_syms.lock);
	return hit;
}

/**
 * ukp_blacklist_foreach() - call @fn for each blacklisted range.
 * @fn:  called with [start, end) and a name (a symbol, or "ukprobes").
 * @arg: passed to @fn.
 *
 * @fn runs on a copy with the lock dropped, so it may look symbols up.
 */
void ukp_blacklist_foreach(ukp_blacklist_fn fn, void *arg)
{
	struct bl_range *copy;
	size_t i, n;

	syms_lock_update();
	n = ukp_syms.nbl;
	copy = malloc((n + 1) * sizeof(*copy));
	if (copy && n)
		memcpy(copy, ukp_syms.bl, n * sizeof(*copy));
	pthread_mutex_unlock(&ukp_syms.lock);
	if (!copy)
		return;
	for (i = 0; i < n; i++)
		fn(copy[i].start, copy[i].end, copy[i].name, arg);
	free(copy);
}
