/* SPDX-License-Identifier: MIT */
/*
 * errors.c - registration errors, each with its exact errno (the kernel's),
 * and a failure leaves the process exactly as it was: code bytes, signal
 * dispositions (as the program and as the kernel see them), /proc/self/maps,
 * the list of probes.  A failed batch leaves nothing registered.
 */
#include "../support/ukp_test.h"
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ukprobes.h>
#include "scn_util.h"

extern char scn_err_ok[], scn_err_ok_movabs[], scn_err_ok_add[];
extern char scn_err_bad[], scn_err_bad_int3[], scn_err_bad_int80[],
	scn_err_bad_iret[], scn_err_bad_ljmp[], scn_err_bad_lcall[],
	scn_err_bad_xbegin[], scn_err_bad_hlt[], scn_err_bad_nop[];
extern char scn_err_black[], scn_err_black_1[], scn_err_black_end[];

NOKPROBE_SYMBOL(scn_err_black);

SCN_NOINLINE long scn_err_black_c(long x)
{
	__asm__ volatile("");
	return x + 1;
}
NOKPROBE_SYMBOL(scn_err_black_c);

SCN_NOINLINE long scn_err_target_a(long x)
{
	__asm__ volatile("");
	return x + 10;
}

SCN_NOINLINE long scn_err_target_b(long x)
{
	__asm__ volatile("");
	return x + 20;
}

static long (*volatile fa)(long) = scn_err_target_a;
static long (*volatile fb)(long) = scn_err_target_b;
static long (*volatile fok)(long) = (long (*)(long))scn_err_ok;

static volatile unsigned long hits;

static int count_pre(struct kprobe *p, struct pt_regs *regs)
{
	hits++;
	return 0;
}

static void count_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
}

/* Number of registered probes, from the listing. */
static int nprobes(void)
{
	char buf[4096] = { 0 };
	FILE *f = fmemopen(buf, sizeof(buf), "w");
	int n = ukprobes_print_list(f);
	fclose(f);
	int lines = scn_count_lines(buf, strlen(buf));
	cr_expect_eq(n, lines, "ukprobes_print_list returned %d for %d lines", n, lines);
	return lines;
}

/* One successful register + unregister, so that lazy state (symbol cache,
 * signal handlers, slot pages) exists before the snapshot. */
static void warm_up(void)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)scn_err_ok_add,
			     .pre_handler = count_pre, .post_handler = count_post };
	cr_assert_eq(register_kprobe(&kp), 0, "warm-up registration failed");
	cr_assert_eq(fok(1), (long)(0x1122334455667788UL + 1));
	unregister_kprobe(&kp);
	struct kprobe kp2 = { .symbol_name = "scn_err_target_a", .pre_handler = count_pre };
	cr_assert_eq(register_kprobe(&kp2), 0, "warm-up registration failed");
	fa(1);
	unregister_kprobe(&kp2);
	cr_assert_eq(hits, 2, "warm-up probes: %lu hits", hits);
	hits = 0;
}

static struct scn_snapshot snap;

static void snap_take(const void *extra)
{
	scn_snapshot_init(&snap);
	scn_snapshot_add_code(&snap, scn_err_ok, 32);
	scn_snapshot_add_code(&snap, scn_err_bad, 32);
	scn_snapshot_add_code(&snap, scn_err_black, 16);
	scn_snapshot_add_code(&snap, (void *)scn_err_target_a, 32);
	scn_snapshot_add_code(&snap, (void *)scn_err_target_b, 32);
	scn_snapshot_add_code(&snap, (void *)scn_err_black_c, 32);
	if (extra)
		scn_snapshot_add_code(&snap, extra, 32);
	scn_snapshot_take(&snap);
}

static void snap_check(const char *what)
{
	char why[512];
	int diff = scn_snapshot_compare(&snap, why, sizeof(why));
	cr_expect_eq(diff, 0, "%s: the failure changed the process: %s", what, why);
}

