#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# runtime-packages.sh BINARY... - prints the Debian packages that hold the
# shared libraries the binaries need, one per line, sorted: the runtime
# image's package list, derived from the binaries rather than typed (run in
# the image's build stage, where the libraries and dpkg's database are).
# Each library is the path the dynamic linker resolves (ldd), then the
# package owning it (dpkg -S, tried on the resolved path and on its
# canonical one: Debian 12 registers most libraries under /lib, merged
# into /usr/lib).  Exits 1, naming it, on a library that is not found or
# that no package owns: an image built from a partial list would not run.
set -eu
[ $# -gt 0 ] || { echo "usage: $0 BINARY..." >&2; exit 2; }
libs=$(for b in "$@"; do
	ldd "$b" | awk -v b="$b" '
		/not found/ { print "MISSING " $1 " (" b ")"; next }
		$2 == "=>" && $3 ~ /^\// { print $3 }'
done | sort -u)
missing=$(printf '%s\n' "$libs" | grep '^MISSING ' || true)
[ -z "$missing" ] || { printf '%s\n' "$missing" >&2; exit 1; }
pkgs=""
for l in $libs; do
	p=$(dpkg -S "$l" 2>/dev/null || dpkg -S "$(readlink -f "$l")" 2>/dev/null) ||
		{ echo "runtime-packages.sh: no package owns $l" >&2; exit 1; }
	pkgs="$pkgs$(printf '%s\n' "$p" | head -n 1 | cut -d: -f1)
"
done
printf '%s' "$pkgs" | sort -u
