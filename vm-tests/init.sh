#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# vm-tests/init.sh - the guest's /init (busybox, in the initramfs built by
# vm-tests/run.sh).  Loads the modules listed in /modules.order, mounts the
# host root (9p tag hostroot, read-only) under a tmpfs overlay, the results
# tag (read-write) at /vmresults, the usual pseudo file systems, bpffs and
# cgroup2, then runs rs_script=PATH (a host path) in a chroot of that and
# powers off.  The host looks for the `rs-vm: exit N` line.
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
arg() { tr ' ' '\n' </proc/cmdline | sed -n "s/^$1=//p" | tail -n 1; }
die() { echo "rs-vm: init: $*"; echo "rs-vm: exit 125"; poweroff -f; sleep 5; }

while read -r m; do
	[ -n "$m" ] && { insmod "/modules/$m" || echo "rs-vm: init: insmod $m failed"; }
done </modules.order

mkdir -p /lower /rw /newroot
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=loose,ro hostroot /lower ||
	die "cannot mount 9p hostroot"
mount -t tmpfs -o mode=0755 tmpfs /rw
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot ||
	die "cannot mount the overlay"
mkdir -p /newroot/vmresults
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 results /newroot/vmresults ||
	die "cannot mount 9p results"

kver=$(uname -r)
mods=$(arg rs_modules)
if [ -n "$mods" ]; then
	mkdir -p "/newroot/lib/modules/$kver"
	mount --bind "/newroot$mods" "/newroot/lib/modules/$kver" || die "cannot bind the modules"
fi
mount -t proc proc /newroot/proc
mount -t sysfs sysfs /newroot/sys
mount -t devtmpfs devtmpfs /newroot/dev
mkdir -p /newroot/dev/pts /newroot/dev/shm
mount -t devpts devpts /newroot/dev/pts
mount -t tmpfs tmpfs /newroot/dev/shm
mount -t tmpfs -o mode=0755 tmpfs /newroot/run
# No tmpfs over /tmp: the overlay's upper layer already takes the writes,
# and a checkout under /tmp (CI clones anywhere) must stay visible.
mount -t bpf bpf /newroot/sys/fs/bpf || die "cannot mount bpffs"
mount -t cgroup2 cgroup2 /newroot/sys/fs/cgroup || die "cannot mount cgroup2"
mount -t debugfs debugfs /newroot/sys/kernel/debug 2>/dev/null

# The kernel's module autoload (request_module: an nft expression, a
# netfilter target) runs its modprobe helper in this root, not the chroot's:
# hand it to the chroot's modprobe, which has the kernel's modules bound.
printf '#!/bin/sh\nexec /bin/chroot /newroot /sbin/modprobe "$@"\n' >/bin/rs-modprobe
chmod 755 /bin/rs-modprobe
echo /bin/rs-modprobe >/proc/sys/kernel/modprobe || echo "rs-vm: init: cannot set the modprobe helper"

script=$(arg rs_script)
echo "rs-vm: start $(cut -d' ' -f1 /proc/uptime)"
chroot /newroot /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/root TERM=dumb RS_VM_BUILD="$(arg rs_build)" RS_VM_SCALE="$(arg rs_scale)" RS_KT_TRACE="$(arg rs_trace)" RS_VM_TESTS="$(arg rs_tests)" /bin/bash "$script" </dev/console >/dev/console 2>&1
rc=$?
sync
echo "rs-vm: exit $rc $(cut -d' ' -f1 /proc/uptime)"
umount /newroot/vmresults 2>/dev/null
poweroff -f
sleep 5
