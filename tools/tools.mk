# tools/tools.mk - the ukprobe tracer and its end-to-end tests.
#
#   make tool         $(B)/ukprobe, $(B)/libukprobe-agent.so (preloaded into
#                     the traced program), $(B)/libukprobe-audit.so (LD_AUDIT:
#                     tells the agent about dlopen())
#   make tool-tests   $(B)/tests/tool/test_ukprobe (Criterion, run by
#                     `make check`) and the programs it traces,
#                     $(B)/tests/tool-progs/*
#   make install      also installs ukprobe in $(BINDIR) and the agent and
#                     audit module in $(LIBDIR)/ukprobe/
#
# The agent and the command share the definition grammar and fetch code
# (probe_events.c, fetch.c), the ELF symbol code (syms.c), the probe-point
# checks (point_check.c, with the instruction decoding of
# tool_arch_$(ARCH).c) and the JSON strings (json.c).  Every object is built
# position-independent once and linked into both.  handler.c (the probe
# handlers) is built with -mgeneral-regs-only.

UKP_TOOL_DIR    := tools/ukprobe
UKP_TOOL_OBJDIR := $(B)/tools/ukprobe
UKP_TOOL_CFLAGS := -std=gnu11 $(WARN) -D_GNU_SOURCE -fPIC -fvisibility=hidden \
                   $(UKP_INC) -I$(UKP_TOOL_DIR) $(CFLAGS) \
                   -DUKPROBE_VERSION='"$(VERSION)"' -DUKPROBE_LIBDIR='"$(LIBDIR)"'
