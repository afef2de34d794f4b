/* SPDX-License-Identifier: MIT */
/* cet.h - see cet.c. */
#ifndef UKP_X86_CET_H
#define UKP_X86_CET_H

#include <stdbool.h>

/* Is CET feature @name ("ibt", "shstk") on for this thread?  API calls. */
bool x86_cet_feature(const char *name);
/* Does @line, one of /proc/self/status, say @name is on? */
bool x86_cet_line_has(const char *line, const char *name);

#endif
