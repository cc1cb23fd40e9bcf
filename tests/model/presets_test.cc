#include "model/presets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "core/quant_blocks.h"
#include "model/presets_weights.h"
#include "model/quant_mix.h"

namespace zinc::model {
namespace {

uint64_t n_params(const PresetConfig& c, bool with_rope_freqs) {
  uint64_t total = 0;
  for (const auto& t : preset_tensors(c)) {
    if (!with_rope_freqs && t.name == "rope_freqs.weight") continue;
    uint64_t n = 1;
    for (int64_t d : t.ne) n *= uint64_t(d);
    total += n;
  }
  return total;
}

std::map<std::string, std::vector<int64_t>> shapes(const PresetConfig& c) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto& t : preset_tensors(c)) EXPECT_TRUE(out.emplace(t.name, t.ne).second) << "duplicate " << t.name;
  return out;
}

TEST(Presets, NamesAndLookup) {
  EXPECT_EQ(preset_list(),
            "llama, qwen2, qwen3, qwen3moe, qwen35, qwen35moe, llama32-1b, llama3-8b, qwen3-8b, qwen3-30b-a3b, "
            "qwen35-35b-a3b");
  for (const auto& p : presets()) EXPECT_EQ(find_preset(p.name), &p);
  EXPECT_EQ(find_preset("llama-7b"), nullptr);
}

// Parameter counts of the released models (Hugging Face), which pin every shape.
TEST(Presets, RealSizesHaveTheReleasedParameterCounts) {
  EXPECT_EQ(n_params(*find_preset("llama32-1b"), false), 1235814400u);
  EXPECT_EQ(n_params(*find_preset("llama3-8b"), false), 8030261248u);
  EXPECT_EQ(n_params(*find_preset("qwen3-8b"), false), 8190735360u);
  EXPECT_EQ(n_params(*find_preset("qwen3-30b-a3b"), false), 30532122624u);
  // Qwen3.5-35B-A3B without its MTP layer and vision tower: about 34.7 B.
  const double q35 = double(n_params(*find_preset("qwen35-35b-a3b"), false));
  EXPECT_GT(q35, 33.5e9);
  EXPECT_LT(q35, 35.5e9);
}

TEST(Presets, Qwen35MoeLayout) {
  const PresetConfig& c = *find_preset("qwen35-35b-a3b");
  auto s = shapes(c);
  EXPECT_EQ(s.size(), 3u + 30 * 19 + 10 * 16);  // 30 linear-attention layers, 10 full-attention ones
  EXPECT_EQ(s["token_embd.weight"], (std::vector<int64_t>{2048, 248320}));
  EXPECT_EQ(s["blk.0.attn_qkv.weight"], (std::vector<int64_t>{2048, 8192}));  // q, k: 16 x 128; v: 32 x 128
  EXPECT_EQ(s["blk.0.attn_gate.weight"], (std::vector<int64_t>{2048, 4096}));
  EXPECT_EQ(s["blk.0.ssm_conv1d.weight"], (std::vector<int64_t>{4, 8192}));
  EXPECT_EQ(s["blk.0.ssm_a"], (std::vector<int64_t>{32}));
  EXPECT_EQ(s["blk.0.ssm_norm.weight"], (std::vector<int64_t>{128}));
  EXPECT_EQ(s["blk.0.ssm_out.weight"], (std::vector<int64_t>{4096, 2048}));
  EXPECT_EQ(s["blk.3.attn_q.weight"], (std::vector<int64_t>{2048, 8192}));  // 16 heads x [query, gate] x 256
  EXPECT_EQ(s["blk.3.attn_k.weight"], (std::vector<int64_t>{2048, 512}));
  EXPECT_EQ(s["blk.3.attn_output.weight"], (std::vector<int64_t>{4096, 2048}));
  EXPECT_EQ(s["blk.39.ffn_gate_exps.weight"], (std::vector<int64_t>{2048, 512, 256}));
  EXPECT_EQ(s["blk.39.ffn_down_exps.weight"], (std::vector<int64_t>{512, 2048, 256}));
  EXPECT_EQ(s["blk.39.ffn_gate_inp_shexp.weight"], (std::vector<int64_t>{2048}));
  EXPECT_EQ(s.count("blk.2.attn_q.weight"), 0u);
  EXPECT_EQ(s.count("blk.3.attn_qkv.weight"), 0u);
  // Tied Llama 3.2 1B has no output.weight but carries the rope scaling factors.
  auto l = shapes(*find_preset("llama32-1b"));
  EXPECT_EQ(l.count("output.weight"), 0u);
  EXPECT_EQ(l["rope_freqs.weight"], (std::vector<int64_t>{32}));
}

TEST(Presets, HparamsHaveLlamaCppTypes) {
  for (const auto& p : presets()) {
    std::set<std::string> keys;
    for (const auto& [k, v] : preset_hparams(p, "x")) {
      EXPECT_TRUE(keys.insert(k).second) << k;
      if (k.rfind("general.", 0) == 0) {
        EXPECT_EQ(v.type, gguf::ValueType::STRING);
      } else if (k.find("epsilon") != std::string::npos || k.find("freq_base") != std::string::npos) {
        EXPECT_EQ(v.type, gguf::ValueType::FLOAT32) << k;
      } else if (k.find("dimension_sections") != std::string::npos) {
        EXPECT_EQ(v.type, gguf::ValueType::ARRAY);
        EXPECT_EQ(v.array_type, gguf::ValueType::INT32);
      } else {
        EXPECT_EQ(v.type, gguf::ValueType::UINT32) << k;
      }
    }
    EXPECT_TRUE(keys.count(std::string(p.arch) + ".block_count")) << p.name;
  }
}

