#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# t_agent_coexist.sh - connect-time steering on a node whose socket-LB
# (Cilium's kube-proxy replacement, Calico eBPF, GKE Dataplane V2) attached
# its connect4 to the node's cgroup root before the agent: a stand-in
# (standin_lb.bpf.c: the Service to a random gateway pod IP:targetPort,
# counted per backend) is attached FIRST to the cgroup the agent is given
# (the test's own "node root", KT_CG), with the layout of a node below it:
# KT_CG/kubepods/<pod> (pods: own netns, veth, /32), KT_CG/system.slice/
# (a hostNetwork supervisor), KT_CG/blocked (a child another program holds
# without BPF_F_ALLOW_MULTI: the agent cannot attach there).
#   1. control, the agent with --no-below (its programs on KT_CG alone, as
#      before the fix): the stand-in rewrites every registered connect
#      first; ringsteer steers none (figures printed);
#   2. the agent as deployed (copies on KT_CG's direct children): 6
#      registered pod supervisors x 3 rounds and a hostNetwork one reach
#      the gateway the agent's registration named (getpeername: the
#      Service), the stand-in's counters do not move, the agent counts each
#      connect once; unregistered connects still get the stand-in's rewrite
#      (per backend, as its own counters say) and are counted once as miss;
#      a registered caller directly in KT_CG is the documented limit (the
#      stand-in, first there, decides); the blocked child is counted as a
#      failure; a child made after the start is followed at a sync;
#   3. SIGKILL and restart: the pinned copies are adopted, never doubled;
#   4. --no-below removes them; removing the pins detaches everything.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pod_net.sh"
kt_up
TTL=$((KT_SCALE > 2 ? 1500 * KT_SCALE : 3000))
SVC=198.19.0.100:7000
SOCK="$KT_DIR/member.sock"
KT_METRICS=127.0.0.1:9205
LB_PIN="/sys/fs/bpf/rs-kt-lb-$$-$RANDOM"
GWROWS="" LB_PIDS=()
ROUNDS=3
SUPS="s1 s2 s3 s4 s5 s6"

