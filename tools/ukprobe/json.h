/* SPDX-License-Identifier: MIT */
/*
 * json.h - the bodies of JSON strings in ukprobe's output (--format json,
 * perfetto, the JSON summaries).  The bytes come from the traced program
 * and from file names: UTF-8 passes as it is; a byte that does not start a
 * well-formed UTF-8 sequence is written \udcXX (a lone low surrogate for
 * byte XX, as Python's "surrogateescape" decodes it), so nothing is lost
 * and every parser accepts the output; quotes, backslashes and control
 * characters are escaped as JSON requires.
 */
#ifndef UKPROBE_JSON_H
#define UKPROBE_JSON_H

#include <stddef.h>
#include <stdio.h>

/* Called with consecutive pieces of the escaped body. */
typedef void (*json_put_fn)(const char *s, size_t n, void *arg);

/* The escaped body of the n bytes at s (no quotes around it). */
void json_escape(const char *s, size_t n, json_put_fn put, void *arg);

/* The same, written to f: a NUL-terminated string's body, and one in
 * quotes. */
void json_fputs(FILE *f, const char *s);
void json_fputq(FILE *f, const char *s);

#endif
