/* SPDX-License-Identifier: MIT */
/*
 * alloc_fail.c - allocation failure injection: every allocation that the
 * register, unregister, enable/disable, switch, optimizer and listing paths
 * make fails once in turn, and each time the process must be as it was.
 *
 * How failures are injected.  This program defines malloc, calloc, realloc,
 * posix_memalign, aligned_alloc, memalign, valloc (forwarding to glibc's
 * __libc_* functions, or to AddressSanitizer's under SAN=1), mmap, open and
 * __register_atfork (what pthread_atfork() calls): libukprobes, libelf and
 * libc's own fopen/opendir/strdup/realpath resolve to these definitions, so
 * the library's real code runs with the failure.  A call counts only on
 * the thread that armed the counter, and only while it is armed, around
 * the one API call under test: the harness's and this test's allocations
 * never count.  "Fail the Nth" is explored for N = 1, 2, ... until a run
 * completes with no failure injected; each N runs in a fork() of the
 * prepared process, so every N starts from the same state.
 *
 * What fails how:
 *   - allocations return NULL (ENOMEM), posix_memalign returns ENOMEM;
 *   - mmap (the slot pages) fails with ENOMEM;
 *   - open (/proc/self/mem, the ELF files read for symbols) with EMFILE;
 *   - pthread_atfork with ENOMEM (its handlers keep a forked child from
 *     patching its parent's code through an inherited /proc/self/mem);
 *   - pthread_create of the library's optimizer thread ALWAYS fails
 *     (EAGAIN, as under RLIMIT_NPROC): that failure path runs in every
 *     test, and the optimizer then runs only when a test calls
 *     ukprobes_wait_optimizer(), on the armed thread, so what it allocates
 *     is counted;
 *   - fopen of /proc/self/task/... (thread positions for the proofs of
 *     grace.h) fails for as long as one test wants (EMFILE): those proofs
 *     must then fail, never pass.
 * Not injected: membarrier() registration (it only sets a flag on the mm;
 * the kernel refuses it only when the command is missing, a permanent
 * property of the kernel, not a resource that runs out), munmap and close.
 *
 * Two threads run the probed functions all along in every run (started
 * before the "before" snapshot, stopped at the end): every result they
 * get must be right, whatever failed.  Their hits are counted apart from
 * the hits of the thread under test, which the checks compare.  Where they
 * make a proof take more or fewer looks at /proc, the number of
 * allocations varies a little from run to run; N still goes on until a run
 * has none left to fail.
 *
 * After each injected failure:
 *   - a call that returns an error returns -ENOMEM (an allocation or mmap
 *     failed) or -EMFILE (open failed), and the process is exactly as
 *     before it: code bytes, signal dispositions (as the program and as the
 *     kernel see them), /proc/self/maps, open file descriptors, the probe
 *     listing; the same structs then register cleanly and fire;
 *   - a call that succeeds anyway (the library did without) left probes
 *     that work, and that go cleanly;
 *   - calls that cannot fail (unregister, the switches, the optimizer)
 *     leave probes that work or are cleanly gone, and the optimizer still
 *     optimizes what it may afterwards (a failure delays, never refuses);
 *   - a new registration works and fires, a fork()ed child's probes stay
 *     in the child, and (SAN=1) LeakSanitizer finds nothing.
 * What may differ after a failure, by design: the heap (the maps
 * comparison leaves out anonymous read-write and reserved mappings and
 * [heap]: malloc() serves large blocks from mappings of their own) with the
 * caches kept there (symbols, the mappings, the point table), and the
 * library's /proc/self/mem descriptor, opened on first use and kept (a
 * failed first registration may leave it open, as a successful one
 * followed by unregistration does).  Code, slot pages, handlers and every
 * other mapping are compared.
 * A region with a thread inside (parked on a userfaultfd page) is never
 * jump-optimized, whatever fails.
 *
 * AF_LIST=1 in the environment prints every injected failure's call stack,
 * AF_N=k runs only the run that fails the kth allocation, AF_VERBOSE=1
 * says how much the other threads ran.
 */
#include "../support/ukp_test.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ukprobes.h>
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/common_interface_defs.h>
#endif
#include "scn_util.h"

/* ===================================================================== */
/* Where the tests run                                                   */
/* ===================================================================== */

/*
 * Every run forks the test's process (hundreds of runs per test), and the
 * first registration reads the symbols of every loaded object: Criterion
 * brings some twenty libraries into its process.  Under Criterion each
 * test therefore runs its body in the lean twin of this program, the same
 * source built with tests/harness/ into $(B)/tests/lean/alloc_fail (six
 * objects: 206 allocations in a first registration by symbol instead of
 * 565, and a quarter of the time).  Built with HARNESS=ours, this program
 * is that twin, and runs its bodies itself.
 */
#ifdef UKP_TEST_HARNESS
#define AF_TEST(name, secs)						\
	static void af_body_##name(void);				\
	Test(alloc_fail, name, .timeout = secs) { af_body_##name(); }	\
	static void af_body_##name(void)
#else
static void af_in_twin(const char *name);
#define AF_TEST(name, secs)						\
	static void af_body_##name(void) __attribute__((unused));	\
	Test(alloc_fail, name, .timeout = secs) { af_in_twin(#name); }	\
	static void af_body_##name(void)
#endif

/* ===================================================================== */
/* Injection                                                             */
/* ===================================================================== */

#ifdef __SANITIZE_ADDRESS__
extern void *__interceptor_malloc(size_t);
extern void *__interceptor_calloc(size_t, size_t);
extern void *__interceptor_realloc(void *, size_t);
extern void __interceptor_free(void *);
extern int __interceptor_posix_memalign(void **, size_t, size_t);
extern void *__interceptor_aligned_alloc(size_t, size_t);
extern void *__interceptor_memalign(size_t, size_t);
extern void *__interceptor_valloc(size_t);
extern void *__interceptor_mmap(void *, size_t, int, int, int, off_t);
extern FILE *__interceptor_fopen(const char *, const char *);
extern DIR *__interceptor_opendir(const char *);
extern int __interceptor_pthread_create(pthread_t *, const pthread_attr_t *,
					void *(*)(void *), void *);
#define real_malloc __interceptor_malloc
#define real_calloc __interceptor_calloc
#define real_realloc __interceptor_realloc
#define real_free __interceptor_free
#define real_memalign __interceptor_memalign
#define real_valloc __interceptor_valloc
#define real_mmap __interceptor_mmap
#define real_fopen __interceptor_fopen
#define real_opendir __interceptor_opendir
#define real_pthread_create __interceptor_pthread_create
#else
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
#define real_malloc __libc_malloc
#define real_calloc __libc_calloc
#define real_realloc __libc_realloc
#define real_free __libc_free
#define real_memalign __libc_memalign
#define real_valloc __libc_valloc
/* glibc's other names for the functions this program replaces. */
#define real_mmap mmap64
#define real_fopen fopen64
static DIR *real_opendir(const char *name);
static int real_pthread_create(pthread_t *, const pthread_attr_t *,
			       void *(*)(void *), void *);
#endif
extern int __open(const char *, int, ...);

static __thread int af_armed;	/* this thread's calls count */
static __thread int af_busy;	/* inside a hook: nothing counts */
static long af_count, af_fail_at;
static int af_injected;
static const char *af_what;	/* what was failed */
static void *af_bt[32];		/* where */
static int af_nbt;
/* Count only until the first opendir() (the first proof of grace.h
 * starts there), and call this then. */
static bool af_prefix_opendir;
static void (*af_at_opendir)(void);
/* fopen() of /proc/self/task/... fails while set. */
static bool af_fail_task_files;
static int af_task_file_failures;

/* Is this call the one to fail? */
static bool af_hit(const char *what)
{
	if (!af_armed || af_busy)
		return false;
	if (++af_count != af_fail_at)
		return false;
	af_busy = 1;
	af_injected = 1;
	af_what = what;
	af_nbt = backtrace(af_bt, 32);
	af_busy = 0;
	return true;
}

void *malloc(size_t n)
{
	if (af_hit("malloc")) {
		errno = ENOMEM;
		return NULL;
	}
	return real_malloc(n);
}

void *calloc(size_t n, size_t m)
{
	if (af_hit("calloc")) {
		errno = ENOMEM;
		return NULL;
	}
	return real_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	if (n && af_hit("realloc")) {
		errno = ENOMEM;
		return NULL;
	}
	return real_realloc(p, n);
}

void free(void *p)
{
	real_free(p);
}

static bool af_align_ok(size_t al)
{
	return al && !(al & (al - 1)) && !(al % sizeof(void *));
}

int posix_memalign(void **out, size_t al, size_t n)
{
	void *p;

	if (!af_align_ok(al))
		return EINVAL;
	if (af_hit("posix_memalign"))
		return ENOMEM;
	p = real_memalign(al, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *aligned_alloc(size_t al, size_t n)
{
	if (af_hit("aligned_alloc")) {
		errno = ENOMEM;
		return NULL;
	}
	return real_memalign(al, n);
}

void *memalign(size_t al, size_t n)
{
	if (af_hit("memalign")) {
		errno = ENOMEM;
		return NULL;
	}
	return real_memalign(al, n);
}

void *valloc(size_t n)
{
	if (af_hit("valloc")) {
		errno = ENOMEM;
		return NULL;
	}
	return real_valloc(n);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (af_hit("mmap")) {
		errno = ENOMEM;
		return MAP_FAILED;
	}
	return real_mmap(addr, len, prot, flags, fd, off);
}

int open(const char *path, int flags, ...)
{
	mode_t mode = 0;

	if (flags & (O_CREAT | O_TMPFILE)) {
		va_list ap;

		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	if (af_hit("open")) {
		errno = EMFILE;
		return -1;
	}
	return __open(path, flags, mode);
}

FILE *fopen(const char *path, const char *mode)
{
	if (af_fail_task_files && !strncmp(path, "/proc/self/task/", 16)) {
		af_task_file_failures++;
		errno = EMFILE;
		return NULL;
	}
	return real_fopen(path, mode);
}

DIR *opendir(const char *name)
{
	if (af_armed && af_prefix_opendir && !af_busy) {
		af_armed = 0;		/* the rest is not counted */
		if (af_at_opendir)
			af_at_opendir();
	}
	return real_opendir(name);
}

int __register_atfork(void (*prepare)(void), void (*parent)(void),
		      void (*child)(void), void *dso)
{
	static int (*real)(void (*)(void), void (*)(void), void (*)(void), void *);

	if (af_hit("pthread_atfork"))
		return ENOMEM;
	if (!real) {
		af_busy++;
		real = (int (*)(void (*)(void), void (*)(void), void (*)(void), void *))
			dlsym(RTLD_NEXT, "__register_atfork");
		af_busy--;
	}
	return real(prepare, parent, child, dso);
}

#ifndef __SANITIZE_ADDRESS__
static DIR *real_opendir(const char *name)
{
	static DIR *(*fn)(const char *);

	if (!fn) {
		af_busy++;
		fn = (DIR *(*)(const char *))dlsym(RTLD_NEXT, "opendir");
		af_busy--;
	}
	return fn(name);
}

static int real_pthread_create(pthread_t *t, const pthread_attr_t *a,
			       void *(*fn)(void *), void *arg)
{
	static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

	if (!real) {
		af_busy++;
		real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))
			dlsym(RTLD_NEXT, "pthread_create");
		af_busy--;
	}
	return real(t, a, fn, arg);
}
#endif

/* Is @ip in libukprobes? */
static bool af_in_library(const void *ip)
{
	Dl_info a, b;

	return dladdr(ip, &a) && dladdr((const void *)register_kprobe, &b) &&
	       a.dli_fbase == b.dli_fbase;
}

static int af_library_threads_refused;

int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
	if (af_in_library(__builtin_return_address(0))) {
		af_library_threads_refused++;
		return EAGAIN;
	}
	return real_pthread_create(t, a, fn, arg);
}

/* ===================================================================== */
/* Targets and probes                                                    */
/* ===================================================================== */

typedef long (*fn1_t)(long);

extern char af_t1[], af_t1_2[], af_t2[], af_t3[], af_t3_2[], af_ret[], af_ret2[],
	af_jpf[], af_next[], af_fork[], af_opt[], af_opt_2[], af_opt1[], af_black[], af_warm[],
	af_uffd[], af_uffd_load[];
NOKPROBE_SYMBOL(af_black);
/* The architecture's breakpoint, and the first byte of an optimized
 * probe's jump (tests/arch/ARCH/alloc_fail.S). */
extern const unsigned char af_arch_brk[], af_arch_jump[];
extern const unsigned int af_arch_brk_len;

#define F(sym) ((fn1_t)(void *)(sym))
static fn1_t volatile f_t1 = F(af_t1), f_t2 = F(af_t2), f_t3 = F(af_t3),
		      f_ret = F(af_ret), f_ret2 = F(af_ret2), f_jpf = F(af_jpf),
		      f_next = F(af_next), f_fork = F(af_fork), f_opt = F(af_opt),
		      f_opt1 = F(af_opt1), f_warm = F(af_warm);
static long (*volatile f_uffd)(long *) = (long (*)(long *))(void *)af_uffd;

/* All the targets lie in one run of code (alloc_fail.S): af_t1 .. af_uffd. */
#define AF_CODE_LEN 256
static unsigned char af_pristine[AF_CODE_LEN];

static size_t af_code_len(void)
{
	size_t n = (size_t)(af_uffd - af_t1) + 16;

	return n < AF_CODE_LEN ? n : AF_CODE_LEN;
}

struct af_probe {
	struct kprobe kp;
	fn1_t fn;		/* calling fn(1) reaches the probe once */
	long expect;		/* fn(1) */
	volatile long hits;
};

struct af_rprobe {
	struct kretprobe rp;
	fn1_t fn;
	long expect;
	volatile long entries, returns, retval;
};

/*
 * Threads that run the probed code all along, in every run (af_workers_*):
 * the handlers count their hits apart from the hits of the thread under
 * test, whose counts the checks compare.
 */
static __thread bool af_on_worker;
static atomic_long af_worker_hits;

static int af_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct af_probe *ap = (struct af_probe *)((char *)p - offsetof(struct af_probe, kp));

	if (af_on_worker)
		atomic_fetch_add(&af_worker_hits, 1);
	else
		ap->hits++;
	return 0;
}

static void af_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
}

static int af_rentry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct af_rprobe *r = (struct af_rprobe *)get_kretprobe(ri);

	*(long *)ri->data = 0x5eed;
	if (af_on_worker)
		atomic_fetch_add(&af_worker_hits, 1);
	else
		r->entries++;
	return 0;
}

