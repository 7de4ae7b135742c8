#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# t_connect.sh - connect-time steering on a node shaped like Kubernetes':
# the agent in the node's netns, callers in pod netns (veth, /32, default
# route via the node) in cgroups under the test's own, kube-proxy's DNAT of
# the Service in the node, gateway rows in the store and named listeners at
# their peer endpoints.  What a supervisor connect sees:
#   - registered: rewritten to its target before any packet (the DNAT counter
#     does not move), getpeername says the Service, blocking, non-blocking
#     and v4-mapped AF_INET6 alike; a hostNetwork caller (the agent's netns)
#     is keyed by its cgroup;
#   - not registered, registration closed, refused: kube-proxy decides;
#   - registrations key their caller only; malformed, duplicate-key and
#     out-of-scope ones are refused with a reason;
#   - a gateway that leaves the store is no target after the next sync;
#   - agent SIGKILLed: entries steer until they expire, then kube-proxy; a
#     restarted agent adopts the pins and links and steers again.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pod_net.sh"
kt_up
# The entries' TTL: steering must outlive a killed agent by a margin a slow
# guest keeps (the check after the kill is recorded against it).
# (measured on a qemu guest: 0.7 s from the kill to that check)
TTL=$((KT_SCALE > 2 ? 1500 * KT_SCALE : 3000))
SVC=198.19.0.100:7000
SOCK="$KT_DIR/member.sock"
GWROWS=""

pod_up() { pod_net_up "$1" "$2" "$KT_CG/$1"; } # NAME ADDR: a pod in cgroup KT_CG/NAME
# in_pod NAME CMD...: CMD in the pod's netns and cgroup ("node" NAME: the
# node's netns, cgroup KT_CG/host: a hostNetwork process)
in_pod() {
	local p=$1 ns
	shift
	if [ "$p" = node ]; then ns=$KT_NS; mkdir -p "$KT_CG/host"; p=host; else ns="$KT_NS-$p"; fi
	nsenter --net="/run/netns/$ns" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$KT_CG/$p" "$@"
}
member() { in_pod "$1" "$RS_BUILD/kernel/kt_tool" member "${@:2}"; }
# reached POD: where a connect to the Service from POD goes, with no
# registration of its own (whatever POD's netns holds decides)
reached() { member "$1" - unused "$SVC" | sed -n 's/^reached=\([^ ]*\) .*/\1/p'; }
reached_is() { [ "$(reached "$1")" = "$2" ]; }
dnat_count() { kt_ns nft list chain ip kp pre | sed -n 's/.*counter packets \([0-9]*\).*/\1/p'; }
target_of() { grep "event=member_registered member=$1 " "$KT_DIR/agent.$KT_AGENT_STARTS.log" | tail -n 1 | sed -n 's/.* gateway=\([^ ]*\).*/\1/p'; }

trap 'rc=$?; [ -n "$GWROWS" ] && kill $GWROWS 2>/dev/null; pod_net_down; (exit $rc); kt_down' EXIT

# The node: its address for the pods' default route, the gateways' peer
# endpoints (named listeners: what a steered connect reaches) and
# kube-proxy's backend (what an untouched connect reaches).
kt_ns sysctl -qw net.ipv4.ip_forward=1
kt_ns ip addr add 198.18.0.1/32 dev lo
kt_ns ip addr add 198.18.11.1/32 dev lo
kt_ns ip addr add 198.18.11.2/32 dev lo
kt_ns nft -f - <<EOF || fail "nft"
table ip kp {
	chain pre { type nat hook prerouting priority -100; ip daddr 198.19.0.100 tcp dport 7000 counter dnat to 198.18.11.1:7000; }
	chain out { type nat hook output priority -100; ip daddr 198.19.0.100 tcp dport 7000 counter dnat to 198.18.11.1:7000; }
}
EOF
kt_ns "$RS_BUILD/kernel/kt_tool" serve - gw-1=198.18.11.1:7001 gw-2=198.18.11.2:7001 dnat=198.18.11.1:7000 \
	>"$KT_DIR/gws.out" 2>"$KT_DIR/gws.log" &
KT_GWS_PID=$!
await "listeners up" 5 grep -q ready "$KT_DIR/gws.out"
pod_up c1 198.18.101.1
pod_up c2 198.18.101.2

"$RS_BUILD/kernel/kt_tool" gateway "$KT_STORE" 300 gw-1=198.18.11.1:7001 gw-2=198.18.11.2:7001 &
GWROWS=$!
await "gateway rows" 5 sh -c "'$RS_BUILD/ringsteerctl' gateways --store '$KT_STORE' --json | grep -q gw-2"
agent_start --service "$SVC" --store "$KT_STORE" --ttl $TTL --member-socket "$SOCK"

