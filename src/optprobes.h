/* SPDX-License-Identifier: MIT */
/* optprobes.h - shared by optprobes.c and the detour callback. */
#ifndef UKP_OPTPROBES_H
#define UKP_OPTPROBES_H

#include "internal.h"
#include "trap.h"
#include "grace.h"

uintptr_t ukp_opt_callback(struct ukp_point *pt, struct pt_regs *regs, uintptr_t ret_tramp,
		      int gpr);

#endif