/* register_kprobe(kp) must fail with -err and change nothing. */
static void expect_fail(struct kprobe *kp, int err, const char *what)
{
	warm_up();
	snap_take(kp->addr);
	int ret = register_kprobe(kp);
	cr_expect_eq(ret, -err, "%s: register_kprobe returned %d, expected %d",
		     what, ret, -err);
	snap_check(what);
	cr_expect_eq(nprobes(), 0, "%s: a probe is listed after the failure", what);
	/* the valid functions have no probe on them */
	fa(1);
	fb(1);
	fok(1);
	cr_expect_eq(hits, 0, "%s: hits after the failure", what);
	if (ret == 0)
		unregister_kprobe(kp);
}

/* --------------------------------------------------------------------- */
/* -EINVAL: bad arguments                                                */
/* --------------------------------------------------------------------- */

Test(errors, both_addr_and_symbol, .timeout = 30)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)scn_err_ok,
			     .symbol_name = "scn_err_ok", .pre_handler = count_pre };
	expect_fail(&kp, EINVAL, "addr and symbol_name");
}

Test(errors, neither_addr_nor_symbol, .timeout = 30)
{
	struct kprobe kp = { .pre_handler = count_pre };
	expect_fail(&kp, EINVAL, "no addr, no symbol_name");
}

Test(errors, reregister_by_symbol_without_clearing_addr, .timeout = 30)
{
	/* The kernel keeps p->addr after unregister: registering the same
	 * struct by symbol_name again is "both set". */
	struct kprobe kp = { .symbol_name = "scn_err_target_a", .pre_handler = count_pre };
	cr_assert_eq(register_kprobe(&kp), 0);
	unregister_kprobe(&kp);
	cr_assert_eq((void *)kp.addr, (void *)scn_err_target_a,
		     "p->addr after unregister: %p", (void *)kp.addr);
	expect_fail(&kp, EINVAL, "symbol_name with the old addr still set");
	kp.addr = NULL;
	cr_expect_eq(register_kprobe(&kp), 0, "with addr cleared it registers");
	fa(1);
	cr_expect_eq(hits, 1);
	unregister_kprobe(&kp);
}

/* --------------------------------------------------------------------- */
/* -ENOENT: unknown symbols                                              */
/* --------------------------------------------------------------------- */

Test(errors, unknown_symbol, .timeout = 30)
{
	struct kprobe kp = { .symbol_name = "scn_no_such_symbol_xyzzy", .pre_handler = count_pre };
	expect_fail(&kp, ENOENT, "unknown symbol");
}

Test(errors, unknown_symbol_in_libc, .timeout = 30)
{
	struct kprobe kp = { .symbol_name = "libc.so.6:scn_no_such_symbol_xyzzy",
			     .pre_handler = count_pre };
	expect_fail(&kp, ENOENT, "unknown symbol in libc.so.6");
}

Test(errors, unknown_object, .timeout = 30)
{
	struct kprobe kp = { .symbol_name = "libscn_no_such_object.so.1:getpid",
			     .pre_handler = count_pre };
	expect_fail(&kp, ENOENT, "unknown object");
}

/* --------------------------------------------------------------------- */
/* -EINVAL: ukprobes itself and the blacklist                            */
/* --------------------------------------------------------------------- */

Test(errors, address_inside_ukprobes, .timeout = 30)
{
	void *fn = dlsym(RTLD_DEFAULT, "register_kprobe");
	cr_assert(fn);
	struct kprobe kp = { .addr = fn, .pre_handler = count_pre };
	expect_fail(&kp, EINVAL, "address of register_kprobe");
}

Test(errors, symbol_inside_ukprobes, .timeout = 30)
{
	struct kprobe kp = { .symbol_name = "unregister_kprobe", .pre_handler = count_pre };
	expect_fail(&kp, EINVAL, "symbol unregister_kprobe");
}

Test(errors, object_symbol_inside_ukprobes, .timeout = 30)
{
	struct kprobe kp = { .symbol_name = "libukprobes.so.0:enable_kprobe",
			     .pre_handler = count_pre };
	expect_fail(&kp, EINVAL, "libukprobes.so.0:enable_kprobe");
}

