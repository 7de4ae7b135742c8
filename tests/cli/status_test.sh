#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# status_test.sh - `ringsteerctl status`, `place --store` and `ring --store`
# against stores this test fills with the sqlite3 command-line tool: the
# status table and its key=value footer (even, uneven, draining gateways
# out of G, dead gateways not shown), --json read with jq, --watch on a
# pipe (frames separated by blank lines, ended by SIGTERM, surviving a store
# that goes away and comes back), place --store agreeing with place
# --gateways over the same loads (the member's own row left out, draining
# gateways never chosen), ring --store shares; then --json and --help for
# every subcommand, bad arguments (exit 2, one line on stderr) and missing
# stores (exit 1, naming the URL, nothing created).
# usage: status_test.sh PATH/TO/ringsteerctl
set -u
ctl=$1
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
need_tools status sqlite3 jq

dir=$(scratch_dir status)
watcher=
cleanup() {
	[ -n "$watcher" ] && kill "$watcher" 2>/dev/null
	remove_dir "$dir"
}
trap cleanup EXIT

now=$(date +%s%3N)
live=$((now + 3600000)) # a heartbeat an hour ahead stays live however slow the test
dead=$((now - 60000))   # past the CLI's default 15 s TTL

# new_store NAME: an empty store, its schema made by `ringsteerctl init`
# (as a gateway makes it); prints its path.
new_store() {
	local db=$dir/$1.db
	"$ctl" init --store "sqlite:$db" >/dev/null || return 1
	printf '%s\n' "$db"
}

# fill DB GATEWAY:STATE:HEARTBEAT:COUNT...: COUNT live sessions on each
# gateway, members m-GATEWAY-K with K sandboxes (K = 1..COUNT), every
# third one a pending reservation.
fill() {
	local db=$1 spec id state hb count k
	shift
	for spec in "$@"; do
		IFS=: read -r id state hb count <<<"$spec"
		printf "INSERT INTO gateways (id, peer, state, heartbeat_ms) VALUES ('%s', '10.0.0.1:7443', %d, %s);\n" \
			"$id" "$state" "$hb"
		for ((k = 1; k <= count; k++)); do
			printf "INSERT INTO sessions VALUES ('m-%s-%d', 'i', 1, '%s', %d, '', %s, %s, %d);\n" \
				"$id" "$k" "$id" "$k" "$live" "$live" $((k % 3 ? 1 : 0))
		done
	done | sqlite3 "$db"
	# What the gateways keep with every session write (schema version 2).
	sqlite3 "$db" "UPDATE gateways SET attached = (SELECT COUNT(*) FROM sessions s
		WHERE s.gateway_id = gateways.id AND s.state = 1)"
}

footer() { tail -n 1; }
rows() { awk 'NR > 1 && !/^supervisors=/ { print $1, $2, $3, $4, $5 }' | paste -sd'|' -; }

# ---- status: even, uneven, draining, dead ----------------------------------
even=$(new_store even)
fill "$even" gw-a:0:$live:4 gw-b:0:$live:4 gw-c:0:$live:4
out=$("$ctl" status --store "sqlite:$even")
expect_eq "status rc" 0 $?
expect_eq "status header" "ID STATE SUPERVISORS SANDBOXES BUSIEST" "$(printf '%s\n' "$out" | head -1 | tr -s ' ')"
expect_eq "status rows" "gw-a serving 4 10 4|gw-b serving 4 10 4|gw-c serving 4 10 4" "$(printf '%s\n' "$out" | rows)"
expect_eq "status footer even" "supervisors=12  serving=3  cap=4  max=4  min=4  max-min=0  verdict=even" \
	"$(printf '%s\n' "$out" | footer)"
# The largest count fills --width columns of full blocks.
expect_eq "bar width 40" "$(printf '█%.0s' $(seq 40))" "$(printf '%s\n' "$out" | awk 'NR == 2 { print $6 }')"
expect_eq "bar width 7" "$(printf '█%.0s' $(seq 7))" \
	"$("$ctl" status --store "sqlite:$even" --width 7 | awk 'NR == 2 { print $6 }')"

uneven=$(new_store uneven)
fill "$uneven" gw-a:0:$live:6 gw-b:0:$live:3 gw-c:0:$live:3 gw-d:1:$live:2 gw-e:0:$dead:5
out=$("$ctl" status --store "sqlite:$uneven")
expect_eq "uneven rows (draining shown, dead not)" \
	"gw-a serving 6 21 6|gw-b serving 3 6 3|gw-c serving 3 6 3|gw-d draining 2 3 2" "$(printf '%s\n' "$out" | rows)"
