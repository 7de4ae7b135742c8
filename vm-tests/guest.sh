#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# vm-tests/guest.sh - runs inside the guest (chroot of the overlaid host
# root): the kernel-facing tests (tests/kernel/run.sh) with the snapshot's
# binaries and scripts; their outputs, run.log and dmesg go straight to
# /vmresults (the read-write 9p tag), so a guest stopped by its limit still
# leaves what ran.
set -u
build=${RS_VM_BUILD:?RS_VM_BUILD unset}
scale=${RS_VM_SCALE:?RS_VM_SCALE unset}
here=$(cd "$(dirname "$0")/.." && pwd)
res=${RS_VM_RESULTS:-/vmresults}
# virtme-ng mounts cgroup2 but not bpffs (the hand-made init.sh mounts both)
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf || { echo "guest: cannot mount bpffs"; exit 125; }
mountpoint -q /sys/fs/cgroup || mount -t cgroup2 cgroup2 /sys/fs/cgroup || { echo "guest: cannot mount cgroup2"; exit 125; }
cd "$here" || exit 125
echo "guest: kernel $(uname -r), build $build"
mkdir -p "$res/out"
# t_connect builds kube-proxy's DNAT with nftables: Debian's kernels ship it
# as modules (5.10 even nft_counter).  The kernel autoloads them (init.sh
# points its modprobe helper into this root); loading them here first says
# at once which one is missing.
for m in nf_tables nft_chain_nat nf_nat nft_nat nft_numgen nft_ct nft_counter nft_reject_inet nfnetlink; do
	modprobe -q "$m" 2>/dev/null || echo "guest: modprobe $m failed (a test that needs it will say so)"
done
# Software emulation runs several times slower than the host: every deadline
# the tests set is RS_KT_SCALE times longer (tests/kernel/lib.sh), and run.sh
# reports the one that came closest.  PostgreSQL's initdb costs a guest
# about 20 s: t_agent_store_stuck copies the host's template cluster.
# t_agent_notify needs a PostgreSQL server and tests the store's change
# notification, not the kernel; table and precompute test no kernel
# either: the host's `make test` runs them.
if [ -f "$build/pg-template.tar" ]; then
	export RS_PG_TEMPLATE="$build/pg-template.tar"
fi
RS_KT_SCALE=$scale RS_KT_OUT="$res/out" RS_KERNEL_EXCLUDE="table precompute t_agent_notify t_connect_nocookie" \
	tests/kernel/run.sh "$build" ${RS_VM_TESTS//,/ } 2>&1 | tee "$res/run.log"
rc=${PIPESTATUS[0]}
dmesg >"$res/dmesg" 2>&1
exit "$rc"
