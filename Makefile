# ukprobes - top-level Makefile.
#
#   make            build the library (build/ or, with SAN=1, build-san/)
#   make demo       build, then run the ported kprobe example (samples/)
#   make check      the whole test suite (each scenario in its own process)
#   make check SAN=1   the same under AddressSanitizer + UBSan
#   make bench      benchmarks: prints a table, writes bench/results.json
#   make install PREFIX=/usr/local DESTDIR=
#   make check HARNESS=ours   the suite with tests/harness/ instead of Criterion
#
# Other architectures (cross-compiled; run under qemu-user, or natively for
# i386 on x86-64):
#   make ARCH=aarch64             build into build-aarch64/ (build-aarch64-san/
#                                 with SAN=1), with the tools and sysroot that
#                                 scripts/cross-env ARCH installs and prints
#   make check ARCH=aarch64       the suite, each program run through qemu
#   make cross-smoke ARCH=mipsel  the test harness's self-test and a program
#                                 linked with the sysroot's libelf and zlib,
#                                 built for ARCH and run there
# ARCH is one of x86_64 i386 aarch64 arm mipsel powerpc s390x ppc64le
# riscv64; what the library builds for it comes from src/arch/ARCH/arch.mk.
#
# Sub-parts keep their rules in fragments included below (tests/tests.mk,
# bench/bench.mk, samples/samples.mk, man/man.mk).

VERSION    := 0.1.0
SOVERSION  := 0

CC         ?= cc
PREFIX     ?= /usr/local
DESTDIR    ?=
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR     ?= $(PREFIX)/share/man
BINDIR     ?= $(PREFIX)/bin

.DEFAULT_GOAL := all

# The target architecture: the host's unless given on the command line (an
# ARCH in the environment, as kernel builds set it, is not taken).
HOST_ARCH  := $(shell uname -m)
ifneq ($(origin ARCH),command line)
ARCH       := $(HOST_ARCH)
endif

# Another architecture: its own build directory, and the compiler, qemu and
# sysroot that scripts/cross-env installs (once) and prints, kept in
# build-ARCH/cross.mk (make reads it again after making it).
ifeq ($(ARCH),$(HOST_ARCH))
BUILD      := build
else
BUILD      := build-$(ARCH)
CROSS_MK   := $(BUILD)/cross.mk
include $(CROSS_MK)
# (made again when the sysroot it names is gone)
$(CROSS_MK): scripts/cross-env $(if $(wildcard $(CROSS_SYSROOT)/.ukp-sysroot),,cross-env-again)
	@mkdir -p $(dir $@)
	@bash scripts/cross-env $(ARCH) --make >$@.tmp && mv $@.tmp $@
.PHONY: cross-env-again
endif
OBJCOPY    ?= objcopy

ifeq ($(SAN),1)
B          := $(BUILD)-san
SANFLAGS   := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
# The sanitizer build also checks the library's locking rules (internal.h).
DEBUGFLAGS := -DUKP_DEBUG
else
B          := $(BUILD)
SANFLAGS   :=
endif

# The test framework: Criterion, or ours (tests/harness/: fork without exec)
# where Criterion cannot run (qemu-user) or is not packaged for ARCH.
ifeq ($(origin HARNESS),undefined)
HARNESS    := $(if $(QEMU),ours,$(if $(filter 0,$(CROSS_HAVE_CRITERION)),ours,criterion))
endif

# What the port to ARCH builds (src/arch/ARCH/arch.mk): ARCH_SRCS,
# ARCH_ASMS, ARCH_LIBS, ARCH_GPR_CFLAGS, ARCH_OPTPROBES.
ARCH_MK    := $(wildcard src/arch/$(ARCH)/arch.mk)
ifneq ($(ARCH_MK),)
include $(ARCH_MK)
endif

# The public header, and the architecture's part of it (<ukprobes/asm/ptrace.h>).
UKP_INC    := -Iinclude -Iinclude/arch/$(ARCH)
WARN       := -Wall -Wextra -Wno-unused-parameter -Wshadow -Wstrict-prototypes
CFLAGS     ?= -O2 -g
LIB_CFLAGS := -std=gnu11 $(WARN) -fPIC -fvisibility=hidden -D_GNU_SOURCE \
              $(UKP_INC) -Isrc -Isrc/arch -Isrc/arch/$(ARCH) $(SANFLAGS) $(DEBUGFLAGS) $(CFLAGS) $(CROSS_CFLAGS)
