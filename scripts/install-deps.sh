#!/usr/bin/env bash
# Installs exactly what zinc's build and tests need, from Debian 12 packages. Idempotent:
# packages already present are not touched, and apt is not called when nothing is missing.
set -euo pipefail

packages=(
  # build
  g++ cmake ninja-build make pkg-config
  # libraries (header-only where possible)
  nlohmann-json3-dev libcpp-httplib-dev libcli11-dev libssl-dev libpcre2-dev
  # the CA certificates https downloads (zinc pull, -hf) are checked against
  ca-certificates
  # Vulkan: headers, loader, shader compiler, lavapipe for tests
  libvulkan-dev libvulkan1 glslc mesa-vulkan-drivers
  # line editing and history for zinc chat (BSD licence; the binary then needs libedit2)
  libedit-dev
  # tests, benchmarks, fuzzing
  libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev
  # a self-signed certificate for the https test of zinc serve
  openssl
  # headless browser for the web chat test
  chromium
)
# node and npm run the official openai and Anthropic clients and playwright-core in tests; a machine may
# already have them from another source (nodesource ships npm inside nodejs).
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -ne 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The npm packages of tests/node (openai, @anthropic-ai/sdk, playwright-core), exactly as package-lock.json pins
# them; npm runs only when node_modules is missing or the lock changed. Without them (offline)
# the node tests skip.
node_dir="$(cd "$(dirname "$0")/.." && pwd)/tests/node"
stamp="$node_dir/node_modules/.zinc-lock-sha256"
lock_sha=$(sha256sum "$node_dir/package-lock.json" | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$lock_sha" ]; then
  echo "install-deps: npm ci in tests/node"
  if (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error); then
    echo "$lock_sha" > "$stamp"
  else
    echo "install-deps: warning: npm ci failed in tests/node; the node tests will be skipped" >&2
  fi
fi
