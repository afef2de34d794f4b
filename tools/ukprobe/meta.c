// SPDX-License-Identifier: MIT
/*
 * meta.c - the records that describe a traced process to the command: the
 * image it runs (REC_EXEC) and the objects it has loaded (REC_OBJ,
 * REC_OBJ_GONE), with their load addresses, so that the command can
 * symbolize the addresses of the hit records, also after the process is
 * gone (as perf records PERF_RECORD_MMAP).
 *
 * They go to a ring of the process's own (RING_META), written by agent code
 * (never a probe handler) under meta_mu.  The command reads a process's
 * meta ring before its data rings, so an address is always described before
 * the first record that needs it.
 */
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "syms.h"

static pthread_mutex_t meta_mu = PTHREAD_MUTEX_INITIALIZER;
static int meta_ring = -1;

/* The objects already announced: (bias, dlname). */
struct announced {
	uintptr_t bias;
	char *name;
};
static struct announced *ann;
static int nann, capann;

/* Append one record (the header's size, kind, ip, ret are the caller's;
 * body follows it); meta_mu held.  Waits for room as the handlers do. */
static void meta_put(struct rec *h, const void *body, size_t blen)
{
	struct uks_ring *r;
	uint64_t head;
	char *p;

	if (meta_ring < 0) {
		meta_ring = agent_claim_ring(RING_META);
		if (meta_ring < 0) {
			agent_note_error("pid %d: no ring for the process's description: "
					 "addresses may show unsymbolized", getpid());
			return;
		}
	}
	r = agent_ring(meta_ring);
	h->size = (uint32_t)REC_ALIGN(sizeof(*h) + blen);
	h->event = 0;
	h->tid = (int32_t)gettid();
	h->cpu = -1;
	h->ts = agent_now_ns();
	p = agent_ring_room(r, agent_ring_data(meta_ring), h->size, &head);
	if (!p)
		return;
	memcpy(p, h, sizeof(*h));
	memcpy(p + sizeof(*h), body, blen);
	memset(p + sizeof(*h) + blen, 0, h->size - sizeof(*h) - blen);
	agent_ring_commit(r, head, h->size);
}

static bool announced(uintptr_t bias, const char *name)
{
	for (int i = 0; i < nann; i++)
		if (ann[i].bias == bias && !strcmp(ann[i].name, name))
			return true;
	return false;
}

static void announce_obj(struct lobj *o, void *arg)
{
	uint64_t body[2 * 16 + PATH_MAX / 8 + 1];
	size_t plen = strlen(o->path) + 1, blen;
	struct rec h = { .kind = REC_OBJ };

	(void)arg;
	if (announced(o->bias, o->dlname) || plen > PATH_MAX)
		return;
	if (nann == capann) {
		int cap = capann ? 2 * capann : 64;
		struct announced *na = realloc(ann, (size_t)cap * sizeof(*na));

		if (!na)
			return;
		ann = na;
		capann = cap;
	}
	ann[nann].bias = o->bias;
	ann[nann].name = strdup(o->dlname);
	if (!ann[nann].name)
		return;
	nann++;
	for (int i = 0; i < o->nranges; i++) {
		body[2 * i] = o->ranges[i].start;
		body[2 * i + 1] = o->ranges[i].end;
	}
	blen = (size_t)o->nranges * 16;
	memcpy((char *)body + blen, o->path, plen);
	h.ip = o->bias;
	h.ret = (uint64_t)o->nranges;
	meta_put(&h, body, blen + plen);
}

void meta_objects_changed(void)
{
	pthread_mutex_lock(&meta_mu);
	lobjs_foreach(announce_obj, NULL);
	pthread_mutex_unlock(&meta_mu);
}

void meta_object_gone(uintptr_t bias)
{
	struct rec h = { .kind = REC_OBJ_GONE, .ip = bias };

	pthread_mutex_lock(&meta_mu);
	for (int i = 0; i < nann; i++) {
		if (ann[i].bias == bias) {
			free(ann[i].name);
			ann[i--] = ann[--nann];
		}
	}
	meta_put(&h, NULL, 0);
	pthread_mutex_unlock(&meta_mu);
}

/* A new image (or a fork child, or an exec that failed): what it runs and
 * everything it has loaded, from scratch. */
void meta_start(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	struct rec h = { .kind = REC_EXEC };

	exe[n > 0 ? n : 0] = '\0';
	pthread_mutex_lock(&meta_mu);
	for (int i = 0; i < nann; i++)
		free(ann[i].name);
	nann = 0;
	h.ip = (uint64_t)getppid();
	meta_put(&h, exe, strlen(exe) + 1);
	pthread_mutex_unlock(&meta_mu);
	meta_objects_changed();
}

/* In a fork child: the meta ring is the parent's; the child's own comes
 * with its first record.  The lock may have been held by a thread that is
 * not in the child. */
void meta_after_fork(void)
{
	pthread_mutex_init(&meta_mu, NULL);
	meta_ring = -1;
	meta_start();
}

/* Before an exec of this image: the command frees the ring once read. */
void meta_retire(void)
{
	pthread_mutex_lock(&meta_mu);
	if (meta_ring >= 0)
		atomic_store(&agent_ring(meta_ring)->state, RING_RETIRED);
	meta_ring = -1;
	pthread_mutex_unlock(&meta_mu);
}

/* Probe at addr placed by the name name (indirect functions: the engine
 * chose the implementation, which may have no symbol of its own). */
void meta_name(uintptr_t addr, const char *name)
{
	struct rec h = { .kind = REC_NAME, .ip = addr };

	pthread_mutex_lock(&meta_mu);
	meta_put(&h, name, strlen(name) + 1);
	pthread_mutex_unlock(&meta_mu);
}