# Not registered: kube-proxy's DNAT decides.
before=$(dnat_count)
[ "$(reached c1)" = dnat ] || fail "an unregistered caller was steered"
[ "$(dnat_count)" -gt "$before" ] || fail "the DNAT counter did not move for an unregistered caller"

# Registered: steered to the target the agent chose, the DNAT untouched,
# getpeername the Service; a blocking, a non-blocking and a v4-mapped connect.
before=$(dnat_count)
steered_at=$(date +%s%N)
out=$(member c1 "$SOCK" sup-a "$SVC")
echo "$out" | grep -q '^registered ' || fail "sup-a not registered: $out"
t=$(target_of sup-a)
case $t in gw-1 | gw-2) ;; *) fail "sup-a has no target (agent log: $t)" ;; esac
# Its reservation is in the store, at the target, for the gateway to count,
# read before it can end: the store's reservation lasts 5 s from the steer,
# and the agent sweeps it after that (the later registrations below find it
# counted and do not renew it).
rows=$("$RS_BUILD/ringsteerctl" sessions --store "$KT_STORE" --json)
kt_deadline_note "sup-a's reservation read before its end" "$(kt_since "$steered_at")" 5
echo "$rows" | grep -q "\"member_id\":\"sup-a\".*\"gateway_id\":\"$t\"" ||
	echo "$rows" | grep -q "\"gateway_id\": *\"$t\"" ||
	fail "no reservation for sup-a at $t in the store ($(kt_since "$steered_at") s after the steer): $rows"
echo "$out" | grep -q "^reached=$t peer=$SVC\$" || fail "sup-a not steered to $t with the Service as its peer: $out"
out=$(member c1 "$SOCK" sup-a "$SVC" nonblock)
echo "$out" | grep -q "^reached=$t peer=$SVC\$" || fail "non-blocking connect not steered: $out"
out=$(member c1 "$SOCK" sup-a "$SVC" mapped)
echo "$out" | grep -q "^reached=$t peer=\[::ffff:198.19.0.100\]:7000\$" || fail "v4-mapped connect not steered: $out"
[ "$(dnat_count)" = "$before" ] || fail "DNAT counted steered connects ($before -> $(dnat_count))"
# A pod is keyed by its netns cookie where the agent can read one
# (SO_NETNS_COOKIE, Linux 5.14), else by its cgroup (as on 5.10).
pod_key=netns
kt_kernel_at_least 5 14 || pod_key=cgroup
case ${KT_AGENT_ARGS:-} in *so_netns_cookie*) pod_key=cgroup ;; esac
grep -q "member=sup-a key=$pod_key:" "$KT_DIR/agent.$KT_AGENT_STARTS.log" ||
	fail "sup-a (a pod) not keyed by $pod_key: $(grep 'member=sup-a' "$KT_DIR/agent.$KT_AGENT_STARTS.log")"

# The registration closed (the process above exited): kube-proxy again.
await "sup-a forgotten" 5 grep -q 'event=member_gone member=sup-a' "$KT_DIR/agent.$KT_AGENT_STARTS.log"
[ "$(reached c1)" = dnat ] || fail "a closed registration still steers"

# A registration keys its caller only: c2 holding sup-b leaves c1 to kube-proxy.
# (a FIFO, not process substitution: the qemu guests have no /dev/fd)
mkfifo "$KT_DIR/hold"
member c2 "$SOCK" sup-b <"$KT_DIR/hold" >"$KT_DIR/sup-b.out" &
exec 7>"$KT_DIR/hold"
await "sup-b registered" 5 grep -q '^registered' "$KT_DIR/sup-b.out"
tb=$(target_of sup-b)
[ "$(reached c1)" = dnat ] || fail "c2's registration steered c1"
[ "$(reached c2)" = "$tb" ] || fail "c2 (sup-b) not steered to $tb"
# Another member for the same netns is refused; so is a malformed request, and
# a caller outside the steered cgroup (this shell).
out=$(member c2 "$SOCK" sup-c)
echo "$out" | grep -q '^refused key_in_use ' || fail "a second member for c2's netns: $out"
# (a member registration, type 3, its reserved flags byte set: 9)
MALFORMED=0000000701030900000161
reply=$("$RS_BUILD/kernel/kt_tool" raw "$SOCK" 1 $MALFORMED)
[ "$reply" = 1 ] || fail "a malformed registration was not refused as malformed (reason $reply)"
# Refusals hold nothing: after 80 more, each answered, registrations still work.
replies=$("$RS_BUILD/kernel/kt_tool" raw "$SOCK" 80 $MALFORMED) || fail "malformed registrations: $replies"
[ "$(grep -cx 1 <<<"$replies")" = 80 ] || fail "not all 80 malformed registrations refused as malformed: $(sort <<<"$replies" | uniq -c)"
out=$(member c1 "$SOCK" sup-z)
echo "$out" | grep -q '^registered ' || fail "a registration after 80 refusals: $out"
out=$(nsenter --net="/run/netns/$KT_NS" "$RS_BUILD/kernel/kt_tool" member "$SOCK" sup-d)
echo "$out" | grep -q '^refused outside ' || fail "a caller outside the steered cgroup: $out"
grep -q 'event=member_refused reason=malformed' "$KT_DIR/agent.$KT_AGENT_STARTS.log" ||
	fail "the malformed registration was not logged with its reason"

