// SPDX-License-Identifier: MIT
/*
 * kprobes.c - the registry: registering, enabling, disabling and removing
 * kprobes (kernel/kprobes.c).
 *
 * Registration is a transaction: every probe of a batch is resolved, checked
 * and prepared (slot built) before anything is published or armed, so a
 * failure leaves code, signal handlers and the memory map as they were.
 * Removal unpublishes and disarms first, then waits a grace period, then
 * frees: when unregister_kprobe() returns, no thread runs the probe's
 * handlers and the caller may free it.
 */
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "arch.h"
#include "memmap.h"
#include "symbols.h"
#include "key_index.h"
#include "kretprobes.h"
#include "grace.h"

/* This protects the point table, every point's list and flags, and the
 * knobs.  Never taken on the trap path. */
pthread_mutex_t ukp_kprobe_mutex = PTHREAD_MUTEX_INITIALIZER;
/* NOTE: change this value only with 'ukp_kprobe_mutex' held. */
atomic_int ukp_kprobes_all_disarmed;
static unsigned long ukp_point_gen;

static void ukp_atfork_prepare(void)
{
	pthread_mutex_lock(&ukp_kprobe_mutex);
}

static void ukp_atfork_parent(void)
{
	pthread_mutex_unlock(&ukp_kprobe_mutex);
}

static void ukp_atfork_child(void)
{
	ukp_srcu_after_fork();
	ukp_qs_after_fork();
	ukp_intr_after_fork();
	ukp_signal_after_fork();
	ukp_text_after_fork();
	ukp_opt_after_fork();
	ukp_kretprobes_after_fork();
	pthread_mutex_unlock(&ukp_kprobe_mutex);
}

