# Sourced by the scripts run on the lent GPU machine (ab.sh, diag.sh), in the repository root
# there: installs the GL/Vulkan loader packages carried in .gl, puts the carried shared libraries
# on the library path, and unpacks the binaries prepare.sh put in .dev.
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done
ldconfig
export LD_LIBRARY_PATH=$PWD/.gl/lib
for f in .dev/zinc_*.gz; do [ -f "$f" ] && gunzip -f "$f"; done
chmod +x .dev/zinc_*

# The random-weight Q4_K_M models named in $2 (those missing) made by .dev/zinc_$1 in /tmp/models.
make_models() {
  local m
  mkdir -p /tmp/models
  for m in $2; do
    [ -f "/tmp/models/$m.gguf" ] || ".dev/zinc_$1" make-model -p "$m" --type Q4_K_M -o "/tmp/models/$m.gguf" >/dev/null &
  done
  wait
}
