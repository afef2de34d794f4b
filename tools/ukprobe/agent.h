/* SPDX-License-Identifier: MIT */
/*
 * agent.h - the agent ukprobe injects into the program it traces
 * (libukprobe-agent.so): shared by agent.c (set-up, fork/exec/exit),
 * handler.c (probe handlers: signal context) and writer.c (the writer
 * thread that formats the records).
 *
 * Data path: a probe hit runs a handler in the thread that hit it; the
 * handler counts the hit in the shared counters (shm.h) and appends a binary
 * record to its thread's ring (ring.h), a single-producer single-consumer
 * buffer in the memory shared with the command, claimed from the pool the
 * first time the thread hits a probe.  The command reads every ring, and
 * writes the records as they are (FILE.ukp) or formats them.  Nothing runs
 * in the traced process for that: no thread, no flush at exit.
 */
#ifndef UKPROBE_AGENT_H
#define UKPROBE_AGENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ukprobes.h"
#include "probe_events.h"
#include "ring.h"
#include "shm.h"

#define AGENT_HIDDEN __attribute__((visibility("hidden")))

struct agent_conf {
	int shm_fd;
	bool follow;		/* --follow-fork */
	bool events;		/* write one record per hit */
	bool latency;		/* ukprobe latency: return probes feed lat */
	bool initial;		/* the process the command started */
	unsigned int stack;	/* --stack: bytes of stack copied per hit */
};

/* One definition. */
enum tev_state { TEV_PENDING, TEV_PLACED, TEV_FAILED };

struct tev;

/* One probe of a definition: one, or one per function a glob or a C++
 * name names.  The handlers find their definition through it. */
struct probe {
	union {
		struct kprobe kp;
		struct kretprobe rp;
	} u;
	struct tev *t;
	uintptr_t func;		/* probed address once placed */
	bool placed;
	char *symspec;		/* "obj:sym" of an indirect function (the
				 * engine resolves it to the implementation
				 * chosen), or NULL */
};

struct tev {
	int id;
	struct pe_event ev;
	const char *def;
	enum tev_state state;
	bool is_ret;
	struct probe *probes;	/* nprobes of them (placed, or not) */
	int nprobes;
	char symspec[600];	/* "obj:sym" for the engine */
	uint32_t max_rec;	/* largest record */
	int8_t hist_arg[UKS_MAX_HISTS];	/* arg index per --hist, or -1 */
	bool any_hist;
};

extern AGENT_HIDDEN struct agent_conf conf;
extern AGENT_HIDDEN struct tev *tevs;
extern AGENT_HIDDEN int ntevs;
extern AGENT_HIDDEN struct uks *shm;
extern AGENT_HIDDEN _Atomic int tracing;	/* handlers record */
extern AGENT_HIDDEN _Atomic unsigned int comm_gen;	/* thread names changed */

/* handler.c */
AGENT_HIDDEN int agent_kprobe_pre(struct kprobe *p, struct pt_regs *regs);
AGENT_HIDDEN int agent_kretprobe_entry(struct kretprobe_instance *ri, struct pt_regs *regs);
AGENT_HIDDEN int agent_kretprobe_ret(struct kretprobe_instance *ri, struct pt_regs *regs);
AGENT_HIDDEN void agent_enter(void);	/* agent code on this thread: no events */
AGENT_HIDDEN void agent_leave(void);
AGENT_HIDDEN void agent_rings_after_fork(void);
AGENT_HIDDEN void agent_rings_new_session(void);	/* attached again */
AGENT_HIDDEN void agent_ring_retire(void);
AGENT_HIDDEN uint64_t agent_now_ns(void);
AGENT_HIDDEN void agent_futex_wake(_Atomic unsigned int *w);
AGENT_HIDDEN struct uks_ring *agent_ring(int i);
AGENT_HIDDEN char *agent_ring_data(int i);
AGENT_HIDDEN int agent_claim_ring(uint32_t state);
AGENT_HIDDEN char *agent_ring_room(struct uks_ring *r, char *data, uint32_t need,
				   uint64_t *headp);
AGENT_HIDDEN void agent_ring_commit(struct uks_ring *r, uint64_t head, uint32_t size);

/* agent_signals.c: attached, the program's signal handlers back at detach */
AGENT_HIDDEN void agent_signals_save(void);
AGENT_HIDDEN void agent_signals_restore(void);

/* meta.c: the records that describe the process (ring.h, RING_META) */
AGENT_HIDDEN void meta_start(void);		/* a new image, or a fork child */
AGENT_HIDDEN void meta_objects_changed(void);	/* announce new objects */
AGENT_HIDDEN void meta_object_gone(uintptr_t bias);
AGENT_HIDDEN void meta_after_fork(void);
AGENT_HIDDEN void meta_retire(void);
AGENT_HIDDEN void meta_name(uintptr_t addr, const char *name);

/* agent.c */
AGENT_HIDDEN void agent_note_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

#endif
