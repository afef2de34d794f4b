/* SPDX-License-Identifier: MIT */
/*
 * optprobes.c - jump optimization (optprobes): a probe is registered as a
 * breakpoint and later replaced by a 5-byte jmp to a detour when its region
 * is safe; changes to the point unoptimize it at once.
 *
 *   states:      [OPTIMIZED] in the listing and KPROBE_FLAG_OPTIMIZED, 0xe9
 *                at the probe, the original bytes back after unregister;
 *                the background optimizer without ukprobes_wait_optimizer();
 *                several probes at one address; back-to-back regions
 *   transitions: exact hit counts while 4 threads run the probed code and
 *                the switch, disable/enable flip (free-running and in
 *                paused windows)
 *   regions:     RIP-relative loads and stores, jmp/jcc out of the region,
 *                loops through the probe, one long instruction; refusals
 *                (jump into the region, indirect jmp in the function, call,
 *                indirect call, syscall, loop, endbr64 in the region,
 *                function too short, another probe inside) stay
 *                breakpoints and still work
 *   knobs:       the optimization switch, UKPROBES_OPTIMIZATION=0 (in a
 *                fresh process), the kprobes/enabled switch, disable/enable,
 *                a post handler, a jprobe, a redirecting pre handler
 *   state:       xmm, ymm, zmm/k, x87 (live and full stack), general
 *                registers, flags, DF, errno, red zone, stack and pt_regs
 *                alignment, KPROBE_FLAG_GPR_ONLY alone and mixed
 *   threads:     unregister under load, blocked system calls across
 *                (un)optimization, reentry (nmissed), fork
 *   kretprobes (exact counts; vector arguments at entry), patchable
 *   function entries ([FTRACE]), faults in the region (the program sees the
 *   original address), a thread stopped in a region by a signal handler
 *   while it is optimized, and a probe on every instruction of zlib's
 *   deflate().
 */
#include "../support/ukp_test.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <Zydis/Zydis.h>
#include <zlib.h>

#include <ukprobes.h>
#include "scn_util.h"

#define say(...) do { fprintf(stderr, __VA_ARGS__); fflush(stderr); } while (0)

/* The targets (optprobes.S). */
extern char opt_basic[], opt_basic_p[], opt_basic_2[], opt_basic_3[];
extern char opt_load[], opt_load_p[], opt_load2[], opt_load2_p[];
extern char opt_rip[], opt_rip_p[], opt_rip1[], opt_rip1_p[];
extern char opt_ripst[], opt_ripst_p[];
extern char opt_jcc[], opt_jcc_p[], opt_jmp[], opt_jmp_p[];
extern char opt_loop[], opt_loop_p[], opt_loop3[], opt_loop3_p[];
extern char opt_jin[], opt_jin_p[], opt_jin_mid[];
extern char opt_ind[], opt_ind_p[], opt_ind_big[];
extern char opt_call[], opt_call_p[], opt_call_c[];
extern char opt_icall[], opt_icall_p[];
extern char opt_short[], opt_short_p[];
extern char opt_sys[], opt_sys_p[];
extern char opt_loopi[], opt_loopi_p[];
extern char opt_endbr[], opt_endbr_p[], opt_endbr_first[], opt_endbr_first_p[];
extern char opt_nb[], opt_nb_p[], opt_nb_2[];
extern char opt_redir[], opt_redir_p[], opt_redir_alt[];
extern char opt_vec_xmm[], opt_vec_xmm_p[], opt_vec_ymm[], opt_vec_ymm_p[];
extern char opt_vec_zmm[], opt_vec_zmm_p[], opt_x87[], opt_x87_p[];
extern char opt_gpr[], opt_gpr_p[], opt_df[], opt_df_p[];
extern char opt_redzone[], opt_redzone_p[];
extern char opt_align[], opt_align_p0[], opt_align_p1[], opt_align_p2[];
extern char opt_fault[], opt_fault_p[], opt_fault_ld[];
extern char opt_fault1[], opt_fault1_p[];
extern char opt_kret[], opt_kret_vec[];
extern char opt_fentry[], opt_fentry_body[];
extern long opt_rip_data, opt_rip_store;
extern unsigned long opt_gpr_vals[15], opt_gpr_sp[2], opt_gpr_flags;

typedef long (*fn1_t)(long);
typedef long (*fn2_t)(long, long);
typedef long (*fn0_t)(void);
typedef void (*vec_t)(const void *, void *);

/* Called through volatile pointers, so that calls stay calls. */
static fn1_t volatile f_basic = (fn1_t)opt_basic;
static fn1_t volatile f_load = (fn1_t)opt_load;
static fn1_t volatile f_load2 = (fn1_t)opt_load2;
static fn1_t volatile f_rip = (fn1_t)opt_rip;
static fn1_t volatile f_rip1 = (fn1_t)opt_rip1;
static fn1_t volatile f_ripst = (fn1_t)opt_ripst;
static fn1_t volatile f_jcc = (fn1_t)opt_jcc;
static fn1_t volatile f_jmp = (fn1_t)opt_jmp;
static fn1_t volatile f_loop = (fn1_t)opt_loop;
static fn1_t volatile f_loop3 = (fn1_t)opt_loop3;
static fn2_t volatile f_jin = (fn2_t)opt_jin;
static fn1_t volatile f_ind = (fn1_t)opt_ind;
static fn1_t volatile f_call = (fn1_t)opt_call;
static long (*volatile f_icall)(long, fn1_t) = (long (*)(long, fn1_t))opt_icall;
static fn1_t volatile f_short = (fn1_t)opt_short;
static fn0_t volatile f_sys = (fn0_t)opt_sys;
static fn1_t volatile f_loopi = (fn1_t)opt_loopi;
static fn1_t volatile f_endbr = (fn1_t)opt_endbr;
static fn1_t volatile f_endbr_first = (fn1_t)opt_endbr_first;
static fn1_t volatile f_nb = (fn1_t)opt_nb;
static fn1_t volatile f_redir = (fn1_t)opt_redir;
static vec_t volatile f_vec_xmm = (vec_t)opt_vec_xmm;
static vec_t volatile f_vec_ymm = (vec_t)opt_vec_ymm;
static vec_t volatile f_vec_zmm = (vec_t)opt_vec_zmm;
static void (*volatile f_x87)(const double *, double *) =
	(void (*)(const double *, double *))opt_x87;
static void (*volatile f_gpr)(unsigned long *) = (void (*)(unsigned long *))opt_gpr;
static unsigned long (*volatile f_df)(long) = (unsigned long (*)(long))opt_df;
static fn1_t volatile f_redzone = (fn1_t)opt_redzone;
static fn1_t volatile f_align = (fn1_t)opt_align;
static long (*volatile f_fault)(long *) = (long (*)(long *))opt_fault;
static long (*volatile f_fault1)(long *) = (long (*)(long *))opt_fault1;
static fn1_t volatile f_kret = (fn1_t)opt_kret;
static void (*volatile f_kret_vec)(double *, double, double, double, double,
				   double, double, double, double) =
	(void (*)(double *, double, double, double, double, double, double,
		  double, double))opt_kret_vec;
static fn1_t volatile f_fentry = (fn1_t)opt_fentry;

/* ---------------------------------------------------------------------- */
/* Helpers                                                                 */
/* ---------------------------------------------------------------------- */

/* What the listing says about the probes at @addr. */
struct lst {
	int lines, optimized, ftrace, disabled;
	int total_lines, total_optimized;
};

static struct lst list_at(const void *addr)
{
	struct lst r = { 0 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	char key[40];

	cr_assert_not_null(f);
	int n = ukprobes_print_list(f);
	fclose(f);
	cr_assert_geq(n, 0, "ukprobes_print_list() = %d", n);
	snprintf(key, sizeof(key), "%016lx  ", (unsigned long)addr);
	for (char *line = buf; line && *line;) {
		char *nl = strchr(line, '\n');

		if (nl)
			*nl = 0;
		r.total_lines++;
		if (strstr(line, "[OPTIMIZED]"))
			r.total_optimized++;
		if (!strncmp(line, key, strlen(key))) {
			r.lines++;
			r.optimized += !!strstr(line, "[OPTIMIZED]");
			r.ftrace += !!strstr(line, "[FTRACE]");
			r.disabled += !!strstr(line, "[DISABLED]");
		}
		line = nl ? nl + 1 : NULL;
	}
	free(buf);
	return r;
}

static void print_list(void)
{
	ukprobes_print_list(stderr);
}

static unsigned char code_at(const void *addr)
{
	return *(const volatile unsigned char *)addr;
}

/*
 * Check that @kp is optimized (or not) by every sign: its flags, the
 * listing, the byte at the probe (0xe9 jmp / 0xcc int3).  @what names the
 * step in messages.
 */
static void expect_state(const struct kprobe *kp, bool optimized, const char *what)
{
	struct lst l = list_at(kp->addr);
	unsigned char b = code_at(kp->addr);

	cr_expect_geq(l.lines, 1, "%s: probe at %p not in the listing", what,
		      (void *)kp->addr);
	if (optimized) {
		cr_expect(kp->flags & KPROBE_FLAG_OPTIMIZED,
			  "%s: KPROBE_FLAG_OPTIMIZED not set (flags %#x)", what, kp->flags);
		cr_expect(kprobe_optimized((struct kprobe *)kp), "%s: kprobe_optimized() = 0", what);
		cr_expect_eq(l.optimized, l.lines, "%s: listing shows [OPTIMIZED] on %d of %d lines",
			     what, l.optimized, l.lines);
		cr_expect_eq(b, 0xe9, "%s: byte at the probe is 0x%02x, not a jmp (0xe9)", what, b);
	} else {
		cr_expect(!(kp->flags & KPROBE_FLAG_OPTIMIZED),
			  "%s: KPROBE_FLAG_OPTIMIZED set (flags %#x)", what, kp->flags);
		cr_expect_eq(l.optimized, 0, "%s: listing shows [OPTIMIZED]", what);
		if (!kprobe_disabled((struct kprobe *)kp))
			cr_expect_eq(b, 0xcc, "%s: byte at the probe is 0x%02x, not int3", what, b);
	}
	if ((bool)(kp->flags & KPROBE_FLAG_OPTIMIZED) != optimized)
		print_list();
}

/* Wait for the optimizer; true if the probe is optimized then. */
static bool wait_opt(const struct kprobe *kp)
{
	int left = ukprobes_wait_optimizer();

	cr_expect_eq(left, 0, "ukprobes_wait_optimizer() left %d probes waiting", left);
	return (kp->flags & KPROBE_FLAG_OPTIMIZED) != 0;
}

/* Counting handlers. */
static atomic_ulong hits, posts, bad_ip;
static volatile unsigned long last_ip, last_sp;

static int count_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add_explicit(&hits, 1, memory_order_relaxed);
	if (regs->ip != (unsigned long)p->addr)
		atomic_fetch_add_explicit(&bad_ip, 1, memory_order_relaxed);
	last_ip = regs->ip;
	last_sp = regs->sp;
	return 0;
}

static void count_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	atomic_fetch_add_explicit(&posts, 1, memory_order_relaxed);
}

static void reset_counts(void)
{
	atomic_store(&hits, 0);
	atomic_store(&posts, 0);
	atomic_store(&bad_ip, 0);
}

static struct kprobe mkprobe(void *addr)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)addr, .pre_handler = count_pre };
	return kp;
}

/* ---------------------------------------------------------------------- */
/* 1. States: listing, flags, bytes                                        */
/* ---------------------------------------------------------------------- */

Test(optprobes, states_listing_flags_bytes, .timeout = 30)
{
	unsigned char orig[16], now[16];
	struct kprobe kp = mkprobe(opt_basic_p);

	cr_assert_eq(ukprobes_optimization(), 1, "optimization is off by default");
	memcpy(orig, opt_basic_p, sizeof(orig));
	cr_assert_eq(register_kprobe(&kp), 0);

	/* Just registered: a breakpoint, unless the optimizer was quick. */
	unsigned char b = code_at(opt_basic_p);
	cr_expect(b == 0xcc || (b == 0xe9 && kprobe_optimized(&kp)),
		  "right after register_kprobe: byte 0x%02x, flags %#x", b, kp.flags);

	/* The background optimizer gets there by itself (5 ms batching). */
	long long t0 = scn_now_ns();
	while (!kprobe_optimized(&kp) && scn_now_ns() - t0 < 3000000000LL)
		usleep(1000);
	cr_expect(kprobe_optimized(&kp), "not optimized 3 s after registration "
		  "without ukprobes_wait_optimizer()");
	say("states: background optimizer took %.1f ms\n", (scn_now_ns() - t0) / 1e6);
	cr_expect_eq(ukprobes_wait_optimizer(), 0);
	expect_state(&kp, true, "after wait");

	/* The jmp goes out of the function (to the detour), the rest of the
	 * region is unchanged, and nothing past the jmp changed. */
	memcpy(now, opt_basic_p, sizeof(now));
	int32_t rel;
	memcpy(&rel, now + 1, 4);
	uintptr_t dest = (uintptr_t)opt_basic_p + 5 + (intptr_t)rel;
	cr_expect(dest < (uintptr_t)opt_basic || dest >= (uintptr_t)opt_basic + 16,
		  "the jmp goes to %#lx, inside the function", (unsigned long)dest);
	cr_expect_eq(memcmp(now + 5, orig + 5, sizeof(orig) - 5), 0,
		     "bytes past the jmp changed");

	/* Works, and handlers see ip == the probe address. */
	reset_counts();
	for (long i = 0; i < 10000; i++)
		cr_assert_eq(f_basic(i), (i + 7) * 3);
	cr_expect_eq(atomic_load(&hits), 10000, "%lu hits", atomic_load(&hits));
	cr_expect_eq(atomic_load(&bad_ip), 0, "regs->ip was %#lx, probe at %p", last_ip,
		     (void *)opt_basic_p);
	cr_expect_eq(kp.nmissed, 0);

	unregister_kprobe(&kp);
	memcpy(now, opt_basic_p, sizeof(now));
	cr_expect_eq(memcmp(now, orig, sizeof(orig)), 0, "the original bytes are not back");
	cr_expect_eq(list_at(opt_basic_p).lines, 0);
	cr_expect_eq(f_basic(5), 36);
	cr_expect_eq(atomic_load(&hits), 10000, "hit after unregister");
}

/* Several probes on one address are optimized together; the listing shows
 * each. */
Test(optprobes, aggregate_probes_optimized, .timeout = 30)
{
	struct kprobe a = mkprobe(opt_basic_p), b = mkprobe(opt_basic_p);

	cr_assert_eq(register_kprobe(&a), 0);
	cr_assert_eq(register_kprobe(&b), 0);
	cr_expect(wait_opt(&a));
	expect_state(&a, true, "a");
	expect_state(&b, true, "b");
	cr_expect_eq(list_at(opt_basic_p).lines, 2);
	reset_counts();
	for (long i = 0; i < 1000; i++)
		cr_assert_eq(f_basic(i), (i + 7) * 3);
	cr_expect_eq(atomic_load(&hits), 2000);
	unregister_kprobe(&a);
	/* b alone: redone from scratch, optimized again. */
	cr_expect(wait_opt(&b));
	expect_state(&b, true, "b alone");
	unregister_kprobe(&b);
	cr_expect_eq(code_at(opt_basic_p), 0x48);
}

