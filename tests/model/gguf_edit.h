// Test helper: copies a GGUF file with edits (keys dropped or set, tensors dropped, reshaped,
// retyped or added), to check how loading reacts to each defect.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "gguf/file.h"
#include "gguf/writer.h"

namespace zinc::test {

struct GgufEdits {
  std::vector<std::string> drop_keys;
  std::vector<std::pair<std::string, gguf::Value>> set_keys;
  std::vector<std::string> drop_tensors;
  std::map<std::string, std::vector<int64_t>> reshape;  // new shape; data zero
  std::map<std::string, TensorType> retype;            // new type; data zero
  std::map<std::string, std::vector<int64_t>> add_f32;  // new float32 tensors of this shape
  uint32_t alignment = 0;                               // general.alignment; 0: the source's
};

inline Status copy_gguf(const std::string& src, const std::string& dst, const GgufEdits& e) {
  ZINC_ASSIGN_OR_RETURN(auto f, gguf::open_file(src));
  gguf::Writer w(e.alignment ? e.alignment : f->alignment());
  for (const auto& kv : f->metadata()) w.set(std::string(kv.key), gguf::Value::from_view(kv.value));
  for (const auto& k : e.drop_keys) w.remove(k);
  for (const auto& [k, v] : e.set_keys) w.set(k, v);
  auto zero = [](std::span<uint8_t> out) {
    std::fill(out.begin(), out.end(), uint8_t(0));
    return ok_status();
  };
  for (const auto& t : f->tensors()) {
    const std::string name(t.name);
    bool drop = false;
    for (const auto& d : e.drop_tensors) drop |= d == name;
    if (drop) continue;
    std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + std::max<uint32_t>(t.n_dims, 1));
    if (auto it = e.reshape.find(name); it != e.reshape.end()) {
      ZINC_RETURN_IF_ERROR(w.add_tensor(name, TensorType::F32, it->second, zero));
    } else if (auto rt = e.retype.find(name); rt != e.retype.end()) {
      ZINC_RETURN_IF_ERROR(w.add_tensor(name, rt->second, ne, zero));
    } else {
      const uint8_t* data = t.data;
      const size_t n = t.size_bytes;
      ZINC_RETURN_IF_ERROR(w.add_tensor(name, t.type, ne, [data, n](std::span<uint8_t> out) {
        std::copy(data, data + n, out.begin());
        return ok_status();
      }));
    }
  }
  for (const auto& [name, shape] : e.add_f32) ZINC_RETURN_IF_ERROR(w.add_tensor(name, TensorType::F32, shape, zero));
  return w.write(dst);
}

}  // namespace zinc::test
