/* SPDX-License-Identifier: MIT */
/*
 * dwarf_eh.h - the encodings of the unwind tables (.eh_frame and
 * .eh_frame_hdr): LEB128 numbers and DW_EH_PE-encoded pointers, read by
 * the symbol layer (syms.c: where functions start in a stripped file) and
 * the unwinder (unwind.c).  The files read are of the command's ELF class
 * and byte order (syms.c checks the machine before it reads one).
 */
#ifndef UKPROBE_DWARF_EH_H
#define UKPROBE_DWARF_EH_H

#include <stdint.h>

/* An unsigned or signed LEB128 number at *p (not past end); *p moves on. */
uint64_t dwarf_uleb(const uint8_t **p, const uint8_t *end);
int64_t dwarf_sleb(const uint8_t **p, const uint8_t *end);

/*
 * A pointer of encoding enc (DW_EH_PE_*) at *p, whose own link-time
 * address is at; datarel is relative to base (.eh_frame_hdr's start).
 * Fixed sizes, LEB128, absolute, pc- or data-relative: what .eh_frame and
 * .eh_frame_hdr use.  0 with *out set and *p moved on, or -EINVAL.
 */
int dwarf_eh_pointer(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t at,
		     uint64_t base, uint64_t *out);

#endif
