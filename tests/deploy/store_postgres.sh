# shellcheck shell=bash disable=SC2016,SC2154  # sourced by overlay_check.sh: its variables; jq programs in single quotes
# SPDX-License-Identifier: Apache-2.0
# tests/deploy/store_postgres.sh - sourced by overlay_check.sh when the
# gateways' store is PostgreSQL (deploy/overlays/production): how the
# gateways and the agent reach it.  The URL (no password) from a Secret or
# ConfigMap key through $(VAR), the same key for both; the password in
# libpq's password file (PGPASSFILE), private to the process; TLS with the
# server's certificate verified against a mounted CA and the URL's host
# (PGSSLMODE verify-full, PGSSLROOTCERT).  Uses overlay_check.sh's check,
# GW, AG, gw_store and volume helpers.
# url_source JSON STORE: where STORE's value comes from: "secret NAME KEY",
# "configMap NAME KEY", or "literal".
url_source() {
	if [[ $2 =~ ^\$\(([A-Za-z_][A-Za-z0-9_]*)\)$ ]]; then
		jq -r --arg n "${BASH_REMATCH[1]}" 'first(.c.env[]? | select(.name == $n) | .valueFrom |
			if .secretKeyRef then "secret \(.secretKeyRef.name) \(.secretKeyRef.key)"
			elif .configMapKeyRef then "configMap \(.configMapKeyRef.name) \(.configMapKeyRef.key)" else "none" end) // "none"' <<<"$1"
	else
		echo literal
	fi
}
# env_value JSON NAME: the literal value of the container's env NAME.
env_value() { jq -r --arg n "$2" 'first(.c.env[]? | select(.name == $n) | .value // empty) // empty' <<<"$1"; }
gw_src=$(url_source "$GW" "$gw_store")
check "gateway --store $gw_store comes from a Secret or ConfigMap key (the site's URL, out of the manifests), not '$gw_src'" \
	grep -qE '^(secret|configMap) ' <<<"$gw_src"
check "agent reads the store URL from the same key ($gw_src)" test "$(url_source "$AG" "${A[--store]:-}")" = "$gw_src"
for who in gateway agent; do
	if [ $who = gateway ]; then json=$GW; else json=$AG; fi
	passfile=$(env_value "$json" PGPASSFILE)
	check "$who PGPASSFILE is set (libpq's password file: the password is never an argument)" test -n "$passfile"
	check "$who PGPASSFILE ${passfile:-(unset)} is private: readable by the $who (uid $(uid_of "$json")) only" \
		private_file "$json" "${passfile:-/nonexistent}"
	check "$who PGSSLMODE is verify-full (TLS; the server's certificate from PGSSLROOTCERT's CA, naming the URL's host)" \
		test "$(env_value "$json" PGSSLMODE)" = verify-full
	rootcert=$(env_value "$json" PGSSLROOTCERT)
	check "$who PGSSLROOTCERT ${rootcert:-(unset)} is a file a mounted volume provides" provides "$json" "${rootcert:-/nonexistent}"
done
