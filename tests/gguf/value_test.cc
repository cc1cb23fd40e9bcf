#include "gguf/value.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "support/test_data.h"

namespace zinc::gguf {
namespace {

// Found by fuzzing: reading a float array as integers converted out-of-range doubles to int64
// (undefined behaviour). It now truncates toward zero and saturates; NaN reads as 0.
TEST(GgufValue, FloatArrayReadAsIntegersSaturates) {
  Writer w;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  w.set("f64s", Value::array(ValueType::FLOAT64, {Value::f64(1e300), Value::f64(-1e300), Value::f64(nan),
                                                  Value::f64(-2.75), Value::f64(9.5)}));
  w.set("f32s", Value::f32_array({3e38f, -3e38f, 7.9f}));
  w.set("u64s", Value::array(ValueType::UINT64, {Value::u64(uint64_t(1) << 63)}));
  const std::string path = test::temp_path("float-array.gguf");
  ASSERT_TRUE(w.write(path).ok());
  auto f = open_file(path);
  ASSERT_TRUE(f.ok()) << f.status().message();
  const ValueView* d = (*f)->find("f64s");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->array_int(0), INT64_MAX);
  EXPECT_EQ(d->array_int(1), INT64_MIN);
  EXPECT_EQ(d->array_int(2), 0);
  EXPECT_EQ(d->array_int(3), -2);
  EXPECT_EQ(d->array_int(4), 9);
  EXPECT_TRUE(std::isnan(d->array_float(2)));
  const ValueView* s = (*f)->find("f32s");
  EXPECT_EQ(s->array_int(0), INT64_MAX);
  EXPECT_EQ(s->array_int(1), INT64_MIN);
  EXPECT_EQ(s->array_int(2), 7);
  // Large UINT64 elements keep their value as floats.
  EXPECT_EQ((*f)->find("u64s")->array_float(0), 9223372036854775808.0);
}

}  // namespace
}  // namespace zinc::gguf
