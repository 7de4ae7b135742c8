# shellcheck shell=bash disable=SC2016,SC2154  # sourced by overlay_check.sh: its variables; jq programs in single quotes
# SPDX-License-Identifier: Apache-2.0
# tests/deploy/network_policies.sh - sourced by overlay_check.sh: the
# NetworkPolicies that select the gateway pods admit what the gateways
# serve, the client port (--listen), the peer port (--peer), and the
# metrics port (--metrics) from given sources only.  Required for several
# nodes (production); when an overlay has any, they must not cut a port
# off.  The agent runs with hostNetwork, where NetworkPolicy does not
# apply: no policy may pretend to cover it.  Uses overlay_check.sh's check,
# GW, AG, gw_ns, ag_ns, pod_labels, lport, pport, mport and need_netpol.
#
# $TMP/gw-netpol.json: the Ingress rules of the policies in the gateways'
# namespace whose podSelector matches the gateway pods, each rule with its
# ports resolved to numbers ([] = every port).
q --arg ns "$gw_ns" --argjson l "$pod_labels" --argjson gw "$GW" '[.[] | select(.kind == "NetworkPolicy" and (.metadata.namespace // "default") == $ns) |
	select((.spec.podSelector.matchLabels // {}) | to_entries | all(.value == $l[.key])) |
	select((.spec.policyTypes // ["Ingress"]) | index("Ingress") != null) | .spec.ingress[]? |
	{from: (.from // []), ports: [(.ports // [])[] | select((.protocol // "TCP") == "TCP") | .port as $p |
		if ($p | type) == "number" then $p else first($gw.c.ports[]? | select(.name == $p) | .containerPort) // -1 end]}]' >"$TMP/gw-netpol.json"
has_netpol=$(q --arg ns "$gw_ns" --argjson l "$pod_labels" '[.[] | select(.kind == "NetworkPolicy" and (.metadata.namespace // "default") == $ns) |
	select((.spec.podSelector.matchLabels // {}) | to_entries | all(.value == $l[.key]))] | length > 0')
if [ "$need_netpol" = 1 ]; then
	check "a NetworkPolicy in $gw_ns selects the gateway pods" test "$has_netpol" = true
fi
if [ "$need_netpol" = 1 ] || [ "$has_netpol" = true ]; then
	admits() { jq -e --argjson p "$1" 'any(.[]; (.ports | length) == 0 or (.ports | index($p) != null))' "$TMP/gw-netpol.json"; }
	check "NetworkPolicies admit the gateways' client port $lport (--listen)" admits "$lport"
	check "NetworkPolicies admit the gateways' peer port $pport (--peer)" admits "$pport"
	check "NetworkPolicies admit the gateways' metrics port $mport (--metrics)" admits "$mport"
	check "NetworkPolicies admit the metrics port $mport only from given sources (every rule admitting it has a from)" \
		jq -e --argjson p "$mport" 'all(.[] | select((.ports | length) == 0 or (.ports | index($p) != null)); (.from | length) > 0)' "$TMP/gw-netpol.json"
fi
ag_labels=$(ag -c '.obj.spec.template.metadata.labels // {}')
check "no NetworkPolicy claims the agent pods (hostNetwork: NetworkPolicy does not apply to them)" \
	jq -e --arg ns "$ag_ns" --argjson l "$ag_labels" 'all(.[] | select(.kind == "NetworkPolicy" and (.metadata.namespace // "default") == $ns);
		(.spec.podSelector.matchLabels // {}) | to_entries | all(.value == $l[.key]) | not)' "$TMP/k8s.json"
