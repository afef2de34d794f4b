// SPDX-License-Identifier: MIT
/* thread_ext_gpr.c - the pool of per-thread blocks (see thread_ext.h).
 * Built with -mgeneral-regs-only: ukp_ext_get() runs on the GPR-only
 * paths of kretprobes. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "thread_ext.h"

#define UKP_EXT_MAX		4096
#define UKP_EXT_SPARE		16
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

	while (ext->rstack.depth)
		ukp_pool_put(ext->rstack.e[--ext->rstack.depth].ri);
	ukp_ri_flush(&ext->ri);
	memset(&ext->jp, 0, sizeof(ext->jp));
	ukp_ext_mine = NULL;
	atomic_store_explicit(&ext->in_use, 0, memory_order_release);
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

int ukp_ext_reserve(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	unsigned int want = 2 * ukp_count_threads() + UKP_EXT_SPARE, n;

	pthread_once(&once, ukp_ext_key_init);
	pthread_mutex_lock(&lock);
	n = atomic_load(&ukp_ext_n);
	for (; n < want && n < UKP_EXT_MAX; n++) {
		struct ukp_thread_ext *ext = calloc(1, sizeof(*ext));

		if (!ext)
			break;
		atomic_store_explicit(&ukp_ext_blocks[n], ext, memory_order_release);
		atomic_store_explicit(&ukp_ext_n, n + 1, memory_order_release);
	}
	pthread_mutex_unlock(&lock);
	/* Short of blocks, a thread's hits would all be missed. */
	return n < want && n < UKP_EXT_MAX ? -ENOMEM : 0;
}
