# packaging/packaging.mk - install, pkg-config file, ABI check.
#
#   make install PREFIX=/usr DESTDIR=/tmp/stage
#   make check-abi      exported symbols of the shared library vs the version
#                       script (src/arch/$(ARCH)/libc.map + src/ukprobes.map)
#
# Installs:
#   $(INCLUDEDIR)/ukprobes.h, $(INCLUDEDIR)/ukprobes/asm/ptrace.h (the
#   architecture's registers, from include/arch/$(ARCH)/)
#   $(LIBDIR)/libukprobes.so.$(VERSION), libukprobes.so.$(SOVERSION) -> it,
#   libukprobes.so -> libukprobes.so.$(SOVERSION), libukprobes.a
#   $(LIBDIR)/pkgconfig/ukprobes.pc
#   $(MANDIR)/man3, man7 (rules in man/man.mk: install-man)

INSTALL      ?= install
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig

# The .pc file names directories relative to ${prefix} when they lie under it,
# so that the file still reads right when a package manager relocates it.
pc_dir = $(if $(filter $(PREFIX)/%,$(1)),$${prefix}/$(patsubst $(PREFIX)/%,%,$(1)),$(1))

# Regenerated on every use: it depends on PREFIX/LIBDIR/INCLUDEDIR of this run.
$(B)/ukprobes.pc: FORCE
	@mkdir -p $(dir $@)
	@{ \
	  echo 'prefix=$(PREFIX)'; \
	  echo 'exec_prefix=$${prefix}'; \
	  echo 'libdir=$(call pc_dir,$(LIBDIR))'; \
	  echo 'includedir=$(call pc_dir,$(INCLUDEDIR))'; \
	  echo; \
	  echo 'Name: ukprobes'; \
	  echo 'Description: Kernel Probes (Kprobes) for user space: int3 probes in the running process'; \
	  echo 'Version: $(VERSION)'; \
	  echo 'Requires.private: libelf'; \
	  echo 'Cflags: -I$${includedir}'; \
	  echo 'Libs: -L$${libdir} -lukprobes'; \
	  echo 'Libs.private: -lZydis -lelf -lpthread -ldl'; \
	} > $@.tmp && mv $@.tmp $@

install: lib $(B)/ukprobes.pc install-man
	$(INSTALL) -d $(DESTDIR)$(INCLUDEDIR)/ukprobes/asm $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGCONFIGDIR)
	$(INSTALL) -m 644 include/ukprobes.h $(DESTDIR)$(INCLUDEDIR)/ukprobes.h
	$(INSTALL) -m 644 include/arch/$(ARCH)/ukprobes/asm/ptrace.h \
		$(DESTDIR)$(INCLUDEDIR)/ukprobes/asm/ptrace.h
	$(INSTALL) -m 755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/$(notdir $(LIB_SO))
	ln -sf $(notdir $(LIB_SO)) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libukprobes.so
	$(INSTALL) -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/libukprobes.a
	$(INSTALL) -m 644 $(B)/ukprobes.pc $(DESTDIR)$(PKGCONFIGDIR)/ukprobes.pc

# The files `make install` writes, for packagers and for uninstall.
uninstall: uninstall-man
	rm -f $(DESTDIR)$(INCLUDEDIR)/ukprobes.h $(DESTDIR)$(INCLUDEDIR)/ukprobes/asm/ptrace.h \
	      $(DESTDIR)$(LIBDIR)/$(notdir $(LIB_SO)) $(DESTDIR)$(LIBDIR)/$(SONAME) \
	      $(DESTDIR)$(LIBDIR)/libukprobes.so $(DESTDIR)$(LIBDIR)/libukprobes.a \
	      $(DESTDIR)$(PKGCONFIGDIR)/ukprobes.pc

check-abi: lib $(B)/ukprobes.map
	@bash tests/abi/check_abi.sh $(LIB_SO) $(B)/ukprobes.map

FORCE:
.PHONY: install uninstall check-abi FORCE
