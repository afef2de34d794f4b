// SPDX-License-Identifier: MIT
/*
 * foreign_uprobe.c - run a test program as if bpftrace or perf probe had a
 * Linux uprobe on this process's libc.
 *
 * Where a uprobe is installed in a process's memory, the kernel takes every
 * int3 of that process through its uprobes path: the SIGTRAP still has
 * si_code SI_KERNEL, but the signal frame's trapno is 0, not 3.  With
 * UKP_TEST_UPROBE set in the environment, this constructor places such a
 * uprobe (perf_event_open() of the "uprobe" PMU, on this process only) on a
 * libc function the tests never call, and proves it is live by calling that
 * function once and reading the event's count.
 *
 *   UKP_TEST_UPROBE=require   no uprobe, no test: the program aborts
 *   UKP_TEST_UPROBE=try       place it if the kernel lets us (root)
 *
 * The event stays open for the life of the process (every Criterion worker
 * runs this constructor again: a uprobe of one process is not inherited
 * across exec).
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "scn_util.h"

int scn_foreign_uprobe_fd = -1;

struct libc_find {
	uintptr_t addr;		/* in: the function */
	char path[512];		/* out */
	uint64_t offset;	/* out: file offset of the function */
	int found;
};

static int find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct libc_find *f = arg;
	uintptr_t vaddr;

	(void)size;
	if (f->addr < info->dlpi_addr)
		return 0;
	vaddr = f->addr - info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || vaddr < ph->p_vaddr ||
		    vaddr >= ph->p_vaddr + ph->p_memsz)
			continue;
		snprintf(f->path, sizeof(f->path), "%s", info->dlpi_name);
		f->offset = vaddr - ph->p_vaddr + ph->p_offset;
		f->found = 1;
		return 1;
	}
	return 0;
}

static int read_uprobe_type(void)
{
	FILE *fp = fopen("/sys/bus/event_source/devices/uprobe/type", "r");
	int type = -1;

	if (!fp)
		return -1;
	if (fscanf(fp, "%d", &type) != 1)
		type = -1;
	fclose(fp);
	return type;
}

/* A libc function no test calls: the uprobe's own site. */
typedef pid_t (*getsid_fn)(pid_t);

__attribute__((constructor)) static void scn_foreign_uprobe(void)
{
	const char *mode = getenv("UKP_TEST_UPROBE");
	struct perf_event_attr attr;
	struct libc_find f = { 0 };
	getsid_fn volatile fn;
	uint64_t count = 0;
	int type, fd;
	const char *why;

	if (!mode || !*mode)
		return;
	fn = (getsid_fn)dlsym(RTLD_DEFAULT, "getsid");
	why = "getsid() not found";
	if (!fn)
		goto fail;
	f.addr = (uintptr_t)fn;
	dl_iterate_phdr(find_object, &f);
	why = "libc's path not found";
	if (!f.found || !f.path[0])
		goto fail;
	why = "no uprobe PMU";
	if ((type = read_uprobe_type()) < 0)
		goto fail;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = (unsigned int)type;
	attr.config1 = (uint64_t)(uintptr_t)f.path;	/* uprobe_path */
	attr.config2 = f.offset;			/* probe_offset */
	fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
	why = "perf_event_open(uprobe) refused (needs CAP_PERFMON or root)";
	if (fd < 0)
		goto fail;
	fn(0);
	why = "the uprobe did not fire";
	if (read(fd, &count, sizeof(count)) != (ssize_t)sizeof(count) || count != 1) {
		close(fd);
		goto fail;
	}
	scn_foreign_uprobe_fd = fd;
	return;
fail:
	if (strcmp(mode, "require") == 0) {
		fprintf(stderr, "UKP_TEST_UPROBE=require: %s\n", why);
		abort();
	}
}
