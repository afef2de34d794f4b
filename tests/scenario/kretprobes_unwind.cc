// SPDX-License-Identifier: MIT
/*
 * kretprobes_unwind.cc - the C++ side of kretprobes_unwind.c: functions
 * that throw, catch, run destructors, and are cancelled or exit inside
 * their frames.  The tests themselves are C (they build with either test
 * harness); these are what they probe and call.
 */
#include <pthread.h>
#include <unistd.h>

#include <atomic>

#define NOINLINE __attribute__((noinline, noclone, used))

static std::atomic<unsigned long> dtors;
static std::atomic<int> parked;

struct Guard {
	~Guard() { dtors++; }
};

struct Boom {
	long v;
};

extern "C" {

/* Destructors of Guard run so far, in this process. */
unsigned long kru_dtors(void)
{
	return dtors.load();
}

/* Threads parked in d_inner() so far; kru_unpark() starts again. */
int kru_parked(void)
{
	return parked.load();
}

void kru_unpark(void)
{
	parked = 0;
}

/* ---- exceptions: c_catcher -> b_middle -> a_thrower ------------------- */

/* Throws Boom{x} for x >= 0, else returns -x. */
NOINLINE long a_thrower(long x)
{
	if (x >= 0)
		throw Boom{ x };
	return -x;
}

/* a_thrower(x) + 1, with a destructor on the way. */
NOINLINE long b_middle(long x)
{
	Guard g;
	long (*volatile f)(long) = a_thrower;

	return f(x) + 1;
}

/* b_middle(x), or 1000 + x when it threw. */
NOINLINE long c_catcher(long x)
{
	long (*volatile f)(long) = b_middle;

	try {
		return f(x);
	} catch (const Boom &b) {
		return 1000 + b.v;
	}
}

/* ---- pthread_cancel: kru_cancel_me -> e_outer -> d_inner ---------------- */

/* Parks in pause() (a cancellation point) forever. */
NOINLINE long d_inner(long x)
{
	Guard g;

	parked++;
	for (;;)
		pause();
	return x;
}

NOINLINE long e_outer(long x)
{
	Guard g;
	long (*volatile f)(long) = d_inner;

	return f(x) + 1;
}

/* A thread's start: three destructors when it is cancelled. */
void *kru_cancel_me(void *)
{
	Guard g;
	long (*volatile f)(long) = e_outer;

	f(1);
	return NULL;
}

/* ---- pthread_exit: kru_exit_me -> f_exits ------------------------------ */

/* pthread_exit(x) when x != 0. */
NOINLINE long f_exits(long x)
{
	Guard g;

	if (x)
		pthread_exit((void *)(intptr_t)x);
	return 0;
}

/* A thread's start: f_exits(arg); two destructors when it exits there. */
void *kru_exit_me(void *arg)
{
	Guard g;
	long (*volatile f)(long) = f_exits;

	f((long)(intptr_t)arg);
	return NULL;
}

} /* extern "C" */