pod_up() { # NAME ADDR CGROUP: a routed pod whose processes run in CGROUP
	pod_net_up "$@"
	eval "CG_$1=\$3"
}
# in_cg NETNS CGROUP CMD...
in_cg() { nsenter --net="/run/netns/$1" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "${@:2}"; }
# member POD ARGS...: kt_tool member in POD's netns and cgroup ("host": the
# node's netns, KT_CG/system.slice/sup-h.service)
member() {
	if [ "$1" = host ]; then
		in_cg "$KT_NS" "$KT_CG/system.slice/sup-h.service" "$RS_BUILD/kernel/kt_tool" member "${@:2}"
	else
		local cg="CG_$1"
		in_cg "$KT_NS-$1" "${!cg}" "$RS_BUILD/kernel/kt_tool" member "${@:2}"
	fi
}
reached() { member "$1" - unused "$SVC" | sed -n 's/^reached=\([^ ]*\) .*/\1/p'; }
target_of() { grep "event=member_registered member=$1 " "$KT_DIR/agent.$KT_AGENT_STARTS.log" | tail -n 1 | sed -n 's/.* gateway=\([^ ]*\).*/\1/p'; }
metric() { kt_ns curl -s --max-time "$KT_HTTP_S" "http://$KT_METRICS/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }
metric_is() { [ "$(metric "$1")" = "$2" ]; }
lb_total() { "$RS_BUILD/kernel/standin_lb" count "$LB_PIN" | awk '$1 == "total" { print $2 }'; }
lb_backend() { "$RS_BUILD/kernel/standin_lb" count "$LB_PIN" | awk -v i="$1" '$1 == "backend" && $2 == i { print $3 }'; }
progs() { "$RS_BUILD/kernel/standin_lb" progs "$1" "$2" | tr '\n' ' '; }
no_below_progs() { ! "$RS_BUILD/kernel/standin_lb" progs "$1" connect4 | grep -q rs_below; }
# Pods are keyed by their netns where the agent can read its cookie
# (SO_NETNS_COOKIE, Linux 5.14), else by their cgroup (docs/KERNEL.md).
pod_key=netns
kt_kernel_at_least 5 14 || pod_key=cgroup
steered() { metric "ringsteer_agent_connects_total{result=\"steered_$pod_key\"}"; }
# register_round: every supervisor of SUPS once, registered, to the
# Service: "POD REACHED TARGET PEER" per line
register_round() {
	local p out
	for p in $SUPS; do
		out=$(member "$p" "$SOCK" "sup-$p" "$SVC")
		echo "$out" | grep -q '^registered ' || fail "sup-$p not registered: $out"
		echo "$p $(echo "$out" | sed -n 's/^reached=\([^ ]*\) peer=\(.*\)$/\1 \2/p' | awk '{ print $1 }') $(target_of "sup-$p") $(echo "$out" | sed -n 's/^reached=[^ ]* peer=\(.*\)$/\1/p')"
	done
}

cleanup() {
	[ -n "$GWROWS" ] && kill $GWROWS 2>/dev/null
	local p
	for p in "${LB_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${LB_PIDS[@]}"; do wait "$p" 2>/dev/null; done
	pod_net_down
	rm -rf "$LB_PIN"
}
# Before kt_down, whose wait would wait for them too.
trap 'rc=$?; cleanup; (exit $rc); kt_down' EXIT

# The node: gateway pods' addresses on its lo (listeners: gw-N on the peer
# endpoint ringsteer steers to, lb-N on the targetPort the stand-in picks).
kt_ns sysctl -qw net.ipv4.ip_forward=1
kt_ns ip addr add 198.18.0.1/32 dev lo
for i in 1 2 3; do kt_ns ip addr add "198.18.11.$i/32" dev lo; done
kt_ns "$RS_BUILD/kernel/kt_tool" serve - gw-1=198.18.11.1:7001 gw-2=198.18.11.2:7001 gw-3=198.18.11.3:7001 \
	lb-1=198.18.11.1:7000 lb-2=198.18.11.2:7000 lb-3=198.18.11.3:7000 >"$KT_DIR/gws.out" 2>"$KT_DIR/gws.log" &
KT_GWS_PID=$! # killed by kt_down
await "listeners up" 5 grep -q ready "$KT_DIR/gws.out"
"$RS_BUILD/kernel/kt_tool" gateway "$KT_STORE" 300 gw-1=198.18.11.1:7001 gw-2=198.18.11.2:7001 \
	gw-3=198.18.11.3:7001 &
GWROWS=$!
await "gateway rows" 5 sh -c "'$RS_BUILD/ringsteerctl' gateways --store '$KT_STORE' --json | grep -q gw-3"

n=1
for p in $SUPS u1; do
	pod_up "$p" "198.18.101.$n" "$KT_CG/kubepods/$p"
	n=$((n + 1))
done
pod_up r0 198.18.101.50 "$KT_CG" # directly in the "root"
mkdir -p "$KT_CG/system.slice/sup-h.service" "$KT_CG/blocked"

# The socket-LB, first on the root; another program on "blocked" without
# BPF_F_ALLOW_MULTI.
mkdir "$LB_PIN" || fail "cannot make $LB_PIN"
"$RS_BUILD/kernel/standin_lb" run "$KT_CG" "$LB_PIN" "$SVC" 198.18.11.1:7000 198.18.11.2:7000 198.18.11.3:7000 \
	>"$KT_DIR/lb.out" 2>"$KT_DIR/lb.log" &
LB_PIDS+=($!)
await "stand-in socket-LB attached" 5 grep -q ready "$KT_DIR/lb.out"
"$RS_BUILD/kernel/standin_lb" block "$KT_CG/blocked" >"$KT_DIR/block.out" 2>"$KT_DIR/block.log" &
LB_PIDS+=($!)
await "blocking program attached" 5 grep -q ready "$KT_DIR/block.out"
case $(reached u1) in lb-[123]) ;; *) fail "the stand-in does not rewrite the Service: $(reached u1)" ;; esac

