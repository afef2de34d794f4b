/* SPDX-License-Identifier: MIT */
/*
 * scale.c - many probes (issue 5): register and unregister 1, 100, 10,000
 * and 100,000 probes, one by one (register_kprobe) and in one call
 * (register_kprobes); the time until the background optimizer is done with
 * them and how many it optimized; memory per probe; and the hit cost of one
 * probe while 10,000 others are registered.
 *
 * The probes go on every instruction boundary of real code nobody here
 * wrote, none of which runs during the measurement:
 *   1. libz.so.1: every instruction of every exported function (deflate,
 *      inflate, crc32, ...), decoded with Zydis from each symbol's start;
 *   2. libzstd.so.1 (dlopen'ed, never called): its whole .text, decoded
 *      linearly, for the probes past what libz has (libz has some 11,000);
 *   3. libc.so.6, every exported function, for the libc rows only (10,000
 *      probes, one run): there the registration itself runs libc code that
 *      already carries probes, so every registration hits some.
 * Instructions that cannot be probed at all (int3, ud2, hlt, ...) are left
 * out by their mnemonic; the rest are tried once in a throw-away child before
 * the runs and those ukprobes refuses are left out too (counted in the
 * pool's line on stderr and in the log).
 *
 * Registration rows time the registering thread: CPU (the table's figure)
 * and wall (the "wall" column: it includes waiting for the background
 * optimizer, which, by default on, optimizes and unoptimizes while probes
 * come in).  Figures are ns per probe.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <Zydis/Zydis.h>
#include <ukprobes.h>

#include "harness.h"
#include "probes.h"
#include "targets.h"

#define MAX_POOL 120000

struct pool {
	const char *name;
	uintptr_t *addr;
	long n;
	long from_libz, from_zstd;	/* where they came from */
	long dropped_mnemonic, refused;
};

static struct pool main_pool = { .name = "libz+libzstd" },
		   libc_pool = { .name = "libc" },
		   spread_pool = { .name = "spread" };

/* The spread pool, for the "time to optimize 10,000 probes" goal: probes
 * that can all be optimized together.  Instructions of the main pool at
 * least this many bytes apart (no probe inside another's jump), then only
 * those a throw-away child saw optimized with all of them registered
 * (libzstd has no symbols past its exports: a region of several
 * instructions there cannot be checked against its function, and stays a
 * breakpoint). */
#define SPREAD_GAP 16

/* ------------------------------------------------------------------------ */
/* Building the pools                                                        */
/* ------------------------------------------------------------------------ */

static ZydisDecoder dec;

static int unprobeable(ZydisMnemonic m)
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
		return 1;
	default:
		return 0;
	}
}

/* Every boundary of [start, start + size) from a linear sweep. */
static void sweep(struct pool *p, uintptr_t start, size_t size, long max)
{
	size_t off = 0;

	while (off < size && p->n < max) {
		ZydisDecodedInstruction in;

		if (ZYAN_FAILED(ZydisDecoderDecodeInstruction(&dec, NULL,
				(const void *)(start + off), size - off, &in))) {
			off++;
			continue;
		}
		if (unprobeable(in.mnemonic))
			p->dropped_mnemonic++;
		else
			p->addr[p->n++] = start + off;
		off += in.length;
	}
}

static int cmp_sym(const void *a, const void *b)
{
	const GElf_Sym *x = a, *y = b;

	return (x->st_value > y->st_value) - (x->st_value < y->st_value);
}

/* Exported functions (sized FUNC symbols of .dynsym, aliases once, in
 * address order) of the loaded object @soname; or, with @whole_text, its
 * whole .text. */
