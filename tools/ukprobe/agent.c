// SPDX-License-Identifier: MIT
/*
 * agent.c - libukprobe-agent.so, which `ukprobe trace` preloads into the
 * program it starts.
 *
 * Its constructor runs before the program's main: it reads the definitions
 * the command passed in the environment, gives the program back the
 * environment the user gave it (agent_env.c), checks and registers the
 * probes with libukprobes (point_check.c: what the command could not check
 * in the files before the program ran) and starts the writer thread.
 * Definitions on objects not loaded yet are placed when the run-time linker
 * loads them: the audit module (audit.c, LD_AUDIT) calls
 * ukprobe_agent_objects_changed() each time the set of loaded objects is
 * consistent again after a dlopen(), before the new object's constructors
 * run.
 *
 * Processes: fork(), the exec family, posix_spawn(), system(), popen() and
 * _exit() are interposed.
 *  - exec: the records still in the buffers are written first; the new
 *    image is traced again (same process; like strace without -f).
 *  - fork: with --follow-fork the child keeps tracing with its own writer
 *    thread and buffers, and the programs it execs are traced; without it
 *    the child disarms every probe and nothing it execs gets the agent.
 *  - posix_spawn/system/popen start new processes: traced only with
 *    --follow-fork.
 *  - the destructor (and _exit) writes what is left; totals live in the
 *    shared counters, which the command prints.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"
#include "agent_env.h"
#include "fetch.h"
#include "point_check.h"
#include "syms.h"

#define AGENT_API __attribute__((visibility("default")))

extern char **environ;

struct agent_conf conf = { .fmt = FMT_TEXT, .out_fd = -1, .shm_fd = -1, .drain_ms = 10 };
struct tev *tevs;
int ntevs;
struct uks *shm;
struct ring *rings;
int nrings;
_Atomic int rings_owned;
_Atomic int tracing;
_Atomic int recording;

/* Read by the audit module (through the main program's scope). */
AGENT_API int ukprobe_agent_ready;
AGENT_API void ukprobe_agent_objects_changed(void);
AGENT_API void ukprobe_agent_object_closing(const char *name, uintptr_t base);

enum { AGENT_OFF, AGENT_TRACING, AGENT_CHILD_OFF };
static int agent_state = AGENT_OFF;
static pid_t agent_pid;

/* For the environment of traced children: NAME=value strings. */
static char *env_conf, *env_defs, *env_hists;
static char *env_conf_next;	/* env_conf for the next image */
static char *agent_path, *audit_path, *preload_path;
static int tool_pid, tool_out_fd, tool_shm_fd;
static unsigned long tls_surplus;
static unsigned long long out_dev, out_ino, shm_dev, shm_ino;

/* nmissed already added to the shared counters (fork children inherit
 * the parent's counts). */
static unsigned long *missed_base;

#define DEFAULT_RINGS	1024

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */
/* ------------------------------------------------------------------------ */

void agent_note_error(const char *fmt, ...)
{
	unsigned int expect = 0;
	va_list ap;

	if (!shm)
		return;
	atomic_fetch_add(&shm->agent_errors, 1);
	if (!atomic_compare_exchange_strong(&shm->agent_error_set, &expect, 1))
		return;
	va_start(ap, fmt);
	vsnprintf(shm->agent_error, sizeof(shm->agent_error), fmt, ap);
	va_end(ap);
}

/* The first failure of t in this run, for the command to print: code and
 * pos (a PE_ERR_* code and where its caret goes; 0, 0 for a plain line)
 * and the text. */
