/* SPDX-License-Identifier: MIT */
/*
 * fetch.c - run fetch programs at a probe hit and format their values as
 * the kernel's trace output does (kernel/trace/trace_probe_tmpl.h
 * process_fetch_insn_bottom(), trace_probe.c print_type_*()).
 *
 * fetch_arg() runs in a probe handler, i.e. in signal context: it uses no
 * malloc, no locks and no stdio, keeps errno, and reads memory only through
 * mem_read(), which never faults: process_vm_readv() on the own pid copies
 * with the kernel's fault-checked user copy and returns EFAULT (or a short
 * count) for an unmapped or unreadable address.  Where process_vm_readv() is
 * not allowed (seccomp, ENOSYS), the same check comes from write()ing the
 * bytes into a fresh pipe (EFAULT on a bad source) and reading them back.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fetch.h"
#include "tool_arch.h"

#define PAGE_SZ 4096ul

pe_symbolize_fn pe__symbolizer(void);

static int vm_readv_unusable;

static int mem_read_pipe(void *dst, unsigned long src, size_t n)
{
	int fds[2], ret = 0;

	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK))
		return -EFAULT;
	while (n) {
		size_t chunk = n > PAGE_SZ ? PAGE_SZ : n;

		/* raw system calls: no wrapper or sanitizer looks at src */
		if (syscall(SYS_write, fds[1], src, chunk) != (long)chunk ||
		    syscall(SYS_read, fds[0], dst, chunk) != (long)chunk) {
			ret = -EFAULT;
			break;
		}
		dst = (char *)dst + chunk;
		src += chunk;
		n -= chunk;
	}
	close(fds[0]);
	close(fds[1]);
	return ret;
}

/* Copy n bytes at src into dst; 0 or -EFAULT, never a fault. */
static int mem_read(void *dst, unsigned long src, size_t n)
{
	if (!n)
		return 0;
	if (src + n < src)
		return -EFAULT;
	if (!__atomic_load_n(&vm_readv_unusable, __ATOMIC_RELAXED)) {
		struct iovec l = { dst, n }, r = { (void *)src, n };
		ssize_t got = process_vm_readv(getpid(), &l, 1, &r, 1, 0);

		if (got == (ssize_t)n)
			return 0;
		if (got >= 0 || (errno != ENOSYS && errno != EPERM))
			return -EFAULT;
		__atomic_store_n(&vm_readv_unusable, 1, __ATOMIC_RELAXED);
	}
	return mem_read_pipe(dst, src, n);
}

/*
 * The evaluation below runs in probe handlers that save only the general
 * registers (KPROBE_FLAG_GPR_ONLY, this file is built -mgeneral-regs-only):
 * libc's memcpy/memchr use vector registers, so these plain loops stand in.
 */
static inline void gpr_copy(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	while (n--)
		*d++ = *s++;
}

static inline const char *gpr_findnul(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!p[i])
			return p + i;
	return NULL;
}

/* A NUL-terminated string at src into dst (cap >= 1 bytes, truncated):
 * the bytes used with the NUL, or -EFAULT.  Reads page by page, so nothing
 * past the page holding the NUL is touched; small steps first, as most
 * strings are short. */
static int read_string(char *dst, unsigned long src, size_t cap)
{
	size_t got = 0, step = 128;

	while (got + 1 < cap) {
		size_t left = PAGE_SZ - ((src + got) & (PAGE_SZ - 1));
		size_t want = cap - 1 - got;
		char *z;

		if (want > step)
			want = step;
		if (want > left)
			want = left;
		if (step < PAGE_SZ)
			step *= 2;
		if (mem_read(dst + got, src + got, want))
			return -EFAULT;
		z = (char *)gpr_findnul(dst + got, want);
		if (z)
			return (int)(z - dst) + 1;
		got += want;
	}
	dst[cap - 1] = '\0';
	return (int)cap;
}

/* regs_get_kernel_argument(), fault-safe: the arguments past those in
 * registers are read from the stack with mem_read(). */
