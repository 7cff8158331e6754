#!/usr/bin/env bash
# The quick start: what a new user's first command does on a fresh clone.
#
# Until the node-llama-cpp engine and `rigor run` land (issues 5 and 7), it
# checks the seed experiments and prints the exact commands rigor would run
# for them; it does not benchmark anything yet.
set -euo pipefail
cd "$(dirname "$0")/.."
rigor=./bin/rigor

echo "== rigor vet: every experiment in experiments/, checked against the schema"
$rigor vet

echo
echo "== rigor list"
$rigor list

echo
echo "== rigor show minimax-m27-b70/kvoffload --plan: the exact processes a run would start"
$rigor show minimax-m27-b70/kvoffload --plan

echo
echo "== rigor show minimax-m27-int4-b70/vllmThroughput --plan"
$rigor show minimax-m27-int4-b70/vllmThroughput --plan

echo
echo "quickstart: checked and planned the seed experiments (no benchmark was run: the engines are not wired in yet)."
