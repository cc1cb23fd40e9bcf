#include "model/model.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "gguf/file.h"
#include "gguf_edit.h"
#include "model/architectures.h"
#include "support/test_data.h"

namespace zinc::model {
namespace {

std::unique_ptr<Model> load_ok(const std::string& rel) {
  auto m = Model::load(test::data_path(rel));
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? std::move(m).value() : nullptr;
}

// Loads a copy of `rel` with edits and returns the load error ("" when it loaded).
std::string load_error(const std::string& rel, const test::GgufEdits& edits) {
  static int counter = 0;
  const std::string path = test::temp_path("edited" + std::to_string(counter++) + ".gguf");
  Status s = test::copy_gguf(test::data_path(rel), path, edits);
  EXPECT_TRUE(s.ok()) << s.message();
  auto m = Model::load(path);
  return m.ok() ? "" : m.status().message();
}

TEST(Model, LoadsEverySharedModelAndBuildsItsGraphs) {
  ZINC_REQUIRE_TEST_DATA();
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(test::data_path("models"))) {
    if (e.path().extension() != ".gguf") continue;
    auto m = Model::load(e.path().string());
    ASSERT_TRUE(m.ok()) << m.status().message();
    for (graph::BatchShape shape : {graph::BatchShape{1, 1}, graph::BatchShape{7, 7}, graph::BatchShape{5, 1}}) {
      graph::Graph g = (*m)->build_graph(shape);
      EXPECT_GT(g.ops().size(), 10u);
      const graph::Buffer& out = g.buffer(g.output());
      EXPECT_EQ(out.rows, shape.n_outputs);
      EXPECT_EQ(out.cols, int64_t((*m)->hparams().n_vocab));
      EXPECT_LE(g.arena_bytes(), g.unplanned_bytes());
    }
    EXPECT_GT((*m)->weight_bytes(), 0u);
    ++n;
  }
  EXPECT_EQ(n, 25);
}

TEST(Model, LlamaHyperParameters) {
  ZINC_REQUIRE_TEST_DATA();
  auto m = load_ok("models/llama-f32.gguf");
  ASSERT_TRUE(m);
  const HParams& hp = m->hparams();
  EXPECT_EQ(hp.arch, "llama");
  EXPECT_EQ(hp.n_vocab, 512u);
  EXPECT_EQ(hp.n_embd, 256u);
  EXPECT_EQ(hp.n_layer, 4u);
  EXPECT_EQ(hp.n_head[0], 8u);
  EXPECT_EQ(hp.n_head_kv[3], 2u);
  EXPECT_EQ(hp.n_head_dim_k, 32u);
  EXPECT_EQ(hp.n_ff[0], 768u);
  EXPECT_EQ(hp.rope.mode, graph::RopeMode::kNorm);
  EXPECT_EQ(hp.rope.n_rot, 32);
  EXPECT_FLOAT_EQ(hp.rope.freq_base, 500000.f);
  EXPECT_EQ(hp.ffn, FfnKind::kDense);
  EXPECT_EQ(m->state_layout().kv_layers.size(), 4u);
  EXPECT_TRUE(m->state_layout().recurrent_layers.empty());
  EXPECT_EQ(m->weight(WeightId::kAttnQBias, 0), nullptr);
  EXPECT_EQ(m->need(WeightId::kAttnQ, 2).name, "blk.2.attn_q.weight");
}

TEST(Model, StoriesDefaultsKeyLengthAndRopeBase) {
  ZINC_REQUIRE_TEST_DATA();
  auto m = load_ok("models/stories260K.gguf");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->hparams().n_head_dim_k, 8u);  // n_embd / n_head
  EXPECT_EQ(m->hparams().rope.n_rot, 8);
  EXPECT_FLOAT_EQ(m->hparams().rope.freq_base, 10000.f);
}

TEST(Model, QwenVariantsAreData) {
  ZINC_REQUIRE_TEST_DATA();
  auto q2 = load_ok("models/qwen2-f32.gguf");
  ASSERT_TRUE(q2);
  EXPECT_EQ(q2->hparams().rope.mode, graph::RopeMode::kNeox);
  EXPECT_NE(q2->weight(WeightId::kAttnQBias, 0), nullptr);
  auto q3 = load_ok("models/qwen3-f32.gguf");
  ASSERT_TRUE(q3);
  EXPECT_NE(q3->weight(WeightId::kAttnKNorm, 1), nullptr);
  auto moe = load_ok("models/qwen3moe-q4_k_m.gguf");
  ASSERT_TRUE(moe);
  ASSERT_TRUE(moe->hparams().moe);
  EXPECT_EQ(moe->hparams().moe->n_expert, 8u);
  EXPECT_EQ(moe->hparams().moe->n_expert_used, 2u);
  EXPECT_EQ(moe->hparams().moe->n_ff_exp, 256u);
  EXPECT_EQ(moe->hparams().ffn, FfnKind::kMoe);
}

