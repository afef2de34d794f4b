# bench/bench.mk - benchmarks (never part of `make check`: timings belong
# here; the machine is shared and noisy, so every figure is a min and a
# median over several runs, and ratios come from the same run).
#
#   make bench          installs what it needs (bpftrace, gdb, gnuplot,
#                       python3), builds the library and bench/NAME.c ->
#                       $(B)/bench/NAME (kprobes, scale, tools) and the
#                       workload, runs each, prints the tables, writes
#                       bench/results.json, the summary (bench/report.py)
#                       and bench/results.svg
#   make bench-floors   the floors only, without the library (bench/kprobes.c
#                       built with -DBENCH_NO_UKPROBES): probe rows are n/a
#   make bench-report   summary and chart again from bench/results.json
#   make bench-readme   bench/published/ <- the last run; README's
#                       Performance section generated from it
#   BENCH_RUNS=N (default 7) BENCH_SCALE=F (iterations factor, default 1)
#   BENCH_CPU=N (pin the measuring processes on CPU N; default: no pinning)
#
# bench/common/*.c *.S (harness, floors, probe rows, workload targets) are
# linked into every bench program; each bench/NAME.c is one program with a
# main().  bench/workload/workload.c is the program tools.c probes from
# outside (not linked with libukprobes).

BENCH_CFLAGS := -std=gnu11 $(WARN) -D_GNU_SOURCE $(UKP_INC) -Ibench/common -O2 -g
BENCH_LIBS   := -lZydis -lelf -ldl -lm -lpthread
BENCH_COMMON := $(wildcard bench/common/*.c) $(wildcard bench/common/*.S)
BENCH_HDRS   := $(wildcard bench/common/*.h) include/ukprobes.h
BENCH_PROGS  := $(patsubst bench/%.c,$(B)/bench/%,$(wildcard bench/*.c))
BENCH_NOLIB  := $(B)/bench/nolib/kprobes
# The program that Linux uprobes, bpftrace and gdb probe (bench/tools.c runs
# it): the same targets, no libukprobes.
BENCH_WORKLOAD := $(B)/bench/workload
# What the rows beyond ukprobes need (Debian); a package that cannot be
# installed leaves its rows n/a with the reason, it does not stop the bench.
BENCH_DEB_PKGS := bpftrace gdb gnuplot-nox python3

.PHONY: bench bench-build bench-floors bench-deps bench-report bench-readme

$(B)/bench/%: bench/%.c $(BENCH_COMMON) $(BENCH_HDRS) $(LIB_SO) $(B)/libukprobes.so
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -o $@ $< $(BENCH_COMMON) $(LINK_UKP) $(BENCH_LIBS)

$(BENCH_WORKLOAD): bench/workload/workload.c $(BENCH_COMMON) $(BENCH_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -DBENCH_NO_UKPROBES -o $@ $< $(BENCH_COMMON) -ldl -lm -lpthread

$(B)/bench/tools: $(BENCH_WORKLOAD)

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
bench: deps bench-deps
	@$(MAKE) --no-print-directory bench-build
	@bash bench/run.sh $(B) $(BENCH_PROGS)
	@bash bench/tracer_rate.sh $(B) || echo "make bench: the tracer rate could not be measured"

bench-build: lib tool $(BENCH_PROGS) $(BENCH_WORKLOAD)

# One package at a time, so that one missing from the archive does not keep
# the others out; failures are reported, not fatal.
bench-deps:
	@for p in $(BENCH_DEB_PKGS); do \
		bash scripts/install-deps.sh $$p >/dev/null 2>&1 || \
		echo "make bench: could not install $$p (its rows will say n/a)"; \
	done

# The tables and the chart again from bench/results.json, without measuring.
bench-report:
	@python3 bench/report.py summary
	@python3 bench/report.py chart

# Publishes the last run: bench/results.json and .svg (machine-specific, not
# tracked) are copied to bench/published/, and README.md's Performance
# section is generated from that copy.
bench-readme:
	@test -f bench/results.json || { echo "make bench-readme: no bench/results.json: make bench first" >&2; exit 1; }
	@mkdir -p bench/published
	cp bench/results.json bench/published/results.json
	@if [ -f bench/tracer.json ]; then cp bench/tracer.json bench/published/tracer.json; fi
	@if [ -f bench/results.svg ]; then cp bench/results.svg bench/published/results.svg; \
	else echo "make bench-readme: no bench/results.svg (gnuplot missing?)"; fi
	python3 bench/report.py --json bench/published/results.json readme README.md --chart bench/published/results.svg

bench-floors: $(BENCH_NOLIB)
	@bash bench/run.sh $(B) $(BENCH_NOLIB)
endif
