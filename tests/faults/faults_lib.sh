#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/faults/faults_lib.sh - what every case of the fault matrix (issue 25,
# `make faults`) sets up and checks, over the test cluster (tests/cluster/lib.sh).
#
# A case: faults_up G N (G gateways, N supervisors attached), faults_mark
# (what each supervisor is attached to, and with which epoch), the fault,
# then faults_check: the supervisors the fault did not touch are where they
# were with the same epoch (nothing moved, nothing lost), every gateway's
# ringsteer_gateway_supervisors equals the store's rows for it, and none is
# unrecorded.  faults_recovered_within MS LABEL CMD... awaits CMD and fails
# past MS (2 x TTL by default), printing how long recovery took.
. "$(dirname "${BASH_SOURCE[0]}")/../cluster/lib.sh"

declare -A FAULTS_MARK=()
FAULTS_G=0 FAULTS_N=0

faults_up() {
	FAULTS_G=$1 FAULTS_N=$2
	cluster_up --gateways "$FAULTS_G"
	sups_start $(seq 1 "$FAULTS_N")
	await "$FAULTS_N supervisors attached" 30 all_attached $(seq 1 "$FAULTS_N")
}

faults_mark() {
	local m
	for m in $(seq 1 "$FAULTS_N"); do
		FAULTS_MARK[$m]="$(where "$m") $(session "$m" epoch)"
	done
}

# gauges_match_ledger: each live gateway's supervisors gauge = its rows, and
# nothing is left unrecorded.
gauges_match_ledger() {
	local n g l u
	for n in $(seq 1 "$FAULTS_G"); do
		gw_alive "$n" || continue
		g=$(metric "$n" ringsteer_gateway_supervisors) || return 1
		l=$(count_on "$n")
		u=$(metric "$n" ringsteer_gateway_unrecorded_supervisors) || return 1
		[ "$g" = "$l" ] && [ "$u" = 0 ] || return 1
	done
}

# faults_check [SKIP_MEMBER...]: the members not named are untouched, and
# the gauges agree with the ledger (awaited: the store may still be catching up).
faults_check() {
	local m skip now
	for m in $(seq 1 "$FAULTS_N"); do
		skip=0
		for s in "$@"; do [ "$s" = "$m" ] && skip=1; done
		[ $skip = 1 ] && continue
		now="$(where "$m") $(session "$m" epoch)"
		[ "$now" = "${FAULTS_MARK[$m]}" ] || fail "sup-$m moved or lost: before [${FAULTS_MARK[$m]}] now [$now]"
	done
	await "every gateway's supervisors gauge equals its ledger rows" "$(((2 * RS_TTL_MS + 999) / 1000 + 5))" gauges_match_ledger
	local n
	for n in $(seq 1 "$FAULTS_G"); do
		gw_alive "$n" && echo "gw-$n: gauge $(metric "$n" ringsteer_gateway_supervisors), ledger $(count_on "$n")"
	done
}

# faults_recovered_within MS LABEL CMD...: CMD true within MS of now; prints the time.
faults_recovered_within() {
	local ms=$1 label=$2 t0 t1
	shift 2
	t0=$(rs_now_ms)
	while ! "$@" >/dev/null 2>&1; do
		t1=$(rs_now_ms)
		[ $((t1 - t0)) -le "$ms" ] || fail "$label: not within $ms ms"
		sleep 0.05
	done
	t1=$(rs_now_ms)
	echo "$label: $((t1 - t0)) ms (limit $ms ms)"
}