static int af_rret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct af_rprobe *r = (struct af_rprobe *)get_kretprobe(ri);

	if (af_on_worker) {
		atomic_fetch_add(&af_worker_hits, 1);
		return 0;
	}
	if (*(long *)ri->data == 0x5eed)
		r->returns++;
	r->retval = (long)regs_return_value(regs);
	return 0;
}

static volatile long jp_seen;

static long af_jp_entry(long x)
{
	if (af_on_worker)
		atomic_fetch_add(&af_worker_hits, 1);
	else
		jp_seen = x;
	jprobe_return();
}

/* A kprobe on @fn (by address @addr, or by @sym when not NULL). */
static void af_kprobe_init(struct af_probe *p, void *addr, const char *sym, fn1_t fn,
			   long k)
{
	memset(p, 0, sizeof(*p));
	if (sym)
		p->kp.symbol_name = sym;
	else
		p->kp.addr = (kprobe_opcode_t *)addr;
	p->kp.pre_handler = af_pre;
	p->fn = fn;
	p->expect = 1 + k;
}

static void af_kretprobe_init(struct af_rprobe *r, void *addr, const char *sym,
			      fn1_t fn, long k)
{
	memset(r, 0, sizeof(*r));
	if (sym)
		r->rp.kp.symbol_name = sym;
	else
		r->rp.kp.addr = (kprobe_opcode_t *)addr;
	r->rp.entry_handler = af_rentry;
	r->rp.handler = af_rret;
	r->rp.maxactive = 4;
	r->rp.data_size = sizeof(long);
	r->fn = fn;
	r->expect = 1 + k;
}

static void af_jprobe_init(struct jprobe *j)
{
	memset(j, 0, sizeof(*j));
	j->kp.addr = (kprobe_opcode_t *)af_jpf;
	j->entry = JPROBE_ENTRY(af_jp_entry);
}

/* ===================================================================== */
/* Checks in the child that runs one N                                   */
/* ===================================================================== */

#define AF_INJECTED	0	/* child exit: a failure was injected and handled */
#define AF_DONE		10	/* the call completed with none injected */
#define AF_BAD		11	/* a check failed (the child says which) */

#define AF_MAX_N	4000

/* struct af_path flags */
#define AF_PREFIX_OPENDIR	0x1	/* count only until the first proof */
#define AF_NEXT_KRET		0x2	/* next: a kretprobe too */
#define AF_NEXT_FORK		0x4	/* next: a fork()ed child's probe */
#define AF_ONCE			0x8	/* one run, nothing failed on purpose */

static const char *af_path_name;
static long af_n;

/* The injected failure's callers, up to the call from this program. */
static void af_print_failed_call(void)
{
	Dl_info self, at;
	bool in_lib = false;

	dladdr((const void *)af_print_failed_call, &self);
	/* Frames 0 and 1 are af_hit() and the interposer; this program's
	 * interposers may come again (fopen's malloc). */
	for (int i = 2; i < af_nbt; i++) {
		if (dladdr(af_bt[i], &at) && at.dli_fbase == self.dli_fbase && in_lib)
			break;
		in_lib |= af_in_library(af_bt[i]);
		backtrace_symbols_fd(&af_bt[i], 1, 2);
	}
}

static void af_bad(int line, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
static void af_bad(int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "alloc_fail.c:%d: %s, ", line, af_path_name);
	if (af_injected)
		fprintf(stderr, "failing call #%ld (%s): ", af_n, af_what);
	else
		fprintf(stderr, "no failure injected (N=%ld): ", af_n);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	if (af_injected) {
		fprintf(stderr, "  the failed call:\n");
		af_print_failed_call();
	}
	fflush(stderr);
	_exit(AF_BAD);
}

#define AF_EXPECT(cond, ...) do { if (!(cond)) af_bad(__LINE__, __VA_ARGS__); } while (0)

/*
 * Open descriptors, but the library's /proc/self/mem: opened at its first
 * use and kept for good, like its symbol cache (a failed first
 * registration may leave it, as a successful one followed by
 * unregistration does).
 */
static int af_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		char path[300], target[64];
		ssize_t len;

		if (de->d_name[0] == '.' || atoi(de->d_name) == dirfd(d))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		len = readlink(path, target, sizeof(target) - 1);
		target[len > 0 ? len : 0] = 0;
		if (!strncmp(target, "/proc/", 6) && len > 4 && !strcmp(target + len - 4, "/mem"))
			continue;
		n++;
	}
	closedir(d);
	return n;
}

static int af_listing(char *buf, size_t cap)
{
	FILE *f;
	int n;

	memset(buf, 0, cap);
	f = fmemopen(buf, cap - 1, "w");
	if (!f)
		return -1;
	n = ukprobes_print_list(f);
	fclose(f);
	return n;
}

/* The listing's line for the probe at @addr of type @type ('k', 'r', 'j'). */
static const char *af_list_line(const char *list, const void *addr, char type)
{
	char key[40];

	snprintf(key, sizeof(key), "%016lx  %c  ", (unsigned long)addr, type);
	for (const char *l = list; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, key, strlen(key)))
			return l;
	return NULL;
}

static bool af_line_has(const char *line, const char *flag)
{
	const char *nl = line ? strchr(line, '\n') : NULL;
	const char *f = line ? strstr(line, flag) : NULL;

	return f && (!nl || f < nl);
}

