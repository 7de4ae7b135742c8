# SPDX-License-Identifier: Apache-2.0
# The library's version, read from include/ringsteer/version.h: the header
# is the one source, so the file name, the SONAME and ringsteer.pc follow
# whatever it says.  The SONAME carries the major only: a minor or patch
# release must stay binary compatible.

RS_VERSION_H := include/ringsteer/version.h
rs_version_field = $(shell awk '/^.define RINGSTEER_VERSION_$(1) / { print $$3 }' $(RS_VERSION_H))
RS_VERSION_MAJOR := $(call rs_version_field,MAJOR)
RS_VERSION_MINOR := $(call rs_version_field,MINOR)
RS_VERSION_PATCH := $(call rs_version_field,PATCH)
ifeq ($(strip $(RS_VERSION_MAJOR)),)
$(error cannot read RINGSTEER_VERSION_MAJOR from $(RS_VERSION_H))
endif
RS_VERSION := $(RS_VERSION_MAJOR).$(RS_VERSION_MINOR).$(RS_VERSION_PATCH)
RS_SONAME  := libringsteer.so.$(RS_VERSION_MAJOR)
RS_SO_FILE := libringsteer.so.$(RS_VERSION)

# The commit the build comes from, for `--version` and ringsteer_build_info:
# git's abbreviated hash ("-dirty" with uncommitted changes), or "unknown"
# outside a checkout; `make RS_COMMIT=...` sets it (an image built from a
# tree without .git).  Only version.o sees it; the stamp changes, and so
# rebuilds version.o, only when the commit does.
RS_COMMIT ?= $(shell git -C $(CURDIR) describe --always --dirty --abbrev=12 --exclude='*' 2>/dev/null || echo unknown)
ifeq ($(strip $(RS_COMMIT)),)
RS_COMMIT := unknown
endif
RS_COMMIT_STAMP := $(BUILD)/gen/commit
$(RS_COMMIT_STAMP): FORCE
	@mkdir -p $(@D)
	@echo '$(RS_COMMIT)' | cmp -s - $@ || echo '$(RS_COMMIT)' > $@
$(BUILD)/obj/user/util/version.o: $(RS_COMMIT_STAMP)
$(BUILD)/obj/user/util/version.o: CFLAGS += -DRS_BUILD_COMMIT='"$(RS_COMMIT)"'
.PHONY: FORCE
FORCE:
