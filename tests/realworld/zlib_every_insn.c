/* SPDX-License-Identifier: MIT */
/*
 * zlib_every_insn.c - real-world check of the breakpoint engine: a probe on
 * EVERY instruction of Debian's zlib deflate() and inflate() (code nobody
 * here wrote) while the test compresses and decompresses a few MiB.
 *
 *   run A   no probes: reference compressed bytes, call counts.
 *   run B   pre_handler only (the boosted path): counts per probe.
 *   run C   pre_handler + post_handler (the single-step path).
 *   run A'  after unregister_kprobes: code bytes equal the file's again and
 *           the output is the reference's.
 *
 * The workload compresses ~2.1 MiB of text-like data in nine ways (levels
 * 0-9; zlib, gzip with a full header, raw; every flush mode; stored,
 * huffman-only, rle, fixed, filtered; a preset dictionary) in 16 KiB
 * input / 8 KiB output steps, and inflates each stream back in 2 KiB input
 * / 4 KiB output steps (so inflate's slow main loop runs at every chunk's
 * end), checking the output against the input.
 *
 * B and C must produce the reference's compressed bytes and hit each probe
 * the same number of times; the probe on a function's first instruction
 * hits once per call; no instruction is hit more often than its successors
 * (nothing skipped); in C every pre hit has its post hit, and the post
 * handler sees the ip (and return address) the instruction left.  Probes
 * go in by register_kprobes() batches of 256 and every 16th one by one;
 * a refusal fails the test unless the instruction cannot be probed at all
 * (int3, hlt, ud2, ...), and is printed with its disassembly.
 *
 * A second test does the same for crc32_z() and adler32_z() with a small
 * workload of odd lengths and alignments.
 */
#include "../support/ukp_test.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <Zydis/Zydis.h>
#include <zlib.h>

#include <ukprobes.h>

#define say(...) do { fprintf(stderr, __VA_ARGS__); fflush(stderr); } while (0)

/* ------------------------------------------------------------------------ */
/* The probed functions: address, size, bytes from the file, instructions   */
/* ------------------------------------------------------------------------ */

enum flow {
	FLOW_NEXT,	/* falls through to the next instruction */
	FLOW_JCC,	/* next or target */
	FLOW_JMP,	/* direct target */
	FLOW_CALL,	/* direct call: target, returns to next */
	FLOW_ICALL,	/* indirect call: anywhere, returns to next */
	FLOW_ANY,	/* ret, indirect jmp: anywhere */
};

struct insn {
	uintptr_t addr;
	unsigned len;
	enum flow flow;
	uintptr_t target;	/* direct branch/call target, else 0 */
	ZydisMnemonic mnemonic;
	char text[96];
};

struct func {
	const char *name;
	uintptr_t addr;
	size_t size;
	unsigned char *file_bytes;	/* the function's bytes in the ELF file */
	struct insn *insns;
	size_t n;
	size_t first;			/* index of insns[0] in the probe array */
};

struct target {
	struct func *f;
	size_t nf;
	size_t nprobes;
	struct insn **all;		/* nprobes entries, probe order */
	struct func **owner;
};

static ZydisDecoder decoder;
static ZydisFormatter formatter;

static void zydis_init(void)
{
	static bool done;

	if (done)
		return;
	cr_assert_eq(ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64,
				      ZYDIS_STACK_WIDTH_64), ZYAN_STATUS_SUCCESS);
	cr_assert_eq(ZydisFormatterInit(&formatter, ZYDIS_FORMATTER_STYLE_ATT),
		     ZYAN_STATUS_SUCCESS);
	done = true;
}

/*
 * Size from .dynsym via libelf and the bytes of the function in the file
 * (through the PT_LOAD that maps it).  @vaddr is the symbol's st_value.
 */
static void read_from_file(const char *path, const char *name, uint64_t vaddr,
			   size_t *size_out, unsigned char **bytes_out)
{
	cr_assert_neq(elf_version(EV_CURRENT), EV_NONE);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0, "open %s: %s", path, strerror(errno));
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert_not_null(e, "elf_begin %s: %s", path, elf_errmsg(-1));

	/* .dynsym: the symbol's size. */
	size_t size = 0;
	bool found = false;
	for (Elf_Scn *scn = elf_nextscn(e, NULL); scn; scn = elf_nextscn(e, scn)) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t cnt = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t i = 0; i < cnt; i++) {
			GElf_Sym s;
			if (!gelf_getsym(d, (int)i, &s))
				continue;
			const char *sn = elf_strptr(e, sh.sh_link, s.st_name);
			if (sn && GELF_ST_TYPE(s.st_info) == STT_FUNC &&
			    s.st_shndx != SHN_UNDEF && strcmp(sn, name) == 0 &&
			    s.st_value == vaddr) {
				size = s.st_size;
				found = true;
				break;
			}
		}
	}
	cr_assert(found, "%s not in %s's .dynsym at 0x%lx", name, path,
		  (unsigned long)vaddr);

	/* The bytes, through the program header that maps them. */
	size_t phnum;
	cr_assert_eq(elf_getphdrnum(e, &phnum), 0);
	unsigned char *bytes = NULL;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr < ph.p_vaddr || vaddr + size > ph.p_vaddr + ph.p_filesz)
			continue;
		bytes = malloc(size);
		cr_assert_not_null(bytes);
		ssize_t r = pread(fd, bytes, size,
				  (off_t)(ph.p_offset + (vaddr - ph.p_vaddr)));
		cr_assert_eq(r, (ssize_t)size, "pread %s", path);
		break;
	}
	cr_assert_not_null(bytes, "%s: no PT_LOAD holds %s", path, name);
	elf_end(e);
	close(fd);
	*size_out = size;
	*bytes_out = bytes;
}

static void describe(uintptr_t addr, const ZydisDecodedInstruction *in,
		     const ZydisDecodedOperand *ops, char *buf, size_t len)
{
	if (ZYAN_FAILED(ZydisFormatterFormatInstruction(&formatter, in, ops,
			in->operand_count_visible, buf, len, addr, NULL)))
		snprintf(buf, len, "(unformattable)");
}