static int get_argument(struct pt_regs *regs, unsigned int n, unsigned long *val)
{
	if (n < TOOL_REG_ARGS) {
		*val = regs_get_kernel_argument(regs, n);
		return 0;
	}
	return mem_read(val, tool_stack_arg_addr(regs, n), sizeof(*val));
}

void fetch_save_entry_args(const struct pe_event *ev, struct pt_regs *regs,
			   unsigned long *edata)
{
	int saved = errno;

	for (int i = 0; i < ev->nentry_args; i++)
		if (get_argument(regs, (unsigned int)ev->entry_args[i], &edata[i]))
			edata[i] = 0;
	errno = saved;
}

static void apply_bitfield(const struct fetch_insn *code, uint8_t *dest)
{
	unsigned int bits = code->basesize * 8u;
	uint64_t v = 0, mask = bits == 64 ? ~0ull : (1ull << bits) - 1;

	gpr_copy(&v, dest, code->basesize);
	v = ((v << code->lshift) & mask) >> code->rshift;
	gpr_copy(dest, &v, code->basesize);
}

static int run(const struct pe_arg *a, const struct fetch_ctx *c, uint8_t *buf, size_t len)
{
	const struct pe_fetch *f = a->fetch;
	const struct fetch_insn *code, *s3;
	struct pt_regs *regs = c->regs;
	unsigned long val = 0, lval = 0;
	uint8_t *dest = buf, *end = buf + len;
	size_t elem_cap = 0;
	unsigned int i = 0;
	int ret;

	if (!f)
		return -EINVAL;
	if (!f->resolved)
		return -EFAULT;		/* @SYM not resolved */
	code = f->code;
	while (code->op == FOP_NOP_SYMBOL)
		code++;

	/* 1st stage: load */
	switch (code->op) {
	case FOP_REG:
		if (!regs)
			return -EFAULT;
		val = *(const unsigned long *)((const char *)regs + code->param);
		break;
	case FOP_STACK:
		if (!regs || mem_read(&val, kernel_stack_pointer(regs) + code->param * sizeof(long),
				      sizeof(long)))
			return -EFAULT;
		break;
	case FOP_STACKP:
		if (!regs)
			return -EFAULT;
		val = kernel_stack_pointer(regs);
		break;
	case FOP_RETVAL:
		if (!regs)
			return -EFAULT;
		val = regs_return_value(regs);
		break;
	case FOP_IMM:
		val = code->imm;
		break;
	case FOP_COMM:
		val = (unsigned long)c->comm;
		break;
	case FOP_ARG:
		if (!regs || get_argument(regs, code->param, &val))
			return -EFAULT;
		break;
	case FOP_DATA:
		val = (unsigned long)code->data;
		break;
	case FOP_EDATA:
		if (!c->edata)
			return -EFAULT;
		val = c->edata[code->param];
		break;
	default:
		return -EILSEQ;
	}
	code++;

stage2:
	/* 2nd stage: dereference */
	while (code->op == FOP_DEREF || code->op == FOP_UDEREF) {
		lval = val;
		if (mem_read(&val, val + (unsigned long)code->offset, sizeof(val)))
			return -EFAULT;
		code++;
	}
	s3 = code;

stage3:
	/* 3rd stage: store */
	switch (code->op) {
	case FOP_ST_RAW:
		if ((size_t)(end - dest) < code->size)
			return -ENOSPC;
		gpr_copy(dest, &val, code->size);	/* little endian */
		dest += code->size;
		break;
	case FOP_ST_MEM:
	case FOP_ST_UMEM:
		if ((size_t)(end - dest) < code->size)
			return -ENOSPC;
		if (mem_read(dest, val + (unsigned long)code->offset, code->size))
			return -EFAULT;
		dest += code->size;
		break;
	case FOP_ST_SYMSTR:
		if ((size_t)(end - dest) < sizeof(val))
			return -ENOSPC;
		gpr_copy(dest, &val, sizeof(val));
		dest += sizeof(val);
		break;
	case FOP_ST_STRING:
	case FOP_ST_USTRING:
		if (!a->array_len) {
			if (dest == end)
				return -ENOSPC;
			ret = read_string((char *)dest, val + (unsigned long)code->offset,
					  (size_t)(end - dest) > PE_MAX_STRING_LEN + 1 ?
					  PE_MAX_STRING_LEN + 1 : (size_t)(end - dest));
			if (ret < 0)
				return ret;
			dest += ret;
			break;
		}
		/* string[N]: N records of status byte, string, NUL */
		if (!elem_cap) {
			elem_cap = len / (unsigned int)a->array_len;
			if (elem_cap > PE_MAX_STRING_LEN + 2)
				elem_cap = PE_MAX_STRING_LEN + 2;
			if (elem_cap < 2)
				return -ENOSPC;
		}
		ret = read_string((char *)dest + 1, val + (unsigned long)code->offset,
				  elem_cap - 1);
		if (ret < 0) {
			dest[0] = 1;
			dest[1] = '\0';
			ret = 1;
		} else {
			dest[0] = 0;
		}
		dest += 1 + ret;
		break;
	default:
		return -EILSEQ;
	}
	code++;

	/* 4th stage: modify */
	if (code->op == FOP_MOD_BF) {
		apply_bitfield(code, dest - code->basesize);
		code++;
	}

	/* the last stage: loop on the array */
	if (code->op == FOP_LP_ARRAY) {
		if (++i < code->param) {
			code = s3;
			if (s3->op != FOP_ST_STRING && s3->op != FOP_ST_USTRING) {
				val += s3->size;
				goto stage3;
			}
			/* the next char * of the array */
			code--;
			val = lval + sizeof(char *);
			goto stage2;
		}
		code++;
	}
	if (code->op != FOP_END)
		return -EILSEQ;
	return (int)(dest - buf);
}

