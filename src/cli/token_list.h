// Parses "1,2,3" command-line token lists (logits, run).
#pragma once

#include <charconv>
#include <string>
#include <vector>

#include "core/status.h"

namespace zinc::cli {

inline Result<std::vector<int32_t>> parse_token_list(const std::string& flag, const std::string& text) {
  std::vector<int32_t> out;
  size_t i = 0;
  while (i <= text.size()) {
    size_t j = text.find(',', i);
    if (j == std::string::npos) j = text.size();
    const std::string item = text.substr(i, j - i);
    int32_t v = 0;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || p != item.data() + item.size() || v < 0)
      return error("%s: '%s' is not a token id (expected a list like 1,2,3)", flag.c_str(), item.c_str());
    out.push_back(v);
    i = j + 1;
  }
  return out;
}

}  // namespace zinc::cli
