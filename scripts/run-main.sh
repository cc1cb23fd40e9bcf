#!/usr/bin/env bash
# The main job of `make run`: pick a model and serve it (OpenAI API + web chat) until Ctrl-C.
# ZINC_HOST / ZINC_PORT / ZINC_PARALLEL / ZINC_CTX override the defaults; ZINC_HF=OWNER/NAME[:QUANT]
# serves a Hugging Face model instead (downloaded into the hub cache the first time).
set -euo pipefail
cd "$(dirname "$0")/.."
host=${ZINC_HOST:-127.0.0.1}
port=${ZINC_PORT:-9090}
serve=(--host "$host" --port "$port" --parallel "${ZINC_PARALLEL:-4}" -c "${ZINC_CTX:-4096}")
if [ -n "${ZINC_HF:-}" ]; then
  echo "zinc: serving $ZINC_HF at http://$host:$port/ (web chat; OpenAI API under /v1)" >&2
  exec build/zinc serve --hf-repo "$ZINC_HF" "${serve[@]}"
fi
models_dir=${ZINC_MODELS_DIR:-models}
model=${ZINC_MODEL:-}
if [ -z "$model" ] && [ -d "$models_dir" ]; then
  model=$(find "$models_dir" -maxdepth 1 -name '*.gguf' | sort | head -n 1)
fi
if [ -z "$model" ]; then
  echo "error: no model: set ZINC_MODEL=/path/to/model.gguf or ZINC_HF=owner/name:quant, or put a .gguf file in $models_dir/" >&2
  exit 1
fi
echo "zinc: serving $model at http://$host:$port/ (web chat; OpenAI API under /v1)" >&2
exec build/zinc serve -m "$model" "${serve[@]}"