# S counts the draining gateway's 2 (the rule's N), G does not count it.
expect_eq "uneven footer" "supervisors=14  serving=3  cap=5  max=6  min=3  max-min=3  verdict=uneven" \
	"$(printf '%s\n' "$out" | footer)"
expect_eq "uneven greppable" "max-min=3 verdict=uneven" \
	"$(printf '%s\n' "$out" | grep -o 'max-min=[0-9]*\|verdict=[a-z]*' | paste -sd' ' -)"
# Half the largest count: half the bar.
expect_eq "half bar" "$(printf '█%.0s' $(seq 20))" "$(printf '%s\n' "$out" | awk '$1 == "gw-b" { print $6 }')"

json=$("$ctl" status --store "sqlite:$uneven" --json)
expect_json_valid "status json valid" "$json"
expect_eq "status json summary" '{"supervisors":14,"serving_gateways":3,"cap":5,"max":6,"min":3,"spread":3,"even":false,"verdict":"uneven"}' \
	"$(printf '%s' "$json" | jq -c 'del(.gateways)')"
expect_eq "status json gateway" '{"id":"gw-a","state":"serving","live":true,"supervisors":6,"sandboxes":21,"busiest_sandboxes":6}' \
	"$(printf '%s' "$json" | jq -c '.gateways[0]')"
expect_eq "status json ids" "gw-a gw-b gw-c gw-d" "$(printf '%s' "$json" | jq -r '[.gateways[].id] | join(" ")')"
expect_eq "status json even" "true 0" \
	"$("$ctl" status --store "sqlite:$even" --json | jq -r '"\(.even) \(.spread)"')"

# 5/4/4: max - min = 1 is still even.
one=$(new_store one)
fill "$one" gw-a:0:$live:5 gw-b:0:$live:4 gw-c:0:$live:4
expect_eq "off by one is even" "max-min=1 verdict=even" \
	"$("$ctl" status --store "sqlite:$one" | footer | grep -o 'max-min=[0-9]*\|verdict=[a-z]*' | paste -sd' ' -)"

# No serving gateway: verdict none.
none=$(new_store none)
fill "$none" gw-a:1:$live:2
expect_eq "none footer" "supervisors=2  serving=0  cap=-  max=-  min=-  max-min=-  verdict=none" \
	"$("$ctl" status --store "sqlite:$none" | footer)"
expect_eq "none json" '{"max":null,"spread":null,"even":false,"verdict":"none"}' \
	"$("$ctl" status --store "sqlite:$none" --json | jq -c '{max, spread, even, verdict}')"
empty=$(new_store empty)
expect_eq "empty store" "ID STATE SUPERVISORS SANDBOXES BUSIEST|supervisors=0 serving=0 cap=- max=- min=- max-min=- verdict=none" \
	"$("$ctl" status --store "sqlite:$empty" | tr -s ' ' | paste -sd'|' -)"

# ---- status --watch on a pipe -----------------------------------------------
# await DESC SECONDS COMMAND...: polls COMMAND until it succeeds or the
# deadline passes.
await() {
	local desc=$1 deadline=$(($(date +%s) + $2))
	shift 2
	until "$@"; do
		if [ "$(date +%s)" -ge "$deadline" ]; then bad "timed out: $desc"; return 1; fi
		sleep 0.05
	done
	ok
}
frames() { grep -c '^supervisors=' "$dir/watch.out" 2>/dev/null || true; }
frames_at_least() { [ "$(frames)" -ge "$1" ]; }
errors_at_least() { [ "$(grep -c "no store at sqlite:$even" "$dir/watch.err" 2>/dev/null || true)" -ge "$1" ]; }

"$ctl" status --store "sqlite:$even" --watch=0.1 >"$dir/watch.out" 2>"$dir/watch.err" &
watcher=$!
await "two frames" 10 frames_at_least 2
# The store goes away: each frame says so on stderr, the watch goes on.
mv "$even" "$even.away"
await "an error line while the store is away" 10 errors_at_least 1
before=$(frames)
mv "$even.away" "$even"
await "frames again once the store is back" 10 frames_at_least $((before + 1))
kill -TERM "$watcher"
wait "$watcher"
expect_eq "watch ends on SIGTERM with 0" 0 $?
watcher=
expect_eq "watch stdout has no escapes on a pipe" 0 "$(grep -c $'\033' "$dir/watch.out")"
# Frames are separated by exactly one blank line: every frame is the same 5 lines.
expect_eq "watch frame layout" "$(($(frames) * 6 - 1))" "$(wc -l <"$dir/watch.out")"
expect_eq "watch frames all even" "$(frames)" "$(grep -c 'verdict=even' "$dir/watch.out")"
expect_eq "watch stderr names the store" 0 "$(grep -vc "sqlite:$even" "$dir/watch.err")"

