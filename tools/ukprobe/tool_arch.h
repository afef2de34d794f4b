/* SPDX-License-Identifier: MIT */
/*
 * tool_arch.h - what the ukprobe tool knows of the architecture, all of it
 * from tools/ukprobe/arch/ARCH/ (ARCH as the build's, uname -m natively),
 * so that a port of the tool adds that folder and changes no other file:
 *
 *   tool_arch_defs.h  constants and inline accessors: TOOL_MAX_INSN,
 *                     TOOL_REG_ARGS and tool_stack_arg_addr() ($argN past
 *                     the register arguments), the DWARF numbers of the
 *                     stack pointer, frame pointer and return address
 *                     column (TOOL_DWARF_*) and the frame-pointer frame
 *                     (TOOL_FP_SAVED_*) for the unwinder, TOOL_RED_ZONE
 *   decode.c          tool_insn_len(), tool_entry_skip() below: the only
 *                     tool file that decodes instructions (the checks of
 *                     point_check.c, what `ukprobe check` shows)
 *   inject.c          the inject_arch_*() hooks of inject.h: registers
 *                     saved and put back through ptrace, a function call
 *                     set up in a stopped thread (trace -p)
 *
 * What else a port brings is the library's: the register names of fetch
 * arguments (regs_query_register_offset(), as the kernel's kprobe_events
 * names them for that architecture), struct pt_regs and its accessors
 * (<ukprobes/asm/ptrace.h>: regs_return_value(), user_stack_pointer(),
 * frame_pointer(), regs_get_kernel_argument()), and the libraries the
 * port links (ARCH_LIBS of src/arch/ARCH/arch.mk).
 */
#ifndef UKPROBE_TOOL_ARCH_H
#define UKPROBE_TOOL_ARCH_H

#include <stddef.h>
#include <stdint.h>

#include "tool_arch_defs.h"

/* Length of the instruction at code (avail bytes readable), or -EILSEQ if
 * the bytes do not decode. */
int tool_insn_len(const uint8_t *code, size_t avail);

/* Bytes a probe on a function's entry skips (x86: endbr64), 0 if none;
 * *what names the instruction skipped. */
size_t tool_entry_skip(const uint8_t *code, size_t avail, const char **what);

#endif