static void load_func(struct func *f, const char *name)
{
	zydis_init();
	void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_NOLOAD);
	cr_assert_not_null(h, "libz.so.1 is not loaded: %s", dlerror());
	void *sym = dlsym(h, name);
	cr_assert_not_null(sym, "dlsym(%s): %s", name, dlerror());

	Dl_info info;
	const ElfW(Sym) *es = NULL;
	cr_assert(dladdr1(sym, &info, (void **)&es, RTLD_DL_SYMENT),
		  "dladdr1(%s)", name);
	cr_assert_not_null(es);
	cr_assert_str_eq(info.dli_sname, name);
	cr_assert_eq((uintptr_t)info.dli_saddr, (uintptr_t)sym);

	uint64_t vaddr = (uintptr_t)sym - (uintptr_t)info.dli_fbase;
	size_t fsize;
	read_from_file(info.dli_fname, name, vaddr, &fsize, &f->file_bytes);
	cr_assert_eq(fsize, es->st_size,
		     "%s: .dynsym says 0x%zx bytes, dladdr1 0x%zx", name, fsize,
		     (size_t)es->st_size);
	cr_assert_gt(fsize, 0);

	f->name = name;
	f->addr = (uintptr_t)sym;
	f->size = fsize;
	cr_assert_eq(memcmp((void *)f->addr, f->file_bytes, f->size), 0,
		     "%s: bytes in memory differ from %s before any probe",
		     name, info.dli_fname);

	/* Every instruction boundary, walking from the start. */
	f->insns = calloc(f->size, sizeof(*f->insns));
	cr_assert_not_null(f->insns);
	f->n = 0;
	size_t off = 0;
	while (off < f->size) {
		ZydisDecodedInstruction in;
		ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
		uintptr_t a = f->addr + off;
		ZyanStatus st = ZydisDecoderDecodeFull(&decoder,
				f->file_bytes + off, f->size - off, &in, ops);
		cr_assert(ZYAN_SUCCESS(st), "%s+0x%zx: Zydis cannot decode",
			  name, off);
		struct insn *x = &f->insns[f->n++];
		x->addr = a;
		x->len = in.length;
		x->mnemonic = in.mnemonic;
		x->flow = FLOW_NEXT;
		x->target = 0;
		describe(a, &in, ops, x->text, sizeof(x->text));

		bool rel_imm = in.operand_count_visible > 0 &&
			ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
			ops[0].imm.is_relative;
		ZyanU64 t = 0;
		if (rel_imm)
			cr_assert(ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&in,
					&ops[0], a, &t)));
		switch (in.meta.category) {
		case ZYDIS_CATEGORY_COND_BR:	/* jcc, loop, jrcxz */
			x->flow = rel_imm ? FLOW_JCC : FLOW_ANY;
			x->target = (uintptr_t)t;
			break;
		case ZYDIS_CATEGORY_UNCOND_BR:
			x->flow = rel_imm ? FLOW_JMP : FLOW_ANY;
			x->target = (uintptr_t)t;
			break;
		case ZYDIS_CATEGORY_CALL:
			x->flow = rel_imm ? FLOW_CALL : FLOW_ICALL;
			x->target = (uintptr_t)t;
			break;
		case ZYDIS_CATEGORY_RET:
		case ZYDIS_CATEGORY_INTERRUPT:
		case ZYDIS_CATEGORY_SYSTEM:
			x->flow = FLOW_ANY;
			break;
		default:
			break;
		}
		off += in.length;
	}
	cr_assert_eq(off, f->size, "%s: the last instruction runs past the "
		     "symbol's end (0x%zx > 0x%zx)", name, off, f->size);
}

static void target_init(struct target *t, const char *const *names, size_t nf)
{
	memset(t, 0, sizeof(*t));
	t->f = calloc(nf, sizeof(*t->f));
	t->nf = nf;
	for (size_t i = 0; i < nf; i++) {
		load_func(&t->f[i], names[i]);
		t->f[i].first = t->nprobes;
		t->nprobes += t->f[i].n;
	}
	t->all = calloc(t->nprobes, sizeof(*t->all));
	t->owner = calloc(t->nprobes, sizeof(*t->owner));
	for (size_t i = 0; i < nf; i++)
		for (size_t j = 0; j < t->f[i].n; j++) {
			t->all[t->f[i].first + j] = &t->f[i].insns[j];
			t->owner[t->f[i].first + j] = &t->f[i];
		}
	for (size_t i = 0; i < nf; i++)
		say("  %-10s %p  0x%zx bytes  %zu instructions\n", t->f[i].name,
		    (void *)t->f[i].addr, t->f[i].size, t->f[i].n);
}

static void target_free(struct target *t)
{
	for (size_t i = 0; i < t->nf; i++) {
		free(t->f[i].file_bytes);
		free(t->f[i].insns);
	}
	free(t->f);
	free(t->all);
	free(t->owner);
	memset(t, 0, sizeof(*t));
}

static void check_code_is_original(const struct target *t, const char *when)
{
	for (size_t i = 0; i < t->nf; i++) {
		const struct func *f = &t->f[i];
		const unsigned char *mem = (const unsigned char *)f->addr;
		size_t bad = 0, first_bad = 0;
		for (size_t k = 0; k < f->size; k++)
			if (mem[k] != f->file_bytes[k] && bad++ == 0)
				first_bad = k;
		cr_assert_eq(bad, 0, "%s: %s's code differs from the file in "
			     "%zu bytes, first at +0x%zx (0x%02x, file 0x%02x)",
			     when, f->name, bad, first_bad, mem[first_bad],
			     f->file_bytes[first_bad]);
	}
}

/* ------------------------------------------------------------------------ */
/* Probes and handlers                                                      */
/* ------------------------------------------------------------------------ */

