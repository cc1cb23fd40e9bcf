#include "gguf/value.h"

#include <cstdint>

#include "core/check.h"

namespace zinc::gguf {

const char* value_type_name(ValueType t) {
  static const char* kNames[] = {"UINT8", "INT8",  "UINT16", "INT16",  "UINT32", "INT32", "FLOAT32",
                                 "BOOL",  "STRING", "ARRAY", "UINT64", "INT64",  "FLOAT64"};
  uint32_t id = uint32_t(t);
  return id <= kMaxValueType ? kNames[id] : "INVALID";
}

size_t value_type_size(ValueType t) {
  switch (t) {
    case ValueType::UINT8: case ValueType::INT8: case ValueType::BOOL: return 1;
    case ValueType::UINT16: case ValueType::INT16: return 2;
    case ValueType::UINT32: case ValueType::INT32: case ValueType::FLOAT32: return 4;
    case ValueType::UINT64: case ValueType::INT64: case ValueType::FLOAT64: return 8;
    case ValueType::STRING: case ValueType::ARRAY: return 0;
  }
  return 0;
}

bool ValueView::is_integer() const {
  switch (type) {
    case ValueType::UINT8: case ValueType::INT8: case ValueType::UINT16: case ValueType::INT16:
    case ValueType::UINT32: case ValueType::INT32: case ValueType::UINT64: case ValueType::INT64:
      return true;
    default:
      return false;
  }
}

namespace {
template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Float to int64 without undefined behaviour: truncates, saturates out of range, NaN gives 0.
int64_t saturating_int(double x) {
  if (!(x == x)) return 0;
  if (x >= 9223372036854775807.0) return INT64_MAX;
  if (x <= -9223372036854775808.0) return INT64_MIN;
  return int64_t(x);
}
}  // namespace

int64_t ValueView::array_int(uint64_t i) const {
  ZINC_CHECK(type == ValueType::ARRAY && i < array_count);
  const uint8_t* p = array_data + i * value_type_size(array_type);
  switch (array_type) {
    case ValueType::UINT8: return load<uint8_t>(p);
    case ValueType::INT8: return load<int8_t>(p);
    case ValueType::BOOL: return load<uint8_t>(p) != 0;
    case ValueType::UINT16: return load<uint16_t>(p);
    case ValueType::INT16: return load<int16_t>(p);
    case ValueType::UINT32: return load<uint32_t>(p);
    case ValueType::INT32: return load<int32_t>(p);
    case ValueType::UINT64: return int64_t(load<uint64_t>(p));
    case ValueType::INT64: return load<int64_t>(p);
    case ValueType::FLOAT32: return saturating_int(load<float>(p));
    case ValueType::FLOAT64: return saturating_int(load<double>(p));
    default: ZINC_CHECK(false && "array_int on a non-numeric array");
  }
  return 0;
}

double ValueView::array_float(uint64_t i) const {
  ZINC_CHECK(type == ValueType::ARRAY && i < array_count);
  const uint8_t* p = array_data + i * value_type_size(array_type);
  if (array_type == ValueType::FLOAT32) return load<float>(p);
  if (array_type == ValueType::FLOAT64) return load<double>(p);
  if (array_type == ValueType::UINT64) return double(load<uint64_t>(p));
  return double(array_int(i));
}

Value Value::string_array(const std::vector<std::string>& items) {
  Array a;
  a.reserve(items.size());
  for (const auto& s : items) a.push_back(Value::string(s));
  return array(ValueType::STRING, std::move(a));
}

Value Value::f32_array(const std::vector<float>& items) {
  Array a;
  a.reserve(items.size());
  for (float f : items) a.push_back(Value::f32(f));
  return array(ValueType::FLOAT32, std::move(a));
}

Value Value::i32_array(const std::vector<int32_t>& items) {
  Array a;
  a.reserve(items.size());
  for (int32_t v : items) a.push_back(Value::i32(v));
  return array(ValueType::INT32, std::move(a));
}

Value Value::u32_array(const std::vector<uint32_t>& items) {
  Array a;
  a.reserve(items.size());
  for (uint32_t v : items) a.push_back(Value::u32(v));
  return array(ValueType::UINT32, std::move(a));
}

Value Value::from_view(const ValueView& v) {
  switch (v.type) {
    case ValueType::UINT8: case ValueType::UINT16: case ValueType::UINT32: case ValueType::UINT64:
    case ValueType::BOOL:
      return {v.type, ValueType::UINT8, v.scalar.u64};
    case ValueType::INT8: case ValueType::INT16: case ValueType::INT32: case ValueType::INT64:
      return {v.type, ValueType::UINT8, v.scalar.i64};
    case ValueType::FLOAT32: case ValueType::FLOAT64:
      return {v.type, ValueType::UINT8, v.scalar.f64};
    case ValueType::STRING:
      return string(std::string(v.str));
    case ValueType::ARRAY: {
      Array a;
      a.reserve(v.array_count);
      if (v.array_type == ValueType::STRING) {
        for (auto s : v.array_strings) a.push_back(string(std::string(s)));
      } else {
        for (uint64_t i = 0; i < v.array_count; ++i) {
          ValueView e;
          e.type = v.array_type;
          if (v.array_type == ValueType::FLOAT32 || v.array_type == ValueType::FLOAT64)
            e.scalar.f64 = v.array_float(i);
          else
            e.scalar.i64 = v.array_int(i);
          a.push_back(from_view(e));
        }
      }
      return array(v.array_type, std::move(a));
    }
  }
  return {};
}

}  // namespace zinc::gguf
