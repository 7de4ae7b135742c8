# shellcheck shell=bash disable=SC2016,SC2154  # sourced by overlay_check.sh: its variables; jq programs in single quotes
# SPDX-License-Identifier: Apache-2.0
# tests/deploy/multi_node.sh - sourced by overlay_check.sh for a deployment
# over several nodes (the PostgreSQL store: deploy/overlays/production):
# losing or draining a node must not stop the service.  Several gateways,
# spread one per node first, at most one evicted at a time; the agent on
# every node, in a namespace of its own so that the gateways' namespace
# enforces Pod Security restricted.  Uses overlay_check.sh's check, q, GW,
# AG, pod_labels, gw_ns and ag_ns.
check "more than one gateway (replicas > 1)" jq -e '(.obj.spec.replicas // 1) > 1' <<<"$GW"
check "gateways spread across nodes: a topologySpreadConstraint on kubernetes.io/hostname, maxSkew 1, DoNotSchedule, selecting the gateway pods" \
	jq -e --argjson l "$pod_labels" 'any(.obj.spec.template.spec.topologySpreadConstraints[]?; .topologyKey == "kubernetes.io/hostname" and
		.maxSkew == 1 and .whenUnsatisfiable == "DoNotSchedule" and
		((.labelSelector.matchLabels // {}) | to_entries | length > 0 and all(.value == $l[.key])))' <<<"$GW"
check "gateway pods are not held to one node (no nodeSelector, no node affinity)" \
	jq -e '.obj.spec.template.spec | (.nodeSelector // {}) == {} and .affinity.nodeAffinity == null' <<<"$GW"
check "agent runs on every node (no nodeSelector, no node affinity)" \
	jq -e '.obj.spec.template.spec | (.nodeSelector // {}) == {} and .affinity.nodeAffinity == null' <<<"$AG"
check "a PodDisruptionBudget in $gw_ns with maxUnavailable 1 selects the gateway pods" \
	jq -e --arg ns "$gw_ns" --argjson l "$pod_labels" 'any(.[]; .kind == "PodDisruptionBudget" and (.metadata.namespace // "default") == $ns and
		(.spec.maxUnavailable | tostring) == "1" and .spec.minAvailable == null and
		((.spec.selector.matchLabels // {}) | to_entries | length > 0 and all(.value == $l[.key])))' "$TMP/k8s.json"
check "the agent has a namespace of its own ($ag_ns, not the gateways' $gw_ns)" test "$ag_ns" != "$gw_ns"
check "the gateways' namespace $gw_ns enforces Pod Security restricted" \
	jq -e --arg ns "$gw_ns" 'any(.[]; .kind == "Namespace" and .metadata.name == $ns and .metadata.labels["pod-security.kubernetes.io/enforce"] == "restricted")' "$TMP/k8s.json"
