// The fused KV write (ops::KvWrite::record_rope): per-head RMS norms of q and k, RoPE and the
// store into the paged cache in one dispatch, against the CPU ops QkNorm, Rope and KvWrite on
// random data: odd head counts, GQA, the gated query layout, partial rotary, every RoPE mode,
// f16 and f32 caches, three sequences in one batch with contexts crossing 16-token pages, with
// and without subgroup arithmetic.
#include <algorithm>
#include <cstring>

#include "core/fp16.h"
#include "cpu_ref.h"
#include "vk_test_util.h"
#include "vulkan/ops/kv_write.h"
#include "vulkan/ops/rope.h"

namespace zinc::vulkan::test {
namespace {

struct Case {
  int32_t n_q, n_kv, dk, dv;
  bool gate;  // each query head followed by a gate head of dk (Qwen3.5), left untouched
  bool q_norm, k_norm;
  kv::KvType type;
  bool subgroups;
};

// A row of `cols` floats per token copied to rows of `stride` floats.
std::vector<float> padded(const std::vector<float>& v, int64_t cols, uint32_t stride, int32_t T) {
  std::vector<float> out(size_t(T) * stride, 0.f);
  for (int32_t t = 0; t < T; ++t) std::copy_n(&v[size_t(t * cols)], cols, &out[size_t(t) * stride]);
  return out;
}

std::vector<float> unpadded(const std::vector<float>& v, int64_t cols, uint32_t stride, int32_t T) {
  std::vector<float> out(size_t(T * cols));
  for (int32_t t = 0; t < T; ++t) std::copy_n(&v[size_t(t) * stride], cols, &out[size_t(t * cols)]);
  return out;
}

// One cache row (n_kv heads of `dim`) as floats: the CPU cache's bytes or the device pool's.
std::vector<float> row_floats(const void* p, int64_t n, kv::KvType type) {
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    out[size_t(i)] = type == kv::KvType::kF16 ? fp16_to_f32(static_cast<const uint16_t*>(p)[i])
                                              : static_cast<const float*>(p)[i];
  return out;
}

void check(const Case& c, const graph::RopeParams& rope) {
  SCOPED_TRACE(testing::Message() << "heads " << c.n_q << "/" << c.n_kv << " dims " << c.dk << "/" << c.dv
                                  << (c.gate ? " gate" : "") << " rope mode " << int(rope.mode) << " n_rot "
                                  << rope.n_rot << (c.q_norm ? " q_norm" : "") << (c.k_norm ? " k_norm" : "")
                                  << (c.type == kv::KvType::kF16 ? " f16" : " f32")
                                  << (c.subgroups ? "" : " no-subgroups"));
  graph::StateLayout layout;
  layout.kv_layers.push_back({c.n_kv, c.dk, c.dv});
  auto cache_r = kv::Cache::create(layout, {12, 3, c.type});
  ASSERT_TRUE(cache_r.ok());
  kv::Cache& cache = **cache_r;
  // Sequences already holding 13, 30 and 0 tokens; the batch crosses pages 0/1 and 1/2.
  const int32_t start[3] = {13, 30, 0};
  for (int s = 0; s < 3; ++s) {
    ASSERT_TRUE(cache.add_sequence().ok());
    ASSERT_TRUE(cache.reserve(s, start[s]).ok());
    cache.set_length(s, start[s]);
  }
  CpuBatch b;
  int32_t next[3] = {start[0], start[1], start[2]};
  const int32_t T = 23;
  for (int32_t i = 0; i < T; ++i) {
    const int32_t s = i < 9 ? i % 3 : (i < 16 ? 0 : 2);
    b.add(s, next[s]++);
  }
  for (int s = 0; s < 3; ++s) ASSERT_TRUE(cache.reserve(s, next[s]).ok());

  const auto qh = c.gate ? graph::HeadLayout{c.n_q, c.dk, 2 * c.dk, 0} : graph::HeadLayout::packed(c.n_q, c.dk);
  const auto kh = graph::HeadLayout::packed(c.n_kv, c.dk), vh = graph::HeadLayout::packed(c.n_kv, c.dv);
  const int64_t q_cols = int64_t(c.n_q) * c.dk * (c.gate ? 2 : 1), k_cols = kh.span(), v_cols = vh.span();
  auto qw = random_floats(size_t(c.dk), 1, 0.3f), kw = random_floats(size_t(c.dk), 2, 0.3f);
  for (float& x : qw) x += 1.f;
  for (float& x : kw) x += 1.f;
  const graph::Weight wq = graph_weight(TensorType::F32, qw.data(), c.dk),
                      wk = graph_weight(TensorType::F32, kw.data(), c.dk);
  const float q_eps = 1e-6f, k_eps = 1e-5f;

  // The CPU ops, in the order the model builders emit them.
  graph::GraphBuilder g({T, T}, layout);
  auto q = g.input("q", q_cols), k = g.input("k", k_cols), v = g.input("v", v_cols);
  if (c.q_norm) g.add("qn", graph::QkNorm{q, qh, &wq, q_eps});
  if (c.k_norm) g.add("kn", graph::QkNorm{k, kh, &wk, k_eps});
  g.add("rq", graph::Rope{q, qh, rope});
  g.add("rk", graph::Rope{k, kh, rope});
  g.add("kvw", graph::KvWrite{k, v, kh, vh, 0});
  cpu::ThreadPool pool(2);
  cpu::Executor ex(g.finish(q), pool);
  // Scaled so that an unnormalised head would be far off.
  const auto q_in = random_floats(size_t(T * q_cols), 10, 3.f), k_in = random_floats(size_t(T * k_cols), 11, 0.2f),
             v_in = random_floats(size_t(T * v_cols), 12);
  fill(ex, q, q_in);
  fill(ex, k, k_in);
  fill(ex, v, v_in);
  ex.run(b.view(), cache);
  const auto q_want = copy_out(ex, q);

  // The device: the same inputs at padded strides, the step data laid out as the executor does.
  const uint32_t qs = uint32_t(q_cols) + 4, ks = uint32_t(k_cols) + 8, vs = uint32_t(v_cols) + 4;
  auto bq = host_buffer(padded(q_in, q_cols, qs, T)), bk = host_buffer(padded(k_in, k_cols, ks, T)),
       bv = host_buffer(padded(v_in, v_cols, vs, T)), bqw = host_buffer(qw), bkw = host_buffer(kw);
  const uint32_t max_pages = uint32_t(cache.n_pages()), table_word = 2 * uint32_t(T) + 3 * max_pages;
  std::vector<float> step(table_word + ops::rope_table_floats(rope, size_t(T)));
  int32_t* words = reinterpret_cast<int32_t*>(step.data());
  std::memcpy(words, b.positions.data(), size_t(T) * 4);
  std::memcpy(words + T, b.seq_ids.data(), size_t(T) * 4);
  for (int s = 0; s < 3; ++s) {
    const auto pages = cache.page_table(s);
    std::copy(pages.begin(), pages.end(), words + 2 * T + s * int32_t(max_pages));
  }
  ops::rope_table(rope, b.positions, step.data() + table_word);
  auto bstep = host_buffer(step);
  const size_t elem = c.type == kv::KvType::kF16 ? 2 : 4;
  const size_t pool_rows = size_t(max_pages) * kv::kPageTokens;
  auto bkc = host_buffer({}, pool_rows * size_t(k_cols) * elem / 4);
  auto bvc = host_buffer({}, pool_rows * size_t(v_cols) * elem / 4);
  const ops::StepData sd{bstep.get(), 0, uint32_t(T), 2 * uint32_t(T), max_pages};
  const ops::KvLayerBuffers lb{bkc.get(), bvc.get(), uint32_t(c.n_kv), uint32_t(c.dk), uint32_t(c.dv),
                               c.type == kv::KvType::kF16};

  auto op = ops::KvWrite::create(dev(), c.type == kv::KvType::kF16, c.subgroups);
  ASSERT_TRUE(op.ok()) << op.status().message();
  const ops::KvWrite::HeadNorm qn{{bqw.get()}, q_eps}, kn{{bkw.get()}, k_eps};
  ops::KvWrite::RopeArgs args{{{bq.get()}, qs}, qh, &rope, {bstep.get()}, table_word, c.q_norm ? &qn : nullptr,
                              c.k_norm ? &kn : nullptr};
  run([&](Commands& cmd) {
    const Status s = (*op)->record_rope(cmd, args, {{bk.get()}, ks}, kh, {{bv.get()}, vs}, vh, lb, sd, uint32_t(T));
    ASSERT_TRUE(s.ok()) << s.message();
  });

  const auto q_got = unpadded(read_floats(*bq, size_t(T) * qs), q_cols, qs, T);
  expect_near_all(q_got, q_want, 2e-6f * max_abs(q_want), "q");
  expect_near_all(unpadded(read_floats(*bk, size_t(T) * ks), k_cols, ks, T), k_in, 0.f, "k activation (unchanged)");
  const uint8_t* kc = static_cast<const uint8_t*>(bkc->mapped());
  const uint8_t* vc = static_cast<const uint8_t*>(bvc->mapped());
  for (int32_t t = 0; t < T; ++t) {
    const int32_t seq = b.seq_ids[size_t(t)], pos = b.positions[size_t(t)];
    SCOPED_TRACE(testing::Message() << "token " << t << " seq " << seq << " pos " << pos);
    const int32_t page = cache.page_table(seq)[size_t(pos / kv::kPageTokens)];
    const size_t row = size_t(page) * kv::kPageTokens + size_t(pos % kv::kPageTokens);
    const auto k_want = row_floats(cache.k_at(0, seq, pos), k_cols, c.type);
    const auto v_want = row_floats(cache.v_at(0, seq, pos), v_cols, c.type);
    // f16: the float results may round to neighbouring halves.
    const float k_tol = (c.type == kv::KvType::kF16 ? 1e-3f : 2e-6f) * max_abs(k_want);
    expect_near_all(row_floats(kc + row * size_t(k_cols) * elem, k_cols, c.type), k_want, k_tol, "k cache");
    expect_near_all(row_floats(vc + row * size_t(v_cols) * elem, v_cols, c.type), v_want, 0.f, "v cache");
  }
}

graph::RopeParams rope_of(graph::RopeMode mode, int32_t n_rot) {
  graph::RopeParams r;
  r.mode = mode;
  r.n_rot = n_rot;
  r.freq_base = 1e6f;
  return r;
}

TEST(VulkanRopeKvWrite, NormRopeMatchesCpu) {
  ZINC_REQUIRE_VULKAN();
  const auto f16 = kv::KvType::kF16, f32 = kv::KvType::kF32;
  // Qwen3's layout (NEOX, full rotary, GQA), at odd head counts.
  check({7, 1, 128, 128, false, true, true, f16, true}, rope_of(graph::RopeMode::kNeox, 128));
  check({6, 2, 128, 128, false, true, true, f32, true}, rope_of(graph::RopeMode::kNeox, 128));
  check({5, 5, 64, 64, false, true, true, f16, false}, rope_of(graph::RopeMode::kNorm, 64));
  // Qwen3.5's gated query, partial rotary, IMROPE, head dim 256.
  graph::RopeParams imrope = rope_of(graph::RopeMode::kImrope, 64);
  imrope.sections = {11, 11, 10, 0};
  check({3, 1, 256, 256, true, true, true, f16, true}, imrope);
  check({3, 1, 256, 256, true, true, true, f32, false}, imrope);
  // Odd head dims (f32 cache), K and V dims apart, one side normalised only.
  check({3, 3, 34, 18, false, true, false, f16, true}, rope_of(graph::RopeMode::kNeox, 20));
  check({5, 1, 33, 7, true, false, true, f32, true}, rope_of(graph::RopeMode::kNorm, 16));
  check({2, 2, 200, 72, false, true, true, f32, false}, rope_of(graph::RopeMode::kNeox, 2));
}

TEST(VulkanRopeKvWrite, RopeWithoutNormMatchesCpu) {
  ZINC_REQUIRE_VULKAN();
  check({7, 1, 64, 64, false, false, false, kv::KvType::kF16, true}, rope_of(graph::RopeMode::kNorm, 64));
  check({4, 2, 24, 24, true, false, false, kv::KvType::kF32, true}, rope_of(graph::RopeMode::kNeox, 16));
}

}  // namespace
}  // namespace zinc::vulkan::test