/* Two optimized regions back to back: the first detour jumps back onto
 * the second probe's jmp. */
Test(optprobes, adjacent_regions_chain, .timeout = 30)
{
	struct kprobe a = mkprobe(opt_basic_p), b = mkprobe(opt_basic_3);
	struct kprobe *all[] = { &a, &b };

	cr_assert_eq(register_kprobes(all, 2), 0);
	cr_expect_eq(ukprobes_wait_optimizer(), 0);
	expect_state(&a, true, "mov; add");
	expect_state(&b, true, "imul; ret (right after a's region)");
	reset_counts();
	for (long i = 0; i < 1000; i++)
		cr_assert_eq(f_basic(i), (i + 7) * 3);
	cr_expect_eq(atomic_load(&hits), 2000);
	cr_expect_eq(atomic_load(&bad_ip), 0);
	unregister_kprobes(all, 2);
	cr_expect_eq(memcmp(opt_basic_p, "\x48\x89\xf8\x48\x83\xc0\x07\x48\x6b\xc0\x03\xc3", 12), 0);
}

/* A probe hit inside a handler runs no handler and counts in nmissed;
 * the function still runs. */

static int reent_outer_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add(&hits, 1);
	if (f_load((long)regs->di) != (long)regs->di + 1)
		atomic_fetch_add(&bad_ip, 1);
	return 0;
}

__attribute__((target("general-regs-only")))
static int reent_outer_gpr_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add(&hits, 1);
	if (f_load((long)regs->di) != (long)regs->di + 1)
		atomic_fetch_add(&bad_ip, 1);
	return 0;
}

Test(optprobes, reentry_counts_nmissed, .timeout = 30)
{
	for (int g = 0; g < 2; g++) {
		struct kprobe outer = { .addr = (kprobe_opcode_t *)opt_basic_p,
					.pre_handler = g ? reent_outer_gpr_pre : reent_outer_pre,
					.flags = g ? KPROBE_FLAG_GPR_ONLY : 0 };
		struct kprobe inner = { .addr = (kprobe_opcode_t *)opt_load_p,
					.pre_handler = count_pre,
					.flags = g ? KPROBE_FLAG_GPR_ONLY : 0 };
		struct kprobe *all[] = { &outer, &inner };

		cr_assert_eq(register_kprobes(all, 2), 0);
		cr_expect_eq(ukprobes_wait_optimizer(), 0);
		expect_state(&outer, true, "outer");
		expect_state(&inner, true, "inner");
		reset_counts();
		for (long i = 0; i < 500; i++)
			cr_assert_eq(f_basic(i), (i + 7) * 3);
		/* inner's own handler (count_pre) never ran: hits are outer's */
		cr_expect_eq(atomic_load(&hits), 500, "%s: %lu hits", g ? "GPR_ONLY" : "default",
			     atomic_load(&hits));
		cr_expect_eq(inner.nmissed, 500, "%s: inner.nmissed %lu", g ? "GPR_ONLY" : "default",
			     inner.nmissed);
		cr_expect_eq(outer.nmissed, 0);
		cr_expect_eq(atomic_load(&bad_ip), 0);
		/* outside a handler, inner runs normally */
		reset_counts();
		cr_expect_eq(f_load(1), 2);
		cr_expect_eq(atomic_load(&hits), 1);
		unregister_kprobes(all, 2);
	}
}

/* fork(): the child has the optimized code and no optimizer thread. */
Test(optprobes, fork_child, .timeout = 30)
{
	struct kprobe kp = mkprobe(opt_basic_p);

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect(wait_opt(&kp));
	reset_counts();
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int bad = 0;

		for (long i = 0; i < 1000; i++)
			bad |= f_basic(i) != (i + 7) * 3;
		bad |= (atomic_load(&hits) != 1000) << 1;
		bad |= !kprobe_optimized(&kp) << 2;
		/* change and re-optimize in the child */
		bad |= (ukprobes_set_optimization(0) != 0) << 3;
		bad |= (code_at(opt_basic_p) != 0xcc) << 4;
		bad |= (f_basic(1) != 24) << 5;
		ukprobes_set_optimization(1);
		bad |= (ukprobes_wait_optimizer() != 0 || !kprobe_optimized(&kp)) << 6;
		struct kprobe k2 = mkprobe(opt_load_p);
		bad |= (register_kprobe(&k2) != 0) << 7;
		/* the background optimizer works in the child */
		long long t0 = scn_now_ns();
		while (!kprobe_optimized(&k2) && scn_now_ns() - t0 < 2000000000LL)
			usleep(1000);
		bad |= !kprobe_optimized(&k2) << 8;
		bad |= (f_load(1) != 2) << 9;
		unregister_kprobe(&k2);
		unregister_kprobe(&kp);
		bad |= (code_at(opt_basic_p) != 0x48) << 10;
		bad |= (atomic_load(&hits) != 1002) << 11;
		_exit(bad);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_expect(WIFEXITED(st), "the child died (status %#x)", st);
	cr_expect_eq(WEXITSTATUS(st), 0, "the child failed checks (mask %#x: bit 0 results, 1 "
		     "hits, 2 flags, 3-5 switch off, 6 re-optimize, 7-9 new probe, 10 restore, "
		     "11 hits)", WEXITSTATUS(st));
	/* the parent is unaffected */
	cr_expect(kprobe_optimized(&kp));
	cr_expect_eq(f_basic(1), 24);
	cr_expect_eq(atomic_load(&hits), 1);
	unregister_kprobe(&kp);
}

/* ---------------------------------------------------------------------- */
/* 2. Exact counts across transitions under load                           */
/* ---------------------------------------------------------------------- */

#define NW 4
#define WINDOW_CALLS 3000

static pthread_barrier_t bar_a, bar_b, bar_c, bar_d;
static atomic_ulong window_gen, wrong_results;
static atomic_int stop_workers;
static struct {
	atomic_ulong calls;
	char pad[56];
} wcalls[NW];

static void *load_worker(void *arg)
{
	int me = (int)(intptr_t)arg;
	unsigned long mygen = 0;
	long i = me * 100000000L;

	while (!atomic_load_explicit(&stop_workers, memory_order_relaxed)) {
		unsigned long g = atomic_load(&window_gen);

		if (g != mygen) {
			mygen = g;
			pthread_barrier_wait(&bar_a);	/* paused: transition */
			pthread_barrier_wait(&bar_b);	/* counters zeroed */
			for (int n = 0; n < WINDOW_CALLS; n++, i++)
				if (f_load(i) != i + 1)
					atomic_fetch_add(&wrong_results, 1);
			pthread_barrier_wait(&bar_c);	/* window closed */
			pthread_barrier_wait(&bar_d);	/* counters read */
			continue;
		}
		if (f_load(i) != i + 1)
			atomic_fetch_add(&wrong_results, 1);
		i++;
		atomic_fetch_add_explicit(&wcalls[me].calls, 1, memory_order_relaxed);
	}
	return NULL;
}

/* Pause the workers: returns with them all waiting at bar_b. */
static void pause_workers(void)
{
	atomic_fetch_add(&window_gen, 1);
	pthread_barrier_wait(&bar_a);
}

static unsigned long sum_calls(void)
{
	unsigned long s = 0;

	for (int t = 0; t < NW; t++)
		s += atomic_load(&wcalls[t].calls);
	return s;
}

Test(optprobes, exact_counts_across_transitions, .timeout = 120)
{
	pthread_t th[NW];
	struct kprobe kp = mkprobe(opt_load_p);
	int opt_cycles = 0, opt_reached = 0;

	pthread_barrier_init(&bar_a, NULL, NW + 1);
	pthread_barrier_init(&bar_b, NULL, NW + 1);
	pthread_barrier_init(&bar_c, NULL, NW + 1);
	pthread_barrier_init(&bar_d, NULL, NW + 1);
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect(wait_opt(&kp));
	reset_counts();
	for (int t = 0; t < NW; t++)
		pthread_create(&th[t], NULL, load_worker, (void *)(intptr_t)t);

	/* Phase A: the probe stays enabled; the switch flips while the
	 * workers run freely.  Every call is a hit, whatever the state. */
	pause_workers();
	reset_counts();
	for (int t = 0; t < NW; t++)
		atomic_store(&wcalls[t].calls, 0);
	pthread_barrier_wait(&bar_b);
	pthread_barrier_wait(&bar_c);
	pthread_barrier_wait(&bar_d);
	/* (that was a window of WINDOW_CALLS each: count it) */
	unsigned long extra = (unsigned long)NW * WINDOW_CALLS;
	for (int c = 0; c < 30; c++) {
		usleep(2000);
		cr_expect_eq(ukprobes_set_optimization(0), 0);
		cr_expect(!kprobe_optimized(&kp), "phase A cycle %d: optimized with the switch off", c);
		usleep(2000);
		cr_expect_eq(ukprobes_set_optimization(1), 0);
		opt_cycles++;
		if (ukprobes_wait_optimizer() == 0 && kprobe_optimized(&kp))
			opt_reached++;
		usleep(1000);
	}
	pause_workers();
	unsigned long h = atomic_load(&hits), calls = sum_calls() + extra;
	say("phase A: %lu calls, %lu hits, optimized in %d of %d cycles\n", calls, h,
	    opt_reached, opt_cycles);
	cr_expect_eq(h, calls, "phase A: %lu hits for %lu calls", h, calls);
	cr_expect_geq(opt_reached, opt_cycles / 2, "optimized in only %d of %d cycles under load",
		      opt_reached, opt_cycles);
	cr_expect_gt(calls, 100000, "the workers hardly ran");
	pthread_barrier_wait(&bar_b);
	pthread_barrier_wait(&bar_c);
	pthread_barrier_wait(&bar_d);

	/* Phase B: paused windows; every transition, then N calls each. */
	enum { T_OPT_OFF, T_OPT_ON, T_DISABLE, T_ENABLE, T_N };
	static const char *const tname[] = { "switch off", "switch on", "disable", "enable" };
	static const int seq[] = {
		T_OPT_OFF, T_OPT_ON, T_DISABLE, T_ENABLE, T_DISABLE, T_OPT_OFF, T_ENABLE,
		T_OPT_ON, T_OPT_OFF, T_DISABLE, T_OPT_ON, T_ENABLE, T_DISABLE, T_ENABLE,
	};
	bool enabled = true, opt_on = true;
	int windows = 0, bad = 0;

	for (int rep = 0; rep < 4; rep++) {
		for (size_t s = 0; s < sizeof(seq) / sizeof(seq[0]); s++) {
			int tr = seq[s];
			int ret = 0;

			pause_workers();
			switch (tr) {
			case T_OPT_OFF: ret = ukprobes_set_optimization(0); opt_on = false; break;
			case T_OPT_ON: ret = ukprobes_set_optimization(1); opt_on = true; break;
			case T_DISABLE: ret = disable_kprobe(&kp); enabled = false; break;
			case T_ENABLE: ret = enable_kprobe(&kp); enabled = true; break;
			}
			cr_expect_eq(ret, 0, "%s returned %d", tname[tr], ret);
			/* Every other window waits for the optimizer; the others
			 * run while it works in the background. */
			bool waited = (s + rep) % 2 == 0;
			if (waited)
				ukprobes_wait_optimizer();
			bool want_opt = enabled && opt_on;
			if (waited || !want_opt)
				cr_expect_eq(kprobe_optimized(&kp) != 0, want_opt && waited,
					     "rep %d after %s: optimized %d, expected %d", rep,
					     tname[tr], !!kprobe_optimized(&kp), want_opt && waited);
			reset_counts();
			pthread_barrier_wait(&bar_b);
			pthread_barrier_wait(&bar_c);
			unsigned long got = atomic_load(&hits);
			pthread_barrier_wait(&bar_d);
			unsigned long want = enabled ? (unsigned long)NW * WINDOW_CALLS : 0;
			windows++;
			if (got != want) {
				bad++;
				cr_expect_eq(got, want, "rep %d after %s (optimized %d): %lu hits, "
					     "expected %lu", rep, tname[tr],
					     !!kprobe_optimized(&kp), got, want);
			}
		}
	}
	/* The workers run freely now: they see the flag and leave. */
	atomic_store(&stop_workers, 1);
	for (int t = 0; t < NW; t++)
		pthread_join(th[t], NULL);
	unregister_kprobe(&kp);
	say("phase B: %d windows, %d wrong\n", windows, bad);
	cr_expect_eq(bad, 0);
	cr_expect_eq(atomic_load(&wrong_results), 0, "%lu wrong results",
		     atomic_load(&wrong_results));
	cr_expect_eq(atomic_load(&bad_ip), 0);
	cr_expect_eq(kp.nmissed, 0);
}

/* ---------------------------------------------------------------------- */
/* 3. Regions                                                              */
/* ---------------------------------------------------------------------- */

Test(optprobes, region_rip_relative, .timeout = 30)
{
	struct kprobe a = mkprobe(opt_rip_p), b = mkprobe(opt_rip1_p), c = mkprobe(opt_ripst_p);
	struct kprobe *all[] = { &a, &b, &c };

	cr_assert_eq(register_kprobes(all, 3), 0);
	cr_expect_eq(ukprobes_wait_optimizer(), 0);
	expect_state(&a, true, "rip-relative load, 2nd of the region");
	expect_state(&b, true, "one 7-byte rip-relative load");
	expect_state(&c, true, "rip-relative store, 2nd of the region");
	reset_counts();
	for (long i = -500; i < 500; i++) {
		cr_assert_eq(f_rip(i), i + opt_rip_data);
		cr_assert_eq(f_rip1(i), i + opt_rip_data);
		opt_rip_store = 0;
		cr_assert_eq(f_ripst(i), (long)&opt_rip_store);
		cr_assert_eq(opt_rip_store, i + 5);
	}
	opt_rip_data = 42;	/* read at run time, not copied */
	cr_expect_eq(f_rip(1), 43);
	cr_expect_eq(f_rip1(2), 44);
	cr_expect_eq(atomic_load(&hits), 3002);
	cr_expect_eq(atomic_load(&bad_ip), 0);
	unregister_kprobes(all, 3);
}

Test(optprobes, region_jcc_and_jmp_out, .timeout = 30)
{
	struct kprobe a = mkprobe(opt_jcc_p), b = mkprobe(opt_jmp_p);
	struct kprobe *all[] = { &a, &b };

	cr_assert_eq(register_kprobes(all, 2), 0);
	cr_expect_eq(ukprobes_wait_optimizer(), 0);
	expect_state(&a, true, "test; js out");
	expect_state(&b, true, "mov; jmp out");
	reset_counts();
	for (long i = -1000; i < 1000; i++) {
		cr_assert_eq(f_jcc(i), i >= 0 ? i + 1 : i - 1, "opt_jcc(%ld)", i);
		cr_assert_eq(f_jmp(i), i + 1, "opt_jmp(%ld)", i);
	}
	cr_expect_eq(atomic_load(&hits), 4000);
	unregister_kprobes(all, 2);
}

