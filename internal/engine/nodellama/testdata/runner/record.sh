#!/bin/sh
# record.sh DIR: re-records the runner outputs of this directory with the
# runner in ../../runner, run from DIR, an install of node-llama-cpp 3.22.1
# (DIR/node_modules) holding tiny.gguf (the tiny-llama fixture's shape,
# written by internal/gguf; the quick start's tiny), small.gguf (the quick
# start's small, as rigor writes it into its cache's models/synthetic) and
# badarch.gguf (tiny.gguf with general.architecture "qwama").
set -u
T=$(cd "$(dirname "$0")" && pwd)
cp "$T/../../runner/rigor-bench.mjs" "$1/" && cd "$1" || exit 1
rec() { name=$1; shift; node rigor-bench.mjs "$@" >"$T/$name.stdout" 2>"$T/$name.stderr"; echo $? >"$T/$name.rc"; }
rec ok_pp32_tg16_r2 --model tiny.gguf -p 32 -n 16 -r 2 --threads 1
rec ok_small_quickstart --model small.gguf -p 32 -n 16 -r 5 --threads 1
rec ok_public_sweep --model tiny.gguf -p 16 -n 8 -r 2 --threads 1,2 -pg 8,4 -d 0,16 --api public
rec err_not_gguf --model /etc/hostname -p 32 -n 16
rec err_unknown_arch --model badarch.gguf -p 32 -n 16
rec err_missing_model --model /nonexistent/model.gguf -p 32
rec err_unknown_arg --model tiny.gguf --bogus 1
rec err_bad_value --model tiny.gguf -p abc
rec err_small_context --model tiny.gguf -p 512 -n 128 --context-size 64
# killed by SIGKILL once the first row is out
node rigor-bench.mjs --model tiny.gguf -p 32 -n 3000 -r 30 --threads 1 >"$T/crash_killed.stdout" 2>"$T/crash_killed.stderr" &
pid=$!
for i in $(seq 1 200); do grep -q '"test":"pp32"' "$T/crash_killed.stdout" 2>/dev/null && break; sleep 0.05; done
kill -9 $pid; wait $pid; echo $? >"$T/crash_killed.rc"
sed -i 's#"model_filename":"\([^"]*/\)\{0,1\}\([^"/]*\)"#"model_filename":"\2"#' "$T"/*.stdout
sed -i "s#'badarch.gguf'#'/models/badarch.gguf'#" "$T/err_unknown_arch.stderr"
