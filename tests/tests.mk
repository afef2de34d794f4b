# tests/tests.mk - the test suite (Criterion: every test forks, has a
# timeout, a crash is a failure of that test only).
#
# HARNESS=criterion (the default where Criterion runs) or HARNESS=ours: the
# same sources (they include tests/support/ukp_test.h) built with
# tests/harness/ (fork without exec: runs under qemu-user, and where Debian
# has no Criterion).  The programs are rebuilt when HARNESS changes.
#
#   tests/unit/NAME.c       -> $(B)/tests/unit/NAME       linked with the
#                              library's objects (may call hidden ukp_*)
#   tests/scenario/NAME.c   -> $(B)/tests/scenario/NAME   linked with the
#   tests/realworld/NAME.c  -> $(B)/tests/realworld/NAME  shared library (API only)
#   tests/support/*.c *.S   -> linked into every test program (targets,
#                              helpers)
#   tests/arch/ARCH/NAME.S  -> the architecture's targets for NAME.c (the
#                              code NAME.c probes, by labels every port's
#                              NAME.S defines), linked with it
#   tests/scenario/NAME.cc  -> beside NAME.c: C++ (exceptions, destructors)
#                              compiled with $(CXX) and linked into it; the
#                              tests stay in C (either harness builds them)
#   tests/scenario/NAME.rs  -> beside NAME.c: a Rust static library linked
#                              into it; NAME is built only where rustc is.

ifeq ($(HARNESS),ours)
TEST_HARNESS_CFLAGS := -DUKP_TEST_HARNESS
TEST_HARNESS_OBJ    := $(B)/tests/harness/harness.o
TEST_HARNESS_LIBS   := $(TEST_HARNESS_OBJ) -lpthread
else
TEST_HARNESS_CFLAGS :=
TEST_HARNESS_OBJ    :=
TEST_HARNESS_LIBS   := -lcriterion
endif
# Newer than every test program built with the other harness.
TEST_HARNESS_STAMP  := $(B)/tests/harness-$(HARNESS).stamp

# -rdynamic: backtrace_symbols() names the test's own functions.
TEST_CFLAGS  := -std=gnu11 $(WARN) -D_GNU_SOURCE $(DEBUGFLAGS) $(UKP_INC) -Isrc -Isrc/arch -Isrc/arch/$(ARCH) \
                -Itests/support -Itests/arch/$(ARCH) $(SANFLAGS) -O1 -g -fno-inline-functions-called-once \
                -rdynamic $(TEST_HARNESS_CFLAGS) $(CROSS_CFLAGS)
TEST_CXXFLAGS := -std=gnu++17 $(filter-out -Wstrict-prototypes,$(WARN)) -D_GNU_SOURCE $(DEBUGFLAGS) $(UKP_INC) \
                -Itests/support -Itests/arch/$(ARCH) $(SANFLAGS) -O1 -g -fno-inline-functions-called-once \
                $(CROSS_CFLAGS)
