/* SPDX-License-Identifier: MIT */
/*
 * tool_arch.h - what the ukprobe tool needs to know of the instruction set:
 * instruction lengths (to tell instruction boundaries, as the kernel's
 * can_probe() decodes a function from its start) and what a function's
 * entry skips (the kernel's arch_adjust_kprobe_addr()).  One back end per
 * architecture, tool_arch_<uname -m>.c, the only tool file that decodes.
 */
#ifndef UKPROBE_TOOL_ARCH_H
#define UKPROBE_TOOL_ARCH_H

#include <stddef.h>
#include <stdint.h>

/* Length of the instruction at code (avail bytes readable), or -EILSEQ if
 * the bytes do not decode. */
int tool_insn_len(const uint8_t *code, size_t avail);

/* Bytes a probe on a function's entry skips (x86: endbr64), 0 if none;
 * *what names the instruction skipped. */
size_t tool_entry_skip(const uint8_t *code, size_t avail, const char **what);

/* Longest instruction: bytes to read past a point to decode what is there. */
#define TOOL_MAX_INSN	16

#endif
