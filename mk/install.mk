# SPDX-License-Identifier: Apache-2.0
# make install [PREFIX=/usr/local] [DESTDIR=]: the library (shared, its two
# links, static), the public headers only (include/ringsteer/*.h: the
# internal ones live under user/), ringsteer.pc, the programs, the licences.
# DESTDIR stages a tree (a package build, tests/install/install_test.sh);
# PREFIX is where it will run, so it alone goes into ringsteer.pc.

BINDIR  ?= $(PREFIX)/bin
DOCDIR  ?= $(PREFIX)/share/doc/ringsteer
RS_PUBLIC_HEADERS = $(wildcard include/ringsteer/*.h)

.PHONY: install uninstall
install: all
	install -D -m 755 $(BUILD)/$(RS_SO_FILE) $(DESTDIR)$(LIBDIR)/$(RS_SO_FILE)
	ln -sfn $(RS_SO_FILE) $(DESTDIR)$(LIBDIR)/$(RS_SONAME)
	ln -sfn $(RS_SO_FILE) $(DESTDIR)$(LIBDIR)/libringsteer.so
	install -D -m 644 $(BUILD)/libringsteer.a $(DESTDIR)$(LIBDIR)/libringsteer.a
	install -D -m 644 $(BUILD)/ringsteer.pc $(DESTDIR)$(LIBDIR)/pkgconfig/ringsteer.pc
	install -D -m 644 -t $(DESTDIR)$(INCLUDEDIR)/ringsteer $(RS_PUBLIC_HEADERS)
	install -D -m 755 -t $(DESTDIR)$(BINDIR) $(BINS)
	install -D -m 644 LICENSE $(DESTDIR)$(DOCDIR)/LICENSE
	install -D -m 644 -t $(DESTDIR)$(DOCDIR)/LICENSES $(wildcard LICENSES/*)

# Removes what install wrote (by name: a header since deleted from the tree
# is left behind), and the directories that were ringsteer's alone.
uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/$(RS_SO_FILE) $(DESTDIR)$(LIBDIR)/$(RS_SONAME) \
	  $(DESTDIR)$(LIBDIR)/libringsteer.so $(DESTDIR)$(LIBDIR)/libringsteer.a \
	  $(DESTDIR)$(LIBDIR)/pkgconfig/ringsteer.pc \
	  $(addprefix $(DESTDIR)$(INCLUDEDIR)/ringsteer/,$(notdir $(RS_PUBLIC_HEADERS))) \
	  $(addprefix $(DESTDIR)$(BINDIR)/,$(notdir $(BINS)))
	rm -rf $(DESTDIR)$(DOCDIR)
	rmdir $(DESTDIR)$(INCLUDEDIR)/ringsteer 2>/dev/null || true
