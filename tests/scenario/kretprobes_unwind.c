/* SPDX-License-Identifier: MIT */
/*
 * kretprobes_unwind.c - what reads return addresses, through kretprobed
 * frames (register_kretprobe(3), "Unwinding"):
 *   - a C++ exception thrown through kretprobed frames is caught as without
 *     probes, destructors run; the frames unwound give their instances back
 *     at once without a return handler, frames that stay keep their return
 *     probes; 10,000 throws with maxactive 4 miss nothing;
 *   - pthread_cancel() and pthread_exit() of threads inside kretprobed
 *     frames run every destructor;
 *   - backtrace(), _Unwind_Backtrace(), libunwind and gdb's bt show the
 *     real callers: the same frames as without probes, plus one frame of
 *     the return trampoline per kretprobed call in flight;
 *   - a return handler's own backtrace() goes through the trampoline.
 * The C++ code (throws, catches, destructors) is kretprobes_unwind.cc.
 *
 * Handlers never assert: they count, the tests check the counts.
 */
#include "../support/ukp_test.h"
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <unwind.h>

#include <ukprobes.h>
#include "scn_arch.h"
#include "scn_util.h"

/* kretprobes_unwind.cc */
unsigned long kru_dtors(void);
int kru_parked(void);
void kru_unpark(void);
long a_thrower(long x);		/* throws for x >= 0, else -x */
long b_middle(long x);		/* a_thrower(x) + 1, a destructor */
long c_catcher(long x);		/* b_middle(x), or 1000 + x: caught */
void *kru_cancel_me(void *arg);	/* -> e_outer -> d_inner, parked */
void *kru_exit_me(void *arg);	/* -> f_exits: pthread_exit(arg) */

/* A kretprobe that counts its entries and returns. */
struct probe {
	struct kretprobe rp;	/* first: get_kretprobe(ri) is the probe */
	atomic_ulong entries, returns;
};

static int probe_on_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	(void)regs;
	atomic_fetch_add(&((struct probe *)get_kretprobe(ri))->entries, 1);
	return 0;
}

static int probe_on_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	(void)regs;
	atomic_fetch_add(&((struct probe *)get_kretprobe(ri))->returns, 1);
	return 0;
}

static void probe_reg(struct probe *p, const char *sym, int maxactive)
{
	memset(p, 0, sizeof(*p));
	p->rp.kp.symbol_name = sym;
	p->rp.handler = probe_on_ret;
	p->rp.entry_handler = probe_on_entry;
	p->rp.maxactive = maxactive;
	cr_assert_eq(register_kretprobe(&p->rp), 0, "register %s", sym);
}

/* ---------------------------------------------------------------------- */
/* Exceptions                                                              */
/* ---------------------------------------------------------------------- */

static long (*volatile catcher)(long) = c_catcher;

Test(kretprobes_unwind, exception_through_kretprobed_frames, .timeout = 60)
{
	struct probe t, m, c;
	const long n = 10000;
	long bad = 0;

	probe_reg(&t, "a_thrower", 4);
	probe_reg(&m, "b_middle", 4);
	probe_reg(&c, "c_catcher", 4);
	for (long i = 0; i < n; i++)
		bad += catcher(i) != 1000 + i;
	/* Frames that return still get their return handlers. */
	for (long i = 1; i <= 100; i++)
		bad += catcher(-i) != i + 1;
	unregister_kretprobe(&t.rp);
	unregister_kretprobe(&m.rp);
	unregister_kretprobe(&c.rp);
	cr_log_info("%ld throws: nmissed %d %d %d", n, t.rp.nmissed, m.rp.nmissed, c.rp.nmissed);
	cr_expect_eq(bad, 0, "%ld calls came back wrong", bad);
	cr_expect_eq(kru_dtors(), (unsigned long)n + 100, "%lu destructors ran", kru_dtors());
	/* The unwound frames ran no return handler; the catcher's frame,
	 * which stayed, kept its return probe. */
	cr_expect_eq(atomic_load(&t.returns), 100, "a_thrower: %lu return handlers",
		     atomic_load(&t.returns));
	cr_expect_eq(atomic_load(&m.returns), 100, "b_middle: %lu return handlers",
		     atomic_load(&m.returns));
	cr_expect_eq(atomic_load(&c.returns), (unsigned long)n + 100,
		     "c_catcher: %lu return handlers", atomic_load(&c.returns));
	cr_expect_eq(atomic_load(&t.entries), (unsigned long)n + 100);
	cr_expect_eq(t.rp.nmissed, 0, "a_thrower: nmissed %d", t.rp.nmissed);
	cr_expect_eq(m.rp.nmissed, 0, "b_middle: nmissed %d", m.rp.nmissed);
	cr_expect_eq(c.rp.nmissed, 0, "c_catcher: nmissed %d", c.rp.nmissed);
}

