/* SPDX-License-Identifier: MIT */
/*
 * libc.c - probes in a shared library: getpid by "libc.so.6:getpid" and by
 * plain "getpid", and strlen, an IFUNC, whose probe must land on the
 * implementation the program actually calls.  And the functions
 * libukprobes replaces (sigaction, sigprocmask, ...): a probe by their name
 * fires on the program's calls.
 *
 * Other code (Criterion, libc itself) may call these functions too, so the
 * handlers count only hits on the test thread while a window is open.
 */
#include "../support/ukp_test.h"
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <ukprobes.h>
#include "scn_util.h"

static pthread_t test_thread;
static volatile int window;
static volatile unsigned long hits_a, hits_b, post_hits;
static volatile unsigned long last_di;

static int counts(void)
{
	return window && pthread_equal(pthread_self(), test_thread);
}

static int pre_a(struct kprobe *p, struct pt_regs *regs)
{
	if (counts()) {
		hits_a++;
		last_di = regs->di;
	}
	return 0;
}

static int pre_b(struct kprobe *p, struct pt_regs *regs)
{
	if (counts())
		hits_b++;
	return 0;
}

static void post_c(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	if (counts())
		post_hits++;
}

static pid_t (*volatile getpid_fn)(void) = getpid;

#define N 1000

/* An object's function starting with endbr64 is probed after it. */
static void *entry_of(void *fn)
{
	return *(uint32_t *)fn == 0xfa1e0ff3u ? (char *)fn + 4 : fn;
}

static void getpid_case(const char *spec, int with_post)
{
	struct kprobe kp = { .symbol_name = spec, .pre_handler = pre_a };
	void *real = dlsym(RTLD_DEFAULT, "getpid");
	pid_t pid = getpid();

	if (with_post)
		kp.post_handler = post_c;
	test_thread = pthread_self();
	cr_assert_eq(register_kprobe(&kp), 0, "register_kprobe(\"%s\")", spec);
	cr_expect_eq((void *)kp.addr, entry_of(real), "%s at %p, libc's getpid at %p", spec,
		     (void *)kp.addr, real);
	window = 1;
	for (int i = 0; i < N; i++)
		cr_expect_eq(getpid_fn(), pid);
	window = 0;
	unregister_kprobe(&kp);
	cr_expect_eq(hits_a, N, "%s: %lu hits for %d calls", spec, hits_a, N);

	/* the listing names libc and the offset inside getpid */
	if (with_post) {
		char buf[1024] = { 0 }, expect[128];
		cr_assert_eq(register_kprobe((kp.addr = NULL, &kp)), 0);
		FILE *f = fmemopen(buf, sizeof(buf), "w");
		ukprobes_print_list(f);
		fclose(f);
		unregister_kprobe(&kp);
		snprintf(expect, sizeof(expect), "  k  libc.so.6:getpid+0x%lx",
			 (unsigned long)((char *)kp.addr - (char *)real));
		cr_expect(strstr(buf, expect) != NULL, "listing \"%s\" lacks \"%s\"", buf, expect);
	}
	if (with_post)
		cr_expect_eq(post_hits, N);
	cr_expect_eq(kp.nmissed, 0);
}

Test(libc, getpid_by_object_and_symbol, .timeout = 30)
{
	getpid_case("libc.so.6:getpid", 1);
}

Test(libc, getpid_by_symbol, .timeout = 30)
{
	getpid_case("getpid", 0);
}

Test(libc, getpid_unversioned_object_name, .timeout = 30)
{
	getpid_case("libc.so:getpid", 1);
}

Test(libc, getpid_two_probes_one_address, .timeout = 30)
{
	struct kprobe a = { .symbol_name = "libc.so.6:getpid", .pre_handler = pre_a,
			    .post_handler = post_c };
	struct kprobe b = { .symbol_name = "getpid", .pre_handler = pre_b };
	struct kprobe *kps[] = { &a, &b };
	pid_t pid = getpid();

	test_thread = pthread_self();
	cr_assert_eq(register_kprobes(kps, 2), 0);
	cr_expect_eq((void *)a.addr, (void *)b.addr);
	window = 1;
	for (int i = 0; i < N; i++)
		cr_expect_eq(getpid_fn(), pid);
	window = 0;
	unregister_kprobes(kps, 2);
	cr_expect_eq(hits_a, N);
	cr_expect_eq(hits_b, N);
	cr_expect_eq(post_hits, N);
	/* gone */
	window = 1;
	getpid_fn();
	window = 0;
	cr_expect_eq(hits_a, N);
}

