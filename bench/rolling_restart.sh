#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/rolling_restart.sh - a surge-first rolling restart of 4 gateways
# under 100 supervisors, at the default drain pacing (issue 4's report).
#
# In a test cluster (tests/cluster/lib.sh): 4 gateways, 100 supervisors
# started at once and all attached; then for each old gateway gw-K
# (K = 1..4): start gw-(K+4), await /readyz, SIGTERM gw-K (gw_stop: the
# Service drops it first, then it drains and exits; its exit is awaited).
# Then all 100 attached again.  Prints, last, one line per figure:
#
#   wall:    first gw_start to the last old gateway's exit, as the harness saw
#            it (exit polled every 50 ms), and from the logs (the first
#            replacement's event=started to the last event=drained)
#   outage:  the longest time any supervisor was without an accepted session:
#            per supervisor, over its attachments after the first, the time
#            from the loss of its attached link (event=disconnected, or
#            event=goodbye on an attached link: a GOODBYE on a link still
#            dialing is followed by dial_failed error=goodbye and is not a
#            loss) to its next event=attached; 0 when the new attachment
#            came first (make before break: the old link is closed after the
#            new one is accepted and nothing is logged for it); also how
#            many attachments had a loss before them
#   rate:    handoffs per second of each draining gateway, its drain-handoff
#            decisions / (event=drained - event=draining), min / mean / max;
#            and the same over the handoff span alone (first to last
#            decision, n-1 intervals), which is the pacing
# Needs root and `ip netns` (exit 77 otherwise).
#
# usage: bench/rolling_restart.sh [BUILD_DIR]   (default build)
set -u
RS_BUILD=${1:-build}
SUPS=100
# shellcheck source=../tests/cluster/lib.sh
. "$(dirname "$0")/../tests/cluster/lib.sh"

all=$(seq 1 $SUPS)
cluster_up --gateways 4
sups_start $all
await "$SUPS supervisors attached" 60 all_attached $all
rs_log "start: loads gw-1..4 = $(loads 1 2 3 4)"

t0=$(rs_now_ms)
for k in 1 2 3 4; do
	gw_start $((k + 4))
	gw_stop "$k"
	rs_log "gw-$k -> gw-$((k + 4)): $(drain_handoffs "$k" | grep -c .) handoffs; loads gw-5..8 = $(loads 5 6 7 8)"
done
t1=$(rs_now_ms)
await "$SUPS supervisors attached after the restart" 20 all_attached $all
rs_log "end: loads gw-5..8 = $(loads 5 6 7 8)"

# wall, from the logs
first_start=$(grep -h 'event=started' "$(gw_log 5)" | log_ms | cut -d' ' -f1 | head -n 1)
last_drained=$(for k in 1 2 3 4; do grep -h 'event=drained' "$(gw_log "$k")"; done | log_ms | cut -d' ' -f1 | sort -n | tail -n 1)

# outage, per supervisor: "max_gap_ms attachments_after_first losses_before_them"
outage=$(for m in $all; do
	log_ms <"$(sup_log "$m")" | awk -v who="sup-$m" '
		function commit() { if (gb != "" && loss == "" && att) loss = gb; gb = "" }
		/ event=dial_failed / && / error=goodbye/ { gb = ""; next }
		{ commit() }
		/ event=goodbye / { gb = $1; next }
		/ event=disconnected / { if (att && loss == "") loss = $1; next }
		/ event=attached( |$)/ {
			if (att) {
				moves++
				if (loss != "") { g = $1 - loss; lost++; if (g > max) { max = g } }
			}
			att = 1; loss = ""
		}
		END { commit(); printf "%d %d %d %s%s\n", max, moves, lost, who, (loss != "" ? " unattached" : "") }'
done)
worst=$(echo "$outage" | sort -n | tail -n 1)
moves=$(echo "$outage" | awk '{ s += $2 } END { print s + 0 }')
losses=$(echo "$outage" | awk '{ s += $3 } END { print s + 0 }')
unattached=$(echo "$outage" | grep -c unattached)

# rate, per old gateway: "handoffs drain_ms span_ms"
rates=$(for k in 1 2 3 4; do
	f=$(gw_log "$k")
	n=$(drain_handoffs "$k" | grep -c .)
	d0=$(grep -h 'event=draining' "$f" | log_ms | cut -d' ' -f1 | head -n 1)
	d1=$(grep -h 'event=drained' "$f" | log_ms | cut -d' ' -f1 | head -n 1)
	span=$(grep -hE 'event=decision .*reason=drain-handoff( |$)' "$f" | log_ms | cut -d' ' -f1 | sed -n '1p;$p' |
		paste -sd' ' | awk '{ print $NF - $1 }')
	echo "$n $((d1 - d0)) $span"
done)
rs_log "per old gateway (handoffs, draining->drained ms, first->last decision ms): $(echo "$rates" | paste -sd';')"

echo "wall: surge-first rolling restart of 4 gateways under $SUPS supervisors: $((t1 - t0)) ms (first gw_start to the last old gateway's exit, harness, 50 ms polls); $((last_drained - first_start)) ms (logs: gw-5 event=started to the last event=drained)"
if [ "${worst%% *}" -gt 0 ]; then who=$(echo "$worst" | awk '{ print $4 }'); else who="no supervisor lost its link"; fi
echo "outage: longest time a supervisor was without an accepted session: ${worst%% *} ms ($who); $losses of $moves re-attachments had a lost link before them; $unattached left unattached"
echo "$rates" | awk '{
	r = $2 > 0 ? $1 * 1000 / $2 : 0; p = $3 > 0 ? ($1 - 1) * 1000 / $3 : 0
	if (NR == 1 || r < mn) mn = r; if (r > mx) mx = r; s += r; ps += p; n++
} END {
	printf "rate: handoffs per second of a draining gateway (handoffs / draining->drained): min %.1f, mean %.1f, max %.1f; paced span alone (n-1 / first->last decision): mean %.1f\n", mn, s / n, mx, ps / n
}'
