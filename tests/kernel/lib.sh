# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# tests/kernel/lib.sh - a network namespace with the agent in it, for the
# agent tests.  Source it, then:
#
#   kt_up                  netns (lo up), temp dir, store path; EXIT trap;
#                          exits 77 (skipped) when not root, the one reason
#                          to skip: as root, anything that does not work fails
#   kt_at_exit FUNC        call FUNC from the EXIT trap (before the netns and
#                          the temp dir go), for what a test starts itself
#   kt_ns CMD...           run CMD in the netns (nsenter: host mount namespace)
#   agent_start [ARGS...]  ringsteer-agent for the Service 127.0.0.100:7000 with
#                          its socket in the temp dir; waits until it is ready,
#                          fails at once if it exits first (e.g. a program the
#                          kernel refused: its log, with libbpf's, is printed)
#   agent_kill / agent_stop  SIGKILL / SIGTERM (must exit 0), then wait
#   gws_start ID=ADDR:PORT...  kt_tool serve: listeners registered with the agent
#   dial SRC               which gateway a connection from SRC to the Service reaches
#   maps_json              ringsteerctl maps --json in the netns
#   await "DESC" SECONDS CMD...  poll CMD every 50 ms, else fail after
#                          SECONDS x KT_SCALE; what it took is recorded
#   kt_deadline_note "DESC" TOOK_S LIMIT_S  record a deadline's use
#   fail "MSG"             print MSG, the agent's log, exit 1
#
# Deadlines: every wall-clock limit a test sets (await, the agent's start,
# HTTP fetches, the agent's --steer-wait) is scaled by RS_KT_SCALE (default
# 1): a qemu guest under software emulation runs several times slower than
# the host, and vm-tests/guest.sh raises it there.  Each await appends
# "TOOK_S LIMIT_S TEST: DESC" to RS_KT_DEADLINES (tests/kernel/run.sh sets
# it and reports the deadline closest to being missed), so the margin
# between what a wait costs and its limit is measured, not assumed.
#
# The EXIT trap kills what it started, removes the agent's pins and the
# netns.  Addresses per ../shared/notes/test-network.md: gateways 127.0.1.N,
# supervisors 127.0.2.N, the Service 127.0.0.100:7000.
RS_BUILD=${RS_BUILD:-build}
KT_SERVICE=127.0.0.100:7000
KT_NS="" KT_DIR="" KT_INO="" KT_AGENT_PID="" KT_GWS_PID="" KT_AGENT_STARTS=0 KT_CG="" KT_CONNECT="" KT_AGENT_PREFIX=""
KT_AT_EXIT=()
# RS_KT_TRACE (tests/kernel/run.sh): each traced line stamped with the time
# (set here: bash takes no PS4 from the environment as root), written to the
# test's own stderr (fd 19), never into a file a traced command's stderr is
# redirected to.
if [ -n "${RS_KT_TRACE:-}" ]; then
	PS4='+ $EPOCHREALTIME '
	exec 19>&2
	BASH_XTRACEFD=19
fi
KT_SCALE=${RS_KT_SCALE:-1}
KT_HTTP_S=$((2 * KT_SCALE))          # curl --max-time for a local /metrics
# The agents' --steer-wait: a registration's answer waits for the store at
# most this long.  A maximum, paid only where a test wants the answer
# without a target (t_agent_store_stuck); ten times the slowest steer seen
# through PostgreSQL in a loaded guest (1.2 s of 20), twice over.
KT_STEER_WAIT_MS=$((2500 * KT_SCALE))

kt_log() { printf '%s %s\n' "$(date +%H:%M:%S.%3N)" "$*" >&2; }
kt_ns() { nsenter --net="/run/netns/$KT_NS" "$@"; }

kt_down() {
	local rc=$?
	[ -n "$KT_GWS_PID" ] && kill -KILL "$KT_GWS_PID" 2>/dev/null
	[ -n "$KT_AGENT_PID" ] && kill -KILL "$KT_AGENT_PID" 2>/dev/null
	wait 2>/dev/null
	local f
	for f in "${KT_AT_EXIT[@]}"; do "$f"; done
	[ -n "$KT_INO" ] && rm -rf "/sys/fs/bpf/ringsteer/$KT_INO"
	[ -n "$KT_NS" ] && ip netns del "$KT_NS" 2>/dev/null
	[ -n "$KT_CG" ] && kt_cgroup_remove "$KT_CG"
	[ -n "$KT_DIR" ] && rm -rf "$KT_DIR"
	exit $rc
}

kt_up() {
	if [ "$(id -u)" != 0 ]; then
		echo "skipped: not root"
		exit 77
	fi
	KT_NS="rs-kt-$$-$RANDOM"
	KT_DIR=$(mktemp -d)
	trap kt_down EXIT
	ip netns add "$KT_NS" || fail "cannot create netns"
	ip -n "$KT_NS" link set lo up
	KT_INO=$(kt_ns stat -L -c %i /proc/self/ns/net)
	KT_STORE="sqlite:$KT_DIR/ringsteer.db"
	# Connect-time steering attaches to a cgroup of the test's own, never
	# the machine's root (tests side by side must not see each other).
	KT_CG="$(findmnt -n -o TARGET -t cgroup2 | head -n 1)/rs-kt-$$-$RANDOM"
	mkdir "$KT_CG" || fail "cannot create cgroup $KT_CG"
	KT_CONNECT="--cgroup $KT_CG"
}

