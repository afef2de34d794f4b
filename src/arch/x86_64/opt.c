// SPDX-License-Identifier: MIT
/*
 * opt.c - x86-64 jump optimization (arch/x86/kernel/kprobes/opt.c).
 *
 * The region of instructions under a 5-byte "jmp rel32" at the probe is
 * copied, relocated, into a detour buffer within rel32 reach:
 *
 *   header (32 bytes): ninsn, then (offset in region, offset in code) pairs
 *   code:  lea -0x80(%rsp),%rsp; call *entry(%rip); jmp 1f; .quad point;
 *       1: lea 0x80(%rsp),%rsp; <relocated region>; jmp <region end>;
 *          entry: .quad ukp_optprobe_entry[_gpr]
 *
 * can_optimize(), as the kernel's: the region lies inside one function; no
 * jump in the whole function lands inside the region (past its first
 * byte); the function has no indirect jump (a jump table could land
 * anywhere); the region holds no call (a return into a freed detour), no
 * system call, no endbr64 (an indirect branch target) past its first byte
 * (the kernel refuses one at the start too, for IBT, which Linux does not
 * enforce in user space: we do when it does) and only instructions that
 * run unchanged elsewhere.  A single instruction of five
 * bytes or more needs none of the function checks: no thread can be inside
 * one instruction (the patchable-entry nop is the common case).
 */
#include <cpuid.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "arch.h"
#include "insn.h"
#include "prime.h"
#include "cet.h"

#define JMP32_LEN	5

/* The prime stubs (prime.h, opt_entry.S) and who has each. */
extern uintptr_t ukp_prime_cont[2 * PRIME_STUBS] __attribute__((visibility("hidden")));
static uint64_t x86_prime_used[2 * PRIME_STUBS / 64];	/* ukp_kprobe_mutex */

/* A free stub of the kind (@gpr), or -1: the detour then does not prime. */
static int x86_prime_alloc(bool gpr)
{
	unsigned int first = gpr ? PRIME_STUBS / 64 : 0;

	for (unsigned int w = first; w < first + PRIME_STUBS / 64; w++)
		if (~x86_prime_used[w]) {
			int b = __builtin_ctzll(~x86_prime_used[w]);

			x86_prime_used[w] |= 1ull << b;
			return (int)(w * 64 + (unsigned int)b);
		}
	return -1;
}

static void x86_prime_free(int k)
{
	if (k >= 0)
		x86_prime_used[k / 64] &= ~(1ull << (k % 64));
}

extern const char ukp_optprobe_entry[], ukp_optprobe_entry_gpr[];
extern const char ukp_optprobe_entry_end[];

/* Read by opt_entry.S: how to save the extended state. */
UKP_HIDDEN unsigned long x86_xsave_size = 512;
UKP_HIDDEN unsigned long x86_xsave_mask;
UKP_HIDDEN unsigned int x86_xsave_kind;	/* 0 fxsave, 1 xsave, 2 xsavec */
/* Read by trampolines.S: the width of %xmm0/%xmm1 to keep at a return
 * (0 SSE, 1 AVX, 2 AVX-512). */
UKP_HIDDEN unsigned int x86_retvec_kind;
/* The kernel enforces indirect branch tracking on this process: an
 * indirect call must land on an endbr64, not on a jmp put in its place. */
static bool x86_user_ibt;

/* Read by trampolines.S for pt_regs (Linux's user selectors until
 * arch_init() reads them). */
UKP_HIDDEN unsigned long x86_user_cs = 0x33, x86_user_ss = 0x2b;

void arch_init(void)
{
	static bool done;
	unsigned int a, b, c, d;

	if (done)
		return;
	done = true;
	x86_user_ibt = x86_cet_feature("ibt");
	{
		unsigned short cs, ss;

		__asm__("movw %%cs, %0; movw %%ss, %1" : "=r"(cs), "=r"(ss));
		x86_user_cs = cs;
		x86_user_ss = ss;
	}
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE))
		return;		/* fxsave, 512 bytes */
	{
		unsigned int lo, hi;

		__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
		x86_xsave_mask = ((unsigned long)hi << 32) | lo;
	}
	if ((x86_xsave_mask & 0x6) == 0x6)		/* SSE + AVX state */
		x86_retvec_kind = 1;
	if ((x86_xsave_mask & 0xe6) == 0xe6)		/* + opmask, ZMM */
		x86_retvec_kind = 2;
	__cpuid_count(0xd, 0, a, b, c, d);
	x86_xsave_size = b;	/* for the features enabled in XCR0 */
	x86_xsave_kind = 1;
	__cpuid_count(0xd, 1, a, b, c, d);
	if (a & (1u << 1))	/* XSAVEC: compacted, skips unused state */
		x86_xsave_kind = 2;
	x86_xsave_size = (x86_xsave_size + 63) & ~63ul;
}

