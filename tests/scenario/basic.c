/* SPDX-License-Identifier: MIT */
/*
 * basic.c - the life of a probe: exact hit counts (single-step and boost
 * paths), registers seen and changed by handlers, pre_handler redirection,
 * several probes on one address, enable/disable, the global switch, the
 * listing, reentry (nmissed), endbr64 at function entry, code restored.
 */
#include "../support/ukp_test.h"
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ukprobes.h>
#include "scn_util.h"

extern char scn_b_add[], scn_b_add_1[], scn_b_add_2[];
extern char scn_b_endbr[], scn_b_endbr_1[];
extern char scn_b_off[], scn_b_off_at[];

/* C targets: called through volatile pointers so that calls stay calls. */
static volatile unsigned long target_body_runs;

SCN_NOINLINE long scn_basic_target(long x)
{
	target_body_runs++;
	return x * 2 + 1;
}

SCN_NOINLINE long scn_basic_target2(long x)
{
	__asm__ volatile("");
	return x * 3 + 1;
}

static long (*volatile target)(long) = scn_basic_target;
static long (*volatile target2)(long) = scn_basic_target2;
static long (*volatile add)(long, long) = (long (*)(long, long))scn_b_add;

/* --------------------------------------------------------------------- */
/* Exact counts                                                          */
/* --------------------------------------------------------------------- */

static volatile unsigned long pre_count, post_count;

static int count_pre(struct kprobe *p, struct pt_regs *regs)
{
	pre_count++;
	return 0;
}

static void count_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	post_count++;
}

#define MILLION 1000000L

Test(basic, million_hits_single_step, .timeout = 60)
{
	struct kprobe kp = { .symbol_name = "scn_basic_target",
			     .pre_handler = count_pre, .post_handler = count_post };
	long sum = 0, expect = 0;

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert_eq((void *)kp.addr, (void *)scn_basic_target);
	for (long i = 0; i < MILLION; i++) {
		sum += target(i);
		expect += i * 2 + 1;
	}
	unregister_kprobe(&kp);
	cr_expect_eq(sum, expect, "results differ");
	cr_expect_eq(pre_count, MILLION, "pre_handler ran %lu times", pre_count);
	cr_expect_eq(post_count, MILLION, "post_handler ran %lu times", post_count);
	cr_expect_eq(kp.nmissed, 0);
	cr_expect_eq(target_body_runs, MILLION + 0UL);
}

Test(basic, million_hits_boost, .timeout = 60)
{
	struct kprobe kp = { .symbol_name = "scn_basic_target", .pre_handler = count_pre };
	long sum = 0, expect = 0;

	cr_assert_eq(register_kprobe(&kp), 0);
	for (long i = 0; i < MILLION; i++) {
		sum += target(i);
		expect += i * 2 + 1;
	}
	unregister_kprobe(&kp);
	cr_expect_eq(sum, expect, "results differ");
	cr_expect_eq(pre_count, MILLION, "pre_handler ran %lu times", pre_count);
	cr_expect_eq(kp.nmissed, 0);
	/* After unregister: no more hits. */
	target(1);
	cr_expect_eq(pre_count, MILLION);
}

/* --------------------------------------------------------------------- */
/* Registers                                                             */
/* --------------------------------------------------------------------- */

static volatile int regs_errors;
static volatile unsigned long seen_ip, seen_sp, seen_orig_ax, seen_cs, seen_di, seen_si;

static int entry_pre(struct kprobe *p, struct pt_regs *regs)
{
	pre_count++;
	seen_ip = regs->ip;
	seen_sp = regs->sp;
	seen_orig_ax = regs->orig_ax;
	seen_cs = regs->cs;
	seen_di = regs->di;
	seen_si = regs->si;
	regs->di = 10;		/* the function sees a = 10 */
	return 0;
}

static void entry_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	post_count++;
	/* after mov %rdi,%rax */
	if (regs->ip != (unsigned long)scn_b_add_1 || regs->ax != 10 ||
	    regs->sp != seen_sp)
		regs_errors++;
}

