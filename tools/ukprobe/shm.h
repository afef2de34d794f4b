/* SPDX-License-Identifier: MIT */
/*
 * shm.h - what the ukprobe command and its agents share.
 *
 * The command creates one memfd of this layout and passes it to the agent
 * (and, with --follow-fork, to every traced descendant).  Agents add to the
 * counters from probe handlers with atomic operations (no lock, no
 * allocation); the command reads them once the program has exited and prints
 * the counts, histograms, drops and definitions that were never placed.
 * Totals are thus exact over every traced process, even one killed by a
 * signal.
 *
 * The environment the command gives the agent (removed by the agent before
 * the program's main runs):
 *   UKPROBE_AGENT_CONF   key=value;... (see agent.c: parse_conf)
 *   UKPROBE_AGENT_DEFS   the definitions, one per line
 *   UKPROBE_AGENT_HISTS  the --hist names, one per line
 *   UKPROBE_AGENT_ORIG_LD_PRELOAD, UKPROBE_AGENT_ORIG_LD_AUDIT,
 *   UKPROBE_AGENT_ORIG_GLIBC_TUNABLES
 *                        the user's own values, set back (absent: unset;
 *                        agent_env.h)
 */
#ifndef UKPROBE_SHM_H
#define UKPROBE_SHM_H

#include <stdatomic.h>
#include <stdint.h>

#define UKS_MAGIC		0x756b7072u	/* "ukpr" */
#define UKS_VERSION		2u
#define UKS_MAX_EVENTS		128
#define UKS_MAX_HISTS		8
#define UKS_ERRLEN		512
#define UKS_NAMELEN		96
/*
 * Log2 buckets: [0] negative, [1] zero, [k + 1] = [2^(k-1), 2^k) for
 * k = 1..64 (so [2] holds 1, [3] holds 2..3, [65] holds 2^63 and up).
 */
#define UKS_BUCKETS		66

static inline int uks_bucket_u(uint64_t v)
{
	return v ? 2 + (63 - __builtin_clzll(v)) : 1;
}

static inline int uks_bucket_s(int64_t v)
{
	return v < 0 ? 0 : uks_bucket_u((uint64_t)v);
}

struct uks_hist {
	_Atomic uint64_t b[UKS_BUCKETS];
	_Atomic uint64_t count;
	_Atomic uint64_t sum;		/* unsigned wrap-around sum */
};

struct uks_event {
	_Atomic uint64_t hits;		/* handler runs while tracing */
	_Atomic uint64_t missed;	/* the engine's nmissed, added at exit */
	_Atomic uint64_t dropped;	/* records lost to a full buffer */
	_Atomic uint32_t placed;	/* processes where it was registered */
	_Atomic uint32_t failed;	/* processes where registration failed */
	_Atomic uint32_t error_set;
	int32_t err_code, err_pos;	/* its PE_ERR_* code and caret (0: none) */
	char error[UKS_ERRLEN];		/* first failure, as text */
	struct uks_hist lat;		/* ukprobe latency: durations in ns */
};

struct uks {
	uint32_t magic, version;
	uint32_t nevents, nhists;
	_Atomic uint64_t drops;		/* records lost to full buffers */
	_Atomic uint64_t no_buffer;	/* records lost: no per-thread buffer */
	_Atomic uint64_t lost_exit;	/* records made after the last flush */
	_Atomic uint64_t write_errors;	/* failed writes of the output */
	_Atomic uint32_t processes;	/* agents that started tracing */
	_Atomic uint32_t fatal;		/* a definition failed at start */
	_Atomic uint32_t agent_errors;	/* agent problems (see agent_error) */
	_Atomic uint32_t agent_error_set;
	char agent_error[UKS_ERRLEN];
	struct uks_event ev[UKS_MAX_EVENTS];
	struct uks_hist hist[UKS_MAX_HISTS];
};

#endif
