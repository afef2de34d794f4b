/* SPDX-License-Identifier: MIT */
/*
 * insn_kinds.c - a probe on each kind of instruction (insn_kinds.S) must not
 * change what the program computes, on both execution paths:
 *   - single-step path: a probe with a post_handler; the post handler sees
 *     regs->ip == the next instruction (or the branch target when taken) and
 *     the stack pointer as the instruction left it;
 *   - boost path: a probe with a pre_handler only.
 * Hit counts are exact, and the code bytes are restored after unregister.
 * The handlers clobber the vector registers (memset of a page) to check that
 * the program's SSE/AVX state survives a hit.
 */
#include "../support/ukp_test.h"
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <ukprobes.h>
#include "scn_util.h"

#define IK_DECL(n) extern char scn_ik_##n[], scn_ik_##n##_at[], scn_ik_##n##_next[]
#define IK_DECL_T(n) IK_DECL(n); extern char scn_ik_##n##_target[]

IK_DECL(ripload);
IK_DECL(ripstore);
IK_DECL(lea);
IK_DECL_T(call);
IK_DECL(ret);
IK_DECL_T(jcc8);
IK_DECL_T(jcc32);
IK_DECL_T(jmp8);
IK_DECL_T(jmp32);
IK_DECL_T(loop);
IK_DECL_T(jrcxz);
extern char scn_ik_pushpop[], scn_ik_push_at[], scn_ik_push_next[],
	scn_ik_pop_at[], scn_ik_pop_next[];
IK_DECL(pushmem);
IK_DECL(pushf);
IK_DECL(popf);
IK_DECL(sse);
IK_DECL(avx);
IK_DECL(syscall);
extern char scn_ik_helper[];
IK_DECL(callreg);
IK_DECL(callmem);
IK_DECL(jtab);
extern char scn_ik_jtab_c0[], scn_ik_jtab_c2[];
IK_DECL_T(jmpmem);
IK_DECL(cmov);
IK_DECL(repmovs);
IK_DECL(rspload);
IK_DECL(rspstore);
IK_DECL(redzone);
IK_DECL(leave);
IK_DECL(ripimm);
IK_DECL(ripcmp);
IK_DECL(xadd);
IK_DECL(vexrip);
IK_DECL_T(callpop);
IK_DECL(repret);
IK_DECL(bndret);
IK_DECL_T(notrack);
IK_DECL_T(bndjmp);
IK_DECL(xchgsp);
extern unsigned long scn_ik_data, scn_ik_store;
extern unsigned char scn_ik_src[], scn_ik_dst[];

typedef long (*ik_fn)(long);

struct ik_case {
	const char *name;
	void *fn;
	void *at;		/* probed instruction */
	void *next;		/* fall-through ip, NULL when there is none */
	void *target;		/* branch target, NULL when none */
	int is_ret;		/* target = the return address on the stack */
	int check_sp;		/* check the post handler's sp ... */
	long sp_delta;		/* ... == pre's sp + sp_delta */
	int push_ret;		/* a call: *sp after it == next */
	long arg;
	unsigned long taken;	/* per call: post ips == target */
	unsigned long fall;	/* per call: post ips == next */
	int has_expect;
	long expect;		/* result without probes, when known */
};

/* Handler state (one thread). */
static const struct ik_case *cur;
static volatile unsigned long pre_hits, post_hits, taken_hits, fall_hits;
static volatile unsigned long bad_pre_ip, bad_post_ip, bad_sp, bad_retaddr;
static volatile unsigned long last_bad_ip, tf_seen;
static unsigned long pre_sp, pre_retaddr;
static volatile unsigned char clobber[4096];

static void clobber_vectors(void)
{
	/* glibc's memset uses the widest vector registers the CPU has. */
	memset((void *)clobber, (int)pre_hits, sizeof(clobber));
}

static int ik_pre(struct kprobe *p, struct pt_regs *regs)
{
	pre_hits++;
	if (regs->ip != (unsigned long)p->addr) {
		bad_pre_ip++;
		last_bad_ip = regs->ip;
	}
	if (regs->flags & 0x100)
		tf_seen++;
	pre_sp = regs->sp;
	pre_retaddr = *(unsigned long *)regs->sp;
	clobber_vectors();
	return 0;
}

