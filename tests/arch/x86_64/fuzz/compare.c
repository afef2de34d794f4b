// SPDX-License-Identifier: MIT
/*
 * compare.c - what must agree between two runs of a sequence: the final
 * state (general registers, flags, %mxcsr, vector and opmask registers,
 * the scratch and RIP-relative data, the live stack), and the registers a
 * probe handler saw against the single-step trace of the native run.
 */
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include "fuzz.h"

/* TF is the tracer's own; RF is never ours to compare. */
#define FLAGS_IGNORED	(0x100ul | 0x10000ul)

static const char *const gpr_name[16] = {
	"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
};

static void add(struct fuzz_diff *d, const char *fmt, ...)
{
	size_t n = strlen(d->what);
	va_list ap;

	if (n + 1 >= sizeof(d->what))
		return;
	va_start(ap, fmt);
	vsnprintf(d->what + n, sizeof(d->what) - n, fmt, ap);
	va_end(ap);
}

static int cmp_bytes(struct fuzz_diff *d, const char *what, const uint8_t *a,
		     const uint8_t *b, size_t n, long base)
{
	for (size_t i = 0; i < n; i++) {
		if (a[i] == b[i])
			continue;
		size_t j = i;

		while (j < n && a[j] != b[j])
			j++;
		add(d, "%s[%+ld..%+ld) differs (native %02x, probed %02x); ", what,
		    base + (long)i, base + (long)j, a[i], b[i]);
		return 1;
	}
	return 0;
}

int fuzz_compare_final(const struct fuzz_seq *s, const struct fuzz_result *a,
		       const struct fuzz_result *b, struct fuzz_diff *d)
{
	const struct fuzz_state *x = &a->out, *y = &b->out;
	int bad = 0, vw = fuzz_avx512 ? 64 : 32, nv = fuzz_avx512 ? 32 : 16;
	uintptr_t keep = FUZZ_ENTRY_SP - FUZZ_STACK_KEEP_BELOW, lo;

	(void)s;
	for (int i = 0; i < 16; i++) {
		if (x->gpr[i] != y->gpr[i]) {
			add(d, "%s: native %#lx, probed %#lx; ", gpr_name[i],
			    (unsigned long)x->gpr[i], (unsigned long)y->gpr[i]);
			bad = 1;
		}
	}
	if ((x->flags ^ y->flags) & ~FLAGS_IGNORED) {
		add(d, "flags: native %#lx, probed %#lx; ", (unsigned long)x->flags,
		    (unsigned long)y->flags);
		bad = 1;
	}
	if (x->mxcsr != y->mxcsr) {
		add(d, "mxcsr: native %#x, probed %#x; ", x->mxcsr, y->mxcsr);
		bad = 1;
	}
	for (int i = 0; i < nv; i++) {
		if (memcmp(x->vec[i], y->vec[i], (size_t)vw)) {
			int j = 0;

			while (x->vec[i][j] == y->vec[i][j])
				j++;
			add(d, "%cmm%d byte %d: native %02x, probed %02x; ", fuzz_avx512 ? 'z' : 'y',
			    i, j, x->vec[i][j], y->vec[i][j]);
			bad = 1;
		}
	}
	for (int i = 0; fuzz_avx512 && i < 8; i++) {
		if (x->k[i] != y->k[i]) {
			add(d, "k%d: native %#lx, probed %#lx; ", i, (unsigned long)x->k[i],
			    (unsigned long)y->k[i]);
			bad = 1;
		}
	}
	bad |= cmp_bytes(d, "scratch", a->scratch, b->scratch, sizeof(a->scratch), 0);
	bad |= cmp_bytes(d, "ripdata", a->ripdata, b->ripdata, sizeof(a->ripdata), 0);
	/* The stack that is live at the end: the red zone below the entry
	 * %rsp and everything above, and what is still pushed. */
	lo = FUZZ_ENTRY_SP - FUZZ_REDZONE;
	if (x->gpr[4] < lo && x->gpr[4] >= keep)
		lo = x->gpr[4];
	bad |= cmp_bytes(d, "stack(E)", a->stack + (lo - keep), b->stack + (lo - keep),
			 FUZZ_STACK_KEEP - (lo - keep), (long)(lo - FUZZ_ENTRY_SP));
	return bad;
}

/* The registers a handler can be expected to see (not orig_ax, cs, ss). */
static bool regs_equal(const struct pt_regs *a, const struct pt_regs *b, char *why, size_t len)
{
#define R(f) { #f, offsetof(struct pt_regs, f) }
	static const struct { const char *name; size_t off; } regs[] = {
		R(ax), R(cx), R(dx), R(bx), R(sp), R(bp), R(si), R(di), R(r8), R(r9),
		R(r10), R(r11), R(r12), R(r13), R(r14), R(r15), R(ip), R(flags),
	};
#undef R
	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++) {
		unsigned long u = *(const unsigned long *)((const char *)a + regs[i].off);
		unsigned long v = *(const unsigned long *)((const char *)b + regs[i].off);

		if (regs[i].off == offsetof(struct pt_regs, flags)) {
			u &= ~FLAGS_IGNORED;
			v &= ~FLAGS_IGNORED;
		}
		if (u != v) {
			snprintf(why, len, "%s: expected %#lx, handler saw %#lx", regs[i].name, u, v);
			return false;
		}
	}
	return true;
}

