// SPDX-License-Identifier: MIT
/*
 * point_check.c - probe points checked in their object's file (see
 * point_check.h).  The boundary check decodes forward from a known start
 * of code, as the kernel's can_probe() decodes from the symbol's start;
 * instruction lengths come from the tool's arch back end (tool_arch.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "point_check.h"
#include "tool_arch.h"

#define DECODE_WINDOW	(64 * 1024)

static int fail(struct point_info *pi, struct pe_error *err, int code, int pos,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int fail(struct point_info *pi, struct pe_error *err, int code, int pos,
		const char *fmt, ...)
{
	va_list ap;

	err->code = code;
	err->pos = pos;
	err->reason = pe_error_reason(code);
	va_start(ap, fmt);
	vsnprintf(pi->why, sizeof(pi->why), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/*
 * Decode from from up to to.  0 when an instruction starts at to;
 * -EILSEQ when to is inside one (*at, *len: that instruction); -EBADMSG
 * when the bytes at *at do not decode; -EIO when they cannot be read.
 */
static int decode_to(const struct symfile *sf, uint64_t from, uint64_t to,
		     uint64_t *at, int *len)
{
	uint8_t *buf = malloc(DECODE_WINDOW);
	uint64_t pos = from;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	while (pos < to) {
		size_t want = DECODE_WINDOW;
		long n;
		size_t i = 0;

		if (to - pos + TOOL_MAX_INSN < want)
			want = (size_t)(to - pos) + TOOL_MAX_INSN;
		n = symfile_read(sf, pos, buf, want);
		if (n <= 0) {
			ret = -EIO;
			break;
		}
		/* Whole instructions only, unless the data ends here. */
		while (pos + i < to && (i + TOOL_MAX_INSN <= (size_t)n || (size_t)n < want)) {
			int l = tool_insn_len(buf + i, (size_t)n - i);

			if (l <= 0) {
				*at = pos + i;
				ret = -EBADMSG;
				goto out;
			}
			*at = pos + i;
			*len = l;
			i += (size_t)l;
		}
		if (!i) {
			ret = -EIO;
			break;
		}
		pos += i;
	}
	if (!ret && pos != to)
		ret = -EILSEQ;
out:
	free(buf);
	return ret;
}

/* "name+0xoff" of vaddr in fn; without a symbol, its file offset (what
 * the OBJ:0xOFFSET form and list-symbols show). */
static const char *where(const struct symfile *sf, const struct ksym *fn, uint64_t vaddr,
			 char *buf, size_t len)
{
	uint64_t off;

	if (fn)
		snprintf(buf, len, "%s+0x%llx", ksym_name(sf, fn),
			 (unsigned long long)(vaddr - fn->addr));
	else if (!symfile_vaddr_to_off(sf, vaddr, &off))
		snprintf(buf, len, "file offset 0x%llx", (unsigned long long)off);
	else
		snprintf(buf, len, "address 0x%llx", (unsigned long long)vaddr);
	return buf;
}

const char *point_start_words(const char *from_what)
{
	if (!strcmp(from_what, "symbol"))
		return "a function symbol's start";
	if (!strcmp(from_what, "unwind table"))
		return "a function start in the unwind tables";
	return "the start of the section";
}

/* The boundary check of pi->vaddr from the nearest known start of code. */
static int check_boundary(const struct symfile *sf, uint64_t from, const char *from_what,
			  struct point_info *pi, struct pe_error *err, int pos)
{
	uint64_t at = 0;
	int len = 0, ret;
	char w1[300], w2[300], w3[300];

	pi->from = from;
	pi->from_what = from_what;
	ret = decode_to(sf, from, pi->vaddr, &at, &len);
	if (ret == -EILSEQ)
		return fail(pi, err, PE_ERR_BAD_INSN_BNDRY, pos,
			    "%s is inside the %d-byte instruction at %s (decoded from %s, %s)",
			    where(sf, pi->fn, pi->vaddr, w1, sizeof(w1)), len,
			    where(sf, pi->fn, at, w2, sizeof(w2)),
			    where(sf, NULL, from, w3, sizeof(w3)), point_start_words(from_what));
	if (ret == -EBADMSG)
		return fail(pi, err, PE_ERR_BAD_INSN_BNDRY, pos,
			    "the code does not decode at %s (decoded from %s, %s)",
			    where(sf, pi->fn, at, w1, sizeof(w1)),
			    where(sf, NULL, from, w3, sizeof(w3)), point_start_words(from_what));
	if (ret)
		return fail(pi, err, PE_ERR_BAD_PROBE_ADDR, pos, "cannot read the code of %s: %s",
			    sf->path, strerror(-ret));
	return 0;
}

