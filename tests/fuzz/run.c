// SPDX-License-Identifier: MIT
/*
 * run.c - running one case in every mode, each in a child process of its
 * own (a crash or a hang is a finding, not the end of the fuzzer), and
 * comparing each with the native run.
 *
 * The parent never registers a probe: each child starts from the clean
 * library state fork() gives it.  The parent writes the sequence into
 * fuzz_arena (RW, write, RX: never writable and executable at once) before
 * forking; the children set up the data and run.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <time.h>
#include <unistd.h>

#include "fuzz.h"

#define X86_TF	0x100ul
#define CHILD_TIMEOUT	20	/* seconds */

const char *const fuzz_mode_name[FM_COUNT] = {
	[FM_NATIVE] = "native", [FM_TRACE] = "trace", [FM_BOOST] = "boost",
	[FM_STEP] = "step", [FM_OPT_ALL] = "opt-all", [FM_OPT_SPARSE] = "opt-sparse",
	[FM_OPT_GPR] = "opt-gpr", [FM_OPT_EARLY] = "opt-early", [FM_OPT_FLIP] = "opt-flip",
	[FM_MOD_BOOST] = "mod-boost", [FM_MOD_STEP] = "mod-step", [FM_MOD_OPT] = "mod-opt",
	[FM_MOD_SBP] = "mod-sbp", [FM_MOD_SOPT] = "mod-sopt",
	[FM_ASYNC_BOOST] = "async-boost", [FM_ASYNC_STEP] = "async-step",
	[FM_ASYNC_OPT] = "async-opt",
};

enum { IT_ONCE, IT_EARLY, IT_FLIP, IT_ASYNC };

/* What each mode does, and what it is compared with. */
static const struct mode_info {
	bool opt;		/* optimization on */
	bool post;		/* a post handler (the single-step path) */
	bool gpr;		/* KPROBE_FLAG_GPR_ONLY */
	bool modify;		/* handlers change registers */
	uint8_t iterate;	/* IT_* */
	unsigned int sparse;	/* 0: every instruction; else the mask's salt */
	int ref;		/* the run the final state must equal */
	bool trace;		/* handler records against the trace (else
				 * against the reference run's) */
} modes[FM_COUNT] = {
	[FM_NATIVE] = { .ref = -1 },
	[FM_TRACE] = { .ref = FM_NATIVE },
	[FM_BOOST] = { .ref = FM_NATIVE, .trace = true },
	[FM_STEP] = { .post = true, .ref = FM_NATIVE, .trace = true },
	[FM_OPT_ALL] = { .opt = true, .ref = FM_NATIVE, .trace = true },
	[FM_OPT_SPARSE] = { .opt = true, .sparse = 1, .ref = FM_NATIVE, .trace = true },
	[FM_OPT_GPR] = { .opt = true, .gpr = true, .sparse = 2, .ref = FM_NATIVE, .trace = true },
	[FM_OPT_EARLY] = { .opt = true, .sparse = 3, .iterate = IT_EARLY, .ref = FM_NATIVE,
			   .trace = true },
	[FM_OPT_FLIP] = { .opt = true, .sparse = 4, .iterate = IT_FLIP, .ref = FM_NATIVE,
			  .trace = true },
	[FM_MOD_BOOST] = { .modify = true, .ref = -1 },
	[FM_MOD_STEP] = { .modify = true, .post = true, .ref = FM_MOD_BOOST },
	[FM_MOD_OPT] = { .modify = true, .opt = true, .ref = FM_MOD_BOOST },
	[FM_MOD_SBP] = { .modify = true, .sparse = 5, .ref = -1 },
	[FM_MOD_SOPT] = { .modify = true, .opt = true, .sparse = 5, .ref = FM_MOD_SBP },
	[FM_ASYNC_BOOST] = { .iterate = IT_ASYNC, .ref = FM_NATIVE, .trace = true },
	[FM_ASYNC_STEP] = { .post = true, .iterate = IT_ASYNC, .ref = FM_NATIVE, .trace = true },
	[FM_ASYNC_OPT] = { .opt = true, .sparse = 6, .iterate = IT_ASYNC, .ref = FM_NATIVE,
			   .trace = true },
};

/* One per mode, and two spares for minimizing. */
static struct fuzz_result *results;
#define SPARE FM_COUNT
#define SPARE_REF (FM_COUNT + 1)

