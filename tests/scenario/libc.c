/* SPDX-License-Identifier: MIT */
/*
 * libc.c - probes in a shared library: getpid by "libc.so.6:getpid" and by
 * plain "getpid", and strlen, an IFUNC, whose probe must land on the
 * implementation the program actually calls.
 *
 * Other code (Criterion, libc itself) may call these functions too, so the
 * handlers count only hits on the test thread while a window is open.
 */
#include "../support/ukp_test.h"
#include <dlfcn.h>
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
