# bench/bench.mk - benchmarks (never part of `make check`: timings belong
# here; the machine is shared and noisy, so every figure is a min and a
# median over several runs, and ratios come from the same run).
#
#   make bench          builds the library and bench/NAME.c -> $(B)/bench/NAME,
#                       runs each, prints the tables, writes bench/results.json
#   make bench-floors   the floors only, without the library (bench/kprobes.c
#                       built with -DBENCH_NO_UKPROBES): k and b rows are n/a
#   BENCH_RUNS=N (default 7) BENCH_SCALE=F (iterations factor, default 1)
#   BENCH_CPU=N (pin the measuring processes on CPU N; default: no pinning)
#
# bench/common/*.c *.S (harness, floors, workload targets) are linked into
# every bench program; each bench/NAME.c is one program with a main().

BENCH_CFLAGS := -std=gnu11 $(WARN) -D_GNU_SOURCE -Iinclude -Ibench/common -O2 -g
BENCH_LIBS   := -ldl -lm -lpthread
BENCH_COMMON := $(wildcard bench/common/*.c) $(wildcard bench/common/*.S)
BENCH_HDRS   := $(wildcard bench/common/*.h) include/ukprobes.h
BENCH_PROGS  := $(patsubst bench/%.c,$(B)/bench/%,$(wildcard bench/*.c))
BENCH_NOLIB  := $(B)/bench/nolib/kprobes

.PHONY: bench bench-build bench-floors

$(B)/bench/%: bench/%.c $(BENCH_COMMON) $(BENCH_HDRS) $(LIB_SO) $(B)/libukprobes.so
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -o $@ $< $(BENCH_COMMON) $(LINK_UKP) $(BENCH_LIBS)

$(BENCH_NOLIB): bench/kprobes.c $(BENCH_COMMON) $(BENCH_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -DBENCH_NO_UKPROBES -o $@ $< $(BENCH_COMMON) $(BENCH_LIBS)

ifeq ($(SAN),1)
bench bench-build bench-floors:
	@echo "make bench: timings under sanitizers mean nothing; run without SAN=1" >&2
	@exit 1
else
# deps first, then the library and the programs (a sub-make, so that -j
# cannot build before the packages are there).
bench: deps
	@$(MAKE) --no-print-directory bench-build
	@bash bench/run.sh $(B) $(BENCH_PROGS)

bench-build: lib $(BENCH_PROGS)

bench-floors: $(BENCH_NOLIB)
	@bash bench/run.sh $(B) $(BENCH_NOLIB)
endif
