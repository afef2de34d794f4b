/* SPDX-License-Identifier: MIT */
/*
 * ukprobes.h - Kernel Probes (Kprobes) for user space.
 *
 * The API is the Linux kernel's <linux/kprobes.h>, unchanged where it can be:
 * a kernel module's probe code ports by changing its #include and printk
 * lines.  See ukprobes(7) and register_kprobe(3).
 *
 * Handler context: on the breakpoint path, pre/post/fault handlers run in
 * signal context (the kernel's "interrupts disabled, don't sleep"): they must
 * not take locks that the probed code may hold and must not call malloc().
 * They may use any register, SSE/AVX included.
 */
#ifndef UKPROBES_H
#define UKPROBES_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define UKP_API __attribute__((visibility("default")))
#else
#define UKP_API
#endif

/* ------------------------------------------------------------------------ */
/* Registers                                                                 */
/* ------------------------------------------------------------------------ */

/*
 * struct pt_regs, kprobe_opcode_t and the register accessors
 * (instruction_pointer(), regs_return_value(), regs_get_kernel_argument(),
 * ...) come from the architecture's header, as the kernel's do from
 * <asm/ptrace.h>: include/arch/ARCH/ukprobes/asm/ptrace.h in the source
 * tree, <ukprobes/asm/ptrace.h> once installed.
 */
#include <ukprobes/asm/ptrace.h>

static inline unsigned long regs_get_register(struct pt_regs *regs,
					      unsigned int offset)
{
	if (offset > sizeof(struct pt_regs) - sizeof(unsigned long))
		return 0;
	return *(unsigned long *)((char *)regs + offset);
}

/**
 * regs_query_register_offset() - offset of a register in struct pt_regs
 * @name: kernel name ("ax", "di", "ip", "r8", "flags", ...), with or without
 *        the leading '%'; the user-space names ("rax", "rdi") are accepted too.
 *
 * Returns the byte offset, or -EINVAL for an unknown name.
 */
UKP_API int regs_query_register_offset(const char *name);

/** regs_query_register_name() - kernel name of the register at @offset. */
UKP_API const char *regs_query_register_name(unsigned int offset);

/* ------------------------------------------------------------------------ */
/* Probes                                                                    */
/* ------------------------------------------------------------------------ */

struct kprobe;

typedef int (*kprobe_pre_handler_t)(struct kprobe *, struct pt_regs *);
typedef void (*kprobe_post_handler_t)(struct kprobe *, struct pt_regs *,
				      unsigned long flags);
/* trapnr is the architecture's trap number (<ukprobes/asm/ptrace.h>
 * says which; on x86: 14 page fault, 13 general protection, 0 divide
 * error, 6 invalid opcode, 17 alignment check). */
typedef int (*kprobe_fault_handler_t)(struct kprobe *, struct pt_regs *,
				      int trapnr);

struct kprobe {
	/* Location: set either addr, or symbol_name (+ offset). */
	kprobe_opcode_t *addr;
	const char *symbol_name;	/* "sym" or "object:sym" */
	unsigned int offset;

	kprobe_pre_handler_t pre_handler;
	kprobe_post_handler_t post_handler;
	kprobe_fault_handler_t fault_handler;

	/* Hits skipped because a handler was already running on the thread. */
	unsigned long nmissed;

	/* KPROBE_FLAG_* */
	unsigned int flags;

	/* Private to ukprobes: zero before the first registration and leave
	 * alone afterwards, like the kernel's hlist/list/ainsn fields. */
	struct kprobe *ukp_next;
	void *ukp_point;
	unsigned long ukp_reserved[4];
};

#define KPROBE_FLAG_GONE	1	/* the probed object was unloaded */
#define KPROBE_FLAG_DISABLED	2	/* registered but not armed */
#define KPROBE_FLAG_OPTIMIZED	4	/* jump-optimized (optprobes) */
#define KPROBE_FLAG_FTRACE	8	/* on a patchable function entry */
/*
 * ukprobes extension: the probe's handlers use general registers only
 * (compiled with -mgeneral-regs-only, calling nothing that uses vector
 * registers).  A jump-optimized probe whose handlers all say so skips
 * saving the vector state (xsave), the fast path.  Kept by registration.
 */
#define KPROBE_FLAG_GPR_ONLY	16

UKP_API int register_kprobe(struct kprobe *p);
UKP_API void unregister_kprobe(struct kprobe *p);
UKP_API int register_kprobes(struct kprobe **kps, int num);
UKP_API void unregister_kprobes(struct kprobe **kps, int num);
UKP_API int enable_kprobe(struct kprobe *p);
UKP_API int disable_kprobe(struct kprobe *p);

static inline int kprobe_gone(struct kprobe *p)
{
	return p->flags & KPROBE_FLAG_GONE;
}

static inline int kprobe_disabled(struct kprobe *p)
{
	return p->flags & (KPROBE_FLAG_DISABLED | KPROBE_FLAG_GONE);
}

static inline int kprobe_optimized(struct kprobe *p)
{
	return p->flags & KPROBE_FLAG_OPTIMIZED;
}

/* ------------------------------------------------------------------------ */
/* Return probes (kretprobes)                                                */
/* ------------------------------------------------------------------------ */

struct kretprobe;

/*
 * One call in flight.  ret_addr is where the probed function returns to;
 * fp the address of the stack slot that held it.  data[] holds
 * kretprobe.data_size bytes, shared by the entry and return handlers.
 */
