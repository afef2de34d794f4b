// SPDX-License-Identifier: MIT
/*
 * optprobes.c - jump optimization (kernel/kprobes.c's optimizer).
 *
 * A probe is registered as a breakpoint; a background thread later replaces
 * the instructions under it with a jump to a detour buffer that calls the
 * pre handlers and runs the relocated instructions: no signal per hit.
 *
 * States of a point's optimization (pt->opt):
 *   none      a breakpoint probe
 *   PREPARED  detour built; a breakpoint hit resumes in the detour's copy,
 *             so no thread newly enters the region past its first byte
 *   OPTIMIZED the jump is in place
 * Going to OPTIMIZED needs proof that no thread is inside the region (or in
 * the probe's step slot, which jumps back into it): a grace period for the
 * trap handlers in flight, then ukp_threads_outside().  A region of one
 * instruction needs no proof.  Any change to a point (probe added, removed,
 * enabled, disabled, the switches) unoptimizes it at once and queues it
 * again.
 *
 * The detour path has its own grace period, cheaper than the trap path's
 * shared counters: each thread owns a record with a nesting count that only
 * it writes (plain stores, no atomics on the hit path), and a writer reads
 * them all after membarrier(), the asymmetric fence of liburcu's "memb"
 * flavour.  The short way into a handler (detour prologue, the common entry,
 * the callback before it counts itself) is covered by proving no thread
 * executes there.
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "arch.h"
#include "symbols.h"
#include "trap.h"
#include "optprobes.h"

enum { UKP_OPT_PREPARED = 1, UKP_OPT_OPTIMIZED = 2 };

struct ukp_opt {
	struct arch_optinsn aop;
	atomic_int state;
	struct ukp_point *pt;		/* whose detour this is */
	bool free_point;		/* retired, and pt was removed meanwhile */
	struct ukp_opt *retired_next;
};

/* NOTE: everything below is protected by ukp_kprobe_mutex. */
static int ukp_optimization_on = 1;
static struct ukp_point **ukp_opt_queue;
static size_t ukp_opt_nqueue, ukp_opt_capqueue;
static struct ukp_opt *ukp_opt_retired;
static bool ukp_optimizer_running;
static pthread_cond_t ukp_opt_cond = PTHREAD_COND_INITIALIZER;

/* ------------------------------------------------------------------------ */
/* The detour path's grace period                                            */
/* ------------------------------------------------------------------------ */

/* The records and the callback live in opt_callback_gpr.c. */
extern const char __start_ukp_opt_text[] __attribute__((weak, visibility("hidden")));
extern const char __stop_ukp_opt_text[] __attribute__((weak, visibility("hidden")));

struct ukp_ranges {
	size_t n, cap;
	uintptr_t (*r)[2];
};

/* False when out of memory: the caller must not act on an incomplete set. */
static bool ukp_ranges_add(struct ukp_ranges *rs, uintptr_t start, uintptr_t end)
{
	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? 2 * rs->cap : 16;
		void *nr = realloc(rs->r, cap * sizeof(*rs->r));

		if (!nr)
			return false;
		rs->r = nr;
		rs->cap = cap;
	}
	rs->r[rs->n][0] = start;
	rs->r[rs->n][1] = end;
	rs->n++;
	return true;
}

static bool ukp_in_ranges(uintptr_t ip, void *arg)
{
	struct ukp_ranges *rs = arg;

	for (size_t i = 0; i < rs->n; i++)
		if (ip >= rs->r[i][0] && ip < rs->r[i][1])
			return true;
	return false;
}

/*
 * The rule of grace.h for detours: after the readers (a handler called from
 * a detour returns into it), no thread may be in a detour of @rs, on the
 * common way in, or in the callback before it counts itself.  False when
 * that could not be proven in time (the detours then stay retired).
 */
static bool ukp_opt_synchronize(struct ukp_ranges *rs)
{
	uintptr_t s, e;

	arch_opt_entry_range(&s, &e);
	if (!ukp_ranges_add(rs, s, e))
		return false;
	if (__start_ukp_opt_text &&
	    !ukp_ranges_add(rs, (uintptr_t)__start_ukp_opt_text,
			    (uintptr_t)__stop_ukp_opt_text))
		return false;
	/* Step 2: the records and the trap path (which can resume in a
	 * detour). */
	ukp_qs_synchronize();
	/* Step 3. */
	return ukp_threads_outside(ukp_in_ranges, rs, 20000, UKP_OUTSIDE_QS_READERS);
}

