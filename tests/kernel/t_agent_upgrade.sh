#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Upgrade: a pinned sk_lookup link running a program whose tag differs from
# this agent's (another version) makes a restarted agent refuse (exit 4,
# `upgrade_refused`, the pinned program untouched) unless --replace, which
# updates the link in place (BPF_LINK_UPDATE: same link, new program) and
# steering resumes with the maps as they were.  Also: ringsteerctl maps
# without agent state exits 1, and /metrics reports the start mode.
set -u
. "$(dirname "$0")/lib.sh"
kt_up

kt_ns "$RS_BUILD/ringsteerctl" maps >/dev/null 2>"$KT_DIR/maps.err"
rc=$?
[ $rc = 1 ] && grep -q 'no agent state' "$KT_DIR/maps.err" || fail "maps without state: status $rc"

agent_start --metrics 127.0.0.1:9200
gws_start gw-a=127.0.1.1:7000
await "steered" 5 dial_is 127.0.2.1 gw-a
link_id=$(maps_json | jq -r .links.link_steer.link_id)
tag=$(maps_json | jq -r .links.link_steer.tag)
agent_stop

kt_ns "$RS_BUILD/kernel/kt_tool" swap "/sys/fs/bpf/ringsteer/$KT_INO/link_steer" || fail "cannot swap the program"
[ "$(dial 127.0.2.1)" = refused ] || fail "the swapped-in program still steers"
other=$(maps_json | jq -r .links.link_steer.tag)
[ "$other" != "$tag" ] || fail "swap kept the tag"

kt_ns "$RS_BUILD/ringsteer-agent" --service "$KT_SERVICE" $KT_CONNECT --socket "$KT_DIR/agent.sock" 2>"$KT_DIR/refused.log"
rc=$?
[ $rc = 4 ] && grep -q 'event=upgrade_refused' "$KT_DIR/refused.log" || fail "no --replace: status $rc, $(cat "$KT_DIR/refused.log")"
[ "$(maps_json | jq -r .links.link_steer.tag)" = "$other" ] || fail "a refused upgrade changed the program"

agent_start --replace --metrics 127.0.0.1:9200
agent_log | grep -q 'event=loaded start=upgraded' || fail "not upgraded: $(agent_log)"
[ "$(maps_json | jq -r .links.link_steer.link_id)" = "$link_id" ] || fail "the link changed"
[ "$(maps_json | jq -r .links.link_steer.tag)" = "$tag" ] || fail "the program was not replaced"
await "steered again, socket kept in its slot" 5 dial_is 127.0.2.1 gw-a
metrics=$(kt_ns curl -sf 127.0.0.1:9200/metrics) || fail "no /metrics"
grep -q "^ringsteer_agent_info{tag=\"$tag\",start=\"upgraded\"} 1" <<<"$metrics" || fail "info: $metrics"
grep -q '^ringsteer_agent_lookups_total{result="table"} [1-9]' <<<"$metrics" || fail "lookups: $metrics"
grep -q '^ringsteer_agent_connections_accepted_total{gateway="gw-a"} [1-9]' <<<"$metrics" || fail "connections: $metrics"
agent_stop
echo "ok"
