// SPDX-License-Identifier: MIT
/*
 * test_fetch.c - the ukprobe tracer's fetch arguments (tools/ukprobe/
 * fetch.c): every fetcharg kind and type evaluated against known data and a
 * hand-made struct pt_regs, nested dereferences, arrays, bitfields (the
 * kernel's b<width>@<bit-offset>/<container-bits>), symbols, and bad
 * pointers, which give -EFAULT and "(fault)" and never a crash.
 */
#include "../support/ukp_test.h"
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../tools/ukprobe/probe_events.c"
#include "../../tools/ukprobe/fetch.c"
#include "../../tools/ukprobe/json.c"

/* ---- the known data ------------------------------------------------------ */

struct bits {
	uint32_t a : 3, b : 5, c : 8, d : 16;
};

struct node {
	struct node *next;
	long val;
};

struct rec {
	uint8_t u8;
	int8_t s8;
	uint16_t u16;
	int16_t s16;
	uint32_t u32;
	int32_t s32;
	uint64_t u64;
	int64_t s64;
	char name[16];
	const char *strp;
	const char *strs[3];
	uint32_t arr[4];
	struct bits bf;
	uint8_t bytes[2];
	char ch;
	unsigned long fnptr;
};

static struct rec g_rec;
static int32_t g_counter = -77;
static uint32_t g_arr[4] = { 100, 200, 300, 400 };
static struct node n3 = { NULL, 333 }, n2 = { &n3, 222 }, n1 = { &n2, 111 };

__attribute__((noinline, used)) int fetch_target_fn(int x)
{
	return x * 3 + 1;
}

#define BAD_PTR 0x10ul

static void init_data(void)
{
	memset(&g_rec, 0, sizeof(g_rec));
	g_rec.u8 = 250;
	g_rec.s8 = -100;
	g_rec.u16 = 65000;
	g_rec.s16 = -30000;
	g_rec.u32 = 4000000000u;
	g_rec.s32 = -2000000000;
	g_rec.u64 = 18000000000000000000ull;
	g_rec.s64 = -9000000000000000000ll;
	strcpy(g_rec.name, "hello");
	g_rec.strp = "a string";
	g_rec.strs[0] = "one";
	g_rec.strs[1] = "two";
	g_rec.strs[2] = (const char *)BAD_PTR;
	g_rec.arr[0] = 10;
	g_rec.arr[1] = 20;
	g_rec.arr[2] = 30;
	g_rec.arr[3] = 40;
	g_rec.bf.a = 5;
	g_rec.bf.b = 17;
	g_rec.bf.c = 200;
	g_rec.bf.d = 40000;
	g_rec.bytes[0] = 0x12;
	g_rec.bytes[1] = 0x34;
	g_rec.ch = 'Z';
	g_rec.fnptr = (unsigned long)fetch_target_fn + 5;
}

/* ---- resolver / symbolizer stubs: a table, then dlsym/dladdr -------------- */

static const struct {
	const char *name;
	void *addr;
	unsigned long size;
} symtab[] = {
	{ "g_counter", &g_counter, sizeof(g_counter) },
	{ "g_arr", g_arr, sizeof(g_arr) },
	{ "g_rec", &g_rec, sizeof(g_rec) },
	{ "fetch_target_fn", (void *)fetch_target_fn, 0x40 },
	{ "f", (void *)fetch_target_fn, 0 },	/* the probe point of the tests */
};

static int stub_resolve(const char *obj, const char *sym, unsigned long *addr)
{
	void *p;

	(void)obj;
	for (size_t i = 0; i < sizeof(symtab) / sizeof(symtab[0]); i++) {
		if (!strcmp(sym, symtab[i].name)) {
			*addr = (unsigned long)symtab[i].addr;
			return 0;
		}
	}
	p = dlsym(RTLD_DEFAULT, sym);
	if (!p)
		return -ENOENT;
	*addr = (unsigned long)p;
	return 0;
}

static int stub_symbolize(unsigned long addr, char *out, size_t len)
{
	Dl_info info;

	for (size_t i = 0; i < sizeof(symtab) / sizeof(symtab[0]); i++) {
		unsigned long a = (unsigned long)symtab[i].addr;

		if (addr >= a && addr < a + symtab[i].size) {
			snprintf(out, len, "%s+0x%lx/0x%lx", symtab[i].name, addr - a, symtab[i].size);
			return 0;
		}
	}
	if (dladdr((void *)addr, &info) && info.dli_sname) {
		snprintf(out, len, "%s+0x%lx", info.dli_sname, addr - (unsigned long)info.dli_saddr);
		return 0;
	}
	return -ENOENT;
}