Test(optprobes, region_loops, .timeout = 30)
{
	/* A region followed by a jnz back before the probe, and a region
	 * ending in a jnz to the probe itself. */
	struct kprobe a = mkprobe(opt_loop_p), b = mkprobe(opt_loop3_p);
	struct kprobe *all[] = { &a, &b };
	unsigned long want = 0;

	cr_assert_eq(register_kprobes(all, 2), 0);
	cr_expect_eq(ukprobes_wait_optimizer(), 0);
	expect_state(&a, true, "add; dec (jnz back after)");
	expect_state(&b, true, "dec; jnz to the probe");
	reset_counts();
	for (long n = 1; n < 200; n++) {
		cr_assert_eq(f_loop(n), 2 * n);
		cr_assert_eq(f_loop3(n), n);
		want += 2 * n;
	}
	cr_expect_eq(atomic_load(&hits), want, "%lu hits, expected %lu",
		     atomic_load(&hits), want);
	unregister_kprobes(all, 2);
}

/* A single instruction of 5 bytes or more needs no function check: it is
 * optimized even in a function with an indirect jump. */
Test(optprobes, single_long_instruction_no_function_checks, .timeout = 30)
{
	struct kprobe kp = mkprobe(opt_ind_big);

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect(wait_opt(&kp));
	expect_state(&kp, true, "6-byte add in a function with a jump table");
	reset_counts();
	for (long i = 0; i < 400; i++)
		cr_assert_eq(f_ind(i), 10 + (i & 3) + 0x1000);
	cr_expect_eq(atomic_load(&hits), 400);
	unregister_kprobe(&kp);
}

/* A refused region: stays a breakpoint after waiting, is not "waiting". */
static void register_refused(struct kprobe *kp, const char *what)
{
	cr_assert_eq(register_kprobe(kp), 0, "%s: register", what);
	cr_expect_eq(ukprobes_wait_optimizer(), 0, "%s: a refused probe counts as waiting", what);
	usleep(30000);	/* and the background optimizer agrees */
	expect_state(kp, false, what);
	reset_counts();
}

Test(optprobes, refuse_jump_into_region, .timeout = 30)
{
	struct kprobe kp = mkprobe(opt_jin_p);

	register_refused(&kp, "jump into the region");
	for (long i = 0; i < 500; i++) {
		cr_assert_eq(f_jin(i, 0), 2 * i + 5);
		cr_assert_eq(f_jin(i, 1), i + 5);
	}
	cr_expect_eq(atomic_load(&hits), 500);
	unregister_kprobe(&kp);
}

Test(optprobes, refuse_indirect_jump_in_function, .timeout = 30)
{
	struct kprobe kp = mkprobe(opt_ind_p);

	register_refused(&kp, "indirect jmp in the function");
	for (long i = 0; i < 400; i++)
		cr_assert_eq(f_ind(i), 10 + (i & 3) + 0x1000);
	cr_expect_eq(atomic_load(&hits), 400);
	unregister_kprobe(&kp);
}

Test(optprobes, refuse_call_in_region, .timeout = 30)
{
	struct kprobe kp = mkprobe(opt_call_p), kc = mkprobe(opt_call_c);

	register_refused(&kp, "call in the region");
	for (long i = 0; i < 500; i++)
		cr_assert_eq(f_call(i), i + 1);
	cr_expect_eq(atomic_load(&hits), 500);
	unregister_kprobe(&kp);
	/* The 5-byte call alone: still not relocatable into a detour. */
	register_refused(&kc, "a 5-byte call");
	for (long i = 0; i < 500; i++)
		cr_assert_eq(f_call(i), i + 1);
	cr_expect_eq(atomic_load(&hits), 500);
	unregister_kprobe(&kc);
}

static long plus10(long x)
{
	return x + 10;
}

Test(optprobes, refuse_indirect_call_in_region, .timeout = 30)
{
	struct kprobe kp = mkprobe(opt_icall_p);

	register_refused(&kp, "indirect call in the region");
	for (long i = 0; i < 500; i++)
		cr_assert_eq(f_icall(i, plus10), i + 11);
	cr_expect_eq(atomic_load(&hits), 500);
	unregister_kprobe(&kp);
}

Test(optprobes, refuse_function_too_short, .timeout = 30)
{
	struct kprobe kp = mkprobe(opt_short_p);

	register_refused(&kp, "region would cross the function's end");
	for (long i = 0; i < 500; i++)
		cr_assert_eq(f_short(i), i);
	cr_expect_eq(atomic_load(&hits), 500);
	unregister_kprobe(&kp);
}

Test(optprobes, refuse_syscall_in_region, .timeout = 30)
{
	struct kprobe kp = mkprobe(opt_sys_p);

	register_refused(&kp, "syscall in the region");
	for (long i = 0; i < 300; i++)
		cr_assert_eq(f_sys(), (long)getpid());
	cr_expect_eq(atomic_load(&hits), 300);
	unregister_kprobe(&kp);
}

Test(optprobes, refuse_loop_in_region, .timeout = 30)
{
	struct kprobe kp = mkprobe(opt_loopi_p);
	unsigned long want = 0;

	register_refused(&kp, "loop in the region");
	for (long n = 1; n < 100; n++) {
		cr_assert_eq(f_loopi(n), 2 * n);
		want += n;
	}
	cr_expect_eq(atomic_load(&hits), want);
	unregister_kprobe(&kp);
}

Test(optprobes, refuse_endbr64_in_region, .timeout = 30)
{
	struct kprobe kp = mkprobe(opt_endbr_p);

	register_refused(&kp, "endbr64 in the region");
	for (long i = 0; i < 300; i++)
		cr_assert_eq(f_endbr(i), i + 1);
	cr_expect_eq(atomic_load(&hits), 300);
	unregister_kprobe(&kp);
}

/* Does the kernel enforce indirect branch tracking on this process? */
static bool user_ibt(void)
{
	char line[256];
	bool ibt = false;
	FILE *f = fopen("/proc/self/status", "re");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "x86_Thread_features:", 20))
			ibt = strstr(line + 20, " ibt") != NULL;
	if (f)
		fclose(f);
	return ibt;
}

/* An endbr64 at the probe itself (a function's first byte, by address):
 * indirect calls land on the jmp, fine without IBT. */
Test(optprobes, endbr64_at_the_probe_optimized, .timeout = 30)
{
	struct kprobe kp = mkprobe(opt_endbr_first_p);

	cr_assert_eq(register_kprobe(&kp), 0);
	if (user_ibt()) {
		cr_expect(!wait_opt(&kp), "optimized at an endbr64 under IBT");
	} else {
		cr_expect(wait_opt(&kp), "not optimized at the endbr64 (no IBT here)");
		expect_state(&kp, true, "endbr64 first");
	}
	for (long i = 0; i < 300; i++)
		cr_assert_eq(f_endbr_first(i), i + 2);	/* an indirect call */
	cr_expect_eq(atomic_load(&hits), 300);
	unregister_kprobe(&kp);
	cr_expect_eq(f_endbr_first(5), 7);
}

Test(optprobes, refuse_neighbour_probe_in_region, .timeout = 30)
{
	struct kprobe a = mkprobe(opt_nb_p), b = mkprobe(opt_nb_2);

	/* a first, optimized; then b inside a's region unoptimizes it. */
	cr_assert_eq(register_kprobe(&a), 0);
	cr_expect(wait_opt(&a));
	expect_state(&a, true, "a alone");
	cr_assert_eq(register_kprobe(&b), 0);
	expect_state(&a, false, "a right after b went inside its region");
	ukprobes_wait_optimizer();
	usleep(30000);
	expect_state(&a, false, "a with b inside its region, after wait");
	/* b's own region (add; imul) is free: b may be optimized. */
	cr_expect(kprobe_optimized(&b), "b (region add; imul) not optimized");
	reset_counts();
	for (long i = 0; i < 500; i++)
		cr_assert_eq(f_nb(i), (i + 7) * 3);
	cr_expect_eq(atomic_load(&hits), 1000);

	/* b goes: a is optimized again. */
	unregister_kprobe(&b);
	cr_expect(wait_opt(&a), "a not optimized again after its neighbour went");
	expect_state(&a, true, "a after b went");
	reset_counts();
	for (long i = 0; i < 500; i++)
		cr_assert_eq(f_nb(i), (i + 7) * 3);
	cr_expect_eq(atomic_load(&hits), 500);

	/* Registered the other way round: b first, then a (its region
	 * holds b) is refused from the start. */
	unregister_kprobe(&a);
	a = mkprobe(opt_nb_p);
	b = mkprobe(opt_nb_2);
	cr_assert_eq(register_kprobe(&b), 0);
	cr_expect(wait_opt(&b));
	cr_assert_eq(register_kprobe(&a), 0);
	ukprobes_wait_optimizer();
	expect_state(&a, false, "a registered over optimized b");
	reset_counts();
	for (long i = 0; i < 500; i++)
		cr_assert_eq(f_nb(i), (i + 7) * 3);
	cr_expect_eq(atomic_load(&hits), 1000);
	unregister_kprobe(&b);
	cr_expect(wait_opt(&a), "a not optimized after b went (2)");
	unregister_kprobe(&a);
	cr_expect_eq(memcmp(opt_nb_p, "\x48\x89\xf8\x48\x83\xc0\x07", 7), 0,
		     "opt_nb's bytes not restored");
}

/* ---------------------------------------------------------------------- */
/* 4. The switch; 5. disable/enable; 6. post handler                       */
/* ---------------------------------------------------------------------- */

Test(optprobes, optimization_switch, .timeout = 30)
{
	struct kprobe kp = mkprobe(opt_basic_p);

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect(wait_opt(&kp));
	for (int c = 0; c < 5; c++) {
		cr_expect_eq(ukprobes_set_optimization(0), 0);
		cr_expect_eq(ukprobes_optimization(), 0);
		expect_state(&kp, false, "switch off");
		cr_expect_eq(code_at(opt_basic_p), 0xcc);
		/* Stays off, even after waiting. */
		ukprobes_wait_optimizer();
		usleep(20000);
		expect_state(&kp, false, "switch off, after wait");
		reset_counts();
		for (long i = 0; i < 200; i++)
			cr_assert_eq(f_basic(i), (i + 7) * 3);
		cr_expect_eq(atomic_load(&hits), 200);

		cr_expect_eq(ukprobes_set_optimization(1), 0);
		cr_expect_eq(ukprobes_optimization(), 1);
		cr_expect(wait_opt(&kp), "cycle %d: not optimized again", c);
		expect_state(&kp, true, "switch on again");
		reset_counts();
		for (long i = 0; i < 200; i++)
			cr_assert_eq(f_basic(i), (i + 7) * 3);
		cr_expect_eq(atomic_load(&hits), 200);
	}
	/* A probe registered while the switch is off is not optimized;
	 * switching on optimizes it. */
	unregister_kprobe(&kp);
	ukprobes_set_optimization(0);
	kp = mkprobe(opt_basic_p);
	cr_assert_eq(register_kprobe(&kp), 0);
	ukprobes_wait_optimizer();
	usleep(20000);
	expect_state(&kp, false, "registered with the switch off");
	ukprobes_set_optimization(1);
	cr_expect(wait_opt(&kp));
	unregister_kprobe(&kp);
}

/* The kprobes/enabled switch disarms everything: nothing optimized. */
Test(optprobes, global_enable_switch, .timeout = 30)
{
	struct kprobe kp = mkprobe(opt_basic_p);

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect(wait_opt(&kp));
	cr_expect_eq(ukprobes_set_enabled(0), 0);
	cr_expect(!kprobe_optimized(&kp), "optimized with kprobes disabled");
	cr_expect_eq(code_at(opt_basic_p), 0x48);
	ukprobes_wait_optimizer();
	cr_expect(!kprobe_optimized(&kp), "optimized with kprobes disabled, after wait");
	reset_counts();
	cr_expect_eq(f_basic(1), 24);
	cr_expect_eq(atomic_load(&hits), 0);
	cr_expect_eq(ukprobes_set_enabled(1), 0);
	cr_expect(wait_opt(&kp), "not optimized after kprobes enabled again");
	cr_expect_eq(f_basic(1), 24);
	cr_expect_eq(atomic_load(&hits), 1);
	unregister_kprobe(&kp);
}

/* UKPROBES_OPTIMIZATION=0 in the environment: the program starts with the
 * switch off.  Checked in a fresh process (this program, run again with
 * the variable set and only the child test below). */
Test(optprobes, env_optimization_off_child)
{
	const char *v = getenv("UKPROBES_OPTIMIZATION");

	if (!v || strcmp(v, "0")) {
		cr_skip_test("run by env_optimization_off");
		return;
	}
	cr_expect_eq(ukprobes_optimization(), 0,
		     "UKPROBES_OPTIMIZATION=0, but ukprobes_optimization() = 1 at start");
	struct kprobe kp = mkprobe(opt_basic_p);
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_eq(ukprobes_optimization(), 0);
	ukprobes_wait_optimizer();
	usleep(30000);
	expect_state(&kp, false, "UKPROBES_OPTIMIZATION=0");
	cr_expect_eq(f_basic(1), 24);
	ukprobes_set_optimization(1);
	cr_expect(wait_opt(&kp), "not optimized after switching on");
	unregister_kprobe(&kp);
}

Test(optprobes, env_optimization_off, .timeout = 60)
{
	char cmd[512], exe[256];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	cr_assert_gt(n, 0);
	exe[n] = 0;
	/* (without the sandbox's variables, which would make it a worker) */
	snprintf(cmd, sizeof(cmd), "env -u BXFI_MAP UKPROBES_OPTIMIZATION=0 '%s' -j1 --filter "
		 "'optprobes/env_optimization_off_child' 2>&1", exe);
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f);
	char line[512], out[4096] = "";
	while (fgets(line, sizeof(line), f))
		if (strlen(out) + strlen(line) < sizeof(out) - 1)
			strcat(out, line);
	int st = pclose(f);
	cr_expect(strstr(out, "Passing: 1"), "the child run did not pass:\n%s", out);
	cr_expect_eq(st, 0, "child exit status %d:\n%s", st, out);
}

