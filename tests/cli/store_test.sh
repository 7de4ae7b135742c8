#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# store_test.sh - `ringsteerctl gateways`, `sessions` and `drain` against a
# store this test fills with the sqlite3 command-line tool: the aligned
# table, --json (parsed with jq), --all against live rows, --gateway, JSON
# escaping of odd ids, drain turning a row draining (and unknown ids),
# bad arguments (exit 2, one line on stderr) and unreachable stores
# (exit 1, naming the URL and saying why in the backend's words: libpq's
# for a PostgreSQL server that refuses the connection, SQLite's for a
# file in a directory that does not exist).  ringsteerctl never creates a store (the
# gateways do): this test makes its schema with sqlite3.
# usage: store_test.sh PATH/TO/ringsteerctl
set -u
ctl=$1
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
need_tools store sqlite3 jq

dir=$(scratch_dir store)
trap 'remove_dir "$dir"' EXIT
db=$dir/ringsteer.db
url=sqlite:$db

# ringsteerctl never creates a store: on a missing file every command
# fails (exit 1, one line naming the URL) and leaves no file behind.
for cmd in gateways sessions status "ring --store $url" "place --store $url m1" "drain gw-a"; do
	# shellcheck disable=SC2086 # $cmd is words to split
	expect_store_error "no store at $url" $cmd --store "$url"
done
[ -e "$db" ] && bad "a command created the store file"
# An empty file is no store either, and reading it writes nothing into it.
: >"$db"
err=$("$ctl" gateways --store "$url" 2>&1 >/dev/null)
expect_eq "empty file rc" 1 $?
case "$err" in *"$url: no such table: schema_version") ok ;; *) bad "empty file message [$err]" ;; esac
expect_eq "empty file left empty" 0 "$(stat -c %s "$db")"
rm -f "$db"

# `init` creates the schema (user/store, as a gateway does); a second init
# leaves the store as it is.
out=$("$ctl" init --store "$url") || bad "init failed"
expect_eq "init says" "store ready: $url" "$out"
"$ctl" init --store "$url" >/dev/null || bad "init on an existing store failed"
expect_eq "init json" "$url" "$("$ctl" init --json --store "$url" | jq -r .store)"

# An empty store lists nothing.
out=$("$ctl" gateways --store "$url") || bad "gateways on an empty store failed"
expect_eq "empty table" "ID  PEER  STATE  LIVE  SUPERVISORS  HEARTBEAT-AGE-MS" "$out"
expect_eq "empty json" "0" "$("$ctl" gateways --store "$url" --json | jq length)"
expect_eq "empty sessions json" "0" "$("$ctl" sessions --store "$url" --json | jq length)"
expect_eq "schema version" "2" "$(sqlite3 "$db" 'SELECT version FROM schema_version')"

# The fleet: gw-a serving, gw-b draining, gw-c dead (heartbeat a minute old;
# the CLI's TTL is the default 15 s).
now=$(date +%s%3N)
old=$((now - 60000))
sqlite3 "$db" <<EOF
INSERT INTO gateways (id, peer, state, heartbeat_ms) VALUES ('gw-a', '10.0.0.1:7443', 0, $now);
INSERT INTO gateways (id, peer, state, heartbeat_ms) VALUES ('gw-b', '10.0.0.2:7443', 1, $now);
INSERT INTO gateways (id, peer, state, heartbeat_ms) VALUES ('gw-c', '10.0.0.3:7443', 0, $old);
INSERT INTO sessions VALUES ('m1', 'i-1', 7, 'gw-a', 3, '10.1.0.1:40001', $now, $((now + 15000)), 1);
INSERT INTO sessions VALUES ('m2', 'i-2', 2, 'gw-a', 0, '', $now, $((now + 5000)), 0);
INSERT INTO sessions VALUES ('m3', 'i-3', 1, 'gw-b', 12, '10.1.0.3:40003', $now, $((now + 15000)), 1);
INSERT INTO sessions VALUES ('m4', 'i-4', 4, 'gw-a', 1, '10.1.0.4:40004', $old, $((old + 15000)), 1);
INSERT INTO sessions VALUES ('m5', 'i-5', 5, 'gw-c', 2, '10.1.0.5:40005', $now, $((now + 15000)), 1);
INSERT INTO sessions VALUES ('m6', 'i-6', 9223372036854775807, 'gw-b', 0, '', $old, $((old + 5000)), 0);
-- What the gateways keep with every session write (schema version 2).
UPDATE gateways SET attached = (SELECT COUNT(*) FROM sessions s WHERE s.gateway_id = gateways.id AND s.state = 1);
EOF