TEST_LIBS    := $(TEST_HARNESS_LIBS) $(CROSS_LDFLAGS) -lz -lpthread -ldl -lm
SUPPORT_SRCS := $(wildcard tests/support/*.c) $(wildcard tests/support/*.S)
SUPPORT_OBJS := $(patsubst %.c,$(B)/%.o,$(patsubst %.S,$(B)/%.o,$(SUPPORT_SRCS)))

UNIT_TESTS   := $(patsubst tests/unit/%.c,$(B)/tests/unit/%,$(wildcard tests/unit/*.c))
SCEN_TESTS   := $(patsubst tests/scenario/%.c,$(B)/tests/scenario/%,$(wildcard tests/scenario/*.c))
RUSTC        ?= rustc
# (rustc builds for the host: no Rust scenario in a cross build)
HAVE_RUSTC   := $(if $(filter $(HOST_ARCH),$(ARCH)),$(shell command -v $(RUSTC) >/dev/null 2>&1 && echo yes))
RUST_SCEN    := $(patsubst tests/scenario/%.rs,$(B)/tests/scenario/%,$(wildcard tests/scenario/*.rs))
ifneq ($(HAVE_RUSTC),yes)
SCEN_TESTS   := $(filter-out $(RUST_SCEN),$(SCEN_TESTS))
endif
REAL_TESTS   := $(patsubst tests/realworld/%.c,$(B)/tests/realworld/%,$(wildcard tests/realworld/*.c))
ALL_TESTS    := $(UNIT_TESTS) $(SCEN_TESTS) $(REAL_TESTS)

$(TEST_HARNESS_STAMP):
	@mkdir -p $(dir $@)
	@rm -f $(B)/tests/harness-*.stamp
	@touch $@

$(B)/tests/harness/harness.o: tests/harness/harness.c tests/harness/ukp_harness.h
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -c $< -o $@

$(B)/tests/support/%.o: tests/support/%.c $(LIB_HDRS) $(wildcard tests/support/*.h) $(TEST_HARNESS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -c $< -o $@

$(B)/tests/support/%.o: tests/support/%.S
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -c $< -o $@

# A test's own assembly for this architecture (tests/arch/ARCH/NAME.S).
test_asm = $(wildcard tests/arch/$(ARCH)/$(notdir $(basename $(1))).S)
# A test's own C++ (NAME.cc next to NAME.c), if any: an object, and the
# C++ runtime.
test_cc = $(if $(wildcard $(basename $(1)).cc),$(B)/$(basename $(1))_cc.o)
test_cc_libs = $(if $(wildcard $(basename $(1)).cc),-lstdc++)

# (kept: not intermediates to delete after each link)
.PRECIOUS: $(B)/tests/scenario/%_cc.o $(B)/tests/scenario/%_rs.a

$(B)/tests/scenario/%_cc.o: tests/scenario/%.cc
	@mkdir -p $(dir $@)
	$(CXX) $(TEST_CXXFLAGS) -c $< -o $@

# A test's own Rust (NAME.rs next to NAME.c), if any: a static library and
# what it needs (rustc --print native-static-libs).
test_rs = $(if $(wildcard $(basename $(1)).rs),$(B)/$(basename $(1))_rs.a)
test_rs_libs = $(if $(wildcard $(basename $(1)).rs),-lgcc_s -lutil -lrt -lpthread -lm -ldl)

$(B)/tests/scenario/%_rs.a: tests/scenario/%.rs
	@mkdir -p $(dir $@)
	MAKEFLAGS= $(RUSTC) --edition 2021 -O --crate-type staticlib -o $@ $<

.SECONDEXPANSION:
$(B)/tests/unit/%: tests/unit/%.c $$(call test_asm,tests/unit/%.c) $(LIB_OBJS) $(SUPPORT_OBJS) $(wildcard tests/support/*.h) $(TEST_HARNESS_OBJ) $(TEST_HARNESS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $< $(call test_asm,$<) $(LIB_OBJS) $(SUPPORT_OBJS) $(LIB_LIBS) $(TEST_LIBS)

$(B)/tests/scenario/%: tests/scenario/%.c $$(call test_asm,tests/scenario/%.c) $$(call test_cc,tests/scenario/%.c) $$(call test_rs,tests/scenario/%.c) $(LIB_SO) $(B)/libukprobes.so $(SUPPORT_OBJS) $(wildcard tests/support/*.h) $(TEST_HARNESS_OBJ) $(TEST_HARNESS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $< $(call test_asm,$<) $(call test_cc,$<) $(call test_rs,$<) $(SUPPORT_OBJS) $(LINK_UKP) $(TEST_LIBS) $(call test_cc_libs,$<) $(call test_rs_libs,$<)

$(B)/tests/realworld/%: tests/realworld/%.c $$(call test_asm,tests/realworld/%.c) $(LIB_SO) $(B)/libukprobes.so $(SUPPORT_OBJS) $(wildcard tests/support/*.h) $(TEST_HARNESS_OBJ) $(TEST_HARNESS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $< $(call test_asm,$<) $(SUPPORT_OBJS) $(LINK_UKP) $(TEST_LIBS) $(ARCH_LIBS) -lelf

.PHONY: tests check
tests: lib $(ALL_TESTS)

# TESTS=name1,name2 runs only those programs.  For another ARCH, each runs
# through $(CROSS_RUN) (qemu-user), with the timeouts stretched.
check: deps
	@$(MAKE) --no-print-directory tests
	@$(if $(QEMU),UKP_TEST_TIMEOUT_SCALE=$${UKP_TEST_TIMEOUT_SCALE:-10}) bash tests/run.sh \
		$(if $(CROSS_RUN),--run "$(CROSS_RUN)") --harness $(HARNESS) $(B) $(TESTS)

# ---- the harness's own proof, for any ARCH ----------------------------------
#
# make cross-smoke ARCH=...: the harness's self-test (tests/harness/
# selftest.c, built with our harness, and with Criterion too where it runs)
# checked by check_selftest.sh, a program that links the sysroot's libelf
# and zlib, and the code-patching probe, each built for ARCH and run there.
SMOKE_CFLAGS := -std=gnu11 $(WARN) -D_GNU_SOURCE -O2 -g $(SANFLAGS) $(CROSS_CFLAGS)
SMOKE_DIR    := $(B)/smoke
SMOKE_CRIT   := $(if $(or $(filter 0,$(CROSS_HAVE_CRITERION)),$(QEMU)),,$(SMOKE_DIR)/selftest-criterion)
SMOKE_LIBS   := $(if $(filter 0,$(CROSS_HAVE_LIBELF)),,-DSMOKE_LIBS -lelf -lz)

# (built again when the cross settings change, e.g. a sysroot that gained libelf)
$(SMOKE_DIR)/selftest: tests/harness/selftest.c tests/harness/harness.c tests/harness/ukp_harness.h tests/support/ukp_test.h $(CROSS_MK)
	@mkdir -p $(dir $@)
	$(CC) $(SMOKE_CFLAGS) -DUKP_TEST_HARNESS -o $@ tests/harness/selftest.c tests/harness/harness.c $(CROSS_LDFLAGS) -lpthread

$(SMOKE_DIR)/selftest-criterion: tests/harness/selftest.c tests/support/ukp_test.h $(CROSS_MK)
	@mkdir -p $(dir $@)
	$(CC) $(SMOKE_CFLAGS) -o $@ $< $(CROSS_LDFLAGS) -lcriterion -lpthread

$(SMOKE_DIR)/%: tests/harness/%.c $(CROSS_MK)
	@mkdir -p $(dir $@)
	$(CC) $(SMOKE_CFLAGS) -o $@ $< $(CROSS_LDFLAGS) $(if $(filter hello,$*),$(SMOKE_LIBS))

.PHONY: cross-smoke
cross-smoke: $(SMOKE_DIR)/hello $(SMOKE_DIR)/selftest $(SMOKE_DIR)/code_patch_probe $(SMOKE_CRIT)
	@echo "=== $(ARCH): hello$(if $(CROSS_RUN), (through $(CROSS_RUN)))"
	@$(CROSS_RUN) $(SMOKE_DIR)/hello
	@echo "=== $(ARCH): code patching"
	@$(CROSS_RUN) $(SMOKE_DIR)/code_patch_probe
	@echo "=== $(ARCH): harness self-test"
	@bash tests/harness/check_selftest.sh $(if $(CROSS_RUN),--run "$(CROSS_RUN)") $(SMOKE_DIR)/selftest
	$(if $(SMOKE_CRIT),@echo "=== $(ARCH): the same self-test with Criterion")
	$(if $(SMOKE_CRIT),@bash tests/harness/check_selftest.sh $(SMOKE_CRIT))
