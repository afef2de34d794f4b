// SPDX-License-Identifier: MIT
/*
 * test_probe_events.c - the kprobe_events grammar of the ukprobe tracer
 * (tools/ukprobe/probe_events.c): definitions that parse, and every syntax
 * error of the kernel's selftest kprobe_syntax_errors.tc that applies in
 * user space, each with the error name and the caret where the kernel puts
 * it ('^' in the spec marks it, as in the selftest's check_error lines).
 */
#include "../support/ukp_test.h"
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tools/ukprobe/probe_events.c"
#include "../../tools/ukprobe/fetch.c"

/* ---- a resolver stub: a few names, dup_sym not unique, else dlsym ------ */

static long pe_test_data[4] = { 1, 2, 3, 4 };

static int stub_resolve(const char *obj, const char *sym, unsigned long *addr)
{
	static const char *const known[] = { "vfs_read", "do_exit", "kfree", "malloc" };
	void *p;

	(void)obj;
	if (!strcmp(sym, "dup_sym"))
		return -EADDRNOTAVAIL;
	if (!strcmp(sym, "pe_test_data")) {
		*addr = (unsigned long)pe_test_data;
		return 0;
	}
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		if (!strcmp(sym, known[i])) {
			*addr = 0x1000 * (i + 1);
			return 0;
		}
	}
	p = dlsym(RTLD_DEFAULT, sym);
	if (!p)
		return -ENOENT;
	*addr = (unsigned long)p;
	return 0;
}

static void with_resolver(void)
{
	pe_set_resolvers(stub_resolve, NULL);
}

/* spec: the definition with a '^' where the caret must be. */
static void check_error(const char *spec, const char *name)
{
	char def[1024];
	const char *caret = strchr(spec, '^');
	struct pe_event *ev = calloc(1, sizeof(*ev));
	struct pe_error err;
	size_t pos;
	int ret;

	cr_assert_not_null(caret, "spec without caret: %s", spec);
	cr_assert_not_null(ev);
	pos = (size_t)(caret - spec);
	memcpy(def, spec, pos);
	strcpy(def + pos, caret + 1);
	ret = pe_parse(def, ev, &err);
	cr_assert_neq(ret, 0, "'%s' parsed", def);
	cr_expect_str_eq(pe_error_name(err.code), name, "'%s': %s, expected %s", def,
			 pe_error_name(err.code), name);
	cr_expect_eq(err.pos, (int)pos, "'%s' %s: caret at %d, expected %zu", def, name,
		     err.pos, pos);
	cr_expect_str_eq(err.reason, pe_error_reason(err.code));
	pe_event_free(ev);
	free(ev);
}

static struct pe_event *parse_ok(const char *def)
{
	struct pe_event *ev = calloc(1, sizeof(*ev));
	struct pe_error err;
	int ret;

	cr_assert_not_null(ev);
	ret = pe_parse(def, ev, &err);
	cr_assert_eq(ret, 0, "'%s': %d %s at %d", def, ret, pe_error_name(err.code), err.pos);
	cr_assert_str_eq(ev->text, def);
	return ev;
}

static void put_ev(struct pe_event *ev)
{
	pe_event_free(ev);
	free(ev);
}

/* ---- kprobe_syntax_errors.tc, line by line ------------------------------ */

#define SYNTAX(tname, spec, err) \
	Test(kprobe_syntax_errors, tname) { check_error(spec, err); }
#define SYNTAX_R(tname, spec, err) \
	Test(kprobe_syntax_errors, tname, .init = with_resolver) { check_error(spec, err); }

SYNTAX(maxact_no_kprobe, "p^100 vfs_read", "MAXACT_NO_KPROBE")
SYNTAX(bad_maxact, "r^1a111 vfs_read", "BAD_MAXACT")
SYNTAX(maxact_too_big, "r^100000 vfs_read", "MAXACT_TOO_BIG")
SYNTAX_R(bad_probe_addr_enoent, "p ^non_exist_func", "BAD_PROBE_ADDR")
SYNTAX(bad_probe_addr_syntax, "p ^hoge-fuga", "BAD_PROBE_ADDR")
SYNTAX(bad_probe_addr_syntax2, "p ^hoge+1000-1000", "BAD_PROBE_ADDR")
SYNTAX(bad_retprobe, "r ^vfs_read+10", "BAD_RETPROBE")
SYNTAX(no_group_name, "p:^/bar vfs_read", "NO_GROUP_NAME")
SYNTAX(group_too_long,
       "p:^12345678901234567890123456789012345678901234567890123456789012345/bar vfs_read",
       "GROUP_TOO_LONG")
