// SPDX-License-Identifier: MIT
/*
 * writer.c - the agent's writer thread: drains the per-thread rings, merges
 * the records by time and writes them as text (ftrace's format), JSON lines
 * or Chrome/Perfetto trace events.
 *
 * Draining is serialized by writer_mu; the thread does it every few
 * milliseconds (or when a ring crosses half full), and exec(), _exit() and
 * the agent's destructor do it in the calling thread before the records
 * would be lost.  Writes never raise SIGPIPE in the program: the signal is
 * blocked around them and a SIGPIPE they cause is taken back.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/stat.h>
#include <limits.h>
#include <unistd.h>

#include "agent.h"
#include "fetch.h"
#include "json.h"
#include "syms.h"

_Atomic unsigned int writer_wake;

static pthread_mutex_t writer_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_t writer_thread;
static bool writer_up;
static _Atomic int writer_stopping;
static _Atomic unsigned int writer_done;

#define OUTBUF_SIZE	(256 * 1024)
static char outbuf[OUTBUF_SIZE];
static size_t outlen;

/* Perfetto: the threads already named in this process. */
#define NAMED_MAX	1024
static int named_tids[NAMED_MAX];
static int nnamed;
static bool process_named;

/* ------------------------------------------------------------------------ */
/* Output                                                                    */
/* ------------------------------------------------------------------------ */