Test(basic, pre_handler_sees_and_changes_registers, .timeout = 30)
{
	struct kprobe kp = { .symbol_name = "scn_b_add", .pre_handler = entry_pre,
			     .post_handler = entry_post };

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert_eq((void *)kp.addr, (void *)scn_b_add);
	long r = add(3, 4);
	unregister_kprobe(&kp);

	cr_expect_eq(r, 14, "pre_handler set di = 10: expected 14, got %ld", r);
	cr_expect_eq(pre_count, 1);
	cr_expect_eq(post_count, 1);
	cr_expect_eq(seen_ip, (unsigned long)scn_b_add, "regs->ip %#lx", seen_ip);
	cr_expect_eq(seen_di, 3);
	cr_expect_eq(seen_si, 4);
	cr_expect_eq(seen_sp % 16, 8, "sp at function entry %#lx not 16n+8", seen_sp);
	cr_expect_eq(seen_orig_ax, (unsigned long)-1, "orig_ax %#lx", seen_orig_ax);
	cr_expect_neq(seen_cs, 0, "cs is 0");
	cr_expect_eq(regs_errors, 0, "post_handler: ip/ax/sp wrong");
	cr_expect_eq(add(3, 4), 7, "after unregister");
}

static int mid_pre(struct kprobe *p, struct pt_regs *regs)
{
	pre_count++;
	if (regs->ip != (unsigned long)scn_b_add_1 || regs->ax != 3 || regs->si != 4)
		regs_errors++;
	return 0;
}

static void mid_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	post_count++;
	if (regs->ip != (unsigned long)scn_b_add_2 || regs->ax != 7)
		regs_errors++;
	regs->ax = 100;		/* the caller gets 100 */
}

Test(basic, post_handler_sees_and_changes_registers, .timeout = 30)
{
	struct kprobe kp = { .symbol_name = "scn_b_add", .offset = 3,
			     .pre_handler = mid_pre, .post_handler = mid_post };

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_assert_eq((void *)kp.addr, (void *)scn_b_add_1, "symbol+3 -> %p, expected %p",
		     (void *)kp.addr, (void *)scn_b_add_1);
	long r = add(3, 4);
	unregister_kprobe(&kp);
	cr_expect_eq(r, 100);
	cr_expect_eq(pre_count, 1);
	cr_expect_eq(post_count, 1);
	cr_expect_eq(regs_errors, 0, "pre/post saw wrong ip or registers");
}

Test(basic, regs_query_register_offset)
{
	cr_expect_eq(regs_query_register_offset("ax"), (int)offsetof(struct pt_regs, ax));
	cr_expect_eq(regs_query_register_offset("%di"), (int)offsetof(struct pt_regs, di));
	cr_expect_eq(regs_query_register_offset("rsi"), (int)offsetof(struct pt_regs, si));
	cr_expect_eq(regs_query_register_offset("r15"), (int)offsetof(struct pt_regs, r15));
	cr_expect_eq(regs_query_register_offset("ip"), (int)offsetof(struct pt_regs, ip));
	cr_expect_eq(regs_query_register_offset("flags"), (int)offsetof(struct pt_regs, flags));
	cr_expect_eq(regs_query_register_offset("nosuchreg"), -EINVAL);
	const char *n = regs_query_register_name(offsetof(struct pt_regs, sp));
	cr_expect(n && !strcmp(n, "sp"), "name of sp's offset: %s", n ? n : "(null)");
}

/* --------------------------------------------------------------------- */
/* pre_handler redirection                                               */
/* --------------------------------------------------------------------- */

static int redirect_pre(struct kprobe *p, struct pt_regs *regs)
{
	pre_count++;
	regs->ax = 42;
	regs->ip = *(unsigned long *)regs->sp;	/* return address */
	regs->sp += 8;
	return 1;
}

