// SPDX-License-Identifier: MIT
/*
 * unwind.c - user stacks of hit records (--stack), unwound by the command
 * from the copy of the stack the handler made (ring.h: struct rec_stack),
 * with each object's .eh_frame (its call frame information, read from the
 * file with libelf), else its frame pointers: what perf does with
 * --call-graph dwarf, off the program's path (the handler only copies).
 *
 * The CFI interpreter knows what compilers emit for x86-64 code: the
 * CFA as a register plus an offset, registers saved at CFA offsets,
 * remember/restore state.  A CFA given by an expression (PLT entries)
 * ends the walk at that frame, or the frame pointer takes over.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static uint64_t uleb(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;
	int shift = 0;

	while (*p < end) {
		uint8_t b = *(*p)++;

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	return v;
}

static int64_t sleb(const uint8_t **p, const uint8_t *end)
{
	int64_t v = 0;
	int shift = 0;
	uint8_t b = 0;

	while (*p < end) {
		b = *(*p)++;
		if (shift < 64)
			v |= (int64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	if (shift < 64 && (b & 0x40))
		v |= -((int64_t)1 << shift);
	return v;
}

/* A DW_EH_PE-encoded pointer at *p, whose link-time address is at. */
static int eh_ptr(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t at, uint64_t *out)
{
	uint64_t v = 0;
	size_t sz = 0;

	if (enc == 0xff)
		return -EINVAL;
	switch (enc & 0x0f) {
	case 0x00: sz = 8; break;
	case 0x01: v = uleb(p, end); break;
	case 0x02: sz = 2; break;
	case 0x03: sz = 4; break;
	case 0x04: sz = 8; break;
	case 0x09: v = (uint64_t)sleb(p, end); break;
	case 0x0a: sz = 2; break;
	case 0x0b: sz = 4; break;
	case 0x0c: sz = 8; break;
	default: return -EINVAL;
	}
	if (sz) {
		if ((size_t)(end - *p) < sz)
			return -EINVAL;
		memcpy(&v, *p, sz);
		if ((enc & 0x08) && sz < 8 && (v >> (sz * 8 - 1)))
			v |= ~0ull << (sz * 8);
		*p += sz;
	}
	switch (enc & 0x70) {
	case 0x00: break;
	case 0x10: v += at; break;
	default: return -EINVAL;	/* datarel etc.: not in .eh_frame FDEs */
	}
	*out = v;
	return 0;
}

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
	c->code_align = uleb(&p, end);
	c->data_align = sleb(&p, end);
	c->ra = version == 1 ? *p++ : uleb(&p, end);
	c->fde_enc = 0;
	c->aug_z = aug[0] == 'z';
	if (c->aug_z) {
		uint64_t alen = uleb(&p, end);
		const uint8_t *q = p;

		for (const char *a = aug + 1; *a && q < end; a++) {
			if (*a == 'R') {
				c->fde_enc = *q++;
			} else if (*a == 'P') {
				uint8_t pe = *q++;
				uint64_t dummy;

				if (eh_ptr(&q, end, pe & 0x7f, e->addr + (uint64_t)(q - e->data), &dummy))
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
			if (!eh_ptr(&p, e->data + off + 4 + len, c.fde_enc,
				    e->addr + (uint64_t)(p - e->data), &start) &&
			    !eh_ptr(&p, e->data + off + 4 + len, c.fde_enc & 0x0f, 0, &range)) {
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

#define NREGS	17	/* 0..16: what an x86-64 frame needs (RA column 16) */

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
			v = uleb(&p, end);
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
		case 0x01: return;	/* set_loc: not emitted for x86-64 */
		case 0x02: loc += *p++ * c->code_align; break;
		case 0x03: { uint16_t d; memcpy(&d, p, 2); p += 2; loc += d * c->code_align; break; }
		case 0x04: { uint32_t d; memcpy(&d, p, 4); p += 4; loc += d * c->code_align; break; }
		case 0x05: case 0x11: case 0x14:	/* offset_extended(_sf), val_offset */
			reg = uleb(&p, end);
			v = op == 0x11 ? (uint64_t)(sleb(&p, end) * c->data_align) :
			    uleb(&p, end) * (uint64_t)c->data_align;
			if (reg < NREGS)
				fr->r[reg] = (struct rule){ op == 0x14 ? R_OTHER : R_OFFSET, (int64_t)v };
			break;
		case 0x06:	/* restore_extended */
			reg = uleb(&p, end);
			if (reg < NREGS && init)
				fr->r[reg] = init->r[reg];
			break;
		case 0x07: case 0x08:	/* undefined, same_value */
			reg = uleb(&p, end);
			if (reg < NREGS)
				fr->r[reg].how = op == 0x07 ? R_UNDEF : R_SAME;
			break;
		case 0x09:	/* register */
			reg = uleb(&p, end);
			uleb(&p, end);
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
			fr->cfa_reg = (int)uleb(&p, end);
			fr->cfa_off = (int64_t)uleb(&p, end);
			fr->cfa_expr = false;
			break;
		case 0x0d: fr->cfa_reg = (int)uleb(&p, end); fr->cfa_expr = false; break;
		case 0x0e: fr->cfa_off = (int64_t)uleb(&p, end); break;
		case 0x0f:	/* def_cfa_expression */
			v = uleb(&p, end);
			p += v;
			fr->cfa_expr = true;
			break;
		case 0x10: case 0x16:	/* expression, val_expression */
			reg = uleb(&p, end);
			v = uleb(&p, end);
			p += v;
			if (reg < NREGS)
				fr->r[reg].how = R_OTHER;
			break;
		case 0x12:
			fr->cfa_reg = (int)uleb(&p, end);
			fr->cfa_off = sleb(&p, end) * c->data_align;
			fr->cfa_expr = false;
			break;
		case 0x13: fr->cfa_off = sleb(&p, end) * c->data_align; break;
		case 0x2e: uleb(&p, end); break;	/* GNU_args_size */
		case 0x2f:	/* GNU_negative_offset_extended */
			reg = uleb(&p, end);
			v = uleb(&p, end);
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
	if (eh_ptr(&p, end, c.fde_enc, e->addr + (uint64_t)(p - e->data), &start) ||
	    eh_ptr(&p, end, c.fde_enc & 0x0f, 0, &range))
		return -EINVAL;
	if (c.aug_z)
		p += uleb(&p, end);
	memset(fr, 0, sizeof(*fr));
	run_insns(c.insns, c.insns_end, &c, start, UINT64_MAX, fr, NULL);
	init = *fr;
	run_insns(p, end, &c, start, pc, fr, &init);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* The walk                                                                  */
/* ------------------------------------------------------------------------ */

static bool read_u64(const struct rec_stack *s, uint64_t at, uint64_t *v)
{
	if (at < s->sp || at + 8 > s->sp + s->len)
		return false;
	memcpy(v, (const char *)(s + 1) + (at - s->sp), 8);
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
			if (!read_u64(s, cfa + (uint64_t)fr.r[TOOL_DWARF_RA].off, &ra))
				break;
			if (fr.r[TOOL_DWARF_FP].how == R_OFFSET &&
			    !read_u64(s, cfa + (uint64_t)fr.r[TOOL_DWARF_FP].off, &fp))
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

			if (fp <= sp || !read_u64(s, fp + TOOL_FP_SAVED_RA, &ra) ||
			    !read_u64(s, fp + TOOL_FP_SAVED_FP, &nfp))
				break;
			sp = fp + TOOL_FP_SAVED_RA + 8;
			fp = nfp;
			pc = ra;
		}
	}
	return n;
}
