// SPDX-License-Identifier: MIT
/*
 * test_symbols.c - symbol resolution over the loaded objects, and the
 * blacklist (src/symbols.c).  Each Criterion test runs in its own process,
 * so each one starts with empty caches.
 */
#include "../support/ukp_test.h"
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <ukprobes.h>

#include "symbols.h"

/* Targets in the test program itself (.symtab of the main program). */
__attribute__((noinline, used)) int sym_target_fn(int x)
{
	return x * 7 + 3;
}

__attribute__((noinline, used)) int sym_nokprobe_fn(int x)
{
	return x * 5 - 1;
}
NOKPROBE_SYMBOL(sym_nokprobe_fn);

__attribute__((noinline, used)) int sym_ifunc_impl(int x)
{
	return x + 11;
}

static int (*sym_ifunc_resolver(void))(int)
{
	return sym_ifunc_impl;
}

int sym_ifunc_fn(int x) __attribute__((ifunc("sym_ifunc_resolver")));

static char sym_data[64] __attribute__((used));

static void *libc_handle(void)
{
	void *h = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);

	cr_assert_not_null(h, "libc.so.6 not loaded?");
	return h;
}

static const char *exe_basename(void)
{
	static char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);

	cr_assert_gt(n, 0);
	buf[n] = '\0';
	return strrchr(buf, '/') + 1;
}

Test(symbols, own_function)
{
	struct ukp_symbol s;

	cr_assert_eq(ukp_symbol_lookup("sym_target_fn", &s), 0);
	cr_expect_eq(s.addr, (uintptr_t)sym_target_fn);
	cr_expect_gt(s.size, 0);
	cr_expect_str_eq(s.name, "sym_target_fn");
	cr_expect_str_eq(s.object, exe_basename());
	cr_expect_eq(sym_target_fn(1), 10);

	/* Qualified by the program's own basename. */
	char spec[PATH_MAX + 32];

	snprintf(spec, sizeof(spec), "%s:sym_target_fn", exe_basename());
	cr_assert_eq(ukp_symbol_lookup(spec, &s), 0);
	cr_expect_eq(s.addr, (uintptr_t)sym_target_fn);
}

Test(symbols, libc_getpid)
{
	uintptr_t want = (uintptr_t)dlsym(libc_handle(), "getpid");
	struct ukp_symbol s;

	cr_assert_neq(want, 0);
	cr_assert_eq(ukp_symbol_lookup("libc.so.6:getpid", &s), 0);
	cr_expect_eq(s.addr, want);
	cr_expect_str_eq(s.object, "libc.so.6");
	cr_expect_gt(s.size, 0);

	memset(&s, 0, sizeof(s));
	cr_assert_eq(ukp_symbol_lookup("libc:getpid", &s), 0);
	cr_expect_eq(s.addr, want);

	/* Unqualified: nothing before libc defines getpid. */
	cr_assert_eq(ukp_symbol_lookup("getpid", &s), 0);
	cr_expect_eq(s.addr, want);
}

Test(symbols, full_path)
{
	Dl_info info;
	struct ukp_symbol s;
	char spec[PATH_MAX + 16];
	char real[PATH_MAX];

	cr_assert(dladdr(dlsym(libc_handle(), "getpid"), &info));
	snprintf(spec, sizeof(spec), "%s:getpid", info.dli_fname);
	cr_assert_eq(ukp_symbol_lookup(spec, &s), 0);
	cr_expect_str_eq(s.object, "libc.so.6");

	/* The same file by its resolved path. */
	cr_assert_not_null(realpath(info.dli_fname, real));
	snprintf(spec, sizeof(spec), "%s:getpid", real);
	cr_assert_eq(ukp_symbol_lookup(spec, &s), 0);
	cr_expect_str_eq(s.object, "libc.so.6");
}

Test(symbols, libz_deflate)
{
	uintptr_t want = (uintptr_t)dlsym(RTLD_DEFAULT, "deflate");
	struct ukp_symbol s;

	/* Reference libz so that the linker keeps it. */
	cr_assert_not_null(zlibVersion());
	cr_assert_neq(want, 0);
	cr_assert_eq(ukp_symbol_lookup("libz.so.1:deflate", &s), 0);
	cr_expect_eq(s.addr, want);
	cr_expect_gt(s.size, 100);
	cr_expect_str_eq(s.object, "libz.so.1");
	cr_expect_str_eq(s.name, "deflate");

	cr_assert_eq(ukp_symbol_lookup("libz.so:deflate", &s), 0);
	cr_expect_eq(s.addr, want);
	cr_assert_eq(ukp_symbol_lookup("libz:deflate", &s), 0);
	cr_expect_eq(s.addr, want);
}

