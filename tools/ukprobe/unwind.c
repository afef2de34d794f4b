// SPDX-License-Identifier: MIT
/*
 * unwind.c - user stacks of hit records (--stack), unwound by the command
 * from the copy of the stack the handler made (ring.h: struct rec_stack),
 * with each object's .eh_frame (its call frame information, read from the
 * file with libelf), else its frame pointers: what perf does with
 * --call-graph dwarf, off the program's path (the handler only copies).
 *
 * The CFI interpreter knows what compilers emit for ordinary code: the
 * CFA as a register plus an offset, registers saved at CFA offsets,
 * remember/restore state.  A CFA given by an expression (PLT entries)
 * ends the walk at that frame, or the frame pointer takes over.  The
 * register numbers and the frame-pointer frame are the architecture's
 * (tool_arch.h); the return address must be saved in the frame (so it is
 * on x86: a port whose return address stays in a link register at a
 * function's entry walks its leaf frames by frame pointer only).  Words
 * on the stack are unsigned longs: the command and the program it traces
 * are of one ELF class and machine.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dwarf_eh.h"
#include "tool_arch.h"
#include "unwind.h"

/* ------------------------------------------------------------------------ */
/* .eh_frame of a file                                                       */
/* ------------------------------------------------------------------------ */

struct fde {
	uint64_t start, end;	/* link-time addresses */
	uint32_t off;		/* of the FDE in data */
};

struct ehf {
	struct ehf *next;
	char *path;
	uint8_t *data;		/* .eh_frame */
	size_t len;
	uint64_t addr;		/* its link-time address */
	struct fde *fdes;	/* sorted by start */
	size_t nfdes;
};

static struct ehf *ehf_cache;

struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra;
	uint8_t fde_enc;
	bool aug_z;
	const uint8_t *insns, *insns_end;
};

static int parse_cie(const struct ehf *e, size_t off, struct cie *c)
{
	const uint8_t *p = e->data + off, *end = e->data + e->len;
	uint32_t len;
	const char *aug;
	uint8_t version;

	if (end - p < 8)
		return -EINVAL;
	memcpy(&len, p, 4);
	if (len == 0xffffffff || len > (size_t)(end - p) - 4)
		return -EINVAL;
	end = p + 4 + len;
	p += 8;	/* length, CIE id 0 */
	version = *p++;
	aug = (const char *)p;
	p += strnlen(aug, (size_t)(end - p)) + 1;
	if (p > end)
		return -EINVAL;
	c->code_align = dwarf_uleb(&p, end);
	c->data_align = dwarf_sleb(&p, end);
	c->ra = version == 1 ? *p++ : dwarf_uleb(&p, end);
	c->fde_enc = 0;
	c->aug_z = aug[0] == 'z';
	if (c->aug_z) {
		uint64_t alen = dwarf_uleb(&p, end);
		const uint8_t *q = p;

		for (const char *a = aug + 1; *a && q < end; a++) {
			if (*a == 'R') {
				c->fde_enc = *q++;
			} else if (*a == 'P') {
				uint8_t pe = *q++;
				uint64_t dummy;

				if (dwarf_eh_pointer(&q, end, pe & 0x7f, e->addr + (uint64_t)(q - e->data), 0, &dummy))
					return -EINVAL;
			} else if (*a == 'L') {
				q++;
			} else if (*a != 'S') {
				break;
			}
		}
		p += alen;
	}
	if (p > end)
		return -EINVAL;
	c->insns = p;
	c->insns_end = end;
	return 0;
}

