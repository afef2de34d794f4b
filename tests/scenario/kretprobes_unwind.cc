// SPDX-License-Identifier: MIT
/*
 * kretprobes_unwind.cc - what reads return addresses, through kretprobed
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
 *
 * Handlers never assert: they count, the tests check the counts.
 */
#include "../support/ukp_test.h"
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <unwind.h>

#include <atomic>
#include <string>
#include <vector>

#include <ukprobes.h>

#define NOINLINE __attribute__((noinline, noclone, used))

static std::atomic<unsigned long> dtors;

struct Guard {
	~Guard() { dtors++; }
};

struct Boom {
	long v;
};

/* A kretprobe that counts its entries and returns. */
struct probe {
	struct kretprobe rp;	/* first: get_kretprobe(ri) is the probe */
	std::atomic<unsigned long> entries{ 0 }, returns{ 0 };

	probe(const char *sym, int maxactive)
	{
		memset(&rp, 0, sizeof(rp));
		rp.kp.symbol_name = sym;
		rp.handler = on_ret;
		rp.entry_handler = on_entry;
		rp.maxactive = maxactive;
	}
	static int on_entry(struct kretprobe_instance *ri, struct pt_regs *)
	{
		((probe *)get_kretprobe(ri))->entries++;
		return 0;
	}
	static int on_ret(struct kretprobe_instance *ri, struct pt_regs *)
	{
		((probe *)get_kretprobe(ri))->returns++;
		return 0;
	}
	void reg() { cr_assert_eq(register_kretprobe(&rp), 0, "register %s", rp.kp.symbol_name); }
	void unreg() { unregister_kretprobe(&rp); }
};

/* ---------------------------------------------------------------------- */
/* Exceptions                                                              */
/* ---------------------------------------------------------------------- */

extern "C" NOINLINE long a_thrower(long x)
{
	if (x >= 0)
		throw Boom{ x };
	return -x;
}

extern "C" NOINLINE long b_middle(long x)
{
	Guard g;
	long (*volatile f)(long) = a_thrower;

	return f(x) + 1;
}

extern "C" NOINLINE long c_catcher(long x)
{
	long (*volatile f)(long) = b_middle;

	try {
		return f(x);
	} catch (const Boom &b) {
		return 1000 + b.v;
	}
}

static long (*volatile catcher)(long) = c_catcher;

Test(kretprobes_unwind, exception_through_kretprobed_frames, .timeout = 60)
{
	probe t("a_thrower", 4), m("b_middle", 4), c("c_catcher", 4);
	const long n = 10000;
	long bad = 0;

	t.reg();
	m.reg();
	c.reg();
	for (long i = 0; i < n; i++)
		bad += catcher(i) != 1000 + i;
	/* Frames that return still get their return handlers. */
	for (long i = 1; i <= 100; i++)
		bad += catcher(-i) != i + 1;
	cr_expect_eq(bad, 0, "%ld calls came back wrong", bad);
	cr_expect_eq(dtors.load(), (unsigned long)n + 100, "%lu destructors ran", dtors.load());
	/* The unwound frames ran no return handler; the catcher's frame,
	 * which stayed, kept its return probe. */
	cr_expect_eq(t.returns.load(), 100ul, "a_thrower: %lu return handlers", t.returns.load());
	cr_expect_eq(m.returns.load(), 100ul, "b_middle: %lu return handlers", m.returns.load());
	cr_expect_eq(c.returns.load(), (unsigned long)n + 100, "c_catcher: %lu return handlers",
		     c.returns.load());
	cr_expect_eq(t.entries.load(), (unsigned long)n + 100);
	cr_expect_eq(t.rp.nmissed, 0, "a_thrower: nmissed %d", t.rp.nmissed);
	cr_expect_eq(m.rp.nmissed, 0, "b_middle: nmissed %d", m.rp.nmissed);
	cr_expect_eq(c.rp.nmissed, 0, "c_catcher: nmissed %d", c.rp.nmissed);
	t.unreg();
	m.unreg();
	c.unreg();
}

