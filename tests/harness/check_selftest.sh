#!/usr/bin/env bash
# tests/harness/check_selftest.sh [--run PREFIX] PROGRAM
#
# Runs the harness's self-test (selftest.c, built with our harness or with
# Criterion) and checks that every test ended as its name says (pass_,
# fail_, crash_, timeout_, skip_), the closing counts, the exit status, a
# --filter run, and a few lines of output.  PREFIX runs the program (e.g.
# "qemu-aarch64 -L SYSROOT").  Prints "selftest: N passed, N failed".
set -u
run=()
if [ "${1:-}" = --run ]; then
	read -r -a run <<<"$2"
	shift 2
fi
prog=${1:?usage: check_selftest.sh [--run PREFIX] PROGRAM}
ok=0; bad=0
check() {	# check WHAT CONDITION-EXIT-STATUS
	if [ "$2" -eq 0 ]; then ok=$((ok + 1)); else bad=$((bad + 1)); echo "selftest: FAILED: $1"; fi
}

out=$(mktemp); tap=$(mktemp); trap 'rm -f "$out" "$tap"' EXIT
# (Criterion writes its TAP lines to the file; ours prints them anyway)
"${run[@]}" "$prog" -j2 --timeout 60 --tap="$tap" >"$out" 2>&1
rc=$?
[ -s "$tap" ] || cp "$out" "$tap"
check "exit status 1 when tests fail (was $rc)" $([ $rc -eq 1 ]; echo $?)

# The tests and how they must end, from the program's own list.
names=$("${run[@]}" "$prog" --list 2>&1 | sed -n 's|^\(selftest[a-z_]*\)/\([a-z0-9_]*\).*|\1::\2|p')
[ -n "$names" ] || names=$(grep -oE 'selftest[a-z_]*::[a-z0-9_]+' "$tap" | sort -u)
n_pass=0; n_fail=0; n_crash=0; n_timeout=0
for id in $names; do
	kind=${id#*::}; kind=${kind%%_*}
	line=$(grep -aE "^(not )?ok( [0-9]+)? - $id( |:|$)" "$tap" | tail -n 1)
	case $kind in
	pass)    n_pass=$((n_pass + 1)); want='^ok' ;;
	fail)    n_fail=$((n_fail + 1)); want='^not ok' ;;
	crash)   n_crash=$((n_crash + 1)); want='^not ok' ;;
	timeout) n_timeout=$((n_timeout + 1)); want='^not ok' ;;
	skip)    want='^ok.*# SKIP' ;;
	*)       continue ;;
	esac
	if [ "$kind" = pass ] && [[ "$line" == *"# SKIP"* ]]; then line="(skipped) $line"; fi
	[[ "$line" =~ $want ]]
	check "$id ends as $kind: '${line:-no result line}'" $?
done
tested=$((n_pass + n_fail + n_crash + n_timeout))
synth=$(grep -a 'Synthesis:' "$out" | tail -n 1)
want="Tested: $tested | Passing: $n_pass | Failing: $((n_fail + n_crash + n_timeout)) | Crashing: $n_crash"
[[ "$synth" == *"$want"* ]]
check "synthesis '$synth' has '$want'" $?

grep -q 'selftest: expect goes on' "$out"; check "a failed cr_expect goes on" $?
! grep -q 'selftest: after assert' "$out"; check "a failed cr_assert stops the test" $?
grep -q 'selftest: fini after assert' "$out"; check ".fini runs after a failed cr_assert" $?

# Only the pass_ tests of the first suite: all pass, exit 0.
"${run[@]}" "$prog" -j2 --filter 'selftest/pass_*' >"$out" 2>&1
rc=$?
np=$(grep -c '^selftest::pass_' <<<"$names")
grep -aq "Tested: $np | Passing: $np | Failing: 0 | Crashing: 0" "$out"
check "--filter 'selftest/pass_*' runs the $np pass_ tests: $(grep -a Synthesis: "$out")" $?
check "exit status 0 when all pass (was $rc)" $([ $rc -eq 0 ]; echo $?)

echo "selftest: $ok passed, $bad failed"
[ $bad -eq 0 ]
