// libFuzzer target for the GGUF reader: any byte string either fails to open with a Status or
// opens into a File whose every metadata value and every tensor byte can be read in bounds.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/quant.h"
#include "gguf/file.h"

namespace {

using zinc::gguf::ValueType;

volatile uint64_t g_sink;  // keeps the reads from being optimized away

uint64_t touch(std::string_view s) {
  uint64_t h = s.size();
  for (char c : s) h = h * 31 + uint8_t(c);
  return h;
}

uint64_t touch_value(const zinc::gguf::ValueView& v) {
  uint64_t h = uint64_t(v.type);
  switch (v.type) {
    case ValueType::STRING:
      return h + touch(v.str);
    case ValueType::ARRAY:
      if (v.array_type == ValueType::STRING) {
        for (auto s : v.array_strings) h += touch(s);
      } else {
        for (uint64_t i = 0; i < v.array_count; ++i)
          h += uint64_t(v.array_int(i)) + uint64_t(v.array_float(i) != 0);
      }
      // The owning copy the quantizer makes of every value.
      return h + zinc::gguf::Value::from_view(v).data.index();
    default:
      return h + v.scalar.u64 + v.is_integer() + v.is_float();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = zinc::gguf::File::from_memory(std::span<const uint8_t>(data, size));
  if (!file.ok()) {
    g_sink = file.status().message().size();
    return 0;
  }
  const zinc::gguf::File& f = **file;
  uint64_t h = f.version() + f.alignment() + f.data_offset();
  for (const auto& kv : f.metadata()) {
    h += touch(kv.key) + touch_value(kv.value);
    if (f.find(kv.key) != &kv.value) __builtin_trap();
    // The typed look-ups either succeed or explain the mismatch.
    h += f.find_u32(kv.key).ok() + f.find_f32(kv.key).ok() + f.find_bool(kv.key).ok();
    h += f.find_string(kv.key).ok() + f.find_uint(kv.key).ok();
    h += f.find_array(kv.key, ValueType::STRING).ok();
  }
  h += f.architecture().size();
  std::vector<float> row;
  for (const auto& t : f.tensors()) {
    if (f.find_tensor(t.name) != &t) __builtin_trap();
    h += touch(t.name) + t.shape_string().size();
    const auto bytes = f.tensor_bytes(t);
    if (bytes.data() < data || bytes.data() + bytes.size() > data + size) __builtin_trap();
    for (uint8_t b : bytes) h += b;
    // Dequantize the first rows of types this build can convert (touches the bytes again
    // through the block layouts).
    if (zinc::can_dequantize(t.type) && t.ne[0] > 0 && t.ne[0] <= 4096) {
      row.resize(size_t(t.ne[0]));
      const int64_t n_rows = t.n_elements() / t.ne[0];
      for (int64_t r = 0; r < n_rows && r < 4; ++r) {
        zinc::dequantize_row(t.type, bytes.data() + r * t.row_bytes(), row.data(), t.ne[0]);
        for (float x : row) h += x != 0.0f;
      }
    }
  }
  g_sink = h;
  return 0;
}