Test(optprobes, disable_enable, .timeout = 30)
{
	struct kprobe kp = mkprobe(opt_basic_p);

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect(wait_opt(&kp));
	for (int c = 0; c < 5; c++) {
		cr_expect_eq(disable_kprobe(&kp), 0);
		cr_expect(!kprobe_optimized(&kp), "disabled and optimized");
		cr_expect_eq(list_at(opt_basic_p).optimized, 0);
		cr_expect_eq(list_at(opt_basic_p).disabled, 1);
		cr_expect_eq(code_at(opt_basic_p), 0x48, "disabled: byte 0x%02x", code_at(opt_basic_p));
		ukprobes_wait_optimizer();
		cr_expect(!kprobe_optimized(&kp), "disabled and optimized after wait");
		reset_counts();
		for (long i = 0; i < 200; i++)
			cr_assert_eq(f_basic(i), (i + 7) * 3);
		cr_expect_eq(atomic_load(&hits), 0, "disabled: %lu hits", atomic_load(&hits));

		cr_expect_eq(enable_kprobe(&kp), 0);
		cr_expect(wait_opt(&kp), "cycle %d: not optimized after enable", c);
		expect_state(&kp, true, "enabled again");
		for (long i = 0; i < 200; i++)
			cr_assert_eq(f_basic(i), (i + 7) * 3);
		cr_expect_eq(atomic_load(&hits), 200);
	}
	/* Registered disabled: never optimized until enabled. */
	unregister_kprobe(&kp);
	kp = mkprobe(opt_basic_p);
	kp.flags = KPROBE_FLAG_DISABLED;
	cr_assert_eq(register_kprobe(&kp), 0);
	ukprobes_wait_optimizer();
	cr_expect(!kprobe_optimized(&kp));
	cr_expect_eq(enable_kprobe(&kp), 0);
	cr_expect(wait_opt(&kp));
	unregister_kprobe(&kp);
}

Test(optprobes, post_handler_unoptimizes, .timeout = 30)
{
	struct kprobe a = mkprobe(opt_basic_p);
	struct kprobe b = { .addr = (kprobe_opcode_t *)opt_basic_p, .pre_handler = count_pre,
			    .post_handler = count_post };

	cr_assert_eq(register_kprobe(&a), 0);
	cr_expect(wait_opt(&a));
	for (int c = 0; c < 3; c++) {
		b.addr = (kprobe_opcode_t *)opt_basic_p;
		b.flags = 0;
		cr_assert_eq(register_kprobe(&b), 0);
		expect_state(&a, false, "a after b (post handler) came");
		expect_state(&b, false, "b (post handler)");
		ukprobes_wait_optimizer();
		usleep(20000);
		expect_state(&a, false, "a with b's post handler, after wait");
		reset_counts();
		for (long i = 0; i < 300; i++)
			cr_assert_eq(f_basic(i), (i + 7) * 3);
		cr_expect_eq(atomic_load(&hits), 600);
		cr_expect_eq(atomic_load(&posts), 300);

		/* A disabled post handler does not count. */
		cr_expect_eq(disable_kprobe(&b), 0);
		cr_expect(wait_opt(&a), "a not optimized with b's post handler disabled");
		cr_expect_eq(enable_kprobe(&b), 0);
		expect_state(&a, false, "a after b enabled again");

		unregister_kprobe(&b);
		cr_expect(wait_opt(&a), "cycle %d: a not optimized again after b went", c);
		expect_state(&a, true, "a alone again");
		reset_counts();
		for (long i = 0; i < 300; i++)
			cr_assert_eq(f_basic(i), (i + 7) * 3);
		cr_expect_eq(atomic_load(&hits), 300);
		cr_expect_eq(atomic_load(&posts), 0);
	}
	unregister_kprobe(&a);
}

/* ---------------------------------------------------------------------- */
/* 7. A pre handler cannot redirect an optimized probe                     */
/* ---------------------------------------------------------------------- */

static atomic_ulong redir_calls;

static int redirect_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add(&redir_calls, 1);
	regs->ip = (unsigned long)opt_redir_alt;
	return 1;
}

Test(optprobes, redirect_ignored_when_optimized, .timeout = 30)
{
	struct kprobe a = { .addr = (kprobe_opcode_t *)opt_redir_p, .pre_handler = redirect_pre };
	struct kprobe b = { .addr = (kprobe_opcode_t *)opt_redir_p, .pre_handler = count_pre,
			    .post_handler = count_post };

	cr_assert_eq(register_kprobe(&a), 0);
	cr_expect(wait_opt(&a));
	expect_state(&a, true, "redirecting probe");
	for (long i = 0; i < 100; i++)
		cr_assert_eq(f_redir(i), i + 1, "optimized: the function did not run normally");
	cr_expect_eq(atomic_load(&redir_calls), 100);

	/* A post handler forces the breakpoint: the redirect works. */
	cr_assert_eq(register_kprobe(&b), 0);
	expect_state(&a, false, "with a post handler");
	ukprobes_wait_optimizer();
	reset_counts();
	for (long i = 0; i < 100; i++)
		cr_assert_eq(f_redir(i), i + 1000, "breakpoint: the redirect did not work");
	cr_expect_eq(atomic_load(&redir_calls), 200);
	/* The redirect skips the step: no post handler, and b's pre handler
	 * comes after a's in the list. */
	cr_expect_eq(atomic_load(&posts), 0);

	unregister_kprobe(&b);
	cr_expect(wait_opt(&a));
	cr_expect_eq(f_redir(7), 8);

	/* With the switch off, a redirect works too. */
	ukprobes_set_optimization(0);
	cr_expect_eq(f_redir(7), 1007);
	ukprobes_set_optimization(1);
	cr_expect(wait_opt(&a));
	cr_expect_eq(f_redir(7), 8);
	unregister_kprobe(&a);
}

/* ---------------------------------------------------------------------- */
/* 8. Register state                                                       */
/* ---------------------------------------------------------------------- */

static bool have_avx(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx");
}

static bool have_avx512(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f");
}

static atomic_ulong vec_hits;
static volatile int clobber_level;	/* 1 sse, 2 avx, 3 avx-512 */
static char vec_note[256];

/* A handler that uses vector registers the ABI lets it clobber: libc's
 * string and stdio functions, and explicit clobbers. */
static int vec_clobber_pre(struct kprobe *p, struct pt_regs *regs)
{
	static char src[4096], dst[4096];
	void *(*volatile mc)(void *, const void *, size_t) = memcpy;
	void *(*volatile ms)(void *, int, size_t) = memset;

	atomic_fetch_add(&vec_hits, 1);
	ms(src, (int)(regs->di & 0xff), sizeof(src));
	mc(dst, src, sizeof(dst));
	snprintf(vec_note, sizeof(vec_note), "%f %e %g %.3Lf %.16s", (double)regs->di * 1.25,
		 3.5e10, 1.0 / 3, (long double)regs->si / 7, dst + 4000);
	__asm__ volatile("pxor %%xmm0, %%xmm0\n\tpcmpeqd %%xmm7, %%xmm7\n\t"
			 "pxor %%xmm8, %%xmm8\n\tpcmpeqd %%xmm15, %%xmm15"
			 ::: "xmm0", "xmm7", "xmm8", "xmm15");
	if (clobber_level >= 2)
		__asm__ volatile("vpcmpeqd %%ymm1, %%ymm1, %%ymm1\n\tvzeroall"
				 ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",
				     "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",
				     "xmm13", "xmm14", "xmm15");
	if (clobber_level >= 3) {
		__asm__ volatile(
			".irp r, 16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n\t"
			"vpternlogd $0xff, %%zmm\\r, %%zmm\\r, %%zmm\\r\n\t"
			".endr\n\t"
			"kxnorq %%k1, %%k1, %%k1\n\tkxorq %%k2, %%k2, %%k2\n\t"
			"kxnorq %%k7, %%k7, %%k7\n\tkxnorq %%k0, %%k0, %%k0"
			::: "memory");
	}
	return 0;
}

/* Same, general registers only: may use nothing but them. */
__attribute__((target("general-regs-only")))
static int gpr_only_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add(&vec_hits, 1);
	return 0;
}

static void fill_pattern(unsigned char *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		b[i] = (unsigned char)(seed >> 16);
	}
}

static void vec_run(vec_t fn, void *probe, size_t size, int level, unsigned int flags,
		    const char *what)
{
	static unsigned char in[2048 + 64] __attribute__((aligned(64)));
	static unsigned char out[2048 + 64] __attribute__((aligned(64)));
	struct kprobe kp = { .addr = (kprobe_opcode_t *)probe,
			     .pre_handler = (flags & KPROBE_FLAG_GPR_ONLY) ? gpr_only_pre
									   : vec_clobber_pre,
			     .flags = flags };

	clobber_level = level;
	atomic_store(&vec_hits, 0);
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect(wait_opt(&kp), "%s: not optimized", what);
	for (int r = 0; r < 200; r++) {
		fill_pattern(in, size, 77u + (unsigned)r);
		memset(out, 0, size);
		fn(in, out);
		if (memcmp(in, out, size)) {
			size_t k = 0;
			while (in[k] == out[k])
				k++;
			cr_assert_fail("%s, round %d: byte %zu (register %zu, byte %zu) "
				       "is 0x%02x, expected 0x%02x", what, r, k,
				       k / (size >= 2048 ? 64 : size / 16), k % (size >= 2048 ? 64 : size / 16),
				       out[k], in[k]);
		}
	}
	cr_expect_eq(atomic_load(&vec_hits), 200, "%s: %lu hits", what, atomic_load(&vec_hits));
	unregister_kprobe(&kp);
}

Test(optprobes, vector_xmm_preserved, .timeout = 30)
{
	vec_run(f_vec_xmm, opt_vec_xmm_p, 16 * 16, have_avx() ? 2 : 1, 0, "xmm0-15");
}

Test(optprobes, vector_ymm_preserved, .timeout = 30)
{
	if (!have_avx()) {
		cr_skip_test("no AVX");
		return;
	}
	vec_run(f_vec_ymm, opt_vec_ymm_p, 16 * 32, 2, 0, "ymm0-15");
}

Test(optprobes, vector_zmm_k_preserved, .timeout = 30)
{
	if (!have_avx512()) {
		cr_skip_test("no AVX-512");
		return;
	}
	/* zmm0-31 then k0-k7 (k values of 64 bits). */
	vec_run(f_vec_zmm, opt_vec_zmm_p, 2048 + 64, 3, 0, "zmm0-31, k0-7");
}

/*
 * A probe without KPROBE_FLAG_GPR_ONLY registered where a GPR-only detour
 * is in place: between its linking and the unoptimization its registration
 * does, threads still come through that detour, which saved no vector
 * state.  The new probe must miss those hits, not run there.  A thread
 * keeps xmm0-15 live across the probe the whole time while the probe comes
 * and goes.
 */
static atomic_int hammer_stop;
static atomic_ulong hammer_calls, hammer_bad;

static void *xmm_hammer(void *arg)
{
	static _Thread_local unsigned char in[16 * 16], out[16 * 16];
	unsigned r = 0;

	(void)arg;
	while (!atomic_load_explicit(&hammer_stop, memory_order_relaxed)) {
		fill_pattern(in, sizeof(in), 991u + r++);
		f_vec_xmm(in, out);
		if (memcmp(in, out, sizeof(in)))
			atomic_fetch_add(&hammer_bad, 1);
		atomic_fetch_add_explicit(&hammer_calls, 1, memory_order_relaxed);
	}
	return NULL;
}

Test(optprobes, non_gpr_probe_added_to_gpr_only_detour, .timeout = 120)
{
	struct kprobe a = { .addr = (kprobe_opcode_t *)opt_vec_xmm_p,
			    .pre_handler = gpr_only_pre, .flags = KPROBE_FLAG_GPR_ONLY };
	unsigned long missed = 0, ran = 0;
	pthread_t t;

	clobber_level = 1;
	atomic_store(&hammer_stop, 0);
	cr_assert_eq(register_kprobe(&a), 0);
	cr_assert(wait_opt(&a), "the GPR-only probe was not optimized");
	cr_assert_eq(pthread_create(&t, NULL, xmm_hammer, NULL), 0);
	for (int k = 0; k < 200; k++) {
		struct kprobe b = { .addr = (kprobe_opcode_t *)opt_vec_xmm_p,
				    .pre_handler = vec_clobber_pre };
		unsigned long before = atomic_load(&vec_hits);

		/* GPR-only again, optimized: the detour without the state. */
		ukprobes_wait_optimizer();
		cr_assert_eq(register_kprobe(&b), 0);
		for (volatile int spin = 0; spin < 20000; spin++)
			;
		unregister_kprobe(&b);
		missed += b.nmissed;
		ran += atomic_load(&vec_hits) != before;
	}
	atomic_store(&hammer_stop, 1);
	pthread_join(t, NULL);
	unregister_kprobe(&a);
	cr_log_info("%lu calls; the added probe missed %lu hits in a GPR-only detour and ran "
		    "in %lu of 200 rounds", atomic_load(&hammer_calls), missed, ran);
	cr_expect_eq(atomic_load(&hammer_bad), 0, "%lu of %lu calls lost their xmm registers",
		     atomic_load(&hammer_bad), atomic_load(&hammer_calls));
	cr_expect_gt(atomic_load(&hammer_calls), 0);
}

Test(optprobes, vector_ymm_gpr_only_fast_path, .timeout = 30)
{
	/* KPROBE_FLAG_GPR_ONLY: the detour skips xsave; the handler uses no
	 * vector register, and neither may ukprobes on the way to it. */
	if (!have_avx()) {
		cr_skip_test("no AVX");
		return;
	}
	vec_run(f_vec_ymm, opt_vec_ymm_p, 16 * 32, 0, KPROBE_FLAG_GPR_ONLY, "ymm0-15, GPR_ONLY");
	if (have_avx512())
		vec_run(f_vec_zmm, opt_vec_zmm_p, 2048 + 64, 0, KPROBE_FLAG_GPR_ONLY,
			"zmm0-31/k0-7, GPR_ONLY");
}

/* GPR_ONLY counts only when every probe at the address says so: a
 * default probe added later, or enabled again, brings the full save back. */
Test(optprobes, gpr_only_mixed_with_default, .timeout = 30)
{
	static unsigned char in[512] __attribute__((aligned(64))), out[512] __attribute__((aligned(64)));
	struct kprobe a = { .addr = (kprobe_opcode_t *)opt_vec_ymm_p, .pre_handler = gpr_only_pre,
			    .flags = KPROBE_FLAG_GPR_ONLY };
	struct kprobe b = { .addr = (kprobe_opcode_t *)opt_vec_ymm_p, .pre_handler = vec_clobber_pre };

	if (!have_avx()) {
		cr_skip_test("no AVX");
		return;
	}
	clobber_level = 2;
	cr_assert_eq(register_kprobe(&a), 0);
	cr_expect(wait_opt(&a));
	cr_assert_eq(register_kprobe(&b), 0);
	cr_expect(wait_opt(&a), "a not optimized with b");
	cr_expect(kprobe_optimized(&b));
	for (int step = 0; step < 4; step++) {
		/* step 1: b disabled (GPR path allowed); 2: b enabled again */
		if (step == 1) {
			cr_expect_eq(disable_kprobe(&b), 0);
			cr_expect(wait_opt(&a));
		} else if (step == 2) {
			cr_expect_eq(enable_kprobe(&b), 0);
			cr_expect(wait_opt(&a));
		} else if (step == 3) {
			unregister_kprobe(&a);
			cr_expect(wait_opt(&b));
		}
		atomic_store(&vec_hits, 0);
		for (int r = 0; r < 50; r++) {
			fill_pattern(in, sizeof(in), 1000u + (unsigned)r);
			memset(out, 0, sizeof(out));
			f_vec_ymm(in, out);
			cr_assert(!memcmp(in, out, sizeof(in)), "step %d: ymm registers changed", step);
		}
		unsigned long want = step == 1 ? 50 : step == 3 ? 50 : 100;
		cr_expect_eq(atomic_load(&vec_hits), want, "step %d: %lu hits", step,
			     atomic_load(&vec_hits));
	}
	unregister_kprobe(&b);
}