/* The instance of a frame that was unwound is free at once: another thread
 * gets it (maxactive 1) before this one calls anything again. */
static void *call_once_returning(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)catcher(-5);
}

Test(kretprobes_unwind, unwound_frame_gives_instance_back_at_once, .timeout = 30)
{
	struct probe t;
	pthread_t th;
	void *r;

	probe_reg(&t, "a_thrower", 1);
	cr_expect_eq(catcher(7), 1007);
	cr_assert_eq(pthread_create(&th, NULL, call_once_returning, NULL), 0);
	pthread_join(th, &r);
	unregister_kretprobe(&t.rp);
	cr_expect_eq((long)(intptr_t)r, 6);
	cr_expect_eq(atomic_load(&t.returns), 1, "the other thread's call was not seen");
	cr_expect_eq(t.rp.nmissed, 0, "nmissed %d: the unwound frame kept its instance",
		     t.rp.nmissed);
}

/* Several threads throwing at once, a kretprobed frame between each throw
 * and its catch. */
static void *throw_a_lot(void *arg)
{
	long bad = 0;

	(void)arg;
	for (long i = 0; i < 5000; i++)
		bad += catcher(i) != 1000 + i;
	return (void *)(intptr_t)bad;
}

Test(kretprobes_unwind, threads_throwing, .timeout = 60)
{
	struct probe t, m;
	pthread_t th[4];
	long bad = 0;

	probe_reg(&t, "a_thrower", 8);
	probe_reg(&m, "b_middle", 8);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, throw_a_lot, NULL), 0);
	for (int i = 0; i < 4; i++) {
		void *r;

		pthread_join(th[i], &r);
		bad += (long)(intptr_t)r;
	}
	unregister_kretprobe(&t.rp);
	unregister_kretprobe(&m.rp);
	cr_expect_eq(bad, 0);
	cr_expect_eq(kru_dtors(), 4ul * 5000);
	cr_expect_eq(t.rp.nmissed + m.rp.nmissed, 0, "nmissed %d + %d", t.rp.nmissed,
		     m.rp.nmissed);
}

/* ---------------------------------------------------------------------- */
/* pthread_cancel, pthread_exit                                            */
/* ---------------------------------------------------------------------- */

Test(kretprobes_unwind, pthread_cancel_inside_kretprobed_frames, .timeout = 120)
{
	enum { BATCH = 10, ROUNDS = 10 };
	/* As many instances as threads parked at once: each round's must all
	 * come back for the next round to miss nothing. */
	struct probe in, out;

	probe_reg(&in, "d_inner", BATCH);
	probe_reg(&out, "e_outer", BATCH);
	for (int r = 0; r < ROUNDS; r++) {
		pthread_t th[BATCH];

		kru_unpark();
		for (int i = 0; i < BATCH; i++)
			cr_assert_eq(pthread_create(&th[i], NULL, kru_cancel_me, NULL), 0);
		while (kru_parked() < BATCH)
			usleep(1000);
		for (int i = 0; i < BATCH; i++)
			pthread_cancel(th[i]);
		for (int i = 0; i < BATCH; i++) {
			void *res;

			pthread_join(th[i], &res);
			cr_expect_eq(res, PTHREAD_CANCELED);
		}
	}
	unregister_kretprobe(&in.rp);
	unregister_kretprobe(&out.rp);
	cr_expect_eq(kru_dtors(), 3ul * BATCH * ROUNDS, "%lu of %d destructors ran",
		     kru_dtors(), 3 * BATCH * ROUNDS);
	cr_expect_eq(atomic_load(&in.returns) + atomic_load(&out.returns), 0);
	cr_expect_eq(atomic_load(&in.entries), (unsigned long)BATCH * ROUNDS);
	/* Every instance came back: the kretprobes still work. */
	cr_expect_eq(in.rp.nmissed + out.rp.nmissed, 0, "nmissed %d + %d", in.rp.nmissed,
		     out.rp.nmissed);
}