static void setup(void)
{
	init_data();
	pe_set_resolvers(stub_resolve, stub_symbolize);
}

/* ---- helpers -------------------------------------------------------------- */

static struct pe_event *parse(const char *def)
{
	struct pe_event *ev = calloc(1, sizeof(*ev));
	struct pe_error err;
	int ret;

	cr_assert_not_null(ev);
	ret = pe_parse(def, ev, &err);
	cr_assert_eq(ret, 0, "'%s': %d %s at %d", def, ret, pe_error_name(err.code), err.pos);
	return ev;
}

static void put_ev(struct pe_event *ev)
{
	pe_event_free(ev);
	free(ev);
}

static char outbuf[16384];

/* The first argument of def, fetched with c and formatted. */
static const char *show(const struct fetch_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static const char *show(const struct fetch_ctx *c, const char *fmt, ...)
{
	char def[512];
	va_list ap;
	struct pe_event *ev;
	size_t sz;
	void *buf;
	int used;

	va_start(ap, fmt);
	vsnprintf(def, sizeof(def), fmt, ap);
	va_end(ap);
	ev = parse(def);
	sz = fetch_arg_size(&ev->args[0]);
	buf = calloc(1, sz);
	cr_assert_not_null(buf);
	used = fetch_arg(&ev->args[0], c, buf, sz);
	fetch_format(&ev->args[0], buf, used, outbuf, sizeof(outbuf));
	free(buf);
	put_ev(ev);
	return outbuf;
}

static int fetch_raw(const struct fetch_ctx *c, void *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fetch_raw(const struct fetch_ctx *c, void *buf, size_t len, const char *fmt, ...)
{
	char def[512];
	va_list ap;
	struct pe_event *ev;
	int used;

	va_start(ap, fmt);
	vsnprintf(def, sizeof(def), fmt, ap);
	va_end(ap);
	ev = parse(def);
	used = fetch_arg(&ev->args[0], c, buf, len);
	put_ev(ev);
	return used;
}

#define OFF(f) offsetof(struct rec, f)
#define EXPECT_SHOW(c, expected, ...) \
	cr_expect_str_eq(show(c, __VA_ARGS__), expected)

static struct pt_regs regs;
static struct fetch_ctx ctx = { .regs = &regs };

static void setup_regs(void)
{
	setup();
	memset(&regs, 0, sizeof(regs));
	regs.di = (unsigned long)&g_rec;
	regs.si = (unsigned long)&g_rec.arr[2];
	ctx.regs = &regs;
	ctx.comm = "mycomm";
	ctx.edata = NULL;
}

TestSuite(fetch, .init = setup_regs);

/* ---- registers and raw types ---------------------------------------------- */

Test(fetch, register_types)
{
	char hex[64];

	regs.ax = 0x1234567890abcdefull;
	snprintf(hex, sizeof(hex), "0x%lx", (unsigned long)&g_rec);
	EXPECT_SHOW(&ctx, hex, "p f %%di");
	EXPECT_SHOW(&ctx, hex, "p f %%rdi");
	EXPECT_SHOW(&ctx, "239", "p f %%ax:u8");
	EXPECT_SHOW(&ctx, "-17", "p f %%ax:s8");
	EXPECT_SHOW(&ctx, "0xef", "p f %%ax:x8");
	EXPECT_SHOW(&ctx, "52719", "p f %%ax:u16");
	EXPECT_SHOW(&ctx, "-12817", "p f %%ax:s16");
	EXPECT_SHOW(&ctx, "0xcdef", "p f %%ax:x16");
	EXPECT_SHOW(&ctx, "2427178479", "p f %%ax:u32");
	EXPECT_SHOW(&ctx, "-1867788817", "p f %%ax:s32");
	EXPECT_SHOW(&ctx, "0x90abcdef", "p f %%rax:x32");
	EXPECT_SHOW(&ctx, "1311768467294899695", "p f %%ax:u64");
	EXPECT_SHOW(&ctx, "0x1234567890abcdef", "p f %%ax:x64");
	EXPECT_SHOW(&ctx, "0x1234567890abcdef", "p f %%ax");
	regs.ax = (unsigned long)-5;
	EXPECT_SHOW(&ctx, "-5", "p f %%ax:s64");
	EXPECT_SHOW(&ctx, "18446744073709551611", "p f %%ax:u64");
	regs.ax = 'A';
	EXPECT_SHOW(&ctx, "'A'", "p f %%ax:char");
	regs.ip = 0x401000;
	regs.flags = 0x246;
	regs.r15 = 15;
	regs.bp = 0xb0;
	EXPECT_SHOW(&ctx, "0x401000", "p f %%ip");
	EXPECT_SHOW(&ctx, "0x246", "p f %%flags:x16");
	EXPECT_SHOW(&ctx, "15", "p f %%r15:u8");
	EXPECT_SHOW(&ctx, "176", "p f %%rbp:u32");
}

Test(fetch, raw_bytes_in_type_size)
{
	uint8_t buf[16];

	regs.ax = 0x1122334455667788ull;
	memset(buf, 0xee, sizeof(buf));
	cr_assert_eq(fetch_raw(&ctx, buf, sizeof(buf), "p f %%ax:u16"), 2);
	cr_expect_eq(buf[0], 0x88);
	cr_expect_eq(buf[1], 0x77);
	cr_expect_eq(buf[2], 0xee);
	cr_assert_eq(fetch_raw(&ctx, buf, sizeof(buf), "p f %%ax"), 8);
	cr_expect_eq(*(uint64_t *)buf, 0x1122334455667788ull);
	cr_assert_eq(fetch_raw(&ctx, buf, 1, "p f %%ax:u16"), -ENOSPC);
}

/* ---- memory ---------------------------------------------------------------- */

Test(fetch, memory_types)
{
	EXPECT_SHOW(&ctx, "250", "p f +%zu(%%di):u8", OFF(u8));
	EXPECT_SHOW(&ctx, "-100", "p f +%zu(%%di):s8", OFF(s8));
	EXPECT_SHOW(&ctx, "0x9c", "p f +%zu(%%di):x8", OFF(s8));
	EXPECT_SHOW(&ctx, "65000", "p f +%zu(%%di):u16", OFF(u16));
	EXPECT_SHOW(&ctx, "-30000", "p f +%zu(%%di):s16", OFF(s16));
	EXPECT_SHOW(&ctx, "0xfde8", "p f +%zu(%%di):x16", OFF(u16));
	EXPECT_SHOW(&ctx, "4000000000", "p f +%zu(%%di):u32", OFF(u32));
	EXPECT_SHOW(&ctx, "-2000000000", "p f +%zu(%%di):s32", OFF(s32));
	EXPECT_SHOW(&ctx, "0xee6b2800", "p f +%zu(%%di):x32", OFF(u32));
	EXPECT_SHOW(&ctx, "18000000000000000000", "p f +%zu(%%di):u64", OFF(u64));
	EXPECT_SHOW(&ctx, "-9000000000000000000", "p f +%zu(%%di):s64", OFF(s64));
	EXPECT_SHOW(&ctx, "0xf9ccd8a1c5080000", "p f +%zu(%%di):x64", OFF(u64));
	EXPECT_SHOW(&ctx, "0xf9ccd8a1c5080000", "p f +%zu(%%di)", OFF(u64));
	EXPECT_SHOW(&ctx, "'Z'", "p f +%zu(%%di):char", OFF(ch));
	EXPECT_SHOW(&ctx, "'h'", "p f +%zu(%%di):char", OFF(name));
}

Test(fetch, strings)
{
	/* +OFFS(ARG):string is the string at ARG+OFFS */
	EXPECT_SHOW(&ctx, "\"hello\"", "p f +%zu(%%di):string", OFF(name));
	EXPECT_SHOW(&ctx, "\"ello\"", "p f +%zu(%%di):ustring", OFF(name) + 1);
	EXPECT_SHOW(&ctx, "\"hello\"", "p f +u%zu(%%di):string", OFF(name));
	/* the char * in the struct: one more dereference */
	EXPECT_SHOW(&ctx, "\"a string\"", "p f +0(+%zu(%%di)):string", OFF(strp));
	EXPECT_SHOW(&ctx, "\"string\"", "p f +2(+%zu(%%di)):string", OFF(strp));
	g_rec.name[0] = '\0';
	EXPECT_SHOW(&ctx, "\"\"", "p f +%zu(%%di):string", OFF(name));
}

Test(fetch, absolute_address)
{
	EXPECT_SHOW(&ctx, "4000000000", "p f @0x%lx:u32", (unsigned long)&g_rec.u32);
	EXPECT_SHOW(&ctx, "4000000000", "p f @%lu:u32", (unsigned long)&g_rec.u32);
	EXPECT_SHOW(&ctx, "\"hello\"", "p f @0x%lx:string", (unsigned long)g_rec.name);
	EXPECT_SHOW(&ctx, "\"a string\"", "p f +0(@0x%lx):string", (unsigned long)&g_rec.strp);
}

Test(fetch, symbols_with_offsets)
{
	extern char **environ;
	char want[4200];

	EXPECT_SHOW(&ctx, "-77", "p f @g_counter:s32");
	EXPECT_SHOW(&ctx, "300", "p f @g_arr+8:u32");
	EXPECT_SHOW(&ctx, "100", "p f @g_arr-0:u32");
	EXPECT_SHOW(&ctx, "200", "p f @g_arr+0x4:u32");
	EXPECT_SHOW(&ctx, "{100,200,300,400}", "p f @g_arr:u32[4]");
	EXPECT_SHOW(&ctx, "\"a string\"", "p f +0(@g_rec+%zu):string", OFF(strp));
	/* through dlsym: environ[0] */
	cr_assert_not_null(environ[0]);
	snprintf(want, sizeof(want), "\"%.4095s\"", environ[0]);
	EXPECT_SHOW(&ctx, want, "p f +0(+0(@environ)):string");
}

Test(fetch, unresolved_symbol_faults)
{
	struct pe_event *ev;
	uint64_t v;

	pe_set_resolvers(NULL, NULL);
	ev = parse("p fetch_target_fn @g_counter:s32");
	cr_expect_eq(fetch_arg(&ev->args[0], &ctx, &v, sizeof(v)), -EFAULT);
	pe_set_resolvers(stub_resolve, NULL);
	cr_assert_eq(pe_event_resolve(ev, NULL), 0);
	cr_expect_eq(fetch_arg(&ev->args[0], &ctx, &v, sizeof(v)), 4);
	cr_expect_eq((int32_t)v, -77);
	put_ev(ev);
}

/* ---- stack, arguments, return value, comm, immediates -------------------- */

Test(fetch, stack)
{
	unsigned long stk[8] = { 0xaaa, 7, 8, 9, 10, 11, 12, 13 };
	char want[64];

	stk[1] = 0x0807060504030201ul;
	regs.sp = (unsigned long)stk;
	snprintf(want, sizeof(want), "0x%lx", (unsigned long)stk);
	EXPECT_SHOW(&ctx, want, "p f $stack");
	EXPECT_SHOW(&ctx, "0xaaa", "p f $stack0");
	EXPECT_SHOW(&ctx, "9", "p f $stack3:u32");
	EXPECT_SHOW(&ctx, "{0x1,0x2,0x3,0x4,0x5,0x6,0x7,0x8}", "p f +8($stack):x8[8]");
	EXPECT_SHOW(&ctx, "13", "p f +0x38($stack):s64");
	regs.sp = BAD_PTR;
	EXPECT_SHOW(&ctx, "(fault)", "p f $stack0");
	EXPECT_SHOW(&ctx, "0x10", "p f $stack");
}

Test(fetch, entry_arguments)
{
	unsigned long stk[4] = { 0xdead, 7, 8, 0 };

	regs.di = 1;
	regs.si = 2;
	regs.dx = 3;
	regs.cx = 4;
	regs.r8 = 5;
	regs.r9 = 6;
	regs.sp = (unsigned long)stk;	/* at the first insn: return address */
	for (int i = 1; i <= 8; i++) {
		char want[16];

		snprintf(want, sizeof(want), "%d", i);
		EXPECT_SHOW(&ctx, want, "p f $arg%d:u32", i);
	}
	regs.sp = BAD_PTR;
	EXPECT_SHOW(&ctx, "(fault)", "p f $arg7");
	EXPECT_SHOW(&ctx, "0x6", "p f $arg6");
}

Test(fetch, return_value_and_entry_arguments)
{
	struct pe_event *ev = parse("r f rv=$retval:s32 a1=$arg1:u32 a7=$arg7:u32 "
				    "s=+0($arg2):string sym=$retval:symbol");
	struct pt_regs entry = { 0 };
	unsigned long stk[3] = { 0, 77, 0 };
	unsigned long edata[PE_MAX_ARGS];
	char line[512];

	cr_assert_eq(ev->nentry_args, 3);
	entry.di = 11;
	entry.si = (unsigned long)g_rec.name;
	entry.sp = (unsigned long)stk;
	fetch_save_entry_args(ev, &entry, edata);
	regs.ax = (unsigned long)-3;
	regs.di = 999;		/* clobbered by the time the function returns */
	ctx.retval_valid = 1;
	ctx.edata = edata;
	fetch_format_event(ev, &ctx, line, sizeof(line));
	cr_expect_str_eq(line, " rv=-3 a1=11 a7=77 s=\"hello\" sym=0xfffffffffffffffd");

	ctx.edata = NULL;
	fetch_format_event(ev, &ctx, line, sizeof(line));
	cr_expect_str_eq(line, " rv=-3 a1=(fault) a7=(fault) s=(fault) sym=0xfffffffffffffffd");
	put_ev(ev);
}

Test(fetch, comm)
{
	EXPECT_SHOW(&ctx, "\"mycomm\"", "p f $comm");
	EXPECT_SHOW(&ctx, "\"mycomm\"", "p f $COMM:string");
	ctx.comm = NULL;
	EXPECT_SHOW(&ctx, "(fault)", "p f $comm");
}

Test(fetch, immediates)
{
	EXPECT_SHOW(&ctx, "42", "p f \\42:u32");
	EXPECT_SHOW(&ctx, "-1", "p f \\-1:s32");
	EXPECT_SHOW(&ctx, "5", "p f \\+5:s8");
	EXPECT_SHOW(&ctx, "0x10", "p f \\0x10");
	EXPECT_SHOW(&ctx, "8", "p f \\010:u8");
	EXPECT_SHOW(&ctx, "\"hi\"", "p f \\\"hi\"");
	EXPECT_SHOW(&ctx, "\"\"", "p f \\\"\"");
	EXPECT_SHOW(&ctx, "\"hello\"", "p f \\0x%lx:string", (unsigned long)g_rec.name);
}

/* ---- dereferences ------------------------------------------------------------ */

Test(fetch, nested_dereferences)
{
	regs.di = (unsigned long)&n1;
	EXPECT_SHOW(&ctx, "111", "p f +8(%%di):s64");
	EXPECT_SHOW(&ctx, "222", "p f +8(+0(%%di)):s64");
	EXPECT_SHOW(&ctx, "333", "p f +8(+0(+0(%%di))):s64");
	EXPECT_SHOW(&ctx, "(fault)", "p f +8(+0(+0(+0(%%di)))):s64");	/* NULL->val */
	EXPECT_SHOW(&ctx, "333", "p f +u8(+u0(+0(%%di))):s64");
	/* negative offsets: si = &arr[2] */
	EXPECT_SHOW(&ctx, "20", "p f -4(%%si):u32");
	EXPECT_SHOW(&ctx, "10", "p f -u8(%%si):u32");
	EXPECT_SHOW(&ctx, "40", "p f +u4(%%si):u32");
	EXPECT_SHOW(&ctx, "{10,20,30,40}", "p f -0x8(%%si):u32[4]");
}

/* ---- faults ---------------------------------------------------------------- */

Test(fetch, bad_pointers_fault)
{
	uint8_t buf[64];
	long pagesz = sysconf(_SC_PAGESIZE);
	char *none = mmap(NULL, (size_t)pagesz, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *gone = mmap(NULL, (size_t)pagesz, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(none, MAP_FAILED);
	cr_assert_neq(gone, MAP_FAILED);
	cr_assert_eq(munmap(gone, (size_t)pagesz), 0);

	regs.di = BAD_PTR;
	errno = 1234;
	cr_expect_eq(fetch_raw(&ctx, buf, sizeof(buf), "p f +0(%%di):u32"), -EFAULT);
	cr_expect_eq(errno, 1234, "errno kept");
	EXPECT_SHOW(&ctx, "(fault)", "p f +0(%%di):u32");
	EXPECT_SHOW(&ctx, "(fault)", "p f +0(%%di):string");
	EXPECT_SHOW(&ctx, "(fault)", "p f +0(+0(%%di)):string");
	EXPECT_SHOW(&ctx, "(fault)", "p f +0(%%di):u8[4]");
	EXPECT_SHOW(&ctx, "(fault)", "p f +0(%%di):b3@1/8");
	EXPECT_SHOW(&ctx, "(fault)", "p f +0(%%di):symbol");
	regs.di = 0;
	EXPECT_SHOW(&ctx, "(fault)", "p f +0(%%di):u64");
	regs.di = ~0ul - 3;
	EXPECT_SHOW(&ctx, "(fault)", "p f +0(%%di):u64");
	regs.di = (unsigned long)none;
	EXPECT_SHOW(&ctx, "(fault)", "p f +0(%%di):u8");
	EXPECT_SHOW(&ctx, "(fault)", "p f +0(%%di):string");
	regs.di = (unsigned long)gone;
	EXPECT_SHOW(&ctx, "(fault)", "p f +0(%%di):x64");
	/* a good pointer to a bad one, faulting in the middle of the chain */
	g_rec.strp = none;
	regs.di = (unsigned long)&g_rec;
	EXPECT_SHOW(&ctx, "(fault)", "p f +0(+%zu(%%di)):string", OFF(strp));
	EXPECT_SHOW(&ctx, "(fault)", "p f +0(+0(+%zu(%%di))):u8", OFF(strp));
	/* a fault-free neighbour still works */
	EXPECT_SHOW(&ctx, "250", "p f +%zu(%%di):u8", OFF(u8));
	munmap(none, (size_t)pagesz);
}

Test(fetch, string_at_page_end)
{
	long pagesz = sysconf(_SC_PAGESIZE);
	char *map = mmap(NULL, 2 * (size_t)pagesz, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *end;

	cr_assert_neq(map, MAP_FAILED);
	cr_assert_eq(mprotect(map + pagesz, (size_t)pagesz, PROT_NONE), 0);
	end = map + pagesz;
	memcpy(end - 4, "abc", 4);		/* the NUL is the page's last byte */
	EXPECT_SHOW(&ctx, "\"abc\"", "p f @0x%lx:string", (unsigned long)(end - 4));
	memcpy(end - 3, "xyz", 3);		/* no NUL before the hole */
	EXPECT_SHOW(&ctx, "(fault)", "p f @0x%lx:string", (unsigned long)(end - 3));
	munmap(map, 2 * (size_t)pagesz);
}

Test(fetch, string_truncation)
{
	char buf[8];
	static char longstr[6000];
	struct pe_event *ev;
	size_t sz;
	char *big;
	int used;

	cr_expect_eq(fetch_raw(&ctx, buf, 5, "p f +%zu(%%di):string", OFF(name)), 5);
	cr_expect_str_eq(buf, "hell");
	cr_expect_eq(fetch_raw(&ctx, buf, sizeof(buf), "p f +%zu(%%di):string", OFF(name)), 6);
	cr_expect_str_eq(buf, "hello");

	memset(longstr, 'q', sizeof(longstr) - 1);
	ev = parse("p f +0(%di):string");
	regs.di = (unsigned long)longstr;
	sz = fetch_arg_size(&ev->args[0]);
	cr_expect_eq(sz, PE_MAX_STRING_LEN + 1);
	big = malloc(sizeof(longstr));
	used = fetch_arg(&ev->args[0], &ctx, big, sizeof(longstr));
	cr_expect_eq(used, PE_MAX_STRING_LEN + 1);
	cr_expect_eq(strlen(big), PE_MAX_STRING_LEN);
	free(big);
	put_ev(ev);
}

/* ---- arrays and bitfields ------------------------------------------------------ */

Test(fetch, arrays)
{
	EXPECT_SHOW(&ctx, "{10,20,30,40}", "p f +%zu(%%di):u32[4]", OFF(arr));
	EXPECT_SHOW(&ctx, "{0xa,0x14}", "p f +%zu(%%di):x32[2]", OFF(arr));
	EXPECT_SHOW(&ctx, "{10}", "p f +%zu(%%di):u32[1]", OFF(arr));
	EXPECT_SHOW(&ctx, "{'h','e','l','l','o'}", "p f +%zu(%%di):char[5]", OFF(name));
	EXPECT_SHOW(&ctx, "{104,101}", "p f +%zu(%%di):s8[2]", OFF(name));
	EXPECT_SHOW(&ctx, "{0x3412}", "p f +%zu(%%di):x16[1]", OFF(bytes));
	/* string[N]: an array of char * */
	EXPECT_SHOW(&ctx, "{\"one\",\"two\",(fault)}", "p f +%zu(%%di):string[3]", OFF(strs));
	EXPECT_SHOW(&ctx, "{\"one\"}", "p f +%zu(%%di):string[1]", OFF(strs));
	EXPECT_SHOW(&ctx, "{\"a string\",\"one\"}", "p f +%zu(%%di):ustring[2]", OFF(strp));
	/* the whole array faults when its memory does */
	regs.di = BAD_PTR;
	EXPECT_SHOW(&ctx, "(fault)", "p f +0(%%di):u32[4]");
	EXPECT_SHOW(&ctx, "(fault)", "p f +0(%%di):string[2]");
}

Test(fetch, array_layout_and_space)
{
	uint32_t v[4];
	char sbuf[64];

	cr_expect_eq(fetch_raw(&ctx, v, sizeof(v), "p f +%zu(%%di):u32[4]", OFF(arr)), 16);
	cr_expect_eq(v[3], 40);
	cr_expect_eq(fetch_raw(&ctx, v, 8, "p f +%zu(%%di):u32[4]", OFF(arr)), -ENOSPC);
	/* strings share the space: len / N each, a status byte first */
	cr_expect_eq(fetch_raw(&ctx, sbuf, 10, "p f +%zu(%%di):string[2]", OFF(strs)), 10);
	cr_expect_eq(sbuf[0], 0);
	cr_expect_str_eq(sbuf + 1, "one");
	cr_expect_eq(sbuf[5], 0);
	cr_expect_str_eq(sbuf + 6, "two");
	cr_expect_eq(fetch_raw(&ctx, sbuf, 8, "p f +%zu(%%di):string[2]", OFF(strs)), 8);
	cr_expect_str_eq(sbuf + 1, "on");
	cr_expect_str_eq(sbuf + 5, "tw");
	cr_expect_eq(fetch_raw(&ctx, sbuf, 3, "p f +%zu(%%di):string[2]", OFF(strs)), -ENOSPC);
}

Test(fetch, bitfields)
{
	/* x86-64 GCC: a at bits 0-2, b 3-7, c 8-15, d 16-31 of one u32 */
	EXPECT_SHOW(&ctx, "5", "p f +%zu(%%di):b3@0/32", OFF(bf));
	EXPECT_SHOW(&ctx, "17", "p f +%zu(%%di):b5@3/32", OFF(bf));
	EXPECT_SHOW(&ctx, "200", "p f +%zu(%%di):b8@8/32", OFF(bf));
	EXPECT_SHOW(&ctx, "40000", "p f +%zu(%%di):b16@16/32", OFF(bf));
	EXPECT_SHOW(&ctx, "2", "p f +%zu(%%di):b2@1/8", OFF(bf));
	EXPECT_SHOW(&ctx, "{2,4}", "p f +%zu(%%di):b4@0/8[2]", OFF(bytes));
	EXPECT_SHOW(&ctx, "{1,3}", "p f +%zu(%%di):b4@4/8[2]", OFF(bytes));
	regs.ax = 0xab;
	EXPECT_SHOW(&ctx, "10", "p f %%ax:b4@4/8");
	EXPECT_SHOW(&ctx, "11", "p f %%ax:b4@0/8");
	EXPECT_SHOW(&ctx, "171", "p f %%ax:b8@0/8");
	regs.ax = 1ul << 63 | 1;
	EXPECT_SHOW(&ctx, "1", "p f %%ax:b1@63/64");
	EXPECT_SHOW(&ctx, "9223372036854775809", "p f %%ax:b64@0/64");
	regs.ax = 0xffff;
	EXPECT_SHOW(&ctx, "4095", "p f %%ax:b12@2/16");
}

/* ---- symbols ------------------------------------------------------------------ */

Test(fetch, symbol_types)
{
	unsigned long ptrs[2] = { (unsigned long)&g_arr[2], (unsigned long)&g_arr[3] };
	char want[64];

	regs.ax = (unsigned long)fetch_target_fn + 5;
	EXPECT_SHOW(&ctx, "fetch_target_fn+0x5/0x40", "p f %%ax:symbol");
	EXPECT_SHOW(&ctx, "\"fetch_target_fn+0x5/0x40\"", "p f %%ax:symstr");
	EXPECT_SHOW(&ctx, "fetch_target_fn+0x5/0x40", "p f +%zu(%%di):symbol", OFF(fnptr));
	EXPECT_SHOW(&ctx, "\"fetch_target_fn+0x5/0x40\"", "p f +%zu(%%di):symstr", OFF(fnptr));
	regs.si = (unsigned long)&g_counter;
	EXPECT_SHOW(&ctx, "g_counter+0x0/0x4", "p f %%si:symbol");
	regs.si = (unsigned long)ptrs;
	EXPECT_SHOW(&ctx, "{g_arr+0x8/0x10,g_arr+0xc/0x10}", "p f +0(%%si):symbol[2]");
	regs.ax = 0x1234;
	EXPECT_SHOW(&ctx, "0x1234", "p f %%ax:symbol");
	EXPECT_SHOW(&ctx, "\"0x1234\"", "p f %%ax:symstr");
	/* no symbolizer: the address */
	pe_set_resolvers(stub_resolve, NULL);
	regs.ax = (unsigned long)fetch_target_fn;
	snprintf(want, sizeof(want), "0x%lx", regs.ax);
	EXPECT_SHOW(&ctx, want, "p f %%ax:symbol");
}

/* ---- whole events, sizes, fallbacks, signal context ----------------------------- */

Test(fetch, format_event_line)
{
	struct pe_event *ev;
	char def[256], line[512];

	snprintf(def, sizeof(def), "p f %%di:u8 cnt=+%zu(%%di):u32 s=+%zu(%%di):string "
		 "bad=+0(%%r11):x8 arr=+%zu(%%di):u32[2] c=$comm",
		 OFF(u32), OFF(name), OFF(arr));
	ev = parse(def);
	regs.di = (unsigned long)&g_rec;
	regs.r11 = BAD_PTR;
	cr_expect_eq(fetch_format_event(ev, &ctx, line, sizeof(line)), (int)strlen(line));
	snprintf(def, sizeof(def), " arg1=%u cnt=4000000000 s=\"hello\" bad=(fault) "
		 "arr={10,20} c=\"mycomm\"", (unsigned int)(regs.di & 0xff));
	cr_expect_str_eq(line, def);
	/* truncated output still counts the whole length */
	cr_expect_gt(fetch_format_event(ev, &ctx, line, 10), 10);
	cr_expect_eq(strlen(line), 9);
	put_ev(ev);
}

Test(fetch, arg_sizes)
{
	struct pe_event *ev = parse("p f %ax:u8 %ax:s16 %ax +0(%di):u32[4] +0(%di):string "
				    "+0(%di):string[2] %ax:symbol %ax:symstr %ax:b3@0/16 "
				    "+0(%di):b3@0/32[3] $comm +0(%di):char[3]");
	static const size_t want[] = {
		1, 2, 8, 16, PE_MAX_STRING_LEN + 1, 2 * (PE_MAX_STRING_LEN + 2), 8, 8, 2, 12,
		PE_MAX_STRING_LEN + 1, 3,
	};

	cr_assert_eq(ev->nargs, 12);
	for (int i = 0; i < ev->nargs; i++)
		cr_expect_eq(fetch_arg_size(&ev->args[i]), want[i], "arg %d: %zu", i,
			     fetch_arg_size(&ev->args[i]));
	put_ev(ev);
}

Test(fetch, pipe_fallback)
{
	vm_readv_unusable = 1;
	EXPECT_SHOW(&ctx, "4000000000", "p f +%zu(%%di):u32", OFF(u32));
	EXPECT_SHOW(&ctx, "\"hello\"", "p f +%zu(%%di):string", OFF(name));
	EXPECT_SHOW(&ctx, "{\"one\",\"two\",(fault)}", "p f +%zu(%%di):string[3]", OFF(strs));
	regs.di = BAD_PTR;
	EXPECT_SHOW(&ctx, "(fault)", "p f +0(%%di):u32");
	EXPECT_SHOW(&ctx, "(fault)", "p f +0(%%di):string");
}

static struct pe_event *sig_ev;
static uint8_t sig_buf[256];
static volatile int sig_used[3];

static void on_usr1(int sig)
{
	(void)sig;
	for (int i = 0; i < 3; i++)
		sig_used[i] = fetch_arg(&sig_ev->args[i], &ctx, sig_buf + 64 * i, 64);
}

Test(fetch, from_a_signal_handler)
{
	char def[256];
	struct sigaction sa = { 0 };

	snprintf(def, sizeof(def), "p f +%zu(%%di):string +0(%%r10):u64 +%zu(%%di):u32[2]",
		 OFF(name), OFF(arr));
	sig_ev = parse(def);
	regs.r10 = BAD_PTR;
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	raise(SIGUSR1);
	cr_expect_eq(sig_used[0], 6);
	cr_expect_str_eq((char *)sig_buf, "hello");
	cr_expect_eq(sig_used[1], -EFAULT);
	cr_expect_eq(sig_used[2], 8);
	cr_expect_eq(((uint32_t *)(sig_buf + 128))[1], 20);
	put_ev(sig_ev);
}

/* ---- fetched strings in JSON (json.c) ---------------------------------- */

static void put_buf(const char *p, size_t n, void *arg)
{
	strncat((char *)arg, p, n);
}

static void expect_json(const char *in, size_t n, const char *want)
{
	char out[512] = "";

	json_escape(in, n, put_buf, out);
	cr_expect_str_eq(out, want, "escaping %zu bytes", n);
}

/* UTF-8 as it is; every byte of a malformed sequence \udcXX; JSON's own
 * escapes.  Before: "€" was \u00e2\u0082\u00ac. */
Test(json, utf8_kept_bad_bytes_escaped)
{
	expect_json("plain", 5, "plain");
	expect_json("\xe2\x82\xac \xc3\xa9 \xf0\x9f\x98\x80", 11, "\xe2\x82\xac \xc3\xa9 \xf0\x9f\x98\x80");
	expect_json("\xff", 1, "\\udcff");
	/* Overlong, a surrogate, past U+10FFFF, a lone continuation byte. */
	expect_json("\xc0\xaf", 2, "\\udcc0\\udcaf");
	expect_json("\xed\xa0\x80", 3, "\\udced\\udca0\\udc80");
	expect_json("\xf4\x90\x80\x80", 4, "\\udcf4\\udc90\\udc80\\udc80");
	expect_json("a\x80z", 3, "a\\udc80z");
	/* Cut in the middle of a sequence (a string cut at its length). */
	expect_json("ab\xe2\x82", 4, "ab\\udce2\\udc82");
	expect_json("\"q\\\n\t\r\x01\x7f", 8, "\\\"q\\\\\\n\\t\\r\\u0001\\u007f");
	/* A NUL inside the bytes given is a control character too. */
	expect_json("a\0b", 3, "a\\u0000b");
}
