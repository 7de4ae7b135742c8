#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# image_test.sh IMAGE BUILD_DIR - tests the container image by its
# filesystem (`make image-test`).  Containers cannot run on the development
# machine (crun refuses its hybrid cgroups and rlimits), so the image is
# exported (podman create + podman export) into BUILD_DIR/image-root and its
# own binaries run from there with chroot, inside the tests' network
# namespaces:
#
#  1. the image runs as uid 65532 by default; every binary's shared
#     libraries resolve inside the image (ldd: the derived package list has
#     no gap); every binary answers --help with exit 0 (the gateway, ctl,
#     supervisor and swarm as uid 65532, the agent as root);
#  2. the acceptance scenario t_1 (two gateways, two supervisors, restarts
#     end 1/1) with gateways, supervisors and ctl from the image, and t_24
#     (connect-time steering on pod-shaped nodes) with the agent from the
#     image too: tests/acceptance/run.sh over a directory of wrappers that
#     chroot into the image root.  The test's files (stores, secrets, TLS,
#     sockets) live under BUILD_DIR and /tmp, bind-mounted into the root at
#     the same paths in a mount namespace of the test's own (gone with it);
#  3. the image's size, against the build stage's.
# Needs root.  Prints `image: N passed, N failed` last; exit 1 on a failure.
set -u
[ $# -eq 2 ] || { echo "usage: $0 IMAGE BUILD_DIR" >&2; exit 2; }
image=$1
build=$(cd "$2" && pwd) || exit 1
here=$(cd "$(dirname "$0")" && pwd)
bins="ringsteer-gateway ringsteer-agent ringsteer-supervisor ringsteer-swarm ringsteerctl"

if [ -z "${RS_IMAGE_NS:-}" ]; then
	# Everything below runs in a private mount namespace: the binds vanish
	# with it, whatever happens.
	exec env RS_IMAGE_NS=1 unshare --mount --propagation private "$0" "$@"
fi

pass=0 failed=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; failed=$((failed + 1)); }

root=$build/image-root
rm -rf "$root" && mkdir -p "$root" || exit 1
cid=$(podman create "$image") || { echo "podman create $image failed" >&2; exit 1; }
podman export "$cid" | tar -x -C "$root" || { podman rm "$cid" >/dev/null; echo "podman export failed" >&2; exit 1; }
podman rm "$cid" >/dev/null

# 1. user, libraries, --help
user=$(podman image inspect --format '{{.Config.User}}' "$image")
[ "$user" = 65532:65532 ] && ok "runs as 65532:65532 by default" || bad "default user is '$user', not 65532:65532"
for b in $bins; do
	[ -x "$root/usr/local/bin/$b" ] || { bad "$b: not in the image"; continue; }
	gap=$(chroot "$root" ldd "/usr/local/bin/$b" 2>&1 | grep -E 'not found|No such file') &&
		bad "$b: libraries missing in the image: $gap" || ok "$b: every shared library resolves in the image"
	case $b in ringsteer-agent) spec=0:0 ;; *) spec=65532:65532 ;; esac
	if out=$(chroot --userspec="$spec" "$root" "/usr/local/bin/$b" --help 2>&1) && [ -n "$out" ]; then
		ok "$b --help (as $spec) from the image"
	else
		bad "$b --help (as $spec) from the image: $(printf '%s\n' "$out" | head -n 3)"
	fi
done

# 2. the scenarios with the image's binaries
mount --make-rprivate / 2>/dev/null
for d in proc dev sys tmp "$build"; do
	case $d in /*) src=$d ;; *) src=/$d ;; esac
	mkdir -p "$root$src"
	mount --rbind "$src" "$root$src" || { bad "bind $src into the image root"; }
done
wrap=$build/image-bin
rm -rf "$wrap" && mkdir -p "$wrap"
for e in "$build"/*; do # what the tests take from the build but the image does not hold
	[ -e "$wrap/$(basename "$e")" ] || ln -s "$e" "$wrap/$(basename "$e")"
done
for b in $bins; do
	rm -f "$wrap/$b"
	printf '#!/bin/sh\necho %s >>%s/ran\nexec chroot %s /usr/local/bin/%s "$@"\n' "$b" "$wrap" "$root" "$b" >"$wrap/$b"
	chmod +x "$wrap/$b"
done
out=$(RS_PG_DIR= RS_ACCEPT_TAG=image "$here/../acceptance/run.sh" "$wrap" t_1_restart_pairs t_24_pods_steer 2>&1)
printf '%s\n' "$out" | sed 's/^/    /'
for t in t_1_restart_pairs t_24_pods_steer; do
	printf '%s\n' "$out" | grep -q "^ok   $t " && ok "$t with the image's binaries" || bad "$t with the image's binaries"
done
# They did run the image's binaries (each wrapper notes its runs).
for b in ringsteer-gateway ringsteer-supervisor ringsteer-agent ringsteerctl; do
	n=$(grep -cx "$b" "$wrap/ran" 2>/dev/null || true)
	[ "${n:-0}" -gt 0 ] && ok "$b ran from the image $n times" || bad "$b never ran from the image"
done

# The package list is derived and refuses a gap: a binary needing a
# library no package owns makes runtime-packages.sh fail, naming it.
gap=$(mktemp -d) || exit 1
printf 'int rs_gap(void) { return 7; }\n' >"$gap/gap.c"
printf 'int rs_gap(void);\nint main(void) { return rs_gap() == 7 ? 0 : 1; }\n' >"$gap/main.c"
if cc -shared -fPIC -o "$gap/librsgap.so" "$gap/gap.c" && cc -o "$gap/needs-gap" "$gap/main.c" -L"$gap" -lrsgap -Wl,-rpath,"$gap"; then
	if why=$(sh "$here/../../deploy/image/runtime-packages.sh" "$gap/needs-gap" 2>&1); then
		bad "runtime-packages.sh accepted a library no package owns"
	else
		case $why in *librsgap.so*) ok "runtime-packages.sh refuses a library no package owns" ;;
		*) bad "runtime-packages.sh failed without naming the library: $why" ;; esac
	fi
	rm -f "$gap/librsgap.so"
	if why=$(sh "$here/../../deploy/image/runtime-packages.sh" "$gap/needs-gap" 2>&1); then
		bad "runtime-packages.sh accepted a library that is not found"
	else
		case $why in *"not found"*|*MISSING*) ok "runtime-packages.sh refuses a library that is not found" ;;
		*) bad "runtime-packages.sh failed without saying what is missing: $why" ;; esac
	fi
else
	bad "cannot build the gap fixture"
fi
rm -rf "$gap"

# 3. sizes
size() { podman image inspect --format '{{.Size}}' "$1" 2>/dev/null; }
s=$(size "$image") bs=$(size "${image%%:*}-build:${image##*:}")
if [ -n "$s" ]; then
	echo "image: $image $((s / 1048576)) MiB${bs:+; its build stage $((bs / 1048576)) MiB}"
	ok "size reported"
else
	bad "no size for $image"
fi
echo "image: $pass passed, $failed failed"
[ "$failed" = 0 ]