Test(optprobes, x87_stack_preserved, .timeout = 30)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)opt_x87_p, .pre_handler = vec_clobber_pre };
	double in[3], out[3];

	clobber_level = have_avx() ? 2 : 1;
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect(wait_opt(&kp));
	for (int r = 0; r < 100; r++) {
		in[0] = 1.5 + r;
		in[1] = -2.25 * r;
		in[2] = 1e300 / (r + 1);
		f_x87(in, out);
		cr_assert(out[0] == in[2] && out[1] == in[1] && out[2] == in[0],
			  "round %d: x87 stack %g %g %g, expected %g %g %g", r, out[0], out[1],
			  out[2], in[2], in[1], in[0]);
	}
	unregister_kprobe(&kp);
}

/* General registers and flags. */
#define ARITH_FLAGS 0x8d5ul	/* CF PF AF ZF SF OF */
#define ID_FLAG 0x200000ul	/* harmless to set: CPUID detection toggles it */
/* What the handler must see of opt_gpr_flags, and find again after. */
#define GPR_FLAGS_SEEN (ARITH_FLAGS | ID_FLAG)
static volatile int gpr_mode;	/* 0 look, 1 modify */
static volatile unsigned long gpr_seen_bad, gpr_seen_flags;
static volatile unsigned long gpr_seen[21];

static const char *const gpr_names[15] = {
	"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "r8", "r9", "r10",
	"r11", "r12", "r13", "r14", "r15",
};

__attribute__((target("general-regs-only")))
static unsigned long *pt_reg(struct pt_regs *r, int i)
{
	switch (i) {
	case 0: return &r->ax;	case 1: return &r->bx;	case 2: return &r->cx;
	case 3: return &r->dx;	case 4: return &r->si;	case 5: return &r->di;
	case 6: return &r->bp;	case 7: return &r->r8;	case 8: return &r->r9;
	case 9: return &r->r10;	case 10: return &r->r11; case 11: return &r->r12;
	case 12: return &r->r13; case 13: return &r->r14; default: return &r->r15;
	}
}

/* Check what the handler sees, then change some registers (mode 1). */
__attribute__((target("general-regs-only")))
static int gpr_pre_common(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add(&hits, 1);
	for (int i = 0; i < 15; i++)
		if (*pt_reg(regs, i) != opt_gpr_vals[i])
			gpr_seen_bad |= 1ul << i;
	if (regs->ip != (unsigned long)opt_gpr_p)
		gpr_seen_bad |= 1ul << 15;
	if (regs->sp != opt_gpr_sp[0])
		gpr_seen_bad |= 1ul << 16;
	if ((regs->flags & GPR_FLAGS_SEEN) != (opt_gpr_flags & GPR_FLAGS_SEEN))
		gpr_seen_bad |= 1ul << 17;
	gpr_seen_flags = regs->flags;
	if (gpr_mode == 1) {
		regs->ax = 0xabcdef;
		regs->r15 = 0x100;
		regs->bp = 0x5555;
		regs->flags &= ~1ul;		/* CF */
		regs->flags &= ~0x40ul;		/* ZF */
	}
	return 0;
}

static int gpr_pre_libc(struct kprobe *p, struct pt_regs *regs)
{
	char buf[256];

	gpr_pre_common(p, regs);
	/* Plenty of C and libc: every caller-saved register is fair game. */
	snprintf(buf, sizeof(buf), "%lx %lx %lx %lx %f", regs->ax, regs->bx, regs->r11,
		 regs->r15, 1.5 * (double)regs->cx);
	vec_clobber_pre(p, regs);
	__asm__ volatile("" : : "r"(buf) : "memory");
	return 0;
}

static void gpr_run(unsigned int flags, int mode, const char *what)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)opt_gpr_p,
			     .pre_handler = (flags & KPROBE_FLAG_GPR_ONLY) ? gpr_pre_common
									   : gpr_pre_libc,
			     .flags = flags };
	unsigned long out[16];

	clobber_level = have_avx() ? 2 : 1;
	gpr_mode = mode;
	gpr_seen_bad = 0;
	reset_counts();
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect(wait_opt(&kp), "%s: not optimized", what);
	for (int r = 0; r < 100; r++) {
		memset(out, 0, sizeof(out));
		f_gpr(out);
		for (int i = 0; i < 15; i++) {
			unsigned long want = opt_gpr_vals[i];

			if (i == 13)
				want += 1;		/* lea 1(%r14) */
			if (i == 14)
				want = (mode ? 0x100 : want) + 1;
			if (mode && i == 0)
				want = 0xabcdef;
			if (mode && i == 6)
				want = 0x5555;
			cr_assert_eq(out[i], want, "%s: %s is %#lx after the probe, expected %#lx",
				     what, gpr_names[i], out[i], want);
		}
		unsigned long want_flags = opt_gpr_flags & GPR_FLAGS_SEEN;

		if (mode)
			want_flags &= ~0x41ul;
		cr_assert_eq(out[15] & GPR_FLAGS_SEEN, want_flags,
			     "%s: flags %#lx after the probe, expected %#lx (of %#lx)", what,
			     out[15] & GPR_FLAGS_SEEN, want_flags, GPR_FLAGS_SEEN);
		cr_assert_eq(out[15] & 0x400, 0, "%s: DF set after the probe", what);
		cr_assert_eq(opt_gpr_sp[1], opt_gpr_sp[0] - 8, "%s: %%rsp moved", what);
	}
	cr_expect_eq(atomic_load(&hits), 100);
	cr_expect_eq(gpr_seen_bad, 0, "%s: the handler saw wrong registers (mask %#lx: bits "
		     "0-14 as rax..r15, 15 ip, 16 sp, 17 flags %#lx)", what, gpr_seen_bad,
		     gpr_seen_flags);
	unregister_kprobe(&kp);
}

Test(optprobes, gpr_and_flags_intact, .timeout = 30)
{
	gpr_run(0, 0, "default");
}

Test(optprobes, gpr_and_flags_intact_gpr_only, .timeout = 30)
{
	gpr_run(KPROBE_FLAG_GPR_ONLY, 0, "GPR_ONLY");
}

Test(optprobes, gpr_and_flags_changes_applied, .timeout = 30)
{
	gpr_run(0, 1, "default, handler changes ax bp r15 CF ZF");
	gpr_run(KPROBE_FLAG_GPR_ONLY, 1, "GPR_ONLY, handler changes ax bp r15 CF ZF");
}

/*
 * The detour restores the flags without popfq (OF by an add, the others by
 * sahf) unless a bit beyond those is set: every combination of CF PF AF ZF
 * SF OF comes back as it was, and with ID set (the popfq path) too.
 */
Test(optprobes, flags_every_combination, .timeout = 60)
{
	static const unsigned long bit[6] = { 0x1, 0x4, 0x10, 0x40, 0x80, 0x800 };
	char what[96];

	for (unsigned int m = 0; m < 64; m++) {
		unsigned long f = 0x2;

		for (int b = 0; b < 6; b++)
			if (m & (1u << b))
				f |= bit[b];
		for (int id = 0; id < 2; id++) {
			opt_gpr_flags = f | (id ? ID_FLAG : 0);
			snprintf(what, sizeof(what), "GPR_ONLY, flags %#lx", opt_gpr_flags);
			gpr_run(KPROBE_FLAG_GPR_ONLY, 0, what);
		}
	}
	opt_gpr_flags = 0x8d7;
}

/* errno: a handler's libc calls must not change the program's errno. */
static int errno_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add(&hits, 1);
	errno = EDOM;
	close(-1);		/* EBADF */
	return 0;
}

Test(optprobes, errno_preserved, .timeout = 30)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)opt_basic_p, .pre_handler = errno_pre };

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect(wait_opt(&kp));
	for (int i = 0; i < 100; i++) {
		errno = ENOSPC;
		cr_assert_eq(f_basic(i), (i + 7) * 3);
		cr_assert_eq(errno, ENOSPC, "errno is %d after the probe", errno);
	}
	unregister_kprobe(&kp);
}

/* DF: the ABI wants it clear at every call; a probe where the program has
 * it set must not run C handlers with it set (the trap path gets it clear
 * from the kernel), and must give it back set. */
static volatile unsigned long df_handler_flags, df_regs_flags;
static volatile int df_memcpy_ok;
/* Copies in the middle of large buffers: a copy that runs backwards stays
 * inside them. */
#define DF_N (16u << 10)
static unsigned char df_src[3 * DF_N], df_dst[3 * DF_N];

static int df_pre(struct kprobe *p, struct pt_regs *regs)
{
	unsigned long f;
	void *(*volatile mc)(void *, const void *, size_t) = memcpy;

	__asm__ volatile("pushfq; popq %0" : "=r"(f));
	df_handler_flags = f;
	df_regs_flags = regs->flags;
	for (size_t i = 0; i < sizeof(df_src); i++)
		df_src[i] = (unsigned char)(i * 7 + 1);
	for (size_t i = 0; i < sizeof(df_dst); i++)
		df_dst[i] = 0;
	/* glibc copies sizes like this with rep movsb, which follows DF */
	mc(df_dst + DF_N, df_src + DF_N, DF_N);
	df_memcpy_ok = 1;
	for (size_t i = 0; i < sizeof(df_dst); i++)
		if (df_dst[i] != (i >= DF_N && i < 2 * DF_N ? df_src[i] : 0))
			df_memcpy_ok = 0;
	atomic_fetch_add(&hits, 1);
	return 0;
}

Test(optprobes, direction_flag, .timeout = 30)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)opt_df_p, .pre_handler = df_pre };

	cr_assert_eq(register_kprobe(&kp), 0);
	/* The breakpoint path first, for reference. */
	ukprobes_set_optimization(0);
	unsigned long fl = f_df(1);
	cr_expect(fl & 0x400, "breakpoint: DF lost across the probe (flags %#lx)", fl);
	cr_expect(df_regs_flags & 0x400, "breakpoint: regs->flags has no DF");
	cr_expect(!(df_handler_flags & 0x400), "breakpoint: the handler ran with DF set");
	cr_expect(df_memcpy_ok, "breakpoint: a 16 KiB memcpy in the handler copied wrong");
	ukprobes_set_optimization(1);
	cr_expect(wait_opt(&kp));
	df_handler_flags = 0x400;
	df_memcpy_ok = 0;
	fl = f_df(1);
	cr_expect(fl & 0x400, "optimized: DF lost across the probe (flags %#lx)", fl);
	cr_expect(df_regs_flags & 0x400, "optimized: regs->flags has no DF (%#lx)", df_regs_flags);
	cr_expect(!(df_handler_flags & 0x400), "optimized: the handler ran with DF set "
		  "(flags %#lx): the SysV ABI wants it clear at every call", df_handler_flags);
	cr_expect(df_memcpy_ok, "optimized: a 16 KiB memcpy in the handler copied wrong "
		  "(rep movsb with DF set runs backwards)");
	unregister_kprobe(&kp);
}

/* x87 stack full at the probe (MMX code, or hand-written x87): a handler
 * that uses long double must get a usable x87 stack, as it does from the
 * trap path (the kernel gives signal handlers a clean FPU state). */
extern char opt_x87full[], opt_x87full_p[];
static void (*volatile f_x87full)(const double *, double *) =
	(void (*)(const double *, double *))opt_x87full;
static volatile long double x87_result;

static int x87_pre(struct kprobe *p, struct pt_regs *regs)
{
	volatile long double a = 3.0L, b = 4.0L;

	x87_result = a * a + b * b;
	atomic_fetch_add(&hits, 1);
	return 0;
}

Test(optprobes, x87_full_stack_handler_usable, .timeout = 30)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)opt_x87full_p, .pre_handler = x87_pre };
	double in[8], out[8];

	for (int i = 0; i < 8; i++)
		in[i] = 1.25 * (i + 1);
	cr_assert_eq(register_kprobe(&kp), 0);
	ukprobes_set_optimization(0);
	x87_result = 0;
	f_x87full(in, out);
	for (int i = 0; i < 8; i++)
		cr_expect(out[i] == in[7 - i], "breakpoint: x87 st(%d) %g, expected %g", i,
			  out[i], in[7 - i]);
	cr_expect(x87_result == 25.0L, "breakpoint: handler computed %Lg", x87_result);
	ukprobes_set_optimization(1);
	cr_expect(wait_opt(&kp));
	x87_result = 0;
	f_x87full(in, out);
	for (int i = 0; i < 8; i++)
		cr_expect(out[i] == in[7 - i], "optimized: x87 st(%d) %g, expected %g", i,
			  out[i], in[7 - i]);
	cr_expect(x87_result == 25.0L, "optimized: a long double handler computed %Lg, not 25 "
		  "(it ran on the program's full x87 stack)", x87_result);
	unregister_kprobe(&kp);
}

/* ---------------------------------------------------------------------- */
/* 9. Red zone and stack alignment                                         */
/* ---------------------------------------------------------------------- */

static int deep_stack_pre(struct kprobe *p, struct pt_regs *regs)
{
	char buf[512];

	atomic_fetch_add(&hits, 1);
	memset(buf, 0xa5, sizeof(buf));
	snprintf(buf, sizeof(buf), "%ld %s %f", (long)regs->di, "red zone", 2.5);
	__asm__ volatile("" : : "r"(buf) : "memory");
	return 0;
}

__attribute__((target("general-regs-only")))
static int deep_stack_gpr_pre(struct kprobe *p, struct pt_regs *regs)
{
	volatile unsigned long buf[64];

	atomic_fetch_add(&hits, 1);
	for (int i = 0; i < 64; i++)
		buf[i] = ~0ul;
	__asm__ volatile("" : : "r"(buf) : "memory");
	return 0;
}

Test(optprobes, red_zone_intact, .timeout = 30)
{
	for (int g = 0; g < 2; g++) {
		struct kprobe kp = { .addr = (kprobe_opcode_t *)opt_redzone_p,
				     .pre_handler = g ? deep_stack_gpr_pre : deep_stack_pre,
				     .flags = g ? KPROBE_FLAG_GPR_ONLY : 0 };

		reset_counts();
		cr_assert_eq(register_kprobe(&kp), 0);
		cr_expect(wait_opt(&kp));
		for (long i = 0; i < 500; i++) {
			long r = f_redzone(i * 977);
			cr_assert_eq(r, 0, "%s: red zone slot -%ld(%%rsp) changed across the probe",
				     g ? "GPR_ONLY" : "default", r * 8);
		}
		cr_expect_eq(atomic_load(&hits), 500);
		unregister_kprobe(&kp);
	}
}

