# tests/arch/x86_64/fuzz/fuzz.mk - differential fuzzing of out-of-line
# execution and of the detours on x86-64 (fuzz.h says how; README.md how to
# use it).  The Makefile includes it when ARCH is x86_64; elsewhere `make
# fuzz` says there is no fuzzer for ARCH and does nothing.
#
#   make fuzz [FUZZ_TIME=SECONDS] [FUZZ_SEED=N]   the long run, for a time
#   $(B)/tests/fuzz/fuzz --case SEED --mode M -v   one case again
#
# The short fixed-seed pass is check.c, a test program of the suite built
# as $(B)/tests/realworld/fuzz_differential: `make check` (tests/run.sh)
# runs it with the rest, and so CI does (`make check TESTS=fuzz_differential`
# runs it alone).

FUZZ_TIME ?= 60
FUZZ_SEED ?= 1

FUZZ_SRC    := tests/arch/x86_64/fuzz
FUZZ_OUT    := $(B)/tests/fuzz
FUZZ_CFLAGS := $(TEST_CFLAGS) -I$(FUZZ_SRC)
FUZZ_COMMON := gen templates seq util compare modes run child
FUZZ_OBJS   := $(patsubst %,$(FUZZ_OUT)/%.o,$(FUZZ_COMMON)) \
               $(FUZZ_OUT)/harness.o $(FUZZ_OUT)/handlers_gpr.o
FUZZ_HDRS   := $(wildcard $(FUZZ_SRC)/*.h) include/ukprobes.h include/arch/$(ARCH)/ukprobes/asm/ptrace.h
FUZZ_BIN    := $(FUZZ_OUT)/fuzz
FUZZ_CHECK  := $(B)/tests/realworld/fuzz_differential

$(FUZZ_OUT)/%.o: $(FUZZ_SRC)/%.c $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(FUZZ_CFLAGS) -c $< -o $@

# The test framework's program is built again when HARNESS changes.
$(FUZZ_OUT)/check.o: $(FUZZ_SRC)/check.c $(FUZZ_HDRS) tests/support/ukp_test.h $(TEST_HARNESS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(FUZZ_CFLAGS) -c $< -o $@

# The handlers may run where the detour saved no vector register
# (KPROBE_FLAG_GPR_ONLY): general registers only, no sanitizer, no memcpy.
$(FUZZ_OUT)/handlers_gpr.o: $(FUZZ_SRC)/handlers_gpr.c $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(FUZZ_CFLAGS) -mgeneral-regs-only -fno-tree-loop-distribute-patterns \
	      -fno-sanitize=all -c $< -o $@

$(FUZZ_OUT)/harness.o: $(FUZZ_SRC)/harness.S $(FUZZ_SRC)/layout.h
	@mkdir -p $(dir $@)
	$(CC) $(FUZZ_CFLAGS) -c $< -o $@

$(FUZZ_BIN): $(FUZZ_OUT)/fuzz_main.o $(FUZZ_OBJS) $(LIB_SO) $(B)/libukprobes.so
	$(CC) $(FUZZ_CFLAGS) -o $@ $(FUZZ_OUT)/fuzz_main.o $(FUZZ_OBJS) $(LINK_UKP) -lZydis

$(FUZZ_CHECK): $(FUZZ_OUT)/check.o $(FUZZ_OBJS) $(LIB_SO) $(B)/libukprobes.so $(TEST_HARNESS_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(FUZZ_CFLAGS) -o $@ $(FUZZ_OUT)/check.o $(FUZZ_OBJS) $(LINK_UKP) -lZydis $(TEST_LIBS)

tests: $(FUZZ_BIN) $(FUZZ_CHECK)

.PHONY: fuzz
fuzz: lib $(FUZZ_BIN)
	$(FUZZ_BIN) --time $(FUZZ_TIME) --seed $(FUZZ_SEED)
