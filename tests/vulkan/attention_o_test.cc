// ops::AttentionO (one decode token's attention fused with the output projection and its residual
// add) against a double-precision reference: attention over a random f16 KV pool whose pages are
// mapped out of order (slots no key was written to hold NaN), then y + W_o . attention with the
// int8 rounding of the attention's output per 32 columns bounded as in matvec_test.cc. Cases: one
// key, contexts crossing pages up to kMaxKeys, head dims 32..256, 1 to 8 query heads a KV head
// (not only powers of two), gated heads at a stride, rows not a multiple of a workgroup's block,
// several weight types. The row blocks' counters must be left at zero. The router variant
// (a MoE router folded into W_o) also against double precision: logits = R s + M a with M in
// Q8_0, the ranking of the k largest, and the next norm's inputs (y times its weight, each row
// block's sum of y^2, zeros past the blocks).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "vk_test_util.h"
#include "vulkan/ops/attention_o.h"

namespace zinc::vulkan::test {
namespace {

struct Case {
  const char* name;
  uint32_t n_q, n_kv, dim, pos, rows;
  TensorType type;
  bool gate;  // each query head followed by its gate, as in Qwen3.5
  uint32_t experts = 0, topk = 0;  // the router variant, with topk experts ranked
};

// |got - want| within the int8 bound of matvec_test.cc (x = att quantized per 32 columns) for
// want = base + w . att over a row of cols weights.
bool within_int8_bound(double got, double base, const float* w, const std::vector<double>& att, double& want) {
  double mag = std::fabs(base), qerr = 0;
  want = base;
  for (size_t g = 0; g < att.size() / 32; ++g) {
    double amax = 0, wsum = 0;
    for (size_t k = 32 * g; k < 32 * g + 32; ++k) {
      want += double(w[k]) * att[k];
      mag += std::fabs(double(w[k]) * att[k]);
      amax = std::max(amax, std::fabs(att[k]));
      wsum += std::fabs(w[k]);
    }
    qerr += amax / 254.0 * wsum;
  }
  return std::fabs(got - want) <= 1e-4 * mag + 1e-5 + 1.1 * qerr;
}

std::unique_ptr<Buffer> bytes_buffer(const void* data, size_t n_bytes) {
  auto b = host_buffer({}, (n_bytes + 3) / 4);
  std::memcpy(b->mapped(), data, n_bytes);
  return b;
}

void check(const Case& c, uint32_t rank_parts) {
  SCOPED_TRACE(std::string(c.name) + " (" + std::to_string(rank_parts) + " lanes a ranked value)");
  const uint32_t group = c.n_q / c.n_kv, n_keys = c.pos + 1, n_pages = (n_keys + 15) / 16 + 2;
  std::vector<int32_t> pages(n_pages);
  std::iota(pages.begin(), pages.end(), 0);
  std::shuffle(pages.begin(), pages.end(), std::mt19937(5));
  const uint32_t row_halves = c.n_kv * c.dim;
  std::vector<uint16_t> kpool(size_t(n_pages) * 16 * row_halves, 0x7e00), vpool(kpool);
  std::mt19937 rng(17);
  std::normal_distribution<float> nd(0.f, 1.f);
  auto pool_row = [&](uint32_t key) { return size_t(pages[key / 16]) * 16 + key % 16; };
  for (uint32_t key = 0; key < n_keys; ++key)
    for (uint32_t i = 0; i < row_halves; ++i) {
      kpool[pool_row(key) * row_halves + i] = f32_to_fp16(nd(rng));
      vpool[pool_row(key) * row_halves + i] = f32_to_fp16(nd(rng));
    }
  auto kbuf = bytes_buffer(kpool.data(), kpool.size() * 2), vbuf = bytes_buffer(vpool.data(), vpool.size() * 2);
  // Step data: the position, the sequence id (0), the page table.
  std::vector<int32_t> step = {int32_t(c.pos), 0};
  step.insert(step.end(), pages.begin(), pages.end());
  auto sbuf = bytes_buffer(step.data(), step.size() * 4);

  const uint32_t q_floats = c.n_q * c.dim * (c.gate ? 2 : 1);
  const std::vector<float> qv = random_floats(q_floats, 23, 1.5f);
  const std::vector<float> y0 = random_floats(c.rows, 29);
  const Matrix w = random_matrix(c.type, c.rows, int64_t(c.n_q) * c.dim, 31);
  auto wbuf = upload(w);
  ASSERT_TRUE(wbuf);
  auto qbuf = host_buffer(qv), ybuf = host_buffer(y0);
  const float scale = 1.f / std::sqrt(float(c.dim));
  ops::AttentionOArgs a;
  a.q = {{qbuf.get()}, q_floats};
  a.q_heads = query_heads(c.n_q, c.dim, c.gate);
  if (c.gate) {
    a.gate = &a.q;
    a.gate_heads = gate_heads(c.n_q, c.dim, c.dim);
  }
  a.y = {{ybuf.get()}, c.rows};
  a.scale = scale;
  const ops::KvLayerBuffers layer{kbuf.get(), vbuf.get(), c.n_kv, c.dim, c.dim, true};
  ASSERT_EQ(ops::AttentionO::refusal(dev().caps(), layer, c.n_q, *wbuf), nullptr);
  const bool routed = c.experts > 0;
  const uint32_t qgs = ops::AttentionO::q_groups(c.n_q, c.n_kv, routed);
  auto op = ops::AttentionO::create(dev(), c.type, group, c.dim, routed, rank_parts);
  ASSERT_TRUE(op.ok()) << op.status().message();
  const uint32_t counter_word = 3, n_counters = ops::AttentionO::counter_words(c.rows, qgs, c.experts);
  auto partials = host_buffer({}, ops::AttentionO::partial_floats(c.rows, qgs, c.experts));
  auto counters = host_buffer({}, counter_word + n_counters);
  const ops::StepData sd{sbuf.get(), 0, 1, 2, n_pages};
  // The router's inputs and outputs; the norm partials start non-zero to see the zeros written.
  const uint32_t blocks = ops::AttentionO::row_blocks(c.rows, qgs), n_partials = blocks + 3;
  const Matrix m = random_matrix(TensorType::Q8_0, std::max(c.experts, 1u), int64_t(c.n_q) * c.dim, 37);
  auto mbuf = upload(m);
  ASSERT_TRUE(mbuf);
  const std::vector<float> sl = random_floats(std::max(c.experts, 1u), 41), nw = random_floats(c.rows, 43);
  auto slbuf = host_buffer(sl), nwbuf = host_buffer(nw), lbuf = host_buffer({}, sl.size()),
       ibuf = host_buffer({}, std::max(c.topk, 1u)), wsbuf = host_buffer({}, c.rows),
       npbuf = host_buffer(std::vector<float>(n_partials, 1.f));
  const ops::AttentionORouter router{mbuf.get(), {slbuf.get()}, {lbuf.get()}, {ibuf.get()}, c.topk,
                                     {nwbuf.get()}, {wsbuf.get()}, {npbuf.get()}, n_partials};
  if (routed) {
    ASSERT_EQ(ops::AttentionO::router_refusal(*wbuf, qgs, *mbuf, c.topk, n_partials), nullptr);
  }
  run([&](Commands& cmd) {
    const Status s = (*op)->record(cmd, a, *wbuf, layer, sd, {partials.get()}, {counters.get()}, counter_word,
                                   routed ? &router : nullptr);
    ASSERT_TRUE(s.ok()) << s.message();
  });
  const std::vector<float> got = read_floats(*ybuf, c.rows);
  const std::vector<float> left = read_floats(*counters, counter_word + n_counters);
  EXPECT_TRUE(std::all_of(left.begin(), left.end(), [](float v) { return v == 0.f; })) << "counters left non-zero";

  // The attention of every query head in double precision.
  const uint32_t cols = c.n_q * c.dim;
  std::vector<double> att(cols, 0.0), p(n_keys);
  for (uint32_t h = 0; h < c.n_q; ++h) {
    const uint32_t kvh = h / group;
    const float* qh = qv.data() + size_t(h) * a.q_heads.head_stride;
    double mx = -INFINITY, sum = 0;
    for (uint32_t j = 0; j < n_keys; ++j) {
      double d = 0;
      for (uint32_t i = 0; i < c.dim; ++i) d += double(qh[i]) * fp16_to_f32(kpool[pool_row(j) * row_halves + kvh * c.dim + i]);
      p[j] = d * scale;
      mx = std::max(mx, p[j]);
    }
    for (uint32_t j = 0; j < n_keys; ++j) {
      const double e = std::exp(p[j] - mx);
      sum += e;
      for (uint32_t i = 0; i < c.dim; ++i) att[h * c.dim + i] += e * fp16_to_f32(vpool[pool_row(j) * row_halves + kvh * c.dim + i]);
    }
    for (uint32_t i = 0; i < c.dim; ++i) {
      att[h * c.dim + i] /= sum;
      if (c.gate) att[h * c.dim + i] /= 1.0 + std::exp(-double(qh[c.dim + i]));
    }
  }
  // y0 + W_o att; the tolerance as matvec_test.cc's int8 bound, plus the attention's float error.
  int bad = 0;
  for (uint32_t r = 0; r < c.rows; ++r) {
    double want = 0;
    if (!within_int8_bound(got[r], y0[r], w.values.data() + size_t(r) * cols, att, want) && ++bad <= 5)
      ADD_FAILURE() << "row " << r << ": got " << got[r] << " want " << want;
  }
  EXPECT_EQ(bad, 0);
  if (!routed) return;

  const std::vector<float> lg = read_floats(*lbuf, c.experts), ws = read_floats(*wsbuf, c.rows);
  const std::vector<float> np = read_floats(*npbuf, n_partials);
  for (uint32_t e = 0; e < c.experts; ++e) {
    double want = 0;
    if (!within_int8_bound(lg[e], sl[e], m.values.data() + size_t(e) * cols, att, want) && ++bad <= 5)
      ADD_FAILURE() << "logit " << e << ": got " << lg[e] << " want " << want;
  }
  const uint32_t per = ops::AttentionO::rows_per_group(c.rows, qgs);
  for (uint32_t b = 0; b < n_partials; ++b) {
    double ss = 0;
    for (uint32_t r = b * per; r < std::min(c.rows, (b + 1) * per) && b < blocks; ++r) ss += double(got[r]) * got[r];
    EXPECT_NEAR(np[b], ss, 1e-5 * ss + 1e-6) << "norm partial " << b << " of " << blocks;
  }
  for (uint32_t r = 0; r < c.rows; ++r)
    EXPECT_NEAR(ws[r], double(got[r]) * nw[r], 1e-6 * std::fabs(got[r] * nw[r]) + 1e-7) << "weighted row " << r;
  // The ranking of the logits it wrote: largest first, ties to the lower index.
  std::vector<uint32_t> order(c.experts);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) { return lg[x] > lg[y]; });
  const std::vector<float> idf = read_floats(*ibuf, c.topk);
  for (uint32_t r = 0; r < c.topk; ++r) {
    int32_t id;
    std::memcpy(&id, &idf[r], 4);
    EXPECT_EQ(uint32_t(id), order[r]) << "rank " << r;
  }
  EXPECT_EQ(bad, 0);
}

