// SPDX-License-Identifier: MIT
/*
 * agent_env.c - the traced program's environment (see agent_env.h).
 */
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent_env.h"

extern char **environ;

/* Ours alone: a user's UKPROBE_AGENT_DIR stays. */
static const char *const ours[] = {
	"UKPROBE_AGENT_CONF", "UKPROBE_AGENT_DEFS", "UKPROBE_AGENT_HISTS",
	"UKPROBE_AGENT_ORIG_LD_PRELOAD", "UKPROBE_AGENT_ORIG_LD_AUDIT",
	"UKPROBE_AGENT_ORIG_GLIBC_TUNABLES",
};

/* What ukprobe puts in front of the user's value, and where that value is
 * kept meanwhile. */
enum { PRELOAD, AUDIT, TUNABLES, NSHARED };
static const char *const shared[NSHARED] = { "LD_PRELOAD", "LD_AUDIT", "GLIBC_TUNABLES" };
static const char *const kept[NSHARED] = {
	"UKPROBE_AGENT_ORIG_LD_PRELOAD", "UKPROBE_AGENT_ORIG_LD_AUDIT",
	"UKPROBE_AGENT_ORIG_GLIBC_TUNABLES",
};

static bool env_is(const char *e, const char *name)
{
	size_t n = strlen(name);

	return !strncmp(e, name, n) && e[n] == '=';
}

static bool is_ours(const char *e)
{
	for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
		if (env_is(e, ours[i]))
			return true;
	return false;
}

const char *agent_env_get(char *const env[], const char *name)
{
	for (size_t i = 0; env && env[i]; i++)
		if (env_is(env[i], name))
			return env[i] + strlen(name) + 1;
	return NULL;
}

void agent_env_restore(bool with_tunables)
{
	char **env = environ;
	const char *user[NSHARED];
	size_t n = 0;

	if (!env)
		return;
	for (int k = 0; k < NSHARED; k++)
		user[k] = agent_env_get(env, kept[k]);
	for (size_t i = 0; env[i]; i++) {
		char *e = env[i];
		int k;

		if (is_ours(e))
			continue;
		for (k = 0; k < NSHARED && !env_is(e, shared[k]); k++)
			;
		if (k < NSHARED && (k != TUNABLES || with_tunables)) {
			char *mine;

			if (!user[k])
				continue;	/* the user had none */
			/* Kept for the life of the process, as putenv() strings are. */
			if (asprintf(&mine, "%s=%s", shared[k], user[k]) < 0)
				continue;
			e = mine;
		}
		env[n++] = e;
	}
	env[n] = NULL;
}

void agent_env_child(const struct agent_env *ae, char *const env[], char **out,
		     char (*bufs)[AGENT_ENV_BUF])
{
	const char *user[NSHARED] = { NULL, NULL, NULL };
	size_t n = 0;

	for (size_t i = 0; env && env[i]; i++) {
		const char *e = env[i];
		int k;

		if (is_ours(e))
			continue;
		for (k = 0; k < NSHARED && !env_is(e, shared[k]); k++)
			;
		/* GLIBC_TUNABLES: ours to add only with the audit module. */
		if (k < NSHARED && (k != TUNABLES || ae->audit)) {
			user[k] = e + strlen(shared[k]) + 1;
			continue;
		}
		out[n++] = (char *)e;
	}
	snprintf(bufs[0], AGENT_ENV_BUF, "LD_PRELOAD=%s%s%s", ae->preload,
		 user[PRELOAD] && *user[PRELOAD] ? ":" : "", user[PRELOAD] ? user[PRELOAD] : "");
	out[n++] = bufs[0];
	if (ae->audit) {
		snprintf(bufs[1], AGENT_ENV_BUF, "LD_AUDIT=%s%s%s", ae->audit,
			 user[AUDIT] && *user[AUDIT] ? ":" : "", user[AUDIT] ? user[AUDIT] : "");
		out[n++] = bufs[1];
		snprintf(bufs[2], AGENT_ENV_BUF, "GLIBC_TUNABLES=%s%sglibc.rtld.optional_static_tls=%lu",
			 user[TUNABLES] ? user[TUNABLES] : "",
			 user[TUNABLES] && *user[TUNABLES] ? ":" : "", ae->tls ? ae->tls : 16384ul);
		out[n++] = bufs[2];
	}
	for (int k = 0; k < NSHARED; k++) {
		if (!user[k])
			continue;
		snprintf(bufs[3 + k], AGENT_ENV_BUF, "%s=%s", kept[k], user[k]);
		out[n++] = bufs[3 + k];
	}
	out[n++] = (char *)ae->conf;
	out[n++] = (char *)ae->defs;
	if (ae->hists)
		out[n++] = (char *)ae->hists;
	out[n] = NULL;
}

bool agent_env_takes_agent_fd(int fd)
{
	static const unsigned char our_class = sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32;
	ElfW(Ehdr) eh;
	struct stat st;

	if (fstat(fd, &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID)))
		return false;	/* secure mode: ld.so ignores LD_PRELOAD */
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG))
		return true;	/* a script: its interpreter may take it */
	if (eh.e_ident[EI_CLASS] != our_class)
		return false;	/* the agent cannot load there */
	for (unsigned int i = 0; i < eh.e_phnum; i++) {
		ElfW(Phdr) ph;

		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) !=
		    (ssize_t)sizeof(ph))
			return true;
		if (ph.p_type == PT_INTERP)
			return true;
	}
	return false;		/* static */
}

bool agent_env_takes_agent_at(int dirfd, const char *path, int flags)
{
	int fd;
	bool r;

	if ((flags & AT_EMPTY_PATH) && path && !*path)
		return agent_env_takes_agent_fd(dirfd);
	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;	/* the exec will fail, or tell */
	r = agent_env_takes_agent_fd(fd);
	close(fd);
	return r;
}

bool agent_env_takes_agent_file(const char *file)
{
	const char *path;
	char buf[PATH_MAX];

	if (!file || !*file || strchr(file, '/'))
		return agent_env_takes_agent_at(AT_FDCWD, file, 0);
	path = agent_env_get(environ, "PATH");
	if (!path)
		path = "/bin:/usr/bin";
	while (*path) {
		const char *end = strchr(path, ':');
		size_t len = end ? (size_t)(end - path) : strlen(path);

		if (snprintf(buf, sizeof(buf), "%.*s%s%s", (int)len, path, len ? "/" : "", file) <
		    (int)sizeof(buf) && access(buf, X_OK) == 0)
			return agent_env_takes_agent_at(AT_FDCWD, buf, 0);
		path += len;
		if (*path == ':')
			path++;
	}
	return true;
}
