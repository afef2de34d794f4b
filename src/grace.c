// SPDX-License-Identifier: MIT
/*
 * grace.c - grace periods and proofs of where threads are: the one place
 * that decides when memory another thread may read or execute can be
 * reused.  The rule is in grace.h; this file implements its three parts:
 *
 *  - the trap path's read sections: sleepable RCU with two counters, as
 *    SRCU (a reader adds one to the counter of the current phase with a
 *    sequentially consistent add, which orders its later loads of the
 *    probe tables; a writer flips the phase and waits for the old counter
 *    to drain, twice, so a reader that read the phase just before a flip is
 *    waited for too; readers arriving meanwhile never starve the writer);
 *  - the detour path's per-thread records, read after membarrier();
 *  - thread positions from /proc, and the resume points of threads whose
 *    program signal handler is running (noted by the handler's wrapper).
 *
 * Stopping threads with a signal would make poll(), epoll_wait(), select()
 * and nanosleep() fail with EINTR even under SA_RESTART; ptrace needs a
 * helper process.  So nothing here stops a thread: it only looks.
 */
#include <dirent.h>
#include <errno.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "grace.h"

/* ------------------------------------------------------------------------ */
/* Step 2: the trap path's read sections                                    */
/* ------------------------------------------------------------------------ */

static struct {
	atomic_ulong ctr[2];
	atomic_uint phase;
	atomic_uint fork_gen;	/* sections opened before a fork() are void */
} ukp_srcu;

/* Serializes writers; the trap path never takes it. */
static pthread_mutex_t ukp_srcu_mutex = PTHREAD_MUTEX_INITIALIZER;

/* The cookie: the phase in bit 0, the fork generation above it. */
unsigned int ukp_srcu_read_lock(void)
{
	unsigned int idx = atomic_load_explicit(&ukp_srcu.phase,
						memory_order_relaxed) & 1;

	atomic_fetch_add_explicit(&ukp_srcu.ctr[idx], 1, memory_order_seq_cst);
#ifdef UKP_DEBUG
	ukp_this_kcb()->srcu_depth++;
#endif
	return idx | atomic_load_explicit(&ukp_srcu.fork_gen, memory_order_relaxed) << 1;
}
NOKPROBE_SYMBOL(ukp_srcu_read_lock);

void ukp_srcu_read_unlock(unsigned int cookie)
{
#ifdef UKP_DEBUG
	ukp_this_kcb()->srcu_depth--;
#endif
	/* Opened in the parent of a fork(): the child's counters never
	 * counted it. */
	if (cookie >> 1 != atomic_load_explicit(&ukp_srcu.fork_gen, memory_order_relaxed))
		return;
	atomic_fetch_sub_explicit(&ukp_srcu.ctr[cookie & 1], 1, memory_order_release);
}
NOKPROBE_SYMBOL(ukp_srcu_read_unlock);

/**
 * ukp_srcu_after_fork() - in the child: the other threads, and the read
 * sections they held, did not come along.  A section of the forking thread
 * itself (fork() called from a handler) ends without counting.
 */
void ukp_srcu_after_fork(void)
{
	atomic_store(&ukp_srcu.ctr[0], 0);
	atomic_store(&ukp_srcu.ctr[1], 0);
	atomic_fetch_add(&ukp_srcu.fork_gen, 1);
	pthread_mutex_init(&ukp_srcu_mutex, NULL);
}

static void ukp_pause(unsigned int *spins)
{
	if (++*spins < 64) {
		sched_yield();
	} else {
		struct timespec ts = { 0, 50 * 1000 };

		nanosleep(&ts, NULL);
	}
}

static void ukp_srcu_wait_drained(unsigned int idx)
{
	unsigned int spins = 0;

	while (atomic_load_explicit(&ukp_srcu.ctr[idx], memory_order_acquire))
		ukp_pause(&spins);
}