TEST(VulkanAttentionO, MatchesAttentionThenProjection) {
  ZINC_REQUIRE_VULKAN();
  const Case cases[] = {
      {"8/2 heads dim 128, one key, Q4_K", 8, 2, 128, 0, 300, TensorType::Q4_K, false},
      {"8/2 heads dim 128, depth 150, Q8_0", 8, 2, 128, 150, 256, TensorType::Q8_0, false},
      {"16/2 heads dim 256 gated, depth 100, Q6_K", 16, 2, 256, 100, 64, TensorType::Q6_K, true},
      {"4/4 heads dim 32, 256 keys, Q4_0", 4, 4, 32, 255, 97, TensorType::Q4_0, false},
      {"6/2 heads dim 128 gated, depth 40, Q5_K", 6, 2, 128, 40, 130, TensorType::Q5_K, true},
      {"6/2 heads dim 64, depth 17, Q5_0", 6, 2, 64, 17, 50, TensorType::Q5_0, false},
      {"router: 8/4 heads dim 64, depth 30, Q4_K, 64 experts, 8 ranked", 8, 4, 64, 30, 300, TensorType::Q4_K, false, 64, 8},
      {"router: 16/2 heads dim 128 gated, depth 200, Q6_K, 40 experts", 16, 2, 128, 200, 96, TensorType::Q6_K, true, 40, 0},
      {"router: 4/4 heads dim 32, one key, Q8_0, 3 experts, 3 ranked", 4, 4, 32, 0, 64, TensorType::Q8_0, false, 3, 3},
      {"router: 8/2 heads dim 64, depth 70, Q4_K, 60 experts, 4 ranked", 8, 2, 64, 70, 200, TensorType::Q4_K, false, 60, 4},
      {"router: 32/4 heads dim 128, depth 127, Q4_K, 64 experts, 8 ranked", 32, 4, 128, 127, 256, TensorType::Q4_K, false, 64, 8},
      {"router: 8/2 heads dim 64, depth 10, Q4_K, 256 experts, 8 ranked", 8, 2, 64, 10, 128, TensorType::Q4_K, false, 256, 8},
      {"router: 32/4 heads dim 64, depth 5, Q4_K, 2048 rows, 128 experts in one block, 8 ranked", 32, 4, 64, 5, 2048, TensorType::Q4_K, false, 128, 8},
      {"8/1 heads dim 64, depth 20, Q8_0", 8, 1, 64, 20, 100, TensorType::Q8_0, false},
  };
  const DeviceCaps& caps = dev().caps();
  if (!caps.subgroup_arithmetic || !caps.subgroup_shuffle || !caps.int8_dot || caps.min_subgroup_size < 8)
    GTEST_SKIP() << "the kernel needs subgroups of 8 or more and int8 dot products";
  for (const Case& c : cases) {
    check(c, 1);  // the router's ranking in its chunk form, and in the lanes form where the executor takes that
    const uint32_t parts = ops::AttentionO::rank_parts(c.experts, caps.min_subgroup_size);
    if (c.experts > 0 && parts > 1) check(c, parts);
  }
}

