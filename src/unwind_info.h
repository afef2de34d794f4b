/* SPDX-License-Identifier: MIT */
/*
 * unwind_info.h - DWARF call frame information for code made at run time,
 * and telling the process's unwinders about it (unwind_info.c).
 *
 * A region is code at a fixed place with one FDE per piece of it, all
 * sharing one CIE (the arch's alignment factors and initial instructions,
 * and a personality routine).  Registered with:
 *  - libgcc's unwinder (__register_frame): C++ exceptions, forced unwinding
 *    (pthread_cancel, pthread_exit), _Unwind_Backtrace, glibc's backtrace(),
 *    Rust panics;
 *  - unwinders that search the loaded objects with dl_iterate_phdr()
 *    (libunwind): ours shows each region as one more object;
 *  - gdb, through its JIT interface (an in-memory ELF object with the same
 *    .eh_frame and a symbol naming the code).
 * Regions are never unregistered: the code they describe lives as long as
 * the process.
 */
#ifndef UKP_UNWIND_INFO_H
#define UKP_UNWIND_INFO_H

#include <stddef.h>
#include <stdint.h>

#include "arch.h"

/* The FDE of piece @k: the code range it covers and its CFI instructions
 * (at most 32 bytes), returning how many bytes were written. */
typedef size_t (*ukp_fde_fn)(void *arg, size_t k, uintptr_t *start, size_t *len,
			     uint8_t *insns);

struct ukp_unwind_region;

/* Bytes of memory a region of @nfde FDEs needs (for ukp_unwind_build()). */
size_t ukp_unwind_space(size_t nfde);

/**
 * ukp_unwind_build() - lay out, in @space (ukp_unwind_space() bytes, zeroed,
 * 8-byte aligned, never freed), the unwind information of the code
 * [@code, @code + @len): a CIE from @cfi with @personality (0: none), then
 * @fde(@arg, k) for k < @nfde, and what the debugger is shown, named @name
 * (a string that lives forever).  Returns the region.  API calls only.
 */
struct ukp_unwind_region *ukp_unwind_build(void *space, uintptr_t code, size_t len,
					   const char *name, const struct arch_cfi *cfi,
					   uintptr_t personality, size_t nfde,
					   ukp_fde_fn fde, void *arg);

/** ukp_unwind_register() - tell the unwinders and the debugger.  API calls
 *  only (libgcc allocates; the debugger may stop the process here). */
void ukp_unwind_register(struct ukp_unwind_region *r);

#endif
