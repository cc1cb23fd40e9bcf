// quantize_row then dequantize_row on random rows: the relative RMS error stays under a bound per
// type and distribution, and the output is structurally sound (right size, finite, no growth).
// Bounds are about 1.2x the worst relative error measured over these seeds and lengths; the
// llama.cpp comparison lives in docs/QUANTIZATION.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/quant.h"

namespace zinc {
namespace {

struct Case {
  TensorType type;
  double gauss_bound;  // relative RMS error = sqrt(sum (x - y)^2 / sum x^2), per row
  double heavy_bound;  // same for Student-t (3 degrees of freedom) data
};

const Case kCases[] = {
    {TensorType::F16, 3e-4, 3e-4},    {TensorType::BF16, 2.5e-3, 2.5e-3}, {TensorType::Q4_0, 0.105, 0.16},
    {TensorType::Q4_1, 0.10, 0.125},  {TensorType::Q5_0, 0.055, 0.085},   {TensorType::Q5_1, 0.05, 0.06},
    {TensorType::Q8_0, 0.007, 0.012}, {TensorType::Q2_K, 0.36, 0.46},     {TensorType::Q3_K, 0.185, 0.26},
    {TensorType::Q4_K, 0.09, 0.115},  {TensorType::Q5_K, 0.047, 0.058},   {TensorType::Q6_K, 0.022, 0.033},
    {TensorType::IQ4_NL, 0.10, 0.13}, {TensorType::IQ4_XS, 0.10, 0.13},   {TensorType::MXFP4, 0.15, 0.20},
};

void PrintTo(const Case& c, std::ostream* os) { *os << type_name(c.type); }

enum class Dist { kGauss, kHeavy };

std::vector<float> random_row(Dist dist, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> gauss(0.f, 1.f);
  std::student_t_distribution<float> heavy(3.f);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = dist == Dist::kGauss ? gauss(rng) : heavy(rng);
  return x;
}

// Quantizes into a buffer with guard bytes after row_bytes and checks they survive.
std::vector<float> round_trip(TensorType t, const std::vector<float>& x) {
  const int64_t n = int64_t(x.size());
  const size_t size = row_bytes(t, n);
  constexpr size_t kGuard = 64;
  std::vector<uint8_t> q(size + kGuard, 0xA5);
  quantize_row(t, x.data(), q.data(), n);
  for (size_t i = size; i < q.size(); ++i) EXPECT_EQ(q[i], 0xA5) << type_name(t) << " wrote past the row";
  std::vector<float> y(size_t(n) + 1, 1234.5f);
  dequantize_row(t, q.data(), y.data(), n);
  EXPECT_EQ(y.back(), 1234.5f) << type_name(t) << " dequantized past the row";
  y.pop_back();
  return y;
}

std::vector<int64_t> row_lengths(TensorType t) {
  std::vector<int64_t> lengths = {256, 1280, 4096};
  if (type_info(t).block_elems < 256) lengths.insert(lengths.begin(), {32, 96});
  return lengths;
}

// Relative error allowed on a block's largest value. Scaled formats represent it up to the f16
// rounding of the scale (and the 6-bit re-quantization of sub-block scales in the K-quants).
// MXFP4's scale is 2^(floor(log2 amax) - 2) and its largest E2M1 value 6, so amax below
// 2^(k+1) is clipped to 1.5 * 2^k (up to 25 %); and E2M1 has no 2.5 (only 2 and 3).
float constant_tolerance(TensorType t) { return t == TensorType::MXFP4 ? 0.25f : 0.03f; }

class QuantRoundTrip : public ::testing::TestWithParam<Case> {};

TEST_P(QuantRoundTrip, RelativeRmsErrorWithinBound) {
  const Case c = GetParam();
  for (Dist dist : {Dist::kGauss, Dist::kHeavy}) {
    const double bound = dist == Dist::kGauss ? c.gauss_bound : c.heavy_bound;
    for (uint32_t seed : {1u, 2u, 3u}) {
      for (int64_t n : row_lengths(c.type)) {
        const auto x = random_row(dist, n, seed * 1000 + uint32_t(n));
        const auto y = round_trip(c.type, x);
        double se = 0, s2 = 0;
        for (size_t i = 0; i < x.size(); ++i) {
          se += double(x[i] - y[i]) * (x[i] - y[i]);
          s2 += double(x[i]) * x[i];
        }
        // Rows of a single 32-block vary more; give them twice the room.
        const double limit = n < 256 ? 2 * bound : bound;
        EXPECT_LT(std::sqrt(se / s2), limit) << type_name(c.type) << (dist == Dist::kGauss ? " gauss" : " heavy")
                                             << " seed " << seed << " n " << n;
      }
    }
  }
}

TEST_P(QuantRoundTrip, OutputIsStructurallyValid) {
  const Case c = GetParam();
  for (Dist dist : {Dist::kGauss, Dist::kHeavy}) {
    for (int64_t n : row_lengths(c.type)) {
      const auto x = random_row(dist, n, 77 + uint32_t(n));
      const auto y = round_trip(c.type, x);
      ASSERT_EQ(y.size(), x.size());
      float max_x = 0, max_y = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        ASSERT_TRUE(std::isfinite(y[i])) << type_name(c.type) << " element " << i;
        max_x = std::max(max_x, std::fabs(x[i]));
        max_y = std::max(max_y, std::fabs(y[i]));
      }
      // No format may invent magnitude: the largest decoded value stays near the largest input.
      EXPECT_LE(max_y, 1.25f * max_x) << type_name(c.type);
      // Deterministic: the same input gives the same output.
      EXPECT_EQ(round_trip(c.type, x), y) << type_name(c.type);
    }
  }
}

TEST_P(QuantRoundTrip, AllEqualRowsStayFiniteAndClose) {
  const Case c = GetParam();
  const int64_t n = 512;
  for (float value : {0.f, 1.f, -2.5f, 3e-3f, 100.f}) {
    const std::vector<float> x(size_t(n), value);
    const auto y = round_trip(c.type, x);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_TRUE(std::isfinite(y[size_t(i)])) << type_name(c.type) << " value " << value;
      ASSERT_NEAR(y[size_t(i)], value, constant_tolerance(c.type) * std::fabs(value))
          << type_name(c.type) << " value " << value;
    }
  }
}

TEST_P(QuantRoundTrip, OneOutlierStaysFinite) {
  const Case c = GetParam();
  const int64_t n = 1024;
  for (float outlier : {1000.f, -1000.f}) {
    auto x = random_row(Dist::kGauss, n, 5);
    x[300] = outlier;
    const auto y = round_trip(c.type, x);
    for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(std::isfinite(y[size_t(i)])) << type_name(c.type) << " element " << i;
    EXPECT_NEAR(y[300], outlier, constant_tolerance(c.type) * std::fabs(outlier)) << type_name(c.type);
    // Blocks without the outlier are untouched by it: their error stays at the gaussian level.
    const int64_t block = type_info(c.type).block_elems;
    const int64_t outlier_block = 300 / std::max<int64_t>(block, 1);
    double se = 0, s2 = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (i / std::max<int64_t>(block, 1) == outlier_block) continue;
      se += double(x[size_t(i)] - y[size_t(i)]) * (x[size_t(i)] - y[size_t(i)]);
      s2 += double(x[size_t(i)]) * x[size_t(i)];
    }
    EXPECT_LT(std::sqrt(se / s2), c.gauss_bound) << type_name(c.type);
  }
}

INSTANTIATE_TEST_SUITE_P(AllQuantizableTypes, QuantRoundTrip, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(type_name(info.param.type)); });

}  // namespace
}  // namespace zinc
