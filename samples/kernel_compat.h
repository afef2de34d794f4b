/* SPDX-License-Identifier: MIT */
/*
 * kernel_compat.h - just enough of <linux/kernel.h> and <linux/module.h> for
 * the kernel's samples/kprobes/ to build, unchanged but for their #include
 * lines, as code that probes the process it is linked into.
 *
 *   kernel                              here
 *   printk(), pr_info(), pr_err() ...   formatted into a stack buffer and
 *                                       written with write(2): safe in a
 *                                       probe handler (signal context), where
 *                                       stdio is not
 *   KERN_ERR and more urgent            stderr; the other levels stdout
 *   module_init(fn), module_exit(fn)    define ukp_module_init() and
 *                                       ukp_module_exit(), which the program
 *                                       calls: insmod / rmmod
 *   module_param_string(name, ...)      set by ukp_module_param("name=value"),
 *                                       as insmod's arguments
 *   __init, __exit, __kprobes,          nothing
 *   MODULE_LICENSE() and friends
 *   CONFIG_X86 (CONFIG_ARM64 ...)       defined for the architecture built for
 */
#ifndef UKP_KERNEL_COMPAT_H
#define UKP_KERNEL_COMPAT_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Configuration                                                             */
/* ------------------------------------------------------------------------ */

#if defined(__x86_64__)
#define CONFIG_X86 1
#define CONFIG_X86_64 1
#elif defined(__aarch64__)
#define CONFIG_ARM64 1
#endif

/* ------------------------------------------------------------------------ */
/* printk                                                                    */
/* ------------------------------------------------------------------------ */

#define KERN_SOH	"\001"
#define KERN_EMERG	KERN_SOH "0"
#define KERN_ALERT	KERN_SOH "1"
#define KERN_CRIT	KERN_SOH "2"
#define KERN_ERR	KERN_SOH "3"
#define KERN_WARNING	KERN_SOH "4"
#define KERN_NOTICE	KERN_SOH "5"
#define KERN_INFO	KERN_SOH "6"
#define KERN_DEBUG	KERN_SOH "7"
#define KERN_DEFAULT	""
#define KERN_CONT	KERN_SOH "c"

/*
 * printk() may be called from a probe handler, that is from a signal handler
 * that interrupted the program anywhere, maybe inside stdio with its lock
 * held: so no stdio and no malloc here.  glibc's vsnprintf() allocates
 * nothing for the conversions the samples use (%s %d %p %lx).
 */
/*
 * The kernel's %p prints the pointer as 16 hex digits without "0x" (the
 * samples write "0x%p"); glibc's adds "0x".  Rewrite plain %p as %016lx: a
 * pointer and an unsigned long are passed alike on every Linux ABI.
 * Extensions such as %pS are left alone.
 */
__attribute__((unused))
static const char *ukp_kernel_fmt(char *out, size_t size, const char *fmt)
{
	size_t o = 0;
	const char *s;

	for (s = fmt; *s; s++) {
		if (o + 7 >= size)
			return fmt;		/* too long: leave it as it is */
		if (s[0] == '%' && s[1] == '%') {
			out[o++] = *s++;
			out[o++] = *s;
		} else if (s[0] == '%' && s[1] == 'p' &&
			   !((s[2] >= 'a' && s[2] <= 'z') ||
			     (s[2] >= 'A' && s[2] <= 'Z'))) {
			memcpy(out + o, "%016lx", 6);
			o += 6;
			s++;
		} else {
			out[o++] = *s;
		}
	}
	out[o] = '\0';
	return out;
}

