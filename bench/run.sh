#!/usr/bin/env bash
# bench/run.sh BUILD_DIR PROGRAM... - runs the bench programs one after the
# other, each printing its table, and writes bench/results.json (or
# $BENCH_OUT): the machine, the load average at start and end, every row and
# every ratio.  A program that fails is recorded and the next one still runs.
set -u
B=$1
shift
out=${BENCH_OUT:-bench/results.json}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A JSON string from $1.
js() {
	local s=$1
	s=${s//\\/\\\\}
	s=${s//\"/\\\"}
	s=${s//$'\t'/\\t}
	s=${s//$'\n'/\\n}
	printf '"%s"' "$s"
}

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
date_start=$(date -u +%Y-%m-%dT%H:%M:%SZ)
uname_a=$(uname -a)
kernel=$(uname -r)
cpu=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
ncpu=$(nproc)
hyp=false
grep -qw hypervisor /proc/cpuinfo && hyp=true
cc_version=$(${CC:-cc} --version 2>/dev/null | head -n 1)

echo "ukprobes bench  $date_start"
echo "  $uname_a"
echo "  cpu: $cpu  nproc: $ncpu  hypervisor: $hyp"
echo "  load average at start: $load_start"
echo "  runs: ${BENCH_RUNS:-7}  scale: ${BENCH_SCALE:-1}  pinned: ${BENCH_CPU:-no}"

progs_json=()
for p in "$@"; do
	name=$(basename "$p")
	[ "$p" = "${p%/nolib/*}" ] || name="$name (no library)"
	log="$B/bench/$(basename "$p").log"
	mkdir -p "$B/bench"
	: >"$log"
	echo
	echo "=== $name"
	start=$(date +%s)
	if [ -x "$p" ]; then
		"$p" --out "$tmp/$(basename "$p")" --log "$log"
		rc=$?
	else
		echo "$p: not built" >&2
		rc=127
	fi
	secs=$(( $(date +%s) - start ))
	[ "$rc" -eq 0 ] || echo "!!! $name exited with status $rc"
	progs_json+=("{\"name\": $(js "$name"), \"status\": $rc, \"seconds\": $secs, \"log\": $(js "$log")}")
done

load_end=$(cut -d' ' -f1-3 /proc/loadavg)
echo
echo "load average at end: $load_end"

rows=$(cat "$tmp"/*.rows 2>/dev/null | sed 's/^/    /' | sed '$!s/$/,/')
ratios=$(cat "$tmp"/*.ratios 2>/dev/null | sed 's/^/    /' | sed '$!s/$/,/')
progs=$(printf '    %s\n' "${progs_json[@]}" | sed '$!s/$/,/')
pin=null
[ -n "${BENCH_CPU:-}" ] && pin=${BENCH_CPU}

{
	echo "{"
	echo "  \"machine\": {"
	echo "    \"uname\": $(js "$uname_a"),"
	echo "    \"kernel\": $(js "$kernel"),"
	echo "    \"cpu_model\": $(js "$cpu"),"
	echo "    \"nproc\": $ncpu,"
	echo "    \"hypervisor\": $hyp"
	echo "  },"
	echo "  \"date\": $(js "$date_start"),"
	echo "  \"load_average\": {\"start\": $(js "$load_start"), \"end\": $(js "$load_end")},"
	echo "  \"config\": {\"runs\": ${BENCH_RUNS:-7}, \"scale\": ${BENCH_SCALE:-1}, \"pinned_cpu\": $pin, \"cc\": $(js "$cc_version"), \"cflags\": \"-O2 -g\"},"
	echo "  \"rows\": ["
	[ -n "$rows" ] && echo "$rows"
	echo "  ],"
	echo "  \"ratios\": {"
	[ -n "$ratios" ] && echo "$ratios"
	echo "  },"
	echo "  \"programs\": ["
	echo "$progs"
	echo "  ]"
	echo "}"
} >"$out"
echo "wrote $out"

# The side-by-side tables, the ratios across programs and the chart, all
# read back from $out (bench/report.py).
if command -v python3 >/dev/null; then
	python3 bench/report.py --json "$out" summary ||
		echo "!!! bench/report.py summary failed"
	python3 bench/report.py --json "$out" chart "${out%.json}.svg" ||
		echo "!!! no chart (see above)"
else
	echo "no summary and no chart: python3 is not installed"
fi
