// moe_route + moe_matmul (gate/up and down) + shared_expert_gate against a naive per-token MoE
// (softmax, top-k, renormalised weights, SwiGLU experts), and the fused SwiGLU matmul with bias.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "cpu/ops/ops.h"
#include "op_test_util.h"

namespace zinc::cpu {
namespace {

constexpr int kEmbd = 12, kFf = 10, kExperts = 6, kUsed = 2;

double silu(double x) { return x / (1 + std::exp(-x)); }

std::vector<double> matvec(const std::vector<float>& w, size_t offset, int rows, int cols, const double* x) {
  std::vector<double> y(static_cast<size_t>(rows), 0.0);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) y[size_t(r)] += double(w[offset + size_t(r * cols + c)]) * x[c];
  return y;
}

TEST(MoeOps, MatchNaiveMixtureOfExpertsWithSharedExpert) {
  const int T = 7;
  const auto router = test::random_vector(kExperts * kEmbd, 1);
  const auto gate = test::random_vector(kExperts * kFf * kEmbd, 2, 0.3f);
  const auto up = test::random_vector(kExperts * kFf * kEmbd, 3, 0.3f);
  const auto down = test::random_vector(kExperts * kEmbd * kFf, 4, 0.3f);
  const auto shared = test::random_vector(T * kEmbd, 5);
  const auto shgate = test::random_vector(kEmbd, 6);
  const auto x0 = test::random_vector(T * kEmbd, 7);
  const graph::Weight wr = test::weight(router, kEmbd, kExperts), wg = test::weight(gate, kEmbd, kFf, kExperts),
                      wu = test::weight(up, kEmbd, kFf, kExperts), wd = test::weight(down, kFf, kEmbd, kExperts),
                      wsg = test::weight(shgate, kEmbd);

  graph::GraphBuilder g({T, T}, {});
  auto x = g.input("x", kEmbd), sh = g.input("shared", kEmbd);
  auto logits = g.buffer("logits", kExperts);
  auto ids = g.buffer("ids", kUsed, T, graph::DType::kI32);
  auto weights = g.buffer("weights", kUsed, T);
  auto act = g.buffer("act", kFf, T * kUsed);
  auto out = g.buffer("out", kEmbd);
  g.add("router", graph::Matmul{x, logits, &wr});
  g.add("route", graph::MoeRoute{logits, ids, weights, kUsed, true});
  g.add("gate_up", graph::MoeMatmul{x, ids, {}, act, &wg, &wu});
  g.add("down", graph::MoeMatmul{act, ids, weights, out, &wd, nullptr});
  g.add("shared", graph::SharedExpertGate{x, sh, out, &wsg});
  ThreadPool pool(2);
  Executor ex(g.finish(out), pool);
  test::fill(ex, x, x0);
  test::fill(ex, sh, shared);
  test::TestBatch b;
  for (int t = 0; t < T; ++t) b.add(0, t);
  auto cache = kv::Cache::create({}, {0, 1, kv::KvType::kF16});
  ex.run(b.view(), **cache);

  for (int t = 0; t < T; ++t) {
    std::vector<double> xt(x0.begin() + t * kEmbd, x0.begin() + (t + 1) * kEmbd);
    auto l = matvec(router, 0, kExperts, kEmbd, xt.data());
    const double mx = *std::max_element(l.begin(), l.end());
    double sum = 0;
    for (auto& v : l) sum += (v = std::exp(v - mx));
    for (auto& v : l) v /= sum;
    std::vector<int> order(kExperts);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int c) { return l[size_t(a)] > l[size_t(c)]; });
    const double wsum = l[size_t(order[0])] + l[size_t(order[1])];
    std::vector<double> y(kEmbd, 0.0);
    for (int j = 0; j < kUsed; ++j) {
      const int e = order[size_t(j)];
      EXPECT_EQ(reinterpret_cast<const int32_t*>(ex.buffer(ids).data())[t * kUsed + j], e);
      auto gv = matvec(gate, size_t(e * kFf * kEmbd), kFf, kEmbd, xt.data());
      auto uv = matvec(up, size_t(e * kFf * kEmbd), kFf, kEmbd, xt.data());
      std::vector<double> a(kFf);
      for (int i = 0; i < kFf; ++i) a[size_t(i)] = silu(gv[size_t(i)]) * uv[size_t(i)];
      auto dv = matvec(down, size_t(e * kEmbd * kFf), kEmbd, kFf, a.data());
      for (int i = 0; i < kEmbd; ++i) y[size_t(i)] += l[size_t(e)] / wsum * dv[size_t(i)];
    }
    double dot = 0;
    for (int i = 0; i < kEmbd; ++i) dot += shgate[size_t(i)] * xt[size_t(i)];
    const double sg = 1 / (1 + std::exp(-dot));
    for (int i = 0; i < kEmbd; ++i)
      EXPECT_NEAR(ex.buffer(out)[size_t(t * kEmbd + i)], y[size_t(i)] + sg * shared[size_t(t * kEmbd + i)], 1e-4)
          << "t=" << t << " i=" << i;
  }
}

TEST(MatmulOp, BiasAndFusedSwiglu) {
  const int T = 3, in = 9, outn = 7;
  const auto w = test::random_vector(outn * in, 1), u = test::random_vector(outn * in, 2), bias = test::random_vector(outn, 3);
  const auto x0 = test::random_vector(T * in, 4);
  const graph::Weight ww = test::weight(w, in, outn), wu = test::weight(u, in, outn), wb = test::weight(bias, outn);
  graph::GraphBuilder g({T, T}, {});
  auto x = g.input("x", in), y = g.buffer("y", outn), z = g.buffer("z", outn);
  g.add("biased", graph::Matmul{x, y, &ww, &wb});
  g.add("swiglu", graph::Matmul{x, z, &ww, nullptr, &wu});
  ThreadPool pool(2);
  Executor ex(g.finish(z), pool);
  test::fill(ex, x, x0);
  test::TestBatch b;
  for (int t = 0; t < T; ++t) b.add(0, t);
  auto cache = kv::Cache::create({}, {0, 1, kv::KvType::kF16});
  ex.run(b.view(), **cache);
  for (int t = 0; t < T; ++t) {
    std::vector<double> xt(x0.begin() + t * in, x0.begin() + (t + 1) * in);
    auto gv = matvec(w, 0, outn, in, xt.data()), uv = matvec(u, 0, outn, in, xt.data());
    for (int i = 0; i < outn; ++i) {
      EXPECT_NEAR(ex.buffer(z)[size_t(t * outn + i)], silu(gv[size_t(i)]) * uv[size_t(i)], 1e-4);
    }
  }
  (void)y;
}

}  // namespace
}  // namespace zinc::cpu
