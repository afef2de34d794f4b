// SPDX-License-Identifier: MIT
/*
 * forker - fork and exec for ukprobe's tests.  The parent calls target()
 * twice in every mode.
 *
 *   forker fork          the child calls target() 3 times
 *   forker exec PROG...  the child execs PROG... (execv)
 *   forker spawn PROG... posix_spawn PROG... and waits
 *   forker system CMD    system(CMD)
 *   forker env           the child prints LD_PRELOAD, LD_AUDIT and any
 *                        UKPROBE_ variable it sees
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noipa))

extern char **environ;

NOINLINE long target(long i)
{
	return i * 2;
}

static void show_env(const char *who)
{
	int n = 0;

	for (char **e = environ; *e; e++)
		if (!strncmp(*e, "LD_PRELOAD=", 11) || !strncmp(*e, "LD_AUDIT=", 9) ||
		    !strncmp(*e, "UKPROBE_", 8) || !strncmp(*e, "GLIBC_TUNABLES=", 15)) {
			printf("%s: %s\n", who, *e);
			n++;
		}
	if (!n)
		printf("%s: clean\n", who);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "fork";
	long sum = 0;
	int status = 0;
	pid_t pid;

	sum += target(1);
	fflush(stdout);
	if (!strcmp(mode, "spawn") && argc > 2) {
		if (posix_spawn(&pid, argv[2], NULL, NULL, argv + 2, environ))
			return 1;
	} else if (!strcmp(mode, "system") && argc > 2) {
		status = system(argv[2]);
		pid = -1;
	} else {
		pid = fork();
		if (pid == 0) {
			if (!strcmp(mode, "exec") && argc > 2) {
				execv(argv[2], argv + 2);
				_exit(127);
			}
			if (!strcmp(mode, "env"))
				show_env("child");
			for (long i = 0; i < 3; i++)
				sum += target(i);
			printf("child sum=%ld\n", sum);
			fflush(stdout);
			exit(0);
		}
	}
	if (pid > 0)
		waitpid(pid, &status, 0);
	sum += target(2);
	if (!strcmp(mode, "env"))
		show_env("parent");
	printf("parent sum=%ld child status=%d\n", sum, status);
	return 0;
}
