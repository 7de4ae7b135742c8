#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/deploy/manifests_test.sh - deploy/ renders with kubectl 1.20's
# kustomize, every rendered object passes its schema with unknown fields
# refused, each overlay carries what ringsteer needs, the Prometheus files
# pass promtool, and each of these checks fails on a manifest that breaks
# what it guards.
#
# usage: tests/deploy/manifests_test.sh BUILD_DIR
# (RS_DEPLOY_DIR and RS_OPERATIONS_MD replace deploy/ and docs/OPERATIONS.md;
# RS_KUBECTL and RS_SCHEMA_MODULES the tools `make deploy-tools` puts under
# BUILD_DIR/deploy-tools.)
#
# 1. Render: `kubectl kustomize` (v1.20: kustomize v2.0, Debian 12's
#    kubernetes-client) of deploy/overlays/single-node,
#    deploy/overlays/production and deploy/monitoring; the overlays name
#    deploy/base under bases: and use nothing v2.0 lacks (components,
#    patches:).
# 2. Schemas: every rendered object against kubernetes-models,
#    @kubernetes-models/prometheus-operator and @kubernetes-models/cert-manager,
#    unknown fields refused (tests/deploy/schema/validate.js).
# 3. Each overlay: tests/deploy/overlay_check.sh (its header lists what).
# 4. Prometheus: promtool check config (scrape.yaml wrapped), check rules,
#    test rules (alerts_test.yaml); the alerts name only metrics the
#    binaries export, no job, and a runbook_url that is a section of
#    docs/OPERATIONS.md; deploy/monitoring/prometheus-rule.yaml is what
#    deploy/monitoring/prometheus-rule.sh makes of alerts.yaml.
# 5. Negative cases: broken copies of the rendered overlays (production
#    without its PodDisruptionBudget, a password in the arguments, a pod
#    mounting its service-account token, ...), of the objects (misspelled
#    fields) and of the alerts (a job, no runbook) must fail, each with the
#    failure that names the fault.
#
# Prints one line per failure and `deploy: N passed` (or `deploy: N passed,
# N failed`); exits 1 on any failure, 2 on bad usage or missing tools.
# shellcheck disable=SC2016  # jq programs and $(VAR) references are meant literally
set -u
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
	echo "usage: $0 BUILD_DIR" >&2
	exit 2
fi
BUILD=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DEPLOY=${RS_DEPLOY_DIR:-$ROOT/deploy}
OPS=${RS_OPERATIONS_MD:-$ROOT/docs/OPERATIONS.md}
KUBECTL=${RS_KUBECTL:-$BUILD/deploy-tools/kubernetes-client/usr/bin/kubectl}
SCHEMA_MODULES=${RS_SCHEMA_MODULES:-$BUILD/deploy-tools/schema}
PY=/usr/bin/python3
for t in jq promtool node; do
	command -v "$t" >/dev/null || { echo "missing tool: $t (make deps deploy-tools)" >&2; exit 2; }
