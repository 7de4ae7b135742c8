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
LIBS     := -levent -lsqlite3 -lcrypto

# Debian packages the build and tests need.  clang and libclang-rt-14-dev:
# libFuzzer; nftables, iproute2, curl: the test cluster.
DEB_PACKAGES := build-essential pkg-config libssl-dev libcmocka-dev libjansson-dev jq \
	libevent-dev libsqlite3-dev clang libclang-rt-14-dev nftables iproute2 curl openssl sqlite3

LIB_SRCS  := $(wildcard user/ring/*.c user/placement/*.c user/drain/*.c user/proto/*.c user/token/*.c \
	user/util/*.c \
	user/store/*.c)
CTL_SRCS  := $(wildcard user/ctl/*.c user/sim/*.c)
GW_SRCS   := $(wildcard user/gateway/*.c)
SUP_SRCS  := $(wildcard user/supervisor/*.c)
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
TEST_SRCS := $(wildcard tests/unit/test_*.c)
TEST_LIB  := $(filter-out $(TEST_SRCS),$(wildcard tests/unit/*.c))
BENCH_SRCS := $(wildcard bench/*.c)

LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
CTL_OBJS  := $(CTL_SRCS:%.c=$(BUILD)/obj/%.o)
GW_OBJS   := $(GW_SRCS:%.c=$(BUILD)/obj/%.o)
SUP_OBJS  := $(SUP_SRCS:%.c=$(BUILD)/obj/%.o)
BINS      := $(BUILD)/ringsteerctl $(if $(GW_SRCS),$(BUILD)/ringsteer-gateway) \
	$(if $(SUP_SRCS),$(BUILD)/ringsteer-supervisor)
TEST_LIB_OBJS := $(TEST_LIB:%.c=$(BUILD)/obj/%.o)
TEST_BINS := $(TEST_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
BENCH_BINS := $(BENCH_SRCS:bench/%.c=$(BUILD)/bench/%)

VECTORS_SRC := ../shared/vectors
TEST_DATA   := tests/data

.PHONY: all deps test test-run check-vectors bench sim sim-doc fuzz fuzz-smoke clean
.DEFAULT_GOAL := all

all: $(BUILD)/libringsteer.a $(BUILD)/libringsteer.so $(BINS)

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

$(BUILD)/ringsteer-gateway: $(GW_OBJS) $(BUILD)/libringsteer.a
	$(CC) $(LDFLAGS) -o $@ $(GW_OBJS) $(BUILD)/libringsteer.a $(LIBS) -lm

$(BUILD)/ringsteer-supervisor: $(SUP_OBJS) $(BUILD)/libringsteer.a
	$(CC) $(LDFLAGS) -o $@ $(SUP_OBJS) $(BUILD)/libringsteer.a $(LIBS) -lm

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
	echo "== tests/cli/token_test.sh ($(BUILD))"; \
	tests/cli/token_test.sh $(BUILD)/ringsteerctl || fail=1; \
	echo "== tests/cli/store_test.sh ($(BUILD))"; \
	tests/cli/store_test.sh $(BUILD)/ringsteerctl || fail=1; \
	echo "== tests/acceptance/run.sh ($(BUILD))"; \
	tests/acceptance/run.sh $(BUILD) || fail=1; \
	exit $$fail

# Fuzzing (libFuzzer, clang): each tests/fuzz/fuzz_NAME.c links the library
# sources directly, built with -fsanitize=fuzzer,address,undefined.
FUZZ_BUILD   := build/fuzz
FUZZ_BINS    := $(FUZZ_SRCS:tests/fuzz/%.c=$(FUZZ_BUILD)/%)
FUZZ_SECONDS ?= 60
FUZZ_RUNS    ?= 20000
FUZZ_CFLAGS  := -std=c17 -g -O1 -D_GNU_SOURCE -Iinclude -Iuser -fsanitize=fuzzer,address,undefined

$(FUZZ_BUILD)/%: tests/fuzz/%.c $(LIB_SRCS)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ $< $(LIB_SRCS) $(LIBS)

# `make fuzz`: each target for FUZZ_SECONDS, growing its corpus in tests/fuzz/corpus/NAME.
fuzz: deps $(FUZZ_BINS)
	@for f in $(FUZZ_BINS); do n=$$(basename $$f); mkdir -p tests/fuzz/corpus/$$n; \
	  echo "== $$n for $(FUZZ_SECONDS) s"; \
	  $$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 tests/fuzz/corpus/$$n || exit 1; done

# Inside `make test`: a short deterministic run (fixed seed and run count)
# over the committed corpus, read-only.
fuzz-smoke: $(FUZZ_BINS)
	@for f in $(FUZZ_BINS); do n=$$(basename $$f); new=$$(mktemp -d); \
	  echo "== $$n: $(FUZZ_RUNS) runs, seed 1"; \
	  out=$$($$f -seed=1 -runs=$(FUZZ_RUNS) $$new tests/fuzz/corpus/$$n 2>&1); rc=$$?; rm -rf $$new; \
	  printf '%s\n' "$$out" | tail -n 3; [ $$rc -eq 0 ] || exit 1; done

# The suite runs twice: optimised, then under ASan and UBSan.
test: deps
	$(MAKE) test-run
	$(MAKE) SAN=1 test-run
	$(MAKE) fuzz-smoke

bench: deps all $(BENCH_BINS)
	@for b in $(BENCH_BINS); do echo "== $$b"; $$b || exit 1; done
	@echo "== bench/service_only.sh"; bench/service_only.sh $(BUILD)
	@echo "== bench/rolling_restart.sh"; bench/rolling_restart.sh $(BUILD)

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
