/* SPDX-License-Identifier: MIT */
/*
 * ukp_harness.h - the part of Criterion's API that the ukprobes tests use,
 * for targets where Criterion is not packaged (arm, mipsel, powerpc) or
 * cannot run (under qemu-user its runner re-executes the test binary,
 * which fails without binfmt_misc).
 *
 * The runner is tests/harness/harness.c (it provides main()).  Same
 * semantics as Criterion where the suite relies on them: every test runs
 * in a fork()ed child (never an exec), with a timeout; a crash, an
 * unexpected exit status or a failed assertion fails it; .signal and
 * .exit_code name the expected end; .init/.fini (the suite's, then the
 * test's) run in the child; cr_assert*() ends the test (its .fini still
 * runs), cr_expect*() records and goes on; cr_skip_test() skips.  The
 * closing line is Criterion's "[====] Synthesis: ..." line.
 *
 * Each argument of an assertion is evaluated exactly once (tests count
 * the calls of probed functions inside them), and a failed comparison
 * prints both values.  Only the headers that <criterion/criterion.h>
 * brings in are included, so that a test that builds here builds with
 * Criterion too.
 */
#ifndef UKP_HARNESS_H
#define UKP_HARNESS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>
#include <wchar.h>

/* Test(suite, name, .timeout = 30, ...) and TestSuite(suite, ...) fields. */
struct ukp_test_extra {
	int ukp_first_;			/* (the initializer is never empty) */
	bool disabled;
	const char *description;
	double timeout;			/* seconds; 0: the suite's, or --timeout */
	int signal;			/* the test must die of this signal */
	int exit_code;			/* the test must exit with this status */
	void (*init)(void);
	void (*fini)(void);
	void *data;			/* accepted, unused */
};

struct ukp_test {
	const char *suite, *name, *file;
	int line;
	void (*fn)(void);
	const struct ukp_test_extra *x;
	struct ukp_test *next;
};

struct ukp_suite {
	const char *name;
	const struct ukp_test_extra *x;
	struct ukp_suite *next;
};

/* What a test's process reports to the runner: in a page shared with it,
 * so that it survives a crash (and counts the assertions of the test's
 * own children and threads too). */
struct ukp_slot {
	int failed;			/* failed assertions */
	int skipped;
	int phase;			/* UKP_PHASE_* reached */
	int line;			/* the last assertion reached */
	const char *file;
	char skip_reason[240];
};
enum { UKP_PHASE_NONE, UKP_PHASE_SETUP, UKP_PHASE_BODY, UKP_PHASE_TEARDOWN, UKP_PHASE_DONE };

extern struct ukp_slot *ukp_harness_slot;

/* A value in a failure message. */
struct ukp_val {
	char kind;			/* 'i', 'u', 'f', 'p' */
	union {
		long long i;
		unsigned long long u;
		double f;
		const volatile void *p;
	};
};

void ukp_harness_register_test(struct ukp_test *t);
void ukp_harness_register_suite(struct ukp_suite *s);
/* A failed assertion.  fatal: the test ends there (cr_assert*), else it
 * goes on (cr_expect*); v: the two values compared, strs: the two strings. */
void ukp_harness_fail(int fatal, const char *file, int line, const char *expr,
		      const struct ukp_val *v, const char *const *strs, const char *fmt, ...)
	__attribute__((format(printf, 7, 8), cold));
void ukp_harness_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void ukp_harness_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- registration ---------------------------------------------------------- */

#define UKP_ID_(suite, name, what) ukp_##what##_##suite##_##name

#define Test(suite, name, ...)								\
	static void UKP_ID_(suite, name, fn)(void);					\
	static const struct ukp_test_extra UKP_ID_(suite, name, x) =			\
		{ .ukp_first_ = 0, __VA_ARGS__ };					\
	static struct ukp_test UKP_ID_(suite, name, t) = {				\
		#suite, #name, __FILE__, __LINE__, UKP_ID_(suite, name, fn),		\
		&UKP_ID_(suite, name, x), NULL };					\
	__attribute__((constructor)) static void UKP_ID_(suite, name, reg)(void)	\
	{										\
		ukp_harness_register_test(&UKP_ID_(suite, name, t));			\
	}										\
	static void UKP_ID_(suite, name, fn)(void)