static void ik_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	post_hits++;
	if (regs->flags & 0x100)
		tf_seen++;
	if (cur->is_ret && regs->ip == pre_retaddr)
		taken_hits++;
	else if (cur->target && regs->ip == (unsigned long)cur->target)
		taken_hits++;
	else if (cur->next && regs->ip == (unsigned long)cur->next)
		fall_hits++;
	else {
		bad_post_ip++;
		last_bad_ip = regs->ip;
	}
	if (cur->check_sp && regs->sp != pre_sp + (unsigned long)cur->sp_delta)
		bad_sp++;
	if (cur->push_ret && *(unsigned long *)regs->sp != (unsigned long)cur->next)
		bad_retaddr++;
	clobber_vectors();
}

static void reset_counts(void)
{
	pre_hits = post_hits = taken_hits = fall_hits = 0;
	bad_pre_ip = bad_post_ip = bad_sp = bad_retaddr = 0;
	last_bad_ip = 0;
	tf_seen = 0;
}

#define NCALLS 2000

static void run_path(const struct ik_case *c, long r0, int with_post)
{
	ik_fn volatile fn = (ik_fn)c->fn;
	unsigned long per_call = c->taken + c->fall;
	unsigned char orig[16];
	struct kprobe kp;

	memcpy(orig, c->at, sizeof(orig));
	memset(&kp, 0, sizeof(kp));
	kp.addr = (kprobe_opcode_t *)c->at;
	kp.pre_handler = ik_pre;
	if (with_post)
		kp.post_handler = ik_post;

	reset_counts();
	cur = c;
	int ret = register_kprobe(&kp);
	cr_assert_eq(ret, 0, "%s (%s): register_kprobe at %p = %d", c->name,
		     with_post ? "single-step" : "boost", c->at, ret);
	cr_assert_eq((void *)kp.addr, c->at, "%s: p->addr %p, expected %p",
		     c->name, (void *)kp.addr, c->at);

	unsigned long wrong = 0;
	long first_wrong = 0;
	for (int i = 0; i < NCALLS; i++) {
		long r = fn(c->arg);
		if (r != r0 && wrong++ == 0)
			first_wrong = r;
	}
	unregister_kprobe(&kp);

	const char *path = with_post ? "single-step" : "boost";
	cr_expect_eq(wrong, 0, "%s (%s): %lu of %d results differ (got %#lx, expected %#lx)",
		     c->name, path, wrong, NCALLS, first_wrong, r0);
	cr_expect_eq(pre_hits, per_call * NCALLS, "%s (%s): pre hits %lu, expected %lu",
		     c->name, path, pre_hits, per_call * NCALLS);
	cr_expect_eq(bad_pre_ip, 0, "%s (%s): pre_handler saw regs->ip %#lx != p->addr %p (%lu times)",
		     c->name, path, last_bad_ip, (void *)kp.addr, bad_pre_ip);
	cr_expect_eq(kp.nmissed, 0, "%s (%s): nmissed %lu", c->name, path, kp.nmissed);
	cr_expect_eq(tf_seen, 0, "%s (%s): handlers saw TF set in regs->flags %lu times",
		     c->name, path, tf_seen);
	if (with_post) {
		cr_expect_eq(post_hits, per_call * NCALLS, "%s: post hits %lu, expected %lu",
			     c->name, post_hits, per_call * NCALLS);
		cr_expect_eq(bad_post_ip, 0,
			     "%s: post_handler saw regs->ip %#lx (next %p, target %p) %lu times",
			     c->name, last_bad_ip, c->next, c->target, bad_post_ip);
		cr_expect_eq(taken_hits, c->taken * NCALLS,
			     "%s: post ip == target %lu times, expected %lu",
			     c->name, taken_hits, c->taken * NCALLS);
		cr_expect_eq(fall_hits, c->fall * NCALLS,
			     "%s: post ip == next %lu times, expected %lu",
			     c->name, fall_hits, c->fall * NCALLS);
		cr_expect_eq(bad_sp, 0, "%s: post_handler's sp != pre sp %+ld (%lu times)",
			     c->name, c->sp_delta, bad_sp);
		cr_expect_eq(bad_retaddr, 0,
			     "%s: after the call, *sp != the original return address %p (%lu times)",
			     c->name, c->next, bad_retaddr);
	}
	cr_expect_eq(memcmp(orig, c->at, sizeof(orig)), 0,
		     "%s (%s): code bytes not restored after unregister", c->name, path);
}