__attribute__((format(printf, 1, 2), unused))
static int printk(const char *fmt, ...)
{
	char buf[512], kfmt[256];
	const char *kf;
	int level = 4, fd, saved_errno = errno;
	size_t len, done = 0;
	va_list ap;
	int n;

	if (fmt[0] == KERN_SOH[0] && fmt[1]) {
		if (fmt[1] >= '0' && fmt[1] <= '7')
			level = fmt[1] - '0';
		fmt += 2;
	}
	kf = ukp_kernel_fmt(kfmt, sizeof(kfmt), fmt);
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), kf, ap);
	va_end(ap);
	if (n < 0)
		goto out;
	len = (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1;
	fd = level <= 3 ? STDERR_FILENO : STDOUT_FILENO;
	while (done < len) {
		ssize_t w = write(fd, buf + done, len - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		done += (size_t)w;
	}
out:
	errno = saved_errno;
	return n;
}

#ifndef pr_fmt
#define pr_fmt(fmt) fmt
#endif

#define pr_emerg(fmt, ...)	printk(KERN_EMERG pr_fmt(fmt), ##__VA_ARGS__)
#define pr_alert(fmt, ...)	printk(KERN_ALERT pr_fmt(fmt), ##__VA_ARGS__)
#define pr_crit(fmt, ...)	printk(KERN_CRIT pr_fmt(fmt), ##__VA_ARGS__)
#define pr_err(fmt, ...)	printk(KERN_ERR pr_fmt(fmt), ##__VA_ARGS__)
#define pr_warn(fmt, ...)	printk(KERN_WARNING pr_fmt(fmt), ##__VA_ARGS__)
#define pr_notice(fmt, ...)	printk(KERN_NOTICE pr_fmt(fmt), ##__VA_ARGS__)
#define pr_info(fmt, ...)	printk(KERN_INFO pr_fmt(fmt), ##__VA_ARGS__)
#define pr_cont(fmt, ...)	printk(KERN_CONT fmt, ##__VA_ARGS__)
#define pr_debug(fmt, ...)	do { if (0) printk(KERN_DEBUG pr_fmt(fmt), ##__VA_ARGS__); } while (0)

/* ------------------------------------------------------------------------ */
/* Modules                                                                   */
/* ------------------------------------------------------------------------ */

#define __init
#define __exit
#define __kprobes

#define MODULE_LICENSE(s)	static const char ukp_module_license[] __attribute__((used)) = s
#define MODULE_AUTHOR(s)	static const char ukp_module_author[] __attribute__((used)) = s
#define MODULE_DESCRIPTION(s)	static const char ukp_module_description[] __attribute__((used)) = s

/* The "module" is loaded and unloaded by the program it is linked into. */
int ukp_module_init(void);
void ukp_module_exit(void);

#define module_init(fn)		int ukp_module_init(void) { return fn(); }
#define module_exit(fn)		void ukp_module_exit(void) { fn(); }

/*
 * Module parameters: one descriptor per parameter in section "ukp_modparam",
 * which the linker brackets with __start_ukp_modparam/__stop_ukp_modparam,
 * as the kernel's __param section.
 */
struct ukp_modparam {
	const char *name;
	char *string;
	size_t maxlen;
};

#define module_param_string(name, string, len, perm)			\
	static const struct ukp_modparam ukp_modparam_##name		\
	__attribute__((used, section("ukp_modparam"),			\
		       aligned(sizeof(void *)))) = { #name, string, len }

extern const struct ukp_modparam __start_ukp_modparam[] __attribute__((weak));
extern const struct ukp_modparam __stop_ukp_modparam[] __attribute__((weak));

/**
 * ukp_module_param() - set a parameter from "name=value", as insmod does.
 * Returns 0, -ENOENT for an unknown parameter ("Unknown parameter" in the
 * kernel's log), -EINVAL without '=', -ENOSPC when the value is too long.
 */
__attribute__((unused))
static int ukp_module_param(const char *arg)
{
	const char *eq = strchr(arg, '=');
	const struct ukp_modparam *p;

	if (!eq)
		return -EINVAL;
	for (p = __start_ukp_modparam; p && p < __stop_ukp_modparam; p++) {
		if (strlen(p->name) != (size_t)(eq - arg) ||
		    strncmp(p->name, arg, (size_t)(eq - arg)) != 0)
			continue;
		if (strlen(eq + 1) + 1 > p->maxlen)
			return -ENOSPC;
		strcpy(p->string, eq + 1);
		return 0;
	}
	return -ENOENT;
}

#endif /* UKP_KERNEL_COMPAT_H */
