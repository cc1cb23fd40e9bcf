// rope against the textbook formula in double precision: NORM / NEOX / IMROPE pairing, partial
// rotary, strided head layouts, frequency factors, linear and YaRN scaling.
#include <cmath>

#include "cpu/ops/ops.h"
#include "op_test_util.h"

namespace zinc::cpu {
namespace {

using graph::RopeMode;

struct Case {
  RopeMode mode;
  int32_t n_rot;
  graph::HeadLayout heads;
  int64_t cols;
  float freq_scale = 1.f;
  bool freq_factors = false;
  std::array<int32_t, 4> sections{0, 0, 0, 0};
  bool yarn = false;
};

// Expected rotation of head vector x at position p, in double.
std::vector<double> reference(const Case& c, const graph::RopeParams& p, const float* x, int32_t pos,
                              const float* ff) {
  const int d = c.heads.head_dim, n = c.n_rot, half = n / 2;
  std::vector<double> y(x, x + d);
  for (int i = 0; i < half; ++i) {
    double theta = pos * std::pow(double(p.freq_base), -2.0 * i / n);
    if (c.mode == RopeMode::kImrope) {
      const int total = c.sections[0] + c.sections[1] + c.sections[2] + c.sections[3];
      const int s = i % total;
      const bool thw = (s % 3 == 0 && s < 3 * c.sections[0]) || (s % 3 == 1 && s < 3 * c.sections[1]) ||
                       (s % 3 == 2 && s < 3 * c.sections[2]);
      if (!thw) theta = 0;  // the e position of a text token is 0
    }
    if (ff) theta /= ff[i];
    double th = theta * p.freq_scale, mscale = p.attn_factor;
    if (p.ext_factor != 0.f) {
      const double ramp = 1.0 - std::min(1.0, std::max(0.0, (i - p.corr_dims[0]) / std::max(0.001, double(p.corr_dims[1] - p.corr_dims[0]))));
      th = th * (1 - ramp) + theta * ramp;
      mscale *= 1 + 0.1 * std::log(1.0 / p.freq_scale);
    }
    const int a = c.mode == RopeMode::kNorm ? 2 * i : i;
    const int b = c.mode == RopeMode::kNorm ? 2 * i + 1 : i + half;
    y[a] = (x[a] * std::cos(th) - x[b] * std::sin(th)) * mscale;
    y[b] = (x[a] * std::sin(th) + x[b] * std::cos(th)) * mscale;
  }
  return y;
}

void check(const Case& c) {
  const int64_t T = 9;
  std::vector<float> ff_data = test::random_vector(size_t(c.n_rot / 2), 3, 0.2f);
  for (auto& f : ff_data) f = 1.f + std::fabs(f);
  graph::Weight ff = test::weight(ff_data, c.n_rot / 2);
  graph::GraphBuilder g({T, T}, {});
  graph::BufferId x = g.input("x", c.cols);
  graph::RopeParams p;
  p.mode = c.mode;
  p.n_rot = c.n_rot;
  p.freq_base = 10000.f;
  p.freq_scale = c.freq_scale;
  p.sections = c.sections;
  p.freq_factors = c.freq_factors ? &ff : nullptr;
  if (c.yarn) {
    p.ext_factor = 1.f;
    p.attn_factor = 1.f;
    p.corr_dims = {2.f, 5.f};
  }
  g.add("rope", graph::Rope{x, c.heads, p});
  graph::Graph graph = g.finish(x);
  ThreadPool pool(2);
  Executor ex(std::move(graph), pool);
  const std::vector<float> in = test::random_vector(size_t(T * c.cols), 11);
  test::fill(ex, x, in);
  test::TestBatch b;
  for (int32_t t = 0; t < T; ++t) b.add(0, t * 7 + (t % 3));  // positions up to ~60
  auto cache = kv::Cache::create({}, {1, 1, kv::KvType::kF16});
  ASSERT_TRUE(cache.ok());
  ex.run(b.view(), **cache);
  const auto out = ex.buffer(x);
  for (int64_t t = 0; t < T; ++t) {
    std::vector<bool> touched(size_t(c.cols), false);
    for (int32_t h = 0; h < c.heads.n_heads; ++h) {
      const int64_t base = t * c.cols + c.heads.offset + int64_t(h) * c.heads.head_stride;
      const auto want = reference(c, p, in.data() + base, b.positions[size_t(t)], c.freq_factors ? ff_data.data() : nullptr);
      for (int32_t i = 0; i < c.heads.head_dim; ++i) {
        EXPECT_NEAR(out[size_t(base + i)], want[size_t(i)], 2e-4) << "t=" << t << " head=" << h << " i=" << i;
        touched[size_t(base - t * c.cols + i)] = true;
      }
    }
    for (int64_t i = 0; i < c.cols; ++i) {  // elements outside the heads are untouched
      if (!touched[size_t(i)]) {
        EXPECT_EQ(out[size_t(t * c.cols + i)], in[size_t(t * c.cols + i)]);
      }
    }
  }
}

TEST(RopeOp, NormPairsAdjacentElements) { check({RopeMode::kNorm, 16, graph::HeadLayout::packed(4, 16), 64}); }
TEST(RopeOp, NeoxPairsHalves) { check({RopeMode::kNeox, 32, graph::HeadLayout::packed(3, 32), 96}); }
TEST(RopeOp, PartialRotaryLeavesTheRestAlone) { check({RopeMode::kNeox, 8, graph::HeadLayout::packed(2, 32), 64}); }
TEST(RopeOp, StridedHeadsSkipTheGateHalf) { check({RopeMode::kNeox, 16, {3, 16, 32, 0}, 96}); }
TEST(RopeOp, ImropeSectionsWithAnEPosition) {
  Case c{RopeMode::kImrope, 16, graph::HeadLayout::packed(2, 24), 48};
  c.sections = {1, 1, 1, 1};  // every 4th pair takes the e position (0 for text)
  check(c);
}
TEST(RopeOp, ImropeAsQwen35IsNeox) {
  Case c{RopeMode::kImrope, 16, graph::HeadLayout::packed(2, 64), 128};
  c.sections = {4, 4, 4, 0};
  check(c);
}
TEST(RopeOp, FrequencyFactorsAndLinearScaling) {
  Case c{RopeMode::kNorm, 16, graph::HeadLayout::packed(2, 16), 32};
  c.freq_factors = true;
  c.freq_scale = 0.25f;
  check(c);
}
TEST(RopeOp, Yarn) {
  Case c{RopeMode::kNeox, 16, graph::HeadLayout::packed(2, 16), 32};
  c.freq_scale = 0.25f;
  c.yarn = true;
  check(c);
}

}  // namespace
}  // namespace zinc::cpu