/**
 * ukp_synchronize() - wait for every trap-path section that started before
 * the call to finish.  Must not be called from a probe handler.
 */
void ukp_synchronize(void)
{
	pthread_mutex_lock(&ukp_srcu_mutex);
	atomic_thread_fence(memory_order_seq_cst);
	for (int round = 0; round < 2; round++) {
		unsigned int old = atomic_load(&ukp_srcu.phase) & 1;

		atomic_store(&ukp_srcu.phase, old ^ 1);
		ukp_srcu_wait_drained(old);
	}
	pthread_mutex_unlock(&ukp_srcu_mutex);
}

/* ------------------------------------------------------------------------ */
/* Step 2: the detour path's records                                        */
/* ------------------------------------------------------------------------ */

/* Reclaim records of threads that exited. */
static void ukp_qs_reap(struct ukp_qs_rec *recs)
{
	char path[64];

	for (unsigned int i = 0; i < UKP_QS_MAX; i++) {
		int tid = atomic_load(&recs[i].tid);

		if (!tid)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%d", tid);
		if (access(path, F_OK) && recs[i].nest == 0)
			atomic_store(&recs[i].tid, 0);
	}
}

/**
 * ukp_qs_init_locked() - the records, once the asymmetric fence is
 * registered.  Returns 0, -ENOSYS without membarrier() (then nothing may
 * use the detour path), -ENOMEM.  Caller holds ukp_kprobe_mutex.
 */
int ukp_qs_init_locked(void)
{
	static bool done;
	struct ukp_qs_rec *recs;

	ukp_assert_mutex_held();
	if (done)
		return 0;
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0))
		return -ENOSYS;
	if (posix_memalign((void **)&recs, 64, UKP_QS_MAX * sizeof(*recs)))
		return -ENOMEM;
	memset(recs, 0, UKP_QS_MAX * sizeof(*recs));
	atomic_store_explicit(&ukp_qs_recs, recs, memory_order_release);
	done = true;
	return 0;
}

/** ukp_qs_init() - ukp_qs_init_locked() for a caller without the mutex. */
int ukp_qs_init(void)
{
	int err;

	pthread_mutex_lock(&ukp_kprobe_mutex);
	err = ukp_qs_init_locked();
	pthread_mutex_unlock(&ukp_kprobe_mutex);
	return err;
}

/**
 * ukp_qs_synchronize() - wait for every read section of either kind
 * (ukp_qs_enter(), ukp_srcu_read_lock()) that started before the call.
 */
void ukp_qs_synchronize(void)
{
	struct ukp_qs_rec *recs = atomic_load(&ukp_qs_recs);

	if (recs) {
		ukp_qs_reap(recs);
		/* Every thread's counter stores are visible after this. */
		syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
	}
	for (unsigned int i = 0; recs && i < UKP_QS_MAX; i++) {
		unsigned int spins = 0;

		while (atomic_load(&recs[i].tid) && recs[i].nest > 0)
			ukp_pause(&spins);
	}
	/* Readers without a record used the shared counters. */
	ukp_synchronize();
}

/** ukp_qs_after_fork() - only the forking thread came along; its own
 * record (if it forked from a handler) is cleared too. */
void ukp_qs_after_fork(void)
{
	struct ukp_qs_rec *recs = atomic_load(&ukp_qs_recs);

	for (unsigned int i = 0; recs && i < UKP_QS_MAX; i++) {
		recs[i].nest = 0;
		atomic_store(&recs[i].tid, 0);
	}
	ukp_opt_forget_thread_record();
}

/* ------------------------------------------------------------------------ */
/* Step 3: resume points of threads in a program's signal handler           */
/* ------------------------------------------------------------------------ */

#define UKP_INTR_MAX	4096	/* threads */
#define UKP_INTR_DEPTH	4	/* nested handlers noted per thread */

/*
 * One per thread, written by its owner only (seq_cst stores: a writer reads
 * them with no fence of its own).  gen moves at every push and pop, so a
 * proof notices a handler that began or ended while it looked.
 */
