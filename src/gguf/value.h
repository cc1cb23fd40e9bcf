// GGUF metadata values: the type ids stored in files, a read-only view into a mapped file,
// and an owning value for the writer.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace zinc::gguf {

enum class ValueType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};
constexpr uint32_t kMaxValueType = 12;

const char* value_type_name(ValueType t);
// Bytes of one scalar element in a file (0 for STRING and ARRAY, whose size varies).
size_t value_type_size(ValueType t);

// A metadata value as read from a file. Strings and numeric array elements view the mapped file
// and live as long as the gguf::File that made them.
struct ValueView {
  ValueType type = ValueType::UINT8;
  // Scalars: integers widen to int64/uint64, floats to double, bools to 0/1.
  union {
    uint64_t u64;
    int64_t i64;
    double f64;
  } scalar{0};
  std::string_view str;  // STRING

  // ARRAY: element type and count; numeric elements are `array_count` little-endian values at
  // `array_data`; string elements are in `array_strings`.
  ValueType array_type = ValueType::UINT8;
  uint64_t array_count = 0;
  const uint8_t* array_data = nullptr;
  std::vector<std::string_view> array_strings;

  bool is_integer() const;
  bool is_float() const { return type == ValueType::FLOAT32 || type == ValueType::FLOAT64; }
  // Element i of a numeric array, widened (integers to int64, floats to double). array_int
  // truncates floats toward zero and saturates (NaN gives 0); UINT64 above INT64_MAX wraps.
  int64_t array_int(uint64_t i) const;
  double array_float(uint64_t i) const;
};

// An owned metadata value, for building files.
struct Value {
  using Array = std::vector<Value>;
  ValueType type = ValueType::UINT8;
  ValueType array_type = ValueType::UINT8;  // ARRAY only
  std::variant<uint64_t, int64_t, double, std::string, Array> data;

  static Value u8(uint8_t v) { return {ValueType::UINT8, ValueType::UINT8, uint64_t(v)}; }
  static Value i8(int8_t v) { return {ValueType::INT8, ValueType::UINT8, int64_t(v)}; }
  static Value u16(uint16_t v) { return {ValueType::UINT16, ValueType::UINT8, uint64_t(v)}; }
  static Value i16(int16_t v) { return {ValueType::INT16, ValueType::UINT8, int64_t(v)}; }
  static Value u32(uint32_t v) { return {ValueType::UINT32, ValueType::UINT8, uint64_t(v)}; }
  static Value i32(int32_t v) { return {ValueType::INT32, ValueType::UINT8, int64_t(v)}; }
  static Value u64(uint64_t v) { return {ValueType::UINT64, ValueType::UINT8, v}; }
  static Value i64(int64_t v) { return {ValueType::INT64, ValueType::UINT8, v}; }
  static Value f32(float v) { return {ValueType::FLOAT32, ValueType::UINT8, double(v)}; }
  static Value f64(double v) { return {ValueType::FLOAT64, ValueType::UINT8, v}; }
  static Value boolean(bool v) { return {ValueType::BOOL, ValueType::UINT8, uint64_t(v)}; }
  static Value string(std::string v) { return {ValueType::STRING, ValueType::UINT8, std::move(v)}; }
  static Value array(ValueType elem, Array items) {
    return {ValueType::ARRAY, elem, std::move(items)};
  }
  static Value string_array(const std::vector<std::string>& items);
  static Value f32_array(const std::vector<float>& items);
  static Value i32_array(const std::vector<int32_t>& items);
  static Value u32_array(const std::vector<uint32_t>& items);

  // Deep copy of a value read from a file.
  static Value from_view(const ValueView& v);
};

}  // namespace zinc::gguf
