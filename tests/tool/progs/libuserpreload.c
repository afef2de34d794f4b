// SPDX-License-Identifier: MIT
/*
 * A user's own LD_PRELOAD library: says in which program it was loaded, so
 * a test can tell that it is still in effect under ukprobe.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>

__attribute__((constructor)) static void announce(void)
{
	fprintf(stderr, "userpreload in %s\n", program_invocation_short_name);
}