static int add_object(struct pool *p, const char *soname, int whole_text,
		      long max)
{
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	struct link_map *lm;
	Elf *e;
	int fd;
	size_t shstrndx;
	GElf_Sym *syms = NULL;
	size_t nsyms = 0;

	if (!h || dlinfo(h, RTLD_DI_LINKMAP, &lm)) {
		fprintf(stderr, "scale: %s: %s\n", soname, dlerror());
		return -1;
	}
	fd = open(lm->l_name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_getshdrstrndx(e, &shstrndx)) {
		close(fd);
		return -1;
	}
	for (Elf_Scn *s = elf_nextscn(e, NULL); s; s = elf_nextscn(e, s)) {
		GElf_Shdr sh;
		const char *n;

		if (!gelf_getshdr(s, &sh))
			continue;
		n = elf_strptr(e, shstrndx, sh.sh_name);
		if (whole_text && n && !strcmp(n, ".text")) {
			sweep(p, lm->l_addr + sh.sh_addr, sh.sh_size, max);
		} else if (!whole_text && sh.sh_type == SHT_DYNSYM) {
			Elf_Data *d = elf_getdata(s, NULL);
			size_t cnt = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;

			syms = calloc(cnt ? cnt : 1, sizeof(*syms));
			for (size_t i = 0; d && i < cnt; i++) {
				GElf_Sym sym;

				if (gelf_getsym(d, (int)i, &sym) &&
				    GELF_ST_TYPE(sym.st_info) == STT_FUNC &&
				    sym.st_shndx != SHN_UNDEF && sym.st_size)
					syms[nsyms++] = sym;
			}
		}
	}
	if (syms) {
		qsort(syms, nsyms, sizeof(*syms), cmp_sym);
		for (size_t i = 0; i < nsyms; i++)
			if (!i || syms[i].st_value != syms[i - 1].st_value)
				sweep(p, lm->l_addr + syms[i].st_value,
				      syms[i].st_size, max);
		free(syms);
	}
	elf_end(e);
	close(fd);
	return 0;
}

static int pre_nothing(struct kprobe *kp, struct pt_regs *regs)
{
	return 0;
}

/*
 * Keeps the probes of @p for which @mark, run in a throw-away child (so
 * that this process never holds a probe), sets keep[i]; counts the others
 * in p->refused.  The child's work is all that the two filters differ in.
 */
