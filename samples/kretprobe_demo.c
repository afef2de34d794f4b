// SPDX-License-Identifier: MIT
/*
 * kretprobe_demo.c - the program that the ported kretprobe_example "module"
 * is loaded into (see demo_program.c for the kprobe example).
 *
 *   kretprobe_demo [func=OBJ:SYM]      as: insmod kretprobe_example.ko func=...
 *
 * What it does:
 *  1. "insmod": parses the parameters and calls the module's init
 *     (kretprobe_init(): register_kretprobe() on libc's open64(), which
 *     open() and fopen() call);
 *  2. runs a workload: opens files with fopen() and open(), some of which
 *     fail (ENOENT, EISDIR, ENOTDIR), in this thread and in a second one;
 *  3. "rmmod": calls the module's exit (kretprobe_exit()).
 *
 * The module prints one line per failed call; the workload checks that every
 * call gave the same result and errno as without the probe.
 *
 * Exits 0 if the module loaded and the workload gave the expected results.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel_compat.h"

struct open_case {
	const char *path;
	int flags;
	int expect_errno;	/* 0: succeeds */
};

static const struct open_case cases[] = {
	{ "/proc/self/status", O_RDONLY, 0 },
	{ "/nonexistent/ukprobes-demo", O_RDONLY, ENOENT },
	{ "/", O_WRONLY, EISDIR },
	{ "/proc/self/status/x", O_RDONLY, ENOTDIR },
	{ "/dev/null", O_RDWR, 0 },
};

#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* One pass over the cases with open() and with fopen(); returns the number
 * of calls whose result or errno was wrong. */
static int workload(const char *who)
{
	int wrong = 0;

	for (size_t i = 0; i < NCASES; i++) {
		const struct open_case *c = &cases[i];
		int fd, err;
		FILE *f;

		errno = 0;
		fd = open(c->path, c->flags);
		err = errno;
		printf("kretprobe_demo: %s: open(\"%s\") = %d%s%s\n", who, c->path, fd,
		       fd < 0 ? ", errno " : "", fd < 0 ? strerrorname_np(err) : "");
		if (fd >= 0)
			close(fd);
		if (c->expect_errno ? fd != -1 || err != c->expect_errno : fd < 0)
			wrong++;

		errno = 0;
		f = fopen(c->path, (c->flags & O_ACCMODE) == O_RDONLY ? "r" : "r+");
		err = errno;
		printf("kretprobe_demo: %s: fopen(\"%s\") = %s%s\n", who, c->path,
		       f ? "FILE *" : "NULL, errno ", f ? "" : strerrorname_np(err));
		if (f)
			fclose(f);
		if (c->expect_errno ? f != NULL || err != c->expect_errno : f == NULL)
			wrong++;
	}
	return wrong;
}

static void *thread_workload(void *arg)
{
	*(int *)arg = workload("thread");
	return NULL;
}

int main(int argc, char **argv)
{
	int ret, i, wrong, thread_wrong = 0;
	pthread_t th;

	/* Handlers write(2) directly; keep our lines in order with theirs. */
	setvbuf(stdout, NULL, _IOLBF, 0);

	/* insmod kretprobe_example.ko argv[1] ... */
	for (i = 1; i < argc; i++) {
		ret = ukp_module_param(argv[i]);
		if (ret < 0) {
			fprintf(stderr, "kretprobe_demo: %s: %s\n", argv[i],
				ret == -ENOENT ? "unknown parameter" : strerror(-ret));
			return 2;
		}
	}
	printf("kretprobe_demo: loading kretprobe_example\n");
	ret = ukp_module_init();
	if (ret < 0) {
		fprintf(stderr, "kretprobe_demo: kretprobe_example init failed: %s\n",
			strerror(-ret));
		return 1;
	}

	wrong = workload("main");
	if (pthread_create(&th, NULL, thread_workload, &thread_wrong) == 0)
		pthread_join(th, NULL);
	else
		wrong++;

	/* rmmod kretprobe_example */
	ukp_module_exit();

	if (wrong || thread_wrong) {
		fprintf(stderr, "kretprobe_demo: %d calls gave a wrong result or errno\n",
			wrong + thread_wrong);
		return 1;
	}
	return 0;
}
