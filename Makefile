# SPDX-License-Identifier: Apache-2.0
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
include mk/version.mk

# libpq's headers live outside the default include path on Debian.
PG_CFLAGS := -I$(shell pg_config --includedir 2>/dev/null || echo /usr/include/postgresql)
CFLAGS   := -std=c17 -Wall -Wextra -Werror $(OPT) -g -fPIC -D_GNU_SOURCE -Iinclude $(PG_CFLAGS) $(SANFLAGS) $(EXTRA_CFLAGS)
LDFLAGS  := $(SANFLAGS) -pthread
LIBS     := -levent_openssl -levent -lsqlite3 -lssl -lcrypto -lpq

# Debian packages the build and tests need.  uthash-dev (header only): the
# gateway's connections by member id and its unauthenticated sources, the
# agent's known supervisors.  clang and libclang-rt-14-dev:
# libFuzzer; nftables, iproute2, curl: the test cluster; prometheus
# (promtool, and the server the dashboard test queries) and python3-yaml: the
# /metrics lint and the deploy/ manifest and dashboard tests.
# BUILD_PACKAGES: what `make all` needs, and all the image's build stage
# installs (deploy/Dockerfile takes this list).  libjansson-dev: ringsteerctl's
# --json (and the unit tests' vector files).
BUILD_PACKAGES := build-essential pkg-config libssl-dev libevent-dev libsqlite3-dev libpq-dev \
	clang bpftool libbpf-dev uthash-dev libjansson-dev
DEB_PACKAGES := $(BUILD_PACKAGES) libcmocka-dev jq \
	libclang-rt-14-dev nftables iproute2 curl openssl sqlite3 \
	prometheus python3-yaml
# postgresql and libpq-dev: the PostgreSQL store backend (libpq) and the
# throwaway server its tests and benchmark run against (tests/pg/pg_server.sh).
DEB_PACKAGES += postgresql libpq-dev
# valgrind: the gateways and the agent under memcheck (make valgrind).
DEB_PACKAGES += valgrind
# faketime (libfaketime): one gateway's wall clock stepped in the fault
# matrix (tests/faults/f_7_clock_step.sh); a time namespace cannot move
# CLOCK_REALTIME.
DEB_PACKAGES += faketime