static bool af_code_pristine(const void *fn, size_t len)
{
	size_t off = (size_t)((const char *)fn - af_t1);

	return !memcmp(fn, af_pristine + off, len);
}

struct af_state {
	struct scn_snapshot snap;
	int nfds;
	int nlist;
	char list[8192];
};

static struct af_state af_before, af_now;

static void af_state_take(struct af_state *s)
{
	scn_snapshot_init(&s->snap);
	scn_snapshot_add_code(&s->snap, af_t1, af_code_len());
	scn_snapshot_take(&s->snap);
	s->nfds = af_count_fds();
	s->nlist = af_listing(s->list, sizeof(s->list));
}

/* The listing's line for the probe at @addr of type @type, listed now. */
static const char *af_line_of(const void *addr, char type)
{
	af_now.nlist = af_listing(af_now.list, sizeof(af_now.list));
	return af_list_line(af_now.list, addr, type);
}

static void af_optimize_all(void)
{
	cr_assert_eq(ukprobes_wait_optimizer(), 0);
}

/* The process is as it was before the call. */
static void af_expect_unchanged(int line, const char *when)
{
	char why[512];

	if (scn_snapshot_compare(&af_before.snap, why, sizeof(why)))
		af_bad(line, "%s: %s", when, why);
	af_now.nfds = af_count_fds();
	if (af_now.nfds != af_before.nfds)
		af_bad(line, "%s: %d file descriptors open, %d before", when,
		       af_now.nfds, af_before.nfds);
	af_now.nlist = af_listing(af_now.list, sizeof(af_now.list));
	if (af_now.nlist != af_before.nlist || strcmp(af_now.list, af_before.list))
		af_bad(line, "%s: the listing changed:\n%s--- before:\n%s", when,
		       af_now.list, af_before.list);
}

static bool af_errno_ok(int ret)
{
	return ret == -ENOMEM || ret == -EMFILE;
}

/* The probes fire: each fn(1) once, with its result. */
static void af_expect_fire(int line, struct af_probe **ps, int n, const char *when)
{
	long before[16];

	for (int i = 0; i < n; i++)
		before[i] = ps[i]->hits;
	for (int i = 0; i < n; i++) {
		bool first = true;

		for (int j = 0; j < i; j++)
			first &= ps[j]->fn != ps[i]->fn;
		if (!first)
			continue;	/* same function: one call hits both */
		long r = ps[i]->fn(1);

		if (r != ps[i]->expect)
			af_bad(line, "%s: probed function %d returned %ld, not %ld", when,
			       i, r, ps[i]->expect);
	}
	for (int i = 0; i < n; i++)
		if (ps[i]->hits != before[i] + 1)
			af_bad(line, "%s: probe %d fired %ld times, not once", when, i,
			       ps[i]->hits - before[i]);
}

static void af_expect_silent(int line, struct af_probe **ps, int n, const char *when)
{
	for (int i = 0; i < n; i++) {
		long h = ps[i]->hits, r = ps[i]->fn(1);

		if (r != ps[i]->expect)
			af_bad(line, "%s: probed function %d returned %ld", when, i, r);
		if (ps[i]->hits != h)
			af_bad(line, "%s: probe %d fired", when, i);
	}
}

static void af_expect_rfire(int line, struct af_rprobe *r, const char *when)
{
	long e = r->entries, rt = r->returns, v = r->fn(1);

	if (v != r->expect)
		af_bad(line, "%s: function returned %ld, not %ld", when, v, r->expect);
	if (r->entries != e + 1 || r->returns != rt + 1 || r->retval != r->expect)
		af_bad(line, "%s: kretprobe: %ld entries, %ld returns, saw %ld", when,
		       r->entries - e, r->returns - rt, r->retval);
}

static void af_expect_rsilent(int line, struct af_rprobe *r, const char *when)
{
	long e = r->entries, rt = r->returns, v = r->fn(1);

	if (v != r->expect)
		af_bad(line, "%s: function returned %ld", when, v);
	if (r->entries != e || r->returns != rt)
		af_bad(line, "%s: the kretprobe fired", when);
}

/* A fork()ed child's probe patches the child only (pthread_atfork). */
static void af_expect_fork_private(void)
{
	pid_t pid;
	int st;

	pid = fork();
	if (!pid) {
		struct af_probe p;

		af_kprobe_init(&p, af_fork, NULL, f_fork, 8);
		if (register_kprobe(&p.kp))
			_exit(1);
		if (f_fork(1) != 9 || p.hits != 1)
			_exit(2);
		_exit(0);	/* the probe stays: its int3 must be the child's */
	}
	AF_EXPECT(pid > 0, "fork: %s", strerror(errno));
	AF_EXPECT(waitpid(pid, &st, 0) == pid, "waitpid");
	AF_EXPECT(WIFEXITED(st) && !WEXITSTATUS(st), "a forked child's probe failed (status %#x)",
		  st);
	AF_EXPECT(af_code_pristine(af_fork, 16), "a forked child's probe patched its parent");
}

extern int __lsan_do_recoverable_leak_check(void) __attribute__((weak));

#ifdef __SANITIZE_ADDRESS__
/*
 * LeakSanitizer in a fork()ed child does not scan the main thread (its
 * registry keeps the parent's thread id: "Running thread ... was not
 * suspended"), so what only Criterion's frames on that stack refer to
 * looks leaked: the dynamic loader's lists of its dlopen().  None of it
 * is the library's.
 */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:_dl_map_object_deps\n";
}
#endif

/* After the call: a new registration works and fires; nothing leaked. */
static void af_expect_next_works(unsigned int flags)
{
	struct af_probe p, *pp = &p;
	struct af_rprobe r;
	int ret;

	af_kprobe_init(&p, af_next, NULL, f_next, 7);
	ret = register_kprobe(&p.kp);
	AF_EXPECT(ret == 0, "the next register_kprobe returned %d", ret);
	af_expect_fire(__LINE__, &pp, 1, "the next kprobe");
	unregister_kprobe(&p.kp);
	AF_EXPECT(af_code_pristine(af_next, 16), "the next kprobe left code behind");

	if (flags & AF_NEXT_KRET) {
		af_kretprobe_init(&r, af_next, NULL, f_next, 7);
		ret = register_kretprobe(&r.rp);
		AF_EXPECT(ret == 0 || ret == -EOPNOTSUPP,
			  "the next register_kretprobe returned %d", ret);
		if (!ret) {
			af_expect_rfire(__LINE__, &r, "the next kretprobe");
			unregister_kretprobe(&r.rp);
			AF_EXPECT(af_code_pristine(af_next, 16),
				  "the next kretprobe left code behind");
		}
	}
	if (flags & AF_NEXT_FORK)
		af_expect_fork_private();
}

/* ===================================================================== */
/* The exploration                                                       */
/* ===================================================================== */

struct af_path {
	const char *name;
	void (*prepare)(void);		/* in the child, before the snapshot */
	int (*call)(void);		/* the API call, armed */
	void (*check)(int ret);		/* in the child, after it */
	unsigned int flags;		/* AF_* */
};


/* ---- The threads that run the probed code ------------------------------ */

#define AF_WORKERS 2

/* What they call, and what each returns for 1. */
static fn1_t volatile *const af_worker_fns[] = {
	&f_t1, &f_t2, &f_t3, &f_ret, &f_ret2, &f_jpf, &f_next, &f_fork, &f_opt, &f_opt1,
};
static const long af_worker_expect[] = { 2, 3, 4, 5, 6, 7, 8, 9, 10, 0x10001 };

static pthread_t af_workers[AF_WORKERS];
static atomic_int af_workers_stop, af_workers_started;
static atomic_long af_worker_calls;
static atomic_int af_worker_nbad;
static char af_worker_bad[160];

static void *af_worker_main(void *arg)
{
	/* Ten rounds, then a short sleep: mostly running the targets, but
	 * leaving the loaded machine's cores to the thread under test. */
	const struct timespec pause = { 0, 50 * 1000 };
	bool started = false;

	af_on_worker = true;
	while (!atomic_load(&af_workers_stop)) {
		for (size_t i = 0; i < 10 * sizeof(af_worker_fns) / sizeof(af_worker_fns[0]); i++) {
			size_t f = i % (sizeof(af_worker_fns) / sizeof(af_worker_fns[0]));
			long r = (*af_worker_fns[f])(1);

			atomic_fetch_add(&af_worker_calls, 1);
			if (r != af_worker_expect[f] && !atomic_fetch_add(&af_worker_nbad, 1))
				snprintf(af_worker_bad, sizeof(af_worker_bad),
					 "function %zu returned %ld, not %ld", f, r,
					 af_worker_expect[f]);
		}
		if (!started) {
			started = true;
			atomic_fetch_add(&af_workers_started, 1);
		}
		nanosleep(&pause, NULL);
	}
	return NULL;
}

/* Before the snapshot: their stacks are part of the maps compared. */
static void af_workers_start(void)
{
	const struct timespec tick = { 0, 100 * 1000 };

	for (int i = 0; i < AF_WORKERS; i++)
		AF_EXPECT(!real_pthread_create(&af_workers[i], NULL, af_worker_main, NULL),
			  "pthread_create");
	/* Running before the call, each past its first round. */
	while (atomic_load(&af_workers_started) < AF_WORKERS)
		nanosleep(&tick, NULL);
}

/* They ran through the call and what followed, and saw right results. */
static void af_workers_stop_and_check(void)
{
	atomic_store(&af_workers_stop, 1);
	for (int i = 0; i < AF_WORKERS; i++)
		pthread_join(af_workers[i], NULL);
	AF_EXPECT(!atomic_load(&af_worker_nbad), "%d wrong results in the other threads: %s",
		  atomic_load(&af_worker_nbad), af_worker_bad);
}