Test(basic, pre_handler_redirect_skips_function, .timeout = 30)
{
	struct kprobe kp = { .symbol_name = "scn_basic_target", .pre_handler = redirect_pre,
			     .post_handler = count_post };

	cr_assert_eq(register_kprobe(&kp), 0);
	long r1 = target(5);
	long r2 = target(6);
	unregister_kprobe(&kp);
	cr_expect_eq(r1, 42);
	cr_expect_eq(r2, 42);
	cr_expect_eq(pre_count, 2);
	cr_expect_eq(post_count, 0, "post_handler ran after a redirecting pre_handler");
	cr_expect_eq(target_body_runs, 0, "the function body ran");
	cr_expect_eq(target(5), 11);
	cr_expect_eq(target_body_runs, 1);
}

/* --------------------------------------------------------------------- */
/* Several probes on one address; enable/disable                         */
/* --------------------------------------------------------------------- */

static volatile unsigned long multi_hits[3], multi_post[3];
static struct kprobe mkp[3];

static int multi_pre(struct kprobe *p, struct pt_regs *regs)
{
	multi_hits[p - mkp]++;
	return 0;
}

static void multi_post_h(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	multi_post[p - mkp]++;
}

static void reset_multi(void)
{
	for (int i = 0; i < 3; i++)
		multi_hits[i] = multi_post[i] = 0;
}

#define EXPECT_MULTI(a, b, c)                                                  \
	do {                                                                   \
		cr_expect_eq(multi_hits[0], (a), "probe 0: %lu hits, expected %d", \
			     multi_hits[0], (a));                              \
		cr_expect_eq(multi_hits[1], (b), "probe 1: %lu hits, expected %d", \
			     multi_hits[1], (b));                              \
		cr_expect_eq(multi_hits[2], (c), "probe 2: %lu hits, expected %d", \
			     multi_hits[2], (c));                              \
	} while (0)

Test(basic, several_probes_one_address, .timeout = 30)
{
	unsigned char orig[16];
	memcpy(orig, (void *)scn_basic_target2, sizeof(orig));

	for (int i = 0; i < 3; i++) {
		mkp[i].symbol_name = "scn_basic_target2";
		mkp[i].pre_handler = multi_pre;
		if (i != 1)
			mkp[i].post_handler = multi_post_h;
		cr_assert_eq(register_kprobe(&mkp[i]), 0, "probe %d", i);
		cr_assert_eq((void *)mkp[i].addr, (void *)scn_basic_target2);
	}
	for (int i = 0; i < 10; i++)
		cr_assert_eq(target2(i), i * 3 + 1);
	EXPECT_MULTI(10, 10, 10);
	cr_expect_eq(multi_post[0], 10);
	cr_expect_eq(multi_post[2], 10);

	/* disable one */
	reset_multi();
	cr_assert_eq(disable_kprobe(&mkp[1]), 0);
	cr_expect(kprobe_disabled(&mkp[1]), "flags %#x", mkp[1].flags);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(target2(i), i * 3 + 1);
	EXPECT_MULTI(10, 0, 10);

	/* disable all three */
	reset_multi();
	cr_assert_eq(disable_kprobe(&mkp[0]), 0);
	cr_assert_eq(disable_kprobe(&mkp[2]), 0);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(target2(i), i * 3 + 1);
	EXPECT_MULTI(0, 0, 0);

	/* enable the middle one again */
	reset_multi();
	cr_assert_eq(enable_kprobe(&mkp[1]), 0);
	cr_expect(!kprobe_disabled(&mkp[1]), "flags %#x", mkp[1].flags);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(target2(i), i * 3 + 1);
	EXPECT_MULTI(0, 10, 0);

	/* unregister 0 (disabled), enable 2, unregister 1 */
	reset_multi();
	unregister_kprobe(&mkp[0]);
	cr_assert_eq(enable_kprobe(&mkp[2]), 0);
	unregister_kprobe(&mkp[1]);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(target2(i), i * 3 + 1);
	EXPECT_MULTI(0, 0, 10);
	cr_expect_eq(multi_post[2], 10);

	unregister_kprobe(&mkp[2]);
	reset_multi();
	target2(1);
	EXPECT_MULTI(0, 0, 0);
	cr_expect_eq(memcmp(orig, (void *)scn_basic_target2, sizeof(orig)), 0,
		     "code not restored after the last unregister");
}