/** ukp_opt_env_default() - UKPROBES_OPTIMIZATION=0 in the environment
 * starts with the switch off (the sysctl's boot-time value). */
void ukp_opt_env_default(void)
{
	static bool read;
	const char *v;

	if (read)
		return;
	read = true;
	v = getenv("UKPROBES_OPTIMIZATION");
	if (v && *v == '0')
		ukp_optimization_on = 0;
}

/* ------------------------------------------------------------------------ */
/* Unoptimizing                                                              */
/* ------------------------------------------------------------------------ */

static void ukp_point_set_optflags(struct ukp_point *pt, bool optimized, bool ftrace)
{
	ukp_for_each_probe(p, pt) {
		unsigned int f = optimized ? KPROBE_FLAG_OPTIMIZED : 0;

		if (optimized && ftrace)
			f |= KPROBE_FLAG_FTRACE;
		__atomic_fetch_and(&p->flags, ~(KPROBE_FLAG_OPTIMIZED | KPROBE_FLAG_FTRACE),
				   __ATOMIC_RELAXED);
		__atomic_fetch_or(&p->flags, f, __ATOMIC_RELAXED);
	}
}

/*
 * How many points with a detour (prepared or optimized) start in each page,
 * by a hash of the page (collisions only cost a search that finds
 * nothing): registering 10,000 probes then asks the point table about
 * UKP_ARCH_MAX_REGION bytes before each only where a region may be.
 * The buckets are 4 KiB of code whatever the page size: only a grain.
 * ukp_kprobe_mutex.
 */
#define OPT_PAGE_BUCKETS 4096u
static atomic_uint ukp_opt_in_page[OPT_PAGE_BUCKETS];

static atomic_uint *ukp_opt_page_count(uintptr_t addr)
{
	return &ukp_opt_in_page[(addr >> 12) % OPT_PAGE_BUCKETS];
}

/*
 * Could a region with a detour cover @addr?  Lock-free: the trap path
 * asks before every resume.  A count goes up before its detour is
 * published and the optimizer's grace period comes after, so a read
 * section that may see a region sees its count too (grace.h).
 */
static bool ukp_opt_maybe_covered(uintptr_t addr)
{
	return atomic_load_explicit(ukp_opt_page_count(addr), memory_order_relaxed) ||
	       atomic_load_explicit(ukp_opt_page_count(addr - (UKP_ARCH_MAX_REGION - 1)),
				    memory_order_relaxed);
}
NOKPROBE_SYMBOL(ukp_opt_maybe_covered);

/* @pt gets its detour @op, or loses it (@op NULL). */
static void ukp_opt_attach(struct ukp_point *pt, struct ukp_opt *op)
{
	if (op)
		atomic_fetch_add(ukp_opt_page_count(pt->addr), 1);
	else if (atomic_load(&pt->opt))
		atomic_fetch_sub(ukp_opt_page_count(pt->addr), 1);
	atomic_store_explicit(&pt->opt, op, memory_order_release);
}

/**
 * ukp_unoptimize() - put @pt back to a plain breakpoint probe now.  The
 * detour is retired: freed by ukp_opt_reclaim() once no thread can use it.
 * Returns true if code changed.
 */
bool ukp_unoptimize(struct ukp_point *pt)
{
	struct ukp_opt *op = atomic_load(&pt->opt);
	bool changed = false;

	if (!op)
		return false;
	if (atomic_load(&op->state) == UKP_OPT_OPTIMIZED) {
		/* int3 back in byte 0 first, then the rest: a thread racing
		 * through sees a whole jmp or a breakpoint. */
		arch_unoptimize_stage1(pt, &op->aop);
		ukp_sync_cores();
		arch_unoptimize_stage2(pt, &op->aop);
		changed = true;
	}
	ukp_opt_attach(pt, NULL);
	ukp_point_set_optflags(pt, false, false);
	op->retired_next = ukp_opt_retired;
	ukp_opt_retired = op;
	return changed;
}

/*
 * ukp_opt_reclaim() - free retired detours that no thread can be in (the
 * rule of grace.h).  Those that could not be proven free stay retired for
 * a later call, and so do the points they call back with.
 */