# Every line of a table starts its columns at the same offsets (a column
# starts after two spaces); prints how many distinct offset lists there are.
aligned() {
	awk '{ s = ""; for (i = 1; i <= length($0); i++)
		if (substr($0, i, 1) != " " && (i == 1 || (i > 2 && substr($0, i - 2, 2) == "  "))) s = s " " i;
		print s }' | sort -u | wc -l
}

# gateways: live ones, their loads.
out=$("$ctl" gateways --store "$url")
expect_eq "gateways rc" 0 $?
expect_eq "gateways lines" 3 "$(printf '%s\n' "$out" | wc -l)"
expect_eq "gateways header" "ID PEER STATE LIVE SUPERVISORS HEARTBEAT-AGE-MS" "$(printf '%s\n' "$out" | head -1 | tr -s ' ')"
expect_eq "gateways rows" "gw-a 10.0.0.1:7443 serving yes 3|gw-b 10.0.0.2:7443 draining yes 1" \
	"$(printf '%s\n' "$out" | awk 'NR > 1 { print $1, $2, $3, $4, $5 }' | paste -sd'|' -)"
expect_eq "gateways aligned" 1 "$(printf '%s\n' "$out" | aligned)"
age=$(printf '%s\n' "$out" | awk 'NR == 2 { print $6 }')
if [ "$age" -ge 0 ] && [ "$age" -lt 60000 ]; then ok; else bad "heartbeat age [$age]"; fi

out=$("$ctl" gateways --store "$url" --all)
expect_eq "gateways --all rows" "gw-a yes 3|gw-b yes 1|gw-c no 0" \
	"$(printf '%s\n' "$out" | awk 'NR > 1 { print $1, $4, $5 }' | paste -sd'|' -)"
expect_eq "gateways --all aligned" 1 "$(printf '%s\n' "$out" | aligned)"

json=$("$ctl" gateways --store "$url" --json --all)
expect_json_valid "gateways json valid" "$json"
expect_eq "gateways json" \
	'[{"id":"gw-a","peer":"10.0.0.1:7443","state":"serving","live":true,"supervisors":3},{"id":"gw-b","peer":"10.0.0.2:7443","state":"draining","live":true,"supervisors":1},{"id":"gw-c","peer":"10.0.0.3:7443","state":"serving","live":false,"supervisors":0}]' \
	"$(printf '%s' "$json" | jq -c 'map(del(.heartbeat_ms))')"
expect_eq "gateways json heartbeat" "$now $now $old" "$(printf '%s' "$json" | jq -r 'map(.heartbeat_ms) | join(" ")')"
expect_eq "gateways json keys" "heartbeat_ms,id,live,peer,state,supervisors" \
	"$(printf '%s' "$json" | jq -r '.[0] | keys | join(",")')"
expect_eq "gateways json live only" "gw-a,gw-b" \
	"$("$ctl" gateways --store "$url" --json | jq -r 'map(.id) | join(",")')"

