// SPDX-License-Identifier: MIT
/*
 * optprobes_none.c - the jump optimizer's side of the core, for a port that
 * has no optimized probes (its arch.mk does not set ARCH_OPTPROBES): every
 * probe stays a breakpoint probe, as in a kernel built without
 * CONFIG_OPTPROBES.  The switch reads 0 and cannot be turned on.
 */
#include <errno.h>

#include "internal.h"

bool ukp_unoptimize(struct ukp_point *pt)
{
	(void)pt;
	return false;
}

void ukp_opt_reclaim(void)
{
}

bool ukp_opt_make_room(uintptr_t addr)
{
	(void)addr;
	return false;
}

bool ukp_opt_original_byte(struct ukp_point *pt, size_t i, uint8_t *b)
{
	(void)pt, (void)i, (void)b;
	return false;
}

void ukp_opt_queue_point(struct ukp_point *pt)
{
	(void)pt;
}

void ukp_opt_forget(struct ukp_point *pt)
{
	(void)pt;
}

void ukp_opt_forget_gone(struct ukp_point *pt)
{
	(void)pt;
}

size_t ukp_optimize_pass(unsigned int max_wait_us)
{
	(void)max_wait_us;
	return 0;
}

void ukp_opt_after_fork(void)
{
}

void ukp_opt_env_default(void)
{
}

bool ukp_opt_take_dead_point(struct ukp_point *pt)
{
	(void)pt;
	return false;
}

uintptr_t ukp_opt_resume_ip(struct ukp_point *pt)
{
	(void)pt;
	return 0;
}
NOKPROBE_SYMBOL(ukp_opt_resume_ip);

uintptr_t ukp_opt_region_copy(uintptr_t ip)
{
	(void)ip;
	return 0;
}
NOKPROBE_SYMBOL(ukp_opt_region_copy);

uintptr_t ukp_opt_redirect(uintptr_t ip)
{
	(void)ip;
	return 0;
}
NOKPROBE_SYMBOL(ukp_opt_redirect);

UKP_API int ukprobes_set_optimization(int on)
{
	return on ? -EOPNOTSUPP : 0;
}

UKP_API int ukprobes_optimization(void)
{
	return 0;
}

UKP_API int ukprobes_wait_optimizer(void)
{
	return 0;
}
