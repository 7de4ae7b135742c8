# ringsteer - build, test, bench.  `make test` and `make bench` are each one
# command on a fresh Debian 12 machine: they install what they need first.

CC       ?= cc
SAN      ?= 0
BUILD    ?= build
ifeq ($(SAN),1)
BUILD    := $(BUILD)/san
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
OPT      := -O1
else
OPT      := -O2
endif

CFLAGS   := -std=c17 -Wall -Wextra -Werror $(OPT) -g -fPIC -D_GNU_SOURCE -Iinclude $(SANFLAGS) $(EXTRA_CFLAGS)
LDFLAGS  := $(SANFLAGS)
LIBS     := -lcrypto

# Debian packages the build and tests need (issue #2 scope; later parts add theirs).
DEB_PACKAGES := build-essential pkg-config libssl-dev libcmocka-dev libjansson-dev jq

LIB_SRCS  := $(wildcard user/ring/*.c user/placement/*.c user/drain/*.c)
CTL_SRCS  := $(wildcard user/ctl/*.c user/sim/*.c)
TEST_SRCS := $(wildcard tests/unit/test_*.c)
TEST_LIB  := $(filter-out $(TEST_SRCS),$(wildcard tests/unit/*.c))
BENCH_SRCS := $(wildcard bench/*.c)

LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
CTL_OBJS  := $(CTL_SRCS:%.c=$(BUILD)/obj/%.o)
TEST_LIB_OBJS := $(TEST_LIB:%.c=$(BUILD)/obj/%.o)
TEST_BINS := $(TEST_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
BENCH_BINS := $(BENCH_SRCS:bench/%.c=$(BUILD)/bench/%)

VECTORS_SRC := ../shared/vectors
TEST_DATA   := tests/data

.PHONY: all deps test test-run check-vectors bench sim sim-doc clean
.DEFAULT_GOAL := all

all: $(BUILD)/libringsteer.a $(BUILD)/libringsteer.so $(BUILD)/ringsteerctl

deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed$$' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing$$missing"; \
	  SUDO=; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Iuser -MMD -MP -c $< -o $@

$(BUILD)/libringsteer.a: $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libringsteer.so: $(LIB_OBJS)
	$(CC) -shared -Wl,-soname,libringsteer.so.0 $(LDFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/ringsteerctl: $(CTL_OBJS) $(BUILD)/libringsteer.a
	$(CC) $(LDFLAGS) -o $@ $(CTL_OBJS) $(BUILD)/libringsteer.a $(LIBS) -lm

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(TEST_LIB_OBJS) $(BUILD)/libringsteer.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(TEST_LIB_OBJS) $(BUILD)/libringsteer.a $(LIBS) -lcmocka -ljansson

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(BUILD)/libringsteer.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(BUILD)/libringsteer.a $(LIBS)

# The vectors are computed outside the project; keep tests/data in step with
# ../shared/vectors when it is present, so the suite also runs without it.
check-vectors:
	@if [ -d $(VECTORS_SRC) ]; then \
	  for f in $(VECTORS_SRC)/*.json; do \
	    cmp -s $$f $(TEST_DATA)/$$(basename $$f) || { cp $$f $(TEST_DATA)/ && echo "vectors: refreshed $$(basename $$f)"; }; \
	  done; \
	fi

# One pass of the suite in $(BUILD): unit tests (cmocka), then the CLI tests.
test-run: all $(TEST_BINS) check-vectors
	@fail=0; for t in $(TEST_BINS); do \
	  echo "== $$t"; RS_TEST_DATA=$(TEST_DATA) $$t || fail=1; \
	done; \
	echo "== tests/cli/ctl_test.sh ($(BUILD))"; \
	tests/cli/ctl_test.sh $(BUILD)/ringsteerctl $(TEST_DATA) || fail=1; \
	echo "== tests/cli/sim_test.sh ($(BUILD))"; \
	tests/cli/sim_test.sh $(BUILD)/ringsteerctl || fail=1; \
	exit $$fail

# The suite runs twice: optimised, then under ASan and UBSan.
test: deps
	$(MAKE) test-run
	$(MAKE) SAN=1 test-run

bench: deps all $(BENCH_BINS)
	@for b in $(BENCH_BINS); do echo "== $$b"; $$b || exit 1; done

sim: deps all
	$(BUILD)/ringsteerctl sim

# Rewrites the tables in docs/SIMULATION.md from the simulator's own output.
sim-doc: deps all
	$(BUILD)/ringsteerctl sim --markdown > $(BUILD)/sim.md
	awk -v tables=$(BUILD)/sim.md ' \
	  /<!-- sim:end -->/ { while ((getline line < tables) > 0) print line; skip = 0 } \
	  !skip { print } \
	  /<!-- sim:begin -->/ { skip = 1 }' docs/SIMULATION.md > $(BUILD)/SIMULATION.md
	mv $(BUILD)/SIMULATION.md docs/SIMULATION.md

clean:
	rm -rf build

# Objects are kept between runs (make would delete them as intermediates).
.SECONDARY:

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
