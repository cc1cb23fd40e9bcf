// `zinc quantize`: output layout (packed, 32-aligned), types from quant_mix, exact float
// conversions, copied metadata, byte-exact copies when the type matches, and clear errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "core/quant.h"
#include "gguf/file.h"
#include "model/quant_mix.h"
#include "support/test_data.h"

namespace zinc {
namespace {

std::string quantize(const std::string& in, const std::string& out, const std::string& type, int* rc) {
  std::string output;
  *rc = test::run_command(test::zinc_binary() + " quantize '" + in + "' '" + out + "' " + type + " --threads 2",
                          &output);
  return output;
}

std::vector<float> to_f32(const gguf::TensorInfo& t) {
  std::vector<float> out(size_t(t.n_elements()));
  if (t.ne[0] == 0) return out;
  for (int64_t r = 0; r < t.n_elements() / t.ne[0]; ++r)
    dequantize_row(t.type, t.data + size_t(r) * t.row_bytes(), out.data() + r * t.ne[0], t.ne[0]);
  return out;
}

// llama.cpp's loader requires offset_i = sum of the aligned sizes before it, alignment 32.
void expect_llama_cpp_layout(const gguf::File& f) {
  EXPECT_EQ(f.find("general.alignment"), nullptr);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.data_offset() % 32, 0u);
  uint64_t offset = 0;
  for (const auto& t : f.tensors()) {
    EXPECT_EQ(t.offset, offset) << t.name;
    offset += (t.size_bytes + 31) / 32 * 32;
  }
  EXPECT_EQ(f.data_offset() + offset, f.file_size());
}

void expect_metadata_copied(const gguf::File& in, const gguf::File& out, uint32_t file_type) {
  for (const auto& kv : in.metadata()) {
    if (kv.key == "general.file_type" || kv.key == "general.quantization_version") continue;
    const gguf::ValueView* v = out.find(kv.key);
    ASSERT_NE(v, nullptr) << kv.key;
    EXPECT_EQ(v->type, kv.value.type) << kv.key;
    EXPECT_EQ(v->scalar.u64, kv.value.scalar.u64) << kv.key;
    EXPECT_EQ(v->str, kv.value.str) << kv.key;
    EXPECT_EQ(v->array_count, kv.value.array_count) << kv.key;
    EXPECT_EQ(v->array_strings, kv.value.array_strings) << kv.key;
  }
  EXPECT_EQ(*out.find_u32("general.file_type").value(), file_type);
  EXPECT_EQ(*out.find_u32("general.quantization_version").value(), 2u);
}

TEST(Quantize, FloatMixesConvertExactly) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string in_path = test::data_path("models/qwen35moe-f32.gguf");
  auto in = gguf::open_file(in_path);
  ASSERT_TRUE(in.ok());
  for (const char* mix : {"F16", "BF16"}) {
    SCOPED_TRACE(mix);
    const std::string out_path = test::temp_path(std::string("qwen35moe-") + mix + ".gguf");
    int rc = 0;
    const std::string log = quantize(in_path, out_path, mix, &rc);
    ASSERT_EQ(rc, 0) << log;
    EXPECT_NE(log.find("[  76/  76]"), std::string::npos) << log;
    EXPECT_NE(log.find("bits/weight"), std::string::npos) << log;
    auto out = gguf::open_file(out_path);
    ASSERT_TRUE(out.ok()) << out.status().message();
    expect_llama_cpp_layout(**out);
    expect_metadata_copied(**in, **out, model::find_quant_mix(mix)->file_type);
    const TensorType half = std::string(mix) == "F16" ? TensorType::F16 : TensorType::BF16;
    ASSERT_EQ((*out)->tensors().size(), (*in)->tensors().size());
    for (size_t i = 0; i < (*in)->tensors().size(); ++i) {
      const auto& a = (*in)->tensors()[i];
      const auto& b = (*out)->tensors()[i];
      ASSERT_EQ(a.name, b.name);
      EXPECT_EQ(a.ne, b.ne);
      const bool matrix = model::tensor_is_quantizable(a.name, a.ne);
      EXPECT_EQ(b.type, matrix ? half : TensorType::F32) << a.name;
      const std::vector<float> src = to_f32(a), dst = to_f32(b);
      for (size_t j = 0; j < src.size(); ++j) {
        const float want = !matrix ? src[j]
                           : half == TensorType::F16 ? fp16_to_f32(f32_to_fp16(src[j]))
                                                     : bf16_to_f32(f32_to_bf16(src[j]));
        ASSERT_EQ(dst[j], want) << a.name << "[" << j << "]";
      }
    }
  }
}

