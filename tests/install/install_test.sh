#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `make install` into a staged root, then what another team would do with
# it: the files and links are there (SONAME libringsteer.so.0); a program
# built only from that root through pkg-config (no -I into this tree) runs
# and agrees with the ring's reference vectors; the library exports exactly
# the functions its installed headers declare RS_EXPORT; each installed
# header compiles alone, as C and as C++.
# Usage: tests/install/install_test.sh [BUILD]   (from the repository root)
set -u
build=${1:-build}
make=${MAKE:-make}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
lib=$root/usr/lib
inc=$root/usr/include
fail=0
bad() { echo "install_test: $*"; fail=1; }

# The version as the header states it, read here on its own.
field() { awk -v f="RINGSTEER_VERSION_$1" '$1 == "#define" && $2 == f { print $3 }' include/ringsteer/version.h; }
version=$(field MAJOR).$(field MINOR).$(field PATCH)
major=$(field MAJOR)

# ---- a. the staged tree --------------------------------------------------
# The caller's MAKEFLAGS are kept (its variables: `all` is then up to date,
# nothing rebuilds).  test-run calls this script without $(MAKE) in the
# line on purpose: such a line would run even under `make -n`.
if ! $make --no-print-directory install BUILD="$build" DESTDIR="$root" PREFIX=/usr >"$tmp/install.log" 2>&1; then
	cat "$tmp/install.log"
	echo "install_test: make install failed"
	exit 1
fi
[ -f "$lib/libringsteer.so.$version" ] && [ ! -L "$lib/libringsteer.so.$version" ] ||
	bad "no $lib/libringsteer.so.$version"
for l in "libringsteer.so.$major" libringsteer.so; do
	[ "$(readlink "$lib/$l")" = "libringsteer.so.$version" ] || bad "$l does not link to libringsteer.so.$version"
done
for f in lib/libringsteer.a lib/pkgconfig/ringsteer.pc share/doc/ringsteer/LICENSE \
	share/doc/ringsteer/LICENSES/Apache-2.0.txt; do
	[ -f "$root/usr/$f" ] || bad "no /usr/$f"
done
for p in ringsteerctl ringsteer-gateway ringsteer-supervisor ringsteer-swarm ringsteer-agent; do
	[ -x "$build/$p" ] || continue # a program this tree does not build (no sources)
	[ -x "$root/usr/bin/$p" ] || bad "no /usr/bin/$p"
done
# Public headers only: exactly include/ringsteer/*.h, nothing from user/.
(cd include/ringsteer && ls *.h) >"$tmp/want.h"
(cd "$inc/ringsteer" && ls *.h) >"$tmp/got.h"
cmp -s "$tmp/want.h" "$tmp/got.h" || { bad "installed headers differ from include/ringsteer:"; diff "$tmp/want.h" "$tmp/got.h"; }
soname=$(readelf -d "$lib/libringsteer.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libringsteer.so.$major" ] || bad "SONAME '$soname', want libringsteer.so.$major"
grep -qx 'prefix=/usr' "$lib/pkgconfig/ringsteer.pc" || bad "ringsteer.pc does not say prefix=/usr"

# ---- b. a consumer built from the staged root only ------------------------
pc() { PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$lib/pkgconfig pkg-config "$@" ringsteer; }
[ "$(pc --modversion)" = "$version" ] || bad "pkg-config --modversion $(pc --modversion), want $version"
flags=$(pc --cflags --libs) || bad "pkg-config --cflags --libs failed"
case " $flags " in *" -Iinclude "* | *" -Iuser "*) bad "pkg-config flags reach into the tree: $flags" ;; esac
# shellcheck disable=SC2086 # the flags are words
${CC:-cc} -std=c17 -Wall -Wextra -Werror -o "$tmp/consumer" tests/install/consumer.c $flags ||
	bad "the consumer does not build from the staged root"
readelf -d "$tmp/consumer" 2>/dev/null | grep -q "NEEDED.*\[libringsteer.so.$major\]" ||
	bad "the consumer is not linked to libringsteer.so.$major"
# The static library with ringsteer.pc's Libs.private is enough too.
sflags=$(pc --cflags --libs --static | sed 's/-lringsteer\b/-l:libringsteer.a/')
# shellcheck disable=SC2086
${CC:-cc} -std=c17 -Wall -Wextra -Werror -o "$tmp/consumer-static" tests/install/consumer.c $sflags ||
	bad "the consumer does not link libringsteer.a with pkg-config --static"

