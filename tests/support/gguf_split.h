// Test helper: writes a GGUF file as a split model, as llama-gguf-split does: PREFIX-0000i-of-0000N.gguf,
// the first with every metadata key, each with split.no and split.count, the tensors in order
// over the parts. `edit(i, writer)` may change part i before it is written.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "gguf/file.h"
#include "gguf/writer.h"

namespace zinc::test {

inline std::string split_part_path(const std::string& prefix, int i, int n) {
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, "-%05d-of-%05d.gguf", i + 1, n);
  return prefix + suffix;
}

inline Status write_split(const std::string& src, const std::string& prefix, int n,
                          const std::function<void(int, gguf::Writer&)>& edit = nullptr) {
  ZINC_ASSIGN_OR_RETURN(auto f, gguf::open_file(src));
  const auto& tensors = f->tensors();
  const size_t per = (tensors.size() + size_t(n) - 1) / size_t(n);
  for (int i = 0; i < n; ++i) {
    gguf::Writer w(f->alignment());
    if (i == 0)
      for (const auto& kv : f->metadata()) w.set(std::string(kv.key), gguf::Value::from_view(kv.value));
    w.set("split.no", gguf::Value::u16(uint16_t(i)));
    w.set("split.count", gguf::Value::u16(uint16_t(n)));
    if (i == 0) w.set("split.tensors.count", gguf::Value::i32(int32_t(tensors.size())));
    for (size_t t = size_t(i) * per; t < std::min(tensors.size(), size_t(i + 1) * per); ++t) {
      const gguf::TensorInfo& info = tensors[t];
      std::vector<int64_t> ne(info.ne.begin(), info.ne.begin() + std::max<uint32_t>(info.n_dims, 1));
      const uint8_t* data = info.data;
      const size_t bytes = info.size_bytes;
      ZINC_RETURN_IF_ERROR(w.add_tensor(std::string(info.name), info.type, ne, [data, bytes](std::span<uint8_t> out) {
        std::copy(data, data + bytes, out.begin());
        return ok_status();
      }));
    }
    if (edit) edit(i, w);
    ZINC_RETURN_IF_ERROR(w.write(split_part_path(prefix, i, n)));
  }
  return ok_status();
}

}  // namespace zinc::test