static void run_case(const struct ik_case *c)
{
	ik_fn volatile fn = (ik_fn)c->fn;
	long r0 = fn(c->arg);

	if (c->has_expect)
		cr_assert_eq(r0, c->expect, "%s: unprobed result %#lx, expected %#lx (test bug)",
			     c->name, r0, c->expect);
	run_path(c, r0, 1);
	run_path(c, r0, 0);
	/* Once more without probes: the probe left nothing behind. */
	cr_expect_eq(fn(c->arg), r0, "%s: result after unregister differs", c->name);
}

/* A non-branch instruction: post ip == next, sp unchanged unless said. */
#define PLAIN(n, a, delta, ...) ((struct ik_case){ .name = #n, .fn = scn_ik_##n, \
	.at = scn_ik_##n##_at, .next = scn_ik_##n##_next, .check_sp = 1,          \
	.sp_delta = (delta), .arg = (a), .fall = 1, __VA_ARGS__ })

Test(insn_kinds, rip_relative_load, .timeout = 30)
{
	struct ik_case c = PLAIN(ripload, 5, 0, .has_expect = 1,
				 .expect = (long)(0x1122334455667788UL + 5));
	run_case(&c);
}

Test(insn_kinds, rip_relative_store, .timeout = 30)
{
	struct ik_case c = PLAIN(ripstore, 41, 0, .has_expect = 1, .expect = 84);
	scn_ik_store = 0;
	run_case(&c);
	cr_expect_eq(scn_ik_store, 42);
}

Test(insn_kinds, rip_relative_lea, .timeout = 30)
{
	struct ik_case c = PLAIN(lea, 3, 0, .has_expect = 1,
				 .expect = (long)&scn_ik_data + 3);
	run_case(&c);
}

Test(insn_kinds, call_rel32, .timeout = 30)
{
	struct ik_case c = { .name = "call", .fn = scn_ik_call, .at = scn_ik_call_at,
		.next = scn_ik_call_next, .target = scn_ik_call_target, .check_sp = 1,
		.sp_delta = -8, .push_ret = 1, .arg = 10, .taken = 1,
		.has_expect = 1, .expect = 27 };
	run_case(&c);
}

Test(insn_kinds, ret, .timeout = 30)
{
	struct ik_case c = { .name = "ret", .fn = scn_ik_ret, .at = scn_ik_ret_at,
		.is_ret = 1, .check_sp = 1, .sp_delta = 8, .arg = 4, .taken = 1,
		.has_expect = 1, .expect = 7 };
	run_case(&c);
}

#define BRANCH(n, a, tk, res) ((struct ik_case){ .name = #n, .fn = scn_ik_##n, \
	.at = scn_ik_##n##_at, .next = scn_ik_##n##_next, .target = scn_ik_##n##_target, \
	.check_sp = 1, .arg = (a), .taken = (tk), .fall = !(tk), .has_expect = 1,     \
	.expect = (res) })

Test(insn_kinds, jcc_rel8_taken, .timeout = 30)
{
	struct ik_case c = BRANCH(jcc8, 0, 1, 100);
	cr_assert_eq(scn_ik_jcc8_next - scn_ik_jcc8_at, 2, "jcc8 is not the short form");
	run_case(&c);
}

Test(insn_kinds, jcc_rel8_not_taken, .timeout = 30)
{
	struct ik_case c = BRANCH(jcc8, 1, 0, 200);
	run_case(&c);
}

Test(insn_kinds, jcc_rel32_taken, .timeout = 30)
{
	struct ik_case c = BRANCH(jcc32, 0, 1, 300);
	cr_assert_eq(scn_ik_jcc32_next - scn_ik_jcc32_at, 6, "jcc32 is not the near form");
	run_case(&c);
}

Test(insn_kinds, jcc_rel32_not_taken, .timeout = 30)
{
	struct ik_case c = BRANCH(jcc32, 1, 0, 400);
	run_case(&c);
}

