// SPDX-License-Identifier: MIT
/*
 * cet.c - what Control-flow Enforcement the kernel turned on for this
 * process (/proc/self/status: "x86_Thread_features: shstk wrss ibt"; no
 * such line on kernels without CET support: nothing is on).
 *   ibt    indirect branches must land on endbr64: a jump may not replace
 *          one (optimizing at an endbr64, opt.c);
 *   shstk  returns are checked against a shadow stack: replacing a return
 *          address (kretprobes) would fault at the return.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "arch.h"
#include "cet.h"

bool x86_cet_line_has(const char *line, const char *name)
{
	size_t n = strlen(name);

	if (strncmp(line, "x86_Thread_features:", 20))
		return false;
	for (const char *p = line + 20; (p = strstr(p, name)); p += n) {
		char before = p[-1], after = p[n];

		if ((before == ' ' || before == '\t') &&
		    (after == ' ' || after == '\t' || after == '\n' || after == '\0'))
			return true;
	}
	return false;
}

int x86_cet_state(const char *name)
{
	char line[256];
	bool on = false;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return errno ? -errno : -EIO;
	while (fgets(line, sizeof(line), f))
		on |= x86_cet_line_has(line, name);
	fclose(f);
	return on;
}

bool x86_cet_feature(const char *name)
{
	return x86_cet_state(name) != 0;	/* cannot tell: the stricter */
}

int arch_kretprobe_check(void)
{
	int on = x86_cet_state("shstk");

	return on < 0 ? on : on ? -EOPNOTSUPP : 0;
}