static void event_error(struct tev *t, int code, int pos, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void event_error(struct tev *t, int code, int pos, const char *fmt, ...)
{
	struct uks_event *se = &shm->ev[t->id];
	unsigned int expect = 0;
	va_list ap;

	atomic_fetch_add(&se->failed, 1);
	if (!atomic_compare_exchange_strong(&se->error_set, &expect, 1))
		return;
	se->err_code = code;
	se->err_pos = pos;
	va_start(ap, fmt);
	vsnprintf(se->error, sizeof(se->error), fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------------------ */
/* Configuration from the environment                                        */
/* ------------------------------------------------------------------------ */

static char *env_copy(const char *name)
{
	const char *v = agent_env_get(environ, name);
	char *s;

	if (!v)
		return NULL;
	if (asprintf(&s, "%s=%s", name, v) < 0)
		return NULL;
	return s;
}

static void parse_conf(const char *s)
{
	char *copy = strdup(s), *save = NULL;

	for (char *kv = copy ? strtok_r(copy, "\n", &save) : NULL; kv;
	     kv = strtok_r(NULL, "\n", &save)) {
		char *v = strchr(kv, '=');

		if (!v)
			continue;
		*v++ = '\0';
		if (!strcmp(kv, "out"))
			conf.out_fd = atoi(v);
		else if (!strcmp(kv, "shm"))
			conf.shm_fd = atoi(v);
		else if (!strcmp(kv, "fmt"))
			conf.fmt = !strcmp(v, "json") ? FMT_JSON :
				   !strcmp(v, "perfetto") ? FMT_PERFETTO : FMT_TEXT;
		else if (!strcmp(kv, "buf"))
			conf.bufsize = strtoull(v, NULL, 0);
		else if (!strcmp(kv, "follow"))
			conf.follow = atoi(v);
		else if (!strcmp(kv, "events"))
			conf.events = atoi(v);
		else if (!strcmp(kv, "latency"))
			conf.latency = atoi(v);
		else if (!strcmp(kv, "initial"))
			conf.initial = atoi(v);
		else if (!strcmp(kv, "drain"))
			conf.drain_ms = (unsigned int)atoi(v);
		else if (!strcmp(kv, "wsleep"))
			conf.writer_sleep_ms = (unsigned int)atoi(v);
		else if (!strcmp(kv, "outpath"))
			conf.out_path = strdup(v);
		else if (!strcmp(kv, "agent"))
			agent_path = strdup(v);
		else if (!strcmp(kv, "preload"))
			preload_path = strdup(v);
		else if (!strcmp(kv, "audit"))
			audit_path = strdup(v);
		else if (!strcmp(kv, "toolpid"))
			tool_pid = atoi(v);
		else if (!strcmp(kv, "toolout"))
			tool_out_fd = atoi(v);
		else if (!strcmp(kv, "toolshm"))
			tool_shm_fd = atoi(v);
		else if (!strcmp(kv, "tls"))
			tls_surplus = strtoul(v, NULL, 0);
		else if (!strcmp(kv, "outid"))
			sscanf(v, "%llu:%llu", &out_dev, &out_ino);
		else if (!strcmp(kv, "shmid"))
			sscanf(v, "%llu:%llu", &shm_dev, &shm_ino);
	}
	free(copy);
	if (!conf.drain_ms)
		conf.drain_ms = 10;
}

static bool fd_is(int fd, unsigned long long dev, unsigned long long ino)
{
	struct stat st;

	return fd >= 0 && fstat(fd, &st) == 0 && (unsigned long long)st.st_dev == dev &&
	       (unsigned long long)st.st_ino == ino;
}

/*
 * The descriptor the command gave us, checked by device and inode (the
 * program may have closed it, or reused its number); else a new one through
 * the command's /proc/PID/fd, moved out of the program's way.
 */
static int find_fd(int fd, unsigned long long dev, unsigned long long ino,
		   int tool_fd, int flags)
{
	char p[64];
	int nfd, hi;

	if (fd_is(fd, dev, ino))
		return fd;
	if (!tool_pid)
		return -1;
	snprintf(p, sizeof(p), "/proc/%d/fd/%d", tool_pid, tool_fd);
	nfd = open(p, flags | O_CLOEXEC);
	if (nfd < 0)
		return -1;
	if (!fd_is(nfd, dev, ino)) {
		close(nfd);
		return -1;
	}
	hi = fcntl(nfd, F_DUPFD_CLOEXEC, 700);
	if (hi >= 0) {
		close(nfd);
		nfd = hi;
	}
	return nfd;
}

/*
 * The output descriptor, if it is still ours; if the program closed it (or
 * reused its number), a new one through the command's /proc/PID/fd or the
 * -o path, at a new number.  -1 if there is none.
 */
int agent_output_fd(void)
{
	int fd;

	if (fd_is(conf.out_fd, out_dev, out_ino))
		return conf.out_fd;
	fd = find_fd(-1, out_dev, out_ino, tool_out_fd, O_WRONLY | O_APPEND);
	if (fd < 0 && conf.out_path) {
		int nfd = open(conf.out_path, O_WRONLY | O_APPEND | O_CLOEXEC);

		if (nfd >= 0 && fd_is(nfd, out_dev, out_ino)) {
			fd = fcntl(nfd, F_DUPFD_CLOEXEC, 700);
			if (fd >= 0)
				close(nfd);
			else
				fd = nfd;
		} else if (nfd >= 0) {
			close(nfd);
		}
	}
	if (fd >= 0 && conf.follow)
		fcntl(fd, F_SETFD, 0);
	conf.out_fd = fd;
	return fd;
}

/* ------------------------------------------------------------------------ */
/* Definitions                                                               */
/* ------------------------------------------------------------------------ */

static int symbolize_cb(unsigned long addr, char *out, size_t len)
{
	return lobjs_symbolize((uintptr_t)addr, true, out, len);
}

static int resolve_cb(const char *obj, const char *sym, unsigned long *addr)
{
	return lobjs_resolve(obj, sym, addr);
}

static bool arg_matches(const struct tev *t, const struct pe_arg *a, const char *want)
{
	const char *dot = strpbrk(want, ".:");

	if (!dot)
		return !strcmp(a->name, want);
	return strlen(t->ev.event) == (size_t)(dot - want) &&
	       !strncmp(t->ev.event, want, (size_t)(dot - want)) && !strcmp(a->name, dot + 1);
}

static int setup_events(const char *defs, const char *hists)
{
	char *copy = strdup(defs), *save = NULL;
	char *hnames[UKS_MAX_HISTS] = { 0 };
	int nh = 0;

	if (!copy)
		return -ENOMEM;
	if (hists && *hists) {
		char *hc = strdup(hists), *hs = NULL;

		for (char *h = hc ? strtok_r(hc, "\n", &hs) : NULL; h && nh < UKS_MAX_HISTS;
		     h = strtok_r(NULL, "\n", &hs))
			hnames[nh++] = strdup(h);
		free(hc);
	}
	tevs = calloc(UKS_MAX_EVENTS, sizeof(*tevs));
	if (!tevs) {
		free(copy);
		return -ENOMEM;
	}
	/* @SYM arguments are resolved when the probe is placed. */
	pe_set_resolvers(NULL, symbolize_cb);
	for (char *d = strtok_r(copy, "\n", &save); d && ntevs < UKS_MAX_EVENTS;
	     d = strtok_r(NULL, "\n", &save)) {
		struct tev *t = &tevs[ntevs];
		struct pe_error err;
		size_t max = sizeof(struct rec) + 16;
		int e;

		t->id = ntevs++;
		t->def = strdup(d);
		e = pe_parse(d, &t->ev, &err);
		if (e) {
			t->state = TEV_FAILED;
			event_error(t, err.code, err.pos, "%s", "");
			continue;
		}
		t->is_ret = t->ev.kind == PE_RETURN;
		for (int i = 0; i < t->ev.nargs; i++)
			max += 8 + REC_ALIGN(fetch_arg_size(&t->ev.args[i]));
		if (max > conf.bufsize / 2)
			max = conf.bufsize / 2;
		t->max_rec = (uint32_t)REC_ALIGN(max);
		for (int h = 0; h < UKS_MAX_HISTS; h++) {
			t->hist_arg[h] = -1;
			if (h >= nh)
				continue;
			for (int i = 0; i < t->ev.nargs; i++) {
				if (arg_matches(t, &t->ev.args[i], hnames[h])) {
					t->hist_arg[h] = (int8_t)i;
					t->any_hist = true;
					break;
				}
			}
		}
	}
	pe_set_resolvers(resolve_cb, symbolize_cb);
	for (int h = 0; h < nh; h++)
		free(hnames[h]);
	free(copy);
	missed_base = calloc((size_t)ntevs + 1, sizeof(*missed_base));
	return 0;
}

static unsigned long tev_missed(const struct tev *t)
{
	if (t->state != TEV_PLACED)
		return 0;
	if (t->is_ret)
		return (unsigned long)t->u.rp.nmissed + t->u.rp.kp.nmissed;
	return t->u.kp.nmissed;
}

/* Add the nmissed counts since the last call to the shared counters. */
static void account_missed(void)
{
	for (int i = 0; i < ntevs && missed_base; i++) {
		unsigned long m = tev_missed(&tevs[i]);

		if (m > missed_base[i])
			atomic_fetch_add(&shm->ev[i].missed, m - missed_base[i]);
		missed_base[i] = m;
	}
}

static const char *errname(int e)
{
	switch (e) {
	case EINVAL: return "EINVAL";
	case ENOENT: return "ENOENT";
	case EILSEQ: return "EILSEQ";
	case ENOMEM: return "ENOMEM";
	case EBUSY: return "EBUSY";
	case ERANGE: return "ERANGE";
	case EEXIST: return "EEXIST";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	default: return "?";
	}
}

/*
 * The checks `ukprobe trace` made in the files before the program ran
 * (point_check.h), for what it could not see then: objects loaded later,
 * bare symbols found in them, absolute addresses.  0, or -EINVAL with the
 * error noted.
 */
static int check_in_file(struct tev *t)
{
	struct pe_event *ev = &t->ev;
	const struct symfile *sf;
	struct point_info pi;
	struct pe_error perr;
	uintptr_t bias;
	int err;

	if (ev->symbol[0] || ev->addr_is_file_offset)
		err = lobjs_symfile(ev->object, ev->symbol, &sf, &bias);
	else
		err = lobjs_symfile_at(ev->address, &sf, &bias);
	if (err)
		return 0;	/* no file (the vDSO, generated code): the library's checks */
	if (ev->symbol[0] || ev->addr_is_file_offset)
		err = point_check_event(ev, sf, &pi, &perr);
	else
		err = point_check_vaddr(ev, sf, ev->address - bias, &pi, &perr);
	if (err) {
		event_error(t, perr.code, perr.pos, "%s", pi.why);
		return -EINVAL;
	}
	return 0;
}

/*
 * Register t if its object is loaded.  0 placed, -EAGAIN not yet (object not
 * loaded, or a symbol not found anywhere yet), other: failed for good.
 */
static int place(struct tev *t)
{
	struct pe_event *ev = &t->ev;
	struct kprobe *kp = t->is_ret ? &t->u.rp.kp : &t->u.kp;
	struct pe_error perr;
	uintptr_t addr = 0;
	int err;

	if (ev->object[0] && !lobjs_loaded(ev->object, NULL, 0))
		return -EAGAIN;
	memset(&perr, 0, sizeof(perr));
	err = pe_event_resolve(ev, &perr);
	if (err && ev->symbol[0] && perr.code == PE_ERR_BAD_PROBE_ADDR &&
	    perr.pos == ev->point_pos) {
		if (!ev->object[0])
			return -EAGAIN;	/* may come with an object loaded later */
		/* The object is loaded and has no such symbol. */
		event_error(t, perr.code, perr.pos, "%s has no symbol %s", ev->object, ev->symbol);
		return -ENOENT;
	}
	if (err == -ENOENT)
		return -EAGAIN;	/* an @SYM that may come with a later object */
	if (err) {
		event_error(t, perr.code, perr.pos, "%s", "");
		return err;
	}
	err = check_in_file(t);
	if (err)
		return err;
	memset(&t->u, 0, sizeof(t->u));
	if (ev->addr_is_file_offset) {
		if (lobjs_offset_addr(ev->object, ev->address, &addr)) {
			event_error(t, PE_ERR_BAD_FILE_OFFS, ev->point_pos + (int)strlen(ev->object) + 1,
				    "file offset 0x%lx is in no segment of %s", ev->address, ev->object);
			return -EINVAL;
		}
		kp->addr = (kprobe_opcode_t *)addr;
	} else if (!ev->symbol[0]) {
		kp->addr = (kprobe_opcode_t *)ev->address;
	} else {
		if (ev->object[0])
			snprintf(t->symspec, sizeof(t->symspec), "%s:%s", ev->object, ev->symbol);
		else
			snprintf(t->symspec, sizeof(t->symspec), "%s", ev->symbol);
		kp->symbol_name = t->symspec;
		kp->offset = (unsigned int)ev->offset;
	}
	/* handler.c and fetch.c are built -mgeneral-regs-only: the probes
	 * take the optimized fast path that saves no vector state. */
	kp->flags |= KPROBE_FLAG_GPR_ONLY;
	if (t->is_ret) {
		t->u.rp.handler = agent_kretprobe_ret;
		t->u.rp.entry_handler = agent_kretprobe_entry;
		t->u.rp.data_size = 8 + (size_t)ev->nentry_args * sizeof(unsigned long);
		t->u.rp.maxactive = ev->maxactive;
		err = register_kretprobe(&t->u.rp);
	} else {
		kp->pre_handler = agent_kprobe_pre;
		err = register_kprobe(kp);
	}
	if (err == -ENOENT && !ev->object[0] && ev->symbol[0])
		return -EAGAIN;	/* maybe in an object loaded later */
	if (err) {
		/* As the kernel's trace_kprobe reports register_kprobe()'s
		 * refusals. */
		event_error(t, err == -EILSEQ ? PE_ERR_BAD_INSN_BNDRY :
			    err == -ENOENT ? PE_ERR_BAD_PROBE_ADDR : PE_ERR_FAIL_REG_PROBE,
			    ev->point_pos, "register_%s(): %s (%s)", t->is_ret ? "kretprobe" : "kprobe",
			    strerror(-err), errname(-err));
		return err;
	}
	t->func = (uintptr_t)kp->addr;
	atomic_fetch_add(&shm->ev[t->id].placed, 1);
	return 0;
}

/* Place what can be placed now.  Returns the number that failed. */
static int place_pending(void)
{
	int failed = 0;

	lobjs_refresh();
	for (int i = 0; i < ntevs; i++) {
		struct tev *t = &tevs[i];
		int err;

		if (t->state != TEV_PENDING)
			continue;
		err = place(t);
		if (!err) {
			t->state = TEV_PLACED;
		} else if (err != -EAGAIN) {
			t->state = TEV_FAILED;
			failed++;
		}
	}
	return failed;
}

AGENT_API void ukprobe_agent_objects_changed(void)
{
	if (agent_state != AGENT_TRACING || getpid() != agent_pid)
		return;
	agent_enter();
	place_pending();
	agent_leave();
}

/*
 * dlclose() is about to unmap the object name: write the records that point
 * into it while they can be symbolized, and take its probes out, to place
 * them again if it comes back (libukprobes does not follow unloading).
 */
AGENT_API void ukprobe_agent_object_closing(const char *name, uintptr_t base)
{
	(void)base;
	if (agent_state != AGENT_TRACING || getpid() != agent_pid || !name)
		return;
	agent_enter();
	if (conf.events)
		writer_flush();
	for (int i = 0; i < ntevs; i++) {
		struct tev *t = &tevs[i];

		if (t->state != TEV_PLACED || !lobjs_addr_in(name, t->func))
			continue;
		account_missed();
		if (t->is_ret)
			unregister_kretprobe(&t->u.rp);
		else
			unregister_kprobe(&t->u.kp);
		missed_base[i] = 0;
		t->state = TEV_PENDING;
	}
	agent_leave();
}

/* ------------------------------------------------------------------------ */
/* Start and end                                                             */
/* ------------------------------------------------------------------------ */

static size_t pow2_at_least(size_t v)
{
	size_t p = 4096;

	while (p < v && p < ((size_t)1 << 40))
		p <<= 1;
	return p;
}

static int setup_rings(void)
{
	size_t total;
	char *mem;

	total = (size_t)DEFAULT_RINGS * conf.bufsize;
	mem = mmap(NULL, total, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED)
		return -errno;
	rings = calloc(DEFAULT_RINGS, sizeof(*rings));
	if (!rings) {
		munmap(mem, total);
		return -ENOMEM;
	}
	nrings = DEFAULT_RINGS;
	for (int i = 0; i < nrings; i++) {
		rings[i].size = conf.bufsize;
		rings[i].data = mem + (size_t)i * conf.bufsize;
	}
	return 0;
}

static void diag(const char *msg)
{
	ssize_t r = write(2, msg, strlen(msg));

	(void)r;
}

__attribute__((constructor)) static void agent_init(void)
{
	const char *c = agent_env_get(environ, "UKPROBE_AGENT_CONF");
	const char *defs = agent_env_get(environ, "UKPROBE_AGENT_DEFS");
	const char *hists = agent_env_get(environ, "UKPROBE_AGENT_HISTS");
	int failed, fd;
	void *m;

	if (!c || !defs)
		return;
	agent_enter();
	env_conf = env_copy("UKPROBE_AGENT_CONF");
	env_defs = env_copy("UKPROBE_AGENT_DEFS");
	env_hists = env_copy("UKPROBE_AGENT_HISTS");
	parse_conf(c);
	conf.bufsize = pow2_at_least(conf.bufsize ? conf.bufsize : 256 * 1024);
	defs = strdup(defs);
	hists = hists ? strdup(hists) : NULL;
	/* GLIBC_TUNABLES: the command sets it with the audit module only. */
	agent_env_restore(audit_path != NULL);

	fd = find_fd(conf.shm_fd, shm_dev, shm_ino, tool_shm_fd, O_RDWR);
	if (fd < 0) {
		diag("ukprobe: agent: lost the shared counters; not tracing\n");
		goto out;
	}
	m = mmap(NULL, sizeof(struct uks), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		diag("ukprobe: agent: cannot map the shared counters; not tracing\n");
		goto out;
	}
	shm = m;
	if (shm->magic != UKS_MAGIC || shm->version != UKS_VERSION) {
		diag("ukprobe: agent: version mismatch with the ukprobe command\n");
		shm = NULL;
		goto out;
	}
	conf.shm_fd = fd;
	conf.out_fd = find_fd(conf.out_fd, out_dev, out_ino, tool_out_fd, O_WRONLY | O_APPEND);
	if (conf.out_fd < 0 && conf.events) {
		agent_note_error("pid %d: lost the output descriptor", getpid());
		conf.events = false;
	}
	/* Without --follow-fork only an exec of this process inherits them
	 * (before_exec() clears close-on-exec for it). */
	fcntl(conf.shm_fd, F_SETFD, conf.follow ? 0 : FD_CLOEXEC);
	if (conf.out_fd >= 0)
		fcntl(conf.out_fd, F_SETFD, conf.follow ? 0 : FD_CLOEXEC);
	if (asprintf(&env_conf_next, "%s\ninitial=0\nout=%d\nshm=%d", env_conf,
		     conf.out_fd, conf.shm_fd) < 0)
		env_conf_next = env_conf;
	if (setup_rings()) {
		agent_note_error("pid %d: no memory for the buffers", getpid());
		conf.events = false;
	}
	if (setup_events(defs, hists))
		goto out;
	agent_pid = getpid();
	atomic_fetch_add(&shm->processes, 1);
	atomic_store(&recording, 1);
	atomic_store(&tracing, 1);
	agent_state = AGENT_TRACING;

	place_pending();
	failed = 0;
	for (int i = 0; i < ntevs; i++)
		if (tevs[i].state == TEV_FAILED)
			failed++;
	if (failed && conf.initial) {
		/* As the kernel refuses a bad definition: the program does not
		 * run.  The command prints why. */
		atomic_store(&shm->fatal, 1);
		syscall(SYS_exit_group, 127);
	}
	if (conf.events && writer_start())
		agent_note_error("pid %d: cannot start the writer thread", getpid());
	ukprobe_agent_ready = 1;
out:
	agent_leave();
}

/* At exit: write what the buffers hold.  from_exit: called by _exit(),
 * maybe from a signal handler: bounded, nothing that may take a lock the
 * interrupted code holds in this thread. */
static void agent_finish(bool from_exit)
{
	agent_enter();
	account_missed();
	if (conf.events)
		writer_stop(from_exit ? 1000 : 5000, !from_exit);
	atomic_store(&recording, 0);
	agent_leave();
}

__attribute__((destructor)) static void agent_fini(void)
{
	if (agent_state != AGENT_TRACING || getpid() != agent_pid)
		return;
	agent_finish(false);
	agent_state = AGENT_OFF;
	atomic_store(&tracing, 0);
}

/* ------------------------------------------------------------------------ */
/* Processes                                                                 */
/* ------------------------------------------------------------------------ */

#define REAL(name) \
	static __typeof__(name) *real_##name; \
	if (!real_##name) \
		real_##name = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

AGENT_API pid_t fork(void)
{
	pid_t pid;

	REAL(fork);
	if (agent_state != AGENT_TRACING || getpid() != agent_pid)
		return real_fork();
	agent_enter();
	writer_lock_for_fork();
	lobjs_lock();
	pid = real_fork();
	lobjs_unlock();
	writer_unlock_after_fork(pid == 0);
	if (pid == 0) {
		agent_pid = getpid();
		if (conf.follow) {
			agent_rings_after_fork(true);
			for (int i = 0; i < ntevs && missed_base; i++)
				missed_base[i] = tev_missed(&tevs[i]);
			if (conf.events && writer_start())
				agent_note_error("pid %d: cannot start the writer thread", getpid());
		} else {
			/* Stop tracing: the probes are disarmed in this
			 * address space, the parent's stay. */
			atomic_store(&tracing, 0);
			agent_state = AGENT_CHILD_OFF;
			agent_rings_after_fork(false);
			ukprobes_set_enabled(0);
		}
	}
	agent_leave();
	return pid;
}

/* Should a new program started from here be traced? */
static bool trace_children(void)
{
	return agent_state == AGENT_TRACING && conf.follow;
}

static size_t env_count(char *const env[])
{
	size_t n = 0;

	while (env && env[n])
		n++;
	return n;
}

/* What a traced new program gets (agent_env.h). */
static void child_env(char *const env[], char **out, char (*bufs)[AGENT_ENV_BUF])
{
	struct agent_env ae = {
		.preload = preload_path ? preload_path : agent_path,
		.audit = audit_path,
		.tls = tls_surplus,
		.conf = env_conf_next,
		.defs = env_defs,
		.hists = env_hists,
	};

	agent_env_child(&ae, env, out, bufs);
}

/* Called before an exec of this process: write what the buffers hold, and
 * let the new image inherit the descriptors if it will trace (traced). */
static void before_exec(bool traced)
{
	if (getpid() != agent_pid)
		return;	/* a vfork child: the parent's writer goes on */
	agent_enter();
	account_missed();
	if (conf.events)
		writer_flush();
	if (!conf.follow && traced) {
		fcntl(conf.shm_fd, F_SETFD, 0);
		if (conf.out_fd >= 0)
			fcntl(conf.out_fd, F_SETFD, 0);
	}
	agent_leave();
}

/* The exec failed: back as before. */
static void after_failed_exec(bool traced)
{
	int e = errno;

	if (getpid() == agent_pid && !conf.follow && traced) {
		fcntl(conf.shm_fd, F_SETFD, FD_CLOEXEC);
		if (conf.out_fd >= 0)
			fcntl(conf.out_fd, F_SETFD, FD_CLOEXEC);
	}
	errno = e;
}

/* exec of this very process: traced again unless it is an untraced child. */
static bool exec_traced(void)
{
	if (agent_state != AGENT_TRACING)
		return false;
	/* A vfork child execs a new program: a child. */
	return getpid() == agent_pid || conf.follow;
}

#define WITH_CHILD_ENV(envp, newenv, body) do {				\
	size_t n_ = env_count(envp) + AGENT_ENV_EXTRA + 1;		\
	char *newenv[n_];						\
	char bufs_[AGENT_ENV_NBUFS][AGENT_ENV_BUF];			\
	child_env(envp, newenv, bufs_);					\
	body;								\
} while (0)

/*
 * An exec of this very process, traced: r = call, where call execs with
 * the environment ne.  A program that can take the agent gets the
 * agent's variables; one that cannot (static, set-user-ID) gets envp as
 * it is, and tracing ends with this image.
 */
#define TRACED_EXEC(takes_agent, envp, ne, call) do {			\
	bool takes_ = (takes_agent);					\
	before_exec(takes_);						\
	if (takes_) {							\
		WITH_CHILD_ENV(envp, ne, r = call);			\
	} else {							\
		char *const *ne = envp;					\
		r = call;						\
	}								\
	after_failed_exec(takes_);					\
} while (0)

AGENT_API int execve(const char *path, char *const argv[], char *const envp[])
{
	int r;

	REAL(execve);
	if (!exec_traced())
		return real_execve(path, argv, envp);
	TRACED_EXEC(agent_env_takes_agent_at(AT_FDCWD, path, 0), envp, ne,
		    real_execve(path, argv, ne));
	return r;
}

AGENT_API int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

AGENT_API int execvpe(const char *file, char *const argv[], char *const envp[])
{
	int r;

	REAL(execvpe);
	if (!exec_traced())
		return real_execvpe(file, argv, envp);
	TRACED_EXEC(agent_env_takes_agent_file(file), envp, ne, real_execvpe(file, argv, ne));
	return r;
}

AGENT_API int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

AGENT_API int fexecve(int fd, char *const argv[], char *const envp[])
{
	int r;

	REAL(fexecve);
	if (!exec_traced())
		return real_fexecve(fd, argv, envp);
	TRACED_EXEC(agent_env_takes_agent_fd(fd), envp, ne, real_fexecve(fd, argv, ne));
	return r;
}

AGENT_API int execveat(int dirfd, const char *path, char *const argv[],
		       char *const envp[], int flags)
{
	int r;

	REAL(execveat);
	if (!real_execveat) {
		errno = ENOSYS;
		return -1;
	}
	if (!exec_traced())
		return real_execveat(dirfd, path, argv, envp, flags);
	TRACED_EXEC(agent_env_takes_agent_at(dirfd, path, flags), envp, ne,
		    real_execveat(dirfd, path, argv, ne, flags));
	return r;
}

/* execl, execle, execlp: collect the arguments, then as above. */
#define COLLECT_ARGS(arg0, ap, argv, with_env, envp)			\
	size_t argc_ = 1;						\
	va_list ap2_;							\
	va_copy(ap2_, ap);						\
	while (va_arg(ap2_, char *))					\
		argc_++;						\
	va_end(ap2_);							\
	char *argv[argc_ + 1];						\
	argv[0] = (char *)(arg0);					\
	for (size_t i_ = 1; i_ <= argc_; i_++)				\
		argv[i_] = va_arg(ap, char *);				\
	if (with_env)							\
		envp = va_arg(ap, char **)

AGENT_API int execl(const char *path, const char *arg, ...)
{
	char **envp = NULL;
	va_list ap;

	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, argv, 0, envp);
	va_end(ap);
	(void)envp;
	return execve(path, argv, environ);
}

AGENT_API int execle(const char *path, const char *arg, ...)
{
	char **envp = NULL;
	va_list ap;

	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, argv, 1, envp);
	va_end(ap);
	return execve(path, argv, envp);
}

