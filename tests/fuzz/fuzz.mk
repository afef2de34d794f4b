# tests/fuzz/fuzz.mk - differential fuzzing of out-of-line execution and of
# the detours (tests/fuzz/fuzz.h says how).
#
#   make fuzz [FUZZ_TIME=SECONDS] [FUZZ_SEED=N]   the long run, for a time
#   $(B)/tests/fuzz/fuzz --case SEED --mode M -v   one case again
#
# The short fixed-seed pass is a Criterion program, check.c, built as
# $(B)/tests/realworld/fuzz_differential so that `make check`
# (tests/run.sh) runs it with the rest of the suite.

FUZZ_TIME ?= 60
FUZZ_SEED ?= 1

FUZZ_CFLAGS := $(TEST_CFLAGS) -Itests/fuzz
FUZZ_COMMON := gen templates seq util compare modes run child
FUZZ_OBJS   := $(patsubst %,$(B)/tests/fuzz/%.o,$(FUZZ_COMMON)) \
               $(B)/tests/fuzz/harness.o $(B)/tests/fuzz/handlers_gpr.o
FUZZ_HDRS   := $(wildcard tests/fuzz/*.h) include/ukprobes.h
FUZZ_BIN    := $(B)/tests/fuzz/fuzz
FUZZ_CHECK  := $(B)/tests/realworld/fuzz_differential

$(B)/tests/fuzz/%.o: tests/fuzz/%.c $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(FUZZ_CFLAGS) -c $< -o $@

# The handlers may run where the detour saved no vector register
# (KPROBE_FLAG_GPR_ONLY): general registers only, no sanitizer, no memcpy.
$(B)/tests/fuzz/handlers_gpr.o: tests/fuzz/handlers_gpr.c $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(FUZZ_CFLAGS) -mgeneral-regs-only -fno-tree-loop-distribute-patterns \
	      -fno-sanitize=all -c $< -o $@

$(B)/tests/fuzz/harness.o: tests/fuzz/harness.S tests/fuzz/layout.h
	@mkdir -p $(dir $@)
	$(CC) $(FUZZ_CFLAGS) -c $< -o $@

$(FUZZ_BIN): $(B)/tests/fuzz/fuzz_main.o $(FUZZ_OBJS) $(LIB_SO) $(B)/libukprobes.so
	$(CC) $(FUZZ_CFLAGS) -o $@ $(B)/tests/fuzz/fuzz_main.o $(FUZZ_OBJS) $(LINK_UKP) -lZydis

$(FUZZ_CHECK): $(B)/tests/fuzz/check.o $(FUZZ_OBJS) $(LIB_SO) $(B)/libukprobes.so
	@mkdir -p $(dir $@)
	$(CC) $(FUZZ_CFLAGS) -o $@ $(B)/tests/fuzz/check.o $(FUZZ_OBJS) $(LINK_UKP) -lZydis -lcriterion

tests: $(FUZZ_BIN) $(FUZZ_CHECK)

.PHONY: fuzz
fuzz: lib $(FUZZ_BIN)
	$(FUZZ_BIN) --time $(FUZZ_TIME) --seed $(FUZZ_SEED)
