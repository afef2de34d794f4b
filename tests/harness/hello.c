// SPDX-License-Identifier: MIT
/*
 * hello.c - the smallest proof that a cross build links and runs: built by
 * `make cross-smoke ARCH=...` for ARCH, against the sysroot's libelf and
 * zlib (SMOKE_LIBS; not where the sysroot has none), and run through qemu.
 * It reads its own ELF header with libelf and round-trips a buffer through
 * zlib, so a wrong sysroot shows as a failure, not as a greeting.
 */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#ifdef SMOKE_LIBS
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>
#include <zlib.h>
#endif

int main(void)
{
	struct utsname u;

	uname(&u);
	printf("hello: running as %s (pointer %zu bytes, %s-endian)\n", u.machine, sizeof(void *),
	       *(const unsigned char *)&(const unsigned int){ 1 } ? "little" : "big");
#ifdef SMOKE_LIBS
	if (elf_version(EV_CURRENT) == EV_NONE) {
		printf("hello: libelf: %s\n", elf_errmsg(-1));
		return 1;
	}
	int fd = open("/proc/self/exe", O_RDONLY);
	Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	GElf_Ehdr eh;

	if (!e || !gelf_getehdr(e, &eh)) {
		printf("hello: libelf cannot read /proc/self/exe: %s\n", elf_errmsg(-1));
		return 1;
	}
	printf("hello: libelf reads its own ELF header: class %d, machine %d\n",
	       gelf_getclass(e), eh.e_machine);
	elf_end(e);
	close(fd);

	const char text[] = "ukprobes cross smoke test, ukprobes cross smoke test";
	unsigned char packed[256], back[256];
	uLongf np = sizeof(packed), nb = sizeof(back);

	if (compress(packed, &np, (const Bytef *)text, sizeof(text)) != Z_OK ||
	    uncompress(back, &nb, packed, np) != Z_OK || nb != sizeof(text) ||
	    memcmp(back, text, nb)) {
		printf("hello: zlib round trip failed\n");
		return 1;
	}
	printf("hello: zlib %s: %zu bytes -> %lu -> %lu\n", zlibVersion(), sizeof(text),
	       (unsigned long)np, (unsigned long)nb);
#else
	printf("hello: built without libelf and zlib (the sysroot has none for this target)\n");
#endif
	return 0;
}
