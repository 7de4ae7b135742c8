#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# with_names.sh DIR CMD...: runs CMD (exec: the same pid) in a private mount
# namespace where DIR/hosts, DIR/resolv.conf and DIR/nsswitch.conf are bound
# over /etc's, so that its name lookups are served from the test's own files
# and never from the machine's.  glibc's files backend re-reads /etc/hosts
# at each lookup, so a test re-points a name by rewriting DIR/hosts in place
# (the bind mount holds the inode: write into the file, never rename over
# it).  DIR/resolv.conf names a server that refuses at once, so a name not
# in the file fails fast.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 DIR CMD..." >&2; exit 2; }
dir=$1
shift
if [ "${RS_WITH_NAMES_INSIDE:-}" != "$dir" ]; then
	RS_WITH_NAMES_INSIDE=$dir exec unshare -m --propagation private "$0" "$dir" "$@"
fi
unset RS_WITH_NAMES_INSIDE
for f in hosts resolv.conf nsswitch.conf; do
	mount --bind "$dir/$f" "/etc/$f" || { echo "with_names.sh: cannot bind $dir/$f over /etc/$f" >&2; exit 1; }
done
exec "$@"
