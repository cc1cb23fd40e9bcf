#!/bin/bash
# Runs on the lent GPU machine after prepare.sh (carry .gl and .dev): docs/ARCHITECTURE.md's speed
# table for one binary over random-weight Q4_K_M models made there: pp512 (-p 512 -n 0 -r 3),
# tg128 (-p 0 -n 128 -r 2) and tg128 at depth 4096 (-d 4096 -r 1), each after the bench's warm-up.
#   bash .dev/table.sh M "llama3-8b qwen3-30b-a3b qwen35-35b-a3b"
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
name=${1:-M} models=${2:-llama3-8b} dir=/tmp/models
make_models "$name" "$models"
.dev/zinc_$name devices | head -n 3
for m in $models; do
  echo "$m"
  .dev/zinc_$name bench -m "$dir/$m.gguf" -p 512 -n 0 -r 3 --backend vulkan | grep 'pp512'
  .dev/zinc_$name bench -m "$dir/$m.gguf" -p 0 -n 128 -r 2 --backend vulkan | grep 'tg128'
  .dev/zinc_$name bench -m "$dir/$m.gguf" -p 0 -n 128 -d 4096 -r 1 --backend vulkan | grep 'tg128'
done
