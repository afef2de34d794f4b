// SPDX-License-Identifier: MIT
/*
 * printenv - the variables of the environment that ukprobe adds or gives
 * back (LD_*, GLIBC_TUNABLES, UKPROBE_*), one a line; or "none".  Built
 * statically too (static-printenv): a program the agent cannot start in.
 */
#include <stdio.h>
#include <string.h>

extern char **environ;

int main(void)
{
	int n = 0;

	for (char **e = environ; *e; e++) {
		if (!strncmp(*e, "LD_", 3) || !strncmp(*e, "GLIBC_TUNABLES=", 15) ||
		    !strncmp(*e, "UKPROBE", 7)) {
			puts(*e);
			n++;
		}
	}
	if (!n)
		puts("none");
	return 0;
}