static void filter_in_child(struct pool *p, void (*mark)(const struct pool *p,
							  unsigned char *keep))
{
	unsigned char *keep = mmap(NULL, (size_t)p->n, PROT_READ | PROT_WRITE,
				   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pid;
	long k = 0, n0 = p->n;
	int st;

	if (keep == MAP_FAILED)
		return;
	pid = fork();
	if (pid == 0) {
		mark(p, keep);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	for (long i = 0; i < n0; i++)
		if (keep[i])
			p->addr[k++] = p->addr[i];
	p->refused += n0 - k;
	p->n = k;
	munmap(keep, (size_t)n0);
}

/* Those ukprobes accepts, tried one by one. */
static void mark_accepted(const struct pool *p, unsigned char *keep)
{
	struct kprobe *kps = calloc((size_t)p->n, sizeof(*kps));

	if (!kps)
		_exit(1);
	ukprobes_set_optimization(0);
	for (long i = 0; i < p->n; i++) {
		kps[i].addr = (kprobe_opcode_t *)p->addr[i];
		kps[i].pre_handler = pre_nothing;
		if (!register_kprobe(&kps[i])) {
			keep[i] = 1;
			unregister_kprobe(&kps[i]);
		}
	}
}

/* Those optimized when all are registered together. */
static void mark_optimized(const struct pool *p, unsigned char *keep)
{
	struct kprobe *all = calloc((size_t)p->n, sizeof(*all));
	struct kprobe **allp = calloc((size_t)p->n, sizeof(*allp));

	if (!all || !allp)
		_exit(1);
	for (long i = 0; i < p->n; i++) {
		all[i].addr = (kprobe_opcode_t *)p->addr[i];
		all[i].pre_handler = pre_nothing;
		allp[i] = &all[i];
	}
	if (register_kprobes(allp, (int)p->n))
		_exit(1);
	ukprobes_wait_optimizer();
	for (long i = 0; i < p->n; i++)
		keep[i] = kprobe_optimized(&all[i]) != 0;
}

static void build_pools(void)
{
	elf_version(EV_CURRENT);
	ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	main_pool.addr = calloc(MAX_POOL, sizeof(uintptr_t));
	libc_pool.addr = calloc(MAX_POOL, sizeof(uintptr_t));
	if (!add_object(&main_pool, "libz.so.1", 0, MAX_POOL))
		main_pool.from_libz = main_pool.n;
	if (!add_object(&main_pool, "libzstd.so.1", 1, MAX_POOL))
		main_pool.from_zstd = main_pool.n - main_pool.from_libz;
	add_object(&libc_pool, "libc.so.6", 0, 20000);
	{
		/* libz's probes come first: what is left of them. */
		long libz_end = main_pool.from_libz;
		uintptr_t lo = libz_end ? main_pool.addr[0] : 0;
		uintptr_t hi = libz_end ? main_pool.addr[libz_end - 1] : 0;

		filter_in_child(&main_pool, mark_accepted);
		main_pool.from_libz = 0;
		for (long i = 0; i < main_pool.n; i++)
			main_pool.from_libz += main_pool.addr[i] >= lo &&
					       main_pool.addr[i] <= hi;
		main_pool.from_zstd = main_pool.n - main_pool.from_libz;
	}
	spread_pool.addr = calloc(MAX_POOL, sizeof(uintptr_t));
	for (long i = 0; spread_pool.addr && i < main_pool.n; i++) {
		uintptr_t a = main_pool.addr[i];

		if (!spread_pool.n || a >= spread_pool.addr[spread_pool.n - 1] + SPREAD_GAP ||
		    a < spread_pool.addr[spread_pool.n - 1])
			spread_pool.addr[spread_pool.n++] = a;
	}
	fprintf(stderr, "scale: pool: %ld instructions of libz's exported "
		"functions, %ld of libzstd's .text (after leaving out %ld by "
		"mnemonic and %ld refused by ukprobes): %ld probes\n", main_pool.from_libz,
		main_pool.from_zstd, main_pool.dropped_mnemonic,
		main_pool.refused, main_pool.n);
	filter_in_child(&spread_pool, mark_optimized);
	fprintf(stderr, "scale: spread pool: %ld of them, %d bytes apart or more "
		"and optimized together (%ld more were not)\n", spread_pool.n,
		SPREAD_GAP, spread_pool.refused);
}

/* ------------------------------------------------------------------------ */
/* Measurements                                                              */
/* ------------------------------------------------------------------------ */

struct scale_arg {
	struct pool *pool;
	long n;
};

static struct kprobe *kps;
static struct kprobe **kpp;

/* The first @n probes of the pool, not registered. */
static int prepare(const struct scale_arg *a, struct bench_result *res)
{
	if (a->n > a->pool->n) {
		bench_fail(res, "the pool has %ld probes (libz %ld + libzstd %ld "
			   "instructions), not %ld", a->pool->n,
			   a->pool->from_libz, a->pool->from_zstd, a->n);
		return -1;
	}
	kps = calloc((size_t)a->n, sizeof(*kps));
	kpp = calloc((size_t)a->n, sizeof(*kpp));
	if (!kps || !kpp) {
		bench_fail(res, "out of memory");
		return -1;
	}
	for (long i = 0; i < a->n; i++) {
		kps[i].addr = (kprobe_opcode_t *)a->pool->addr[i];
		kps[i].pre_handler = pre_nothing;
		kpp[i] = &kps[i];
	}
	return 0;
}

/* Registers and unregisters one probe of the pool (its last), so that the
 * figures leave out what happens once per object (symbols, first slots). */
static void warm(const struct scale_arg *a)
{
	struct kprobe w = { .addr = (kprobe_opcode_t *)a->pool->addr[a->pool->n - 1],
			    .pre_handler = pre_nothing };

	if (!register_kprobe(&w))
		unregister_kprobe(&w);
}

static int register_batch(long n, struct bench_result *res)
{
	int err = register_kprobes(kpp, (int)n);

	if (err)
		bench_fail(res, "register_kprobes(%ld probes): %d (%s)", n, err,
			   err < 0 ? strerror(-err) : "?");
	return err;
}

/* Where the first @n probes of the main pool come from. */
static void note_pool(const struct scale_arg *a, struct bench_result *res)
{
	long z = a->n < a->pool->from_libz ? a->n : a->pool->from_libz;

	if (a->pool != &main_pool)
		return;
	if (a->n > z)
		bench_note(res, "pool: %ld from libz + %ld from libzstd", z,
			   a->n - z);
}

/* One by one; a refusal is counted, not fatal, in the libc pool (not
 * prefiltered: trying them all once would cost as much as the row), and
 * fatal elsewhere.  The refused ones are taken out of kpp[]. */
static int register_each(const struct scale_arg *a, long *refused,
			 struct bench_result *res)
{
	long k = 0;

	*refused = 0;
	for (long i = 0; i < a->n; i++) {
		int err = register_kprobe(&kps[i]);

		if (!err) {
			kpp[k++] = &kps[i];
			continue;
		}
		if (a->pool != &libc_pool) {
			bench_fail(res, "register_kprobe(%p): %d",
				   (void *)kps[i].addr, err);
			unregister_kprobes(kpp, (int)k);
			return -1;
		}
		(*refused)++;
	}
	return 0;
}

static long count_optimized(long n)
{
	long k = 0;

	for (long i = 0; i < n; i++)
		k += kprobe_optimized(&kps[i]) != 0;
	return k;
}

static long rss_bytes(void)
{
	long size, resident;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &size, &resident) != 2)
		resident = -1;
	fclose(f);
	return resident * sysconf(_SC_PAGESIZE);
}

static long heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();

	return (long)(mi.uordblks + mi.hblkhd);
}

static double per(uint64_t ns, long n)
{
	return n ? (double)ns / (double)n : 0;
}

/*
 * "reg" rows: register_kprobe() one by one, in address order (timed); then,
 * once the optimizer is done, unregister_kprobe() one by one (extra 0: the
 * "unreg" row).
 */
static void measure_reg(const struct bench_row *row, long iters,
			struct bench_result *res)
{
	const struct scale_arg *a = row->arg;
	struct bench_time tm, tu;
	long n = a->n, refused = 0, nreg;

	if (prepare(a, res))
		return;
	warm(a);
	bench_time_start(&tm);
	if (register_each(a, &refused, res))
		return;
	bench_time_stop(&tm);
	nreg = n - refused;
	fprintf(stderr, "reg %s: %ld of %ld optimized at the end of "
		"registration\n", row->variant, count_optimized(n), nreg);
	ukprobes_wait_optimizer();
	fprintf(stderr, "reg %s: %ld optimized once the optimizer was done\n",
		row->variant, count_optimized(n));
	bench_time_start(&tu);
	for (long i = 0; i < nreg; i++)
		unregister_kprobe(kpp[i]);
	bench_time_stop(&tu);
	if (refused) {
		bench_note(res, "%ld of %ld refused", refused, n);
		bench_extra_note(res, 0, "%ld of %ld refused", refused, n);
	}
	bench_result_set(res, &tm, nreg);
	note_pool(a, res);
	bench_extra_set(res, 0, per(tu.cpu_ns, nreg), per(tu.wall_ns, nreg));
}

/*
 * "regs" rows: register_kprobes() of all N (timed); the wall time until
 * ukprobes_wait_optimizer() returns, in ms (extra 0: "optall"); resident
 * and malloc'ed bytes per probe then (extras 1 and 2: "rss", "heap");
 * unregister_kprobes() of all N (extra 3: "unregs").
 */
static void measure_regs(const struct bench_row *row, long iters,
			 struct bench_result *res)
{
	const struct scale_arg *a = row->arg;
	struct bench_time tm, to, tu;
	long n = a->n, k, rss0, heap0, rss1, heap1;
	int left;

	if (prepare(a, res))
		return;
	warm(a);
	rss0 = rss_bytes();
	heap0 = heap_bytes();
	bench_time_start(&tm);
	if (register_batch(n, res))
		return;
	bench_time_stop(&tm);
	bench_time_start(&to);
	left = ukprobes_wait_optimizer();
	bench_time_stop(&to);
	k = count_optimized(n);
	rss1 = rss_bytes();
	heap1 = heap_bytes();
	bench_time_start(&tu);
	unregister_kprobes(kpp, (int)n);
	bench_time_stop(&tu);

	bench_result_set(res, &tm, n);
	note_pool(a, res);
	if (k) {
		bench_extra_set(res, 0, (double)to.wall_ns / 1e6,
				(double)to.wall_ns / 1e6);
		bench_extra_note(res, 0, "%ld of %ld optimized%s", k, n,
				 left ? " (some still queued)" : "");
	} else {
		bench_extra_fail(res, 0, "not optimized (none of %ld)", n);
	}
	bench_extra_set(res, 1, (double)(rss1 - rss0) / (double)n,
			(double)(rss1 - rss0) / (double)n);
	bench_extra_set(res, 2, (double)(heap1 - heap0) / (double)n,
			(double)(heap1 - heap0) / (double)n);
	bench_extra_note(res, 1, "%ld optimized", k);
	bench_extra_note(res, 2, "%ld optimized", k);
	bench_extra_set(res, 3, per(tu.cpu_ns, n), per(tu.wall_ns, n));
}

/* b+10k, o+10k: the hit cost of one probe while 10,000 others (the pool's
 * first) are registered. */
static void measure_crowded(const struct bench_row *row, long iters,
			    struct bench_result *res)
{
	static const struct scale_arg others = { &main_pool, 10000 };
	char kind[8];

	snprintf(kind, sizeof(kind), "%.*s", (int)strcspn(row->name, "+"),
		 row->name);
	if (prepare(&others, res))
		return;
	ukprobes_set_optimization(!strcmp(kind, "o"));
	if (register_batch(others.n, res))
		return;
	ukprobes_wait_optimizer();
	bench_measure_probe_kind(kind, row, iters, res);
	unregister_kprobes(kpp, (int)others.n);
}