int fuzz_compare_faults(const struct fuzz_result *a, const struct fuzz_result *b,
			struct fuzz_diff *d)
{
	char why[160];

	for (unsigned int i = 0; i < a->nfaults && i < b->nfaults; i++) {
		const struct fuzz_fault *x = &a->faults[i], *y = &b->faults[i];

		if (x->sig != y->sig || x->code != y->code || x->addr != y->addr) {
			add(d, "fault %u: the program's handler got signal %d code %d addr %#lx, "
			    "not %d/%d/%#lx; ", i, y->sig, y->code, (unsigned long)y->addr, x->sig,
			    x->code, (unsigned long)x->addr);
			return 1;
		}
		if (!regs_equal(&x->regs, &y->regs, why, sizeof(why))) {
			add(d, "fault %u (signal %d): the program's handler saw %s; ", i, y->sig, why);
			return 1;
		}
	}
	if (a->nfaults != b->nfaults) {
		add(d, "the program's handler saw %u faults, not %u; ", b->nfaults, a->nfaults);
		return 1;
	}
	return 0;
}

int fuzz_compare_pre(const struct fuzz_result *a, const struct fuzz_result *b,
		     struct fuzz_diff *d)
{
	unsigned int i = 0, j = 0;
	char why[160];

	if (a->rec_overflow || b->rec_overflow)
		return 0;
	for (;; i++, j++) {
		while (i < a->nrec && a->rec[i].post)
			i++;
		while (j < b->nrec && b->rec[j].post)
			j++;
		if (i == a->nrec || j == b->nrec)
			break;
		if (a->rec[i].idx != b->rec[j].idx) {
			add(d, "pre hit %u: insn %u in the reference, insn %u here; ", j,
			    a->rec[i].idx, b->rec[j].idx);
			d->insn = a->rec[i].idx;
			return 1;
		}
		if (!regs_equal(&a->rec[i].regs, &b->rec[j].regs, why, sizeof(why))) {
			add(d, "insn %u pre_handler (hit %u): %s; ", b->rec[j].idx, j, why);
			d->insn = b->rec[j].idx;
			return 1;
		}
	}
	while (i < a->nrec && a->rec[i].post)
		i++;
	while (j < b->nrec && b->rec[j].post)
		j++;
	if (i != a->nrec || j != b->nrec) {
		add(d, "more pre handler calls %s; ", i != a->nrec ? "in the reference" : "here");
		return 1;
	}
	return 0;
}

int fuzz_compare_records(const struct fuzz_seq *s, const struct fuzz_result *t,
			 const struct fuzz_result *r, bool post, struct fuzz_diff *d)
{
	unsigned int j = 0;
	char why[160];

	(void)s;
	if (r->rec_overflow || t->rec_overflow)
		return 0;	/* too long to say: the final state still counts */
	for (unsigned int k = 0; k < t->nrec; k++) {
		const struct fuzz_rec *e = &t->rec[k], *h;

		if (e->idx == FUZZ_REC_EXIT)
			break;
		if (!r->probed[e->idx])
			continue;
		if (j >= r->nrec) {
			add(d, "insn %u: executed (trace entry %u) but its pre_handler never ran; ",
			    e->idx, k);
			d->insn = e->idx;
			return 1;
		}
		h = &r->rec[j++];
		if (h->idx != e->idx || h->post) {
			add(d, "hit %u: expected the pre_handler of insn %u, got the %s_handler of insn %u; ",
			    j - 1, e->idx, h->post ? "post" : "pre", h->idx);
			d->insn = e->idx;
			return 1;
		}
		if (!regs_equal(&e->regs, &h->regs, why, sizeof(why))) {
			add(d, "insn %u pre_handler (hit %u): %s; ", e->idx, j - 1, why);
			d->insn = e->idx;
			return 1;
		}
		if (!post || e->post == FUZZ_REC_FAULTED)
			continue;	/* (a step that faults ends without one) */
		if (k + 1 >= t->nrec || j >= r->nrec) {
			add(d, "insn %u: no post_handler; ", e->idx);
			d->insn = e->idx;
			return 1;
		}
		h = &r->rec[j++];
		if (h->idx != e->idx || !h->post) {
			add(d, "hit %u: expected the post_handler of insn %u, got the %s_handler of insn %u; ",
			    j - 1, e->idx, h->post ? "post" : "pre", h->idx);
			d->insn = e->idx;
			return 1;
		}
		if (!regs_equal(&t->rec[k + 1].regs, &h->regs, why, sizeof(why))) {
			add(d, "insn %u post_handler (hit %u): %s; ", e->idx, j - 1, why);
			d->insn = e->idx;
			return 1;
		}
	}
	if (j != r->nrec) {
		add(d, "%u handler calls more than executed instructions (first: insn %u); ",
		    r->nrec - j, r->rec[j].idx);
		d->insn = r->rec[j].idx;
		return 1;
	}
	return 0;
}
