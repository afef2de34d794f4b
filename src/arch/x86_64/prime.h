/* SPDX-License-Identifier: MIT */
/*
 * prime.h - the prime stubs (opt_entry.S), for C and assembly.
 *
 * A kretprobe's return costs a mispredicted `ret`: the function returns to
 * a return stub, not where the return stack buffer says.  An optimized
 * entry can do better.  Its detour, after the handlers, jumps to a prime
 * stub of its own, which jumps to where the entry left the address the
 * kretprobe chose: the prime address of the call's return stub
 * (arch_ret_stub_prime(), ret_stubs.c), or ukp_prime_none.  There a `call`
 * over one instruction makes the buffer's top the stub's return address,
 * which is what the kretprobe put in place of the real one; the pushed copy
 * is dropped and the detour goes on where the entry also left its way on.
 * So the function's `ret` is predicted, and so is the trampoline's own
 * `ret` to the caller (the buffer holds the caller's entry right below).
 *
 * The entry (opt_entry.S) leaves both addresses at its link, 40 and 32
 * bytes below the stack pointer it returns with, inside the red zone the
 * detour keeps free (it runs 128 bytes below the program's), where no
 * signal frame goes; the `call` writes only the slot 8 bytes below.
 *
 * The detour's header carries a nonzero T when it primes (the value is
 * its prime stub's address, of no other use now).  PRIME_STUBS of each
 * kind: the kinds no longer differ, opt.c still allocates by kind, and
 * still sets ukp_prime_cont[], which nothing reads now.
 */
#ifndef UKP_X86_PRIME_H
#define UKP_X86_PRIME_H

#define PRIME_STUBS		512	/* of each kind */
#define PRIME_STUB_SIZE		8
#define PRIME_T_OFFSET		0
#define PRIME_TARGET_BELOW	40	/* the prime address, below %rsp */
#define PRIME_CONT_BELOW	32	/* the detour's way on, below %rsp */

#endif
