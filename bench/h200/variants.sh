#!/bin/bash
# Builds zinc variants for a decode A/B on the lent GPU machine and prepares them (prepare.sh),
# run in the repository root of this machine on a clean tree that `make build` has built once:
#   bash bench/h200/variants.sh M= S=matvec_flags_spec SP=matvec_flags_spec+attention_probes
# NAME=PATCH[+PATCH...] applies bench/h200/PATCH.patch (each in turn), builds the zinc target,
# keeps the binary as /tmp/bins/zinc_NAME and restores the tree; NAME= is the tree as it is.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
[ -z "$(git status --porcelain -- src tests)" ] || { echo "variants: src or tests has uncommitted or untracked files" >&2; exit 1; }
mkdir -p /tmp/bins
args=()
for arg in "$@"; do
  name=${arg%%=*} patches=${arg#*=}
  if [ -n "$patches" ]; then
    for p in ${patches//+/ }; do git apply "bench/h200/$p.patch"; done
  fi
  if ! cmake --build build --target zinc >/tmp/bins/build_$name.log 2>&1; then
    echo "variants: $name failed to build (/tmp/bins/build_$name.log)" >&2
    git checkout -- src tests
    exit 1
  fi
  cp build/zinc "/tmp/bins/zinc_$name"
  git checkout -- src tests
  git clean -fdq -- src tests
  args+=("$name=/tmp/bins/zinc_$name")
  echo "variants: $name built"
done
cmake --build build --target zinc >/dev/null  # the tree's own binary again
rm -rf .dev
bash bench/h200/prepare.sh "${args[@]}"