Test(errors, nokprobe_symbol_asm_by_symbol, .timeout = 30)
{
	struct kprobe kp = { .symbol_name = "scn_err_black", .pre_handler = count_pre };
	expect_fail(&kp, EINVAL, "NOKPROBE_SYMBOL function by symbol");
}

Test(errors, nokprobe_symbol_asm_inside, .timeout = 30)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)scn_err_black_1,
			     .pre_handler = count_pre };
	expect_fail(&kp, EINVAL, "inside a NOKPROBE_SYMBOL function by address");
}

Test(errors, nokprobe_symbol_asm_symbol_offset, .timeout = 30)
{
	struct kprobe kp = { .symbol_name = "scn_err_black",
			     .offset = (unsigned int)(scn_err_black_1 - scn_err_black),
			     .pre_handler = count_pre };
	expect_fail(&kp, EINVAL, "inside a NOKPROBE_SYMBOL function by symbol+offset");
}

Test(errors, nokprobe_symbol_c, .timeout = 30)
{
	struct kprobe kp = { .symbol_name = "scn_err_black_c", .pre_handler = count_pre };
	expect_fail(&kp, EINVAL, "NOKPROBE_SYMBOL C function");
	kp.symbol_name = NULL;
	kp.addr = (kprobe_opcode_t *)scn_err_black_c;
	expect_fail(&kp, EINVAL, "NOKPROBE_SYMBOL C function by address");
}

/* --------------------------------------------------------------------- */
/* -EILSEQ: not an instruction boundary                                  */
/* --------------------------------------------------------------------- */

Test(errors, offset_inside_first_instruction, .timeout = 30)
{
	struct kprobe kp = { .symbol_name = "scn_err_ok", .offset = 1, .pre_handler = count_pre };
	expect_fail(&kp, EILSEQ, "scn_err_ok+1");
}

Test(errors, offset_inside_movabs, .timeout = 30)
{
	for (unsigned int off = 4; off < 13; off++) {
		char what[64];
		struct kprobe kp = { .symbol_name = "scn_err_ok", .offset = off,
				     .pre_handler = count_pre };
		snprintf(what, sizeof(what), "scn_err_ok+%u (inside movabs)", off);
		expect_fail(&kp, EILSEQ, what);
	}
}

Test(errors, address_inside_movabs, .timeout = 30)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)(scn_err_ok_movabs + 2),
			     .pre_handler = count_pre };
	expect_fail(&kp, EILSEQ, "address inside movabs");
}

Test(errors, boundaries_are_accepted, .timeout = 30)
{
	/* contrast: +0, +3, +13 are instruction starts */
	static const unsigned int offs[] = { 0, 3, 13 };
	for (int i = 0; i < 3; i++) {
		struct kprobe kp = { .symbol_name = "scn_err_ok", .offset = offs[i],
				     .pre_handler = count_pre, .post_handler = count_post };
		cr_expect_eq(register_kprobe(&kp), 0, "scn_err_ok+%u", offs[i]);
		cr_expect_eq((void *)kp.addr, (void *)(scn_err_ok + offs[i]));
		cr_expect_eq(fok(1), (long)(0x1122334455667788UL + 1));
		unregister_kprobe(&kp);
	}
	cr_expect_eq(hits, 3);
}

/* --------------------------------------------------------------------- */
/* -EINVAL: instructions that cannot be probed                           */
/* --------------------------------------------------------------------- */

static void bad_insn(char *at, const char *what)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)at, .pre_handler = count_pre };
	expect_fail(&kp, EINVAL, what);
}

Test(errors, insn_int3, .timeout = 30) { bad_insn(scn_err_bad_int3, "int3"); }
Test(errors, insn_int80, .timeout = 30) { bad_insn(scn_err_bad_int80, "int $0x80"); }
Test(errors, insn_iret, .timeout = 30) { bad_insn(scn_err_bad_iret, "iretq"); }
Test(errors, insn_far_jmp, .timeout = 30) { bad_insn(scn_err_bad_ljmp, "ljmp *(%rax)"); }
Test(errors, insn_far_call, .timeout = 30) { bad_insn(scn_err_bad_lcall, "lcall *(%rax)"); }
Test(errors, insn_xbegin, .timeout = 30) { bad_insn(scn_err_bad_xbegin, "xbegin"); }
Test(errors, insn_hlt, .timeout = 30) { bad_insn(scn_err_bad_hlt, "hlt"); }