struct ukp_intr_rec {
	atomic_int tid;			/* owner, 0 when free */
	atomic_uint gen;
	atomic_uint depth;
	_Atomic uintptr_t ip[UKP_INTR_DEPTH];
	uintptr_t sp[UKP_INTR_DEPTH];	/* the wrapper's frame, for pruning */
} __attribute__((aligned(64)));

/* A record freed by a thread's exit: lookups go on past it (claims take
 * the first free record from the hash of the tid on, so none stops at a
 * record that was in use when a later one was claimed). */
#define UKP_INTR_TOMB	(-1)

static struct ukp_intr_rec *_Atomic ukp_intr_recs;
static __thread struct ukp_intr_rec *ukp_intr_mine __attribute__((tls_model("initial-exec")));

/* The records, before the first probe exists (ukp_kprobe_mutex held). */
static int ukp_intr_init(void)
{
	struct ukp_intr_rec *recs;

	if (atomic_load(&ukp_intr_recs))
		return 0;
	if (posix_memalign((void **)&recs, 64, UKP_INTR_MAX * sizeof(*recs)))
		return -ENOMEM;
	memset(recs, 0, UKP_INTR_MAX * sizeof(*recs));
	atomic_store_explicit(&ukp_intr_recs, recs, memory_order_release);
	return 0;
}

static struct ukp_intr_rec *ukp_intr_claim(void)
{
	struct ukp_intr_rec *recs = atomic_load_explicit(&ukp_intr_recs, memory_order_acquire);
	int tid = (int)syscall(SYS_gettid);

	if (!recs)
		return NULL;
	for (unsigned int i = 0; i < UKP_INTR_MAX; i++) {
		struct ukp_intr_rec *r = &recs[((unsigned int)tid + i) % UKP_INTR_MAX];
		int was = atomic_load(&r->tid);

		if ((was == 0 || was == UKP_INTR_TOMB) &&
		    atomic_compare_exchange_strong(&r->tid, &was, tid)) {
			atomic_store(&r->depth, 0);
			return ukp_intr_mine = r;
		}
	}
	return NULL;
}
NOKPROBE_SYMBOL(ukp_intr_claim);

/**
 * ukp_intr_push() - a program's handler is about to run on this thread,
 * which will resume at @resume_ip.  Returns a token for ukp_intr_pop(), -1
 * when nothing was noted (no probe ever, or too deep: documented limit).
 */
int ukp_intr_push(uintptr_t resume_ip)
{
	struct ukp_intr_rec *r = ukp_intr_mine;
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	unsigned int d;

	if (!r && !(r = ukp_intr_claim()))
		return -1;
	d = atomic_load_explicit(&r->depth, memory_order_relaxed);
	/* Handlers left by longjmp: their frames lie below this one on the
	 * same stack.  (A frame on another stack, a signal stack, is kept.) */
	while (d && r->sp[d - 1] < sp && sp - r->sp[d - 1] < (1ul << 20))
		d--;
	if (d == UKP_INTR_DEPTH) {
		atomic_store(&r->depth, d);
		return -1;
	}
	atomic_store(&r->ip[d], resume_ip);
	r->sp[d] = sp;
	atomic_store(&r->depth, d + 1);
	atomic_fetch_add(&r->gen, 1);
	return (int)d;
}
NOKPROBE_SYMBOL(ukp_intr_push);

/** ukp_intr_pop() - the handler noted by @token returned. */
void ukp_intr_pop(int token)
{
	struct ukp_intr_rec *r = ukp_intr_mine;

	if (token < 0 || !r)
		return;
	atomic_store(&r->depth, (unsigned int)token);
	atomic_fetch_add(&r->gen, 1);
}
NOKPROBE_SYMBOL(ukp_intr_pop);

