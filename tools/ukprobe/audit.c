// SPDX-License-Identifier: MIT
/*
 * audit.c - libukprobe-audit.so, the run-time linker audit module (LD_AUDIT,
 * rtld-audit(7)) that tells the agent when objects are loaded.
 *
 * The module lives in a link-map namespace of its own, so it finds the
 * agent through the main program's scope: dlsym() with the main program's
 * link map as the handle (the first object of the base namespace
 * la_objopen() reports) finds the agent's exported symbols, since the
 * preloaded agent is in that scope.  After each dlopen(), when the list of
 * objects is consistent again (la_activity(LA_ACT_CONSISTENT)) and before
 * the new objects' constructors run, it calls ukprobe_agent_objects_changed()
 * once the agent says it is ready.  The startup objects are handled by the
 * agent's own constructor.  When dlclose() unloads objects, la_objclose()
 * tells the agent before they are unmapped.
 *
 * la_objopen() returns 0: no symbol binding is audited, so the program's
 * PLT calls do not go through the audit trampolines.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>

#define API __attribute__((visibility("default")))

static struct link_map *main_map;
static int *agent_ready;
static void (*agent_changed)(void);
static void (*agent_closing)(const char *name, uintptr_t base);
static int looked_up;
static int exiting;	/* _dl_fini() is closing every object */

API unsigned int la_version(unsigned int version)
{
	(void)version;
	return LAV_CURRENT;
}

API unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
	*cookie = (uintptr_t)map;
	if (lmid == LM_ID_BASE && !main_map)
		main_map = map;
	return 0;
}

static void look_up(void)
{
	if (looked_up || !main_map)
		return;
	/* The main program's search list is complete by the first
	 * consistent state (startup), before anything is relocated: the
	 * lookup needs only the symbol tables. */
	looked_up = 1;
	agent_ready = (int *)dlsym(main_map, "ukprobe_agent_ready");
	agent_changed = (void (*)(void))dlsym(main_map, "ukprobe_agent_objects_changed");
	agent_closing = (void (*)(const char *, uintptr_t))
		dlsym(main_map, "ukprobe_agent_object_closing");
}

static int ready(void)
{
	return agent_ready && __atomic_load_n(agent_ready, __ATOMIC_ACQUIRE);
}

/*
 * An object that dlclose() unloads, still mapped (its destructors have
 * run): the agent writes the records that point into it and takes its
 * probes out (they are placed again if it is loaded again).  Not at exit:
 * _dl_fini() reports every object closed too, the main program first
 * (it depends on all the others), which dlclose() never unloads.
 */
API unsigned int la_objclose(uintptr_t *cookie)
{
	struct link_map *map = (struct link_map *)*cookie;

	if (map == main_map)
		exiting = 1;
	if (!exiting && map && ready() && agent_closing)
		agent_closing(map->l_name, map->l_addr);
	return 0;
}

API void la_activity(uintptr_t *cookie, unsigned int flag)
{
	(void)cookie;
	if (flag != LA_ACT_CONSISTENT || !main_map)
		return;
	look_up();
	if (ready() && agent_changed)
		agent_changed();
}