Test(errors, insn_int3_by_symbol_offset, .timeout = 30)
{
	struct kprobe kp = { .symbol_name = "scn_err_bad", .offset = 1, .pre_handler = count_pre };
	expect_fail(&kp, EINVAL, "scn_err_bad+1 (int3)");
}

Test(errors, probeable_neighbours_accepted, .timeout = 30)
{
	/* the nops around the bad instructions can be probed */
	struct kprobe kp = { .addr = (kprobe_opcode_t *)scn_err_bad_nop, .pre_handler = count_pre };
	cr_expect_eq(register_kprobe(&kp), 0);
	unregister_kprobe(&kp);
	struct kprobe kp0 = { .symbol_name = "scn_err_bad", .pre_handler = count_pre };
	cr_expect_eq(register_kprobe(&kp0), 0);
	cr_expect_eq((void *)kp0.addr, (void *)scn_err_bad);
	unregister_kprobe(&kp0);
}

/* --------------------------------------------------------------------- */
/* Registering a registered struct; unregistering an unregistered one    */
/* --------------------------------------------------------------------- */

Test(errors, register_twice_by_addr, .timeout = 30)
{
	unsigned char orig[32];
	struct kprobe kp = { .addr = (kprobe_opcode_t *)scn_err_target_b,
			     .pre_handler = count_pre, .post_handler = count_post };

	warm_up();
	memcpy(orig, (void *)scn_err_target_b, sizeof(orig));
	cr_assert_eq(register_kprobe(&kp), 0);
	scn_snapshot_init(&snap);
	scn_snapshot_add_code(&snap, (void *)scn_err_target_b, 32);
	scn_snapshot_take(&snap);
	int ret = register_kprobe(&kp);
	cr_expect_eq(ret, -EINVAL, "second registration returned %d", ret);
	snap_check("second registration");
	cr_expect_eq(nprobes(), 1);
	cr_expect_eq(fb(1), 21);
	cr_expect_eq(hits, 1, "one call, %lu hits", hits);
	unregister_kprobe(&kp);
	cr_expect_eq(nprobes(), 0);
	cr_expect_eq(memcmp(orig, (void *)scn_err_target_b, sizeof(orig)), 0,
		     "code not restored by the one unregister");
	fb(1);
	cr_expect_eq(hits, 1);
}

Test(errors, register_twice_by_symbol, .timeout = 30)
{
	struct kprobe kp = { .symbol_name = "scn_err_target_b", .pre_handler = count_pre };

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_eq(register_kprobe(&kp), -EINVAL);
	cr_expect_eq(nprobes(), 1);
	fb(1);
	cr_expect_eq(hits, 1);
	unregister_kprobe(&kp);
	cr_expect_eq(nprobes(), 0);
}

Test(errors, unregister_not_registered_clears_addr, .timeout = 30)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)scn_err_target_a, .pre_handler = count_pre };

	unregister_kprobe(&kp);
	cr_expect_null(kp.addr, "p->addr %p after unregistering a probe never registered",
		       (void *)kp.addr);

	struct kprobe kp2 = { .symbol_name = "scn_err_target_a", .pre_handler = count_pre };
	cr_assert_eq(register_kprobe(&kp2), 0);
	unregister_kprobe(&kp2);
	cr_expect_eq((void *)kp2.addr, (void *)scn_err_target_a, "first unregister keeps addr");
	unregister_kprobe(&kp2);
	cr_expect_null(kp2.addr, "second unregister: p->addr %p", (void *)kp2.addr);
	fa(1);
	cr_expect_eq(hits, 0);

	struct kprobe *kps[] = { &kp, &kp2 };
	kp.addr = (kprobe_opcode_t *)scn_err_target_a;
	kp2.addr = (kprobe_opcode_t *)scn_err_target_b;
	unregister_kprobes(kps, 2);
	cr_expect_null(kp.addr);
	cr_expect_null(kp2.addr);
}

