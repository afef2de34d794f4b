#!/usr/bin/env bash
# bench/tracer_malloc.sh BUILD_DIR - every event of a program that calls
# malloc 1 M times (issue 15): how long the traced run takes, side by side
# in the same run, with every event recorded:
#   untraced        the program alone
#   ukprobe         ukprobe trace -o FILE.ukp -e 'p:libc.so.6:malloc' (defaults)
#   ukprobe-text    the same to a text file (formatted by the command)
#   ukprobe-count   ukprobe trace -c (counts only, no records)
#   uftrace         uftrace record --force -F malloc (entry and exit records;
#                   --force: library calls of a program built without -pg)
# Times are wall clock of the whole command (start, tracing, writing, exit),
# median of RUNS, the mechanisms taking turns within each run.  The events
# recorded are counted afterwards (ukprobe report; uftrace report's Calls),
# not timed.  Goal: ukprobe < 0.5 x uftrace, every event kept.
# Prints a table and writes bench/tracer_malloc.json (or $BENCH_MALLOC_OUT).
set -u
B=${1:-build}
out=${BENCH_MALLOC_OUT:-bench/tracer_malloc.json}
UKP=$B/ukprobe
N=${BENCH_MALLOC_ITERS:-1000000}
RUNS=${BENCH_MALLOC_RUNS:-5}
PROG=$B/bench/malloc_loop
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

[ -x "$UKP" ] || { echo "tracer_malloc: build $UKP first" >&2; exit 1; }
mkdir -p "$(dirname "$PROG")"
cc -O2 -o "$PROG" bench/tracer/malloc_loop.c || exit 1
command -v uftrace >/dev/null || bash scripts/install-deps.sh uftrace >/dev/null 2>&1 ||
	echo "tracer_malloc: could not install uftrace (its row will say n/a)"

ns() { date +%s%N; }
median() {
	sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "n/a"}'
}

# run MECH: one run; prints "seconds events"
run() {
	local t0 t1 ev
	case $1 in
	untraced)
		t0=$(ns); "$PROG" "$N" >/dev/null || return 1; t1=$(ns); ev=0 ;;
	ukprobe)
		t0=$(ns)
		"$UKP" trace -o "$tmp/m.ukp" -e 'p:libc.so.6:malloc' -- "$PROG" "$N" >/dev/null \
			2>"$tmp/err" || return 1
		t1=$(ns)
		ev=$("$UKP" report "$tmp/m.ukp" | grep -c 'p_malloc_0: (malloc+0x0/') ;;
	ukprobe-text)
		t0=$(ns)
		"$UKP" trace -o "$tmp/m.txt" -e 'p:libc.so.6:malloc' -- "$PROG" "$N" >/dev/null \
			2>"$tmp/err" || return 1
		t1=$(ns)
		ev=$(grep -c 'p_malloc_0: (malloc+0x0/' "$tmp/m.txt") ;;
	ukprobe-count)
		t0=$(ns)
		"$UKP" trace -c -o "$tmp/m.cnt" -e 'p:libc.so.6:malloc' -- "$PROG" "$N" >/dev/null \
			2>"$tmp/err" || return 1
		t1=$(ns)
		ev=$(sed -nE 's/^@count\[.*\]: ([0-9]+)/\1/p' "$tmp/m.cnt") ;;
	uftrace)
		command -v uftrace >/dev/null || return 1
		rm -rf "$tmp/uft"
		t0=$(ns)
		uftrace record --force -d "$tmp/uft" -F malloc "$PROG" "$N" >/dev/null 2>&1 || return 1
		t1=$(ns)
		ev=$(uftrace report -d "$tmp/uft" 2>/dev/null | awk '$NF == "malloc" { print $(NF-1) }' |
		     head -n 1) ;;
	esac
	awk -v a="$t0" -v b="$t1" -v e="${ev:-0}" 'BEGIN { printf "%.4f %s\n", (b - a) / 1e9, e }'
}

mechs="untraced ukprobe ukprobe-text ukprobe-count uftrace"
for m in $mechs; do : >"$tmp/$m.t"; : >"$tmp/$m.e"; done
for ((i = 0; i < RUNS; i++)); do
	for m in $mechs; do
		r=$(run "$m") || continue
		read -r t e <<<"$r"
		echo "$t" >>"$tmp/$m.t"
		echo "$e" >>"$tmp/$m.e"
	done
done
declare -A T E
for m in $mechs; do
	T[$m]=$(median <"$tmp/$m.t")
	E[$m]=$(median <"$tmp/$m.e")
done
ratio=$(awk -v a="${T[ukprobe]}" -v b="${T[uftrace]}" \
	'BEGIN { if (a+0 > 0 && b+0 > 0) printf "%.3f", a / b; else print "n/a" }')
printf '\ntracer: %s calls of malloc, every one recorded (median of %s runs, wall clock)\n' "$N" "$RUNS"
printf 'on %s, %s CPUs, load %s\n' "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)" \
	"$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-14s %10s %12s\n' mechanism seconds events
for m in $mechs; do
	printf '%-14s %10s %12s\n' "$m" "${T[$m]}" "${E[$m]}"
done
# The program calls malloc N + 1 times (printf's buffer); uftrace sees the
# program's own N calls (through its PLT), ukprobe every call in libc.
printf 'ukprobe / uftrace time: %s (goal < 0.5; events kept: ukprobe %s of %s malloc calls, uftrace %s of the program'"'"'s own %s)\n' \
	"$ratio" "${E[ukprobe]}" "$((N + 1))" "${E[uftrace]}" "$N"
{
	printf '{"calls": %s, "runs": %s, "clock": "wall, whole command",\n' "$N" "$RUNS"
	printf ' "cpu": "%s", "ncpus": %s, "load_at_end": "%s",\n "rows": [' \
		"$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)" "$(nproc)" \
		"$(cut -d' ' -f1-3 /proc/loadavg)"
	sep=
	for m in $mechs; do
		printf '%s\n  {"name": "%s", "seconds": "%s", "events": "%s"}' "$sep" "$m" "${T[$m]}" "${E[$m]}"
		sep=,
	done
	printf '],\n "ratio_ukprobe_over_uftrace": "%s"}\n' "$ratio"
} >"$out"
echo "tracer_malloc: wrote $out"
