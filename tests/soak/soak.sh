#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/soak/soak.sh - issue 9's soak: four gateways, the node agent and 200
# supervisors under a seeded random fault schedule for a set time, with the
# fleet's invariants checked continuously and at every quiet point.
#
# usage: tests/soak/soak.sh BUILD_DIR SECONDS [SEED]
#
# SEED (default: from the clock) seeds bash's $RANDOM, and every choice the
# schedule makes (which fault, which gateway, which supervisors, the gaps,
# whether a quiet point follows) is drawn from it in the main shell and
# depends only on the script's own state, so a failing seed replays the
# same schedule (the timing inside the system is not replayed).  The seed
# is printed first.  Exit 0 when clean, 1 on any violation (lib.sh's fail
# prints the cluster state), 2 on bad usage, 77 when no network namespace
# can be made (not root).  The run is bounded: faults stop at SECONDS, then
# one last quiet point (at most RS_SOAK_QUIET_S) and the cleanup; a run
# that overruns SECONDS + RS_SOAK_QUIET_S + 120 fails.
#
# Every link is mutual TLS 1.3 (RS_SOAK_TLS=0: plaintext), so the fd and
# RSS figures include the TLS state, and every redirect, redial and drain
# handoff checks the target's certificate.
# Cluster (tests/cluster/lib.sh): the agent steers the Service (RS_AGENT=1,
# gateways started with --agent, as t_15); when the agent cannot steer here
# (exit 3, event=no_steering) the soak runs without it on the nftables
# Service and says so.  Gateways run with --store-timeout 100 (a held store
# lock is degraded mode, not a stalled loop: t_18) and --drain-budget 5000
# (a drain with the store away ends by itself well inside lib.sh's 10 s
# exit wait).  Clocks: heartbeat 1 s, TTL 5 s (t_20's, for 200
# supervisors on two cores): the 2 s store lock plus one heartbeat stays
# below the TTL, so a lock means "store unavailable", not "every gateway
# expired" (RS_HEARTBEAT_MS / RS_TTL_MS override them).  gw-1 is a
# sentinel that is never killed or drained (RS_SOAK_SENTINEL=0: it is fair
# game): it lives the whole run, so its fd and RSS figures cover every
# fault; every other gateway lives for a few faults.
#
# Faults, one every few seconds (a gap of 0.3 to 3 s), drawn uniformly:
#   kill    SIGKILL a random gateway, then start its replacement (a new id,
#           as a Deployment would)
#   drain   surge-first: start the replacement, then SIGTERM the old one
#           without waiting (it drains while the schedule goes on; its exit
#           is awaited by the continuous checks, bounded by the budget)
#   agent   agent_kill + agent_start (the pins persist; skipped without agent)
#   blip    ss -K the connections of 1..5 random supervisors
#   lock    store_lock, hold 2 s, store_unlock; during the hold, at random,
#           nothing, a blip of 3 supervisors (their redials are accepted
#           degraded) or a gateway kill (its supervisors land degraded
#           wherever the Service puts them; the replacement starts after the
#           unlock: a gateway cannot start while its store is down)
#   flip    new sandbox counts (0..29) for 1..8 random supervisors (SIGHUP)
# After each fault a quiet point follows with probability 1/2, and always
# after three faults without one; otherwise the next fault comes during the
# recovery from the last (faults overlap).
#
# Continuously (every ~0.5 s, during gaps, holds and quiet waits):
#   - every daemon the soak started and did not stop is alive (gateways,
#     the agent, all supervisors); a drained gateway exits by itself, logs
#     event=drained, within the drain budget + 5 s;
#   - the gateways' ringsteer_gateway_supervisors summed over every running
#     gateway is <= 200 + handoffs in flight (redirects{drain} - handoffs
#     ended, on draining gateways); an excess that
#     lasts longer than 3 heartbeats + 2 s (a stale link outlives its idle
#     timeout) fails: a supervisor held by two gateways;
#   - peak cap excess: max over serving gateways of the gauge minus
#     ceil(200 / G), G the serving gateways now.
# At each quiet point, first awaited (RS_SOAK_QUIET_S, default 45 s: TTL +
# drain budget + the Service backoff 1 + 2 + 4 s, doubled): no drain in
# flight, and each of the 200 supervisors attached to exactly one live
# serving gateway: the ledger (ringsteerctl sessions --all --ttl) holds 200
# rows, one per member, each active, live and on a serving gateway, and
# each supervisor's last event=attached is its row's gateway and epoch;
# each row's sandboxes equals the count the soak gave that supervisor; each
# serving gateway's supervisors gauge equals its ledger count, its busiest
# gauge the ledger's largest count, its unrecorded gauge 0 (every degraded
# session claimed) and its deferred_placements_pending gauge 0 (every
# deferred placement decided).  Then checked:
#   - cap: ceil(200 / G) is not an invariant of the rule across kills: a
#     SIGKILL re-places its supervisors over G - 1 gateways under the cap of
#     that moment, its replacement starts empty, and nothing moves them
#     back (no rebalancer; docs/ARCHITECTURE.md, terminate-first).  What the
#     rule does guarantee is that every placement onto a gateway keeps it
#     at or below the cap in force then, ceil(N / G_store) with N <= 200 and
#     G_store >= the serving gateways the soak knows of.  So each serving
#     gateway g must hold at most ceil(200 / Gmin(g)) + 1 supervisors,
#     Gmin(g) the fewest serving gateways during g's life, degraded
#     arrivals included: a supervisor accepted degraded (the store locked:
#     no placement) is placed by the rule once claimed if its gateway is
#     above the cap then (deferred placement, issue 17), so no exemption.
#     How many supervisors at a quiet point began their stay with a
#     degraded accept is reported.  The literal "load <= ceil(200 / G) + 1"
#     is counted at each quiet point and reported, with its excess;
#   - sandboxes: the ledger's sandboxes summed over the serving gateways
#     equals the sum of the counts the soak set;
#   - refusals: each serving gateway's rejects_total, degraded_accepts_total
#     and store_claims_total equal its log's event=reject, degraded_accept
#     and claim lines; for each supervisor, the REJECTs it logged
#     (event=rejected) are no more than the gateways logged for it (every
#     refusal a supervisor saw was counted by a gateway, killed ones
#     included: their logs stay).  Refusals below the protocol, the
#     supervisors' failed dials by path and the agent's steering counters
#     (miss, none: SK_PASS with no DNAT behind it in agent mode is a refused
#     connection), are reported, not checked: a SIGKILLed gateway's
#     supervisors redial within a millisecond, before the agent's next sync
#     drops their pins, and some of those dials are counted "pinned" yet
#     refused (the listener is going away), so no equality holds;
#   - no sanitizer report in any log;
#   - fd and RSS of every gateway, the agent and every supervisor
#     (/proc/PID/fd, VmRSS), per process: the baseline is its first sample
#     once it is RS_SOAK_WARMUP_S (15) s old; growth beyond the bounds
#     fails: gateway fds net of its attached supervisors (one socket each)
#     +16, RSS +20% + 32 KiB per supervisor above the number it held at
#     the baseline (peak; a connection's buffers, which malloc keeps); the
#     agent fds +16, RSS +20%; a supervisor fds +4, RSS +20% + 256 KiB.
#     Under ASan (the binaries carry __asan_init) RSS is reported only: the
#     quarantine of freed memory (256 MB) makes it climb by design.
# At the end: a last quiet point with its checks, then the summary (seconds,
# faults by kind, quiet points and checks, peak cap excess, fd and RSS drift
# per kind, refusals).  Samples are written to log/soak.samples (kept with
# the logs in RS_ARTIFACTS, default BUILD_DIR/soak/seed-SEED).
#
# Environment: RS_SOAK_SUPS (200), RS_SOAK_QUIET_S (45), RS_SOAK_WARMUP_S
# (15), RS_SOAK_SENTINEL (1), RS_SOAK_NO_AGENT=1 (run without the agent),
# and lib.sh's (RS_KEEP, RS_ARTIFACTS, ...).