# Expected owners from the reference vectors (the largest gateway set, its
# first five members), never from the program's own output.
vectors=tests/data/ring-sha256-be64.json
set_jq='.sets | max_by(.gateways | length)'
gateways=$(jq -r "$set_jq | .gateways[]" "$vectors")
keys=$(jq -r "$set_jq | .cases[:5][] | .member_id" "$vectors")
{
	echo "version $version"
	jq -r "$set_jq | .cases[:5][] | \"owner \(.member_id) \(.owner)\"" "$vectors"
	echo "core ok"
} >"$tmp/want.out"
for c in consumer consumer-static; do
	[ -x "$tmp/$c" ] || continue
	# shellcheck disable=SC2086
	LD_LIBRARY_PATH=$lib "$tmp/$c" $gateways -- $keys >"$tmp/$c.out" || bad "$c exited $?"
	if cmp -s "$tmp/want.out" "$tmp/$c.out"; then
		echo "install_test: $c: $(grep -c '^owner' "$tmp/$c.out") owners as the vectors say, version $version, a core made and freed"
	else
		bad "$c's output differs from the vectors:"
		diff "$tmp/want.out" "$tmp/$c.out"
	fi
done
LD_LIBRARY_PATH=$lib ldd "$tmp/consumer" 2>/dev/null | grep -q "libringsteer.so.$major => $lib/" ||
	bad "the consumer did not load the staged libringsteer.so.$major"

# ---- c. exported symbols = RS_EXPORT declarations --------------------------
# A declaration is RS_EXPORT at the start of a line, its name the word
# before the first "(" (every public header declares one per line so).
awk '/^RS_EXPORT / { s = $0; sub(/\(.*/, "", s); n = split(s, w, /[ *]+/); print w[n] }' \
	"$inc"/ringsteer/*.h | sort -u >"$tmp/declared"
nm -D --defined-only "$lib/libringsteer.so.$version" | awk '$2 == "T" { print $3 }' | sort -u >"$tmp/exported"
missing=$(comm -23 "$tmp/declared" "$tmp/exported")
extra=$(comm -13 "$tmp/declared" "$tmp/exported")
[ -z "$missing" ] || bad "declared RS_EXPORT but not exported: $(echo $missing)"
[ -z "$extra" ] || bad "exported but declared RS_EXPORT in no public header: $(echo $extra)"
# A function declared in a public header without RS_EXPORT would be a
# promise the shared library cannot keep.
unmarked=$(grep -nE '^(const )?(unsigned )?(struct |enum )?[a-z_0-9]+[ *]+[a-z_0-9]+\(' "$inc"/ringsteer/*.h |
	grep -v ':static ' | sed "s|$inc/||")
[ -z "$unmarked" ] || bad "public functions without RS_EXPORT:
$unmarked"
echo "install_test: $(wc -l <"$tmp/exported") functions exported, $(wc -l <"$tmp/declared") declared RS_EXPORT"

# ---- d. each installed header alone, C and C++ -----------------------------
# As C++ the header must also give its functions C linkage (extern "C"): a
# program taking each one's address links against the library only then
# (otherwise it asks for mangled names the library does not have).
exported_in() {
	awk '/^RS_EXPORT / { s = $0; sub(/\(.*/, "", s); n = split(s, w, /[ *]+/); print w[n] }' "$1"
}
for h in "$inc"/ringsteer/*.h; do
	n=ringsteer/$(basename "$h")
	# Their headers are on the default path, so compiling cannot tell.
	grep -nE '^#include [<"](event2/|openssl/|libpq|sqlite3|postgresql/)' "$h" && bad "$n includes a dependency's header"
	printf '#include <%s>\n' "$n" | ${CC:-cc} -std=c17 -Wall -Wextra -Werror -fsyntax-only -x c - -I"$inc" ||
		bad "$n does not compile alone as C"
	{
		printf '#include <%s>\n' "$n"
		printf 'typedef void (*fn)(void);\nstatic const fn all[] = { nullptr,\n'
		exported_in "$h" | sed 's/.*/\treinterpret_cast<fn>(\&&),/'
		printf '};\nint main() { return static_cast<int>(sizeof(all) / sizeof(all[0])) == 0; }\n'
	} >"$tmp/probe.cc"
	${CXX:-c++} -std=c++17 -Wall -Wextra -Werror -I"$inc" -o "$tmp/probe" "$tmp/probe.cc" -L"$lib" -lringsteer \
		2>"$tmp/probe.err" || { bad "$n does not compile and link alone as C++:"; head -20 "$tmp/probe.err"; }
done
echo "install_test: $(ls "$inc"/ringsteer/*.h | wc -l) headers, each alone as C and as C++ (C linkage linked)"

[ $fail -eq 0 ] && echo "install_test: ok"
exit $fail
