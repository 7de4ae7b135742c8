#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tls_cost.sh [BUILD_DIR [N]] - what TLS costs on the attach path, as a
# ratio against plaintext in the same run (bench/tls_cost.c): N attaches
# (connect, handshake, HELLO, ACCEPT) on each of three gateways, taking
# turns: gw-1 over TLS 1.3, gw-2 in plaintext (--insecure), gw-3 over TLS
# with client certificates (mTLS).  Each is dialled at its peer endpoint
# and runs with --no-placement, so every HELLO is accepted where it lands
# (no redirect in any variant).  The members are bench-1..bench-8, each
# with a client certificate naming it for mTLS.  Root only.
set -u
export RS_BUILD=${1:-build}
attaches=${2:-300}
members=8
. "$(dirname "$0")/../tests/cluster/lib.sh"

[ -x "$RS_BUILD/bench/tls_cost" ] || { echo "missing binary: $RS_BUILD/bench/tls_cost (make $RS_BUILD/bench/tls_cost)" >&2; exit 1; }
export RS_TLS=1 RS_TLS_MTLS=0
cluster_up --gateways 0
# lib.sh reads RS_TLS and RS_TLS_MTLS when it builds each gateway's
# transport flags, so a prefix on one gw_start changes that gateway alone.
gw_start 1 --no-placement
RS_TLS=0 gw_start 2 --no-placement
RS_TLS_MTLS=1 gw_start 3 --no-placement
log_has "$(gw_log 1)" 'event=tls_loaded .*client_ca=none' || fail "gw-1 is not on TLS without client certificates"
log_has "$(gw_log 2)" 'event=insecure' || fail "gw-2 is not in plaintext"
if ! log_has "$(gw_log 3)" 'event=tls_loaded ' || log_has "$(gw_log 3)" 'client_ca=none'; then
	fail "gw-3 is not on mTLS"
fi
for ((k = 1; k <= members; k++)); do
	rs_tls_issue "bench-$k" "DNS:bench-$k"
done
peer() { echo "gw-$1@$(gw_addr "$1"):$RS_GW_PEER_PORT"; }
nsenter --net="/run/netns/$RS_NS" "$RS_BUILD/bench/tls_cost" "$RS_SECRET" "$RS_DIR/tls" "$members" "$attaches" \
	"$(peer 2)" "$(peer 1)" "$(peer 3)" || fail "tls_cost failed"

# The handshake's own floor (issue 27): the public-key operations of one
# TLS 1.3 handshake with the test PKI's P-256 certificates and X25519, from
# `openssl speed` on this machine.  The gateway signs once and does X25519
# twice (key share, secret); the client verifies twice (CertificateVerify,
# the leaf's signature by the CA) and does X25519 twice.  The 10,000 storm
# of bench/scale.sh (tls-*) runs client and gateways on the same cores, so
# its floor is 10,000 x both sides over the cores.
speed=$(openssl speed -seconds 1 ecdsap256 ecdhx25519 2>/dev/null)
sign=$(awk '/ecdsa \(nistp256\)/ { print $(NF - 1) }' <<<"$speed")
verify=$(awk '/ecdsa \(nistp256\)/ { print $NF }' <<<"$speed")
x25519=$(awk '/ecdh \(X25519\)/ { print $NF }' <<<"$speed")
cores=$(nproc)
if [ -n "$sign" ] && [ -n "$verify" ] && [ -n "$x25519" ]; then
	awk -v s="$sign" -v v="$verify" -v x="$x25519" -v c="$cores" 'BEGIN {
		gw = 1e6 / s + 2e6 / x; cl = 2e6 / v + 2e6 / x
		printf "handshake floor (openssl speed): P-256 sign %.0f/s, verify %.0f/s, X25519 %.0f/s\n", s, v, x
		printf "  per handshake: gateway %.0f us, client %.0f us of CPU\n", gw, cl
		printf "  10,000 handshakes, both sides on %d cores: %.2f s\n", c, 10000 * (gw + cl) / 1e6 / c
	}'
else
	echo "handshake floor: openssl speed gave no ecdsap256/ecdhx25519 figures"
fi
