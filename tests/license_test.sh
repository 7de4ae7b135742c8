#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Every source file names its licence (LICENSE): user space Apache-2.0, the
# BPF programs GPL-2.0-only OR BSD-2-Clause (bpf/, and the kernel tests'
# own *.bpf.c with the header they share), and those declare "Dual
# BSD/GPL" to the kernel.  Run from the repository root (git ls-files).
fail=0
files=$(git ls-files 2>/dev/null | grep -E '(\.(c|h|sh|yaml|rs|toml)|^Makefile|/Dockerfile|^\.ci/run)$' | grep -v '^tests/fuzz/corpus/')
[ -n "$files" ] || { echo "license_test: no files (not a git checkout?)"; exit 1; }
n=0
for f in $files; do
	n=$((n + 1))
	case "$f" in
	bpf/* | *.bpf.c | tests/kernel/standin_lb.h) want='SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)' ;;
	*) want='SPDX-License-Identifier: Apache-2.0' ;;
	esac
	head -n 3 "$f" | grep -qF "$want" || { echo "license_test: $f lacks '$want' in its first lines"; fail=1; }
done
for f in bpf/*.bpf.c tests/kernel/*.bpf.c; do
	grep -q 'SEC("license") = "Dual BSD/GPL"' "$f" || { echo "license_test: $f does not declare \"Dual BSD/GPL\""; fail=1; }
done
[ -f LICENSE ] && [ -f LICENSES/Apache-2.0.txt ] && [ -f LICENSES/GPL-2.0-only.txt ] && [ -f LICENSES/BSD-2-Clause.txt ] ||
	{ echo "license_test: LICENSE or a text under LICENSES/ is missing"; fail=1; }
[ $fail -eq 0 ] && echo "license_test: $n files, each with its SPDX line"
exit $fail