/* --------------------------------------------------------------------- */
/* Batches: all or nothing                                               */
/* --------------------------------------------------------------------- */

static void expect_batch_fail(struct kprobe **kps, int n, int err, const char *what)
{
	warm_up();
	snap_take(NULL);
	int ret = register_kprobes(kps, n);
	cr_expect_eq(ret, -err, "%s: register_kprobes returned %d, expected %d",
		     what, ret, -err);
	snap_check(what);
	cr_expect_eq(nprobes(), 0, "%s: probes listed after a failed batch", what);
	cr_expect_eq(fa(1), 11);
	cr_expect_eq(fb(1), 21);
	cr_expect_eq(fok(1), (long)(0x1122334455667788UL + 1));
	cr_expect_eq(hits, 0, "%s: %lu hits after a failed batch", what, hits);
}

/* Afterwards the same structs register fine one by one. */
static void reregister_all(struct kprobe **kps, int n, int skip)
{
	for (int i = 0; i < n; i++) {
		if (i == skip)
			continue;
		if (kps[i]->symbol_name)
			kps[i]->addr = NULL;
		cr_expect_eq(register_kprobe(kps[i]), 0, "probe %d after the failed batch", i);
	}
	fa(1);
	fb(1);
	fok(1);
	for (int i = 0; i < n; i++)
		if (i != skip)
			unregister_kprobe(kps[i]);
}

Test(errors, batch_last_unknown_symbol, .timeout = 30)
{
	struct kprobe a = { .symbol_name = "scn_err_target_a", .pre_handler = count_pre,
			    .post_handler = count_post };
	struct kprobe b = { .addr = (kprobe_opcode_t *)scn_err_target_b, .pre_handler = count_pre };
	struct kprobe c = { .addr = (kprobe_opcode_t *)scn_err_ok_add, .pre_handler = count_pre };
	struct kprobe d = { .symbol_name = "scn_no_such_symbol_xyzzy", .pre_handler = count_pre };
	struct kprobe *kps[] = { &a, &b, &c, &d };

	expect_batch_fail(kps, 4, ENOENT, "batch ending with an unknown symbol");
	reregister_all(kps, 4, 3);
	cr_expect_eq(hits, 3);
}

Test(errors, batch_last_not_boundary, .timeout = 30)
{
	struct kprobe a = { .symbol_name = "scn_err_target_a", .pre_handler = count_pre };
	struct kprobe b = { .symbol_name = "scn_err_target_b", .pre_handler = count_pre,
			    .post_handler = count_post };
	struct kprobe c = { .symbol_name = "scn_err_ok", .offset = 5, .pre_handler = count_pre };
	struct kprobe *kps[] = { &a, &b, &c };

	expect_batch_fail(kps, 3, EILSEQ, "batch ending with a mid-instruction offset");
	reregister_all(kps, 3, 2);
	cr_expect_eq(hits, 2);
}

Test(errors, batch_last_blacklisted, .timeout = 30)
{
	struct kprobe a = { .symbol_name = "scn_err_target_a", .pre_handler = count_pre };
	struct kprobe b = { .addr = (kprobe_opcode_t *)scn_err_ok, .pre_handler = count_pre };
	struct kprobe c = { .symbol_name = "scn_err_black_c", .pre_handler = count_pre };
	struct kprobe *kps[] = { &a, &b, &c };

	expect_batch_fail(kps, 3, EINVAL, "batch ending with a blacklisted function");
	reregister_all(kps, 3, 2);
	cr_expect_eq(hits, 2);
}