done
"$PY" -c 'import yaml' 2>/dev/null || { echo "missing: python3-yaml (make deps)" >&2; exit 2; }
[ -x "$KUBECTL" ] || { echo "missing: $KUBECTL (make deploy-tools)" >&2; exit 2; }
[ -d "$SCHEMA_MODULES/node_modules/kubernetes-models" ] || { echo "missing: $SCHEMA_MODULES/node_modules (make deploy-tools)" >&2; exit 2; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/rs-deploy.XXXXXX")
trap '[ -n "${RS_KEEP_TMP:-}" ] || rm -rf "$TMP"' EXIT
pass=0 failed=0
ok() { pass=$((pass + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
# check "DESC" CMD...: CMD succeeds, else a failure (CMD's output shown).
check() {
	local desc=$1 out
	shift
	if out=$("$@" 2>&1); then ok; else bad "$desc${out:+: $out}"; fi
}
# yaml_to_json YAML OUT / json_to_yaml JSON OUT: a YAML stream <-> a JSON array.
yaml_to_json() { "$PY" -c 'import json, sys, yaml; json.dump([d for d in yaml.safe_load_all(open(sys.argv[1])) if d is not None], open(sys.argv[2], "w"))' "$1" "$2"; }
json_to_yaml() { "$PY" -c 'import json, sys, yaml; yaml.safe_dump_all(json.load(open(sys.argv[1])), open(sys.argv[2], "w"), sort_keys=False)' "$1" "$2"; }

# --- 1. render ------------------------------------------------------------------------
check "kubectl is 1.20 (kustomize v2.0, Debian 12's kubernetes-client): $KUBECTL" \
	sh -c '"$1" version --client 2>&1 | grep -q "GitVersion:\"v1\.20\."' sh "$KUBECTL"
TARGETS="overlays/single-node overlays/production monitoring"
# render DIR NAME: $TMP/NAME.yaml and .json, the objects of deploy/DIR.
render() {
	"$KUBECTL" kustomize "$DEPLOY/$1" >"$TMP/$2.yaml" && yaml_to_json "$TMP/$2.yaml" "$TMP/$2.json" &&
		jq -e 'length > 0' "$TMP/$2.json" >/dev/null
}
for t in $TARGETS; do
	check "kubectl kustomize deploy/$t renders objects" render "$t" "${t##*/}"
	[ -s "$TMP/${t##*/}.json" ] || echo '[]' >"$TMP/${t##*/}.json"
done
# What kustomize v2.0 reads: the base under bases:, no components, no
# patches: (patchesStrategicMerge and patchesJson6902 instead).
for k in "$DEPLOY"/base/kustomization.yaml "$DEPLOY"/monitoring/kustomization.yaml "$DEPLOY"/overlays/*/kustomization.yaml; do
	rel=${k#"$DEPLOY"/}
	check "$rel: no components, no patches: (kustomize v2.0 knows neither)" \
		"$PY" -c 'import sys, yaml; d = yaml.safe_load(open(sys.argv[1])); sys.exit(1 if {"components", "patches"} & set(d) else 0)' "$k"
	case $rel in overlays/*)
		check "$rel names ../../base under bases:" \
			"$PY" -c 'import sys, yaml; d = yaml.safe_load(open(sys.argv[1])); sys.exit(0 if "../../base" in (d.get("bases") or []) and "../../base" not in (d.get("resources") or []) else 1)' "$k"
		;;
	esac
done

# --- 2. schemas: unknown fields refused ---------------------------------------------------
# validate FILE.json: each object's line from validate.js counts.
validate() {
	local out line
	out=$(node "$HERE/schema/validate.js" "$SCHEMA_MODULES" "$1" 2>&1)
	while IFS= read -r line; do
		case $line in
		"ok "*) ok ;;
		*) bad "schema ($(basename "$1" .json)): $line" ;;
		esac
	done <<<"$out"
}
for t in $TARGETS; do
	validate "$TMP/${t##*/}.json"
done

# --- 3. each overlay ------------------------------------------------------------------------
# overlay_check.sh's counts join ours, its failure lines named by overlay.
for n in single-node production; do
	"$HERE/overlay_check.sh" "$BUILD" "$n" "$TMP/$n.yaml" >"$TMP/$n.out" 2>&1
	rc=$?
	n_pass=$(sed -n 's/^overlay .*: \([0-9]*\) passed.*/\1/p' "$TMP/$n.out" | tail -n 1)
	n_fail=$(sed -n 's/^overlay .*, \([0-9]*\) failed$/\1/p' "$TMP/$n.out" | tail -n 1)
	pass=$((pass + ${n_pass:-0}))
	failed=$((failed + ${n_fail:-0}))
	grep '^FAIL' "$TMP/$n.out" | sed "s/^FAIL: /FAIL: overlay $n: /"
	if [ $rc -ne 0 ] && [ -z "$n_fail" ]; then bad "overlay_check.sh $n exited $rc: $(tail -n 3 "$TMP/$n.out")"; fi
done

# --- 4. Prometheus ------------------------------------------------------------------------
P=$DEPLOY/prometheus
scrape_ok() { yaml_to_json "$P/scrape.yaml" "$TMP/scrape.json" && jq -e '.[0].scrape_configs | length > 0' "$TMP/scrape.json" >/dev/null; }
check "prometheus/scrape.yaml parses, with scrape_configs" scrape_ok
# A fragment (scrape_configs only) is wrapped into a whole config with the rules.
jq '.[0] + {global: {scrape_interval: "15s"}, rule_files: ["alerts.yaml"]}' "$TMP/scrape.json" >"$TMP/prometheus.yml" 2>/dev/null
cp "$P/alerts.yaml" "$TMP/alerts.yaml" 2>/dev/null
# Debian's promtool is built without Kubernetes service discovery ("field
# kubernetes_sd_configs not found"): then the config is checked with each
# kubernetes_sd_configs block replaced by a static target (everything else,
# relabelling included, checked by promtool), and the blocks themselves
# with jq: role pod, a namespace list, no other keys than Prometheus knows.
promtool_config() {
	local out
	out=$(promtool check config "$TMP/prometheus.yml" 2>&1) && return 0
	if grep -q 'field kubernetes_sd_configs not found' <<<"$out"; then
		jq '.scrape_configs |= map(if has("kubernetes_sd_configs") then del(.kubernetes_sd_configs) + {static_configs: [{targets: ["127.0.0.1:9100"]}]} else . end)' \
			"$TMP/prometheus.yml" >"$TMP/prometheus-static.yml" || return 1
		promtool check config "$TMP/prometheus-static.yml" && return 0
	fi
	echo "$out"
	return 1
}
check "promtool check config (scrape.yaml wrapped, alerts.yaml as rule file)" promtool_config
check "scrape.yaml: kubernetes_sd_configs are role pod in listed namespaces, known keys only" \
	jq -e '[.[0].scrape_configs[] | .kubernetes_sd_configs // empty | .[]] |
		length > 0 and all(.[]; .role == "pod" and (.namespaces.names | length > 0) and
		(keys - ["role", "namespaces", "selectors", "api_server", "kubeconfig_file", "attach_metadata", "follow_redirects", "enable_http2", "tls_config", "authorization", "oauth2", "proxy_url"] | length == 0))' "$TMP/scrape.json"
check "promtool check rules prometheus/alerts.yaml" promtool check rules "$P/alerts.yaml"
check "promtool test rules prometheus/alerts_test.yaml" promtool test rules "$P/alerts_test.yaml"
check "deploy/monitoring/prometheus-rule.yaml is prometheus-rule.sh's output from alerts.yaml (make prometheus-rule)" \
	sh -c '"$1/monitoring/prometheus-rule.sh" "$1/prometheus/alerts.yaml" | cmp - "$1/monitoring/prometheus-rule.yaml"' sh "$DEPLOY"
# The runbooks: docs/OPERATIONS.md's headings as GitHub anchors them
# (lower case, punctuation but - and _ dropped, spaces to -).
"$PY" -c '
import re, sys
for line in open(sys.argv[1]):
    m = re.match(r"#{1,6}\s+(.*?)\s*$", line)
    if m:
        print(re.sub(r"\s", "-", re.sub(r"[^\w\- ]", "", m.group(1).lower())))' "$OPS" >"$TMP/anchors" 2>/dev/null
RUNBOOK_BASE=https://github.com/ringsteer/ringsteer/blob/main/docs/OPERATIONS.md#
# alerts_ok ALERTS.yaml: each rule is job-independent, names exported
# metrics only, and links its runbook (one failure line per fault).
alerts_ok() {
	local a=$1 json=$TMP/alerts-check.json
	"$PY" -c 'import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), open(sys.argv[2], "w"))' "$a" "$json" || return
	check "alerts: at least one rule" jq -e '[.groups[].rules[]] | length > 0' "$json"
	while IFS=$'\t' read -r alert expr url; do
		check "alert $alert names no job (scrape configs and PodMonitors name jobs differently)" \
			sh -c '! grep -qE "(^|[^a-z_])job *(=|!=|=~|!~) *\"" <<EOF
$1
EOF' sh "$expr"
		check "alert $alert has a runbook_url in docs/OPERATIONS.md ($url)" \
			sh -c 'case $1 in "$2"*) grep -qxF -- "${1#"$2"}" "$3" ;; *) exit 1 ;; esac' sh "$url" "$RUNBOOK_BASE" "$TMP/anchors"
		while read -r m; do
			check "alert $alert: $m is exported by the gateway or the agent" \
				grep -rqw "$m" "$ROOT/user/gateway/metrics.c" "$ROOT/user/agent/metrics.c"
		done < <(grep -o 'ringsteer_[a-z_]*' <<<"$expr" | sort -u)
	done < <(jq -r '.groups[].rules[] | select(.alert) | [.alert, (.expr | tostring | gsub("\\s+"; " ")), (.annotations.runbook_url // "")] | @tsv' "$json")
}
alerts_ok "$P/alerts.yaml"

# --- 5. negative cases: each fault must fail, with its message ------------------------------
# expect_fail WHAT OUT PATTERN...: OUT (a failed run's output) has a
# failure line matching each PATTERN (grep -E).
expect_fail() {
	local what=$1 out=$2 p
	shift 2
	for p in "$@"; do
		if grep -E '^FAIL' "$out" | grep -qE -- "$p"; then ok; else bad "negative ($what): no failure matching '$p'"; fi
	done
}
# broken NAME JQ: the rendered overlay NAME through JQ, as YAML.
broken() {
	jq "$2" "$TMP/$1.json" >"$TMP/broken-$1.json" && json_to_yaml "$TMP/broken-$1.json" "$TMP/broken-$1.yaml"
}
# Production, each fault in one copy (they touch different objects).
broken production '
	map(select(.kind != "PodDisruptionBudget"))
	| map(select(.metadata.name != "ringsteer-gateway-metrics"))
	| map(if .kind == "Deployment" then
		.spec.template.spec.containers[0].args |= map(if . == "$(RINGSTEER_STORE_URL)" then "postgres://ringsteer:hunter2@pg.example.com/ringsteer" else . end)
		| .spec.template.spec.containers[0].env += [{name: "PGPASSWORD", value: "hunter2"}]
		| del(.spec.template.spec.containers[0].securityContext.runAsNonRoot)
		| del(.spec.template.spec.topologySpreadConstraints)
	  else . end)
	| map(if .kind == "DaemonSet" then
		del(.spec.template.spec.automountServiceAccountToken)
		| .spec.template.spec.containers[0].env |= map(if .name == "PGSSLMODE" then .value = "require" else . end)
		| .spec.template.spec.volumes |= map(if .name == "store" then .secret.defaultMode = 288 else . end)
	  else . end)
	| map(if .kind == "PrometheusRule" then .spec.groups[0].rules[0].expr = "vector(1)" else . end)'
"$HERE/overlay_check.sh" "$BUILD" broken-production "$TMP/broken-production.yaml" >"$TMP/broken-production.out" 2>&1
check "negative (production, broken): overlay_check.sh fails" test $? = 1
expect_fail "production without its PodDisruptionBudget" "$TMP/broken-production.out" 'a PodDisruptionBudget in ringsteer with maxUnavailable 1'
expect_fail "a password in the gateway's arguments" "$TMP/broken-production.out" 'container gateway: no password in its command or args'
expect_fail "PGPASSWORD in the gateway's environment" "$TMP/broken-production.out" 'container gateway: no password in its environment'
expect_fail "the agent pod mounting its service-account token" "$TMP/broken-production.out" 'DaemonSet ringsteer-agent/ringsteer-agent: automountServiceAccountToken false'
expect_fail "a gateway container without runAsNonRoot (not restricted)" "$TMP/broken-production.out" 'namespace ringsteer: enforces baseline.*runAsNonRoot not true'
expect_fail "gateways not spread across nodes" "$TMP/broken-production.out" 'gateways spread across nodes'
expect_fail "the agent's PGSSLMODE require" "$TMP/broken-production.out" 'agent PGSSLMODE is verify-full'
expect_fail "the agent's password file group-readable (0440)" "$TMP/broken-production.out" 'agent PGPASSFILE .* is private'
expect_fail "no NetworkPolicy for the metrics port" "$TMP/broken-production.out" "admit the gateways' metrics port"
expect_fail "a PrometheusRule that differs from alerts.yaml" "$TMP/broken-production.out" 'a PrometheusRule holds'
# Single node: the old checks still bite, and the new ones.
broken single-node '
	map(if .kind == "Namespace" then .metadata.labels["pod-security.kubernetes.io/enforce"] = "restricted" else . end)
	| map(if .kind == "Deployment" then
		.spec.template.spec.terminationGracePeriodSeconds = 20
		| .spec.template.spec.containers[0].args |= map(if . == "/etc/ringsteer/private/secret/secret" then "/etc/ringsteer/secret/secret" else . end) + ["--drain-budgett", "1"]
		| .spec.template.spec.containers[0].volumeMounts += [{name: "secret", mountPath: "/etc/ringsteer/secret", readOnly: true}]
		| .spec.template.spec.volumes |= map(if .name == "tls" then del(.csi.volumeAttributes["csi.cert-manager.io/fs-group"]) else . end)
	  else . end)'
"$HERE/overlay_check.sh" "$BUILD" broken-single-node "$TMP/broken-single-node.yaml" >"$TMP/broken-single-node.out" 2>&1
check "negative (single-node, broken): overlay_check.sh fails" test $? = 1
expect_fail "a grace period shorter than preStop + --drain-budget" "$TMP/broken-single-node.out" 'terminationGracePeriodSeconds \(20 s\)'
expect_fail "a misspelled gateway flag" "$TMP/broken-single-node.out" 'unknown flag --drain-budgett'
expect_fail "a namespace labelled restricted that holds hostPath and privileged pods" "$TMP/broken-single-node.out" 'namespace ringsteer: enforces privileged.*labelled .restricted'
expect_fail "the gateway (uid 65532) reading its Secret volume directly" "$TMP/broken-single-node.out" 'gateway --secret /etc/ringsteer/secret/secret is private'
expect_fail "the TLS csi volume without the gateway's fs-group" "$TMP/broken-single-node.out" 'tls csi fs-group'
# Schemas: misspelled fields in four kinds, and a wrong type.
jq 'map(if .kind == "Deployment" then .spec.template.spec.containers[0].imagePullPolicyy = "Always"
	elif .kind == "PrometheusRule" then .spec.groups[0].rulez = []
	elif .kind == "Issuer" then .spec.caa = {secretName: "x"}
	elif .kind == "NetworkPolicy" then .spec.policyType = ["Ingress"]
	elif .kind == "PodDisruptionBudget" then .spec.maxUnavailable = true
	else . end)' "$TMP/production.json" >"$TMP/broken-schema.json"
node "$HERE/schema/validate.js" "$SCHEMA_MODULES" "$TMP/broken-schema.json" | sed 's/^FAIL /FAIL: /' >"$TMP/broken-schema.out"
check "negative (schemas): validate.js fails" test "${PIPESTATUS[0]}" = 1
expect_fail "a misspelled container field" "$TMP/broken-schema.out" 'Deployment .*unknown field /spec/template/spec/containers/0/imagePullPolicyy'
expect_fail "a misspelled PrometheusRule field" "$TMP/broken-schema.out" 'PrometheusRule .*unknown field /spec/groups/0/rulez'
expect_fail "a misspelled cert-manager Issuer field" "$TMP/broken-schema.out" 'Issuer .*unknown field /spec/caa'
expect_fail "a misspelled NetworkPolicy field" "$TMP/broken-schema.out" 'NetworkPolicy .*unknown field /spec/policyType'
expect_fail "a PodDisruptionBudget's maxUnavailable of the wrong type" "$TMP/broken-schema.out" 'PodDisruptionBudget .*maxUnavailable'
# Alerts: a rule naming a job, and one without a runbook.
sed -e '0,/absent(ringsteer_gateway_supervisors)/s//absent(up{job="ringsteer-gateway"})/' \
	-e '0,/^          runbook_url: .*ringsteerstoredown"$/{/^          runbook_url: .*ringsteerstoredown"$/d}' "$P/alerts.yaml" >"$TMP/broken-alerts.yaml"
# Its passes and failures are the broken file's, not ours: counts restored.
counts="$pass $failed"
alerts_ok "$TMP/broken-alerts.yaml" >"$TMP/broken-alerts.out"
read -r pass failed <<<"$counts"
expect_fail "an alert naming a job" "$TMP/broken-alerts.out" 'alert RingsteerGatewaysAbsent names no job'
expect_fail "an alert without a runbook" "$TMP/broken-alerts.out" 'alert RingsteerStoreDown has a runbook_url'

if [ "$failed" -gt 0 ]; then
	echo "deploy: $pass passed, $failed failed"
	exit 1
fi
echo "deploy: $pass passed"
