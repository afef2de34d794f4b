/* SPDX-License-Identifier: MIT */
/*
 * consume.h - the command's side of the rings (ring.h): it reads what the
 * traced processes record, as long as they run and after they are gone,
 * and either writes the bytes as they are (FILE.ukp: a writer that only
 * copies) or formats them (format.h), merged by time.
 */
#ifndef UKPROBE_CONSUME_H
#define UKPROBE_CONSUME_H

#include <stdbool.h>
#include <stdint.h>

#include "format.h"
#include "shm.h"

struct consumer {
	struct uks *shm;
	struct fmt_ctx *fmt;	/* formats (fmt->fmt != FMT_UKP) */
	int ukp_fd;		/* FMT_UKP: the file */
	unsigned long long no_buffer_seen;
	unsigned int rounds;
	bool write_failed;
	unsigned int test_sleep_ms;	/* UKPROBE_TEST_CONSUMER_SLEEP_MS */
	/* Scratch for one round. */
	struct cons_src *src;
};

void consumer_init(struct consumer *c, struct uks *shm, struct fmt_ctx *fmt, int ukp_fd);
void consumer_fini(struct consumer *c);

/* One round: every ring read up to where its producer was; the room is
 * given back and waiting producers woken.  Returns the bytes read. */
uint64_t consumer_drain(struct consumer *c);

/* Everything left: the rings read until empty, the losses no record
 * marked yet marked.  Once every producer is gone. */
void consumer_final(struct consumer *c);

/* Tell the producers the consumer is alive (shm.h: beat_ns). */
void consumer_beat(struct consumer *c);

/* The command is done: producers left (none should be) drop. */
void consumer_close(struct consumer *c);

uint64_t ukp_now_ns(void);

#endif