int fuzz_init(void)
{
	void *p = mmap(NULL, sizeof(struct fuzz_result) * (FM_COUNT + 2),
		       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -errno;
	results = p;
	if (mprotect(fuzz_guard, FUZZ_GUARD_SIZE, PROT_NONE))
		return -errno;
	/* Load the symbol tables of every object once, here: each child
	 * inherits them instead of reading them again (tens of ms).  No
	 * probe is registered in this process, ever. */
	{
		FILE *null = fopen("/dev/null", "w");

		if (null) {
			ukprobes_print_blacklist(null);
			fclose(null);
		}
	}
	return 0;
}

void fuzz_fini(void)
{
	/* (LeakSanitizer reads all of .bss at exit) */
	mprotect(fuzz_guard, FUZZ_GUARD_SIZE, PROT_READ | PROT_WRITE);
}

static int write_arena(const struct fuzz_seq *s)
{
	if (mprotect(fuzz_arena, FUZZ_ARENA_SIZE, PROT_READ | PROT_WRITE))
		return -errno;
	memcpy(fuzz_arena, s->code, FUZZ_ARENA_SIZE);
	if (mprotect(fuzz_arena, FUZZ_ARENA_SIZE, PROT_READ | PROT_EXEC))
		return -errno;
	__builtin___clear_cache((char *)fuzz_arena, (char *)fuzz_arena + FUZZ_ARENA_SIZE);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* In the child                                                              */
/* ------------------------------------------------------------------------ */

static void child_prepare(const struct fuzz_seq *s)
{
	memcpy(fuzz_scratch, s->scratch, sizeof(fuzz_scratch));
	memcpy(fuzz_ripdata, s->ripdata, sizeof(fuzz_ripdata));
	memcpy(fuzz_stack + FUZZ_STACK_BELOW - FUZZ_STACK_KEEP_BELOW, s->stack, FUZZ_STACK_KEEP);
	fuzz_in = s->in;
	fuzz_code = (uintptr_t)fuzz_arena;
}

static void child_collect(struct fuzz_result *r)
{
	r->out = fuzz_out;
	memcpy(r->scratch, fuzz_scratch, sizeof(r->scratch));
	memcpy(r->ripdata, fuzz_ripdata, sizeof(r->ripdata));
	memcpy(r->stack, fuzz_stack + FUZZ_STACK_BELOW - FUZZ_STACK_KEEP_BELOW, FUZZ_STACK_KEEP);
	r->done = 1;
}

/* The single-step tracer: the reference of what each instruction sees. */
static const struct fuzz_seq *tr_seq;
static struct fuzz_result *tr_res;
static int tr_prev = -1;

static void regs_from_gregs(const greg_t *g, struct pt_regs *r)
{
	memset(r, 0, sizeof(*r));
	r->r15 = (unsigned long)g[REG_R15];
	r->r14 = (unsigned long)g[REG_R14];
	r->r13 = (unsigned long)g[REG_R13];
	r->r12 = (unsigned long)g[REG_R12];
	r->bp = (unsigned long)g[REG_RBP];
	r->bx = (unsigned long)g[REG_RBX];
	r->r11 = (unsigned long)g[REG_R11];
	r->r10 = (unsigned long)g[REG_R10];
	r->r9 = (unsigned long)g[REG_R9];
	r->r8 = (unsigned long)g[REG_R8];
	r->ax = (unsigned long)g[REG_RAX];
	r->cx = (unsigned long)g[REG_RCX];
	r->dx = (unsigned long)g[REG_RDX];
	r->si = (unsigned long)g[REG_RSI];
	r->di = (unsigned long)g[REG_RDI];
	r->ip = (unsigned long)g[REG_RIP];
	r->flags = (unsigned long)g[REG_EFL] & ~X86_TF;
	r->sp = (unsigned long)g[REG_RSP];
}

static void tr_record(const greg_t *g, uint16_t idx)
{
	struct fuzz_rec *e;

	if (tr_res->nrec >= FUZZ_MAX_REC) {
		tr_res->rec_overflow = true;
		return;
	}
	e = &tr_res->rec[tr_res->nrec++];
	e->idx = idx;
	e->post = 0;
	regs_from_gregs(g, &e->regs);
}

static void tr_sigtrap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	greg_t *g = uc->uc_mcontext.gregs;
	uintptr_t rip = (uintptr_t)g[REG_RIP];
	int idx = -1;

	(void)sig;
	(void)si;
	/* pushfq just pushed TF, which the program would not see. */
	if (tr_prev >= 0 && (tr_seq->insn[tr_prev].kind & FUZZ_IK_PUSHF))
		*(uint64_t *)g[REG_RSP] &= ~X86_TF;
	if (rip == (uintptr_t)fuzz_exit) {
		tr_record(g, FUZZ_REC_EXIT);
		g[REG_EFL] &= ~(greg_t)X86_TF;
		tr_prev = -1;
		return;
	}
	if (rip - (uintptr_t)fuzz_arena < FUZZ_ARENA_SIZE) {
		idx = fuzz_insn_at(tr_seq, rip - (uintptr_t)fuzz_arena);
		if (idx < 0)	/* a generator bug: a branch into an instruction */
			tr_record(g, FUZZ_REC_BAD);
	}
	/* A rep string instruction traps after each iteration: one entry. */
	if (idx >= 0 && !(idx == tr_prev && (tr_seq->insn[idx].kind & FUZZ_IK_REPSTR)))
		tr_record(g, (uint16_t)idx);
	tr_prev = idx;
	/* popfq may have cleared TF: keep stepping. */
	g[REG_EFL] |= (greg_t)X86_TF;
}

static void child_trace(const struct fuzz_seq *s, struct fuzz_result *r)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = tr_sigtrap;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTRAP, &sa, NULL);
	tr_seq = s;
	tr_res = r;
	fuzz_in.flags |= X86_TF;
	fuzz_run();
}

