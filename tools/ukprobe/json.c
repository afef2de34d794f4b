// SPDX-License-Identifier: MIT
/*
 * json.c - JSON string bodies (see json.h).  No allocation, no lock: the
 * writer thread of a traced process calls it.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "json.h"

/* Length of the well-formed UTF-8 sequence at s (Unicode's table 3-7: no
 * overlong forms, no surrogates, nothing past U+10FFFF), 0 if there is
 * none. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;	/* a continuation byte, 0xc0, 0xc1, 0xf5.. */
	if (len > n)
		return 0;
	/* The second byte's range narrows for these leads. */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

void json_escape(const char *str, size_t n, json_put_fn emit, void *arg)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)str;
	size_t run = 0;		/* bytes at s + i - run that pass as they are */

	for (size_t i = 0; i < n;) {
		unsigned char c = s[i];
		char esc[8];
		size_t elen = 0, len = utf8_len(s + i, n - i);

		if (len && c != '"' && c != '\\' && c >= 0x20 && c != 0x7f) {
			run += len;
			i += len;
			continue;
		}
		if (run)
			emit((const char *)s + i - run, run, arg);
		run = 0;
		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			elen = 2;
		} else if (c == '\n' || c == '\t' || c == '\r') {
			esc[0] = '\\';
			esc[1] = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
			elen = 2;
		} else {
			/* A control character: \u00XX; a byte that is not
			 * UTF-8: \udcXX. */
			memcpy(esc, len ? "\\u00" : "\\udc", 4);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			elen = 6;
		}
		emit(esc, elen, arg);
		i++;
	}
	if (run)
		emit((const char *)s + n - run, run, arg);
}

static void put_file(const char *s, size_t n, void *arg)
{
	fwrite(s, 1, n, (FILE *)arg);
}

void json_fputs(FILE *f, const char *s)
{
	json_escape(s, strlen(s), put_file, f);
}

void json_fputq(FILE *f, const char *s)
{
	fputc('"', f);
	json_fputs(f, s);
	fputc('"', f);
}
