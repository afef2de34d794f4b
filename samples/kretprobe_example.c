// SPDX-License-Identifier: GPL-2.0-only
/*
 * kretprobe_example.c
 *
 * Here's a sample kernel module showing the use of return probes to
 * report the return value and total time taken for probed function
 * to run.
 *
 * usage: insmod kretprobe_example.ko func=<func_name>
 *
 * If no func_name is specified, kernel_clone is instrumented
 *
 * For more information on theory of operation of kretprobes, see
 * Documentation/trace/kprobes.rst
 *
 * Build and insert the kernel module as done in the kprobe example.
 * You will see the trace data in /var/log/messages and on the console
 * whenever the probed function returns. (Some messages may be suppressed
 * if syslogd is configured to eliminate duplicate messages.)
 */
/*
 * ukprobes: this is the Linux kernel's samples/kprobes/kretprobe_example.c
 * ported to user space, with the older kretprobe-example.c of
 * Documentation/kprobes.txt folded in: as that one reported the calls of
 * sys_open() that failed, this one reports the calls of libc's open64()
 * (which open() and fopen() go through) that fail, with the path and the
 * time taken, both kept in ri->data by the entry handler.  Changes:
 *  - the #include lines (kernel_compat.h and ktime_compat.h);
 *  - the default function: "libc.so.6:open64" ("object:symbol", as kprobe
 *    events write it), not kernel_clone;
 *  - the entry handler keeps the path argument too; a process has no
 *    kernel threads to skip;
 *  - the return handler reports failures only (the return value is -1 and
 *    errno says why: the handler runs right after the return, on the
 *    caller's thread, so errno is the function's).
 *
 *   kretprobe_demo                       insmod kretprobe_example.ko
 *   kretprobe_demo func=libc.so.6:access insmod ... func=<func_name>
 *
 * func must return an int (negative on failure) and take a path as its
 * first argument: open64, creat64, access, unlink, mkdir ...
 */

#include "kernel_compat.h"	/* was <linux/kernel.h> and <linux/module.h> */
#include "ktime_compat.h"	/* was <linux/ktime.h> */
#include <ukprobes.h>		/* was <linux/kprobes.h> */
#include <string.h>		/* strerrorname_np() */

static char func_name[KSYM_NAME_LEN] = "libc.so.6:open64";
module_param_string(func, func_name, KSYM_NAME_LEN, 0644);
MODULE_PARM_DESC(func, "Function to kretprobe; this module will report the"
			" function's execution time");

/* per-instance private data */
struct my_data {
	ktime_t entry_stamp;
	const char *path;
};

/* Here we use the entry_hanlder to timestamp function entry */
static int entry_handler(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct my_data *data;

	data = (struct my_data *)ri->data;
	data->entry_stamp = ktime_get();
	/* open64(path, flags, mode): the first argument */
	data->path = (const char *)regs_get_kernel_argument(regs, 0);
	return 0;
}
NOKPROBE_SYMBOL(entry_handler);

/*
 * Return-probe handler: Log the return value and duration of the calls that
 * fail. Duration may turn out to be zero consistently, depending upon the
 * granularity of time accounting on the platform.
 */
static int ret_handler(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	int retval = regs_return_value(regs);
	struct my_data *data = (struct my_data *)ri->data;
	s64 delta;
	ktime_t now;

	if (retval >= 0)
		return 0;
	now = ktime_get();
	delta = ktime_to_ns(ktime_sub(now, data->entry_stamp));
	pr_info("%s(\"%s\") returned %d (errno %s) and took %lld ns to execute\n",
		func_name, data->path, retval, strerrorname_np(errno),
		(long long)delta);
	return 0;
}
NOKPROBE_SYMBOL(ret_handler);

static struct kretprobe my_kretprobe = {
	.handler		= ret_handler,
	.entry_handler		= entry_handler,
	.data_size		= sizeof(struct my_data),
	/* Probe up to 20 instances concurrently. */
	.maxactive		= 20,
};

static int __init kretprobe_init(void)
{
	int ret;

	my_kretprobe.kp.symbol_name = func_name;
	ret = register_kretprobe(&my_kretprobe);
	if (ret < 0) {
		pr_err("register_kretprobe failed, returned %d\n", ret);
		return ret;
	}
	pr_info("Planted return probe at %s: %p\n",
			my_kretprobe.kp.symbol_name, my_kretprobe.kp.addr);
	return 0;
}

static void __exit kretprobe_exit(void)
{
	unregister_kretprobe(&my_kretprobe);
	pr_info("kretprobe at %p unregistered\n", my_kretprobe.kp.addr);

	/* nmissed > 0 suggests that maxactive was set too low. */
	pr_info("Missed probing %d instances of %s\n",
		my_kretprobe.nmissed, my_kretprobe.kp.symbol_name);
}

module_init(kretprobe_init)
module_exit(kretprobe_exit)
MODULE_LICENSE("GPL");
