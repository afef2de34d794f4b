/* SPDX-License-Identifier: MIT */
/*
 * kretprobes_rust.c - a Rust panic unwinding through kretprobed C frames
 * (kretprobes_rust.rs): caught by catch_unwind as without probes, the
 * unwound frames' instances back at once (no return handler), the frame
 * that returns keeps its return probe; built where rustc is installed.
 */
#include "../support/ukp_test.h"
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include <ukprobes.h>
#include "scn_util.h"

extern long krs_panic(long x);
extern long krs_catch(long (*f)(long), long x);
extern void krs_quiet(void);

static atomic_ulong returns;

static int count_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	atomic_fetch_add(&returns, 1);
	return 0;
}

/* C between catch_unwind and the panic: kretprobed. */
SCN_NOINLINE long krs_c_middle(long x)
{
	long (*volatile f)(long) = krs_panic;

	return f(x) + 1;
}

Test(kretprobes_rust, panic_through_kretprobed_c_frame, .timeout = 60)
{
	struct kretprobe rp = { .kp.symbol_name = "krs_c_middle", .handler = count_ret,
				.maxactive = 4 };
	const long n = 10000;
	long bad = 0;

	krs_quiet();
	cr_assert_eq(register_kretprobe(&rp), 0);
	for (long i = 0; i < n; i++)
		bad += krs_catch(krs_c_middle, i) != 1000 + i;
	for (long i = 1; i <= 100; i++)
		bad += krs_catch(krs_c_middle, -i) != i + 1;
	unregister_kretprobe(&rp);
	cr_expect_eq(bad, 0, "%ld calls came back wrong", bad);
	cr_expect_eq(atomic_load(&returns), 100, "%lu return handlers (100 calls returned)",
		     atomic_load(&returns));
	cr_expect_eq(rp.nmissed, 0, "nmissed %d after %ld panics with maxactive 4", rp.nmissed, n);
}