Test(basic, registered_disabled_flag, .timeout = 30)
{
	struct kprobe kp = { .symbol_name = "scn_basic_target2", .pre_handler = count_pre,
			     .post_handler = count_post, .flags = KPROBE_FLAG_DISABLED,
			     .nmissed = 77 };

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect(kprobe_disabled(&kp));
	cr_expect_eq(kp.nmissed, 0, "registration resets nmissed (kernel), got %lu", kp.nmissed);
	for (int i = 0; i < 5; i++)
		target2(i);
	cr_expect_eq(pre_count, 0, "a probe registered disabled was hit");
	cr_assert_eq(enable_kprobe(&kp), 0);
	cr_expect(!kprobe_disabled(&kp), "flags %#x after enable", kp.flags);
	for (int i = 0; i < 5; i++)
		cr_expect_eq(target2(i), i * 3 + 1);
	cr_expect_eq(pre_count, 5);
	cr_expect_eq(post_count, 5);
	cr_assert_eq(disable_kprobe(&kp), 0);
	cr_expect(kprobe_disabled(&kp));
	target2(1);
	cr_expect_eq(pre_count, 5);
	unregister_kprobe(&kp);
}

Test(basic, disabled_probe_restores_code, .timeout = 30)
{
	unsigned char orig[16];
	struct kprobe kp = { .symbol_name = "scn_basic_target2", .pre_handler = count_pre };

	memcpy(orig, (void *)scn_basic_target2, sizeof(orig));
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_neq(memcmp(orig, (void *)scn_basic_target2, sizeof(orig)), 0,
		      "an armed probe changed no code byte");
	cr_assert_eq(disable_kprobe(&kp), 0);
	cr_expect_eq(memcmp(orig, (void *)scn_basic_target2, sizeof(orig)), 0,
		     "a disabled probe is still armed (code bytes not restored)");
	cr_assert_eq(enable_kprobe(&kp), 0);
	target2(1);
	cr_expect_eq(pre_count, 1);
	unregister_kprobe(&kp);
	cr_expect_eq(memcmp(orig, (void *)scn_basic_target2, sizeof(orig)), 0);
}

/* --------------------------------------------------------------------- */
/* The global switch                                                     */
/* --------------------------------------------------------------------- */