/* The instance of a frame that was unwound is free at once: another thread
 * gets it (maxactive 1) before this one calls anything again. */
static void *call_once_returning(void *)
{
	return (void *)(intptr_t)catcher(-5);
}

Test(kretprobes_unwind, unwound_frame_gives_instance_back_at_once, .timeout = 30)
{
	probe t("a_thrower", 1);
	pthread_t th;
	void *r;

	t.reg();
	cr_expect_eq(catcher(7), 1007);
	cr_assert_eq(pthread_create(&th, NULL, call_once_returning, NULL), 0);
	pthread_join(th, &r);
	cr_expect_eq((long)(intptr_t)r, 6);
	cr_expect_eq(t.returns.load(), 1ul, "the other thread's call was not seen");
	cr_expect_eq(t.rp.nmissed, 0, "nmissed %d: the unwound frame kept its instance",
		     t.rp.nmissed);
	t.unreg();
}

/* Several threads throwing at once, a kretprobed frame between each throw
 * and its catch. */
static void *throw_a_lot(void *)
{
	long bad = 0;

	for (long i = 0; i < 5000; i++)
		bad += catcher(i) != 1000 + i;
	return (void *)(intptr_t)bad;
}

Test(kretprobes_unwind, threads_throwing, .timeout = 60)
{
	probe t("a_thrower", 8), m("b_middle", 8);
	pthread_t th[4];
	long bad = 0;

	t.reg();
	m.reg();
	for (auto &x : th)
		cr_assert_eq(pthread_create(&x, NULL, throw_a_lot, NULL), 0);
	for (auto &x : th) {
		void *r;

		pthread_join(x, &r);
		bad += (long)(intptr_t)r;
	}
	cr_expect_eq(bad, 0);
	cr_expect_eq(dtors.load(), 4ul * 5000);
	cr_expect_eq(t.rp.nmissed + m.rp.nmissed, 0, "nmissed %d + %d", t.rp.nmissed,
		     m.rp.nmissed);
	t.unreg();
	m.unreg();
}

/* ---------------------------------------------------------------------- */
/* pthread_cancel, pthread_exit                                            */
/* ---------------------------------------------------------------------- */

static std::atomic<int> parked;

extern "C" NOINLINE long d_inner(long x)
{
	Guard g;

	parked++;
	for (;;)
		pause();	/* a cancellation point */
	return x;
}

extern "C" NOINLINE long e_outer(long x)
{
	Guard g;
	long (*volatile f)(long) = d_inner;

	return f(x) + 1;
}

static void *cancel_me(void *)
{
	Guard g;
	long (*volatile f)(long) = e_outer;

	f(1);
	return NULL;
}

Test(kretprobes_unwind, pthread_cancel_inside_kretprobed_frames, .timeout = 120)
{
	const int batch = 10, rounds = 10;
	/* As many instances as threads parked at once: each round's must all
	 * come back for the next round to miss nothing. */
	probe in("d_inner", batch), out("e_outer", batch);

	in.reg();
	out.reg();
	for (int r = 0; r < rounds; r++) {
		pthread_t th[batch];

		parked = 0;
		for (auto &x : th)
			cr_assert_eq(pthread_create(&x, NULL, cancel_me, NULL), 0);
		while (parked.load() < batch)
			usleep(1000);
		for (auto &x : th)
			pthread_cancel(x);
		for (auto &x : th) {
			void *res;

			pthread_join(x, &res);
			cr_expect_eq(res, PTHREAD_CANCELED);
		}
	}
	cr_expect_eq(dtors.load(), 3ul * batch * rounds, "%lu of %d destructors ran",
		     dtors.load(), 3 * batch * rounds);
	cr_expect_eq(in.returns.load() + out.returns.load(), 0ul);
	cr_expect_eq(in.entries.load(), (unsigned long)batch * rounds);
	/* Every instance came back: the kretprobes still work. */
	cr_expect_eq(in.rp.nmissed + out.rp.nmissed, 0);
	in.unreg();
	out.unreg();
}

