#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/rust/rust_gateway_test.sh [BUILD] - examples/rust-gateway, the gateway
# core embedded from Rust (std only, C declarations by hand), against the
# library as installed, in a cluster of its own.
#
#  1. The library: `make install DESTDIR=STAGE PREFIX=/usr` into
#     a stage of this run's under BUILD/rust-gateway (the headers from there too); where make has
#     no install target (an older tree), BUILD/libringsteer.so itself (a
#     directory of links naming it by its SONAME too) and include/.  The example is built against it with
#     `cargo build --offline --release` (RINGSTEER_LIBDIR) and run with it
#     on LD_LIBRARY_PATH.
#  2. Layout: tests/rust/layout.c, compiled against the same headers, prints
#     the size, alignment and field offsets of every struct the example
#     declares by hand, and the constants it copies; `rust-gateway
#     --print-layout` must print the very same lines.
#  3. A cluster (tests/cluster/lib.sh: its own network namespace, the
#     Service as nftables random DNAT): two Rust gateways on one SQLite
#     store, two reference supervisors.  Five rounds of restarting both
#     supervisors, each ending with one supervisor per gateway as read from
#     the Rust gateways' /metrics.  Then a surge-first rolling restart:
#     gw-3 joins, gw-1 drains (SIGTERM) and exits; gw-4 joins, gw-2 drains
#     and exits.  With three gateways up the two supervisors are on two
#     different ones, none holding more than one (also sampled all through
#     each drain); after each drain the two serving gateways hold one each,
#     and the drained supervisor is where the rule sends it (ringsteerctl
#     place over the remaining gateways' loads), not where the program says.
#
# Exit 77 (skipped) when cargo is not on PATH, or (lib.sh) without root or
# network namespaces.
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${1:-build}
if ! command -v cargo >/dev/null 2>&1; then
	echo "skip: cargo not on PATH (make rust-gateway installs Debian's)" >&2
	exit 77
fi
t_start=$(date +%s%N)
elapsed() { echo "$((($(date +%s%N) - t_start) / 1000000)) ms"; }
die() { echo "rust_gateway_test: FAIL: $*" >&2; exit 1; }

BUILD_ABS=$(cd "$BUILD" && pwd) || die "no build directory $BUILD"
RUST_DIR=$BUILD_ABS/rust-gateway
mkdir -p "$RUST_DIR" || die "mkdir $RUST_DIR"
# This run's own stage, library links and layout listings (two runs at once
# do not share them); gone at exit (cluster_down runs rs_down_hook).
work=$(mktemp -d "$RUST_DIR/run.XXXXXX") || die "mktemp under $RUST_DIR"
trap 'rm -rf "$work"' EXIT

# --- 1. the library, and the example built against it ---------------------------
if make -s -n install BUILD="$BUILD" DESTDIR=/nonexistent PREFIX=/usr >/dev/null 2>&1; then
	stage=$work/stage
	make -s install BUILD="$BUILD" DESTDIR="$stage" PREFIX=/usr >"$work/install.log" 2>&1 ||
		{ cat "$work/install.log" >&2; die "make install DESTDIR=$stage PREFIX=/usr"; }
	libdir=$stage/usr/lib
	[ -e "$libdir/libringsteer.so" ] ||
		libdir=$(dirname "$(find "$stage" -name libringsteer.so | head -n 1)")
	[ -e "$libdir/libringsteer.so" ] || die "make install put no libringsteer.so under $stage"
	incflags=(-I"$stage/usr/include")
	echo "library: make install DESTDIR=$stage PREFIX=/usr ($libdir)"
else
	[ -e "$BUILD_ABS/libringsteer.so" ] || die "no $BUILD/libringsteer.so (make all)"
	libdir=$work/lib
	mkdir -p "$libdir" || die "mkdir $libdir"
	soname=$(objdump -p "$BUILD_ABS/libringsteer.so" 2>/dev/null | awk '$1 == "SONAME" { print $2 }')
	[ -n "$soname" ] || soname=libringsteer.so.0
	for n in libringsteer.so "$soname"; do
		ln -sf "$BUILD_ABS/libringsteer.so" "$libdir/$n"
	done
	incflags=(-Iinclude -Iuser)
	echo "library: no \`make install\` (yet): $BUILD/libringsteer.so (also as $soname)"
