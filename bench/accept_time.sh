#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# accept_time.sh [BUILD_DIR [HELLOS]] - connect-to-ACCEPT time through the
# Service address with the node agent: HELLOs the kernel steered to the
# gateway the rule picks (ACCEPT at once) against HELLOs that took the
# redirect round trip, in the same run (bench/accept_time.c).  Two gateways
# registered with the agent; each HELLO a new member (the room-weighted
# table sends about half of them to the rule's gateway).  Root only.
set -u
export RS_BUILD=${1:-build}
hellos=${2:-400}
. "$(dirname "$0")/../tests/cluster/lib.sh"

export RS_AGENT=1
cluster_up --gateways 0
agent_start
RS_GW_ARGS="--agent $RS_SOCK/agent.sock"
gw_start 1
gw_start 2
nsenter --net="/run/netns/$RS_NS" "$RS_BUILD/bench/accept_time" "$RS_SERVICE" "$RS_SECRET" 127.0.2.200 "$hellos" ||
	fail "accept_time failed"