SYNTAX(bad_group_name, "p:^foo.1/bar vfs_read", "BAD_GROUP_NAME")
SYNTAX(no_event_name, "p:^ vfs_read", "NO_EVENT_NAME")
SYNTAX(event_too_long,
       "p:foo/^12345678901234567890123456789012345678901234567890123456789012345 vfs_read",
       "EVENT_TOO_LONG")
SYNTAX(bad_event_name, "p:foo/^bar.1 vfs_read", "BAD_EVENT_NAME")
SYNTAX(retval_on_probe, "p vfs_read ^$retval", "RETVAL_ON_PROBE")
SYNTAX(bad_stack_num, "p vfs_read ^$stack10000", "BAD_STACK_NUM")
SYNTAX(bad_arg_num, "p vfs_read ^$arg10000", "BAD_ARG_NUM")
SYNTAX(bad_var, "p vfs_read ^$none_var", "BAD_VAR")
SYNTAX(bad_reg_name, "p vfs_read ^%none_reg", "BAD_REG_NAME")
SYNTAX(bad_mem_addr, "p vfs_read ^@12345678abcde", "BAD_MEM_ADDR")
SYNTAX(file_on_kprobe, "p vfs_read ^@+10", "FILE_ON_KPROBE")
SYNTAX(bad_imm, "p vfs_read arg1=\\^x", "BAD_IMM")
SYNTAX(immstr_no_close, "p vfs_read arg1=\\\"abcd^", "IMMSTR_NO_CLOSE")
SYNTAX(deref_need_brace, "p vfs_read ^+0@0)", "DEREF_NEED_BRACE")
SYNTAX(bad_deref_offs, "p vfs_read ^+0ab1(@0)", "BAD_DEREF_OFFS")
SYNTAX(deref_open_brace, "p vfs_read +0(+0(@0^)", "DEREF_OPEN_BRACE")
SYNTAX(comm_cant_deref, "p vfs_read +0(^$comm)", "COMM_CANT_DEREF")
SYNTAX(bad_fetch_arg, "p vfs_read ^&1", "BAD_FETCH_ARG")
SYNTAX(too_many_ops,
       "p vfs_read +0(^+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(@0))))))))))))))",
       "TOO_MANY_OPS")
SYNTAX(array_no_close, "p vfs_read +0(@11):u8[10^", "ARRAY_NO_CLOSE")
SYNTAX(bad_array_suffix, "p vfs_read +0(@11):u8[10]^a", "BAD_ARRAY_SUFFIX")
SYNTAX(bad_array_num, "p vfs_read +0(@11):u8[^10a]", "BAD_ARRAY_NUM")
SYNTAX(array_too_big, "p vfs_read +0(@11):u8[^256]", "ARRAY_TOO_BIG")
SYNTAX(bad_type, "p vfs_read @11:^unknown_type", "BAD_TYPE")
SYNTAX(bad_string, "p vfs_read $stack0:^string", "BAD_STRING")
SYNTAX(bad_bitfield, "p vfs_read @11:^b10@a/16", "BAD_BITFIELD")
SYNTAX(arg_name_too_long, "p vfs_read ^arg123456789012345678901234567890=@11",
       "ARG_NAME_TOO_LONG")
SYNTAX(no_arg_name, "p vfs_read ^=@11", "NO_ARG_NAME")
SYNTAX(bad_arg_name, "p vfs_read ^var.1=@11", "BAD_ARG_NAME")
SYNTAX(used_arg_name, "p vfs_read var1=@11 ^var1=@12", "USED_ARG_NAME")
SYNTAX(arg_too_long,
       "p vfs_read ^+1234567(+1234567(+1234567(+1234567(+1234567(+1234567(@1234))))))",
       "ARG_TOO_LONG")
SYNTAX(no_arg_body, "p vfs_read arg1=^", "NO_ARG_BODY")
/* %return suffix errors */
SYNTAX(bad_addr_suffix, "p vfs_read^%hoge", "BAD_ADDR_SUFFIX")
SYNTAX(bad_retprobe_suffix, "p ^vfs_read+10%return", "BAD_RETPROBE")
/* BTF-argument errors: $arg* needs function entry; no BTF here */
SYNTAX(nofentry_args, "p vfs_read+8 ^$args", "NOFENTRY_ARGS")
SYNTAX(nofentry_args_star, "p vfs_read+8 ^$arg*", "NOFENTRY_ARGS")
SYNTAX(nosup_btfarg, "p vfs_read ^$args", "NOSUP_BTFARG")
SYNTAX(nosup_btfarg_star, "p vfs_read ^$arg*", "NOSUP_BTFARG")
SYNTAX(nosup_btfarg_return, "r vfs_read ^$args", "NOSUP_BTFARG")
SYNTAX(nosup_btfarg_name, "p vfs_read ^hoge", "NOSUP_BTFARG")
/* uprobe_syntax_errors.tc: the OBJ:OFFSET form */
SYNTAX(bad_uprobe_offs, "p /bin/sh:^10a", "BAD_UPROBE_OFFS")

