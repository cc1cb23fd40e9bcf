// Byte counts as people read them, for the CLI and download progress.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace zinc {

// "762.81 MiB": binary units, two decimals past bytes.
inline std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.2f %s" : "%.0f %s", v, units[u]);
  return buf;
}

}  // namespace zinc
