// SPDX-License-Identifier: MIT
/* memmap.c - reading /proc/self/maps. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "memmap.h"

int ukp_maps_read(struct ukp_map **out, size_t *n)
{
	FILE *f = fopen("/proc/self/maps", "re");
	struct ukp_map *r = NULL;
	size_t cap = 0, cnt = 0;
	char line[512];

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		uintptr_t s, e;
		char perms[8] = "";
		bool whole = strchr(line, '\n') != NULL;

		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s", &s, &e, perms) >= 2) {
			if (cnt == cap) {
				struct ukp_map *nr;

				cap = cap ? cap * 2 : 256;
				nr = realloc(r, cap * sizeof(*r));
				if (!nr) {
					free(r);
					fclose(f);
					return -ENOMEM;
				}
				r = nr;
			}
			r[cnt].start = s;
			r[cnt].end = e;
			r[cnt].exec = perms[2] == 'x';
			cnt++;
		}
		/* A long line (path) continues: skip the rest of it. */
		while (!whole && fgets(line, sizeof(line), f))
			whole = strchr(line, '\n') != NULL;
	}
	fclose(f);
	*out = r;
	*n = cnt;
	return 0;
}

/* NOTE: ukp_kprobe_mutex protects the cache. */
static struct ukp_map *ukp_exec_cache;
static size_t ukp_exec_n;

static bool ukp_exec_lookup(uintptr_t addr)
{
	for (size_t i = 0; i < ukp_exec_n; i++)
		if (addr >= ukp_exec_cache[i].start && addr < ukp_exec_cache[i].end)
			return ukp_exec_cache[i].exec;
	return false;
}

bool ukp_addr_executable(uintptr_t addr)
{
	struct ukp_map *m;
	size_t n;

	if (ukp_exec_lookup(addr))
		return true;
	if (ukp_maps_read(&m, &n))
		return false;
	free(ukp_exec_cache);
	ukp_exec_cache = m;
	ukp_exec_n = n;
	return ukp_exec_lookup(addr);
}
