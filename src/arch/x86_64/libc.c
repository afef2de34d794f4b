// SPDX-License-Identifier: MIT
/*
 * libc.c - what the core must know of glibc on x86-64 (arch.h): its signal
 * return trampoline, and how its dynamic linker calls IFUNC resolvers.
 */
#include <stdint.h>

#include "arch.h"

/* __restore_rt: "mov $15,%rax; syscall" (rt_sigreturn). */
static const char *const x86_sigreturn_names[] = { "__restore_rt", NULL };
static const unsigned char x86_sigreturn_code[] = {
	0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05
};
static const struct arch_sigreturn x86_sigreturn = {
	.names = x86_sigreturn_names,
	.code = x86_sigreturn_code,
	.len = sizeof(x86_sigreturn_code),
};

const struct arch_sigreturn *arch_sigreturn_trampoline(void)
{
	return &x86_sigreturn;
}

/* The dynamic linker calls x86-64 resolvers with no arguments (they read
 * the CPU's features through cpuid themselves). */
uintptr_t arch_call_ifunc_resolver(uintptr_t resolver)
{
	void *(*fn)(void) = (void *(*)(void))resolver;

	return (uintptr_t)fn();
}