/* The run's probes and counters, read by the handlers (signal context). */
static struct kprobe *g_kps;
static struct insn **g_insn;
static size_t g_n;
static unsigned long *g_pre, *g_post;
static unsigned long g_pre_bad_ip, g_post_bad_ip, g_foreign;
static size_t g_first_bad_pre = SIZE_MAX, g_first_bad_post = SIZE_MAX;
static unsigned long g_bad_post_ip;

static inline size_t probe_index(struct kprobe *p)
{
	size_t i = (size_t)(p - g_kps);

	if (p < g_kps || i >= g_n) {
		g_foreign++;
		return SIZE_MAX;
	}
	return i;
}

static int count_pre(struct kprobe *p, struct pt_regs *regs)
{
	size_t i = probe_index(p);

	if (i == SIZE_MAX)
		return 0;
	g_pre[i]++;
	/* The kernel's x86 pre_handler sees ip just past the int3; accept
	 * either that or the probe's address. */
	unsigned long a = (unsigned long)p->addr;
	if (regs->ip != a && regs->ip != a + 1) {
		if (g_pre_bad_ip++ == 0)
			g_first_bad_pre = i;
	}
	return 0;
}

static void count_post(struct kprobe *p, struct pt_regs *regs,
		       unsigned long flags)
{
	size_t i = probe_index(p);

	if (i == SIZE_MAX)
		return;
	g_post[i]++;
	/* After the instruction: ip is where it went. */
	const struct insn *x = g_insn[i];
	unsigned long next = x->addr + x->len;
	bool ok;
	switch (x->flow) {
	case FLOW_NEXT:	ok = regs->ip == next; break;
	case FLOW_JCC:	ok = regs->ip == next || regs->ip == x->target; break;
	case FLOW_JMP:
	case FLOW_CALL:	ok = regs->ip == x->target; break;
	default:	ok = true; break;
	}
	if (x->flow == FLOW_CALL || x->flow == FLOW_ICALL)
		ok = ok && *(unsigned long *)regs->sp == next;
	if (!ok && g_post_bad_ip++ == 0) {
		g_first_bad_post = i;
		g_bad_post_ip = regs->ip;
	}
}

/* Instructions that genuinely cannot be probed: a refusal of these is
 * right; of anything else, a failure. */
static bool unprobeable(ZydisMnemonic m)
{
	switch (m) {
	case ZYDIS_MNEMONIC_INT3:
	case ZYDIS_MNEMONIC_INT1:
	case ZYDIS_MNEMONIC_INT:
	case ZYDIS_MNEMONIC_INTO:
	case ZYDIS_MNEMONIC_HLT:
	case ZYDIS_MNEMONIC_UD0:
	case ZYDIS_MNEMONIC_UD1:
	case ZYDIS_MNEMONIC_UD2:
	case ZYDIS_MNEMONIC_IRET:
	case ZYDIS_MNEMONIC_IRETD:
	case ZYDIS_MNEMONIC_IRETQ:
		return true;
	default:
		return false;
	}
}

enum mode { MODE_NONE, MODE_PRE, MODE_PREPOST };
static const char *const mode_name[] = {
	"A (no probes)", "B (pre only, boosted)", "C (pre+post, single-step)",
};

struct probes {
	struct kprobe *kps;
	bool *registered;
	size_t nreg;
	size_t nrefused;
};

static void print_refusal(const struct target *t, size_t i, int ret)
{
	const struct insn *x = t->all[i];
	const struct func *f = t->owner[i];
	char hex[64] = "";
	for (unsigned k = 0; k < x->len && k < 15; k++)
		snprintf(hex + 3 * k, sizeof(hex) - 3 * k, "%02x ",
			 f->file_bytes[x->addr - f->addr + k]);
	say("  REFUSED %s+0x%lx  %-30s %-40s -> %d (%s)%s\n", f->name,
	    (unsigned long)(x->addr - f->addr), hex, x->text, ret,
	    strerror(-ret), unprobeable(x->mnemonic) ? "  [unprobeable]" : "");
}

static bool refusal_ok(const struct target *t, size_t i, int ret)
{
	return ret == -EINVAL && unprobeable(t->all[i]->mnemonic);
}

#define BATCH 256

static void arm(const struct target *t, struct probes *pr, enum mode mode)
{
	size_t n = t->nprobes;

	pr->kps = calloc(n, sizeof(*pr->kps));
	pr->registered = calloc(n, sizeof(*pr->registered));
	cr_assert(pr->kps && pr->registered);
	pr->nreg = pr->nrefused = 0;

	g_kps = pr->kps;
	g_insn = t->all;
	g_n = n;
	free(g_pre);
	free(g_post);
	g_pre = calloc(n, sizeof(*g_pre));
	g_post = calloc(n, sizeof(*g_post));
	cr_assert(g_pre && g_post);
	g_pre_bad_ip = g_post_bad_ip = g_foreign = 0;
	g_first_bad_pre = g_first_bad_post = SIZE_MAX;

	for (size_t i = 0; i < n; i++) {
		pr->kps[i].addr = (kprobe_opcode_t *)t->all[i]->addr;
		pr->kps[i].pre_handler = count_pre;
		pr->kps[i].post_handler = mode == MODE_PREPOST ? count_post : NULL;
	}

	/* Every 16th probe one by one (register_kprobe), the rest in
	 * batches of BATCH (register_kprobes). */
	size_t bad = 0;
	struct kprobe *batch[BATCH];
	size_t bidx[BATCH];
	size_t nb = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && i % 16 == 7) {
			int r = register_kprobe(&pr->kps[i]);
			if (r == 0) {
				pr->registered[i] = true;
				pr->nreg++;
			} else {
				print_refusal(t, i, r);
				pr->nrefused++;
				if (!refusal_ok(t, i, r))
					bad++;
			}
			continue;
		}
		if (i < n) {
			bidx[nb] = i;
			batch[nb++] = &pr->kps[i];
		}
		if (nb == BATCH || (i == n && nb > 0)) {
			int r = register_kprobes(batch, (int)nb);
			if (r == 0) {
				for (size_t k = 0; k < nb; k++)
					pr->registered[bidx[k]] = true;
				pr->nreg += nb;
			} else {
				/* A failed batch leaves nothing registered:
				 * find the culprits one by one. */
				say("  register_kprobes(batch of %zu from %s+0x%lx) = %d;"
				    " retrying one by one\n", nb,
				    t->owner[bidx[0]]->name,
				    (unsigned long)(t->all[bidx[0]]->addr -
						    t->owner[bidx[0]]->addr), r);
				size_t refused_here = 0;
				for (size_t k = 0; k < nb; k++) {
					size_t j = bidx[k];
					int r1 = register_kprobe(&pr->kps[j]);
					if (r1 == 0) {
						pr->registered[j] = true;
						pr->nreg++;
					} else {
						print_refusal(t, j, r1);
						pr->nrefused++;
						refused_here++;
						if (!refusal_ok(t, j, r1))
							bad++;
					}
				}
				if (refused_here == 0) {
					say("  ... but every one of them registers alone\n");
					bad++;
				}
			}
			nb = 0;
		}
	}
	cr_assert_eq(bad, 0, "%zu probes refused that should not be "
		     "(listed above)", bad);

	/* Armed: the first byte of every probed instruction is int3 (or the
	 * probe is optimized). */
	size_t cc = 0, opt = 0;
	for (size_t i = 0; i < n; i++) {
		if (!pr->registered[i])
			continue;
		if (kprobe_optimized(&pr->kps[i]))
			opt++;
		else if (*(volatile unsigned char *)pr->kps[i].addr == 0xcc)
			cc++;
	}
	say("  registered %zu probes (%zu refused): %zu read int3, %zu optimized\n",
	    pr->nreg, pr->nrefused, cc, opt);
}