static atomic_ulong misaligned, misaligned_regs;
static volatile unsigned long sp_mod16_seen[3];

__attribute__((noinline)) static void aligned_store(void)
{
	float v[4] __attribute__((aligned(16))) = { 1, 2, 3, 4 };

	/* movaps faults on a misaligned address. */
	__asm__ volatile("movaps %0, %%xmm0\n\tmovaps %%xmm0, %0" : "+m"(v) : : "xmm0");
}

static int align_pre(struct kprobe *p, struct pt_regs *regs)
{
	int which = (char *)p->addr == opt_align_p0 ? 0 : (char *)p->addr == opt_align_p1 ? 1 : 2;

	unsigned long sp;

	atomic_fetch_add(&hits, 1);
	/* (read without assuming regs is aligned: see below) */
	memcpy(&sp, (char *)regs + offsetof(struct pt_regs, sp), sizeof(sp));
	sp_mod16_seen[which] = sp & 15;
	if ((uintptr_t)regs & 7)
		atomic_fetch_add(&misaligned_regs, 1);
	/* At a call the stack is 16-byte aligned: in the callee rsp + 8 is. */
	if (((uintptr_t)__builtin_frame_address(0) & 15) != 0)
		atomic_fetch_add(&misaligned, 1);
	aligned_store();
	return 0;
}

__attribute__((target("general-regs-only")))
static int align_gpr_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_fetch_add(&hits, 1);
	if (((uintptr_t)__builtin_frame_address(0) & 15) != 0)
		atomic_fetch_add(&misaligned, 1);
	return 0;
}

Test(optprobes, stack_aligned_for_handlers, .timeout = 30)
{
	for (int g = 0; g < 2; g++) {
		struct kprobe k[3];
		struct kprobe *all[3] = { &k[0], &k[1], &k[2] };
		char *pts[3] = { opt_align_p0, opt_align_p1, opt_align_p2 };

		for (int i = 0; i < 3; i++) {
			memset(&k[i], 0, sizeof(k[i]));
			k[i].addr = (kprobe_opcode_t *)pts[i];
			k[i].pre_handler = g ? align_gpr_pre : align_pre;
			k[i].flags = g ? KPROBE_FLAG_GPR_ONLY : 0;
		}
		reset_counts();
		atomic_store(&misaligned, 0);
		cr_assert_eq(register_kprobes(all, 3), 0);
		cr_expect_eq(ukprobes_wait_optimizer(), 0);
		for (int i = 0; i < 3; i++)
			expect_state(&k[i], true, g ? "align GPR_ONLY" : "align");
		for (long i = 0; i < 300; i++)
			cr_assert_eq(f_align(i), i + 3);
		cr_expect_eq(atomic_load(&hits), 900);
		cr_expect_eq(atomic_load(&misaligned), 0, "%lu handler calls on a misaligned stack",
			     atomic_load(&misaligned));
		if (!g)
			cr_expect(sp_mod16_seen[0] == 8 && sp_mod16_seen[1] == 0 &&
				  sp_mod16_seen[2] == 12,
				  "rsp mod 16 at the probes: %lu %lu %lu (expected 8 0 12)",
				  sp_mod16_seen[0], sp_mod16_seen[1], sp_mod16_seen[2]);
		unregister_kprobes(all, 3);
	}
}

/* struct pt_regs is 8-byte aligned for handlers (as in the kernel, and as
 * C requires) even where the program's %rsp is not (opt_align_p2: rsp is
 * 4 mod 8 after "sub $4, %rsp"). */
Test(optprobes, pt_regs_aligned_at_odd_rsp, .timeout = 30)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)opt_align_p2, .pre_handler = align_pre };

	atomic_store(&misaligned, 0);
	atomic_store(&misaligned_regs, 0);
	cr_assert_eq(register_kprobe(&kp), 0);
	ukprobes_set_optimization(0);
	for (long i = 0; i < 10; i++)
		cr_assert_eq(f_align(i), i + 3);
	cr_expect_eq(atomic_load(&misaligned_regs), 0, "breakpoint: regs misaligned");
	ukprobes_set_optimization(1);
	cr_expect(wait_opt(&kp));
	for (long i = 0; i < 10; i++)
		cr_assert_eq(f_align(i), i + 3);
	cr_expect_eq(sp_mod16_seen[2], 12);
	cr_expect_eq(atomic_load(&misaligned), 0, "handler stack misaligned");
	cr_expect_eq(atomic_load(&misaligned_regs), 0, "optimized: the handler got a struct "
		     "pt_regs at an address that is not 8-byte aligned (%lu of 10 hits)",
		     atomic_load(&misaligned_regs));
	unregister_kprobe(&kp);
}

/* ---------------------------------------------------------------------- */
/* 10. Unregister under load                                               */
/* ---------------------------------------------------------------------- */

#define MAGIC 0x6f707470726f6265ul

struct boxed {
	unsigned long magic;
	struct kprobe kp;
	unsigned long magic2;
};

static atomic_ulong box_hits, box_bad;

static int box_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct boxed *b = (struct boxed *)((char *)p - offsetof(struct boxed, kp));

	if (b->magic != MAGIC || b->magic2 != MAGIC || p->pre_handler != box_pre)
		atomic_fetch_add(&box_bad, 1);
	/* Linger a little, so that unregister finds threads in here. */
	for (volatile int i = 0; i < 200; i++)
		;
	atomic_fetch_add(&box_hits, 1);
	return 0;
}

static void *free_worker(void *arg)
{
	long i = (long)(intptr_t)arg * 1000000000L;

	while (!atomic_load_explicit(&stop_workers, memory_order_relaxed)) {
		if (f_load2(i) != 2 * i)
			atomic_fetch_add(&wrong_results, 1);
		i++;
	}
	return NULL;
}

Test(optprobes, unregister_under_load, .timeout = 120)
{
	pthread_t th[NW];
	int optimized_cycles = 0;

	for (int t = 0; t < NW; t++)
		pthread_create(&th[t], NULL, free_worker, (void *)(intptr_t)t);
	for (int c = 0; c < 40; c++) {
		struct boxed *b = calloc(1, sizeof(*b));

		cr_assert_not_null(b);
		b->magic = b->magic2 = MAGIC;
		b->kp.addr = (kprobe_opcode_t *)opt_load2_p;
		b->kp.pre_handler = box_pre;
		cr_assert_eq(register_kprobe(&b->kp), 0);
		if (c % 2 == 0) {
			/* optimized, then unregistered */
			ukprobes_wait_optimizer();
			optimized_cycles += !!kprobe_optimized(&b->kp);
			usleep(2000);
		} else {
			/* racing the background optimizer */
			usleep((unsigned)(c * 331 % 9000));
		}
		unsigned long before = atomic_load(&box_hits);
		unregister_kprobe(&b->kp);
		unsigned long after = atomic_load(&box_hits);
		/* Destroyed at once, as the kernel allows. */
		b->magic = b->magic2 = 0xdeaddeaddeaddeadul;
		memset(&b->kp, 0x5a, sizeof(b->kp));
		free(b);
		usleep(5000);
		unsigned long later = atomic_load(&box_hits);
		cr_expect_eq(later, after, "cycle %d: %lu hits after unregister_kprobe returned",
			     c, later - after);
		cr_expect_gt(after, 0, "cycle %d: no hits at all", c);
		(void)before;
	}
	atomic_store(&stop_workers, 1);
	for (int t = 0; t < NW; t++)
		pthread_join(th[t], NULL);
	say("unregister under load: %d of 20 waited cycles optimized, %lu hits\n",
	    optimized_cycles, atomic_load(&box_hits));
	cr_expect_geq(optimized_cycles, 10, "only %d of 20 cycles got optimized under load",
		      optimized_cycles);
	cr_expect_eq(atomic_load(&box_bad), 0, "%lu handler calls saw a destroyed probe",
		     atomic_load(&box_bad));
	cr_expect_eq(atomic_load(&wrong_results), 0);
	cr_expect_eq(f_load2(21), 42);
}

/* ---------------------------------------------------------------------- */
/* 11. Blocked system calls across (un)optimization                        */
/* ---------------------------------------------------------------------- */

struct blk {
	const char *name;
	atomic_ulong calls, failures;
	char why[160];
};

static struct blk blk_read = { .name = "read" }, blk_sleep = { .name = "nanosleep" },
		  blk_poll = { .name = "poll" }, blk_cond = { .name = "cond_timedwait" },
		  blk_epoll = { .name = "epoll_wait" }, blk_select = { .name = "select" };
static int pipe_rd[2], pipe_idle[2];
static atomic_int blk_stop;
static long long blk_read_started, blk_read_returned;

static void blk_fail(struct blk *b, const char *fmt, long a, long c)
{
	if (atomic_fetch_add(&b->failures, 1) == 0)
		snprintf(b->why, sizeof(b->why), fmt, a, c);
}

#define MS 1000000LL

static void *blk_reader(void *arg)
{
	char c;

	blk_read_started = scn_now_ns();
	ssize_t r = read(pipe_rd[0], &c, 1);
	int e = errno;
	blk_read_returned = scn_now_ns();
	atomic_fetch_add(&blk_read.calls, 1);
	if (r != 1)
		blk_fail(&blk_read, "read returned %ld, errno %ld", (long)r, e);
	return NULL;
}

static void *blk_sleeper(void *arg)
{
	while (!atomic_load(&blk_stop)) {
		struct timespec ts = { 0, 30 * MS }, rem = { 0, 0 };
		long long t0 = scn_now_ns();
		int r = nanosleep(&ts, &rem);
		int e = errno;
		long long dt = scn_now_ns() - t0;

		atomic_fetch_add(&blk_sleep.calls, 1);
		if (r != 0)
			blk_fail(&blk_sleep, "nanosleep returned %ld, errno %ld", r, e);
		else if (dt < 30 * MS)
			blk_fail(&blk_sleep, "nanosleep(30 ms) returned after %ld us%ld", dt / 1000, 0);
	}
	return NULL;
}

static void *blk_poller(void *arg)
{
	while (!atomic_load(&blk_stop)) {
		struct pollfd pf = { .fd = pipe_idle[0], .events = POLLIN };
		long long t0 = scn_now_ns();
		int r = poll(&pf, 1, 25);
		int e = errno;
		long long dt = scn_now_ns() - t0;

		atomic_fetch_add(&blk_poll.calls, 1);
		if (r != 0)
			blk_fail(&blk_poll, "poll returned %ld, errno %ld", r, e);
		else if (dt < 25 * MS - 1 * MS)
			blk_fail(&blk_poll, "poll(25 ms) returned after %ld us%ld", dt / 1000, 0);
	}
	return NULL;
}

static void *blk_epoller(void *arg)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN };

	epoll_ctl(ep, EPOLL_CTL_ADD, pipe_idle[0], &ev);
	while (!atomic_load(&blk_stop)) {
		struct epoll_event out;
		long long t0 = scn_now_ns();
		int r = epoll_wait(ep, &out, 1, 25);
		int e = errno;
		long long dt = scn_now_ns() - t0;

		atomic_fetch_add(&blk_epoll.calls, 1);
		if (r != 0)
			blk_fail(&blk_epoll, "epoll_wait returned %ld, errno %ld", r, e);
		else if (dt < 25 * MS - 1 * MS)
			blk_fail(&blk_epoll, "epoll_wait(25 ms) returned after %ld us%ld", dt / 1000, 0);
	}
	close(ep);
	return NULL;
}

static void *blk_selecter(void *arg)
{
	while (!atomic_load(&blk_stop)) {
		fd_set rd;
		struct timeval tv = { 0, 25000 };
		long long t0 = scn_now_ns();

		FD_ZERO(&rd);
		FD_SET(pipe_idle[0], &rd);
		int r = select(pipe_idle[0] + 1, &rd, NULL, NULL, &tv);
		int e = errno;
		long long dt = scn_now_ns() - t0;

		atomic_fetch_add(&blk_select.calls, 1);
		if (r != 0)
			blk_fail(&blk_select, "select returned %ld, errno %ld", r, e);
		else if (dt < 25 * MS - 1 * MS)
			blk_fail(&blk_select, "select(25 ms) returned after %ld us%ld", dt / 1000, 0);
	}
	return NULL;
}

static pthread_mutex_t blk_mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t blk_cv;

static void *blk_condwaiter(void *arg)
{
	while (!atomic_load(&blk_stop)) {
		struct timespec dl;
		long long t0 = scn_now_ns();

		clock_gettime(CLOCK_MONOTONIC, &dl);
		dl.tv_nsec += 20 * MS;
		if (dl.tv_nsec >= 1000000000L) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&blk_mtx);
		int r = pthread_cond_timedwait(&blk_cv, &blk_mtx, &dl);
		pthread_mutex_unlock(&blk_mtx);
		long long dt = scn_now_ns() - t0;

		atomic_fetch_add(&blk_cond.calls, 1);
		if (r != ETIMEDOUT)
			blk_fail(&blk_cond, "pthread_cond_timedwait returned %ld (never signalled)%ld",
				 r, 0);
		else if (dt < 20 * MS - 1 * MS)
			blk_fail(&blk_cond, "pthread_cond_timedwait(20 ms) returned after %ld us%ld",
				 dt / 1000, 0);
	}
	return NULL;
}

static void *blk_hammer(void *arg)
{
	long i = 0;

	while (!atomic_load(&blk_stop)) {
		if (f_basic(i) != (i + 7) * 3)
			atomic_fetch_add(&wrong_results, 1);
		i++;
		atomic_fetch_add_explicit(&wcalls[0].calls, 1, memory_order_relaxed);
	}
	return NULL;
}