AGENT_API int execlp(const char *file, const char *arg, ...)
{
	char **envp = NULL;
	va_list ap;

	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, argv, 0, envp);
	va_end(ap);
	(void)envp;
	return execvpe(file, argv, environ);
}

AGENT_API int posix_spawn(pid_t *pid, const char *path,
			  const posix_spawn_file_actions_t *fa,
			  const posix_spawnattr_t *attr, char *const argv[],
			  char *const envp[])
{
	int r;

	REAL(posix_spawn);
	if (!trace_children() || !agent_env_takes_agent_at(AT_FDCWD, path, 0))
		return real_posix_spawn(pid, path, fa, attr, argv, envp);
	WITH_CHILD_ENV(envp, ne, r = real_posix_spawn(pid, path, fa, attr, argv, ne));
	return r;
}

AGENT_API int posix_spawnp(pid_t *pid, const char *file,
			   const posix_spawn_file_actions_t *fa,
			   const posix_spawnattr_t *attr, char *const argv[],
			   char *const envp[])
{
	int r;

	REAL(posix_spawnp);
	if (!trace_children() || !agent_env_takes_agent_file(file))
		return real_posix_spawnp(pid, file, fa, attr, argv, envp);
	WITH_CHILD_ENV(envp, ne, r = real_posix_spawnp(pid, file, fa, attr, argv, ne));
	return r;
}