/*
 * The program's own handler for the faults the sequences make on purpose
 * (gen.c, block_fault): it records what it was given and resumes after the
 * faulting instruction, as a program that emulates or skips would.  Under
 * probes it must be given exactly what it is given without.
 */
static const struct fuzz_seq *pf_seq;
static struct fuzz_result *pf_res;

static void prog_fault(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	greg_t *g = uc->uc_mcontext.gregs;
	uintptr_t rip = (uintptr_t)g[REG_RIP];
	int idx = rip - (uintptr_t)fuzz_arena < FUZZ_ARENA_SIZE ?
		  fuzz_insn_at(pf_seq, rip - (uintptr_t)fuzz_arena) : -1;
	struct fuzz_fault *f;

	if (idx < 0 || pf_res->nfaults >= FUZZ_MAX_FAULTS) {
		/* not one of ours: that is the finding */
		snprintf(pf_res->msg, sizeof(pf_res->msg),
			 "the program's handler got signal %d (code %d, addr %p) at %+ld, "
			 "no instruction of the sequence", sig, si->si_code, si->si_addr,
			 (long)(rip - (uintptr_t)fuzz_arena));
		_exit(3);
	}
	f = &pf_res->faults[pf_res->nfaults++];
	f->sig = sig;
	f->code = si->si_code;
	f->addr = (uintptr_t)si->si_addr;
	regs_from_gregs(g, &f->regs);
	g[REG_RIP] = (greg_t)(rip + pf_seq->insn[idx].len);
	if (tr_res) {
		/* The tracer's entry for this instruction: it faulted.  The
		 * next one gets no trap (no instruction completes before it):
		 * record it here. */
		if (tr_res->nrec && tr_res->rec[tr_res->nrec - 1].idx == idx)
			tr_res->rec[tr_res->nrec - 1].post = FUZZ_REC_FAULTED;
		tr_prev = fuzz_insn_at(pf_seq, rip + pf_seq->insn[idx].len - (uintptr_t)fuzz_arena);
		if (tr_prev >= 0)
			tr_record(g, (uint16_t)tr_prev);
	}
}

static void install_prog_fault(const struct fuzz_seq *s, struct fuzz_result *r)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL };
	struct sigaction sa;

	pf_seq = s;
	pf_res = r;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = prog_fault;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

static int register_all(const struct fuzz_seq *s, enum fuzz_mode m, const uint8_t *mask,
			struct fuzz_result *r)
{
	struct kprobe *kps[FUZZ_MAX_INSN];
	int n = 0, err;

