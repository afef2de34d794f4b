// SPDX-License-Identifier: MIT
/* modes.c - the ways a case is run, and what each is compared with. */
#include "run.h"

const char *const fuzz_mode_name[FM_COUNT] = {
	[FM_NATIVE] = "native", [FM_TRACE] = "trace", [FM_BOOST] = "boost",
	[FM_STEP] = "step", [FM_OPT_ALL] = "opt-all", [FM_OPT_SPARSE] = "opt-sparse",
	[FM_OPT_GPR] = "opt-gpr", [FM_OPT_EARLY] = "opt-early", [FM_OPT_FLIP] = "opt-flip",
	[FM_MOD_BOOST] = "mod-boost", [FM_MOD_STEP] = "mod-step", [FM_MOD_OPT] = "mod-opt",
	[FM_MOD_SBP] = "mod-sbp", [FM_MOD_SOPT] = "mod-sopt",
	[FM_ASYNC_BOOST] = "async-boost", [FM_ASYNC_STEP] = "async-step",
	[FM_ASYNC_OPT] = "async-opt",
};

const struct mode_info fuzz_modes[FM_COUNT] = {
	[FM_NATIVE] = { .ref = -1 },
	[FM_TRACE] = { .ref = FM_NATIVE },
	[FM_BOOST] = { .ref = FM_NATIVE, .trace = true },
	[FM_STEP] = { .post = true, .ref = FM_NATIVE, .trace = true },
	[FM_OPT_ALL] = { .opt = true, .ref = FM_NATIVE, .trace = true },
	[FM_OPT_SPARSE] = { .opt = true, .sparse = 1, .ref = FM_NATIVE, .trace = true },
	[FM_OPT_GPR] = { .opt = true, .gpr = true, .sparse = 2, .ref = FM_NATIVE, .trace = true },
	[FM_OPT_EARLY] = { .opt = true, .sparse = 3, .iterate = IT_EARLY, .ref = FM_NATIVE,
			   .trace = true },
	[FM_OPT_FLIP] = { .opt = true, .sparse = 4, .iterate = IT_FLIP, .ref = FM_NATIVE,
			  .trace = true },
	[FM_MOD_BOOST] = { .modify = true, .ref = -1 },
	[FM_MOD_STEP] = { .modify = true, .post = true, .ref = FM_MOD_BOOST },
	[FM_MOD_OPT] = { .modify = true, .opt = true, .ref = FM_MOD_BOOST },
	[FM_MOD_SBP] = { .modify = true, .sparse = 5, .ref = -1 },
	[FM_MOD_SOPT] = { .modify = true, .opt = true, .sparse = 5, .ref = FM_MOD_SBP },
	[FM_ASYNC_BOOST] = { .iterate = IT_ASYNC, .ref = FM_NATIVE, .trace = true },
	[FM_ASYNC_STEP] = { .post = true, .iterate = IT_ASYNC, .ref = FM_NATIVE, .trace = true },
	[FM_ASYNC_OPT] = { .opt = true, .sparse = 6, .iterate = IT_ASYNC, .ref = FM_NATIVE,
			   .trace = true },
};
