// SPDX-License-Identifier: MIT
/*
 * debug_gpr.c - the checks of UKP_DEBUG builds (SAN=1): who may walk the
 * probe tables (internal.h).  General registers only: the detour callback
 * calls them where no vector register was saved.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "grace.h"
#include "trap.h"

#ifdef UKP_DEBUG
/* In a read section of either kind (grace.h). */
bool ukp_walk_allowed(void)
{
	struct ukp_kcb *kcb = ukp_this_kcb();

	if (kcb->srcu_depth > 0 || (kcb->qs && kcb->qs->nest > 0))
		return true;
	return ukp_kprobe_mutex_held();
}
NOKPROBE_SYMBOL(ukp_walk_allowed);

bool ukp_kprobe_mutex_held(void)
{
	/* glibc records the owner of every kind of mutex. */
	return ukp_kprobe_mutex.__data.__owner == (int)syscall(SYS_gettid);
}
NOKPROBE_SYMBOL(ukp_kprobe_mutex_held);

void ukp_assert_fail(const char *what, const char *file, int line)
{
	static const char pfx[] = "ukprobes: assertion failed: ";

	(void)!write(2, pfx, sizeof(pfx) - 1);
	(void)!write(2, file, __builtin_strlen(file));
	(void)!write(2, ": ", 2);
	(void)!write(2, what, __builtin_strlen(what));
	(void)!write(2, "\n", 1);
	(void)line;
	abort();
}
NOKPROBE_SYMBOL(ukp_assert_fail);
#endif