int fetch_arg(const struct pe_arg *a, const struct fetch_ctx *c, void *buf, size_t len)
{
	int saved = errno;
	int ret = run(a, c, buf, len);

	errno = saved;
	return ret;
}

size_t fetch_arg_size(const struct pe_arg *a)
{
	size_t n = a->array_len ? (size_t)a->array_len : 1;

	switch (a->type) {
	case PE_STRING:
	case PE_USTRING:
		return a->array_len ? n * (PE_MAX_STRING_LEN + 2) : PE_MAX_STRING_LEN + 1;
	case PE_SYMSTR:
		return sizeof(unsigned long);
	case PE_BITFIELD:
		return n * (size_t)(a->bf_size / 8);
	default:
		return n * fetch_type_size(a->type);
	}
}

/* ------------------------------------------------------------------------ */
/* Formatting                                                                */
/* ------------------------------------------------------------------------ */

struct outbuf {
	char *p;
	size_t len;
	size_t pos;		/* as snprintf: what would have been written */
};

static void put(struct outbuf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct outbuf *o, const char *fmt, ...)
{
	va_list ap;
	size_t room = o->pos < o->len ? o->len - o->pos : 0;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(room ? o->p + o->pos : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->pos += (size_t)n;
}

static void put_symbol(struct outbuf *o, unsigned long addr, bool quoted)
{
	pe_symbolize_fn sym = pe__symbolizer();
	char text[512];

	if (!sym || sym(addr, text, sizeof(text)))
		snprintf(text, sizeof(text), "0x%lx", addr);
	put(o, quoted ? "\"%s\"" : "%s", text);
}

static uint64_t load(const uint8_t *p, unsigned int size)
{
	uint64_t v = 0;

	memcpy(&v, p, size);
	return v;
}

static void put_scalar(struct outbuf *o, const struct pe_arg *a, const uint8_t *p)
{
	switch (a->type) {
	case PE_U8: put(o, "%u", (unsigned int)p[0]); break;
	case PE_U16: put(o, "%u", (unsigned int)(uint16_t)load(p, 2)); break;
	case PE_U32: put(o, "%u", (uint32_t)load(p, 4)); break;
	case PE_U64: put(o, "%llu", (unsigned long long)load(p, 8)); break;
	case PE_S8: put(o, "%d", (int)(int8_t)p[0]); break;
	case PE_S16: put(o, "%d", (int)(int16_t)load(p, 2)); break;
	case PE_S32: put(o, "%d", (int32_t)load(p, 4)); break;
	case PE_S64: put(o, "%lld", (long long)load(p, 8)); break;
	case PE_X8: put(o, "0x%x", (unsigned int)p[0]); break;
	case PE_X16: put(o, "0x%x", (unsigned int)load(p, 2)); break;
	case PE_X32: put(o, "0x%x", (uint32_t)load(p, 4)); break;
	case PE_X64: put(o, "0x%llx", (unsigned long long)load(p, 8)); break;
	case PE_CHAR: put(o, "'%c'", p[0]); break;
	case PE_SYMBOL: put_symbol(o, (unsigned long)load(p, 8), false); break;
	case PE_SYMSTR: put_symbol(o, (unsigned long)load(p, 8), true); break;
	case PE_BITFIELD:
		if (a->bf_size == 64)
			put(o, "%llu", (unsigned long long)load(p, 8));
		else
			put(o, "%u", (uint32_t)load(p, (unsigned int)a->bf_size / 8));
		break;
	default:
		put(o, "?");
	}
}

int fetch_format(const struct pe_arg *a, const void *vbuf, int used, char *out, size_t outlen)
{
	struct outbuf o = { out, outlen, 0 };
	const uint8_t *buf = vbuf, *p, *end;
	bool strings = a->type == PE_STRING || a->type == PE_USTRING;
	unsigned int size;

	if (outlen)
		out[0] = '\0';
	if (used < 0) {
		put(&o, "(fault)");
		return (int)o.pos;
	}
	end = buf + used;
	if (strings && !a->array_len) {
		put(&o, "\"%.*s\"", (int)strnlen((const char *)buf, (size_t)used), (const char *)buf);
		return (int)o.pos;
	}
	size = a->type == PE_BITFIELD ? (unsigned int)a->bf_size / 8 : fetch_type_size(a->type);
	if (!a->array_len) {
		if ((size_t)used < size)
			put(&o, "(fault)");
		else
			put_scalar(&o, a, buf);
		return (int)o.pos;
	}
	put(&o, "{");
	p = buf;
	for (int i = 0; i < a->array_len; i++) {
		if (i)
			put(&o, ",");
		if (strings) {
			size_t n;

			if (p >= end) {
				put(&o, "(fault)");
				continue;
			}
			n = strnlen((const char *)p + 1, (size_t)(end - p - 1));
			if (p[0])
				put(&o, "(fault)");
			else
				put(&o, "\"%.*s\"", (int)n, (const char *)p + 1);
			p += 2 + n;
		} else {
			if (p + size > end)
				put(&o, "(fault)");
			else
				put_scalar(&o, a, p);
			p += size;
		}
	}
	put(&o, "}");
	return (int)o.pos;
}

int fetch_format_event(const struct pe_event *ev, const struct fetch_ctx *c, char *out, size_t outlen)
{
	struct outbuf o = { out, outlen, 0 };

	if (outlen)
		out[0] = '\0';
	for (int i = 0; i < ev->nargs; i++) {
		const struct pe_arg *a = &ev->args[i];
		size_t sz = fetch_arg_size(a);
		void *buf = malloc(sz ? sz : 1);
		char text[8192];
		int used;

		if (!buf)
			return -ENOMEM;
		used = fetch_arg(a, c, buf, sz);
		fetch_format(a, buf, used, text, sizeof(text));
		put(&o, " %s=%s", a->name, text);
		free(buf);
	}
	return (int)o.pos;
}