TEST(Model, Qwen35HybridLayout) {
  ZINC_REQUIRE_TEST_DATA();
  auto m = load_ok("models/qwen35moe-f32.gguf");
  ASSERT_TRUE(m);
  const HParams& hp = m->hparams();
  EXPECT_EQ(hp.rope.mode, graph::RopeMode::kImrope);
  EXPECT_EQ(hp.rope.n_rot, 16);
  EXPECT_EQ(hp.rope.sections, (std::array<int32_t, 4>{4, 4, 4, 0}));
  ASSERT_EQ(hp.layer_kind.size(), 4u);
  EXPECT_EQ(hp.layer_kind[0], LayerKind::kDeltaNet);
  EXPECT_EQ(hp.layer_kind[2], LayerKind::kDeltaNet);
  EXPECT_EQ(hp.layer_kind[3], LayerKind::kAttention);
  ASSERT_TRUE(hp.delta_net);
  EXPECT_EQ(hp.delta_net->n_k_heads, 2u);
  EXPECT_EQ(hp.delta_net->n_v_heads, 4u);
  EXPECT_EQ(hp.delta_net->d_k, 32u);
  EXPECT_EQ(hp.delta_net->d_v, 32u);
  EXPECT_EQ(hp.delta_net->conv_dim(), 256);
  EXPECT_EQ(hp.ffn, FfnKind::kMoeShared);
  EXPECT_EQ(hp.moe->n_ff_shexp, 256u);
  const auto& st = m->state_layout();
  ASSERT_EQ(st.kv_layers.size(), 1u);
  ASSERT_EQ(st.recurrent_layers.size(), 3u);
  EXPECT_EQ(st.recurrent_layers[0].conv_floats, 3 * 256);
  EXPECT_EQ(st.recurrent_layers[0].ssm_floats, 4 * 32 * 32);
  EXPECT_EQ(m->kv_layer(3), 0);
  EXPECT_EQ(m->recurrent_layer(2), 2);
}

TEST(Model, MtpLayersAreNotRun) {
  ZINC_REQUIRE_TEST_DATA();
  test::GgufEdits e;
  e.set_keys.push_back({"qwen35.nextn_predict_layers", gguf::Value::u32(1)});
  const std::string path = test::temp_path("mtp.gguf");
  ASSERT_TRUE(test::copy_gguf(test::data_path("models/qwen35-f32.gguf"), path, e).ok());
  auto m = Model::load(path);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ((*m)->hparams().n_layer, 3u);
  EXPECT_EQ((*m)->hparams().n_layer_file, 4u);
  EXPECT_TRUE((*m)->state_layout().kv_layers.empty());  // layer 3 was the only attention layer
}

TEST(Model, TiedEmbeddingsWhenOutputIsAbsent) {
  ZINC_REQUIRE_TEST_DATA();
  test::GgufEdits e;
  e.drop_tensors = {"output.weight"};
  const std::string path = test::temp_path("tied.gguf");
  ASSERT_TRUE(test::copy_gguf(test::data_path("models/qwen3-f32.gguf"), path, e).ok());
  auto m = Model::load(path);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(&(*m)->need(WeightId::kOutput), &(*m)->need(WeightId::kTokenEmbd));
}

