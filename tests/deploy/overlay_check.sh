#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/deploy/overlay_check.sh - one rendered overlay of deploy/ (the
# objects `kubectl kustomize deploy/overlays/NAME` prints) carries what the
# gateway's drain, the agent, the store and Pod Security need.  Run by
# tests/deploy/manifests_test.sh for each overlay, and on broken copies of
# them (which must fail).
#
# usage: tests/deploy/overlay_check.sh BUILD_DIR NAME RENDERED.yaml
# (RS_DEPLOY_DIR and RS_OPERATIONS_MD replace deploy/ and docs/OPERATIONS.md.)
#
# The objects are parsed (/usr/bin/python3 with python3-yaml, to JSON) and
# checked with jq against the binaries of BUILD_DIR: the containers' args
# name only flags that `ringsteer-gateway --help`, `ringsteer-agent --help`
# and `ringsteer-supervisor --help` list (a typo fails), with a value where
# the flag takes one, the required ones present; every $(VAR) is in the
# container's env or a Service of its own namespace; the rolling update is
# maxSurge 1 / maxUnavailable 0; terminationGracePeriodSeconds * 1000 >
# preStop sleep + --drain-budget; readiness on /readyz and liveness on
# /healthz at the --metrics port; the Services' ports match --listen and
# --peer, the peer Service is headless; the agent is privileged on the
# node's network with bpffs and /run/ringsteer from the host at the paths
# its flags use; every path a flag names is on a volume.  The agent is on:
# a DaemonSet runs it, without --no-connect, with hostPID, the node's
# cgroup2 (hostPath /sys/fs/cgroup at /sys/fs/cgroup; --cgroup, if given,
# on it), bpffs at /sys/fs/bpf, --member-socket on the hostPath directory
# /run/ringsteer, and a --service that is the client Service's DNS name
# (NAME.NAMESPACE.svc, with dnsPolicy ClusterFirstWithHostNet so that the
# hostNetwork pod can resolve it), or its ClusterIP (its
# $(NAME_SERVICE_HOST), same namespace only, or a fixed clusterIP), at the
# --listen port.  Supervisors: every ringsteer-supervisor container of the
# overlay and the example pod in docs/OPERATIONS.md (between
# <!-- supervisor-example --> markers; at least one must exist) use only
# flags of `ringsteer-supervisor --help`, pass --agent = the agent's
# --member-socket, and mount the agent's socket directory (the directory,
# not the socket file) from the same hostPath.  TLS: the gateway has
# --tls-cert and --tls-key, or --insecure, not both; each file a --tls-*
# flag (or any arg under /etc/ringsteer/tls/) names is written by the
# volume mounted over it; the certificate comes from a cert-manager
# csi-driver volume (readOnly, its files' group the gateway's) whose
# dns-names include the gateway id ${POD_NAME} and the client Service's
# name, whose key usages fit a TLS server, whose Issuer is in the overlay,
# and whose renewal point lies above the RingsteerTLSCertExpiringSoon
# threshold.
#
# Every pod: automountServiceAccountToken false; seccompProfile
# RuntimeDefault unless privileged; its namespace's
# pod-security.kubernetes.io/enforce level, with a reason
# (ringsteer.io/pod-security-reason), is the strictest level all its pods
# pass (tests/deploy/pod_security.jq); files that must stay private (the
# gateway's --secret, libpq's PGPASSFILE) are readable by the process and
# by nobody else (a non-root process reads an init container's 0400 copy;
# a Secret volume's files are root's).  The agent: priority class
# system-node-critical, and a ResourceQuota admitting it in its namespace.
#
# The store decides the rest.  SQLite (single-node): the file on a hostPath
# shared with the agent, the pods held to one node, the directory handed
# to the gateway's uid.  PostgreSQL (production): the URL from a Secret
# (or ConfigMap) through $(VAR), no password in any argument or env value,
# PGPASSFILE private, PGSSLMODE verify-full with PGSSLROOTCERT on a volume;
# more than one gateway, spread across nodes (topologySpreadConstraints on
# kubernetes.io/hostname), a PodDisruptionBudget maxUnavailable 1, the agent
# on every node in a namespace of its own, NetworkPolicies admitting the
# client, peer and metrics ports (the last from given namespaces only),
# PodMonitors for the gateways and the agents (port by name), and a
# PrometheusRule holding exactly deploy/prometheus/alerts.yaml's groups.
# Prints one line per failure and `overlay NAME: N passed` (or `..., N
# failed`); exits 1 on any failure, 2 on bad usage or missing tools.
# shellcheck disable=SC2016  # jq programs and $(VAR) references are meant literally
set -u
if [ $# -ne 3 ] || [ ! -d "$1" ] || [ ! -f "$3" ]; then
	echo "usage: $0 BUILD_DIR NAME RENDERED.yaml" >&2
	exit 2
fi
BUILD=$(cd "$1" && pwd)
NAME=$2
RENDERED=$3
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DEPLOY=${RS_DEPLOY_DIR:-$ROOT/deploy}
PY=/usr/bin/python3
command -v jq >/dev/null || { echo "missing tool: jq (make deps)" >&2; exit 2; }
"$PY" -c 'import yaml' 2>/dev/null || { echo "missing: python3-yaml (make deps)" >&2; exit 2; }
for b in ringsteer-gateway ringsteer-agent ringsteer-supervisor; do
	[ -x "$BUILD/$b" ] || { echo "missing binary: $BUILD/$b" >&2; exit 2; }
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/rs-deploy.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
pass=0 failed=0
ok() { pass=$((pass + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
# check "DESC" CMD...: CMD succeeds, else a failure (CMD's output shown).
check() {
	local desc=$1 out
	shift
	if out=$("$@" 2>&1); then ok; else bad "$desc${out:+: $out}"; fi
}

# --- parse -------------------------------------------------------------------
# to_json YAML OUT: YAML's documents (none empty) as a JSON array into OUT.
to_json() {
	"$PY" -c '
import json, sys, yaml
with open(sys.argv[1]) as f:
    docs = [d for d in yaml.safe_load_all(f) if d is not None]
with open(sys.argv[2], "w") as out:
    json.dump(docs, out)' "$1" "$2" 2>&1 | tail -n 1
	return "${PIPESTATUS[0]}"
}
# $TMP/k8s.json: the overlay's objects; the Prometheus files beside them.
check "the rendered overlay parses as YAML" to_json "$RENDERED" "$TMP/k8s.json" || echo '[]' >"$TMP/k8s.json"
check "prometheus/alerts.yaml parses as YAML" to_json "$DEPLOY/prometheus/alerts.yaml" "$TMP/alerts.json" || echo '[]' >"$TMP/alerts.json"
check "prometheus/scrape.yaml parses as YAML" to_json "$DEPLOY/prometheus/scrape.yaml" "$TMP/scrape.json" || echo '[]' >"$TMP/scrape.json"
q() { jq -r "$@" "$TMP/k8s.json"; }

check "the overlay has objects, each with apiVersion, kind and metadata.name" \
	jq -e 'length > 0 and all(.[]; type == "object" and (.apiVersion // "") != "" and (.kind // "") != "" and (.metadata.name // "") != "")' "$TMP/k8s.json"

# --- flags the binaries accept ---------------------------------------------------
# $TMP/BIN.flags: "FLAG 1" (takes a value) or "FLAG 0", from --help: a flag
# line is "  --flag METAVAR  text" (one space before a metavar) or "  --flag  text".
# $TMP/BIN.required: the flags of the usage line before "[".
help_flags() {
	local bin=$1
	"$BUILD/$bin" --help >"$TMP/$bin.help" 2>&1 || { bad "$bin --help failed"; return; }
	sed -nE 's/^ +(--[a-z][a-z-]*)( [^ ]+)?  .*/\1 \2/p; s/^ +(--[a-z][a-z-]*) ([^ ]+)$/\1 \2/p' "$TMP/$bin.help" |
		awk '{ print $1, (NF > 1 ? 1 : 0) }' | sort -u >"$TMP/$bin.flags"
	sed -n '1s/^usage: [^ ]* //p' "$TMP/$bin.help" | sed 's/\[.*//' | tr ' ' '\n' | grep '^--' | sort -u >"$TMP/$bin.required"
	[ -s "$TMP/$bin.flags" ] || bad "$bin --help lists no flags"
}
help_flags ringsteer-gateway
help_flags ringsteer-agent
help_flags ringsteer-supervisor
check "gateway --help lists --drain-budget (the parse of --help works)" grep -q '^--drain-budget 1$' "$TMP/ringsteer-gateway.flags"
check "agent --help lists --replace without a value" grep -q '^--replace 0$' "$TMP/ringsteer-agent.flags"
check "supervisor --help lists --agent with a value" grep -q '^--agent 1$' "$TMP/ringsteer-supervisor.flags"

# The container (kind, index in the pod spec) running BIN: the one whose
# command or first arg ends in /BIN or is BIN.
# container_json KIND BIN -> {obj, c} or null
container_json() {
	q --arg k "$1" --arg b "$2" -c 'first(.[] | select(.kind == $k) as $o | $o.spec.template.spec.containers[]? |
		select(((.command // []) + (.args // []))[0] // "" | test("(^|/)" + $b + "$")) | {obj: $o, c: .}) // null'
}
GW=$(container_json Deployment ringsteer-gateway)
AG=$(container_json DaemonSet ringsteer-agent)
check "a Deployment runs ringsteer-gateway" test "$GW" != null
check "a DaemonSet runs ringsteer-agent" test "$AG" != null
[ "$GW" != null ] || GW='{"obj":{},"c":{}}'
[ "$AG" != null ] || AG='{"obj":{},"c":{}}'
gw() { jq -r "$@" <<<"$GW"; }
ag() { jq -r "$@" <<<"$AG"; }

# parse_args JSON BIN NAME: checks the flags of the container's argv
# (command then args, the binary itself dropped); fills the associative
# array named NAME (flag -> value; repeated flags joined with spaces).
parse_args() {
	local json=$1 bin=$2
	local -n out=$3
	local argv=() i a flag val takes
	mapfile -t argv < <(jq -r '((.c.command // []) + (.c.args // []))[]' <<<"$json")
	[ ${#argv[@]} -gt 0 ] && [[ ${argv[0]} == *"$bin" ]] && argv=("${argv[@]:1}")
	for ((i = 0; i < ${#argv[@]}; i++)); do
		a=${argv[$i]}
		if [[ $a != --* ]]; then
			bad "$bin: stray argument '$a' (not a flag, not a flag's value)"
			continue
		fi
		flag=${a%%=*}
		takes=$(awk -v f="$flag" '$1 == f { print $2 }' "$TMP/$bin.flags")
		if [ -z "$takes" ]; then
			bad "$bin: unknown flag $flag (not in $bin --help)"
			continue
		fi
		ok
		if [ "$takes" = 1 ]; then
			if [[ $a == *=* ]]; then
				val=${a#*=}
			elif [ $((i + 1)) -lt ${#argv[@]} ]; then
				i=$((i + 1))
				val=${argv[$i]}
			else
				bad "$bin: $flag needs a value"
				continue
			fi
			out[$flag]="${out[$flag]:+${out[$flag]} }$val"
		else
			[[ $a == *=* ]] && bad "$bin: $flag takes no value"
			out[$flag]=1
		fi
	done
	local r
	while read -r r; do
		if [ -n "${out[$r]:-}" ]; then ok; else bad "$bin: required flag $r missing"; fi
	done <"$TMP/$bin.required"
}
declare -A G=() A=()
parse_args "$GW" ringsteer-gateway G
parse_args "$AG" ringsteer-agent A

# $(VAR) references resolve: to the container's env, or to a Service's
# NAME_SERVICE_HOST/_PORT (set by Kubernetes for the Services of the pod's
# own namespace only: production's agent, in ringsteer-agent, gets none of
# the gateways').
svc_vars() { # NAMESPACE
	q --arg ns "$1" '.[] | select(.kind == "Service" and (.metadata.namespace // "default") == $ns) | .metadata.name |
		ascii_upcase | gsub("-"; "_") | (. + "_SERVICE_HOST"), (. + "_SERVICE_PORT")'
}
check_vars() {
	local json=$1 who=$2 v env
	env=$(jq -r '.c.env[]?.name' <<<"$json")$(printf '\n%s' "$(svc_vars "$(jq -r '.obj.metadata.namespace // "default"' <<<"$json")")")
	for v in $(jq -r '((.c.command // []) + (.c.args // []))[]' <<<"$json" | grep -o '\$([A-Za-z_][A-Za-z0-9_]*)' | tr -d '$()' | sort -u); do
		if grep -qx "$v" <<<"$env"; then ok; else bad "$who: \$($v) is neither in env nor a Service variable of its namespace"; fi
	done
}
check_vars "$GW" gateway
check_vars "$AG" agent
# Sample values for the references, to check endpoints.
subst() { sed -e 's/\$(POD_IP)/10.244.0.7/g; s/\$(HOST_IP)/192.0.2.10/g; s/\$([A-Z_]*_SERVICE_HOST)/10.96.0.10/g; s/\$(POD_NAME)/ringsteer-gateway-5d8f7c9b4-x2x9z/g'; }
endpoint_ok() { [[ $(subst <<<"$1") =~ ^([0-9]{1,3}(\.[0-9]{1,3}){3}|\[[0-9a-fA-F:.]+\]):[0-9]{1,5}$ ]]; }
# NAME:PORT, what --service also takes: a DNS name (not all digits and dots).
name_endpoint_ok() { [[ $1 =~ ^[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?:[0-9]{1,5}$ ]] && ! [[ $1 =~ ^[0-9.]+: ]]; }
service_endpoint_ok() { endpoint_ok "$1" || name_endpoint_ok "$1"; }
port_of() { echo "${1##*:}"; }
for f in --listen --peer --advertise-peer --metrics; do
	if [ -n "${G[$f]:-}" ]; then
		check "gateway $f '${G[$f]}' is a numeric ADDR:PORT" endpoint_ok "${G[$f]}"
	fi
done
for e in ${A[--metrics]:-}; do
	check "agent endpoint '$e' is a numeric ADDR:PORT" endpoint_ok "$e"
done
for e in ${A[--service]:-}; do
	check "agent --service '$e' is NAME:PORT or a numeric ADDR:PORT" service_endpoint_ok "$e"
done
for f in --heartbeat --ttl --drain-budget --drain-pace --drain-wait --handoff-timeout --hello-timeout --reservation; do
	[ -n "${G[$f]:-}" ] && check "gateway $f '${G[$f]}' is a positive integer" test "$(grep -cE '^[1-9][0-9]*$' <<<"${G[$f]}")" = 1
done
check "gateway --id comes from the pod name" test "${G[--id]:-}" = '$(POD_NAME)'
check "gateway env POD_NAME is metadata.name (downward API)" \
	test "$(gw '.c.env[]? | select(.name == "POD_NAME") | .valueFrom.fieldRef.fieldPath')" = metadata.name
check "gateway --advertise-peer is the pod IP" grep -q '^\$(POD_IP):' <<<"${G[--advertise-peer]:-}"
check "gateway --advertise-peer port = --peer port" test "$(port_of "${G[--advertise-peer]:-x:1}")" = "$(port_of "${G[--peer]:-x:2}")"

# --- drain: rolling update, grace period, preStop -------------------------------
check "Deployment strategy RollingUpdate maxSurge 1, maxUnavailable 0" \
	jq -e '.obj.spec.strategy | .type == "RollingUpdate" and (.rollingUpdate.maxSurge | tostring) == "1" and (.rollingUpdate.maxUnavailable | tostring) == "0"' <<<"$GW"
check "gateway --drain-budget is explicit" test -n "${G[--drain-budget]:-}"
check "gateway preStop hook present" jq -e '.c.lifecycle.preStop != null' <<<"$GW"
# preStop seconds: "sleep N" in an exec hook, or a sleep action.
prestop_s=$(gw '.c.lifecycle.preStop | if .sleep then (.sleep.seconds | tostring)
	elif .exec then (.exec.command | join(" ") | [scan("sleep +([0-9]+)")] | map(.[0] | tonumber) | add // 0 | tostring)
	else "0" end')
check "gateway preStop sleeps (gives the endpoints time to drop the pod)" test "${prestop_s:-0}" -gt 0
grace=$(gw '.obj.spec.template.spec.terminationGracePeriodSeconds // 30')
budget=${G[--drain-budget]:-25000}
check "terminationGracePeriodSeconds ($grace s) > preStop (${prestop_s:-0} s) + --drain-budget ($budget ms)" \
	test $((grace * 1000)) -gt $((${prestop_s:-0} * 1000 + budget))

# --- probes at the metrics port ---------------------------------------------------
# resolve_port JSON PORT: a container port by number or by name.
resolve_port() { jq -r --arg p "$2" '.c.ports[]? | select((.name // "") == $p or (.containerPort | tostring) == $p) | .containerPort' <<<"$1" | head -n 1; }
mport=$(port_of "${G[--metrics]:-x:0}")
check "gateway readinessProbe is httpGet /readyz" test "$(gw '.c.readinessProbe.httpGet.path // ""')" = /readyz
check "gateway readinessProbe port is the --metrics port ($mport)" \
	test "$(resolve_port "$GW" "$(gw '.c.readinessProbe.httpGet.port // ""')")" = "$mport"
check "gateway livenessProbe is httpGet /healthz at the --metrics port" \
	test "$(gw '.c.livenessProbe.httpGet.path // ""') $(resolve_port "$GW" "$(gw '.c.livenessProbe.httpGet.port // ""')")" = "/healthz $mport"
check "gateway has a container port named metrics = --metrics port (scrape.yaml keeps it)" \
	test "$(resolve_port "$GW" metrics)" = "$mport"
check "agent has a container port named metrics = --metrics port" \
	test "$(resolve_port "$AG" metrics)" = "$(port_of "${A[--metrics]:-x:0}")"
check "agent liveness at /healthz on the metrics port" \
	test "$(ag '.c.livenessProbe.httpGet.path // ""') $(resolve_port "$AG" "$(ag '.c.livenessProbe.httpGet.port // ""')")" = "/healthz $(port_of "${A[--metrics]:-x:0}")"

# --- Services -----------------------------------------------------------------------
# Services selecting the gateway pods (selector a subset of the pod labels).
pod_labels=$(gw -c '.obj.spec.template.metadata.labels // {}')
check "Deployment selector matches its pod labels" \
	jq -e --argjson l "$pod_labels" '(.obj.spec.selector.matchLabels // {}) as $s | $s != {} and ($s | to_entries | all(.value == $l[.key]))' <<<"$GW"
check "DaemonSet selector matches its pod labels" \
	jq -e '(.obj.spec.selector.matchLabels // {}) as $s | .obj.spec.template.metadata.labels as $l | $s != {} and ($s | to_entries | all(.value == $l[.key]))' <<<"$AG"
q --argjson l "$pod_labels" -c '[.[] | select(.kind == "Service" and .spec.selector != null and (.spec.selector | to_entries | all(.value == $l[.key])))]' >"$TMP/gwsvc.json"
lport=$(port_of "${G[--listen]:-x:0}")
pport=$(port_of "${G[--peer]:-x:0}")
# svc_port_to SVCJSON PORT: the service port whose targetPort resolves to PORT.
target_is() { # SERVICE_PORT_JSON -> resolved target port
	local tp
	tp=$(jq -r '.targetPort // .port | tostring' <<<"$1")
	resolve_port "$GW" "$tp"
}
client_ok=0 peer_ok=0 client_svc=
while read -r s; do
	name=$(jq -r .metadata.name <<<"$s")
	headless=$(jq -r '.spec.clusterIP == "None"' <<<"$s")
	while read -r p; do
		t=$(target_is "$p")
		port=$(jq -r .port <<<"$p")
		if [ "$headless" = false ] && [ "$t" = "$lport" ] && [ "$port" = "$lport" ] &&
			jq -e '(.spec.type // "ClusterIP") == "ClusterIP"' <<<"$s" >/dev/null; then client_ok=1 client_svc=$name; fi
		if [ "$headless" = true ] && [ "$t" = "$pport" ] && [ "$port" = "$pport" ]; then peer_ok=1; fi
	done < <(jq -c '.spec.ports[]?' <<<"$s")
	ok
	: "$name"
done < <(jq -c '.[]' "$TMP/gwsvc.json")
check "a ClusterIP Service selects the gateways with port $lport -> the --listen port" test "$client_ok" = 1
check "a headless Service (clusterIP None) selects the gateways with port $pport -> the --peer port" test "$peer_ok" = 1

# --- volumes: every path a flag names is on a volume ---------------------------------
# mount_of JSON PATH: the volume of the mount holding the file PATH (strictly
# below the mountPath; the longest such mountPath).  on_volume JSON PATH KIND:
# that volume exists and its source is KIND (hostPath, secret, ...) or KIND is "any".
mount_of() {
	jq -r --arg p "$2" '. as $x | [.c.volumeMounts[]? | select(.mountPath as $m | $p | startswith(($m | rtrimstr("/")) + "/"))] |
		max_by(.mountPath | length) // empty | .name as $n | $x.obj.spec.template.spec.volumes[]? | select(.name == $n)' <<<"$1"
}
on_volume() {
	local v
	v=$(mount_of "$1" "$2")
	[ -n "$v" ] || { echo "no volumeMount holds $2"; return 1; }
	[ "$3" = any ] || jq -e --arg k "$3" 'has($k)' <<<"$v" >/dev/null || { echo "$2 is on $(jq -c . <<<"$v"), not a $3 volume"; return 1; }
}
host_path_of() { mount_of "$1" "$2" | jq -r '.hostPath.path // empty'; }
if [ -n "${G[--agent]:-}" ]; then
	check "gateway --agent ${G[--agent]} is on the hostPath /run/ringsteer" test "$(host_path_of "$GW" "${G[--agent]}")" = /run/ringsteer
fi
check "agent --ttl = gateway --ttl (docs/KERNEL.md: must match)" test "${A[--ttl]:-15000}" = "${G[--ttl]:-15000}"

# --- TLS: the gateway's certificate, where it comes from, what it names --------------
# TLS (--tls-cert and --tls-key) or plaintext (--insecure): exactly one, as
# the gateway itself insists (and no --tls-ca with --insecure).
gw_ns=$(gw '.obj.metadata.namespace // "default"')
tls_cert=${G[--tls-cert]:-} tls_key=${G[--tls-key]:-} tls_ca=${G[--tls-ca]:-} insecure=${G[--insecure]:-}
tls_mode() {
	if [ -n "$insecure" ]; then
		[ -z "$tls_cert$tls_key$tls_ca" ] || { echo "--insecure together with --tls-* flags (the gateway refuses to start)"; return 1; }
	elif [ -z "$tls_cert" ] || [ -z "$tls_key" ]; then
		echo "--tls-cert '$tls_cert' --tls-key '$tls_key': both are needed, or --insecure"
		return 1
	fi
}
check "gateway serves TLS (--tls-cert and --tls-key) or plaintext (--insecure), exactly one" tls_mode
# mount_vol JSON PATH: {m: the mount holding PATH (as mount_of), v: its volume or null}.
mount_vol() {
	jq -c --arg p "$2" '. as $x | [.c.volumeMounts[]? | select(.mountPath as $m | $p | startswith(($m | rtrimstr("/")) + "/"))] |
		max_by(.mountPath | length) // empty | . as $m | {m: $m, v: ([$x.obj.spec.template.spec.volumes[]? | select(.name == $m.name)] | .[0])}' <<<"$1"
}
# provides JSON PATH: a volume is mounted over PATH and writes that file: a
# cert-manager csi volume writes its certificate-file, privatekey-file and
# ca-file (default tls.crt, tls.key, ca.crt); a Secret or ConfigMap volume
# with items writes their paths; without items (keys unknown here) or of
# another kind, any file is taken.
provides() {
	local mv rel
	mv=$(mount_vol "$1" "$2")
	if [ -z "$mv" ] || ! jq -e '.v != null' <<<"$mv" >/dev/null; then
		echo "no volume is mounted over $2"
		return 1
	fi
	rel=$(jq -r --arg p "$2" '(.m.subPath // "") as $s | (.m.mountPath | rtrimstr("/")) as $m | ($p | ltrimstr($m + "/")) |
		if $s != "" then ($s | rtrimstr("/")) + "/" + . else . end' <<<"$mv")
	jq -e --arg r "$rel" '.v | (if .csi then (if .csi.driver == "csi.cert-manager.io" then (.csi.volumeAttributes // {}) as $a |
			[$a["csi.cert-manager.io/certificate-file"] // "tls.crt", $a["csi.cert-manager.io/privatekey-file"] // "tls.key",
			 $a["csi.cert-manager.io/ca-file"] // "ca.crt"] else null end)
		elif .secret.items then [.secret.items[].path] elif .configMap.items then [.configMap.items[].path] else null end) as $files |
		$files == null or ($files | index($r) != null)' <<<"$mv" >/dev/null ||
		{ echo "$2: volume $(jq -r .v.name <<<"$mv") provides no file $rel ($(jq -c .v <<<"$mv"))"; return 1; }
}
# Every file a TLS flag names, and every argument under /etc/ringsteer/tls/.
declare -A tls_files=()
for f in --tls-cert --tls-key --tls-ca; do
	[ -n "${G[$f]:-}" ] && tls_files[${G[$f]}]=$f
done
for f in "${!G[@]}"; do
	for v in ${G[$f]}; do
		[[ $v == /etc/ringsteer/tls/* ]] && [ -z "${tls_files[$v]:-}" ] && tls_files[$v]=$f
	done
done
while read -r p; do
	[ -n "$p" ] && check "gateway ${tls_files[$p]} $p is a file a mounted volume provides" provides "$GW" "$p"
done < <(printf '%s\n' "${!tls_files[@]}" | sort)
# Under TLS the certificate must name the gateway id, which is the pod's
# name: only a per-pod certificate can (names match exactly, no
# wildcards), i.e. the cert-manager csi-driver.
if [ -z "$insecure" ] && [ -n "$tls_cert" ]; then
	cv=$(mount_vol "$GW" "$tls_cert" | jq -c '.v // {}')
	[ -n "$cv" ] || cv='{}'
	attr() { jq -r --arg k "csi.cert-manager.io/$1" '.csi.volumeAttributes[$k] // empty' <<<"$cv"; }
	check "gateway --tls-cert is on a cert-manager csi-driver volume (a per-pod certificate naming the pod)" \
		jq -e '.csi.driver == "csi.cert-manager.io"' <<<"$cv"
fi
# The csi volume's request: only when there is one (else the check above failed).
if [ -z "$insecure" ] && [ -n "$tls_cert" ] && jq -e '.csi.driver == "csi.cert-manager.io"' <<<"$cv" >/dev/null; then
	check "gateway --tls-key is on the --tls-cert volume (issued and renewed together)" \
		test "$(mount_vol "$GW" "${tls_key:-/nonexistent}" | jq -r '.v.name // "(none)"')" = "$(jq -r '.name // "-"' <<<"$cv")"
	check "tls csi volume is readOnly (the csi-driver refuses other volumes)" jq -e '.csi.readOnly == true' <<<"$cv"
	dns_names=$(attr dns-names | tr ',' '\n' | sed 's/^ *//; s/ *$//')
	# --id $(POD_NAME) (the downward API, checked above) is the csi-driver's ${POD_NAME}.
	want_id=${G[--id]:-}
	want_id=${want_id//\$(POD_NAME)/\$\{POD_NAME\}}
	check "tls csi dns-names include $want_id, the gateway id (redirected supervisors check the target names it)" \
		grep -qxF -- "$want_id" <<<"$dns_names"
	check "tls csi dns-names include the client Service's name ${client_svc:-?}.$gw_ns.svc (what supervisors dial: their --service name, or --tls-server-name)" \
		grep -qxE -- "${client_svc:-no client Service}\.$gw_ns\.svc(\.cluster\.local)?" <<<"${dns_names//\$\{POD_NAMESPACE\}/$gw_ns}"
	# Supervisors verify the gateway as a TLS server (OpenSSL checks the
	# purpose): if extended usages are listed, server auth is one; if key
	# usages are, digital signature is one (TLS 1.3 signs the handshake; RFC
	# 8446 requires it, though OpenSSL does not check).
	usages_fit() {
		jq -en --arg u "$(attr key-usages)" '($u | split(",") | map(gsub("^ +| +$"; "")) | map(select(. != ""))) as $l |
			["server auth", "client auth", "code signing", "email protection", "s/mime", "ipsec end system", "ipsec tunnel",
			 "ipsec user", "timestamping", "ocsp signing", "microsoft sgc", "netscape sgc"] as $ext |
			($l | map(select(. as $x | $ext | index($x) != null))) as $e | ($l - $e) as $k |
			($e == [] or ($e | index("server auth") != null)) and ($k == [] or ($k | index("digital signature") != null))' >/dev/null ||
			{ echo "key-usages '$(attr key-usages)'"; return 1; }
	}
	check "tls csi key-usages fit a TLS 1.3 server (server auth, digital signature)" usages_fit
	issuer=$(attr issuer-name)
	issuer_kind=$(attr issuer-kind)
	check "tls csi issuer-name is set" test -n "$issuer"
	if [ "${issuer_kind:-Issuer}" = Issuer ]; then
		check "tls csi issuer: an Issuer $issuer in namespace $gw_ns is in the overlay" \
			jq -e --arg n "$issuer" --arg ns "$gw_ns" 'any(.[]; .kind == "Issuer" and .metadata.name == $n and (.metadata.namespace // $ns) == $ns)' "$TMP/k8s.json"
	fi
	# The driver writes the files root's: a non-root gateway reads them
	# through their group, the fs-group attribute, which must be its own.
	gw_uid=$(gw '.c.securityContext.runAsUser // .obj.spec.template.spec.securityContext.runAsUser // ""')
	gw_gid=$(gw '.c.securityContext.runAsGroup // .obj.spec.template.spec.securityContext.runAsGroup // ""')
	if [ "$gw_uid" != 0 ]; then
		check "tls csi fs-group '$(attr fs-group)' is the gateway's runAsGroup '$gw_gid' (it cannot read its key otherwise)" \
			test -n "$gw_gid" -a "$(attr fs-group)" = "$gw_gid"
	fi
	# The renewal point (renew-before, default a third of the duration,
	# default 720h) lies above RingsteerTLSCertExpiringSoon's threshold, or
	# every renewal cycle fires it; and below the duration.
	go_seconds() { # a Go duration ("720h", "1h30m") -> whole seconds, or nothing
		jq -rn --arg d "$1" 'if $d | test("^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$") then
			[$d | scan("([0-9]+(?:\\.[0-9]+)?)(ns|us|µs|ms|s|m|h)") | (.[0] | tonumber) *
				{"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 0.001, "s": 1, "m": 60, "h": 3600}[.[1]]] | add | floor
		else empty end'
	}
	renewal_fits() {
		local d rb thr
		d=$(go_seconds "$(attr duration | grep . || echo 720h)")
		[ -n "$d" ] || { echo "duration '$(attr duration)' is not a Go duration"; return 1; }
		if [ -n "$(attr renew-before)" ]; then
			rb=$(go_seconds "$(attr renew-before)")
			[ -n "$rb" ] || { echo "renew-before '$(attr renew-before)' is not a Go duration"; return 1; }
		else
			rb=$((d / 3))
		fi
		thr=$(jq -r '.[0].groups[]?.rules[]? | select(.alert == "RingsteerTLSCertExpiringSoon") |
			.expr | capture("<\\s*(?<a>[0-9]+)(\\s*\\*\\s*(?<b>[0-9]+))?\\s*$") | (.a | tonumber) * ((.b // "1") | tonumber)' "$TMP/alerts.json" | head -n 1)
		[ -n "$thr" ] || { echo "no RingsteerTLSCertExpiringSoon '... < N [* M]' in prometheus/alerts.yaml"; return 1; }
		if [ "$rb" -le "$thr" ] || [ "$rb" -ge "$d" ]; then
			echo "renewal at ${rb}s left of ${d}s, alert below ${thr}s"
			return 1
		fi
	}
	check "tls csi renewal point above RingsteerTLSCertExpiringSoon's threshold, below the duration" renewal_fits
fi

# --- who runs as whom: the image's user (deploy/Dockerfile) for the gateway, root
# for the agent, and the store directory handed to the gateway's user ---------
img_user=$(sed -n 's/^USER \([0-9]*\):\([0-9]*\)$/\1/p' "$DEPLOY/Dockerfile")
check "the image runs as a non-root uid by default (Dockerfile USER)" test -n "$img_user" -a "${img_user:-0}" != 0
check "gateway runs as the image's uid, non-root" \
	jq -e --argjson u "${img_user:-65532}" '.c.securityContext | .runAsUser == $u and .runAsNonRoot == true' <<<"$GW"
check "agent runs as root (the image's default user is not)" jq -e '.c.securityContext.runAsUser == 0' <<<"$AG"

# --- private files: readable by their process, by nobody else ------------------------
# The gateway refuses a --secret file its group or others may access, and
# libpq ignores such a password file.  The kubelet writes a Secret volume's
# files as root's: mode as given (0400: unreadable to a non-root process),
# or with the pod's fsGroup, group-readable (refused).  So:
# private_file JSON PATH: PATH is on a Secret volume whose files give group
# and others nothing, read by root without fsGroup; or on an emptyDir that
# an init container, running as the reader's uid, fills from a Secret
# volume (mounted at .../NAME for PATH's directory NAME) with mode 0400 or
# 0600.
uid_of() { # JSON -> the container's uid (its own, the pod's, the image's)
	jq -r --arg img "${img_user:-65532}" '.c.securityContext.runAsUser // .obj.spec.template.spec.securityContext.runAsUser // ($img | tonumber)' <<<"$1"
}
private_file() {
	local json=$1 path=$2 mv uid
	mv=$(mount_vol "$json" "$path")
	if [ -z "$mv" ] || ! jq -e '.v != null' <<<"$mv" >/dev/null; then
		echo "no volume is mounted over $path"
		return 1
	fi
	uid=$(uid_of "$json")
	if jq -e '.v.secret' <<<"$mv" >/dev/null; then
		[ "$uid" = 0 ] || { echo "$path: a Secret volume's file is root's, and this process runs as uid $uid: copy it (an init container, as the gateway's private-files)"; return 1; }
		jq -e --argjson fs "$(jq '.obj.spec.template.spec.securityContext.fsGroup // null' <<<"$json")" \
			'$fs == null and ([(.v.secret.defaultMode // 420)] + [.v.secret.items[]?.mode // empty] | all(. % 64 == 0))' <<<"$mv" >/dev/null ||
			{ echo "$path: Secret volume $(jq -c .v <<<"$mv") lets group or others read (mode, or the pod's fsGroup)"; return 1; }
		return 0
	fi
	jq -e '.v.emptyDir' <<<"$mv" >/dev/null || { echo "$path is on $(jq -c .v <<<"$mv"), neither a Secret volume nor a copy of one"; return 1; }
	local dir
	dir=$(jq -r --arg p "$path" '(.m.mountPath | rtrimstr("/")) as $m | $p | ltrimstr($m + "/") | split("/") | .[0]' <<<"$mv")
	jq -e --arg vol "$(jq -r .v.name <<<"$mv")" --arg dir "$dir" --argjson uid "$uid" '. as $x | $x.obj.spec.template.spec as $p |
		any($p.initContainers[]?; (.securityContext.runAsUser // $p.securityContext.runAsUser) == $uid and
			((.command // []) + (.args // []) | join(" ") | test("(install -m|chmod) 0?[46]00")) and
			any(.volumeMounts[]?; .name == $vol and (.readOnly // false) == false) and
			any(.volumeMounts[]? as $m | $p.volumes[]? | select(.name == $m.name and .secret != null and
				($m.mountPath | rtrimstr("/") | split("/") | last) == $dir); true))' \
		<<<"$json" >/dev/null ||
		{ echo "$path: no init container running as uid $uid copies a Secret mounted at .../$dir into $(jq -r .v.name <<<"$mv") with mode 0400 or 0600"; return 1; }
}
check "gateway --secret ${G[--secret]:-} is private: readable by the gateway (uid $(uid_of "$GW")) only" private_file "$GW" "${G[--secret]:-/nonexistent}"

# --- no password in arguments or in the environment --------------------------------------
# Arguments are in the pod spec and in every process listing on the node;
# an environment (PGPASSWORD) is inherited by every child and shown by
# `ps e`.  Passwords go in files (PGPASSFILE).  Every container of every pod.
q -c '.[] | (.spec.template.spec // .spec.jobTemplate.spec.template.spec // (if .kind == "Pod" then .spec else null end)) as $p |
	select($p != null) | ($p.initContainers // []) + ($p.containers // []) | .[] | {who: .name, c: .}' >"$TMP/containers.jsonl"
while read -r cj; do
	who=$(jq -r .who <<<"$cj")
	check "container $who: no password in its command or args (a URL's user:password@, password=)" \
		jq -e '[(.c.command // []) + (.c.args // []) | .[] | select(test("[A-Za-z][A-Za-z0-9+.-]*://[^/@:]*:[^/@]*@|password\\s*="; "i"))] | length == 0' <<<"$cj"
	check "container $who: no password in its environment (PGPASSWORD, a literal URL or password= value)" \
		jq -e '[.c.env[]? | select((.name | test("PASSWORD"; "i")) or ((.value // "") | test("://[^/@:]*:[^/@]*@|password\\s*="; "i")))] | length == 0' <<<"$cj"
done <"$TMP/containers.jsonl"

# --- every pod: no service-account token, the runtime's seccomp profile -------------
# Neither the gateway nor the agent calls the Kubernetes API.  A privileged
# container runs without seccomp whatever the profile says (containerd):
# such pods may leave it out.
q -c '.[] | (.spec.template.spec // .spec.jobTemplate.spec.template.spec // (if .kind == "Pod" then .spec else null end)) as $p |
	select($p != null) | {who: (.kind + " " + (.metadata.namespace // "default") + "/" + .metadata.name), ns: (.metadata.namespace // "default"), p: $p}' >"$TMP/pods.jsonl"
check "the overlay has pods (workloads)" test -s "$TMP/pods.jsonl"
while read -r pj; do
	who=$(jq -r .who <<<"$pj")
	check "$who: automountServiceAccountToken false" jq -e '.p.automountServiceAccountToken == false' <<<"$pj"
	if jq -e 'any((.p.initContainers // []) + .p.containers | .[]; .securityContext.privileged == true)' <<<"$pj" >/dev/null; then
		ok
	else
		check "$who: seccompProfile RuntimeDefault (pod, or every container)" \
			jq -e '.p.securityContext.seccompProfile.type as $pod | all((.p.initContainers // []) + .p.containers | .[];
				(.securityContext.seccompProfile.type // $pod) == "RuntimeDefault")' <<<"$pj"
	fi
done <"$TMP/pods.jsonl"

# --- Pod Security: each namespace enforces the strictest level its pods pass ---------
# pod_security.jq computes a pod spec's level (a subset of the Pod Security
# Standards: what these manifests could get wrong).  A looser label than
# needed admits pods it need not; a stricter one refuses ours.
for ns in $(jq -r '.ns' "$TMP/pods.jsonl" | sort -u); do
	check "namespace $ns is in the overlay" jq -e --arg n "$ns" 'any(.[]; .kind == "Namespace" and .metadata.name == $n)' "$TMP/k8s.json"
done
while read -r nsj; do
	ns=$(jq -r .metadata.name <<<"$nsj")
	level=$(jq -r '.metadata.labels["pod-security.kubernetes.io/enforce"] // ""' <<<"$nsj")
	check "namespace $ns: pod-security.kubernetes.io/enforce is privileged, baseline or restricted ('$level')" \
		grep -qxE 'privileged|baseline|restricted' <<<"$level"
	check "namespace $ns: ringsteer.io/pod-security-reason says why $level" \
		jq -e --arg l "$level" '(.metadata.annotations["ringsteer.io/pod-security-reason"] // "") | startswith($l + ":") and length > ($l | length) + 20' <<<"$nsj"
	want=$(jq -L "$ROOT/tests/deploy" -r --arg n "$ns" 'include "pod_security";
		[.[] | select(.ns == $n) | .p | pod_security_level] | strictest_common // "restricted"' < <(jq -s . "$TMP/pods.jsonl"))
	why=$(jq -L "$ROOT/tests/deploy" -r --arg n "$ns" --arg l "$level" 'include "pod_security";
		[.[] | select(.ns == $n) | .who as $w | .p | pod_security_violations($l)[] | $w + ": " + .] |
		.[0:3] + (if length > 3 then ["\(length - 3) more"] else [] end) | join("; ")' < <(jq -s . "$TMP/pods.jsonl"))
	check "namespace $ns: enforces $want, the strictest level its pods pass (labelled '$level'${why:+; $why})" test "$level" = "$want"
done < <(q -c '.[] | select(.kind == "Namespace")')

# --- the agent's priority --------------------------------------------------------------
ag_ns=$(ag '.obj.metadata.namespace // "default"')
check "agent priorityClassName system-node-critical (evicted last, scheduled first)" \
	jq -e '.obj.spec.template.spec.priorityClassName == "system-node-critical"' <<<"$AG"
check "a ResourceQuota scoped to PriorityClass system-node-critical admits the agent in $ag_ns (GKE and others require one)" \
	jq -e --arg n "$ag_ns" 'any(.[]; .kind == "ResourceQuota" and (.metadata.namespace // "default") == $n and
		any(.spec.scopeSelector.matchExpressions[]?; .scopeName == "PriorityClass" and .operator == "In" and (.values | index("system-node-critical") != null)) and
		((.spec.hard.pods // "1") | tonumber) >= 1)' "$TMP/k8s.json"

# --- the store: SQLite on one node, or PostgreSQL --------------------------------------
gw_store=${G[--store]:-} ag_store=${A[--store]:-}
case $gw_store in
sqlite:/*) store=sqlite ;;
postgres://* | postgresql://* | '$('*')') store=postgres ;;
*) store=none ;;
esac
check "gateway --store '$gw_store' is sqlite:PATH or PostgreSQL (a URL, or \$(VAR) from a Secret or ConfigMap)" test $store != none
check "agent follows the same store as the gateways" test "$ag_store" = "$gw_store"
if [ $store = sqlite ]; then
	. "$ROOT/tests/deploy/store_sqlite.sh"
elif [ $store = postgres ]; then
	. "$ROOT/tests/deploy/store_postgres.sh"
fi
# PostgreSQL is what lets the gateways span nodes: such a deployment must
# survive a node, and is the one a platform team runs (NetworkPolicies,
# the prometheus-operator).
need_netpol=0 need_monitoring=0
if [ $store = postgres ]; then
	. "$ROOT/tests/deploy/multi_node.sh"
	need_netpol=1 need_monitoring=1
fi
. "$ROOT/tests/deploy/network_policies.sh"
. "$ROOT/tests/deploy/monitoring.sh"

# --- the agent: privileges, network, bpffs, registration socket -------------------
check "agent is privileged or has CAP_BPF/NET_ADMIN/SYS_ADMIN" \
	jq -e '.c.securityContext | .privileged == true or ((.capabilities.add // []) | map(ascii_upcase | sub("^CAP_"; "")) | contains(["BPF", "NET_ADMIN", "SYS_ADMIN"]))' <<<"$AG"
check "agent runs in the node's netns (hostNetwork: sk_lookup attaches to its own netns)" \
	jq -e '.obj.spec.template.spec.hostNetwork == true' <<<"$AG"
check "agent has a hostPath volume /sys/fs/bpf" jq -e '[.obj.spec.template.spec.volumes[]? | .hostPath.path] | index("/sys/fs/bpf") != null' <<<"$AG"
check "agent has a hostPath volume /run/ringsteer" jq -e '[.obj.spec.template.spec.volumes[]? | .hostPath.path] | index("/run/ringsteer") != null' <<<"$AG"
pin_root=${A[--pin-root]:-/sys/fs/bpf/ringsteer}
sock=${A[--socket]:-/run/ringsteer/agent.sock}
check "agent --pin-root $pin_root is on the hostPath /sys/fs/bpf" test "$(host_path_of "$AG" "$pin_root")" = /sys/fs/bpf
check "agent --socket $sock is on the hostPath /run/ringsteer" test "$(host_path_of "$AG" "$sock")" = /run/ringsteer
check "agent steers the gateways' Service port" grep -q ":$lport\( \|$\)" <<<"${A[--service]:-}"

# --- the agent is on by default, with what connect-time steering needs ------------
# The overlay runs it ("a DaemonSet runs ringsteer-agent" above), and
# connect-time steering is not switched off.
check "agent runs without --no-connect (connect-time steering on)" test -z "${A[--no-connect]:-}"
check "agent has hostPID (SO_PEERCRED pids and /proc/PID of supervisor pods)" \
	jq -e '.obj.spec.template.spec.hostPID == true' <<<"$AG"
check "agent has a hostPath volume /sys/fs/cgroup mounted at /sys/fs/cgroup (the node's cgroup2 hierarchy)" \
	jq -e '. as $x | [.c.volumeMounts[]? | select(.mountPath == "/sys/fs/cgroup") | .name as $n |
		$x.obj.spec.template.spec.volumes[]? | select(.name == $n) | .hostPath.path] | index("/sys/fs/cgroup") != null' <<<"$AG"
if [ -n "${A[--cgroup]:-}" ]; then
	check "agent --cgroup ${A[--cgroup]} is on the hostPath /sys/fs/cgroup" \
		test "$(jq -r --arg p "${A[--cgroup]}" '. as $x | [.c.volumeMounts[]? | select(.mountPath as $m | $p == $m or ($p | startswith(($m | rtrimstr("/")) + "/")))] |
			max_by(.mountPath | length) // empty | .name as $n | $x.obj.spec.template.spec.volumes[]? | select(.name == $n) | .hostPath.path // empty' <<<"$AG")" = /sys/fs/cgroup
fi
check "agent has a hostPath volume /sys/fs/bpf mounted at /sys/fs/bpf (bpffs)" \
	jq -e '. as $x | [.c.volumeMounts[]? | select(.mountPath == "/sys/fs/bpf") | .name as $n |
		$x.obj.spec.template.spec.volumes[]? | select(.name == $n) | .hostPath.path] | index("/sys/fs/bpf") != null' <<<"$AG"
check "agent passes --member-socket" test -n "${A[--member-socket]:-}"
member_sock=${A[--member-socket]:-/run/ringsteer/member.sock}
check "agent --member-socket $member_sock is on the hostPath /run/ringsteer" test "$(host_path_of "$AG" "$member_sock")" = /run/ringsteer
check "agent's /run/ringsteer hostPath is a directory (DirectoryOrCreate or Directory)" \
	jq -e '[.obj.spec.template.spec.volumes[]? | select(.hostPath.path == "/run/ringsteer") | .hostPath.type // ""] |
		length > 0 and all(. == "DirectoryOrCreate" or . == "Directory")' <<<"$AG"
# The address supervisors dial: the client Service's ClusterIP, from the
# kubelet's variable for it or a clusterIP fixed in the Service.
client_var=$(tr 'a-z-' 'A-Z_' <<<"${client_svc:-none}")_SERVICE_HOST
client_ip=$(q --arg n "${client_svc:-}" -r 'first(.[] | select(.kind == "Service" and .metadata.name == $n) | .spec.clusterIP // empty) // empty')
# The client Service's DNS names (what the agent and supervisors may dial it by).
client_names_re="${client_svc:-no-client-service}\.$gw_ns\.svc(\.cluster\.local)?"
service_is_cluster_ip() {
	local e
	for e in ${A[--service]:-}; do
		case $e in
		"\$($client_var):$lport" | "[\$($client_var)]:$lport") return 0 ;;
		esac
		[[ $e =~ ^$client_names_re:$lport$ ]] && return 0
		[ -n "$client_ip" ] && [ "$client_ip" != None ] && { [ "$e" = "$client_ip:$lport" ] || [ "$e" = "[$client_ip]:$lport" ]; } && return 0
	done
	echo "--service '${A[--service]:-}': none is the client Service's name, \$($client_var):$lport or its fixed clusterIP"
	return 1
}
check "agent --service names the client Service (its DNS name or ClusterIP):$lport (what supervisors dial)" service_is_cluster_ip
# A name is looked up at every sync: a hostNetwork pod resolves Service
# names only with the cluster DNS.
for e in ${A[--service]:-}; do
	if name_endpoint_ok "$e"; then
		check "agent --service '$e' is a name: the pod resolves it through the cluster DNS (dnsPolicy ClusterFirstWithHostNet)" \
			jq -e '(.obj.spec.template.spec.hostNetwork != true) or (.obj.spec.template.spec.dnsPolicy == "ClusterFirstWithHostNet")' <<<"$AG"
	fi
done

# --- supervisors: every example registers with the agent -----------------------------
# Supervisor containers in deploy/ (any workload or Pod), and the example pod
# in docs/OPERATIONS.md between <!-- supervisor-example ... --> and
# <!-- /supervisor-example --> (an indented code block).  Each is checked as
# {obj: {spec: {template: {spec: POD SPEC}}}, c: CONTAINER}.
sup_bin_re='(^|/)ringsteer-supervisor$'
q -c --arg b "$sup_bin_re" '.[] | (.spec.template.spec // (if .kind == "Pod" then .spec else null end)) as $p | select($p != null) |
	$p.containers[]? | select(((.command // []) + (.args // []))[0] // "" | test($b)) |
	{where: "overlay", obj: {spec: {template: {spec: $p}}}, c: .}' >"$TMP/supervisors.jsonl"
OPS=${RS_OPERATIONS_MD:-$ROOT/docs/OPERATIONS.md}
if [ -f "$OPS" ] && grep -q '<!-- supervisor-example' "$OPS"; then
	awk '/<!-- supervisor-example/ { f = 1; next } /<!-- \/supervisor-example -->/ { f = 0 } f' "$OPS" |
		sed -n 's/^    //p; /^ *$/p' >"$TMP/sup-example.yaml"
	if out=$("$PY" -c '
import json, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d is not None]
print(json.dumps(docs))' "$TMP/sup-example.yaml" 2>&1 >"$TMP/sup-example.json"); then
		ok
		jq -c --arg b "$sup_bin_re" '.[] | (.spec.template.spec // (if .kind == "Pod" then .spec else null end)) as $p | select($p != null) |
			$p.containers[]? | select(((.command // []) + (.args // []))[0] // "" | test($b)) |
			{where: "docs/OPERATIONS.md", obj: {spec: {template: {spec: $p}}}, c: .}' "$TMP/sup-example.json" >>"$TMP/supervisors.jsonl"
	else
		bad "docs/OPERATIONS.md supervisor example parses as YAML: $(tail -n 1 <<<"$out")"
	fi
fi
check "a supervisor example exists (the overlay or docs/OPERATIONS.md's supervisor-example)" test -s "$TMP/supervisors.jsonl"
member_dir=$(host_path_of "$AG" "$member_sock")
while read -r sj; do
	where=$(jq -r .where <<<"$sj")
	declare -A S=()
	parse_args "$sj" ringsteer-supervisor S
	check_vars "$sj" "supervisor ($where)"
	check "supervisor ($where) passes --agent" test -n "${S[--agent]:-}"
	check "supervisor ($where) --agent ${S[--agent]:-} is the agent's --member-socket $member_sock" \
		test "${S[--agent]:-}" = "$member_sock"
	# The directory is mounted, not the socket file: the agent re-creates
	# the file at each start (a bind of the file would keep the dead one,
	# and a Socket hostPath keeps the pod from starting where no agent runs).
	check "supervisor ($where) --agent is on the hostPath $member_dir (the agent's socket directory, mounted whole)" \
		test "$(host_path_of "$sj" "${S[--agent]:-/nonexistent}")" = "$member_dir"
	check "supervisor ($where) socket directory hostPath is DirectoryOrCreate or Directory" \
		jq -e --arg p "$member_dir" '[.obj.spec.template.spec.volumes[]? | select(.hostPath.path == $p) | .hostPath.type // ""] |
			length > 0 and all(. == "DirectoryOrCreate" or . == "Directory")' <<<"$sj"
	for e in ${S[--service]:-}; do
		check "supervisor ($where) --service '$e' is NAME:PORT or a numeric ADDR:PORT" service_endpoint_ok "$e"
		check "supervisor ($where) --service port is the client Service's port $lport" test "$(port_of "$e")" = "$lport"
		# By name: the client Service's, which the gateways' certificate
		# names (the default --tls-server-name is the --service name).
		if name_endpoint_ok "$e"; then
			check "supervisor ($where) --service name '${e%:*}' is the client Service's ($client_names_re)" \
				grep -qxE -- "$client_names_re" <<<"${e%:*}"
		fi
	done
	unset S
done <"$TMP/supervisors.jsonl"

# --- Prometheus without the operator: deploy/prometheus/scrape.yaml finds these pods ---
# Each scrape job keeps the container port named metrics, a component
# label the workload's pods carry, and lists their namespace (the agent's
# is its own in production).  promtool's checks of the Prometheus files
# are manifests_test.sh's.
for job in ringsteer-gateway ringsteer-agent; do
	if [ $job = ringsteer-gateway ]; then w=$GW; else w=$AG; fi
	sj=$(jq -c --arg j "$job" 'first(.[0].scrape_configs[]? | select(.job_name == $j)) // {}' "$TMP/scrape.json")
	comp=$(jq -r '.relabel_configs[]? | select(.action == "keep" and (.source_labels == ["__meta_kubernetes_pod_label_app_kubernetes_io_component"])) | .regex' <<<"$sj")
	want=$(jq -r '.obj.spec.template.metadata.labels["app.kubernetes.io/component"] // ""' <<<"$w")
	wns=$(jq -r '.obj.metadata.namespace // "default"' <<<"$w")
	check "scrape job $job keeps component '$want' pods" test -n "$want" -a "$comp" = "$want"
	check "scrape job $job keeps the port named metrics" \
		jq -e 'any(.relabel_configs[]?; .action == "keep" and .source_labels == ["__meta_kubernetes_pod_container_port_name"] and .regex == "metrics")' <<<"$sj"
	check "scrape job $job looks in namespace $wns" \
		jq -e --arg ns "$wns" 'any(.kubernetes_sd_configs[]?; (.namespaces.names // []) | index($ns) != null)' <<<"$sj"
done

if [ "$failed" -gt 0 ]; then
	echo "overlay $NAME: $pass passed, $failed failed"
	exit 1
fi
echo "overlay $NAME: $pass passed"
