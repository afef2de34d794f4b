// SPDX-License-Identifier: MIT
/*
 * test_cet.c - reading the CET features the kernel turned on for the
 * process (src/arch/x86_64/cet.c): which lines of /proc/self/status say
 * that IBT or the shadow stack is on, and that this machine's answer
 * agrees with its own status file.
 */
#include "../support/ukp_test.h"
#include <stdio.h>
#include <string.h>

#include "cet.h"

Test(cet, lines)
{
	cr_expect(x86_cet_line_has("x86_Thread_features:\tshstk wrss\n", "shstk"));
	cr_expect(x86_cet_line_has("x86_Thread_features: shstk wrss ibt\n", "ibt"));
	cr_expect(x86_cet_line_has("x86_Thread_features: ibt", "ibt"));
	cr_expect(!x86_cet_line_has("x86_Thread_features:\n", "shstk"));
	cr_expect(!x86_cet_line_has("x86_Thread_features: shstk wrss\n", "ibt"));
	cr_expect(!x86_cet_line_has("x86_Thread_features: ibtx\n", "ibt"));
	cr_expect(!x86_cet_line_has("x86_Thread_features: xibt\n", "ibt"));
	/* The locked line is another thing: what may not change. */
	cr_expect(!x86_cet_line_has("x86_Thread_features_locked: shstk\n", "shstk"));
	cr_expect(!x86_cet_line_has("Name:\tibt shstk\n", "ibt"));
}

Test(cet, this_process)
{
	char line[256];
	bool shstk = false;
	FILE *f = fopen("/proc/self/status", "r");

	cr_assert(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "x86_Thread_features:", 20) && strstr(line, "shstk"))
			shstk = true;
	fclose(f);
	cr_expect_eq(x86_cet_feature("shstk"), shstk);
}
