// SPDX-License-Identifier: MIT
/*
 * agent_signals.c - attached to a running process, the agent leaves its
 * signal handlers as it found them (ukprobe trace -p PID, then detach).
 *
 * libukprobes takes SIGTRAP and the fault signals when the first probe is
 * registered and keeps them for the life of the process, chaining the
 * program's own handlers from a table of its own.  At detach, with no probe
 * left, the kernel gets the program's handlers back (what the table says
 * the program wants, through libukprobes' exported sigaction(), which
 * answers from the table for the signals it owns).  Attached again, the
 * library's handlers go back in, and its table learns what the program
 * installed meanwhile.  This is the one place the tool relies on how
 * libukprobes keeps signals (ukprobes(7), "Signals"); it uses only exported
 * functions: libukprobes' sigaction() and libc's __sigaction().
 */
#include <dlfcn.h>
#include <signal.h>
#include <string.h>

#include "agent.h"

extern int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);

static const int sigs[] = { SIGTRAP, SIGSEGV, SIGBUS, SIGFPE, SIGILL };
#define NSIGS	(int)(sizeof(sigs) / sizeof(sigs[0]))

static struct sigaction before[NSIGS];	/* the kernel's, at attach */
static struct sigaction lib[NSIGS];	/* libukprobes', at detach */
static bool given_back[NSIGS];

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

/* libukprobes' sigaction(): the program's view of the signals it owns. */
static sigaction_fn lib_sigaction(void)
{
	void *h = dlopen("libukprobes.so.0", RTLD_NOW | RTLD_NOLOAD);
	sigaction_fn f = h ? (sigaction_fn)dlsym(h, "sigaction") : NULL;

	if (h)
		dlclose(h);
	return f;
}

void agent_signals_save(void)
{
	sigaction_fn ls = lib_sigaction();

	for (int i = 0; i < NSIGS; i++) {
		__sigaction(sigs[i], NULL, &before[i]);
		if (given_back[i] && ls) {
			/* Attached again: what the program has now goes in
			 * the library's table, and its handler back in the
			 * kernel. */
			ls(sigs[i], &before[i], NULL);
			__sigaction(sigs[i], &lib[i], NULL);
			given_back[i] = false;
		}
	}
}

void agent_signals_restore(void)
{
	sigaction_fn ls = lib_sigaction();

	for (int i = 0; i < NSIGS; i++) {
		struct sigaction cur, wish;

		__sigaction(sigs[i], NULL, &cur);
		if (cur.sa_handler == before[i].sa_handler || !ls)
			continue;	/* not taken while attached */
		if (ls(sigs[i], NULL, &wish))
			continue;
		lib[i] = cur;
		__sigaction(sigs[i], &wish, NULL);
		given_back[i] = true;
	}
}