// The CPU backend's copy of the weights: every weight read from the file now reads the same bytes
// from the copy (element-wise weights converted at load stay where they are); done once.
TEST(Model, WeightsResidentCopyTheFileBytes) {
  ZINC_REQUIRE_TEST_DATA();
  auto m = load_ok("models/qwen3moe-q4_k_m.gguf");
  ASSERT_NE(m, nullptr);
  std::vector<std::pair<const graph::Weight*, const void*>> before;
  for (const gguf::TensorInfo& t : m->file().tensors())
    for (int layer = -1; layer < int(m->hparams().n_layer); ++layer)
      for (size_t id = 0; id < kNumWeightIds; ++id)
        if (const graph::Weight* w = m->weight(WeightId(id), layer); w && w->name == t.name)
          before.push_back({w, w->data});
  ASSERT_GT(before.size(), 10u);
  EXPECT_FALSE(m->weights_resident());
  ASSERT_TRUE(m->make_weights_resident().ok());
  EXPECT_TRUE(m->weights_resident());
  int moved = 0;
  for (const auto& [w, old] : before) {
    const gguf::TensorInfo* t = m->file().find_tensor(w->name);
    ASSERT_NE(t, nullptr);
    if (old != t->data) {  // converted at load
      EXPECT_EQ(w->data, old) << w->name;
      continue;
    }
    ++moved;
    EXPECT_NE(w->data, old) << w->name;
    EXPECT_EQ(std::memcmp(w->data, t->data, t->size_bytes), 0) << w->name;
  }
  EXPECT_GT(moved, 10);
  const void* again = before.front().first->data;
  ASSERT_TRUE(m->make_weights_resident().ok());
  EXPECT_EQ(before.front().first->data, again);
}

// general.alignment may be 1: tensors at addresses the block layouts cannot use are copied to
// aligned memory at load (and stay aligned in the resident copy), with the file's bytes.
TEST(Model, WeightsOfAFileAlignedToOneByteAreAligned) {
  ZINC_REQUIRE_TEST_DATA();
  const std::string path = test::temp_path("align1.gguf");
  test::GgufEdits edits;
  edits.alignment = 1;
  edits.set_keys.push_back({"zinc.test.pad", gguf::Value::u8(1)});  // the data section starts at an odd offset
  ASSERT_TRUE(test::copy_gguf(test::data_path("models/qwen3moe-q4_k_m.gguf"), path, edits).ok());
  auto loaded = Model::load(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const Model& m = **loaded;
  EXPECT_EQ(m.file().alignment(), 1u);
  int misaligned_in_file = 0;
  auto check = [&](bool count) {
    for (const gguf::TensorInfo& t : m.file().tensors())
      for (int layer = -1; layer < int(m.hparams().n_layer); ++layer)
        for (size_t id = 0; id < kNumWeightIds; ++id) {
          const graph::Weight* w = m.weight(WeightId(id), layer);
          if (!w || w->name != t.name || w->type != t.type) continue;  // not bound, or converted
          EXPECT_EQ(reinterpret_cast<uintptr_t>(w->data) % 4, 0u) << w->name;
          EXPECT_EQ(std::memcmp(w->data, t.data, t.size_bytes), 0) << w->name;
          if (count) misaligned_in_file += reinterpret_cast<uintptr_t>(t.data) % 4 != 0;
        }
  };
  check(true);
  EXPECT_GT(misaligned_in_file, 3);  // the case is exercised
  ASSERT_TRUE(m.make_weights_resident().ok());
  check(false);
}

TEST(Model, PerLayerHeadCounts) {
  ZINC_REQUIRE_TEST_DATA();
  test::GgufEdits e;
  e.set_keys.push_back({"llama.attention.head_count_kv", gguf::Value::u32_array({2, 2, 2, 2})});
  const std::string path = test::temp_path("perlayer.gguf");
  ASSERT_TRUE(test::copy_gguf(test::data_path("models/llama-f32.gguf"), path, e).ok());
  auto m = Model::load(path);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ((*m)->hparams().n_head_kv[2], 2u);

  test::GgufEdits bad;
  bad.set_keys.push_back({"llama.attention.head_count_kv", gguf::Value::u32_array({2, 2, 2})});
  EXPECT_NE(load_error("models/llama-f32.gguf", bad).find("has 3 entries, expected 4"), std::string::npos);
}

TEST(Model, ErrorsNameTheKeyOrTensorAndTheNumbers) {
  ZINC_REQUIRE_TEST_DATA();
  {
    test::GgufEdits e;
    e.drop_keys = {"llama.embedding_length"};
    EXPECT_NE(load_error("models/llama-f32.gguf", e).find("missing metadata key 'llama.embedding_length'"),
              std::string::npos);
  }
  {
    test::GgufEdits e;
    e.set_keys.push_back({"llama.block_count", gguf::Value::i32(4)});
    const std::string msg = load_error("models/llama-f32.gguf", e);
    EXPECT_NE(msg.find("'llama.block_count' has type INT32, expected UINT32"), std::string::npos) << msg;
  }
  {
    test::GgufEdits e;
    e.set_keys.push_back({"general.architecture", gguf::Value::string("gpt2")});
    const std::string msg = load_error("models/llama-f32.gguf", e);
    EXPECT_NE(msg.find("architecture 'gpt2' is not supported"), std::string::npos) << msg;
    EXPECT_NE(msg.find("qwen35moe"), std::string::npos) << msg;
  }
  {
    test::GgufEdits e;
    e.reshape["blk.1.attn_k.weight"] = {256, 32};
    const std::string msg = load_error("models/llama-f32.gguf", e);
    EXPECT_NE(msg.find("tensor 'blk.1.attn_k.weight' has shape [256, 32], expected [n_embd=256, n_head_kv*head_dim_k=64]"),
              std::string::npos)
        << msg;
  }
  {
    test::GgufEdits e;
    e.drop_tensors = {"blk.2.ssm_alpha.weight"};
    EXPECT_NE(load_error("models/qwen35-f32.gguf", e).find("missing tensor 'blk.2.ssm_alpha.weight'"), std::string::npos);
  }
  {
    test::GgufEdits e;
    e.add_f32["blk.0.ffn_up.bias"] = {768};
    EXPECT_NE(load_error("models/llama-f32.gguf", e).find("'blk.0.ffn_up.bias'"), std::string::npos);
  }
  {
    test::GgufEdits e;
    e.retype["blk.0.ffn_up.weight"] = TensorType::IQ2_XXS;
    const std::string msg = load_error("models/llama-f32.gguf", e);
    EXPECT_NE(msg.find("'blk.0.ffn_up.weight' has type IQ2_XXS"), std::string::npos) << msg;
  }
  {
    test::GgufEdits e;
    e.drop_keys = {"qwen35.ssm.conv_kernel"};
    EXPECT_NE(load_error("models/qwen35-f32.gguf", e).find("'qwen35.ssm.conv_kernel'"), std::string::npos);
  }
  {
    test::GgufEdits e;
    e.set_keys.push_back({"qwen35moe.rope.dimension_sections", gguf::Value::i32_array({4, 4, 4})});
    const std::string msg = load_error("models/qwen35moe-f32.gguf", e);
    EXPECT_NE(msg.find("has 3 entries, expected 4"), std::string::npos) << msg;
  }
}

TEST(Model, EverySupportedArchitectureHasAFamily) {
  for (auto arch : supported_architectures()) {
    const Family* f = find_family(arch);
    ASSERT_NE(f, nullptr) << arch;
    EXPECT_EQ(f->arch, arch);
    EXPECT_FALSE(f->weights.empty());
  }
  EXPECT_EQ(find_family("gemma3"), nullptr);
}

TEST(Model, LoadErrorStartsWithThePath) {
  auto m = Model::load("/nonexistent/model.gguf");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message().rfind("/nonexistent/model.gguf", 0), 0u) << m.status().message();
}

}  // namespace
}  // namespace zinc::model