extern "C" NOINLINE long f_exits(long x)
{
	Guard g;

	if (x)
		pthread_exit((void *)(intptr_t)x);
	return 0;
}

static void *exit_me(void *arg)
{
	Guard g;
	long (*volatile f)(long) = f_exits;

	f((long)(intptr_t)arg);
	return NULL;
}

Test(kretprobes_unwind, pthread_exit_inside_kretprobed_frame, .timeout = 60)
{
	probe p("f_exits", 2);

	p.reg();
	for (long i = 1; i <= 50; i++) {
		pthread_t th;
		void *res;

		cr_assert_eq(pthread_create(&th, NULL, exit_me, (void *)(intptr_t)i), 0);
		pthread_join(th, &res);
		cr_expect_eq((long)(intptr_t)res, i);
	}
	cr_expect_eq(dtors.load(), 100ul, "%lu of 100 destructors ran", dtors.load());
	cr_expect_eq(p.returns.load(), 0ul);
	cr_expect_eq(p.rp.nmissed, 0);
	p.unreg();
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
	struct ub_state *s = (struct ub_state *)arg;

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
	static void *lib = dlopen("libunwind.so.8", RTLD_NOW);
	typedef int (*getcontext_t)(void *);
	typedef int (*init_t)(void *, void *);
	typedef int (*step_t)(void *);
	typedef int (*get_reg_t)(void *, int, unsigned long *);
	alignas(16) static thread_local char ctx[4096], cursor[4096];
	int n = 0;

	if (!lib)
		return -1;
	getcontext_t getctx = (getcontext_t)dlsym(lib, "_Ux86_64_getcontext");
	init_t init = (init_t)dlsym(lib, "_ULx86_64_init_local");
	step_t step = (step_t)dlsym(lib, "_ULx86_64_step");
	get_reg_t get_reg = (get_reg_t)dlsym(lib, "_ULx86_64_get_reg");
	if (!getctx || !init || !step || !get_reg || getctx(ctx) || init(cursor, ctx))
		return -1;
	do {
		unsigned long ip;

		if (get_reg(cursor, 16 /* UNW_REG_IP */, &ip) || n == max)
			break;
		ips[n++] = (void *)ip;
	} while (step(cursor) > 0);
	return n;
}

static walker_t cur_walker;
static void *walked[64];
static int nwalked;

extern "C" NOINLINE long g_walk(long x)
{
	nwalked = cur_walker(walked, 64);
	return x + 1;
}

extern "C" NOINLINE long h_mid(long x)
{
	long (*volatile f)(long) = g_walk;

	return f(x) + 1;
}

extern "C" NOINLINE long k_top(long x)
{
	long (*volatile f)(long) = h_mid;

	return f(x) + 1;
}

static long (*volatile top)(long) = k_top;

/* One call site for both walks: the frames from here down are the same. */
extern "C" NOINLINE long q_call_top(void)
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

static std::string describe(void **ips, int n)
{
	std::string s;

	for (int i = 0; i < n; i++) {
		Dl_info info;
		char buf[160];

		if (dladdr(ips[i], &info) && info.dli_sname)
			snprintf(buf, sizeof(buf), "  %p %s+%#lx\n", ips[i], info.dli_sname,
				 (unsigned long)((char *)ips[i] - (char *)info.dli_saddr));
		else
			snprintf(buf, sizeof(buf), "  %p %s\n", ips[i],
				 in_no_object(ips[i]) ? "(no object)" : "?");
		s += buf;
	}
	return s;
}

/*
 * The frames seen inside g_walk, called k_top -> h_mid -> g_walk, with
 * kretprobes on all three and without: the same, but for one frame of the
 * trampoline per kretprobe (in no object) right after each probed frame.
 */