/* Where an entry probe on fn goes: past what the arch skips (endbr64). */
static void entry_skip(const struct symfile *sf, uint64_t entry, struct point_info *pi)
{
	uint8_t code[TOOL_MAX_INSN];
	long n = symfile_read(sf, entry, code, sizeof(code));

	pi->skip = n > 0 ? tool_entry_skip(code, (size_t)n, &pi->skipped) : 0;
}

int point_check_vaddr(const struct pe_event *ev, const struct symfile *sf, uint64_t vaddr,
		      struct point_info *pi, struct pe_error *err)
{
	int pos = ev->point_pos;
	uint64_t from;
	const char *from_what;
	char w[300];

	if (ev->addr_is_file_offset)
		pos += (int)strlen(ev->object) + 1;
	pi->vaddr = vaddr;
	pi->fn = symfile_containing(sf, vaddr);
	if (pi->fn && !ksym_is_func(pi->fn))
		pi->fn = NULL;
	if (!symfile_vaddr_exec(sf, vaddr))
		return fail(pi, err, ev->addr_is_file_offset ? PE_ERR_BAD_FILE_OFFS :
			    PE_ERR_BAD_PROBE_ADDR, pos, "0x%llx is not in an executable segment of %s",
			    (unsigned long long)vaddr, sf->path);
	if (symfile_code_start(sf, vaddr, &from, &from_what))
		return 0;	/* nothing known to decode from */
	if (check_boundary(sf, from, from_what, pi, err, pos))
		return -EINVAL;
	if (ev->kind == PE_RETURN) {
		bool known;
		uint64_t entry;
		const char *what;

		/* At a function's entry, or just past what an entry probe
		 * skips there (endbr64). */
		if (!symfile_func_start(sf, vaddr, &known) && known) {
			pi->skip = 0;
			if (!symfile_code_start(sf, vaddr - 1, &entry, &what) &&
			    strcmp(what, "section") && symfile_func_start(sf, entry, &known))
				entry_skip(sf, entry, pi);
			if (!pi->skip || vaddr != entry + pi->skip)
				return fail(pi, err, PE_ERR_BAD_RETPROBE, ev->point_pos,
					    "%s is not a function entry",
					    where(sf, pi->fn, vaddr, w, sizeof(w)));
		}
	}
	return 0;
}

int point_check_event(const struct pe_event *ev, const struct symfile *sf,
		      struct point_info *pi, struct pe_error *err)
{
	const struct ksym *s;
	uint64_t vaddr;

	memset(pi, 0, sizeof(*pi));
	memset(err, 0, sizeof(*err));
	if (ev->addr_is_file_offset) {
		if (symfile_off_to_vaddr(sf, ev->address, &vaddr))
			return fail(pi, err, PE_ERR_BAD_FILE_OFFS,
				    ev->point_pos + (int)strlen(ev->object) + 1,
				    "file offset 0x%lx is in no segment of %s", ev->address, sf->path);
		return point_check_vaddr(ev, sf, vaddr, pi, err);
	}
	if (!ev->symbol[0])
		return 0;	/* an absolute address: known at run time */
	s = symfile_lookup(sf, ev->symbol);
	if (!s)
		return fail(pi, err, PE_ERR_BAD_PROBE_ADDR, ev->point_pos, "%s has no symbol %s",
			    sf->path, ev->symbol);
	pi->fn = s;
	pi->vaddr = s->addr + ev->offset;
	if (!ksym_is_func(s) || !symfile_vaddr_exec(sf, s->addr))
		return fail(pi, err, PE_ERR_BAD_PROBE_ADDR, ev->point_pos,
			    "%s is not a function (%s)", ev->symbol, sf->path);
	if (ev->kind == PE_RETURN && ev->offset)
		return fail(pi, err, PE_ERR_BAD_RETPROBE, ev->point_pos,
			    "a return probe goes on the function's entry: %s+0", ev->symbol);
	if (s->type == 10 /* STT_GNU_IFUNC */) {
		/* The symbol is the resolver; where the probe goes is the
		 * implementation it picks: checked when placed. */
		pi->ifunc = true;
		return 0;
	}
	if (s->size && ev->offset >= s->size)
		return fail(pi, err, PE_ERR_BAD_PROBE_ADDR, ev->point_pos,
			    "%s is %llu bytes: +%lu is past its end", ev->symbol,
			    (unsigned long long)s->size, ev->offset);
	if (!ev->offset) {
		entry_skip(sf, s->addr, pi);
		return 0;
	}
	return check_boundary(sf, s->addr, "symbol", pi, err, ev->point_pos);
}

void point_print_error(FILE *out, const char *def, const struct pe_error *err, const char *why)
{
	pe_print_error(out, def, err);
	if (why && *why)
		fprintf(out, "  %s\n", why);
}
