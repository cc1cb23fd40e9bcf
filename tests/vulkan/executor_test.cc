// The Vulkan executor against the CPU executor on small random graphs: every dense-model op
// (embed of a quantized table with a scale, rms_norm with and without the residual add,
// matmul with bias and SwiGLU pair on the matvec and GEMM paths, add, gather_rows, qk_norm,
// RoPE in every mode, KV write with the QK norms and RoPE fused in and alone, attention over the
// paged cache) with odd sizes, several sequences in one batch, contexts crossing 16-token pages
// and split decode attention; the delta-net decode fusions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "cpu/executor.h"
#include "vk_test_util.h"
#include "vulkan/executor.h"

namespace zinc::vulkan::test {
namespace {

// A weight the test owns.
struct OwnedWeight {
  std::vector<uint8_t> bytes;
  graph::Weight w;
};

std::unique_ptr<OwnedWeight> vector_weight(int64_t n, uint32_t seed, float mean = 0.f) {
  auto o = std::make_unique<OwnedWeight>();
  auto v = random_floats(size_t(n), seed, 0.3f);
  for (auto& x : v) x += mean;
  o->bytes.resize(size_t(n) * 4);
  std::memcpy(o->bytes.data(), v.data(), o->bytes.size());
  o->w.name = "vec" + std::to_string(seed);
  o->w.type = TensorType::F32;
  o->w.data = o->bytes.data();
  o->w.ne = {n, 1, 1, 1};
  o->w.row_bytes = o->w.slice_bytes = size_t(n) * 4;
  return o;
}

std::unique_ptr<OwnedWeight> matrix_weight(TensorType type, int64_t rows, int64_t cols, uint32_t seed) {
  auto o = std::make_unique<OwnedWeight>();
  Matrix m = random_matrix(type, rows, cols, seed);
  o->bytes = std::move(m.bytes);
  o->w.name = "mat" + std::to_string(seed);
  o->w.type = type;
  o->w.data = o->bytes.data();
  o->w.ne = {cols, rows, 1, 1};
  o->w.row_bytes = row_bytes(type, cols);
  o->w.slice_bytes = o->w.row_bytes * size_t(rows);
  return o;
}

// Runs steps of a graph on both executors and compares each step's output.
struct Harness {
  graph::StateLayout layout;
  std::unique_ptr<kv::Cache> cache;
  std::unique_ptr<cpu::ThreadPool> pool = std::make_unique<cpu::ThreadPool>(2);
  std::unique_ptr<Kernels> kernels;
  std::unique_ptr<ModelWeights> weights;
  std::unique_ptr<KvPool> kv;

  explicit Harness(graph::StateLayout l, kv::KvType type = kv::KvType::kF16, int64_t n_pages = 24) : layout(std::move(l)) {
    kv::CacheOptions co;
    co.n_pages = n_pages;
    co.max_seqs = 3;
    co.type = type;
    auto c = kv::Cache::create(layout, co);
    auto k = Kernels::create(dev(), type == kv::KvType::kF16);
    auto w = ModelWeights::create(dev());
    EXPECT_TRUE(c.ok() && k.ok() && w.ok());
    cache = std::move(*c);
    kernels = std::move(*k);
    weights = std::move(*w);
    auto p = KvPool::create(dev(), *cache);
    EXPECT_TRUE(p.ok());
    kv = std::move(*p);
  }

