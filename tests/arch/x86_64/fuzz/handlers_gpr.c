// SPDX-License-Identifier: MIT
/*
 * handlers_gpr.c - the probe handlers of the fuzzer: they record which
 * probe hit and the registers they were given, into the run's shared
 * result.  Built with -mgeneral-regs-only and no sanitizer (fuzz.mk), so
 * that they may be registered with KPROBE_FLAG_GPR_ONLY: the detour then
 * saves no vector state, and these must touch none (no memcpy: the copy is
 * a loop the compiler is told not to turn into one).
 */
#include <stddef.h>

#include "fuzz.h"

struct fuzz_result *fuzz_cur_result;
struct kprobe fuzz_kprobes[FUZZ_MAX_INSN];

static void fuzz_record(struct kprobe *p, const struct pt_regs *regs, int post)
{
	struct fuzz_result *r = fuzz_cur_result;
	unsigned int n = r->nrec;
	const unsigned long *src = (const unsigned long *)regs;
	unsigned long *dst;

	if (n >= FUZZ_MAX_REC) {
		r->rec_overflow = true;
		return;
	}
	r->rec[n].idx = (uint16_t)(p - fuzz_kprobes);
	r->rec[n].post = (uint8_t)post;
	dst = (unsigned long *)&r->rec[n].regs;
	for (size_t i = 0; i < sizeof(*regs) / sizeof(unsigned long); i++)
		dst[i] = src[i];
	r->nrec = n + 1;
}

int fuzz_pre_handler(struct kprobe *p, struct pt_regs *regs)
{
	fuzz_record(p, regs, 0);
	return 0;
}

unsigned long fuzz_mod_flags[FUZZ_MAX_INSN];
int8_t fuzz_mod_word[FUZZ_MAX_INSN];
unsigned long fuzz_mod_xor[FUZZ_MAX_INSN];

int fuzz_mod_pre_handler(struct kprobe *p, struct pt_regs *regs)
{
	long i = p - fuzz_kprobes;

	fuzz_record(p, regs, 0);
	regs->flags ^= fuzz_mod_flags[i];
	if (fuzz_mod_word[i] >= 0)
		((unsigned long *)regs)[fuzz_mod_word[i]] ^= fuzz_mod_xor[i];
	return 0;
}

void fuzz_post_handler(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	(void)flags;
	fuzz_record(p, regs, 1);
}
