// SPDX-License-Identifier: MIT
/* key_index.c - see key_index.h (open addressing, linear probing). */
#include <errno.h>
#include <stdlib.h>

#include "key_index.h"

int ukp_key_index_init(struct ukp_key_index *ix, size_t n)
{
	size_t size = 16;

	while (size < 2 * n)	/* at most half full */
		size *= 2;
	ix->mask = size - 1;
	ix->keys = calloc(size, sizeof(*ix->keys));
	ix->vals = malloc(size * sizeof(*ix->vals));
	if (!ix->keys || !ix->vals) {
		ukp_key_index_fini(ix);
		return -ENOMEM;
	}
	return 0;
}

void ukp_key_index_fini(struct ukp_key_index *ix)
{
	free(ix->keys);
	free(ix->vals);
	ix->keys = NULL;
	ix->vals = NULL;
}

int ukp_key_index_get_or_put(struct ukp_key_index *ix, uintptr_t key, int val)
{
	size_t i = (size_t)(((uint64_t)key * 0x9e3779b97f4a7c15ull) >> 17) & ix->mask;

	for (;; i = (i + 1) & ix->mask) {
		if (ix->keys[i] == key)
			return ix->vals[i];
		if (!ix->keys[i]) {
			ix->keys[i] = key;
			ix->vals[i] = val;
			return -1;
		}
	}
}
