#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# check_abi.sh - the symbols libukprobes.so exports vs the version script.
#
#   tests/abi/check_abi.sh build/libukprobes.so.0.1.0 src/ukprobes.map
#
# As libbpf's check_abi does, but without readelf-format guessing:
#  - every dynamic symbol the library defines must be listed (by name or by a
#    glob) under "global:" of a node of the map; one that is not is a FAILURE
#    (it leaked: missing UKP_API discipline, or a map that forgot it);
#  - a name of the map that the library does not define yet (kretprobe and
#    jprobe calls not written yet) is reported as "not yet defined", and is
#    not a failure;
#  - the version nodes themselves (absolute symbols such as UKPROBES_0.1) and
#    the linker's own names (_init, _fini, _edata, _end, __bss_start) are
#    ignored.
# nm prints "name@@NODE" (default version) or "name@NODE" on binutils >= 2.35
# and the bare name before; both are handled, and a default version that is
# not a node of the map is a failure too.
set -euo pipefail

lib=${1:-build/libukprobes.so.0.1.0}
map=${2:-src/ukprobes.map}
NM=${NM:-nm}

[ -f "$lib" ] || { echo "abi: $lib: no such file (run make lib)" >&2; exit 2; }
[ -f "$map" ] || { echo "abi: $map: no such file" >&2; exit 2; }

# --- The map: node names and global patterns --------------------------------
# Drop /* */ comments (also across lines) and # comments, then walk the tokens:
#   NODE {  global: a; b;  local: *;  } [PARENT];
map_tokens=$(sed -e 's/#.*$//' "$map" |
	awk 'BEGIN { c = 0 }
	{
		out = ""; s = $0
		while (length(s) > 0) {
			if (c) {
				i = index(s, "*/")
				if (i == 0) { s = ""; break }
				s = substr(s, i + 2); c = 0
			} else {
				i = index(s, "/*")
				if (i == 0) { out = out s; s = ""; break }
				out = out substr(s, 1, i - 1) " "; s = substr(s, i + 2); c = 1
			}
		}
		print out
	}' |
	sed -e 's/[{};]/ & /g' -e 's/:/ : /g' | tr -s ' \t' '\n' | sed '/^$/d')

nodes=()
globals=()
state=top		# top | node | global | local
prev=
while IFS= read -r tok; do
	case $state:$tok in
	top:'{') nodes+=("$prev"); state=node ;;
	top:*) ;;
	*:'}') state=top ;;
	*:global) state=global_colon ;;
	*:local) state=local_colon ;;
	global_colon:':') state=global ;;
	local_colon:':') state=local ;;
	global:';') ;;
	global:*) globals+=("$tok") ;;
	*) ;;
	esac
	prev=$tok
done <<<"$map_tokens"

if [ ${#nodes[@]} -eq 0 ] || [ ${#globals[@]} -eq 0 ]; then
	echo "abi: FAIL: could not parse any version node or global name in $map"
	exit 1
fi

is_node() {
	local n
	for n in "${nodes[@]}"; do [ "$n" = "$1" ] && return 0; done
	return 1
}

in_map() {
	local g
	for g in "${globals[@]}"; do
		# shellcheck disable=SC2053  # $g may be a glob on purpose
		[[ $1 == $g ]] && return 0
	done
	return 1
}

# --- The library: defined dynamic symbols -----------------------------------
if ! nm_out=$("$NM" -D --defined-only "$lib" 2>&1); then
	echo "abi: FAIL: $NM -D --defined-only $lib: $nm_out"
	exit 1
fi

declare -A defined=()
fail=0
while read -r line; do
	[ -n "$line" ] || continue
	# "ADDR TYPE NAME" (the address may be absent for some types).
	read -r -a f <<<"$line"
	n=${#f[@]}
	name=${f[n - 1]}
	type=
	[ "$n" -ge 2 ] && type=${f[n - 2]}
	ver=
	case $name in
	*@@*) ver=${name#*@@}; name=${name%%@@*} ;;
	*@*) ver=${name#*@}; name=${name%%@*} ;;
	esac
	# A version node is exported as an absolute symbol named after it.
	if [ "$type" = A ] && is_node "$name"; then continue; fi
	case $name in
	_init | _fini | _edata | _end | __bss_start) continue ;;
	esac
	if [ -n "$ver" ] && ! is_node "$ver"; then
		echo "abi: FAIL: $name has version $ver, which is not a node of $map"
		fail=1
	fi
	defined[$name]=1
done <<<"$nm_out"

leaked=()
for s in "${!defined[@]}"; do
	in_map "$s" || leaked+=("$s")
done

missing=()
for g in "${globals[@]}"; do
	case $g in *[*?[]*) continue ;; esac	# a glob need not match anything
	[ -n "${defined[$g]:-}" ] || missing+=("$g")
done

echo "abi: $lib exports ${#defined[@]} symbols; $map lists ${#globals[@]} (nodes: ${nodes[*]})"
if [ ${#missing[@]} -gt 0 ]; then
	mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort)
	echo "abi: not yet defined (in the map, not in the library; not a failure): ${missing[*]}"
fi
if [ ${#leaked[@]} -gt 0 ]; then
	mapfile -t leaked < <(printf '%s\n' "${leaked[@]}" | sort)
	echo "abi: FAIL: exported but not in $map: ${leaked[*]}"
	fail=1
fi
if [ "$fail" -ne 0 ]; then
	echo "abi: FAILED"
	exit 1
fi
echo "abi: ok"