/* Lazy initialisation: nothing happens when the library is merely loaded. */
static int ukp_init_locked(void)
{
	static bool done;
	int err;

	if (done)
		return 0;
	err = ukp_text_init();
	if (err)
		return err;
	err = ukp_grace_init();
	if (err)
		return err;
	pthread_atfork(ukp_atfork_prepare, ukp_atfork_parent, ukp_atfork_child);
	ukp_opt_env_default();
	arch_init();
	done = true;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Reading code as it was before any probe                                  */
/* ------------------------------------------------------------------------ */

/* Read code at @addr with every breakpoint of ours replaced by the byte it
 * covers.  Mutex held (armed states are stable). */
int ukp_read_original(uintptr_t addr, uint8_t *buf, size_t len)
{
	int err = ukp_text_read(addr, buf, len);
	const size_t back = UKP_ARCH_MAX_PATCH - 1;

	if (err)
		return err;
	/* Only a byte that may be ours starts a patch (a breakpoint, or an
	 * optimized jump that may also reach in from just before @addr): look
	 * up points there only. */
	for (uintptr_t at = addr >= back ? addr - back : 0; at < addr + len; at++) {
		struct ukp_point *pt;

		if (at >= addr && !arch_maybe_patched(buf[at - addr]))
			continue;
		pt = ukp_point_lookup(at);
		if (!pt)
			continue;
		for (size_t j = 0; j < UKP_ARCH_MAX_PATCH; j++) {
			uint8_t b;

			if (at + j < addr || at + j >= addr + len)
				continue;
			if (ukp_opt_original_byte(pt, j, &b))
				buf[at + j - addr] = b;
			else if (j < arch_breakpoint_len() && pt->armed)
				buf[at + j - addr] = arch_original_byte(pt, j);
		}
	}
	return 0;
}

/*
 * Is @addr an instruction boundary of its function?  The boundaries of the
 * last function decoded are cached: batches probe one function at a time.
 */
static struct {
	uintptr_t func;
	size_t size;
	uint8_t *is_boundary;
} ukp_bcache;

static int ukp_check_boundary(const struct ukp_symbol *fn, uintptr_t addr)
{
	size_t off = addr - fn->addr;

#if UKP_ARCH_INSN_FIXED_LEN
	/* Instructions of one length: a boundary is a multiple of it. */
	return off % UKP_ARCH_INSN_FIXED_LEN ? -EILSEQ : 0;
#endif
	if (ukp_bcache.func != fn->addr || ukp_bcache.size != fn->size) {
		uint8_t *code = malloc(fn->size);
		uint8_t *map = calloc(fn->size, 1);
		int err;

		if (!code || !map) {
			free(code);
			free(map);
			return -ENOMEM;
		}
		err = ukp_read_original(fn->addr, code, fn->size);
		if (err) {
			free(code);
			free(map);
			return err;
		}
		/* Mark every boundary a linear sweep from the entry finds, as
		 * the kernel's can_probe() decodes from the symbol's start. */
		for (size_t o = 0; o < fn->size;) {
			int len = arch_insn_len(code + o, fn->size - o);

			if (len <= 0)
				break;
			map[o] = 1;
			o += (size_t)len;
		}
		free(code);
		free(ukp_bcache.is_boundary);
		ukp_bcache.func = fn->addr;
		ukp_bcache.size = fn->size;
		ukp_bcache.is_boundary = map;
	}
	return ukp_bcache.is_boundary[off] ? 0 : -EILSEQ;
}

/* ------------------------------------------------------------------------ */
/* Probes in unloaded objects: [GONE]                                        */
/* ------------------------------------------------------------------------ */

static int ukp_phdr_counts(struct dl_phdr_info *info, size_t size, void *arg)
{
	unsigned long long *c = arg;

	(void)size;
	c[0] = info->dlpi_adds;
	c[1] = info->dlpi_subs;
	return 1;
}

struct ukp_loaded_check {
	uintptr_t base;
	const char *name;
	bool found;
};

static int ukp_phdr_find(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct ukp_loaded_check *c = arg;
	const char *base = strrchr(info->dlpi_name, '/');

	(void)size;
	base = base ? base + 1 : info->dlpi_name;
	if ((uintptr_t)info->dlpi_addr == c->base &&
	    (!*info->dlpi_name || !c->name || !strcmp(base, c->name)))
		c->found = true;
	return c->found;
}

static void ukp_gone_cb(struct ukp_point *pt, void *arg)
{
	struct ukp_loaded_check c = { pt->obj_base, pt->object, false };

	(void)arg;
	if (!pt->object || (atomic_load(&pt->flags) & UKP_PT_GONE))
		return;
	dl_iterate_phdr(ukp_phdr_find, &c);
	if (c.found)
		return;
	/* Its code is gone: never write there again (another object may be
	 * mapped at the same address by now). */
	atomic_fetch_or(&pt->flags, UKP_PT_GONE);
	pt->armed = false;
	ukp_opt_forget_gone(pt);
	ukp_for_each_probe(p, pt)
		__atomic_fetch_or(&p->flags, KPROBE_FLAG_GONE, __ATOMIC_RELAXED);
	pr_info("probe at %#lx: %s was unloaded\n", (unsigned long)pt->addr, pt->object);
}

/**
 * ukp_check_gone() - mark the probes of objects unloaded since the last
 * call (cheap when no object was unloaded).  ukp_kprobe_mutex held.
 */
void ukp_check_gone(void)
{
	static unsigned long long last_subs;
	unsigned long long c[2] = { 0, 0 };

	dl_iterate_phdr(ukp_phdr_counts, c);
	if (c[1] == last_subs)
		return;
	last_subs = c[1];
	ukp_point_foreach(ukp_gone_cb, NULL);
}

/* ------------------------------------------------------------------------ */
/* Registration                                                              */
/* ------------------------------------------------------------------------ */

static bool ukp_point_has(struct ukp_point *pt, const struct kprobe *p)
{
	ukp_for_each_probe(q, pt)
		if (q == p)
			return true;
	return false;
}

/* The point @p is registered at, or NULL (the kernel's __get_valid_kprobe(),
 * which never trusts more of the struct than its addr). */
static struct ukp_point *ukp_valid_point(const struct kprobe *p)
{
	struct ukp_point *pt = ukp_point_lookup((uintptr_t)p->addr);

	return pt && ukp_point_has(pt, p) ? pt : NULL;
}

/** ukp_kprobe_registered() - is @p registered now? */
bool ukp_kprobe_registered(const struct kprobe *p)
{
	bool ret;

	pthread_mutex_lock(&ukp_kprobe_mutex);
	ret = p->addr && ukp_valid_point(p);
	pthread_mutex_unlock(&ukp_kprobe_mutex);
	return ret;
}

/* Resolve where @p goes (the kernel's _kprobe_addr()) and check that it may
 * go there.  Fills *@addr and the symbol for the listing. */
static int ukp_resolve(const struct kprobe *p, uintptr_t *addr,
		       struct ukp_symbol *fn, bool *have_fn)
{
	uintptr_t a;
	int err;

	if ((p->addr && p->symbol_name) || (!p->addr && !p->symbol_name))
		return -EINVAL;
	if (p->symbol_name) {
		struct ukp_symbol s;
		uint8_t entry[UKP_ARCH_MAX_INSN + 1];

		err = ukp_symbol_lookup(p->symbol_name, &s);
		if (err)
			return err;
		a = s.addr;
		/* "Function entry" is the first real instruction (endbr64 is
		 * skipped, as the kernel does with IBT). */
		if (!p->offset && !ukp_read_original(a, entry, sizeof(entry)))
			a += arch_skip_func_entry(entry, sizeof(entry));
		a += p->offset;
	} else {
		a = (uintptr_t)p->addr + p->offset;	/* as _kprobe_addr() */
	}

	if (!ukp_addr_executable(a))
		return -EINVAL;
	if (ukp_blacklisted(a))
		return -EINVAL;
	{
		uintptr_t slot;

		if (ukp_slot_info_at(a, &slot))	/* our own slots */
			return -EINVAL;
	}
	*have_fn = !ukp_symbol_containing(a, fn) && fn->size;
	if (*have_fn) {
		err = ukp_check_boundary(fn, a);
		if (err)
			return err;
	}
	*addr = a;
	return 0;
}

static struct ukp_point *ukp_point_new(uintptr_t addr, const struct ukp_symbol *fn,
				       bool have_fn)
{
	struct ukp_point *pt = calloc(1, sizeof(*pt));

	if (!pt)
		return NULL;
	pt->addr = addr;
	pt->gen = ++ukp_point_gen;
	if (have_fn) {
		pt->object = fn->object;
		pt->obj_base = fn->object_base;
		pt->sym = fn->name;
		pt->symoff = addr - fn->addr;
	} else {
		struct ukp_symbol o;

		if (!ukp_symbol_containing(addr, &o) || o.object) {
			pt->object = o.object;
			pt->obj_base = o.object_base;
			pt->symoff = addr - o.object_base;
		}
	}
	return pt;
}

/* Recompute what the trap path reads, then arm or disarm to match.
 * Returns true if the code changed (cores need serializing). */
static bool ukp_point_update(struct ukp_point *pt)
{
	unsigned int flags = atomic_load(&pt->flags) & UKP_PT_GONE;
	bool want_armed = false, changed;

	/* Whatever changed, the optimization is redone from scratch. */
	changed = ukp_unoptimize(pt);
	pt->opt_refused = false;

	ukp_for_each_probe(p, pt) {
		if (kprobe_disabled(p))
			continue;
		want_armed = true;
		if (p->post_handler)
			flags |= UKP_PT_HAS_POST;
		if (p->fault_handler)
			flags |= UKP_PT_HAS_FAULT;
	}
	atomic_store(&pt->flags, flags);
	if (atomic_load(&ukp_kprobes_all_disarmed) || (flags & UKP_PT_GONE))
		want_armed = false;
	if (want_armed != pt->armed) {
		if (want_armed ? arch_arm_kprobe(pt) : arch_disarm_kprobe(pt)) {
			pr_warn("cannot %s probe at %#lx\n", want_armed ? "arm" : "disarm",
				(unsigned long)pt->addr);
		} else {
			pt->armed = want_armed;
			changed = true;
		}
	}
	if (pt->armed)
		ukp_opt_queue_point(pt);
	else
		ukp_opt_forget(pt);
	return changed;
}

static bool ukp_is_jprobe(const struct kprobe *p)
{
	return p->pre_handler == ukp_jprobe_pre_handler;
}

/*
 * Link @p into @pt's list: in registration order, except that a jprobe
 * stays last (its pre handler ends the walk by resuming in its entry), as
 * the kernel adds jprobes at the tail.  Readers see the old or the new list.
 */
static void ukp_point_link(struct ukp_point *pt, struct kprobe *p)
{
	struct kprobe *q = atomic_load(&pt->probes), *prev = NULL;

	ukp_assert_mutex_held();
	p->ukp_point = pt;
	while (q && !(ukp_is_jprobe(q) && !ukp_is_jprobe(p))) {
		prev = q;
		q = q->ukp_next;
	}
	p->ukp_next = q;
	if (prev)
		__atomic_store_n(&prev->ukp_next, p, __ATOMIC_RELEASE);
	else
		atomic_store_explicit(&pt->probes, p, memory_order_release);
	pt->nprobes++;
}

static void ukp_point_unlink(struct ukp_point *pt, struct kprobe *p)
{
	struct kprobe *q = atomic_load(&pt->probes);

	ukp_assert_mutex_held();
	if (q == p) {
		atomic_store_explicit(&pt->probes, p->ukp_next, memory_order_release);
	} else {
		while (q && q->ukp_next != p)
			q = q->ukp_next;
		if (!q)
			return;
		__atomic_store_n(&q->ukp_next, p->ukp_next, __ATOMIC_RELEASE);
	}
	/* p->ukp_next stays valid for readers until the grace period. */
	pt->nprobes--;
}

/* Per-probe state of a registration transaction. */
struct ukp_pending {
	uintptr_t addr;
	struct ukp_point *pt;	/* existing or new */
	bool new_pt;		/* created by this transaction */
};

static void ukp_free_new_points(struct ukp_pending *pd, int n)
{
	for (int i = 0; i < n; i++) {
		/* Later entries that share this point have new_pt clear. */
		if (!pd[i].new_pt)
			continue;
		arch_unprepare_kprobe(pd[i].pt);
		free(pd[i].pt);
	}
}

/* Return probes and jprobes go at a function's entry (after endbr64). */
static int ukp_check_func_entry(uintptr_t addr, const struct ukp_symbol *fn,
				bool have_fn)
{
	uint8_t entry[UKP_ARCH_MAX_INSN + 1];
	uintptr_t first;

	if (!have_fn)
		return 0;	/* no symbol to tell: trust the caller */
	first = fn->addr;
	if (!ukp_read_original(fn->addr, entry, sizeof(entry)))
		first += arch_skip_func_entry(entry, sizeof(entry));
	return addr == fn->addr || addr == first ? 0 : -EINVAL;
}

static int __register_kprobes(struct kprobe **kps, int num, enum ukp_kind kind)
{
	struct ukp_pending *pd;
	/* Repeats in the batch: kprobe structs, and where each address
	 * came first. */
	struct ukp_key_index seen, first_at;
	unsigned long mark;
	bool changed = false;
	int err = 0, i;

	pd = calloc((size_t)num, sizeof(*pd));
	if (!pd)
		return -ENOMEM;
	if (ukp_key_index_init(&seen, (size_t)num)) {
		free(pd);
		return -ENOMEM;
	}
	if (ukp_key_index_init(&first_at, (size_t)num)) {
		ukp_key_index_fini(&seen);
		free(pd);
		return -ENOMEM;
	}
	ukp_check_gone();
	ukp_symbols_refresh();
	ukp_slot_mark(&mark);

	for (i = 0; i < num; i++) {
		struct kprobe *p = kps[i];
		struct ukp_symbol fn;
		bool have_fn = false;
		uint8_t code[UKP_ARCH_MAX_INSN + 1];
		int first;

		if (!p) {
			err = -EINVAL;
			break;
		}
		/* Already registered, or twice in this batch. */
		if ((p->addr && ukp_valid_point(p)) ||
		    ukp_key_index_get_or_put(&seen, (uintptr_t)p, i) >= 0) {
			err = -EINVAL;
			break;
		}
		err = ukp_resolve(p, &pd[i].addr, &fn, &have_fn);
		if (!err && kind != UKP_KIND_KPROBE)
			err = ukp_check_func_entry(pd[i].addr, &fn, have_fn);
		if (err)
			break;
		first = ukp_key_index_get_or_put(&first_at, pd[i].addr, i);
		pd[i].pt = ukp_point_lookup(pd[i].addr);
		if (!pd[i].pt && first >= 0)
			pd[i].pt = pd[first].pt;
		if (kind == UKP_KIND_JPROBE) {
			/* One jprobe per function, as in the kernel. */
			if (pd[i].pt) {
				ukp_for_each_probe(q, pd[i].pt)
					if (ukp_is_jprobe(q))
						err = -EEXIST;
			}
			if (first >= 0)
				err = -EEXIST;
			if (err)
				break;
		}
		if (pd[i].pt)
			continue;
		pd[i].pt = ukp_point_new(pd[i].addr, &fn, have_fn);
		if (!pd[i].pt) {
			err = -ENOMEM;
			break;
		}
		pd[i].new_pt = true;
		/* Code that ends before UKP_ARCH_MAX_INSN bytes (the last
		 * instruction of a mapping) is read as far as it goes. */
		size_t avail = sizeof(code);

		while (avail && ukp_read_original(pd[i].addr, code, avail))
			avail--;
		err = avail ? arch_prepare_kprobe(pd[i].pt, code, avail) : -EINVAL;
		if (err) {
			free(pd[i].pt);
			pd[i].new_pt = false;
			break;
		}
	}
	ukp_key_index_fini(&seen);
	ukp_key_index_fini(&first_at);
	if (!err)
		err = ukp_trap_install();
	if (err) {
		ukp_free_new_points(pd, i < num ? i : num);
		ukp_slot_unmap_new_since(mark);
		free(pd);
		return err;
	}

	/* Commit: nothing below fails but arming, which only warns. */
	for (i = 0; i < num; i++) {
		struct kprobe *p = kps[i];

		if (pd[i].new_pt) {
			err = ukp_point_insert(pd[i].pt);
			if (err) {
				/* Unpublish what this batch published. */
				pr_warn("out of memory publishing probes\n");
				break;
			}
		}
		p->addr = (kprobe_opcode_t *)pd[i].addr;
		p->flags &= KPROBE_FLAG_DISABLED | KPROBE_FLAG_GPR_ONLY;
		p->nmissed = 0;
		ukp_point_link(pd[i].pt, p);
	}
	if (err) {
		/* Only a table allocation can fail here: take back what was
		 * linked (nothing is armed yet) and report it. */
		for (int j = i - 1; j >= 0; j--) {
			ukp_point_unlink(pd[j].pt, kps[j]);
			if (!pd[j].pt->nprobes)
				ukp_point_remove(pd[j].pt);
		}
		ukp_synchronize();
		for (int j = 0; j < i; j++)
			kps[j]->ukp_point = NULL;
		ukp_free_new_points(pd, num);
		ukp_slot_unmap_new_since(mark);
		free(pd);
		return err;
	}
	/* A new probe inside an optimized region takes the jump out first. */
	for (i = 0; i < num; i++)
		if (pd[i].new_pt)
			changed |= ukp_opt_make_room(pd[i].addr);
	for (i = 0; i < num; i++)
		changed |= ukp_point_update(pd[i].pt);
	if (changed)
		ukp_sync_cores();
	ukp_opt_reclaim();
	free(pd);
	return 0;
}

int ukp_register_kprobes_kind(struct kprobe **kps, int num, enum ukp_kind kind)
{
	int err;

	if (!kps || num <= 0)
		return -EINVAL;
	pthread_mutex_lock(&ukp_kprobe_mutex);
	err = ukp_init_locked();
	if (!err)
		err = __register_kprobes(kps, num, kind);
	pthread_mutex_unlock(&ukp_kprobe_mutex);
	return err;
}

UKP_API int register_kprobes(struct kprobe **kps, int num)
{
	return ukp_register_kprobes_kind(kps, num, UKP_KIND_KPROBE);
}

UKP_API int register_kprobe(struct kprobe *p)
{
	return register_kprobes(&p, 1);
}

/* ------------------------------------------------------------------------ */
/* Removal                                                                   */
/* ------------------------------------------------------------------------ */

static void __unregister_kprobes(struct kprobe **kps, int num)
{
	struct ukp_point **dead = calloc((size_t)num, sizeof(*dead));
	int ndead = 0;
	bool changed = false, any = false;

	ukp_check_gone();
	for (int i = 0; i < num; i++) {
		struct kprobe *p = kps[i];
		struct ukp_point *pt;

		if (!p)
			continue;
		pt = ukp_valid_point(p);
		if (!pt) {
			p->addr = NULL;		/* as the kernel does */
			continue;
		}
		any = true;
		ukp_point_unlink(pt, p);
		if (!pt->nprobes)	/* its int3 goes: a late trap is ours */
			ukp_bp_retired_note(pt->addr);
		changed |= ukp_point_update(pt);
		if (!pt->nprobes) {
			ukp_opt_forget(pt);
			ukp_point_remove(pt);
			if (dead)
				dead[ndead++] = pt;
		}
	}
	if (!any) {
		free(dead);
		return;
	}
	if (changed)
		ukp_sync_cores();
	/* Wait until no thread can be in these probes' handlers or looking
	 * at these points. */
	ukp_synchronize();
	/* Detours (and the threads in them) are done with these points. */
	ukp_opt_reclaim();
	for (int i = 0; i < ndead; i++) {
		/* A neighbour whose region held this probe may optimize now. */
		for (uintptr_t back = 1; back < UKP_ARCH_MAX_REGION && back < dead[i]->addr; back++) {
			struct ukp_point *q = ukp_point_lookup(dead[i]->addr - back);

			if (q) {
				q->opt_refused = false;
				ukp_opt_queue_point(q);
			}
		}
		/* A detour that could not be reclaimed yet still calls back
		 * with this point: it frees the point when it goes. */
		if (!ukp_opt_take_dead_point(dead[i])) {
			arch_remove_kprobe(dead[i]);
			free(dead[i]);
		}
	}
	ukp_points_reclaim();
	for (int i = 0; i < num; i++) {
		if (kps[i] && kps[i]->addr && kps[i]->ukp_point) {
			kps[i]->ukp_point = NULL;
			kps[i]->ukp_next = NULL;
		}
	}
	free(dead);
}

UKP_API void unregister_kprobes(struct kprobe **kps, int num)
{
	if (!kps || num <= 0)
		return;
	pthread_mutex_lock(&ukp_kprobe_mutex);
	__unregister_kprobes(kps, num);
	pthread_mutex_unlock(&ukp_kprobe_mutex);
}

UKP_API void unregister_kprobe(struct kprobe *p)
{
	unregister_kprobes(&p, 1);
}

/* ------------------------------------------------------------------------ */
/* Enable, disable, the global switch                                        */
/* ------------------------------------------------------------------------ */

static int ukp_set_disabled(struct kprobe *p, bool disable)
{
	struct ukp_point *pt;
	int err = 0;

	if (!p)
		return -EINVAL;
	pthread_mutex_lock(&ukp_kprobe_mutex);
	ukp_check_gone();
	pt = ukp_valid_point(p);
	if (!pt) {
		err = -EINVAL;
	} else if (!disable && kprobe_gone(p)) {
		err = -EINVAL;
	} else {
		if (disable)
			__atomic_fetch_or(&p->flags, KPROBE_FLAG_DISABLED, __ATOMIC_RELAXED);
		else
			__atomic_fetch_and(&p->flags, ~KPROBE_FLAG_DISABLED, __ATOMIC_RELAXED);
		if (ukp_point_update(pt))
			ukp_sync_cores();
		ukp_opt_reclaim();
	}
	pthread_mutex_unlock(&ukp_kprobe_mutex);
	return err;
}

UKP_API int disable_kprobe(struct kprobe *p)
{
	return ukp_set_disabled(p, true);
}

UKP_API int enable_kprobe(struct kprobe *p)
{
	return ukp_set_disabled(p, false);
}

static void ukp_update_cb(struct ukp_point *pt, void *changed)
{
	*(bool *)changed |= ukp_point_update(pt);
}

UKP_API int ukprobes_set_enabled(int enabled)
{
	bool changed = false;

	pthread_mutex_lock(&ukp_kprobe_mutex);
	ukp_check_gone();
	atomic_store(&ukp_kprobes_all_disarmed, !enabled);
	ukp_point_foreach(ukp_update_cb, &changed);
	if (changed)
		ukp_sync_cores();
	ukp_opt_reclaim();
	pthread_mutex_unlock(&ukp_kprobe_mutex);
	return 0;
}

UKP_API int ukprobes_enabled(void)
{
	return !atomic_load(&ukp_kprobes_all_disarmed);
}
