/* SPDX-License-Identifier: MIT */
/*
 * ktime_compat.h - just enough of <linux/ktime.h> and <linux/kallsyms.h> for
 * the kernel's samples/kprobes/kretprobe_example.c, next to kernel_compat.h.
 *
 *   kernel                        here
 *   ktime_t, ktime_get()          nanoseconds of CLOCK_MONOTONIC; reading it
 *                                 is async-signal-safe (vDSO), so an entry
 *                                 handler (signal context) may call it
 *   ktime_sub(), ktime_to_ns()    the same arithmetic
 *   KSYM_NAME_LEN                 room for "object:symbol"
 *   MODULE_PARM_DESC()            nothing
 */
#ifndef UKP_KTIME_COMPAT_H
#define UKP_KTIME_COMPAT_H

#include <errno.h>
#include <time.h>

typedef long long ktime_t;
typedef long long s64;

__attribute__((unused))
static ktime_t ktime_get(void)
{
	struct timespec ts;
	int saved_errno = errno;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	errno = saved_errno;
	return (ktime_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#define ktime_sub(a, b)		((a) - (b))
#define ktime_to_ns(kt)		((s64)(kt))

#ifndef KSYM_NAME_LEN
#define KSYM_NAME_LEN		512
#endif

#ifndef MODULE_PARM_DESC
#define MODULE_PARM_DESC(name, desc)
#endif

#endif /* UKP_KTIME_COMPAT_H */