static void af_child(const struct af_path *p, long n)
{
	int ret;

	alarm(60);
	af_n = n;
	if (p->prepare)
		p->prepare();
	af_workers_start();
	af_state_take(&af_before);
	af_prefix_opendir = p->flags & AF_PREFIX_OPENDIR;
	af_count = 0;
	af_fail_at = p->flags & AF_ONCE ? 0 : n;
	af_injected = 0;
	af_armed = 1;
	ret = p->call();
	af_armed = 0;
	if (af_injected && getenv("AF_LIST")) {
		fprintf(stderr, "%s #%ld: %s failed, call returned %d\n", p->name, n, af_what, ret);
		af_print_failed_call();
	}
	p->check(ret);
	af_expect_next_works(p->flags);
	af_workers_stop_and_check();
	if (__lsan_do_recoverable_leak_check)
		AF_EXPECT(!__lsan_do_recoverable_leak_check(), "LeakSanitizer found leaks");
	if (getenv("AF_VERBOSE"))
		fprintf(stderr, "%s #%ld: the other threads made %ld calls, %ld hits\n", p->name,
			n, atomic_load(&af_worker_calls), atomic_load(&af_worker_hits));
	_exit(af_injected ? AF_INJECTED : AF_DONE);
}

/*
 * Fail every allocation of a call in turn: N = 1, 2, ... until a run
 * completes with none injected.  With several variants (@nv > 1: the same
 * call on other input, whose allocations are the same up to where their
 * checks part), N goes to the variants in turn, and to the next one when
 * a variant completes before its Nth allocation: every allocation of each
 * fails once, and each variant's own checks see a share of the common
 * ones and all of its own.  Returns the number of allocations failed.
 */
