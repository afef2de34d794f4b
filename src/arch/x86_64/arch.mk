# src/arch/x86_64/arch.mk - what the x86-64 port adds to the build (read by
# the top-level Makefile when ARCH=x86_64; every port has one such file).
#
#   ARCH_SRCS        C sources of the port, compiled into the library
#   ARCH_ASMS        its assembly (.S)
#   ARCH_LIBS        libraries the port links (before -lelf -lpthread -ldl)
#   ARCH_GPR_CFLAGS  what keeps the compiler to the general registers in the
#                    *_gpr.c files (code that runs where only they are saved)
#   ARCH_OPTPROBES   y when the port has jump-optimized probes (the arch_*opt*
#                    hooks of src/arch/arch.h): the core's optimizer is built

ARCH_SRCS       := $(wildcard src/arch/x86_64/*.c)
ARCH_ASMS       := $(wildcard src/arch/x86_64/*.S)
ARCH_LIBS       := -lZydis
ARCH_GPR_CFLAGS := -mgeneral-regs-only
ARCH_OPTPROBES  := y
