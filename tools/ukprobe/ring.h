/* SPDX-License-Identifier: MIT */
/*
 * ring.h - the record rings in the memory the ukprobe command shares with
 * the traced processes (shm.h), and the records in them.  The same records
 * are what `ukprobe trace -o FILE.ukp` writes to its file (ukp_file.h).
 *
 * A ring is claimed by one thread of a traced process (state RING_DATA:
 * its probe hits), or by a process for the records that describe it
 * (RING_META: the objects it has loaded, where the agent places them).  The
 * thread is the only producer; the command is the only consumer.  The
 * producer writes a record past head, then publishes it by moving head
 * (release); the consumer reads up to head (acquire) and gives the room back
 * by moving tail, and bumping tail_seq, the futex word a waiting producer
 * sleeps on.  Nothing is ever formatted in the traced process: the command
 * does that, off the program's path, or writes the bytes as they are.
 *
 * When a ring is full the producer waits for the consumer, as long as the
 * consumer is moving (shm.h: beat_ns); when it cannot wait (the consumer
 * stalled, or --no-wait), the record is counted in lost, and the next
 * record that fits is preceded by a REC_LOST record with that count: the
 * stream says where and how many.
 */
#ifndef UKPROBE_RING_H
#define UKPROBE_RING_H

#include <stdatomic.h>
#include <stdint.h>

enum { RING_FREE, RING_DATA, RING_META, RING_RETIRED, RING_CLAIMING };

struct uks_ring {
	_Atomic uint64_t head;		/* producer: bytes written */
	_Atomic uint64_t tail;		/* consumer: bytes consumed */
	_Atomic uint32_t state;		/* RING_* */
	_Atomic uint32_t tail_seq;	/* bumped with tail: producers wait on it */
	_Atomic int32_t pid, tid;	/* owner */
	_Atomic uint64_t lost;		/* records lost, not yet in the stream */
	_Atomic uint32_t waiting;	/* the producer waits for room */
	_Atomic uint32_t kind;		/* RING_DATA or RING_META, kept when
					 * the ring is RING_RETIRED */
	uint64_t pad2[3];		/* one cache line each */
};

/*
 * A record: the header, then what its kind says, each record a multiple
 * of 8 bytes.  Hits (REC_ENTRY, REC_RETURN): the thread's name (16 bytes),
 * then nargs times { int32 used; int32 pad; used bytes, 8-aligned } as
 * fetch_arg() returned them (negative: an error, no bytes).
 */
enum {
	REC_ENTRY,		/* an entry probe's hit: ip = the probe's address */
	REC_RETURN,		/* a return: ip = the function, ret = where it
				 * returns to, entry_ts = when it was entered */
	REC_LOST,		/* ip = records lost here (ring full) */
	REC_OBJ,		/* meta: an object loaded: ip = load bias,
				 * ret = number of ranges; then ret pairs of
				 * u64 start, end; then the path (NUL) */
	REC_OBJ_GONE,		/* meta: an object unloaded: ip = its bias */
	REC_EXEC,		/* meta: a new process image (the agent
				 * started in it): then the executable's path */
	REC_NAME,		/* meta: the name a probe's function was given
				 * by (ip; then the name): an indirect
				 * function's implementation in a stripped
				 * library is shown by the name the user gave */
};

#define REC_PAD		0xffffu		/* event: filler up to the ring's end */

struct rec {
	uint32_t size;		/* whole record, multiple of 8 */
	uint16_t event;		/* definition index, or REC_PAD */
	uint8_t kind;		/* REC_* */
	uint8_t nargs;
	int32_t tid;
	int32_t cpu;
	uint64_t ts;		/* CLOCK_MONOTONIC ns */
	uint64_t ip;
	uint64_t ret;
	uint64_t entry_ts;
};

#define REC_ALIGN(x)	(((x) + 7u) & ~7u)

/* --stack: the registers unwinding starts from and a copy of the stack
 * from sp up (len bytes, fewer at the stack's top), 8-aligned. */
struct rec_stack {
	uint64_t pc, sp, fp;
	uint32_t len;
	uint32_t magic;		/* REC_STACK_MAGIC */
};
#define REC_STACK_MAGIC	0x6b617473u	/* "stak" */
#define REC_COMM_LEN	16

#endif