  // One step: `fill` writes the graph's inputs (same data to both executors).
  void step(cpu::Executor& c, Executor& v, const std::vector<int32_t>& tokens, const std::vector<int32_t>& seqs,
            const std::vector<int32_t>& out_rows, double nmse, uint32_t seed) {
    std::vector<int32_t> positions(seqs.size());
    std::vector<int64_t> next(3);
    for (int s = 0; s < 3; ++s) next[size_t(s)] = cache->has_sequence(s) ? cache->length(s) : 0;
    for (size_t i = 0; i < seqs.size(); ++i) positions[i] = int32_t(next[size_t(seqs[i])]++);
    for (int s = 0; s < 3; ++s) {
      if (!cache->has_sequence(s)) continue;
      ASSERT_TRUE(cache->reserve(s, next[size_t(s)]).ok());
    }
    const graph::Graph& g = c.graph();
    for (size_t b = 0; b < g.buffers().size(); ++b) {
      if (!g.buffers()[b].is_input) continue;
      const graph::BufferId id{int32_t(b)};
      const auto data = random_floats(size_t(g.buffer(id).n_elements()), seed + uint32_t(b));
      std::copy(data.begin(), data.end(), c.mutable_buffer(id).begin());
      ASSERT_TRUE(v.write_buffer(id, data).ok());
    }
    const graph::Batch batch{tokens, positions, seqs, out_rows};
    c.run(batch, *cache);
    const Status s = v.run(batch, *cache);
    ASSERT_TRUE(s.ok()) << s.message();
    for (int q = 0; q < 3; ++q)
      if (cache->has_sequence(q)) cache->set_length(q, next[size_t(q)]);
    const auto want = c.output();
    const auto got = v.output();
    ASSERT_EQ(want.size(), got.size());
    double num = 0, den = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_FALSE(std::isnan(got[i])) << i;
      num += (double(want[i]) - got[i]) * (double(want[i]) - got[i]);
      den += double(want[i]) * want[i];
    }
    EXPECT_LE(num / den, nmse) << "step " << seed;
  }
};

// qk_norm, RoPE, kv_write and attention (optionally gated) over 3 sequences.
// rope_q_last: RoPE of q after the KV write, so the executor cannot fuse RoPE into kv_write.
// n_prefill steps of 37 tokens fill sequence 0 before the decode steps (a long context: more
// live splits in the decode attention).
void check_attention(graph::RopeParams rope, bool gate, kv::KvType type, int32_t n_q, int32_t n_kv, int32_t dk,
                     bool rope_q_last = false, int n_prefill = 3, int64_t n_pages = 24) {
  SCOPED_TRACE(testing::Message() << "rope mode " << int(rope.mode) << " n_rot " << rope.n_rot << (gate ? " gate" : "")
                                  << " heads " << n_q << "/" << n_kv << " dim " << dk << " prefill " << n_prefill);
  graph::StateLayout layout;
  layout.kv_layers.push_back({n_kv, dk, dk});
  Harness h(layout, type, n_pages);
  auto qn = vector_weight(dk, 11, 1.f), kn = vector_weight(dk, 12, 1.f);
  auto build = [&](int64_t T) {
    graph::GraphBuilder b({T, T}, layout);
    const auto qh = gate ? graph::HeadLayout{n_q, dk, 2 * dk, 0} : graph::HeadLayout::packed(n_q, dk);
    const auto gh = graph::HeadLayout{n_q, dk, 2 * dk, dk};
    const auto kh = graph::HeadLayout::packed(n_kv, dk);
    auto q = b.input("q", int64_t(n_q) * dk * (gate ? 2 : 1)), k = b.input("k", int64_t(n_kv) * dk),
         v = b.input("v", int64_t(n_kv) * dk);
    b.add("qn", graph::QkNorm{q, qh, &qn->w, 1e-6f});
    b.add("kn", graph::QkNorm{k, kh, &kn->w, 1e-6f});
    if (!rope_q_last) b.add("rq", graph::Rope{q, qh, rope});
    b.add("rk", graph::Rope{k, kh, rope});
    b.add("kvw", graph::KvWrite{k, v, kh, kh, 0});
    if (rope_q_last) b.add("rq", graph::Rope{q, qh, rope});
    graph::Attention a;
    a.q = q;
    a.q_heads = qh;
    if (gate) {
      a.gate = q;
      a.gate_heads = gh;
    }
    a.out = b.buffer("out", int64_t(n_q) * dk);
    a.scale = 1.f / std::sqrt(float(dk));
    b.add("att", a);
    return b.finish(a.out);
  };
  cpu::Executor cpu_pre(build(37), *h.pool), cpu_dec(build(3), *h.pool);
  auto vk_pre = Executor::create(*h.kernels, *h.weights, *h.kv, build(37), 3);
  auto vk_dec = Executor::create(*h.kernels, *h.weights, *h.kv, build(3), 3);
  ASSERT_TRUE(vk_pre.ok()) << vk_pre.status().message();
  ASSERT_TRUE(vk_dec.ok()) << vk_dec.status().message();
  for (int s = 0; s < 3; ++s) ASSERT_TRUE(h.cache->add_sequence().ok());
  std::vector<int32_t> rows37(37);
  for (int i = 0; i < 37; ++i) rows37[size_t(i)] = i;
  const std::vector<int32_t> tok37(37, 0), tok3(3, 0), rows3{0, 1, 2};
  std::vector<int32_t> mixed(37, 0);
  for (int i = 20; i < 37; ++i) mixed[size_t(i)] = 1;
  const double tol = 1e-6;  // nmse: only f32 rounding and exp() differ
  // The cooperative-matrix prefill kernel rounds queries and probabilities to f16.
  const bool coopmat = h.kernels->attention->uses_coopmat() && dk % 16 == 0 && type == kv::KvType::kF16;
  const double pre_tol = coopmat ? 1e-5 : tol;
  h.step(cpu_pre, **vk_pre, tok37, mixed, rows37, pre_tol, 100);
  for (int i = 1; i < n_prefill; ++i)
    h.step(cpu_pre, **vk_pre, tok37, std::vector<int32_t>(37, 0), rows37, pre_tol, 100 + 100 * uint32_t(i));
  for (int i = 0; i < 3; ++i) h.step(cpu_dec, **vk_dec, tok3, {0, 1, 2}, rows3, tol, 400 + 10 * uint32_t(i));

  // One dispatch stands for QkNorm, QkNorm, Rope, Rope, KvWrite unless q is rotated later.
  std::vector<int32_t> pos3;
  for (int s = 0; s < 3; ++s) {
    pos3.push_back(int32_t(h.cache->length(s)));
    ASSERT_TRUE(h.cache->reserve(s, h.cache->length(s) + 1).ok());
  }
  const std::vector<int32_t> seq3{0, 1, 2};
  auto timings = (*vk_dec)->profile({tok3, pos3, seq3, rows3}, *h.cache);
  ASSERT_TRUE(timings.ok()) << timings.status().message();
  std::vector<std::string> kinds;
  for (const OpTiming& t : *timings) kinds.push_back(t.kind);
  const auto count = [&](const char* kind) { return std::count(kinds.begin(), kinds.end(), kind); };
  EXPECT_EQ(count("qk_norm"), rope_q_last ? 2 : 0);
  EXPECT_EQ(count("norm_rope_kv_write"), rope_q_last ? 0 : 1);
  EXPECT_EQ(count("rope"), rope_q_last ? 2 : 0);
  EXPECT_EQ(count("kv_write"), rope_q_last ? 1 : 0);
}

TEST(VulkanExecutor, AttentionMatchesCpu) {
  ZINC_REQUIRE_VULKAN();
  graph::RopeParams norm;
  norm.mode = graph::RopeMode::kNorm;
  norm.n_rot = 32;
  check_attention(norm, false, kv::KvType::kF16, 4, 2, 32);
  graph::RopeParams norm8 = norm;
  norm8.n_rot = 8;
  check_attention(norm8, false, kv::KvType::kF16, 8, 4, 8);  // stories260K's heads
  check_attention(norm, false, kv::KvType::kF16, 4, 2, 32, /*rope_q_last=*/true);
  check_attention(norm, false, kv::KvType::kF32, 6, 1, 32);
  check_attention(norm, false, kv::KvType::kF16, 4, 2, 32, false, 16, 48);  // 5 of 6 splits live
  check_attention(norm, false, kv::KvType::kF16, 8, 2, 128);  // Llama-3's head dim
  check_attention(norm, false, kv::KvType::kF16, 8, 2, 128, false, 16, 48);  // 5 of 6 splits live
  // 6 query heads per KV head: decode workgroups of 4 and 2 heads, 5 of 6 splits live.
  check_attention(norm, true, kv::KvType::kF16, 12, 2, 64, false, 16, 48);
  check_attention(norm, false, kv::KvType::kF32, 6, 1, 32, /*rope_q_last=*/true);

  auto ff = vector_weight(12, 21, 2.f);
  graph::RopeParams yarn;
  yarn.mode = graph::RopeMode::kNeox;
  yarn.n_rot = 24;  // partial rotary
  yarn.freq_base = 1e6f;
  yarn.freq_scale = 0.25f;
  yarn.ext_factor = 1.f;
  yarn.corr_dims = {2.f, 9.f};
  yarn.freq_factors = &ff->w;
  check_attention(yarn, true, kv::KvType::kF16, 18, 2, 32);  // 9 query heads per KV head: two sub-groups
  check_attention(yarn, true, kv::KvType::kF16, 18, 2, 32, /*rope_q_last=*/true);

  graph::RopeParams imrope;
  imrope.mode = graph::RopeMode::kImrope;
  imrope.n_rot = 64;
  imrope.sections = {11, 11, 10, 0};
  check_attention(imrope, true, kv::KvType::kF16, 2, 2, 64);
  check_attention(imrope, true, kv::KvType::kF16, 4, 1, 256);  // Qwen3.5's head dim
  check_attention(imrope, true, kv::KvType::kF16, 4, 1, 256, false, 16, 48);  // 5 splits live
  check_attention(imrope, true, kv::KvType::kF32, 2, 2, 64, /*rope_q_last=*/true);
}

// Embed, rms_norm (+ residual), matmul (bias, SwiGLU pair), add and gather_rows.
void check_dense(int64_t T) {
  SCOPED_TRACE(testing::Message() << T << " tokens");
  graph::StateLayout layout;
  Harness h(layout);
  const int64_t E = 256, F = 68, V = 4100;  // V: the greedy readback's argmax in 3 slices a row
  auto table = matrix_weight(TensorType::Q4_K, V, E, 1);
  auto n1 = vector_weight(E, 2, 1.f), n2 = vector_weight(E, 3, 1.f), bias = vector_weight(F, 4);
  auto w1 = matrix_weight(TensorType::Q8_0, F, E, 5), wg = matrix_weight(TensorType::Q4_0, F, E, 6),
       wu = matrix_weight(TensorType::Q4_0, F, E, 7), w2 = matrix_weight(TensorType::F16, E, F, 8),
       w3 = matrix_weight(TensorType::F32, V, E, 9);
  graph::GraphBuilder b({T, 2}, layout);
  auto x = b.buffer("x", E);
  b.add("embed", graph::Embed{x, &table->w, 0.5f});
  auto hn = b.buffer("h", E);
  b.add("norm1", graph::RmsNorm{x, {}, hn, &n1->w, 1e-5f});
  auto a = b.buffer("a", F), f = b.buffer("f", F), s = b.buffer("s", F), o = b.buffer("o", E);
  b.add("mm1", graph::Matmul{hn, a, &w1->w, &bias->w, nullptr});
  b.add("gate_up", graph::Matmul{hn, f, &wg->w, nullptr, &wu->w});
  b.add("add", graph::Add{a, f, s});
  b.add("mm2", graph::Matmul{s, o, &w2->w, nullptr, nullptr});
  auto n2o = b.buffer("n2o", E);
  b.add("norm2", graph::RmsNorm{x, o, n2o, &n2->w, 1e-5f});
  auto sel = b.buffer("sel", E, 2);
  b.add("rows", graph::GatherRows{n2o, sel});
  auto lg = b.buffer("logits", V, 2);
  b.add("out", graph::Matmul{sel, lg, &w3->w, nullptr, nullptr});
  graph::Graph g = b.finish(lg);
  cpu::Executor c(g, *h.pool);
  auto v = Executor::create(*h.kernels, *h.weights, *h.kv, std::move(g), 3);
  ASSERT_TRUE(v.ok()) << v.status().message();
  ASSERT_TRUE(h.cache->add_sequence().ok());
  std::vector<int32_t> tokens(static_cast<size_t>(T)), seqs(static_cast<size_t>(T), 0);
  for (int64_t i = 0; i < T; ++i) tokens[size_t(i)] = int32_t((i * 7 + 3) % V);
  h.step(c, **v, tokens, seqs, {int32_t(T - 1), 0}, 2e-3, 1);  // nmse: int8 activations in matvec
  // Greedy readback of the same step: the index of each output row's largest logit.
  std::vector<int32_t> positions(static_cast<size_t>(T)), rows{int32_t(T - 1), 0};
  for (int64_t i = 0; i < T; ++i) positions[size_t(i)] = int32_t(i);
  const graph::Batch batch{tokens, positions, seqs, rows};
  ASSERT_TRUE((*v)->run(batch, *h.cache, Readback::kArgmax).ok());
  const auto want = c.output();
  for (size_t r = 0; r < 2; ++r) {
    const float* row = want.data() + r * size_t(V);
    const auto best = int32_t(std::max_element(row, row + V) - row);
    const float margin = row[best] - row[(*v)->argmax()[r]];
    EXPECT_LE(margin, 0.02f * std::fabs(row[best])) << "row " << r;
  }
}

TEST(VulkanExecutor, DenseOpsMatchCpu) {
  ZINC_REQUIRE_VULKAN();
  check_dense(5);   // matvec
  check_dense(21);  // GEMM
}

// A Llama or Qwen3 attention block (input norm, q/k/v products, the QK norms with qk_norm,
// RoPE, KV write, attention, output product) on 3 sequences: prefill steps (GEMM path), then
// decode steps of 3 tokens and of 1, where the q/k/v matvecs normalise and rotate q and k and
// store k and v into the cache in their epilogues (neither rope_kv_write nor norm_rope_kv_write
// is left in the decode profile).
// With output_gate, q's rows interleave each head with its gate (Qwen3.5): the epilogue finishes
// the heads at a stride and leaves the gate rows as they are.
void check_rope_kv_epilogues(graph::RopeMode mode, int32_t n_rot, int32_t dk, bool qk_norm = false,
                             bool output_gate = false) {
  SCOPED_TRACE(testing::Message() << "mode " << int(mode) << " n_rot " << n_rot << " head dim " << dk
                                  << (qk_norm ? " qk norm" : "") << (output_gate ? " output gate" : ""));
  const int32_t n_q = 4, n_kv = 2;
  const int64_t E = 256;
  graph::StateLayout layout;
  layout.kv_layers.push_back({n_kv, dk, dk});
  Harness h(layout);
  auto n1 = vector_weight(E, 31, 1.f), qn = vector_weight(dk, 36, 1.f), kn = vector_weight(dk, 37, 1.f);
  const int64_t q_rows = int64_t(n_q) * dk * (output_gate ? 2 : 1);
  auto wq = matrix_weight(TensorType::Q4_K, q_rows, E, 32),
       wk = matrix_weight(TensorType::Q4_K, int64_t(n_kv) * dk, E, 33),
       wv = matrix_weight(TensorType::Q6_K, int64_t(n_kv) * dk, E, 34),
       wo = matrix_weight(TensorType::Q4_K, E, int64_t(n_q) * dk, 35);
  graph::RopeParams rope;
  rope.mode = mode;
  rope.n_rot = n_rot;
  if (mode == graph::RopeMode::kImrope) rope.sections = {n_rot / 8, n_rot / 8, n_rot / 4 - 2 * (n_rot / 8), 0};
  auto build = [&](int64_t T) {
    graph::GraphBuilder b({T, T}, layout);
    const auto qh = output_gate ? graph::HeadLayout{n_q, dk, 2 * dk, 0} : graph::HeadLayout::packed(n_q, dk);
    const auto kh = graph::HeadLayout::packed(n_kv, dk);
    auto x = b.input("x", E);
    auto hn = b.buffer("hn", E), q = b.buffer("q", q_rows), k = b.buffer("k", int64_t(n_kv) * dk),
         v = b.buffer("v", int64_t(n_kv) * dk);
    b.add("norm", graph::RmsNorm{x, {}, hn, &n1->w, 1e-5f});
    b.add("wq", graph::Matmul{hn, q, &wq->w, nullptr, nullptr});
    b.add("wk", graph::Matmul{hn, k, &wk->w, nullptr, nullptr});
    b.add("wv", graph::Matmul{hn, v, &wv->w, nullptr, nullptr});
    if (qk_norm) {
      b.add("qn", graph::QkNorm{q, qh, &qn->w, 1e-6f});
      b.add("kn", graph::QkNorm{k, kh, &kn->w, 1e-6f});
    }
    b.add("rq", graph::Rope{q, qh, rope});
    b.add("rk", graph::Rope{k, kh, rope});
    b.add("kvw", graph::KvWrite{k, v, kh, kh, 0});
    graph::Attention a;
    a.q = q;
    a.q_heads = qh;
    if (output_gate) {
      a.gate = q;
      a.gate_heads = {n_q, dk, 2 * dk, dk};
    }
    a.out = b.buffer("att", int64_t(n_q) * dk);
    // Logits of about unit spread: the products' q and k are large, the normalised ones are not.
    a.scale = (qk_norm ? 1.f : 0.05f) / std::sqrt(float(dk));
    b.add("att", a);
    auto o = b.buffer("o", E);
    b.add("wo", graph::Matmul{a.out, o, &wo->w, nullptr, nullptr});
    return b.finish(o);
  };
  cpu::Executor cpu_pre(build(21), *h.pool), cpu3(build(3), *h.pool), cpu1(build(1), *h.pool);
  auto vk_pre = Executor::create(*h.kernels, *h.weights, *h.kv, build(21), 3);
  auto vk3 = Executor::create(*h.kernels, *h.weights, *h.kv, build(3), 3);
  auto vk1 = Executor::create(*h.kernels, *h.weights, *h.kv, build(1), 3);
  ASSERT_TRUE(vk_pre.ok() && vk3.ok() && vk1.ok());
  for (int s = 0; s < 3; ++s) ASSERT_TRUE(h.cache->add_sequence().ok());
  std::vector<int32_t> rows21(21);
  for (int i = 0; i < 21; ++i) rows21[size_t(i)] = i;
  std::vector<int32_t> mixed(21, 0);
  for (int i = 12; i < 21; ++i) mixed[size_t(i)] = 2;
  const double tol = 3e-3;  // nmse: int8 activations in the matvecs, f16 cache
  h.step(cpu_pre, **vk_pre, std::vector<int32_t>(21, 0), mixed, rows21, tol, 500);
  for (int i = 0; i < 3; ++i) h.step(cpu3, **vk3, {0, 0, 0}, {0, 1, 2}, {0, 1, 2}, tol, 600 + 10 * uint32_t(i));
  for (int i = 0; i < 3; ++i) h.step(cpu1, **vk1, {0}, {i % 2 ? 1 : 2}, {0}, tol, 700 + 10 * uint32_t(i));
  h.step(cpu3, **vk3, {0, 0, 0}, {1, 1, 0}, {0, 1, 2}, tol, 800);  // two tokens of one sequence

  std::vector<int32_t> pos3;
  for (int s = 0; s < 3; ++s) {
    pos3.push_back(int32_t(h.cache->length(s)));
    ASSERT_TRUE(h.cache->reserve(s, h.cache->length(s) + 1).ok());
  }
  const std::vector<int32_t> tok3(3, 0), seq3{0, 1, 2};
  auto timings = (*vk3)->profile({tok3, pos3, seq3, seq3}, *h.cache);
  ASSERT_TRUE(timings.ok()) << timings.status().message();
  for (const OpTiming& t : *timings)
    for (const char* kind : {"rope_kv_write", "norm_rope_kv_write", "rope", "kv_write", "qk_norm"})
      EXPECT_NE(t.kind, kind);
  // As the step runs: the input norm (its input, the graph's input, dies there, so the matvecs
  // cannot defer it), q, k and v in one stage (no barrier between them), the attention, the output
  // product.
  auto stages = (*vk3)->profile({tok3, pos3, seq3, seq3}, *h.cache, Executor::ProfileMode::kStages);
  ASSERT_TRUE(stages.ok()) << stages.status().message();
  std::vector<std::string> names;
  for (const OpTiming& t : *stages) {
    EXPECT_EQ(t.kind, "stage");
    EXPECT_GE(t.ns, 0.0);
    names.push_back(t.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"norm", "wq+wk+wv", "att", "wo"}));
}