"$ctl" status --store "sqlite:$even" --watch=0.1 --json >"$dir/watch.json" &
watcher=$!
json_frames() { [ "$(jq -s length "$dir/watch.json" 2>/dev/null || echo 0)" -ge 2 ]; }
await "two json frames" 10 json_frames
kill -INT "$watcher"
wait "$watcher"
expect_eq "watch ends on SIGINT with 0" 0 $?
watcher=
expect_eq "watch json frames parse" "true" "$(jq -s 'all(.[]; .verdict == "even")' "$dir/watch.json")"

# ---- place --store -----------------------------------------------------------
# place --store agrees with place --gateways over the same store's loads
# (MEMBER's own row taken out), for members with and without a row; a
# member whose own row is a reservation is sent there while it has room.
url=sqlite:$uneven
serving=$(new_store serving)
fill "$serving" gw-a:0:$live:7 gw-b:0:$live:2 gw-c:0:$live:4 gw-d:0:$live:0 gw-x:0:$dead:3
surl=sqlite:$serving
gw_json=$("$ctl" gateways --store "$surl" --json)
sess_json=$("$ctl" sessions --store "$surl" --json)
agree=0
for i in $(seq 50); do
	if [ $((i % 2)) -eq 0 ]; then
		member=$(printf '%s' "$sess_json" | jq -r --argjson i "$i" '.[$i % length].member_id')
	else
		member=sup-$RANDOM-$i
	fi
	own=$(printf '%s' "$sess_json" | jq -r --arg m "$member" '.[] | select(.member_id == $m) | .gateway_id')
	given=$(printf '%s' "$gw_json" | jq -r --arg own "$own" \
		'map("\(.id)=\(.supervisors - (if .id == $own then 1 else 0 end))") | join(",")')
	want=$("$ctl" place --explain --gateways "$given" "$member")
	# A pending row of its own holds its place (store.h): the member goes
	# there while that gateway, without it, is below the cap.
	own_state=$(printf '%s' "$sess_json" | jq -r --arg m "$member" '.[] | select(.member_id == $m) | .state')
	if [ "$own_state" = pending ] && [ "${want%% *}" != "$own" ]; then
		cap=${want##*cap=}
		own_load=$(printf '%s' "$gw_json" | jq -r --arg own "$own" '.[] | select(.id == $own) | .supervisors')
		[ $((own_load - 1)) -lt "$cap" ] && want="$own reserved cap=$cap"
	fi
	got=$("$ctl" place --explain --store "$surl" "$member")
	if [ "$want" == "$got" ]; then agree=$((agree + 1)); else bad "place $member: --gateways $given says [$want], --store [$got]"; fi
done
expect_eq "place --store agrees with --gateways" 50 "$agree"
# Its own row is left out: m-gw-a-1 sits on gw-a (7 with it), so it is
# placed as a newcomer to loads 6/2/4/0 would be.
expect_eq "own row excluded" "$("$ctl" place --explain --gateways gw-a=6,gw-b=2,gw-c=4,gw-d=0 m-gw-a-1)" \
	"$("$ctl" place --explain --store "$surl" m-gw-a-1)"
# Nothing was written.
expect_eq "place writes nothing" "$sess_json" "$("$ctl" sessions --store "$surl" --json)"
# A draining gateway is never chosen, even when it is the emptiest (and
# its 0 still count in N: 13 + 1 over G = 3, cap 5).
sqlite3 "$serving" "UPDATE gateways SET state = 1 WHERE id = 'gw-d'"
chosen=$(for i in $(seq 40); do "$ctl" place --store "$surl" "member-$i"; done | sort -u | paste -sd, -)
case ",$chosen," in *,gw-d,*) bad "a draining gateway was chosen: $chosen" ;; *) ok ;; esac
case ",$chosen," in *,gw-x,*) bad "a dead gateway was chosen: $chosen" ;; *) ok ;; esac
expect_eq "place --store --json" '{"member":"sup-1","gateway":"'"$("$ctl" place --store "$surl" sup-1)"'","reason":"placed","cap":5}' \
	"$("$ctl" place --store "$surl" --json sup-1 | jq -c .)"
err=$("$ctl" place --store "sqlite:$none" sup-1 2>&1 >/dev/null)
expect_eq "place with no serving gateway rc" 1 $?
case "$err" in *"no serving gateway"*"sqlite:$none"*) ok ;; *) bad "no serving gateway message [$err]" ;; esac

