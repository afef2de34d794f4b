// SPDX-License-Identifier: MIT
/*
 * code_patch_probe.c - what happens here to code patched at run time, for
 * the ports (the self-check that shared/PORTING.md describes): is this
 * real hardware, where a write through /proc/self/mem is seen by the next
 * execution, or qemu-user, which keeps running its translation of the old
 * bytes (and, on 32-bit guests, may put the write somewhere else)?
 *
 * No machine code is written by hand: the bytes of three small compiled
 * functions (return 0x11, 0x22, 0x33) are copied into a private page, so
 * the same source works for every architecture.  Steps, each reported:
 *   1. copy ret_a into the page, make it executable, call it (0x11);
 *   2. write ret_b's bytes over it through /proc/self/mem: where did they
 *      land (the page, a neighbour page, nowhere seen), and does the next
 *      call run them (0x22) or the old code (0x11)?
 *   3. mprotect the page RW and RX again, without writing: does the call
 *      now run what is in memory?
 *   4. mprotect RW, store ret_c's bytes, clear the cache, mprotect RX:
 *      the call must return 0x33 everywhere;
 *   5. do /proc/self/maps and /proc/thread-self/maps name qemu?
 * The experiment runs in a child process: a misplaced write may kill it.
 * Exit status 0 when step 4 worked (the way ukprobes patches under qemu),
 * 1 otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#define COPY 64		/* bytes copied: more than each function needs */

__attribute__((noinline, noipa)) int ret_a(void) { return 0x11; }
__attribute__((noinline, noipa)) int ret_b(void) { return 0x22; }
__attribute__((noinline, noipa)) int ret_c(void) { return 0x33; }
/* (keeps COPY bytes after ret_c inside the text) */
__attribute__((noinline, noipa)) int ret_pad(int x) { return x * 3 + 1; }

struct result {
	int ran_a, after_mem_write, after_mprotect, after_store;
	int mem_write_errno;
	long landed;		/* offset from the page, or LONG_MIN: not seen */
	int maps_qemu, thread_maps_qemu;
	int step;		/* last step reached */
};

/* A function's bytes, and the bit a call to it carries (Thumb). */
static const unsigned char *code_of(int (*f)(void), uintptr_t *bit)
{
	*bit = (uintptr_t)f & 1;
	return (const unsigned char *)((uintptr_t)f & ~(uintptr_t)1);
}

static int call_at(unsigned char *p, uintptr_t bit)
{
	int (*f)(void) = (int (*)(void))(uintptr_t)((uintptr_t)p | bit);

	return f();
}

static int mentions_qemu(const char *path)
{
	char line[4096];
	FILE *f = fopen(path, "r");
	int found = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "qemu"))
			found = 1;
	fclose(f);
	return found;
}

static void experiment(struct result *r)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t bit, bit_b, bit_c;
	const unsigned char *a = code_of(ret_a, &bit), *b = code_of(ret_b, &bit_b), *c = code_of(ret_c, &bit_c);
	unsigned char *m = mmap(NULL, 3 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	r->landed = LONG_MIN;
	if (m == MAP_FAILED)
		return;
	unsigned char *page = m + pg;

	/* 1 */
	memcpy(page, a, COPY);
	__builtin___clear_cache((char *)page, (char *)page + COPY);
	mprotect(page, (size_t)pg, PROT_READ | PROT_EXEC);
	r->step = 1;
	r->ran_a = call_at(page, bit);

	/* 2 */
	int fd = open("/proc/self/mem", O_RDWR);
	ssize_t w = fd < 0 ? -1 : pwrite(fd, b, COPY, (off_t)(uintptr_t)page);

	r->mem_write_errno = w == COPY ? 0 : (w < 0 ? errno : EIO);
	if (fd >= 0)
		close(fd);
	r->step = 2;
	for (long off = -pg; off <= pg && w == COPY; off += 4) {
		if (!memcmp(page + off, b, COPY)) {
			r->landed = off;
			break;
		}
	}
	r->after_mem_write = call_at(page, bit_b);

	/* 3 */
	mprotect(page, (size_t)pg, PROT_READ | PROT_WRITE);
	mprotect(page, (size_t)pg, PROT_READ | PROT_EXEC);
	r->step = 3;
	r->after_mprotect = call_at(page, bit_b);

	/* 4 */
	mprotect(page, (size_t)pg, PROT_READ | PROT_WRITE);
	memcpy(page, c, COPY);
	__builtin___clear_cache((char *)page, (char *)page + COPY);
	mprotect(page, (size_t)pg, PROT_READ | PROT_EXEC);
	r->step = 4;
	r->after_store = call_at(page, bit_c);

	/* 5 */
	r->maps_qemu = mentions_qemu("/proc/self/maps");
	r->thread_maps_qemu = mentions_qemu("/proc/thread-self/maps");
	r->step = 5;
}

static const char *ran(int v)
{
	switch (v) {
	case 0x11: return "the old code (0x11)";
	case 0x22: return "the new code (0x22)";
	case 0x33: return "the stored code (0x33)";
	case 0: return "(not reached)";
	default: return "something else";
	}
}

int main(void)
{
	struct result *r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct utsname u;
	int st;

	if (r == MAP_FAILED)
		return 1;
	uname(&u);
	pid_t pid = fork();

	if (pid == 0) {
		experiment(r);
		_exit(0);
	}
	waitpid(pid, &st, 0);

	printf("code patching on %s (page %ld bytes):\n", u.machine, sysconf(_SC_PAGESIZE));
	printf("  1. copied code runs:                     %s\n", r->ran_a == 0x11 ? "yes" : ran(r->ran_a));
	if (r->mem_write_errno)
		printf("  2. /proc/self/mem write:                 failed: %s\n", strerror(r->mem_write_errno));
	else if (r->landed == 0)
		printf("  2. /proc/self/mem write:                 landed on the page\n");
	else if (r->landed == LONG_MIN)
		printf("  2. /proc/self/mem write:                 NOT seen on the page nor its neighbours\n");
	else
		printf("  2. /proc/self/mem write:                 landed %+ld bytes away from the page\n", r->landed);
	if (r->step >= 2)
		printf("     next call ran:                        %s\n", ran(r->after_mem_write));
	if (r->step >= 3)
		printf("  3. after mprotect RW->RX, the call ran:  %s\n", ran(r->after_mprotect));
	if (r->step >= 4)
		printf("  4. mprotect RW, store, RX, call ran:     %s\n", ran(r->after_store));
	if (r->step >= 5)
		printf("  5. qemu named in /proc/self/maps: %s, in /proc/thread-self/maps: %s\n",
		       r->maps_qemu > 0 ? "yes" : "no", r->thread_maps_qemu > 0 ? "yes" : "no");
	if (WIFSIGNALED(st))
		printf("  the experiment died of signal %d (%s) after step %d\n", WTERMSIG(st),
		       strsignal(WTERMSIG(st)), r->step);
	if (r->step >= 2) {
		int live = r->landed == 0 && r->after_mem_write == 0x22;

		printf("  verdict: %s\n", live ? "a /proc/self/mem write runs at once (real hardware)"
			: "a /proc/self/mem write does not run as written (emulator: patch by mprotect + store)");
	}
	return r->after_store == 0x33 ? 0 : 1;
}
