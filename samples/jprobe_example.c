// SPDX-License-Identifier: GPL-2.0-only
/*
 * Here's a sample kernel module showing the use of jprobes to dump
 * the arguments of do_fork().
 *
 * For more information on theory of operation of jprobes, see
 * Documentation/kprobes.txt
 *
 * Build and insert the kernel module as done in the kprobe example.
 * You will see the trace data in /var/log/messages and on the
 * console whenever do_fork() is invoked to create a new process.
 * (Some messages may be suppressed if syslogd is configured to
 * eliminate duplicate messages.)
 */
/*
 * ukprobes: this is the Linux kernel's samples/kprobes/jprobe_example.c
 * (removed with jprobes in Linux 4.15), ported to user space.  A process
 * creates processes with libc's posix_spawn() rather than do_fork(), so the
 * jprobe goes there and the proxy routine has posix_spawn()'s arguments.
 * Changes: the #include lines, the probed function and the proxy's
 * prototype and message.  Everything else is the kernel's.
 *
 *   jprobe_demo                 insmod jprobe_example.ko
 */

#include "kernel_compat.h"	/* was <linux/kernel.h> and <linux/module.h> */
#include <ukprobes.h>		/* was <linux/kprobes.h> */
#include <spawn.h>		/* posix_spawn()'s types */

/*
 * Jumper probe for posix_spawn (do_fork in the kernel).
 * Mirror principle enables access to arguments of the probed routine
 * from the probe handler.
 */

/* Proxy routine having the same arguments as actual posix_spawn() routine */
static int jposix_spawn(pid_t *pid, const char *path,
			const posix_spawn_file_actions_t *file_actions,
			const posix_spawnattr_t *attrp,
			char *const argv[], char *const envp[])
{
	pr_info("jprobe: path = %s, argv[0] = %s, argv[1] = %s, "
		"file_actions = 0x%lx, attrp = 0x%lx\n", path, argv[0],
		argv[1] ? argv[1] : "(null)", (unsigned long)file_actions,
		(unsigned long)attrp);

	/* Always end with a call to jprobe_return(). */
	jprobe_return();
	return 0;
}

static struct jprobe my_jprobe = {
	.entry			= jposix_spawn,
	.kp = {
		.symbol_name	= "libc.so.6:posix_spawn",
	},
};

static int __init jprobe_init(void)
{
	int ret;

	ret = register_jprobe(&my_jprobe);
	if (ret < 0) {
		printk(KERN_INFO "register_jprobe failed, returned %d\n", ret);
		return -1;
	}
	printk(KERN_INFO "Planted jprobe at %p, handler addr %p\n",
	       my_jprobe.kp.addr, my_jprobe.entry);
	return 0;
}

static void __exit jprobe_exit(void)
{
	unregister_jprobe(&my_jprobe);
	printk(KERN_INFO "jprobe at %p unregistered\n", my_jprobe.kp.addr);
}

module_init(jprobe_init)
module_exit(jprobe_exit)
MODULE_LICENSE("GPL");
