#!/usr/bin/env bash
# Runs every test program under $1 (build dir) and prints one closing line,
# "ukprobes: N passed, N failed", summed over the Criterion programs.
# Exits non-zero if any test failed or crashed, or a program died.
#
# The scenario programs run twice: as they are, and again with a Linux
# uprobe on their libc (tests/support/foreign_uprobe.c), as every process
# on a machine where bpftrace or perf probe watches libc has one.  That
# second pass needs the kernel's permission (root or CAP_PERFMON); without
# it, it is reported as not run.
set -u
B=${1:-build}
only=${2:-}
pass=0; fail=0; progs_failed=()
# Sanitizer builds: leaks inside Criterion itself are not ours.
export LSAN_OPTIONS="suppressions=$(cd "$(dirname "$0")" && pwd)/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

# run_prog PROGRAM LABEL [ENV=VALUE...]
run_prog() {
	local t=$1 name=$2 log rc line p f timeout=120
	shift 2
	# Criterion's --timeout overrides each test's own: the real-world
	# programs (millions of traps) get more on a loaded machine.
	case $t in */realworld/*) timeout=400 ;; esac
	echo "=== $name"
	log=$(mktemp)
	# -j2: the machine has two cores; each test still forks on its own.
	env "$@" "$t" -j2 --timeout "$timeout" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	line=$(grep -a 'Synthesis:' "$log" | tail -n 1)
	rm -f "$log"
	if [ -z "$line" ]; then
		echo "!!! $name printed no synthesis (exit $rc)"; fail=$((fail + 1)); progs_failed+=("$name"); return
	fi
	p=$(sed -E 's/.*Passing: ([0-9]+).*/\1/' <<<"$line")
	f=$(sed -E 's/.*Failing: ([0-9]+).*/\1/' <<<"$line")
	pass=$((pass + p)); fail=$((fail + f))
	if [ "$rc" -ne 0 ] || [ "$f" -ne 0 ]; then progs_failed+=("$name"); fi
}

selected() {
	[ -z "$only" ] || [[ ",$only," == *",$1,"* ]]
}

for t in "$B"/tests/unit/* "$B"/tests/scenario/* "$B"/tests/realworld/* "$B"/tests/tool/*; do
	[ -x "$t" ] && [ -f "$t" ] || continue
	name=$(basename "$t")
	selected "$name" || continue
	run_prog "$t" "$name"
done

# The second pass: the same scenarios beside a foreign uprobe.
if [ -z "${UKP_TEST_UPROBE:-}" ]; then
	if [ "$(id -u)" -eq 0 ] && [ -r /sys/bus/event_source/devices/uprobe/type ]; then
		for t in "$B"/tests/scenario/*; do
			[ -x "$t" ] && [ -f "$t" ] || continue
			name=$(basename "$t")
			selected "$name" || continue
			run_prog "$t" "$name+uprobe" UKP_TEST_UPROBE=require
		done
	else
		echo "note: scenarios beside a Linux uprobe not run (needs root and the uprobe PMU)"
	fi
fi
[ ${#progs_failed[@]} -eq 0 ] || echo "failing programs: ${progs_failed[*]}"
echo "ukprobes: $pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ ${#progs_failed[@]} -eq 0 ]
