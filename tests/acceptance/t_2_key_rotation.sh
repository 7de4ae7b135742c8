#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Acceptance 2 (keys): rotating the token key without a flag day
# (docs/OPERATIONS.md, "Rotating the token key").
#
# Start: two gateways on one legacy cluster secret; sup-1 and sup-2 attach
#   with tokens minted from it (no key id).
# Add:   the same file becomes a keyring, the old secret first (k1) and a
#   new key (k2) after it; both gateways restart one at a time.  sup-1 and
#   sup-2 keep their old tokens and attach again each time; a token minted
#   now carries k2 (sup-3 attaches with one); the gateways say k2 signs.
# Remove: the keyring holds k2 alone; both gateways restart.  The old
#   tokens of sup-1 and sup-2 are refused (bad_token) while sup-3 attaches
#   again; restarted with re-minted tokens (k2), sup-1 and sup-2 attach.
. "$(dirname "$0")/../cluster/lib.sh"

# roll: restart each gateway in turn, as a rolling update does.
roll() {
	local n
	for n in 1 2; do
		gw_restart "$n"
	done
}
bad_tokens() { cat "$RS_DIR"/log/gw-*.log | grep -c 'event=reject .*reason=bad_token' || true; }
refused() { cat "$RS_DIR"/log/gw-*.log | grep "event=reject " | grep "reason=bad_token" | grep -q "member=sup-$1\( \|$\)"; }

cluster_up --gateways 2
old=$(cat "$RS_SECRET")
new=$(head -c 32 /dev/urandom | od -An -v -tx1 | tr -d ' \n')
sups_start 1 2
await "sup-1 and sup-2 attached with legacy tokens" 15 all_attached 1 2
legacy1=$(cat "$RS_DIR/sup-1.token")
[[ $legacy1 != *:* ]] || fail "a legacy secret minted a token with a key id: $legacy1"

# Add the new key: a keyring, the old secret first (tokens without a key id are its).
(umask 077 && printf 'ringsteer-keyring v1\n# rotation: k1 is the old secret\nk1 %s\nk2 %s\n' "$old" "$new" >"$RS_SECRET.new")
mv "$RS_SECRET.new" "$RS_SECRET"
roll
await "sup-1 and sup-2 attached again with their old tokens" 30 all_attached 1 2
[ "$(bad_tokens)" -eq 0 ] || fail "an old token was refused while the old key was in the keyring: $(grep -h 'reason=bad_token' "$RS_DIR"/log/gw-*.log | head -n 1)"
for n in 1 2; do
	grep 'event=keys_loaded' "$(gw_log "$n")" | tail -n 1 | grep -q 'keys=2 signing=k2' ||
		fail "gw-$n does not say k2 signs: $(grep 'event=keys_loaded' "$(gw_log "$n")" | tail -n 1)"
done
k2tok=$(sup_token 3)
[[ $k2tok == k2:sup-3.* ]] || fail "a token minted from the keyring does not carry k2: $k2tok"
sup_start 3
await "sup-3 attached with a k2 token" 15 all_attached 1 2 3
echo "old key kept: sup-1, sup-2 (legacy tokens) and sup-3 (k2) attached"

# Remove the old key.
(umask 077 && printf 'ringsteer-keyring v1\nk2 %s\n' "$new" >"$RS_SECRET.new")
mv "$RS_SECRET.new" "$RS_SECRET"
roll
await "sup-1's old token refused" 30 refused 1
await "sup-2's old token refused" 30 refused 2
await "sup-3 attached again with its k2 token" 30 sup_attached 3
! refused 3 || fail "sup-3's k2 token was refused"
out=$(ctl token --secret "$RS_SECRET" --member sup-1 --verify "$legacy1") && fail "ringsteerctl still accepts the old token: $out"
echo "old key removed: $(bad_tokens) bad_token refusals of old tokens; sup-3 attached"

# Re-mint: the supervisors restarted with k2 tokens attach.
sup_restart 1
sup_restart 2
await "sup-1 and sup-2 attached with re-minted k2 tokens" 30 all_attached 1 2 3
[[ $(cat "$RS_DIR/sup-1.token") == k2:* ]] || fail "sup-1's re-minted token: $(cat "$RS_DIR/sup-1.token")"
echo "t_2_key_rotation: rotated from the legacy secret to k2 with no flag day"
