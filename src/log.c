// SPDX-License-Identifier: MIT
/* log.c - the print callback, as libbpf_set_print(). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"

static int ukp_default_print(enum ukprobes_print_level level, const char *fmt,
			     va_list ap)
{
	/* Debug messages only on request, as libbpf does. */
	if (level == UKPROBES_DEBUG && !getenv("UKPROBES_DEBUG"))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static ukprobes_print_fn_t ukp_print = ukp_default_print;

UKP_API ukprobes_print_fn_t ukprobes_set_print(ukprobes_print_fn_t fn)
{
	ukprobes_print_fn_t old = ukp_print;

	ukp_print = fn;
	return old;
}

void ukp_log(enum ukprobes_print_level level, const char *fmt, ...)
{
	va_list ap;
	ukprobes_print_fn_t fn = ukp_print;

	if (!fn)
		return;
	va_start(ap, fmt);
	fn(level, fmt, ap);
	va_end(ap);
}
