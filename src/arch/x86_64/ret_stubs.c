// SPDX-License-Identifier: MIT
/*
 * ret_stubs.c - x86-64 return stubs and their unwind information (arch.h,
 * "return probes"; the design is in kretprobe_unwind.c).
 *
 * Stub i of a thread's block, UKP_ARCH_RET_STUB_SIZE bytes:
 *
 *   +0   e8 0f 00 00 00       call  +20          prime: an optimized entry
 *                                                jumps here (prime.h)
 *   +5   4c 8d 1d <rel32>     lea   e[i](%rip), %r11   <- the return address
 *   +12  4d 8b 13             mov   (%r11), %r10       e[i].ret
 *   +15  41 ff 63 08          jmp   *8(%r11)           e[i].tramp
 *   +19  cc                   int3
 *   +20  48 8d 64 24 08       lea   8(%rsp), %rsp      prime: drop what the
 *   +25  ff 64 24 e0          jmp   *-32(%rsp)         call pushed; on into
 *   +29  cc cc cc                                      the detour (prime.h)
 *
 * A function returns to +5 with %rsp just above its popped return slot;
 * %r10 and %r11 are free there (caller-saved, not return registers).  The
 * entries are in the same mapping as the stubs (kretprobe_unwind.c), within
 * reach of a rel32.
 *
 * Unwind information: one FDE per stub, from +4 (unwinders look a return
 * address up at address - 1) to +19: the return address is the value at
 * &e[i].ret, the CFA (the caller's %rsp) is the stub's %rsp.  For libgcc
 * the CFA is put 8 bytes above that, the caller's %rsp being CFA - 8: it
 * tells frames apart by the CFA of their callee, and the probed
 * function's CFA is the stub's %rsp, so a stub whose CFA were its %rsp
 * would look like its caller (the frame that catches an exception would
 * be taken for the stub's).  Others take the CFA for the caller's %rsp
 * whatever the rules say (libunwind), so they get the plain CIE.  The
 * prime part (+0, +20, +25) has no FDE: it runs only inside an optimized
 * entry's detour, which has none either.
 */
#include <elf.h>
#include <string.h>

#include "internal.h"
#include "arch.h"
#include "kretprobes.h"

#define STUB_LEA	5
#define STUB_BACK	20
#define FDE_FROM	(X86_RET_STUB_RETURN - 1)
#define FDE_TO		19

#define DWARF_RSP	7
#define DWARF_RIP	16
#define DW_CFA_def_cfa		0x0c
#define DW_CFA_val_offset	0x14
#define DW_CFA_val_expression	0x16
#define DW_OP_const8u		0x0e
#define DW_OP_deref		0x06

static const uint8_t x86_stub_tmpl[UKP_ARCH_RET_STUB_SIZE] = {
	0xe8, STUB_BACK - 5, 0x00, 0x00, 0x00,	/* call +20 */
	0x4c, 0x8d, 0x1d, 0, 0, 0, 0,		/* lea e[i](%rip), %r11 */
	0x4d, 0x8b, 0x13,			/* mov (%r11), %r10 */
	0x41, 0xff, 0x63, UKP_RET_ENTRY_TRAMP,	/* jmp *8(%r11) */
	0xcc,					/* int3 */
	0x48, 0x8d, 0x64, 0x24, 0x08,		/* lea 8(%rsp), %rsp */
	0xff, 0x64, 0x24, (uint8_t)-PRIME_CONT_BELOW,	/* jmp *-32(%rsp) */
	0xcc, 0xcc, 0xcc,
};

_Static_assert(UKP_RET_ENTRY_RET == 0, "the stub reads ret at (%r11)");

void arch_ret_stubs_write(uint8_t *code, struct ukp_ret_entry *e, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		uint8_t *s = code + (size_t)i * UKP_ARCH_RET_STUB_SIZE;
		int32_t rel = (int32_t)((intptr_t)&e[i] - (intptr_t)(s + STUB_LEA + 7));

		memcpy(s, x86_stub_tmpl, sizeof(x86_stub_tmpl));
		memcpy(s + STUB_LEA + 3, &rel, 4);
	}
}

long arch_ret_stub_index(uintptr_t stubs, unsigned int n, uintptr_t ip)
{
	uintptr_t off = ip - stubs;

	if (off >= (uintptr_t)n * UKP_ARCH_RET_STUB_SIZE ||
	    off % UKP_ARCH_RET_STUB_SIZE != X86_RET_STUB_RETURN)
		return -1;
	return (long)(off / UKP_ARCH_RET_STUB_SIZE);
}
NOKPROBE_SYMBOL(arch_ret_stub_index);

/* CIE: code alignment 1, data alignment -8, return address in %rip; the
 * CFA is %rsp (a stub runs after the `ret` that popped the slot); for
 * libgcc %rsp + 8 with the caller's %rsp at CFA - 8 (see above). */
static const struct arch_cfi x86_ret_cfi = {
	.ra_column = DWARF_RIP,
	.code_align = 1,
	.data_align = -8,
	.cie_len = 3,
	.cie_insns = { DW_CFA_def_cfa, DWARF_RSP, 0 },
	.gcc_cie_len = 6,
	.gcc_cie_insns = { DW_CFA_def_cfa, DWARF_RSP, 8, DW_CFA_val_offset, DWARF_RSP, 1 },
};

const struct arch_cfi *arch_ret_stub_cfi(void)
{
	return &x86_ret_cfi;
}

size_t arch_ret_stub_fde(uintptr_t stubs, unsigned int i, const struct ukp_ret_entry *e,
			 uintptr_t *start, size_t *len, uint8_t *insns)
{
	uint64_t at = (uintptr_t)&e->ret;

	*start = stubs + (uintptr_t)i * UKP_ARCH_RET_STUB_SIZE + FDE_FROM;
	*len = FDE_TO - FDE_FROM;
	/* %rip = *(&e->ret) */
	insns[0] = DW_CFA_val_expression;
	insns[1] = DWARF_RIP;
	insns[2] = 10;
	insns[3] = DW_OP_const8u;
	memcpy(insns + 4, &at, 8);
	insns[12] = DW_OP_deref;
	return 13;
}

uint16_t arch_elf_machine(void)
{
	return EM_X86_64;
}