LIB_LIBS   := $(ARCH_LIBS) -lelf -lpthread -ldl

# The jump optimizer is built where the port has optimized probes
# (ARCH_OPTPROBES := y in its arch.mk); elsewhere every probe traps.
OPT_SRCS   := src/optprobes.c src/opt_callback_gpr.c
ifeq ($(ARCH_OPTPROBES),y)
LIB_SRCS   := $(filter-out src/optprobes_none.c,$(wildcard src/*.c)) $(ARCH_SRCS)
else
LIB_SRCS   := $(filter-out $(OPT_SRCS),$(wildcard src/*.c)) $(ARCH_SRCS)
endif
LIB_ASMS   := $(ARCH_ASMS)
LIB_OBJS   := $(patsubst %.c,$(B)/%.o,$(LIB_SRCS)) $(patsubst %.S,$(B)/%.o,$(LIB_ASMS))
LIB_HDRS   := include/ukprobes.h include/arch/$(ARCH)/ukprobes/asm/ptrace.h $(wildcard src/*.h) $(wildcard src/arch/*.h) $(wildcard src/arch/$(ARCH)/*.h)

SONAME     := libukprobes.so.$(SOVERSION)
LIB_SO     := $(B)/libukprobes.so.$(VERSION)
LIB_A      := $(B)/libukprobes.a

# Programs built against the in-tree library find it through this rpath.
LINK_UKP   := -L$(B) -Wl,-rpath,$(abspath $(B)) -lukprobes

.PHONY: all lib demo check bench install clean deps no-port
all: lib tool
lib: $(if $(ARCH_MK),,no-port) $(LIB_SO) $(LIB_A) $(B)/libukprobes.so

no-port:
	@echo "ukprobes is not ported to $(ARCH) yet (no src/arch/$(ARCH)/arch.mk); make cross-smoke ARCH=$(ARCH) checks the toolchain" >&2
	@exit 1

$(B)/%.o: %.c $(LIB_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) -c $< -o $@

$(B)/%.o: %.S $(wildcard src/arch/$(ARCH)/*.S.h)
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) -c $< -o $@

# Code that runs where only the general registers were saved (*_gpr.c):
# no vector register, no sanitizer runtime call (it would use them).
$(B)/%_gpr.o: %_gpr.c $(LIB_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) $(ARCH_GPR_CFLAGS) -fno-tree-loop-distribute-patterns -fno-sanitize=all -c $< -o $@

# The version script: the port's libc version nodes, then the API's.
$(B)/ukprobes.map: src/arch/$(ARCH)/libc.map src/ukprobes.map
	@mkdir -p $(dir $@)
	cat $^ > $@

$(LIB_SO): $(LIB_OBJS) $(B)/ukprobes.map
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=$(B)/ukprobes.map \
	      -Wl,-z,now -Wl,-z,noexecstack -Wl,--no-undefined $(SANFLAGS) -o $@ $(LIB_OBJS) \
	      $(CROSS_LDFLAGS) $(LIB_LIBS)

$(B)/libukprobes.so: $(LIB_SO)
	ln -sf $(notdir $(LIB_SO)) $(B)/$(SONAME)
	ln -sf $(notdir $(LIB_SO)) $@

# The static archive: one relocatable object whose hidden symbols are made
# local, so nothing but the API can clash with the program it is linked into.
$(LIB_A): $(LIB_OBJS)
	$(LD) -r -o $(B)/ukprobes-prelink.o $(LIB_OBJS)
	$(OBJCOPY) --localize-hidden $(B)/ukprobes-prelink.o $(B)/ukprobes-static.o
	rm -f $@ && $(AR) rcs $@ $(B)/ukprobes-static.o

# Debian packages the build, the tests and the demo need; installed when
# missing (as root), so that the README's two commands work on a new machine.
DEB_PKGS := gcc make libzydis-dev libelf-dev libcriterion-dev zlib1g-dev pkg-config binutils
deps:
	@bash scripts/install-deps.sh $(DEB_PKGS)

-include tests/tests.mk
-include bench/bench.mk
-include samples/samples.mk
-include man/man.mk
-include packaging/packaging.mk
-include tools/tools.mk

clean:
	rm -rf build build-san build-* bench/results.json