void ukp_opt_reclaim(void)
{
	struct ukp_ranges rs = { 0 };
	struct ukp_opt *list = ukp_opt_retired;
	bool ok = true;

	if (!list)
		return;
	ukp_sync_cores();
	for (struct ukp_opt *op = list; op && ok; op = op->retired_next) {
		uintptr_t s, e;

		arch_opt_detour_range(&op->aop, &s, &e);
		ok = ukp_ranges_add(&rs, s, e);
	}
	if (ok)
		ok = ukp_opt_synchronize(&rs);
	free(rs.r);
	if (!ok) {
		pr_debug("detours kept retired: a thread may still be in one\n");
		return;
	}
	ukp_opt_retired = NULL;
	while (list) {
		struct ukp_opt *next = list->retired_next;

		arch_release_optimized(&list->aop, true);
		if (list->free_point) {
			arch_remove_kprobe(list->pt);
			free(list->pt);
		}
		free(list);
		list = next;
	}
}

/**
 * ukp_opt_take_dead_point() - @pt was removed: if a retired detour still
 * calls back with it, that detour frees it when it is reclaimed.  Returns
 * true when it took @pt.
 */
bool ukp_opt_take_dead_point(struct ukp_point *pt)
{
	for (struct ukp_opt *op = ukp_opt_retired; op; op = op->retired_next) {
		if (op->pt == pt) {
			op->free_point = true;
			return true;
		}
	}
	return false;
}

/** ukp_opt_covering() - an optimized or prepared point whose region covers
 * @addr (other than one at @addr). */
static struct ukp_point *ukp_opt_covering(uintptr_t addr)
{
	if (!ukp_opt_maybe_covered(addr))
		return NULL;
	for (uintptr_t back = 1; back < UKP_ARCH_MAX_REGION && back < addr; back++) {
		struct ukp_point *q = ukp_point_lookup(addr - back);
		struct ukp_opt *op = q ? atomic_load(&q->opt) : NULL;

		if (op && addr < q->addr + arch_opt_region_len(&op->aop))
			return q;
	}
	return NULL;
}

/** ukp_opt_make_room() - before a probe goes at @addr: unoptimize a point
 * whose region covers it.  Returns true if code changed. */
bool ukp_opt_make_room(uintptr_t addr)
{
	struct ukp_point *q = ukp_opt_covering(addr);

	return q ? ukp_unoptimize(q) : false;
}

/** ukp_opt_original_byte() - byte @i of the jump optimized @pt wrote, as it
 * was before.  Returns false when @pt has no jump there. */
bool ukp_opt_original_byte(struct ukp_point *pt, size_t i, uint8_t *b)
{
	struct ukp_opt *op = atomic_load(&pt->opt);

	if (!op || atomic_load(&op->state) != UKP_OPT_OPTIMIZED || i >= UKP_ARCH_MAX_PATCH)
		return false;
	*b = arch_opt_original_byte(&op->aop, i);
	return true;
}

/* ------------------------------------------------------------------------ */
/* Optimizing                                                                */
/* ------------------------------------------------------------------------ */

/* May @pt be optimized now?  (Not its region: that needs preparing.) */
static bool ukp_opt_eligible(struct ukp_point *pt)
{
	unsigned int flags = atomic_load(&pt->flags);

	if (!ukp_optimization_on || !pt->armed || (flags & (UKP_PT_HAS_POST | UKP_PT_GONE)))
		return false;
	ukp_for_each_probe(p, pt)
		if (p->pre_handler == ukp_jprobe_pre_handler)
			return false;	/* it redirects: needs the trap */
	return !ukp_opt_covering(pt->addr);
}

/* An enabled kretprobe's entry: the detour primes its return. */
static bool ukp_point_has_kretprobe(struct ukp_point *pt)
{
	ukp_for_each_probe(p, pt)
		if (!kprobe_disabled(p) && p->pre_handler == ukp_kretprobe_pre_handler)
			return true;
	return false;
}

static bool ukp_point_gpr_only(struct ukp_point *pt)
{
	/* A kretprobe's entry counts by its own flag: its pre handler is
	 * built general-registers-only, its entry_handler is the user's. */
	ukp_for_each_probe(p, pt)
		if (!kprobe_disabled(p) && !(p->flags & KPROBE_FLAG_GPR_ONLY))
			return false;
	return true;
}

static void *ukp_optimizer_thread(void *arg);