static void same_callers_as_without_probes(walker_t w, const char *what)
{
	probe g("g_walk", 4), h("h_mid", 4), k("k_top", 4);
	void *plain[64], *probed[64];
	int nplain, nprobed, tramps = 0, j = 0;

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
	cr_assert(nplain > 4 && nplain < nwalked, "%s: no q_call_top in\n%s", what,
		  describe(plain, nwalked).c_str());
	g.reg();
	h.reg();
	k.reg();
	cr_assert_eq(q_call_top(), 4);
	nprobed = nwalked;
	memcpy(probed, walked, sizeof(probed));
	g.unreg();
	h.unreg();
	k.unreg();
	cr_expect_eq(g.returns.load() + h.returns.load() + k.returns.load(), 3ul);

	std::string msg = std::string(what) + ": without probes (to q_call_top)\n" +
			  describe(plain, nplain) +
			  "with kretprobes on g_walk, h_mid, k_top\n" + describe(probed, nprobed);
	for (int i = 0; i < nprobed && j < nplain; i++) {
		if (in_no_object(probed[i])) {
			tramps++;
			continue;
		}
		if (probed[i] != plain[j])
			break;
		j++;
	}
	cr_expect_eq(j, nplain, "%s", msg.c_str());
	cr_expect_eq(tramps, 3, "%d trampoline frames\n%s", tramps, msg.c_str());
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
	nin_handler = backtrace(in_handler, 64);
	return 0;
}

Test(kretprobes_unwind, backtrace_in_return_handler_reaches_the_callers, .timeout = 30)
{
	struct kretprobe rp;
	bool found_mid = false, found_top = false;

	memset(&rp, 0, sizeof(rp));
	rp.kp.symbol_name = "g_walk";
	rp.handler = walk_in_ret;
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
	cr_expect(found_mid && found_top, "backtrace() in the return handler:\n%s",
		  describe(in_handler, nin_handler).c_str());
}

/* ---------------------------------------------------------------------- */
/* gdb                                                                     */
/* ---------------------------------------------------------------------- */

static volatile int *gdb_flag;

extern "C" NOINLINE long m_park(long x)
{
	*gdb_flag = 1;
	while (*gdb_flag == 1)
		usleep(1000);
	return x + 1;
}

extern "C" NOINLINE long n_probed(long x)
{
	long (*volatile f)(long) = m_park;

	return f(x) + 1;
}

extern "C" NOINLINE long p_caller(long x)
{
	long (*volatile f)(long) = n_probed;

	return f(x) + 1;
}

Test(kretprobes_unwind, gdb_bt_shows_the_callers, .timeout = 120)
{
	char cmd[256], line[512];
	std::string out;
	pid_t pid;
	FILE *f;
	int status;

	if (system("gdb --version >/dev/null 2>&1"))
		cr_skip_test("gdb is not installed");
	gdb_flag = (volatile int *)mmap(NULL, 4096, PROT_READ | PROT_WRITE,
					MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq((void *)gdb_flag, MAP_FAILED);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (!pid) {
		probe n("n_probed", 4), pc("p_caller", 4);

		n.reg();
		pc.reg();
		_exit(p_caller(1) == 4 ? 0 : 1);
	}
	while (*gdb_flag != 1)
		usleep(1000);
	snprintf(cmd, sizeof(cmd), "gdb -nx -batch -p %d -ex 'set pagination off' -ex bt 2>&1",
		 (int)pid);
	f = popen(cmd, "r");
	cr_assert(f);
	while (fgets(line, sizeof(line), f))
		out += line;
	pclose(f);
	*gdb_flag = 2;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child: status %#x", status);
	/* m_park, n_probed, p_caller, then the test function that called
	 * p_caller, in this order. */
	size_t a = out.find(" m_park "), b = out.find(" n_probed ", a == std::string::npos ? 0 : a),
	       c = out.find(" p_caller ", b == std::string::npos ? 0 : b),
	       d = out.find("gdb_bt_shows_the_callers", c == std::string::npos ? 0 : c);
	cr_expect(a != std::string::npos && b != std::string::npos && c != std::string::npos &&
		  d != std::string::npos, "gdb's bt:\n%s", out.c_str());
}
