#!/usr/bin/env bash
# The main job of `make run`: pick a model and run zinc on it.
set -euo pipefail
cd "$(dirname "$0")/.."
models_dir=${ZINC_MODELS_DIR:-models}
model=${ZINC_MODEL:-}
if [ -z "$model" ] && [ -d "$models_dir" ]; then
  model=$(find "$models_dir" -maxdepth 1 -name '*.gguf' | sort | head -n 1)
fi
if [ -z "$model" ]; then
  echo "error: no model: set ZINC_MODEL=/path/to/model.gguf or put a .gguf file in $models_dir/" >&2
  exit 1
fi
echo "zinc: running $model" >&2
exec build/zinc run -m "$model" -p "${ZINC_PROMPT:-Once upon a time}" -n "${ZINC_N:-128}"
