# ukprobes - top-level Makefile.
#
#   make            build the library (build/ or, with SAN=1, build-san/)
#   make demo       build, then run the ported kprobe example (samples/)
#   make check      the whole test suite (each scenario in its own process)
#   make check SAN=1   the same under AddressSanitizer + UBSan
#   make bench      benchmarks: prints a table, writes bench/results.json
#   make install PREFIX=/usr/local DESTDIR=
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

ifeq ($(SAN),1)
B          := build-san
SANFLAGS   := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
B          := build
SANFLAGS   :=
endif

ARCH       := $(shell uname -m)
WARN       := -Wall -Wextra -Wno-unused-parameter -Wshadow -Wstrict-prototypes
CFLAGS     ?= -O2 -g
LIB_CFLAGS := -std=gnu11 $(WARN) -fPIC -fvisibility=hidden -D_GNU_SOURCE \
              -Iinclude -Isrc -Isrc/arch -Isrc/arch/$(ARCH) $(SANFLAGS) $(CFLAGS)
LIB_LIBS   := -lZydis -lelf -lpthread -ldl

LIB_SRCS   := $(wildcard src/*.c) $(wildcard src/arch/$(ARCH)/*.c)
LIB_ASMS   := $(wildcard src/arch/$(ARCH)/*.S)
LIB_OBJS   := $(patsubst %.c,$(B)/%.o,$(LIB_SRCS)) $(patsubst %.S,$(B)/%.o,$(LIB_ASMS))
LIB_HDRS   := include/ukprobes.h $(wildcard src/*.h) $(wildcard src/arch/*.h) $(wildcard src/arch/$(ARCH)/*.h)

SONAME     := libukprobes.so.$(SOVERSION)
LIB_SO     := $(B)/libukprobes.so.$(VERSION)
LIB_A      := $(B)/libukprobes.a

# Programs built against the in-tree library find it through this rpath.
LINK_UKP   := -L$(B) -Wl,-rpath,$(abspath $(B)) -lukprobes

.PHONY: all lib demo check bench install clean deps
all: lib tool
lib: $(LIB_SO) $(LIB_A) $(B)/libukprobes.so

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
	$(CC) $(LIB_CFLAGS) -mgeneral-regs-only -fno-tree-loop-distribute-patterns -fno-sanitize=all -c $< -o $@

$(LIB_SO): $(LIB_OBJS) src/ukprobes.map
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=src/ukprobes.map \
	      -Wl,-z,now -Wl,-z,noexecstack -Wl,--no-undefined $(SANFLAGS) -o $@ $(LIB_OBJS) $(LIB_LIBS)

$(B)/libukprobes.so: $(LIB_SO)
	ln -sf $(notdir $(LIB_SO)) $(B)/$(SONAME)
	ln -sf $(notdir $(LIB_SO)) $@

# The static archive: one relocatable object whose hidden symbols are made
# local, so nothing but the API can clash with the program it is linked into.
$(LIB_A): $(LIB_OBJS)
	ld -r -o $(B)/ukprobes-prelink.o $(LIB_OBJS)
	objcopy --localize-hidden $(B)/ukprobes-prelink.o $(B)/ukprobes-static.o
	rm -f $@ && ar rcs $@ $(B)/ukprobes-static.o

# Debian packages the build, the tests and the demo need; installed when
# missing (as root), so that the README's two commands work on a new machine.
DEB_PKGS := gcc g++ make libzydis-dev libelf-dev libcriterion-dev zlib1g-dev pkg-config binutils
deps:
	@bash scripts/install-deps.sh $(DEB_PKGS)

-include tests/tests.mk
-include bench/bench.mk
-include samples/samples.mk
-include man/man.mk
-include packaging/packaging.mk
-include tools/tools.mk

clean:
	rm -rf build build-san bench/results.json
