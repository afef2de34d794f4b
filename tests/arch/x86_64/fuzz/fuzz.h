/* SPDX-License-Identifier: MIT */
/*
 * fuzz.h - differential fuzzing of ukprobes' out-of-line execution and
 * detours: random valid x86-64 sequences (gen.c), run natively and with a
 * probe on their instructions (run.c), compared (compare.c).
 */
#ifndef FUZZ_H
#define FUZZ_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <ukprobes.h>

#include "layout.h"

#define FUZZ_MAX_INSN	600
#define FUZZ_MAX_REC	4096

/* ------------------------------------------------------------------------ */
/* The harness (harness.S)                                                   */
/* ------------------------------------------------------------------------ */

struct fuzz_state {
	uint64_t gpr[16];	/* rax rcx rdx rbx rsp rbp rsi rdi r8-r15 */
	uint64_t flags;
	uint32_t mxcsr, pad;
	uint64_t k[8];
	uint8_t pad2[ST_VEC - ST_K - 64];
	uint8_t vec[32][ST_VEC_STRIDE];
} __attribute__((aligned(64)));

extern uint8_t fuzz_arena[FUZZ_ARENA_SIZE];
extern uint8_t fuzz_scratch[FUZZ_SCRATCH_SIZE];
extern uint8_t fuzz_guard[FUZZ_GUARD_SIZE];
extern uint8_t fuzz_ripdata[FUZZ_RIPDATA_SIZE];
extern uint8_t fuzz_stack[FUZZ_STACK_BELOW + FUZZ_STACK_ABOVE];
extern struct fuzz_state fuzz_in, fuzz_out;
extern uint64_t fuzz_code;
extern int fuzz_avx512;
extern const char fuzz_exit[];
void fuzz_run(void);

/* The sequence's %rsp at entry ("E"). */
#define FUZZ_ENTRY_SP	((uintptr_t)fuzz_stack + FUZZ_STACK_BELOW)
/* The stack a run's result keeps: the red zone's worth of pushes and more
 * below E, and everything above. */
#define FUZZ_STACK_KEEP_BELOW	2048
#define FUZZ_STACK_KEEP		(FUZZ_STACK_KEEP_BELOW + FUZZ_STACK_ABOVE)

/* ------------------------------------------------------------------------ */
/* A generated case                                                          */
/* ------------------------------------------------------------------------ */

/* What the tracer must know about an instruction (fuzz_insn.kind). */
enum {
	FUZZ_IK_PUSHF = 1,	/* pushes the flags: TF must not show */
	FUZZ_IK_REPSTR = 2,	/* rep string: one trap per iteration */
	FUZZ_IK_LOOPBACK = 4,	/* a counted loop's branch back */
};

struct fuzz_insn {
	uint16_t off;
	uint8_t len;
	uint8_t kind;
	uint16_t block;		/* the generator's block it belongs to */
};

struct fuzz_seq {
	uint64_t seed;
	unsigned int n;
	size_t len;
	bool indirect_jmp;	/* the function has one: no multi-insn detour */
	int base_reg;		/* index in fuzz_state.gpr of the scratch base */
	uint16_t mod_regs;	/* registers a handler may change anywhere and
				 * leave the sequence valid (fuzz_state.gpr order) */
	struct fuzz_insn insn[FUZZ_MAX_INSN];
	uint8_t code[FUZZ_ARENA_SIZE];
	struct fuzz_state in;
	uint8_t scratch[FUZZ_SCRATCH_SIZE];
	uint8_t ripdata[FUZZ_RIPDATA_SIZE];
	uint8_t stack[FUZZ_STACK_KEEP];		/* from E - KEEP_BELOW */
};

/* CPU features the generator may use (cpu.c). */
struct fuzz_cpu {
	bool avx, avx2, fma, f16c, bmi1, bmi2, adx, lzcnt, popcnt, movbe;
	bool aes, pclmul, sse41, sse42, ssse3;
	bool avx512;		/* F + BW + VL + DQ, and the OS saves the state */
};
void fuzz_cpu_detect(struct fuzz_cpu *c);

/* gen.c: fill @s from @seed.  Returns 0, or -1 if no valid sequence came
 * out (the caller takes another seed). */