# sessions: live ones (m4, attached a minute ago, lives with gw-a's row;
# m5's gateway is dead, m6's reservation has lapsed), sorted by gateway
# then member.
out=$("$ctl" sessions --store "$url")
expect_eq "sessions rc" 0 $?
expect_eq "sessions header" "MEMBER GATEWAY STATE EPOCH SANDBOXES SOURCE AGE-MS" "$(printf '%s\n' "$out" | head -1 | tr -s ' ')"
expect_eq "sessions rows" "m1 gw-a active 7 3 10.1.0.1:40001|m2 gw-a pending 2 0 -|m4 gw-a active 4 1 10.1.0.4:40004|m3 gw-b active 1 12 10.1.0.3:40003" \
	"$(printf '%s\n' "$out" | awk 'NR > 1 { print $1, $2, $3, $4, $5, $6 }' | paste -sd'|' -)"
expect_eq "sessions aligned" 1 "$(printf '%s\n' "$out" | aligned)"

out=$("$ctl" sessions --store "$url" --all)
expect_eq "sessions --all rows" \
	"m1 gw-a active|m2 gw-a pending|m4 gw-a active|m3 gw-b active|m6 gw-b pending(dead)|m5 gw-c active(dead)" \
	"$(printf '%s\n' "$out" | awk 'NR > 1 { print $1, $2, $3 }' | paste -sd'|' -)"
expect_eq "sessions --all aligned" 1 "$(printf '%s\n' "$out" | aligned)"
expect_eq "sessions --gateway" "m1|m2|m4" \
	"$("$ctl" sessions --store "$url" --gateway gw-a | awk 'NR > 1 { print $1 }' | paste -sd'|' -)"
expect_eq "sessions --gateway --all" "m1|m2|m4" \
	"$("$ctl" sessions --store "$url" --gateway gw-a --all | awk 'NR > 1 { print $1 }' | paste -sd'|' -)"
expect_eq "sessions --gateway none" 1 "$("$ctl" sessions --store "$url" --gateway gw-x | wc -l)"

json=$("$ctl" sessions --store "$url" --json --all)
expect_json_valid "sessions json valid" "$json"
expect_eq "sessions json m1" \
	"{\"member_id\":\"m1\",\"instance_id\":\"i-1\",\"epoch\":7,\"gateway_id\":\"gw-a\",\"sandboxes\":3,\"source\":\"10.1.0.1:40001\",\"state\":\"active\",\"live\":true,\"heartbeat_ms\":$now,\"expires_ms\":$((now + 15000))}" \
	"$(printf '%s' "$json" | jq -c '.[0]')"
expect_eq "sessions json live" "m1:true m2:true m4:true m3:true m6:false m5:false" \
	"$(printf '%s' "$json" | jq -r 'map("\(.member_id):\(.live)") | join(" ")')"
expect_eq "sessions json states" "active pending active active pending active" \
	"$(printf '%s' "$json" | jq -r 'map(.state) | join(" ")')"
# The largest epoch is printed exactly (jq would round it: compare the text).
if printf '%s' "$json" | grep -q '"epoch": 9223372036854775807,'; then ok; else bad "epoch 2^63-1 not printed exactly"; fi
expect_eq "sessions json --gateway" "m3,m6" \
	"$("$ctl" sessions --store "$url" --json --all --gateway gw-b | jq -r 'map(.member_id) | join(",")')"
expect_eq "sessions json --gateway none" "[]" "$("$ctl" sessions --store "$url" --json --gateway gw-x | jq -c .)"

# drain: the row turns draining, nothing else about it changes (its
# heartbeat least of all: asking must not keep a gateway alive).
out=$("$ctl" drain gw-a --store "$url")
expect_eq "drain rc" 0 $?
expect_eq "drain output" "drain requested: gw-a" "$out"
json=$("$ctl" gateways --store "$url" --json --all)
expect_eq "drain state" "gw-a:draining:true:3:$now gw-b:draining:true:1:$now gw-c:serving:false:0:$old" \
	"$(printf '%s' "$json" | jq -r 'map("\(.id):\(.state):\(.live):\(.supervisors):\(.heartbeat_ms)") | join(" ")')"
expect_eq "drain state in the table" "draining" \
	"$("$ctl" gateways --store "$url" | awk '$1 == "gw-a" { print $3 }')"
