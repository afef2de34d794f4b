# samples/samples.mk - the ported kernel samples and the demo.
#
#   make demo        install missing packages (deps), build the library and
#                    samples/demo_program (demo_program.c + the kernel's
#                    kprobe_example.c, ported), then run it twice:
#                      symbol=do_work   handlers at each call of do_work()
#                      symbol=peek      a fault in the probed instruction:
#                                       fault_handler, then the program's own
#                                       SIGSEGV handler
#                    then kretprobe_demo (kretprobe_example.c: the failed
#                    calls of libc's open64()) and jprobe_demo
#                    (jprobe_example.c: the arguments of posix_spawn())
#   make samples-build   build only.

SAMPLE_CFLAGS := -std=gnu11 $(WARN) -D_GNU_SOURCE $(UKP_INC) -Isamples $(SANFLAGS) -O2 -g
DEMO_PROGRAM  := $(B)/samples/demo_program
DEMO_SRCS     := samples/demo_program.c samples/kprobe_example.c

$(DEMO_PROGRAM): $(DEMO_SRCS) samples/kernel_compat.h include/ukprobes.h $(LIB_SO) $(B)/libukprobes.so
	@mkdir -p $(dir $@)
	$(CC) $(SAMPLE_CFLAGS) -o $@ $(DEMO_SRCS) $(LINK_UKP)

# The other ported samples: samples/NAME_demo.c + samples/NAME_example.c.
SAMPLE_DEMOS  := $(B)/samples/kretprobe_demo $(B)/samples/jprobe_demo

$(B)/samples/%_demo: samples/%_demo.c samples/%_example.c samples/kernel_compat.h samples/ktime_compat.h include/ukprobes.h $(LIB_SO) $(B)/libukprobes.so
	@mkdir -p $(dir $@)
	$(CC) $(SAMPLE_CFLAGS) -o $@ samples/$*_demo.c samples/$*_example.c $(LINK_UKP)

samples-build: lib $(DEMO_PROGRAM) $(SAMPLE_DEMOS)

# deps first, then the library and the program (in a sub-make, so that a
# parallel make cannot compile before the packages are there).
demo: deps
	@$(MAKE) --no-print-directory lib $(DEMO_PROGRAM) $(SAMPLE_DEMOS)
	@echo "=== demo_program symbol=do_work   (insmod kprobe_example.ko symbol=do_work)"
	$(DEMO_PROGRAM) symbol=do_work
	@echo "=== demo_program symbol=peek      (the probed instruction faults once)"
	$(DEMO_PROGRAM) symbol=peek
	@echo "=== kretprobe_demo                 (insmod kretprobe_example.ko func=libc.so.6:open64)"
	$(B)/samples/kretprobe_demo
	@echo "=== jprobe_demo                    (insmod jprobe_example.ko)"
	$(B)/samples/jprobe_demo

.PHONY: demo samples-build
