#!/usr/bin/env bash
# vm-tests/guest.sh - runs inside the guest (chroot of the overlaid host
# root): the kernel-facing tests (tests/kernel/run.sh) with the host's build
# tree, results to /vmresults (the read-write 9p tag).
set -u
build=${RS_VM_BUILD:?RS_VM_BUILD unset}
here=$(cd "$(dirname "$0")/.." && pwd)
res=/vmresults
cd "$here" || exit 125
echo "guest: kernel $(uname -r), build $build"
# The host's kernel-tests outputs are not this run's: start empty.
rm -rf "$build/kernel-tests"
# t_connect builds kube-proxy's DNAT with nftables: Debian's kernels ship it
# as modules, which the initramfs does not load (the host has them loaded).
for m in nf_tables nft_chain_nat nf_nat nft_nat nft_numgen nft_ct nft_reject_inet nfnetlink; do
	modprobe -q "$m" 2>/dev/null || true
done
# t_agent_notify needs a PostgreSQL server and tests the store's change
# notification, not the kernel: the host's `make test` runs it.
RS_KERNEL_EXCLUDE="t_agent_notify" tests/kernel/run.sh "$build" 2>&1 | tee "$res/run.log"
rc=${PIPESTATUS[0]}
mkdir -p "$res/out"
cp "$build"/kernel-tests/*.out "$res/out/" 2>/dev/null
dmesg >"$res/dmesg" 2>&1
exit "$rc"