/* Only nops (90, 66 90, 0f 1f /0 with prefixes): what gcc's
 * -fpatchable-function-entry or -mnop-mcount leave at an entry. */
static bool x86_all_nops(const uint8_t *code, size_t len)
{
	for (size_t off = 0; off < len;) {
		size_t p = off;
		int l = x86_insn_length(code + off, len - off);

		if (l <= 0)
			return false;
		while (p < off + (size_t)l && code[p] == 0x66)
			p++;
		if (!(code[p] == 0x90 || (code[p] == 0x0f && p + 1 < len && code[p + 1] == 0x1f)))
			return false;
		off += (size_t)l;
	}
	return true;
}

/*
 * What the whole function says about any region in it: whether it may be
 * optimized at all (no indirect jump, every byte decodes) and where its
 * direct branches land, sorted.  Kept for the function the optimizer's
 * pass looked at last (a batch often holds many probes in one function,
 * and decoding a function for each costs tens of microseconds), until
 * arch_opt_batch_done().
 */
static struct {
	uintptr_t start;
	size_t len;
	bool valid, refused;
	uintptr_t *targets;
	size_t n, cap;
} x86_fn;

static int x86_cmp_addr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return (x > y) - (x < y);
}

static void x86_fn_add_target(uintptr_t t)
{
	if (x86_fn.refused)
		return;
	if (x86_fn.n == x86_fn.cap) {
		size_t cap = x86_fn.cap ? 2 * x86_fn.cap : 64;
		uintptr_t *p = realloc(x86_fn.targets, cap * sizeof(*p));

		if (!p) {
			x86_fn.refused = true;	/* cannot prove: refuse */
			return;
		}
		x86_fn.targets = p;
		x86_fn.cap = cap;
	}
	x86_fn.targets[x86_fn.n++] = t;
}

static void x86_fn_summarize(const uint8_t *code, uintptr_t start, size_t len)
{
	x86_fn.start = start;
	x86_fn.len = len;
	x86_fn.valid = true;
	x86_fn.refused = false;
	x86_fn.n = 0;
	for (size_t off = 0; off < len && !x86_fn.refused;) {
		struct x86_analysis a;
		int err = x86_insn_analyze(start + off, code + off, len - off, &a);

		if (err == -EILSEQ) {
			x86_fn.refused = true;
			break;
		}
		/* int3 padding and the like decode as refused: fine here. */
		switch (err ? X86_OP_XOL : a.op) {
		case X86_OP_JMP_IND:
			x86_fn.refused = true;
			break;
		case X86_OP_JMP_REL:
		case X86_OP_JCC:
		case X86_OP_LOOP:
		case X86_OP_JRCXZ:
		case X86_OP_CALL_REL:
			x86_fn_add_target(a.target);
			break;
		default:
			break;
		}
		off += a.len ? a.len : 1;
	}
	if (!x86_fn.refused && x86_fn.n)
		qsort(x86_fn.targets, x86_fn.n, sizeof(*x86_fn.targets), x86_cmp_addr);
}

void arch_opt_batch_done(void)
{
	free(x86_fn.targets);
	memset(&x86_fn, 0, sizeof(x86_fn));
}

/* The whole function: no jump into (addr, addr + rlen), no indirect jump. */
static int x86_check_function(const uint8_t *code, uintptr_t start, size_t len,
			      uintptr_t addr, size_t rlen)
{
	size_t lo = 0, hi;

	if (!x86_fn.valid || x86_fn.start != start || x86_fn.len != len)
		x86_fn_summarize(code, start, len);
	if (x86_fn.refused)
		return -EINVAL;
	/* The first target above addr: inside the region? */
	hi = x86_fn.n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x86_fn.targets[mid] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < x86_fn.n && x86_fn.targets[lo] < addr + rlen ? -EINVAL : 0;
}

