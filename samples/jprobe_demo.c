// SPDX-License-Identifier: MIT
/*
 * jprobe_demo.c - the program that the ported jprobe_example "module" is
 * loaded into (see demo_program.c for the kprobe example).
 *
 *   jprobe_demo            as: insmod jprobe_example.ko
 *
 * What it does:
 *  1. "insmod": calls the module's init (jprobe_init(): register_jprobe()
 *     on libc's posix_spawn());
 *  2. runs a workload: starts three processes with posix_spawn() (with and
 *     without file actions and attributes) and waits for them;
 *  3. "rmmod": calls the module's exit (jprobe_exit()).
 *
 * The module's proxy routine prints the arguments of every posix_spawn();
 * the workload checks that each process ran and exited as without the probe.
 *
 * Exits 0 if the module loaded and the workload gave the expected results.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel_compat.h"

extern char **environ;

/* Start @argv[0] with posix_spawn(); returns its exit status or -1. */
static int spawn_wait(char *const argv[], const posix_spawn_file_actions_t *fa,
		      const posix_spawnattr_t *attr)
{
	pid_t pid;
	int err, status;

	err = posix_spawn(&pid, argv[0], fa, attr, argv, environ);
	if (err) {
		fprintf(stderr, "jprobe_demo: posix_spawn %s: %s\n", argv[0], strerror(err));
		return -1;
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	printf("jprobe_demo: %s exited with %d\n", argv[0], WEXITSTATUS(status));
	return WEXITSTATUS(status);
}

int main(void)
{
	char *echo[] = { "/bin/echo", "hello from a spawned echo", NULL };
	char *truecmd[] = { "/bin/true", NULL };
	char *sh[] = { "/bin/sh", "-c", "exit 7", NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	int ret, status = 0;

	/* Handlers write(2) directly; keep our lines in order with theirs. */
	setvbuf(stdout, NULL, _IOLBF, 0);

	printf("jprobe_demo: loading jprobe_example\n");
	ret = ukp_module_init();
	if (ret < 0) {
		fprintf(stderr, "jprobe_demo: jprobe_example init failed\n");
		return 1;
	}

	if (spawn_wait(truecmd, NULL, NULL) != 0)
		status = 1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (spawn_wait(echo, &fa, NULL) != 0)
		status = 1;
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
	if (spawn_wait(sh, NULL, &attr) != 7)
		status = 1;
	posix_spawnattr_destroy(&attr);

	/* rmmod jprobe_example */
	ukp_module_exit();

	if (status)
		fprintf(stderr, "jprobe_demo: the workload gave wrong results\n");
	return status;
}