# Options before the operand, --json; a dead gateway can be asked too.
out=$("$ctl" drain --json --store "$url" gw-c)
expect_eq "drain --json rc" 0 $?
expect_eq "drain --json" '{"id":"gw-c","state":"draining"}' "$(printf '%s' "$out" | jq -c .)"
expect_eq "drain dead gateway" "draining false" \
	"$("$ctl" gateways --store "$url" --json --all | jq -r '.[] | select(.id == "gw-c") | "\(.state) \(.live)"')"
# Already draining: asked again, still fine.
"$ctl" drain gw-b --store "$url" >/dev/null
expect_eq "drain again rc" 0 $?
# An unknown gateway: exit 1, one line naming it, nothing created.
err=$("$ctl" drain gw-x --store "$url" 2>&1 >/dev/null)
expect_eq "drain unknown rc" 1 $?
expect_eq "drain unknown lines" 1 "$(printf '%s\n' "$err" | wc -l)"
case "$err" in *gw-x*"$url"*) ok ;; *) bad "drain unknown message [$err]" ;; esac
expect_eq "drain unknown creates nothing" 3 "$("$ctl" gateways --store "$url" --json --all | jq length)"
expect_eq "drain unknown stdout" "" "$("$ctl" drain gw-x --store "$url" 2>/dev/null)"
sqlite3 "$db" "UPDATE gateways SET state = 0 WHERE id IN ('gw-a', 'gw-c')"

# Odd bytes in ids: valid JSON whatever they are; the table shows control
# bytes as '?'.  (The protocol never lets such ids in; a hand might.)
sqlite3 "$db" "INSERT INTO gateways (id, peer, state, heartbeat_ms) VALUES ('q\"b' || char(92) || char(9) || 'é' || char(10) || 'z', 'esc:1', 0, $now);
	INSERT INTO gateways (id, peer, state, heartbeat_ms) VALUES (CAST(x'67ff' AS TEXT), 'bad:1', 0, $now);"
json=$("$ctl" gateways --store "$url" --json)
expect_json_valid "escaped json valid" "$json"
expect_eq "escaped id round trip" "$(printf 'q"b\\\té\nz')" \
	"$(printf '%s' "$json" | jq -r '.[] | select(.peer == "esc:1") | .id')"
expect_eq "invalid utf-8 replaced" "g"$'\xef\xbf\xbd' \
	"$(printf '%s' "$json" | jq -r '.[] | select(.peer == "bad:1") | .id')"
expect_eq "table control bytes" 'q"b\?é?z' \
	"$("$ctl" gateways --store "$url" | awk '$2 == "esc:1" { print $1 }')"
sqlite3 "$db" "DELETE FROM gateways WHERE peer IN ('esc:1', 'bad:1')"

# A corrupt row is a store failure, not garbage: exit 1.
sqlite3 "$db" "UPDATE sessions SET state = 9 WHERE member_id = 'm6'"
err=$("$ctl" sessions --store "$url" --all 2>&1 >/dev/null)
expect_eq "corrupt row rc" 1 $?
case "$err" in *"$url"*) ok ;; *) bad "corrupt row message [$err]" ;; esac
sqlite3 "$db" "UPDATE sessions SET state = 0 WHERE member_id = 'm6'"

# Bad arguments: exit 2 and exactly one line on stderr.
for cmd in gateways sessions; do
	expect_usage_error "$cmd" --bogus
	expect_usage_error "$cmd" --store "$url" extra
	expect_usage_error "$cmd" --store
	expect_usage_error "$cmd" --store ""
	expect_usage_error "$cmd" --store "$db"
	expect_usage_error "$cmd" --store "sqlite:"
	expect_usage_error "$cmd" --store "redis://localhost/ringsteer"
	expect_usage_error "$cmd" --store "mysql:x"
	expect_usage_error "$cmd" -x