# ---- ring --store --------------------------------------------------------------
json=$("$ctl" ring --store "$url" --json)
expect_json_valid "ring json valid" "$json"
expect_eq "ring json gateways (live ones, draining included)" "gw-a gw-b gw-c gw-d" \
	"$(printf '%s' "$json" | jq -r '[.gateways[].id] | join(" ")')"
expect_eq "ring json count" 4 "$(printf '%s' "$json" | jq .count)"
expect_eq "ring json points" "128 128 128 128" "$(printf '%s' "$json" | jq -r '[.gateways[].points] | join(" ")')"
expect_eq "ring shares sum to 100%" true \
	"$(printf '%s' "$json" | jq '([.gateways[].share_percent] | add) as $s | ($s > 99.9999 and $s < 100.0001) and (.total_percent - $s | fabs) < 0.0001')"
expect_eq "ring ideal" true "$(printf '%s' "$json" | jq '(.ideal_percent - 25 | fabs) < 0.0001')"
expect_eq "ring shares are shares" true "$(printf '%s' "$json" | jq 'all(.gateways[]; .share_percent > 5 and .share_percent < 50)')"
out=$("$ctl" ring --store "$url")
expect_eq "ring table header" "ID STATE POINTS SHARE" "$(printf '%s\n' "$out" | head -1 | tr -s ' ')"
expect_eq "ring table footer" "gateways=4  ideal=25.00%  total=100.00%" "$(printf '%s\n' "$out" | tail -1)"
expect_eq "ring table rows" 4 "$(printf '%s\n' "$out" | grep -c '^gw-.* 128 .*%$')"
expect_eq "one gateway owns it all" true "$("$ctl" ring --store "sqlite:$none" --json | jq '.gateways[0].share_percent == 100')"
expect_eq "ring --store owner = ring --gateways owner" "$("$ctl" ring --gateways gw-a,gw-b,gw-c,gw-d owner sup-9)" \
	"$("$ctl" ring --store "$url" owner sup-9)"
expect_eq "ring --store walk = ring --gateways walk" "$("$ctl" ring --gateways gw-a,gw-b,gw-c,gw-d walk sup-9)" \
	"$("$ctl" ring --store "$url" walk sup-9)"
expect_eq "ring empty store" "gateways=0  ideal=0.00%  total=0.00%" "$("$ctl" ring --store "sqlite:$empty" | tail -1)"

# ---- --json everywhere ------------------------------------------------------
json_ok() { # desc command...: exit 0 and one valid JSON document
	local out rc
	out=$("${@:2}")
	rc=$?
	if [ "$rc" -eq 0 ] && printf '%s' "$out" | jq -e . >/dev/null 2>&1; then ok
	else bad "$1: rc=$rc [$out]"; fi
}
(umask 077 && printf 'cluster-secret-0123456789\n' >"$dir/secret") # 0600: a secret others may read is refused
token=$("$ctl" token --secret "$dir/secret" --member sup-1 --ttl 60)
json_ok "status --json" "$ctl" status --store "$url" --json
json_ok "place --gateways --json" "$ctl" place --gateways a=1,b=2 --json m
json_ok "place --store --json" "$ctl" place --store "$url" --json m
json_ok "ring owner --json" "$ctl" ring --gateways a,b --json owner m
json_ok "ring walk --json" "$ctl" ring --gateways a,b --json walk m
json_ok "ring --store --json" "$ctl" ring --store "$url" --json
json_ok "gateways --json" "$ctl" gateways --store "$url" --json
json_ok "sessions --json" "$ctl" sessions --store "$url" --json
json_ok "drain --json" "$ctl" drain gw-c --store "$url" --json
json_ok "token --json" "$ctl" token --secret "$dir/secret" --member sup-1 --ttl 60 --json
json_ok "token --verify --json" "$ctl" token --secret "$dir/secret" --member sup-1 --verify "$token" --json
json_ok "sim --json" "$ctl" sim --gateways 4 --supervisors 20 --trials 1 --json
expect_eq "ring owner json" "{\"member\":\"m\",\"owner\":\"$("$ctl" ring --gateways a,b owner m)\"}" \
	"$("$ctl" ring --gateways a,b --json owner m | jq -c .)"
expect_eq "ring walk json" "$("$ctl" ring --gateways a,b,c walk m | paste -sd, -)" \
	"$("$ctl" ring --gateways a,b,c --json walk m | jq -r '.walk | join(",")')"