Test(optprobes, blocked_syscalls_not_interrupted, .timeout = 120)
{
	struct blk *all[] = { &blk_read, &blk_sleep, &blk_poll, &blk_cond, &blk_epoll,
			      &blk_select };
	void *(*fns[])(void *) = { blk_reader, blk_sleeper, blk_poller, blk_condwaiter,
				   blk_epoller, blk_selecter };
	const int nb = 6;
	pthread_t th[6], hammer;
	pthread_condattr_t ca;
	struct kprobe a = mkprobe(opt_basic_p), b = mkprobe(opt_load_p);

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&blk_cv, &ca);
	cr_assert_eq(pipe(pipe_rd), 0);
	cr_assert_eq(pipe(pipe_idle), 0);
	cr_assert_eq(register_kprobe(&a), 0);
	cr_expect(wait_opt(&a));
	reset_counts();
	for (int i = 0; i < nb; i++)
		pthread_create(&th[i], NULL, fns[i], NULL);
	pthread_create(&hammer, NULL, blk_hammer, NULL);
	usleep(50000);		/* everyone blocked */

	int reached = 0, reached_b = 0;
	for (int c = 0; c < 20; c++) {
		cr_expect_eq(ukprobes_set_optimization(0), 0);
		cr_expect(!kprobe_optimized(&a));
		usleep(3000);
		cr_expect_eq(ukprobes_set_optimization(1), 0);
		/* and a probe coming and going, optimized in between */
		b = mkprobe(opt_load_p);
		cr_expect_eq(register_kprobe(&b), 0);
		ukprobes_wait_optimizer();
		reached += kprobe_optimized(&a) && kprobe_optimized(&b);
		for (long i = 0; i < 10; i++)
			cr_expect_eq(f_load(i), i + 1);
		cr_expect_eq(disable_kprobe(&b), 0);
		usleep(3000);
		cr_expect_eq(enable_kprobe(&b), 0);
		ukprobes_wait_optimizer();
		reached_b += !!kprobe_optimized(&b);
		unregister_kprobe(&b);
		usleep(20000);
	}
	long long end_cycles = scn_now_ns();
	atomic_store(&blk_stop, 1);
	cr_assert_eq(write(pipe_rd[1], "x", 1), 1);
	for (int i = 0; i < nb; i++)
		pthread_join(th[i], NULL);
	pthread_join(hammer, NULL);
	unregister_kprobe(&a);

	say("blocked syscalls: optimized in %d (%d after enable) of 20 cycles; %lu hammer "
	    "calls\n", reached, reached_b, atomic_load(&wcalls[0].calls));
	cr_expect_geq(reached, 15, "optimized in only %d of 20 cycles", reached);
	cr_expect_geq(reached_b, 15, "optimized after enable in only %d of 20 cycles", reached_b);
	/* a stayed enabled: every hammer call is a hit (b's: 10 a cycle) */
	cr_expect_eq(atomic_load(&hits), atomic_load(&wcalls[0].calls) + 20 * 10,
		     "hammer: %lu hits for %lu calls", atomic_load(&hits),
		     atomic_load(&wcalls[0].calls));
	cr_expect_eq(atomic_load(&wrong_results), 0);
	for (int i = 0; i < nb; i++) {
		say("  %-15s %lu calls, %lu failures %s\n", all[i]->name, atomic_load(&all[i]->calls),
		    atomic_load(&all[i]->failures), all[i]->why);
		cr_expect_geq(atomic_load(&all[i]->calls), 1, "%s never returned", all[i]->name);
		cr_expect_eq(atomic_load(&all[i]->failures), 0, "%s: %s", all[i]->name, all[i]->why);
	}
	cr_expect_geq(blk_read_returned, end_cycles, "read returned %lld ms before the write",
		      (end_cycles - blk_read_returned) / MS);
}

/* ---------------------------------------------------------------------- */
/* 12. Kretprobes                                                          */
/* ---------------------------------------------------------------------- */

static atomic_ulong ret_hits, entry_hits, ret_bad;

static int kret_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	atomic_fetch_add(&entry_hits, 1);
	*(long *)ri->data = (long)regs->di;
	return 0;
}

static int kret_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	atomic_fetch_add(&ret_hits, 1);
	if ((long)regs_return_value(regs) != *(long *)ri->data + 3)
		atomic_fetch_add(&ret_bad, 1);
	return 0;
}

static void *kret_worker(void *arg)
{
	long base = (long)(intptr_t)arg * 1000000;

	for (long i = 0; i < 20000; i++)
		if (f_kret(base + i) != base + i + 3)
			atomic_fetch_add(&wrong_results, 1);
	return NULL;
}

Test(optprobes, kretprobe_optimized_entry, .timeout = 60)
{
	struct kretprobe rp = { .kp.symbol_name = "opt_kret", .handler = kret_ret,
				.entry_handler = kret_entry, .data_size = sizeof(long),
				.maxactive = 16 };

	cr_assert_eq(register_kretprobe(&rp), 0);
	cr_assert_eq((void *)rp.kp.addr, (void *)opt_kret);
	cr_expect(wait_opt(&rp.kp), "the kretprobe's entry probe is not optimized");
	expect_state(&rp.kp, true, "kretprobe entry");
	{
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		ukprobes_print_list(f);
		fclose(f);
		cr_expect(strstr(buf, "  r  ") && strstr(buf, "[OPTIMIZED]"),
			  "listing: %s", buf);
		free(buf);
	}
	for (long i = 0; i < 5000; i++)
		cr_assert_eq(f_kret(i), i + 3);
	cr_expect_eq(atomic_load(&entry_hits), 5000);
	cr_expect_eq(atomic_load(&ret_hits), 5000);

	/* Four threads. */
	pthread_t th[NW];
	for (int t = 0; t < NW; t++)
		pthread_create(&th[t], NULL, kret_worker, (void *)(intptr_t)(t + 1));
	for (int t = 0; t < NW; t++)
		pthread_join(th[t], NULL);
	cr_expect_eq(atomic_load(&entry_hits), 5000 + NW * 20000);
	cr_expect_eq(atomic_load(&ret_hits), 5000 + NW * 20000);
	cr_expect_eq(atomic_load(&ret_bad), 0);
	cr_expect_eq(atomic_load(&wrong_results), 0);
	cr_expect_eq(rp.nmissed, 0);
	unregister_kretprobe(&rp);
	cr_expect_eq(f_kret(1), 4);
	cr_expect_eq(atomic_load(&ret_hits), 5000 + NW * 20000);
}

/* The arguments of a function are live in xmm0-7 at its entry: the
 * kretprobe's entry path must keep them, optimized or not. */
static int kret_vec_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	char buf[128];

	atomic_fetch_add(&entry_hits, 1);
	snprintf(buf, sizeof(buf), "%f", 2.5 * (double)regs->di);
	__asm__ volatile("" : : "r"(buf) : "memory");
	return 0;
}

static int kret_vec_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	atomic_fetch_add(&ret_hits, 1);
	return 0;
}

static void kret_vec_run(struct kretprobe *rp, const char *what)
{
	double out[8];

	for (int r = 0; r < 50; r++) {
		double a[8];

		for (int i = 0; i < 8; i++)
			a[i] = 1.5 * (i + 1) + r;
		memset(out, 0, sizeof(out));
		f_kret_vec(out, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
		for (int i = 0; i < 8; i++) {
			if (out[i] != a[i]) {
				cr_expect_fail("%s: argument %d (xmm%d) is %g at the function, "
					       "passed %g", what, i, i, out[i], a[i]);
				return;
			}
		}
	}
}

Test(optprobes, kretprobe_keeps_vector_arguments, .timeout = 30)
{
	struct kretprobe rp = { .kp.symbol_name = "opt_kret_vec", .handler = kret_vec_ret };
	struct kretprobe rp2 = { .kp.symbol_name = "opt_kret_vec", .handler = kret_vec_ret,
				 .entry_handler = kret_vec_entry };

	/* No entry handler: only ukprobes' own code runs at entry. */
	cr_assert_eq(register_kretprobe(&rp), 0);
	ukprobes_set_optimization(0);
	kret_vec_run(&rp, "breakpoint entry");
	ukprobes_set_optimization(1);
	cr_expect(wait_opt(&rp.kp));
	kret_vec_run(&rp, "optimized entry, no entry_handler");
	unregister_kretprobe(&rp);

	/* An entry handler that uses vector registers (snprintf %f). */
	cr_assert_eq(register_kretprobe(&rp2), 0);
	cr_expect(wait_opt(&rp2.kp));
	kret_vec_run(&rp2, "optimized entry, entry_handler with snprintf");
	unregister_kretprobe(&rp2);
}

/* A jprobe redirects execution: its point cannot be optimized. */
static atomic_ulong jp_hits;

static long jp_entry(long x)
{
	atomic_fetch_add(&jp_hits, 1);
	jprobe_return();
	return 0;
}

Test(optprobes, jprobe_unoptimizes, .timeout = 30)
{
	struct kprobe kp = { .symbol_name = "opt_kret", .pre_handler = count_pre };
	struct jprobe jp = { .entry = (void *)jp_entry, .kp.symbol_name = "opt_kret" };

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect(wait_opt(&kp));
	cr_assert_eq(register_jprobe(&jp), 0);
	expect_state(&kp, false, "kprobe with a jprobe at its address");
	ukprobes_wait_optimizer();
	usleep(20000);
	expect_state(&kp, false, "kprobe with a jprobe, after wait");
	reset_counts();
	for (long i = 0; i < 100; i++)
		cr_assert_eq(f_kret(i), i + 3);
	cr_expect_eq(atomic_load(&hits), 100);
	cr_expect_eq(atomic_load(&jp_hits), 100);
	unregister_jprobe(&jp);
	cr_expect(wait_opt(&kp), "not optimized again after the jprobe went");
	cr_expect_eq(f_kret(1), 4);
	cr_expect_eq(atomic_load(&jp_hits), 100);
	unregister_kprobe(&kp);
}

/* ---------------------------------------------------------------------- */
/* 13. Patchable function entries                                          */
/* ---------------------------------------------------------------------- */

__attribute__((patchable_function_entry(5, 0), noinline, noclone, used))
long opt_patchable(long x)
{
	__asm__ volatile("");
	return x * 5 + 2;
}

static fn1_t volatile f_patchable = opt_patchable;

Test(optprobes, ftrace_nop5_entry, .timeout = 30)
{
	/* The 5-byte nop of -mfentry -mnop-mcount (the kernel's ftrace). */
	struct kprobe kp = { .symbol_name = "opt_fentry", .pre_handler = count_pre };

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert_eq((void *)kp.addr, (void *)opt_fentry);
	cr_expect(wait_opt(&kp));
	expect_state(&kp, true, "5-byte nop entry");
	cr_expect(kp.flags & KPROBE_FLAG_FTRACE, "no KPROBE_FLAG_FTRACE (flags %#x)", kp.flags);
	struct lst l = list_at(opt_fentry);
	cr_expect_eq(l.ftrace, 1, "listing has no [FTRACE]");
	reset_counts();
	for (long i = 0; i < 10000; i++)
		cr_assert_eq(f_fentry(i), 3 * i + 1);
	cr_expect_eq(atomic_load(&hits), 10000);
	unregister_kprobe(&kp);
	cr_expect_eq(memcmp(opt_fentry, "\x0f\x1f\x44\x00\x00", 5), 0);
	/* A probe after the nop is no ftrace probe. */
	struct kprobe k2 = mkprobe(opt_fentry_body);
	cr_assert_eq(register_kprobe(&k2), 0);
	ukprobes_wait_optimizer();
	cr_expect(!(k2.flags & KPROBE_FLAG_FTRACE));
	unregister_kprobe(&k2);
}

Test(optprobes, patchable_function_entry_c, .timeout = 30)
{
	/* gcc's patchable_function_entry(5, 0) on x86-64: five one-byte nops
	 * at the entry. */
	struct kprobe kp = { .symbol_name = "opt_patchable", .pre_handler = count_pre };
	unsigned char nops[5];

	memcpy(nops, (void *)opt_patchable, 5);
	say("opt_patchable starts with %02x %02x %02x %02x %02x\n", nops[0], nops[1], nops[2],
	    nops[3], nops[4]);
	cr_assert(!memcmp(nops, "\x90\x90\x90\x90\x90", 5) ||
		  !memcmp(nops, "\x0f\x1f\x44\x00\x00", 5), "no patchable entry nop");
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert_eq((void *)kp.addr, (void *)opt_patchable);
	cr_expect(wait_opt(&kp));
	expect_state(&kp, true, "patchable entry");
	reset_counts();
	for (long i = 0; i < 10000; i++)
		cr_assert_eq(f_patchable(i), 5 * i + 2);
	cr_expect_eq(atomic_load(&hits), 10000);
	struct lst l = list_at(opt_patchable);
	cr_expect(kp.flags & KPROBE_FLAG_FTRACE,
		  "a -fpatchable-function-entry entry (gcc: 5 x 0x90) is not [FTRACE] (flags %#x)",
		  kp.flags);
	cr_expect_eq(l.ftrace, 1, "listing has no [FTRACE]");
	unregister_kprobe(&kp);
	cr_expect_eq(memcmp((void *)opt_patchable, nops, 5), 0);
}

/* ---------------------------------------------------------------------- */
/* 14. Faults in the region                                                */
/* ---------------------------------------------------------------------- */

static sigjmp_buf fault_env;
static volatile unsigned long fault_rip, fault_addr;
static volatile int fault_count;

static void segv_handler(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	fault_rip = (unsigned long)uc->uc_mcontext.gregs[REG_RIP];
	fault_addr = (unsigned long)si->si_addr;
	fault_count++;
	siglongjmp(fault_env, 1);
}

static void fault_run(long (*volatile fn)(long *), char *probe, char *insn, long add,
		      const char *what)
{
	struct kprobe kp = mkprobe(probe);
	struct sigaction sa = { .sa_sigaction = segv_handler, .sa_flags = SA_SIGINFO }, old;
	long *bad[2];
	void *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(page, MAP_FAILED);
	bad[0] = (long *)0x18;
	bad[1] = (long *)((char *)page + 64);
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect(wait_opt(&kp));
	expect_state(&kp, true, what);
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGSEGV, &sa, &old), 0);
	reset_counts();
	fault_count = 0;
	for (int i = 0; i < 100; i++) {
		long good = 1000 + i;
		long *p = bad[i % 2];

		cr_assert_eq(fn(&good), good + add);
		if (sigsetjmp(fault_env, 1) == 0) {
			fn(p);
			cr_assert_fail("%s: no fault from a load at %p", what, (void *)p);
		}
		cr_assert_eq(fault_rip, (unsigned long)insn,
			     "%s, round %d: the program's SIGSEGV handler saw RIP %#lx, the "
			     "instruction is at %p", what, i, fault_rip, (void *)insn);
		cr_assert_eq(fault_addr, (unsigned long)p, "%s: si_addr %#lx, expected %p", what,
			     fault_addr, (void *)p);
	}
	cr_expect_eq(fault_count, 100);
	cr_expect_eq(atomic_load(&hits), 200);
	sigaction(SIGSEGV, &old, NULL);
	/* still optimized, and fine */
	expect_state(&kp, true, what);
	long v = 7;
	cr_expect_eq(fn(&v), 7 + add);
	unregister_kprobe(&kp);
	munmap(page, 4096);
}

Test(optprobes, fault_in_region_second_insn, .timeout = 30)
{
	fault_run(f_fault, opt_fault_p, opt_fault_ld, 0, "load is the 2nd of the region");
}

Test(optprobes, fault_in_region_first_insn, .timeout = 30)
{
	fault_run(f_fault1, opt_fault1_p, opt_fault1_p, 1, "load is the 1st of the region");
}

/*
 * A thread stopped inside a region by a signal whose handler is still
 * running while the probe gets optimized: its resume point (in the signal
 * frame, not in /proc) is now inside the jmp's bytes.  When the handler
 * returns, the thread must go on correctly (in the detour's copy).
 *   - an asynchronous signal (SIGUSR1): the load at opt_sigin_ld faults
 *     once; the program's SIGSEGV handler makes the page readable and
 *     raises SIGUSR1, blocked until it returns, so SIGUSR1 arrives with
 *     the thread at opt_sigin_ld; its handler waits for the optimizer;
 *   - a synchronous one (SIGSEGV): the program's SIGSEGV handler itself
 *     waits for the optimizer, then makes the page readable and returns to
 *     re-execute the load.
 */
