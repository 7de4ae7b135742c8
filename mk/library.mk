# SPDX-License-Identifier: Apache-2.0
# libringsteer as a shared library: only what a public header declares with
# RS_EXPORT is exported (include/ringsteer/export.h), so the library
# objects are compiled with hidden visibility.  libringsteer.a is made of
# the same objects: the programs link it statically and still reach every
# internal function (hidden visibility only leaves the dynamic symbol table).

PREFIX     ?= /usr/local
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include

$(LIB_OBJS): CFLAGS += -fvisibility=hidden

# The objects depend on the flags they were built with, so that a tree built
# before -fvisibility=hidden (or with other EXTRA_CFLAGS) is rebuilt rather
# than exporting everything.  The stamp is rewritten only when they change.
RS_LIB_FLAGS := $(BUILD)/obj/lib.flags
$(LIB_OBJS): $(RS_LIB_FLAGS)
$(RS_LIB_FLAGS): FORCE
	@mkdir -p $(dir $@)
	@echo '$(CC) $(CFLAGS) -fvisibility=hidden' > $@.tmp; \
	 if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

$(BUILD)/$(RS_SO_FILE): $(LIB_OBJS)
	$(CC) -shared -Wl,-soname,$(RS_SONAME) $(LDFLAGS) -o $@ $(LIB_OBJS) $(LIBS)

# The SONAME link is what the loader looks for; the unversioned one is
# what `-lringsteer` finds at link time.
$(BUILD)/$(RS_SONAME) $(BUILD)/libringsteer.so: $(BUILD)/$(RS_SO_FILE)
	ln -sfn $(RS_SO_FILE) $@

# ringsteer.pc for PREFIX (rewritten only when PREFIX or the version change).
$(BUILD)/ringsteer.pc: ringsteer.pc.in $(RS_VERSION_H) FORCE
	@mkdir -p $(dir $@)
	@sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' \
	  -e 's|@VERSION@|$(RS_VERSION)|g' ringsteer.pc.in > $@.tmp; \
	 if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

.PHONY: FORCE
FORCE:
