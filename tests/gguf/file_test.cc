#include "gguf/file.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "gguf/writer.h"
#include "support/test_data.h"

namespace zinc::gguf {
namespace {

TEST(GgufFile, OpensEverySharedModel) {
  ZINC_REQUIRE_TEST_DATA();
  int n = 0;
  for (const char* dir : {"models", "vocab", "quant"}) {
    for (const auto& e : std::filesystem::directory_iterator(test::data_path(dir))) {
      if (e.path().extension() != ".gguf") continue;
      auto f = open_file(e.path().string());
      ASSERT_TRUE(f.ok()) << f.status().message();
      EXPECT_GE((*f)->version(), 2u);
      for (const auto& t : (*f)->tensors()) {
        EXPECT_NE(t.data, nullptr);
        EXPECT_LE(t.data + t.size_bytes, t.data - (*f)->data_offset() - t.offset + (*f)->file_size());
      }
      ++n;
    }
  }
  EXPECT_GT(n, 40);
}

TEST(GgufFile, StoriesMetadataIsTyped) {
  ZINC_REQUIRE_TEST_DATA();
  auto f = open_file(test::data_path("models/stories260K.gguf"));
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ((*f)->architecture(), "llama");
  auto tokens = (*f)->find_array("tokenizer.ggml.tokens", ValueType::STRING);
  ASSERT_TRUE(tokens.ok());
  ASSERT_NE(*tokens, nullptr);
  EXPECT_EQ((*tokens)->array_count, 512u);
  // A present key of another type is an error naming both types.
  auto wrong = (*f)->find_u32("general.architecture");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("STRING"), std::string::npos);
  EXPECT_NE((*f)->find_tensor("token_embd.weight"), nullptr);
}

TEST(GgufWriter, RoundTripsMetadataAndTensors) {
  Writer w;
  w.set("general.architecture", Value::string("llama"));
  w.set("test.u32", Value::u32(7));
  w.set("test.f32", Value::f32(1.5f));
  w.set("test.bool", Value::boolean(true));
  w.set("test.i64", Value::i64(-5));
  w.set("test.strings", Value::string_array({"a", "bc", ""}));
  w.set("test.floats", Value::f32_array({1.f, -2.f}));
  std::vector<float> data(64 * 3);
  for (size_t i = 0; i < data.size(); ++i) data[i] = float(i) * 0.25f - 7.f;
  ASSERT_TRUE(w.add_tensor("t.weight", TensorType::F32, {64, 3}, [&](std::span<uint8_t> out) {
                 std::memcpy(out.data(), data.data(), out.size());
                 return Status();
               }).ok());
  ASSERT_TRUE(w.add_tensor("u.weight", TensorType::F32, {5}, [&](std::span<uint8_t> out) {
                 std::memset(out.data(), 0x3f, out.size());
                 return Status();
               }).ok());
  EXPECT_FALSE(w.add_tensor("t.weight", TensorType::F32, {4}, nullptr).ok());
  EXPECT_FALSE(w.add_tensor("q", TensorType::Q4_0, {31}, nullptr).ok());
  const std::string path = test::temp_path("roundtrip.gguf");
  ASSERT_TRUE(w.write(path).ok());

  auto f = open_file(path);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ((*f)->version(), 3u);
  EXPECT_EQ(*(*f)->find_u32("test.u32").value(), 7u);
  EXPECT_EQ(*(*f)->find_f32("test.f32").value(), 1.5f);
  EXPECT_EQ(*(*f)->find_bool("test.bool").value(), true);
  EXPECT_EQ((*f)->find("test.i64")->scalar.i64, -5);
  auto strings = (*f)->find_array("test.strings", ValueType::STRING).value();
  ASSERT_EQ(strings->array_count, 3u);
  EXPECT_EQ(strings->array_strings[1], "bc");
  auto floats = (*f)->find_array("test.floats", ValueType::FLOAT32).value();
  EXPECT_EQ(floats->array_float(1), -2.0);
  const TensorInfo* t = (*f)->find_tensor("t.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->ne[0], 64);
  EXPECT_EQ(t->ne[1], 3);
  EXPECT_EQ(0, std::memcmp(t->data, data.data(), t->size_bytes));
  EXPECT_EQ((*f)->find_tensor("u.weight")->offset % 32, 0u);
}

TEST(GgufWriter, FailedFillLeavesNoFile) {
  Writer w;
  ASSERT_TRUE(w.add_tensor("t", TensorType::F32, {4}, [](std::span<uint8_t>) { return error("boom"); }).ok());
  const std::string path = test::temp_path("failed.gguf");
  Status s = w.write(path);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("boom"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
}

}  // namespace
}  // namespace zinc::gguf
