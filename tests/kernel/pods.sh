# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# tests/kernel/pods.sh - pods for the member-socket tests, sourced after
# lib.sh and kt_up: a pod is a netns of its own (its rs_clients key) in a
# cgroup below the steered one, as in t_connect.sh, without routes (these
# tests register and read the store; they do not connect).
#   pod_up NAME            netns KT_NS-NAME, cgroup KT_CG/NAME
#   member POD SOCK ID     kt_tool member in that pod (stdin: holds it open)
#   pending_rows           the store's pending reservations, "MEMBER GATEWAY" each
#   metric NAME            a sample of the agent's /metrics (metrics on KT_METRICS)
KT_PODS=()
pod_up() {
	local ns="$KT_NS-$1"
	ip netns add "$ns" || fail "netns $ns"
	KT_PODS+=("$ns")
	ip -n "$ns" link set lo up
	mkdir -p "$KT_CG/$1"
}
in_pod() {
	local p=$1
	shift
	nsenter --net="/run/netns/$KT_NS-$p" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$KT_CG/$p" "$@"
}
member() { in_pod "$1" "$RS_BUILD/kernel/kt_tool" member "${@:2}"; }
pods_down() { local ns; for ns in "${KT_PODS[@]}"; do ip netns del "$ns" 2>/dev/null; done; }
kt_at_exit pods_down
pending_rows() { sqlite3 "$KT_DIR/ringsteer.db" "SELECT member_id || ' ' || gateway_id FROM sessions WHERE state = 0 ORDER BY member_id"; }
metric() { kt_ns curl -s --max-time "$KT_HTTP_S" "http://$KT_METRICS/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }
