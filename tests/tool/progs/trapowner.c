// SPDX-License-Identifier: MIT
/*
 * trapowner LIBUKPROBES MODE - a program with its own SIGTRAP handler that
 * uses libukprobes through dlopen(), so that libukprobes interposes none
 * of its calls (sigaction() goes to libc):
 *
 *   libc-before   its handler installed with libc's sigaction(), then
 *                 libukprobes loaded and a probe registered
 *   raw-before    the same with the bare rt_sigaction system call
 *   libc-after    a probe registered, then a new handler installed with
 *                 libc's sigaction(), then a second probe registered
 *   raw-after     the same with the bare system call
 *   preloaded     libukprobes already loaded (LD_PRELOAD, as gdb sets it):
 *                 its handler installed after the registration, through
 *                 libukprobes' sigaction()
 *
 * Then it calls the probed function 10 times and runs its own int3 once,
 * and prints "hits=N traps=T sum=S", and each message of the library as
 * "log: ...".
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ukprobes.h>

static volatile int traps, hits;

static void on_trap(int sig)
{
	(void)sig;
	traps++;
}

__attribute__((noinline, used)) long target(long x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + 1;
}

static long (*volatile target_fn)(long) = target;

static int pre(struct kprobe *p, struct pt_regs *regs)
{
	(void)p;
	(void)regs;
	hits++;
	return 0;
}

static int log_fn(enum ukprobes_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	printf("log: ");
	return vprintf(fmt, ap);
}

/* The program's handler, as libc would install it, but not through it. */
extern void trapowner_restore_rt(void) __asm__("trapowner_restore_rt");
__asm__(".text\n"
	"trapowner_restore_rt:\n"
	"	mov $15, %rax\n"
	"	syscall\n");

struct ksigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	unsigned long mask;
};

static void install(int raw)
{
	if (raw) {
		struct ksigaction k = { on_trap, 0x04000000 /* SA_RESTORER */,
					trapowner_restore_rt, 0 };

		syscall(SYS_rt_sigaction, SIGTRAP, &k, NULL, 8);
	} else {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_trap;
		sigaction(SIGTRAP, &sa, NULL);
	}
}

int main(int argc, char **argv)
{
	int (*reg)(struct kprobe *);
	ukprobes_print_fn_t (*set_print)(ukprobes_print_fn_t);
	struct kprobe kp, kp2;
	const char *mode;
	long sum = 0;
	void *h;
	int raw;

	if (argc < 3)
		return 2;
	mode = argv[2];
	raw = !strncmp(mode, "raw", 3);
	if (strstr(mode, "before"))
		install(raw);
	/* Preloaded: no dlopen(), which would stop in gdb's breakpoint on
	 * the dynamic linker. */
	h = !strcmp(mode, "preloaded") ? RTLD_DEFAULT : dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h && strcmp(mode, "preloaded")) {
		fprintf(stderr, "%s\n", dlerror());
		return 2;
	}
	reg = (int (*)(struct kprobe *))dlsym(h, "register_kprobe");
	set_print = (ukprobes_print_fn_t (*)(ukprobes_print_fn_t))dlsym(h, "ukprobes_set_print");
	if (!reg || !set_print)
		return 2;
	set_print(log_fn);
	memset(&kp, 0, sizeof(kp));
	kp.addr = (kprobe_opcode_t *)target;
	kp.pre_handler = pre;
	if (reg(&kp)) {
		printf("register failed\n");
		return 1;
	}
	if (strstr(mode, "after")) {
		install(raw);
		memset(&kp2, 0, sizeof(kp2));
		kp2.symbol_name = "getppid";
		kp2.pre_handler = pre;
		if (reg(&kp2)) {
			printf("second register failed\n");
			return 1;
		}
	}
	if (!strcmp(mode, "preloaded"))
		install(0);
	for (long i = 0; i < 10; i++)
		sum += target_fn(i);
	__asm__ volatile("int3" ::: "memory");
	printf("hits=%d traps=%d sum=%ld\n", hits, traps, sum);
	return 0;
}
