#!/usr/bin/env bash
# Runs every test program under $1 (build dir) and prints one closing line,
# "ukprobes: N passed, N failed", summed over the Criterion programs.
# Exits non-zero if any test failed or crashed, or a program died.
set -u
B=${1:-build}
only=${2:-}
pass=0; fail=0; progs_failed=()
# Sanitizer builds: leaks inside Criterion itself are not ours.
export LSAN_OPTIONS="suppressions=$(cd "$(dirname "$0")" && pwd)/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
for t in "$B"/tests/unit/* "$B"/tests/scenario/* "$B"/tests/realworld/* "$B"/tests/tool/*; do
	[ -x "$t" ] && [ -f "$t" ] || continue
	name=$(basename "$t")
	if [ -n "$only" ] && [[ ",$only," != *",$name,"* ]]; then continue; fi
	echo "=== $name"
	log=$(mktemp)
	# -j2: the machine has two cores; each test still forks on its own.
	"$t" -j2 --timeout 120 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	line=$(grep -a 'Synthesis:' "$log" | tail -n 1)
	rm -f "$log"
	if [ -z "$line" ]; then
		echo "!!! $name printed no synthesis (exit $rc)"; fail=$((fail + 1)); progs_failed+=("$name"); continue
	fi
	p=$(sed -E 's/.*Passing: ([0-9]+).*/\1/' <<<"$line")
	f=$(sed -E 's/.*Failing: ([0-9]+).*/\1/' <<<"$line")
	c=$(sed -E 's/.*Crashing: ([0-9]+).*/\1/' <<<"$line")
	pass=$((pass + p)); fail=$((fail + f))
	if [ "$rc" -ne 0 ] || [ "$f" -ne 0 ]; then progs_failed+=("$name"); fi
	: "$c"
done
[ ${#progs_failed[@]} -eq 0 ] || echo "failing programs: ${progs_failed[*]}"
echo "ukprobes: $pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ ${#progs_failed[@]} -eq 0 ]
