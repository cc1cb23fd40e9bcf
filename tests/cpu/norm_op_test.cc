// rms_norm (with the fused residual add), qk_norm over strided heads, gated_rms_norm, add,
// gather_rows, argmax and embed, each against a direct double-precision formula.
#include <cmath>

#include "cpu/ops/ops.h"
#include "op_test_util.h"

namespace zinc::cpu {
namespace {

double rms(const float* x, int n, double eps) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += double(x[i]) * x[i];
  return 1.0 / std::sqrt(s / n + eps);
}

kv::Cache& empty_cache() {
  static auto c = kv::Cache::create({}, {0, 1, kv::KvType::kF16});
  return **c;
}

test::TestBatch tokens(int n) {
  test::TestBatch b;
  for (int i = 0; i < n; ++i) b.add(0, i, (i * 37) % 11);
  return b;
}

TEST(RmsNormOp, AddsTheResidualInPlaceThenNormalises) {
  const int T = 3, n = 40;
  const auto w = test::random_vector(n, 1), x0 = test::random_vector(T * n, 2), r = test::random_vector(T * n, 3);
  const graph::Weight wt = test::weight(w, n);
  graph::GraphBuilder g({T, T}, {});
  auto x = g.input("x", n), res = g.input("res", n), y = g.buffer("y", n);
  g.add("norm", graph::RmsNorm{x, res, y, &wt, 1e-5f});
  ThreadPool pool(2);
  Executor ex(g.finish(y), pool);
  test::fill(ex, x, x0);
  test::fill(ex, res, r);
  ex.run(tokens(T).view(), empty_cache());
  for (int t = 0; t < T; ++t) {
    std::vector<float> sum(n);
    for (int i = 0; i < n; ++i) sum[size_t(i)] = x0[size_t(t * n + i)] + r[size_t(t * n + i)];
    const double s = rms(sum.data(), n, 1e-5);
    for (int i = 0; i < n; ++i) {
      EXPECT_FLOAT_EQ(ex.buffer(x)[size_t(t * n + i)], sum[size_t(i)]);
      EXPECT_NEAR(ex.buffer(y)[size_t(t * n + i)], sum[size_t(i)] * s * w[size_t(i)], 1e-5);
    }
  }
}

TEST(QkNormOp, NormalisesEachStridedHead) {
  const int T = 2, cols = 48;
  const graph::HeadLayout heads{3, 8, 16, 0};  // [q(8), gate(8)] x 3: gates untouched
  const auto w = test::random_vector(8, 4), x0 = test::random_vector(T * cols, 5);
  const graph::Weight wt = test::weight(w, 8);
  graph::GraphBuilder g({T, T}, {});
  auto x = g.input("x", cols);
  g.add("qn", graph::QkNorm{x, heads, &wt, 1e-6f});
  ThreadPool pool(1);
  Executor ex(g.finish(x), pool);
  test::fill(ex, x, x0);
  ex.run(tokens(T).view(), empty_cache());
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < 3; ++h) {
      const float* in = &x0[size_t(t * cols + h * 16)];
      const double s = rms(in, 8, 1e-6);
      for (int i = 0; i < 8; ++i) {
        EXPECT_NEAR(ex.buffer(x)[size_t(t * cols + h * 16 + i)], in[i] * s * w[size_t(i)], 1e-5);
        EXPECT_EQ(ex.buffer(x)[size_t(t * cols + h * 16 + 8 + i)], in[8 + i]);
      }
    }
}

TEST(GatedRmsNormOp, NormalisesPerGroupTimesSiluOfGate) {
  const int T = 2, group = 6, cols = 24;
  const auto w = test::random_vector(group, 6), x0 = test::random_vector(T * cols, 7), z0 = test::random_vector(T * cols, 8);
  const graph::Weight wt = test::weight(w, group);
  graph::GraphBuilder g({T, T}, {});
  auto x = g.input("x", cols), z = g.input("z", cols), y = g.buffer("y", cols);
  g.add("gn", graph::GatedRmsNorm{x, z, y, &wt, group, 1e-6f});
  ThreadPool pool(2);
  Executor ex(g.finish(y), pool);
  test::fill(ex, x, x0);
  test::fill(ex, z, z0);
  ex.run(tokens(T).view(), empty_cache());
  for (int i = 0; i < T * cols; ++i) {
    const int base = i / group * group;
    const double s = rms(&x0[size_t(base)], group, 1e-6);
    const double zz = z0[size_t(i)];
    EXPECT_NEAR(ex.buffer(y)[size_t(i)], x0[size_t(i)] * s * w[size_t(i % group)] * zz / (1 + std::exp(-zz)), 1e-5);
  }
}

TEST(RowOps, EmbedGatherArgmaxAndAdd) {
  const int T = 4, n_embd = 5, n_vocab = 11;
  const auto table = test::random_vector(n_vocab * n_embd, 9), other = test::random_vector(T * n_embd, 10);
  const graph::Weight wt = test::weight(table, n_embd, n_vocab);
  graph::GraphBuilder g({T, 2}, {});
  auto e = g.buffer("e", n_embd), o = g.input("o", n_embd), s = g.buffer("s", n_embd);
  auto rows = g.buffer("rows", n_embd, 2);
  auto best = g.buffer("best", 1, 2, graph::DType::kI32);
  g.add("embed", graph::Embed{e, &wt, 2.f});
  g.add("add", graph::Add{e, o, s});
  g.add("gather", graph::GatherRows{s, rows});
  g.add("argmax", graph::Argmax{rows, best});
  ThreadPool pool(2);
  Executor ex(g.finish(rows), pool);
  test::fill(ex, o, other);
  test::TestBatch b = tokens(T);
  b.output_rows = {3, 1};
  ex.run(b.view(), empty_cache());
  for (int r = 0; r < 2; ++r) {
    const int t = b.output_rows[size_t(r)];
    int arg = 0;
    for (int i = 0; i < n_embd; ++i) {
      const float want = table[size_t(b.tokens[size_t(t)] * n_embd + i)] * 2.f + other[size_t(t * n_embd + i)];
      EXPECT_FLOAT_EQ(ex.buffer(rows)[size_t(r * n_embd + i)], want);
      if (want > ex.buffer(rows)[size_t(r * n_embd + arg)]) arg = i;
    }
    EXPECT_EQ(reinterpret_cast<const int32_t*>(ex.buffer(best).data())[r], arg);
  }
}

}  // namespace
}  // namespace zinc::cpu
