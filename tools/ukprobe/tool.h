/* SPDX-License-Identifier: MIT */
/* tool.h - shared by the ukprobe command's files (main.c, inspect.c). */
#ifndef UKPROBE_TOOL_H
#define UKPROBE_TOOL_H

#include "shm.h"

struct defs {
	char *v[UKS_MAX_EVENTS];	/* as given to the parser and the agent */
	char *orig[UKS_MAX_EVENTS];	/* as the user wrote them */
	int n;
};

int defs_add(struct defs *d, const char *def);
int defs_add_file(struct defs *d, const char *path);
void tool_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

int cmd_list_symbols(int argc, char **argv, const char *usage);
int cmd_check(int argc, char **argv, const char *usage);
int cmd_report(int argc, char **argv, const char *usage);

#endif