done
expect_usage_error gateways --store "$url" --gateway gw-a
expect_usage_error sessions --store "$url" --gateway ""
expect_usage_error sessions --store "$url" --gateway "$(printf 'g%.0s' $(seq 300))"
expect_usage_error sessions --store "$url" --gateway
expect_usage_error drain
expect_usage_error drain --store "$url"
expect_usage_error drain --json
expect_usage_error drain gw-a gw-b --store "$url"
expect_usage_error drain "" --store "$url"
expect_usage_error drain "$(printf 'g%.0s' $(seq 300))" --store "$url"
expect_usage_error drain gw-a --bogus
expect_usage_error drain gw-a --all --store "$url"
expect_usage_error drain gw-a --store
expect_usage_error drain gw-a --store ""
expect_usage_error drain gw-a --store "$db"
expect_usage_error drain gw-a --store "redis://localhost/ringsteer"
expect_usage_error drain gw-a -x
expect_eq "bad drain changed nothing" "serving" \
	"$("$ctl" gateways --store "$url" --json | jq -r '.[] | select(.id == "gw-a") | .state')"

# Unreachable stores: exit 1, one line naming the URL.
expect_store_failure() { # url
	expect_store_error "$1" gateways --store "$1"
	expect_store_error "$1" sessions --store "$1"
	expect_store_error "$1" drain gw-a --store "$1"
}
expect_store_failure "sqlite:$dir/missing/ringsteer.db"
printf 'this is not a database, only some text that fills a page\n%.0s' $(seq 100) > "$dir/text"
expect_store_failure "sqlite:$dir/text"
expect_store_failure "sqlite:$dir/text/ringsteer.db"
mkdir -m 0000 "$dir/locked"
if [ "$(id -u)" -ne 0 ]; then
	expect_store_failure "sqlite:$dir/locked/ringsteer.db"
elif command -v setpriv >/dev/null; then
	chmod 0755 "$dir" # so that nobody reaches $dir/locked, and is refused there
	err=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$ctl" gateways --store "sqlite:$dir/locked/x.db" 2>&1 >/dev/null)
	rc=$?
	if [ "$rc" -eq 1 ] && [[ "$err" == *"sqlite:$dir/locked/x.db"* ]]; then ok; else bad "locked dir -> rc=$rc [$err]"; fi
fi
[ -e "$dir/missing" ] && bad "the store's directory was created for the caller"

# The backend's own reason, on the one line.  SQLite: the file's directory
# does not exist (reading: no store there; init: cannot create it).
expect_store_error "no store at sqlite:$dir/missing/ringsteer.db: unable to open database file (No such file or directory)" \
	gateways --store "sqlite:$dir/missing/ringsteer.db"
expect_store_error "cannot open store sqlite:$dir/missing/ringsteer.db: unable to open database file (No such file or directory)" \
	init --store "sqlite:$dir/missing/ringsteer.db"
# PostgreSQL: nothing listens on port 1, libpq's message (its two lines
# joined) instead of "Input/output error".
pg_down='postgres://127.0.0.1:1/x?connect_timeout=2'
pg_refused='connection to server at "127.0.0.1", port 1 failed: Connection refused; Is the server running on that host and accepting TCP/IP connections?'
for cmd in gateways sessions status ring "place m1" "drain gw-a" init; do
	# shellcheck disable=SC2086 # $cmd is words to split
	expect_store_error "cannot open store $pg_down: $pg_refused" $cmd --store "$pg_down"
done
# A URL libpq refuses to parse: a usage error with libpq's reason.
err=$("$ctl" gateways --store 'postgres://h/db?no_such_option=1' 2>&1 >/dev/null)
expect_eq "pg bad URL rc" 2 $?
expect_eq "pg bad URL message" \
	"ringsteerctl gateways: --store: 'postgres://h/db?no_such_option=1' is not a store URL: invalid URI query parameter: \"no_such_option\"" \
	"$err"

# --help succeeds.
expect_help gateways
expect_help sessions
expect_help drain
"$ctl" --help | grep -q '^    drain ID' && ok || bad "drain missing from ringsteerctl --help"

summary store