	for (unsigned int i = 0; i < s->n; i++) {
		struct kprobe *kp = &fuzz_kprobes[i];

		if (!mask[i])
			continue;
		memset(kp, 0, sizeof(*kp));
		kp->addr = (kprobe_opcode_t *)(fuzz_arena + s->insn[i].off);
		kp->pre_handler = modes[m].modify ? fuzz_mod_pre_handler : fuzz_pre_handler;
		if (modes[m].post)
			kp->post_handler = fuzz_post_handler;
		if (modes[m].gpr)
			kp->flags = KPROBE_FLAG_GPR_ONLY;
		kps[n++] = kp;
	}
	/* One batch; if something in it is refused, one by one to know what. */
	err = n ? register_kprobes(kps, n) : 0;
	for (int j = 0; j < n; j++) {
		int i = (int)(kps[j] - fuzz_kprobes);

		if (err) {
			unsigned int flags = kps[j]->flags;

			kps[j]->addr = (kprobe_opcode_t *)(fuzz_arena + s->insn[i].off);
			kps[j]->flags = flags & KPROBE_FLAG_GPR_ONLY;
			r->reg_err[i] = (int16_t)register_kprobe(kps[j]);
		}
		if (!r->reg_err[i]) {
			r->probed[i] = 1;
			r->nprobed++;
		}
	}
	return 0;
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static atomic_bool flip_stop, opt_done;

/*
 * FM_ASYNC_*: another thread sends this one SIGUSR1 every few tens of
 * microseconds while it runs the sequence; the program's handler notes
 * where the thread was.  The runs must still agree with the native one,
 * and no thread may be found inside an instruction of the sequence.
 */
static struct fuzz_result *async_res;
static atomic_bool async_stop_flag;
static pid_t async_tid;
#define ASYNC_KEEP 64
static uint64_t async_other[ASYNC_KEEP];
static unsigned int async_nother;

static void prog_async(int sig, siginfo_t *si, void *ucv)
{
	const ucontext_t *uc = ucv;
	uintptr_t rip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];

	(void)sig;
	(void)si;
	if (rip - (uintptr_t)fuzz_arena < FUZZ_ARENA_SIZE) {
		if (fuzz_insn_at(pf_seq, rip - (uintptr_t)fuzz_arena) >= 0) {
			async_res->async[FA_ORIG]++;
		} else {
			async_res->async[FA_MID]++;
			async_res->async_mid = rip;
		}
		return;
	}
	if (async_nother < ASYNC_KEEP)
		async_other[async_nother++] = rip;
	else
		async_res->async[FA_OTHER]++;
}

static void *pinger(void *arg)
{
	(void)arg;
	while (!atomic_load(&async_stop_flag)) {
		struct timespec ts = { 0, 10000 };

		syscall(SYS_tgkill, getpid(), async_tid, SIGUSR1);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static pthread_t async_thread;

static void async_start(struct fuzz_result *r)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = prog_async;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	async_res = r;
	async_tid = (pid_t)syscall(SYS_gettid);
	atomic_store(&async_stop_flag, false);
	if (pthread_create(&async_thread, NULL, pinger, NULL))
		async_thread = 0;
}

/* Stop the signals; sort the places found outside the sequence with the
 * maps: code of a file, or anonymous code (a slot, a detour). */
static void async_stop(struct fuzz_result *r)
{
	char line[512];
	FILE *f;

	atomic_store(&async_stop_flag, true);
	if (async_thread)
		pthread_join(async_thread, NULL);
	signal(SIGUSR1, SIG_IGN);
	f = fopen("/proc/self/maps", "r");
	for (unsigned int i = 0; i < async_nother; i++) {
		enum fuzz_async_where w = FA_OTHER;

		if (f) {
			rewind(f);
			while (fgets(line, sizeof(line), f)) {
				unsigned long lo, hi;
				char perms[8], path[256] = "";

				if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &lo, &hi, perms,
					   path) < 3 || async_other[i] < lo || async_other[i] >= hi)
					continue;
				w = perms[2] != 'x' ? FA_OTHER : path[0] == '/' ? FA_CODE : FA_ANON;
				break;
			}
		}
		r->async[w]++;
	}
	if (f)
		fclose(f);
}

/* FM_OPT_EARLY: tells the iterating thread when the optimizer is done. */
static void *opt_waiter(void *arg)
{
	(void)arg;
	for (int i = 0; i < 50 && ukprobes_wait_optimizer() > 0; i++)
		usleep(1000);
	atomic_store(&opt_done, true);
	return NULL;
}

/* FM_OPT_FLIP: the optimization switch, off and on, while the sequence runs. */
static void *flipper(void *arg)
{
	(void)arg;
	while (!atomic_load(&flip_stop)) {
		ukprobes_set_optimization(0);
		usleep(300);
		ukprobes_set_optimization(1);
		usleep(1500);
	}
	return NULL;
}

/*
 * Run the sequence again and again for @ns while probes change state under
 * it (the optimizer at work, or the switch flipped); each run is checked
 * here against the native run and the trace, and the first that differs
 * is the one left in @r.
 */