TEST(Quantize, SameTypeIsCopiedByteForByte) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string in_path = test::data_path("models/qwen3moe-q4_k_m.gguf");
  const std::string out_path = test::temp_path("qwen3moe-copy.gguf");
  int rc = 0;
  const std::string log = quantize(in_path, out_path, "Q4_K_M", &rc);
  ASSERT_EQ(rc, 0) << log;
  auto in = gguf::open_file(in_path);
  auto out = gguf::open_file(out_path);
  ASSERT_TRUE(out.ok()) << out.status().message();
  expect_llama_cpp_layout(**out);
  for (const auto& a : (*in)->tensors()) {
    const gguf::TensorInfo* b = (*out)->find_tensor(a.name);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->type, a.type) << a.name;
    ASSERT_EQ(b->size_bytes, a.size_bytes);
    EXPECT_EQ(std::memcmp(a.data, b->data, a.size_bytes), 0) << a.name;
  }
}

// From F32 to quantized mixes: the types llama-quantize chose for the shared models, and
// values within the format's error.
TEST(Quantize, QuantizedMixesMatchLlamaQuantizeTypes) {
  ZINC_REQUIRE_TEST_DATA();
  for (const char* mix : {"q8_0", "q4_0", "q4_k_m"}) {
    SCOPED_TRACE(mix);
    auto ref = gguf::open_file(test::data_path(std::string("models/qwen35moe-") + mix + ".gguf"));
    ASSERT_TRUE(ref.ok());
    bool available = true;
    for (const auto& t : (*ref)->tensors()) available = available && can_quantize(t.type) && can_dequantize(t.type);
    ASSERT_TRUE(available) << "a type of the reference file cannot be quantized";
    const std::string in_path = test::data_path("models/qwen35moe-f32.gguf");
    const std::string out_path = test::temp_path(std::string("qwen35moe-") + mix + ".gguf");
    int rc = 0;
    const std::string log = quantize(in_path, out_path, mix, &rc);
    ASSERT_EQ(rc, 0) << log;
    auto in = gguf::open_file(in_path);
    auto out = gguf::open_file(out_path);
    ASSERT_TRUE(out.ok()) << out.status().message();
    expect_llama_cpp_layout(**out);
    expect_metadata_copied(**in, **out, model::find_quant_mix(mix)->file_type);
    for (const auto& a : (*in)->tensors()) {
      const gguf::TensorInfo* b = (*out)->find_tensor(a.name);
      const gguf::TensorInfo* r = (*ref)->find_tensor(a.name);
      ASSERT_TRUE(b && r);
      EXPECT_EQ(type_name(b->type), type_name(r->type)) << a.name;
      const std::vector<float> x = to_f32(a), y = to_f32(*b);
      double err = 0, norm = 0;
      for (size_t j = 0; j < x.size(); ++j) err += (x[j] - y[j]) * (x[j] - y[j]), norm += x[j] * x[j];
      EXPECT_LT(err / std::max(norm, 1e-30), 0.02) << a.name << " " << type_name(b->type);
    }
  }
}

TEST(Quantize, RequantizesQuantizedInput) {
  ZINC_REQUIRE_TEST_DATA();
  ASSERT_TRUE(can_dequantize(TensorType::Q8_0));
  const std::string in_path = test::data_path("models/llama-q8_0.gguf");
  const std::string out_path = test::temp_path("llama-q8-to-f16.gguf");
  int rc = 0;
  const std::string log = quantize(in_path, out_path, "F16", &rc);
  ASSERT_EQ(rc, 0) << log;
  auto in = gguf::open_file(in_path);
  auto out = gguf::open_file(out_path);
  ASSERT_TRUE(out.ok());
  for (const auto& a : (*in)->tensors()) {
    const gguf::TensorInfo* b = (*out)->find_tensor(a.name);
    ASSERT_NE(b, nullptr);
    const std::vector<float> x = to_f32(a), y = to_f32(*b);
    for (size_t j = 0; j < x.size(); ++j)
      ASSERT_EQ(y[j], b->type == TensorType::F16 ? fp16_to_f32(f32_to_fp16(x[j])) : x[j]) << a.name;
  }
}

TEST(Quantize, Errors) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string in = test::data_path("models/llama-f32.gguf");
  int rc = 0;
  std::string out = quantize(in, test::temp_path("x.gguf"), "Q9_K", &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(out.rfind("error: unknown type 'Q9_K': valid types are F32, F16, BF16, Q8_0", 0), 0u) << out;
  EXPECT_EQ(out.find('\n'), out.size() - 1) << out;

  out = quantize(test::temp_path("missing.gguf"), test::temp_path("x.gguf"), "Q8_0", &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("missing.gguf: cannot open: No such file or directory"), std::string::npos) << out;

  // The same file under another spelling.
  const std::string copy = test::temp_path("same.gguf");
  ASSERT_EQ(test::run_command("cp '" + in + "' '" + copy + "'", nullptr), 0);
  out = quantize(copy, test::temp_path("./same.gguf"), "F16", &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("is the input file"), std::string::npos) << out;

  EXPECT_EQ(test::run_command(test::zinc_binary() + " quantize '" + in + "' x.gguf F16 --threads -3", &out), 2);
  EXPECT_EQ(test::run_command(test::zinc_binary() + " quantize --help", &out), 0);
  EXPECT_NE(out.find("Q4_K_M"), std::string::npos) << out;
}

}  // namespace
}  // namespace zinc
