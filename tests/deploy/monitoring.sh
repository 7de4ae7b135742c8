# shellcheck shell=bash disable=SC2016,SC2154  # sourced by overlay_check.sh: its variables; jq programs in single quotes
# SPDX-License-Identifier: Apache-2.0
# tests/deploy/monitoring.sh - sourced by overlay_check.sh: the
# prometheus-operator's objects.  Each PodMonitor selects the pods of a
# workload of the overlay in its own namespace (or its namespaceSelector
# names theirs) and scrapes a port those pods name, the --metrics port; the
# gateways and the agents are each scraped by one; the PrometheusRule holds
# exactly deploy/prometheus/alerts.yaml's groups (generated from it, never
# edited apart).  Required for several nodes (production: need_monitoring
# 1); else checked when present.  Uses overlay_check.sh's check, q, GW, AG
# and resolve_port.
has_pm=$(q '[.[] | select(.kind == "PodMonitor")] | length > 0')
has_pr=$(q '[.[] | select(.kind == "PrometheusRule")] | length > 0')
# scraped_by JSON: the PodMonitors scraping the workload's pods at the
# --metrics port, by port name.
scraped_by() {
	local json=$1 ns labels port
	ns=$(jq -r '.obj.metadata.namespace // "default"' <<<"$json")
	labels=$(jq -c '.obj.spec.template.metadata.labels // {}' <<<"$json")
	q -r --arg ns "$ns" --argjson l "$labels" '.[] | select(.kind == "PodMonitor") |
		select((.spec.namespaceSelector.any == true) or ((.spec.namespaceSelector.matchNames // [(.metadata.namespace // "default")]) | index($ns) != null)) |
		select((.spec.selector.matchLabels // {}) | to_entries | length > 0 and all(.value == $l[.key])) |
		.metadata.name as $n | .spec.podMetricsEndpoints[]? | "\($n) \(.port // "")"' |
	while read -r pm port; do
		[ -n "$port" ] && [ "$(resolve_port "$json" "$port")" = "$2" ] && echo "$pm"
	done
}
if [ "$need_monitoring" = 1 ] || [ "$has_pm" = true ]; then
	check "a PodMonitor scrapes the gateway pods at their metrics port $mport, by port name" \
		test -n "$(scraped_by "$GW" "$mport")"
	check "a PodMonitor scrapes the agent pods at their metrics port $(port_of "${A[--metrics]:-x:0}"), by port name" \
		test -n "$(scraped_by "$AG" "$(port_of "${A[--metrics]:-x:0}")")"
	check "every PodMonitor endpoint adds the node label (the agent's alerts are per node)" \
		q -e '[.[] | select(.kind == "PodMonitor") | .spec.podMetricsEndpoints[]] | length > 0 and all(.[];
			any(.relabelings[]?; .sourceLabels == ["__meta_kubernetes_pod_node_name"] and .targetLabel == "node"))'
fi
if [ "$need_monitoring" = 1 ] || [ "$has_pr" = true ]; then
	check "a PrometheusRule holds deploy/prometheus/alerts.yaml's groups, exactly (deploy/monitoring/prometheus-rule.sh)" \
		jq -e --slurpfile a "$TMP/alerts.json" '[.[] | select(.kind == "PrometheusRule") | .spec.groups] == [$a[0][0].groups]' "$TMP/k8s.json"
fi