struct kretprobe_instance {
	struct kretprobe *rp;		/* NULL once the kretprobe is unregistered */
	kprobe_opcode_t *ret_addr;
	void *fp;
	/* Private to ukprobes. */
	void *ukp_pool;
	unsigned long ukp_link;
	unsigned long ukp_flags;
	char data[] __attribute__((aligned(16)));
};

typedef int (*kretprobe_handler_t)(struct kretprobe_instance *, struct pt_regs *);

struct kretprobe {
	struct kprobe kp;		/* the entry probe: set addr or symbol_name */
	kretprobe_handler_t handler;	/* at return; regs_return_value(regs) */
	kretprobe_handler_t entry_handler; /* at entry; non-zero: skip this call */
	int maxactive;			/* <= 0: max(10, 2 * CPUs online) */
	int nmissed;			/* entries with no free instance */
	size_t data_size;
	/* Private to ukprobes. */
	void *ukp_pool;
};

static inline struct kretprobe *get_kretprobe(struct kretprobe_instance *ri)
{
	return __atomic_load_n(&ri->rp, __ATOMIC_ACQUIRE);
}

UKP_API int register_kretprobe(struct kretprobe *rp);
UKP_API void unregister_kretprobe(struct kretprobe *rp);
UKP_API int register_kretprobes(struct kretprobe **rps, int num);
UKP_API void unregister_kretprobes(struct kretprobe **rps, int num);
UKP_API int enable_kretprobe(struct kretprobe *rp);
UKP_API int disable_kretprobe(struct kretprobe *rp);

/* ------------------------------------------------------------------------ */
/* Jprobes (the seeds' older API)                                            */
/* ------------------------------------------------------------------------ */

/*
 * entry has the probed function's prototype; it runs with the function's
 * arguments at its entry and must end with jprobe_return(), which resumes
 * the probed function as if nothing had happened.
 */
struct jprobe {
	struct kprobe kp;
	void *entry;
};

/* As in old kernels: .entry = JPROBE_ENTRY(my_handler) */
#define JPROBE_ENTRY(pentry) ((void *)(pentry))

UKP_API int register_jprobe(struct jprobe *jp);
UKP_API void unregister_jprobe(struct jprobe *jp);
UKP_API int register_jprobes(struct jprobe **jps, int num);
UKP_API void unregister_jprobes(struct jprobe **jps, int num);
UKP_API int enable_jprobe(struct jprobe *jp);
UKP_API int disable_jprobe(struct jprobe *jp);
UKP_API void jprobe_return(void) __attribute__((noreturn));

/* ------------------------------------------------------------------------ */
/* Blacklist                                                                 */
/* ------------------------------------------------------------------------ */

/*
 * NOKPROBE_SYMBOL(fn) - refuse probes anywhere inside function fn.
 * Works in any loaded object (program or shared library): ukprobes reads the
 * _ukprobe_blacklist section of every object it resolves symbols in.
 */
#define UKP_BL_CONCAT2(a, b) a##b
#define UKP_BL_CONCAT(a, b) UKP_BL_CONCAT2(a, b)
#define NOKPROBE_SYMBOL(fname)						\
	static void *const UKP_BL_CONCAT(_ukp_bl_, fname)		\
	__attribute__((used, section("_ukprobe_blacklist"))) =		\
		(void *)&fname

/* ------------------------------------------------------------------------ */
/* Process-wide knobs and listings (debugfs and sysctl in the kernel)       */
/* ------------------------------------------------------------------------ */

/**
 * ukprobes_print_list() - write the registered probes to @out, one line per
 * probe in the format of /sys/kernel/debug/kprobes/list:
 *   "<addr>  k  <object>:<sym>+0x<off>  [DISABLED][OPTIMIZED]"
 * Returns the number of lines written or a negative errno.
 */
UKP_API int ukprobes_print_list(FILE *out);

/**
 * ukprobes_print_blacklist() - write the blacklisted ranges to @out, as
 * /sys/kernel/debug/kprobes/blacklist does: "0x<start>-0x<end>\t<sym>".
 */
UKP_API int ukprobes_print_blacklist(FILE *out);

/**
 * ukprobes_set_enabled() - the kprobes/enabled switch.  0 disarms every
 * probe, keeping each probe's own disabled state; 1 arms again those that
 * are enabled.  Returns 0 or a negative errno.
 */
UKP_API int ukprobes_set_enabled(int enabled);
UKP_API int ukprobes_enabled(void);

/**
 * ukprobes_set_optimization() - the debug.kprobes_optimization sysctl.
 * 0 unoptimizes every optimized probe (they go on as breakpoint probes);
 * 1 (the default) lets the background optimizer optimize them again.
 */
UKP_API int ukprobes_set_optimization(int on);
UKP_API int ukprobes_optimization(void);

/**
 * ukprobes_wait_optimizer() - wait until the background optimizer has
 * handled every probe queued so far (the kernel's wait_for_kprobe_optimizer()).
 * Probes it could not prove safe to patch yet stay queued; returns the
 * number still waiting.
 */
UKP_API int ukprobes_wait_optimizer(void);

/* Logging: like libbpf_set_print().  Returns the previous callback. */
enum ukprobes_print_level {
	UKPROBES_WARN,
	UKPROBES_INFO,
	UKPROBES_DEBUG,
};
typedef int (*ukprobes_print_fn_t)(enum ukprobes_print_level level,
				   const char *fmt, va_list ap);
UKP_API ukprobes_print_fn_t ukprobes_set_print(ukprobes_print_fn_t fn);

#ifdef __cplusplus
}
#endif

#endif /* UKPROBES_H */
