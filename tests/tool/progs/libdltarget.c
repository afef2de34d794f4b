// SPDX-License-Identifier: MIT
/* The library dl loads late: dl_target() is probed when it loads. */
__attribute__((noinline)) long dl_target(long i)
{
	return i * 5;
}

static long calls_in_ctor;

/* Its constructor calls it once: a probe placed at load sees that too. */
__attribute__((constructor)) static void init(void)
{
	calls_in_ctor = dl_target(1);
}
