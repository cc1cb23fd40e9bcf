// cpu::matmul end to end, for every weight type and every instruction set this CPU runs:
// against a float64 product of the reference-dequantized weights, and against the scalar kernels.
//
// Tolerances. Quantized weights multiply activations rounded to 8 bits per 32 values, an error of
// at most amax/254 per value: |y - ref| <= 1e-2 * |W[r]| * |x[t]| (norms of the row and of the
// token), and over all outputs sum (y - ref)^2 / sum ref^2 <= 2e-4 (random data lands near 3e-5).
// Float weights: float32 accumulation, 1e-5 of the norm product. SIMD vs scalar: the same integer
// sums, float rounding only: 1e-5 of the norm product.
#include "cpu/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "matmul_test_util.h"

namespace zinc::cpu {
namespace {

struct Product {
  std::vector<double> ref;   // [n_tok, rows] float64 reference
  std::vector<double> norm;  // |W[r]| * |x[t]|
};

Product reference_product(TensorType t, const std::vector<uint8_t>& w, int64_t rows, int64_t cols,
                          const std::vector<float>& x, int64_t n_tok) {
  Product p{std::vector<double>(size_t(n_tok * rows)), std::vector<double>(size_t(n_tok * rows))};
  const size_t rb = row_bytes(t, cols);
  for (int64_t r = 0; r < rows; ++r) {
    const auto wr = test_util::ref_dequantize_row(t, w.data() + size_t(r) * rb, cols);
    double wn = 0;
    for (float v : wr) wn += double(v) * v;
    for (int64_t tk = 0; tk < n_tok; ++tk) {
      double acc = 0, xn = 0;
      for (int64_t k = 0; k < cols; ++k) {
        acc += double(wr[size_t(k)]) * x[size_t(tk * cols + k)];
        xn += double(x[size_t(tk * cols + k)]) * x[size_t(tk * cols + k)];
      }
      p.ref[size_t(tk * rows + r)] = acc;
      p.norm[size_t(tk * rows + r)] = std::sqrt(wn * xn);
    }
  }
  return p;
}

bool is_float_type(TensorType t) { return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16; }

// Checks y against the reference (and against y_scalar when given).
void expect_close(TensorType t, const std::vector<float>& y, const Product& p, const std::vector<float>* y_scalar) {
  const double tol = is_float_type(t) ? 1e-5 : 1e-2;
  double err2 = 0, ref2 = 0;
  int bad = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double e = double(y[i]) - p.ref[i];
    err2 += e * e;
    ref2 += p.ref[i] * p.ref[i];
    if (!(std::fabs(e) <= tol * p.norm[i] + 1e-30) && bad++ < 5)
      ADD_FAILURE() << "output " << i << ": " << y[i] << " vs reference " << p.ref[i] << " (norms " << p.norm[i] << ")";
    if (y_scalar && !(std::fabs(double(y[i]) - (*y_scalar)[i]) <= 1e-5 * p.norm[i] + 1e-30) && bad++ < 5)
      ADD_FAILURE() << "output " << i << ": " << y[i] << " vs scalar " << (*y_scalar)[i];
  }
  EXPECT_EQ(bad, 0);
  if (!is_float_type(t)) {
    EXPECT_LE(err2, 2e-4 * ref2) << "nmse " << err2 / ref2;
  }
}

class MatmulAllTypes : public ::testing::TestWithParam<std::tuple<TensorType, Isa>> {};

TEST_P(MatmulAllTypes, MatchesReferenceAndScalar) {
  const auto [t, isa] = GetParam();
  if (!cpu_supports(isa)) GTEST_SKIP() << "this CPU lacks " << isa_name(isa);
  std::mt19937 rng(uint32_t(t) * 7919u + 1);
  // Rows not a multiple of any tile; 32-element formats get a partial last group.
  const int64_t rows = 37, cols = type_info(t).block_elems == 256 ? 512 : is_float_type(t) ? 301 : 352;
  const auto w = test_util::random_weights(t, rows, cols, rng);
  const WeightView wv{t, w.data(), rows, cols, row_bytes(t, cols)};
  ThreadPool pool(2);
  for (int64_t n_tok : {1, 2, 3, 4, 5, 8, 13, 33, 70}) {
    SCOPED_TRACE("n_tokens " + std::to_string(n_tok));
    const auto x = test_util::random_floats(size_t(n_tok * cols), rng);
    const Product p = reference_product(t, w, rows, cols, x, n_tok);
    MatmulInput in(x.data(), n_tok, cols);
    std::vector<float> y(size_t(n_tok * rows), NAN), y_scalar(y.size(), NAN);
    matmul(wv, in, y_scalar.data(), pool, Isa::kScalar);
    matmul(wv, in, y.data(), pool, isa);
    expect_close(t, y, p, isa == Isa::kScalar ? nullptr : &y_scalar);
  }
}

std::vector<TensorType> all_types() {
  std::vector<TensorType> v(std::begin(test_util::kQuantTypes), std::end(test_util::kQuantTypes));
  v.insert(v.end(), std::begin(test_util::kFloatTypes), std::end(test_util::kFloatTypes));
  return v;
}

INSTANTIATE_TEST_SUITE_P(Kernels, MatmulAllTypes,
                         ::testing::Combine(::testing::ValuesIn(all_types()),
                                            ::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvx512)),
                         [](const auto& info) {
                           return std::string(type_name(std::get<0>(info.param))) + "_" +
                                  std::string(isa_name(std::get<1>(info.param)));
                         });

