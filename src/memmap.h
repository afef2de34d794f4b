/* SPDX-License-Identifier: MIT */
/* memmap.h - this process's memory map (/proc/self/maps). Not trap-safe. */
#ifndef UKP_MEMMAP_H
#define UKP_MEMMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ukp_map {
	uintptr_t start, end;
	bool exec;
};

/* The mappings, sorted by address (malloc'd array).  0 or -errno. */
int ukp_maps_read(struct ukp_map **out, size_t *n);

/* Is @addr in an executable mapping?  Re-reads the map when the cached one
 * does not say yes.  Caller holds ukp_kprobe_mutex. */
bool ukp_addr_executable(uintptr_t addr);

#endif
