#!/usr/bin/env bash
# Installs the Debian packages named on the command line that are missing.
# Used by `make deps` (and so by `make demo`, `make check`, `make bench`).
set -euo pipefail
missing=()
for p in "$@"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "ukprobes: installing missing Debian packages: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null; then SUDO=sudo; else
		echo "ukprobes: need root to install: ${missing[*]}" >&2; exit 1
	fi
else
	SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
