#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# t_connect_nocookie.sh - t_connect.sh with the agent acting as on Linux
# 5.10, which has neither SO_NETNS_COOKIE (5.14) nor bpf_get_netns_cookie
# in sock_ops (5.15): pods are keyed by their cgroup and every check of
# t_connect still holds.  The qemu guests run 5.10 itself, so they skip
# this one (vm-tests/guest.sh).
KT_AGENT_ARGS="--probe-missing so_netns_cookie --probe-missing sockops_netns_cookie" \
	exec bash "$(dirname "$0")/t_connect.sh"
