#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make_certs.sh - a throwaway PKI for the TLS tests, made with the openssl
# CLI (EC P-256 keys: fast to generate).
#
#   make_certs.sh DIR
#       creates DIR/ca.{crt,key} and DIR/other-ca.{crt,key} (an unrelated CA,
#       for "signed by someone else") unless they are already there.
#   make_certs.sh DIR issue NAME SAN [CA [DAYS]]
#       writes DIR/NAME.{crt,key}: CN=NAME, subjectAltName SAN (an openssl
#       string such as "DNS:gw-1,IP:127.0.0.1"; "" for none, so that the CN
#       is what names it), signed by DIR/CA.crt (default "ca"), valid for
#       DAYS days (default 30; 0 makes a certificate that has already
#       expired: its notAfter is the moment it was issued).  Leaves are
#       CA:FALSE with extendedKeyUsage serverAuth,clientAuth.
#
# Idempotent: CAs are made once and kept; issuing NAME again replaces
# NAME.{crt,key} whole (each file is written aside and renamed into place).
# Quiet unless something fails, when openssl's own message is shown.
set -euo pipefail

usage() {
	echo "usage: $0 DIR | $0 DIR issue NAME SAN [CA [DAYS]]" >&2
	exit 2
}

# run CMD...: runs quietly; on failure shows what openssl said.
run() {
	local out
	if ! out=$("$@" 2>&1); then
		printf '%s\n' "$out" >&2
		echo "make_certs.sh: failed: $*" >&2
		exit 1
	fi
}

# make_ca NAME: DIR/NAME.{crt,key}, a self-signed CA, unless present.
make_ca() {
	local name=$1
	[ -s "$dir/$name.crt" ] && [ -s "$dir/$name.key" ] && return 0
	run openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-keyout "$tmp/$name.key" -out "$tmp/$name.crt" -days 3650 -subj "/CN=ringsteer test $name" \
		-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
	mv "$tmp/$name.key" "$dir/$name.key"
	mv "$tmp/$name.crt" "$dir/$name.crt"
}

# issue NAME SAN CA DAYS: DIR/NAME.{crt,key} signed by DIR/CA.
issue() {
	local name=$1 san=$2 ca=$3 days=$4
	[[ $name =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || { echo "make_certs.sh: bad NAME: $name" >&2; exit 2; }
	case $name in
	ca | other-ca | "$ca") echo "make_certs.sh: NAME $name would replace a CA" >&2; exit 2 ;;
	esac
	[[ $days =~ ^[0-9]+$ ]] || { echo "make_certs.sh: bad DAYS: $days" >&2; exit 2; }
	if [ ! -s "$dir/$ca.crt" ] || [ ! -s "$dir/$ca.key" ]; then
		echo "make_certs.sh: no CA $dir/$ca" >&2
		exit 1
	fi
	local ext=(-addext basicConstraints=critical,CA:FALSE -addext keyUsage=critical,digitalSignature
		-addext extendedKeyUsage=serverAuth,clientAuth -addext subjectKeyIdentifier=hash
		-addext authorityKeyIdentifier=keyid)
	[ -z "$san" ] || ext+=(-addext "subjectAltName=$san")
	# One openssl run (req -x509 -CA, OpenSSL 3): key, certificate and
	# signature at once; tests issue one per gateway and supervisor, and
	# a process per step made that the slow part of a TLS cluster's start.
	# A random 64-bit serial: no .srl file beside the CA, and no two
	# certificates from one CA share a serial in practice.
	local serial
	serial="0x$(printf '%04x%04x%04x%04x' $((RANDOM | 0x4000)) $RANDOM $RANDOM $RANDOM)"
	if [ "$days" -gt 0 ]; then
		run openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
			-keyout "$tmp/$name.key" -out "$tmp/$name.crt" -subj "/CN=$name" \
			-CA "$dir/$ca.crt" -CAkey "$dir/$ca.key" -days "$days" -sha256 -set_serial "$serial" "${ext[@]}"
	else
		# Already expired (notAfter = now): req refuses -days 0, x509 does not.
		{
			echo "basicConstraints=critical,CA:FALSE"
			echo "keyUsage=critical,digitalSignature"
			echo "extendedKeyUsage=serverAuth,clientAuth"
			echo "subjectKeyIdentifier=hash"
			echo "authorityKeyIdentifier=keyid"
			[ -z "$san" ] || echo "subjectAltName=$san"
		} >"$tmp/ext"
		run openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
			-keyout "$tmp/$name.key" -out "$tmp/$name.csr" -subj "/CN=$name"
		run openssl x509 -req -in "$tmp/$name.csr" -CA "$dir/$ca.crt" -CAkey "$dir/$ca.key" \
			-set_serial "$serial" -days 0 -sha256 -extfile "$tmp/ext" -out "$tmp/$name.crt"
	fi
	mv "$tmp/$name.key" "$dir/$name.key"
	mv "$tmp/$name.crt" "$dir/$name.crt"
}

[ $# -ge 1 ] || usage
dir=$1
shift
if [ $# -gt 0 ] && { [ "$1" != issue ] || [ $# -lt 3 ] || [ $# -gt 5 ]; }; then
	usage
fi
command -v openssl >/dev/null || { echo "make_certs.sh: the openssl command is not installed" >&2; exit 1; }
mkdir -p "$dir"
# Scratch inside DIR, so that the renames stay on one filesystem.
tmp=$(mktemp -d "$dir/.make_certs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
umask 022 # certificates world-readable; openssl writes keys 0600 itself

make_ca ca
make_ca other-ca
[ $# -eq 0 ] || issue "$2" "$3" "${4:-ca}" "${5:-30}"
