# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# tests/cluster/sigkill.sh - the SIGKILL scenario the acceptance tests share
# (t_11, t_19 e): a gateway killed outright, no drain.  Its supervisors
# reconnect through the Service and are placed by the rule within the TTL
# + 4 s (the first Service backoff is 1 s +-20%, the second 2 s +-20%);
# afterwards nobody else moved and the live gateways hold at most
# ceil(supervisors / live) each, all attached, for 1.5 s (> the TTL).
#
# Source it after lib.sh (and nodes.sh, when there are nodes):
#
#   sigkill_gateway LABEL N "ALL" "LIVE"
#       ALL: the supervisors' numbers (all attached), LIVE: the gateways that
#       stay.  SIGKILLs gw-N (gw_kill: the Service drops it first, as
#       kube-proxy drops a dead endpoint) and checks, messages prefixed with
#       LABEL: gw-N served someone; each of them logged a new event=attached
#       by the deadline, all are attached and none on gw-N; each dialed the
#       Service after the kill (event=dialing via=service since its
#       attachment at the kill); only they changed epoch or gateway; the
#       loads of LIVE are within the cap, held.  Leaves, for a test's own
#       checks: SK_VICTIMS (the numbers of gw-N's supervisors), SK_NV,
#       SK_COUNTS ("sup-M attachments" before the kill, sorted), SK_CAP,
#       SK_DEADLINE (s), SK_T0 (the kill), SK_T1 (awaited), SK_LAST (the last
#       re-attachment, from the supervisors' logs; all ms).

# Whether each of SK_VICTIMS attached again and all SK_ALL are attached,
# none on gw-SK_N.
sigkill_replaced() {
	local m c
	for m in $SK_VICTIMS; do
		c=$(sup_attach_count "$m")
		[ "$c" -gt "$(echo "$SK_COUNTS" | awk -v s="sup-$m" '$1 == s { print $2 }')" ] || return 1
	done
	# shellcheck disable=SC2086
	all_attached $SK_ALL && [ "$(loads "$SK_N")" -eq 0 ]
}

# Whether the loads of SK_LIVE are each within SK_CAP, summing to every
# supervisor, all attached.
sigkill_within_cap() {
	local l c
	# shellcheck disable=SC2086
	l=$(loads $SK_LIVE)
	for c in $l; do [ "$c" -le "$SK_CAP" ] || return 1; done
	# shellcheck disable=SC2086
	[ "$(echo "$l" | awk '{ s = 0; for (i = 1; i <= NF; i++) s += $i; print s }')" -eq "$(echo $SK_ALL | wc -w)" ] &&
		all_attached $SK_ALL
}

sigkill_gateway() {
	local label=$1 m c0 before after moved want nlive
	SK_N=$2 SK_ALL=$3 SK_LIVE=$4
	nlive=$(echo "$SK_LIVE" | wc -w)
	# shellcheck disable=SC2086
	SK_CAP=$((($(echo $SK_ALL | wc -w) + nlive - 1) / nlive))
	before=$(current_map)
	# shellcheck disable=SC2086
	SK_COUNTS=$(sup_attach_counts $SK_ALL | LC_ALL=C sort)
	SK_VICTIMS=$(echo "$before" | awk -v g="gw-$SK_N" '$3 == g { sub(/^sup-/, "", $1); print $1 }')
	SK_NV=$(echo "$SK_VICTIMS" | grep -c .)
	[ "$SK_NV" -gt 0 ] || fail "${label}gw-$SK_N serves nobody"

	SK_T0=$(rs_now_ms)
	gw_kill "$SK_N"
	SK_DEADLINE=$(awk -v t="$RS_TTL_MS" 'BEGIN { printf "%.1f", t / 1000 + 4 }')
	await "${label}gw-$SK_N's $SK_NV supervisors re-placed within ${SK_DEADLINE}s of the SIGKILL" "$SK_DEADLINE" \
		sigkill_replaced
	SK_T1=$(rs_now_ms)
	SK_LAST=$(for m in $SK_VICTIMS; do grep -E 'event=attached( |$)' "$(sup_log "$m")" | tail -n 1; done |
		log_ms | sort -n | tail -n 1 | cut -d' ' -f1)

	for m in $SK_VICTIMS; do
		# Its lines since the attachment the kill ended: the loss, the redial, the Service.
		c0=$(echo "$SK_COUNTS" | awk -v s="sup-$m" '$1 == s { print $2 }')
		awk -v c="$c0" '/ event=attached( |$)/ { n++ } n >= c' "$(sup_log "$m")" | grep -qE 'event=dialing via=service' ||
			fail "${label}sup-$m (on gw-$SK_N) never dialed the Service after the kill"
	done
	after=$(current_map)
	moved=$(LC_ALL=C join <(echo "$before") <(echo "$after") | awk '$2 != $5 || $3 != $6 { print $1 }')
	want=$(for m in $SK_VICTIMS; do echo "sup-$m"; done | LC_ALL=C sort)
	# shellcheck disable=SC2086
	[ "$moved" = "$want" ] || fail "${label}moved (epoch or gateway changed): $(echo $moved); gw-$SK_N served: $(echo $want)"

	# shellcheck disable=SC2086
	sigkill_within_cap || fail "${label}after the kill: loads of gw $SK_LIVE = $(loads $SK_LIVE), cap $SK_CAP"
	hold "${label}loads of gw $SK_LIVE <= $SK_CAP, all attached" 1.5 sigkill_within_cap
}
