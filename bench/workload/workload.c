/* SPDX-License-Identifier: MIT */
/*
 * workload.c - the program that Linux uprobes, bpftrace and gdb probe from
 * outside (bench/tools.c runs it): it calls one of the tiny workload
 * functions of bench/common/targets.S in a loop, the same functions the
 * ukprobes rows probe from inside, and times its own loop.  It does not use
 * libukprobes.
 *
 *   workload VARIANT ITERS [--threads N] [--warmup N] [--wait-probe S]
 *            [--settle-ms MS] [--out FILE]
 *
 * --wait-probe S: before the warm-up, wait (up to S seconds) until the
 * function's first byte differs from the byte in the executable file, i.e.
 * until a tracer has planted its breakpoint: "bpftrace printed Attaching"
 * comes before the probe is really in.  --settle-ms MS: then wait MS more
 * (bpftrace plants the breakpoint before its program is attached to it:
 * hits in between would not be counted).
 *
 * Writes one line (to FILE, else stdout):
 *   ok variant=V iters=N threads=T thread_cpu_ns=X wall_ns=X proc_cpu_ns=X
 *      utime_us=X stime_us=X wait_ms=X calls=N bytes=cc1f4400...
 * thread_cpu_ns and wall_ns are per call, averaged over the threads (each
 * thread's own clocks); proc_cpu_ns (CLOCK_PROCESS_CPUTIME_ID), utime_us and
 * stime_us (getrusage) are totals for the timed loops; calls is how many
 * times the function ran in all (warm-ups and the threads' tries included:
 * what a tracer should have counted); bytes are the
 * function's first 5 bytes after the loop (int3 = cc; e8 = a call, as an
 * optimized uprobe leaves).  Exit status 0, or 1 with "error ..." instead.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "targets.h"

static FILE *out;

static void die(const char *fmt, const char *a)
{
	fprintf(out, "error ");
	fprintf(out, fmt, a);
	fprintf(out, "\n");
	fclose(out);
	exit(1);
}

struct phdr_ctx {
	uintptr_t vaddr;	/* of the function, relative to the load base */
	long off;		/* file offset, -1 until found */
};

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct phdr_ctx *c = arg;

	(void)size;
	/* The first object is the program itself. */
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && c->vaddr >= ph->p_vaddr &&
		    c->vaddr < ph->p_vaddr + ph->p_filesz)
			c->off = (long)(c->vaddr - ph->p_vaddr + ph->p_offset);
	}
	return 1;
}

/* The function's first byte as in the executable file. */
static int file_byte(void *fn, unsigned char *b)
{
	Dl_info di;
	struct phdr_ctx c = { 0, -1 };
	int fd, ok;

	if (!dladdr(fn, &di))
		return -1;
	c.vaddr = (uintptr_t)fn - (uintptr_t)di.dli_fbase;
	dl_iterate_phdr(phdr_cb, &c);
	if (c.off < 0)
		return -1;
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ok = pread(fd, b, 1, c.off) == 1;
	close(fd);
	return ok ? 0 : -1;
}

static uint64_t ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static long tv_us(struct timeval tv)
{
	return tv.tv_sec * 1000000L + tv.tv_usec;
}

int main(int argc, char **argv)
{
	const struct bench_target *t = NULL;
	long iters, warmup = 1000, threads = 1;
	double wait_s = 0;
	long settle_ms = 0;
	const char *outpath = NULL;
	struct bench_result res;
	struct rusage r0, r1;
	uint64_t p0, p1;
	long waited_ms = 0, calls;
	unsigned char orig;
	volatile unsigned char *code;

	out = stdout;
	if (argc < 3) {
		fprintf(stderr, "usage: %s VARIANT ITERS [--threads N] "
			"[--warmup N] [--wait-probe S] [--out FILE]\n", argv[0]);
		return 2;
	}
	for (int i = 3; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--threads"))
			threads = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--warmup"))
			warmup = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--wait-probe"))
			wait_s = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--settle-ms"))
			settle_ms = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--out"))
			outpath = argv[i + 1];
	}
	if (outpath && !(out = fopen(outpath, "w"))) {
		perror(outpath);
		return 1;
	}
	for (int i = 0; i < BENCH_NTARGETS; i++)
		if (!strcmp(bench_targets[i].variant, argv[1]))
			t = &bench_targets[i];
	if (!t)
		die("no variant %s", argv[1]);
	iters = atol(argv[2]);
	if (iters < 1 || threads < 1 || warmup < 0)
		die("bad arguments%s", "");
	code = (volatile unsigned char *)t->fn;
	if (file_byte((void *)t->fn, &orig))
		die("cannot read %s from /proc/self/exe", t->variant);
	if (wait_s > 0) {
		struct timespec d = { 0, 1000 * 1000 };

		while (code[0] == orig && waited_ms < wait_s * 1000) {
			nanosleep(&d, NULL);
			waited_ms++;
		}
		if (code[0] == orig)
			die("no probe appeared at %s within the wait", t->variant);
	}
	if (settle_ms > 0) {
		struct timespec d = { settle_ms / 1000,
				      (settle_ms % 1000) * 1000 * 1000 };

		nanosleep(&d, NULL);
	}

	memset(&res, 0, sizeof(res));
	if (threads == 1) {
		struct bench_time tm;

		bench_call_loop(t->fn, warmup, &tm);
		getrusage(RUSAGE_SELF, &r0);
		p0 = ns(CLOCK_PROCESS_CPUTIME_ID);
		if (bench_call_loop(t->fn, iters, &tm) != bench_call_sum(iters))
			die("%s returned wrong values", t->variant);
		p1 = ns(CLOCK_PROCESS_CPUTIME_ID);
		getrusage(RUSAGE_SELF, &r1);
		bench_result_set(&res, &tm, iters);
		calls = warmup + iters;
	} else {
		/* Warm-up inside, each thread; the totals include it. */
		getrusage(RUSAGE_SELF, &r0);
		p0 = ns(CLOCK_PROCESS_CPUTIME_ID);
		bench_call_threads(t->fn, warmup, iters, (int)threads, NULL,
				   NULL, &res);
		p1 = ns(CLOCK_PROCESS_CPUTIME_ID);
		getrusage(RUSAGE_SELF, &r1);
		if (!res.ok)
			die("%s", res.note);
		calls = (long)bench_call_threads_tries * threads * (warmup + iters);
	}
	fprintf(out, "ok variant=%s iters=%ld threads=%ld thread_cpu_ns=%.3f "
		"wall_ns=%.3f proc_cpu_ns=%llu utime_us=%ld stime_us=%ld "
		"wait_ms=%ld calls=%ld bytes=%02x%02x%02x%02x%02x\n", t->variant, iters,
		threads, res.ns_per_op, res.wall_ns_per_op,
		(unsigned long long)(p1 - p0),
		tv_us(r1.ru_utime) - tv_us(r0.ru_utime),
		tv_us(r1.ru_stime) - tv_us(r0.ru_stime), waited_ms, calls,
		code[0], code[1], code[2], code[3], code[4]);
	fclose(out);
	return 0;
}
