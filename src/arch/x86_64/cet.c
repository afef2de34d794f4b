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

bool x86_cet_feature(const char *name)
{
	char line[256];
	bool on = false;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return true;	/* cannot tell: assume the stricter */
	while (fgets(line, sizeof(line), f))
		on |= x86_cet_line_has(line, name);
	fclose(f);
	return on;
}

bool arch_kretprobe_supported(void)
{
	return !x86_cet_feature("shstk");
}