static void child_iterate(const struct fuzz_seq *s, enum fuzz_mode m, struct fuzz_result *r,
			  long long ns, atomic_bool *until)
{
	long long t0 = now_ns();
	struct fuzz_diff d;
	int after = 0;

	do {
		if (r->iterations)
			child_prepare(s);
		r->nrec = 0;
		r->rec_overflow = false;
		r->nfaults = 0;
		fuzz_run();
		child_collect(r);
		r->iterations++;
		memset(&d, 0, sizeof(d));
		if (fuzz_compare_final(s, &results[FM_NATIVE], r, &d) ||
		    fuzz_compare_faults(&results[FM_NATIVE], r, &d) ||
		    fuzz_compare_records(s, &results[FM_TRACE], r, modes[m].post, &d))
			break;
		/* with @until: go on until it is set, and a few runs more */
		if (until && (!atomic_load(until) || ++after < 3) && now_ns() - t0 < 10 * ns)
			continue;
	} while (now_ns() - t0 < ns && r->iterations < 2000);
}

static void child_probed(const struct fuzz_seq *s, enum fuzz_mode m, const uint8_t *mask,
			 struct fuzz_result *r)
{
	bool opt = modes[m].opt;
	pthread_t th;

	ukprobes_set_optimization(opt);
	fuzz_cur_result = r;
	/* The program's fault handler, installed before the probes (ukprobes
	 * then chains to it), or after, in one mode (ukprobes must notice). */
	if (modes[m].iterate != IT_EARLY)
		install_prog_fault(s, r);
	register_all(s, m, mask, r);
	if (modes[m].iterate == IT_EARLY)
		install_prog_fault(s, r);
	if (modes[m].iterate == IT_EARLY) {
		atomic_store(&opt_done, false);
		if (pthread_create(&th, NULL, opt_waiter, NULL)) {
			snprintf(r->msg, sizeof(r->msg), "pthread_create failed");
			return;
		}
		child_iterate(s, m, r, 20 * 1000000ll, &opt_done);
		pthread_join(th, NULL);
	} else if (modes[m].iterate == IT_FLIP) {
		atomic_store(&flip_stop, false);
		if (pthread_create(&th, NULL, flipper, NULL)) {
			snprintf(r->msg, sizeof(r->msg), "pthread_create failed");
			return;
		}
		child_iterate(s, m, r, 30 * 1000000ll, NULL);
		atomic_store(&flip_stop, true);
		pthread_join(th, NULL);
	} else if (modes[m].iterate == IT_ASYNC) {
		if (opt)
			for (int i = 0; i < 50 && ukprobes_wait_optimizer() > 0; i++)
				usleep(1000);
		async_start(r);
		child_iterate(s, m, r, 30 * 1000000ll, NULL);
		async_stop(r);
	} else {
		if (opt)
			for (int i = 0; i < 50 && ukprobes_wait_optimizer() > 0; i++)
				usleep(1000);
		fuzz_run();
		r->iterations = 1;
	}
	for (unsigned int i = 0; i < s->n; i++) {
		if (r->probed[i] && (fuzz_kprobes[i].flags & KPROBE_FLAG_OPTIMIZED)) {
			r->optimized[i] = 1;
			r->noptimized++;
		}
		if (r->probed[i])
			r->nmissed += fuzz_kprobes[i].nmissed;
	}
}

/* Run @s in mode @m with probes where @mask says; the result in @r. */
static void run_mode(const struct fuzz_seq *s, enum fuzz_mode m, const uint8_t *mask,
		     struct fuzz_result *r)
{
	pid_t pid;
	int status;