TEST(Matmul, F32MatchesNaiveProduct) {
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.f, 1.f);
  const int64_t rows = 37, cols = 29, n_tokens = 5;
  std::vector<float> w(rows * cols), x(n_tokens * cols), y(n_tokens * rows);
  for (auto& v : w) v = nd(rng);
  for (auto& v : x) v = nd(rng);
  ThreadPool pool(2);
  matmul({TensorType::F32, w.data(), rows, cols, size_t(cols) * 4}, x.data(), n_tokens, y.data(), pool);
  for (int64_t t = 0; t < n_tokens; ++t)
    for (int64_t r = 0; r < rows; ++r) {
      double ref = 0;
      for (int64_t k = 0; k < cols; ++k) ref += double(w[r * cols + k]) * x[t * cols + k];
      EXPECT_NEAR(y[t * rows + r], ref, 1e-4) << t << "," << r;
    }
}

// Shapes that cross the prefill blocking: several K blocks (long rows, many tokens) and
// several token blocks; padded row stride; three threads.
TEST(Matmul, BlockedPrefillMatchesReference) {
  struct Shape {
    TensorType t;
    int64_t rows, cols, n_tok;
  };
  for (const Shape s : {Shape{TensorType::Q4_K, 21, 4096, 70}, Shape{TensorType::Q8_0, 13, 512, 150},
                        Shape{TensorType::Q6_K, 9, 2048, 129}}) {
    SCOPED_TRACE(std::string(type_name(s.t)));
    std::mt19937 rng(11);
    const size_t rb = row_bytes(s.t, s.cols), stride = rb + 64;
    const auto packed = test_util::random_weights(s.t, s.rows, s.cols, rng);
    std::vector<uint8_t> w(stride * size_t(s.rows));
    for (int64_t r = 0; r < s.rows; ++r) std::memcpy(w.data() + r * stride, packed.data() + r * rb, rb);
    const auto x = test_util::random_floats(size_t(s.n_tok * s.cols), rng);
    const Product p = reference_product(s.t, packed, s.rows, s.cols, x, s.n_tok);
    ThreadPool pool(3);
    std::vector<float> y(size_t(s.n_tok * s.rows), NAN);
    matmul({s.t, w.data(), s.rows, s.cols, stride}, x.data(), s.n_tok, y.data(), pool);
    expect_close(s.t, y, p, nullptr);
  }
}