static size_t (*volatile strlen_fn)(const char *) = strlen;

static void strlen_case(int with_post)
{
	struct kprobe kp = { .symbol_name = "strlen", .pre_handler = pre_a };
	void *impl = dlsym(RTLD_DEFAULT, "strlen");	/* IFUNC resolved */
#define S(x) { x, sizeof(x) - 1 }
	static const struct { const char *s; size_t len; } strs[] = {
		S(""), S("a"), S("hello, world"),
		S("a somewhat longer string that crosses sixteen bytes"),
		S("0123456789012345678901234567890123456789012345678901234567890123456789"),
	};
#undef S
	if (with_post)
		kp.post_handler = post_c;
	cr_assert_eq((void *)strlen_fn, impl, "test assumption: the pointer is the implementation");
	test_thread = pthread_self();
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_eq((void *)kp.addr, entry_of(impl),
		     "probe on \"strlen\" at %p; the implementation the program calls is %p",
		     (void *)kp.addr, impl);
	window = 1;
	unsigned long wrong = 0, calls = 0;
	for (int i = 0; i < N; i++) {
		if (strlen_fn(strs[i % 5].s) != strs[i % 5].len)
			wrong++;
		calls++;
	}
	window = 0;
	unregister_kprobe(&kp);
	cr_expect_eq(wrong, 0, "%lu wrong results", wrong);
	cr_expect_eq(hits_a, calls, "strlen probe: %lu hits for %lu calls", hits_a, calls);
	if (with_post)
		cr_expect_eq(post_hits, calls);
	cr_expect_eq(last_di, (unsigned long)strs[(N - 1) % 5].s, "argument seen in regs->di");
}

Test(libc, strlen_ifunc_single_step, .timeout = 30)
{
	strlen_case(1);
}

Test(libc, strlen_ifunc_boost, .timeout = 30)
{
	strlen_case(0);
}

/* ------------------------------------------------------------------------ */
/* Functions libukprobes replaces                                            */
/* ------------------------------------------------------------------------ */

/*
 * sigaction(), signal(), sigprocmask(), pthread_sigmask(), sigaltstack()
 * and posix_spawn() are libukprobes' own (ukprobes(7), "Signals"): the
 * program's calls land there.  A probe by their name must still fire on
 * each call, with the program's arguments; one on libc's own function
 * ("libc.so.6:NAME") fires where libukprobes lets libc do the work.
 */
static void handler_nop(int sig)
{
	(void)sig;
}

/* Calls each function @n times on this thread; NULL @only: all of them. */
static void call_interposed(const char *only, int n)
{
	struct sigaction sa, old;
	sigset_t m;
	stack_t ss;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler_nop;
	sigemptyset(&m);
	sigaddset(&m, SIGUSR1);
	for (int i = 0; i < n; i++) {
		if (!only || !strcmp(only, "sigprocmask"))
			sigprocmask(SIG_BLOCK, &m, NULL);
		if (!only || !strcmp(only, "pthread_sigmask"))
			pthread_sigmask(SIG_UNBLOCK, &m, NULL);
		if (!only || !strcmp(only, "signal"))
			signal(SIGUSR2, handler_nop);
		if (!only || !strcmp(only, "sigaction"))
			sigaction(SIGUSR1, &sa, &old);
		if (!only || !strcmp(only, "sigaltstack"))
			sigaltstack(NULL, &ss);
	}
}

static void interposed_case(const char *name, const char *spec, unsigned long want_min,
			    unsigned long want_max)
{
	struct kprobe kp = { .symbol_name = spec, .pre_handler = pre_a };

	test_thread = pthread_self();
	cr_assert_eq(register_kprobe(&kp), 0, "register_kprobe(\"%s\")", spec);
	window = 1;
	call_interposed(name, N);
	window = 0;
	unregister_kprobe(&kp);
	cr_expect(hits_a >= want_min && hits_a <= want_max,
		  "%s: %lu hits for %d calls of %s", spec, hits_a, N, name);
	hits_a = 0;
}

