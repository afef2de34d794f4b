/* SPDX-License-Identifier: MIT */
/*
 * ukp_test.h - the test framework every test program includes: Criterion,
 * or the harness of tests/harness/ (the same API subset, fork without
 * exec: runs under qemu-user and where Criterion is not packaged).  The
 * build picks it: make HARNESS=ours defines UKP_TEST_HARNESS.
 */
#ifndef UKP_TEST_H
#define UKP_TEST_H

#ifdef UKP_TEST_HARNESS
#include "../harness/ukp_harness.h"
#else
#include <criterion/criterion.h>
#endif

#endif /* UKP_TEST_H */
