/* SPDX-License-Identifier: MIT */
/*
 * fetch.h - fetch-argument programs: compile (from probe_events.c),
 * evaluate at a probe hit, format as the kernel's trace output.
 */
#ifndef UKPROBE_FETCH_H
#define UKPROBE_FETCH_H

#include <stddef.h>
#include <stdint.h>
#include "ukprobes.h"
#include "probe_events.h"

struct fetch_ctx {
	struct pt_regs *regs;
	unsigned long retval_valid;	/* nonzero in a return handler:
					 * regs_return_value() is the return
					 * value */
	const char *comm;		/* thread name, read at thread start */
	const unsigned long *edata;	/* return probes: what
					 * fetch_save_entry_args() saved at
					 * entry (NULL: $argN faults) */
};

/* Return probes using $argN: call in the kretprobe entry handler, edata
 * having room for ev->nentry_args unsigned longs.  Signal safe. */
void fetch_save_entry_args(const struct pe_event *ev, struct pt_regs *regs,
			   unsigned long *edata);

/*
 * Evaluate argument a at a probe hit.  Async-signal-safe: no malloc, no
 * locks, no stdio; errno is kept.  Memory is read only with
 * process_vm_readv() on the own pid (EFAULT instead of a fault; a write()
 * into a pipe where that system call is not allowed), so a bad pointer never
 * crashes or disturbs the traced program.
 *
 * Writes the raw value(s) into buf (at most len bytes; fetch_arg_size() is
 * always enough) and returns the bytes used, or -EFAULT when a memory read
 * faulted (the kernel's "(fault)"), or -ENOSPC when buf cannot hold a
 * scalar or array.  Layouts:
 *   scalars, char, bitfields (in their container size), symbol: the value
 *     in the type's size, little endian;
 *   symstr: the unsigned long address (symbolized by fetch_format());
 *   TYPE[N]: N such values back to back (a fault anywhere: -EFAULT);
 *   string/ustring/$comm/\"imm": the bytes and a NUL, truncated to
 *     min(len, PE_MAX_STRING_LEN + 1) (a fault before the NUL: -EFAULT);
 *   string[N] (N char * in memory): N records "status byte (0 ok, 1 the
 *     string faulted), bytes, NUL", each truncated to len / N bytes.
 * ctx->retval_valid is informational: $retval only parses in return probes
 * and reads regs_return_value().
 */
int fetch_arg(const struct pe_arg *a, const struct fetch_ctx *c, void *buf, size_t len);

/* Bytes fetch_arg() may need for a: type size * N; strings
 * PE_MAX_STRING_LEN + 1, string[N] N * (PE_MAX_STRING_LEN + 2). */
size_t fetch_arg_size(const struct pe_arg *a);

/*
 * Format what fetch_arg() returned (used = its return value) as the kernel's
 * trace output does, without the "name=": u decimal (%u/%llu), s decimal
 * (%d/%lld), x 0x%x/0x%llx, char '%c', string "...", symbol as %pS
 * "sym+0xoff/0xsize" from the installed symbolizer (else 0xaddr), symstr
 * the same in quotes, bitfield unsigned decimal, arrays {a,b,c}, and
 * "(fault)" for a negative used (and per faulted string of a string[N]).
 * Not signal safe.  Returns the full length as snprintf does.
 */
int fetch_format(const struct pe_arg *a, const void *buf, int used, char *out, size_t outlen);

/* Fetch and format all of ev's arguments the way the kernel's trace line
 * ends: " name=value" for each (a leading space each).  For tests and
 * simple callers: mallocs, not signal safe.  Returns the full length. */
int fetch_format_event(const struct pe_event *ev, const struct fetch_ctx *c, char *out, size_t outlen);

/* ---- the program, built by probe_events.c (opaque to everyone else) ---- */

/* The kernel's fetch_insn machine (kernel/trace/trace_probe.h): a load op,
 * dereferences, one store op, an optional bitfield op, an optional array
 * loop, END; FETCH_INSN_MAX slots, counted the same way, so TOO_MANY_OPS
 * fires where the kernel's does. */
enum fetch_op {
	FOP_NOP = 0,
	/* stage 1: load */
	FOP_REG,	/* .param = offset in struct pt_regs */
	FOP_STACK,	/* .param = index */
	FOP_STACKP,
	FOP_RETVAL,
	FOP_IMM,	/* .imm */
	FOP_COMM,
	FOP_ARG,	/* .param = 0-based argument number */
	FOP_DATA,	/* .data: immediate string */
	FOP_EDATA,	/* .param = slot in fetch_ctx.edata */
	/* stage 2: dereference */
	FOP_DEREF,	/* .offset */
	FOP_UDEREF,	/* .offset */
	/* stage 3: store */
	FOP_ST_RAW,	/* .size */
	FOP_ST_MEM,	/* .offset, .size */
	FOP_ST_UMEM,
	FOP_ST_STRING,	/* .offset */
	FOP_ST_USTRING,
	FOP_ST_SYMSTR,
	/* stage 4: modify */
	FOP_MOD_BF,	/* .basesize, .lshift, .rshift */
	/* stage 5: loop */
	FOP_LP_ARRAY,	/* .param = count */
	FOP_END,
	FOP_NOP_SYMBOL,	/* .data = "SYM[+-offs]"; the next op (IMM) gets
			 * its address when resolved */
};

#define FETCH_INSN_MAX	16

struct fetch_insn {
	enum fetch_op op;
	unsigned int param;
	unsigned int size;
	long offset;
	unsigned char basesize, lshift, rshift;
	unsigned long imm;
	char *data;
	int pos;		/* FOP_NOP_SYMBOL: position in the definition */
};

struct pe_fetch {
	struct fetch_insn code[FETCH_INSN_MAX];
	int resolved;		/* all FOP_NOP_SYMBOL resolved */
};

/* Bytes of one element of a's type in fetch_arg()'s output (strings: 0). */
unsigned int fetch_type_size(enum pe_type t);

#endif