fi
RINGSTEER_LIBDIR=$libdir cargo build --offline --release --quiet \
	--manifest-path examples/rust-gateway/Cargo.toml --target-dir "$RUST_DIR" ||
	die "cargo build --offline --release (RINGSTEER_LIBDIR=$libdir)"
RGW_BIN=$RUST_DIR/release/rust-gateway
[ -x "$RGW_BIN" ] || die "no $RGW_BIN"
echo "built $RGW_BIN ($(elapsed))"

# --- 2. layout: the hand-declared structs against the headers ---------------------
${CC:-cc} -std=c17 -Wall -Werror "${incflags[@]}" tests/rust/layout.c -o "$work/layout" ||
	die "cc tests/rust/layout.c"
"$work/layout" >"$work/layout.c.txt" || die "layout (C) failed"
LD_LIBRARY_PATH=$libdir "$RGW_BIN" --print-layout >"$work/layout.rs.txt" || die "rust-gateway --print-layout failed"
if ! diff -u "$work/layout.c.txt" "$work/layout.rs.txt" >&2; then
	die "the structs declared in examples/rust-gateway/src/ffi.rs differ from the headers (- C, + Rust)"
fi
echo "layout: $(grep -c ' size ' "$work/layout.c.txt") structs," \
	"$(grep -vc -e ' size ' -e '^const ' "$work/layout.c.txt") field offsets," \
	"$(grep -c '^const ' "$work/layout.c.txt") constants: identical in C and Rust"

# --- 3. the cluster ------------------------------------------------------------
export RS_BUILD=$BUILD
set +u # lib.sh is written for bash without -u
. tests/cluster/lib.sh
rs_down_hook() { rm -rf "$work"; } # cluster_up's EXIT trap replaces ours

# rgw_start N: the Rust gateway as gw-N, as lib.sh's gw_start starts the C one
# (same addresses, ports, clocks and store; its pid in RS_GW_PID, so that the
# Service, rs_gw_signal and cluster_down treat it as one of theirs).
rgw_start() {
	local n=$1 a
	[ -z "${RS_GW_PID[$n]:-}" ] || fail "rgw_start $n: already running"
	RS_GW_STARTS[$n]=$((${RS_GW_STARTS[$n]:-0} + 1))
	a=$(gw_addr "$n")
	gw_exec "$n" env LD_LIBRARY_PATH="$libdir" "$RGW_BIN" --id "gw-$n" \
		--listen "$a:$RS_GW_LISTEN_PORT" --peer "$a:$RS_GW_PEER_PORT" \
		--store "$RS_STORE" --secret-file "$RS_SECRET" --metrics "$a:$RS_GW_METRICS_PORT" \
		--heartbeat "$RS_HEARTBEAT_MS" --ttl "$RS_TTL_MS" >"$(gw_log "$n")" 2>&1 &
	RS_GW_PID[$n]=$!
	disown "$!"
	await "gw-$n (rust) ready (/readyz)" 10 gw_ready "$n"
	svc_update
}

# sups N: ringsteer_gateway_supervisors on gw-N's /metrics.
sups() { metric "$1" ringsteer_gateway_supervisors; }
# loads_m N...: "gw-N=K ..." from each one's /metrics.
loads_m() {
	local n out=() v
	for n in "$@"; do
		v=$(sups "$n") || return 1
		out+=("gw-$n=$v")
	done
	echo "${out[*]}"
}
# each_one N...: every listed gateway serves exactly one supervisor (/metrics).
each_one() {
	local n
	for n in "$@"; do [ "$(sups "$n")" = 1 ] || return 1; done
}
# spread_ok N...: the two supervisors on two different gateways of N..., none
# with more than one: the counts sum to 2 and none exceeds 1.
spread_ok() {
	local n v sum=0
	for n in "$@"; do
		v=$(sups "$n") || return 1
		[ "$v" -le 1 ] || return 1
		sum=$((sum + v))
	done
	[ "$sum" -eq 2 ]
}
# The rule's cap (ceil(N / G)) for 2 supervisors over 2 serving gateways, as
# the library's placement rule computes it (ringsteerctl place counts the
# arriving member: one already on gw-a, one arriving).
cap=$(ctl place --json --gateways gw-a=1,gw-b=0 sup-x | jq -r .cap)
[ "$cap" = 1 ] || die "ringsteerctl place says cap $cap for 2 supervisors on 2 gateways (ceil(2/2) = 1)"
echo "rule: cap = ceil(2 supervisors / 2 serving gateways) = $cap: each serving gateway holds exactly one"

