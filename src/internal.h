/* SPDX-License-Identifier: MIT */
/*
 * internal.h - hidden declarations shared by the generic core.
 *
 * Lock order (outer first), as the kernel nests kprobe_mutex -> text_mutex:
 *   ukp_kprobe_mutex  (registry, arming, knobs)       kprobes.c
 *     -> symbols mutex (symbol caches)                 symbols.c
 *     -> ukp_slot_mutex (slot pages)                   insn_slot.c
 *     -> ukp_signal_mutex (the program's handlers)     signal_chain.c
 * The trap path takes none of them.
 */
#ifndef UKP_INTERNAL_H
#define UKP_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <ucontext.h>

#include <ukprobes.h>

#include "arch_insn.h"
#include "log.h"

#define UKP_HIDDEN __attribute__((visibility("hidden")))
#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* ------------------------------------------------------------------------ */
/* Probe points                                                              */
/* ------------------------------------------------------------------------ */

/*
 * One probed address.  Every struct kprobe registered at that address hangs
 * off 'probes' (the kernel's aggregate probe).  Readers on the trap path walk
 * the list with acquire loads and no lock; writers change it with
 * ukp_kprobe_mutex held and free nothing before a grace period.
 */
struct ukp_point {
	uintptr_t addr;
	unsigned long gen;		/* unique per point, never reused */
	struct kprobe *_Atomic probes;	/* NOTE: change only with ukp_kprobe_mutex */
	atomic_uint flags;		/* UKP_PT_* */
	unsigned int nprobes;
	bool armed;			/* int3 written; ukp_kprobe_mutex */
	/* The loaded object the probe is in (0: none known), to notice when it
	 * is unloaded (the kernel's module notifier). */
	uintptr_t obj_base;
	/* For the listing. */
	const char *object;
	const char *sym;
	unsigned long symoff;
	struct arch_insn ainsn;
	struct ukp_opt *_Atomic opt;	/* jump optimization, NULL when none */
	bool opt_queued;		/* in the optimizer's queue */
	bool opt_refused;		/* its region cannot be optimized */
};

/* flags: what the trap path needs to know without walking the list. */
#define UKP_PT_HAS_POST		0x1u	/* an enabled probe has a post_handler */
#define UKP_PT_HAS_FAULT	0x2u	/* an enabled probe has a fault_handler */
#define UKP_PT_GONE		0x4u	/* object unloaded */

struct ukp_point *ukp_point_lookup(uintptr_t addr);	/* trap-safe */
int ukp_point_insert(struct ukp_point *pt);		/* mutex held */
void ukp_point_remove(struct ukp_point *pt);		/* mutex held */
void ukp_point_foreach(void (*fn)(struct ukp_point *, void *), void *arg);
void ukp_points_reclaim(void);	/* free old tables after a grace period */

static inline struct ukp_point *kprobe_point(const struct kprobe *p)
{
	return (struct ukp_point *)p->ukp_point;
}

extern pthread_mutex_t ukp_kprobe_mutex;
extern atomic_int ukp_kprobes_all_disarmed;

/* ------------------------------------------------------------------------ */
/* Grace periods: grace.h (the rule for reusing what threads may touch)     */
/* ------------------------------------------------------------------------ */

unsigned int ukp_srcu_read_lock(void);
void ukp_srcu_read_unlock(unsigned int cookie);
void ukp_synchronize(void);
int ukp_grace_init(void);

/*
 * The probe lists and the point table are walked either by the trap path
 * inside a read section, or by API code holding ukp_kprobe_mutex, as the
 * kernel asserts of get_kprobe() with lockdep.  UKP_DEBUG builds (SAN=1)
 * check it at every walk (debug_gpr.c).
 */
#ifdef UKP_DEBUG
bool ukp_walk_allowed(void);
bool ukp_kprobe_mutex_held(void);
void ukp_assert_fail(const char *what, const char *file, int line);
#define ukp_assert_walk_allowed()					\
	do {								\
		if (!ukp_walk_allowed())				\
			ukp_assert_fail("probe table walked outside a read " \
					"section and without ukp_kprobe_mutex", \
					__FILE__, __LINE__);		\
	} while (0)
