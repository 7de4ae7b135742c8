#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/compare/report.sh OUT - writes docs/COMPARISON.md and the chart
# docs/comparison-rounds.{svg,png} from the TSVs of one `make compare` run:
#   OUT/evenness.tsv   contender, measure, value   (bench/compare/evenness.sh)
#   OUT/rounds.tsv     contender, round, max_minus_min
#   OUT/datapath.tsv   contender, measure, value   (bench/compare/datapath.sh)
# Tab-separated; a header line ("contender ...") is skipped.  Every figure in
# the report comes from these files.  First it checks that every contender
# produced every figure (each evenness contender every evenness measure any
# contender has and every round; each data path contender every data path
# measure), numeric; it fails, writing nothing, when one is missing.
# The contenders' configurations come from bench/compare/contenders.sh (from
# the scripts that run them); it fails, and so does this, when one of the
# lines it quotes is no longer in its script.
# CMP_DOCS: where to write (default the repository's docs/); QUICK is noted.
set -u
out=${1:?usage: report.sh OUT}
here=$(cd "$(dirname "$0")" && pwd)
docs=${CMP_DOCS:-$here/../../docs}
ev="$out/evenness.tsv" rd="$out/rounds.tsv" dp="$out/datapath.tsv"
for f in "$ev" "$rd" "$dp"; do
	[ -s "$f" ] || { echo "report: $f missing or empty" >&2; exit 1; }
done
DP_CONTENDERS="direct service haproxy-leastconn-1 haproxy-bounded-1 nginx-hash ringsteer-redirect ringsteer-kernel"
DP_MEASURES="throughput_gbps throughput_ratio rtt_p50_us rtt_avg_us rtt_ratio accept_p50_us accept_p99_us extra_process_tiers extra_sockets_per_supervisor"
# The pod topology's baselines (bench/compare/datapath_pods.sh), beside
# ringsteer-kernel's figures there (and its service_dnat_connects).
DP_POD_CONTENDERS="pods-direct pods-service"
DP_POD_MEASURES="throughput_gbps throughput_ratio rtt_p50_us rtt_avg_us rtt_ratio service_dnat_connects"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rs-report.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# Without headers or blank lines.
for f in evenness rounds datapath; do
	awk -F'\t' 'NF >= 3 && $1 != "contender"' "$out/$f.tsv" >"$tmp/$f"
done

