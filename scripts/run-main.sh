#!/usr/bin/env bash
# The main job of `make run`: pick a model and serve it (OpenAI API + web chat) until Ctrl-C.
# ZINC_HOST / ZINC_PORT / ZINC_PARALLEL / ZINC_CTX override the defaults.
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
host=${ZINC_HOST:-127.0.0.1}
port=${ZINC_PORT:-9090}
echo "zinc: serving $model at http://$host:$port/ (web chat; OpenAI API under /v1)" >&2
exec build/zinc serve -m "$model" --host "$host" --port "$port" --parallel "${ZINC_PARALLEL:-4}" -c "${ZINC_CTX:-4096}"
