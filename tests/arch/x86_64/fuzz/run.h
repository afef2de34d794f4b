/* SPDX-License-Identifier: MIT */
/*
 * run.h - what the parent (run.c) and the child processes (child.c) of a
 * case share: the modes and the shared result areas.
 */
#ifndef FUZZ_RUN_H
#define FUZZ_RUN_H

#include "fuzz.h"

enum { IT_ONCE, IT_EARLY, IT_FLIP, IT_ASYNC };

/* What each mode does, and what it is compared with. */
struct mode_info {
	bool opt;		/* optimization on */
	bool post;		/* a post handler (the single-step path) */
	bool gpr;		/* KPROBE_FLAG_GPR_ONLY */
	bool modify;		/* handlers change registers */
	uint8_t iterate;	/* IT_* */
	unsigned int sparse;	/* 0: every instruction; else the mask's salt */
	int ref;		/* the run the final state must equal */
	bool trace;		/* handler records against the trace (else
				 * against the reference run's) */
};
extern const struct mode_info fuzz_modes[FM_COUNT];

/* One per mode (shared memory, written by the children), and two spares
 * for minimizing. */
extern struct fuzz_result *fuzz_results;
#define SPARE FM_COUNT
#define SPARE_REF (FM_COUNT + 1)

/* child.c: the child of a run: set up, run mode @m with probes where
 * @mask says, leave the result in @r. */
void fuzz_child(const struct fuzz_seq *s, enum fuzz_mode m, const uint8_t *mask,
		struct fuzz_result *r);

#endif