static void disarm(const struct target *t, struct probes *pr)
{
	struct kprobe **v = calloc(pr->nreg ? pr->nreg : 1, sizeof(*v));
	size_t k = 0;

	cr_assert_not_null(v);
	for (size_t i = 0; i < t->nprobes; i++)
		if (pr->registered[i])
			v[k++] = &pr->kps[i];
	cr_assert_eq(k, pr->nreg);
	unregister_kprobes(v, (int)k);
	free(v);
	unsigned long missed = 0;
	for (size_t i = 0; i < t->nprobes; i++)
		missed += pr->kps[i].nmissed;
	cr_assert_eq(missed, 0, "%lu hits were missed (nmissed) with no "
		     "handler running on the thread", missed);
	check_code_is_original(t, "after unregister_kprobes");

	/* Nothing is left in the list either. */
	char *buf = NULL;
	size_t blen = 0;
	FILE *m = open_memstream(&buf, &blen);
	cr_assert_not_null(m);
	int lines = ukprobes_print_list(m);
	fclose(m);
	cr_assert_eq(lines, 0, "ukprobes_print_list() after unregister_kprobes: "
		     "%d lines:\n%.2000s", lines, buf ? buf : "");
	free(buf);
}

/* ------------------------------------------------------------------------ */
/* Checks on the hit counts                                                  */
/* ------------------------------------------------------------------------ */

static size_t index_of(const struct target *t, uintptr_t a)
{
	for (size_t i = 0; i < t->nf; i++) {
		const struct func *f = &t->f[i];
		if (a < f->addr || a >= f->addr + f->size)
			continue;
		size_t lo = 0, hi = f->n;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (f->insns[mid].addr < a)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < f->n && f->insns[lo].addr == a)
			return f->first + lo;
		return SIZE_MAX;
	}
	return SIZE_MAX;
}

static void print_probe(const struct target *t, size_t i, const char *what)
{
	const struct func *f = t->owner[i];
	const struct insn *x = t->all[i];
	say("    %s+0x%lx  %-40s %s\n", f->name,
	    (unsigned long)(x->addr - f->addr), x->text, what);
}

/*
 * Control flow cannot lose executions: an instruction that falls through is
 * followed at least as often by its successor; a jcc by its successor plus
 * its target; a direct jmp by its target.  (Calls return.)
 */
static void check_flow(const struct target *t, const unsigned long *c,
		       const struct probes *pr, const char *run)
{
	size_t bad = 0;

	for (size_t i = 0; i < t->nprobes; i++) {
		const struct insn *x = t->all[i];
		const struct func *f = t->owner[i];
		if (!pr->registered[i] || c[i] == 0)
			continue;
		size_t nx = SIZE_MAX, tg = SIZE_MAX;
		if (x->addr + x->len < f->addr + f->size)
			nx = i + 1;
		if (x->target)
			tg = index_of(t, x->target);
		unsigned long have;
		switch (x->flow) {
		case FLOW_NEXT:
		case FLOW_CALL:
		case FLOW_ICALL:
			if (nx == SIZE_MAX || !pr->registered[nx])
				continue;
			have = c[nx];
			break;
		case FLOW_JCC:
			if (nx == SIZE_MAX || tg == SIZE_MAX ||
			    !pr->registered[nx] || !pr->registered[tg])
				continue;
			have = c[nx] + c[tg];
			break;
		case FLOW_JMP:
			if (tg == SIZE_MAX || !pr->registered[tg])
				continue;
			have = c[tg];
			break;
		default:
			continue;
		}
		if (have < c[i]) {
			if (bad++ < 10) {
				char buf[96];
				snprintf(buf, sizeof(buf), "hit %lu, successors %lu",
					 c[i], have);
				print_probe(t, i, buf);
			}
		}
	}
	cr_assert_eq(bad, 0, "run %s: %zu instructions were hit more often "
		     "than their successors (instructions skipped?)", run, bad);
}

struct stats {
	unsigned long total;
	size_t distinct;
};

static struct stats count_stats(const struct target *t, const unsigned long *c,
				const struct func *only)
{
	struct stats s = { 0, 0 };

	for (size_t i = 0; i < t->nprobes; i++) {
		if (only && t->owner[i] != only)
			continue;
		s.total += c[i];
		s.distinct += c[i] != 0;
	}
	return s;
}