/** ukp_opt_queue_point() - optimize @pt later if it may be. */
void ukp_opt_queue_point(struct ukp_point *pt)
{
	if (pt->opt_queued || pt->opt_refused || atomic_load(&pt->opt) ||
	    !ukp_opt_eligible(pt))
		return;
	if (ukp_opt_nqueue == ukp_opt_capqueue) {
		size_t cap = ukp_opt_capqueue ? 2 * ukp_opt_capqueue : 64;
		void *nq = realloc(ukp_opt_queue, cap * sizeof(*ukp_opt_queue));

		if (!nq)
			return;
		ukp_opt_queue = nq;
		ukp_opt_capqueue = cap;
	}
	ukp_opt_queue[ukp_opt_nqueue++] = pt;
	pt->opt_queued = true;
	if (!ukp_optimizer_running) {
		pthread_t th;
		pthread_attr_t attr;
		sigset_t all, old;

		/* The optimizer takes none of the program's asynchronous
		 * signals; it may hit probes itself (strlen, malloc...), so
		 * SIGTRAP and the fault signals stay open. */
		sigfillset(&all);
		sigdelset(&all, SIGTRAP);
		sigdelset(&all, SIGSEGV);
		sigdelset(&all, SIGBUS);
		sigdelset(&all, SIGFPE);
		sigdelset(&all, SIGILL);
		sigdelset(&all, SIGSYS);
		ukp_sys_sigprocmask(SIG_SETMASK, &all, &old);
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (!pthread_create(&th, &attr, ukp_optimizer_thread, NULL)) {
			ukp_optimizer_running = true;
			pthread_setname_np(th, "ukprobes-opt");
		}
		pthread_attr_destroy(&attr);
		ukp_sys_sigprocmask(SIG_SETMASK, &old, NULL);
	}
	pthread_cond_signal(&ukp_opt_cond);
}

/** ukp_opt_forget() - @pt goes away: drop it from the queue. */
void ukp_opt_forget(struct ukp_point *pt)
{
	for (size_t i = 0; i < ukp_opt_nqueue; i++) {
		if (ukp_opt_queue[i] == pt) {
			ukp_opt_queue[i] = ukp_opt_queue[--ukp_opt_nqueue];
			break;
		}
	}
	pt->opt_queued = false;
}

/** ukp_opt_forget_gone() - @pt's object was unloaded: drop its
 * optimization without writing its (unmapped) code. */
void ukp_opt_forget_gone(struct ukp_point *pt)
{
	struct ukp_opt *op = atomic_load(&pt->opt);

	ukp_opt_forget(pt);
	if (!op)
		return;
	ukp_opt_attach(pt, NULL);
	ukp_point_set_optflags(pt, false, false);
	op->retired_next = ukp_opt_retired;
	ukp_opt_retired = op;
}

/*
 * The last function read whole, kept for the rest of the pass: a batch
 * comes in address order, often many probes to a function, and each
 * region of several instructions is checked against all of it (the
 * arch keeps what it found, arch_opt_batch_done()).  Original bytes, so
 * probes planted meanwhile do not change it; the pass holds the mutex.
 */
static struct {
	uintptr_t addr;
	size_t size;
	uint8_t *code;
} ukp_fn_code;

static const uint8_t *ukp_opt_function_code(const struct ukp_symbol *fn)
{
	if (ukp_fn_code.code && ukp_fn_code.addr == fn->addr && ukp_fn_code.size == fn->size)
		return ukp_fn_code.code;
	free(ukp_fn_code.code);
	ukp_fn_code.code = malloc(fn->size);
	if (ukp_fn_code.code && ukp_read_original(fn->addr, ukp_fn_code.code, fn->size)) {
		free(ukp_fn_code.code);
		ukp_fn_code.code = NULL;
	}
	ukp_fn_code.addr = fn->addr;
	ukp_fn_code.size = fn->size;
	return ukp_fn_code.code;
}

static void ukp_opt_pass_done(void)
{
	free(ukp_fn_code.code);
	ukp_fn_code.code = NULL;
	arch_opt_batch_done();
}