LIB_SRCS  := $(wildcard user/ring/*.c user/placement/*.c user/drain/*.c user/proto/*.c user/token/*.c \
	user/util/*.c user/tls/*.c user/registration/*.c \
	user/store/*.c user/gwcore/*.c user/member/*.c)
CTL_SRCS  := $(wildcard user/ctl/*.c user/sim/*.c)
GW_SRCS   := $(wildcard user/gateway/*.c)
SUP_SRCS  := $(wildcard user/supervisor/*.c)
SWARM_SRCS := $(wildcard user/swarm/*.c)
# The deterministic simulator of the real cores (docs/SIMULATION.md): a
# developer's tool, built by `make all` but not installed.
VOPR_SRCS := $(wildcard user/vopr/*.c)
AGENT_SRCS := $(wildcard user/agent/*.c)
# The reader of the agent's maps (libbpf): linked into the agent and ringsteerctl.
MAPS_SRCS := $(wildcard user/maps/*.c)
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
TEST_SRCS := $(wildcard tests/unit/test_*.c)
TEST_LIB  := $(filter-out $(TEST_SRCS),$(wildcard tests/unit/*.c))
BENCH_SRCS := $(wildcard bench/*.c)

LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
CTL_OBJS  := $(CTL_SRCS:%.c=$(BUILD)/obj/%.o)
MAPS_OBJS := $(MAPS_SRCS:%.c=$(BUILD)/obj/%.o)
GW_OBJS   := $(GW_SRCS:%.c=$(BUILD)/obj/%.o)
SUP_OBJS  := $(SUP_SRCS:%.c=$(BUILD)/obj/%.o)
SWARM_OBJS := $(SWARM_SRCS:%.c=$(BUILD)/obj/%.o)
VOPR_OBJS := $(VOPR_SRCS:%.c=$(BUILD)/obj/%.o)
VOPR      := $(if $(VOPR_SRCS),$(BUILD)/ringsteer-vopr)
BINS      := $(BUILD)/ringsteerctl $(if $(GW_SRCS),$(BUILD)/ringsteer-gateway) \
	$(if $(SUP_SRCS),$(BUILD)/ringsteer-supervisor) $(if $(AGENT_SRCS),$(BUILD)/ringsteer-agent) \
	$(if $(SWARM_SRCS),$(BUILD)/ringsteer-swarm)
TEST_LIB_OBJS := $(TEST_LIB:%.c=$(BUILD)/obj/%.o)
TEST_BINS := $(TEST_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
BENCH_BINS := $(BENCH_SRCS:bench/%.c=$(BUILD)/bench/%)

VECTORS_SRC := ../shared/vectors
TEST_DATA   := tests/data

.PHONY: all deps test test-run check-vectors bench sim sim-doc fuzz fuzz-smoke clean
.DEFAULT_GOAL := all

all: $(BUILD)/libringsteer.a $(BUILD)/libringsteer.so $(BUILD)/$(RS_SONAME) $(BUILD)/ringsteer.pc $(BINS) $(VOPR)

# $(call install_missing,PACKAGES): apt-get installs those of PACKAGES that
# are not installed; does nothing (no apt-get at all) when all are.
define install_missing
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed$$' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

deps:
	$(call install_missing,$(DEB_PACKAGES))

# The data-path half of `make compare` (bench/compare/datapath.sh, report.sh):
# iperf3 (throughput), sockperf (ping-pong round trip), gnuplot-nox (the
# report's chart).  `compare-deps` chains this target.
COMPARE_DATAPATH_PACKAGES := iperf3 sockperf gnuplot-nox
.PHONY: compare-datapath-deps
compare-datapath-deps:
	$(call install_missing,$(COMPARE_DATAPATH_PACKAGES))
# bench/compare/report.sh on a fixture: it writes the report, and fails when
# any contender lacks a figure (the check `make compare-quick` relies on).
.PHONY: compare-report-test
compare-report-test: compare-datapath-deps
	tests/compare/report_test.sh

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Iuser -MMD -MP -c $< -o $@

$(BUILD)/libringsteer.a: $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

include mk/library.mk
include mk/install.mk
include mk/deploy.mk

$(BUILD)/ringsteerctl: $(CTL_OBJS) $(MAPS_OBJS) $(BUILD)/libringsteer.a
	$(CC) $(LDFLAGS) -o $@ $(CTL_OBJS) $(MAPS_OBJS) $(BUILD)/libringsteer.a $(LIBS) -lm

$(BUILD)/ringsteer-gateway: $(GW_OBJS) $(BUILD)/libringsteer.a
	$(CC) $(LDFLAGS) -o $@ $(GW_OBJS) $(BUILD)/libringsteer.a $(LIBS) -lm

$(BUILD)/ringsteer-supervisor: $(SUP_OBJS) $(BUILD)/libringsteer.a
	$(CC) $(LDFLAGS) -o $@ $(SUP_OBJS) $(BUILD)/libringsteer.a $(LIBS) -lm

$(BUILD)/ringsteer-swarm: $(SWARM_OBJS) $(BUILD)/libringsteer.a
	$(CC) $(LDFLAGS) -o $@ $(SWARM_OBJS) $(BUILD)/libringsteer.a $(LIBS) -lm

# The simulator prints the policy model's tables beside the cores' (tables.c): it links the model.
SIM_OBJS := $(filter $(BUILD)/obj/user/sim/%,$(CTL_OBJS))
$(BUILD)/ringsteer-vopr: $(VOPR_OBJS) $(SIM_OBJS) $(BUILD)/libringsteer.a
	$(CC) $(LDFLAGS) -o $@ $(VOPR_OBJS) $(SIM_OBJS) $(BUILD)/libringsteer.a $(LIBS) -lm

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(TEST_LIB_OBJS) $(BUILD)/libringsteer.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(TEST_LIB_OBJS) $(BUILD)/libringsteer.a $(LIBS) -lcmocka -ljansson

# The swarm's gap bookkeeping is pure (user/swarm/gap.c): its test links it.
$(BUILD)/tests/test_swarm_gap: $(BUILD)/obj/tests/unit/test_swarm_gap.o $(BUILD)/obj/user/swarm/gap.o $(TEST_LIB_OBJS) $(BUILD)/libringsteer.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(BUILD)/obj/user/swarm/gap.o $(TEST_LIB_OBJS) $(BUILD)/libringsteer.a $(LIBS) -lcmocka -ljansson

# The gateway's unauthenticated pool and its fairness (user/gateway/unauth*.c): its test links them.
UNAUTH_TEST_OBJS := $(BUILD)/obj/user/gateway/unauth.o $(BUILD)/obj/user/gateway/unauth_fair.o
$(BUILD)/tests/test_unauth: $(BUILD)/obj/tests/unit/test_unauth.o $(UNAUTH_TEST_OBJS) $(TEST_LIB_OBJS) $(BUILD)/libringsteer.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(UNAUTH_TEST_OBJS) $(TEST_LIB_OBJS) $(BUILD)/libringsteer.a $(LIBS) -lcmocka -ljansson

# The member socket's limits are pure (user/agent/reg_limit.c): its test links them.
$(BUILD)/tests/test_reg_limit: $(BUILD)/obj/tests/unit/test_reg_limit.o $(BUILD)/obj/user/agent/reg_limit.o $(TEST_LIB_OBJS) $(BUILD)/libringsteer.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(BUILD)/obj/user/agent/reg_limit.o $(TEST_LIB_OBJS) $(BUILD)/libringsteer.a $(LIBS) -lcmocka -ljansson

# The reader of the agent's maps: its test links it and libbpf.
$(BUILD)/obj/tests/unit/test_map_read.o: CFLAGS += -Ibpf
$(BUILD)/tests/test_map_read: $(BUILD)/obj/tests/unit/test_map_read.o $(MAPS_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(MAPS_OBJS) -lbpf -lcmocka

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(BUILD)/libringsteer.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(BUILD)/libringsteer.a $(LIBS)

# ---- the kernel side: BPF programs, skeletons, the agent ------------------
# The programs read only uapi contexts (bpf/kernel_uapi.h: <linux/bpf.h>, no
# vmlinux.h, no CO-RE relocation), so they build the same on any host.  The
# target architecture is the machine's (uname -m) unless ARCH says otherwise
# (`make ARCH=arm64 BUILD=build/arm64 bpf`): it names __TARGET_ARCH_* and the
# target's asm/ headers (Debian's multiarch dir, else the cross package
# linux-libc-dev-arm64-cross).  Skeletons are generated by bpftool and not
# committed.  BPF objects do not depend on SAN, but live in $(BUILD) like
# everything else.
ARCH       ?= $(shell uname -m)
BPF_ARCH   := $(or $(if $(filter x86_64 amd64 x86,$(ARCH)),x86),$(if $(filter aarch64 arm64,$(ARCH)),arm64),$(ARCH))
BPF_TRIPLE := $(if $(filter x86,$(BPF_ARCH)),x86_64-linux-gnu,$(if $(filter arm64,$(BPF_ARCH)),aarch64-linux-gnu,$(ARCH)-linux-gnu))
BPF_ASM_INC := $(firstword $(wildcard /usr/include/$(BPF_TRIPLE) /usr/$(BPF_TRIPLE)/include) /usr/include/$(BPF_TRIPLE))
BPF_SRCS   := $(wildcard bpf/*.bpf.c)
BPF_OBJS   := $(BPF_SRCS:bpf/%.bpf.c=$(BUILD)/bpf/%.bpf.o)
BPF_SKELS  := $(BPF_SRCS:bpf/%.bpf.c=$(BUILD)/bpf/%.skel.h)
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -Wall -Wextra -Werror \
	-I$(BUILD)/bpf -Ibpf -I$(BPF_ASM_INC)
AGENT_OBJS := $(AGENT_SRCS:%.c=$(BUILD)/obj/%.o) $(MAPS_OBJS)
KTEST_SRCS := $(filter-out %.bpf.c,$(wildcard tests/kernel/*.c))
KTEST_BINS := $(KTEST_SRCS:tests/kernel/%.c=$(BUILD)/kernel/%)

# `make bpf`: the BPF objects alone (for ARCH).
.PHONY: bpf
bpf: $(BPF_OBJS)

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c bpf/ringsteer_maps.h bpf/kernel_uapi.h
	@mkdir -p $(dir $@)
	clang $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/bpf/%.skel.h: $(BUILD)/bpf/%.bpf.o
	bpftool gen skeleton $< name rs_$* > $@.tmp && mv $@.tmp $@ || { rm -f $@.tmp; false; }

# Agent and kernel-test objects see the skeletons and the map header.
$(AGENT_OBJS): CFLAGS += -I$(BUILD)/bpf -Ibpf
$(AGENT_OBJS): | $(BPF_SKELS)
$(addprefix $(BUILD)/obj/user/ctl/,ctl_maps.o ctl_maps_connect.o ctl_maps_format.o) $(MAPS_OBJS): CFLAGS += -Ibpf
$(BUILD)/ringsteerctl: LIBS += -lbpf -ljansson

$(BUILD)/ringsteer-agent: $(AGENT_OBJS) $(BUILD)/libringsteer.a
	$(CC) $(LDFLAGS) -o $@ $(AGENT_OBJS) $(BUILD)/libringsteer.a $(LIBS) -lbpf -lm

# Kernel tests: each tests/kernel/NAME.c is one program, linked with the
# agent's objects except its main (so tests can drive the agent's parts).
AGENT_LIB_OBJS := $(filter-out $(BUILD)/obj/user/agent/main.o,$(AGENT_OBJS))
$(BUILD)/obj/tests/kernel/%.o: CFLAGS += -I$(BUILD)/bpf -Ibpf -Iuser/agent
$(BUILD)/obj/tests/kernel/%.o: | $(BPF_SKELS)

$(BUILD)/kernel/%: $(BUILD)/obj/tests/kernel/%.o $(AGENT_LIB_OBJS) $(BUILD)/libringsteer.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(AGENT_LIB_OBJS) $(BUILD)/libringsteer.a $(LIBS) -lbpf -lm

# BPF programs of the kernel tests themselves (the stand-in socket-LB of
# t_agent_coexist.sh), built and skeletoned like bpf/'s.
KTEST_BPF_SRCS := $(wildcard tests/kernel/*.bpf.c)
KTEST_BPF_SKELS := $(KTEST_BPF_SRCS:tests/kernel/%.bpf.c=$(BUILD)/kernel/%.skel.h)
$(BUILD)/kernel/%.bpf.o: tests/kernel/%.bpf.c tests/kernel/%.h bpf/kernel_uapi.h
	@mkdir -p $(dir $@)
	clang $(BPF_CFLAGS) -Itests/kernel -c $< -o $@

$(BUILD)/kernel/%.skel.h: $(BUILD)/kernel/%.bpf.o
	bpftool gen skeleton $< name $* > $@.tmp && mv $@.tmp $@ || { rm -f $@.tmp; false; }

$(BUILD)/obj/tests/kernel/%.o: CFLAGS += -I$(BUILD)/kernel -Itests/kernel
$(KTEST_BPF_SRCS:tests/kernel/%.bpf.c=$(BUILD)/obj/tests/kernel/%.o): | $(KTEST_BPF_SKELS)

# pin_test counts closes of a descriptor that was not open (a double close).
$(BUILD)/kernel/pin_test: LDFLAGS += -Wl,--wrap=close

# The agent's precomputation benchmark links the agent's pure part (the known
# supervisors and their placements; no BPF) besides the library.
AGENT_PURE_OBJS := $(BUILD)/obj/user/agent/known.o $(BUILD)/obj/user/agent/precompute.o
$(BUILD)/bench/bench_agent_precompute: $(BUILD)/obj/bench/bench_agent_precompute.o $(AGENT_PURE_OBJS) $(BUILD)/libringsteer.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(AGENT_PURE_OBJS) $(BUILD)/libringsteer.a $(LIBS)

# `make bench` also measures kernel steering (ns per sk_lookup run,
# connections per second steered vs direct); root only, else it says so.
.PHONY: bench-steer
bench: bench-steer
bench-steer: deps all $(KTEST_BINS)
	@echo "== bench/bench_steer.sh"; bench/bench_steer.sh $(BUILD)

# The vectors are computed outside the project; keep tests/data in step with
# ../shared/vectors when it is present, so the suite also runs without it.
check-vectors:
	@if [ -d $(VECTORS_SRC) ]; then \
	  for f in $(VECTORS_SRC)/*.json; do \
	    cmp -s $$f $(TEST_DATA)/$$(basename $$f) || { cp $$f $(TEST_DATA)/ && echo "vectors: refreshed $$(basename $$f)"; }; \
	  done; \
	fi

# The acceptance tests that run again on PostgreSQL: the placement path, the
# store down, several nodes, the burst, connect-time steering on pods, the
# swarm's 500 at once; under the sanitizers a subset (the
# whole PostgreSQL store is also under ASan in test_store, and the rest would
# add two minutes to `make test`).  The deploy/ checks run once: they read
# YAML and ask the binaries for their flags, which ASan does not change.
ifeq ($(SAN),1)
PG_ACCEPT_TESTS := t_1_ t_18_ t_19_
else
PG_ACCEPT_TESTS := t_1_ t_2_ t_3_ t_4_ t_5_ t_6_ t_7_ t_18_ t_19_ t_20_ t_24_ t_25_ t_26_
endif

# One pass of the suite in $(BUILD): unit tests (cmocka), then the CLI tests.
# The optimised pass also checks deploy/ (tests/deploy/manifests_test.sh,
# with the tools of mk/deploy.mk).
# With RS_PG_DIR (a server from tests/pg/pg_server.sh) the store's unit
# tests, the placement path's acceptance tests (t_1..t_7), the store-down and
# multi-node tests run on PostgreSQL too, and the agent's LISTEN/NOTIFY test
# (tests/kernel/t_agent_notify.sh) uses that server instead of starting its own.
# A skip (exit 77) passes, except with CI=true (tests/skip_status.sh; the
# runners count theirs the same way; tests/skip_test.sh proves all three).
# The Grafana dashboard's test (tests/deploy/dashboard_test.sh: promtool
# parses every panel expression, then a real Prometheus over a small
# cluster answers each, about 10 s) runs once, beside the manifests'.
test-run: all $(TEST_BINS) $(KTEST_BINS) $(BUILD)/bench/accept_time $(BUILD)/bench/steer_exec check-vectors \
	$(if $(filter 1,$(SAN)),,deploy-tools)
	@fail=0; pg_url=; [ -z "$$RS_PG_DIR" ] || pg_url="postgres:///ringsteer?host=$$RS_PG_DIR"; \
	for t in $(TEST_BINS); do \
	  echo "== $$t"; RS_TEST_DATA=$(TEST_DATA) RS_TEST_PG_URL=$$pg_url $$t || fail=1; \
	done; \
	echo "== tests/cli/ctl_test.sh ($(BUILD))"; \
	tests/cli/ctl_test.sh $(BUILD)/ringsteerctl $(TEST_DATA) || fail=1; \
	echo "== tests/cli/sim_test.sh ($(BUILD))"; \
	tests/cli/sim_test.sh $(BUILD)/ringsteerctl || fail=1; \
	echo "== tests/cli/token_test.sh ($(BUILD))"; \
	tests/cli/token_test.sh $(BUILD)/ringsteerctl || fail=1; \
	echo "== tests/cli/store_test.sh ($(BUILD))"; \
	tests/cli/store_test.sh $(BUILD)/ringsteerctl || fail=1; \
	echo "== tests/cli/status_test.sh ($(BUILD))"; \
	tests/cli/status_test.sh $(BUILD)/ringsteerctl || fail=1; \
	echo "== tests/cli/vopr_test.sh ($(BUILD))"; \
	tests/cli/vopr_test.sh $(BUILD)/ringsteer-vopr $(VOPR_TEST_SEEDS) || fail=1; \
	echo "== tests/cli/version_test.sh ($(BUILD))"; \
	tests/cli/version_test.sh $(BUILD) || fail=1; \
	echo "== tests/skip_test.sh"; \
	tests/skip_test.sh || fail=1; \
	echo "== tests/license_test.sh"; \
	tests/license_test.sh || fail=1; \
	if [ "$(SAN)" != 1 ]; then \
	  echo "== tests/install/install_test.sh ($(BUILD))"; \
	  tests/install/install_test.sh $(BUILD) || fail=1; \
	fi; \
	if [ "$(SAN)" != 1 ]; then \
	  echo "== tests/deploy/manifests_test.sh ($(BUILD))"; \
	  tests/deploy/manifests_test.sh $(BUILD) || fail=1; \
	  echo "== tests/deploy/dashboard_test.sh ($(BUILD))"; \
	  timeout -k 5 120 tests/deploy/dashboard_test.sh $(BUILD); tests/skip_status.sh $$? dashboard || fail=1; \
	  echo "== tests/rust/rust_gateway_test.sh ($(BUILD))"; tests/rust/rust_gateway_test.sh $(BUILD); tests/skip_status.sh $$? rust-gateway || fail=1; \
	fi; \
	echo "== tests/acceptance/run.sh ($(BUILD))"; \
	RS_PG_DIR= tests/acceptance/run.sh $(BUILD) || fail=1; \
	if [ -n "$$RS_PG_DIR" ]; then \
	  echo "== tests/acceptance/run.sh ($(BUILD), PostgreSQL)"; \
	  RS_ACCEPT_TAG=pg tests/acceptance/run.sh $(BUILD) $(PG_ACCEPT_TESTS) || fail=1; \
	else echo "(no RS_PG_DIR: the PostgreSQL pass is skipped)"; fi; \
	if [ "$(SAN)" != 1 ]; then \
	  echo "== tests/soak/soak.sh $(BUILD) 60 1"; \
	  RS_PG_DIR= timeout -k 10 400 tests/soak/soak.sh $(BUILD) 60 1; rc=$$?; \
	  tests/skip_status.sh $$rc soak || fail=1; \
	fi; \
	echo "== tests/compare/report_test.sh"; \
	tests/compare/report_test.sh || fail=1; \
	if [ "$(SAN)" != 1 ]; then \
	  echo "== bench/compare/compare.sh $(BUILD) (QUICK=1: every contender, every figure)"; \
	  QUICK=1 CMP_DOCS=$(BUILD)/compare-quick/docs bench/compare/compare.sh $(BUILD) $(BUILD)/compare-quick; \
	  tests/skip_status.sh $$? compare || fail=1; \
	fi; \
	echo "== tests/kernel/run.sh ($(BUILD))"; \
	tests/kernel/run.sh $(BUILD) || fail=1; \
	exit $$fail

# Fuzzing (libFuzzer, clang): each tests/fuzz/fuzz_NAME.c links the library
# sources directly, built with -fsanitize=fuzzer,address,undefined.
FUZZ_BUILD   := build/fuzz
FUZZ_BINS    := $(FUZZ_SRCS:tests/fuzz/%.c=$(FUZZ_BUILD)/%)
FUZZ_SECONDS ?= 60
FUZZ_RUNS    ?= 20000
FUZZ_CFLAGS  := -std=c17 -g -O1 -D_GNU_SOURCE -Iinclude -Iuser $(PG_CFLAGS) -fsanitize=fuzzer,address,undefined

$(FUZZ_BUILD)/%: tests/fuzz/%.c $(LIB_SRCS)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ $< $(LIB_SRCS) $(LIBS)

# `make fuzz`: each target for FUZZ_SECONDS, growing its corpus in tests/fuzz/corpus/NAME.
fuzz: deps $(FUZZ_BINS)
	@for f in $(FUZZ_BINS); do n=$$(basename $$f); mkdir -p tests/fuzz/corpus/$$n; \
	  echo "== $$n for $(FUZZ_SECONDS) s"; \
	  $$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 tests/fuzz/corpus/$$n || exit 1; done

# Inside `make test`: a short deterministic run (fixed seed and run count)
# over the committed corpus, read-only.  -use_cmp=0 because comparison
# tracing feeds the operands of pointer comparisons (heap addresses, which
# ASLR moves) into the mutation dictionary, so the same seed took different
# paths from run to run; `make fuzz` keeps it, and what it finds is added
# to the corpus the smoke replays.
fuzz-smoke: $(FUZZ_BINS)
	@for f in $(FUZZ_BINS); do n=$$(basename $$f); new=$$(mktemp -d); \
	  echo "== $$n: $(FUZZ_RUNS) runs, seed 1"; \
	  out=$$($$f -seed=1 -runs=$(FUZZ_RUNS) -use_cmp=0 $$new tests/fuzz/corpus/$$n 2>&1); rc=$$?; rm -rf $$new; \
	  printf '%s\n' "$$out" | tail -n 3; [ $$rc -eq 0 ] || exit 1; done

# The suite runs twice: optimised, then under ASan and UBSan.  Its
# PostgreSQL parts need a server: the one RS_PG_DIR names (.ci/run starts
# one), else a throwaway one started here and stopped whatever happens.
test: deps
	@if [ -n "$$RS_PG_DIR" ]; then $(MAKE) test-all; exit $$?; fi; \
	dir=$$(mktemp -d /tmp/rs-pg-XXXXXX) || exit 1; \
	tests/pg/pg_server.sh start $$dir >/dev/null || { rm -rf $$dir; exit 1; }; \
	RS_PG_DIR=$$dir $(MAKE) test-all; rc=$$?; \
	tests/pg/pg_server.sh stop $$dir; exit $$rc

.PHONY: test-all
test-all:
	$(MAKE) test-run
	$(MAKE) SAN=1 test-run
	$(MAKE) valgrind VALGRIND_TESTS="$(VALGRIND_TESTS_QUICK)"
	$(MAKE) fuzz-smoke

# `make soak`: issue 9's soak (tests/soak/soak.sh): 4 gateways, the agent, 200
# supervisors under a seeded random fault schedule for SOAK_SECONDS; SOAK_SEED
# replays one (default: from the clock, printed first).  The script ends by
# itself at most 165 s after SOAK_SECONDS; timeout is the backstop.  `make
# test` runs 60 s of it (seed 1) in the optimised pass.  Its skip (77: no
# network namespace) passes except under CI=true (tests/skip_status.sh).
SOAK_SECONDS ?= 600
SOAK_SEED    ?=
.PHONY: soak
soak: deps all
	RS_PG_DIR= timeout -k 10 $$(($(SOAK_SECONDS) + 300)) tests/soak/soak.sh $(BUILD) $(SOAK_SECONDS) $(SOAK_SEED); \
	tests/skip_status.sh $$? soak

# `make faults`: issue 25's fault matrix (tests/faults/f_*.sh, each a case on
# the test cluster: 2 or 3 gateways, 20 supervisors, the fault, then what
# stayed, what was recorded, gauges against the ledger, recovery within
# 2 x TTL; f_3..f_6: PostgreSQL over TCP on a veth, servers of their own
# started by tests/faults/pg_tcp.sh, so RS_PG_DIR stays empty).  .ci/run
# runs it after `make test`.
.PHONY: faults
faults: deps all
	RS_PG_DIR= RS_TEST_DIR=$(CURDIR)/tests/faults RS_TEST_PREFIX=f_ RS_ACCEPT_TAG=faults \
	  tests/acceptance/run.sh $(BUILD)

# The acceptance scenarios with every gateway and the agent under valgrind
# (memcheck, definite leaks included; tests/cluster/valgrind.supp lists the
# libbpf calls valgrind cannot model).  `make test` runs a quick subset.
VALGRIND_TESTS ?= t_1_ t_3_ t_4_ t_5_ t_7_ t_8_ t_11_ t_12_ t_13_ t_14_ t_15_ t_16_ t_18_ t_22_
VALGRIND_TESTS_QUICK := t_1_ t_4_ t_11_ t_15_
.PHONY: valgrind
valgrind: deps all
	@echo "== tests/acceptance/run.sh under valgrind: $(VALGRIND_TESTS)"; \
	RS_PG_DIR= RS_VALGRIND=1 RS_ACCEPT_TAG=valgrind tests/acceptance/run.sh $(BUILD) $(VALGRIND_TESTS)

# The bench_* programs run here, PostgreSQL columns on a throwaway server
# started here; bench_store (placements per second against 0 and 40,000
# rows, SQLite and PostgreSQL) runs inside bench/scale.sh; then
# bench/store_pgbench.sh puts its best batched PostgreSQL cell against
# pgbench's TPC-B on a server of its own.
bench: deps all $(BENCH_BINS)
	@dir=$$(mktemp -d /tmp/rs-pg-XXXXXX) || exit 1; \
	url=$$(tests/pg/pg_server.sh start $$dir) || { echo "(no PostgreSQL server: its column is skipped)"; url=; }; \
	rc=0; for b in $(filter-out $(BUILD)/bench/bench_store,$(filter $(BUILD)/bench/bench_%,$(BENCH_BINS))); do \
	  echo "== $$b"; RS_BENCH_PG_URL=$$url $$b || { rc=1; break; }; done; \
	if [ -n "$$url" ]; then tests/pg/pg_server.sh stop $$dir; else rm -rf $$dir; fi; exit $$rc
	@echo "== bench/service_only.sh"; bench/service_only.sh $(BUILD)
	@echo "== bench/rolling_restart.sh"; bench/rolling_restart.sh $(BUILD)
	@echo "== bench/accept_time.sh"; bench/accept_time.sh $(BUILD)
	@echo "== bench/connect_steer.sh"; bench/connect_steer.sh $(BUILD)
	@echo "== bench/tls_cost.sh"; bench/tls_cost.sh $(BUILD)
	@echo "== bench/tls_resume.sh"; bench/tls_resume.sh $(BUILD)
	@echo "== bench/scale.sh"; bench/scale.sh $(BUILD)
	@echo "== bench/store_pgbench.sh"; bench/store_pgbench.sh $(BUILD) || tests/skip_status.sh $$? bench/store_pgbench.sh
	@echo "== bench/core_before_after.sh"; bench/core_before_after.sh $(BUILD)
	@echo "== bench/fleet.sh"; bench/fleet.sh $(BUILD) || [ $$? = 77 ]

sim: deps all
	$(BUILD)/ringsteerctl sim

# `make vopr SECONDS=N`: the deterministic simulator of the real cores
# (docs/SIMULATION.md) on random seeds for N seconds; it reports simulated
# events per second and seeds per minute, tallies failures by invariant
# (known defects apart), and replays the first unknown one to a trace file.
# `make test` runs a fixed set of seeds (VOPR_TEST_SEEDS, through
# tests/cli/vopr_test.sh, with the replay and counter-check tests).
SECONDS ?= 60
VOPR_TEST_SEEDS ?= 1-200
.PHONY: vopr
vopr: deps $(BUILD)/ringsteer-vopr
	$(BUILD)/ringsteer-vopr --seconds $(SECONDS) --quiet --keep-going --stats

# The README's run command: demo/demo.sh tells the story on a local cluster
# in network namespaces (root).  AGENT=0 shows the redirect path alone;
# TLS=0 runs it in plaintext (default: mutual TLS).
AGENT ?= 1
TLS   ?= 1
.PHONY: demo
demo: deps all
	AGENT=$(AGENT) TLS=$(TLS) demo/demo.sh $(BUILD)

# Rewrites the tables in docs/SIMULATION.md from the simulator's own output.
# The policy model's tables between the sim markers, the real cores' rows
# (ringsteer-vopr --tables) between the vopr markers.
sim-doc: deps all
	$(BUILD)/ringsteerctl sim --markdown > $(BUILD)/sim.md
	$(BUILD)/ringsteer-vopr --tables --markdown > $(BUILD)/vopr-tables.md
	awk -v tables=$(BUILD)/sim.md -v cores=$(BUILD)/vopr-tables.md ' \
	  /<!-- sim:end -->/ { while ((getline line < tables) > 0) print line; skip = 0 } \
	  /<!-- vopr:end -->/ { while ((getline line < cores) > 0) print line; skip = 0 } \
	  !skip { print } \
	  /<!-- sim:begin -->|<!-- vopr:begin -->/ { skip = 1 }' docs/SIMULATION.md > $(BUILD)/SIMULATION.md
	mv $(BUILD)/SIMULATION.md docs/SIMULATION.md

clean:
	rm -rf build

# Objects are kept between runs (make would delete them as intermediates).
.SECONDARY:

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# ---- the kernel-facing tests on Debian's 6.1 and 6.12 kernels (qemu, TCG) --
# vm-tests/run.sh fetches the kernels into $(BUILD)/vm (kept between runs).
VM_PACKAGES := qemu-system-x86 busybox-static kmod zstd xz-utils cpio file udev python3-argcomplete python3-requests python3-pkg-resources

.PHONY: vm-deps vm-test
vm-deps:
	$(call install_missing,$(VM_PACKAGES))

vm-test: deps vm-deps
	$(MAKE) all $(KTEST_BINS)
	vm-tests/run.sh $(BUILD)

# ---- the store on PostgreSQL ------------------------------------------------
# `make pg-test`: the store's unit tests (test_store, test_store_home, test_store_scale: its
# stopped-server test SIGSTOPs this server) against a throwaway PostgreSQL
# server (tests/pg/pg_server.sh, UNIX socket in a temp dir), stopped and
# removed whatever the result.
.PHONY: pg-test
pg-test: all $(BUILD)/tests/test_store $(BUILD)/tests/test_store_scale $(BUILD)/tests/test_store_home
	@dir=$$(mktemp -d /tmp/rs-pg-XXXXXX) || exit 1; \
	url=$$(tests/pg/pg_server.sh start $$dir) || { rm -rf $$dir; exit 1; }; \
	rc=0; for t in test_store test_store_scale test_store_home; do \
	  echo "== $(BUILD)/tests/$$t (RS_TEST_PG_URL=$$url)"; \
	  RS_TEST_DATA=$(TEST_DATA) RS_TEST_PG_URL=$$url $(BUILD)/tests/$$t || rc=1; \
	done; \
	tests/pg/pg_server.sh stop $$dir; exit $$rc

# ---- the container image (deploy/Dockerfile; docs/OPERATIONS.md, Install) ----
# `make image` builds IMAGE from this tree with podman (Debian's package):
# a build stage that runs `make all`, a runtime stage with the packages its
# binaries need (derived: deploy/image/runtime-packages.sh).  The base is
# IMAGE_BASE; a localhost/ name is made here with mmdebstrap from the
# Debian archive (no registry needed), once; with a registry in reach,
# IMAGE_BASE=docker.io/library/debian:12-slim uses the public one.
# `make image-test` tests the image by its exported filesystem
# (tests/image/image_test.sh); .ci/run runs it after `make test`.
IMAGE          ?= ringsteer:latest
IMAGE_BASE     ?= localhost/ringsteer-base:bookworm
IMAGE_MIRROR   ?= http://deb.debian.org/debian
IMAGE_SECURITY ?= http://deb.debian.org/debian-security
IMAGE_PACKAGES := podman mmdebstrap uidmap
# What Debian's slim images leave out, left out of the mmdebstrap base too
# (and usrmerge with perl: the merged-usr hook lays /usr out instead).
IMAGE_EXCLUDES := /usr/share/doc/* /usr/share/man/* /usr/share/info/* /usr/share/locale/* \
	/usr/share/lintian/* /usr/share/linda/*

.PHONY: image image-base image-test print-build-packages
print-build-packages:
	@echo $(BUILD_PACKAGES)

image-base:
	$(call install_missing,$(IMAGE_PACKAGES))
	@if podman image exists $(IMAGE_BASE); then echo "base $(IMAGE_BASE): present"; exit 0; fi; \
	case "$(IMAGE_BASE)" in localhost/*) ;; *) echo "base $(IMAGE_BASE): pulled by the build"; exit 0 ;; esac; \
	tmp=$$(mktemp -d /tmp/rs-base-XXXXXX) || exit 1; \
	echo "base $(IMAGE_BASE): mmdebstrap bookworm from $(IMAGE_MIRROR)"; \
	mmdebstrap --quiet --variant=minbase --include=ca-certificates \
	  --aptopt='APT::Install-Recommends "false"' --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
	  $(foreach x,$(IMAGE_EXCLUDES),--dpkgopt='path-exclude=$(x)') \
	  --customize-hook='rm -rf "$$1"/var/lib/apt/lists/* "$$1"/var/cache/apt/*' \
	  bookworm $$tmp/base.tar "deb $(IMAGE_MIRROR) bookworm main" \
	  "deb $(IMAGE_MIRROR) bookworm-updates main" "deb $(IMAGE_SECURITY) bookworm-security main" && \
	podman import --change 'CMD ["/bin/bash"]' $$tmp/base.tar $(IMAGE_BASE) >/dev/null; \
	rc=$$?; rm -rf $$tmp; exit $$rc

image: image-base
	podman build --isolation=chroot -f deploy/Dockerfile --build-arg BASE=$(IMAGE_BASE) \
	  --build-arg BUILD_PACKAGES="$(BUILD_PACKAGES)" --build-arg RS_COMMIT=$(RS_COMMIT) --target build -t $(subst :,-build:,$(IMAGE)) .
	podman build --isolation=chroot -f deploy/Dockerfile --build-arg BASE=$(IMAGE_BASE) \
	  --build-arg BUILD_PACKAGES="$(BUILD_PACKAGES)" --build-arg RS_COMMIT=$(RS_COMMIT) -t $(IMAGE) .
	@echo "$(IMAGE): $$(podman image inspect --format '{{.Size}}' $(IMAGE) | awk '{ printf "%d MiB", $$1 / 1048576 }')"

image-test: image deps all
	tests/image/image_test.sh $(IMAGE) $(BUILD)

# `make compare` (issue 18): ringsteer against the Service alone, HAProxy 2.6
# (leastconn; source hash, consistent, bounded load) and nginx stream
# (consistent hash) on the same test cluster: bench/compare/compare.sh runs
# evenness.sh (evenness and stability), datapath.sh (when present) and
# report.sh (docs/COMPARISON.md and the chart).  `make compare-quick` is the
# short form (QUICK=1) that `make test` can run, about 46 s (its data path
# beside the evenness passes): it checks only that every contender produced
# every figure.  COMPARE_OUT: where the TSVs go.
# SUPS="40 400": a pass per supervisor count (default 40; see
# bench/compare/evenness.sh); 400 adds about 45 minutes to the full form.
COMPARE_PACKAGES := haproxy nginx libnginx-mod-stream
COMPARE_OUT ?= $(BUILD)/compare
.PHONY: compare compare-quick compare-deps
compare-deps: $(if $(COMPARE_DATAPATH_PACKAGES),compare-datapath-deps)
	$(call install_missing,$(COMPARE_PACKAGES))
compare: deps compare-deps all $(BUILD)/bench/accept_time $(BUILD)/bench/steer_exec
	$(if $(SUPS),SUPS='$(SUPS)') bench/compare/compare.sh $(BUILD) $(COMPARE_OUT)
compare-quick: deps compare-deps all $(BUILD)/bench/accept_time $(BUILD)/bench/steer_exec
	QUICK=1 bench/compare/compare.sh $(BUILD) $(COMPARE_OUT)

# `make test` runs the short form too (test-run): its packages are the tests'.
DEB_PACKAGES += $(COMPARE_PACKAGES) $(COMPARE_DATAPATH_PACKAGES)

# Optional: the image's build stage copies only what `make all` reads.
-include examples/rust-gateway/rust.mk
