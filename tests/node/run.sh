#!/usr/bin/env bash
# ctest driver for the real-client tests: run.sh (openai|anthropic|webchat) ZINC_BINARY MODEL.
# Exits 77 (ctest SKIP) when node >= 18, the npm packages (scripts/install-deps.sh), chromium
# (webchat only) or `zinc serve` are missing; the test model missing is a skip too, except in CI.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
which=$1 bin=$2 model=$3
skip() { echo "SKIP: $*"; exit 77; }

command -v node >/dev/null 2>&1 || skip "node is not installed (scripts/install-deps.sh)"
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 18 ] || skip "node $(node --version) is older than 18"
[ -d "$here/node_modules/openai" ] && [ -d "$here/node_modules/@anthropic-ai/sdk" ] && [ -d "$here/node_modules/playwright-core" ] ||
  skip "tests/node/node_modules is missing: run scripts/install-deps.sh (npm ci in tests/node)"
if [ "$which" = webchat ]; then
  chromium=${ZINC_CHROMIUM:-/usr/bin/chromium}
  [ -x "$chromium" ] || skip "no chromium at $chromium (apt install chromium, or set ZINC_CHROMIUM)"
  export ZINC_CHROMIUM=$chromium
fi
if [ ! -f "$model" ]; then
  [ "${CI:-}" = true ] && { echo "FAIL: test model missing: $model"; exit 1; }
  skip "TEST DATA MISSING: $model (set ZINC_TEST_DATA)"
fi
"$bin" --help 2>/dev/null | grep -qE "^ +serve " || skip "this zinc has no serve command"

export ZINC_BIN=$bin ZINC_TEST_MODEL=$model
exec node "$here/${which}_test.mjs"
