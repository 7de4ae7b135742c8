#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# sim_test.sh - the simulator's bounded-ring rows must show what the rule
# promises (with S a multiple of G, so every figure is exact): even after a
# fill, nobody moved by supervisor restarts, exactly one handoff per
# supervisor in a surge-first rolling restart, only the dead gateway's
# supervisors moved by a kill, and max - min <= 1 at the end of each.
# usage: sim_test.sh PATH/TO/ringsteerctl
set -u
ctl=$1
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
check() { # description, awk condition over the row's fields
	if [ "$2" = 1 ]; then ok; else bad "$1"; fi
}

out=$("$ctl" sim --gateways 10 --supervisors 1000 --trials 3 --no-bins --seed 7) || { echo "FAIL: sim exited $?"; exit 1; }
# Rows: $1 $2 config, $3 policy, $4 max, $5 mean, $6 max/mean, $7 max-min,
# then $8 peak, $9 moved, $10 handoffs
row() { printf '%s\n' "$out" | awk -v sc="$1" '/^[0-9]\./ { s = $1 } s == sc && $3 == "bounded-ring"'; }

fill=$(row 1.) restart=$(row 2.) rolling=$(row 3.) kill=$(row 4.)
check "fill row present" "$([ -n "$fill" ] && echo 1)"
check "fill even: $fill" "$(awk '{ print ($7 <= 1) }' <<<"$fill")"
check "restart moves nobody: $restart" "$(awk '{ print ($9 == 0 && $10 == 0 && $7 <= 1) }' <<<"$restart")"
check "rolling restart: one handoff each: $rolling" "$(awk '{ print ($10 == 1000 && $7 <= 1) }' <<<"$rolling")"
check "kill moves only the dead gateway's 100: $kill" "$(awk '{ print ($9 == 100 && $10 == 100 && $7 <= 1) }' <<<"$kill")"
# Random spreads worse than the bounded ring after a fill (3 trials of G=10, S=1000).
random_fill=$(printf '%s\n' "$out" | awk '/^1\./ { s = 1 } /^2\./ { s = 0 } s && $3 == "random"')
check "random fill is uneven: $random_fill" "$(awk '{ print ($7 > 1) }' <<<"$random_fill")"

# Bad arguments: exit 2 with one line on stderr.
for args in "--trials 0" "--gateways 1 --supervisors 10" "--gateways 4" "--bogus" "--seed x"; do
	err=$("$ctl" sim $args 2>&1 >/dev/null); rc=$?
	check "sim $args -> rc=$rc [$err]" "$([ "$rc" -eq 2 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && echo 1)"
done

summary sim