/* ---- more errors, same rules ---------------------------------------------- */

SYNTAX_R(non_uniq_symbol, "p ^dup_sym", "NON_UNIQ_SYMBOL")
SYNTAX_R(no_symbol_arg, "p vfs_read x=+0(%di) ^@no_such_symbol_at_all", "NO_SYMBOL")
SYNTAX_R(no_symbol_arg_offs, "p vfs_read ^@no_such_symbol_at_all+8:u32", "NO_SYMBOL")
SYNTAX(bad_probe_type, "^x vfs_read", "BAD_PROBE_TYPE")
SYNTAX(bad_probe_type2, "p^x vfs_read", "BAD_PROBE_TYPE")
SYNTAX(empty_definition, "^", "BAD_PROBE_TYPE")
SYNTAX(no_probe_point, "p ^", "BAD_PROBE_ADDR")
SYNTAX(maxact_zero, "r^0 vfs_read", "BAD_MAXACT")
SYNTAX(maxact_no_kprobe_return, "p^5 vfs_read%return", "MAXACT_NO_KPROBE")
SYNTAX(bad_probe_addr_empty_sym, "p ^+zz", "BAD_PROBE_ADDR")
SYNTAX(bad_probe_addr_neg_offs, "p ^vfs_read-4", "BAD_PROBE_ADDR")
SYNTAX(bad_probe_addr_no_obj, "p ^:vfs_read", "BAD_PROBE_ADDR")
SYNTAX(bad_uprobe_offs_obj, "p libz.so.1:^0x12g", "BAD_UPROBE_OFFS")
SYNTAX(bad_event_name_digit, "p:grp/^1ev vfs_read", "BAD_EVENT_NAME")
SYNTAX(event_too_long_64,
       "p:^1234567890123456789012345678901234567890123456789012345678901234 vfs_read",
       "EVENT_TOO_LONG")