/* ------------------------------------------------------------------------ */
/* Runs                                                                     */
/* ------------------------------------------------------------------------ */

#define MAXF 4

struct result {
	unsigned char *blob;		/* everything the workload produced */
	size_t len, cap;
	unsigned long calls[MAXF];	/* calls of each probed function */
};

static void blob_add(struct result *r, const void *p, size_t n)
{
	if (r->len + n > r->cap) {
		r->cap = (r->len + n) * 2;
		r->blob = realloc(r->blob, r->cap);
		cr_assert_not_null(r->blob);
	}
	memcpy(r->blob + r->len, p, n);
	r->len += n;
}

static void result_free(struct result *r)
{
	free(r->blob);
	memset(r, 0, sizeof(*r));
}

typedef void (*workload_fn)(struct result *r);

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double timed(workload_fn w, struct result *r)
{
	double t0 = now();

	w(r);
	return now() - t0;
}

static void compare_results(const struct result *ref, const struct result *r,
			    size_t nf, const char *run)
{
	cr_assert_eq(r->len, ref->len, "run %s: the workload produced %zu "
		     "bytes, the reference %zu", run, r->len, ref->len);
	size_t k = 0;
	while (k < r->len && r->blob[k] == ref->blob[k])
		k++;
	cr_assert_eq(k, r->len, "run %s: output differs from the reference "
		     "at byte %zu of %zu", run, k, r->len);
	for (size_t i = 0; i < nf; i++)
		cr_assert_eq(r->calls[i], ref->calls[i]);
}

/*
 * The whole check for one target: A, B, C, A'.
 */
static void every_insn(const char *const *names, size_t nf, workload_fn w)
{
	struct target t;
	struct result ref = { 0 }, rb = { 0 }, rc = { 0 }, ra2 = { 0 };
	struct probes pb, pc;
	double secs[4], tarm, tdisarm;

	cr_assert_leq(nf, MAXF);
	target_init(&t, names, nf);
	say("  %zu probes in all\n", t.nprobes);

	/* A: reference. */
	secs[0] = timed(w, &ref);
	say("run %s: %.2f s, %zu output bytes\n", mode_name[0], secs[0], ref.len);

	/* B: pre handlers only. */
	tarm = now();
	arm(&t, &pb, MODE_PRE);
	tarm = now() - tarm;
	secs[1] = timed(w, &rb);
	unsigned long *cb = g_pre;
	g_pre = NULL;
	unsigned long b_bad_pre = g_pre_bad_ip, b_foreign = g_foreign;
	size_t b_first_bad_pre = g_first_bad_pre;
	tdisarm = now();
	disarm(&t, &pb);
	tdisarm = now() - tdisarm;
	struct stats sb = count_stats(&t, cb, NULL);
	say("run %s: %.2f s, %lu hits on %zu distinct probes "
	    "(%.2f us/hit over A; register %.2f s, unregister %.2f s)\n",
	    mode_name[1], secs[1], sb.total, sb.distinct,
	    sb.total ? (secs[1] - secs[0]) * 1e6 / sb.total : 0.0, tarm, tdisarm);
	for (size_t i = 0; i < nf; i++) {
		struct stats s = count_stats(&t, cb, &t.f[i]);
		say("    %-10s %zu probes registered, %lu hits, %zu distinct "
		    "probes hit, %lu calls\n", t.f[i].name, t.f[i].n, s.total,
		    s.distinct, rb.calls[i]);
	}
	cr_assert_eq(b_foreign, 0, "handlers called with a struct kprobe that "
		     "is not ours");
	if (b_bad_pre)
		print_probe(&t, b_first_bad_pre, "<- first bad pre ip");
	cr_assert_eq(b_bad_pre, 0, "run B: %lu pre_handler calls saw a regs->ip "
		     "that is neither the probe address nor +1", b_bad_pre);
	compare_results(&ref, &rb, nf, "B");
	for (size_t i = 0; i < nf; i++) {
		size_t e = t.f[i].first;
		cr_assert(pb.registered[e]);
		cr_assert_eq(cb[e], rb.calls[i], "run B: the probe on %s's "
			     "first instruction hit %lu times for %lu calls",
			     t.f[i].name, cb[e], rb.calls[i]);
	}
	check_flow(&t, cb, &pb, "B");

	/* C: pre and post handlers. */
	tarm = now();
	arm(&t, &pc, MODE_PREPOST);
	tarm = now() - tarm;
	secs[2] = timed(w, &rc);
	unsigned long *cc_pre = g_pre, *cc_post = g_post;
	g_pre = g_post = NULL;
	unsigned long c_bad_pre = g_pre_bad_ip, c_bad_post = g_post_bad_ip;
	unsigned long c_foreign = g_foreign, c_bad_post_ip = g_bad_post_ip;
	size_t c_first_bad_post = g_first_bad_post;
	tdisarm = now();
	disarm(&t, &pc);
	tdisarm = now() - tdisarm;
	struct stats sc = count_stats(&t, cc_pre, NULL);
	struct stats sp = count_stats(&t, cc_post, NULL);
	say("run %s: %.2f s, %lu pre and %lu post hits on %zu distinct probes "
	    "(%.2f us/hit over A; register %.2f s, unregister %.2f s)\n",
	    mode_name[2], secs[2], sc.total, sp.total, sc.distinct,
	    sc.total ? (secs[2] - secs[0]) * 1e6 / sc.total : 0.0, tarm, tdisarm);
	cr_assert_eq(c_foreign, 0, "handlers called with a struct kprobe that "
		     "is not ours");
	cr_assert_eq(c_bad_pre, 0, "run C: %lu pre_handler calls saw a bad "
		     "regs->ip", c_bad_pre);
	compare_results(&ref, &rc, nf, "C");

	/* The pattern of hits: B == C, and in C pre == post. */
	size_t differ = 0, unpaired = 0;
	for (size_t i = 0; i < t.nprobes; i++) {
		if (cb[i] != cc_pre[i] && differ++ < 10) {
			char buf[96];
			snprintf(buf, sizeof(buf), "B %lu hits, C %lu", cb[i],
				 cc_pre[i]);
			print_probe(&t, i, buf);
		}
		if (cc_pre[i] != cc_post[i] && unpaired++ < 10) {
			char buf[96];
			snprintf(buf, sizeof(buf), "C pre %lu, post %lu",
				 cc_pre[i], cc_post[i]);
			print_probe(&t, i, buf);
		}
	}
	cr_assert_eq(differ, 0, "%zu probes were hit a different number of "
		     "times in runs B and C", differ);
	cr_assert_eq(unpaired, 0, "run C: %zu probes ran pre and post handlers "
		     "a different number of times", unpaired);
	if (c_bad_post) {
		char buf[96];
		snprintf(buf, sizeof(buf), "<- first bad post ip: 0x%lx",
			 c_bad_post_ip);
		print_probe(&t, c_first_bad_post, buf);
	}
	cr_assert_eq(c_bad_post, 0, "run C: %lu post_handler calls saw a "
		     "regs->ip (or return address) the instruction cannot "
		     "have left", c_bad_post);
	check_flow(&t, cc_pre, &pc, "C");

	/* The hottest instructions, for the record. */
	size_t top[5] = { SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX };
	for (size_t i = 0; i < t.nprobes; i++) {
		for (size_t k = 0; k < 5; k++) {
			if (top[k] == SIZE_MAX || cb[i] > cb[top[k]]) {
				memmove(&top[k + 1], &top[k],
					(4 - k) * sizeof(top[0]));
				top[k] = i;
				break;
			}
		}
	}
	say("  hottest probes:\n");
	for (size_t k = 0; k < 5 && top[k] != SIZE_MAX; k++) {
		char buf[32];
		snprintf(buf, sizeof(buf), "%lu hits", cb[top[k]]);
		print_probe(&t, top[k], buf);
	}

	/* A': nothing left behind. */
	check_code_is_original(&t, "at the end");
	secs[3] = timed(w, &ra2);
	say("run A' (after unregister): %.2f s\n", secs[3]);
	compare_results(&ref, &ra2, nf, "A'");

	cr_assert_gt(sb.total, 100000, "only %lu hits: the workload does not "
		     "exercise the functions", sb.total);

	free(cb);
	free(cc_pre);
	free(cc_post);
	free(pb.kps);
	free(pb.registered);
	free(pc.kps);
	free(pc.registered);
	result_free(&ref);
	result_free(&rb);
	result_free(&rc);
	result_free(&ra2);
	target_free(&t);
}

