// SPDX-License-Identifier: MIT
/*
 * run.c - running one case in every mode, each in a child process of its
 * own (child.c; a crash or a hang is a finding, not the end of the
 * fuzzer), comparing each with its reference (modes.c), and telling what
 * differs: a reproducer line, the disassembly, the fewest probes that
 * still show it.
 *
 * The parent never registers a probe: each child starts from the clean
 * library state fork() gives it.  The parent writes the sequence into
 * fuzz_arena (RW, write, RX: never writable and executable at once) before
 * forking; the children set up the data and run.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run.h"

#define CHILD_TIMEOUT	20	/* seconds */

struct fuzz_result *fuzz_results;

int fuzz_init(void)
{
	void *p = mmap(NULL, sizeof(struct fuzz_result) * (FM_COUNT + 2),
		       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -errno;
	fuzz_results = p;
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
		fuzz_child(s, m, mask, r);
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
	const struct fuzz_result *tr = &fuzz_results[FM_TRACE];

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
	if (fuzz_modes[m].trace && tr->done && fuzz_compare_records(s, tr, r, fuzz_modes[m].post, d))
		return 1;
	if (!fuzz_modes[m].trace && ref && m != FM_TRACE && fuzz_compare_pre(ref, r, d))
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
	const struct fuzz_result *ref = fuzz_modes[m].ref >= 0 ? &fuzz_results[fuzz_modes[m].ref] : NULL;

	if (fuzz_modes[m].ref > FM_TRACE) {
		run_mode(s, (enum fuzz_mode)fuzz_modes[m].ref, mask, &fuzz_results[SPARE_REF]);
		ref = &fuzz_results[SPARE_REF];
	}
	run_mode(s, m, mask, &fuzz_results[SPARE]);
	return check_mode(s, m, &fuzz_results[SPARE], ref, d);
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
		print_case(s, &fuzz_results[m], d->insn, out);
	if (o->verbose) {
		const struct fuzz_result *t = &fuzz_results[FM_TRACE], *r = &fuzz_results[m];

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
		if (fuzz_modes[m].ref > FM_TRACE)
			want |= 1u << fuzz_modes[m].ref;
	}
	memset(all, 0, sizeof(all));
	memset(all, 1, s->n);
	set_mods(s);
	st->cases++;
	for (int m = 0; m < FM_COUNT; m++) {
		const uint8_t *mask = all;

		if (m > FM_TRACE && !(want & (1u << m)))
			continue;
		if (fuzz_modes[m].sparse) {
			sparse_mask(s, 0x5eed0000u + fuzz_modes[m].sparse, masks[m]);
			mask = masks[m];
		}
		{
			struct timespec a, b;

			clock_gettime(CLOCK_MONOTONIC, &a);
			run_mode(s, (enum fuzz_mode)m, mask, &fuzz_results[m]);
			clock_gettime(CLOCK_MONOTONIC, &b);
			st->mode_ns[m] += (unsigned long)((b.tv_sec - a.tv_sec) * 1000000000l +
							  (b.tv_nsec - a.tv_nsec));
		}
		st->runs++;
		if (m == FM_NATIVE) {
			if (!fuzz_results[m].done) {
				/* the generator's fault, not the library's */
				fprintf(stderr, "fuzz: case %#lx does not run natively: %s\n",
					(unsigned long)s->seed, fuzz_results[m].msg);
				print_case(s, NULL, -1, stderr);
				st->mismatches++;
				return 1;
			}
			st->faults += fuzz_results[m].nfaults;
			continue;
		}
		if (check_mode(s, (enum fuzz_mode)m, &fuzz_results[m],
			       fuzz_modes[m].ref >= 0 ? &fuzz_results[fuzz_modes[m].ref] : NULL, &d)) {
			report(s, (enum fuzz_mode)m, mask, &d, o);
			st->mismatches++;
			bad++;
			if (m == FM_TRACE)
				return bad;	/* no reference: stop here */
		}
		if (m == FM_TRACE) {
			for (unsigned int k = 0; k < fuzz_results[m].nrec; k++)
				st->insns += fuzz_results[m].rec[k].idx != FUZZ_REC_EXIT;
			continue;
		}
		/* faults in a detour's copy past the probed instruction: the
		 * program's handler then resumes inside the optimized region */
		for (unsigned int k = 0; k < fuzz_results[m].nfaults; k++) {
			int f = fuzz_insn_at(s, fuzz_results[m].faults[k].regs.ip - (uintptr_t)fuzz_arena);

			for (int p = f - 1; f > 0 && p >= 0 &&
			     s->insn[p].off + 5 > s->insn[f].off; p--)
				st->faults_in_detour += fuzz_results[m].optimized[p];
		}
		for (int w = 0; w < 5; w++)
			st->async[w] += fuzz_results[m].async[w];
		st->hits += (unsigned long)fuzz_results[m].nrec * fuzz_results[m].iterations;
		st->probes += fuzz_results[m].nprobed;
		st->optimized += fuzz_results[m].noptimized;
		for (unsigned int i = 0; i < s->n; i++)
			st->refused += mask[i] && !fuzz_results[m].probed[i];
		/* (with handlers that change registers, the path may differ) */
		for (unsigned int k = 0; !fuzz_modes[m].modify && k < fuzz_results[FM_TRACE].nrec; k++)
			st->probed_insns += (fuzz_results[FM_TRACE].rec[k].idx != FUZZ_REC_EXIT) *
					    (unsigned long)fuzz_results[m].iterations;
		if (o->verbose)
			fprintf(o->log ? o->log : stderr,
				"  %-10s probes %u optimized %u hits %u missed %lu runs %u\n",
				fuzz_mode_name[m], fuzz_results[m].nprobed, fuzz_results[m].noptimized,
				fuzz_results[m].nrec, fuzz_results[m].nmissed, fuzz_results[m].iterations);
	}
	return bad;
}
