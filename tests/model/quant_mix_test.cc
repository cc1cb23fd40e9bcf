#include "model/quant_mix.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "support/test_data.h"

namespace zinc::model {
namespace {

using T = TensorType;

const QuantMix& mix(const char* name) {
  const QuantMix* m = find_quant_mix(name);
  EXPECT_NE(m, nullptr) << name;
  return *m;
}

MixTensor tensor(std::string name, std::vector<int64_t> ne, T type = T::F32) {
  MixTensor t;
  t.name = std::move(name);
  for (size_t i = 0; i < ne.size(); ++i) t.ne[i] = ne[i];
  t.type = type;
  return t;
}

// A dense llama-like model: n_layer layers of attention + FFN, with or without output.weight.
std::vector<MixTensor> dense_model(int n_layer, bool with_output, int64_t n_embd = 256) {
  std::vector<MixTensor> ts = {tensor("token_embd.weight", {n_embd, 1000}), tensor("output_norm.weight", {n_embd})};
  if (with_output) ts.push_back(tensor("output.weight", {n_embd, 1000}));
  for (int i = 0; i < n_layer; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    for (const char* n : {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up"})
      ts.push_back(tensor(b + n + ".weight", {n_embd, n_embd}));
    ts.push_back(tensor(b + "ffn_down.weight", {n_embd * 2, n_embd}));
    ts.push_back(tensor(b + "attn_norm.weight", {n_embd}));
  }
  return ts;
}

std::map<std::string, T> plan_by_name(const QuantMix& m, const MixModel& model, const std::vector<MixTensor>& ts) {
  auto plan = plan_quant_mix(m, model, ts);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  std::map<std::string, T> out;
  if (!plan.ok()) return out;
  for (size_t i = 0; i < ts.size(); ++i) out[ts[i].name] = plan->types[i];
  return out;
}

TEST(QuantMix, NamesAndFileTypes) {
  const std::map<std::string, uint32_t> expected = {
      {"F32", 0},    {"F16", 1},     {"Q4_0", 2},    {"Q4_1", 3},    {"Q8_0", 7},    {"Q5_0", 8},
      {"Q5_1", 9},   {"Q2_K", 10},   {"Q3_K_S", 11}, {"Q3_K_M", 12}, {"Q3_K_L", 13}, {"Q4_K_S", 14},
      {"Q4_K_M", 15}, {"Q5_K_S", 16}, {"Q5_K_M", 17}, {"Q6_K", 18},  {"BF16", 32}};
  EXPECT_EQ(quant_mixes().size(), expected.size());
  for (const auto& [name, ftype] : expected) EXPECT_EQ(mix(name.c_str()).file_type, ftype) << name;
  EXPECT_EQ(find_quant_mix("q4_k_m"), find_quant_mix("Q4_K_M"));
  EXPECT_EQ(find_quant_mix("Q4_K"), nullptr);
  EXPECT_EQ(find_quant_mix(""), nullptr);
  EXPECT_NE(quant_mix_list().find("Q4_K_M"), std::string::npos);
}

TEST(QuantMix, WhatIsNeverQuantized) {
  EXPECT_FALSE(tensor_is_quantizable("blk.0.attn_norm.weight", {4096, 1, 1, 1}));
  EXPECT_FALSE(tensor_is_quantizable("blk.0.attn_q.weight", {4096, 1, 1, 1}));  // trailing 1s: 1-D
  EXPECT_FALSE(tensor_is_quantizable("blk.0.ffn_gate_inp.weight", {2048, 128, 1, 1}));
  EXPECT_FALSE(tensor_is_quantizable("blk.0.ssm_conv1d.weight", {4, 8192, 1, 1}));
  EXPECT_FALSE(tensor_is_quantizable("blk.0.attn_q_norm.weight", {128, 1, 1, 1}));
  EXPECT_FALSE(tensor_is_quantizable("blk.0.ssm_a", {32, 1, 1, 1}));
  EXPECT_FALSE(tensor_is_quantizable("blk.0.attn_q.bias", {4096, 2, 1, 1}));
  EXPECT_FALSE(tensor_is_quantizable("position_embd.weight", {768, 1024, 1, 1}));
  EXPECT_TRUE(tensor_is_quantizable("blk.0.attn_q.weight", {4096, 4096, 1, 1}));
  EXPECT_TRUE(tensor_is_quantizable("blk.0.ffn_down_exps.weight", {512, 2048, 256, 1}));
  EXPECT_TRUE(tensor_is_quantizable("blk.0.ssm_alpha.weight", {2048, 32, 1, 1}));
  EXPECT_TRUE(tensor_is_quantizable("token_embd.weight", {2048, 1000, 1, 1}));

  // Never-quantized tensors keep their source type, whatever the mix.
  std::vector<MixTensor> ts = {tensor("a_norm.weight", {256}, T::BF16), tensor("blk.0.ssm_conv1d.weight", {4, 256}),
                               tensor("blk.0.ffn_gate_inp.weight", {256, 8}, T::F16)};
  for (const auto& m : quant_mixes()) {
    auto plan = plan_quant_mix(m, MixModel{"llama", 1, 8, 8, 0}, ts);
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(plan->types, (std::vector<T>{T::BF16, T::F32, T::F16})) << m.name;
  }
}

TEST(QuantMix, FloatMixesConvertEveryMatrix) {
  const MixModel model{"llama", 4, 8, 2, 0};
  const auto ts = dense_model(4, true);
  for (const char* name : {"F32", "F16", "BF16"}) {
    for (const auto& [n, t] : plan_by_name(mix(name), model, ts))
      EXPECT_EQ(t, n.find("norm") != std::string::npos ? T::F32 : mix(name).base_type) << n << " " << name;
  }
}

TEST(QuantMix, OutputAndTiedEmbeddings) {
  const MixModel model{"llama", 4, 8, 2, 0};
  auto with_output = plan_by_name(mix("Q4_0"), model, dense_model(4, true));
  EXPECT_EQ(with_output["output.weight"], T::Q6_K);
  EXPECT_EQ(with_output["token_embd.weight"], T::Q4_0);
  EXPECT_EQ(plan_by_name(mix("Q8_0"), model, dense_model(4, true))["output.weight"], T::Q8_0);
  // No output.weight: the embedding doubles as the head and gets its type.
  auto tied = plan_by_name(mix("Q4_K_M"), model, dense_model(4, false));
  EXPECT_EQ(tied["token_embd.weight"], T::Q6_K);
  EXPECT_EQ(plan_by_name(mix("Q2_K"), model, dense_model(4, true))["token_embd.weight"], T::Q2_K);
}

TEST(QuantMix, MoreBitsInFirstAndLastLayersForMMixes) {
  const int n = 32;
  const MixModel model{"llama", uint32_t(n), 32, 8, 0};
  const std::vector<int> more = {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31};
  for (const char* name : {"Q4_K_M", "Q5_K_M"}) {
    auto types = plan_by_name(mix(name), model, dense_model(n, true));
    const T base = mix(name).base_type;
    for (int i = 0; i < n; ++i) {
      const bool m = std::find(more.begin(), more.end(), i) != more.end();
      const std::string b = "blk." + std::to_string(i) + ".";
      EXPECT_EQ(types[b + "attn_v.weight"], m ? T::Q6_K : base) << name << " layer " << i;
      EXPECT_EQ(types[b + "ffn_down.weight"], m ? T::Q6_K : base) << name << " layer " << i;
      EXPECT_EQ(types[b + "attn_q.weight"], base);
      EXPECT_EQ(types[b + "attn_k.weight"], base);
      EXPECT_EQ(types[b + "attn_output.weight"], base);
      EXPECT_EQ(types[b + "ffn_up.weight"], base);
    }
    EXPECT_EQ(types["output.weight"], T::Q6_K);
  }
}

TEST(QuantMix, LowBitMixes) {
  const int n = 32;
  auto q3 = plan_by_name(mix("Q3_K_M"), MixModel{"llama", uint32_t(n), 32, 8, 0}, dense_model(n, true));
  for (int i = 0; i < n; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    EXPECT_EQ(q3[b + "attn_v.weight"], i < 2 ? T::Q5_K : T::Q4_K) << i;
    EXPECT_EQ(q3[b + "ffn_down.weight"], i < n / 16 ? T::Q5_K : T::Q4_K) << i;
    EXPECT_EQ(q3[b + "attn_output.weight"], T::Q4_K);
    EXPECT_EQ(q3[b + "attn_q.weight"], T::Q3_K);
  }
  // Q2_K: attn_v depends on the GQA ratio.
  auto q2_gqa4 = plan_by_name(mix("Q2_K"), MixModel{"llama", 4, 32, 8, 0}, dense_model(4, true));
  auto q2_mha = plan_by_name(mix("Q2_K"), MixModel{"llama", 4, 32, 32, 0}, dense_model(4, true));
  EXPECT_EQ(q2_gqa4["blk.1.attn_v.weight"], T::Q4_K);
  EXPECT_EQ(q2_mha["blk.1.attn_v.weight"], T::Q3_K);
  EXPECT_EQ(q2_mha["blk.1.ffn_down.weight"], T::Q3_K);
  EXPECT_EQ(q2_mha["blk.1.attn_output.weight"], T::Q3_K);
  EXPECT_EQ(q2_mha["blk.1.ffn_up.weight"], T::Q2_K);
  // The 70B llama bumps attn_v to Q5_K.
  auto q3_70b = plan_by_name(mix("Q3_K_M"), MixModel{"llama", 80, 64, 8, 0}, dense_model(80, true));
  EXPECT_EQ(q3_70b["blk.50.attn_v.weight"], T::Q5_K);
}

TEST(QuantMix, EightExpertModelsKeepAttentionInQ8_0) {
  const MixModel model{"qwen3moe", 4, 4, 2, 8};
  std::vector<MixTensor> ts = dense_model(4, true);
  for (int i = 0; i < 4; ++i)
    ts.push_back(tensor("blk." + std::to_string(i) + ".ffn_down_exps.weight", {256, 256, 8}));
  auto types = plan_by_name(mix("Q4_K_M"), model, ts);
  EXPECT_EQ(types["blk.0.attn_v.weight"], T::Q8_0);
  EXPECT_EQ(types["blk.0.attn_k.weight"], T::Q8_0);
  EXPECT_EQ(types["blk.0.attn_output.weight"], T::Q5_K);
  EXPECT_EQ(types["blk.0.ffn_down_exps.weight"], T::Q4_K);
  EXPECT_EQ(types["blk.3.ffn_down_exps.weight"], T::Q6_K);
  // An expert tensor outside block_count is an error naming it.
  ts.push_back(tensor("blk.9.ffn_down_exps.weight", {256, 256, 8}));
  auto bad = plan_quant_mix(mix("Q4_K_M"), model, ts);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("blk.9.ffn_down_exps.weight"), std::string::npos);
}

TEST(QuantMix, RowLengthFallbacks) {
  const MixModel model{"llama", 1, 8, 8, 0};
  std::vector<MixTensor> ts = {tensor("blk.0.ffn_up.weight", {128, 64}), tensor("blk.0.ffn_gate.weight", {96, 64}),
                               tensor("blk.0.attn_q.weight", {40, 64}), tensor("output.weight", {96, 64})};
  auto k4 = plan_quant_mix(mix("Q4_K_M"), model, ts);
  ASSERT_TRUE(k4.ok());
  EXPECT_EQ(k4->types, (std::vector<T>{T::Q5_0, T::Q5_0, T::F16, T::Q8_0}));
  EXPECT_EQ(k4->n_fallback, 3);
  auto k2 = plan_quant_mix(mix("Q2_K"), model, ts);
  EXPECT_EQ(k2->types[0], T::Q4_0);
  EXPECT_EQ(plan_quant_mix(mix("Q5_K_M"), model, ts)->types[0], T::Q5_1);
  EXPECT_EQ(plan_quant_mix(mix("Q6_K"), model, ts)->types[0], T::Q8_0);
  // llama.cpp has no fallback for the 32-element types and aborts; zinc writes F16.
  EXPECT_EQ(plan_quant_mix(mix("Q4_0"), model, ts)->types[2], T::F16);
}

TEST(QuantMix, IndependentOfTensorOrder) {
  const MixModel model{"llama", 12, 8, 2, 0};
  auto ts = dense_model(12, true);
  auto expected = plan_by_name(mix("Q4_K_M"), model, ts);
  std::mt19937 rng(3);
  std::shuffle(ts.begin(), ts.end(), rng);
  EXPECT_EQ(plan_by_name(mix("Q4_K_M"), model, ts), expected);
}

// The per-tensor types of the shared quantized models (made by llama.cpp's llama-quantize
// from the f32 twins) are exactly what the rules give.
TEST(QuantMix, MatchesLlamaQuantizeOnSharedModels) {
  ZINC_REQUIRE_TEST_DATA();
  for (const char* arch : {"llama", "qwen2", "qwen3", "qwen3moe", "qwen35", "qwen35moe"}) {
    auto src = gguf::open_file(test::data_path(std::string("models/") + arch + "-f32.gguf"));
    ASSERT_TRUE(src.ok()) << src.status().message();
    auto model = mix_model_from_gguf(**src);
    ASSERT_TRUE(model.ok()) << model.status().message();
    std::vector<MixTensor> ts;
    for (const auto& t : (*src)->tensors()) {
      MixTensor m;
      m.name = std::string(t.name);
      m.ne = t.ne;
      m.type = t.type;
      ts.push_back(m);
    }
    for (const char* q : {"q8_0", "q4_0", "q4_k_m"}) {
      SCOPED_TRACE(std::string(arch) + "-" + q);
      auto ref = gguf::open_file(test::data_path(std::string("models/") + arch + "-" + q + ".gguf"));
      ASSERT_TRUE(ref.ok()) << ref.status().message();
      const QuantMix& m = mix(q);
      EXPECT_EQ(*(*ref)->find_u32("general.file_type").value(), m.file_type);
      auto plan = plan_quant_mix(m, *model, ts);
      ASSERT_TRUE(plan.ok()) << plan.status().message();
      for (size_t i = 0; i < ts.size(); ++i) {
        const gguf::TensorInfo* r = (*ref)->find_tensor(ts[i].name);
        ASSERT_NE(r, nullptr) << ts[i].name;
        EXPECT_EQ(type_name(plan->types[i]), type_name(r->type)) << ts[i].name;
      }
    }
  }
}

}  // namespace
}  // namespace zinc::model