	memset(r, 0, offsetof(struct fuzz_result, rec));
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		snprintf(r->msg, sizeof(r->msg), "fork: %s", strerror(errno));
		return;
	}
	if (!pid) {
		alarm(CHILD_TIMEOUT);
		child_prepare(s);
		if (m == FM_NATIVE) {
			install_prog_fault(s, r);
			fuzz_run();
		} else if (m == FM_TRACE) {
			install_prog_fault(s, r);
			child_trace(s, r);
		} else
			child_probed(s, m, mask, r);
		if (!r->done)
			child_collect(r);
		_exit(0);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (r->done)
		return;
	if (WIFSIGNALED(status))
		snprintf(r->msg, sizeof(r->msg), "the run died of signal %d (%s)%s",
			 WTERMSIG(status), strsignal(WTERMSIG(status)),
			 WTERMSIG(status) == SIGALRM ? ": hung" : "");
	else
		snprintf(r->msg, sizeof(r->msg), "the run exited with %d before its end",
			 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* ------------------------------------------------------------------------ */
/* In the parent                                                             */
/* ------------------------------------------------------------------------ */

/* Probes spaced so that a jump-optimized region (5 bytes or more) can
 * form at each: after one, none for at least 5 bytes, then a random gap. */
static void sparse_mask(const struct fuzz_seq *s, uint64_t salt, uint8_t *mask)
{
	struct fuzz_rng rng;
	size_t next = 0;

	fuzz_rng_seed(&rng, s->seed ^ salt);
	next = fuzz_rng_below(&rng, 6);
	memset(mask, 0, FUZZ_MAX_INSN);
	for (unsigned int i = 0; i < s->n; i++) {
		if (s->insn[i].off < next)
			continue;
		mask[i] = 1;
		next = s->insn[i].off + 5 + fuzz_rng_below(&rng, 8);
	}
}

/* Does run @r of mode @m disagree with @ref (and the trace)? */
static int check_mode(const struct fuzz_seq *s, enum fuzz_mode m, const struct fuzz_result *r,
		      const struct fuzz_result *ref, struct fuzz_diff *d)
{
	const struct fuzz_result *tr = &results[FM_TRACE];

	memset(d, 0, sizeof(*d));
	d->insn = -1;
	if (!r->done) {
		snprintf(d->what, sizeof(d->what), "%s", r->msg);
		return 1;
	}
	if (ref && !ref->done)
		return 0;	/* reported already */
	if (ref && (fuzz_compare_final(s, ref, r, d) || fuzz_compare_faults(ref, r, d)))
		return 1;
	if (r->async[FA_MID]) {
		snprintf(d->what, sizeof(d->what), "a signal found the thread at %+ld, inside an "
			 "instruction (%lu times)", (long)(r->async_mid - (uintptr_t)fuzz_arena),
			 r->async[FA_MID]);
		d->insn = -1;
		return 1;
	}
	if (m == FM_TRACE) {
		for (unsigned int k = 0; k < r->nrec; k++) {
			if (r->rec[k].idx == FUZZ_REC_BAD) {
				snprintf(d->what, sizeof(d->what), "the native run executed at %+ld, "
					 "which starts no instruction (a generator bug)",
					 (long)(r->rec[k].regs.ip - (uintptr_t)fuzz_arena));
				return 1;
			}
		}
	}
	if (modes[m].trace && tr->done && fuzz_compare_records(s, tr, r, modes[m].post, d))
		return 1;
	if (!modes[m].trace && ref && m != FM_TRACE && fuzz_compare_pre(ref, r, d))
		return 1;
	return 0;
}

static void print_case(const struct fuzz_seq *s, const struct fuzz_result *r, int insn, FILE *out)
{
	const char *mark[FUZZ_MAX_INSN] = { 0 };

	for (unsigned int i = 0; i < s->n; i++) {
		if (r && r->reg_err[i])
			mark[i] = "refused";
		else if (r && r->optimized[i])
			mark[i] = "optimized";
		else if (r && r->probed[i])
			mark[i] = NULL;
	}
	if (insn >= 0 && insn < (int)s->n)
		mark[insn] = "HERE";
	fuzz_disasm(s, out, mark);
}

/* Run mode @m with the probes of @mask alone: does it still disagree?  A
 * reference that has probes too (handlers that change registers) runs
 * with the same ones. */
static bool mode_fails(const struct fuzz_seq *s, enum fuzz_mode m, const uint8_t *mask,
		       struct fuzz_diff *d)
{
	const struct fuzz_result *ref = modes[m].ref >= 0 ? &results[modes[m].ref] : NULL;

	if (modes[m].ref > FM_TRACE) {
		run_mode(s, (enum fuzz_mode)modes[m].ref, mask, &results[SPARE_REF]);
		ref = &results[SPARE_REF];
	}
	run_mode(s, m, mask, &results[SPARE]);
	return check_mode(s, m, &results[SPARE], ref, d);
}

/* Bisect the probes of mode @m to the fewest that still show a mismatch. */
static void minimize(const struct fuzz_seq *s, enum fuzz_mode m, const uint8_t *mask, FILE *out)
{
	uint8_t cur[FUZZ_MAX_INSN], half[FUZZ_MAX_INSN];
	unsigned int cnt = 0;
	struct fuzz_diff d;

	memcpy(cur, mask, sizeof(cur));
	for (unsigned int i = 0; i < s->n; i++)
		cnt += cur[i];
	while (cnt > 1) {
		unsigned int k = 0, taken = 0;
		bool found = false;

		for (int side = 0; side < 2 && !found; side++) {
			k = 0;
			taken = 0;
			memset(half, 0, sizeof(half));
			for (unsigned int i = 0; i < s->n; i++) {
				if (!cur[i])
					continue;
				if ((k++ < cnt / 2) == (side == 0)) {
					half[i] = 1;
					taken++;
				}
			}
			if (mode_fails(s, m, half, &d)) {
				memcpy(cur, half, sizeof(cur));
				cnt = taken;
				found = true;
			}
		}
		if (!found)
			break;
	}
	fprintf(out, "  minimized: %u probe(s) in mode %s still show it:", cnt, fuzz_mode_name[m]);
	for (unsigned int i = 0; i < s->n; i++) {
		if (cur[i]) {
			char line[200];

			fuzz_disasm_insn(s, i, line, sizeof(line));
			fprintf(out, "\n    insn %u (+%#x): %s", i, s->insn[i].off, line);
		}
	}
	if (mode_fails(s, m, cur, &d))
		fprintf(out, "\n    -> %s", d.what);
	fprintf(out, "\n");
}

static void report(const struct fuzz_seq *s, enum fuzz_mode m, const uint8_t *mask,
		   const struct fuzz_diff *d, const struct fuzz_opts *o)
{
	FILE *out = o->log ? o->log : stderr;

	fprintf(out, "MISMATCH case %#lx mode %s: %s\n", (unsigned long)s->seed,
		fuzz_mode_name[m], d->what);
	fprintf(out, "  reproduce: fuzz --case %#lx --mode %s -v\n", (unsigned long)s->seed,
		fuzz_mode_name[m]);
	if (o->verbose || d->insn >= 0)
		print_case(s, &results[m], d->insn, out);
	if (o->verbose) {
		const struct fuzz_result *t = &results[FM_TRACE], *r = &results[m];

		fprintf(out, "  trace:");
		for (unsigned int k = 0; k < t->nrec && k < 200; k++)
			fprintf(out, " %d%s", t->rec[k].idx == FUZZ_REC_EXIT ? -1 : t->rec[k].idx,
				t->rec[k].post == FUZZ_REC_FAULTED ? "!" : "");
		fprintf(out, "\n  hits: ");
		for (unsigned int k = 0; k < r->nrec && k < 200; k++)
			fprintf(out, " %u%s", r->rec[k].idx, r->rec[k].post ? "p" : "");
		fprintf(out, "\n  run %u of the child; nmissed %lu; faults %u\n", r->iterations,
			r->nmissed, r->nfaults);
	}
	if (o->minimize && m != FM_TRACE)
		minimize(s, m, mask, out);
	fflush(out);
}

/*
 * What the handlers that change registers do at each instruction: flip
 * some flags (DF included; never at a counted loop's branch back, which
 * must see its own count's flags) and maybe one register the sequence
 * holds nothing in between two instructions (s->mod_regs).
 */
static void set_mods(const struct fuzz_seq *s)
{
#define W(f) (int8_t)(offsetof(struct pt_regs, f) / sizeof(unsigned long))
	static const int8_t word[16] = {
		W(ax), W(cx), W(dx), W(bx), W(sp), W(bp), W(si), W(di),
		W(r8), W(r9), W(r10), W(r11), W(r12), W(r13), W(r14), W(r15),
	};
#undef W
	static const unsigned long fl[] = { 0x1, 0x4, 0x10, 0x40, 0x80, 0x400, 0x800 };
	struct fuzz_rng rng;

	fuzz_rng_seed(&rng, s->seed ^ 0x30d);
	for (unsigned int i = 0; i < s->n; i++) {
		fuzz_mod_flags[i] = 0;
		for (unsigned int k = 0; !(s->insn[i].kind & FUZZ_IK_LOOPBACK) && k < 7; k++)
			if (fuzz_rng_chance(&rng, 25))
				fuzz_mod_flags[i] |= fl[k];
		fuzz_mod_word[i] = -1;
		if (s->mod_regs && fuzz_rng_chance(&rng, 50)) {
			int r;

			do
				r = (int)fuzz_rng_below(&rng, 16);
			while (!(s->mod_regs & (1u << r)));
			fuzz_mod_word[i] = word[r];
			fuzz_mod_xor[i] = fuzz_rng_next(&rng) | 1;
		}
	}
}

int fuzz_case(const struct fuzz_seq *s, const struct fuzz_opts *o, struct fuzz_stats *st)
{
	uint8_t all[FUZZ_MAX_INSN], masks[FM_COUNT][FUZZ_MAX_INSN];
	struct fuzz_diff d;
	unsigned int want = 0;
	int bad = 0;

	if (write_arena(s)) {
		fprintf(stderr, "fuzz: cannot write the arena: %s\n", strerror(errno));
		return 1;
	}
	/* The modes to run, and those they are compared with. */
	for (int m = FM_TRACE + 1; m < FM_COUNT; m++) {
		if ((o->only_modes && !(o->only_modes & (1u << m))) ||
		    (o->rotate > 1 && m % o->rotate != st->cases % o->rotate))
			continue;
		want |= 1u << m;
		if (modes[m].ref > FM_TRACE)
			want |= 1u << modes[m].ref;
	}
	memset(all, 0, sizeof(all));
	memset(all, 1, s->n);
	set_mods(s);
	st->cases++;
	for (int m = 0; m < FM_COUNT; m++) {
		const uint8_t *mask = all;

		if (m > FM_TRACE && !(want & (1u << m)))
			continue;
		if (modes[m].sparse) {
			sparse_mask(s, 0x5eed0000u + modes[m].sparse, masks[m]);
			mask = masks[m];
		}
		{
			struct timespec a, b;

			clock_gettime(CLOCK_MONOTONIC, &a);
			run_mode(s, (enum fuzz_mode)m, mask, &results[m]);
			clock_gettime(CLOCK_MONOTONIC, &b);
			st->mode_ns[m] += (unsigned long)((b.tv_sec - a.tv_sec) * 1000000000l +
							  (b.tv_nsec - a.tv_nsec));
		}
		st->runs++;
		if (m == FM_NATIVE) {
			if (!results[m].done) {
				/* the generator's fault, not the library's */
				fprintf(stderr, "fuzz: case %#lx does not run natively: %s\n",
					(unsigned long)s->seed, results[m].msg);
				print_case(s, NULL, -1, stderr);
				st->mismatches++;
				return 1;
			}
			st->faults += results[m].nfaults;
			continue;
		}
		if (check_mode(s, (enum fuzz_mode)m, &results[m],
			       modes[m].ref >= 0 ? &results[modes[m].ref] : NULL, &d)) {
			report(s, (enum fuzz_mode)m, mask, &d, o);
			st->mismatches++;
			bad++;
			if (m == FM_TRACE)
				return bad;	/* no reference: stop here */
		}
		if (m == FM_TRACE) {
			for (unsigned int k = 0; k < results[m].nrec; k++)
				st->insns += results[m].rec[k].idx != FUZZ_REC_EXIT;
			continue;
		}
		/* faults in a detour's copy past the probed instruction: the
		 * program's handler then resumes inside the optimized region */
		for (unsigned int k = 0; k < results[m].nfaults; k++) {
			int f = fuzz_insn_at(s, results[m].faults[k].regs.ip - (uintptr_t)fuzz_arena);

			for (int p = f - 1; f > 0 && p >= 0 &&
			     s->insn[p].off + 5 > s->insn[f].off; p--)
				st->faults_in_detour += results[m].optimized[p];
		}
		for (int w = 0; w < 5; w++)
			st->async[w] += results[m].async[w];
		st->hits += (unsigned long)results[m].nrec * results[m].iterations;
		st->probes += results[m].nprobed;
		st->optimized += results[m].noptimized;
		for (unsigned int i = 0; i < s->n; i++)
			st->refused += mask[i] && !results[m].probed[i];
		/* (with handlers that change registers, the path may differ) */
		for (unsigned int k = 0; !modes[m].modify && k < results[FM_TRACE].nrec; k++)
			st->probed_insns += (results[FM_TRACE].rec[k].idx != FUZZ_REC_EXIT) *
					    (unsigned long)results[m].iterations;
		if (o->verbose)
			fprintf(o->log ? o->log : stderr,
				"  %-10s probes %u optimized %u hits %u missed %lu runs %u\n",
				fuzz_mode_name[m], results[m].nprobed, results[m].noptimized,
				results[m].nrec, results[m].nmissed, results[m].iterations);
	}
	return bad;
}
