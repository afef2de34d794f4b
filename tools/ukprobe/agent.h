/* SPDX-License-Identifier: MIT */
/*
 * agent.h - the agent ukprobe injects into the program it traces
 * (libukprobe-agent.so): shared by agent.c (set-up, fork/exec/exit),
 * handler.c (probe handlers: signal context) and writer.c (the writer
 * thread that formats the records).
 *
 * Data path: a probe hit runs a handler in the thread that hit it; the
 * handler counts the hit in the shared counters (shm.h) and appends a record
 * to its thread's ring, a single-producer single-consumer buffer claimed
 * from a preallocated pool the first time the thread hits a probe.  The
 * writer thread drains every ring, merges the records by time and writes
 * them out.  A full ring drops the record and counts it.
 */
#ifndef UKPROBE_AGENT_H
#define UKPROBE_AGENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ukprobes.h"
#include "probe_events.h"
#include "shm.h"

#define AGENT_HIDDEN __attribute__((visibility("hidden")))

enum out_format { FMT_TEXT, FMT_JSON, FMT_PERFETTO };

struct agent_conf {
	enum out_format fmt;
	int out_fd;		/* events go here */
	int shm_fd;
	size_t bufsize;		/* bytes per thread ring (power of 2) */
	bool follow;		/* --follow-fork */
	bool events;		/* write one record per hit */
	bool latency;		/* ukprobe latency: return probes feed lat */
	bool initial;		/* the process the command started */
	unsigned int writer_sleep_ms;	/* tests: slow writer */
	unsigned int drain_ms;	/* writer period */
	char *out_path;		/* -o FILE, to reopen if the fd was lost */
};

/* One definition. */
enum tev_state { TEV_PENDING, TEV_PLACED, TEV_FAILED };

struct tev {
	int id;
	struct pe_event ev;
	const char *def;
	enum tev_state state;
	bool is_ret;
	union {
		struct kprobe kp;
		struct kretprobe rp;
	} u;
	char symspec[600];	/* "obj:sym" for the engine */
	uintptr_t func;		/* probed address once placed */
	uint32_t max_rec;	/* largest record */
	int8_t hist_arg[UKS_MAX_HISTS];	/* arg index per --hist, or -1 */
	bool any_hist;
};

/* ------------------------------------------------------------------------ */
/* Rings                                                                     */
/* ------------------------------------------------------------------------ */

enum { RING_FREE, RING_OWNED };

struct ring {
	_Atomic uint64_t head;		/* producer: bytes written */
	_Atomic uint64_t tail;		/* consumer: bytes consumed */
	_Atomic int state;
	_Atomic int tid;
	char comm[16];			/* thread name, refreshed by the producer */
	uint64_t size;			/* power of 2 */
	char *data;
	/* Writer's own. */
	uint64_t cursor, end;
};

/* A record: header, then nargs times { int32 used; bytes }, each 8-aligned. */
#define REC_PAD		0xffffu		/* filler up to the end of the ring */
enum { REC_ENTRY, REC_RETURN };

struct rec {
	uint32_t size;		/* whole record, multiple of 8 */
	uint16_t event;		/* tev id, or REC_PAD */
	uint8_t kind;
	uint8_t nargs;
	int32_t tid;
	int32_t cpu;
	uint64_t ts;		/* CLOCK_MONOTONIC ns */
	uint64_t ip;		/* entry: probe address; return: function */
	uint64_t ret;		/* return: where it returns to */
	uint64_t entry_ts;	/* return: ts of the entry, 0 if unknown */
};

#define REC_ALIGN(x)	(((x) + 7u) & ~7u)

extern AGENT_HIDDEN struct agent_conf conf;
extern AGENT_HIDDEN struct tev *tevs;
extern AGENT_HIDDEN int ntevs;
extern AGENT_HIDDEN struct uks *shm;
extern AGENT_HIDDEN struct ring *rings;
extern AGENT_HIDDEN int nrings;
extern AGENT_HIDDEN _Atomic int rings_owned;
extern AGENT_HIDDEN _Atomic int tracing;	/* handlers record */
extern AGENT_HIDDEN _Atomic int recording;	/* records go to rings */
extern AGENT_HIDDEN _Atomic unsigned int writer_wake;
extern AGENT_HIDDEN _Atomic unsigned int comm_gen;	/* thread names changed */

/* handler.c */
AGENT_HIDDEN int agent_kprobe_pre(struct kprobe *p, struct pt_regs *regs);
AGENT_HIDDEN int agent_kretprobe_entry(struct kretprobe_instance *ri, struct pt_regs *regs);
AGENT_HIDDEN int agent_kretprobe_ret(struct kretprobe_instance *ri, struct pt_regs *regs);
AGENT_HIDDEN void agent_enter(void);	/* agent code on this thread: no events */
AGENT_HIDDEN void agent_leave(void);
AGENT_HIDDEN void agent_rings_after_fork(bool keep);
AGENT_HIDDEN uint64_t agent_now_ns(void);
AGENT_HIDDEN void agent_futex_wake(_Atomic unsigned int *w);

/* writer.c */
AGENT_HIDDEN int writer_start(void);
AGENT_HIDDEN void writer_flush(void);	/* drain everything now, wait */
AGENT_HIDDEN void writer_stop(unsigned int timeout_ms, bool flush_here);
AGENT_HIDDEN void writer_lock_for_fork(void);
AGENT_HIDDEN void writer_unlock_after_fork(bool child);
AGENT_HIDDEN bool writer_running(void);

/* agent.c */
AGENT_HIDDEN int agent_output_fd(void);	/* checked, reopened if lost */
AGENT_HIDDEN void agent_note_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

#endif