TEST(VulkanExecutor, RopeKvEpiloguesMatchCpu) {
  ZINC_REQUIRE_VULKAN();
  using graph::RopeMode;
  check_rope_kv_epilogues(RopeMode::kNorm, 64, 64);
  check_rope_kv_epilogues(RopeMode::kNorm, 32, 64);    // partial rotary
  check_rope_kv_epilogues(RopeMode::kNorm, 128, 128);  // Llama-3's head dim
  // Per head (the last workgroup of a head's rows finishes it): the QK norms (Qwen3) or NEOX pairs.
  check_rope_kv_epilogues(RopeMode::kNeox, 128, 128, true);  // Qwen3's head dim
  check_rope_kv_epilogues(RopeMode::kNeox, 32, 64, true);
  check_rope_kv_epilogues(RopeMode::kNeox, 64, 64);
  check_rope_kv_epilogues(RopeMode::kNorm, 64, 64, true);
  check_rope_kv_epilogues(RopeMode::kImrope, 64, 256, true);  // Qwen3.5's head dim
  check_rope_kv_epilogues(RopeMode::kImrope, 64, 256, true, true);  // and its output gate
  check_rope_kv_epilogues(RopeMode::kNeox, 32, 64, true, true);
}

// A delta-net block as qwen35 builds it (input norm, four projections, conv, delta rule, gated
// norm, out projection added to the stream) on decode steps of three sequences: the executor runs
// the conv as the qkv matvec's epilogue and the gated norm in the out matvec (neither op is left
// in the profile), and matches the CPU.
TEST(VulkanExecutor, DeltaNetDecodeFusionsMatchCpu) {
  ZINC_REQUIRE_VULKAN();
  const int64_t E = 96, n_k = 2, d_k = 32, n_v = 4, d_v = 32, taps = 4;
  const int64_t conv_dim = 2 * n_k * d_k + n_v * d_v, value_dim = n_v * d_v;
  graph::StateLayout layout;
  layout.recurrent_layers = {{(taps - 1) * conv_dim, value_dim * d_k}};
  Harness h(layout);
  auto n1 = vector_weight(E, 2, 1.f), n2 = vector_weight(E, 3, 1.f), sn = vector_weight(d_v, 4, 1.f);
  auto a = vector_weight(n_v, 5, -1.f), dt = vector_weight(n_v, 6);
  auto kernel = vector_weight(taps * conv_dim, 7);
  kernel->w.ne = {taps, conv_dim, 1, 1};
  kernel->w.row_bytes = size_t(taps) * 4;
  auto wqkv = matrix_weight(TensorType::Q8_0, conv_dim, E, 8), wz = matrix_weight(TensorType::Q8_0, value_dim, E, 9),
       wb = matrix_weight(TensorType::Q8_0, n_v, E, 10), wa = matrix_weight(TensorType::Q8_0, n_v, E, 11),
       wo = matrix_weight(TensorType::Q8_0, E, value_dim, 12);
  const int64_t T = 4;
  graph::GraphBuilder b({T, T}, layout);
  auto x = b.input("x", E), hn = b.buffer("h", E), qkv = b.buffer("qkv", conv_dim), z = b.buffer("z", value_dim),
       beta = b.buffer("beta", n_v), alpha = b.buffer("alpha", n_v), conv = b.buffer("conv", conv_dim);
  b.add("norm1", graph::RmsNorm{x, {}, hn, &n1->w, 1e-5f});
  b.add("ssm_qkv", graph::Matmul{hn, qkv, &wqkv->w, nullptr, nullptr});
  b.add("ssm_z", graph::Matmul{hn, z, &wz->w, nullptr, nullptr});
  b.add("ssm_beta", graph::Matmul{hn, beta, &wb->w, nullptr, nullptr});
  b.add("ssm_alpha", graph::Matmul{hn, alpha, &wa->w, nullptr, nullptr});
  b.add("ssm_conv1d", graph::SsmConv1d{qkv, conv, &kernel->w, 0});
  graph::GatedDeltaNet d;
  d.qkv = conv;
  d.beta = beta;
  d.alpha = alpha;
  d.out = b.buffer("core", value_dim);
  d.a = &a->w;
  d.dt_bias = &dt->w;
  d.n_k_heads = int32_t(n_k);
  d.d_k = int32_t(d_k);
  d.n_v_heads = int32_t(n_v);
  d.d_v = int32_t(d_v);
  d.key_map = graph::KeyHeadMap::kTiled;
  d.recurrent_layer = 0;
  b.add("gated_delta_net", d);
  auto normed = b.buffer("normed", value_dim), o = b.buffer("o", E), out = b.buffer("out", E);
  b.add("ssm_norm", graph::GatedRmsNorm{d.out, z, normed, &sn->w, int32_t(d_v), 1e-6f});
  b.add("ssm_out", graph::Matmul{normed, o, &wo->w, nullptr, nullptr});
  b.add("norm2", graph::RmsNorm{x, o, out, &n2->w, 1e-5f});
  graph::Graph g = b.finish(out);
  cpu::Executor c(g, *h.pool);
  auto v = Executor::create(*h.kernels, *h.weights, *h.kv, std::move(g), 3);
  ASSERT_TRUE(v.ok()) << v.status().message();
  for (int s = 0; s < 3; ++s) ASSERT_TRUE(h.cache->add_sequence().ok());
  const std::vector<int32_t> tokens(T, 0), rows{0, 1, 2, 3};
  h.step(c, **v, tokens, {0, 1, 0, 2}, rows, 2e-3, 10);  // nmse: int8 activations in matvec
  h.step(c, **v, tokens, {2, 2, 1, 0}, rows, 2e-3, 20);
  h.step(c, **v, tokens, {1, 0, 2, 1}, rows, 2e-3, 30);
  const std::vector<int32_t> positions{9, 9, 9, 9}, seqs{0, 1, 2, 0};
  auto timings = (*v)->profile(graph::Batch{tokens, positions, seqs, rows}, *h.cache);
  ASSERT_TRUE(timings.ok()) << timings.status().message();
  std::string kinds;
  for (const OpTiming& t : *timings) kinds += " " + t.kind;
  EXPECT_EQ(kinds, " matmul matmul matmul matmul gated_delta_net matmul rms_norm");
}

}  // namespace
}  // namespace zinc::vulkan::test