SYNTAX(bad_arg_num_zero, "p vfs_read ^$arg0", "BAD_ARG_NUM")
SYNTAX(bad_var_arg_junk, "p vfs_read ^$arg1x", "BAD_VAR")
SYNTAX(nofentry_args_offset, "p vfs_read+4 ^$arg1", "NOFENTRY_ARGS")
SYNTAX(nofentry_args_named, "p vfs_read+4 a=^$arg1", "NOFENTRY_ARGS")
SYNTAX(nofentry_args_address, "p 0x401000 ^$arg2", "NOFENTRY_ARGS")
SYNTAX(nofentry_args_nested, "p vfs_read+4 +8(^$arg1)", "NOFENTRY_ARGS")
SYNTAX(bad_var_stack, "p vfs_read ^$stackx", "BAD_VAR")
SYNTAX(bad_var_retval, "r vfs_read ^$retvalue", "BAD_VAR")
SYNTAX(bad_var_empty, "p vfs_read ^$", "BAD_VAR")
SYNTAX(bad_reg_empty, "p vfs_read ^%", "BAD_REG_NAME")
SYNTAX(bad_reg_nested, "p vfs_read +8(+16(^%eax)):u32", "BAD_REG_NAME")
SYNTAX(bad_reg_udere, "p vfs_read +u8(^%zz)", "BAD_REG_NAME")
SYNTAX(bad_reg_neg, "p vfs_read -8(^%zz)", "BAD_REG_NAME")
SYNTAX(bad_reg_neg_u, "p vfs_read -u8(^%zz)", "BAD_REG_NAME")
SYNTAX(retval_nested, "p vfs_read x=+0(^$retval)", "RETVAL_ON_PROBE")
SYNTAX(bad_fetch_arg_empty_inner, "p vfs_read +0(^)", "BAD_FETCH_ARG")
SYNTAX(bad_fetch_arg_number, "p vfs_read ^1234", "BAD_FETCH_ARG")
SYNTAX(bad_fetch_arg_junk_after_brace, "p vfs_read +0(%di)^xyz", "BAD_FETCH_ARG")
SYNTAX(bad_mem_addr_sym_offs, "p vfs_read ^@sym+zz", "BAD_MEM_ADDR")
SYNTAX(bad_mem_addr_empty, "p vfs_read ^@", "BAD_MEM_ADDR")
SYNTAX(immstr_alone, "p vfs_read \\\"^", "IMMSTR_NO_CLOSE")
SYNTAX(bad_imm_empty, "p vfs_read \\^", "BAD_IMM")
SYNTAX(comm_cant_deref_immstr, "p vfs_read +0(^\\\"abc\")", "COMM_CANT_DEREF")
SYNTAX(need_string_type_comm, "p vfs_read $comm:^u32", "NEED_STRING_TYPE")
SYNTAX(need_string_type_comm_array, "p vfs_read $comm:^string[2]", "NEED_STRING_TYPE")
SYNTAX(need_string_type_immstr, "p vfs_read \\\"ab\":^x8", "NEED_STRING_TYPE")
SYNTAX(bad_string_reg, "p vfs_read %di:^string", "BAD_STRING")
SYNTAX(bad_string_ustring, "p vfs_read $arg1:^ustring", "BAD_STRING")
SYNTAX(bad_string_retval, "r vfs_read $retval:^string", "BAD_STRING")
SYNTAX(array_on_register, "p vfs_read $stack1:^x8[8]", "BAD_STRING")
SYNTAX(array_on_imm, "p vfs_read \\1:^u8[2]", "BAD_STRING")
SYNTAX(array_of_strings_imm, "p vfs_read \\1:^string[2]", "BAD_STRING")
SYNTAX(bad_symstring_imm, "p vfs_read \\1:^symstr", "BAD_SYMSTRING")
SYNTAX(bad_symstring_comm, "p vfs_read $stack:^symstr", "BAD_SYMSTRING")
SYNTAX(array_too_big_65, "p vfs_read +0(%di):u8[^65]", "ARRAY_TOO_BIG")
SYNTAX(bad_array_num_zero, "p vfs_read +0(%di):u8[^0]", "BAD_ARRAY_NUM")
SYNTAX(bad_type_pd, "p vfs_read %di:^%pd", "BAD_TYPE")
SYNTAX(bad_type_bitfield_size, "p vfs_read %di:^b3@1/12", "BAD_TYPE")
SYNTAX(bad_type_b, "p vfs_read %di:^bogus", "BAD_TYPE")
SYNTAX(bad_type_empty, "p vfs_read %di:^", "BAD_TYPE")
SYNTAX(bad_bitfield_too_wide, "p vfs_read +0(%di):^b3@6/8", "BAD_BITFIELD")
SYNTAX(bad_bitfield_zero_width, "p vfs_read %di:^b0@0/8", "BAD_BITFIELD")
SYNTAX(bad_bitfield_no_at, "p vfs_read %di:^b4/8", "BAD_BITFIELD")
SYNTAX(used_arg_name_default, "p vfs_read arg2=%di ^%si", "USED_ARG_NAME")
SYNTAX(used_arg_name_reserved, "p vfs_read ^common_pid=%di", "USED_ARG_NAME")
SYNTAX(used_arg_name_probe_ip, "p vfs_read ^__probe_ip=%di", "USED_ARG_NAME")
SYNTAX(bad_arg_name_digit, "p vfs_read ^1x=%di", "BAD_ARG_NAME")
SYNTAX(error_in_third_arg, "p vfs_read %di %si ^%bad", "BAD_REG_NAME")
SYNTAX(caret_with_extra_spaces, "p   vfs_read    a=%di  ^%bad", "BAD_REG_NAME")
SYNTAX(caret_with_tab, "p\tvfs_read\t^$nope", "BAD_VAR")
SYNTAX(arg_before_bad_name, "p vfs_read %di ^$arg1x", "BAD_VAR")

/* Just under the limit: 13 levels of +0( around @0. */
Test(kprobe_syntax, thirteen_derefs_fit)
{
	put_ev(parse_ok("p vfs_read +0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(@0)))))))))))))"));
}

/* "p f +0(+0(...BASE...))TYPE", with a caret before the second level when
 * caret is set (where the kernel reports slot exhaustion). */
static void nest(char *buf, size_t len, int levels, const char *base, const char *type,
		 bool caret)
{
	int n = snprintf(buf, len, "p f ");

	for (int i = 0; i < levels; i++)
		n += snprintf(buf + n, len - (size_t)n, "%s+0(", caret && i == 1 ? "^" : "");
	n += snprintf(buf + n, len - (size_t)n, "%s", base);
	for (int i = 0; i < levels; i++)
		n += snprintf(buf + n, len - (size_t)n, ")");
	snprintf(buf + n, len - (size_t)n, "%s", type);
}

