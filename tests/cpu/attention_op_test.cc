// kv_write + attention over the paged cache against a naive causal softmax in double: GQA, a
// value size unlike the key size, head sizes below, at and past the kernels' vector width, the sigmoid output gate, two sequences interleaved in one
// batch, and a second step whose keys span pages written earlier (crossing page boundaries).
#include <cmath>

#include "core/fp16.h"
#include "cpu/ops/ops.h"
#include "op_test_util.h"

namespace zinc::cpu {
namespace {

constexpr int32_t kHeads = 4, kKvHeads = 2;

struct Stored {  // every K/V row written so far, per sequence and position
  std::vector<std::vector<std::vector<float>>> k, v;
};

struct Step {
  test::TestBatch batch;
  std::vector<float> q, k, v;
};

// dk, dv: key and value head sizes (the vector kernels take 16 at a time, then a scalar tail).
void run_case(kv::KvType type, bool gated, int32_t dk = 8, int32_t dv = 6) {
  graph::StateLayout st;
  st.kv_layers = {{kKvHeads, dk, dv}};
  auto cache_r = kv::Cache::create(st, {8, 2, type});
  ASSERT_TRUE(cache_r.ok());
  kv::Cache& cache = **cache_r;
  const kv::SeqId a = cache.add_sequence().value(), b = cache.add_sequence().value();
  ThreadPool pool(3);
  Stored stored;
  stored.k.resize(2);
  stored.v.resize(2);

  auto round = [&](float x) { return type == kv::KvType::kF16 ? fp16_to_f32(f32_to_fp16(x)) : x; };

  // Step 1: 20 tokens of sequence a. Step 2: a continues at 20..35 (crossing the page boundary
  // at 32), interleaved with b at 0..5.
  std::vector<Step> steps(2);
  for (int32_t p = 0; p < 20; ++p) steps[0].batch.add(a, p);
  for (int32_t i = 0; i < 16; ++i) {
    steps[1].batch.add(a, 20 + i);
    if (i < 6) steps[1].batch.add(b, i);
  }
  uint32_t seed = 100;
  for (Step& s : steps) {
    const int64_t T = int64_t(s.batch.tokens.size());
    const int64_t q_cols = gated ? 2 * kHeads * dk : kHeads * dk;
    s.q = test::random_vector(size_t(T * q_cols), seed++);
    s.k = test::random_vector(size_t(T * kKvHeads * dk), seed++);
    s.v = test::random_vector(size_t(T * kKvHeads * dv), seed++);

    graph::GraphBuilder g({T, T}, st);
    auto q = g.input("q", q_cols), k = g.input("k", kKvHeads * dk), v = g.input("v", kKvHeads * dv);
    auto out = g.buffer("out", kHeads * dv);
    g.add("kv", graph::KvWrite{k, v, graph::HeadLayout::packed(kKvHeads, dk), graph::HeadLayout::packed(kKvHeads, dv), 0});
    graph::Attention att;
    att.q = q;
    att.q_heads = gated ? graph::HeadLayout{kHeads, dk, 2 * dk, 0} : graph::HeadLayout::packed(kHeads, dk);
    if (gated) {
      att.gate = q;
      att.gate_heads = {kHeads, dv, 2 * dk, dk};
    }
    att.out = out;
    att.kv_layer = 0;
    att.scale = 0.3f;
    g.add("att", att);
    Executor ex(g.finish(out), pool);
    test::fill(ex, q, s.q);
    test::fill(ex, k, s.k);
    test::fill(ex, v, s.v);
    for (size_t i = 0; i < s.batch.tokens.size(); ++i)
      ASSERT_TRUE(cache.reserve(s.batch.seq_ids[i], s.batch.positions[i] + 1).ok());
    ex.run(s.batch.view(), cache);

    // Record this step's K/V (as the cache stores them), then check every token.
    for (int64_t t = 0; t < T; ++t) {
      auto& ks = stored.k[size_t(s.batch.seq_ids[size_t(t)])];
      auto& vs = stored.v[size_t(s.batch.seq_ids[size_t(t)])];
      std::vector<float> kr(kKvHeads * dk), vr(kKvHeads * dv);
      for (size_t i = 0; i < kr.size(); ++i) kr[i] = round(s.k[size_t(t) * kr.size() + i]);
      for (size_t i = 0; i < vr.size(); ++i) vr[i] = round(s.v[size_t(t) * vr.size() + i]);
      ASSERT_EQ(int64_t(ks.size()), s.batch.positions[size_t(t)]);
      ks.push_back(kr);
      vs.push_back(vr);
    }
    const auto got = ex.buffer(out);
    for (int64_t t = 0; t < T; ++t) {
      const auto seq = size_t(s.batch.seq_ids[size_t(t)]);
      const int32_t pos = s.batch.positions[size_t(t)];
      for (int32_t h = 0; h < kHeads; ++h) {
        const int32_t kvh = h / (kHeads / kKvHeads);
        const float* qv = s.q.data() + t * q_cols + (gated ? h * 2 * dk : h * dk);
        std::vector<double> score(size_t(pos) + 1);
        double max = -1e300;
        for (int32_t tau = 0; tau <= pos; ++tau) {
          double dot = 0;
          for (int32_t i = 0; i < dk; ++i) dot += double(qv[i]) * stored.k[seq][size_t(tau)][size_t(kvh * dk + i)];
          score[size_t(tau)] = 0.3 * dot;
          max = std::max(max, score[size_t(tau)]);
        }
        double sum = 0;
        for (auto& x : score) sum += (x = std::exp(x - max));
        for (int32_t i = 0; i < dv; ++i) {
          double o = 0;
          for (int32_t tau = 0; tau <= pos; ++tau) o += score[size_t(tau)] / sum * stored.v[seq][size_t(tau)][size_t(kvh * dv + i)];
          if (gated) o *= 1.0 / (1.0 + std::exp(-double(qv[dk + i])));
          EXPECT_NEAR(got[size_t(t * kHeads * dv + h * dv + i)], o, 2e-5) << "t=" << t << " h=" << h << " i=" << i;
        }
      }
    }
  }
}

TEST(AttentionOp, F16CacheAcrossPagesAndSequences) { run_case(kv::KvType::kF16, false); }
TEST(AttentionOp, F32CacheAcrossPagesAndSequences) { run_case(kv::KvType::kF32, false); }
TEST(AttentionOp, OutputGate) { run_case(kv::KvType::kF16, true); }
TEST(AttentionOp, F16VectorHeadSizes) { run_case(kv::KvType::kF16, false, 64, 40); }
TEST(AttentionOp, F16VectorHeadSizesGated) { run_case(kv::KvType::kF16, true, 72, 64); }

}  // namespace
}  // namespace zinc::cpu
