// SPDX-License-Identifier: MIT
/*
 * gone.c - probes in an object that is unloaded (dlclose) become [GONE],
 * as kernel probes in an unloaded module do: never written to again,
 * listed as GONE, refused by enable_kprobe(), unregistered cleanly; and a
 * new probe can go on the object when it is loaded again.
 */
#include "../support/ukp_test.h"
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ukprobes.h>

/* A library this test does not link: loaded and unloaded at will. */
static const char *const candidates[] = {
	"libbz2.so.1.0", "libzstd.so.1", "liblzma.so.5", "libcrypt.so.1", "libm.so.6",
};
static const char *const symbols[] = {
	"BZ2_bzlibVersion", "ZSTD_versionNumber", "lzma_version_number", "crypt", "cos",
};

static void *open_lib(const char **sym)
{
	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
		void *h;

		/* Skip what is loaded already: dlclose would not unload it. */
		if ((h = dlopen(candidates[i], RTLD_NOW | RTLD_NOLOAD))) {
			dlclose(h);
			continue;
		}
		if ((h = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL))) {
			*sym = symbols[i];
			return h;
		}
	}
	return NULL;
}

static int pre(struct kprobe *p, struct pt_regs *r)
{
	return 0;
}

static char *list_text(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ukprobes_print_list(f);
	fclose(f);
	return buf;
}

Test(gone, dlclose_marks_probe_gone, .timeout = 30)
{
	const char *sym = NULL;
	void *h = open_lib(&sym);
	if (!h)
		cr_skip_test("no unloadable library on this machine");
	void *fn = dlsym(h, sym);
	cr_assert_not_null(fn);

	struct kprobe kp = { .addr = fn, .pre_handler = pre };
	cr_assert_eq(register_kprobe(&kp), 0);
	char *l = list_text();
	cr_expect(strstr(l, sym) != NULL, "listing: %s", l);
	cr_expect(strstr(l, "[GONE]") == NULL);
	free(l);

	cr_assert_eq(dlclose(h), 0);
	l = list_text();
	cr_expect(strstr(l, "[GONE]") != NULL, "after dlclose: %s", l);
	free(l);
	cr_expect(kp.flags & KPROBE_FLAG_GONE);
	cr_expect_eq(enable_kprobe(&kp), -EINVAL);
	/* Unregistering writes nothing into the unmapped code. */
	unregister_kprobe(&kp);
	l = list_text();
	cr_expect_eq(strlen(l), 0, "listing after unregister: %s", l);
	free(l);

	/* Loaded again, possibly elsewhere: a new probe works. */
	h = open_lib(&sym);
	cr_assert_not_null(h);
	struct kprobe kp2 = { .addr = dlsym(h, sym), .pre_handler = pre };
	cr_expect_eq(register_kprobe(&kp2), 0);
	unregister_kprobe(&kp2);
	dlclose(h);
}
