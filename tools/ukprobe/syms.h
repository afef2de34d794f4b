/* SPDX-License-Identifier: MIT */
/*
 * syms.h - ELF symbol tables for ukprobe: of files (list-symbols, check) and
 * of the objects loaded in the running process (the agent's symbolizer and
 * @SYM resolver).  Not for probe handlers: these functions lock and allocate.
 */
#ifndef UKPROBE_SYMS_H
#define UKPROBE_SYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------ */
/* One ELF file                                                              */
/* ------------------------------------------------------------------------ */

struct ksym {
	uint64_t addr;		/* link-time address (st_value) */
	uint64_t size;		/* st_size, or the distance to the next symbol */
	uint32_t name;		/* offset in symfile.names */
	uint8_t type;		/* STT_* */
	uint8_t bind;		/* STB_* */
	uint8_t sized;		/* st_size was non-zero */
	uint8_t dynamic;	/* came from .dynsym */
};

struct load_seg {
	uint64_t vaddr, memsz, offset, filesz;
	uint32_t flags;		/* PF_* */
};

struct code_range {
	uint64_t addr, size;	/* link-time */
};

struct symfile {
	char *path;
	int etype;			/* ET_EXEC, ET_DYN */
	struct ksym *syms;		/* sorted by address */
	size_t nsyms;
	uint32_t *by_name;		/* indices into syms, sorted by name */
	char *names;
	size_t names_len;
	struct load_seg *loads;
	int nloads;
	bool has_symtab;		/* .symtab (not stripped) */
	/* Where code is known to start, for stripped files too: the
	 * functions of the unwind tables (.eh_frame_hdr, sorted), and the
	 * executable sections. */
	uint64_t *cfi_starts;
	size_t ncfi;
	struct code_range *xsecs;
	int nxsecs;
};

/* Read the symbols of path (.symtab and .dynsym merged).  NULL and a reason
 * in err on failure. */
struct symfile *symfile_open(const char *path, char *err, size_t errlen);
void symfile_close(struct symfile *sf);

static inline const char *ksym_name(const struct symfile *sf, const struct ksym *s)
{
	return sf->names + s->name;
}

/* The symbol called name: global before local, function before data. */
const struct ksym *symfile_lookup(const struct symfile *sf, const char *name);
/* The symbol covering vaddr (functions first), or NULL. */
const struct ksym *symfile_containing(const struct symfile *sf, uint64_t vaddr);
/* File offset <-> link-time address, through the PT_LOAD segments.
 * 0, or -ENOENT when no segment covers it. */
int symfile_off_to_vaddr(const struct symfile *sf, uint64_t off, uint64_t *vaddr);
int symfile_vaddr_to_off(const struct symfile *sf, uint64_t vaddr, uint64_t *off);
/* Is the address in an executable segment? */
bool symfile_vaddr_exec(const struct symfile *sf, uint64_t vaddr);
static inline bool ksym_is_func(const struct ksym *s)
{
	return s->type == 2 /* STT_FUNC */ || s->type == 10 /* STT_GNU_IFUNC */;
}

/* The nearest address at or below vaddr where an instruction is known to
 * start: a function symbol, a function of the unwind tables, or an
 * executable section.  0, or -ENOENT when none is known; *from says which
 * ("symbol", "unwind table", "section"). */
int symfile_code_start(const struct symfile *sf, uint64_t vaddr, uint64_t *start,
		       const char **from);
/* Is vaddr where a function starts (a function symbol, or a function of
 * the unwind tables)?  *known is false when neither covers vaddr. */
bool symfile_func_start(const struct symfile *sf, uint64_t vaddr, bool *known);
/* Up to len bytes at link-time address vaddr, read from the file (fewer at
 * the end of the PT_LOAD segment's file bytes).  The number of bytes read,
 * -ENOENT outside every segment, -EIO. */
long symfile_read(const struct symfile *sf, uint64_t vaddr, void *buf, size_t len);

