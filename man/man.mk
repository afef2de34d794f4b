# man/man.mk - manual pages.
#
#   make install-man     (part of `make install`) copies man/*.[1-8] into
#                        $(DESTDIR)$(MANDIR)/manN/; the one-line ".so" pages
#                        (unregister_kprobe.3, ...) are installed as they are,
#                        which man-db and mandoc both follow.
#   make lint-man        render every page with groff and fail on a warning
#                        (installs groff-base when it is missing).

INSTALL      ?= install
MAN_PAGES    := $(sort $(wildcard man/*.[1-8]))
MAN_SECTIONS := $(sort $(foreach p,$(MAN_PAGES),$(subst .,,$(suffix $(p)))))

install-man:
	@set -e; for s in $(MAN_SECTIONS); do \
	  echo "$(INSTALL) -d $(DESTDIR)$(MANDIR)/man$$s"; \
	  $(INSTALL) -d $(DESTDIR)$(MANDIR)/man$$s; \
	done
	@set -e; for p in $(MAN_PAGES); do \
	  s=$${p##*.}; \
	  echo "$(INSTALL) -m 644 $$p $(DESTDIR)$(MANDIR)/man$$s/"; \
	  $(INSTALL) -m 644 $$p $(DESTDIR)$(MANDIR)/man$$s/; \
	done

uninstall-man:
	rm -f $(foreach p,$(MAN_PAGES),$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(p)))/$(notdir $(p)))

# groff -ww: all warnings; a page that warns or fails to render fails.  A
# link page (one ".so manN/page.N" line) must point at a page in man/.
lint-man:
	@bash scripts/install-deps.sh groff-base
	@set -e; n=0; for p in $(MAN_PAGES); do \
	  n=$$((n + 1)); \
	  if head -n 1 $$p | grep -q '^\.so '; then \
	    t=man/$$(head -n 1 $$p | sed 's|^\.so *man[0-9]/||'); \
	    [ -f "$$t" ] || { echo "$$p: .so target $$t missing"; exit 1; }; \
	    continue; \
	  fi; \
	  out=$$(LC_ALL=C.UTF-8 groff -t -man -Tutf8 -ww -z $$p 2>&1) || { echo "$$p: groff failed"; exit 1; }; \
	  if [ -n "$$out" ]; then echo "$$p:"; echo "$$out"; exit 1; fi; \
	done; echo "man pages: $$n checked, no warnings"

.PHONY: install-man uninstall-man lint-man