#define TestSuite(suite, ...)								\
	static const struct ukp_test_extra ukp_sx_##suite =				\
		{ .ukp_first_ = 0, __VA_ARGS__ };					\
	static struct ukp_suite ukp_s_##suite = { #suite, &ukp_sx_##suite, NULL };	\
	__attribute__((constructor)) static void ukp_sreg_##suite(void)		\
	{										\
		ukp_harness_register_suite(&ukp_s_##suite);				\
	}										\
	struct ukp_suite_decl_##suite

/* ---- assertions ---------------------------------------------------------- */

/* Where the test was last seen (for the report of a crash that follows). */
#define UKP_HERE_()									\
	do {										\
		__atomic_store_n(&ukp_harness_slot->file, __FILE__, __ATOMIC_RELAXED);	\
		__atomic_store_n(&ukp_harness_slot->line, __LINE__, __ATOMIC_RELAXED);	\
	} while (0)

/* fatal 1: cr_assert (ends the test), 0: cr_expect (goes on). */
#define UKP_FAIL_1_(...) (ukp_harness_fail(1, __VA_ARGS__), __builtin_unreachable())
#define UKP_FAIL_0_(...) ukp_harness_fail(0, __VA_ARGS__)
/* The optional message: "" __VA_ARGS__ is the format, or a lone " " (the
 * leading space is dropped; an empty format would warn). */
#define UKP_CHECK_(fatal, cond, expr, ...)						\
	do {										\
		UKP_HERE_();								\
		if (__builtin_expect(!(cond), 0))					\
			UKP_FAIL_##fatal##_(__FILE__, __LINE__, expr, NULL, NULL, " " __VA_ARGS__); \
	} while (0)

static inline struct ukp_val ukp_val_i_(long long v) { struct ukp_val r = { .kind = 'i', .i = v }; return r; }
static inline struct ukp_val ukp_val_u_(unsigned long long v) { struct ukp_val r = { .kind = 'u', .u = v }; return r; }
static inline struct ukp_val ukp_val_f_(double v) { struct ukp_val r = { .kind = 'f', .f = v }; return r; }
static inline struct ukp_val ukp_val_p_(const volatile void *v) { struct ukp_val r = { .kind = 'p', .p = v }; return r; }

#define UKP_VAL_(v) _Generic((v),							\
	_Bool: ukp_val_u_, char: ukp_val_i_, signed char: ukp_val_i_,			\
	short: ukp_val_i_, int: ukp_val_i_, long: ukp_val_i_, long long: ukp_val_i_,	\
	unsigned char: ukp_val_u_, unsigned short: ukp_val_u_, unsigned: ukp_val_u_,	\
	unsigned long: ukp_val_u_, unsigned long long: ukp_val_u_,			\
	float: ukp_val_f_, double: ukp_val_f_, long double: ukp_val_f_,		\
	default: ukp_val_p_)(v)

/* A comparison: each side evaluated once, compared with the same operator
 * and conversions as (a) op (b).  The copies make constants variables, so
 * the sign-compare warning that (a) op (b) would not give is silenced; they
 * are volatile for the tests that call sigsetjmp() (-Wclobbered). */
#define UKP_CMP_(fatal, op, a, b, ...)							\
	do {										\
		_Pragma("GCC diagnostic push")						\
		_Pragma("GCC diagnostic ignored \"-Wsign-compare\"")			\
		volatile __auto_type ukp_a_ = (a);					\
		volatile __auto_type ukp_b_ = (b);					\
		UKP_HERE_();								\
		if (__builtin_expect(!(ukp_a_ op ukp_b_), 0)) {				\
			struct ukp_val ukp_v_[2] = { UKP_VAL_(ukp_a_), UKP_VAL_(ukp_b_) }; \
			UKP_FAIL_##fatal##_(__FILE__, __LINE__, "(" #a ") " #op " (" #b ")", \
					    ukp_v_, NULL, " " __VA_ARGS__);		\
		}									\
		_Pragma("GCC diagnostic pop")						\
	} while (0)

#define UKP_STR_(fatal, op, a, b, ...)							\
	do {										\
		const char *ukp_s_[2] = { (a), (b) };					\
		UKP_HERE_();								\
		if (__builtin_expect(!ukp_s_[0] || !ukp_s_[1] ||			\
				     !(strcmp(ukp_s_[0], ukp_s_[1]) op 0), 0))		\
			UKP_FAIL_##fatal##_(__FILE__, __LINE__,				\
					    "(" #a ") " #op " (" #b ") (as strings)",	\
					    NULL, ukp_s_, " " __VA_ARGS__);		\
	} while (0)