# 1. Control: ringsteer on KT_CG alone, after the stand-in.
agent_start --service "$SVC" --store "$KT_STORE" --ttl $TTL --member-socket "$SOCK" --metrics "$KT_METRICS" --no-below
agent_log | grep -q 'event=loaded .*connect_below=off' || fail "--no-below: $(agent_log | grep event=loaded)"
lb0=$(lb_total) st0=$(steered)
for r in $(seq $ROUNDS); do register_round; done >"$KT_DIR/control.txt"
lb1=$(lb_total) st1=$(steered)
ctl_lb=$(grep -c ' lb-[123] ' "$KT_DIR/control.txt") ctl_gw=$(awk '$2 == $3' "$KT_DIR/control.txt" | wc -l)
kt_log "control (--no-below): $(wc -l <"$KT_DIR/control.txt") registered connects: $ctl_lb rewritten by the" \
	"stand-in, $ctl_gw reached their target; stand-in +$((lb1 - lb0)), ringsteer steered +$((st1 - st0))"
[ "$ctl_gw" = 0 ] && [ "$((st1 - st0))" = 0 ] && [ "$ctl_lb" = $((6 * ROUNDS)) ] ||
	fail "the control did not reproduce the socket-LB winning: $(cat "$KT_DIR/control.txt")"
agent_stop

# 2. The fix: copies on KT_CG's direct children.
agent_start --service "$SVC" --store "$KT_STORE" --ttl $TTL --member-socket "$SOCK" --metrics "$KT_METRICS"
agent_log | grep -q 'event=loaded start=adopted' || fail "not adopted: $(agent_log | grep event=loaded)"
for c in kubepods system.slice; do
	[ "$(progs "$KT_CG/$c" connect4)" = "rs_below_conn4 " ] || fail "$c connect4: $(progs "$KT_CG/$c" connect4)"
	[ "$(progs "$KT_CG/$c" connect6)" = "rs_below_conn6 " ] || fail "$c connect6: $(progs "$KT_CG/$c" connect6)"
done
[ "$(progs "$KT_CG" connect4)" = "standin_lb4 rs_connect4 " ] || fail "root connect4: $(progs "$KT_CG" connect4)"
metric_is ringsteer_agent_connect_below_cgroups 2 || fail "below cgroups: $(metric ringsteer_agent_connect_below_cgroups)"
metric_is ringsteer_agent_connect_below_failures_total 1 ||
	fail "the blocked child not counted: $(metric ringsteer_agent_connect_below_failures_total)"
agent_log | grep -q 'event=connect_below_failed .*blocked' || fail "the blocked child not logged"

lb0=$(lb_total) st0=$(steered) lk0=$(metric ringsteer_agent_connect_lookups_total)
for r in $(seq $ROUNDS); do register_round; done >"$KT_DIR/fixed.txt"
lb1=$(lb_total) st1=$(steered) lk1=$(metric ringsteer_agent_connect_lookups_total)
fix_gw=$(awk '$2 == $3 && $4 == "'"$SVC"'"' "$KT_DIR/fixed.txt" | wc -l)
kt_log "fixed: $(wc -l <"$KT_DIR/fixed.txt") registered connects: $fix_gw reached their target with the Service" \
	"as peer; stand-in +$((lb1 - lb0)), ringsteer steered +$((st1 - st0)), lookups +$((lk1 - lk0));" \
	"first round's targets: $(head -n 6 "$KT_DIR/fixed.txt" | awk '{ print $3 }' | sort | uniq -c | tr -s ' \n' ' ')"
[ "$fix_gw" = $((6 * ROUNDS)) ] || fail "not every registered connect reached its target: $(cat "$KT_DIR/fixed.txt")"
[ "$((lb1 - lb0))" = 0 ] || fail "the stand-in rewrote $((lb1 - lb0)) registered connects"
[ "$((st1 - st0))" = $((6 * ROUNDS)) ] && [ "$((lk1 - lk0))" = $((6 * ROUNDS)) ] ||
	fail "steered +$((st1 - st0)), lookups +$((lk1 - lk0)): each connect once, $((6 * ROUNDS)) wanted"

# hostNetwork, in system.slice: keyed by its cgroup, steered by the copy there.
out=$(member host "$SOCK" sup-h "$SVC")
t=$(target_of sup-h)
echo "$out" | grep -q "^reached=$t peer=$SVC\$" || fail "hostNetwork supervisor not steered to '$t': $out"