# hostNetwork: a caller in the agent's netns is keyed by its cgroup.
out=$(member node "$SOCK" sup-h "$SVC")
th=$(target_of sup-h)
echo "$out" | grep -q "^reached=$th peer=$SVC\$" || fail "a hostNetwork caller not steered by cgroup: $out"
grep -q 'member=sup-h key=cgroup:' "$KT_DIR/agent.$KT_AGENT_STARTS.log" || fail "sup-h not keyed by its cgroup"

# A gateway that leaves the store is no target after the next sync: sup-b
# goes to the other one.
other=gw-1
[ "$tb" = gw-1 ] && other=gw-2
kill $GWROWS
wait $GWROWS 2>/dev/null
"$RS_BUILD/kernel/kt_tool" gateway "$KT_STORE" 300 "$other=198.18.11.${other#gw-}:7001" &
GWROWS=$!
"$RS_BUILD/ringsteerctl" drain "$tb" --store "$KT_STORE" >/dev/null || fail "cannot drain $tb"
await "sup-b moved off $tb" 5 reached_is c2 "$other"

# Agent SIGKILLed: entries keep steering until they expire, then kube-proxy.
killed=$(date +%s%N)
agent_kill
[ "$(reached c2)" = "$other" ] || fail "steering stopped at once when the agent died"
kt_deadline_note "steered after the agent died, before its entry's TTL" "$(kt_since "$killed")" $((TTL / 1000))
# (the wait is the TTL itself: its deadline is twenty of them, scaled back
# as await scales every deadline)
await "c2's entry expired (kube-proxy decides)" $((20 * TTL / 1000 / KT_SCALE)) reached_is c2 dnat
# A restarted agent adopts pins and links; a new registration steers.
agent_start --service "$SVC" --store "$KT_STORE" --ttl $TTL --member-socket "$SOCK"
grep -q 'start=adopted' "$KT_DIR/agent.$KT_AGENT_STARTS.log" || fail "the restarted agent did not adopt the pins"
exec 7>&-
out=$(member c2 "$SOCK" sup-b "$SVC")
echo "$out" | grep -q "^reached=$other peer=$SVC\$" || fail "not steered after the agent restarted: $out"

# The same member registering again while its old registration is open (a
# restart before the old link closed) takes the place over; the old link's
# end afterwards registers nothing again and leaves nothing behind.
mkfifo "$KT_DIR/hold2"
member c2 "$SOCK" sup-b <"$KT_DIR/hold2" >"$KT_DIR/sup-b2.out" &
exec 8>"$KT_DIR/hold2"
await "sup-b's first registration" 5 grep -q '^registered' "$KT_DIR/sup-b2.out"
out=$(member c2 "$SOCK" sup-b "$SVC")
echo "$out" | grep -q "^reached=$other peer=$SVC\$" || fail "the same member again was not steered: $out"
exec 8>&-
log="$KT_DIR/agent.$KT_AGENT_STARTS.log"
await "the old registration's end" 5 sh -c "[ \$(grep -c 'event=member_gone member=sup-b ' '$log') -ge 3 ]"
[ "$(grep -c 'event=member_registered member=sup-b ' "$log")" = 3 ] || fail "a closed link registered again: $(grep sup-b "$log")"
[ "$(reached c2)" = dnat ] || fail "a registration outlived both links"
agent_stop
! grep -l 'Sanitizer\|runtime error' "$KT_DIR"/agent.*.log || fail "a sanitizer report in an agent's log"
echo "ok"