Test(libc, interposed_functions_by_name, .timeout = 30)
{
	static const char *const names[] = {
		"sigprocmask", "pthread_sigmask", "signal", "sigaction", "sigaltstack",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		interposed_case(names[i], names[i], N, N);
}

/* libukprobes has libc do the work of these: the probe in libc fires.
 * (libc's sigprocmask() calls its pthread_sigmask(), as without us.) */
Test(libc, interposed_functions_in_libc, .timeout = 30)
{
	interposed_case("sigprocmask", "libc.so.6:sigprocmask", N, N);
	interposed_case("pthread_sigmask", "libc.so.6:pthread_sigmask", N, N);
	interposed_case("sigprocmask", "libc.so.6:pthread_sigmask", N, N);
	interposed_case("sigaction", "libc.so.6:sigaction", N, N);
	interposed_case("sigaltstack", "libc.so.6:sigaltstack", N, N);
}

/* The program's arguments reach the probe on the replacement. */
static volatile unsigned long seen_how, seen_set;

static int pre_args(struct kprobe *p, struct pt_regs *regs)
{
	if (counts()) {
		hits_a++;
		seen_how = regs_get_kernel_argument(regs, 0);
		seen_set = regs_get_kernel_argument(regs, 1);
	}
	return 0;
}

static volatile unsigned long rets, last_ret;

static int ret_handler(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	if (counts()) {
		rets++;
		last_ret = regs_return_value(regs);
	}
	return 0;
}

Test(libc, interposed_function_arguments_and_return, .timeout = 30)
{
	struct kprobe kp = { .symbol_name = "sigprocmask", .pre_handler = pre_args };
	struct kretprobe rp = { .kp.symbol_name = "pthread_sigmask", .handler = ret_handler };
	sigset_t m;

	sigemptyset(&m);
	sigaddset(&m, SIGTRAP);		/* kept out of the kernel's mask */
	test_thread = pthread_self();
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert_eq(register_kretprobe(&rp), 0);
	window = 1;
	sigprocmask(SIG_BLOCK, &m, NULL);
	cr_expect_eq(pthread_sigmask(SIG_UNBLOCK, &m, NULL), 0);
	cr_expect_eq(pthread_sigmask(99, &m, NULL), EINVAL);
	window = 0;
	unregister_kprobe(&kp);
	unregister_kretprobe(&rp);
	cr_expect_eq(hits_a, 1);
	cr_expect_eq(seen_how, SIG_BLOCK);
	cr_expect_eq(seen_set, (unsigned long)&m);
	cr_expect_eq(rets, 2);
	cr_expect_eq(last_ret, EINVAL);
}

/* Only the entry: inside, the replacements take ukprobes' locks.  (Named
 * with its object: under a sanitizer, "sigaction" is its interceptor,
 * first in the lookup order.) */
Test(libc, interposed_function_body_refused, .timeout = 30)
{
	struct kprobe kp = { .symbol_name = "libukprobes.so:sigaction", .pre_handler = pre_a };

	cr_assert_eq(register_kprobe(&kp), 0);
	for (int off = 1; off < 16; off++) {
		struct kprobe in = { .addr = (kprobe_opcode_t *)kp.addr + off, .pre_handler = pre_a };
		int err = register_kprobe(&in);

		cr_expect(err == -EINVAL || err == -EILSEQ, "sigaction's entry+%d: %d", off, err);
		if (!err)
			unregister_kprobe(&in);
	}
	unregister_kprobe(&kp);
}

/* The replacements call no libc function the program did not call: a
 * probe on getpid() (which they need to tell a vfork child) sees none. */
static volatile unsigned long any_hits;

static int pre_any(struct kprobe *p, struct pt_regs *regs)
{
	if (window)
		any_hits++;
	return 0;
}

Test(libc, replacements_leave_getpid_alone, .timeout = 30)
{
	struct kprobe kp = { .symbol_name = "libc.so.6:getpid", .pre_handler = pre_any };

	cr_assert_eq(register_kprobe(&kp), 0);
	window = 1;
	call_interposed(NULL, N);
	window = 0;
	unregister_kprobe(&kp);
	cr_expect_eq(any_hits, 0, "%lu getpid() calls", any_hits);
}