Test(insn_kinds, jmp_rel8, .timeout = 30)
{
	struct ik_case c = BRANCH(jmp8, 9, 1, 14);
	cr_assert_eq(scn_ik_jmp8_next - scn_ik_jmp8_at, 2, "jmp8 is not the short form");
	run_case(&c);
}

Test(insn_kinds, jmp_rel32, .timeout = 30)
{
	struct ik_case c = BRANCH(jmp32, 9, 1, 15);
	cr_assert_eq(scn_ik_jmp32_next - scn_ik_jmp32_at, 5, "jmp32 is not the near form");
	run_case(&c);
}

Test(insn_kinds, loop, .timeout = 30)
{
	/* 5 hits per call: taken 4 times, falls through once. */
	struct ik_case c = { .name = "loop", .fn = scn_ik_loop, .at = scn_ik_loop_at,
		.next = scn_ik_loop_next, .target = scn_ik_loop_target, .check_sp = 1,
		.arg = 5, .taken = 4, .fall = 1, .has_expect = 1, .expect = 15 << 8 };
	run_case(&c);
}

Test(insn_kinds, jrcxz_taken, .timeout = 30)
{
	struct ik_case c = BRANCH(jrcxz, 0, 1, 11);
	run_case(&c);
}

Test(insn_kinds, jrcxz_not_taken, .timeout = 30)
{
	struct ik_case c = BRANCH(jrcxz, 3, 0, 22);
	run_case(&c);
}

Test(insn_kinds, push, .timeout = 30)
{
	struct ik_case c = { .name = "push", .fn = scn_ik_pushpop, .at = scn_ik_push_at,
		.next = scn_ik_push_next, .check_sp = 1, .sp_delta = -8, .arg = 20,
		.fall = 1, .has_expect = 1, .expect = 49 };
	run_case(&c);
}

Test(insn_kinds, pop, .timeout = 30)
{
	struct ik_case c = { .name = "pop", .fn = scn_ik_pushpop, .at = scn_ik_pop_at,
		.next = scn_ik_pop_next, .check_sp = 1, .sp_delta = 8, .arg = 20,
		.fall = 1, .has_expect = 1, .expect = 49 };
	run_case(&c);
}

Test(insn_kinds, push_rip_relative, .timeout = 30)
{
	struct ik_case c = PLAIN(pushmem, 1, -8, .has_expect = 1,
				 .expect = (long)(0x1122334455667788UL + 1));
	run_case(&c);
}

Test(insn_kinds, pushf_less, .timeout = 30)
{
	/* cmp $5,%rdi with rdi = 2: CF SF set (and AF, PF as computed). */
	struct ik_case c = PLAIN(pushf, 2, -8);
	ik_fn volatile fn = (ik_fn)scn_ik_pushf;
	long r = fn(2);
	cr_assert(r & 0x1, "CF expected in %#lx", r);
	cr_assert(!(r & 0x100), "TF set in %#lx", r);
	run_case(&c);
}

Test(insn_kinds, pushf_equal, .timeout = 30)
{
	struct ik_case c = PLAIN(pushf, 5, -8);
	ik_fn volatile fn = (ik_fn)scn_ik_pushf;
	cr_assert(fn(5) & 0x40, "ZF expected");
	run_case(&c);
}

Test(insn_kinds, popf_all_set, .timeout = 30)
{
	/* CF PF AF ZF SF OF set, TF/DF/IF not touched. */
	long in = 0x8d5 | 0x2;
	struct ik_case c = PLAIN(popf, in, 8, .has_expect = 1,
				 .expect = 0xf | (0x8d5L << 8));
	run_case(&c);
}

Test(insn_kinds, popf_all_clear, .timeout = 30)
{
	struct ik_case c = PLAIN(popf, 0x2, 8, .has_expect = 1, .expect = 0);
	run_case(&c);
}

Test(insn_kinds, sse_rip_relative_load, .timeout = 30)
{
	struct ik_case c = PLAIN(sse, 1, 0, .has_expect = 1,
				 .expect = (long)((0x0102030405060708UL ^ 0x1020304050607080UL) + 1));
	run_case(&c);
}