# Unregistered: the stand-in's rewrite, as its own counters say; counted
# once by ringsteer (miss).
lb0=$(lb_total) mi0=$(metric 'ringsteer_agent_connects_total{result="miss"}') lk0=$(metric ringsteer_agent_connect_lookups_total)
for i in 1 2 3; do b0[i]=$(lb_backend $((i - 1))); done
for i in $(seq 12); do reached u1; done >"$KT_DIR/unreg.txt"
[ "$(grep -c '^lb-[123]$' "$KT_DIR/unreg.txt")" = 12 ] || fail "unregistered connects: $(sort "$KT_DIR/unreg.txt" | uniq -c)"
[ "$(($(lb_total) - lb0))" = 12 ] || fail "the stand-in counted $(($(lb_total) - lb0)) of 12 unregistered connects"
for i in 1 2 3; do
	[ "$(($(lb_backend $((i - 1))) - b0[i]))" = "$(grep -cx "lb-$i" "$KT_DIR/unreg.txt")" ] ||
		fail "lb-$i: the stand-in's count and the connects reached differ"
done
[ "$(($(metric 'ringsteer_agent_connects_total{result="miss"}') - mi0))" = 12 ] &&
	[ "$(($(metric ringsteer_agent_connect_lookups_total) - lk0))" = 12 ] || fail "misses not counted once each"
kt_log "unregistered: 12 connects: $(sort "$KT_DIR/unreg.txt" | uniq -c | tr -s ' \n' ' ')"

# The limit: a registered caller directly in the root is reached after the
# socket-LB (first there), which rewrites it.
out=$(member r0 "$SOCK" sup-r0 "$SVC")
echo "$out" | grep -q '^reached=lb-[123] ' || fail "a caller in the root itself: $out (the limit changed? update docs/KERNEL.md)"

# A child made after the start is followed at a sync.
pod_up l1 198.18.101.60 "$KT_CG/late/l1"
await "the new child attached" 5 metric_is ringsteer_agent_connect_below_cgroups 3
out=$(member l1 "$SOCK" sup-l1 "$SVC")
t=$(target_of sup-l1)
echo "$out" | grep -q "^reached=$t peer=$SVC\$" || fail "a supervisor below a new child not steered to '$t': $out"

# 3. SIGKILL and restart: adopted, one copy per child.
agent_kill
agent_start --service "$SVC" --store "$KT_STORE" --ttl $TTL --member-socket "$SOCK" --metrics "$KT_METRICS"
for c in kubepods system.slice late; do
	[ "$(progs "$KT_CG/$c" connect4)" = "rs_below_conn4 " ] || fail "after a restart, $c: $(progs "$KT_CG/$c" connect4)"
done
! agent_log | grep -q 'event=connect_below_attached' || fail "the restarted agent attached again: $(agent_log | grep connect_below)"
metric_is ringsteer_agent_connect_below_cgroups 3 || fail "below cgroups after a restart: $(metric ringsteer_agent_connect_below_cgroups)"
r=$(register_round)
[ "$(awk '$2 == $3' <<<"$r" | wc -l)" = 6 ] || fail "not steered after the restart: $r"
agent_stop

# 4. --no-below removes the copies (and unlists them: the root's copy then
# serves everyone); removing the pins detaches the rest.
agent_start --service "$SVC" --store "$KT_STORE" --ttl $TTL --member-socket "$SOCK" --metrics "$KT_METRICS" --no-below
for c in kubepods system.slice late; do await "$c without copies" 5 no_below_progs "$KT_CG/$c"; done
out=$(member s1 "$SOCK" sup-s1 "$SVC")
echo "$out" | grep -q '^reached=lb-[123] ' || fail "--no-below: the stand-in should win again: $out"
agent_stop
rm -r "/sys/fs/bpf/ringsteer/$KT_INO"
await "root without ringsteer" 5 sh -c "[ \"\$('$RS_BUILD/kernel/standin_lb' progs '$KT_CG' connect4)\" = standin_lb4 ]"
echo "ok"
