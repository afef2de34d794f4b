/* SPDX-License-Identifier: MIT */
/*
 * prime.h - the prime stubs (opt_entry.S), for C and assembly.
 *
 * A kretprobe's return costs a mispredicted `ret`: the function returns to
 * the trampoline, not where the return stack buffer says.  An optimized
 * entry can do better: its detour, after the handlers, jumps to a stub of
 * its own that `call`s over one instruction, so the buffer's top becomes
 * the address after that call ("T"), then drops the pushed copy and jumps
 * back into the detour.  The entry handler put T in place of the return
 * address, so the function's `ret` is predicted; T jumps to the trampoline,
 * whose own `ret` to the caller is predicted too (the buffer holds the
 * caller's entry right below).
 *
 * T must be an address in our text that outlives every call in flight, so
 * the stubs are a fixed array in the library: PRIME_STUBS of them whose T
 * goes to the trampoline that keeps %xmm0/1, then PRIME_STUBS whose T goes
 * to the general-registers-only one.  Stub k's way back into its detour
 * is ukp_prime_cont[k], set when the detour is built.
 */
#ifndef UKP_X86_PRIME_H
#define UKP_X86_PRIME_H

#define PRIME_STUBS		512	/* of each kind */
#define PRIME_STUB_SIZE		32
#define PRIME_T_OFFSET		5	/* T: after the 5-byte call */

#endif