Test(symbols, unknown)
{
	struct ukp_symbol s;

	cr_expect_eq(ukp_symbol_lookup("sym_no_such_function_xyz", &s), -ENOENT);
	cr_expect_eq(ukp_symbol_lookup("libc.so.6:sym_no_such_xyz", &s),
		     -ENOENT);
	cr_expect_eq(ukp_symbol_lookup("libnosuch.so.1:getpid", &s), -ENOENT);
	/* A prefix must end right before a '.'. */
	cr_expect_eq(ukp_symbol_lookup("lib:getpid", &s), -ENOENT);
	cr_expect_eq(ukp_symbol_lookup("libc.so.6.1:getpid", &s), -ENOENT);
	/* Undefined references of the main program are not definitions. */
	char spec[PATH_MAX + 32];

	snprintf(spec, sizeof(spec), "%s:zlibVersion", exe_basename());
	cr_expect_eq(ukp_symbol_lookup(spec, &s), -ENOENT);
}

Test(symbols, malformed)
{
	static const char *const bad[] = {
		"", ":", "a:", ":getpid", "libc.so.6:", "getpid@",
		"getpid@@", "@GLIBC_2.2.5", "libc:@@X", "getpid@a@b",
	};
	struct ukp_symbol s;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(ukp_symbol_lookup(bad[i], &s), -EINVAL,
			     "\"%s\"", bad[i]);
	cr_expect_eq(ukp_symbol_lookup(NULL, &s), -EINVAL);
	cr_expect_eq(ukp_symbol_lookup("getpid", NULL), -EINVAL);
}

Test(symbols, versions)
{
	void *libc = libc_handle();
	struct ukp_symbol s;

	cr_assert_eq(ukp_symbol_lookup("libc.so.6:malloc@@GLIBC_2.2.5", &s), 0);
	cr_expect_eq(s.addr, (uintptr_t)dlsym(libc, "malloc"));
	cr_expect_str_eq(s.name, "malloc");
	cr_assert_eq(ukp_symbol_lookup("libc.so.6:malloc@GLIBC_2.2.5", &s), 0);
	cr_expect_eq(s.addr, (uintptr_t)dlsym(libc, "malloc"));

	/* The old memcpy (a non-default version) and the default one. */
	cr_assert_eq(ukp_symbol_lookup("libc.so.6:memcpy@GLIBC_2.2.5", &s), 0);
	cr_expect_eq(s.addr,
		     (uintptr_t)dlvsym(libc, "memcpy", "GLIBC_2.2.5"));
	cr_assert_eq(ukp_symbol_lookup("libc.so.6:memcpy@@GLIBC_2.14", &s), 0);
	cr_expect_eq(s.addr, (uintptr_t)dlvsym(libc, "memcpy", "GLIBC_2.14"));
	cr_assert_eq(ukp_symbol_lookup("libc.so.6:memcpy", &s), 0);
	cr_expect_eq(s.addr, (uintptr_t)dlsym(libc, "memcpy"));

	cr_expect_eq(ukp_symbol_lookup("libc.so.6:memcpy@@GLIBC_2.2.5", &s),
		     -ENOENT);
	cr_expect_eq(ukp_symbol_lookup("libc.so.6:malloc@GLIBC_9.9", &s),
		     -ENOENT);
}

Test(symbols, ifunc_strlen)
{
	uintptr_t want = (uintptr_t)dlsym(RTLD_DEFAULT, "strlen");
	uintptr_t want_libc = (uintptr_t)dlsym(libc_handle(), "strlen");
	struct ukp_symbol s;

	cr_assert_neq(want, 0);
	cr_assert_eq(ukp_symbol_lookup("strlen", &s), 0);
	cr_expect_eq(s.addr, want);
	cr_assert_eq(ukp_symbol_lookup("libc.so.6:strlen", &s), 0);
	cr_expect_eq(s.addr, want_libc);
	cr_expect_str_eq(s.object, "libc.so.6");
	cr_expect_not_null(s.name);
	/* The implementation runs: it is code, not the resolver. */
	cr_expect_eq(((size_t (*)(const char *))s.addr)("four"), 4);
}