/* ------------------------------------------------------------------------ */
/* Workload 1: deflate and inflate                                          */
/* ------------------------------------------------------------------------ */

/* ~1.3 inflate() hits per output byte with 4 KiB output chunks (the main
 * loop runs near every chunk's end), ~6.4M hits per run at 1 MiB: the input
 * is kept at 512 KiB so that run C stays around 20 s. */
#ifndef DATA_SIZE
#define DATA_SIZE	(512u << 10)
#endif
#define DEF_IN_CHUNK	(16u << 10)
#define DEF_OUT_CHUNK	(8u << 10)
#ifndef INF_IN_CHUNK
#define INF_IN_CHUNK	(2u << 10)
#endif
#ifndef INF_OUT_CHUNK
#define INF_OUT_CHUNK	(4u << 10)
#endif

static unsigned char *g_input;
static size_t g_input_len;

static uint32_t lcg_state;

static uint32_t lcg(void)
{
	lcg_state = lcg_state * 1103515245u + 12345u;
	return lcg_state >> 8;
}

/* Text-like: words from a small dictionary, some numbers, punctuation. */
static void make_input(void)
{
	static const char *const words[] = {
		"the", "of", "and", "to", "in", "is", "that", "for", "it", "as",
		"was", "with", "be", "by", "on", "not", "he", "this", "are", "or",
		"his", "from", "at", "which", "but", "have", "an", "had", "they",
		"you", "were", "their", "one", "all", "we", "can", "her", "has",
		"there", "been", "if", "more", "when", "will", "would", "who",
		"so", "no", "kprobe", "breakpoint", "instruction", "deflate",
		"inflate", "window", "huffman", "literal", "distance", "length",
		"compression", "decompression", "stream", "buffer", "register",
		"handler",
	};
	const size_t nw = sizeof(words) / sizeof(words[0]);
	size_t n = DATA_SIZE, k = 0;
	unsigned char *p = malloc(n);

	cr_assert_not_null(p);
	lcg_state = 20240601u;
	while (k < n) {
		char tok[32];
		uint32_t r = lcg();
		int len;
		if (r % 23 == 0)
			len = snprintf(tok, sizeof(tok), "%u", lcg() % 100000);
		else
			len = snprintf(tok, sizeof(tok), "%s",
				       words[(r >> 4) % nw]);
		uint32_t s = lcg() % 40;
		tok[len++] = s == 0 ? '\n' : s == 1 ? ',' : s == 2 ? '.' : ' ';
		for (int i = 0; i < len && k < n; i++)
			p[k++] = (unsigned char)tok[i];
	}
	g_input = p;
	g_input_len = n;
}

/* With @flushes, some chunks end with the other flush modes, which take
 * deflate() through its flush paths (and inflate() through empty stored
 * blocks and block boundaries). */
static int flush_for(unsigned chunk_no, bool flushes)
{
	if (!flushes)
		return Z_NO_FLUSH;
	if (chunk_no % 7 == 3)
		return Z_SYNC_FLUSH;
	if (chunk_no % 11 == 5)
		return Z_FULL_FLUSH;
	if (chunk_no % 13 == 6)
		return Z_PARTIAL_FLUSH;
	if (chunk_no % 17 == 8)
		return Z_BLOCK;
	return Z_NO_FLUSH;
}

/*
 * One way of compressing: level, format (windowBits: zlib 15, gzip 31,
 * raw -15), memLevel, strategy, the flush schedule, a gzip header with
 * every optional field, a preset dictionary; how much of the input; and
 * inflate's windowBits.
 */
