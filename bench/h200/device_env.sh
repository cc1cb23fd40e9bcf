# Sourced by the scripts run on the lent GPU machine (ab.sh, diag.sh), in the repository root
# there: installs the GL/Vulkan loader packages carried in .gl, puts the carried shared libraries
# on the library path, and unpacks the binaries prepare.sh put in .dev.
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null; done
ldconfig
export LD_LIBRARY_PATH=$PWD/.gl/lib
for f in .dev/zinc_*.gz; do [ -f "$f" ] && gunzip -f "$f"; done
chmod +x .dev/zinc_*