namespace zinc::model {
namespace {

// Decode bandwidth counts what one token reads: k of n experts, one embedding row.
TEST(Model, DecodeBytesCountActiveExpertsAndOneEmbeddingRow) {
  ZINC_REQUIRE_TEST_DATA();
  auto moe = load_ok("models/qwen3moe-f32.gguf");
  ASSERT_TRUE(moe);
  ASSERT_TRUE(moe->hparams().moe);
  const MoeParams& hp = *moe->hparams().moe;
  uint64_t expert_bytes = 0, other_bytes = 0;
  const gguf::File& f = moe->file();
  for (const auto& t : f.tensors()) {
    if (t.n_dims == 3 && t.ne[2] == int64_t(hp.n_expert))
      expert_bytes += t.size_bytes;
    else if (t.name == "token_embd.weight" && f.find_tensor("output.weight"))
      other_bytes += t.row_bytes();
    else
      other_bytes += t.size_bytes;
  }
  ASSERT_GT(expert_bytes, 0u);
  EXPECT_EQ(moe->decode_bytes(), other_bytes + expert_bytes / hp.n_expert * hp.n_expert_used);
  EXPECT_LT(moe->decode_bytes(), moe->weight_bytes());
  auto dense = load_ok("models/llama-f32.gguf");
  ASSERT_TRUE(dense);
  EXPECT_LE(dense->decode_bytes(), dense->weight_bytes());
}

}  // namespace
}  // namespace zinc::model
