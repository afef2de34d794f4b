#!/usr/bin/env bash
# tests/run.sh [--run PREFIX] [--harness criterion|ours] BUILD_DIR [TESTS]
#
# Runs every test program under BUILD_DIR (or only those named in TESTS,
# name1,name2) and prints one closing line, "ukprobes: N passed, N
# failed", summed over the programs' Criterion synthesis lines (our
# harness, tests/harness/, prints the same line).  Exits non-zero if any
# test failed or crashed, or a program died.
#
# --run PREFIX runs each program through PREFIX, e.g. "qemu-aarch64 -L
# SYSROOT" for a cross build.  --harness says what the programs were built
# with: Criterion cannot run under such a prefix (its runner re-executes
# the program, and without binfmt_misc the host refuses the foreign
# binary), so that combination is refused up front.
#
# The scenario programs run twice: as they are, and again with a Linux
# uprobe on their libc (tests/support/foreign_uprobe.c), as every process
# on a machine where bpftrace or perf probe watches libc has one.  That
# second pass needs the kernel's permission (root or CAP_PERFMON); without
# it, it is reported as not run.
set -u
runner=()
harness=criterion
while [ $# -gt 0 ]; do
	case $1 in
	--run)     read -r -a runner <<<"$2"; shift 2 ;;
	--harness) harness=$2; shift 2 ;;
	*)         break ;;
	esac
done
B=${1:-build}
only=${2:-}
case $harness in
criterion|ours) ;;
*) echo "tests/run.sh: --harness criterion or ours, not '$harness'" >&2; exit 2 ;;
esac
if [ ${#runner[@]} -gt 0 ] && [ "$harness" = criterion ]; then
	echo "tests/run.sh: Criterion's runner cannot run through '${runner[*]}': build with HARNESS=ours" >&2
	exit 2
fi
pass=0; fail=0; progs_failed=()
# Sanitizer builds: leaks inside Criterion itself are not ours.
export LSAN_OPTIONS="suppressions=$(cd "$(dirname "$0")" && pwd)/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

# run_prog PROGRAM LABEL [ENV=VALUE...]
run_prog() {
	local t=$1 name=$2 log rc line p f timeout=120
	shift 2
	# Criterion's --timeout overrides each test's own: the real-world
	# programs (millions of traps) and the 10,000 churn cycles (each a
	# grace period of several scheduler ticks) get more on a loaded machine.
	case $t in */realworld/* | */scenario/churn) timeout=400 ;; esac
	echo "=== $name"
	log=$(mktemp)
	# -j2: the machine has two cores; each test still forks on its own.
	env "$@" "${runner[@]}" "$t" -j2 --timeout "$timeout" 2>&1 | tee "$log"
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
if [ ${#runner[@]} -gt 0 ]; then
	# The host kernel's uprobe would sit on a file qemu only translates.
	echo "note: scenarios beside a Linux uprobe not run (programs run through ${runner[0]##*/})"
elif [ -z "${UKP_TEST_UPROBE:-}" ]; then
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
