// SPDX-License-Identifier: MIT
/*
 * demo_program.c - the program that the ported kprobe_example "module" is
 * loaded into.  A kernel module probes the kernel it is loaded into; a
 * ukprobes "module" probes the program it is linked into.
 *
 *   demo_program [PARAM=VALUE ...]     as: insmod kprobe_example.ko PARAM=VALUE
 *   demo_program symbol=do_work        probe do_work(), called 5 times
 *   demo_program symbol=peek           probe the load in peek(), which faults
 *                                      once on a guard page
 *
 * What it does:
 *  1. installs its own SIGSEGV handler (before ukprobes takes the signal, so
 *     the chaining of an existing handler is exercised);
 *  2. "insmod": parses the parameters and calls the module's init
 *     (kprobe_init(): register_kprobe() on "symbol");
 *  3. runs a workload: do_work(1..5), then one read from a PROT_NONE guard
 *     page, whose SIGSEGV its handler fixes with mprotect() and returns;
 *  4. "rmmod": calls the module's exit (kprobe_exit(): unregister_kprobe()).
 *
 * With symbol=peek the probed instruction itself faults: handler_fault()
 * sees trap 14 and does not handle it, the program's SIGSEGV handler sees the
 * fault as it would without the probe, and when it returns the instruction is
 * executed again, so the probe fires again, as in the kernel.
 *
 * Exits 0 if the module loaded and the workload gave the expected results.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kernel_compat.h"

/* Keep the probed functions real functions with their own symbols: not
 * inlined, not cloned into do_work.constprop.0. */
#if defined(__clang__)
#define DEMO_PROBED __attribute__((noinline, used))
#else
#define DEMO_PROBED __attribute__((noipa, used))
#endif

DEMO_PROBED long do_work(int n);
DEMO_PROBED int peek(const volatile int *p);

/* Something to compute: the number of Collatz steps of 1..n*1000, summed. */
DEMO_PROBED long do_work(int n)
{
	long steps = 0;

	for (long i = 1; i <= (long)n * 1000; i++)
		for (unsigned long x = (unsigned long)i; x != 1; steps++)
			x = (x & 1) ? 3 * x + 1 : x / 2;
	return steps;
}

/* One load: the instruction a probe on "peek" sits on. */
DEMO_PROBED int peek(const volatile int *p)
{
	return *p;
}

static char *guard;
static size_t page_size;
static volatile sig_atomic_t segv_handled;

/* The program's own SIGSEGV handler: a guard page made readable on first
 * touch, the way a garbage collector or a lazy allocator does it. */
static void on_segv(int sig, siginfo_t *si, void *uc)
{
	char *a = si->si_addr;

	(void)uc;
	if (guard && a >= guard && a < guard + page_size &&
	    mprotect(guard, page_size, PROT_READ) == 0) {
		segv_handled++;
		return;
	}
	/* Not ours: die of it as without a handler. */
	signal(sig, SIG_DFL);
}

int main(int argc, char **argv)
{
	static const long expect[] = { 0, 59542, 134100, 215063, 299275, 387968 };
	struct sigaction sa;
	int ret, i, v, status = 0;

	/* Handlers write(2) directly; keep our lines in order with theirs. */
	setvbuf(stdout, NULL, _IOLBF, 0);

	page_size = (size_t)sysconf(_SC_PAGESIZE);
	guard = mmap(NULL, page_size, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (guard == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	*(int *)guard = 42;
	if (mprotect(guard, page_size, PROT_NONE) != 0) {
		perror("mprotect");
		return 1;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, NULL) != 0) {
		perror("sigaction");
		return 1;
	}

	/* insmod kprobe_example.ko argv[1] ... */
	for (i = 1; i < argc; i++) {
		ret = ukp_module_param(argv[i]);
		if (ret < 0) {
			fprintf(stderr, "demo_program: %s: %s\n", argv[i],
				ret == -ENOENT ? "unknown parameter" : strerror(-ret));
			return 2;
		}
	}
	printf("demo_program: loading kprobe_example\n");
	ret = ukp_module_init();
	if (ret < 0) {
		fprintf(stderr, "demo_program: kprobe_example init failed: %s\n",
			strerror(-ret));
		return 1;
	}

	for (i = 1; i <= 5; i++) {
		long r = do_work(i);

		printf("demo_program: do_work(%d) = %ld\n", i, r);
		if (r != expect[i])
			status = 1;
	}

	v = peek((const volatile int *)guard);
	printf("demo_program: peek(guard page) = %d, SIGSEGV handled by the program %d time(s)\n",
	       v, (int)segv_handled);
	if (v != 42 || segv_handled != 1)
		status = 1;

	/* rmmod kprobe_example */
	ukp_module_exit();

	if (status)
		fprintf(stderr, "demo_program: the workload gave wrong results\n");
	return status;
}
