# shellcheck shell=bash disable=SC2016,SC2154  # sourced by overlay_check.sh: its variables; jq programs in single quotes
# SPDX-License-Identifier: Apache-2.0
# tests/deploy/store_sqlite.sh - sourced by overlay_check.sh when the
# gateways' store is SQLite (deploy/overlays/single-node): one database
# file on one node's disk, which every gateway and the agent open, so all
# of them are held to that node, and the gateway's uid owns the directory.
# Uses overlay_check.sh's check, GW, AG, gw_store, img_user and volume
# helpers.
db=${gw_store#sqlite:}
check "gateway store $db is on a hostPath volume" on_volume "$GW" "$db" hostPath
check "gateway pods are held to the store's node (nodeSelector or affinity; SQLite on a hostPath)" \
	jq -e '.obj.spec.template.spec | (.nodeSelector // {}) != {} or .affinity != null' <<<"$GW"
check "agent's store is on the same hostPath" test "$(host_path_of "$AG" "${A[--store]#sqlite:}")" = "$(host_path_of "$GW" "$db")"
check "agent runs on the store's node (the gateways' nodeSelector and affinity)" \
	test "$(ag -c '.obj.spec.template.spec | [.nodeSelector, .affinity]')" = "$(gw -c '.obj.spec.template.spec | [.nodeSelector, .affinity]')"
check "an init container hands the store directory to the gateway's uid" \
	jq -e --arg u "${img_user:-65532}" '[.obj.spec.template.spec.initContainers[]? | select(((.command // []) | join(" ")) | test("chown " + $u + ":" + $u + " /var/lib/ringsteer"))
		| select(.securityContext.runAsUser == 0) | .volumeMounts[]? | select(.mountPath == "/var/lib/ringsteer")] | length == 1' <<<"$GW"