Test(kretprobes_unwind, pthread_exit_inside_kretprobed_frame, .timeout = 60)
{
	struct probe p;

	probe_reg(&p, "f_exits", 2);
	for (long i = 1; i <= 50; i++) {
		pthread_t th;
		void *res;

		cr_assert_eq(pthread_create(&th, NULL, kru_exit_me, (void *)(intptr_t)i), 0);
		pthread_join(th, &res);
		cr_expect_eq((long)(intptr_t)res, i);
	}
	unregister_kretprobe(&p.rp);
	cr_expect_eq(kru_dtors(), 100, "%lu of 100 destructors ran", kru_dtors());
	cr_expect_eq(atomic_load(&p.returns), 0);
	cr_expect_eq(p.rp.nmissed, 0, "nmissed %d", p.rp.nmissed);
}

/* ---------------------------------------------------------------------- */
/* Stack walks                                                             */
/* ---------------------------------------------------------------------- */

typedef int (*walker_t)(void **ips, int max);

static int walk_backtrace(void **ips, int max)
{
	return backtrace(ips, max);
}

struct ub_state {
	void **ips;
	int n, max;
};

static _Unwind_Reason_Code ub_one(struct _Unwind_Context *ctx, void *arg)
{
	struct ub_state *s = arg;

	if (s->n == s->max)
		return _URC_END_OF_STACK;
	s->ips[s->n++] = (void *)_Unwind_GetIP(ctx);
	return _URC_NO_REASON;
}

static int walk_unwind_backtrace(void **ips, int max)
{
	struct ub_state s = { ips, 0, max };

	_Unwind_Backtrace(ub_one, &s);
	return s.n;
}

/* libunwind (libunwind8), through dlopen: its types are opaque here. */
static int walk_libunwind(void **ips, int max)
{
	static void *lib;
	typedef int (*getcontext_t)(void *);
	typedef int (*init_t)(void *, void *);
	typedef int (*step_t)(void *);
	typedef int (*get_reg_t)(void *, int, unsigned long *);
	static _Thread_local char ctx[4096] __attribute__((aligned(16)));
	static _Thread_local char cursor[4096] __attribute__((aligned(16)));
	getcontext_t getctx;
	init_t init;
	step_t step;
	get_reg_t get_reg;
	int n = 0;

	if (!lib)
		lib = dlopen("libunwind.so.8", RTLD_NOW);
	if (!lib)
		return -1;
	getctx = (getcontext_t)dlsym(lib, SCN_UNW_GETCONTEXT);
	init = (init_t)dlsym(lib, SCN_UNW_INIT_LOCAL);
	step = (step_t)dlsym(lib, SCN_UNW_STEP);
	get_reg = (get_reg_t)dlsym(lib, SCN_UNW_GET_REG);
	if (!getctx || !init || !step || !get_reg || getctx(ctx) || init(cursor, ctx))
		return -1;
	do {
		unsigned long ip;

		if (get_reg(cursor, SCN_UNW_REG_IP, &ip) || n == max)
			break;
		ips[n++] = (void *)ip;
	} while (step(cursor) > 0);
	return n;
}

static walker_t cur_walker;
static void *walked[64];
static int nwalked;

SCN_NOINLINE long g_walk(long x)
{
	nwalked = cur_walker(walked, 64);
	return x + 1;
}

SCN_NOINLINE long h_mid(long x)
{
	long (*volatile f)(long) = g_walk;

	return f(x) + 1;
}

