/* SPDX-License-Identifier: MIT */
/*
 * symbols.h - symbol resolution over every loaded ELF object (the user-space
 * kallsyms), and the blacklist read from those objects.
 *
 * Not for the trap path: these functions take locks and allocate.
 */
#ifndef UKP_SYMBOLS_H
#define UKP_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

struct ukp_symbol {
	uintptr_t addr;		/* run-time address of the symbol */
	size_t size;		/* st_size, 0 when unknown */
	const char *name;	/* owned by the symbol cache, valid until reset */
	const char *object;	/* basename of the object ("libc.so.6"); the
				   main program's is its basename too */
	uintptr_t object_base;	/* load bias of that object */
};

/**
 * ukp_symbol_lookup() - resolve "sym" or "object:sym" to a function.
 * @spec: symbol name, or object basename (or full path), a colon, and the
 *        name.  "libz.so.1:deflate", "libc.so.6:getpid".  An object named
 *        without its version suffix ("libz.so") matches too.
 * @out:  filled in on success.
 *
 * Searches the main program first, then the shared objects in load order,
 * using .symtab from the file on disk when it has one, .dynsym otherwise.
 * Functions and objects (STT_FUNC, STT_OBJECT, STT_GNU_IFUNC, STT_NOTYPE with
 * a section) are found; global symbols win over local ones of the same name.
 * An STT_GNU_IFUNC symbol resolves to the implementation the dynamic linker
 * chose (as dlsym() does), with the bounds of that implementation when known.
 *
 * Returns 0, -ENOENT (unknown symbol or object), -EINVAL (malformed spec).
 */
int ukp_symbol_lookup(const char *spec, struct ukp_symbol *out);

/**
 * ukp_symbol_containing() - the function (sized symbol) that contains @addr.
 * Returns 0, or -ENOENT when no sized symbol covers @addr (the object and its
 * base are still filled in when @addr lies in a loaded object; name is NULL).
 */
int ukp_symbol_containing(uintptr_t addr, struct ukp_symbol *out);

/**
 * ukp_blacklisted() - is @addr inside a blacklisted range?  The ranges are
 * libukprobes itself, functions marked NOKPROBE_SYMBOL() in any loaded object
 * (section "_ukprobe_blacklist"), and the few libc functions that the trap
 * path or the kernel's signal delivery run (__restore_rt, __errno_location).
 * Returns 1 if blacklisted, 0 if not.
 */
int ukp_blacklisted(uintptr_t addr);

/** ukp_blacklist_foreach() - call @fn for each blacklisted range. */
typedef void (*ukp_blacklist_fn)(uintptr_t start, uintptr_t end,
				 const char *name, void *arg);
void ukp_blacklist_foreach(ukp_blacklist_fn fn, void *arg);

/**
 * ukp_symbols_refresh() - notice objects loaded or unloaded since the last
 * call (cheap when nothing changed: compares dl_iterate_phdr's adds/subs).
 */
void ukp_symbols_refresh(void);

#endif
