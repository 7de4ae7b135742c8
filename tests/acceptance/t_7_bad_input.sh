#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance 7: bad input - garbage bytes, an oversized frame, a bad token, a
# connection that never says HELLO: each gets REJECT or a close, a log line
# and a counter; the attached supervisors are untouched.
#
# Each bad connection goes straight to gw-1's listen endpoint (gw-1 runs with
# --hello-timeout 500).  For each: the reply is a close or a reset (never left
# open), and if any bytes came back they are a REJECT frame with the expected
# code; gw-1's log gains an `event=reject reason=R` line and
# ringsteer_gateway_rejects_total{reason="R"} grows by exactly 1.  Cases:
#   garbage   an HTTP request (its first 4 bytes read as a length over the limit)  bad_frame
#   garbage   a well-sized frame of an unknown type (200)                          bad_frame
#   oversized a header announcing 65533 bytes (65537 with the length field > 64 KiB) bad_frame
#   version   a HELLO of version 2                                                bad_version
#   token     a HELLO posing as attached sup-1, higher epoch, STAY, token "forged" bad_token
#   token     the same with a well-formed token signed by another secret          bad_token
#   silent    connects and says nothing                                           hello_timeout
# Afterwards sup-1 and sup-2 have the same gateway, epoch and instance as
# before, logged nothing new, and gw-1 is still ready.
. "$(dirname "$0")/../cluster/lib.sh"

RS_GW_ARGS="--hello-timeout 500"
cluster_up --gateways 2
sups_start 1 2
await "both supervisors attached" 15 all_attached 1 2
declare -A before
for m in 1 2; do
	before[$m]="$(where "$m") $(session "$m" epoch) $(session "$m" instance_id) $(wc -l <"$(sup_log "$m")")"
done
ep=$(gw_addr 1):$RS_GW_LISTEN_PORT
glog=$(gw_log 1)

other_secret="$RS_DIR/other-secret"
(umask 077 && head -c 32 /dev/urandom | od -An -v -tx1 | tr -d ' \n' >"$other_secret") # 0600, or it is refused
forged_ok=$(sup_token 1 3600 "$other_secret") || fail "could not mint a token with another secret"
big_epoch=$(($(session 1 epoch) + 1000000))

# case NAME REASON CODE HEX [WAIT_S]
case_() {
	local name=$1 reason=$2 code=$3 hex=$4 wait=${5:-3}
	local c0 l0 reply t0 t1
	c0=$(metric 1 ringsteer_gateway_rejects_total "reason=\"$reason\"")
	l0=$(log_count "$glog" "event=reject .*reason=$reason( |$)")
	t0=$(rs_now_ms)
	reply=$(raw_send "$ep" "$hex" "$wait")
	t1=$(rs_now_ms)
	echo "$name: reply [$reply] after $((t1 - t0)) ms"
	case $reply in
	closed* | reset*) ;;
	*) fail "$name: expected REJECT or a close, got [$reply]" ;;
	esac
	local words
	read -ra words <<<"$reply"
	if [ ${#words[@]} -gt 1 ]; then
		[ "$(reply_type "$reply")" = 4 ] || fail "$name: the reply is not a REJECT frame: [$reply]"
		[ "$(reply_reject_code "$reply")" = "$code" ] || fail "$name: REJECT code $(reply_reject_code "$reply"), want $code"
	fi
	counted() { metric_is 1 ringsteer_gateway_rejects_total $((c0 + 1)) "reason=\"$reason\""; }
	await "$name: rejects_total{reason=\"$reason\"} = $((c0 + 1))" 3 counted
	logged() { [ "$(log_count "$glog" "event=reject .*reason=$reason( |$)")" -gt "$l0" ]; }
	await "$name: gw-1 logs event=reject reason=$reason" 3 logged
	echo "$name: $(grep -E "event=reject .*reason=$reason( |$)" "$glog" | tail -n 1 | sed 's/^ts=[^ ]* //')"
}

case_ "garbage (HTTP)" bad_frame 1 "$(hex_bytes $'GET / HTTP/1.1\r\nHost: gw\r\n\r\n')"
case_ "garbage (unknown type)" bad_frame 1 "$(frame_hex 200 "deadbeef0102")"
case_ "oversized frame" bad_frame 1 "$(hex_u32 65533)0101$(hex_str sup-1)"
case_ "version 2" bad_version 2 "$(frame_hex 1 "$(hex_str sup-1)$(hex_str x)$(hex_u64 1)00$(hex_str t)$(hex_u32 1)" 2)"
case_ "forged token as sup-1" bad_token 3 "$(hello_hex sup-1 forged "$big_epoch" 1 forged 1)"
case_ "token of another secret as sup-1" bad_token 3 "$(hello_hex sup-1 forged2 "$((big_epoch + 1))" 1 "$forged_ok" 1)"
case_ "no HELLO" hello_timeout 5 "" 3

for m in 1 2; do
	now="$(where "$m") $(session "$m" epoch) $(session "$m" instance_id) $(wc -l <"$(sup_log "$m")")"
	[ "$now" = "${before[$m]}" ] || fail "sup-$m touched: before [${before[$m]}] now [$now]; log: $(tail -n 5 "$(sup_log "$m")")"
	sup_alive "$m" || fail "sup-$m died"
done
gw_ready 1 || fail "gw-1 not ready after the bad input"
echo "t_7: every bad input rejected and counted; sup-1 and sup-2 untouched"