/* The 16 slots: a register load, 13 dereferences, the store (in place of
 * the last dereference) and a bitfield fill 15, END is the 16th.  @ADDR
 * takes two (immediate + dereference), @SYM three. */
Test(kprobe_syntax, ops_slots)
{
	char def[512];

	nest(def, sizeof(def), 13, "%di", ":b1@0/8", false);
	put_ev(parse_ok(def));
	nest(def, sizeof(def), 14, "%di", "", false);
	put_ev(parse_ok(def));
	nest(def, sizeof(def), 15, "%di", "", true);
	check_error(def, "TOO_MANY_OPS");
	nest(def, sizeof(def), 12, "@0", ":b1@0/8", false);
	put_ev(parse_ok(def));
	nest(def, sizeof(def), 12, "@0", ":b1@0/8[2]", true);
	check_error(def, "TOO_MANY_OPS");
	nest(def, sizeof(def), 12, "@sym", ":u8", false);
	put_ev(parse_ok(def));
	nest(def, sizeof(def), 12, "@sym", ":^b1@0/8", false);
	check_error(def, "BAD_BITFIELD");
}

Test(kprobe_syntax, too_many_args)
{
	char def[4096];
	int n = snprintf(def, sizeof(def), "p vfs_read");
	struct pe_event *ev;

	for (int i = 0; i < PE_MAX_ARGS; i++)
		n += snprintf(def + n, sizeof(def) - (size_t)n, " %%di");
	ev = parse_ok(def);
	cr_assert_eq(ev->nargs, PE_MAX_ARGS);
	cr_assert_str_eq(ev->args[127].name, "arg128");
	put_ev(ev);

	strcpy(def, "p vfs_read ^");
	n = (int)strlen(def);
	for (int i = 0; i <= PE_MAX_ARGS; i++)
		n += snprintf(def + n, sizeof(def) - (size_t)n, "%%di ");
	def[n - 1] = '\0';
	check_error(def, "TOO_MANY_ARGS");
}

/* ---- definitions that parse ----------------------------------------------- */

Test(kprobe_parse, entry_defaults)
{
	struct pe_event *ev = parse_ok("p vfs_read");

	cr_expect_eq(ev->kind, PE_ENTRY);
	cr_expect_str_eq(ev->group, "ukprobes");
	cr_expect_str_eq(ev->event, "p_vfs_read_0");
	cr_expect_str_eq(ev->symbol, "vfs_read");
	cr_expect_str_eq(ev->object, "");
	cr_expect_eq(ev->offset, 0);
	cr_expect(ev->fentry);
	cr_expect_eq(ev->nargs, 0);
	cr_expect_eq(ev->maxactive, 0);
	cr_expect_eq(ev->point_pos, 2);
	cr_expect_eq(ev->point_addr, 0);
	put_ev(ev);
}

Test(kprobe_parse, offset_and_name)
{
	struct pe_event *ev = parse_ok("p:mygrp/myev vfs_read+0x10");

	cr_expect_str_eq(ev->group, "mygrp");
	cr_expect_str_eq(ev->event, "myev");
	cr_expect_eq(ev->offset, 16);
	cr_expect_not(ev->fentry);
	put_ev(ev);

	ev = parse_ok("p vfs_read+16");
	cr_expect_str_eq(ev->event, "p_vfs_read_16");
	put_ev(ev);
}

Test(kprobe_parse, event_only_group_only_dot)
{
	struct pe_event *ev = parse_ok("p:myev vfs_read");

	cr_expect_str_eq(ev->group, "ukprobes");
	cr_expect_str_eq(ev->event, "myev");
	put_ev(ev);

	ev = parse_ok("p:mygrp/ vfs_read");
	cr_expect_str_eq(ev->group, "mygrp");
	cr_expect_str_eq(ev->event, "p_vfs_read_0");
	put_ev(ev);

	ev = parse_ok("p:my-grp.ev1 vfs_read");
	cr_expect_str_eq(ev->group, "my-grp");
	cr_expect_str_eq(ev->event, "ev1");
	put_ev(ev);

	/* 63 characters is the longest event name */
	ev = parse_ok("p:e23456789012345678901234567890123456789012345678901234567890123 vfs_read");
	cr_expect_eq(strlen(ev->event), 63);
	put_ev(ev);
}