/* Build the detour of @pt: PREPARED.  False when it cannot be optimized. */
static bool ukp_opt_prepare(struct ukp_point *pt)
{
	struct ukp_symbol fn;
	bool have_fn = !ukp_symbol_containing(pt->addr, &fn) && fn.size;
	bool entry = have_fn && fn.addr == pt->addr;
	struct ukp_opt *op = calloc(1, sizeof(*op));
	bool gpr = ukp_point_gpr_only(pt), prime = ukp_point_has_kretprobe(pt);
	uint8_t quick[UKP_ARCH_MAX_REGION];
	const uint8_t *code;
	size_t len = sizeof(quick);
	int err;

	if (!op)
		return false;
	/* The jump covers UKP_ARCH_MAX_PATCH bytes at least: a probe there
	 * refuses it before any decoding (a probe on every instruction of
	 * a function would otherwise decode the function for each). */
	for (size_t i = 1; i < UKP_ARCH_MAX_PATCH; i++)
		if (ukp_point_lookup(pt->addr + i))
			goto fail;
	/* Most regions are one instruction of 5 bytes or more, which needs no
	 * look at the rest of the function: try that first. */
	while (len && ukp_read_original(pt->addr, quick, len))
		len--;			/* the end of a mapping */
	err = len ? arch_prepare_optimized(pt, &op->aop, quick, pt->addr, len, false,
					   entry, gpr, prime) : -EINVAL;
	if (err == -EAGAIN && have_fn) {
		code = ukp_opt_function_code(&fn);
		if (code)
			err = arch_prepare_optimized(pt, &op->aop, code, fn.addr, fn.size, true,
						     entry, gpr, prime);
	}
	if (err)
		goto fail;
	/* No other probe inside the region. */
	for (size_t i = 1; i < arch_opt_region_len(&op->aop); i++)
		if (ukp_point_lookup(pt->addr + i)) {
			arch_release_optimized(&op->aop, false);
			goto fail;
		}
	atomic_store(&op->state, UKP_OPT_PREPARED);
	op->pt = pt;
	ukp_opt_attach(pt, op);
	return true;
fail:
	free(op);
	return false;
}

struct ukp_region_check {
	struct ukp_point **pts;
	size_t n;
};

/* In the slot of a removed probe whose copy jumps back into a region. */
static bool ukp_in_dead_slot_into(uintptr_t ip, struct ukp_region_check *rc)
{
	const struct ukp_slot_info *si;
	uintptr_t slot, back;

	si = ukp_slot_info_at(ip, &slot);
	if (!si || si->detour)
		return false;
	back = si->addr + si->len;
	for (size_t i = 0; i < rc->n; i++) {
		struct ukp_point *pt = rc->pts[i];
		struct ukp_opt *op = atomic_load(&pt->opt);

		if (op && back > pt->addr && back < pt->addr + arch_opt_region_len(&op->aop))
			return true;
	}
	return false;
}

/* Inside a region past its first byte, or in a probe's step slot. */
static bool ukp_in_regions(uintptr_t ip, void *arg)
{
	struct ukp_region_check *rc = arg;

	for (size_t i = 0; i < rc->n; i++) {
		struct ukp_point *pt = rc->pts[i];
		struct ukp_opt *op = atomic_load(&pt->opt);

		if (op && ip > pt->addr && ip < pt->addr + arch_opt_region_len(&op->aop))
			return true;
		if (pt->ainsn.slot && ip >= pt->ainsn.slot &&
		    ip < pt->ainsn.slot + UKP_ARCH_SLOT_SIZE)
			return true;
	}
	return ukp_in_dead_slot_into(ip, rc);
}

/*
 * One pass of the optimizer over the queue (ukp_kprobe_mutex held).
 * Returns the number of points still waiting for proof.
 */