static long af_explore_variants(const struct af_path *const *v, int nv)
{
	char bad[256] = "";
	size_t blen = 0;
	int nbad = 0, ndone = 0, k = 0;
	bool done[8] = { false };
	long n, last[8] = { 0 };
	/* AF_N=k runs that one only (to look at one failure). */
	bool only = getenv("AF_N") != NULL;

	cr_assert_leq(nv, 8);
	fflush(NULL);
	for (n = only ? atol(getenv("AF_N")) : 1; n <= AF_MAX_N && ndone < nv;) {
		const struct af_path *p;
		int st;
		pid_t pid;

		k = (int)((n - 1) % nv);
		while (done[k])
			k = (k + 1) % nv;
		p = v[k];
		af_path_name = p->name;
		pid = fork();
		cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
		if (!pid)
			af_child(p, n);
		cr_assert_eq(waitpid(pid, &st, 0), pid);
		if (WIFEXITED(st) && WEXITSTATUS(st) == AF_DONE) {
			done[k] = true;		/* fewer than n: n goes on to another */
			ndone++;
			if (only)
				break;
			continue;
		}
		if (WIFEXITED(st) && WEXITSTATUS(st) == AF_INJECTED && !(p->flags & AF_ONCE)) {
			last[k] = n++;
			if (only)
				break;
			continue;
		}
		/* Go on: every failing N is worth knowing. */
		if (!WIFEXITED(st) || WEXITSTATUS(st) != AF_BAD)
			fprintf(stderr, "%s: with call #%ld failing, the child %s %d\n", p->name, n,
				WIFSIGNALED(st) ? "died of signal" : "exited with",
				WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		if (blen < sizeof(bad) - 40)
			blen += (size_t)snprintf(bad + blen, sizeof(bad) - blen, " %s#%ld",
						 nv > 1 ? p->name : "", n);
		nbad++;
		last[k] = n++;
		if (only || (p->flags & AF_ONCE))
			break;
	}
	cr_assert_leq(n, AF_MAX_N, "%s: more than %d calls to fail", v[0]->name, AF_MAX_N);
	for (k = 0; k < nv; k++)
		if (!(v[k]->flags & AF_ONCE))
			fprintf(stderr, "alloc_fail: %-36s %4ld calls failed in turn%s\n",
				v[k]->name, nv > 1 ? last[k] : n - 1,
				nv > 1 ? " (up to)" : "");
	cr_assert_eq(nbad, 0, "%s: %d of %ld failures mishandled:%s", v[0]->name, nbad, n - 1,
		     bad);
	return n - 1;
}

static long af_explore(const struct af_path *p)
{
	return af_explore_variants(&p, 1);
}

#ifndef UKP_TEST_HARNESS
/* Write the twin's output to stderr, line by line, without its "[====]
 * Synthesis" line. */
static void af_forward_lines(const char *buf, size_t len)
{
	static char line[1024];
	static size_t ll;

	for (size_t i = 0; i < len; i++) {
		if (ll < sizeof(line))
			line[ll++] = buf[i];
		if (buf[i] != '\n' && ll < sizeof(line))
			continue;
		if (ll < 16 || memcmp(line, "[====] Synthesis", 16))
			(void)!write(2, line, ll);
		ll = 0;
	}
}

/* Run test @name in the lean twin; its report goes to stderr, and its
 * verdict (pass, fail, skip) becomes this test's. */
static void af_in_twin(const char *name)
{
	char twin[PATH_MAX], filter[128], tail[4096] = "", buf[4096];
	size_t tlen = 0;
	ssize_t len = readlink("/proc/self/exe", twin, sizeof(twin) - 32);
	char *slash, *skip;
	int fds[2], st;
	pid_t pid;

	cr_assert_gt(len, 0, "readlink /proc/self/exe: %s", strerror(errno));
	twin[len] = 0;
	/* $(B)/tests/scenario/alloc_fail -> $(B)/tests/lean/alloc_fail */
	for (int i = 0; i < 2; i++) {
		slash = strrchr(twin, '/');
		cr_assert_not_null(slash, "where is %s?", twin);
		*slash = 0;
	}
	strcat(twin, "/lean/alloc_fail");
	snprintf(filter, sizeof(filter), "alloc_fail/%s", name);
	cr_assert_eq(pipe(fds), 0);
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (!pid) {
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		execl(twin, twin, "--filter", filter, (char *)NULL);
		fprintf(stderr, "alloc_fail: cannot run %s: %s\n", twin, strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	/* Pass it on as it comes, but its closing line (tests/run.sh reads
	 * this program's); keep the end, where the verdict is. */
	while ((len = read(fds[0], buf, sizeof(buf))) > 0) {
		af_forward_lines(buf, (size_t)len);
		if ((size_t)len >= sizeof(tail) - 1) {
			memcpy(tail, buf + len - (sizeof(tail) - 1), sizeof(tail) - 1);
			tlen = sizeof(tail) - 1;
		} else {
			if (tlen + (size_t)len >= sizeof(tail)) {
				size_t drop = tlen + (size_t)len - (sizeof(tail) - 1);

				memmove(tail, tail + drop, tlen - drop);
				tlen -= drop;
			}
			memcpy(tail + tlen, buf, (size_t)len);
			tlen += (size_t)len;
		}
		tail[tlen] = 0;
	}
	close(fds[0]);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 127, "the lean twin %s did not run", twin);
	skip = strstr(tail, "# SKIP ");
	if (skip && WIFEXITED(st) && !WEXITSTATUS(st)) {
		char *nl = strchr(skip, '\n');

		if (nl)
			*nl = 0;
		cr_skip_test("%s", skip + 7);
	}
	cr_assert(WIFEXITED(st) && !WEXITSTATUS(st) && strstr(tail, "ok 1 - alloc_fail::") &&
		  !strstr(tail, "not ok"),
		  "alloc_fail/%s failed in the lean twin %s (status %#x)", name, twin, st);
}
#endif

static void af_init_process(void)
{
	void *bt[4];

	/* backtrace() loads its unwinder on first use: not in a hook. */
	backtrace(bt, 4);
#ifdef __SANITIZE_ADDRESS__
	{
		/* LeakSanitizer symbolizes the stacks it matches against its
		 * suppressions; its symbolizer reads every object's debug
		 * information on first use.  Once here, not in each child. */
		char buf[256];
		extern void *__tls_get_addr(void *);

		__sanitizer_symbolize_pc((void *)af_init_process, "%f", buf, sizeof(buf));
		__sanitizer_symbolize_pc((void *)__tls_get_addr, "%f", buf, sizeof(buf));
		__sanitizer_symbolize_pc((void *)real_malloc, "%f", buf, sizeof(buf));
	}
#endif
	scn_maps_skip_heap = true;
	memcpy(af_pristine, af_t1, af_code_len());
}

/* Lazy state the warm paths should find done: symbols, slot pages, the
 * point table, signal handlers, the optimizer's queue. */
static void af_warm_up(void)
{
	struct af_probe w;

	af_kprobe_init(&w, af_warm, NULL, f_warm, 11);
	cr_assert_eq(register_kprobe(&w.kp), 0);
	cr_assert_eq(f_warm(1), 12);
	cr_assert_eq(w.hits, 1);
	unregister_kprobe(&w.kp);
	af_kprobe_init(&w, NULL, "af_warm", f_warm, 11);
	w.kp.post_handler = af_post;
	cr_assert_eq(register_kprobe(&w.kp), 0);
	cr_assert_eq(f_warm(1), 12);
	unregister_kprobe(&w.kp);
	cr_assert_eq(w.hits, 1);
	ukprobes_wait_optimizer();
}

/* ===================================================================== */
/* Registration paths                                                    */
/* ===================================================================== */

static struct af_probe P1, P2, P3, P4;
static struct af_probe K;	/* a probe already there, kept */
static struct af_probe *Pall[] = { &P1, &P2, &P3, &P4 };
static struct kprobe *KPall[] = { &P1.kp, &P2.kp, &P3.kp, &P4.kp };
static int Pn;			/* how many of Pall the path registers */
static struct af_rprobe R1, R2;
static struct kretprobe *RPall[] = { &R1.rp, &R2.rp };
static int Rn;
static struct jprobe J;

/* The structs as the path gives them to register_*: kept to re-register
 * after a failure. */
static struct af_probe Pinit[4];
static struct af_rprobe Rinit[2];

static void af_reset_structs(void)
{
	for (int i = 0; i < 4; i++)
		*Pall[i] = Pinit[i];
	R1 = Rinit[0];
	R2 = Rinit[1];
	af_jprobe_init(&J);
}

/* A registration's outcome: an error changed nothing; success fires.
 * Either way the same structs then register and go cleanly. */
static void af_check_kprobes(int ret)
{
	if (ret) {
		AF_EXPECT(af_injected, "failed (%d) with no failure injected", ret);
		AF_EXPECT(af_errno_ok(ret), "returned %d", ret);
		af_expect_unchanged(__LINE__, "after the failed registration");
		af_expect_silent(__LINE__, Pall, Pn, "after the failed registration");
		af_reset_structs();
		ret = register_kprobes(KPall, Pn);
		AF_EXPECT(ret == 0, "registering the same probes again: %d", ret);
	}
	af_expect_fire(__LINE__, Pall, Pn, "registered");
	unregister_kprobes(KPall, Pn);
	AF_EXPECT(af_code_pristine(af_t1, af_code_len()), "unregistering left code behind");
	af_expect_silent(__LINE__, Pall, Pn, "after unregistering");
}

static int af_call_register_kprobe(void)
{
	return register_kprobe(&P1.kp);
}

static int af_call_register_kprobes(void)
{
	return register_kprobes(KPall, Pn);
}

static void af_set_probes_addr(void)
{
	af_kprobe_init(&Pinit[0], af_t1, NULL, f_t1, 1);
	Pn = 1;
	af_reset_structs();
}

static void af_set_probes_sym(void)
{
	af_kprobe_init(&Pinit[0], NULL, "af_t1", f_t1, 1);
	Pn = 1;
	af_reset_structs();
}

static void af_set_probes_batch(void)
{
	af_kprobe_init(&Pinit[0], af_t1, NULL, f_t1, 1);
	af_kprobe_init(&Pinit[1], NULL, "alloc_fail:af_t2", f_t2, 2);	/* OBJ:SYM */
	af_kprobe_init(&Pinit[2], af_t1, NULL, f_t1, 1);	/* same address */
	af_kprobe_init(&Pinit[3], af_t3_2, NULL, f_t3, 3);	/* 2nd instruction */
	Pinit[3].kp.post_handler = af_post;
	Pn = 4;
	af_reset_structs();
}


/* A registration that must be refused whatever fails (blacklisted, not an
 * instruction boundary): never 0. */
static int af_refusal;

static void af_check_refused(int ret)
{
	AF_EXPECT(ret == -af_refusal || (af_injected && af_errno_ok(ret)),
		  "returned %d, not %d", ret, -af_refusal);
	af_expect_unchanged(__LINE__, "after the refusal");
	af_reset_structs();
	ret = register_kprobe(&P1.kp);
	AF_EXPECT(ret == -af_refusal, "registering again returned %d, not %d", ret,
		  -af_refusal);
}

#define AF_LAZY (AF_NEXT_KRET | AF_NEXT_FORK)

static void af_set_probe_blacklisted(void)
{
	af_kprobe_init(&Pinit[0], af_black, NULL, f_t1, 1);
	Pn = 1;
	af_reset_structs();
	af_refusal = EINVAL;
}

static void af_set_probe_mid_insn(void)
{
	af_kprobe_init(&Pinit[0], af_t1 + 1, NULL, f_t1, 1);
	Pn = 1;
	af_reset_structs();
	af_refusal = EILSEQ;
}

/*
 * The first registration (the library's lazy state, the mappings, the
 * symbols and blacklists of every loaded object), by address, with three
 * inputs in turn: a probe that must work; one in a NOKPROBE_SYMBOL()
 * function, whose blacklist entry is read then; one inside an instruction,
 * which only the function's symbol shows.  A failure while reading must
 * not let either of the last two in.
 */
AF_TEST(first_registration, 900)
{
	static const struct af_path addr = { "first register_kprobe(addr)", af_set_probes_addr,
					     af_call_register_kprobe, af_check_kprobes, AF_LAZY };
	static const struct af_path black = { "first register_kprobe(blacklisted)",
					      af_set_probe_blacklisted, af_call_register_kprobe,
					      af_check_refused, 0 };
	static const struct af_path mid = { "first register_kprobe(mid-insn)",
					    af_set_probe_mid_insn, af_call_register_kprobe,
					    af_check_refused, 0 };
	static const struct af_path *const v[] = { &addr, &black, &mid };

	af_init_process();
	af_explore_variants(v, 3);
}

AF_TEST(first_registration_by_symbol, 900)
{
	af_init_process();
	af_set_probes_sym();
	af_explore(&(struct af_path){ "first register_kprobe(symbol)", NULL,
				      af_call_register_kprobe, af_check_kprobes, AF_LAZY });
}

AF_TEST(register_kprobe_addr, 300)
{
	af_init_process();
	af_warm_up();
	af_set_probes_addr();
	af_explore(&(struct af_path){ "register_kprobe(addr)", NULL,
				      af_call_register_kprobe, af_check_kprobes, 0 });
}

AF_TEST(register_kprobe_symbol, 300)
{
	af_init_process();
	af_warm_up();
	af_set_probes_sym();
	af_explore(&(struct af_path){ "register_kprobe(symbol)", NULL,
				      af_call_register_kprobe, af_check_kprobes, 0 });
}

AF_TEST(register_kprobes_batch, 300)
{
	af_init_process();
	af_warm_up();
	af_set_probes_batch();
	af_explore(&(struct af_path){ "register_kprobes(4)", NULL,
				      af_call_register_kprobes, af_check_kprobes, 0 });
}

/*
 * A registration next to an optimized probe K at af_opt (its jump covers
 * af_opt's first two instructions): on the same address, inside its
 * region, or a return probe on it.  K must keep working, and a failure
 * leave it as it was: optimized, its jump in place.
 */
static void af_register_keeper(void)
{
	af_kprobe_init(&K, af_opt, NULL, f_opt, 9);
	cr_assert_eq(register_kprobe(&K.kp), 0);
	af_optimize_all();
	cr_assert(af_line_has(af_line_of(af_opt, 'k'), "[OPTIMIZED]"), "K not optimized:\n%s",
		  af_now.list);
}

/* K fires, and is optimized again once the optimizer had its turn. */
static void af_expect_keeper_back(int line)
{
	struct af_probe *kp = &K;

	af_expect_fire(line, &kp, 1, "the probe already there");
	if (ukprobes_wait_optimizer())
		af_bad(line, "probes still waiting for the optimizer");
	if (!af_line_has(af_line_of(af_opt, 'k'), "[OPTIMIZED]"))
		af_bad(line, "the probe already there is not optimized again:\n%s", af_now.list);
	af_expect_fire(line, &kp, 1, "the probe already there, optimized");
	unregister_kprobe(&K.kp);
	if (!af_code_pristine(af_t1, af_code_len()))
		af_bad(line, "unregistering left code behind");
}

static void af_check_beside_keeper(int ret)
{
	struct af_probe *both[] = { &K, &P1 };

	if (ret) {
		AF_EXPECT(af_injected, "failed (%d) with no failure injected", ret);
		AF_EXPECT(af_errno_ok(ret), "returned %d", ret);
		af_expect_unchanged(__LINE__, "after the failed registration");
		af_expect_silent(__LINE__, Pall, 1, "after the failed registration");
		af_reset_structs();
		ret = register_kprobe(&P1.kp);
		AF_EXPECT(ret == 0, "registering the same probe again: %d", ret);
	}
	af_expect_fire(__LINE__, both, 2, "registered beside the optimized probe");
	unregister_kprobe(&P1.kp);
	af_expect_silent(__LINE__, Pall, 1, "after unregistering");
	af_expect_keeper_back(__LINE__);
}

AF_TEST(register_kprobe_on_optimized, 300)
{
	af_init_process();
	af_warm_up();
	af_register_keeper();
	af_kprobe_init(&Pinit[0], af_opt, NULL, f_opt, 9);
	Pinit[0].kp.post_handler = af_post;	/* (the kernel's rule: not optimized) */
	Pn = 1;
	af_reset_structs();
	af_explore(&(struct af_path){ "register_kprobe(on an optimized one)", NULL,
				      af_call_register_kprobe, af_check_beside_keeper, 0 });
}

AF_TEST(register_kprobe_in_optimized_region, 300)
{
	af_init_process();
	af_warm_up();
	af_register_keeper();
	af_kprobe_init(&Pinit[0], af_opt_2, NULL, f_opt, 9);
	Pn = 1;
	af_reset_structs();
	af_explore(&(struct af_path){ "register_kprobe(in an optimized region)", NULL,
				      af_call_register_kprobe, af_check_beside_keeper, 0 });
}

/* --------------------------------------------------------------------- */
/* Return probes and jprobes                                             */
/* --------------------------------------------------------------------- */

/* Not under a CET shadow stack (-EOPNOTSUPP): asked in a child, so that
 * this process stays without kretprobe state. */
static bool af_kretprobes_supported(void)
{
	pid_t pid = fork();
	int st;

	if (!pid) {
		struct af_rprobe r;

		af_kretprobe_init(&r, af_warm, NULL, f_warm, 11);
		_exit(register_kretprobe(&r.rp) == -EOPNOTSUPP ? 77 : 0);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return !(WIFEXITED(st) && WEXITSTATUS(st) == 77);
}

static void af_check_kretprobes(int ret)
{
	if (ret) {
		AF_EXPECT(af_injected, "failed (%d) with no failure injected", ret);
		AF_EXPECT(af_errno_ok(ret), "returned %d", ret);
		af_expect_unchanged(__LINE__, "after the failed registration");
		for (int i = 0; i < Rn; i++)
			af_expect_rsilent(__LINE__, i ? &R2 : &R1, "after the failure");
		af_reset_structs();
		ret = register_kretprobes(RPall, Rn);
		AF_EXPECT(ret == 0, "registering the same kretprobes again: %d", ret);
	}
	for (int i = 0; i < Rn; i++)
		af_expect_rfire(__LINE__, i ? &R2 : &R1, "registered");
	unregister_kretprobes(RPall, Rn);
	AF_EXPECT(af_code_pristine(af_t1, af_code_len()), "unregistering left code behind");
	for (int i = 0; i < Rn; i++)
		af_expect_rsilent(__LINE__, i ? &R2 : &R1, "after unregistering");
}

static int af_call_register_kretprobe(void)
{
	return register_kretprobe(&R1.rp);
}

static int af_call_register_kretprobes(void)
{
	return register_kretprobes(RPall, Rn);
}

AF_TEST(first_kretprobe, 300)
{
	af_init_process();
	if (!af_kretprobes_supported())
		cr_skip_test("kretprobes unsupported here (CET shadow stack)");
	af_warm_up();
	af_kretprobe_init(&Rinit[0], NULL, "af_ret", f_ret, 4);
	Rn = 1;
	af_reset_structs();
	af_explore(&(struct af_path){ "first register_kretprobe", NULL,
				      af_call_register_kretprobe, af_check_kretprobes,
				      AF_NEXT_KRET });
}

AF_TEST(register_kretprobes, 300)
{
	struct af_rprobe w;

	af_init_process();
	if (!af_kretprobes_supported())
		cr_skip_test("kretprobes unsupported here (CET shadow stack)");
	af_warm_up();
	af_kretprobe_init(&w, af_warm, NULL, f_warm, 11);
	cr_assert_eq(register_kretprobe(&w.rp), 0);
	cr_assert_eq(f_warm(1), 12);
	unregister_kretprobe(&w.rp);
	cr_assert_eq(w.returns, 1);
	af_kretprobe_init(&Rinit[0], af_ret, NULL, f_ret, 4);
	af_kretprobe_init(&Rinit[1], NULL, "af_ret2", f_ret2, 5);
	Rn = 2;
	af_reset_structs();
	af_explore(&(struct af_path){ "register_kretprobes(2)", NULL,
				      af_call_register_kretprobes, af_check_kretprobes,
				      AF_NEXT_KRET });
}

/* A return probe on the optimized probe's address (the detour then also
 * replaces the return address). */
static void af_check_kretprobe_beside_keeper(int ret)
{
	struct af_probe *kp = &K;

	if (ret) {
		AF_EXPECT(af_injected, "failed (%d) with no failure injected", ret);
		AF_EXPECT(af_errno_ok(ret), "returned %d", ret);
		af_expect_unchanged(__LINE__, "after the failed registration");
		af_expect_rsilent(__LINE__, &R1, "after the failure");
		af_reset_structs();
		ret = register_kretprobe(&R1.rp);
		AF_EXPECT(ret == 0, "registering the same kretprobe again: %d", ret);
	}
	af_expect_rfire(__LINE__, &R1, "registered beside the optimized probe");
	af_expect_fire(__LINE__, &kp, 1, "the probe already there, beside the kretprobe");
	unregister_kretprobe(&R1.rp);
	af_expect_rsilent(__LINE__, &R1, "after unregistering");
	af_expect_keeper_back(__LINE__);
}

AF_TEST(register_kretprobe_on_optimized, 300)
{
	af_init_process();
	if (!af_kretprobes_supported())
		cr_skip_test("kretprobes unsupported here (CET shadow stack)");
	af_warm_up();
	af_register_keeper();
	af_kretprobe_init(&Rinit[0], af_opt, NULL, f_opt, 9);
	Rn = 1;
	af_reset_structs();
	af_explore(&(struct af_path){ "register_kretprobe(on an optimized kprobe)", NULL,
				      af_call_register_kretprobe, af_check_kretprobe_beside_keeper,
				      AF_NEXT_KRET });
}

static void af_expect_jprobe(int line, bool fires, const char *when)
{
	long v;

	jp_seen = 0;
	v = f_jpf(41);
	if (v != 47)
		af_bad(line, "%s: the jprobed function returned %ld", when, v);
	if ((jp_seen == 41) != fires)
		af_bad(line, "%s: the jprobe %s", when, fires ? "did not fire" : "fired");
}

static void af_check_jprobe(int ret)
{
	if (ret) {
		AF_EXPECT(af_injected, "failed (%d) with no failure injected", ret);
		AF_EXPECT(af_errno_ok(ret), "returned %d", ret);
		af_expect_unchanged(__LINE__, "after the failed registration");
		af_expect_jprobe(__LINE__, false, "after the failure");
		af_reset_structs();
		ret = register_jprobe(&J);
		AF_EXPECT(ret == 0, "registering the same jprobe again: %d", ret);
	}
	af_expect_jprobe(__LINE__, true, "registered");
	unregister_jprobe(&J);
	AF_EXPECT(af_code_pristine(af_t1, af_code_len()), "unregistering left code behind");
	af_expect_jprobe(__LINE__, false, "after unregistering");
}

static int af_call_register_jprobe(void)
{
	return register_jprobe(&J);
}

AF_TEST(first_jprobe, 300)
{
	af_init_process();
	af_warm_up();
	af_reset_structs();
	af_explore(&(struct af_path){ "first register_jprobe", NULL, af_call_register_jprobe,
				      af_check_jprobe, AF_NEXT_KRET });
}

/* --------------------------------------------------------------------- */
/* Unregistration: cannot fail                                           */
/* --------------------------------------------------------------------- */

/* Sigs, maps, descriptors as before the call; code as before any probe;
 * nothing listed. */
static void af_expect_all_gone(int line, const char *when)
{
	static struct scn_snapshot nocode;
	char why[512];

	nocode = af_before.snap;
	nocode.nranges = 0;
	if (scn_snapshot_compare(&nocode, why, sizeof(why)))
		af_bad(line, "%s: %s", when, why);
	if (af_count_fds() != af_before.nfds)
		af_bad(line, "%s: file descriptors changed", when);
	if (!af_code_pristine(af_t1, af_code_len()))
		af_bad(line, "%s: code is not as before any probe", when);
	af_now.nlist = af_listing(af_now.list, sizeof(af_now.list));
	if (af_now.nlist)
		af_bad(line, "%s: still listed:\n%s", when, af_now.list);
}

static void af_check_kprobes_gone(int ret)
{
	af_expect_all_gone(__LINE__, "after unregistering");
	af_expect_silent(__LINE__, Pall, Pn, "after unregistering");
	af_reset_structs();
	ret = register_kprobes(KPall, Pn);
	AF_EXPECT(ret == 0, "registering the same probes again: %d", ret);
	af_expect_fire(__LINE__, Pall, Pn, "registered again");
	unregister_kprobes(KPall, Pn);
	AF_EXPECT(af_code_pristine(af_t1, af_code_len()), "unregistering left code behind");
}

static int af_call_unregister_kprobes(void)
{
	unregister_kprobes(KPall, Pn);
	return 0;
}

/* In the parent: register the path's probes. */
static void af_register_parent(bool optimize)
{
	cr_assert_eq(register_kprobes(KPall, Pn), 0);
	if (optimize) {
		af_optimize_all();
		for (int i = 0; i < Pn; i++)
			cr_assert(af_line_has(af_line_of(Pall[i]->kp.addr, 'k'), "[OPTIMIZED]"),
				  "probe %d not optimized:\n%s", i, af_now.list);
	}
}

AF_TEST(unregister_kprobe, 300)
{
	af_init_process();
	af_warm_up();
	ukprobes_set_optimization(0);
	af_set_probes_addr();
	af_register_parent(false);
	af_explore(&(struct af_path){ "unregister_kprobe", NULL, af_call_unregister_kprobes,
				      af_check_kprobes_gone, 0 });
}

AF_TEST(unregister_kprobe_optimized, 300)
{
	af_init_process();
	af_warm_up();
	af_kprobe_init(&Pinit[0], af_opt, NULL, f_opt, 9);
	Pn = 1;
	af_reset_structs();
	af_register_parent(true);
	af_explore(&(struct af_path){ "unregister_kprobe(optimized)", NULL,
				      af_call_unregister_kprobes, af_check_kprobes_gone, 0 });
}

AF_TEST(unregister_kprobes_batch, 300)
{
	af_init_process();
	af_warm_up();
	af_set_probes_batch();
	af_register_parent(false);
	af_explore(&(struct af_path){ "unregister_kprobes(4)", NULL,
				      af_call_unregister_kprobes, af_check_kprobes_gone, 0 });
}

/*
 * A probe inside another's region keeps that one from being optimized;
 * when it goes, the other is queued again.  K at af_opt stays; the batch
 * (af_opt's second instruction, af_t1) goes.
 */

static void af_check_neighbour(int ret)
{
	struct af_probe *kp = &K;
	const char *l;

	af_expect_silent(__LINE__, Pall, Pn, "after unregistering");
	AF_EXPECT(af_code_pristine(af_t1, 16), "unregistering left code behind");
	af_expect_fire(__LINE__, &kp, 1, "the probe that stays");
	AF_EXPECT(ukprobes_wait_optimizer() == 0, "probes still waiting for the optimizer");
	l = af_line_of(af_opt, 'k');
	AF_EXPECT(af_line_has(l, "[OPTIMIZED]"),
		  "the probe that stays was not optimized once its neighbour went:\n%s",
		  af_now.list);
	af_expect_fire(__LINE__, &kp, 1, "the probe that stays, optimized");
	unregister_kprobe(&K.kp);
	AF_EXPECT(af_code_pristine(af_t1, af_code_len()), "unregistering left code behind");
}

AF_TEST(unregister_kprobes_neighbour, 300)
{
	af_init_process();
	af_warm_up();
	af_kprobe_init(&K, af_opt, NULL, f_opt, 9);
	af_kprobe_init(&Pinit[0], af_opt_2, NULL, f_opt, 9);
	af_kprobe_init(&Pinit[1], af_t1, NULL, f_t1, 1);
	Pn = 2;
	af_reset_structs();
	cr_assert_eq(register_kprobe(&K.kp), 0);
	af_register_parent(false);
	af_optimize_all();
	cr_assert(!af_line_has(af_line_of(af_opt, 'k'), "[OPTIMIZED]"),
		  "optimized over a probe in its region:\n%s", af_now.list);
	af_explore(&(struct af_path){ "unregister_kprobes(neighbour)", NULL,
				      af_call_unregister_kprobes, af_check_neighbour, 0 });
}

static void af_check_kretprobes_gone(int ret)
{
	af_expect_all_gone(__LINE__, "after unregistering");
	for (int i = 0; i < Rn; i++)
		af_expect_rsilent(__LINE__, i ? &R2 : &R1, "after unregistering");
	af_reset_structs();
	ret = register_kretprobes(RPall, Rn);
	AF_EXPECT(ret == 0, "registering the same kretprobes again: %d", ret);
	for (int i = 0; i < Rn; i++)
		af_expect_rfire(__LINE__, i ? &R2 : &R1, "registered again");
	unregister_kretprobes(RPall, Rn);
}

static int af_call_unregister_kretprobes(void)
{
	unregister_kretprobes(RPall, Rn);
	return 0;
}

AF_TEST(unregister_kretprobes, 300)
{
	af_init_process();
	if (!af_kretprobes_supported())
		cr_skip_test("kretprobes unsupported here (CET shadow stack)");
	af_warm_up();
	af_kretprobe_init(&Rinit[0], af_ret, NULL, f_ret, 4);
	af_kretprobe_init(&Rinit[1], af_ret2, NULL, f_ret2, 5);
	Rn = 2;
	af_reset_structs();
	cr_assert_eq(register_kretprobes(RPall, Rn), 0);
	af_explore(&(struct af_path){ "unregister_kretprobes(2)", NULL,
				      af_call_unregister_kretprobes, af_check_kretprobes_gone,
				      AF_NEXT_KRET });
}

static void af_check_jprobe_gone(int ret)
{
	af_expect_all_gone(__LINE__, "after unregistering");
	af_expect_jprobe(__LINE__, false, "after unregistering");
	af_reset_structs();
	ret = register_jprobe(&J);
	AF_EXPECT(ret == 0, "registering the same jprobe again: %d", ret);
	af_expect_jprobe(__LINE__, true, "registered again");
	unregister_jprobe(&J);
}

static int af_call_unregister_jprobe(void)
{
	unregister_jprobe(&J);
	return 0;
}

AF_TEST(unregister_jprobe, 300)
{
	af_init_process();
	af_warm_up();
	af_reset_structs();
	cr_assert_eq(register_jprobe(&J), 0);
	af_explore(&(struct af_path){ "unregister_jprobe", NULL, af_call_unregister_jprobe,
				      af_check_jprobe_gone, 0 });
}

/* --------------------------------------------------------------------- */
/* Enable, disable, the switches, the optimizer, the listing             */
/* --------------------------------------------------------------------- */

/* Two optimizable probes: af_opt (a region of two instructions, needs a
 * proof) and af_opt1 (one instruction). */
static void af_set_probes_opt(void)
{
	af_kprobe_init(&Pinit[0], af_opt, NULL, f_opt, 9);
	af_kprobe_init(&Pinit[1], af_opt1, NULL, f_opt1, 0x10000);
	Pn = 2;
	af_reset_structs();
}

/* Each probe's code agrees with the listing: a jump when [OPTIMIZED], a
 * breakpoint over the original bytes otherwise (or the original code when
 * @armed is false). */
static void af_expect_code_state(int line, bool armed)
{
	for (int i = 0; i < Pn; i++) {
		const unsigned char *c = (const unsigned char *)Pall[i]->kp.addr;
		const char *l = af_line_of(c, 'k');
		bool opt = af_line_has(l, "[OPTIMIZED]");

		if (!l)
			af_bad(line, "probe %d is not listed:\n%s", i, af_now.list);
		if (!armed) {
			if (opt || !af_code_pristine(c, 8))
				af_bad(line, "disarmed probe %d: code 0x%02x, listed %s", i,
				       c[0], l);
		} else if (opt ? c[0] != af_arch_jump[0] :
			   (memcmp(c, af_arch_brk, af_arch_brk_len) ||
			    !af_code_pristine(c + af_arch_brk_len, 8 - af_arch_brk_len))) {
			af_bad(line, "probe %d: code 0x%02x, listed %s", i, c[0], l);
		}
	}
}

/* Once nothing fails, the optimizer optimizes them all. */
static void af_expect_optimizable(int line)
{
	int left = ukprobes_wait_optimizer();

	if (left)
		af_bad(line, "%d probes still waiting for the optimizer", left);
	for (int i = 0; i < Pn; i++)
		if (!af_line_has(af_line_of(Pall[i]->kp.addr, 'k'), "[OPTIMIZED]"))
			af_bad(line, "probe %d is not optimized any more:\n%s", i, af_now.list);
	af_expect_code_state(line, true);
	af_expect_fire(line, Pall, Pn, "optimized");
}

static void af_unregister_all(int line)
{
	unregister_kprobes(KPall, Pn);
	if (!af_code_pristine(af_t1, af_code_len()))
		af_bad(line, "unregistering left code behind");
}

static int af_call_disable(void)
{
	return disable_kprobe(&P1.kp);
}

static void af_check_disable(int ret)
{
	AF_EXPECT(ret == 0, "disable_kprobe returned %d", ret);
	AF_EXPECT(af_line_has(af_line_of(af_opt, 'k'), "[DISABLED]"), "not listed disabled:\n%s",
		  af_now.list);
	AF_EXPECT(af_code_pristine(af_opt, 16), "a disabled probe left code");
	af_expect_silent(__LINE__, Pall, 1, "disabled");
	af_expect_fire(__LINE__, Pall + 1, 1, "the other probe");
	AF_EXPECT(enable_kprobe(&P1.kp) == 0, "enable_kprobe failed");
	af_expect_fire(__LINE__, Pall, Pn, "enabled");
	af_expect_optimizable(__LINE__);
	af_unregister_all(__LINE__);
}

AF_TEST(disable_kprobe, 300)
{
	af_init_process();
	af_warm_up();
	af_set_probes_opt();
	af_register_parent(true);
	af_explore(&(struct af_path){ "disable_kprobe(optimized)", NULL, af_call_disable,
				      af_check_disable, 0 });
}

static int af_call_enable(void)
{
	return enable_kprobe(&P1.kp);
}

static void af_check_enable(int ret)
{
	AF_EXPECT(ret == 0, "enable_kprobe returned %d", ret);
	af_expect_code_state(__LINE__, true);
	af_expect_fire(__LINE__, Pall, Pn, "enabled");
	af_expect_optimizable(__LINE__);
	af_unregister_all(__LINE__);
}

AF_TEST(enable_kprobe, 300)
{
	af_init_process();
	af_warm_up();
	af_set_probes_opt();
	af_register_parent(true);
	cr_assert_eq(disable_kprobe(&P1.kp), 0);
	af_explore(&(struct af_path){ "enable_kprobe", NULL, af_call_enable, af_check_enable,
				      0 });
}

static int af_switch_arg;

static int af_call_set_optimization(void)
{
	return ukprobes_set_optimization(af_switch_arg);
}

static void af_check_set_optimization(int ret)
{
	AF_EXPECT(ret == 0, "ukprobes_set_optimization(%d) returned %d", af_switch_arg, ret);
	AF_EXPECT(ukprobes_optimization() == af_switch_arg, "the switch did not switch");
	af_expect_code_state(__LINE__, true);
	af_expect_fire(__LINE__, Pall, Pn, "after the switch");
	if (!af_switch_arg) {
		for (int i = 0; i < Pn; i++)
			AF_EXPECT(!af_line_has(af_line_of(Pall[i]->kp.addr, 'k'), "[OPTIMIZED]"),
				  "probe %d still optimized with the switch off", i);
		AF_EXPECT(ukprobes_set_optimization(1) == 0, "switching back on failed");
	}
	af_expect_optimizable(__LINE__);
	af_unregister_all(__LINE__);
}

AF_TEST(optimization_off, 300)
{
	af_init_process();
	af_warm_up();
	af_set_probes_opt();
	af_register_parent(true);
	af_switch_arg = 0;
	af_explore(&(struct af_path){ "ukprobes_set_optimization(0)", NULL,
				      af_call_set_optimization, af_check_set_optimization, 0 });
}

AF_TEST(optimization_on, 300)
{
	af_init_process();
	af_warm_up();
	ukprobes_set_optimization(0);
	af_set_probes_opt();
	af_register_parent(false);
	af_switch_arg = 1;
	af_explore(&(struct af_path){ "ukprobes_set_optimization(1)", NULL,
				      af_call_set_optimization, af_check_set_optimization, 0 });
}

static int af_call_wait_optimizer(void)
{
	return ukprobes_wait_optimizer();
}

static void af_check_optimizer(int ret)
{
	AF_EXPECT(ret >= 0, "ukprobes_wait_optimizer returned %d", ret);
	af_expect_code_state(__LINE__, true);
	af_expect_fire(__LINE__, Pall, Pn, "after the pass");
	af_expect_optimizable(__LINE__);
	af_unregister_all(__LINE__);
}

AF_TEST(optimizer, 300)
{
	af_init_process();
	af_warm_up();
	af_set_probes_opt();
	af_register_parent(false);
	af_explore(&(struct af_path){ "ukprobes_wait_optimizer", NULL, af_call_wait_optimizer,
				      af_check_optimizer, 0 });
}

static int af_call_set_enabled(void)
{
	return ukprobes_set_enabled(af_switch_arg);
}

static void af_check_set_enabled(int ret)
{
	AF_EXPECT(ret == 0, "ukprobes_set_enabled(%d) returned %d", af_switch_arg, ret);
	AF_EXPECT(ukprobes_enabled() == af_switch_arg, "the switch did not switch");
	if (!af_switch_arg) {
		af_expect_code_state(__LINE__, false);
		af_expect_silent(__LINE__, Pall, Pn, "all disarmed");
		AF_EXPECT(ukprobes_set_enabled(1) == 0, "switching back on failed");
	}
	af_expect_code_state(__LINE__, true);
	af_expect_fire(__LINE__, Pall, Pn, "armed");
	af_expect_optimizable(__LINE__);
	af_unregister_all(__LINE__);
}

AF_TEST(disarm_all, 300)
{
	af_init_process();
	af_warm_up();
	af_set_probes_opt();
	af_register_parent(true);
	af_switch_arg = 0;
	af_explore(&(struct af_path){ "ukprobes_set_enabled(0)", NULL, af_call_set_enabled,
				      af_check_set_enabled, 0 });
}

AF_TEST(arm_all, 300)
{
	af_init_process();
	af_warm_up();
	af_set_probes_opt();
	af_register_parent(true);
	cr_assert_eq(ukprobes_set_enabled(0), 0);
	af_switch_arg = 1;
	af_explore(&(struct af_path){ "ukprobes_set_enabled(1)", NULL, af_call_set_enabled,
				      af_check_set_enabled, 0 });
}

static FILE *af_list_out;
static char af_list_buf[8192];
static char af_bl_buf[1 << 16];

static void af_prepare_list(void)
{
	memset(af_list_buf, 0, sizeof(af_list_buf));
	af_list_out = fmemopen(af_list_buf, sizeof(af_list_buf) - 1, "w");
}

static int af_call_print_list(void)
{
	return ukprobes_print_list(af_list_out);
}

static void af_check_print_list(int ret)
{
	fclose(af_list_out);
	AF_EXPECT(ret == af_before.nlist, "ukprobes_print_list returned %d, not %d", ret,
		  af_before.nlist);
	AF_EXPECT(!strcmp(af_list_buf, af_before.list), "the listing differs:\n%s--- from:\n%s",
		  af_list_buf, af_before.list);
	AF_EXPECT(ret == 5, "%d probes listed", ret);
}

AF_TEST(print_list, 300)
{
	af_init_process();
	af_warm_up();
	af_set_probes_opt();
	af_kprobe_init(&Pinit[2], af_t2, NULL, f_t2, 2);
	Pinit[2].kp.flags = KPROBE_FLAG_DISABLED;
	Pn = 3;
	af_kretprobe_init(&Rinit[0], af_ret, NULL, f_ret, 4);
	Rn = 1;
	af_reset_structs();
	af_register_parent(false);
	cr_assert_eq(register_kretprobe(&R1.rp), 0);
	cr_assert_eq(register_jprobe(&J), 0);
	af_optimize_all();
	af_explore(&(struct af_path){ "ukprobes_print_list", af_prepare_list,
				      af_call_print_list, af_check_print_list, 0 });
}

static char af_bl_before[1 << 16];
static int af_bl_nbefore;

/* The listing as a child of this process writes it, nothing failing. */
static void af_blacklist_expected(void)
{
	int fds[2], st;
	size_t n = 0;
	ssize_t r;
	pid_t pid;

	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	if (!pid) {
		FILE *f = fdopen(fds[1], "w");
		int lines = ukprobes_print_blacklist(f);

		fclose(f);
		_exit(lines > 0 && lines < 250 ? lines : 255);
	}
	close(fds[1]);
	memset(af_bl_before, 0, sizeof(af_bl_before));
	while (n < sizeof(af_bl_before) - 1 &&
	       (r = read(fds[0], af_bl_before + n, sizeof(af_bl_before) - 1 - n)) > 0)
		n += (size_t)r;
	close(fds[0]);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 255, "the blacklist listing failed");
	af_bl_nbefore = WEXITSTATUS(st);
}

static void af_prepare_blacklist(void)
{
	memset(af_bl_buf, 0, sizeof(af_bl_buf));
	af_list_out = fmemopen(af_bl_buf, sizeof(af_bl_buf) - 1, "w");
}

static int af_call_print_blacklist(void)
{
	return ukprobes_print_blacklist(af_list_out);
}

static void af_check_print_blacklist(int ret)
{
	fclose(af_list_out);
	if (ret < 0) {
		AF_EXPECT(af_injected && af_errno_ok(ret), "returned %d", ret);
		AF_EXPECT(!af_bl_buf[0], "a failed listing wrote:\n%s", af_bl_buf);
		return;
	}
	AF_EXPECT(ret == af_bl_nbefore && !strcmp(af_bl_buf, af_bl_before),
		  "%d lines, %d before; the listing differs:\n%s--- from:\n%s", ret,
		  af_bl_nbefore, af_bl_buf, af_bl_before);
}

/* (first_registration_blacklisted covers reading the blacklists.) */
AF_TEST(print_blacklist, 300)
{
	af_init_process();
	af_warm_up();
	af_blacklist_expected();
	af_explore(&(struct af_path){ "ukprobes_print_blacklist", af_prepare_blacklist,
				      af_call_print_blacklist, af_check_print_blacklist, 0 });
}

/* --------------------------------------------------------------------- */
/* A thread inside a region: never optimized under it                    */
/* --------------------------------------------------------------------- */

/*
 * A thread T calls af_uffd() on a page that userfaultfd leaves missing:
 * past the probe (a breakpoint), it waits in the kernel on the region's
 * second instruction until the page is filled in.  While it waits, the
 * region must not get its jump.
 */
static int af_uffd_fd = -1;
static long *af_uffd_page;
static pthread_t af_uffd_thread;
static volatile long af_uffd_result;
static bool af_uffd_released;

static void *af_uffd_main(void *arg)
{
	af_uffd_result = f_uffd(af_uffd_page);
	return NULL;
}

/* False when userfaultfd is not available here. */
static bool af_uffd_setup(void)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg;

	af_uffd_fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	if (af_uffd_fd < 0)
		af_uffd_fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
	if (af_uffd_fd < 0 || ioctl(af_uffd_fd, UFFDIO_API, &api))
		return false;
	af_uffd_page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
	if (af_uffd_page == MAP_FAILED)
		return false;
	memset(&reg, 0, sizeof(reg));
	reg.range.start = (unsigned long)af_uffd_page;
	reg.range.len = 4096;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	return !ioctl(af_uffd_fd, UFFDIO_REGISTER, &reg);
}

static bool af_uffd_available(void)
{
	pid_t pid = fork();
	int st;

	if (!pid)
		_exit(af_uffd_setup() ? 0 : 77);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) && !WEXITSTATUS(st);
}