SCN_NOINLINE long k_top(long x)
{
	long (*volatile f)(long) = h_mid;

	return f(x) + 1;
}

static long (*volatile top)(long) = k_top;

/* One call site for both walks: the frames from here down are the same. */
SCN_NOINLINE long q_call_top(void)
{
	return top(1);
}

/* In no loaded object: ukprobes' return trampoline (its stubs are made at
 * run time). */
static bool in_no_object(void *ip)
{
	Dl_info info;

	return !dladdr(ip, &info) || !info.dli_fname;
}

/* The frames @ips[0..n), one a line, appended to @buf. */
static void describe(char *buf, size_t cap, void **ips, int n)
{
	for (int i = 0; i < n; i++) {
		size_t l = strlen(buf);
		Dl_info info;

		if (dladdr(ips[i], &info) && info.dli_sname)
			snprintf(buf + l, cap - l, "  %p %s+%#lx\n", ips[i], info.dli_sname,
				 (unsigned long)((char *)ips[i] - (char *)info.dli_saddr));
		else
			snprintf(buf + l, cap - l, "  %p %s\n", ips[i],
				 in_no_object(ips[i]) ? "(no object)" : "?");
	}
}

/*
 * The frames seen inside g_walk, called k_top -> h_mid -> g_walk, with
 * kretprobes on all three and without: the same, but for one frame of the
 * trampoline per kretprobe (in no object) right after each probed frame.
 */
static void same_callers_as_without_probes(walker_t w, const char *what)
{
	struct probe g, h, k;
	void *plain[64], *probed[64];
	int nplain, nprobed, tramps = 0, j = 0;
	static char msg[16384];

	cur_walker = w;
	cr_assert_eq(q_call_top(), 4);
	memcpy(plain, walked, sizeof(plain));
	/* Compared up to q_call_top's frame: its caller's differ. */
	for (nplain = 0; nplain < nwalked; nplain++) {
		Dl_info info;

		if (dladdr(plain[nplain], &info) && info.dli_sname &&
		    !strcmp(info.dli_sname, "q_call_top")) {
			nplain++;
			break;
		}
	}
	msg[0] = 0;
	describe(msg, sizeof(msg), plain, nwalked);
	cr_assert(nplain > 4 && nplain < nwalked, "%s: no q_call_top in\n%s", what, msg);
	probe_reg(&g, "g_walk", 4);
	probe_reg(&h, "h_mid", 4);
	probe_reg(&k, "k_top", 4);
	cr_assert_eq(q_call_top(), 4);
	nprobed = nwalked;
	memcpy(probed, walked, sizeof(probed));
	unregister_kretprobe(&g.rp);
	unregister_kretprobe(&h.rp);
	unregister_kretprobe(&k.rp);
	cr_expect_eq(atomic_load(&g.returns) + atomic_load(&h.returns) +
		     atomic_load(&k.returns), 3);

	snprintf(msg, sizeof(msg), "%s: without probes (to q_call_top)\n", what);
	describe(msg, sizeof(msg), plain, nplain);
	snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg),
		 "with kretprobes on g_walk, h_mid, k_top\n");
	describe(msg, sizeof(msg), probed, nprobed);
	for (int i = 0; i < nprobed && j < nplain; i++) {
		if (in_no_object(probed[i])) {
			tramps++;
			continue;
		}
		if (probed[i] != plain[j])
			break;
		j++;
	}
	cr_expect_eq(j, nplain, "%s", msg);
	cr_expect_eq(tramps, 3, "%d trampoline frames\n%s", tramps, msg);
}

Test(kretprobes_unwind, backtrace_shows_the_callers, .timeout = 30)
{
	same_callers_as_without_probes(walk_backtrace, "backtrace()");
}

Test(kretprobes_unwind, unwind_backtrace_shows_the_callers, .timeout = 30)
{
	same_callers_as_without_probes(walk_unwind_backtrace, "_Unwind_Backtrace()");
}