TEST(VulkanAttentionO, RefusesWhatTheKernelCannotTake) {
  ZINC_REQUIRE_VULKAN();
  const Matrix w = random_matrix(TensorType::Q4_K, 64, 8 * 128, 3);
  auto wbuf = upload(w);
  ASSERT_TRUE(wbuf);
  auto dummy = host_buffer({}, 4);
  const DeviceCaps& caps = dev().caps();
  const ops::KvLayerBuffers ok{dummy.get(), dummy.get(), 2, 128, 128, true};
  if (ops::AttentionO::refusal(caps, ok, 8, *wbuf)) GTEST_SKIP() << ops::AttentionO::refusal(caps, ok, 8, *wbuf);
  ops::KvLayerBuffers f32 = ok, odd = ok, dv = ok;
  f32.f16 = false;
  odd.head_dim_k = odd.head_dim_v = 96;
  dv.head_dim_v = 64;
  EXPECT_NE(ops::AttentionO::refusal(caps, f32, 8, *wbuf), nullptr) << "an f32 pool";
  EXPECT_NE(ops::AttentionO::refusal(caps, odd, 8, *wbuf), nullptr) << "head dim 96";
  EXPECT_NE(ops::AttentionO::refusal(caps, dv, 8, *wbuf), nullptr) << "dk != dv";
  EXPECT_NE(ops::AttentionO::refusal(caps, ok, 7, *wbuf), nullptr) << "heads not a multiple of KV heads";
  EXPECT_NE(ops::AttentionO::refusal(caps, ok, 16, *wbuf), nullptr) << "W_o's columns are not the heads'";
  const ops::KvLayerBuffers one_kv{dummy.get(), dummy.get(), 1, 128, 128, true};
  EXPECT_NE(ops::AttentionO::refusal(caps, one_kv, 16, *wbuf), nullptr) << "16 heads a KV head";
  const Matrix f = random_matrix(TensorType::F16, 64, 8 * 128, 3);
  auto fbuf = upload(f);
  ASSERT_TRUE(fbuf);
  EXPECT_NE(ops::AttentionO::refusal(caps, ok, 8, *fbuf), nullptr) << "an F16 W_o";
  EXPECT_FALSE(ops::AttentionO::create(dev(), TensorType::Q4_K, 9, 128).ok()) << "9 heads a KV head";
  EXPECT_FALSE(ops::AttentionO::create(dev(), TensorType::Q4_K, 8, 128, true, 3).ok()) << "3 lanes a ranked value";
  EXPECT_FALSE(ops::AttentionO::create(dev(), TensorType::Q4_K, 8, 128, true, 16).ok()) << "16 lanes a ranked value";

  // The router variant's M, ranking and norm partials.
  const uint32_t blocks = ops::AttentionO::row_blocks(64, 2);
  auto m = upload(random_matrix(TensorType::Q8_0, 16, 8 * 128, 5));
  auto m4 = upload(random_matrix(TensorType::Q4_K, 16, 8 * 128, 5));
  auto narrow = upload(random_matrix(TensorType::Q8_0, 16, 4 * 128, 5));
  auto many = upload(random_matrix(TensorType::Q8_0, 300, 8 * 128, 5));
  ASSERT_TRUE(m && m4 && narrow && many);
  EXPECT_EQ(ops::AttentionO::router_refusal(*wbuf, 2, *m, 4, blocks), nullptr);
  EXPECT_NE(ops::AttentionO::router_refusal(*wbuf, 2, *m4, 4, blocks), nullptr) << "M in Q4_K";
  EXPECT_NE(ops::AttentionO::router_refusal(*wbuf, 2, *narrow, 4, blocks), nullptr) << "M narrower than W_o";
  EXPECT_NE(ops::AttentionO::router_refusal(*wbuf, 2, *many, 0, blocks), nullptr) << "300 experts";
  EXPECT_NE(ops::AttentionO::router_refusal(*wbuf, 2, *m, 17, blocks), nullptr) << "17 of 16 ranked";
  EXPECT_NE(ops::AttentionO::router_refusal(*wbuf, 2, *m, 4, blocks - 1), nullptr) << "too few norm partials";
}

}  // namespace
}  // namespace zinc::vulkan::test
