#!/usr/bin/env bash
# The quick start: a real benchmark on any machine, no GPU, no download
# beyond the npm registry. It checks the lock, installs node-llama-cpp into
# rigor's engine cache (once), writes the synthetic model (once), runs
# llama.cpp through it, records the run, prints the result with its spread,
# and compares it with the previous quick-start run on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
rigor=./bin/rigor

for tool in node npm; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "quickstart: $tool is not installed; node-llama-cpp needs Node.js 18 or newer with npm" >&2
		exit 1
	fi
done

echo "== rigor vet quickstart: the experiment, checked against the schema"
$rigor vet quickstart

echo "== rigor lock --check quickstart: node-llama-cpp and the synthetic model are pinned"
$rigor lock --check quickstart

echo "== rigor run quickstart/tiny"
$rigor run quickstart/tiny --no-commit

cat <<MSG

quickstart: the record is in results/quickstart/tiny/ (git ignores that
directory, so your checkout stays clean). Keep a run with
  git add -f results/quickstart/tiny/<run id>.json results/quickstart/tiny/<run id>
Run 'make quickstart' again to compare a second run with this one, or
  $rigor log quickstart/tiny
to see them all. To call rigor by name, put it on your PATH:
  export PATH="$PWD/bin:\$PATH"     # this checkout's bin/rigor, for this shell
  make install                       # or copy it to Go's bin directory
MSG
