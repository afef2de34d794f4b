// SPDX-License-Identifier: MIT
/* thread_ext_gpr.c - the pool of per-thread blocks (see thread_ext.h).
 * Built with -mgeneral-regs-only: ukp_ext_get() runs on the GPR-only
 * paths of kretprobes.  Blocks are made several at a time (as many as are
 * wanted, between UKP_EXT_CHUNK_MIN and _MAX) with their return stubs and
 * one registration of their unwind information (kretprobe_unwind.c): few
 * objects for unwinders to search, little memory for a few threads. */
#include <dirent.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "thread_ext.h"
#include "trap.h"

#define UKP_EXT_MAX		4096
#define UKP_EXT_SPARE		16
#define UKP_EXT_CHUNK_MIN	8	/* blocks made at a time */
#define UKP_EXT_CHUNK_MAX	64
/* glibc keeps the first 32 keys' values in the thread descriptor, so
 * setting one allocates nothing: safe on the trap path. */
#define UKP_KEY_NO_ALLOC	32

static struct ukp_thread_ext *_Atomic ukp_ext_blocks[UKP_EXT_MAX];
static atomic_uint ukp_ext_n;
static atomic_uint ukp_ext_hint;
__thread struct ukp_thread_ext *ukp_ext_mine __attribute__((tls_model("initial-exec")));

static pthread_key_t ukp_ext_key;
static bool ukp_ext_key_ok;

/* The thread exits: give back the instances it still holds (the kernel's
 * kprobe_flush_task()) and the block. */
static void ukp_ext_release(void *arg)
{
	struct ukp_thread_ext *ext = arg;
	struct ukp_kcb *kcb = ukp_this_kcb();

	/* A signal handler's probed calls meanwhile are missed (kretprobes.h). */
	ukp_handler_enter(kcb);
	while (ext->rstack.depth) {
		struct kretprobe_instance *ri = ext->rstack.e[--ext->rstack.depth].ri;

		if (ri)
			ukp_pool_put(ri);
	}
	ukp_ri_flush(&ext->ri);
	memset(&ext->jp, 0, sizeof(ext->jp));
	ukp_ext_mine = NULL;
	atomic_store_explicit(&ext->in_use, 0, memory_order_release);
	ukp_handler_exit(kcb);
}

unsigned int ukp_ext_count(void)
{
	return atomic_load_explicit(&ukp_ext_n, memory_order_acquire);
}
NOKPROBE_SYMBOL(ukp_ext_count);

struct ukp_thread_ext *ukp_ext_block(unsigned int i)
{
	return atomic_load_explicit(&ukp_ext_blocks[i], memory_order_acquire);
}
NOKPROBE_SYMBOL(ukp_ext_block);

struct ukp_thread_ext *ukp_ext_claim(void)
{
	unsigned int n, start;

	/* The first time in this thread: claim a block. */
	n = atomic_load_explicit(&ukp_ext_n, memory_order_acquire);
	start = atomic_fetch_add_explicit(&ukp_ext_hint, 1, memory_order_relaxed);
	for (unsigned int k = 0; k < n; k++) {
		struct ukp_thread_ext *ext = atomic_load_explicit(
			&ukp_ext_blocks[(start + k) % n], memory_order_acquire);
		int zero = 0;

		if (ext && atomic_compare_exchange_strong(&ext->in_use, &zero, 1)) {
			ukp_ext_mine = ext;
			/* Without the key (too many in the program), the block
			 * stays with the thread's ghost: a leak, not an error. */
			if (ukp_ext_key_ok && ukp_ext_key < UKP_KEY_NO_ALLOC)
				pthread_setspecific(ukp_ext_key, ext);
			return ext;
		}
	}
	return NULL;
}
NOKPROBE_SYMBOL(ukp_ext_claim);

static unsigned int ukp_count_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	unsigned int n = 0;

	if (!d)
		return 1;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static void ukp_ext_key_init(void)
{
	ukp_ext_key_ok = !pthread_key_create(&ukp_ext_key, ukp_ext_release);
}

void ukp_ext_reserve(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	unsigned int want = 2 * ukp_count_threads() + UKP_EXT_SPARE, n;

	pthread_once(&once, ukp_ext_key_init);
	pthread_mutex_lock(&lock);
	n = atomic_load(&ukp_ext_n);
	while (n < want && n < UKP_EXT_MAX) {
		struct ukp_thread_ext *made[UKP_EXT_CHUNK_MAX];
		unsigned int k = want - n;

		k = k < UKP_EXT_CHUNK_MIN ? UKP_EXT_CHUNK_MIN : k > UKP_EXT_CHUNK_MAX ? UKP_EXT_CHUNK_MAX : k;
		if (k > UKP_EXT_MAX - n)
			k = UKP_EXT_MAX - n;
		if (ukp_ret_blocks_new(k, made))
			break;
		for (unsigned int i = 0; i < k; i++, n++) {
			atomic_store_explicit(&ukp_ext_blocks[n], made[i], memory_order_release);
			atomic_store_explicit(&ukp_ext_n, n + 1, memory_order_release);
		}
	}
	pthread_mutex_unlock(&lock);
}
