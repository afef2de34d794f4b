// SPDX-License-Identifier: MIT
/* seq.c - questions about a generated sequence: where its instructions
 * are, and what they are (Zydis's AT&T disassembly). */
#include <Zydis/Zydis.h>

#include "fuzz.h"

int fuzz_insn_at(const struct fuzz_seq *s, size_t off)
{
	unsigned int lo = 0, hi = s->n;

	while (lo < hi) {
		unsigned int mid = (lo + hi) / 2;

		if (s->insn[mid].off == off)
			return (int)mid;
		if (s->insn[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

void fuzz_disasm_insn(const struct fuzz_seq *s, unsigned int i, char *buf, size_t len)
{
	ZydisDisassembledInstruction d;
	const struct fuzz_insn *in = &s->insn[i];
	size_t n = 0;

	for (unsigned int b = 0; b < in->len && n + 4 < len; b++)
		n += (size_t)snprintf(buf + n, len - n, "%02x ", s->code[in->off + b]);
	while (n < 3 * 11 && n + 1 < len)
		buf[n++] = ' ';
	buf[n] = 0;
	if (ZYAN_SUCCESS(ZydisDisassembleATT(ZYDIS_MACHINE_MODE_LONG_64,
					     (uintptr_t)fuzz_arena + in->off,
					     s->code + in->off, in->len, &d)))
		snprintf(buf + n, len - n, "%s", d.text);
}

void fuzz_disasm(const struct fuzz_seq *s, FILE *out, const char *const *mark)
{
	char line[256];

	for (unsigned int i = 0; i < s->n; i++) {
		fuzz_disasm_insn(s, i, line, sizeof(line));
		fprintf(out, "  %3u %4x  %s%s%s\n", i, s->insn[i].off, line,
			mark && mark[i] ? "   <-- " : "", mark && mark[i] ? mark[i] : "");
	}
}
