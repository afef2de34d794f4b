/* SPDX-License-Identifier: MIT */
/*
 * scn_util.h - helpers for the scenario tests (tests/scenario/): snapshots of
 * the process state that a failed registration must leave untouched (code
 * bytes, signal dispositions as the program and the kernel see them,
 * /proc/self/maps), and small utilities.  libc only: nothing here calls
 * ukprobes, so linking it into every test program is harmless.
 */
#ifndef SCN_UTIL_H
#define SCN_UTIL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Targets must stay out of line and uncloned, so the symbol is the code. */
#define SCN_NOINLINE __attribute__((noinline, noclone, used))

/* Assembly helpers: FUNC/END give symbol bounds, LABEL a global label. */

#define SCN_MAX_RANGES 8
#define SCN_RANGE_MAX 256
#define SCN_MAPS_MAX (1 << 16)
#define SCN_NSIGS 5

/* The kernel's struct sigaction for rt_sigaction(2) on x86-64. */
struct scn_ksigaction {
	unsigned long handler;
	unsigned long flags;
	unsigned long restorer;
	unsigned long mask;
};

struct scn_snapshot {
	int nranges;
	const void *addr[SCN_MAX_RANGES];
	size_t len[SCN_MAX_RANGES];
	unsigned char bytes[SCN_MAX_RANGES][SCN_RANGE_MAX];
	struct sigaction prog_sa[SCN_NSIGS];	/* sigaction(sig, NULL, &old) */
	struct scn_ksigaction kern_sa[SCN_NSIGS]; /* raw rt_sigaction */
	char maps[SCN_MAPS_MAX];		/* without the [stack] line */
	size_t maps_len;
};

/* The signals ukprobes takes: SIGTRAP SIGSEGV SIGBUS SIGFPE SIGILL. */
extern const int scn_sigs[SCN_NSIGS];

/* Start an empty snapshot; add code ranges (<= SCN_RANGE_MAX bytes each). */
void scn_snapshot_init(struct scn_snapshot *s);
void scn_snapshot_add_code(struct scn_snapshot *s, const void *addr, size_t len);
/* Record the code ranges, the signal dispositions and the maps. */
void scn_snapshot_take(struct scn_snapshot *s);
/*
 * Take the state again and compare it with @before.  Returns 0 when equal;
 * otherwise 1 and a description of the first difference in @why.
 */
int scn_snapshot_compare(const struct scn_snapshot *before, char *why,
			 size_t whylen);

/* Read /proc/self/maps without malloc (the [stack] line is dropped). */
size_t scn_read_maps(char *buf, size_t cap);

/* Basename of /proc/self/exe (the object name ukprobes uses for it). */
const char *scn_exe_name(void);

/* Count lines in a buffer. */
int scn_count_lines(const char *buf, size_t len);

/* Spin for about @ns nanoseconds (CLOCK_MONOTONIC, no syscall with vDSO). */
void scn_spin_ns(long ns);

/* Current time in nanoseconds (CLOCK_MONOTONIC). */
long long scn_now_ns(void);

/* Is @addr in an executable mapping of no file (code made at run time, as
 * ukprobes' kretprobe return stubs)? */
bool scn_in_anonymous_text(uintptr_t addr);

#endif
