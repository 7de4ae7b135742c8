#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tls_resume.sh [BUILD_DIR [N]] - what shared session-ticket keys save on a
# handoff (issue 27, part 5; bench/tls_resume.c): N attaches of each of
# three variants, taking turns: a full handshake at gw-1 (no
# --tls-ticket-keys: today's attach, the baseline), a full handshake at
# gw-4 (tickets on: what the ticket after the handshake costs), and at gw-3
# a resumption of the session the same member's untimed attach at gw-2 just
# left (gw-2, gw-3 and gw-4 share a keyring: a supervisor handed off from
# gw-2 to gw-3).  RS_BENCH_MTLS=1: the gateways require client
# certificates (--tls-ca) and each member presents its own (mTLS, as the
# deploy/ manifests run); else server authentication only.  The machine's load is
# printed before and after: the figures are only as quiet as it is.  Root
# only.
set -u
export RS_BUILD=${1:-build}
attaches=${2:-300}
members=9
. "$(dirname "$0")/../tests/cluster/lib.sh"

[ -x "$RS_BUILD/bench/tls_resume" ] ||
	{ echo "missing binary: $RS_BUILD/bench/tls_resume (make $RS_BUILD/bench/tls_resume)" >&2; exit 1; }
mtls=${RS_BENCH_MTLS:-0}
export RS_TLS=1 RS_TLS_MTLS=0
# Certificates naming both gateways of the pair: a session is offered only
# to a name its certificate names.
rs_gw_transport_args() {
	rs_tls_issue "gw-$1" "DNS:gw-2,DNS:gw-3,DNS:gw-$1,DNS:$RS_TLS_NAME"
	echo "--tls-cert $RS_DIR/tls/gw-$1.crt --tls-key $RS_DIR/tls/gw-$1.key"
	[ "$mtls" != 1 ] || echo "--tls-ca $RS_DIR/tls/ca.crt"
	[ "$1" = 1 ] || echo "--tls-ticket-keys $RS_DIR/tickets"
}
cluster_up --gateways 0
(umask 077 && printf 'ringsteer-keyring v1\nk1 hex:%s\n' "$(head -c 32 /dev/urandom | od -An -v -tx1 | tr -d ' \n')" \
	>"$RS_DIR/tickets")
for n in 1 2 3 4; do gw_start "$n" --no-placement; done
log_has "$(gw_log 1)" 'event=tls_loaded .*ticket_key=off' || fail "gw-1 has tickets on"
log_has "$(gw_log 3)" 'event=tls_loaded .*ticket_key=k1' || fail "gw-3 has no ticket key"
if [ "$mtls" = 1 ]; then
	for ((k = 1; k <= members; k++)); do rs_tls_issue "bench-$k" "DNS:bench-$k"; done
fi
peer() { echo "gw-$1@$(gw_addr "$1"):$RS_GW_PEER_PORT"; }
echo "load before: $(uptime)"
nsenter --net="/run/netns/$RS_NS" "$RS_BUILD/bench/tls_resume" "$RS_SECRET" "$RS_DIR/tls" "$members" \
	"$attaches" "$(peer 1)" "$(peer 4)" "$(peer 2)" "$(peer 3)" $([ "$mtls" != 1 ] || echo mtls) ||
	fail "tls_resume failed"
echo "load after: $(uptime)"
for n in 1 2 3 4; do
	echo "gw-$n handshakes: full $(metric "$n" ringsteer_gateway_tls_handshakes_total 'kind="full"')," \
		"resumed $(metric "$n" ringsteer_gateway_tls_handshakes_total 'kind="resumed"')"
done
