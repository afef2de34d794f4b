# tests/tests.mk - the test suite (Criterion: every test forks, has a
# timeout, a crash is a failure of that test only).
#
#   tests/unit/NAME.c       -> $(B)/tests/unit/NAME       linked with the
#                              library's objects (may call hidden ukp_*)
#   tests/scenario/NAME.c   -> $(B)/tests/scenario/NAME   linked with the
#   tests/realworld/NAME.c  -> $(B)/tests/realworld/NAME  shared library (API only)
#   tests/scenario/NAME.cc  -> $(B)/tests/scenario/NAME   the same, in C++
#                              (exceptions, destructors, forced unwinding)
#   tests/support/*.c *.S   -> linked into every test program (targets,
#                              helpers); NAME.S beside NAME.c (or NAME.cc)
#                              is linked too.
#   tests/scenario/NAME.rs  -> beside NAME.c: a Rust static library linked
#                              into it; NAME is built only where rustc is.

TEST_CFLAGS  := -std=gnu11 $(WARN) -D_GNU_SOURCE -Iinclude -Isrc -Isrc/arch -Isrc/arch/$(ARCH) \
                -Itests/support $(SANFLAGS) -O1 -g -fno-inline-functions-called-once -rdynamic
TEST_CXXFLAGS := -std=gnu++17 $(filter-out -Wstrict-prototypes,$(WARN)) -D_GNU_SOURCE -Iinclude \
                -Itests/support $(SANFLAGS) -O1 -g -fno-inline-functions-called-once -rdynamic
TEST_LIBS    := -lcriterion -lz -lpthread -ldl -lm
SUPPORT_SRCS := $(wildcard tests/support/*.c) $(wildcard tests/support/*.S)
SUPPORT_OBJS := $(patsubst %.c,$(B)/%.o,$(patsubst %.S,$(B)/%.o,$(SUPPORT_SRCS)))

UNIT_TESTS   := $(patsubst tests/unit/%.c,$(B)/tests/unit/%,$(wildcard tests/unit/*.c))
SCEN_TESTS   := $(patsubst tests/scenario/%.c,$(B)/tests/scenario/%,$(wildcard tests/scenario/*.c))
SCEN_CXX_TESTS := $(patsubst tests/scenario/%.cc,$(B)/tests/scenario/%,$(wildcard tests/scenario/*.cc))
RUSTC        ?= rustc
HAVE_RUSTC   := $(shell command -v $(RUSTC) >/dev/null 2>&1 && echo yes)
RUST_SCEN    := $(patsubst tests/scenario/%.rs,$(B)/tests/scenario/%,$(wildcard tests/scenario/*.rs))
ifneq ($(HAVE_RUSTC),yes)
SCEN_TESTS   := $(filter-out $(RUST_SCEN),$(SCEN_TESTS))
endif
REAL_TESTS   := $(patsubst tests/realworld/%.c,$(B)/tests/realworld/%,$(wildcard tests/realworld/*.c))
ALL_TESTS    := $(UNIT_TESTS) $(SCEN_TESTS) $(SCEN_CXX_TESTS) $(REAL_TESTS)

$(B)/tests/support/%.o: tests/support/%.c $(LIB_HDRS) $(wildcard tests/support/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -c $< -o $@

$(B)/tests/support/%.o: tests/support/%.S
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -c $< -o $@

# A test's own assembly (NAME.S next to NAME.c), if any.
test_asm = $(wildcard $(basename $(1)).S)
# A test's own Rust (NAME.rs next to NAME.c), if any: a static library and
# what it needs (rustc --print native-static-libs).
test_rs = $(if $(wildcard $(basename $(1)).rs),$(B)/$(basename $(1))_rs.a)
test_rs_libs = $(if $(wildcard $(basename $(1)).rs),-lgcc_s -lutil -lrt -lpthread -lm -ldl)

$(B)/tests/scenario/%_rs.a: tests/scenario/%.rs
	@mkdir -p $(dir $@)
	MAKEFLAGS= $(RUSTC) --edition 2021 -O --crate-type staticlib -o $@ $<

.SECONDEXPANSION:
$(B)/tests/unit/%: tests/unit/%.c $$(call test_asm,tests/unit/%.c) $(LIB_OBJS) $(SUPPORT_OBJS) $(wildcard tests/support/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $< $(call test_asm,$<) $(LIB_OBJS) $(SUPPORT_OBJS) $(LIB_LIBS) $(TEST_LIBS)

$(B)/tests/scenario/%: tests/scenario/%.c $$(call test_asm,tests/scenario/%.c) $$(call test_rs,tests/scenario/%.c) $(LIB_SO) $(B)/libukprobes.so $(SUPPORT_OBJS) $(wildcard tests/support/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $< $(call test_asm,$<) $(call test_rs,$<) $(SUPPORT_OBJS) $(LINK_UKP) $(TEST_LIBS) $(call test_rs_libs,$<)

# C++ scenarios (the support objects are C; a NAME.S is assembled by g++).
$(B)/tests/scenario/%: tests/scenario/%.cc $$(call test_asm,tests/scenario/%.cc) $(LIB_SO) $(B)/libukprobes.so $(SUPPORT_OBJS) $(wildcard tests/support/*.h)
	@mkdir -p $(dir $@)
	$(CXX) $(TEST_CXXFLAGS) -o $@ $< $(call test_asm,$<) $(SUPPORT_OBJS) $(LINK_UKP) $(TEST_LIBS)

$(B)/tests/realworld/%: tests/realworld/%.c $$(call test_asm,tests/realworld/%.c) $(LIB_SO) $(B)/libukprobes.so $(SUPPORT_OBJS) $(wildcard tests/support/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -o $@ $< $(call test_asm,$<) $(SUPPORT_OBJS) $(LINK_UKP) $(TEST_LIBS) -lZydis -lelf

.PHONY: tests check
tests: lib $(ALL_TESTS)

# TESTS=name1,name2 runs only those programs.
check: deps
	@$(MAKE) --no-print-directory tests
	@bash tests/run.sh $(B) $(TESTS)
