/* SPDX-License-Identifier: MIT */
/*
 * key_index.h - a throwaway map from a word (an address, a pointer) to the
 * first batch index that had it, so that checking a batch of N probes for
 * repeats costs O(N), not O(N^2) (register_kprobes() of 100,000 probes).
 * API calls only (allocates).
 */
#ifndef UKP_KEY_INDEX_H
#define UKP_KEY_INDEX_H

#include <stddef.h>
#include <stdint.h>

struct ukp_key_index {
	size_t mask;
	uintptr_t *keys;	/* 0: empty */
	int *vals;
};

/* Room for @n keys; -ENOMEM. */
int ukp_key_index_init(struct ukp_key_index *ix, size_t n);
void ukp_key_index_fini(struct ukp_key_index *ix);
/* The index stored for @key (never 0), or -1 after storing @val for it. */
int ukp_key_index_get_or_put(struct ukp_key_index *ix, uintptr_t key, int val);

#endif