/* ------------------------------------------------------------------------ */
/* Names of objects                                                          */
/* ------------------------------------------------------------------------ */

/* Does an object name as written in a definition ("libc.so.6", "libz.so",
 * "/usr/lib/x86_64-linux-gnu/libz.so.1", "gzip") name the file at path?
 * Basename or full path; a name without the version suffix matches too. */
bool object_name_matches(const char *want, const char *path);

/* Find the file of an object named in a definition, without running
 * anything: a path; else an object loaded in this process; else the
 * run-time linker's directories (LD_LIBRARY_PATH, /etc/ld.so.conf.d, the
 * standard ones); else $PATH.  Returns a malloc'd path or NULL. */
char *find_object_file(const char *name);

/* The executable's file found through $PATH (like execvp); malloc'd. */
char *find_in_path(const char *prog);

/* DT_NEEDED names of an ELF file (malloc'd array of malloc'd strings,
 * NULL-terminated), or NULL. */
char **elf_needed(const char *path);
void strv_free(char **v);

/* The PT_INTERP of an ELF file (its run-time linker), malloc'd; NULL for
 * none (static, not ELF). */
char *elf_interp(const char *path);

/* Size of the PT_TLS segment of an ELF file (0 if none or unreadable). */
unsigned long elf_tls_size(const char *path);

/* ------------------------------------------------------------------------ */
/* The objects loaded in this process                                       */
/* ------------------------------------------------------------------------ */

struct lobj {
	char *path;		/* file; the main program's is /proc/self/exe's */
	const char *base;	/* basename of path */
	char *dlname;		/* dlpi_name as the run-time linker has it */
	uintptr_t bias;		/* dlpi_addr */
	struct { uintptr_t start, end; } ranges[16];	/* PT_LOAD, run time */
	int nranges;
	bool is_main;
	struct symfile *sf;	/* loaded lazily; NULL if unreadable */
	bool sf_tried;
};

/* Around fork(): the lock of the loaded-object list. */
void lobjs_lock(void);
void lobjs_unlock(void);
/* Look the loaded objects up again if any was loaded or unloaded. */
void lobjs_refresh(void);
/* Call fn for each loaded object (lock held: do not call lobjs_* from fn). */
void lobjs_foreach(void (*fn)(struct lobj *o, void *arg), void *arg);
/* Is an object matching name loaded?  Copies its path if so. */
bool lobjs_loaded(const char *name, char *path, size_t pathlen);
/* Is addr in the loaded object whose dlpi_name is dlname (or, for "", the
 * main program)? */
bool lobjs_addr_in(const char *dlname, uintptr_t addr);
/* Run-time address of file offset off in the loaded object name. */
int lobjs_offset_addr(const char *name, uint64_t off, uintptr_t *addr);
/* Resolve [obj:]sym (obj NULL or "" = main program first, then load
 * order) to a run-time address: 0, or -ENOENT. */
int lobjs_resolve(const char *obj, const char *sym, unsigned long *addr);
/* The symbols of the file of the loaded object named name, or, for a NULL
 * or "" name, of the first one that defines sym (main program first, as
 * lobjs_resolve()).  0 with *sf (kept for the life of the process) and its
 * load bias, or -ENOENT. */
int lobjs_symfile(const char *name, const char *sym, const struct symfile **sf,
		  uintptr_t *bias);
/* The same for the loaded object that contains addr. */
int lobjs_symfile_at(uintptr_t addr, const struct symfile **sf, uintptr_t *bias);
/* "sym+0xoff/0xsize" (with_off), "sym" (without); "obj+0xfileoff" when no
 * symbol covers addr; "0xaddr" outside every object.  Returns 0 if a
 * symbol was found, -ENOENT otherwise (out is filled either way). */
int lobjs_symbolize(uintptr_t addr, bool with_off, char *out, size_t len);

#endif