Test(basic, global_switch, .timeout = 30)
{
	unsigned char orig1[16], orig2[16];
	struct kprobe a = { .symbol_name = "scn_basic_target", .pre_handler = count_pre };
	struct kprobe b = { .symbol_name = "scn_basic_target2", .pre_handler = count_pre,
			    .post_handler = count_post };

	memcpy(orig1, (void *)scn_basic_target, 16);
	memcpy(orig2, (void *)scn_basic_target2, 16);
	cr_expect_eq(ukprobes_enabled(), 1);
	cr_assert_eq(register_kprobe(&a), 0);
	cr_assert_eq(register_kprobe(&b), 0);
	target(1);
	target2(1);
	cr_expect_eq(pre_count, 2);

	/* off: no hits, code as before, each probe keeps its own state */
	cr_assert_eq(ukprobes_set_enabled(0), 0);
	cr_expect_eq(ukprobes_enabled(), 0);
	pre_count = post_count = 0;
	cr_expect_eq(target(1), 3);
	cr_expect_eq(target2(1), 4);
	cr_expect_eq(pre_count, 0, "hits while kprobes are globally disabled");
	cr_expect_eq(memcmp(orig1, (void *)scn_basic_target, 16), 0, "still armed");
	cr_expect_eq(memcmp(orig2, (void *)scn_basic_target2, 16), 0, "still armed");
	cr_expect(!kprobe_disabled(&a), "the switch changed a probe's own state");

	/* a probe disabled while the switch is off stays disabled */
	cr_assert_eq(disable_kprobe(&b), 0);
	/* a probe registered while the switch is off is not armed */
	struct kprobe c = { .symbol_name = "scn_b_off", .offset = 0x11,
			    .pre_handler = count_pre };
	cr_assert_eq(register_kprobe(&c), 0);
	long (*volatile off)(long) = (long (*)(long))scn_b_off;
	cr_expect_eq(off(1), 3);
	cr_expect_eq(pre_count, 0);

	/* switching off twice is harmless */
	cr_assert_eq(ukprobes_set_enabled(0), 0);

	/* on: a and c are armed again, b is not */
	cr_assert_eq(ukprobes_set_enabled(1), 0);
	cr_assert_eq(ukprobes_set_enabled(1), 0);	/* twice: armed once */
	cr_expect_eq(ukprobes_enabled(), 1);
	pre_count = post_count = 0;
	target(1);
	cr_expect_eq(pre_count, 1, "probe a after the switch is on: %lu", pre_count);
	target2(1);
	cr_expect_eq(pre_count, 1, "disabled probe b was re-armed by the switch");
	cr_expect_eq(off(1), 3);
	cr_expect_eq(pre_count, 2, "probe c registered while off is not armed after on");
	cr_assert_eq(enable_kprobe(&b), 0);
	target2(1);
	cr_expect_eq(pre_count, 3);
	cr_expect_eq(post_count, 1);

	unregister_kprobe(&a);
	unregister_kprobe(&b);
	unregister_kprobe(&c);
	cr_expect_eq(memcmp(orig1, (void *)scn_basic_target, 16), 0);
	cr_expect_eq(memcmp(orig2, (void *)scn_basic_target2, 16), 0);
}

/* --------------------------------------------------------------------- */
/* The listing                                                           */
/* --------------------------------------------------------------------- */

/* Check one line: "<addr>  k  <obj>:<sym>+0x<off>  [DISABLED]?" */
static void check_line(const char *line, void *addr, const char *sym,
		       unsigned int off, int disabled)
{
	char *end;
	unsigned long a = strtoul(line, &end, 16);
	char expect[256];

	cr_expect_eq(a, (unsigned long)addr, "address in \"%s\": expected %p", line, addr);
	snprintf(expect, sizeof(expect), "  k  %s:%s+0x%x", scn_exe_name(), sym, off);
	cr_expect_eq(strncmp(end, expect, strlen(expect)), 0,
		     "line \"%s\": expected \"<addr>%s...\"", line, expect);
	const char *rest = end + strlen(expect);
	if (strncmp(end, expect, strlen(expect)))
		return;
	cr_expect_eq(strncmp(rest, "  ", 2), 0, "two spaces after the symbol in \"%s\"", line);
	while (*rest == ' ')
		rest++;
	char tail[64];
	snprintf(tail, sizeof(tail), "%s", rest);
	size_t tl = strlen(tail);
	while (tl && (tail[tl - 1] == ' ' || tail[tl - 1] == '\n'))
		tail[--tl] = 0;
	if (disabled)
		cr_expect_str_eq(tail, "[DISABLED]", "line \"%s\"", line);
	else
		cr_expect_str_eq(tail, "", "line \"%s\"", line);
}