Test(symbols, ifunc_in_main_program)
{
	struct ukp_symbol s;

	cr_assert_eq(ukp_symbol_lookup("sym_ifunc_fn", &s), 0);
	cr_expect_eq(s.addr, (uintptr_t)sym_ifunc_impl);
	cr_expect_str_eq(s.name, "sym_ifunc_impl");
	cr_expect_gt(s.size, 0);
	cr_expect_eq(sym_ifunc_fn(1), 12);
}

Test(symbols, containing)
{
	uintptr_t deflate_addr = (uintptr_t)dlsym(RTLD_DEFAULT, "deflate");
	uintptr_t getpid_addr = (uintptr_t)dlsym(libc_handle(), "getpid");
	struct ukp_symbol s, l;

	cr_assert_eq(ukp_symbol_lookup("libz.so.1:deflate", &l), 0);
	cr_assert_eq(ukp_symbol_containing(deflate_addr + 37, &s), 0);
	cr_expect_str_eq(s.name, "deflate");
	cr_expect_eq(s.addr, deflate_addr);
	cr_expect_eq(s.size, l.size);
	cr_expect_str_eq(s.object, "libz.so.1");
	cr_expect_eq(s.object_base, l.object_base);

	/* One past the end is not inside. */
	if (ukp_symbol_containing(deflate_addr + l.size, &s) == 0)
		cr_expect_str_neq(s.name, "deflate");

	cr_assert_eq(ukp_symbol_containing((uintptr_t)sym_target_fn + 1, &s), 0);
	cr_expect_str_eq(s.name, "sym_target_fn");
	cr_expect_eq(s.addr, (uintptr_t)sym_target_fn);

	/* Aliases: the plain public name wins over __getpid. */
	cr_assert_eq(ukp_symbol_containing(getpid_addr, &s), 0);
	cr_expect_str_eq(s.name, "getpid");
}

Test(symbols, containing_not_a_function)
{
	struct ukp_symbol s;

	/* Data of the program: the object is named, there is no symbol. */
	cr_assert_eq(ukp_symbol_containing((uintptr_t)sym_data, &s), -ENOENT);
	cr_expect_null(s.name);
	cr_assert_not_null(s.object);
	cr_expect_str_eq(s.object, exe_basename());

	cr_assert_eq(ukp_symbol_containing(16, &s), -ENOENT);
	cr_expect_null(s.object);
	cr_expect_null(s.name);
}

struct bl_find {
	const char *name;
	uintptr_t start, end;
	int count;
};

static void bl_find_cb(uintptr_t start, uintptr_t end, const char *name,
		       void *arg)
{
	struct bl_find *f = arg;

	cr_expect_lt(start, end);
	if (name && !strcmp(name, f->name)) {
		f->start = start;
		f->end = end;
		f->count++;
	}
}

Test(symbols, nokprobe_symbol)
{
	struct bl_find f = { .name = "sym_nokprobe_fn" };
	struct ukp_symbol s;

	cr_expect_eq(ukp_blacklisted((uintptr_t)sym_nokprobe_fn), 1);
	cr_assert_eq(ukp_symbol_lookup("sym_nokprobe_fn", &s), 0);
	cr_expect_eq(ukp_blacklisted(s.addr + s.size - 1), 1);
	cr_expect_eq(ukp_blacklisted((uintptr_t)sym_target_fn), 0);
	cr_expect_eq(ukp_blacklisted((uintptr_t)sym_target_fn + 1), 0);

	ukp_blacklist_foreach(bl_find_cb, &f);
	cr_expect_eq(f.count, 1);
	cr_expect_eq(f.start, (uintptr_t)sym_nokprobe_fn);
	cr_expect_eq(f.end, s.addr + s.size);
	cr_expect_eq(sym_nokprobe_fn(1), 4);
}

