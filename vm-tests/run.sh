#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# vm-tests/run.sh - the kernel-facing tests (tests/kernel/run.sh) on Debian's
# generic 5.10 (Debian 11), 6.1 and 6.12 kernels, in qemu (TCG).
#
# usage: vm-tests/run.sh [BUILD_DIR]        (default: build)
#   RS_VM_KERNELS="5.10 6.1 6.12"  which series to run
#   RS_VM_TIMEOUT=1200        seconds one guest may run (a guest took 419-491 s in CI)
#   RS_VM_SCALE=8             the tests' deadlines, this many times the host's
#                             (tests/kernel/lib.sh: RS_KT_SCALE)
#   RS_VM_TRACE=1             the shell tests traced, time-stamped, into their
#                             outputs (tests/kernel/run.sh: RS_KT_TRACE)
#   RS_VM_TESTS="NAME..."     only the tests whose names contain a NAME
#
# Per series: the newest linux-image package is resolved with apt-cache,
# fetched with `apt-get download` into BUILD_DIR/vm (kept: not fetched again),
# unpacked with dpkg -x, depmod'ed; vmlinux is extracted from vmlinuz (booted
# by qemu's PVH entry); an initramfs of busybox-static, the modules and
# vm-tests/init.sh is built.  The guest sees the host root read-only (9p,
# under a tmpfs overlay) and BUILD_DIR/vm/<kver>/results read-write, and runs
# vm-tests/guest.sh.  See ../shared/notes/vm-kernel-tests.md.
#
# Prints one line per kernel and test with its time (skip counts as a
# failure: the guest is root on kernels that have sk_lookup), the deadline
# that came closest to being missed in each guest, then a table: prep_s
# (fetch, unpack, initramfs), boot_s (qemu start to the test script), total_s
# (qemu start to power-off, boot included), limit_s (RS_VM_TIMEOUT).
# Exit status 0 only when every test passed on every kernel and no guest
# console or dmesg holds a kernel splat or a verifier rejection.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
build=$(cd "${1:-$top/build}" && pwd) || exit 2
vm="$build/vm"
kernels=${RS_VM_KERNELS:-"5.10 6.1 6.12"}
limit=${RS_VM_TIMEOUT:-1200}
scale=${RS_VM_SCALE:-8}
runner=${RS_VM_RUNNER:-vng}
case $runner in vng | initramfs) ;; *) echo "RS_VM_RUNNER: vng or initramfs, not '$runner'" >&2; exit 2 ;; esac
mkdir -p "$vm"

log() { echo "vm: $*" >&2; }
now() { date +%s%N; }
secs() { awk -v s="$1" -v e="$2" 'BEGIN { printf "%.1f", (e - s) / 1e9 }'; }

for b in ringsteer-agent ringsteerctl kernel/steer_test kernel/kt_tool kernel/table_test; do
	[ -x "$build/$b" ] || { log "$build/$b missing: build it first (make vm-test does)"; exit 2; }
done
for c in qemu-system-x86_64 busybox cpio depmod modprobe zstd xz dpkg apt-get apt-cache file udevadm; do
	command -v "$c" >/dev/null || { log "$c not found (make vm-test installs it)"; exit 2; }
done

# apt's options for a Debian suite other than the machine's own (empty for
# the machine's own): a source list, package lists and cache of the
# runner's own under BUILD_DIR/vm/apt-SUITE, on the mirror the machine's
# sources name, signed by Debian's archive keyring.  The machine's sources
# and lists are never touched.
apt_opts_suite() {
	[ -n "$1" ] || return 0
	local a="$vm/apt-$1" mirror
	mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)\/*$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
	[ -n "$mirror" ] || mirror=$(sed -n 's/^deb  *\(\[[^]]*\]  *\)\{0,1\}\(http[^ ]*debian\)\/* .*/\2/p' /etc/apt/sources.list 2>/dev/null | head -n 1)
	[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
	mkdir -p "$a/lists/partial" "$a/cache/archives/partial"
	printf 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s main\n' "$mirror" "$1" \
		>"$a/sources.list"
	echo "-o Dir::Etc::sourcelist=$a/sources.list -o Dir::Etc::sourceparts=/nonexistent" \
		"-o Dir::State::Lists=$a/lists -o Dir::Cache=$a/cache"
}

# the suite a series comes from: 5.10 is Debian 11's (bullseye)
suite_of() { case $1 in 5.10) echo bullseye ;; esac; }
apt_opts() { apt_opts_suite "$(suite_of "$1")"; }