#define ukp_assert_mutex_held()						\
	do {								\
		if (!ukp_kprobe_mutex_held())				\
			ukp_assert_fail("ukp_kprobe_mutex not held",	\
					__FILE__, __LINE__);		\
	} while (0)
#else
#define ukp_assert_walk_allowed() do { } while (0)
#define ukp_assert_mutex_held() do { } while (0)
#endif

/* The probes at @pt: every walk of a point's list goes through these. */
static inline struct kprobe *ukp_probe_first(struct ukp_point *pt)
{
	ukp_assert_walk_allowed();
	return atomic_load_explicit(&pt->probes, memory_order_acquire);
}

static inline struct kprobe *ukp_probe_next(const struct kprobe *p)
{
	return __atomic_load_n(&p->ukp_next, __ATOMIC_ACQUIRE);
}

#define ukp_for_each_probe(p, pt) \
	for (struct kprobe *p = ukp_probe_first(pt); p; p = ukp_probe_next(p))

/* ------------------------------------------------------------------------ */
/* Code patching (text.c): the only place that writes code                  */
/* ------------------------------------------------------------------------ */

int ukp_text_init(void);
int ukp_text_poke(uintptr_t addr, const void *bytes, size_t len);
int ukp_text_read(uintptr_t addr, void *buf, size_t len);
void ukp_sync_cores(void);
void ukp_text_after_fork(void);

/* ------------------------------------------------------------------------ */
/* Out-of-line slots (insn_slot.c)                                           */
/* ------------------------------------------------------------------------ */

/*
 * Executable slots of UKP_ARCH_SLOT_SIZE bytes, allocated inside a window the
 * arch asks for (rel32 reach of the probed code and of what it references).
 * A released slot is "dirty" until no thread can be executing in it.
 */
struct ukp_slot_info {
	uintptr_t addr;		/* the original instruction */
	uint8_t len;		/* its length */
	uint8_t arch_flags;	/* arch's own fix-ups after a step */
	uint8_t detour;		/* a jump-optimization detour, not a step slot */
};

uintptr_t ukp_slot_alloc(uintptr_t lo, uintptr_t hi, uintptr_t near,
			 const struct ukp_slot_info *info);
uintptr_t ukp_slot_alloc_n(uintptr_t lo, uintptr_t hi, uintptr_t near,
			   unsigned int n, const struct ukp_slot_info *info);
void ukp_slot_free_unused(uintptr_t slot);	/* never armed: reuse at once */
void ukp_slot_free_unused_n(uintptr_t slot, unsigned int n);
void ukp_slot_release(uintptr_t slot);		/* was armed: dirty */
void ukp_slot_release_n(uintptr_t slot, unsigned int n);
const struct ukp_slot_info *ukp_slot_info_at(uintptr_t ip, uintptr_t *slot); /* trap-safe */
void ukp_slot_gc(void);

void ukp_slot_mark(unsigned long *mark);
void ukp_slot_unmap_new_since(unsigned long mark);

/* ------------------------------------------------------------------------ */
/* Signals (trap.c, signal_chain.c)                                          */
/* ------------------------------------------------------------------------ */

int ukp_trap_install(void);		/* idempotent, mutex held */
void ukp_trap_uninstall_if_unused(void);
void ukp_chain_signal(int sig, siginfo_t *info, ucontext_t *uc);
void ukp_signal_after_fork(void);
/* After a program's signal handler returns: move a context left inside
 * code that was optimized meanwhile (trap-safe). */
void ukp_resume_fixup(void *ucv);
/* Around a program's handler: where the interrupted thread resumes, for
 * the proofs of grace.h (trap-safe). */
int ukp_intr_note(void *ucv);
void ukp_intr_pop(int token);
int ukp_signal_take(int sig, void (*fn)(int, siginfo_t *, void *),
		    const sigset_t *mask);
void ukp_signal_give_back(int sig);
/* The rt_sigprocmask system call as glibc's sigprocmask() makes it, not
 * our interposer: async-signal-safe. */