/* af_uffd() on an ordinary long: x + 12. */
static long af_uffd_call(long x)
{
	long v = x;

	return f_uffd(&v);
}

/* In the child: T goes in and waits. */
static void af_uffd_park(void)
{
	struct uffd_msg msg;

	AF_EXPECT(af_uffd_setup(), "userfaultfd: %s", strerror(errno));
	af_uffd_released = false;
	AF_EXPECT(!real_pthread_create(&af_uffd_thread, NULL, af_uffd_main, NULL),
		  "pthread_create");
	/* Its fault has arrived: it waits in the kernel, inside the region. */
	AF_EXPECT(read(af_uffd_fd, &msg, sizeof(msg)) == sizeof(msg), "uffd read");
	AF_EXPECT(msg.event == UFFD_EVENT_PAGEFAULT, "uffd event %d", msg.event);
}

/* Fill the page in (zeros): T goes on, and returns 12. */
static void af_uffd_release(void)
{
	struct uffdio_zeropage zp;

	if (af_uffd_released)
		return;
	memset(&zp, 0, sizeof(zp));
	zp.range.start = (unsigned long)af_uffd_page;
	zp.range.len = 4096;
	ioctl(af_uffd_fd, UFFDIO_ZEROPAGE, &zp);
	af_uffd_released = true;
}