static void write_all(const char *p, size_t n)
{
	sigset_t pipe_set, old, pending;
	bool was_pending;
	int fd;

	if (!n)
		return;
	if (conf.out_fd < 0) {
		atomic_fetch_add(&shm->write_errors, 1);
		return;
	}
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	sigpending(&pending);
	was_pending = sigismember(&pending, SIGPIPE);
	/* Still ours?  The program may have closed it, even reused the
	 * number for a file of its own. */
	fd = agent_output_fd();
	while (n && fd >= 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			atomic_fetch_add(&shm->write_errors, 1);
			break;
		}
		p += w;
		n -= (size_t)w;
	}
	if (fd < 0)
		atomic_fetch_add(&shm->write_errors, 1);
	if (!was_pending) {
		struct timespec zero = { 0, 0 };

		sigpending(&pending);
		if (sigismember(&pending, SIGPIPE))
			sigtimedwait(&pipe_set, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/*
 * To a pipe (stderr through a pager, a terminal's pipe) that traced
 * children share with --follow-fork, writes of up to PIPE_BUF bytes are
 * atomic: cut the buffer at line ends so that lines never interleave.
 */
static int out_is_pipe = -1;

static void out_flush(void)
{
	size_t off = 0;

	if (out_is_pipe < 0) {
		struct stat st;

		out_is_pipe = fstat(conf.out_fd, &st) == 0 && S_ISFIFO(st.st_mode);
	}
	if (!out_is_pipe) {
		write_all(outbuf, outlen);
		outlen = 0;
		return;
	}
	while (off < outlen) {
		size_t n = outlen - off;

		if (n > PIPE_BUF) {
			size_t cut = PIPE_BUF;

			while (cut && outbuf[off + cut - 1] != '\n')
				cut--;
			n = cut ? cut : PIPE_BUF;
		}
		write_all(outbuf + off, n);
		off += n;
	}
	outlen = 0;
}

static void out_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out_printf(const char *fmt, ...)
{
	va_list ap;
	int n;

	if (OUTBUF_SIZE - outlen < 8192)
		out_flush();
	va_start(ap, fmt);
	n = vsnprintf(outbuf + outlen, OUTBUF_SIZE - outlen, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= OUTBUF_SIZE - outlen) {
		/* A huge line: write what we have, then it alone. */
		char *big = malloc((size_t)n + 1);

		out_flush();
		if (!big)
			return;
		va_start(ap, fmt);
		vsnprintf(big, (size_t)n + 1, fmt, ap);
		va_end(ap);
		write_all(big, (size_t)n);
		free(big);
		return;
	}
	outlen += (size_t)n;
}

static void out_char(char c)
{
	if (outlen == OUTBUF_SIZE)
		out_flush();
	outbuf[outlen++] = c;
}

static void out_bytes(const char *s, size_t n, void *arg)
{
	(void)arg;
	while (n) {
		size_t room;

		if (outlen == OUTBUF_SIZE)
			out_flush();
		room = OUTBUF_SIZE - outlen;
		if (room > n)
			room = n;
		memcpy(outbuf + outlen, s, room);
		outlen += room;
		s += room;
		n -= room;
	}
}

/* A JSON string body (no quotes): valid JSON whatever the program's bytes
 * (json.h). */
static void out_json_str(const char *s, size_t n)
{
	json_escape(s, n, out_bytes, NULL);
}

static void out_json_cstr(const char *s)
{
	out_json_str(s, strlen(s));
}

/* ------------------------------------------------------------------------ */
/* Formatting one record                                                     */
/* ------------------------------------------------------------------------ */

/*
 * Symbolized addresses, direct-mapped: probe addresses and call sites
 * repeat, and a lookup takes the object list's lock and two searches.
 * Emptied when objects are loaded or unloaded (the counters of
 * dl_iterate_phdr change); writer_mu held.
 */
#define SYMCACHE_SIZE	4096
static struct symcache_ent {
	uintptr_t addr;
	bool with_off;
	char *text;
} symcache[SYMCACHE_SIZE];
static unsigned long long symcache_gen;

static int gen_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(unsigned long long *)arg = info->dlpi_adds * 1000003ull + info->dlpi_subs;
	return 1;
}

static void symcache_check(void)
{
	unsigned long long g = 0;

	dl_iterate_phdr(gen_cb, &g);
	if (g == symcache_gen)
		return;
	for (int i = 0; i < SYMCACHE_SIZE; i++) {
		free(symcache[i].text);
		symcache[i].text = NULL;
	}
	symcache_gen = g;
}

static const char *symbolize(uintptr_t addr, bool with_off)
{
	struct symcache_ent *e = &symcache[((addr >> 2) ^ (addr >> 13) ^ with_off) % SYMCACHE_SIZE];
	char buf[512];

	if (e->text && e->addr == addr && e->with_off == with_off)
		return e->text;
	lobjs_symbolize(addr, with_off, buf, sizeof(buf));
	free(e->text);
	e->text = strdup(buf);
	e->addr = addr;
	e->with_off = with_off;
	return e->text ? e->text : "?";
}

struct arg_view {
	int32_t used;
	const char *data;
};

static int rec_args(const struct rec *r, struct arg_view *av, int max)
{
	const char *p = (const char *)(r + 1) + 16;
	const char *end = (const char *)r + r->size;
	int n = 0;

	for (int i = 0; i < r->nargs && i < max; i++) {
		if (p + 8 > end)
			break;
		av[n].used = *(const int32_t *)p;
		av[n].data = p + 8;
		p += 8 + REC_ALIGN(av[n].used > 0 ? (uint32_t)av[n].used : 0u);
		n++;
	}
	return n;
}

static void format_arg(const struct pe_arg *a, const struct arg_view *v, char *out, size_t len)
{
	if (v->used < 0 && v->used != -EFAULT) {
		snprintf(out, len, "(error %d)", -v->used);
		return;
	}
	fetch_format(a, v->data, v->used, out, len);
}

static bool numeric_type(const struct pe_arg *a)
{
	if (a->array_len)
		return false;
	switch (a->type) {
	case PE_U8: case PE_U16: case PE_U32: case PE_U64:
	case PE_S8: case PE_S16: case PE_S32: case PE_S64:
	case PE_BITFIELD:
		return true;
	default:
		return false;
	}
}

static bool string_type(const struct pe_arg *a)
{
	return !a->array_len && (a->type == PE_STRING || a->type == PE_USTRING);
}

static void json_args(const struct tev *t, const struct arg_view *av, int nav)
{
	char val[4096];

	out_char('{');
	for (int i = 0; i < nav; i++) {
		const struct pe_arg *a = &t->ev.args[i];

		if (i)
			out_char(',');
		out_char('"');
		out_json_cstr(a->name);
		out_printf("\":");
		if (av[i].used < 0) {
			out_printf("null");
		} else if (string_type(a)) {
			size_t n = strnlen(av[i].data, (size_t)av[i].used);

			out_char('"');
			out_json_str(av[i].data, n);
			out_char('"');
		} else {
			size_t n;

			format_arg(a, &av[i], val, sizeof(val));
			n = strlen(val);
			/* A number, or a quoted "(fault)". */
			if (numeric_type(a) && n && (val[0] == '-' || isdigit((unsigned char)val[0]))) {
				out_printf("%s", val);
			} else {
				if (n >= 2 && val[0] == '"' && val[n - 1] == '"') {
					out_char('"');
					out_json_str(val + 1, n - 2);
					out_char('"');
				} else {
					out_char('"');
					out_json_str(val, n);
					out_char('"');
				}
			}
		}
	}
	out_char('}');
}

static void perfetto_names(int pid, int tid, const char *comm)
{
	if (!process_named) {
		char exe[256] = "";
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

		exe[n > 0 ? n : 0] = '\0';
		out_printf("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
			   "\"args\":{\"name\":\"", pid, pid);
		out_json_cstr(strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe);
		out_printf("\"}},\n");
		process_named = true;
	}
	for (int i = 0; i < nnamed; i++)
		if (named_tids[i] == tid)
			return;
	if (nnamed < NAMED_MAX)
		named_tids[nnamed++] = tid;
	out_printf("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
		   "\"args\":{\"name\":\"", pid, tid);
	out_json_cstr(comm);
	out_printf("\"}},\n");
}

static void format_record(const struct rec *r)
{
	const struct tev *t;
	struct arg_view av[PE_MAX_ARGS];
	char comm[17], loc[512], func[512], val[4096];
	unsigned long long sec, usec;
	int nav, pid = getpid();

	if (r->event >= (unsigned int)ntevs)
		return;
	t = &tevs[r->event];
	memcpy(comm, (const char *)(r + 1), 16);
	comm[16] = '\0';
	if (!comm[0])
		strcpy(comm, "<...>");
	nav = rec_args(r, av, PE_MAX_ARGS);
	sec = r->ts / 1000000000ull;
	usec = (r->ts % 1000000000ull) / 1000ull;
	if (r->kind == REC_RETURN) {
		snprintf(loc, sizeof(loc), "%s", symbolize((uintptr_t)r->ret, true));
		snprintf(func, sizeof(func), "%s", symbolize((uintptr_t)r->ip, false));
	} else {
		snprintf(loc, sizeof(loc), "%s", symbolize((uintptr_t)r->ip, true));
		func[0] = '\0';
	}

	switch (conf.fmt) {
	case FMT_TEXT:
		if (r->kind == REC_RETURN)
			out_printf("%16s-%-7d [%03d] %5llu.%06llu: %s: (%s <- %s)",
				   comm, r->tid, r->cpu, sec, usec, t->ev.event, loc, func);
		else
			out_printf("%16s-%-7d [%03d] %5llu.%06llu: %s: (%s)",
				   comm, r->tid, r->cpu, sec, usec, t->ev.event, loc);
		for (int i = 0; i < nav; i++) {
			format_arg(&t->ev.args[i], &av[i], val, sizeof(val));
			out_printf(" %s=%s", t->ev.args[i].name, val);
		}
		out_char('\n');
		break;
	case FMT_JSON:
		out_printf("{\"timestamp\":%llu.%06llu,\"ts_ns\":%llu,\"comm\":\"",
			   sec, usec, (unsigned long long)r->ts);
		out_json_cstr(comm);
		out_printf("\",\"pid\":%d,\"tid\":%d,\"cpu\":%d,\"group\":\"", pid, r->tid, r->cpu);
		out_json_cstr(t->ev.group);
		out_printf("\",\"event\":\"");
		out_json_cstr(t->ev.event);
		out_printf("\",\"probe\":\"%s\",", r->kind == REC_RETURN ? "return" : "entry");
		if (r->kind == REC_RETURN) {
			out_printf("\"function\":\"");
			out_json_cstr(func);
			out_printf("\",\"caller\":\"");
			out_json_cstr(loc);
			out_printf("\",\"address\":\"0x%llx\",\"return_address\":\"0x%llx\",",
				   (unsigned long long)r->ip, (unsigned long long)r->ret);
			if (r->entry_ts && r->ts >= r->entry_ts)
				out_printf("\"duration_ns\":%llu,",
					   (unsigned long long)(r->ts - r->entry_ts));
		} else {
			out_printf("\"location\":\"");
			out_json_cstr(loc);
			out_printf("\",\"address\":\"0x%llx\",", (unsigned long long)r->ip);
		}
		out_printf("\"args\":");
		json_args(t, av, nav);
		out_printf("}\n");
		break;
	case FMT_PERFETTO:
		perfetto_names(pid, r->tid, comm);
		if (r->kind == REC_RETURN && r->entry_ts && r->ts >= r->entry_ts) {
			uint64_t d = r->ts - r->entry_ts;

			out_printf("{\"name\":\"");
			out_json_cstr(func);
			out_printf("\",\"cat\":\"");
			out_json_cstr(t->ev.group);
			out_printf("\",\"ph\":\"X\",\"ts\":%llu.%03llu,\"dur\":%llu.%03llu,"
				   "\"pid\":%d,\"tid\":%d,\"args\":{\"event\":\"",
				   (unsigned long long)(r->entry_ts / 1000),
				   (unsigned long long)(r->entry_ts % 1000),
				   (unsigned long long)(d / 1000), (unsigned long long)(d % 1000),
				   pid, r->tid);
			out_json_cstr(t->ev.event);
			out_printf("\",\"caller\":\"");
			out_json_cstr(loc);
			out_printf("\",\"values\":");
		} else {
			out_printf("{\"name\":\"");
			out_json_cstr(t->ev.event);
			out_printf("\",\"cat\":\"");
			out_json_cstr(t->ev.group);
			out_printf("\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%llu.%03llu,"
				   "\"pid\":%d,\"tid\":%d,\"args\":{\"location\":\"",
				   (unsigned long long)(r->ts / 1000),
				   (unsigned long long)(r->ts % 1000), pid, r->tid);
			out_json_cstr(r->kind == REC_RETURN ? func : loc);
			out_printf("\",\"values\":");
		}
		json_args(t, av, nav);
		out_printf("}},\n");
		break;
	}
}

/* ------------------------------------------------------------------------ */
/* Draining                                                                  */
/* ------------------------------------------------------------------------ */

static const struct rec *ring_peek(struct ring *r)
{
	while (r->cursor < r->end) {
		const struct rec *rec = (const struct rec *)(r->data + (r->cursor & (r->size - 1)));

		if (rec->event != REC_PAD)
			return rec;
		r->cursor += rec->size;
	}
	return NULL;
}

static void recycle_dead_rings(void)
{
	pid_t pid = getpid();

	for (int i = 0; i < nrings; i++) {
		struct ring *r = &rings[i];
		int tid = atomic_load(&r->tid);

		if (atomic_load(&r->state) != RING_OWNED || !tid)
			continue;
		if (atomic_load(&r->head) != atomic_load(&r->tail))
			continue;
		if (syscall(SYS_tgkill, pid, tid, 0) < 0 && errno == ESRCH) {
			atomic_store(&r->tid, 0);
			atomic_store(&r->state, RING_FREE);
			atomic_fetch_sub(&rings_owned, 1);
		}
	}
}

/* Writer_mu held.  Returns the number of rings threads own. */
static int drain_locked(void)
{
	static int drain_start;
	struct ring *active[64];
	int nactive, owned = 0;

	agent_enter();
	symcache_check();
	/* Rounds of up to 64 rings with data (most programs have few). */
	for (int scanned = 0; scanned < nrings;) {
		/* Up to 64 rings with data at a time, starting where the last
		 * round stopped: every ring gets its turn. */
		nactive = 0;
		for (; scanned < nrings && nactive < 64; scanned++) {
			struct ring *r = &rings[(drain_start + scanned) % nrings];
			uint64_t h = atomic_load_explicit(&r->head, memory_order_acquire);

			if (atomic_load_explicit(&r->state, memory_order_relaxed) == RING_OWNED)
				owned++;
			r->cursor = atomic_load_explicit(&r->tail, memory_order_relaxed);
			r->end = h;
			if (r->cursor != h)
				active[nactive++] = r;
		}
		if (!nactive)
			break;
		for (;;) {
			const struct rec *best = NULL;
			struct ring *br = NULL;

			for (int i = 0; i < nactive; i++) {
				const struct rec *rec = ring_peek(active[i]);

				if (rec && (!best || rec->ts < best->ts)) {
					best = rec;
					br = active[i];
				}
			}
			if (!best)
				break;
			format_record(best);
			br->cursor += best->size;
		}
		for (int i = 0; i < nactive; i++)
			atomic_store_explicit(&active[i]->tail, active[i]->cursor, memory_order_release);
	}
	drain_start = (drain_start + 1) % (nrings ? nrings : 1);
	out_flush();
	agent_leave();
	return owned;
}

void writer_flush(void)
{
	if (!rings)
		return;
	agent_enter();
	pthread_mutex_lock(&writer_mu);
	drain_locked();
	pthread_mutex_unlock(&writer_mu);
	agent_leave();
}

static void *writer_main(void *arg)
{
	unsigned int rounds = 0;

	(void)arg;
	agent_enter();	/* for good: nothing this thread does is traced */
	while (!atomic_load(&writer_stopping)) {
		unsigned int w = atomic_load(&writer_wake);
		struct timespec ts = { 0, (long)conf.drain_ms * 1000000L };

		if (conf.writer_sleep_ms) {
			/* Tests: a writer that cannot keep up. */
			struct timespec s = { conf.writer_sleep_ms / 1000,
					      (long)(conf.writer_sleep_ms % 1000) * 1000000L };

			nanosleep(&s, NULL);
		} else {
			syscall(SYS_futex, (unsigned int *)&writer_wake, FUTEX_WAIT_PRIVATE,
				w, &ts, NULL, 0);
		}
		if (atomic_load(&writer_stopping))
			break;
		pthread_mutex_lock(&writer_mu);
		/* Rings of threads that exited go back to the pool: now and
		 * then, or at once when the pool runs low. */
		drain_locked();
		if (atomic_load(&rings_owned) > nrings / 2 || ++rounds % 64 == 0)
			recycle_dead_rings();
		pthread_mutex_unlock(&writer_mu);
	}
	/* The final drain. */
	pthread_mutex_lock(&writer_mu);
	drain_locked();
	pthread_mutex_unlock(&writer_mu);
	agent_futex_wake(&writer_done);
	return NULL;
}

int writer_start(void)
{
	sigset_t all, old;
	int err;

	/* The program's signals are not for this thread; the synchronous
	 * ones (breakpoints, faults) must stay deliverable. */
	sigfillset(&all);
	sigdelset(&all, SIGTRAP);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGILL);
	sigdelset(&all, SIGFPE);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	atomic_store(&writer_stopping, 0);
	atomic_store(&writer_done, 0);
	err = pthread_create(&writer_thread, NULL, writer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return -err;
	pthread_setname_np(writer_thread, "ukprobe-writer");
	writer_up = true;
	return 0;
}

bool writer_running(void)
{
	return writer_up;
}

/*
 * The writer drains what is left and ends.  Waits at most timeout_ms: the
 * caller may be _exit() called from a signal handler that interrupted a
 * thread holding a lock the writer needs (malloc's); then the records left
 * are lost rather than the process hung.  flush_here: drain again in the
 * calling thread afterwards (not from a signal handler).
 */
void writer_stop(unsigned int timeout_ms, bool flush_here)
{
	if (writer_up) {
		unsigned int waited = 0;

		atomic_store(&writer_stopping, 1);
		agent_futex_wake(&writer_wake);
		while (!atomic_load(&writer_done) && waited < timeout_ms) {
			struct timespec ts = { 0, 10 * 1000000L };
			unsigned int d = atomic_load(&writer_done);

			if (d)
				break;
			syscall(SYS_futex, (unsigned int *)&writer_done, FUTEX_WAIT_PRIVATE, d,
				&ts, NULL, 0);
			waited += 10;
		}
		if (!atomic_load(&writer_done))
			return;
		pthread_join(writer_thread, NULL);
		writer_up = false;
	}
	if (flush_here)
		writer_flush();
}

void writer_lock_for_fork(void)
{
	pthread_mutex_lock(&writer_mu);
}

void writer_unlock_after_fork(bool child)
{
	if (child) {
		/* The thread is gone in the child; the lock is ours. */
		writer_up = false;
		nnamed = 0;
		process_named = false;
		outlen = 0;
	}
	pthread_mutex_unlock(&writer_mu);
}