size_t ukp_optimize_pass(unsigned int max_wait_us)
{
	struct ukp_point **batch;
	struct ukp_region_check rc = { 0 };
	size_t n = 0, waiting = 0;

	ukp_check_gone();
	if (!ukp_opt_nqueue || ukp_qs_init_locked())
		return ukp_opt_nqueue;
	batch = calloc(ukp_opt_nqueue, sizeof(*batch));
	if (!batch)
		return ukp_opt_nqueue;
	for (size_t i = 0; i < ukp_opt_nqueue; i++) {
		struct ukp_point *pt = ukp_opt_queue[i];

		pt->opt_queued = false;
		if (!atomic_load(&pt->opt)) {
			if (!ukp_opt_eligible(pt))
				continue;
			if (!ukp_opt_prepare(pt)) {
				pt->opt_refused = true;
				continue;
			}
		}
		batch[n++] = pt;
	}
	ukp_opt_nqueue = 0;
	ukp_opt_pass_done();
	if (!n) {
		free(batch);
		return 0;
	}
	/* Trap handlers that read "not prepared" are done after this: they
	 * resumed in a step slot, which the proof below covers. */
	ukp_synchronize();
	rc.pts = calloc(n, sizeof(*rc.pts));
	if (!rc.pts) {
		/* No memory for the proof: nothing is patched unproven; the
		 * whole batch waits for a later pass. */
		for (size_t i = 0; i < n; i++) {
			batch[i]->opt_queued = true;
			ukp_opt_queue[ukp_opt_nqueue++] = batch[i];
		}
		free(batch);
		return n;
	}
	for (size_t i = 0; i < n; i++) {
		struct ukp_opt *op = atomic_load(&batch[i]->opt);

		if (op && !arch_opt_single(&op->aop))
			rc.pts[rc.n++] = batch[i];
	}
	if (rc.n && !ukp_threads_outside(ukp_in_regions, &rc, max_wait_us,
					 UKP_OUTSIDE_RESUME_REDIRECTED)) {
		/* Not proven: the multi-instruction ones wait for a later pass. */
		for (size_t i = 0; i < rc.n; i++) {
			rc.pts[i]->opt_queued = true;
			ukp_opt_queue[ukp_opt_nqueue++] = rc.pts[i];
			waiting++;
		}
		size_t k = 0;

		for (size_t i = 0; i < n; i++) {
			struct ukp_opt *op = atomic_load(&batch[i]->opt);

			if (op && arch_opt_single(&op->aop))
				batch[k++] = batch[i];
		}
		n = k;
	}
	free(rc.pts);
	for (size_t i = 0; i < n; i++) {
		struct ukp_opt *op = atomic_load(&batch[i]->opt);

		arch_optimize_stage1(batch[i], &op->aop);
	}
	ukp_sync_cores();
	for (size_t i = 0; i < n; i++) {
		struct ukp_opt *op = atomic_load(&batch[i]->opt);

		arch_optimize_stage2(batch[i], &op->aop);
		atomic_store(&op->state, UKP_OPT_OPTIMIZED);
		ukp_point_set_optflags(batch[i], true, arch_opt_patchable_entry(&op->aop));
	}
	ukp_sync_cores();
	free(batch);
	return waiting;
}

static void *ukp_optimizer_thread(void *arg)
{
	(void)arg;
	/* Probes it hits (malloc, strlen...) are not the program's events. */
	ukp_this_kcb()->internal = true;
	pthread_mutex_lock(&ukp_kprobe_mutex);
	for (;;) {
		while (!ukp_opt_nqueue)
			pthread_cond_wait(&ukp_opt_cond, &ukp_kprobe_mutex);
		/* Let a batch gather, as the kernel's OPTIMIZE_DELAY. */
		pthread_mutex_unlock(&ukp_kprobe_mutex);
		usleep(5000);
		pthread_mutex_lock(&ukp_kprobe_mutex);
		/* Up to two scheduler ticks of the threads' time (grace.c's
		 * proof for running threads), with the mutex held as the
		 * kernel's optimizer holds kprobe_mutex through its RCU wait. */
		if (ukp_optimize_pass(20000)) {
			pthread_mutex_unlock(&ukp_kprobe_mutex);
			usleep(10000);
			pthread_mutex_lock(&ukp_kprobe_mutex);
		}
	}
	return NULL;
}

/** ukp_opt_after_fork() - the child has no optimizer thread. */
void ukp_opt_after_fork(void)
{
	ukp_optimizer_running = false;
	pthread_cond_init(&ukp_opt_cond, NULL);
}

/* ------------------------------------------------------------------------ */
/* The switch                                                                */
/* ------------------------------------------------------------------------ */

static void ukp_unopt_cb(struct ukp_point *pt, void *changed)
{
	*(bool *)changed |= ukp_unoptimize(pt);
	pt->opt_refused = false;
	ukp_opt_forget(pt);
}

static void ukp_requeue_cb(struct ukp_point *pt, void *arg)
{
	(void)arg;
	pt->opt_refused = false;
	ukp_opt_queue_point(pt);
}

