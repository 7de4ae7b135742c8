#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# token_test.sh - `ringsteerctl token` against an independent implementation:
# every minted token's mac is recomputed from its printed member and expiry
# with the openssl CLI (HMAC-SHA256 over "<member>\n<expiry>") and must
# match; the expiry must be now + ttl; --verify must accept it and refuse
# tampered, foreign and expired tokens; bad arguments exit 2 with exactly
# one line on stderr; unreadable or mis-sized secret files exit 1, and so
# does a secret file its group or others may read (the test's own files are
# made 0600 under umask 077 for that reason).
# usage: token_test.sh PATH/TO/ringsteerctl
set -u
ctl=$1
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
tmp=$(scratch_dir token)
trap 'remove_dir "$tmp"' EXIT
umask 077

command -v openssl >/dev/null || { echo "token: openssl CLI not found"; echo "token: 0 passed, 1 failed"; exit 1; }

key='cluster-secret-0123456789'
printf '%s\n' "$key" >"$tmp/secret"

# hmac KEY MEMBER EXPIRY: the mac by the openssl CLI.
hmac() {
	printf '%s\n%s' "$2" "$3" | openssl dgst -sha256 -hmac "$1" | sed 's/^.*= //'
}

# Mint, split at the last two dots, recompute independently.
long=$(printf 'a%.0s' $(seq 63)).$(printf 'b%.0s' $(seq 63)).$(printf 'c%.0s' $(seq 63)).$(printf 'd%.0s' $(seq 61))
for member in sup-7 sup-7.pod.ns a 0 x-1.y-2.z-3 "$long"; do
	for ttl in 1 60 86400 3153600000; do
		before=$(date +%s)
		token=$("$ctl" token --secret "$tmp/secret" --member "$member" --ttl "$ttl")
		rc=$?
		after=$(date +%s)
		expect_eq "mint $member ttl=$ttl exit" 0 "$rc"
		mac=${token##*.}
		rest=${token%.*}
		expiry=${rest##*.}
		got_member=${rest%.*}
		expect_eq "member of $token" "$member" "$got_member"
		if [[ "$expiry" =~ ^[1-9][0-9]*$ ]] && [ "$expiry" -ge $((before + ttl)) ] &&
			[ "$expiry" -le $((after + ttl)) ]; then ok
		else bad "expiry of $token: [$expiry] not in now+$ttl"; fi
		if [[ "$mac" =~ ^[0-9a-f]{64}$ ]]; then ok; else bad "mac form of $token"; fi
		expect_eq "mac of $token" "$(hmac "$key" "$member" "$expiry")" "$mac"
		if [ "$ttl" -gt 1 ]; then
			expect_eq "verify $member ttl=$ttl" "ok expiry=$expiry" \
				"$("$ctl" token --secret "$tmp/secret" --member "$member" --verify "$token")"
		fi
	done
done

# A token made only with openssl verifies (the other direction).
exp=$(( $(date +%s) + 3600 ))
expect_eq "verify openssl-made token" "ok expiry=$exp" \
	"$("$ctl" token --secret "$tmp/secret" --member gw-b.sup --verify "gw-b.sup.$exp.$(hmac "$key" gw-b.sup "$exp")")"

# The secret is the file's bytes with one trailing newline dropped.
printf '%s' "$key" >"$tmp/secret-nonl"
t1=$("$ctl" token --secret "$tmp/secret" --member m --ttl 1000000)
t2=$("$ctl" token --secret "$tmp/secret-nonl" --member m --ttl 1000000)
e2=${t2%.*}; e2=${e2##*.}
expect_eq "newline-free secret file" "$(hmac "$key" m "$e2")" "${t2##*.}"
printf '%s\n\n' "$key" >"$tmp/secret-2nl"
t3=$("$ctl" token --secret "$tmp/secret-2nl" --member m --ttl 1000000)
e3=${t3%.*}; e3=${e3##*.}
expect_eq "two newlines: one kept" "$(hmac "$key"$'\n' m "$e3")" "${t3##*.}"

# --verify refuses (exit 1, a reason on stdout).
expect_refused() { # desc expected-prefix member token [secret]
	local out rc
	out=$("$ctl" token --secret "${5:-$tmp/secret}" --member "$3" --verify "$4" 2>/dev/null)
	rc=$?
	if [ "$rc" -eq 1 ] && [[ "$out" == "$2"* ]]; then ok; else bad "$1: rc=$rc out=[$out]"; fi
}
token=$("$ctl" token --secret "$tmp/secret" --member sup-7.pod.ns --ttl 3600)
mac=${token##*.}
rest=${token%.*}
expiry=${rest##*.}
flip=$(printf '%s' "${mac:0:1}" | tr '0-9a-f' '1-9a-f0')
expect_refused "flipped mac" "invalid:" sup-7.pod.ns "sup-7.pod.ns.$expiry.$flip${mac:1}"
expect_refused "other member" "invalid:" sup-8.pod.ns "$token"
expect_refused "member renamed" "invalid:" sup-8.pod.ns "sup-8.pod.ns.$expiry.$mac"
expect_refused "later expiry" "invalid:" sup-7.pod.ns "sup-7.pod.ns.$((expiry + 1)).$mac"
expect_refused "leading zero" "invalid:" sup-7.pod.ns "sup-7.pod.ns.0$expiry.$mac"
expect_refused "upper-case mac" "invalid:" sup-7.pod.ns "sup-7.pod.ns.$expiry.$(printf '%s' "$mac" | tr a-f A-F)"
expect_refused "truncated" "invalid:" sup-7.pod.ns "${token%?}"
expect_refused "extra dot" "invalid:" sup-7.pod.ns "$token."
printf 'another-cluster-secret\n' >"$tmp/other"
expect_refused "wrong secret" "invalid:" sup-7.pod.ns "$token" "$tmp/other"
old=$(( $(date +%s) - 10 ))
expect_refused "expired" "expired expiry=$old" sup-7.pod.ns "sup-7.pod.ns.$old.$(hmac "$key" sup-7.pod.ns "$old")"

# Bad arguments: exit 2 and exactly one line on stderr, nothing on stdout
# (stricter than lib.sh's expect_usage_error, which does not look at stdout).
expect_token_usage_error() {
	local out err rc
	out=$("$ctl" token "$@" 2>"$tmp/err")
	rc=$?
	err=$(cat "$tmp/err")
	if [ "$rc" -eq 2 ] && [ -z "$out" ] && [ -n "$err" ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ]; then ok
	else bad "ringsteerctl token $* -> rc=$rc stdout=[$out] stderr=[$err]"; fi
}
s=$tmp/secret
expect_token_usage_error
expect_token_usage_error --member m --ttl 60
expect_token_usage_error --secret "$s" --ttl 60
expect_token_usage_error --secret "$s" --member m
expect_token_usage_error --secret "$s" --member m --ttl 60 --verify x.1.y
expect_token_usage_error --secret "$s" --member m --ttl
expect_token_usage_error --secret
expect_token_usage_error --secret "$s" --member m --ttl 0
expect_token_usage_error --secret "$s" --member m --ttl -5
expect_token_usage_error --secret "$s" --member m --ttl +5
expect_token_usage_error --secret "$s" --member m --ttl 5x
expect_token_usage_error --secret "$s" --member m --ttl ""
expect_token_usage_error --secret "$s" --member m --ttl 99999999999999999999999
expect_token_usage_error --secret "$s" --member m --ttl 18446744073709551615
expect_token_usage_error --secret "$s" --member "" --ttl 60
expect_token_usage_error --secret "$s" --member Sup --ttl 60
expect_token_usage_error --secret "$s" --member a_b --ttl 60
expect_token_usage_error --secret "$s" --member "$long"x --ttl 60
expect_token_usage_error --secret "$s" --member m --ttl 60 extra
expect_token_usage_error --secret "$s" --member m --ttl 60 --bogus
expect_token_usage_error --secret "$s" --member m --verify

# Runtime failures: exit 1, a message on stderr, nothing on stdout.
expect_failure() { # desc secret-file
	local out rc
	out=$("$ctl" token --secret "$2" --member m --ttl 60 2>"$tmp/err")
	rc=$?
	if [ "$rc" -eq 1 ] && [ -z "$out" ] && [ -s "$tmp/err" ]; then ok
	else bad "$1: rc=$rc stdout=[$out] stderr=[$(cat "$tmp/err")]"; fi
}
expect_failure "missing secret file" "$tmp/missing"
expect_failure "directory as secret" "$tmp"
printf '0123456789abcde\n' >"$tmp/short"
expect_failure "15-byte secret" "$tmp/short"
: >"$tmp/empty"
expect_failure "empty secret" "$tmp/empty"
head -c 4097 /dev/zero | tr '\0' k >"$tmp/long"
expect_failure "4097-byte secret" "$tmp/long"
head -c 4096 /dev/zero | tr '\0' k >"$tmp/max"
printf '\n' >>"$tmp/max"
"$ctl" token --secret "$tmp/max" --member m --ttl 60 >/dev/null && ok || bad "4096-byte secret + newline refused"

# A secret file its group or others may read is refused, naming the file
# and the reason (exit 1, nothing on stdout); the same bytes at 0600 work.
for mode in 0640 0604 0644 0660 0666; do
	printf '%s\n' "$key" >"$tmp/open-$mode"
	chmod "$mode" "$tmp/open-$mode"
	out=$("$ctl" token --secret "$tmp/open-$mode" --member m --ttl 60 2>"$tmp/err")
	rc=$?
	if [ "$rc" -eq 1 ] && [ -z "$out" ] && grep -q "open-$mode.*group or others" "$tmp/err"; then ok
	else bad "secret file mode $mode: rc=$rc stdout=[$out] stderr=[$(cat "$tmp/err")]"; fi
	out=$("$ctl" token --secret "$tmp/open-$mode" --member m --verify "$("$ctl" token --secret "$tmp/secret" --member m --ttl 60)" 2>"$tmp/err")
	rc=$?
	if [ "$rc" -eq 1 ] && [ -z "$out" ] && grep -q "group or others" "$tmp/err"; then ok
	else bad "verify with secret file mode $mode: rc=$rc stdout=[$out] stderr=[$(cat "$tmp/err")]"; fi
	chmod 0600 "$tmp/open-$mode"
	"$ctl" token --secret "$tmp/open-$mode" --member m --ttl 60 >/dev/null 2>&1 && ok || bad "mode 0600 after $mode refused"
done

# --help succeeds and says how to call it.
"$ctl" token --help | grep -q -- '--verify' && ok || bad "token --help"

summary token