UKP_TOOL_HDRS   := $(wildcard $(UKP_TOOL_DIR)/*.h) include/ukprobes.h

UKP_COMMON_OBJS := $(UKP_TOOL_OBJDIR)/probe_events.o $(UKP_TOOL_OBJDIR)/fetch.o \
                   $(UKP_TOOL_OBJDIR)/syms.o $(UKP_TOOL_OBJDIR)/point_check.o \
                   $(UKP_TOOL_OBJDIR)/tool_arch_$(ARCH).o $(UKP_TOOL_OBJDIR)/json.o
UKP_CLI_OBJS    := $(UKP_TOOL_OBJDIR)/main.o $(UKP_TOOL_OBJDIR)/report.o \
                   $(UKP_TOOL_OBJDIR)/inspect.o $(UKP_TOOL_OBJDIR)/prog_objs.o \
                   $(UKP_TOOL_OBJDIR)/agent_env.o $(UKP_COMMON_OBJS)
UKP_AGENT_OBJS  := $(UKP_TOOL_OBJDIR)/agent.o $(UKP_TOOL_OBJDIR)/agent_env.o \
                   $(UKP_TOOL_OBJDIR)/handler.o \
                   $(UKP_TOOL_OBJDIR)/writer.o $(UKP_COMMON_OBJS)

UKP_TOOL        := $(B)/ukprobe
UKP_AGENT       := $(B)/libukprobe-agent.so
UKP_AUDIT       := $(B)/libukprobe-audit.so

.PHONY: tool tool-tests tool-deps install-tool uninstall-tool
tool: $(UKP_TOOL) $(UKP_AGENT) $(UKP_AUDIT)

# The handlers and the fetch code they run: general registers only (the
# probes are KPROBE_FLAG_GPR_ONLY).
$(UKP_TOOL_OBJDIR)/handler.o $(UKP_TOOL_OBJDIR)/fetch.o: $(UKP_TOOL_OBJDIR)/%.o: $(UKP_TOOL_DIR)/%.c $(UKP_TOOL_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(UKP_TOOL_CFLAGS) -mgeneral-regs-only -fno-tree-loop-distribute-patterns -c $< -o $@

$(UKP_TOOL_OBJDIR)/%.o: $(UKP_TOOL_DIR)/%.c $(UKP_TOOL_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(UKP_TOOL_CFLAGS) -c $< -o $@

# The command finds its libraries (and libukprobes) next to itself, or in
# ../lib once installed.
$(UKP_TOOL): $(UKP_CLI_OBJS) $(B)/libukprobes.so
	$(CC) $(SANFLAGS) -o $@ $(UKP_CLI_OBJS) -L$(B) -lukprobes -lZydis -lelf \
	      -Wl,-rpath,'$$ORIGIN:$$ORIGIN/../lib' -Wl,-z,now

# Not sanitized even with SAN=1: it is preloaded into programs that are not.
$(UKP_AGENT): $(UKP_AGENT_OBJS) $(B)/libukprobes.so
	$(CC) -shared -o $@ $(UKP_AGENT_OBJS) -L$(B) -lukprobes -lZydis -lelf -lpthread -ldl \
	      -Wl,-soname,libukprobe-agent.so -Wl,-rpath,'$$ORIGIN:$$ORIGIN/..' \
	      -Wl,-z,now -Wl,-z,noexecstack -Wl,--no-undefined

$(UKP_AUDIT): $(UKP_TOOL_DIR)/audit.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARN) -fPIC -fvisibility=hidden $(CFLAGS) -shared -o $@ $< \
	      -Wl,-soname,libukprobe-audit.so -Wl,-z,now -Wl,-z,noexecstack

# ---- end-to-end tests --------------------------------------------------------

UKP_TPROG_SRCS := $(filter-out tests/tool/progs/lib%.c,$(wildcard tests/tool/progs/*.c))
UKP_TPROGS     := $(patsubst tests/tool/progs/%.c,$(B)/tests/tool-progs/%,$(UKP_TPROG_SRCS)) \
                  $(patsubst tests/tool/progs/%.c,$(B)/tests/tool-progs/%.so,$(wildcard tests/tool/progs/lib*.c))
UKP_TTESTS     := $(patsubst tests/tool/%.c,$(B)/tests/tool/%,$(wildcard tests/tool/*.c))

# Programs to trace: plain, not sanitized, symbols kept (-O1, noinline where
# the tests count calls).  A .so is built from libNAME.c sources.
$(B)/tests/tool-progs/lib%.so: tests/tool/progs/lib%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g -fPIC -shared -o $@ $<

$(B)/tests/tool-progs/%: tests/tool/progs/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -D_GNU_SOURCE $(UKP_INC) -O1 -g -o $@ $< -lpthread -ldl

# The same program without its symbol table, for the OBJ:0xOFFSET form.
$(B)/tests/tool-progs/stripped-calls: $(B)/tests/tool-progs/calls
	strip -s -o $@ $<

# A statically linked program: one the agent cannot start in.
$(B)/tests/tool-progs/static-printenv: tests/tool/progs/printenv.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -static -o $@ $<

$(B)/tests/tool/%: tests/tool/%.c $(UKP_TPROGS) $(B)/tests/tool-progs/stripped-calls \
                   $(B)/tests/tool-progs/static-printenv \
                   $(UKP_TOOL) $(UKP_AGENT) $(UKP_AUDIT) $(TEST_HARNESS_OBJ) $(TEST_HARNESS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARN) -D_GNU_SOURCE -O1 -g $(SANFLAGS) $(TEST_HARNESS_CFLAGS) \
	      -DUKP_BUILD_DIR='"$(abspath $(B))"' -DUKP_SRC_DIR='"$(abspath .)"' \
	      $(if $(SANFLAGS),-DUKP_SAN=1) -o $@ $< $(TEST_HARNESS_LIBS)

tool-tests: tool $(UKP_TPROGS) $(UKP_TTESTS)

# The real programs the tests trace (Debian packages), installed by
# `make check` when missing; a test whose program is absent is skipped.
UKP_TOOL_DEBS := gzip grep sqlite3 python3 binutils
tool-deps:
	@bash scripts/install-deps.sh $(UKP_TOOL_DEBS)
check: tool-deps

# `make tests` (and so `make check`) builds them too.
tests: tool-tests

install-tool: tool
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/ukprobe
	$(INSTALL) -m 755 $(UKP_TOOL) $(DESTDIR)$(BINDIR)/ukprobe
	$(INSTALL) -m 755 $(UKP_AGENT) $(DESTDIR)$(LIBDIR)/ukprobe/libukprobe-agent.so
	$(INSTALL) -m 755 $(UKP_AUDIT) $(DESTDIR)$(LIBDIR)/ukprobe/libukprobe-audit.so

uninstall-tool:
	rm -f $(DESTDIR)$(BINDIR)/ukprobe $(DESTDIR)$(LIBDIR)/ukprobe/libukprobe-agent.so \
	      $(DESTDIR)$(LIBDIR)/ukprobe/libukprobe-audit.so
	-rmdir $(DESTDIR)$(LIBDIR)/ukprobe 2>/dev/null

install: install-tool
uninstall: uninstall-tool