Test(basic, print_list, .timeout = 30)
{
	struct kprobe a = { .symbol_name = "scn_basic_target", .pre_handler = count_pre };
	struct kprobe b = { .symbol_name = "scn_b_off", .offset = 0x11,
			    .pre_handler = count_pre };
	char *buf = NULL;
	size_t len = 0;

	cr_assert_eq(register_kprobe(&a), 0);
	cr_assert_eq(register_kprobe(&b), 0);
	cr_assert_eq(disable_kprobe(&b), 0);

	FILE *f = open_memstream(&buf, &len);
	cr_assert(f);
	int n = ukprobes_print_list(f);
	fclose(f);
	cr_expect_eq(n, 2, "ukprobes_print_list returned %d", n);
	cr_expect_eq(scn_count_lines(buf, len), 2, "listing:\n%s", buf);

	/* order is not specified: find each by its symbol */
	char *la = NULL, *lb = NULL;
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		if (strstr(line, ":scn_basic_target+"))
			la = line;
		else if (strstr(line, ":scn_b_off+"))
			lb = line;
	}
	cr_assert(la, "no line for scn_basic_target");
	cr_assert(lb, "no line for scn_b_off");
	check_line(la, (void *)scn_basic_target, "scn_basic_target", 0, 0);
	check_line(lb, (void *)scn_b_off_at, "scn_b_off", 0x11, 1);
	free(buf);

	/* after unregistering one: one line; after both: none */
	unregister_kprobe(&a);
	char small[512] = { 0 };
	f = fmemopen(small, sizeof(small), "w");
	n = ukprobes_print_list(f);
	fclose(f);
	cr_expect_eq(n, 1);
	cr_expect_eq(scn_count_lines(small, strlen(small)), 1, "listing:\n%s", small);
	cr_expect(strstr(small, ":scn_b_off+0x11") != NULL, "listing:\n%s", small);

	unregister_kprobe(&b);
	memset(small, 0, sizeof(small));
	f = fmemopen(small, sizeof(small), "w");
	n = ukprobes_print_list(f);
	fclose(f);
	cr_expect_eq(n, 0);
	cr_expect_eq(strlen(small), 0, "listing not empty:\n%s", small);
}

/* --------------------------------------------------------------------- */
/* Reentry                                                               */
/* --------------------------------------------------------------------- */

#define DIV_FACTOR 3
static unsigned int rand1 = 123457;
static volatile unsigned int preh_val, posth_val;

SCN_NOINLINE unsigned int scn_basic_recursed_target(unsigned int value)
{
	__asm__ volatile("");
	return value / DIV_FACTOR;
}

static unsigned int (*volatile recursed_target)(unsigned int) = scn_basic_recursed_target;

static int kp_pre_handler(struct kprobe *p, struct pt_regs *regs)
{
	preh_val = recursed_target(rand1);
	return 0;
}

static void kp_post_handler(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	unsigned int expval = recursed_target(rand1);

	if (preh_val != expval)
		regs_errors++;
	posth_val = preh_val + DIV_FACTOR;
}

/* lib/test_kprobes.c: test_kprobe_missed */
Test(basic, kprobe_missed, .timeout = 30)
{
	struct kprobe kp_missed = { .symbol_name = "scn_basic_recursed_target",
				    .pre_handler = kp_pre_handler,
				    .post_handler = kp_post_handler };

	preh_val = 0;
	posth_val = 0;
	cr_assert_eq(register_kprobe(&kp_missed), 0);
	unsigned int r = recursed_target(rand1);
	cr_expect_eq(kp_missed.nmissed, 2, "nmissed %lu", kp_missed.nmissed);
	cr_expect_neq(preh_val, 0);
	cr_expect_neq(posth_val, 0);
	cr_expect_eq(preh_val, rand1 / DIV_FACTOR, "the inner call computed %u", preh_val);
	cr_expect_eq(regs_errors, 0);
	cr_expect_eq(r, rand1 / DIV_FACTOR);
	unregister_kprobe(&kp_missed);
}

static volatile unsigned long inner_wrong;

static int reenter_pre(struct kprobe *p, struct pt_regs *regs)
{
	pre_count++;
	if (recursed_target(300) != 100)
		inner_wrong++;
	return 0;
}

Test(basic, missed_per_outer_hit_boost, .timeout = 30)
{
	struct kprobe kp = { .symbol_name = "scn_basic_recursed_target",
			     .pre_handler = reenter_pre };

	cr_assert_eq(register_kprobe(&kp), 0);
	for (int i = 0; i < 100; i++)
		cr_expect_eq(recursed_target(30), 10);
	unregister_kprobe(&kp);
	cr_expect_eq(pre_count, 100);
	cr_expect_eq(kp.nmissed, 100, "nmissed %lu, expected 1 per outer hit", kp.nmissed);
	cr_expect_eq(inner_wrong, 0, "the nested hit computed a wrong result");
}