cluster_up
rgw_start 1
rgw_start 2
sups_start 1 2
await "round 0: both supervisors attached" 15 all_attached 1 2
await "round 0: one supervisor on each Rust gateway (/metrics)" 10 each_one 1 2
echo "round 0: $(loads_m 1 2) (metrics); sup-1 on $(where 1), sup-2 on $(where 2) (store) ($(elapsed))"

for round in 1 2 3 4 5; do
	r0=$(rs_now_ms)
	sups_stop 1 2
	sups_start 1 2
	await "round $round: both restarted supervisors attached" 15 all_attached 1 2
	await "round $round: one supervisor on each Rust gateway (/metrics)" 10 each_one 1 2
	echo "round $round: $(loads_m 1 2) (metrics); sup-1 on $(where 1), sup-2 on $(where 2) (store);" \
		"$(($(rs_now_ms) - r0)) ms"
done

# drain_step OLD OTHER NEW: gw-OLD (one of OLD, OTHER, NEW, all up) drains on
# SIGTERM and exits; its supervisor must end where the rule places it over
# OTHER and NEW with their loads; sampled all the while, no gateway holds
# more than one and the two supervisors stay on two different gateways.
drain_step() {
	local old=$1 other=$2 new=$3 m want samples=0 t0 pid lo ln ld n v
	m=$(rs_current | jq -r --arg g "gw-$old" 'select(.gateway_id == $g) | .member_id' | head -n 1)
	[ -n "$m" ] || fail "no supervisor on gw-$old before its drain"
	lo=$(sups "$other") && ln=$(sups "$new") || fail "/metrics unreachable before the drain of gw-$old"
	want=$(ctl place --gateways "gw-$other=$lo,gw-$new=$ln" "$m") || fail "ringsteerctl place $m"
	echo "drain gw-$old: $m on it; the rule over gw-$other=$lo,gw-$new=$ln sends it to $want"
	t0=$(rs_now_ms)
	pid=${RS_GW_PID[$old]}
	RS_GW_PID[$old]=""
	svc_update # the Service drops it first, as kube-proxy drops a terminating endpoint
	kill -TERM "$pid"
	while ! rs_gone "$pid"; do
		[ $(($(rs_now_ms) - t0)) -lt $((RS_GW_EXIT_S * 1000)) ] || fail "gw-$old did not exit within ${RS_GW_EXIT_S}s of SIGTERM"
		for n in "$old" "$other" "$new"; do
			v=$(sups "$n" 2>/dev/null) || continue # the drained one may be closing its listener
			[ "$v" -le 1 ] || fail "during the drain of gw-$old: gw-$n holds $v supervisors"
		done
		samples=$((samples + 1))
		sleep 0.05
	done
	ld=$(($(rs_now_ms) - t0))
	log_has "$(gw_log "$old")" 'event=exited' || fail "gw-$old exited without event=exited (log $(gw_log "$old"))"
	await "after the drain of gw-$old: one supervisor each on gw-$other and gw-$new (/metrics)" 10 each_one "$other" "$new"
	await "both supervisors attached after the drain of gw-$old" 10 all_attached 1 2
	[ "$(where 1)" != "$(where 2)" ] || fail "after the drain of gw-$old both supervisors are on $(where 1)"
	[ "$(where "${m#sup-}")" = "$want" ] || fail "$m is on $(where "${m#sup-}") after the drain, the rule says $want"
	echo "drain gw-$old: exited $ld ms after SIGTERM; $samples samples during it, none above one;" \
		"now $(loads_m "$other" "$new") (metrics); $m on $(where "${m#sup-}") (store, = the rule's $want)"
}

rgw_start 3
await "three gateways: the two supervisors on two of them, none above one" 5 spread_ok 1 2 3
echo "surge gw-3: $(loads_m 1 2 3) (metrics) ($(elapsed))"
drain_step 1 2 3
rgw_start 4
await "three gateways: the two supervisors on two of them, none above one" 5 spread_ok 2 3 4
echo "surge gw-4: $(loads_m 2 3 4) (metrics) ($(elapsed))"
drain_step 2 3 4
echo "rust_gateway_test: passed: layout, 5 supervisor restart rounds, rolling restart of the gateways ($(elapsed))"