Test(kretprobes_unwind, libunwind_shows_the_callers, .timeout = 30)
{
	void *ips[4];

	if (walk_libunwind(ips, 4) < 0)
		cr_skip_test("libunwind.so.8 is not installed");
	same_callers_as_without_probes(walk_libunwind, "libunwind");
}

/* A return handler's own backtrace(): through the trampoline it runs in. */
static void *in_handler[64];
static int nin_handler;

static int walk_in_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	(void)ri;
	(void)regs;
	nin_handler = backtrace(in_handler, 64);
	return 0;
}

Test(kretprobes_unwind, backtrace_in_return_handler_reaches_the_callers, .timeout = 30)
{
	struct kretprobe rp = { .kp.symbol_name = "g_walk", .handler = walk_in_ret };
	bool found_mid = false, found_top = false;
	static char msg[8192];

	cur_walker = walk_backtrace;
	cr_assert_eq(register_kretprobe(&rp), 0);
	cr_assert_eq(top(1), 4);
	unregister_kretprobe(&rp);
	/* g_walk has returned: its caller h_mid, then k_top, are on the
	 * stack below the trampoline. */
	for (int i = 0; i < nin_handler; i++) {
		Dl_info info;

		if (!dladdr(in_handler[i], &info) || !info.dli_sname)
			continue;
		found_mid |= !strcmp(info.dli_sname, "h_mid");
		found_top |= found_mid && !strcmp(info.dli_sname, "k_top");
	}
	describe(msg, sizeof(msg), in_handler, nin_handler);
	cr_expect(found_mid && found_top, "backtrace() in the return handler:\n%s", msg);
}

/* ---------------------------------------------------------------------- */
/* gdb                                                                     */
/* ---------------------------------------------------------------------- */

static volatile int *gdb_flag;

SCN_NOINLINE long m_park(long x)
{
	*gdb_flag = 1;
	while (*gdb_flag == 1)
		usleep(1000);
	return x + 1;
}

SCN_NOINLINE long n_probed(long x)
{
	long (*volatile f)(long) = m_park;

	return f(x) + 1;
}

SCN_NOINLINE long p_caller(long x)
{
	long (*volatile f)(long) = n_probed;

	return f(x) + 1;
}

/* The child: p_caller -> n_probed -> m_park, parked, both callers
 * kretprobed.  Exits 0 when the calls came back right. */
static void gdb_child(void)
{
	struct probe n, pc;

	probe_reg(&n, "n_probed", 4);
	probe_reg(&pc, "p_caller", 4);
	_exit(p_caller(1) == 4 && atomic_load(&n.returns) == 1 ? 0 : 1);
}

/* @names found in @s one after the other: where the last ends, or NULL
 * when one is missing. */
static const char *find_in_order(const char *s, const char *const *names)
{
	for (; *names; names++) {
		s = strstr(s, *names);
		if (!s)
			return NULL;
		s += strlen(*names);
	}
	return s;
}

Test(kretprobes_unwind, gdb_bt_shows_the_callers, .timeout = 120)
{
	static const char *const frames[] = { " m_park ", " n_probed ", " p_caller ",
					      "gdb_bt_shows_the_callers", NULL };
	static char out[65536];
	char cmd[256];
	size_t len = 0, got;
	pid_t pid;
	FILE *f;
	int status;

	if (system("gdb --version >/dev/null 2>&1"))
		cr_skip_test("gdb is not installed");
	gdb_flag = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq((void *)gdb_flag, MAP_FAILED);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (!pid)
		gdb_child();
	while (*gdb_flag != 1)
		usleep(1000);
	snprintf(cmd, sizeof(cmd), "gdb -nx -batch -p %d -ex 'set pagination off' -ex bt 2>&1",
		 (int)pid);
	f = popen(cmd, "r");
	cr_assert(f);
	while (len < sizeof(out) - 1 && (got = fread(out + len, 1, sizeof(out) - 1 - len, f)))
		len += got;
	out[len] = 0;
	pclose(f);
	*gdb_flag = 2;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child: status %#x", status);
	/* m_park, n_probed, p_caller, then the test function that called
	 * p_caller, in this order. */
	cr_expect(find_in_order(out, frames), "gdb's bt:\n%s", out);
}
