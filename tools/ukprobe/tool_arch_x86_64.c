// SPDX-License-Identifier: MIT
/*
 * tool_arch_x86_64.c - the ukprobe tool's x86-64 back end (tool_arch.h):
 * lengths from Zydis, the tool's only includer of <Zydis/Zydis.h>.
 */
#include <errno.h>
#include <string.h>

#include <Zydis/Zydis.h>

#include "tool_arch.h"

int tool_insn_len(const uint8_t *code, size_t avail)
{
	static ZydisDecoder dec;
	static int ready;
	ZydisDecodedInstruction insn;

	/* Idempotent: two threads initialising it write the same bytes. */
	if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
		ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
		__atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
	}
	if (ZYAN_FAILED(ZydisDecoderDecodeInstruction(&dec, NULL, code, avail, &insn)))
		return -EILSEQ;
	return insn.length;
}

size_t tool_entry_skip(const uint8_t *code, size_t avail, const char **what)
{
	static const uint8_t endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };	/* endbr64 */

	if (avail >= sizeof(endbr64) && !memcmp(code, endbr64, sizeof(endbr64))) {
		if (what)
			*what = "endbr64";
		return sizeof(endbr64);
	}
	return 0;
}