# the newest package matching re (apt-cache with opts; apt-get update once
# if nothing is found)
newest() {
	local opts=$1 re=$2 p
	# shellcheck disable=SC2086 # opts is a list of -o options
	p=$(apt-cache $opts search --names-only "$re" 2>/dev/null | cut -d' ' -f1 | sort -V | tail -n 1)
	if [ -z "$p" ]; then
		# shellcheck disable=SC2086
		apt-get $opts update -qq >&2 || { log "apt-get update failed (options: ${opts:-none, the machine sources})"; return 1; }
		# shellcheck disable=SC2086
		p=$(apt-cache $opts search --names-only "$re" | cut -d' ' -f1 | sort -V | tail -n 1)
	fi
	[ -n "$p" ] && echo "$p"
}

# newest package name of a series
resolve() {
	local re opts
	case $1 in
	5.10) re='^linux-image-5\.10\.0-[0-9]+-amd64$' ;;
	6.1) re='^linux-image-6\.1\.0-[0-9]+-amd64$' ;;
	6.12) re='^linux-image-6\.12\.[0-9]+\+deb12-amd64$' ;;
	*) return 1 ;;
	esac
	opts=$(apt_opts "$1")
	newest "$opts" "$re"
}

# vmlinux out of vmlinuz: the first xz or zstd stream that decompresses to ELF
extract_vmlinux() {
	local in=$1 out=$2 off
	for kind in xz zstd; do
		case $kind in
		xz) pat='\xfd7zXZ\x00' ;;
		zstd) pat='\x28\xb5\x2f\xfd' ;;
		esac
		for off in $(LC_ALL=C grep -obUaP "$pat" "$in" | cut -d: -f1); do
			tail -c +$((off + 1)) "$in" | $kind -dc >"$out.tmp" 2>/dev/null
			if [ "$(head -c 4 "$out.tmp" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
				mv "$out.tmp" "$out"
				return 0
			fi
		done
	done
	rm -f "$out.tmp"
	return 1
}

# the initramfs: busybox, the modules (and their dependencies) that this
# kernel has as modules, uncompressed, in load order; /init
make_initrd() {
	local root=$1 kver=$2 out=$3 dir m line f
	dir=$(mktemp -d)
	mkdir -p "$dir"/{bin,proc,sys,dev,modules}
	cp "$(command -v busybox)" "$dir/bin/busybox"
	for a in $("$dir/bin/busybox" --list); do
		[ "$a" = busybox ] || ln -sf busybox "$dir/bin/$a"
	done
	: >"$dir/modules.order"
	for m in virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci 9pnet \
		9pnet_virtio netfs fscache 9p overlay veth; do
		modprobe -d "$root" -S "$kver" --show-depends "$m" 2>/dev/null | while read -r line; do
			case $line in insmod\ *) ;; *) continue ;; esac
			f=${line#insmod }
			f=${f%% *}
			b=$(basename "$f")
			b=${b%.xz}
			b=${b%.zst}
			grep -qx "$b" "$dir/modules.order" && continue
			case $f in
			*.xz) xz -dc "$f" >"$dir/modules/$b" ;;
			*.zst) zstd -qdc "$f" >"$dir/modules/$b" ;;
			*) cp "$f" "$dir/modules/$b" ;;
			esac
			echo "$b" >>"$dir/modules.order"
		done
	done
	cp "$here/init.sh" "$dir/init"
	chmod +x "$dir/init"
	(set -o pipefail; cd "$dir" && find . | cpio -o -H newc --quiet | gzip -1) >"$out.tmp" && mv "$out.tmp" "$out" ||
		{ rm -rf "$dir" "$out.tmp"; log "$kver: cannot build the initramfs"; return 1; }
	local n
	n=$(wc -l <"$dir/modules.order")
	rm -rf "$dir"
	log "$kver: initramfs with $n modules"
}

