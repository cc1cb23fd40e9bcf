#!/bin/bash
# Runs on the lent GPU machine after prepare.sh (carry .gl and .dev): decode A/B of the binaries
# in .dev over random-weight Q4_K_M models made there, alternating binaries within each round so
# that the node's speed cancels out.
#   bash .dev/ab.sh "M B" "llama3-8b qwen3-30b-a3b" [rounds] [extra bench flags]
# With TOKENS=1, each binary also generates 64 greedy tokens per model and prints a hash of
# them, so that an A/B shows whether the binaries agree as well as their speed. With PROFILE=1,
# each binary's `zinc bench --profile` of one decode step per model goes to
# $OUT/profile_MODEL_NAME.txt (per op with a barrier after each, then the stages as they run).
# With STATS=1, each binary's pipelines that use local memory (docs/DECODE_LOG.md, session 29).
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
names=${1:-M} models=${2:-llama3-8b} rounds=${3:-2} extra=${4:-}
first=${names%% *} dir=/tmp/models
make_models "$first" "$models"
.dev/zinc_$first devices | head -n 3
for m in $models; do  # a first short run warms the clocks
  .dev/zinc_$first bench -m "$dir/$m.gguf" -p 0 -n 16 -r 1 --backend vulkan >/dev/null
  for r in $(seq "$rounds"); do
    for n in $names; do
      printf '%s %s: ' "$m" "$n"
      .dev/zinc_$n bench -m "$dir/$m.gguf" -p 0 -n 128 -r 2 $extra --backend vulkan | grep 'tg128' | awk -F'|' '{print $7, $8, $9}'
    done
  done
done
if [ "${TOKENS:-0}" = 1 ]; then
  for m in $models; do
    for n in $names; do
      printf '%s %s tokens: ' "$m" "$n"
      .dev/zinc_$n run -m "$dir/$m.gguf" -p 'The quick brown fox' -n 64 --temp 0 --backend vulkan 2>/dev/null | md5sum | cut -c1-12
    done
  done
fi
if [ "${STATS:-0}" = 1 ]; then  # pipelines with local memory (its size is printed as 2^36 + bytes)
  for m in $models; do
    for n in $names; do
      echo "$m $n: pipelines with local memory"
      ZINC_PIPELINE_STATS=1 .dev/zinc_$n run -m "$dir/$m.gguf" -p hi -n 2 --backend vulkan 2>&1 |
        grep '^pipeline' | grep -v 'Local Memory Size=68719476736 ' | sed 's/Stack Size=0 //'
    done
  done
fi
if [ "${PROFILE:-0}" = 1 ]; then
  for m in $models; do
    for n in $names; do
      .dev/zinc_$n bench -m "$dir/$m.gguf" -p 0 -n 16 -r 1 --profile --backend vulkan >"${OUT:-.}/profile_${m}_$n.txt" 2>&1
    done
  done
fi