if [ $# -lt 2 ] || [ ! -d "$1" ] || ! [[ $2 =~ ^[0-9]+$ ]] || { [ $# -ge 3 ] && ! [[ $3 =~ ^[0-9]+$ ]]; }; then
	echo "usage: $0 BUILD_DIR SECONDS [SEED]" >&2
	exit 2
fi
SOAK_BUILD=$(cd "$1" && pwd)
SOAK_SECS=$2
SOAK_SEED=${3:-$(($(date +%s%N) / 1000 % 32768))}
export RS_BUILD=$SOAK_BUILD
export RS_CLOCKS=slow # lib.sh: heartbeat 1 s, TTL 5 s unless RS_HEARTBEAT_MS / RS_TTL_MS say otherwise
export RS_ARTIFACTS=${RS_ARTIFACTS:-$SOAK_BUILD/soak/seed-$SOAK_SEED}
SUPS=${RS_SOAK_SUPS:-200}
QUIET_S=${RS_SOAK_QUIET_S:-45}
WARMUP_S=${RS_SOAK_WARMUP_S:-15}
SENTINEL=${RS_SOAK_SENTINEL:-1}
DRAIN_BUDGET=5000
LOCK_S=2
# Under ASan RSS is not the program's: freed memory sits in ASan's
# quarantine (256 MB by default) and shadow pages are touched as the heap
# moves, so RSS climbs for minutes whatever the program does.  The RSS bound
# is then reported, not checked (fds still are; LeakSanitizer reports at the
# exit of every gateway that drains, and cluster_down fails on it).
SOAK_ASAN=0
grep -qa __asan_init "$SOAK_BUILD/ringsteer-gateway" 2>/dev/null && SOAK_ASAN=1

# shellcheck source=../cluster/lib.sh
. "$(dirname "$0")/../cluster/lib.sh"

RANDOM=$SOAK_SEED
echo "soak: seed $SOAK_SEED, ${SOAK_SECS} s, $SUPS supervisors, 4 gateways, build $SOAK_BUILD$([ "$SOAK_ASAN" = 1 ] && echo ' (ASan: RSS reported, not bounded)') (replay: $0 $1 $SOAK_SECS $SOAK_SEED)"

# --- the schedule's randomness (main shell only: $(...) would reseed) ------

R=0
rnd() { R=$((RANDOM % $1)); } # R = 0..N-1

# --- state -------------------------------------------------------------------

declare -A SERVING=()  # gateway number -> 1 while running and not draining
declare -A GMIN=()     # gateway number -> fewest serving gateways during its life
declare -A GW_BORN=()  # gateway number -> start time (ms)
declare -A DRAINING=() # pid -> "N start_ms"
declare -A F=([kill]=0 [drain]=0 [agent]=0 [blip]=0 [lock]=0 [flip]=0)
F_LOCK_BLIP=0 F_LOCK_KILL=0 BLIP_SOCKETS=0 BLIP_MISSED=0 FLIPS=0
NEXT_GW=5
DEFERRED=()            # replacements to start once the store is back
QUIETS=0 CHECKS=0 SAMPLES=0 QUIET_MAX_MS=0 QUIET_SUM_MS=0
PEAK_EXCESS=-999 PEAK_EXCESS_AT="" PEAK_EXCESS_Q=-999 PEAK_EXCESS_Q_AT=""
LITERAL_OVER=0 PEAK_NONDEG_OVER=-999 PEAK_DEGRADED=0
OVERCOUNT_PEAK=0 OVERCOUNT_SINCE=0
DRAINS_DONE=0 DRAIN_MAX_MS=0
AGENT=1
T_START=0 T_END=0
SAMPLES_FILE=""
declare -A P_KIND=() P_NAME=() P_BORN=() P_BASE_FD=() P_BASE_RSS=() P_BASE_SUPS=() P_LAST_FD=() P_LAST_RSS=()
declare -A P_MAX_FD=() P_MAX_RSS=() P_PEAK_SUPS=() P_FIRST_FD=() P_FIRST_RSS=()
declare -A GAUGE=()    # "N field" -> value from the last scrape
declare -A GW_PEAK=()  # gateway number -> most supervisors its gauge showed
VERDICT=running

note() { rs_log "soak: $*"; }
ceil_div() { echo $((($1 + $2 - 1) / $2)); }
serving_list() { printf '%s\n' "${!SERVING[@]}" | sort -n; }
serving_count() { echo "${#SERVING[@]}"; }

# Every serving gateway has seen at most G serving gateways now.
gmin_update() {
	local g n
	g=${#SERVING[@]}
	for n in "${!SERVING[@]}"; do
		[ -z "${GMIN[$n]:-}" ] || [ "$g" -lt "${GMIN[$n]}" ] && GMIN[$n]=$g
	done
}

soak_gw_start() {
	local n=$1
	gw_start "$n"
	SERVING[$n]=1
	GW_BORN[$n]=$(rs_now_ms)
	gmin_update
}

# --- the agent -----------------------------------------------------------------

# soak_agent_first: agent_start's command, but an agent that cannot steer
# here (exit 3, event=no_steering) turns the soak into an agent-less one.
soak_agent_first() {
	RS_AGENT_STARTS=$((RS_AGENT_STARTS + 1))
	mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf 2>/dev/null
	nsenter --net="/run/netns/$RS_NS" "$RS_BUILD/ringsteer-agent" --service "$RS_SERVICE" \
		--store "$RS_STORE" --ttl "$RS_TTL_MS" --sync-interval 100 --metrics "$RS_AGENT_METRICS" \
		--no-connect --socket "$RS_SOCK/agent.sock" 2>"$(agent_log)" &
	RS_AGENT_PID=$!
	local i
	for ((i = 0; i < 200; i++)); do
		grep -q 'event=ready' "$(agent_log)" && break
		if rs_gone "$RS_AGENT_PID"; then
			wait "$RS_AGENT_PID"
			local rc=$?
			RS_AGENT_PID=""
			[ "$rc" -eq 3 ] || fail "the agent exited $rc at start: $(tail -n 3 "$(agent_log)")"
			return 1
		fi
		sleep 0.05
	done
	grep -q 'event=ready' "$(agent_log)" || fail "the agent is not ready after 10 s"
	disown "$RS_AGENT_PID"
	RS_PIN_DIR="/sys/fs/bpf/ringsteer/$(stat -L -c %i "/run/netns/$RS_NS")"
	return 0
}

# --- metrics -----------------------------------------------------------------

# scrape N: GAUGE["N field"] for the fields below; status 1 if unreachable.
SCRAPE_FIELDS="sup busiest unrec degraded rejects claims redir_drain ho_done store_up deferred"
scrape() {
	local n=$1 body vals f i=0
	body=$(rs_ns curl -fsS --max-time 2 "http://$(gw_addr "$n"):$RS_GW_METRICS_PORT/metrics" 2>/dev/null) || return 1
	vals=$(printf '%s\n' "$body" | awk '
		/^#/ { next }
		{ k = $1; sub(/\{.*/, "", k); v = $NF }
		k == "ringsteer_gateway_supervisors" { sup = v }
		k == "ringsteer_gateway_busiest_supervisor_sandboxes" { busiest = v }
		k == "ringsteer_gateway_unrecorded_supervisors" { unrec = v }
		k == "ringsteer_gateway_degraded_accepts_total" { degr = v }
		k == "ringsteer_gateway_rejects_total" { rej += v }
		k == "ringsteer_gateway_store_claims_total" { claims += v }
		k == "ringsteer_gateway_redirects_total" && $0 ~ /reason="drain"/ { rd = v }
		k == "ringsteer_gateway_handoffs_total" { ho += v }
		k == "ringsteer_gateway_store_up" { up = v }
		k == "ringsteer_gateway_deferred_placements_pending" { dp = v }
		END { printf "%d %d %d %d %d %d %d %d %d %d\n", sup, busiest, unrec, degr, rej, claims, rd, ho, up, dp }')
	set -- $vals
	for f in $SCRAPE_FIELDS; do
		i=$((i + 1))
		GAUGE["$n $f"]=${!i}
	done
}

# --- continuous checks -----------------------------------------------------------

# sups_alive: every supervisor process runs (one awk over their stat files;
# a missing one, a process gone, stops awk with an error: not alive).
sups_alive() {
	local m files=() alive
	for m in $(seq 1 "$SUPS"); do files+=("/proc/${RS_SUP_PID[$m]:-0}/stat"); done
	alive=$(awk 'FNR == 1 { s = $0; sub(/.*\) /, "", s); if (substr(s, 1, 1) != "Z") n++ } END { print n + 0 }' \
		"${files[@]}" 2>/dev/null)
	[ "${alive:-0}" -eq "$SUPS" ]
}

reap_drains() {
	local pid n t0 now log ms
	now=$(rs_now_ms)
	for pid in "${!DRAINING[@]}"; do
		read -r n t0 <<<"${DRAINING[$pid]}"
		log=$(gw_log "$n")
		if rs_gone "$pid"; then
			ms=$((now - t0))
			log_has "$log" 'event=drained' || fail "gw-$n exited after SIGTERM without event=drained"
			[ "$ms" -gt "$DRAIN_MAX_MS" ] && DRAIN_MAX_MS=$ms
			DRAINS_DONE=$((DRAINS_DONE + 1))
			unset "DRAINING[$pid]"
			CHECKS=$((CHECKS + 1))
		elif [ $((now - t0)) -gt $((DRAIN_BUDGET + 5000)) ]; then
			fail "gw-$n (pid $pid) still running $((now - t0)) ms after SIGTERM (drain budget $DRAIN_BUDGET ms)"
		fi
	done
}

# tick: the continuous checks; fails on a violation.
tick() {
	local n sum=0 inflight=0 g cap mx=-1 mxn="" over now
	now=$(rs_now_ms)
	[ "$now" -le $((T_END + (QUIET_S + 120) * 1000)) ] || fail "the soak overran its bound (SECONDS + ${QUIET_S} + 120 s)"
	SAMPLES=$((SAMPLES + 1))
	for n in "${!SERVING[@]}"; do
		gw_alive "$n" || fail "gw-$n died (pid ${RS_GW_PID[$n]:-?}; log $(gw_log "$n"))"
	done
	if [ "$AGENT" = 1 ] && { [ -z "$RS_AGENT_PID" ] || rs_gone "$RS_AGENT_PID"; }; then
		fail "the agent died (log $(agent_log))"
	fi
	sups_alive || fail "a supervisor died: $(for m in $(seq 1 "$SUPS"); do sup_alive "$m" || printf 'sup-%s ' "$m"; done)"
	reap_drains
	CHECKS=$((CHECKS + 3))
	for n in "${!SERVING[@]}"; do
		scrape "$n" || continue
		sum=$((sum + ${GAUGE["$n sup"]}))
		[ "${GAUGE["$n sup"]}" -gt "${GW_PEAK[$n]:-0}" ] && GW_PEAK[$n]=${GAUGE["$n sup"]}
		[ "${GAUGE["$n sup"]}" -gt "$mx" ] && { mx=${GAUGE["$n sup"]}; mxn=$n; }
	done
	local pid
	for pid in "${!DRAINING[@]}"; do
		read -r n _ <<<"${DRAINING[$pid]}"
		scrape "$n" || continue
		sum=$((sum + ${GAUGE["$n sup"]}))
		# Redirected by the drain and still attached: in flight.
		inflight=$((inflight + ${GAUGE["$n redir_drain"]} - ${GAUGE["$n ho_done"]}))
	done
	g=${#SERVING[@]}
	if [ "$g" -gt 0 ] && [ "$mx" -ge 0 ]; then
		cap=$(ceil_div "$SUPS" "$g")
		if [ $((mx - cap)) -gt "$PEAK_EXCESS" ]; then
			PEAK_EXCESS=$((mx - cap))
			PEAK_EXCESS_AT="gw-$mxn held $mx, cap $cap (G $g) at +$(((now - T_START) / 1000)) s"
		fi
	fi
	over=$((sum - SUPS - inflight))
	[ "$over" -gt "$OVERCOUNT_PEAK" ] && OVERCOUNT_PEAK=$over
	if [ "$over" -gt 0 ]; then
		[ "$OVERCOUNT_SINCE" -gt 0 ] || OVERCOUNT_SINCE=$now
		[ $((now - OVERCOUNT_SINCE)) -le $((3 * RS_HEARTBEAT_MS + 2000)) ] ||
			fail "the gateways have counted $sum supervisors (> $SUPS + $inflight handoffs in flight) for $((now - OVERCOUNT_SINCE)) ms: a supervisor held twice"
	else
		OVERCOUNT_SINCE=0
	fi
	CHECKS=$((CHECKS + 1))
}

# pause SECONDS: sleep, ticking every ~0.5 s.
pause() {
	local until
	until=$(($(rs_now_ms) + $(awk -v s="$1" 'BEGIN { printf "%d", s * 1000 }')))
	while [ "$(rs_now_ms)" -lt "$until" ]; do
		tick
		sleep 0.3
	done
}

# --- the ledger --------------------------------------------------------------

# ledger: "member gateway state live epoch sandboxes" per row, TTL = the gateways'.
ledger() {
	ctl sessions --store "$RS_STORE" --all --json --ttl "$RS_TTL_MS" |
		jq -r '.[] | "\(.member_id) \(.gateway_id) \(.state) \(.live) \(.epoch) \(.sandboxes)"'
}

# sup_runs: "sup-M gateway epoch run_start_epoch" from each supervisor's
# current log: its last attachment, and the epoch at which its current run
# of attachments to that gateway began.
sup_runs() {
	local m files=()
	for m in $(seq 1 "$SUPS"); do files+=("$(sup_log "$m")"); done
	awk '/ event=attached( |$)/ {
			e = ""; g = ""
			for (i = 1; i <= NF; i++) {
				if ($i ~ /^epoch=/) e = substr($i, 7)
				if ($i ~ /^gateway=/) g = substr($i, 9)
			}
			if (g != gw[FILENAME]) start[FILENAME] = e
			gw[FILENAME] = g; ep[FILENAME] = e
		}
		END {
			for (f in gw) {
				b = f; sub(/.*\//, "", b); sub(/\.[0-9]+\.log$/, "", b)
				print b, gw[f], ep[f], start[f]
			}
		}' "${files[@]}" 2>/dev/null | LC_ALL=C sort
}

QUIET_WHY=""
# quiet_ok: the quiet-point condition (see the header); QUIET_WHY says what is missing.
quiet_ok() {
	local led runs want serving n
	[ ${#DRAINING[@]} -eq 0 ] || { QUIET_WHY="a drain in flight"; return 1; }
	[ ${#DEFERRED[@]} -eq 0 ] || { QUIET_WHY="a replacement not started"; return 1; }
	led=$(ledger) || { QUIET_WHY="ledger unreadable"; return 1; }
	serving=" $(for n in "${!SERVING[@]}"; do printf 'gw-%s ' "$n"; done)"
	want=$(for m in $(seq 1 "$SUPS"); do echo "sup-$m ${RS_SUP_BOXES[$m]}"; done | LC_ALL=C sort)
	runs=$(sup_runs)
	QUIET_WHY=$(LC_ALL=C join <(printf '%s\n' "$led" | LC_ALL=C sort) <(printf '%s\n' "$runs") |
		LC_ALL=C join - <(printf '%s\n' "$want") |
		awk -v n="$SUPS" -v serving="$serving" '
			# member gw state live epoch boxes | lgw lepoch start | want
			{ rows++ }
			$3 != "active" || $4 != "true" { bad = bad " " $1 ":" $3 "/live=" $4; next }
			index(serving, " " $2 " ") == 0 { bad = bad " " $1 ":on-" $2; next }
			$7 != $2 || $8 != $5 { bad = bad " " $1 ":log-" $7 "/" $8 "-ledger-" $2 "/" $5; next }
			$6 != $10 { bad = bad " " $1 ":sandboxes-" $6 "-want-" $10; next }
			END {
				if (rows != n) printf "%d of %d supervisors in ledger and logs;", rows, n
				if (bad != "") printf "%s", substr(bad, 1, 300)
			}')
	[ -z "$QUIET_WHY" ] || return 1
	[ "$(printf '%s\n' "$led" | grep -c .)" -eq "$SUPS" ] || { QUIET_WHY="ledger has $(printf '%s\n' "$led" | grep -c .) rows"; return 1; }
	# The gauges agree with the ledger.
	for n in "${!SERVING[@]}"; do
		scrape "$n" || { QUIET_WHY="gw-$n /metrics unreachable"; return 1; }
		local c mx
		read -r c mx < <(printf '%s\n' "$led" | awk -v g="gw-$n" '$2 == g { c++; if ($6 > m) m = $6 } END { print c + 0, m + 0 }')
		[ "${GAUGE["$n sup"]}" = "$c" ] || { QUIET_WHY="gw-$n supervisors gauge ${GAUGE["$n sup"]}, ledger $c"; return 1; }
		[ "${GAUGE["$n busiest"]}" = "$mx" ] || { QUIET_WHY="gw-$n busiest gauge ${GAUGE["$n busiest"]}, ledger $mx"; return 1; }
		[ "${GAUGE["$n unrec"]}" = 0 ] || { QUIET_WHY="gw-$n has ${GAUGE["$n unrec"]} unrecorded"; return 1; }
		[ "${GAUGE["$n deferred"]}" = 0 ] || { QUIET_WHY="gw-$n has ${GAUGE["$n deferred"]} deferred placements to come"; return 1; }
		[ "${GAUGE["$n store_up"]}" = 1 ] || { QUIET_WHY="gw-$n store_up 0"; return 1; }
	done
	QUIET_LEDGER=$led QUIET_RUNS=$runs
	return 0
}

# --- fd / RSS ------------------------------------------------------------------

# sample_procs: fds and VmRSS (KiB) of every gateway, the agent and every
# supervisor; checks each against its baseline.
sample_procs() {
	local now pids=() key n m pid
	declare -A who=()
	now=$(rs_now_ms)
	for n in "${!SERVING[@]}"; do
		pid=${RS_GW_PID[$n]}
		who[$pid]="gw gw-$n ${GW_BORN[$n]} ${GAUGE["$n sup"]:-0} ${GW_PEAK[$n]:-0}"
		pids+=("$pid")
	done
	if [ "$AGENT" = 1 ] && [ -n "$RS_AGENT_PID" ]; then
		who[$RS_AGENT_PID]="agent agent.$RS_AGENT_STARTS $AGENT_BORN 0 0"
		pids+=("$RS_AGENT_PID")
	fi
	for m in $(seq 1 "$SUPS"); do
		pid=${RS_SUP_PID[$m]}
		who[$pid]="sup sup-$m $T_START 0 0"
		pids+=("$pid")
	done
	local fdl rss fds r kind name born sups peak base_fd allowed
	local fdv
	fdl=$(for pid in "${pids[@]}"; do
		fdv=(/proc/"$pid"/fd/*)
		[ -e "${fdv[0]}" ] && echo "$pid ${#fdv[@]}"
	done)
	rss=$(for pid in "${pids[@]}"; do printf '/proc/%s/status\n' "$pid"; done |
		xargs awk '/^VmRSS:/ { split(FILENAME, a, "/"); print a[3], $2 }' 2>/dev/null)
	declare -A FD=() RSS=()
	while read -r pid fds; do [ -n "$pid" ] && FD[$pid]=$fds; done <<<"$fdl"
	while read -r pid r; do [ -n "$pid" ] && RSS[$pid]=$r; done <<<"$rss"
	for pid in "${pids[@]}"; do
		read -r kind name born sups peak <<<"${who[$pid]}"
		[ "$peak" -ge "$sups" ] || peak=$sups
		fds=${FD[$pid]:-} r=${RSS[$pid]:-}
		[ -n "$fds" ] && [ -n "$r" ] || fail "$name (pid $pid): no /proc figures (died?)"
		[ "$kind" = gw ] && fds=$((fds - sups)) # one socket per attached supervisor
		key=$pid
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(((now - T_START) / 1000))" "$kind" "$name" "$pid" "$fds" "$r" "$sups" >>"$SAMPLES_FILE"
		if [ -z "${P_KIND[$key]:-}" ]; then
			P_KIND[$key]=$kind P_NAME[$key]=$name P_BORN[$key]=$born
			P_FIRST_FD[$key]=$fds P_FIRST_RSS[$key]=$r P_MAX_FD[$key]=$fds P_MAX_RSS[$key]=$r P_PEAK_SUPS[$key]=$sups
		fi
		P_LAST_FD[$key]=$fds P_LAST_RSS[$key]=$r
		[ "$fds" -gt "${P_MAX_FD[$key]}" ] && P_MAX_FD[$key]=$fds
		[ "$r" -gt "${P_MAX_RSS[$key]}" ] && P_MAX_RSS[$key]=$r
		[ "$peak" -gt "${P_PEAK_SUPS[$key]}" ] && P_PEAK_SUPS[$key]=$peak
		if [ -z "${P_BASE_FD[$key]:-}" ]; then
			[ $((now - born)) -ge $((WARMUP_S * 1000)) ] || continue
			P_BASE_FD[$key]=$fds P_BASE_RSS[$key]=$r P_BASE_SUPS[$key]=$sups
			continue
		fi
		base_fd=${P_BASE_FD[$key]}
		case $kind in
		gw)
			local more=$((P_PEAK_SUPS[$key] - P_BASE_SUPS[$key]))
			[ "$more" -gt 0 ] || more=0
			allowed=$((P_BASE_RSS[$key] / 5 + 32 * more))
			[ $((fds - base_fd)) -le 16 ] || fail "$name: fds (net of supervisors) grew $base_fd -> $fds (bound +16)"
			;;
		agent)
			allowed=$((P_BASE_RSS[$key] / 5))
			[ $((fds - base_fd)) -le 16 ] || fail "$name: fds grew $base_fd -> $fds (bound +16)"
			;;
		sup)
			allowed=$((P_BASE_RSS[$key] / 5 + 256))
			[ $((fds - base_fd)) -le 4 ] || fail "$name: fds grew $base_fd -> $fds (bound +4)"
			;;
		esac
		[ "$SOAK_ASAN" = 1 ] || [ $((r - P_BASE_RSS[$key])) -le "$allowed" ] ||
			fail "$name: RSS grew ${P_BASE_RSS[$key]} -> $r KiB (bound +$allowed KiB)"
		CHECKS=$((CHECKS + 2))
	done
}

# --- the quiet point -------------------------------------------------------------

QUIET_LEDGER="" QUIET_RUNS=""
quiet_point() {
	local label=$1 t0 deadline now ms
	t0=$(rs_now_ms)
	deadline=$((t0 + QUIET_S * 1000))
	while :; do
		tick
		[ -z "$RS_LOCK_PID" ] && quiet_ok && break
		now=$(rs_now_ms)
		[ "$now" -lt "$deadline" ] || fail "quiet point $((QUIETS + 1)) ($label): not quiet after ${QUIET_S} s: $QUIET_WHY"
		sleep 0.25
	done
	ms=$(($(rs_now_ms) - t0))
	QUIETS=$((QUIETS + 1))
	QUIET_SUM_MS=$((QUIET_SUM_MS + ms))
	[ "$ms" -gt "$QUIET_MAX_MS" ] && QUIET_MAX_MS=$ms
	CHECKS=$((CHECKS + 6 * SUPS + 4 * ${#SERVING[@]}))
	quiet_checks "$label" "$ms"
}

# quiet_checks LABEL MS: the invariants at a quiet point (the ledger and the
# supervisors' runs are quiet_ok's, read when it passed).
quiet_checks() {
	local label=$1 ms=$2 n g cap led=$QUIET_LEDGER runs=$QUIET_RUNS
	g=${#SERVING[@]}
	cap=$(ceil_div "$SUPS" "$g")
	# Degraded starts: supervisors whose current run on a gateway began with
	# a degraded accept there.
	local degr
	degr=$(grep -h 'event=degraded_accept' "$RS_DIR"/log/gw-*.log 2>/dev/null |
		awk '{ g = ""; m = ""; e = ""
			for (i = 1; i <= NF; i++) {
				if ($i ~ /^gateway=/) g = substr($i, 9)
				if ($i ~ /^member=/) m = substr($i, 8)
				if ($i ~ /^epoch=/) e = substr($i, 7)
			}
			print m, g, e }' | LC_ALL=C sort -u)
	local per
	# per gateway: "gw-N load degraded_started" (runs: member gateway epoch start)
	per=$(awk 'NR == FNR { d[$1 " " $2 " " $3] = 1; next }
		NF { load[$2]++; if (($1 " " $2 " " $4) in d) dg[$2]++ }
		END { for (g in load) print g, load[g], dg[g] + 0 }' <(printf '%s\n' "$degr") <(printf '%s\n' "$runs"))
	local line gw load d bound mxl=-1 mxg="" dsum=0
	for n in "${!SERVING[@]}"; do
		line=$(printf '%s\n' "$per" | awk -v g="gw-$n" '$1 == g')
		read -r gw load d <<<"${line:-gw-$n 0 0}"
		bound=$(($(ceil_div "$SUPS" "${GMIN[$n]}") + 1))
		dsum=$((dsum + d))
		[ $((load - bound)) -gt "$PEAK_NONDEG_OVER" ] && PEAK_NONDEG_OVER=$((load - bound))
		[ "$load" -le "$bound" ] ||
			fail "quiet point $QUIETS ($label): gw-$n holds $load supervisors ($d of them from degraded accepts) > ceil($SUPS / ${GMIN[$n]}) + 1 = $bound (the fewest serving gateways during its life: ${GMIN[$n]})"
		[ "$load" -le $((cap + 1)) ] || LITERAL_OVER=$((LITERAL_OVER + 1))
		[ "$load" -gt "$mxl" ] && { mxl=$load; mxg=$n; }
		CHECKS=$((CHECKS + 1))
	done
	[ "$dsum" -gt "$PEAK_DEGRADED" ] && PEAK_DEGRADED=$dsum
	if [ $((mxl - cap)) -gt "$PEAK_EXCESS_Q" ]; then
		PEAK_EXCESS_Q=$((mxl - cap))
		PEAK_EXCESS_Q_AT="quiet point $QUIETS: gw-$mxg held $mxl, cap $cap (G $g)"
	fi
	# Sandboxes conserved: the ledger's sum over serving gateways = the counts set.
	local want=0 have m
	for m in $(seq 1 "$SUPS"); do want=$((want + RS_SUP_BOXES[$m])); done
	have=$(printf '%s\n' "$led" | awk '{ s += $6 } END { print s + 0 }')
	[ "$have" -eq "$want" ] || fail "quiet point $QUIETS ($label): ledger sandboxes sum to $have, the supervisors carry $want"
	CHECKS=$((CHECKS + 1))
	# Refusals: counters = log lines on every serving gateway ...
	local log
	for n in "${!SERVING[@]}"; do
		log=$(gw_log "$n")
		[ "${GAUGE["$n rejects"]}" = "$(log_count "$log" ' event=reject ')" ] ||
			fail "gw-$n: rejects_total ${GAUGE["$n rejects"]} but $(log_count "$log" ' event=reject ') event=reject lines"
		[ "${GAUGE["$n degraded"]}" = "$(log_count "$log" ' event=degraded_accept ')" ] ||
			fail "gw-$n: degraded_accepts_total ${GAUGE["$n degraded"]} but $(log_count "$log" ' event=degraded_accept ') log lines"
		[ "${GAUGE["$n claims"]}" = "$(log_count "$log" ' event=claim ')" ] ||
			fail "gw-$n: store_claims_total ${GAUGE["$n claims"]} but $(log_count "$log" ' event=claim ') log lines"
		CHECKS=$((CHECKS + 3))
	done
	# ... and every REJECT a supervisor saw was logged by a gateway.
	local short
	short=$(LC_ALL=C join -a 1 -e 0 -o 1.1,1.2,2.2 \
		<(cat "$RS_DIR"/log/sup-*.log | awk '/ event=rejected / { for (i = 1; i <= NF; i++) if ($i ~ /^supervisor=/) c[substr($i, 12)]++ }
			END { for (m in c) print m, c[m] }' | LC_ALL=C sort) \
		<(cat "$RS_DIR"/log/gw-*.log | awk '/ event=reject / { for (i = 1; i <= NF; i++) if ($i ~ /^member=/) c[substr($i, 8)]++ }
			END { for (m in c) print m, c[m] }' | LC_ALL=C sort) | awk '$2 > $3')
	[ -z "$short" ] || fail "supervisors saw more REJECTs than the gateways counted (member sup-seen gw-logged): $short"
	CHECKS=$((CHECKS + SUPS))
	# No sanitizer report.
	if grep -lE 'ERROR: (Address|Leak|Thread|Memory)Sanitizer|runtime error:' "$RS_DIR"/log/*.log >/dev/null 2>&1; then
		fail "sanitizer report in $(grep -lE 'ERROR: (Address|Leak|Thread|Memory)Sanitizer|runtime error:' "$RS_DIR"/log/*.log | xargs -n1 basename | tr '\n' ' ')"
	fi
	CHECKS=$((CHECKS + 1))
	sample_procs
	note "quiet point $QUIETS ($label) after $ms ms: loads $(for n in $(serving_list); do printf 'gw-%s=%s ' "$n" "${GAUGE["$n sup"]}"; done)(cap $cap, G $g, degraded-started $dsum)"
}

# --- faults ------------------------------------------------------------------------

# pick_gw: R = a random serving gateway that may be killed or drained.
pick_gw() {
	local c=()
	for n in $(serving_list); do
		[ "$SENTINEL" = 1 ] && [ "$n" = 1 ] && continue
		c+=("$n")
	done
	[ ${#c[@]} -gt 0 ] || fail "no gateway to pick"
	rnd ${#c[@]}
	R=${c[$R]}
}

new_gw_id() {
	[ "$NEXT_GW" -le 254 ] || fail "out of gateway addresses (127.0.1.254)"
	R=$NEXT_GW
	NEXT_GW=$((NEXT_GW + 1))
}

fault_kill() {
	local old new
	pick_gw; old=$R
	new_gw_id; new=$R
	note "fault kill: SIGKILL gw-$old, replacement gw-$new"
	unset "SERVING[$old]"
	gw_kill "$old"
	gmin_update
	if [ -n "$RS_LOCK_PID" ]; then
		DEFERRED+=("$new")
	else
		soak_gw_start "$new"
	fi
}

fault_drain() {
	local old new pid
	pick_gw; old=$R
	new_gw_id; new=$R
	note "fault drain: gw-$new started, then SIGTERM gw-$old (surge-first)"
	soak_gw_start "$new"
	pid=${RS_GW_PID[$old]}
	unset "SERVING[$old]"
	RS_GW_PID[$old]=""
	svc_update
	gmin_update
	DRAINING[$pid]="$old $(rs_now_ms)"
	kill -TERM "$pid"
}

# agent_lookups: AGENT_LOOKUPS = the agent's steering counters (rs_stats is
# a pinned map: the counters survive agent restarts).
declare -A AGENT_LOOKUPS=()
agent_lookups() {
	local k v
	while read -r k v; do
		[ -n "$k" ] && AGENT_LOOKUPS[$k]=${v%.*}
	done < <(rs_ns curl -fsS --max-time 2 "http://$RS_AGENT_METRICS/metrics" 2>/dev/null |
		awk '/^ringsteer_agent_lookups_total/ { k = $1; sub(/.*result="/, "", k); sub(/".*/, "", k); print k, $2 }')
}

fault_agent() {
	note "fault agent: restart (pins persist)"
	agent_kill
	agent_start
	AGENT_BORN=$(rs_now_ms)
}

# blip_some K: ss -K the connections of K random distinct supervisors.
blip_some() {
	local k=$1 i m out c picked=" "
	for ((i = 0; i < k; i++)); do
		rnd "$SUPS"; m=$((R + 1))
		case $picked in *" $m "*) continue ;; esac
		picked+="$m "
		out=$(ip netns exec "$(sup_ns "$m")" ss -K -t -n state established "( src $(sup_addr "$m") or dst $(sup_addr "$m") )" 2>&1)
		c=$(printf '%s\n' "$out" | grep -c "$(sup_addr "$m")" || true)
		BLIP_SOCKETS=$((BLIP_SOCKETS + c))
		[ "$c" -gt 0 ] || BLIP_MISSED=$((BLIP_MISSED + 1))
	done
	note "blip:$picked($BLIP_SOCKETS sockets destroyed so far)"
}

fault_blip() {
	rnd 5
	note "fault blip: $((R + 1)) supervisors"
	blip_some $((R + 1))
}

fault_flip() {
	local k i m
	rnd 8; k=$((R + 1))
	note "fault flip: $k supervisors' sandbox counts"
	for ((i = 0; i < k; i++)); do
		rnd "$SUPS"; m=$((R + 1))
		rnd 30
		sup_set_sandboxes "$m" "$R"
		FLIPS=$((FLIPS + 1))
	done
}

fault_lock() {
	local extra new
	rnd 3; extra=$R
	note "fault lock: store locked ${LOCK_S} s$([ "$extra" = 1 ] && echo ', 3 supervisors blipped')$([ "$extra" = 2 ] && echo ', a gateway killed')"
	store_lock
	pause 0.6
	case $extra in
	1) F_LOCK_BLIP=$((F_LOCK_BLIP + 1)); blip_some 3 ;;
	2) F_LOCK_KILL=$((F_LOCK_KILL + 1)); fault_kill ;;
	esac
	pause $(awk -v s="$LOCK_S" 'BEGIN { print s - 0.6 }')
	store_unlock
	for new in "${DEFERRED[@]}"; do
		soak_gw_start "$new"
	done
	DEFERRED=()
}

# --- summary -------------------------------------------------------------------------

summary() {
	local now secs kind key fdd rssd wfd wrss wname
	now=$(rs_now_ms)
	secs=$(((now - T_START) / 1000))
	local total=$((F[kill] + F[drain] + F[agent] + F[blip] + F[lock] + F[flip]))
	echo "soak summary (seed $SOAK_SEED, $VERDICT): ${secs} s (${SOAK_SECS} s of faults), $SUPS supervisors, 4 gateways, agent $([ "$AGENT" = 1 ] && echo on || echo "off (cannot steer here)")"
	echo "  faults: $total: kill ${F[kill]}, drain ${F[drain]}, agent restart ${F[agent]}, blip ${F[blip]} ($BLIP_SOCKETS sockets, $BLIP_MISSED supervisors between links), store lock ${F[lock]} (with a blip $F_LOCK_BLIP, with a kill $F_LOCK_KILL), sandbox flip ${F[flip]} ($FLIPS supervisors); gateways started $((NEXT_GW - 1)), drains completed $DRAINS_DONE (longest $DRAIN_MAX_MS ms)"
	echo "  quiet points: $QUIETS (longest wait $QUIET_MAX_MS ms, mean $((QUIETS ? QUIET_SUM_MS / QUIETS : 0)) ms); continuous samples: $SAMPLES; invariant checks: $CHECKS"
	echo "  peak cap excess (load - ceil($SUPS/G)): continuous $PEAK_EXCESS (${PEAK_EXCESS_AT:-none}); at quiet points $PEAK_EXCESS_Q (${PEAK_EXCESS_Q_AT:-none}); quiet-point loads above ceil($SUPS/G)+1: $LITERAL_OVER; supervisors (degraded arrivals included) vs the lifetime bound ceil($SUPS/Gmin)+1: peak $PEAK_NONDEG_OVER (<= 0 required); most degraded-started supervisors at a quiet point: $PEAK_DEGRADED; gauge overcount peak $OVERCOUNT_PEAK"
	for kind in gw agent sup; do
		local nproc=0 nbase=0
		wfd=-999999 wrss=-999999 wname=""
		for key in "${!P_KIND[@]}"; do
			[ "${P_KIND[$key]}" = "$kind" ] || continue
			nproc=$((nproc + 1))
			[ -n "${P_BASE_FD[$key]:-}" ] || continue
			nbase=$((nbase + 1))
			fdd=$((P_LAST_FD[$key] - P_BASE_FD[$key]))
			rssd=$((P_LAST_RSS[$key] - P_BASE_RSS[$key]))
			[ "$fdd" -gt "$wfd" ] && wfd=$fdd
			[ "$rssd" -gt "$wrss" ] && { wrss=$rssd; wname="${P_NAME[$key]} (${P_BASE_RSS[$key]} -> ${P_LAST_RSS[$key]} KiB, max ${P_MAX_RSS[$key]})"; }
		done
		[ "$nbase" -gt 0 ] || { wfd=n/a; wrss=n/a; }
		echo "  drift $kind: $nproc processes, $nbase past warm-up; worst fd drift $wfd; worst RSS drift $wrss KiB ${wname:+: $wname}"
	done
	for key in "${!P_KIND[@]}"; do
		case ${P_NAME[$key]} in gw-1|agent.*) ;; *) continue ;; esac
		echo "    ${P_NAME[$key]} (pid $key): fds first ${P_FIRST_FD[$key]} base ${P_BASE_FD[$key]:-?} last ${P_LAST_FD[$key]} max ${P_MAX_FD[$key]}; RSS KiB first ${P_FIRST_RSS[$key]} base ${P_BASE_RSS[$key]:-?} last ${P_LAST_RSS[$key]} max ${P_MAX_RSS[$key]}$([ "${P_KIND[$key]}" = gw ] && echo "; fds net of supervisors, peak supervisors ${P_PEAK_SUPS[$key]}")"
	done
	local rej degr sref svcfail
	rej=$(cat "$RS_DIR"/log/gw-*.log 2>/dev/null | awk '/ event=reject / { for (i = 1; i <= NF; i++) if ($i ~ /^reason=/) c[substr($i, 8)]++ } END { for (r in c) printf "%s %d, ", r, c[r] }')
	degr=$(cat "$RS_DIR"/log/gw-*.log 2>/dev/null | grep -c ' event=degraded_accept ' || true)
	sref=$(cat "$RS_DIR"/log/sup-*.log 2>/dev/null | grep -c ' event=rejected ' || true)
	svcfail=$(cat "$RS_DIR"/log/sup-*.log 2>/dev/null | awk '/ event=dial_failed / { v = ""; e = ""
			for (i = 1; i <= NF; i++) if ($i ~ /^via=/) v = substr($i, 5)
			if (match($0, / error="[^"]*"/)) e = substr($0, RSTART + 8, RLENGTH - 9)
			else if (match($0, / error=[^ ]*/)) e = substr($0, RSTART + 7, RLENGTH - 7)
			c[v " (" e ")"]++ } END { for (k in c) printf "%s %d, ", k, c[k] }')
	echo "  refusals: gateways logged REJECT ${rej:-none}(counters = log lines on every live gateway at every quiet point); supervisors saw $sref REJECTs (each matched by a gateway's); degraded accepts $degr; supervisors' failed dials: ${svcfail:-none}"
	if [ "$AGENT" = 1 ]; then
		[ -n "$RS_AGENT_PID" ] && agent_lookups
		local k out=""
		for k in $(printf '%s\n' "${!AGENT_LOOKUPS[@]}" | sort); do out+="$k ${AGENT_LOOKUPS[$k]}, "; done
		echo "  agent steering lookups (pinned counters, all $RS_AGENT_STARTS agent processes): ${out:-none}"
	fi
}

soak_exit() {
	local rc=$?
	trap - EXIT
	[ "$VERDICT" = ok ] || VERDICT="FAILED (exit $rc)"
	[ -n "$SAMPLES_FILE" ] && summary
	cluster_down
	local rc2=$?
	[ "$rc" -ne 0 ] || rc=$rc2
	[ "$rc" -eq 0 ] && echo "soak: ok (seed $SOAK_SEED)" || echo "soak: FAILED (seed $SOAK_SEED; logs in $RS_ARTIFACTS)"
	exit "$rc"
}

# --- main ------------------------------------------------------------------------------
# In one function, read whole before it runs: bash reads a script as it
# goes, so an edit to this file during a run would otherwise break it.
soak_main() {

	export RS_AGENT=1
	[ "${RS_SOAK_NO_AGENT:-0}" = 1 ] && RS_AGENT=0
	[ -x "$RS_BUILD/ringsteer-agent" ] || RS_AGENT=0
	[ "$RS_ARTIFACTS" = "$SOAK_BUILD/soak/seed-$SOAK_SEED" ] && rm -rf "$RS_ARTIFACTS"
	RS_TLS=${RS_SOAK_TLS:-1}
	RS_TLS_MTLS=$RS_TLS
	cluster_up --gateways 0
	trap soak_exit EXIT
	SAMPLES_FILE="$RS_DIR/log/soak.samples"
	printf 'sec\tkind\tname\tpid\tfds\trss_kib\tsupervisors\n' >"$SAMPLES_FILE"
	AGENT=$RS_AGENT
	AGENT_BORN=0
	if [ "$AGENT" = 1 ]; then
		if soak_agent_first; then
			AGENT_BORN=$(rs_now_ms)
			RS_GW_ARGS="${RS_GW_ARGS:-} --agent $RS_SOCK/agent.sock"
		else
			echo "soak: the agent cannot steer here (exit 3: $(grep -o 'reason=.*' "$(agent_log)" | head -n 1)); running without it on the nftables Service"
			AGENT=0
			RS_AGENT=0
			svc_update
		fi
	fi
	RS_GW_ARGS="${RS_GW_ARGS:-} --store-timeout 100 --drain-budget $DRAIN_BUDGET"
	T_START=$(rs_now_ms)
	T_END=$((T_START + SOAK_SECS * 1000 + 300000)) # reset below, once the fleet is up
	for n in 1 2 3 4; do soak_gw_start "$n"; done
	for n in 1 2 3 4; do GMIN[$n]=4; done # nobody was placed while they came up one by one
	for m in $(seq 1 "$SUPS"); do
		rnd 20
		RS_SUP_BOXES[$m]=$R
	done
	sups_start $(seq 1 "$SUPS")
	quiet_point "start"
	T_START=$(rs_now_ms)
	T_END=$((T_START + SOAK_SECS * 1000))
	note "fleet up: $SUPS supervisors on $(serving_count) gateways; faults for ${SOAK_SECS} s"

	since_quiet=0
	kinds=(kill drain blip lock flip agent)
	while [ "$(rs_now_ms)" -lt "$T_END" ]; do
		rnd 28; pause "$(awk -v r="$R" 'BEGIN { print 0.3 + r / 10 }')"
		[ "$(rs_now_ms)" -lt "$T_END" ] || break
		if [ "$AGENT" = 1 ]; then rnd 6; else rnd 5; fi
		kind=${kinds[$R]}
		F[$kind]=$((F[$kind] + 1))
		"fault_$kind"
		since_quiet=$((since_quiet + 1))
		rnd 2
		if [ "$R" = 0 ] || [ "$since_quiet" -ge 3 ]; then
			quiet_point "after $kind"
			since_quiet=0
		fi
	done
	quiet_point "end"
	VERDICT=ok
	exit 0
}
soak_main "$@"
exit
