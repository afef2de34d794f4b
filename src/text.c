// SPDX-License-Identifier: MIT
/*
 * text.c - text_poke(): the only code that writes instructions.
 *
 * Code is written through /proc/self/mem, which the kernel lets a process use
 * on its own read-only mappings (FOLL_FORCE, as ptrace does).  So no page is
 * ever writable and executable, not even for a moment, and other threads keep
 * running the page while it changes.  After a change every core is made to
 * serialize (membarrier SYNC_CORE) before the change counts as visible, as
 * the kernel's text_poke_bp() does with its IPIs.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

/* NOTE: set with ukp_kprobe_mutex held. */
static int ukp_mem_fd = -1;
static bool ukp_have_sync_core;

static int ukp_membarrier(int cmd)
{
	return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

/**
 * ukp_text_init() - open /proc/self/mem and register for membarrier.
 * Caller holds ukp_kprobe_mutex.  Returns 0 or a negative errno.
 */
int ukp_text_init(void)
{
	if (ukp_mem_fd >= 0)
		return 0;
	ukp_mem_fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	if (ukp_mem_fd < 0) {
		int err = -errno;

		pr_warn("cannot open /proc/self/mem: %d\n", err);
		return err;
	}
	ukp_have_sync_core =
		ukp_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE) == 0;
	if (!ukp_have_sync_core)
		pr_info("membarrier SYNC_CORE unavailable: relying on x86 coherence\n");
	return 0;
}

/**
 * ukp_text_poke() - write @len bytes at @addr in this process's code.
 * Returns 0 or a negative errno; on error nothing was written.
 */
int ukp_text_poke(uintptr_t addr, const void *bytes, size_t len)
{
	ssize_t n;

	if (ukp_mem_fd < 0)
		return -EBADF;
	do {
		n = pwrite(ukp_mem_fd, bytes, len, (off_t)addr);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if ((size_t)n != len)
		return -EIO;
	return 0;
}

/**
 * ukp_sync_cores() - make every thread of the process execute a serializing
 * instruction before it runs more user code, so no core keeps executing a
 * stale copy of modified code.
 */
void ukp_sync_cores(void)
{
	if (ukp_have_sync_core)
		ukp_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE);
	else
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/*
 * The child of fork() has its own address space, but an inherited
 * /proc/self/mem descriptor still points at the parent's: writing through it
 * would patch the parent.  Reopen, and register the new mm for membarrier.
 */
void ukp_text_after_fork(void)
{
	if (ukp_mem_fd < 0)
		return;
	close(ukp_mem_fd);
	ukp_mem_fd = -1;
	ukp_text_init();
}

/**
 * ukp_text_read() - read @len bytes of code at @addr without risking a
 * fault: an unmapped address is an error, not a crash.
 */
int ukp_text_read(uintptr_t addr, void *buf, size_t len)
{
	ssize_t n;

	if (ukp_mem_fd < 0)
		return -EBADF;
	do {
		n = pread(ukp_mem_fd, buf, len, (off_t)addr);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}
