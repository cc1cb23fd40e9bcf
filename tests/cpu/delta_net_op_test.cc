// ssm_conv1d + gated_delta_net against the naive per-token formulas of model-spec 3.8, computed
// in double with their own state: two steps (state carried through the cache), two sequences
// interleaved in a batch, tiled and grouped value-to-key head maps.
#include <cmath>

#include "cpu/ops/ops.h"
#include "op_test_util.h"

namespace zinc::cpu {
namespace {

constexpr int32_t kK = 4, kHk = 2, kDk = 8, kHv = 4, kDv = 6;
constexpr int64_t kKeyDim = kHk * kDk, kConvDim = 2 * kKeyDim + kHv * kDv;
constexpr float kEps = 1e-6f;

struct NaiveState {
  std::vector<double> conv = std::vector<double>(size_t((kK - 1) * kConvDim), 0.0);
  std::vector<double> S = std::vector<double>(size_t(kHv * kDv * kDk), 0.0);  // [h][i_v][j_k]
};

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double softplus(double x) { return x > 20 ? x : std::log1p(std::exp(x)); }

// One token through conv + delta rule; returns the [kHv * kDv] output.
std::vector<double> naive_token(NaiveState& s, const float* m, const float* beta, const float* alpha,
                                const std::vector<float>& kernel, const std::vector<float>& a,
                                const std::vector<float>& dt, graph::KeyHeadMap map) {
  std::vector<double> y(kConvDim);
  for (int64_t c = 0; c < kConvDim; ++c) {
    double sum = 0;
    for (int i = 0; i < kK - 1; ++i) sum += s.conv[size_t(i * kConvDim + c)] * kernel[size_t(c * kK + i)];
    sum += m[c] * kernel[size_t(c * kK + kK - 1)];
    for (int i = 0; i + 1 < kK - 1; ++i) s.conv[size_t(i * kConvDim + c)] = s.conv[size_t((i + 1) * kConvDim + c)];
    s.conv[size_t((kK - 2) * kConvDim + c)] = m[c];
    y[size_t(c)] = sum * sigmoid(sum);
  }
  auto l2 = [](const double* x) {
    double n = 0;
    for (int i = 0; i < kDk; ++i) n += x[i] * x[i];
    std::vector<double> out(x, x + kDk);
    for (auto& v : out) v /= std::max(std::sqrt(n), double(kEps));
    return out;
  };
  std::vector<double> o(size_t(kHv * kDv));
  for (int h = 0; h < kHv; ++h) {
    const int kh = map == graph::KeyHeadMap::kTiled ? h % kHk : h / (kHv / kHk);
    auto q = l2(&y[size_t(kh * kDk)]);
    auto k = l2(&y[size_t(kKeyDim + kh * kDk)]);
    for (auto& v : q) v /= std::sqrt(double(kDk));
    const double* v = &y[size_t(2 * kKeyDim + h * kDv)];
    const double b = sigmoid(beta[h]);
    const double decay = std::exp(a[size_t(h)] * softplus(alpha[h] + dt[size_t(h)]));
    double* S = &s.S[size_t(h * kDv * kDk)];
    for (int i = 0; i < kDv * kDk; ++i) S[i] *= decay;
    for (int i = 0; i < kDv; ++i) {
      double sk = 0;
      for (int j = 0; j < kDk; ++j) sk += S[i * kDk + j] * k[size_t(j)];
      const double e = (v[i] - sk) * b;
      for (int j = 0; j < kDk; ++j) S[i * kDk + j] += e * k[size_t(j)];
    }
    for (int i = 0; i < kDv; ++i) {
      double acc = 0;
      for (int j = 0; j < kDk; ++j) acc += S[i * kDk + j] * q[size_t(j)];
      o[size_t(h * kDv + i)] = acc;
    }
  }
  return o;
}

void run_case(graph::KeyHeadMap map) {
  graph::StateLayout st;
  st.recurrent_layers = {{(kK - 1) * kConvDim, int64_t(kHv) * kDv * kDk}};
  auto cache_r = kv::Cache::create(st, {0, 2, kv::KvType::kF16});
  ASSERT_TRUE(cache_r.ok());
  kv::Cache& cache = **cache_r;
  const kv::SeqId s0 = cache.add_sequence().value(), s1 = cache.add_sequence().value();
  const std::vector<float> kernel = test::random_vector(size_t(kConvDim * kK), 1, 0.5f);
  std::vector<float> a = test::random_vector(kHv, 2), dt = test::random_vector(kHv, 3);
  for (auto& x : a) x = -std::exp(x);  // ssm_a = -exp(A_log)
  const graph::Weight wk = test::weight(kernel, kK, kConvDim), wa = test::weight(a, kHv), wdt = test::weight(dt, kHv);
  ThreadPool pool(2);
  NaiveState naive[2];

  uint32_t seed = 50;
  int32_t next_pos[2] = {0, 0};
  for (int step = 0; step < 3; ++step) {
    test::TestBatch b;
    const int n = step == 0 ? 5 : (step == 1 ? 7 : 1);
    for (int i = 0; i < n; ++i) {
      const int32_t seq = (step == 1 && i % 2) ? s1 : s0;
      b.add(seq, next_pos[seq]++);
    }
    const int64_t T = n;
    graph::GraphBuilder g({T, T}, st);
    auto qkv = g.input("qkv", kConvDim), beta = g.input("beta", kHv), alpha = g.input("alpha", kHv);
    auto conv = g.buffer("conv", kConvDim), out = g.buffer("out", kHv * kDv);
    g.add("conv", graph::SsmConv1d{qkv, conv, &wk, 0});
    graph::GatedDeltaNet op;
    op.qkv = conv;
    op.beta = beta;
    op.alpha = alpha;
    op.out = out;
    op.a = &wa;
    op.dt_bias = &wdt;
    op.n_k_heads = kHk;
    op.d_k = kDk;
    op.n_v_heads = kHv;
    op.d_v = kDv;
    op.key_map = map;
    op.eps = kEps;
    op.recurrent_layer = 0;
    g.add("gdn", op);
    Executor ex(g.finish(out), pool);
    const auto m = test::random_vector(size_t(T * kConvDim), seed++);
    const auto be = test::random_vector(size_t(T * kHv), seed++);
    const auto al = test::random_vector(size_t(T * kHv), seed++);
    test::fill(ex, qkv, m);
    test::fill(ex, beta, be);
    test::fill(ex, alpha, al);
    ex.run(b.view(), cache);
    const auto got = ex.buffer(out);
    for (int64_t t = 0; t < T; ++t) {
      const auto want = naive_token(naive[b.seq_ids[size_t(t)]], &m[size_t(t * kConvDim)], &be[size_t(t * kHv)],
                                    &al[size_t(t * kHv)], kernel, a, dt, map);
      for (int i = 0; i < kHv * kDv; ++i)
        EXPECT_NEAR(got[size_t(t * kHv * kDv + i)], want[size_t(i)], 2e-5) << "step " << step << " t=" << t << " i=" << i;
    }
  }
}

TEST(GatedDeltaNetOp, TiledHeadsMatchTheRecurrence) { run_case(graph::KeyHeadMap::kTiled); }
TEST(GatedDeltaNetOp, GroupedHeadsMatchTheRecurrence) { run_case(graph::KeyHeadMap::kGrouped); }

}  // namespace
}  // namespace zinc::cpu
