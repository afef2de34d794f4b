// SPDX-License-Identifier: MIT
/*
 * child.c - what runs in the child process of one run of a case: the data
 * set up, the probes registered as the mode says (or the single-step
 * tracer, or nothing), the program's own fault handler, the threads some
 * modes race against the sequence (the optimizer's waiter, the switch
 * flipper, the signal sender), and the result written to shared memory.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "run.h"

#define X86_TF	0x100ul

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
		kp->pre_handler = fuzz_modes[m].modify ? fuzz_mod_pre_handler : fuzz_pre_handler;
		if (fuzz_modes[m].post)
			kp->post_handler = fuzz_post_handler;
		if (fuzz_modes[m].gpr)
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
		if (fuzz_compare_final(s, &fuzz_results[FM_NATIVE], r, &d) ||
		    fuzz_compare_faults(&fuzz_results[FM_NATIVE], r, &d) ||
		    fuzz_compare_records(s, &fuzz_results[FM_TRACE], r, fuzz_modes[m].post, &d))
			break;
		/* with @until: go on until it is set, and a few runs more */
		if (until && (!atomic_load(until) || ++after < 3) && now_ns() - t0 < 10 * ns)
			continue;
	} while (now_ns() - t0 < ns && r->iterations < 2000);
}

static void child_probed(const struct fuzz_seq *s, enum fuzz_mode m, const uint8_t *mask,
			 struct fuzz_result *r)
{
	bool opt = fuzz_modes[m].opt;
	pthread_t th;

	ukprobes_set_optimization(opt);
	fuzz_cur_result = r;
	/* The program's fault handler, installed before the probes (ukprobes
	 * then chains to it), or after, in one mode (ukprobes must notice). */
	if (fuzz_modes[m].iterate != IT_EARLY)
		install_prog_fault(s, r);
	register_all(s, m, mask, r);
	if (fuzz_modes[m].iterate == IT_EARLY)
		install_prog_fault(s, r);
	if (fuzz_modes[m].iterate == IT_EARLY) {
		atomic_store(&opt_done, false);
		if (pthread_create(&th, NULL, opt_waiter, NULL)) {
			snprintf(r->msg, sizeof(r->msg), "pthread_create failed");
			return;
		}
		child_iterate(s, m, r, 20 * 1000000ll, &opt_done);
		pthread_join(th, NULL);
	} else if (fuzz_modes[m].iterate == IT_FLIP) {
		atomic_store(&flip_stop, false);
		if (pthread_create(&th, NULL, flipper, NULL)) {
			snprintf(r->msg, sizeof(r->msg), "pthread_create failed");
			return;
		}
		child_iterate(s, m, r, 30 * 1000000ll, NULL);
		atomic_store(&flip_stop, true);
		pthread_join(th, NULL);
	} else if (fuzz_modes[m].iterate == IT_ASYNC) {
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

void fuzz_child(const struct fuzz_seq *s, enum fuzz_mode m, const uint8_t *mask,
		struct fuzz_result *r)
{
	child_prepare(s);
	if (m == FM_NATIVE) {
		install_prog_fault(s, r);
		fuzz_run();
	} else if (m == FM_TRACE) {
		install_prog_fault(s, r);
		child_trace(s, r);
	} else {
		child_probed(s, m, mask, r);
	}
	if (!r->done)
		child_collect(r);
}