/* ------------------------------------------------------------------------ */
/* Main                                                                      */
/* ------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
	static const long counts[] = { 1, 100, 10000, 100000 };
	static struct scale_arg args[4], libc_arg = { &libc_pool, 10000 },
				spread_arg = { &spread_pool, 10000 };
	static char names[4][16];
	static const struct bench_ratio ratios[] = {
		{ "b+10k/b", "b+10k", "b", 1, 0, 0, 0 },
		{ "o+10k/o", "o+10k", "o", 1, 0, 0, 0 },
	};
	struct bench_row rows[64];
	const struct bench_target *t = &bench_targets[0];	/* push_rbp */
	int n = 0;
	/* 100,000 probes: one run (a register_kprobes() of them takes some
	 * 10 s here, and each row's child needs one). */
	int big_runs = getenv("BENCH_SCALE_BIG_RUNS") ?
		       atoi(getenv("BENCH_SCALE_BIG_RUNS")) : 1;

	build_pools();
	memset(rows, 0, sizeof(rows));
	rows[n++] = (struct bench_row){
		.name = "baseline", .variant = t->variant, .threads = 1,
		.iters = 5000000, .measure = bench_measure_call, .arg = t,
		.what = "unprobed call of the tiny function: ns per call",
	};
	rows[n++] = (struct bench_row){
		.name = "b", .variant = t->variant, .threads = 1, .iters = 100000,
		.over = "baseline", .measure = bench_measure_probe, .arg = t,
		.what = "kprobe, pre handler only (boosted), alone",
	};
	rows[n++] = (struct bench_row){
		.name = "b+10k", .variant = t->variant, .threads = 1,
		.iters = 100000, .over = "baseline", .measure = measure_crowded,
		.arg = t,
		.what = "b while 10,000 other probes (libz) are registered",
	};
	rows[n++] = (struct bench_row){
		.name = "o", .variant = t->variant, .threads = 1, .iters = 200000,
		.over = "baseline", .measure = bench_measure_probe, .arg = t,
		.what = "kprobe, pre handler only, OPTIMIZED, alone",
	};
	rows[n++] = (struct bench_row){
		.name = "o+10k", .variant = t->variant, .threads = 1,
		.iters = 200000, .over = "baseline", .measure = measure_crowded,
		.arg = t,
		.what = "o while 10,000 other probes (libz) are registered",
	};
	for (int c = 0; c < 4; c++) {
		int runs = counts[c] >= 100000 ? big_runs : 0;

		args[c] = (struct scale_arg){ &main_pool, counts[c] };
		snprintf(names[c], sizeof(names[c]), "%ld", counts[c]);
		rows[n++] = (struct bench_row){
			.name = "reg", .variant = names[c], .threads = 1,
			.iters = 1, .measure = measure_reg, .arg = &args[c],
			.unit = "ns/probe", .max_runs = runs,
			.what = "register_kprobe() one by one, in address order, "
				"optimizer on (wall column: incl. waiting for it)",
		};
		rows[n++] = (struct bench_row){
			.name = "unreg", .variant = names[c], .threads = 1,
			.iters = 1, .from = "reg", .from_index = 0,
			.unit = "ns/probe",
			.what = "unregister_kprobe() one by one, after the "
				"optimizer was done (same child as reg)",
		};
		rows[n++] = (struct bench_row){
			.name = "regs", .variant = names[c], .threads = 1,
			.iters = 1, .measure = measure_regs, .arg = &args[c],
			.unit = "ns/probe", .max_runs = runs,
			.what = "register_kprobes() of all N in one call",
		};
		rows[n++] = (struct bench_row){
			.name = "optall", .variant = names[c], .threads = 1,
			.iters = 1, .from = "regs", .from_index = 0,
			.unit = "ms", .clock = "wall time from the end of "
				"register_kprobes() until ukprobes_wait_optimizer() "
				"returns",
			.what = "ms until the background optimizer is done with "
				"them (same child as regs; how many it optimized: "
				"note)",
		};
		rows[n++] = (struct bench_row){
			.name = "rss", .variant = names[c], .threads = 1,
			.iters = 1, .from = "regs", .from_index = 1,
			.unit = "B/probe", .clock = "/proc/self/statm resident "
				"bytes after registration and optimization minus "
				"before, per probe",
			.what = "resident memory per probe (statm delta)",
		};
		rows[n++] = (struct bench_row){
			.name = "heap", .variant = names[c], .threads = 1,
			.iters = 1, .from = "regs", .from_index = 2,
			.unit = "B/probe", .clock = "mallinfo2() uordblks + "
				"hblkhd after minus before, per probe",
			.what = "malloc'ed bytes per probe (mallinfo2 delta)",
		};
		rows[n++] = (struct bench_row){
			.name = "unregs", .variant = names[c], .threads = 1,
			.iters = 1, .from = "regs", .from_index = 3,
			.unit = "ns/probe",
			.what = "unregister_kprobes() of all N in one call",
		};
	}
	rows[n++] = (struct bench_row){
		.name = "regs", .variant = "spread10000", .threads = 1,
		.iters = 1, .measure = measure_regs, .arg = &spread_arg,
		.unit = "ns/probe",
		.what = "register_kprobes() of 10,000 probes that can all be "
			"optimized (libz, then libzstd; 16 bytes apart or more) "
			"in one call",
	};
	rows[n++] = (struct bench_row){
		.name = "optall", .variant = "spread10000", .threads = 1,
		.iters = 1, .from = "regs", .from_index = 0, .unit = "ms",
		.clock = "wall time from the end of register_kprobes() until "
			 "ukprobes_wait_optimizer() returns",
		.what = "ms until the background optimizer is done with the "
			"10,000 spread probes (how many it optimized: note); "
			"goal < 100 ms",
	};
	rows[n++] = (struct bench_row){
		.name = "unregs", .variant = "spread10000", .threads = 1,
		.iters = 1, .from = "regs", .from_index = 3, .unit = "ns/probe",
		.what = "unregister_kprobes() of the 10,000 spread probes, "
			"optimized, in one call",
	};
	rows[n++] = (struct bench_row){
		.name = "reg", .variant = "libc10000", .threads = 1, .iters = 1,
		.measure = measure_reg, .arg = &libc_arg, .unit = "ns/probe",
		.max_runs = 1,
	};
	rows[n++] = (struct bench_row){
		.name = "unreg", .variant = "libc10000", .threads = 1, .iters = 1,
		.from = "reg", .from_index = 0, .unit = "ns/probe",
	};
	return bench_main(argc, argv, "scale", rows, n, ratios,
			  (int)(sizeof(ratios) / sizeof(ratios[0])));
}