static int cmp_fde(const void *a, const void *b)
{
	const struct fde *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static void index_fdes(struct ehf *e)
{
	size_t off = 0, cap = 0;

	while (off + 8 <= e->len) {
		uint32_t len, id;
		const uint8_t *p;
		struct cie c;
		uint64_t start, range;

		memcpy(&len, e->data + off, 4);
		if (!len || len == 0xffffffff || len > e->len - off - 4)
			break;
		memcpy(&id, e->data + off + 4, 4);
		if (id && id <= off + 4 && !parse_cie(e, off + 4 - id, &c)) {
			p = e->data + off + 8;
			if (!dwarf_eh_pointer(&p, e->data + off + 4 + len, c.fde_enc,
					      e->addr + (uint64_t)(p - e->data), 0, &start) &&
			    !dwarf_eh_pointer(&p, e->data + off + 4 + len, c.fde_enc & 0x0f, 0, 0, &range)) {
				if (e->nfdes == cap) {
					size_t nc = cap ? 2 * cap : 256;
					struct fde *nf = realloc(e->fdes, nc * sizeof(*nf));

					if (!nf)
						break;
					e->fdes = nf;
					cap = nc;
				}
				e->fdes[e->nfdes++] = (struct fde){ start, start + range, (uint32_t)off };
			}
		}
		off += 4 + len;
	}
	qsort(e->fdes, e->nfdes, sizeof(*e->fdes), cmp_fde);
}

static struct ehf *ehf_get(const char *path)
{
	struct ehf *e;
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t shstr;
	int fd;

	for (e = ehf_cache; e; e = e->next)
		if (!strcmp(e->path, path))
			return e->data ? e : NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->path = strdup(path);
	e->next = ehf_cache;
	ehf_cache = e;
	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && elf_getshdrstrndx(elf, &shstr) == 0) {
		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			const char *name;
			Elf_Data *d;

			if (!gelf_getshdr(scn, &sh))
				continue;
			name = elf_strptr(elf, shstr, sh.sh_name);
			if (!name || strcmp(name, ".eh_frame") || sh.sh_type != SHT_PROGBITS)
				continue;
			d = elf_rawdata(scn, NULL);
			if (d && d->d_buf && d->d_size) {
				e->data = malloc(d->d_size);
				if (e->data) {
					memcpy(e->data, d->d_buf, d->d_size);
					e->len = d->d_size;
					e->addr = sh.sh_addr;
				}
			}
			break;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	if (e->data)
		index_fdes(e);
	return e->data ? e : NULL;
}

/* ------------------------------------------------------------------------ */
/* Call frame instructions                                                   */
/* ------------------------------------------------------------------------ */

#define NREGS	TOOL_DWARF_NREGS	/* tracked: 0..NREGS-1 */

struct rule {
	enum { R_SAME, R_OFFSET, R_UNDEF, R_OTHER } how;
	int64_t off;
};

struct frame_rules {
	int cfa_reg;
	int64_t cfa_off;
	bool cfa_expr;
	struct rule r[NREGS];
};

#define STATE_DEPTH	8

static void run_insns(const uint8_t *p, const uint8_t *end, const struct cie *c,
		      uint64_t loc, uint64_t pc, struct frame_rules *fr,
		      const struct frame_rules *init)
{
	struct frame_rules stack[STATE_DEPTH];
	int depth = 0;

	while (p < end && loc <= pc) {
		uint8_t op = *p++, low = op & 0x3f;
		uint64_t reg, v;

		switch (op >> 6) {
		case 1:		/* advance_loc */
			loc += low * c->code_align;
			continue;
		case 2:		/* offset */
			v = dwarf_uleb(&p, end);
			if (low < NREGS)
				fr->r[low] = (struct rule){ R_OFFSET, (int64_t)v * c->data_align };
			continue;
		case 3:		/* restore */
			if (low < NREGS && init)
				fr->r[low] = init->r[low];
			continue;
		}
		switch (op) {
		case 0x00: break;
		case 0x01: return;	/* set_loc: compilers emit advance_loc */
		case 0x02: loc += *p++ * c->code_align; break;
		case 0x03: { uint16_t d; memcpy(&d, p, 2); p += 2; loc += d * c->code_align; break; }
		case 0x04: { uint32_t d; memcpy(&d, p, 4); p += 4; loc += d * c->code_align; break; }
		case 0x05: case 0x11: case 0x14:	/* offset_extended(_sf), val_offset */
			reg = dwarf_uleb(&p, end);
			v = op == 0x11 ? (uint64_t)(dwarf_sleb(&p, end) * c->data_align) :
			    dwarf_uleb(&p, end) * (uint64_t)c->data_align;
			if (reg < NREGS)
				fr->r[reg] = (struct rule){ op == 0x14 ? R_OTHER : R_OFFSET, (int64_t)v };
			break;
		case 0x06:	/* restore_extended */
			reg = dwarf_uleb(&p, end);
			if (reg < NREGS && init)
				fr->r[reg] = init->r[reg];
			break;
		case 0x07: case 0x08:	/* undefined, same_value */
			reg = dwarf_uleb(&p, end);
			if (reg < NREGS)
				fr->r[reg].how = op == 0x07 ? R_UNDEF : R_SAME;
			break;
		case 0x09:	/* register */
			reg = dwarf_uleb(&p, end);
			dwarf_uleb(&p, end);
			if (reg < NREGS)
				fr->r[reg].how = R_OTHER;
			break;
		case 0x0a:
			if (depth < STATE_DEPTH)
				stack[depth++] = *fr;
			break;
		case 0x0b:
			if (depth > 0)
				*fr = stack[--depth];
			break;
		case 0x0c:
			fr->cfa_reg = (int)dwarf_uleb(&p, end);
			fr->cfa_off = (int64_t)dwarf_uleb(&p, end);
			fr->cfa_expr = false;
			break;
		case 0x0d: fr->cfa_reg = (int)dwarf_uleb(&p, end); fr->cfa_expr = false; break;
		case 0x0e: fr->cfa_off = (int64_t)dwarf_uleb(&p, end); break;
		case 0x0f:	/* def_cfa_expression */
			v = dwarf_uleb(&p, end);
			p += v;
			fr->cfa_expr = true;
			break;
		case 0x10: case 0x16:	/* expression, val_expression */
			reg = dwarf_uleb(&p, end);
			v = dwarf_uleb(&p, end);
			p += v;
			if (reg < NREGS)
				fr->r[reg].how = R_OTHER;
			break;
		case 0x12:
			fr->cfa_reg = (int)dwarf_uleb(&p, end);
			fr->cfa_off = dwarf_sleb(&p, end) * c->data_align;
			fr->cfa_expr = false;
			break;
		case 0x13: fr->cfa_off = dwarf_sleb(&p, end) * c->data_align; break;
		case 0x2e: dwarf_uleb(&p, end); break;	/* GNU_args_size */
		case 0x2f:	/* GNU_negative_offset_extended */
			reg = dwarf_uleb(&p, end);
			v = dwarf_uleb(&p, end);
			if (reg < NREGS)
				fr->r[reg] = (struct rule){ R_OFFSET, -(int64_t)v * c->data_align };
			break;
		default:
			return;	/* unknown: stop where we are */
		}
	}
}

/* The rules at link-time address pc of the file e: 0, or -ENOENT. */
static int rules_at(struct ehf *e, uint64_t pc, struct frame_rules *fr)
{
	size_t lo = 0, hi = e->nfdes;
	const struct fde *f = NULL;
	struct frame_rules init;
	struct cie c;
	const uint8_t *p, *end;
	uint32_t len, id;
	uint64_t start, range;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (e->fdes[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && pc < e->fdes[lo - 1].end)
		f = &e->fdes[lo - 1];
	if (!f)
		return -ENOENT;
	memcpy(&len, e->data + f->off, 4);
	memcpy(&id, e->data + f->off + 4, 4);
	if (parse_cie(e, f->off + 4 - id, &c))
		return -EINVAL;
	p = e->data + f->off + 8;
	end = e->data + f->off + 4 + len;
	if (dwarf_eh_pointer(&p, end, c.fde_enc, e->addr + (uint64_t)(p - e->data), 0, &start) ||
	    dwarf_eh_pointer(&p, end, c.fde_enc & 0x0f, 0, 0, &range))
		return -EINVAL;
	if (c.aug_z)
		p += dwarf_uleb(&p, end);
	memset(fr, 0, sizeof(*fr));
	run_insns(c.insns, c.insns_end, &c, start, UINT64_MAX, fr, NULL);
	init = *fr;
	run_insns(p, end, &c, start, pc, fr, &init);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* The walk                                                                  */
/* ------------------------------------------------------------------------ */

/* The word at address at, if it is in the copy of the stack. */
static bool read_word(const struct rec_stack *s, uint64_t at, uint64_t *v)
{
	unsigned long w;

	if (at < s->sp || at + sizeof(w) > s->sp + s->len)
		return false;
	memcpy(&w, (const char *)(s + 1) + (at - s->sp), sizeof(w));
	*v = w;
	return true;
}

int unwind_stack(struct objmaps *m, int pid, uint64_t ts, const struct rec_stack *s,
		 uint64_t *pcs, int max)
{
	uint64_t pc = s->pc, sp = s->sp, fp = s->fp;
	int n = 0;

	while (n < max && pc) {
		const char *path;
		uint64_t bias, cfa, ra;
		struct frame_rules fr;
		struct ehf *e;
		bool done = false;

		pcs[n++] = pc;
		/* Past the first frame pc is a return address: its call is
		 * the instruction before. */
		if (objmaps_object(m, pid, ts, pc, &path, &bias) == 0 && (e = ehf_get(path)) &&
		    rules_at(e, pc - bias - (n > 1), &fr) == 0 && !fr.cfa_expr &&
		    (fr.cfa_reg == TOOL_DWARF_SP || fr.cfa_reg == TOOL_DWARF_FP) &&
		    fr.r[TOOL_DWARF_RA].how == R_OFFSET) {
			cfa = (fr.cfa_reg == TOOL_DWARF_SP ? sp : fp) + (uint64_t)fr.cfa_off;
			if (!read_word(s, cfa + (uint64_t)fr.r[TOOL_DWARF_RA].off, &ra))
				break;
			if (fr.r[TOOL_DWARF_FP].how == R_OFFSET &&
			    !read_word(s, cfa + (uint64_t)fr.r[TOOL_DWARF_FP].off, &fp))
				break;
			if (cfa <= sp)
				break;
			sp = cfa;
			pc = ra;
			done = true;
		}
		if (!done) {
			/* No call frame information: the frame pointer's
			 * chain, if the code keeps one. */
			uint64_t nfp;

			if (fp <= sp || !read_word(s, fp + TOOL_FP_SAVED_RA, &ra) ||
			    !read_word(s, fp + TOOL_FP_SAVED_FP, &nfp))
				break;
			sp = fp + TOOL_FP_SAVED_RA + sizeof(unsigned long);
			fp = nfp;
			pc = ra;
		}
	}
	return n;
}
