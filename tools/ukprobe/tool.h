/* SPDX-License-Identifier: MIT */
/* tool.h - shared by the ukprobe command's files (main.c, inspect.c). */
#ifndef UKPROBE_TOOL_H
#define UKPROBE_TOOL_H

#include "shm.h"

struct defs {
	char **v;		/* as given to the parser and the agent */
	char **orig;		/* as the user wrote them */
	int n, cap;
};

#include <stdbool.h>
#include <stddef.h>
#include <signal.h>

struct run_opts {
	struct defs defs;
	const char *output;
	const char *format;
	bool count, events, follow, verbose, latency;
	char *hists[UKS_MAX_HISTS];
	int nhists;
	size_t bufsize;		/* bytes per ring, power of 2 */
	size_t nrings;
	bool no_wait;
	unsigned long long unit_div;
	const char *unit;
	const char *by;		/* -c --by KEYS (agg.h) */
	unsigned int stack;	/* --stack: bytes of stack copied per hit */
	char **argv;		/* CMD ARGS */
	int pid;		/* -p PID: a running process */
	double duration;	/* --duration SECONDS (0: until Ctrl-C or its end) */
};

struct consumer;
struct uks;

/* attach.c: ukprobe trace -p PID: load the agent, attach, read the rings
 * until Ctrl-C, --duration or the process's end, detach.  0, or 1 with
 * the reason printed (the process untouched). */
int attach_run(const struct run_opts *o, const char *conf, const char *shm_path,
	       struct uks *shm, struct consumer *cons);
extern volatile sig_atomic_t stop_requested;

int defs_add(struct defs *d, const char *def);
int defs_add_file(struct defs *d, const char *path);
void tool_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

int cmd_list_symbols(int argc, char **argv, const char *usage);
int cmd_check(int argc, char **argv, const char *usage);
int cmd_report(int argc, char **argv, const char *usage);
int cmd_ctl(const char *cmd, int argc, char **argv, const char *usage);
char *tool_find_lib(const char *name);

#endif