/** ukp_intr_after_fork() - only the forking thread came along, under a new
 * tid: every record is free again (a handler the forking thread was in
 * goes unnoted in the child). */
void ukp_intr_after_fork(void)
{
	struct ukp_intr_rec *recs = atomic_load(&ukp_intr_recs);

	for (unsigned int i = 0; recs && i < UKP_INTR_MAX; i++) {
		atomic_store(&recs[i].tid, 0);
		atomic_store(&recs[i].depth, 0);
	}
	ukp_intr_mine = NULL;
}

/* The record of @tid, if it has one. */
static struct ukp_intr_rec *ukp_intr_of(int tid)
{
	struct ukp_intr_rec *recs = atomic_load_explicit(&ukp_intr_recs, memory_order_acquire);

	for (unsigned int i = 0; recs && i < UKP_INTR_MAX; i++) {
		struct ukp_intr_rec *r = &recs[((unsigned int)tid + i) % UKP_INTR_MAX];
		int t = atomic_load(&r->tid);

		if (t == tid)
			return r;
		if (!t)
			break;	/* never used: the claim would have been here */
	}
	return NULL;
}

/* Free the records of threads that exited (none of their handlers runs). */
static void ukp_intr_reap(void)
{
	struct ukp_intr_rec *recs = atomic_load(&ukp_intr_recs);
	char path[64];

	for (unsigned int i = 0; recs && i < UKP_INTR_MAX; i++) {
		int tid = atomic_load(&recs[i].tid);

		if (tid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%d", tid);
		if (access(path, F_OK)) {
			atomic_store(&recs[i].depth, 0);
			atomic_store(&recs[i].tid, UKP_INTR_TOMB);
		}
	}
}

/*
 * A thread's noted resume points: *@gen gets the record's generation
 * (~0 without a record).  True when one is inside.
 */
static bool ukp_intr_inside(int tid, bool (*inside)(uintptr_t, void *), void *arg,
			    unsigned int *gen)
{
	struct ukp_intr_rec *r = ukp_intr_of(tid);
	unsigned int d;

	if (!r) {
		*gen = ~0u;
		return false;
	}
	*gen = atomic_load(&r->gen);
	d = atomic_load(&r->depth);
	for (unsigned int i = 0; i < d && i < UKP_INTR_DEPTH; i++)
		if (inside(atomic_load(&r->ip[i]), arg))
			return true;
	return false;
}

/* ------------------------------------------------------------------------ */
/* Step 3: thread positions                                                 */
/* ------------------------------------------------------------------------ */

static int ukp_read_small(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	return 0;
}

/*
 * Where a thread is: -1 when it exited; 0 and *@pc = 0 when it is running
 * or runnable, or when where it will resume cannot be read from /proc; 0
 * and its user pc when it is blocked in the kernel (in a system call, or a
 * page fault: /proc prints "-1 sp pc" for those).
 *
 * A thread blocked in rt_sigreturn shows the pc of the signal return
 * trampoline, but resumes where the signal frame says (after a trap
 * handler of ours, a step slot): that is treated as running, whose proof
 * does not rely on the pc.
 */
static int ukp_task_pc(int tid, uintptr_t *pc)
{
	char path[64], buf[256];
	char *last;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	if (ukp_read_small(path, buf, sizeof(buf)))
		return -1;
	if (!strncmp(buf, "running", 7) || strtol(buf, NULL, 10) == SYS_rt_sigreturn) {
		*pc = 0;
		return 0;
	}
	last = strrchr(buf, ' ');
	*pc = last ? (uintptr_t)strtoull(last + 1, NULL, 16) : 0;
	return 0;
}

static int ukp_task_runtime(int tid, unsigned long long *ns, unsigned long *switched_in)
{
	char path[64], buf[128];
	char *end;

	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", tid);
	if (ukp_read_small(path, buf, sizeof(buf)))
		return -1;
	*ns = strtoull(buf, &end, 10);
	strtoull(end, &end, 10);		/* time waiting on a run queue */
	*switched_in = strtoul(end, NULL, 10);
	return 0;
}

/* How many times @tid left a CPU (voluntary and not), or -1. */
static long ukp_task_switched_out(int tid)
{
	char path[64], buf[4096];
	const char *v, *n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
	if (ukp_read_small(path, buf, sizeof(buf)))
		return -1;
	v = strstr(buf, "\nvoluntary_ctxt_switches:");
	n = strstr(buf, "\nnonvoluntary_ctxt_switches:");
	if (!v || !n)
		return -1;
	return strtol(v + 25, NULL, 10) + strtol(n + 28, NULL, 10);
}

/*
 * @tid's CPU time, and whether that figure is exact: the kernel brings it
 * up to date when the thread leaves a CPU (and at ticks), so it is exact
 * while the thread is off every CPU, which is when it was switched in as
 * many times as out.  Read between two readings of the switch-outs, which
 * must agree; anything unsure is "not exact".
 */
static int ukp_task_time(int tid, unsigned long long *ns, bool *exact)
{
	long out1 = ukp_task_switched_out(tid), out2;
	unsigned long in;

	if (ukp_task_runtime(tid, ns, &in))
		return -1;
	out2 = ukp_task_switched_out(tid);
	*exact = out1 >= 0 && out1 == out2 && (unsigned long)out2 == in;
	return 0;
}

/* The detour-path record of @tid, if it has one. */
static struct ukp_qs_rec *ukp_qs_rec_of(int tid)
{
	struct ukp_qs_rec *recs = atomic_load_explicit(&ukp_qs_recs, memory_order_acquire);

	for (unsigned int i = 0; recs && i < UKP_QS_MAX; i++) {
		struct ukp_qs_rec *r = &recs[((unsigned int)tid + i) % UKP_QS_MAX];

		if (atomic_load(&r->tid) == tid)
			return r;
	}
	return NULL;
}

/*
 * CPU time a running thread must have used, counted from the first change
 * of its time after we looked, before it is taken to have left any
 * straight-line code it was in (see ukp_proof_step()).
 */
#define UKP_RAN_NS 100000ull

struct ukp_task_proof {
	int tid;
	struct ukp_qs_rec *qs;		/* with UKP_OUTSIDE_QS_READERS */
	bool done;
	bool moved;			/* its time changed once since we looked */
	unsigned int gen;		/* its resume-point record's */
	unsigned long long last;	/* its CPU time when we looked, then at
					 * its first change */
};

/* Start (again) proving @t: nothing seen yet.  A thread off every CPU
 * now has an exact time: what it uses from here counts at once. */
static void ukp_proof_reset(struct ukp_task_proof *t, unsigned int gen)
{
	bool exact = false;

	t->gen = gen;
	if (ukp_task_time(t->tid, &t->last, &exact))
		t->done = true;		/* exited */
	t->moved = exact;
}

/* Look at @t once more.  Sets t->done when it is proven outside. */
static void ukp_proof_step(struct ukp_task_proof *t,
			   bool (*inside)(uintptr_t, void *), void *arg,
			   unsigned int flags)
{
	unsigned long long ns;
	unsigned long in;
	unsigned int gen;
	uintptr_t pc;
	bool intr_in;

	if (ukp_task_pc(t->tid, &pc)) {
		t->done = true;		/* exited */
		return;
	}
	intr_in = !(flags & UKP_OUTSIDE_RESUME_REDIRECTED) &&
		  ukp_intr_inside(t->tid, inside, arg, &gen);
	if (flags & UKP_OUTSIDE_RESUME_REDIRECTED)
		gen = t->gen;
	if (gen != t->gen) {
		/* A handler began or ended: what was seen may not hold. */
		ukp_proof_reset(t, gen);
		return;
	}
	if (intr_in)
		return;			/* will resume inside: wait */
	if ((flags & UKP_OUTSIDE_QS_READERS) && t->qs && atomic_load(&t->qs->tid) == t->tid &&
	    __atomic_load_n(&t->qs->nest, __ATOMIC_SEQ_CST) > 0) {
		/* In a handler called from a detour, to which it returns:
		 * once out, it must be seen to leave the detour too. */
		ukp_proof_reset(t, gen);
		return;
	}
	if (pc) {
		if (!inside(pc, arg))
			t->done = true;	/* blocked, outside, cannot re-enter */
		return;
	}
	if (ukp_task_runtime(t->tid, &ns, &in)) {
		t->done = true;
		return;
	}
	/*
	 * The kernel updates a thread's time at a tick or when it leaves the
	 * CPU, so the first change may be time used before we looked, up to
	 * a point where it was preempted inside M (seen: a thread preempted
	 * in a step slot while the region's bytes changed, SIGILL).  Time
	 * used after that first change was used from wherever it stopped:
	 * UKP_RAN_NS of it takes it out of any straight-line code.  (A thread
	 * that was off every CPU when we looked starts "moved": its time was
	 * exact then.)
	 */
	if (ns == t->last)
		return;
	if (!t->moved) {
		t->moved = true;
		t->last = ns;
		return;
	}
	if (ns - t->last >= UKP_RAN_NS)
		t->done = true;		/* it ran since it stopped */
}

/**
 * ukp_threads_outside() - see grace.h.
 */
bool ukp_threads_outside(bool (*inside)(uintptr_t ip, void *arg), void *arg,
			 unsigned int max_wait_us, unsigned int flags)
{
	struct ukp_task_proof *tasks = NULL;
	size_t n = 0, cap = 0, left;
	int self = (int)gettid();
	unsigned int waited = 0;
	struct dirent *de;
	bool ok = true;
	DIR *d;

	ukp_intr_reap();
	/* A vfork-style child of ours runs in this memory, but is not in
	 * /proc/self/task: where it is cannot be known (spawn.c).  It is
	 * gone at its execve, soon. */
	while (atomic_load(&ukp_spawn_children)) {
		if (waited >= max_wait_us)
			return false;
		usleep(50);
		waited += 50;
	}
	d = opendir("/proc/self/task");
	if (!d)
		return false;
	while ((de = readdir(d))) {
		int tid = atoi(de->d_name);
		unsigned int gen;

		if (tid <= 0 || tid == self)
			continue;
		if (n == cap) {
			struct ukp_task_proof *nt;

			cap = cap ? 2 * cap : 16;
			nt = realloc(tasks, cap * sizeof(*nt));
			if (!nt) {
				ok = false;
				break;
			}
			tasks = nt;
		}
		memset(&tasks[n], 0, sizeof(tasks[n]));
		tasks[n].tid = tid;
		if (flags & UKP_OUTSIDE_QS_READERS)
			tasks[n].qs = ukp_qs_rec_of(tid);
		ukp_intr_inside(tid, inside, arg, &gen);
		ukp_proof_reset(&tasks[n], gen);
		n++;
	}
	closedir(d);
	/* Threads started since were started past step 1: they cannot be
	 * inside. */
	for (left = n; ok && left;) {
		left = 0;
		for (size_t i = 0; i < n; i++) {
			if (!tasks[i].done)
				ukp_proof_step(&tasks[i], inside, arg, flags);
			left += !tasks[i].done;
		}
		if (!left)
			break;
		if (waited >= max_wait_us) {
			ok = false;
			break;
		}
		usleep(50);
		waited += 50;
	}
	free(tasks);
	return ok;
}

/* ------------------------------------------------------------------------ */
/* Set-up and debug checks                                                   */
/* ------------------------------------------------------------------------ */

/** ukp_grace_init() - what the trap path needs before the first probe
 * (ukp_kprobe_mutex held). */
int ukp_grace_init(void)
{
	return ukp_intr_init();
}
