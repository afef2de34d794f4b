/* SPDX-License-Identifier: MIT */
/*
 * unwind.h - user stacks of hit records (--stack), unwound in the command
 * (unwind.c): the copy of the stack the handler made, the objects' call
 * frame information (.eh_frame), else their frame pointers.
 */
#ifndef UKPROBE_UNWIND_H
#define UKPROBE_UNWIND_H

#include <stdint.h>

#include "objmap.h"
#include "ring.h"

/* The return addresses of the stack s of process pid at time ts,
 * innermost (the probe's address) first; up to max.  Returns how many. */
int unwind_stack(struct objmaps *m, int pid, uint64_t ts, const struct rec_stack *s,
		 uint64_t *pcs, int max);

#endif