static int x86_put_rel32_at(uint8_t *p, uintptr_t next, uintptr_t to)
{
	int64_t d = (int64_t)(to - next);
	int32_t d32 = (int32_t)d;

	if (d != d32)
		return -ERANGE;
	memcpy(p, &d32, 4);
	return 0;
}

/* Relocate one instruction of the region to run at @at; its bytes go to
 * @out.  Returns the length written or a negative errno. */
static int x86_relocate(const struct x86_analysis *a, const uint8_t *bytes,
			uintptr_t at, uint8_t *out)
{
	switch (a->op) {
	case X86_OP_XOL:
		memcpy(out, bytes, a->len);
		if (a->riprel_off >= 0 &&
		    x86_put_rel32_at(out + a->riprel_off, at + a->len, a->riprel_target))
			return -ERANGE;
		return a->len;
	case X86_OP_RET:
		memcpy(out, bytes, a->len);
		return a->len;
	case X86_OP_JMP_REL:
		out[0] = 0xe9;					/* jmp rel32 */
		return x86_put_rel32_at(out + 1, at + 5, a->target) ? -ERANGE : 5;
	case X86_OP_JCC:
		out[0] = 0x0f;
		out[1] = (uint8_t)(0x80 | a->cond);		/* jcc rel32 */
		return x86_put_rel32_at(out + 2, at + 6, a->target) ? -ERANGE : 6;
	default:
		return -EINVAL;		/* call, loop, jrcxz, indirect, syscall */
	}
}