#define UKP_PTR_(fatal, op, p, ...)							\
	do {										\
		const volatile void *ukp_p_ = (p);					\
		UKP_HERE_();								\
		if (__builtin_expect(!(ukp_p_ op NULL), 0)) {				\
			struct ukp_val ukp_v_[2] = { ukp_val_p_(ukp_p_), ukp_val_p_(NULL) }; \
			UKP_FAIL_##fatal##_(__FILE__, __LINE__, "(" #p ") " #op " NULL",	\
					    ukp_v_, NULL, " " __VA_ARGS__);		\
		}									\
	} while (0)

#define cr_assert(cond, ...)		UKP_CHECK_(1, cond, #cond, __VA_ARGS__)
#define cr_expect(cond, ...)		UKP_CHECK_(0, cond, #cond, __VA_ARGS__)
#define cr_assert_not(cond, ...)	UKP_CHECK_(1, !(cond), "!(" #cond ")", __VA_ARGS__)
#define cr_expect_not(cond, ...)	UKP_CHECK_(0, !(cond), "!(" #cond ")", __VA_ARGS__)
#define cr_assert_fail(...)		UKP_CHECK_(1, 0, NULL, __VA_ARGS__)
#define cr_expect_fail(...)		UKP_CHECK_(0, 0, NULL, __VA_ARGS__)

#define cr_assert_eq(a, b, ...)		UKP_CMP_(1, ==, a, b, __VA_ARGS__)
#define cr_expect_eq(a, b, ...)		UKP_CMP_(0, ==, a, b, __VA_ARGS__)
#define cr_assert_neq(a, b, ...)	UKP_CMP_(1, !=, a, b, __VA_ARGS__)
#define cr_expect_neq(a, b, ...)	UKP_CMP_(0, !=, a, b, __VA_ARGS__)
#define cr_assert_lt(a, b, ...)		UKP_CMP_(1, <, a, b, __VA_ARGS__)
#define cr_expect_lt(a, b, ...)		UKP_CMP_(0, <, a, b, __VA_ARGS__)
#define cr_assert_leq(a, b, ...)	UKP_CMP_(1, <=, a, b, __VA_ARGS__)
#define cr_expect_leq(a, b, ...)	UKP_CMP_(0, <=, a, b, __VA_ARGS__)
#define cr_assert_gt(a, b, ...)		UKP_CMP_(1, >, a, b, __VA_ARGS__)
#define cr_expect_gt(a, b, ...)		UKP_CMP_(0, >, a, b, __VA_ARGS__)
#define cr_assert_geq(a, b, ...)	UKP_CMP_(1, >=, a, b, __VA_ARGS__)
#define cr_expect_geq(a, b, ...)	UKP_CMP_(0, >=, a, b, __VA_ARGS__)

#define cr_assert_null(p, ...)		UKP_PTR_(1, ==, p, __VA_ARGS__)
#define cr_expect_null(p, ...)		UKP_PTR_(0, ==, p, __VA_ARGS__)
#define cr_assert_not_null(p, ...)	UKP_PTR_(1, !=, p, __VA_ARGS__)
#define cr_expect_not_null(p, ...)	UKP_PTR_(0, !=, p, __VA_ARGS__)

#define cr_assert_str_eq(a, b, ...)	UKP_STR_(1, ==, a, b, __VA_ARGS__)
#define cr_expect_str_eq(a, b, ...)	UKP_STR_(0, ==, a, b, __VA_ARGS__)
#define cr_assert_str_neq(a, b, ...)	UKP_STR_(1, !=, a, b, __VA_ARGS__)
#define cr_expect_str_neq(a, b, ...)	UKP_STR_(0, !=, a, b, __VA_ARGS__)

/* Ends the test as skipped (after a failed cr_expect it stays failed). */
#define cr_skip_test(...)		ukp_harness_skip(" " __VA_ARGS__)

#define cr_log_info(...)		ukp_harness_log(0, __VA_ARGS__)
#define cr_log_warn(...)		ukp_harness_log(1, __VA_ARGS__)
#define cr_log_error(...)		ukp_harness_log(2, __VA_ARGS__)

#endif /* UKP_HARNESS_H */