Test(errors, batch_last_bad_instruction, .timeout = 30)
{
	struct kprobe a = { .symbol_name = "scn_err_target_a", .pre_handler = count_pre };
	struct kprobe a2 = { .symbol_name = "scn_err_target_a", .pre_handler = count_pre,
			     .post_handler = count_post };
	struct kprobe c = { .addr = (kprobe_opcode_t *)scn_err_bad_int80, .pre_handler = count_pre };
	struct kprobe *kps[] = { &a, &a2, &c };

	expect_batch_fail(kps, 3, EINVAL, "batch (two on one address) ending with int $0x80");
	reregister_all(kps, 3, 2);
	cr_expect_eq(hits, 2);
}

Test(errors, batch_same_struct_twice, .timeout = 30)
{
	struct kprobe a = { .addr = (kprobe_opcode_t *)scn_err_target_a, .pre_handler = count_pre };
	struct kprobe b = { .addr = (kprobe_opcode_t *)scn_err_target_b, .pre_handler = count_pre };
	struct kprobe *kps[] = { &a, &b, &a };

	expect_batch_fail(kps, 3, EINVAL, "batch with the same struct twice");
	reregister_all(kps, 2, -1);
	cr_expect_eq(hits, 2);
}

Test(errors, batch_first_invalid, .timeout = 30)
{
	struct kprobe bad = { .pre_handler = count_pre };
	struct kprobe a = { .symbol_name = "scn_err_target_a", .pre_handler = count_pre };
	struct kprobe *kps[] = { &bad, &a };

	expect_batch_fail(kps, 2, EINVAL, "batch starting with an invalid probe");
	a.addr = NULL;
	cr_expect_eq(register_kprobe(&a), 0);
	fa(1);
	cr_expect_eq(hits, 1);
	unregister_kprobe(&a);
}

/* --------------------------------------------------------------------- */
/* Calls on probes that are not registered; empty batches                */
/* --------------------------------------------------------------------- */

Test(errors, enable_disable_unregistered, .timeout = 30)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)scn_err_target_a, .pre_handler = count_pre };

	cr_expect_eq(enable_kprobe(&kp), -EINVAL, "enable_kprobe on a probe never registered");
	cr_expect_eq(disable_kprobe(&kp), -EINVAL, "disable_kprobe on a probe never registered");
	cr_assert_eq(register_kprobe(&kp), 0);
	unregister_kprobe(&kp);
	cr_expect_eq(enable_kprobe(&kp), -EINVAL, "enable_kprobe after unregister");
	cr_expect_eq(disable_kprobe(&kp), -EINVAL, "disable_kprobe after unregister");
	fa(1);
	cr_expect_eq(hits, 0);
	cr_expect_eq(nprobes(), 0);
}

Test(errors, batch_of_zero, .timeout = 30)
{
	struct kprobe a = { .symbol_name = "scn_err_target_a", .pre_handler = count_pre };
	struct kprobe *kps[] = { &a };

	cr_expect_eq(register_kprobes(kps, 0), -EINVAL);
	cr_expect_eq(register_kprobes(kps, -1), -EINVAL);
	cr_expect_eq(nprobes(), 0);
}

/* --------------------------------------------------------------------- */
/* The blacklist listing shows NOKPROBE_SYMBOL functions                 */
/* --------------------------------------------------------------------- */

Test(errors, print_blacklist, .timeout = 30)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int found = 0;

	cr_assert(f);
	int n = ukprobes_print_blacklist(f);
	fclose(f);
	cr_expect_gt(n, 0, "ukprobes_print_blacklist returned %d", n);
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		unsigned long start, end;
		char name[256];
		if (sscanf(line, "%lx-%lx\t%255s", &start, &end, name) != 3) {
			cr_expect_fail("malformed blacklist line \"%s\"", line);
			continue;
		}
		if (!strcmp(name, "scn_err_black") || strstr(name, ":scn_err_black")) {
			found++;
			cr_expect_eq(start, (unsigned long)scn_err_black, "start in \"%s\"", line);
			cr_expect_eq(end, (unsigned long)scn_err_black_end, "end in \"%s\"", line);
		}
	}
	cr_expect_eq(found, 1, "scn_err_black listed %d times", found);
	free(buf);
}
