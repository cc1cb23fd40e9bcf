// The deepest nesting of arrays and objects in JSON text (strings skipped), for checks before
// parsing: nlohmann copies, prints and destroys values recursively, so text nested deeper than a
// caller allows is refused up front (request bodies, JSON a model wrote).
#pragma once

#include <algorithm>
#include <string_view>

namespace zinc {

inline int json_depth(std::string_view text) {
  int depth = 0, max_depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      max_depth = std::max(max_depth, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return max_depth;
}

}  // namespace zinc