# prepare a series; prints the kernel release
prepare() {
	local series=$1 pkg deb kroot kver
	pkg=$(resolve "$series") || { log "$series: no linux-image package found"; return 1; }
	deb=$(ls "$vm/${pkg}"_*.deb 2>/dev/null | head -n 1)
	if [ -z "$deb" ]; then
		log "$series: downloading $pkg"
		# shellcheck disable=SC2046 # apt_opts is a list of -o options
		(cd "$vm" && apt-get $(apt_opts "$series") download -q "$pkg" >&2 2>/dev/null) ||
			{ log "$series: apt-get download $pkg failed"; return 1; }
		deb=$(ls "$vm/${pkg}"_*.deb | head -n 1)
	fi
	kver=${pkg#linux-image-}
	kroot="$vm/$kver/root"
	if [ ! -f "$vm/$kver/.unpacked" ] || [ "$deb" -nt "$vm/$kver/.unpacked" ]; then
		rm -rf "$vm/$kver/root"
		mkdir -p "$kroot"
		dpkg -x "$deb" "$kroot" || return 1
		depmod -b "$kroot" "$kver" || return 1
		touch "$vm/$kver/.unpacked"
	fi
	if [ "$runner" = initramfs ] && [ ! -s "$vm/$kver/vmlinux" ]; then
		extract_vmlinux "$kroot/boot/vmlinuz-$kver" "$vm/$kver/vmlinux" ||
			{ log "$series: no vmlinux in vmlinuz-$kver"; return 1; }
	fi
	if [ "$runner" = initramfs ] &&
		{ [ ! -s "$vm/$kver/initrd.gz" ] || [ "$here/init.sh" -nt "$vm/$kver/initrd.gz" ]; }; then
		make_initrd "$kroot" "$kver" "$vm/$kver/initrd.gz" || return 1
	fi
	echo "$kver"
}

# virtme-ng, Debian trixie's (architecture all): fetched with an apt source
# list of the runner's own and unpacked into BUILD_DIR/vm/vng once; it runs
# on Debian's own python3 with python3-argcomplete, -requests and
# -pkg-resources, and needs udev in the guest (make vm-deps installs them).
vng_prepare() {
	local opts p deb
	[ -x "$vm/vng/usr/bin/vng" ] && return 0
	opts=$(apt_opts_suite trixie)
	p=$(newest "$opts" '^virtme-ng$') || { log "virtme-ng: not found in trixie"; return 1; }
	deb=$(ls "$vm/${p}"_*.deb 2>/dev/null | head -n 1)
	if [ -z "$deb" ]; then
		# shellcheck disable=SC2086 # opts is a list of -o options
		(cd "$vm" && apt-get $opts download -q "$p" >&2 2>/dev/null) || { log "virtme-ng: apt-get download failed"; return 1; }
		deb=$(ls "$vm/${p}"_*.deb | head -n 1)
	fi
	rm -rf "$vm/vng.tmp" && dpkg -x "$deb" "$vm/vng.tmp" && mv "$vm/vng.tmp" "$vm/vng" || return 1
	log "virtme-ng: $(basename "$deb")"
}

# The lines of one guest's console into console.log; sets BOOT (seconds
# from start to the guest's "rs-vm: start") and RC (its "rs-vm: exit N").
read_console() {
	local d=$1 start=$2 line t
	while IFS= read -r line; do
		line=${line%$'\r'}
		printf '%s\n' "$line" >>"$d/console.log"
		t=$(now)
		case $line in
		"rs-vm: start "*) [ "$BOOT" = - ] && BOOT=$(secs "$start" "$t") ;;
		"rs-vm: exit "*)
			RC=${line#rs-vm: exit }
			RC=${RC%% *}
			;;
		esac
	done
}

# boot one kernel with virtme-ng (the host root read-only with its overlays,
# the results directory read-write); sets BOOT RUN RC
boot_vng() {
	local kver=$1 d="$vm/$1" start cmd
	rm -rf "$d/results"
	mkdir -p "$d/results"
	: >"$d/console.log"
	BOOT=- RUN=- RC=124
	# (a read-write directory's guest path must lie in one of virtme's
	# overlays, such as /tmp)
	cmd="echo rs-vm: start \$(cut -d' ' -f1 /proc/uptime); RS_VM_RESULTS=/tmp/rs-vm-results RS_VM_BUILD=$build"
	cmd="$cmd RS_VM_SCALE=$scale RS_KT_TRACE=${RS_VM_TRACE:-} RS_VM_TESTS=${RS_VM_TESTS:+${RS_VM_TESTS// /,}}"
	cmd="$cmd /bin/bash $snap/src/vm-tests/guest.sh; echo rs-vm: exit \$?"
	start=$(now)
	read_console "$d" "$start" < <(cd "$d" && PATH="$vm/vng/usr/bin:$PATH" \
		PYTHONPATH="$vm/vng/usr/lib/python3/dist-packages" timeout -k 5 "$limit" /usr/bin/python3 \
		"$vm/vng/usr/bin/vng" --run "$d/root/boot/vmlinuz-$kver" --disable-kvm --cpus 1 --memory 1G --verbose \
		--rwdir "/tmp/rs-vm-results=$d/results" --exec "$cmd" </dev/null 2>&1)
	RUN=$(secs "$start" "$(now)")
}

# boot one kernel with the hand-made runner (init.sh); sets BOOT RUN RC
boot_initramfs() {
	local kver=$1 d="$vm/$1" start
	rm -rf "$d/results"
	mkdir -p "$d/results"
	: >"$d/console.log"
	BOOT=- RUN=- RC=124
	start=$(now)
	read_console "$d" "$start" < <(timeout -k 5 "$limit" qemu-system-x86_64 -accel tcg -smp 1 -m 1024 -nodefaults -no-user-config \
		-display none -no-reboot -serial stdio \
		-kernel "$d/vmlinux" -initrd "$d/initrd.gz" \
		-append "console=ttyS0 panic=-1 quiet loglevel=3 rs_script=$snap/src/vm-tests/guest.sh rs_build=$build rs_scale=$scale rs_trace=${RS_VM_TRACE:-} rs_tests=${RS_VM_TESTS:+${RS_VM_TESTS// /,}} rs_modules=$d/root/lib/modules/$kver" \
		-fsdev local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap \
		-device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot \
		-fsdev local,id=results,path="$d/results",security_model=none \
		-device virtio-9p-pci,fsdev=results,mount_tag=results </dev/null 2>&1)
	RUN=$(secs "$start" "$(now)")
}

