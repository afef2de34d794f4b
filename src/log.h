/* SPDX-License-Identifier: MIT */
/* log.h - the library's messages, through the callback of ukprobes_set_print().
 * Never call these on the trap path: they format and may allocate. */
#ifndef UKP_LOG_H
#define UKP_LOG_H

#include <ukprobes.h>

__attribute__((format(printf, 2, 3)))
void ukp_log(enum ukprobes_print_level level, const char *fmt, ...);

#define pr_fmt(fmt) "ukprobes: " fmt
#define pr_warn(fmt, ...)  ukp_log(UKPROBES_WARN, pr_fmt(fmt), ##__VA_ARGS__)
#define pr_info(fmt, ...)  ukp_log(UKPROBES_INFO, pr_fmt(fmt), ##__VA_ARGS__)
#define pr_debug(fmt, ...) ukp_log(UKPROBES_DEBUG, pr_fmt(fmt), ##__VA_ARGS__)

#endif
