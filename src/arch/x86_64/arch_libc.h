/* SPDX-License-Identifier: MIT */
/*
 * arch_libc.h - glibc's symbol versions on x86-64, for the functions
 * ukprobes interposes (their nodes are in libc.map beside this file):
 * the dynamic linker binds a versioned reference only to a definition of
 * the same version.
 */
#ifndef UKP_ARCH_LIBC_H
#define UKP_ARCH_LIBC_H

/* The first version of every function this glibc has had since its port. */
#define UKP_GLIBC_BASE			"GLIBC_2.2.5"
/* posix_spawn() and posix_spawnp() got a second version (no /bin/sh on
 * ENOEXEC): 1 and its name, or 0. */
#define UKP_GLIBC_SPAWN_NEW		1
#define UKP_GLIBC_SPAWN_NEW_VERSION	"GLIBC_2.15"

#endif