int fuzz_generate(uint64_t seed, const struct fuzz_cpu *cpu, struct fuzz_seq *s);
/* Disassembly, one instruction a line; @mark (may be NULL) flags lines. */
void fuzz_disasm(const struct fuzz_seq *s, FILE *out, const char *const *mark);
/* One instruction's disassembly into @buf. */
void fuzz_disasm_insn(const struct fuzz_seq *s, unsigned int i, char *buf, size_t len);
/* Index of the instruction at arena offset @off, or -1. */
int fuzz_insn_at(const struct fuzz_seq *s, size_t off);

/* ------------------------------------------------------------------------ */
/* Running a case                                                            */
/* ------------------------------------------------------------------------ */

enum fuzz_mode {
	FM_NATIVE,	/* no probe */
	FM_TRACE,	/* no probe, TF single-step: the reference register trace */
	FM_BOOST,	/* optimization off, pre_handler on every instruction */
	FM_STEP,	/* optimization off, pre + post_handler on every instruction */
	FM_OPT_ALL,	/* optimization on, pre_handler on every instruction */
	FM_OPT_SPARSE,	/* optimization on, probes spaced so regions can form */
	FM_OPT_GPR,	/* the same with KPROBE_FLAG_GPR_ONLY (no xsave) */
	FM_OPT_EARLY,	/* spaced, run again and again while the optimizer works */
	FM_OPT_FLIP,	/* spaced, run again and again while a thread flips
			 * the optimization switch */
	/* Handlers that change registers (flags, and general registers the
	 * sequence can take anything in): compared with each other, not with
	 * the native run. */
	FM_MOD_BOOST,	/* every instruction, breakpoints: the reference */
	FM_MOD_STEP,	/* every instruction, breakpoints, a post handler too */
	FM_MOD_OPT,	/* every instruction, optimization on */
	FM_MOD_SBP,	/* spaced, breakpoints: the reference */
	FM_MOD_SOPT,	/* the same probes, optimization on */
	/* Another thread signals this one all the time; the program's handler
	 * looks at where it was interrupted. */
	FM_ASYNC_BOOST,	/* every instruction, breakpoints */
	FM_ASYNC_STEP,	/* every instruction, breakpoints, a post handler */
	FM_ASYNC_OPT,	/* spaced, optimized */
	FM_COUNT
};
extern const char *const fuzz_mode_name[FM_COUNT];

enum fuzz_async_where {
	FA_ORIG,	/* at an instruction of the sequence: all is well */
	FA_CODE,	/* elsewhere in the program's or a library's code */
	FA_ANON,	/* in anonymous code: a probe's slot or detour */
	FA_MID,		/* inside an instruction of the sequence: never right */
	FA_OTHER,	/* not sorted (past the first 64 of a run), or no code */
};

/* A handler's (or the tracer's) view of the registers at a hit. */
struct fuzz_rec {
	uint16_t idx;		/* instruction, or FUZZ_REC_EXIT */
	uint8_t post;
	struct pt_regs regs;
};
#define FUZZ_REC_EXIT	0xffff
#define FUZZ_REC_BAD	0xfffe	/* the trace ran at no instruction's start */
#define FUZZ_REC_FAULTED 2	/* fuzz_rec.post in the trace: the instruction
				 * faulted (no post handler expected) */

/* A fault the program's own signal handler saw (and skipped). */
struct fuzz_fault {
	int sig, code;
	uint64_t addr;		/* si_addr */
	struct pt_regs regs;	/* ip: the faulting instruction's */
};
#define FUZZ_MAX_FAULTS	64

/* What a run leaves for the parent (shared memory). */
struct fuzz_result {
	int done;		/* the run reached its end */
	char msg[200];		/* why not, when the child knows */
	struct fuzz_state out;
	uint8_t scratch[FUZZ_SCRATCH_SIZE];
	uint8_t ripdata[FUZZ_RIPDATA_SIZE];
	uint8_t stack[FUZZ_STACK_KEEP];
	unsigned int nrec;
	bool rec_overflow;
	unsigned int nfaults;
	struct fuzz_fault faults[FUZZ_MAX_FAULTS];
	unsigned long nmissed;
	unsigned int nprobed, noptimized;
	unsigned int iterations;	/* runs of the sequence (the last is kept) */
	/* Asynchronous signals, by where the program's handler found the
	 * thread (enum fuzz_async_where). */
	unsigned long async[5];
	uint64_t async_mid;		/* an ip inside an instruction of ours */
	uint8_t probed[FUZZ_MAX_INSN];
	uint8_t optimized[FUZZ_MAX_INSN];
	int16_t reg_err[FUZZ_MAX_INSN];
	struct fuzz_rec rec[FUZZ_MAX_REC];
};