Test(symbols, restore_rt_and_errno)
{
	static const unsigned char code[] = {
		0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05
	};
	struct bl_find f = { .name = "__restore_rt" };
	struct bl_find e = { .name = "__errno_location" };
	uintptr_t errno_fn = (uintptr_t)dlsym(libc_handle(), "__errno_location");
	struct ukp_symbol s;

	ukp_blacklist_foreach(bl_find_cb, &f);
	cr_assert_eq(f.count, 1);
	cr_expect_gt(f.end, f.start);
	cr_expect_eq(memcmp((const void *)f.start, code, sizeof(code)), 0);
	ukp_symbol_containing(f.start, &s);
	cr_assert_not_null(s.object);
	cr_expect_str_eq(s.object, "libc.so.6");
	cr_expect_eq(ukp_blacklisted(f.start), 1);

	ukp_blacklist_foreach(bl_find_cb, &e);
	cr_expect_eq(e.count, 1);
	cr_expect_eq(e.start, errno_fn);
	cr_expect_eq(ukp_blacklisted(errno_fn), 1);
	cr_expect_eq(ukp_blacklisted((uintptr_t)dlsym(libc_handle(), "getpid")),
		     0);
}

/* A library the test program does not load, with one function in it. */
static const struct {
	const char *file, *func;
} later_libs[] = {
	{ "libbz2.so.1.0", "BZ2_bzlibVersion" },
	{ "libzstd.so.1", "ZSTD_versionNumber" },
	{ "liblzma.so.5", "lzma_version_number" },
	{ "libcrypt.so.1", "crypt" },
	{ "libm.so.6", "cos" },
};

static int pick_later_lib(void)
{
	size_t i;

	for (i = 0; i < sizeof(later_libs) / sizeof(later_libs[0]); i++) {
		void *h = dlopen(later_libs[i].file, RTLD_NOLOAD | RTLD_LAZY);

		if (h) {
			dlclose(h);
			continue;
		}
		return i;
	}
	return -1;
}

Test(symbols, dlopen_after_first_use)
{
	struct ukp_symbol s, before;
	char spec[128];
	const char *name;
	void *h;
	int i = pick_later_lib();

	if (i < 0)
		cr_skip_test("every candidate library is already loaded");
	snprintf(spec, sizeof(spec), "%s:%s", later_libs[i].file,
		 later_libs[i].func);

	cr_assert_eq(ukp_symbol_lookup("sym_target_fn", &before), 0);
	name = before.name;
	cr_expect_eq(ukp_symbol_lookup(spec, &s), -ENOENT);

	h = dlopen(later_libs[i].file, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		cr_skip_test("%s: %s", later_libs[i].file, dlerror());
	ukp_symbols_refresh();
	cr_assert_eq(ukp_symbol_lookup(spec, &s), 0, "%s", spec);
	cr_expect_eq(s.addr, (uintptr_t)dlsym(h, later_libs[i].func));
	cr_expect_str_eq(s.object, later_libs[i].file);

	/* Objects still loaded keep their cache and their strings. */
	cr_assert_eq(ukp_symbol_lookup("sym_target_fn", &s), 0);
	cr_expect_eq(s.name, name);

	dlclose(h);
	ukp_symbols_refresh();
	h = dlopen(later_libs[i].file, RTLD_NOLOAD | RTLD_LAZY);
	if (!h)		/* really unloaded */
		cr_expect_eq(ukp_symbol_lookup(spec, &s), -ENOENT);
	cr_expect_str_eq(name, "sym_target_fn");
}

struct worker {
	uintptr_t getpid_addr;
	int failures;
};

static void *lookup_worker(void *arg)
{
	struct worker *w = arg;
	struct ukp_symbol s;
	int i;

	for (i = 0; i < 300; i++) {
		if (ukp_symbol_lookup("libc.so.6:getpid", &s) ||
		    s.addr != w->getpid_addr)
			w->failures++;
		if (ukp_symbol_containing(w->getpid_addr, &s) ||
		    strcmp(s.name, "getpid"))
			w->failures++;
		if (!ukp_blacklisted((uintptr_t)sym_nokprobe_fn))
			w->failures++;
	}
	return NULL;
}

Test(symbols, concurrent_with_dlopen)
{
	struct worker w[4];
	pthread_t t[4];
	int i, lib = pick_later_lib();

	for (i = 0; i < 4; i++) {
		w[i].getpid_addr = (uintptr_t)dlsym(libc_handle(), "getpid");
		w[i].failures = 0;
		cr_assert_eq(pthread_create(&t[i], NULL, lookup_worker, &w[i]),
			     0);
	}
	for (i = 0; lib >= 0 && i < 20; i++) {
		void *h = dlopen(later_libs[lib].file, RTLD_NOW | RTLD_LOCAL);

		ukp_symbols_refresh();
		if (h)
			dlclose(h);
		ukp_symbols_refresh();
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		cr_expect_eq(w[i].failures, 0, "worker %d", i);
	}
}