struct zconf {
	const char *what;
	int level, wbits, memlevel, strategy;
	bool flushes, gzhead, dict;
	size_t len;		/* bytes of the input, 0: all */
	int inf_wbits;
};

/* deflate_huff() and deflate_rle() are inlined into deflate() (about 37
 * hits per byte), hence their small inputs. */
static const struct zconf zconfs[] = {
	{ "zlib",			1, 15, 8, Z_DEFAULT_STRATEGY, false, false, false, 0, 15 },
	{ "gzip+header, auto-detect",	6, 31, 8, Z_DEFAULT_STRATEGY, false, true, false, 0, 47 },
	{ "raw",			9, -15, 9, Z_DEFAULT_STRATEGY, false, false, false, 0, -15 },
	{ "zlib, sync/full/partial/block flushes",
					6, 15, 8, Z_DEFAULT_STRATEGY, true, false, false, 0, 15 },
	{ "zlib, stored",		0, 15, 8, Z_DEFAULT_STRATEGY, false, false, false, 32 << 10, 15 },
	{ "zlib, huffman only",		6, 15, 8, Z_HUFFMAN_ONLY, false, false, false, 8 << 10, 15 },
	{ "zlib, rle",			6, 15, 8, Z_RLE, false, false, false, 8 << 10, 15 },
	{ "zlib, fixed, dictionary",	6, 15, 8, Z_FIXED, false, false, true, 32 << 10, 15 },
	{ "gzip, filtered, small window", 4, 25, 1, Z_FILTERED, true, false, false, 32 << 10, 25 },
};
#define NZCONF (sizeof(zconfs) / sizeof(zconfs[0]))

static size_t zconf_len(const struct zconf *z)
{
	return z->len && z->len < g_input_len ? z->len : g_input_len;
}

static const char zdict[] = "the of and instruction breakpoint handler "
	"deflate inflate window huffman literal distance length register";
static char gz_extra[] = "ukprobes-extra-field\0with a nul";
static char gz_name[] = "zlib_every_insn.txt";
static char gz_comment[] = "a probe on every instruction";

static void compress_one(const struct zconf *z, struct result *r,
			 unsigned char **out, size_t *outlen)
{
	z_stream s;
	unsigned char obuf[DEF_OUT_CHUNK];
	size_t n = zconf_len(z);
	size_t cap = n + n / 8 + 4096, len = 0, pos = 0;
	unsigned char *o = malloc(cap);
	int ret, flush;
	unsigned chunk_no = 0;
	static gz_header head;

	cr_assert_not_null(o);
	memset(&s, 0, sizeof(s));
	cr_assert_eq(deflateInit2(&s, z->level, Z_DEFLATED, z->wbits,
				  z->memlevel, z->strategy), Z_OK);
	if (z->gzhead) {
		memset(&head, 0, sizeof(head));
		head.text = 1;
		head.time = 0x5f000000;
		head.os = 3;
		head.extra = (Bytef *)gz_extra;
		head.extra_len = sizeof(gz_extra);
		head.name = (Bytef *)gz_name;
		head.comment = (Bytef *)gz_comment;
		head.hcrc = 1;
		cr_assert_eq(deflateSetHeader(&s, &head), Z_OK);
	}
	if (z->dict)
		cr_assert_eq(deflateSetDictionary(&s, (const Bytef *)zdict,
						  sizeof(zdict) - 1), Z_OK);
	do {
		size_t chunk = n - pos < DEF_IN_CHUNK ? n - pos : DEF_IN_CHUNK;
		s.next_in = g_input + pos;
		s.avail_in = (uInt)chunk;
		pos += chunk;
		flush = pos == n ? Z_FINISH : flush_for(chunk_no++, z->flushes);
		do {
			s.next_out = obuf;
			s.avail_out = sizeof(obuf);
			ret = deflate(&s, flush);
			r->calls[0]++;
			cr_assert(ret == Z_OK || ret == Z_STREAM_END ||
				  ret == Z_BUF_ERROR, "deflate = %d", ret);
			size_t have = sizeof(obuf) - s.avail_out;
			cr_assert_leq(len + have, cap);
			memcpy(o + len, obuf, have);
			len += have;
		} while (s.avail_out == 0);
		cr_assert_eq(s.avail_in, 0);
	} while (flush != Z_FINISH);
	cr_assert_eq(ret, Z_STREAM_END, "deflate did not finish: %d", ret);
	cr_assert_eq(deflateEnd(&s), Z_OK);
	*out = o;
	*outlen = len;
}

