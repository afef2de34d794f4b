/* SPDX-License-Identifier: MIT */
/*
 * objmap.h - the objects each traced process had loaded, and when, as its
 * meta records told the command (ring.h: REC_EXEC, REC_OBJ, REC_OBJ_GONE):
 * what symbolizes the addresses of hit records in the command, live or
 * from a FILE.ukp, also after the process has exited or exec'd.
 *
 * Every entry is valid over a time span (from the record that announced it
 * to the one that ended it: an exec of the process, the object's
 * dlclose()), so a record is symbolized with the objects of its own time.
 */
#ifndef UKPROBE_OBJMAP_H
#define UKPROBE_OBJMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ring.h"

struct objmaps;

struct objmaps *objmaps_new(void);
void objmaps_free(struct objmaps *m);

/* Apply one meta record of process pid (REC_EXEC, REC_OBJ, REC_OBJ_GONE;
 * others are ignored). */
void objmaps_apply(struct objmaps *m, int pid, const struct rec *r);

/* addr in process pid at time ts, as "sym+0xoff/0xsize" (with_off) or
 * "sym", "obj+0xFILEOFF" outside symbols, "0xADDR" outside objects.
 * Returns a string kept until objmaps_free(). */
const char *objmaps_symbolize(struct objmaps *m, int pid, uint64_t ts, uint64_t addr,
			      bool with_off);

/* The file and load bias of the object holding addr in process pid at
 * time ts: 0, or -ENOENT. */
int objmaps_object(struct objmaps *m, int pid, uint64_t ts, uint64_t addr, const char **path,
		   uint64_t *bias);

/* The executable's name (basename) of pid at time ts, or NULL. */
const char *objmaps_exe(struct objmaps *m, int pid, uint64_t ts);

#endif