static void af_check_uffd(int ret)
{
	const unsigned char *c = (const unsigned char *)af_uffd;

	if (!af_uffd_released) {
		const char *l = af_line_of(af_uffd, 'k');

		AF_EXPECT(!af_line_has(l, "[OPTIMIZED]") &&
			  !memcmp(c, af_arch_brk, af_arch_brk_len) &&
			  af_code_pristine(c + af_arch_brk_len, 10 - af_arch_brk_len),
			  "optimized while a thread is inside (code 0x%02x, listed %s)", c[0], l);
		af_uffd_release();
	}
	pthread_join(af_uffd_thread, NULL);
	AF_EXPECT(af_uffd_result == 12, "the thread inside got %ld", af_uffd_result);
	AF_EXPECT(P1.hits == 1, "%ld hits", P1.hits);
	af_expect_optimizable(__LINE__);
	af_unregister_all(__LINE__);
}

static int af_call_wait_optimizer_inside(void)
{
	/* The proof that comes first lets T go: it must see T leave. */
	af_at_opendir = af_uffd_release;
	return ukprobes_wait_optimizer();
}

AF_TEST(optimizer_thread_inside, 300)
{
	af_init_process();
	if (!af_uffd_available())
		cr_skip_test("userfaultfd is not available here");
	af_warm_up();
	af_kprobe_init(&Pinit[0], af_uffd, NULL, af_uffd_call, 12);
	Pn = 1;
	af_reset_structs();
	af_register_parent(false);
	af_explore(&(struct af_path){ "wait_optimizer(thread inside)", af_uffd_park,
				      af_call_wait_optimizer_inside, af_check_uffd,
				      AF_PREFIX_OPENDIR });
}

/* The files that tell where threads are cannot be opened: the proofs must
 * fail, not pass. */
static int af_call_wait_optimizer_blind(void)
{
	int ret;

	af_fail_task_files = true;
	af_task_file_failures = 0;
	ret = ukprobes_wait_optimizer();
	af_fail_task_files = false;
	AF_EXPECT(af_task_file_failures > 0, "no thread position was asked for");
	return ret;
}

AF_TEST(optimizer_blind, 300)
{
	af_init_process();
	if (!af_uffd_available())
		cr_skip_test("userfaultfd is not available here");
	af_warm_up();
	af_kprobe_init(&Pinit[0], af_uffd, NULL, af_uffd_call, 12);
	Pn = 1;
	af_reset_structs();
	af_register_parent(false);
	/* One run: nothing else fails. */
	af_explore(&(struct af_path){ "wait_optimizer(positions unreadable)", af_uffd_park,
				      af_call_wait_optimizer_blind, af_check_uffd, AF_ONCE });
}