int ukp_sys_sigprocmask(int how, const sigset_t *set, sigset_t *old);
void ukp_mask_strip_trap(struct sigaction *act);
/* The program's sigprocmask() (SIGTRAP kept out of the kernel's mask). */
int ukp_sigprocmask_program(int how, const sigset_t *set, sigset_t *old);
/* Does the program believe this thread blocks SIGTRAP? */
bool ukp_mask_app_blocks_trap(void);
/* Does the kernel run ukprobes' handler for @sig; the program's own action. */
bool ukp_signal_owned(int sig);
void ukp_signal_wish(int sig, struct sigaction *act);
/* At a registration: handlers replaced behind our back are taken back
 * (@first: just installed, say what cannot be seen).  Returns 0. */
int ukp_signals_verify(bool first);
/* A fault going to the program: was SIGTRAP taken from us? (trap path) */
void ukp_signals_fault_check(uintptr_t ip);

/* vfork-style children (signal_chain.c, spawn.c): a child that shares the
 * parent's memory writes nothing the parent reads. */
bool ukp_in_vfork_child(void);
/* Set in ukprobes' own spawn child (the TLS is its parent thread's). */
extern __thread bool ukp_in_spawn_child __attribute__((tls_model("initial-exec")));
/* Spawn children running now: quiesce.c cannot see where they are. */
extern atomic_int ukp_spawn_children;

/*
 * UKP_INTERPOSER(fn) - @fn is the entry of a libc function that libukprobes
 * replaces (sigaction, sigprocmask, posix_spawn, ...): the program's calls
 * land there, so a probe on it by name must be possible.  Its first
 * instruction is left out of libukprobes' blacklist (symbols.c); nothing on
 * the trap path calls these entries.  @fn must be local or hidden, so that
 * its address is this object's.
 */
#define UKP_INTERPOSER(fn)						\
	static const void *const UKP_BL_CONCAT(_ukp_entry_, fn)		\
	__attribute__((used, section("ukp_interposers"))) = (const void *)&fn

/* Registration with the checks of one probe type (kprobes.c). */
enum ukp_kind {
	UKP_KIND_KPROBE,
	UKP_KIND_KRETPROBE,	/* at a function entry */
	UKP_KIND_JPROBE,	/* at a function entry, one per function */
};
int ukp_register_kprobes_kind(struct kprobe **kps, int num, enum ukp_kind kind);
bool ukp_kprobe_registered(const struct kprobe *p);
void ukp_check_gone(void);

/* The pre handlers that make a kprobe a kretprobe's or a jprobe's. */
int ukp_kretprobe_pre_handler(struct kprobe *p, struct pt_regs *regs);
int ukp_jprobe_pre_handler(struct kprobe *p, struct pt_regs *regs);

/* Jump optimization (optprobes.c); ukp_kprobe_mutex held unless noted. */
struct ukp_opt;
bool ukp_unoptimize(struct ukp_point *pt);
void ukp_opt_reclaim(void);
bool ukp_opt_make_room(uintptr_t addr);
bool ukp_opt_original_byte(struct ukp_point *pt, size_t i, uint8_t *b);
void ukp_opt_queue_point(struct ukp_point *pt);
void ukp_opt_forget(struct ukp_point *pt);
void ukp_opt_forget_gone(struct ukp_point *pt);
size_t ukp_optimize_pass(unsigned int max_wait_us);
void ukp_opt_after_fork(void);
void ukp_opt_env_default(void);
uintptr_t ukp_opt_resume_ip(struct ukp_point *pt);	/* trap-safe */
uintptr_t ukp_opt_redirect(uintptr_t ip);		/* trap-safe */
uintptr_t ukp_opt_region_copy(uintptr_t ip);		/* trap-safe */
bool ukp_opt_take_dead_point(struct ukp_point *pt);
int ukp_read_original(uintptr_t addr, uint8_t *buf, size_t len);

/* Breakpoints removed lately (retired.c): noted before removal, asked by
 * the trap path about a SIGTRAP that finds no probe. */
void ukp_bp_retired_note(uintptr_t addr);
bool ukp_bp_retired(uintptr_t addr);

/* Count a missed hit on every probe of @pt (trap path). */
void ukp_inc_nmissed(struct ukp_point *pt);

#endif