# ---- the check -------------------------------------------------------------
missing=$(awk -F'\t' -v dpc="$DP_CONTENDERS" -v dpm="$DP_MEASURES" -v dppc="$DP_POD_CONTENDERS" -v dppm="$DP_POD_MEASURES" '
	function num(x) { return x ~ /^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/ }
	FILENAME ~ /evenness$/ { if (!($1 in ec)) { ec[$1]; eco[++nec] = $1 } if (!($2 in em)) { em[$2]; emo[++nem] = $2 }
		if (num($3)) ev[$1, $2] = 1; next }
	FILENAME ~ /rounds$/ { if (num($3)) { r[$1]++; if ($2 + 0 > maxr) maxr = $2 + 0; rr[$2] } next }
	{ if (num($3)) dv[$1, $2] = 1 }
	END {
		nr = 0; for (k in rr) nr++
		for (i = 1; i <= nec; i++) {
			for (j = 1; j <= nem; j++) if (!((eco[i], emo[j]) in ev)) printf " %s/%s", eco[i], emo[j]
			if (r[eco[i]] != nr) printf " %s/rounds(%d of %d)", eco[i], r[eco[i]], nr
		}
		n = split(dpc, c, " "); m = split(dpm, w, " ")
		for (i = 1; i <= n; i++) for (j = 1; j <= m; j++) if (!((c[i], w[j]) in dv)) printf " %s/%s", c[i], w[j]
		n = split(dppc, c, " "); m = split(dppm, w, " ")
		for (i = 1; i <= n; i++) for (j = 1; j <= m; j++) if (!((c[i], w[j]) in dv)) printf " %s/%s", c[i], w[j]
		if (!(("ringsteer-kernel", "service_dnat_connects") in dv)) printf " ringsteer-kernel/service_dnat_connects"
		if (!nec) printf " evenness.tsv:no-contender"
	}' "$tmp/evenness" "$tmp/rounds" "$tmp/datapath")
if [ -n "$missing" ]; then
	echo "report: missing figures:$missing" >&2
	exit 1
fi

# ---- tables ------------------------------------------------------------------
# table FILE [CONTENDERS]: measures as rows, contenders as columns (order of
# first appearance, or the list given); "-" where a contender has no figure;
# a measure none of them has is left out.
table() {
	awk -F'\t' -v list="${2:-}" '
		{ if (!($1 in c)) { c[$1]; co[++nc] = $1 } if (!($2 in m)) { m[$2]; mo[++nm] = $2 } v[$1, $2] = $3 }
		END {
			if (list != "") nc = split(list, co, " ")
			printf "| measure |"; for (i = 1; i <= nc; i++) printf " %s |", co[i]; printf "\n|---|"
			for (i = 1; i <= nc; i++) printf "---:|"; printf "\n"
			for (j = 1; j <= nm; j++) {
				any = 0
				for (i = 1; i <= nc; i++) if ((co[i], mo[j]) in v) any = 1
				if (!any) continue
				printf "| %s |", mo[j]
				for (i = 1; i <= nc; i++) printf " %s |", ((co[i], mo[j]) in v) ? v[co[i], mo[j]] : "-"
				printf "\n"
			}
		}' "$1"
}
# Mean max-min per contender over the rounds after the storm (round >= 1).
awk -F'\t' '$2 + 0 >= 1 { s[$1] += $3; n[$1]++ } END { for (c in s) printf "%s\t%.2f\n", c, s[c] / n[c] }' \
	"$tmp/rounds" | sort -t$'\t' -k2,2g >"$tmp/rounds_mean"

# reading FILE "MEASURE:lower|higher ..." ["CONTENDER:MEASURE ..."]: per measure,
# the best contender and every contender that beats the better of ringsteer's
# two on it; the pairs in the third argument are left out ("C:*": all of
# contender C's, for the baselines).
reading() {
	awk -F'\t' -v spec="$2" -v skip="${3:-}" '
		BEGIN { ns = split(skip, sk, " "); for (i = 1; i <= ns; i++) { split(sk[i], q, ":"); if (q[2] == "*") all[q[1]]; else skipped[q[1], q[2]] } }
		!(($1, $2) in skipped) && !($1 in all) { v[$1, $2] = $3; if (!($1 in c)) { c[$1]; co[++nc] = $1 } }
		END {
			n = split(spec, s, " ")
			for (k = 1; k <= n; k++) {
				split(s[k], p, ":"); w = p[1]; low = p[2] == "lower"
				best = ""; rs = ""
				for (i = 1; i <= nc; i++) {
					if (!((co[i], w) in v)) continue
					x = v[co[i], w] + 0
					if (best == "" || (low ? x < bx : x > bx)) { best = co[i]; bx = x }
					if (co[i] ~ /^ringsteer-/ && (rs == "" || (low ? x < rx : x > rx))) { rs = co[i]; rx = x }
				}
				if (best == "") continue
				beats = ""
				for (i = 1; i <= nc; i++) {
					if (co[i] ~ /^ringsteer-/ || co[i] == "direct" || !((co[i], w) in v)) continue
					x = v[co[i], w] + 0
					if (rs != "" && (low ? x < rx : x > rx)) beats = beats (beats == "" ? "" : ", ") co[i] " (" v[co[i], w] ")"
				}
				printf "- **%s** (%s is better): best %s (%s)", w, p[2], best, v[best, w]
				if (rs != "") {
					printf "; ringsteer'"'"'s best %s (%s)", rs, v[rs, w]
					if (beats != "") printf "; **beaten by** %s", beats
					else printf "; no other contender beats it"
				}
				printf ".\n"
			}
		}' "$1"
}

# ---- groups ----------------------------------------------------------------------
# evenness.sh runs a pass per supervisor count (SUPS): the first count's
# contenders carry no suffix, the others "@N".  Each pass is reported on its
# own (tables, chart, reading): figures of 40 and 400 supervisors side by side
# would compare nothing.  PASSES: the suffixes in order ("-" for none).
PASSES=$(cut -f1 "$tmp/evenness" | awk '{ i = index($0, "@"); g = i ? substr($0, i) : "-"; if (!s[g]++) print g }')
group_members() { # SUFFIX: the group's contenders, in order
	cut -f1 "$tmp/evenness" | awk -v g="$1" '{ i = index($0, "@"); s = i ? substr($0, i) : "-"; if (s == g && !seen[$0]++) print }' | tr '\n' ' '
}
group_file() { # SUFFIX FILE: FILE's lines of the group's contenders
	awk -F'\t' -v g="$1" '{ i = index($1, "@"); s = i ? substr($1, i) : "-"; if (s == g) print }' "$2"
}
group_n() { # SUFFIX: its supervisors per contender
	group_file "$1" "$tmp/evenness" | awk -F'\t' '$2 == "supervisors" { print $3; exit }'
}
chart_name() { [ "$1" = - ] && echo comparison-rounds || echo "comparison-rounds-${1#@}"; }

# ---- the charts ----------------------------------------------------------------
mkdir -p "$docs"
command -v gnuplot >/dev/null || { echo "report: gnuplot missing (make compare-datapath-deps)" >&2; exit 1; }
for g in $PASSES; do
	plot=""
	for c in $(group_members "$g"); do
		awk -F'\t' -v c="$c" '$1 == c { print $2, $3 }' "$tmp/rounds" | sort -n >"$tmp/r.$c"
		plot+="${plot:+, }'$tmp/r.$c' using 1:2 with linespoints title '${c%@*}'"
	done
	gp="set xlabel 'round (0: storm start)'; set ylabel 'max - min supervisors per gateway'; set key outside right;
set title 'max - min per round, $(group_n "$g") supervisors'; set grid; set yrange [0:*]; set xtics 1;"
	name=$(chart_name "$g")
	gnuplot -e "set terminal svg size 900,480 dynamic; set output '$docs/$name.svg'; $gp plot $plot" &&
		gnuplot -e "set terminal pngcairo size 900,480; set output '$docs/$name.png'; $gp plot $plot" ||
		{ echo "report: gnuplot failed on $name" >&2; exit 1; }
done

# ---- the document ---------------------------------------------------------------
# The contenders' configurations, from the scripts that run them.
"$here/contenders.sh" >"$tmp/contenders" || { echo "report: bench/compare/contenders.sh failed" >&2; exit 1; }
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
mem=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
{
	echo "# ringsteer against the Service, HAProxy and nginx"
	echo
	echo "Generated by \`bench/compare/report.sh\` from one run's TSVs; every figure below is read"
	echo "from them, and every contender's configuration from the scripts that run it"
	echo "(\`bench/compare/contenders.sh\`). Do not edit by hand: run \`make compare\` again."
	echo
	echo "- date of the run: $(date -u -r "$dp" '+%Y-%m-%d %H:%M UTC') (datapath.tsv written)"
	echo "- machine: $(nproc) CPUs ($cpu), $mem memory, Linux $(uname -r)"
	echo "- form: $([ "${QUICK:-0}" = 1 ] && echo 'QUICK=1 (the short form: `make compare-quick`)' || echo 'full (`make compare`)')"
	echo "- commands: \`make compare\` runs \`bench/compare/compare.sh BUILD OUT\`, which runs"
	echo "  \`bench/compare/evenness.sh BUILD OUT\`, \`bench/compare/datapath.sh OUT\` and"
	echo "  \`bench/compare/report.sh OUT\` (this file and the chart). The data path half alone:"
	echo "  \`bench/compare/datapath.sh OUT\` (\`QUICK=1\` for the short form)."
	echo
	cat "$tmp/contenders"
	echo
	echo "## Evenness and stability"
	echo
	echo "Supervisors per gateway on each contender (\`bench/compare/evenness.sh\`; the measures are"
	echo "explained in its header), 4 gateways, one pass per supervisor count. Lower is better"
	echo "except affinity_share. All but ringsteer-kernel run on one flat namespace, the proxies"
	echo "and the Service in front of the gateways; ringsteer-kernel runs where Kubernetes runs it:"
	echo "on the pod topology (2 nodes, a netns and cgroup per gateway and per supervisor, an agent"
	echo "per node steering at connect time, kube-proxy-shaped DNAT behind it)."
	for g in $PASSES; do
		members=$(group_members "$g")
		echo
		echo "### $(group_n "$g") supervisors"
		echo
		table "$tmp/evenness" "$members"
		echo
		echo "Mean max−min over the rounds after the storm start (from rounds.tsv):"
		echo
		echo "| contender | mean max−min |"
		echo "|---|---:|"
		group_file "$g" "$tmp/rounds_mean" | awk -F'\t' '{ printf "| %s | %s |\n", $1, $2 }'
		echo
		echo "![max − min per round per contender, $(group_n "$g") supervisors]($(chart_name "$g").svg)"
		echo
		echo "(also [PNG]($(chart_name "$g").png))"
	done
	if [ -s "$out/steering.tsv" ]; then
		echo
		echo "How the ringsteer contenders placed the storm start (\`OUT/steering.tsv\`): placement"
		echo "redirects the gateways sent per arriving supervisor and, for ringsteer-kernel, the"
		echo "connects kube-proxy's DNAT took per arriving supervisor (those the agents did not steer)."
		echo
		table "$out/steering.tsv"
	fi
	echo
	echo "## Data path and cost"
	echo
	echo "What a supervisor's established connection goes through on each path"
	echo "(\`bench/compare/datapath.sh\`): iperf3 throughput (Gbit/s, receiver), sockperf ping-pong"
	echo "round trip (µs, full round trip), each against the direct connection of the same topology"
	echo "as a ratio; connect-to-ACCEPT of fresh members (µs); the extra process tiers and the"
	echo "sockets per supervisor the path adds (counted at the proxy with connections held open)."
	echo "ringsteer-redirect's data figures are taken on the gateway's own address, where the"
	echo "redirect leaves the supervisor."
	echo
	echo "On one loopback namespace (throughput there is memory bandwidth, not a NIC's, and"
	echo "run-to-run noise of ±20% on it is usual):"
	echo
	table "$tmp/datapath" "${DP_CONTENDERS% ringsteer-kernel}"
	echo
	echo "ringsteer-kernel runs where Kubernetes runs it: on the pod topology (a netns and cgroup"
	echo "per pod, veth to the node, kube-proxy-shaped nftables DNAT on the node), where the node"
	echo "agent's cgroup connect4 program rewrites a registered member's connect to the ClusterIP"
	echo "into the chosen gateway pod before any packet exists. Its data figures are iperf3 and"
	echo "sockperf run as a registered member (\`bench/compare/datapath_pods.sh\`, \`bench/steer_exec\`),"
	echo "beside that topology's own baselines: pods-direct (to the gateway pod's IP) and"
	echo "pods-service (to the ClusterIP through the DNAT); service_dnat_connects counts the"
	echo "connections the DNAT rewrote during each one's runs. Its connect-to-ACCEPT is measured by"
	echo "\`bench/connect_steer.sh\` there and includes the registration with the node agent."
	echo
	table "$tmp/datapath" "$DP_POD_CONTENDERS ringsteer-kernel"
	echo
	echo "## Reading"
	echo
	echo "Generated from the figures above."
	echo
	for g in $PASSES; do
		group_file "$g" "$tmp/rounds_mean" >"$tmp/rm"
		group_file "$g" "$tmp/evenness" | awk -F'\t' '$2 != "supervisors"' >"$tmp/ev"
		best=$(head -n1 "$tmp/rm") worst=$(tail -n1 "$tmp/rm")
		rs=$(grep -E '^ringsteer-' "$tmp/rm" | head -n1)
		beat=$(awk -F'\t' -v r="${rs#*$'\t'}" '$1 !~ /^ringsteer-/ && $2 + 0 < r + 0 { printf "%s%s (%s)", s, $1, $2; s = ", " }' "$tmp/rm")
		echo "$(group_n "$g") supervisors:"
		echo
		echo "- Smallest mean max−min over the rounds: ${best%%$'\t'*} (${best#*$'\t'}); largest:"
		echo "  ${worst%%$'\t'*} (${worst#*$'\t'})."
		if [ -n "$rs" ]; then
			if [ -n "$beat" ]; then
				echo "- Contenders with a smaller mean max−min than ringsteer's best (${rs%%$'\t'*}, ${rs#*$'\t'}): **$beat**."
			else
				echo "- No other contender has a smaller mean max−min than ringsteer's best (${rs%%$'\t'*}, ${rs#*$'\t'})."
			fi
		fi
		reading "$tmp/ev" "$(cut -f2 "$tmp/ev" | awk '!s[$0]++' | awk '{ print $0 ":" ($0 ~ /affinity/ ? "higher" : "lower") }' | tr '\n' ' ')"
		echo
	done
	echo "Data path, measure by measure (throughput and round trip as ratios over the direct path"
	echo "of each one's own topology; the two direct paths, the baselines, are left out):"
	echo
	reading "$tmp/datapath" "throughput_ratio:higher rtt_ratio:lower accept_p50_us:lower accept_p99_us:lower extra_process_tiers:lower extra_sockets_per_supervisor:lower" \
		"direct:* pods-direct:*"
	echo
	awk -F'\t' '$1 == "ringsteer-redirect" && $2 ~ /_ratio$/ { r[$2] = $3 }
		END { printf "ringsteer-redirect against direct: throughput %s, round trip %s (ratios). After the\n", r["throughput_ratio"], r["rtt_ratio"]
		      printf "redirect both are the same path (supervisor to the gateway'"'"'s own address), so the distance\n"
		      printf "from 1 is this run'"'"'s noise on the machine, a yardstick for the other ratios.\n\n" }' "$tmp/datapath"
	awk -F'\t' '$2 == "extra_process_tiers" { t[$1] = $3 } $2 == "extra_sockets_per_supervisor" { k[$1] = $3 }
		END {
			for (c in t) if (c != "direct" && c !~ /^pods-/) { if (t[c] + 0 > 0 || k[c] + 0 > 0) a = a sprintf("%s%s (%s tier, %s sockets)", a == "" ? "" : ", ", c, t[c], k[c]); else b = b (b == "" ? "" : ", ") c }
			if (a != "") printf "Paths that add a process tier or sockets per supervisor: %s.\n", a
			if (b != "") printf "Paths that add neither: %s.\n", b
		}' "$tmp/datapath"
} >"$tmp/COMPARISON.md"
mv "$tmp/COMPARISON.md" "$docs/COMPARISON.md"
echo "report: wrote $docs/COMPARISON.md and its charts:$(for g in $PASSES; do printf " %s.{svg,png}" "$(chart_name "$g")"; done)"
