#!/bin/bash
# Runs on the lent GPU machine after prepare.sh with M=build/zinc P=build/bench/vulkan_phase_bench
# O=build/bench/vulkan_ops_bench A=build/bench/vulkan_attention_bench (carry .gl and .dev): where
# a decode step's time goes, in one run, into $OUT (or .):
#   phases.txt     the phases inside each 8B decode matvec, staged and with x prequantized;
#   matvec.txt     the 8B decode matvecs as dependent dispatches, staged and with x prequantized;
#   attention.txt  the phases inside the decode attention kernel, three models, four depths;
#   profile.txt    `zinc bench --profile` of the 8B decode step (per op and per stage).
#   bash .dev/diag.sh
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
out=${OUT:-.} dir=/tmp/models
mkdir -p "$dir"
[ -f "$dir/llama3-8b.gguf" ] || .dev/zinc_M make-model -p llama3-8b --type Q4_K_M -o "$dir/llama3-8b.gguf" >/dev/null &
.dev/zinc_P 2>&1 | tee "$out/phases.txt"
.dev/zinc_O --benchmark_filter='^matvec(_swiglu)?(_px)?/Q(4|6)_K/[^/]*(/int8)?/iterations' 2>&1 | tee "$out/matvec.txt"
.dev/zinc_A --benchmark_filter='^attention_decode_phases/' 2>&1 | tee "$out/attention.txt"
wait
.dev/zinc_M bench -m "$dir/llama3-8b.gguf" -p 0 -n 16 -r 1 --profile --backend vulkan 2>&1 | tee "$out/profile.txt"