TEST(Presets, SyntheticVocabulary) {
  const Metadata m = synthetic_vocab(248320);
  ASSERT_EQ(m[0].first, "tokenizer.ggml.tokens");
  const auto& tokens = std::get<gguf::Value::Array>(m[0].second.data);
  ASSERT_EQ(tokens.size(), 248320u);
  std::set<std::string> seen;
  for (const auto& t : tokens) EXPECT_TRUE(seen.insert(std::get<std::string>(t.data)).second);
  EXPECT_EQ(std::get<std::string>(tokens[3].data), "<0x00>");
  EXPECT_EQ(std::get<std::string>(tokens[258].data), "<0xFF>");
  EXPECT_EQ(std::get<std::string>(tokens[259].data), "\xe2\x96\x81" "a");
  EXPECT_EQ(std::get<std::string>(tokens[260].data), "a");
  // Every piece is one merge away from a shorter piece (or from the lone space marker).
  for (size_t i = 261; i < tokens.size(); i += 97) {
    const std::string s = std::get<std::string>(tokens[i].data);
    const std::string prefix = s.substr(0, s.size() - 1);
    if (prefix != "\xe2\x96\x81" && !prefix.empty()) {
      EXPECT_TRUE(seen.count(prefix)) << s;
    }
  }
}

// Random rows: deterministic per (seed, tensor, row), whatever the split; floats finite with
// the intended spread.
TEST(PresetWeights, DeterministicFiniteAndScaled) {
  const PresetConfig& c = *find_preset("qwen35moe");
  for (const auto& t : preset_tensors(c)) {
    int64_t n_rows = 1;
    for (size_t d = 1; d < t.ne.size(); ++d) n_rows *= t.ne[d];
    n_rows = std::min<int64_t>(n_rows, 64);
    std::vector<float> all(size_t(t.ne[0] * n_rows)), split(all.size());
    random_rows(c, t, TensorType::F32, 7, 0, n_rows, reinterpret_cast<uint8_t*>(all.data()));
    random_rows(c, t, TensorType::F32, 7, 0, n_rows / 2, reinterpret_cast<uint8_t*>(split.data()));
    random_rows(c, t, TensorType::F32, 7, n_rows / 2, n_rows,
                reinterpret_cast<uint8_t*>(split.data() + (n_rows / 2) * t.ne[0]));
    EXPECT_EQ(all, split) << t.name;
    double sum = 0, sq = 0;
    for (float x : all) {
      ASSERT_TRUE(std::isfinite(x)) << t.name;
      sum += x, sq += double(x) * x;
    }
    const double mean = sum / all.size(), sd = std::sqrt(sq / all.size() - mean * mean);
    switch (weight_init(t)) {
      case WeightInit::kMatrix:
        EXPECT_NEAR(sd * std::sqrt(double(t.ne[0])), 1.0, 0.1) << t.name;
        EXPECT_NEAR(mean, 0.0, 4 * sd / std::sqrt(double(all.size()))) << t.name;
        break;
      case WeightInit::kEmbedding: EXPECT_NEAR(sd, 1.0, 0.05) << t.name; break;
      case WeightInit::kNorm: EXPECT_NEAR(mean, 1.0, 0.05) << t.name; break;
      case WeightInit::kSsmA: EXPECT_LT(*std::max_element(all.begin(), all.end()), -0.99f) << t.name; break;
      default: break;
    }
  }
  // Another seed, other values.
  const PresetTensor t = preset_tensors(c)[5];
  std::vector<float> a(size_t(t.ne[0])), b(a.size());
  random_rows(c, t, TensorType::F32, 7, 0, 1, reinterpret_cast<uint8_t*>(a.data()));
  random_rows(c, t, TensorType::F32, 8, 0, 1, reinterpret_cast<uint8_t*>(b.data()));
  EXPECT_NE(a, b);
}

TEST(PresetWeights, QuantizedBlocksHaveSaneScales) {
  const PresetConfig& c = *find_preset("qwen3");
  const PresetTensor t{"blk.0.ffn_up.weight", {256, 512}};
  for (const auto& mix : quant_mixes()) {
    const TensorType type = mix.base_type;
    ASSERT_TRUE(can_make_random(type));
    std::vector<uint8_t> row(row_bytes(type, 256) * 4);
    random_rows(c, t, type, 1, 0, 4, row.data());
    std::vector<uint8_t> again(row.size());
    random_rows(c, t, type, 1, 0, 4, again.data());
    EXPECT_EQ(row, again) << mix.name;
    if (type == TensorType::Q8_0) {  // d ~ sigma / 73.6 with sigma = 1/16
      for (size_t b = 0; b < row.size(); b += sizeof(BlockQ8_0)) {
        BlockQ8_0 blk;
        std::memcpy(&blk, row.data() + b, sizeof blk);
        const float d = fp16_to_f32(blk.d);
        EXPECT_GT(d, 0.75f / 16 / 73.6f * 0.99f);
        EXPECT_LT(d, 1.25f / 16 / 73.6f * 1.01f);
        for (int8_t q : blk.qs) EXPECT_NE(q, -128);
      }
    }
  }
  // Rope scaling factors for Llama 3.2: 1 for high frequencies, 32 for the lowest.
  const PresetConfig& l = *find_preset("llama32-1b");
  std::vector<float> f(32);
  random_rows(l, {"rope_freqs.weight", {32}}, TensorType::F32, 1, 0, 1, reinterpret_cast<uint8_t*>(f.data()));
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[31], 32.0f);
  for (size_t i = 1; i < f.size(); ++i) EXPECT_GE(f[i], f[i - 1]);
}

}  // namespace
}  // namespace zinc::model