# kernel splats and verifier rejections in the console, dmesg, test outputs
splats() {
	local d="$vm/$1"
	grep -hE 'BUG:|WARNING:|Oops|Kernel panic|general protection|Call Trace:|BEGIN PROG LOAD LOG|verifier|Permission denied \(-13\)' \
		"$d/console.log" "$d/results/dmesg" "$d/results/out/"*.out 2>/dev/null | head -n 20
}

# The guests run a snapshot of the binaries and of the scripts: the host's
# tree may be rebuilt or edited while a guest runs, and 9p with cache=loose
# keeps what it first saw (a binary caught mid-link has no x bit yet: EACCES
# in the guest).  With a PostgreSQL server installed, a template cluster made
# here saves each guest's initdb (tests/pg/pg_server.sh, RS_PG_TEMPLATE).
snap="$vm/build"
rm -rf "$snap"
mkdir -p "$snap/kernel" "$snap/src/tests" "$snap/src/vm-tests"
for b in ringsteer-agent ringsteerctl ringsteer-gateway ringsteer-supervisor; do
	[ -x "$build/$b" ] && cp -p "$build/$b" "$snap/"
done
cp -p "$build"/kernel/* "$snap/kernel/"
cp -pr "$top/tests/kernel" "$top/tests/pg" "$top/tests/cluster" "$snap/src/tests/"
cp -p "$here/guest.sh" "$snap/src/vm-tests/"
"$top/tests/pg/pg_server.sh" template "$snap/pg-template.tar" >/dev/null ||
	log "no PostgreSQL template cluster (why: above): t_agent_store_stuck runs initdb in the guest"
log "testing a snapshot of $build in $snap"
build=$snap

if [ "$runner" = vng ]; then
	vng_prepare || { echo "FAIL virtme-ng: cannot fetch or unpack it (RS_VM_RUNNER=initramfs runs without it)"; exit 1; }
fi

declare -a rows
fail=0
for series in $kernels; do
	t0=$(now)
	kver=$(prepare "$series") || { echo "FAIL $series: cannot prepare the kernel"; fail=1; rows+=("$series - - - - prepare-failed"); continue; }
	prep=$(secs "$t0" "$(now)")
	log "$kver: prepared in ${prep}s, booting ($runner)"
	"boot_$runner" "$kver"
	d="$vm/$kver"
	np=0 nf=0
	if [ -f "$d/results/run.log" ]; then
		while read -r st name rest; do
			case $st in
			ok) echo "$kver ok   $name ${rest}"; np=$((np + 1)) ;;
			FAIL) echo "$kver FAIL $name ${rest}"; nf=$((nf + 1)) ;;
			skip) echo "$kver skip $name ${rest}"; nf=$((nf + 1)) ;;
			esac
		done <"$d/results/run.log"
		# a failing test's output tail, as tests/kernel/run.sh printed it
		grep '^    ' "$d/results/run.log"
		sed -n "s/^kernel: closest deadline: /$kver closest deadline: /p" "$d/results/run.log"
	fi
	status=pass
	if [ "$RC" != 0 ] || [ $np = 0 ]; then
		status="fail(rc=$RC)"
		[ "$RC" = 124 ] && status="fail(timeout ${limit}s or no exit line)"
	fi
	s=$(splats "$kver")
	if [ -n "$s" ]; then
		echo "$kver FAIL kernel-splat:"
		printf '%s\n' "$s" | sed 's/^/    /'
		status="fail(splat)"
	fi
	if [ "$status" != pass ]; then
		fail=1
		echo "$kver: console log in $d/console.log"
		[ -f "$d/results/run.log" ] || tail -n 30 "$d/console.log" | sed 's/^/    /'
	fi
	rows+=("$kver $prep $BOOT $RUN $np/$((np + nf)) $status")
done

echo
printf '%-24s %8s %8s %8s %8s %7s  %s\n' kernel prep_s boot_s total_s limit_s passed result
for r in "${rows[@]}"; do
	read -r k p b t n st <<<"$r" # the status last: it may hold spaces
	printf '%-24s %8s %8s %8s %8s %7s  %s\n' "$k" "$p" "$b" "$t" "$limit" "$n" "$st"
done
exit $fail