TEST(Matmul, PreparedInputServesSeveralMatrices) {
  std::mt19937 rng(5);
  const int64_t cols = 768, n_tok = 6;
  const auto x = test_util::random_floats(size_t(n_tok * cols), rng);
  MatmulInput in(x.data(), n_tok, cols);
  ThreadPool pool(2);
  for (TensorType t : {TensorType::Q4_K, TensorType::Q6_K, TensorType::Q8_0, TensorType::F16}) {
    const int64_t rows = 10;
    const auto w = test_util::random_weights(t, rows, cols, rng);
    const WeightView wv{t, w.data(), rows, cols, row_bytes(t, cols)};
    std::vector<float> shared(size_t(n_tok * rows)), alone(shared.size());
    matmul(wv, in, shared.data(), pool);
    matmul(wv, x.data(), n_tok, alone.data(), pool);
    EXPECT_EQ(shared, alone) << type_name(t);
  }
}

TEST(Matmul, ManyMatricesInOneDispatch) {
  std::mt19937 rng(17);
  const int64_t cols = 512;
  const TensorType types[] = {TensorType::Q4_K, TensorType::Q6_K, TensorType::F16, TensorType::Q8_0};
  const int64_t rows[] = {37, 9, 20, 64};
  std::vector<std::vector<uint8_t>> w;
  for (int o = 0; o < 4; ++o) w.push_back(test_util::random_weights(types[o], rows[o], cols, rng));
  ThreadPool pool(2);
  for (int64_t n_tok : {1, 6}) {
    const auto x = test_util::random_floats(size_t(n_tok * cols), rng);
    std::vector<std::vector<float>> many(4), alone(4);
    std::vector<MatmulOutput> outs;
    for (int o = 0; o < 4; ++o) {
      many[o].assign(size_t(n_tok * rows[o]), NAN);
      alone[o].assign(many[o].size(), NAN);
      outs.push_back({{types[o], w[o].data(), rows[o], cols, row_bytes(types[o], cols)}, many[o].data()});
    }
    MatmulInput in(x.data(), n_tok, cols);
    matmul_many(outs.data(), 4, in, pool);
    for (int o = 0; o < 4; ++o) {
      matmul(outs[o].w, x.data(), n_tok, alone[o].data(), pool);
      EXPECT_EQ(many[o], alone[o]) << type_name(types[o]) << " n_tokens " << n_tok;
    }
  }
}

TEST(Matmul, ExpertsMatchOneProductPerPair) {
  std::mt19937 rng(9);
  const int64_t n_experts = 5, rows = 19, cols = 256, n_tok = 7;
  for (TensorType t : {TensorType::Q4_K, TensorType::Q8_0, TensorType::BF16}) {
    SCOPED_TRACE(std::string(type_name(t)));
    const size_t rb = row_bytes(t, cols), expert_bytes = rb * rows;
    const auto w = test_util::random_weights(t, rows * n_experts, cols, rng);
    const auto x = test_util::random_floats(size_t(n_tok * cols), rng);
    // Every token picks 2 experts; expert 0 gets all tokens (the panel path), expert 4 none.
    std::vector<int32_t> experts, tokens;
    for (int32_t tk = 0; tk < n_tok; ++tk) {
      experts.push_back(0);
      experts.push_back(1 + int32_t(rng() % 3));
      tokens.push_back(tk);
      tokens.push_back(tk);
    }
    MatmulInput in(x.data(), n_tok, cols);
    ThreadPool pool(2);
    std::vector<float> y(experts.size() * rows, NAN);
    const ExpertWeights ew{{t, w.data(), rows, cols, rb}, expert_bytes, n_experts};
    matmul_experts(ew, in, experts.data(), tokens.data(), int64_t(experts.size()), y.data(), pool);
    for (size_t p = 0; p < experts.size(); ++p) {
      std::vector<float> want(rows);
      const WeightView one{t, w.data() + experts[p] * expert_bytes, rows, cols, rb};
      matmul(one, x.data() + tokens[p] * cols, 1, want.data(), pool);
      for (int64_t r = 0; r < rows; ++r)
        EXPECT_NEAR(y[p * rows + r], want[r], 1e-5 * (std::fabs(want[r]) + 1.0)) << "pair " << p << " row " << r;
    }
  }
}

}  // namespace
}  // namespace zinc::cpu