int arch_prepare_optimized(struct ukp_point *pt, struct arch_optinsn *op,
			   const uint8_t *code, uintptr_t start, size_t len,
			   bool whole_function, bool func_entry, bool gpr_only,
			   bool prime)
{
	struct x86_analysis an[X86_OPT_MAX_INSN];
	uint8_t buf[4 * UKP_ARCH_SLOT_SIZE];
	size_t base = pt->addr - start, rlen = 0;
	unsigned int n = 0;
	struct ukp_slot_info info = { 0 };
	uintptr_t lo = 0x10000, hi = UINTPTR_MAX, det, c;
	const uintptr_t reach = 0x7fffffffu - 4 * UKP_ARCH_SLOT_SIZE;
	uintptr_t entry = (uintptr_t)(gpr_only ? ukp_optprobe_entry_gpr : ukp_optprobe_entry);
	size_t pos, prime_jmp = 0, back;
	int err, k = -1;

	memset(op, 0, sizeof(*op));
	op->prime = -1;
	/* The region: whole instructions covering the jump. */
	while (rlen < JMP32_LEN) {
		if (n == X86_OPT_MAX_INSN || base + rlen >= len)
			return -EINVAL;
		err = x86_insn_analyze(pt->addr + rlen, code + base + rlen,
				       len - base - rlen, &an[n]);
		if (err)
			return -EINVAL;
		/* An indirect branch may land on an endbr64: inside the
		 * region it would land in the jmp's bytes; at its start on
		 * the jmp, which only IBT would refuse. */
		if (x86_is_endbr64(code + base + rlen, len - base - rlen) &&
		    (rlen || x86_user_ibt))
			return -EINVAL;
		rlen += an[n].len;
		n++;
	}
	if (n > 1 && !whole_function)
		return -EAGAIN;
	if (n > 1 && x86_check_function(code, start, len, pt->addr, rlen))
		return -EINVAL;
	for (unsigned int i = 0; i < n; i++) {
		uintptr_t t = an[i].target;

		/* A jump back to the probed instruction re-enters the probe;
		 * one to inside the region would land in the jmp's bytes. */
		if ((an[i].op == X86_OP_JMP_REL || an[i].op == X86_OP_JCC) &&
		    t > pt->addr && t < pt->addr + rlen)
			return -EINVAL;
	}

	/* The detour goes where every rel32 in it reaches. */
	{
		uintptr_t pts[2 + X86_OPT_MAX_INSN];
		unsigned int np = 0;

		pts[np++] = pt->addr;
		pts[np++] = pt->addr + rlen;
		for (unsigned int i = 0; i < n; i++) {
			if (an[i].riprel_off >= 0)
				pts[np++] = an[i].riprel_target;
			else if (an[i].op == X86_OP_JMP_REL || an[i].op == X86_OP_JCC)
				pts[np++] = an[i].target;
		}
		for (unsigned int i = 0; i < np; i++) {
			uintptr_t l = pts[i] > reach ? pts[i] - reach : 0;
			uintptr_t h = pts[i] < UINTPTR_MAX - reach ? pts[i] + reach : UINTPTR_MAX;

			if (l > lo)
				lo = l;
			if (h < hi)
				hi = h;
		}
		if (lo >= hi)
			return -EINVAL;
	}

	/* Build it. */
	memset(buf, 0xcc, sizeof(buf));
	op->nslots = 2;
	info.addr = pt->addr;
	info.len = (uint8_t)rlen;
	info.detour = 1;
	det = ukp_slot_alloc_n(lo, hi, pt->addr, 4, &info);
	if (!det)
		return -ENOMEM;
	op->nslots = 4;
	c = det + X86_OPT_HEADER;
	pos = X86_OPT_HEADER;
	buf[pos++] = 0x48; buf[pos++] = 0x8d; buf[pos++] = 0x64;	/* lea -0x80(%rsp),%rsp */
	buf[pos++] = 0x24; buf[pos++] = 0x80;
	buf[pos++] = 0xff; buf[pos++] = 0x15;				/* call *entry(%rip) */
	pos += 4;							/* (filled below) */
	/* The entry returns here, to a correctly predicted return address,
	 * and reads the point and T from after this short jump. */
	if (prime)
		k = x86_prime_alloc(gpr_only);
	if (k >= 0)
		op->ret_tramp = (uintptr_t)ukp_prime_stubs + (uintptr_t)k * PRIME_STUB_SIZE +
				PRIME_T_OFFSET;
	buf[pos++] = 0xeb; buf[pos++] = 0x10;				/* jmp 1f */
	memcpy(buf + pos, &pt, sizeof(pt));				/* .quad point */
	pos += 8;
	memcpy(buf + pos, &op->ret_tramp, 8);				/* .quad T; 1: */
	pos += 8;
	if (k >= 0) {
		prime_jmp = pos;
		buf[pos++] = 0xff; buf[pos++] = 0x25;			/* jmp *stub(%rip) */
		pos += 4;						/* (filled below) */
	}
	back = pos;							/* 2: */
	buf[pos++] = 0x48; buf[pos++] = 0x8d; buf[pos++] = 0xa4;	/* lea 0x80(%rsp),%rsp */
	buf[pos++] = 0x24; buf[pos++] = 0x80; buf[pos++] = 0;
	buf[pos++] = 0; buf[pos++] = 0;
	op->resume = (uint8_t)(pos - X86_OPT_HEADER);
	buf[0] = (uint8_t)n;
	for (unsigned int i = 0, off = 0; i < n; i++) {
		int w;

		buf[1 + 2 * i] = (uint8_t)off;
		buf[2 + 2 * i] = (uint8_t)(pos - X86_OPT_HEADER);
		w = x86_relocate(&an[i], code + base + off, det + pos, buf + pos);
		if (w < 0) {
			err = -EINVAL;
			goto undo;
		}
		pos += (size_t)w;
		off += an[i].len;
	}
	buf[pos] = 0xe9;						/* jmp region end */
	if (x86_put_rel32_at(buf + pos + 1, det + pos + 5, pt->addr + rlen)) {
		err = -EINVAL;
		goto undo;
	}
	pos += 5;
	pos = (pos + 7) & ~(size_t)7;
	memcpy(buf + pos, &entry, 8);					/* entry: */
	x86_put_rel32_at(buf + X86_OPT_HEADER + 7, c + 11, det + pos);
	pos += 8;
	if (k >= 0) {
		uintptr_t stub = (uintptr_t)ukp_prime_stubs + (uintptr_t)k * PRIME_STUB_SIZE;

		memcpy(buf + pos, &stub, 8);				/* stub: */
		x86_put_rel32_at(buf + prime_jmp + 2, det + prime_jmp + 6, det + pos);
		pos += 8;
		/* The stub's way back, in place before the detour can run. */
		ukp_prime_cont[k] = det + back;
	}
	if (pos > sizeof(buf)) {
		err = -EINVAL;
		goto undo;
	}
	err = ukp_text_poke(det, buf, sizeof(buf));
	if (err)
		goto undo;
	op->prime = (int16_t)k;
	op->detour = det;
	op->rlen = (uint8_t)rlen;
	op->ninsn = (uint8_t)n;
	op->single = n == 1;
	/* A patchable-entry nop (-fpatchable-function-entry, -mnop-mcount):
	 * the kernel's [FTRACE] probes. */
	op->ftrace = func_entry && x86_all_nops(code + base, rlen);
	memcpy(op->orig, code + base, rlen);
	return 0;
undo:
	ukp_slot_free_unused_n(det, op->nslots);
	x86_prime_free(k);
	return err;
}