/* system() and popen() take the environment from environ: swap it for the
 * call (another thread's getenv() meanwhile sees ours too). */
AGENT_API int system(const char *cmd)
{
	int r;

	REAL(system);
	if (!trace_children() || !cmd)
		return real_system(cmd);
	WITH_CHILD_ENV(environ, ne, {
		char **old = environ;
		environ = ne;
		r = real_system(cmd);
		environ = old;
	});
	return r;
}

AGENT_API FILE *popen(const char *cmd, const char *mode)
{
	FILE *f;

	REAL(popen);
	if (!trace_children())
		return real_popen(cmd, mode);
	WITH_CHILD_ENV(environ, ne, {
		char **old = environ;
		environ = ne;
		f = real_popen(cmd, mode);
		environ = old;
	});
	return f;
}

/* A thread renamed: the handlers read their thread's name again. */
AGENT_API int prctl(int option, ...)
{
	unsigned long a[4];
	va_list ap;
	int r;

	REAL(prctl);
	va_start(ap, option);
	for (int i = 0; i < 4; i++)
		a[i] = va_arg(ap, unsigned long);
	va_end(ap);
	r = real_prctl(option, a[0], a[1], a[2], a[3]);
	if (option == PR_SET_NAME)
		atomic_fetch_add(&comm_gen, 1);
	return r;
}

AGENT_API int pthread_setname_np(pthread_t thread, const char *name)
{
	int r;

	REAL(pthread_setname_np);
	r = real_pthread_setname_np(thread, name);
	atomic_fetch_add(&comm_gen, 1);
	return r;
}

AGENT_API void _exit(int status)
{
	REAL(_exit);
	if (agent_state == AGENT_TRACING && getpid() == agent_pid) {
		agent_finish(true);
		agent_state = AGENT_OFF;
	}
	real__exit(status);
	__builtin_unreachable();
}

AGENT_API void _Exit(int status)
{
	_exit(status);
}