/* A hit on another probe from inside a handler is missed too. */
static struct kprobe inner_kp;

static int outer_pre(struct kprobe *p, struct pt_regs *regs)
{
	pre_count++;
	if (target2(2) != 7)
		inner_wrong++;
	return 0;
}

static volatile unsigned long inner_runs;

static int inner_pre(struct kprobe *p, struct pt_regs *regs)
{
	inner_runs++;
	return 0;
}

Test(basic, missed_other_probe_from_handler, .timeout = 30)
{
	struct kprobe outer = { .symbol_name = "scn_basic_target", .pre_handler = outer_pre,
				.post_handler = count_post };
	inner_kp.symbol_name = "scn_basic_target2";
	inner_kp.pre_handler = inner_pre;

	cr_assert_eq(register_kprobe(&outer), 0);
	cr_assert_eq(register_kprobe(&inner_kp), 0);
	for (int i = 0; i < 10; i++)
		cr_expect_eq(target(i), 2 * i + 1);
	cr_expect_eq(pre_count, 10);
	cr_expect_eq(post_count, 10, "outer post ran %lu times", post_count);
	cr_expect_eq(inner_runs, 0, "inner probe's handler ran inside the outer's");
	cr_expect_eq(inner_kp.nmissed, 10, "inner nmissed %lu", inner_kp.nmissed);
	cr_expect_eq(outer.nmissed, 0);
	cr_expect_eq(inner_wrong, 0);
	/* the inner probe on its own still works */
	target2(1);
	cr_expect_eq(inner_runs, 1);
	unregister_kprobe(&outer);
	unregister_kprobe(&inner_kp);
}

/* --------------------------------------------------------------------- */
/* endbr64, code restoration, freeing after unregister                   */
/* --------------------------------------------------------------------- */

static volatile unsigned long endbr_ip;

static int endbr_pre(struct kprobe *p, struct pt_regs *regs)
{
	pre_count++;
	endbr_ip = regs->ip;
	return 0;
}

Test(basic, endbr64_entry_probe_goes_after_it, .timeout = 30)
{
	struct kprobe kp = { .symbol_name = "scn_b_endbr", .pre_handler = endbr_pre,
			     .post_handler = count_post };
	long (*volatile f)(long) = (long (*)(long))scn_b_endbr;

	cr_assert_eq(*(uint32_t *)scn_b_endbr, 0xfa1e0ff3u, "target does not start with endbr64");
	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_eq((void *)kp.addr, (void *)(scn_b_endbr + 4),
		     "probe on an endbr64 function at %p, expected %p",
		     (void *)kp.addr, (void *)(scn_b_endbr + 4));
	cr_expect_eq(*(uint32_t *)scn_b_endbr, 0xfa1e0ff3u, "the endbr64 was overwritten");
	cr_expect_eq(f(1), 2);
	cr_expect_eq(pre_count, 1);
	cr_expect_eq(post_count, 1);
	cr_expect_eq(endbr_ip, (unsigned long)scn_b_endbr_1);
	unregister_kprobe(&kp);

	/* offset 4 names the same place */
	struct kprobe kp4 = { .symbol_name = "scn_b_endbr", .offset = 4,
			      .pre_handler = endbr_pre };
	cr_assert_eq(register_kprobe(&kp4), 0);
	cr_expect_eq((void *)kp4.addr, (void *)(scn_b_endbr + 4));
	unregister_kprobe(&kp4);
}

Test(basic, unregister_restores_code_and_keeps_addr, .timeout = 30)
{
	unsigned char orig[32];
	struct kprobe kp = { .symbol_name = "scn_basic_target", .pre_handler = count_pre,
			     .post_handler = count_post };

	memcpy(orig, (void *)scn_basic_target, sizeof(orig));
	for (int round = 0; round < 3; round++) {
		kp.addr = NULL;		/* as the kernel: addr stays after unregister */
		cr_assert_eq(register_kprobe(&kp), 0, "round %d", round);
		target(1);
		unregister_kprobe(&kp);
		cr_expect_eq((void *)kp.addr, (void *)scn_basic_target,
			     "p->addr after unregister: %p", (void *)kp.addr);
		cr_expect_eq(memcmp(orig, (void *)scn_basic_target, sizeof(orig)), 0,
			     "code not restored, round %d", round);
	}
	cr_expect_eq(pre_count, 3);
	cr_expect_eq(post_count, 3);
}

