// fold_router (vulkan/router_fold.h) on random weights, on the host: R is the router times the
// norm weight, and M a equals R (P a) for a random a, exactly as floats and to Q8_0's rounding.
#include "vulkan/router_fold.h"

#include <cmath>
#include <cstring>

#include "cpu_ref.h"
#include "vk_test_util.h"

namespace zinc::vulkan::test {
namespace {

constexpr int64_t kExperts = 12, kEmbd = 96, kIn = 256;

std::vector<float> dequantized(TensorType type, const std::vector<uint8_t>& bytes, int64_t rows, int64_t cols) {
  std::vector<float> v(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    dequantize_row(type, bytes.data() + size_t(r) * row_bytes(type, cols), v.data() + r * cols, cols);
  return v;
}

struct Fold {
  Matrix router, projection;
  std::vector<float> norm;
};

Fold random_fold(TensorType projection_type) {
  return {random_matrix(TensorType::F32, kExperts, kEmbd, 31), random_matrix(projection_type, kEmbd, kIn, 32),
          random_floats(kEmbd, 33, 2.0f)};
}

// M a and R (P a) in double, from the dequantized stored values.
void expect_folded(const Fold& f, const RouterFold& got, float rel) {
  ASSERT_EQ(got.n_expert, kExperts);
  ASSERT_EQ(got.n_embd, kEmbd);
  ASSERT_EQ(got.in_cols, kIn);
  ASSERT_EQ(got.stream.size(), size_t(kExperts * kEmbd) * 4);
  std::vector<float> r(size_t(kExperts * kEmbd));
  std::memcpy(r.data(), got.stream.data(), got.stream.size());
  for (int64_t i = 0; i < kExperts; ++i)
    for (int64_t c = 0; c < kEmbd; ++c)
      ASSERT_EQ(r[size_t(i * kEmbd + c)], f.router.values[size_t(i * kEmbd + c)] * f.norm[size_t(c)]);
  const std::vector<float> m = dequantized(got.input_type, got.input, kExperts, kIn);
  const auto a = random_floats(kIn, 34);
  std::vector<double> pa(kEmbd, 0.0), want(kExperts, 0.0), have(kExperts, 0.0);
  for (int64_t e = 0; e < kEmbd; ++e)
    for (int64_t c = 0; c < kIn; ++c) pa[size_t(e)] += double(f.projection.values[size_t(e * kIn + c)]) * a[size_t(c)];
  double scale = 0;
  for (int64_t i = 0; i < kExperts; ++i) {
    for (int64_t e = 0; e < kEmbd; ++e) want[size_t(i)] += double(r[size_t(i * kEmbd + e)]) * pa[size_t(e)];
    for (int64_t c = 0; c < kIn; ++c) have[size_t(i)] += double(m[size_t(i * kIn + c)]) * a[size_t(c)];
    scale = std::max(scale, std::abs(want[size_t(i)]));
  }
  for (int64_t i = 0; i < kExperts; ++i) EXPECT_NEAR(have[size_t(i)], want[size_t(i)], rel * scale) << "expert " << i;
}

// Folds a random router into a projection of projection_type, M stored as input_type.
void check_fold(TensorType projection_type, TensorType input_type, float rel) {
  const Fold f = random_fold(projection_type);
  const graph::Weight router = graph_weight(TensorType::F32, f.router.bytes.data(), kEmbd, kExperts);
  const graph::Weight norm = graph_weight(TensorType::F32, f.norm.data(), kEmbd);
  const graph::Weight projection = graph_weight(projection_type, f.projection.bytes.data(), kIn, kEmbd);
  auto got = fold_router(router, norm, projection, input_type);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->input_type, input_type);
  expect_folded(f, *got, rel);
}

TEST(RouterFold, FloatInputIsExact) { check_fold(TensorType::Q4_K, TensorType::F32, 1e-5f); }

TEST(RouterFold, Q8InputWithinItsRounding) { check_fold(TensorType::Q6_K, TensorType::Q8_0, 2e-2f); }

TEST(RouterFold, RefusesShapesThatDoNotChain) {
  const Fold f = random_fold(TensorType::F32);
  const graph::Weight router = graph_weight(TensorType::F32, f.router.bytes.data(), kEmbd, kExperts);
  const graph::Weight norm = graph_weight(TensorType::F32, f.norm.data(), kEmbd);
  // The projection's rows must be the router's cols, its cols a multiple of 32.
  const graph::Weight narrow = graph_weight(TensorType::F32, f.projection.bytes.data(), kIn / 2, kEmbd);
  const graph::Weight short_rows = graph_weight(TensorType::F32, f.projection.bytes.data(), kIn, kEmbd - 1);
  const graph::Weight odd_cols = graph_weight(TensorType::F32, f.projection.bytes.data(), kIn - 8, kEmbd);
  EXPECT_TRUE(fold_router(router, norm, narrow, TensorType::F32).ok());
  EXPECT_FALSE(fold_router(router, norm, short_rows, TensorType::F32).ok());
  EXPECT_FALSE(fold_router(router, norm, odd_cols, TensorType::F32).ok());
  const graph::Weight projection = graph_weight(TensorType::F32, f.projection.bytes.data(), kIn, kEmbd);
  EXPECT_FALSE(fold_router(router, norm, projection, TensorType::Q4_K).ok());
}

}  // namespace
}  // namespace zinc::vulkan::test