Test(kprobe_parse, return_forms)
{
	struct pe_event *ev = parse_ok("r vfs_read");

	cr_expect_eq(ev->kind, PE_RETURN);
	cr_expect_str_eq(ev->event, "r_vfs_read_0");
	cr_expect_not(ev->fentry);
	put_ev(ev);

	ev = parse_ok("p vfs_read%return $retval");
	cr_expect_eq(ev->kind, PE_RETURN);
	cr_expect_str_eq(ev->event, "r_vfs_read_0");
	cr_expect_str_eq(ev->symbol, "vfs_read");
	put_ev(ev);

	ev = parse_ok("r16:g/e vfs_read+0 $retval:s32");
	cr_expect_eq(ev->maxactive, 16);
	cr_expect_eq(ev->args[0].type, PE_S32);
	put_ev(ev);

	ev = parse_ok("r0x20 vfs_read");
	cr_expect_eq(ev->maxactive, 32);
	cr_expect_str_eq(ev->event, "r_vfs_read_0");
	put_ev(ev);

	ev = parse_ok("r4096 vfs_read");
	cr_expect_eq(ev->maxactive, 4096);
	put_ev(ev);
}

Test(kprobe_parse, objects_and_addresses)
{
	struct pe_event *ev = parse_ok("p libz.so.1:deflate+4");

	cr_expect_str_eq(ev->object, "libz.so.1");
	cr_expect_str_eq(ev->symbol, "deflate");
	cr_expect_eq(ev->offset, 4);
	cr_expect_str_eq(ev->event, "p_libz_so_1_deflate_4");
	put_ev(ev);

	ev = parse_ok("r /usr/lib/x86_64-linux-gnu/libc.so.6:malloc");
	cr_expect_str_eq(ev->object, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	cr_expect_str_eq(ev->symbol, "malloc");
	cr_expect_str_eq(ev->event, "r_libc_so_6_malloc_0");
	put_ev(ev);

	ev = parse_ok("p 0x401000");
	cr_expect_str_eq(ev->symbol, "");
	cr_expect_eq(ev->address, 0x401000);
	cr_expect_not(ev->addr_is_file_offset);
	cr_expect_str_eq(ev->event, "p_0x401000");
	cr_expect_not(ev->fentry);
	put_ev(ev);

	ev = parse_ok("p 0x401000%return");
	cr_expect_eq(ev->kind, PE_RETURN);
	cr_expect_eq(ev->address, 0x401000);
	cr_expect_str_eq(ev->event, "r_0x401000");
	put_ev(ev);

	ev = parse_ok("p /usr/lib/libz.so.1:0x1234");
	cr_expect(ev->addr_is_file_offset);
	cr_expect_eq(ev->address, 0x1234);
	cr_expect_str_eq(ev->object, "/usr/lib/libz.so.1");
	cr_expect_str_eq(ev->symbol, "");
	cr_expect_str_eq(ev->event, "p_libz_0x1234");
	put_ev(ev);

	ev = parse_ok("p malloc@GLIBC_2.2.5");
	cr_expect_str_eq(ev->symbol, "malloc@GLIBC_2.2.5");
	cr_expect_str_eq(ev->event, "p_malloc_GLIBC_2_2_5_0");
	put_ev(ev);
}

Test(kprobe_parse, argument_names_and_types)
{
	struct pe_event *ev = parse_ok(
		"p f %di cnt=%si:u32 +8(%di):s16 s=+0(%dx):string c=$comm "
		"b=+4(%di):b3@5/32 arr=+0(%di):x8[4] sym=%ax:symbol ss=%ax:symstr "
		"ch=+0(%di):char us=+u0(%di):ustring i=\\-12:s64 im=\\\"hi\"");
	static const enum pe_type types[] = {
		PE_X64, PE_U32, PE_S16, PE_STRING, PE_STRING, PE_BITFIELD, PE_X8,
		PE_SYMBOL, PE_SYMSTR, PE_CHAR, PE_USTRING, PE_S64, PE_STRING,
	};
	static const char *const names[] = {
		"arg1", "cnt", "arg3", "s", "c", "b", "arr", "sym", "ss", "ch", "us", "i", "im",
	};
	char t[32];

	cr_assert_eq(ev->nargs, 13);
	for (int i = 0; i < ev->nargs; i++) {
		cr_expect_str_eq(ev->args[i].name, names[i]);
		cr_expect_eq(ev->args[i].type, types[i], "arg %d", i);
		cr_expect_not_null(ev->args[i].fetch);
	}
	cr_expect_str_eq(ev->args[1].text, "%si:u32");
	cr_expect_eq(ev->args[1].pos, 8);
	cr_expect_eq(ev->args[5].bf_width, 3);
	cr_expect_eq(ev->args[5].bf_offset, 5);
	cr_expect_eq(ev->args[5].bf_size, 32);
	cr_expect_eq(ev->args[6].array_len, 4);
	pe_arg_type_str(&ev->args[5], t, sizeof(t));
	cr_expect_str_eq(t, "b3@5/32");
	pe_arg_type_str(&ev->args[6], t, sizeof(t));
	cr_expect_str_eq(t, "x8[4]");
	pe_arg_type_str(&ev->args[0], t, sizeof(t));
	cr_expect_str_eq(t, "x64");
	put_ev(ev);
}

Test(kprobe_parse, registers_and_vars)
{
	static const char *const ok[] = {
		"p f %ax %bx %cx %dx %si %di %bp %sp %ip %flags %r8 %r9 %r10 %r11 %r12 %r13 %r14 %r15",
		"p f %rax %rdi %rsp %rip",
		"p f $stack $stack0 $stack2048 $comm $COMM $arg1 $arg6 $arg7 $arg2048",
		"p f \\0x10 \\-1 \\+5 \\\"\" \\\"str\" \\0x1000:string",
		"p f @0x1000 @0x1000:u8 @0:string +0(@0x10):u64",
		"p f -8(%sp) +u8(%di) -u16(%di):u32 +0x10(-0x8(%sp)):x16",
		"p f $stack0:symbol $arg1:symstr +0(%di):symstr %ax:b1@63/64 %ax:b8@0/8",
		"p f +0(%di):string[64] +0(%di):u64[64] +0(%di):b4@4/8[2]",
		"r f $retval $retval:u8 $retval:symbol +0($retval):string $arg3 +8($arg1):u32",
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		put_ev(parse_ok(ok[i]));
}

Test(kprobe_parse, return_probe_entry_args)
{
	struct pe_event *ev = parse_ok("r f a=$arg3 b=$arg1 c=+8($arg3):u32 d=$arg9");

	cr_expect_eq(ev->nentry_args, 3);
	cr_expect_eq(ev->entry_args[0], 2);
	cr_expect_eq(ev->entry_args[1], 0);
	cr_expect_eq(ev->entry_args[2], 8);
	put_ev(ev);

	ev = parse_ok("p f $arg3");
	cr_expect_eq(ev->nentry_args, 0);
	put_ev(ev);
}

Test(kprobe_parse, symbols_resolved, .init = with_resolver)
{
	struct pe_event *ev = parse_ok("p malloc a=@pe_test_data:s64 b=@pe_test_data+8:s64 "
				       "c=@pe_test_data-0:u32");

	cr_expect_eq(ev->point_addr, 0x4000);
	for (int i = 0; i < 3; i++)
		cr_expect(ev->args[i].fetch->resolved);
	put_ev(ev);

	ev = parse_ok("p malloc+4");
	cr_expect_eq(ev->point_addr, 0x4004);
	put_ev(ev);
}

Test(kprobe_parse, symbols_resolved_later)
{
	struct pe_event *ev = parse_ok("p no_such_function_is_checked_without_resolver "
				       "a=@pe_test_data:s64");
	struct pe_error err;

	cr_expect_not(ev->args[0].fetch->resolved);
	cr_expect_eq(ev->point_addr, 0);
	pe_set_resolvers(stub_resolve, NULL);
	cr_expect_eq(pe_event_resolve(ev, &err), -EINVAL);
	cr_expect_str_eq(pe_error_name(err.code), "BAD_PROBE_ADDR");
	cr_expect_eq(err.pos, 2);
	put_ev(ev);

	pe_set_resolvers(NULL, NULL);
	ev = parse_ok("p vfs_read a=@pe_test_data:s64 b=@nope_nope");
	pe_set_resolvers(stub_resolve, NULL);
	cr_expect_eq(pe_event_resolve(ev, &err), -ENOENT);
	cr_expect_str_eq(pe_error_name(err.code), "NO_SYMBOL");
	cr_expect_eq(err.pos, (int)(strstr(ev->text, "@nope") - ev->text));
	put_ev(ev);
}

Test(kprobe_parse, reparse_same_event)
{
	struct pe_event *ev = calloc(1, sizeof(*ev));
	struct pe_error err;

	cr_assert_eq(pe_parse("p f a=+0(%di):string", ev, &err), 0);
	pe_event_free(ev);
	cr_assert_eq(pe_parse("p f %bad", ev, &err), -EINVAL);
	pe_event_free(ev);	/* nothing left to free: still safe */
	cr_assert_eq(pe_parse("r f $retval", ev, NULL), 0);
	put_ev(ev);
}

/* ---- error reporting ---------------------------------------------------- */

Test(kprobe_errors, print_error_caret)
{
	const char *def = "p vfs_read %none_reg";
	struct pe_event *ev = calloc(1, sizeof(*ev));
	struct pe_error err;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	cr_assert_eq(pe_parse(def, ev, &err), -EINVAL);
	pe_print_error(f, def, &err);
	fclose(f);
	cr_expect_str_eq(text, "p vfs_read %none_reg\n"
			       "           ^\n"
			       "Invalid register name (BAD_REG_NAME)\n");
	free(text);
	free(ev);
}

Test(kprobe_errors, print_error_keeps_tabs)
{
	const char *def = "p\tf\t%zz";
	struct pe_event *ev = calloc(1, sizeof(*ev));
	struct pe_error err;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	cr_assert_eq(pe_parse(def, ev, &err), -EINVAL);
	pe_print_error(f, def, &err);
	fclose(f);
	cr_expect_str_eq(text, "p\tf\t%zz\n \t \t^\nInvalid register name (BAD_REG_NAME)\n");
	free(text);
	free(ev);
}

Test(kprobe_errors, names_and_reasons)
{
	for (int i = 0; i < PE_ERR_MAX; i++) {
		cr_expect_not_null(pe_error_name(i));
		cr_expect_gt(strlen(pe_error_reason(i)), 0);
	}
	cr_expect_str_eq(pe_error_name(PE_ERR_BAD_REG_NAME), "BAD_REG_NAME");
	cr_expect_str_eq(pe_error_name(PE_ERR_NONE), "NONE");
	cr_expect_str_eq(pe_error_name(-1), "UNKNOWN");
	cr_expect_str_eq(pe_error_name(PE_ERR_MAX), "UNKNOWN");
	cr_expect_str_eq(pe_error_reason(PE_ERR_RETVAL_ON_PROBE), "$retval is not available on probe");
}

/* Every error name of REFERENCE.md's list exists, with the kernel's text. */
Test(kprobe_errors, reference_list)
{
	static const char *const names[] = {
		"MAXACT_NO_KPROBE", "BAD_MAXACT", "MAXACT_TOO_BIG", "BAD_PROBE_ADDR",
		"BAD_RETPROBE", "NO_GROUP_NAME", "GROUP_TOO_LONG", "BAD_GROUP_NAME",
		"NO_EVENT_NAME", "EVENT_TOO_LONG", "BAD_EVENT_NAME", "RETVAL_ON_PROBE",
		"BAD_STACK_NUM", "BAD_ARG_NUM", "BAD_VAR", "BAD_REG_NAME", "BAD_MEM_ADDR",
		"FILE_ON_KPROBE", "DEREF_NEED_BRACE", "BAD_DEREF_OFFS", "DEREF_OPEN_BRACE",
		"COMM_CANT_DEREF", "BAD_FETCH_ARG", "TOO_MANY_OPS", "ARRAY_NO_CLOSE",
		"BAD_ARRAY_SUFFIX", "BAD_ARRAY_NUM", "ARRAY_TOO_BIG", "BAD_TYPE", "BAD_STRING",
		"BAD_BITFIELD", "ARG_NAME_TOO_LONG", "NO_ARG_NAME", "BAD_ARG_NAME",
		"USED_ARG_NAME", "ARG_TOO_LONG", "NO_ARG_BODY", "BAD_INSN_BNDRY",
		"NON_UNIQ_SYMBOL",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int found = -1;

		for (int c = 0; c < PE_ERR_MAX; c++)
			if (!strcmp(pe_error_name(c), names[i]))
				found = c;
		cr_expect_geq(found, 0, "%s missing", names[i]);
	}
	cr_expect_str_eq(pe_error_reason(PE_ERR_BAD_INSN_BNDRY),
			 "Probe point is not an instruction boundary");
}

Test(kprobe_parse, type_names)
{
	cr_expect_str_eq(pe_type_name(PE_U8), "u8");
	cr_expect_str_eq(pe_type_name(PE_S64), "s64");
	cr_expect_str_eq(pe_type_name(PE_X32), "x32");
	cr_expect_str_eq(pe_type_name(PE_CHAR), "char");
	cr_expect_str_eq(pe_type_name(PE_STRING), "string");
	cr_expect_str_eq(pe_type_name(PE_USTRING), "ustring");
	cr_expect_str_eq(pe_type_name(PE_SYMBOL), "symbol");
	cr_expect_str_eq(pe_type_name(PE_SYMSTR), "symstr");
	cr_expect_str_eq(pe_type_name(PE_BITFIELD), "b");
}