expect_eq "place json" "{\"member\":\"m\",\"gateway\":\"$("$ctl" place --gateways a=1,b=2 m)\",\"reason\":\"placed\",\"cap\":2}" \
	"$("$ctl" place --gateways a=1,b=2 --json m | jq -c .)"
expect_eq "drain json" '{"id":"gw-c","state":"draining"}' "$("$ctl" drain gw-c --store "$url" --json | jq -c .)"
out=$("$ctl" token --secret "$dir/secret" --member sup-1 --ttl 60 --json)
expect_eq "token json keys" "expires,member,token" "$(printf '%s' "$out" | jq -r 'keys | join(",")')"
expect_eq "token json verifies" "ok" \
	"$("$ctl" token --secret "$dir/secret" --member sup-1 --verify "$(printf '%s' "$out" | jq -r .token)" | cut -d' ' -f1)"
expect_eq "token --verify json" "true ok" \
	"$("$ctl" token --secret "$dir/secret" --member sup-1 --verify "$token" --json | jq -r '"\(.valid) \(.reason)"')"
out=$("$ctl" token --secret "$dir/secret" --member sup-2 --verify "$token" --json)
expect_eq "token --verify json refused rc" 1 $?
expect_eq "token --verify json refused" "false wrong-mac" "$(printf '%s' "$out" | jq -r '"\(.valid) \(.reason)"')"
out=$("$ctl" sim --gateways 4 --supervisors 20 --trials 1 --json)
expect_eq "sim json scenarios" 4 "$(printf '%s' "$out" | jq '.scenarios | length')"
expect_eq "sim json bounded-ring fill even" true \
	"$(printf '%s' "$out" | jq '.scenarios[0].rows[] | select(.policy == "bounded-ring") | .spread <= 1')"
expect_eq "sim json bins" 3 "$(printf '%s' "$out" | jq '.bins | length')"
# maps needs the agent's pins; --json is accepted (not a usage error) without them.
"$ctl" maps --json --pin-dir "$dir/no-pins" >/dev/null 2>&1
[ $? -ne 2 ] && ok || bad "maps --json is a usage error"

# ---- --help and help COMMAND -----------------------------------------------
for cmd in status place ring gateways sessions drain maps token sim; do
	out=$("$ctl" "$cmd" --help)
	rc=$?
	if [ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q '^NAME$' && printf '%s\n' "$out" | grep -q '^SYNOPSIS$' &&
		printf '%s\n' "$out" | grep -q '^DESCRIPTION$' && printf '%s\n' "$out" | grep -q '^OPTIONS$' &&
		printf '%s\n' "$out" | grep -q '^EXIT STATUS$'; then ok
	else bad "$cmd --help: rc=$rc"; fi
	expect_eq "help $cmd" "$out" "$("$ctl" help "$cmd")"
done
"$ctl" --help | grep -q '^    status ' && ok || bad "status missing from ringsteerctl --help"
expect_eq "help alone" "$("$ctl" --help)" "$("$ctl" help)"

# ---- bad arguments: exit 2, one line on stderr -------------------------------
expect_usage_error status --bogus
expect_usage_error status --store "$url" extra
expect_usage_error status --store
expect_usage_error status --store "$dir/x.db"
expect_usage_error status --store "redis://localhost/ringsteer"
expect_usage_error status --watch=0
expect_usage_error status --watch=x
expect_usage_error status --watch=-1
expect_usage_error status --watch 2
expect_usage_error status --width 0
expect_usage_error status --width 1001
expect_usage_error status --width x
expect_usage_error status --store "mysql:x" --watch
expect_usage_error place --store "$url" --gateways a=1 m
expect_usage_error place --store "$url"
expect_usage_error place --store "$url" m n
expect_usage_error place --store "$url" ""
expect_usage_error place --store "$url" --bogus m
expect_usage_error place --store
expect_usage_error ring --store "$url" --gateways a owner m
expect_usage_error ring --store "$url" owner
expect_usage_error ring --store "$url" spin m
expect_usage_error ring --store "$url" --bogus
expect_usage_error ring
expect_usage_error sim --json --markdown
expect_usage_error token --secret "$dir/secret" --member sup-1 --json
expect_usage_error help bogus
expect_usage_error help ring place

# ---- missing stores: exit 1, one line naming the URL, nothing created -------
missing=sqlite:$dir/missing.db
for args in "status" "status --json" "place sup-1" "ring" "ring owner sup-1" "gateways" "sessions" "drain gw-a"; do
	# shellcheck disable=SC2086 # $args is words to split
	expect_store_error "$missing" $args --store "$missing"
done
[ -e "$dir/missing.db" ] && bad "a command created the missing store"

summary status