static void decompress_check(const struct zconf *z, const unsigned char *c,
			     size_t clen, struct result *r)
{
	z_stream s;
	unsigned char obuf[INF_OUT_CHUNK];
	size_t n = zconf_len(z), pos = 0, len = 0, mismatch = SIZE_MAX;
	int ret, dicts = 0;
	gz_header head;
	unsigned char extra[64];
	char name[64], comment[64];

	memset(&s, 0, sizeof(s));
	cr_assert_eq(inflateInit2(&s, z->inf_wbits), Z_OK);
	if (z->gzhead) {
		memset(&head, 0, sizeof(head));
		head.extra = extra;
		head.extra_max = sizeof(extra);
		head.name = (Bytef *)name;
		head.name_max = sizeof(name);
		head.comment = (Bytef *)comment;
		head.comm_max = sizeof(comment);
		cr_assert_eq(inflateGetHeader(&s, &head), Z_OK);
	}
	do {
		if (s.avail_in == 0 && pos < clen) {
			size_t chunk = clen - pos < INF_IN_CHUNK ?
				clen - pos : INF_IN_CHUNK;
			s.next_in = (unsigned char *)c + pos;
			s.avail_in = (uInt)chunk;
			pos += chunk;
		}
		s.next_out = obuf;
		s.avail_out = sizeof(obuf);
		ret = inflate(&s, Z_NO_FLUSH);
		r->calls[1]++;
		if (ret == Z_NEED_DICT && z->dict && dicts++ == 0) {
			cr_assert_eq(inflateSetDictionary(&s,
				(const Bytef *)zdict, sizeof(zdict) - 1), Z_OK);
			ret = Z_OK;
		}
		cr_assert(ret == Z_OK || ret == Z_STREAM_END,
			  "inflate = %d (%s) after %zu output bytes", ret,
			  s.msg ? s.msg : "", len);
		size_t have = sizeof(obuf) - s.avail_out;
		cr_assert_leq(len + have, n, "inflate: too much output");
		if (mismatch == SIZE_MAX && memcmp(obuf, g_input + len, have))
			for (size_t k = 0; k < have; k++)
				if (obuf[k] != g_input[len + k]) {
					mismatch = len + k;
					break;
				}
		len += have;
	} while (ret != Z_STREAM_END);
	cr_assert_eq(pos, clen);
	cr_assert_eq(s.avail_in, 0, "inflate left %u bytes of input", s.avail_in);
	cr_assert_eq(inflateEnd(&s), Z_OK);
	cr_assert_eq(len, n, "inflate gave %zu bytes of %zu", len, n);
	cr_assert_eq(mismatch, SIZE_MAX, "inflate: output differs from the "
		     "input at byte %zu", mismatch);
	cr_assert_eq(dicts, z->dict ? 1 : 0, "inflate asked for a dictionary "
		     "%d times", dicts);
	if (z->gzhead) {
		cr_assert_eq(head.done, 1);
		cr_assert_eq(head.hcrc, 1);
		cr_assert_eq(head.time, 0x5f000000);
		cr_assert_eq(head.extra_len, sizeof(gz_extra));
		cr_assert_eq(memcmp(extra, gz_extra, sizeof(gz_extra)), 0);
		cr_assert_str_eq(name, gz_name);
		cr_assert_str_eq(comment, gz_comment);
	}
}

static void zlib_workload(struct result *r)
{
	for (size_t i = 0; i < NZCONF; i++) {
		const struct zconf *z = &zconfs[i];
		unsigned char *c;
		size_t clen;
		compress_one(z, r, &c, &clen);
		decompress_check(z, c, clen, r);
		uint64_t l = clen;
		uint32_t crc = (uint32_t)crc32(0L, c, (uInt)clen);
		blob_add(r, &l, sizeof(l));
		blob_add(r, &crc, sizeof(crc));
		blob_add(r, c, clen);
		free(c);
	}
}

static void print_zlib_reference(void)
{
	struct result r = { 0 };
	size_t off = 0;

	zlib_workload(&r);
	for (size_t i = 0; i < NZCONF; i++) {
		uint64_t l;
		uint32_t crc;
		memcpy(&l, r.blob + off, sizeof(l));
		memcpy(&crc, r.blob + off + sizeof(l), sizeof(crc));
		off += sizeof(l) + sizeof(crc) + l;
		say("  level %d %-38s %7zu -> %6lu bytes, crc32 %08x\n",
		    zconfs[i].level, zconfs[i].what, zconf_len(&zconfs[i]),
		    (unsigned long)l, crc);
	}
	say("  %lu deflate calls, %lu inflate calls\n", r.calls[0], r.calls[1]);
	result_free(&r);
}

Test(zlib_every_insn, deflate_inflate, .timeout = 400)
{
	static const char *const names[] = { "deflate", "inflate" };

	say("zlib %s: a probe on every instruction of deflate and inflate\n",
	    zlibVersion());
	make_input();
	print_zlib_reference();
	every_insn(names, 2, zlib_workload);
	free(g_input);
}

/* ------------------------------------------------------------------------ */
/* Workload 2: crc32_z and adler32_z                                        */
/* ------------------------------------------------------------------------ */

#define CK_SIZE (16u << 10)

static void checksum_workload(struct result *r)
{
	static unsigned char buf[CK_SIZE + 64];
	static const size_t lens[] = {
		0, 1, 2, 3, 5, 7, 8, 15, 16, 17, 31, 32, 33, 39, 40, 41, 47, 63,
		64, 100, 255, 256, 1000, 4095, 5552, 5553,
	};

	lcg_state = 77u;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)lcg();

	/* Odd lengths at every alignment. */
	for (size_t a = 0; a < 4; a++) {
		for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
			unsigned long c = crc32_z(0, buf + a, lens[k]);
			unsigned long d = adler32_z(1, buf + a, lens[k]);
			r->calls[0]++;
			r->calls[1]++;
			blob_add(r, &c, sizeof(c));
			blob_add(r, &d, sizeof(d));
		}
	}
	/* The whole buffer, running, in uneven pieces. */
	unsigned long c = crc32_z(0, NULL, 0), d = adler32_z(0, NULL, 0);
	r->calls[0]++;
	r->calls[1]++;
	for (size_t pos = 0, step = 1; pos < CK_SIZE; step = step * 3 + 1) {
		size_t n = step % 6000;
		if (n > CK_SIZE - pos)
			n = CK_SIZE - pos;
		c = crc32_z(c, buf + pos, n);
		d = adler32_z(d, buf + pos, n);
		r->calls[0]++;
		r->calls[1]++;
		pos += n;
	}
	blob_add(r, &c, sizeof(c));
	blob_add(r, &d, sizeof(d));
	/* The results are the real checksums, whatever the probes. */
	unsigned long c1 = crc32_z(0, buf, CK_SIZE);
	unsigned long d1 = adler32_z(1, buf, CK_SIZE);
	r->calls[0]++;
	r->calls[1]++;
	cr_assert_eq(c, c1, "running crc32 %08lx, one-shot %08lx", c, c1);
	cr_assert_eq(d, d1, "running adler32 %08lx, one-shot %08lx", d, d1);
}

Test(zlib_every_insn, crc32_adler32, .timeout = 400)
{
	static const char *const names[] = { "crc32_z", "adler32_z" };

	say("zlib %s: a probe on every instruction of crc32_z and adler32_z\n",
	    zlibVersion());
	every_insn(names, 2, checksum_workload);
}
