// SPDX-License-Identifier: MIT
/*
 * restricted - runs a program in a state ukprobe must refuse to attach to
 * (trace -p): "restricted seccomp CMD..." under a seccomp filter (one that
 * allows every call: the filter itself is the reason), "restricted
 * blocktrap CMD..." with SIGTRAP blocked (inherited across execve).
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: restricted seccomp|blocktrap CMD [ARG...]\n");
		return 2;
	}
	if (!strcmp(argv[1], "seccomp")) {
		struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
		struct sock_fprog prog = { 1, &allow };

		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
			perror("seccomp");
			return 2;
		}
	} else if (!strcmp(argv[1], "blocktrap")) {
		sigset_t s;

		sigemptyset(&s);
		sigaddset(&s, SIGTRAP);
		sigprocmask(SIG_BLOCK, &s, NULL);
	} else {
		fprintf(stderr, "restricted: seccomp or blocktrap, not %s\n", argv[1]);
		return 2;
	}
	execvp(argv[2], argv + 2);
	perror(argv[2]);
	return 127;
}
