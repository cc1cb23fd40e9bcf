// Python's json.dumps over template values, as Hugging Face's `tojson` filter calls it:
// ensure_ascii=False by default, separators (", ", ": ") without indent and ("," , ": ") with it,
// keys in insertion order unless sort_keys.
#pragma once

#include <optional>
#include <string>

#include "chat/value.h"

namespace zinc::chat {

struct JsonFormat {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // one level of indentation; absent: everything on one line
  std::optional<std::string> item_separator;
  std::optional<std::string> key_separator;
  bool sort_keys = false;
};

// Fails on values JSON cannot hold (Undefined, namespaces, macros) like json.dumps's TypeError.
std::string dump_json(const Value& v, const JsonFormat& format);

}  // namespace zinc::chat
