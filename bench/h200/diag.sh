#!/bin/bash
# Runs on the lent GPU machine after prepare.sh with M=build/zinc P=build/bench/vulkan_phase_bench
# O=build/bench/vulkan_ops_bench A=build/bench/vulkan_attention_bench (carry .gl and .dev): where
# a decode step's time goes, in one run, into $OUT (or .):
#   phases.txt         the phases inside each 8B decode matvec, staged and with x prequantized;
#   matvec.txt         the 8B decode matvecs as dependent dispatches, staged and x prequantized;
#   attention.txt      the phases inside the decode attention kernel, three models, four depths;
#   profile_MODEL.txt  `zinc bench --profile` of each model's decode step (per op and per stage).
#   bash .dev/diag.sh [models]    (default llama3-8b; e.g. "llama3-8b qwen3-30b-a3b qwen35-35b-a3b")
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
out=${OUT:-.} dir=/tmp/models models=${1:-llama3-8b}
mkdir -p "$dir"
for m in $models; do
  [ -f "$dir/$m.gguf" ] || .dev/zinc_M make-model -p "$m" --type Q4_K_M -o "$dir/$m.gguf" >/dev/null &
done
.dev/zinc_P 2>&1 | tee "$out/phases.txt"
.dev/zinc_O --benchmark_filter='^matvec(_swiglu)?(_px)?/Q(4|6)_K/[^/]*(/int8)?/iterations' 2>&1 | tee "$out/matvec.txt"
.dev/zinc_A --benchmark_filter='^attention_decode_phases/' 2>&1 | tee "$out/attention.txt"
wait
for m in $models; do
  .dev/zinc_M bench -m "$dir/$m.gguf" -p 0 -n 16 -r 1 --profile --backend vulkan 2>&1 | tee "$out/profile_$m.txt"
done
