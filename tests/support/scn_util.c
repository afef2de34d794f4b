/* SPDX-License-Identifier: MIT */
/* scn_util.c - see scn_util.h. */
#include "scn_util.h"

#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

const int scn_sigs[SCN_NSIGS] = { SIGTRAP, SIGSEGV, SIGBUS, SIGFPE, SIGILL };

void scn_snapshot_init(struct scn_snapshot *s)
{
	s->nranges = 0;
	s->maps_len = 0;
}

void scn_snapshot_add_code(struct scn_snapshot *s, const void *addr, size_t len)
{
	if (s->nranges >= SCN_MAX_RANGES)
		return;
	if (len > SCN_RANGE_MAX)
		len = SCN_RANGE_MAX;
	s->addr[s->nranges] = addr;
	s->len[s->nranges] = len;
	s->nranges++;
}

size_t scn_read_maps(char *buf, size_t cap)
{
	static char raw[SCN_MAPS_MAX];
	size_t n = 0, out = 0;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	for (;;) {
		ssize_t r = read(fd, raw + n, sizeof(raw) - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		if (n >= sizeof(raw) - 1)
			break;
	}
	close(fd);
	raw[n] = 0;
	/* Drop the [stack] line: the kernel grows it on demand, whatever
	 * ukprobes does.  Under AddressSanitizer, also its allocator's
	 * anonymous regions (read-write, and reserved ---p), which change on
	 * any malloc(): what a
	 * failed registration must not change is code, slots and mappings of
	 * ukprobes' own, not the heap. */
	for (char *line = raw; *line;) {
		char *nl = strchr(line, '\n');
		size_t ll = nl ? (size_t)(nl - line + 1) : strlen(line);
		bool skip = memmem(line, ll, "[stack]", 7) != NULL;
#ifdef __SANITIZE_ADDRESS__
		{
			unsigned long lo, hi, off;
			char perms[8];
			int dev1, dev2;
			unsigned long ino;

			if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu", &lo, &hi, perms, &off,
				   &dev1, &dev2, &ino) == 7 &&
			    (!strcmp(perms, "rw-p") || !strcmp(perms, "---p")) &&
			    ino == 0 && !memchr(line, '[', ll))
				skip = true;
		}
#endif
		if (!skip) {
			if (out + ll < cap) {
				memcpy(buf + out, line, ll);
				out += ll;
			}
		}
		line += ll;
	}
	if (out < cap)
		buf[out] = 0;
	return out;
}

static void take_sigs(struct sigaction *prog, struct scn_ksigaction *kern)
{
	for (int i = 0; i < SCN_NSIGS; i++) {
		memset(&prog[i], 0, sizeof(prog[i]));
		sigaction(scn_sigs[i], NULL, &prog[i]);
		memset(&kern[i], 0, sizeof(kern[i]));
		syscall(SYS_rt_sigaction, scn_sigs[i], NULL, &kern[i], 8);
	}
}

void scn_snapshot_take(struct scn_snapshot *s)
{
	for (int i = 0; i < s->nranges; i++)
		memcpy(s->bytes[i], s->addr[i], s->len[i]);
	take_sigs(s->prog_sa, s->kern_sa);
	s->maps_len = scn_read_maps(s->maps, sizeof(s->maps));
}

static int first_diff_line(const char *a, const char *b, char *why,
			   size_t whylen)
{
	size_t i = 0;
	while (a[i] && a[i] == b[i])
		i++;
	size_t st = i;
	while (st > 0 && a[st - 1] != '\n')
		st--;
	const char *ea = strchr(a + st, '\n');
	const char *eb = strchr(b + st, '\n');
	int la = ea ? (int)(ea - (a + st)) : (int)strlen(a + st);
	int lb = eb ? (int)(eb - (b + st)) : (int)strlen(b + st);
	snprintf(why, whylen, "/proc/self/maps differs: before \"%.*s\", after \"%.*s\"",
		 la, a + st, lb, b + st);
	return 1;
}

/* Only the signals that exist: the bytes of sigset_t past the kernel's
 * 64 bits carry nothing. */
static int same_mask(const sigset_t *a, const sigset_t *b)
{
	for (int sig = 1; sig < _NSIG; sig++)
		if (sigismember(a, sig) != sigismember(b, sig))
			return 0;
	return 1;
}

int scn_snapshot_compare(const struct scn_snapshot *before, char *why,
			 size_t whylen)
{
	static struct scn_snapshot now;

	for (int i = 0; i < before->nranges; i++) {
		const unsigned char *cur = before->addr[i];
		for (size_t j = 0; j < before->len[i]; j++) {
			if (cur[j] != before->bytes[i][j]) {
				snprintf(why, whylen,
					 "code byte at %p changed: 0x%02x -> 0x%02x",
					 (const void *)(cur + j), before->bytes[i][j], cur[j]);
				return 1;
			}
		}
	}
	take_sigs(now.prog_sa, now.kern_sa);
	for (int i = 0; i < SCN_NSIGS; i++) {
		const struct sigaction *a = &before->prog_sa[i], *b = &now.prog_sa[i];
		if (a->sa_sigaction != b->sa_sigaction || a->sa_flags != b->sa_flags ||
		    !same_mask(&a->sa_mask, &b->sa_mask)) {
			snprintf(why, whylen,
				 "sigaction(%d) as the program sees it changed: %p/%#x -> %p/%#x",
				 scn_sigs[i], (void *)a->sa_sigaction, a->sa_flags,
				 (void *)b->sa_sigaction, b->sa_flags);
			return 1;
		}
		if (memcmp(&before->kern_sa[i], &now.kern_sa[i], sizeof(now.kern_sa[i]))) {
			snprintf(why, whylen,
				 "kernel rt_sigaction(%d) changed: %#lx/%#lx -> %#lx/%#lx",
				 scn_sigs[i], before->kern_sa[i].handler,
				 before->kern_sa[i].flags, now.kern_sa[i].handler,
				 now.kern_sa[i].flags);
			return 1;
		}
	}
	now.maps_len = scn_read_maps(now.maps, sizeof(now.maps));
	if (now.maps_len != before->maps_len ||
	    memcmp(now.maps, before->maps, now.maps_len))
		return first_diff_line(before->maps, now.maps, why, whylen);
	return 0;
}

const char *scn_exe_name(void)
{
	static char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	if (n < 0)
		return "?";
	buf[n] = 0;
	char *slash = strrchr(buf, '/');
	return slash ? slash + 1 : buf;
}

int scn_count_lines(const char *buf, size_t len)
{
	int n = 0;
	for (size_t i = 0; i < len; i++)
		if (buf[i] == '\n')
			n++;
	if (len && buf[len - 1] != '\n')
		n++;
	return n;
}

long long scn_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void scn_spin_ns(long ns)
{
	long long end = scn_now_ns() + ns;
	while (scn_now_ns() < end)
		;
}

bool scn_in_anonymous_text(uintptr_t addr)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, off, ino;
		char perms[8];
		int dev1, dev2, n = 0;

		if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu %n", &lo, &hi, perms, &off, &dev1,
			   &dev2, &ino, &n) < 7 || addr < lo || addr >= hi)
			continue;
		found = perms[2] == 'x' && ino == 0 && (line[n] == '\n' || line[n] == 0);
		break;
	}
	fclose(f);
	return found;
}
