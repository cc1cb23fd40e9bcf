// quant.h's contract: which types are supported, the errors for the others, and the 16-bit
// float conversions over every possible input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "core/quant.h"

namespace zinc {
namespace {

const std::set<std::string> kDequantizable = {"F32",  "F16",  "BF16", "Q4_0", "Q4_1", "Q5_0",   "Q5_1",   "Q8_0",
                                              "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS", "MXFP4"};

TEST(QuantApi, SupportMatchesTheTypeTable) {
  int n_known = 0;
  for (uint32_t id = 0; id <= kMaxTensorTypeId + 5; ++id) {
    const auto info = tensor_type_info(id);
    const auto t = TensorType(id);
    if (!info) {
      EXPECT_FALSE(can_dequantize(t)) << id;
      EXPECT_FALSE(can_quantize(t)) << id;
      const Status s = check_dequantize(t);
      ASSERT_FALSE(s.ok());
      EXPECT_NE(s.message().find("id " + std::to_string(id)), std::string::npos) << s.message();
      continue;
    }
    ++n_known;
    const std::string name(info->name);
    EXPECT_EQ(can_dequantize(t), info->can_dequantize) << name;
    EXPECT_EQ(can_dequantize(t), kDequantizable.count(name) == 1) << name;
    EXPECT_EQ(check_dequantize(t).ok(), can_dequantize(t)) << name;
    EXPECT_EQ(check_quantize(t).ok(), can_quantize(t)) << name;
    // Everything zinc can produce it can also read back.
    if (can_quantize(t)) {
      EXPECT_TRUE(can_dequantize(t)) << name;
    }
  }
  EXPECT_GT(n_known, 30);
}

TEST(QuantApi, UnsupportedTypeErrorNamesTheType) {
  for (TensorType t : {TensorType::IQ2_XXS, TensorType::Q8_K, TensorType::TQ1_0, TensorType::I32}) {
    const Status s = check_dequantize(t);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find(std::string(type_name(t))), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("dequantized"), std::string::npos) << s.message();
  }
  const Status q = check_quantize(TensorType::IQ3_S);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.message().find("IQ3_S"), std::string::npos) << q.message();
}

TEST(QuantApi, QuantizableTypes) {
  for (const char* name : {"F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K",
                           "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS", "MXFP4"}) {
    const auto t = tensor_type_from_name(name);
    ASSERT_TRUE(t.has_value()) << name;
    EXPECT_TRUE(can_quantize(*t)) << name;
  }
  EXPECT_FALSE(can_quantize(TensorType::Q8_K));
  EXPECT_FALSE(can_quantize(TensorType::IQ2_XS));
}

// The vectorizable F16 row path agrees with the scalar fp16_to_f32 on all 65536 inputs.
TEST(QuantApi, F16RowMatchesScalarConversionForEveryInput) {
  std::vector<uint16_t> h(65536);
  for (uint32_t i = 0; i < 65536; ++i) h[i] = uint16_t(i);
  std::vector<float> f(65536);
  dequantize_row(TensorType::F16, h.data(), f.data(), 65536);
  for (uint32_t i = 0; i < 65536; ++i)
    ASSERT_EQ(f32_to_bits(f[i]), f32_to_bits(fp16_to_f32(uint16_t(i)))) << "half 0x" << std::hex << i;
  // Spot values: smallest denormal, largest normal, -0, inf.
  EXPECT_EQ(f[0x0001], 5.9604645e-8f);
  EXPECT_EQ(f[0x7bff], 65504.f);
  EXPECT_EQ(f32_to_bits(f[0x8000]), 0x80000000u);
  EXPECT_EQ(f32_to_bits(f[0x7c00]), 0x7f800000u);
}

TEST(QuantApi, F16AndBF16RoundTripEveryFiniteInput) {
  for (TensorType t : {TensorType::F16, TensorType::BF16}) {
    std::vector<uint16_t> in, out;
    for (uint32_t i = 0; i < 65536; ++i) {
      const float v = t == TensorType::F16 ? fp16_to_f32(uint16_t(i)) : bf16_to_f32(uint16_t(i));
      if (std::isfinite(v)) in.push_back(uint16_t(i));
    }
    std::vector<float> f(in.size());
    out.resize(in.size());
    dequantize_row(t, in.data(), f.data(), int64_t(in.size()));
    quantize_row(t, f.data(), out.data(), int64_t(in.size()));
    EXPECT_EQ(in, out) << type_name(t);
  }
}

// A GGUF file may align its tensors to 1 byte: rows at any address dequantize as aligned ones.
TEST(QuantApi, DequantizeRowAtAnyAddress) {
  const int64_t n = 512;
  std::vector<float> src(n);
  for (int64_t i = 0; i < n; ++i) src[size_t(i)] = std::sin(0.37f * float(i)) * 3.f;
  for (uint32_t id = 0; id <= kMaxTensorTypeId; ++id) {
    const auto t = TensorType(id);
    if (!tensor_type_info(id) || !can_quantize(t)) continue;
    const size_t bytes = row_bytes(t, n);
    std::vector<uint64_t> aligned((bytes + 7) / 8 + 1);
    quantize_row(t, src.data(), aligned.data(), n);
    std::vector<float> want(n), got(n);
    dequantize_row(t, aligned.data(), want.data(), n);
    for (size_t shift : {1, 2, 3, 5}) {
      std::vector<uint8_t> odd(bytes + 8);
      std::memcpy(odd.data() + shift, aligned.data(), bytes);
      dequantize_row(t, odd.data() + shift, got.data(), n);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), size_t(n) * 4), 0) << type_name(t) << " shifted by " << shift;
    }
  }
}

}  // namespace
}  // namespace zinc