extern char opt_sigin[], opt_sigin_p[], opt_sigin_ld[];
static long (*volatile f_sigin)(long, long *) = (long (*)(long, long *))opt_sigin;

static long *sigin_page;
static atomic_int sigin_parked, sigin_go, sigin_park_in_segv;
static volatile unsigned long sigin_rip_usr1, sigin_rip_segv;
static volatile long sigin_result;
static atomic_int sigin_done;

static void sigin_wait_go(void)
{
	atomic_store(&sigin_parked, 1);
	while (!atomic_load(&sigin_go)) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
}

static atomic_int sigin_segvs;
static volatile unsigned long sigin_last_rip, sigin_last_addr;

static void sigin_segv(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	sigin_last_rip = (unsigned long)uc->uc_mcontext.gregs[REG_RIP];
	sigin_last_addr = (unsigned long)si->si_addr;
	if (atomic_fetch_add(&sigin_segvs, 1) > 0) {
		/* Not the first fault: resumed wrongly.  Stop here. */
		sigin_result = -1;
		atomic_store(&sigin_done, 1);
		pthread_exit(NULL);
	}
	sigin_rip_segv = sigin_last_rip;
	if (atomic_load(&sigin_park_in_segv))
		sigin_wait_go();
	mprotect(sigin_page, 4096, PROT_READ | PROT_WRITE);
	if (!atomic_load(&sigin_park_in_segv))
		raise(SIGUSR1);		/* blocked (sa_mask) until we return */
}

static void sigin_usr1(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	sigin_rip_usr1 = (unsigned long)uc->uc_mcontext.gregs[REG_RIP];
	sigin_wait_go();
}

static void *sigin_worker(void *arg)
{
	sigin_result = f_sigin(1000, sigin_page + 3);
	atomic_store(&sigin_done, 1);
	return NULL;
}

static void sigin_run(bool park_in_segv)
{
	struct kprobe warm = mkprobe(opt_basic_p), kp = mkprobe(opt_sigin_p);
	struct sigaction sa = { .sa_sigaction = sigin_segv, .sa_flags = SA_SIGINFO };
	struct sigaction su = { .sa_sigaction = sigin_usr1, .sa_flags = SA_SIGINFO };
	pthread_t th;

	/* ukprobes is up before the program installs its handlers. */
	cr_assert_eq(register_kprobe(&warm), 0);
	sigin_page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq((void *)sigin_page, MAP_FAILED);
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGUSR1);
	sigemptyset(&su.sa_mask);
	cr_assert_eq(sigaction(SIGSEGV, &sa, NULL), 0);
	cr_assert_eq(sigaction(SIGUSR1, &su, NULL), 0);
	atomic_store(&sigin_park_in_segv, park_in_segv);

	pthread_create(&th, NULL, sigin_worker, NULL);
	while (!atomic_load(&sigin_parked))
		usleep(1000);
	cr_expect_eq(park_in_segv ? sigin_rip_segv : sigin_rip_usr1, (unsigned long)opt_sigin_ld,
		     "the thread is not stopped at the region's 2nd instruction");
	/* Now the probe: optimized while the thread waits in its handler. */
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect(wait_opt(&kp), "not optimized");
	expect_state(&kp, true, "probe over the stopped thread's region");
	reset_counts();
	atomic_store(&sigin_go, 1);
	long long t0 = scn_now_ns();
	while (!atomic_load(&sigin_done) && scn_now_ns() - t0 < 5000000000LL)
		usleep(1000);
	cr_assert(atomic_load(&sigin_done), "the thread did not finish");
	pthread_join(th, NULL);
	cr_expect_eq(sigin_result, 1000, "the thread resumed wrongly: f = %ld (%d SIGSEGVs, the "
		     "last at rip %#lx, address %#lx; the load is at %p, the probe at %p)",
		     sigin_result, atomic_load(&sigin_segvs), sigin_last_rip, sigin_last_addr,
		     (void *)opt_sigin_ld, (void *)opt_sigin_p);
	/* And the probe works afterwards. */
	cr_expect_eq(f_sigin(5, sigin_page), 5);
	cr_expect_eq(atomic_load(&hits), 1);
	unregister_kprobe(&kp);
	unregister_kprobe(&warm);
}

Test(optprobes, async_signal_handler_in_region_while_optimized, .timeout = 30)
{
	sigin_run(false);
}

Test(optprobes, fault_handler_in_region_while_optimized, .timeout = 30)
{
	sigin_run(true);
}

/* ---------------------------------------------------------------------- */
/* 15. Every instruction of zlib's deflate()                               */
/* ---------------------------------------------------------------------- */

static struct kprobe *z_kps;
static size_t z_n;
static unsigned long *z_hits;

static int z_pre(struct kprobe *p, struct pt_regs *regs)
{
	size_t i = (size_t)(p - z_kps);

	if (i < z_n)
		z_hits[i]++;
	return 0;
}

#define Z_DATA (48u << 10)

static unsigned char *z_input(void)
{
	static const char *const words[] = {
		"probe", "jump", "detour", "region", "optimize", "kernel", "the", "of",
		"instruction", "breakpoint", "deflate", "window", "handler", "a", "is",
	};
	unsigned char *p = malloc(Z_DATA);
	uint32_t s = 12345;
	size_t k = 0;

	cr_assert_not_null(p);
	while (k < Z_DATA) {
		s = s * 1103515245u + 12345u;
		const char *w = words[(s >> 8) % 15];
		for (size_t j = 0; w[j] && k < Z_DATA; j++)
			p[k++] = (unsigned char)w[j];
		if (k < Z_DATA)
			p[k++] = (s >> 20) % 9 == 0 ? '\n' : ' ';
		if ((s >> 12) % 17 == 0)
			for (int d = 0; d < 4 && k < Z_DATA; d++)
				p[k++] = (unsigned char)('0' + ((s >> (d * 3)) % 10));
	}
	return p;
}

/* Compress in small steps, so deflate() runs many times, with several
 * levels and flushes. */
static size_t z_compress(const unsigned char *in, unsigned char *out, size_t cap)
{
	size_t total = 0;
	static const int levels[] = { 1, 6, 9 };

	for (int l = 0; l < 3; l++) {
		z_stream s;
		unsigned chunk = 0;

		memset(&s, 0, sizeof(s));
		cr_assert_eq(deflateInit(&s, levels[l]), Z_OK);
		s.next_in = (unsigned char *)in;
		s.avail_in = 0;
		size_t pos = 0;
		int ret;
		do {
			size_t n = Z_DATA - pos < 1024 ? Z_DATA - pos : 1024;
			s.next_in = (unsigned char *)in + pos;
			s.avail_in = (uInt)n;
			pos += n;
			int flush = pos == Z_DATA ? Z_FINISH : chunk % 5 == 2 ? Z_SYNC_FLUSH : Z_NO_FLUSH;
			chunk++;
			do {
				s.next_out = out + total;
				s.avail_out = (uInt)(cap - total < 128 ? cap - total : 128);
				ret = deflate(&s, flush);
				cr_assert(ret == Z_OK || ret == Z_STREAM_END || ret == Z_BUF_ERROR,
					  "deflate = %d", ret);
				total = (size_t)(s.next_out - out);
			} while (s.avail_out == 0);
		} while (pos < Z_DATA);
		cr_assert_eq(ret, Z_STREAM_END);
		deflateEnd(&s);
	}
	return total;
}

Test(optprobes, zlib_deflate_every_insn, .timeout = 120)
{
	/* The function's bounds from its dynamic symbol. */
	void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_NOLOAD);
	cr_assert_not_null(h);
	void *sym = dlsym(h, "deflate");
	Dl_info info;
	const ElfW(Sym) *es = NULL;
	cr_assert(dladdr1(sym, &info, (void **)&es, RTLD_DL_SYMENT) && es);
	size_t fsize = es->st_size;
	const unsigned char *fcode = sym;

	/* Instruction boundaries with Zydis (loaded with libukprobes). */
	void *zy = dlopen("libZydis.so.4.0", RTLD_NOW);
	cr_assert_not_null(zy, "libZydis: %s", dlerror());
	ZyanStatus (*dinit)(ZydisDecoder *, ZydisMachineMode, ZydisStackWidth) =
		(ZyanStatus (*)(ZydisDecoder *, ZydisMachineMode, ZydisStackWidth))
		dlsym(zy, "ZydisDecoderInit");
	ZyanStatus (*dinsn)(const ZydisDecoder *, ZydisDecoderContext *, const void *, ZyanUSize,
			    ZydisDecodedInstruction *) =
		(ZyanStatus (*)(const ZydisDecoder *, ZydisDecoderContext *, const void *,
				ZyanUSize, ZydisDecodedInstruction *))
		dlsym(zy, "ZydisDecoderDecodeInstruction");
	cr_assert(dinit && dinsn);
	ZydisDecoder dec;
	cr_assert(ZYAN_SUCCESS(dinit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)));

	unsigned char *orig = malloc(fsize);
	memcpy(orig, fcode, fsize);
	size_t *off = calloc(fsize, sizeof(*off));
	unsigned char *ilen = calloc(fsize, 1);
	size_t n = 0;
	for (size_t o = 0; o < fsize;) {
		ZydisDecodedInstruction in;
		cr_assert(ZYAN_SUCCESS(dinsn(&dec, NULL, orig + o, fsize - o, &in)),
			  "deflate+0x%zx does not decode", o);
		off[n] = o;
		ilen[n] = in.length;
		n++;
		o += in.length;
	}
	size_t n5 = 0;
	for (size_t i = 0; i < n; i++)
		n5 += ilen[i] >= 5;
	say("zlib %s deflate: %zu bytes, %zu instructions (%zu of 5 bytes or more)\n",
	    zlibVersion(), fsize, n, n5);

	unsigned char *input = z_input();
	size_t cap = 3 * Z_DATA + 65536;
	unsigned char *ref = malloc(cap), *got = malloc(cap);
	size_t reflen = z_compress(input, ref, cap);

	/* A probe on every instruction. */
	z_kps = calloc(n, sizeof(*z_kps));
	z_hits = calloc(n, sizeof(*z_hits));
	unsigned long *hits_opt = calloc(n, sizeof(*hits_opt));
	z_n = n;
	struct kprobe **ptrs = calloc(n, sizeof(*ptrs));
	for (size_t i = 0; i < n; i++) {
		z_kps[i].addr = (kprobe_opcode_t *)(fcode + off[i]);
		z_kps[i].pre_handler = z_pre;
		ptrs[i] = &z_kps[i];
	}
	long long t0 = scn_now_ns();
	for (size_t i = 0; i < n; i += 256) {
		int k = (int)(n - i < 256 ? n - i : 256);
		int r = register_kprobes(ptrs + i, k);
		cr_assert_eq(r, 0, "register_kprobes at deflate+0x%zx: %d", off[i], r);
	}
	int left = ukprobes_wait_optimizer();
	double treg = (scn_now_ns() - t0) / 1e9;
	cr_expect_eq(left, 0, "%d probes still waiting", left);

	/* Optimized: by flag and by listing; only single instructions of 5
	 * bytes or more can be (any longer region holds a neighbour). */
	size_t nopt = 0, bad_len = 0;
	for (size_t i = 0; i < n; i++) {
		if (kprobe_optimized(&z_kps[i])) {
			nopt++;
			if (ilen[i] < 5 && bad_len++ < 5)
				say("  optimized deflate+0x%zx has %u bytes\n", off[i], ilen[i]);
			if (fcode[off[i]] != 0xe9 && bad_len++ < 5)
				say("  optimized deflate+0x%zx starts with 0x%02x\n", off[i],
				    fcode[off[i]]);
		}
	}
	struct lst l = list_at(fcode);
	say("zlib deflate: %zu probes registered and optimizer waited in %.2f s; "
	    "%zu [OPTIMIZED] (listing: %d of %d lines)\n", n, treg, nopt, l.total_optimized,
	    l.total_lines);
	cr_expect_eq((size_t)l.total_optimized, nopt, "listing and flags disagree");
	cr_expect_eq((size_t)l.total_lines, n);
	cr_expect_eq(bad_len, 0);
	cr_expect_gt(nopt, 0, "no probe optimized at all");

	/* Run with the optimized set. */
	memset(got, 0, cap);
	t0 = scn_now_ns();
	size_t gotlen = z_compress(input, got, cap);
	say("  compress with optimization: %.2f s\n", (scn_now_ns() - t0) / 1e9);
	cr_expect(gotlen == reflen && !memcmp(got, ref, reflen),
		  "optimized: compressed output differs (%zu vs %zu bytes)", gotlen, reflen);
	memcpy(hits_opt, z_hits, n * sizeof(*z_hits));
	unsigned long total = 0;
	for (size_t i = 0; i < n; i++)
		total += z_hits[i];
	cr_expect_gt(total, 20000, "only %lu hits", total);

	/* Without optimization: the same output and the same counts. */
	ukprobes_set_optimization(0);
	cr_expect_eq(list_at(fcode).total_optimized, 0);
	memset(z_hits, 0, n * sizeof(*z_hits));
	memset(got, 0, cap);
	t0 = scn_now_ns();
	gotlen = z_compress(input, got, cap);
	say("  compress without optimization: %.2f s, %lu hits\n", (scn_now_ns() - t0) / 1e9,
	    total);
	cr_expect(gotlen == reflen && !memcmp(got, ref, reflen),
		  "not optimized: compressed output differs");
	size_t differ = 0;
	for (size_t i = 0; i < n; i++)
		if (z_hits[i] != hits_opt[i] && differ++ < 5)
			say("  deflate+0x%zx: %lu hits optimized, %lu not\n", off[i], hits_opt[i],
			    z_hits[i]);
	cr_expect_eq(differ, 0, "%zu probes counted differently with and without optimization",
		     differ);

	/* On again: the same set optimized. */
	ukprobes_set_optimization(1);
	ukprobes_wait_optimizer();
	size_t nopt2 = 0;
	for (size_t i = 0; i < n; i++)
		nopt2 += !!kprobe_optimized(&z_kps[i]);
	cr_expect_eq(nopt2, nopt, "%zu optimized the second time, %zu the first", nopt2, nopt);
	gotlen = z_compress(input, got, cap);
	cr_expect(gotlen == reflen && !memcmp(got, ref, reflen), "optimized (2): output differs");

	for (size_t i = 0; i < n; i += 256) {
		int k = (int)(n - i < 256 ? n - i : 256);
		unregister_kprobes(ptrs + i, k);
	}
	cr_expect_eq(memcmp(fcode, orig, fsize), 0, "deflate's code not restored");
	free(ptrs);
	free(z_kps);
	free(z_hits);
	free(hits_opt);
	free(off);
	free(ilen);
	free(orig);
	free(input);
	free(ref);
	free(got);
}
