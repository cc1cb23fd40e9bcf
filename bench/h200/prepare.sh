#!/bin/bash
# Prepares a side-by-side decode benchmark on the lent GPU machine (see README.md here), run in
# the repository root of this machine: the GL/Vulkan loader packages the NVIDIA driver needs
# into .gl, the shared libraries zinc's binaries link (absent there) into .gl/lib, and the given
# binaries stripped and gzipped into .dev as zinc_<NAME> (the tree sent there is at most 64 MiB).
#   bash bench/h200/prepare.sh M=path/to/zinc [B=path/to/other/zinc ...]
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
grep -qx '/.gl/' .git/info/exclude 2>/dev/null || echo /.gl/ >>.git/info/exclude
grep -qx '/.dev/' .git/info/exclude 2>/dev/null || echo /.dev/ >>.git/info/exclude
mkdir -p .gl/lib .dev /tmp/amd64/partial
if ! ls .gl/libglx0_*.deb >/dev/null 2>&1; then
  o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
  apt-get $o update >/dev/null
  # libvulkan1 alone is not enough: without libglvnd's libraries the NVIDIA ICD fails with
  # "Could not get 'vkCreateInstance'" (VK_ERROR_INCOMPATIBLE_DRIVER).
  (cd .gl && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 2>/dev/null)
fi
for arg in "$@"; do
  name=${arg%%=*} bin=${arg#*=}
  [ -x "$bin" ] || { echo "prepare: $bin is not an executable" >&2; exit 1; }
  ldd "$bin" | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in libc.so*|libm.so*|libgcc_s.so*|libstdc++.so*|ld-linux*) ;; *) cp -L "$lib" .gl/lib/ ;; esac
  done
  strip -o ".dev/zinc_$name" "$bin"
  gzip -f ".dev/zinc_$name"
done
cp bench/h200/ab.sh bench/h200/diag.sh bench/h200/table.sh bench/h200/device_env.sh .dev/
du -sh .gl .dev
