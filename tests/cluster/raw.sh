#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cluster/raw.sh - one raw TCP exchange, for bad-input tests.  Run it
# inside the cluster's namespace (lib.sh's raw_send does).  Connects to
# ADDR:PORT, writes the bytes given in hex (may be empty: then it says nothing),
# then reads until the peer closes or WAIT_S seconds pass.  Prints one line:
#   closed HEX...   the peer closed (FIN) after sending HEX (maybe nothing)
#   reset HEX...    the connection was reset after HEX
#   open HEX...     still open after WAIT_S seconds
#   refused         could not connect
# usage: raw.sh ADDR:PORT HEX [WAIT_S]
ep=$1 hex=${2:-} wait=${3:-5}
# The peer may close while we write: a failed write is an answer, not a death.
trap '' PIPE
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The bytes go out in one write (bash's printf may write piecemeal).
# shellcheck disable=SC2059
printf "$(printf '%s' "$hex" | sed 's/../\\x&/g')" >"$tmp/bytes"
{ exec 3<>"/dev/tcp/${ep%:*}/${ep##*:}"; } 2>/dev/null || { echo refused; exit 0; }
[ -s "$tmp/bytes" ] && cat "$tmp/bytes" >&3 2>/dev/null
err=$tmp/err
out=$(timeout "$wait" od -An -v -tx1 <&3 2>"$err")
rc=$?
exec 3<&-
bytes=$(echo $out) # one line, single spaces
if [ "$rc" -eq 124 ]; then
	echo "open $bytes"
elif [ "$rc" -eq 0 ] && ! grep -qi reset "$err"; then
	echo "closed $bytes"
else
	echo "reset $bytes"
fi