UKP_API int ukprobes_set_optimization(int on)
{
	bool changed = false;

	pthread_mutex_lock(&ukp_kprobe_mutex);
	ukp_opt_env_default();		/* an explicit call wins over it */
	ukp_optimization_on = !!on;
	if (on) {
		ukp_point_foreach(ukp_requeue_cb, NULL);
	} else {
		ukp_point_foreach(ukp_unopt_cb, &changed);
		if (changed)
			ukp_sync_cores();
		ukp_opt_reclaim();
	}
	pthread_mutex_unlock(&ukp_kprobe_mutex);
	return 0;
}

UKP_API int ukprobes_optimization(void)
{
	int on;

	pthread_mutex_lock(&ukp_kprobe_mutex);
	ukp_opt_env_default();
	on = ukp_optimization_on;
	pthread_mutex_unlock(&ukp_kprobe_mutex);
	return on;
}

UKP_API int ukprobes_wait_optimizer(void)
{
	size_t left = 0;
	/* Each pass proves every thread from scratch: a running thread needs
	 * its time to change, then 100 us more of it (grace.c), which on a
	 * loaded machine takes more than one 20 ms pass.  Passes wait longer
	 * as they fail, within about two seconds in all. */
	unsigned int wait_us = 20000, spent_us = 0;

	while (spent_us < 2000000) {
		pthread_mutex_lock(&ukp_kprobe_mutex);
		left = ukp_optimize_pass(wait_us);
		pthread_mutex_unlock(&ukp_kprobe_mutex);
		if (!left)
			break;
		usleep(1000);
		spent_us += wait_us + 1000;
		if (wait_us < 160000)
			wait_us *= 2;
	}
	return (int)left;
}

/** ukp_opt_resume_ip() - a breakpoint hit on a prepared or optimized probe
 * resumes in its detour's copy, never in the region (trap path). */
uintptr_t ukp_opt_resume_ip(struct ukp_point *pt)
{
	struct ukp_opt *op = atomic_load_explicit(&pt->opt, memory_order_acquire);

	return op ? arch_opt_resume_ip(&op->aop) : 0;
}
NOKPROBE_SYMBOL(ukp_opt_resume_ip);

/**
 * ukp_opt_region_copy() - @ip is inside a region that has a detour
 * (prepared or optimized), past its first byte: the detour's copy of that
 * instruction.  0 otherwise.  Trap path, in a read section.
 */
uintptr_t ukp_opt_region_copy(uintptr_t ip)
{
	if (!ukp_opt_maybe_covered(ip))
		return 0;
	for (uintptr_t back = 1; back < UKP_ARCH_MAX_REGION && back < ip; back++) {
		struct ukp_point *q = ukp_point_lookup(ip - back);
		struct ukp_opt *op = q ? atomic_load_explicit(&q->opt, memory_order_acquire) : NULL;

		if (op && ip < q->addr + arch_opt_region_len(&op->aop))
			return arch_opt_copy_ip(&op->aop, back);
	}
	return 0;
}
NOKPROBE_SYMBOL(ukp_opt_region_copy);

/**
 * ukp_opt_redirect() - where a thread stopped at @ip should resume if @ip
 * lies where a detour's jump is or may soon be: inside a region past its
 * first byte (it was there before the region got its detour), or in the
 * step slot of such a probe (it was about to run the copy, or to jump back
 * into the region), or in a slot whose copy jumps back into such a region
 * (the slot of a probe removed since).  The detour's copy of the same
 * instruction; 0 when @ip is fine.  In a read section (trap path).
 */
uintptr_t ukp_opt_redirect(uintptr_t ip)
{
	const struct ukp_slot_info *si;
	uintptr_t slot, to;

	if ((to = ukp_opt_region_copy(ip)))
		return to;
	si = ukp_slot_info_at(ip, &slot);
	if (si && !si->detour && (ip == slot || ip == slot + si->len)) {
		struct ukp_point *q = ukp_point_lookup(si->addr);
		struct ukp_opt *op = q ? atomic_load_explicit(&q->opt, memory_order_acquire) : NULL;

		if (op)
			return arch_opt_copy_ip(&op->aop, ip - slot);
		/* The copy of a removed probe's instruction, whose way back
		 * now leads into a region: go back at once, to the copy. */
		if (ip == slot + si->len)
			return ukp_opt_region_copy(si->addr + si->len);
	}
	return 0;
}
NOKPROBE_SYMBOL(ukp_opt_redirect);