Test(insn_kinds, avx2_vpaddd, .timeout = 30)
{
	if (!__builtin_cpu_supports("avx2"))
		cr_skip_test("the CPU has no AVX2");
	/* sum_{i=0..7} (100 + i + 1) * (i + 1) */
	long expect = 0;
	for (int i = 0; i < 8; i++)
		expect += (100 + i + 1) * (i + 1);
	struct ik_case c = PLAIN(avx, 100, 0, .has_expect = 1, .expect = expect);
	run_case(&c);
}

Test(insn_kinds, syscall, .timeout = 30)
{
	/* getpid through the probed syscall; %rcx == the next instruction. */
	struct ik_case c = PLAIN(syscall, 0, 0, .has_expect = 1, .expect = getpid());
	run_case(&c);
}

Test(insn_kinds, call_indirect_register, .timeout = 30)
{
	struct ik_case c = { .name = "callreg", .fn = scn_ik_callreg, .at = scn_ik_callreg_at,
		.next = scn_ik_callreg_next, .target = scn_ik_helper, .check_sp = 1,
		.sp_delta = -8, .push_ret = 1, .arg = 10, .taken = 1,
		.has_expect = 1, .expect = 27 };
	run_case(&c);
}

Test(insn_kinds, call_indirect_rip_relative, .timeout = 30)
{
	struct ik_case c = { .name = "callmem", .fn = scn_ik_callmem, .at = scn_ik_callmem_at,
		.next = scn_ik_callmem_next, .target = scn_ik_helper, .check_sp = 1,
		.sp_delta = -8, .push_ret = 1, .arg = 10, .taken = 1,
		.has_expect = 1, .expect = 27 };
	run_case(&c);
}

Test(insn_kinds, jmp_indirect_jump_table, .timeout = 30)
{
	struct ik_case c = { .name = "jtab", .fn = scn_ik_jtab, .at = scn_ik_jtab_at,
		.target = scn_ik_jtab_c2, .check_sp = 1, .arg = 2, .taken = 1,
		.has_expect = 1, .expect = 1002 };
	run_case(&c);
	c.arg = 4;
	c.target = scn_ik_jtab_c0;
	c.expect = 1000;
	run_case(&c);
}

Test(insn_kinds, jmp_indirect_rip_relative, .timeout = 30)
{
	struct ik_case c = BRANCH(jmpmem, 1, 1, 78);
	run_case(&c);
}

Test(insn_kinds, cmov_taken, .timeout = 30)
{
	struct ik_case c = PLAIN(cmov, 5, 0, .has_expect = 1, .expect = 2);
	run_case(&c);
}

Test(insn_kinds, cmov_not_taken, .timeout = 30)
{
	struct ik_case c = PLAIN(cmov, 15, 0, .has_expect = 1, .expect = 1);
	run_case(&c);
}

Test(insn_kinds, rep_movsb, .timeout = 30)
{
	struct ik_case c = PLAIN(repmovs, 100, 0, .has_expect = 1, .expect = 100);
	memset(scn_ik_dst, 0, 128);
	run_case(&c);
	cr_expect_eq(memcmp(scn_ik_dst, scn_ik_src, 100), 0, "rep movsb copied wrong bytes");
	cr_expect_eq(scn_ik_dst[100], 0, "rep movsb copied too much");
}

Test(insn_kinds, rsp_relative_load, .timeout = 30)
{
	struct ik_case c = PLAIN(rspload, 41, 0, .has_expect = 1, .expect = 42);
	run_case(&c);
}

Test(insn_kinds, rsp_relative_store, .timeout = 30)
{
	struct ik_case c = PLAIN(rspstore, 39, 0, .has_expect = 1, .expect = 42);
	run_case(&c);
}

Test(insn_kinds, red_zone_preserved, .timeout = 30)
{
	struct ik_case c = PLAIN(redzone, 1000, 0, .has_expect = 1,
				 .expect = 17 * 1000 + 135);
	run_case(&c);
}