void arch_release_optimized(struct arch_optinsn *op, bool used)
{
	if (!op->detour)
		return;
	/* No thread is in the stub (the entry range) nor in the detour any
	 * more: another detour may have it.  Calls in flight still return
	 * to its T, which goes to the same trampoline whoever has it. */
	x86_prime_free(op->prime);
	op->prime = -1;
	if (used)
		ukp_slot_release_n(op->detour, op->nslots);
	else
		ukp_slot_free_unused_n(op->detour, op->nslots);
	op->detour = 0;
}

size_t arch_opt_region_len(const struct arch_optinsn *op)
{
	return op->rlen;
}

bool arch_opt_single(const struct arch_optinsn *op)
{
	return op->single;
}

bool arch_opt_patchable_entry(const struct arch_optinsn *op)
{
	return op->ftrace;
}

uintptr_t arch_opt_resume_ip(const struct arch_optinsn *op)
{
	return op->detour + X86_OPT_HEADER + op->resume;
}
NOKPROBE_SYMBOL(arch_opt_resume_ip);

void arch_opt_detour_range(const struct arch_optinsn *op, uintptr_t *start,
			   uintptr_t *end)
{
	*start = op->detour;
	*end = op->detour + (uintptr_t)op->nslots * UKP_ARCH_SLOT_SIZE;
}

void arch_opt_entry_range(uintptr_t *start, uintptr_t *end)
{
	*start = (uintptr_t)ukp_optprobe_entry_gpr < (uintptr_t)ukp_optprobe_entry ?
		 (uintptr_t)ukp_optprobe_entry_gpr : (uintptr_t)ukp_optprobe_entry;
	*end = (uintptr_t)ukp_optprobe_entry_end;
}

uint8_t arch_opt_original_byte(const struct arch_optinsn *op, size_t i)
{
	return op->orig[i];
}

int arch_optimize_stage1(struct ukp_point *pt, struct arch_optinsn *op)
{
	uint8_t rel[4];
	uintptr_t c = op->detour + X86_OPT_HEADER;

	if (x86_put_rel32_at(rel, pt->addr + JMP32_LEN, c))
		return -ERANGE;
	return ukp_text_poke(pt->addr + 1, rel, 4);
}

int arch_optimize_stage2(struct ukp_point *pt, struct arch_optinsn *op)
{
	static const uint8_t jmp = 0xe9;

	return ukp_text_poke(pt->addr, &jmp, 1);
}

int arch_unoptimize_stage1(struct ukp_point *pt, struct arch_optinsn *op)
{
	static const uint8_t int3 = 0xcc;

	return ukp_text_poke(pt->addr, &int3, 1);
}

int arch_unoptimize_stage2(struct ukp_point *pt, struct arch_optinsn *op)
{
	return ukp_text_poke(pt->addr + 1, op->orig + 1, JMP32_LEN - 1);
}

bool arch_opt_translate(const struct ukp_slot_info *info, uintptr_t slot,
			uintptr_t ip, uintptr_t *orig)
{
	const uint8_t *hdr;
	uintptr_t det;

	if (!info->detour)
		return false;
	det = slot - (uintptr_t)(info->detour - 1) * UKP_ARCH_SLOT_SIZE;
	hdr = (const uint8_t *)det;
	for (unsigned int i = 0; i < hdr[0] && i < X86_OPT_MAX_INSN; i++) {
		if (ip == det + X86_OPT_HEADER + hdr[2 + 2 * i]) {
			*orig = info->addr + hdr[1 + 2 * i];
			return true;
		}
	}
	return false;
}
NOKPROBE_SYMBOL(arch_opt_translate);

uintptr_t arch_opt_copy_ip(const struct arch_optinsn *op, size_t off)
{
	const uint8_t *hdr = (const uint8_t *)op->detour;

	if (off >= op->rlen)
		return 0;
	for (unsigned int i = 0; i < hdr[0] && i < X86_OPT_MAX_INSN; i++)
		if (hdr[1 + 2 * i] == off)
			return op->detour + X86_OPT_HEADER + hdr[2 + 2 * i];
	return 0;
}
NOKPROBE_SYMBOL(arch_opt_copy_ip);