# Removes a cgroup directory and its children once their processes are gone.
kt_cgroup_remove() {
	local end=$(($(date +%s) + 10)) d
	while [ "$(date +%s)" -le $end ]; do
		for d in $(find "$1" -depth -type d 2>/dev/null); do rmdir "$d" 2>/dev/null; done
		[ -d "$1" ] || return 0
		sleep 0.05
	done
	echo "warning: cgroup $1 not removed" >&2
}

kt_at_exit() { KT_AT_EXIT+=("$1"); }

fail() {
	echo "FAIL: $*" >&2
	for f in "$KT_DIR"/agent.*.log "$KT_DIR"/gws.log; do
		[ -f "$f" ] && { echo "--- $f" >&2; tail -n 30 "$f" >&2; }
	done
	exit 1
}

# kt_kernel_at_least MAJOR MINOR: the running kernel (uname) is at least that.
kt_kernel_at_least() {
	local r ma mi
	r=$(uname -r)
	ma=${r%%.*}
	mi=${r#*.}
	mi=${mi%%[!0-9]*}
	[ "$ma" -gt "$1" ] || { [ "$ma" -eq "$1" ] && [ "$mi" -ge "$2" ]; }
}
kt_since() { awk -v a="$1" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }'; }

kt_deadline_note() {
	[ -n "${RS_KT_DEADLINES:-}" ] &&
		printf '%s %s %s: %s\n' "$2" "$3" "$(basename "$0" .sh)" "$1" >>"$RS_KT_DEADLINES"
	return 0
}

await() {
	local desc=$1 secs=$(($2 * KT_SCALE))
	shift 2
	local start end now
	start=$(date +%s%N)
	end=$((start + secs * 1000000000))
	while now=$(date +%s%N) && [ "$now" -lt $end ]; do
		if "$@" >/dev/null 2>&1; then
			kt_deadline_note "$desc" "$(kt_since "$start")" "$secs"
			return 0
		fi
		sleep 0.05
	done
	fail "timed out after ${secs}s: $desc"
}

agent_start() {
	KT_AGENT_STARTS=$((KT_AGENT_STARTS + 1))
	# nsenter itself, not the kt_ns function: $! must be the agent's pid
	# (nsenter execs it), not a subshell's.
	# KT_AGENT_PREFIX: a command that execs the rest (e.g. with_names.sh DIR).
	# shellcheck disable=SC2086
	nsenter --net="/run/netns/$KT_NS" $KT_AGENT_PREFIX "$RS_BUILD/ringsteer-agent" --service "$KT_SERVICE" $KT_CONNECT \
		--socket "$KT_DIR/agent.sock" --sync-interval 100 --steer-wait "$KT_STEER_WAIT_MS" ${KT_AGENT_ARGS:-} "$@" \
		2>"$KT_DIR/agent.$KT_AGENT_STARTS.log" &
	KT_AGENT_PID=$!
	# Not await: an agent that exits (a program the kernel refused, status
	# 3 or 1) fails the test at once, with its log, not after the timeout.
	local start end rc
	start=$(date +%s%N)
	end=$((start + 10 * KT_SCALE * 1000000000))
	until grep -q 'event=ready' "$KT_DIR/agent.$KT_AGENT_STARTS.log"; do
		if ! kill -0 "$KT_AGENT_PID" 2>/dev/null; then
			wait "$KT_AGENT_PID"
			rc=$?
			KT_AGENT_PID=""
			fail "the agent exited with status $rc before it was ready"
		fi
		[ "$(date +%s%N)" -lt $end ] || fail "timed out after $((10 * KT_SCALE))s: agent ready"
		sleep 0.05
	done
	kt_deadline_note "agent ready" "$(kt_since "$start")" $((10 * KT_SCALE))
}

agent_log() { cat "$KT_DIR/agent.$KT_AGENT_STARTS.log"; }

agent_kill() {
	kill -KILL "$KT_AGENT_PID" 2>/dev/null
	wait "$KT_AGENT_PID" 2>/dev/null
	KT_AGENT_PID=""
}

# A clean stop must exit 0 (under ASan this also proves no leak report).
agent_stop() {
	local rc
	kill -TERM "$KT_AGENT_PID" 2>/dev/null
	wait "$KT_AGENT_PID" 2>/dev/null
	rc=$?
	KT_AGENT_PID=""
	[ $rc = 0 ] || fail "agent exited with status $rc after SIGTERM"
	! grep -q 'Sanitizer' "$KT_DIR/agent.$KT_AGENT_STARTS.log" || fail "sanitizer report"
}

gws_start() {
	nsenter --net="/run/netns/$KT_NS" "$RS_BUILD/kernel/kt_tool" serve "$KT_DIR/agent.sock" "$@" \
		>"$KT_DIR/gws.out" 2>"$KT_DIR/gws.log" &
	KT_GWS_PID=$!
	await "gateways registered" 10 grep -q ready "$KT_DIR/gws.out"
}

dial() { kt_ns "$RS_BUILD/kernel/kt_tool" dial "$1" "${2:-$KT_SERVICE}"; }
dials() { kt_ns "$RS_BUILD/kernel/kt_tool" dials "$KT_SERVICE" "$@"; } # "SRC GATEWAY" per SRC
dial_is() { [ "$(dial "$1")" = "$2" ]; }
maps_json() { kt_ns "$RS_BUILD/ringsteerctl" maps --json; }
