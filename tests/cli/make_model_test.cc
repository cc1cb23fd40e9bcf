// `zinc make-model`: the small presets reproduce the shared fixtures' layout and metadata;
// quantized presets follow llama-quantize's per-tensor types; output is deterministic.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/quant.h"
#include "gguf/file.h"
#include "model/quant_mix.h"
#include "support/test_data.h"

namespace zinc {
namespace {

std::string make_model(const std::string& args, int* rc) {
  std::string out;
  *rc = test::run_command(test::zinc_binary() + " make-model " + args, &out);
  return out;
}

std::unique_ptr<gguf::File> make_and_open(const std::string& preset, const std::string& type, const std::string& file,
                                          const std::string& extra = "") {
  int rc = 0;
  const std::string path = test::temp_path(file);
  const std::string log =
      make_model("--preset " + preset + " --type " + type + " --out '" + path + "' --threads 2 " + extra, &rc);
  EXPECT_EQ(rc, 0) << log;
  auto f = gguf::open_file(path);
  EXPECT_TRUE(f.ok()) << f.status().message();
  return f.ok() ? std::move(*f) : nullptr;
}

void expect_same_layout(const gguf::File& got, const gguf::File& want) {
  ASSERT_EQ(got.tensors().size(), want.tensors().size());
  for (size_t i = 0; i < want.tensors().size(); ++i) {
    const auto& a = got.tensors()[i];
    const auto& b = want.tensors()[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.n_dims, b.n_dims) << b.name;
    EXPECT_EQ(a.ne, b.ne) << b.name;
    EXPECT_EQ(type_name(a.type), type_name(b.type)) << b.name;
    EXPECT_EQ(a.offset, b.offset) << b.name;
  }
}

TEST(MakeModel, SmallPresetsMatchTheSharedModels) {
  ZINC_REQUIRE_TEST_DATA();
  for (const char* arch : {"llama", "qwen2", "qwen3", "qwen3moe", "qwen35", "qwen35moe"}) {
    SCOPED_TRACE(arch);
    auto want = gguf::open_file(test::data_path(std::string("models/") + arch + "-f32.gguf"));
    ASSERT_TRUE(want.ok());
    auto got = make_and_open(arch, "f32", std::string(arch) + "-made.gguf", "--seed 7");
    ASSERT_NE(got, nullptr);
    expect_same_layout(*got, **want);
    // The same keys, in the same order, with the same types; the same hyper-parameters.
    ASSERT_EQ(got->metadata().size(), (*want)->metadata().size());
    for (size_t i = 0; i < got->metadata().size(); ++i) {
      const auto& a = got->metadata()[i];
      const auto& b = (*want)->metadata()[i];
      EXPECT_EQ(a.key, b.key);
      EXPECT_EQ(a.value.type, b.value.type) << b.key;
      EXPECT_EQ(a.value.array_type, b.value.array_type) << b.key;
      EXPECT_EQ(a.value.array_count, b.value.array_count) << b.key;
      if (b.key.rfind(std::string(arch) + ".", 0) == 0 || b.key.rfind("tokenizer.ggml.", 0) == 0) {
        EXPECT_EQ(a.value.scalar.u64, b.value.scalar.u64) << b.key;
        EXPECT_EQ(a.value.str, b.value.str) << b.key;
        // Integer arrays (rope sections; the special and byte entries of token_type) match.
        const uint64_t n = b.key == "tokenizer.ggml.token_type" ? 259 : b.value.array_count;
        for (uint64_t j = 0; j < n && b.value.array_type == gguf::ValueType::INT32; ++j) {
          EXPECT_EQ(a.value.array_int(j), b.value.array_int(j)) << b.key << "[" << j << "]";
        }
      }
    }
    // Finite weights of the fixtures' magnitudes.
    for (const auto& t : got->tensors()) {
      const float* x = reinterpret_cast<const float*>(t.data);
      double sq = 0;
      for (int64_t i = 0; i < t.n_elements(); ++i) {
        ASSERT_TRUE(std::isfinite(x[i])) << t.name;
        sq += double(x[i]) * x[i];
      }
      const double rms = std::sqrt(sq / double(t.n_elements()));
      EXPECT_GT(rms, 0.3 / std::sqrt(double(t.ne[0]))) << t.name;
      EXPECT_LT(rms, 10.0) << t.name;
    }
  }
}

TEST(MakeModel, QuantizedPresetsHaveLlamaQuantizeTypes) {
  ZINC_REQUIRE_TEST_DATA();
  for (const char* arch : {"qwen3moe", "qwen35", "qwen35moe", "llama"}) {
    for (const char* mix : {"q8_0", "q4_0", "q4_k_m"}) {
      SCOPED_TRACE(std::string(arch) + " " + mix);
      auto want = gguf::open_file(test::data_path(std::string("models/") + arch + "-" + mix + ".gguf"));
      ASSERT_TRUE(want.ok());
      auto got = make_and_open(arch, mix, std::string(arch) + "-" + mix + ".gguf");
      ASSERT_NE(got, nullptr);
      EXPECT_EQ(*got->find_u32("general.file_type").value(), *(*want)->find_u32("general.file_type").value());
      EXPECT_EQ(*got->find_u32("general.quantization_version").value(), 2u);
      ASSERT_EQ(got->tensors().size(), (*want)->tensors().size());
      for (const auto& t : got->tensors()) {
        const gguf::TensorInfo* w = (*want)->find_tensor(t.name);
        ASSERT_NE(w, nullptr) << t.name;
        EXPECT_EQ(t.ne, w->ne) << t.name;
        EXPECT_EQ(type_name(t.type), type_name(w->type)) << t.name;
      }
    }
  }
}

// Dequantized random blocks are finite, centred, with the spread of the float presets.
TEST(MakeModel, QuantizedPresetsDequantizeToPlausibleValues) {
  for (const char* mix : {"q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q3_k_m", "q4_k_m", "q5_k_m", "q6_k"}) {
    SCOPED_TRACE(mix);
    auto f = make_and_open("qwen35moe", mix, std::string("values-") + mix + ".gguf");
    ASSERT_NE(f, nullptr);
    for (const auto& t : f->tensors()) {
      ASSERT_TRUE(can_dequantize(t.type)) << t.name;
      const int64_t n_rows = std::min<int64_t>(t.n_elements() / t.ne[0], 16);
      std::vector<float> x(size_t(t.ne[0] * n_rows));
      for (int64_t r = 0; r < n_rows; ++r)
        dequantize_row(t.type, t.data + size_t(r) * t.row_bytes(), x.data() + r * t.ne[0], t.ne[0]);
      double sum = 0, sq = 0;
      for (float v : x) {
        ASSERT_TRUE(std::isfinite(v)) << t.name;
        sum += v, sq += double(v) * v;
      }
      if (!model::tensor_is_quantizable(t.name, t.ne) || x.size() < 4096) continue;  // too few blocks for stats
      const double mean = sum / x.size(), sd = std::sqrt(sq / x.size() - mean * mean);
      const double want = t.name == "token_embd.weight" ? 1.0 : 1.0 / std::sqrt(double(t.ne[0]));
      EXPECT_NEAR(sd / want, 1.0, 0.25) << t.name << " " << type_name(t.type);
      EXPECT_NEAR(mean / want, 0.0, 0.15) << t.name << " " << type_name(t.type);
    }
  }
}

TEST(MakeModel, DeterministicForASeed) {
  int rc = 0;
  std::string a, b, c;
  for (auto [file, args] : {std::pair{"det-a.gguf", "--seed 5 --threads 1"}, {"det-b.gguf", "--seed 5 --threads 2"},
                            {"det-c.gguf", "--seed 6 --threads 2"}}) {
    const std::string log =
        make_model("--preset qwen35 --type q4_k_m --out '" + test::temp_path(file) + "' " + args, &rc);
    ASSERT_EQ(rc, 0) << log;
  }
  const auto bytes_a = test::read_file(test::temp_path("det-a.gguf"));
  const auto bytes_b = test::read_file(test::temp_path("det-b.gguf"));
  const auto bytes_c = test::read_file(test::temp_path("det-c.gguf"));
  EXPECT_EQ(bytes_a, bytes_b);
  ASSERT_EQ(bytes_a.size(), bytes_c.size());  // same layout; only general.name and the weights differ
  EXPECT_NE(bytes_a, bytes_c);
}

TEST(MakeModel, VocabularyFromAnotherFile) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string vocab_path = test::data_path("vocab/ggml-vocab-llama-spm.gguf");
  auto vocab = gguf::open_file(vocab_path);
  ASSERT_TRUE(vocab.ok());
  auto f = make_and_open("llama", "q8_0", "vocab-from.gguf", "--vocab-from '" + vocab_path + "'");
  ASSERT_NE(f, nullptr);
  const uint64_t n_vocab = (*vocab)->find("tokenizer.ggml.tokens")->array_count;
  EXPECT_EQ(f->find_tensor("token_embd.weight")->ne[1], int64_t(n_vocab));
  EXPECT_EQ(f->find_tensor("output.weight")->ne[1], int64_t(n_vocab));
  EXPECT_EQ(*f->find_u32("llama.vocab_size").value(), n_vocab);
  int n_copied = 0;
  for (const auto& kv : (*vocab)->metadata()) {
    if (kv.key.rfind("tokenizer.", 0) != 0) continue;
    const gguf::ValueView* v = f->find(kv.key);
    ASSERT_NE(v, nullptr) << kv.key;
    EXPECT_EQ(v->type, kv.value.type);
    EXPECT_EQ(v->str, kv.value.str);
    EXPECT_EQ(v->scalar.u64, kv.value.scalar.u64);
    EXPECT_EQ(v->array_strings, kv.value.array_strings);
    EXPECT_EQ(v->array_count, kv.value.array_count);
    if (kv.value.array_data) {
      EXPECT_EQ(std::memcmp(v->array_data, kv.value.array_data,
                            kv.value.array_count * gguf::value_type_size(kv.value.array_type)), 0);
    }
    ++n_copied;
  }
  EXPECT_GT(n_copied, 5);
}

TEST(MakeModel, ErrorsAndHelp) {
  int rc = 0;
  std::string out = make_model("--preset llama-70b --out '" + test::temp_path("x.gguf") + "'", &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(out, "error: unknown preset 'llama-70b': valid presets are llama, qwen2, qwen3, qwen3moe, qwen35, "
                 "qwen35moe, llama32-1b, llama3-8b, qwen3-8b, qwen3-30b-a3b, qwen35-35b-a3b\n");
  out = make_model("--preset llama --type q4_k --out '" + test::temp_path("x.gguf") + "'", &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(out.rfind("error: unknown type 'q4_k': valid types are", 0), 0u) << out;
  out = make_model("--preset llama --vocab-from '" + test::temp_path("none.gguf") + "' --out x.gguf", &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("none.gguf: cannot open"), std::string::npos) << out;
  out = make_model("--preset llama", &rc);
  EXPECT_EQ(rc, 2) << out;
  out = make_model("--help", &rc);
  EXPECT_EQ(rc, 0);
  for (const char* s : {"--preset", "--out", "--type", "--seed", "--vocab-from", "--threads", "qwen35-35b-a3b", "Q4_K_M"})
    EXPECT_NE(out.find(s), std::string::npos) << s << "\n" << out;
}

}  // namespace
}  // namespace zinc
