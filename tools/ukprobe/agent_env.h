/* SPDX-License-Identifier: MIT */
/*
 * agent_env.h - the traced program's environment: as the user gave it,
 * whatever ukprobe adds to start the agent.
 *
 * The command starts the program with LD_PRELOAD (libukprobes and the agent
 * first), LD_AUDIT (the audit module), GLIBC_TUNABLES (static TLS for them)
 * and the UKPROBE_AGENT_* variables (shm.h); the user's own values of the
 * first three travel in UKPROBE_AGENT_ORIG_<NAME>.  The agent's constructor
 * puts the user's environment back (agent_env_restore()) before the
 * program's main() runs; a traced new program started from there gets the
 * same additions again (agent_env_child()), and a program that cannot take
 * the agent (static, set-user-ID) gets the environment as it is.
 *
 * No allocation in what an exec wrapper calls (agent_env_child(),
 * agent_env_takes_agent_*()): a vfork() child may run them.
 */
#ifndef UKPROBE_AGENT_ENV_H
#define UKPROBE_AGENT_ENV_H

#include <stdbool.h>
#include <stddef.h>

#define AGENT_ENV_BUF	4096	/* one variable agent_env_child() makes */
#define AGENT_ENV_EXTRA	10	/* entries it may add */

/* What a traced new program gets. */
struct agent_env {
	const char *preload;	/* libukprobes and the agent, ':'-separated */
	const char *audit;	/* the audit module, or NULL */
	unsigned long tls;	/* glibc.rtld.optional_static_tls (with audit) */
	const char *conf;	/* "UKPROBE_AGENT_CONF=..." */
	const char *defs;	/* "UKPROBE_AGENT_DEFS=..." */
	const char *hists;	/* "UKPROBE_AGENT_HISTS=...", or NULL */
};

/* NAME's value in env, without getenv() (the program may define its own). */
const char *agent_env_get(char *const env[], const char *name);

/*
 * The user's environment back, in environ itself: UKPROBE_AGENT_* out,
 * LD_PRELOAD, LD_AUDIT and (with_tunables: ukprobe set it) GLIBC_TUNABLES
 * back to the user's values, or out.  Not with setenv()/unsetenv(): a
 * program may define its own (bash does: they work on its shell variables,
 * which it makes from environ later), and environ is the array main()
 * receives.
 */
void agent_env_restore(bool with_tunables);

/*
 * env as a traced new program must get it, into out (room for the entries
 * of env plus AGENT_ENV_EXTRA, and a NULL), its new variables in bufs: env
 * without our variables, our LD_PRELOAD / LD_AUDIT / GLIBC_TUNABLES in
 * front of the program's own, those remembered in UKPROBE_AGENT_ORIG_*.
 */
void agent_env_child(const struct agent_env *ae, char *const env[], char **out,
		     char (*bufs)[AGENT_ENV_BUF]);
#define AGENT_ENV_NBUFS	6

/* Can the run-time linker start the agent in this program (a dynamic ELF
 * file of our class, not set-user-ID or set-group-ID; a script too)?
 * Else it gets the environment unchanged. */
bool agent_env_takes_agent_fd(int fd);
bool agent_env_takes_agent_at(int dirfd, const char *path, int flags);
/* file found in PATH (of environ) as execvp() does. */
bool agent_env_takes_agent_file(const char *file);

#endif