Test(basic, free_struct_right_after_unregister, .timeout = 30)
{
	for (int i = 0; i < 50; i++) {
		struct kprobe *kp = calloc(1, sizeof(*kp));
		cr_assert(kp);
		kp->symbol_name = "scn_basic_target";
		kp->pre_handler = count_pre;
		kp->post_handler = (i & 1) ? count_post : NULL;
		cr_assert_eq(register_kprobe(kp), 0);
		target(i);
		unregister_kprobe(kp);
		memset(kp, 0xa5, sizeof(*kp));
		free(kp);
		cr_expect_eq(target(i), 2 * i + 1);
	}
	cr_expect_eq(pre_count, 50);
	cr_expect_eq(post_count, 25);
}

Test(basic, batch_register_and_unregister, .timeout = 30)
{
	struct kprobe a = { .symbol_name = "scn_basic_target", .pre_handler = count_pre };
	struct kprobe b = { .symbol_name = "scn_basic_target2", .pre_handler = count_pre,
			    .post_handler = count_post };
	struct kprobe c = { .addr = (kprobe_opcode_t *)scn_b_add_1, .pre_handler = count_pre };
	struct kprobe *kps[] = { &a, &b, &c };

	cr_assert_eq(register_kprobes(kps, 3), 0);
	target(1);
	target2(1);
	cr_expect_eq(add(1, 2), 3);
	cr_expect_eq(pre_count, 3);
	cr_expect_eq(post_count, 1);
	unregister_kprobes(kps, 3);
	target(1);
	target2(1);
	add(1, 2);
	cr_expect_eq(pre_count, 3);
}

/* --------------------------------------------------------------------- */
/* fork: the child inherits the armed probes and their handlers          */
/* --------------------------------------------------------------------- */

Test(basic, fork_child_hits_probes, .timeout = 30)
{
	struct kprobe kp = { .symbol_name = "scn_basic_target", .pre_handler = count_pre,
			     .post_handler = count_post };

	cr_assert_eq(register_kprobe(&kp), 0);
	target(1);
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		long bad = 0;
		for (int i = 0; i < 100; i++)
			if (target(i) != 2 * i + 1)
				bad++;
		_exit(bad ? 1 : pre_count == 101 && post_count == 101 ? 0 : 2);
	}
	int status = 0;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFEXITED(status), "the child died (signal %d)",
		  WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	if (WIFEXITED(status))
		cr_expect_eq(WEXITSTATUS(status), 0, "child: %s",
			     WEXITSTATUS(status) == 1 ? "wrong results" : "wrong hit counts");
	/* the parent is unaffected */
	target(1);
	cr_expect_eq(pre_count, 2);
	cr_expect_eq(post_count, 2);
	unregister_kprobe(&kp);
}

/* addr + offset, as the kernel's _kprobe_addr() */
Test(basic, addr_plus_offset, .timeout = 30)
{
	struct kprobe kp = { .addr = (kprobe_opcode_t *)scn_b_add, .offset = 3,
			     .pre_handler = mid_pre, .post_handler = mid_post };

	cr_assert_eq(register_kprobe(&kp), 0);
	cr_expect_eq((void *)kp.addr, (void *)scn_b_add_1, "addr+3 -> %p, expected %p",
		     (void *)kp.addr, (void *)scn_b_add_1);
	long r = add(3, 4);
	unregister_kprobe(&kp);
	cr_expect_eq(r, 100);
	cr_expect_eq(pre_count, 1);
	cr_expect_eq(regs_errors, 0);
}
