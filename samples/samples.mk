# samples/samples.mk - the ported kernel samples and the demo.
#
#   make demo        install missing packages (deps), build the library and
#                    samples/demo_program (demo_program.c + the kernel's
#                    kprobe_example.c, ported), then run it twice:
#                      symbol=do_work   handlers at each call of do_work()
#                      symbol=peek      a fault in the probed instruction:
#                                       fault_handler, then the program's own
#                                       SIGSEGV handler
#   make samples-build   build only.

SAMPLE_CFLAGS := -std=gnu11 $(WARN) -D_GNU_SOURCE -Iinclude -Isamples $(SANFLAGS) -O2 -g
DEMO_PROGRAM  := $(B)/samples/demo_program
DEMO_SRCS     := samples/demo_program.c samples/kprobe_example.c

$(DEMO_PROGRAM): $(DEMO_SRCS) samples/kernel_compat.h include/ukprobes.h $(LIB_SO) $(B)/libukprobes.so
	@mkdir -p $(dir $@)
	$(CC) $(SAMPLE_CFLAGS) -o $@ $(DEMO_SRCS) $(LINK_UKP)

samples-build: lib $(DEMO_PROGRAM)

# deps first, then the library and the program (in a sub-make, so that a
# parallel make cannot compile before the packages are there).
demo: deps
	@$(MAKE) --no-print-directory lib $(DEMO_PROGRAM)
	@echo "=== demo_program symbol=do_work   (insmod kprobe_example.ko symbol=do_work)"
	$(DEMO_PROGRAM) symbol=do_work
	@echo "=== demo_program symbol=peek      (the probed instruction faults once)"
	$(DEMO_PROGRAM) symbol=peek

.PHONY: demo samples-build