Test(insn_kinds, leave, .timeout = 30)
{
	/* sp after leave is the frame's rbp + 8: not checked. */
	struct ik_case c = { .name = "leave", .fn = scn_ik_leave, .at = scn_ik_leave_at,
		.next = scn_ik_leave_next, .arg = 40, .fall = 1, .has_expect = 1,
		.expect = 42 };
	run_case(&c);
}

/* The same probe placed by symbol name and offset lands on the label. */
Test(insn_kinds, symbol_plus_offset, .timeout = 30)
{
	struct kprobe kp = { .symbol_name = "scn_ik_ripload",
			     .offset = (unsigned int)(scn_ik_ripload_at - scn_ik_ripload),
			     .pre_handler = ik_pre, .post_handler = ik_post };
	struct ik_case c = PLAIN(ripload, 5, 0);
	ik_fn volatile fn = (ik_fn)scn_ik_ripload;

	cur = &c;
	reset_counts();
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_eq((void *)kp.addr, (void *)scn_ik_ripload_at);
	cr_expect_eq(fn(5), (long)(0x1122334455667788UL + 5));
	unregister_kprobe(&kp);
	cr_expect_eq(pre_hits, 1);
	cr_expect_eq(fall_hits, 1);
}

/* --------------------------------------------------------------------- */
/* More encodings that real code has                                     */
/* --------------------------------------------------------------------- */

Test(insn_kinds, rip_relative_with_immediate_store, .timeout = 30)
{
	/* the immediate after the displacement: a classic fix-up bug */
	struct ik_case c = PLAIN(ripimm, 1, 0, .has_expect = 1, .expect = 0x55667788 + 1);
	run_case(&c);
}

Test(insn_kinds, rip_relative_with_immediate_cmp, .timeout = 30)
{
	struct ik_case c = PLAIN(ripcmp, 10, 0, .has_expect = 1, .expect = 11);
	run_case(&c);
}

Test(insn_kinds, lock_xadd_rip_relative, .timeout = 30)
{
	struct ik_case c = PLAIN(xadd, 5, 0, .has_expect = 1, .expect = (100L << 16) + 105);
	run_case(&c);
}

Test(insn_kinds, avx2_vex_rip_relative_load, .timeout = 30)
{
	if (!__builtin_cpu_supports("avx2"))
		cr_skip_test("the CPU has no AVX2");
	struct ik_case c = PLAIN(vexrip, 1, 0, .has_expect = 1,
				 .expect = ((6L | 8L << 32) + (10L | 12L << 32)) + 1);
	run_case(&c);
}

Test(insn_kinds, call_next_instruction_pop, .timeout = 30)
{
	struct ik_case c = { .name = "callpop", .fn = scn_ik_callpop, .at = scn_ik_callpop_at,
		.next = scn_ik_callpop_next, .target = scn_ik_callpop_target, .check_sp = 1,
		.sp_delta = -8, .push_ret = 1, .arg = 7, .taken = 1,
		.has_expect = 1, .expect = 7 };
	run_case(&c);
}

Test(insn_kinds, repz_ret, .timeout = 30)
{
	struct ik_case c = { .name = "repret", .fn = scn_ik_repret, .at = scn_ik_repret_at,
		.is_ret = 1, .check_sp = 1, .sp_delta = 8, .arg = 4, .taken = 1,
		.has_expect = 1, .expect = 8 };
	run_case(&c);
}

Test(insn_kinds, bnd_ret, .timeout = 30)
{
	struct ik_case c = { .name = "bndret", .fn = scn_ik_bndret, .at = scn_ik_bndret_at,
		.is_ret = 1, .check_sp = 1, .sp_delta = 8, .arg = 4, .taken = 1,
		.has_expect = 1, .expect = 9 };
	run_case(&c);
}

Test(insn_kinds, notrack_jmp_indirect, .timeout = 30)
{
	struct ik_case c = BRANCH(notrack, 2, 1, 10);
	run_case(&c);
}

Test(insn_kinds, bnd_jmp_rel8, .timeout = 30)
{
	struct ik_case c = BRANCH(bndjmp, 2, 1, 11);
	run_case(&c);
}

Test(insn_kinds, xchg_with_stack, .timeout = 30)
{
	struct ik_case c = PLAIN(xchgsp, 6, 0, .has_expect = 1, .expect = (6 << 8) + 3);
	run_case(&c);
}
