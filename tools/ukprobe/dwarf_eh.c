// SPDX-License-Identifier: MIT
/*
 * dwarf_eh.c - LEB128 numbers and DW_EH_PE pointers (dwarf_eh.h), as the
 * DWARF standard and the LSB's exception frame chapter define them.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "dwarf_eh.h"

uint64_t dwarf_uleb(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;
	int shift = 0;

	while (*p < end) {
		uint8_t b = *(*p)++;

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	return v;
}

int64_t dwarf_sleb(const uint8_t **p, const uint8_t *end)
{
	int64_t v = 0;
	int shift = 0;
	uint8_t b = 0;

	while (*p < end) {
		b = *(*p)++;
		if (shift < 64)
			v |= (int64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	if (shift < 64 && (b & 0x40))
		v |= -((int64_t)1 << shift);
	return v;
}

/* A fixed-size value of the file's (the machine's) byte order. */
static uint64_t fixed(const uint8_t *p, size_t size, bool sign)
{
	uint16_t h;
	uint32_t w;
	uint64_t d;

	switch (size) {
	case 2: memcpy(&h, p, 2); return sign ? (uint64_t)(int64_t)(int16_t)h : h;
	case 4: memcpy(&w, p, 4); return sign ? (uint64_t)(int64_t)(int32_t)w : w;
	default: memcpy(&d, p, 8); return d;
	}
}

int dwarf_eh_pointer(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t at,
		     uint64_t base, uint64_t *out)
{
	uint64_t v = 0;
	size_t size = 0;

	if (enc == 0xff)		/* DW_EH_PE_omit */
		return -EINVAL;
	switch (enc & 0x0f) {
	case 0x00: size = sizeof(unsigned long); break;	/* absptr */
	case 0x01: v = dwarf_uleb(p, end); break;
	case 0x09: v = (uint64_t)dwarf_sleb(p, end); break;
	case 0x02: case 0x0a: size = 2; break;		/* u/sdata2 */
	case 0x03: case 0x0b: size = 4; break;		/* u/sdata4 */
	case 0x04: case 0x0c: size = 8; break;		/* u/sdata8 */
	default: return -EINVAL;
	}
	if (size) {
		if ((size_t)(end - *p) < size)
			return -EINVAL;
		v = fixed(*p, size, enc & 0x08);
		*p += size;
	}
	switch (enc & 0x70) {
	case 0x00: break;		/* absolute */
	case 0x10: v += at; break;	/* pcrel */
	case 0x30: v += base; break;	/* datarel */
	default: return -EINVAL;
	}
	if (sizeof(unsigned long) == 4)
		v = (uint32_t)v;	/* addresses wrap in a 32-bit space */
	*out = v;
	return 0;
}
