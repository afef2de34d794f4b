#!/usr/bin/env bash
# bench/tracer_rate.sh BUILD_DIR - the tracer's event rate (issues 6, 15): a
# probe with two fetched arguments on a hot function, traced to a file
#   ukprobe      ukprobe trace -o FILE.ukp -e 'p:bench/ev workload:FN a=%di:u64 b=%si:x64'
#                (default settings: the probe optimized, the records written
#                as they are, formatted afterwards by ukprobe report)
#   ukprobe-text the same into a text file (-o FILE: the command formats)
#   ukprobe-int3 FILE.ukp with UKPROBES_OPTIMIZATION=0 (a breakpoint per hit)
#   bpftrace     bpftrace -o FILE 'uprobe:workload:FN { printf("%d %x\n", arg0, arg1); }'
# over the same workload (bench/workload, which times its own loop).
# Events per second = events written / time (ukprobe: the whole traced
# command, until its last record is in the file; bpftrace: the loop, which
# it cannot outrun); ns per traced call = the loop's wall time per call
# minus the unprobed call's.  Events are counted in the files (ukprobe
# report for FILE.ukp, not timed); lost = what the tracer says it lost
# (ukprobe marks each loss in its output: [LOST N EVENTS]).  The ratio is
# taken with lost events excluded: events written, not events made.
# Then runs bench/tracer_malloc.sh (ukprobe against uftrace).
# Prints a table and writes bench/tracer.json (or $BENCH_TRACER_OUT).
set -u
B=${1:-build}
out=${BENCH_TRACER_OUT:-bench/tracer.json}
W=$B/bench/workload
UKP=$B/ukprobe
FN=bench_fn_push_rbp
N=${BENCH_TRACER_ITERS:-2000000}
RUNS=${BENCH_TRACER_RUNS:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

field() {	# field NAME LINE
	sed -nE "s/.* $1=([^ ]+).*/\1/p" <<<"$2"
}

median() {
	sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "n/a"}'
}

base_ns() {
	local line
	line=$("$W" push_rbp "$N" 2>/dev/null | grep '^ok') || { echo n/a; return; }
	field wall_ns "$line"
}

# run_ukprobe FILE [ENV...]: one run; prints "events wall_ns_per_call lost
# total_ns" (total: the whole traced command, until the command has written
# the last record, so that a rate is never taken over a shorter time than
# it took to write the events)
run_ukprobe() {
	local f=$tmp/$1 line ev lost t0 t1
	shift
	rm -f "$f"
	t0=$(date +%s%N)
	line=$(env "$@" "$UKP" trace -o "$f" \
		-e "p:bench/ev $(basename "$W"):$FN a=%di:u64 b=%si:x64" \
		-- "$W" push_rbp "$N" --warmup 0 2>"$tmp/ukp.err" | grep '^ok') || {
		echo "n/a n/a n/a n/a"; return; }
	t1=$(date +%s%N)
	case $f in
	*.ukp) ev=$("$UKP" report "$f" 2>/dev/null | grep -c ' ev: ') ;;
	*) ev=$(grep -c ' ev: ' "$f" 2>/dev/null) ;;
	esac
	lost=$(sed -nE 's/.* ([0-9]+) events? lost.*/\1/p' "$tmp/ukp.err" | tail -n 1)
	echo "${ev:-0} $(field wall_ns "$line") ${lost:-0} $((t1 - t0))"
}