/* handlers_gpr.c: the probe handlers (general registers only). */
extern struct fuzz_result *fuzz_cur_result;
extern struct kprobe fuzz_kprobes[FUZZ_MAX_INSN];
int fuzz_pre_handler(struct kprobe *p, struct pt_regs *regs);
/* The same, then changes the flags and a register as the tables say. */
int fuzz_mod_pre_handler(struct kprobe *p, struct pt_regs *regs);
extern unsigned long fuzz_mod_flags[FUZZ_MAX_INSN];
extern int8_t fuzz_mod_word[FUZZ_MAX_INSN];	/* pt_regs word, or -1 */
extern unsigned long fuzz_mod_xor[FUZZ_MAX_INSN];
void fuzz_post_handler(struct kprobe *p, struct pt_regs *regs, unsigned long flags);

struct fuzz_stats {
	unsigned long cases;
	unsigned long insns;		/* executed natively (trace entries) */
	unsigned long probed_insns;	/* executed under probes, all modes */
	unsigned long hits;		/* handler calls seen */
	unsigned long probes;		/* registered */
	unsigned long optimized;	/* of which jump-optimized */
	unsigned long refused;		/* registrations refused */
	unsigned long mismatches;
	unsigned long faults;		/* taken on purpose, natively */
	unsigned long faults_in_detour;	/* in a detour, past the probed insn */
	unsigned long async[5];		/* asynchronous signals, by where */
	unsigned long runs;
	unsigned long mode_ns[FM_COUNT];	/* wall time per mode (fork to exit) */
};

struct fuzz_opts {
	bool verbose;
	bool minimize;		/* look for the one probe that shows a mismatch */
	unsigned int only_modes;	/* bit mask of modes to run, 0: all */
	unsigned int rotate;		/* > 1: case k runs the probed modes m
					 * with m % rotate == k % rotate */
	FILE *log;
};

/* run.c: run every mode of @s and compare.  Returns the number of
 * mismatching modes (0: all agree). */
int fuzz_case(const struct fuzz_seq *s, const struct fuzz_opts *o, struct fuzz_stats *st);
/* Allocate the shared result areas and close the guard page (once,
 * before any case); fuzz_fini() opens it again. */
int fuzz_init(void);
void fuzz_fini(void);

/* compare.c */
struct fuzz_diff {
	char what[512];
	int insn;		/* the instruction it points at, or -1 */
};
/* The faults the program's handler saw in @b against those in @a. */
int fuzz_compare_faults(const struct fuzz_result *a, const struct fuzz_result *b,
			struct fuzz_diff *d);
/* Final state of @b against @a.  0 if equal. */
int fuzz_compare_final(const struct fuzz_seq *s, const struct fuzz_result *a,
		       const struct fuzz_result *b, struct fuzz_diff *d);
/* The pre handler records of two runs, which must be the same. */
int fuzz_compare_pre(const struct fuzz_result *a, const struct fuzz_result *b,
		     struct fuzz_diff *d);
/* Handler records of @r against the trace @t.  0 if consistent. */
int fuzz_compare_records(const struct fuzz_seq *s, const struct fuzz_result *t,
			 const struct fuzz_result *r, bool post, struct fuzz_diff *d);

/* A small, fast PRNG (splitmix64 seeding xoshiro256**). */
struct fuzz_rng {
	uint64_t s[4];
};
void fuzz_rng_seed(struct fuzz_rng *r, uint64_t seed);
uint64_t fuzz_rng_next(struct fuzz_rng *r);
static inline unsigned int fuzz_rng_below(struct fuzz_rng *r, unsigned int n)
{
	return n ? (unsigned int)(fuzz_rng_next(r) % n) : 0;
}
static inline bool fuzz_rng_chance(struct fuzz_rng *r, unsigned int percent)
{
	return fuzz_rng_below(r, 100) < percent;
}

#endif