run_bpftrace() {
	local f=$tmp/bpf.txt line ev pid
	command -v bpftrace >/dev/null || { echo "n/a n/a n/a n/a"; return; }
	rm -f "$f"
	bpftrace -o "$f" -e "uprobe:$(realpath "$W"):$FN { printf(\"%d %x\\n\", arg0, arg1); }" \
		>"$tmp/bpf.err" 2>&1 &
	pid=$!
	line=$("$W" push_rbp "$N" --warmup 0 --wait-probe 20 --settle-ms 300 2>/dev/null | grep '^ok')
	sleep 1
	kill -INT "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	[ -n "$line" ] || { echo "n/a n/a n/a n/a"; return; }
	ev=$(grep -cE '^[0-9]+ [0-9a-f]+$' "$f" 2>/dev/null || echo 0)
	local lost
	lost=$(grep -oE '[0-9]+ (events )?lost' "$tmp/bpf.err" "$f" 2>/dev/null | grep -oE '^[^:]*:?[0-9]+' | grep -oE '[0-9]+$' | paste -sd+ | bc 2>/dev/null)
	# bpftrace writes as the events come (the loop is its bottleneck):
	# its rate is over the loop's time.
	echo "$ev $(field wall_ns "$line") ${lost:-0} $(awk -v w="$(field wall_ns "$line")" -v n="$N" 'BEGIN { printf "%.0f", w * n }')"
}

[ -x "$W" ] && [ -x "$UKP" ] || { echo "tracer_rate: build $W and $UKP first" >&2; exit 1; }
base=$(base_ns)
declare -A rate cost drops
mechs="ukprobe ukprobe-text ukprobe-int3 bpftrace"
for mech in $mechs; do
	: >"$tmp/$mech.rates"; : >"$tmp/$mech.costs"; : >"$tmp/$mech.drops"
	for ((i = 0; i < RUNS; i++)); do
		case $mech in
		ukprobe) r=$(run_ukprobe ukp.ukp UKPROBES_OPTIMIZATION=1) ;;
		ukprobe-text) r=$(run_ukprobe ukp.txt UKPROBES_OPTIMIZATION=1) ;;
		ukprobe-int3) r=$(run_ukprobe ukp.ukp UKPROBES_OPTIMIZATION=0) ;;
		bpftrace) r=$(run_bpftrace) ;;
		esac
		read -r ev wall dr total <<<"$r"
		[ "$ev" = n/a ] && continue
		awk -v e="$ev" -v t="$total" 'BEGIN { if (t > 0) printf "%.0f\n", e / (t / 1e9) }' >>"$tmp/$mech.rates"
		awk -v w="$wall" -v b="$base" 'BEGIN { printf "%.1f\n", w - b }' >>"$tmp/$mech.costs"
		echo "$dr" >>"$tmp/$mech.drops"
	done
	rate[$mech]=$(median <"$tmp/$mech.rates")
	cost[$mech]=$(median <"$tmp/$mech.costs")
	drops[$mech]=$(median <"$tmp/$mech.drops")
done

ratio=$(awk -v a="${rate[ukprobe]}" -v b="${rate[bpftrace]}" 'BEGIN { if (a+0 > 0 && b+0 > 0) printf "%.1f", a / b; else print "n/a" }')
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
printf '\ntracer: %s calls of %s with two fetched arguments, traced to a file (median of %s runs)\n' "$N" "$FN" "$RUNS"
printf 'on %s, %s CPUs, load %s\n' "$cpu" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-14s %14s %16s %10s\n' mechanism "events/s" "ns/traced call" lost
for mech in $mechs; do
	printf '%-14s %14s %16s %10s\n' "$mech" "${rate[$mech]}" "${cost[$mech]}" "${drops[$mech]}"
done
printf 'ukprobe / bpftrace events written per second: %s (goal >= 10, none lost)\n' "$ratio"

{
	printf '{"iterations": %s, "runs": %s, "function": "%s", "unprobed_call_ns": "%s",\n' "$N" "$RUNS" "$FN" "$base"
	printf ' "cpu": "%s", "ncpus": %s,\n' "$cpu" "$(nproc)"
	printf ' "rows": ['
	sep=
	for mech in $mechs; do
		printf '%s\n  {"name": "%s", "events_per_s": "%s", "ns_per_traced_call": "%s", "lost": "%s"}' \
			"$sep" "$mech" "${rate[$mech]}" "${cost[$mech]}" "${drops[$mech]}"
		sep=,
	done
	printf '],\n "ratio_ukprobe_over_bpftrace": "%s"}\n' "$ratio"
} >"$out"
echo "tracer_rate: wrote $out"
bash "$(dirname "$0")/tracer_malloc.sh" "$B"
